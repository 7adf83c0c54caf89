/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The egress relay's I/O (relay.h): its connections and their events,
 * the bytes spliced both ways, the connection record; and the relay's
 * sockets set up. From a client's request to a connected target is
 * relayconnect.c's; names are resolved by resolver.c. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/evloop.h"
#include "base/outq.h"
#include "base/sockmsg.h"
#include "base/util.h"
#include "egress/proxyparse.h"
#include "egress/relay-internal.h"
#include "egress/relay.h"
#include "egress/resolver.h"
#include "seccomp/compile.h"
#include "seccomp/policy.h"

/* ---- connections ------------------------------------------------------- */

static void buf_free(buffer *b) {
        free(b->data);
        *b = (buffer){ 0 };
}

static size_t buf_room(const buffer *b) {
        return BUF_SIZE - b->off - b->len;
}

/* Reads what fits; returns bytes read, 0 at EOF, -EAGAIN or -errno. */
static ssize_t fill(int fd, buffer *b, size_t max) {
        if (!b->data)
                b->data = nsr_malloc0(BUF_SIZE);
        if (buf_room(b) == 0)
                buf_compact(b);
        if (buf_room(b) == 0 || b->len >= max)
                return -ENOBUFS;
        size_t want = buf_room(b);
        if (want > max - b->len)
                want = max - b->len;
        ssize_t n = read(fd, b->data + b->off + b->len, want);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        b->len += (size_t) n;
        return n;
}

static ssize_t drain(int fd, buffer *b) {
        if (b->len == 0)
                return 0;
        ssize_t n = send(fd, b->data + b->off, b->len, MSG_NOSIGNAL);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        consume(b, (size_t) n);
        return n;
}

/* The drop note in the --net-log-fd stream. */
#define LOG_DROP_NOTE "{\"dropped\":"

static void emit_log(nsr_relay *r, const nsr_egress_record *rec) {
        if (r->logq.fd < 0)
                return;
        _cleanup_free_ char *line = nsr_egress_record_json(rec);
        _cleanup_free_ char *nl = nsr_asprintf("%s\n", line);
        nsr_outq_put(&r->logq, nl, strlen(nl));
}

void nsr_relay_record(nsr_relay *r, const nsr_egress_record *rec) {
        nsr_egress_log_add(&r->log, rec);
        emit_log(r, rec);
}

void nsr_relay_malformed(nsr_relay *r) {
        r->log.n_malformed++;
}

const nsr_egress_own *nsr_relay_own(nsr_relay *r) {
        relay_own_refresh(r);
        return &r->own;
}

void relay_conn_close(nsr_relay *r, conn *c) {
        if (c->dead)
                return;
        c->dead = true;
        if (c->has_target) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                c->rec.duration_ms = (uint64_t) ((now.tv_sec - c->mono_start.tv_sec) * 1000 +
                                                 (now.tv_nsec - c->mono_start.tv_nsec) / 1000000);
                nsr_egress_log_add(&r->log, &c->rec);
                emit_log(r, &c->rec);
        } else
                r->log.n_malformed++;
        (void) ep_set(r, &c->hc, 0);
        (void) ep_set(r, &c->hu, 0);
        c->hc.fd = safe_close(c->hc.fd);
        c->hu.fd = safe_close(c->hu.fd);
        for (int i = 0; i < 2; i++) {
                c->p_c2u.fd[i] = safe_close(c->p_c2u.fd[i]);
                c->p_u2c.fd[i] = safe_close(c->p_u2c.fd[i]);
        }
        if (c->req)
                c->req->data = NULL; /* the pool's answer is dropped when it comes */
        c->req = NULL;
        free(c->cand);
        c->cand = NULL;
        buf_free(&c->c2u);
        buf_free(&c->u2c);
        if (c->prev)
                c->prev->next = c->next;
        else
                r->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                r->tail = c->prev;
        r->n_conns--;
        c->prev = NULL;
        c->next = r->dead;
        r->dead = c;
        if (r->listen_paused && r->n_conns < MAX_CONNS) {
                r->listen_paused = false;
                for (size_t i = 0; i < r->n_listeners; i++)
                        (void) ep_set(r, &r->listeners[i], EPOLLIN);
        }
}

