/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict UTF-8 and the two ways nsrun shows byte strings (file names, argv)
 * that may not be UTF-8: printable escapes for humans, U+FFFD for JSON.
 * Pure: no system calls. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes one sequence at s (len > 0 bytes available). Strict: overlong
 * forms, surrogates (U+D800..U+DFFF) and values above U+10FFFF are invalid.
 * Returns the length of the valid sequence (1-4) and sets *ret_cp, or
 * returns minus the length of the "maximal subpart" of the invalid
 * sequence (Unicode ch. 3, U+FFFD substitution of maximal subparts): the
 * bytes one U+FFFD replaces, always at least 1. */
int nsr_utf8_decode(const char *s, size_t len, uint32_t *ret_cp);

/* True if all len bytes are valid UTF-8 (NUL bytes are valid). */
bool nsr_utf8_valid(const char *s, size_t len);

/* A copy of s with each maximal invalid subpart replaced by U+FFFD
 * (EF BF BD). Returns a new NUL-terminated string. */
char *nsr_utf8_sanitize(const char *s, size_t len);

/* A printable copy for messages and listings: printable ASCII and valid
 * UTF-8 stay, '\' becomes "\\", \n \t \r become "\n" "\t" "\r", other
 * control characters (C0, DEL and the C1 range U+0080..U+009F, which
 * terminals obey) and invalid bytes become "\xHH" per byte. */
char *nsr_utf8_escape(const char *s);
