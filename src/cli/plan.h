/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsr_plan: the single source of truth for a run.
 *
 * The parser fills it, nsr_plan_validate() checks it once, and from then on
 * every executor (trace, launcher, mount, caps, seccomp) only reads it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/util.h"
#include "cli/runctl.h"
#include "egress/rules.h"

typedef enum nsr_op_type {
        NSR_OP_BIND,
        NSR_OP_RO_BIND,
        NSR_OP_DEV_BIND,
        NSR_OP_BIND_FD,
        NSR_OP_RO_BIND_FD,
        NSR_OP_REMOUNT_RO,
        NSR_OP_OVERLAY,
        NSR_OP_TMP_OVERLAY,
        NSR_OP_RO_OVERLAY,
        NSR_OP_PROC,
        NSR_OP_DEV,
        NSR_OP_TMPFS,
        NSR_OP_MQUEUE,
        NSR_OP_DIR,
        NSR_OP_FILE,
        NSR_OP_BIND_DATA,
        NSR_OP_RO_BIND_DATA,
        NSR_OP_SYMLINK,
        NSR_OP_CHMOD,
        NSR_OP_HOSTNAME,
        /* Never parsed nor traced: a place for ops found later (project
         * mode's hidden paths, looked up while the sandbox child makes its
         * namespaces: project/profile.h). nsr_plan_fill_slots() puts them
         * there; the mount code takes them when it reaches the place
         * (sandbox/rootfs.h, take_slots), or builds no root. */
        NSR_OP_SLOT,
        _NSR_OP_TYPE_MAX,
        _NSR_OP_TYPE_INVALID = -EINVAL,
} nsr_op_type;

typedef enum nsr_op_flags {
        NSR_OPF_TRY = 1 << 0,    /* a missing source skips the op */
        NSR_OPF_VERIFY = 1 << 1, /* the first source must still be verify_dev/verify_ino */
        /* PROC: where a new procfs is refused (EPERM: the visible /proc has
         * locked overmounts, as in a container or a root-run bwrap), bind
         * the current /proc instead (nesting; project mode only) */
        NSR_OPF_PROC_FALLBACK = 1 << 2,
        /* TMPFS, DEV, TMP_OVERLAY: a dir of the sandbox's one shared tmpfs
         * instead of a tmpfs of its own. The shared tmpfs is as large as
         * the largest size of these ops (project mode gives them all the
         * --tmp-size total), so together they hold at most that: /tmp,
         * /var/tmp, /dev/shm, the home layer and /run/user/N cannot each
         * take the whole budget. bwrap has no such option: the trace
         * shows each with --size of the total. */
        NSR_OPF_SHARED_TMP = 1 << 3,
} nsr_op_flags;

/* Sentinel for "no --perms given". bwrap creates missing parents of ops
 * that take no --perms with mode 0700 (its internal perms value is 0 for
 * them); ops that take --perms use their default, see nsr_op_perms(). */
#define NSR_PERMS_UNSET ((mode_t) -1)

typedef struct nsr_op {
        nsr_op_type type;
        unsigned flags;
        char *source;        /* host path; symlink target for SYMLINK */
        char *dest;          /* path inside the sandbox; hostname for HOSTNAME */
        char *workdir;       /* OVERLAY */
        char **overlay_srcs; /* lower layers, bottom first (command-line order) */
        int fd;              /* BIND_FD, FILE, BIND_DATA: the caller's fd */
        mode_t perms;        /* --perms, or NSR_PERMS_UNSET; CHMOD's mode */
        uint64_t size;       /* --size for TMPFS, 0 = kernel default */
        dev_t verify_dev;    /* NSR_OPF_VERIFY: project mode resolved the */
        ino_t verify_ino;    /* path once; the mount must get that dir */
        unsigned slot;       /* SLOT: which one */
} nsr_op;

typedef enum nsr_env_action {
        NSR_ENV_SET,
        NSR_ENV_UNSET,
        NSR_ENV_CLEAR,
        _NSR_ENV_ACTION_MAX,
        _NSR_ENV_ACTION_INVALID = -EINVAL,
} nsr_env_action;

