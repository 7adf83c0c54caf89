/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A cgroup v2 group for one run: --memory (memory.max), --cpu (cpu.max)
 * and --pids (pids.max, beside RLIMIT_NPROC).
 *
 * It needs a delegated subtree: the group is made beside nsrun's own
 * cgroup, in its parent, which must be writable by the caller (its
 * cgroup.procs too: moving a process between two groups needs write access
 * to their common ancestor) and must offer the controllers. A systemd user
 * session delegates such a subtree (user@UID.service); nsrun never starts
 * systemd-run itself. The sandbox is cloned straight into the group
 * (clone3 with CLONE_INTO_CGROUP), so no process of it ever runs outside,
 * and cgroup.kill ends whatever is left. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "cli/runctl.h"

typedef struct nsr_cgroup nsr_cgroup;

/* Whether the limits ask for a cgroup: --memory, --cpu. (--pids alone
 * uses one when there is one.) */
bool nsr_cgroup_required(const nsr_runctl *rc);

/* Where a run's group would go, and whether it can: 0 with *ret_dir set
 * (the parent dir, absolute), or -errno with the reason and what would make
 * it work in err. controllers: "memory", "cpu", "pids", space-separated;
 * NULL for all three. */
int nsr_cgroup_locate(const char *controllers, char **ret_dir, nsr_error *err);

/* Makes the group for a run with the limits in rc. */
int nsr_cgroup_create(const nsr_runctl *rc, nsr_cgroup **ret, nsr_error *err);
/* An O_PATH fd of the group, for CLONE_INTO_CGROUP. */
int nsr_cgroup_fd(const nsr_cgroup *cg);
/* clone(2)'s flags and SIGCHLD, into the group: clone3. Returns as fork. */
pid_t nsr_cgroup_clone(const nsr_cgroup *cg, unsigned long flags);
/* What the group hit, for the report: "memory.max (oom_kill 2)",
 * "pids.max (3 forks refused)"; NULL-terminated, may be empty. */
char **nsr_cgroup_hits(const nsr_cgroup *cg);
/* cgroup.kill, wait (bounded) until it is empty, remove it. NULL is fine. */
nsr_cgroup *nsr_cgroup_destroy(nsr_cgroup *cg);
DEFINE_CLEANUP_FUNC(nsr_cgroup *, nsr_cgroup_destroy)
