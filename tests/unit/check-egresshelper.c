/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sandbox/egresshelper: the monitor reads the helper's messages as
 * untrusted input. A whole, well-formed log is taken; anything else (a
 * bad bool, an enum or port out of range, a wrong size,
 * counts that cannot be, silence) leaves an empty log that says the
 * helper died. And the helper's own seccomp program: what it refuses,
 * whether compiled or taken from the cache. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/egresshelper.h"
#include "unit-bpfcache.h"
#include "unit.h"

static nsr_egress_record good_record(void) {
        nsr_egress_record r;
        memset(&r, 0, sizeof(r));
        strcpy(r.host, "example.net");
        r.port = 443;
        r.proto = NSR_EGRESS_PROTO_CONNECT;
        r.allowed = true;
        strcpy(r.address, "192.0.2.1");
        r.bytes_up = 10;
        r.bytes_down = 20;
        r.started.tv_sec = 1700000000;
        return r;
}

static void send_rec(int fd, const nsr_egress_record *r) {
        nsr_egress_msg m;
        memset(&m, 0, sizeof(m));
        m.type = NSR_EGRESS_MSG_RECORD;
        m.u.rec = *r;
        ck_assert_int_gt(send(fd, &m, offsetof(nsr_egress_msg, u) + sizeof(m.u.rec), 0), 0);
}

static void send_end(int fd, uint64_t n_records, uint64_t total, uint64_t refused) {
        nsr_egress_msg m;
        memset(&m, 0, sizeof(m));
        m.type = NSR_EGRESS_MSG_END;
        m.u.end = (nsr_egress_msg_end){ .n_records = n_records, .n_total = total, .n_refused = refused };
        ck_assert_int_gt(send(fd, &m, offsetof(nsr_egress_msg, u) + sizeof(m.u.end), 0), 0);
}

/* Sends what fill puts on one end, reads the other. */
static int read_after(void (*fill)(int), nsr_egress_log *log) {
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        fill(sv[1]);
        close(sv[1]);
        int r = nsr_egress_helper_read(sv[0], 2000, log);
        close(sv[0]);
        return r;
}

static void fill_good(int fd) {
        nsr_egress_record r = good_record();
        send_rec(fd, &r);
        r.allowed = false;
        strcpy(r.reason, "host not in --allow-host");
        send_rec(fd, &r);
        send_end(fd, 2, 5, 1);
}

START_TEST(test_good) {
        nsr_egress_log log;
        ck_assert_int_eq(read_after(fill_good, &log), 0);
        ck_assert(!log.helper_died);
        ck_assert_uint_eq(log.n_records, 2);
        ck_assert_uint_eq(log.n_total, 5);
        ck_assert_uint_eq(log.n_refused, 1);
        ck_assert_str_eq(log.records[0].host, "example.net");
        ck_assert(log.records[0].allowed);
        ck_assert(!log.records[1].allowed);
        nsr_egress_log_free(&log);
}
END_TEST

static void fill_bad_bool(int fd) {
        nsr_egress_record r = good_record();
        memset((char *) &r + offsetof(nsr_egress_record, allowed), 7, 1);
        send_rec(fd, &r);
        send_end(fd, 1, 1, 0);
}

/* The sandbox's bytes in a host name (SOCKS5 carries any): kept, for
 * the printers to escape; a string without its end is cut. */
static void fill_hostile_text(int fd) {
        nsr_egress_record r = good_record();
        strcpy(r.host, "evil\033]0;x\007");
        send_rec(fd, &r);
        r = good_record();
        memset(r.host, 'A', sizeof(r.host));
        memset(r.address, 'B', sizeof(r.address));
        send_rec(fd, &r);
        send_end(fd, 2, 2, 0);
}

START_TEST(test_hostile_text) {
        nsr_egress_log log;
        ck_assert_int_eq(read_after(fill_hostile_text, &log), 0);
        ck_assert_uint_eq(log.n_records, 2);
        ck_assert_str_eq(log.records[0].host, "evil\033]0;x\007");
        ck_assert_uint_eq(strlen(log.records[1].host), sizeof(log.records[1].host) - 1);
        ck_assert_uint_eq(strlen(log.records[1].address), sizeof(log.records[1].address) - 1);
        nsr_egress_log_free(&log);
}
END_TEST

