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

static Suite *suite(void) {
        Suite *s = suite_create("outq");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_pipe);
        tcase_add_test(tc, test_socket);
        tcase_add_test(tc, test_reader_gone);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
