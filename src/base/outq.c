/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bounded, non-blocking line queue for caller fds (outq.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/evloop.h"
#include "base/outq.h"
#include "base/util.h"

void nsr_outq_init(nsr_outq *q, int fd, size_t cap, const char *note_fmt) {
        *q = (nsr_outq){ .fd = fd, .cap = cap ? cap : NSR_OUTQ_DEFAULT_CAP, .note_fmt = note_fmt };
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0)
                q->sock = S_ISSOCK(st.st_mode);
}

void nsr_outq_done(nsr_outq *q) {
        free(q->buf);
        free(q->ends);
        q->buf = NULL;
        q->ends = NULL;
        q->off = q->len = q->n_ends = q->cap_ends = 0;
}

bool nsr_outq_pending(const nsr_outq *q) {
        return q->fd >= 0 && !q->dead && q->len > 0;
}

/* Everything queued is lost: counted. */
static void die(nsr_outq *q) {
        q->dead = true;
        q->dropped += q->n_ends;
        q->len = q->off = q->n_ends = 0;
}

/* One write of at most n bytes that cannot block: > 0, 0 (not now), or
 * -errno. */
static ssize_t write_some(nsr_outq *q, const char *p, size_t n) {
        ssize_t k;
        if (q->sock) {
                do
                        k = send(q->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
                while (k < 0 && errno == EINTR);
        } else {
                struct pollfd pf = { .fd = q->fd, .events = POLLOUT };
                int r;
                do
                        r = poll(&pf, 1, 0);
                while (r < 0 && errno == EINTR);
                if (r <= 0)
                        return r < 0 ? -errno : 0;
                if (pf.revents & (POLLERR | POLLNVAL))
                        return -EPIPE;
                if (!(pf.revents & POLLOUT))
                        return 0;
                /* Writable means room for PIPE_BUF on a pipe: more might
                 * block. */
                if (n > PIPE_BUF)
                        n = PIPE_BUF;
                /* A reader that went away must not kill the monitor with
                 * SIGPIPE: blocked for the write, and what the write
                 * raised is taken back; EPIPE ends the queue. */
                sigset_t pipe_set, old;
                sigemptyset(&pipe_set);
                sigaddset(&pipe_set, SIGPIPE);
                pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
                do
                        k = write(q->fd, p, n);
                while (k < 0 && errno == EINTR);
                int e = errno;
                if (k < 0 && e == EPIPE) {
                        struct timespec zero = { 0 };
                        (void) sigtimedwait(&pipe_set, NULL, &zero);
                }
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                errno = e;
        }
        if (k < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
        return k;
}

void nsr_outq_flush(nsr_outq *q) {
        while (q->fd >= 0 && !q->dead && q->len > 0) {
                /* The first line, or what is left of it. */
                size_t first = q->ends[0];
                ssize_t k = write_some(q, q->buf + q->off, first);
                if (k == 0)
                        return;
                if (k < 0) {
                        q->error = (int) -k;
                        die(q);
                        return;
                }
                q->off += (size_t) k;
                q->len -= (size_t) k;
                for (size_t i = 0; i < q->n_ends; i++)
                        q->ends[i] -= (size_t) k;
                if (q->ends[0] == 0) {
                        memmove(q->ends, q->ends + 1, (q->n_ends - 1) * sizeof(*q->ends));
                        q->n_ends--;
                }
        }
        if (q->len == 0)
                q->off = 0;
}

/* Appends a whole line if it fits. */
static bool append(nsr_outq *q, const char *line, size_t len) {
        if (len > q->cap - q->len)
                return false;
        if (!q->buf)
                q->buf = nsr_malloc0(q->cap);
        if (q->off + q->len + len > q->cap) {
                memmove(q->buf, q->buf + q->off, q->len);
                q->off = 0;
        }
        memcpy(q->buf + q->off + q->len, line, len);
        q->len += len;
        if (q->n_ends == q->cap_ends) {
                q->cap_ends = q->cap_ends ? q->cap_ends * 2 : 64;
                q->ends = nsr_realloc_array(q->ends, q->cap_ends, sizeof(*q->ends));
        }
        q->ends[q->n_ends++] = q->len;
        return true;
}

void nsr_outq_put(nsr_outq *q, const char *line, size_t len) {
        if (q->fd < 0 || len == 0)
                return;
        if (q->dead) {
                q->dropped++;
                return;
        }
        nsr_outq_flush(q);
        if (q->unnoted && q->note_fmt) {
                char note[96];
                int n = snprintf(note, sizeof(note), "%s%llu}\n", q->note_fmt, (unsigned long long) q->unnoted);
                if (n > 0 && (size_t) n < sizeof(note) && append(q, note, (size_t) n))
                        q->unnoted = 0;
        }
        if (q->unnoted || !append(q, line, len)) {
                q->unnoted++;
                q->dropped++;
                return;
        }
        nsr_outq_flush(q);
}

static long long now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void nsr_outq_finish(nsr_outq *q, int timeout_ms) {
        long long end = now_ms() + timeout_ms;
        nsr_outq_flush(q);
        while (nsr_outq_pending(q)) {
                long long left = end - now_ms();
                if (left <= 0)
                        break;
                struct pollfd pf = { .fd = q->fd, .events = POLLOUT };
                if (poll(&pf, 1, (int) (left > 100 ? 100 : left)) < 0 && errno != EINTR)
                        break;
                nsr_outq_flush(q);
        }
        if (nsr_outq_pending(q)) {
                q->dropped += q->n_ends;
                q->len = q->off = q->n_ends = 0;
        }
        q->dead = true;
}

static void outq_ready(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        (void) s;
        (void) fd;
        (void) ev;
        nsr_outq_flush(data);
}

static void outq_arm(void *data) {
        nsr_outq *q = data;
        if (q->src)
                (void) nsr_evloop_mod(q->src, nsr_outq_pending(q) ? EPOLLOUT : 0);
}

int nsr_outq_watch(nsr_outq *q, nsr_evloop *loop) {
        if (q->fd < 0)
                return 0;
        int r = nsr_evloop_add(loop, q->fd, 0, outq_ready, q, &q->src);
        if (r < 0)
                return r;
        return nsr_evloop_add_post(loop, outq_arm, q);
}