static bool can_read(const buffer *b, const spl *p) {
        if (p->fd[0] >= 0)
                return p->pending < p->cap;
        return buf_room(b) + b->off > 0;
}

/* Recomputes what each side waits for, from the buffers and the state. */
void relay_conn_arm(nsr_relay *r, conn *c) {
        uint32_t ce = 0, ue = 0;
        if (c->dead)
                return;
        switch (c->state) {
        case ST_HTTP_HEAD:
        case ST_SOCKS_GREETING:
        case ST_SOCKS_REQUEST:
                ce = EPOLLIN;
                if (c->u2c.len)
                        ce |= EPOLLOUT;
                break;
        case ST_RESOLVING:
                ce = c->u2c.len ? EPOLLOUT : 0;
                break;
        case ST_CONNECTING:
                ue = EPOLLOUT;
                break;
        case ST_RELAY:
                if (!c->c_eof && can_read(&c->c2u, &c->p_c2u))
                        ce |= EPOLLIN;
                if (c->u2c.len || c->p_u2c.pending)
                        ce |= EPOLLOUT;
                if (!c->u_eof && can_read(&c->u2c, &c->p_u2c))
                        ue |= EPOLLIN;
                if (c->c2u.len || c->p_c2u.pending)
                        ue |= EPOLLOUT;
                break;
        case ST_CLOSING:
                ce = c->u2c.len ? EPOLLOUT : EPOLLIN;
                break;
        }
        if (ep_set(r, &c->hc, ce) < 0 || ep_set(r, &c->hu, ue) < 0)
                relay_conn_close(r, c);
}

/* ---- events ------------------------------------------------------------ */

/* Reads from fd into the pipe, or the buffer without one. *ret_full: the
 * read took all the room there was, so more may be waiting. */
static ssize_t side_read(int fd, buffer *b, spl *p, bool *ret_full) {
        if (p->fd[0] >= 0) {
                size_t want = p->cap - p->pending;
                if (want == 0)
                        return -ENOBUFS;
                ssize_t n = splice(fd, NULL, p->fd[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n < 0)
                        return errno == EINTR ? -EAGAIN : -errno;
                p->pending += (size_t) n;
                *ret_full = (size_t) n == want;
                return n;
        }
        size_t want = buf_room(b) + b->off;
        ssize_t n = fill(fd, b, BUF_SIZE);
        *ret_full = n > 0 && (size_t) n == want;
        return n;
}

/* Writes the buffer first, then what the pipe holds. */
static ssize_t side_write(int fd, buffer *b, spl *p) {
        if (b->len)
                return drain(fd, b);
        if (p->pending == 0)
                return 0;
        ssize_t n = splice(p->fd[0], NULL, fd, NULL, p->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        p->pending -= (size_t) n;
        return n;
}

static void relay_io(nsr_relay *r, conn *c, bool client_side, uint32_t ev) {
        /* Read only the side epoll named, and again only while reads come
         * back full; write whatever is held. A side that was paused comes
         * back through conn_arm and the level-triggered epoll. */
        bool rd_c = client_side && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR));
        bool rd_u = !client_side && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR));
        for (int round = 0; round < 8; round++) {
                bool progress = false, full = false;
                ssize_t n;
                if (rd_c && !c->c_eof && c->track_body && c->body.done) {
                        /* The request is complete: whatever the client
                         * sends now is read and dropped. */
                        char sink[4096];
                        n = read(c->hc.fd, sink, sizeof(sink));
                        if (n > 0)
                                progress = true;
                        else if (n == 0)
                                c->c_eof = true;
                        else if (errno == EAGAIN || errno == EINTR)
                                rd_c = false;
                        else {
                                relay_conn_close(r, c);
                                return;
                        }
                } else if (rd_c && !c->c_eof) {
                        size_t before = c->c2u.len;
                        n = side_read(c->hc.fd, &c->c2u, &c->p_c2u, &full);
                        if (n > 0 && relay_body_filter(c, &c->c2u, before) < 0) {
                                relay_conn_close(r, c);
                                return;
                        }
                        if (n > 0) {
                                progress = true;
                                rd_c = full;
                        } else if (n == 0)
                                c->c_eof = true;
                        else if (n == -EAGAIN || n == -ENOBUFS)
                                rd_c = false;
                        else {
                                relay_conn_close(r, c);
                                return;
                        }
                }
                if (rd_u && !c->u_eof) {
                        n = side_read(c->hu.fd, &c->u2c, &c->p_u2c, &full);
                        if (n > 0) {
                                c->rec.bytes_down += (uint64_t) n;
                                progress = true;
                                rd_u = full;
                        } else if (n == 0)
                                c->u_eof = true;
                        else if (n == -EAGAIN || n == -ENOBUFS)
                                rd_u = false;
                        else {
                                relay_conn_close(r, c);
                                return;
                        }
                }
                n = side_write(c->hu.fd, &c->c2u, &c->p_c2u);
                if (n > 0) {
                        c->rec.bytes_up += (uint64_t) n;
                        progress = true;
                } else if (n < 0 && n != -EAGAIN) {
                        relay_conn_close(r, c);
                        return;
                }
                n = side_write(c->hc.fd, &c->u2c, &c->p_u2c);
                if (n > 0)
                        progress = true;
                else if (n < 0 && n != -EAGAIN) {
                        relay_conn_close(r, c);
                        return;
                }
                if (!progress)
                        break;
        }
        if (c->c_eof && c->c2u.len == 0 && c->p_c2u.pending == 0 && !c->u_shut) {
                (void) shutdown(c->hu.fd, SHUT_WR);
                c->u_shut = true;
        }
        if (c->u_eof && c->u2c.len == 0 && c->p_u2c.pending == 0) {
                /* The server is done and everything reached the client. */
                relay_conn_close(r, c);
                return;
        }
        c->deadline = now_s() + IDLE_TIMEOUT_S;
        relay_conn_arm(r, c);
}

