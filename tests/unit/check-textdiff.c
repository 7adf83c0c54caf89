/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The unified diff: every output, applied to the old text, gives the new
 * one; it is minimal (checked against an O(NM) LCS on many random
 * inputs); it stays small and fast on large inputs; and on a terminal no
 * control or invisible character passes. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/textdiff.h"
#include "base/util.h"
#include "unit.h"

static char *diff_text(const char *a, size_t al, const char *b, size_t bl, bool tty) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        nsr_error err = { 0 };
        int r = nsr_diff_unified(a, al, b, bl, "a/x", "b/x", f, tty, &err);
        fclose(f);
        ck_assert_int_ge(r, 0);
        return buf;
}

/* Applies a unified diff to a; returns the result and counts the lines
 * added and removed. */
static char *apply(const char *a, const char *diff, size_t *ret_edits) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        const char *pa = a; /* next line of a not yet copied */
        size_t aline = 1, edits = 0;
        bool in_hunk = false;
        const char *p = diff;
        while (*p) {
                const char *e = strchr(p, '\n');
                size_t ll = e ? (size_t) (e - p) + 1 : strlen(p);
                if (strncmp(p, "@@ -", 4) == 0) {
                        in_hunk = true;
                        unsigned long a0 = 0, an = 0, b0 = 0, bn = 0;
                        ck_assert_int_eq(sscanf(p, "@@ -%lu,%lu +%lu,%lu @@", &a0, &an, &b0, &bn), 4);
                        size_t first = an ? a0 : a0 + 1;
                        while (aline < first) { /* copy unchanged lines */
                                const char *n = strchr(pa, '\n');
                                size_t k = n ? (size_t) (n - pa) + 1 : strlen(pa);
                                fwrite(pa, 1, k, f);
                                pa += k;
                                aline++;
                        }
                } else if (in_hunk && (p[0] == ' ' || p[0] == '-' || p[0] == '+')) {
                        bool noeol = strncmp(p + ll, "\\ No newline", 12) == 0;
                        size_t body = ll - 1 - (noeol ? 1 : 0);
                        if (p[0] != '-')
                                fwrite(p + 1, 1, body, f);
                        if (p[0] != '+') {
                                const char *n = strchr(pa, '\n');
                                size_t k = n ? (size_t) (n - pa) + 1 : strlen(pa);
                                ck_assert_msg(k == body && memcmp(pa, p + 1, k) == 0, "context/removed line mismatch");
                                pa += k;
                                aline++;
                        }
                        if (p[0] != ' ')
                                edits++;
                        if (noeol) {
                                const char *n = strchr(p + ll, '\n');
                                ll = n ? (size_t) (n - p) + 1 : strlen(p);
                        }
                }
                p += ll;
        }
        fputs(pa, f);
        fclose(f);
        *ret_edits = edits;
        return out;
}

static size_t split_lines(const char *s, const char **v, size_t *lens, size_t max) {
        size_t n = 0;
        while (*s && n < max) {
                const char *e = strchr(s, '\n');
                size_t k = e ? (size_t) (e - s) + 1 : strlen(s);
                v[n] = s;
                lens[n++] = k;
                s += k;
        }
        return n;
}

/* The shortest edit script's length, the slow and certain way. */
static size_t min_edits(const char *a, const char *b) {
        const char *va[64], *vb[64];
        size_t la[64], lb[64];
        size_t n = split_lines(a, va, la, 64), m = split_lines(b, vb, lb, 64);
        static size_t t[65][65];
        for (size_t i = 0; i <= n; i++)
                for (size_t j = 0; j <= m; j++) {
                        if (!i || !j)
                                t[i][j] = 0;
                        else if (la[i - 1] == lb[j - 1] && !memcmp(va[i - 1], vb[j - 1], la[i - 1]))
                                t[i][j] = t[i - 1][j - 1] + 1;
                        else
                                t[i][j] = t[i - 1][j] > t[i][j - 1] ? t[i - 1][j] : t[i][j - 1];
                }
        return n + m - 2 * t[n][m];
}

static char *random_text(unsigned *seed, size_t max_lines, int alphabet) {
        size_t n = (size_t) (rand_r(seed) % (int) (max_lines + 1));
        char *buf = nsr_malloc0(n * 3 + 2);
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                buf[o++] = (char) ('a' + rand_r(seed) % alphabet);
                buf[o++] = '\n';
        }
        /* sometimes no newline at the end */
        if (o && rand_r(seed) % 5 == 0)
                o--;
        buf[o] = '\0';
        return buf;
}

START_TEST(test_random_minimal_and_correct) {
        unsigned seed = 12345;
        for (int iter = 0; iter < 3000; iter++) {
                int alphabet = 2 + iter % 6;
                _cleanup_free_ char *a = random_text(&seed, 40, alphabet);
                _cleanup_free_ char *b = random_text(&seed, 40, alphabet);
                _cleanup_free_ char *d = diff_text(a, strlen(a), b, strlen(b), false);
                size_t edits = 0;
                _cleanup_free_ char *got = apply(a, d, &edits);
                ck_assert_msg(streq(got, b), "iteration %d: the diff does not turn a into b\na=%s\nb=%s\n%s", iter, a,
                              b, d);
                ck_assert_msg(edits == min_edits(a, b), "iteration %d: %zu edits, %zu needed", iter, edits,
                              min_edits(a, b));
        }
}
END_TEST

