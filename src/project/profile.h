/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Project mode's built-in profile, expanded into ordinary plan ops.
 *
 * The profile never reaches the launcher directly: "hide ~/.ssh" becomes a
 * --tmpfs and a --remount-ro, the project becomes --overlay-src/--overlay,
 * and so on, which is why --trace-bwrap can show a project-mode run as a
 * bwrap command line. The user's own bwrap options are appended after the
 * profile's, so they win. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "cli/plan.h"

typedef struct nsr_profile_project {
        const char *path;  /* absolute, normalised, the project's real path */
        const char *upper; /* host path of the overlay upper dir */
        const char *work;  /* host path of the overlay work dir */
        dev_t dev;         /* what path was when nsrun resolved it */
        ino_t ino;
        bool live; /* --no-overlay: bound writable, no overlay (upper, work unused) */
        /* --workspace-root: a lower layer above the project holding the
         * mount points the root needs (usr, etc, proc...), so that they
         * never land in the upper dir as changes; NULL otherwise. */
        const char *skel;
        /* Files and dirs in the project that nsrun read as its own
         * configuration: bound read-only inside, like .nsrun. */
        char *const *config;
} nsr_profile_project;

typedef struct nsr_profile_ctx {
        uid_t uid;
        gid_t gid;
        const char *home;      /* the caller's home, or NULL */
        const char *cwd;       /* the caller's cwd, or NULL */
        char *const *env;      /* the caller's environment */
        const char *datadir;   /* holds profiles/hide.list and profiles/env-deny.list */
        const char *state_dir; /* hidden inside the sandbox */
        const char *cache_dir; /* nsrun's cache (compiled filters), hidden too; or NULL */
        const nsr_profile_project *projects;
        size_t n_projects;
} nsr_profile_ctx;

/* What the plan's hidden paths still need: hide.list and --hide, looked
 * up on the host by nsr_profile_fill(). */
typedef struct nsr_profile_later nsr_profile_later;
nsr_profile_later *nsr_profile_later_free(nsr_profile_later *l);
DEFINE_CLEANUP_FUNC(nsr_profile_later *, nsr_profile_later_free)

/* Builds the project-mode plan: the profile's ops and settings, then the
 * user's plan appended (user is emptied). The hidden paths of hide.list
 * and --hide, with what depends on them, are NSR_OP_SLOT ops (plan.h) for
 * nsr_profile_fill() with *ret_later, which may run later: the launch
 * looks them up in the monitor while the sandbox child makes its
 * namespaces (0.2 ms of a run's start, bench/README.md). A
 * --workspace-root plan is whole at once (*ret_later NULL). */
int nsr_profile_build(nsr_plan *user, const nsr_profile_ctx *ctx, nsr_plan **ret, nsr_profile_later **ret_later,
                      nsr_error *err);
/* The hidden paths looked up now, and p's slots filled with their ops
 * (the same ops, in the same places, as if they had been found while p
 * was built). With ret_packed, those ops also come packed for a copy of
 * p (nsr_plan_slots_pack). later is used up, whatever the outcome. */
int nsr_profile_fill(nsr_profile_later *later, nsr_plan *p, char **ret_packed, size_t *ret_len, nsr_error *err);

/* The host paths the profile keeps from the command, as real paths of
 * those that exist: /run and /var/run (host sockets), the runtime dir, the
 * state dir, hide.list and --hide (globs expanded), the home with --home
 * hide, and what namespace mode replaces with private mounts (/tmp,
 * /var/tmp, /dev/shm, /dev/mqueue). Best-effort mode, which cannot mount,
 * hides them with Landlock instead (confine.h). */
int nsr_profile_hidden(const nsr_project_opts *o, const nsr_profile_ctx *ctx, char ***ret, nsr_error *err);

/* Expands "~/" and $VAR / ${VAR} in a profile line. NULL when a variable
 * is unset or the home is unknown. */
char *nsr_profile_expand(const char *line, const char *home, char *const *env);

/* Whether an environment variable name matches the deny list (fnmatch,
 * case-insensitive); a pattern starting with '!' is an exception that
 * wins over every other line. */
bool nsr_profile_env_denied(const char *name, char *const *patterns);
/* Whether a variable's value carries a URL with credentials in it
 * ("scheme://user:secret@host"), whatever the variable's name. */
bool nsr_profile_env_value_secret(const char *value);
/* What a one-shot run passes of an environment: every variable but those
 * the deny list (DATADIR/profiles/env-deny.list) names and those whose
 * value is a URL with credentials. The list read and compiled once, for
 * each run's plan and for a session's server, which filters each step's
 * environment with it. -errno with err set when the list cannot be read:
 * nothing passes unchecked. */
typedef struct nsr_env_filter nsr_env_filter;
int nsr_env_filter_new(const char *datadir, nsr_env_filter **ret, nsr_error *err);
nsr_env_filter *nsr_env_filter_free(nsr_env_filter *f);
DEFINE_CLEANUP_FUNC(nsr_env_filter *, nsr_env_filter_free)
/* Whether one NAME=VALUE entry passes; one with no '=' or an empty name
 * does not. */
bool nsr_env_filter_keeps(const nsr_env_filter *f, const char *entry);
/* Reads a profile list file: one entry per line, '#' comments, blank lines
 * skipped, surrounding blanks trimmed. */
int nsr_profile_read_list(const char *path, char ***ret, nsr_error *err);
/* Whether nsr_profile_read_list would read the file: the same errors,
 * without the copy of each entry. */
int nsr_profile_check_list(const char *path, nsr_error *err);
