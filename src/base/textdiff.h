/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A unified diff of two texts: Myers' O(ND) algorithm in linear space
 * (the middle-snake divide and conquer), with a cost limit. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

/* Beyond this many lines on a side the caller gets -E2BIG and prints a
 * summary line instead of a diff. Memory is linear in the lines (about
 * 100 bytes each at most), and past a cost limit the search gives up
 * minimality, never correctness, so time stays bounded too. */
#define NSR_DIFF_MAX_LINES 200000

/* Whether data looks like text: no NUL byte in the first 8 KiB. */
int nsr_diff_is_text(const char *data, size_t len);

/* Writes "--- a_label\n+++ b_label\n" and the hunks (3 lines of context)
 * to f. Writes nothing when the texts are equal. With for_terminal, the
 * lines' control characters are shown, not sent: a C0 control other than
 * tab as its Control Pictures sign (ESC as U+241B, CR as U+240D), DEL as
 * U+2421, C1 controls and invalid UTF-8 as U+FFFD, and bidirectional and
 * zero-width characters (nsr_utf8_is_invisible) by name, "<U+202E>". Nothing
 * in a line can reach the terminal as a control. The texts come
 * from the sandbox, and raw escape sequences could rewrite what a
 * reviewer sees (erase an added line, say). */
int nsr_diff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *a_label, const char *b_label,
                     FILE *f, bool for_terminal, nsr_error *err);
