/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The egress allow-list: --allow-host / --deny-host patterns, what they
 * match, and which addresses a name may resolve to. Pure: no I/O, so the
 * rules are unit tested, and a profile can fill the rule set as plain data.
 *
 * PATTERN is one of
 *     host             a name, exactly (case-insensitive, one trailing dot ignored)
 *     *.domain         every name below domain, not domain itself
 *     1.2.3.4          an IPv4 address, as the client writes it
 *     [::1]  or ::1    an IPv6 address
 * each optionally followed by ":PORT" (1-65535) or ":*" (every port); a
 * v6 address takes a port only in brackets. Without a port, 80 and 443.
 *
 * A deny pattern that matches wins over every allow pattern. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "base/error.h"

#define NSR_EGRESS_HOST_MAX  253
#define NSR_EGRESS_RULES_MAX 1024
/* Records kept for the report; the connections beyond are counted only. */
#define NSR_EGRESS_RECORDS_MAX 10000

/* The ports the relay listens on inside the sandbox. */
#define NSR_EGRESS_HTTP_PORT  3128
#define NSR_EGRESS_SOCKS_PORT 1080

typedef enum nsr_egress_kind {
        NSR_EGRESS_NAME,   /* host */
        NSR_EGRESS_SUFFIX, /* *.domain: host holds "domain" */
        NSR_EGRESS_ADDR,   /* an address literal: host holds its canonical text */
        _NSR_EGRESS_KIND_MAX,
        _NSR_EGRESS_KIND_INVALID = -EINVAL,
} nsr_egress_kind;

typedef struct nsr_egress_pattern {
        nsr_egress_kind kind;
        char host[NSR_EGRESS_HOST_MAX + 1];  /* lowercase, no trailing dot */
        int port;                            /* 0: 80 and 443; -1: every port */
        char text[NSR_EGRESS_HOST_MAX + 16]; /* as given, for messages and the trace */
} nsr_egress_pattern;

/* Plain data: the parser or a profile appends, the relay reads. */
typedef struct nsr_egress_rules {
        nsr_egress_pattern *allow;
        size_t n_allow;
        nsr_egress_pattern *deny;
        size_t n_deny;
} nsr_egress_rules;

/* Parses one pattern. Fails with -EINVAL and a message naming opt. */
int nsr_egress_pattern_parse(const char *text, const char *opt, nsr_egress_pattern *ret, nsr_error *err);
/* Parses and appends (deny: to the deny list). */
int nsr_egress_rules_add(nsr_egress_rules *r, bool deny, const char *text, nsr_error *err);
bool nsr_egress_rules_empty(const nsr_egress_rules *r);
void nsr_egress_rules_done(nsr_egress_rules *r);
/* Moves every pattern of from to the end of to; from is left empty. */
void nsr_egress_rules_append(nsr_egress_rules *to, nsr_egress_rules *from);

/* Normalises a host name or address a client asked for into buf (lower
 * case, no trailing dot, brackets removed, addresses in canonical form).
 * Refuses (-EINVAL) anything that is not a plausible DNS name or an
 * address: empty, too long, bytes other than [A-Za-z0-9._-], empty
 * labels. *ret_addr tells whether it is an address literal. */
int nsr_egress_host_normalize(const char *host, char *buf, size_t len, bool *ret_addr);

typedef struct nsr_egress_verdict {
        bool allowed;
        const char *reason;                /* refused: static text */
        const nsr_egress_pattern *matched; /* allowed: the allow pattern */
        const nsr_egress_pattern *denied;  /* refused by --deny-host: the pattern */
} nsr_egress_verdict;

/* Checks a normalised host and a port against the rules. */
void nsr_egress_check_name(const nsr_egress_rules *r, const char *host, int port, nsr_egress_verdict *ret);

/* What kind of address a resolved address is. Everything but PUBLIC is
 * refused unless the pattern that allowed the name is that very address
 * (or "localhost", for loopback). */
typedef enum nsr_addr_class {
        NSR_ADDR_PUBLIC,
        NSR_ADDR_LOOPBACK,
        NSR_ADDR_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 */
        NSR_ADDR_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
        NSR_ADDR_CGNAT,       /* 100.64/10 */
        NSR_ADDR_METADATA,    /* 169.254.169.254, fd00:ec2::254 */
        NSR_ADDR_UNSPECIFIED, /* 0.0.0.0/8, :: */
        NSR_ADDR_MULTICAST,   /* 224/4, ff00::/8 */
        NSR_ADDR_MAPPED,      /* ::ffff:0:0/96 and other v6 forms that embed a v4 address */
        NSR_ADDR_RESERVED,    /* 240/4 (and so 255.255.255.255), ::/96, 100::/64 */
        NSR_ADDR_HOST,        /* an address of one of this host's own interfaces */
        _NSR_ADDR_CLASS_MAX,
        _NSR_ADDR_CLASS_INVALID = -EINVAL,
} nsr_addr_class;

nsr_addr_class nsr_egress_classify(const struct sockaddr *sa);
/* "public", "loopback", "private", "link-local", "cgnat", "metadata",
 * "unspecified", "multicast", "ipv4-mapped", "reserved", "host". */
const char *nsr_addr_class_to_string(nsr_addr_class c);

