/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* profilefile.c and the parser's file lines: every option through a
 * profile equals the same option on the command line; quoting and
 * expansion; includes, cycles, forbid, project-local tightening, file:line
 * in every error. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/profilefile.h"
#include "plan-eq.h"
#include "unit.h"

static char *const test_env[] = { (char *) "HOME=/home/u", (char *) "XDG_CACHE_HOME=/c", (char *) "PATH=/bin", NULL };

static char tmpdir[] = "/tmp/nsr-pf.XXXXXX";

static nsr_pf_ctx ctx(void) {
        return (nsr_pf_ctx){ .home = "/home/u", .env = test_env, .sysconfdir = tmpdir, .datadir = tmpdir };
}

static char *write_file(const char *name, const char *text) {
        char *path = nsr_path_join(tmpdir, name);
        _cleanup_free_ char *dir = nsr_strdup(path);
        for (char *p = dir + strlen(tmpdir) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                mkdir(dir, 0755);
                *p = '/';
        }
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
        return path;
}

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) {
        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(tmpdir, "/tmp/nsr-pf.XXXXXX");
}

/* Loads text as a file of the given kind into *l; returns the load's r. */
static int load(const char *name, const char *text, nsr_pf_kind kind, nsr_pf_list *l, nsr_error *err) {
        nsr_pf_ctx c = ctx();
        _cleanup_free_ char *path = write_file(name, text);
        return nsr_pf_load(&c, path, kind, false, l, err);
}

/* ---- splitting ------------------------------------------------------------ */

static void split_ok(const char *line, const char *joined) {
        nsr_pf_ctx c = ctx();
        nsr_error err = { 0 };
        _cleanup_strv_free_ char **w = NULL;
        int r = nsr_pf_split(&c, line, &w, &err);
        ck_assert_msg(r == 0, "%s: %s", line, err.msg);
        char buf[1024] = "";
        for (size_t i = 0; w[i]; i++) {
                strcat(buf, i ? "|" : "");
                strcat(buf, w[i]);
        }
        ck_assert_str_eq(buf, joined);
}

static void split_fails(const char *line, const char *msg_part) {
        nsr_pf_ctx c = ctx();
        nsr_error err = { 0 };
        _cleanup_strv_free_ char **w = NULL;
        ck_assert_int_lt(nsr_pf_split(&c, line, &w, &err), 0);
        ck_assert_msg(strstr(err.msg, msg_part), "%s: \"%s\" lacks \"%s\"", line, err.msg, msg_part);
}

START_TEST(test_split) {
        split_ok("share-net", "share-net");
        split_ok("  bind   /a\t/b  ", "bind|/a|/b");
        split_ok("# a comment", "");
        split_ok("", "");
        split_ok("hide /x # trailing comment", "hide|/x");
        split_ok("hide /x#y", "hide|/x#y");
        split_ok("bind '/my dir' \"/in side\"", "bind|/my dir|/in side");
        split_ok("setenv A 'x$HOME\"y'", "setenv|A|x$HOME\"y");
        split_ok("setenv A \"q\\\"\\$\\\\\"", "setenv|A|q\"$\\");
        split_ok("bind /a\\ b /c", "bind|/a b|/c");
        split_ok("hide ~/.netrc", "hide|/home/u/.netrc");
        split_ok("hide ~", "hide|/home/u");
        split_ok("hide x~/y", "hide|x~/y");
        split_ok("hide '~/q'", "hide|~/q");
        split_ok("ro $HOME/a", "ro|/home/u/a");
        split_ok("ro ${HOME}/a", "ro|/home/u/a");
        split_ok("ro \"$HOME/a b\"", "ro|/home/u/a b");
        split_ok("ro $XDG_CACHE_HOME/x", "ro|/c/x");
        split_ok("ro $XDG_CONFIG_HOME/x", "ro|/home/u/.config/x");
        split_ok("setenv A ''", "setenv|A|");

        split_fails("ro $PATH", "only $HOME and $XDG_* are expanded");
        split_fails("ro \"$USER\"", "only $HOME and $XDG_*");
        split_fails("ro $(id)", "command substitution");
        split_fails("ro `id`", "command substitution");
        split_fails("ro \"`id`\"", "command substitution");
        split_fails("ro $XDG_RUNTIME_DIR/x", "not set");
        split_fails("ro 'open", "unterminated single quote");
        split_fails("ro \"open", "unterminated double quote");
        split_fails("ro ${HOME", "unterminated");
        split_fails("ro x\\", "backslash at the end");
        split_fails("ro $", "lone");
}
END_TEST

