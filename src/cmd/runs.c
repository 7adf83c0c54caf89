/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The run subcommands: commit, discard, undo, history, gc (diff.c: diff).
 * Front ends: they print and pick exit codes (0 success, 1 failure, 3 when
 * undo refused some paths). */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/durable.h"
#include "base/json.h"
#include "base/syscalls.h"
#include "base/textdiff.h"
#include "base/utf8.h"
#include "cli/plan.h"
#include "cli/subopts.h"
#include "cmd/cmd.h"
#include "cmd/runs-internal.h"
#include "project/orphan.h"
#include "project/project.h"
#include "project/report.h"
#include "project/session.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/state.h"

extern char **environ;

void runs_err_print(const nsr_error *e) {
        nsr_cmd_print_error(e);
}

/* Opens project I of a run as the directory the run was made in. Between
 * the run and a later commit or undo the path can be replaced (a later run
 * on the parent dir turns it into a symlink to $HOME, say): writing through
 * it would then land somewhere else. So the fd must still be the recorded
 * dir (st_dev, st_ino), and reached by the recorded path itself, with no
 * symlink on the way. Prints why it refuses. */
int runs_open_project_dir(const nsr_run_meta *m, size_t i) {
        const char *path = m->projects[i];
        _cleanup_close_ int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno != ENOTDIR && errno != ELOOP) {
                say(stderr, "nsrun: %s: %s\n", path, strerror(errno));
                return -1;
        }
        struct stat st;
        char link[64], *real = NULL;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        real = fd >= 0 ? realpath(link, NULL) : NULL;
        bool same_path = fd >= 0 && real && streq(real, path);
        free(real);
        bool same_dir =
                fd >= 0 && fstat(fd, &st) == 0 &&
                (!m->ids || (!m->ids[i][0] && !m->ids[i][1]) ||
                 ((unsigned long long) st.st_dev == m->ids[i][0] && (unsigned long long) st.st_ino == m->ids[i][1]));
        if (!same_path || !same_dir) {
                say(stderr,
                    "nsrun: %s: is no longer the directory run %s was made in (it was replaced, moved or is "
                    "reached through a symlink now); refusing to touch it\n",
                    path, m->run_id);
                return -1;
        }
        return TAKE_FD(fd);
}

/* Checks every project of a run (only project path when path is set)
 * before anything is applied. */
static int check_projects(const nsr_run_meta *m, ssize_t only) {
        for (size_t i = 0; m->projects && m->projects[i]; i++) {
                if (only >= 0 && (size_t) only != i)
                        continue;
                int fd = runs_open_project_dir(m, i);
                if (fd < 0)
                        return -1;
                close(fd);
        }
        return 0;
}

/* Opens one project of a run, takes its lock and finishes what an
 * interrupted apply left (the count goes to *ret_n), printing any failure.
 * commit and undo both start this way. */
static int open_project(int statefd, const nsr_run_meta *m, size_t i, int *ret_fd, int *ret_lock, size_t *ret_n) {
        nsr_error e = { 0 };
        const char *path = m->projects[i];
        _cleanup_close_ int fd = runs_open_project_dir(m, i);
        if (fd < 0)
                return -1;
        _cleanup_close_ int lock = nsr_project_lock(statefd, path, &e);
        if (lock < 0) {
                say(stderr, "nsrun: %s: %s\n", path, e.msg);
                return -1;
        }
        if (nsr_commit_recover(statefd, path, fd, ret_n, &e) < 0) {
                runs_err_print(&e);
                return -1;
        }
        *ret_fd = TAKE_FD(fd);
        *ret_lock = TAKE_FD(lock);
        return 0;
}

