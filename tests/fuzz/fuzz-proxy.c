/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The relay's parsers (egress/proxyparse.h), on what a hostile client in
 * the sandbox sends. Byte 0 picks:
 *   0  an HTTP proxy request head; a head that passes must rewrite to one
 *      with exactly one Host line, CRLF line ends only, and one end
 *   1  a request body, chunked (byte 1 = the split point): fed whole and
 *      in two parts, it must end at the same byte
 *   2  the SOCKS5 greeting, then the request behind it */
#include "config.h"

#include <stdlib.h>
#include <strings.h>

#include "egress/proxyparse.h"
#include "fuzz.h"

static void check_upstream(const nsr_http_head *h) {
        const char *u = h->upstream;
        size_t n = h->upstream_len;
        if (!u || n < 4 || memcmp(u + n - 4, "\r\n\r\n", 4) != 0 || memmem(u, n - 4, "\r\n\r\n", 4))
                abort();
        size_t hosts = 0;
        for (size_t i = 0; i < n; i++) {
                if (u[i] == '\n' && (i == 0 || u[i - 1] != '\r'))
                        abort();
                if (u[i] == '\r' && (i + 1 == n || u[i + 1] != '\n'))
                        abort();
                if (u[i] == '\0')
                        abort();
                if (i >= 2 && u[i - 1] == '\n' && n - i >= 5 && strncasecmp(u + i, "host:", 5) == 0)
                        hosts++;
                if (i >= 2 && u[i - 1] == '\n' && (u[i] == ' ' || u[i] == '\t'))
                        abort();
        }
        if (hosts != 1)
                abort();
}

static void head(const uint8_t *data, size_t size) {
        nsr_http_head h;
        int k = nsr_http_head_parse((const char *) data, size, &h);
        if (k < 0 && (!h.why || (h.status != 400 && h.status != 431) || h.upstream))
                abort();
        if (k > 0) {
                if (h.head_len > size || h.head_len > NSR_HTTP_HEAD_MAX || h.port < 0 || h.port > 99999)
                        abort();
                if (!h.connect)
                        check_upstream(&h);
                else if (h.upstream)
                        abort();
        }
        nsr_http_head_done(&h);
}

static void body(const uint8_t *data, size_t size) {
        if (size < 1)
                return;
        size_t cut = data[0] % (size);
        data++;
        size--;
        if (cut > size)
                cut = size;
        nsr_http_body a, b;
        nsr_http_body_init(&a, NSR_HTTP_CHUNKED, 0);
        nsr_http_body_init(&b, NSR_HTTP_CHUNKED, 0);
        ssize_t whole = nsr_http_body_feed(&a, (const char *) data, size);
        ssize_t p1 = nsr_http_body_feed(&b, (const char *) data, cut);
        ssize_t p2 = p1 < 0 ? -EBADMSG : nsr_http_body_feed(&b, (const char *) data + cut, size - cut);
        if (whole > (ssize_t) size)
                abort();
        if (whole >= 0) {
                if (p1 < 0 || p2 < 0 || p1 + p2 != whole || a.done != b.done)
                        abort();
        } else if (p1 >= 0 && p2 >= 0)
                abort(); /* the bytes are the same, so is the error */
}

static void socks(const uint8_t *data, size_t size) {
        nsr_socks_step st;
        int k = nsr_socks_greeting(data, size, &st);
        if (k <= 0)
                return;
        if (st.used > size)
                abort();
        k = nsr_socks_request(data + st.used, size - st.used, &st);
        if (k > 0 && !st.reply &&
            (st.host_len > NSR_EGRESS_HOST_MAX + 2 || st.port > 65535 || strlen(st.host) > st.host_len))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 2 * NSR_HTTP_HEAD_MAX)
                return 0;
        switch (data[0] % 3) {
        case 0:
                head(data + 1, size - 1);
                break;
        case 1:
                body(data + 1, size - 1);
                break;
        default:
                socks(data + 1, size - 1);
                break;
        }
        return 0;
}
