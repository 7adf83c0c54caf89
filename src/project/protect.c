/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What may never reach the host as it is (protect.h): the pure core that
 * classifies a change (git dirs, hooks, protect.list, nsrun's own
 * configuration, modes, xattrs), and the scan and enforcement between
 * capture and commit. Git config is read in gitconfig.c, the rules from the
 * project before the run in protectrules.c. */
#include "config.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "base/durable.h"
#include "base/utf8.h"
#include "project/protect-internal.h"
#include "project/protect.h"
#include "txn/txnfs.h"

/* ---- the pure core ------------------------------------------------------------ */

static bool first_is(const char *rel, const char *name) {
        return under(rel, name);
}

nsr_protect_verdict nsr_protect_git_entry(const char *rel, bool is_new, nsr_entry_type type, bool deleted,
                                          const char **ret_reason) {
        static const char *const state_files[] = {
                "HEAD",        "ORIG_HEAD",  "FETCH_HEAD",  "MERGE_HEAD",  "CHERRY_PICK_HEAD", "REVERT_HEAD",
                "REBASE_HEAD", "AUTO_MERGE", "index",       "packed-refs", "COMMIT_EDITMSG",   "MERGE_MSG",
                "MERGE_MODE",  "SQUASH_MSG", "TAG_EDITMSG", "shallow",     "description",
        };
        const char *why = NULL;
        /* A symlink in a git dir points git somewhere else (a hooks dir,
         * an object store, a config): never. Removing one is harmless. */
        if (type == NSR_ENTRY_SYMLINK && !deleted)
                why = "a symlink inside a git dir points git elsewhere";
        else if (first_is(rel, "objects")) {
                if (first_is(rel, "objects/info/alternates") || first_is(rel, "objects/info/http-alternates"))
                        why = "git alternates point git at other object stores";
        } else if (first_is(rel, "refs") || first_is(rel, "logs") || first_is(rel, "reftable") ||
                   first_is(rel, "lfs/objects"))
                ;
        else if (streq(rel, "config") && is_new && !deleted && type == NSR_ENTRY_FILE) {
                *ret_reason = "the config of a repository the run created, reduced to keys that run nothing";
                return NSR_PROTECT_REDUCE_CONFIG;
        } else {
                bool state = false;
                for (size_t i = 0; i < ELEMENTSOF(state_files); i++)
                        state |= streq(rel, state_files[i]);
                state |= nsr_startswith(rel, "sharedindex.") && !strchr(rel, '/');
                if (!state) {
                        if (first_is(rel, "hooks"))
                                why = "git runs hooks";
                        else if (first_is(rel, "config") || first_is(rel, "config.worktree"))
                                why = "git config can run commands";
                        else if (first_is(rel, "commondir") || first_is(rel, "gitdir"))
                                why = "points git at another git dir";
                        else if (first_is(rel, "modules") || first_is(rel, "worktrees"))
                                why = "a submodule's or worktree's git dir";
                        else if (first_is(rel, "info"))
                                why = "info/ steers git (attributes, excludes, grafts, sparse checkout)";
                        else if (first_is(rel, "rebase-merge") || first_is(rel, "rebase-apply") ||
                                 first_is(rel, "sequencer"))
                                why = "a rebase or cherry-pick todo list can run commands";
                        else
                                why = "not on the allow-list of git metadata";
                }
        }
        if (why) {
                *ret_reason = why;
                return NSR_PROTECT_DROP;
        }
        *ret_reason = NULL;
        return NSR_PROTECT_APPLY;
}

/* Splits buf in place into its non-empty components; comp has room for
 * one more than buf has slashes. Returns their number. */
static size_t split_components(char *buf, const char **comp) {
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save))
                comp[n++] = t;
        return n;
}

static size_t count_char(const char *s, char ch) {
        size_t n = 0;
        for (; *s; s++)
                n += *s == ch;
        return n;
}

#define PATTERN_COMPONENTS_MAX 64

/* One component of an entry: a literal compared as bytes, or a glob
 * (NUL-terminated in its own buffer) given to fnmatch(3). */
