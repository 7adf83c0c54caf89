/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/utf8.h"

typedef struct frame {
        bool is_array;
        size_t n; /* values written so far */
} frame;

struct nsr_json {
        FILE *f;
        char *buf;
        size_t len, cap;
        size_t written, max;
        unsigned flags;
        int error;             /* first error, negative errno, sticky */
        const char *error_msg; /* static text for that error */
        unsigned depth;
        bool done; /* the top-level value has been started */
        frame stack[NSR_JSON_DEPTH_MAX];
};

nsr_json *nsr_json_new(FILE *f, size_t max_bytes, unsigned flags) {
        nsr_json *j = nsr_malloc0(sizeof(*j));
        j->f = f;
        j->max = max_bytes ? max_bytes : SIZE_MAX;
        j->flags = flags;
        return j;
}

nsr_json *nsr_json_free(nsr_json *j) {
        if (!j)
                return NULL;
        free(j->buf);
        free(j);
        return NULL;
}

static int fail(nsr_json *j, int r, const char *msg) {
        if (j->error == 0) {
                j->error = r;
                j->error_msg = msg;
        }
        return j->error;
}

static int put(nsr_json *j, const char *s, size_t n) {
        if (j->error)
                return j->error;
        if (n > j->max - j->written)
                return fail(j, -EFBIG, "too large");
        j->written += n;
        if (j->f) {
                if (n > 0 && fwrite(s, 1, n, j->f) != n)
                        return fail(j, -EIO, "write failed");
                return 0;
        }
        if (j->len + n + 1 > j->cap) {
                size_t cap = j->cap ? j->cap : 1024;
                while (cap < j->len + n + 1)
                        cap *= 2;
                j->buf = nsr_realloc_array(j->buf, cap, 1);
                j->cap = cap;
        }
        memcpy(j->buf + j->len, s, n);
        j->len += n;
        j->buf[j->len] = '\0';
        return 0;
}

static int puts_(nsr_json *j, const char *s) {
        return put(j, s, strlen(s));
}

static int newline_indent(nsr_json *j, unsigned depth) {
        if (!(j->flags & NSR_JSON_PRETTY))
                return 0;
        put(j, "\n", 1);
        for (unsigned i = 0; i < depth; i++)
                put(j, "  ", 2);
        return j->error;
}

/* Writes s as a JSON string body: valid UTF-8 as is, invalid sequences as
 * \ufffd. Runs of plain bytes are written in one piece. */
static int put_escaped(nsr_json *j, const char *s, size_t len) {
        static const char hex[] = "0123456789abcdef";
        size_t run = 0, i = 0;
        while (i < len) {
                uint32_t cp;
                int k = nsr_utf8_decode(s + i, len - i, &cp);
                const char *esc = NULL;
                char ubuf[7];
                size_t skip;
                if (k < 0) {
                        esc = "\\ufffd";
                        skip = (size_t) -k;
                } else {
                        skip = (size_t) k;
                        if (cp == '"')
                                esc = "\\\"";
                        else if (cp == '\\')
                                esc = "\\\\";
                        else if (cp < 0x20 || cp == 0x7f) {
                                memcpy(ubuf, "\\u00", 4);
                                ubuf[4] = hex[cp >> 4];
                                ubuf[5] = hex[cp & 15];
                                ubuf[6] = '\0';
                                esc = ubuf;
                        }
                }
                if (esc) {
                        put(j, s + run, i - run);
                        puts_(j, esc);
                        run = i + skip;
                }
                i += skip;
        }
        put(j, s + run, len - run);
        return j->error;
}

static int put_string(nsr_json *j, const char *s, size_t len) {
        put(j, "\"", 1);
        put_escaped(j, s, len);
        return put(j, "\"", 1);
}

/* Checks where a value may go, writes the separator and the key. */
static int begin_value(nsr_json *j, const char *key) {
        if (j->error)
                return j->error;
        if (j->depth == 0) {
                if (key)
                        return fail(j, -EINVAL, "a key outside an object");
                if (j->done)
                        return fail(j, -EINVAL, "more than one top-level value");
                j->done = true;
                return 0;
        }
        frame *top = &j->stack[j->depth - 1];
        if (top->is_array && key)
                return fail(j, -EINVAL, "a key inside an array");
        if (!top->is_array && !key)
                return fail(j, -EINVAL, "a member without a key");
        if (key && strnlen(key, NSR_JSON_KEY_MAX + 1) > NSR_JSON_KEY_MAX)
                return fail(j, -EINVAL, "key too long");
        if (top->n > 0)
                put(j, ",", 1);
        newline_indent(j, j->depth);
        top->n++;
        if (key) {
                put_string(j, key, strlen(key));
                puts_(j, (j->flags & NSR_JSON_PRETTY) ? ": " : ":");
        }
        return j->error;
}

static int container_begin(nsr_json *j, const char *key, bool is_array) {
        if (begin_value(j, key) < 0)
                return j->error;
        if (j->depth >= NSR_JSON_DEPTH_MAX)
                return fail(j, -E2BIG, "nested too deeply");
        j->stack[j->depth++] = (frame){ .is_array = is_array };
        return put(j, is_array ? "[" : "{", 1);
}

static int container_end(nsr_json *j, bool is_array) {
        if (j->error)
                return j->error;
        if (j->depth == 0 || j->stack[j->depth - 1].is_array != is_array)
                return fail(j, -EINVAL, "unbalanced end of object or array");
        j->depth--;
        if (j->stack[j->depth].n > 0)
                newline_indent(j, j->depth);
        return put(j, is_array ? "]" : "}", 1);
}

