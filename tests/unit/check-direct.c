/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The decision on a transparent connect() (egress/direct.h). */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/net.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "egress/direct.h"
#include "seccomp/connect.h"
#include "seccomp/refused.h"
#include "unit-bpfcache.h"
#include "unit-egress.h"
#include "unit.h"

static nsr_direct_query query(int domain, int type, const char *addr, int port) {
        nsr_direct_query q = { .domain = domain, .type = type, .sandbox_ns = true };
        if (strchr(addr, ':')) {
                struct sockaddr_in6 *s = (struct sockaddr_in6 *) &q.addr;
                s->sin6_family = AF_INET6;
                s->sin6_port = htons((uint16_t) port);
                ck_assert_int_eq(inet_pton(AF_INET6, addr, &s->sin6_addr), 1);
                q.addr_len = sizeof(*s);
        } else {
                struct sockaddr_in *s = (struct sockaddr_in *) &q.addr;
                s->sin_family = AF_INET;
                s->sin_port = htons((uint16_t) port);
                ck_assert_int_eq(inet_pton(AF_INET, addr, &s->sin_addr), 1);
                q.addr_len = sizeof(*s);
        }
        return q;
}

static nsr_direct_verdict judge(const nsr_direct_ctx *c, const nsr_direct_query *q) {
        nsr_direct_verdict v;
        nsr_direct_judge(c, q, &v);
        return v;
}

static struct sockaddr_in v4(const char *a) {
        struct sockaddr_in s = { .sin_family = AF_INET };
        ck_assert_int_eq(inet_pton(AF_INET, a, &s.sin_addr), 1);
        return s;
}

START_TEST(test_loopback_ports) {
        static const char *const allow[] = { "127.0.0.1:5432", "[::1]:8080", "localhost:6379", NULL };
        nsr_egress_rules r = rules_of(allow, NULL);
        nsr_direct_ctx c = { .rules = &r };
        nsr_direct_query q = query(AF_INET, SOCK_STREAM, "127.0.0.1", 5432);
        nsr_direct_verdict v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_HOST);
        ck_assert(v.record);
        ck_assert_str_eq(v.host, "127.0.0.1");
        ck_assert_int_eq(v.port, 5432);
        /* another loopback port: the sandbox's own, unrecorded */
        q = query(AF_INET, SOCK_STREAM, "127.0.0.1", 5433);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_CONTINUE);
        ck_assert(!v.record);
        /* another loopback address: named by no pattern */
        q = query(AF_INET, SOCK_STREAM, "127.0.0.2", 5432);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q = query(AF_INET6, SOCK_STREAM, "::1", 8080);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_HOST);
        q = query(AF_INET6, SOCK_STREAM, "::1", 5432);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        /* localhost: both loopbacks, that port */
        q = query(AF_INET, SOCK_STREAM, "127.0.0.1", 6379);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_HOST);
        q = query(AF_INET6, SOCK_STREAM, "::1", 6379);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_HOST);
        /* v4-mapped on a dual-stack socket: judged as the v4 address */
        q = query(AF_INET6, SOCK_STREAM, "::ffff:127.0.0.1", 5432);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_HOST);
        ck_assert_str_eq(v.address, "127.0.0.1");
        ck_assert_int_eq(v.target.ss_family, AF_INET6); /* the connect keeps the socket's family */
        nsr_egress_rules_done(&r);
}
END_TEST

