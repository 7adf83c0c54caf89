/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/sockmsg.h"
#include "base/util.h"
#include "egress/dns.h"
#include "egress/dnsparse.h"
#include "egress/relay.h"
#include "egress/resolver.h"

#define UDP_BATCH         64 /* datagrams read per wakeup: the loop's other sources get their turn */
#define RESOLVE_TIMEOUT_S 30 /* as the relay's: a lookup that takes longer gets SERVFAIL */

typedef struct tcpconn tcpconn;

/* A query being resolved. */
typedef struct pending {
        struct pending *prev, *next;
        nsr_dns_query q;
        tcpconn *tc;                  /* TCP: its connection, NULL once gone */
        struct sockaddr_storage peer; /* UDP: whom to answer */
        socklen_t peer_len;
        char name[NSR_EGRESS_HOST_MAX + 1]; /* normalised: what the table keeps */
        nsr_egress_record rec;
        struct timespec mono_start;
        time_t deadline;            /* CLOCK_MONOTONIC seconds: SERVFAIL after */
        nsr_egress_pattern matched; /* the pattern that allowed the name */
        nsr_resolve_req *req;
} pending;

struct tcpconn {
        struct tcpconn *prev, *next;
        nsr_dns *d;
        int fd;
        nsr_evsrc *src;
        uint8_t in[2 + NSR_DNS_TCP_QUERY_MAX];
        size_t in_len;
        uint8_t *out;
        size_t out_off, out_len;
        size_t inflight;
        time_t deadline;
        bool dead;
};

struct nsr_dns {
        const nsr_egress_rules *rules;
        nsr_dnsmap *map;
        nsr_relay *relay; /* records go to its log */
        nsr_evloop *loop;
        int sock[2]; /* [0] helper, [1] child: the sockets come up it */
        int udp, tcp, timerfd;
        nsr_evsrc *s_control, *s_udp, *s_tcp, *s_timer, *s_resolved;
        nsr_resolver *resolver;
        int resolve_delay_ms; /* test hook: a slow resolver */
        pending *head;
        size_t inflight;
        tcpconn *conns; /* newest first */
        size_t n_conns;
        tcpconn *dead; /* closed in this batch: freed after it */
};

static time_t now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

static uint64_t ms_since(const struct timespec *t0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t ms = (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
        return ms < 0 ? 0 : (uint64_t) ms;
}

/* ---- TCP connections ----------------------------------------------------- */

static void on_tcp(nsr_evsrc *s, int fd, uint32_t ev, void *data);

static void tcp_close(nsr_dns *d, tcpconn *c) {
        if (c->dead)
                return;
        c->dead = true;
        for (pending *p = d->head; p; p = p->next)
                if (p->tc == c)
                        p->tc = NULL;
        c->src = nsr_evloop_del(c->src);
        c->fd = safe_close(c->fd);
        if (c->prev)
                c->prev->next = c->next;
        else
                d->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        d->n_conns--;
        c->next = d->dead;
        d->dead = c;
}

static void tcp_arm(nsr_dns *d, tcpconn *c) {
        uint32_t ev = EPOLLIN | (c->out_len ? EPOLLOUT : 0);
        if (nsr_evloop_mod(c->src, ev) < 0)
                tcp_close(d, c);
}

static void tcp_flush(nsr_dns *d, tcpconn *c) {
        while (c->out_len > 0) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        tcp_close(d, c);
                        return;
                }
                c->out_off += (size_t) n;
                c->out_len -= (size_t) n;
        }
        if (c->out_len == 0)
                c->out_off = 0;
        tcp_arm(d, c);
}

/* Queues one framed answer; a client that does not read loses its
 * connection rather than hold the helper's memory. */
