/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Landlock: the ABI the kernel offers, and scoping. glibc 2.36 has no
 * wrappers and the 6.1 headers lack the newer constants. */
#pragma once

#include <stdint.h>

#include "error.h"

#define NSR_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (UINT64_C(1) << 0)
#define NSR_LANDLOCK_SCOPE_SIGNAL (UINT64_C(1) << 1)

/* The Landlock ABI version, 0 when Landlock is unavailable. */
int nsr_landlock_abi(void);
/* The same, or -errno saying why it is unavailable: -ENOSYS (not built
 * in, or hidden by a seccomp filter), -EOPNOTSUPP (built in, not enabled
 * at boot). */
int nsr_landlock_abi_probe(void);
/* Restricts the calling process so it can reach neither abstract unix
 * sockets nor processes (signals) outside its own Landlock domain. Needs
 * ABI 6 and no_new_privs. */
int nsr_landlock_scope(nsr_error *err);
