/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#include "egress/dnsmap.h"
#include "egress/relay.h"
#include "egress/rules.h"
#include "unit-egress.h"
#include "unit.h"

START_TEST(test_parse) {
        static const struct {
                const char *text;
                int ok;
                nsr_egress_kind kind;
                const char *host;
                int port;
        } cases[] = {
                { "example.org", 1, NSR_EGRESS_NAME, "example.org", 0 },
                { "Example.ORG.", 1, NSR_EGRESS_NAME, "example.org", 0 },
                { "example.org:8080", 1, NSR_EGRESS_NAME, "example.org", 8080 },
                { "example.org:*", 1, NSR_EGRESS_NAME, "example.org", -1 },
                { "*.example.org", 1, NSR_EGRESS_SUFFIX, "example.org", 0 },
                { "*.example.org:443", 1, NSR_EGRESS_SUFFIX, "example.org", 443 },
                { "127.0.0.1:8080", 1, NSR_EGRESS_ADDR, "127.0.0.1", 8080 },
                { "10.1.2.3", 1, NSR_EGRESS_ADDR, "10.1.2.3", 0 },
                { "[::1]:8080", 1, NSR_EGRESS_ADDR, "::1", 8080 },
                { "[::1]", 1, NSR_EGRESS_ADDR, "::1", 0 },
                { "::1", 1, NSR_EGRESS_ADDR, "::1", 0 },
                { "[0:0::1]", 1, NSR_EGRESS_ADDR, "::1", 0 },
                { "2130706433", 1, NSR_EGRESS_ADDR, "127.0.0.1", 0 }, /* the resolver's idea too */
                { "127.1", 1, NSR_EGRESS_ADDR, "127.0.0.1", 0 },
                { "localhost", 1, NSR_EGRESS_NAME, "localhost", 0 },
                { "a_b-c.d", 1, NSR_EGRESS_NAME, "a_b-c.d", 0 },
                { "", 0, 0, NULL, 0 },
                { "*", 0, 0, NULL, 0 },
                { "*.", 0, 0, NULL, 0 },
                { "*.127.0.0.1", 0, 0, NULL, 0 },
                { "foo..bar", 0, 0, NULL, 0 },
                { ".foo", 0, 0, NULL, 0 },
                { "foo/bar", 0, 0, NULL, 0 },
                { "foo bar", 0, 0, NULL, 0 },
                { "foo:0", 0, 0, NULL, 0 },
                { "foo:65536", 0, 0, NULL, 0 },
                { "foo:http", 0, 0, NULL, 0 },
                { "foo:", 0, 0, NULL, 0 },
                { "[::1", 0, 0, NULL, 0 },
                { "[::1]x", 0, 0, NULL, 0 },
                { "[example.org]", 0, 0, NULL, 0 },
                { "a.*.org", 0, 0, NULL, 0 },
                { "ex\xc3\xa4mple.org", 0, 0, NULL, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                nsr_egress_pattern p;
                nsr_error e = { 0 };
                int r = nsr_egress_pattern_parse(cases[i].text, "--allow-host", &p, &e);
                ck_assert_msg((r == 0) == cases[i].ok, "%s: %d", cases[i].text, r);
                if (!cases[i].ok) {
                        ck_assert_ptr_nonnull(strstr(e.msg, "--allow-host"));
                        continue;
                }
                ck_assert_int_eq(p.kind, cases[i].kind);
                ck_assert_str_eq(p.host, cases[i].host);
                ck_assert_int_eq(p.port, cases[i].port);
                ck_assert_str_eq(p.text, cases[i].text);
        }
}
END_TEST

START_TEST(test_match) {
        static const char *const allow[] = {
                "example.org", "*.example.net", "api.test:8443", "127.0.0.1:9000", "[::1]:9001", "any.test:*", NULL
        };
        static const char *const deny[] = { "bad.example.net", "any.test:22", NULL };
        nsr_egress_rules r = rules_of(allow, deny);
        static const struct {
                const char *host;
                int port;
                bool allowed;
                const char *reason;
        } cases[] = {
                { "example.org", 443, true, NULL },
                { "example.org", 80, true, NULL },
                { "example.org", 8080, false, "port not in --allow-host" },
                { "www.example.org", 443, false, "host not in --allow-host" },
                { "example.net", 443, false, "host not in --allow-host" }, /* *.domain: not the domain */
                { "a.example.net", 443, true, NULL },
                { "a.b.example.net", 80, true, NULL },
                { "xexample.net", 443, false, "host not in --allow-host" },
                { "bad.example.net", 443, false, "denied by --deny-host" },
                { "bad.example.net", 8080, false, "denied by --deny-host" }, /* deny without a port: all */
                { "api.test", 8443, true, NULL },
                { "api.test", 443, false, "port not in --allow-host" },
                { "127.0.0.1", 9000, true, NULL },
                { "127.0.0.1", 9001, false, "port not in --allow-host" },
                { "::1", 9001, true, NULL },
                { "any.test", 1, true, NULL },
                { "any.test", 22, false, "denied by --deny-host" },
                { "org", 443, false, "host not in --allow-host" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                nsr_egress_verdict v;
                nsr_egress_check_name(&r, cases[i].host, cases[i].port, &v);
                ck_assert_msg(v.allowed == cases[i].allowed, "%s:%d", cases[i].host, cases[i].port);
                if (!v.allowed)
                        ck_assert_str_eq(v.reason, cases[i].reason);
                else
                        ck_assert_ptr_nonnull(v.matched);
        }
        nsr_egress_rules_done(&r);
}
END_TEST

START_TEST(test_normalize) {
        char buf[300];
        bool addr;
        ck_assert_int_eq(nsr_egress_host_normalize("WWW.Example.COM.", buf, sizeof(buf), &addr), 0);
        ck_assert_str_eq(buf, "www.example.com");
        ck_assert(!addr);
        ck_assert_int_eq(nsr_egress_host_normalize("[::FFFF:127.0.0.1]", buf, sizeof(buf), &addr), 0);
        ck_assert_str_eq(buf, "::ffff:127.0.0.1");
        ck_assert(addr);
        ck_assert_int_eq(nsr_egress_host_normalize("0x7f.0.0.1", buf, sizeof(buf), &addr), 0);
        ck_assert_str_eq(buf, "127.0.0.1");
        ck_assert(addr);
        ck_assert_int_lt(nsr_egress_host_normalize("a..b", buf, sizeof(buf), &addr), 0);
        ck_assert_int_lt(nsr_egress_host_normalize("", buf, sizeof(buf), &addr), 0);
        ck_assert_int_lt(nsr_egress_host_normalize(".", buf, sizeof(buf), &addr), 0);
        ck_assert_int_lt(nsr_egress_host_normalize("a\nb", buf, sizeof(buf), &addr), 0);
        char long_label[80];
        memset(long_label, 'a', 64);
        long_label[64] = '\0';
        ck_assert_int_lt(nsr_egress_host_normalize(long_label, buf, sizeof(buf), &addr), 0);
}
END_TEST

static nsr_addr_class classify_text(const char *text) {
        struct sockaddr_storage ss = { 0 };
        if (strchr(text, ':')) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                ck_assert_int_eq(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                s4->sin_family = AF_INET;
                ck_assert_int_eq(inet_pton(AF_INET, text, &s4->sin_addr), 1);
        }
        return nsr_egress_classify((struct sockaddr *) &ss);
}

START_TEST(test_classify) {
        static const struct {
                const char *addr;
                nsr_addr_class c;
        } cases[] = {
                { "93.184.216.34", NSR_ADDR_PUBLIC },
                { "8.8.8.8", NSR_ADDR_PUBLIC },
                { "127.0.0.1", NSR_ADDR_LOOPBACK },
                { "127.255.1.2", NSR_ADDR_LOOPBACK },
                { "10.0.0.1", NSR_ADDR_PRIVATE },
                { "172.16.0.1", NSR_ADDR_PRIVATE },
                { "172.31.255.255", NSR_ADDR_PRIVATE },
                { "172.32.0.1", NSR_ADDR_PUBLIC },
                { "172.15.255.255", NSR_ADDR_PUBLIC },
                { "192.168.1.1", NSR_ADDR_PRIVATE },
                { "169.254.1.1", NSR_ADDR_LINK_LOCAL },
                { "169.254.169.254", NSR_ADDR_METADATA },
                { "100.64.0.1", NSR_ADDR_CGNAT },
                { "100.127.255.255", NSR_ADDR_CGNAT },
                { "100.128.0.1", NSR_ADDR_PUBLIC },
                { "0.0.0.0", NSR_ADDR_UNSPECIFIED },
                { "0.1.2.3", NSR_ADDR_UNSPECIFIED },
                { "224.0.0.1", NSR_ADDR_MULTICAST },
                { "239.255.255.250", NSR_ADDR_MULTICAST },
                { "240.0.0.1", NSR_ADDR_RESERVED },
                { "255.255.255.255", NSR_ADDR_RESERVED },
                { "192.0.2.1", NSR_ADDR_PUBLIC }, /* documentation nets: fake-IP resolvers use them */
                { "198.18.0.1", NSR_ADDR_PUBLIC },
                { "2606:2800:220:1::1", NSR_ADDR_PUBLIC },
                { "::1", NSR_ADDR_LOOPBACK },
                { "::", NSR_ADDR_UNSPECIFIED },
                { "::ffff:127.0.0.1", NSR_ADDR_MAPPED },
                { "::ffff:8.8.8.8", NSR_ADDR_MAPPED },
                { "::127.0.0.1", NSR_ADDR_RESERVED },
                { "64:ff9b::a00:1", NSR_ADDR_MAPPED },
                { "2002:7f00:1::", NSR_ADDR_MAPPED },
                { "fc00::1", NSR_ADDR_PRIVATE },
                { "fd12:3456::1", NSR_ADDR_PRIVATE },
                { "fd00:ec2::254", NSR_ADDR_METADATA },
                { "fe80::1", NSR_ADDR_LINK_LOCAL },
                { "febf::1", NSR_ADDR_LINK_LOCAL },
                { "fec0::1", NSR_ADDR_PRIVATE },
                { "ff02::1", NSR_ADDR_MULTICAST },
                { "2001:db8::1", NSR_ADDR_PUBLIC },
                { "100::1", NSR_ADDR_RESERVED },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ck_assert_msg(classify_text(cases[i].addr) == cases[i].c, "%s: %s, not %s", cases[i].addr,
                              nsr_addr_class_to_string(classify_text(cases[i].addr)),
                              nsr_addr_class_to_string(cases[i].c));
}
END_TEST

static bool allowed_for(const char *pattern, const char *addr) {
        nsr_egress_pattern p;
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_egress_pattern_parse(pattern, "--allow-host", &p, &e), 0);
        struct sockaddr_storage ss = { 0 };
        if (strchr(addr, ':')) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                inet_pton(AF_INET6, addr, &s6->sin6_addr);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                s4->sin_family = AF_INET;
                inet_pton(AF_INET, addr, &s4->sin_addr);
        }
        nsr_addr_class c;
        return nsr_egress_addr_allowed(&p, (struct sockaddr *) &ss, &c);
}

START_TEST(test_rebinding) {
        ck_assert(allowed_for("example.org", "93.184.216.34"));
        ck_assert(!allowed_for("example.org", "127.0.0.1"));
        ck_assert(!allowed_for("example.org", "10.0.0.5"));
        ck_assert(!allowed_for("example.org", "169.254.169.254"));
        ck_assert(!allowed_for("example.org", "::ffff:127.0.0.1"));
        ck_assert(!allowed_for("*.example.org", "192.168.0.1"));
        ck_assert(allowed_for("127.0.0.1:8080", "127.0.0.1"));
        ck_assert(!allowed_for("127.0.0.1:8080", "127.0.0.2"));
        ck_assert(allowed_for("[::1]:8080", "::1"));
        ck_assert(allowed_for("10.0.0.5", "10.0.0.5"));
        ck_assert(allowed_for("localhost", "127.0.0.1"));
        ck_assert(allowed_for("localhost", "::1"));
        ck_assert(!allowed_for("localhost", "10.0.0.1"));
        ck_assert(!allowed_for("localhost.example.org", "127.0.0.1"));
        ck_assert(!allowed_for("ip6-localhost", "::1"));
}
END_TEST

START_TEST(test_summary_and_json) {
        nsr_egress_log log = { 0 };
        nsr_egress_record a = { .host = "example.org",
                                .port = 443,
                                .proto = NSR_EGRESS_PROTO_CONNECT,
                                .allowed = true,
                                .bytes_up = 10,
                                .bytes_down = 20,
                                .duration_ms = 5 };
        nsr_egress_record b = { .host = "evil.test",
                                .port = 80,
                                .proto = NSR_EGRESS_PROTO_HTTP,
                                .allowed = false,
                                .reason = "host not in --allow-host" };
        nsr_egress_record c = { .host = "::1",
                                .port = 22,
                                .proto = NSR_EGRESS_PROTO_SOCKS5,
                                .allowed = false,
                                .reason = "port not in --allow-host" };
        nsr_egress_log_add(&log, &a);
        nsr_egress_log_add(&log, &a);
        nsr_egress_log_add(&log, &b);
        nsr_egress_log_add(&log, &b);
        nsr_egress_log_add(&log, &c);
        char *s = nsr_egress_summary(&log);
        ck_assert_str_eq(s, "nsrun: network: 5 connections to 3 hosts, 3 refused: evil.test:80, [::1]:22");
        free(s);
        char *j = nsr_egress_record_json(&b);
        ck_assert_str_eq(
                j, "{\"host\":\"evil.test\",\"port\":80,\"protocol\":\"http\",\"via\":\"proxy\",\"allowed\":false,"
                   "\"reason\":\"host not in --allow-host\",\"address\":null,\"bytes_up\":0,"
                   "\"bytes_down\":0,\"started_at\":\"1970-01-01T00:00:00.000Z\",\"duration_ms\":0}");
        free(j);
        nsr_egress_log_free(&log);
        nsr_egress_log none = { 0 };
        s = nsr_egress_summary(&none);
        ck_assert_str_eq(s, "nsrun: network: no connections");
        free(s);
        nsr_egress_log one = { 0 };
        nsr_egress_log_add(&one, &a);
        s = nsr_egress_summary(&one);
        ck_assert_str_eq(s, "nsrun: network: 1 connection to 1 host, none refused");
        free(s);
        nsr_egress_log_free(&one);
}
END_TEST

START_TEST(test_env) {
        char **env = nsr_malloc0(3 * sizeof(char *));
        env[0] = nsr_strdup("HTTP_PROXY=http://elsewhere:1");
        env[1] = nsr_strdup("PATH=/bin");
        nsr_relay_env(&env);
        ck_assert_str_eq(env[0], "HTTP_PROXY=http://127.0.0.1:3128");
        ck_assert_str_eq(env[1], "PATH=/bin");
        ck_assert(nsr_strv_contains(env, "https_proxy=http://127.0.0.1:3128"));
        ck_assert(nsr_strv_contains(env, "ALL_PROXY=socks5h://127.0.0.1:1080"));
        ck_assert(nsr_strv_contains(env, "NO_PROXY=localhost,127.0.0.1,::1"));
        ck_assert(nsr_strv_contains(env, "no_proxy=localhost,127.0.0.1,::1"));
        ck_assert_uint_eq(nsr_strv_length(env), 9);
        nsr_strv_free(env);
}
END_TEST

START_TEST(test_limits) {
        nsr_egress_rules r = { 0 };
        nsr_error e = { 0 };
        for (int i = 0; i < NSR_EGRESS_RULES_MAX; i++)
                ck_assert_int_eq(nsr_egress_rules_add(&r, false, "a.test", &e), 0);
        ck_assert_int_eq(nsr_egress_rules_add(&r, true, "a.test", &e), -E2BIG);
        nsr_egress_rules_done(&r);
        nsr_egress_log log = { 0 };
        nsr_egress_record a = { .host = "x", .port = 1, .allowed = false, .reason = "r" };
        for (int i = 0; i < NSR_EGRESS_RECORDS_MAX + 5; i++)
                nsr_egress_log_add(&log, &a);
        ck_assert_uint_eq(log.n_records, NSR_EGRESS_RECORDS_MAX);
        ck_assert_uint_eq(log.n_dropped, 5);
        ck_assert_uint_eq(log.n_refused, NSR_EGRESS_RECORDS_MAX + 5);
        nsr_egress_log_free(&log);
}
END_TEST

static struct sockaddr_storage sa_of(const char *addr) {
        struct sockaddr_storage ss = { 0 };
        if (strchr(addr, ':')) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                ck_assert_int_eq(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                s4->sin_family = AF_INET;
                ck_assert_int_eq(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
        }
        return ss;
}

static bool allowed_own(const char *pattern, const char *addr, const nsr_egress_own *own, nsr_addr_class *c) {
        nsr_egress_pattern p;
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_egress_pattern_parse(pattern, "--allow-host", &p, &e), 0);
        struct sockaddr_storage ss = sa_of(addr);
        return nsr_egress_addr_allowed_own(&p, (struct sockaddr *) &ss, own, c);
}

/* The host's own addresses are refused like loopback, unless a pattern
 * names the address itself. */
START_TEST(test_own_addresses) {
        nsr_egress_own own = { 0 };
        const char *mine[] = { "203.0.113.5", "2001:db8::5", "10.1.1.1", "203.0.113.5" };
        for (size_t i = 0; i < ELEMENTSOF(mine); i++) {
                struct sockaddr_storage ss = sa_of(mine[i]);
                nsr_egress_own_add(&own, (struct sockaddr *) &ss);
        }
        ck_assert_uint_eq(own.n, 3);
        own.known = true;
        nsr_addr_class c;
        ck_assert(!allowed_own("*.example.org", "203.0.113.5", &own, &c));
        ck_assert_int_eq(c, NSR_ADDR_HOST);
        ck_assert_str_eq(nsr_addr_class_to_string(c), "host");
        ck_assert(!allowed_own("svc.example.org", "2001:db8::5", &own, &c));
        ck_assert_int_eq(c, NSR_ADDR_HOST);
        ck_assert(!allowed_own("svc.example.org", "10.1.1.1", &own, &c));
        ck_assert_int_eq(c, NSR_ADDR_PRIVATE);
        ck_assert(allowed_own("203.0.113.5:8080", "203.0.113.5", &own, &c));
        ck_assert(allowed_own("[2001:db8::5]:*", "2001:db8::5", &own, &c));
        ck_assert(!allowed_own("203.0.113.6", "203.0.113.5", &own, &c));
        ck_assert(allowed_own("svc.example.org", "203.0.113.6", &own, &c));
        ck_assert_int_eq(c, NSR_ADDR_PUBLIC);
        /* A v4 address does not match the same bytes in a v6 one. */
        ck_assert(allowed_own("svc.example.org", "cb00:7105::", &own, &c));
        nsr_egress_own_done(&own);
        /* A list never read: any public address may be the host's, and is
         * refused as one (fails closed); other classes are judged as ever. */
        ck_assert(!allowed_own("svc.example.org", "203.0.113.5", &own, &c));
        ck_assert_int_eq(c, NSR_ADDR_HOST);
        ck_assert(!allowed_own("svc.example.org", "203.0.113.5", NULL, &c));
        ck_assert_int_eq(c, NSR_ADDR_HOST);
        ck_assert(allowed_own("203.0.113.5", "203.0.113.5", NULL, &c));
        ck_assert(!allowed_own("svc.example.org", "10.1.1.1", NULL, &c));
        ck_assert_int_eq(c, NSR_ADDR_PRIVATE);
        /* An empty list that was read: nothing is the host's. */
        own.known = true;
        ck_assert(allowed_own("svc.example.org", "203.0.113.5", &own, &c));
        ck_assert_int_eq(c, NSR_ADDR_PUBLIC);
}
END_TEST

START_TEST(test_names) {
        static const char *const protos[] = { "http", "connect", "socks5", "direct", "dns" };
        static const char *const vias[] = { "proxy", "proxy", "socks", "direct", "dns" };
        ck_assert_int_eq(ELEMENTSOF(protos), _NSR_EGRESS_PROTO_MAX);
        for (int i = 0; i < _NSR_EGRESS_PROTO_MAX; i++) {
                ck_assert_str_eq(nsr_egress_proto_to_string((nsr_egress_proto) i), protos[i]);
                ck_assert_str_eq(nsr_egress_proto_via((nsr_egress_proto) i), vias[i]);
        }
        ck_assert_str_eq(nsr_egress_proto_via(_NSR_EGRESS_PROTO_MAX), "?");
        ck_assert_str_eq(nsr_egress_proto_to_string(_NSR_EGRESS_PROTO_MAX), "?");
        ck_assert_str_eq(nsr_egress_proto_to_string(_NSR_EGRESS_PROTO_INVALID), "?");
        for (int i = 0; i < _NSR_ADDR_CLASS_MAX; i++)
                ck_assert_ptr_nonnull(nsr_addr_class_to_string((nsr_addr_class) i));
        ck_assert_str_eq(nsr_addr_class_to_string(NSR_ADDR_MAPPED), "ipv4-mapped");
        ck_assert_ptr_null(nsr_addr_class_to_string(_NSR_ADDR_CLASS_MAX));
        ck_assert_ptr_null(nsr_addr_class_to_string(_NSR_ADDR_CLASS_INVALID));
}
END_TEST

static struct sockaddr_storage addr_of_text(const char *text) {
        struct sockaddr_storage ss = { 0 };
        struct sockaddr_in *in = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
        if (inet_pton(AF_INET, text, &in->sin_addr) == 1)
                in->sin_family = AF_INET;
        else {
                ck_assert_int_eq(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
                in6->sin6_family = AF_INET6;
        }
        return ss;
}

START_TEST(test_dnsmap) {
        nsr_dnsmap *m = nsr_dnsmap_new();
        ck_assert_ptr_nonnull(m);
        struct sockaddr_storage a = addr_of_text("203.0.113.5"), b = addr_of_text("2001:db8::5"),
                                c = addr_of_text("203.0.113.6");
        const char *names[3];
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &a, names, 3), 0);
        ck_assert_int_eq(nsr_dnsmap_add(m, "one.example", (struct sockaddr *) &a), 0);
        ck_assert_int_eq(nsr_dnsmap_add(m, "two.example", (struct sockaddr *) &a), 0);
        ck_assert_int_eq(nsr_dnsmap_add(m, "one.example", (struct sockaddr *) &b), 0);
        /* newest first; the other family and address are apart */
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &a, names, 3), 2);
        ck_assert_str_eq(names[0], "two.example");
        ck_assert_str_eq(names[1], "one.example");
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &a, names, 1), 1);
        ck_assert_str_eq(names[0], "two.example");
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &c, names, 3), 0);
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &b, names, 3), 1);
        /* adding again refreshes, without a second entry */
        ck_assert_int_eq(nsr_dnsmap_add(m, "one.example", (struct sockaddr *) &a), 0);
        ck_assert_uint_eq(nsr_dnsmap_size(m), 3);
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &a, names, 3), 2);
        ck_assert_str_eq(names[0], "one.example");
        /* other families and overlong names are refused */
        struct sockaddr un = { .sa_family = AF_UNIX };
        ck_assert_int_eq(nsr_dnsmap_add(m, "x", &un), -EINVAL);
        char longname[NSR_EGRESS_HOST_MAX + 2];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        ck_assert_int_eq(nsr_dnsmap_add(m, longname, (struct sockaddr *) &c), -EINVAL);
        /* full: the oldest goes first */
        char name[32];
        for (int i = 0; i < NSR_DNSMAP_MAX; i++) {
                snprintf(name, sizeof(name), "n%d.example", i);
                ck_assert_int_eq(nsr_dnsmap_add(m, name, (struct sockaddr *) &c), 0);
        }
        ck_assert_uint_eq(nsr_dnsmap_size(m), NSR_DNSMAP_MAX);
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &b, names, 3), 0);
        ck_assert_uint_eq(nsr_dnsmap_names(m, (struct sockaddr *) &c, names, 3), 3);
        ck_assert_str_eq(names[0], "n4095.example");
        m = nsr_dnsmap_free(m);
        ck_assert_ptr_null(m);
}
END_TEST

static Suite *egress_suite(void) {
        Suite *s = suite_create("egress");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 60); /* test_limits fills the tables: slow under ASan */
        tcase_add_test(tc, test_parse);
        tcase_add_test(tc, test_match);
        tcase_add_test(tc, test_normalize);
        tcase_add_test(tc, test_classify);
        tcase_add_test(tc, test_rebinding);
        tcase_add_test(tc, test_own_addresses);
        tcase_add_test(tc, test_summary_and_json);
        tcase_add_test(tc, test_env);
        tcase_add_test(tc, test_limits);
        tcase_add_test(tc, test_names);
        tcase_add_test(tc, test_dnsmap);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(egress_suite)
