/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Preparing a project run: the projects resolved, the state dir and the
 * run's id chosen, the profile expanded into the plan
 * (nsr_project_prepare), and later the run's dir made (project_create_run). */
#include "config.h"

#include <fcntl.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "base/durable.h"
#include "project/foreign.h"
#include "project/internal.h"
#include "project/profile.h"
#include "project/workspace.h"
#include "seccomp/compile.h"

extern char **environ;

/* The real path of a dir that may not exist yet: the nearest existing
 * ancestor, resolved, plus the rest. */
static char *real_or_planned(const char *path) {
        char buf[PATH_MAX];
        if (realpath(path, buf))
                return nsr_strdup(buf);
        _cleanup_free_ char *parent = nsr_strdup(path);
        char *slash = strrchr(parent, '/');
        if (!slash || slash == parent)
                return nsr_strdup(path);
        *slash = '\0';
        _cleanup_free_ char *rp = real_or_planned(parent);
        return nsr_path_join(rp, slash + 1);
}

static int resolve_project(const char *arg, project_entry *e, nsr_error *err) {
        char buf[PATH_MAX];
        if (!realpath(arg, buf))
                return nsr_error_setk(err,
                                      errno == ENOENT || errno == ENOTDIR ? NSR_ERR_PROJECT_MISSING : NSR_ERR_SETUP,
                                      errno, "project %s", arg);
        if (streq(buf, "/"))
                return nsr_error_setx(err, EINVAL, "project %s is the whole host; name a directory", arg);
        int fd = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno, "project %s", arg);
        struct stat st;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return nsr_error_set(err, errno, "project %s", arg);
        }
        e->path = nsr_strdup(buf);
        e->fd = fd;
        e->dev = st.st_dev;
        e->ino = st.st_ino;
        return 0;
}

/* Can the project be an overlay's lower layer? Not when it already sits
 * on an overlay whose own layers are overlays: the kernel stacks two deep.
 * mountinfo gives a lower bound (layers named by paths that no longer
 * resolve count as plain), so a failing mount is caught later too. */
static bool overlay_possible(const project_entry *e) {
        /* Only a project on an overlay needs the table: parsing it (and
         * loading libmount) costs a launch about a millisecond. */
        struct statfs sf;
        if (fstatfs(e->fd, &sf) == 0 && sf.f_type != OVERLAYFS_SUPER_MAGIC)
                return true;
        struct libmnt_table *tb = mnt_new_table_from_file("/proc/self/mountinfo");
        if (!tb)
                return true;
        int depth = nsr_hostcheck_overlay_depth(tb, e->path, e->dev);
        mnt_unref_table(tb);
        return depth < 2;
}

static int expand_paths(char **in, const char *opt, char ***ret, nsr_error *err) {
        const char *home = env_get("HOME");
        char **v = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; in && in[i]; i++) {
                char *x = nsr_profile_expand(in[i], home, environ);
                if (!x) {
                        nsr_strv_free(v);
                        return nsr_error_setx(err, EINVAL, "%s %s: cannot expand it", opt, in[i]);
                }
                nsr_strv_push(&v, x);
        }
        *ret = v;
        return 0;
}

static const char *op_option(nsr_op_type t) {
        return t == NSR_OP_DEV_BIND ? "--dev-bind" : "--bind";
}

/* A writable bind that would bypass the transaction: one whose source
 * overlaps a project (the project, a dir above it, or one inside it) makes
 * project files writable in place, and one whose destination is a project
 * or a dir above it (/) covers the project's overlay. Either way the
 * writes would go straight to the host: not captured, not undoable, and
 * reported as "no changes". */
