/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The start fence by the multigrain ctime floor (fence.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/util.h"
#include "project/fence.h"

#define FLOOR_FILE "ctime-floor"

static bool after(const struct timespec *a, const struct timespec *b) {
        return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* The file systems whose ctimes come from the kernel's timestamp helpers
 * (inode_set_ctime_current, current_time), which apply the floor. */
static bool stamps_from_kernel(int dirfd, unsigned long *ret_type) {
        struct statfs sf;
        if (fstatfs(dirfd, &sf) < 0)
                return false;
        *ret_type = (unsigned long) sf.f_type;
        switch ((unsigned long) sf.f_type) {
        case EXT4_SUPER_MAGIC: /* ext2, ext3 and ext4 share it */
        case XFS_SUPER_MAGIC:
        case BTRFS_SUPER_MAGIC:
        case TMPFS_MAGIC:
                return true;
        default:
                return false;
        }
}

bool nsr_fence_raise_floor(int dirfd, const struct timespec *t) {
        unsigned long fs_type = 0;
        if (!stamps_from_kernel(dirfd, &fs_type))
                return false;
        _cleanup_close_ int fd =
                openat(dirfd, FLOOR_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
        /* A floor file made read-only still raises the floor; it only
         * cannot keep the proof, which every run then makes. */
        bool writable = fd >= 0;
        if (fd < 0 && errno == EACCES)
                fd = openat(dirfd, FLOOR_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 && (errno == ELOOP || errno == EISDIR)) {
                /* Not the file this makes (a symlink is never followed):
                 * this run waits, and the next makes its own. */
                (void) unlinkat(dirfd, FLOOR_FILE, errno == EISDIR ? AT_REMOVEDIR : 0);
                return false;
        }
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
                return false;
        /* The fstat above asked for its ctime: a change in the same tick
         * gets a fine-grained ctime, and the kernel never hands out a
         * coarse one earlier than that afterwards. A change in a later
         * tick gets that tick's coarse ctime; the next one is in its tick. */
        bool raised = false;
        for (int i = 0; i < 4 && !raised; i++) {
                if (fchmod(fd, 0600) < 0 || fstat(fd, &st) < 0)
                        return false;
                raised = after(&st.st_ctim, t);
        }
        if (!raised)
                return false;
        /* The proof below is about the kernel, not about this run: once it
         * held in this boot on this file system, the floor file says so,
         * and later runs skip its new inode (an inode allocation, up to
         * 0.5 ms on ext4 without a journal: bench/README.md, "Twelfth
         * pass"). The state dir is the user's own and no sandbox reaches
         * it; a file that says anything else is proved again. */
        char boot[40], key[128], seen[128];
        nsr_boot_id(boot);
        int klen = snprintf(key, sizeof(key), "proved %s %llu %lx\n", boot, (unsigned long long) st.st_dev, fs_type);
        bool keyed = boot[0] && klen > 0 && (size_t) klen < sizeof(key);
        if (keyed && pread(fd, seen, sizeof(seen), 0) == klen && memcmp(seen, key, (size_t) klen) == 0)
                return true;
        /* The proof, which holds whatever the kernel does: a new inode
         * gets the ctime any unasked change would get now (the coarse
         * clock, or the floor where there is one), and that time never
         * goes back. After t, every later write is after t. */
        _cleanup_close_ int probe = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        struct stat pst;
        if (probe < 0 || fstat(probe, &pst) < 0)
                return false;
        if (!after(&pst.st_ctim, t) || after(&st.st_ctim, &pst.st_ctim))
                return false;
        if (keyed && writable && pwrite(fd, key, (size_t) klen, 0) == klen)
                (void) ftruncate(fd, klen);
        return true;
}
