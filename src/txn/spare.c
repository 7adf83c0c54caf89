/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/durable.h"
#include "base/syscalls.h"
#include "base/util.h"
#include "txn/spare.h"
#include "txn/state.h"

#define SPARE_TMP_PREFIX "run.spare.tmp-"

/* A dir of ours that no one else may write, holding exactly the names in
 * want (NULL-terminated; none: empty), and besides them only the durable
 * writers' spares (base/durable.h) when spares is set. */
static bool dir_is(int at, const char *name, const char *const *want, bool spares) {
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(at, name, O_NOFOLLOW, &d) < 0)
                return false;
        struct stat st;
        if (fstat(dirfd(d), &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
                return false;
        size_t n_want = 0, seen = 0;
        while (want && want[n_want])
                n_want++;
        FOREACH_DIRENT(de, d, return false) {
                bool known = false;
                for (size_t i = 0; i < n_want && !known; i++)
                        known = streq(de->d_name, want[i]);
                if (known) {
                        seen++;
                        continue;
                }
                if (!spares || !nsr_startswith(de->d_name, NSR_DURABLE_SPARE_PREFIX) ||
                    !nsr_durable_spare_is(dirfd(d), de->d_name))
                        return false;
        }
        return seen == n_want;
}

static bool spare_is_whole(int run_fd) {
        static const char *const top[] = { "p0", "trash", NULL };
        static const char *const p0[] = { "upper", "work", NULL };
        return dir_is(run_fd, ".", top, true) && dir_is(run_fd, "p0", p0, false) &&
               dir_is(run_fd, "p0/upper", NULL, false) && dir_is(run_fd, "p0/work", NULL, false) &&
               dir_is(run_fd, "trash", NULL, false);
}

int nsr_run_take_spare(int statefd, const char *rel, size_t n_projects) {
        if (n_projects != 1)
                return -EINVAL;
        if (renameat2(statefd, NSR_RUN_SPARE, statefd, rel, RENAME_NOREPLACE) < 0)
                return -errno;
        int fd = openat(statefd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && spare_is_whole(fd))
                return fd;
        /* Not what nsr_run_make_spare makes: it goes, and the run makes
         * its own dir under the same name. */
        safe_close(fd);
        nsr_error e = { 0 };
        (void) nsr_rm_rf_at(statefd, rel, &e);
        return -EUCLEAN;
}

/* What makers killed half-way left (the name holds their pid): gone after
 * ten minutes, when no maker can still be at work on it. */
static void drop_stale_temps(int statefd) {
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(statefd, ".", 0, &d) < 0)
                return;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        FOREACH_DIRENT(de, d, break) {
                struct stat st;
                if (strncmp(de->d_name, SPARE_TMP_PREFIX, strlen(SPARE_TMP_PREFIX)) != 0 ||
                    fstatat(statefd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now.tv_sec - st.st_mtime < 600)
                        continue;
                nsr_error e = { 0 };
                (void) nsr_rm_rf_at(statefd, de->d_name, &e);
        }
}

/* The one extended attribute overlayfs leaves on an upper dir's root (the
 * layer's uuid, from Linux 6.6 on): the next mount writes its own. */
#define OVERLAY_UUID_XATTR "user.overlay.uuid"

/* An empty dir of ours that only we may write, with no special mode bits
 * and no extended attributes but an overlay's uuid, which goes (any other
 * overlay xattr would change what the next run's overlay shows): as good
 * as a new one. */
static bool empty_plain_dir(int at, const char *name) {
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(at, name, O_NOFOLLOW, &d) < 0)
                return false;
        int fd = dirfd(d);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07022) ||
            st.st_nlink != 2)
                return false;
        FOREACH_DIRENT(de, d, return false) {
                (void) de;
                return false;
        }
        char names[64];
        ssize_t n = flistxattr(fd, names, sizeof(names));
        if (n == (ssize_t) sizeof(OVERLAY_UUID_XATTR) && memcmp(names, OVERLAY_UUID_XATTR, (size_t) n) == 0)
                n = fremovexattr(fd, OVERLAY_UUID_XATTR) == 0 ? flistxattr(fd, NULL, 0) : -1;
        return n == 0;
}