typedef struct pat_comp {
        const char *s;
        size_t len;
        bool glob;
} pat_comp;

/* The entry's non-empty components, at most PATTERN_COMPONENTS_MAX;
 * SIZE_MAX for more. One pass over its bytes. */
static size_t pattern_components(const char *p, pat_comp *pc) {
        size_t k = 0;
        pat_comp *cur = NULL;
        for (; *p; p++) {
                if (*p == '/') {
                        cur = NULL;
                        continue;
                }
                if (!cur) {
                        if (k == PATTERN_COMPONENTS_MAX)
                                return SIZE_MAX;
                        cur = &pc[k++];
                        *cur = (pat_comp){ .s = p };
                }
                cur->len++;
                cur->glob |= *p == '*' || *p == '?' || *p == '[' || *p == '\\';
        }
        return k;
}

static bool comp_matches(const pat_comp *pc, const char *name, size_t name_len) {
        if (!pc->glob)
                return name_len == pc->len && name[0] == pc->s[0] && memcmp(name, pc->s, pc->len) == 0;
        /* The literal text before the first glob character and after the
         * last "*" must be there: most names fail here, without fnmatch. */
        size_t pre = strcspn(pc->s, "*?[\\");
        if (pre > name_len || memcmp(name, pc->s, pre) != 0)
                return false;
        const char *star = memrchr(pc->s, '*', pc->len);
        /* Only where no bracket or escape could hold that "*". */
        if (star && !memchr(pc->s, '[', pc->len) && !memchr(pc->s, '\\', pc->len)) {
                size_t suf = pc->len - (size_t) (star + 1 - pc->s);
                if (strcspn(star + 1, "?[\\") >= suf &&
                    (suf > name_len || memcmp(name + name_len - suf, star + 1, suf) != 0))
                        return false;
        }
        char g[PATH_MAX];
        if (pc->len >= sizeof(g))
                return false;
        memcpy(g, pc->s, pc->len);
        g[pc->len] = '\0';
        return fnmatch(g, name, 0) == 0;
}

bool nsr_protect_list_match(char *const *patterns, const char *path) {
        if (!patterns || !patterns[0])
                return false;
        /* The path is split once, whatever its depth; an entry of k
         * components is matched against the path's first k (the path or
         * an ancestor of it), or, with "**" in front, against every run of
         * k components, literal components by bytes: the list is long and
         * a capture checks every change. */
        _cleanup_free_ char *pbuf = nsr_strdup(path);
        size_t max = count_char(path, '/') + 1;
        _cleanup_free_ const char **comp = nsr_malloc0(max * sizeof(char *));
        _cleanup_free_ size_t *clen = nsr_malloc0(max * sizeof(size_t));
        size_t n = split_components(pbuf, comp);
        for (size_t c = 0; c < n; c++)
                clen[c] = strlen(comp[c]);
        for (size_t i = 0; patterns[i]; i++) {
                const char *p = patterns[i];
                bool anywhere = nsr_startswith(p, "**/");
                if (anywhere)
                        p += 3;
                pat_comp pc[PATTERN_COMPONENTS_MAX];
                size_t k = pattern_components(p, pc);
                if (k == 0 || k == SIZE_MAX || k > n)
                        continue;
                for (size_t start = 0; start + k <= n; start++) {
                        size_t m = 0;
                        while (m < k && comp_matches(&pc[m], comp[start + m], clen[start + m]))
                                m++;
                        if (m == k)
                                return true;
                        if (!anywhere)
                                break;
                }
        }
        return false;
}

static size_t components(const char *s) {
        size_t n = 1;
        for (; *s; s++)
                n += *s == '/';
        return n;
}

