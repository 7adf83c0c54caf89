/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json.h"
#include "base/utf8.h"
#include "unit.h"

/* ---- UTF-8 -------------------------------------------------------------- */

typedef struct {
        const char *s;
        bool valid;
} utf8_case;

START_TEST(test_utf8_valid) {
        static const utf8_case cases[] = {
                { "", true },
                { "plain ascii \x01\x7f", true },
                { "\xc2\x80", true },         /* U+0080, smallest 2-byte */
                { "\xdf\xbf", true },         /* U+07FF */
                { "\xe0\xa0\x80", true },     /* U+0800, smallest 3-byte */
                { "\xed\x9f\xbf", true },     /* U+D7FF, just below surrogates */
                { "\xee\x80\x80", true },     /* U+E000, just above */
                { "\xef\xbf\xbd", true },     /* U+FFFD */
                { "\xef\xbf\xbf", true },     /* U+FFFF (a noncharacter, but valid) */
                { "\xf0\x90\x80\x80", true }, /* U+10000 */
                { "\xf4\x8f\xbf\xbf", true }, /* U+10FFFF, the last one */
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", true },
                { "\x80", false }, /* lone continuation */
                { "\xbf", false },
                { "\xc0\x80", false },                 /* overlong NUL */
                { "\xc1\xbf", false },                 /* overlong U+007F */
                { "\xe0\x80\x80", false },             /* overlong */
                { "\xe0\x9f\xbf", false },             /* overlong U+07FF */
                { "\xf0\x80\x80\x80", false },         /* overlong */
                { "\xf0\x8f\xbf\xbf", false },         /* overlong U+FFFF */
                { "\xed\xa0\x80", false },             /* U+D800 */
                { "\xed\xbf\xbf", false },             /* U+DFFF */
                { "\xed\xa0\x80\xed\xb0\x80", false }, /* CESU-8 pair */
                { "\xf4\x90\x80\x80", false },         /* U+110000 */
                { "\xf5\x80\x80\x80", false },
                { "\xf8\x88\x80\x80\x80", false }, /* 5-byte form */
                { "\xfe", false },
                { "\xff", false },
                { "\xc2", false }, /* truncated */
                { "\xe2\x82", false },
                { "\xf0\x9f\x98", false },
                { "\xc2\x41", false }, /* bad continuation */
                { "\xe2\x28\xa1", false },
                { "a\xc3\xa9\xc3", false }, /* truncated at the end */
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ck_assert_msg(nsr_utf8_valid(cases[i].s, strlen(cases[i].s)) == cases[i].valid, "case %zu", i);
        /* NUL bytes are valid UTF-8 (lengths are explicit). */
        ck_assert(nsr_utf8_valid("a\0b", 3));
}
END_TEST

START_TEST(test_utf8_decode) {
        uint32_t cp = 0;
        ck_assert_int_eq(nsr_utf8_decode("\xf4\x8f\xbf\xbf", 4, &cp), 4);
        ck_assert_uint_eq(cp, 0x10ffff);
        ck_assert_int_eq(nsr_utf8_decode("\xe2\x82\xac", 3, &cp), 3);
        ck_assert_uint_eq(cp, 0x20ac);
        ck_assert_int_eq(nsr_utf8_decode("\xc3\xa9", 2, &cp), 2);
        ck_assert_uint_eq(cp, 0xe9);
        /* Maximal subparts: how many bytes one U+FFFD replaces. */
        ck_assert_int_eq(nsr_utf8_decode("\xe2\x82\x41", 3, &cp), -2);
        ck_assert_int_eq(nsr_utf8_decode("\xe2\x82", 2, &cp), -2);
        ck_assert_int_eq(nsr_utf8_decode("\xf0\x9f\x98", 3, &cp), -3);
        ck_assert_int_eq(nsr_utf8_decode("\xe0\x80", 2, &cp), -1);
        ck_assert_int_eq(nsr_utf8_decode("\xed\xa0\x80", 3, &cp), -1);
        ck_assert_int_eq(nsr_utf8_decode("\xf4\x90", 2, &cp), -1);
        ck_assert_int_eq(nsr_utf8_decode("\xc0\xaf", 2, &cp), -1);
        ck_assert_int_eq(nsr_utf8_decode("\xff", 1, &cp), -1);
        /* A length limit that cuts a sequence. */
        ck_assert_int_eq(nsr_utf8_decode("\xc3\xa9", 1, &cp), -1);
}
END_TEST

START_TEST(test_utf8_sanitize) {
        /* The Unicode ch. 3 example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
         * becomes a FFFD FFFD FFFD b FFFD c FFFD FFFD d. */
        const char in[] = "\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64";
        _cleanup_free_ char *out = nsr_utf8_sanitize(in, sizeof(in) - 1);
        ck_assert_str_eq(out, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                              "b\xef\xbf\xbd"
                              "c\xef\xbf\xbd\xef\xbf\xbd"
                              "d");
        _cleanup_free_ char *same = nsr_utf8_sanitize("caf\xc3\xa9", 5);
        ck_assert_str_eq(same, "caf\xc3\xa9");
        _cleanup_free_ char *empty = nsr_utf8_sanitize("", 0);
        ck_assert_str_eq(empty, "");
}
END_TEST

START_TEST(test_utf8_escape) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "plain/path.c", "plain/path.c" },
                { "a\nb\tc\rd", "a\\nb\\tc\\rd" },
                { "back\\slash", "back\\\\slash" },
                { "\x1b[31mred", "\\x1b[31mred" },
                { "del\x7f", "del\\x7f" },
                { "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac" },
                { "c1 \xc2\x9b csi", "c1 \\xc2\\x9b csi" },
                { "bad \xff\xfe", "bad \\xff\\xfe" },
                { "cut \xe2\x82", "cut \\xe2\\x82" },
                { "", "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *e = nsr_utf8_escape(cases[i].in);
                ck_assert_str_eq(e, cases[i].out);
        }
}
END_TEST