/* Moves what the last run left in old_fd/trash (txn/state.h,
 * nsr_state_trash_background) into the spare being made, when it is
 * exactly what this code would make: its emptied upper and work dirs and
 * the trash dir itself. Each one reused is an inode neither freed nor made:
 * on ext4 without a journal every inode freed makes each later allocation
 * in its group slower for a minute or more (base/durable.h). Nothing in
 * old_fd/trash is followed; what is not taken stays for the caller to
 * remove. */
static bool adopt(int old_fd, const char *from, int fd, const char *to, mode_t mode) {
        return old_fd >= 0 && empty_plain_dir(old_fd, from) && renameat(old_fd, from, fd, to) == 0 &&
               fchmodat(fd, to, mode, 0) == 0;
}

/* Removes what run_fd/trash holds; with keep_reusable, not what
 * nsr_run_make_spare may still reuse. */
static void trash_clear(int run_fd, bool keep_reusable) {
        static const char *const work[] = { "work", NULL };
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(run_fd, "trash", O_NOFOLLOW, &d) < 0)
                return;
        int t = dirfd(d);
        FOREACH_DIRENT(de, d, break) {
                /* overlayfs's own work dir (mode 0) is not read here: when it
                 * is not empty, the work dir is not reused and goes later. */
                bool wanted = keep_reusable && ((streq(de->d_name, "p0-upper") && dir_is(t, "p0-upper", NULL, false)) ||
                                                (streq(de->d_name, "p0-work") && dir_is(t, "p0-work", work, false)));
                if (wanted)
                        continue;
                nsr_error e = { 0 };
                (void) nsr_rm_rf_at(t, de->d_name, &e);
        }
}

void nsr_run_trash_trim(int run_fd) {
        trash_clear(run_fd, true);
}

void nsr_run_make_spare(int statefd, int old_fd) {
        struct stat st;
        if (fstatat(statefd, NSR_RUN_SPARE, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return;
        drop_stale_temps(statefd);
        char tmp[sizeof(SPARE_TMP_PREFIX) + 24];
        snprintf(tmp, sizeof(tmp), SPARE_TMP_PREFIX "%d", (int) getpid());
        if (mkdirat(statefd, tmp, 0700) < 0)
                return;
        _cleanup_close_ int fd = openat(statefd, tmp, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        bool ok = fd >= 0 && mkdirat(fd, "p0", 0700) == 0;
        /* overlayfs leaves its own work dir in the work dir; empty, it
         * goes (the next mount makes it again anyway). */
        if (ok && old_fd >= 0)
                (void) unlinkat(old_fd, "trash/p0-work/work", AT_REMOVEDIR);
        ok = ok && (adopt(old_fd, "trash/p0-upper", fd, "p0/upper", 0755) || mkdirat(fd, "p0/upper", 0755) == 0);
        ok = ok && (adopt(old_fd, "trash/p0-work", fd, "p0/work", 0700) || mkdirat(fd, "p0/work", 0700) == 0);
        /* The files the run writes first go in as renames of these. */
        if (ok)
                (void) nsr_durable_spares_make(fd);
        /* The trash dir last, once nothing else in it is wanted. */
        if (ok && old_fd >= 0)
                trash_clear(old_fd, false);
        ok = ok && (adopt(old_fd, "trash", fd, "trash", 0700) || mkdirat(fd, "trash", 0700) == 0);
        if (ok && renameat2(statefd, tmp, statefd, NSR_RUN_SPARE, RENAME_NOREPLACE) == 0)
                return;
        nsr_error e = { 0 };
        (void) nsr_rm_rf_at(statefd, tmp, &e);
}

void nsr_run_drop_spare(int statefd) {
        nsr_error e = { 0 };
        (void) nsr_rm_rf_at(statefd, NSR_RUN_SPARE, &e);
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(statefd, ".", 0, &d) < 0)
                return;
        FOREACH_DIRENT(de, d, break) {
                if (strncmp(de->d_name, SPARE_TMP_PREFIX, strlen(SPARE_TMP_PREFIX)) == 0)
                        (void) nsr_rm_rf_at(statefd, de->d_name, &e);
        }
}
