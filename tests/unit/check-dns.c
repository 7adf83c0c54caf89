/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS answerer's messages (egress/dnsparse): strict queries, answers
 * that echo the question, truncation, EDNS, TCP framing. */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "egress/dnsparse.h"
#include "unit.h"

/* A query: header with id 0x1234 and RD, one question, optional OPT. */
static size_t build(uint8_t *m, const char *name, uint16_t type, uint16_t cls, bool opt, uint16_t size) {
        static const uint8_t head[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
        memcpy(m, head, sizeof(head));
        size_t o = sizeof(head);
        for (const char *p = name; *p;) {
                const char *dot = strchr(p, '.');
                size_t l = dot ? (size_t) (dot - p) : strlen(p);
                m[o++] = (uint8_t) l;
                memcpy(m + o, p, l);
                o += l;
                p += l + (dot ? 1 : 0);
        }
        m[o++] = 0;
        m[o++] = (uint8_t) (type >> 8);
        m[o++] = (uint8_t) type;
        m[o++] = (uint8_t) (cls >> 8);
        m[o++] = (uint8_t) cls;
        if (opt) {
                m[11] = 1;
                const uint8_t rr[] = { 0, 0, 41, (uint8_t) (size >> 8), (uint8_t) size, 0, 0, 0, 0, 0, 0 };
                memcpy(m + o, rr, sizeof(rr));
                o += sizeof(rr);
        }
        return o;
}

static uint16_t rd16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

START_TEST(test_parse_ok) {
        uint8_t m[600];
        nsr_dns_query q;
        size_t n = build(m, "WWW.Example.org", NSR_DNS_TYPE_AAAA, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert_uint_eq(q.id, 0x1234);
        ck_assert_str_eq(q.name, "www.example.org");
        ck_assert(q.plain);
        ck_assert_uint_eq(q.qtype, NSR_DNS_TYPE_AAAA);
        ck_assert(!q.edns);
        ck_assert_uint_eq(q.udp_max, 512);
        ck_assert_uint_eq(q.question_len, n - 12);

        n = build(m, "a_b.x-y", 65, 1, true, 4096);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert_str_eq(q.name, "a_b.x-y");
        ck_assert(q.edns);
        ck_assert_uint_eq(q.udp_max, NSR_DNS_UDP_MAX);
        n = build(m, "x", 1, 1, true, 100);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert_uint_eq(q.udp_max, 512);
        /* An OPT with one option, lengths exact. */
        n = build(m, "x", 1, 1, true, 1232);
        m[n - 1] = 6;
        memcpy(m + n, "\x00\x0a\x00\x02zz", 6);
        ck_assert_int_eq(nsr_dns_query_parse(m, n + 6, &q), 0);

        /* Hostile bytes in a label: parsed, but no host name. */
        n = build(m, "a.b", 1, 1, false, 0);
        m[13] = '.';
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert_str_eq(q.name, "?.b");
        ck_assert(!q.plain);
        m[13] = 0;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert(!q.plain);
        /* The root. */
        n = build(m, "", 1, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert_str_eq(q.name, ".");
        ck_assert(!q.plain);
}
END_TEST

START_TEST(test_parse_refused) {
        uint8_t m[700];
        nsr_dns_query q;
        size_t n = build(m, "a.example", 1, 1, false, 0);
        /* No header: nothing to answer. */
        ck_assert_int_eq(nsr_dns_query_parse(m, 11, &q), -EBADMSG);
        ck_assert_int_eq(nsr_dns_query_parse(m, 0, &q), -EBADMSG);
        /* An answer. */
        m[2] |= 0x80;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), -EBADMSG);
        m[2] &= 0x7f;
        /* Another opcode. */
        m[2] |= 0x28;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_NOTIMP);
        ck_assert(!q.has_question);
        ck_assert_uint_eq(q.id, 0x1234);
        m[2] = 0x01;
        /* TC in a query. */
        m[2] |= 0x02;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        m[2] = 0x01;
        /* Two questions, none, answers, authority, two additional. */
        for (int w = 4; w <= 10; w += 2) {
                uint8_t keep = m[w + 1];
                m[w + 1] = (uint8_t) (w == 4 ? 2 : w == 10 ? 2 : 1);
                ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
                m[w + 1] = keep;
        }
        m[5] = 0;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        m[5] = 1;
        /* Trailing bytes; a question cut short, at every length. */
        ck_assert_int_eq(nsr_dns_query_parse(m, n + 1, &q), NSR_DNS_FORMERR);
        for (size_t l = 12; l < n; l++)
                ck_assert_int_eq(nsr_dns_query_parse(m, l, &q), NSR_DNS_FORMERR);
        /* Another class. */
        n = build(m, "a.example", 1, 3, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_REFUSED);
        ck_assert(q.has_question);
        /* A compression pointer, to itself (a loop) and forward. */
        n = build(m, "a", 1, 1, false, 0);
        m[12] = 0xC0;
        m[13] = 12;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        ck_assert_str_eq(q.why, "a compression pointer in a query's name");
        m[12] = 0x40;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        m[12] = 0x80;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        /* 253 bytes of text pass, 254 do not. */
        char name[300];
        memset(name, 'a', sizeof(name));
        for (int i = 63; i < 300; i += 64)
                name[i] = '.';
        name[253] = '\0';
        n = build(m, name, 1, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        ck_assert_uint_eq(strlen(q.name), 253);
        name[253] = 'a';
        name[254] = '\0';
        n = build(m, name, 1, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        /* A label of 64 bytes is an extended type (0x40). */
        memset(name, 'b', 64);
        name[64] = '\0';
        n = build(m, name, 1, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        /* OPT: not root-owned, another type, an option overrunning, a
         * length that does not end the message, a later version. */
        n = build(m, "x", 1, 1, true, 1232);
        size_t opt = n - 11;
        m[opt] = 1;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        m[opt] = 0;
        m[opt + 2] = 40;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
        m[opt + 2] = 41;
        m[n - 1] = 5;
        memcpy(m + n, "\x00\x0a\x00\x02z", 5);
        ck_assert_int_eq(nsr_dns_query_parse(m, n + 5, &q), NSR_DNS_FORMERR);
        ck_assert_int_eq(nsr_dns_query_parse(m, n + 4, &q), NSR_DNS_FORMERR);
        m[n - 1] = 0;
        ck_assert_int_eq(nsr_dns_query_parse(m, n + 1, &q), NSR_DNS_FORMERR);
        m[opt + 6] = 1;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_BADVERS);
        ck_assert(q.edns);
        /* An OPT claimed but missing. */
        n = build(m, "x", 1, 1, false, 0);
        m[11] = 1;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_FORMERR);
}
END_TEST

START_TEST(test_answer) {
        uint8_t m[600], out[2048];
        nsr_dns_query q;
        size_t n = build(m, "Host.Example", NSR_DNS_TYPE_A, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        nsr_dns_addr a[3] = { { .family = AF_INET, .addr = { 192, 0, 2, 1 } },
                              { .family = AF_INET6, .addr = { 0x20, 0x01, 0x0d, 0xb8 } },
                              { .family = AF_INET, .addr = { 192, 0, 2, 2 } } };
        ssize_t l = nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 3, 60, out, 512);
        ck_assert_int_eq(l, (ssize_t) n + 2 * 16);
        ck_assert_uint_eq(rd16(out), 0x1234);
        ck_assert_uint_eq(rd16(out + 2), 0x8180); /* QR, RD echoed, RA, NOERROR */
        ck_assert_uint_eq(rd16(out + 4), 1);
        ck_assert_uint_eq(rd16(out + 6), 2);
        ck_assert_uint_eq(rd16(out + 10), 0);
        ck_assert_mem_eq(out + 12, m + 12, n - 12); /* the question, case kept */
        const uint8_t rr[] = { 0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1 };
        ck_assert_mem_eq(out + n, rr, sizeof(rr));
        ck_assert_uint_eq(out[n + 16 + 15], 2);

        /* AAAA: only the v6 address. */
        n = build(m, "h", NSR_DNS_TYPE_AAAA, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        l = nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 3, 60, out, 512);
        ck_assert_int_eq(l, (ssize_t) n + 28);
        ck_assert_uint_eq(rd16(out + 6), 1);
        ck_assert_uint_eq(out[n + 12], 0x20);
        /* NODATA: another type; NXDOMAIN: no records whatever is given. */
        n = build(m, "h", 65, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        l = nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 3, 60, out, 512);
        ck_assert_int_eq(l, (ssize_t) n);
        ck_assert_uint_eq(rd16(out + 2), 0x8180);
        ck_assert_uint_eq(rd16(out + 6), 0);
        n = build(m, "h", 1, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        l = nsr_dns_answer(&q, NSR_DNS_NXDOMAIN, a, 3, 60, out, 512);
        ck_assert_int_eq(l, (ssize_t) n);
        ck_assert_uint_eq(rd16(out + 2), 0x8183);
        /* FORMERR without a question. */
        m[2] = 0x28;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_NOTIMP);
        l = nsr_dns_answer(&q, NSR_DNS_NOTIMP, NULL, 0, 0, out, 512);
        ck_assert_int_eq(l, 12);
        ck_assert_uint_eq(rd16(out + 2), 0x8084);
        ck_assert_uint_eq(rd16(out + 4), 0);
}
END_TEST

START_TEST(test_answer_size) {
        uint8_t m[600], out[70000];
        nsr_dns_query q;
        nsr_dns_addr a[40];
        for (int i = 0; i < 40; i++)
                a[i] = (nsr_dns_addr){ .family = AF_INET6, .addr = { 0x20, 0x01, [15] = (uint8_t) i } };
        char name[200];
        memset(name, 'n', sizeof(name));
        name[60] = name[120] = name[180] = '.';
        name[199] = '\0';
        size_t n = build(m, name, NSR_DNS_TYPE_AAAA, 1, false, 0);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        /* 512 bytes: as many as fit, and TC. */
        ssize_t l = nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 40, 60, out, q.udp_max);
        ck_assert_int_le(l, 512);
        size_t fit = (512 - n) / 28;
        ck_assert_uint_eq(rd16(out + 6), fit);
        ck_assert(rd16(out + 2) & 0x0200);
        /* Room enough (TCP): at most NSR_DNS_ANSWERS_MAX, no TC. */
        l = nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 40, 60, out, sizeof(out));
        ck_assert_uint_eq(rd16(out + 6), NSR_DNS_ANSWERS_MAX);
        ck_assert(!(rd16(out + 2) & 0x0200));
        ck_assert_int_eq(l, (ssize_t) (n + 28 * NSR_DNS_ANSWERS_MAX));
        /* No room for the question. */
        ck_assert_int_eq(nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 40, 60, out, n - 1), -ENOBUFS);
        /* EDNS: the client's size (capped), and an OPT in the answer. */
        n = build(m, name, NSR_DNS_TYPE_AAAA, 1, true, 1000);
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), 0);
        l = nsr_dns_answer(&q, NSR_DNS_NOERROR, a, 40, 60, out, q.udp_max);
        ck_assert_int_le(l, 1000);
        ck_assert_uint_eq(rd16(out + 6), (1000 - n) / 28);
        ck_assert_uint_eq(rd16(out + 10), 1);
        ck_assert_uint_eq(out[l - 11], 0);
        ck_assert_uint_eq(rd16(out + l - 10), 41);
        ck_assert_uint_eq(rd16(out + l - 2), 0);
        /* BADVERS: rcode 0 in the header, 1 in the OPT's extended bits. */
        m[n - 11 + 6] = 1;
        ck_assert_int_eq(nsr_dns_query_parse(m, n, &q), NSR_DNS_BADVERS);
        l = nsr_dns_answer(&q, NSR_DNS_BADVERS, NULL, 0, 0, out, q.udp_max);
        ck_assert_uint_eq(rd16(out + 2) & 0xF, 0);
        ck_assert_uint_eq(out[l - 6], 1);
}
END_TEST

