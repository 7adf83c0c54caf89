/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "base/dirent.h"
#include "base/syscalls.h"
#include "base/util.h"
#include "txn/txnfs.h"

#define RESOLVE_FLAGS   (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define XATTR_NAMES_MAX 65536
#define XATTR_VALUE_MAX 65536

/* ---- encoding ------------------------------------------------------------ */

uint32_t nsr_crc32(uint32_t crc, const void *p, size_t n) {
        /* Half-byte table of the reflected IEEE polynomial 0xEDB88320. */
        static const uint32_t t[16] = {
                0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4, 0x4DB26158, 0x5005713C,
                0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C, 0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C,
        };
        const unsigned char *s = p;
        crc = ~crc;
        for (size_t i = 0; i < n; i++) {
                crc = (crc >> 4) ^ t[(crc ^ s[i]) & 15];
                crc = (crc >> 4) ^ t[(crc ^ (uint32_t) (s[i] >> 4)) & 15];
        }
        return ~crc;
}

/* ---- lookups --------------------------------------------------------------- */

int nsr_txnfs_open(int rootfd, const char *path, int flags) {
        if (!path || !*path)
                path = ".";
        /* With O_DIRECTORY, RESOLVE_NO_SYMLINKS alone makes a symlink in the
         * last component fail with ELOOP (O_NOFOLLOW would open the link
         * itself and fail with ENOTDIR, hiding what happened). */
        if (!(flags & O_DIRECTORY))
                flags |= O_NOFOLLOW;
        for (unsigned tries = 0;; tries++) {
                int fd = nsr_openat2(rootfd, path, (uint64_t) (flags | O_CLOEXEC), RESOLVE_FLAGS);
                if (fd >= 0)
                        return fd;
                /* EAGAIN (a rename raced with the lookup) is retried by
                 * nsr_openat2 itself. */
                if (errno == EINTR && tries < 64)
                        continue;
                return -errno;
        }
}

int nsr_txnfs_open_parent(int rootfd, const char *path, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        if (!slash) {
                *ret_name = path;
                return nsr_txnfs_open(rootfd, "", O_PATH | O_DIRECTORY);
        }
        _cleanup_free_ char *dir = nsr_strndup(path, (size_t) (slash - path));
        int fd = nsr_txnfs_open(rootfd, dir, O_PATH | O_DIRECTORY);
        if (fd >= 0)
                *ret_name = slash + 1;
        return fd;
}

int nsr_txnfs_open_parent_mkdir(int rootfd, const char *path, const char **ret_name) {
        int fd = nsr_txnfs_open_parent(rootfd, path, ret_name);
        if (fd != -ENOENT)
                return fd;
        _cleanup_close_ int cur = nsr_txnfs_open(rootfd, "", O_PATH | O_DIRECTORY);
        if (cur < 0)
                return cur;
        const char *s = path;
        for (;;) {
                const char *e = strchr(s, '/');
                if (!e)
                        break;
                _cleanup_free_ char *comp = nsr_strndup(s, (size_t) (e - s));
                if (mkdirat(cur, comp, 0700) < 0 && errno != EEXIST)
                        return -errno;
                int next = nsr_txnfs_open(cur, comp, O_PATH | O_DIRECTORY);
                if (next < 0)
                        return next;
                close(cur);
                cur = next;
                s = e + 1;
        }
        *ret_name = s;
        return TAKE_FD(cur);
}

int nsr_txnfs_mnt_id(int fd, uint64_t *ret) {
        struct statx stx;
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        *ret = stx.stx_mnt_id;
        return 0;
}