/* ---- every option: file line == command line ------------------------------ */

/* A value for one metavar word; fixed values take their first choice. */
static const char *sample(const char *mv) {
        static char first[64];
        if (strchr(mv, '|') && !strpbrk(mv, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) {
                snprintf(first, sizeof(first), "%.*s", (int) strcspn(mv, "|"), mv);
                return first;
        }
        static const struct {
                const char *mv, *val;
        } map[] = {
                { "FD", "7" },          { "UID", "1000" },         { "GID", "1000" },
                { "OCTAL", "0750" },    { "BYTES", "4096" },       { "CAP", "CAP_CHOWN" },
                { "N", "3" },           { "SIZE", "1G" },          { "VAR", "FOO" },
                { "VALUE", "bar baz" }, { "NAME|PATH", "strict" }, { "LABEL", "l" },
                { "NAME", "HOSTY" },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (streq(map[i].mv, mv))
                        return map[i].val;
        return "/tmp/some where"; /* SRC, DEST, PATH, DIR, FILE, and what options come next */
}

/* Options that need a neighbour to be valid: what goes before and after. */
static void neighbours(nsr_opt_id id, const char **before, const char **after) {
        *before = *after = NULL;
        if (id == NSR_OPT_PERMS)
                *after = "dir /d";
        else if (id == NSR_OPT_SIZE)
                *after = "tmpfs /t";
        else if (id == NSR_OPT_OVERLAY_SRC)
                *after = "tmp-overlay /o";
        else if (id == NSR_OPT_OVERLAY || id == NSR_OPT_TMP_OVERLAY)
                *before = "overlay-src /l";
        else if (id == NSR_OPT_RO_OVERLAY)
                *before = "overlay-src /l1\noverlay-src /l2";
}

/* Splits a profile line the simple way (the test lines hold no quotes). */
static void push_line_words(char ***v, const char *line) {
        _cleanup_free_ char *copy = nsr_strdup(line);
        char *save = NULL;
        bool first = true;
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                nsr_strv_push(v, first ? nsr_asprintf("--%s", w) : nsr_strdup(w));
                first = false;
        }
}

START_TEST(test_every_option) {
        size_t tested = 0;
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                const nsr_option *o = &nsr_options[i];
                if (!o->name || !(o->flags & NSR_OPTF_NSRUN))
                        continue;
                if (o->id == NSR_OPT_HELP || o->id == NSR_OPT_VERSION || o->id == NSR_OPT_ARGS ||
                    o->id == NSR_OPT_PROFILE)
                        continue; /* refused in files: see test_refused_in_files */

                /* The option's values, one per metavar word. */
                _cleanup_strv_free_ char **vals = nsr_malloc0(sizeof(char *));
                if (o->nargs) {
                        _cleanup_free_ char *mv = nsr_strdup(o->metavar);
                        char *save = NULL;
                        for (char *w = strtok_r(mv, " ", &save); w; w = strtok_r(NULL, " ", &save))
                                nsr_strv_extend(&vals, sample(w));
                }
                ck_assert_int_eq(nsr_strv_length(vals), o->nargs);
                const char *before, *after;
                neighbours(o->id, &before, &after);

                /* The profile: values single-quoted (some hold a blank). */
                _cleanup_free_ char *text =
                        nsr_asprintf("# %s\n%s%s%s", o->name, before ? before : "", before ? "\n" : "", o->name + 2);
                for (size_t k = 0; vals[k]; k++) {
                        char *t = nsr_asprintf("%s '%s'", text, vals[k]);
                        free(text);
                        text = t;
                }
                if (after) {
                        char *t = nsr_asprintf("%s\n%s\n", text, after);
                        free(text);
                        text = t;
                }

                /* The command line: the same words. */
                _cleanup_strv_free_ char **argv = nsr_malloc0(sizeof(char *));
                if (before) {
                        _cleanup_free_ char *b = nsr_strdup(before);
                        char *save = NULL;
                        for (char *l = strtok_r(b, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                                push_line_words(&argv, l);
                }
                nsr_strv_extend(&argv, o->name);
                for (size_t k = 0; vals[k]; k++)
                        nsr_strv_extend(&argv, vals[k]);
                if (after)
                        push_line_words(&argv, after);
                nsr_strv_extend(&argv, "true");

                nsr_error e1 = { 0 }, e2 = { 0 };
                _cleanup_(nsr_plan_freep) nsr_plan *p1 = NULL, *p2 = NULL;
                nsr_cli_result res;
                int r1 = nsr_cli_parse(argv, nsr_strv_length(argv), false, &p1, &res, &e1);

                _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
                int r2 = load("every.profile", text, NSR_PF_PROFILE, &l, &e2);
                ck_assert_msg(r2 == 0, "%s: %s", o->name, e2.msg);
                char *cmd[] = { (char *) "true", NULL };
                r2 = nsr_cli_parse_with(&l, cmd, 1, false, &p2, &res, &e2);

                ck_assert_msg((r1 < 0) == (r2 < 0), "%s: command line %d (%s), profile %d (%s)", o->name, r1, e1.msg,
                              r2, e2.msg);
                if (r1 < 0) {
                        /* The same message, with file:line in front. */
                        ck_assert_msg(strstr(e2.msg, e1.msg) && strstr(e2.msg, "every.profile:"),
                                      "%s: \"%s\" vs \"%s\"", o->name, e1.msg, e2.msg);
                        ck_assert(res.policy_error);
                        continue;
                }
                _cleanup_free_ char *d = test_plan_diff(p1, p2, 0);
                ck_assert_msg(!d, "%s: %s", o->name, d);
                tested++;
        }
        /* Nearly all succeed; only the SELinux labels fail (both ways). */
        ck_assert_uint_ge(tested, 80);
}
END_TEST

START_TEST(test_name_value_and_order) {
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(load("a.profile", "sandbox=best-effort\nhome ro\nhide /one\n", NSR_PF_PROFILE, &l, &err), 0);
        char *argv[] = {
                (char *) "--home", (char *) "hide", (char *) "--hide", (char *) "/two", (char *) "true", NULL
        };
        _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
        nsr_cli_result res;
        ck_assert_int_eq(nsr_cli_parse_with(&l, argv, 5, false, &p, &res, &err), 0);
        ck_assert_int_eq(p->proj.sandbox, NSR_SANDBOX_BEST_EFFORT);
        /* The command line comes last and wins. */
        ck_assert_int_eq(p->proj.home, NSR_HOME_HIDE);
        ck_assert_str_eq(p->proj.hide[0], "/one");
        ck_assert_str_eq(p->proj.hide[1], "/two");
}
END_TEST

static void load_fails(const char *text, nsr_pf_kind kind, const char *msg_part) {
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(load("bad.profile", text, kind, &l, &err) < 0, "%s loaded", text);
        ck_assert_msg(strstr(err.msg, msg_part), "\"%s\" lacks \"%s\"", err.msg, msg_part);
}

START_TEST(test_unknown_option_hint) {
        load_fails("timout 5\n", NSR_PF_PROFILE, ":1: unknown option \"timout\" (did you mean \"timeout\"?)");
        load_fails("sharenet\n", NSR_PF_PROFILE, ":1: unknown option \"sharenet\" (did you mean \"share-net\"?)");
        /* nothing close: no guess */
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_lt(load("bad.profile", "frobnicate\n", NSR_PF_PROFILE, &l, &err), 0);
        ck_assert_ptr_null(strstr(err.msg, "did you mean"));
}
END_TEST

START_TEST(test_errors_name_file_line) {
        load_fails("share-net\n\n# c\nbogus\n", NSR_PF_PROFILE, "/bad.profile:4: unknown option \"bogus\"");
        load_fails("bind /a\n", NSR_PF_PROFILE, "bad.profile:1: --bind takes two arguments");
        load_fails("hide /a /b\n", NSR_PF_PROFILE, "bad.profile:1: --hide takes 1 argument, this line has 2");
        load_fails("--share-net\n", NSR_PF_PROFILE, "bad.profile:1: write \"share-net\" without the leading dashes");
        load_fails("share-net=1\n", NSR_PF_PROFILE, ":1: --share-net takes no value");
        load_fails("x\nhelp\n", NSR_PF_PROFILE, ":1: unknown option");
        load_fails("help\n", NSR_PF_PROFILE, ":1: --help cannot be used in a file");
        load_fails("args 3\n", NSR_PF_PROFILE, "--args cannot be used in a file");
        load_fails("profile strict\n", NSR_PF_PROFILE, "use \"include NAME\"");
        load_fails("hide $PATH\n", NSR_PF_PROFILE, ":1: $PATH: only $HOME");
        load_fails("forbid share-net\n", NSR_PF_USER_CONFIG, ":1: forbid is only read from the system config");
        load_fails("forbid share-net\n", NSR_PF_PROFILE, "forbid is only read from the system config");
        load_fails("forbid nope\n", NSR_PF_SYSTEM_CONFIG, ":1: unknown option \"nope\"");
        load_fails("bogus\x01\n", NSR_PF_PROFILE, "bad.profile:1: unknown option \"bogus?\"");

        /* Errors the parser finds (values) name the line too. */
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(load("v.profile", "hide /a\n\nhome nowhere\n", NSR_PF_PROFILE, &l, &err), 0);
        char *argv[] = { (char *) "true", NULL };
        _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
        nsr_cli_result res;
        ck_assert_int_lt(nsr_cli_parse_with(&l, argv, 1, false, &p, &res, &err), 0);
        ck_assert_msg(strstr(err.msg, "v.profile:3: --home takes overlay, ro or hide"), "%s", err.msg);
        ck_assert(res.policy_error);

        /* A modifier on a file's last line is not for the command line. */
        _cleanup_(nsr_pf_list_done) nsr_pf_list m = { 0 };
        ck_assert_int_eq(load("m.profile", "perms 0700\n", NSR_PF_PROFILE, &m, &err), 0);
        char *argv2[] = { (char *) "--dir", (char *) "/d", (char *) "true", NULL };
        _cleanup_(nsr_plan_freep) nsr_plan *p2 = NULL;
        ck_assert_int_lt(nsr_cli_parse_with(&m, argv2, 3, false, &p2, &res, &err), 0);
        ck_assert_msg(strstr(err.msg, "m.profile:1: --perms must be followed by an option that creates a file"), "%s",
                      err.msg);
}
END_TEST

START_TEST(test_includes) {
        _cleanup_free_ char *a = write_file("inc/a.profile", "hide /a1\ninclude b.profile\nhide /a2\n");
        free(write_file("inc/b.profile", "hide /b1\ninclude sub/c.profile\n"));
        _cleanup_free_ char *c = write_file("inc/sub/c.profile", "hide /c1\ninclude shipped\n");
        /* "include NAME" looks NAME up like --profile: here the data dir. */
        free(write_file("profiles/shipped.profile", "hide /s1\n"));
        nsr_pf_ctx cx = ctx();
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(nsr_pf_load(&cx, a, NSR_PF_PROFILE, false, &l, &err) == 0, "%s", err.msg);
        static const char *const want[] = { "/a1", "/b1", "/c1", "/s1", "/a2" };
        ck_assert_uint_eq(l.n, ELEMENTSOF(want));
        for (size_t i = 0; i < l.n; i++)
                ck_assert_str_eq(l.entries[i].words[1], want[i]);
        ck_assert_str_eq(l.entries[2].file, c);
        ck_assert_uint_eq(l.entries[2].line, 1);
        ck_assert_uint_eq(l.entries[4].line, 3);

        /* A missing include names the including line. */
        _cleanup_free_ char *m = write_file("inc/m.profile", "\ninclude nosuch\n");
        _cleanup_(nsr_pf_list_done) nsr_pf_list l2 = { 0 };
        ck_assert_int_lt(nsr_pf_load(&cx, m, NSR_PF_PROFILE, false, &l2, &err), 0);
        ck_assert_msg(strstr(err.msg, "m.profile:2: no profile \"nosuch\""), "%s", err.msg);
}
END_TEST

START_TEST(test_cycles_and_depth) {
        _cleanup_free_ char *a = write_file("cy/a.profile", "include b.profile\n");
        free(write_file("cy/b.profile", "hide /x\ninclude a.profile\n"));
        nsr_pf_ctx cx = ctx();
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_pf_load(&cx, a, NSR_PF_PROFILE, false, &l, &err), -ELOOP);
        ck_assert_msg(strstr(err.msg, "b.profile:2: ") && strstr(err.msg, "includes itself"), "%s", err.msg);

        _cleanup_free_ char *self = write_file("cy/self.profile", "include self.profile\n");
        _cleanup_(nsr_pf_list_done) nsr_pf_list l2 = { 0 };
        ck_assert_int_eq(nsr_pf_load(&cx, self, NSR_PF_PROFILE, false, &l2, &err), -ELOOP);

        /* A chain deeper than the limit, without a cycle. */
        for (int i = 0; i <= NSR_PF_MAX_DEPTH + 1; i++) {
                _cleanup_free_ char *name = nsr_asprintf("deep/d%d.profile", i);
                _cleanup_free_ char *text = nsr_asprintf("include d%d.profile\n", i + 1);
                free(write_file(name, text));
        }
        free(write_file("deep/d"
                        "10"
                        ".profile",
                        "hide /end\n"));
        _cleanup_free_ char *d0 = nsr_path_join(tmpdir, "deep/d0.profile");
        _cleanup_(nsr_pf_list_done) nsr_pf_list l3 = { 0 };
        ck_assert_int_eq(nsr_pf_load(&cx, d0, NSR_PF_PROFILE, false, &l3, &err), -ELOOP);
        ck_assert_msg(strstr(err.msg, "nested deeper than"), "%s", err.msg);
}
END_TEST

START_TEST(test_forbid) {
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(load("nsrun/config", "forbid share-net\nforbid sandbox=off\n", NSR_PF_SYSTEM_CONFIG, &l, &err),
                         0);
        ck_assert_uint_eq(l.n_forbid, 2);
        ck_assert_uint_eq(l.n, 0);

        struct {
                const char *argv[4];
                bool ok;
        } cases[] = {
                { { "--share-net", "true" }, false },   { { "--sandbox", "off", "true" }, false },
                { { "--sandbox=off", "true" }, false }, { { "--sandbox", "best-effort", "true" }, true },
                { { "--unshare-all", "true" }, true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t n = 0;
                while (cases[i].argv[n])
                        n++;
                _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
                nsr_cli_result res;
                nsr_error e = { 0 };
                int r = nsr_cli_parse_with(&l, (char **) cases[i].argv, n, false, &p, &res, &e);
                ck_assert_msg((r == 0) == cases[i].ok, "%s: %d %s", cases[i].argv[0], r, e.msg);
                if (!cases[i].ok) {
                        ck_assert_int_eq(r, -EPERM);
                        ck_assert(res.policy_error);
                        ck_assert_msg(strstr(e.msg, "is forbidden on this system (") && strstr(e.msg, "nsrun/config:"),
                                      "%s", e.msg);
                }
        }

        /* A file's line is held to the same rules, and named. */
        _cleanup_(nsr_pf_list_done) nsr_pf_list u = { 0 };
        ck_assert_int_eq(load("user.profile", "hide /a\nshare-net\n", NSR_PF_PROFILE, &u, &err), 0);
        u.forbid = TAKE_PTR(l.forbid);
        u.n_forbid = l.n_forbid;
        l.n_forbid = 0;
        char *argv[] = { (char *) "true", NULL };
        _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
        nsr_cli_result res;
        ck_assert_int_eq(nsr_cli_parse_with(&u, argv, 1, false, &p, &res, &err), -EPERM);
        ck_assert_msg(strstr(err.msg, "user.profile:2: --share-net is forbidden"), "%s", err.msg);
}
END_TEST

static int local_cmd(const char *before, const char *text, char **argv, size_t n, nsr_plan **ret, nsr_error *err);

/* Applies a project-local file after the lines of before (a profile). */
static int local(const char *before, const char *text, nsr_error *err) {
        char *argv[] = { (char *) "true", NULL };
        _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
        return local_cmd(before, text, argv, 1, &p, err);
}

START_TEST(test_tightening_only) {
        nsr_error err = { 0 };
        static const char *const ok[] = {
                "hide ~/.aws\nhide /srv\n",
                "home ro\n",
                "home hide\n",
                "seccomp-policy strict\n",
                "unshare-net\n",
                "cap-drop ALL\n",
                "# only a comment\n",
                "on-conflict keep-all\n",
                "on-conflict fail\n",
                "on-conflict prefer-host\n",
                "on-conflict apply-rest\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                ck_assert_msg(local(NULL, ok[i], &err) == 0, "%s: %s", ok[i], err.msg);

        static const struct {
                const char *before, *text, *why;
        } bad[] = {
                { NULL, "hide /a\nshare-net\n", "proj/.nsrun/profile:2: --share-net could loosen the sandbox" },
                { NULL, "rw /\n", ":1: --rw could loosen" },
                { NULL, "ro /x\n", "--ro could loosen" },
                { NULL, "bind / /\n", "--bind could loosen" },
                { NULL, "keep-env TOKEN\n", "--keep-env could loosen" },
                { NULL, "sandbox off\n", "--sandbox off would loosen --sandbox required" },
                { NULL, "allow-nested\n", "--allow-nested could loosen" },
                { NULL, "home overlay\n", "" },
                { "home hide\n", "home ro\n", ":1: --home ro would loosen --home hide" },
                { "home ro\n", "home overlay\n", "would loosen --home ro" },
                { NULL, "seccomp-policy permissive\n", "only \"seccomp-policy strict\"" },
                { NULL, "seccomp-policy /tmp/x.policy\n", "only \"seccomp-policy strict\"" },
                { NULL, "include strict\n", ":1: include is refused" },
                { NULL, "forbid hide\n", ":1: forbid is only read from the system config" },
                { NULL, "on-conflict prefer-sandbox\n",
                  ":1: --on-conflict prefer-sandbox would loosen --on-conflict apply-rest" },
                { "on-conflict keep-all\n", "on-conflict apply-rest\n", "would loosen --on-conflict keep-all" },
                { "on-conflict fail\n", "on-conflict keep-all\n", "would loosen --on-conflict fail" },
                { "on-conflict keep-all\n", "on-conflict prefer-host\n", "would loosen --on-conflict keep-all" },
                { NULL, "on-conflict sideways\n", ":1: --on-conflict takes apply-rest" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = local(bad[i].before, bad[i].text, &err);
                if (!*bad[i].why) {
                        /* home overlay after nothing: not looser than the default */
                        ck_assert_msg(r == 0, "%s: %s", bad[i].text, err.msg);
                        continue;
                }
                ck_assert_msg(r < 0, "%s accepted", bad[i].text);
                ck_assert_msg(strstr(err.msg, bad[i].why), "%s: \"%s\" lacks \"%s\"", bad[i].text, err.msg, bad[i].why);
        }
}
END_TEST

/* Applies a project-local file after the lines of before (a profile) and
 * the command line words. */
static int local_cmd(const char *before, const char *text, char **argv, size_t n, nsr_plan **ret, nsr_error *err) {
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        if (before && load("before.profile", before, NSR_PF_PROFILE, &l, err) < 0)
                return -100;
        free(write_file("proj/.nsrun/profile", text));
        nsr_pf_ctx cx = ctx();
        _cleanup_free_ char *proj = nsr_path_join(tmpdir, "proj");
        int r = nsr_pf_load_project(&cx, proj, &l, err);
        if (r < 0)
                return r;
        nsr_cli_result res;
        return nsr_cli_parse_with(&l, argv, n, false, ret, &res, err);
}

START_TEST(test_limits) {
        nsr_error err = { 0 };
        static const nsr_option lim = { "--timeout", NULL, _NSR_OPT_MAX, 1, "SECONDS", "", NSR_OPTF_NSRUN, NULL };
        char *v[2] = { (char *) "30s", NULL };
        ck_assert_int_eq(nsr_pf_check_tightening(&lim, v, &err), 1);

        /* Compared with the value in force, built-in defaults included. */
        static const struct {
                const char *before, *text, *why;
        } cases[] = {
                { NULL, "kill-after 1h\n", "--kill-after 1h would loosen --kill-after 5s, the value in force" },
                { NULL, "kill-after 2s\n", NULL },
                { NULL, "pids 5000\n", "--pids 5000 would loosen --pids 4096" },
                { NULL, "pids 100\n", NULL },
                { NULL, "snapshot-limit 2G\n", "would loosen --snapshot-limit" },
                { NULL, "timeout 1h\n", NULL },
                { "timeout 10m\n", "timeout 1h\n", "--timeout 1h would loosen --timeout 10m" },
                { "timeout 10m\n", "timeout 5m\n", NULL },
                { NULL, "rlimit core=1M\n", "core's soft limit 0" },
                { NULL, "rlimit nofile=100\n", NULL },
                { NULL, "rlimit nofile=5000:5000\n", "nofile's soft limit 4096" },
                { NULL, "sandbox best-effort\n", "would loosen --sandbox required" },
                { NULL, "sandbox required\n", NULL },
                { "on-conflict fail\n", "on-conflict apply-rest\n", "would loosen --on-conflict fail" },
                { NULL, "on-conflict keep-all\n", NULL },
                { NULL, "backup-limit 1\n", "undo history" },
                { NULL, "keep-days 1\n", "undo history" },
                { NULL, "memory 1G\n", NULL },
                { "memory 1G\n", "memory 2G\n", "would loosen --memory 1073741824" },
        };
        char *argv[] = { (char *) "true", NULL };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
                int r = local_cmd(cases[i].before, cases[i].text, argv, 1, &p, &err);
                if (!cases[i].why) {
                        ck_assert_msg(r == 0, "%s: %s", cases[i].text, err.msg);
                        continue;
                }
                ck_assert_msg(r == -EPERM, "%s accepted", cases[i].text);
                ck_assert_msg(strstr(err.msg, cases[i].why), "%s: \"%s\" lacks \"%s\"", cases[i].text, err.msg,
                              cases[i].why);
        }

        /* After the command line: a lower line holds against it, a higher
         * one leaves the command line's (stricter) value alone. */
        char *cmd[] = { (char *) "--timeout", (char *) "5m", (char *) "true", NULL };
        _cleanup_(nsr_plan_freep) nsr_plan *p1 = NULL, *p2 = NULL, *p3 = NULL;
        ck_assert_int_eq(local_cmd(NULL, "timeout 1m\n", cmd, 3, &p1, &err), 0);
        ck_assert_uint_eq(p1->run.timeout_ms, 60000);
        ck_assert_int_eq(local_cmd(NULL, "timeout 1h\n", cmd, 3, &p2, &err), 0);
        ck_assert_uint_eq(p2->run.timeout_ms, 300000);
        _cleanup_(nsr_plan_freep) nsr_plan *p4 = NULL;
        char *nofile[] = { (char *) "--rlimit", (char *) "nofile=50", (char *) "true", NULL };
        ck_assert_int_eq(local_cmd(NULL, "rlimit nofile=100\n", nofile, 3, &p4, &err), 0);
        ck_assert_uint_eq(p4->run.rlim[NSR_RLIMIT_NOFILE].soft, 50);
        char *home[] = { (char *) "--home", (char *) "overlay", (char *) "true", NULL };
        ck_assert_int_eq(local_cmd(NULL, "home ro\n", home, 3, &p3, &err), 0);
        ck_assert_int_eq(p3->proj.home, NSR_HOME_RO);
}
END_TEST

START_TEST(test_project_profile) {
        nsr_error err = { 0 };
        free(write_file("proj2/ci.profile", "share-net\n"));
        free(write_file("proj2/ok.profile", "hide /srv\n"));
        _cleanup_free_ char *outer = write_file("outer.profile", "include proj2/ci.profile\n");
        char real[PATH_MAX];
        ck_assert_ptr_nonnull(realpath(tmpdir, real));
        _cleanup_free_ char *proj = nsr_path_join(real, "proj2");
        char *projects[] = { proj, NULL };
        nsr_pf_ctx c = ctx();
        c.projects = projects;
        _cleanup_free_ char *inside = nsr_path_join(proj, "ci.profile");
        ck_assert(nsr_pf_in_project(&c, inside));
        ck_assert(!nsr_pf_in_project(&c, outer));

        /* included by path from outside: the project's file all the same */
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        ck_assert_int_eq(nsr_pf_load(&c, outer, NSR_PF_PROFILE, false, &l, &err), 0);
        ck_assert_int_eq(l.n, 1);
        ck_assert_int_eq(l.entries[0].kind, NSR_PF_PROJECT_PROFILE);
        ck_assert(nsr_strv_contains(l.files, inside));
        char *argv[] = { (char *) "true", NULL };
        _cleanup_(nsr_plan_freep) nsr_plan *p = NULL;
        nsr_cli_result res;
        ck_assert_int_eq(nsr_cli_parse_with(&l, argv, 1, false, &p, &res, &err), -EPERM);
        ck_assert_msg(strstr(err.msg, "ci.profile:1: --share-net could loosen"), "%s", err.msg);
        ck_assert_msg(strstr(err.msg, "in a profile outside the project"), "%s", err.msg);

        /* and it may include nothing */
        _cleanup_(nsr_pf_list_done) nsr_pf_list l2 = { 0 };
        free(write_file("proj2/inc.profile", "include ok.profile\n"));
        _cleanup_free_ char *inc = nsr_path_join(proj, "inc.profile");
        ck_assert_int_eq(nsr_pf_load(&c, inc, NSR_PF_PROJECT_PROFILE, false, &l2, &err), -EPERM);
        ck_assert_msg(strstr(err.msg, "include is refused in a profile inside a project"), "%s", err.msg);
}
END_TEST

START_TEST(test_find_and_list) {
        free(write_file("profiles/zeta.profile", "hide /z\n"));
        free(write_file("profiles/alpha.profile", "hide /a\n"));
        free(write_file("nsrun/profiles/alpha.profile", "hide /site\n"));
        free(write_file("profiles/not-a-profile.txt", "x\n"));
        nsr_pf_ctx cx = ctx();
        /* the user's dir: $XDG_CONFIG_HOME, here $HOME/.config, absent */
        nsr_error err = { 0 };
        _cleanup_free_ char *path = NULL;
        ck_assert_int_eq(nsr_pf_find(&cx, "alpha", &path, &err), 0);
        ck_assert(nsr_endswith(path, "/nsrun/profiles/alpha.profile")); /* the site's wins over the shipped */
        _cleanup_free_ char *z = NULL;
        ck_assert_int_eq(nsr_pf_find(&cx, "zeta", &z, &err), 0);
        ck_assert(nsr_endswith(z, "/profiles/zeta.profile"));
        _cleanup_free_ char *x = NULL;
        ck_assert_int_eq(nsr_pf_find(&cx, "../etc/passwd", &x, &err), 0); /* a path, read as such */
        ck_assert_str_eq(x, "../etc/passwd");
        ck_assert_int_eq(nsr_pf_find(&cx, ".hidden", &x, &err), -EINVAL);
        ck_assert_int_eq(nsr_pf_find(&cx, "missing", &x, &err), -ENOENT);

        _cleanup_strv_free_ char **names = NULL, **paths = NULL;
        ck_assert_int_eq(nsr_pf_list_names(&cx, &names, &paths, &err), 0);
        ck_assert_uint_eq(nsr_strv_length(names), 2);
        ck_assert_str_eq(names[0], "alpha");
        ck_assert_str_eq(names[1], "zeta");
        ck_assert(nsr_endswith(paths[0], "/nsrun/profiles/alpha.profile"));
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("profilefile");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_split);
        tcase_add_test(tc, test_every_option);
        tcase_add_test(tc, test_name_value_and_order);
        tcase_add_test(tc, test_errors_name_file_line);
        tcase_add_test(tc, test_unknown_option_hint);
        tcase_add_test(tc, test_includes);
        tcase_add_test(tc, test_cycles_and_depth);
        tcase_add_test(tc, test_forbid);
        tcase_add_test(tc, test_tightening_only);
        tcase_add_test(tc, test_project_profile);
        tcase_add_test(tc, test_limits);
        tcase_add_test(tc, test_find_and_list);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