static void client_event(nsr_relay *r, conn *c, uint32_t ev) {
        switch (c->state) {
        case ST_HTTP_HEAD:
        case ST_SOCKS_GREETING:
        case ST_SOCKS_REQUEST: {
                if (c->u2c.len) {
                        ssize_t w = drain(c->hc.fd, &c->u2c);
                        if (w < 0 && w != -EAGAIN) {
                                relay_conn_close(r, c);
                                return;
                        }
                }
                if (!(ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                        relay_conn_arm(r, c);
                        return;
                }
                size_t limit = c->socks ? 512 : HEADER_MAX;
                if (c->c2u.len >= limit) {
                        relay_conn_close(r, c);
                        return;
                }
                /* Never more than a header's worth: the rewritten head
                 * and the body bytes behind it must fit the buffer. */
                ssize_t n = fill(c->hc.fd, &c->c2u, limit);
                if (n == 0 || (n < 0 && n != -EAGAIN)) {
                        relay_conn_close(r, c);
                        return;
                }
                if (c->socks)
                        relay_socks_step(r, c);
                else
                        relay_http_head(r, c);
                return;
        }
        case ST_RESOLVING:
        case ST_CONNECTING:
                if (ev & (EPOLLHUP | EPOLLERR)) {
                        relay_conn_close(r, c);
                        return;
                }
                if (c->u2c.len && drain(c->hc.fd, &c->u2c) < -EAGAIN) {
                        relay_conn_close(r, c);
                        return;
                }
                relay_conn_arm(r, c);
                return;
        case ST_RELAY:
                relay_io(r, c, true, ev);
                return;
        case ST_CLOSING: {
                /* Send the answer, then half-close and read what the
                 * client still sends until it closes: closing with unread
                 * input would reset the connection, and the client could
                 * lose the answer. */
                if (c->u2c.len) {
                        ssize_t n = drain(c->hc.fd, &c->u2c);
                        if ((n < 0 && n != -EAGAIN) || (ev & EPOLLERR)) {
                                relay_conn_close(r, c);
                                return;
                        }
                        if (c->u2c.len == 0) {
                                (void) shutdown(c->hc.fd, SHUT_WR);
                                c->deadline = now_s() + 5;
                        }
                } else if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                        char sink[4096];
                        ssize_t n = read(c->hc.fd, sink, sizeof(sink));
                        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                                relay_conn_close(r, c);
                                return;
                        }
                }
                relay_conn_arm(r, c);
                return;
        }
        }
}

