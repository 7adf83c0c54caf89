/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A project run, step by step (nsr_project_run): recover, choose the
 * confinement, create the run dir, launch, capture, apply, record, explain,
 * report. The steps of preparing, launching and explaining are in
 * prepare.c, launching.c and explain.c; capturing, applying and recording
 * are here, with the captures nsrun commit and sessions share. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/durable.h"
#include "base/timing.h"
#include "project/capture.h"
#include "project/foreign.h"
#include "project/internal.h"
#include "project/snapshot.h"

nsr_project *nsr_project_free(nsr_project *pj) {
        if (!pj)
                return NULL;
        nsr_plan_free(pj->plan);
        for (size_t i = 0; i < pj->n; i++) {
                project_entry *e = &pj->p[i];
                free(e->path);
                safe_close(e->fd);
                free(e->upper);
                free(e->work);
                nsr_changeset_free(e->changes);
                nsr_protect_result_free(e->protected_changes);
                nsr_commit_result_done(&e->commit);
                nsr_strv_free(e->errors);
                nsr_snapshot_free(e->snap);
                nsr_strv_free(e->config);
                nsr_strv_free(e->config_bind);
        }
        free(pj->p);
        free(pj->state_dir);
        safe_close(pj->state_fd);
        free(pj->run_dir);
        free(pj->skel);
        nsr_strv_free(pj->command);
        nsr_strv_free(pj->notes);
        nsr_strv_free(pj->hidden);
        nsr_profile_later_free(pj->later);
        nsr_strv_free(pj->ro);
        nsr_strv_free(pj->rw);
        free(pj);
        return NULL;
}

void nsr_project_set_notify(nsr_project *pj, void (*fn)(const char *line, void *userdata), void *userdata) {
        pj->notify = fn;
        pj->notify_data = userdata;
}

void nsr_project_set_session(nsr_project *pj, const nsr_launch_session *s) {
        pj->session = s;
}

const char *nsr_project_run_id(const nsr_project *pj) {
        return pj->run_id;
}

nsr_plan *nsr_project_plan(nsr_project *pj) {
        return pj->plan;
}

void nsr_project_outcome_done(nsr_project_outcome *o) {
        nsr_strv_free(o->messages);
        nsr_strv_free(o->summary);
        free(o->listing);
        free(o->report_json);
        *o = (nsr_project_outcome){ 0 };
}

#define CONFIG_MAX (1u << 20)

/* The patterns save_config wrote; none for a run without the file (one an
 * older nsrun made). A file that is there but cannot be read fails the
 * capture: without it the next run's configuration would go unprotected. */
