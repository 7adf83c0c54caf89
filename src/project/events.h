/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --events-fd: live change events while the command runs.
 *
 * A watcher process follows each project's overlay upper dir with inotify
 * (a watch on every dir, added as dirs appear, each new dir rescanned to
 * close the race with entries made before the watch) and writes one JSON
 * line per event:
 *   {"event":"create|modify|delete|rename","project":"/p","path":"rel"}
 * ("from" is added for a rename). Every change is reported; changes of
 * one path within 100 ms of its last event are coalesced into one modify
 * sent when the window closes. An inotify queue overflow gives
 * {"event":"overflow"}.
 *
 * Why the upper dir: every write through the overlay lands there, while a
 * watch on the project (the lower dir) sees nothing. A whiteout appearing
 * is a deletion; an entry appearing that the project already has is a
 * modification (overlay's copy-up). With --no-overlay and in best-effort
 * mode the command writes to the project itself: the watches are on the
 * project, and the snapshot taken before the run tells what is new.
 * fanotify would add nothing here: on an
 * unprivileged caller it only offers inode marks, the same granularity as
 * inotify. Writes through mmap are not seen by either; the capture after
 * the run still finds them. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct nsr_events_project {
        const char *path;  /* the project, as reported */
        const char *upper; /* its upper dir on the host; with writes made live, the project itself */
        const char *lower; /* what an entry is compared with to tell a creation from a
                               * modification: NULL for the project (overlay), or the
                               * snapshot taken before the run (live writes) */
} nsr_events_project;

/* Starts the watcher. It runs until nsr_events_stop(). Returns its pid. */
int nsr_events_start(int out_fd, const nsr_events_project *projects, size_t n, pid_t *ret_pid, int *ret_stop_fd,
                     nsr_error *err);
/* Tells the watcher to drain what is queued and exit, and waits for it
 * (bounded: its writes never block). Returns how many lines its reader
 * did not take (dropped). */
uint64_t nsr_events_stop(pid_t pid, int stop_fd);
