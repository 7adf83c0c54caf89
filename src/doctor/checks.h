/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host probes for "nsrun doctor": can this machine run nsrun's sandbox, and
 * if not, which restriction is in the way and what would lift it.
 *
 * Every probe runs in a child process of its own (fork), so a probe that
 * creates namespaces, mounts or loads a seccomp filter changes nothing in
 * the caller, and one that hangs is killed after a timeout. A probe sends
 * its result back as fixed-size nsr_check records over a pipe.
 *
 * What a result means for nsrun is decided by the check's class:
 *   REQUIRED  a layer project mode uses by default; all of them working
 *             is the verdict "full".
 *   FALLBACK  Landlock: when the user namespace layers fail, project
 *             mode's best-effort mode confines with Landlock and seccomp,
 *             so the verdict is "degraded" with it and "unavailable"
 *             without it.
 *   OPTIONAL  extras nsrun uses when present; reported, never part of the
 *             verdict.
 *   INFO      facts (are we already in a sandbox?); always ok. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct libmnt_table;

typedef enum nsr_check_id {
        NSR_CHECK_USERNS,         /* creating a user namespace */
        NSR_CHECK_UID_MAP,        /* setgroups, uid_map and gid_map */
        NSR_CHECK_USERNS_MOUNT,   /* a mount namespace and a tmpfs inside it */
        NSR_CHECK_PIDNS,          /* a pid namespace with its own /proc */
        NSR_CHECK_NETNS,          /* a network namespace with loopback up */
        NSR_CHECK_OVERLAY,        /* overlay with userxattr in the userns */
        NSR_CHECK_OVERLAY_DEPTH,  /* overlay levels left on cwd, state dir, /tmp */
        NSR_CHECK_SECCOMP,        /* loading a seccomp filter */
        NSR_CHECK_LANDLOCK,       /* the Landlock ABI */
        NSR_CHECK_LANDLOCK_SCOPE, /* Landlock ABI >= 6 scoping */
        NSR_CHECK_TMPFS_XATTR,    /* user.* xattrs on a tmpfs in the userns */
        NSR_CHECK_FANOTIFY,       /* fanotify filesystem marks in the userns */
        NSR_CHECK_PIDFD,          /* pidfd_open */
        NSR_CHECK_CLONE3,         /* the clone3 system call */
        NSR_CHECK_CGROUP,         /* a delegated cgroup v2 */
        NSR_CHECK_SANDBOX,        /* already inside a sandbox or container? */
        NSR_CHECK_PROC_HIDEPID,   /* /proc mounted with hidepid (best-effort mode) */
        NSR_CHECK_EGRESS,         /* how --allow-host would work here (from the others) */
        _NSR_CHECK_ID_MAX,
        _NSR_CHECK_ID_INVALID = -EINVAL,
} nsr_check_id;

typedef enum nsr_check_class {
        NSR_CHECK_REQUIRED,
        NSR_CHECK_FALLBACK,
        NSR_CHECK_OPTIONAL,
        NSR_CHECK_INFO,
        _NSR_CHECK_CLASS_MAX,
        _NSR_CHECK_CLASS_INVALID = -EINVAL,
} nsr_check_class;

#define NSR_CHECK_TEXT_MAX 512

/* Fixed-size, so that a probe child can send it over a pipe. */
typedef struct nsr_check {
        nsr_check_id id;
        bool ok;
        char detail[NSR_CHECK_TEXT_MAX];
        char fix[NSR_CHECK_TEXT_MAX]; /* "" when there is nothing to fix */
} nsr_check;

typedef enum nsr_verdict {
        NSR_VERDICT_FULL,        /* every default layer works */
        NSR_VERDICT_DEGRADED,    /* runs, but without some default layer */
        NSR_VERDICT_UNAVAILABLE, /* cannot confine anything */
        _NSR_VERDICT_MAX,
        _NSR_VERDICT_INVALID = -EINVAL,
} nsr_verdict;

/* "userns", "uid-map", ...: stable names, used in the JSON output. */
const char *nsr_check_name(nsr_check_id id);
nsr_check_class nsr_check_class_of(nsr_check_id id);
/* "full", "degraded", "unavailable". */
const char *nsr_verdict_to_string(nsr_verdict v);

typedef struct nsr_hostcheck_opts {
        const char *cwd;       /* the directory a project would be; NULL: getcwd() */
        const char *state_dir; /* nsrun's state dir (need not exist yet) */
        int timeout_ms;        /* per probe; <= 0: NSR_HOSTCHECK_TIMEOUT_MS */
} nsr_hostcheck_opts;

#define NSR_HOSTCHECK_TIMEOUT_MS 2000

/* Runs every probe. ret[i] is the check with id i, for every id below
 * _NSR_CHECK_ID_MAX. Fails only when no probe could be started at all
 * (pipe or fork failing); a probe that fails, crashes or times out is a
 * failed check. */
int nsr_hostcheck_run(const nsr_hostcheck_opts *o, nsr_check ret[_NSR_CHECK_ID_MAX], nsr_error *err);

/* Whether this process can build the namespace sandbox: the userns
 * checks (a user namespace, its id maps, a mount in it), run in a child.
 * When not, reason gets doctor's explanation of the first failure. For
 * best-effort mode, which falls back to Landlock and seccomp. */
bool nsr_hostcheck_userns_works(char *reason, size_t len);

/* One of the namespace sandbox's guarantees, and whether best-effort
 * mode (Landlock and seccomp, no namespaces) keeps it on this host. */