static void upstream_event(nsr_relay *r, conn *c, uint32_t ev) {
        if (c->state == ST_CONNECTING) {
                relay_connected(r, c);
                return;
        }
        if (c->state == ST_RELAY)
                relay_io(r, c, false, ev);
}

static void evict_oldest_idle(nsr_relay *r) {
        for (conn *c = r->head; c; c = c->next)
                if (c->state == ST_HTTP_HEAD || c->state == ST_SOCKS_GREETING || c->state == ST_SOCKS_REQUEST ||
                    c->state == ST_CLOSING) {
                        relay_conn_close(r, c);
                        return;
                }
}

/* The client's side of a connection is always a loopback link (inside
 * the sandbox's namespace, or the host's in best-effort mode), and
 * downloads make the relay its sender. A pacing congestion control such
 * as BBR (pacing in TCP itself when the qdisc does not) arms a timer per
 * burst there for a link with no bottleneck; measured on a BBR host it
 * doubled the relay's CPU per GiB (bench/README.md). Reno never paces and
 * every user may choose it. The upstream side keeps the host's choice: it
 * is the real path. Failure is harmless: the default stays. */
static void loopback_congestion(int fd) {
        static const char reno[] = "reno";
        (void) setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof(reno) - 1);
}

static void accept_all(nsr_relay *r, handle *h) {
        for (int i = 0; i < 64; i++) {
                if (r->n_conns >= MAX_CONNS)
                        evict_oldest_idle(r);
                if (r->n_conns >= MAX_CONNS) {
                        /* Every slot is busy relaying: stop accepting until
                         * one frees; clients wait in the backlog. */
                        r->listen_paused = true;
                        for (size_t k = 0; k < r->n_listeners; k++)
                                (void) ep_set(r, &r->listeners[k], 0);
                        return;
                }
                int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                                /* Out of fds: pause until the timer ticks,
                                 * instead of spinning on the backlog. */
                                r->listen_paused = true;
                                for (size_t k = 0; k < r->n_listeners; k++)
                                        (void) ep_set(r, &r->listeners[k], 0);
                        }
                        return;
                }
                int one = 1;
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                loopback_congestion(fd);
                conn *c = nsr_malloc0(sizeof(*c));
                c->hc = (handle){ .kind = H_CLIENT, .fd = fd, .conn = c };
                c->hu = (handle){ .kind = H_UPSTREAM, .fd = -1, .conn = c };
                c->p_c2u.fd[0] = c->p_c2u.fd[1] = c->p_u2c.fd[0] = c->p_u2c.fd[1] = -1;
                c->socks = h->kind == H_LISTEN_SOCKS;
                c->state = c->socks ? ST_SOCKS_GREETING : ST_HTTP_HEAD;
                c->deadline = now_s() + r->target_timeout;
                clock_gettime(CLOCK_REALTIME, &c->rec.started);
                clock_gettime(CLOCK_MONOTONIC, &c->mono_start);
                c->c2u.data = nsr_malloc0(BUF_SIZE);
                c->prev = r->tail;
                if (r->tail)
                        r->tail->next = c;
                else
                        r->head = c;
                r->tail = c;
                r->n_conns++;
                relay_conn_arm(r, c);
        }
}

static bool receive_listeners(nsr_relay *r) {
        char data[MAX_LISTENERS];
        int fds[MAX_LISTENERS];
        struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
        nsr_sockmsg_info info = { 0 }; /* read below even when recvmsg failed */
        ssize_t n = nsr_sockmsg_recv(r->sock[0], &iov, 1, MSG_DONTWAIT, fds, MAX_LISTENERS, &info);
        if (n == -EAGAIN)
                return false;
        for (size_t i = 0; n > 0 && i < info.n_fds; i++) {
                if (i >= (size_t) n || r->n_listeners >= MAX_LISTENERS) { /* an fd comes with its kind byte */
                        close(fds[i]);
                        continue;
                }
                (void) fcntl(fds[i], F_SETFL, O_NONBLOCK);
                handle *h = &r->listeners[r->n_listeners++];
                *h = (handle){ .kind = data[i] == 's' ? H_LISTEN_SOCKS : H_LISTEN_HTTP, .fd = fds[i] };
                (void) ep_set(r, h, EPOLLIN);
        }
        if (n <= 0)
                for (size_t i = 0; i < info.n_fds; i++)
                        close(fds[i]);
        /* One message, or the child is gone: either way, done. */
        (void) ep_set(r, &r->h_control, 0);
        r->sock[0] = safe_close(r->sock[0]);
        r->h_control.fd = -1;
        return true;
}

