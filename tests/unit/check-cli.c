/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* options.c, cli.c and plan.c: the options table, argv -> plan for every
 * option and every parse error, and the post-parse validation.
 *
 * Expected messages are written out literally, as bubblewrap 0.12.0 prints
 * them (see bwrap-messages.md), never computed from the table under test. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/plan.h"
#include "cli/subopts.h"
#include "plan-eq.h"
#include "unit.h"

/* ---- helpers ---------------------------------------------------------------- */

/* A NULL-terminated word list. */
#define W(...) ((const char *const[]){ __VA_ARGS__, NULL })

static size_t wlen(const char *const *w) {
        size_t n = 0;
        while (w[n])
                n++;
        return n;
}

static char *join(const char *const *w) {
        char *s = nsr_strdup("");
        for (size_t i = 0; w[i]; i++) {
                char *t = nsr_asprintf("%s%s'%s'", s, i ? " " : "", w[i]);
                free(s);
                s = t;
        }
        return s;
}

typedef struct parsed {
        int r;
        nsr_plan *plan;
        nsr_cli_result res;
        nsr_error err;
        char msg[NSR_ERROR_MSG_MAX + 256]; /* the error as printed */
        char *text;                        /* the words, for failure messages */
} parsed;

static void parsed_done(parsed *p) {
        p->plan = nsr_plan_free(p->plan);
        free(p->text);
        p->text = NULL;
}
#define _cleanup_parsed_ _cleanup_(parsed_done)

static parsed parse_n(bool bwrap, const char *const *w, size_t n) {
        parsed p = { .res = { .action = _NSR_CLI_ACTION_INVALID } };
        p.r = nsr_cli_parse((char *const *) w, n, bwrap, &p.plan, &p.res, &p.err);
        if (p.r < 0)
                nsr_error_format(&p.err, p.msg, sizeof(p.msg));
        p.text = join(w);
        ck_assert_msg(p.plan != NULL, "[%s]: no plan returned", p.text);
        return p;
}

static parsed parse(bool bwrap, const char *const *w) {
        return parse_n(bwrap, w, wlen(w));
}

static nsr_plan *ok_(bool bwrap, const char *const *w, int line) {
        parsed p = parse(bwrap, w);
        ck_assert_msg(p.r == 0, "line %d: [%s]: unexpected error \"%s\"", line, p.text, p.msg);
        free(p.text);
        return p.plan;
}

static void err_(bool bwrap, const char *want, const char *const *w, int line) {
        _cleanup_parsed_ parsed p = parse(bwrap, w);
        ck_assert_msg(p.r < 0, "line %d: [%s]: parsed, but want error \"%s\"", line, p.text, want);
        ck_assert_msg(streq(p.msg, want), "line %d: [%s]: error \"%s\", want \"%s\"", line, p.text, p.msg, want);
}

/* Parse in bwrap mode (B_) or nsrun mode (N_). *_OK returns the plan. */
#define B_OK(...)        ok_(true, W(__VA_ARGS__), __LINE__)
#define N_OK(...)        ok_(false, W(__VA_ARGS__), __LINE__)
#define B_ERR(want, ...) err_(true, (want), W(__VA_ARGS__), __LINE__)
#define N_ERR(want, ...) err_(false, (want), W(__VA_ARGS__), __LINE__)
#define _cleanup_plan_   _cleanup_(nsr_plan_freep)

/* The read end of a pipe holding exactly these bytes, then EOF. */
static int pipe_with(const void *data, size_t len) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 1 << 20), (int) len);
        ck_assert_int_eq(nsr_write_all(p[1], data, len), 0);
        close(p[1]);
        return p[0];
}

typedef struct fdstr {
        char s[16];
} fdstr;

static fdstr fd_to_str(int fd) {
        fdstr f;
        snprintf(f.s, sizeof(f.s), "%d", fd);
        return f;
}

/* "--args FD" data: the words, each followed by a NUL. */
static int args_pipe(const char *const *w, bool trailing_nul) {
        char buf[4096];
        size_t len = 0;
        for (size_t i = 0; w[i]; i++) {
                size_t l = strlen(w[i]) + 1;
                ck_assert_uint_lt(len + l, sizeof(buf));
                memcpy(buf + len, w[i], l);
                len += l;
        }
        if (!trailing_nul && len > 0)
                len--;
        return pipe_with(buf, len);
}

static const nsr_op *op_at(const nsr_plan *p, size_t i) {
        ck_assert_msg(i < p->n_ops, "op %zu of %zu", i, p->n_ops);
        return &p->ops[i];
}

static void assert_strv(char *const *got, const char *const *want) {
        size_t n = wlen(want);
        ck_assert_uint_eq(nsr_strv_length(got), n);
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(got[i], want[i]);
}

static void assert_warnings(const nsr_plan *p, const char *const *want) {
        assert_strv(p->warnings, want);
}

/* ---- the options table ------------------------------------------------------ */

/* bwrap 0.12.0's --help, in order: name and number of arguments. */
static const struct {
        const char *name;
        unsigned nargs;
} bwrap_options[] = {
        { "--help", 0 },
        { "--version", 0 },
        { "--args", 1 },
        { "--argv0", 1 },
        { "--level-prefix", 0 },
        { "--unshare-all", 0 },
        { "--share-net", 0 },
        { "--unshare-user", 0 },
        { "--unshare-user-try", 0 },
        { "--unshare-ipc", 0 },
        { "--unshare-pid", 0 },
        { "--unshare-net", 0 },
        { "--unshare-uts", 0 },
        { "--unshare-cgroup", 0 },
        { "--unshare-cgroup-try", 0 },
        { "--userns", 1 },
        { "--userns2", 1 },
        { "--disable-userns", 0 },
        { "--assert-userns-disabled", 0 },
        { "--pidns", 1 },
        { "--uid", 1 },
        { "--gid", 1 },
        { "--hostname", 1 },
        { "--chdir", 1 },
        { "--clearenv", 0 },
        { "--setenv", 2 },
        { "--unsetenv", 1 },
        { "--lock-file", 1 },
        { "--sync-fd", 1 },
        { "--bind", 2 },
        { "--bind-try", 2 },
        { "--dev-bind", 2 },
        { "--dev-bind-try", 2 },
        { "--ro-bind", 2 },
        { "--ro-bind-try", 2 },
        { "--bind-fd", 2 },
        { "--ro-bind-fd", 2 },
        { "--remount-ro", 1 },
        { "--overlay-src", 1 },
        { "--overlay", 3 },
        { "--tmp-overlay", 1 },
        { "--ro-overlay", 1 },
        { "--exec-label", 1 },
        { "--file-label", 1 },
        { "--proc", 1 },
        { "--dev", 1 },
        { "--tmpfs", 1 },
        { "--mqueue", 1 },
        { "--dir", 1 },
        { "--file", 2 },
        { "--bind-data", 2 },
        { "--ro-bind-data", 2 },
        { "--symlink", 2 },
        { "--seccomp", 1 },
        { "--add-seccomp-fd", 1 },
        { "--block-fd", 1 },
        { "--userns-block-fd", 1 },
        { "--info-fd", 1 },
        { "--json-status-fd", 1 },
        { "--new-session", 0 },
        { "--die-with-parent", 0 },
        { "--as-pid-1", 0 },
        { "--cap-add", 1 },
        { "--cap-drop", 1 },
        { "--perms", 1 },
        { "--size", 1 },
        { "--chmod", 2 },
        { "--not-a-security-boundary", 0 },
};

static const struct {
        const char *name;
        unsigned nargs;
} nsrun_options[] = {
        { "--trace-bwrap", 0 },
        { "--trace-bwrap-fd", 1 },
        { "--seccomp-policy", 1 },
        { "--project", 1 },
        { "-p", 1 },
        { "--home", 1 },
        { "--hide", 1 },
        { "--rw", 1 },
        { "--ro", 1 },
        { "--keep-env", 1 },
        { "--allow-nested", 0 },
        { "--state-dir", 1 },
        { "--report", 1 },
        { "--report-fd", 1 },
        { "--discard", 0 },
        { "--keep", 0 },
        { "--on-conflict", 1 },
        { "--quiet", 0 },
        { "-q", 0 },
        { "--verbose", 0 },
        { "-v", 0 },
        { "--events-fd", 1 },
        { "--keep-days", 1 },
        { "--backup-limit", 1 },
        { "--sandbox", 1 },
        { "--no-overlay", 0 },
        { "--snapshot-limit", 1 },
        { "--profile", 1 },
        { "--workspace-root", 0 },
        { "--allow-host", 1 },
        { "--deny-host", 1 },
        { "--net-log-fd", 1 },
        { "--timeout", 1 },
        { "--kill-after", 1 },
        { "--rlimit", 1 },
        { "--pids", 1 },
        { "--tmp-size", 1 },
        { "--memory", 1 },
        { "--cpu", 1 },
};

START_TEST(test_table_bwrap_options) {
        for (size_t i = 0; i < ELEMENTSOF(bwrap_options); i++) {
                const char *name = bwrap_options[i].name;
                const nsr_option *o = nsr_options_find(name, true);
                ck_assert_msg(o != NULL, "%s missing in bwrap mode", name);
                ck_assert_str_eq(o->name, name);
                ck_assert_msg(o->nargs == bwrap_options[i].nargs, "%s: nargs %u, want %u", name, o->nargs,
                              bwrap_options[i].nargs);
                ck_assert_msg(o->flags & NSR_OPTF_BWRAP, "%s lacks NSR_OPTF_BWRAP", name);
                ck_assert_msg(o->flags & NSR_OPTF_NSRUN, "%s is not accepted by nsrun", name);
                ck_assert_ptr_eq(nsr_options_find(name, false), o);
        }
}
END_TEST

START_TEST(test_table_bwrap_order) {
        /* Exactly bwrap's options carry the bwrap flag, in bwrap's --help order. */
        size_t k = 0;
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                if (!(nsr_options[i].flags & NSR_OPTF_BWRAP))
                        continue;
                ck_assert_msg(k < ELEMENTSOF(bwrap_options), "extra bwrap option %s", nsr_options[i].name);
                ck_assert_str_eq(nsr_options[i].name, bwrap_options[k].name);
                k++;
        }
        ck_assert_uint_eq(k, ELEMENTSOF(bwrap_options));
}
END_TEST

START_TEST(test_table_nsrun_options) {
        for (size_t i = 0; i < ELEMENTSOF(nsrun_options); i++) {
                const char *name = nsrun_options[i].name;
                ck_assert_msg(nsr_options_find(name, true) == NULL, "%s found in bwrap mode", name);
                const nsr_option *o = nsr_options_find(name, false);
                ck_assert_msg(o != NULL, "%s missing in nsrun mode", name);
                ck_assert_uint_eq(o->nargs, nsrun_options[i].nargs);
                ck_assert(!(o->flags & NSR_OPTF_BWRAP));
                ck_assert(o->flags & NSR_OPTF_NSRUN);
        }
        /* every nsrun-only option (and each short form) is listed above */
        size_t n = 0;
        for (size_t i = 0; i < _NSR_OPT_MAX; i++)
                if (!(nsr_options[i].flags & NSR_OPTF_BWRAP))
                        n += nsr_options[i].short_name ? 2 : 1;
        ck_assert_uint_eq(n, ELEMENTSOF(nsrun_options));
}
END_TEST

static size_t count_words(const char *s) {
        size_t n = 0;
        bool in = false;
        for (; *s; s++) {
                if (*s == ' ')
                        in = false;
                else if (!in) {
                        in = true;
                        n++;
                }
        }
        return n;
}

START_TEST(test_table_sanity) {
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                const nsr_option *o = &nsr_options[i];
                ck_assert_msg(o->name != NULL, "entry %zu has no name", i);
                ck_assert_msg(nsr_startswith(o->name, "--"), "%s", o->name);
                ck_assert_msg(o->id == (nsr_opt_id) i, "%s: id %d at index %zu", o->name, o->id, i);
                ck_assert_ptr_eq(nsr_options_get(o->id), o);
                ck_assert_msg(o->help && o->help[0], "%s has no help text", o->name);
                ck_assert_msg(o->flags & (NSR_OPTF_BWRAP | NSR_OPTF_NSRUN), "%s is in no mode", o->name);
                ck_assert_msg(o->nargs <= 3, "%s", o->name);
                /* the metavar names each argument */
                ck_assert_msg(o->nargs == 0 ? o->metavar == NULL : count_words(o->metavar) == o->nargs,
                              "%s: metavar \"%s\" for %u arguments", o->name, o->metavar ? o->metavar : "", o->nargs);
                for (size_t j = 0; j < i; j++) {
                        ck_assert_msg(!streq(o->name, nsr_options[j].name), "%s twice", o->name);
                        if (o->short_name)
                                ck_assert(!streq(o->short_name, nsr_options[j].short_name));
                }
        }
        ck_assert_ptr_null(nsr_options_get(_NSR_OPT_MAX));
        ck_assert_ptr_null(nsr_options_get(_NSR_OPT_INVALID));
        ck_assert_ptr_null(nsr_options_find("--nope", false));
        ck_assert_ptr_null(nsr_options_find("--bind=x", false));
        ck_assert_ptr_null(nsr_options_find("-", true));
        ck_assert_ptr_null(nsr_options_find("", true));
        ck_assert_ptr_null(nsr_options_find("bind", true));
}
END_TEST

/* Every entry of the table reaches code of its own: parsed with
 * placeholder values, an option is taken or refused for its value, never
 * for want of a handler; and the options that need --project are the ones
 * a plain run is told about. */
START_TEST(test_table_handlers) {
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                const nsr_option *o = &nsr_options[i];
                if (o->id == NSR_OPT_HELP || o->id == NSR_OPT_VERSION)
                        continue;
                const char *w[6] = { o->name };
                size_t n = 1;
                for (unsigned k = 0; k < o->nargs; k++)
                        w[n++] = "x";
                w[n++] = "true";
                _cleanup_parsed_ parsed p = parse_n(false, w, n);
                ck_assert_msg(p.r >= 0 || !strstr(p.msg, "no handler"), "%s: %s", o->name, p.msg);
                ck_assert_msg(p.r >= 0 || !strstr(p.msg, "Unknown option"), "%s: %s", o->name, p.msg);
                ck_assert_msg((p.res.project_only == o) == !!(o->flags & NSR_OPTF_PROJECT), "%s: project-only is %s",
                              o->name, p.res.project_only ? p.res.project_only->name : "unset");
        }
        /* the first one given is named, from a file as from the command line */
        _cleanup_parsed_ parsed p = parse(false, W("--bind", "/", "/", "--quiet", "--home", "ro", "true"));
        ck_assert_int_eq(p.r, 0);
        ck_assert_ptr_eq(p.res.project_only, &nsr_options[NSR_OPT_QUIET]);
}
END_TEST

/* ---- subcommand options (subopts.c) ---------------------------------------- */

static const nsr_subopt sub_opts[] = {
        { "--state-dir", NULL, 1, 1, "DIR", "where" },
        { "--project", "-p", 2, 1, "DIR", "which" },
        { "--json", NULL, 3, 0, NULL, "how" },
        { NULL, NULL, 0, 0, NULL, NULL },
};

typedef struct sub_seen {
        char log[256];
} sub_seen;

static int sub_fn(void *userdata, const nsr_subopt *o, const char *value, nsr_error *err) {
        sub_seen *s = userdata;
        if (value && streq(value, "bad"))
                return nsr_error_setx(err, EINVAL, "%s: bad value", o->name);
        size_t l = strlen(s->log);
        snprintf(s->log + l, sizeof(s->log) - l, "%d=%s;", o->key, value ? value : "-");
        return 0;
}