static int load_config(int run_fd, size_t i, char ***ret, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/config", i);
        _cleanup_strv_free_ char **v = nsr_malloc0(sizeof(char *));
        _cleanup_close_ int fd = openat(run_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        if (fd < 0 && errno != ENOENT)
                return nsr_error_set(err, errno, "cannot read the run's list of configuration files (%s)", rel);
        int r = fd < 0 ? 0 : nsr_read_all(fd, CONFIG_MAX, &data, &len);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot read the run's list of configuration files (%s)", rel);
        for (size_t off = 0; off < len;) {
                size_t l = strnlen(data + off, len - off);
                if (l)
                        nsr_strv_push(&v, nsr_strndup(data + off, l));
                off += l + 1;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

/* ---- after the command ------------------------------------------------- */

static mode_t current_umask(void) {
        mode_t m = umask(0);
        umask(m);
        return m;
}

static nsr_protect_ctx protect_ctx(int before_fd, int after_fd, const char *project_path, char *const *config) {
        return (nsr_protect_ctx){ .config = config,
                                  .before_fd = before_fd,
                                  .after_fd = after_fd,
                                  .project_path = project_path,
                                  .home = env_get("HOME"),
                                  .xdg_config = env_get("XDG_CONFIG_HOME"),
                                  .datadir = nsr_datadir(),
                                  .umask = current_umask() };
}

int nsr_project_capture(int run_fd, size_t index, int project_fd, const char *project_path, nsr_changeset **ret_changes,
                        nsr_protect_result **ret_protected, nsr_error *err) {
        /* Files of other owners nsrun copied into upper before the command:
         * compared with the copies as made, written back in place. */
        _cleanup_(nsr_foreign_freep) nsr_foreign *foreign = NULL;
        int r = nsr_foreign_load(run_fd, index, &foreign, err);
        if (r < 0)
                return r;
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/upper", index);
        _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (upper < 0)
                return nsr_error_set(err, errno, "cannot open the upper layer");
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
        /* The root's mode when the run started: a chmod of the root inside
         * is a change of its own ("."), a host chmod meanwhile a conflict. */
        nsr_capture_prior root;
        snprintf(rel, sizeof(rel), "p%zu/root", index);
        nsr_capture_opts co = { 0 };
        if (nsr_capture_root_load(run_fd, rel, &root) >= 0)
                co.root_prior = &root;
        if (foreign) {
                co.prior = nsr_foreign_prior;
                co.prior_userdata = foreign;
        }
        r = nsr_capture_scan(upper, project_fd, &co, &cs, err);
        if (r < 0)
                return nsr_error_prefix(err, "capturing the changes");
        _cleanup_strv_free_ char **config = NULL;
        r = load_config(run_fd, index, &config, err);
        if (r < 0)
                return r;
        nsr_foreign_mark(foreign, cs);
        nsr_protect_ctx pc = protect_ctx(project_fd, upper, project_path, config);
        r = nsr_protect_scan(cs, &pc, ret_protected, err);
        if (r < 0)
                return r;
        *ret_changes = TAKE_PTR(cs);
        return 0;
}

int nsr_project_protect(int run_fd, size_t index, int project_fd, const char *project_path, nsr_changeset *cs,
                        const nsr_protect_result *prot, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/upper", index);
        _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (upper < 0)
                return nsr_error_set(err, errno, "cannot open the upper layer");
        nsr_protect_ctx pc = protect_ctx(project_fd, upper, project_path, NULL);
        return nsr_protect_enforce(cs, &pc, prot, err);
}

void nsr_project_inherit_groups(int run_fd, size_t index, int project_fd, nsr_changeset *cs) {
        _cleanup_(nsr_foreign_freep) nsr_foreign *foreign = NULL;
        nsr_error e = { 0 };
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/upper", index);
        if (nsr_foreign_load(run_fd, index, &foreign, &e) < 0 || !foreign)
                return;
        _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (upper >= 0)
                nsr_foreign_inherit_groups(project_fd, upper, cs);
}

static int capture_project(project_entry *e, int run_fd, size_t i, nsr_error *err) {
        int r = nsr_project_capture(run_fd, i, e->fd, e->path, &e->changes, &e->protected_changes, err);
        if (r < 0)
                return nsr_error_prefix(err, "%s", e->path);
        nsr_project_inherit_groups(run_fd, i, e->fd, e->changes);
        return 0;
}

/* The run's meta file: what the run was, for history, diff, commit and
 * undo. */
int project_write_meta(nsr_project *pj, int run_fd, nsr_outcome state, const struct timespec *start, int wait_status,
                       bool ran, bool append, nsr_error *err) {
        nsr_run_meta m = {
                .state = state,
                .kind = (char *) "run",
                .start = *start,
                .projects = NULL,
                .argv = pj->command,
                .exit_code = ran && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1,
                .signal = ran && WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0,
        };
        snprintf(m.run_id, sizeof(m.run_id), "%s", pj->run_id);
        nsr_run_meta_set_owner(&m);
        char **paths = nsr_malloc0((pj->n + 1) * sizeof(char *));
        m.counts = nsr_malloc0((pj->n + 1) * sizeof(*m.counts));
        m.ids = nsr_malloc0((pj->n + 1) * sizeof(*m.ids));
        for (size_t i = 0; i < pj->n; i++) {
                paths[i] = pj->p[i].path;
                m.ids[i][0] = (unsigned long long) pj->p[i].dev;
                m.ids[i][1] = (unsigned long long) pj->p[i].ino;
                for (int k = 0; k < 5 && pj->p[i].changes; k++)
                        m.counts[i][k] = nsr_changeset_count(pj->p[i].changes, (nsr_change_kind) k);
        }
        m.projects = paths;
        int r = append ? nsr_run_meta_append(run_fd, &m, err) : nsr_run_meta_write(run_fd, &m, err);
        free(paths);
        free(m.counts);
        free(m.ids);
        return r;
}

/* ---- live writes: capture and record ------------------------------------------------ */

static int capture_live(project_entry *e, int run_fd, size_t i, nsr_error *err) {
        char name[32];
        snprintf(name, sizeof(name), "backup/p%zu", i);
        _cleanup_close_ int snap = openat(run_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (snap < 0)
                return nsr_error_set(err, errno, "%s: cannot open the snapshot", e->path);
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
        int r = nsr_snapshot_compare(e->snap, snap, e->fd, &cs, err);
        if (r < 0)
                return nsr_error_prefix(err, "%s: capturing the changes", e->path);
        _cleanup_strv_free_ char **config = NULL;
        r = load_config(run_fd, i, &config, err);
        if (r < 0)
                return r;
        nsr_protect_ctx pc = protect_ctx(snap, e->fd, e->path, config);
        r = nsr_protect_scan(cs, &pc, &e->protected_changes, err);
        if (r < 0)
                return r;
        e->changes = TAKE_PTR(cs);
        return 0;
}

/* Live writes whose run could not be recorded: the changes stay in place,
 * and so does the snapshot, which the message names. */
static void not_recorded(nsr_project *pj, project_entry *e, size_t i, const nsr_error *err, nsr_project_outcome *o) {
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(err, buf, sizeof(buf));
        nsr_strv_extend(&e->errors, buf);
        msg(o,
            "nsrun: %s: the changes are in place, but the run could not be recorded for undo: %s; the "
            "snapshot stays in %s/backup/p%zu",
            e->path, buf, pj->run_dir, i);
        o->exit_code = NSR_EXIT_FAILURE;
}

/* The changes are in place already: protected paths go back, and the run
 * is recorded as an apply that is done (so undo works), or with --discard
 * everything goes back. lock_err: the project's lock could not be taken;
 * protected paths still go back (a planted hook must not stay), but
 * nothing is recorded, which would race with another nsrun's apply. */
static void settle_live(nsr_project *pj, project_entry *e, int run_fd, size_t i, const struct timespec *run_start,
                        const nsr_error *lock_err, nsr_project_outcome *o) {
        nsr_live_opts lo = { .project_fd = e->fd,
                             .project_path = e->path,
                             .run_fd = run_fd,
                             .project_index = (unsigned) i,
                             .run_start = *run_start };
        nsr_error ae = { 0 };
        char **failed = NULL;
        bool discard = pj->plan->proj.discard;
        int r = 0;
        if (!nsr_changeset_is_empty(e->protected_changes->dropped))
                r = nsr_commit_revert_live(e->protected_changes->dropped, &lo, &failed, &ae);
        if (r >= 0 && discard) {
                char **more = NULL;
                r = nsr_commit_revert_live(e->changes, &lo, &more, &ae);
                for (size_t k = 0; more && more[k]; k++)
                        nsr_strv_extend(&failed, more[k]);
                nsr_strv_free(more);
        }
        for (size_t k = 0; failed && failed[k]; k++) {
                _cleanup_free_ char *line = nsr_asprintf("cannot put back %s", failed[k]);
                msg(o, "nsrun: %s: %s", e->path, line);
                nsr_strv_extend(&e->errors, line);
        }
        nsr_strv_free(failed);
        if (r >= 0 && pj->plan->proj.discard) {
                e->outcome = NSR_OUTCOME_DISCARDED;
                return;
        }
        if (r >= 0) {
                /* What the command left in place is reduced like an
                 * apply's new versions, before the run is recorded. */
                char name[32];
                snprintf(name, sizeof(name), "backup/p%zu", i);
                _cleanup_close_ int snap = openat(run_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                nsr_protect_ctx pc = protect_ctx(snap, e->fd, e->path, NULL);
                r = nsr_protect_enforce(e->changes, &pc, e->protected_changes, &ae);
        }
        if (lock_err) {
                not_recorded(pj, e, i, lock_err, o);
                e->outcome = NSR_OUTCOME_FAILED;
                return;
        }
        if (r >= 0)
                r = nsr_commit_record_live(e->changes, &lo, &e->commit, &ae);
        e->outcome = NSR_OUTCOME_COMMITTED;
        if (r < 0)
                not_recorded(pj, e, i, &ae, o);
}

/* Less free than this after the command: it filled the state dir. */
#define STATE_FULL_BELOW (UINT64_C(64) << 10)

/* Applies project i's changes (or, check_only, only finds the conflicts)
 * into pj->p[i].commit. */
static int apply_one(nsr_project *pj, size_t i, int run_fd, int statefd, const struct timespec *run_start,
                     bool check_only, nsr_error *err) {
        project_entry *e = &pj->p[i];
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/upper", i);
        _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (upper < 0)
                return nsr_error_set(err, errno, "cannot open the run's %s", rel);
        _cleanup_close_ int lock = nsr_project_lock(statefd, e->path, err);
        if (lock < 0)
                return lock;
        /* Protected paths dropped, git configs reduced, modes bounded:
         * once, before the conflict check too, so that a change that will
         * never be applied cannot hold the others back. */
        if (!e->protect_enforced) {
                int r = nsr_project_protect(run_fd, i, e->fd, e->path, e->changes, e->protected_changes, err);
                if (r < 0)
                        return r;
                e->protect_enforced = true;
        }
        nsr_commit_opts co = {
                .project_fd = e->fd,
                .project_path = e->path,
                .upper_fd = upper,
                .run_fd = run_fd,
                .run_path = pj->run_dir,
                .project_index = (unsigned) i,
                .run_start = *run_start,
                .state_fd = statefd,
                .run_id = pj->run_id,
                .all_or_nothing = nsr_conflict_mode_withholds(pj->plan->proj.on_conflict),
                .check_only = check_only,
                .prefer_sandbox = pj->plan->proj.on_conflict == NSR_CONFLICT_PREFER_SANDBOX,
        };
        return nsr_commit_apply(e->changes, &co, &e->commit, err);
}

/* ---- a run, step by step ------------------------------------------------------------ */

static void run_ctx_done(run_ctx *c) {
        nsr_strv_free(c->lr.limits_hit);
        c->lr.mnt_ns = safe_close(c->lr.mnt_ns);
        c->run_fd = safe_close(c->run_fd);
        attempt_done(&c->a);
        c->statefd = safe_close(c->statefd);
}

/* Conflicts compare host ctimes with run_start: a host entry whose ctime
 * is after it changed after the command started. It is the fine clock,
 * and the command starts only once the coarse clock (which most file
 * timestamps come from) has passed it: every write before is at most
 * run_start, every write after is above it, with no window in between
 * (docs/conflicts.md). Taken as soon as nothing of nsrun's own changes a
 * project any more (right after the recovery, whose writes are before the
 * run), not after the run dir is made: the coarse clock's wait before the
 * command's execve then overlaps that work too, and that clock lags the
 * fine one by 4 to 7 ms on the VM of bench/README.md. Writes of others
 * between run_start and the command's start count as during the run, the
 * safe side. */
static void take_start(run_ctx *c) {
        clock_gettime(CLOCK_REALTIME, &c->started);
        clock_gettime(CLOCK_REALTIME, &c->run_start);
        clock_gettime(CLOCK_MONOTONIC, &c->mono_start);
}

/* An apply that was interrupted (nsrun killed) is finished or rolled back,
 * as a whole, before anything else. */
static int recover(run_ctx *c, nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_project_outcome *o = &c->o;
        int statefd = c->statefd;
        int r;

        for (size_t i = 0; i < pj->n; i++) {
                _cleanup_close_ int lock = nsr_project_lock(statefd, pj->p[i].path, err);
                if (lock < 0)
                        return lock;
                size_t n = 0;
                r = nsr_commit_recover(statefd, pj->p[i].path, pj->p[i].fd, &n, err);
                if (r < 0)
                        return nsr_error_prefix(err, "%s: recovering an interrupted apply", pj->p[i].path);
                if (n > 0)
                        msg(o, "nsrun: %s: rolled back %zu interrupted apply%s before this run", pj->p[i].path, n,
                            n == 1 ? "" : "s");
        }
        return 0;
}

/* The command ran: its exit code, and every project's changes. */
static void capture(run_ctx *c) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        const nsr_launch_result *lr = &c->lr;
        int run_fd = c->run_fd;
        int r;

        o->exit_code = lr->exit_code;
        if (lr->no_route > 0 && p->unshare_net)
                msg(o,
                    "nsrun: the command tried to reach the network (%llu connection%s found no route: "
                    "ENETUNREACH); the sandbox has none unless --share-net is given",
                    (unsigned long long) lr->no_route, lr->no_route == 1 ? "" : "s");

        /* Capture every project's changes. */
        bool capture_failed = false;
        for (size_t i = 0; i < pj->n; i++) {
                nsr_error ce = { 0 };
                r = pj->live ? capture_live(&pj->p[i], run_fd, i, &ce) : capture_project(&pj->p[i], run_fd, i, &ce);
                if (r < 0) {
                        char buf[NSR_ERROR_MSG_MAX + 256];
                        nsr_error_format(&ce, buf, sizeof(buf));
                        nsr_strv_extend(&pj->p[i].errors, buf);
                        msg(o, "nsrun: %s", buf);
                        capture_failed = true;
                }
        }
        /* Nothing is applied then, but the command's work is not lost: the
         * run is kept (its upper dirs stay), and nsrun says it failed. */
        if (capture_failed)
                o->exit_code = NSR_EXIT_FAILURE;
        c->capture_failed = capture_failed;
}

/* The sandbox's mounts, kept past its pid 1 (nsr_launch_extra.hold_mounts;
 * nothing runs in them any more, and nothing else holds them): where the
 * command changed something, or the capture failed, they go now, as they
 * would have with pid 1, so the overlay syncs its upper dir before anything
 * is applied or kept. A run with no change leaves them to the background
 * work of record(), and nobody waits for the overlay's sync: on the VM of
 * bench/README.md that sync flushed the disk's cache (1 to 5 ms a run). */
static void release_mounts(run_ctx *c) {
        bool changed = c->capture_failed;
        for (size_t i = 0; i < c->pj->n && !changed; i++)
                changed = c->pj->p[i].changes && !nsr_changeset_is_empty(c->pj->p[i].changes);
        if (changed)
                c->lr.mnt_ns = safe_close(c->lr.mnt_ns);
}

/* The run's outcome before anything is applied. */
static nsr_outcome intended_outcome(run_ctx *c) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;

        /* With live writes an interrupted run is in place all the same: it
         * is recorded like any other, so it can be undone. */
        c->interrupted = c->lr.forwarded_signal != 0;
        /* A run stopped by --timeout is as unfinished as an interrupted
         * one: kept for review, never committed half-way. */
        c->timed_out = c->lr.timed_out;
        nsr_outcome run_outcome;
        if (c->state_full && !pj->live)
                c->o.exit_code = NSR_EXIT_FAILURE;
        if (c->capture_failed)
                run_outcome = NSR_OUTCOME_FAILED;
        else if (!pj->live && (c->interrupted || c->timed_out || (c->state_full && !p->proj.discard) || p->proj.keep))
                run_outcome = NSR_OUTCOME_KEPT;
        else if (p->proj.discard)
                run_outcome = NSR_OUTCOME_DISCARDED;
        else
                run_outcome = NSR_OUTCOME_COMMITTED;
        return run_outcome;
}

/* Apply (or settle, with live writes) every project's changes; the run's
 * outcome after. */
static nsr_outcome apply(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        int run_fd = c->run_fd, statefd = c->statefd;
        struct timespec run_start = c->run_start;

        bool apply_failed = false, any_conflict = false, withheld = false;
        /* --on-conflict=keep-all|fail: a conflict in any project holds
         * every project back, so first look for one everywhere. */
        if (!pj->live && run_outcome == NSR_OUTCOME_COMMITTED && nsr_conflict_mode_withholds(p->proj.on_conflict) &&
            pj->n > 1) {
                for (size_t i = 0; i < pj->n && !withheld; i++) {
                        project_entry *e = &pj->p[i];
                        if (!e->changes || nsr_changeset_is_empty(e->changes))
                                continue;
                        nsr_error ae = { 0 };
                        if (apply_one(pj, i, run_fd, statefd, &run_start, true, &ae) >= 0)
                                withheld = e->commit.n_conflicts > 0;
                        else
                                nsr_commit_result_done(&e->commit);
                        if (!withheld)
                                nsr_commit_result_done(&e->commit);
                }
                if (withheld)
                        run_outcome = NSR_OUTCOME_KEPT;
        }
        for (size_t i = 0; i < pj->n; i++) {
                project_entry *e = &pj->p[i];
                if (!e->changes) {
                        e->outcome = NSR_OUTCOME_FAILED;
                        continue;
                }
                if (pj->live) {
                        /* Putting protected paths back and recording the
                         * run race with an apply or undo of another nsrun:
                         * never without the lock. The changes stay in
                         * place, and so does the snapshot. */
                        nsr_error le = { 0 };
                        _cleanup_close_ int lock = nsr_project_lock(statefd, e->path, &le);
                        settle_live(pj, e, run_fd, i, &run_start, lock < 0 ? &le : NULL, o);
                        apply_failed |= e->outcome == NSR_OUTCOME_FAILED;
                        continue;
                }
                if (run_outcome != NSR_OUTCOME_COMMITTED) {
                        e->outcome = run_outcome;
                        continue;
                }
                if (nsr_changeset_is_empty(e->changes)) {
                        /* Nothing to apply: no lock, journal, backups or
                         * fsync, the common case of a command that only
                         * reads. Undo knows such a run has nothing to
                         * restore (its counts are all 0). */
                        e->outcome = NSR_OUTCOME_COMMITTED;
                        continue;
                }
                nsr_error ae = { 0 };
                if (apply_one(pj, i, run_fd, statefd, &run_start, false, &ae) < 0) {
                        char buf[NSR_ERROR_MSG_MAX + 256];
                        nsr_error_format(&ae, buf, sizeof(buf));
                        nsr_strv_extend(&e->errors, buf);
                        msg(o, "nsrun: %s: the apply failed and was rolled back: %s", e->path, buf);
                        e->outcome = NSR_OUTCOME_FAILED;
                        apply_failed = true;
                        /* The report names the first failure with its kind. */
                        if (c->failure.kind == NSR_ERR_NONE) {
                                c->failure = ae;
                                c->failure.kind = (ae.code == ENOSPC || ae.code == EDQUOT) &&
                                                                  nsr_state_free(statefd) < NSR_STATE_MIN_FREE
                                                          ? NSR_ERR_STATE_FULL
                                                          : NSR_ERR_APPLY;
                        }
                        /* A full state dir (the journal, the backups) is
                         * said as such, with what a run needs. */
                        if (ae.code == ENOSPC || ae.code == EDQUOT) {
                                nsr_error fe = { 0 };
                                if (nsr_state_free(statefd) < NSR_STATE_MIN_FREE) {
                                        (void) nsr_state_full_error(statefd, pj->state_dir, &fe);
                                        msg(o, "nsrun: %s", fe.msg);
                                }
                        }
                        continue;
                }
                if (e->commit.withheld) {
                        e->outcome = NSR_OUTCOME_KEPT;
                        withheld = true;
                } else if (e->commit.n_conflicts > 0) {
                        e->outcome = NSR_OUTCOME_CONFLICT;
                        any_conflict = true;
                } else
                        e->outcome = NSR_OUTCOME_COMMITTED;
        }
        if (apply_failed) {
                run_outcome = NSR_OUTCOME_FAILED;
                o->exit_code = NSR_EXIT_FAILURE;
                c->apply_failed = !pj->live;
        } else if (withheld) {
                /* A project applied before another one's conflict showed
                 * (the host changed it between the check and the apply)
                 * stays applied; the run is kept for the others. */
                run_outcome = NSR_OUTCOME_KEPT;
                if (p->proj.on_conflict == NSR_CONFLICT_FAIL)
                        o->exit_code = NSR_EXIT_FAILURE;
        } else if (any_conflict)
                run_outcome = NSR_OUTCOME_CONFLICT;
        return run_outcome;
}

/* The layers: an applied or discarded run needs them no more; a kept run
 * keeps its upper dirs for diff and commit. A discarded live run needs its
 * snapshot no more either. Then the run's outcome goes into its meta. */
/* Moves RUN/name into RUN/trash/as (made when missing). */
static bool to_trash(int run_fd, const char *name, const char *as) {
        /* RUN/trash is there in a run dir made ahead (txn/spare.h). */
        if (renameat(run_fd, name, run_fd, as) == 0)
                return true;
        return errno == ENOENT && (mkdirat(run_fd, "trash", 0700) == 0 || errno == EEXIST) &&
               renameat(run_fd, name, run_fd, as) == 0;
}

static void record(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_project_outcome *o = &c->o;
        int run_fd = c->run_fd;
        bool trashed = false;

        for (size_t i = 0; i < pj->n; i++) {
                char rel[32], trash[48];
                nsr_error ce = { 0 };
                /* What the run leaves goes to RUN/trash, removed in the
                 * background: freeing blocks costs a synchronous discard on
                 * a file system mounted with "discard" (2 to 4 ms each on
                 * the VM of bench/README.md), even for empty dirs. */
                snprintf(rel, sizeof(rel), "p%zu/work", i);
                snprintf(trash, sizeof(trash), "trash/p%zu-work", i);
                if (to_trash(run_fd, rel, trash))
                        trashed = true;
                else
                        (void) nsr_rm_rf_at(run_fd, rel, &ce);
                /* A failed apply rolled back into the upper dir: keep it. */
                bool keep_upper =
                        pj->p[i].outcome == NSR_OUTCOME_KEPT || (!pj->live && pj->p[i].outcome == NSR_OUTCOME_FAILED);
                if (!keep_upper) {
                        /* A run kept for another project's failed apply:
                         * "nsrun commit" must not apply this one again. */
                        bool applied =
                                pj->p[i].outcome == NSR_OUTCOME_COMMITTED || pj->p[i].outcome == NSR_OUTCOME_CONFLICT;
                        snprintf(rel, sizeof(rel), "p%zu/applied", i);
                        if (c->apply_failed && applied)
                                (void) nsr_durable_write(run_fd, rel, "", 0, 0600, 0, &ce);
                        snprintf(rel, sizeof(rel), "p%zu/upper", i);
                        snprintf(trash, sizeof(trash), "trash/p%zu-upper", i);
                        if (to_trash(run_fd, rel, trash))
                                trashed = true;
                        else
                                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                }
                if (pj->live && pj->p[i].outcome == NSR_OUTCOME_DISCARDED) {
                        snprintf(rel, sizeof(rel), "backup/p%zu", i);
                        snprintf(trash, sizeof(trash), "trash/p%zu", i);
                        if (mkdirat(run_fd, "trash", 0700) < 0 && errno != EEXIST)
                                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                        else if (renameat(run_fd, rel, run_fd, trash) < 0)
                                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                }
        }
        /* A run whose capture or apply failed was applied nowhere (an
         * apply rolls back): it is kept, so that once the cause is fixed
         * "nsrun commit RUN" can finish it. */
        bool kept_failed = (c->capture_failed || c->apply_failed) && !pj->live;
        c->kept_failed = kept_failed;
        /* After the record written when the run began (txn/state.h). */
        nsr_error me = { 0 };
        int mr = project_write_meta(pj, run_fd, kept_failed ? NSR_OUTCOME_KEPT : run_outcome, &c->run_start,
                                    c->lr.wait_status, true, true, &me);
        /* What is left of the layers and snapshots goes off the run's path,
         * and so do the sandbox's mounts (release_mounts): in the
         * background, once the report is written (nsr_project_run). */
        c->trash_pending = pj->live || trashed || c->lr.mnt_ns >= 0;
        if (mr < 0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&me, buf, sizeof(buf));
                msg(o,
                    "nsrun: the run's outcome (%s) could not be recorded: %s; history, undo and gc see run %s "
                    "as unfinished",
                    nsr_outcome_to_string(run_outcome), buf, pj->run_id);
                o->exit_code = NSR_EXIT_FAILURE;
        }
}

/* A run: recover what an interrupted apply left, choose the confinement,
 * create the run dir, launch, capture, apply, record, explain, report. */
int nsr_project_run(nsr_project *pj, nsr_project_outcome *out, nsr_error *err) {
        nsr_plan *p = pj->plan;
        _cleanup_(run_ctx_done) run_ctx c = {
                .pj = pj,
                .statefd = -1,
                .run_fd = -1,
                .lr = { .exit_code = NSR_EXIT_FAILURE, .mnt_ns = -1 },
                .o = { .exit_code = NSR_EXIT_FAILURE },
        };
        int r;

        for (size_t i = 0; pj->notes && pj->notes[i]; i++)
                note(pj, "nsrun: %s", pj->notes[i]);
        c.statefd = pj->state_fd >= 0 ? TAKE_FD(pj->state_fd) : nsr_state_open(pj->state_dir, err);
        if (c.statefd < 0)
                return c.statefd;
        nsr_timing *t = p->timing;
        nsr_timing_mark_now(t, "state dir opened");
        r = nsr_state_check_space(c.statefd, pj->state_dir, err);
        if (r >= 0)
                r = recover(&c, err);
        take_start(&c);
        nsr_timing_mark_now(t, "recover");
        if (r >= 0)
                r = project_choose_confinement(&c, err);
        nsr_timing_mark_now(t, "confinement chosen");
        if (r < 0)
                return r;
        r = project_launch(&c, err);
        nsr_timing_mark_now(t, "monitor: command ended, sandbox gone");
        /* As before any launch: a run dir that could not be made is the
         * run's error, and there is no run to report. */
        if (r < 0 && c.create_failed)
                return r;
        if (r < 0) {
                project_launch_failed(&c, err);
                *out = c.o;
                return 0;
        }
        /* Nothing of the sandbox runs any more: what the command could
         * not write, the records can, from the reserve. */
        c.state_full = nsr_state_free(c.statefd) < STATE_FULL_BELOW;
        if (c.state_full)
                (void) nsr_state_full_error(c.statefd, pj->state_dir, &c.failure);
        nsr_run_release(c.statefd, c.run_fd, c.state_full);
        capture(&c);
        release_mounts(&c);
        nsr_timing_mark_now(t, "capture");
        nsr_outcome run_outcome = apply(&c, intended_outcome(&c));
        nsr_timing_mark_now(t, "apply");
        record(&c, run_outcome);
        nsr_timing_mark_now(t, "record");
        project_explain(&c, run_outcome);
        project_report(&c, run_outcome);
        nsr_timing_mark_now(t, "report");
        /* Forked after the run's last write (report.json): begun before
         * it, the background's removal of RUN/trash ran beside this
         * process's last steps, in the same run dir, and every page this
         * process wrote after the fork was copied first (bench/README.md,
         * "Tenth pass"). A one-shot run starts it later still, as nsrun
         * ends (nsr_state_background_defer). */
        if (c.trash_pending)
                nsr_state_trash_background(pj->state_dir, pj->run_dir, TAKE_FD(c.lr.mnt_ns));

        /* Retention runs in a detached process, never on this run's path. */
        nsr_state_gc_background(pj->state_dir, p->proj.keep_days < 0 ? 7 : p->proj.keep_days,
                                p->proj.backup_limit ? p->proj.backup_limit : NSR_BACKUP_LIMIT_DEFAULT);
        *out = c.o;
        return 0;
}
