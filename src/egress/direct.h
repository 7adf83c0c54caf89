/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Transparent egress: how nsrun answers a connect() the sandbox made,
 * which the command's seccomp listener stops in the kernel (issue 27).
 * Pure: the caller reads the socket and the address, this decides, and
 * the egress helper carries the decision out (sandbox/direct.h).
 *
 * The answers:
 *   CONTINUE  the call is made as the sandbox made it, in its own
 *             network namespace, where nothing but its loopback can be
 *             reached (for an IP socket the helper makes it, on the socket
 *             nsrun saw, with the address it read: sandbox/direct.h).
 *             Only for a socket of that namespace: a unix or netlink
 *             socket, a loopback address no pattern names, the DNS
 *             answerer, a disconnect (AF_UNSPEC), a socket already
 *             connected or listening (the kernel says why not).
 *   HOST      nsrun connects a TCP socket of its own from the host to the
 *             address it read, and puts it in place of the sandbox's once
 *             it is connected. Only for a TCP stream socket of the
 *             sandbox's namespace, not connected and not listening, to an
 *             address a name the sandbox resolved through nsrun (dnsmap)
 *             or a literal address pattern allows.
 *   REFUSE    the call fails with errnum at once (ECONNREFUSED, or
 *             ENETUNREACH for what no route could carry) and is recorded.
 *
 * A socket that is not of the sandbox's namespace is one nsrun put in
 * place: it is never let through (a disconnect would leave a host socket
 * the sandbox could bind and listen with). */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

#include "egress/dnsmap.h"
#include "egress/rules.h"

typedef enum nsr_direct_action {
        NSR_DIRECT_CONTINUE,
        NSR_DIRECT_HOST,
        NSR_DIRECT_REFUSE,
        _NSR_DIRECT_ACTION_MAX,
        _NSR_DIRECT_ACTION_INVALID = -EINVAL,
} nsr_direct_action;

/* What the caller read of the socket and the call. */
typedef struct nsr_direct_query {
        int domain;                   /* SO_DOMAIN of the socket */
        int type;                     /* SO_TYPE */
        bool sandbox_ns;              /* the socket is of the sandbox's network namespace */
        bool listening;               /* SO_ACCEPTCONN */
        bool connected;               /* getpeername succeeds */
        struct sockaddr_storage addr; /* the address, as read once */
        socklen_t addr_len;
} nsr_direct_query;

typedef struct nsr_direct_ctx {
        const nsr_egress_rules *rules;
        const nsr_dnsmap *map;      /* or NULL: literal rules only */
        const nsr_egress_own *own;  /* the host's own addresses, or NULL */
        const struct sockaddr *dns; /* the DNS answerer inside (UDP), or NULL */
} nsr_direct_ctx;

typedef struct nsr_direct_verdict {
        nsr_direct_action action;
        int errnum;                         /* REFUSE: the positive errno the call gets */
        bool record;                        /* HOST and REFUSE of a judged call are recorded */
        char host[NSR_EGRESS_HOST_MAX + 1]; /* the name judged by, or the address */
        char address[64];                   /* the address, as text */
        int port;
        const char *reason;             /* REFUSE: static text */
        struct sockaddr_storage target; /* HOST: where to connect (v4-mapped made v4 for judging only) */
        socklen_t target_len;
} nsr_direct_verdict;

void nsr_direct_judge(const nsr_direct_ctx *c, const nsr_direct_query *q, nsr_direct_verdict *ret);
const char *nsr_direct_action_to_string(nsr_direct_action a);
