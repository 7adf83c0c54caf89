/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Transparent egress, carried out (issue 27 items 2-4): a connect() the
 * command makes stops in the kernel (seccomp/connect.h) and nsrun
 * answers it, by the decision of egress/direct.h.
 *
 * Two processes share the work, because a Landlocked process may not
 * reach into another's memory or fds (Landlock refuses ptrace access to
 * any task outside its own domain, and pidfd_getfd and process_vm_readv
 * are ptrace access):
 *   - the monitor receives the notification (it holds the listener, as
 *     for the refused-call record), reads the call's arguments and the
 *     address (process_vm_readv, at most 128 bytes), takes a duplicate of
 *     the socket (pidfd_getfd), checks the notification is still live,
 *     lets a unix or netlink socket's call go on when the caller is one
 *     thread (else makes it itself on the socket it saw: another thread
 *     could swap the fd number under a call that goes on), and passes
 *     the rest to
 *     the egress helper as one fixed-size message with the socket
 *     attached. It parses nothing of the sandbox's beyond that.
 *   - the egress helper, which holds the listener too, reads the
 *     socket's kind and state itself, judges, and answers: it makes the
 *     sandbox's own call on the sandbox's socket (never lets the call go
 *     on for an IP socket: the kernel would read the fd number and the
 *     address again), or fails it at once, or the helper
 *     connects a socket of its own from the host, copies the file status
 *     flags and socket options the program set, and once it is connected
 *     puts it in place of the sandbox's (SECCOMP_IOCTL_NOTIF_ADDFD,
 *     SECCOMP_ADDFD_FLAG_SETFD: the same fd number, close-on-exec as the
 *     original had it). Its event loop never blocks on a connect.
 *
 * Only a connected socket is ever handed in: a half-open one could be
 * shut down, which leaves an unconnected host socket that bind() and
 * listen() would open on the host. So a non-blocking connect returns
 * once the host's connection is made (one round trip), with EINPROGRESS
 * as the program expects; poll then finds it writable and SO_ERROR is 0.
 * A blocking one returns 0 or the connect's error.
 *
 * The options copied: TCP_NODELAY, SO_KEEPALIVE, TCP_KEEPIDLE,
 * TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT, SO_LINGER, SO_RCVBUF and
 * SO_SNDBUF (when they differ from a fresh socket's), IP_TOS,
 * IPV6_TCLASS, IPV6_V6ONLY, SO_PRIORITY; and O_NONBLOCK. A local address
 * the program bound first is not (it was an address of the sandbox). */
#pragma once

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"
#include "base/evloop.h"
#include "egress/direct.h"
#include "egress/rules.h"

/* Connects waiting for the host at once; past it, refused (ECONNREFUSED). */
#define NSR_DIRECT_PENDING_MAX 256

/* ---- the monitor's side ------------------------------------------------- */

/* Hands the listener fd to the helper (once). -errno. */
int nsr_direct_send_listener(int sock, int listener);

/* The connects passed on to the helper, by notification id. The monitor
 * holds the listener too, so the kernel never fails what the helper
 * took and did not answer: a helper that dies mid-answer would leave the
 * command in connect() for ever. nsr_direct_sent_fail answers each one
 * still pending with ECONNREFUSED (what a dead helper means for any
 * later connect too). The list drops the answered ones as it grows. */
typedef struct nsr_direct_sent {
        uint64_t *ids;
        size_t n, cap;
} nsr_direct_sent;
void nsr_direct_sent_fail(nsr_direct_sent *s, int listener);
void nsr_direct_sent_done(nsr_direct_sent *s);

/* Answers or passes on one connect notification (where: see
 * nsr_connect_is_connect); what it passes on goes into sent (may be
 * NULL). Never fails: what cannot be read is answered with its error, a
 * helper that is gone makes it ECONNREFUSED. */
void nsr_direct_forward(int listener, int sock, const struct seccomp_notif *req, int where, nsr_direct_sent *sent);

typedef struct nsr_refused nsr_refused;
/* Takes one notification from the listener and answers it: a connect
 * as above, a refused call through rf's record (refused.h; rf may be
 * NULL when the listener serves connects only). 1 when it passed a
 * connect on to the helper, 0 when it answered, -errno when the listener
 * is gone. */
int nsr_direct_handle(nsr_refused *rf, int listener, int sock, nsr_direct_sent *sent);

/* ---- the helper's side --------------------------------------------------- */

typedef struct nsr_direct nsr_direct;

/* In the monitor, before the helper forks: sock is the helper's end of
 * the socketpair the monitor forwards on (taken); rules are borrowed. */
int nsr_direct_new(const nsr_egress_rules *rules, int sock, nsr_direct **ret, nsr_error *err);
nsr_direct *nsr_direct_free(nsr_direct *d);
DEFINE_CLEANUP_FUNC(nsr_direct *, nsr_direct_free)
/* The fds the helper must keep for it. */
size_t nsr_direct_fds(const nsr_direct *d, int *fds, size_t max);
/* The names the sandbox resolved through nsrun, when there is such a
 * table (borrowed), and the DNS answerer's address. */
void nsr_direct_set_names(nsr_direct *d, const nsr_dnsmap *map, const struct sockaddr *dns);
/* Each record as it is made, to the relay's log and the live
 * --net-log-fd; without it, records are kept here and appended by
 * nsr_direct_finish. */
void nsr_direct_on_record(nsr_direct *d, void (*cb)(void *data, const nsr_egress_record *rec), void *data);
/* In the helper: serves on loop. */
int nsr_direct_attach(nsr_direct *d, nsr_evloop *loop);
/* Refuses what still waits, and appends the records to log. */
void nsr_direct_finish(nsr_direct *d, nsr_egress_log *log);
