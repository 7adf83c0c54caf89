/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "egress/rules.h"

/* ---- host names and addresses ----------------------------------------- */

static bool valid_name(const char *s) {
        size_t label = 0;
        if (!*s)
                return false;
        for (const char *c = s; *c; c++) {
                if (*c == '.') {
                        if (label == 0)
                                return false;
                        label = 0;
                        continue;
                }
                if (!(isalnum((unsigned char) *c) || *c == '-' || *c == '_'))
                        return false;
                if (++label > 63)
                        return false;
        }
        return label > 0;
}

int nsr_egress_host_normalize(const char *host, char *buf, size_t len, bool *ret_addr) {
        char tmp[NSR_EGRESS_HOST_MAX + 2];
        size_t n = strlen(host);
        bool bracketed = false;
        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
                host++;
                n -= 2;
                bracketed = true;
        }
        if (n == 0 || n > NSR_EGRESS_HOST_MAX + 1)
                return -EINVAL;
        memcpy(tmp, host, n);
        tmp[n] = '\0';

        struct in6_addr a6;
        struct in_addr a4;
        if (inet_pton(AF_INET6, tmp, &a6) == 1) {
                if (!inet_ntop(AF_INET6, &a6, buf, (socklen_t) len))
                        return -ENOBUFS;
                *ret_addr = true;
                return 0;
        }
        if (bracketed)
                return -EINVAL;
        /* inet_aton, not inet_pton: the resolver also takes "127.1" and
         * "2130706433" as addresses, so they must not pass as names. */
        if (strspn(tmp, "0123456789xXabcdefABCDEF.") == n && inet_aton(tmp, &a4) == 1) {
                if (!inet_ntop(AF_INET, &a4, buf, (socklen_t) len))
                        return -ENOBUFS;
                *ret_addr = true;
                return 0;
        }
        if (tmp[n - 1] == '.')
                tmp[--n] = '\0';
        if (n == 0 || n > NSR_EGRESS_HOST_MAX || !valid_name(tmp) || n + 1 > len)
                return -EINVAL;
        for (size_t i = 0; i <= n; i++)
                buf[i] = (char) tolower((unsigned char) tmp[i]);
        *ret_addr = false;
        return 0;
}

/* ---- patterns ---------------------------------------------------------- */

