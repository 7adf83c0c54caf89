/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Committing a running session (docs/sessions.md, "Commit while running").
 *
 * The session's overlay stays mounted, and overlayfs forbids changing its
 * upper dir meanwhile, while the apply consumes the dir it applies from
 * (renames, conflicts moved aside). So each commit is a run of its own:
 *   1. under the project lock, capture the session's upper against the
 *      live project (read only). The project is the overlay's lower layer:
 *      what an earlier commit applied is in it now, so its content compares
 *      equal and drops out of the capture by itself;
 *   2. copy the entries of that change set (never the whiteouts: a deletion
 *      needs no source) into the new run's upper, through the same
 *      openat2-beneath layer the apply uses;
 *   3. protect and apply that copy as any run: journal, backups, conflicts,
 *      undo ("nsrun undo RUN" undoes one session commit);
 *   4. record the commit's start as the session's new conflict baseline
 *      (a host path changed after it is a conflict next time), and the
 *      conflicted paths, which later commits never apply again (the
 *      sandbox's version stays in the conflict dir of the run that found
 *      the conflict). */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "base/durable.h"
#include "base/json.h"
#include "project/capture.h"
#include "project/events.h"
#include "project/project.h"
#include "project/protect.h"
#include "project/report.h"
#include "project/sesscommit.h"
#include "project/settle.h"
#include "txn/commit.h"
#include "txn/state.h"
#include "txn/txnfs.h"

void nsr_session_commit_done(nsr_session_commit_result *r) {
        nsr_strv_free(r->lines);
        *r = (nsr_session_commit_result){ 0 };
}

static void line(nsr_session_commit_result *r, const char *fmt, ...) _printf_(2, 3);
static void line(nsr_session_commit_result *r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        nsr_strv_push(&r->lines, nsr_vasprintf(fmt, ap));
        va_end(ap);
}

int nsr_session_base_read(int run_fd, struct timespec *ret) {
        _cleanup_close_ int fd = openat(run_fd, "session-base", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        char buf[64] = "";
        int n = nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -EINVAL;
        long long s = 0;
        long ns = 0;
        if (sscanf(buf, "%lld.%ld", &s, &ns) != 2 || ns < 0 || ns >= 1000000000L)
                return -EINVAL;
        *ret = (struct timespec){ .tv_sec = (time_t) s, .tv_nsec = ns };
        return 0;
}

/* data replaces the file (append false) or is added at its end, and the
 * file is the old one or the new one after a crash, never a torn one. */
static int write_file(int dirfd, const char *name, const char *data, bool append) {
        _cleanup_free_ char *old = NULL, *all = NULL;
        if (append) {
                _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0 && errno != ENOENT)
                        return -errno;
                int r = fd < 0 ? 0 : nsr_read_all(fd, 16u << 20, &old, NULL);
                if (r < 0)
                        return r;
                all = nsr_asprintf("%s%s", old ? old : "", data);
                data = all;
        }
        nsr_error e = { 0 };
        return nsr_durable_write(dirfd, name, data, strlen(data), 0600, NSR_DURABLE_SYNC, &e);
}

/* Copies one change's new entry from the session's upper to the staging
 * upper. Both sides are reached beneath their roots with no symlink. */
