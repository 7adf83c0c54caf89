/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The only place that prints errors and exits. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <sys/prctl.h>

#include "base/outfile.h"
#include "base/outq.h"
#include "base/timing.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/plan.h"
#include "cli/profileset.h"
#include "cli/trace.h"
#include "cmd/cmd.h"
#include "doctor/checks.h"
#include "project/project.h"
#include "project/report.h"
#include "sandbox/launch.h"
#include "seccomp/compile.h"
#include "txn/state.h"

#define BWRAP_VERSION "bubblewrap 0.12.0"

/* Option names come from the options table. */
#define OPT(x) (nsr_options[NSR_OPT_##x].name)

typedef struct ctx {
        bool bwrap_mode;
        const char *prog; /* argv[0] as invoked, for usage */
        bool level_prefix;
        bool project_mode;  /* nsrun's own failures exit 125 */
        nsr_timing *timing; /* NSRUN_TIMING: the phase table, or NULL */
} ctx;

static const char *prefix_of(const ctx *c) {
        return c->bwrap_mode ? "bwrap" : "nsrun";
}

/* Every line nsrun prints goes through here or print_error(): a message
 * may carry names, link targets and text the sandboxed command chose, and
 * none of its controls (an escape sequence that hides the rest of the
 * summary, a bidi override that reorders it) may reach the terminal. */
static void print_text(FILE *f, const char *level, const char *text, const char *end) {
        /* A line ended here is one line: a newline in it (a name a run or a
         * profile chose) is shown as \n, never starts a line of its own. */
        _cleanup_free_ char *s =
                nsr_utf8_escape_flags(text, streq(end, "\n") ? NSR_ESCAPE_KEEP_BACKSLASH : NSR_ESCAPE_MESSAGE);
        fprintf(f, "%s%s%s", level, s, end);
}

static void print_error(const ctx *c, const nsr_error *e) {
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(e, buf, sizeof(buf));
        /* A failure doctor can explain points to it, except under the
         * bwrap name, whose messages stay bwrap's exact text. */
        const char *hint = c->bwrap_mode ? NULL : nsr_hostcheck_hint(e);
        _cleanup_free_ char *line = nsr_asprintf("%s: %s%s%s", prefix_of(c), buf, hint ? "; " : "", hint ? hint : "");
        print_text(stderr, c->level_prefix ? "<3>" : "", line, "\n");
}

static void print_warnings(const ctx *c, char **warnings) {
        for (size_t i = 0; warnings && warnings[i]; i++) {
                _cleanup_free_ char *line = nsr_asprintf("%s: %s", prefix_of(c), NSR_WARNING_TEXT(warnings[i]));
                print_text(stderr, NSR_WARNING_LEVEL_PREFIX(warnings[i]) ? "<4>" : "", line, "\n");
        }
}

static bool invoked_as_bwrap(const char *argv0) {
        const char *base = strrchr(argv0, '/');
        base = base ? base + 1 : argv0;
        return streq(base, "bwrap");
}

/* The subcommands: dispatch, "nsrun help" and the list in --help. */
static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
        const char *usage; /* after the name, for --help */
        const char *summary;
} subcommands[] = {
        { "seccomp", nsr_cmd_seccomp, "check|compile|list", "Validate, export or list seccomp policies" },
        { "diff", nsr_cmd_diff, "[-p DIR] [RUN]", "Show what a kept run would change (default: the latest)" },
        { "commit", nsr_cmd_commit, "RUN", "Apply a kept run" },
        { "discard", nsr_cmd_discard, "RUN", "Drop a kept run" },
        { "undo", nsr_cmd_undo, "[-p DIR] [RUN]", "Restore what a run applied, from its backups" },
        { "history", nsr_cmd_history, "[-p DIR] [--limit N]", "List runs" },
        { "gc", nsr_cmd_gc, "", "Prune old runs and backups" },
        { "doctor", nsr_cmd_doctor, "[--json]", "Check what this host lets nsrun do" },
        { "profile", nsr_cmd_profile, "list|show|check", "List, expand or check profile files" },
        { "session", nsr_cmd_session, "start|stop|list|diff|commit", "One project sandbox kept up for many commands" },
        { "exec", nsr_cmd_exec, "ID -- COMMAND", "Run a command in a session" },
};

