/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A client's request to a connected target: the HTTP request head or
 * SOCKS5 steps (parsed by proxyparse.c) judged by the rules, the name
 * resolved off the loop (resolver.c), the allowed addresses tried in turn,
 * and the answers the client gets. The bytes after that are relay.c's. */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "egress/relay-internal.h"

static void spl_open(spl *p) {
        if (pipe2(p->fd, O_CLOEXEC | O_NONBLOCK) < 0) {
                p->fd[0] = p->fd[1] = -1;
                return;
        }
        int sz = fcntl(p->fd[1], F_SETPIPE_SZ, PIPE_SIZE);
        if (sz < 0)
                sz = fcntl(p->fd[1], F_GETPIPE_SZ);
        p->cap = sz > 0 ? (size_t) sz : 65536;
}

/* ---- answers ----------------------------------------------------------- */

static void host_port_text(const conn *c, char *buf, size_t len) {
        if (strchr(c->rec.host, ':'))
                snprintf(buf, len, "[%s]:%d", c->rec.host, c->rec.port);
        else
                snprintf(buf, len, "%s:%d", c->rec.host, c->rec.port);
}

static void socks_reply(conn *c, uint8_t code) {
        uint8_t msg[10] = { 5, code, 0, 1 };
        buf_put(&c->u2c, msg, sizeof(msg));
}

static void http_reply(conn *c, int status, const char *title, const char *body) {
        _cleanup_free_ char *msg = nsr_asprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                                                "Connection: close\r\nProxy-Agent: nsrun\r\n\r\n%s",
                                                status, title, strlen(body), body);
        buf_put(&c->u2c, msg, strlen(msg));
}

/* Refuses (refused = by the rules) or fails the request, and closes once
 * the answer is out. */
void relay_conn_fail(nsr_relay *r, conn *c, bool refused, const char *reason) {
        char hp[NSR_EGRESS_HOST_MAX + 16];
        host_port_text(c, hp, sizeof(hp));
        if (c->has_target) {
                c->rec.allowed = !refused;
                snprintf(c->rec.reason, sizeof(c->rec.reason), "%s", reason);
        }
        c->hu.fd = safe_close(c->hu.fd);
        c->hu.events = 0;
        c->c2u.len = c->c2u.off = 0;
        /* A lookup that timed out may still answer: it must find no one. */
        if (c->req) {
                c->req->data = NULL;
                c->req = NULL;
        }
        if (c->socks) {
                uint8_t code = 1;
                if (refused)
                        code = 2;
                else if (strstr(reason, "refused"))
                        code = 5;
                else if (strstr(reason, "resolve") || strstr(reason, "unreachable"))
                        code = 4;
                socks_reply(c, code);
        } else if (refused) {
                _cleanup_free_ char *body = nsr_asprintf("nsrun refused the connection to %s: %s\n", hp, reason);
                http_reply(c, 403, "Forbidden", body);
        } else {
                _cleanup_free_ char *body = nsr_asprintf("nsrun could not connect to %s: %s\n", hp, reason);
                http_reply(c, c->has_target ? 502 : 400, c->has_target ? "Bad Gateway" : "Bad Request", body);
        }
        c->state = ST_CLOSING;
        c->deadline = now_s() + r->target_timeout;
        relay_conn_arm(r, c);
}

/* ---- connecting -------------------------------------------------------- */

static void try_connect(nsr_relay *r, conn *c);

