/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Landlock: the ABI the kernel offers, and scoping. glibc 2.36 has no
 * wrappers and the 6.1 headers lack the newer constants. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define NSR_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (UINT64_C(1) << 0)
#define NSR_LANDLOCK_SCOPE_SIGNAL               (UINT64_C(1) << 1)

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

/* ---- confinement without namespaces (best-effort mode) ------------------ */

/* The filesystem rights Landlock knows, as in <linux/landlock.h>. */
#define NSR_LANDLOCK_FS_EXECUTE      (UINT64_C(1) << 0)
#define NSR_LANDLOCK_FS_WRITE_FILE   (UINT64_C(1) << 1)
#define NSR_LANDLOCK_FS_READ_FILE    (UINT64_C(1) << 2)
#define NSR_LANDLOCK_FS_READ_DIR     (UINT64_C(1) << 3)
#define NSR_LANDLOCK_FS_REMOVE_DIR   (UINT64_C(1) << 4)
#define NSR_LANDLOCK_FS_REMOVE_FILE  (UINT64_C(1) << 5)
#define NSR_LANDLOCK_FS_MAKE_CHAR    (UINT64_C(1) << 6)
#define NSR_LANDLOCK_FS_MAKE_DIR     (UINT64_C(1) << 7)
#define NSR_LANDLOCK_FS_MAKE_REG     (UINT64_C(1) << 8)
#define NSR_LANDLOCK_FS_MAKE_SOCK    (UINT64_C(1) << 9)
#define NSR_LANDLOCK_FS_MAKE_FIFO    (UINT64_C(1) << 10)
#define NSR_LANDLOCK_FS_MAKE_BLOCK   (UINT64_C(1) << 11)
#define NSR_LANDLOCK_FS_MAKE_SYM     (UINT64_C(1) << 12)
#define NSR_LANDLOCK_FS_REFER        (UINT64_C(1) << 13) /* ABI 2 */
#define NSR_LANDLOCK_FS_TRUNCATE     (UINT64_C(1) << 14) /* ABI 3 */
#define NSR_LANDLOCK_NET_BIND_TCP    (UINT64_C(1) << 0)  /* ABI 4 */
#define NSR_LANDLOCK_NET_CONNECT_TCP (UINT64_C(1) << 1)  /* ABI 4 */

/* What a ruleset allows. Paths not below any of them can be neither read
 * nor written (Landlock cannot subtract: a path is hidden by granting its
 * siblings, see confine.h). Paths that do not exist are skipped. */
typedef struct nsr_landlock_rules {
        char **read;               /* readable and executable hierarchies */
        char **write;              /* also writable (files and dirs created, removed, renamed) */
        char **write_files;        /* single files (devices) that may be opened for writing */
        bool deny_tcp;             /* ABI >= 4: no TCP bind, and no TCP connect but to connect_ports */
        uint16_t connect_ports[4]; /* --allow-host in best-effort mode: nsrun's relay */
        size_t n_connect_ports;
        bool scope; /* ABI >= 6: abstract unix sockets and signals scoped */
} nsr_landlock_rules;

/* What a ruleset built for this kernel covers. */
typedef struct nsr_landlock_info {
        int abi;
        size_t n_rules;
        bool fs, tcp, scope;
} nsr_landlock_info;

/* Builds the ruleset for this kernel's ABI (a ruleset fd, close-on-exec)
 * in the caller, so that errors are found before any process exists; the
 * sandbox child only calls nsr_landlock_enforce(). Needs ABI >= 1. The
 * rights an older ABI lacks are simply not handled. */
int nsr_landlock_build(const nsr_landlock_rules *rules, int *ret_fd, nsr_landlock_info *ret_info, nsr_error *err);
/* landlock_restrict_self() with that ruleset (needs no_new_privs). */
int nsr_landlock_enforce(int ruleset_fd, nsr_error *err);