static void tcp_send(nsr_dns *d, tcpconn *c, const uint8_t *msg, size_t len) {
        if (c->out_len + len + 2 > NSR_DNS_TCP_OUT_MAX) {
                tcp_close(d, c);
                return;
        }
        if (!c->out)
                c->out = nsr_malloc0(NSR_DNS_TCP_OUT_MAX);
        if (c->out_off + c->out_len + len + 2 > NSR_DNS_TCP_OUT_MAX) {
                memmove(c->out, c->out + c->out_off, c->out_len);
                c->out_off = 0;
        }
        uint8_t *o = c->out + c->out_off + c->out_len;
        o[0] = (uint8_t) (len >> 8);
        o[1] = (uint8_t) len;
        memcpy(o + 2, msg, len);
        c->out_len += len + 2;
        c->deadline = now_s() + NSR_DNS_TCP_IDLE_S;
        tcp_flush(d, c);
}

/* ---- answering ------------------------------------------------------------ */

static void record(nsr_dns *d, nsr_egress_record *rec, const struct timespec *t0) {
        rec->duration_ms = ms_since(t0);
        nsr_relay_record(d->relay, rec);
}

/* Sends the answer to whoever asked: a UDP peer or a TCP connection. */
static void reply(nsr_dns *d, const nsr_dns_query *q, tcpconn *tc, const struct sockaddr *peer, socklen_t peer_len,
                  int rcode, const nsr_dns_addr *addrs, size_t n) {
        uint8_t out[NSR_DNS_MSG_MAX];
        size_t room = tc ? sizeof(out) : q->udp_max;
        ssize_t len = nsr_dns_answer(q, rcode, addrs, n, NSR_DNS_TTL, out, room);
        if (len < 0)
                return;
        if (tc) {
                if (!tc->dead)
                        tcp_send(d, tc, out, (size_t) len);
                return;
        }
        /* A full socket buffer drops the answer: the client asks again. */
        (void) sendto(d->udp, out, (size_t) len, MSG_DONTWAIT | MSG_NOSIGNAL, peer, peer_len);
}

/* Is the name allowed for some port? Tries the ports the rules name
 * (80 and 443 for a pattern without one, and a port no --deny-host
 * names for ":*"): one allowed is enough. *ret_matched: the pattern that
 * allowed it, which the address rules take ("localhost" may have
 * loopback addresses). */
static bool name_allowed(const nsr_egress_rules *r, const char *name, char *why, size_t why_len,
                         nsr_egress_pattern *ret_matched) {
        int ports[NSR_EGRESS_RULES_MAX + 3];
        size_t n = 0;
        ports[n++] = 80;
        ports[n++] = 443;
        bool any = false;
        for (size_t i = 0; i < r->n_allow; i++) {
                if (r->allow[i].port > 0)
                        ports[n++] = r->allow[i].port;
                any |= r->allow[i].port == -1;
                if (n >= NSR_EGRESS_RULES_MAX + 1)
                        break;
        }
        if (any)
                for (int p = 1; p <= 65535; p++) {
                        bool named = false;
                        for (size_t i = 0; i < r->n_deny && !named; i++)
                                named = r->deny[i].port == p;
                        if (!named) {
                                ports[n++] = p;
                                break;
                        }
                }
        nsr_egress_verdict v = { 0 };
        char denied[sizeof(((nsr_egress_record *) NULL)->reason)] = "";
        for (size_t i = 0; i < n; i++) {
                bool seen = false;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = ports[k] == ports[i];
                if (seen)
                        continue;
                nsr_egress_check_name(r, name, ports[i], &v);
                if (v.allowed) {
                        *ret_matched = *v.matched;
                        return true;
                }
                if (v.denied)
                        snprintf(denied, sizeof(denied), "%s %s", v.reason, v.denied->text);
        }
        snprintf(why, why_len, "%s", denied[0] ? denied : "host not in --allow-host");
        return false;
}

static void set_address_text(nsr_egress_record *rec, const nsr_dns_addr *a) {
        if (!inet_ntop(a->family, a->addr, rec->address, sizeof(rec->address)))
                rec->address[0] = '\0';
}

/* A query parsed (or refused by the parser with rcode > 0): answers it
 * now, or starts resolving its name. */
