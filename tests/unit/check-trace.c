/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trace.c: golden traces, parse -> trace -> parse round trips, and shell
 * quoting.
 *
 * Golden cases live in tests/data/trace/: NAME.args holds an nsrun argv (one
 * word per line, see the README there) and NAME.trace the expected
 * nsr_trace_shell() output. Run with NSR_UPDATE_GOLDEN=1 to rewrite the
 * .trace files from the current code, then review the diff. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/plan.h"
#include "cli/trace.h"
#include "plan-eq.h"
#include "unit.h"

#ifndef NSR_TEST_DATADIR
#error "NSR_TEST_DATADIR must be defined by the build"
#endif
#define TRACE_DIR NSR_TEST_DATADIR "/trace"

#define W(...)         ((const char *const[]){ __VA_ARGS__, NULL })
#define _cleanup_plan_ _cleanup_(nsr_plan_freep)

static const nsr_caller ROOT = { .uid = 0, .gid = 0, .userns_possible = true, .cgroupns_possible = true };
static const nsr_caller ROOT_OLD = { .uid = 0, .gid = 0, .userns_possible = false, .cgroupns_possible = false };
static const nsr_caller USER = { .uid = 1000, .gid = 1000, .userns_possible = true, .cgroupns_possible = true };
static const nsr_caller USER_OLD = { .uid = 1000, .gid = 1000, .userns_possible = false, .cgroupns_possible = false };
static const nsr_caller *const callers[] = { &ROOT, &ROOT_OLD, &USER, &USER_OLD };

/* ---- helpers ---------------------------------------------------------------- */

static char *join(char *const *w) {
        char *s = nsr_strdup("");
        for (size_t i = 0; w && w[i]; i++) {
                _cleanup_free_ char *q = nsr_shell_quote(w[i]);
                char *t = nsr_asprintf("%s%s%s", s, i ? " " : "", q);
                free(s);
                s = t;
        }
        return s;
}

static int pipe_with(const void *data, size_t len) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 1 << 20), (int) len);
        ck_assert_int_eq(nsr_write_all(p[1], data, len), 0);
        close(p[1]);
        return p[0];
}

/* Parses words; NULL and a message in *ret_err on failure. */
static nsr_plan *parse_words(char *const *w, bool bwrap, char *ret_err, size_t err_len) {
        nsr_plan *p = NULL;
        nsr_cli_result res;
        nsr_error err = { 0 };
        if (nsr_cli_parse(w, nsr_strv_length(w), bwrap, &p, &res, &err) < 0) {
                nsr_error_format(&err, ret_err, err_len);
                nsr_plan_free(p);
                return NULL;
        }
        ck_assert(res.action == NSR_CLI_RUN || res.action == NSR_CLI_NO_COMMAND);
        return p;
}

static nsr_plan *parse_ok(char *const *w, bool bwrap) {
        char msg[NSR_ERROR_MSG_MAX + 256] = "";
        nsr_plan *p = parse_words(w, bwrap, msg, sizeof(msg));
        _cleanup_free_ char *text = join(w);
        ck_assert_msg(p != NULL, "[%s]: %s", text, msg);
        return p;
}

static char *read_file(const char *path, size_t *ret_len) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *buf = NULL;
        int r = nsr_read_all(fd, 1 << 20, &buf, ret_len);
        close(fd);
        ck_assert_int_eq(r, 0);
        return buf;
}

/* The argv of a .args file: one word per line; "\n" in a line is a
 * newline and "\\" a backslash. An empty line is an empty word. */
