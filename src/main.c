/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The only place that prints errors and exits. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "cli.h"
#include "cmd.h"
#include "hostcheck.h"
#include "launch.h"
#include "options.h"
#include "outfile.h"
#include "plan.h"
#include "profileset.h"
#include "project.h"
#include "seccomp.h"
#include "trace.h"
#include "utf8.h"

#define BWRAP_VERSION "bubblewrap 0.11.1"

typedef struct ctx {
        bool bwrap_mode;
        const char *prog;      /* argv[0] as invoked, for usage */
        bool level_prefix;
} ctx;

static const char *prefix_of(const ctx *c) {
        return c->bwrap_mode ? "bwrap" : "nsrun";
}

/* Every line nsrun prints goes through here or print_error(): a message
 * may carry names, link targets and text the sandboxed command chose, and
 * none of its controls (an escape sequence that hides the rest of the
 * summary, a bidi override that reorders it) may reach the terminal. */
static void print_text(FILE *f, const char *level, const char *text, const char *end) {
        _cleanup_free_ char *s = nsr_utf8_escape_flags(text, NSR_ESCAPE_MESSAGE);
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

static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
} subcommands[] = {
        { "seccomp", nsr_cmd_seccomp }, { "diff", nsr_cmd_diff },       { "commit", nsr_cmd_commit },
        { "discard", nsr_cmd_discard }, { "undo", nsr_cmd_undo },       { "history", nsr_cmd_history },
        { "gc", nsr_cmd_gc },           { "doctor", nsr_cmd_doctor },   { "profile", nsr_cmd_profile },
        { "session", nsr_cmd_session }, { "exec", nsr_cmd_exec },
};

static int write_report(const nsr_plan *plan, nsr_outfile *file, const char *json, nsr_error *err) {
        if (!json)
                return 0;
        size_t len = strlen(json);
        if (file->dirfd >= 0 || file->fd >= 0) {
                int r = nsr_outfile_write(file, json, len, err);
                if (r < 0)
                        return nsr_error_prefix(err, "--report");
        }
        if (plan->proj.report_fd != -1) {
                int r = nsr_write_all(plan->proj.report_fd, json, len);
                close(plan->proj.report_fd);
                if (r < 0)
                        return nsr_error_set(err, -r, "--report-fd %d", plan->proj.report_fd);
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
                        return nsr_error_set(err, -r, "Write to --trace-bwrap-fd");
        }
        (void) c;
        return 0;
}

static void print_note(const char *line, void *userdata) {
        const ctx *c = userdata;
        print_text(stderr, c->level_prefix ? "<5>" : "", line, "\n");
}

/* Project mode: nsrun's own failures exit 125, so callers can tell them
 * from the command's statuses. */
