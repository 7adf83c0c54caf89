/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/util.h"

static bool is_cont(unsigned char c) {
        return (c & 0xc0) == 0x80;
}

int nsr_utf8_decode(const char *str, size_t len, uint32_t *ret_cp) {
        const unsigned char *s = (const unsigned char *) str;
        unsigned char c = s[0];
        size_t n;
        uint32_t cp;
        /* The valid range of the second byte depends on the first one: that
         * is what rules out overlongs (E0 80..9F, F0 80..8F), surrogates
         * (ED A0..BF) and values above U+10FFFF (F4 90..BF). */
        unsigned char lo = 0x80, hi = 0xbf;

        if (c < 0x80) {
                *ret_cp = c;
                return 1;
        }
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else
                return -1; /* 80..C1 and F5..FF never start a sequence */

        for (size_t i = 1; i < n; i++) {
                if (i >= len)
                        return -(int) i;
                unsigned char d = s[i];
                if (i == 1 ? (d < lo || d > hi) : !is_cont(d))
                        return -(int) i;
                cp = (cp << 6) | (d & 0x3f);
        }
        *ret_cp = cp;
        return (int) n;
}

bool nsr_utf8_valid(const char *s, size_t len) {
        size_t i = 0;
        while (i < len) {
                uint32_t cp;
                int k = nsr_utf8_decode(s + i, len - i, &cp);
                if (k < 0)
                        return false;
                i += (size_t) k;
        }
        return true;
}

char *nsr_utf8_sanitize(const char *s, size_t len) {
        /* Each replaced subpart is at least one byte and becomes three. */
        if (len > (SIZE_MAX - 1) / 3)
                abort();
        char *out = nsr_malloc0(len * 3 + 1);
        size_t o = 0, i = 0;
        while (i < len) {
                uint32_t cp;
                int k = nsr_utf8_decode(s + i, len - i, &cp);
                if (k > 0) {
                        memcpy(out + o, s + i, (size_t) k);
                        o += (size_t) k;
                        i += (size_t) k;
                } else {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i += (size_t) -k;
                }
        }
        out[o] = '\0';
        return out;
}

bool nsr_utf8_is_invisible(uint32_t cp) {
        return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
               (cp >= 0x2066 && cp <= 0x2069) || (cp >= 0x200b && cp <= 0x200d) || cp == 0x2060 || cp == 0xfeff ||
               cp == 0x2028 || cp == 0x2029;
}

char *nsr_utf8_escape(const char *s) {
        return nsr_utf8_escape_flags(s, 0);
}

bool nsr_utf8_shown_as_is(const char *s, size_t len, size_t *ret_n) {
        uint32_t cp = 0;
        int k = nsr_utf8_decode(s, len, &cp);
        *ret_n = k > 0 ? (size_t) k : (size_t) -k;
        return k > 0 && cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0) && !nsr_utf8_is_invisible(cp);
}

static bool only_newlines(const char *s) {
        return strspn(s, "\n") == strlen(s);
}

static char *shell_word(const char *s) {
        size_t len = strlen(s);
        bool plain = len > 0;
        for (const char *c = s; *c; c++)
                if (!(((unsigned char) *c < 0x80 && isalnum((unsigned char) *c)) || strchr("@%+=:,./-_", *c)))
                        plain = false;
        if (plain)
                return nsr_strdup(s);
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                abort();
        bool quoted = false;
        size_t i = 0, n;
        while (i < len) {
                if (nsr_utf8_shown_as_is(s + i, len - i, &n) || only_newlines(s + i)) {
                        if (!quoted)
                                fputc('\'', f);
                        quoted = true;
                        for (size_t j = 0; j < n; j++)
                                if (s[i + j] == '\'')
                                        fputs("'\\''", f);
                                else
                                        fputc(s[i + j], f);
                        i += n;
                        continue;
                }
                if (quoted)
                        fputc('\'', f);
                quoted = false;
                fputs("\"$(printf '", f);
                while (i < len && !nsr_utf8_shown_as_is(s + i, len - i, &n) && !only_newlines(s + i)) {
                        for (size_t j = 0; j < n; j++)
                                fprintf(f, "\\%03o", (unsigned char) s[i + j]);
                        i += n;
                }
                /* Not the last bytes of the output: $(...) would drop it. */
                if (s[i - 1] == '\n' && i < len) {
                        nsr_utf8_shown_as_is(s + i, len - i, &n);
                        for (size_t j = 0; j < n; j++)
                                fprintf(f, "\\%03o", (unsigned char) s[i + j]);
                        i += n;
                }
                fputs("')\"", f);
        }
        if (quoted || len == 0)
                fputs(len == 0 ? "''" : "'", f);
        if (fclose(f) != 0)
                abort();
        return buf;
}

