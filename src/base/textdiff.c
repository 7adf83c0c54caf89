/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "base/textdiff.h"
#include "base/utf8.h"
#include "base/util.h"

#define CONTEXT 3

typedef struct line {
        const char *s;
        size_t len; /* including the '\n' when there is one */
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

/* ---- line ids ------------------------------------------------------------ */

/* Every distinct line gets a small integer, so the search compares ints,
 * not bytes. An open-addressing table of the distinct lines seen. */
typedef struct idtab {
        const line **slot;
        uint32_t *id;
        size_t mask;
        uint32_t next;
} idtab;

static uint64_t line_hash(const line *l) {
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
        for (size_t i = 0; i < l->len; i++) {
                h ^= (unsigned char) l->s[i];
                h *= 0x100000001b3ull;
        }
        return h;
}

static uint32_t line_id(idtab *t, const line *l) {
        size_t i = (size_t) line_hash(l) & t->mask;
        while (t->slot[i]) {
                if (line_eq(t->slot[i], l))
                        return t->id[i];
                i = (i + 1) & t->mask;
        }
        t->slot[i] = l;
        t->id[i] = t->next++;
        return t->id[i];
}

/* ---- the search ------------------------------------------------------------ */

/* Myers' linear-space refinement ("An O(ND) Difference Algorithm and Its
 * Variations", 1986, section 4b): find the middle snake of an optimal path
 * by searching from both ends at once, split there, recurse. Memory is
 * O(N + M) whatever the input, where the plain algorithm kept one V array
 * per edit (gigabytes for a new 20,000-line file). Time is O((N + M) D),
 * bounded: past a cost limit a search splits at the point it got furthest
 * to, which keeps the diff correct but maybe not minimal. */
typedef struct search {
        const uint32_t *a, *b; /* line ids */
        bool *del, *ins;       /* the result: a's lines deleted, b's inserted */
        long *fd, *bd;         /* forward and backward V, indexed by diagonal */
        long limit;            /* edit steps a middle-snake search may take */
} search;

/* The split point of a[xoff, xlim) against b[yoff, ylim), both non-empty
 * and with no common first or last line. Diagonals are k = x - y in
 * absolute coordinates; fd[k] is the furthest x the forward search reached
 * on k, bd[k] the smallest x the backward one did. Returns false when no
 * usable split was found. */
static bool middle(const search *s, long xoff, long xlim, long yoff, long ylim, long *ret_x, long *ret_y) {
        long *fd = s->fd, *bd = s->bd;
        long dmin = xoff - ylim, dmax = xlim - yoff;
        long fmid = xoff - yoff, bmid = xlim - ylim;
        long fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
        bool odd = (fmid - bmid) & 1;
        fd[fmid] = xoff;
        bd[bmid] = xlim;
        for (long c = 1;; c++) {
                /* Widen each search by one diagonal on each side, or
                 * narrow it at the grid's edge, keeping the parity. */
                if (fmin > dmin)
                        fd[--fmin - 1] = -1;
                else
                        ++fmin;
                if (fmax < dmax)
                        fd[++fmax + 1] = -1;
                else
                        --fmax;
                for (long k = fmax; k >= fmin; k -= 2) {
                        long tlo = fd[k - 1], thi = fd[k + 1];
                        long x = tlo < thi ? thi : tlo + 1, y = x - k;
                        while (x < xlim && y < ylim && s->a[x] == s->b[y])
                                x++, y++;
                        fd[k] = x;
                        if (odd && bmin <= k && k <= bmax && bd[k] <= x) {
                                *ret_x = x;
                                *ret_y = y;
                                return true;
                        }
                }
                if (bmin > dmin)
                        bd[--bmin - 1] = LONG_MAX;
                else
                        ++bmin;
                if (bmax < dmax)
                        bd[++bmax + 1] = LONG_MAX;
                else
                        --bmax;
                for (long k = bmax; k >= bmin; k -= 2) {
                        long tlo = bd[k - 1], thi = bd[k + 1];
                        long x = tlo < thi ? tlo : thi - 1, y = x - k;
                        while (x > xoff && y > yoff && s->a[x - 1] == s->b[y - 1])
                                x--, y--;
                        bd[k] = x;
                        if (!odd && fmin <= k && k <= fmax && x <= fd[k]) {
                                *ret_x = x;
                                *ret_y = y;
                                return true;
                        }
                }
                if (c >= s->limit) {
                        /* Too costly: split where the forward search got
                         * furthest along (x + y), as diff(1) does. */
                        long best = -1;
                        for (long k = fmax; k >= fmin; k -= 2) {
                                long x = fd[k] < xlim ? fd[k] : xlim, y = x - k;
                                if (y > ylim)
                                        x = ylim + k, y = ylim;
                                if (x < xoff || y < yoff || x + y <= best)
                                        continue;
                                best = x + y;
                                *ret_x = x;
                                *ret_y = y;
                        }
                        return best >= 0;
                }
        }
}

static void mark_all(const search *s, long xoff, long xlim, long yoff, long ylim) {
        for (long x = xoff; x < xlim; x++)
                s->del[x] = true;
        for (long y = yoff; y < ylim; y++)
                s->ins[y] = true;
}

static void compare(const search *s, long xoff, long xlim, long yoff, long ylim) {
        for (;;) {
                while (xoff < xlim && yoff < ylim && s->a[xoff] == s->b[yoff])
                        xoff++, yoff++;
                while (xlim > xoff && ylim > yoff && s->a[xlim - 1] == s->b[ylim - 1])
                        xlim--, ylim--;
                if (xoff == xlim || yoff == ylim) {
                        mark_all(s, xoff, xlim, yoff, ylim);
                        return;
                }
                long x, y;
                /* A split must cut the problem in two smaller ones, or the
                 * recursion would not end: anything else gives up on this
                 * part (all of it deleted and inserted, still correct). */
                if (!middle(s, xoff, xlim, yoff, ylim, &x, &y) || x < xoff || x > xlim || y < yoff || y > ylim ||
                    (x == xoff && y == yoff) || (x == xlim && y == ylim)) {
                        mark_all(s, xoff, xlim, yoff, ylim);
                        return;
                }
                /* Recurse into the smaller half and loop on the other, so the
                 * stack stays shallow. */
                if ((x - xoff) + (y - yoff) < (xlim - x) + (ylim - y)) {
                        compare(s, xoff, x, yoff, y);
                        xoff = x, yoff = y;
                } else {
                        compare(s, x, xlim, y, ylim);
                        xlim = x, ylim = y;
                }
        }
}

static long isqrt(long v) {
        long r = 1;
        while (r * r < v)
                r++;
        return r;
}

/* The edit script of a against b, in order. */
static int diff_lines(const lines *la, const lines *lb, op **ret, size_t *ret_n) {
        size_t n = la->n, m = lb->n;
        /* The id table, at most half full. */
        size_t cap = 16;
        while (cap < 2 * (n + m + 1))
                cap *= 2;
        idtab t = { .slot = nsr_malloc0(cap * sizeof(line *)),
                    .id = nsr_malloc0(cap * sizeof(uint32_t)),
                    .mask = cap - 1 };
        uint32_t *ida = nsr_malloc0((n + 1) * sizeof(uint32_t)), *idb = nsr_malloc0((m + 1) * sizeof(uint32_t));
        for (size_t i = 0; i < n; i++)
                ida[i] = line_id(&t, &la->v[i]);
        for (size_t i = 0; i < m; i++)
                idb[i] = line_id(&t, &lb->v[i]);
        free(t.slot);
        free(t.id);

        /* A line found on one side only can never be kept: it leaves the
         * search, which keeps the result minimal and makes a new or
         * rewritten file cost next to nothing. */
        uint8_t *seen = nsr_malloc0((size_t) t.next + 1);
        for (size_t i = 0; i < n; i++)
                seen[ida[i]] |= 1;
        for (size_t i = 0; i < m; i++)
                seen[idb[i]] |= 2;
        size_t *mapa = nsr_malloc0((n + 1) * sizeof(size_t)), *mapb = nsr_malloc0((m + 1) * sizeof(size_t));
        uint32_t *ra = nsr_malloc0((n + 1) * sizeof(uint32_t)), *rb = nsr_malloc0((m + 1) * sizeof(uint32_t));
        size_t rn = 0, rm = 0;
        for (size_t i = 0; i < n; i++)
                if (seen[ida[i]] == 3) {
                        mapa[rn] = i;
                        ra[rn++] = ida[i];
                }
        for (size_t i = 0; i < m; i++)
                if (seen[idb[i]] == 3) {
                        mapb[rm] = i;
                        rb[rm++] = idb[i];
                }
        free(seen);
        free(ida);
        free(idb);

        size_t diags = rn + rm + 3;
        search s = {
                .a = ra,
                .b = rb,
                .del = nsr_malloc0(rn + 1),
                .ins = nsr_malloc0(rm + 1),
                .fd = nsr_malloc0(diags * sizeof(long)),
                .bd = nsr_malloc0(diags * sizeof(long)),
                .limit = isqrt((long) (rn + rm)) * 4 < 256 ? 256 : isqrt((long) (rn + rm)) * 4,
        };
        /* Diagonals run from -rm - 1 to rn + 1: shift the arrays' base. */
        s.fd += rm + 1;
        s.bd += rm + 1;
        compare(&s, 0, (long) rn, 0, (long) rm);
        s.fd -= rm + 1;
        s.bd -= rm + 1;
        free(s.fd);
        free(s.bd);

        bool *del = nsr_malloc0(n + 1), *ins = nsr_malloc0(m + 1);
        for (size_t i = 0; i < n; i++)
                del[i] = true;
        for (size_t i = 0; i < m; i++)
                ins[i] = true;
        for (size_t i = 0; i < rn; i++)
                del[mapa[i]] = s.del[i];
        for (size_t i = 0; i < rm; i++)
                ins[mapb[i]] = s.ins[i];
        free(s.del);
        free(s.ins);
        free(mapa);
        free(mapb);
        free(ra);
        free(rb);

        /* Merge into one script: at each point, a's deletions first. */
        op *ops = nsr_malloc0((n + m + 1) * sizeof(op));
        size_t nops = 0, i = 0, j = 0;
        while (i < n || j < m) {
                if (i < n && (del[i] || j >= m))
                        ops[nops++] = (op){ '-', i++, j };
                else if (j < m && (ins[j] || i >= n))
                        ops[nops++] = (op){ '+', i, j++ };
                else
                        ops[nops++] = (op){ ' ', i++, j++ };
        }
        free(del);
        free(ins);
        *ret = ops;
        *ret_n = nops;
        return 0;
}

/* The line's bytes with its controls shown (see textdiff.h): what is not
 * shown as it is follows utf8.h's one rule, nsr_utf8_shown_as_is(). */
static void put_shown(FILE *f, const char *s, size_t len) {
        for (size_t i = 0; i < len;) {
                unsigned char c = (unsigned char) s[i];
                size_t n = 1;
                if (c == '\n' || c == '\t' || nsr_utf8_shown_as_is(s + i, len - i, &n)) {
                        fwrite(s + i, 1, n, f);
                        i += n;
                        continue;
                }
                uint32_t cp = 0;
                if (c < 0x20 || c == 0x7f) {
                        cp = c == 0x7f ? 0x2421 : 0x2400 + c;
                        fputc(0xe0 | (cp >> 12), f);
                        fputc(0x80 | ((cp >> 6) & 0x3f), f);
                        fputc(0x80 | (cp & 0x3f), f);
                } else if (nsr_utf8_decode(s + i, len - i, &cp) > 0 && nsr_utf8_is_invisible(cp))
                        /* Bidi and zero-width characters would reorder or
                         * hide what the reviewer reads: shown by name. */
                        fprintf(f, "<U+%04X>", (unsigned) cp);
                else
                        fputs("\xef\xbf\xbd", f); /* U+FFFD: C1, invalid bytes */
                i += n;
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

int nsr_diff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *a_label, const char *b_label,
                     FILE *f, bool for_terminal, nsr_error *err) {
        lines la = { 0 }, lb = { 0 };
        int r = split(a, alen, &la);
        if (r == 0)
                r = split(b, blen, &lb);
        _cleanup_free_ op *ops = NULL;
        size_t nops = 0;
        if (r == 0)
                r = diff_lines(&la, &lb, &ops, &nops);
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