int nsr_relay_take_listeners(nsr_relay *r) {
        return r->sock[0] < 0 || receive_listeners(r);
}

int nsr_relay_control_fd(const nsr_relay *r) {
        return r->sock[0];
}

size_t nsr_relay_wake_fds(const nsr_relay *r, int *fds, size_t max) {
        size_t n = 0;
        for (size_t i = 0; i < r->n_listeners && n < max; i++)
                fds[n++] = r->listeners[i].fd;
        return n;
}

static void sweep(nsr_relay *r) {
        uint64_t v;
        (void) !read(r->timerfd, &v, sizeof(v));
        time_t now = now_s();
        for (conn *c = r->head, *n; c; c = n) {
                n = c->next;
                if (now < c->deadline)
                        continue;
                if (c->state == ST_RESOLVING || c->state == ST_CONNECTING)
                        relay_conn_fail(r, c, false, "timed out");
                else
                        relay_conn_close(r, c);
        }
        if (r->listen_paused && r->n_conns < MAX_CONNS) {
                r->listen_paused = false;
                for (size_t i = 0; i < r->n_listeners; i++)
                        (void) ep_set(r, &r->listeners[i], EPOLLIN);
        }
}

static void bury(nsr_relay *r) {
        for (conn *c = r->dead, *n; c; c = n) {
                n = c->next;
                free(c);
        }
        r->dead = NULL;
}

void relay_on_handle(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        (void) s;
        (void) fd;
        handle *h = data;
        nsr_relay *r = h->r;
        /* A handle taken out earlier in this batch is never called (the
         * loop's promise); one whose fd closed is not either. */
        if (h->events == 0 || h->fd < 0)
                return;
        switch (h->kind) {
        case H_CONTROL:
                (void) receive_listeners(r);
                break;
        case H_LISTEN_HTTP:
        case H_LISTEN_SOCKS:
                accept_all(r, h);
                break;
        case H_RESOLVED:
                relay_resolved(r);
                break;
        case H_TIMER:
                sweep(r);
                break;
        case H_LOG:
                nsr_outq_flush(&r->logq);
                break;
        case H_CLIENT:
                client_event(r, h->conn, ev);
                break;
        case H_UPSTREAM:
                upstream_event(r, h->conn, ev);
                break;
        }
}

/* After each batch of the loop: the connections closed in it go, and
 * lines waiting for a slow reader wake the loop when it takes more. */
static void after_batch(void *data) {
        nsr_relay *r = data;
        bury(r);
        if (r->h_log.fd >= 0 && ep_set(r, &r->h_log, nsr_outq_pending(&r->logq) ? EPOLLOUT : 0) < 0)
                r->h_log.fd = -1;
}

/* A handle that cannot wait in the loop fails the attach: a relay deaf
 * to its listeners or its timer would fail the run's network silently. */
static int attach_handle(nsr_relay *r, handle *h) {
        uint32_t want = h->events;
        h->events = 0;
        return want ? ep_set(r, h, want) : 0;
}

size_t nsr_relay_fds(const nsr_relay *r, int *fds, size_t max) {
        size_t n = 0;
        /* nl_fd too: the helper closes every fd not named here, and a
         * closed nl_fd's number, reused by a client's socket, would be
         * drained as if it were the address watch. */
        int all[4 + MAX_LISTENERS] = { r->sock[0], r->timerfd, r->logq.fd, r->nl_fd };
        size_t k = 4;
        for (size_t i = 0; i < r->n_listeners; i++)
                all[k++] = r->listeners[i].fd;
        for (size_t i = 0; i < k && n < max; i++)
                if (all[i] >= 0)
                        fds[n++] = all[i];
        return n;
}