static int run_project(ctx *c, nsr_plan *user) {
        nsr_error err = { 0 };
        _cleanup_(nsr_project_freep) nsr_project *pj = NULL;
        if (nsr_project_prepare(user, !user->trace_bwrap, &pj, &err) < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
        nsr_plan *plan = nsr_project_plan(pj);
        nsr_caller caller;
        nsr_caller_detect(&caller);
        if (nsr_plan_validate(plan, &caller, &err) < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
        if (!plan->argv) {
                nsr_options_help(stderr, c->prog, c->bwrap_mode);
                return NSR_EXIT_FAILURE;
        }
        int r = write_trace(c, plan, &err);
        if (r < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
        if (r > 0)
                return 0;

        /* The report's file is opened now, before the command can plant a
         * symlink at its name or swap its directory (outfile.h). */
        _cleanup_(nsr_outfile_done) nsr_outfile report = NSR_OUTFILE_INIT;
        if (plan->proj.report_file && nsr_outfile_open("--report", plan->proj.report_file, &report, &err) < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
        nsr_project_outcome o = { 0 };
        nsr_project_set_notify(pj, print_note, c);
        if (nsr_project_run(pj, &o, &err) < 0) {
                print_error(c, &err);
                return NSR_EXIT_FAILURE;
        }
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

/* Options that only make sense with --project. */
static const char *project_only_option(const nsr_plan *p) {
        const nsr_project_opts *o = &p->proj;
        if (o->home != NSR_HOME_OVERLAY)
                return "--home";
        if (o->hide)
                return "--hide";
        if (o->rw)
                return "--rw";
        if (o->ro)
                return "--ro";
        if (o->keep_env)
                return "--keep-env";
        if (o->allow_nested)
                return "--allow-nested";
        if (o->state_dir)
                return "--state-dir";
        if (o->report_file)
                return "--report";
        if (o->report_fd != -1)
                return "--report-fd";
        if (o->discard)
                return "--discard";
        if (o->keep)
                return "--keep";
        if (o->quiet)
                return "--quiet";
        if (o->verbose)
                return "--verbose";
        if (o->events_fd != -1)
                return "--events-fd";
        if (o->keep_days != -1)
                return "--keep-days";
        if (o->backup_limit)
                return "--backup-limit";
        if (o->sandbox != NSR_SANDBOX_REQUIRED)
                return "--sandbox";
        if (o->no_overlay)
                return "--no-overlay";
        if (o->workspace_root)
                return "--workspace-root";
        if (o->snapshot_limit)
                return "--snapshot-limit";
        return NULL;
}

static int run_plan(ctx *c, nsr_plan *plan) {
        nsr_error err = { 0 };
        if (plan->proj.projects)
                return run_project(c, plan);
        const char *only = project_only_option(plan);
        if (only) {
                nsr_error_setx(&err, EINVAL, "%s only works in project mode (--project DIR)", only);
                print_error(c, &err);
                return 1;
        }
        nsr_caller caller;
        nsr_caller_detect(&caller);
        if (nsr_plan_validate(plan, &caller, &err) < 0) {
                print_error(c, &err);
                return 1;
        }
        if (!plan->argv) {
                nsr_options_help(stderr, c->prog, c->bwrap_mode);
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
                fprintf(stderr, "%s%s\n", c->level_prefix ? "<5>" : "", line);
                nsr_egress_log_free(&res.net);
        }
        if (r < 0) {
                print_error(c, &err);
                return 1;
        }
        return res.exit_code;
}

int main(int argc, char **argv) {
        ctx c = { .prog = argc > 0 && argv[0] ? argv[0] : "nsrun" };
        c.bwrap_mode = invoked_as_bwrap(c.prog);

        /* bwrap answers "--version" before touching anything else. */
        if (argc == 2 && streq(argv[1], "--version")) {
                puts(c.bwrap_mode ? BWRAP_VERSION : PACKAGE_NAME " " PACKAGE_VERSION);
                return 0;
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
                nsr_options_help(stderr, c.prog, c.bwrap_mode);
                return 1;
        }
        /* A subcommand is only ever the first word, and never under the
         * bwrap name: "nsrun -- seccomp" runs a command called seccomp. */
        if (!c.bwrap_mode)
                for (size_t i = 0; i < ELEMENTSOF(subcommands); i++)
                        if (streq(argv[1], subcommands[i].name))
                                return subcommands[i].fn(argc - 1, argv + 1);

        nsr_error err = { 0 };
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        nsr_cli_result res;
        /* Profiles and configs are nsrun's: the bwrap name reads no file. */
        int r = c.bwrap_mode ? nsr_cli_parse(argv + 1, (size_t) argc - 1, true, &plan, &res, &err)
                             : nsr_profileset_parse(argv + 1, (size_t) argc - 1, environ, &plan, &res, NULL, &err);
        c.level_prefix = res.level_prefix;
        print_warnings(&c, plan ? plan->warnings : NULL);
        if (r < 0) {
                print_error(&c, &err);
                return res.policy_error ? NSR_EXIT_FAILURE : 1;
        }
        switch (res.action) {
        case NSR_CLI_HELP:
                nsr_options_help(stdout, c.prog, c.bwrap_mode);
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
        return run_plan(&c, plan);
}