/* --help: the options table's part, then (as nsrun) the subcommands. */
static void print_help(FILE *f, const char *prog, bool bwrap_mode) {
        nsr_options_help(f, prog, bwrap_mode);
        if (bwrap_mode)
                return;
        fputs("\nSubcommands (each takes --help):\n", f);
        for (size_t i = 0; i < ELEMENTSOF(subcommands); i++) {
                _cleanup_free_ char *left = nsr_asprintf("%s%s%s", subcommands[i].name,
                                                         subcommands[i].usage[0] ? " " : "", subcommands[i].usage);
                if (strlen(left) > 28)
                        fprintf(f, "    %s\n    %-28s %s\n", left, "", subcommands[i].summary);
                else
                        fprintf(f, "    %-28s %s\n", left, subcommands[i].summary);
        }
        fputs("\nSee nsrun(1).\n", f);
}

/* An fd the caller passed for nsrun to write to: it must be open for
 * writing now, before the command runs, not found closed afterwards. */
static int check_output_fd(const char *option, int fd, nsr_error *err) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return nsr_error_set(err, errno, "%s %d", option, fd);
        if ((fl & O_ACCMODE) == O_RDONLY)
                return nsr_error_setx(err, EBADF, "%s %d: not open for writing", option, fd);
        return 0;
}

/* Every output of a project run, checked (and --report opened) before the
 * command starts: a bad target found after the run would come too late,
 * once the changes are applied. The --report file is opened now, before
 * the command can plant a symlink at its name or swap its directory
 * (outfile.h). */
static int open_outputs(const nsr_plan *plan, nsr_outfile *report, nsr_error *err) {
        int r;
        if (plan->proj.report_fd != -1 && (r = check_output_fd(OPT(REPORT_FD), plan->proj.report_fd, err)) < 0)
                return r;
        if (plan->proj.events_fd != -1 && (r = check_output_fd(OPT(EVENTS_FD), plan->proj.events_fd, err)) < 0)
                return r;
        if (plan->proj.report_file)
                return nsr_outfile_open(OPT(REPORT), plan->proj.report_file, report, err);
        return 0;
}

#define REPORT_FD_WAIT_MS 10000

static int write_report(const nsr_plan *plan, nsr_outfile *file, const char *json, nsr_error *err) {
        if (!json)
                return 0;
        size_t len = strlen(json);
        if (file->dirfd >= 0 || file->fd >= 0) {
                int r = nsr_outfile_write(file, json, len, err);
                if (r < 0)
                        return nsr_error_prefix(err, "%s", OPT(REPORT));
        }
        if (plan->proj.report_fd != -1) {
                /* The caller's reader may never read: the report goes out
                 * as the fd takes it, for REPORT_FD_WAIT_MS at most, so
                 * nsrun always ends (the transaction is done by now). */
                nsr_outq q;
                nsr_outq_init(&q, plan->proj.report_fd, len + 1, NULL);
                nsr_outq_put(&q, json, len);
                nsr_outq_finish(&q, REPORT_FD_WAIT_MS);
                bool lost = q.dropped > 0;
                int e = q.error;
                nsr_outq_done(&q);
                close(plan->proj.report_fd);
                if (lost && e)
                        return nsr_error_set(err, e, "%s %d", OPT(REPORT_FD), plan->proj.report_fd);
                if (lost)
                        return nsr_error_setx(err, ETIMEDOUT, "%s %d: the reader did not take the report within %d s",
                                              OPT(REPORT_FD), plan->proj.report_fd, REPORT_FD_WAIT_MS / 1000);
        }
        return 0;
}

static int write_trace(ctx *c, nsr_plan *plan, nsr_error *err) {
        if (plan->trace_bwrap) {
                _cleanup_free_ char *line = nsr_trace_shell(plan);
                fputs(line, stdout);
                return 1;
        }
        if (plan->trace_bwrap_fd != -1) {
                size_t len = 0;
                _cleanup_free_ char *nul = nsr_trace_nul(plan, &len);
                int r = nsr_write_all(plan->trace_bwrap_fd, nul, len);
                close(plan->trace_bwrap_fd);
                if (r < 0)
                        return nsr_error_set(err, -r, "Write to %s", OPT(TRACE_BWRAP_FD));
        }
        (void) c;
        return 0;
}

static void print_note(const char *line, void *userdata) {
        const ctx *c = userdata;
        print_text(stderr, c->level_prefix ? "<5>" : "", line, "\n");
}

