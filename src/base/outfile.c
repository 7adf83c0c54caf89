/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "base/outfile.h"
#include "base/syscalls.h"
#include "base/util.h"

void nsr_outfile_done(nsr_outfile *o) {
        if (!o)
                return;
        o->dirfd = safe_close(o->dirfd);
        o->fd = safe_close(o->fd);
        free(o->name);
        free(o->path);
        free(o->dir);
        *o = (nsr_outfile) NSR_OUTFILE_INIT;
}

/* Paths the caller names to reach an fd of its own: /dev/stdout, /dev/fd/3,
 * /proc/self/fd/1. Nothing the sandbox writes lives there. */
static bool is_special_dir(const char *path) {
        return nsr_startswith(path, "/dev/") || nsr_startswith(path, "/proc/");
}

int nsr_outfile_open(const char *opt, const char *path, nsr_outfile *ret, nsr_error *err) {
        nsr_outfile o = NSR_OUTFILE_INIT;
        size_t len = strlen(path);
        if (len == 0 || path[len - 1] == '/')
                return nsr_error_setx(err, EISDIR, "%s %s: not a file name", opt, path);
        const char *slash = strrchr(path, '/');
        const char *leaf = slash ? slash + 1 : path;
        if (streq(leaf, ".") || streq(leaf, "..") || strlen(leaf) > NAME_MAX)
                return nsr_error_setx(err, EINVAL, "%s %s: not a file name", opt, path);
        _cleanup_free_ char *dir = !slash          ? nsr_strdup(".")
                                   : slash == path ? nsr_strdup("/")
                                                   : nsr_strndup(path, (size_t) (slash - path));
        /* The caller's own path, resolved now, before the command runs. */
        _cleanup_close_ int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return nsr_error_set(err, errno, "%s %s: cannot open its directory", opt, path);
        struct stat st;
        if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return nsr_error_set(err, errno, "%s %s", opt, path);
        } else if (S_ISDIR(st.st_mode)) {
                return nsr_error_setx(err, EISDIR, "%s %s: is a directory", opt, path);
        } else if (S_ISLNK(st.st_mode)) {
                if (!is_special_dir(path))
                        return nsr_error_setx(err, ELOOP,
                                              "%s %s: is a symbolic link; nsrun does not write through one (a "
                                              "sandboxed command may have left it), name its target instead",
                                              opt, path);
                o.fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (o.fd < 0)
                        return nsr_error_set(err, errno, "%s %s", opt, path);
        } else if (!S_ISREG(st.st_mode)) {
                /* A pipe or a terminal: open it now, as it is. */
                o.fd = openat(dirfd, leaf, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
                if (o.fd < 0)
                        return nsr_error_set(err, errno, "%s %s", opt, path);
        }
        if (o.fd < 0) {
                o.dirfd = TAKE_FD(dirfd);
                o.name = nsr_strdup(leaf);
                o.dir = TAKE_PTR(dir);
        }
        o.path = nsr_strdup(path);
        *ret = o;
        return 0;
}

static int write_direct(nsr_outfile *o, const void *buf, size_t len, nsr_error *err) {
        struct stat st;
        /* A regular file reached through /dev/fd: replace its content, as
         * opening it with O_TRUNC would have. */
        if (fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(o->fd, 0) < 0)
                return nsr_error_set(err, errno, "%s", o->path);
        int r = nsr_write_all(o->fd, buf, len);
        if (r < 0)
                return nsr_error_set(err, -r, "%s", o->path);
        return 0;
}

int nsr_outfile_write(nsr_outfile *o, const void *buf, size_t len, nsr_error *err) {
        if (o->fd >= 0)
                return write_direct(o, buf, len, err);
        if (o->dirfd < 0)
                return nsr_error_setx(err, EBADF, "%s: not opened", o->path ? o->path : "output file");
        /* The directory itself may have been moved away and replaced (the
         * commit moves a replaced dir into the run's backups): then its
         * path names something else now, and writing into the old one
         * would put the file where the caller does not look. */
        struct stat was, now;
        if (fstat(o->dirfd, &was) < 0)
                return nsr_error_set(err, errno, "%s", o->path);
        if (stat(o->dir, &now) < 0 || now.st_dev != was.st_dev || now.st_ino != was.st_ino) {
                /* A directory made anew (rm -r out; mkdir out) is fine, as
                 * long as no symlink at all leads to it now. */
                int fd = nsr_openat2(AT_FDCWD, o->dir, O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_NO_SYMLINKS);
                if (fd < 0)
                        return nsr_error_setx(err, ESTALE,
                                              "%s: its directory was replaced while the command ran; not written",
                                              o->path);
                safe_close(o->dirfd);
                o->dirfd = fd;
        }
        uint8_t rnd[6];
        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd)) {
                uint64_t x = (uint64_t) getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t) (uintptr_t) buf;
                memcpy(rnd, &x, sizeof(rnd));
        }
        char tmp[NAME_MAX + 1];
        snprintf(tmp, sizeof(tmp), ".nsrun-%02x%02x%02x%02x%02x%02x.tmp", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                 rnd[5]);
        /* O_EXCL never follows a symlink, even in the last component. */
        _cleanup_close_ int fd =
                openat(o->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return nsr_error_set(err, errno, "%s: cannot create a file in its directory", o->path);
        int r = nsr_write_all(fd, buf, len);
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        /* rename(2) replaces whatever is at the name, a symlink included,
         * without following it. */
        if (r >= 0 && renameat(o->dirfd, tmp, o->dirfd, o->name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(o->dirfd, tmp, 0);
                return nsr_error_set(err, -r, "%s", o->path);
        }
        return 0;
}
