/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A bounded, non-blocking queue of lines for an fd the caller gave nsrun
 * to write to (--net-log-fd, --events-fd): a reader that stops reading
 * must never stall the monitor, its --timeout or its signals. Lines wait
 * in a buffer of fixed size and go out as the fd takes them; a line that
 * does not fit is dropped and counted, and the stream says so with a
 * note line (note_fmt, then the count and "}") as soon as there is room
 * again. Each
 * line is written with one write(2): on a pipe a line up to PIPE_BUF is
 * never split, so another writer's lines (the events watcher's) do not
 * interleave with it.
 *
 * The fd's open file description is the caller's, shared with other
 * processes, so its flags are left alone: sockets are written with
 * MSG_DONTWAIT, anything else only after poll(2) says it is writable and
 * at most PIPE_BUF bytes at a time beyond that. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/evloop.h"

#define NSR_OUTQ_DEFAULT_CAP (256 * 1024)
/* The note of the --events-fd stream. */
#define NSR_OUTQ_EVENTS_NOTE "{\"event\":\"dropped\",\"count\":"
/* How long the end of a run waits for a reader to take the last lines. */
#define NSR_OUTQ_FINISH_MS 1000

typedef struct nsr_outq {
        int fd; /* -1: nothing to write to */
        bool sock, dead;
        int error; /* the errno that ended it (EPIPE: the reader went away), or 0 */
        char *buf;
        size_t off, len, cap;
        size_t *ends; /* where each queued line ends, relative to off */
        size_t n_ends, cap_ends;
        const char *note_fmt;
        uint64_t unnoted; /* dropped, not yet noted in the stream */
        uint64_t dropped; /* dropped, in all */
        nsr_evsrc *src;   /* nsr_outq_watch's source, or NULL */
} nsr_outq;

/* fd is borrowed. cap 0: NSR_OUTQ_DEFAULT_CAP. note_fmt, the note line
 * up to its count (e.g. NSR_OUTQ_EVENTS_NOTE), must outlive the queue. */
void nsr_outq_init(nsr_outq *q, int fd, size_t cap, const char *note_fmt);
void nsr_outq_done(nsr_outq *q);

/* Queues one line (its newline included) and writes what the fd takes. */
void nsr_outq_put(nsr_outq *q, const char *line, size_t len);
/* Writes what the fd takes now. */
void nsr_outq_flush(nsr_outq *q);
/* Whether lines are waiting: wait for the fd's POLLOUT then (in the
 * monitor, a source of its event loop armed after each batch). */
bool nsr_outq_pending(const nsr_outq *q);
/* Writes as the fd takes lines, from loop: the fd is a source that asks
 * for POLLOUT only while lines wait (armed after each batch). The queue
 * must outlive the loop. -errno: the queue still writes on each put. */
int nsr_outq_watch(nsr_outq *q, nsr_evloop *loop);
/* At the end: waits up to timeout_ms in all for the fd to take what is
 * queued, then drops (and counts) the rest. */
void nsr_outq_finish(nsr_outq *q, int timeout_ms);
