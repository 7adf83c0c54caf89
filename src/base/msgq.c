/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bounded, non-blocking queue of socket messages (msgq.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/msgq.h"
#include "base/util.h"

#define MSGQ_DEFAULT_MAX 64

void nsr_msgq_init(nsr_msgq *q, int sock, size_t max) {
        *q = (nsr_msgq){ .sock = sock, .max = max ? max : MSGQ_DEFAULT_MAX };
}

static void msg_free(nsr_msgq_msg *m) {
        free(m->data);
        for (size_t i = 0; i < m->n_fds; i++)
                safe_close(m->fds[i]);
        *m = (nsr_msgq_msg){ 0 };
}

static void drain(nsr_msgq *q) {
        for (size_t i = 0; i < q->n; i++)
                msg_free(&q->msgs[(q->head + i) % q->max]);
        q->head = q->n = 0;
}

void nsr_msgq_done(nsr_msgq *q) {
        drain(q);
        free(q->msgs);
        q->msgs = NULL;
}

static int end(nsr_msgq *q, int e) {
        q->error = e;
        drain(q);
        return -e;
}

static int try_send(nsr_msgq *q, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds) {
        return nsr_sockmsg_send_flags(q->sock, iov, n_iov, fds, n_fds, MSG_DONTWAIT);
}

int nsr_msgq_flush(nsr_msgq *q) {
        if (q->error)
                return -q->error;
        while (q->n > 0) {
                nsr_msgq_msg *m = &q->msgs[q->head];
                struct iovec iov = { .iov_base = m->data, .iov_len = m->len };
                int r = try_send(q, &iov, 1, m->fds, m->n_fds);
                if (r == -EAGAIN || r == -ENOBUFS)
                        return 0;
                if (r < 0)
                        return end(q, -r);
                msg_free(m);
                q->head = (q->head + 1) % q->max;
                q->n--;
        }
        q->head = 0;
        return 0;
}

static int enqueue(nsr_msgq *q, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds) {
        if (q->n >= q->max)
                return end(q, ENOBUFS);
        if (!q->msgs)
                q->msgs = nsr_malloc0(q->max * sizeof(*q->msgs));
        nsr_msgq_msg *m = &q->msgs[(q->head + q->n) % q->max];
        *m = (nsr_msgq_msg){ 0 };
        for (size_t i = 0; i < n_iov; i++)
                m->len += iov[i].iov_len;
        m->data = nsr_malloc0(m->len ? m->len : 1);
        size_t at = 0;
        for (size_t i = 0; i < n_iov; i++) {
                if (iov[i].iov_len)
                        memcpy(m->data + at, iov[i].iov_base, iov[i].iov_len);
                at += iov[i].iov_len;
        }
        for (size_t i = 0; i < n_fds; i++) {
                int d = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
                if (d < 0) {
                        int e = errno;
                        msg_free(m);
                        return end(q, e);
                }
                m->fds[m->n_fds++] = d;
        }
        q->n++;
        return 0;
}

int nsr_msgq_send(nsr_msgq *q, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds) {
        if (q->error)
                return -q->error;
        if (n_fds > NSR_SOCKMSG_FDS_MAX)
                return -EMSGSIZE;
        if (q->n == 0) {
                int r = try_send(q, iov, n_iov, fds, n_fds);
                if (r == 0)
                        return 0;
                /* ENOBUFS on a unix socket: no room for now, as EAGAIN. */
                if (r != -EAGAIN && r != -ENOBUFS)
                        return end(q, -r);
        }
        return enqueue(q, iov, n_iov, fds, n_fds);
}

bool nsr_msgq_pending(const nsr_msgq *q) {
        return !q->error && q->n > 0;
}
