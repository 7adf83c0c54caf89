/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The project before the run, read for the protection rules: its git dirs,
 * the hooks dirs their configs name, and protect.list. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "project/profile.h"
#include "project/protect-internal.h"
#include "txn/txnfs.h"

#define MAX_HOOKS 256

/* ---- the project before the run ------------------------------------------------------ */

/* The type of path below fd (never following a symlink), or -1. */
static int type_at(int fd, const char *path) {
        if (fd < 0)
                return -1;
        if (!*path)
                return NSR_ENTRY_DIR;
        const char *leaf = NULL;
        _cleanup_close_ int p = nsr_txnfs_open_parent(fd, path, &leaf);
        struct stat st;
        if (p < 0 || fstatat(p, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -1;
        return nsr_entry_type_from_mode(st.st_mode);
}

/* The type of path after the run: the change set says, else as before. */
static int type_after(const nsr_changeset *cs, int before_fd, const char *path) {
        const nsr_change *c = nsr_changeset_lookup(cs, path);
        if (c)
                return c->kind == NSR_CHANGE_DELETED ? -1 : (int) c->type;
        return type_at(before_fd, path);
}

int protect_read_at(int fd, const char *path, char **ret, size_t *ret_len) {
        _cleanup_close_ int f = nsr_txnfs_open(fd, path, O_RDONLY);
        if (f < 0)
                return f;
        struct stat st;
        if (fstat(f, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        return nsr_read_all(f, CONFIG_MAX, ret, ret_len);
}

static char *child(const char *dir, const char *name) {
        return *dir ? nsr_asprintf("%s/%s", dir, name) : nsr_strdup(name);
}

/* Is dir a git dir, before the run (after false) or after it? As git
 * sees one: a dir named .git, or one with HEAD and objects, refs or
 * commondir (a linked worktree's). */
static bool gitdir_in(const nsr_changeset *cs, int before_fd, const char *dir, bool after) {
        const char *base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        int t = after ? type_after(cs, before_fd, dir) : type_at(before_fd, dir);
        if (t != NSR_ENTRY_DIR)
                return false;
        if (streq(base, ".git"))
                return true;
        _cleanup_free_ char *head = child(dir, "HEAD");
        if ((after ? type_after(cs, before_fd, head) : type_at(before_fd, head)) < 0)
                return false;
        static const char *const marks[] = { "objects", "refs", "commondir" };
        for (size_t i = 0; i < ELEMENTSOF(marks); i++) {
                _cleanup_free_ char *m = child(dir, marks[i]);
                if ((after ? type_after(cs, before_fd, m) : type_at(before_fd, m)) >= 0)
                        return true;
        }
        return false;
}

static void consider_one(nsr_protect_rules *r, const nsr_changeset *cs, int before_fd, const char *dir) {
        for (size_t i = r->n_gitdirs; i > 0; i--)
                if (streq(r->gitdirs[i - 1].path, dir))
                        return;
        bool before = gitdir_in(cs, before_fd, dir, false);
        if (!before && !gitdir_in(cs, before_fd, dir, true))
                return;
        r->gitdirs = nsr_realloc_array(r->gitdirs, r->n_gitdirs + 1, sizeof(*r->gitdirs));
        r->gitdirs[r->n_gitdirs++] = (nsr_protect_gitdir){ .path = nsr_strdup(dir), .is_new = !before };
}

/* dir, and the .git in it: a repository whose work tree holds a change
 * has a config that may name a core.hooksPath. */
static void consider_dir(nsr_protect_rules *r, const nsr_changeset *cs, int before_fd, const char *dir) {
        consider_one(r, cs, before_fd, dir);
        const char *base = strrchr(dir, '/');
        if (streq(base ? base + 1 : dir, ".git"))
                return;
        _cleanup_free_ char *git = child(dir, ".git");
        consider_one(r, cs, before_fd, git);
}

/* Every dir that holds a change, or is one, checked once: the set is
 * sorted so that a dir comes right before its subtree. */
void protect_find_gitdirs(nsr_protect_rules *r, const nsr_changeset *cs, int before_fd) {
        char **stack = nsr_malloc0(sizeof(char *));
        size_t depth = 0;
        consider_dir(r, cs, before_fd, "");
        for (size_t i = 0; i < cs->n_changes; i++) {
                const nsr_change *c = &cs->changes[i];
                if (nsr_changeset_path_is_root(c->path))
                        continue; /* the root ("") is considered above */
                while (depth > 0 && !nsr_path_under(c->path, stack[depth - 1])) {
                        free(stack[--depth]);
                        stack[depth] = NULL;
                }
                const char *s = c->path + (depth > 0 ? strlen(stack[depth - 1]) + 1 : 0);
                for (;;) {
                        const char *e = strchr(s, '/');
                        bool last = !e;
                        if (last && c->type != NSR_ENTRY_DIR && !(c->old.exists && c->old.type == NSR_ENTRY_DIR))
                                break;
                        size_t l = last ? strlen(c->path) : (size_t) (e - c->path);
                        char *dir = nsr_strndup(c->path, l);
                        consider_dir(r, cs, before_fd, dir);
                        stack = nsr_realloc_array(stack, depth + 2, sizeof(char *));
                        stack[depth++] = dir;
                        stack[depth] = NULL;
                        if (last)
                                break;
                        s = e + 1;
                }
        }
        nsr_strv_free(stack);
}

/* path, lexically normalised (".." pops), when it lies in the project:
 * relative to it; else NULL. */
static char *project_relative(const char *project, const char *path) {
        /* A relative value counts from the root, as it always did. */
        _cleanup_free_ char *a = path[0] == '/' ? nsr_strdup(path) : nsr_asprintf("/%s", path);
        _cleanup_free_ char *out = nsr_path_normalize_dotdot(a);
        if (streq(project, "/") || !nsr_path_under(out, project))
                return NULL;
        return nsr_strdup(out[strlen(project)] == '/' ? out + strlen(project) + 1 : "");
}

/* A core.hooksPath value, as git resolves it for a repository whose work
 * tree (or, bare, git dir) is worktree (project-relative). */
static void add_hooks_path(nsr_protect_rules *r, const nsr_protect_ctx *ctx, const char *worktree_abs,
                           const char *value) {
        _cleanup_free_ char *abs = NULL;
        if (nsr_startswith(value, "~/")) {
                if (!ctx->home)
                        return;
                abs = nsr_asprintf("%s/%s", ctx->home, value + 2);
        } else if (value[0] == '/')
                abs = nsr_strdup(value);
        else
                abs = nsr_asprintf("%s/%s", worktree_abs, value);
        char *rel = project_relative(ctx->project_path, abs);
        if (!rel)
                return;
        if (nsr_strv_length(r->hooks) >= MAX_HOOKS || nsr_strv_contains(r->hooks, rel)) {
                free(rel);
                return;
        }
        nsr_strv_push(&r->hooks, rel);
}

static char *hooks_path_of_file(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (nsr_read_all(fd, CONFIG_MAX, &buf, &len) < 0)
                return NULL;
        return nsr_protect_git_config_hooks_path(buf, len);
}

void protect_find_hooks(nsr_protect_rules *r, const nsr_protect_ctx *ctx) {
        /* The host's global and system config apply to every repository,
         * new ones too. */
        char **global = nsr_malloc0(sizeof(char *));
        _cleanup_free_ char *xdg = ctx->xdg_config && ctx->xdg_config[0] == '/'
                                           ? nsr_asprintf("%s/git/config", ctx->xdg_config)
                                   : ctx->home ? nsr_asprintf("%s/.config/git/config", ctx->home)
                                               : NULL;
        _cleanup_free_ char *dot = ctx->home ? nsr_asprintf("%s/.gitconfig", ctx->home) : NULL;
        const char *files[] = { "/etc/gitconfig", xdg, dot };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char *v = files[i] ? hooks_path_of_file(files[i]) : NULL;
                if (v)
                        nsr_strv_push(&global, v);
        }
        for (size_t i = 0; i < r->n_gitdirs; i++) {
                const nsr_protect_gitdir *g = &r->gitdirs[i];
                const char *base = strrchr(g->path, '/');
                base = base ? base + 1 : g->path;
                _cleanup_free_ char *gabs =
                        *g->path ? nsr_asprintf("%s/%s", ctx->project_path, g->path) : nsr_strdup(ctx->project_path);
                _cleanup_free_ char *wt = nsr_strdup(gabs);
                if (streq(base, ".git"))
                        *strrchr(wt, '/') = '\0';
                for (size_t k = 0; global[k]; k++)
                        add_hooks_path(r, ctx, wt, global[k]);
                if (g->is_new)
                        continue; /* its own config never reaches the host */
                _cleanup_free_ char *cfg = child(g->path, "config");
                _cleanup_free_ char *buf = NULL;
                size_t len = 0;
                if (protect_read_at(ctx->before_fd, cfg, &buf, &len) < 0)
                        continue;
                _cleanup_free_ char *v = nsr_protect_git_config_hooks_path(buf, len);
                if (v)
                        add_hooks_path(r, ctx, wt, v);
        }
        /* The repositories the project lies in (its git dir outside). */
        _cleanup_free_ char *up = nsr_strdup(ctx->project_path);
        for (unsigned n = 0; n < 64; n++) {
                char *slash = strrchr(up, '/');
                if (!slash || slash == up)
                        break;
                *slash = '\0';
                _cleanup_free_ char *cfg = nsr_asprintf("%s/.git/config", up);
                _cleanup_free_ char *v = hooks_path_of_file(cfg);
                if (v)
                        add_hooks_path(r, ctx, up, v);
                for (size_t k = 0; global[k] && access(cfg, F_OK) == 0; k++)
                        add_hooks_path(r, ctx, up, global[k]);
        }
        nsr_strv_free(global);
}

int nsr_protect_load_list(const char *datadir, const char *home, const char *xdg_config, char ***ret, nsr_error *err) {
        _cleanup_free_ char *file = nsr_asprintf("%s/profiles/protect.list", datadir);
        _cleanup_strv_free_ char **v = NULL;
        int k = ret ? nsr_profile_read_list(file, &v, err) : nsr_profile_check_list(file, err);
        if (k < 0)
                return k; /* fail closed: no list, no run */
        /* The user's additions. */
        _cleanup_free_ char *user = xdg_config && xdg_config[0] == '/'
                                            ? nsr_asprintf("%s/nsrun/protect.list", xdg_config)
                                    : home ? nsr_asprintf("%s/.config/nsrun/protect.list", home)
                                           : NULL;
        if (user && access(user, F_OK) == 0) {
                _cleanup_strv_free_ char **more = NULL;
                k = ret ? nsr_profile_read_list(user, &more, err) : nsr_profile_check_list(user, err);
                if (k < 0)
                        return k;
                if (!ret)
                        return 0;
                for (size_t i = 0; more[i]; i++)
                        nsr_strv_extend(&v, more[i]);
        }
        if (ret)
                *ret = TAKE_PTR(v);
        return 0;
}