char *nsr_utf8_escape_flags(const char *s, unsigned flags) {
        static const char hex[] = "0123456789abcdef";
        if (flags & NSR_ESCAPE_SHELL)
                return shell_word(s);
        size_t len = strlen(s);
        /* At most 4 bytes out per byte in: "\xHH" for one, "\uXXXX"
         * (6) for a sequence of 2 or 3. */
        if (len > (SIZE_MAX - 1) / 4)
                abort();
        char *out = nsr_malloc0(len * 4 + 1);
        size_t o = 0, i = 0;
        while (i < len) {
                unsigned char c = (unsigned char) s[i];
                uint32_t cp = 0;
                int k = nsr_utf8_decode(s + i, len - i, &cp);
                if (k > 0 && (flags & NSR_ESCAPE_KEEP_NEWLINE) && (c == '\n' || c == '\t')) {
                        out[o++] = (char) c;
                        i++;
                        continue;
                }
                if (k > 0 && nsr_utf8_is_invisible(cp)) {
                        o += (size_t) sprintf(out + o, "\\u%04x", (unsigned) cp);
                        i += (size_t) k;
                        continue;
                }
                size_t n = 0;
                if (nsr_utf8_shown_as_is(s + i, len - i, &n)) {
                        if (c == '\\' && !(flags & NSR_ESCAPE_KEEP_BACKSLASH))
                                out[o++] = '\\';
                        memcpy(out + o, s + i, n);
                        o += n;
                        i += n;
                        continue;
                }
                for (size_t j = 0; j < n; j++) {
                        unsigned char b = (unsigned char) s[i + j];
                        out[o++] = '\\';
                        if (b == '\n')
                                out[o++] = 'n';
                        else if (b == '\t')
                                out[o++] = 't';
                        else if (b == '\r')
                                out[o++] = 'r';
                        else {
                                out[o++] = 'x';
                                out[o++] = hex[b >> 4];
                                out[o++] = hex[b & 15];
                        }
                }
                i += n;
        }
        out[o] = '\0';
        return out;
}

/* Formats, escapes with flags and writes to f; with line, a newline at
 * the end is kept out of the escaping and written as it is. */
static void print_escaped(FILE *f, unsigned flags, bool line, const char *fmt, va_list ap) _printf_(4, 0);
static void print_escaped(FILE *f, unsigned flags, bool line, const char *fmt, va_list ap) {
        char *text = NULL;
        int n = vasprintf(&text, fmt, ap);
        if (n < 0)
                return;
        bool ended = line && n > 0 && text[n - 1] == '\n';
        if (ended)
                text[n - 1] = '\0';
        char *shown = nsr_utf8_escape_flags(text, flags);
        free(text);
        fputs(shown, f);
        if (ended)
                fputc('\n', f);
        free(shown);
}

void nsr_utf8_fprintf(FILE *f, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        print_escaped(f, NSR_ESCAPE_MESSAGE, false, fmt, ap);
        va_end(ap);
}

void nsr_utf8_fprintf_line(FILE *f, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        print_escaped(f, NSR_ESCAPE_KEEP_BACKSLASH, true, fmt, ap);
        va_end(ap);
}
