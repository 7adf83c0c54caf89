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

static inline uint32_t load_be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

/* FIPS 180-4's functions, Ch and Maj in forms with one operation fewer. */
#define CH(x, y, z)  ((z) ^ ((x) & ((y) ^ (z))))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
#define BSIG0(x)     (ror(x, 2) ^ ror(x, 13) ^ ror(x, 22))
#define BSIG1(x)     (ror(x, 6) ^ ror(x, 11) ^ ror(x, 25))
#define SSIG0(x)     (ror(x, 7) ^ ror(x, 18) ^ ((x) >> 3))
#define SSIG1(x)     (ror(x, 17) ^ ror(x, 19) ^ ((x) >> 10))

/* One round, with the eight working variables passed in their rotated
 * order instead of shifted through: after eight rounds the names are back
 * where they started, so nothing is ever moved. */
#define ROUND(a, b, c, d, e, f, g, h, k, w)                                                                            \
        do {                                                                                                           \
                uint32_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + (k) + (w);                                               \
                (d) += t1_;                                                                                            \
                (h) = t1_ + BSIG0(a) + MAJ(a, b, c);                                                                   \
        } while (0)

/* The message schedule kept as a ring of 16 words: W[t] replaces W[t-16]
 * in place, and W[t-15], W[t-7], W[t-2] are at fixed offsets from it. */
#define SCHEDULE(w, j) ((w)[j] += SSIG1((w)[((j) + 14) & 15]) + (w)[((j) + 9) & 15] + SSIG0((w)[((j) + 1) & 15]))

/* Written out sixteen rounds at a time: a plain loop over 64 rounds that
 * shifts a..h by one each time ran at about 216 MB/s, the largest user-space
 * cost of reading a policy. */
static void block(nsr_sha256 *s, const uint8_t *p) {
        uint32_t w[16];
        for (unsigned i = 0; i < 16; i++)
                w[i] = load_be32(p + 4 * i);
        uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
        uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
        for (unsigned i = 0; i < 64; i += 16) {
                if (i > 0)
                        for (unsigned j = 0; j < 16; j++)
                                SCHEDULE(w, j);
                const uint32_t *k = K + i;
                ROUND(a, b, c, d, e, f, g, h, k[0], w[0]);
                ROUND(h, a, b, c, d, e, f, g, k[1], w[1]);
                ROUND(g, h, a, b, c, d, e, f, k[2], w[2]);
                ROUND(f, g, h, a, b, c, d, e, k[3], w[3]);
                ROUND(e, f, g, h, a, b, c, d, k[4], w[4]);
                ROUND(d, e, f, g, h, a, b, c, k[5], w[5]);
                ROUND(c, d, e, f, g, h, a, b, k[6], w[6]);
                ROUND(b, c, d, e, f, g, h, a, k[7], w[7]);
                ROUND(a, b, c, d, e, f, g, h, k[8], w[8]);
                ROUND(h, a, b, c, d, e, f, g, k[9], w[9]);
                ROUND(g, h, a, b, c, d, e, f, k[10], w[10]);
                ROUND(f, g, h, a, b, c, d, e, k[11], w[11]);
                ROUND(e, f, g, h, a, b, c, d, k[12], w[12]);
                ROUND(d, e, f, g, h, a, b, c, k[13], w[13]);
                ROUND(c, d, e, f, g, h, a, b, k[14], w[14]);
                ROUND(b, c, d, e, f, g, h, a, k[15], w[15]);
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#endif

#define HAVE_SHA_NI 1

/* The same compression with the x86 SHA extensions (SHA256RNDS2 does two
 * rounds, SHA256MSG1/2 the schedule), chosen at run time when the CPU has
 * them: about six times the portable code's speed. The state is kept in the
 * instructions' order, ABEF and CDGH. */
__attribute__((target("sha,sse4.1,ssse3"))) static void block_ni(nsr_sha256 *s, const uint8_t *p) {
        const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
        __m128i dcba = _mm_loadu_si128((const __m128i *) &s->h[0]);
        __m128i hgfe = _mm_loadu_si128((const __m128i *) &s->h[4]);
        __m128i cdab = _mm_shuffle_epi32(dcba, 0xb1);
        __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b);
        __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
        __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xf0);
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m[4];
        for (unsigned i = 0; i < 4; i++)
                m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) (p + 16 * i)), bswap);
        for (unsigned g = 0; g < 16; g++) {
                /* m[] is a ring of the last four groups of four words. */
                __m128i w = m[g & 3];
                if (g >= 4) {
                        __m128i t = _mm_sha256msg1_epu32(m[g & 3], m[(g + 1) & 3]);
                        t = _mm_add_epi32(t, _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4));
                        w = _mm_sha256msg2_epu32(t, m[(g + 3) & 3]);
                        m[g & 3] = w;
                }
                __m128i wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *) (K + 4 * g)));
                cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
                abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
        __m128i feba = _mm_shuffle_epi32(abef, 0x1b);
        __m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);
        _mm_storeu_si128((__m128i *) &s->h[0], _mm_blend_epi16(feba, dchg, 0xf0));
        _mm_storeu_si128((__m128i *) &s->h[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* 1 with the SHA extensions (and the SSSE3 and SSE4.1 they come with), 0
 * without, -1 not asked yet. Racing first calls store the same value. */
static int accel = -1;

static bool cpu_has_sha_ni(void) {
#if __has_include(<sys/platform/x86.h>)
        /* What glibc found at startup: cpuid itself traps to the hypervisor
         * in a VM, about 3 us a call here. */
        return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSSE3) && CPU_FEATURE_ACTIVE(SSE4_1);
#else
        unsigned a, b, c, d;
        if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
                return false;
        return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
#endif
}

static bool use_ni(void) {
        int v = __atomic_load_n(&accel, __ATOMIC_RELAXED);
        if (v < 0) {
                v = cpu_has_sha_ni();
                __atomic_store_n(&accel, v, __ATOMIC_RELAXED);
        }
        return v > 0;
}
#endif

void nsr_sha256_set_accel(bool on) {
#ifdef HAVE_SHA_NI
        __atomic_store_n(&accel, on ? cpu_has_sha_ni() : 0, __ATOMIC_RELAXED);
#else
        (void) on;
#endif
}

static void blocks(nsr_sha256 *s, const uint8_t *p, size_t n) {
#ifdef HAVE_SHA_NI
        if (use_ni()) {
                for (size_t i = 0; i < n; i++)
                        block_ni(s, p + 64 * i);
                return;
        }
#endif
        for (size_t i = 0; i < n; i++)
                block(s, p + 64 * i);
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
                blocks(s, s->buf, 1);
                s->n_buf = 0;
        }
        blocks(s, p, len / 64);
        p += len / 64 * 64;
        len %= 64;
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
