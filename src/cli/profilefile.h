/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Profile files: the command line's long options, one per line, in a file.
 *
 *     # a comment
 *     share-net
 *     hide ~/.netrc
 *     bind "/srv/my data" /data
 *     sandbox=best-effort
 *     include strict
 *
 * A line is split into words like a shell would, without any expansion but
 * "~" at the start of an unquoted word and $HOME / $XDG_* (braced or not)
 * outside single quotes: '...' is literal, "..." allows \" \\ and \$, and a
 * backslash outside quotes escapes the next character. Any other $NAME,
 * $( and ` are refused, so a profile never runs anything and never depends
 * on the caller's environment beyond those variables. The first word is a
 * long option without its dashes (or "NAME=VALUE"), looked up in the one
 * options table (options.h) and applied by the one parser (cli.h), so every
 * option and every message is the command line's.
 *
 * Where files come from (nsrun-profile(5)):
 *   --profile NAME  $XDG_CONFIG_HOME/nsrun/profiles/NAME.profile, then
 *                   SYSCONFDIR/nsrun/profiles, then DATADIR/profiles;
 *   --profile PATH  (any name holding a "/") that file; inside a project of
 *                   the run, read like PROJECT/.nsrun/profile;
 *   SYSCONFDIR/nsrun/config, then $XDG_CONFIG_HOME/nsrun/config: defaults
 *                   for project mode; only the system file may "forbid";
 *   PROJECT/.nsrun/profile: tightening lines only.
 */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "cli/options.h"

/* What a file is, which decides what it may say. */
typedef enum nsr_pf_kind {
        NSR_PF_PROFILE,       /* --profile, or an include from one */
        NSR_PF_SYSTEM_CONFIG, /* may also "forbid" */
        NSR_PF_USER_CONFIG,
        NSR_PF_PROJECT_LOCAL, /* tightening lines only, no include */
        /* A --profile PATH that lies inside a project of the run: the
         * sandbox can write it, so it is read like .nsrun/profile. */
        NSR_PF_PROJECT_PROFILE,
        _NSR_PF_KIND_MAX,
        _NSR_PF_KIND_INVALID = -EINVAL,
} nsr_pf_kind;

/* Limits: a profile is configuration, never data. */
#define NSR_PF_MAX_DEPTH 8    /* include nesting */
#define NSR_PF_MAX_LINES 4096 /* option lines in one load, includes counted */
#define NSR_PF_MAX_LINE  4096 /* bytes in one line */
#define NSR_PF_MAX_FILE  (256u << 10)

typedef struct nsr_pf_entry {
        char **words; /* "--name", then the option's arguments, expanded */
        const nsr_option *opt;
        char *file; /* the file it came from */
        unsigned line;
        nsr_pf_kind kind;
} nsr_pf_entry;

/* A "forbid OPTION[=VALUE]" rule of the system config. */
typedef struct nsr_pf_forbid {
        const nsr_option *opt;
        char *value; /* NULL: every use */
        char *file;
        unsigned line;
} nsr_pf_forbid;

typedef struct nsr_pf_list {
        nsr_pf_entry *entries;
        size_t n;
        nsr_pf_forbid *forbid;
        size_t n_forbid;
        char **files; /* the real path of every file read (includes too), for protection */
} nsr_pf_list;

/* Where the files are looked up and how words are expanded. */
typedef struct nsr_pf_ctx {
        const char *home;       /* $HOME, or NULL */
        char *const *env;       /* for $XDG_* */
        const char *sysconfdir; /* "/etc": holds nsrun/config and nsrun/profiles */
        const char *datadir;    /* holds profiles/NAME.profile (the shipped ones) */
        /* The real paths of the run's projects: a profile named by path
         * that lies inside one is read as NSR_PF_PROJECT_PROFILE. */
        char *const *projects;
} nsr_pf_ctx;

void nsr_pf_list_done(nsr_pf_list *l);

/* The system config dir: SYSCONFDIR, or $NSRUN_TEST_SYSCONFDIR in a build
 * with --enable-test-hooks (tests cannot write /etc). */
const char *nsr_pf_sysconfdir(void);

/* Finds NAME.profile (or PATH, for a name holding a "/"); *ret is the path.
 * -ENOENT with the places tried in err. */
int nsr_pf_find(const nsr_pf_ctx *ctx, const char *name, char **ret, nsr_error *err);

/* Whether path (real or not) lies inside one of ctx->projects. */
bool nsr_pf_in_project(const nsr_pf_ctx *ctx, const char *path);

/* Reads the file at path, following its includes, and appends its lines
 * (and, for the system config, its forbid rules) to l. A missing config
 * file is no error when optional is set. Errors name file:line. */
int nsr_pf_load(const nsr_pf_ctx *ctx, const char *path, nsr_pf_kind kind, bool optional, nsr_pf_list *l,
                nsr_error *err);

/* Reads PROJECT/.nsrun/profile, if there is one, as a project-local file:
 * opened beneath the project without following symlinks, no includes. */
int nsr_pf_load_project(const nsr_pf_ctx *ctx, const char *project, nsr_pf_list *l, nsr_error *err);

/* Splits and expands one line into words (exposed for the tests). A
 * comment or blank line gives zero words. */
int nsr_pf_split(const nsr_pf_ctx *ctx, const char *line, char ***ret, nsr_error *err);

/* Whether a kind of file is one the sandbox can write (tightening only). */
bool nsr_pf_kind_tightening_only(nsr_pf_kind kind);

/* Which lines a file the sandbox can write may hold: 0 for a line that can
 * only take away (hide, deny-host, seccomp-policy strict...), 1 for a
 * limit or mode the caller must compare with the value in force
 * (timeout, pids, rlimit, home, on-conflict...: lower or stricter only),
 * -EPERM with the reason and what to do instead for anything else. */
int nsr_pf_check_tightening(const nsr_option *o, char *const *vals, nsr_error *err);

/* Whether a use of option o with first argument value (NULL for an option
 * without arguments) is forbidden; returns the rule or NULL. */
const nsr_pf_forbid *nsr_pf_forbidden(const nsr_pf_list *l, const nsr_option *o, const char *value);

/* The names of the profiles found in the three places, sorted, without
 * duplicates, each with the path that wins (*ret_paths, same order). */
int nsr_pf_list_names(const nsr_pf_ctx *ctx, char ***ret_names, char ***ret_paths, nsr_error *err);
