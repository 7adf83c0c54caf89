/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seccomp side of transparent egress (issue 27): a program that
 * sends every connect() to the command's listener (SECCOMP_RET_USER_NOTIF)
 * and refuses io_uring, and how it shares the one listener a task may
 * have with the refused-call record (refused.h).
 *
 * io_uring: its IORING_OP_CONNECT would connect without a connect()
 * system call, and so without nsrun's decision. The shipped policies
 * refuse io_uring (ENOSYS) already; this program refuses it too, so a
 * policy that allows it (permissive, a user's own) cannot open that way
 * round: with transparent egress on, io_uring_setup always fails with
 * ENOSYS, whatever the policy says.
 *
 * Every arch the policies cover is covered: the native one, and on
 * x86_64 i386 (connect and socketcall's SYS_CONNECT) and x32. */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* connect -> USER_NOTIF, io_uring_* -> ENOSYS, clone with CLONE_FILES
 * but not CLONE_THREAD -> EPERM, clone3 -> ENOSYS (glibc falls back to
 * clone), the rest ALLOW. */
int nsr_connect_prog(char **ret, size_t *ret_len, nsr_error *err);

/* first, then second, as one program: every "allow" return of first goes
 * on to second, every other return of first stands. Both are whole
 * programs that read seccomp_data from the start. -E2BIG past the
 * kernel's limit, -EOPNOTSUPP for a return taken from the accumulator. */
int nsr_bpf_chain(const char *first, size_t first_len, const char *second, size_t second_len, char **ret,
                  size_t *ret_len);

/* Is the call in d a connect (any covered arch)? *ret_args gets where
 * its three arguments are: 0 in the registers, 1 in memory at
 * d->args[1] (i386 socketcall). */
bool nsr_connect_is_connect(const struct seccomp_data *d, int *ret_args);

/* Can this kernel put a socket in place of the sandbox's
 * (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SETFD, Linux 5.14;
 * SO_NETNS_COOKIE comes with the same release)? A version check, since
 * a real probe needs a filter and a child. With the test hooks,
 * NSRUN_TEST_NO_FD_INJECT=1 says no. */
bool nsr_connect_inject_available(void);
