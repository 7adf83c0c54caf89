/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The relay's parsers (egress/proxyparse): strict request heads, the body
 * that ends a request, SOCKS5 steps, authorities. */
#include "config.h"

#include <string.h>

#include "egress/proxyparse.h"
#include "unit.h"

static int parse(const char *s, nsr_http_head *h) {
        return nsr_http_head_parse(s, strlen(s), h);
}

START_TEST(test_head_ok) {
        nsr_http_head h;
        const char *req = "GET http://Example.org:8080/a/b?c=d HTTP/1.1\r\nHost: example.ORG:8080\r\n"
                          "User-Agent: t\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n"
                          "Proxy-Authorization: x\r\nUpgrade: h2c\r\nTE: trailers\r\nAccept:  */* \r\n\r\nBODY";
        ck_assert_int_eq(parse(req, &h), 1);
        ck_assert(!h.connect);
        ck_assert_str_eq(h.host, "Example.org");
        ck_assert_int_eq(h.port, 8080);
        ck_assert_uint_eq(h.head_len, strlen(req) - 4);
        ck_assert_int_eq(h.framing, NSR_HTTP_NO_BODY);
        ck_assert_str_eq(h.upstream, "GET /a/b?c=d HTTP/1.1\r\nHost: Example.org:8080\r\nUser-Agent: t\r\n"
                                     "Accept:  */* \r\nConnection: close\r\n\r\n");
        ck_assert_uint_eq(h.upstream_len, strlen(h.upstream));
        nsr_http_head_done(&h);

        ck_assert_int_eq(parse("GET http://h HTTP/1.0\r\n\r\n", &h), 1);
        ck_assert_str_eq(h.upstream, "GET / HTTP/1.0\r\nHost: h\r\nConnection: close\r\n\r\n");
        ck_assert_int_eq(h.port, 80);
        nsr_http_head_done(&h);
        ck_assert_int_eq(parse("GET http://h?q HTTP/1.1\r\nHost: h:80\r\n\r\n", &h), 1);
        ck_assert_str_eq(h.upstream, "GET /?q HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
        nsr_http_head_done(&h);

        ck_assert_int_eq(parse("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", &h), 1);
        ck_assert(h.connect);
        ck_assert_str_eq(h.host, "::1");
        ck_assert_int_eq(h.port, 443);
        ck_assert_ptr_null(h.upstream);
        ck_assert_int_eq(parse("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", &h), 1);
        ck_assert_int_eq(parse("CONNECT h:443 HTTP/1.0\r\n\r\n", &h), 1);

        ck_assert_int_eq(parse("POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 0012\r\n\r\n", &h), 1);
        ck_assert_int_eq(h.framing, NSR_HTTP_LENGTH);
        ck_assert_uint_eq(h.content_length, 12);
        nsr_http_head_done(&h);
        ck_assert_int_eq(parse("POST http://h/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n", &h), 1);
        ck_assert_int_eq(h.framing, NSR_HTTP_CHUNKED);
        ck_assert_ptr_null(strstr(h.upstream, "Connection: keep"));
        nsr_http_head_done(&h);
}
END_TEST

START_TEST(test_head_incomplete) {
        nsr_http_head h;
        ck_assert_int_eq(parse("", &h), 0);
        ck_assert_int_eq(parse("GET http://h/ HTTP/1.1\r\nHost: h\r\n", &h), 0);
        ck_assert_int_eq(parse("GET http://h/ HTTP/1.1\r\nHost: h\r\n\r", &h), 0);
        char big[NSR_HTTP_HEAD_MAX + 10];
        memset(big, 'A', sizeof(big));
        ck_assert_int_eq(nsr_http_head_parse(big, sizeof(big), &h), -EBADMSG);
        ck_assert_int_eq(h.status, 431);
}
END_TEST

START_TEST(test_head_refused) {
        static const char *const bad[] = {
                "GET http://h/ HTTP/1.1\nHost: h\r\n\r\n",                       /* bare LF after the request line */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX: 1\nHost: e\r\n\r\n",    /* bare LF inside */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX: 1\rHost: e\r\n\r\n",    /* bare CR */
                "GET http://h/ HTTP/1.1\r\nHost: h\n\n",                         /* LF LF end */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX: 1\r\n Host: e\r\n\r\n", /* obs-fold */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX: 1\r\n\tY\r\n\r\n",      /* obs-fold, tab */
                "GET http://h/ HTTP/1.1\r\nHost : h\r\n\r\n",                    /* space before colon */
                "GET http://h/ HTTP/1.1\r\nHost\t: h\r\n\r\n",                   /* tab before colon */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX-A\r\n\r\n",              /* no colon */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n",              /* empty name */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX(a): v\r\n\r\n",          /* not a token */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nX: a\x01z\r\n\r\n",        /* a control byte */
                "GET http://h/ HTTP/1.1\r\nHost: e\r\n\r\n",                     /* Host differs */
                "GET http://h/ HTTP/1.1\r\nHost: h:81\r\n\r\n",                  /* port differs */
                "GET http://h:81/ HTTP/1.1\r\nHost: h\r\n\r\n",                  /* default port differs */
                "GET http://h/ HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n",          /* two Hosts */
                "GET http://h/ HTTP/1.1\r\n\r\n",                                /* HTTP/1.1 without Host */
                "GET http://h/ HTTP/1.1\r\nHost: u@h\r\n\r\n",                   /* userinfo in Host */
                "CONNECT h:443 HTTP/1.1\r\nHost: e:443\r\n\r\n",                 /* CONNECT, Host differs */
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                "POST http://h/ HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                "POST http://h/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\nContent-Length: 0\r\n\r\n",
                "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\nTransfer-Encoding: chunked\r\n\r\n",
                "GET http://h/ HTTP/2.0\r\nHost: h\r\n\r\n",
                "GET http://h/ HTTP/1.1 \r\nHost: h\r\n\r\n",
                "GET  http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
                "get http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
                "GET http://h/#f HTTP/1.1\r\nHost: h\r\n\r\n",
                "GET http://h/\x7f HTTP/1.1\r\nHost: h\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
                "GET https://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
                "CONNECT h HTTP/1.1\r\nHost: h\r\n\r\n",
                "GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n",
                "\r\nGET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
                "\r\n\r\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                nsr_http_head h;
                int k = parse(bad[i], &h);
                if (k != -EBADMSG)
                        ck_abort_msg("case %zu was not refused (%d): %s", i, k, bad[i]);
                ck_assert_int_eq(h.status, 400);
                ck_assert_ptr_nonnull(h.why);
                ck_assert_ptr_null(h.upstream);
        }
        /* A NUL byte. */
        static const char nul[] = "GET http://h/ HTTP/1.1\r\nHost: h\0x\r\n\r\n";
        nsr_http_head h;
        ck_assert_int_eq(nsr_http_head_parse(nul, sizeof(nul) - 1, &h), -EBADMSG);
}
END_TEST

static ssize_t feed(nsr_http_body *b, const char *s) {
        return nsr_http_body_feed(b, s, strlen(s));
}

START_TEST(test_body) {
        nsr_http_body b;
        nsr_http_body_init(&b, NSR_HTTP_NO_BODY, 0);
        ck_assert(b.done);
        ck_assert_int_eq(feed(&b, "GET / HTTP/1.1\r\n"), 0);

        nsr_http_body_init(&b, NSR_HTTP_LENGTH, 5);
        ck_assert(!b.done);
        ck_assert_int_eq(feed(&b, "hel"), 3);
        ck_assert_int_eq(feed(&b, "loGET /"), 2);
        ck_assert(b.done);
        ck_assert_int_eq(feed(&b, "more"), 0);

        static const char chunked[] = "5\r\nhello\r\n3 ; ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nGET /x";
        size_t body_len = strlen(chunked) - strlen("GET /x");
        /* Whole, and a byte at a time. */
        nsr_http_body_init(&b, NSR_HTTP_CHUNKED, 0);
        ck_assert_int_eq(feed(&b, chunked), (ssize_t) body_len);
        ck_assert(b.done);
        nsr_http_body_init(&b, NSR_HTTP_CHUNKED, 0);
        size_t total = 0;
        for (size_t i = 0; chunked[i]; i++) {
                ssize_t k = nsr_http_body_feed(&b, chunked + i, 1);
                ck_assert_int_ge(k, 0);
                total += (size_t) k;
        }
        ck_assert_uint_eq(total, body_len);
        ck_assert(b.done);

        static const char *const bad[] = {
                "x\r\n",
                "\r\n",
                "5\nhello\r\n",
                "5\r\nhelloX\r\n",
                "5\r\nhello\rX",
                "0\r\n\r\r",
                "0\r\n Folded: x\r\n\r\n",
                "ffffffffffffffff\r\n",
                "5;\x01\r\n",
                "0\r\nX: 1\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                nsr_http_body_init(&b, NSR_HTTP_CHUNKED, 0);
                if (feed(&b, bad[i]) != -EBADMSG)
                        ck_abort_msg("chunked case %zu was not refused", i);
        }
}
END_TEST

START_TEST(test_socks) {
        nsr_socks_step st;
        static const uint8_t g[] = { 5, 2, 2, 0 };
        ck_assert_int_eq(nsr_socks_greeting(g, 1, &st), 0);
        ck_assert_int_eq(nsr_socks_greeting(g, 3, &st), 0);
        ck_assert_int_eq(nsr_socks_greeting(g, 4, &st), 1);
        ck_assert(st.noauth);
        ck_assert_uint_eq(st.used, 4);
        static const uint8_t g2[] = { 5, 1, 2 };
        ck_assert_int_eq(nsr_socks_greeting(g2, 3, &st), 1);
        ck_assert(!st.noauth);
        static const uint8_t g4[] = { 4, 1 };
        ck_assert_int_eq(nsr_socks_greeting(g4, 2, &st), -EPROTO);

        static const uint8_t v4[] = { 5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90, 'x' };
        ck_assert_int_eq(nsr_socks_request(v4, 9, &st), 0);
        ck_assert_int_eq(nsr_socks_request(v4, sizeof(v4), &st), 1);
        ck_assert_str_eq(st.host, "127.0.0.1");
        ck_assert_int_eq(st.port, 8080);
        ck_assert_uint_eq(st.used, 10);
        static const uint8_t name[] = { 5, 1, 0, 3, 3, 'a', '.', 'b', 0, 80 };
        ck_assert_int_eq(nsr_socks_request(name, sizeof(name), &st), 1);
        ck_assert_str_eq(st.host, "a.b");
        ck_assert_uint_eq(st.host_len, 3);
        ck_assert_int_eq(st.port, 80);
        static const uint8_t v6[] = { 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 187 };
        ck_assert_int_eq(nsr_socks_request(v6, sizeof(v6), &st), 1);
        ck_assert_str_eq(st.host, "::1");
        ck_assert_int_eq(st.port, 443);
        static const uint8_t bind[] = { 5, 2, 0, 1, 1, 2, 3, 4, 0, 80 };
        ck_assert_int_eq(nsr_socks_request(bind, sizeof(bind), &st), 1);
        ck_assert_int_eq(st.reply, 7);
        static const uint8_t atyp[] = { 5, 1, 0, 9, 0 };
        ck_assert_int_eq(nsr_socks_request(atyp, sizeof(atyp), &st), 1);
        ck_assert_int_eq(st.reply, 8);
        static const uint8_t rsv[] = { 5, 1, 1, 1, 0 };
        ck_assert_int_eq(nsr_socks_request(rsv, sizeof(rsv), &st), -EPROTO);
}
END_TEST

START_TEST(test_authority) {
        const char *h;
        size_t hl;
        int port = 0;
        ck_assert(nsr_proxy_split_authority("a.b:81", 6, &h, &hl, &port, 0));
        ck_assert_uint_eq(hl, 3);
        ck_assert_int_eq(port, 81);
        ck_assert(!nsr_proxy_split_authority("a.b", 3, &h, &hl, &port, 0));
        ck_assert(nsr_proxy_split_authority("a.b", 3, &h, &hl, &port, 80));
        ck_assert_int_eq(port, 80);
        ck_assert(nsr_proxy_split_authority("[::1]:5", 7, &h, &hl, &port, 0));
        ck_assert_uint_eq(hl, 3);
        ck_assert(!nsr_proxy_split_authority("::1", 3, &h, &hl, &port, 80));
        ck_assert(!nsr_proxy_split_authority("[::1]x", 6, &h, &hl, &port, 80));
        ck_assert(!nsr_proxy_split_authority("u@h:1", 5, &h, &hl, &port, 0));
        ck_assert(!nsr_proxy_split_authority("h:123456", 8, &h, &hl, &port, 0));
        ck_assert(!nsr_proxy_split_authority("h:1a", 4, &h, &hl, &port, 0));
        ck_assert(!nsr_proxy_split_authority("", 0, &h, &hl, &port, 80));
        char out[8];
        nsr_proxy_sanitize("a\x1b]b:c/d\nverylong", 18, out, sizeof(out));
        ck_assert_str_eq(out, "a??b:c?");
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("proxyparse");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_head_ok);
        tcase_add_test(tc, test_head_incomplete);
        tcase_add_test(tc, test_head_refused);
        tcase_add_test(tc, test_body);
        tcase_add_test(tc, test_socks);
        tcase_add_test(tc, test_authority);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
