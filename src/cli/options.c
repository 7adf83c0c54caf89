/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>

#include "cli/options.h"

#define B NSR_OPTF_BWRAP
#define N NSR_OPTF_NSRUN
#define P NSR_OPTF_PROJECT

/* Order matters: it is the order of --help, and bwrap's options come in
 * bwrap 0.12.0's --help order so that a caller who greps the help text
 * finds the same options in the same place. The descriptions are ours. */
const nsr_option nsr_options[_NSR_OPT_MAX] = {
        [NSR_OPT_HELP] = { "--help", NULL, NSR_OPT_HELP, 0, NULL, "Show this help and exit", B | N, NULL },
        [NSR_OPT_VERSION] = { "--version", NULL, NSR_OPT_VERSION, 0, NULL, "Show the version and exit", B | N, NULL },
        [NSR_OPT_ARGS] = { "--args", NULL, NSR_OPT_ARGS, 1, "FD", "Read more NUL-separated arguments from FD", B | N,
                           NULL },
        [NSR_OPT_ARGV0] = { "--argv0", NULL, NSR_OPT_ARGV0, 1, "VALUE", "Pass VALUE to the command as its argv[0]",
                            B | N, "--argv0 takes one argument" },
        [NSR_OPT_LEVEL_PREFIX] = { "--level-prefix", NULL, NSR_OPT_LEVEL_PREFIX, 0, NULL,
                                   "Prefix messages with a syslog level such as <3>", B | N, NULL },
        [NSR_OPT_UNSHARE_ALL] = { "--unshare-all", NULL, NSR_OPT_UNSHARE_ALL, 0, NULL,
                                  "Unshare user (if possible), ipc, pid, net, uts and cgroup (if possible)", B | N,
                                  NULL },
        [NSR_OPT_SHARE_NET] = { "--share-net", NULL, NSR_OPT_SHARE_NET, 0, NULL,
                                "Keep the host network namespace (undoes an earlier net unshare)", B | N, NULL },
        [NSR_OPT_UNSHARE_USER] = { "--unshare-user", NULL, NSR_OPT_UNSHARE_USER, 0, NULL,
                                   "New user namespace (implied for callers who are not root)", B | N, NULL },
        [NSR_OPT_UNSHARE_USER_TRY] = { "--unshare-user-try", NULL, NSR_OPT_UNSHARE_USER_TRY, 0, NULL,
                                       "New user namespace when the kernel allows one, else go on without", B | N,
                                       NULL },
        [NSR_OPT_UNSHARE_IPC] = { "--unshare-ipc", NULL, NSR_OPT_UNSHARE_IPC, 0, NULL, "New IPC namespace", B | N,
                                  NULL },
        [NSR_OPT_UNSHARE_PID] = { "--unshare-pid", NULL, NSR_OPT_UNSHARE_PID, 0, NULL, "New PID namespace", B | N,
                                  NULL },
        [NSR_OPT_UNSHARE_NET] = { "--unshare-net", NULL, NSR_OPT_UNSHARE_NET, 0, NULL,
                                  "New network namespace with only loopback", B | N, NULL },
        [NSR_OPT_UNSHARE_UTS] = { "--unshare-uts", NULL, NSR_OPT_UNSHARE_UTS, 0, NULL, "New UTS (hostname) namespace",
                                  B | N, NULL },
        [NSR_OPT_UNSHARE_CGROUP] = { "--unshare-cgroup", NULL, NSR_OPT_UNSHARE_CGROUP, 0, NULL, "New cgroup namespace",
                                     B | N, NULL },
        [NSR_OPT_UNSHARE_CGROUP_TRY] = { "--unshare-cgroup-try", NULL, NSR_OPT_UNSHARE_CGROUP_TRY, 0, NULL,
                                         "New cgroup namespace when the kernel has them, else go on without", B | N,
                                         NULL },
        [NSR_OPT_USERNS] = { "--userns", NULL, NSR_OPT_USERNS, 1, "FD", "Join the user namespace open on FD", B | N,
                             NULL },
        [NSR_OPT_USERNS2] = { "--userns2", NULL, NSR_OPT_USERNS2, 1, "FD",
                              "Switch to the user namespace on FD once setup is done", B | N, NULL },
        [NSR_OPT_DISABLE_USERNS] = { "--disable-userns", NULL, NSR_OPT_DISABLE_USERNS, 0, NULL,
                                     "Make new user namespaces impossible inside the sandbox", B | N, NULL },
        [NSR_OPT_ASSERT_USERNS_DISABLED] = { "--assert-userns-disabled", NULL, NSR_OPT_ASSERT_USERNS_DISABLED, 0, NULL,
                                             "Fail unless new user namespaces are impossible inside", B | N, NULL },
        [NSR_OPT_PIDNS] = { "--pidns", NULL, NSR_OPT_PIDNS, 1, "FD",
                            "Join the PID namespace on FD (the parent of a new one with --unshare-pid)", B | N, NULL },
        [NSR_OPT_UID] = { "--uid", NULL, NSR_OPT_UID, 1, "UID", "User id inside the sandbox (needs a user namespace)",
                          B | N, NULL },
        [NSR_OPT_GID] = { "--gid", NULL, NSR_OPT_GID, 1, "GID", "Group id inside the sandbox (needs a user namespace)",
                          B | N, NULL },
        [NSR_OPT_HOSTNAME] = { "--hostname", NULL, NSR_OPT_HOSTNAME, 1, "NAME",
                               "Hostname inside the sandbox (needs --unshare-uts)", B | N, NULL },
        [NSR_OPT_CHDIR] = { "--chdir", NULL, NSR_OPT_CHDIR, 1, "DIR", "Working directory of the command", B | N,
                            "--chdir takes one argument" },
        [NSR_OPT_CLEARENV] = { "--clearenv", NULL, NSR_OPT_CLEARENV, 0, NULL,
                               "Start from an empty environment (PWD is still set)", B | N, NULL },
        [NSR_OPT_SETENV] = { "--setenv", NULL, NSR_OPT_SETENV, 2, "VAR VALUE", "Set VAR to VALUE", B | N, NULL },
        [NSR_OPT_UNSETENV] = { "--unsetenv", NULL, NSR_OPT_UNSETENV, 1, "VAR", "Remove VAR from the environment", B | N,
                               NULL },
        [NSR_OPT_LOCK_FILE] = { "--lock-file", NULL, NSR_OPT_LOCK_FILE, 1, "DEST",
                                "Hold a read lock on DEST (a sandbox path) while the sandbox lives", B | N, NULL },
        [NSR_OPT_SYNC_FD] = { "--sync-fd", NULL, NSR_OPT_SYNC_FD, 1, "FD",
                              "Keep FD open for as long as the sandbox lives", B | N, NULL },
        [NSR_OPT_BIND] = { "--bind", NULL, NSR_OPT_BIND, 2, "SRC DEST", "Bind the host path SRC at DEST, writable",
                           B | N, NULL },
        [NSR_OPT_BIND_TRY] = { "--bind-try", NULL, NSR_OPT_BIND_TRY, 2, "SRC DEST",
                               "Like --bind, skipped when SRC is missing", B | N, NULL },
        [NSR_OPT_DEV_BIND] = { "--dev-bind", NULL, NSR_OPT_DEV_BIND, 2, "SRC DEST",
                               "Like --bind, and device nodes under it work", B | N, NULL },
        [NSR_OPT_DEV_BIND_TRY] = { "--dev-bind-try", NULL, NSR_OPT_DEV_BIND_TRY, 2, "SRC DEST",
                                   "Like --dev-bind, skipped when SRC is missing", B | N, NULL },
        [NSR_OPT_RO_BIND] = { "--ro-bind", NULL, NSR_OPT_RO_BIND, 2, "SRC DEST",
                              "Bind the host path SRC at DEST, read-only with all submounts", B | N, NULL },
        [NSR_OPT_RO_BIND_TRY] = { "--ro-bind-try", NULL, NSR_OPT_RO_BIND_TRY, 2, "SRC DEST",
                                  "Like --ro-bind, skipped when SRC is missing", B | N, NULL },
        [NSR_OPT_BIND_FD] = { "--bind-fd", NULL, NSR_OPT_BIND_FD, 2, "FD DEST",
                              "Bind the directory or path open on FD at DEST", B | N, NULL },
        [NSR_OPT_RO_BIND_FD] = { "--ro-bind-fd", NULL, NSR_OPT_RO_BIND_FD, 2, "FD DEST", "Like --bind-fd, read-only",
                                 B | N, "--bind-fd takes two arguments" },
        [NSR_OPT_REMOUNT_RO] = { "--remount-ro", NULL, NSR_OPT_REMOUNT_RO, 1, "DEST",
                                 "Make the mount at DEST read-only (not its submounts)", B | N,
                                 "--remount-ro takes one argument" },
        [NSR_OPT_OVERLAY_SRC] = { "--overlay-src", NULL, NSR_OPT_OVERLAY_SRC, 1, "SRC",
                                  "Add SRC as a lower layer of the next overlay", B | N, NULL },
        [NSR_OPT_OVERLAY] = { "--overlay", NULL, NSR_OPT_OVERLAY, 3, "RWSRC WORKDIR DEST",
                              "Overlay at DEST, writes go to the host dir RWSRC;\n"
                              "WORKDIR is an empty dir on RWSRC's filesystem",
                              B | N, "--overlay takes three arguments" },
        [NSR_OPT_TMP_OVERLAY] = { "--tmp-overlay", NULL, NSR_OPT_TMP_OVERLAY, 1, "DEST",
                                  "Overlay at DEST, writes go to a hidden tmpfs", B | N, NULL },
        [NSR_OPT_RO_OVERLAY] = { "--ro-overlay", NULL, NSR_OPT_RO_OVERLAY, 1, "DEST", "Read-only overlay at DEST",
                                 B | N, NULL },
        [NSR_OPT_EXEC_LABEL] = { "--exec-label", NULL, NSR_OPT_EXEC_LABEL, 1, "LABEL", "SELinux label of the command",
                                 B | N, NULL },
        [NSR_OPT_FILE_LABEL] = { "--file-label", NULL, NSR_OPT_FILE_LABEL, 1, "LABEL",
                                 "SELinux label of files nsrun creates", B | N, NULL },
        [NSR_OPT_PROC] = { "--proc", NULL, NSR_OPT_PROC, 1, "DEST", "Mount a procfs at DEST", B | N, NULL },
        [NSR_OPT_DEV] = { "--dev", NULL, NSR_OPT_DEV, 1, "DEST", "Mount a minimal /dev at DEST", B | N, NULL },
        [NSR_OPT_TMPFS] = { "--tmpfs", NULL, NSR_OPT_TMPFS, 1, "DEST", "Mount an empty tmpfs at DEST", B | N, NULL },
        [NSR_OPT_MQUEUE] = { "--mqueue", NULL, NSR_OPT_MQUEUE, 1, "DEST", "Mount a POSIX message queue fs at DEST",
                             B | N, NULL },
        [NSR_OPT_DIR] = { "--dir", NULL, NSR_OPT_DIR, 1, "DEST", "Make the directory DEST", B | N, NULL },
        [NSR_OPT_FILE] = { "--file", NULL, NSR_OPT_FILE, 2, "FD DEST", "Write the data read from FD to the file DEST",
                           B | N, NULL },
        [NSR_OPT_BIND_DATA] = { "--bind-data", NULL, NSR_OPT_BIND_DATA, 2, "FD DEST",
                                "Bind a file holding the data read from FD at DEST", B | N, NULL },
        [NSR_OPT_RO_BIND_DATA] = { "--ro-bind-data", NULL, NSR_OPT_RO_BIND_DATA, 2, "FD DEST",
                                   "Like --bind-data, read-only", B | N, NULL },
        [NSR_OPT_SYMLINK] = { "--symlink", NULL, NSR_OPT_SYMLINK, 2, "SRC DEST", "Make DEST a symlink pointing to SRC",
                              B | N, NULL },
        [NSR_OPT_SECCOMP] = { "--seccomp", NULL, NSR_OPT_SECCOMP, 1, "FD",
                              "Apply the seccomp BPF program read from FD (only one)", B | N, NULL },
        [NSR_OPT_ADD_SECCOMP_FD] = { "--add-seccomp-fd", NULL, NSR_OPT_ADD_SECCOMP_FD, 1, "FD",
                                     "Apply the seccomp BPF program read from FD (repeatable)", B | N, NULL },
        [NSR_OPT_BLOCK_FD] = { "--block-fd", NULL, NSR_OPT_BLOCK_FD, 1, "FD",
                               "Wait for data on FD before running the command", B | N, NULL },
        [NSR_OPT_USERNS_BLOCK_FD] = { "--userns-block-fd", NULL, NSR_OPT_USERNS_BLOCK_FD, 1, "FD",
                                      "Wait for data on FD before setting up the user namespace", B | N, NULL },
        [NSR_OPT_INFO_FD] = { "--info-fd", NULL, NSR_OPT_INFO_FD, 1, "FD",
                              "Write the sandbox's pid and namespace ids to FD as JSON", B | N, NULL },
        [NSR_OPT_JSON_STATUS_FD] = { "--json-status-fd", NULL, NSR_OPT_JSON_STATUS_FD, 1, "FD",
                                     "Write JSON lines about the sandbox, then its exit code, to FD", B | N, NULL },
        [NSR_OPT_NEW_SESSION] = { "--new-session", NULL, NSR_OPT_NEW_SESSION, 0, NULL,
                                  "Run the command in a new session (no controlling terminal)", B | N, NULL },
        [NSR_OPT_DIE_WITH_PARENT] = { "--die-with-parent", NULL, NSR_OPT_DIE_WITH_PARENT, 0, NULL,
                                      "Kill the sandbox with SIGKILL when the caller dies", B | N, NULL },
        [NSR_OPT_AS_PID_1] = { "--as-pid-1", NULL, NSR_OPT_AS_PID_1, 0, NULL,
                               "Run the command as pid 1, without a reaper", B | N, NULL },
        [NSR_OPT_CAP_ADD] = { "--cap-add", NULL, NSR_OPT_CAP_ADD, 1, "CAP", "Keep capability CAP (or ALL)", B | N,
                              NULL },
        [NSR_OPT_CAP_DROP] = { "--cap-drop", NULL, NSR_OPT_CAP_DROP, 1, "CAP", "Drop capability CAP (or ALL)", B | N,
                               NULL },
        [NSR_OPT_PERMS] = { "--perms", NULL, NSR_OPT_PERMS, 1, "OCTAL",
                            "Mode for the next --dir, --file, --tmpfs or --*bind-data", B | N, NULL },
        [NSR_OPT_SIZE] = { "--size", NULL, NSR_OPT_SIZE, 1, "BYTES", "Size limit of the next --tmpfs", B | N, NULL },
        [NSR_OPT_CHMOD] = { "--chmod", NULL, NSR_OPT_CHMOD, 2, "OCTAL PATH", "Change the mode of the existing PATH",
                            B | N, NULL },
        [NSR_OPT_NOT_A_SECURITY_BOUNDARY] = { "--not-a-security-boundary", NULL, NSR_OPT_NOT_A_SECURITY_BOUNDARY, 0,
                                              NULL,
                                              "Say the sandbox is no security boundary (bwrap then tolerates\n"
                                              "some setup failures; nsrun has none of that kind)",
                                              B | N, NULL },

        [NSR_OPT_TRACE_BWRAP] = { "--trace-bwrap", NULL, NSR_OPT_TRACE_BWRAP, 0, NULL,
                                  "Print the equivalent bwrap command line and exit", N, NULL },
        [NSR_OPT_TRACE_BWRAP_FD] = { "--trace-bwrap-fd", NULL, NSR_OPT_TRACE_BWRAP_FD, 1, "FD",
                                     "Write the equivalent bwrap argv, NUL-separated, to FD, then run", N, NULL },
        [NSR_OPT_SECCOMP_POLICY] = { "--seccomp-policy", NULL, NSR_OPT_SECCOMP_POLICY, 1, "NAME|PATH",
                                     "Apply a seccomp policy file (repeatable; filters stack)", N, NULL },
        [NSR_OPT_PROJECT] = { "--project", "-p", NSR_OPT_PROJECT, 1, "DIR",
                              "Project mode: run on DIR through an overlay, then report and apply\n"
                              "the changes (repeatable)",
                              N, NULL },
        [NSR_OPT_HOME] = { "--home", NULL, NSR_OPT_HOME, 1, "overlay|ro|hide",
                           "Project mode: home writable but thrown away (default), read-only,\n"
                           "or an empty tmpfs",
                           N | P, NULL },
        [NSR_OPT_HIDE] = { "--hide", NULL, NSR_OPT_HIDE, 1, "PATH", "Project mode: hide PATH too (repeatable)", N | P,
                           NULL },
        [NSR_OPT_RW] = { "--rw", NULL, NSR_OPT_RW, 1, "PATH",
                         "Project mode: bind PATH writable and live, outside the transaction", N | P, NULL },
        [NSR_OPT_RO] = { "--ro", NULL, NSR_OPT_RO, 1, "PATH", "Project mode: bind PATH read-only", N | P, NULL },
        [NSR_OPT_KEEP_ENV] = { "--keep-env", NULL, NSR_OPT_KEEP_ENV, 1, "NAME",
                               "Project mode: keep variable NAME although it looks secret", N | P, NULL },
        [NSR_OPT_ALLOW_NESTED] = { "--allow-nested", NULL, NSR_OPT_ALLOW_NESTED, 0, NULL,
                                   "Project mode: let the command build its own sandbox (default-nested policy)", N | P,
                                   NULL },
        [NSR_OPT_STATE_DIR] = { "--state-dir", NULL, NSR_OPT_STATE_DIR, 1, "DIR",
                                "Project mode: where runs, layers and backups live", N | P, NULL },
        [NSR_OPT_REPORT] = { "--report", NULL, NSR_OPT_REPORT, 1, "FILE", "Project mode: write the JSON report to FILE",
                             N | P, NULL },
        [NSR_OPT_REPORT_FD] = { "--report-fd", NULL, NSR_OPT_REPORT_FD, 1, "FD",
                                "Project mode: write the JSON report to FD", N | P, NULL },
        [NSR_OPT_DISCARD] = { "--discard", NULL, NSR_OPT_DISCARD, 0, NULL,
                              "Project mode: report the changes but apply nothing", N | P, NULL },
        [NSR_OPT_KEEP] = { "--keep", NULL, NSR_OPT_KEEP, 0, NULL,
                           "Project mode: keep the run for review instead of applying it", N | P, NULL },
        [NSR_OPT_ON_CONFLICT] = { "--on-conflict", NULL, NSR_OPT_ON_CONFLICT, 1,
                                  "apply-rest|keep-all|fail|prefer-host|prefer-sandbox",
                                  "Project mode: on a conflict, apply the rest (default; a git dir\n"
                                  "stays whole), apply nothing and keep the run, or that and exit 125;\n"
                                  "prefer-host settles it for the host's version, prefer-sandbox\n"
                                  "overwrites the host's version (backed up; nsrun undo)",
                                  N | P, NULL },
        [NSR_OPT_QUIET] = { "--quiet", "-q", NSR_OPT_QUIET, 0, NULL, "Project mode: no summary on stderr", N | P,
                            NULL },
        [NSR_OPT_VERBOSE] = { "--verbose", "-v", NSR_OPT_VERBOSE, 0, NULL, "Project mode: list every change on stderr",
                              N | P, NULL },
        [NSR_OPT_EVENTS_FD] = { "--events-fd", NULL, NSR_OPT_EVENTS_FD, 1, "FD",
                                "Project mode: stream JSON lines of changes to FD while the command runs", N | P,
                                NULL },
        [NSR_OPT_KEEP_DAYS] = { "--keep-days", NULL, NSR_OPT_KEEP_DAYS, 1, "N",
                                "Project mode: prune runs and backups older than N days (default 7)", N | P, NULL },
        [NSR_OPT_BACKUP_LIMIT] = { "--backup-limit", NULL, NSR_OPT_BACKUP_LIMIT, 1, "SIZE",
                                   "Project mode: per project, SIZE of backups and SIZE of layers (default 2G)", N | P,
                                   NULL },
        [NSR_OPT_SANDBOX] = { "--sandbox", NULL, NSR_OPT_SANDBOX, 1, "required|best-effort|off",
                              "Project mode: insist on the namespace sandbox (default), fall back to\n"
                              "Landlock and seccomp where user namespaces are forbidden, or no\n"
                              "isolation at all (debugging)",
                              N | P, NULL },
        [NSR_OPT_NO_OVERLAY] = { "--no-overlay", NULL, NSR_OPT_NO_OVERLAY, 0, NULL,
                                 "Project mode: bind the projects writable instead of overlaying them;\n"
                                 "a snapshot taken before the run captures the changes",
                                 N | P, NULL },
        [NSR_OPT_SNAPSHOT_LIMIT] = { "--snapshot-limit", NULL, NSR_OPT_SNAPSHOT_LIMIT, 1, "SIZE",
                                     "Project mode: refuse a snapshot that would copy more than SIZE\n"
                                     "(default 1G; reflinked data is free)",
                                     N | P, NULL },
        [NSR_OPT_PROFILE] = { "--profile", NULL, NSR_OPT_PROFILE, 1, "NAME|PATH",
                              "Apply the options of a profile file first (repeatable; the command\n"
                              "line still wins); see nsrun-profile(5)",
                              N, NULL },
        [NSR_OPT_WORKSPACE_ROOT] = { "--workspace-root", NULL, NSR_OPT_WORKSPACE_ROOT, 0, NULL,
                                     "Project mode: mount the (one) project as /, with the host's /usr,\n"
                                     "/etc and libraries read-only beneath it",
                                     N | P, NULL },
        [NSR_OPT_ALLOW_HOST] = { "--allow-host", NULL, NSR_OPT_ALLOW_HOST, 1, "PATTERN",
                                 "Private network with only loopback, plus an HTTP and SOCKS5 proxy\n"
                                 "that connects to hosts matching PATTERN (host, *.domain, an address;\n"
                                 "optional :PORT, else 80 and 443; repeatable)",
                                 N, NULL },
        [NSR_OPT_DENY_HOST] = { "--deny-host", NULL, NSR_OPT_DENY_HOST, 1, "PATTERN",
                                "Refuse hosts matching PATTERN even if allowed (every port unless\n"
                                "one is given; repeatable)",
                                N, NULL },
        [NSR_OPT_NET_LOG_FD] = { "--net-log-fd", NULL, NSR_OPT_NET_LOG_FD, 1, "FD",
                                 "Write a JSON line to FD for every proxied connection as it ends", N, NULL },

        [NSR_OPT_TIMEOUT] = { "--timeout", NULL, NSR_OPT_TIMEOUT, 1, "DURATION",
                              "SIGTERM the whole sandbox after DURATION (90, 90s, 1.5s, 5m, 1h),\n"
                              "SIGKILL after --kill-after more; exit status 124",
                              N, NULL },
        [NSR_OPT_KILL_AFTER] = { "--kill-after", NULL, NSR_OPT_KILL_AFTER, 1, "DURATION",
                                 "With --timeout: how long SIGTERM has before SIGKILL (default 5s)", N, NULL },
        [NSR_OPT_RLIMIT] = { "--rlimit", NULL, NSR_OPT_RLIMIT, 1, "NAME=SOFT[:HARD]",
                             "Set a resource limit of the command (prlimit's names: nofile, core,\n"
                             "as, cpu, ...; a value or unlimited; repeatable)",
                             N, NULL },
        [NSR_OPT_PIDS] = { "--pids", NULL, NSR_OPT_PIDS, 1, "N",
                           "At most N processes and threads in the sandbox (RLIMIT_NPROC in its\n"
                           "user namespace; project mode default 4096)",
                           N, NULL },
        [NSR_OPT_TMP_SIZE] = { "--tmp-size", NULL, NSR_OPT_TMP_SIZE, 1, "SIZE",
                               "Project mode: one total for all tmpfs (/tmp, /var/tmp, /dev/shm,\n"
                               "/run/user/N, the home layer): SIZE (default a quarter of the RAM)",
                               N | P, NULL },
        [NSR_OPT_MEMORY] = { "--memory", NULL, NSR_OPT_MEMORY, 1, "SIZE",
                             "memory.max of a cgroup for the run (needs a delegated cgroup v2)", N, NULL },
        [NSR_OPT_CPU] = { "--cpu", NULL, NSR_OPT_CPU, 1, "CPUS",
                          "cpu.max of a cgroup for the run, in CPUs (1.5, 50%; needs a\n"
                          "delegated cgroup v2)",
                          N, NULL },
};