START_TEST(test_equal_and_empty) {
        _cleanup_free_ char *d = diff_text("x\ny\n", 4, "x\ny\n", 4, false);
        ck_assert_str_eq(d, "");
        _cleanup_free_ char *n = diff_text("", 0, "new\n", 4, false);
        ck_assert_str_eq(n, "--- a/x\n+++ b/x\n@@ -0,0 +1,1 @@\n+new\n");
        _cleanup_free_ char *g = diff_text("old", 3, "", 0, false);
        ck_assert_str_eq(g, "--- a/x\n+++ b/x\n@@ -1,1 +0,0 @@\n-old\n\\ No newline at end of file\n");
}
END_TEST

static char *big_text(unsigned *seed, size_t lines, const char *tag) {
        char *buf = nsr_malloc0(lines * 64 + 1);
        size_t o = 0;
        for (size_t i = 0; i < lines; i++)
                o += (size_t) sprintf(buf + o, "%s line %zu: %08x some words to make it longer\n", tag, i,
                                      (unsigned) rand_r(seed));
        return buf;
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 20,000 lines: the plain algorithm took about 6 GB for a new file. Each
 * case must finish well inside a second and give a correct diff. */
START_TEST(test_large_inputs) {
        unsigned seed = 7;
        _cleanup_free_ char *a = big_text(&seed, 20000, "old");
        _cleanup_free_ char *b = big_text(&seed, 20000, "new");
        /* b2: a with every 50th line changed and some moved blocks */
        size_t al = strlen(a);
        _cleanup_free_ char *b2 = nsr_malloc0(al + 20000 * 8 + 1);
        size_t o = 0, ln = 0;
        for (const char *p = a; *p; ln++) {
                const char *e = strchr(p, '\n') + 1;
                if (ln % 50 == 0)
                        o += (size_t) sprintf(b2 + o, "changed %zu\n", ln);
                else {
                        memcpy(b2 + o, p, (size_t) (e - p));
                        o += (size_t) (e - p);
                }
                p = e;
        }
        struct {
                const char *x, *y;
        } cases[] = { { "", b }, { a, "" }, { a, b }, { a, b2 }, { b2, a } };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                double t0 = now_s();
                _cleanup_free_ char *d =
                        diff_text(cases[i].x, strlen(cases[i].x), cases[i].y, strlen(cases[i].y), false);
                double dt = now_s() - t0;
                ck_assert_msg(dt < 2.0, "case %zu took %.2f s", i, dt);
                size_t edits = 0;
                _cleanup_free_ char *got = apply(cases[i].x, d, &edits);
                ck_assert_msg(streq(got, cases[i].y), "case %zu: the diff does not apply", i);
        }
}
END_TEST

/* A diff that cannot be minimal cheaply stays correct: many small random
 * edits all over two long texts over a small alphabet. */
START_TEST(test_costly_stays_correct) {
        unsigned seed = 99;
        size_t n = 30000;
        char *a = nsr_malloc0(2 * n + 1), *b = nsr_malloc0(2 * n + 1);
        for (size_t i = 0; i < n; i++) {
                a[2 * i] = (char) ('a' + rand_r(&seed) % 4);
                b[2 * i] = (char) ('a' + rand_r(&seed) % 4);
                a[2 * i + 1] = b[2 * i + 1] = '\n';
        }
        double t0 = now_s();
        _cleanup_free_ char *d = diff_text(a, 2 * n, b, 2 * n, false);
        ck_assert_msg(now_s() - t0 < 5.0, "took %.2f s", now_s() - t0);
        size_t edits = 0;
        _cleanup_free_ char *got = apply(a, d, &edits);
        ck_assert(streq(got, b));
        free(a);
        free(b);
}
END_TEST

START_TEST(test_terminal_shows_controls) {
        const char *b = "ok\nif (user \xe2\x80\xae"
                        "admin) \xe2\x80\x8bx\x1b[2J\x07\n";
        _cleanup_free_ char *d = diff_text("ok\n", 3, b, strlen(b), true);
        ck_assert_ptr_nonnull(strstr(d, "user <U+202E>admin) <U+200B>x\xe2\x90\x9b[2J\xe2\x90\x87"));
        ck_assert_ptr_null(strchr(d, '\x1b'));
        ck_assert_ptr_null(strstr(d, "\xe2\x80\xae"));
        _cleanup_free_ char *raw = diff_text("ok\n", 3, b, strlen(b), false);
        ck_assert_ptr_nonnull(strstr(raw, "user \xe2\x80\xae"
                                          "admin"));
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("textdiff");
        TCase *tc = tcase_create("diff");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_equal_and_empty);
        tcase_add_test(tc, test_random_minimal_and_correct);
        tcase_add_test(tc, test_large_inputs);
        tcase_add_test(tc, test_costly_stays_correct);
        tcase_add_test(tc, test_terminal_shows_controls);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