static char **read_args(const char *path) {
        size_t len = 0;
        _cleanup_free_ char *data = read_file(path, &len);
        ck_assert_msg(data != NULL, "cannot read %s", path);
        char **v = nsr_malloc0(sizeof(char *));
        const char *s = data, *end = data + len;
        while (s < end) {
                const char *nl = memchr(s, '\n', (size_t) (end - s));
                const char *e = nl ? nl : end;
                char *w = nsr_malloc0((size_t) (e - s) + 1), *o = w;
                for (const char *c = s; c < e; c++) {
                        if (*c != '\\') {
                                *o++ = *c;
                                continue;
                        }
                        c++;
                        ck_assert_msg(c < e && (*c == 'n' || *c == '\\'), "%s: bad escape in \"%.*s\"", path,
                                      (int) (e - s), s);
                        *o++ = *c == 'n' ? '\n' : '\\';
                }
                nsr_strv_push(&v, w);
                s = nl ? nl + 1 : end;
        }
        return v;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The golden case names (without .args), sorted; empty when the directory
 * cannot be read (test_golden_count then fails). No ck_assert here: it
 * also runs while the suite is built, outside any test. */
static char **list_cases(void) {
        char **v = nsr_malloc0(sizeof(char *));
        DIR *d = opendir(TRACE_DIR);
        if (!d)
                return v;
        struct dirent *de;
        while ((de = readdir(d)))
                if (nsr_endswith(de->d_name, ".args"))
                        nsr_strv_push(&v, nsr_strndup(de->d_name, strlen(de->d_name) - 5));
        closedir(d);
        qsort(v, nsr_strv_length(v), sizeof(char *), cmp_str);
        return v;
}

static bool update_golden(void) {
        const char *e = getenv("NSR_UPDATE_GOLDEN");
        return e && *e && !streq(e, "0");
}

/* Runs the trace through /bin/sh with "bwrap" defined as a function that
 * prints its arguments NUL-separated: what a user pasting the line gets. */
static char **shell_words(const char *trace) {
        char path[] = "/tmp/nsr-trace-XXXXXX";
        int fd = mkostemp(path, O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        const char *fn = "bwrap() { for a in \"$@\"; do printf '%s\\0' \"$a\"; done; }\n";
        ck_assert_int_eq(nsr_write_all(fd, fn, strlen(fn)), 0);
        ck_assert_int_eq(nsr_write_all(fd, trace, strlen(trace)), 0);
        close(fd);
        _cleanup_free_ char *cmd = nsr_asprintf("/bin/sh %s", path);
        FILE *f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        char *out = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_read_all(fileno(f), 1 << 20, &out, &len), 0);
        ck_assert_int_eq(pclose(f), 0);
        unlink(path);
        char **v = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; i < len;) {
                size_t l = strnlen(out + i, len - i);
                nsr_strv_push(&v, nsr_strndup(out + i, l));
                i += l + 1;
        }
        free(out);
        return v;
}

static void assert_same_words(char *const *got, char *const *want, const char *what) {
        _cleanup_free_ char *g = join(got), *w = join(want);
        ck_assert_msg(streq(g, w) && nsr_strv_length(got) == nsr_strv_length(want), "%s:\n got  %s\n want %s", what, g,
                      w);
        for (size_t i = 0; want[i]; i++)
                ck_assert_msg(streq(got[i], want[i]), "%s: word %zu", what, i);
}

/* The trace argv, with every --add-seccomp-fd pointed at a new pipe that
 * holds the same program: the original fds were read and closed while
 * parsing. */
static char **reparseable_argv(const nsr_plan *p) {
        char **v = nsr_trace_argv(p);
        size_t k = 0;
        for (size_t i = 0; i < p->n_seccomp; i++) {
                const nsr_seccomp_prog *sp = &p->seccomp[i];
                if (sp->kind != NSR_SECCOMP_DATA)
                        continue;
                _cleanup_free_ char *fd = nsr_asprintf("%d", sp->fd);
                while (v[k] && !(streq(v[k], "--add-seccomp-fd") && streq(v[k + 1], fd)))
                        k++;
                ck_assert_msg(v[k] != NULL, "--add-seccomp-fd %s not in the trace", fd);
                free(v[k + 1]);
                v[k + 1] = nsr_asprintf("%d", pipe_with(sp->data, sp->len));
                k += 2;
        }
        return v;
}

