/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What of a sandbox's changes may never reach the host as they are: the
 * filtering stage between the capture (capture.c, snapshot.c) and the
 * apply (commit.c).
 *
 * The sandboxed command is hostile, and the host runs some files in a
 * project on its own: git runs hooks and reads config (core.fsmonitor,
 * core.sshCommand, pagers, filters, aliases run commands) from every git
 * dir it finds, IDEs run tasks, direnv runs .envrc. So:
 *
 *   - every git dir in the project, at any depth, old or new (a dir named
 *     .git, or a dir holding HEAD plus objects, refs or commondir, as git
 *     itself recognises one) takes changes only on an allow-list: objects
 *     (without alternates), refs, logs, the index, HEAD and the other
 *     state files of commit, merge and fetch. Everything else (hooks,
 *     config, commondir, gitdir, info/, modules/, worktrees/, rebase and
 *     sequencer todo lists, symlinks) is dropped;
 *   - a git dir the run created keeps a config, reduced to keys that can
 *     run nothing (nsr_protect_git_config_reduce);
 *   - a .git that is (or becomes) a file or a symlink is dropped: it points
 *     git at another dir;
 *   - a fifo, socket or device node (any type but a file, a dir or a
 *     symlink) is never created, and never replaces an entry: a fifo as
 *     .git/HEAD or package.json hangs the host's git status and prompt;
 *   - the dirs the host's git config names as core.hooksPath, and the
 *     paths profiles/protect.list names, are dropped as a whole;
 *   - so are .nsrun and every file nsrun read as its own configuration
 *     (a --profile and its includes, a --seccomp-policy and the policies
 *     beside it, an --args file, the user's nsrun config dir), with the
 *     dirs that lead to them: the next run would read them;
 *   - modes never gain group or other write, bits the umask removes, or
 *     setuid, setgid and sticky, unless the host entry had them; ACLs and
 *     every system.*, trusted.* and security.* xattr are stripped unless
 *     the host entry had the same one with the same value.
 *
 * Every dropped or reduced change is reported. The pure core (classifier,
 * mode rule, config reducer, list matching) has no system calls; the rest
 * reads the project before the run through RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS lookups and changes only the new versions (the
 * upper dir, or the live project with live writes). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "txn/changeset.h"

/* A git dir in the project. path is relative to the project root ("" for
 * the root itself); is_new: it was no git dir before the run. */
typedef struct nsr_protect_gitdir {
        char *path;
        bool is_new;
} nsr_protect_gitdir;

typedef struct nsr_protect_rules {
        nsr_protect_gitdir *gitdirs;
        size_t n_gitdirs;
        char **hooks;    /* project-relative dirs named by core.hooksPath ("" the root: its hook names only) */
        char **patterns; /* protect.list entries */
        char **config;   /* files and dirs nsrun reads as its own configuration (nsr_protect_config_match) */
} nsr_protect_rules;

void nsr_protect_rules_done(nsr_protect_rules *r);

typedef enum nsr_protect_verdict {
        NSR_PROTECT_APPLY,
        NSR_PROTECT_DROP,
        NSR_PROTECT_REDUCE_CONFIG, /* a new repository's config: rewritten, then applied */
        _NSR_PROTECT_VERDICT_MAX,
        _NSR_PROTECT_VERDICT_INVALID = -EINVAL,
} nsr_protect_verdict;

/* Pure. What happens to a change to path inside a git dir: rel is the path
 * below the git dir ("hooks/pre-commit"), type the new entry's type,
 * deleted whether the change deletes it. *ret_reason: a static string. */
nsr_protect_verdict nsr_protect_git_entry(const char *rel, bool is_new, nsr_entry_type type, bool deleted,
                                          const char **ret_reason);

/* Pure. Whether path (relative to the project root) or one of its
 * ancestors matches a protect.list entry. An entry is a path relative to
 * the project root, with fnmatch(3) globs inside one component; "**"
 * followed by "/" at its start matches at any depth; a trailing "/" is
 * allowed (a dir and all below it are protected either way). */
bool nsr_protect_list_match(char *const *patterns, const char *path);

/* Pure. Whether a change to path must be dropped because nsrun reads what
 * patterns name as its own configuration (a --profile, what it includes,
 * a --seccomp-policy, an --args file, the user's config dir). Patterns
 * are project-relative, in protect.list syntax (nsr_protect_escape for a
 * literal name). path matches when it or an ancestor matches a pattern;
 * and a change that deletes an ancestor dir of one, or replaces it with
 * something else than a dir (a symlink would point the next run's lookup
 * elsewhere), matches too. */
bool nsr_protect_config_match(char *const *patterns, const char *path, bool deleted, nsr_entry_type type);

/* Pure. name with fnmatch(3)'s special characters escaped. */
char *nsr_protect_escape(const char *name);

/* Pure. The verdict for one change under rules. */
nsr_protect_verdict nsr_protect_classify(const nsr_protect_rules *rules, const nsr_change *c, const char **ret_reason);

/* Pure. The mode a new version may get: requested, less setuid, setgid and
 * sticky, group and other write, and the bits umask removes, unless the
 * host entry (old_exists) had them. */
mode_t nsr_protect_mode(mode_t requested, bool old_exists, mode_t old, mode_t umask);

/* Pure. Whether an xattr may reach the host: user.* only (plain data to
 * the kernel), apart from the LSM labels the policy, not the command, set
 * (left alone). */
bool nsr_protect_xattr_allowed(const char *name);

/* Pure. Rewrites a git config (the text in) to the keys that can run
 * nothing: core.repositoryformatversion, core.bare, core.filemode,
 * core.logallrefupdates, core.ignorecase, core.precomposeunicode,
 * core.symlinks, extensions.objectformat and .refstorage, remote.NAME.url
 * (no "::" transport, no leading "-"), remote.NAME.fetch, branch.NAME.remote
 * and .merge. Anything odd (includes, escapes, quotes inside values,
 * continued lines, control bytes, unknown sections) is dropped, never
 * interpreted. *ret is NUL-terminated; *ret_dropped counts dropped lines.
 * Fails only with -E2BIG for an input over 1 MiB. */
int nsr_protect_git_config_reduce(const char *in, size_t len, char **ret, size_t *ret_dropped);

/* Pure. core.hooksPath of a git config text, or NULL (the same strict
 * reading; the last value wins). */
char *nsr_protect_git_config_hooks_path(const char *in, size_t len);

/* ---- the filtering stage ----------------------------------------------------- */

/* DATADIR/profiles/protect.list plus the user's
 * XDG_CONFIG/nsrun/protect.list (or HOME/.config/nsrun/protect.list) when
 * it exists. A missing or unreadable shipped list is an error: project
 * mode checks it before the command runs (ret NULL: only checked, no
 * vector built). */
int nsr_protect_load_list(const char *datadir, const char *home, const char *xdg_config, char ***ret, nsr_error *err);

typedef enum nsr_protect_action {
        NSR_PROTECT_DROPPED,        /* the change does not reach the host */
        NSR_PROTECT_CONFIG_REDUCED, /* a new repository's config, reduced */
        NSR_PROTECT_MODE_REDUCED,   /* the mode, reduced */
        NSR_PROTECT_XATTR_DROPPED,  /* an xattr (ACL, security.*, ...) stripped */
        _NSR_PROTECT_ACTION_MAX,
        _NSR_PROTECT_ACTION_INVALID = -EINVAL,
} nsr_protect_action;

typedef struct nsr_protect_note {
        char *path;
        nsr_protect_action action;
        const char *reason; /* static */
        char *detail;       /* the xattr name, or NULL */
        mode_t old_mode;    /* the host's mode (0 when it had no entry) */
        mode_t requested;   /* MODE_REDUCED: what the sandbox set */
        mode_t mode;        /* MODE_REDUCED: what is applied */
        bool old_exists;
} nsr_protect_note;

typedef struct nsr_protect_result {
        nsr_changeset *dropped;  /* the dropped changes, sorted */
        nsr_protect_note *notes; /* every dropped or reduced change, in path order per action */
        size_t n_notes;
} nsr_protect_result;

nsr_protect_result *nsr_protect_result_free(nsr_protect_result *r);
DEFINE_CLEANUP_FUNC(nsr_protect_result *, nsr_protect_result_free)

/* "dropped", "config_reduced", "mode_reduced", "xattr_dropped". */
const char *nsr_protect_action_to_string(nsr_protect_action a);

typedef struct nsr_protect_ctx {
        int before_fd;            /* the project before the run: the overlay's lower, or the snapshot */
        int after_fd;             /* the new versions: the upper dir, or (live) the project; -1: unknown */
        const char *project_path; /* absolute; for core.hooksPath values and enclosing repositories */
        const char *home;         /* for ~ in core.hooksPath and the global git config; NULL: none */
        const char *xdg_config;   /* $XDG_CONFIG_HOME or NULL */
        const char *datadir;      /* profiles/protect.list */
        mode_t umask;
        char *const *config; /* nsr_protect_rules.config: what the run read as nsrun's configuration */
} nsr_protect_ctx;

/* Read-only: classifies cs (sorted) against the project before the run,
 * moves the dropped changes out of cs, and notes the reductions the apply
 * will make (modes, from the change set; xattrs, from after_fd when it is
 * open). cs keeps the requested modes: nsr_protect_enforce() applies. */
int nsr_protect_scan(nsr_changeset *cs, const nsr_protect_ctx *ctx, nsr_protect_result **ret, nsr_error *err);

/* Makes the new versions under ctx->after_fd what the notes say: reduced
 * configs rewritten, xattrs stripped, modes reduced; the changes' modes in
 * cs follow. Run before the apply (or, with live writes, before the run is
 * recorded). Fails closed: an entry that cannot be reduced is an error. */
int nsr_protect_enforce(nsr_changeset *cs, const nsr_protect_ctx *ctx, const nsr_protect_result *res, nsr_error *err);

/* "dropped 3 protected changes, e.g. .git/hooks/pre-commit; reduced 1
 * mode" and so on, with names escaped for a terminal; NULL when nothing
 * was protected. */
char *nsr_protect_summary(const nsr_protect_result *res, bool live);
