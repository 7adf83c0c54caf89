/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include <libmount/libmount.h>

#include "base/dirent.h"
#include "base/durable.h"
#include "base/timing.h"
#include "base/utf8.h"
#include "doctor/checks.h"
#include "egress/relay.h"
#include "project/capture.h"
#include "project/events.h"
#include "project/foreign.h"
#include "project/profile.h"
#include "project/project.h"
#include "project/report.h"
#include "project/snapshot.h"
#include "project/workspace.h"
#include "sandbox/confine.h"
#include "sandbox/launch.h"
#include "seccomp/compile.h"
#include "seccomp/refused.h"
#include "txn/commit.h"

extern char **environ;

typedef struct project_entry {
        char *path; /* realpath */
        int fd;     /* O_PATH|O_DIRECTORY, opened once */
        dev_t dev;
        ino_t ino;
        char *upper, *work; /* host paths of its layers */
        nsr_changeset *changes;
        nsr_protect_result *protected_changes;
        nsr_commit_result commit;
        nsr_outcome outcome;
        char **errors;
        nsr_snapshot *snap;    /* live writes: the project before the run */
        bool protect_enforced; /* nsr_project_protect ran on changes */
        char **config;         /* what the run read as nsrun's configuration: protect patterns */
        char **config_bind;    /* ... the files and dirs of it that exist, read-only inside */
} project_entry;

/* What confines the command. */
typedef enum confinement {
        CONF_NAMESPACES, /* the namespace sandbox (overlay or, with live writes, binds) */
        CONF_LANDLOCK,   /* best-effort mode: Landlock and seccomp, no namespaces */
        CONF_NONE,       /* --sandbox=off */
} confinement;

struct nsr_project {
        nsr_plan *plan;
        char run_id[NSR_RUN_ID_MAX];
        char *state_dir;
        char *run_dir;
        project_entry *p;
        size_t n;
        char **command;
        /* Live writes (--no-overlay, an overlay impossible here, best-effort
         * mode, --sandbox=off): the projects are written in place and
         * captured against snapshots. All projects of a run alike. */
        bool live;
        char **notes;    /* for stderr before the run (the state dir chosen, ...) */
        char **hidden;   /* best-effort mode: what Landlock keeps from the command */
        char **ro, **rw; /* --ro and --rw, expanded */
        char *skel;      /* --workspace-root: the mount-point layer (workspace.h) */
        void (*notify)(const char *line, void *userdata);
        void *notify_data;
        const nsr_launch_session *session; /* a session's daemon (session.h) */
};

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
        free(pj->run_dir);
        free(pj->skel);
        nsr_strv_free(pj->command);
        nsr_strv_free(pj->notes);
        nsr_strv_free(pj->hidden);
        nsr_strv_free(pj->ro);
        nsr_strv_free(pj->rw);
        free(pj);
        return NULL;
}

void nsr_project_set_notify(nsr_project *pj, void (*fn)(const char *line, void *userdata), void *userdata) {
        pj->notify = fn;
        pj->notify_data = userdata;
}