/* parse(trace(p)) must give p back; the trace is a bwrap argv, so it is
 * parsed in bwrap mode. */
static void assert_round_trip(const nsr_plan *p, const char *what) {
        _cleanup_strv_free_ char **argv = reparseable_argv(p);
        _cleanup_free_ char *text = join(argv);
        char msg[NSR_ERROR_MSG_MAX + 256] = "";
        _cleanup_plan_ nsr_plan *q = parse_words(argv, true, msg, sizeof(msg));
        ck_assert_msg(q != NULL, "%s: the trace does not parse as bwrap: %s\n  %s", what, msg, text);
        _cleanup_free_ char *d = test_plan_diff(p, q, TEST_PLAN_EQ_IGNORE_NSRUN_ONLY);
        ck_assert_msg(d == NULL, "%s: round trip differs: %s\n  %s", what, d, text);

        /* and once more: the trace of the reparsed plan is the same text */
        _cleanup_strv_free_ char **again = nsr_trace_argv(q);
        _cleanup_strv_free_ char **first = nsr_trace_argv(p);
        if (p->n_seccomp == 0)
                assert_same_words(again, first, what);
}

/* The same after validation, for each kind of caller: validate(parse(w)),
 * trace it, parse and validate the trace as the same caller. */
static char **with_pipes(const char *const *w);

/* The same after validation, for each kind of caller: validate(parse(w)),
 * trace it, parse and validate the trace as the same caller. Each parse
 * gets new pipes for its @SECCOMP words. */
static void assert_round_trip_validated(const char *const *tmpl, bool bwrap, const char *what) {
        for (size_t i = 0; i < ELEMENTSOF(callers); i++) {
                const nsr_caller *c = callers[i];
                _cleanup_strv_free_ char **w = with_pipes(tmpl);
                _cleanup_plan_ nsr_plan *p = parse_ok(w, bwrap);
                nsr_error e1 = { 0 };
                int r1 = nsr_plan_validate(p, c, &e1);

                _cleanup_strv_free_ char **argv = reparseable_argv(p);
                _cleanup_free_ char *text = join(argv);
                _cleanup_plan_ nsr_plan *q = parse_ok(argv, true);
                nsr_error e2 = { 0 };
                int r2 = nsr_plan_validate(q, c, &e2);
                ck_assert_msg(r1 == r2 && streq(e1.msg, e2.msg), "%s as uid %u: \"%s\" then \"%s\"\n  %s", what,
                              (unsigned) c->uid, e1.msg, e2.msg, text);
                if (r1 < 0)
                        continue;
                _cleanup_free_ char *d = test_plan_diff(p, q, TEST_PLAN_EQ_IGNORE_NSRUN_ONLY);
                ck_assert_msg(d == NULL, "%s as uid %u: validated round trip differs: %s\n  %s", what,
                              (unsigned) c->uid, d, text);
                ck_assert(!q->unshare_user_try && !q->unshare_cgroup_try);
        }
}

/* Replaces "@SECCOMP:N" words by an fd holding an N-byte program. */
static char **with_pipes(const char *const *w) {
        char **v = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; w[i]; i++) {
                if (!nsr_startswith(w[i], "@SECCOMP:")) {
                        nsr_strv_extend(&v, w[i]);
                        continue;
                }
                size_t n = (size_t) atoi(w[i] + 9);
                char buf[256];
                ck_assert_uint_le(n, sizeof(buf));
                for (size_t k = 0; k < n; k++)
                        buf[k] = (char) (k * 7 + n + i);
                nsr_strv_push(&v, nsr_asprintf("%d", pipe_with(buf, n)));
        }
        return v;
}

/* ---- golden traces ---------------------------------------------------------- */

START_TEST(test_golden_count) {
        _cleanup_strv_free_ char **cases = list_cases();
        ck_assert_msg(nsr_strv_length(cases) >= 15, "%zu cases in %s", nsr_strv_length(cases), TRACE_DIR);
}
END_TEST

