/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "textdiff.h"
#include "utf8.h"
#include "util.h"

#define CONTEXT 3

typedef struct line {
        const char *s;
        size_t len;      /* including the '\n' when there is one */
} line;

typedef struct lines {
        line *v;
        size_t n;
} lines;

static int split(const char *data, size_t len, lines *ret) {
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                if (data[i] == '\n')
                        n++;
        if (len > 0 && data[len - 1] != '\n')
                n++;
        if (n > NSR_DIFF_MAX_LINES)
                return -E2BIG;
        ret->v = nsr_malloc0((n + 1) * sizeof(line));
        ret->n = 0;
        size_t start = 0;
        for (size_t i = 0; i < len; i++)
                if (data[i] == '\n') {
                        ret->v[ret->n++] = (line){ data + start, i - start + 1 };
                        start = i + 1;
                }
        if (start < len)
                ret->v[ret->n++] = (line){ data + start, len - start };
        return 0;
}

static int line_eq(const line *a, const line *b) {
        return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

int nsr_diff_is_text(const char *data, size_t len) {
        size_t n = len < 8192 ? len : 8192;
        return memchr(data, '\0', n) == NULL;
}

/* One edit-script entry: ' ' keep, '-' delete from a, '+' insert from b. */
typedef struct op {
        char kind;
        size_t ai, bi;
} op;

/* Myers: finds the shortest edit script; keeps each round's V array so the
 * path can be traced back. Memory is O(D * (N + M)), bounded by the edit
 * limit. */
static int myers(const lines *a, const lines *b, op **ret, size_t *ret_n) {
        long n = (long) a->n, m = (long) b->n, max = n + m;
        long offset = max + 1;
        size_t width = (size_t) (2 * max + 3);
        long *v = nsr_malloc0(width * sizeof(long));
        long **trace = NULL;
        long d, found = -1;
        for (d = 0; d <= max; d++) {
                if (d > NSR_DIFF_MAX_EDITS) {
                        for (long i = 0; i < d; i++)
                                free(trace[i]);
                        free(trace);
                        free(v);
                        return -E2BIG;
                }
                trace = nsr_realloc_array(trace, (size_t) d + 1, sizeof(long *));
                trace[d] = nsr_malloc0(width * sizeof(long));
                memcpy(trace[d], v, width * sizeof(long));
                for (long k = -d; k <= d; k += 2) {
                        long x;
                        if (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                                x = v[offset + k + 1];
                        else
                                x = v[offset + k - 1] + 1;
                        long y = x - k;
                        while (x < n && y < m && line_eq(&a->v[x], &b->v[y]))
                                x++, y++;
                        v[offset + k] = x;
                        if (x >= n && y >= m) {
                                found = d;
                                break;
                        }
                }
                if (found >= 0)
                        break;
        }
        /* Trace back from (n, m). trace[d] holds V as it was before round
         * d, i.e. the result of round d - 1. */
        op *ops = nsr_malloc0((size_t) (n + m + 1) * sizeof(op));
        size_t nops = 0;
        long x = n, y = m;
        for (d = found; d > 0; d--) {
                long *pv = trace[d];
                long k = x - y;
                long pk = (k == -d || (k != d && pv[offset + k - 1] < pv[offset + k + 1])) ? k + 1 : k - 1;
                long px = pv[offset + pk], py = px - pk;
                while (x > px && y > py) {
                        x--, y--;
                        ops[nops++] = (op){ ' ', (size_t) x, (size_t) y };
                }
                if (x == px)
                        ops[nops++] = (op){ '+', (size_t) x, (size_t) --y };
                else
                        ops[nops++] = (op){ '-', (size_t) --x, (size_t) y };
        }
        while (x > 0 && y > 0) {
                x--, y--;
                ops[nops++] = (op){ ' ', (size_t) x, (size_t) y };
        }
        for (long i = 0; i <= found; i++)
                free(trace[i]);
        free(trace);
        free(v);
        /* Reverse into forward order. */
        for (size_t i = 0; i < nops / 2; i++) {
                op t = ops[i];
                ops[i] = ops[nops - 1 - i];
                ops[nops - 1 - i] = t;
        }
        *ret = ops;
        *ret_n = nops;
        return 0;
}

/* The line's bytes with its controls shown (see textdiff.h). */
static void put_shown(FILE *f, const char *s, size_t len) {
        for (size_t i = 0; i < len;) {
                unsigned char c = (unsigned char) s[i];
                if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
                        fputc(c, f);
                        i++;
                        continue;
                }
                if (c < 0x20 || c == 0x7f) {
                        unsigned cp = c == 0x7f ? 0x2421 : 0x2400 + c;
                        fputc(0xe0 | (cp >> 12), f);
                        fputc(0x80 | ((cp >> 6) & 0x3f), f);
                        fputc(0x80 | (cp & 0x3f), f);
                        i++;
                        continue;
                }
                uint32_t cp = 0;
                int n = nsr_utf8_decode(s + i, len - i, &cp);
                if (n > 0 && nsr_utf8_is_invisible(cp)) {
                        /* Bidi and zero-width characters would reorder or
                         * hide what the reviewer reads: shown by name. */
                        fprintf(f, "<U+%04X>", (unsigned) cp);
                        i += (size_t) n;
                } else if (n > 0 && !(cp >= 0x80 && cp <= 0x9f)) {
                        fwrite(s + i, 1, (size_t) n, f);
                        i += (size_t) n;
                } else {
                        fputs("\xef\xbf\xbd", f); /* U+FFFD */
                        i += (size_t) (n < 0 ? -n : n);
                }
        }
}

static void put_line(FILE *f, char mark, const line *l, bool for_terminal) {
        fputc(mark, f);
        if (for_terminal)
                put_shown(f, l->s, l->len);
        else
                fwrite(l->s, 1, l->len, f);
        if (l->len == 0 || l->s[l->len - 1] != '\n')
                fputs("\n\\ No newline at end of file\n", f);
}

int nsr_diff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *a_label,
                     const char *b_label, FILE *f, bool for_terminal, nsr_error *err) {
        lines la = { 0 }, lb = { 0 };
        int r = split(a, alen, &la);
        if (r == 0)
                r = split(b, blen, &lb);
        _cleanup_free_ op *ops = NULL;
        size_t nops = 0;
        if (r == 0)
                r = myers(&la, &lb, &ops, &nops);
        if (r < 0) {
                free(la.v);
                free(lb.v);
                return nsr_error_setx(err, -r, "too large to diff");
        }
        bool header = false;
        size_t i = 0;
        while (i < nops) {
                /* Find the next change. */
                while (i < nops && ops[i].kind == ' ')
                        i++;
                if (i >= nops)
                        break;
                size_t start = i >= CONTEXT ? i - CONTEXT : 0;
                /* Extend the hunk while changes are closer than 2*CONTEXT. */
                size_t end = i, gap = 0;
                for (size_t j = i; j < nops; j++) {
                        if (ops[j].kind == ' ') {
                                if (++gap > 2 * CONTEXT)
                                        break;
                        } else {
                                gap = 0;
                                end = j;
                        }
                }
                size_t stop = end + CONTEXT + 1 < nops ? end + CONTEXT + 1 : nops;
                size_t a0 = ops[start].ai, b0 = ops[start].bi, an = 0, bn = 0;
                for (size_t j = start; j < stop; j++) {
                        if (ops[j].kind != '+')
                                an++;
                        if (ops[j].kind != '-')
                                bn++;
                }
                if (!header) {
                        fprintf(f, "--- %s\n+++ %s\n", a_label, b_label);
                        header = true;
                }
                fprintf(f, "@@ -%zu,%zu +%zu,%zu @@\n", an ? a0 + 1 : a0, an, bn ? b0 + 1 : b0, bn);
                for (size_t j = start; j < stop; j++) {
                        if (ops[j].kind == '+')
                                put_line(f, '+', &lb.v[ops[j].bi], for_terminal);
                        else
                                put_line(f, ops[j].kind, &la.v[ops[j].ai], for_terminal);
                }
                i = stop;
        }
        free(la.v);
        free(lb.v);
        return 0;
}
