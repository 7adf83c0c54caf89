/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "base/dirent.h"
#include "base/utf8.h"
#include "project/snapshot.h"
#include "txn/txnfs.h"

#define COPY_ATTEMPTS   3
#define XATTR_LIST_BUF  65536
#define XATTR_VALUE_BUF 65536

typedef struct record {
        uint64_t hash;
        bool ambiguous; /* another path has the same hash: no record */
        nsr_capture_prior prior;
} record;

struct nsr_snapshot {
        record *v;
        size_t n, n_allocated;
        nsr_snapshot_stats stats;
};

typedef struct walk {
        nsr_snapshot *s;
        const nsr_snapshot_opts *o;
        uint64_t limit;
        size_t max_entries;
        nsr_error *err;
        bool try_reflink;
        bool root;
        char rel[PATH_MAX];
        size_t rel_len;
        char *probe;        /* scan: the first non-empty file, for the reflink probe */
        char *list, *value; /* xattr buffers */
} walk;

nsr_snapshot *nsr_snapshot_free(nsr_snapshot *s) {
        if (!s)
                return NULL;
        free(s->v);
        free(s);
        return NULL;
}

const nsr_snapshot_stats *nsr_snapshot_stats_of(const nsr_snapshot *s) {
        return &s->stats;
}

/* FNV-1a: paths are looked up by this hash only; two paths that share one
 * are both left without a record (which only costs a content compare). */
static uint64_t path_hash(const char *s) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= UINT64_C(1099511628211);
        }
        return h;
}

static int record_cmp(const void *a, const void *b) {
        uint64_t x = ((const record *) a)->hash, y = ((const record *) b)->hash;
        return x < y ? -1 : x > y;
}

static void add_record(nsr_snapshot *s, const char *rel, const struct stat *st) {
        if (s->n == s->n_allocated) {
                s->n_allocated = s->n_allocated ? s->n_allocated * 2 : 1024;
                s->v = nsr_realloc_array(s->v, s->n_allocated, sizeof(record));
        }
        s->v[s->n++] = (record){
                .hash = path_hash(rel),
                .prior = { .dev = st->st_dev,
                           .ino = st->st_ino,
                           .ctime = st->st_ctim,
                           .mode = st->st_mode & 07777,
                           .uid = st->st_uid,
                           .gid = st->st_gid },
        };
}

static void index_finish(nsr_snapshot *s) {
        if (s->n > 1)
                qsort(s->v, s->n, sizeof(record), record_cmp);
        for (size_t i = 1; i < s->n; i++)
                if (s->v[i].hash == s->v[i - 1].hash)
                        s->v[i].ambiguous = s->v[i - 1].ambiguous = true;
}

const nsr_capture_prior *nsr_snapshot_prior(void *userdata, const char *rel) {
        const nsr_snapshot *s = userdata;
        uint64_t h = path_hash(rel);
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->v[mid].hash < h)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo < s->n && s->v[lo].hash == h && !s->v[lo].ambiguous)
                return &s->v[lo].prior;
        return NULL;
}

/* ---- paths and errors -------------------------------------------------- */

static int push(walk *w, const char *name, size_t *saved) {
        size_t l = strlen(name);
        size_t sep = w->rel_len ? 1 : 0;
        if (w->rel_len + sep + l >= sizeof(w->rel))
                return -ENAMETOOLONG;
        *saved = w->rel_len;
        if (sep)
                w->rel[w->rel_len++] = '/';
        memcpy(w->rel + w->rel_len, name, l + 1);
        w->rel_len += l;
        return 0;
}

static void pop(walk *w, size_t saved) {
        w->rel_len = saved;
        w->rel[saved] = '\0';
}

static int fail(walk *w, int r, const char *what) {
        _cleanup_free_ char *p = nsr_utf8_escape(w->rel_len ? w->rel : ".");
        return nsr_error_set(w->err, -r, "snapshot: %s '%s'", what, p);
}

/* Opens an entry of the project for reading. One the caller owns but
 * cannot read (a command may chmod its files to 000) gets u+r (u+rx for a
 * dir) for the open only. */
