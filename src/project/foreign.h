/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Files of other owners: what the user may write on the host, the command
 * may write inside.
 *
 * An unprivileged user's sandbox maps only the user's own uid and gid. An
 * entry whose owner or group is anything else cannot be copied up by the
 * overlay (it cannot chown the copy: EOVERFLOW, "Value too large for
 * defined data type"), so the command could not write a group-writable
 * file of a shared checkout, a file of group root the user owns, or a
 * root-owned file of mode 666. Before the command starts, nsrun copies
 * each such file that the user may write (or owns) into the upper layer
 * itself, as the user, and makes the upper dirs above it (and every such
 * dir the user may write), so the overlay never needs a copy-up of them.
 * A copy's owner bits are what the user may do on the host.
 *
 * Each entry made is recorded in RUN/pN/foreign with the copy's identity
 * and mode: the capture compares the upper entry with that record (an
 * untouched copy is no change), and a copied file the command modified is
 * applied by writing into the host's inode (NSR_STEP_WRITE), so it keeps
 * its owner, group, mode and links, as the user's own write would.
 *
 * Root maps every id: nothing to do there. The walk stats every entry of
 * the project (no open, no read) and stops at NSR_FOREIGN_MAX_ENTRIES,
 * except in a dir the last walk found clean (nothing of another owner or
 * group in it) and that has not changed since (the same inode, mtime and
 * ctime, kept in a cache file in the state dir): there only its subdirs
 * are looked at, by the names the cache keeps (the dir is not read), so an
 * unchanged tree costs a stat per dir, not per file or entry.
 * A file given another owner in place (chown), which changes nothing of
 * its dir, is seen once the dir changes. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "project/capture.h"
#include "txn/changeset.h"

#define NSR_FOREIGN_MAX_ENTRIES ((uint64_t) 10 * 1000 * 1000)

typedef struct nsr_foreign_stats {
        uint64_t entries; /* entries looked at */
        uint64_t files;   /* files copied into the upper layer */
        uint64_t dirs;    /* upper dirs made */
        uint64_t skipped; /* dirs whose files were not looked at (clean in the cache) */
} nsr_foreign_stats;

/* Walks the project (project_fd) and prepares the upper dir (upper_fd) of
 * project index of the run (run_fd), recording what it made. Entries that
 * cannot be read or copied are left to the overlay; only a failure to
 * write into the state dir (a full one) is an error. */
int nsr_foreign_prepare(int project_fd, int upper_fd, int run_fd, size_t index, int cache_dirfd, const char *cache_name,
                        nsr_foreign_stats *ret_stats, nsr_error *err);

typedef struct nsr_foreign nsr_foreign;
/* The record of project index, or NULL (*ret) when there is none. */
int nsr_foreign_load(int run_fd, size_t index, nsr_foreign **ret, nsr_error *err);
nsr_foreign *nsr_foreign_free(nsr_foreign *f);
DEFINE_CLEANUP_FUNC(nsr_foreign *, nsr_foreign_free)
/* For nsr_capture_opts.prior: the copy as nsrun made it, or NULL. */
const nsr_capture_prior *nsr_foreign_prior(void *userdata, const char *rel);
/* Marks the modified files that were copied as in_place. */
void nsr_foreign_mark(const nsr_foreign *f, nsr_changeset *cs);
/* What the user's own write would have done to a new entry in a setgid
 * dir of the host: it takes the dir's group (the upper dirs nsrun made
 * are the user's, so inside it got the user's). Sets the group of each
 * created entry in upper (best effort: only a group the user is in can
 * be given) and in the change set. */
void nsr_foreign_inherit_groups(int project_fd, int upper_fd, nsr_changeset *cs);