/* Parses w (w[0] is the subcommand) with c; returns the log of handler
 * calls, then "|" and the operands, then "|" and the command, or the error. */
static char *sub_parse(const nsr_subcmd *c, const char *const *w) {
        sub_seen s = { "" };
        nsr_subargs a;
        nsr_error e = { 0 };
        int r = nsr_subopts_parse(c, (int) wlen(w), (char **) w, sub_fn, &s, &a, &e);
        char *out;
        if (r < 0)
                out = nsr_strdup(e.msg);
        else {
                out = nsr_asprintf("%s%s|", s.log, a.help ? "help;" : "");
                for (size_t i = 0; i < a.n_operands; i++) {
                        char *t = nsr_asprintf("%s%s ", out, a.operands[i]);
                        free(out);
                        out = t;
                }
                char *t = nsr_asprintf("%s|", out);
                free(out);
                out = t;
                for (size_t i = 0; a.command && a.command[i]; i++) {
                        t = nsr_asprintf("%s%s ", out, a.command[i]);
                        free(out);
                        out = t;
                }
        }
        nsr_subargs_done(&a);
        return out;
}

#define SUB_IS(c, want, ...)                                                                                           \
        do {                                                                                                           \
                char *got_ = sub_parse(c, W(__VA_ARGS__));                                                             \
                ck_assert_str_eq(got_, want);                                                                          \
                free(got_);                                                                                            \
        } while (0)

START_TEST(test_subopts_parse) {
        static const nsr_subcmd c = { "history", "[RUN]", NULL, 1, 0, sub_opts };
        SUB_IS(&c, "1=/s;2=/p;3=-;|RUN |", "history", "--state-dir", "/s", "-p", "/p", "--json", "RUN");
        SUB_IS(&c, "1=/s;2=/p;|RUN |", "history", "RUN", "--state-dir=/s", "--project=/p");
        SUB_IS(&c, "1=;|- |", "history", "--state-dir=", "-");
        SUB_IS(&c, "help;||", "history", "-h");
        SUB_IS(&c, "3=-;help;||", "history", "--json", "--help");
        SUB_IS(&c, "history --state-dir takes an argument", "history", "--state-dir");
        SUB_IS(&c, "history -p takes an argument", "history", "-p");
        SUB_IS(&c, "history: --json takes no value", "history", "--json=1");
        SUB_IS(&c, "history: unexpected argument \"--bogus\" (no such option)", "history", "--bogus");
        SUB_IS(&c, "history: unexpected argument \"--sate-dir=x\" (no such option; did you mean --state-dir?)",
               "history", "--sate-dir=x");
        SUB_IS(&c, "history: unexpected argument \"--jsn\" (no such option; did you mean --json?)", "history", "--jsn");
        SUB_IS(&c, "history: unexpected argument \"-x=1\" (no such option)", "history", "-x=1");
        SUB_IS(&c, "history: unexpected argument \"--\" (no such option)", "history", "--");
        SUB_IS(&c, "history: unexpected argument \"b\"", "history", "a", "b");
        SUB_IS(&c, "--project: bad value", "history", "--project", "bad");
        /* the value of an option is never an option itself */
        SUB_IS(&c, "2=--json;||", "history", "-p", "--json");
}
END_TEST

START_TEST(test_options_suggest) {
        ck_assert_str_eq(nsr_options_suggest("--timout", false), "--timeout");
        ck_assert_str_eq(nsr_options_suggest("--unshare-al", false), "--unshare-all");
        ck_assert_str_eq(nsr_options_suggest("--unshare-al", true), "--unshare-all");
        /* nsrun's own options are never suggested under the name bwrap */
        ck_assert_ptr_null(nsr_options_suggest("--timout", true));
        ck_assert_ptr_null(nsr_options_suggest("--frobnicate", false));
        ck_assert_ptr_null(nsr_options_suggest("--x", false));
        ck_assert_ptr_null(nsr_options_suggest("--foo", false));
}
END_TEST

START_TEST(test_subopts_command_and_pass) {
        static const nsr_subcmd x = { "exec", "ID -- COMMAND", NULL, 1, NSR_SUBCMD_COMMAND_AFTER, sub_opts };
        SUB_IS(&x, "1=/s;|ID |ls -l ", "exec", "--state-dir", "/s", "ID", "--", "ls", "-l");
        SUB_IS(&x, "|ID |ls --json ", "exec", "ID", "ls", "--json");
        SUB_IS(&x, "|ID |", "exec", "ID");
        SUB_IS(&x, "|ID |-- ", "exec", "ID", "--", "--");
        /* a table of --json alone: the rest goes on, in order */
        static const nsr_subcmd p = { "session start", NULL, NULL, 0, NSR_SUBCMD_PASS_UNKNOWN, sub_opts + 2 };
        SUB_IS(&p, "3=-;|-p /x --home=ro --state-dir /s -- |", "session start", "-p", "/x", "--json", "--home=ro",
               "--state-dir", "/s", "--");
}
END_TEST

static char *sub_help(const nsr_subcmd *c) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(f);
        nsr_subopts_help(f, c);
        fclose(f);
        return buf;
}

START_TEST(test_subopts_help) {
        static const nsr_subcmd c = { "history", "[RUN]", "About.\n", 1, 0, sub_opts };
        _cleanup_free_ char *h = sub_help(&c);
        ck_assert_str_eq(h, "usage: nsrun history [--state-dir DIR] [-p DIR] [--json] [RUN]\n"
                            "About.\n"
                            "\n"
                            "Options:\n"
                            "    --state-dir DIR              where\n"
                            "    -p, --project DIR            which\n"
                            "    --json                       how\n"
                            "    -h, --help                   Show this help and exit\n");
}
END_TEST

static char *help_text(const char *prog, bool bwrap) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(f);
        nsr_options_help(f, prog, bwrap);
        fclose(f);
        return buf;
}

START_TEST(test_help_bwrap) {
        _cleanup_free_ char *h = help_text("/usr/bin/bwrap", true);
        ck_assert(nsr_startswith(h, "usage: /usr/bin/bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n\n    --help "));
        ck_assert(nsr_endswith(h, "\n"));
        ck_assert(!nsr_endswith(h, "\n\n"));
        for (size_t i = 0; i < ELEMENTSOF(bwrap_options); i++) {
                const nsr_option *o = nsr_options_find(bwrap_options[i].name, true);
                /* "    --opt META" left-justified in 29 columns: the text
                 * starts at column 34, as in bwrap's --help. */
                _cleanup_free_ char *left =
                        nsr_asprintf("%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
                _cleanup_free_ char *line = nsr_asprintf("\n    %-28s %.10s", left, o->help);
                ck_assert_msg(strstr(h, line) != NULL, "no help line for %s", o->name);
        }
        for (size_t i = 0; i < ELEMENTSOF(nsrun_options); i++) {
                _cleanup_free_ char *needle = nsr_asprintf("    %s ", nsrun_options[i].name);
                ck_assert_msg(strstr(h, needle) == NULL, "%s in bwrap's help", nsrun_options[i].name);
        }
        /* every line is a usage line, blank, an option or a continuation */
        size_t lines = 0;
        for (const char *l = h; *l; l = strchr(l, '\n') + 1) {
                lines++;
                const char *e = strchr(l, '\n');
                ck_assert_ptr_nonnull(e);
                if (lines <= 2)
                        continue;
                ck_assert_msg(nsr_startswith(l, "    ") && e - l > 33, "odd line: %.*s", (int) (e - l), l);
                ck_assert_msg(l[33] != ' ' && l[32] == ' ', "misaligned: %.*s", (int) (e - l), l);
        }

        _cleanup_free_ char *d = help_text(NULL, true);
        ck_assert(nsr_startswith(d, "usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n\n"));
}
END_TEST

START_TEST(test_help_nsrun) {
        _cleanup_free_ char *h = help_text("nsrun", false);
        ck_assert(nsr_startswith(h, "usage: nsrun [OPTIONS...] [--] COMMAND [ARGS...]\n"));
        for (size_t i = 0; i < ELEMENTSOF(nsrun_options); i++) {
                /* "    --opt" or, after a short form, "    -o, --opt" */
                _cleanup_free_ char *needle = nsr_asprintf("\n    %s", nsrun_options[i].name);
                _cleanup_free_ char *after_short = nsr_asprintf(", %s", nsrun_options[i].name);
                ck_assert_msg(strstr(h, needle) != NULL || strstr(h, after_short) != NULL, "%s not in nsrun's help",
                              nsrun_options[i].name);
        }
        for (size_t i = 0; i < ELEMENTSOF(bwrap_options); i++) {
                _cleanup_free_ char *needle = nsr_asprintf("\n    %s ", bwrap_options[i].name);
                ck_assert_msg(strstr(h, needle) != NULL, "%s not in nsrun's help", bwrap_options[i].name);
        }
}
END_TEST

/* ---- actions, "--" and the command ------------------------------------------ */

START_TEST(test_command) {
        _cleanup_plan_ nsr_plan *a = B_OK("--unshare-pid", "echo", "a", "--bind", "b");
        assert_strv(a->argv, W("echo", "a", "--bind", "b"));
        ck_assert_int_eq(a->n_ops, 0); /* options after the command are its arguments */

        _cleanup_plan_ nsr_plan *b = B_OK("--", "--foo", "-x");
        assert_strv(b->argv, W("--foo", "-x"));
        _cleanup_plan_ nsr_plan *c = B_OK("--unshare-pid", "--", "--", "x");
        assert_strv(c->argv, W("--", "x"));
        _cleanup_plan_ nsr_plan *d = B_OK("", "x");
        assert_strv(d->argv, W("", "x")); /* an empty word is a command */
        _cleanup_plan_ nsr_plan *e = B_OK("true");
        assert_strv(e->argv, W("true"));
        ck_assert(!e->unshare_pid);

        _cleanup_parsed_ parsed r = parse(true, W("--unshare-net", "true"));
        ck_assert_int_eq(r.res.action, NSR_CLI_RUN);
        ck_assert(!r.res.level_prefix);
}
END_TEST

START_TEST(test_no_command) {
        _cleanup_parsed_ parsed a = parse_n(true, W(""), 0);
        ck_assert_int_eq(a.r, 0);
        ck_assert_int_eq(a.res.action, NSR_CLI_NO_COMMAND);
        ck_assert_ptr_null(a.plan->argv);

        _cleanup_parsed_ parsed b = parse(true, W("--unshare-pid"));
        ck_assert_int_eq(b.r, 0);
        ck_assert_int_eq(b.res.action, NSR_CLI_NO_COMMAND);
        ck_assert(b.plan->unshare_pid);
        ck_assert_ptr_null(b.plan->argv);

        _cleanup_parsed_ parsed c = parse(true, W("--unshare-pid", "--"));
        ck_assert_int_eq(c.r, 0);
        ck_assert_int_eq(c.res.action, NSR_CLI_NO_COMMAND);
        ck_assert_ptr_null(c.plan->argv);

        _cleanup_parsed_ parsed d = parse(false, W("--"));
        ck_assert_int_eq(d.res.action, NSR_CLI_NO_COMMAND);
}
END_TEST

START_TEST(test_help_version_actions) {
        _cleanup_parsed_ parsed a = parse(true, W("--help"));
        ck_assert_int_eq(a.r, 0);
        ck_assert_int_eq(a.res.action, NSR_CLI_HELP);

        _cleanup_parsed_ parsed b = parse(true, W("--version"));
        ck_assert_int_eq(b.r, 0);
        ck_assert_int_eq(b.res.action, NSR_CLI_VERSION);

        /* options before it are processed; what follows is never looked at */
        _cleanup_parsed_ parsed c = parse(true, W("--unshare-pid", "--chdir", "a", "--chdir", "b", "--help", "--foo"));
        ck_assert_int_eq(c.r, 0);
        ck_assert_int_eq(c.res.action, NSR_CLI_HELP);
        ck_assert(c.plan->unshare_pid);
        assert_warnings(c.plan, W("0Only the last --chdir option will take effect"));

        _cleanup_parsed_ parsed d = parse(true, W("--version", "--help"));
        ck_assert_int_eq(d.res.action, NSR_CLI_VERSION);
        _cleanup_parsed_ parsed e = parse(false, W("--help", "--version"));
        ck_assert_int_eq(e.res.action, NSR_CLI_HELP);

        /* earlier errors win */
        B_ERR("Unknown option --foo", "--foo", "--help");
        B_ERR("--perms takes an octal argument <= 07777", "--perms", "9", "--version");

        /* after "--" or the command they are arguments */
        _cleanup_plan_ nsr_plan *f = B_OK("--", "--help");
        assert_strv(f->argv, W("--help"));
        _cleanup_plan_ nsr_plan *g = B_OK("ls", "--version");
        assert_strv(g->argv, W("ls", "--version"));

        /* a pending --perms is not checked: --help exits first */
        _cleanup_parsed_ parsed h = parse(true, W("--perms", "0755", "--help"));
        ck_assert_int_eq(h.r, 0);
        ck_assert_int_eq(h.res.action, NSR_CLI_HELP);
}
END_TEST

START_TEST(test_unknown_options) {
        B_ERR("Unknown option --foo", "--foo", "true");
        B_ERR("Unknown option -x", "-x", "true");
        B_ERR("Unknown option -", "-", "true");
        B_ERR("Unknown option ---", "--unshare-pid", "---", "true");
        B_ERR("Unknown option --bind=a", "--bind=a", "b");
        B_ERR("Unknown option --BIND", "--BIND", "a", "b");
        B_ERR("Unknown option -h", "-h");
        B_ERR("Unknown option --trace-bwrap", "--trace-bwrap", "true");
        B_ERR("Unknown option --seccomp-policy", "--seccomp-policy", "default", "true");
        B_ERR("Unknown option --seccomp-policy=default", "--seccomp-policy=default", "true");
        B_ERR("Unknown option --trace-bwrap-fd=3", "--trace-bwrap-fd=3", "true");
        N_ERR("Unknown option --foo", "--foo", "true");
        N_ERR("Unknown option --foo=bar", "--foo=bar", "true");
}
END_TEST

/* ---- arguments missing ------------------------------------------------------ */

static const struct {
        const char *opt;
        const char *msg;
} missing[] = {
        { "--args", "--args takes an argument" },
        { "--argv0", "--argv0 takes one argument" },
        { "--userns", "--userns takes an argument" },
        { "--userns2", "--userns2 takes an argument" },
        { "--pidns", "--pidns takes an argument" },
        { "--uid", "--uid takes an argument" },
        { "--gid", "--gid takes an argument" },
        { "--hostname", "--hostname takes an argument" },
        { "--chdir", "--chdir takes one argument" },
        { "--setenv", "--setenv takes two arguments" },
        { "--unsetenv", "--unsetenv takes an argument" },
        { "--lock-file", "--lock-file takes an argument" },
        { "--sync-fd", "--sync-fd takes an argument" },
        { "--bind", "--bind takes two arguments" },
        { "--bind-try", "--bind-try takes two arguments" },
        { "--dev-bind", "--dev-bind takes two arguments" },
        { "--dev-bind-try", "--dev-bind-try takes two arguments" },
        { "--ro-bind", "--ro-bind takes two arguments" },
        { "--ro-bind-try", "--ro-bind-try takes two arguments" },
        { "--bind-fd", "--bind-fd takes two arguments" },
        { "--ro-bind-fd", "--bind-fd takes two arguments" }, /* sic: bwrap says --bind-fd */
        { "--remount-ro", "--remount-ro takes one argument" },
        { "--overlay", "--overlay takes three arguments" },
        { "--tmp-overlay", "--tmp-overlay takes an argument" },
        { "--ro-overlay", "--ro-overlay takes an argument" },
        { "--exec-label", "--exec-label takes an argument" },
        { "--file-label", "--file-label takes an argument" },
        { "--proc", "--proc takes an argument" },
        { "--dev", "--dev takes an argument" },
        { "--tmpfs", "--tmpfs takes an argument" },
        { "--mqueue", "--mqueue takes an argument" },
        { "--dir", "--dir takes an argument" },
        { "--file", "--file takes two arguments" },
        { "--bind-data", "--bind-data takes two arguments" },
        { "--ro-bind-data", "--ro-bind-data takes two arguments" },
        { "--symlink", "--symlink takes two arguments" },
        { "--seccomp", "--seccomp takes an argument" },
        { "--add-seccomp-fd", "--add-seccomp-fd takes an argument" },
        { "--block-fd", "--block-fd takes an argument" },
        { "--userns-block-fd", "--userns-block-fd takes an argument" },
        { "--info-fd", "--info-fd takes an argument" },
        { "--json-status-fd", "--json-status-fd takes an argument" },
        { "--cap-add", "--cap-add takes an argument" },
        { "--cap-drop", "--cap-drop takes an argument" },
        { "--perms", "--perms takes an argument" },
        { "--size", "--size takes an argument" },
        { "--chmod", "--chmod takes two arguments" },
};

START_TEST(test_missing_arguments) {
        for (size_t i = 0; i < ELEMENTSOF(missing); i++) {
                const nsr_option *o = nsr_options_find(missing[i].opt, true);
                ck_assert_ptr_nonnull(o);
                /* with 0 .. nargs-1 of its arguments present, as the last words */
                for (unsigned have = 0; have < o->nargs; have++) {
                        const char *w[5] = { missing[i].opt, NULL, NULL, NULL, NULL };
                        for (unsigned k = 0; k < have; k++)
                                w[1 + k] = "3";
                        err_(true, missing[i].msg, w, __LINE__);
                        err_(false, missing[i].msg, w, __LINE__);
                }
        }
        /* every bwrap option with arguments is in the list above (--overlay-src
         * has its own rule, see test_overlay_src_trailing) */
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(bwrap_options); i++)
                if (bwrap_options[i].nargs > 0 && !streq(bwrap_options[i].name, "--overlay-src"))
                        n++;
        ck_assert_uint_eq(n, ELEMENTSOF(missing));

        N_ERR("--trace-bwrap-fd takes an argument", "--trace-bwrap-fd");
        N_ERR("--seccomp-policy takes an argument", "--seccomp-policy");
}
END_TEST

