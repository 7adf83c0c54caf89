/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Run control's pure parts: durations, --rlimit, --cpu, the defaults; and
 * the refused-call record's BPF interpreter, listener rewrite and counts. */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "cli/runctl.h"
#include "seccomp/compile.h"
#include "seccomp/refused.h"
#include "unit.h"

START_TEST(test_duration) {
        static const struct {
                const char *in;
                uint64_t ms;
        } good[] = {
                { "90", 90000 },    { "90s", 90000 },  { "1.5s", 1500 },  { "1.5", 1500 },     { "0.25s", 250 },
                { "500ms", 500 },   { "5m", 300000 },  { "1h", 3600000 }, { "2d", 172800000 }, { "0", 0 },
                { "1.005s", 1005 }, { "0.5m", 30000 }, { "1.500", 1500 },
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                uint64_t ms = 1;
                ck_assert_msg(nsr_parse_duration(good[i].in, &ms) == 0, "%s", good[i].in);
                ck_assert_msg(ms == good[i].ms, "%s: %ju", good[i].in, (uintmax_t) ms);
        }
        static const char *const bad[] = { "",      "s",   "1x",  "-1",   "1.",  ".5", "1.0001s",
                                           "1.5ms", "1 s", "1ss", "0x10", "1e3", "abc" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint64_t ms = 7;
                ck_assert_msg(nsr_parse_duration(bad[i], &ms) == -EINVAL, "%s", bad[i]);
                ck_assert_int_eq(ms, 7);
        }
        uint64_t ms;
        ck_assert_int_eq(nsr_parse_duration("367d", &ms), -ERANGE);
        ck_assert_int_eq(nsr_parse_duration("99999999999999999999", &ms), -ERANGE);
        ck_assert_int_eq(nsr_parse_duration("366d", &ms), 0);
}
END_TEST

START_TEST(test_duration_format) {
        char b[32];
        ck_assert_str_eq(nsr_format_duration(90000, b, sizeof(b)), "90s");
        ck_assert_str_eq(nsr_format_duration(1500, b, sizeof(b)), "1.5s");
        ck_assert_str_eq(nsr_format_duration(1005, b, sizeof(b)), "1.005s");
        ck_assert_str_eq(nsr_format_duration(300, b, sizeof(b)), "300ms");
        ck_assert_str_eq(nsr_format_duration(300000, b, sizeof(b)), "5m");
        ck_assert_str_eq(nsr_format_duration(7200000, b, sizeof(b)), "2h");
        ck_assert_str_eq(nsr_format_duration(0, b, sizeof(b)), "0s");
        /* what it prints parses back */
        for (uint64_t v = 1; v < 200000000; v = v * 3 + 7) {
                uint64_t back = 0;
                ck_assert_int_eq(nsr_parse_duration(nsr_format_duration(v, b, sizeof(b)), &back), 0);
                ck_assert_msg(back == v, "%ju -> %s -> %ju", (uintmax_t) v, b, (uintmax_t) back);
        }
}
END_TEST

START_TEST(test_rlimit_names) {
        static const char *const prlimit[] = { "AS",      "CORE",     "CPU",        "DATA",   "FSIZE", "LOCKS",
                                               "MEMLOCK", "MSGQUEUE", "NICE",       "NOFILE", "NPROC", "RSS",
                                               "RTPRIO",  "RTTIME",   "SIGPENDING", "STACK" };
        ck_assert_int_eq(ELEMENTSOF(prlimit), _NSR_RLIMIT_MAX);
        for (size_t i = 0; i < ELEMENTSOF(prlimit); i++) {
                nsr_rlimit_id id = nsr_rlimit_from_name(prlimit[i]);
                ck_assert_msg(id >= 0, "%s", prlimit[i]);
                ck_assert_int_ge(nsr_rlimit_resource(id), 0);
                ck_assert_int_eq(nsr_rlimit_from_name(nsr_rlimit_name(id)), id);
        }
        ck_assert_int_eq(nsr_rlimit_resource(nsr_rlimit_from_name("nofile")), RLIMIT_NOFILE);
        ck_assert_int_eq(nsr_rlimit_resource(nsr_rlimit_from_name("NProc")), RLIMIT_NPROC);
        ck_assert_int_eq(nsr_rlimit_from_name("files"), _NSR_RLIMIT_INVALID);
        ck_assert_int_eq(nsr_rlimit_from_name(""), _NSR_RLIMIT_INVALID);
}
END_TEST