bool nsr_protect_config_match(char *const *patterns, const char *path, bool deleted, nsr_entry_type type) {
        if (nsr_protect_list_match(patterns, path))
                return true;
        if (!deleted && type == NSR_ENTRY_DIR)
                return false;
        /* An ancestor dir of a pattern: the pattern's first components. */
        size_t k = components(path);
        for (size_t i = 0; patterns && patterns[i]; i++) {
                const char *p = patterns[i];
                const char *cut = p;
                size_t seen = 0;
                for (; *cut; cut++)
                        if (*cut == '/' && ++seen == k)
                                break;
                if (!*cut)
                        continue; /* not deeper than path */
                _cleanup_free_ char *prefix = nsr_strndup(p, (size_t) (cut - p));
                if (fnmatch(prefix, path, FNM_PATHNAME) == 0)
                        return true;
        }
        return false;
}

char *nsr_protect_escape(const char *name) {
        char *out = nsr_malloc0(2 * strlen(name) + 1), *o = out;
        for (const char *s = name; *s; s++) {
                if (strchr("*?[]\\", *s))
                        *o++ = '\\';
                *o++ = *s;
        }
        return out;
}

/* githooks(5): the names git runs from a hooks dir. Needed where that dir
 * is the project root, which cannot be protected as a whole. */
static bool is_hook_name(const char *name) {
        static const char *const hooks[] = {
                "applypatch-msg",
                "pre-applypatch",
                "post-applypatch",
                "pre-commit",
                "pre-merge-commit",
                "prepare-commit-msg",
                "commit-msg",
                "post-commit",
                "pre-rebase",
                "post-checkout",
                "post-merge",
                "pre-push",
                "pre-receive",
                "update",
                "proc-receive",
                "post-receive",
                "post-update",
                "reference-transaction",
                "push-to-checkout",
                "pre-auto-gc",
                "post-rewrite",
                "sendemail-validate",
                "fsmonitor-watchman",
                "p4-changelist",
                "p4-prepare-changelist",
                "p4-post-changelist",
                "p4-pre-submit",
                "post-index-change",
        };
        for (size_t i = 0; i < ELEMENTSOF(hooks); i++)
                if (streq(name, hooks[i]))
                        return true;
        return false;
}

nsr_protect_verdict nsr_protect_classify(const nsr_protect_rules *rules, const nsr_change *c, const char **ret_reason) {
        bool deleted = c->kind == NSR_CHANGE_DELETED;
        /* Whatever its name: a fifo hangs the host tool that opens it (git
         * status on .git/HEAD, a prompt), a socket or device is no file a
         * project holds. Checked first, so the reason says what it is. */
        if (nsr_change_makes_special(c)) {
                *ret_reason = "a fifo, socket or device node never reaches the project";
                return NSR_PROTECT_DROP;
        }
        const char *base = strrchr(c->path, '/');
        base = base ? base + 1 : c->path;
        if (streq(base, ".git") && !deleted && c->type != NSR_ENTRY_DIR) {
                *ret_reason = "a .git file or symlink points git at another git dir";
                return NSR_PROTECT_DROP;
        }
        /* The project-local profile (nsrun-profile(5)) configures the next
         * run on this project: nsrun's own, so not left to protect.list. */
        if (under(c->path, ".nsrun")) {
                *ret_reason = "the project-local profile configures the next run";
                return NSR_PROTECT_DROP;
        }
        nsr_protect_verdict v = NSR_PROTECT_APPLY;
        const char *why = NULL;
        for (size_t i = 0; i < rules->n_gitdirs; i++) {
                const nsr_protect_gitdir *g = &rules->gitdirs[i];
                if (!under(c->path, g->path) || streq(c->path, g->path))
                        continue;
                const char *rel = c->path + strlen(g->path) + (*g->path ? 1 : 0);
                const char *r = NULL;
                nsr_protect_verdict k = nsr_protect_git_entry(rel, g->is_new, c->type, deleted, &r);
                if (k == NSR_PROTECT_DROP) {
                        *ret_reason = r;
                        return k;
                }
                if (k == NSR_PROTECT_REDUCE_CONFIG) {
                        v = k;
                        why = r;
                }
        }
        for (size_t i = 0; rules->hooks && rules->hooks[i]; i++)
                if (*rules->hooks[i] ? under(c->path, rules->hooks[i]) : is_hook_name(c->path)) {
                        *ret_reason = "git runs the hooks in core.hooksPath";
                        return NSR_PROTECT_DROP;
                }
        if (nsr_protect_config_match(rules->config, c->path, deleted, c->type)) {
                *ret_reason = "nsrun read it as its own configuration, and so would the next run";
                return NSR_PROTECT_DROP;
        }
        if (nsr_protect_list_match(rules->patterns, c->path)) {
                *ret_reason = "protect.list: tools on the host run it on their own";
                return NSR_PROTECT_DROP;
        }
        *ret_reason = why;
        return v;
}

