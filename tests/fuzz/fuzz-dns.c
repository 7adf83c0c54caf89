/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS answerer's parser and answers (egress/dnsparse.h), on what a
 * hostile resolver in the sandbox sends: byte 0 is the room for the
 * answer (times 8, so below and above 512), the rest one query over UDP;
 * the same bytes are also read as a TCP stream of framed queries. */
#include "config.h"

#include <stdlib.h>
#include <sys/socket.h>

#include "egress/dnsparse.h"
#include "fuzz.h"

static void one(const uint8_t *msg, size_t size, size_t room) {
        nsr_dns_query q;
        int k = nsr_dns_query_parse(msg, size, &q);
        if (k < 0) {
                if (k != -EBADMSG || !q.why)
                        abort();
                return;
        }
        if (k > 0 && !q.why)
                abort();
        size_t nl = strlen(q.name);
        if (nl == 0 || nl > NSR_EGRESS_HOST_MAX || q.question_len > sizeof(q.question))
                abort();
        if (q.has_question && (q.question_len < 5 || q.question_len > size - NSR_DNS_HEADER))
                abort();
        if (q.plain)
                for (size_t i = 0; i < nl; i++)
                        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_.", q.name[i]))
                                abort();
        if (q.udp_max < NSR_DNS_UDP_PLAIN || q.udp_max > NSR_DNS_UDP_MAX)
                abort();
        static const nsr_dns_addr addrs[] = {
                { .family = AF_INET, .addr = { 192, 0, 2, 1 } },
                { .family = AF_INET6, .addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 } },
                { .family = AF_INET, .addr = { 192, 0, 2, 2 } },
        };
        uint8_t out[NSR_DNS_MSG_MAX];
        ssize_t l = nsr_dns_answer(&q, k, addrs, 3, 60, out, room);
        if (l == -ENOBUFS)
                return;
        if (l < NSR_DNS_HEADER || (size_t) l > room)
                abort();
        if (((out[0] << 8) | out[1]) != q.id || !(out[2] & 0x80) || out[5] != (q.has_question ? 1 : 0))
                abort();
        if (q.has_question && memcmp(out + NSR_DNS_HEADER, q.question, q.question_len) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > NSR_DNS_MSG_MAX)
                return 0;
        size_t room = (size_t) data[0] * 8;
        one(data + 1, size - 1, room);
        const uint8_t *p = data + 1, *msg;
        size_t left = size - 1, len, used;
        while (nsr_dns_tcp_next(p, left, &msg, &len, &used) == 1) {
                if (used > left || len + 2 != used)
                        abort();
                one(msg, len, NSR_DNS_MSG_MAX);
                p += used;
                left -= used;
        }
        return 0;
}