START_TEST(test_rlimit_parse) {
        nsr_error err = { 0 };
        nsr_rlimit_id id;
        nsr_rlimit_spec s;
        ck_assert_int_eq(nsr_parse_rlimit("nofile=1024", &id, &s, &err), 0);
        ck_assert_int_eq(id, NSR_RLIMIT_NOFILE);
        ck_assert(s.has_soft && s.has_hard && s.soft == 1024 && s.hard == 1024 && !s.clamp);
        ck_assert_int_eq(nsr_parse_rlimit("NOFILE=100:200", &id, &s, &err), 0);
        ck_assert(s.soft == 100 && s.hard == 200);
        ck_assert_int_eq(nsr_parse_rlimit("stack=8M:unlimited", &id, &s, &err), 0);
        ck_assert(id == NSR_RLIMIT_STACK && s.soft == 8u << 20 && s.hard == NSR_RLIM_INFINITY);
        ck_assert_int_eq(nsr_parse_rlimit("core=0", &id, &s, &err), 0);
        ck_assert(s.has_soft && s.soft == 0 && s.hard == 0);
        ck_assert_int_eq(nsr_parse_rlimit("as=1G:", &id, &s, &err), 0);
        ck_assert(s.has_soft && !s.has_hard && s.soft == 1u << 30);
        ck_assert_int_eq(nsr_parse_rlimit("cpu=:60", &id, &s, &err), 0);
        ck_assert(!s.has_soft && s.has_hard && s.hard == 60);
        ck_assert_int_eq(nsr_parse_rlimit("memlock=Infinity", &id, &s, &err), 0);
        ck_assert(s.soft == NSR_RLIM_INFINITY && s.hard == NSR_RLIM_INFINITY);

        static const char *const bad[] = { "nofile",
                                           "nofile=",
                                           "nofile=:",
                                           "files=1",
                                           "nofile=x",
                                           "nofile=1:x",
                                           "nofile=-1",
                                           "nofile=20:10",
                                           "=5",
                                           "nofile=1:2:3",
                                           "nofile=18446744073709551615" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                nsr_error e = { 0 };
                ck_assert_msg(nsr_parse_rlimit(bad[i], &id, &s, &e) == -EINVAL, "%s", bad[i]);
                ck_assert_msg(e.msg[0], "%s: no message", bad[i]);
        }
        nsr_error e = { 0 };
        nsr_parse_rlimit("bogus=1", &id, &s, &e);
        ck_assert_msg(strstr(e.msg, "known: as, core, cpu, data"), "%s", e.msg);
}
END_TEST