mode_t nsr_protect_mode(mode_t requested, bool old_exists, mode_t old, mode_t umask) {
        mode_t allowed = 0777 & ~umask;
        if (old_exists)
                allowed = (old & 07777) | (allowed & ~(mode_t) (S_IWGRP | S_IWOTH));
        return requested & 07777 & allowed;
}

/* Overlay's own xattrs: stripped without a word (sanitize does the user
 * ones; trusted.* only overlay itself can have set). */
static bool xattr_silent(const char *name) {
        return nsr_startswith(name, "user.overlay.") || nsr_startswith(name, "trusted.overlay.");
}

bool nsr_protect_xattr_allowed(const char *name) {
        if (nsr_startswith(name, "user."))
                return !nsr_startswith(name, "user.overlay.");
        return streq(name, "security.selinux") || nsr_startswith(name, "security.SMACK64") ||
               streq(name, "security.apparmor");
}

/* ---- results ------------------------------------------------------------------------ */

void nsr_protect_rules_done(nsr_protect_rules *r) {
        for (size_t i = 0; i < r->n_gitdirs; i++)
                free(r->gitdirs[i].path);
        free(r->gitdirs);
        nsr_strv_free(r->hooks);
        nsr_strv_free(r->patterns);
        nsr_strv_free(r->config);
        *r = (nsr_protect_rules){ 0 };
}

nsr_protect_result *nsr_protect_result_free(nsr_protect_result *r) {
        if (!r)
                return NULL;
        nsr_changeset_free(r->dropped);
        for (size_t i = 0; i < r->n_notes; i++) {
                free(r->notes[i].path);
                free(r->notes[i].detail);
        }
        free(r->notes);
        free(r);
        return NULL;
}

static const char *const action_names[_NSR_PROTECT_ACTION_MAX] = {
        [NSR_PROTECT_DROPPED] = "dropped",
        [NSR_PROTECT_CONFIG_REDUCED] = "config_reduced",
        [NSR_PROTECT_MODE_REDUCED] = "mode_reduced",
        [NSR_PROTECT_XATTR_DROPPED] = "xattr_dropped",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_protect_action, nsr_protect_action, action_names)

static nsr_protect_note *add_note(nsr_protect_result *res, const nsr_change *c, nsr_protect_action a,
                                  const char *reason) {
        res->notes = nsr_realloc_array(res->notes, res->n_notes + 1, sizeof(*res->notes));
        nsr_protect_note *n = &res->notes[res->n_notes++];
        *n = (nsr_protect_note){ .path = nsr_strdup(c->path),
                                 .action = a,
                                 .reason = reason,
                                 .old_mode = c->old.exists ? c->old.mode : 0,
                                 .requested = c->mode,
                                 .mode = c->mode,
                                 .old_exists = c->old.exists };
        return n;
}

/* ---- scan and enforce ------------------------------------------------------------------- */

typedef struct split_ctx {
        const nsr_protect_rules *rules;
} split_ctx;

static bool drop_pred(const nsr_change *c, void *userdata) {
        const split_ctx *sc = userdata;
        const char *why = NULL;
        return nsr_protect_classify(sc->rules, c, &why) == NSR_PROTECT_DROP;
}

static bool has_new_version(const nsr_change *c) {
        return c->kind != NSR_CHANGE_DELETED && c->type != NSR_ENTRY_SYMLINK;
}

/* The host entry whose mode bounds the new one: a symlink's 0777 bounds
 * nothing. */
