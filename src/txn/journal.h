/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The two files a transaction keeps per project in a run dir, as types and
 * text formats:
 *   journal/pN   the steps of an apply or undo, and how far it got
 *   applied/pN   fingerprints of what it wrote, for a later undo
 * The formats are described at the top of txn.c. Written by the
 * transaction code (txn.c, commit.c); read also by "nsrun diff" of an
 * applied run (cmd/runs.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"
#include "base/util.h"
#include "txn/changeset.h"

/* Limits on what we write and what we agree to read back. */
#define NSR_JOURNAL_MAX      ((uint64_t) 256 * 1024 * 1024)
#define NSR_JOURNAL_LINE_MAX ((size_t) 1024 * 1024)
#define NSR_APPLIED_MAX      ((uint64_t) 1024 * 1024 * 1024)

typedef enum nsr_step_op {
        NSR_STEP_PLACE,   /* a new entry where the project had none */
        NSR_STEP_REPLACE, /* the original to the backup, the new entry in its place */
        NSR_STEP_REMOVE,  /* the original to the backup */
        NSR_STEP_META,    /* a dir's mode, owner and xattrs, changed in place */
        NSR_STEP_WRITE,   /* a file's new content written into the host's inode, which keeps its owner,
                           * mode and links; the original content is copied to the backup first */
        _NSR_STEP_OP_MAX,
        _NSR_STEP_OP_INVALID = -EINVAL,
} nsr_step_op;

/* Which inode an entry is: what recovery compares to tell the original
 * from the new version without trusting anything else. */
typedef struct nsr_ident {
        bool set;
        uint64_t dev;
        uint64_t ino;
        nsr_entry_type type;
        mode_t mode; /* 07777 bits */
} nsr_ident;

typedef struct nsr_xattr_change {
        char *name;
        char *old_value; /* NULL: the dir did not have it */
        size_t old_len;
        char *new_value; /* NULL: the change removes it */
        size_t new_len;
} nsr_xattr_change;

typedef struct nsr_step {
        nsr_step_op op;
        char *path;
        /* The step's parent dir is not on the mount of the source or the
         * backup dir: the new entry is copied beside the target and the
         * original is backed up by a copy. */
        bool copy;
        /* The new entry is a dir: the fingerprints cover its subtree. */
        bool tree;
        nsr_ident orig;   /* REPLACE, REMOVE, META: the live entry at plan time */
        nsr_ident new_id; /* PLACE, REPLACE: the new entry (a copy step's copy once made) */
        /* META only. */
        mode_t old_mode, new_mode;
        uid_t old_uid, new_uid;
        gid_t old_gid, new_gid;
        bool chown;
        nsr_xattr_change *xattrs;
        size_t n_xattrs;
        /* After a rollback ("r" lines): the original is back at the live
         * path with this ctime, which our own renames changed. A new apply
         * of the run accepts exactly this ctime as "not changed by the
         * host". */
        bool restored;
        struct timespec restored_ctime;
} nsr_step;

typedef struct nsr_journal {
        char token[17]; /* names the temporary entries of this transaction */
        bool undo;
        char *project;  /* the project's absolute path */
        unsigned index; /* N in pN */
        struct timespec run_start;
        char *source; /* absolute path of the dir new entries come from, or NULL */
        uint64_t source_dev, source_ino;
        char *undoes; /* an undo: the run dir it undoes (informational), or NULL */
        nsr_step *steps;
        size_t n_steps, n_allocated;
        /* What the file says happened. */
        bool plan_valid; /* the plan is complete and its checksum matches */
        bool prepared;   /* copies made, their inodes recorded */
        bool done;
        bool swept; /* a done copy transaction's leftovers removed */
        bool rolled_back;
} nsr_journal;

static inline bool nsr_step_has_new(const nsr_step *s) {
        return s->op == NSR_STEP_PLACE || s->op == NSR_STEP_REPLACE;
}
static inline bool nsr_step_has_orig(const nsr_step *s) {
        return s->op == NSR_STEP_REPLACE || s->op == NSR_STEP_REMOVE;
}

/* The identity of an lstat, and whether an lstat is that entry (dev, inode
 * and type; the mode is informational). */
nsr_ident nsr_ident_from_stat(const struct stat *st);
bool nsr_ident_is(const nsr_ident *id, const struct stat *st);

/* 16 random hex digits (and the NUL). */
void nsr_journal_token_new(char ret[17]);

nsr_journal *nsr_journal_new(void);
nsr_journal *nsr_journal_free(nsr_journal *j);
DEFINE_CLEANUP_FUNC(nsr_journal *, nsr_journal_free)
/* Appends a zeroed step with its own copy of path. */
nsr_step *nsr_journal_add_step(nsr_journal *j, nsr_step_op op, const char *path);
/* Drops every step (a plan made again). */
void nsr_journal_clear_steps(nsr_journal *j);
const char *nsr_step_op_to_string(nsr_step_op op);

/* Writes the plan (header, steps, "plan CRC") to fd, which must be empty,
 * and fsyncs it. -E2BIG beyond NSR_JOURNAL_MAX. */
int nsr_journal_write_plan(int fd, const nsr_journal *j, nsr_error *err);
/* Appends one line ("prepared", "done", ...), fsynced when sync. */
int nsr_journal_append(int fd, const char *line, bool sync);
/* Appends "n K IDENT": the inode of step K's copy. */
int nsr_journal_append_new(int fd, size_t k, const nsr_ident *id);
/* Appends "r K SEC NSEC": step K's original is back, with this ctime. */
int nsr_journal_append_restored(int fd, size_t k, struct timespec ctime);
/* Reads a journal back. With header_only, reads the header and the state
 * lines at the end of the file (done, rolled-back, swept) but no steps:
 * enough to tell whether a journal needs recovery. A torn plan (a crash
 * before it was made durable) gives plan_valid false, not an error. */
int nsr_journal_read(int fd, bool header_only, nsr_journal **ret, nsr_error *err);

/* ---- fingerprints --------------------------------------------------------- */
typedef struct nsr_fingerprint {
        char *path;
        bool meta_only; /* a dir changed in place: compare inode, mode and owner only */
        nsr_entry_type type;
        uint64_t dev, ino, size;
        struct timespec mtime, ctime;
        mode_t mode;
        uid_t uid;
        gid_t gid;
} nsr_fingerprint;

typedef struct nsr_applied {
        nsr_fingerprint *f;
        size_t n, n_allocated;
} nsr_applied;

void nsr_applied_done(nsr_applied *a);
void nsr_applied_add(nsr_applied *a, const char *path, const struct stat *st, bool meta_only);
/* Writes name.tmp below dirfd and renames it to name. */
int nsr_applied_write(int dirfd, const char *name, const nsr_applied *a, nsr_error *err);
/* Reads and sorts (subtrees contiguous, see nsr_changeset_path_cmp). */
int nsr_applied_read(int dirfd, const char *name, nsr_applied *ret, nsr_error *err);
/* The index of path, or of the first entry after it; *ret_found says which. */
size_t nsr_applied_find(const nsr_applied *a, const char *path, bool *ret_found);
/* ignore_ctime: for an entry a rolled-back transaction moved away and back. */
bool nsr_fingerprint_matches(const nsr_fingerprint *f, const struct stat *st, bool ignore_ctime);
/* b is below a ("a/x" below "a", "ab" not). */
bool nsr_path_is_below(const char *child, const char *parent);
