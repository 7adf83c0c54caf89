/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What launch.c (clone, the shared setup), child.c (the sandbox child) and
 * monitor.c (the monitor) share: the launch, and when the child waits for
 * the monitor. Private to those three files. */
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "base/affinity.h"
#include "base/outq.h"
#include "base/util.h"
#include "egress/dns.h"
#include "egress/relay.h"
#include "sandbox/cgroup.h"
#include "sandbox/direct.h"
#include "sandbox/egresshelper.h"
#include "sandbox/launch.h"
#include "sandbox/rootfs.h"

/* What a child that shares the monitor's memory allocates and still holds
 * at its execve (or its _exit): the monitor frees it afterwards. */
struct child_leftovers {
        char **env;  /* the environment built for the command */
        char **args; /* argv with --argv0 */
};

typedef struct launch {
        const nsr_plan *plan;
        const nsr_launch_extra *extra;
        nsr_bpf *progs; /* every BPF program, in load order */
        size_t n_progs;
        char **env;
        uint64_t caps_keep;
        bool caps_touch;
        bool caps_bounding;  /* also cut the bounding set (user namespaces) */
        bool landlock_scope; /* asked for and available (ABI >= 6) */
        bool can_map_all;    /* uid 0 with CAP_SETUID and CAP_SETGID: may map every id it has */
        char *host_tty;
        char *old_cwd;
        uid_t real_uid;
        gid_t real_gid;
        int err_pipe[2];    /* child -> monitor: nsr_error, CLOEXEC */
        int status_pipe[2]; /* reaper -> monitor: the command's wait status */
        int go_pipe[2];     /* monitor -> child: release; HUP = monitor died */
        int gate_pipe[2];   /* monitor -> child: extra->after_clone is done (rootfs.h) */
        int slot_pipe[2];   /* monitor -> child: extra->fill_slots's ops, then EOF */
        int pid_pipe[2];    /* --pidns: the sandbox's real pid, child -> monitor */
        int pid1_ready;     /* pid 1 -> the command: pid 1 is confined; -1: no pid 1 */
        /* The root's detached mounts and a clone of /proc (rootfs.h), -1
         * where none: closed by pid 1 beside the command's confinement. */
        int detached[NSR_MOUNT_DETACHED_MAX + 1];
        /* Project mode: the same handed to the monitor before pid 1 and
         * the command let go of theirs (child.c, hand_detached), so that
         * theirs are not the last references: the monitor holds them until
         * the command runs, and its closes pay the grace periods. */
        int detach_sock[2];
        int held[NSR_MOUNT_DETACHED_MAX + 1];
        /* --lock-file: the fds whose locks pid 1 holds (child.c). */
        int *lock_fds;
        size_t n_lock_fds;
        nsr_relay *relay;          /* --allow-host: the egress relay, or NULL */
        nsr_dns *dns;              /* --allow-host: the DNS answerer, or NULL */
        nsr_egress_helper *helper; /* the process that serves it */
        bool helper_lazy;          /* forked on the sandbox's first use of the network (monitor.c) */
        bool helper_failed;        /* ... and that fork failed: no network, the record says it died */
        sigset_t old_mask;
        struct rlimit old_nofile; /* launch_raise_nofile's */
        bool raised_nofile;
        int snmp_fd, snmp6_fd; /* the sandbox's /proc/net/snmp{,6}, -1 when unused */
        nsr_cgroup *cgroup;    /* --memory, --cpu, --pids: the run's cgroup */
        char *notify_prog;     /* the listener form of progs[0] (refused.h), or NULL */
        size_t notify_len;
        int notify_sock[2];                /* command -> monitor: the listener fd */
        int listener;                      /* the monitor's listener fd, or -1 */
        bool notify_alone;                 /* notify_prog is the connect program alone, loaded before progs[0] */
        bool notify_connect;               /* notify_prog sends connect() to the listener (seccomp/connect.h) */
        nsr_direct *direct;                /* transparent connect: the helper's part, until it forks */
        int direct_sock;                   /* the monitor's end of the socket to the helper, or -1 */
        nsr_direct_sent direct_sent;       /* the connects passed on to the helper, until it answers */
        bool direct_unavailable;           /* --allow-host, but the kernel cannot inject fds */
        nsr_outq events_q;                 /* --events-fd: the monitor's lines (timeout, refused calls) */
        nsr_affinity cpus;                 /* the caller's CPU set while the setup runs on one CPU */
        bool cpus_split;                   /* ... or on CPUs other than the monitor's (base/affinity.h) */
        pid_t monitor_pid;                 /* the monitor as the child names it, or 0 (a new pid namespace) */
        struct child_leftovers *leftovers; /* shared memory: what the child allocated, for the monitor to free */
} launch;

/* Real root in project mode maps its whole id range, which only a process
 * outside the new user namespace may write. */
static inline bool parent_maps_ids(const launch *l) {
        return l->plan->map_all_ids && l->can_map_all && l->plan->unshare_user && l->plan->userns_block_fd == -1;
}

/* The child waits for the monitor's go before it sets anything up: the
 * monitor writes the id maps first, or the user asked to block. */
static inline bool child_waits_early(const launch *l) {
        return l->plan->userns_block_fd != -1 || parent_maps_ids(l);
}

/* Otherwise the child builds the sandbox at once but waits before the
 * command starts while the monitor writes --info-fd/--json-status-fd: if
 * that write fails, the command must never run (as with bwrap). */
static inline bool child_waits_late(const launch *l) {
        return !child_waits_early(l) && (l->plan->info_fd != -1 || l->plan->json_status_fd != -1);
}

static inline bool need_reaper(const nsr_plan *p) {
        if (p->as_pid_1)
                return false;
        return p->unshare_pid || p->lock_files || p->sync_fd != -1;
}

/* file is relative to /proc. The child keeps an fd to the /proc it started
 * with, because after the pivot the sandbox's /proc may be missing, read-only
 * or belong to another pid namespace. */
static inline int write_proc(int procfd, const char *file, const char *data) {
        _cleanup_close_ int fd = openat(procfd, file, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return nsr_write_all(fd, data, strlen(data));
}

/* Many binds need many fds at once: the soft RLIMIT_NOFILE raised to the
 * hard one for the setup, when the plan's mounts need more (the old one
 * kept, which the command gets back). The monitor before the clone, and
 * the child again once its slots are filled. */
void launch_raise_nofile(launch *l);

/* child.c: the cloned child; it execs the command or exits. */
_noreturn_ void launch_child_main(launch *l);

/* The stack of a child that shares the monitor's memory (launch.c). */
#define SHARED_VM_STACK (512 * 1024)

/* The same, for a child that shares the monitor's memory until its execve:
 * it works on its own copy of *l and of the environment, so that nothing
 * it changes (fds it closes, PWD) shows in the monitor's; what it
 * allocated and holds at its execve is left in *l->leftovers, for the
 * monitor to free once the child is gone or exec'd. */
_noreturn_ void launch_child_main_shared(const launch *l);

/* monitor.c: waits for the command, forwarding signals, serving the
 * listener and the session, and fills ret. */
int launch_monitor(launch *l, pid_t child, nsr_launch_result *ret, nsr_error *err);
/* Forks the egress helper (egresshelper.h). */
int launch_start_helper(launch *l, nsr_error *err);