void nsr_txnfs_fd_path(int fd, char *buf, size_t len) {
        snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* ---- changes ----------------------------------------------------------------- */

static int rename_once(int olddir, const char *oldname, int newdir, const char *newname, unsigned flags) {
        if (renameat2(olddir, oldname, newdir, newname, flags) == 0)
                return 0;
        if (errno == EINVAL && flags == RENAME_NOREPLACE) {
                /* A file system without RENAME_NOREPLACE: check, then rename.
                 * We hold the project lock, so only the host can race us. */
                struct stat st;
                if (fstatat(newdir, newname, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return -EEXIST;
                if (errno != ENOENT)
                        return -errno;
                if (renameat(olddir, oldname, newdir, newname) == 0)
                        return 0;
        }
        return -errno;
}

typedef struct writable {
        int fd; /* O_PATH */
        mode_t mode;
} writable;

/* If fd (or dirfd/name) is a dir of ours without u+w, adds u+w and
 * remembers the old mode in *w. */
static void make_writable(int dirfd, const char *name, writable *w) {
        *w = (writable){ .fd = -1 };
        int fd = name ? openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        struct stat st;
        if (fd < 0)
                return;
        if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & S_IWUSR) ||
            nsr_txnfs_fd_chmod(fd, (st.st_mode & 07777) | S_IWUSR) < 0) {
                close(fd);
                return;
        }
        *w = (writable){ .fd = fd, .mode = st.st_mode & 07777 };
}

int nsr_txnfs_rename(int olddir, const char *oldname, int newdir, const char *newname, unsigned flags) {
        int r = rename_once(olddir, oldname, newdir, newname, flags);
        if (r != -EACCES || geteuid() == 0)
                return r;
        /* Moving a dir to another parent rewrites its "..", which needs
         * write access to the dir itself, and both parents need it too. A
         * sandbox may well leave a read-only dir (chmod -R a-w, an unpacked
         * archive): we own it, so add u+w for the rename only. A crash in
         * between leaves the u+w; nothing else. */
        writable w[4];
        make_writable(olddir, NULL, &w[0]);
        make_writable(newdir, NULL, &w[1]);
        make_writable(olddir, oldname, &w[2]);
        if (flags & RENAME_EXCHANGE)
                make_writable(newdir, newname, &w[3]);
        else
                w[3] = (writable){ .fd = -1 };
        r = rename_once(olddir, oldname, newdir, newname, flags);
        for (size_t i = ELEMENTSOF(w); i-- > 0;)
                if (w[i].fd >= 0) {
                        (void) nsr_txnfs_fd_chmod(w[i].fd, w[i].mode);
                        close(w[i].fd);
                }
        return r;
}

/* nsrun's one rm -rf. It removes trees a sandboxed command wrote (upper
 * dirs, run dirs, backups), so nothing in them is trusted:
 * - no symlink is followed: each entry is pinned by an O_PATH|O_NOFOLLOW
 *   fd, checked to be a dir through that fd, made u+rwx through that fd
 *   (nsr_txnfs_fd_chmod, never a chmod of a path that may have become a
 *   symlink in the meantime) and read through a new open of that fd, so an
 *   entry swapped for a symlink after the lstat changes and reads nothing
 *   outside the tree;
 * - dirs of ours without u+rwx (a sandbox may leave 000 dirs) get it first;
 * - the recursion is bounded (every level holds an open dir), but the tree
 *   is not: a dir deeper than NSR_TXNFS_MAX_DEPTH is moved up into the top
 *   dir and removed from there on another pass, so a command cannot make
 *   its run impossible to remove (and stop gc) by nesting dirs deeply;
 * - it goes on past an entry it cannot remove and reports the first error,
 *   so a failure leaves as little behind as it can. */
typedef struct rm_ctx {
        int top;        /* the dir being removed, once it is open */
        uint64_t moved; /* subtrees moved up into top in this pass */
        uint64_t serial;
} rm_ctx;

/* Passes over the top dir: each one takes NSR_TXNFS_MAX_DEPTH - 1 levels
 * off every subtree that was moved up. */
#define RM_MAX_PASSES 65536u

static int move_up(rm_ctx *c, int parent, const char *name) {
        for (unsigned tries = 0; tries < 64; tries++) {
                char n[48];
                snprintf(n, sizeof(n), ".nsrun-rm-%" PRIu64, c->serial++);
                int r = nsr_txnfs_rename(parent, name, c->top, n, RENAME_NOREPLACE);
                if (r == 0)
                        c->moved++;
                if (r != -EEXIST)
                        return r;
        }
        return -EEXIST;
}

static int rm_rec(rm_ctx *c, int parent, const char *name, unsigned depth) {
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (depth >= NSR_TXNFS_MAX_DEPTH)
                return move_up(c, parent, name);
        _cleanup_close_ int pfd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(pfd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                /* Swapped since the lstat: whatever it is now, it is not a
                 * dir to enter, only an entry to remove. */
                return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (st.st_uid == geteuid() && (st.st_mode & 0700) != 0700)
                (void) nsr_txnfs_fd_chmod(pfd, (st.st_mode & 07777) | 0700);
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(pfd, ".", 0, &d);
        if (r < 0)
                return r;
        pfd = safe_close(pfd); /* one fd per level, not two */
        if (depth == 0)
                c->top = dirfd(d);
        for (unsigned pass = 0;; pass++) {
                c->moved = 0;
                FOREACH_DIRENT(de, d, r = r < 0 ? r : -errno) {
                        int k = rm_rec(c, dirfd(d), de->d_name, depth + 1);
                        if (k < 0 && r == 0)
                                r = k;
                }
                /* What was moved up may not have been listed by this pass. */
                if (depth > 0 || c->moved == 0 || r < 0)
                        break;
                if (pass + 1 >= RM_MAX_PASSES) {
                        r = -ELOOP;
                        break;
                }
                rewinddir(d);
        }
        if (depth == 0)
                c->top = -1;
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

int nsr_txnfs_rm_rf(int dirfd, const char *name) {
        rm_ctx c = { .top = -1 };
        return rm_rec(&c, dirfd, name, 0);
}

static int prune_rec(int parent, const char *name, bool *kept, unsigned depth) {
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode)) {
                *kept = true;
                return 0;
        }
        if (depth >= NSR_TXNFS_MAX_DEPTH)
                return -ELOOP;
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(parent, name, O_NOFOLLOW, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d, r = -errno) {
                r = prune_rec(dirfd(d), de->d_name, kept, depth + 1);
                if (r < 0)
                        break;
        }
        if (r < 0)
                return r;
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
                return -errno;
        return 0;
}

int nsr_txnfs_prune_empty(int dirfd, const char *name, bool *ret_kept) {
        bool kept = false;
        int r = prune_rec(dirfd, name, &kept, 0);
        if (ret_kept)
                *ret_kept = kept;
        return r;
}

/* ---- xattrs --------------------------------------------------------------------- */

int nsr_txnfs_fd_chmod(int fd, mode_t mode) {
        /* An O_PATH|O_NOFOLLOW fd may be a symlink's own: never a mode
         * change through one, whatever the kernel would make of it. */
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        /* fchmod() refuses O_PATH fds; the magic link reaches the inode the
         * fd was opened on, whatever now sits at its old path. */
        char p[64];
        nsr_txnfs_fd_path(fd, p, sizeof(p));
        return chmod(p, mode) < 0 ? -errno : 0;
}

int nsr_txnfs_fd_setxattr(int fd, const char *name, const char *value, size_t len) {
        char p[64];
        nsr_txnfs_fd_path(fd, p, sizeof(p));
        if (value)
                return setxattr(p, name, value, len, 0) < 0 ? -errno : 0;
        if (removexattr(p, name) < 0 && errno != ENODATA)
                return -errno;
        return 0;
}

/* The xattr names of the inode behind an O_PATH fd (not a symlink), as a
 * NUL-separated list. */
static int list_names(int fd, char **ret, size_t *ret_len) {
        char p[64];
        nsr_txnfs_fd_path(fd, p, sizeof(p));
        for (unsigned tries = 0; tries < 8; tries++) {
                ssize_t n = listxattr(p, NULL, 0);
                if (n < 0) {
                        if (errno == ENOTSUP) {
                                *ret = NULL;
                                *ret_len = 0;
                                return 0;
                        }
                        return -errno;
                }
                if (n > XATTR_NAMES_MAX)
                        return -E2BIG;
                _cleanup_free_ char *buf = nsr_malloc0((size_t) n + 1);
                ssize_t k = n ? listxattr(p, buf, (size_t) n) : 0;
                if (k < 0) {
                        if (errno == ERANGE)
                                continue;
                        return -errno;
                }
                *ret_len = (size_t) k;
                *ret = TAKE_PTR(buf);
                return 0;
        }
        return -EAGAIN;
}

static int get_value(const char *p, const char *name, char **ret, size_t *ret_len) {
        for (unsigned tries = 0; tries < 8; tries++) {
                ssize_t n = getxattr(p, name, NULL, 0);
                if (n < 0)
                        return -errno;
                if (n > XATTR_VALUE_MAX)
                        return -E2BIG;
                _cleanup_free_ char *buf = nsr_malloc0((size_t) n + 1);
                ssize_t k = n ? getxattr(p, name, buf, (size_t) n) : 0;
                if (k < 0) {
                        if (errno == ERANGE)
                                continue;
                        return -errno;
                }
                *ret_len = (size_t) k;
                *ret = TAKE_PTR(buf);
                return 0;
        }
        return -EAGAIN;
}

void nsr_txnfs_xattrs_free(nsr_xattr *x, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(x[i].name);
                free(x[i].value);
        }
        free(x);
}