START_TEST(test_by_name) {
        static const char *const allow[] = { "pkg.example", "*.cdn.example:8443", "10.0.0.9:22", NULL };
        static const char *const deny[] = { "bad.cdn.example", NULL };
        nsr_egress_rules r = rules_of(allow, deny);
        nsr_dnsmap *m = nsr_dnsmap_new();
        struct sockaddr_in pub = v4("203.0.113.7"), cdn = v4("203.0.113.8"), priv = v4("10.0.0.5");
        struct sockaddr_in mixed = v4("203.0.113.9");
        ck_assert_int_eq(nsr_dnsmap_add(m, "pkg.example", (struct sockaddr *) &pub), 0);
        ck_assert_int_eq(nsr_dnsmap_add(m, "a.cdn.example", (struct sockaddr *) &cdn), 0);
        ck_assert_int_eq(nsr_dnsmap_add(m, "pkg.example", (struct sockaddr *) &priv), 0); /* rebinding */
        ck_assert_int_eq(nsr_dnsmap_add(m, "pkg.example", (struct sockaddr *) &mixed), 0);
        ck_assert_int_eq(nsr_dnsmap_add(m, "other.example", (struct sockaddr *) &mixed), 0);
        /* The host's addresses, read: none of these. */
        nsr_egress_own none = { .known = true };
        nsr_direct_ctx c = { .rules = &r, .map = m, .own = &none };

        nsr_direct_query q = query(AF_INET, SOCK_STREAM, "203.0.113.7", 443);
        nsr_direct_verdict v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_HOST);
        ck_assert_str_eq(v.host, "pkg.example");
        ck_assert_str_eq(v.address, "203.0.113.7");
        /* the name's ports only */
        q = query(AF_INET, SOCK_STREAM, "203.0.113.7", 22);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_int_eq(v.errnum, ECONNREFUSED);
        ck_assert_str_eq(v.host, "pkg.example");
        ck_assert_str_eq(v.reason, "port not in --allow-host");
        q = query(AF_INET, SOCK_STREAM, "203.0.113.8", 8443);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_HOST);
        /* an allowed name that resolved to a private address: refused */
        q = query(AF_INET, SOCK_STREAM, "10.0.0.5", 443);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_str_eq(v.reason, "address not allowed for this name");
        /* ...unless a pattern names the address */
        q = query(AF_INET, SOCK_STREAM, "10.0.0.9", 22);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_HOST);
        ck_assert_str_eq(v.host, "10.0.0.9");
        /* two names led to one address: the allowed one wins, newest first */
        q = query(AF_INET, SOCK_STREAM, "203.0.113.9", 443);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_HOST);
        ck_assert_str_eq(v.host, "pkg.example");
        /* a denied name */
        struct sockaddr_in bad = v4("203.0.113.10");
        ck_assert_int_eq(nsr_dnsmap_add(m, "bad.cdn.example", (struct sockaddr *) &bad), 0);
        q = query(AF_INET, SOCK_STREAM, "203.0.113.10", 8443);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_str_eq(v.reason, "denied by --deny-host");
        /* an address no name led to */
        q = query(AF_INET, SOCK_STREAM, "198.51.100.1", 443);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_str_eq(v.host, "198.51.100.1");
        ck_assert_str_eq(v.reason, "no allowed name resolved to this address");
        /* no map at all: literal rules only */
        c.map = NULL;
        q = query(AF_INET, SOCK_STREAM, "203.0.113.7", 443);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_REFUSE);
        /* the host's own address: refused unless named */
        nsr_egress_own own = { 0 };
        nsr_egress_own_add(&own, (struct sockaddr *) &pub);
        own.known = true;
        c.map = m;
        c.own = &own;
        q = query(AF_INET, SOCK_STREAM, "203.0.113.7", 443);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_REFUSE);
        nsr_egress_own_done(&own);
        /* the host's addresses unknown (never read): refused all the same */
        c.own = &own;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_REFUSE);
        c.own = &none;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_HOST);
        /* unroutable: multicast */
        q = query(AF_INET, SOCK_STREAM, "224.0.0.1", 443);
        ck_assert_int_eq(judge(&c, &q).errnum, ENETUNREACH);
        nsr_dnsmap_free(m);
        nsr_egress_rules_done(&r);
}
END_TEST