int nsr_relay_attach(nsr_relay *r, nsr_evloop *loop) {
        if (r->loop)
                return -EBUSY;
        r->loop = loop;
        int k = nsr_evloop_add_post(loop, after_batch, r);
        if (k < 0)
                return k;
        k = attach_handle(r, &r->h_control);
        if (k >= 0)
                k = attach_handle(r, &r->h_timer);
        if (k >= 0)
                k = attach_handle(r, &r->h_resolved);
        for (size_t i = 0; k >= 0 && i < r->n_listeners; i++)
                k = attach_handle(r, &r->listeners[i]);
        /* Connections come only through the loop: none yet. */
        return k;
}

static void detach_handle(handle *h) {
        h->src = nsr_evloop_del(h->src);
}

void nsr_relay_detach(nsr_relay *r) {
        if (!r || !r->loop)
                return;
        detach_handle(&r->h_control);
        detach_handle(&r->h_timer);
        detach_handle(&r->h_resolved);
        detach_handle(&r->h_log);
        for (size_t i = 0; i < r->n_listeners; i++)
                detach_handle(&r->listeners[i]);
        for (conn *c = r->head; c; c = c->next) {
                detach_handle(&c->hc);
                detach_handle(&c->hu);
        }
        nsr_evloop_del_post(r->loop, after_batch, r);
        r->loop = NULL;
}

/* ---- setup ------------------------------------------------------------- */

/* Every address of every interface of the host: a name the rules allow
 * must not lead back to the host's own services through its public
 * address. Read before the first decision that needs it (not when the
 * relay starts: getifaddrs dumps every link and address over rtnetlink,
 * 0.1 ms a launch that may never connect), and again whenever rtnetlink
 * said an address came or went since (or always, without the netlink
 * socket). Until a read succeeds the list is unknown, which refuses every
 * public address (fails closed). */
int nsr_egress_own_read(nsr_egress_own *own) {
        struct ifaddrs *ifa = NULL;
        if (getifaddrs(&ifa) < 0)
                return -errno;
        nsr_egress_own fresh = { .known = true };
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
                if (i->ifa_addr)
                        nsr_egress_own_add(&fresh, i->ifa_addr);
        freeifaddrs(ifa);
        nsr_egress_own_done(own);
        *own = fresh;
        return 0;
}

static int own_watch(void) {
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
        if (fd < 0)
                return -1;
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* The kernel queues the notification when the address is added, before
 * anything can connect to it: draining the socket here sees every change
 * made before this decision. A failed re-read keeps the old list (or none:
 * unknown). */
void relay_own_refresh(nsr_relay *r) {
        bool changed = r->nl_fd < 0 || !r->own.known;
        char buf[8192];
        for (;;) {
                ssize_t n = r->nl_fd < 0 ? -1 : recv(r->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n > 0 || (n < 0 && errno == ENOBUFS)) {
                        changed = true;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                break;
        }
        if (changed)
                (void) nsr_egress_own_read(&r->own);
}

int nsr_relay_new(const nsr_egress_rules *rules, int log_fd, nsr_relay **ret, nsr_error *err) {
        _cleanup_(nsr_relay_freep) nsr_relay *r = nsr_malloc0(sizeof(*r));
        r->rules = rules;
        nsr_outq_init(&r->logq, log_fd, 0, LOG_DROP_NOTE);
        r->h_log = (handle){ .kind = H_LOG, .fd = log_fd };
        r->target_timeout = TARGET_TIMEOUT_S;
#ifdef NSR_TEST_HOOKS
        /* A slow resolver and a short deadline, so a test can show that a
         * late answer finds its connection gone. */
        const char *t = getenv("NSRUN_TEST_RELAY_TIMEOUT_S");
        if (t && atoi(t) > 0)
                r->target_timeout = atoi(t);
        const char *d = getenv("NSRUN_TEST_RESOLVE_DELAY_MS");
        if (d && atoi(d) > 0)
                r->resolve_delay_ms = atoi(d);
#endif
        r->sock[0] = r->sock[1] = r->timerfd = -1;
        r->h_resolved.fd = -1;
        r->nl_fd = own_watch(); /* before the first read: no change is missed */
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, r->sock) < 0)
                return nsr_error_set(err, errno, "egress relay: socketpair");
        r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (r->timerfd < 0)
                return nsr_error_set(err, errno, "egress relay: timerfd_create");
        struct itimerspec it = { .it_interval = { .tv_sec = 1 }, .it_value = { .tv_sec = 1 } };
        if (timerfd_settime(r->timerfd, 0, &it, NULL) < 0)
                return nsr_error_set(err, errno, "egress relay: timerfd_settime");
        r->h_control = (handle){ .kind = H_CONTROL, .fd = r->sock[0] };
        r->h_timer = (handle){ .kind = H_TIMER, .fd = r->timerfd };
        if (ep_set(r, &r->h_control, EPOLLIN) < 0 || ep_set(r, &r->h_timer, EPOLLIN) < 0)
                return nsr_error_set(err, errno, "egress relay: epoll_ctl");
        *ret = TAKE_PTR(r);
        return 0;
}