START_TEST(test_utf8_escape_invisible) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                /* bidi overrides, isolates, marks */
                { "a\xe2\x80\xae"
                  "b",
                  "a\\u202eb" },
                { "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "\\u202a\\u202b\\u202c\\u202d" },
                { "\xe2\x81\xa6x\xe2\x81\xa9", "\\u2066x\\u2069" },
                { "\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c" },
                /* zero-width, word joiner, BOM, separators */
                { "z\xe2\x80\x8bw\xe2\x80\x8c\xe2\x80\x8d", "z\\u200bw\\u200c\\u200d" },
                { "\xe2\x81\xa0\xef\xbb\xbf", "\\u2060\\ufeff" },
                { "l\xe2\x80\xa8p\xe2\x80\xa9", "l\\u2028p\\u2029" },
                /* neighbours that are ordinary text stay */
                { "\xe2\x80\x90\xe2\x80\xaf", "\xe2\x80\x90\xe2\x80\xaf" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *e = nsr_utf8_escape(cases[i].in);
                ck_assert_str_eq(e, cases[i].out);
        }
}
END_TEST

START_TEST(test_utf8_escape_message) {
        /* Messages: newlines and tabs stay, backslashes stay, every control
         * goes. */
        _cleanup_free_ char *m =
                nsr_utf8_escape_flags("a\\b\n\tc\x1b]0;t\x07\r\xc2\x9b\xe2\x80\xae\n", NSR_ESCAPE_MESSAGE);
        ck_assert_str_eq(m, "a\\b\n\tc\\x1b]0;t\\x07\\r\\xc2\\x9b\\u202e\n");
        /* Idempotent: a message built from escaped names is left alone. */
        static const char *const names[] = { "x\x1b[2Jy", "back\\slash",
                                             ("bi\xe2\x80\xae"
                                              "di"),
                                             "\xff" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *once = nsr_utf8_escape(names[i]);
                _cleanup_free_ char *twice = nsr_utf8_escape_flags(once, NSR_ESCAPE_MESSAGE);
                ck_assert_str_eq(once, twice);
        }
        /* The worst case fits: 4 bytes out per byte in. */
        char worst[64];
        memset(worst, 0x01, sizeof(worst) - 1);
        worst[sizeof(worst) - 1] = '\0';
        _cleanup_free_ char *w = nsr_utf8_escape(worst);
        ck_assert_uint_eq(strlen(w), 4 * (sizeof(worst) - 1));
        _cleanup_free_ char *bom = nsr_utf8_escape("\xd8\x9c\xd8\x9c");
        ck_assert_str_eq(bom, "\\u061c\\u061c");
}
END_TEST

