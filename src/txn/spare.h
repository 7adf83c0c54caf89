/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run dir made ahead of time: the last run's background process leaves
 * STATE/run.spare (p0 with empty upper and work dirs, an empty trash, and
 * the durable writers' empty spares, base/durable.h), and the next run with
 * one project takes it by one rename instead of creating four dirs on its
 * path, and writes its first files (p0/root, meta, report.json) as
 * renames of the spares (on ext4 each new inode costs tens of microseconds,
 * and on a file system without a journal up to 0.5 ms; issue 28).
 *
 * Trust: the state dir is the user's own (0700) and hidden from every
 * sandbox, so only the user's own processes can reach the spare, as they
 * can reach any run. Still, a spare is taken only when it is exactly what
 * this code makes: dirs of ours, not writable by group or others, holding
 * the expected names and nothing else (the spares are optional, each an
 * empty regular file of ours with one link); anything else is removed and
 * the run makes its dirs as before. The spares a run does not take are
 * removed by its background process, which builds the next spare from
 * the last run's emptied layers where it can (nsr_run_make_spare). */
#pragma once

#include <stddef.h>

#define NSR_RUN_SPARE "run.spare"

/* Moves STATE/run.spare to STATE/rel (runs/ID) when the run has one project
 * and the spare is whole; returns the run dir's O_PATH fd, or -errno (no
 * spare, or one that was not taken: the caller creates the dir itself). */
int nsr_run_take_spare(int statefd, const char *rel, size_t n_projects);

/* Makes STATE/run.spare when there is none: built under a temporary name
 * and renamed into place, so a spare is whole or absent. Best effort, for
 * a background process. It reuses what the last run left in old_fd/trash
 * (that run's dir, or -1) where it is exactly what this would make: its
 * emptied upper and work dirs and the trash dir. The sandbox's mounts must be gone (the upper dir then serves the
 * next run's overlay). What is not reused stays in old_fd/trash. */
void nsr_run_make_spare(int statefd, int old_fd);

/* Removes from run_fd/trash, at once, what nsr_run_make_spare could not
 * reuse (a changed run's upper dir, snapshots): their space is free before
 * the sandbox's mounts are gone, as a state dir that filled up needs. */
void nsr_run_trash_trim(int run_fd);

/* Removes the spare (and what a killed maker left): space for a full
 * state dir. */
void nsr_run_drop_spare(int statefd);