static int parse_port(const char *s, int *ret) {
        if (streq(s, "*")) {
                *ret = -1;
                return 0;
        }
        if (!*s || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        long v = strtol(s, NULL, 10);
        if (v < 1 || v > 65535)
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

static int bad_pattern(const char *opt, const char *text, nsr_error *err) {
        return nsr_error_setx(err, EINVAL,
                              "%s %s: not a host pattern (host, *.domain, an IPv4 address or an IPv6 address in "
                              "brackets, each with an optional :PORT)",
                              opt, text);
}

int nsr_egress_pattern_parse(const char *text, const char *opt, nsr_egress_pattern *ret, nsr_error *err) {
        nsr_egress_pattern p = { .kind = NSR_EGRESS_NAME };
        size_t n = strlen(text);
        if (n == 0 || n >= sizeof(p.text))
                return nsr_error_setx(err, EINVAL,
                                      "%s needs a host pattern such as example.org, *.example.org or "
                                      "127.0.0.1:8080",
                                      opt);
        memcpy(p.text, text, n + 1);

        char host[sizeof(p.text)];
        const char *port = NULL;
        memcpy(host, text, n + 1);
        if (host[0] == '[') {
                char *close = strchr(host, ']');
                if (!close)
                        return bad_pattern(opt, text, err);
                if (close[1] == ':')
                        port = close + 2;
                else if (close[1] != '\0')
                        return bad_pattern(opt, text, err);
                close[1] = '\0';
        } else {
                char *colon = strchr(host, ':');
                if (colon && !strchr(colon + 1, ':')) {
                        *colon = '\0';
                        port = colon + 1;
                }
                /* More than one colon: an IPv6 address without a port. */
        }
        if (port && parse_port(port, &p.port) < 0)
                return nsr_error_setx(err, EINVAL, "%s %s: the port must be a number from 1 to 65535 or *", opt, text);

        const char *h = host;
        if (nsr_startswith(host, "*.")) {
                p.kind = NSR_EGRESS_SUFFIX;
                h = host + 2;
        }
        bool addr = false;
        if (nsr_egress_host_normalize(h, p.host, sizeof(p.host), &addr) < 0)
                return bad_pattern(opt, text, err);
        if (addr && p.kind == NSR_EGRESS_SUFFIX)
                return bad_pattern(opt, text, err);
        if (addr)
                p.kind = NSR_EGRESS_ADDR;
        *ret = p;
        return 0;
}

int nsr_egress_rules_add(nsr_egress_rules *r, bool deny, const char *text, nsr_error *err) {
        const char *opt = deny ? "--deny-host" : "--allow-host";
        nsr_egress_pattern p;
        if (r->n_allow + r->n_deny >= NSR_EGRESS_RULES_MAX)
                return nsr_error_setx(err, E2BIG, "%s: more than %d host patterns", opt, NSR_EGRESS_RULES_MAX);
        int k = nsr_egress_pattern_parse(text, opt, &p, err);
        if (k < 0)
                return k;
        nsr_egress_pattern **list = deny ? &r->deny : &r->allow;
        size_t *count = deny ? &r->n_deny : &r->n_allow;
        *list = nsr_realloc_array(*list, *count + 1, sizeof(nsr_egress_pattern));
        (*list)[(*count)++] = p;
        return 0;
}

bool nsr_egress_rules_empty(const nsr_egress_rules *r) {
        return r->n_allow == 0 && r->n_deny == 0;
}

void nsr_egress_rules_done(nsr_egress_rules *r) {
        free(r->allow);
        free(r->deny);
        *r = (nsr_egress_rules){ 0 };
}

static void append_list(nsr_egress_pattern **to, size_t *n_to, nsr_egress_pattern **from, size_t *n_from) {
        if (*n_from == 0)
                return;
        *to = nsr_realloc_array(*to, *n_to + *n_from, sizeof(nsr_egress_pattern));
        memcpy(*to + *n_to, *from, *n_from * sizeof(nsr_egress_pattern));
        *n_to += *n_from;
        free(*from);
        *from = NULL;
        *n_from = 0;
}

void nsr_egress_rules_append(nsr_egress_rules *to, nsr_egress_rules *from) {
        append_list(&to->allow, &to->n_allow, &from->allow, &from->n_allow);
        append_list(&to->deny, &to->n_deny, &from->deny, &from->n_deny);
}

static bool host_matches(const nsr_egress_pattern *p, const char *host) {
        switch (p->kind) {
        case NSR_EGRESS_NAME:
        case NSR_EGRESS_ADDR:
                return streq(p->host, host);
        case NSR_EGRESS_SUFFIX: {
                size_t hl = strlen(host), dl = strlen(p->host);
                return hl > dl + 1 && host[hl - dl - 1] == '.' && streq(host + hl - dl, p->host);
        }
        case _NSR_EGRESS_KIND_MAX:
        case _NSR_EGRESS_KIND_INVALID:
                break;
        }
        return false;
}

static bool port_matches(const nsr_egress_pattern *p, int port, bool deny) {
        if (p->port == -1)
                return true;
        if (p->port == 0)
                return deny || port == 80 || port == 443;
        return p->port == port;
}

void nsr_egress_check_name(const nsr_egress_rules *r, const char *host, int port, nsr_egress_verdict *ret) {
        *ret = (nsr_egress_verdict){ .allowed = false, .reason = "host not in --allow-host" };
        for (size_t i = 0; i < r->n_deny; i++)
                if (host_matches(&r->deny[i], host) && port_matches(&r->deny[i], port, true)) {
                        ret->reason = "denied by --deny-host";
                        ret->denied = &r->deny[i];
                        return;
                }
        for (size_t i = 0; i < r->n_allow; i++) {
                if (!host_matches(&r->allow[i], host))
                        continue;
                if (port_matches(&r->allow[i], port, false)) {
                        *ret = (nsr_egress_verdict){ .allowed = true, .matched = &r->allow[i] };
                        return;
                }
                ret->reason = "port not in --allow-host";
        }
}

/* ---- addresses --------------------------------------------------------- */

static bool v4_in(uint32_t a, uint32_t net, unsigned bits) {
        uint32_t mask = bits == 0 ? 0 : ~UINT32_C(0) << (32 - bits);
        return (a & mask) == (net & mask);
}

#define V4(a, b, c, d) ((uint32_t) (a) << 24 | (uint32_t) (b) << 16 | (uint32_t) (c) << 8 | (uint32_t) (d))

static nsr_addr_class classify_v4(uint32_t a) {
        if (v4_in(a, V4(0, 0, 0, 0), 8))
                return NSR_ADDR_UNSPECIFIED;
        if (v4_in(a, V4(127, 0, 0, 0), 8))
                return NSR_ADDR_LOOPBACK;
        if (v4_in(a, V4(10, 0, 0, 0), 8) || v4_in(a, V4(172, 16, 0, 0), 12) || v4_in(a, V4(192, 168, 0, 0), 16))
                return NSR_ADDR_PRIVATE;
        if (a == V4(169, 254, 169, 254))
                return NSR_ADDR_METADATA;
        if (v4_in(a, V4(169, 254, 0, 0), 16))
                return NSR_ADDR_LINK_LOCAL;
        if (v4_in(a, V4(100, 64, 0, 0), 10))
                return NSR_ADDR_CGNAT;
        if (v4_in(a, V4(224, 0, 0, 0), 4))
                return NSR_ADDR_MULTICAST;
        /* Not the documentation and benchmark nets (192.0.2/24,
         * 198.18/15, ...): fake-IP resolvers and some test networks hand
         * those out for public names, and no host service lives there. */
        if (v4_in(a, V4(240, 0, 0, 0), 4))
                return NSR_ADDR_RESERVED;
        return NSR_ADDR_PUBLIC;
}

static bool v6_prefix(const uint8_t *a, const uint8_t *p, unsigned bits) {
        unsigned bytes = bits / 8, rest = bits % 8;
        if (memcmp(a, p, bytes) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t) (0xff << (8 - rest));
        return (a[bytes] & mask) == (p[bytes] & mask);
}

static nsr_addr_class classify_v6(const struct in6_addr *in) {
        const uint8_t *a = in->s6_addr;
        static const uint8_t zero[16] = { 0 };
        static const uint8_t loop[16] = { [15] = 1 };
        static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff };
        static const uint8_t nat64[16] = { 0x00, 0x64, 0xff, 0x9b };
        static const uint8_t nat64l[16] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };
        static const uint8_t sixto4[16] = { 0x20, 0x02 };
        static const uint8_t teredo[16] = { 0x20, 0x01, 0x00, 0x00 };
        static const uint8_t discard[16] = { 0x01, 0x00 };
        static const uint8_t metadata[16] = { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 };
        static const uint8_t ula[16] = { 0xfc };
        static const uint8_t site[16] = { 0xfe, 0xc0 };
        static const uint8_t link[16] = { 0xfe, 0x80 };
        static const uint8_t mcast[16] = { 0xff };

        if (memcmp(a, zero, 16) == 0)
                return NSR_ADDR_UNSPECIFIED;
        if (memcmp(a, loop, 16) == 0)
                return NSR_ADDR_LOOPBACK;
        if (v6_prefix(a, mapped, 96) || v6_prefix(a, nat64, 96) || v6_prefix(a, nat64l, 48) ||
            v6_prefix(a, sixto4, 16) || v6_prefix(a, teredo, 32))
                return NSR_ADDR_MAPPED;
        if (v6_prefix(a, zero, 96) || v6_prefix(a, discard, 64))
                return NSR_ADDR_RESERVED;
        if (memcmp(a, metadata, 16) == 0)
                return NSR_ADDR_METADATA;
        if (v6_prefix(a, ula, 7) || v6_prefix(a, site, 10))
                return NSR_ADDR_PRIVATE;
        if (v6_prefix(a, link, 10))
                return NSR_ADDR_LINK_LOCAL;
        if (v6_prefix(a, mcast, 8))
                return NSR_ADDR_MULTICAST;
        return NSR_ADDR_PUBLIC;
}