static void query(nsr_dns *d, const uint8_t *msg, size_t len, tcpconn *tc, const struct sockaddr *peer,
                  socklen_t peer_len) {
        nsr_dns_query q;
        int k = nsr_dns_query_parse(msg, len, &q);
        if (k < 0) {
                nsr_relay_malformed(d->relay);
                return;
        }
        nsr_egress_record rec = { .port = 53, .proto = NSR_EGRESS_PROTO_DNS };
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_REALTIME, &rec.started);
        snprintf(rec.host, sizeof(rec.host), "%s", q.name);
        char type[16];
        nsr_dns_type_text(q.qtype, type, sizeof(type));
        int rcode = k;
        if (k > 0)
                snprintf(rec.reason, sizeof(rec.reason), "%s", q.why);
        else if (!q.plain) {
                rcode = NSR_DNS_NXDOMAIN;
                snprintf(rec.reason, sizeof(rec.reason), "not a host name");
        } else if (q.qtype == NSR_DNS_TYPE_ANY || q.qtype == NSR_DNS_TYPE_AXFR || q.qtype == NSR_DNS_TYPE_IXFR ||
                   q.qtype == NSR_DNS_TYPE_OPT) {
                rcode = NSR_DNS_NOTIMP;
                snprintf(rec.reason, sizeof(rec.reason), "query type %s not answered", type);
        }
        char norm[NSR_EGRESS_HOST_MAX + 1];
        bool is_addr = false;
        nsr_egress_pattern matched;
        if (rcode == 0 && (nsr_egress_host_normalize(q.name, norm, sizeof(norm), &is_addr) < 0 || is_addr)) {
                rcode = NSR_DNS_NXDOMAIN;
                snprintf(rec.reason, sizeof(rec.reason), "not a host name");
        }
        if (rcode == 0 && !name_allowed(d->rules, norm, rec.reason, sizeof(rec.reason), &matched))
                rcode = NSR_DNS_NXDOMAIN;
        size_t from_client = 0;
        for (pending *p = d->head; rcode == 0 && p; p = p->next)
                if (tc ? p->tc == tc : (p->peer_len == peer_len && memcmp(&p->peer, peer, (size_t) peer_len) == 0))
                        from_client++;
        if (rcode == 0 && (d->inflight >= NSR_DNS_INFLIGHT_MAX || from_client >= NSR_DNS_CLIENT_MAX)) {
                rcode = NSR_DNS_SERVFAIL;
                snprintf(rec.reason, sizeof(rec.reason), "too many queries at once");
        }
        if (rcode == 0 && q.qtype != NSR_DNS_TYPE_A && q.qtype != NSR_DNS_TYPE_AAAA) {
                /* An allowed name, another type (HTTPS, SVCB, MX, TXT...):
                 * NODATA, so the client goes on with A and AAAA. */
                rec.allowed = true;
                reply(d, &q, tc, peer, peer_len, NSR_DNS_NOERROR, NULL, 0);
                record(d, &rec, &t0);
                return;
        }
        if (rcode != 0) {
                reply(d, &q, tc, peer, peer_len, rcode, NULL, 0);
                record(d, &rec, &t0);
                return;
        }
        pending *p = nsr_malloc0(sizeof(*p));
        p->q = q;
        p->tc = tc;
        if (!tc && peer_len <= (socklen_t) sizeof(p->peer)) {
                memcpy(&p->peer, peer, (size_t) peer_len);
                p->peer_len = peer_len;
        }
        p->rec = rec;
        p->mono_start = t0;
        p->matched = matched;
        p->deadline = now_s() + RESOLVE_TIMEOUT_S;
        memcpy(p->name, norm, strlen(norm) + 1);
        nsr_resolve_req *rq = nsr_malloc0(sizeof(*rq));
        memcpy(rq->host, norm, strlen(norm) + 1);
        rq->data = p;
        if (nsr_resolver_submit(d->resolver, rq) < 0) {
                /* No thread could start: the request stays queued and goes
                 * with the pool. */
                rq->data = NULL;
                snprintf(p->rec.reason, sizeof(p->rec.reason), "cannot resolve: no resolver thread");
                reply(d, &q, tc, peer, peer_len, NSR_DNS_SERVFAIL, NULL, 0);
                record(d, &p->rec, &t0);
                free(p);
                return;
        }
        p->req = rq;
        p->next = d->head;
        if (d->head)
                d->head->prev = p;
        d->head = p;
        d->inflight++;
        if (tc)
                tc->inflight++;
}

