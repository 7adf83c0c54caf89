/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The decision on a connect() the sandbox made (direct.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "egress/direct.h"

#define NAMES_MAX 16

const char *nsr_direct_action_to_string(nsr_direct_action a) {
        switch (a) {
        case NSR_DIRECT_CONTINUE:
                return "continue";
        case NSR_DIRECT_HOST:
                return "host";
        case NSR_DIRECT_REFUSE:
                return "refuse";
        case _NSR_DIRECT_ACTION_MAX:
        case _NSR_DIRECT_ACTION_INVALID:
                break;
        }
        return NULL;
}

static void refuse(nsr_direct_verdict *v, int errnum, const char *reason) {
        v->action = NSR_DIRECT_REFUSE;
        v->errnum = errnum;
        v->record = true;
        v->reason = reason;
}

/* sa as the address it reaches: a v4-mapped v6 address is its v4
 * address, since a dual-stack socket connects there over IPv4. */
static void unmap(const struct sockaddr_storage *in, struct sockaddr_storage *out) {
        *out = *in;
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *) in;
        if (in->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
                return;
        struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = s6->sin6_port };
        memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
        memset(out, 0, sizeof(*out));
        memcpy(out, &s4, sizeof(s4));
}

static int port_of(const struct sockaddr_storage *sa) {
        if (sa->ss_family == AF_INET)
                return ntohs(((const struct sockaddr_in *) sa)->sin_port);
        return ntohs(((const struct sockaddr_in6 *) sa)->sin6_port);
}