/* May the name allowed by pattern m connect to sa? *ret_class gets the
 * address's class either way. */
bool nsr_egress_addr_allowed(const nsr_egress_pattern *m, const struct sockaddr *sa, nsr_addr_class *ret_class);

/* The addresses of the host's own interfaces, every family the relay
 * connects to (read with getifaddrs before the first decision that needs
 * them: nsr_egress_own_read). A service bound to 0.0.0.0 or :: answers on
 * each of them, so a name that resolves to one reaches the host itself, as
 * loopback would. */
typedef struct nsr_egress_own {
        struct sockaddr_storage *addrs;
        size_t n;
        /* The list was read. Until it is, any public address may be one of
         * the host's, and is refused as one (nsr_egress_addr_allowed_own). */
        bool known;
} nsr_egress_own;

void nsr_egress_own_add(nsr_egress_own *own, const struct sockaddr *sa);
bool nsr_egress_own_has(const nsr_egress_own *own, const struct sockaddr *sa);
void nsr_egress_own_done(nsr_egress_own *own);

/* nsr_egress_addr_allowed, and an address of own is refused too (class
 * NSR_ADDR_HOST when it would be public) unless m names it exactly. */
bool nsr_egress_addr_allowed_own(const nsr_egress_pattern *m, const struct sockaddr *sa, const nsr_egress_own *own,
                                 nsr_addr_class *ret_class);

/* One connection, as reported. */
typedef enum nsr_egress_proto {
        NSR_EGRESS_PROTO_HTTP,    /* absolute-URI request through the HTTP proxy */
        NSR_EGRESS_PROTO_CONNECT, /* HTTP CONNECT */
        NSR_EGRESS_PROTO_SOCKS5,
        NSR_EGRESS_PROTO_DIRECT, /* a transparent connect(), put in place by nsrun */
        NSR_EGRESS_PROTO_DNS,    /* a query to nsrun's DNS answerer */
        _NSR_EGRESS_PROTO_MAX,
        _NSR_EGRESS_PROTO_INVALID = -EINVAL,
} nsr_egress_proto;

const char *nsr_egress_proto_to_string(nsr_egress_proto p);
/* How the connection went: "proxy" (http, connect), "socks", "direct", "dns". */
const char *nsr_egress_proto_via(nsr_egress_proto p);

typedef struct nsr_egress_record {
        char host[NSR_EGRESS_HOST_MAX + 1];
        int port;
        nsr_egress_proto proto;
        bool allowed;
        char reason[320];        /* refused or failed: why; "" when allowed */
        char address[64];        /* the address connected to, or "" */
        uint64_t bytes_up;       /* client -> server */
        uint64_t bytes_down;     /* server -> client */
        struct timespec started; /* CLOCK_REALTIME */
        uint64_t duration_ms;
} nsr_egress_record;

typedef struct nsr_egress_log {
        nsr_egress_record *records;
        size_t n_records;
        size_t n_dropped; /* beyond NSR_EGRESS_RECORDS_MAX */
        size_t n_total, n_refused;
        size_t n_malformed;   /* clients that never named a target */
        size_t n_log_dropped; /* lines --net-log-fd's reader did not take in time */
        bool helper_died;     /* the egress helper died (or lied): no records, no network */
        /* connect() decided by nsrun (transparent egress) was on, or the
         * kernel could not put a socket in place and only the proxy served;
         * neither: it was not asked for (best-effort mode, or a listener
         * above the sandbox's). Set by the monitor, never by the helper. */
        bool direct_on;
        bool direct_unavailable;
        bool direct_no_listener; /* asked for, but a listener above the sandbox's took the one place */
} nsr_egress_log;

/* What the summary says when the kernel lacks what transparent egress needs. */
#define NSR_EGRESS_DIRECT_UNAVAILABLE                                                                                  \
        "proxy only: this kernel cannot put a host socket in place of the sandbox's (seccomp fd injection, "           \
        "Linux 5.14), so clients that ignore HTTP_PROXY get no network"
#define NSR_EGRESS_DIRECT_NO_LISTENER                                                                                  \
        "proxy only: a seccomp listener above the sandbox (an enclosing sandbox's) leaves connect() inside, so "       \
        "clients that ignore HTTP_PROXY get no network"
/* "transparent", "proxy-only" or NULL (not asked for). */
const char *nsr_egress_log_mode(const nsr_egress_log *log);

void nsr_egress_log_add(nsr_egress_log *log, const nsr_egress_record *rec);
void nsr_egress_log_free(nsr_egress_log *log);

/* One record as a JSON object, on one line, no newline (malloc'd). */
char *nsr_egress_record_json(const nsr_egress_record *rec);
/* With direct_unavailable, "nsrun: network (NSR_EGRESS_DIRECT_UNAVAILABLE): 14 ...".
 * "nsrun: network: 14 connections to 3 hosts, 2 refused: example.net:443"
 * (at most 5 refused host:port named, then ", ..."), "..., none refused",
 * or "nsrun: network: no connections". */
char *nsr_egress_summary(const nsr_egress_log *log);

typedef struct nsr_json nsr_json;
/* Writes one record as a JSON object (an array element). */
void nsr_egress_record_emit(nsr_json *j, const nsr_egress_record *rec);