START_TEST(test_sockets) {
        static const char *const allow[] = { "127.0.0.1:5432", NULL };
        nsr_egress_rules r = rules_of(allow, NULL);
        struct sockaddr_in dns = v4("127.0.0.53");
        dns.sin_port = htons(53);
        nsr_direct_ctx c = { .rules = &r, .dns = (struct sockaddr *) &dns };
        /* a socket nsrun put in place: never the sandbox's own call */
        nsr_direct_query q = query(AF_INET, SOCK_STREAM, "127.0.0.1", 5433);
        q.sandbox_ns = false;
        nsr_direct_verdict v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_int_eq(v.errnum, ECONNREFUSED);
        q.connected = true;
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_int_eq(v.errnum, EISCONN);
        q.addr.ss_family = AF_UNSPEC; /* a disconnect */
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_REFUSE);
        /* ...but the sandbox's own may disconnect */
        q.sandbox_ns = true;
        q.connected = false;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        /* connected or listening: the kernel answers */
        q = query(AF_INET, SOCK_STREAM, "127.0.0.1", 5432);
        q.listening = true;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q.listening = false;
        q.connected = true;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        /* a short address */
        q = query(AF_INET, SOCK_STREAM, "127.0.0.1", 5432);
        q.addr_len = 4;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        /* unix and netlink: inside; others refused */
        q.domain = AF_UNIX;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q.domain = AF_NETLINK;
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q.domain = 40; /* AF_VSOCK */
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_int_eq(v.errnum, ENETUNREACH);
        ck_assert(v.record);
        /* UDP: the DNS answerer; loopback inside; a named host port refused; nothing else */
        q = query(AF_INET, SOCK_DGRAM, "127.0.0.53", 53);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q = query(AF_INET, SOCK_STREAM, "127.0.0.53", 53); /* DNS over TCP */
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        struct sockaddr_in dns10 = v4("10.0.2.3");
        dns10.sin_port = htons(53);
        c.dns = (struct sockaddr *) &dns10;
        q = query(AF_INET, SOCK_STREAM, "10.0.2.3", 53);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q = query(AF_INET, SOCK_STREAM, "10.0.2.3", 54);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_REFUSE);
        c.dns = (struct sockaddr *) &dns;
        q = query(AF_INET, SOCK_DGRAM, "127.0.0.1", 9999);
        ck_assert_int_eq(judge(&c, &q).action, NSR_DIRECT_CONTINUE);
        q = query(AF_INET, SOCK_DGRAM, "127.0.0.1", 5432);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_int_eq(v.errnum, ECONNREFUSED);
        ck_assert_str_eq(v.reason, "UDP is carried only to the DNS answerer");
        q = query(AF_INET, SOCK_DGRAM, "203.0.113.7", 53);
        v = judge(&c, &q);
        ck_assert_int_eq(v.action, NSR_DIRECT_REFUSE);
        ck_assert_int_eq(v.errnum, ENETUNREACH);
        ck_assert_str_eq(nsr_direct_action_to_string(NSR_DIRECT_HOST), "host");
        nsr_egress_rules_done(&r);
}
END_TEST

START_TEST(test_record_and_summary) {
        nsr_egress_record r = { .port = 5432, .proto = NSR_EGRESS_PROTO_DIRECT, .allowed = true };
        snprintf(r.host, sizeof(r.host), "127.0.0.1");
        snprintf(r.address, sizeof(r.address), "127.0.0.1");
        char *j = nsr_egress_record_json(&r);
        /* a direct connection's bytes never pass through nsrun: null */
        ck_assert_ptr_nonnull(strstr(j, "\"protocol\":\"direct\",\"via\":\"direct\""));
        ck_assert_ptr_nonnull(strstr(j, "\"bytes_up\":null,\"bytes_down\":null"));
        free(j);
        nsr_egress_log log = { 0 };
        nsr_egress_log_add(&log, &r);
        ck_assert_ptr_null(nsr_egress_log_mode(&log));
        char *s = nsr_egress_summary(&log);
        ck_assert_str_eq(s, "nsrun: network: 1 connection to 1 host, none refused");
        free(s);
        log.direct_on = true;
        ck_assert_str_eq(nsr_egress_log_mode(&log), "transparent");
        log.direct_on = false;
        log.direct_unavailable = true;
        ck_assert_str_eq(nsr_egress_log_mode(&log), "proxy-only");
        s = nsr_egress_summary(&log);
        ck_assert_str_eq(s, "nsrun: network (" NSR_EGRESS_DIRECT_UNAVAILABLE "): 1 connection to 1 host, none refused");
        free(s);
        log.direct_unavailable = false;
        log.direct_no_listener = true;
        s = nsr_egress_summary(&log);
        ck_assert_str_eq(s, "nsrun: network (" NSR_EGRESS_DIRECT_NO_LISTENER "): 1 connection to 1 host, none refused");
        free(s);
        nsr_egress_log_free(&log);
}
END_TEST

static uint32_t run_on(const char *prog, size_t len, uint32_t arch, int nr, uint64_t arg0) {
        struct seccomp_data d = { .nr = nr, .arch = arch, .args = { arg0 } };
        return nsr_bpf_run((const struct sock_filter *) prog, len / sizeof(struct sock_filter), &d);
}

