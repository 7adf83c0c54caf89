/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Wrappers for system calls that glibc 2.36 lacks, and constants missing
 * from the 6.1 kernel headers Debian 12 ships. */
#pragma once

#include <errno.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef MOUNT_ATTR_NOSYMFOLLOW
#define MOUNT_ATTR_NOSYMFOLLOW 0x00200000
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif

/* openat2, tried again while it says EAGAIN: with RESOLVE_IN_ROOT,
 * RESOLVE_BENEATH or RESOLVE_NO_XDEV, a lookup through ".." that a rename
 * or a mount anywhere on the machine may have raced is refused, and the
 * kernel asks the caller to try again (a path with ".." failed a project
 * run's build beside other sandboxes' mounts). */
static inline int nsr_openat2_mode(int dirfd, const char *path, uint64_t flags, mode_t mode, uint64_t resolve) {
        struct open_how how = { .flags = flags, .mode = mode, .resolve = resolve };
        for (unsigned tries = 0;; tries++) {
                int fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
                if (fd >= 0 || errno != EAGAIN || tries >= 64)
                        return fd;
        }
}

static inline int nsr_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve) {
        return nsr_openat2_mode(dirfd, path, flags, 0, resolve);
}

/* open_tree_attr(2), Linux 6.15: open_tree(2) with OPEN_TREE_CLONE that
 * also sets the clone's flags, as mount_setattr(2) would. The same number
 * on every architecture. Older kernels: ENOSYS (or a seccomp filter's
 * errno, such as Docker's EPERM). */
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
static inline int nsr_open_tree_attr(int dirfd, const char *path, unsigned flags, struct mount_attr *attr) {
        return (int) syscall(__NR_open_tree_attr, dirfd, path, flags, attr, sizeof(*attr));
}

static inline int nsr_pivot_root(const char *new_root, const char *put_old) {
        return (int) syscall(SYS_pivot_root, new_root, put_old);
}

/* A fork-like clone: no new stack, returns 0 in the child. glibc keeps no
 * pid cache since 2.25, so getpid() is right in the child afterwards. */
static inline pid_t nsr_raw_clone(unsigned long flags, int *pidfd) {
        return (pid_t) syscall(SYS_clone, flags, NULL, pidfd, NULL, NULL);
}

static inline int nsr_pidfd_send_signal(int pidfd, int sig) {
        return (int) syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}