#undef B
#undef N
#undef P

const nsr_option *nsr_options_get(nsr_opt_id id) {
        if (id < 0 || id >= _NSR_OPT_MAX)
                return NULL;
        return &nsr_options[id];
}

const nsr_option *nsr_options_find(const char *name, bool bwrap_mode) {
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                const nsr_option *o = &nsr_options[i];
                if (!o->name)
                        continue;
                if (bwrap_mode && !(o->flags & NSR_OPTF_BWRAP))
                        continue;
                if (!bwrap_mode && !(o->flags & NSR_OPTF_NSRUN))
                        continue;
                if (streq(o->name, name) || (o->short_name && streq(o->short_name, name)))
                        return o;
        }
        return NULL;
}

const char *nsr_options_suggest(const char *typed, bool bwrap_mode) {
        const char *best = NULL;
        size_t best_d = SIZE_MAX;
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                const nsr_option *o = &nsr_options[i];
                if (!o->name || !(o->flags & (bwrap_mode ? NSR_OPTF_BWRAP : NSR_OPTF_NSRUN)))
                        continue;
                size_t d = nsr_edit_distance(typed, o->name);
                if (d < best_d && nsr_close_enough(typed, o->name)) {
                        best_d = d;
                        best = o->name;
                }
        }
        return best;
}