typedef struct nsr_env_edit {
        nsr_env_action action;
        char *name;
        char *value;
} nsr_env_edit;

/* A capability edit, applied in command-line order. cap < 0 means ALL. */
typedef struct nsr_cap_edit {
        bool add;
        int cap;
} nsr_cap_edit;

typedef enum nsr_seccomp_kind {
        NSR_SECCOMP_FD,   /* --seccomp FD: read in the child */
        NSR_SECCOMP_DATA, /* --add-seccomp-fd FD: read while parsing */
        _NSR_SECCOMP_KIND_MAX,
        _NSR_SECCOMP_KIND_INVALID = -EINVAL,
} nsr_seccomp_kind;

typedef struct nsr_seccomp_prog {
        nsr_seccomp_kind kind;
        int fd;     /* the caller's fd number (both kinds, for the trace) */
        char *data; /* NSR_SECCOMP_DATA: the BPF bytes */
        size_t len;
} nsr_seccomp_prog;

typedef enum nsr_home_mode {
        NSR_HOME_OVERLAY, /* visible, writes go to a throwaway layer */
        NSR_HOME_RO,      /* read-only, like the rest of the host */
        NSR_HOME_HIDE,    /* an empty tmpfs holding only the projects */
        _NSR_HOME_MODE_MAX,
        _NSR_HOME_MODE_INVALID = -EINVAL,
} nsr_home_mode;

/* --sandbox: how much isolation project mode insists on. */
typedef enum nsr_sandbox_mode {
        NSR_SANDBOX_REQUIRED,    /* the namespace sandbox, or refuse (exit 125) */
        NSR_SANDBOX_BEST_EFFORT, /* without user namespaces: Landlock and seccomp */
        NSR_SANDBOX_OFF,         /* no isolation (debugging); still captured and reported */
        _NSR_SANDBOX_MODE_MAX,
        _NSR_SANDBOX_MODE_INVALID = -EINVAL,
} nsr_sandbox_mode;

/* --on-conflict: what a conflict does to the rest of a run. */
typedef enum nsr_conflict_mode {
        NSR_CONFLICT_APPLY_REST,     /* apply what does not conflict (git dirs whole) */
        NSR_CONFLICT_KEEP_ALL,       /* apply nothing, keep the run for review */
        NSR_CONFLICT_FAIL,           /* apply nothing, keep the run, exit 125 */
        NSR_CONFLICT_PREFER_HOST,    /* as apply-rest, and the conflicts are settled: the host's version stays */
        NSR_CONFLICT_PREFER_SANDBOX, /* the sandbox's version overwrites the host's, backed up (undo) */
        _NSR_CONFLICT_MODE_MAX,
        _NSR_CONFLICT_MODE_INVALID = -EINVAL,
} nsr_conflict_mode;

/* Project mode settings (nsrun only). */
/* --snapshot-limit without a value: bytes a live run's snapshot may copy. */
#define NSR_SNAPSHOT_LIMIT_DEFAULT ((uint64_t) 1 << 30)

typedef struct nsr_project_opts {
        char **projects; /* as given on the command line */
        nsr_home_mode home;
        char **hide, **rw, **ro, **keep_env;
        char *state_dir;
        char *report_file;
        int report_fd;           /* -1 when unset */
        int events_fd;           /* -1 when unset */
        long keep_days;          /* -1: the default */
        uint64_t backup_limit;   /* 0: the default */
        uint64_t snapshot_limit; /* 0: the default */
        nsr_sandbox_mode sandbox;
        nsr_conflict_mode on_conflict;
        bool no_overlay;     /* live writes, captured against a snapshot */
        bool workspace_root; /* the project is mounted as / */
        bool allow_nested, discard, keep, quiet, verbose;
        /* What nsrun read as its own configuration, absolute: profiles and
         * what they include, config files and dirs, --args files,
         * --seccomp-policy paths. Inside a project they are protected like
         * .nsrun (read-only inside, changes dropped at commit). */
        char **config_files;
        char **config_policy_dirs; /* dirs of --seccomp-policy paths: their *.policy (includes) */
} nsr_project_opts;

