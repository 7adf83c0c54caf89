/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* overlay.c: escaping and the overlay mount option string. */
#include "config.h"

#include <string.h>

#include "base/util.h"
#include "sandbox/overlay.h"
#include "unit.h"

START_TEST(test_escape) {
        static const char *const cases[][2] = {
                { "", "" },
                { "/plain/path", "/plain/path" },
                { "a,b", "a\\,b" },
                { "c:d", "c\\:d" },
                { "e\\f", "e\\\\f" },
                { ",", "\\," },
                { ":::", "\\:\\:\\:" },
                { "\\\\", "\\\\\\\\" },
                { "/x,y:z\\w", "/x\\,y\\:z\\\\w" },
                /* only those three: everything else passes through */
                { "sp ace=eq\"q'u\ttab\nnl;semi@%$#", "sp ace=eq\"q'u\ttab\nnl;semi@%$#" },
                { "/h\xc3\xa9/\xff", "/h\xc3\xa9/\xff" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *e = nsr_overlay_escape(cases[i][0]);
                ck_assert_msg(streq(e, cases[i][1]), "escape(%s) = %s, want %s", cases[i][0], e, cases[i][1]);
        }
}
END_TEST

START_TEST(test_escape_worst_case) {
        /* every character escaped: the output is exactly twice as long */
        char in[1001];
        memset(in, ',', 1000);
        in[1000] = '\0';
        _cleanup_free_ char *e = nsr_overlay_escape(in);
        ck_assert_uint_eq(strlen(e), 2000);
        for (size_t i = 0; i < 2000; i += 2) {
                ck_assert_int_eq(e[i], '\\');
                ck_assert_int_eq(e[i + 1], ',');
        }
}
END_TEST

START_TEST(test_options_overlay) {
        /* --overlay RW WORK DEST with sources src1 src2 src3: the kernel wants
         * the top layer first, so the caller passes them reversed. */
        char *lowers[] = { "/src3", "/src2", "/src1", NULL };
        _cleanup_free_ char *o = nsr_overlay_options("/oldroot", "/rw", "/work", lowers, 3);
        ck_assert_str_eq(o, "upperdir=/oldroot/rw,workdir=/oldroot/work,"
                            "lowerdir=/oldroot/src3:/oldroot/src2:/oldroot/src1,userxattr");
}
END_TEST

START_TEST(test_options_ro_overlay) {
        char *lowers[] = { "/b", "/a", NULL };
        _cleanup_free_ char *o = nsr_overlay_options("/oldroot", NULL, NULL, lowers, 2);
        ck_assert_str_eq(o, "lowerdir=/oldroot/b:/oldroot/a,userxattr");
}
END_TEST

START_TEST(test_options_root_lower) {
        /* "/" resolved gives "/oldroot/" */
        char *lowers[] = { "/", NULL };
        _cleanup_free_ char *o = nsr_overlay_options("/oldroot", NULL, NULL, lowers, 1);
        ck_assert_str_eq(o, "lowerdir=/oldroot/,userxattr");
}
END_TEST

START_TEST(test_options_no_prefix) {
        char *lowers[] = { "/proc/self/fd/7", NULL };
        _cleanup_free_ char *o = nsr_overlay_options("", "/u", "/w", lowers, 1);
        ck_assert_str_eq(o, "upperdir=/u,workdir=/w,lowerdir=/proc/self/fd/7,userxattr");
}
END_TEST

START_TEST(test_options_escaping) {
        /* paths are escaped, the prefix is not (it is ours and trusted) */
        char *lowers[] = { "/l:2", "/l,1", NULL };
        _cleanup_free_ char *o = nsr_overlay_options("/pre,fix:", "/up\\per", "/wo,rk", lowers, 2);
        ck_assert_str_eq(o, "upperdir=/pre,fix:/up\\\\per,workdir=/pre,fix:/wo\\,rk,"
                            "lowerdir=/pre,fix:/l\\:2:/pre,fix:/l\\,1,userxattr");
}
END_TEST

START_TEST(test_options_n_lowers) {
        /* only the first n_lowers entries are used */
        char *lowers[] = { "/a", "/b", "/c", NULL };
        _cleanup_free_ char *o = nsr_overlay_options("/r", NULL, NULL, lowers, 2);
        ck_assert_str_eq(o, "lowerdir=/r/a:/r/b,userxattr");
}
END_TEST

START_TEST(test_options_many_lowers) {
        char *lowers[100];
        for (size_t i = 0; i < 100; i++)
                lowers[i] = nsr_asprintf("/l%zu", i);
        _cleanup_free_ char *o = nsr_overlay_options("/oldroot", NULL, NULL, lowers, 100);
        ck_assert(nsr_startswith(o, "lowerdir=/oldroot/l0:/oldroot/l1:"));
        ck_assert(nsr_endswith(o, ":/oldroot/l99,userxattr"));
        size_t colons = 0;
        for (const char *c = o; *c; c++)
                colons += *c == ':';
        ck_assert_uint_eq(colons, 99);
        for (size_t i = 0; i < 100; i++)
                free(lowers[i]);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("overlay");
        TCase *tc = tcase_create("escape");
        tcase_add_test(tc, test_escape);
        tcase_add_test(tc, test_escape_worst_case);
        suite_add_tcase(s, tc);
        tc = tcase_create("options");
        tcase_add_test(tc, test_options_overlay);
        tcase_add_test(tc, test_options_ro_overlay);
        tcase_add_test(tc, test_options_root_lower);
        tcase_add_test(tc, test_options_no_prefix);
        tcase_add_test(tc, test_options_escaping);
        tcase_add_test(tc, test_options_n_lowers);
        tcase_add_test(tc, test_options_many_lowers);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