static void help_line(FILE *f, const nsr_option *o) {
        char left[128];
        if (o->short_name)
                snprintf(left, sizeof(left), "%s, %s%s%s", o->short_name, o->name, o->metavar ? " " : "",
                         o->metavar ? o->metavar : "");
        else
                snprintf(left, sizeof(left), "%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        const char *h = o->help;
        const char *nl = strchr(h, '\n');
        if (strlen(left) > 28)
                fprintf(f, "    %s\n    %-28s %.*s\n", left, "", (int) (nl ? nl - h : (int) strlen(h)), h);
        else
                fprintf(f, "    %-28s %.*s\n", left, (int) (nl ? nl - h : (int) strlen(h)), h);
        while (nl) {
                h = nl + 1;
                nl = strchr(h, '\n');
                fprintf(f, "    %-28s %.*s\n", "", (int) (nl ? nl - h : (int) strlen(h)), h);
        }
}

void nsr_options_help(FILE *f, const char *prog, bool bwrap_mode) {
        if (bwrap_mode) {
                fprintf(f, "usage: %s [OPTIONS...] [--] COMMAND [ARGS...]\n\n", prog ? prog : "bwrap");
                for (size_t i = 0; i < _NSR_OPT_MAX; i++)
                        if (nsr_options[i].flags & NSR_OPTF_BWRAP)
                                help_line(f, &nsr_options[i]);
                return;
        }
        fprintf(f,
                "usage: %s [OPTIONS...] [--] COMMAND [ARGS...]\n"
                "       %s SUBCOMMAND [ARGS...]\n\n"
                "Run COMMAND in a sandbox built from Linux namespaces. nsrun accepts\n"
                "bubblewrap's whole command line with the same meaning.\n\n"
                "Options shared with bwrap:\n",
                prog ? prog : "nsrun", prog ? prog : "nsrun");
        for (size_t i = 0; i < _NSR_OPT_MAX; i++)
                if ((nsr_options[i].flags & NSR_OPTF_BWRAP) && (nsr_options[i].flags & NSR_OPTF_NSRUN))
                        help_line(f, &nsr_options[i]);
        fputs("\nnsrun options (also accepted as --opt=VALUE):\n", f);
        for (size_t i = 0; i < _NSR_OPT_MAX; i++)
                if (!(nsr_options[i].flags & NSR_OPTF_BWRAP) && (nsr_options[i].flags & NSR_OPTF_NSRUN))
                        help_line(f, &nsr_options[i]);
}