/* Namespace bits, in the order bwrap reports them. */
typedef enum nsr_ns {
        NSR_NS_CGROUP = 1 << 0,
        NSR_NS_IPC = 1 << 1,
        NSR_NS_MNT = 1 << 2,
        NSR_NS_NET = 1 << 3,
        NSR_NS_PID = 1 << 4,
        NSR_NS_UTS = 1 << 5,
        NSR_NS_USER = 1 << 6,
} nsr_ns;

#define NSR_MAX_ARGS 9000

typedef struct nsr_plan {
        nsr_op *ops;
        size_t n_ops;

        /* namespaces, as the flags stood at the end of parsing */
        bool unshare_user, unshare_user_try, unshare_ipc, unshare_pid, unshare_net;
        bool unshare_uts, unshare_cgroup, unshare_cgroup_try;
        int userns_fd, userns2_fd, pidns_fd; /* -1 when unset */
        bool disable_userns, assert_userns_disabled;

        bool has_uid, has_gid;
        uid_t uid;
        gid_t gid;

        nsr_env_edit *env;
        size_t n_env;
        char *chdir;
        char *argv0;

        nsr_cap_edit *caps;
        size_t n_caps;

        nsr_seccomp_prog *seccomp;
        size_t n_seccomp;
        char **seccomp_policies; /* nsrun --seccomp-policy, in order */

        int info_fd, json_status_fd, block_fd, userns_block_fd, sync_fd;
        char **lock_files;

        bool die_with_parent, new_session, as_pid_1, level_prefix;
        /* --not-a-security-boundary (bwrap 0.12): kept for the trace; the
         * setup steps it makes non-fatal in bwrap do not exist in nsrun. */
        bool not_a_security_boundary;
        char *exec_label, *file_label;

        char **argv; /* the command and its arguments */

        /* nsrun only */
        bool trace_bwrap;
        int trace_bwrap_fd;
        nsr_project_opts proj;
        /* --share-net came after the last --unshare-net/--unshare-all:
         * project mode's own --unshare-net must then give way. */
        bool share_net;
        /* Map the caller's whole id range (project mode, real root), so
         * that overlay copy-up works for files of every owner. */
        bool map_all_ids;
        /* Project mode: a --hide names "/" or a path right below it, so
         * a slot may hold a mount on "/" or /proc, which a root built in
         * place cannot take (sandbox/rootfs.c, root_in_place). */
        bool slots_near_root;
        /* Scope abstract unix sockets and signals with Landlock (ABI 6). */
        bool landlock_scope;
        /* --allow-host/--deny-host: the egress relay's rules (empty: off),
         * and --net-log-fd (-1 when unset). */
        nsr_egress_rules egress;
        int net_log_fd;
        /* Project mode: the fds the caller left open (above 2, but for
         * --sync-fd) do not reach the command. */
        bool close_inherited_fds;

        /* --timeout, --rlimit, --pids, --tmp-size, --memory, --cpu */
        nsr_runctl run;

        /* warnings met while parsing, printed by main in order */
        char **warnings;

        /* NSRUN_TIMING's phase table (base/timing.h), owned by main; NULL:
         * off. Carried here because every step that marks reads the plan. */
        struct nsr_timing *timing;

        /* filled by nsr_plan_validate() */
        bool resolved;
        bool needs_devpts;
} nsr_plan;

/* What validation needs to know about the caller. Kept apart from the plan
 * so that unit tests can validate as "root" or as "a user" without being
 * either. */
typedef struct nsr_caller {
        uid_t uid;
        gid_t gid;
        bool userns_possible;   /* for --unshare-user-try */
        bool cgroupns_possible; /* for --unshare-cgroup-try / --unshare-cgroup */
} nsr_caller;

nsr_plan *nsr_plan_new(void);
nsr_plan *nsr_plan_free(nsr_plan *p);
DEFINE_CLEANUP_FUNC(nsr_plan *, nsr_plan_free)

/* Appends a zeroed op of the given type and returns it. */
nsr_op *nsr_plan_add_op(nsr_plan *p, nsr_op_type type);
void nsr_plan_add_env(nsr_plan *p, nsr_env_action action, const char *name, const char *value);