/* The hint for an error: doctor's for what it can explain, else the
 * kind's own. None under the bwrap name, whose messages stay bwrap's. */
static const char *error_hint(const ctx *c, const nsr_error *e) {
        if (c->bwrap_mode)
                return NULL;
        return nsr_hostcheck_hint(e) ?: nsr_error_kind_hint(e->kind);
}

/* A project run that failed: the message, and the report (when one was
 * asked for and could be opened) with the error's kind, message and hint,
 * so that a program can tell "sandbox refused" from "bad config". */
static int project_failed(const ctx *c, const nsr_plan *plan, nsr_outfile *report, const nsr_error *e) {
        print_error(c, e);
        _cleanup_free_ char *json = nsr_report_error_json(e, error_hint(c, e));
        nsr_error werr = { 0 };
        if (plan && json && write_report(plan, report, json, &werr) < 0)
                print_error(c, &werr);
        return NSR_EXIT_FAILURE;
}

/* Project mode: nsrun's own failures exit 125, so callers can tell them
 * from the command's statuses. */
static int run_project(ctx *c, nsr_plan *user) {
        nsr_error err = { 0 };
        c->project_mode = true;
        /* The outputs first: every failure after this goes into the report
         * too, and --report is opened before anything can plant a symlink
         * at its name. */
        _cleanup_(nsr_outfile_done) nsr_outfile report = NSR_OUTFILE_INIT;
        if (!user->trace_bwrap && open_outputs(user, &report, &err) < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
        _cleanup_(nsr_project_freep) nsr_project *pj = NULL;
        /* The hidden paths are looked up during the launch, unless a trace
         * shows the plan before it. */
        unsigned flags = user->trace_bwrap ? 0 : NSR_PREPARE_CREATE_STATE;
        if (!user->trace_bwrap && user->trace_bwrap_fd == -1)
                flags |= NSR_PREPARE_DEFER_HIDDEN;
#ifdef NSR_TEST_HOOKS
        /* t529: the same run with the hidden paths looked up first. */
        if (getenv("NSRUN_TEST_HIDDEN_AT_ONCE"))
                flags &= ~(unsigned) NSR_PREPARE_DEFER_HIDDEN;
#endif
        if (nsr_project_prepare(user, flags, &pj, &err) < 0)
                return project_failed(c, user, &report, &err);
        nsr_timing_mark_now(c->timing, "prepare (projects, state dir, profile)");
        nsr_plan *plan = nsr_project_plan(pj);
        nsr_caller caller;
        nsr_caller_detect_for(plan, &caller);
        if (nsr_plan_validate(plan, &caller, &err) < 0)
                return project_failed(c, user, &report, &err);
        nsr_timing_mark_now(c->timing, "plan validated");
        if (!plan->argv) {
                fprintf(stderr,
                        "usage: %s -p DIR [OPTIONS...] [--] COMMAND [ARGS...]  (no command given; \"%s --help\" "
                        "for more)\n",
                        c->prog, c->prog);
                return NSR_EXIT_FAILURE;
        }
        int r = write_trace(c, plan, &err);
        if (r < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
        if (r > 0)
                return 0;

        nsr_project_outcome o = { 0 };
        nsr_project_set_notify(pj, print_note, c);
        /* The run's background process starts as nsrun ends (main). */
        nsr_state_background_defer();
        if (nsr_project_run(pj, &o, &err) < 0)
                return project_failed(c, user, &report, &err);
        for (size_t i = 0; o.messages && o.messages[i]; i++)
                print_text(stderr, "", o.messages[i], "\n");
        if (!plan->proj.quiet)
                for (size_t i = 0; o.summary && o.summary[i]; i++)
                        print_text(stderr, "", o.summary[i], "\n");
        if (o.listing)
                print_text(stderr, "", o.listing, "");
        int code = o.exit_code;
        if (write_report(plan, &report, o.report_json, &err) < 0) {
                print_error(c, &err);
                code = NSR_EXIT_FAILURE;
        }
        nsr_project_outcome_done(&o);
        return code;
}

/* only: the first option given that needs --project (the options table's
 * NSR_OPTF_PROJECT), or NULL. */
static int run_plan(ctx *c, nsr_plan *plan, const nsr_option *only) {
        nsr_error err = { 0 };
        if (plan->proj.projects)
                return run_project(c, plan);
        if (only) {
                nsr_error_setx(&err, EINVAL, "%s only works in project mode (--project DIR)", only->name);
                print_error(c, &err);
                return NSR_EXIT_USAGE;
        }
        nsr_caller caller;
        nsr_caller_detect_for(plan, &caller);
        if (nsr_plan_validate(plan, &caller, &err) < 0) {
                print_error(c, &err);
                return 1;
        }
        if (!plan->argv) {
                print_help(stderr, c->prog, c->bwrap_mode);
                return 1;
        }
        int tr = write_trace(c, plan, &err);
        if (tr < 0) {
                print_error(c, &err);
                return 1;
        }
        if (tr > 0)
                return 0;

        /* --seccomp-policy files are compiled (or taken from the cache)
         * here, before anything is created. */
        size_t n_pol = nsr_strv_length(plan->seccomp_policies);
        nsr_bpf *bpf = nsr_malloc0((n_pol + 1) * sizeof(nsr_bpf));
        int r = 0;
        for (size_t i = 0; i < n_pol && r >= 0; i++)
                r = nsr_seccomp_policy_bpf(plan->seccomp_policies[i], &bpf[i].data, &bpf[i].len, &err);
        nsr_launch_result res = { .exit_code = 1 };
        if (r >= 0) {
                nsr_launch_extra extra = { .bpf = bpf, .n_bpf = n_pol };
                r = nsr_launch(plan, &extra, &res, &err);
        }
        for (size_t i = 0; i < n_pol; i++)
                free(bpf[i].data);
        free(bpf);
        if (res.net_on) {
                _cleanup_free_ char *line = nsr_egress_summary(&res.net);
                print_text(stderr, c->level_prefix ? "<5>" : "", line, "\n");
                nsr_egress_log_free(&res.net);
        }
        if (r < 0) {
                print_error(c, &err);
                return 1;
        }
        return res.exit_code;
}

/* Whether a bare word names a program in PATH (or the default path). */
static bool in_path(const char *word) {
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = nsr_strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
        char *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *full = nsr_asprintf("%s/%s", *dir ? dir : ".", word);
                if (access(full, X_OK) == 0)
                        return true;
        }
        return false;
}

/* Whether a subcommand that has --json was asked for it (the words up to
 * "--"; exec, whose words after the id are a command, has no --json). */
static bool wants_json(int argc, char **argv) {
        if (streq(argv[0], "exec"))
                return false;
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
                if (streq(argv[i], "--json"))
                        return true;
        return false;
}

/* "nsrun histroy": a first word that is neither a subcommand nor a program
 * nsrun could run is a typo, not a command to exec. */
static bool unknown_command(const char *word) {
        if (!word[0] || word[0] == '-' || strchr(word, '/') || in_path(word))
                return false;
        const char *best = NULL;
        size_t best_d = SIZE_MAX;
        for (size_t i = 0; i < ELEMENTSOF(subcommands); i++) {
                size_t dist = nsr_edit_distance(word, subcommands[i].name);
                if (dist < best_d) {
                        best_d = dist;
                        best = subcommands[i].name;
                }
        }
        if (best && best_d <= 2)
                fprintf(stderr, "nsrun: unknown command \"%s\"; did you mean \"%s\"? (\"nsrun help\" lists them)\n",
                        word, best);
        else
                fprintf(stderr,
                        "nsrun: unknown command \"%s\": not a subcommand, and no program of that name in PATH "
                        "(\"nsrun help\" lists the subcommands)\n",
                        word);
        return true;
}

static int cmd_help(int argc, char **argv, const char *prog) {
        if (argc < 2) {
                print_help(stdout, prog, false);
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(subcommands); i++)
                if (streq(argv[1], subcommands[i].name)) {
                        char *sub[] = { argv[1], (char *) "--help", NULL };
                        return subcommands[i].fn(2, sub);
                }
        if (streq(argv[1], "version") || streq(argv[1], "help")) {
                puts(streq(argv[1], "version") ? "usage: nsrun version\nShow the version and exit."
                                               : "usage: nsrun help [SUBCOMMAND]\nShow the help, or a subcommand's.");
                return 0;
        }
        /* A usage error, of the one status (cmd.h). */
        fprintf(stderr, "nsrun: help: no subcommand \"%s\" (\"nsrun help\" lists them)\n", argv[1]);
        return NSR_EXIT_USAGE;
}

/* "nsrun version" with more words: "version" is a subcommand, never a
 * program to look up (nor "did you mean session?"). */
static int cmd_version(int argc, char **argv) {
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                puts("usage: nsrun version\nShow the version and exit.");
                return 0;
        }
        if (argc > 1) {
                fprintf(stderr, "nsrun: version: unexpected argument \"%s\"\n", argv[1]);
                return NSR_EXIT_USAGE;
        }
        puts(PACKAGE_NAME " " PACKAGE_VERSION);
        return 0;
}

