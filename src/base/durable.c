/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "base/durable.h"
#include "base/util.h"

/* NAME.tmp-XXXXXXXXXXXXXXXX in NAME's dir: unguessable, so a stale or
 * planted temporary only costs a retry. */
static void temp_name(const char *name, unsigned attempt, char **ret) {
        uint64_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd)) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                rnd = ((uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec) ^ ((uint64_t) getpid() << 32) ^
                      attempt;
        }
        *ret = nsr_asprintf("%s.tmp-%016llx", name, (unsigned long long) rnd);
}

static int fsync_parent(int dirfd, const char *name) {
        const char *slash = strrchr(name, '/');
        _cleanup_free_ char *dir = slash ? nsr_strndup(name, (size_t) (slash - name) + (slash == name)) : NULL;
        _cleanup_close_ int fd = openat(dirfd, dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

void nsr_durable_done(nsr_durable *d) {
        if (d->fd >= 0)
                close(d->fd);
        if (d->tmp)
                (void) unlinkat(d->dirfd, d->tmp, 0);
        free(d->tmp);
        free(d->name);
        *d = (nsr_durable) NSR_DURABLE_INIT;
}

/* NSR_DURABLE_SPARE_PREFIX "k", in a buffer of its own. */
#define SPARE_NAME(buf, k)                                                                                             \
        char buf[sizeof(NSR_DURABLE_SPARE_PREFIX) + 8];                                                                \
        snprintf(buf, sizeof(buf), NSR_DURABLE_SPARE_PREFIX "%u", (k))

static bool spare_stat_ok(const struct stat *st) {
        return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1 && st->st_size == 0 &&
               !(st->st_mode & 022);
}

bool nsr_durable_spare_is(int dirfd, const char *name) {
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && spare_stat_ok(&st);
}

bool nsr_durable_spares_make(int dirfd) {
        bool all = true;
        for (unsigned k = 0; k < NSR_DURABLE_SPARES; k++) {
                SPARE_NAME(name, k);
                int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
                if (fd < 0)
                        all = false;
                safe_close(fd);
        }
        return all;
}

void nsr_durable_spares_drop(int dirfd) {
        for (unsigned k = 0; k < NSR_DURABLE_SPARES; k++) {
                SPARE_NAME(name, k);
                if (nsr_durable_spare_is(dirfd, name))
                        (void) unlinkat(dirfd, name, 0);
        }
}

/* The first spare in dirfd still there, moved to tmp first (one rename:
 * of two writers, only one gets it), then opened and checked to be what
 * nsr_durable_spares_make made (O_NONBLOCK: a fifo is not waited on;
 * O_NOFOLLOW: a link is not followed; the fstat: a file anything else
 * still holds, or one with content, is not taken, and goes). */
static int take_spare(int dirfd, const char *tmp) {
        for (unsigned k = 0; k < NSR_DURABLE_SPARES; k++) {
                SPARE_NAME(name, k);
                if (renameat2(dirfd, name, dirfd, tmp, RENAME_NOREPLACE) < 0)
                        continue;
                int fd = openat(dirfd, tmp, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 && spare_stat_ok(&st))
                        return fd;
                safe_close(fd);
                (void) unlinkat(dirfd, tmp, 0);
                return -1;
        }
        return -1;
}

int nsr_durable_begin(nsr_durable *d, int dirfd, const char *name, mode_t mode, unsigned flags, nsr_error *err) {
        *d = (nsr_durable) NSR_DURABLE_INIT;
        _cleanup_free_ char *tmp = NULL;
        int fd = -1;
        if (flags & NSR_DURABLE_SPARE) {
                temp_name(name, 0, &tmp);
                fd = take_spare(dirfd, tmp);
        }
        for (unsigned attempt = 0; fd < 0 && attempt < 16; attempt++) {
                free(tmp);
                temp_name(name, attempt, &tmp);
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot create a temporary file for %s", name);
        *d = (nsr_durable){ .dirfd = dirfd, .fd = fd, .flags = flags, .name = nsr_strdup(name), .tmp = TAKE_PTR(tmp) };
        /* The mode asked for, not what the umask left of it. */
        if (fchmod(fd, mode) < 0) {
                int e = errno;
                nsr_durable_done(d);
                return nsr_error_set(err, e, "cannot write %s", name);
        }
        return 0;
}

int nsr_durable_finish(nsr_durable *d, int r, nsr_error *err) {
        if (r < 0) {
                nsr_durable_done(d);
                return r;
        }
        if ((d->flags & NSR_DURABLE_SYNC) && fsync(d->fd) < 0)
                r = -errno;
        /* close reports what a delayed write-back (NFS, quota) found. */
        if (close(TAKE_FD(d->fd)) < 0 && r >= 0 && errno != EINTR)
                r = -errno;
        if (r >= 0 && renameat(d->dirfd, d->tmp, d->dirfd, d->name) < 0)
                r = -errno;
        if (r >= 0) {
                free(TAKE_PTR(d->tmp)); /* it is the file now */
                if (d->flags & NSR_DURABLE_SYNC) {
                        r = fsync_parent(d->dirfd, d->name);
                        if (r < 0)
                                nsr_error_set(err, -r, "cannot sync the directory of %s", d->name);
                }
        } else
                nsr_error_set(err, -r, "cannot write %s", d->name);
        nsr_durable_done(d);
        return r;
}

/* Whether dirfd/name is a regular file of exactly mode and exactly data,
 * compared a block at a time (a cache may be large). */
static bool same_file(int dirfd, const char *name, const void *data, size_t len, mode_t mode) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != mode ||
            st.st_uid != geteuid() || st.st_size < 0 || (uint64_t) st.st_size != (uint64_t) len)
                return false;
        char buf[16384];
        size_t off = 0;
        while (off < len) {
                size_t want = len - off < sizeof(buf) ? len - off : sizeof(buf);
                ssize_t n = read(fd, buf, want);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || memcmp(buf, (const char *) data + off, (size_t) n) != 0)
                        return false;
                off += (size_t) n;
        }
        /* Nothing past len (it grew since the fstat). */
        return read(fd, buf, 1) == 0;
}

int nsr_durable_write(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                      nsr_error *err) {
        if ((flags & NSR_DURABLE_IF_CHANGED) && !(flags & NSR_DURABLE_SYNC) && same_file(dirfd, name, data, len, mode))
                return 0;
        nsr_durable d;
        int r = nsr_durable_begin(&d, dirfd, name, mode, flags, err);
        if (r < 0)
                return r;
        r = nsr_write_all(d.fd, data, len);
        if (r < 0)
                nsr_error_set(err, -r, "cannot write %s", name);
        return nsr_durable_finish(&d, r, err);
}