START_TEST(test_cpu) {
        uint64_t m = 0;
        ck_assert_int_eq(nsr_parse_cpu("1.5", &m), 0);
        ck_assert_int_eq(m, 1500);
        ck_assert_int_eq(nsr_parse_cpu("2", &m), 0);
        ck_assert_int_eq(m, 2000);
        ck_assert_int_eq(nsr_parse_cpu("50%", &m), 0);
        ck_assert_int_eq(m, 500);
        ck_assert_int_eq(nsr_parse_cpu("0.01", &m), 0);
        ck_assert_int_eq(m, 10);
        ck_assert_int_eq(nsr_parse_cpu("0", &m), -ERANGE);
        ck_assert_int_eq(nsr_parse_cpu("0.001", &m), -ERANGE);
        ck_assert_int_eq(nsr_parse_cpu("1.5x", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_cpu("", &m), -EINVAL);
}
END_TEST

START_TEST(test_defaults_merge) {
        nsr_runctl rc = { 0 };
        rc.rlim[NSR_RLIMIT_NOFILE] = (nsr_rlimit_spec){ .has_soft = true, .has_hard = true, .soft = 9, .hard = 9 };
        nsr_runctl_project_defaults(&rc);
        ck_assert(rc.rlim[NSR_RLIMIT_CORE].has_hard && rc.rlim[NSR_RLIMIT_CORE].hard == 0);
        ck_assert_int_eq(rc.rlim[NSR_RLIMIT_NOFILE].soft, 9); /* the caller's stays */
        ck_assert_int_eq(rc.pids, NSR_PIDS_DEFAULT);
        ck_assert(!rc.pids_explicit);
        ck_assert_int_eq(rc.kill_after_ms, NSR_KILL_AFTER_DEFAULT_MS);

        nsr_runctl user = { .pids = 10, .pids_explicit = true, .timeout_ms = 5 };
        user.rlim[NSR_RLIMIT_CORE] = (nsr_rlimit_spec){ .has_soft = true, .soft = 100 };
        nsr_runctl_merge(&rc, &user);
        ck_assert_int_eq(rc.pids, 10);
        ck_assert(rc.pids_explicit);
        ck_assert_int_eq(rc.timeout_ms, 5);
        ck_assert_int_eq(rc.rlim[NSR_RLIMIT_CORE].soft, 100);
        ck_assert(!rc.rlim[NSR_RLIMIT_CORE].has_hard);
        ck_assert_int_ge(nsr_tmp_size_default(), NSR_TMP_SIZE_MIN);

        _cleanup_strv_free_ char **d = nsr_runctl_describe(&rc);
        ck_assert_str_eq(d[0], "--timeout 5ms: then SIGTERM to every process of the sandbox, SIGKILL 5s later; exit "
                               "status 124");
}
END_TEST

START_TEST(test_host_bounds) {
        nsr_host_bounds hb = { .pid_max = 32768, .ram = UINT64_C(1) << 30 };
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++)
                hb.hard[i] = NSR_RLIM_INFINITY;
        hb.hard[NSR_RLIMIT_NOFILE] = 1024;
        nsr_error err = { 0 };
        nsr_runctl rc = { .pids = 32768, .tmp_size = UINT64_C(1) << 30, .memory = 4096 };
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--pids", _NSR_RLIMIT_INVALID, &hb, &err), 0);
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--tmp-size", _NSR_RLIMIT_INVALID, &hb, &err), 0);
        rc.pids = 32769;
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--pids", _NSR_RLIMIT_INVALID, &hb, &err), -ERANGE);
        ck_assert_msg(strstr(err.msg, "--pids 32769 is above 32768, this host's pid_max"), "%s", err.msg);
        /* only the option named is checked */
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--memory", _NSR_RLIMIT_INVALID, &hb, &err), 0);
        rc.tmp_size = rc.memory = (UINT64_C(1) << 30) + 1;
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--tmp-size", _NSR_RLIMIT_INVALID, &hb, &err), -ERANGE);
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--memory", _NSR_RLIMIT_INVALID, &hb, &err), -ERANGE);
        ck_assert_msg(strstr(err.msg, "the bytes of RAM"), "%s", err.msg);

        rc.rlim[NSR_RLIMIT_NOFILE] = (nsr_rlimit_spec){ .has_soft = true, .has_hard = true, .soft = 10, .hard = 1024 };
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--rlimit", NSR_RLIMIT_NOFILE, &hb, &err), 0);
        rc.rlim[NSR_RLIMIT_NOFILE].hard = 1025;
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--rlimit", NSR_RLIMIT_NOFILE, &hb, &err), -ERANGE);
        ck_assert_msg(strstr(err.msg, "--rlimit nofile: 1025 is above your hard limit (1024)"), "%s", err.msg);
        rc.rlim[NSR_RLIMIT_NOFILE] = (nsr_rlimit_spec){ .has_soft = true, .soft = NSR_RLIM_INFINITY };
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--rlimit", NSR_RLIMIT_NOFILE, &hb, &err), -ERANGE);
        ck_assert_msg(strstr(err.msg, "unlimited is above"), "%s", err.msg);
        /* an unlimited hard limit bounds nothing */
        rc.rlim[NSR_RLIMIT_STACK] = (nsr_rlimit_spec){ .has_hard = true, .hard = NSR_RLIM_INFINITY };
        ck_assert_int_eq(nsr_runctl_check_host(&rc, "--rlimit", NSR_RLIMIT_STACK, &hb, &err), 0);

        nsr_host_bounds real;
        nsr_host_bounds_detect(&real);
        ck_assert_uint_gt(real.pid_max, 0);
        ck_assert_uint_gt(real.ram, 0);
}
END_TEST