typedef struct nsr_guarantee {
        const char *name; /* stable, for the JSON output */
        bool holds;
        char detail[NSR_CHECK_TEXT_MAX];
} nsr_guarantee;

#define NSR_GUARANTEES_MAX 16

/* Which guarantees best-effort mode keeps, given a complete set of checks
 * and the Landlock ABI (0: none). Fills ret (NSR_GUARANTEES_MAX entries)
 * and returns how many. Pure. */
size_t nsr_hostcheck_best_effort(const nsr_check checks[_NSR_CHECK_ID_MAX], int landlock_abi,
                                 nsr_guarantee ret[NSR_GUARANTEES_MAX]);

/* Whether a /proc mount's super options hide other users' processes
 * (hidepid=1, 2, noaccess, invisible or ptraceable). Pure. */
bool nsr_hostcheck_hidepid(const char *super_options);

/* The verdict for a complete set of checks (indexed by id). Pure. */
nsr_verdict nsr_hostcheck_verdict(const nsr_check checks[_NSR_CHECK_ID_MAX]);

/* Runs fn(arg, out) in a forked child that fills n checks, and copies them
 * to ret. A child that does not answer within timeout_ms is killed, and
 * every one of its checks fails with the reason. Exported for the unit
 * tests. */
typedef void (*nsr_probe_fn)(const void *arg, nsr_check *out, size_t n);
int nsr_hostcheck_fork(nsr_probe_fn fn, const void *arg, const nsr_check_id *ids, size_t n, int timeout_ms,
                       nsr_check *ret);

/* ---- pure helpers (unit tested) ------------------------------------ */

/* The step at which setting up a user namespace failed. */
typedef enum nsr_userns_step {
        NSR_USERNS_STEP_NONE,      /* everything worked */
        NSR_USERNS_STEP_CREATE,    /* unshare(CLONE_NEWUSER) */
        NSR_USERNS_STEP_SETGROUPS, /* writing "deny" to /proc/self/setgroups */
        NSR_USERNS_STEP_UID_MAP,
        NSR_USERNS_STEP_GID_MAP,
        NSR_USERNS_STEP_MOUNT_NS, /* unshare(CLONE_NEWNS) */
        NSR_USERNS_STEP_MOUNT,    /* mounting a tmpfs */
        _NSR_USERNS_STEP_MAX,
        _NSR_USERNS_STEP_INVALID = -EINVAL,
} nsr_userns_step;

/* What the host says about user namespace restrictions; -1 for a setting
 * that does not exist or cannot be read. */
typedef struct nsr_userns_facts {
        nsr_userns_step step;          /* where it failed */
        int error;                     /* positive errno of that step */
        long max_user_namespaces;      /* user.max_user_namespaces */
        int unprivileged_userns_clone; /* kernel.unprivileged_userns_clone (Debian, hardened kernels) */
        int apparmor_restrict;         /* kernel.apparmor_restrict_unprivileged_userns (Ubuntu 23.10+) */
        int seccomp_mode;              /* "Seccomp:" of /proc/self/status: 0, 1 or 2 */
        bool have_userns_file;         /* /proc/self/ns/user exists (CONFIG_USER_NS) */
} nsr_userns_facts;

/* Names the restriction that explains f: writes a one-line reason and a
 * fix. Pure. */
void nsr_hostcheck_userns_explain(const nsr_userns_facts *f, char *reason, size_t reason_len, char *fix,
                                  size_t fix_len);
const char *nsr_userns_step_to_string(nsr_userns_step s);

/* How deep in overlays the file system holding path is, judged from a
 * mount table: 0 when it is not an overlay, 1 for an overlay whose layers
 * are not overlays, 2 when a layer is itself an overlay. Layers are found
 * by the paths in the overlay's options; a relative path, or one that
 * no longer resolves (after pivot_root), counts as not an overlay, so the
 * result is a lower bound. dev is the st_dev of path (0: unknown, look the
 * path up by name). Pure: reads only tb. Returns -ENOENT when no mount
 * holds path. */
int nsr_hostcheck_overlay_depth(struct libmnt_table *tb, const char *path, dev_t dev);

/* The hint nsrun's front end appends to a launch failure that "nsrun
 * doctor" can explain (user namespace creation, id maps, the first
 * mounts), or NULL. Pure. */
const char *nsr_hostcheck_hint(const nsr_error *e);

/* What tells that we already run inside a sandbox or container. */
typedef struct nsr_sandbox_facts {
        bool env_nsrun;      /* NSRUN=1: an nsrun project sandbox */
        bool ancestor_bwrap; /* a parent process (or pid 1) is called bwrap */
        bool ancestor_nsrun; /* a parent process (or pid 1) is called nsrun */
        bool flatpak_info;   /* /.flatpak-info */
        bool dockerenv;      /* /.dockerenv */
        bool containerenv;   /* /run/.containerenv (podman) */
        char container[32];  /* /run/systemd/container, "" when absent */
        char uid_map[64];    /* first line of /proc/self/uid_map, "" when unreadable */
} nsr_sandbox_facts;

/* Fills out (NSR_CHECK_EGRESS, always ok: a fact) from the other checks
 * and the Landlock ABI: the relay goes into a private network namespace
 * in the namespace sandbox; in best-effort mode it needs Landlock ABI 4
 * (TCP rules), else --allow-host is refused. Pure. */
void nsr_hostcheck_egress_describe(const nsr_check checks[_NSR_CHECK_ID_MAX], int landlock_abi, nsr_check *out);

/* "not inside a known sandbox", or what was found. Pure. */
void nsr_hostcheck_sandbox_describe(const nsr_sandbox_facts *f, char *buf, size_t len);