/* The host's answer for p: the addresses the rules allow, as asked. */
static void answered(nsr_dns *d, pending *p, int gai, const struct addrinfo *res) {
        nsr_dns_addr addrs[NSR_DNS_ANSWERS_MAX];
        size_t n = 0;
        char first_bad[128] = "";
        const nsr_egress_own *own = nsr_relay_own(d->relay);
        for (const struct addrinfo *a = gai == 0 ? res : NULL; a && n < NSR_DNS_ANSWERS_MAX; a = a->ai_next) {
                if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
                    a->ai_addrlen > sizeof(struct sockaddr_storage))
                        continue;
                nsr_addr_class cls;
                nsr_dns_addr x = { .family = a->ai_family };
                if (a->ai_family == AF_INET)
                        memcpy(x.addr, &((const struct sockaddr_in *) (const void *) a->ai_addr)->sin_addr, 4);
                else
                        memcpy(x.addr, &((const struct sockaddr_in6 *) (const void *) a->ai_addr)->sin6_addr, 16);
                if (!nsr_egress_addr_allowed_own(&p->matched, a->ai_addr, own, &cls)) {
                        if (!first_bad[0]) {
                                char text[64];
                                if (!inet_ntop(x.family, x.addr, text, sizeof(text)))
                                        text[0] = '\0';
                                if (cls == NSR_ADDR_HOST)
                                        snprintf(first_bad, sizeof(first_bad),
                                                 "resolves to an address of this host (%s)", text);
                                else
                                        snprintf(first_bad, sizeof(first_bad), "resolves to a %s address (%s)",
                                                 nsr_addr_class_to_string(cls), text);
                        }
                        continue;
                }
                bool dup = false;
                for (size_t i = 0; i < n && !dup; i++)
                        dup = addrs[i].family == x.family && memcmp(addrs[i].addr, x.addr, 16) == 0;
                if (dup)
                        continue;
                addrs[n++] = x;
                (void) nsr_dnsmap_add(d->map, p->name, a->ai_addr);
        }
        int family = p->q.qtype == NSR_DNS_TYPE_A ? AF_INET : AF_INET6;
        const nsr_dns_addr *first = NULL;
        for (size_t i = 0; i < n && !first; i++)
                if (addrs[i].family == family)
                        first = &addrs[i];
        int rcode = NSR_DNS_NOERROR;
        if (n == 0) {
                /* Nothing the sandbox may reach: the name does not exist
                 * for it. */
                rcode = NSR_DNS_NXDOMAIN;
                if (gai != 0)
                        snprintf(p->rec.reason, sizeof(p->rec.reason), "cannot resolve: %s", gai_strerror(gai));
                else
                        snprintf(p->rec.reason, sizeof(p->rec.reason), "%s",
                                 first_bad[0] ? first_bad : "no usable address");
                /* Refused by the address rules, or allowed and failed. */
                p->rec.allowed = !first_bad[0];
        } else {
                p->rec.allowed = true;
                if (first)
                        set_address_text(&p->rec, first);
        }
        reply(d, &p->q, p->tc, (const struct sockaddr *) &p->peer, p->peer_len, rcode, addrs, n);
        record(d, &p->rec, &p->mono_start);
}

static void pending_drop(nsr_dns *d, pending *p) {
        if (p->prev)
                p->prev->next = p->next;
        else
                d->head = p->next;
        if (p->next)
                p->next->prev = p->prev;
        d->inflight--;
        if (p->tc && p->tc->inflight)
                p->tc->inflight--;
        free(p);
}

static void on_resolved(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        nsr_dns *d = data;
        (void) s;
        (void) fd;
        (void) ev;
        for (nsr_resolve_req *q = nsr_resolver_take_done(d->resolver), *n; q; q = n) {
                n = q->next;
                pending *p = q->data;
                if (p) {
                        answered(d, p, q->gai, q->res);
                        pending_drop(d, p);
                }
                nsr_resolve_req_free(q);
        }
}

/* ---- the sockets ---------------------------------------------------------- */

