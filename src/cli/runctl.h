/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Run control: the bounds a run gets (--timeout, --kill-after, --rlimit,
 * --pids, --tmp-size, --memory, --cpu), their parsers (pure) and the few
 * steps that apply them (rlimits in the child before exec, the deadline in
 * the monitor).
 *
 * Process count. Since Linux 5.14 RLIMIT_NPROC is counted per user
 * namespace and uid (ucounts): inside a new user namespace the limit counts
 * only the sandbox's processes (and threads), while the host user's own
 * count, which includes them, is still held to the host limit. So a
 * sandbox with RLIMIT_NPROC=N contains a fork bomb without touching the
 * user's other processes. Real root (kuid 0) is exempt from RLIMIT_NPROC
 * altogether, in any namespace. See docs/limits.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/outq.h"

/* Every limit prlimit(1) knows, in its order. */
typedef enum nsr_rlimit_id {
        NSR_RLIMIT_AS,
        NSR_RLIMIT_CORE,
        NSR_RLIMIT_CPU,
        NSR_RLIMIT_DATA,
        NSR_RLIMIT_FSIZE,
        NSR_RLIMIT_LOCKS,
        NSR_RLIMIT_MEMLOCK,
        NSR_RLIMIT_MSGQUEUE,
        NSR_RLIMIT_NICE,
        NSR_RLIMIT_NOFILE,
        NSR_RLIMIT_NPROC,
        NSR_RLIMIT_RSS,
        NSR_RLIMIT_RTPRIO,
        NSR_RLIMIT_RTTIME,
        NSR_RLIMIT_SIGPENDING,
        NSR_RLIMIT_STACK,
        _NSR_RLIMIT_MAX,
        _NSR_RLIMIT_INVALID = -EINVAL,
} nsr_rlimit_id;

#define NSR_RLIM_INFINITY UINT64_MAX

typedef struct nsr_rlimit_spec {
        bool has_soft, has_hard; /* "N" sets both; "N:" the soft one; ":N" the hard one */
        uint64_t soft, hard;     /* NSR_RLIM_INFINITY: unlimited */
        bool clamp;              /* a default: never above the current hard limit */
} nsr_rlimit_spec;

/* Defaults (project mode) and bounds. */
#define NSR_KILL_AFTER_DEFAULT_MS 5000u
#define NSR_DURATION_MAX_MS       (UINT64_C(366) * 24 * 3600 * 1000)
#define NSR_PIDS_DEFAULT          4096u
#define NSR_NOFILE_DEFAULT_SOFT   4096u
#define NSR_NOFILE_DEFAULT_HARD   65536u
/* The tmpfs cap without --tmp-size: a quarter of the RAM, at least this. */
#define NSR_TMP_SIZE_MIN (UINT64_C(64) << 20)

typedef struct nsr_runctl {
        uint64_t timeout_ms; /* 0: no timeout */
        uint64_t kill_after_ms;
        bool has_kill_after;
        nsr_rlimit_spec rlim[_NSR_RLIMIT_MAX];
        uint64_t pids;      /* 0: none; RLIMIT_NPROC in the new user namespace, and pids.max */
        bool pids_explicit; /* --pids was given (not the project-mode default) */
        uint64_t tmp_size;  /* --tmp-size; 0: the default (project mode) */
        uint64_t memory;    /* --memory in bytes; 0: none (needs a delegated cgroup) */
        uint64_t cpu_milli; /* --cpu in thousandths of a CPU; 0: none (needs a delegated cgroup) */
} nsr_runctl;

/* "rlimit name" <-> id. Names are prlimit's, in any case ("nofile",
 * "NOFILE"). */
nsr_rlimit_id nsr_rlimit_from_name(const char *name);
const char *nsr_rlimit_name(nsr_rlimit_id id); /* lowercase */
int nsr_rlimit_resource(nsr_rlimit_id id);     /* RLIMIT_* */

/* "90" (seconds), "90s", "1.5s", "500ms", "5m", "1h", "2d" -> milliseconds.
 * -EINVAL for anything else, -ERANGE above NSR_DURATION_MAX_MS. */
int nsr_parse_duration(const char *s, uint64_t *ret_ms);
/* Formats milliseconds the shortest way it parses back ("90s", "1.5s",
 * "5m"). buf of 32 bytes. */
const char *nsr_format_duration(uint64_t ms, char *buf, size_t len);