static void set_address_text(conn *c, const struct sockaddr *sa) {
        const void *src = sa->sa_family == AF_INET ? (const void *) &((const struct sockaddr_in *) sa)->sin_addr
                                                   : (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (!inet_ntop(sa->sa_family, src, c->rec.address, sizeof(c->rec.address)))
                c->rec.address[0] = '\0';
}

/* Keeps the addresses the rules let this name reach; refuses when none. */
static void use_addresses(nsr_relay *r, conn *c, const struct addrinfo *ai) {
        relay_own_refresh(r);
        size_t n = 0;
        for (const struct addrinfo *a = ai; a; a = a->ai_next)
                n++;
        c->cand = nsr_realloc_array(NULL, n + 1, sizeof(struct sockaddr_storage));
        c->n_addrs = 0;
        char first_bad[128] = "";
        for (const struct addrinfo *a = ai; a; a = a->ai_next) {
                if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
                    a->ai_addrlen > sizeof(struct sockaddr_storage))
                        continue;
                nsr_addr_class cls;
                if (nsr_egress_addr_allowed_own(&c->matched, a->ai_addr, &r->own, &cls)) {
                        bool dup = false;
                        for (size_t k = 0; k < c->n_addrs && !dup; k++)
                                dup = memcmp(&c->cand[k], a->ai_addr, a->ai_addrlen) == 0;
                        if (!dup) {
                                memset(&c->cand[c->n_addrs], 0, sizeof(struct sockaddr_storage));
                                memcpy(&c->cand[c->n_addrs++], a->ai_addr, a->ai_addrlen);
                        }
                } else if (!first_bad[0]) {
                        set_address_text(c, a->ai_addr);
                        if (cls == NSR_ADDR_HOST)
                                snprintf(first_bad, sizeof(first_bad), "resolves to an address of this host (%s)",
                                         c->rec.address);
                        else
                                snprintf(first_bad, sizeof(first_bad), "resolves to a %s address (%s)",
                                         nsr_addr_class_to_string(cls), c->rec.address);
                }
        }
        if (c->n_addrs == 0) {
                relay_conn_fail(r, c, first_bad[0] != '\0', first_bad[0] ? first_bad : "no usable address");
                return;
        }
        c->rec.address[0] = '\0';
        c->next_addr = 0;
        try_connect(r, c);
}

static void try_connect(nsr_relay *r, conn *c) {
        int last = ECONNREFUSED;
        while (c->next_addr < c->n_addrs) {
                struct sockaddr_storage *ss = &c->cand[c->next_addr++];
                socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
                ((struct sockaddr_in *) ss)->sin_port = htons((uint16_t) c->rec.port);
                c->hu.fd = safe_close(c->hu.fd);
                c->hu.events = 0;
                int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        last = errno;
                        continue;
                }
                int one = 1;
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                c->hu.fd = fd;
                set_address_text(c, (struct sockaddr *) ss);
                if (connect(fd, (struct sockaddr *) ss, len) == 0 || errno == EINPROGRESS) {
                        c->state = ST_CONNECTING;
                        c->deadline = now_s() + r->target_timeout;
                        relay_conn_arm(r, c);
                        return;
                }
                last = errno;
        }
        char why[96];
        snprintf(why, sizeof(why), "connect failed: %s", strerror(last));
        relay_conn_fail(r, c, false, why);
}