#if defined(__x86_64__)
START_TEST(test_connect_prog) {
        char *a = NULL;
        size_t alen = 0;
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_connect_prog(&a, &alen, &e), 0);
        /* a policy: getpid refused (EPERM), the rest allowed */
        struct sock_filter b[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        char *c = NULL;
        size_t clen = 0;
        ck_assert_int_eq(nsr_bpf_chain((const char *) b, sizeof(b), a, alen, &c, &clen), 0);
        ck_assert_uint_eq(clen, sizeof(b) + alen);
        const uint32_t X64 = AUDIT_ARCH_X86_64, X86 = AUDIT_ARCH_I386;
        ck_assert_uint_eq(run_on(c, clen, X64, SYS_connect, 0), SECCOMP_RET_USER_NOTIF);
        ck_assert_uint_eq(run_on(c, clen, X64, SYS_getpid, 0), SECCOMP_RET_ERRNO | EPERM);
        ck_assert_uint_eq(run_on(c, clen, X64, SYS_read, 0), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(run_on(c, clen, X64, 425 /* io_uring_setup */, 0), SECCOMP_RET_ERRNO | ENOSYS);
        ck_assert_uint_eq(run_on(c, clen, X64, SYS_clone, CLONE_FILES), SECCOMP_RET_ERRNO | EPERM);
        ck_assert_uint_eq(run_on(c, clen, X64, SYS_clone, CLONE_FILES | CLONE_THREAD | CLONE_VM), SECCOMP_RET_ALLOW);
        ck_assert_uint_eq(run_on(c, clen, X64, SYS_clone3, 0), SECCOMP_RET_ERRNO | ENOSYS);
        /* i386: connect (362) and socketcall(SYS_CONNECT) (102) */
        ck_assert_uint_eq(run_on(c, clen, X86, 362, 0), SECCOMP_RET_USER_NOTIF);
        ck_assert_uint_eq(run_on(c, clen, X86, 102, SYS_CONNECT), SECCOMP_RET_USER_NOTIF);
        ck_assert_uint_eq(run_on(c, clen, X86, 102, SYS_SOCKET), SECCOMP_RET_ALLOW);
        /* x32's connect */
        ck_assert_uint_eq(run_on(c, clen, X64, 0x40000000 | 42, 0), SECCOMP_RET_USER_NOTIF);
        /* and the calls are told apart */
        struct seccomp_data d = { .nr = SYS_connect, .arch = X64 };
        int where;
        ck_assert(nsr_connect_is_connect(&d, &where));
        ck_assert_int_eq(where, 0);
        d = (struct seccomp_data){ .nr = 102, .arch = X86, .args = { SYS_CONNECT } };
        ck_assert(nsr_connect_is_connect(&d, &where));
        ck_assert_int_eq(where, 1);
        d = (struct seccomp_data){ .nr = 0x40000000 | 42, .arch = X64 };
        ck_assert(nsr_connect_is_connect(&d, &where));
        d = (struct seccomp_data){ .nr = SYS_read, .arch = X64 };
        ck_assert(!nsr_connect_is_connect(&d, &where));
        /* a return from the accumulator cannot be chained */
        struct sock_filter acc[] = { BPF_STMT(BPF_RET | BPF_A, 0) };
        char *bad = NULL;
        ck_assert_int_eq(nsr_bpf_chain((const char *) acc, sizeof(acc), a, alen, &bad, &clen), -EOPNOTSUPP);
        free(a);
        free(c);
}
END_TEST
#endif

/* The connect program comes from the compile cache once it is there: the
 * same bytes, one entry, and a cache entry that was tampered with is not
 * used (compiled again). */
START_TEST(test_connect_prog_cached) {
        size_t len = 0;
        free(bpfcache_check(nsr_connect_prog, NULL, &len));
        ck_assert_uint_gt(len, 0);
}
END_TEST

static Suite *direct_suite(void) {
        Suite *s = suite_create("direct");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_loopback_ports);
        tcase_add_test(tc, test_by_name);
        tcase_add_test(tc, test_sockets);
        tcase_add_test(tc, test_record_and_summary);
        tcase_add_test(tc, test_connect_prog_cached);
#if defined(__x86_64__)
        tcase_add_test(tc, test_connect_prog);
#endif
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(direct_suite)
