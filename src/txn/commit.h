/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Applying a change set to the live project as one transaction, and
 * undoing it later.
 *
 * Layout (inside the run dir, see state.h):
 *   journal/pN         the journal of project N's apply (or undo); one per
 *                      project, since each project applies on its own lock
 *   backup/pN/PATH     the project's original of every path the apply
 *                      replaced or deleted (project N of the run)
 *   applied/pN         fingerprints of the paths the apply wrote
 *   conflict/pN/PATH   the sandbox's version of paths that conflicted
 *   excluded/pN/PATH   entries of the upper dir that were not in the change
 *                      set (protected paths) below a dir created as a whole;
 *                      set aside so the dir can move in one rename
 *   rollback/pN/PATH   new versions that a recovery could not put back into
 *                      their source dir (it was gone)
 * The journal format and the recovery protocol are described at the top
 * of txn.c (the transaction engine behind this API).
 *
 * The apply:
 *   1. The caller holds the project lock (state.c).
 *   2. Conflicts are found first: a live path whose ctime is at or after
 *      the run's start, or that appeared or disappeared since the run
 *      captured it (nsr_change.old), is never overwritten; the sandbox's
 *      version is moved to conflict/pN/PATH and reported. The other
 *      changes still apply.
 *   3. The journal lists every step and is made durable before anything
 *      in the project changes.
 *   4. Each step first moves the live original into backup/pN/PATH, then
 *      moves the new version in (rename(2) when the run dir shares the
 *      project's file system, O(1); a copy otherwise, written to a
 *      temporary name beside the target and renamed into place).
 *   5. One syncfs() of the project (and of the run dir), then the journal
 *      is marked done.
 *   Any failure (ENOSPC included) rolls the whole apply back. A crash at
 *   any point leaves each file either old or new; nsr_commit_recover()
 *   rolls an unfinished journal back as a whole.
 *
 * New entries lose setuid and setgid bits, security.capability and
 * user.overlay.* xattrs; modes and mtimes are kept. Every path inside the
 * project is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * from the project's dir fd, so no symlink can lead the apply outside. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"
#include "txn/changeset.h"

typedef struct nsr_commit_conflict {
        char *path;    /* relative to the project root */
        char *reason;  /* "changed on the host during the run", ... */
        char *kept_at; /* absolute path of the sandbox's version; NULL when
                          * there is none (a deletion, or a dir's metadata) */
        bool held;     /* not a conflict itself: its git dir (or parent dir) conflicted */
} nsr_commit_conflict;

/* What a transaction did, for tests and benchmarks. */
typedef struct nsr_commit_stats {
        size_t steps;    /* journaled steps (a dir created as a whole is one) */
        size_t renames;  /* rename(2) calls that changed the project */
        uint64_t copied; /* entries copied because a rename would cross mounts */
} nsr_commit_stats;

typedef struct nsr_commit_result {
        size_t applied; /* changes applied */
        nsr_commit_conflict *conflicts;
        size_t n_conflicts;
        char **units;       /* the git dirs held back whole because part of them conflicted */
        char **split_links; /* files replaced that had other hard links on the host (they keep the old content) */
        char **overruled;   /* prefer_sandbox: pairs of a path and the host change its new version replaced (the
                             * host's version is in the backups, for undo) */
        bool withheld;      /* all_or_nothing and a conflict: nothing applied, the upper dir untouched */
        nsr_commit_stats stats;
} nsr_commit_result;

void nsr_commit_result_done(nsr_commit_result *r);

typedef struct nsr_commit_opts {
        int project_fd;           /* O_PATH|O_DIRECTORY fd of the live project */
        const char *project_path; /* absolute; recorded in the journal (recovery matches it) */
        int upper_fd;             /* the project's overlay upper dir (the new versions) */
        int run_fd;               /* the run dir */
        const char *run_path;     /* the run dir's absolute path, for kept_at */
        unsigned project_index;   /* N in pN */
        struct timespec
                run_start;   /* CLOCK_REALTIME before the sandbox; the command waited for the coarse clock to pass it */
        int state_fd;        /* the state dir, for its pending/ index */
        const char *run_id;  /* the run's id; NULL: the journal is not indexed (tests only) */
        bool all_or_nothing; /* a conflict anywhere: apply nothing, leave the upper dir as it is */
        bool check_only;     /* only find the conflicts: apply nothing in any case */
        bool prefer_sandbox; /* a conflict the sandbox's version can settle is no conflict: it replaces the
                              * host's version (backed up like any original); the rest stay conflicts
                              * (a parent dir gone, a dir the sandbox kept but the host removed or replaced,
                              * the project dir's own mode) */
} nsr_commit_opts;

/* Whether a host entry with this ctime changed after start (a run's
 * run_start). A ctime a filesystem truncated (its nanoseconds end in
 * zeros) stands for any moment up to one granule later. docs/conflicts.md. */