/* "NAME=SOFT[:HARD]", "NAME=SOFT:", "NAME=:HARD"; values are numbers with
 * an optional K/M/G/T suffix (binary), or "unlimited"/"infinity". */
int nsr_parse_rlimit(const char *s, nsr_rlimit_id *ret_id, nsr_rlimit_spec *ret, nsr_error *err);
/* "1.5" CPUs, "2", "50%" (of one CPU) -> thousandths of a CPU. */
int nsr_parse_cpu(const char *s, uint64_t *ret_milli);

/* Project-mode defaults for whatever the caller left unset: no core
 * dumps, a bounded number of open files, NSR_PIDS_DEFAULT processes. */
void nsr_runctl_project_defaults(nsr_runctl *rc);
/* The --tmp-size default: a quarter of the RAM, at least NSR_TMP_SIZE_MIN. */
uint64_t nsr_tmp_size_default(void);
/* The soft and hard value of one rlimit a project-mode run's command gets:
 * the one set, else the project-mode default, else the caller's own
 * (NSR_RLIM_INFINITY: unlimited). */
void nsr_runctl_effective_rlimit(const nsr_runctl *rc, nsr_rlimit_id id, uint64_t *ret_soft, uint64_t *ret_hard);

/* What this host allows at most, whoever asks: a value above is refused on
 * the command line and in every file, not clamped. */
typedef struct nsr_host_bounds {
        uint64_t pid_max;               /* /proc/sys/kernel/pid_max */
        uint64_t ram;                   /* bytes of RAM (sysinfo) */
        uint64_t hard[_NSR_RLIMIT_MAX]; /* the caller's hard rlimits */
} nsr_host_bounds;

void nsr_host_bounds_detect(nsr_host_bounds *ret);

/* Pure. Whether the option's value (already parsed into rc) is within hb;
 * only the fields opt names are checked ("--pids", "--tmp-size",
 * "--memory", "--rlimit" with rid). A --cpu above the CPUs is no more
 * than no limit at all: not refused. On refusal err says which
 * bound and how large it is. */
int nsr_runctl_check_host(const nsr_runctl *rc, const char *opt, nsr_rlimit_id rid, const nsr_host_bounds *hb,
                          nsr_error *err);

/* Copies what src sets over dst (the later word wins, as on one command
 * line). */
void nsr_runctl_merge(nsr_runctl *dst, const nsr_runctl *src);
/* Whether any limit is set at all. */
bool nsr_runctl_has_rlimits(const nsr_runctl *rc);

/* Applies the rlimits (and --pids as RLIMIT_NPROC) to the calling process;
 * in the child, before exec. */
int nsr_runctl_apply_rlimits(const nsr_runctl *rc, nsr_error *err);

/* One line per limit for the trace's nsrun-only notes; NULL-terminated. */
char **nsr_runctl_describe(const nsr_runctl *rc);

/* ---- the deadline ---------------------------------------------------- */

typedef enum nsr_deadline_step {
        NSR_DEADLINE_NONE, /* nothing to do (yet) */
        NSR_DEADLINE_TERM, /* the timeout expired: send SIGTERM to the sandbox */
        NSR_DEADLINE_KILL, /* kill-after expired too: SIGKILL */
        _NSR_DEADLINE_STEP_MAX,
        _NSR_DEADLINE_STEP_INVALID = -EINVAL,
} nsr_deadline_step;

/* A timerfd that fires at the timeout, then at the kill-after. fd is -1
 * when no timeout is set; put it in the monitor's poll set. */
typedef struct nsr_deadline {
        int fd;
        uint64_t kill_after_ms;
        unsigned fired; /* 0, 1 (TERM sent), 2 (KILL sent) */
} nsr_deadline;

int nsr_deadline_start(nsr_deadline *d, const nsr_runctl *rc, nsr_error *err);
/* After poll said fd is readable: what to do now. */
nsr_deadline_step nsr_deadline_next(nsr_deadline *d);
void nsr_deadline_done(nsr_deadline *d);
/* --events-fd (q not NULL): one JSON line per step,
 * {"event":"timeout","signal":"SIGTERM"} then "SIGKILL", queued: a
 * reader that stopped reading cannot hold the deadline up. */
void nsr_deadline_event(nsr_outq *q, nsr_deadline_step step);

/* Sends sig to every process of the pid namespace whose init is pid1 (a
 * pid of ours), pid 1 excepted: the processes that share its
 * /proc/PID/ns/pid. Returns how many got it. */
size_t nsr_signal_pidns(pid_t pid1, int sig);