START_TEST(test_tcp) {
        const uint8_t *msg;
        size_t len, used;
        const uint8_t b[] = { 0, 3, 'a', 'b', 'c', 0, 1 };
        ck_assert_int_eq(nsr_dns_tcp_next(b, 0, &msg, &len, &used), 0);
        ck_assert_int_eq(nsr_dns_tcp_next(b, 1, &msg, &len, &used), 0);
        ck_assert_int_eq(nsr_dns_tcp_next(b, 4, &msg, &len, &used), 0);
        ck_assert_int_eq(nsr_dns_tcp_next(b, 5, &msg, &len, &used), 1);
        ck_assert_ptr_eq(msg, b + 2);
        ck_assert_uint_eq(len, 3);
        ck_assert_uint_eq(used, 5);
        const uint8_t z[] = { 0, 0, 1 };
        ck_assert_int_eq(nsr_dns_tcp_next(z, 3, &msg, &len, &used), -EBADMSG);
        char t[16];
        nsr_dns_type_text(65, t, sizeof(t));
        ck_assert_str_eq(t, "HTTPS");
        nsr_dns_type_text(999, t, sizeof(t));
        ck_assert_str_eq(t, "TYPE999");
}
END_TEST

static Suite *dns_suite(void) {
        Suite *s = suite_create("dns");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_parse_ok);
        tcase_add_test(tc, test_parse_refused);
        tcase_add_test(tc, test_answer);
        tcase_add_test(tc, test_answer_size);
        tcase_add_test(tc, test_tcp);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(dns_suite)