static void on_udp(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        nsr_dns *d = data;
        (void) s;
        (void) ev;
        uint8_t buf[NSR_DNS_MSG_MAX + 1];
        for (int i = 0; i < UDP_BATCH; i++) {
                struct sockaddr_storage peer;
                socklen_t pl = sizeof(peer);
                ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *) &peer, &pl);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return;
                if ((size_t) n > NSR_DNS_MSG_MAX || pl > (socklen_t) sizeof(peer)) {
                        nsr_relay_malformed(d->relay);
                        continue;
                }
                query(d, buf, (size_t) n, NULL, (struct sockaddr *) &peer, pl);
        }
}

static void tcp_read(nsr_dns *d, tcpconn *c) {
        for (;;) {
                ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        tcp_close(d, c);
                        return;
                }
                c->in_len += (size_t) n;
                c->deadline = now_s() + NSR_DNS_TCP_IDLE_S;
                const uint8_t *msg;
                size_t len, used, off = 0;
                int k;
                while ((k = nsr_dns_tcp_next(c->in + off, c->in_len - off, &msg, &len, &used)) == 1) {
                        if (len > NSR_DNS_TCP_QUERY_MAX)
                                break;
                        query(d, msg, len, c, NULL, 0);
                        if (c->dead)
                                return;
                        off += used;
                }
                /* A zero length, or a message longer than a query can be:
                 * no stream to follow. */
                if (k < 0 ||
                    (c->in_len - off >= 2 && ((size_t) c->in[off] << 8 | c->in[off + 1]) > NSR_DNS_TCP_QUERY_MAX)) {
                        nsr_relay_malformed(d->relay);
                        tcp_close(d, c);
                        return;
                }
                memmove(c->in, c->in + off, c->in_len - off);
                c->in_len -= off;
        }
}

static void on_tcp(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        tcpconn *c = data;
        nsr_dns *d = c->d;
        (void) s;
        (void) fd;
        if (c->dead)
                return;
        if (ev & EPOLLOUT)
                tcp_flush(d, c);
        if (!c->dead && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                tcp_read(d, c);
}

static void on_listen(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        nsr_dns *d = data;
        (void) s;
        (void) ev;
        for (int i = 0; i < NSR_DNS_TCP_MAX; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0 && errno == EINTR)
                        continue;
                if (cfd < 0)
                        return;
                if (d->n_conns >= NSR_DNS_TCP_MAX) {
                        /* The oldest makes room. */
                        tcpconn *old = d->conns;
                        while (old && old->next)
                                old = old->next;
                        if (old)
                                tcp_close(d, old);
                }
                tcpconn *c = nsr_malloc0(sizeof(*c));
                *c = (tcpconn){ .d = d, .fd = cfd, .deadline = now_s() + NSR_DNS_TCP_IDLE_S };
                if (nsr_evloop_add(d->loop, cfd, EPOLLIN, on_tcp, c, &c->src) < 0) {
                        close(cfd);
                        free(c);
                        continue;
                }
                c->next = d->conns;
                if (d->conns)
                        d->conns->prev = c;
                d->conns = c;
                d->n_conns++;
        }
}

static void on_timer(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        nsr_dns *d = data;
        (void) s;
        (void) ev;
        uint64_t v;
        (void) !read(fd, &v, sizeof(v));
        time_t now = now_s();
        for (pending *p = d->head, *n; p; p = n) {
                n = p->next;
                if (now < p->deadline)
                        continue;
                snprintf(p->rec.reason, sizeof(p->rec.reason), "cannot resolve: timed out");
                p->rec.allowed = true;
                reply(d, &p->q, p->tc, (const struct sockaddr *) &p->peer, p->peer_len, NSR_DNS_SERVFAIL, NULL, 0);
                record(d, &p->rec, &p->mono_start);
                if (p->req)
                        p->req->data = NULL; /* its late answer finds no one */
                pending_drop(d, p);
        }
        for (tcpconn *c = d->conns, *n; c; c = n) {
                n = c->next;
                if (now >= c->deadline && c->inflight == 0)
                        tcp_close(d, c);
        }
}

static void after_batch(void *data) {
        nsr_dns *d = data;
        for (tcpconn *c = d->dead, *n; c; c = n) {
                n = c->next;
                free(c->out);
                free(c);
        }
        d->dead = NULL;
}