static const nsr_subopt run_opts[] = { OPT_STATE_DIR, OPT_END };
static const nsr_subopt commit_opts[] = {
        OPT_STATE_DIR,
        { "--on-conflict", NULL, RUN_OPT_ON_CONFLICT, 1, "MODE",
          "apply-rest (default), keep-all, fail, prefer-host or prefer-sandbox (see nsrun(1))" },
        OPT_END,
};
static const nsr_subopt undo_opts[] = {
        OPT_STATE_DIR,
        OPT_PROJECT,
        { "--force", NULL, RUN_OPT_FORCE, 0, NULL, "Restore paths changed since the run too" },
        OPT_END,
};
static const nsr_subopt history_opts[] = {
        OPT_STATE_DIR,
        OPT_PROJECT,
        { "--json", NULL, RUN_OPT_JSON, 0, NULL, "Print an array of JSON objects" },
        { "--limit", NULL, RUN_OPT_LIMIT, 1, "N", "Only the N newest runs" },
        OPT_END,
};
static const nsr_subopt gc_opts[] = {
        OPT_STATE_DIR,
        { "--keep-days", NULL, RUN_OPT_KEEP_DAYS, 1, "N", "Prune runs older than N days (default 7)" },
        { "--backup-limit", NULL, RUN_OPT_BACKUP_LIMIT, 1, "SIZE",
          "Per project, SIZE of backups and SIZE of layers (default 2G each)" },
        OPT_END,
};

static const nsr_subcmd commit_cmd = { "commit", "RUN", "Apply a kept run to its projects, as one transaction.\n",
                                       1,        0,     commit_opts };
static const nsr_subcmd discard_cmd = { "discard", "RUN", "Drop a kept run.\n", 1, 0, run_opts };
static const nsr_subcmd undo_cmd = {
        "undo",
        "[RUN]",
        "Restore what a run applied from its backups: by default the project's last applied\n"
        "run that changed something. Paths changed since that run are refused unless --force.\n"
        "An undo is a run of its own: undo it by its run id to get the changes back.\n",
        1,
        0,
        undo_opts,
};
static const nsr_subcmd history_cmd = { "history", NULL, "List runs, newest first (the N newest with --limit).\n",
                                        0,         0,    history_opts };
static const nsr_subcmd gc_cmd = {
        "gc",
        NULL,
        "Prune runs older than N days (default 7), then per project two budgets of SIZE (default\n"
        "2G) that never mix: the backups of applied runs (the 3 newest always stay) and what\n"
        "sandboxes wrote (kept and failed runs' layers). The newest run of a project always stays.\n",
        0,
        0,
        gc_opts,
};

static int run_option(void *userdata, const nsr_subopt *o, const char *val, nsr_error *err) {
        args *a = userdata;
        char *end = NULL;
        switch ((run_opt) o->key) {
        case RUN_OPT_STATE_DIR:
                a->state_dir = val;
                return 0;
        case RUN_OPT_PROJECT:
                a->project = val;
                return 0;
        case RUN_OPT_JSON:
                a->json = true;
                return 0;
        case RUN_OPT_FORCE:
                a->force = true;
                return 0;
        case RUN_OPT_KEEP_DAYS:
                errno = 0;
                a->keep_days = strtol(val, &end, 10);
                if (!*val || *end || a->keep_days < 0 || errno == ERANGE)
                        return nsr_error_setx(err, EINVAL, "%s takes a number of days, not \"%s\"", o->name, val);
                return 0;
        case RUN_OPT_LIMIT:
                a->limit = strtol(val, &end, 10);
                if (!*val || *end || a->limit <= 0)
                        return nsr_error_setx(err, EINVAL, "%s takes a number of runs, not \"%s\"", o->name, val);
                return 0;
        case RUN_OPT_ON_CONFLICT:
                return nsr_conflict_mode_parse(o->name, val, &a->on_conflict, err);
        case RUN_OPT_BACKUP_LIMIT:
                if (nsr_parse_size_suffix(val, &a->backup_limit) < 0)
                        return nsr_error_setx(err, EINVAL, "%s takes a size such as 2G, not \"%s\"", o->name, val);
                return 0;
        }
        return nsr_error_setx(err, EINVAL, "%s has no handler", o->name);
}

/* Prints what is wrong and returns -EINVAL, or 0 with *a filled. */
int runs_parse_args(int argc, char **argv, const nsr_subcmd *c, args *a) {
        *a = (args){ .keep_days = -1 };
        nsr_error e = { 0 };
        nsr_subargs sa;
        int r = nsr_subopts_parse(c, argc, argv, run_option, a, &sa, &e);
        a->help = sa.help;
        a->run = sa.n_operands ? sa.operands[0] : NULL;
        nsr_subargs_done(&sa);
        if (r < 0) {
                runs_err_print(&e);
                return -EINVAL;
        }
        return 0;
}