static int xattr_cmp(const void *a, const void *b) {
        return strcmp(((const nsr_xattr *) a)->name, ((const nsr_xattr *) b)->name);
}

/* Which xattrs a copy carries over. */
static bool copy_wanted(const char *name, bool faithful) {
        if (nsr_startswith(name, "user."))
                return faithful || !nsr_startswith(name, "user.overlay.");
        if (streq(name, "system.posix_acl_access") || streq(name, "system.posix_acl_default"))
                return true;
        return faithful && streq(name, "security.capability") && geteuid() == 0;
}

/* Reads the xattrs of an O_PATH fd (not a symlink) that pred accepts. */
static int read_xattrs(int fd, bool (*pred)(const char *name, bool arg), bool arg, nsr_xattr **ret, size_t *ret_n) {
        _cleanup_free_ char *names = NULL;
        size_t len = 0;
        int r = list_names(fd, &names, &len);
        if (r < 0)
                return r;
        char p[64];
        nsr_txnfs_fd_path(fd, p, sizeof(p));
        nsr_xattr *v = NULL;
        size_t n = 0;
        for (size_t o = 0; o < len; o += strlen(names + o) + 1) {
                const char *name = names + o;
                if (!pred(name, arg))
                        continue;
                char *value = NULL;
                size_t vlen = 0;
                r = get_value(p, name, &value, &vlen);
                if (r == -ENODATA)
                        continue;
                if (r < 0) {
                        nsr_txnfs_xattrs_free(v, n);
                        return r;
                }
                v = nsr_realloc_array(v, n + 1, sizeof(*v));
                v[n++] = (nsr_xattr){ .name = nsr_strdup(name), .value = value, .len = vlen };
        }
        if (n > 1)
                qsort(v, n, sizeof(*v), xattr_cmp);
        *ret = v;
        *ret_n = n;
        return 0;
}