START_TEST(test_missing_argument_in_args_file) {
        /* the count is of the words left in the file, not on the command line */
        int fd = args_pipe(W("--bind", "a"), false);
        fdstr f = fd_to_str(fd);
        B_ERR("--bind takes two arguments", "--args", f.s, "b", "true");
}
END_TEST

/* ---- fds -------------------------------------------------------------------- */

/* Options whose first argument is an fd that is not read while parsing. */
static const char *const fd_options[] = {
        "--userns",  "--userns2",        "--pidns",        "--sync-fd", "--bind-fd",  "--ro-bind-fd",
        "--file",    "--bind-data",      "--ro-bind-data", "--seccomp", "--block-fd", "--userns-block-fd",
        "--info-fd", "--json-status-fd",
};

START_TEST(test_invalid_fd) {
        static const char *const bad[] = { "x", "", "-1", "3x", "3 ", "1.5", "0x3", "--", "2147483648", "-2" };
        for (size_t i = 0; i < ELEMENTSOF(fd_options); i++)
                for (size_t j = 0; j < ELEMENTSOF(bad); j++) {
                        _cleanup_free_ char *want = nsr_asprintf("Invalid fd: %s", bad[j]);
                        err_(true, want, W(fd_options[i], bad[j], "/dest", "true"), __LINE__);
                }
        /* those read while parsing check the number first */
        B_ERR("Invalid fd: x", "--args", "x", "true");
        B_ERR("Invalid fd: -1", "--add-seccomp-fd", "-1", "true");
        N_ERR("Invalid fd: x", "--trace-bwrap-fd", "x", "true");
        N_ERR("Invalid fd: ", "--trace-bwrap-fd=", "true");
}
END_TEST

START_TEST(test_fd_values) {
        /* bwrap parses fds with strtol: leading blanks and '+' pass, and "-0"
         * is 0. fd 0 is a valid fd (0.11.1 honours --userns 0 and friends). */
        static const struct {
                const char *s;
                int fd;
        } good[] = { { "0", 0 },
                     { "3", 3 },
                     { "007", 7 },
                     { " 4", 4 },
                     { "+5", 5 },
                     { "-0", 0 },
                     { "2147483647", 2147483647 } };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                const char *s = good[i].s;
                _cleanup_plan_ nsr_plan *p =
                        B_OK("--userns", s, "--userns2", s, "--pidns", s, "--sync-fd", s, "--block-fd", s,
                             "--userns-block-fd", s, "--info-fd", s, "--json-status-fd", s, "--seccomp", s, "--bind-fd",
                             s, "/a", "--ro-bind-fd", s, "/b", "--file", s, "/c", "--bind-data", s, "/d",
                             "--ro-bind-data", s, "/e", "true");
                int fd = good[i].fd;
                ck_assert_int_eq(p->userns_fd, fd);
                ck_assert_int_eq(p->userns2_fd, fd);
                ck_assert_int_eq(p->pidns_fd, fd);
                ck_assert_int_eq(p->sync_fd, fd);
                ck_assert_int_eq(p->block_fd, fd);
                ck_assert_int_eq(p->userns_block_fd, fd);
                ck_assert_int_eq(p->info_fd, fd);
                ck_assert_int_eq(p->json_status_fd, fd);
                ck_assert_uint_eq(p->n_seccomp, 1);
                ck_assert_int_eq(p->seccomp[0].fd, fd);
                ck_assert_uint_eq(p->n_ops, 5);
                for (size_t k = 0; k < 5; k++)
                        ck_assert_int_eq(p->ops[k].fd, fd);
                ck_assert_ptr_null(p->warnings);
        }

        _cleanup_plan_ nsr_plan *unset = B_OK("true");
        ck_assert_int_eq(unset->userns_fd, -1);
        ck_assert_int_eq(unset->userns2_fd, -1);
        ck_assert_int_eq(unset->pidns_fd, -1);
        ck_assert_int_eq(unset->sync_fd, -1);
        ck_assert_int_eq(unset->block_fd, -1);
        ck_assert_int_eq(unset->userns_block_fd, -1);
        ck_assert_int_eq(unset->info_fd, -1);
        ck_assert_int_eq(unset->json_status_fd, -1);
        ck_assert_int_eq(unset->trace_bwrap_fd, -1);
        ck_assert_uint_eq(unset->n_seccomp, 0);
}
END_TEST

/* ---- the "Only the last" warnings ------------------------------------------- */

static const struct {
        const char *opt, *v1, *v2;
} last_wins[] = {
        { "--chdir", "/a", "/b" },         { "--sync-fd", "3", "4" }, { "--block-fd", "3", "4" },
        { "--userns-block-fd", "3", "4" }, { "--info-fd", "3", "4" }, { "--json-status-fd", "3", "4" },
        { "--seccomp", "3", "4" },         { "--userns", "3", "4" },  { "--userns2", "3", "4" },
        { "--pidns", "3", "4" },           { "--uid", "1", "2" },     { "--gid", "1", "2" },
        { "--hostname", "a", "b" },
};

START_TEST(test_last_wins_warnings) {
        for (size_t i = 0; i < ELEMENTSOF(last_wins); i++) {
                const char *o = last_wins[i].opt;
                _cleanup_free_ char *w0 = nsr_asprintf("0Only the last %s option will take effect", o);
                _cleanup_free_ char *w1 = nsr_asprintf("1Only the last %s option will take effect", o);

                _cleanup_plan_ nsr_plan *a = ok_(true, W(o, last_wins[i].v1, o, last_wins[i].v2, "true"), __LINE__);
                assert_warnings(a, W(w0));
                ck_assert(!NSR_WARNING_LEVEL_PREFIX(a->warnings[0]));
                ck_assert_str_eq(NSR_WARNING_TEXT(a->warnings[0]), w0 + 1);

                /* three times: two warnings */
                _cleanup_plan_ nsr_plan *b =
                        ok_(true, W(o, last_wins[i].v1, o, last_wins[i].v2, o, last_wins[i].v1, "true"), __LINE__);
                assert_warnings(b, W(w0, w0));

                /* --level-prefix counts from where it appears */
                _cleanup_plan_ nsr_plan *c = ok_(
                        true, W(o, last_wins[i].v1, o, last_wins[i].v2, "--level-prefix", o, last_wins[i].v1, "true"),
                        __LINE__);
                assert_warnings(c, W(w0, w1));
                ck_assert(NSR_WARNING_LEVEL_PREFIX(c->warnings[1]));
                ck_assert_str_eq(NSR_WARNING_TEXT(c->warnings[1]), w0 + 1);

                /* once: no warning */
                _cleanup_plan_ nsr_plan *d = ok_(true, W(o, last_wins[i].v1, "true"), __LINE__);
                ck_assert_ptr_null(d->warnings);
        }
}
END_TEST

START_TEST(test_last_wins_values) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--chdir", "/a", "--chdir", "/b", "--sync-fd", "3", "--sync-fd", "4", "--block-fd", "5",
                     "--block-fd", "6", "--info-fd", "7", "--info-fd", "8", "--seccomp", "9", "--seccomp", "10",
                     "--uid", "1", "--uid", "2", "--gid", "3", "--gid", "4", "true");
        ck_assert_str_eq(p->chdir, "/b");
        ck_assert_int_eq(p->sync_fd, 4);
        ck_assert_int_eq(p->block_fd, 6);
        ck_assert_int_eq(p->info_fd, 8);
        ck_assert_uint_eq(p->n_seccomp, 1);
        ck_assert_int_eq(p->seccomp[0].fd, 10);
        ck_assert_int_eq(p->seccomp[0].kind, NSR_SECCOMP_FD);
        ck_assert_uint_eq(p->uid, 2);
        ck_assert_uint_eq(p->gid, 4);
        ck_assert_uint_eq(nsr_strv_length(p->warnings), 7);
}
END_TEST

START_TEST(test_warning_before_error) {
        /* The warning comes before the new value is checked, and a failed
         * parse still hands back the plan with its warnings. */
        _cleanup_parsed_ parsed a = parse(true, W("--info-fd", "3", "--info-fd", "x", "true"));
        ck_assert_int_lt(a.r, 0);
        ck_assert_str_eq(a.msg, "Invalid fd: x");
        assert_warnings(a.plan, W("0Only the last --info-fd option will take effect"));

        _cleanup_parsed_ parsed b = parse(true, W("--level-prefix", "--uid", "1", "--uid", "-1"));
        ck_assert_str_eq(b.msg, "Invalid uid: -1");
        assert_warnings(b.plan, W("1Only the last --uid option will take effect"));
        ck_assert(b.res.level_prefix);

        _cleanup_parsed_ parsed c = parse(true, W("--chdir", "a", "--chdir", "b", "--foo"));
        ck_assert_str_eq(c.msg, "Unknown option --foo");
        assert_warnings(c.plan, W("0Only the last --chdir option will take effect"));
        ck_assert(!c.res.level_prefix);
}
END_TEST

START_TEST(test_no_warning_when_repeated) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--lock-file", "/a", "--lock-file", "/a", "--setenv", "A", "1", "--setenv", "A", "2", "--unsetenv",
                     "A", "--unsetenv", "A", "--clearenv", "--clearenv", "--bind", "/a", "/a", "--bind", "/a", "/a",
                     "--cap-add", "ALL", "--cap-add", "ALL", "--cap-drop", "ALL", "--cap-drop", "ALL", "--unshare-pid",
                     "--unshare-pid", "--tmpfs", "/t", "--tmpfs", "/t", "--dir", "/d", "--dir", "/d", "--level-prefix",
                     "--level-prefix", "--new-session", "--new-session", "--overlay-src", "/x", "--overlay-src", "/x",
                     "--ro-overlay", "/o", "true");
        ck_assert_ptr_null(p->warnings);
        _cleanup_plan_ nsr_plan *q =
                N_OK("--seccomp-policy", "a", "--seccomp-policy", "b", "--trace-bwrap", "--trace-bwrap", "true");
        ck_assert_ptr_null(q->warnings);
        _cleanup_plan_ nsr_plan *r = N_OK("--trace-bwrap-fd", "3", "--trace-bwrap-fd=4", "true");
        assert_warnings(r, W("0Only the last --trace-bwrap-fd option will take effect"));
        ck_assert_int_eq(r->trace_bwrap_fd, 4);
}
END_TEST

