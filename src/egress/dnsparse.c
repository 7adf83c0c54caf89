/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "egress/dnsparse.h"

#define F_QR     0x8000
#define F_OPCODE 0x7800
#define F_TC     0x0200
#define F_RD     0x0100
#define F_RA     0x0080
#define F_CD     0x0010

#define OPT_LEN 11 /* root owner, type, class, TTL, RDLENGTH 0 */

static uint16_t be16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

static void put32(uint8_t *p, uint32_t v) {
        put16(p, (uint16_t) (v >> 16));
        put16(p + 2, (uint16_t) v);
}

static int refuse(nsr_dns_query *q, int rcode, const char *why) {
        q->why = why;
        return rcode;
}

static bool host_byte(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* The QNAME at msg[*off]: its text into q->name. */
static int parse_name(const uint8_t *msg, size_t len, size_t *off, nsr_dns_query *q) {
        size_t o = *off, t = 0;
        q->plain = true;
        for (;;) {
                if (o >= len)
                        return refuse(q, NSR_DNS_FORMERR, "the name runs past the message");
                uint8_t l = msg[o++];
                if (l == 0)
                        break;
                if ((l & 0xC0) == 0xC0)
                        return refuse(q, NSR_DNS_FORMERR, "a compression pointer in a query's name");
                if (l & 0xC0)
                        return refuse(q, NSR_DNS_FORMERR, "an extended label type");
                if (l > len - o)
                        return refuse(q, NSR_DNS_FORMERR, "the name runs past the message");
                if (t + (t ? 1 : 0) + l > NSR_EGRESS_HOST_MAX)
                        return refuse(q, NSR_DNS_FORMERR, "the name is longer than 253 bytes");
                if (t)
                        q->name[t++] = '.';
                for (uint8_t i = 0; i < l; i++) {
                        uint8_t c = msg[o + i];
                        if (c >= 'A' && c <= 'Z')
                                c = (uint8_t) (c - 'A' + 'a');
                        if (!host_byte(c)) {
                                c = '?';
                                q->plain = false;
                        }
                        q->name[t++] = (char) c;
                }
                o += l;
        }
        if (t == 0) {
                strcpy(q->name, ".");
                q->plain = false; /* the root is no host */
        } else
                q->name[t] = '\0';
        *off = o;
        return 0;
}

/* The one additional record: an OPT, and the end of the message. */
static int parse_opt(const uint8_t *msg, size_t len, size_t off, nsr_dns_query *q) {
        if (off >= len || msg[off] != 0)
                return refuse(q, NSR_DNS_FORMERR, "an additional record that is not EDNS OPT");
        off++;
        if (len - off < 10)
                return refuse(q, NSR_DNS_FORMERR, "the OPT record runs past the message");
        uint16_t type = be16(msg + off), size = be16(msg + off + 2), rdlen = be16(msg + off + 8);
        uint32_t ttl = be32(msg + off + 4);
        if (type != NSR_DNS_TYPE_OPT)
                return refuse(q, NSR_DNS_FORMERR, "an additional record that is not EDNS OPT");
        off += 10;
        if (rdlen != len - off)
                return refuse(q, NSR_DNS_FORMERR, "the OPT record's length does not end the message");
        for (size_t o = off; o < len;) {
                if (len - o < 4 || be16(msg + o + 2) > len - o - 4)
                        return refuse(q, NSR_DNS_FORMERR, "an EDNS option runs past its record");
                o += 4 + (size_t) be16(msg + o + 2);
        }
        q->edns = true;
        q->udp_max = size < NSR_DNS_UDP_PLAIN ? NSR_DNS_UDP_PLAIN : size > NSR_DNS_UDP_MAX ? NSR_DNS_UDP_MAX : size;
        if (((ttl >> 16) & 0xFF) != 0)
                return refuse(q, NSR_DNS_BADVERS, "an EDNS version other than 0");
        return 0;
}

int nsr_dns_query_parse(const uint8_t *msg, size_t len, nsr_dns_query *ret) {
        nsr_dns_query *q = ret;
        memset(q, 0, sizeof(*q));
        strcpy(q->name, ".");
        q->udp_max = NSR_DNS_UDP_PLAIN;
        if (len < NSR_DNS_HEADER) {
                q->why = "shorter than a header";
                return -EBADMSG;
        }
        q->id = be16(msg);
        q->flags = be16(msg + 2);
        if (q->flags & F_QR) {
                q->why = "an answer, not a query";
                return -EBADMSG;
        }
        if (q->flags & F_OPCODE)
                return refuse(q, NSR_DNS_NOTIMP, "not a standard query");
        if (len > NSR_DNS_MSG_MAX)
                return refuse(q, NSR_DNS_FORMERR, "longer than a DNS message");
        if (q->flags & F_TC)
                return refuse(q, NSR_DNS_FORMERR, "a truncated query");
        if (be16(msg + 4) != 1)
                return refuse(q, NSR_DNS_FORMERR, "not exactly one question");
        if (be16(msg + 6) != 0 || be16(msg + 8) != 0 || be16(msg + 10) > 1)
                return refuse(q, NSR_DNS_FORMERR, "records in a query's answer or authority");
        size_t off = NSR_DNS_HEADER;
        int k = parse_name(msg, len, &off, q);
        if (k != 0)
                return k;
        if (len - off < 4)
                return refuse(q, NSR_DNS_FORMERR, "the question runs past the message");
        q->qtype = be16(msg + off);
        q->qclass = be16(msg + off + 2);
        off += 4;
        q->question_len = off - NSR_DNS_HEADER;
        memcpy(q->question, msg + NSR_DNS_HEADER, q->question_len);
        q->has_question = true;
        if (be16(msg + 10) == 1) {
                k = parse_opt(msg, len, off, q);
                if (k != 0)
                        return k;
        } else if (off != len)
                return refuse(q, NSR_DNS_FORMERR, "bytes after the question");
        if (q->qclass != NSR_DNS_CLASS_IN)
                return refuse(q, NSR_DNS_REFUSED, "a class other than IN");
        return 0;
}

ssize_t nsr_dns_answer(const nsr_dns_query *q, int rcode, const nsr_dns_addr *addrs, size_t n_addrs, uint32_t ttl,
                       uint8_t *out, size_t max) {
        size_t qlen = q->has_question ? q->question_len : 0, opt = q->edns ? OPT_LEN : 0;
        if (max > NSR_DNS_MSG_MAX)
                max = NSR_DNS_MSG_MAX;
        if (NSR_DNS_HEADER + qlen + opt > max)
                return -ENOBUFS;
        uint16_t flags = (uint16_t) (F_QR | (q->flags & (F_RD | F_CD)) | F_RA | (rcode & 0xF));
        put16(out, q->id);
        put16(out + 4, q->has_question ? 1 : 0);
        put16(out + 8, 0);
        put16(out + 10, q->edns ? 1 : 0);
        memcpy(out + NSR_DNS_HEADER, q->question, qlen);
        size_t o = NSR_DNS_HEADER + qlen;
        int family = q->qtype == NSR_DNS_TYPE_A ? AF_INET : q->qtype == NSR_DNS_TYPE_AAAA ? AF_INET6 : 0;
        size_t alen = family == AF_INET ? 4 : 16;
        uint16_t n = 0;
        for (size_t i = 0; rcode == NSR_DNS_NOERROR && q->has_question && family && i < n_addrs; i++) {
                if (addrs[i].family != family)
                        continue;
                if (n == NSR_DNS_ANSWERS_MAX)
                        break;
                if (o + 12 + alen + opt > max) {
                        flags |= F_TC;
                        break;
                }
                put16(out + o, 0xC000 | NSR_DNS_HEADER); /* the question's name */
                put16(out + o + 2, q->qtype);
                put16(out + o + 4, NSR_DNS_CLASS_IN);
                put32(out + o + 6, ttl);
                put16(out + o + 10, (uint16_t) alen);
                memcpy(out + o + 12, addrs[i].addr, alen);
                o += 12 + alen;
                n++;
        }
        put16(out + 2, flags);
        put16(out + 6, n);
        if (q->edns) {
                out[o] = 0;
                put16(out + o + 1, NSR_DNS_TYPE_OPT);
                put16(out + o + 3, NSR_DNS_UDP_MAX);
                put32(out + o + 5, (uint32_t) ((rcode >> 4) & 0xFF) << 24); /* version 0, no DO */
                put16(out + o + 9, 0);
                o += OPT_LEN;
        }
        return (ssize_t) o;
}

int nsr_dns_tcp_next(const uint8_t *buf, size_t len, const uint8_t **ret_msg, size_t *ret_len, size_t *ret_used) {
        if (len < 2)
                return 0;
        size_t l = be16(buf);
        if (l == 0)
                return -EBADMSG;
        if (len - 2 < l)
                return 0;
        *ret_msg = buf + 2;
        *ret_len = l;
        *ret_used = l + 2;
        return 1;
}

void nsr_dns_type_text(uint16_t type, char *buf, size_t len) {
        static const struct {
                uint16_t type;
                const char *name;
        } names[] = {
                { 1, "A" },      { 2, "NS" },     { 5, "CNAME" },   { 6, "SOA" },   { 12, "PTR" },
                { 15, "MX" },    { 16, "TXT" },   { 28, "AAAA" },   { 33, "SRV" },  { 35, "NAPTR" },
                { 43, "DS" },    { 46, "RRSIG" }, { 48, "DNSKEY" }, { 64, "SVCB" }, { 65, "HTTPS" },
                { 251, "IXFR" }, { 252, "AXFR" }, { 255, "ANY" },   { 257, "CAA" },
        };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (names[i].type == type) {
                        snprintf(buf, len, "%s", names[i].name);
                        return;
                }
        snprintf(buf, len, "TYPE%u", (unsigned) type);
}