/* The child's one message: the UDP socket ('u') and the listener ('t').
 * Whether it came (or the child's end closed without it): either way the
 * control socket is done with, and the caller closes it (after taking it
 * out of a loop: the helper's copy is not the last, so a close alone
 * would leave it in the epoll set). */
static bool receive_sockets(nsr_dns *d) {
        char kinds[2];
        int fds[2];
        struct iovec iov = { .iov_base = kinds, .iov_len = sizeof(kinds) };
        nsr_sockmsg_info info = { 0 };
        ssize_t n = nsr_sockmsg_recv(d->sock[0], &iov, 1, MSG_DONTWAIT, fds, 2, &info);
        if (n == -EAGAIN)
                return false;
        for (size_t i = 0; i < info.n_fds; i++) {
                int *slot = n > (ssize_t) i && kinds[i] == 'u' && d->udp < 0   ? &d->udp
                            : n > (ssize_t) i && kinds[i] == 't' && d->tcp < 0 ? &d->tcp
                                                                               : NULL;
                if (!slot) {
                        close(fds[i]);
                        continue;
                }
                (void) fcntl(fds[i], F_SETFL, O_NONBLOCK);
                *slot = fds[i];
        }
        return true;
}

static void add_sockets(nsr_dns *d) {
        if (d->udp >= 0 && !d->s_udp)
                (void) nsr_evloop_add(d->loop, d->udp, EPOLLIN, on_udp, d, &d->s_udp);
        if (d->tcp >= 0 && !d->s_tcp)
                (void) nsr_evloop_add(d->loop, d->tcp, EPOLLIN, on_listen, d, &d->s_tcp);
}

static void on_control(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        nsr_dns *d = data;
        (void) s;
        (void) fd;
        (void) ev;
        if (!receive_sockets(d))
                return;
        add_sockets(d);
        d->s_control = nsr_evloop_del(d->s_control);
        d->sock[0] = safe_close(d->sock[0]);
}

/* ---- setup ------------------------------------------------------------------ */

int nsr_dns_new(const nsr_egress_rules *rules, nsr_dns **ret, nsr_error *err) {
        _cleanup_(nsr_dns_freep) nsr_dns *d = nsr_malloc0(sizeof(*d));
        d->rules = rules;
        d->sock[0] = d->sock[1] = d->udp = d->tcp = d->timerfd = -1;
#ifdef NSR_TEST_HOOKS
        /* The relay's hook: a slow resolver, so that a test can fill the
         * answerer's limits. */
        const char *delay = getenv("NSRUN_TEST_RESOLVE_DELAY_MS");
        if (delay && atoi(delay) > 0)
                d->resolve_delay_ms = atoi(delay);
#endif
        d->map = nsr_dnsmap_new();
        if (!d->map)
                return nsr_error_set(err, ENOMEM, "DNS answerer");
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, d->sock) < 0)
                return nsr_error_set(err, errno, "DNS answerer: socketpair");
        d->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (d->timerfd < 0)
                return nsr_error_set(err, errno, "DNS answerer: timerfd_create");
        struct itimerspec it = { .it_interval = { .tv_sec = 1 }, .it_value = { .tv_sec = 1 } };
        if (timerfd_settime(d->timerfd, 0, &it, NULL) < 0)
                return nsr_error_set(err, errno, "DNS answerer: timerfd_settime");
        *ret = TAKE_PTR(d);
        return 0;
}

nsr_dns *nsr_dns_free(nsr_dns *d) {
        if (!d)
                return NULL;
        nsr_dns_detach(d);
        while (d->conns)
                tcp_close(d, d->conns);
        after_batch(d);
        while (d->head) {
                /* A lookup still running finds its owner gone. */
                if (d->head->req)
                        d->head->req->data = NULL;
                pending_drop(d, d->head);
        }
        nsr_resolver_release(d->resolver);
        nsr_dnsmap_free(d->map);
        safe_close(d->sock[0]);
        safe_close(d->sock[1]);
        safe_close(d->udp);
        safe_close(d->tcp);
        safe_close(d->timerfd);
        free(d);
        return NULL;
}