START_TEST(test_project_options) {
        _cleanup_plan_ nsr_plan *p = N_OK("-p", "/a", "--project=/b", "--home", "hide", "--hide", "~/.x", "--rw", "/c",
                                          "--ro=/d", "--keep-env", "TOKEN", "--allow-nested", "--state-dir", "s",
                                          "--report", "r.json", "--report-fd=5", "--keep", "-q", "--verbose",
                                          "--events-fd", "6", "--keep-days=3", "--backup-limit", "500M", "true");
        ck_assert_str_eq(p->proj.projects[0], "/a");
        ck_assert_str_eq(p->proj.projects[1], "/b");
        ck_assert_int_eq(p->proj.home, NSR_HOME_HIDE);
        ck_assert_str_eq(p->proj.hide[0], "~/.x");
        ck_assert_str_eq(p->proj.rw[0], "/c");
        ck_assert_str_eq(p->proj.ro[0], "/d");
        ck_assert_str_eq(p->proj.keep_env[0], "TOKEN");
        ck_assert(p->proj.allow_nested && p->proj.keep && p->proj.quiet && p->proj.verbose && !p->proj.discard);
        ck_assert_str_eq(p->proj.state_dir, "s");
        ck_assert_str_eq(p->proj.report_file, "r.json");
        ck_assert_int_eq(p->proj.report_fd, 5);
        ck_assert_int_eq(p->proj.events_fd, 6);
        ck_assert_int_eq(p->proj.keep_days, 3);
        ck_assert_uint_eq(p->proj.backup_limit, (uint64_t) 500 << 20);
        N_ERR("--home takes overlay, ro or hide, not \"rw\"", "--home", "rw", "true");
        N_ERR("--hide needs a path", "--hide", "", "true");
        {
                /* relative paths are relative to the current dir */
                _cleanup_free_ char *cwd = getcwd(NULL, 0);
                _cleanup_plan_ nsr_plan *rel = N_OK("-p", "/a", "--hide", "rel", "--rw=../x", "--ro", "y/z", "true");
                _cleanup_free_ char *h = nsr_asprintf("%s/rel", cwd), *w = nsr_asprintf("%s/../x", cwd),
                                    *o = nsr_asprintf("%s/y/z", cwd);
                ck_assert_str_eq(rel->proj.hide[0], h);
                ck_assert_str_eq(rel->proj.rw[0], w);
                ck_assert_str_eq(rel->proj.ro[0], o);
        }
        N_ERR("--backup-limit takes a size such as 2G, not \"lots\"", "--backup-limit", "lots", "true");
        N_ERR("--backup-limit takes a size such as 2G, not \"0\"", "--backup-limit", "0", "true");
        N_ERR("--keep-days takes a number of days, not \"-1\"", "--keep-days", "-1", "true");
        ck_assert_int_eq(p->proj.sandbox, NSR_SANDBOX_REQUIRED);
        ck_assert(!p->proj.no_overlay && p->proj.snapshot_limit == 0);
        _cleanup_plan_ nsr_plan *be =
                N_OK("-p", "/a", "--sandbox=best-effort", "--no-overlay", "--snapshot-limit", "2G", "true");
        ck_assert_int_eq(be->proj.sandbox, NSR_SANDBOX_BEST_EFFORT);
        ck_assert(be->proj.no_overlay);
        ck_assert_uint_eq(be->proj.snapshot_limit, (uint64_t) 2 << 30);
        _cleanup_plan_ nsr_plan *off = N_OK("-p", "/a", "--sandbox", "off", "--sandbox", "required", "true");
        ck_assert_int_eq(off->proj.sandbox, NSR_SANDBOX_REQUIRED); /* the last one wins */
        N_ERR("--sandbox takes required, best-effort or off, not \"none\"", "--sandbox", "none", "true");
        N_ERR("--snapshot-limit takes a size such as 1G, not \"big\"", "--snapshot-limit=big", "true");
        B_ERR("Unknown option --sandbox", "--sandbox", "off", "true");
        B_ERR("Unknown option --no-overlay", "--no-overlay", "true");
        N_ERR("--project needs a directory", "--project", "", "true");
        N_ERR("-p needs a directory", "-p", "", "true");
        N_ERR("Invalid fd: x", "--events-fd", "x", "true");
        B_ERR("Unknown option --project", "--project", "/a", "true");
        B_ERR("Unknown option -p", "-p", "/a", "true");
        /* --share-net records that it came last: project mode's own
         * --unshare-net must give way to it */
        _cleanup_plan_ nsr_plan *q = N_OK("--unshare-net", "--share-net", "true");
        ck_assert(q->share_net && !q->unshare_net);
        _cleanup_plan_ nsr_plan *r = N_OK("--share-net", "--unshare-all", "true");
        ck_assert(!r->share_net && r->unshare_net);
        uint64_t v = 0;
        ck_assert_int_eq(nsr_parse_size_suffix("2G", &v), 0);
        ck_assert_uint_eq(v, (uint64_t) 2 << 30);
        ck_assert_int_eq(nsr_parse_size_suffix("10KiB", &v), 0);
        ck_assert_uint_eq(v, 10240);
        ck_assert_int_eq(nsr_parse_size_suffix("7", &v), 0);
        ck_assert_uint_eq(v, 7);
        ck_assert_int_lt(nsr_parse_size_suffix("1X", &v), 0);
        ck_assert_int_lt(nsr_parse_size_suffix("99999999999T", &v), 0);
}
END_TEST

START_TEST(test_level_prefix) {
        _cleanup_parsed_ parsed a = parse(true, W("--level-prefix", "true"));
        ck_assert_int_eq(a.r, 0);
        ck_assert(a.plan->level_prefix);
        ck_assert(a.res.level_prefix);

        _cleanup_parsed_ parsed b = parse(true, W("--level-prefix", "--foo"));
        ck_assert_int_lt(b.r, 0);
        ck_assert(b.res.level_prefix);

        /* an error before --level-prefix has no prefix */
        _cleanup_parsed_ parsed c = parse(true, W("--foo", "--level-prefix"));
        ck_assert_int_lt(c.r, 0);
        ck_assert(!c.res.level_prefix);

        _cleanup_parsed_ parsed d = parse(true, W("true", "--level-prefix"));
        ck_assert(!d.res.level_prefix);
        ck_assert(!d.plan->level_prefix);

        _cleanup_parsed_ parsed e = parse(true, W("--level-prefix", "--help"));
        ck_assert_int_eq(e.res.action, NSR_CLI_HELP);
        ck_assert(e.res.level_prefix);
}
END_TEST

/* ---- namespaces and ids ----------------------------------------------------- */

START_TEST(test_unshare_flags) {
        _cleanup_plan_ nsr_plan *none = B_OK("true");
        ck_assert(!none->unshare_user && !none->unshare_user_try && !none->unshare_ipc && !none->unshare_pid);
        ck_assert(!none->unshare_net && !none->unshare_uts && !none->unshare_cgroup && !none->unshare_cgroup_try);

        static const char *const flags[] = {
                "--unshare-user", "--unshare-user-try", "--unshare-ipc",    "--unshare-pid",
                "--unshare-net",  "--unshare-uts",      "--unshare-cgroup", "--unshare-cgroup-try",
        };
        for (size_t i = 0; i < ELEMENTSOF(flags); i++) {
                _cleanup_plan_ nsr_plan *p = ok_(true, W(flags[i], "true"), __LINE__);
                bool got[] = { p->unshare_user, p->unshare_user_try, p->unshare_ipc,    p->unshare_pid,
                               p->unshare_net,  p->unshare_uts,      p->unshare_cgroup, p->unshare_cgroup_try };
                for (size_t k = 0; k < ELEMENTSOF(got); k++)
                        ck_assert_msg(got[k] == (k == i), "%s set field %zu", flags[i], k);
        }
}
END_TEST

START_TEST(test_unshare_all_share_net) {
        _cleanup_plan_ nsr_plan *a = B_OK("--unshare-all", "true");
        ck_assert(a->unshare_user_try && a->unshare_ipc && a->unshare_pid && a->unshare_net && a->unshare_uts &&
                  a->unshare_cgroup_try);
        ck_assert(!a->unshare_user);
        ck_assert(!a->unshare_cgroup);

        _cleanup_plan_ nsr_plan *b = B_OK("--unshare-all", "--share-net", "true");
        ck_assert(!b->unshare_net);
        ck_assert(b->unshare_pid);
        /* order matters */
        _cleanup_plan_ nsr_plan *c = B_OK("--share-net", "--unshare-all", "true");
        ck_assert(c->unshare_net);
        _cleanup_plan_ nsr_plan *d = B_OK("--unshare-net", "--share-net", "true");
        ck_assert(!d->unshare_net);
        _cleanup_plan_ nsr_plan *e = B_OK("--unshare-all", "--share-net", "--unshare-net", "true");
        ck_assert(e->unshare_net);
}
END_TEST

START_TEST(test_userns_flags) {
        _cleanup_plan_ nsr_plan *p = B_OK("--disable-userns", "--assert-userns-disabled", "true");
        ck_assert(p->disable_userns);
        ck_assert(p->assert_userns_disabled);
        _cleanup_plan_ nsr_plan *q = B_OK("true");
        ck_assert(!q->disable_userns);
        ck_assert(!q->assert_userns_disabled);
}
END_TEST

START_TEST(test_uid_gid) {
        _cleanup_plan_ nsr_plan *p = B_OK("--uid", "0", "--gid", "1000", "true");
        ck_assert(p->has_uid && p->has_gid);
        ck_assert_uint_eq(p->uid, 0);
        ck_assert_uint_eq(p->gid, 1000);
        _cleanup_plan_ nsr_plan *q = B_OK("true");
        ck_assert(!q->has_uid && !q->has_gid);
        /* strtol: blanks and '+' pass */
        _cleanup_plan_ nsr_plan *r = B_OK("--uid", " 5", "--gid", "+6", "true");
        ck_assert_uint_eq(r->uid, 5);
        ck_assert_uint_eq(r->gid, 6);
        _cleanup_plan_ nsr_plan *s = B_OK("--uid", "2147483647", "true");
        ck_assert_uint_eq(s->uid, 2147483647);

        static const char *const bad[] = { "x", "", "-1", "1x", "1 ", "0x10", "1.0", "2147483648" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *u = nsr_asprintf("Invalid uid: %s", bad[i]);
                _cleanup_free_ char *g = nsr_asprintf("Invalid gid: %s", bad[i]);
                err_(true, u, W("--uid", bad[i], "true"), __LINE__);
                err_(true, g, W("--gid", bad[i], "true"), __LINE__);
        }
}
END_TEST

START_TEST(test_hostname) {
        _cleanup_plan_ nsr_plan *p = B_OK("--hostname", "a", "--bind", "/x", "/x", "--hostname", "b", "true");
        /* every --hostname is an op of its own, run in order: the last wins */
        ck_assert_uint_eq(p->n_ops, 3);
        ck_assert_int_eq(op_at(p, 0)->type, NSR_OP_HOSTNAME);
        ck_assert_str_eq(op_at(p, 0)->dest, "a");
        ck_assert_ptr_null(op_at(p, 0)->source);
        ck_assert_int_eq(op_at(p, 1)->type, NSR_OP_BIND);
        ck_assert_int_eq(op_at(p, 2)->type, NSR_OP_HOSTNAME);
        ck_assert_str_eq(op_at(p, 2)->dest, "b");
        assert_warnings(p, W("0Only the last --hostname option will take effect"));
        _cleanup_plan_ nsr_plan *q = B_OK("--hostname", "", "true");
        ck_assert_str_eq(op_at(q, 0)->dest, "");
}
END_TEST

/* ---- environment, chdir, argv0 ---------------------------------------------- */

START_TEST(test_env_edits) {
        _cleanup_plan_ nsr_plan *p = B_OK("--setenv", "A", "1", "--unsetenv", "B", "--clearenv", "--setenv", "C",
                                          "x y=z", "--setenv", "D", "", "--unsetenv", "C", "true");
        ck_assert_uint_eq(p->n_env, 6);
        ck_assert_int_eq(p->env[0].action, NSR_ENV_SET);
        ck_assert_str_eq(p->env[0].name, "A");
        ck_assert_str_eq(p->env[0].value, "1");
        ck_assert_int_eq(p->env[1].action, NSR_ENV_UNSET);
        ck_assert_str_eq(p->env[1].name, "B");
        ck_assert_ptr_null(p->env[1].value);
        ck_assert_int_eq(p->env[2].action, NSR_ENV_CLEAR);
        ck_assert_ptr_null(p->env[2].name);
        ck_assert_int_eq(p->env[3].action, NSR_ENV_SET);
        ck_assert_str_eq(p->env[3].value, "x y=z");
        ck_assert_str_eq(p->env[4].name, "D");
        ck_assert_str_eq(p->env[4].value, "");
        ck_assert_int_eq(p->env[5].action, NSR_ENV_UNSET);
        ck_assert_str_eq(p->env[5].name, "C");

        /* setenv(3) and unsetenv(3) refuse an empty name and a name with '=' */
        B_ERR("setenv failed", "--setenv", "A=B", "1", "true");
        B_ERR("setenv failed", "--setenv", "", "1", "true");
        B_ERR("setenv failed", "--setenv", "=", "1", "true");
        B_ERR("unsetenv failed", "--unsetenv", "A=B", "true");
        B_ERR("unsetenv failed", "--unsetenv", "", "true");
        _cleanup_plan_ nsr_plan *q = B_OK("--setenv", "A B", "=", "--unsetenv", "weird name", "true");
        ck_assert_str_eq(q->env[0].name, "A B");
        ck_assert_str_eq(q->env[0].value, "=");
}
END_TEST

START_TEST(test_chdir_argv0) {
        _cleanup_plan_ nsr_plan *p = B_OK("--chdir", "/work dir", "--argv0", "sh", "true");
        ck_assert_str_eq(p->chdir, "/work dir");
        ck_assert_str_eq(p->argv0, "sh");
        _cleanup_plan_ nsr_plan *q = B_OK("true");
        ck_assert_ptr_null(q->chdir);
        ck_assert_ptr_null(q->argv0);
        _cleanup_plan_ nsr_plan *r = B_OK("--argv0", "", "--chdir", "", "true");
        ck_assert_str_eq(r->argv0, "");
        ck_assert_str_eq(r->chdir, "");

        B_ERR("--argv0 used multiple times", "--argv0", "a", "--argv0", "b", "true");
        B_ERR("--argv0 used multiple times", "--argv0", "a", "--argv0", "a", "true");
        /* the argument count comes first */
        B_ERR("--argv0 takes one argument", "--argv0", "a", "--argv0");
}
END_TEST

/* ---- mount ops -------------------------------------------------------------- */

static void assert_op(const nsr_op *op, nsr_op_type type, const char *source, const char *dest, int fd,
                      unsigned flags) {
        ck_assert_int_eq(op->type, type);
        if (source)
                ck_assert_str_eq(op->source, source);
        else
                ck_assert_ptr_null(op->source);
        ck_assert_str_eq(op->dest, dest);
        ck_assert_int_eq(op->fd, fd);
        ck_assert_uint_eq(op->flags, flags);
        ck_assert_ptr_null(op->workdir);
        ck_assert_ptr_null(op->overlay_srcs);
        ck_assert(op->size == 0);
}

START_TEST(test_bind_family) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--bind", "/s1", "/d1", "--bind-try", "/s2", "/d2", "--dev-bind", "/s3", "/d3", "--dev-bind-try",
                     "/s4", "/d4", "--ro-bind", "/s5", "/d5", "--ro-bind-try", "/s6", "/d6", "--bind-fd", "7", "/d7",
                     "--ro-bind-fd", "8", "/d8", "--remount-ro", "/d9", "true");
        ck_assert_uint_eq(p->n_ops, 9);
        assert_op(op_at(p, 0), NSR_OP_BIND, "/s1", "/d1", -1, 0);
        assert_op(op_at(p, 1), NSR_OP_BIND, "/s2", "/d2", -1, NSR_OPF_TRY);
        assert_op(op_at(p, 2), NSR_OP_DEV_BIND, "/s3", "/d3", -1, 0);
        assert_op(op_at(p, 3), NSR_OP_DEV_BIND, "/s4", "/d4", -1, NSR_OPF_TRY);
        assert_op(op_at(p, 4), NSR_OP_RO_BIND, "/s5", "/d5", -1, 0);
        assert_op(op_at(p, 5), NSR_OP_RO_BIND, "/s6", "/d6", -1, NSR_OPF_TRY);
        assert_op(op_at(p, 6), NSR_OP_BIND_FD, NULL, "/d7", 7, 0);
        assert_op(op_at(p, 7), NSR_OP_RO_BIND_FD, NULL, "/d8", 8, 0);
        assert_op(op_at(p, 8), NSR_OP_REMOUNT_RO, NULL, "/d9", -1, 0);
        for (size_t i = 0; i < p->n_ops; i++) {
                ck_assert_uint_eq(op_at(p, i)->perms, NSR_PERMS_UNSET);
                ck_assert_uint_eq(nsr_op_perms(op_at(p, i)), 0);
        }
        /* relative paths and words that look like options are taken as they are */
        _cleanup_plan_ nsr_plan *q = B_OK("--bind", "--", "-x", "--ro-bind", "rel", "", "true");
        assert_op(op_at(q, 0), NSR_OP_BIND, "--", "-x", -1, 0);
        assert_op(op_at(q, 1), NSR_OP_RO_BIND, "rel", "", -1, 0);
}
END_TEST

