/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The resolver pool: resolves names off the event loop and hands the
 * answers back to it. The relay uses it for the targets clients name; a
 * DNS answerer can use it the same way.
 *
 * getaddrinfo() blocks, so it runs on a few detached threads. The pool is
 * reference counted: the relay holds one reference and every thread one,
 * so a thread still stuck in a slow lookup when the run ends frees what
 * is left when it returns, and the relay never waits for DNS.
 *
 * In the loop: register nsr_resolver_fd() for reading; when it is
 * readable, nsr_resolver_take_done() gives every answered request (a list
 * through next). A request whose asker went away meanwhile is marked by
 * its asker (data = NULL) and only freed when its answer comes. */
#pragma once

#include <netdb.h>

#include "egress/rules.h"

typedef struct nsr_resolve_req {
        struct nsr_resolve_req *next;
        char host[NSR_EGRESS_HOST_MAX + 1];
        int gai;              /* getaddrinfo()'s result */
        struct addrinfo *res; /* its addresses, freed with the request */
        void *data;           /* the asker's; NULL once it is gone (loop thread only) */
} nsr_resolve_req;

typedef struct nsr_resolver nsr_resolver;

/* NULL when no eventfd can be made. delay_ms: a test hook, a slow resolver
 * (0: none). */
nsr_resolver *nsr_resolver_new(int delay_ms);
/* Readable when answers wait: the loop's source. */
int nsr_resolver_fd(const nsr_resolver *p);
/* Queues q (the pool owns it until it is answered); -EAGAIN when no thread
 * could start, and q stays queued, freed with the pool. */
int nsr_resolver_submit(nsr_resolver *p, nsr_resolve_req *q);
/* The answered requests, or NULL; each is the caller's to free. */
nsr_resolve_req *nsr_resolver_take_done(nsr_resolver *p);
/* Stops the pool; a thread in a lookup frees what is left when it returns.
 * Accepts NULL. */
void nsr_resolver_release(nsr_resolver *p);
void nsr_resolve_req_free(nsr_resolve_req *q);