START_TEST(test_golden) {
        _cleanup_strv_free_ char **cases = list_cases();
        ck_assert_uint_lt((size_t) _i, nsr_strv_length(cases));
        const char *name = cases[_i];
        _cleanup_free_ char *args_path = nsr_asprintf("%s/%s.args", TRACE_DIR, name);
        _cleanup_free_ char *trace_path = nsr_asprintf("%s/%s.trace", TRACE_DIR, name);

        _cleanup_strv_free_ char **w = read_args(args_path);
        _cleanup_plan_ nsr_plan *p = parse_ok(w, false);
        _cleanup_free_ char *got = nsr_trace_shell(p);

        if (update_golden()) {
                int fd = open(trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(nsr_write_all(fd, got, strlen(got)), 0);
                close(fd);
                fprintf(stderr, "updated %s\n", trace_path);
        } else {
                _cleanup_free_ char *want = read_file(trace_path, NULL);
                ck_assert_msg(want != NULL, "%s is missing (NSR_UPDATE_GOLDEN=1 writes it)", trace_path);
                ck_assert_msg(streq(got, want), "%s: trace differs\n--- want\n%s--- got\n%s", name, want, got);
        }

        /* the shell line means exactly the trace argv, which is the NUL form */
        _cleanup_strv_free_ char **argv = nsr_trace_argv(p);
        _cleanup_strv_free_ char **sh = shell_words(got);
        ck_assert_uint_ge(nsr_strv_length(sh), 1);
        assert_same_words(sh, argv, name);
        size_t len = 0;
        _cleanup_free_ char *nul = nsr_trace_nul(p, &len);
        ck_assert_str_eq(nul, "bwrap");
        size_t off = 6;
        for (size_t i = 0; argv[i]; i++) {
                ck_assert_uint_lt(off, len);
                ck_assert_str_eq(nul + off, argv[i]);
                off += strlen(argv[i]) + 1;
        }
        ck_assert_uint_eq(off, len);

        assert_round_trip(p, name);
        assert_round_trip_validated((const char *const *) w, false, name);
}
END_TEST

START_TEST(test_golden_files_paired) {
        /* every .trace has its .args (a renamed case leaves no stale file) */
        DIR *d = opendir(TRACE_DIR);
        ck_assert_ptr_nonnull(d);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!nsr_endswith(de->d_name, ".trace"))
                        continue;
                _cleanup_free_ char *args =
                        nsr_asprintf("%s/%.*s.args", TRACE_DIR, (int) (strlen(de->d_name) - 6), de->d_name);
                ck_assert_msg(access(args, F_OK) == 0, "%s has no .args", de->d_name);
        }
        closedir(d);
}
END_TEST

/* ---- round trips of hand-written command lines ------------------------------ */