const char *nsr_op_type_to_string(nsr_op_type t);
/* The mode an op gives the file or dir it creates, --perms or the default. */
mode_t nsr_op_perms(const nsr_op *op);
/* Whether an op takes --perms / --size. */
bool nsr_op_type_takes_perms(nsr_op_type t);

/* Appends u's ops, edits and settings to p, as if u's words had been
 * written after p's on one command line (used to put the user's own bwrap
 * options after the project-mode profile). u is left empty. */
void nsr_plan_append(nsr_plan *p, nsr_plan *u);

/* Whether p still holds an NSR_OP_SLOT op. */
bool nsr_plan_has_slots(const nsr_plan *p);
/* Replaces each SLOT op of p with the ops of slots[op->slot], moved out of
 * it in order (n slots; each is a plan of which only the ops count). A
 * slot past n: -EINVAL, and p is left as it was. */
int nsr_plan_fill_slots(nsr_plan *p, nsr_plan *const *slots, size_t n);
/* The ops of n slots as bytes, for a process that holds a copy of the same
 * plan (the sandbox child, whose copy the monitor fills after the clone):
 * nsr_plan_slots_unpack() gives them back. Only what a path's hiding uses
 * travels (type, flags, perms, size, source, dest): NULL for an op with
 * more (an fd, layers, a work dir, a dir to verify). */
char *nsr_plan_slots_pack(nsr_plan *const *slots, size_t n, size_t *ret_len);
/* The slots of nsr_plan_slots_pack(), as n new plans; -EINVAL for bytes
 * that are not exactly such a packing. */
int nsr_plan_slots_unpack(const char *buf, size_t len, nsr_plan ***ret, size_t *ret_n);
void nsr_plan_slots_free(nsr_plan **slots, size_t n);
const char *nsr_home_mode_to_string(nsr_home_mode m);
nsr_home_mode nsr_home_mode_from_string(const char *s);
/* "required", "best-effort", "off". */
const char *nsr_sandbox_mode_to_string(nsr_sandbox_mode m);
nsr_sandbox_mode nsr_sandbox_mode_from_string(const char *s);

const char *nsr_conflict_mode_to_string(nsr_conflict_mode m);
nsr_conflict_mode nsr_conflict_mode_from_string(const char *s);
/* --on-conflict's value, or -EINVAL with a message that lists the modes
 * (opt names the option as the caller spells it). */
int nsr_conflict_mode_parse(const char *opt, const char *val, nsr_conflict_mode *ret, nsr_error *err);
/* keep-all and fail: a conflict anywhere holds every change back. */
static inline bool nsr_conflict_mode_withholds(nsr_conflict_mode m) {
        return m == NSR_CONFLICT_KEEP_ALL || m == NSR_CONFLICT_FAIL;
}

/* Fills the caller description from the running process. */
void nsr_caller_detect(nsr_caller *ret);
/* The same, probing only what nsr_plan_validate reads for p (each probe is
 * a few lookups in /proc or /sys, 30 us of a project run's validation);
 * the others are false. For validating p, and nothing else. */
void nsr_caller_detect_for(const nsr_plan *p, nsr_caller *ret);

/* Post-parse checks, in bwrap's order, and resolution of implicit settings
 * (the implicit user namespace, -try probes, default ids). Run once. */
int nsr_plan_validate(nsr_plan *p, const nsr_caller *caller, nsr_error *err);

/* The command's environment: base (normally environ) with the plan's edits
 * applied in order. PWD is not set here; the launcher sets it last. */
char **nsr_plan_build_env(const nsr_plan *p, char *const *base);
/* Computes the final capability set (a bit mask over cap numbers) for a
 * caller starting with effective set `start`. Returns whether any
 * --cap-add/--cap-drop was given. */
bool nsr_plan_caps(const nsr_plan *p, uint64_t start, uint64_t all, uint64_t *ret);
/* Namespaces the sandbox unshares, as NSR_NS_* bits (after validation). */
unsigned nsr_plan_unshared(const nsr_plan *p);
