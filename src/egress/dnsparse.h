/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* DNS messages between the sandbox's resolver and nsrun's answerer
 * (egress/dns.h): a query parsed strictly, and the few answers nsrun
 * gives. Pure (no I/O), unit tested (tests/unit/check-dns) and fuzzed
 * (tests/fuzz/fuzz-dns): every byte comes from the sandbox.
 *
 * A query is accepted when it is exactly: a 12-byte header with QR = 0,
 * OPCODE = QUERY, TC = 0, QDCOUNT = 1, ANCOUNT = NSCOUNT = 0, ARCOUNT 0
 * or 1; one question whose QNAME is plain labels of 1-63 bytes (no
 * compression pointer, no extended label type) of at most 253 bytes as
 * text, QCLASS IN; the one additional record, if any, an EDNS0 OPT
 * record (root owner, options whose lengths add up exactly); and nothing
 * after it. Anything else gets FORMERR (NOTIMP for another opcode,
 * REFUSED for another class, BADVERS for an EDNS version above 0), or
 * no answer at all when there is not even a header to answer, or when
 * the message is itself an answer (QR = 1: answering answers is how two
 * resolvers make a loop).
 *
 * Answers echo the ID, RD and CD and the question as it was asked (same
 * bytes, same letter case: a client that varies the case of its query
 * checks it), set RA, and carry at most the A or AAAA records given,
 * each pointing back at the question's name. Over UDP an answer fits in
 * 512 bytes, or in the size the query's OPT record offers, up to
 * NSR_DNS_UDP_MAX; records that do not fit are left out and TC is set,
 * so the client asks again over TCP. An answer to a query with an OPT
 * record carries a minimal one of its own (no options). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "egress/rules.h"

#define NSR_DNS_HEADER      12
#define NSR_DNS_NAME_WIRE   255  /* a QNAME on the wire, its final zero included */
#define NSR_DNS_UDP_PLAIN   512  /* without EDNS */
#define NSR_DNS_UDP_MAX     1232 /* what nsrun offers and sends over UDP at most */
#define NSR_DNS_MSG_MAX     65535
#define NSR_DNS_ANSWERS_MAX 32 /* A or AAAA records in one answer */

enum {
        NSR_DNS_NOERROR = 0,
        NSR_DNS_FORMERR = 1,
        NSR_DNS_SERVFAIL = 2,
        NSR_DNS_NXDOMAIN = 3,
        NSR_DNS_NOTIMP = 4,
        NSR_DNS_REFUSED = 5,
        NSR_DNS_BADVERS = 16, /* extended: only in an answer with an OPT record */
};

enum {
        NSR_DNS_TYPE_A = 1,
        NSR_DNS_TYPE_AAAA = 28,
        NSR_DNS_TYPE_OPT = 41,
        NSR_DNS_TYPE_IXFR = 251,
        NSR_DNS_TYPE_AXFR = 252,
        NSR_DNS_TYPE_ANY = 255,
        NSR_DNS_CLASS_IN = 1,
};

typedef struct nsr_dns_query {
        uint16_t id;
        uint16_t flags; /* the header's second word, as received */
        bool has_question;
        /* The question's bytes as asked (QNAME, QTYPE, QCLASS): echoed. */
        uint8_t question[NSR_DNS_NAME_WIRE + 4];
        size_t question_len;
        /* The name as text: lower case, labels joined with '.', no
         * trailing dot ("." for the root). Bytes other than letters,
         * digits, '-' and '_' make it not a host name (plain = false):
         * such a name is never resolved, and text holds it with every
         * such byte as '?', for the record. */
        char name[NSR_EGRESS_HOST_MAX + 1];
        bool plain;
        uint16_t qtype, qclass;
        bool edns;        /* an OPT record came with it */
        uint16_t udp_max; /* how large a UDP answer may be */
        const char *why;  /* refused or malformed: why, static text */
} nsr_dns_query;

/* Parses one query. Returns 0 with *ret filled, an RCODE > 0 to answer
 * with (ret->why says why; ret->id and, when it was read, the question
 * are set for the answer), or -EBADMSG when nothing is to be answered. */
int nsr_dns_query_parse(const uint8_t *msg, size_t len, nsr_dns_query *ret);

/* One address of an answer: AF_INET (4 bytes) or AF_INET6 (16). */
typedef struct nsr_dns_addr {
        int family;
        uint8_t addr[16];
} nsr_dns_addr;

/* Writes the answer to q into out[0..max): rcode, and those of addrs
 * whose family matches q's type (A: AF_INET, AAAA: AF_INET6) as records
 * with ttl. max is the room: q->udp_max over UDP, more over TCP.
 * Records that do not fit are left out and TC is set. Returns the length,
 * or -ENOBUFS when not even the header and the question fit. */
ssize_t nsr_dns_answer(const nsr_dns_query *q, int rcode, const nsr_dns_addr *addrs, size_t n_addrs, uint32_t ttl,
                       uint8_t *out, size_t max);

/* TCP: a message is a 2-byte big-endian length and the bytes. Looks at
 * buf[0..len): 1 and the message (a pointer into buf and its length)
 * when one is whole, 0 when more bytes are needed, -EBADMSG for a
 * length of 0. *ret_used: the bytes the message takes with its length. */
int nsr_dns_tcp_next(const uint8_t *buf, size_t len, const uint8_t **ret_msg, size_t *ret_len, size_t *ret_used);

/* "A", "AAAA", "HTTPS", ... or "TYPE123", for messages. */
void nsr_dns_type_text(uint16_t type, char *buf, size_t len);