bool nsr_commit_changed_after(struct timespec ctime, struct timespec start);

/* The unit a path belongs to for conflicts: the git dir it is in (the
 * path up to its first ".git" component, as a new string), or NULL when
 * the path stands alone. A git dir's index, refs, reflogs and objects only
 * make sense together: they apply whole or not at all. */
char *nsr_commit_unit_of(const char *path);

/* Applies cs (sorted, protected paths already removed). Returns 0 when
 * every change applied or conflicted; a negative errno, with everything
 * rolled back, when the apply failed (*ret is then untouched). The upper
 * dir is consumed: applied entries move out of it, conflicting ones move to
 * conflict/pN. Fails with -EEXIST if this run already applied to project
 * N, and -EBUSY if an unfinished journal waits for nsr_commit_recover(). */
int nsr_commit_apply(const nsr_changeset *cs, const nsr_commit_opts *o, nsr_commit_result *ret, nsr_error *err);

/* Rolls back, as a whole, every unfinished journal (apply or undo) of runs
 * under statefd/runs that touched project_path, newest first; new versions
 * go back to their source dir, so the run can be applied again. Journals
 * that are done only get their leftover temporary entries removed. Call
 * with the project lock held, before anything else touches the project.
 * *ret_recovered counts the journals rolled back (main.c says so on
 * stderr). Idempotent: a crash during recovery is recovered again. Only
 * the journals marked in statefd/pending are read (a state dir without
 * pending/ predates the index: then every run is scanned). */
int nsr_commit_recover(int statefd, const char *project_path, int project_fd, size_t *ret_recovered, nsr_error *err);

typedef struct nsr_undo_opts {
        int project_fd;
        const char *project_path; /* absolute, as for the apply */
        int run_fd;               /* the run being undone */
        unsigned project_index;
        int undo_run_fd;         /* a new run dir that journals and backs up the undo */
        bool force;              /* also restore paths changed since the apply */
        int state_fd;            /* the state dir, for its pending/ index */
        const char *undo_run_id; /* the undo run's id; NULL: not indexed (tests only) */
} nsr_undo_opts;

typedef struct nsr_undo_result {
        size_t restored; /* steps of the apply undone */
        char **refused;  /* paths changed since the apply (not restored without force),
                                     * or whose backup is gone (an undo already done) */
        nsr_commit_stats stats;
} nsr_undo_result;

void nsr_undo_result_done(nsr_undo_result *r);

/* Restores what the run's apply replaced or deleted, from its backups, and
 * removes what it created (into undo_run_fd's backup/pN, never unlinked).
 * Journaled and backed up like an apply, so an undo can itself be undone:
 * pass the undo's run dir as run_fd. The run must have a done journal for
 * project_index (-ENOENT otherwise). Undo the newest run first: the
 * fingerprints refuse paths a later run changed. */
int nsr_commit_undo(const nsr_undo_opts *o, nsr_undo_result *ret, nsr_error *err);

/* ---- changes made live -----------------------------------------------------
 * In best-effort mode (no user namespace) and with --no-overlay, the
 * command writes to the project itself, and a snapshot taken before it ran
 * (snapshot.h) is at RUN/backup/pN. There is nothing left to apply; what
 * these two do makes the run look like an apply that is done, so that
 * history, the report and undo work as for any other run. */
typedef struct nsr_live_opts {
        int project_fd;           /* O_PATH|O_DIRECTORY fd of the live project */
        const char *project_path; /* absolute */
        int run_fd;               /* the run dir, holding backup/pN (the snapshot) */
        unsigned project_index;   /* N in pN */
        struct timespec run_start;
} nsr_live_opts;

/* Puts every change in cs (the protected paths' changes, sorted) back as
 * the snapshot has it: a created entry is removed, a deleted or changed one
 * comes back from the snapshot (moved out of it), a dir's changed mode is
 * set back. A path that cannot be reverted is listed in *ret_failed
 * ("'PATH': reason"), and the others still are. */
int nsr_commit_revert_live(const nsr_changeset *cs, const nsr_live_opts *o, char ***ret_failed, nsr_error *err);

/* Records cs (sorted, protected paths removed and reverted) as a done
 * apply: journal/pN with the steps an apply would have taken (a created
 * dir is one place step, a dir changed in place a meta step, and so on),
 * and applied/pN with the fingerprints of the live entries. New entries
 * lose setuid and setgid bits and file capabilities first, as an apply
 * strips them. The backup dir then holds only the originals of the
 * replaced and removed paths, moved out of the snapshot (O(changes)),
 * which are exactly the backups an undo restores; the rest of the
 * snapshot is left in RUN/trash/pN for the caller to remove. The journal
 * appears only once complete (never a journal a recovery would roll
 * back). */
int nsr_commit_record_live(const nsr_changeset *cs, const nsr_live_opts *o, nsr_commit_result *ret, nsr_error *err);