nsr_addr_class nsr_egress_classify(const struct sockaddr *sa) {
        if (sa->sa_family == AF_INET)
                return classify_v4(ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr));
        if (sa->sa_family == AF_INET6)
                return classify_v6(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        return NSR_ADDR_RESERVED;
}

static const char *const addr_class_names[_NSR_ADDR_CLASS_MAX] = {
        [NSR_ADDR_PUBLIC] = "public",           [NSR_ADDR_LOOPBACK] = "loopback",   [NSR_ADDR_PRIVATE] = "private",
        [NSR_ADDR_LINK_LOCAL] = "link-local",   [NSR_ADDR_CGNAT] = "cgnat",         [NSR_ADDR_METADATA] = "metadata",
        [NSR_ADDR_UNSPECIFIED] = "unspecified", [NSR_ADDR_MULTICAST] = "multicast", [NSR_ADDR_MAPPED] = "ipv4-mapped",
        [NSR_ADDR_RESERVED] = "reserved",       [NSR_ADDR_HOST] = "host",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_addr_class, nsr_addr_class, addr_class_names)

bool nsr_egress_addr_allowed(const nsr_egress_pattern *m, const struct sockaddr *sa, nsr_addr_class *ret_class) {
        nsr_addr_class c = nsr_egress_classify(sa);
        *ret_class = c;
        if (c == NSR_ADDR_PUBLIC)
                return true;
        if (!m)
                return false;
        if (m->kind == NSR_EGRESS_NAME && streq(m->host, "localhost"))
                return c == NSR_ADDR_LOOPBACK;
        if (m->kind != NSR_EGRESS_ADDR)
                return false;
        char buf[INET6_ADDRSTRLEN];
        const void *src = sa->sa_family == AF_INET ? (const void *) &((const struct sockaddr_in *) sa)->sin_addr
                                                   : (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
                return false;
        if (!inet_ntop(sa->sa_family, src, buf, sizeof(buf)))
                return false;
        return streq(buf, m->host);
}

/* The address bytes of an AF_INET or AF_INET6 sockaddr, or NULL. */
static const void *addr_bytes(const struct sockaddr *sa, size_t *ret_len) {
        if (sa->sa_family == AF_INET) {
                *ret_len = 4;
                return &((const struct sockaddr_in *) sa)->sin_addr;
        }
        if (sa->sa_family == AF_INET6) {
                *ret_len = 16;
                return &((const struct sockaddr_in6 *) sa)->sin6_addr;
        }
        return NULL;
}

void nsr_egress_own_add(nsr_egress_own *own, const struct sockaddr *sa) {
        size_t len;
        if (!addr_bytes(sa, &len) || nsr_egress_own_has(own, sa) || own->n >= 4096)
                return;
        own->addrs = nsr_realloc_array(own->addrs, own->n + 1, sizeof(*own->addrs));
        memset(&own->addrs[own->n], 0, sizeof(*own->addrs));
        memcpy(&own->addrs[own->n++], sa,
               sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
}

bool nsr_egress_own_has(const nsr_egress_own *own, const struct sockaddr *sa) {
        size_t len, l2;
        const void *a = addr_bytes(sa, &len);
        if (!a)
                return false;
        for (size_t i = 0; own && i < own->n; i++) {
                const struct sockaddr *o = (const struct sockaddr *) &own->addrs[i];
                const void *b = o->sa_family == sa->sa_family ? addr_bytes(o, &l2) : NULL;
                if (b && l2 == len && memcmp(a, b, len) == 0)
                        return true;
        }
        return false;
}

void nsr_egress_own_done(nsr_egress_own *own) {
        free(own->addrs);
        *own = (nsr_egress_own){ 0 };
}

bool nsr_egress_addr_allowed_own(const nsr_egress_pattern *m, const struct sockaddr *sa, const nsr_egress_own *own,
                                 nsr_addr_class *ret_class) {
        bool ok = nsr_egress_addr_allowed(m, sa, ret_class);
        if (*ret_class != NSR_ADDR_PUBLIC || (own && own->known && !nsr_egress_own_has(own, sa)))
                return ok;
        /* Public, but the host's own: only a pattern that is this very
         * address reaches it. */
        *ret_class = NSR_ADDR_HOST;
        char buf[INET6_ADDRSTRLEN];
        size_t len;
        const void *src = addr_bytes(sa, &len);
        return m && m->kind == NSR_EGRESS_ADDR && inet_ntop(sa->sa_family, src, buf, sizeof(buf)) &&
               streq(buf, m->host);
}

/* ---- the record -------------------------------------------------------- */

static const char *const proto_names[_NSR_EGRESS_PROTO_MAX] = {
        [NSR_EGRESS_PROTO_HTTP] = "http",     [NSR_EGRESS_PROTO_CONNECT] = "connect",
        [NSR_EGRESS_PROTO_SOCKS5] = "socks5", [NSR_EGRESS_PROTO_DIRECT] = "direct",
        [NSR_EGRESS_PROTO_DNS] = "dns",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(proto, nsr_egress_proto, proto_names)

const char *nsr_egress_proto_to_string(nsr_egress_proto p) {
        return proto_to_string(p) ?: "?";
}

static const char *const via_names[_NSR_EGRESS_PROTO_MAX] = {
        [NSR_EGRESS_PROTO_HTTP] = "proxy",    [NSR_EGRESS_PROTO_CONNECT] = "proxy", [NSR_EGRESS_PROTO_SOCKS5] = "socks",
        [NSR_EGRESS_PROTO_DIRECT] = "direct", [NSR_EGRESS_PROTO_DNS] = "dns",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(via, nsr_egress_proto, via_names)

const char *nsr_egress_proto_via(nsr_egress_proto p) {
        return via_to_string(p) ?: "?";
}

void nsr_egress_log_add(nsr_egress_log *log, const nsr_egress_record *rec) {
        log->n_total++;
        if (!rec->allowed)
                log->n_refused++;
        if (log->n_records >= NSR_EGRESS_RECORDS_MAX) {
                log->n_dropped++;
                return;
        }
        log->records = nsr_realloc_array(log->records, log->n_records + 1, sizeof(nsr_egress_record));
        log->records[log->n_records++] = *rec;
}

void nsr_egress_log_free(nsr_egress_log *log) {
        if (!log)
                return;
        free(log->records);
        *log = (nsr_egress_log){ 0 };
}

void nsr_egress_record_emit(nsr_json *j, const nsr_egress_record *rec) {
        char when[32] = "";
        (void) nsr_json_format_time(&rec->started, when, sizeof(when));
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "host", rec->host);
        nsr_json_int(j, "port", rec->port);
        nsr_json_string(j, "protocol", nsr_egress_proto_to_string(rec->proto));
        nsr_json_string(j, "via", nsr_egress_proto_via(rec->proto));
        nsr_json_bool(j, "allowed", rec->allowed);
        nsr_json_string(j, "reason", rec->reason[0] ? rec->reason : NULL);
        nsr_json_string(j, "address", rec->address[0] ? rec->address : NULL);
        /* A direct connection's bytes never pass through nsrun. */
        if (rec->proto == NSR_EGRESS_PROTO_DIRECT) {
                nsr_json_null(j, "bytes_up");
                nsr_json_null(j, "bytes_down");
        } else {
                nsr_json_uint(j, "bytes_up", rec->bytes_up);
                nsr_json_uint(j, "bytes_down", rec->bytes_down);
        }
        nsr_json_string(j, "started_at", when);
        nsr_json_uint(j, "duration_ms", rec->duration_ms);
        nsr_json_object_end(j);
}

char *nsr_egress_record_json(const nsr_egress_record *rec) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 64 * 1024, 0);
        nsr_egress_record_emit(j, rec);
        char *out = NULL;
        size_t len = 0;
        nsr_error e = { 0 };
        if (nsr_json_finish(j, "network record", &out, &len, &e) < 0)
                return nsr_strdup("{}");
        /* finish appends a newline; the caller adds its own. */
        if (len > 0 && out[len - 1] == '\n')
                out[len - 1] = '\0';
        return out;
}

static void host_port(const nsr_egress_record *r, char *buf, size_t len) {
        if (strchr(r->host, ':'))
                snprintf(buf, len, "[%s]:%d", r->host, r->port);
        else
                snprintf(buf, len, "%s:%d", r->host, r->port);
}

const char *nsr_egress_log_mode(const nsr_egress_log *log) {
        return log->direct_on                                       ? "transparent"
               : log->direct_unavailable || log->direct_no_listener ? "proxy-only"
                                                                    : NULL;
}

static char *summary(const nsr_egress_log *log);

char *nsr_egress_summary(const nsr_egress_log *log) {
        char *s = summary(log);
        const char *why = log->direct_on            ? NULL
                          : log->direct_unavailable ? NSR_EGRESS_DIRECT_UNAVAILABLE
                          : log->direct_no_listener ? NSR_EGRESS_DIRECT_NO_LISTENER
                                                    : NULL;
        if (!why)
                return s;
        const char *prefix = "nsrun: network: ";
        char *n = nsr_asprintf("nsrun: network (%s): %s", why,
                               strncmp(s, prefix, strlen(prefix)) == 0 ? s + strlen(prefix) : s);
        free(s);
        return n;
}

static char *summary(const nsr_egress_log *log) {
        if (log->helper_died)
                return nsr_strdup("nsrun: network: the network helper died; the run lost its network and its record");
        if (log->n_total == 0)
                return nsr_strdup("nsrun: network: no connections");
        size_t hosts = 0;
        for (size_t i = 0; i < log->n_records; i++) {
                bool seen = false;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = streq(log->records[k].host, log->records[i].host);
                hosts += !seen;
        }
        char *s = nsr_asprintf("nsrun: network: %zu connection%s to %zu host%s, ", log->n_total,
                               log->n_total == 1 ? "" : "s", hosts, hosts == 1 ? "" : "s");
        if (log->n_refused == 0) {
                char *n = nsr_asprintf("%snone refused", s);
                free(s);
                return n;
        }
        char *n = nsr_asprintf("%s%zu refused:", s, log->n_refused);
        free(s);
        s = n;
        size_t shown = 0;
        for (size_t i = 0; i < log->n_records; i++) {
                const nsr_egress_record *r = &log->records[i];
                if (r->allowed)
                        continue;
                char hp[NSR_EGRESS_HOST_MAX + 16];
                host_port(r, hp, sizeof(hp));
                bool seen = false;
                for (size_t k = 0; k < i && !seen; k++) {
                        char other[NSR_EGRESS_HOST_MAX + 16];
                        if (log->records[k].allowed)
                                continue;
                        host_port(&log->records[k], other, sizeof(other));
                        seen = streq(hp, other);
                }
                if (seen)
                        continue;
                if (shown == 5) {
                        n = nsr_asprintf("%s, ...", s);
                        free(s);
                        return n;
                }
                n = nsr_asprintf("%s%s %s", s, shown ? "," : "", hp);
                free(s);
                s = n;
                shown++;
        }
        return s;
}