START_TEST(test_effective_rlimit) {
        nsr_runctl rc = { 0 };
        uint64_t soft, hard;
        nsr_runctl_effective_rlimit(&rc, NSR_RLIMIT_CORE, &soft, &hard);
        ck_assert_uint_eq(soft, 0);
        ck_assert_uint_eq(hard, 0);
        nsr_runctl_effective_rlimit(&rc, NSR_RLIMIT_NOFILE, &soft, &hard);
        ck_assert_uint_le(soft, NSR_NOFILE_DEFAULT_SOFT);
        ck_assert_uint_le(hard, NSR_NOFILE_DEFAULT_HARD);
        nsr_runctl_effective_rlimit(&rc, NSR_RLIMIT_NPROC, &soft, &hard);
        ck_assert_uint_eq(soft, NSR_PIDS_DEFAULT);
        rc.rlim[NSR_RLIMIT_FSIZE] = (nsr_rlimit_spec){ .has_soft = true, .has_hard = true, .soft = 5, .hard = 7 };
        nsr_runctl_effective_rlimit(&rc, NSR_RLIMIT_FSIZE, &soft, &hard);
        ck_assert_uint_eq(soft, 5);
        ck_assert_uint_eq(hard, 7);
}
END_TEST

/* ---- the refused-call record --------------------------------------------- */

static void load_default(char **data, size_t *len) {
        const char *src = getenv("NSR_SRCDIR");
        setenv("NSRUN_DATADIR", src ? src : ".", 1);
        setenv("XDG_CACHE_HOME", "/nonexistent-nsrun-unit", 1);
        nsr_error err = { 0 };
        int r = nsr_seccomp_policy_bpf("default", data, len, &err);
        ck_assert_msg(r == 0, "%s", err.msg);
}

static uint32_t run(const char *data, size_t len, int nr, uint64_t a0) {
        struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64, .args = { a0 } };
        return nsr_bpf_run((const struct sock_filter *) data, len / sizeof(struct sock_filter), &d);
}

START_TEST(test_bpf_interpreter) {
#if defined(__x86_64__) && !defined(__ILP32__)
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        load_default(&data, &len);
        ck_assert_uint_eq(run(data, len, SYS_read, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(run(data, len, SYS_mount, 0), SECCOMP_RET_ERRNO | EPERM);
        ck_assert_uint_eq(run(data, len, SYS_keyctl, 0), SECCOMP_RET_ERRNO | ENOSYS);
        ck_assert_uint_eq(run(data, len, SYS_socket, 17 /* AF_PACKET */), SECCOMP_RET_ERRNO | EAFNOSUPPORT);
        ck_assert_uint_eq(run(data, len, SYS_socket, 2 /* AF_INET */), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(run(data, len, SYS_unshare, 0x10000000), SECCOMP_RET_ERRNO | EPERM);
        ck_assert_uint_eq(run(data, len, SYS_unshare, 0x20000), SECCOMP_RET_ALLOW);
        /* An arch the filter does not know is killed. */
        struct seccomp_data d = { .nr = SYS_read, .arch = 0x1234 };
        ck_assert_uint_eq(nsr_bpf_run((const struct sock_filter *) data, len / 8, &d), SECCOMP_RET_KILL_PROCESS);
#endif
        /* Malformed programs: out-of-range loads, running off the end. */
        struct sock_filter bad1[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64) };
        struct sock_filter bad2[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0) };
        struct sock_filter memx[] = { BPF_STMT(BPF_LD | BPF_IMM, 7),          BPF_STMT(BPF_ST, 3),
                                      BPF_STMT(BPF_LDX | BPF_MEM, 3),         BPF_STMT(BPF_MISC | BPF_TXA, 0),
                                      BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1), BPF_STMT(BPF_RET | BPF_A, 0) };
        struct seccomp_data z = { 0 };
        ck_assert_uint_eq(nsr_bpf_run(bad1, 1, &z), SECCOMP_RET_KILL_PROCESS);
        ck_assert_uint_eq(nsr_bpf_run(bad2, 1, &z), SECCOMP_RET_KILL_PROCESS);
        ck_assert_uint_eq(nsr_bpf_run(memx, ELEMENTSOF(memx), &z), 8);
}
END_TEST