int runs_open_state(const args *a, char **ret_dir) {
        nsr_error e = { 0 };
        _cleanup_free_ char *dir = NULL, *note = NULL;
        if (nsr_state_dir_choose(a->state_dir, environ, false, &dir, &note, &e) < 0) {
                runs_err_print(&e);
                return -1;
        }
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                say(stderr, "nsrun: no state dir at %s (%s): no runs yet\n", dir, strerror(errno));
                return -1;
        }
        /* A run or session whose nsrun was killed is a kept run from now
         * on, with its counts, before anything is listed. */
        (void) nsr_orphans_recover(dir, NULL, &e);
        if (ret_dir)
                *ret_dir = TAKE_PTR(dir);
        return fd;
}

int runs_open_run(int statefd, const char *run, nsr_run_meta *meta) {
        nsr_error e = { 0 };
        int fd = nsr_run_open(statefd, run, &e);
        if (fd < 0) {
                runs_err_print(&e);
                return -1;
        }
        if (nsr_run_meta_read(fd, meta, &e) < 0) {
                nsr_error_prefix(&e, "run %s", run);
                runs_err_print(&e);
                close(fd);
                return -1;
        }
        return fd;
}

char *runs_realpath_or_self(const char *p) {
        char *r = realpath(p, NULL);
        return r ? r : nsr_strdup(p);
}

static int find_project(const nsr_run_meta *m, const char *path) {
        for (size_t i = 0; m->projects && m->projects[i]; i++)
                if (streq(m->projects[i], path))
                        return (int) i;
        return -1;
}

/* Did the run change project I (all of them when I < 0)? A run that
 * changed nothing applied nothing: it has no journal to undo. */
static bool run_changed(const nsr_run_meta *m, int i) {
        for (size_t k = 0; m->projects && m->projects[k]; k++) {
                if (i >= 0 && (size_t) i != k)
                        continue;
                for (size_t c = 0; c < ELEMENTSOF(m->counts[k]); c++)
                        if (m->counts && m->counts[k][c])
                                return true;
        }
        return false;
}

/* ---- commit and discard --------------------------------------------------- */

/* --on-conflict=keep-all|fail: what held the project back. */
static void print_withheld(const char *project, const nsr_commit_result *res, nsr_conflict_mode mode) {
        for (size_t k = 0; k < res->n_conflicts; k++) {
                _cleanup_free_ char *shown = nsr_utf8_escape(res->conflicts[k].path);
                if (!res->conflicts[k].held)
                        say(stderr, "nsrun: %s: conflict: %s %s\n", project, shown, res->conflicts[k].reason);
        }
        say(stderr, "nsrun: %s: nothing applied (--on-conflict=%s)\n", project, nsr_conflict_mode_to_string(mode));
}

/* prefer-host: the conflicts, settled for the host; prefer-sandbox: the
 * host changes the sandbox's versions replaced. */
static void print_settled(const char *project, const nsr_commit_result *res, nsr_conflict_mode mode,
                          const char *run_id) {
        for (size_t k = 0; mode == NSR_CONFLICT_PREFER_HOST && k < res->n_conflicts; k++) {
                const nsr_commit_conflict *cf = &res->conflicts[k];
                _cleanup_free_ char *shown = nsr_utf8_escape(cf->path);
                _cleanup_free_ char *kept = cf->kept_at ? nsr_utf8_escape(cf->kept_at) : NULL;
                if (!cf->held)
                        say(stderr, "nsrun: %s: settled for the host: %s %s; the host's version stays%s%s\n", project,
                            shown, cf->reason, kept ? ", the sandbox's is kept at " : "", kept ? kept : "");
        }
        for (size_t k = 0; res->overruled && res->overruled[k] && res->overruled[k + 1]; k += 2) {
                _cleanup_free_ char *shown = nsr_utf8_escape(res->overruled[k]);
                say(stderr,
                    "nsrun: %s: settled for the sandbox: %s %s; the sandbox's version replaced it, the host's is "
                    "backed up (nsrun undo %s)\n",
                    project, shown, res->overruled[k + 1], run_id);
        }
}

