/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One event loop: the monitor, the egress relay and the refused-call
 * listener register their fds with it, each with the events it wants, a
 * callback and its data; nothing else waits in the monitor.
 *
 * Sources are the loop's: nsr_evloop_del() only marks a source dead and
 * takes it out of the epoll set, and the loop frees it after the batch of
 * events it was in, so a callback may delete any source (its own, or one
 * a later event of the batch names) and that source's callback is never
 * called again. Post hooks run after every batch: a relay frees the
 * connections it closed, a queue arms its POLLOUT.
 *
 * There are no slots: as many sources as the process has fds. An fd that
 * epoll refuses (a regular file: always ready) is dispatched on every
 * round while it asks for events; an fd number already registered (the
 * caller passed one fd as --events-fd and --net-log-fd) is registered
 * through a duplicate the loop owns. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"

typedef struct nsr_evloop nsr_evloop;
typedef struct nsr_evsrc nsr_evsrc;

/* events are EPOLLIN, EPOLLOUT...; revents as epoll_wait(2) reports them. */
typedef void (*nsr_evloop_cb)(nsr_evsrc *s, int fd, uint32_t revents, void *data);
typedef void (*nsr_evloop_post)(void *data);

int nsr_evloop_new(nsr_evloop **ret);
/* Frees every source; closes none of the caller's fds. */
nsr_evloop *nsr_evloop_free(nsr_evloop *l);
DEFINE_CLEANUP_FUNC(nsr_evloop *, nsr_evloop_free)

/* Registers fd (borrowed: the caller closes it, after deleting the
 * source). events may be 0: silent until modified, not even a hangup or
 * an error is reported (the source stays out of the epoll set, which
 * would report those whatever is asked). Returns -errno. */
int nsr_evloop_add(nsr_evloop *l, int fd, uint32_t events, nsr_evloop_cb cb, void *data, nsr_evsrc **ret);
int nsr_evloop_mod(nsr_evsrc *s, uint32_t events);
/* NULL is a no-op. Returns NULL, for s = nsr_evloop_del(s). */
nsr_evsrc *nsr_evloop_del(nsr_evsrc *s);
uint32_t nsr_evloop_events(const nsr_evsrc *s);

/* cb(data) after every batch, in the order added. */
int nsr_evloop_add_post(nsr_evloop *l, nsr_evloop_post cb, void *data);
void nsr_evloop_del_post(nsr_evloop *l, nsr_evloop_post cb, void *data);

/* Waits up to timeout_ms (-1: no limit) and dispatches one batch, then
 * the post hooks. Returns the number of callbacks called, or -errno
 * (EINTR is 0). */
int nsr_evloop_run_once(nsr_evloop *l, int timeout_ms);
/* Rounds until nsr_evloop_stop(); returns 0, or -errno of a failed wait. */
int nsr_evloop_run(nsr_evloop *l);
void nsr_evloop_stop(nsr_evloop *l);
bool nsr_evloop_stopped(const nsr_evloop *l);