START_TEST(test_notify_prog) {
#if defined(__x86_64__) && !defined(__ILP32__)
        _cleanup_free_ char *data = NULL, *np = NULL;
        size_t len = 0, nlen = 0;
        load_default(&data, &len);
        ck_assert_int_eq(nsr_refused_notify_prog(data, len, &np, &nlen), 0);
        ck_assert_uint_ge(nlen, len);
        /* Same decisions, but refusals notify; clone3's probe does not. */
        static const struct {
                int nr;
                uint64_t a0;
        } calls[] = { { SYS_read, 0 },   { SYS_mount, 0 },  { SYS_keyctl, 0 }, { SYS_socket, 17 },
                      { SYS_socket, 2 }, { SYS_openat, 0 }, { SYS_bpf, 0 },    { SYS_unshare, 0x10000000 } };
        for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                uint32_t o = run(data, len, calls[i].nr, calls[i].a0);
                uint32_t n = run(np, nlen, calls[i].nr, calls[i].a0);
                if ((o & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
                        ck_assert_msg(n == SECCOMP_RET_USER_NOTIF, "%d: %#x", calls[i].nr, n);
                else
                        ck_assert_uint_eq(n, o);
        }
        ck_assert_uint_eq(run(np, nlen, SYS_clone3, 0), SECCOMP_RET_ERRNO | ENOSYS);
#endif
        /* A program returning the accumulator cannot be rewritten. */
        struct sock_filter reta[] = { BPF_STMT(BPF_RET | BPF_A, 0) };
        char *out = NULL;
        size_t olen = 0;
        ck_assert_int_eq(nsr_refused_notify_prog((const char *) reta, sizeof(reta), &out, &olen), -EOPNOTSUPP);
        ck_assert_int_eq(nsr_refused_notify_prog("1234567", 7, &out, &olen), -EINVAL);
}
END_TEST

START_TEST(test_refused_count) {
        nsr_refused rf;
        nsr_refused_init(&rf, "12345678", 8, -1);
        ck_assert_ptr_null(nsr_refused_summary(&rf));
        nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 165, EPERM, "a");
        for (int i = 0; i < 3; i++)
                nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 101, EPERM, i ? "later" : "first");
        nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 100000, EPERM, "bad\n\"name");
        _cleanup_free_ char *s = nsr_refused_summary(&rf);
        ck_assert_str_eq(s, "ptrace x3, mount x1, syscall 100000 x1");
        ck_assert_str_eq(rf.entries[1].comm, "first");
        ck_assert_ptr_null(strchr(rf.entries[2].comm, '\n'));
        /* Bounded: a table of NSR_REFUSED_MAX_ENTRIES, the rest counted. */
        for (int i = 0; i < NSR_REFUSED_MAX_ENTRIES + 10; i++)
                nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 200000 + i, EPERM, "x");
        ck_assert_int_eq(rf.n_entries, NSR_REFUSED_MAX_ENTRIES);
        ck_assert_int_eq(rf.dropped, 13);
        _cleanup_free_ char *full = nsr_refused_summary(&rf);
        ck_assert(nsr_startswith(full, "ptrace x3, mount x1, syscall 100000 x1, syscall 200000 x1, "));
        ck_assert(nsr_endswith(full, ", 13 more"));
        nsr_refused_done(&rf);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("runctl");
        TCase *tc = tcase_create("parse");
        tcase_add_test(tc, test_duration);
        tcase_add_test(tc, test_duration_format);
        tcase_add_test(tc, test_rlimit_names);
        tcase_add_test(tc, test_rlimit_parse);
        tcase_add_test(tc, test_cpu);
        tcase_add_test(tc, test_defaults_merge);
        suite_add_tcase(s, tc);
        tc = tcase_create("refused");
        tcase_add_test(tc, test_bpf_interpreter);
        tcase_add_test(tc, test_notify_prog);
        tcase_add_test(tc, test_refused_count);
        tcase_add_test(tc, test_host_bounds);
        tcase_add_test(tc, test_effective_rlimit);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
