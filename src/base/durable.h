/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One way to persist a file in the state dir: the whole new content or the
 * old file, never a torn one and never a leftover temporary.
 *
 * What nsrun writes and does not write through it, and why:
 * - through it: run meta (but for a run's final record, appended to its
 *   first: txn/state.h, nsr_run_meta_append), report.json, a project's path note, the
 *   fingerprints (applied/pN), a session's base time and conflict list,
 *   the gc stamp, seccomp cache entries, a reduced .git/config;
 * - the journal (txn/txn.c) is an append-only log: the transaction keeps
 *   its fd and appends and fsyncs one record at each step of the protocol,
 *   and a recovery reads whatever prefix reached the disk; a whole-file
 *   replace cannot express that;
 * - the pending/ marks (txn.c, commit.c) are empty files whose existence is
 *   the record: creating one is atomic already, and their dir is fsynced;
 *   a project's lock file holds nothing, the flock on it is what counts;
 * - backups and snapshot copies are copies of the user's files (txnfs.c,
 *   snapshot.c), made under their own names and checked against the
 *   original, not state files;
 * - files written for the caller (--report FILE, exports) go through
 *   outfile.h, which also refuses what a sandbox may have planted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

/* fsync the file before the rename and its directory after it: for files a
 * recovery reads after a crash. Without it the rename is still atomic, but
 * a crash may lose the new content (the old file or none is then seen). */
#define NSR_DURABLE_SYNC (1u << 0)

/* Leave name alone when it is already a regular file (not a symlink) of
 * exactly mode holding exactly data: for notes and caches rewritten on
 * every run with the same bytes. Replacing a file by a rename costs more
 * than reading it (ext4 starts the write-back of the new file when a
 * rename replaces another, auto_da_alloc). Not with NSR_DURABLE_SYNC: an
 * equal file may not be on disk yet, so a synced write always writes. */
#define NSR_DURABLE_IF_CHANGED (1u << 1)

/* Take a temporary made ahead of time when dirfd holds one: the first of
 * NSR_DURABLE_SPARE_PREFIX "0" .. "N-1" (NSR_DURABLE_SPARES) still there is
 * renamed to the temporary's name (so two writers never share one) and
 * used if it is an empty regular file of ours with one link; else it is
 * removed, and a new temporary is made as without the flag. A new inode
 * is an allocation on the run's path, and on ext4 without a journal that
 * allocation first walks past every inode freed in the last minutes
 * (ext4's recently_deleted(), up to 0.5 ms when runs come back to back;
 * bench/README.md, "Twelfth pass"). A run dir made ahead (txn/spare.h)
 * carries these, made by the last run's background process; a writer
 * whose dir has none, or none left, creates its own. A spare's name is
 * fixed, not random: it lives in the user's own state dir, which no
 * sandbox can reach (as txn/spare.h says). */
#define NSR_DURABLE_SPARE        (1u << 2)
#define NSR_DURABLE_SPARE_PREFIX ".spare-"
/* A no-op run writes three files whole: p0/root, its first meta (its
 * final record is appended to that one: txn/state.h), report.json. */
#define NSR_DURABLE_SPARES 3

/* Makes the NSR_DURABLE_SPARES empty files in dirfd; true when all exist. */
bool nsr_durable_spares_make(int dirfd);

/* Whether dirfd/name is such a spare (an empty regular file of ours, with
 * one link, that group and others cannot write). */
bool nsr_durable_spare_is(int dirfd, const char *name);

/* Removes the spares a writer did not take. */
void nsr_durable_spares_drop(int dirfd);

/* Writes len bytes of data to dirfd/name (dirfd may be O_PATH): a new
 * temporary in the same dir (O_EXCL, O_NOFOLLOW, so nothing that lies in
 * wait there is followed or reused) with exactly mode (not what the umask
 * leaves of it), every
 * write and the close checked, then renameat over name. On failure name is
 * untouched and the temporary is gone. name must be a plain name or a path
 * relative to dirfd whose last component is the file. */
int nsr_durable_write(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                      nsr_error *err);

/* The same in two halves, for content written as it is produced:
 * nsr_durable_begin creates the temporary and gives its fd in d->fd;
 * nsr_durable_finish(d, r, err) with r the caller's result so far (< 0:
 * a write failed and err says why) completes the write as above, or
 * removes the temporary. Either way d is done afterwards; a d that was
 * begun and never finished is undone by nsr_durable_done (a cleanup). */
typedef struct nsr_durable {
        int dirfd;
        int fd;
        unsigned flags;
        char *name;
        char *tmp;
} nsr_durable;
#define NSR_DURABLE_INIT                                                                                               \
        { .dirfd = -1, .fd = -1 }

int nsr_durable_begin(nsr_durable *d, int dirfd, const char *name, mode_t mode, unsigned flags, nsr_error *err);
int nsr_durable_finish(nsr_durable *d, int r, nsr_error *err);
void nsr_durable_done(nsr_durable *d);
