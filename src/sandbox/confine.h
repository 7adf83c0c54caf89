/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Running a command without namespaces: best-effort mode's Landlock and
 * seccomp confinement, and --sandbox=off.
 *
 * Where user namespaces are forbidden (a sysctl, Docker's seccomp profile,
 * a security module), nothing can be mounted, so the command sees the host
 * as it is. What still holds:
 *   - Landlock (ABI 1+): writes only below the projects, a private temp
 *     dir and a few devices; reads only below an allow-list that leaves out
 *     the hidden paths (secrets, the state dir, /run's host sockets); ABI
 *     4+: no TCP bind or connect; ABI 6+: abstract unix sockets and signals
 *     scoped to the sandbox. Landlock also stops ptrace of processes
 *     outside the sandbox, and with it reading their memory or environment
 *     through /proc.
 *   - seccomp: the default policy (as in namespace mode), stacked with
 *     fallback.policy, which refuses socket(2) for every family: Landlock
 *     cannot stop a connect to a pathname unix socket (ABI 7 has no right
 *     for it) nor UDP, and there is no network namespace. socketpair(2)
 *     still works: its sockets reach nothing. The same policy lets the
 *     calls that act on another process by pid (prlimit64, setpriority,
 *     sched_set*, ioprio_set, ...) name only the caller (pid 0).
 *     With --allow-host a filter
 *     that allows TCP over IPv4 and IPv6 only takes its place, and
 *     Landlock allows TCP connects to nsrun's relay alone (relay.h).
 *   - no_new_privs, and a new session (setsid) so TIOCSTI cannot reach the
 *     caller's terminal; of /dev/pts only the caller's terminals.
 *   - every process the command started is killed once it exits
 *     (killtree.h).
 * Without Landlock nothing confines the file system: best-effort mode
 * then refuses to run (project.c).
 *
 * ## The read allow-list
 * Landlock grants access to hierarchies; it cannot take a path out of a
 * granted one. To hide H, nsrun grants every sibling of H and of each of
 * H's ancestors instead, and never the ancestors themselves:
 *     hide /home/u/.ssh  ->  grant /bin /etc /usr ... (the entries of /
 *     but home), /home/x ... (of /home but u), /home/u/src ... (of /home/u
 *     but .ssh)
 * Consequences, documented in nsrun(1): an ancestor of a hidden path
 * cannot be listed (ls ~ fails while ls ~/src works); entries created in
 * an ancestor after the start are not readable; symlinks among the
 * siblings are not granted (their targets are judged where they point).
 * Cost: one rule per entry of every ancestor dir, O(entries in the
 * ancestors' dirs), bounded by NSR_CONFINE_MAX_RULES.
 *
 * The same expansion takes the hidden paths out of a --ro grant, and the
 * protected git paths out of a project's write grant (the project is then
 * granted read as a whole, write entry by entry): the project's top dir
 * and .git, as ancestors, take no new entries. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "cli/plan.h"
#include "sandbox/landlock.h"
#include "sandbox/launch.h"

#define NSR_CONFINE_MAX_RULES 20000

/* Lists the names in dir that may be granted: no ".", no "..", no
 * symlinks. Returns 0 with *ret NULL-terminated (possibly empty), or
 * -errno; a dir that cannot be read is skipped by the caller. */
typedef int (*nsr_confine_lister)(const char *dir, char ***ret, void *userdata);
/* The real one: readdir, symlinks left out (d_type, or lstat). */
int nsr_confine_list_dir(const char *dir, char ***ret, void *userdata);

/* The read allow-list that hides every path in hidden (absolute; they are
 * normalised, and those below another hidden path dropped). Sorted. Fails
 * with -EINVAL when "/" itself is hidden, -E2BIG beyond max entries. Pure
 * apart from the lister. */
int nsr_confine_allowlist(char *const *hidden, nsr_confine_lister list, void *userdata, size_t max, char ***ret,
                          nsr_error *err);

/* The protected git paths of a project, as absolute paths, whether they
 * exist or not (.git/hooks, .git/config, .git/config.worktree,
 * .git/worktrees, .git/modules/NAME/hooks and /config; the .git file of a
 * worktree): none when the project has no .git. Best-effort mode grants
 * write around them (nsr_confine_rules). The one place that says which
 * paths these are for Landlock; keep it in step with
 * nsr_profile_is_protected. Returns 0. */
int nsr_confine_protected(const char *project, char ***ret);

/* The paths a project-mode command's Landlock rules are made of. */
typedef struct nsr_confine_paths {
        char *const *hidden;    /* kept from the command (nsr_profile_hidden) */
        char *const *projects;  /* writable */
        char *const *rw;        /* writable too (--rw) */
        char *const *ro;        /* readable (--ro), even inside a hidden path */
        const char *tmpdir;     /* writable: the private TMPDIR, inside the hidden state dir */
        char *const *terminals; /* the /dev/pts entries nsrun runs on (its stdin, stdout, stderr): the only
                                * ones granted; every other pty of the user stays closed */
} nsr_confine_paths;

/* The /dev/pts/N terminals among fds 0, 1 and 2 of the caller. */
int nsr_confine_terminals(char ***ret);

/* The rules: read below the allow-list for hidden (and --ro), write below
 * the projects (around their protected git paths: the project's top dir
 * and its .git dir then get no right to create, remove or rename entries,
 * as Landlock cannot grant a dir without everything below it), --rw and
 * tmpdir, write to /dev/null and the other common
 * devices and to the terminals (/dev/pts itself is neither readable nor
 * writable: the user's other sessions are there), no TCP, scoping. Fails with -EINVAL when a hidden path lies
 * inside a writable one: Landlock cannot take it out. */
int nsr_confine_rules(const nsr_confine_paths *in, nsr_landlock_rules *ret, nsr_error *err);
void nsr_confine_rules_done(nsr_landlock_rules *r);

typedef struct nsr_confine_opts {
        const nsr_plan *plan; /* argv, environment edits, chdir, new session */
        int landlock_fd;      /* a ruleset from nsr_landlock_build, or -1 */
        const nsr_bpf *bpf;   /* seccomp programs, stacked in order */
        size_t n_bpf;
        const char *tmpdir; /* the private TMPDIR, or NULL to leave it */
        const pid_t *spare; /* children of ours that are not the sandbox's (the events watcher) */
        size_t n_spare;
        /* --allow-host: the relay to serve while the command runs (its
         * record ends in the result), and the variables that point the
         * command at it ("NAME=VALUE", set last). */
        struct nsr_relay *relay;
        char *const *extra_env;
        struct nsr_refused *refused; /* record what bpf[0] refuses (refused.h), or NULL */
} nsr_confine_opts;

/* Runs the command under the given confinement in a child and waits for
 * it, forwarding SIGINT, SIGTERM, SIGHUP and the rest as nsr_launch does.
 * nsrun becomes a child subreaper for it, so that once the command has
 * exited every process it left behind (even one that called setsid) is
 * found and killed before the capture, with no round limit (killtree.h):
 * nothing may write then, nor keep the terminal. Returns 0
 * when the command ran (its status in *ret), or -errno with err set
 * (kind NSR_ERR_EXEC when the exec itself failed). */
int nsr_confine_run(const nsr_confine_opts *o, nsr_launch_result *ret, nsr_error *err);
