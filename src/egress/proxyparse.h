/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a sandbox's client says to the relay, parsed: the HTTP proxy
 * request head, the body framing that ends a request, the SOCKS5 steps,
 * host:port authorities, and the safe text of a host name from the wire.
 * Pure (no I/O), so it is unit tested and fuzzed (tests/fuzz/fuzz-proxy);
 * relay.c owns the sockets.
 *
 * The HTTP parser is strict, because a lenient proxy in front of a
 * lenient server is how requests get smuggled: the rules check one
 * request, the server answers two. Refused with 400 (431 for size):
 * a line end other than CRLF, a NUL or other control byte, obs-fold,
 * whitespace before a header's colon, a header name that is not a token,
 * a version other than HTTP/1.0 and HTTP/1.1, a Host that differs from
 * the request target's authority, more than one Host, none in HTTP/1.1,
 * Content-Length and Transfer-Encoding together, more than one of
 * either, a length that is not plain digits, a transfer coding other
 * than chunked, and any body framing on CONNECT. The body of a forwarded
 * request is followed byte by byte (nsr_http_body) and nothing after it
 * reaches the server: one request per connection. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "egress/rules.h"

#define NSR_HTTP_HEAD_MAX (16 * 1024)

/* How a forwarded request's body ends. */
typedef enum nsr_http_framing {
        NSR_HTTP_NO_BODY, /* no Content-Length, no Transfer-Encoding */
        NSR_HTTP_LENGTH,  /* Content-Length */
        NSR_HTTP_CHUNKED, /* Transfer-Encoding: chunked */
        _NSR_HTTP_FRAMING_MAX,
        _NSR_HTTP_FRAMING_INVALID = -EINVAL,
} nsr_http_framing;

typedef struct nsr_http_head {
        bool connect;
        char host[NSR_EGRESS_HOST_MAX + 3]; /* as the target wrote it, brackets removed */
        size_t host_len;                    /* sizeof(host) when too long: host holds a prefix */
        int port;
        size_t head_len; /* bytes of the request head, CRLF CRLF included */
        /* HTTP (not CONNECT): the head to send the server (origin-form
         * request line, Host from the target, no hop-by-hop headers,
         * "Connection: close"), malloc'd; and how its body ends. */
        char *upstream;
        size_t upstream_len;
        nsr_http_framing framing;
        uint64_t content_length;
        /* Refused: the status (400, 431) and why, static text. */
        int status;
        const char *why;
} nsr_http_head;

/* Parses the head at the start of data[0..len). Returns 1 with *ret
 * filled, 0 when more bytes are needed (nothing wrong so far), or
 * -EBADMSG with ret->status and ret->why. */
int nsr_http_head_parse(const char *data, size_t len, nsr_http_head *ret);
void nsr_http_head_done(nsr_http_head *h);

/* The body of one request, followed as it passes. */
typedef struct nsr_http_body {
        nsr_http_framing framing;
        bool done;
        int state;         /* chunked: where in the chunk syntax */
        uint64_t left;     /* bytes of body (LENGTH) or of this chunk's data */
        unsigned digits;   /* hex digits of this chunk size */
        size_t line;       /* bytes of the current extension or trailer line */
        size_t n_trailers; /* trailer lines */
} nsr_http_body;

void nsr_http_body_init(nsr_http_body *b, nsr_http_framing framing, uint64_t content_length);
/* Takes data[0..len): returns how many of these bytes belong to the body
 * (the rest, after b->done, to nothing), or -EBADMSG for a malformed
 * chunked body. */
ssize_t nsr_http_body_feed(nsr_http_body *b, const char *data, size_t len);

/* SOCKS5 (RFC 1928), no authentication, CONNECT only. */
typedef struct nsr_socks_step {
        size_t used;   /* bytes the step took */
        uint8_t reply; /* request refused: the SOCKS reply code, or 0 */
        bool noauth;   /* greeting: the client offers "no authentication" */
        char host[NSR_EGRESS_HOST_MAX + 3];
        size_t host_len;
        int port;
} nsr_socks_step;

/* Each returns 1 when the step is complete (*ret filled), 0 when more
 * bytes are needed, -EPROTO when the client does not speak SOCKS5 (close
 * without an answer). A request for another command or address type is
 * complete with ret->reply set. */
int nsr_socks_greeting(const uint8_t *d, size_t len, nsr_socks_step *ret);
int nsr_socks_request(const uint8_t *d, size_t len, nsr_socks_step *ret);

/* "host:port", "[v6]:port" or, with def > 0, either without a port.
 * *host points into a; no userinfo, no bare v6 address. */
bool nsr_proxy_split_authority(const char *a, size_t n, const char **host, size_t *hlen, int *port, int def);

/* A host name from the wire, shown only in this form: [A-Za-z0-9.-_:],
 * anything else as '?'. */
void nsr_proxy_sanitize(const char *in, size_t len, char *out, size_t outlen);