/* Whether argv asks for project mode (before any "--"): a parse error then
 * exits 125, nsrun's own failure status there, not bwrap's 1. */
/* A project-mode command line that did not parse: its error goes into the
 * report it asked for too (--report FILE, --report=FILE or --report-fd N,
 * found by a plain scan up to "--"), so that a program reading only the
 * report learns why there is no run. */
static int parse_failed(ctx *c, char **argv, int argc, bool config, nsr_error *err) {
        if (err->kind == NSR_ERR_NONE || err->kind == NSR_ERR_SETUP)
                err->kind = config ? NSR_ERR_CONFIG : NSR_ERR_USAGE;
        _cleanup_(nsr_plan_freep) nsr_plan *p = nsr_plan_new();
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++) {
                const char *v = NULL;
                if ((streq(argv[i], OPT(REPORT)) || streq(argv[i], OPT(REPORT_FD))) && i + 1 < argc)
                        v = argv[i + 1];
                else if (nsr_startswith(argv[i], "--report=") || nsr_startswith(argv[i], "--report-fd="))
                        v = strchr(argv[i], '=') + 1;
                if (!v)
                        continue;
                if (nsr_startswith(argv[i], OPT(REPORT_FD)))
                        (void) nsr_parse_fd(v, &p->proj.report_fd);
                else {
                        free(p->proj.report_file);
                        p->proj.report_file = nsr_strdup(v);
                }
        }
        _cleanup_(nsr_outfile_done) nsr_outfile report = NSR_OUTFILE_INIT;
        nsr_error oerr = { 0 };
        if (open_outputs(p, &report, &oerr) < 0) {
                print_error(c, err);
                return NSR_EXIT_FAILURE;
        }
        return project_failed(c, p, &report, err);
}

