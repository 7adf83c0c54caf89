/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* util.c and error.c: strict number parsers, string vectors, paths, full
 * reads, and the fixed-size error type. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/error.h"
#include "base/pathprobe.h"
#include "base/timing.h"
#include "base/util.h"
#include "unit.h"

/* ---- nsr_parse_int -------------------------------------------------------- */

START_TEST(test_strappendf) {
        _cleanup_free_ char *s = NULL;
        nsr_strappendf(&s, "%s", "");
        ck_assert_str_eq(s, "");
        nsr_strappendf(&s, "a%d", 1);
        nsr_strappendf(&s, ", %s", "b");
        ck_assert_str_eq(s, "a1, b");
}
END_TEST

START_TEST(test_parse_int_good) {
        static const struct {
                const char *s;
                int v;
        } good[] = {
                { "0", 0 },
                { "7", 7 },
                { "-7", -7 },
                { "-0", 0 },
                { "007", 7 }, /* base 10: leading zeros are not octal */
                { "2147483647", INT_MAX },
                { "-2147483648", INT_MIN },
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                int v = 12345;
                ck_assert_msg(nsr_parse_int(good[i].s, &v) == 0, "%s", good[i].s);
                ck_assert_int_eq(v, good[i].v);
        }
}
END_TEST

START_TEST(test_parse_int_bad) {
        static const struct {
                const char *s;
                int r;
        } bad[] = {
                { "", -EINVAL },
                { " 1", -EINVAL },
                { "1 ", -EINVAL },
                { "\t1", -EINVAL },
                { "+1", -EINVAL },
                { "--1", -EINVAL },
                { "-+1", -EINVAL },
                { "- 1", -EINVAL },
                { "-", -EINVAL },
                { "1x", -EINVAL },
                { "x1", -EINVAL },
                { "0x10", -EINVAL },
                { "1.0", -EINVAL },
                { "2147483648", -ERANGE },
                { "-2147483649", -ERANGE },
                { "99999999999999999999999", -ERANGE },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int v = 12345;
                ck_assert_msg(nsr_parse_int(bad[i].s, &v) == bad[i].r, "%s", bad[i].s);
                ck_assert_msg(v == 12345, "%s: *ret changed on failure", bad[i].s);
        }
        int v = 1;
        ck_assert_int_eq(nsr_parse_int(NULL, &v), -EINVAL);
        ck_assert_int_eq(v, 1);
}
END_TEST

/* ---- nsr_parse_fd --------------------------------------------------------- */

