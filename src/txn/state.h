/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsrun's state outside every project: runs, their overlay layers,
 * journals and backups, and the per-project locks.
 *
 *   STATE/runs/RUN/            one dir per run (0700)
 *       meta                   what the run was: see nsr_run_meta
 *       p0/upper p0/work ...   the overlay layers of project 0, 1, ...
 *       p0/applied             project 0 is applied (its run was kept for another's failed apply)
 *       p0/foreign             files of other owners copied into p0/upper (project/foreign.h)
 *       reserve                space held while the command runs (nsr_run_reserve)
 *       backup/p0/...          originals the apply replaced or deleted
 *       trash/                 what is left of snapshots, removed in the background
 *       journal/pN             the apply (or undo) journal of project N (txn.c)
 *       applied/pN             fingerprints of what the apply wrote (txn.c)
 *       conflict/ excluded/ rollback/   see txn/commit.h
 *       report.json            the run's report
 *   STATE/projects/KEY/lock    flock()ed while a run applies to the project
 *   STATE/projects/KEY/path    the project's absolute path
 *   STATE/projects/KEY/foreign-clean   dirs with nothing of other owners (project/foreign.h)
 *
 * Run ids sort by time: 20261125T221530.123Z-3f9a1c. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"

#define NSR_RUN_ID_MAX 64

/* What became of a run, and of each of its projects: the meta file's
 * "state" and the report's "outcome" spell these names. */
typedef enum nsr_outcome {
        NSR_OUTCOME_RUNNING,   /* not finished (or its nsrun died: nsr_run_meta_is_orphan()) */
        NSR_OUTCOME_COMMITTED, /* applied to the projects */
        NSR_OUTCOME_CONFLICT,  /* applied, except what conflicted */
        NSR_OUTCOME_KEPT,      /* kept for review: diff, commit or discard it */
        NSR_OUTCOME_DISCARDED,
        NSR_OUTCOME_FAILED,
        NSR_OUTCOME_UNDONE,
        NSR_OUTCOME_UNKNOWN, /* a name this nsrun does not know (a newer nsrun's, or a damaged file) */
        _NSR_OUTCOME_MAX,
        _NSR_OUTCOME_INVALID = -EINVAL,
} nsr_outcome;

/* The name; NULL out of range. */
const char *nsr_outcome_to_string(nsr_outcome o);
/* Never fails: NULL or a name it does not know is NSR_OUTCOME_UNKNOWN. */
nsr_outcome nsr_outcome_from_string(const char *s);

/* --state-dir, else $XDG_STATE_HOME/nsrun, else ~/.local/state/nsrun. */
int nsr_state_dir_resolve(const char *opt, char *const *env, char **ret, nsr_error *err);
/* The state dir a run uses: --state-dir (opt) as given; else the default
 * above, unless it cannot hold runs here: it cannot be created or written
 * (a read-only home, as inside a sandbox), or it lies on an overlay, which
 * cannot hold overlay upper dirs (inside nsrun's project mode the home is
 * one). Then $TMPDIR/nsrun-state-UID (or /tmp/...), created 0700, and
 * refused unless it is a real dir of the caller's that nobody else may
 * write; *ret_note then says where and why, for stderr (NULL otherwise).
 * With for_run false (subcommands, traces: nothing is created), the
 * fallback is chosen only when the default does not exist and it does. */
int nsr_state_dir_choose(const char *opt, char *const *env, bool for_run, char **ret, char **ret_note, nsr_error *err);
/* Creates the state dir (0700, parents as needed) and opens it. */
int nsr_state_open(const char *dir, nsr_error *err);
/* What a run was: STATE/runs/RUN/meta, a line file ("key value"), with
 * byte strings (paths, argv) hex-encoded. */
typedef struct nsr_run_meta {
        char run_id[NSR_RUN_ID_MAX];
        nsr_outcome state;     /* in the file: its name (nsr_outcome_to_string()) */
        char *kind;            /* "run", or "undo" for the run an undo made */
        char *undoes;          /* kind undo: the run it undid */
        struct timespec start; /* the run's start (conflict checks compare ctimes with it) */
        char **projects;       /* absolute paths */
        char **argv;
        int exit_code; /* -1: none */
        int signal;    /* 0: none */
        /* per project: created, modified, deleted, type_changed, metadata_changed */
        unsigned long (*counts)[5];
        /* per project: the st_dev and st_ino the project had when the run
         * started, so that commit and undo can refuse a path that names
         * something else now; both 0 when the meta predates them */
        unsigned long long (*ids)[2];
        /* Who runs it, to tell a live run from one whose nsrun died. */
        pid_t pid;
        unsigned long long pid_start; /* the process's start time, against pid reuse */
        char boot[40];                /* the kernel's boot id */
} nsr_run_meta;

/* Fills the owner fields (pid, start time, boot id) for the calling
 * process. */
void nsr_run_meta_set_owner(nsr_run_meta *m);
/* A run still marked running whose nsrun is gone. */
bool nsr_run_meta_is_orphan(const nsr_run_meta *m);
/* Whether every apply journal in the run dir is settled (done or rolled
 * back): an unsettled one waits for recovery and must not be pruned. */
bool nsr_run_journals_settled(int run_fd);

void nsr_run_meta_done(nsr_run_meta *m);
/* The run's meta file, one record (version to end), written whole:
 * the new record or the old file, never a torn one. */
int nsr_run_meta_write(int run_fd, const nsr_run_meta *m, nsr_error *err);
/* The same record appended to the meta a run wrote when it began: no
 * temporary, no rename over the old file (on ext4 that starts the new
 * file's write-back at once, 0.12 to 0.2 ms; auto_da_alloc), nothing
 * freed. The file then holds two records, of which the reader takes the
 * last whole one; a crash that cuts the append short leaves the first.
 * A meta that is not as a run leaves it is written whole instead. */
int nsr_run_meta_append(int run_fd, const nsr_run_meta *m, nsr_error *err);
/* The last whole record of the run's meta file. */
int nsr_run_meta_read(int run_fd, nsr_run_meta *ret, nsr_error *err);
/* Every run id under STATE/runs, newest first. */
int nsr_state_list_runs(int statefd, char ***ret, nsr_error *err);

#define NSR_BACKUP_LIMIT_DEFAULT ((uint64_t) 2 << 30)

typedef struct nsr_gc_stats {
        size_t removed;
        uint64_t bytes;
} nsr_gc_stats;

/* Applied runs (committed, conflict) whose backups gc never prunes by
 * size, per project, however large they are. */
#define NSR_GC_UNDO_KEEP 3

/* Retention: removes runs older than keep_days, then, per project, two
 * budgets of backup_limit bytes each that never mix. The backups of applied
 * runs: beyond the NSR_GC_UNDO_KEEP newest applied runs, the oldest go once
 * the backups pass the limit. What sandboxes wrote (the layers of kept,
 * failed, discarded and undone runs, and what an applied run set aside):
 * past the limit, the oldest unapplied runs go, and applied ones lose
 * those leftovers only. So a run that writes a huge layer cannot push out
 * the backups an undo needs. The newest run of each project always stays;
 * runs still running (or crashed with an apply unfinished) are left for
 * recovery. */
int nsr_state_gc(int statefd, long keep_days, uint64_t backup_limit, nsr_gc_stats *ret, nsr_error *err);
/* Removes RUN/trash (what is left of a snapshot once the backups are out
 * of it, a run's layers) in a detached background process, which takes
 * hold_fd (or -1: closed here, the caller's copy) and is the last to hold
 * it, then makes the next run's dir ahead (txn/spare.h) in state_dir (or
 * not, when NULL). */
void nsr_state_trash_background(const char *state_dir, const char *run_dir, int hold_fd);
/* Runs nsr_state_gc() in a detached background process, at most once an
 * hour, so retention never sits on a run's critical path. */
void nsr_state_gc_background(const char *state_dir, long keep_days, uint64_t backup_limit);
/* From now on, the two above keep what they are asked (once each) for
 * nsr_state_background_exit() instead of forking: for a process that ends
 * right after its run (a one-shot project run), not for a session's. */
void nsr_state_background_defer(void);
/* Starts what was kept, if anything, in one detached process and ends this
 * one with rc, having done nothing else. The child shares this process's
 * memory (clone with CLONE_VM, not fork), so neither a copy of the page
 * tables nor their teardown at exit is on the caller's path; a fork is the
 * fallback. Returns at once when nothing was kept, or after that fork. */
void nsr_state_background_exit(int rc);

/* A new run id from the time and random bytes. */
void nsr_run_id_new(char ret[NSR_RUN_ID_MAX]);
/* A run id is only ever [0-9A-Za-z.-]; anything else is refused before it
 * becomes a path. */
bool nsr_run_id_is_valid(const char *id);
/* Creates runs/RUN with p0..pN-1/{upper,work} (with one project, the spare
 * made ahead when there is one: txn/spare.h); returns the run dir fd. */
int nsr_run_create(int statefd, const char *run_id, size_t n_projects, nsr_error *err);
/* Opens an existing run dir. */
int nsr_run_open(int statefd, const char *run_id, nsr_error *err);

/* A full state dir. A run needs NSR_STATE_MIN_FREE free to start; of that
 * it holds NSR_RUN_RESERVE (RUN/reserve, allocated before the command
 * starts) and gives it back once the command has ended, so that its
 * records (journal, meta, report) can still be written when the command
 * filled the file system. */
#define NSR_STATE_MIN_FREE (UINT64_C(1) << 20)
#define NSR_RUN_RESERVE    (UINT64_C(256) << 10)
/* Bytes the caller may still write on the state dir's file system
 * (UINT64_MAX when it cannot tell). */
uint64_t nsr_state_free(int statefd);
/* -ENOSPC, with a message that says the state dir is full and how much a
 * run needs, when less than NSR_STATE_MIN_FREE is free. */
int nsr_state_check_space(int statefd, const char *dir, nsr_error *err);
/* The message for ENOSPC in the state dir, into err (returns -ENOSPC). */
int nsr_state_full_error(int statefd, const char *dir, nsr_error *err);
/* The reserve a run left for the next one (nsr_run_release). It holds
 * space only while there is room: nsr_state_check_space removes it before
 * it would refuse a run. */
#define NSR_RESERVE_SPARE "reserve.spare"
/* RUN/reserve: the spare moved in, when it is whole and ours, else newly
 * allocated; -ENOSPC (the state dir is full) when it cannot be. */
int nsr_run_reserve(int statefd, int run_fd, nsr_error *err);
/* Gives the reserve back: freed when the state dir is full (state_full),
 * else kept as the spare unless there is one already. */
void nsr_run_release(int statefd, int run_fd, bool state_full);
/* The disk use of a tree below dirfd, in bytes (an estimate: what cannot
 * be read counts as 0). */
uint64_t nsr_state_tree_size(int dirfd, const char *name);
/* The stable key of a project path (a hash), as hex. */
void nsr_project_key(const char *abs_path, char ret[17]);
/* Takes the project's exclusive lock, waiting for it; returns the fd that
 * holds it (closing it releases the lock). */
int nsr_project_lock(int statefd, const char *abs_path, nsr_error *err);
/* nsr_txnfs_rm_rf with an error message: removes a directory tree below
 * dirfd (no symlink is followed; dirs the sandbox set to 000 are made
 * removable first). */
int nsr_rm_rf_at(int dirfd, const char *name, nsr_error *err);