START_TEST(test_simple_dest_ops) {
        _cleanup_plan_ nsr_plan *p = B_OK("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--mqueue",
                                          "/dev/mqueue", "--dir", "/d", "--symlink", "usr/lib", "/lib", "true");
        ck_assert_uint_eq(p->n_ops, 6);
        assert_op(op_at(p, 0), NSR_OP_PROC, NULL, "/proc", -1, 0);
        assert_op(op_at(p, 1), NSR_OP_DEV, NULL, "/dev", -1, 0);
        assert_op(op_at(p, 2), NSR_OP_TMPFS, NULL, "/tmp", -1, 0);
        assert_op(op_at(p, 3), NSR_OP_MQUEUE, NULL, "/dev/mqueue", -1, 0);
        assert_op(op_at(p, 4), NSR_OP_DIR, NULL, "/d", -1, 0);
        assert_op(op_at(p, 5), NSR_OP_SYMLINK, "usr/lib", "/lib", -1, 0);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 0)), 0);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 1)), 0);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 2)), 0755);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 3)), 0);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 4)), 0755);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 5)), 0);
}
END_TEST

START_TEST(test_data_ops) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--file", "3", "/f", "--bind-data", "4", "/b", "--ro-bind-data", "5", "/r", "true");
        ck_assert_uint_eq(p->n_ops, 3);
        assert_op(op_at(p, 0), NSR_OP_FILE, NULL, "/f", 3, 0);
        assert_op(op_at(p, 1), NSR_OP_BIND_DATA, NULL, "/b", 4, 0);
        assert_op(op_at(p, 2), NSR_OP_RO_BIND_DATA, NULL, "/r", 5, 0);
        ck_assert_uint_eq(op_at(p, 0)->perms, NSR_PERMS_UNSET);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 0)), 0666);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 1)), 0600);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 2)), 0600);
}
END_TEST

START_TEST(test_chmod) {
        _cleanup_plan_ nsr_plan *p = B_OK("--chmod", "1777", "/tmp", "--chmod", "0", "/x", "--chmod", " +644", "/y",
                                          "--chmod", "-0", "/z", "true");
        ck_assert_uint_eq(p->n_ops, 4);
        assert_op(op_at(p, 0), NSR_OP_CHMOD, NULL, "/tmp", -1, 0);
        ck_assert_uint_eq(op_at(p, 0)->perms, 01777);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 0)), 01777);
        ck_assert_uint_eq(op_at(p, 1)->perms, 0);
        ck_assert_uint_eq(op_at(p, 2)->perms, 0644);
        ck_assert_uint_eq(op_at(p, 3)->perms, 0);

        static const char *const bad[] = { "8",    "",     "10000",
                                           "0x7",  "abc",  "-1",
                                           "755 ", "7 55", "99999999999999999999999" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                err_(true, "--chmod takes an octal argument <= 07777", W("--chmod", bad[i], "/x", "true"), __LINE__);
}
END_TEST

START_TEST(test_labels) {
        /* nsrun is built without SELinux, like a bwrap without it */
        B_ERR("labeling not supported on this system", "--exec-label", "system_u:system_r:container_t:s0", "true");
        B_ERR("labeling not supported on this system", "--file-label", "x", "true");
        N_ERR("labeling not supported on this system", "--file-label", "", "true");
}
END_TEST

/* ---- --perms and --size ----------------------------------------------------- */

START_TEST(test_perms_consumers) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--perms", "0700", "--tmpfs", "/t", "--perms", "0750", "--dir", "/d", "--perms", "0644", "--file",
                     "3", "/f", "--perms", "0640", "--bind-data", "4", "/b", "--perms", "0444", "--ro-bind-data", "5",
                     "/r", "--perms", "0", "--dir", "/z", "--dir", "/default", "true");
        ck_assert_uint_eq(p->n_ops, 7);
        static const mode_t want[] = { 0700, 0750, 0644, 0640, 0444, 0 };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                ck_assert_uint_eq(op_at(p, i)->perms, want[i]);
                ck_assert_uint_eq(nsr_op_perms(op_at(p, i)), want[i]);
        }
        /* --perms applies to the next op only */
        ck_assert_uint_eq(op_at(p, 6)->perms, NSR_PERMS_UNSET);
        ck_assert_uint_eq(nsr_op_perms(op_at(p, 6)), 0755);
}
END_TEST

START_TEST(test_perms_values) {
        /* strtoul(s, &end, 8): blanks and '+' pass, "-0" is 0 */
        static const struct {
                const char *s;
                mode_t m;
        } good[] = { { "7777", 07777 }, { "01777", 01777 }, { "755", 0755 },     { " 755", 0755 },
                     { "+755", 0755 },  { "-0", 0 },        { "00000755", 0755 } };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                _cleanup_plan_ nsr_plan *p = ok_(true, W("--perms", good[i].s, "--dir", "/d", "true"), __LINE__);
                ck_assert_uint_eq(op_at(p, 0)->perms, good[i].m);
        }
        static const char *const bad[] = { "",      "8",      "10000",
                                           "0x1ff", "rwx",    "-1",
                                           "755 ",  "0755\n", "77777777777777777777777" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                err_(true, "--perms takes an octal argument <= 07777", W("--perms", bad[i], "--dir", "/d", "true"),
                     __LINE__);
}
END_TEST

START_TEST(test_perms_errors) {
        B_ERR("--perms given twice for the same action", "--perms", "0700", "--perms", "0700", "--dir", "/d", "true");
        /* "twice" is checked before the value */
        B_ERR("--perms given twice for the same action", "--perms", "0700", "--perms", "bad", "--dir", "/d");
        B_ERR("--perms given twice for the same action", "--perms", "0700", "--size", "1", "--perms", "0700");

        /* every option that does not create a file leaves --perms pending */
        const char *const *const not_consumers[] = {
                W("--bind", "/a", "/b"),
                W("--ro-bind", "/a", "/b"),
                W("--dev-bind", "/a", "/b"),
                W("--bind-try", "/a", "/b"),
                W("--bind-fd", "3", "/b"),
                W("--ro-bind-fd", "3", "/b"),
                W("--remount-ro", "/b"),
                W("--proc", "/proc"),
                W("--dev", "/dev"),
                W("--mqueue", "/m"),
                W("--symlink", "a", "/b"),
                W("--chmod", "0755", "/b"),
                W("--hostname", "h"),
                W("--overlay-src", "/o"),
                W("--unshare-pid"),
                W("--setenv", "A", "B"),
                W("--chdir", "/"),
                W("--lock-file", "/l"),
                W("--cap-add", "ALL"),
                W("--seccomp", "3"),
                W("--info-fd", "3"),
                W("--level-prefix"),
                W("--clearenv"),
                W("--uid", "0"),
        };
        for (size_t i = 0; i < ELEMENTSOF(not_consumers); i++) {
                const char *w[8] = { "--perms", "0700" };
                size_t n = 2;
                for (size_t k = 0; not_consumers[i][k]; k++)
                        w[n++] = not_consumers[i][k];
                w[n++] = "true";
                w[n] = NULL;
                err_(true, "--perms must be followed by an option that creates a file", w, __LINE__);
        }
        /* the check comes after the option is handled: its own errors win */
        B_ERR("Invalid fd: x", "--perms", "0700", "--bind-fd", "x", "/b");
        B_ERR("--chmod takes an octal argument <= 07777", "--perms", "0700", "--chmod", "9", "/b");
        /* a trailing --perms is never consumed, but nothing complains when
         * it is the last word: bwrap's check runs after an option, and "--"
         * and the command end the loop before it */
        _cleanup_plan_ nsr_plan *a = B_OK("--perms", "0700", "--", "true");
        ck_assert_uint_eq(a->n_ops, 0);
        _cleanup_plan_ nsr_plan *b = B_OK("--perms", "0700", "true", "--dir", "/d");
        ck_assert_uint_eq(b->n_ops, 0);
        assert_strv(b->argv, W("true", "--dir", "/d"));
        _cleanup_parsed_ parsed c = parse(true, W("--perms", "0700"));
        ck_assert_int_eq(c.r, 0);
        ck_assert_int_eq(c.res.action, NSR_CLI_NO_COMMAND);
        _cleanup_plan_ nsr_plan *d = B_OK("--size", "1", "--", "true");
        ck_assert_uint_eq(d->n_ops, 0);
}
END_TEST

START_TEST(test_size) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--size", "1048576", "--tmpfs", "/a", "--size", "010", "--perms", "0700", "--tmpfs", "/b",
                     "--perms", "01777", "--size", "0x1000", "--tmpfs", "/c", "--tmpfs", "/d", "true");
        ck_assert_uint_eq(p->n_ops, 4);
        ck_assert(op_at(p, 0)->size == 1048576);
        ck_assert_uint_eq(op_at(p, 0)->perms, NSR_PERMS_UNSET);
        ck_assert(op_at(p, 1)->size == 8); /* strtoull base 0: leading 0 is octal */
        ck_assert_uint_eq(op_at(p, 1)->perms, 0700);
        ck_assert(op_at(p, 2)->size == 4096);
        ck_assert_uint_eq(op_at(p, 2)->perms, 01777);
        ck_assert(op_at(p, 3)->size == 0);
        ck_assert_uint_eq(op_at(p, 3)->perms, NSR_PERMS_UNSET);

        _cleanup_plan_ nsr_plan *max = B_OK("--size", "9223372036854775807", "--tmpfs", "/m", "true");
        ck_assert(op_at(max, 0)->size == UINT64_C(9223372036854775807));
        _cleanup_plan_ nsr_plan *hex = B_OK("--size", "0X7fffffffffffffff", "--tmpfs", "/m", "true");
        ck_assert(op_at(hex, 0)->size == UINT64_C(9223372036854775807));

        static const char *const bad[] = { "0",  "",   " 1",  "+1",  "-1", "1k", "1 ",
                                           "0x", "x1", "1.5", "0x0", "09", "00", "18446744073709551616" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                err_(true, "--size takes a non-zero number of bytes", W("--size", bad[i], "--tmpfs", "/t", "true"),
                     __LINE__);
        B_ERR("--size (for tmpfs) is limited to 9223372036854775807", "--size", "9223372036854775808", "--tmpfs", "/t");
        B_ERR("--size (for tmpfs) is limited to 9223372036854775807", "--size", "18446744073709551615", "--tmpfs",
              "/t");
        B_ERR("--size (for tmpfs) is limited to 9223372036854775807", "--size", "0x8000000000000000");

        B_ERR("--size given twice for the same action", "--size", "1", "--size", "2", "--tmpfs", "/t");
        B_ERR("--size given twice for the same action", "--size", "1", "--perms", "0700", "--size", "x");
        B_ERR("--size must be followed by --tmpfs", "--size", "1", "--dir", "/d", "true");
        B_ERR("--size must be followed by --tmpfs", "--size", "1", "--unshare-pid", "true");
        B_ERR("--size must be followed by --tmpfs", "--size", "1", "--perms", "0700", "--dir", "/d", "true");
        B_ERR("--size must be followed by --tmpfs", "--size", "1", "--overlay-src", "/d", "true");
        /* --perms is checked first when both are pending */
        B_ERR("--perms must be followed by an option that creates a file", "--size", "1", "--perms", "0700", "--bind",
              "/a", "/b");
}
END_TEST

/* ---- overlays --------------------------------------------------------------- */

START_TEST(test_overlays) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--overlay-src", "/l1", "--overlay-src", "/l2", "--overlay", "/rw", "/work", "/o1",
                     "--overlay-src", "/l3", "--tmp-overlay", "/o2", "--overlay-src", "/l4", "--overlay-src", "/l5",
                     "--overlay-src", "/l6", "--ro-overlay", "/o3", "true");
        ck_assert_uint_eq(p->n_ops, 3);
        const nsr_op *o1 = op_at(p, 0), *o2 = op_at(p, 1), *o3 = op_at(p, 2);
        ck_assert_int_eq(o1->type, NSR_OP_OVERLAY);
        ck_assert_str_eq(o1->source, "/rw");
        ck_assert_str_eq(o1->workdir, "/work");
        ck_assert_str_eq(o1->dest, "/o1");
        assert_strv(o1->overlay_srcs, W("/l1", "/l2")); /* bottom first, command-line order */
        ck_assert_int_eq(o2->type, NSR_OP_TMP_OVERLAY);
        ck_assert_ptr_null(o2->source);
        ck_assert_ptr_null(o2->workdir);
        ck_assert_str_eq(o2->dest, "/o2");
        assert_strv(o2->overlay_srcs, W("/l3"));
        ck_assert_int_eq(o3->type, NSR_OP_RO_OVERLAY);
        ck_assert_str_eq(o3->dest, "/o3");
        assert_strv(o3->overlay_srcs, W("/l4", "/l5", "/l6"));
        for (size_t i = 0; i < 3; i++) {
                ck_assert_uint_eq(nsr_op_perms(op_at(p, i)), 0);
                ck_assert_int_eq(op_at(p, i)->fd, -1);
        }

        /* --overlay-src takes the next word whatever it is */
        _cleanup_plan_ nsr_plan *q =
                B_OK("--overlay-src", "--", "--overlay-src", "--help", "--ro-overlay", "/o", "true");
        assert_strv(op_at(q, 0)->overlay_srcs, W("--", "--help"));
}
END_TEST

START_TEST(test_overlay_errors) {
        const char *follow = "--overlay-src must be followed by another --overlay-src or one of --overlay, "
                             "--tmp-overlay, or --ro-overlay";
        B_ERR("--overlay requires at least one --overlay-src", "--overlay", "/rw", "/w", "/d", "true");
        B_ERR("--tmp-overlay requires at least one --overlay-src", "--tmp-overlay", "/d", "true");
        B_ERR("--ro-overlay requires at least two --overlay-src", "--ro-overlay", "/d", "true");
        B_ERR("--ro-overlay requires at least two --overlay-src", "--overlay-src", "/a", "--ro-overlay", "/d", "true");
        /* sources are used up by each overlay */
        B_ERR("--tmp-overlay requires at least one --overlay-src", "--overlay-src", "/a", "--tmp-overlay", "/d",
              "--tmp-overlay", "/e", "true");
        /* the argument count is checked before the sources */
        B_ERR("--overlay takes three arguments", "--overlay", "/rw", "/w");
        B_ERR("--overlay takes three arguments", "--overlay-src", "/a", "--overlay", "/rw", "/w");

        B_ERR(follow, "--overlay-src", "/a", "--bind", "/x", "/y", "true");
        B_ERR(follow, "--overlay-src", "/a", "--tmpfs", "/x", "true");
        B_ERR(follow, "--overlay-src", "/a", "--unshare-pid", "true");
        /* a pending source is caught after parsing, unlike --perms */
        B_ERR(follow, "--overlay-src", "/a", "true");
        B_ERR(follow, "--overlay-src", "/a", "--");
        B_ERR(follow, "--overlay-src", "/a", "--", "true");
        B_ERR(follow, "--overlay-src", "/a");
        B_ERR(follow, "--overlay-src", "/a", "--overlay-src", "/b");
        /* right after --perms only the source check applies, and it fails */
        B_ERR(follow, "--overlay-src", "/a", "--perms", "0700", "--bind", "/x", "/y");
        B_ERR(follow, "--overlay-src", "/a", "--perms", "0700", "--tmp-overlay", "/x");
        /* with both pending after another option, --perms is reported first */
        B_ERR("--perms must be followed by an option that creates a file", "--perms", "0700", "--overlay-src", "/a",
              "--tmp-overlay", "/x");
}
END_TEST