static bool wants_project_mode(char **argv, int argc) {
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--"))
                        return false;
                const nsr_option *o = nsr_options_find(argv[i], false);
                const char *eq = argv[i][0] == '-' && argv[i][1] == '-' ? strchr(argv[i], '=') : NULL;
                if (!o && eq) {
                        _cleanup_free_ char *name = nsr_strndup(argv[i], (size_t) (eq - argv[i]));
                        o = nsr_options_find(name, false);
                }
                if (o && o->id == NSR_OPT_PROJECT)
                        return true;
        }
        return false;
}

static int run_main(ctx *cp, int argc, char **argv) {
        ctx c = *cp;

        /* bwrap answers "--version" before touching anything else. */
        if (argc == 2 && streq(argv[1], "--version")) {
                puts(c.bwrap_mode ? BWRAP_VERSION : PACKAGE_NAME " " PACKAGE_VERSION);
                return 0;
        }
        /* bwrap 0.12 dropped setuid support, and nsrun never had it: a
         * setuid (or setgid) binary is refused before it does anything. */
        if (getuid() != geteuid() || getgid() != getegid()) {
                nsr_error err = { 0 };
                nsr_error_setx(&err, EPERM, "setuid use of %s is not supported",
                               c.bwrap_mode ? "bubblewrap" : PACKAGE_NAME);
                print_error(&c, &err);
                return 1;
        }
        /* A parent may have left SIGCHLD ignored, which would make our
         * waits fail. */
        signal(SIGCHLD, SIG_DFL);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                nsr_error err = { 0 };
                nsr_error_set(&err, errno, "prctl(PR_SET_NO_NEW_PRIVS) failed");
                print_error(&c, &err);
                return 1;
        }

        if (argc < 2) {
                print_help(stderr, c.prog, c.bwrap_mode);
                return 1;
        }
        /* A subcommand is only ever the first word, and never under the
         * bwrap name: "nsrun -- seccomp" runs a command called seccomp. */
        if (!c.bwrap_mode) {
                for (size_t i = 0; i < ELEMENTSOF(subcommands); i++)
                        if (streq(argv[1], subcommands[i].name)) {
                                nsr_cmd_errors_begin(wants_json(argc - 1, argv + 1));
                                return nsr_cmd_errors_end(subcommands[i].fn(argc - 1, argv + 1));
                        }
                if (argc == 2 && (streq(argv[1], "-h") || streq(argv[1], "version") || streq(argv[1], "-V"))) {
                        if (streq(argv[1], "-h"))
                                print_help(stdout, c.prog, false);
                        else
                                puts(PACKAGE_NAME " " PACKAGE_VERSION);
                        return 0;
                }
                if (streq(argv[1], "help"))
                        return cmd_help(argc - 1, argv + 1, c.prog);
                if (streq(argv[1], "version"))
                        return cmd_version(argc - 1, argv + 1);
                if (unknown_command(argv[1]))
                        return NSR_EXIT_USAGE;
        }

        nsr_error err = { 0 };
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        nsr_cli_result res;
        /* Profiles and configs are nsrun's: the bwrap name reads no file. */
        int r = c.bwrap_mode ? nsr_cli_parse(argv + 1, (size_t) argc - 1, true, &plan, &res, &err)
                             : nsr_profileset_parse(argv + 1, (size_t) argc - 1, environ, &plan, &res, NULL, &err);
        c.level_prefix = res.level_prefix;
        nsr_timing_mark_now(c.timing, "options and profiles parsed");
        if (plan)
                plan->timing = c.timing;
        print_warnings(&c, plan ? plan->warnings : NULL);
        if (r < 0) {
                if (c.bwrap_mode || !(res.policy_error || wants_project_mode(argv, argc))) {
                        print_error(&c, &err);
                        return 1;
                }
                return parse_failed(&c, argv, argc, res.policy_error, &err);
        }
        switch (res.action) {
        case NSR_CLI_HELP:
                print_help(stdout, c.prog, c.bwrap_mode);
                return 0;
        case NSR_CLI_VERSION:
                puts(c.bwrap_mode ? BWRAP_VERSION : PACKAGE_NAME " " PACKAGE_VERSION);
                return 0;
        case NSR_CLI_RUN:
        case NSR_CLI_NO_COMMAND:
                break;
        case _NSR_CLI_ACTION_MAX:
        case _NSR_CLI_ACTION_INVALID:
                return 1;
        }
        int rc = run_plan(&c, plan, res.project_only);
        *cp = c;
        return rc;
}

