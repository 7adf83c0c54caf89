/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsrun diff: what a kept run changed (or an applied run applied), as a
 * unified diff for text files and one line for the rest. A front end: it
 * prints and picks the exit code. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/syscalls.h"
#include "base/textdiff.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "cmd/runs-internal.h"
#include "project/project.h"
#include "txn/journal.h"
#include "txn/state.h"

#define DIFF_MAX_FILE (8u << 20)

static const nsr_subopt diff_opts[] = { OPT_STATE_DIR, OPT_PROJECT, OPT_END };

static const nsr_subcmd diff_cmd = {
        "diff",
        "[RUN]",
        "Show what a kept run changed: a unified diff for text files, one line for the rest.\n"
        "Without RUN: the latest run of the project at DIR, or at the current dir.\n"
        "An applied run shows what it applied (its backups against the project now).\n"
        "On a terminal, control characters in the text are shown as signs, never sent.\n",
        1,
        0,
        diff_opts,
};

/* ---- diff --------------------------------------------------------------- */

static int read_at(int dirfd, const char *path, char **ret, size_t *ret_len) {
        /* O_NONBLOCK: the project as it is now may hold a fifo at the
         * path, whose open would wait for a writer. */
        int fd = nsr_openat2(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                             RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t) st.st_size > DIFF_MAX_FILE) {
                close(fd);
                return -EFBIG;
        }
        int r = nsr_read_all(fd, DIFF_MAX_FILE, ret, ret_len);
        close(fd);
        return r;
}

static void diff_change(int upper, int project, const nsr_change *c) {
        _cleanup_free_ char *shown = nsr_utf8_escape(c->path);
        if (c->old.exists && c->kind != NSR_CHANGE_DELETED && c->type != NSR_ENTRY_SYMLINK &&
            c->old.type != NSR_ENTRY_SYMLINK && (c->old.mode & 07777) != (c->mode & 07777))
                say(stdout, "mode %s %04o -> %04o\n", shown, (unsigned) (c->old.mode & 07777),
                    (unsigned) (c->mode & 07777));
        if (c->type != NSR_ENTRY_FILE || c->kind == NSR_CHANGE_METADATA_CHANGED ||
            (c->kind == NSR_CHANGE_TYPE_CHANGED && c->old.type != NSR_ENTRY_FILE)) {
                const char *k = nsr_change_kind_to_string(c->kind);
                if (c->type == NSR_ENTRY_SYMLINK && c->target) {
                        _cleanup_free_ char *t = nsr_utf8_escape(c->target);
                        say(stdout, "%s %s %s -> %s\n", k, nsr_entry_type_to_string(c->type), shown, t);
                } else if (c->kind == NSR_CHANGE_DELETED && c->type == NSR_ENTRY_DIR)
                        say(stdout, "%s dir %s (%llu entries below)\n", k, shown, (unsigned long long) c->descendants);
                else
                        say(stdout, "%s %s %s (mode %04o)\n", k, nsr_entry_type_to_string(c->type), shown,
                            (unsigned) c->mode);
                return;
        }
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t al = 0, bl = 0;
        int ra = 0, rb = 0;
        if (c->old.exists && c->old.type == NSR_ENTRY_FILE)
                ra = read_at(project, c->path, &a, &al);
        else
                a = nsr_strdup("");
        if (c->kind != NSR_CHANGE_DELETED)
                rb = read_at(upper, c->path, &b, &bl);
        else
                b = nsr_strdup("");
        if (ra < 0 || rb < 0) {
                say(stdout, "%s file %s: too large to show (%llu bytes)\n", nsr_change_kind_to_string(c->kind), shown,
                    (unsigned long long) c->size);
                return;
        }
        _cleanup_free_ char *la = c->old.exists ? nsr_asprintf("a/%s", shown) : nsr_strdup("/dev/null");
        _cleanup_free_ char *lb = c->kind != NSR_CHANGE_DELETED ? nsr_asprintf("b/%s", shown) : nsr_strdup("/dev/null");
        /* As git says it: a program that reads diffs knows the line. */
        if (!nsr_diff_is_text(a, al) || !nsr_diff_is_text(b, bl)) {
                say(stdout, "Binary files %s and %s differ\n", la, lb);
                return;
        }
        nsr_error e = { 0 };
        if (nsr_diff_unified(a, al, b, bl, la, lb, stdout, isatty(STDOUT_FILENO) == 1, &e) < 0)
                say(stdout, "%s file %s: too many differences to show\n", nsr_change_kind_to_string(c->kind), shown);
}

/* An applied run: what it applied, from its journal, with the originals
 * from its backups and the new side as the project has it now. -1 when
 * there is no journal to read (nothing applied, or pruned). */
