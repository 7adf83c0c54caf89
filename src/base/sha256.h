/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 (FIPS 180-4), for content-addressed caches. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NSR_SHA256_SIZE 32

typedef struct nsr_sha256 {
        uint32_t h[8];
        uint64_t len; /* bytes hashed so far */
        uint8_t buf[64];
        size_t n_buf;
} nsr_sha256;

void nsr_sha256_init(nsr_sha256 *s);
void nsr_sha256_update(nsr_sha256 *s, const void *data, size_t len);
void nsr_sha256_final(nsr_sha256 *s, uint8_t ret[NSR_SHA256_SIZE]);
/* One-shot convenience. */
void nsr_sha256_buf(const void *data, size_t len, uint8_t ret[NSR_SHA256_SIZE]);
/* Whether the CPU's SHA instructions are used when it has them (the
 * default): the tests turn them off to check the portable code as well. */
void nsr_sha256_set_accel(bool on);
/* Lower-case hex; buf must hold 2 * NSR_SHA256_SIZE + 1 bytes. */
void nsr_sha256_hex(const uint8_t digest[NSR_SHA256_SIZE], char *buf);
