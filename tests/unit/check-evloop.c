/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base/evloop: the one epoll loop: callbacks with their data, deletion in
 * the middle of a batch, post hooks, no slot limit, regular files and one
 * fd registered twice, the stop flag. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/evloop.h"
#include "base/util.h"
#include "unit.h"

typedef struct counter {
        int calls;
        uint32_t last;
        nsr_evsrc *kill; /* deleted by this callback */
        nsr_evloop *stop;
} counter;

static void count_cb(nsr_evsrc *s, int fd, uint32_t revents, void *data) {
        (void) s;
        (void) fd;
        counter *c = data;
        c->calls++;
        c->last = revents;
        if (c->kill)
                c->kill = nsr_evloop_del(c->kill);
        if (c->stop)
                nsr_evloop_stop(c->stop);
}

START_TEST(test_basic) {
        _cleanup_(nsr_evloop_freep) nsr_evloop *l = NULL;
        ck_assert_int_eq(nsr_evloop_new(&l), 0);
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        counter rd = { 0 }, wr = { 0 };
        nsr_evsrc *srd = NULL, *swr = NULL;
        ck_assert_int_eq(nsr_evloop_add(l, p[0], EPOLLIN, count_cb, &rd, &srd), 0);
        ck_assert_int_eq(nsr_evloop_add(l, p[1], 0, count_cb, &wr, &swr), 0);
        /* Nothing to read, nothing asked of the write end: a timeout. */
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(rd.calls + wr.calls, 0);
        /* Asked for POLLOUT: ready at once. */
        ck_assert_int_eq(nsr_evloop_mod(swr, EPOLLOUT), 0);
        ck_assert_uint_eq(nsr_evloop_events(swr), EPOLLOUT);
        ck_assert_int_eq(nsr_evloop_run_once(l, -1), 1);
        ck_assert_int_eq(wr.calls, 1);
        ck_assert(wr.last & EPOLLOUT);
        ck_assert_int_eq(nsr_evloop_mod(swr, 0), 0);
        ck_assert_int_eq(write(p[1], "x", 1), 1);
        ck_assert_int_eq(nsr_evloop_run_once(l, -1), 1);
        ck_assert_int_eq(rd.calls, 1);
        ck_assert(rd.last & EPOLLIN);
        /* Level-triggered: unread data comes again. */
        ck_assert_int_eq(nsr_evloop_run_once(l, 0), 1);
        ck_assert_int_eq(rd.calls, 2);
        /* Deleted: never called again, even with data waiting. */
        srd = nsr_evloop_del(srd);
        ck_assert_ptr_null(srd);
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(rd.calls, 2);
        ck_assert_ptr_null(nsr_evloop_del(NULL));
        ck_assert_int_eq(nsr_evloop_add(l, -1, EPOLLIN, count_cb, &rd, NULL), -EBADF);
        close(p[0]);
        close(p[1]);
}
END_TEST

/* Two sources ready in one batch; the first deletes the second, whose
 * callback must not run (its memory stays valid until the batch ends). */
START_TEST(test_delete_in_batch) {
        _cleanup_(nsr_evloop_freep) nsr_evloop *l = NULL;
        ck_assert_int_eq(nsr_evloop_new(&l), 0);
        int a[2], b[2];
        ck_assert_int_eq(pipe2(a, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(b, O_CLOEXEC), 0);
        ck_assert_int_eq(write(a[1], "x", 1), 1);
        ck_assert_int_eq(write(b[1], "x", 1), 1);
        counter ca = { 0 }, cb = { 0 };
        nsr_evsrc *sa = NULL, *sb = NULL;
        ck_assert_int_eq(nsr_evloop_add(l, a[0], EPOLLIN, count_cb, &ca, &sa), 0);
        ck_assert_int_eq(nsr_evloop_add(l, b[0], EPOLLIN, count_cb, &cb, &sb), 0);
        ca.kill = sb;
        cb.kill = sa;
        ck_assert_int_eq(nsr_evloop_run_once(l, -1), 1);
        ck_assert_int_eq(ca.calls + cb.calls, 1);
        /* The survivor is called again (its data is still there), the
         * deleted one never. */
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 1);
        ck_assert_int_eq(ca.calls + cb.calls, 2);
        ck_assert(ca.calls == 0 || cb.calls == 0);
        for (int i = 0; i < 2; i++) {
                close(a[i]);
                close(b[i]);
        }
}
END_TEST

static void once_cb(nsr_evsrc *s, int fd, uint32_t revents, void *data) {
        (void) fd;
        (void) revents;
        (*(int *) data)++;
        nsr_evloop_del(s);
}

static void post_cb(void *data) {
        (*(int *) data)++;
}