static const char *const *const round_trips[] = {
        W("true"),
        W("--"),
        W("--unshare-all", "--share-net", "--", "true"),
        W("--unshare-user", "--unshare-user-try", "--unshare-cgroup", "--unshare-cgroup-try", "true"),
        W("--userns", "0", "--userns2", "0", "--pidns", "0", "true"),
        W("--uid", "2147483647", "--gid", "0", "--unshare-user", "true"),
        W("--perms", "0", "--dir", "/zero", "--perms", "07777", "--tmpfs", "/all", "true"),
        W("--size", "9223372036854775807", "--tmpfs", "/big", "--size", "1", "--perms", "01777", "--tmpfs", "/t",
          "true"),
        W("--chmod", "07777", "/a", "--chmod", "0", "/b", "true"),
        W("--perms", "0600", "--file", "0", "/f", "--bind-data", "1", "/b", "--perms", "0", "--ro-bind-data", "2", "/r",
          "true"),
        W("--bind", "--", "-x", "--dir", "--help", "--symlink", "", "", "--hostname", "--", "true"),
        W("--overlay-src", "--", "--overlay-src", "-", "--tmp-overlay", "--version", "true"),
        W("--overlay-src", "/a", "--overlay", "/rw", "/w", "/o", "--overlay-src", "/a", "--overlay-src", "/a",
          "--ro-overlay", "/o", "true"),
        W("--setenv", "A", "x\ny", "--clearenv", "--unsetenv", "A", "--setenv", "A B", "", "--setenv", "C", "=",
          "true"),
        W("--cap-add", "ALL", "--cap-drop", "CAP_SYS_ADMIN", "--cap-drop", "41", "--cap-add", "0", "--cap-drop", "all",
          "true"),
        W("--argv0", "", "--chdir", "", "--hostname", "", "--unshare-uts", "true", ""),
        W("--hostname", "a", "--bind", "/x", "/y", "--hostname", "b", "--hostname", "c", "--unshare-uts", "true"),
        W("--lock-file", "/a", "--lock-file", "/a", "--sync-fd", "9", "--unshare-pid", "true"),
        W("--level-prefix", "--chdir", "/a", "--chdir", "/b", "true"),
        W("--seccomp", "0", "--seccomp", "7", "true"),
        W("--add-seccomp-fd", "@SECCOMP:8", "true"),
        W("--add-seccomp-fd", "@SECCOMP:16", "--add-seccomp-fd", "@SECCOMP:0", "--add-seccomp-fd", "@SECCOMP:240",
          "--cap-drop", "ALL", "--", "sh", "--add-seccomp-fd", "3"),
        W("--unshare-user", "--userns-block-fd", "3", "--info-fd", "4", "--json-status-fd", "5", "--block-fd", "6",
          "true"),
        W("--unshare-user", "--disable-userns", "--assert-userns-disabled", "--new-session", "--die-with-parent",
          "true"),
        W("--unshare-pid", "--as-pid-1", "true"),
        W("--as-pid-1", "--lock-file", "/l", "true"),          /* fails validation, the same way twice */
        W("--hostname", "h", "true"),                          /* fails validation for everyone */
        W("--uid", "5", "true"),                               /* fails as root only */
        W("--unshare-cgroup", "--dev", "/dev", "true"),        /* fails without cgroup namespaces */
        W("--userns-block-fd", "3", "--info-fd", "4", "true"), /* fails validation */
        W("--bind-fd", "3", "/a", "--ro-bind-fd", "4", "/b", "--remount-ro", "/b", "--mqueue", "/m", "--proc", "/p",
          "true"),
        W("--dev-bind-try", "/dev/x", "/x", "--ro-bind-try", "/a b", "/c'd", "--bind-try", "/\\", "/$x", "true"),
        W("--perms", "0700", "--", "x"), /* the pending --perms is dropped */
        W("--unshare-net", "--share-net", "--unshare-ipc", "sh", "-c", "exit 3"),
};

START_TEST(test_round_trip_list) {
        for (size_t i = 0; i < ELEMENTSOF(round_trips); i++) {
                _cleanup_strv_free_ char **w = with_pipes(round_trips[i]);
                _cleanup_free_ char *what = join(w);
                _cleanup_plan_ nsr_plan *p = parse_ok(w, true);
                assert_round_trip(p, what);
                assert_round_trip_validated(round_trips[i], true, what);
        }
}
END_TEST

START_TEST(test_round_trip_nsrun_only) {
        /* what the bwrap argv cannot carry is left out of the argv ... */
        _cleanup_plan_ nsr_plan *p = parse_ok((char *const *) W("--seccomp-policy=default", "--trace-bwrap",
                                                                "--trace-bwrap-fd=5", "--unshare-pid", "true"),
                                              false);
        assert_round_trip(p, "nsrun-only");
        _cleanup_strv_free_ char **argv = nsr_trace_argv(p);
        assert_same_words(argv, (char *const *) W("--unshare-pid", "--", "true"), "nsrun-only");
        /* ... and noted */
        _cleanup_strv_free_ char **notes = nsr_trace_notes(p);
        ck_assert_uint_eq(nsr_strv_length(notes), 1);
        ck_assert(strstr(notes[0], "--seccomp-policy default") != NULL);
}
END_TEST