START_TEST(test_utf8_shown_as_is) {
        /* The one rule: printable and valid as is; C0, DEL, C1, invisible
         * characters and invalid bytes not. */
        static const struct {
                const char *s;
                bool as_is;
                size_t n;
        } cases[] = {
                { "a", true, 1 },
                { " ", true, 1 },
                { "\xc3\xbc", true, 2 },
                { "\xe2\x82\xac", true, 3 },
                { "\xf0\x9f\x98\x80", true, 4 },
                { "\x1b", false, 1 },
                { "\n", false, 1 },
                { "\x7f", false, 1 },
                { "\xc2\x9b", false, 2 },
                { "\xc2\xa0", true, 2 },
                { "\xe2\x80\xae", false, 3 },
                { "\xff", false, 1 },
                { "\xe2\x80", false, 2 },
                { "\xc0\xaf", false, 1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t n = 0;
                bool as_is = nsr_utf8_shown_as_is(cases[i].s, strlen(cases[i].s), &n);
                ck_assert_msg(as_is == cases[i].as_is && n == cases[i].n, "case %zu: %d %zu", i, as_is, n);
        }
}
END_TEST

START_TEST(test_utf8_escape_shell) {
        /* A shell word: nothing a terminal obeys, and /bin/sh reads back
         * the same bytes. */
        static const char *const words[] = {
                "plain",
                "",
                "it's a \"word\"",
                "\x1b]52;c;cHduZWQ=\x07",
                "\x1b[2J\x1b[H",
                "\x9b"
                "31m",
                "\xc2\x9b"
                "31m",
                "bi\xe2\x80\xae"
                "di",
                "\xff\xfe\xc0\xaf",
                "line\nFAKE",
                "ends in newlines\n\n",
                "\n\x01\n",
                "\\x1b",
                "%s%n",
                "-n",
                "\xc3\xbc ok",
        };
        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                _cleanup_free_ char *q = nsr_utf8_escape_flags(words[i], NSR_ESCAPE_SHELL);
                /* Only printable text, and the word's own trailing newlines. */
                size_t l = strlen(q);
                for (size_t k = 0; k < l;) {
                        uint32_t cp = 0;
                        int n = nsr_utf8_decode(q + k, l - k, &cp);
                        ck_assert_msg(n > 0, "word %zu: invalid UTF-8 at %zu", i, k);
                        bool nl_at_end = cp == '\n' && q[l - 1] == '\'' && strspn(q + k, "\n") == l - 1 - k;
                        ck_assert_msg(nl_at_end || (cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0) &&
                                                    !nsr_utf8_is_invisible(cp)),
                                      "word %zu: U+%04x at %zu in %s", i, (unsigned) cp, k, q);
                        k += (size_t) n;
                }
                _cleanup_free_ char *cmd = nsr_asprintf("printf '%%s' %s; printf _", q);
                char *argv[] = { (char *) "/bin/sh", (char *) "-c", cmd, NULL };
                int p[2];
                ck_assert_int_eq(pipe(p), 0);
                pid_t pid = fork();
                ck_assert_int_ge(pid, 0);
                if (pid == 0) {
                        dup2(p[1], 1);
                        execv(argv[0], argv);
                        _exit(127);
                }
                close(p[1]);
                _cleanup_free_ char *out = NULL;
                size_t len = 0;
                ck_assert_int_eq(nsr_read_all(p[0], 1 << 16, &out, &len), 0);
                close(p[0]);
                int st = 0;
                ck_assert_int_eq(waitpid(pid, &st, 0), pid);
                ck_assert_int_eq(st, 0);
                ck_assert_uint_eq(len, strlen(words[i]) + 1);
                ck_assert_msg(memcmp(out, words[i], strlen(words[i])) == 0, "word %zu: %s read back wrong", i, q);
        }
        /* Plain words stay as they are. */
        _cleanup_free_ char *p = nsr_utf8_escape_flags("/usr/lib/x86_64-linux-gnu", NSR_ESCAPE_SHELL);
        ck_assert_str_eq(p, "/usr/lib/x86_64-linux-gnu");
}
END_TEST

