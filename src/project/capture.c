/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/durable.h"
#include "base/utf8.h"
#include "project/capture.h"

/* The kernel's XATTR_SIZE_MAX and XATTR_LIST_MAX (linux/limits.h). */
#define XATTR_BUF_SIZE 65536
#define CMP_CHUNK      65536
#define DENTS_BUF_SIZE 32768

#define OPAQUE_XATTR   "user.overlay.opaque"
#define METACOPY_XATTR "user.overlay.metacopy"
#define REDIRECT_XATTR "user.overlay.redirect"

typedef struct scan {
        nsr_changeset *cs;
        nsr_capture_stats st;
        unsigned max_depth;
        unsigned flags;
        nsr_error *err;
        char path[PATH_MAX]; /* the relative path being looked at */
        size_t path_len;
        char *buf_a, *buf_b;   /* file chunks, xattr values, symlink targets */
        char *list_a, *list_b; /* xattr name lists */
        bool trees;            /* NSR_CAPTURE_TREES */
        const char *layer[2];  /* names of the upper and lower side, for messages */
        const nsr_capture_prior *(*prior)(void *userdata, const char *rel);
        void *prior_userdata;
} scan;

/* An upper entry made readable for a while, see fixup_open(). */
typedef struct fixup {
        int dirfd;
        const char *name;
        mode_t mode; /* the mode to give back */
        bool active;
} fixup;

typedef struct ent {
        const char *name; /* set once the arena stops moving */
        size_t off;       /* in the arena */
        unsigned char d_type;
} ent;

/* A directory's entries, read in full so that the fd can be reused for
 * lookups and the names can be searched. */
typedef struct names {
        char *arena;
        size_t arena_len, arena_cap;
        ent *v;
        size_t n;
} names;

static void names_done(names *ns) {
        free(ns->arena);
        free(ns->v);
        *ns = (names){ 0 };
}

/* ---- errors ----------------------------------------------------------- */

static int fail(scan *s, int r, const char *what, const char *layer) {
        _cleanup_free_ char *p = nsr_utf8_escape(s->path_len ? s->path : ".");
        return nsr_error_set(s->err, r, "capture: %s '%s' in %s", what, p, layer);
}

static int failx(scan *s, int r, const char *what, const char *layer) {
        _cleanup_free_ char *p = nsr_utf8_escape(s->path_len ? s->path : ".");
        return nsr_error_setx(s->err, r, "capture: %s '%s' in %s", what, p, layer);
}

#define UPPER (s->layer[0])
#define LOWER (s->layer[1])

/* ---- paths ------------------------------------------------------------ */

static int path_push(scan *s, const char *name, size_t *ret_saved) {
        size_t l = strlen(name);
        size_t need = s->path_len + (s->path_len ? 1 : 0) + l;
        if (need > PATH_MAX - 1) {
                _cleanup_free_ char *p = nsr_utf8_escape(s->path);
                return nsr_error_setx(s->err, ENAMETOOLONG, "capture: a path longer than %d bytes below '%s'",
                                      PATH_MAX - 1, p);
        }
        *ret_saved = s->path_len;
        if (s->path_len)
                s->path[s->path_len++] = '/';
        memcpy(s->path + s->path_len, name, l + 1);
        s->path_len += l;
        return 0;
}

static void path_pop(scan *s, size_t saved) {
        s->path_len = saved;
        s->path[saved] = '\0';
}

/* ---- small wrappers --------------------------------------------------- */

/* name "." means the dir itself: it is reached without a lookup, which
 * would need u+x on a root dir the command may have chmodded to 000. */
static bool is_self(const char *name) {
        return name[0] == '.' && name[1] == '\0';
}

