/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base/outq: the bounded, non-blocking queue for caller fds, on pipes and
 * socketpairs nobody reads, then read. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/msgq.h"
#include "base/outq.h"
#include "base/util.h"
#include "unit.h"

#define NOTE "{\"dropped\":"

/* Reads everything the pipe holds (non-blocking). */
static size_t slurp(int fd, char *buf, size_t cap) {
        int fl = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        size_t n = 0;
        ssize_t k;
        while (n < cap && (k = read(fd, buf + n, cap - n)) > 0)
                n += (size_t) k;
        fcntl(fd, F_SETFL, fl);
        return n;
}

static void fill_and_check(int rd, int wr) {
        nsr_outq q;
        nsr_outq_init(&q, wr, 4096, NOTE);
        char line[101];
        memset(line, 'x', 99);
        line[99] = '\n';
        line[100] = '\0';
        /* Far more than the pipe and the queue hold: never blocks. */
        for (int i = 0; i < 5000; i++)
                nsr_outq_put(&q, line, 100);
        ck_assert_uint_gt(q.dropped, 0);
        ck_assert(nsr_outq_pending(&q));
        uint64_t dropped = q.dropped;
        /* The reader takes everything: room again, and the next line is
         * preceded by a note. The notes add up to what was dropped, and
         * every other line arrived whole. */
        static char buf[1 << 20];
        size_t n = slurp(rd, buf, sizeof(buf));
        ck_assert_uint_gt(n, 0);
        nsr_outq_put(&q, "last\n", 5);
        nsr_outq_finish(&q, 1000);
        ck_assert_uint_eq(q.dropped, dropped);
        n += slurp(rd, buf + n, sizeof(buf) - 1 - n);
        buf[n] = '\0';
        unsigned long long noted = 0;
        size_t lines = 0;
        const char *last = NULL;
        for (char *l = buf, *e; *l; l = e + 1) {
                e = strchr(l, '\n');
                ck_assert_ptr_nonnull(e);
                *e = '\0';
                unsigned long long k;
                if (sscanf(l, NOTE "%llu}", &k) == 1)
                        noted += k;
                else if (!streq(l, "last")) {
                        ck_assert_uint_eq(strlen(l), 99);
                        lines++;
                }
                last = l;
        }
        ck_assert_str_eq(last, "last");
        ck_assert_uint_eq(noted, dropped);
        ck_assert_uint_eq(lines + noted, 5000);
        nsr_outq_done(&q);
}

START_TEST(test_pipe) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        fill_and_check(p[0], p[1]);
        close(p[0]);
        close(p[1]);
}
END_TEST

START_TEST(test_socket) {
        int s[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
        fill_and_check(s[0], s[1]);
        close(s[0]);
        close(s[1]);
}
END_TEST

START_TEST(test_reader_gone) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        close(p[0]);
        nsr_outq q;
        nsr_outq_init(&q, p[1], 0, NOTE);
        /* No SIGPIPE (the test would die), the queue ends, lines count. */
        nsr_outq_put(&q, "a\n", 2);
        nsr_outq_put(&q, "b\n", 2);
        ck_assert(q.dead);
        ck_assert_uint_eq(q.dropped, 2);
        ck_assert(!nsr_outq_pending(&q));
        nsr_outq_finish(&q, 1000);
        nsr_outq_done(&q);
        close(p[1]);

        nsr_outq none;
        nsr_outq_init(&none, -1, 0, NOTE);
        nsr_outq_put(&none, "a\n", 2);
        ck_assert_uint_eq(none.dropped, 0);
        nsr_outq_finish(&none, 10);
        nsr_outq_done(&none);
}
END_TEST

/* msgq: whole messages with their fds wait while the peer does not read,
 * go out in order, and a full queue ends it instead of blocking. */
START_TEST(test_msgq) {
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        int small = 4096;
        ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
        nsr_msgq q;
        nsr_msgq_init(&q, sv[0], 4);
        char big[2048];
        memset(big, 'x', sizeof(big));
        /* Fill the socket until a message waits. */
        size_t sent = 0;
        while (!nsr_msgq_pending(&q)) {
                big[0] = (char) sent;
                struct iovec iov = { .iov_base = big, .iov_len = sizeof(big) };
                ck_assert_int_eq(nsr_msgq_send(&q, &iov, 1, NULL, 0), 0);
                sent++;
                ck_assert_uint_lt(sent, 1000);
        }
        /* One more with an fd: it waits with a duplicate of the fd. */
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        struct iovec iov = { .iov_base = (void *) "fd", .iov_len = 2 };
        ck_assert_int_eq(nsr_msgq_send(&q, &iov, 1, &p[1], 1), 0);
        close(p[1]);
        ck_assert_uint_eq(q.n, 2);
        /* Nothing blocked; reading everything in order lets it all out. */
        char buf[4096];
        size_t got = 0;
        bool fd_seen = false;
        for (;;) {
                int fds[2] = { -1, -1 };
                nsr_sockmsg_info info;
                struct iovec r = { .iov_base = buf, .iov_len = sizeof(buf) };
                ssize_t n = nsr_sockmsg_recv(sv[1], &r, 1, MSG_DONTWAIT, fds, 2, &info);
                if (n < 0) {
                        ck_assert_int_eq(n, -EAGAIN);
                        if (!nsr_msgq_pending(&q))
                                break;
                        ck_assert_int_eq(nsr_msgq_flush(&q), 0);
                        continue;
                }
                if (n == 2) {
                        ck_assert_int_eq(memcmp(buf, "fd", 2), 0);
                        ck_assert_int_ge(fds[0], 0);
                        /* The write end came through: the pipe works. */
                        ck_assert_int_eq(write(fds[0], "z", 1), 1);
                        close(fds[0]);
                        fd_seen = true;
                        continue;
                }
                ck_assert_int_eq(n, (ssize_t) sizeof(big));
                ck_assert_int_eq(buf[0], (char) got);
                got++;
        }
        ck_assert_uint_eq(got, sent);
        ck_assert(fd_seen);
        char z;
        ck_assert_int_eq(read(p[0], &z, 1), 1);
        close(p[0]);

        /* A peer that never reads: the queue fills and ends, at once. */
        int r = 0;
        for (size_t i = 0; i < 1000 && r == 0; i++) {
                struct iovec one = { .iov_base = big, .iov_len = sizeof(big) };
                r = nsr_msgq_send(&q, &one, 1, NULL, 0);
        }
        ck_assert_int_eq(r, -ENOBUFS);
        ck_assert(!nsr_msgq_pending(&q));
        ck_assert_int_eq(nsr_msgq_flush(&q), -ENOBUFS);
        nsr_msgq_done(&q);

        /* A peer gone: the queue ends (EPIPE, or ECONNRESET with unread
         * messages), no SIGPIPE. */
        nsr_msgq_init(&q, sv[0], 4);
        close(sv[1]);
        r = nsr_msgq_send(&q, &iov, 1, NULL, 0);
        ck_assert(r == -EPIPE || r == -ECONNRESET);
        ck_assert_int_eq(nsr_msgq_send(&q, &iov, 1, NULL, 0), r);
        nsr_msgq_done(&q);
        close(sv[0]);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("outq");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_pipe);
        tcase_add_test(tc, test_socket);
        tcase_add_test(tc, test_reader_gone);
        tcase_add_test(tc, test_msgq);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