/* ---- base64 ------------------------------------------------------------- */

START_TEST(test_base64_rfc4648) {
        /* RFC 4648 section 10. */
        static const struct {
                const char *in, *out;
        } v[] = {
                { "", "" },
                { "f", "Zg==" },
                { "fo", "Zm8=" },
                { "foo", "Zm9v" },
                { "foob", "Zm9vYg==" },
                { "fooba", "Zm9vYmE=" },
                { "foobar", "Zm9vYmFy" },
        };
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                _cleanup_free_ char *b = nsr_json_base64(v[i].in, strlen(v[i].in));
                ck_assert_str_eq(b, v[i].out);
        }
        _cleanup_free_ char *bin = nsr_json_base64("\xff\xfe\xfd\x00\x01", 5);
        ck_assert_str_eq(bin, "//79AAE=");
        _cleanup_free_ char *ab = nsr_json_base64("a\x80"
                                                  "b",
                                                  3);
        ck_assert_str_eq(ab, "YYBi");
}
END_TEST

/* ---- the writer --------------------------------------------------------- */

static char *finish_ok(nsr_json *j) {
        nsr_error err = { 0 };
        char *out = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_json_finish(j, "doc", &out, &len, &err), 0);
        ck_assert_uint_eq(len, strlen(out));
        return out;
}

static void write_sample(nsr_json *j) {
        char *argv[] = { (char *) "ls", (char *) "-l", NULL };
        nsr_json_object_begin(j, NULL);
        nsr_json_int(j, "i", -42);
        nsr_json_uint(j, "u", UINT64_MAX);
        nsr_json_bool(j, "t", true);
        nsr_json_bool(j, "f", false);
        nsr_json_null(j, "n");
        nsr_json_string(j, "s", "x");
        nsr_json_string(j, "null_string", NULL);
        nsr_json_strv(j, "argv", argv);
        nsr_json_strv(j, "none", NULL);
        nsr_json_array_begin(j, "empty");
        nsr_json_array_end(j);
        nsr_json_object_begin(j, "obj");
        nsr_json_object_end(j);
        nsr_json_array_begin(j, "nested");
        nsr_json_array_begin(j, NULL);
        nsr_json_int(j, NULL, 1);
        nsr_json_array_end(j);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "k", "v");
        nsr_json_object_end(j);
        nsr_json_array_end(j);
        nsr_json_object_end(j);
}

START_TEST(test_writer_compact) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, 0);
        write_sample(j);
        _cleanup_free_ char *out = finish_ok(j);
        ck_assert_str_eq(out, "{\"i\":-42,\"u\":18446744073709551615,\"t\":true,\"f\":false,\"n\":null,"
                              "\"s\":\"x\",\"null_string\":null,\"argv\":[\"ls\",\"-l\"],\"none\":[],"
                              "\"empty\":[],\"obj\":{},\"nested\":[[1],{\"k\":\"v\"}]}\n");
}
END_TEST

START_TEST(test_writer_pretty) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, NSR_JSON_PRETTY);
        write_sample(j);
        _cleanup_free_ char *out = finish_ok(j);
        ck_assert_str_eq(out, "{\n"
                              "  \"i\": -42,\n"
                              "  \"u\": 18446744073709551615,\n"
                              "  \"t\": true,\n"
                              "  \"f\": false,\n"
                              "  \"n\": null,\n"
                              "  \"s\": \"x\",\n"
                              "  \"null_string\": null,\n"
                              "  \"argv\": [\n"
                              "    \"ls\",\n"
                              "    \"-l\"\n"
                              "  ],\n"
                              "  \"none\": [],\n"
                              "  \"empty\": [],\n"
                              "  \"obj\": {},\n"
                              "  \"nested\": [\n"
                              "    [\n"
                              "      1\n"
                              "    ],\n"
                              "    {\n"
                              "      \"k\": \"v\"\n"
                              "    }\n"
                              "  ]\n"
                              "}\n");
}
END_TEST