START_TEST(test_overlay_src_trailing) {
        /* bwrap does not count --overlay-src's arguments: a trailing one ends
         * parsing and is then reported as pending. */
        const char *follow = "--overlay-src must be followed by another --overlay-src or one of --overlay, "
                             "--tmp-overlay, or --ro-overlay";
        B_ERR(follow, "--overlay-src");
        B_ERR(follow, "--unshare-pid", "--overlay-src");
        B_ERR(follow, "--overlay-src", "/a", "--overlay-src");
        N_ERR(follow, "--overlay-src");
        /* it is an option like any other: a pending --perms is reported */
        B_ERR("--perms must be followed by an option that creates a file", "--perms", "0700", "--overlay-src");

        /* the same at the end of an --args file, reported after --args */
        int fd = args_pipe(W("--overlay-src"), true);
        fdstr f = fd_to_str(fd);
        B_ERR(follow, "--args", f.s, "--overlay-src", "/a", "--tmp-overlay", "/t", "true");
}
END_TEST

/* ---- seccomp ---------------------------------------------------------------- */

START_TEST(test_seccomp_fd) {
        _cleanup_plan_ nsr_plan *p = B_OK("--seccomp", "3", "true");
        ck_assert_uint_eq(p->n_seccomp, 1);
        ck_assert_int_eq(p->seccomp[0].kind, NSR_SECCOMP_FD);
        ck_assert_int_eq(p->seccomp[0].fd, 3);
        ck_assert_ptr_null(p->seccomp[0].data);
        ck_assert_uint_eq(p->seccomp[0].len, 0);
}
END_TEST

START_TEST(test_add_seccomp_fd) {
        static const char prog1[16] = "0123456789abcdef";
        static const char prog2[8] = "ABCDEFGH";
        int fd1 = pipe_with(prog1, sizeof(prog1));
        int fd2 = pipe_with(prog2, sizeof(prog2));
        int fd3 = pipe_with("", 0);
        fdstr f1 = fd_to_str(fd1), f2 = fd_to_str(fd2), f3 = fd_to_str(fd3);
        _cleanup_plan_ nsr_plan *p =
                B_OK("--add-seccomp-fd", f1.s, "--add-seccomp-fd", f2.s, "--add-seccomp-fd", f3.s, "true");
        ck_assert_uint_eq(p->n_seccomp, 3);
        for (size_t i = 0; i < 3; i++)
                ck_assert_int_eq(p->seccomp[i].kind, NSR_SECCOMP_DATA);
        ck_assert_int_eq(p->seccomp[0].fd, fd1);
        ck_assert_uint_eq(p->seccomp[0].len, 16);
        ck_assert_mem_eq(p->seccomp[0].data, prog1, 16);
        ck_assert_uint_eq(p->seccomp[1].len, 8);
        ck_assert_mem_eq(p->seccomp[1].data, prog2, 8);
        ck_assert_uint_eq(p->seccomp[2].len, 0); /* a multiple of 8 */
        ck_assert_ptr_null(p->warnings);
        /* read while parsing, then closed */
        ck_assert_int_eq(fcntl(fd1, F_GETFD), -1);
        ck_assert_int_eq(fcntl(fd2, F_GETFD), -1);
        ck_assert_int_eq(fcntl(fd3, F_GETFD), -1);
}
END_TEST

START_TEST(test_seccomp_errors) {
        static const size_t bad_lens[] = { 1, 7, 9, 15, 4095 };
        char buf[4096] = { 0 };
        for (size_t i = 0; i < ELEMENTSOF(bad_lens); i++) {
                int fd = pipe_with(buf, bad_lens[i]);
                fdstr f = fd_to_str(fd);
                err_(true, "Invalid seccomp data, must be multiple of 8", W("--add-seccomp-fd", f.s, "true"), __LINE__);
                ck_assert_int_eq(fcntl(fd, F_GETFD), -1); /* closed all the same */
        }

        int fd = pipe_with(buf, 8);
        fdstr f = fd_to_str(fd);
        B_ERR("--seccomp cannot be combined with --add-seccomp-fd", "--add-seccomp-fd", f.s, "--seccomp", "3", "true");
        B_ERR("--add-seccomp-fd cannot be combined with --seccomp", "--seccomp", "3", "--add-seccomp-fd", "4", "true");
        /* the combination is checked before the fd */
        B_ERR("--add-seccomp-fd cannot be combined with --seccomp", "--seccomp", "3", "--add-seccomp-fd", "x");
        int fd2 = pipe_with(buf, 8);
        fdstr f2 = fd_to_str(fd2);
        B_ERR("--seccomp cannot be combined with --add-seccomp-fd", "--add-seccomp-fd", f2.s, "--seccomp", "x");

        /* an fd that cannot be read */
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        fdstr w = fd_to_str(p[1]);
        B_ERR("Can't read seccomp data: Bad file descriptor", "--add-seccomp-fd", w.s, "true");
        close(p[0]);
        close(p[1]);
        B_ERR("Can't read seccomp data: Bad file descriptor", "--add-seccomp-fd", "999", "true");
}
END_TEST

/* ---- capabilities ----------------------------------------------------------- */

START_TEST(test_caps) {
        _cleanup_plan_ nsr_plan *p =
                B_OK("--cap-drop", "ALL", "--cap-add", "CAP_NET_RAW", "--cap-add", "cap_sys_admin", "--cap-drop", "all",
                     "--cap-add", "12", "--cap-add", "Cap_Chown", "--cap-drop", "aLl", "true");
        ck_assert_uint_eq(p->n_caps, 7);
        static const struct {
                bool add;
                int cap;
        } want[] = {
                { false, -1 }, { true, 13 }, { true, 21 }, { false, -1 }, { true, 12 }, { true, 0 }, { false, -1 }
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                ck_assert_int_eq(p->caps[i].add, want[i].add);
                ck_assert_int_eq(p->caps[i].cap, want[i].cap);
        }
        _cleanup_plan_ nsr_plan *q = B_OK("true");
        ck_assert_uint_eq(q->n_caps, 0);

        B_ERR("unknown cap: foo", "--cap-add", "foo", "true");
        B_ERR("unknown cap: foo", "--cap-drop", "foo", "true");
        B_ERR("unknown cap: ", "--cap-add", "", "true");
        B_ERR("unknown cap: sys_admin", "--cap-add", "sys_admin", "true");
        B_ERR("unknown cap: ALLL", "--cap-drop", "ALLL", "true");
        B_ERR("unknown cap: 64", "--cap-add", "64", "true");
}
END_TEST

/* ---- process options -------------------------------------------------------- */

START_TEST(test_process_flags) {
        _cleanup_plan_ nsr_plan *p = B_OK("--new-session", "--die-with-parent", "--as-pid-1", "--lock-file", "/a",
                                          "--lock-file", "/b", "--lock-file", "/a", "true");
        ck_assert(p->new_session);
        ck_assert(p->die_with_parent);
        ck_assert(p->as_pid_1);
        assert_strv(p->lock_files, W("/a", "/b", "/a"));
        _cleanup_plan_ nsr_plan *q = B_OK("true");
        ck_assert(!q->new_session && !q->die_with_parent && !q->as_pid_1 && !q->level_prefix);
        ck_assert_ptr_null(q->lock_files);
        ck_assert_uint_eq(q->n_ops, 0);
        ck_assert_uint_eq(q->n_env, 0);
        ck_assert(!q->resolved && !q->needs_devpts);
}
END_TEST

/* ---- --args ----------------------------------------------------------------- */

START_TEST(test_args_basic) {
        /* with and without the trailing NUL */
        for (int nul = 0; nul < 2; nul++) {
                int fd = args_pipe(W("--unshare-pid", "--setenv", "A", "", "--chdir", "/x y"), nul);
                fdstr f = fd_to_str(fd);
                _cleanup_plan_ nsr_plan *p = B_OK("--unshare-ipc", "--args", f.s, "--unshare-net", "true", "a");
                ck_assert(p->unshare_pid && p->unshare_ipc && p->unshare_net);
                ck_assert_str_eq(p->chdir, "/x y");
                ck_assert_uint_eq(p->n_env, 1);
                ck_assert_str_eq(p->env[0].value, "");
                assert_strv(p->argv, W("true", "a"));
                ck_assert_int_eq(fcntl(fd, F_GETFD), -1); /* closed after reading */
        }
}
END_TEST

START_TEST(test_args_equals_argv) {
        /* --args FD is the same as its words in place */
        const char *const *words = W("--ro-bind", "/usr", "/usr", "--perms", "0700", "--tmpfs", "/tmp", "--overlay-src",
                                     "/a", "--tmp-overlay", "/o", "--setenv", "X", "1", "--cap-add", "ALL");
        int fd = args_pipe(words, true);
        fdstr f = fd_to_str(fd);
        _cleanup_plan_ nsr_plan *a = B_OK("--unshare-pid", "--args", f.s, "--dir", "/d", "sh", "-c", "x");
        _cleanup_plan_ nsr_plan *b = B_OK("--unshare-pid", "--ro-bind", "/usr", "/usr", "--perms", "0700", "--tmpfs",
                                          "/tmp", "--overlay-src", "/a", "--tmp-overlay", "/o", "--setenv", "X", "1",
                                          "--cap-add", "ALL", "--dir", "/d", "sh", "-c", "x");
        _cleanup_free_ char *d = test_plan_diff(a, b, 0);
        ck_assert_msg(d == NULL, "%s", d);
}
END_TEST

START_TEST(test_args_empty_words) {
        /* "\0\0" is two empty words; an empty word inside the file is not an
         * option, so it ends the file */
        int fd = pipe_with("--chdir\0\0--unshare-pid\0", 23);
        fdstr f = fd_to_str(fd);
        _cleanup_plan_ nsr_plan *p = B_OK("--args", f.s, "true");
        ck_assert_str_eq(p->chdir, "");
        ck_assert(p->unshare_pid);

        int fd2 = pipe_with("\0--unshare-pid", 14);
        fdstr f2 = fd_to_str(fd2);
        _cleanup_plan_ nsr_plan *q = B_OK("--args", f2.s, "true");
        ck_assert(!q->unshare_pid);

        /* an empty file adds nothing */
        int fd3 = pipe_with("", 0);
        fdstr f3 = fd_to_str(fd3);
        _cleanup_plan_ nsr_plan *r = B_OK("--args", f3.s, "true");
        assert_strv(r->argv, W("true"));
}
END_TEST

START_TEST(test_args_command_dropped) {
        /* "--" or a command inside the file ends the file; the rest is dropped
         * and the command must come from the real argv */
        int fd = args_pipe(W("--unshare-pid", "--", "cmd", "--unshare-net"), true);
        fdstr f = fd_to_str(fd);
        _cleanup_plan_ nsr_plan *p = B_OK("--args", f.s, "--unshare-ipc", "true");
        ck_assert(p->unshare_pid && p->unshare_ipc);
        ck_assert(!p->unshare_net);
        assert_strv(p->argv, W("true"));

        int fd2 = args_pipe(W("--unshare-pid", "echo", "--unshare-net"), true);
        fdstr f2 = fd_to_str(fd2);
        _cleanup_parsed_ parsed q = parse(true, W("--args", f2.s));
        ck_assert_int_eq(q.r, 0);
        ck_assert(q.plan->unshare_pid);
        ck_assert(!q.plan->unshare_net);
        ck_assert_int_eq(q.res.action, NSR_CLI_NO_COMMAND);
        ck_assert_ptr_null(q.plan->argv);

        /* a --perms pending before "--" in the file is caught after --args */
        int fd3 = args_pipe(W("--perms", "0700", "--", "--dir", "/d"), true);
        fdstr f3 = fd_to_str(fd3);
        B_ERR("--perms must be followed by an option that creates a file", "--args", f3.s, "--dir", "/d", "true");
}
END_TEST

START_TEST(test_args_pending_modifiers) {
        /* what is left pending at the end of the file is reported after --args,
         * even when the next real option would have consumed it */
        int fd = args_pipe(W("--perms", "0700"), true);
        fdstr f = fd_to_str(fd);
        B_ERR("--perms must be followed by an option that creates a file", "--args", f.s, "--dir", "/d", "true");
        int fd2 = args_pipe(W("--size", "1"), true);
        fdstr f2 = fd_to_str(fd2);
        B_ERR("--size must be followed by --tmpfs", "--args", f2.s, "--tmpfs", "/d", "true");
        int fd3 = args_pipe(W("--overlay-src", "/a"), true);
        fdstr f3 = fd_to_str(fd3);
        B_ERR("--overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or "
              "--ro-overlay",
              "--args", f3.s, "--tmp-overlay", "/d", "true");
}
END_TEST

START_TEST(test_args_modifiers_across_files) {
        /* pending state is shared: the file's first option may consume a
         * --perms or --overlay-src given before --args */
        int fd = args_pipe(W("--dir", "/d"), true);
        fdstr f = fd_to_str(fd);
        _cleanup_plan_ nsr_plan *p = B_OK("--perms", "0700", "--args", f.s, "true");
        ck_assert_uint_eq(op_at(p, 0)->perms, 0700);

        int fd2 = args_pipe(W("--overlay-src", "/b", "--tmp-overlay", "/o"), true);
        fdstr f2 = fd_to_str(fd2);
        _cleanup_plan_ nsr_plan *q = B_OK("--overlay-src", "/a", "--args", f2.s, "true");
        assert_strv(op_at(q, 0)->overlay_srcs, W("/a", "/b"));

        /* but any other first option reports it from inside the file */
        int fd3 = args_pipe(W("--unshare-pid", "--dir", "/d"), true);
        fdstr f3 = fd_to_str(fd3);
        B_ERR("--perms must be followed by an option that creates a file", "--perms", "0700", "--args", f3.s, "true");
}
END_TEST

START_TEST(test_args_nested) {
        int fd = args_pipe(W("--unshare-pid", "--args", "0"), true);
        fdstr f = fd_to_str(fd);
        B_ERR("--args not supported in arguments file", "--args", f.s, "true");
        /* checked before the argument count */
        int fd2 = args_pipe(W("--args"), true);
        fdstr f2 = fd_to_str(fd2);
        B_ERR("--args not supported in arguments file", "--args", f2.s, "true");
}
END_TEST

START_TEST(test_args_repeated_and_special) {
        int fd1 = args_pipe(W("--unshare-pid", "--chdir", "/a"), true);
        int fd2 = args_pipe(W("--unshare-net", "--chdir", "/b"), true);
        fdstr f1 = fd_to_str(fd1), f2 = fd_to_str(fd2);
        _cleanup_plan_ nsr_plan *p = B_OK("--args", f1.s, "--args", f2.s, "true");
        ck_assert(p->unshare_pid && p->unshare_net);
        ck_assert_str_eq(p->chdir, "/b");
        assert_warnings(p, W("0Only the last --chdir option will take effect"));

        /* --help and --level-prefix work from a file */
        int fd3 = args_pipe(W("--level-prefix", "--help"), true);
        fdstr f3 = fd_to_str(fd3);
        _cleanup_parsed_ parsed h = parse(true, W("--args", f3.s, "true"));
        ck_assert_int_eq(h.r, 0);
        ck_assert_int_eq(h.res.action, NSR_CLI_HELP);
        ck_assert(h.res.level_prefix);

        /* errors inside the file are the usual ones */
        int fd4 = args_pipe(W("--bogus"), true);
        fdstr f4 = fd_to_str(fd4);
        B_ERR("Unknown option --bogus", "--args", f4.s, "true");

        /* nsrun's --opt=VALUE works from a file too */
        int fd5 = args_pipe(W("--seccomp-policy=default"), true);
        fdstr f5 = fd_to_str(fd5);
        _cleanup_plan_ nsr_plan *n = N_OK("--args", f5.s, "true");
        assert_strv(n->seccomp_policies, W("default"));

        B_ERR("Can't read --args data: Bad file descriptor", "--args", "999", "true");
}
END_TEST

