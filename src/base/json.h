/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small streaming JSON writer, to a FILE or a growable buffer.
 *
 * Strings are byte strings (file names, argv). Valid UTF-8 is written as
 * is, with '"', '\' and control characters (U+0000..U+001F, U+007F)
 * escaped as \" \\ and \uXXXX. A string that is not valid UTF-8 is written
 * with U+FFFD for each invalid sequence and, when it is an object member,
 * gets a sibling member "<key>_b64" with the exact bytes in base64, so the
 * document stays valid JSON and still loses nothing:
 *
 *     "path": "a\ufffdb", "path_b64": "YYBi"
 *
 * Errors are sticky, like ferror(): every call returns the first error
 * (-EINVAL for misuse such as a missing key, -EFBIG past the size limit,
 * -E2BIG past the nesting limit, -EIO for a failed write), later calls do
 * nothing, and nsr_json_finish() reports it through nsr_error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/error.h"
#include "base/util.h"

#define NSR_JSON_DEPTH_MAX 64
#define NSR_JSON_KEY_MAX   128

enum {
        NSR_JSON_PRETTY = 1u << 0, /* newlines and two-space indentation */
};

typedef struct nsr_json nsr_json;

/* Writes to f, or to an internal buffer when f is NULL. At most max_bytes
 * are written (0: no limit beyond SIZE_MAX). */
nsr_json *nsr_json_new(FILE *f, size_t max_bytes, unsigned flags);
nsr_json *nsr_json_free(nsr_json *j);
DEFINE_CLEANUP_FUNC(nsr_json *, nsr_json_free)

/* key is the member name inside an object and must be NULL elsewhere
 * (top level, arrays). */
int nsr_json_object_begin(nsr_json *j, const char *key);
int nsr_json_object_end(nsr_json *j);
int nsr_json_array_begin(nsr_json *j, const char *key);
int nsr_json_array_end(nsr_json *j);

/* s == NULL writes null. The "_b64" sibling is added only for object
 * members; array elements are written lossily (use nsr_json_strv). */
int nsr_json_string(nsr_json *j, const char *key, const char *s);
/* An array of strings (v is NULL-terminated; NULL writes []). If any
 * element is not valid UTF-8, also writes "<key>_b64": an array with every
 * element base64-encoded. Only valid as an object member. */
int nsr_json_strv(nsr_json *j, const char *key, char *const *v);
int nsr_json_int(nsr_json *j, const char *key, int64_t v);
int nsr_json_uint(nsr_json *j, const char *key, uint64_t v);
int nsr_json_bool(nsr_json *j, const char *key, bool v);
int nsr_json_null(nsr_json *j, const char *key);

/* Checks that one complete value was written, appends a newline and
 * flushes. In buffer mode, *ret gets the NUL-terminated text (ret may be
 * NULL in file mode). what names the document in error messages
 * ("report"). */
int nsr_json_finish(nsr_json *j, const char *what, char **ret, size_t *ret_len, nsr_error *err);

/* RFC 4648 base64 with padding. Returns a new NUL-terminated string. */
char *nsr_json_base64(const void *data, size_t len);

/* RFC 3339 UTC with milliseconds: "2026-11-25T22:10:00.123Z". buf must
 * hold 32 bytes. Returns -EOVERFLOW for a year outside 0..9999. */
int nsr_json_format_time(const struct timespec *ts, char *buf, size_t len);