START_TEST(test_writer_escaping) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "q", "say \"hi\" \\ there/");
        nsr_json_string(j, "ctl", "\x01\x1f\n\t\x7f");
        nsr_json_string(j, "utf8", "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xa8");
        nsr_json_string(j, "key \"q\"\n", "v");
        nsr_json_object_end(j);
        _cleanup_free_ char *out = finish_ok(j);
        ck_assert_str_eq(out, "{\"q\":\"say \\\"hi\\\" \\\\ there/\","
                              "\"ctl\":\"\\u0001\\u001f\\u000a\\u0009\\u007f\","
                              "\"utf8\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\xa8\","
                              "\"key \\\"q\\\"\\u000a\":\"v\"}\n");
}
END_TEST

START_TEST(test_writer_b64_rule) {
        char *argv_ok[] = { (char *) "a", NULL };
        char *argv_bad[] = { (char *) "ok",
                             (char *) "a\x80"
                                      "b",
                             (char *) "", NULL };
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "path",
                        "a\x80"
                        "b");
        nsr_json_string(j, "cut", "x\xe2\x82");
        nsr_json_string(j, "fine", "\xc3\xa9");
        nsr_json_strv(j, "good", argv_ok);
        nsr_json_strv(j, "command", argv_bad);
        nsr_json_array_begin(j, "lossy");
        nsr_json_string(j, NULL, "\xff");
        nsr_json_array_end(j);
        nsr_json_object_end(j);
        _cleanup_free_ char *out = finish_ok(j);
        ck_assert_str_eq(out, "{\"path\":\"a\\ufffdb\",\"path_b64\":\"YYBi\","
                              "\"cut\":\"x\\ufffd\",\"cut_b64\":\"eOKC\","
                              "\"fine\":\"\xc3\xa9\","
                              "\"good\":[\"a\"],"
                              "\"command\":[\"ok\",\"a\\ufffdb\",\"\"],\"command_b64\":[\"b2s=\",\"YYBi\",\"\"],"
                              "\"lossy\":[\"\\ufffd\"]}\n");
}
END_TEST

START_TEST(test_writer_scalar_top) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, 0);
        nsr_json_string(j, NULL, "x");
        _cleanup_free_ char *out = finish_ok(j);
        ck_assert_str_eq(out, "\"x\"\n");
}
END_TEST

typedef void (*misuse_fn)(nsr_json *j);
static void mu_key_top(nsr_json *j) {
        nsr_json_int(j, "k", 1);
}
static void mu_no_key(nsr_json *j) {
        nsr_json_object_begin(j, NULL);
        nsr_json_int(j, NULL, 1);
        nsr_json_object_end(j);
}
static void mu_key_in_array(nsr_json *j) {
        nsr_json_array_begin(j, NULL);
        nsr_json_int(j, "k", 1);
        nsr_json_array_end(j);
}
static void mu_unbalanced(nsr_json *j) {
        nsr_json_array_begin(j, NULL);
        nsr_json_object_end(j);
}
static void mu_unclosed(nsr_json *j) {
        nsr_json_array_begin(j, NULL);
}
static void mu_empty(nsr_json *j) {
        (void) j;
}
static void mu_two_values(nsr_json *j) {
        nsr_json_int(j, NULL, 1);
        nsr_json_int(j, NULL, 2);
}
static void mu_strv_no_key(nsr_json *j) {
        nsr_json_array_begin(j, NULL);
        nsr_json_strv(j, NULL, NULL);
        nsr_json_array_end(j);
}
static void mu_long_key(nsr_json *j) {
        char key[NSR_JSON_KEY_MAX + 2];
        memset(key, 'k', sizeof(key) - 1);
        key[sizeof(key) - 1] = '\0';
        nsr_json_object_begin(j, NULL);
        nsr_json_int(j, key, 1);
        nsr_json_object_end(j);
}