static int check_writable_binds(const nsr_plan *user, const nsr_project *pj, nsr_error *err) {
        for (size_t i = 0; i < user->n_ops; i++) {
                const nsr_op *op = &user->ops[i];
                if ((op->type != NSR_OP_BIND && op->type != NSR_OP_DEV_BIND) || !op->source || !op->dest)
                        continue;
                _cleanup_free_ char *src = realpath(op->source, NULL);
                for (size_t k = 0; k < pj->n; k++) {
                        const char *pp = pj->p[k].path;
                        if (src && (nsr_path_under(src, pp) || nsr_path_under(pp, src)))
                                return nsr_error_setx(err, EINVAL,
                                                      "%s %s %s would make the project %s writable outside the "
                                                      "transaction (not captured, not undoable); use --ro-bind, or "
                                                      "leave the project out of it",
                                                      op_option(op->type), op->source, op->dest, pp);
                        if (op->dest[0] == '/' && nsr_path_under(pp, op->dest))
                                return nsr_error_setx(err, EINVAL,
                                                      "%s %s %s would cover the project %s, so the command would "
                                                      "not write through the transaction; bind below it or "
                                                      "elsewhere",
                                                      op_option(op->type), op->source, op->dest, pp);
                }
        }
        const char *home = env_get("HOME");
        for (size_t i = 0; user->proj.rw && user->proj.rw[i]; i++) {
                _cleanup_free_ char *x = nsr_profile_expand(user->proj.rw[i], home, environ);
                _cleanup_free_ char *real = x ? realpath(x, NULL) : NULL;
                for (size_t k = 0; real && k < pj->n; k++) {
                        const char *pp = pj->p[k].path;
                        if (nsr_path_under(real, pp) || nsr_path_under(pp, real))
                                return nsr_error_setx(
                                        err, EINVAL,
                                        "--rw %s %s the project %s: writes there would go to the host "
                                        "outside the transaction (not captured, not undoable)",
                                        user->proj.rw[i],
                                        nsr_path_under(real, pp) && !streq(real, pp) ? "is inside" : "covers", pp);
                }
        }
        return 0;
}