static int stage_one(int upper, int staging, const nsr_change *c, nsr_error *err) {
        if (c->kind == NSR_CHANGE_DELETED)
                return 0;
        const char *uleaf = NULL, *sleaf = NULL;
        _cleanup_close_ int up = nsr_txnfs_open_parent(upper, c->path, &uleaf);
        if (up < 0)
                return nsr_error_set(err, -up, "cannot open the session's layer at %s", c->path);
        _cleanup_close_ int sp = nsr_txnfs_open_parent_mkdir(staging, c->path, &sleaf);
        if (sp < 0)
                return nsr_error_set(err, -sp, "cannot stage %s", c->path);
        struct stat st;
        if (fstatat(up, uleaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return nsr_error_set(err, errno, "cannot stat %s in the session's layer", c->path);
        if (S_ISDIR(st.st_mode)) {
                /* Its entries are changes of their own when they matter. */
                if (mkdirat(sp, sleaf, st.st_mode & 0777) < 0 && errno != EEXIST)
                        return nsr_error_set(err, errno, "cannot stage %s", c->path);
                /* The root (".") keeps its sticky bit: the apply keeps
                 * one only when the new version still has it. */
                mode_t keep = nsr_changeset_path_is_root(c->path) ? 01777 : 0777;
                if (fchmodat(sp, sleaf, st.st_mode & keep, 0) < 0)
                        return nsr_error_set(err, errno, "cannot stage %s", c->path);
                struct timespec ts[2] = { st.st_atim, st.st_mtim };
                (void) utimensat(sp, sleaf, ts, AT_SYMLINK_NOFOLLOW);
                return 0;
        }
        uint64_t n = 0;
        int r = nsr_txnfs_copy(up, uleaf, sp, sleaf, false, &n);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot stage %s", c->path);
        return 0;
}

static int stage(int srun_fd, int run_fd, size_t i, const nsr_changeset *cs, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/upper", i);
        _cleanup_close_ int upper = openat(srun_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int staging = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (upper < 0 || staging < 0)
                return nsr_error_set(err, errno, "cannot open the layers");
        for (size_t k = 0; k < cs->n_changes; k++) {
                int r = stage_one(upper, staging, &cs->changes[k], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The project dir, as the session recorded it (dev, ino): never another
 * dir that took its path. */
static int open_recorded(const nsr_run_meta *m, size_t i, nsr_error *err) {
        _cleanup_close_ int fd = open(m->projects[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return nsr_error_set(err, errno, "%s", m->projects[i]);
        if (m->ids && (m->ids[i][0] || m->ids[i][1]) &&
            ((unsigned long long) st.st_dev != m->ids[i][0] || (unsigned long long) st.st_ino != m->ids[i][1]))
                return nsr_error_setx(err, ESTALE, "%s is no longer the directory the session was started on",
                                      m->projects[i]);
        return TAKE_FD(fd);
}

/* The root's mode, once applied, is the session's new baseline for it
 * (RUN/pN/root, capture.h): the next commit compares the upper dir's mode
 * with it, and the host's with what this commit left. Best effort: a
 * baseline left behind makes the next commit see a conflict, never
 * overwrite the host. */
static void move_root_baseline(int srun_fd, size_t i, int pfd, const nsr_changeset *cs, const nsr_commit_result *cr) {
        if (!nsr_changeset_lookup(cs, NSR_CHANGESET_ROOT) || cr->withheld)
                return;
        for (size_t k = 0; k < cr->n_conflicts; k++)
                if (nsr_changeset_path_is_root(cr->conflicts[k].path))
                        return;
        struct stat st;
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/root", i);
        nsr_error e = { 0 };
        if (fstat(pfd, &st) == 0)
                (void) nsr_capture_root_save(srun_fd, rel, &st, &e);
}

static bool in_open(const nsr_change *c, void *userdata) {
        return nsr_settle_open_find(userdata, c->path, NULL) != NULL;
}

static const char *since_of(const nsr_settle_open *open, const char *path) {
        const char *since = "";
        (void) nsr_settle_open_find(open, path, &since);
        return since[0] ? since : "an earlier commit";
}

/* Paths that conflicted in an earlier commit and are still open. With
 * prefer-sandbox they apply like any change (the host's change is older
 * than the baseline; overruled if the host changed them again). With
 * prefer-host they are settled now: the session is shown the host's file
 * where it can be, and the sandbox's version is never applied while it
 * stays as it is. Otherwise they are split off and reported as open. */
static int earlier_conflicts(nsr_session_commit_result *res, const char *path, nsr_conflict_mode mode, int srun_fd,
                             size_t i, int supper, int pfd, nsr_changeset *cs, nsr_settle_open *open, nsr_error *err) {
        if (!open->paths[0] || mode == NSR_CONFLICT_PREFER_SANDBOX)
                return 0;
        _cleanup_(nsr_changeset_freep) nsr_changeset *still = NULL;
        int r = nsr_changeset_split(cs, in_open, open, &still);
        if (r < 0)
                return nsr_error_set(err, -r, "%s", path);
        _cleanup_strv_free_ char **settled = NULL;
        for (size_t k = 0; k < still->n_changes; k++) {
                const char *p = still->changes[k].path;
                if (mode != NSR_CONFLICT_PREFER_HOST) {
                        line(res, "nsrun: %s: conflict: %s still in conflict since %s; not applied", path, p,
                             since_of(open, p));
                        res->conflict = true;
                        continue;
                }
                bool shown = nsr_settle_refresh(supper, pfd, p) >= 0;
                line(res, "nsrun: %s: settled for the host: %s (in conflict since %s); %s", path, p, since_of(open, p),
                     shown ? "the session sees the host's version now"
                           : "the session keeps its own version, which is not applied unless it changes again");
                nsr_strv_extend(&settled, p);
        }
        for (char **s = settled; s && *s; s++)
                (void) nsr_settle_open_remove(open, *s);
        return settled ? nsr_settle_record(srun_fd, i, supper, settled) : 0;
}

/* The conflicts of this commit: open from now on (with this run as where
 * they began), or, with prefer-host, settled at once; prefer-sandbox
 * settled the earlier ones that applied now. */
static void record_conflicts(nsr_session_commit_result *res, const char *path, nsr_conflict_mode mode, int srun_fd,
                             size_t i, int supper, int pfd, const char *run_id, const nsr_changeset *cs,
                             const nsr_commit_result *cr, nsr_settle_open *open) {
        _cleanup_strv_free_ char **settled = NULL;
        for (size_t k = 0; k < cr->n_conflicts; k++) {
                const nsr_commit_conflict *cf = &cr->conflicts[k];
                if (mode == NSR_CONFLICT_PREFER_HOST) {
                        bool shown = nsr_settle_refresh(supper, pfd, cf->path) >= 0;
                        nsr_strv_extend(&settled, cf->path);
                        res->conflict = true; /* not all of the session's changes applied */
                        if (!cf->held)
                                line(res, "nsrun: %s: settled for the host: %s %s; %s%s%s", path, cf->path, cf->reason,
                                     shown ? "the session sees the host's version now"
                                           : "the session keeps its own version, which is not applied unless it "
                                             "changes again",
                                     cf->kept_at ? "; the sandbox's version is kept at " : "",
                                     cf->kept_at ? cf->kept_at : "");
                        continue;
                }
                if (cf->kept_at)
                        line(res, "nsrun: %s: conflict: %s %s; the sandbox's version is kept at %s", path, cf->path,
                             cf->reason, cf->kept_at);
                else
                        line(res, "nsrun: %s: conflict: %s %s; left as the host has it", path, cf->path, cf->reason);
                nsr_settle_open_add(open, cf->path, run_id);
                res->conflict = true;
        }
        for (size_t k = 0; cr->overruled && cr->overruled[k] && cr->overruled[k + 1]; k += 2)
                line(res,
                     "nsrun: %s: settled for the sandbox: %s %s; the sandbox's version replaced it, the host's is "
                     "backed up (nsrun undo %s)",
                     path, cr->overruled[k], cr->overruled[k + 1], run_id);
        /* prefer-sandbox: an earlier conflict that applied now is settled. */
        for (size_t k = 0; mode == NSR_CONFLICT_PREFER_SANDBOX && k < cs->n_changes; k++) {
                const char *p = cs->changes[k].path;
                const char *top = nsr_settle_open_find(open, p, NULL);
                bool again = false;
                for (size_t m = 0; m < cr->n_conflicts && top; m++)
                        again = again || streq(cr->conflicts[m].path, p);
                if (!top || again)
                        continue;
                line(res,
                     "nsrun: %s: settled for the sandbox: %s (in conflict since %s); the sandbox's version "
                     "replaced the host's, which is backed up (nsrun undo %s)",
                     path, p, since_of(open, p), run_id);
                _cleanup_free_ char *t = nsr_strdup(top);
                (void) nsr_settle_open_remove(open, t);
        }
        if (settled)
                (void) nsr_settle_record(srun_fd, i, supper, settled);
        (void) nsr_settle_open_write(srun_fd, i, open);
}

static int commit_project(int statefd, int srun_fd, int run_fd, const char *run_path, const char *run_id,
                          const nsr_run_meta *sm, size_t i, const struct timespec *base, nsr_conflict_mode mode,
                          nsr_session_commit_result *res, unsigned long counts[5], nsr_error *err) {
        const char *path = sm->projects[i];
        _cleanup_close_ int pfd = open_recorded(sm, i, err);
        if (pfd < 0)
                return pfd;
        _cleanup_close_ int lock = nsr_project_lock(statefd, path, err);
        if (lock < 0)
                return lock;
        size_t recovered = 0;
        int r = nsr_commit_recover(statefd, path, pfd, &recovered, err);
        if (r < 0)
                return r;
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
        _cleanup_(nsr_protect_result_freep) nsr_protect_result *prot = NULL;
        /* The sandbox may write meanwhile: a scan that saw an entry change
         * under it is taken again. */
        for (int tries = 0;; tries++) {
                r = nsr_project_capture(srun_fd, i, pfd, path, &cs, &prot, err);
                if (r != -EAGAIN || tries >= 5)
                        break;
                nsr_error_clear(err);
        }
        if (r < 0)
                return r;
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/upper", i);
        _cleanup_close_ int supper = openat(srun_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (supper < 0)
                return nsr_error_set(err, errno, "cannot open the session's layer");
        if ((r = nsr_settle_drop_settled(srun_fd, i, supper, cs)) < 0)
                return nsr_error_set(err, -r, "%s: cannot read the settled paths", path);
        _cleanup_(nsr_settle_open_done) nsr_settle_open open = { 0 };
        nsr_settle_open_read(srun_fd, i, &open);
        if ((r = earlier_conflicts(res, path, mode, srun_fd, i, supper, pfd, cs, &open, err)) < 0)
                return r;
        if (mode != NSR_CONFLICT_PREFER_SANDBOX)
                (void) nsr_settle_open_write(srun_fd, i, &open);
        for (int k = 0; k < 5; k++)
                counts[k] = nsr_changeset_count(cs, (nsr_change_kind) k);
        if (nsr_changeset_is_empty(cs)) {
                _cleanup_free_ char *s =
                        nsr_report_summary(path, cs, nsr_outcome_to_string(NSR_OUTCOME_COMMITTED), run_id);
                line(res, "%s", s);
                return 0;
        }
        r = stage(srun_fd, run_fd, i, cs, err);
        if (r >= 0)
                r = nsr_project_protect(run_fd, i, pfd, path, cs, prot, err);
        if (r < 0)
                return r;
        _cleanup_close_ int staging = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (staging < 0)
                return nsr_error_set(err, errno, "cannot open the staged layer");
        nsr_commit_result cr = { 0 };
        nsr_commit_opts co = {
                .project_fd = pfd,
                .project_path = path,
                .upper_fd = staging,
                .run_fd = run_fd,
                .run_path = run_path,
                .project_index = (unsigned) i,
                .run_start = *base,
                .state_fd = statefd,
                .run_id = run_id,
                .all_or_nothing = nsr_conflict_mode_withholds(mode),
                .prefer_sandbox = mode == NSR_CONFLICT_PREFER_SANDBOX,
        };
        r = nsr_commit_apply(cs, &co, &cr, err);
        if (r < 0)
                return nsr_error_prefix(err, "%s: the apply failed and was rolled back", path);
        if (cr.withheld) {
                /* keep-all, fail: nothing applied; the baseline stays, so
                 * the next commit finds the same conflicts. */
                for (size_t k = 0; k < cr.n_conflicts; k++)
                        if (!cr.conflicts[k].held)
                                line(res, "nsrun: %s: conflict: %s %s", path, cr.conflicts[k].path,
                                     cr.conflicts[k].reason);
                line(res, "nsrun: %s: nothing applied (--on-conflict=%s)", path, nsr_conflict_mode_to_string(mode));
                res->conflict = res->withheld = true;
                nsr_commit_result_done(&cr);
                return 0;
        }
        move_root_baseline(srun_fd, i, pfd, cs, &cr);
        record_conflicts(res, path, mode, srun_fd, i, supper, pfd, run_id, cs, &cr, &open);
        _cleanup_free_ char *pl = nsr_protect_summary(prot, false);
        if (pl)
                line(res, "nsrun: %s: %s", path, pl);
        _cleanup_free_ char *s = nsr_report_summary(
                path, cs, nsr_outcome_to_string(cr.n_conflicts ? NSR_OUTCOME_CONFLICT : NSR_OUTCOME_COMMITTED), run_id);
        line(res, "%s", s);
        nsr_commit_result_done(&cr);
        return 0;
}

/* The state dir, the session's run dir and its meta. */
static int open_session_run(const char *state_dir, const char *session_id, int *ret_statefd, int *ret_run_fd,
                            nsr_run_meta *ret_meta, nsr_error *err) {
        *ret_statefd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (*ret_statefd < 0)
                return nsr_error_set(err, errno, "no state dir at %s", state_dir);
        *ret_run_fd = nsr_run_open(*ret_statefd, session_id, err);
        if (*ret_run_fd < 0)
                return *ret_run_fd;
        return nsr_run_meta_read(*ret_run_fd, ret_meta, err);
}

int nsr_session_commit(const char *state_dir, const char *session_id, nsr_session_commit_result *ret, nsr_error *err) {
        return nsr_session_commit_as(state_dir, session_id, NSR_CONFLICT_APPLY_REST, ret, err);
}

int nsr_session_commit_as(const char *state_dir, const char *session_id, nsr_conflict_mode mode,
                          nsr_session_commit_result *ret, nsr_error *err) {
        nsr_session_commit_result res = { .lines = nsr_malloc0(sizeof(char *)) };
        _cleanup_close_ int statefd = -1, srun_fd = -1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta sm = { 0 };
        int r = open_session_run(state_dir, session_id, &statefd, &srun_fd, &sm, err);
        if (r < 0)
                return r;
        size_t n = nsr_strv_length(sm.projects);
        struct timespec base = sm.start, started, wall;
        (void) nsr_session_base_read(srun_fd, &base);
        /* Conflicts next time compare host ctimes with this (the coarse
         * clock, as a run's start: it lags, which errs toward a conflict). */
        clock_gettime(CLOCK_REALTIME_COARSE, &started);
        clock_gettime(CLOCK_REALTIME, &wall);

        char run_id[NSR_RUN_ID_MAX];
        nsr_run_id_new(run_id);
        _cleanup_close_ int run_fd = nsr_run_create(statefd, run_id, n, err);
        if (run_fd < 0)
                return run_fd;
        _cleanup_free_ char *run_path = nsr_asprintf("%s/runs/%s", state_dir, run_id);
        char *argv[] = { (char *) "nsrun", (char *) "session", (char *) "commit", (char *) session_id, NULL };
        unsigned long(*counts)[5] = nsr_malloc0((n + 1) * sizeof(*counts));
        nsr_run_meta m = { .kind = (char *) "run",
                           .state = NSR_OUTCOME_RUNNING,
                           .start = started,
                           .projects = sm.projects,
                           .argv = argv,
                           .exit_code = -1,
                           .counts = counts,
                           .ids = sm.ids };
        snprintf(m.run_id, sizeof(m.run_id), "%s", run_id);
        nsr_run_meta_set_owner(&m);
        (void) nsr_run_meta_write(run_fd, &m, err);

        bool failed = false;
        for (size_t i = 0; i < n; i++) {
                nsr_error pe = { 0 };
                if (commit_project(statefd, srun_fd, run_fd, run_path, run_id, &sm, i, &base, mode, &res, counts[i],
                                   &pe) < 0) {
                        char buf[NSR_ERROR_MSG_MAX + 256];
                        nsr_error_format(&pe, buf, sizeof(buf));
                        line(&res, "nsrun: %s", buf);
                        failed = true;
                }
                char rel[32];
                nsr_error ce = { 0 };
                snprintf(rel, sizeof(rel), "p%zu/upper", i);
                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                snprintf(rel, sizeof(rel), "p%zu/work", i);
                (void) nsr_rm_rf_at(run_fd, rel, &ce);
        }
        if (!failed && !res.withheld) {
                char buf[64];
                snprintf(buf, sizeof(buf), "%lld.%09ld\n", (long long) started.tv_sec, started.tv_nsec);
                (void) write_file(srun_fd, "session-base", buf, false);
        }
        m.state = failed ? NSR_OUTCOME_FAILED : res.conflict ? NSR_OUTCOME_CONFLICT : NSR_OUTCOME_COMMITTED;
        m.exit_code = 0;
        nsr_error we = { 0 };
        (void) nsr_run_meta_write(run_fd, &m, &we);
        free(counts);
        snprintf(res.run_id, sizeof(res.run_id), "%s", run_id);
        res.failed = failed;
        *ret = res;
        return 0;
}

/* ---- exec --report ------------------------------------------------------------ */

void nsr_session_changes_free(nsr_session_changes *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                nsr_changeset_free(c->sets[i]);
        free(c->sets);
        nsr_strv_free(c->projects);
        *c = (nsr_session_changes){ 0 };
}

int nsr_session_events_start(const char *state_dir, const char *session_id, int out_fd, nsr_session_events *ret,
                             nsr_error *err) {
        *ret = (nsr_session_events){ .pid = -1, .stop_fd = -1, .run_fd = -1 };
        _cleanup_close_ int statefd = -1, srun_fd = -1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta sm = { 0 };
        int r = open_session_run(state_dir, session_id, &statefd, &srun_fd, &sm, err);
        if (r < 0)
                return r;
        size_t n = nsr_strv_length(sm.projects);
        /* The upper dirs through the run dir's fd, which the watcher
         * inherits: nothing renamed into the path meanwhile is followed. */
        char **uppers = nsr_malloc0((n + 1) * sizeof(char *));
        nsr_events_project *ev = nsr_malloc0((n + 1) * sizeof(*ev));
        for (size_t i = 0; i < n; i++) {
                uppers[i] = nsr_asprintf("/proc/self/fd/%d/p%zu/upper", srun_fd, i);
                ev[i] = (nsr_events_project){ .path = sm.projects[i], .upper = uppers[i] };
        }
        r = nsr_events_start(out_fd, ev, n, &ret->pid, &ret->stop_fd, err);
        free(ev);
        nsr_strv_free(uppers);
        if (r < 0)
                return r;
        ret->run_fd = TAKE_FD(srun_fd);
        return 0;
}

uint64_t nsr_session_events_stop(nsr_session_events *ev) {
        uint64_t dropped = ev->pid > 0 ? nsr_events_stop(ev->pid, ev->stop_fd) : 0;
        ev->run_fd = safe_close(ev->run_fd);
        *ev = (nsr_session_events){ .pid = -1, .stop_fd = -1, .run_fd = -1 };
        return dropped;
}

int nsr_session_changes_take(const char *state_dir, const char *session_id, nsr_session_changes *ret, nsr_error *err) {
        _cleanup_close_ int statefd = -1, srun_fd = -1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta sm = { 0 };
        int r = open_session_run(state_dir, session_id, &statefd, &srun_fd, &sm, err);
        if (r < 0)
                return r;
        nsr_session_changes c = { .n = nsr_strv_length(sm.projects) };
        c.sets = nsr_malloc0((c.n + 1) * sizeof(nsr_changeset *));
        c.projects = nsr_strv_copy(sm.projects);
        for (size_t i = 0; i < c.n && r >= 0; i++) {
                _cleanup_close_ int pfd = open_recorded(&sm, i, err);
                if (pfd < 0) {
                        r = pfd;
                        break;
                }
                _cleanup_(nsr_protect_result_freep) nsr_protect_result *prot = NULL;
                for (int tries = 0;; tries++) {
                        r = nsr_project_capture(srun_fd, i, pfd, sm.projects[i], &c.sets[i], &prot, err);
                        if (r != -EAGAIN || tries >= 5)
                                break;
                        nsr_error_clear(err);
                }
        }
        if (r < 0) {
                nsr_session_changes_free(&c);
                return r;
        }
        *ret = c;
        return 0;
}

static bool same_change(const nsr_change *a, const nsr_change *b) {
        return a->kind == b->kind && a->type == b->type && a->size == b->size && a->mode == b->mode &&
               a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
               streq(a->target ? a->target : "", b->target ? b->target : "");
}

/* The step's "refused", in a one-shot report's form and order; its
 * timeout is the exec client's (--timeout). */
static void emit_step_refused(nsr_json *j, const nsr_session_step *st) {
        const nsr_refused *rf = st->refused;
        _cleanup_free_ nsr_report_refused_call *calls = nsr_malloc0((rf->n_entries + 1) * sizeof(*calls));
        nsr_report_refused_calls(rf, calls);
        nsr_report_refused r = { .recorded = rf->active,
                                 .calls = calls,
                                 .n_calls = rf->n_entries,
                                 .more = rf->dropped,
                                 .timed_out = st->timed_out,
                                 .timeout_ms = st->timeout_ms,
                                 .killed = st->killed };
        nsr_report_emit_refused(j, &r);
}

int nsr_session_report(const nsr_session_changes *before, const nsr_session_changes *after, const char *session_id,
                       char *const *argv, int wait_status, const nsr_session_step *step, char **ret, nsr_error *err) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 64u << 20, NSR_JSON_PRETTY);
        nsr_json_object_begin(j, NULL);
        nsr_json_int(j, "version", 1);
        nsr_json_string(j, "session", session_id);
        nsr_json_strv(j, "command", argv);
        if (WIFEXITED(wait_status))
                nsr_json_int(j, "exit_code", WEXITSTATUS(wait_status));
        else
                nsr_json_null(j, "exit_code");
        if (WIFSIGNALED(wait_status))
                nsr_json_int(j, "signal", WTERMSIG(wait_status));
        else
                nsr_json_null(j, "signal");
        /* The layer is shared: what a background process (started by this
         * or an earlier command) wrote meanwhile is in it too. */
        char when[32];
        if (step && step->started_at.tv_sec && nsr_json_format_time(&step->started_at, when, sizeof(when)) >= 0) {
                nsr_json_string(j, "started_at", when);
                nsr_json_uint(j, "duration_ms", step->duration_ms);
        }
        nsr_json_bool(j, "includes_background_processes", true);
        if (step && step->timed_out)
                nsr_json_bool(j, "timed_out", true);
        nsr_json_array_begin(j, "projects");
        for (size_t i = 0; i < after->n; i++) {
                const nsr_changeset *b = i < before->n ? before->sets[i] : NULL;
                const nsr_changeset *a = after->sets[i];
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "path", after->projects[i]);
                nsr_json_array_begin(j, "changes");
                for (size_t k = 0; a && k < a->n_changes; k++) {
                        const nsr_change *c = &a->changes[k];
                        const nsr_change *o = b ? nsr_changeset_lookup(b, c->path) : NULL;
                        if (o && same_change(o, c))
                                continue;
                        nsr_json_object_begin(j, NULL);
                        nsr_json_string(j, "path", c->path);
                        nsr_json_string(j, "change", nsr_change_kind_to_string(c->kind));
                        nsr_json_string(j, "type", nsr_entry_type_to_string(c->type));
                        nsr_json_object_end(j);
                }
                /* What an earlier command changed and this one put back. */
                for (size_t k = 0; b && k < b->n_changes; k++) {
                        const nsr_change *o = &b->changes[k];
                        if (a && nsr_changeset_lookup(a, o->path))
                                continue;
                        nsr_json_object_begin(j, NULL);
                        nsr_json_string(j, "path", o->path);
                        nsr_json_string(j, "change", "reverted");
                        nsr_json_string(j, "type", nsr_entry_type_to_string(o->type));
                        nsr_json_object_end(j);
                }
                nsr_json_array_end(j);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        if (step && step->refused)
                emit_step_refused(j, step);
        if (step && step->events_dropped)
                nsr_json_uint(j, "events_dropped", step->events_dropped);
        nsr_json_object_end(j);
        return nsr_json_finish(j, "report", ret, NULL, err);
}

static bool wire_safe(const char *s) {
        return !strpbrk(s, "\t\n");
}

char *nsr_session_refused_encode(const nsr_refused *rf, bool recorded, size_t max, size_t *ret_len) {
        uint64_t dropped = rf ? rf->dropped : 0;
        _cleanup_free_ char *body = NULL;
        size_t len = 0;
        for (size_t i = 0; rf && i < rf->n_entries; i++) {
                const nsr_refused_entry *e = &rf->entries[i];
                _cleanup_free_ char *line =
                        nsr_asprintf("%d\t%" PRIu64 "\t%s\t%s\n", e->errnum, e->count,
                                     wire_safe(e->name) ? e->name : "?", wire_safe(e->comm) ? e->comm : "?");
                size_t l = strlen(line);
                if (len + l + 64 > max) {
                        dropped += e->count;
                        continue;
                }
                nsr_strappendf(&body, "%s", line);
                len += l;
        }
        char *s = nsr_asprintf("%d %" PRIu64 "\n%s", recorded ? 1 : 0, dropped, body ? body : "");
        *ret_len = strlen(s);
        return s;
}

static bool parse_u64(const char *s, const char *end, uint64_t *ret) {
        if (s == end || end - s > 19)
                return false;
        uint64_t v = 0;
        for (; s < end; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return true;
}

int nsr_session_refused_decode(const char *buf, size_t len, nsr_refused *ret) {
        *ret = (nsr_refused){ .events_fd = -1 };
        const char *p = buf, *end = buf + len;
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        uint64_t recorded, n;
        if (!nl || nl - p < 3 || p[1] != ' ' || !parse_u64(p, p + 1, &recorded) || recorded > 1 ||
            !parse_u64(p + 2, nl, &ret->dropped))
                return -EBADMSG;
        ret->active = recorded == 1;
        for (p = nl + 1; p < end; p = nl + 1) {
                nl = memchr(p, '\n', (size_t) (end - p));
                const char *f[5] = { p };
                for (int k = 1; k < 4 && nl; k++) {
                        f[k] = memchr(f[k - 1], '\t', (size_t) (nl - f[k - 1]));
                        if (!f[k])
                                return -EBADMSG;
                        f[k]++;
                }
                if (!nl || ret->n_entries >= NSR_REFUSED_MAX_ENTRIES)
                        return -EBADMSG;
                nsr_refused_entry *e = &ret->entries[ret->n_entries];
                uint64_t errnum;
                size_t nlen = (size_t) (f[3] - 1 - f[2]), clen = (size_t) (nl - f[3]);
                if (!parse_u64(f[0], f[1] - 1, &errnum) || errnum > 4095 || !parse_u64(f[1], f[2] - 1, &n) ||
                    nlen == 0 || nlen >= sizeof(e->name) || clen >= sizeof(e->comm))
                        return -EBADMSG;
                *e = (nsr_refused_entry){ .errnum = (int) errnum, .count = n };
                memcpy(e->name, f[2], nlen);
                memcpy(e->comm, f[3], clen);
                ret->n_entries++;
        }
        return 0;
}
