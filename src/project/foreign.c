/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/durable.h"
#include "base/util.h"
#include "project/foreign.h"
#include "txn/txnfs.h"

#define MAGIC       "nsrun-foreign 1"
#define CACHE_MAGIC "nsrun-foreign-clean 2"
#define CACHE_MAX   ((size_t) 64 * 1024 * 1024)
#define MAX_DEPTH   200
#define RECORD_MAX  ((size_t) 1024 * 1024 * 1024)

/* One dir on the way down: its lower fd and name, and its upper fd once
 * the upper dir exists. */
typedef struct level {
        int lfd;     /* the lower dir (owned) */
        int ufd;     /* the upper dir (not O_PATH: files are made in it), -1 until made (owned) */
        bool made;   /* made by this walk: its mode and record come when it is left */
        mode_t mode; /* the mode it gets then */
        const char *name;
        struct stat st;
        bool dirty; /* something of another owner or group directly in it */
} level;

/* A dir as the cache knows it: its identity and times, and the names of
 * its subdirs then (hex, space-separated, into the cache's text). */
typedef struct clean {
        uint64_t dev, ino;
        int64_t msec, mnsec, csec, cnsec;
        char *subdirs;
} clean;

typedef struct walk {
        uid_t uid;
        gid_t gid;
        gid_t *groups; /* the caller's supplementary groups */
        int n_groups;
        level lv[MAX_DEPTH + 1];
        unsigned depth;
        char path[PATH_MAX];
        FILE *rec;
        FILE *cache_out; /* the dirs found clean now */
        clean *cache;    /* the dirs found clean last time, sorted */
        size_t n_cache;
        nsr_foreign_stats st;
        int error; /* a failure to write into the state dir: -errno */
} walk;

static bool foreign(const walk *w, const struct stat *st) {
        return st->st_uid != w->uid || st->st_gid != w->gid;
}

static bool in_group(const walk *w, gid_t g) {
        if (g == w->gid)
                return true;
        for (int i = 0; i < w->n_groups; i++)
                if (w->groups[i] == g)
                        return true;
        return false;
}

/* What the user may do with dirfd/name on the host, as owner bits: the
 * class the kernel checks (owner, group, other) read from the mode in
 * process, which is what a walk over thousands of such files can afford;
 * only a bit the mode denies is asked of the kernel (an ACL may grant it). */
static mode_t host_access(const walk *w, int dirfd, const char *name, const struct stat *st) {
        mode_t bits = st->st_uid == w->uid      ? (st->st_mode >> 6) & 7
                      : in_group(w, st->st_gid) ? (st->st_mode >> 3) & 7
                                                : st->st_mode & 7;
        /* Writing is what the copy is for: only that one is worth a
         * system call per entry. */
        if (!(bits & 2) && st->st_uid != w->uid && faccessat(dirfd, name, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) == 0)
                bits |= 2;
        return (mode_t) (bits << 6);
}

/* The copy's mode: the host's group and other bits and sticky bit, owner
 * bits as the user may act on the host entry (they are the copy's owner
 * inside); never setuid or setgid. A dir of the user's own keeps its mode. */
static mode_t copy_mode(const walk *w, int dirfd, const char *name, const struct stat *st) {
        if (!foreign(w, st))
                return st->st_mode & 01777;
        return (st->st_mode & 01077) | host_access(w, dirfd, name, st);
}

static void path_set(walk *w, const char *name) {
        size_t n = 0;
        w->path[0] = '\0';
        for (unsigned d = 1; d <= w->depth; d++) {
                int k = snprintf(w->path + n, sizeof(w->path) - n, "%s%s", n ? "/" : "", w->lv[d].name);
                n += k > 0 ? (size_t) k : 0;
        }
        if (name)
                snprintf(w->path + n, sizeof(w->path) - n, "%s%s", n ? "/" : "", name);
}