static bool old_bounds(const nsr_change *c) {
        return c->old.exists && c->old.type != NSR_ENTRY_SYMLINK;
}

/* The mode a change may give its entry. The project root (".") keeps its
 * owner's read and search bits as well: without them nsrun itself could
 * not fingerprint, undo or recover it, nor run on it again. */
static mode_t allowed_mode(const nsr_change *c, mode_t requested, mode_t umask) {
        mode_t m = nsr_protect_mode(requested, old_bounds(c), c->old.mode, umask);
        if (nsr_changeset_path_is_root(c->path))
                m |= c->old.mode & (S_IRUSR | S_IXUSR);
        return m;
}

/* The parent dir of the last entry looked up: the change set is sorted,
 * so siblings come together and each dir is opened (RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) about once. */
typedef struct dircache {
        char *dir;
        int fd;
} dircache;

static void dircache_done(dircache *dc) {
        free(dc->dir);
        safe_close(dc->fd);
}

/* An fd of path below root, never through a symlink: read-only for a
 * file or dir we may read (the f*xattr calls then skip a walk through
 * /proc), else O_PATH (*ret_opath). */
static int open_entry(dircache *dc, int root, const char *path, nsr_entry_type type, bool *ret_opath) {
        if (nsr_changeset_path_is_root(path)) {
                /* The root itself: its own fd, whatever its mode (a lookup
                 * of "." in it would need its search bit). */
                *ret_opath = true;
                int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t) (slash - path) : 0;
        const char *leaf = slash ? slash + 1 : path;
        if (!dc->dir || strlen(dc->dir) != dl || strncmp(dc->dir, path, dl) != 0) {
                free(dc->dir);
                safe_close(dc->fd);
                dc->dir = nsr_strndup(path, dl);
                if (dl)
                        dc->fd = nsr_txnfs_open(root, dc->dir, O_PATH | O_DIRECTORY);
                else {
                        dc->fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
                        if (dc->fd < 0)
                                dc->fd = -errno;
                }
        }
        if (dc->fd < 0)
                return dc->fd;
        if (type == NSR_ENTRY_FILE || type == NSR_ENTRY_DIR) {
                /* O_NONBLOCK: should it be a fifo after all, no wait. */
                int fd = openat(dc->fd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 &&
                    (type == NSR_ENTRY_FILE ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode))) {
                        *ret_opath = false;
                        return fd;
                }
                safe_close(fd);
        }
        *ret_opath = true;
        int fd = openat(dc->fd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The xattr names of an O_PATH fd (not a symlink) that may not reach the
 * host. */
static int bad_xattrs(int f, bool opath, char ***ret) {
        *ret = NULL;
        char p[64];
        nsr_txnfs_fd_path(f, p, sizeof(p));
        for (int tries = 0; tries < 4; tries++) {
                ssize_t n = opath ? listxattr(p, NULL, 0) : flistxattr(f, NULL, 0);
                if (n < 0)
                        return errno == ENOTSUP ? 0 : -errno;
                if (n == 0)
                        return 0;
                _cleanup_free_ char *names = nsr_malloc0((size_t) n + 1);
                ssize_t k = opath ? listxattr(p, names, (size_t) n) : flistxattr(f, names, (size_t) n);
                if (k < 0 && errno == ERANGE)
                        continue;
                if (k < 0)
                        return -errno;
                char **v = nsr_malloc0(sizeof(char *));
                for (ssize_t o = 0; o < k; o += (ssize_t) strlen(names + o) + 1)
                        if (!nsr_protect_xattr_allowed(names + o))
                                nsr_strv_extend(&v, names + o);
                *ret = v;
                return 0;
        }
        return -EAGAIN;
}

/* One xattr value of an fd (through /proc for O_PATH). */
static int xattr_value(int f, bool opath, const char *name, char **ret, size_t *ret_len) {
        char p[64];
        nsr_txnfs_fd_path(f, p, sizeof(p));
        for (int tries = 0; tries < 4; tries++) {
                ssize_t n = opath ? getxattr(p, name, NULL, 0) : fgetxattr(f, name, NULL, 0);
                if (n < 0)
                        return -errno;
                _cleanup_free_ char *buf = nsr_malloc0((size_t) n + 1);
                ssize_t k = opath ? getxattr(p, name, buf, (size_t) n) : fgetxattr(f, name, buf, (size_t) n);
                if (k < 0 && errno == ERANGE)
                        continue;
                if (k < 0)
                        return -errno;
                *ret = TAKE_PTR(buf);
                *ret_len = (size_t) k;
                return 0;
        }
        return -EAGAIN;
}

/* Takes out of bad the names the host entry has with the same value: an
 * ACL the user had set stays (a modified file's copy carries it). */
static void keep_host_xattrs(char **bad, int f, bool opath, dircache *bdc, int before_fd, const nsr_change *c) {
        if (!bad || !bad[0] || !c->old.exists || before_fd < 0 || c->old.type != c->type)
                return;
        bool bopath = true;
        _cleanup_close_ int b = open_entry(bdc, before_fd, c->path, c->old.type, &bopath);
        if (b < 0)
                return;
        size_t o = 0;
        for (size_t i = 0; bad[i]; i++) {
                _cleanup_free_ char *nv = NULL, *ov = NULL;
                size_t nl = 0, ol = 0;
                bool same = xattr_value(f, opath, bad[i], &nv, &nl) >= 0 &&
                            xattr_value(b, bopath, bad[i], &ov, &ol) >= 0 && nl == ol && memcmp(nv, ov, nl) == 0;
                if (same)
                        free(bad[i]);
                else
                        bad[o++] = bad[i];
        }
        bad[o] = NULL;
}

int nsr_protect_scan(nsr_changeset *cs, const nsr_protect_ctx *ctx, nsr_protect_result **ret, nsr_error *err) {
        _cleanup_(nsr_protect_result_freep) nsr_protect_result *res = nsr_malloc0(sizeof(*res));
        /* No change, nothing to drop, reduce or note: the run that wrote
         * nothing (the common no-op) reads neither protect.list (checked
         * readable before the run, nsr_project_prepare) nor the projects'
         * git metadata and config files. */
        if (cs->n_changes == 0) {
                res->dropped = nsr_changeset_new();
                res->dropped->max_changes = cs->max_changes;
                *ret = TAKE_PTR(res);
                return 0;
        }
        _cleanup_(nsr_protect_rules_done) nsr_protect_rules rules = { 0 };
        int r = nsr_protect_load_list(ctx->datadir, ctx->home, ctx->xdg_config, &rules.patterns, err);
        if (r < 0)
                return r;
        rules.config = nsr_strv_copy(ctx->config);
        protect_find_gitdirs(&rules, cs, ctx->before_fd);
        protect_find_hooks(&rules, ctx);

        split_ctx sc = { .rules = &rules };
        r = nsr_changeset_split(cs, drop_pred, &sc, &res->dropped);
        if (r < 0)
                return nsr_error_set(err, -r, "splitting protected changes");
        for (size_t i = 0; i < res->dropped->n_changes; i++) {
                const nsr_change *c = &res->dropped->changes[i];
                const char *why = NULL;
                (void) nsr_protect_classify(&rules, c, &why);
                add_note(res, c, NSR_PROTECT_DROPPED, why);
        }
        for (size_t i = 0; i < cs->n_changes; i++) {
                const nsr_change *c = &cs->changes[i];
                const char *why = NULL;
                if (nsr_protect_classify(&rules, c, &why) == NSR_PROTECT_REDUCE_CONFIG)
                        add_note(res, c, NSR_PROTECT_CONFIG_REDUCED, why);
        }
        _cleanup_(dircache_done) dircache dc = { .fd = -1 }, bdc = { .fd = -1 };
        for (size_t i = 0; i < cs->n_changes && ctx->after_fd >= 0; i++) {
                const nsr_change *c = &cs->changes[i];
                /* The root's xattrs never reach the host: its mode only. */
                if (!has_new_version(c) || nsr_changeset_path_is_root(c->path))
                        continue;
                _cleanup_strv_free_ char **bad = NULL;
                bool opath = true;
                _cleanup_close_ int fd = open_entry(&dc, ctx->after_fd, c->path, c->type, &opath);
                struct stat st;
                r = fd < 0 ? fd : fstat(fd, &st) < 0 ? -errno : S_ISLNK(st.st_mode) ? 0 : bad_xattrs(fd, opath, &bad);
                /* Not fatal here (a diff of a half-gone run still shows
                 * the rest): the enforce step reads them again and fails
                 * closed. */
                if (r < 0)
                        continue;
                keep_host_xattrs(bad, fd, opath, &bdc, ctx->before_fd, c);
                for (size_t k = 0; bad && bad[k]; k++) {
                        if (xattr_silent(bad[k]))
                                continue;
                        nsr_protect_note *n =
                                add_note(res, c, NSR_PROTECT_XATTR_DROPPED,
                                         "ACLs and system, security and trusted xattrs never reach the host");
                        n->detail = nsr_strdup(bad[k]);
                }
        }
        for (size_t i = 0; i < cs->n_changes; i++) {
                const nsr_change *c = &cs->changes[i];
                if (!has_new_version(c))
                        continue;
                mode_t m = allowed_mode(c, c->mode, ctx->umask);
                if (m != (c->mode & 07777)) {
                        nsr_protect_note *n = add_note(
                                res, c, NSR_PROTECT_MODE_REDUCED,
                                nsr_changeset_path_is_root(c->path)
                                        ? "the project dir keeps its owner's read and search bits, and modes never "
                                          "gain group or other write, setuid, setgid, sticky or bits the umask removes"
                                        : "modes never gain group or other write, setuid, setgid, sticky or bits the "
                                          "umask removes");
                        n->mode = m;
                }
        }
        *ret = TAKE_PTR(res);
        return 0;
}

static int rewrite_config(int root, nsr_change *c) {
        _cleanup_free_ char *buf = NULL, *out = NULL;
        size_t len = 0, dropped = 0;
        int r = protect_read_at(root, c->path, &buf, &len);
        if (r == -E2BIG || r == -EFBIG)
                len = 0;
        else if (r < 0)
                return r;
        r = nsr_protect_git_config_reduce(buf ? buf : "", len, &out, &dropped);
        if (r < 0)
                return r;
        const char *leaf = NULL;
        _cleanup_close_ int dir = nsr_txnfs_open_parent(root, c->path, &leaf);
        if (dir < 0)
                return dir;
        nsr_error we = { 0 };
        r = nsr_durable_write(dir, leaf, out, strlen(out), (c->mode & 0644) | 0600, 0, &we);
        if (r < 0)
                return r;
        c->size = strlen(out);
        c->mode = (c->mode & 0644) | 0600;
        return 0;
}

int nsr_protect_enforce(nsr_changeset *cs, const nsr_protect_ctx *ctx, const nsr_protect_result *res, nsr_error *err) {
        if (ctx->after_fd < 0)
                return nsr_error_setx(err, EINVAL, "nsr_protect_enforce: no new versions");
        for (size_t i = 0; res && i < res->n_notes; i++) {
                if (res->notes[i].action != NSR_PROTECT_CONFIG_REDUCED)
                        continue;
                nsr_change *c = (nsr_change *) nsr_changeset_lookup(cs, res->notes[i].path);
                int r = c ? rewrite_config(ctx->after_fd, c) : 0;
                if (r < 0)
                        return nsr_error_set(err, -r, "cannot reduce the git config %s", res->notes[i].path);
        }
        /* Everything is checked again here, from the entries themselves:
         * the notes are for the report. */
        _cleanup_(dircache_done) dircache dc = { .fd = -1 }, bdc = { .fd = -1 };
        for (size_t i = 0; i < cs->n_changes; i++) {
                nsr_change *c = &cs->changes[i];
                if (!has_new_version(c))
                        continue;
                bool opath = true;
                _cleanup_close_ int fd = open_entry(&dc, ctx->after_fd, c->path, c->type, &opath);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0)
                        return nsr_error_set(err, fd < 0 ? -fd : errno, "cannot open the new version of %s", c->path);
                if (S_ISLNK(st.st_mode))
                        continue;
                _cleanup_strv_free_ char **bad = NULL;
                /* The root's xattrs never reach the host (its mode only):
                 * none to strip, which a 0000 root would not allow. */
                int r = nsr_changeset_path_is_root(c->path) ? 0 : bad_xattrs(fd, opath, &bad);
                if (r >= 0)
                        keep_host_xattrs(bad, fd, opath, &bdc, ctx->before_fd, c);
                for (size_t k = 0; r >= 0 && bad && bad[k]; k++)
                        if (opath)
                                r = nsr_txnfs_fd_setxattr(fd, bad[k], NULL, 0);
                        else if (fremovexattr(fd, bad[k]) < 0 && errno != ENODATA)
                                r = -errno;
                if (r < 0)
                        return nsr_error_set(err, -r, "cannot strip the xattrs of the new version of %s", c->path);
                /* Stripping an access ACL leaves the mode; read it again. */
                if (fstat(fd, &st) < 0)
                        return nsr_error_set(err, errno, "cannot stat the new version of %s", c->path);
                mode_t m = allowed_mode(c, st.st_mode & 07777, ctx->umask);
                if (m != (st.st_mode & 07777)) {
                        r = opath ? nsr_txnfs_fd_chmod(fd, m) : fchmod(fd, m) < 0 ? -errno : 0;
                        if (r < 0)
                                return nsr_error_set(err, -r, "cannot reduce the mode of the new version of %s",
                                                     c->path);
                }
                c->mode = m;
        }
        return 0;
}