static int diff_applied(int run_fd, size_t i, const nsr_run_meta *m) {
        char rel[32];
        snprintf(rel, sizeof(rel), "journal/p%zu", i);
        _cleanup_close_ int jfd = openat(run_fd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_(nsr_journal_freep) nsr_journal *j = NULL;
        nsr_error e = { 0 };
        if (jfd < 0 || nsr_journal_read(jfd, false, &j, &e) < 0)
                return -1;
        snprintf(rel, sizeof(rel), "backup/p%zu", i);
        _cleanup_close_ int backup = openat(run_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int project = open(m->projects[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (project < 0 || backup < 0)
                return -1;
        say(stdout, "# %s (run %s, %s): what it applied; the new side is the project as it is now\n", m->projects[i],
            m->run_id, nsr_outcome_to_string(m->state));
        for (size_t k = 0; k < j->n_steps; k++) {
                const nsr_step *s = &j->steps[k];
                nsr_change c = { .path = s->path };
                switch (s->op) {
                case NSR_STEP_PLACE:
                        c.kind = NSR_CHANGE_CREATED;
                        c.type = s->new_id.type;
                        c.mode = s->new_id.mode;
                        break;
                case NSR_STEP_REPLACE:
                case NSR_STEP_WRITE:
                        c.kind = s->new_id.type == s->orig.type ? NSR_CHANGE_MODIFIED : NSR_CHANGE_TYPE_CHANGED;
                        c.type = s->new_id.type;
                        c.mode = s->new_id.mode;
                        c.old = (nsr_entry_old){ .exists = true, .type = s->orig.type, .mode = s->orig.mode };
                        break;
                case NSR_STEP_REMOVE:
                        c.kind = NSR_CHANGE_DELETED;
                        c.type = s->orig.type;
                        c.mode = s->orig.mode;
                        c.old = (nsr_entry_old){ .exists = true, .type = s->orig.type, .mode = s->orig.mode };
                        break;
                case NSR_STEP_META:
                        c.kind = NSR_CHANGE_METADATA_CHANGED;
                        c.type = NSR_ENTRY_DIR;
                        c.mode = s->new_mode;
                        break;
                case _NSR_STEP_OP_MAX:
                case _NSR_STEP_OP_INVALID:
                        continue;
                }
                diff_change(project, backup, &c);
        }
        return 0;
}

/* The newest run of the project at dir (or the current dir, or the
 * project the current dir is inside), printing why when there is none. */
static char *latest_run_here(int statefd, const char *dir) {
        _cleanup_free_ char *here = runs_realpath_or_self(dir ? dir : ".");
        nsr_error e = { 0 };
        _cleanup_strv_free_ char **runs = NULL;
        if (nsr_state_list_runs(statefd, &runs, &e) < 0) {
                runs_err_print(&e);
                return NULL;
        }
        for (size_t i = 0; runs && runs[i]; i++) {
                _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
                _cleanup_close_ int fd = nsr_run_open(statefd, runs[i], &e);
                if (fd < 0 || nsr_run_meta_read(fd, &m, &e) < 0)
                        continue;
                for (size_t k = 0; m.projects && m.projects[k]; k++)
                        if (nsr_path_is_below(here, m.projects[k]) || streq(here, m.projects[k]))
                                return nsr_strdup(runs[i]);
        }
        say(stderr, "nsrun: diff: no run of a project at %s (give a RUN, or -p DIR)\n", here);
        return NULL;
}

int nsr_cmd_diff(int argc, char **argv) {
        args a;
        if (runs_parse_args(argc, argv, &diff_cmd, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help) {
                nsr_subopts_help(stdout, &diff_cmd);
                return 0;
        }
        _cleanup_close_ int statefd = runs_open_state(&a, NULL);
        if (statefd < 0)
                return 1;
        _cleanup_free_ char *latest = NULL;
        if (!a.run) {
                latest = latest_run_here(statefd, a.project);
                if (!latest)
                        return 1;
                a.run = latest;
        }
        _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
        _cleanup_close_ int run_fd = runs_open_run(statefd, a.run, &m);
        if (run_fd < 0)
                return 1;
        for (size_t i = 0; m.projects && m.projects[i]; i++) {
                char rel[32];
                snprintf(rel, sizeof(rel), "p%zu/upper", i);
                _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (upper < 0) {
                        if (diff_applied(run_fd, i, &m) == 0)
                                continue;
                        say(stdout,
                            "# %s: the run is %s; its layers are gone (%lu created, %lu modified, %lu deleted)\n",
                            m.projects[i], nsr_outcome_to_string(m.state), m.counts[i][0], m.counts[i][1],
                            m.counts[i][2]);
                        continue;
                }
                _cleanup_close_ int project = runs_open_project_dir(&m, i);
                if (project < 0)
                        return 1;
                _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
                _cleanup_(nsr_protect_result_freep) nsr_protect_result *prot = NULL;
                nsr_error e = { 0 };
                if (nsr_project_capture(run_fd, i, project, m.projects[i], &cs, &prot, &e) < 0) {
                        nsr_error_prefix(&e, "%s", m.projects[i]);
                        runs_err_print(&e);
                        return 1;
                }
                say(stdout, "# %s (run %s, %s)\n", m.projects[i], m.run_id, nsr_outcome_to_string(m.state));
                _cleanup_close_ int upper_rd = openat(run_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                for (size_t k = 0; k < cs->n_changes; k++)
                        diff_change(upper_rd >= 0 ? upper_rd : upper, project, &cs->changes[k]);
                for (size_t k = 0; k < prot->n_notes; k++) {
                        const nsr_protect_note *n = &prot->notes[k];
                        _cleanup_free_ char *s = nsr_utf8_escape(n->path);
                        switch (n->action) {
                        case NSR_PROTECT_DROPPED:
                                say(stdout, "protected %s (will not be applied: %s)\n", s, n->reason);
                                break;
                        case NSR_PROTECT_CONFIG_REDUCED:
                                say(stdout, "protected %s (will be reduced to git config keys that run nothing)\n", s);
                                break;
                        case NSR_PROTECT_MODE_REDUCED:
                                say(stdout, "protected %s (mode %04o requested, %04o will be applied)\n", s,
                                    (unsigned) n->requested, (unsigned) n->mode);
                                break;
                        case NSR_PROTECT_XATTR_DROPPED: {
                                _cleanup_free_ char *x = nsr_utf8_escape(n->detail ? n->detail : "");
                                say(stdout, "protected %s (xattr %s will be stripped)\n", s, x);
                                break;
                        }
                        case _NSR_PROTECT_ACTION_MAX:
                        case _NSR_PROTECT_ACTION_INVALID:
                                break;
                        }
                }
        }
        return 0;
}
