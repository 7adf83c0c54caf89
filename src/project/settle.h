/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Settling a session's conflicts (docs/conflicts.md, "Settling"): the
 * record of the paths still in conflict and the run that found each, the
 * record of the paths settled for the host, and the refresh that shows
 * the session the host's file. All of it reads the session's upper dir,
 * which the sandbox wrote, beneath its root with no symlink. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "txn/changeset.h"

/* RUN/session-conflicts-pN: the paths that conflicted and are not settled,
 * and the run (a session commit) that found each. */
typedef struct nsr_settle_open {
        char **paths;
        char **since; /* "" when the record predates it */
} nsr_settle_open;

void nsr_settle_open_done(nsr_settle_open *o);
/* Never fails: a missing or unreadable record is an empty one. */
void nsr_settle_open_read(int srun_fd, size_t i, nsr_settle_open *ret);
/* Replaces the record as a whole (durably). */
int nsr_settle_open_write(int srun_fd, size_t i, const nsr_settle_open *o);
void nsr_settle_open_add(nsr_settle_open *o, const char *path, const char *since);
/* Drops path and what is below it; true if anything was dropped. */
bool nsr_settle_open_remove(nsr_settle_open *o, const char *path);
/* The entry path is at or below, or NULL. */
const char *nsr_settle_open_find(const nsr_settle_open *o, const char *path, const char **ret_since);

/* --on-conflict=prefer-host in a session: make the session's upper entry
 * at path show the host's file, in place (the overlay keeps the upper
 * inode it looked up; only writing into that inode reaches a session that
 * has the path cached). Both must be regular files and the upper one have
 * no other link; -EOPNOTSUPP otherwise. */
int nsr_settle_refresh(int upper_fd, int project_fd, const char *path);

/* RUN/session-settled-pN: paths settled for the host, with the identity
 * their upper entry had then. A change at such a path is dropped from cs
 * while the entry is as recorded (the sandbox did not write it again);
 * records that no longer match are forgotten. */
int nsr_settle_drop_settled(int srun_fd, size_t i, int upper_fd, nsr_changeset *cs);
/* Records paths (with their upper entries as they are now). */
int nsr_settle_record(int srun_fd, size_t i, int upper_fd, char *const *paths);
