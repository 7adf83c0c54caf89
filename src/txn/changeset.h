/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The change set: what a sandboxed command changed in one project.
 *
 * capture.c builds it from an overlay upper dir, commit.c applies it and
 * report.c prints it. This module is pure: no system calls.
 *
 * Paths are byte strings relative to the project root: no leading or
 * trailing slash, no empty, "." or ".." component, and any byte except NUL,
 * including newlines and invalid UTF-8. nsr_changeset_add() enforces this,
 * so the apply step can trust every path it is given.
 *
 * One exception: the path "." stands for the project root itself, and
 * only for a change of its mode (NSR_CHANGE_METADATA_CHANGED of a dir that
 * was a dir, meta exactly NSR_META_MODE). It sorts before every other path
 * and nothing is below it (the root is no parent in the set); every
 * consumer that opens "parent dir + leaf" gets the root and "." for it. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"
#include "base/util.h"

typedef enum nsr_change_kind {
        NSR_CHANGE_CREATED,          /* no entry in the project before */
        NSR_CHANGE_MODIFIED,         /* same type, other content or symlink target */
        NSR_CHANGE_DELETED,          /* the project entry is gone */
        NSR_CHANGE_TYPE_CHANGED,     /* replaced by an entry of another type */
        NSR_CHANGE_METADATA_CHANGED, /* same content; mode, owner, xattrs or mtime differ */
        _NSR_CHANGE_KIND_MAX,
        _NSR_CHANGE_KIND_INVALID = -EINVAL,
} nsr_change_kind;

typedef enum nsr_entry_type {
        NSR_ENTRY_FILE,
        NSR_ENTRY_DIR,
        NSR_ENTRY_SYMLINK,
        NSR_ENTRY_OTHER, /* fifo, socket, device */
        _NSR_ENTRY_TYPE_MAX,
        _NSR_ENTRY_TYPE_INVALID = -EINVAL,
} nsr_entry_type;

/* Which metadata differ, for NSR_CHANGE_METADATA_CHANGED (and set as far as
 * it is known for other kinds). The apply step needs this for directories,
 * which it updates in place instead of replacing. */
enum {
        NSR_META_MODE = 1u << 0,   /* permission bits, setuid, setgid, sticky */
        NSR_META_OWNER = 1u << 1,  /* uid or gid */
        NSR_META_XATTRS = 1u << 2, /* extended attributes (user.overlay.* ignored) */
        NSR_META_MTIME = 1u << 3,  /* modification time (never for directories) */
};

/* The state of the entry in the project (the overlay's lower layer) when
 * it was scanned. The apply step compares it with the project at commit
 * time to detect conflicts: a path that changed on the host meanwhile. */
typedef struct nsr_entry_old {
        bool exists; /* false for NSR_CHANGE_CREATED */
        nsr_entry_type type;
        mode_t mode; /* permission bits only (07777) */
        uid_t uid;
        gid_t gid;
        uint64_t size;
        struct timespec mtime;
        struct timespec ctime;
        dev_t dev;
        ino_t ino;
} nsr_entry_old;

typedef struct nsr_change {
        char *path; /* relative to the project root, see above */
        nsr_change_kind kind;
        /* The new entry. For NSR_CHANGE_DELETED these describe the entry
         * that was deleted (the same values as old). */
        nsr_entry_type type;
        uint64_t size; /* 0 for directories */
        mode_t mode;   /* permission bits incl. setuid/setgid/sticky (07777) */
        uid_t uid;
        gid_t gid;
        struct timespec mtime;
        char *target; /* symlink target of the new entry, else NULL */
        /* Deleted dirs, and dirs replaced by another type: how many entries
         * were below it in the project (recursively, not counting itself). */
        uint64_t descendants;
        unsigned meta; /* NSR_META_* flags */
        nsr_entry_old old;
        /* A modified file that the apply writes into the host's inode
         * (NSR_STEP_WRITE) instead of replacing it: one the user may write
         * but whose owner a new file could not keep (project/foreign.c). */
        bool in_place;
} nsr_change;