static int bind_on(int type, int *ret) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
        inet_pton(AF_INET, NSR_DNS_ADDRESS, &sa.sin_addr);
        _cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int one = 1;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        if (type == SOCK_STREAM && listen(fd, 64) < 0)
                return -errno;
        *ret = TAKE_FD(fd);
        return 0;
}

int nsr_dns_child_setup(nsr_dns *d, nsr_error *err) {
        d->sock[0] = safe_close(d->sock[0]);
        d->timerfd = safe_close(d->timerfd);
        int fds[2] = { -1, -1 };
        int k = bind_on(SOCK_DGRAM, &fds[0]);
        if (k >= 0)
                k = bind_on(SOCK_STREAM, &fds[1]);
        if (k < 0) {
                safe_close(fds[0]);
                return nsr_error_set(err, -k, "DNS answerer: cannot listen on %s:53", NSR_DNS_ADDRESS);
        }
        char kinds[2] = { 'u', 't' };
        struct iovec iov = { .iov_base = kinds, .iov_len = 2 };
        k = nsr_sockmsg_send(d->sock[1], &iov, 1, fds, 2);
        close(fds[0]);
        close(fds[1]);
        d->sock[1] = safe_close(d->sock[1]);
        if (k < 0)
                return nsr_error_set(err, -k, "DNS answerer: cannot pass its sockets out");
        return 0;
}

void nsr_dns_parent_started(nsr_dns *d) {
        d->sock[1] = safe_close(d->sock[1]);
}

size_t nsr_dns_fds(const nsr_dns *d, int *fds, size_t max) {
        const int all[] = { d->sock[0], d->timerfd, d->udp, d->tcp };
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(all) && n < max; i++)
                if (all[i] >= 0)
                        fds[n++] = all[i];
        return n;
}

int nsr_dns_attach(nsr_dns *d, nsr_evloop *loop, nsr_relay *relay) {
        if (d->loop)
                return -EBUSY;
        d->loop = loop;
        d->relay = relay;
        d->resolver = nsr_resolver_new(d->resolve_delay_ms);
        if (!d->resolver)
                return -ENOMEM;
        int k = nsr_evloop_add_post(loop, after_batch, d);
        if (k >= 0)
                k = nsr_evloop_add(loop, nsr_resolver_fd(d->resolver), EPOLLIN, on_resolved, d, &d->s_resolved);
        if (k >= 0)
                k = nsr_evloop_add(loop, d->timerfd, EPOLLIN, on_timer, d, &d->s_timer);
        if (k >= 0 && d->sock[0] >= 0)
                k = nsr_evloop_add(loop, d->sock[0], EPOLLIN, on_control, d, &d->s_control);
        if (k >= 0)
                add_sockets(d); /* taken by the monitor already */
        return k;
}

int nsr_dns_take_sockets(nsr_dns *d) {
        if (d->sock[0] < 0)
                return 1;
        if (!receive_sockets(d))
                return 0;
        d->sock[0] = safe_close(d->sock[0]);
        return 1;
}

int nsr_dns_control_fd(const nsr_dns *d) {
        return d->sock[0];
}

size_t nsr_dns_wake_fds(const nsr_dns *d, int *fds, size_t max) {
        size_t n = 0;
        if (d->udp >= 0 && n < max)
                fds[n++] = d->udp;
        if (d->tcp >= 0 && n < max)
                fds[n++] = d->tcp;
        return n;
}

void nsr_dns_detach(nsr_dns *d) {
        if (!d || !d->loop)
                return;
        d->s_control = nsr_evloop_del(d->s_control);
        d->s_udp = nsr_evloop_del(d->s_udp);
        d->s_tcp = nsr_evloop_del(d->s_tcp);
        d->s_timer = nsr_evloop_del(d->s_timer);
        d->s_resolved = nsr_evloop_del(d->s_resolved);
        for (tcpconn *c = d->conns; c; c = c->next)
                c->src = nsr_evloop_del(c->src);
        nsr_evloop_del_post(d->loop, after_batch, d);
        d->loop = NULL;
}

nsr_dnsmap *nsr_dns_map(nsr_dns *d) {
        return d ? d->map : NULL;
}
