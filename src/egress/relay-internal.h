/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What relay.c (the connections' I/O, the relay's sockets) and
 * relayconnect.c (a client's request to a connected target) share: the
 * relay and its connections, the small buffer helpers. Private to those
 * two files. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/evloop.h"
#include "base/outq.h"
#include "base/util.h"
#include "egress/proxyparse.h"
#include "egress/relay.h"
#include "egress/resolver.h"

#define MAX_CONNS        256
#define BUF_SIZE         (64 * 1024)
#define HEADER_MAX       NSR_HTTP_HEAD_MAX
#define TARGET_TIMEOUT_S 30 /* to name a target, and to connect */
#define IDLE_TIMEOUT_S   600
#define MAX_LISTENERS    4

typedef enum handle_kind {
        H_CONTROL,
        H_LISTEN_HTTP,
        H_LISTEN_SOCKS,
        H_RESOLVED,
        H_TIMER,
        H_LOG,
        H_CLIENT,
        H_UPSTREAM,
} handle_kind;

typedef struct handle {
        handle_kind kind;
        int fd;
        void *conn;
        uint32_t events;     /* wanted (registered once attached), or 0 */
        struct nsr_relay *r; /* set by ep_set */
        nsr_evsrc *src;      /* in the loop, or NULL */
} handle;

typedef enum conn_state {
        ST_HTTP_HEAD,
        ST_SOCKS_GREETING,
        ST_SOCKS_REQUEST,
        ST_RESOLVING,
        ST_CONNECTING,
        ST_RELAY,
        ST_CLOSING, /* flushing an answer to the client, then close */
} conn_state;

typedef struct buffer {
        char *data;
        size_t off, len;
} buffer;

/* Once a connection relays, bytes move socket -> pipe -> socket with
 * splice(2) and never enter user space; the buffer above only carries
 * what came before (a rewritten request head, a proxy's answer) and is
 * always sent first. Without pipes (out of fds) the buffer does it all. */
typedef struct spl {
        int fd[2];
        size_t pending, cap;
} spl;

#define PIPE_SIZE (256 * 1024)

typedef struct conn {
        struct conn *prev, *next;
        handle hc, hu;
        conn_state state;
        bool socks, has_target, c_eof, u_eof, u_shut, dead;
        bool track_body; /* HTTP: only the request's body goes up */
        nsr_http_body body;
        nsr_egress_record rec;
        nsr_egress_pattern matched;
        struct timespec mono_start;
        time_t deadline; /* CLOCK_MONOTONIC seconds */
        buffer c2u, u2c;
        spl p_c2u, p_u2c; /* fd[0] == -1: not spliced */
        nsr_resolve_req *req;
        size_t n_addrs, next_addr; /* cand: the allowed addresses to try */
        struct sockaddr_storage *cand;
} conn;

struct nsr_relay {
        const nsr_egress_rules *rules;
        nsr_outq logq; /* --net-log-fd */
        handle h_log;
        nsr_evloop *loop; /* the monitor's, once attached */
        int sock[2];      /* [0] monitor, [1] child */
        int timerfd;
        handle h_control, h_timer, h_resolved;
        handle listeners[MAX_LISTENERS];
        size_t n_listeners;
        bool listen_paused;
        nsr_resolver *pool;
        conn *head, *tail; /* oldest first */
        /* Closed during this dispatch: freed at its end, because the batch
         * of events may still name them. */
        conn *dead;
        size_t n_conns;
        nsr_egress_log log;
        nsr_egress_own own;    /* the host's own addresses */
        int nl_fd;             /* rtnetlink: tells when they change, or -1 */
        time_t target_timeout; /* TARGET_TIMEOUT_S, but for the tests */
        int resolve_delay_ms;
};

static inline time_t now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

/* relay.c: the loop's callback of every handle. */
void relay_on_handle(nsr_evsrc *s, int fd, uint32_t ev, void *data);

/* What h waits for; registered in the loop once the relay is attached
 * (before, only remembered: nsr_relay_attach registers it). A handle
 * with 0 is out of the loop, so its fd may close. Sets errno too. */
static inline int ep_set(nsr_relay *r, handle *h, uint32_t events) {
        if (h->fd < 0 || h->events == events)
                return 0;
        h->r = r;
        int k = 0;
        if (!r->loop)
                k = 0;
        else if (!events)
                h->src = nsr_evloop_del(h->src);
        else if (h->src)
                k = nsr_evloop_mod(h->src, events);
        else
                k = nsr_evloop_add(r->loop, h->fd, events, relay_on_handle, h, &h->src);
        if (k < 0) {
                errno = -k;
                return k;
        }
        h->events = events;
        return 0;
}

static inline void buf_compact(buffer *b) {
        if (b->off > 0 && b->len > 0)
                memmove(b->data, b->data + b->off, b->len);
        b->off = 0;
}

static inline void buf_put(buffer *b, const void *data, size_t len) {
        if (!b->data)
                b->data = nsr_malloc0(BUF_SIZE);
        buf_compact(b);
        if (len > BUF_SIZE - b->len)
                len = BUF_SIZE - b->len;
        memcpy(b->data + b->len, data, len);
        b->len += len;
}

static inline void consume(buffer *b, size_t n) {
        b->off += n;
        b->len -= n;
        if (b->len == 0)
                b->off = 0;
}

/* relay.c */
void relay_conn_arm(nsr_relay *r, conn *c);
void relay_conn_close(nsr_relay *r, conn *c);
void relay_own_refresh(nsr_relay *r);

/* relayconnect.c: the answers, the target, the requests. */
void relay_conn_fail(nsr_relay *r, conn *c, bool refused, const char *reason);
void relay_connected(nsr_relay *r, conn *c);
void relay_resolved(nsr_relay *r);
int relay_body_filter(conn *c, buffer *b, size_t off);
void relay_http_head(nsr_relay *r, conn *c);
void relay_socks_step(nsr_relay *r, conn *c);
