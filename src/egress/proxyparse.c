/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The relay's parsers: HTTP proxy request heads, request bodies, SOCKS5
 * steps, authorities (proxyparse.h). Pure. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"
#include "egress/proxyparse.h"

#define MAX_HEADERS  256
#define LINE_MAX_LEN 8192 /* a chunk extension or trailer line */
#define MAX_TRAILERS 64

/* ---- small pieces ------------------------------------------------------ */

static bool parse_port_text(const char *s, size_t n, int *ret) {
        if (n == 0 || n > 5)
                return false;
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char) s[i]))
                        return false;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return true;
}

bool nsr_proxy_split_authority(const char *a, size_t n, const char **host, size_t *hlen, int *port, int def) {
        if (n == 0 || memchr(a, '@', n))
                return false;
        const char *colon = NULL;
        if (a[0] == '[') {
                const char *close = memchr(a, ']', n);
                if (!close)
                        return false;
                *host = a + 1;
                *hlen = (size_t) (close - a - 1);
                if (close + 1 < a + n) {
                        if (close[1] != ':')
                                return false;
                        colon = close + 1;
                }
        } else {
                colon = memrchr(a, ':', n);
                if (colon && memchr(a, ':', (size_t) (colon - a)))
                        return false; /* a bare v6 address */
                *host = a;
                *hlen = colon ? (size_t) (colon - a) : n;
        }
        if (colon)
                return parse_port_text(colon + 1, (size_t) (a + n - colon - 1), port);
        if (def <= 0)
                return false;
        *port = def;
        return true;
}

void nsr_proxy_sanitize(const char *in, size_t len, char *out, size_t outlen) {
        size_t o = 0;
        if (outlen == 0)
                return;
        for (size_t i = 0; i < len && o + 1 < outlen; i++) {
                unsigned char ch = (unsigned char) in[i];
                out[o++] = (isalnum(ch) || (ch && strchr(".-_:", ch))) ? (char) ch : '?';
        }
        out[o] = '\0';
}