void relay_connected(nsr_relay *r, conn *c) {
        int e = 0;
        socklen_t l = sizeof(e);
        if (getsockopt(c->hu.fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
                e = errno;
        if (e != 0) {
                if (c->next_addr < c->n_addrs) {
                        try_connect(r, c);
                        return;
                }
                char why[96];
                snprintf(why, sizeof(why), "connect failed: %s", strerror(e));
                relay_conn_fail(r, c, false, why);
                return;
        }
        if (c->rec.proto == NSR_EGRESS_PROTO_CONNECT) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\nProxy-Agent: nsrun\r\n\r\n";
                buf_put(&c->u2c, ok, sizeof(ok) - 1);
        } else if (c->rec.proto == NSR_EGRESS_PROTO_SOCKS5)
                socks_reply(c, 0);
        if (!c->u2c.data)
                c->u2c.data = nsr_malloc0(BUF_SIZE);
        if (!c->track_body) /* a body is followed in user space */
                spl_open(&c->p_c2u);
        spl_open(&c->p_u2c);
        c->state = ST_RELAY;
        c->deadline = now_s() + IDLE_TIMEOUT_S;
        relay_conn_arm(r, c);
}

/* The client named host:port: check, then resolve or connect. */
static void target(nsr_relay *r, conn *c, const char *raw, size_t raw_len, int port, nsr_egress_proto proto) {
        c->has_target = true;
        c->rec.proto = proto;
        c->rec.port = port;
        char host[NSR_EGRESS_HOST_MAX + 1];
        char rawz[NSR_EGRESS_HOST_MAX + 3];
        bool addr = false;
        if (raw_len >= sizeof(rawz) || memchr(raw, '\0', raw_len)) {
                nsr_proxy_sanitize(raw, raw_len, c->rec.host, sizeof(c->rec.host));
                relay_conn_fail(r, c, true, "not a valid host name");
                return;
        }
        memcpy(rawz, raw, raw_len);
        rawz[raw_len] = '\0';
        if (nsr_egress_host_normalize(rawz, host, sizeof(host), &addr) < 0) {
                nsr_proxy_sanitize(raw, raw_len, c->rec.host, sizeof(c->rec.host));
                relay_conn_fail(r, c, true, "not a valid host name");
                return;
        }
        snprintf(c->rec.host, sizeof(c->rec.host), "%s", host);
        if (port < 1 || port > 65535) {
                relay_conn_fail(r, c, true, "not a valid port");
                return;
        }
        nsr_egress_verdict v;
        nsr_egress_check_name(r->rules, host, port, &v);
        if (!v.allowed) {
                if (v.denied)
                        snprintf(c->rec.reason, sizeof(c->rec.reason), "%s %s", v.reason, v.denied->text);
                else
                        snprintf(c->rec.reason, sizeof(c->rec.reason), "%s", v.reason);
                char why[sizeof(c->rec.reason)];
                memcpy(why, c->rec.reason, sizeof(why));
                relay_conn_fail(r, c, true, why);
                return;
        }
        c->matched = *v.matched;
        c->rec.allowed = true;
        if (addr) {
                struct addrinfo hints = { .ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM };
                struct addrinfo *ai = NULL;
                if (getaddrinfo(host, NULL, &hints, &ai) != 0) {
                        relay_conn_fail(r, c, true, "not a valid address");
                        return;
                }
                use_addresses(r, c, ai);
                freeaddrinfo(ai);
                return;
        }
        if (!r->pool)
                r->pool = nsr_resolver_new(r->resolve_delay_ms);
        if (!r->pool) {
                relay_conn_fail(r, c, false, "cannot resolve: no resolver");
                return;
        }
        if (r->h_resolved.fd < 0) {
                r->h_resolved = (handle){ .kind = H_RESOLVED, .fd = nsr_resolver_fd(r->pool) };
                (void) ep_set(r, &r->h_resolved, EPOLLIN);
        }
        nsr_resolve_req *q = nsr_malloc0(sizeof(*q));
        memcpy(q->host, host, strlen(host) + 1);
        q->data = c;
        c->req = q;
        c->state = ST_RESOLVING;
        c->deadline = now_s() + r->target_timeout;
        if (nsr_resolver_submit(r->pool, q) < 0) {
                /* No thread could start; the queued request is freed with
                 * the pool. */
                q->data = NULL;
                c->req = NULL;
                relay_conn_fail(r, c, false, "cannot resolve: no resolver thread");
                return;
        }
        relay_conn_arm(r, c);
}

void relay_resolved(nsr_relay *r) {
        for (nsr_resolve_req *q = nsr_resolver_take_done(r->pool), *n; q; q = n) {
                n = q->next;
                conn *c = q->data;
                if (c) {
                        c->req = NULL;
                        if (q->gai != 0) {
                                char why[128];
                                snprintf(why, sizeof(why), "cannot resolve: %s", gai_strerror(q->gai));
                                relay_conn_fail(r, c, false, why);
                        } else
                                use_addresses(r, c, q->res);
                }
                nsr_resolve_req_free(q);
        }
}

/* ---- requests (parsed in proxyparse.c) ----------------------------------- */

static void http_refuse(nsr_relay *r, conn *c, int status, const char *why) {
        _cleanup_free_ char *body = nsr_asprintf("nsrun: %s\n", why);
        http_reply(c, status, status == 431 ? "Request Header Fields Too Large" : "Bad Request", body);
        c->state = ST_CLOSING;
        relay_conn_arm(r, c);
}

/* Keeps the bytes of b from off on that belong to the request's body and
 * drops the rest: nothing after the one request reaches the server. */
int relay_body_filter(conn *c, buffer *b, size_t off) {
        if (!c->track_body || off >= b->len)
                return 0;
        size_t n = b->len - off;
        ssize_t k = c->body.done ? 0 : nsr_http_body_feed(&c->body, b->data + b->off + off, n);
        if (k < 0)
                return -EBADMSG;
        b->len -= n - (size_t) k;
        return 0;
}

void relay_http_head(nsr_relay *r, conn *c) {
        buffer *b = &c->c2u;
        nsr_http_head h;
        int k = nsr_http_head_parse(b->data + b->off, b->len, &h);
        if (k == 0) {
                relay_conn_arm(r, c);
                return;
        }
        if (k < 0) {
                http_refuse(r, c, h.status, h.why);
                return;
        }
        consume(b, h.head_len);
        buf_compact(b);
        if (h.connect) {
                /* What follows is the tunnel's, for the server. */
                target(r, c, h.host, h.host_len, h.port, NSR_EGRESS_PROTO_CONNECT);
                return;
        }
        /* The body bytes that came along stay behind the new head, and
         * only they: a second request behind them goes nowhere. */
        c->track_body = true;
        nsr_http_body_init(&c->body, h.framing, h.content_length);
        if (relay_body_filter(c, b, 0) < 0) {
                nsr_http_head_done(&h);
                http_refuse(r, c, 400, "a malformed chunked body");
                return;
        }
        size_t o = h.upstream_len;
        if (o + b->len > BUF_SIZE)
                b->len = BUF_SIZE - o; /* cannot happen: o <= HEADER_MAX + 1 KiB */
        memmove(b->data + o, b->data, b->len);
        memcpy(b->data, h.upstream, o);
        b->len += o;
        nsr_http_head_done(&h);
        target(r, c, h.host, h.host_len, h.port, NSR_EGRESS_PROTO_HTTP);
}

/* k, what a SOCKS step's parser said: a bad step closes the connection,
 * a short one waits for more bytes; true then. */
static bool socks_unfinished(nsr_relay *r, conn *c, int k) {
        if (k > 0)
                return false;
        if (k < 0)
                relay_conn_close(r, c);
        else
                relay_conn_arm(r, c);
        return true;
}

void relay_socks_step(nsr_relay *r, conn *c) {
        buffer *b = &c->c2u;
        nsr_socks_step st;
        int k;
        if (c->state == ST_SOCKS_GREETING) {
                k = nsr_socks_greeting((const uint8_t *) b->data + b->off, b->len, &st);
                if (socks_unfinished(r, c, k))
                        return;
                consume(b, st.used);
                static const uint8_t yes[2] = { 5, 0 }, no[2] = { 5, 0xff };
                buf_put(&c->u2c, st.noauth ? yes : no, 2);
                if (!st.noauth) {
                        c->state = ST_CLOSING;
                        relay_conn_arm(r, c);
                        return;
                }
                c->state = ST_SOCKS_REQUEST;
        }
        k = nsr_socks_request((const uint8_t *) b->data + b->off, b->len, &st);
        if (socks_unfinished(r, c, k))
                return;
        if (st.reply) {
                socks_reply(c, st.reply);
                c->state = ST_CLOSING;
                relay_conn_arm(r, c);
                return;
        }
        consume(b, st.used);
        target(r, c, st.host, st.host_len, st.port, NSR_EGRESS_PROTO_SOCKS5);
}