/* ---- the 9000-argument limit ------------------------------------------------ */

static parsed parse_many(size_t n_fill, const char *fill, const char *const *head, const char *const *tail) {
        size_t nh = wlen(head), nt = wlen(tail), n = nh + n_fill + nt;
        const char **w = nsr_malloc0((n + 1) * sizeof(char *));
        for (size_t i = 0; i < nh; i++)
                w[i] = head[i];
        for (size_t i = 0; i < n_fill; i++)
                w[nh + i] = fill;
        for (size_t i = 0; i < nt; i++)
                w[nh + n_fill + i] = tail[i];
        parsed p = parse_n(true, w, n);
        free(w);
        return p;
}

START_TEST(test_max_args) {
        /* 9000 words after argv[0], the command included, are fine */
        _cleanup_parsed_ parsed a = parse_many(8998, "--unshare-pid", W("--unshare-ipc"), W("true"));
        ck_assert_msg(a.r == 0, "%s", a.msg);
        ck_assert(a.plan->unshare_pid && a.plan->unshare_ipc);
        _cleanup_parsed_ parsed b = parse_many(8999, "--unshare-pid", W("--unshare-ipc"), W("true"));
        ck_assert_int_lt(b.r, 0);
        ck_assert_str_eq(b.msg, "Exceeded maximum number of arguments 9000");
        /* the command's own arguments count */
        _cleanup_parsed_ parsed c = parse_many(8999, "x", W("true"), W("x"));
        ck_assert_str_eq(c.msg, "Exceeded maximum number of arguments 9000");
        _cleanup_parsed_ parsed d = parse_many(8998, "x", W("true"), W("x"));
        ck_assert_msg(d.r == 0, "%s", d.msg);
        ck_assert_uint_eq(nsr_strv_length(d.plan->argv), 9000);
}
END_TEST

static int empty_words_pipe(size_t n) {
        char *zeros = nsr_malloc0(n);
        int fd = pipe_with(zeros, n);
        free(zeros);
        return fd;
}

START_TEST(test_max_args_file) {
        /* every word in an --args file counts, empty words too; the real
         * argv here has 3 words */
        int fd = empty_words_pipe(8997);
        fdstr f = fd_to_str(fd);
        _cleanup_parsed_ parsed a = parse(true, W("--args", f.s, "true"));
        ck_assert_msg(a.r == 0, "%s", a.msg);

        int fd2 = empty_words_pipe(8998);
        fdstr f2 = fd_to_str(fd2);
        _cleanup_parsed_ parsed b = parse(true, W("--args", f2.s, "true"));
        ck_assert_int_lt(b.r, 0);
        ck_assert_str_eq(b.msg, "Exceeded maximum number of arguments 9000");

        /* two files add up */
        int fd3 = empty_words_pipe(4000);
        int fd4 = empty_words_pipe(4996);
        fdstr f3 = fd_to_str(fd3), f4 = fd_to_str(fd4);
        _cleanup_parsed_ parsed c = parse(true, W("--args", f3.s, "--args", f4.s, "true"));
        ck_assert_str_eq(c.msg, "Exceeded maximum number of arguments 9000");
}
END_TEST

/* ---- nsrun-only options ----------------------------------------------------- */

START_TEST(test_nsrun_options) {
        _cleanup_plan_ nsr_plan *p =
                N_OK("--seccomp-policy=default", "--seccomp-policy", "/etc/x.policy", "--seccomp-policy=a=b",
                     "--trace-bwrap", "--trace-bwrap-fd=3", "--unshare-pid", "true");
        assert_strv(p->seccomp_policies, W("default", "/etc/x.policy", "a=b"));
        ck_assert(p->trace_bwrap);
        ck_assert_int_eq(p->trace_bwrap_fd, 3);
        ck_assert(p->unshare_pid);
        _cleanup_plan_ nsr_plan *q = N_OK("--trace-bwrap-fd", "4", "true");
        ck_assert_int_eq(q->trace_bwrap_fd, 4);
        _cleanup_plan_ nsr_plan *r = N_OK("true");
        ck_assert(!r->trace_bwrap);
        ck_assert_ptr_null(r->seccomp_policies);

        /* "=" is only for nsrun's own options */
        N_ERR("Unknown option --chdir=/x", "--chdir=/x", "true");
        N_ERR("Unknown option --bind=/a", "--bind=/a", "/b", "true");
        N_ERR("Unknown option --unshare-pid=1", "--unshare-pid=1", "true");
        N_ERR("Unknown option --trace-bwrap=1", "--trace-bwrap=1", "true");
        N_ERR("Unknown option -x=1", "-x=1", "true");
        N_ERR("--seccomp-policy needs a name or a path", "--seccomp-policy=", "true");
        N_ERR("--seccomp-policy needs a name or a path", "--seccomp-policy", "", "true");
        N_ERR("Invalid fd: -1", "--trace-bwrap-fd=-1", "true");
        /* after the command they are the command's */
        _cleanup_plan_ nsr_plan *s = N_OK("true", "--seccomp-policy=x");
        ck_assert_ptr_null(s->seccomp_policies);
}
END_TEST

/* ---- validation ------------------------------------------------------------- */

static const nsr_caller ROOT = { .uid = 0, .gid = 0, .userns_possible = true, .cgroupns_possible = true };
static const nsr_caller ROOT_OLD = { .uid = 0, .gid = 0, .userns_possible = false, .cgroupns_possible = false };
static const nsr_caller USER = { .uid = 1000, .gid = 1000, .userns_possible = true, .cgroupns_possible = true };
static const nsr_caller USER_OLD = { .uid = 1000, .gid = 1000, .userns_possible = false, .cgroupns_possible = false };

static nsr_plan *valid_(const nsr_caller *c, const char *const *w, int line) {
        nsr_plan *p = ok_(true, w, line);
        nsr_error e = { 0 };
        _cleanup_free_ char *text = join(w);
        int r = nsr_plan_validate(p, c, &e);
        ck_assert_msg(r == 0, "line %d: [%s] as uid %u: unexpected \"%s\"", line, text, (unsigned) c->uid, e.msg);
        return p;
}