void nsr_relay_finish(nsr_relay *r, nsr_egress_log *ret) {
        while (r->head)
                relay_conn_close(r, r->head);
        bury(r);
        /* A reader gets a moment to take the last lines, no more. */
        (void) ep_set(r, &r->h_log, 0);
        nsr_outq_finish(&r->logq, 1000);
        r->log.n_log_dropped = r->logq.dropped;
        *ret = r->log;
        r->log = (nsr_egress_log){ 0 };
}

nsr_relay *nsr_relay_free(nsr_relay *r) {
        if (!r)
                return NULL;
        while (r->head)
                relay_conn_close(r, r->head);
        bury(r);
        nsr_relay_detach(r);
        nsr_egress_log_free(&r->log);
        nsr_egress_own_done(&r->own);
        safe_close(r->nl_fd);
        nsr_outq_done(&r->logq);
        for (size_t i = 0; i < r->n_listeners; i++)
                safe_close(r->listeners[i].fd);
        safe_close(r->sock[0]);
        safe_close(r->sock[1]);
        safe_close(r->timerfd);
        nsr_resolver_release(r->pool);
        free(r);
        return NULL;
}

void nsr_relay_parent_started(nsr_relay *r) {
        r->sock[1] = safe_close(r->sock[1]);
        /* Up to six fds per connection (two sockets, two pipes): raise the
         * monitor's soft limit, which the command (already cloned) does
         * not inherit. Short of fds, accept pauses and pipes give way to
         * buffers. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int listen_on(int family, const char *addr, int port, int *ret) {
        struct sockaddr_storage ss = { 0 };
        socklen_t len;
        if (family == AF_INET) {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                s4->sin_family = AF_INET;
                s4->sin_port = htons((uint16_t) port);
                inet_pton(AF_INET, addr, &s4->sin_addr);
                len = sizeof(*s4);
        } else {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t) port);
                inet_pton(AF_INET6, addr, &s6->sin6_addr);
                len = sizeof(*s6);
        }
        _cleanup_close_ int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int one = 1;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (family == AF_INET6)
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *) &ss, len) < 0 || listen(fd, 512) < 0)
                return -errno;
        *ret = TAKE_FD(fd);
        return 0;
}

int nsr_relay_child_setup(nsr_relay *r, nsr_error *err) {
        r->sock[0] = safe_close(r->sock[0]);
        r->timerfd = safe_close(r->timerfd);
        r->nl_fd = safe_close(r->nl_fd);
        int fds[MAX_LISTENERS];
        char kinds[MAX_LISTENERS];
        size_t n = 0;
        int k = listen_on(AF_INET, "127.0.0.1", NSR_EGRESS_HTTP_PORT, &fds[n]);
        if (k < 0)
                return nsr_error_set(err, -k, "egress relay: cannot listen on 127.0.0.1:%d", NSR_EGRESS_HTTP_PORT);
        kinds[n++] = 'h';
        k = listen_on(AF_INET, "127.0.0.1", NSR_EGRESS_SOCKS_PORT, &fds[n]);
        if (k < 0) {
                close(fds[0]);
                return nsr_error_set(err, -k, "egress relay: cannot listen on 127.0.0.1:%d", NSR_EGRESS_SOCKS_PORT);
        }
        kinds[n++] = 's';
        /* IPv6 loopback only where the kernel gave lo ::1. */
        if (listen_on(AF_INET6, "::1", NSR_EGRESS_HTTP_PORT, &fds[n]) == 0)
                kinds[n++] = 'h';
        if (n == 3 && listen_on(AF_INET6, "::1", NSR_EGRESS_SOCKS_PORT, &fds[n]) == 0)
                kinds[n++] = 's';

        struct iovec iov = { .iov_base = kinds, .iov_len = n };
        int s = nsr_sockmsg_send(r->sock[1], &iov, 1, fds, n);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        r->sock[1] = safe_close(r->sock[1]);
        if (s < 0)
                return nsr_error_set(err, -s, "egress relay: cannot pass the listening sockets to the monitor");
        return 0;
}

