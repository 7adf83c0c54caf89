/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one table of every command-line option. It drives the parser, --help,
 * the trace and the man-page check, so an option exists in exactly one
 * place. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "base/util.h"

typedef enum nsr_opt_id {
        /* bubblewrap 0.12.0, in its --help order */
        NSR_OPT_HELP,
        NSR_OPT_VERSION,
        NSR_OPT_ARGS,
        NSR_OPT_ARGV0,
        NSR_OPT_LEVEL_PREFIX,
        NSR_OPT_UNSHARE_ALL,
        NSR_OPT_SHARE_NET,
        NSR_OPT_UNSHARE_USER,
        NSR_OPT_UNSHARE_USER_TRY,
        NSR_OPT_UNSHARE_IPC,
        NSR_OPT_UNSHARE_PID,
        NSR_OPT_UNSHARE_NET,
        NSR_OPT_UNSHARE_UTS,
        NSR_OPT_UNSHARE_CGROUP,
        NSR_OPT_UNSHARE_CGROUP_TRY,
        NSR_OPT_USERNS,
        NSR_OPT_USERNS2,
        NSR_OPT_DISABLE_USERNS,
        NSR_OPT_ASSERT_USERNS_DISABLED,
        NSR_OPT_PIDNS,
        NSR_OPT_UID,
        NSR_OPT_GID,
        NSR_OPT_HOSTNAME,
        NSR_OPT_CHDIR,
        NSR_OPT_CLEARENV,
        NSR_OPT_SETENV,
        NSR_OPT_UNSETENV,
        NSR_OPT_LOCK_FILE,
        NSR_OPT_SYNC_FD,
        NSR_OPT_BIND,
        NSR_OPT_BIND_TRY,
        NSR_OPT_DEV_BIND,
        NSR_OPT_DEV_BIND_TRY,
        NSR_OPT_RO_BIND,
        NSR_OPT_RO_BIND_TRY,
        NSR_OPT_BIND_FD,
        NSR_OPT_RO_BIND_FD,
        NSR_OPT_REMOUNT_RO,
        NSR_OPT_OVERLAY_SRC,
        NSR_OPT_OVERLAY,
        NSR_OPT_TMP_OVERLAY,
        NSR_OPT_RO_OVERLAY,
        NSR_OPT_EXEC_LABEL,
        NSR_OPT_FILE_LABEL,
        NSR_OPT_PROC,
        NSR_OPT_DEV,
        NSR_OPT_TMPFS,
        NSR_OPT_MQUEUE,
        NSR_OPT_DIR,
        NSR_OPT_FILE,
        NSR_OPT_BIND_DATA,
        NSR_OPT_RO_BIND_DATA,
        NSR_OPT_SYMLINK,
        NSR_OPT_SECCOMP,
        NSR_OPT_ADD_SECCOMP_FD,
        NSR_OPT_BLOCK_FD,
        NSR_OPT_USERNS_BLOCK_FD,
        NSR_OPT_INFO_FD,
        NSR_OPT_JSON_STATUS_FD,
        NSR_OPT_NEW_SESSION,
        NSR_OPT_DIE_WITH_PARENT,
        NSR_OPT_AS_PID_1,
        NSR_OPT_CAP_ADD,
        NSR_OPT_CAP_DROP,
        NSR_OPT_PERMS,
        NSR_OPT_SIZE,
        NSR_OPT_CHMOD,
        NSR_OPT_NOT_A_SECURITY_BOUNDARY,

        /* nsrun's own options (unknown when invoked as bwrap) */
        NSR_OPT_TRACE_BWRAP,
        NSR_OPT_TRACE_BWRAP_FD,
        NSR_OPT_SECCOMP_POLICY,
        NSR_OPT_PROJECT,
        NSR_OPT_HOME,
        NSR_OPT_HIDE,
        NSR_OPT_RW,
        NSR_OPT_RO,
        NSR_OPT_KEEP_ENV,
        NSR_OPT_ALLOW_NESTED,
        NSR_OPT_STATE_DIR,
        NSR_OPT_REPORT,
        NSR_OPT_REPORT_FD,
        NSR_OPT_DISCARD,
        NSR_OPT_KEEP,
        NSR_OPT_ON_CONFLICT,
        NSR_OPT_QUIET,
        NSR_OPT_VERBOSE,
        NSR_OPT_EVENTS_FD,
        NSR_OPT_KEEP_DAYS,
        NSR_OPT_BACKUP_LIMIT,
        NSR_OPT_SANDBOX,
        NSR_OPT_NO_OVERLAY,
        NSR_OPT_SNAPSHOT_LIMIT,
        NSR_OPT_PROFILE,
        NSR_OPT_WORKSPACE_ROOT,
        NSR_OPT_ALLOW_HOST,
        NSR_OPT_DENY_HOST,
        NSR_OPT_NET_LOG_FD,
        /* run control (limits.h) */
        NSR_OPT_TIMEOUT,
        NSR_OPT_KILL_AFTER,
        NSR_OPT_RLIMIT,
        NSR_OPT_PIDS,
        NSR_OPT_TMP_SIZE,
        NSR_OPT_MEMORY,
        NSR_OPT_CPU,
        _NSR_OPT_MAX,
        _NSR_OPT_INVALID = -EINVAL,
} nsr_opt_id;

typedef enum nsr_opt_flags {
        NSR_OPTF_BWRAP = 1 << 0,   /* part of bwrap 0.12.0's command line */
        NSR_OPTF_NSRUN = 1 << 1,   /* nsrun-only: accepts --opt=VALUE, unknown as bwrap */
        NSR_OPTF_PROJECT = 1 << 2, /* only with --project: refused in a plain run */
} nsr_opt_flags;

typedef struct nsr_option {
        const char *name;       /* "--bind" */
        const char *short_name; /* "-p", or NULL */
        nsr_opt_id id;
        unsigned nargs;
        const char *metavar; /* "SRC DEST", or NULL */
        const char *help;    /* one line; "\n" continues it in --help */
        unsigned flags;
        /* bwrap's message when arguments are missing, if it is not the usual
         * "%s takes an argument" / "%s takes two arguments". */
        const char *missing_msg;
} nsr_option;

extern const nsr_option nsr_options[_NSR_OPT_MAX];

/* Looks an option up by its spelling. In bwrap mode nsrun-only options are
 * not found. */
const nsr_option *nsr_options_find(const char *name, bool bwrap_mode);
/* The option name closest to a mistyped one ("--timout" -> "--timeout"),
 * or NULL when none is close. */
const char *nsr_options_suggest(const char *typed, bool bwrap_mode);
const nsr_option *nsr_options_get(nsr_opt_id id);
/* Writes the options part of the --help text (cmd/main.c adds the
 * subcommands). prog is argv[0] as invoked. */
void nsr_options_help(FILE *f, const char *prog, bool bwrap_mode);