static void invalid_(const nsr_caller *c, const char *want, const char *const *w, int line) {
        _cleanup_plan_ nsr_plan *p = ok_(true, w, line);
        nsr_error e = { 0 };
        _cleanup_free_ char *text = join(w);
        int r = nsr_plan_validate(p, c, &e);
        char msg[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(&e, msg, sizeof(msg));
        ck_assert_msg(r < 0, "line %d: [%s] as uid %u: valid, want \"%s\"", line, text, (unsigned) c->uid, want);
        ck_assert_msg(streq(msg, want), "line %d: [%s] as uid %u: \"%s\", want \"%s\"", line, text, (unsigned) c->uid,
                      msg, want);
}

#define V_OK(c, ...)        valid_((c), W(__VA_ARGS__), __LINE__)
#define V_ERR(c, want, ...) invalid_((c), (want), W(__VA_ARGS__), __LINE__)

static const nsr_caller *const everyone[] = { &ROOT, &ROOT_OLD, &USER, &USER_OLD };

START_TEST(test_validate_userns_block_fd) {
        for (size_t i = 0; i < ELEMENTSOF(everyone); i++) {
                const nsr_caller *c = everyone[i];
                /* the implicit user namespace comes after this check, and
                 * --unshare-all only asks for one if possible */
                V_ERR(c, "--userns-block-fd requires --unshare-user", "--userns-block-fd", "3", "--info-fd", "4",
                      "true");
                V_ERR(c, "--userns-block-fd requires --unshare-user", "--unshare-all", "--userns-block-fd", "3",
                      "--info-fd", "4", "true");
                V_ERR(c, "--userns-block-fd requires --info-fd", "--unshare-user", "--userns-block-fd", "3", "true");
                _cleanup_plan_ _unused_ nsr_plan *p =
                        V_OK(c, "--unshare-user", "--userns-block-fd", "3", "--info-fd", "4", "true");
                /* even without a command */
                V_ERR(c, "--userns-block-fd requires --unshare-user", "--userns-block-fd", "3");
        }
}
END_TEST

START_TEST(test_validate_userns) {
        for (size_t i = 0; i < ELEMENTSOF(everyone); i++) {
                const nsr_caller *c = everyone[i];
                V_ERR(c, "--userns is not compatible with --unshare-user", "--userns", "3", "--unshare-user", "true");
                V_ERR(c, "--userns is not compatible with --unshare-user", "--userns", "3", "--unshare-user",
                      "--unshare-user-try", "true");
                V_ERR(c, "--userns is not compatible with --unshare-user-try", "--userns", "3", "--unshare-user-try",
                      "true");
                V_ERR(c, "--userns is not compatible with --unshare-user-try", "--userns", "3", "--unshare-all",
                      "true");
                /* --userns 0 is a real fd */
                V_ERR(c, "--userns is not compatible with --unshare-user", "--userns", "0", "--unshare-user", "true");
                _cleanup_plan_ nsr_plan *p = V_OK(c, "--userns", "3", "--uid", "5", "--gid", "6", "true");
                ck_assert(!p->unshare_user); /* --userns: no implicit user namespace */
                ck_assert_uint_eq(p->uid, 5);
                ck_assert_uint_eq(p->gid, 6);
        }
}
END_TEST

START_TEST(test_validate_disable_userns) {
        for (size_t i = 0; i < ELEMENTSOF(everyone); i++) {
                const nsr_caller *c = everyone[i];
                V_ERR(c, "--disable-userns requires --unshare-user", "--disable-userns", "true");
                V_ERR(c, "--disable-userns requires --unshare-user", "--unshare-all", "--disable-userns", "true");
                V_ERR(c, "--disable-userns is not compatible with --userns-block-fd", "--unshare-user",
                      "--disable-userns", "--userns-block-fd", "3", "--info-fd", "4", "true");
                _cleanup_plan_ nsr_plan *p = V_OK(c, "--unshare-user", "--disable-userns", "true");
                ck_assert(p->disable_userns);
        }
        /* --assert-userns-disabled needs nothing */
        _cleanup_plan_ nsr_plan *q = V_OK(&ROOT, "--assert-userns-disabled", "true");
        ck_assert(q->assert_userns_disabled);
}
END_TEST

START_TEST(test_validate_order) {
        /* several mistakes: the first in bwrap's order is reported */
        V_ERR(&ROOT, "--userns-block-fd requires --unshare-user", "--userns", "3", "--disable-userns",
              "--userns-block-fd", "4", "--hostname", "h", "--as-pid-1", "--uid", "5", "true");
        V_ERR(&ROOT, "--userns-block-fd requires --info-fd", "--unshare-user", "--userns", "3", "--userns-block-fd",
              "4", "true");
        V_ERR(&ROOT, "--userns is not compatible with --unshare-user", "--unshare-user", "--userns", "3",
              "--disable-userns", "true");
        V_ERR(&ROOT, "--disable-userns requires --unshare-user", "--userns", "3", "--disable-userns", "--uid", "5",
              "true");
        V_ERR(&ROOT, "Specifying --uid requires --unshare-user or --userns", "--uid", "5", "--gid", "5", "--hostname",
              "h", "--as-pid-1", "--unshare-cgroup", "true");
        V_ERR(&ROOT, "Specifying --gid requires --unshare-user or --userns", "--gid", "5", "--hostname", "h",
              "--as-pid-1", "true");
        V_ERR(&ROOT_OLD, "Specifying --hostname requires --unshare-uts", "--hostname", "h", "--as-pid-1",
              "--unshare-cgroup", "true");
        V_ERR(&ROOT_OLD, "Specifying --as-pid-1 requires --unshare-pid", "--as-pid-1", "--lock-file", "/l",
              "--unshare-cgroup", "true");
        V_ERR(&ROOT_OLD, "Specifying --as-pid-1 and --lock-file is not permitted", "--unshare-pid", "--as-pid-1",
              "--lock-file", "/l", "--unshare-cgroup", "true");
        V_ERR(&ROOT_OLD, "Cannot create new cgroup namespace because the kernel does not support it",
              "--unshare-cgroup", "true");
}
END_TEST

START_TEST(test_validate_implicit_user) {
        _cleanup_plan_ nsr_plan *r = V_OK(&ROOT, "true");
        ck_assert(!r->unshare_user);
        _cleanup_plan_ nsr_plan *u = V_OK(&USER, "true");
        ck_assert(u->unshare_user);
        /* implied even when the kernel seems to refuse: clone will tell */
        _cleanup_plan_ nsr_plan *uo = V_OK(&USER_OLD, "true");
        ck_assert(uo->unshare_user);
        _cleanup_plan_ nsr_plan *un = V_OK(&USER, "--userns", "3", "true");
        ck_assert(!un->unshare_user);
        ck_assert_uint_eq(nsr_plan_unshared(r), NSR_NS_MNT);
        ck_assert_uint_eq(nsr_plan_unshared(u), NSR_NS_MNT | NSR_NS_USER);
}
END_TEST

START_TEST(test_validate_user_try) {
        _cleanup_plan_ nsr_plan *a = V_OK(&ROOT, "--unshare-user-try", "true");
        ck_assert(a->unshare_user);
        ck_assert(!a->unshare_user_try);
        _cleanup_plan_ nsr_plan *b = V_OK(&ROOT_OLD, "--unshare-user-try", "true");
        ck_assert(!b->unshare_user);
        ck_assert(!b->unshare_user_try);
        _cleanup_plan_ nsr_plan *c = V_OK(&USER_OLD, "--unshare-user-try", "true");
        ck_assert(c->unshare_user); /* implicit anyway */
        ck_assert(!c->unshare_user_try);
        /* resolved before the command check */
        _cleanup_plan_ nsr_plan *d = V_OK(&ROOT, "--unshare-user-try");
        ck_assert(d->unshare_user);
        ck_assert(!d->unshare_user_try);
}
END_TEST

START_TEST(test_validate_cgroup) {
        _cleanup_plan_ nsr_plan *a = V_OK(&ROOT, "--unshare-cgroup-try", "true");
        ck_assert(a->unshare_cgroup);
        ck_assert(!a->unshare_cgroup_try);
        _cleanup_plan_ nsr_plan *b = V_OK(&ROOT_OLD, "--unshare-cgroup-try", "true");
        ck_assert(!b->unshare_cgroup);
        ck_assert(!b->unshare_cgroup_try);
        _cleanup_plan_ nsr_plan *c = V_OK(&USER, "--unshare-cgroup", "true");
        ck_assert(c->unshare_cgroup);
        V_ERR(&USER_OLD, "Cannot create new cgroup namespace because the kernel does not support it",
              "--unshare-cgroup", "true");
        V_ERR(&ROOT_OLD, "Cannot create new cgroup namespace because the kernel does not support it",
              "--unshare-cgroup", "--unshare-cgroup-try", "true");
        _cleanup_plan_ nsr_plan *d = V_OK(&USER, "--unshare-all", "true");
        ck_assert_uint_eq(nsr_plan_unshared(d),
                          NSR_NS_MNT | NSR_NS_USER | NSR_NS_IPC | NSR_NS_PID | NSR_NS_NET | NSR_NS_UTS | NSR_NS_CGROUP);
        _cleanup_plan_ nsr_plan *e = V_OK(&ROOT_OLD, "--unshare-all", "--share-net", "true");
        ck_assert_uint_eq(nsr_plan_unshared(e), NSR_NS_MNT | NSR_NS_IPC | NSR_NS_PID | NSR_NS_UTS);
}
END_TEST

START_TEST(test_validate_ids) {
        /* root without a user namespace may only "change" to its own ids */
        V_ERR(&ROOT, "Specifying --uid requires --unshare-user or --userns", "--uid", "5", "true");
        V_ERR(&ROOT, "Specifying --gid requires --unshare-user or --userns", "--gid", "5", "true");
        V_ERR(&ROOT_OLD, "Specifying --uid requires --unshare-user or --userns", "--unshare-user-try", "--uid", "5",
              "true");
        _cleanup_plan_ _unused_ nsr_plan *a = V_OK(&ROOT, "--uid", "0", "--gid", "0", "true");
        _cleanup_plan_ nsr_plan *b = V_OK(&ROOT, "--unshare-user", "--uid", "5", "--gid", "6", "true");
        ck_assert_uint_eq(b->uid, 5);
        ck_assert_uint_eq(b->gid, 6);
        _cleanup_plan_ nsr_plan *c = V_OK(&ROOT, "--unshare-user-try", "--uid", "5", "true");
        ck_assert(c->unshare_user);
        /* a user gets the user namespace implicitly */
        _cleanup_plan_ nsr_plan *d = V_OK(&USER, "--uid", "0", "--gid", "0", "true");
        ck_assert_uint_eq(d->uid, 0);
        ck_assert_uint_eq(d->gid, 0);
        _cleanup_plan_ _unused_ nsr_plan *e = V_OK(&USER_OLD, "--uid", "5", "true");
        /* defaults: the caller's ids */
        _cleanup_plan_ nsr_plan *f = V_OK(&USER, "true");
        ck_assert_uint_eq(f->uid, 1000);
        ck_assert_uint_eq(f->gid, 1000);
        ck_assert(!f->has_uid && !f->has_gid);
        _cleanup_plan_ nsr_plan *g = V_OK(&USER, "--uid", "7", "true");
        ck_assert_uint_eq(g->uid, 7);
        ck_assert_uint_eq(g->gid, 1000);
        /* the checks only run with a command */
        _cleanup_plan_ _unused_ nsr_plan *h = V_OK(&ROOT, "--uid", "5");
}
END_TEST

START_TEST(test_validate_hostname_pid1) {
        for (size_t i = 0; i < ELEMENTSOF(everyone); i++) {
                const nsr_caller *c = everyone[i];
                V_ERR(c, "Specifying --hostname requires --unshare-uts", "--hostname", "h", "true");
                _cleanup_plan_ _unused_ nsr_plan *a = V_OK(c, "--unshare-uts", "--hostname", "h", "true");
                _cleanup_plan_ _unused_ nsr_plan *b = V_OK(c, "--hostname", "h", "--unshare-all", "true");
                V_ERR(c, "Specifying --as-pid-1 requires --unshare-pid", "--as-pid-1", "true");
                V_ERR(c, "Specifying --as-pid-1 and --lock-file is not permitted", "--unshare-pid", "--as-pid-1",
                      "--lock-file", "/x", "true");
                _cleanup_plan_ _unused_ nsr_plan *d = V_OK(c, "--unshare-pid", "--as-pid-1", "true");
                _cleanup_plan_ _unused_ nsr_plan *e = V_OK(c, "--unshare-pid", "--lock-file", "/x", "true");
                /* without a command, bwrap prints usage before these checks */
                _cleanup_plan_ nsr_plan *f = V_OK(c, "--hostname", "h", "--as-pid-1");
                ck_assert(!f->resolved);
        }
}
END_TEST

START_TEST(test_validate_resolved) {
        _cleanup_plan_ nsr_plan *a = V_OK(&USER, "--dev", "/dev", "true");
        ck_assert(a->resolved);
        ck_assert(a->needs_devpts);
        _cleanup_plan_ nsr_plan *b = V_OK(&USER, "--proc", "/proc", "--tmpfs", "/dev", "true");
        ck_assert(b->resolved);
        ck_assert(!b->needs_devpts);
        _cleanup_plan_ nsr_plan *c = V_OK(&ROOT, "--bind", "/", "/", "--dev", "/a", "--dev", "/b", "true");
        ck_assert(c->needs_devpts);
}
END_TEST

/* ---- env, caps, perms helpers ----------------------------------------------- */

START_TEST(test_build_env) {
        char *base[] = { "A=1", "B=2", "PATH=/bin", "PATHX=x", "B=dup", NULL };
        _cleanup_plan_ nsr_plan *p =
                B_OK("--setenv", "A", "x", "--unsetenv", "B", "--setenv", "C", "3=4", "--setenv", "PAT", "no", "true");
        _cleanup_strv_free_ char **e = nsr_plan_build_env(p, base);
        assert_strv(e, W("A=x", "PATH=/bin", "PATHX=x", "C=3=4", "PAT=no"));

        _cleanup_plan_ nsr_plan *q =
                B_OK("--setenv", "A", "x", "--clearenv", "--setenv", "D", "4", "--unsetenv", "A", "true");
        _cleanup_strv_free_ char **f = nsr_plan_build_env(q, base);
        assert_strv(f, W("D=4"));

        _cleanup_plan_ nsr_plan *r = B_OK("--unsetenv", "A", "--setenv", "A", "y", "true");
        _cleanup_strv_free_ char **g = nsr_plan_build_env(r, base);
        assert_strv(g, W("B=2", "PATH=/bin", "PATHX=x", "B=dup", "A=y"));

        _cleanup_plan_ nsr_plan *s = B_OK("--setenv", "A", "y", "--unsetenv", "A", "--unsetenv", "PATH", "true");
        _cleanup_strv_free_ char **h = nsr_plan_build_env(s, base);
        assert_strv(h, W("B=2", "PATHX=x", "B=dup"));

        _cleanup_plan_ nsr_plan *t = B_OK("--clearenv", "true");
        _cleanup_strv_free_ char **i = nsr_plan_build_env(t, base);
        assert_strv(i, W(NULL));
        _cleanup_strv_free_ char **j = nsr_plan_build_env(r, NULL);
        assert_strv(j, W("A=y"));

        /* no edits: a copy */
        _cleanup_plan_ nsr_plan *u = B_OK("true");
        _cleanup_strv_free_ char **k = nsr_plan_build_env(u, base);
        assert_strv(k, (const char *const *) base);
        ck_assert_ptr_ne(k[0], base[0]);
}
END_TEST

START_TEST(test_plan_caps) {
        uint64_t all = 0xff, c = 0;
        _cleanup_plan_ nsr_plan *none = B_OK("true");
        ck_assert(!nsr_plan_caps(none, 0x21, all, &c));
        ck_assert(c == 0x21);

        _cleanup_plan_ nsr_plan *a = B_OK("--cap-add", "ALL", "--cap-drop", "CAP_CHOWN", "true");
        ck_assert(nsr_plan_caps(a, 0, all, &c));
        ck_assert(c == 0xfe);

        _cleanup_plan_ nsr_plan *b = B_OK("--cap-drop", "ALL", "--cap-add", "1", "true");
        ck_assert(nsr_plan_caps(b, 0xff, all, &c));
        ck_assert(c == 0x2);

        _cleanup_plan_ nsr_plan *d = B_OK("--cap-add", "1", "--cap-drop", "ALL", "true");
        ck_assert(nsr_plan_caps(d, 0xff, all, &c));
        ck_assert(c == 0);

        _cleanup_plan_ nsr_plan *e = B_OK("--cap-add", "3", "--cap-drop", "0", "true");
        ck_assert(nsr_plan_caps(e, 0x3, all, &c));
        ck_assert(c == 0xa);

        /* caps above 31 */
        _cleanup_plan_ nsr_plan *f = B_OK("--cap-drop", "ALL", "--cap-add", "CAP_BPF", "--cap-add", "40", "true");
        ck_assert(nsr_plan_caps(f, (UINT64_C(1) << 41) - 1, (UINT64_C(1) << 41) - 1, &c));
        ck_assert(c == ((UINT64_C(1) << 39) | (UINT64_C(1) << 40)));
}
END_TEST

START_TEST(test_op_perms_defaults) {
        for (int t = 0; t < _NSR_OP_TYPE_MAX; t++) {
                nsr_op op = { .type = (nsr_op_type) t, .fd = -1, .perms = NSR_PERMS_UNSET };
                mode_t want = 0;
                if (t == NSR_OP_FILE)
                        want = 0666;
                else if (t == NSR_OP_BIND_DATA || t == NSR_OP_RO_BIND_DATA)
                        want = 0600;
                else if (t == NSR_OP_DIR || t == NSR_OP_TMPFS)
                        want = 0755;
                ck_assert_msg(nsr_op_perms(&op) == want, "%s: %o", nsr_op_type_to_string(op.type), nsr_op_perms(&op));
                bool takes = t == NSR_OP_FILE || t == NSR_OP_BIND_DATA || t == NSR_OP_RO_BIND_DATA || t == NSR_OP_DIR ||
                             t == NSR_OP_TMPFS;
                ck_assert_int_eq(nsr_op_type_takes_perms(op.type), takes);
                op.perms = 0711;
                ck_assert_uint_eq(nsr_op_perms(&op), 0711);
                ck_assert_ptr_nonnull(nsr_op_type_to_string(op.type));
        }
        ck_assert_ptr_null(nsr_op_type_to_string(_NSR_OP_TYPE_MAX));
        ck_assert_ptr_null(nsr_op_type_to_string(_NSR_OP_TYPE_INVALID));
        ck_assert_str_eq(nsr_op_type_to_string(NSR_OP_RO_BIND_DATA), "ro-bind-data");
}
END_TEST

START_TEST(test_caller_detect_for) {
        /* Only what validation reads is probed, and what is probed is what
         * nsr_caller_detect finds. */
        nsr_caller all, some;
        nsr_caller_detect(&all);
        _cleanup_(nsr_plan_freep) nsr_plan *p = nsr_plan_new();
        nsr_caller_detect_for(p, &some);
        ck_assert_uint_eq(some.uid, all.uid);
        ck_assert_uint_eq(some.gid, all.gid);
        ck_assert(!some.userns_possible && !some.cgroupns_possible);
        p->unshare_cgroup_try = true;
        p->unshare_user_try = true;
        p->userns_fd = 5; /* then the user namespace is never implied */
        nsr_caller_detect_for(p, &some);
        ck_assert(some.userns_possible == all.userns_possible);
        ck_assert(some.cgroupns_possible == all.cgroupns_possible);
        p->unshare_cgroup_try = false;
        p->unshare_cgroup = true;
        p->userns_fd = -1;
        nsr_caller_detect_for(p, &some);
        ck_assert(some.cgroupns_possible == all.cgroupns_possible);
        /* Not root, no --userns: a user namespace anyway, nothing to probe. */
        if (all.uid != 0)
                ck_assert(!some.userns_possible);
        else
                ck_assert(some.userns_possible == all.userns_possible);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("cli");
        TCase *tc = tcase_create("table");
        tcase_add_test(tc, test_table_bwrap_options);
        tcase_add_test(tc, test_caller_detect_for);
        tcase_add_test(tc, test_options_suggest);
        tcase_add_test(tc, test_table_bwrap_order);
        tcase_add_test(tc, test_table_nsrun_options);
        tcase_add_test(tc, test_table_sanity);
        tcase_add_test(tc, test_table_handlers);
        tcase_add_test(tc, test_subopts_parse);
        tcase_add_test(tc, test_subopts_command_and_pass);
        tcase_add_test(tc, test_subopts_help);
        tcase_add_test(tc, test_help_bwrap);
        tcase_add_test(tc, test_help_nsrun);
        suite_add_tcase(s, tc);

        tc = tcase_create("grammar");
        tcase_add_test(tc, test_command);
        tcase_add_test(tc, test_no_command);
        tcase_add_test(tc, test_help_version_actions);
        tcase_add_test(tc, test_unknown_options);
        tcase_add_test(tc, test_missing_arguments);
        tcase_add_test(tc, test_missing_argument_in_args_file);
        tcase_add_test(tc, test_invalid_fd);
        tcase_add_test(tc, test_fd_values);
        tcase_add_test(tc, test_last_wins_warnings);
        tcase_add_test(tc, test_last_wins_values);
        tcase_add_test(tc, test_warning_before_error);
        tcase_add_test(tc, test_no_warning_when_repeated);
        tcase_add_test(tc, test_level_prefix);
        suite_add_tcase(s, tc);

        tc = tcase_create("options");
        tcase_add_test(tc, test_unshare_flags);
        tcase_add_test(tc, test_unshare_all_share_net);
        tcase_add_test(tc, test_userns_flags);
        tcase_add_test(tc, test_uid_gid);
        tcase_add_test(tc, test_hostname);
        tcase_add_test(tc, test_env_edits);
        tcase_add_test(tc, test_chdir_argv0);
        tcase_add_test(tc, test_bind_family);
        tcase_add_test(tc, test_simple_dest_ops);
        tcase_add_test(tc, test_data_ops);
        tcase_add_test(tc, test_chmod);
        tcase_add_test(tc, test_labels);
        tcase_add_test(tc, test_perms_consumers);
        tcase_add_test(tc, test_perms_values);
        tcase_add_test(tc, test_perms_errors);
        tcase_add_test(tc, test_size);
        tcase_add_test(tc, test_overlays);
        tcase_add_test(tc, test_overlay_errors);
        tcase_add_test(tc, test_overlay_src_trailing);
        tcase_add_test(tc, test_seccomp_fd);
        tcase_add_test(tc, test_add_seccomp_fd);
        tcase_add_test(tc, test_seccomp_errors);
        tcase_add_test(tc, test_caps);
        tcase_add_test(tc, test_process_flags);
        tcase_add_test(tc, test_nsrun_options);
        tcase_add_test(tc, test_project_options);
        suite_add_tcase(s, tc);

        tc = tcase_create("args");
        tcase_add_test(tc, test_args_basic);
        tcase_add_test(tc, test_args_equals_argv);
        tcase_add_test(tc, test_args_empty_words);
        tcase_add_test(tc, test_args_command_dropped);
        tcase_add_test(tc, test_args_pending_modifiers);
        tcase_add_test(tc, test_args_modifiers_across_files);
        tcase_add_test(tc, test_args_nested);
        tcase_add_test(tc, test_args_repeated_and_special);
        tcase_add_test(tc, test_max_args);
        tcase_add_test(tc, test_max_args_file);
        /* 9000 words, and slower under the sanitizers */
        tcase_set_timeout(tc, 60);
        suite_add_tcase(s, tc);

        tc = tcase_create("validate");
        tcase_add_test(tc, test_validate_userns_block_fd);
        tcase_add_test(tc, test_validate_userns);
        tcase_add_test(tc, test_validate_disable_userns);
        tcase_add_test(tc, test_validate_order);
        tcase_add_test(tc, test_validate_implicit_user);
        tcase_add_test(tc, test_validate_user_try);
        tcase_add_test(tc, test_validate_cgroup);
        tcase_add_test(tc, test_validate_ids);
        tcase_add_test(tc, test_validate_hostname_pid1);
        tcase_add_test(tc, test_validate_resolved);
        tcase_add_test(tc, test_build_env);
        tcase_add_test(tc, test_plan_caps);
        tcase_add_test(tc, test_op_perms_defaults);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