/* RFC 9110 5.6.2 token characters. */
static bool is_tchar(unsigned char c) {
        return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A field value byte: HTAB, visible ASCII, space, or obs-text. */
static bool is_value_byte(unsigned char c) {
        return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool name_is(const char *name, size_t n, const char *want) {
        return n == strlen(want) && strncasecmp(name, want, n) == 0;
}

/* Dropped from a forwarded request: they concern the hop to the proxy, or
 * would change what the connection is after this request. Host is
 * replaced by the target's authority. */
static bool hop_header(const char *name, size_t n) {
        static const char *const names[] = { "proxy-connection",
                                             "proxy-authorization",
                                             "connection",
                                             "keep-alive",
                                             "proxy-authenticate",
                                             "host",
                                             "upgrade",
                                             "te" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (name_is(name, n, names[i]))
                        return true;
        return false;
}

/* ---- the head ------------------------------------------------------------ */

static int refuse(nsr_http_head *h, int status, const char *why) {
        free(h->upstream);
        h->upstream = NULL;
        h->upstream_len = 0;
        h->status = status;
        h->why = why;
        return -EBADMSG;
}

/* Where the head ends (CRLF CRLF): 1 with *ret_len, 0 when incomplete,
 * -EBADMSG for a line end other than CRLF or a NUL. */
static int find_end(const char *d, size_t len, size_t *ret_len, const char **why) {
        size_t n = len < NSR_HTTP_HEAD_MAX ? len : NSR_HTTP_HEAD_MAX;
        for (size_t i = 0; i < n; i++) {
                char c = d[i];
                if (c == '\0') {
                        *why = "a NUL byte in the request head";
                        return -EBADMSG;
                }
                if (c == '\n' && (i == 0 || d[i - 1] != '\r')) {
                        *why = "a line in the request head ends without CRLF";
                        return -EBADMSG;
                }
                if (c == '\r' && i + 1 < len && d[i + 1] != '\n') {
                        *why = "a bare CR in the request head";
                        return -EBADMSG;
                }
                if (c == '\n' && i >= 3 && d[i - 2] == '\n') {
                        *ret_len = i + 1;
                        return 1;
                }
        }
        return 0;
}

typedef struct fields {
        const char *host;
        size_t host_len;
        unsigned n_host, n_length, n_te;
        uint64_t length;
} fields;

static void trim(const char **v, size_t *n) {
        while (*n && ((*v)[0] == ' ' || (*v)[0] == '\t')) {
                (*v)++;
                (*n)--;
        }
        while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
                (*n)--;
}

/* One header line (no CRLF): its syntax, and what the checks need. */
static const char *header_line(const char *line, size_t n, fields *f, size_t *ret_name_len) {
        if (n == 0)
                return "an empty header line";
        if (line[0] == ' ' || line[0] == '\t')
                return "a folded header line (obs-fold)";
        size_t k = 0;
        while (k < n && is_tchar((unsigned char) line[k]))
                k++;
        if (k == n)
                return "a header line without a colon";
        if (line[k] == ' ' || line[k] == '\t')
                return "whitespace before a header's colon";
        if (line[k] != ':' || k == 0)
                return "a header name that is not a token";
        *ret_name_len = k;
        const char *v = line + k + 1;
        size_t vn = n - k - 1;
        for (size_t i = 0; i < vn; i++)
                if (!is_value_byte((unsigned char) v[i]))
                        return "a control byte in a header value";
        trim(&v, &vn);
        if (name_is(line, k, "host")) {
                f->n_host++;
                f->host = v;
                f->host_len = vn;
        } else if (name_is(line, k, "content-length")) {
                f->n_length++;
                if (vn == 0 || vn > 18)
                        return "a Content-Length that is not a plain number";
                uint64_t x = 0;
                for (size_t i = 0; i < vn; i++) {
                        if (!isdigit((unsigned char) v[i]))
                                return "a Content-Length that is not a plain number";
                        x = x * 10 + (uint64_t) (v[i] - '0');
                }
                f->length = x;
        } else if (name_is(line, k, "transfer-encoding")) {
                f->n_te++;
                if (!name_is(v, vn, "chunked"))
                        return "a Transfer-Encoding other than chunked";
        }
        return NULL;
}

static bool same_host(const char *a, size_t an, const char *b, size_t bn) {
        char x[NSR_EGRESS_HOST_MAX + 3], y[NSR_EGRESS_HOST_MAX + 3];
        char nx[NSR_EGRESS_HOST_MAX + 1], ny[NSR_EGRESS_HOST_MAX + 1];
        bool addr;
        if (an >= sizeof(x) || bn >= sizeof(y) || memchr(a, '\0', an) || memchr(b, '\0', bn))
                return false;
        memcpy(x, a, an);
        x[an] = '\0';
        memcpy(y, b, bn);
        y[bn] = '\0';
        if (nsr_egress_host_normalize(x, nx, sizeof(nx), &addr) == 0 &&
            nsr_egress_host_normalize(y, ny, sizeof(ny), &addr) == 0)
                return streq(nx, ny);
        return an == bn && strncasecmp(a, b, an) == 0;
}

/* The request line: method, target, version; the target's authority. */
static int request_line(const char *d, size_t n, nsr_http_head *h, const char **ret_auth, size_t *ret_auth_len,
                        const char **ret_path, bool *ret_v11) {
        const char *sp1 = memchr(d, ' ', n);
        if (!sp1 || sp1 == d)
                return refuse(h, 400, "not an HTTP proxy request");
        for (const char *m = d; m < sp1; m++)
                if (!isupper((unsigned char) *m))
                        return refuse(h, 400, "not an HTTP proxy request");
        const char *tgt = sp1 + 1;
        const char *sp2 = memchr(tgt, ' ', (size_t) (d + n - tgt));
        if (!sp2 || sp2 == tgt)
                return refuse(h, 400, "not an HTTP proxy request");
        const char *ver = sp2 + 1;
        size_t vn = (size_t) (d + n - ver);
        if (vn != 8 || (memcmp(ver, "HTTP/1.1", 8) != 0 && memcmp(ver, "HTTP/1.0", 8) != 0))
                return refuse(h, 400, "not an HTTP/1.0 or HTTP/1.1 request");
        *ret_v11 = ver[7] == '1';
        for (const char *t = tgt; t < sp2; t++)
                if ((unsigned char) *t <= 0x20 || (unsigned char) *t >= 0x7f || *t == '#')
                        return refuse(h, 400, "a request target with a byte it may not hold");
        size_t tlen = (size_t) (sp2 - tgt);
        const char *host;
        size_t hlen;
        h->connect = (size_t) (sp1 - d) == 7 && memcmp(d, "CONNECT", 7) == 0;
        if (h->connect) {
                if (!nsr_proxy_split_authority(tgt, tlen, &host, &hlen, &h->port, 0))
                        return refuse(h, 400, "CONNECT needs host:port");
                *ret_auth = tgt;
                *ret_auth_len = tlen;
                *ret_path = sp2;
        } else {
                if (tlen < 7 || strncasecmp(tgt, "http://", 7) != 0)
                        return refuse(h, 400, "the proxy takes absolute http:// URIs, and CONNECT for everything else");
                const char *auth = tgt + 7;
                const char *path = auth;
                while (path < sp2 && *path != '/' && *path != '?')
                        path++;
                if (!nsr_proxy_split_authority(auth, (size_t) (path - auth), &host, &hlen, &h->port, 80))
                        return refuse(h, 400, "bad host in the request URI");
                *ret_auth = auth;
                *ret_auth_len = (size_t) (path - auth);
                *ret_path = path;
        }
        h->host_len = hlen < sizeof(h->host) ? hlen : sizeof(h->host);
        size_t copy = hlen < sizeof(h->host) - 1 ? hlen : sizeof(h->host) - 1;
        memcpy(h->host, host, copy);
        h->host[copy] = '\0';
        return 0;
}

/* The Host header and the body framing, against the request line. */
static int check_fields(const fields *f, bool v11, nsr_http_head *h) {
        if (f->n_host > 1)
                return refuse(h, 400, "more than one Host header");
        if (f->n_host == 0 && v11)
                return refuse(h, 400, "an HTTP/1.1 request without a Host header");
        if (f->n_host == 1) {
                const char *hh;
                size_t hn;
                int port = 0;
                if (!nsr_proxy_split_authority(f->host, f->host_len, &hh, &hn, &port, h->connect ? h->port : 80) ||
                    port != h->port || !same_host(hh, hn, h->host, h->host_len))
                        return refuse(h, 400, "the Host header differs from the request target");
        }
        if (f->n_length > 1 || f->n_te > 1)
                return refuse(h, 400, "more than one Content-Length or Transfer-Encoding header");
        if (f->n_length && f->n_te)
                return refuse(h, 400, "both Content-Length and Transfer-Encoding");
        if (h->connect && (f->n_length || f->n_te))
                return refuse(h, 400, "a CONNECT request with a body");
        if (f->n_te && !v11)
                return refuse(h, 400, "Transfer-Encoding in an HTTP/1.0 request");
        h->framing = f->n_te ? NSR_HTTP_CHUNKED : f->n_length ? NSR_HTTP_LENGTH : NSR_HTTP_NO_BODY;
        h->content_length = f->length;
        return 0;
}

static void put(char *out, size_t *o, const char *s, size_t n) {
        memcpy(out + *o, s, n);
        *o += n;
}

int nsr_http_head_parse(const char *data, size_t len, nsr_http_head *ret) {
        nsr_http_head *h = ret;
        *h = (nsr_http_head){ 0 };
        const char *why = NULL;
        size_t head_len = 0;
        int k = find_end(data, len, &head_len, &why);
        if (k < 0)
                return refuse(h, 400, why);
        if (k == 0) {
                if (len >= NSR_HTTP_HEAD_MAX)
                        return refuse(h, 431, "request header too large");
                return 0;
        }
        h->head_len = head_len;
        const char *eol = memmem(data, head_len, "\r\n", 2);
        const char *auth, *path;
        size_t auth_len;
        bool v11 = false;
        int r = request_line(data, (size_t) (eol - data), h, &auth, &auth_len, &path, &v11);
        if (r < 0)
                return r;

        /* Header lines: checked first, then (HTTP) copied. */
        fields f = { 0 };
        size_t n_lines = 0;
        const char *end = data + head_len - 2;
        for (const char *line = eol + 2; line < end; n_lines++) {
                const char *le = memmem(line, (size_t) (end + 2 - line), "\r\n", 2);
                size_t nl = 0;
                if (n_lines >= MAX_HEADERS)
                        return refuse(h, 431, "too many header lines");
                why = header_line(line, (size_t) (le - line), &f, &nl);
                if (why)
                        return refuse(h, 400, why);
                line = le + 2;
        }
        r = check_fields(&f, v11, h);
        if (r < 0)
                return r;
        if (h->connect)
                return 1;

        /* Origin-form request line, Host from the URI (the name the rules
         * check; RFC 9112 3.2.2 has a proxy replace it too), the end-to-end
         * headers, one request per connection. */
        char *out = nsr_malloc0(head_len + auth_len + 64);
        size_t o = 0;
        const char *sp1 = memchr(data, ' ', (size_t) (eol - data));
        put(out, &o, data, (size_t) (sp1 - data) + 1);
        if (*path != '/')
                out[o++] = '/';
        put(out, &o, path, (size_t) (eol - path));
        put(out, &o, "\r\nHost: ", 8);
        put(out, &o, auth, auth_len);
        put(out, &o, "\r\n", 2);
        for (const char *line = eol + 2; line < end;) {
                const char *le = memmem(line, (size_t) (end + 2 - line), "\r\n", 2);
                size_t nl = (size_t) ((const char *) memchr(line, ':', (size_t) (le - line)) - line);
                if (!hop_header(line, nl))
                        put(out, &o, line, (size_t) (le - line) + 2);
                line = le + 2;
        }
        put(out, &o, "Connection: close\r\n\r\n", 21);
        h->upstream = out;
        h->upstream_len = o;
        return 1;
}

void nsr_http_head_done(nsr_http_head *h) {
        free(h->upstream);
        h->upstream = NULL;
        h->upstream_len = 0;
}

/* ---- the body ------------------------------------------------------------ */

enum {
        C_SIZE,       /* hex digits of a chunk size */
        C_EXT,        /* after the size: BWS, extensions, up to CR */
        C_SIZE_LF,    /* the LF of the size line */
        C_DATA,       /* chunk data */
        C_DATA_CR,    /* the CRLF after the data */
        C_DATA_LF,    /**/
        C_TRAILER,    /* at the start of a trailer line, or of the final CRLF */
        C_TRAILER_IN, /* inside a trailer line */
        C_TRAILER_LF, /* the LF ending a trailer line */
        C_END_LF,     /* the LF of the final CRLF */
};

void nsr_http_body_init(nsr_http_body *b, nsr_http_framing framing, uint64_t content_length) {
        *b = (nsr_http_body){ .framing = framing, .state = C_SIZE };
        if (framing == NSR_HTTP_LENGTH)
                b->left = content_length;
        b->done = framing == NSR_HTTP_NO_BODY || (framing == NSR_HTTP_LENGTH && content_length == 0);
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        c = (char) tolower((unsigned char) c);
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One byte of chunk syntax (not data): 0, or -EBADMSG. */
static int chunk_byte(nsr_http_body *b, char c) {
        switch (b->state) {
        case C_SIZE: {
                int v = hexval(c);
                if (v >= 0) {
                        if (++b->digits > 15)
                                return -EBADMSG;
                        b->left = b->left * 16 + (uint64_t) v;
                        return 0;
                }
                if (b->digits == 0)
                        return -EBADMSG;
                if (c == '\r') {
                        b->state = C_SIZE_LF;
                        return 0;
                }
                if (c != ';' && c != ' ' && c != '\t')
                        return -EBADMSG;
                b->state = C_EXT;
                b->line = 0;
                return 0;
        }
        case C_EXT:
                if (c == '\r') {
                        b->state = C_SIZE_LF;
                        return 0;
                }
                if (!is_value_byte((unsigned char) c) || ++b->line > LINE_MAX_LEN)
                        return -EBADMSG;
                return 0;
        case C_SIZE_LF:
                if (c != '\n')
                        return -EBADMSG;
                b->state = b->left ? C_DATA : C_TRAILER;
                return 0;
        case C_DATA_CR:
                if (c != '\r')
                        return -EBADMSG;
                b->state = C_DATA_LF;
                return 0;
        case C_DATA_LF:
                if (c != '\n')
                        return -EBADMSG;
                b->state = C_SIZE;
                b->digits = 0;
                b->left = 0;
                return 0;
        case C_TRAILER:
                if (c == '\r') {
                        b->state = C_END_LF;
                        return 0;
                }
                /* A trailer line: no folding, no more than a few. */
                if (c == ' ' || c == '\t' || !is_value_byte((unsigned char) c) || ++b->n_trailers > MAX_TRAILERS)
                        return -EBADMSG;
                b->state = C_TRAILER_IN;
                b->line = 1;
                return 0;
        case C_TRAILER_IN:
                if (c == '\r') {
                        b->state = C_TRAILER_LF;
                        return 0;
                }
                if (!is_value_byte((unsigned char) c) || ++b->line > LINE_MAX_LEN)
                        return -EBADMSG;
                return 0;
        case C_TRAILER_LF:
                if (c != '\n')
                        return -EBADMSG;
                b->state = C_TRAILER;
                return 0;
        case C_END_LF:
                if (c != '\n')
                        return -EBADMSG;
                b->done = true;
                return 0;
        default:
                return -EBADMSG;
        }
}

ssize_t nsr_http_body_feed(nsr_http_body *b, const char *data, size_t len) {
        size_t i = 0;
        if (b->framing == NSR_HTTP_LENGTH) {
                size_t take = b->left < len ? (size_t) b->left : len;
                b->left -= take;
                b->done = b->left == 0;
                return (ssize_t) take;
        }
        if (b->framing != NSR_HTTP_CHUNKED)
                return 0;
        while (i < len && !b->done) {
                if (b->state == C_DATA) {
                        size_t take = b->left < len - i ? (size_t) b->left : len - i;
                        b->left -= take;
                        i += take;
                        if (b->left == 0)
                                b->state = C_DATA_CR;
                        continue;
                }
                if (chunk_byte(b, data[i]) < 0)
                        return -EBADMSG;
                i++;
        }
        return (ssize_t) i;
}

/* ---- SOCKS5 -------------------------------------------------------------- */

int nsr_socks_greeting(const uint8_t *d, size_t len, nsr_socks_step *ret) {
        *ret = (nsr_socks_step){ 0 };
        if (len < 1)
                return 0;
        if (d[0] != 5)
                return -EPROTO;
        if (len < 2)
                return 0;
        size_t need = 2 + (size_t) d[1];
        if (len < need)
                return 0;
        ret->used = need;
        ret->noauth = memchr(d + 2, 0, d[1]) != NULL;
        return 1;
}

int nsr_socks_request(const uint8_t *d, size_t len, nsr_socks_step *ret) {
        *ret = (nsr_socks_step){ 0 };
        if (len >= 1 && d[0] != 5)
                return -EPROTO;
        if (len >= 3 && d[2] != 0)
                return -EPROTO;
        if (len < 5)
                return 0;
        size_t need;
        switch (d[3]) {
        case 1:
                need = 4 + 4 + 2;
                break;
        case 3:
                need = 4 + 1 + (size_t) d[4] + 2;
                break;
        case 4:
                need = 4 + 16 + 2;
                break;
        default:
                ret->used = len;
                ret->reply = 8; /* address type not supported */
                return 1;
        }
        if (len < need)
                return 0;
        ret->used = need;
        if (d[1] != 1) {
                ret->reply = 7; /* command not supported */
                return 1;
        }
        ret->port = d[need - 2] << 8 | d[need - 1];
        if (d[3] == 1 || d[3] == 4) {
                inet_ntop(d[3] == 1 ? AF_INET : AF_INET6, d + 4, ret->host, sizeof(ret->host));
                ret->host_len = strlen(ret->host);
        } else {
                ret->host_len = d[4];
                memcpy(ret->host, d + 5, ret->host_len);
                ret->host[ret->host_len] = '\0';
        }
        return 1;
}
