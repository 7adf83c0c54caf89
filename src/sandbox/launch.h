/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Carrying a validated plan out: clone, the sandbox child, the monitor. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/evloop.h"
#include "cli/plan.h"
#include "egress/rules.h"

typedef struct nsr_bpf {
        char *data;
        size_t len;
} nsr_bpf;

typedef struct nsr_launch_result {
        int exit_code;   /* what nsrun exits with: the command's code or 128+N */
        int wait_status; /* the command's raw wait status, when known */
        bool exec_done;  /* the command was executed */
        pid_t child_pid;
        int forwarded_signal; /* the first signal nsrun got and passed on, or 0 */
        bool landlock;        /* Landlock scoping was applied */
        bool net_on;          /* --allow-host: the relay ran; net holds its record */
        nsr_egress_log net;   /* the caller frees it with nsr_egress_log_free() */
        /* --allow-host with a network namespace: connect() is decided by
         * nsrun (sandbox/direct.h), or the kernel cannot put a socket in
         * place and only the proxy serves. */
        bool direct_on;
        bool direct_unavailable;
        /* With --unshare-net in project mode: how many connections found no
         * route (ENETUNREACH) in the sandbox's network namespace. */
        uint64_t no_route;
        bool timed_out;          /* --timeout expired: the sandbox got SIGTERM (exit_code is 124) */
        bool killed_after;       /* ... and SIGKILL after --kill-after */
        uint64_t events_dropped; /* --events-fd lines of the monitor its reader did not take */
        char **limits_hit;       /* the run's cgroup limits that struck ("pids.max (3 forks refused)"),
                            * NULL-terminated or NULL; the caller frees it */
        int mnt_ns;              /* nsr_launch_extra.hold_mounts: the sandbox's mount namespace, or -1 */
} nsr_launch_result;

/* The exit status of a run that hit --timeout, as timeout(1). */
#define NSR_EXIT_TIMEOUT 124

/* Extra inputs the plan does not carry itself. */
/* A session (sandbox/agent.h, project/session.h): the command is replaced by the session agent,
 * which forks commands on request. agent_fd and monitor_fd are the two
 * ends of a SOCK_SEQPACKET socketpair (the sandbox keeps agent_fd only);
 * the session server's fds are sources of the monitor's event loop
 * (base/evloop.h), registered through attach. */
typedef struct nsr_launch_session {
        int agent_fd;
        int monitor_fd;
        /* The monitor's own fds that the sandbox's pid 1 must not keep
         * (the agent closes every fd but its own). */
        int sandbox_close[3];
        /* Registers the server's fds with the monitor's event loop; with
         * NULL, at the loop's end, takes them out again. -errno. */
        int (*attach)(nsr_evloop *loop, void *data);
        void *data;
        /* Set to the sandbox's pid 1 (as the monitor sees it) before the
         * monitor loop: killing it ends everything inside. */
        pid_t *sandbox_pid;
        /* With the refused record: each refused call (refused.h's
         * on_call, with data), and set to true once the listener is in. */
        void (*refused_call)(void *data, pid_t sid, uint32_t arch, int nr, int errnum, const char *comm);
        bool *refused_recorded;
} nsr_launch_session;

typedef struct nsr_launch_extra {
        /* Seccomp BPF programs to load before the plan's own --seccomp and
         * --add-seccomp-fd programs (compiled --seccomp-policy files). */
        const nsr_bpf *bpf;
        size_t n_bpf;
        /* Once the command's status is known, kill whatever is left in the
         * sandbox and wait for it (project mode: nothing may write while
         * nsrun captures and applies). Needs a pid namespace. */
        bool kill_leftovers;
        /* When set: the command starts only once the coarse clock (the one
         * file timestamps come from) is past this time, so every host
         * write after the start has a ctime after it (docs/conflicts.md). */
        struct timespec start_fence;
        /* Record what the first program (bpf[0]) refuses, through a
         * seccomp listener the monitor answers (refused.h); initialised by
         * the caller with that program. NULL: no record. */
        struct nsr_refused *refused;
        const nsr_launch_session *session; /* NULL: run the plan's command */
        /* Keep the sandbox's mount namespace once the command is done:
         * ret->mnt_ns holds it (the caller sets it to -1 first; it stays
         * -1 when the namespace could not be opened). Its mounts are torn
         * down, and an overlay's upper file system synced, when the last
         * holder closes it, not when the sandbox's pid 1 exits. */
        bool hold_mounts;
        /* Or NULL: the caller's work that the sandbox's root waits for
         * (project mode's run dir, which holds the --overlay ops' upper and
         * work dirs). The monitor runs it after the clone, while the child
         * maps its ids and builds the root up to the first of those dirs
         * (nsr_mount_ctx.gate_fd); a failure kills the child, nothing ran,
         * and nsr_launch returns it. The dirs it makes are below
         * after_clone_under, a dir that exists before the launch. */
        int (*after_clone)(void *userdata, nsr_error *err);
        void *after_clone_data;
        const char *after_clone_under;
        /* Or NULL: the caller's plan still holds NSR_OP_SLOT ops (project
         * mode's hidden paths, profile.h), which the monitor fills right
         * after the clone and the id maps, before after_clone: fill_slots
         * fills them in the caller's plan (the one given to nsr_launch)
         * and returns their ops packed (nsr_plan_slots_pack). The child
         * makes its namespaces and the root's first mounts meanwhile, and
         * takes them when its build reaches the first slot (rootfs.h,
         * take_slots). A failure kills the child: nothing ran, and
         * nsr_launch returns it. */
        int (*fill_slots)(void *userdata, char **ret_packed, size_t *ret_len, nsr_error *err);
        void *fill_slots_data;
} nsr_launch_extra;

/* Runs the plan and waits for the command. Returns 0 when the command ran
 * (its status is in *ret), or a negative errno with err set when nsrun
 * could not set up or execute the command. */
int nsr_launch(const nsr_plan *plan, const nsr_launch_extra *extra, nsr_launch_result *ret, nsr_error *err);
