/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A bounded, non-blocking queue of messages (bytes and fds) for a unix
 * socket of SOCK_SEQPACKET or SOCK_DGRAM kind: what a server sends to a
 * peer that may stop reading. A message goes out at once when the socket
 * has room; otherwise it waits, a copy of its bytes and a duplicate of its
 * fds, until nsr_msgq_flush finds room (call it when the socket is
 * writable: arm POLLOUT while nsr_msgq_pending). A queue that is full, or
 * a socket that fails, ends the queue: the caller drops the peer. Nothing
 * ever blocks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "base/sockmsg.h"

typedef struct nsr_msgq_msg {
        char *data;
        size_t len;
        int fds[NSR_SOCKMSG_FDS_MAX];
        size_t n_fds;
} nsr_msgq_msg;

typedef struct nsr_msgq {
        int sock; /* borrowed */
        nsr_msgq_msg *msgs;
        size_t head, n, max;
        int error; /* what ended the queue (ENOBUFS: it was full), or 0 */
} nsr_msgq;

/* max: how many messages may wait (0: 64). */
void nsr_msgq_init(nsr_msgq *q, int sock, size_t max);
/* Frees what waits and closes its fds (not the socket). */
void nsr_msgq_done(nsr_msgq *q);

/* Sends one message or queues it. 0, or -errno once the queue has ended
 * (this message was not sent, and nothing will be). */
int nsr_msgq_send(nsr_msgq *q, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds);
/* Sends what waits, as far as the socket takes it. 0 or the -errno that
 * ended the queue. */
int nsr_msgq_flush(nsr_msgq *q);
bool nsr_msgq_pending(const nsr_msgq *q);