/* The default limit on the number of changes in one set (max_changes). */
#define NSR_CHANGESET_MAX_CHANGES_DEFAULT ((size_t) 10 * 1000 * 1000)

typedef struct nsr_changeset {
        nsr_change *changes; /* read-only for users of the set */
        size_t n_changes;
        size_t n_allocated;
        size_t counts[_NSR_CHANGE_KIND_MAX];
        size_t max_changes; /* nsr_changeset_add fails with -E2BIG beyond it */
        bool sorted;
} nsr_changeset;

nsr_changeset *nsr_changeset_new(void);
/* Accepts NULL; returns NULL. */
nsr_changeset *nsr_changeset_free(nsr_changeset *cs);
DEFINE_CLEANUP_FUNC(nsr_changeset *, nsr_changeset_free)

/* Copies *c (path and target are duplicated; the caller keeps its own).
 * Fails with -EINVAL for an invalid path, kind or type, a target on
 * something that is not a symlink, and -E2BIG when max_changes is reached.
 * Duplicates are not detected here but by nsr_changeset_sort(). */
int nsr_changeset_add(nsr_changeset *cs, const nsr_change *c, nsr_error *err);

/* Sorts by path, comparing component by component as bytes (so a parent
 * comes right before its subtree: "a", "a/b", "a-b"). Fails with -EEXIST
 * if two changes have the same path. */
int nsr_changeset_sort(nsr_changeset *cs, nsr_error *err);

/* Binary search when sorted, linear otherwise. NULL when not found. */
const nsr_change *nsr_changeset_lookup(const nsr_changeset *cs, const char *path);

size_t nsr_changeset_count(const nsr_changeset *cs, nsr_change_kind kind);
size_t nsr_changeset_size(const nsr_changeset *cs);
static inline bool nsr_changeset_is_empty(const nsr_changeset *cs) {
        return nsr_changeset_size(cs) == 0;
}

/* Moves every change for which pred returns true into a new set (in the
 * same order), e.g. changes that touch protected paths. *ret_moved is
 * always a set, possibly empty. Counts are updated on both. */
int nsr_changeset_split(nsr_changeset *cs, bool (*pred)(const nsr_change *c, void *userdata), void *userdata,
                        nsr_changeset **ret_moved);

/* "created", "modified", "deleted", "type_changed", "metadata_changed";
 * NULL for an invalid kind. from_string returns _NSR_CHANGE_KIND_INVALID. */
const char *nsr_change_kind_to_string(nsr_change_kind k);
nsr_change_kind nsr_change_kind_from_string(const char *s);
/* "file", "dir", "symlink", "other". */
const char *nsr_entry_type_to_string(nsr_entry_type t);
nsr_entry_type nsr_entry_type_from_string(const char *s);
nsr_entry_type nsr_entry_type_from_mode(mode_t m);

/* Checks the path rules above ("." is not valid here). */
bool nsr_changeset_path_is_valid(const char *path);

/* "." : the project root's own entry (see above). */
#define NSR_CHANGESET_ROOT "."
bool nsr_changeset_path_is_root(const char *path);
/* The change set's path order: the root's "." first, then component by
 * component with '/' before every other byte, so a dir's subtree follows
 * it contiguously. The journal's fingerprints use it too. */
int nsr_changeset_path_cmp(const char *a, const char *b);

/* Whether c is a root change of the one allowed form: its mode only. */
bool nsr_change_is_root_mode(const nsr_change *c);

/* Whether c would put a fifo, socket or device node (any type but a file,
 * a dir or a symlink) into the project: created, modified, type changed
 * or metadata changed to an entry of NSR_ENTRY_OTHER. Such a version never
 * reaches a project: a fifo named .git/HEAD or package.json hangs every
 * host tool that reads it. Deleting one is fine. */
bool nsr_change_makes_special(const nsr_change *c);