START_TEST(test_post_and_stop) {
        _cleanup_(nsr_evloop_freep) nsr_evloop *l = NULL;
        ck_assert_int_eq(nsr_evloop_new(&l), 0);
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        int posts = 0;
        ck_assert_int_eq(nsr_evloop_add_post(l, post_cb, &posts), 0);
        ck_assert_int_eq(nsr_evloop_run_once(l, 0), 0);
        ck_assert_int_eq(posts, 1);
        counter c = { .stop = l };
        ck_assert_int_eq(nsr_evloop_add(l, p[1], EPOLLOUT, count_cb, &c, NULL), 0);
        ck_assert(!nsr_evloop_stopped(l));
        ck_assert_int_eq(nsr_evloop_run(l), 0);
        ck_assert(nsr_evloop_stopped(l));
        ck_assert_int_eq(c.calls, 1);
        ck_assert_int_eq(posts, 2);
        nsr_evloop_del_post(l, post_cb, &posts);
        ck_assert_int_eq(nsr_evloop_run_once(l, 0), 1);
        ck_assert_int_eq(posts, 2);
        close(p[0]);
        close(p[1]);
}
END_TEST

/* No slot limit: far more sources than the old monitor's eight, all
 * called in one round. */
START_TEST(test_many) {
        _cleanup_(nsr_evloop_freep) nsr_evloop *l = NULL;
        ck_assert_int_eq(nsr_evloop_new(&l), 0);
        enum { N = 300 };
        int fds[N][2];
        int calls = 0;
        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(pipe2(fds[i], O_CLOEXEC), 0);
                ck_assert_int_eq(nsr_evloop_add(l, fds[i][1], EPOLLOUT, once_cb, &calls, NULL), 0);
        }
        /* Each deletes itself: every one is called exactly once. */
        int got = 0, k;
        while ((k = nsr_evloop_run_once(l, 0)) > 0)
                got += k;
        ck_assert_int_eq(k, 0);
        ck_assert_int_eq(got, N);
        ck_assert_int_eq(calls, N);
        for (int i = 0; i < N; i++) {
                close(fds[i][0]);
                close(fds[i][1]);
        }
}
END_TEST

/* A regular file cannot be in an epoll set: it is always ready, while
 * it asks for events. One fd number twice (--events-fd and --net-log-fd
 * the same fd) works through the loop's own duplicate. */
START_TEST(test_file_and_twice) {
        _cleanup_(nsr_evloop_freep) nsr_evloop *l = NULL;
        ck_assert_int_eq(nsr_evloop_new(&l), 0);
        FILE *f = tmpfile();
        ck_assert_ptr_nonnull(f);
        int fd = fileno(f);
        counter c = { 0 };
        nsr_evsrc *s = NULL;
        ck_assert_int_eq(nsr_evloop_add(l, fd, 0, count_cb, &c, &s), 0);
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(nsr_evloop_mod(s, EPOLLOUT), 0);
        /* Does not wait, though the timeout is long. */
        ck_assert_int_eq(nsr_evloop_run_once(l, 60000), 1);
        ck_assert(c.last & EPOLLOUT);
        ck_assert_int_eq(nsr_evloop_mod(s, 0), 0);
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(nsr_evloop_mod(s, EPOLLOUT), 0);
        s = nsr_evloop_del(s);
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(c.calls, 1);
        fclose(f);

        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        counter c1 = { 0 }, c2 = { 0 };
        nsr_evsrc *s1 = NULL, *s2 = NULL;
        ck_assert_int_eq(nsr_evloop_add(l, p[1], EPOLLOUT, count_cb, &c1, &s1), 0);
        ck_assert_int_eq(nsr_evloop_add(l, p[1], EPOLLOUT, count_cb, &c2, &s2), 0);
        ck_assert_int_eq(nsr_evloop_run_once(l, -1), 2);
        ck_assert_int_eq(c1.calls, 1);
        ck_assert_int_eq(c2.calls, 1);
        s2 = nsr_evloop_del(s2);
        ck_assert_int_eq(nsr_evloop_run_once(l, -1), 1);
        ck_assert_int_eq(c1.calls, 2);
        ck_assert_int_eq(c2.calls, 1);
        close(p[0]);
        close(p[1]);
}
END_TEST

/* A source that asks for nothing is not called, not even for a hangup or
 * an error epoll reports whatever is asked (a reader of --events-fd gone:
 * the loop would spin). */
START_TEST(test_silent) {
        _cleanup_(nsr_evloop_freep) nsr_evloop *l = NULL;
        ck_assert_int_eq(nsr_evloop_new(&l), 0);
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        counter c = { 0 };
        nsr_evsrc *s = NULL;
        ck_assert_int_eq(nsr_evloop_add(l, p[1], 0, count_cb, &c, &s), 0);
        close(p[0]);
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(nsr_evloop_mod(s, EPOLLOUT), 0);
        ck_assert_int_eq(nsr_evloop_run_once(l, -1), 1);
        ck_assert(c.last & EPOLLERR);
        ck_assert_int_eq(nsr_evloop_mod(s, 0), 0);
        ck_assert_int_eq(nsr_evloop_run_once(l, 10), 0);
        ck_assert_int_eq(c.calls, 1);
        close(p[1]);
        /* A closed fd is refused at once, silent or not. */
        ck_assert_int_eq(nsr_evloop_add(l, p[1], 0, count_cb, &c, NULL), -EBADF);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("evloop");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_basic);
        tcase_add_test(tc, test_delete_in_batch);
        tcase_add_test(tc, test_post_and_stop);
        tcase_add_test(tc, test_many);
        tcase_add_test(tc, test_file_and_twice);
        tcase_add_test(tc, test_silent);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