int nsr_cmd_commit(int argc, char **argv) {
        args a;
        if (runs_parse_args(argc, argv, &commit_cmd, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help || !a.run) {
                nsr_subopts_help(a.help ? stdout : stderr, &commit_cmd);
                return a.help ? 0 : NSR_EXIT_USAGE;
        }
        _cleanup_free_ char *state_dir = NULL;
        _cleanup_close_ int statefd = runs_open_state(&a, &state_dir);
        if (statefd < 0)
                return 1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
        _cleanup_close_ int run_fd = runs_open_run(statefd, a.run, &m);
        if (run_fd < 0)
                return 1;
        if (m.state != NSR_OUTCOME_KEPT) {
                say(stderr, "nsrun: run %s is %s, not kept: nothing to commit\n", m.run_id,
                    nsr_outcome_to_string(m.state));
                return 1;
        }
        /* Every project first, so a replaced one refuses the whole commit
         * and the run stays kept. */
        if (check_projects(&m, -1) < 0)
                return 1;
        _cleanup_free_ char *run_path = nsr_asprintf("%s/runs/%s", state_dir, m.run_id);
        int rc = 0;
        bool conflict = false, withheld = false, applied_any = false;
        for (size_t i = 0; m.projects && m.projects[i]; i++) {
                nsr_error e = { 0 };
                _cleanup_close_ int project = -1, lock = -1;
                size_t n = 0;
                char rel[32];
                /* Applied by the run itself (or an earlier commit) while
                 * another project's apply failed: done already. */
                snprintf(rel, sizeof(rel), "p%zu/applied", i);
                if (faccessat(run_fd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                        say(stderr, "nsrun: %s: applied already\n", m.projects[i]);
                        continue;
                }
                if (open_project(statefd, &m, i, &project, &lock, &n) < 0) {
                        rc = 1;
                        continue;
                }
                if (n)
                        say(stderr, "nsrun: %s: rolled back %zu interrupted apply%s first\n", m.projects[i], n,
                            n == 1 ? "" : "s");
                _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
                _cleanup_(nsr_protect_result_freep) nsr_protect_result *prot = NULL;
                if (nsr_project_capture(run_fd, i, project, m.projects[i], &cs, &prot, &e) >= 0)
                        nsr_project_inherit_groups(run_fd, i, project, cs);
                if (!cs || nsr_project_protect(run_fd, i, project, m.projects[i], cs, prot, &e) < 0) {
                        nsr_error_prefix(&e, "%s", m.projects[i]);
                        runs_err_print(&e);
                        rc = 1;
                        continue;
                }
                snprintf(rel, sizeof(rel), "p%zu/upper", i);
                _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (upper < 0) {
                        nsr_error_set(&e, errno, "%s: cannot open the upper layer %s", m.projects[i], rel);
                        runs_err_print(&e);
                        rc = 1;
                        continue;
                }
                nsr_commit_result res = { 0 };
                nsr_commit_opts co = {
                        .project_fd = project,
                        .project_path = m.projects[i],
                        .upper_fd = upper,
                        .run_fd = run_fd,
                        .run_path = run_path,
                        .project_index = (unsigned) i,
                        /* Conflicts are judged against the run's own start. */
                        .run_start = m.start,
                        .state_fd = statefd,
                        .run_id = m.run_id,
                        .all_or_nothing = nsr_conflict_mode_withholds(a.on_conflict),
                        .prefer_sandbox = a.on_conflict == NSR_CONFLICT_PREFER_SANDBOX,
                };
                if (nsr_commit_apply(cs, &co, &res, &e) < 0) {
                        nsr_error_prefix(&e, "%s: the apply failed and was rolled back", m.projects[i]);
                        runs_err_print(&e);
                        rc = 1;
                        nsr_commit_result_done(&res);
                        continue;
                }
                if (res.withheld) {
                        print_withheld(m.projects[i], &res, a.on_conflict);
                        withheld = true;
                        nsr_commit_result_done(&res);
                        continue;
                }
                print_settled(m.projects[i], &res, a.on_conflict, m.run_id);
                for (size_t k = 0; k < res.n_conflicts && a.on_conflict != NSR_CONFLICT_PREFER_HOST; k++) {
                        _cleanup_free_ char *shown = nsr_utf8_escape(res.conflicts[k].path);
                        _cleanup_free_ char *kept =
                                res.conflicts[k].kept_at ? nsr_utf8_escape(res.conflicts[k].kept_at) : NULL;
                        if (res.conflicts[k].kept_at)
                                say(stderr, "nsrun: %s: conflict: %s %s; the sandbox's version is kept at %s\n",
                                    m.projects[i], shown, res.conflicts[k].reason, kept);
                        else
                                say(stderr, "nsrun: %s: conflict: %s %s; left as the host has it\n", m.projects[i],
                                    shown, res.conflicts[k].reason);
                }
                conflict |= res.n_conflicts > 0;
                applied_any = true;
                _cleanup_free_ char *pline = nsr_protect_summary(prot, false);
                if (pline)
                        say(stderr, "nsrun: %s: %s\n", m.projects[i], pline);
                _cleanup_free_ char *outcome =
                        res.n_conflicts
                                ? nsr_asprintf("conflict, %zu of %zu applied", res.applied, nsr_changeset_size(cs))
                                : nsr_strdup(nsr_outcome_to_string(NSR_OUTCOME_COMMITTED));
                _cleanup_free_ char *line = nsr_report_summary(m.projects[i], cs, outcome, m.run_id);
                say(stderr, "%s\n", line);
                nsr_commit_result_done(&res);
                nsr_error ce = { 0 };
                snprintf(rel, sizeof(rel), "p%zu/applied", i);
                (void) nsr_durable_write(run_fd, rel, "", 0, 0600, 0, &ce);
                snprintf(rel, sizeof(rel), "p%zu/upper", i);
                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                snprintf(rel, sizeof(rel), "p%zu/work", i);
                (void) nsr_rm_rf_at(run_fd, rel, &ce);
        }
        /* A project that failed rolled back and keeps its upper dir: the
         * run stays kept, for another "nsrun commit" once the cause is
         * fixed. */
        if (rc) {
                say(stderr, "nsrun: run %s is still kept: once the cause is fixed, \"nsrun commit %s\" again\n",
                    m.run_id, m.run_id);
                return rc;
        }
        if (withheld && !conflict && !applied_any) {
                /* keep-all, fail: nothing applied anywhere, the run stays
                 * kept for another try. */
                say(stderr, "nsrun: run %s stays kept\n", m.run_id);
                return a.on_conflict == NSR_CONFLICT_FAIL ? NSR_EXIT_FAILURE : 0;
        }
        m.state = conflict ? NSR_OUTCOME_CONFLICT : NSR_OUTCOME_COMMITTED;
        nsr_error e = { 0 };
        /* The changes are in place: without the new state, undo would
         * refuse the run and gc would treat it as still kept. */
        if (nsr_run_meta_write(run_fd, &m, &e) < 0) {
                nsr_error_prefix(&e, "run %s is %s, but its state could not be recorded", m.run_id,
                                 nsr_outcome_to_string(m.state));
                runs_err_print(&e);
                return 1;
        }
        return rc;
}

int nsr_cmd_discard(int argc, char **argv) {
        args a;
        if (runs_parse_args(argc, argv, &discard_cmd, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help || !a.run) {
                nsr_subopts_help(a.help ? stdout : stderr, &discard_cmd);
                return a.help ? 0 : NSR_EXIT_USAGE;
        }
        _cleanup_close_ int statefd = runs_open_state(&a, NULL);
        if (statefd < 0)
                return 1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
        _cleanup_close_ int run_fd = runs_open_run(statefd, a.run, &m);
        if (run_fd < 0)
                return 1;
        /* A run still marked running whose nsrun is gone (killed, or it
         * could not record its end) is as kept: its layers are all it has,
         * unless an apply of it waits for recovery. */
        bool orphan = nsr_run_meta_is_orphan(&m) && nsr_run_journals_settled(run_fd);
        if (m.state != NSR_OUTCOME_KEPT && !orphan) {
                say(stderr, "nsrun: run %s is %s, not kept: nothing to discard\n", m.run_id,
                    m.state == NSR_OUTCOME_RUNNING ? "running (its nsrun is alive, or an apply of it waits for "
                                                     "recovery)"
                                                   : nsr_outcome_to_string(m.state));
                return 1;
        }
        for (size_t i = 0; m.projects && m.projects[i]; i++) {
                char rel[32];
                nsr_error e = { 0 };
                snprintf(rel, sizeof(rel), "p%zu", i);
                if (nsr_rm_rf_at(run_fd, rel, &e) < 0) {
                        runs_err_print(&e);
                        return 1;
                }
        }
        m.state = NSR_OUTCOME_DISCARDED;
        nsr_error e = { 0 };
        if (nsr_run_meta_write(run_fd, &m, &e) < 0) {
                runs_err_print(&e);
                return 1;
        }
        say(stderr, "nsrun: run %s discarded\n", m.run_id);
        return 0;
}

/* ---- undo ------------------------------------------------------------------ */

static bool applied_state(nsr_outcome s) {
        return s == NSR_OUTCOME_COMMITTED || s == NSR_OUTCOME_CONFLICT;
}

/* The project's last applied run that is not an undo and changed
 * something; NULL after saying there is none. */
static char *last_undoable_run(int statefd, const char *project) {
        nsr_error e = { 0 };
        _cleanup_strv_free_ char **runs = NULL;
        if (nsr_state_list_runs(statefd, &runs, &e) < 0) {
                runs_err_print(&e);
                return NULL;
        }
        for (size_t i = 0; runs[i]; i++) {
                _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
                _cleanup_close_ int fd = nsr_run_open(statefd, runs[i], &e);
                if (fd < 0 || nsr_run_meta_read(fd, &m, &e) < 0)
                        continue;
                if (applied_state(m.state) && !streq(m.kind, "undo") && find_project(&m, project) >= 0 &&
                    run_changed(&m, find_project(&m, project)))
                        return nsr_strdup(runs[i]);
        }
        say(stderr, "nsrun: %s: no applied run to undo\n", project);
        return NULL;
}

/* Undoes run m in each project it changed (only project, when set), as
 * undo run undo_id; counts what was restored and refused into *um and the
 * totals. 0, or 1 when a project failed. */
static int undo_projects(int statefd, int run_fd, const nsr_run_meta *m, const char *project, int undo_fd,
                         const char *undo_id, bool force, nsr_run_meta *um, size_t *refused, size_t *restored) {
        nsr_error e = { 0 };
        int rc = 0;
        for (size_t i = 0; m->projects && m->projects[i]; i++) {
                if (project && !streq(project, m->projects[i]))
                        continue;
                if (!run_changed(m, (int) i))
                        continue;
                _cleanup_close_ int pfd = -1, lock = -1;
                size_t n = 0;
                if (open_project(statefd, m, i, &pfd, &lock, &n) < 0) {
                        rc = 1;
                        continue;
                }
                nsr_undo_result ur = { 0 };
                nsr_undo_opts uo = { .project_fd = pfd,
                                     .project_path = m->projects[i],
                                     .run_fd = run_fd,
                                     .project_index = (unsigned) i,
                                     .undo_run_fd = undo_fd,
                                     .force = force,
                                     .state_fd = statefd,
                                     .undo_run_id = undo_id };
                if (nsr_commit_undo(&uo, &ur, &e) < 0) {
                        nsr_error_prefix(&e, "%s: the undo failed and was rolled back", m->projects[i]);
                        runs_err_print(&e);
                        rc = 1;
                        nsr_undo_result_done(&ur);
                        continue;
                }
                for (size_t k = 0; ur.refused && ur.refused[k]; k++) {
                        _cleanup_free_ char *s = nsr_utf8_escape(ur.refused[k]);
                        say(stderr, "nsrun: %s: %s changed since run %s; not restored (use --force)\n", m->projects[i],
                            s, m->run_id);
                        (*refused)++;
                }
                *restored += ur.restored;
                um->counts[i][1] = ur.restored;
                nsr_undo_result_done(&ur);
        }
        return rc;
}

int nsr_cmd_undo(int argc, char **argv) {
        args a;
        if (runs_parse_args(argc, argv, &undo_cmd, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help || (!a.run && !a.project)) {
                nsr_subopts_help(a.help ? stdout : stderr, &undo_cmd);
                return a.help ? 0 : NSR_EXIT_USAGE;
        }
        _cleanup_free_ char *state_dir = NULL;
        _cleanup_close_ int statefd = runs_open_state(&a, &state_dir);
        if (statefd < 0)
                return 1;
        _cleanup_free_ char *project = a.project ? runs_realpath_or_self(a.project) : NULL;
        _cleanup_free_ char *run = a.run ? nsr_strdup(a.run) : last_undoable_run(statefd, project);
        nsr_error e = { 0 };
        if (!run)
                return 1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
        _cleanup_close_ int run_fd = runs_open_run(statefd, run, &m);
        if (run_fd < 0)
                return 1;
        if (!applied_state(m.state)) {
                say(stderr, "nsrun: run %s is %s: only an applied run can be undone\n", m.run_id,
                    nsr_outcome_to_string(m.state));
                return 1;
        }
        if (!run_changed(&m, project ? find_project(&m, project) : -1)) {
                say(stderr, "nsrun: run %s changed nothing%s%s: nothing to undo\n", m.run_id, project ? " in " : "",
                    project ? project : "");
                return 0;
        }
        if (check_projects(&m, project ? find_project(&m, project) : -1) < 0)
                return 1;

        char undo_id[NSR_RUN_ID_MAX];
        nsr_run_id_new(undo_id);
        _cleanup_close_ int undo_fd = nsr_run_create(statefd, undo_id, 0, &e);
        if (undo_fd < 0) {
                runs_err_print(&e);
                return 1;
        }
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        nsr_run_meta um = { .kind = (char *) "undo",
                            .undoes = m.run_id,
                            .state = NSR_OUTCOME_RUNNING,
                            .start = now,
                            .exit_code = -1,
                            .projects = m.projects,
                            .ids = m.ids };
        snprintf(um.run_id, sizeof(um.run_id), "%s", undo_id);
        nsr_run_meta_set_owner(&um);
        um.counts = nsr_malloc0((nsr_strv_length(m.projects) + 1) * sizeof(*um.counts));
        /* An undo that could not be recorded could not be undone itself. */
        if (nsr_run_meta_write(undo_fd, &um, &e) < 0) {
                free(um.counts);
                runs_err_print(&e);
                _cleanup_free_ char *rel = nsr_asprintf("runs/%s", undo_id);
                nsr_error re = { 0 };
                (void) nsr_rm_rf_at(statefd, rel, &re);
                return 1;
        }

        size_t refused = 0, restored = 0;
        int rc = undo_projects(statefd, run_fd, &m, project, undo_fd, undo_id, a.force, &um, &refused, &restored);
        um.state = rc ? NSR_OUTCOME_FAILED : NSR_OUTCOME_COMMITTED;
        if (nsr_run_meta_write(undo_fd, &um, &e) < 0) {
                nsr_error_prefix(&e, "undo run %s: its outcome could not be recorded", undo_id);
                runs_err_print(&e);
                rc = 1;
        }
        free(um.counts);
        /* A run with refused paths stays applied, so that "undo --force
         * RUN" can finish the job. */
        if (rc == 0 && refused == 0) {
                m.state = NSR_OUTCOME_UNDONE;
                if (nsr_run_meta_write(run_fd, &m, &e) < 0) {
                        nsr_error_prefix(&e, "run %s is undone, but that could not be recorded", m.run_id);
                        runs_err_print(&e);
                        rc = 1;
                }
        }
        say(stderr, "nsrun: undid run %s: %zu path%s restored%s (undo run %s)\n", m.run_id, restored,
            restored == 1 ? "" : "s", refused ? ", some refused" : "", undo_id);
        if (rc)
                return 1;
        return refused ? 3 : 0;
}

/* ---- history ------------------------------------------------------------------ */

int nsr_cmd_history(int argc, char **argv) {
        args a;
        if (runs_parse_args(argc, argv, &history_cmd, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help) {
                nsr_subopts_help(stdout, &history_cmd);
                return 0;
        }
        _cleanup_close_ int statefd = runs_open_state(&a, NULL);
        if (statefd < 0)
                return a.json ? (puts("[]"), 0) : 0;
        _cleanup_free_ char *project = a.project ? runs_realpath_or_self(a.project) : NULL;
        nsr_error e = { 0 };
        _cleanup_strv_free_ char **runs = NULL;
        if (nsr_state_list_runs(statefd, &runs, &e) < 0) {
                runs_err_print(&e);
                return 1;
        }
        _cleanup_(nsr_json_freep) nsr_json *j = a.json ? nsr_json_new(stdout, 0, 0) : NULL;
        if (j)
                nsr_json_array_begin(j, NULL);
        long shown = 0;
        for (size_t i = 0; runs[i] && (a.limit == 0 || shown < a.limit); i++) {
                _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
                _cleanup_close_ int fd = nsr_run_open(statefd, runs[i], &e);
                if (fd < 0 || nsr_run_meta_read(fd, &m, &e) < 0)
                        continue;
                if (project && find_project(&m, project) < 0)
                        continue;
                shown++;
                char when[32] = "";
                (void) nsr_json_format_time(&m.start, when, sizeof(when));
                if (j) {
                        nsr_json_object_begin(j, NULL);
                        nsr_json_string(j, "run_id", m.run_id);
                        nsr_json_string(j, "kind", m.kind ? m.kind : "run");
                        nsr_json_string(j, "started_at", when);
                        nsr_json_strv(j, "command", m.argv);
                        if (m.exit_code >= 0)
                                nsr_json_int(j, "exit_code", m.exit_code);
                        else
                                nsr_json_null(j, "exit_code");
                        if (m.signal > 0)
                                nsr_json_string(j, "signal", nsr_report_signal_name(m.signal));
                        else
                                nsr_json_null(j, "signal");
                        nsr_json_string(j, "outcome", nsr_outcome_to_string(m.state));
                        if (m.undoes)
                                nsr_json_string(j, "undoes", m.undoes);
                        nsr_json_array_begin(j, "projects");
                        for (size_t k = 0; m.projects && m.projects[k]; k++) {
                                nsr_json_object_begin(j, NULL);
                                nsr_json_string(j, "path", m.projects[k]);
                                static const char *const names[5] = { "created", "modified", "deleted", "type_changed",
                                                                      "metadata_changed" };
                                for (int c = 0; c < 5; c++)
                                        nsr_json_uint(j, names[c], m.counts[k][c]);
                                nsr_json_object_end(j);
                        }
                        nsr_json_array_end(j);
                        nsr_json_object_end(j);
                        continue;
                }
                _cleanup_free_ char *cmd = nsr_strdup("");
                for (size_t k = 0; m.argv && m.argv[k]; k++) {
                        _cleanup_free_ char *s = nsr_utf8_escape(m.argv[k]);
                        char *n = nsr_asprintf("%s%s%s", cmd, k ? " " : "", s);
                        free(cmd);
                        cmd = n;
                }
                char status[32];
                if (m.signal > 0)
                        snprintf(status, sizeof(status), "%s", nsr_report_signal_name(m.signal));
                else if (m.exit_code >= 0)
                        snprintf(status, sizeof(status), "exit %d", m.exit_code);
                else
                        snprintf(status, sizeof(status), "-");
                for (size_t k = 0; m.projects && m.projects[k]; k++) {
                        if (project && !streq(project, m.projects[k]))
                                continue;
                        if (streq(m.kind ? m.kind : "run", "undo"))
                                say(stdout, "%s  %-9s  undo of %s  %s\n", m.run_id, nsr_outcome_to_string(m.state),
                                    m.undoes ? m.undoes : "?", m.projects[k]);
                        else
                                say(stdout, "%s  %-9s  %-8s  +%lu ~%lu -%lu  %s  %s\n", m.run_id,
                                    nsr_outcome_to_string(m.state), status, m.counts[k][0],
                                    m.counts[k][1] + m.counts[k][3] + m.counts[k][4], m.counts[k][2], m.projects[k],
                                    cmd);
                }
        }
        if (j) {
                nsr_json_array_end(j);
                if (nsr_json_finish(j, "history", NULL, NULL, &e) < 0) {
                        runs_err_print(&e);
                        return 1;
                }
        }
        return 0;
}

/* ---- gc ------------------------------------------------------------------------ */

int nsr_cmd_gc(int argc, char **argv) {
        args a;
        if (runs_parse_args(argc, argv, &gc_cmd, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help) {
                nsr_subopts_help(stdout, &gc_cmd);
                return 0;
        }
        _cleanup_close_ int statefd = runs_open_state(&a, NULL);
        if (statefd < 0)
                return 0;
        nsr_error e = { 0 };
        nsr_gc_stats st = { 0 };
        if (nsr_state_gc(statefd, a.keep_days < 0 ? 7 : a.keep_days,
                         a.backup_limit ? a.backup_limit : NSR_BACKUP_LIMIT_DEFAULT, &st, &e) < 0) {
                runs_err_print(&e);
                return 1;
        }
        say(stderr, "nsrun: gc: removed %zu run%s (%llu bytes)\n", st.removed, st.removed == 1 ? "" : "s",
            (unsigned long long) st.bytes);
        return 0;
}