static int open_forcing(int dirfd, const char *name, int flags, const struct stat *st) {
        int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0 || errno != EACCES || st->st_uid != geteuid())
                return fd >= 0 ? fd : -errno;
        /* The mode changes go through an fd of the entry that was stat'ed,
         * never by name: a name the command swapped for a symlink in the
         * meantime would have the chmod change what the link points at. */
        _cleanup_close_ int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat now;
        if (pfd < 0 || fstat(pfd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino)
                return -EACCES;
        mode_t m = st->st_mode & 07777;
        mode_t add = S_ISDIR(st->st_mode) ? S_IRUSR | S_IXUSR : S_IRUSR;
        if (nsr_txnfs_fd_chmod(pfd, m | add) < 0)
                return -EACCES;
        char p[64];
        nsr_txnfs_fd_path(pfd, p, sizeof(p));
        fd = open(p, flags | O_CLOEXEC | O_NOCTTY);
        int e = fd < 0 ? -errno : 0;
        (void) nsr_txnfs_fd_chmod(pfd, m);
        return fd >= 0 ? fd : e;
}

/* Calls fn for every entry of the dir open at fd (consumed). */
static int each_entry(int fd, int (*fn)(walk *w, int dirfd, const char *name, void *arg), walk *w, void *arg) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_fdopendir(fd, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d, r = -errno) {
                size_t saved;
                r = push(w, de->d_name, &saved);
                if (r < 0) {
                        r = fail(w, r, "a path too long below");
                        break;
                }
                r = fn(w, dirfd(d), de->d_name, arg);
                pop(w, saved);
                if (r < 0)
                        break;
        }
        return r;
}

/* ---- the scan: how big is the project ------------------------------------ */

static int scan_entry(walk *w, int dirfd, const char *name, void *arg) {
        unsigned depth = *(unsigned *) arg;
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(w, -errno, "cannot stat");
        nsr_snapshot_stats *ss = &w->s->stats;
        if (++ss->entries > w->max_entries)
                return nsr_error_setx(w->err, E2BIG,
                                      "snapshot: the project has more than %zu entries, more than a snapshot may index",
                                      w->max_entries);
        if (S_ISREG(st.st_mode)) {
                ss->bytes += (uint64_t) st.st_size;
                if (!w->probe && st.st_size > 0)
                        w->probe = nsr_strdup(w->rel);
        }
        if (!S_ISDIR(st.st_mode))
                return 0;
        if (depth + 1 > NSR_SNAPSHOT_MAX_DEPTH)
                return fail(w, -ELOOP, "a tree deeper than the limit at");
        int fd = open_forcing(dirfd, name, O_RDONLY | O_DIRECTORY, &st);
        if (fd < 0)
                return fail(w, fd, "cannot open");
        unsigned sub = depth + 1;
        return each_entry(fd, scan_entry, w, &sub);
}

/* Whether a file of the project can share its data with a file in the
 * snapshot's dir: one FICLONE of a real file into a temporary one. */