/* ---- specific trace properties ---------------------------------------------- */

static char *trace_of(const char *const *w, bool bwrap) {
        _cleanup_strv_free_ char **v = with_pipes(w);
        _cleanup_plan_ nsr_plan *p = parse_ok(v, bwrap);
        return nsr_trace_shell(p);
}

START_TEST(test_trace_validated) {
        /* after validation the -try flags are resolved */
        _cleanup_plan_ nsr_plan *p =
                parse_ok((char *const *) W("--unshare-all", "--dev", "/dev", "--uid", "0", "true"), true);
        ck_assert_int_eq(nsr_plan_validate(p, &USER, NULL), 0);
        _cleanup_free_ char *t = nsr_trace_shell(p);
        ck_assert_str_eq(t, "bwrap --unshare-user --unshare-ipc --unshare-pid --unshare-net --unshare-uts "
                            "--unshare-cgroup --uid 0 --dev /dev -- true\n");

        _cleanup_plan_ nsr_plan *q = parse_ok((char *const *) W("--unshare-all", "true"), true);
        ck_assert_int_eq(nsr_plan_validate(q, &ROOT_OLD, NULL), 0);
        _cleanup_free_ char *u = nsr_trace_shell(q);
        ck_assert_str_eq(u, "bwrap --unshare-ipc --unshare-pid --unshare-net --unshare-uts -- true\n");
}
END_TEST

START_TEST(test_trace_add_seccomp_fd) {
        static const char prog[16] = { 1, 2, 3 };
        int fd = pipe_with(prog, sizeof(prog));
        _cleanup_free_ char *fds = nsr_asprintf("%d", fd);
        _cleanup_plan_ nsr_plan *p = parse_ok((char *const *) W("--add-seccomp-fd", fds, "true"), true);
        _cleanup_free_ char *t = nsr_trace_shell(p);
        _cleanup_free_ char *want = nsr_asprintf("bwrap --add-seccomp-fd %d -- true\n"
                                                 "# fd %d: a seccomp BPF program (--add-seccomp-fd)\n",
                                                 fd, fd);
        ck_assert_str_eq(t, want);
}
END_TEST

