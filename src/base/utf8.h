/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict UTF-8 and the two ways nsrun shows byte strings (file names, argv)
 * that may not be UTF-8: printable escapes for humans, U+FFFD for JSON.
 * Pure: no system calls. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Characters that change how the text around them is shown while showing
 * nothing themselves: the bidirectional controls (U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069), the zero-width ones (U+200B..U+200D,
 * U+2060, U+FEFF) and the line and paragraph separators (U+2028, U+2029).
 * A name or a line holding one can read as something it is not ("Trojan
 * Source"). */
bool nsr_utf8_is_invisible(uint32_t cp);

/* The one rule of what is printed as it is, wherever nsrun prints text:
 * whether the sequence at s (len > 0 bytes) is valid UTF-8 and neither a
 * control (C0, DEL, the C1 range U+0080..U+009F) nor invisible. *ret_n is
 * its length, or the number of bytes to show escaped. */
bool nsr_utf8_shown_as_is(const char *s, size_t len, size_t *ret_n);

enum {
        /* Leave '\' alone: for text already escaped, such as a whole
         * message that holds escaped names. */
        NSR_ESCAPE_KEEP_BACKSLASH = 1 << 0,
        /* Leave '\n' and '\t' alone: for multi-line text. */
        NSR_ESCAPE_KEEP_NEWLINE = 1 << 1,
        /* Both: what every message goes through before it is printed. */
        NSR_ESCAPE_MESSAGE = NSR_ESCAPE_KEEP_BACKSLASH | NSR_ESCAPE_KEEP_NEWLINE,
        /* One POSIX shell word that reads back as s, byte for byte (the
         * other flags are ignored): plain when every byte is in
         * [A-Za-z0-9@%+=:,./_-], else in single quotes, and each run of
         * what the other forms escape (controls, C1, invalid bytes,
         * invisible characters) as "$(printf '\ooo...')": the word holds no
         * byte a terminal obeys. Command substitution drops trailing
         * newlines, so a run that ends in one takes the next character
         * with it; newlines that end the word stay as they are inside
         * single quotes. */
        NSR_ESCAPE_SHELL = 1 << 2,
};

/* The one escaping function for everything nsrun prints: as
 * nsr_utf8_escape() (which is flags 0), and the invisible characters above
 * become "\uXXXX". With NSR_ESCAPE_MESSAGE it is idempotent, so applying
 * it to a message whose names were escaped already changes nothing. With
 * NSR_ESCAPE_SHELL, a shell word (see above). */
char *nsr_utf8_escape_flags(const char *s, unsigned flags);

/* Formats a line and writes it to f through the escaping of a message
 * (NSR_ESCAPE_MESSAGE, idempotent on names escaped already): for the
 * front ends, whose lines carry names and text a sandboxed command chose. */
void nsr_utf8_fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats one line and writes it to f: as nsr_utf8_fprintf(), but every
 * newline except the one that ends the line is shown as "\n", so nothing
 * in the fields (a project's path, a run record's text) starts a line of
 * its own. */
void nsr_utf8_fprintf_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