static bool user_pred(const char *name, bool arg) {
        (void) arg;
        return nsr_startswith(name, "user.") && !nsr_startswith(name, "user.overlay.");
}

int nsr_txnfs_user_xattrs(int dirfd, const char *name, nsr_xattr **ret, size_t *ret_n) {
        _cleanup_close_ int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode)) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        return read_xattrs(fd, user_pred, false, ret, ret_n);
}

/* Runs a change on an O_PATH fd of our own entry; if the kernel says EACCES
 * (a user.* xattr needs write access, the sandbox may have made the entry
 * read-only) it adds u+w for the duration. */
static int removexattr_forcing(int fd, const struct stat *st, const char *name) {
        int r = nsr_txnfs_fd_setxattr(fd, name, NULL, 0);
        if (r != -EACCES || st->st_uid != geteuid())
                return r;
        mode_t m = st->st_mode & 07777;
        r = nsr_txnfs_fd_chmod(fd, m | S_IWUSR);
        if (r < 0)
                return r;
        r = nsr_txnfs_fd_setxattr(fd, name, NULL, 0);
        int k = nsr_txnfs_fd_chmod(fd, m);
        return r < 0 ? r : k;
}

int nsr_txnfs_sanitize(int dirfd, const char *name, const struct stat *st) {
        if (S_ISLNK(st->st_mode))
                return 0; /* no mode bits, and user.* cannot be set on symlinks */
        _cleanup_close_ int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat now;
        if (fstat(fd, &now) < 0)
                return -errno;
        if (now.st_ino != st->st_ino || now.st_dev != st->st_dev)
                return -ESTALE;
        if (now.st_mode & (S_ISUID | S_ISGID)) {
                int r = nsr_txnfs_fd_chmod(fd, now.st_mode & 07777 & ~(mode_t) (S_ISUID | S_ISGID));
                if (r < 0)
                        return r;
                now.st_mode &= ~(mode_t) (S_ISUID | S_ISGID);
        }
        _cleanup_free_ char *names = NULL;
        size_t len = 0;
        int r = list_names(fd, &names, &len);
        if (r < 0)
                return r;
        for (size_t o = 0; o < len; o += strlen(names + o) + 1) {
                const char *x = names + o;
                if (nsr_startswith(x, "user.overlay.")) {
                        r = removexattr_forcing(fd, &now, x);
                        if (r < 0)
                                return r;
                } else if (streq(x, "security.capability")) {
                        r = nsr_txnfs_fd_setxattr(fd, x, NULL, 0);
                        if (r == -EPERM) {
                                /* Without CAP_SETFCAP: a chown that changes
                                 * nothing still makes the kernel drop file
                                 * capabilities (ATTR_KILL_PRIV). */
                                if (fchownat(fd, "", (uid_t) -1, (gid_t) -1, AT_EMPTY_PATH) < 0)
                                        return -errno;
                                char p[64];
                                nsr_txnfs_fd_path(fd, p, sizeof(p));
                                r = getxattr(p, x, NULL, 0) < 0 && errno == ENODATA ? 0 : -EPERM;
                        }
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- copies ------------------------------------------------------------------------ */

/* Opens name for reading; if it is ours but unreadable (the sandbox may
 * chmod its files to 000), adds the missing u+r(x) for the open only. */
static int open_forcing(int dirfd, const char *name, int flags, const struct stat *st) {
        int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0 || errno != EACCES || st->st_uid != geteuid())
                return fd >= 0 ? fd : -errno;
        _cleanup_close_ int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        mode_t m = st->st_mode & 07777;
        mode_t need = S_ISDIR(st->st_mode) ? S_IRUSR | S_IXUSR : S_IRUSR;
        int r = nsr_txnfs_fd_chmod(pfd, m | need);
        if (r < 0)
                return r;
        char p[64];
        nsr_txnfs_fd_path(pfd, p, sizeof(p));
        fd = open(p, flags | O_CLOEXEC | O_NOCTTY);
        int e = fd < 0 ? -errno : 0;
        r = nsr_txnfs_fd_chmod(pfd, m);
        if (e < 0) {
                return e;
        }
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

static bool copy_pred(const char *name, bool faithful) {
        return copy_wanted(name, faithful);
}

/* Owner (root only), mode, xattrs and times, in the order the kernel needs:
 * chown clears setuid and file capabilities, so it comes first. dst is an
 * O_PATH fd of a non-symlink; src an O_PATH fd of the original. */
static int copy_meta(int src, int dst, const struct stat *st, bool faithful) {
        if (geteuid() == 0 && fchownat(dst, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) < 0)
                return -errno;
        mode_t m = st->st_mode & 07777;
        if (!faithful)
                m &= ~(mode_t) (S_ISUID | S_ISGID);
        int r = nsr_txnfs_fd_chmod(dst, m);
        if (r < 0)
                return r;
        nsr_xattr *x = NULL;
        size_t n = 0;
        r = read_xattrs(src, copy_pred, faithful, &x, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                r = nsr_txnfs_fd_setxattr(dst, x[i].name, x[i].value, x[i].len);
                /* A file system without xattrs (or ACLs) on the other side:
                 * the content matters more than the attribute. */
                if (r == -EOPNOTSUPP)
                        r = 0;
        }
        nsr_txnfs_xattrs_free(x, n);
        if (r < 0)
                return r;
        char p[64];
        nsr_txnfs_fd_path(dst, p, sizeof(p));
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        return utimensat(AT_FDCWD, p, ts, 0) < 0 ? -errno : 0;
}

int nsr_txnfs_copy_data(int sfd, int dfd, bool plain, uint64_t *ret_total) {
        uint64_t total = 0;
        int r = 0;
        while (!plain) {
                ssize_t k = copy_file_range(sfd, NULL, dfd, NULL, (size_t) 1 << 30, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (total == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                                           errno == EOPNOTSUPP || errno == EBADF))
                                plain = true;
                        else
                                r = -errno;
                } else if (k > 0) {
                        total += (uint64_t) k;
                        continue;
                }
                break;
        }
        if (plain) {
                _cleanup_free_ char *buf = nsr_malloc0(128 * 1024);
                for (;;) {
                        ssize_t k = read(sfd, buf, 128 * 1024);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0) {
                                r = k < 0 ? -errno : 0;
                                break;
                        }
                        r = nsr_write_all(dfd, buf, (size_t) k);
                        if (r < 0)
                                break;
                        total += (uint64_t) k;
                }
        }
        if (ret_total)
                *ret_total = total;
        return r;
}

static int copy_rec(int srcdir, const char *srcname, int dstdir, const char *dstname, bool faithful, uint64_t *count,
                    unsigned depth);

static int copy_dir(int srcdir, const char *srcname, int dstdir, const char *dstname, const struct stat *st,
                    bool faithful, uint64_t *count, unsigned depth) {
        if (depth >= NSR_TXNFS_MAX_DEPTH)
                return -ELOOP;
        if (mkdirat(dstdir, dstname, 0700) < 0)
                return -errno;
        _cleanup_close_ int dfd = openat(dstdir, dstname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        int sfd = open_forcing(srcdir, srcname, O_RDONLY | O_DIRECTORY, st);
        if (sfd < 0)
                return sfd;
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_fdopendir(sfd, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d, r = -errno) {
                r = copy_rec(dirfd(d), de->d_name, dfd, de->d_name, faithful, count, depth + 1);
                if (r < 0)
                        break;
        }
        if (r < 0)
                return r;
        _cleanup_close_ int spath = openat(srcdir, srcname, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (spath < 0)
                return -errno;
        /* Times last: adding the children changed the new dir's mtime. */
        return copy_meta(spath, dfd, st, faithful);
}

static int copy_file(int srcdir, const char *srcname, int dstdir, const char *dstname, const struct stat *st,
                     bool faithful) {
        _cleanup_close_ int sfd = open_forcing(srcdir, srcname, O_RDONLY, st);
        if (sfd < 0)
                return sfd;
        _cleanup_close_ int dfd =
                openat(dstdir, dstname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (dfd < 0)
                return -errno;
        int r = nsr_txnfs_copy_data(sfd, dfd, false, NULL);
        if (r < 0)
                return r;
        return copy_meta(sfd, dfd, st, faithful);
}

static int copy_symlink(int srcdir, const char *srcname, int dstdir, const char *dstname, const struct stat *st) {
        char target[PATH_MAX + 1];
        ssize_t n = readlinkat(srcdir, srcname, target, sizeof(target));
        if (n < 0)
                return -errno;
        if ((size_t) n >= sizeof(target))
                return -ENAMETOOLONG;
        target[n] = '\0';
        if (symlinkat(target, dstdir, dstname) < 0)
                return -errno;
        if (geteuid() == 0 && fchownat(dstdir, dstname, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        return utimensat(dstdir, dstname, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int copy_special(int srcdir, const char *srcname, int dstdir, const char *dstname, const struct stat *st,
                        bool faithful) {
        dev_t rdev = 0;
        if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
                if (!faithful || geteuid() != 0)
                        return -EPERM;
                rdev = st->st_rdev;
        }
        if (mknodat(dstdir, dstname, (st->st_mode & S_IFMT) | 0600, rdev) < 0)
                return -errno;
        _cleanup_close_ int spath = openat(srcdir, srcname, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int dpath = openat(dstdir, dstname, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (spath < 0 || dpath < 0)
                return -errno;
        return copy_meta(spath, dpath, st, faithful);
}

static int copy_rec(int srcdir, const char *srcname, int dstdir, const char *dstname, bool faithful, uint64_t *count,
                    unsigned depth) {
        struct stat st;
        if (fstatat(srcdir, srcname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (count)
                (*count)++;
        if (S_ISDIR(st.st_mode))
                return copy_dir(srcdir, srcname, dstdir, dstname, &st, faithful, count, depth);
        if (S_ISREG(st.st_mode))
                return copy_file(srcdir, srcname, dstdir, dstname, &st, faithful);
        if (S_ISLNK(st.st_mode))
                return copy_symlink(srcdir, srcname, dstdir, dstname, &st);
        return copy_special(srcdir, srcname, dstdir, dstname, &st, faithful);
}

int nsr_txnfs_copy(int srcdir, const char *srcname, int dstdir, const char *dstname, bool faithful, uint64_t *count) {
        return copy_rec(srcdir, srcname, dstdir, dstname, faithful, count, 0);
}

/* ---- walks ---------------------------------------------------------------------------- */

typedef struct walk_ctx {
        nsr_txnfs_walk_fn fn;
        void *userdata;
        unsigned flags;
        uint64_t count;
        char rel[PATH_MAX];
} walk_ctx;

static int walk_rec(walk_ctx *w, int dirfd, const char *name, size_t rel_len, unsigned depth) {
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (++w->count > NSR_TXNFS_MAX_ENTRIES)
                return -E2BIG;
        int r = w->fn(dirfd, name, w->rel, &st, w->userdata);
        if (r < 0)
                return r;
        if (r == 1 || !S_ISDIR(st.st_mode))
                return 0;
        if (depth >= NSR_TXNFS_MAX_DEPTH)
                return -ELOOP;
        /* The callback may have changed the mode (sanitize): stat again. */
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        int fd;
        if (w->flags & NSR_TXNFS_WALK_FORCE)
                fd = open_forcing(dirfd, name, O_RDONLY | O_DIRECTORY, &st);
        else {
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        fd = -errno;
        }
        if (fd == -EACCES && (w->flags & NSR_TXNFS_WALK_SKIP_UNREADABLE))
                return 0;
        if (fd < 0)
                return fd;
        _cleanup_closedir_ DIR *d = NULL;
        r = nsr_fdopendir(fd, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d, r = -errno) {
                size_t l = strlen(de->d_name);
                size_t sep = rel_len > 0 ? 1 : 0;
                if (rel_len + sep + l >= sizeof(w->rel)) {
                        r = -ENAMETOOLONG;
                        break;
                }
                if (sep)
                        w->rel[rel_len] = '/';
                memcpy(w->rel + rel_len + sep, de->d_name, l + 1);
                r = walk_rec(w, fd, de->d_name, rel_len + sep + l, depth + 1);
                w->rel[rel_len] = '\0';
                if (r < 0)
                        break;
        }
        return r;
}

int nsr_txnfs_walk(int dirfd, const char *name, const char *rel, unsigned flags, nsr_txnfs_walk_fn fn, void *userdata) {
        _cleanup_free_ walk_ctx *w = nsr_malloc0(sizeof(*w));
        size_t l = strlen(rel);
        if (l >= sizeof(w->rel))
                return -ENAMETOOLONG;
        memcpy(w->rel, rel, l + 1);
        w->fn = fn;
        w->userdata = userdata;
        w->flags = flags;
        return walk_rec(w, dirfd, name, l, 0);
}

/* ---- run-dir helpers --------------------------------------------------------------- */

char *nsr_txnfs_abs_path(int fd) {
        char p[64], buf[PATH_MAX];
        nsr_txnfs_fd_path(fd, p, sizeof(p));
        ssize_t n = readlink(p, buf, sizeof(buf) - 1);
        if (n <= 0 || buf[0] != '/')
                return NULL;
        buf[n] = '\0';
        return nsr_strdup(buf);
}

int nsr_txnfs_mkdir_open(int dirfd, const char *rel) {
        _cleanup_free_ char *p = nsr_strdup(rel);
        for (char *s = p;; s++) {
                if (*s != '/' && *s)
                        continue;
                char c = *s;
                *s = '\0';
                if (mkdirat(dirfd, p, 0700) < 0 && errno != EEXIST)
                        return -errno;
                *s = c;
                if (!c)
                        break;
        }
        int fd = openat(dirfd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int nsr_txnfs_move_aside(int fromdir, const char *from, int todir, const char *to, uint64_t *copied) {
        int r = nsr_txnfs_rename(fromdir, from, todir, to, RENAME_NOREPLACE);
        if (r != -EXDEV)
                return r;
        r = nsr_txnfs_copy(fromdir, from, todir, to, true, copied);
        if (r < 0) {
                (void) nsr_txnfs_rm_rf(todir, to);
                return r;
        }
        return nsr_txnfs_rm_rf(fromdir, from);
}