static void fill_proto(int fd) {
        nsr_egress_record r = good_record();
        r.proto = (nsr_egress_proto) 99;
        send_rec(fd, &r);
        send_end(fd, 1, 1, 0);
}

static void fill_port(int fd) {
        nsr_egress_record r = good_record();
        r.port = 70000;
        send_rec(fd, &r);
        send_end(fd, 1, 1, 0);
}

static void fill_short(int fd) {
        nsr_egress_msg m;
        memset(&m, 0, sizeof(m));
        m.type = NSR_EGRESS_MSG_RECORD;
        ck_assert_int_gt(send(fd, &m, offsetof(nsr_egress_msg, u) + 10, 0), 0);
        send_end(fd, 1, 1, 0);
}

static void fill_counts(int fd) {
        nsr_egress_record r = good_record();
        send_rec(fd, &r);
        send_end(fd, 1, 1, 2); /* more refused than connections */
}

static void fill_count_mismatch(int fd) {
        nsr_egress_record r = good_record();
        send_rec(fd, &r);
        send_end(fd, 3, 3, 0); /* says 3 records, sent 1 */
}

static void fill_unknown(int fd) {
        nsr_egress_msg m;
        memset(&m, 0, sizeof(m));
        m.type = 9;
        ck_assert_int_gt(send(fd, &m, offsetof(nsr_egress_msg, u) + sizeof(m.u.end), 0), 0);
}

static void fill_no_end(int fd) {
        nsr_egress_record r = good_record();
        send_rec(fd, &r); /* then EOF: the helper died mid-way */
}

START_TEST(test_bad) {
        void (*bad[])(int) = { fill_bad_bool, fill_proto,          fill_port,    fill_short,
                               fill_counts,   fill_count_mismatch, fill_unknown, fill_no_end };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                nsr_egress_log log;
                ck_assert_int_eq(read_after(bad[i], &log), -EBADMSG);
                ck_assert(log.helper_died);
                ck_assert_uint_eq(log.n_records, 0);
                ck_assert_ptr_null(log.records);
                nsr_egress_log_free(&log);
        }
}
END_TEST

/* A helper that says nothing and keeps its end open: the deadline. */
START_TEST(test_silent) {
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        nsr_egress_log log;
        ck_assert_int_eq(nsr_egress_helper_read(sv[0], 100, &log), -EBADMSG);
        ck_assert(log.helper_died);
        close(sv[0]);
        close(sv[1]);
}
END_TEST

/* In a child: the program loaded as the helper loads it, then each call
 * that it must refuse, and one it must allow. The child's exit code says
 * which check failed. */
static void confined(const char *data, size_t len) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || nsr_seccomp_load(data, len) < 0)
                        _exit(10);
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        _exit(11); /* the relay's own sockets */
                close(fd);
                if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM)
                        _exit(12);
                char *const argv[] = { (char *) "/bin/true", NULL };
                if (execve("/bin/true", argv, argv + 1) == 0 || errno != EPERM)
                        _exit(13);
                /* A process, not a thread: fork's clone has no CLONE_THREAD. */
                long k = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
                if (k == 0)
                        _exit(0);
                if (k >= 0 || errno != EPERM)
                        _exit(14);
                if (syscall(SYS_ptrace, 0, 0, 0, 0) == 0 || errno != EPERM)
                        _exit(15);
                _exit(0);
        }
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st));
        ck_assert_msg(WEXITSTATUS(st) == 0, "check %d failed under the helper's program", WEXITSTATUS(st));
}

/* The program the helper loads: compiled once into the cache, then taken
 * from it, the same bytes both times; a tampered entry is compiled again.
 * Each form refuses what the helper must never do (another kind of socket,
 * execve, a new process, ptrace) and allows its own sockets. */
START_TEST(test_helper_prog) {
        size_t len = 0;
        free(bpfcache_check(nsr_egress_helper_prog, confined, &len));
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("egresshelper");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_good);
        tcase_add_test(tc, test_bad);
        tcase_add_test(tc, test_hostile_text);
        tcase_add_test(tc, test_silent);
        tcase_add_test(tc, test_helper_prog);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
