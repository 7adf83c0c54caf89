/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 written from FIPS 180-4. The seccomp cache is keyed by it: a
 * collision would let one policy's cached filter stand in for another's, so
 * a weak hash (FNV and friends) is not good enough there. */
#include "config.h"

#include <string.h>

#include "base/sha256.h"

static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n) {
        return (x >> n) | (x << (32 - n));
}

static void block(nsr_sha256 *s, const uint8_t *p) {
        uint32_t w[64];
        for (unsigned i = 0; i < 16; i++)
                w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16 | (uint32_t) p[4 * i + 2] << 8 |
                       (uint32_t) p[4 * i + 3];
        for (unsigned i = 16; i < 64; i++) {
                uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
                uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
                w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
        uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
        for (unsigned i = 0; i < 64; i++) {
                uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
                uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
                h = g;
                g = f;
                f = e;
                e = d + t1;
                d = c;
                c = b;
                b = a;
                a = t1 + t2;
        }
        s->h[0] += a;
        s->h[1] += b;
        s->h[2] += c;
        s->h[3] += d;
        s->h[4] += e;
        s->h[5] += f;
        s->h[6] += g;
        s->h[7] += h;
}

void nsr_sha256_init(nsr_sha256 *s) {
        static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
        memset(s, 0, sizeof(*s));
        memcpy(s->h, iv, sizeof(iv));
}

void nsr_sha256_update(nsr_sha256 *s, const void *data, size_t len) {
        const uint8_t *p = data;
        s->len += len;
        if (s->n_buf > 0) {
                size_t take = 64 - s->n_buf < len ? 64 - s->n_buf : len;
                memcpy(s->buf + s->n_buf, p, take);
                s->n_buf += take;
                p += take;
                len -= take;
                if (s->n_buf < 64)
                        return;
                block(s, s->buf);
                s->n_buf = 0;
        }
        for (; len >= 64; p += 64, len -= 64)
                block(s, p);
        memcpy(s->buf, p, len);
        s->n_buf = len;
}

void nsr_sha256_final(nsr_sha256 *s, uint8_t ret[NSR_SHA256_SIZE]) {
        uint64_t bits = s->len * 8;
        static const uint8_t pad[64] = { 0x80 };
        size_t padlen = s->n_buf < 56 ? 56 - s->n_buf : 120 - s->n_buf;
        uint8_t lenbuf[8];
        for (unsigned i = 0; i < 8; i++)
                lenbuf[i] = (uint8_t) (bits >> (56 - 8 * i));
        nsr_sha256_update(s, pad, padlen);
        nsr_sha256_update(s, lenbuf, sizeof(lenbuf));
        for (unsigned i = 0; i < 8; i++) {
                ret[4 * i] = (uint8_t) (s->h[i] >> 24);
                ret[4 * i + 1] = (uint8_t) (s->h[i] >> 16);
                ret[4 * i + 2] = (uint8_t) (s->h[i] >> 8);
                ret[4 * i + 3] = (uint8_t) s->h[i];
        }
}

void nsr_sha256_buf(const void *data, size_t len, uint8_t ret[NSR_SHA256_SIZE]) {
        nsr_sha256 s;
        nsr_sha256_init(&s);
        nsr_sha256_update(&s, data, len);
        nsr_sha256_final(&s, ret);
}

void nsr_sha256_hex(const uint8_t digest[NSR_SHA256_SIZE], char *buf) {
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < NSR_SHA256_SIZE; i++) {
                buf[2 * i] = hex[digest[i] >> 4];
                buf[2 * i + 1] = hex[digest[i] & 15];
        }
        buf[2 * NSR_SHA256_SIZE] = '\0';
}