/* The projects: resolved, opened once, none inside another. */
static int resolve_projects(nsr_project *pj, const nsr_project_opts *o, nsr_error *err) {
        int r;

        pj->n = nsr_strv_length(o->projects);
        pj->p = nsr_malloc0((pj->n + 1) * sizeof(project_entry));
        for (size_t i = 0; i < pj->n; i++)
                pj->p[i].fd = -1;
        for (size_t i = 0; i < pj->n; i++) {
                r = resolve_project(o->projects[i], &pj->p[i], err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < pj->n; i++)
                for (size_t k = i + 1; k < pj->n; k++)
                        if (nsr_path_under(pj->p[i].path, pj->p[k].path) ||
                            nsr_path_under(pj->p[k].path, pj->p[i].path))
                                return nsr_error_setx(err, EINVAL,
                                                      "projects %s and %s overlap: one is inside the other",
                                                      pj->p[i].path, pj->p[k].path);
        return 0;
}

/* The path with its dir resolved, its last component as it is: a symlink
 * the run read a file through is itself what the next run follows. */
static char *real_parent(const char *path) {
        const char *slash = strrchr(path, '/');
        if (!slash || !slash[1])
                return real_or_planned(path);
        _cleanup_free_ char *dir = slash == path ? nsr_strdup("/") : nsr_strndup(path, (size_t) (slash - path));
        _cleanup_free_ char *rd = real_or_planned(dir);
        return nsr_path_join(rd, slash + 1);
}

/* real_or_planned(path), given rp = real_parent(path): the same unless the
 * last component is a symlink (or "." or ".."), so one lstat of rp saves
 * the second walk of the whole path, a readlink per component (and, for a
 * config path that does not exist, one walk per missing level). */
static char *real_or_planned_after(const char *path, const char *rp) {
        const char *last = strrchr(rp, '/');
        struct stat st;
        if (!last || streq(last, "/") || streq(last, "/.") || streq(last, "/..") ||
            (lstat(rp, &st) == 0 && S_ISLNK(st.st_mode)))
                return real_or_planned(path);
        return nsr_strdup(rp);
}

/* One path of config_of_project(), real as far as it exists. */
static void config_path(project_entry *e, const char *real, bool policy_dir) {
        if (!nsr_path_under(real, e->path))
                return;
        const char *rel = real + strlen(e->path);
        rel += *rel == '/';
        _cleanup_free_ char *esc = nsr_protect_escape(rel);
        char *pat = policy_dir ? nsr_asprintf("%s%s*.policy", esc, *esc ? "/" : "") : nsr_strdup(*esc ? esc : "*");
        if (nsr_strv_contains(e->config, pat))
                free(pat);
        else
                nsr_strv_push(&e->config, pat);
        struct stat st;
        if (!policy_dir && *rel && !nsr_strv_contains(e->config_bind, real) && lstat(real, &st) == 0 &&
            (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
                nsr_strv_extend(&e->config_bind, real);
}

/* What the run read as nsrun's own configuration (profiles, includes,
 * config dirs, --args files, --seccomp-policy files and the policies
 * beside them) that lies in project e: the commit's patterns
 * (nsr_protect_config_match), and what exists of it, to bind read-only. A
 * path that does not exist yet (the user's config dir) is protected too:
 * a run must not create what the next one reads. */
static void config_of_project(project_entry *e, const nsr_project_opts *o) {
        for (size_t k = 0; k < 2; k++) {
                char *const *v = k ? o->config_policy_dirs : o->config_files;
                for (size_t i = 0; v && v[i]; i++) {
                        _cleanup_free_ char *norm = nsr_path_normalize(v[i]);
                        /* The name (a symlink is what the next run follows)
                         * and what it resolves to (a dir the next run
                         * looks into). */
                        char *both[2] = { real_parent(norm), NULL };
                        both[1] = real_or_planned_after(norm, both[0]);
                        config_path(e, both[0], k == 1);
                        if (!streq(both[0], both[1]))
                                config_path(e, both[1], k == 1);
                        free(both[0]);
                        free(both[1]);
                }
        }
}

/* pN/config in the run dir: the patterns, NUL-separated, for every later
 * capture of the run (a kept run's commit, a session's commits). */
static int save_config(int run_fd, size_t i, char *const *config, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/config", i);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&buf, &len);
        if (!f)
                return nsr_error_set(err, errno, "open_memstream");
        for (size_t k = 0; config && config[k]; k++)
                fwrite(config[k], 1, strlen(config[k]) + 1, f);
        if (fflush(f) != 0)
                return nsr_error_set(err, errno, "open_memstream");
        /* No patterns (the usual case): no file, which load_config reads
         * as none, in a run dir that is new. */
        if (len == 0)
                return 0;
        return nsr_durable_write(run_fd, rel, buf ? buf : "", len, 0600, 0, err);
}

/* The state dir: chosen, never inside a project nor a project inside it,
 * and (unless a trace only looks) created. */
static int choose_state_dir(nsr_project *pj, const nsr_project_opts *o, bool create_state, nsr_error *err) {
        int r;

        _cleanup_free_ char *state = NULL, *state_note = NULL;
        r = nsr_state_dir_choose(o->state_dir, environ, create_state, &state, &state_note, err);
        if (r < 0)
                return r;
        if (state_note)
                nsr_strv_push(&pj->notes, TAKE_PTR(state_note));
        pj->state_dir = real_or_planned(state);
        for (size_t i = 0; i < pj->n; i++) {
                if (nsr_path_under(pj->state_dir, pj->p[i].path))
                        return nsr_error_setx(err, EINVAL,
                                              "the state dir %s is inside the project %s, where the sandbox could "
                                              "reach it; choose another with --state-dir",
                                              pj->state_dir, pj->p[i].path);
                if (nsr_path_under(pj->p[i].path, pj->state_dir))
                        return nsr_error_setx(err, EINVAL, "the project %s is inside the state dir %s", pj->p[i].path,
                                              pj->state_dir);
        }

        /* The profile hides the state dir, which must exist for that (a
         * trace creates nothing and shows the hiding it can). The run
         * goes on with this fd. */
        if (create_state) {
                pj->state_fd = nsr_state_open(pj->state_dir, err);
                if (pj->state_fd < 0)
                        return pj->state_fd;
        }
        return 0;
}

/* The run's id and dir, and whether it writes live (no overlay) or keeps
 * a workspace skeleton. */
static int choose_run_dir(nsr_project *pj, const nsr_project_opts *o, nsr_error *err) {
        nsr_run_id_new(pj->run_id);
        pj->run_dir = nsr_asprintf("%s/runs/%s", pj->state_dir, pj->run_id);
        pj->live = o->no_overlay || o->sandbox == NSR_SANDBOX_OFF;
        const char *deep = NULL;
        for (size_t i = 0; i < pj->n && !pj->live; i++)
                if (!overlay_possible(&pj->p[i]))
                        deep = pj->p[i].path;
        if (deep) {
                if (o->keep)
                        return nsr_error_setx(err, EINVAL,
                                              "%s is on an overlay stack as deep as the kernel allows, so it needs "
                                              "--no-overlay, which cannot be combined with --keep",
                                              deep);
                pj->live = true;
                nsr_strv_push(&pj->notes,
                              nsr_asprintf("%s is on an overlay stack as deep as the kernel allows: running with "
                                           "--no-overlay (writes go to the projects, a snapshot backs them)",
                                           deep));
        }
        if (o->workspace_root && (o->sandbox != NSR_SANDBOX_REQUIRED || pj->n != 1))
                return nsr_error_setx(err, EINVAL,
                                      "--workspace-root needs one project and the namespace sandbox "
                                      "(--sandbox=required)");
        if (o->workspace_root)
                pj->skel = nsr_asprintf("%s/p0/skel", pj->run_dir);
        return 0;
}

int nsr_project_prepare(nsr_plan *user, unsigned flags, nsr_project **ret, nsr_error *err) {
        bool create_state = flags & NSR_PREPARE_CREATE_STATE;
        _cleanup_(nsr_project_freep) nsr_project *pj = nsr_malloc0(sizeof(*pj));
        pj->state_fd = -1;
        nsr_project_opts *o = &user->proj;
        int r;

        if (o->keep && o->discard)
                return nsr_error_setx(err, EINVAL, "--keep and --discard cannot be combined");

        r = resolve_projects(pj, o, err);
        if (r < 0)
                return r;
        r = check_writable_binds(user, pj, err);
        if (r < 0)
                return r;

        if (o->keep && (o->no_overlay || o->sandbox == NSR_SANDBOX_OFF))
                return nsr_error_setx(err, EINVAL,
                                      "--keep needs the overlay: with %s the command writes to the projects "
                                      "themselves, so there is nothing to keep aside",
                                      o->no_overlay ? "--no-overlay" : "--sandbox=off");

        r = choose_state_dir(pj, o, create_state, err);
        if (r < 0)
                return r;
        r = choose_run_dir(pj, o, err);
        if (r < 0)
                return r;
        _cleanup_free_ nsr_profile_project *pp = nsr_malloc0((pj->n + 1) * sizeof(nsr_profile_project));
        for (size_t i = 0; i < pj->n; i++) {
                pj->p[i].upper = nsr_asprintf("%s/p%zu/upper", pj->run_dir, i);
                pj->p[i].work = nsr_asprintf("%s/p%zu/work", pj->run_dir, i);
                config_of_project(&pj->p[i], o);
                pp[i] = (nsr_profile_project){ .path = pj->p[i].path,
                                               .config = pj->p[i].config_bind,
                                               .upper = pj->p[i].upper,
                                               .work = pj->p[i].work,
                                               .dev = pj->p[i].dev,
                                               .ino = pj->p[i].ino,
                                               .live = pj->live,
                                               .skel = pj->skel };
        }
        pj->command = nsr_strv_copy(user->argv);

        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        /* Made now if missing, so that it exists to be hidden: a run that
         * could create it could plant the next run's filter. */
        _cleanup_free_ char *cache_dir = nsr_seccomp_cache_root(create_state);
        nsr_profile_ctx ctx = {
                .uid = getuid(),
                .gid = getgid(),
                .home = env_get("HOME"),
                .cwd = cwd,
                .env = environ,
                .datadir = nsr_datadir(),
                .state_dir = pj->state_dir,
                .cache_dir = cache_dir,
                .projects = pp,
                .n_projects = pj->n,
        };
        /* Best-effort mode needs, should it come to that, the profile's
         * hidden paths as paths: Landlock hides them by not granting
         * them. */
        if (o->sandbox == NSR_SANDBOX_BEST_EFFORT) {
                r = nsr_profile_hidden(o, &ctx, &pj->hidden, err);
                if (r < 0)
                        return r;
        }
        /* The commit's protected paths: a list that cannot be read fails
         * the run now, before anything ran, not the commit after it. */
        r = nsr_protect_load_list(ctx.datadir, ctx.home, env_get("XDG_CONFIG_HOME"), NULL, err);
        if (r < 0)
                return r;
        r = expand_paths(o->ro, "--ro", &pj->ro, err);
        if (r >= 0)
                r = expand_paths(o->rw, "--rw", &pj->rw, err);
        if (r < 0)
                return r;
        r = nsr_profile_build(user, &ctx, &pj->plan, &pj->later, err);
        if (r >= 0 && pj->later && !(flags & NSR_PREPARE_DEFER_HIDDEN))
                r = nsr_profile_fill(TAKE_PTR(pj->later), pj->plan, NULL, NULL, err);
        if (r < 0)
                return r;
        pj->plan->timing = user->timing;
        *ret = TAKE_PTR(pj);
        return 0;
}

/* The project root's record before the command (pN/root), which every
 * capture of the run compares the upper dir's mode with. */
static int save_root(int run_fd, size_t i, const struct stat *st, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/root", i);
        return nsr_capture_root_save(run_fd, rel, st, err);
}

/* The run's dir (its layers, the workspace skeleton, the upper dirs'
 * modes, the reserve) and its meta, which says it is running. */
static int create_run_dir(run_ctx *c, nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;

        int run_fd = nsr_run_create(c->statefd, pj->run_id, pj->n, err);
        if (run_fd < 0)
                return run_fd;
        c->run_fd = run_fd;
        /* Only a full state dir stops the run here: a reserve refused for
         * another reason (a file size limit) only leaves the run without
         * it. */
        int r = nsr_run_reserve(c->statefd, run_fd, err);
        if (r == -ENOSPC || r == -EDQUOT)
                return r;
        nsr_error_clear(err);
        if (pj->skel) {
                if (mkdirat(run_fd, "p0/skel", 0755) < 0)
                        return nsr_error_set(err, errno, "cannot create %s", pj->skel);
                _cleanup_close_ int skel = openat(run_fd, "p0/skel", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (skel < 0 || nsr_workspace_skeleton(p, pj->p[0].fd, skel, err) < 0)
                        return skel < 0 ? nsr_error_set(err, errno, "cannot open %s", pj->skel) : -EIO;
        }
        /* The overlay's root takes its mode from the upper dir: give it the
         * project's, or a 0750 project shows as 0755 inside. (The run dir
         * above it is 0700, so a wide mode here exposes nothing.) */
        for (size_t i = 0; i < pj->n && !pj->live; i++) {
                struct stat st;
                char rel[32];
                snprintf(rel, sizeof(rel), "p%zu/upper", i);
                if (fstat(pj->p[i].fd, &st) < 0)
                        return nsr_error_set(err, errno, "%s: cannot stat the project", pj->p[i].path);
                if (fchmodat(run_fd, rel, st.st_mode & 01777, 0) < 0)
                        return nsr_error_set(err, errno, "%s: cannot give the upper dir the project's mode",
                                             pj->p[i].path);
                if (save_root(run_fd, i, &st, err) < 0)
                        return nsr_error_prefix(err, "%s", pj->p[i].path);
        }
        /* Only the caller's own ids are mapped (root maps them all): the
         * files of other owners the caller may write go into upper now. */
        for (size_t i = 0; i < pj->n && !pj->live && geteuid() != 0; i++) {
                char rel[32];
                snprintf(rel, sizeof(rel), "p%zu/upper", i);
                _cleanup_close_ int upper = openat(run_fd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (upper < 0)
                        return nsr_error_set(err, errno, "cannot open %s", rel);
                /* The dirs found clean last time (STATE/projects/KEY). */
                char key[17];
                nsr_project_key(pj->p[i].path, key);
                _cleanup_free_ char *cache = nsr_asprintf("projects/%s/foreign-clean", key);
                if (nsr_foreign_prepare(pj->p[i].fd, upper, run_fd, i, c->statefd, cache, NULL, err) < 0)
                        return nsr_error_prefix(err, "%s", pj->p[i].path);
        }

        for (size_t i = 0; i < pj->n; i++)
                if (save_config(run_fd, i, pj->p[i].config, err) < 0)
                        return nsr_error_prefix(err, "%s: cannot record the configuration files to protect",
                                                pj->p[i].path);

        /* Without its meta a run is invisible to history, undo and gc:
         * nothing may run that could not be recorded. */
        return project_write_meta(pj, run_fd, NSR_OUTCOME_RUNNING, &c->run_start, 0, false, false, err);
}

/* A run dir that could not be made whole goes again: nothing ran, and a
 * half-made one would only hold space (and, without a meta, never be
 * collected). A full state dir says so, with what a run needs. */
int project_create_run(run_ctx *c, nsr_error *err) {
        int r = create_run_dir(c, err);
        if (r >= 0)
                return r;
        c->create_failed = true;
        if (c->run_fd >= 0) {
                c->run_fd = safe_close(c->run_fd);
                nsr_error e2 = { 0 };
                _cleanup_free_ char *rel = nsr_asprintf("runs/%s", c->pj->run_id);
                (void) nsr_rm_rf_at(c->statefd, rel, &e2);
        }
        if (err->code == ENOSPC || err->code == EDQUOT)
                return nsr_state_full_error(c->statefd, c->pj->state_dir, err);
        return r;
}