char *nsr_protect_summary(const nsr_protect_result *res, bool live) {
        if (!res || res->n_notes == 0)
                return NULL;
        size_t count[_NSR_PROTECT_ACTION_MAX] = { 0 };
        const nsr_protect_note *first[_NSR_PROTECT_ACTION_MAX] = { 0 };
        for (size_t i = 0; i < res->n_notes; i++) {
                const nsr_protect_note *n = &res->notes[i];
                if (!first[n->action])
                        first[n->action] = n;
                count[n->action]++;
        }
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fputs("protected:", f);
        const char *sep = " ";
        for (int a = 0; a < _NSR_PROTECT_ACTION_MAX; a++) {
                if (!count[a])
                        continue;
                const nsr_protect_note *n = first[a];
                _cleanup_free_ char *p = nsr_utf8_escape(n->path);
                switch ((nsr_protect_action) a) {
                case NSR_PROTECT_DROPPED:
                        fprintf(f, "%s%zu change%s %s, e.g. %s (%s)", sep, count[a], count[a] == 1 ? "" : "s",
                                live ? "reverted" : "dropped", p, n->reason);
                        break;
                case NSR_PROTECT_CONFIG_REDUCED:
                        fprintf(f, "%s%zu new git config%s reduced to safe keys, e.g. %s", sep, count[a],
                                count[a] == 1 ? "" : "s", p);
                        break;
                case NSR_PROTECT_MODE_REDUCED:
                        fprintf(f, "%s%zu mode%s reduced, e.g. %s (%04o requested, %04o applied)", sep, count[a],
                                count[a] == 1 ? "" : "s", p, (unsigned) n->requested, (unsigned) n->mode);
                        break;
                case NSR_PROTECT_XATTR_DROPPED: {
                        _cleanup_free_ char *x = nsr_utf8_escape(n->detail ? n->detail : "");
                        fprintf(f, "%s%zu xattr%s stripped, e.g. %s on %s", sep, count[a], count[a] == 1 ? "" : "s", x,
                                p);
                        break;
                }
                case _NSR_PROTECT_ACTION_MAX:
                case _NSR_PROTECT_ACTION_INVALID:
                        break;
                }
                sep = "; ";
        }
        fclose(f);
        return buf;
}