static bool reflink_works(walk *w, int project_fd, int dstdir) {
        if (!w->probe)
                return false;
        _cleanup_close_ int src = nsr_txnfs_open(project_fd, w->probe, O_RDONLY | O_NONBLOCK);
        if (src < 0)
                return false;
        char name[64];
        snprintf(name, sizeof(name), ".nsrun-reflink-probe.%d", (int) getpid());
        _cleanup_close_ int dst = openat(dstdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (dst < 0)
                return false;
        bool ok = ioctl(dst, FICLONE, src) == 0;
        (void) unlinkat(dstdir, name, 0);
        return ok;
}

/* ---- the copy -------------------------------------------------------------- */

static bool same_version(const struct stat *a, const struct stat *b) {
        return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
               a->st_ctim.tv_nsec == b->st_ctim.tv_nsec && a->st_ino == b->st_ino;
}

static int copy_data(walk *w, int sfd, int dfd, uint64_t size) {
        if (w->try_reflink) {
                if (ioctl(dfd, FICLONE, sfd) == 0) {
                        w->s->stats.cloned += size;
                        return 0;
                }
                /* EXDEV: this file is on another mount (keep trying for
                 * the others); anything else: the file system cannot. */
                if (errno != EXDEV)
                        w->try_reflink = false;
        }
        if (w->s->stats.copied + size > w->limit)
                return nsr_error_setx(w->err, EFBIG,
                                      "the snapshot would copy more than the limit of %" PRIu64
                                      " bytes (--snapshot-limit)",
                                      w->limit);
        uint64_t total = 0;
        /* NSR_SNAPSHOT_NO_REFLINK copies bytes: copy_file_range() would
         * share them anyway where the file system can (XFS, btrfs). */
        int r = nsr_txnfs_copy_data(sfd, dfd, w->o->flags & NSR_SNAPSHOT_NO_REFLINK, &total);
        if (r < 0)
                return fail(w, r, "cannot copy");
        w->s->stats.copied += total;
        return 0;
}

/* user.* xattrs and ACLs, from one open entry to another; a file system
 * without them on either side is not an error. The ACLs are what the
 * commit's filter (protect.h) compares with: an ACL the host file had
 * stays, one the command added goes. */
static int copy_xattrs(walk *w, int sfd, int dfd) {
        ssize_t n = flistxattr(sfd, w->list, XATTR_LIST_BUF);
        if (n < 0)
                return errno == ENOTSUP || errno == EOPNOTSUPP ? 0 : fail(w, -errno, "cannot list the xattrs of");
        for (ssize_t i = 0; i < n; i += (ssize_t) strlen(w->list + i) + 1) {
                const char *name = w->list + i;
                if (!nsr_startswith(name, "user.") && !streq(name, "system.posix_acl_access") &&
                    !streq(name, "system.posix_acl_default"))
                        continue;
                ssize_t k = fgetxattr(sfd, name, w->value, XATTR_VALUE_BUF);
                if (k < 0) {
                        if (errno == ENODATA)
                                continue;
                        return fail(w, -errno, "cannot read the xattrs of");
                }
                if (fsetxattr(dfd, name, w->value, (size_t) k, 0) < 0 && errno != ENOTSUP && errno != EOPNOTSUPP)
                        return fail(w, -errno, "cannot set the xattrs of the copy of");
        }
        return 0;
}

/* Owner (root only: chown clears setuid, so first), mode and times. */
static int copy_meta(walk *w, int dfd, const struct stat *st) {
        if (w->root && fchown(dfd, st->st_uid, st->st_gid) < 0)
                return fail(w, -errno, "cannot chown the copy of");
        if (fchmod(dfd, st->st_mode & 07777) < 0)
                return fail(w, -errno, "cannot chmod the copy of");
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        if (futimens(dfd, ts) < 0)
                return fail(w, -errno, "cannot set the times of the copy of");
        return 0;
}

static int copy_file(walk *w, int sdir, int ddir, const char *name, const struct stat *st0) {
        struct stat st = *st0;
        for (int attempt = 0;; attempt++) {
                _cleanup_close_ int sfd = open_forcing(sdir, name, O_RDONLY | O_NONBLOCK, &st);
                if (sfd < 0)
                        return fail(w, sfd, "cannot open");
                struct stat before, after;
                if (fstat(sfd, &before) < 0)
                        return fail(w, -errno, "cannot stat");
                if (!S_ISREG(before.st_mode))
                        return fail(w, -EAGAIN, "changed while being copied:");
                int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (attempt ? O_TRUNC : O_EXCL);
                _cleanup_close_ int dfd = openat(ddir, name, flags, 0600);
                if (dfd < 0)
                        return fail(w, -errno, "cannot create the copy of");
                int r = copy_data(w, sfd, dfd, (uint64_t) before.st_size);
                if (r < 0)
                        return r;
                if (fstat(sfd, &after) < 0)
                        return fail(w, -errno, "cannot stat");
                if (!same_version(&before, &after)) {
                        /* Written to while we copied it: the copy may be
                         * torn. Again, from the start. */
                        if (attempt + 1 >= COPY_ATTEMPTS)
                                return fail(w, -EAGAIN, "kept changing while being copied:");
                        st = after;
                        continue;
                }
                if ((r = copy_xattrs(w, sfd, dfd)) < 0 || (r = copy_meta(w, dfd, &before)) < 0)
                        return r;
                add_record(w->s, w->rel, &before);
                return 0;
        }
}

static int copy_symlink(walk *w, int sdir, int ddir, const char *name, const struct stat *st) {
        char target[PATH_MAX + 1];
        ssize_t n = readlinkat(sdir, name, target, sizeof(target));
        if (n < 0)
                return fail(w, -errno, "cannot read the symlink");
        if ((size_t) n >= sizeof(target))
                return fail(w, -ENAMETOOLONG, "a symlink target too long at");
        target[n] = '\0';
        if (symlinkat(target, ddir, name) < 0)
                return fail(w, -errno, "cannot create the copy of");
        if (w->root && fchownat(ddir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(w, -errno, "cannot chown the copy of");
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        if (utimensat(ddir, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(w, -errno, "cannot set the times of the copy of");
        add_record(w->s, w->rel, st);
        return 0;
}

static int copy_special(walk *w, int sdir, int ddir, const char *name, const struct stat *st) {
        (void) sdir;
        dev_t rdev = 0;
        if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
                if (!w->root)
                        return fail(w, -EPERM, "cannot copy the device node");
                rdev = st->st_rdev;
        }
        if (mknodat(ddir, name, (st->st_mode & S_IFMT) | 0600, rdev) < 0)
                return fail(w, -errno, "cannot create the copy of");
        _cleanup_close_ int dfd = openat(ddir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return fail(w, -errno, "cannot open the copy of");
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", dfd);
        if (w->root && fchownat(dfd, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) < 0)
                return fail(w, -errno, "cannot chown the copy of");
        if (chmod(p, st->st_mode & 07777) < 0)
                return fail(w, -errno, "cannot chmod the copy of");
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        if (utimensat(AT_FDCWD, p, ts, 0) < 0)
                return fail(w, -errno, "cannot set the times of the copy of");
        add_record(w->s, w->rel, st);
        return 0;
}

typedef struct copy_arg {
        int ddir;
        unsigned depth;
} copy_arg;

static int copy_entry(walk *w, int sdir, const char *name, void *arg);

static int copy_dir(walk *w, int sdir, int ddir, const char *name, const struct stat *st, unsigned depth) {
        if (depth + 1 > NSR_SNAPSHOT_MAX_DEPTH)
                return fail(w, -ELOOP, "a tree deeper than the limit at");
        if (mkdirat(ddir, name, 0700) < 0)
                return fail(w, -errno, "cannot create the copy of");
        _cleanup_close_ int dfd = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return fail(w, -errno, "cannot open the copy of");
        int sfd = open_forcing(sdir, name, O_RDONLY | O_DIRECTORY, st);
        if (sfd < 0)
                return fail(w, sfd, "cannot open");
        _cleanup_close_ int meta = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
        if (meta < 0) {
                int e = -errno;
                close(sfd);
                return fail(w, e, "cannot open");
        }
        copy_arg sub = { .ddir = dfd, .depth = depth + 1 };
        int r = each_entry(sfd, copy_entry, w, &sub);
        if (r < 0)
                return r;
        /* Mode and times last: the entries made above changed them. */
        if ((r = copy_xattrs(w, meta, dfd)) < 0 || (r = copy_meta(w, dfd, st)) < 0)
                return r;
        add_record(w->s, w->rel, st);
        return 0;
}

static int copy_entry(walk *w, int sdir, const char *name, void *arg) {
        const copy_arg *a = arg;
        struct stat st;
        if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(w, -errno, "cannot stat");
        if (S_ISDIR(st.st_mode))
                return copy_dir(w, sdir, a->ddir, name, &st, a->depth);
        if (S_ISREG(st.st_mode))
                return copy_file(w, sdir, a->ddir, name, &st);
        if (S_ISLNK(st.st_mode))
                return copy_symlink(w, sdir, a->ddir, name, &st);
        return copy_special(w, sdir, a->ddir, name, &st);
}

static char *size_text(uint64_t n) {
        static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
        double v = (double) n;
        size_t u = 0;
        while (v >= 1024 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                u++;
        }
        return u == 0 ? nsr_asprintf("%" PRIu64 " bytes", n) : nsr_asprintf("%.1f %s", v, units[u]);
}

int nsr_snapshot_take(int project_fd, int dstdir, const char *dstname, const nsr_snapshot_opts *o, nsr_snapshot **ret,
                      nsr_error *err) {
        static const nsr_snapshot_opts defaults = { 0 };
        if (!o)
                o = &defaults;
        _cleanup_(nsr_snapshot_freep) nsr_snapshot *s = nsr_malloc0(sizeof(*s));
        _cleanup_free_ walk *w = nsr_malloc0(sizeof(*w));
        _cleanup_free_ _unused_ char *list = w->list = nsr_malloc0(XATTR_LIST_BUF);
        _cleanup_free_ _unused_ char *value = w->value = nsr_malloc0(XATTR_VALUE_BUF);
        w->s = s;
        w->o = o;
        w->limit = o->limit ? o->limit : NSR_SNAPSHOT_LIMIT_DEFAULT;
        w->max_entries = o->max_entries ? o->max_entries : NSR_SNAPSHOT_MAX_ENTRIES_DEFAULT;
        w->err = err;
        w->root = geteuid() == 0;

        struct stat st;
        if (fstat(project_fd, &st) < 0)
                return nsr_error_set(err, errno, "snapshot: cannot stat the project");
        if (!S_ISDIR(st.st_mode))
                return nsr_error_set(err, ENOTDIR, "snapshot: the project");
        /* The scan first: a project over the limit is refused before
         * anything is copied, unless its data can be shared. */
        int fd = open_forcing(project_fd, ".", O_RDONLY | O_DIRECTORY, &st);
        if (fd < 0)
                return fail(w, fd, "cannot open");
        unsigned depth = 0;
        int r = each_entry(fd, scan_entry, w, &depth);
        _cleanup_free_ _unused_ char *probe = w->probe;
        if (r < 0)
                return r;
        w->try_reflink = !(o->flags & NSR_SNAPSHOT_NO_REFLINK) && reflink_works(w, project_fd, dstdir);
        s->stats.reflink = w->try_reflink;
        if (!w->try_reflink && s->stats.bytes > w->limit) {
                _cleanup_free_ char *have = size_text(s->stats.bytes), *lim = size_text(w->limit);
                return nsr_error_setx(err, EFBIG,
                                      "the project holds %s in %" PRIu64 " entries; its snapshot (needed to undo "
                                      "writes made in place) would copy more than the limit of %s, and this file "
                                      "system cannot share data (no reflinks): raise --snapshot-limit",
                                      have, s->stats.entries, lim);
        }

        /* The root's own copy: created here, given its mode at the end. */
        if (mkdirat(dstdir, dstname, 0700) < 0)
                return nsr_error_set(err, errno, "snapshot: cannot create the snapshot dir");
        w->rel[0] = '\0';
        w->rel_len = 0;
        s->stats.copied = s->stats.cloned = 0;
        _cleanup_close_ int dfd = openat(dstdir, dstname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int sfd = dfd < 0 ? -errno : open_forcing(project_fd, ".", O_RDONLY | O_DIRECTORY, &st);
        r = sfd;
        if (sfd >= 0) {
                copy_arg a = { .ddir = dfd, .depth = 0 };
                r = each_entry(sfd, copy_entry, w, &a);
        } else
                r = nsr_error_set(err, -sfd, "snapshot: cannot open the project or the snapshot dir");
        if (r >= 0) {
                struct timespec ts[2] = { st.st_atim, st.st_mtim };
                if (fchmod(dfd, st.st_mode & 07777) < 0 || futimens(dfd, ts) < 0)
                        r = nsr_error_set(err, errno, "snapshot: cannot set the mode of the snapshot dir");
        }
        if (r < 0) {
                if (r == -EFBIG) {
                        _cleanup_free_ char *have = size_text(s->stats.bytes), *lim = size_text(w->limit);
                        nsr_error_setx(err, EFBIG,
                                       "the project holds %s in %" PRIu64 " entries; its snapshot (needed to undo "
                                       "writes made in place) would copy more than the limit of %s (only some files "
                                       "could share their data through reflinks): raise --snapshot-limit",
                                       have, s->stats.entries, lim);
                }
                (void) nsr_txnfs_rm_rf(dstdir, dstname);
                return r;
        }
        index_finish(s);
        *ret = TAKE_PTR(s);
        return 0;
}

int nsr_snapshot_compare(const nsr_snapshot *s, int snap_fd, int project_fd, nsr_changeset **ret, nsr_error *err) {
        nsr_capture_opts co = {
                .flags = NSR_CAPTURE_TREES,
                .prior = nsr_snapshot_prior,
                .prior_userdata = (void *) s,
        };
        return nsr_capture_scan(project_fd, snap_fd, &co, ret, err);
}