static void addr_text(const struct sockaddr_storage *sa, char *buf, size_t len) {
        const void *src = sa->ss_family == AF_INET ? (const void *) &((const struct sockaddr_in *) sa)->sin_addr
                                                   : (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (!inet_ntop(sa->ss_family, src, buf, (socklen_t) len))
                snprintf(buf, len, "?");
}

static bool same_endpoint(const struct sockaddr_storage *a, const struct sockaddr *b) {
        if (!b || a->ss_family != b->sa_family)
                return false;
        if (a->ss_family == AF_INET) {
                const struct sockaddr_in *x = (const struct sockaddr_in *) a, *y = (const struct sockaddr_in *) b;
                return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
        }
        const struct sockaddr_in6 *x = (const struct sockaddr_in6 *) a, *y = (const struct sockaddr_in6 *) b;
        return x->sin6_port == y->sin6_port && memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

/* Does a literal pattern (the address itself, or "localhost" for a
 * loopback address) allow sa:port? Only a pattern that names the
 * address lets a loopback, private or host-own address through. */
static bool literal_allowed(const nsr_direct_ctx *c, const struct sockaddr_storage *sa, const char *text, int port) {
        nsr_egress_verdict v;
        nsr_addr_class cls;
        nsr_egress_check_name(c->rules, text, port, &v);
        if (v.allowed && v.matched->kind == NSR_EGRESS_ADDR &&
            nsr_egress_addr_allowed_own(v.matched, (const struct sockaddr *) sa, c->own, &cls))
                return true;
        if (nsr_egress_classify((const struct sockaddr *) sa) != NSR_ADDR_LOOPBACK)
                return false;
        nsr_egress_check_name(c->rules, "localhost", port, &v);
        return v.allowed && nsr_egress_addr_allowed(v.matched, (const struct sockaddr *) sa, &cls);
}

/* A TCP connect to sa: allowed by a name that resolved to it, or by a
 * literal pattern; else refused with the most telling reason. */
static void judge_stream(const nsr_direct_ctx *c, const struct sockaddr_storage *sa, nsr_direct_verdict *v) {
        bool loopback = nsr_egress_classify((const struct sockaddr *) sa) == NSR_ADDR_LOOPBACK;
        if (literal_allowed(c, sa, v->address, v->port)) {
                v->action = NSR_DIRECT_HOST;
                v->record = true;
                return;
        }
        /* The sandbox's own loopback: its own servers, as without nsrun. */
        if (loopback) {
                v->action = NSR_DIRECT_CONTINUE;
                return;
        }
        const char *names[NAMES_MAX];
        size_t n = c->map ? nsr_dnsmap_names(c->map, (const struct sockaddr *) sa, names, NAMES_MAX) : 0;
        const char *reason = n ? "host not in --allow-host" : "no allowed name resolved to this address";
        for (size_t i = 0; i < n; i++) {
                nsr_egress_verdict ev;
                nsr_addr_class cls;
                nsr_egress_check_name(c->rules, names[i], v->port, &ev);
                if (i == 0 || ev.allowed)
                        snprintf(v->host, sizeof(v->host), "%s", names[i]);
                if (!ev.allowed) {
                        if (i == 0)
                                reason = ev.reason;
                        continue;
                }
                if (nsr_egress_addr_allowed_own(ev.matched, (const struct sockaddr *) sa, c->own, &cls)) {
                        v->action = NSR_DIRECT_HOST;
                        v->record = true;
                        return;
                }
                reason = "address not allowed for this name";
        }
        nsr_addr_class cls = nsr_egress_classify((const struct sockaddr *) sa);
        bool unroutable = cls == NSR_ADDR_MULTICAST || cls == NSR_ADDR_UNSPECIFIED || cls == NSR_ADDR_RESERVED;
        refuse(v, unroutable ? ENETUNREACH : ECONNREFUSED, reason);
}

void nsr_direct_judge(const nsr_direct_ctx *c, const nsr_direct_query *q, nsr_direct_verdict *ret) {
        *ret = (nsr_direct_verdict){ .action = NSR_DIRECT_CONTINUE };
        nsr_direct_verdict *v = ret;
        /* A socket nsrun put in place (of the host's namespace): never
         * the sandbox's own call. Connected: the kernel's answer. */
        if (!q->sandbox_ns) {
                v->action = NSR_DIRECT_REFUSE;
                v->errnum = q->connected ? EISCONN : ECONNREFUSED;
                v->record = !q->connected;
                v->reason = "connect on a socket nsrun put in place";
                snprintf(v->host, sizeof(v->host), "?");
                return;
        }
        if (q->domain == AF_UNIX || q->domain == AF_NETLINK)
                return;
        if (q->domain != AF_INET && q->domain != AF_INET6) {
                refuse(v, ENETUNREACH, "address family not carried");
                snprintf(v->host, sizeof(v->host), "family %d", q->domain);
                return;
        }
        /* A disconnect, a short or foreign address, a socket in use: the
         * kernel answers inside the sandbox's namespace. */
        sa_family_t fam = q->addr.ss_family;
        socklen_t need = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        if ((fam != AF_INET && fam != AF_INET6) || q->addr_len < need || q->listening || q->connected)
                return;
        struct sockaddr_storage sa;
        unmap(&q->addr, &sa);
        v->port = port_of(&sa);
        addr_text(&sa, v->address, sizeof(v->address));
        snprintf(v->host, sizeof(v->host), "%s", v->address);
        v->target = q->addr;
        v->target_len = q->addr_len;
        bool loopback = nsr_egress_classify((const struct sockaddr *) &sa) == NSR_ADDR_LOOPBACK;
        /* nsrun's DNS answerer inside, over UDP or TCP. */
        if ((q->type == SOCK_STREAM || q->type == SOCK_DGRAM) && same_endpoint(&sa, c->dns))
                return;
        if (q->type == SOCK_STREAM) {
                judge_stream(c, &sa, v);
                return;
        }
        /* UDP and the rest: nothing leaves. The sandbox's own loopback
         * keeps working, unless a pattern names the address (the user
         * meant the host's service: say it is not carried). */
        if (loopback && !literal_allowed(c, &sa, v->address, v->port))
                return;
        refuse(v, loopback ? ECONNREFUSED : ENETUNREACH,
               q->type == SOCK_DGRAM ? "UDP is carried only to the DNS answerer" : "only TCP is carried");
}