static void note(nsr_project *pj, const char *fmt, ...) _printf_(2, 3);
static void note(nsr_project *pj, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = nsr_vasprintf(fmt, ap);
        va_end(ap);
        if (pj->notify)
                pj->notify(s, pj->notify_data);
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

static bool under(const char *path, const char *dir) {
        size_t l = strlen(dir);
        if (l == 1 && dir[0] == '/')
                return true;
        return strncmp(path, dir, l) == 0 && (path[l] == '/' || path[l] == '\0');
}

static const char *env_get(const char *name) {
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

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
                        if (src && (under(src, pp) || under(pp, src)))
                                return nsr_error_setx(err, EINVAL,
                                                      "%s %s %s would make the project %s writable outside the "
                                                      "transaction (not captured, not undoable); use --ro-bind, or "
                                                      "leave the project out of it",
                                                      op_option(op->type), op->source, op->dest, pp);
                        if (op->dest[0] == '/' && under(pp, op->dest))
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
                        if (under(real, pp) || under(pp, real))
                                return nsr_error_setx(err, EINVAL,
                                                      "--rw %s %s the project %s: writes there would go to the host "
                                                      "outside the transaction (not captured, not undoable)",
                                                      user->proj.rw[i],
                                                      under(real, pp) && !streq(real, pp) ? "is inside" : "covers", pp);
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
                        if (under(pj->p[i].path, pj->p[k].path) || under(pj->p[k].path, pj->p[i].path))
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

/* One path of config_of_project(), real as far as it exists. */
static void config_path(project_entry *e, const char *real, bool policy_dir) {
        if (!under(real, e->path))
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
                        char *both[2] = { real_parent(norm), real_or_planned(norm) };
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
                if (under(pj->state_dir, pj->p[i].path))
                        return nsr_error_setx(err, EINVAL,
                                              "the state dir %s is inside the project %s, where the sandbox could "
                                              "reach it; choose another with --state-dir",
                                              pj->state_dir, pj->p[i].path);
                if (under(pj->p[i].path, pj->state_dir))
                        return nsr_error_setx(err, EINVAL, "the project %s is inside the state dir %s", pj->p[i].path,
                                              pj->state_dir);
        }

        /* The profile hides the state dir, which must exist for that (a
         * trace creates nothing and shows the hiding it can). */
        if (create_state) {
                int fd = nsr_state_open(pj->state_dir, err);
                if (fd < 0)
                        return fd;
                close(fd);
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

int nsr_project_prepare(nsr_plan *user, bool create_state, nsr_project **ret, nsr_error *err) {
        _cleanup_(nsr_project_freep) nsr_project *pj = nsr_malloc0(sizeof(*pj));
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
        _cleanup_strv_free_ char **protect = NULL;
        r = nsr_protect_load_list(ctx.datadir, ctx.home, env_get("XDG_CONFIG_HOME"), &protect, err);
        if (r < 0)
                return r;
        r = expand_paths(o->ro, "--ro", &pj->ro, err);
        if (r >= 0)
                r = expand_paths(o->rw, "--rw", &pj->rw, err);
        if (r < 0)
                return r;
        r = nsr_profile_build(user, &ctx, &pj->plan, err);
        if (r < 0)
                return r;
        pj->plan->timing = user->timing;
        *ret = TAKE_PTR(pj);
        return 0;
}

/* ---- after the command ------------------------------------------------- */

static void msg(nsr_project_outcome *o, const char *fmt, ...) _printf_(2, 3);
static void msg(nsr_project_outcome *o, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        nsr_strv_push(&o->messages, nsr_vasprintf(fmt, ap));
        va_end(ap);
}

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

/* The project root's record before the command (pN/root), which every
 * capture of the run compares the upper dir's mode with. */
static int save_root(int run_fd, size_t i, const struct stat *st, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/root", i);
        return nsr_capture_root_save(run_fd, rel, st, err);
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

/* Is there, near the top of the project, an entry the caller does not
 * own? Copy-up of those fails with EOVERFLOW inside a user namespace.
 * Bounded: called only to explain a failing command. */
static const char *foreign_owner_hint(int dirfd, uid_t uid, char *buf, size_t len) {
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(dirfd, ".", 0, &d) < 0)
                return NULL;
        unsigned n = 0;
        /* Only a hint: what cannot be read gives none. */
        FOREACH_DIRENT(de, d, break) {
                if (n++ >= 10000)
                        break;
                struct stat st;
                /* The files the user may write went into upper before the
                 * command (foreign.c): only the others are a reason. */
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != uid &&
                    faccessat(dirfd, de->d_name, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0) {
                        snprintf(buf, len, "%s (owned by uid %u)", de->d_name, (unsigned) st.st_uid);
                        return buf;
                }
        }
        return NULL;
}

static void layers_of(const nsr_plan *p, confinement conf, bool live, bool landlock, char ***ret) {
        char **v = nsr_malloc0(sizeof(char *));
        switch (conf) {
        case CONF_NONE:
                nsr_strv_extend(&v, "none");
                break;
        case CONF_LANDLOCK:
                if (landlock)
                        nsr_strv_extend(&v, "landlock");
                nsr_strv_extend(&v, "seccomp");
                break;
        case CONF_NAMESPACES:
                if (p->unshare_user)
                        nsr_strv_extend(&v, "userns");
                nsr_strv_extend(&v, "mountns");
                if (p->unshare_pid)
                        nsr_strv_extend(&v, "pidns");
                if (p->unshare_net)
                        nsr_strv_extend(&v, "netns");
                if (p->unshare_ipc)
                        nsr_strv_extend(&v, "ipcns");
                if (p->unshare_uts)
                        nsr_strv_extend(&v, "utsns");
                if (!live)
                        nsr_strv_extend(&v, "overlay");
                if (p->seccomp_policies || p->n_seccomp)
                        nsr_strv_extend(&v, "seccomp");
                if (landlock)
                        nsr_strv_extend(&v, "landlock");
                break;
        }
        *ret = v;
}

/* The run's meta file: what the run was, for history, diff, commit and
 * undo. */
static int write_meta(nsr_project *pj, int run_fd, nsr_outcome state, const struct timespec *start, int wait_status,
                      bool ran, nsr_error *err) {
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
        int r = nsr_run_meta_write(run_fd, &m, err);
        free(paths);
        free(m.counts);
        free(m.ids);
        return r;
}

/* ---- live writes: snapshots, the other launchers ------------------------- */

/* Every live project gets its snapshot (once) at RUN/backup/pN. */
static int take_snapshots(nsr_project *pj, int run_fd, nsr_error *err) {
        const nsr_project_opts *o = &pj->plan->proj;
        if (mkdirat(run_fd, "backup", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the backup dir");
        _cleanup_close_ int bdir = openat(run_fd, "backup", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (bdir < 0)
                return nsr_error_set(err, errno, "cannot open the backup dir");
        for (size_t i = 0; i < pj->n; i++) {
                project_entry *e = &pj->p[i];
                if (e->snap)
                        continue;
                char name[32];
                snprintf(name, sizeof(name), "p%zu", i);
                nsr_snapshot_opts so = { .limit = o->snapshot_limit };
                int r = nsr_snapshot_take(e->fd, bdir, name, &so, &e->snap, err);
                if (r < 0)
                        return nsr_error_prefix(err, "%s", e->path);
        }
        return 0;
}

/* The plan's project overlays become writable binds (live writes). */
static void use_binds(nsr_project *pj) {
        nsr_plan *p = pj->plan;
        for (size_t i = 0; i < p->n_ops; i++) {
                nsr_op *op = &p->ops[i];
                if (op->type != NSR_OP_OVERLAY || !(op->flags & NSR_OPF_VERIFY))
                        continue;
                op->type = NSR_OP_BIND;
                free(op->source);
                op->source = nsr_strdup(op->dest);
                free(op->workdir);
                op->workdir = NULL;
                nsr_strv_free(op->overlay_srcs);
                op->overlay_srcs = NULL;
        }
}

static void switch_to_live(nsr_project *pj) {
        pj->live = true;
        use_binds(pj);
}

/* The seccomp programs: the plan's policies, and in best-effort mode
 * fallback.policy on top (no sockets at all); --sandbox=off: none. The
 * plan's own --seccomp/--add-seccomp-fd programs stay namespace mode's. */
static int compile_filters(const nsr_plan *p, confinement conf, nsr_bpf **ret, size_t *ret_n, nsr_error *err) {
        size_t n_pol = conf == CONF_NONE ? 0 : nsr_strv_length(p->seccomp_policies);
        size_t n = n_pol + (conf == CONF_LANDLOCK ? 1 : 0);
        nsr_bpf *bpf = nsr_malloc0((n + 1) * sizeof(nsr_bpf));
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                /* --allow-host: TCP sockets for the relay, instead of none. */
                if (i == n_pol && !nsr_egress_rules_empty(&p->egress))
                        r = nsr_relay_fallback_bpf(&bpf[i].data, &bpf[i].len, err);
                else
                        r = nsr_seccomp_policy_bpf(i < n_pol ? p->seccomp_policies[i] : "fallback", &bpf[i].data,
                                                   &bpf[i].len, err);
        }
        *ret = bpf;
        *ret_n = n;
        return r;
}

static void free_filters(nsr_bpf *bpf, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(bpf[i].data);
        free(bpf);
}

/* Best-effort mode's Landlock ruleset. Without Landlock nothing would
 * keep the command from the home dir and every other file the user can
 * write: seccomp alone confines no path. So best-effort mode refuses to
 * run then; only --sandbox=off runs without isolation, when asked. */
static int landlock_ruleset(nsr_project *pj, const char *tmpdir, const uint16_t *ports, size_t n_ports, int *ret_fd,
                            bool *ret_tcp, char *why, size_t why_len, nsr_error *err) {
        *ret_fd = -1;
        int abi = nsr_landlock_abi_probe();
        if (abi < 0)
                return nsr_error_set(err, -abi,
                                     "best-effort mode cannot confine the file system here: no user namespace (%s) "
                                     "and no Landlock (landlock_create_ruleset fails); nothing ran. Run \"nsrun "
                                     "doctor\" for details; --sandbox=off runs without any isolation",
                                     why);
        _cleanup_strv_free_ char **paths = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; i < pj->n; i++)
                nsr_strv_extend(&paths, pj->p[i].path);
        _cleanup_strv_free_ char **ttys = NULL;
        (void) nsr_confine_terminals(&ttys);
        nsr_confine_paths cp = {
                .hidden = pj->hidden,
                .projects = paths,
                .rw = pj->rw,
                .ro = pj->ro,
                .tmpdir = tmpdir,
                .terminals = ttys,
        };
        _cleanup_(nsr_confine_rules_done) nsr_landlock_rules rules = { 0 };
        int r = nsr_confine_rules(&cp, &rules, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_ports && i < ELEMENTSOF(rules.connect_ports); i++)
                rules.connect_ports[rules.n_connect_ports++] = ports[i];
        int fd = -1;
        nsr_landlock_info info;
        r = nsr_landlock_build(&rules, &fd, &info, err);
        if (r < 0)
                return r;
        snprintf(why, why_len, "Landlock ABI %d: %zu rules%s%s", info.abi, info.n_rules,
                 info.tcp ? (n_ports ? ", TCP only to nsrun's relay" : ", no TCP") : ", TCP not covered (ABI < 4)",
                 info.scope ? ", scoped" : "");
        *ret_fd = fd;
        *ret_tcp = info.tcp;
        return 0;
}

typedef struct attempt {
        nsr_refused refused; /* what the policy refused (refused.h) */
        confinement conf;
        char reason[NSR_CHECK_TEXT_MAX + 64]; /* why not the namespace sandbox */
        bool landlock;                        /* a Landlock ruleset confines the command */
} attempt;

static void attempt_done(attempt *a) {
        nsr_refused_done(&a->refused);
}

/* Best-effort mode: the private TMPDIR made, and the Landlock ruleset
 * that confines the command (to nsrun's relay alone, with --allow-host). */
static int confine_landlock(nsr_project *pj, int run_fd, attempt *a, const char *tmpdir, const nsr_relay *relay,
                            const uint16_t *relay_ports, int *ruleset, nsr_error *err) {
        int r = 0;

        if (mkdirat(run_fd, "tmp", 0700) < 0 && errno != EEXIST)
                r = nsr_error_set(err, errno, "cannot create the private temp dir %s", tmpdir);
        char info[sizeof(a->reason) + 64];
        snprintf(info, sizeof(info), "%s", a->reason);
        bool tcp = false;
        if (r >= 0)
                r = landlock_ruleset(pj, tmpdir, relay_ports, relay ? 2 : 0, ruleset, &tcp, info, sizeof(info), err);
        if (r >= 0 && relay && !tcp)
                r = nsr_error_setx(err, EPERM,
                                   "--allow-host in best-effort mode needs Landlock ABI 4 or later to confine "
                                   "TCP to nsrun's relay (%s); the run is refused",
                                   info);
        if (r >= 0 && relay)
                note(pj,
                     "nsrun: best-effort --allow-host: the relay is on 127.0.0.1:%u and :%u; Landlock "
                     "limits TCP by port, not address, so those two port numbers reach any host directly",
                     (unsigned) relay_ports[0], (unsigned) relay_ports[1]);
        if (r >= 0) {
                a->landlock = true;
                note(pj, "nsrun: best-effort sandbox: landlock, seccomp (no user namespace: %s)", a->reason);
        }
        return r;
}

/* --events-fd: the watcher that reports the projects' changes as they
 * happen. */
static int start_events(nsr_project *pj, pid_t *watcher, int *watcher_stop, nsr_error *err) {
        nsr_plan *p = pj->plan;
        nsr_events_project *ev = nsr_malloc0((pj->n + 1) * sizeof(nsr_events_project));
        char **snaps = nsr_malloc0((pj->n + 1) * sizeof(char *));
        for (size_t i = 0; i < pj->n; i++) {
                snaps[i] = pj->live ? nsr_asprintf("%s/backup/p%zu", pj->run_dir, i) : NULL;
                ev[i] = (nsr_events_project){ .path = pj->p[i].path,
                                              .upper = pj->live ? pj->p[i].path : pj->p[i].upper,
                                              .lower = snaps[i] };
        }
        int r = nsr_events_start(p->proj.events_fd, ev, pj->n, watcher, watcher_stop, err);
        for (size_t i = 0; i < pj->n; i++)
                free(snaps[i]);
        free(snaps);
        free(ev);
        return r;
}

/* One launch: the command runs, or nothing ran (-errno, err set). */
static int launch_once(nsr_project *pj, int run_fd, attempt *a, const struct timespec *fence, nsr_launch_result *lr,
                       nsr_error *err) {
        nsr_plan *p = pj->plan;
        bool egress = !nsr_egress_rules_empty(&p->egress);
        /* Without isolation the command would have the host's whole
         * network: refuse rather than pretend to filter it. */
        if (a->conf == CONF_NONE && egress)
                return nsr_error_setx(err, EPERM,
                                      "--allow-host needs a sandbox that confines the network; --sandbox=off has "
                                      "none, so the run is refused");
        /* Best-effort mode: the relay listens on the host's loopback and
         * Landlock lets the command connect to it alone (see relay.h). */
        _cleanup_(nsr_relay_freep) nsr_relay *relay = NULL;
        _cleanup_strv_free_ char **relay_env = NULL;
        uint16_t relay_ports[2] = { 0, 0 };
        if (a->conf == CONF_LANDLOCK && egress) {
                if (p->net_log_fd != -1 && fcntl(p->net_log_fd, F_SETFD, FD_CLOEXEC) < 0)
                        return nsr_error_set(err, errno, "--net-log-fd %d", p->net_log_fd);
                int k = nsr_relay_new(&p->egress, p->net_log_fd, &relay, err);
                if (k >= 0)
                        k = nsr_relay_listen_host(relay, &relay_ports[0], &relay_ports[1], err);
                if (k < 0)
                        return k;
                relay_env = nsr_malloc0(sizeof(char *));
                nsr_relay_env_ports(&relay_env, relay_ports[0], relay_ports[1]);
        }
        nsr_bpf *bpf = NULL;
        size_t n_bpf = 0;
        int r = compile_filters(p, a->conf, &bpf, &n_bpf, err);
        nsr_timing_mark_now(p->timing, "seccomp filters (compiled or cached)");
        _cleanup_close_ int ruleset = -1;
        _cleanup_free_ char *tmpdir = NULL;
        if (r >= 0 && a->conf == CONF_LANDLOCK) {
                /* The private TMPDIR, inside the run dir (the state dir is
                 * hidden; this one dir is granted). */
                tmpdir = nsr_asprintf("%s/tmp", pj->run_dir);
                r = confine_landlock(pj, run_fd, a, tmpdir, relay, relay_ports, &ruleset, err);
        } else if (r >= 0 && a->conf == CONF_NONE)
                note(pj, "nsrun: --sandbox=off: no isolation at all; the projects are still snapshotted, captured "
                         "and reported");

        /* --pids is RLIMIT_NPROC in the sandbox's own user namespace;
         * without one it would count every process of the user. */
        if (r >= 0 && a->conf != CONF_NAMESPACES && p->run.pids) {
                if (p->run.pids_explicit)
                        r = nsr_error_setx(err, EOPNOTSUPP,
                                           "--pids needs the namespace sandbox: without a user namespace of its own, "
                                           "RLIMIT_NPROC would count every process of the user");
                p->run.pids = 0;
        }
        pid_t watcher = -1;
        int watcher_stop = -1;
        if (r >= 0 && p->proj.events_fd != -1)
                r = start_events(pj, &watcher, &watcher_stop, err);
        /* A session keeps one overlay mounted for many commands: the
         * other sandboxes have none to keep. */
        if (r >= 0 && pj->session && (a->conf != CONF_NAMESPACES || pj->live))
                r = nsr_error_setx(err, EOPNOTSUPP,
                                   "sessions need the namespace sandbox with an overlay; this host or these options "
                                   "give %s",
                                   a->conf == CONF_NAMESPACES ? "live writes (no overlay)" : "no namespaces");
        /* Everything a session started must end with it: its pid
         * namespace is what takes the background processes down. */
        if (r >= 0 && pj->session && (!p->unshare_pid || p->pidns_fd != -1 || p->as_pid_1))
                r = nsr_error_setx(err, EOPNOTSUPP,
                                   "sessions need a pid namespace of their own (no --pidns "
                                   "or --as-pid-1)");
        if (r >= 0) {
                nsr_refused_done(&a->refused);
                bool record = n_bpf > 0;
#ifdef NSR_TEST_HOOKS
                /* bench/refused.sh: the same run without the record. */
                if (getenv("NSRUN_TEST_NO_REFUSED_RECORD"))
                        record = false;
#endif
                if (record)
                        nsr_refused_init(&a->refused, bpf[0].data, bpf[0].len, p->proj.events_fd);
                if (a->conf == CONF_NAMESPACES) {
                        nsr_launch_extra extra = { .bpf = bpf,
                                                   .n_bpf = n_bpf,
                                                   .kill_leftovers = true,
                                                   .start_fence = *fence,
                                                   .refused = record ? &a->refused : NULL,
                                                   .session = pj->session };
                        nsr_timing_mark_now(p->timing, "landlock, events, listeners ready");
                        r = nsr_launch(p, &extra, lr, err);
                        a->landlock = lr->landlock;
                } else {
                        nsr_confine_opts co = { .plan = p,
                                                .relay = relay,
                                                .extra_env = relay_env,
                                                .landlock_fd = ruleset,
                                                .bpf = bpf,
                                                .n_bpf = n_bpf,
                                                .tmpdir = tmpdir,
                                                .spare = &watcher,
                                                .n_spare = watcher > 0 ? 1 : 0,
                                                .refused = record ? &a->refused : NULL };
                        r = nsr_confine_run(&co, lr, err);
                }
        }
        lr->events_dropped += nsr_events_stop(watcher, watcher_stop);
        free_filters(bpf, n_bpf);
        if (tmpdir) {
                nsr_error e2 = { 0 };
                (void) nsr_rm_rf_at(run_fd, "tmp", &e2);
        }
        return r;
}

/* The home's throwaway overlay failed to mount: nested in a sandbox that
 * hid files in the home with mounts of its own, those mounts are locked
 * children of the home, and overlay refuses such a lower layer (EINVAL,
 * "failed to clone lowerpath"). The home is then bound read-only, with the
 * enclosing sandbox's hiding intact. */
static bool home_overlay_failed(nsr_project *pj, const nsr_error *err) {
        nsr_plan *p = pj->plan;
        /* The launch got this plan: err->op names the op that failed. */
        if (err->kind == NSR_ERR_OVERLAY_MOUNT && err->op >= 1 && err->op <= p->n_ops) {
                nsr_op *op = &p->ops[err->op - 1];
                if (op->type != NSR_OP_TMP_OVERLAY)
                        return false;
                op->type = NSR_OP_RO_BIND;
                free(op->source);
                op->source = nsr_strdup(op->dest);
                nsr_strv_free(op->overlay_srcs);
                op->overlay_srcs = NULL;
                note(pj,
                     "nsrun: the home %s cannot be overlaid here (it holds mounts of the enclosing sandbox): it "
                     "is read-only instead",
                     op->dest);
                return true;
        }
        return false;
}

/* Nothing ran: may another way run it? */
static bool retry_after(nsr_project *pj, attempt *a, const nsr_error *err) {
        const nsr_project_opts *o = &pj->plan->proj;
        if (a->conf != CONF_NAMESPACES)
                return false;
        if ((err->code == EINVAL || err->code == EOPNOTSUPP) && home_overlay_failed(pj, err))
                return true;
        if (!pj->live && !o->keep && !o->workspace_root && err->kind == NSR_ERR_OVERLAY_MOUNT &&
            (err->code == EINVAL || err->code == EOPNOTSUPP)) {
                /* The usual cause: the project already sits on an overlay
                 * (nsrun or a container inside nsrun), and the kernel
                 * stacks overlays only two deep. */
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(err, buf, sizeof(buf));
                note(pj,
                     "nsrun: the overlay cannot be mounted (%s; an overlay stack too deep?): running with "
                     "--no-overlay (writes go to the projects, a snapshot backs them)",
                     buf);
                switch_to_live(pj);
                return true;
        }
        if (o->sandbox == NSR_SANDBOX_BEST_EFFORT && nsr_hostcheck_hint(err)) {
                /* The probe said yes, the real launch says no: same thing. */
                nsr_error_format(err, a->reason, sizeof(a->reason));
                a->conf = CONF_LANDLOCK;
                switch_to_live(pj);
                return true;
        }
        return false;
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
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(lock_err, buf, sizeof(buf));
                nsr_strv_extend(&e->errors, buf);
                msg(o,
                    "nsrun: %s: the changes are in place, but the run could not be recorded for undo: %s; the "
                    "snapshot stays in %s/backup/p%zu",
                    e->path, buf, pj->run_dir, i);
                e->outcome = NSR_OUTCOME_FAILED;
                o->exit_code = NSR_EXIT_FAILURE;
                return;
        }
        if (r >= 0)
                r = nsr_commit_record_live(e->changes, &lo, &e->commit, &ae);
        e->outcome = NSR_OUTCOME_COMMITTED;
        if (r < 0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&ae, buf, sizeof(buf));
                nsr_strv_extend(&e->errors, buf);
                msg(o,
                    "nsrun: %s: the changes are in place, but the run could not be recorded for undo: %s; the "
                    "snapshot stays in %s/backup/p%zu",
                    e->path, buf, pj->run_dir, i);
                o->exit_code = NSR_EXIT_FAILURE;
        }
}

/* Less free than this after the command: it filled the state dir. */
#define STATE_FULL_BELOW (UINT64_C(64) << 10)

static int64_t ns_between(struct timespec a, struct timespec b) {
        return (int64_t) (b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
}

/* The realtime clock stepped back during the run (settimeofday, a VM
 * resumed, NTP stepping) when less realtime than monotonic time passed:
 * a host write after the start can then carry a ctime before run_start.
 * Moving run_start back by the step keeps such writes conflicts; NTP's
 * slewing moves both clocks alike and changes nothing. */
static struct timespec start_after_clock_steps(struct timespec run_start, struct timespec started,
                                               struct timespec ended, struct timespec mono_start,
                                               struct timespec mono_end) {
        int64_t back = ns_between(mono_start, mono_end) - ns_between(started, ended);
        if (back <= 1000000) /* a millisecond of noise between the readings */
                return run_start;
        int64_t t = (int64_t) run_start.tv_sec * 1000000000 + run_start.tv_nsec - back;
        return (struct timespec){ .tv_sec = (time_t) (t / 1000000000), .tv_nsec = (long) (t % 1000000000) };
}

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

/* The refused record for the report, and its stderr line
 * ("nsrun: refused: ptrace x3, mount x1; timeout 90s"), NULL when nothing
 * was refused. */
/* The connections the egress rules refused, one entry per host and port
 * (at most max), into conns; returns how many. */
static size_t refused_connections(const nsr_egress_log *net, nsr_report_refused_conn *conns, size_t max) {
        size_t n = 0;
        for (size_t i = 0; net && i < net->n_records; i++) {
                const nsr_egress_record *r = &net->records[i];
                if (r->allowed)
                        continue;
                size_t k = 0;
                while (k < n && !(conns[k].port == r->port && streq(conns[k].host, r->host)))
                        k++;
                if (k == n) {
                        if (n == max)
                                continue;
                        conns[n++] = (nsr_report_refused_conn){ .host = r->host, .port = r->port, .reason = r->reason };
                }
                conns[k].count++;
        }
        return n;
}

static char *refused_record(const nsr_refused *rf, const nsr_launch_result *lr, const nsr_runctl *rc,
                            nsr_report_refused_call *calls, nsr_report_refused_conn *conns, size_t max_conns,
                            nsr_report_refused *ret) {
        nsr_report_refused_calls(rf, calls);
        *ret = (nsr_report_refused){ .recorded = rf->active,
                                     .calls = calls,
                                     .n_calls = rf->n_entries,
                                     .more = rf->dropped,
                                     .timed_out = lr->timed_out,
                                     .timeout_ms = rc->timeout_ms,
                                     .killed = lr->killed_after,
                                     .limits = lr->limits_hit };
        if (lr->net_on) {
                ret->connections = conns;
                ret->n_connections = refused_connections(&lr->net, conns, max_conns);
        }
        _cleanup_free_ char *line = nsr_refused_summary(rf);
        for (size_t i = 0; i < ret->n_connections; i++) {
                char count[32] = "";
                if (conns[i].count > 1)
                        snprintf(count, sizeof(count), " x%" PRIu64, conns[i].count);
                nsr_strappendf(&line, "%sconnect %s:%d%s", line ? (i ? ", " : "; ") : "", conns[i].host, conns[i].port,
                               count);
        }
        for (size_t i = 0; lr->limits_hit && lr->limits_hit[i]; i++)
                nsr_strappendf(&line, "%s%s", line ? "; " : "", lr->limits_hit[i]);
        if (lr->timed_out) {
                char d[32];
                nsr_strappendf(&line, "%stimeout %s%s", line ? "; " : "",
                               nsr_format_duration(rc->timeout_ms, d, sizeof(d)),
                               lr->killed_after ? " (SIGKILL after --kill-after)" : "");
        }
        return line ? nsr_asprintf("nsrun: refused: %s", line) : NULL;
}

/* ---- a run, step by step ------------------------------------------------------------ */

/* What nsr_project_run carries from one step to the next. */
typedef struct run_ctx {
        nsr_project *pj;
        int statefd;          /* the state dir */
        int run_fd;           /* the run's dir, runs/ID */
        attempt a;            /* what confines the command */
        nsr_launch_result lr; /* how the command ended */
        /* The wall clock when the launch began and when it ended, and the
         * fence conflicts compare host ctimes with (launch). */
        struct timespec started, run_start, ended, mono_start;
        bool capture_failed;   /* a project's changes could not be captured */
        bool interrupted;      /* nsrun was interrupted (a forwarded signal) */
        bool timed_out;        /* --timeout stopped the command */
        bool apply_failed;     /* an apply failed and was rolled back (overlay runs) */
        bool state_full;       /* the state dir filled up while the command ran */
        bool kept_failed;      /* kept because the capture or the apply failed (record) */
        nsr_error failure;     /* the report's "error": the first apply failure, or kind NONE */
        nsr_project_outcome o; /* for the caller */
} run_ctx;

static void run_ctx_done(run_ctx *c) {
        nsr_strv_free(c->lr.limits_hit);
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

/* What will confine the command. Best-effort mode asks first whether the
 * namespace sandbox can be built (a probe in a child, about a
 * millisecond); required mode just tries it. */
static int choose_confinement(run_ctx *c, nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        attempt *a = &c->a;

        a->conf = CONF_NAMESPACES;
        if (p->proj.sandbox == NSR_SANDBOX_OFF)
                a->conf = CONF_NONE;
        else if (p->proj.sandbox == NSR_SANDBOX_BEST_EFFORT &&
                 !nsr_hostcheck_userns_works(a->reason, sizeof(a->reason)))
                a->conf = CONF_LANDLOCK;
        if (a->conf != CONF_NAMESPACES && !pj->live)
                switch_to_live(pj);
        /* A session keeps its own overlay (its --keep is implied): say
         * why it cannot have one here, and what works instead. */
        if (pj->session && a->conf == CONF_NAMESPACES && pj->live)
                return nsr_error_setxk(err, NSR_ERR_USAGE, EOPNOTSUPP,
                                       "sessions need the overlay, which --no-overlay turns off: start the session "
                                       "without it");
        if (pj->session && a->conf != CONF_NAMESPACES)
                return nsr_error_setxk(
                        err, a->conf == CONF_LANDLOCK ? NSR_ERR_CLONE : NSR_ERR_USAGE, EOPNOTSUPP,
                        "sessions need the namespace sandbox with an overlay, and here %s%s%s; run each command "
                        "as a one-shot run instead (nsrun --sandbox=best-effort -p DIR -- COMMAND), whose writes go "
                        "live with a snapshot to undo them",
                        a->conf == CONF_LANDLOCK ? "user namespaces are refused" : "--sandbox=off was asked for",
                        a->conf == CONF_LANDLOCK && a->reason[0] ? ": " : "",
                        a->conf == CONF_LANDLOCK ? a->reason : "");
        if (pj->live && p->proj.keep)
                return nsr_error_setx(err, EINVAL,
                                      "--keep needs the overlay, and here the command would write to the projects "
                                      "themselves (%s)",
                                      a->conf == CONF_LANDLOCK ? "best-effort mode without user namespaces"
                                                               : "--no-overlay");
        return 0;
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
        int r = nsr_run_reserve(run_fd, err);
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
        return write_meta(pj, run_fd, NSR_OUTCOME_RUNNING, &c->run_start, 0, false, err);
}

/* A run dir that could not be made whole goes again: nothing ran, and a
 * half-made one would only hold space (and, without a meta, never be
 * collected). A full state dir says so, with what a run needs. */
static int create_run(run_ctx *c, nsr_error *err) {
        int r = create_run_dir(c, err);
        if (r >= 0)
                return r;
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

/* The command runs (another way if the first could not start it).
 * -errno if nothing ran. */
static int launch(run_ctx *c, nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        int run_fd = c->run_fd;
        int r;

        /* nsrun's own fds never reach the sandbox: a command that could
         * write to the report or the event stream could forge them. */
        if (p->proj.report_fd != -1)
                (void) fcntl(p->proj.report_fd, F_SETFD, FD_CLOEXEC);
        if (p->proj.events_fd != -1)
                (void) fcntl(p->proj.events_fd, F_SETFD, FD_CLOEXEC);

        nsr_launch_result lr = { .exit_code = NSR_EXIT_FAILURE };
        for (int tries = 0;; tries++) {
                /* Live writes: the snapshots first, before anything runs
                 * (a project over --snapshot-limit is refused here). */
                r = pj->live ? take_snapshots(pj, run_fd, err) : 0;
                if (r >= 0) {
                        nsr_strv_free(lr.limits_hit);
                        lr = (nsr_launch_result){ .exit_code = NSR_EXIT_FAILURE };
                        r = launch_once(pj, run_fd, &c->a, &c->run_start, &lr, err);
                }
                if (r >= 0 || tries >= 3 || !retry_after(pj, &c->a, err))
                        break;
                nsr_error_clear(err);
        }
        c->lr = lr; /* owned by c */
        if (p->proj.events_fd != -1)
                p->proj.events_fd = safe_close(p->proj.events_fd);
        struct timespec mono_end;
        clock_gettime(CLOCK_REALTIME, &c->ended);
        clock_gettime(CLOCK_MONOTONIC, &mono_end);
        c->run_start = start_after_clock_steps(c->run_start, c->started, c->ended, c->mono_start, mono_end);
        return r;
}

/* Nothing ran: nothing to capture. The command could not be executed
 * (126/127), or nsrun failed (125). The run dir goes. */
static void launch_failed(run_ctx *c, const nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        struct timespec started = c->started, ended = c->ended;

        if (err->kind == NSR_ERR_EXEC)
                o->exit_code = err->code == ENOENT ? NSR_EXIT_NOT_FOUND : NSR_EXIT_NOT_EXECUTABLE;
        o->error_kind = err->kind == NSR_ERR_NONE ? NSR_ERR_SETUP : err->kind;
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(err, buf, sizeof(buf));
        /* Project mode is never bwrap mode: a failure doctor can
         * explain points to it, as in main.c, and to best-effort
         * mode, which needs no user namespace. */
        const char *hint = nsr_hostcheck_hint(err);
        _cleanup_free_ char *full_hint =
                hint ? nsr_asprintf("%s%s", hint,
                                    c->a.conf == CONF_NAMESPACES && p->proj.sandbox == NSR_SANDBOX_REQUIRED
                                            ? "; --sandbox=best-effort runs without user namespaces (Landlock and "
                                              "seccomp)"
                                            : "")
                     : NULL;
        msg(o, "nsrun: %s%s%s", buf, full_hint ? "; " : "", full_hint ? full_hint : "");
        /* A tool reading --report gets the error too, not only
         * stderr: every project "failed", with the message. */
        char *errs[2] = { buf, NULL };
        nsr_report_project *rp = nsr_malloc0((pj->n + 1) * sizeof(nsr_report_project));
        for (size_t i = 0; i < pj->n; i++)
                rp[i] = (nsr_report_project){ .path = pj->p[i].path, .outcome = NSR_OUTCOME_FAILED, .errors = errs };
        nsr_report rep = {
                .run_id = pj->run_id,
                .command = pj->command,
                .exit_code = -1,
                .outcome = NSR_OUTCOME_FAILED,
                .started_at = started,
                .duration_ms = (uint64_t) ((ended.tv_sec - started.tv_sec) * 1000 +
                                           (ended.tv_nsec - started.tv_nsec) / 1000000),
                .projects = rp,
                .n_projects = pj->n,
                .error = err,
                .error_hint = full_hint,
        };
        size_t len = 0;
        nsr_error je = { 0 };
        (void) nsr_report_to_json(&rep, 0, &o->report_json, &len, &je);
        free(rp);
        nsr_error e2 = { 0 };
        _cleanup_free_ char *rel = nsr_asprintf("runs/%s", pj->run_id);
        (void) nsr_rm_rf_at(c->statefd, rel, &e2);
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
static void record(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_project_outcome *o = &c->o;
        int run_fd = c->run_fd;
        bool trashed = false;

        for (size_t i = 0; i < pj->n; i++) {
                char rel[32];
                nsr_error ce = { 0 };
                snprintf(rel, sizeof(rel), "p%zu/work", i);
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
                        /* An upper dir holding the copies of files of
                         * other owners (foreign.c) can be large: it goes
                         * off the run's path, removed in the background. */
                        char trash[48], rec[48];
                        snprintf(trash, sizeof(trash), "trash/p%zu-upper", i);
                        snprintf(rec, sizeof(rec), "p%zu/foreign", i);
                        if (faccessat(run_fd, rec, F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
                            (mkdirat(run_fd, "trash", 0700) == 0 || errno == EEXIST) &&
                            renameat(run_fd, rel, run_fd, trash) == 0)
                                trashed = true;
                        else
                                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                }
                if (pj->live && pj->p[i].outcome == NSR_OUTCOME_DISCARDED) {
                        char trash[32];
                        snprintf(rel, sizeof(rel), "backup/p%zu", i);
                        snprintf(trash, sizeof(trash), "trash/p%zu", i);
                        if (mkdirat(run_fd, "trash", 0700) < 0 && errno != EEXIST)
                                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                        else if (renameat(run_fd, rel, run_fd, trash) < 0)
                                (void) nsr_rm_rf_at(run_fd, rel, &ce);
                }
        }
        /* What is left of the snapshots goes off the run's path. */
        if (pj->live || trashed)
                nsr_state_trash_background(pj->run_dir);
        /* A run whose capture or apply failed was applied nowhere (an
         * apply rolls back): it is kept, so that once the cause is fixed
         * "nsrun commit RUN" can finish it. */
        bool kept_failed = (c->capture_failed || c->apply_failed) && !pj->live;
        c->kept_failed = kept_failed;
        nsr_error me = { 0 };
        if (write_meta(pj, run_fd, kept_failed ? NSR_OUTCOME_KEPT : run_outcome, &c->run_start, c->lr.wait_status, true,
                       &me) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&me, buf, sizeof(buf));
                msg(o,
                    "nsrun: the run's outcome (%s) could not be recorded: %s; history, undo and gc see run %s "
                    "as unfinished",
                    nsr_outcome_to_string(run_outcome), buf, pj->run_id);
                o->exit_code = NSR_EXIT_FAILURE;
        }
}

/* One project's summary line, and what stopped its changes: protected
 * paths, conflicts, split hard links. */
static void explain_project(nsr_project *pj, size_t i, nsr_project_outcome *o) {
        nsr_plan *p = pj->plan;
        project_entry *e = &pj->p[i];

        if (e->changes) {
                /* The counts are what the command changed; with a
                 * conflict, the outcome says how much of it applied. */
                _cleanup_free_ char *outcome = e->outcome == NSR_OUTCOME_CONFLICT
                                                       ? nsr_asprintf("conflict, %zu of %zu applied", e->commit.applied,
                                                                      nsr_changeset_size(e->changes))
                                                       : nsr_strdup(nsr_outcome_to_string(e->outcome));
                _cleanup_free_ char *line = nsr_report_summary(e->path, e->changes, outcome, pj->run_id);
                nsr_strv_extend(&o->summary, line);
        }
        _cleanup_free_ char *prot = nsr_protect_summary(e->protected_changes, pj->live);
        if (prot)
                msg(o, "nsrun: %s: %s", e->path, prot);
        /* One line per conflict, not per entry it held back (a git
         * dir holds back its objects, a dir its children). */
        size_t n_held = 0;
        for (size_t k = 0; k < e->commit.n_conflicts; k++)
                n_held += e->commit.conflicts[k].held;
        for (size_t k = 0; e->commit.units && e->commit.units[k]; k++) {
                _cleanup_free_ char *shown = nsr_utf8_escape(e->commit.units[k]);
                msg(o,
                    "nsrun: %s: conflict in the git dir %s: none of its changes %s, so that its index, "
                    "refs and logs stay in step",
                    e->path, shown, e->commit.withheld ? "can apply" : "were applied");
        }
        for (size_t k = 0; k < e->commit.n_conflicts; k++) {
                const nsr_commit_conflict *cf = &e->commit.conflicts[k];
                _cleanup_free_ char *shown = nsr_utf8_escape(cf->path);
                _cleanup_free_ char *kept = cf->kept_at ? nsr_utf8_escape(cf->kept_at) : NULL;
                if (cf->held)
                        continue;
                if (e->commit.withheld)
                        msg(o, "nsrun: %s: conflict: %s %s", e->path, shown, cf->reason);
                else if (p->proj.on_conflict == NSR_CONFLICT_PREFER_HOST)
                        msg(o, "nsrun: %s: settled for the host: %s %s; the host's version stays%s%s", e->path, shown,
                            cf->reason, kept ? ", the sandbox's is kept at " : "", kept ? kept : "");
                else if (cf->kept_at)
                        msg(o, "nsrun: %s: conflict: %s %s; the sandbox's version is kept at %s", e->path, shown,
                            cf->reason, kept);
                else
                        msg(o, "nsrun: %s: conflict: %s %s; left as the host has it", e->path, shown, cf->reason);
        }
        for (size_t k = 0; e->commit.overruled && e->commit.overruled[k] && e->commit.overruled[k + 1]; k += 2) {
                _cleanup_free_ char *shown = nsr_utf8_escape(e->commit.overruled[k]);
                msg(o,
                    "nsrun: %s: settled for the sandbox: %s %s; the sandbox's version replaced it, the host's is "
                    "backed up (nsrun undo %s)",
                    e->path, shown, e->commit.overruled[k + 1], pj->run_id);
        }
        if (n_held > 0 && !e->commit.withheld)
                msg(o,
                    "nsrun: %s: %zu more change%s held back with %s; the sandbox's versions are in "
                    "%s/conflict/p%zu",
                    e->path, n_held, n_held == 1 ? " was" : "s were",
                    n_held == 1 ? "its git dir or parent dir" : "their git dirs or parent dirs", pj->run_dir, i);
        for (size_t k = 0; !e->commit.withheld && e->commit.split_links && e->commit.split_links[k]; k++) {
                _cleanup_free_ char *shown = nsr_utf8_escape(e->commit.split_links[k]);
                msg(o,
                    "nsrun: %s: note: %s had other hard links on the host; the new version replaced this "
                    "name only, and the other names keep the old content (as they did inside the sandbox)",
                    e->path, shown);
        }
        if (e->commit.withheld)
                msg(o, "nsrun: %s: nothing applied (--on-conflict=%s)", e->path,
                    nsr_conflict_mode_to_string(p->proj.on_conflict));
}

/* Explanations: the summary lines and notes on stderr, and with --verbose
 * the listing. */
static void explain(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        const nsr_launch_result *lr = &c->lr;

        if (lr->exit_code != 0 && getuid() != 0 && !pj->live) {
                for (size_t i = 0; i < pj->n; i++) {
                        char hint[NAME_MAX + 64];
                        const char *h = foreign_owner_hint(pj->p[i].fd, getuid(), hint, sizeof(hint));
                        if (h)
                                msg(o,
                                    "nsrun: %s: note: %s and maybe more are not yours, and you may not write them; the "
                                    "sandbox cannot move, rename or change them (copy-up fails with EOVERFLOW, "
                                    "\"Value too large for defined data type\")",
                                    pj->p[i].path, h);
                }
        }
        for (size_t i = 0; i < pj->n; i++)
                explain_project(pj, i, o);
        if (lr->net_on)
                nsr_strv_push(&o->summary, nsr_egress_summary(&lr->net));
        if (c->kept_failed)
                msg(o,
                    "nsrun: run %s kept: the %s failed and %s was applied; the command's files are in "
                    "%s/pN/upper; once the cause is fixed, \"nsrun diff %s\", then \"nsrun commit %s\" or \"nsrun "
                    "discard %s\"",
                    pj->run_id, c->capture_failed ? "capture" : "apply",
                    c->capture_failed ? "nothing" : "nothing of what failed", pj->run_dir, pj->run_id, pj->run_id,
                    pj->run_id);
        else if (c->state_full && run_outcome == NSR_OUTCOME_KEPT) {
                char rel[32];
                uint64_t used = 0;
                for (size_t i = 0; i < pj->n; i++) {
                        snprintf(rel, sizeof(rel), "p%zu/upper", i);
                        used += nsr_state_tree_size(c->run_fd, rel);
                }
                msg(o,
                    "nsrun: the state dir %s filled up while the command ran: its writes that did not fit failed "
                    "(ENOSPC, \"No space left on device\"), and the run holds %llu KiB there; run %s kept, nothing "
                    "applied; free space there (a run needs at least %llu KiB free to start, plus room for what the "
                    "command writes), then \"nsrun diff %s\", \"nsrun commit %s\" or \"nsrun discard %s\"",
                    pj->state_dir, (unsigned long long) (used >> 10), pj->run_id,
                    (unsigned long long) (NSR_STATE_MIN_FREE >> 10), pj->run_id, pj->run_id, pj->run_id);
        } else if (c->state_full && !pj->live)
                msg(o,
                    "nsrun: the state dir %s filled up while the command ran: its writes that did not fit failed "
                    "(ENOSPC, \"No space left on device\"); a run needs at least %llu KiB free there to start, plus "
                    "room for what the command writes",
                    pj->state_dir, (unsigned long long) (NSR_STATE_MIN_FREE >> 10));
        else if (run_outcome == NSR_OUTCOME_KEPT)
                msg(o,
                    "nsrun: run %s kept%s: review it with \"nsrun diff %s\", then \"nsrun commit %s\" or \"nsrun "
                    "discard %s\"",
                    pj->run_id,
                    c->interrupted ? " (nsrun was interrupted)"
                    : c->timed_out ? " (the command timed out)"
                                   : "",
                    pj->run_id, pj->run_id, pj->run_id);
        if (p->proj.verbose) {
                char *all = nsr_strdup("");
                for (size_t i = 0; i < pj->n; i++) {
                        if (!pj->p[i].changes)
                                continue;
                        _cleanup_free_ char *l = nsr_report_listing(pj->p[i].changes);
                        char *n = nsr_asprintf("%s%s", all, l);
                        free(all);
                        all = n;
                }
                o->listing = all;
        }
}

/* What was refused (one line, and the report's "refused"), and the JSON
 * report, kept in the run dir. */
static void report(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        nsr_launch_result *lr = &c->lr;
        struct timespec started = c->started, ended = c->ended;
        int ws = lr->wait_status;

        nsr_report_refused_call calls[NSR_REFUSED_MAX_ENTRIES];
        nsr_report_refused_conn conns[64];
        nsr_report_refused refused;
        _cleanup_free_ char *refused_line =
                refused_record(&c->a.refused, lr, &p->run, calls, conns, ELEMENTSOF(conns), &refused);
        if (refused_line)
                nsr_strv_extend(&o->summary, refused_line);

        /* The report. */
        _cleanup_strv_free_ char **layers = NULL;
        layers_of(p, c->a.conf, pj->live, c->a.landlock, &layers);
        nsr_report_project *rp = nsr_malloc0((pj->n + 1) * sizeof(nsr_report_project));
        nsr_report_conflict **rc = nsr_malloc0((pj->n + 1) * sizeof(nsr_report_conflict *));
        for (size_t i = 0; i < pj->n; i++) {
                project_entry *e = &pj->p[i];
                rc[i] = nsr_malloc0((e->commit.n_conflicts + 1) * sizeof(nsr_report_conflict));
                for (size_t k = 0; k < e->commit.n_conflicts; k++)
                        rc[i][k] = (nsr_report_conflict){ .path = e->commit.conflicts[k].path,
                                                          .reason = e->commit.conflicts[k].reason,
                                                          .kept_at = e->commit.conflicts[k].kept_at };
                rp[i] = (nsr_report_project){ .path = e->path,
                                              .outcome = e->outcome,
                                              .changes = e->changes,
                                              .protect = e->protected_changes,
                                              .conflicts = rc[i],
                                              .n_conflicts = e->commit.n_conflicts,
                                              .errors = e->errors,
                                              .split_links = e->commit.split_links,
                                              .held_units = e->commit.units,
                                              .overruled = e->commit.overruled,
                                              .settled_for_host = p->proj.on_conflict == NSR_CONFLICT_PREFER_HOST };
        }
        nsr_report rep = {
                .run_id = pj->run_id,
                .command = pj->command,
                .exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
                .signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0,
                .outcome = run_outcome,
                .started_at = started,
                .duration_ms = (uint64_t) ((ended.tv_sec - started.tv_sec) * 1000 +
                                           (ended.tv_nsec - started.tv_nsec) / 1000000),
                .layers = layers,
                .interrupted = c->interrupted,
                .timed_out = c->timed_out,
                .refused = &refused,
                .projects = rp,
                .n_projects = pj->n,
                .network = lr->net_on ? &lr->net : NULL,
                .events_dropped = lr->events_dropped,
                .error = c->failure.kind != NSR_ERR_NONE ? &c->failure : NULL,
        };
        o->error_kind = c->failure.kind;
        size_t len = 0;
        nsr_error je = { 0 };
        if (nsr_report_to_json(&rep, 0, &o->report_json, &len, &je) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&je, buf, sizeof(buf));
                msg(o, "nsrun: cannot build the report: %s", buf);
        } else if (nsr_durable_write(c->run_fd, "report.json", o->report_json, strlen(o->report_json), 0600, 0, &je) <
                   0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&je, buf, sizeof(buf));
                msg(o, "nsrun: the run's report was not kept: %s", buf);
        }
        for (size_t i = 0; i < pj->n; i++)
                free(rc[i]);
        free(rc);
        free(rp);
        nsr_egress_log_free(&lr->net);
}

/* A run: recover what an interrupted apply left, choose the confinement,
 * create the run dir, launch, capture, apply, record, explain, report. */
int nsr_project_run(nsr_project *pj, nsr_project_outcome *out, nsr_error *err) {
        nsr_plan *p = pj->plan;
        _cleanup_(run_ctx_done) run_ctx c = {
                .pj = pj,
                .statefd = -1,
                .run_fd = -1,
                .lr = { .exit_code = NSR_EXIT_FAILURE },
                .o = { .exit_code = NSR_EXIT_FAILURE },
        };
        int r;

        for (size_t i = 0; pj->notes && pj->notes[i]; i++)
                note(pj, "nsrun: %s", pj->notes[i]);
        c.statefd = nsr_state_open(pj->state_dir, err);
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
                r = choose_confinement(&c, err);
        nsr_timing_mark_now(t, "confinement chosen");
        if (r >= 0)
                r = create_run(&c, err);
        nsr_timing_mark_now(t, "run dir and record");
        if (r < 0)
                return r;
        r = launch(&c, err);
        nsr_timing_mark_now(t, "monitor: command ended, sandbox gone");
        if (r < 0) {
                launch_failed(&c, err);
                *out = c.o;
                return 0;
        }
        /* Nothing of the sandbox runs any more: what the command could
         * not write, the records can, from the reserve. */
        c.state_full = nsr_state_free(c.statefd) < STATE_FULL_BELOW;
        if (c.state_full)
                (void) nsr_state_full_error(c.statefd, pj->state_dir, &c.failure);
        nsr_run_release(c.run_fd);
        capture(&c);
        nsr_timing_mark_now(t, "capture");
        nsr_outcome run_outcome = apply(&c, intended_outcome(&c));
        nsr_timing_mark_now(t, "apply");
        record(&c, run_outcome);
        nsr_timing_mark_now(t, "record");
        explain(&c, run_outcome);
        report(&c, run_outcome);
        nsr_timing_mark_now(t, "report");

        /* Retention runs in a detached process, never on this run's path. */
        nsr_state_gc_background(pj->state_dir, p->proj.keep_days < 0 ? 7 : p->proj.keep_days,
                                p->proj.backup_limit ? p->proj.backup_limit : NSR_BACKUP_LIMIT_DEFAULT);
        *out = c.o;
        return 0;
}