static void env_set(char ***env, const char *name, const char *value) {
        size_t l = strlen(name);
        char *entry = nsr_asprintf("%s=%s", name, value);
        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=') {
                        free(*e);
                        *e = entry;
                        return;
                }
        nsr_strv_push(env, entry);
}

void nsr_relay_env(char ***env) {
        nsr_relay_env_ports(env, NSR_EGRESS_HTTP_PORT, NSR_EGRESS_SOCKS_PORT);
}

int nsr_relay_listen_host(nsr_relay *r, uint16_t *ret_http, uint16_t *ret_socks, nsr_error *err) {
        /* No child sends sockets: the control channel is not needed. */
        (void) ep_set(r, &r->h_control, 0);
        r->sock[0] = safe_close(r->sock[0]);
        r->sock[1] = safe_close(r->sock[1]);
        r->h_control.fd = -1;
        uint16_t ports[2];
        for (int i = 0; i < 2; i++) {
                int fd = -1;
                int k = listen_on(AF_INET, "127.0.0.1", 0, &fd);
                if (k < 0)
                        return nsr_error_set(err, -k, "egress relay: cannot listen on 127.0.0.1");
                struct sockaddr_in sa;
                socklen_t len = sizeof(sa);
                if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0) {
                        k = -errno;
                        close(fd);
                        return nsr_error_set(err, -k, "egress relay: getsockname");
                }
                ports[i] = ntohs(sa.sin_port);
                (void) fcntl(fd, F_SETFL, O_NONBLOCK);
                handle *h = &r->listeners[r->n_listeners++];
                *h = (handle){ .kind = i == 0 ? H_LISTEN_HTTP : H_LISTEN_SOCKS, .fd = fd };
                if (ep_set(r, h, EPOLLIN) < 0)
                        return nsr_error_set(err, errno, "egress relay: epoll_ctl");
        }
        *ret_http = ports[0];
        *ret_socks = ports[1];
        return 0;
}

/* Best-effort mode, with --allow-host: sockets for TCP over IPv4 and IPv6
 * only. Landlock confines TCP connects to the relay's ports but knows
 * nothing of UDP, raw, netlink or unix sockets. */
static const char fallback_policy[] = "deny socket errno EACCES if arg0 & 0xffffffff not in {AF_INET, AF_INET6}\n"
                                      "deny socket errno EACCES if arg1 & 0xf != SOCK_STREAM\n"
                                      "deny socket errno EACCES if arg2 & 0xffffffff not in {0, 6}\n";

int nsr_relay_fallback_bpf(char **ret_data, size_t *ret_len, nsr_error *err) {
        _cleanup_fclose_ FILE *f = fmemopen((void *) fallback_policy, sizeof(fallback_policy) - 1, "r");
        if (!f)
                return nsr_error_set(err, errno, "fmemopen");
        _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
        int r = nsr_policy_parse(f, "(best-effort --allow-host filter)", NULL, &p, err);
        if (r < 0)
                return r;
        return nsr_seccomp_compile(p, ret_data, ret_len, err);
}

void nsr_relay_env_ports(char ***env, uint16_t http_port, uint16_t socks_port) {
        char http[64], socks[64];
        snprintf(http, sizeof(http), "http://127.0.0.1:%u", (unsigned) http_port);
        snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%u", (unsigned) socks_port);
        static const char *const no_proxy = "localhost,127.0.0.1,::1";
        env_set(env, "HTTP_PROXY", http);
        env_set(env, "HTTPS_PROXY", http);
        env_set(env, "ALL_PROXY", socks);
        env_set(env, "NO_PROXY", no_proxy);
        env_set(env, "http_proxy", http);
        env_set(env, "https_proxy", http);
        env_set(env, "all_proxy", socks);
        env_set(env, "no_proxy", no_proxy);
}