START_TEST(test_writer_misuse) {
        static const misuse_fn fns[] = { mu_key_top, mu_no_key,     mu_key_in_array, mu_unbalanced, mu_unclosed,
                                         mu_empty,   mu_two_values, mu_strv_no_key,  mu_long_key };
        for (size_t i = 0; i < ELEMENTSOF(fns); i++) {
                _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, 0);
                fns[i](j);
                nsr_error err = { 0 };
                char *out = (char *) "untouched";
                ck_assert_int_eq(nsr_json_finish(j, "doc", &out, NULL, &err), -EINVAL);
                ck_assert_str_eq(out, "untouched");
                ck_assert_msg(nsr_startswith(err.msg, "writing doc: "), "%zu: %s", i, err.msg);
        }
}
END_TEST

START_TEST(test_writer_depth) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, 0, 0);
        for (int i = 0; i < NSR_JSON_DEPTH_MAX; i++)
                ck_assert_int_eq(nsr_json_array_begin(j, NULL), 0);
        ck_assert_int_eq(nsr_json_array_begin(j, NULL), -E2BIG);
        /* Sticky. */
        ck_assert_int_eq(nsr_json_array_end(j), -E2BIG);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_json_finish(j, "doc", NULL, NULL, &err), -E2BIG);
        ck_assert_str_eq(err.msg, "writing doc: nested too deeply");
}
END_TEST

START_TEST(test_writer_size_limit) {
        /* ["aaaa"] plus the newline is 9 bytes. */
        for (size_t max = 1; max <= 10; max++) {
                _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, max, 0);
                nsr_json_array_begin(j, NULL);
                nsr_json_string(j, NULL, "aaaa");
                nsr_json_array_end(j);
                nsr_error err = { 0 };
                _cleanup_free_ char *out = NULL;
                int r = nsr_json_finish(j, "report", &out, NULL, &err);
                if (max < 9) {
                        ck_assert_int_eq(r, -EFBIG);
                        ck_assert_ptr_null(out);
                        _cleanup_free_ char *want = nsr_asprintf("report is larger than the limit of %zu bytes", max);
                        ck_assert_str_eq(err.msg, want);
                } else {
                        ck_assert_int_eq(r, 0);
                        ck_assert_str_eq(out, "[\"aaaa\"]\n");
                }
        }
}
END_TEST

START_TEST(test_writer_file) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        ck_assert_ptr_nonnull(f);
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(f, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "a", "b");
        nsr_json_object_end(j);
        nsr_error err = { 0 };
        size_t len = 0;
        ck_assert_int_eq(nsr_json_finish(j, "doc", NULL, &len, &err), 0);
        fclose(f);
        ck_assert_str_eq(buf, "{\"a\":\"b\"}\n");
        ck_assert_uint_eq(len, 10);
        free(buf);

        /* A write error is reported. */
        FILE *full = fopen("/dev/full", "we");
        if (full) {
                _cleanup_(nsr_json_freep) nsr_json *k = nsr_json_new(full, 0, 0);
                nsr_json_string(k, NULL, "x");
                ck_assert_int_eq(nsr_json_finish(k, "doc", NULL, NULL, &err), -EIO);
                ck_assert_str_eq(err.msg, "writing doc failed");
                fclose(full);
        }
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("json");
        TCase *tc = tcase_create("utf8");
        tcase_add_test(tc, test_utf8_valid);
        tcase_add_test(tc, test_utf8_decode);
        tcase_add_test(tc, test_utf8_sanitize);
        tcase_add_test(tc, test_utf8_escape);
        tcase_add_test(tc, test_utf8_escape_invisible);
        tcase_add_test(tc, test_utf8_escape_message);
        tcase_add_test(tc, test_utf8_escape_shell);
        tcase_add_test(tc, test_utf8_shown_as_is);
        tcase_add_test(tc, test_base64_rfc4648);
        suite_add_tcase(s, tc);
        tc = tcase_create("writer");
        tcase_add_test(tc, test_writer_compact);
        tcase_add_test(tc, test_writer_pretty);
        tcase_add_test(tc, test_writer_escaping);
        tcase_add_test(tc, test_writer_b64_rule);
        tcase_add_test(tc, test_writer_scalar_top);
        tcase_add_test(tc, test_writer_misuse);
        tcase_add_test(tc, test_writer_depth);
        tcase_add_test(tc, test_writer_size_limit);
        tcase_add_test(tc, test_writer_file);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