START_TEST(test_trace_placement) {
        /* --perms and --size sit right before the op they belong to (perms
         * first), overlay sources right before their overlay, bottom first */
        const struct {
                const char *const *argv;
                const char *trace;
        } cases[] = {
                { W("--size", "1", "--perms", "0700", "--tmpfs", "/t", "true"),
                  "bwrap --perms 0700 --size 1 --tmpfs /t -- true\n" },
                { W("--dir", "/x", "--perms", "755", "--dir", "/y", "--dir", "/z", "true"),
                  "bwrap --dir /x --perms 0755 --dir /y --dir /z -- true\n" },
                { W("--perms", "1777", "--tmpfs", "/tmp", "--chmod", "644", "/f", "true"),
                  "bwrap --perms 1777 --tmpfs /tmp --chmod 0644 /f -- true\n" },
                { W("--overlay-src", "/a", "--overlay-src", "/b", "--overlay", "/rw", "/w", "/o", "--dir", "/d",
                    "true"),
                  "bwrap --overlay-src /a --overlay-src /b --overlay /rw /w /o --dir /d -- true\n" },
                { W("--dir", "/d", "--overlay-src", "/a", "--tmp-overlay", "/o", "true"),
                  "bwrap --dir /d --overlay-src /a --tmp-overlay /o -- true\n" },
                /* process settings come first, then the ops in order */
                { W("--bind", "/a", "/b", "--unshare-pid", "--setenv", "A", "1", "--hostname", "h", "--unshare-uts",
                    "true"),
                  "bwrap --unshare-pid --unshare-uts --setenv A 1 --bind /a /b --hostname h -- true\n" },
                { W("--perms", "0700", "true"), "bwrap -- true\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *t = trace_of(cases[i].argv, true);
                ck_assert_str_eq(t, cases[i].trace);
        }
}
END_TEST

START_TEST(test_shell_quote) {
        static const char *const cases[][2] = {
                { "", "''" },
                { "plain", "plain" },
                { "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu" },
                { "--bind", "--bind" },
                { "-", "-" },
                { "a=b,c:d@e%f+g", "a=b,c:d@e%f+g" },
                { "a b", "'a b'" },
                { "it's", "'it'\\''s'" },
                { "'", "''\\'''" },
                { "''", "''\\'''\\'''" },
                { "say \"hi\"", "'say \"hi\"'" },
                { "a\nb", "'a'\"$(printf '\\012\\142')\"" },
                { "tab\there", "'tab'\"$(printf '\\011')\"'here'" },
                { "end\n", "'end\n'" },
                { "\n", "'\n'" },
                { "\x01\n", "\"$(printf '\\001')\"'\n'" },
                { "\x01\nA\n", "\"$(printf '\\001\\012\\101')\"'\n'" },
                { "\xc2\x9b\xe2\x80\xae\xff", "\"$(printf '\\302\\233\\342\\200\\256\\377')\"" },
                { "\x1b]52;c;eA==\x07", "\"$(printf '\\033')\"']52;c;eA=='\"$(printf '\\007')\"" },
                { "$HOME", "'$HOME'" },
                { "`id`", "'`id`'" },
                { "*", "'*'" },
                { "?", "'?'" },
                { "[a]", "'[a]'" },
                { "~", "'~'" },
                { "~user", "'~user'" },
                { "#x", "'#x'" },
                { "a;b", "'a;b'" },
                { "a&b", "'a&b'" },
                { "a|b", "'a|b'" },
                { "(x)", "'(x)'" },
                { "{x}", "'{x}'" },
                { "<x>", "'<x>'" },
                { "!", "'!'" },
                { "\\", "'\\'" },
                { "\xc3\xbc", "'\xc3\xbc'" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *q = nsr_shell_quote(cases[i][0]);
                ck_assert_msg(streq(q, cases[i][1]), "quote(%s) = %s, want %s", cases[i][0], q, cases[i][1]);
        }

        /* whatever the input, sh reads back the same word */
        char all[256];
        for (int c = 1; c < 256; c++)
                all[c - 1] = (char) c;
        all[255] = '\0';
        char *words[ELEMENTSOF(cases) + 2];
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                words[n++] = (char *) cases[i][0];
        words[n++] = all;
        words[n] = NULL;
        _cleanup_free_ char *line = join(words);
        _cleanup_free_ char *script = nsr_asprintf("bwrap %s\n", line);
        _cleanup_strv_free_ char **back = shell_words(script);
        assert_same_words(back, words, "shell");
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("trace");
        _cleanup_strv_free_ char **cases = list_cases();
        TCase *tc = tcase_create("golden");
        tcase_add_test(tc, test_golden_count);
        tcase_add_loop_test(tc, test_golden, 0, (int) nsr_strv_length(cases));
        tcase_add_test(tc, test_golden_files_paired);
        tcase_set_timeout(tc, 30);
        suite_add_tcase(s, tc);

        tc = tcase_create("round-trip");
        tcase_add_test(tc, test_round_trip_list);
        tcase_add_test(tc, test_round_trip_nsrun_only);
        tcase_set_timeout(tc, 30);
        suite_add_tcase(s, tc);

        tc = tcase_create("trace");
        tcase_add_test(tc, test_trace_validated);
        tcase_add_test(tc, test_trace_add_seccomp_fd);
        tcase_add_test(tc, test_trace_placement);
        tcase_add_test(tc, test_shell_quote);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