START_TEST(test_parse_fd) {
        int v = -5;
        ck_assert_int_eq(nsr_parse_fd("0", &v), 0);
        ck_assert_int_eq(v, 0);
        ck_assert_int_eq(nsr_parse_fd("3", &v), 0);
        ck_assert_int_eq(v, 3);
        ck_assert_int_eq(nsr_parse_fd("2147483647", &v), 0);
        ck_assert_int_eq(v, INT_MAX);

        v = -5;
        ck_assert_int_eq(nsr_parse_fd("-1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("-0", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd(" 3", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("+3", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("3 ", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("3a", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("x", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_fd("2147483648", &v), -ERANGE);
        ck_assert_int_eq(nsr_parse_fd("18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(v, -5);
}
END_TEST

/* ---- nsr_parse_u32 / u64 -------------------------------------------------- */

START_TEST(test_parse_u32) {
        uint32_t v = 9;
        ck_assert_int_eq(nsr_parse_u32("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(nsr_parse_u32("4294967295", &v), 0);
        ck_assert_uint_eq(v, UINT32_MAX);
        ck_assert_int_eq(nsr_parse_u32("010", &v), 0);
        ck_assert_uint_eq(v, 10);

        v = 9;
        ck_assert_int_eq(nsr_parse_u32("4294967296", &v), -ERANGE);
        ck_assert_int_eq(nsr_parse_u32("-1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u32("+1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u32(" 1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u32("", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u32("1k", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u32("0x1", &v), -EINVAL);
        ck_assert_uint_eq(v, 9);
}
END_TEST

START_TEST(test_parse_u64) {
        uint64_t v = 9;
        ck_assert_int_eq(nsr_parse_u64("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(nsr_parse_u64("18446744073709551615", &v), 0);
        ck_assert(v == UINT64_MAX);
        ck_assert_int_eq(nsr_parse_u64("4294967296", &v), 0);
        ck_assert(v == UINT64_C(4294967296));

        v = 9;
        ck_assert_int_eq(nsr_parse_u64("18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(nsr_parse_u64("-1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u64("+1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u64("\n1", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u64("", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u64("12 ", &v), -EINVAL);
        ck_assert_int_eq(nsr_parse_u64("1e3", &v), -EINVAL);
        ck_assert_uint_eq(v, 9);
}
END_TEST

/* ---- nsr_parse_octal_mode ------------------------------------------------- */

START_TEST(test_parse_octal_mode) {
        mode_t m = 1;
        ck_assert_int_eq(nsr_parse_octal_mode("0", &m), 0);
        ck_assert_uint_eq(m, 0);
        ck_assert_int_eq(nsr_parse_octal_mode("755", &m), 0);
        ck_assert_uint_eq(m, 0755);
        ck_assert_int_eq(nsr_parse_octal_mode("0644", &m), 0);
        ck_assert_uint_eq(m, 0644);
        ck_assert_int_eq(nsr_parse_octal_mode("07777", &m), 0);
        ck_assert_uint_eq(m, 07777);
        ck_assert_int_eq(nsr_parse_octal_mode("01777", &m), 0);
        ck_assert_uint_eq(m, 01777);

        m = 1;
        ck_assert_int_eq(nsr_parse_octal_mode("10000", &m), -ERANGE);
        ck_assert_int_eq(nsr_parse_octal_mode("8", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode("0758", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode("", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode(" 755", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode("+755", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode("-0", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode("0x1ff", &m), -EINVAL);
        ck_assert_int_eq(nsr_parse_octal_mode("755\n", &m), -EINVAL);
        ck_assert_uint_eq(m, 1);
}
END_TEST

/* ---- string vectors ------------------------------------------------------- */

START_TEST(test_strv) {
        char **v = NULL;
        ck_assert_uint_eq(nsr_strv_length(v), 0);
        ck_assert(!nsr_strv_contains(v, "a"));

        ck_assert_int_eq(nsr_strv_extend(&v, "a"), 0);
        ck_assert_int_eq(nsr_strv_push(&v, nsr_strdup("")), 0);
        ck_assert_int_eq(nsr_strv_extend(&v, "c"), 0);
        ck_assert_uint_eq(nsr_strv_length(v), 3);
        ck_assert_str_eq(v[0], "a");
        ck_assert_str_eq(v[1], "");
        ck_assert_str_eq(v[2], "c");
        ck_assert_ptr_null(v[3]);
        ck_assert(nsr_strv_contains(v, "a"));
        ck_assert(nsr_strv_contains(v, ""));
        ck_assert(!nsr_strv_contains(v, "b"));
        ck_assert(!nsr_strv_contains(v, NULL));

        char **w = nsr_strv_copy(v);
        ck_assert_uint_eq(nsr_strv_length(w), 3);
        for (size_t i = 0; i < 3; i++) {
                ck_assert_ptr_ne(w[i], v[i]);
                ck_assert_str_eq(w[i], v[i]);
        }
        ck_assert_ptr_null(w[3]);
        nsr_strv_free(w);

        char **e = nsr_strv_copy(NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_ptr_null(e[0]);
        nsr_strv_free(e);

        nsr_strv_free(v);
        nsr_strv_free(NULL);
}
END_TEST

START_TEST(test_strv_cleanup) {
        /* The cleanup attribute frees the vector and accepts NULL. */
        _cleanup_strv_free_ char **none = NULL;
        _cleanup_strv_free_ char **v = NULL;
        for (int i = 0; i < 100; i++)
                nsr_strv_push(&v, nsr_asprintf("%d", i));
        ck_assert_uint_eq(nsr_strv_length(v), 100);
        ck_assert_str_eq(v[99], "99");
        char **taken = TAKE_PTR(v);
        ck_assert_ptr_null(v);
        nsr_strv_free(taken);
        (void) none;
}
END_TEST

START_TEST(test_timing) {
        setenv("NSRUN_TIMING", "0", 1);
        ck_assert_ptr_null(nsr_timing_from_env());
        nsr_timing_mark_now(NULL, "nothing happens");
        setenv("NSRUN_TIMING", "1", 1);
        _cleanup_(nsr_timing_freep) nsr_timing *t = nsr_timing_from_env();
        ck_assert_ptr_nonnull(t);
        nsr_timing_mark_now(t, "one");
        nsr_timing_mark_now(t, "two");
        /* what the other side of the shared page may have left */
        t->marks[t->n].ns = t->marks[t->n - 1].ns + 1;
        memset(t->marks[t->n].phase, 0x1b, sizeof(t->marks[t->n].phase));
        t->n++;
        _cleanup_free_ char *s = nsr_timing_format(t);
        ck_assert_ptr_nonnull(strstr(s, "  start "));
        ck_assert_ptr_nonnull(strstr(s, "phase, page faults, its own time"));
        /* "two" was marked by the process that marked "one": its faults
         * are a count (no process faults backwards). */
        unsigned long long flt;
        double self, total;
        const char *two = strstr(s, "  two ");
        ck_assert(two && sscanf(two + 6, " %llu %lf %lf", &flt, &self, &total) == 3);
        ck_assert(self >= 0 && total >= self);
        ck_assert(strstr(s, "  one ") && strstr(s, "  two ") && strstr(s, "  one ") < strstr(s, "  two "));
        ck_assert_ptr_null(strchr(s, 0x1b));
        ck_assert_ptr_nonnull(strstr(s, "???????"));
        for (int i = 0; i < NSR_TIMING_MAX + 5; i++)
                nsr_timing_mark_now(t, "many");
        _cleanup_free_ char *full = nsr_timing_format(t);
        ck_assert_ptr_nonnull(strstr(full, "the rest were dropped"));
        unsetenv("NSRUN_TIMING");
}
END_TEST

START_TEST(test_edit_distance) {
        ck_assert_uint_eq(nsr_edit_distance("", ""), 0);
        ck_assert_uint_eq(nsr_edit_distance("kitten", "sitting"), 3);
        ck_assert_uint_eq(nsr_edit_distance("--timout", "--timeout"), 1);
        ck_assert_uint_eq(nsr_edit_distance("abc", ""), 3);
        ck_assert_uint_eq(nsr_edit_distance("0123456789012345678901234567890123", "a"), SIZE_MAX);
        ck_assert(nsr_close_enough("--timout", "--timeout"));
        ck_assert(!nsr_close_enough("ab", "xy"));
        ck_assert(!nsr_close_enough("abc", "axy"));
        ck_assert(!nsr_close_enough("--foo", "--ro"));
        ck_assert(nsr_close_enough("--jsn", "--json"));
}
END_TEST

START_TEST(test_startswith_endswith) {
        ck_assert(nsr_startswith("--bind", "--"));
        ck_assert(nsr_startswith("--bind", ""));
        ck_assert(nsr_startswith("--bind", "--bind"));
        ck_assert(!nsr_startswith("--bind", "--bind-try"));
        ck_assert(!nsr_startswith("", "x"));
        ck_assert(nsr_endswith("a.policy", ".policy"));
        ck_assert(nsr_endswith("a", ""));
        ck_assert(!nsr_endswith("policy", ".policy"));
        ck_assert(streq("a", "a"));
        ck_assert(!streq("a", "b"));
        ck_assert(!streq(NULL, "a"));
        ck_assert(!streq("a", NULL));
        ck_assert(!streq(NULL, NULL));
}
END_TEST

/* ---- paths ---------------------------------------------------------------- */

START_TEST(test_path_join) {
        static const char *const cases[][3] = {
                { "/a", "b", "/a/b" },   { "/a/", "b", "/a/b" },
                { "/a", "/b", "/a/b" },  { "/a///", "///b", "/a/b" },
                { "/", "b", "/b" },      { "/", "/", "/" },
                { "a", "b/c", "a/b/c" }, { "/newroot", "/etc/x", "/newroot/etc/x" },
                { "", "b", "/b" },       { "/a", "", "/a/" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *j = nsr_path_join(cases[i][0], cases[i][1]);
                ck_assert_msg(streq(j, cases[i][2]), "join(%s, %s) = %s, want %s", cases[i][0], cases[i][1], j,
                              cases[i][2]);
        }
}
END_TEST

START_TEST(test_path_normalize) {
        static const char *const cases[][2] = {
                { "/", "/" },
                { "//", "/" },
                { "/.", "/" },
                { "/./", "/" },
                { "/a/b", "/a/b" },
                { "/a//b/", "/a/b" },
                { "//a/./b/.", "/a/b" },
                { "a/./b", "a/b" },
                { "./a", "a" },
                { ".", "." },
                { "", "." },
                { "./", "." },
                { "a/../b", "a/../b" }, /* no ".." resolution: that needs the filesystem */
                { "/a/.b/..c", "/a/.b/..c" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *n = nsr_path_normalize(cases[i][0]);
                ck_assert_msg(streq(n, cases[i][1]), "normalize(%s) = %s, want %s", cases[i][0], n, cases[i][1]);
        }
        static const char *const dotdot[][2] = {
                { "/a/../b", "/b" },        { "/a/b/..", "/a" },
                { "/a/b/../", "/a" },       { "/..", "/" },
                { "/../../a", "/a" },       { "/a/./../..", "/" },
                { "/a/..b/c", "/a/..b/c" }, { "//a//b/../c/.", "/a/c" },
                { "/a/b/../../..", "/" },
        };
        for (size_t i = 0; i < ELEMENTSOF(dotdot); i++) {
                _cleanup_free_ char *n = nsr_path_normalize_dotdot(dotdot[i][0]);
                ck_assert_msg(streq(n, dotdot[i][1]), "normalize_dotdot(%s) = %s, want %s", dotdot[i][0], n,
                              dotdot[i][1]);
        }
}
END_TEST

START_TEST(test_path_under) {
        static const struct {
                const char *path, *dir;
                bool under;
        } cases[] = {
                /* exact, and below */
                { "/a/b", "/a/b", true },
                { "/a/b/c", "/a/b", true },
                { "/a/b/c/d", "/a/b", true },
                /* a sibling that shares the prefix is not below */
                { "/a/bc", "/a/b", false },
                { "/a/b.c", "/a/b", false },
                { "/a", "/a/b", false },
                { "/x/a/b", "/a/b", false },
                /* trailing slashes */
                { "/a/b/c", "/a/b/", true },
                { "/a/b", "/a/b//", true },
                { "/a/b/", "/a/b", true },
                { "/a/bc", "/a/b/", false },
                /* the root */
                { "/", "/", true },
                { "/a", "/", true },
                { "/a/b", "//", true },
                { "a", "/", false },
                /* relative paths, and their root "" */
                { "a", "", true },
                { "", "", true },
                { "/a", "", false },
                { ".git", ".git", true },
                { ".git/hooks/x", ".git", true },
                { ".github", ".git", false },
                { "a/b", "a/", true },
                { "b/a", "a", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ck_assert_msg(nsr_path_under(cases[i].path, cases[i].dir) == cases[i].under,
                              "nsr_path_under(\"%s\", \"%s\") should be %s", cases[i].path, cases[i].dir,
                              cases[i].under ? "true" : "false");
}
END_TEST

/* ---- full reads and writes ------------------------------------------------ */

/* A pipe whose read end holds exactly len bytes of data and then EOF. */
static int pipe_with(const void *data, size_t len) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 1 << 20), (int) len);
        ck_assert_int_eq(nsr_write_all(p[1], data, len), 0);
        close(p[1]);
        return p[0];
}

static char *filled(size_t len, char c) {
        char *s = nsr_malloc0(len + 1);
        memset(s, c, len);
        return s;
}

START_TEST(test_read_all) {
        static const char data[] = "hello\0world";
        _cleanup_close_ int fd = pipe_with(data, sizeof(data) - 1);
        _cleanup_free_ char *buf = NULL;
        size_t len = 99;
        ck_assert_int_eq(nsr_read_all(fd, 1024, &buf, &len), 0);
        ck_assert_uint_eq(len, sizeof(data) - 1);
        ck_assert_mem_eq(buf, data, sizeof(data) - 1);
        ck_assert_int_eq(buf[len], '\0'); /* NUL-terminated for convenience */
}
END_TEST

START_TEST(test_read_all_empty) {
        _cleanup_close_ int fd = pipe_with("", 0);
        _cleanup_free_ char *buf = NULL;
        size_t len = 99;
        ck_assert_int_eq(nsr_read_all(fd, 0, &buf, &len), 0);
        ck_assert_uint_eq(len, 0);
        ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_read_all_limit) {
        /* Sizes around the limit and around the internal 4096-byte
         * buffer steps: exactly max bytes is fine, one more is -EFBIG. */
        static const struct {
                size_t data, max;
                int r;
        } cases[] = {
                { 10, 10, 0 },
                { 11, 10, -EFBIG },
                { 100, 10, -EFBIG },
                { 1, 0, -EFBIG },
                { 4095, 4096, 0 },
                { 4096, 4096, 0 },
                { 4097, 4096, -EFBIG },
                { 5000, 5000, 0 },
                { 5001, 5000, -EFBIG },
                { 8192, 8192, 0 },
                { 8193, 8192, -EFBIG },
                { 20000, 100000, 0 },
                { 100000, 65536, -EFBIG },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *data = filled(cases[i].data, 'x');
                _cleanup_close_ int fd = pipe_with(data, cases[i].data);
                char *buf = (char *) "untouched";
                size_t len = 99;
                int r = nsr_read_all(fd, cases[i].max, &buf, &len);
                ck_assert_msg(r == cases[i].r, "%zu bytes, max %zu: got %d, want %d", cases[i].data, cases[i].max, r,
                              cases[i].r);
                if (r == 0) {
                        ck_assert_uint_eq(len, cases[i].data);
                        ck_assert_mem_eq(buf, data, len);
                        free(buf);
                } else {
                        ck_assert_str_eq(buf, "untouched"); /* ret_* untouched on failure */
                        ck_assert_uint_eq(len, 99);
                }
        }
}
END_TEST

START_TEST(test_read_all_bad_fd) {
        char *buf = NULL;
        ck_assert_int_eq(nsr_read_all(-1, 100, &buf, NULL), -EBADF);
        ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(test_read_full_write_all) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(nsr_write_all(p[1], "abcdef", 6), 0);
        close(p[1]);
        char buf[16] = { 0 };
        ck_assert_int_eq(nsr_read_full(p[0], buf, 4), 4);
        ck_assert_mem_eq(buf, "abcd", 4);
        /* short only at EOF */
        ck_assert_int_eq(nsr_read_full(p[0], buf, sizeof(buf)), 2);
        ck_assert_mem_eq(buf, "ef", 2);
        ck_assert_int_eq(nsr_read_full(p[0], buf, sizeof(buf)), 0);
        close(p[0]);
        ck_assert_int_eq(nsr_write_all(-1, "x", 1), -EBADF);
}
END_TEST

/* ---- DEFINE_STRING_TABLE_LOOKUP ------------------------------------------- */

typedef enum fruit {
        FRUIT_APPLE,
        FRUIT_PEAR,
        FRUIT_UNNAMED, /* a hole in the table */
        FRUIT_FIG,
        _FRUIT_MAX,
        _FRUIT_INVALID = -EINVAL,
} fruit;

static const char *const fruit_names[_FRUIT_MAX] = {
        [FRUIT_APPLE] = "apple",
        [FRUIT_PEAR] = "pear",
        [FRUIT_FIG] = "fig",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP(fruit, fruit, fruit_names)

/* A plain int index, as for tables of non-enum ids. */
static const char *const digit_names[] = { "zero", "one", "two" };
DEFINE_PRIVATE_STRING_TABLE_LOOKUP(digit, int, digit_names)

START_TEST(test_string_table) {
        for (int i = 0; i < _FRUIT_MAX; i++) {
                const char *n = fruit_to_string((fruit) i);
                if (i == FRUIT_UNNAMED) {
                        ck_assert_ptr_null(n);
                        continue;
                }
                ck_assert_ptr_nonnull(n);
                ck_assert_int_eq(fruit_from_string(n), i);
        }
        ck_assert_str_eq(fruit_to_string(FRUIT_FIG), "fig");
        ck_assert_int_eq(fruit_from_string("pear"), FRUIT_PEAR);
        /* out of range, both sides */
        ck_assert_ptr_null(fruit_to_string(_FRUIT_MAX));
        ck_assert_ptr_null(fruit_to_string(_FRUIT_INVALID));
        ck_assert_ptr_null(fruit_to_string((fruit) 1000));
        /* unknown names: exact, case-sensitive, whole-string matches only */
        ck_assert_int_eq(fruit_from_string("plum"), _FRUIT_INVALID);
        ck_assert_int_eq(fruit_from_string("Apple"), _FRUIT_INVALID);
        ck_assert_int_eq(fruit_from_string("app"), _FRUIT_INVALID);
        ck_assert_int_eq(fruit_from_string("apples"), _FRUIT_INVALID);
        ck_assert_int_eq(fruit_from_string(""), _FRUIT_INVALID);
        ck_assert_int_eq(fruit_from_string(NULL), _FRUIT_INVALID);

        ck_assert_str_eq(digit_to_string(2), "two");
        ck_assert_ptr_null(digit_to_string(3));
        ck_assert_ptr_null(digit_to_string(-1));
        ck_assert_ptr_null(digit_to_string(INT_MIN));
        ck_assert_int_eq(digit_from_string("one"), 1);
        ck_assert_int_eq(digit_from_string("three"), -EINVAL);
}
END_TEST

/* ---- nsr_error ------------------------------------------------------------ */

START_TEST(test_error_set) {
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_error_set(&e, ENOENT, "Can't find source path %s", "/nope"), -ENOENT);
        ck_assert_int_eq(e.code, ENOENT);
        ck_assert(e.with_errno);
        ck_assert_int_eq(e.kind, NSR_ERR_SETUP);
        ck_assert_str_eq(e.msg, "Can't find source path /nope");
        char buf[256];
        nsr_error_format(&e, buf, sizeof(buf));
        ck_assert_str_eq(buf, "Can't find source path /nope: No such file or directory");

        /* a negative code is taken as -errno */
        ck_assert_int_eq(nsr_error_set(&e, -EACCES, "open %s", "x"), -EACCES);
        ck_assert_int_eq(e.code, EACCES);
        nsr_error_format(&e, buf, sizeof(buf));
        ck_assert_str_eq(buf, "open x: Permission denied");

        /* code 0: no strerror suffix, and the return value is still < 0 */
        ck_assert_int_eq(nsr_error_set(&e, 0, "odd"), -EIO);
        ck_assert(!e.with_errno);
        nsr_error_format(&e, buf, sizeof(buf));
        ck_assert_str_eq(buf, "odd");

        /* a NULL error is allowed: only the return value matters then */
        ck_assert_int_eq(nsr_error_set(NULL, EPERM, "x"), -EPERM);
        ck_assert_int_eq(nsr_error_setx(NULL, EPERM, "x"), -EPERM);
        ck_assert_int_eq(nsr_error_prefix(NULL, "x"), -EIO);
}
END_TEST

START_TEST(test_error_setx) {
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_error_setx(&e, EINVAL, "Unknown option %s", "--foo"), -EINVAL);
        ck_assert_int_eq(e.code, EINVAL);
        ck_assert(!e.with_errno);
        char buf[256];
        nsr_error_format(&e, buf, sizeof(buf));
        ck_assert_str_eq(buf, "Unknown option --foo");

        /* a new error replaces the kind and op of the one before: control
         * flow branches on them, so they must describe this message */
        nsr_error u = { .kind = NSR_ERR_OVERLAY_MOUNT, .op = 3 };
        nsr_error_setx(&u, EINVAL, "x");
        ck_assert_int_eq(u.kind, NSR_ERR_SETUP);
        ck_assert_uint_eq(u.op, 0);

        nsr_error_clear(&u);
        ck_assert_int_eq(u.code, 0);
        ck_assert_int_eq(u.kind, NSR_ERR_NONE);
        ck_assert_str_eq(u.msg, "");
        nsr_error_clear(NULL);
}
END_TEST

START_TEST(test_error_prefix) {
        nsr_error e = { 0 };
        nsr_error_set(&e, ENOENT, "open %s", "/x");
        ck_assert_int_eq(nsr_error_prefix(&e, "Can't mount %s", "/y"), -ENOENT);
        ck_assert_str_eq(e.msg, "Can't mount /y: open /x");
        ck_assert(e.with_errno);
        char buf[256];
        nsr_error_format(&e, buf, sizeof(buf));
        ck_assert_str_eq(buf, "Can't mount /y: open /x: No such file or directory");

        nsr_error z = { 0 };
        nsr_error_setx(&z, 0, "inner");
        ck_assert_int_eq(nsr_error_prefix(&z, "outer"), -EIO);
        ck_assert_str_eq(z.msg, "outer: inner");
}
END_TEST

START_TEST(test_error_kind) {
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_error_setk(&e, NSR_ERR_CLONE, EPERM, "Creating new namespace failed"), -EPERM);
        ck_assert_int_eq(e.kind, NSR_ERR_CLONE);
        ck_assert(e.with_errno);
        ck_assert_int_eq(nsr_error_setxk(&e, NSR_ERR_OVERLAY_MOUNT, -EINVAL, "Can't make overlay mount on %s", "/x"),
                         -EINVAL);
        ck_assert_int_eq(e.kind, NSR_ERR_OVERLAY_MOUNT);
        ck_assert_int_eq(e.code, EINVAL);
        ck_assert(!e.with_errno);
        ck_assert_str_eq(e.msg, "Can't make overlay mount on /x");
        ck_assert_int_eq(nsr_error_setxk(NULL, NSR_ERR_CLONE, EPERM, "x"), -EPERM);

        /* context in front keeps what failed */
        e.op = 2;
        nsr_error_prefix(&e, "outer");
        ck_assert_int_eq(e.kind, NSR_ERR_OVERLAY_MOUNT);
        ck_assert_uint_eq(e.op, 2);

        /* the same text through the generic setter is no such kind */
        nsr_error_setx(&e, EINVAL, "Can't make overlay mount on /x");
        ck_assert_int_eq(e.kind, NSR_ERR_SETUP);

        ck_assert_str_eq(nsr_error_kind_to_string(NSR_ERR_USERNS_SETUP), "userns-setup");
        ck_assert_str_eq(nsr_error_kind_to_string(NSR_ERR_OVERLAY_MOUNT), "overlay-mount");
        for (int k = 0; k < _NSR_ERR_KIND_MAX; k++)
                ck_assert_ptr_nonnull(nsr_error_kind_to_string((nsr_error_kind) k));
        ck_assert_ptr_null(nsr_error_kind_to_string(_NSR_ERR_KIND_MAX));
        ck_assert_ptr_null(nsr_error_kind_to_string(_NSR_ERR_KIND_INVALID));

        /* the report's names: documented, stable, never NULL */
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_CLONE), "userns-refused");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_USERNS_SETUP), "userns-refused");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_OVERLAY_MOUNT), "overlay-refused");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_CONFIG), "config-invalid");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_PROJECT_MISSING), "project-missing");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_STATE_FULL), "state-dir-full");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_APPLY), "apply-failed");
        ck_assert_str_eq(nsr_error_kind_report_name(NSR_ERR_SETUP), "setup-failed");
        ck_assert_str_eq(nsr_error_kind_report_name(_NSR_ERR_KIND_INVALID), "setup-failed");
        for (int k = 0; k < _NSR_ERR_KIND_MAX; k++)
                ck_assert_ptr_nonnull(nsr_error_kind_report_name((nsr_error_kind) k));
        ck_assert_ptr_nonnull(nsr_error_kind_hint(NSR_ERR_STATE_FULL));
        ck_assert_ptr_null(nsr_error_kind_hint(NSR_ERR_SETUP));
}
END_TEST

START_TEST(test_error_sanitize) {
        /* An error read from a pipe: a kind this build does not know is a
         * generic failure, and the message ends inside the buffer. */
        nsr_error e;
        memset(&e, 'x', sizeof(e));
        e.kind = (nsr_error_kind) 1000;
        nsr_error_sanitize(&e);
        ck_assert_int_eq(e.kind, NSR_ERR_SETUP);
        ck_assert_uint_eq(strlen(e.msg), NSR_ERROR_MSG_MAX - 1);
        e.kind = (nsr_error_kind) -5;
        nsr_error_sanitize(&e);
        ck_assert_int_eq(e.kind, NSR_ERR_SETUP);
        e.kind = NSR_ERR_CLONE;
        nsr_error_sanitize(&e);
        ck_assert_int_eq(e.kind, NSR_ERR_CLONE);
}
END_TEST

START_TEST(test_error_truncation) {
        /* Messages longer than the fixed buffer are cut, never overflow, and
         * stay NUL-terminated. */
        _cleanup_free_ char *longs = filled(5000, 'a');
        nsr_error e = { 0 };
        nsr_error_set(&e, ENOENT, "%s", longs);
        ck_assert_uint_eq(strlen(e.msg), NSR_ERROR_MSG_MAX - 1);

        /* a long prefix on a long message */
        _cleanup_free_ char *longp = filled(3000, 'p');
        nsr_error_prefix(&e, "%s", longp);
        ck_assert_uint_eq(strlen(e.msg), NSR_ERROR_MSG_MAX - 1);
        for (size_t i = 0; i < NSR_ERROR_MSG_MAX - 1; i++)
                ck_assert_int_eq(e.msg[i], 'p');

        /* a short prefix keeps ": " and as much of the old text as fits */
        nsr_error_setx(&e, EINVAL, "%s", longs);
        nsr_error_prefix(&e, "pre");
        ck_assert_uint_eq(strlen(e.msg), NSR_ERROR_MSG_MAX - 1);
        ck_assert(nsr_startswith(e.msg, "pre: aaa"));

        /* a prefix of exactly MSG_MAX - 2 characters leaves room for ":" only */
        _cleanup_free_ char *p2 = filled(NSR_ERROR_MSG_MAX - 2, 'q');
        nsr_error_setx(&e, EINVAL, "old");
        nsr_error_prefix(&e, "%s", p2);
        ck_assert_uint_eq(strlen(e.msg), NSR_ERROR_MSG_MAX - 1);
        ck_assert_int_eq(e.msg[NSR_ERROR_MSG_MAX - 2], ':');

        /* format into small buffers */
        nsr_error_set(&e, ENOENT, "%s", longs);
        char big[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(&e, big, sizeof(big));
        ck_assert(nsr_endswith(big, "a: No such file or directory"));
        char small[8];
        nsr_error_format(&e, small, sizeof(small));
        ck_assert_str_eq(small, "aaaaaaa");
        char one[1] = { 'x' };
        nsr_error_format(&e, one, sizeof(one));
        ck_assert_int_eq(one[0], '\0');
}
END_TEST

START_TEST(test_error_fixed_size) {
        /* It crosses a pipe as plain bytes. */
        nsr_error e = { 0 }, f = { 0 };
        nsr_error_set(&e, EACCES, "Can't mkdir %s", "/x");
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(nsr_write_all(p[1], &e, sizeof(e)), 0);
        ck_assert_int_eq(nsr_read_full(p[0], &f, sizeof(f)), (int) sizeof(f));
        close(p[0]);
        close(p[1]);
        ck_assert_int_eq(f.code, EACCES);
        ck_assert_str_eq(f.msg, "Can't mkdir /x");
}
END_TEST

/* FOREACH_DIRENT skips . and .., and two walks over one dir fd both see
 * everything: nsr_opendir_at opens anew, where a dup would share the
 * offset and the second walk would see nothing (7f472fd). */
static size_t walk_count(int dirfd, bool *saw_dots) {
        _cleanup_closedir_ DIR *d = NULL;
        ck_assert_int_eq(nsr_opendir_at(dirfd, ".", 0, &d), 0);
        size_t n = 0;
        int r = 0;
        FOREACH_DIRENT(de, d, r = -errno) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        *saw_dots = true;
                n++;
        }
        ck_assert_int_eq(r, 0);
        return n;
}

START_TEST(test_foreach_dirent) {
        char path[] = "/tmp/nsr-dirent.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(path));
        int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        for (int i = 0; i < 50; i++) {
                char name[16];
                snprintf(name, sizeof(name), "f%d", i);
                ck_assert_int_eq(mkdirat(fd, name, 0700), 0);
        }
        bool dots = false;
        ck_assert_uint_eq(walk_count(fd, &dots), 50);
        ck_assert_uint_eq(walk_count(fd, &dots), 50);
        ck_assert(!dots);
        /* An empty dir: the body never runs, and that is no error. */
        int sub = openat(fd, "f0", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_uint_eq(walk_count(sub, &dots), 0);
        close(sub);
        /* A file is no dir; O_PATH alone cannot be read. */
        ck_assert_int_eq(close(openat(fd, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
        DIR *d = NULL;
        ck_assert_int_eq(nsr_opendir_at(fd, "file", 0, &d), -ENOTDIR);
        ck_assert_ptr_null(d);
        /* A read error is not the end: an O_PATH fd makes getdents fail. */
        ck_assert_int_eq(nsr_fdopendir(open(path, O_PATH | O_DIRECTORY | O_CLOEXEC), &d), 0);
        int r = 0, seen = 0;
        FOREACH_DIRENT(de, d, r = -errno) seen++;
        ck_assert_int_eq(r, -EBADF);
        ck_assert_int_eq(seen, 0);
        closedir(d);
        for (int i = 0; i < 50; i++) {
                char name[16];
                snprintf(name, sizeof(name), "f%d", i);
                ck_assert_int_eq(unlinkat(fd, name, AT_REMOVEDIR), 0);
        }
        ck_assert_int_eq(unlinkat(fd, "file", 0), 0);
        close(fd);
        ck_assert_int_eq(rmdir(path), 0);
}
END_TEST

START_TEST(test_kernel_at_least) {
        /* Against this kernel's own release: its major.minor is at least
         * itself and not at least the next minor or major. */
        struct utsname u;
        unsigned maj = 0, min = 0;
        ck_assert_int_eq(uname(&u), 0);
        ck_assert_int_eq(sscanf(u.release, "%u.%u", &maj, &min), 2);
        ck_assert(nsr_kernel_at_least(maj, min));
        ck_assert(nsr_kernel_at_least(maj, 0));
        ck_assert(nsr_kernel_at_least(0, 0));
        ck_assert(!nsr_kernel_at_least(maj, min + 1));
        ck_assert(!nsr_kernel_at_least(maj + 1, 0));
        if (maj > 0)
                ck_assert(nsr_kernel_at_least(maj - 1, 999));
}
END_TEST

START_TEST(test_gmtime) {
        /* Every field gmtime_r gives, over 20000 years in steps of a month
         * and an hour (a quarter of a million times, quick under ASan), odd
         * offsets, the edges of leap years and centuries, and times whose
         * year does not fit. */
        struct tm want, got;
        int64_t edges[] = { 0,
                            -1,
                            86399,
                            86400,
                            951782399,
                            951782400,
                            951868800,
                            4107542399,
                            4107542400,
                            -62167219200,
                            253402300799,
                            1LL << 40,
                            -(1LL << 40),
                            67767976233316800LL,
                            -67768040609740800LL,
                            INT64_MAX,
                            INT64_MIN };
        for (size_t i = 0; i < ELEMENTSOF(edges); i++) {
                time_t t = (time_t) edges[i];
                bool ok = gmtime_r(&t, &want) != NULL;
                ck_assert_msg(nsr_gmtime(edges[i], &got) == ok, "%lld: gmtime_r %d", (long long) edges[i], ok);
                if (ok)
                        ck_assert_msg(memcmp(&got, &want, offsetof(struct tm, tm_isdst)) == 0, "%lld",
                                      (long long) edges[i]);
        }
        for (int64_t t = -315569520000LL; t < 315569520000LL; t += 31 * 86400 + 3607) {
                time_t tt = (time_t) t;
                ck_assert_ptr_nonnull(gmtime_r(&tt, &want));
                ck_assert(nsr_gmtime(t, &got));
                ck_assert_msg(memcmp(&got, &want, offsetof(struct tm, tm_isdst)) == 0, "%lld", (long long) t);
        }
}
END_TEST

/* ---- nsr_paths_exist ------------------------------------------------------ */

/* Checks nsr_paths_exist against lstat for every path of v: each answer,
 * not only the count. */
static void probe_matches_lstat(char **v, size_t n) {
        bool got[256];
        ck_assert_uint_le(n, ELEMENTSOF(got));
        nsr_paths_exist(v, n, got);
        for (size_t i = 0; i < n; i++) {
                struct stat st;
                bool want = lstat(v[i], &st) == 0;
                ck_assert_msg(got[i] == want, "%s: probe says %d, lstat %d", v[i], got[i], want);
                ck_assert(nsr_path_exists(v[i]) == want);
        }
}

START_TEST(test_paths_exist) {
        char top[] = "/tmp/nsr-probe.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(top));
        _cleanup_strv_free_ char **v = nsr_malloc0(sizeof(char *));
        /* Enough names in top and in top/d to list both, a few of them
         * there; a dir that is missing (top/gone) with enough names below
         * it, and names two levels below missing dirs, which the listing of
         * top answers for; a file taken for a dir; a dangling link and a
         * link to a dir; paths that are not plain. */
        _cleanup_free_ char *d = nsr_path_join(top, "d");
        ck_assert_int_eq(mkdir(d, 0700), 0);
        for (int i = 0; i < 12; i++) {
                nsr_strv_push(&v, nsr_asprintf("%s/n%d", top, i));
                nsr_strv_push(&v, nsr_asprintf("%s/d/n%d", top, i));
                nsr_strv_push(&v, nsr_asprintf("%s/gone/n%d", top, i));
                nsr_strv_push(&v, nsr_asprintf("%s/gone%d/x/y", top, i));
                nsr_strv_push(&v, nsr_asprintf("%s/link/n%d", top, i));
                nsr_strv_push(&v, nsr_asprintf("%s/n3/n%d", top, i));
        }
        for (int i = 0; i < 12; i += 3) {
                _cleanup_free_ char *a = nsr_asprintf("%s/n%d", top, i), *b = nsr_asprintf("%s/d/n%d", top, i + 1);
                ck_assert_int_eq(close(open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
                ck_assert_int_eq(mkdir(b, 0700), 0);
        }
        _cleanup_free_ char *dangling = nsr_path_join(top, "n5"), *link = nsr_path_join(top, "link");
        ck_assert_int_eq(symlink("/nonexistent/x", dangling), 0);
        ck_assert_int_eq(symlink(d, link), 0);
        nsr_strv_push(&v, nsr_asprintf("%s//d/n1", top));
        nsr_strv_push(&v, nsr_asprintf("%s/./d/n1", top));
        nsr_strv_push(&v, nsr_asprintf("%s/d/../d/n1", top));
        nsr_strv_push(&v, nsr_asprintf("%s/d/n1/", top));
        nsr_strv_push(&v, nsr_strdup("relative/path"));
        nsr_strv_push(&v, nsr_strdup("/"));
        size_t n = nsr_strv_length(v);
        probe_matches_lstat(v, n);
        /* Nothing is kept: what is made between two calls is found by the
         * second, in a listed dir, in a dir that was missing, and below a
         * dir the first listing did not have. */
        _cleanup_free_ char *gone = nsr_path_join(top, "gone"), *gone2 = nsr_path_join(top, "gone2"),
                            *gone2x = nsr_path_join(top, "gone2/x");
        _cleanup_free_ char *f7 = nsr_path_join(top, "n7"), *g4 = nsr_path_join(top, "gone/n4"),
                            *y = nsr_path_join(top, "gone2/x/y");
        ck_assert_int_eq(close(open(f7, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
        ck_assert_int_eq(mkdir(gone, 0700), 0);
        ck_assert_int_eq(close(open(g4, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
        ck_assert_int_eq(mkdir(gone2, 0700), 0);
        ck_assert_int_eq(mkdir(gone2x, 0700), 0);
        ck_assert_int_eq(close(open(y, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
        probe_matches_lstat(v, n);
        bool got[256];
        nsr_paths_exist(v, n, got);
        size_t found = 0;
        for (size_t i = 0; i < n; i++)
                found += got[i] && (streq(v[i], f7) || streq(v[i], g4) || streq(v[i], y));
        ck_assert_uint_eq(found, 3);
        nsr_paths_exist(v, 0, got);
        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", top);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_paths_exist_big_dir) {
        /* A dir with far more entries than paths asked about is not listed
         * whole: the answers are lstat's all the same. */
        char top[] = "/tmp/nsr-probe.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(top));
        int fd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        for (int i = 0; i < 64 * 2 * NSR_PATHPROBE_LIST_MIN + 10; i++) {
                char name[16];
                snprintf(name, sizeof(name), "e%d", i);
                ck_assert_int_eq(mkdirat(fd, name, 0700), 0);
        }
        close(fd);
        _cleanup_strv_free_ char **v = nsr_malloc0(sizeof(char *));
        for (int i = 0; i < NSR_PATHPROBE_LIST_MIN; i++) {
                nsr_strv_push(&v, nsr_asprintf("%s/e%d", top, i * 7));
                nsr_strv_push(&v, nsr_asprintf("%s/x%d", top, i));
        }
        probe_matches_lstat(v, nsr_strv_length(v));
        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", top);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* nsr_close_all_but: every fd from `from` up goes but the kept ones,
 * whatever their order, negatives skipped, stdio left below `from`. Run in
 * a child, whose fds are its own. */
START_TEST(test_close_all_but) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fds[6];
                for (int i = 0; i < 6; i++)
                        if ((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
                                _exit(10);
                int keep[] = { fds[4], -1, fds[1], 1, fds[4] };
                if (nsr_close_all_but(3, keep, 5) < 0)
                        _exit(11);
                for (int i = 0; i < 6; i++) {
                        bool open_now = fcntl(fds[i], F_GETFD) >= 0;
                        if (open_now != (i == 1 || i == 4))
                                _exit(20 + i);
                }
                if (fcntl(0, F_GETFD) < 0 || fcntl(2, F_GETFD) < 0)
                        _exit(30);
                int none[] = { -1 };
                if (nsr_close_all_but(3, none, 1) < 0 || fcntl(fds[1], F_GETFD) >= 0 || fcntl(fds[4], F_GETFD) >= 0)
                        _exit(31);
                _exit(0);
        }
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("util");
        TCase *tc = tcase_create("parse");
        tcase_add_test(tc, test_strappendf);
        tcase_add_test(tc, test_kernel_at_least);
        tcase_add_test(tc, test_edit_distance);
        tcase_add_test(tc, test_timing);
        tcase_add_test(tc, test_parse_int_good);
        tcase_add_test(tc, test_parse_int_bad);
        tcase_add_test(tc, test_parse_fd);
        tcase_add_test(tc, test_parse_u32);
        tcase_add_test(tc, test_parse_u64);
        tcase_add_test(tc, test_parse_octal_mode);
        suite_add_tcase(s, tc);

        tc = tcase_create("strings");
        tcase_add_test(tc, test_strv);
        tcase_add_test(tc, test_strv_cleanup);
        tcase_add_test(tc, test_startswith_endswith);
        tcase_add_test(tc, test_path_join);
        tcase_add_test(tc, test_path_normalize);
        tcase_add_test(tc, test_path_under);
        suite_add_tcase(s, tc);

        tc = tcase_create("io");
        tcase_add_test(tc, test_read_all);
        tcase_add_test(tc, test_read_all_empty);
        tcase_add_test(tc, test_read_all_limit);
        tcase_add_test(tc, test_read_all_bad_fd);
        tcase_add_test(tc, test_read_full_write_all);
        tcase_add_test(tc, test_foreach_dirent);
        suite_add_tcase(s, tc);

        /* Tests that make a thousand dirs or loop a quarter of a million
         * times: under a second alone, but a loaded CI machine (distcheck
         * beside the parity run) once took more than check's default 4 s. */
        tc = tcase_create("bulk");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_gmtime);
        tcase_add_test(tc, test_paths_exist);
        tcase_add_test(tc, test_paths_exist_big_dir);
        suite_add_tcase(s, tc);

        tc = tcase_create("string-table");
        tcase_add_test(tc, test_string_table);
        suite_add_tcase(s, tc);

        tc = tcase_create("error");
        tcase_add_test(tc, test_error_set);
        tcase_add_test(tc, test_error_setx);
        tcase_add_test(tc, test_error_prefix);
        tcase_add_test(tc, test_error_kind);
        tcase_add_test(tc, test_error_sanitize);
        tcase_add_test(tc, test_error_truncation);
        tcase_add_test(tc, test_error_fixed_size);
        tcase_add_test(tc, test_close_all_but);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
