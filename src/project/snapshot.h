/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshots: what a project was before a command that writes to it live.
 *
 * Best-effort mode (no user namespace, so no overlay) and --no-overlay
 * (overlay impossible here) let the command write to the project itself.
 * Nothing is lost all the same: before the run, nsrun copies the project
 * into the run's backup dir (RUN/backup/pN), sharing the data through
 * reflinks (ioctl FICLONE) where the file system can, and after the run it
 * compares the live project with that copy (capture.h, NSR_CAPTURE_TREES)
 * to build the usual change set. The copy then is the run's backup: what
 * the command replaced or deleted can be restored from it, by "nsrun undo"
 * (commit.h, nsr_commit_record_live) or right away for protected paths.
 *
 * Costs, all before the command starts:
 *   - a scan of the whole project (one lstat per entry, O(entries)), to
 *     know its size before copying anything;
 *   - the copy: O(entries) with reflinks, O(bytes) without them. Bytes
 *     that must really be copied are capped by the snapshot limit
 *     (--snapshot-limit, default 1 GiB); a project over it is refused
 *     before anything is copied when reflinks do not work, and during the
 *     copy when only some files could share their data;
 *   - memory for an index of every entry (about 56 bytes each): the
 *     device, inode and ctime it had, so that the comparison after the
 *     run skips, without reading it, every file whose ctime did not move.
 *
 * The walk never follows a symlink, stays below the project's fd, and is
 * bounded (NSR_SNAPSHOT_MAX_DEPTH, max_entries). Hard links are copied as
 * separate files. A file that changes while it is copied (a host edit) is
 * copied again, up to three times. Device nodes are copied only by root. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "cli/plan.h" /* NSR_SNAPSHOT_LIMIT_DEFAULT */
#include "project/capture.h"

#define NSR_SNAPSHOT_MAX_ENTRIES_DEFAULT ((size_t) 4 * 1000 * 1000)
#define NSR_SNAPSHOT_MAX_DEPTH           256u

enum {
        NSR_SNAPSHOT_NO_REFLINK = 1u << 0, /* always copy the bytes (tests, benchmarks) */
};

typedef struct nsr_snapshot_opts {
        uint64_t limit;     /* bytes that may be copied; 0: NSR_SNAPSHOT_LIMIT_DEFAULT */
        size_t max_entries; /* 0: NSR_SNAPSHOT_MAX_ENTRIES_DEFAULT */
        unsigned flags;     /* NSR_SNAPSHOT_* */
} nsr_snapshot_opts;

typedef struct nsr_snapshot_stats {
        uint64_t entries; /* below the project root */
        uint64_t bytes;   /* in its regular files */
        uint64_t cloned;  /* bytes shared through reflinks */
        uint64_t copied;  /* bytes copied */
        bool reflink;     /* the file system shares data (FICLONE worked) */
} nsr_snapshot_stats;

typedef struct nsr_snapshot nsr_snapshot;

nsr_snapshot *nsr_snapshot_free(nsr_snapshot *s);
DEFINE_CLEANUP_FUNC(nsr_snapshot *, nsr_snapshot_free)

/* Copies the project (project_fd, any dir fd) to dstname below dstdir,
 * which must not exist yet, and indexes it. Fails with -EFBIG (the message
 * names the sizes and --snapshot-limit) when more than the limit would be
 * copied; -E2BIG beyond max_entries; -ELOOP beyond NSR_SNAPSHOT_MAX_DEPTH.
 * On failure the partial copy is removed. */
int nsr_snapshot_take(int project_fd, int dstdir, const char *dstname, const nsr_snapshot_opts *o, nsr_snapshot **ret,
                      nsr_error *err);

const nsr_snapshot_stats *nsr_snapshot_stats_of(const nsr_snapshot *s);

/* The capture.h prior callback: userdata is the snapshot. */
const nsr_capture_prior *nsr_snapshot_prior(void *userdata, const char *rel);

/* The change set from the snapshot (opened at snap_fd) to the live
 * project: nsr_capture_scan() in trees mode with the snapshot's index. */
int nsr_snapshot_compare(const nsr_snapshot *s, int snap_fd, int project_fd, nsr_changeset **ret, nsr_error *err);
