/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The new root: runs the plan's ops in order and pivots into the result.
 * Everything here runs in the sandbox child, inside its new mount
 * namespace, before any capability is dropped. */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "cli/plan.h"

typedef struct nsr_mount_ctx {
        const char *host_tty; /* ttyname(1) when nsrun started, for /dev/console */
        bool fresh_proc;      /* a pid namespace of our own: --proc mounts a new procfs */
        /* Or NULL: what /etc/resolv.conf says in the sandbox, whatever the
         * ops put there (egress/dns.h); mounted read-only, last. */
        const char *resolv_conf;
        /* Or -1: a pipe the monitor writes one byte to once the dirs below
         * gate_under exist (project mode makes its run dir there while the
         * root is built). gate_under is opened first, while every host
         * path is reachable (the new root covers /tmp); the upper and work
         * dirs of an --overlay op below it are opened from it once the byte
         * came, and never before: until then a path into the run dir may
         * lead to what the monitor is about to remove (a spare it refused).
         * The build also waits for the byte before it returns; no byte
         * (the monitor failed, or died) fails it. */
        int gate_fd;
        const char *gate_under;
        /* Or NULL: an O_PATH fd of /proc that the caller writes through
         * after the build (a nested user namespace's maps). A root built in
         * place makes the host's tree read-only, /proc with it: the fd is
         * then swapped for one of a clone made before. */
        int *proc_after;
        /* ... and it serves only the nested namespace's own uid_map and
         * gid_map (no sysctl): then a fresh procfs of a --proc op may stand
         * in for that clone (rootfs.c, fresh_proc_for_ids). */
        bool proc_after_ids_only;
        /* Or NULL: set when the fd became that fresh procfs's, which the
         * build attaches: the caller may close it at any time, for free. */
        bool *proc_after_fresh;
        /* Or NULL: where a root built in place leaves the detached mounts
         * it made (NSR_MOUNT_DETACHED_MAX fds, -1 where none: the scratch,
         * the shared tmpfs, the gate's clone, the hidden files' /dev/null),
         * for the caller to close when that costs least: each costs an RCU
         * grace period as it goes (0.03 to 0.04 ms). NULL: closed on
         * return. */
        int *detached_out;
        /* Or NULL: the ops of the plan's slots (NSR_OP_SLOT: project mode's
         * hidden paths, which the monitor looks up beside the child), as
         * nsr_plan_slots_unpack() gives them; called once, when the build
         * first needs them: at the first slot, or at the gate (the monitor
         * sends them before it opens that), so that the mounts before them
         * go on meanwhile. A plan with slots and no take_slots builds no
         * root. */
        int (*take_slots)(void *data, nsr_plan ***ret_slots, size_t *ret_n, nsr_error *err);
        void *take_slots_data;
} nsr_mount_ctx;

#define NSR_MOUNT_DETACHED_MAX 4

/* Builds the root described by the plan's ops and pivots into it. On
 * return the old root is detached and the cwd is the new "/". */
int nsr_mount_build_root(const nsr_plan *plan, const nsr_mount_ctx *ctx, nsr_error *err);

/* How many fds the build keeps open at once for this plan, so the caller
 * can raise RLIMIT_NOFILE before it starts. */
size_t nsr_mount_fds_needed(const nsr_plan *plan);

/* A new procfs, of the caller's pid namespace, over /proc of the current
 * root (in a mount namespace of the caller's own), its writable corners
 * read-only as the build makes them: a session's agent, init of the
 * commands' pid namespace, shows them that namespace. */
int nsr_rootfs_proc_renew(nsr_error *err);