static int xfstatat(scan *s, int dirfd, const char *name, struct stat *st) {
        s->st.stat_calls++;
        if (fstatat(dirfd, is_self(name) ? "" : name, st, is_self(name) ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return 0;
}

static bool is_whiteout(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

static bool same_inode(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static bool ts_eq(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static int xopenat(int dirfd, const char *name, int flags) {
        for (;;) {
                int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
                if (fd >= 0)
                        return fd;
                if (errno != EINTR)
                        return -errno;
        }
}

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY)
/* O_NONBLOCK: should a lower file be swapped for a fifo under us, opening
 * it must not hang. */
#define FILE_FLAGS (O_RDONLY | O_NONBLOCK)

static int read_names(scan *s, int fd, bool upper, names *ret) {
        _cleanup_free_ char *buf = nsr_malloc(DENTS_BUF_SIZE);
        names ns = { 0 };
        int r = 0;
        for (;;) {
                ssize_t k = getdents64(fd, buf, DENTS_BUF_SIZE);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = fail(s, errno, "cannot read directory", upper ? UPPER : LOWER);
                        goto out;
                }
                if (k == 0)
                        break;
                for (ssize_t off = 0; off < k;) {
                        struct dirent64 *d = (struct dirent64 *) (buf + off);
                        off += d->d_reclen;
                        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
                                continue;
                        size_t l = strnlen(d->d_name, NAME_MAX + 1);
                        if (l > NAME_MAX) {
                                r = failx(s, ENAMETOOLONG, "a name longer than NAME_MAX in", upper ? UPPER : LOWER);
                                goto out;
                        }
                        if (ns.n >= NSR_CAPTURE_DIR_ENTRIES_MAX) {
                                r = failx(s, E2BIG, "too many entries in directory", upper ? UPPER : LOWER);
                                goto out;
                        }
                        if (ns.arena_len + l + 1 > ns.arena_cap) {
                                ns.arena_cap = ns.arena_cap ? ns.arena_cap * 2 : 4096;
                                while (ns.arena_len + l + 1 > ns.arena_cap)
                                        ns.arena_cap *= 2;
                                ns.arena = nsr_realloc_array(ns.arena, ns.arena_cap, 1);
                        }
                        if ((ns.n & (ns.n - 1)) == 0) /* grow at powers of two */
                                ns.v = nsr_realloc_array(ns.v, ns.n ? ns.n * 2 : 16, sizeof(ent));
                        ns.v[ns.n++] = (ent){ .off = ns.arena_len, .d_type = d->d_type };
                        memcpy(ns.arena + ns.arena_len, d->d_name, l + 1);
                        ns.arena_len += l + 1;
                        if (upper)
                                s->st.upper_entries++;
                        else
                                s->st.lower_entries++;
                }
        }
        for (size_t i = 0; i < ns.n; i++)
                ns.v[i].name = ns.arena + ns.v[i].off;
out:
        if (r < 0) {
                names_done(&ns);
                return r;
        }
        *ret = ns;
        return 0;
}

static int ent_cmp(const void *a, const void *b) {
        return strcmp(((const ent *) a)->name, ((const ent *) b)->name);
}

static bool names_contain(const names *ns, const char *name) {
        ent key = { .name = name };
        return ns->n > 0 && bsearch(&key, ns->v, ns->n, sizeof(ent), ent_cmp);
}

/* ---- the mode fixup --------------------------------------------------- */

static void proc_fd_path(char *buf, size_t len, int fd) {
        snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* Whether we may read (and search) the entry, with our capabilities:
 * AT_EACCESS makes the kernel check as open() would. */
static bool unreadable(int dirfd, const char *name, int mask) {
        int r;
        if (is_self(name)) {
                char p[64];
                proc_fd_path(p, sizeof(p), dirfd);
                r = faccessat(AT_FDCWD, p, mask, AT_EACCESS);
        } else
                r = faccessat(dirfd, name, mask, AT_EACCESS | AT_SYMLINK_NOFOLLOW);
        return r < 0 && errno == EACCES;
}

/* chmod without following a symlink; "." through /proc (the magic link
 * leads to the dir itself and needs no permission on it). */
static int chmod_entry(int dirfd, const char *name, mode_t mode) {
        int r;
        if (is_self(name)) {
                char p[64];
                proc_fd_path(p, sizeof(p), dirfd);
                r = chmod(p, mode);
        } else
                r = fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW);
        return r < 0 ? -errno : 0;
}

/* Opens an upper entry. On EACCES, and unless disabled, first adds the
 * missing owner bits (u+r, plus u+x for dirs) and records the old mode in
 * *fx, to be given back by fixup_restore() once the caller is done with
 * the entry (xattr reads and lookups below a dir check the mode at each
 * call, not at open). */
static int fixup_open(scan *s, int dirfd, const char *name, const struct stat *st, int flags, fixup *fx) {
        *fx = (fixup){ .dirfd = -1 };
        bool dir = S_ISDIR(st->st_mode);
        if (s->flags & NSR_CAPTURE_NO_MODE_FIXUP)
                return xopenat(dirfd, name, flags);
        /* Ask first rather than waiting for open() to fail: a dir without
         * u+x opens fine but its entries cannot be looked up. */
        if (!unreadable(dirfd, name, dir ? R_OK | X_OK : R_OK))
                return xopenat(dirfd, name, flags);
        mode_t add = dir ? (S_IRUSR | S_IXUSR) : S_IRUSR;
        mode_t old = st->st_mode & 07777;
        if (chmod_entry(dirfd, name, old | add) < 0)
                return xopenat(dirfd, name, flags); /* not ours to chmod: report what open says */
        s->st.mode_fixups++;
        *fx = (fixup){ .dirfd = dirfd, .name = name, .mode = old, .active = true };
        return xopenat(dirfd, name, flags);
}

static int fixup_restore(scan *s, fixup *fx) {
        if (!fx->active)
                return 0;
        fx->active = false;
        struct stat st;
        int r = chmod_entry(fx->dirfd, fx->name, fx->mode);
        if (r < 0)
                return fail(s, r, "cannot restore the mode of", UPPER);
        /* chmod may drop setgid silently (caller not in the group): the
         * apply step would then install the wrong mode. */
        r = xfstatat(s, fx->dirfd, fx->name, &st);
        if (r < 0)
                return fail(s, r, "cannot stat", UPPER);
        if ((st.st_mode & 07777) != fx->mode)
                return failx(s, EPERM, "cannot restore the mode of", UPPER);
        return 0;
}

/* ---- xattrs ----------------------------------------------------------- */

/* Overlay's own xattrs, and LSM labels that the policy (not the command)
 * sets on the copied-up inode. */
static bool xattr_ignored(const char *name) {
        return nsr_startswith(name, "user.overlay.") || streq(name, "security.selinux") ||
               nsr_startswith(name, "security.SMACK64") || streq(name, "security.apparmor");
}

static void proc_path(char *buf, size_t len, int dirfd, const char *name) {
        snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, name);
}

/* fd >= 0: use it (a file or dir opened for reading). Otherwise go through
 * /proc/self/fd/DIRFD/NAME with the l-variants: the parent is reached
 * through its fd, and the entry itself (a symlink, fifo, socket, device) is
 * neither followed nor opened. */
static ssize_t xlist(int fd, int dirfd, const char *name, char *buf, size_t len) {
        ssize_t k;
        if (fd >= 0)
                k = flistxattr(fd, buf, len);
        else {
                char p[PATH_MAX];
                proc_path(p, sizeof(p), dirfd, name);
                k = llistxattr(p, buf, len);
        }
        if (k < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
                return 0;
        if (k < 0)
                return -errno;
        /* buf holds len + 1: the last name ends in a NUL whatever the
         * list (split_names reads names with strlen). */
        buf[k] = '\0';
        return k;
}

static ssize_t xget(int fd, int dirfd, const char *name, const char *attr, char *buf, size_t len) {
        ssize_t k;
        if (fd >= 0)
                k = fgetxattr(fd, attr, buf, len);
        else {
                char p[PATH_MAX];
                proc_path(p, sizeof(p), dirfd, name);
                k = lgetxattr(p, attr, buf, len);
        }
        if (k < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
                return -ENODATA;
        return k < 0 ? -errno : k;
}

static int cstr_cmp(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Splits a listxattr() result into sorted names, without ignored ones. */
static const char **split_names(const char *list, size_t len, size_t *ret_n) {
        size_t n = 0;
        for (size_t i = 0; i < len; i += strlen(list + i) + 1)
                n++;
        const char **v = nsr_malloc0((n + 1) * sizeof(char *));
        size_t k = 0;
        for (size_t i = 0; i < len; i += strlen(list + i) + 1)
                if (!xattr_ignored(list + i))
                        v[k++] = list + i;
        qsort(v, k, sizeof(char *), cstr_cmp);
        *ret_n = k;
        return v;
}

typedef struct xside {
        int fd;           /* an open file or dir, or -1 */
        int dirfd;        /* else the parent dir ... */
        const char *name; /* ... and the name */
        bool upper;
} xside;

static int xattrs_differ(scan *s, const xside *u, const xside *l, bool *ret) {
        ssize_t nu = xlist(u->fd, u->dirfd, u->name, s->list_a, XATTR_BUF_SIZE);
        if (nu < 0)
                return fail(s, (int) nu, "cannot list xattrs of", UPPER);
        ssize_t nl = xlist(l->fd, l->dirfd, l->name, s->list_b, XATTR_BUF_SIZE);
        if (nl < 0)
                return fail(s, (int) nl, "cannot list xattrs of", LOWER);
        size_t cu, cl;
        _cleanup_free_ const char **vu = split_names(s->list_a, (size_t) nu, &cu);
        _cleanup_free_ const char **vl = split_names(s->list_b, (size_t) nl, &cl);
        *ret = true;
        if (cu != cl)
                return 0;
        for (size_t i = 0; i < cu; i++)
                if (strcmp(vu[i], vl[i]) != 0)
                        return 0;
        for (size_t i = 0; i < cu; i++) {
                ssize_t a = xget(u->fd, u->dirfd, u->name, vu[i], s->buf_a, XATTR_BUF_SIZE);
                if (a == -ENODATA)
                        return 0;
                if (a < 0)
                        return fail(s, (int) a, "cannot read xattrs of", UPPER);
                ssize_t b = xget(l->fd, l->dirfd, l->name, vl[i], s->buf_b, XATTR_BUF_SIZE);
                if (b == -ENODATA)
                        return 0;
                if (b < 0)
                        return fail(s, (int) b, "cannot read xattrs of", LOWER);
                if (a != b || memcmp(s->buf_a, s->buf_b, (size_t) a) != 0)
                        return 0;
        }
        *ret = false;
        return 0;
}

/* 1 if the xattr is set on the open upper entry, 0 if not. */
static int has_xattr(scan *s, int fd, const char *attr) {
        ssize_t k = xget(fd, -1, NULL, attr, NULL, 0);
        if (k == -ENODATA)
                return 0;
        if (k < 0)
                return fail(s, (int) k, "cannot read xattrs of", UPPER);
        return 1;
}

static int is_opaque(scan *s, int fd, bool *ret) {
        char v[8];
        ssize_t k = xget(fd, -1, NULL, OPAQUE_XATTR, v, sizeof(v));
        if (k == -ENODATA || k == -ERANGE) {
                *ret = false;
                return 0;
        }
        if (k < 0)
                return fail(s, (int) k, "cannot read xattrs of", UPPER);
        *ret = k == 1 && v[0] == 'y';
        return 0;
}

/* ---- building changes ------------------------------------------------- */

static void fill_new(nsr_change *c, const struct stat *st) {
        c->type = nsr_entry_type_from_mode(st->st_mode);
        c->size = S_ISDIR(st->st_mode) ? 0 : (uint64_t) st->st_size;
        c->mode = st->st_mode & 07777;
        c->uid = st->st_uid;
        c->gid = st->st_gid;
        c->mtime = st->st_mtim;
}

static void fill_old(nsr_change *c, const struct stat *st) {
        c->old = (nsr_entry_old){
                .exists = true,
                .type = nsr_entry_type_from_mode(st->st_mode),
                .mode = st->st_mode & 07777,
                .uid = st->st_uid,
                .gid = st->st_gid,
                .size = S_ISDIR(st->st_mode) ? 0 : (uint64_t) st->st_size,
                .mtime = st->st_mtim,
                .ctime = st->st_ctim,
                .dev = st->st_dev,
                .ino = st->st_ino,
        };
}

/* The metadata that differ, apart from xattrs. */
static unsigned meta_diff(const struct stat *u, const struct stat *l) {
        unsigned m = 0;
        if (!S_ISLNK(u->st_mode) && (u->st_mode & 07777) != (l->st_mode & 07777))
                m |= NSR_META_MODE;
        if (u->st_uid != l->st_uid || u->st_gid != l->st_gid)
                m |= NSR_META_OWNER;
        /* A dir's mtime changes whenever an entry is added or removed,
         * which is reported through the entries themselves. */
        if (!S_ISDIR(u->st_mode) && !ts_eq(&u->st_mtim, &l->st_mtim))
                m |= NSR_META_MTIME;
        return m;
}

static int add(scan *s, nsr_change *c) {
        c->path = s->path;
        return nsr_changeset_add(s->cs, c, s->err);
}

/* Reads a symlink target into buf (PATH_MAX bytes at least). */
static int read_target(scan *s, int dirfd, const char *name, char *buf, size_t len, bool upper) {
        ssize_t k = readlinkat(dirfd, name, buf, len);
        if (k < 0)
                return fail(s, errno, "cannot read symlink", upper ? UPPER : LOWER);
        if ((size_t) k >= len || (size_t) k >= PATH_MAX)
                return failx(s, ENAMETOOLONG, "symlink target too long:", upper ? UPPER : LOWER);
        buf[k] = '\0';
        return 0;
}

/* ---- the walk --------------------------------------------------------- */

static int scan_dir(scan *s, int ufd, int lfd, bool opaque, unsigned depth);

static int check_depth(scan *s, unsigned depth, bool upper) {
        if (depth > s->max_depth)
                return failx(s, ELOOP, "directory tree deeper than the limit at", upper ? UPPER : LOWER);
        return 0;
}

/* Counts the entries below a lower dir, recursively. */
static int count_below(scan *s, int dirfd, const char *name, unsigned depth, uint64_t *count) {
        int r = check_depth(s, depth, false);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = xopenat(dirfd, name, DIR_FLAGS);
        if (fd < 0)
                return fail(s, fd, "cannot open a directory below deleted", LOWER);
        names ns = { 0 };
        r = read_names(s, fd, false, &ns);
        if (r < 0)
                return r;
        *count += ns.n;
        for (size_t i = 0; i < ns.n && r >= 0; i++) {
                unsigned char t = ns.v[i].d_type;
                if (t == DT_UNKNOWN) {
                        struct stat st;
                        int k = xfstatat(s, fd, ns.v[i].name, &st);
                        if (k == -ENOENT)
                                continue;
                        if (k < 0) {
                                r = fail(s, k, "cannot stat an entry below deleted", LOWER);
                                break;
                        }
                        t = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
                }
                if (t == DT_DIR)
                        r = count_below(s, fd, ns.v[i].name, depth + 1, count);
        }
        names_done(&ns);
        return r;
}

/* A lower entry that is gone: one change, with the size of its subtree. */
static int add_deleted(scan *s, int lfd, const char *name, const struct stat *lst, unsigned depth) {
        nsr_change c = { .kind = NSR_CHANGE_DELETED };
        fill_new(&c, lst);
        fill_old(&c, lst);
        if (S_ISDIR(lst->st_mode)) {
                int r = count_below(s, lfd, name, depth, &c.descendants);
                if (r < 0)
                        return r;
        }
        return add(s, &c);
}

/* A new upper entry with no lower counterpart (created), or one that
 * replaced a lower entry of another type (lst != NULL). Everything below a
 * new dir is created too. */
static int add_new(scan *s, int ufd, int lfd, const char *name, const struct stat *ust, const struct stat *lst,
                   unsigned depth) {
        nsr_change c = { .kind = lst ? NSR_CHANGE_TYPE_CHANGED : NSR_CHANGE_CREATED };
        int r;
        fill_new(&c, ust);
        if (lst) {
                fill_old(&c, lst);
                if (S_ISDIR(lst->st_mode)) {
                        r = count_below(s, lfd, name, depth, &c.descendants);
                        if (r < 0)
                                return r;
                }
        }
        if (S_ISLNK(ust->st_mode)) {
                r = read_target(s, ufd, name, s->buf_a, XATTR_BUF_SIZE, true);
                if (r < 0)
                        return r;
                c.target = s->buf_a;
        }
        r = add(s, &c);
        if (r < 0 || !S_ISDIR(ust->st_mode))
                return r;

        r = check_depth(s, depth, true);
        if (r < 0)
                return r;
        fixup fx;
        _cleanup_close_ int sub = fixup_open(s, ufd, name, ust, DIR_FLAGS, &fx);
        if (sub < 0)
                r = fail(s, sub, "cannot open", UPPER);
        else
                r = scan_dir(s, sub, -1, false, depth);
        int k = fixup_restore(s, &fx);
        return r < 0 ? r : k;
}

static int add_meta_or_drop(scan *s, const struct stat *ust, const struct stat *lst, unsigned meta, char *target) {
        if (meta == 0)
                return 0; /* a copy-up that changed nothing */
        nsr_change c = { .kind = NSR_CHANGE_METADATA_CHANGED, .meta = meta };
        fill_new(&c, ust);
        fill_old(&c, lst);
        c.target = target;
        return add(s, &c);
}

static int compare_dirs(scan *s, int ufd, int lfd, const char *name, const struct stat *ust, const struct stat *lst,
                        bool same, unsigned depth) {
        int r = check_depth(s, depth, true);
        if (r < 0)
                return r;
        fixup fx;
        _cleanup_close_ int usub = fixup_open(s, ufd, name, ust, DIR_FLAGS, &fx);
        _cleanup_close_ int lsub = -1;
        bool opaque = false, xd = false;
        if (usub < 0) {
                r = fail(s, usub, "cannot open", UPPER);
                goto out;
        }
        lsub = xopenat(lfd, name, DIR_FLAGS);
        if (lsub < 0) {
                r = fail(s, lsub, "cannot open", LOWER);
                goto out;
        }
        if (s->trees)
                /* Two plain trees: whatever lower has and upper lacks was
                 * deleted, as below an opaque dir. */
                opaque = true;
        else {
                r = has_xattr(s, usub, REDIRECT_XATTR);
                if (r > 0)
                        r = failx(s, EPROTO, "a redirected dir (" REDIRECT_XATTR ") is not supported:", UPPER);
                if (r < 0)
                        goto out;
                r = is_opaque(s, usub, &opaque);
                if (r < 0)
                        goto out;
        }
        if (!same) {
                r = xattrs_differ(s, &(xside){ .fd = usub, .upper = true }, &(xside){ .fd = lsub }, &xd);
                if (r < 0)
                        goto out;
                r = add_meta_or_drop(s, ust, lst, meta_diff(ust, lst) | (xd ? NSR_META_XATTRS : 0), NULL);
                if (r < 0)
                        goto out;
        }
        r = scan_dir(s, usub, lsub, opaque, depth);
out:;
        int k = fixup_restore(s, &fx);
        return r < 0 ? r : k;
}

/* 1 if the contents differ, 0 if not. */
static int contents_differ(scan *s, int ufd, int lfd) {
        for (;;) {
                int a = nsr_read_full(ufd, s->buf_a, CMP_CHUNK);
                if (a < 0)
                        return fail(s, a, "cannot read", UPPER);
                int b = nsr_read_full(lfd, s->buf_b, CMP_CHUNK);
                if (b < 0)
                        return fail(s, b, "cannot read", LOWER);
                s->st.bytes_compared += (uint64_t) a;
                if (a != b || memcmp(s->buf_a, s->buf_b, (size_t) a) != 0)
                        return 1;
                if (a < CMP_CHUNK)
                        return 0;
        }
}

static int compare_files(scan *s, int ufd, int lfd, const char *name, const struct stat *ust, const struct stat *lst) {
        fixup fx;
        struct stat fst;
        bool differ, xd = false;
        unsigned meta;
        _cleanup_close_ int uf = fixup_open(s, ufd, name, ust, FILE_FLAGS, &fx);
        _cleanup_close_ int lf = -1;
        int r;
        if (uf < 0) {
                r = fail(s, uf, "cannot open", UPPER);
                goto out;
        }
        /* With metacopy the upper file holds no data: comparing it with
         * lower would report a bogus change. userxattr forbids metacopy, so
         * seeing it means something else wrote this upper dir. */
        r = s->trees ? 0 : has_xattr(s, uf, METACOPY_XATTR);
        if (r > 0)
                r = failx(s, EPROTO, "a metacopy file (" METACOPY_XATTR ") is not supported:", UPPER);
        if (r < 0)
                goto out;

        differ = ust->st_size != lst->st_size;
        if (!differ) {
                lf = xopenat(lfd, name, FILE_FLAGS);
                if (lf < 0) {
                        r = fail(s, lf, "cannot open", LOWER);
                        goto out;
                }
                s->st.stat_calls++;
                if (fstat(lf, &fst) < 0) {
                        r = fail(s, errno, "cannot stat", LOWER);
                        goto out;
                }
                if (!S_ISREG(fst.st_mode) || !same_inode(&fst, lst)) {
                        r = failx(s, EAGAIN, "changed during the scan:", LOWER);
                        goto out;
                }
                r = contents_differ(s, uf, lf);
                if (r < 0)
                        goto out;
                differ = r > 0;
        }
        meta = meta_diff(ust, lst);
        if (differ) {
                nsr_change c = { .kind = NSR_CHANGE_MODIFIED, .meta = meta };
                fill_new(&c, ust);
                fill_old(&c, lst);
                r = add(s, &c);
                goto out;
        }
        r = xattrs_differ(s, &(xside){ .fd = uf, .upper = true }, &(xside){ .fd = lf }, &xd);
        if (r < 0)
                goto out;
        r = add_meta_or_drop(s, ust, lst, meta | (xd ? NSR_META_XATTRS : 0), NULL);
out:;
        int k = fixup_restore(s, &fx);
        return r < 0 ? r : k;
}

/* Symlinks and others (fifos, sockets, devices): nothing to open. */
static int compare_unopened(scan *s, int ufd, int lfd, const char *name, const struct stat *ust,
                            const struct stat *lst) {
        bool differ = false;
        _cleanup_free_ char *target = NULL;
        int r;
        if (S_ISLNK(ust->st_mode)) {
                r = read_target(s, ufd, name, s->buf_a, XATTR_BUF_SIZE, true);
                if (r < 0)
                        return r;
                r = read_target(s, lfd, name, s->buf_b, XATTR_BUF_SIZE, false);
                if (r < 0)
                        return r;
                differ = strcmp(s->buf_a, s->buf_b) != 0;
                /* Keep the target: buf_a is reused for xattrs below. */
                target = nsr_strdup(s->buf_a);
        } else
                differ = (ust->st_mode & S_IFMT) != (lst->st_mode & S_IFMT) ||
                         ((S_ISCHR(ust->st_mode) || S_ISBLK(ust->st_mode)) && ust->st_rdev != lst->st_rdev);

        unsigned meta = meta_diff(ust, lst);
        if (differ) {
                nsr_change c = { .kind = NSR_CHANGE_MODIFIED, .meta = meta, .target = target };
                fill_new(&c, ust);
                fill_old(&c, lst);
                return add(s, &c);
        }
        bool xd;
        r = xattrs_differ(s, &(xside){ .fd = -1, .dirfd = ufd, .name = name, .upper = true },
                          &(xside){ .fd = -1, .dirfd = lfd, .name = name }, &xd);
        if (r < 0)
                return r;
        return add_meta_or_drop(s, ust, lst, meta | (xd ? NSR_META_XATTRS : 0), target);
}

/* Trees mode: the entry is the one recorded before the command ran, and
 * nothing about it changed since (ctime moves with every change to the
 * inode's content or metadata and cannot be set from user space). */
static bool unchanged_since(const nsr_capture_prior *p, const struct stat *ust) {
        return p && p->dev == ust->st_dev && p->ino == ust->st_ino && ts_eq(&p->ctime, &ust->st_ctim);
}

static int scan_entry(scan *s, int ufd, int lfd, const char *name, unsigned depth) {
        struct stat ust, lst;
        bool have_lower = false;
        int r = xfstatat(s, ufd, name, &ust);
        if (r < 0)
                return fail(s, r, "cannot stat", UPPER);
        const nsr_capture_prior *p = s->prior ? s->prior(s->prior_userdata, s->path) : NULL;
        bool same = unchanged_since(p, &ust);
        if (same && !S_ISDIR(ust.st_mode))
                return 0; /* the snapshot has it as it is: not even a lookup there */
        if (lfd >= 0) {
                r = xfstatat(s, lfd, name, &lst);
                if (r >= 0)
                        have_lower = true;
                else if (r != -ENOENT)
                        return fail(s, r, "cannot stat", LOWER);
        }
        /* Whiteouts share one inode, so nlink says nothing here. A plain
         * tree has no whiteouts: a 0:0 device there is just a device. */
        if (!s->trees && is_whiteout(&ust))
                return have_lower ? add_deleted(s, lfd, name, &lst, depth) : 0;
        if (!have_lower)
                return add_new(s, ufd, -1, name, &ust, NULL, depth);
        if (nsr_entry_type_from_mode(ust.st_mode) != nsr_entry_type_from_mode(lst.st_mode))
                return add_new(s, ufd, lfd, name, &ust, &lst, depth);
        if (p) {
                /* A copy cannot always keep owner and mode (a user cannot
                 * chown): compare with the original's. */
                lst.st_mode = (lst.st_mode & S_IFMT) | (p->mode & 07777);
                lst.st_uid = p->uid;
                lst.st_gid = p->gid;
        }
        if (S_ISDIR(ust.st_mode))
                return compare_dirs(s, ufd, lfd, name, &ust, &lst, same, depth);
        if (S_ISREG(ust.st_mode))
                return compare_files(s, ufd, lfd, name, &ust, &lst);
        return compare_unopened(s, ufd, lfd, name, &ust, &lst);
}

/* ufd: an upper dir at depth (the root is 0); lfd: the lower dir of the
 * same path, or -1 when there is none. Entries inside are at depth + 1,
 * and a dir at a depth above max_depth is an error. */
static int scan_dir(scan *s, int ufd, int lfd, bool opaque, unsigned depth) {
        names un = { 0 }, ln = { 0 };
        int r = read_names(s, ufd, true, &un);
        if (r < 0)
                return r;
        if (un.n > 1) /* an empty dir has no array at all */
                qsort(un.v, un.n, sizeof(ent), ent_cmp);
        for (size_t i = 0; i < un.n && r >= 0; i++) {
                size_t saved;
                r = path_push(s, un.v[i].name, &saved);
                if (r < 0)
                        break;
                r = scan_entry(s, ufd, lfd, un.v[i].name, depth + 1);
                path_pop(s, saved);
        }
        /* An opaque dir hides its whole lower dir: whatever lower has and
         * upper does not was deleted. Only here is a lower dir listed. */
        if (r >= 0 && opaque && lfd >= 0) {
                r = read_names(s, lfd, false, &ln);
                if (r >= 0 && ln.n > 1)
                        qsort(ln.v, ln.n, sizeof(ent), ent_cmp);
                for (size_t i = 0; r >= 0 && i < ln.n; i++) {
                        const char *name = ln.v[i].name;
                        if (names_contain(&un, name))
                                continue;
                        size_t saved;
                        r = path_push(s, name, &saved);
                        if (r < 0)
                                break;
                        struct stat lst;
                        r = xfstatat(s, lfd, name, &lst);
                        if (r == -ENOENT)
                                r = 0; /* gone from the project meanwhile */
                        else if (r < 0)
                                r = fail(s, r, "cannot stat", LOWER);
                        else
                                r = add_deleted(s, lfd, name, &lst, depth + 1);
                        path_pop(s, saved);
                }
        }
        names_done(&un);
        names_done(&ln);
        return r;
}

/* The root's own mode (see root_prior in capture.h): a "." change. */
static int add_root_change(scan *s, const struct stat *ust, const struct stat *lst, const nsr_capture_prior *prior) {
        nsr_change c = { .path = (char *) NSR_CHANGESET_ROOT,
                         .kind = NSR_CHANGE_METADATA_CHANGED,
                         .type = NSR_ENTRY_DIR,
                         .meta = NSR_META_MODE };
        if (s->trees) {
                /* The live project against the snapshot's root. */
                if ((ust->st_mode & 07777) == (lst->st_mode & 07777))
                        return 0;
                fill_old(&c, lst);
                c.mode = ust->st_mode & 07777;
        } else {
                if (!prior || (ust->st_mode & 01777) == (prior->mode & 01777))
                        return 0;
                c.old = (nsr_entry_old){
                        .exists = true,
                        .type = NSR_ENTRY_DIR,
                        .mode = prior->mode & 07777,
                        .uid = prior->uid,
                        .gid = prior->gid,
                        .ctime = prior->ctime,
                        .dev = prior->dev,
                        .ino = prior->ino,
                };
                c.mode = (ust->st_mode & 01777) | (prior->mode & (S_ISUID | S_ISGID));
        }
        c.uid = c.old.uid;
        c.gid = c.old.gid;
        return nsr_changeset_add(s->cs, &c, s->err);
}

int nsr_capture_scan(int upper_dirfd, int lower_dirfd, const nsr_capture_opts *opts, nsr_changeset **ret,
                     nsr_error *err) {
        static const nsr_capture_opts defaults = { 0 };
        if (!opts)
                opts = &defaults;
        if (upper_dirfd < 0 || lower_dirfd < 0)
                return nsr_error_setx(err, EBADF, "capture: invalid upper or lower dir fd");
        if (opts->max_depth > NSR_CAPTURE_MAX_DEPTH_LIMIT)
                return nsr_error_setx(err, EINVAL, "capture: a maximum depth of %u is above the limit of %u",
                                      opts->max_depth, NSR_CAPTURE_MAX_DEPTH_LIMIT);

        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        cs->max_changes = opts->max_changes ? opts->max_changes : NSR_CAPTURE_MAX_CHANGES_DEFAULT;
        _cleanup_free_ scan *s = nsr_malloc0(sizeof(scan));
        bool trees = opts->flags & NSR_CAPTURE_TREES;
        *s = (scan){
                .cs = cs,
                .max_depth = opts->max_depth ? opts->max_depth : NSR_CAPTURE_MAX_DEPTH_DEFAULT,
                .flags = opts->flags,
                .err = err,
                .trees = trees,
                .layer = { trees ? "the project" : "the upper dir", trees ? "the snapshot" : "the project" },
                .prior = opts->prior,
                .prior_userdata = opts->prior_userdata,
        };
        _cleanup_free_ _unused_ char *buf_a = s->buf_a = nsr_malloc(XATTR_BUF_SIZE + 1);
        _cleanup_free_ _unused_ char *buf_b = s->buf_b = nsr_malloc(XATTR_BUF_SIZE + 1);
        _cleanup_free_ _unused_ char *list_a = s->list_a = nsr_malloc(XATTR_BUF_SIZE + 1);
        _cleanup_free_ _unused_ char *list_b = s->list_b = nsr_malloc(XATTR_BUF_SIZE + 1);

        struct stat ust, lst;
        int r = xfstatat(s, upper_dirfd, ".", &ust);
        if (r < 0)
                return fail(s, r, "cannot stat", UPPER);
        r = xfstatat(s, lower_dirfd, ".", &lst);
        if (r < 0)
                return fail(s, r, "cannot stat", LOWER);

        fixup fx;
        bool opaque = false;
        /* "." reopens the dirs for reading, whatever the callers' fds are. */
        _cleanup_close_ int ufd = fixup_open(s, upper_dirfd, ".", &ust, DIR_FLAGS, &fx);
        _cleanup_close_ int lfd = -1;
        if (ufd < 0) {
                r = fail(s, ufd, "cannot open", UPPER);
                goto out;
        }
        lfd = xopenat(lower_dirfd, ".", DIR_FLAGS);
        if (lfd < 0) {
                r = fail(s, lfd, "cannot open", LOWER);
                goto out;
        }
        if (trees)
                opaque = true;
        else if ((r = is_opaque(s, ufd, &opaque)) < 0)
                goto out;
        r = scan_dir(s, ufd, lfd, opaque, 0);
        if (r >= 0)
                r = add_root_change(s, &ust, &lst, opts->root_prior);
out:;
        int k = fixup_restore(s, &fx);
        if (r >= 0)
                r = k;
        if (opts->stats)
                *opts->stats = s->st;
        if (r < 0)
                return r;
        r = nsr_changeset_sort(cs, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(cs);
        return 0;
}

/* ---- the root's record ------------------------------------------------- */

#define ROOT_MAGIC "nsrun-root 1"

int nsr_capture_root_parse(const char *text, nsr_capture_prior *ret) {
        unsigned mode;
        unsigned long long uid, gid, dev, ino, sec, nsec;
        int used = -1;
        if (!text ||
            sscanf(text, ROOT_MAGIC " %o %llu %llu %llu %llu %llu %llu%n", &mode, &uid, &gid, &dev, &ino, &sec, &nsec,
                   &used) != 7 ||
            used < 0 || !streq(text + used, "\n") || mode > 07777 || uid > UINT32_MAX || gid > UINT32_MAX ||
            nsec >= 1000000000ull || sec > (unsigned long long) INT64_MAX)
                return -EINVAL;
        *ret = (nsr_capture_prior){
                .dev = (dev_t) dev,
                .ino = (ino_t) ino,
                .ctime = { .tv_sec = (time_t) sec, .tv_nsec = (long) nsec },
                .mode = (mode_t) mode,
                .uid = (uid_t) uid,
                .gid = (gid_t) gid,
        };
        return 0;
}

int nsr_capture_root_save(int dirfd, const char *name, const struct stat *st, nsr_error *err) {
        _cleanup_free_ char *text =
                nsr_asprintf(ROOT_MAGIC " %o %llu %llu %llu %llu %llu %llu\n", (unsigned) (st->st_mode & 07777),
                             (unsigned long long) st->st_uid, (unsigned long long) st->st_gid,
                             (unsigned long long) st->st_dev, (unsigned long long) st->st_ino,
                             (unsigned long long) st->st_ctim.tv_sec, (unsigned long long) st->st_ctim.tv_nsec);
        /* A new name renamed over the old: a reader sees one whole record. */
        int r = nsr_durable_write(dirfd, name, text, strlen(text), 0600, NSR_DURABLE_SPARE, err);
        return r < 0 ? nsr_error_prefix(err, "cannot record the project dir's mode") : 0;
}

int nsr_capture_root_load(int dirfd, const char *name, nsr_capture_prior *ret) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = nsr_read_all(fd, 256, &text, &len);
        if (r < 0)
                return r;
        if (strlen(text) != len)
                return -EINVAL;
        return nsr_capture_root_parse(text, ret);
}