int nsr_json_object_begin(nsr_json *j, const char *key) {
        return container_begin(j, key, false);
}

int nsr_json_object_end(nsr_json *j) {
        return container_end(j, false);
}

int nsr_json_array_begin(nsr_json *j, const char *key) {
        return container_begin(j, key, true);
}

int nsr_json_array_end(nsr_json *j) {
        return container_end(j, true);
}

static int scalar(nsr_json *j, const char *key, const char *text) {
        if (begin_value(j, key) < 0)
                return j->error;
        return puts_(j, text);
}

int nsr_json_null(nsr_json *j, const char *key) {
        return scalar(j, key, "null");
}

int nsr_json_bool(nsr_json *j, const char *key, bool v) {
        return scalar(j, key, v ? "true" : "false");
}

int nsr_json_int(nsr_json *j, const char *key, int64_t v) {
        char b[32];
        snprintf(b, sizeof(b), "%" PRId64, v);
        return scalar(j, key, b);
}

int nsr_json_uint(nsr_json *j, const char *key, uint64_t v) {
        char b[32];
        snprintf(b, sizeof(b), "%" PRIu64, v);
        return scalar(j, key, b);
}

static char *b64_key(const char *key) {
        return nsr_asprintf("%s_b64", key);
}

int nsr_json_string(nsr_json *j, const char *key, const char *s) {
        if (!s)
                return nsr_json_null(j, key);
        size_t len = strlen(s);
        if (begin_value(j, key) < 0)
                return j->error;
        put_string(j, s, len);
        if (key && !nsr_utf8_valid(s, len)) {
                _cleanup_free_ char *k = b64_key(key);
                _cleanup_free_ char *b = nsr_json_base64(s, len);
                if (begin_value(j, k) < 0)
                        return j->error;
                put_string(j, b, strlen(b));
        }
        return j->error;
}

int nsr_json_strv(nsr_json *j, const char *key, char *const *v) {
        if (!key)
                return fail(j, -EINVAL, "a string array without a key");
        bool lossy = false;
        nsr_json_array_begin(j, key);
        for (size_t i = 0; v && v[i]; i++) {
                nsr_json_string(j, NULL, v[i]);
                if (!nsr_utf8_valid(v[i], strlen(v[i])))
                        lossy = true;
        }
        nsr_json_array_end(j);
        if (lossy) {
                _cleanup_free_ char *k = b64_key(key);
                nsr_json_array_begin(j, k);
                for (size_t i = 0; v[i]; i++) {
                        _cleanup_free_ char *b = nsr_json_base64(v[i], strlen(v[i]));
                        nsr_json_string(j, NULL, b);
                }
                nsr_json_array_end(j);
        }
        return j->error;
}

int nsr_json_finish(nsr_json *j, const char *what, char **ret, size_t *ret_len, nsr_error *err) {
        if (!what)
                what = "JSON document";
        if (!j->error && (j->depth != 0 || !j->done))
                fail(j, -EINVAL, "incomplete document");
        put(j, "\n", 1);
        if (!j->error && j->f && fflush(j->f) != 0)
                fail(j, -EIO, "write failed");
        if (j->error == -EFBIG)
                return nsr_error_setx(err, EFBIG, "%s is larger than the limit of %zu bytes", what, j->max);
        if (j->error == -EIO)
                return nsr_error_setx(err, EIO, "writing %s failed", what);
        if (j->error)
                return nsr_error_setx(err, -j->error, "writing %s: %s", what, j->error_msg);
        if (ret) {
                if (j->f)
                        *ret = NULL;
                else {
                        *ret = j->buf ? TAKE_PTR(j->buf) : nsr_strdup("");
                        j->cap = 0;
                }
        }
        if (ret_len)
                *ret_len = j->f ? j->written : j->len;
        return 0;
}

char *nsr_json_base64(const void *data, size_t len) {
        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const unsigned char *d = data;
        if (len > (SIZE_MAX / 4) * 3 - 3)
                abort();
        char *out = nsr_malloc0((len + 2) / 3 * 4 + 1);
        size_t o = 0, i = 0;
        for (; i + 3 <= len; i += 3) {
                uint32_t v = (uint32_t) d[i] << 16 | (uint32_t) d[i + 1] << 8 | d[i + 2];
                out[o++] = tbl[v >> 18];
                out[o++] = tbl[(v >> 12) & 63];
                out[o++] = tbl[(v >> 6) & 63];
                out[o++] = tbl[v & 63];
        }
        if (len - i == 1) {
                uint32_t v = (uint32_t) d[i] << 16;
                out[o++] = tbl[v >> 18];
                out[o++] = tbl[(v >> 12) & 63];
                out[o++] = '=';
                out[o++] = '=';
        } else if (len - i == 2) {
                uint32_t v = (uint32_t) d[i] << 16 | (uint32_t) d[i + 1] << 8;
                out[o++] = tbl[v >> 18];
                out[o++] = tbl[(v >> 12) & 63];
                out[o++] = tbl[(v >> 6) & 63];
                out[o++] = '=';
        }
        out[o] = '\0';
        return out;
}

int nsr_json_format_time(const struct timespec *ts, char *buf, size_t len) {
        struct tm tm;
        time_t t = ts->tv_sec;
        long ms = ts->tv_nsec / 1000000;
        if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
                return -EINVAL;
        if (!nsr_gmtime(t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
                return -EOVERFLOW;
        int n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
        if (n < 0 || (size_t) n >= len)
                return -ENOBUFS;
        return 0;
}