static int record(walk *w, char kind, const char *name, int ufd, const char *uname) {
        struct stat st;
        if (fstatat(ufd, uname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        path_set(w, name);
        _cleanup_free_ char *hex = nsr_hex_encode(w->path, strlen(w->path));
        fprintf(w->rec, "%c %s %o %u %u %llu %llu %lld %ld\n", kind, hex, (unsigned) (st.st_mode & 07777),
                (unsigned) st.st_uid, (unsigned) st.st_gid, (unsigned long long) st.st_dev,
                (unsigned long long) st.st_ino, (long long) st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
        return 0;
}

static bool state_full(int r) {
        return r == -ENOSPC || r == -EDQUOT;
}

/* Makes the upper dirs of levels 1..depth that do not exist yet. */
static int make_parents(walk *w) {
        for (unsigned d = 1; d <= w->depth; d++) {
                level *l = &w->lv[d];
                if (l->ufd >= 0)
                        continue;
                int pfd = w->lv[d - 1].ufd;
                /* Made 0700: the copies go in (a dir the user may not
                 * write on the host has no owner write bit), and it gets
                 * its mode when the walk leaves it (leave_dir). */
                bool made = mkdirat(pfd, l->name, 0700) == 0;
                if (!made && errno != EEXIST)
                        return -errno;
                int fd = openat(pfd, l->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                l->ufd = fd;
                l->made = made;
                l->mode = copy_mode(w, w->lv[d - 1].lfd, l->name, &l->st);
                w->st.dirs++;
        }
        return 0;
}

/* The walk leaves the dir at the current depth: a dir it made gets its
 * mode, and then its record (its ctime is final only now). */
static int leave_dir(walk *w) {
        level *l = &w->lv[w->depth];
        if (!l->made)
                return 0;
        int pfd = w->lv[w->depth - 1].ufd;
        if (fchmodat(pfd, l->name, l->mode, 0) < 0)
                return -errno;
        w->depth--;
        int r = record(w, 'd', l->name, pfd, l->name);
        w->depth++;
        return r;
}

/* The user.* xattrs of from onto to (user.overlay.* are the overlay's). */
static int copy_xattrs(int from, int to) {
        char list[4096];
        ssize_t n = flistxattr(from, list, sizeof(list));
        if (n <= 0)
                return 0; /* none, or none we can list: nothing the user could see */
        for (char *a = list; a < list + n; a += strlen(a) + 1) {
                if (strncmp(a, "user.", 5) != 0 || strncmp(a, "user.overlay.", 13) == 0)
                        continue;
                char v[4096];
                ssize_t k = fgetxattr(from, a, v, sizeof(v));
                if (k >= 0 && fsetxattr(to, a, v, (size_t) k, 0) < 0)
                        return -errno;
        }
        return 0;
}

/* The content of from into to: a reflink where the file systems share
 * blocks, else copy_file_range, else read and write. */
static int copy_data(int from, int to) {
        if (ioctl(to, FICLONE, from) == 0)
                return 0;
        for (;;) {
                ssize_t n = copy_file_range(from, NULL, to, NULL, 1 << 30, 0);
                if (n == 0)
                        return 0;
                if (n < 0)
                        break;
        }
        if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS)
                return -errno;
        char buf[64 * 1024];
        for (;;) {
                int n = nsr_read_full(from, buf, sizeof(buf));
                if (n <= 0)
                        return n;
                int r = nsr_write_all(to, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

/* A file of another owner the user may write (or owns): into upper, as a
 * file of the user's with the copy's mode, the content, mtime and user
 * xattrs. Never through a symlink: the lower file is opened O_NOFOLLOW and
 * checked to be the inode the walk saw. */
static int copy_file(walk *w, const char *name, const struct stat *st) {
        level *l = &w->lv[w->depth];
        mode_t m = copy_mode(w, l->lfd, name, st);
        if (!(m & S_IRUSR))
                return 0; /* cannot be read, so not copied: left to the overlay */
        int r = make_parents(w);
        if (r < 0)
                return r;
        _cleanup_close_ int in = openat(l->lfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        struct stat ist;
        if (in < 0 || fstat(in, &ist) < 0 || !S_ISREG(ist.st_mode) || ist.st_ino != st->st_ino ||
            ist.st_dev != st->st_dev)
                return 0; /* gone or replaced since: left to the overlay */
        _cleanup_close_ int ufd = openat(l->ufd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (ufd < 0)
                return errno == EEXIST ? 0 : -errno;
        r = copy_data(in, ufd);
        if (r >= 0)
                r = copy_xattrs(in, ufd);
        struct timespec ts[2] = { ist.st_atim, ist.st_mtim };
        if (r >= 0 && (futimens(ufd, ts) < 0 || fchmod(ufd, m) < 0))
                r = -errno;
        if (r < 0) {
                (void) unlinkat(l->ufd, name, 0);
                return state_full(r) ? r : 0;
        }
        r = record(w, 'f', name, l->ufd, name);
        if (r >= 0)
                w->st.files++;
        return r;
}

static int clean_cmp(const void *x, const void *y) {
        const clean *a = x, *b = y;
        return a->dev != b->dev ? (a->dev < b->dev ? -1 : 1) : a->ino != b->ino ? (a->ino < b->ino ? -1 : 1) : 0;
}

/* Whether the last walk found this dir clean, and it is unchanged since
 * (its ctime moves with every entry made, removed or renamed in it, and
 * cannot be set): then its entries are the same, and only its subdirs,
 * which that walk listed, need a look. */
static const clean *was_clean(const walk *w, const struct stat *st) {
        if (w->n_cache == 0)
                return NULL;
        clean key = { .dev = st->st_dev, .ino = st->st_ino };
        const clean *c = bsearch(&key, w->cache, w->n_cache, sizeof(clean), clean_cmp);
        return c && c->msec == st->st_mtim.tv_sec && c->mnsec == st->st_mtim.tv_nsec && c->csec == st->st_ctim.tv_sec &&
                               c->cnsec == st->st_ctim.tv_nsec
                       ? c
                       : NULL;
}

static void load_cache(walk *w, int dirfd, const char *name) {
        _cleanup_close_ int fd = dirfd < 0 ? -1 : openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        if (fd < 0 || nsr_read_all(fd, CACHE_MAX, &data, NULL) < 0)
                return;
        char *save = NULL, *line = strtok_r(data, "\n", &save);
        if (!line || !streq(line, CACHE_MAGIC))
                return;
        size_t cap = 0;
        while ((line = strtok_r(NULL, "\n", &save))) {
                unsigned long long dev, ino;
                long long ms, cs;
                long mn, cn;
                int used = -1;
                if (sscanf(line, "%llu %llu %lld %ld %lld %ld%n", &dev, &ino, &ms, &mn, &cs, &cn, &used) != 6 ||
                    used < 0 || (line[used] != '\0' && line[used] != ' '))
                        continue;
                if (w->n_cache == cap) {
                        cap = cap ? cap * 2 : 256;
                        w->cache = nsr_realloc_array(w->cache, cap, sizeof(clean));
                }
                w->cache[w->n_cache++] = (clean){ .dev = dev,
                                                  .ino = ino,
                                                  .msec = ms,
                                                  .mnsec = mn,
                                                  .csec = cs,
                                                  .cnsec = cn,
                                                  .subdirs = nsr_strdup(line + used) };
        }
        if (w->n_cache > 1)
                qsort(w->cache, w->n_cache, sizeof(clean), clean_cmp);
}

static int walk_dir(walk *w);

/* One entry of the dir at w->depth; a subdir is walked. A name that is a
 * dir goes into *subdirs (hex, each after a space) for the cache. */
static int visit(walk *w, const char *name, unsigned char type, bool skip_files, bool *complete, char **subdirs) {
        level *cur = &w->lv[w->depth];
        if (skip_files && type != DT_DIR && type != DT_UNKNOWN)
                return 0;
        struct stat st;
        int lfd = cur->lfd;
        if (fstatat(lfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                *complete = false;
                return 0;
        }
        if (foreign(w, &st))
                cur->dirty = true;
        bool own = st.st_uid == w->uid;
        int r = 0;
        if (S_ISREG(st.st_mode) && foreign(w, &st) && (own || (host_access(w, lfd, name, &st) & S_IWUSR)))
                r = copy_file(w, name, &st);
        else if (S_ISDIR(st.st_mode) && w->depth < MAX_DEPTH) {
                _cleanup_free_ char *hex = nsr_hex_encode(name, strlen(name));
                nsr_strappendf(subdirs, " %s", hex);
                int sub = openat(lfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return 0;
                level *l = &w->lv[++w->depth];
                *l = (level){ .lfd = sub, .ufd = -1, .name = name, .st = st };
                /* A dir of another owner the user may write: its upper dir
                 * exists, so that entries made in it need no copy-up of
                 * it. */
                if (foreign(w, &st) &&
                    (own || (host_access(w, lfd, name, &st) & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR)))
                        r = make_parents(w);
                if (r >= 0)
                        r = walk_dir(w);
                if (r >= 0)
                        r = leave_dir(w);
                safe_close(l->lfd);
                safe_close(l->ufd);
                w->depth--;
        }
        return r;
}

/* The subdirs a clean dir had, from the cache: each must still be a dir
 * (a dir whose ctime did not move cannot have lost or swapped one). False
 * when the list cannot be used: the entries are read instead. */
static bool cached_subdirs(const clean *c, char ***ret) {
        _cleanup_strv_free_ char **names = nsr_malloc0(sizeof(char *));
        _cleanup_free_ char *list = nsr_strdup(c->subdirs);
        char *save = NULL;
        for (char *hex = strtok_r(list, " ", &save); hex; hex = strtok_r(NULL, " ", &save)) {
                char *name = NULL;
                size_t len = 0;
                if (nsr_hex_decode(hex, strlen(hex), &name, &len) < 0)
                        return false;
                if (len == 0 || len != strlen(name) || strchr(name, '/') || streq(name, ".") || streq(name, "..")) {
                        free(name);
                        return false;
                }
                nsr_strv_push(&names, name);
        }
        *ret = TAKE_PTR(names);
        return true;
}

static int walk_dir(walk *w) {
        level *cur = &w->lv[w->depth];
        /* Clean last time and unchanged: no entry came or went, so only
         * the subdirs need a look, and the last walk named them. */
        const clean *was = was_clean(w, &cur->st);
        bool skip_files = was != NULL;
        bool complete = true;
        int r = 0;
        _cleanup_free_ char *subdirs = nsr_strdup("");
        _cleanup_strv_free_ char **known = NULL;
        if (was && cached_subdirs(was, &known)) {
                for (char **n = known; *n && r >= 0; n++)
                        r = visit(w, *n, DT_DIR, true, &complete, &subdirs);
                w->st.skipped++;
        } else {
                _cleanup_closedir_ DIR *d = NULL;
                if (nsr_opendir_at(cur->lfd, ".", O_NOFOLLOW, &d) < 0)
                        return 0; /* unreadable: the overlay's business */
                FOREACH_DIRENT(de, d, complete = false; break) {
                        if (w->st.entries++ >= NSR_FOREIGN_MAX_ENTRIES) {
                                complete = false;
                                break;
                        }
                        r = visit(w, de->d_name, de->d_type, skip_files, &complete, &subdirs);
                        if (r < 0)
                                break;
                }
                if (skip_files)
                        w->st.skipped++;
        }
        if (r >= 0 && complete && !cur->dirty && w->cache_out)
                fprintf(w->cache_out, "%llu %llu %lld %ld %lld %ld%s\n", (unsigned long long) cur->st.st_dev,
                        (unsigned long long) cur->st.st_ino, (long long) cur->st.st_mtim.tv_sec,
                        cur->st.st_mtim.tv_nsec, (long long) cur->st.st_ctim.tv_sec, cur->st.st_ctim.tv_nsec, subdirs);
        return r;
}

int nsr_foreign_prepare(int project_fd, int upper_fd, int run_fd, size_t index, int cache_dirfd, const char *cache_name,
                        nsr_foreign_stats *ret_stats, nsr_error *err) {
        char *buf = NULL, *cbuf = NULL;
        size_t len = 0, clen = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return nsr_error_set(err, ENOMEM, "foreign owners");
        FILE *cf = cache_dirfd >= 0 ? open_memstream(&cbuf, &clen) : NULL;
        if (cf)
                fputs(CACHE_MAGIC "\n", cf);
        walk *w = nsr_malloc0(sizeof(walk));
        w->uid = geteuid();
        w->gid = getegid();
        int ng = getgroups(0, NULL);
        w->groups = nsr_malloc0(((size_t) (ng > 0 ? ng : 0) + 1) * sizeof(gid_t));
        w->n_groups = ng > 0 ? getgroups(ng, w->groups) : 0;
        if (w->n_groups < 0)
                w->n_groups = 0;
        w->rec = f;
        w->cache_out = cf;
        load_cache(w, cache_dirfd, cache_name);
        w->lv[0] = (level){ .lfd = project_fd,
                            .ufd = openat(upper_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
                            .name = "" };
        fputs(MAGIC "\n", f);
        int r = w->lv[0].ufd < 0 ? -errno : fstat(project_fd, &w->lv[0].st) < 0 ? -errno : walk_dir(w);
        safe_close(w->lv[0].ufd);
        nsr_foreign_stats st = w->st;
        free(w->groups);
        for (size_t i = 0; i < w->n_cache; i++)
                free(w->cache[i].subdirs);
        free(w->cache);
        free(w);
        bool cache_ok = cf && fclose(cf) == 0;
        if (cache_ok && r >= 0) {
                /* Only a speed-up: a cache that cannot be written is no
                 * error. Unchanged (the usual case), it is not rewritten. */
                nsr_error ce = { 0 };
                (void) nsr_durable_write(cache_dirfd, cache_name, cbuf, clen, 0600, NSR_DURABLE_IF_CHANGED, &ce);
        }
        free(cbuf);
        bool written = fclose(f) == 0;
        _cleanup_free_ char *data = buf;
        size_t n = len;
        if (!written)
                return nsr_error_set(err, ENOMEM, "foreign owners");
        if (r < 0)
                return nsr_error_set(err, -r, "cannot prepare the upper layer for files of other owners");
        if (ret_stats)
                *ret_stats = st;
        if (st.files == 0 && st.dirs == 0)
                return 0;
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/foreign", index);
        return nsr_durable_write(run_fd, rel, data, n, 0600, 0, err);
}

/* ---- the record ---- */

typedef struct entry {
        char *path;
        bool file;
        nsr_capture_prior prior;
} entry;

struct nsr_foreign {
        entry *v;
        size_t n;
};

nsr_foreign *nsr_foreign_free(nsr_foreign *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n; i++)
                free(f->v[i].path);
        free(f->v);
        free(f);
        return NULL;
}

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const entry *) a)->path, ((const entry *) b)->path);
}

static int parse_line(char *line, entry *ret) {
        char kind, hex[2 * PATH_MAX + 1];
        unsigned mode, uid, gid;
        unsigned long long dev, ino;
        long long sec;
        long nsec;
        int used = -1;
        if (strlen(line) > sizeof(hex) + 128 ||
            sscanf(line, "%c %8192s %o %u %u %llu %llu %lld %ld%n", &kind, hex, &mode, &uid, &gid, &dev, &ino, &sec,
                   &nsec, &used) != 9 ||
            used < 0 || line[used] != '\0' || (kind != 'f' && kind != 'd') || mode > 07777 || nsec < 0 ||
            nsec >= 1000000000)
                return -EBADMSG;
        char *path = NULL;
        size_t plen = 0;
        if (nsr_hex_decode(hex, strlen(hex), &path, &plen) < 0)
                return -EBADMSG;
        if (plen != strlen(path) || !nsr_changeset_path_is_valid(path)) {
                free(path);
                return -EBADMSG;
        }
        *ret = (entry){ .path = path,
                        .file = kind == 'f',
                        .prior = { .dev = (dev_t) dev,
                                   .ino = (ino_t) ino,
                                   .ctime = { .tv_sec = (time_t) sec, .tv_nsec = nsec },
                                   .mode = (mode_t) mode,
                                   .uid = (uid_t) uid,
                                   .gid = (gid_t) gid } };
        return 0;
}

int nsr_foreign_load(int run_fd, size_t index, nsr_foreign **ret, nsr_error *err) {
        char rel[32];
        snprintf(rel, sizeof(rel), "p%zu/foreign", index);
        *ret = NULL;
        _cleanup_close_ int fd = openat(run_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : nsr_error_set(err, errno, "cannot open %s", rel);
        _cleanup_free_ char *data = NULL;
        int r = nsr_read_all(fd, RECORD_MAX, &data, NULL);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot read %s", rel);
        _cleanup_(nsr_foreign_freep) nsr_foreign *f = nsr_malloc0(sizeof(nsr_foreign));
        char *save = NULL;
        char *line = strtok_r(data, "\n", &save);
        if (!line || !streq(line, MAGIC))
                return nsr_error_setx(err, EBADMSG, "%s: not a record of nsrun's", rel);
        size_t cap = 0;
        while ((line = strtok_r(NULL, "\n", &save))) {
                if (f->n == cap) {
                        cap = cap ? cap * 2 : 64;
                        f->v = nsr_realloc_array(f->v, cap, sizeof(entry));
                }
                if (parse_line(line, &f->v[f->n]) < 0)
                        return nsr_error_setx(err, EBADMSG, "%s: a damaged line", rel);
                f->n++;
        }
        if (f->n > 1)
                qsort(f->v, f->n, sizeof(entry), entry_cmp);
        *ret = TAKE_PTR(f);
        return 0;
}

static const entry *find(const nsr_foreign *f, const char *rel) {
        if (!f || f->n == 0)
                return NULL;
        entry key = { .path = (char *) rel };
        return bsearch(&key, f->v, f->n, sizeof(entry), entry_cmp);
}

const nsr_capture_prior *nsr_foreign_prior(void *userdata, const char *rel) {
        const entry *e = find(userdata, rel);
        return e ? &e->prior : NULL;
}

void nsr_foreign_mark(const nsr_foreign *f, nsr_changeset *cs) {
        for (size_t i = 0; f && cs && i < cs->n_changes; i++) {
                nsr_change *c = &cs->changes[i];
                if (c->kind != NSR_CHANGE_MODIFIED || c->type != NSR_ENTRY_FILE)
                        continue;
                const entry *e = find(f, c->path);
                /* A mode the command changed cannot go in place: that
                 * change goes as a replacement, as any other. */
                c->in_place = e && e->file && !(c->meta & (NSR_META_MODE | NSR_META_OWNER | NSR_META_XATTRS));
        }
}

/* The group a new entry at path gets on the host: its parent's when that
 * is a setgid dir of the host, or a dir this pass gave one; -1 for none. */
static gid_t inherited(int project_fd, const char *path, char **dirs, gid_t *gids, size_t n) {
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *parent = slash ? strndup(path, (size_t) (slash - path)) : nsr_strdup("");
        for (size_t i = n; i-- > 0;)
                if (streq(dirs[i], parent))
                        return gids[i];
        _cleanup_close_ int fd = nsr_txnfs_open(project_fd, parent, O_PATH | O_DIRECTORY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !(st.st_mode & S_ISGID))
                return (gid_t) -1;
        return st.st_gid;
}

void nsr_foreign_inherit_groups(int project_fd, int upper_fd, nsr_changeset *cs) {
        /* New dirs given a group, for what is made inside them (the set is
         * sorted: parents come first). */
        char **dirs = NULL;
        gid_t *gids = NULL;
        size_t n = 0;
        for (size_t i = 0; cs && i < cs->n_changes; i++) {
                nsr_change *c = &cs->changes[i];
                if (c->kind != NSR_CHANGE_CREATED)
                        continue;
                gid_t g = inherited(project_fd, c->path, dirs, gids, n);
                if (g == (gid_t) -1 || g == c->gid)
                        continue;
                const char *leaf = NULL;
                _cleanup_close_ int up = nsr_txnfs_open_parent(upper_fd, c->path, &leaf);
                if (up < 0 || fchownat(up, leaf, (uid_t) -1, g, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                c->gid = g;
                if (c->type == NSR_ENTRY_DIR && n < 100000) {
                        dirs = nsr_realloc_array(dirs, n + 1, sizeof(char *));
                        gids = nsr_realloc_array(gids, n + 1, sizeof(gid_t));
                        dirs[n] = nsr_strdup(c->path);
                        gids[n++] = g;
                }
        }
        for (size_t i = 0; i < n; i++)
                free(dirs[i]);
        free(dirs);
        free(gids);
}