/* What nsrun printed must have reached stdout: a full disk or a closed
 * pipe is an error, found only when the buffer is flushed. As coreutils
 * does, a stdout that was closed before nsrun started (EBADF with nothing
 * written) is not. Returns false after printing the error. */
static bool close_stdout(const ctx *c) {
        bool pending = __fpending(stdout) != 0;
        bool failed_before = ferror(stdout) != 0;
        errno = 0;
        bool close_failed = fclose(stdout) != 0;
        int e = errno;
        if (!failed_before && !(close_failed && (pending || e != EBADF)))
                return true;
        if (close_failed && e != 0)
                fprintf(stderr, "%s: write error: %s\n", prefix_of(c), strerror(e));
        else
                fprintf(stderr, "%s: write error\n", prefix_of(c));
        return false;
}

int main(int argc, char **argv) {
        ctx c = { .prog = argc > 0 && argv[0] ? argv[0] : "nsrun" };
        c.bwrap_mode = invoked_as_bwrap(c.prog);
        c.timing = nsr_timing_from_env();
        /* Output larger than stdio's buffer is written as it goes, and the
         * errno of a failed write is lost by exit: a buffer that holds the
         * help and most listings keeps it for close_stdout. */
        static char stdout_buf[1u << 16]; /* glibc ignores the size without a buffer */
        if (!isatty(STDOUT_FILENO))
                (void) setvbuf(stdout, stdout_buf, _IOFBF, sizeof(stdout_buf));
        int rc = run_main(&c, argc, argv);
        if (c.timing) {
                nsr_timing_mark_now(c.timing, "exit");
                _cleanup_free_ char *table = nsr_timing_format(c.timing);
                fputs(table, stderr);
                c.timing = nsr_timing_free(c.timing);
        }
        if (!close_stdout(&c) && rc == 0)
                rc = c.project_mode ? NSR_EXIT_FAILURE : 1;
        /* Nothing is written after this: a project run's background
         * process starts, and this one ends. */
        nsr_state_background_exit(rc);
        return rc;
}
