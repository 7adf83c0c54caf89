/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "nsrun session start|stop|list|diff" and "nsrun exec": front ends of
 * session.c. Exit codes: exec returns the command's status (128+N for a
 * signal), 125 when nsrun failed, 126/127 when the command could not be
 * executed; the others 0, or 1 on failure (125 when start fails). */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json.h"
#include "base/outfile.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "cli/plan.h"
#include "cli/profileset.h"
#include "cli/runctl.h"
#include "cli/subopts.h"
#include "cmd/cmd.h"
#include "project/orphan.h"
#include "project/project.h"
#include "project/sesscommit.h"
#include "project/session.h"
#include "project/stepio.h"
#include "sandbox/reaper.h"
#include "txn/state.h"

extern char **environ;

/* Every line goes through the one escaping function: messages carry
 * names and text a sandboxed command chose. */
#define say(...) nsr_utf8_fprintf(stderr, __VA_ARGS__)

static void err_print(const nsr_error *e) {
        nsr_cmd_print_error(e);
}

/* The options of the session subcommands and exec: one table each, one
 * handler. */
typedef enum sess_opt {
        SESS_OPT_STATE_DIR,
        SESS_OPT_JSON,
        SESS_OPT_IDLE_TIMEOUT,
        SESS_OPT_COMMIT,
        SESS_OPT_DISCARD,
        SESS_OPT_CWD,
        SESS_OPT_ENV,
        SESS_OPT_UNSET_ENV,
        SESS_OPT_CLEARENV,
        SESS_OPT_TIMEOUT,
        SESS_OPT_KILL_AFTER,
        SESS_OPT_RLIMIT,
        SESS_OPT_EVENTS_FD,
        SESS_OPT_REPORT,
        SESS_OPT_ON_CONFLICT,
} sess_opt;

#define OPT_STATE_DIR                                                                                                  \
        { "--state-dir", NULL, SESS_OPT_STATE_DIR, 1, "DIR", "Where the session lives (when it was started with one)" }
#define OPT_JSON                                                                                                       \
        { "--json", NULL, SESS_OPT_JSON, 0, NULL, "Print JSON" }
#define OPT_END                                                                                                        \
        { NULL, NULL, 0, 0, NULL, NULL }

static const nsr_subopt start_opts[] = {
        OPT_JSON,
        { "--idle-timeout", NULL, SESS_OPT_IDLE_TIMEOUT, 1, "DURATION",
          "Stop after DURATION with no command (default 30m; 0: never)" },
        OPT_END,
};
#define OPT_ON_CONFLICT                                                                                                \
        {                                                                                                              \
                "--on-conflict", NULL, SESS_OPT_ON_CONFLICT, 1, "MODE",                                                \
                        "apply-rest (default), keep-all, fail, prefer-host or prefer-sandbox (see nsrun(1))"           \
        }
static const nsr_subopt stop_opts[] = {
        OPT_STATE_DIR,
        { "--commit", NULL, SESS_OPT_COMMIT, 0, NULL, "Apply the session's changes" },
        { "--discard", NULL, SESS_OPT_DISCARD, 0, NULL, "Drop the session's changes" },
        OPT_ON_CONFLICT,
        OPT_END,
};
static const nsr_subopt commit_opts[] = { OPT_STATE_DIR, OPT_ON_CONFLICT, OPT_END };
static const nsr_subopt list_opts[] = { OPT_STATE_DIR, OPT_JSON, OPT_END };
static const nsr_subopt id_opts[] = { OPT_STATE_DIR, OPT_END };
static const nsr_subopt exec_opts[] = {
        OPT_STATE_DIR,
        { "--cwd", NULL, SESS_OPT_CWD, 1, "DIR", "The command's working dir, inside the sandbox" },
        { "--env", NULL, SESS_OPT_ENV, 1, "NAME=VALUE", "Set NAME for the command (repeatable)" },
        { "--unset-env", NULL, SESS_OPT_UNSET_ENV, 1, "NAME", "Remove NAME for the command (repeatable)" },
        { "--clearenv", NULL, SESS_OPT_CLEARENV, 0, NULL,
          "Start from an empty environment (only --env), not the caller's" },
        { "--timeout", NULL, SESS_OPT_TIMEOUT, 1, "DURATION",
          "SIGTERM to the command's process group after DURATION; exit 124 (the session lives on)" },
        { "--kill-after", NULL, SESS_OPT_KILL_AFTER, 1, "DURATION",
          "SIGKILL that long after the timeout (default 5s)" },
        { "--rlimit", NULL, SESS_OPT_RLIMIT, 1, "NAME=SOFT[:HARD]",
          "Set a resource limit for the command (repeatable)" },
        { "--events-fd", NULL, SESS_OPT_EVENTS_FD, 1, "FD",
          "Write a JSON line per change in the projects to FD while the command runs" },
        { "--report", NULL, SESS_OPT_REPORT, 1, "FILE", "Write a JSON report of what the command changed to FILE" },
        OPT_END,
};

/* Words start does not know are project-mode options, for the main parser. */
static const nsr_subcmd start_sub = {
        "session start", "--project DIR [project-mode options]", NULL, 0, NSR_SUBCMD_PASS_UNKNOWN, start_opts
};
static const nsr_subcmd stop_sub = { "session stop", "ID", NULL, 1, 0, stop_opts };
static const nsr_subcmd list_sub = { "session list", NULL, NULL, 0, 0, list_opts };
static const nsr_subcmd diff_sub = { "session diff", "ID", NULL, 1, 0, id_opts };
static const nsr_subcmd commit_sub = { "session commit", "ID", NULL, 1, 0, commit_opts };
static const nsr_subcmd exec_sub = { "exec", "ID -- COMMAND [ARGS]", NULL, 1, NSR_SUBCMD_COMMAND_AFTER, exec_opts };

static void usage_session(FILE *f) {
        static const nsr_subcmd *const cmds[] = { &start_sub, &stop_sub, &list_sub, &diff_sub, &commit_sub, &exec_sub };
        nsr_subopts_help_group(f, "usage: ", cmds, ELEMENTSOF(cmds),
                               "A session keeps one project sandbox up for many commands; see nsrun(1), SESSIONS.\n");
}

typedef struct sargs {
        nsr_subargs sa;
        const char *state_dir;
        const char *id;
        bool json, help, commit, discard;
        unsigned idle;
        char **rest; /* exec: the command */
        char **set, **unset;
        const char *cwd;
        const char *report;
        nsr_conflict_mode on_conflict;
        bool on_conflict_set;
        bool clearenv;
        nsr_runctl rc;  /* --timeout, --kill-after */
        char **rlimits; /* --rlimit, as given (the agent applies them) */
        int events_fd;  /* --events-fd, or -1 */
} sargs;

static void sargs_done(sargs *a) {
        nsr_strv_free(a->set);
        nsr_strv_free(a->unset);
        nsr_strv_free(a->rlimits);
        nsr_subargs_done(&a->sa);
}

static int session_option(void *userdata, const nsr_subopt *o, const char *val, nsr_error *err) {
        sargs *a = userdata;
        switch ((sess_opt) o->key) {
        case SESS_OPT_STATE_DIR:
                a->state_dir = val;
                return 0;
        case SESS_OPT_JSON:
                a->json = true;
                return 0;
        case SESS_OPT_IDLE_TIMEOUT:
                if (nsr_session_parse_duration(val, &a->idle) < 0)
                        return nsr_error_setx(err, EINVAL, "%s takes a duration (30m, 90s, 2h, 0 for none), not \"%s\"",
                                              o->name, val);
                return 0;
        case SESS_OPT_COMMIT:
                a->commit = true;
                return 0;
        case SESS_OPT_DISCARD:
                a->discard = true;
                return 0;
        case SESS_OPT_CWD:
                a->cwd = val;
                return 0;
        case SESS_OPT_REPORT:
                a->report = val;
                return 0;
        case SESS_OPT_ON_CONFLICT:
                a->on_conflict_set = true;
                return nsr_conflict_mode_parse(o->name, val, &a->on_conflict, err);
        case SESS_OPT_CLEARENV:
                a->clearenv = true;
                return 0;
        case SESS_OPT_EVENTS_FD: {
                char *end;
                errno = 0;
                long v = strtol(val, &end, 10);
                if (errno || end == val || *end || v < 0 || v > INT32_MAX || fcntl((int) v, F_GETFD) < 0)
                        return nsr_error_setx(err, EBADF, "%s wants an open fd, not \"%s\"", o->name, val);
                a->events_fd = (int) v;
                return 0;
        }
        case SESS_OPT_RLIMIT: {
                nsr_rlimit_id id;
                nsr_rlimit_spec spec;
                int r = nsr_parse_rlimit(val, &id, &spec, err);
                if (r < 0)
                        return nsr_error_prefix(err, "%s", o->name);
                nsr_strv_extend(&a->rlimits, val);
                return 0;
        }
        case SESS_OPT_TIMEOUT:
        case SESS_OPT_KILL_AFTER: {
                uint64_t ms;
                if (nsr_parse_duration(val, &ms) < 0 || (o->key == SESS_OPT_TIMEOUT && ms == 0))
                        return nsr_error_setx(err, EINVAL, "%s wants a duration (90, 1.5s, 500ms, 5m), not \"%s\"",
                                              o->name, val);
                if (o->key == SESS_OPT_TIMEOUT)
                        a->rc.timeout_ms = ms;
                else {
                        a->rc.kill_after_ms = ms;
                        a->rc.has_kill_after = true;
                }
                return 0;
        }
        case SESS_OPT_ENV:
                if (!strchr(val, '=') || val[0] == '=')
                        return nsr_error_setx(err, EINVAL, "%s wants NAME=VALUE, not \"%s\"", o->name, val);
                nsr_strv_extend(&a->set, val);
                return 0;
        case SESS_OPT_UNSET_ENV:
                if (!*val || strchr(val, '='))
                        return nsr_error_setx(err, EINVAL, "%s wants a NAME, not \"%s\"", o->name, val);
                nsr_strv_extend(&a->unset, val);
                return 0;
        }
        return nsr_error_setx(err, EINVAL, "%s has no handler", o->name);
}

/* The first operand is the id; with exec, what follows it (after an
 * optional "--") is the command. Says what is wrong. */
static int parse(const nsr_subcmd *c, int argc, char **argv, sargs *a) {
        *a = (sargs){ .idle = NSR_SESSION_IDLE_DEFAULT, .events_fd = -1 };
        nsr_error e = { 0 };
        int r = nsr_subopts_parse(c, argc, argv, session_option, a, &a->sa, &e);
        a->help = a->sa.help;
        a->id = a->sa.n_operands ? a->sa.operands[0] : NULL;
        a->rest = a->sa.command;
        if (r < 0) {
                err_print(&e);
                return -EINVAL;
        }
        if (a->commit && a->discard) {
                say("nsrun: --commit and --discard cannot be combined\n");
                return -EINVAL;
        }
        if (a->on_conflict_set && c == &stop_sub && !a->commit) {
                say("nsrun: --on-conflict is for session stop --commit\n");
                return -EINVAL;
        }
        return 0;
}

static char *state_dir_of(const char *opt, bool for_run) {
        nsr_error e = { 0 };
        char *dir = NULL, *note = NULL;
        if (nsr_state_dir_choose(opt, environ, for_run, &dir, &note, &e) < 0) {
                err_print(&e);
                return NULL;
        }
        free(note);
        return dir;
}

/* A session whose daemon is gone left a kept run: say so. */
static void recover(const char *state_dir) {
        nsr_error e = { 0 };
        _cleanup_strv_free_ char **ids = nsr_malloc0(sizeof(char *));
        if (nsr_orphans_recover(state_dir, &ids, &e) < 0)
                return;
        for (size_t i = 0; ids[i]; i++)
                say("nsrun: session %s ended without a stop (its daemon died); its changes are kept as run %s: "
                    "\"nsrun diff %s\", then \"nsrun commit %s\" or \"nsrun discard %s\"\n",
                    ids[i], ids[i], ids[i], ids[i], ids[i]);
}

static int connect_or_say(const char *state_dir, const char *id) {
        nsr_error e = { 0 };
        int fd = nsr_session_connect(state_dir, id, &e);
        if (fd < 0) {
                err_print(&e);
                recover(state_dir);
        }
        return fd;
}

/* ---- start ------------------------------------------------------------------ */

/* The plan of a session: project mode's options, with no command and
 * nothing that only a one-shot run's end could write. Says what is
 * wrong. */
static int start_plan(char **words, size_t n, nsr_plan **ret) {
        for (size_t i = 0; i < n; i++)
                if (streq(words[i], "--")) {
                        say("nsrun: session start takes no command: run commands with \"nsrun exec ID -- CMD\"\n");
                        return -EINVAL;
                }
        nsr_error e = { 0 };
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        nsr_cli_result res;
        if (nsr_profileset_parse(words, n, environ, &plan, &res, NULL, &e) < 0) {
                err_print(&e);
                return -EINVAL;
        }
        if (!plan->proj.projects) {
                say("nsrun: session start needs --project DIR\n");
                return -EINVAL;
        }
        if (plan->argv) {
                say("nsrun: session start takes no command: run commands with \"nsrun exec ID -- CMD\"\n");
                return -EINVAL;
        }
        /* What a one-shot run writes at its end has no end to wait for
         * here: exec --report covers one command. */
        nsr_opt_id endless = plan->proj.report_file                            ? NSR_OPT_REPORT
                             : plan->proj.report_fd != -1                      ? NSR_OPT_REPORT_FD
                             : plan->proj.events_fd != -1                      ? NSR_OPT_EVENTS_FD
                             : plan->trace_bwrap || plan->trace_bwrap_fd != -1 ? NSR_OPT_TRACE_BWRAP
                                                                               : _NSR_OPT_INVALID;
        if (endless != _NSR_OPT_INVALID) {
                say("nsrun: session start does not take %s (\"nsrun exec --report FILE\" reports one command)\n",
                    nsr_options_get(endless)->name);
                return -EINVAL;
        }
        if (plan->proj.keep || plan->proj.discard) {
                say("nsrun: session start: the outcome is chosen at \"nsrun session stop\" (--commit, --discard)\n");
                return -EINVAL;
        }
        plan->argv = nsr_malloc0(2 * sizeof(char *));
        plan->argv[0] = nsr_strdup("nsrun-session");
        *ret = TAKE_PTR(plan);
        return 0;
}

#ifdef NSR_TEST_HOOKS
/* Until the daemon d is ready (its control socket exists) or has ended,
 * 30 s at most. */
static void middle_stays(pid_t d, const char *state_dir, const char *id) {
        _cleanup_free_ char *dir = nsr_session_dir(state_dir, id);
        _cleanup_free_ char *ctl = nsr_asprintf("%s/ctl", dir);
        for (int i = 0; i < 3000 && access(ctl, F_OK) < 0 && waitpid(d, NULL, WNOHANG) == 0; i++)
                (void) poll(NULL, 0, 10);
}
#endif

/* Forks the daemon, detached, and returns what it wrote to the start pipe
 * by the time it was ready or gave up: "PID\n", then the run's notes and
 * "ok\n", or why it failed. NULL after saying what failed. */
static char *spawn_daemon(nsr_project *pj, const char *state_dir, unsigned idle) {
        int rp[2];
        if (pipe2(rp, O_CLOEXEC) < 0) {
                say("nsrun: pipe2: %s\n", strerror(errno));
                return NULL;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
                say("nsrun: fork: %s\n", strerror(errno));
                close(rp[0]);
                close(rp[1]);
                return NULL;
        }
        if (pid == 0) {
                /* The daemon: detached from the caller's session and
                 * terminal, its stdio on /dev/null. Setup errors still
                 * reach the caller, through the start pipe. */
                close(rp[0]);
                if (setsid() < 0)
                        _exit(1);
                pid_t d = fork();
                if (d != 0) {
#ifdef NSR_TEST_HOOKS
                        /* The order a loaded machine may take: the daemon
                         * gets far (here: ready) before its parent, this
                         * process, exits. The daemon must survive that. */
                        if (d > 0 && getenv("NSRUN_TEST_SESSION_MIDDLE_STAYS"))
                                middle_stays(d, state_dir, nsr_project_run_id(pj));
#endif
                        _exit(d < 0 ? 1 : 0);
                }
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                        _exit(1);
                close(null);
                signal(SIGPIPE, SIG_IGN);
                signal(SIGHUP, SIG_IGN);
                char okline[64];
                snprintf(okline, sizeof(okline), "%d\n", (int) getpid());
                (void) nsr_write_all(rp[1], okline, strlen(okline));
                nsr_session_opts so = { .state_dir = state_dir, .idle_timeout = idle, .ready_fd = rp[1] };
                nsr_error de = { 0 };
                (void) nsr_session_serve(pj, &so, &de);
                _exit(0);
        }
        close(rp[1]);
        (void) waitpid(pid, NULL, 0);
        char *text = NULL;
        size_t len = 0;
        _cleanup_close_ int rfd = rp[0];
        (void) nsr_read_all(rfd, 64 * 1024, &text, &len);
        return text ? text : nsr_strdup("");
}

/* Prints the id (or the --json object) once the daemon said it is ready,
 * or what it said went wrong. */
static int report_start(char *text, const sargs *a, const char *id, const char *state_dir, nsr_project *pj) {
        char *nl = strchr(text, '\n');
        char *tail = nl ? nl + 1 : NULL;
        size_t rl = tail ? strlen(tail) : 0;
        bool ok = tail && rl >= 3 && streq(tail + rl - 3, "ok\n") && (rl == 3 || tail[rl - 4] == '\n');
        if (!ok) {
                /* "!kind=N": the failure's kind, for --json's error object. */
                nsr_error_kind kind = NSR_ERR_SETUP;
                if (tail && strncmp(tail, "!kind=", 6) == 0) {
                        nsr_error k = { .kind = (nsr_error_kind) atoi(tail + 6) };
                        nsr_error_sanitize(&k);
                        kind = k.kind;
                        char *eol = strchr(tail, '\n');
                        tail = eol ? eol + 1 : tail + strlen(tail);
                }
                const char *why = tail && *tail ? tail : "nsrun: the session daemon failed before it was ready\n";
                say("%s", why);
                nsr_cmd_note_text(kind, why);
                return NSR_EXIT_FAILURE;
        }
        tail[rl - 3] = '\0';
        if (*tail)
                say("%s", tail);
        *nl = '\0';
        if (!a->json) {
                printf("%s\n", id);
                return 0;
        }
        _cleanup_free_ char *dir = nsr_session_dir(state_dir, id);
        _cleanup_free_ char *ctl = nsr_asprintf("%s/ctl", dir);
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(stdout, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "id", id);
        nsr_json_int(j, "pid", atoi(text));
        nsr_json_strv(j, "projects", nsr_project_plan(pj)->proj.projects);
        nsr_json_string(j, "socket", ctl);
        nsr_json_string(j, "state_dir", state_dir);
        nsr_json_uint(j, "idle_timeout", a->idle);
        nsr_json_object_end(j);
        putchar('\n');
        return 0;
}

static int start(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        if (parse(&start_sub, argc, argv, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help) {
                usage_session(stdout);
                return 0;
        }
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        if (start_plan(a.sa.operands, a.sa.n_operands, &plan) < 0)
                return NSR_EXIT_FAILURE;
        _cleanup_free_ char *state_opt = plan->proj.state_dir ? nsr_strdup(plan->proj.state_dir) : NULL;
        _cleanup_(nsr_project_freep) nsr_project *pj = NULL;
        nsr_error e = { 0 };
        if (nsr_project_prepare(plan, NSR_PREPARE_CREATE_STATE, &pj, &e) < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        nsr_caller caller;
        nsr_caller_detect(&caller);
        if (nsr_plan_validate(nsr_project_plan(pj), &caller, &e) < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        _cleanup_free_ char *state_dir = state_dir_of(state_opt, true);
        if (!state_dir)
                return NSR_EXIT_FAILURE;
        recover(state_dir);
        char id[NSR_RUN_ID_MAX];
        snprintf(id, sizeof(id), "%s", nsr_project_run_id(pj));
        _cleanup_free_ char *text = spawn_daemon(pj, state_dir, a.idle);
        if (!text)
                return NSR_EXIT_FAILURE;
        return report_start(text, &a, id, state_dir, pj);
}

/* ---- commit, stop, list, diff -------------------------------------------------- */

/* Prints what a session commit did; 0, or 1 when an apply failed (125
 * when --on-conflict=fail held the changes back). */
static int session_commit(const char *state_dir, const char *id, nsr_conflict_mode mode, bool *ret_conflict,
                          bool *ret_withheld) {
        nsr_error e = { 0 };
        nsr_session_commit_result res = { 0 };
        if (nsr_session_commit_as(state_dir, id, mode, &res, &e) < 0) {
                err_print(&e);
                return 1;
        }
        for (size_t i = 0; res.lines && res.lines[i]; i++)
                say("%s\n", res.lines[i]);
        if (ret_conflict)
                *ret_conflict = res.conflict;
        if (ret_withheld)
                *ret_withheld = res.withheld;
        int rc = res.failed ? 1 : res.withheld && mode == NSR_CONFLICT_FAIL ? NSR_EXIT_FAILURE : 0;
        nsr_session_commit_done(&res);
        return rc;
}

/* The start of the subcommands that talk to one session: the options,
 * the usage, the state dir and the connection. Returns the connected fd,
 * -1 after saying what failed, -2 after --help, or -3 after a usage
 * error. */
static int open_session(const nsr_subcmd *c, int argc, char **argv, sargs *a, char **ret_state_dir) {
        if (parse(c, argc, argv, a) < 0)
                return -3;
        if (a->help || !a->id) {
                usage_session(a->help ? stdout : stderr);
                return a->help ? -2 : -3;
        }
        *ret_state_dir = state_dir_of(a->state_dir, false);
        if (!*ret_state_dir)
                return -1;
        int fd = connect_or_say(*ret_state_dir, a->id);
        return fd < 0 ? -1 : fd; /* not -ENOENT, which is -2 */
}

static int commit_cmd(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        _cleanup_free_ char *state_dir = NULL;
        _cleanup_close_ int fd = open_session(&commit_sub, argc, argv, &a, &state_dir);
        if (fd < 0)
                return fd == -2 ? 0 : fd == -3 ? NSR_EXIT_USAGE : 1;
        return session_commit(state_dir, a.id, a.on_conflict, NULL, NULL);
}

/* After the session's daemon finished its run as kept: the run's start
 * becomes the session's last commit, so that "nsrun commit RUN" later
 * judges conflicts from there, not from what earlier commits applied. */
static int keep_with_base(const char *state_dir, const char *id, nsr_outcome final_state) {
        _cleanup_close_ int statefd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        nsr_error e = { 0 };
        if (statefd < 0)
                nsr_error_set(&e, errno, "no state dir at %s", state_dir);
        _cleanup_close_ int run_fd = statefd >= 0 ? nsr_run_open(statefd, id, &e) : -1;
        _cleanup_(nsr_run_meta_done) nsr_run_meta m = { 0 };
        if (run_fd < 0 || nsr_run_meta_read(run_fd, &m, &e) < 0)
                goto fail;
        struct timespec base;
        if (nsr_session_base_read(run_fd, &base) >= 0)
                m.start = base;
        if (final_state >= 0) {
                m.state = final_state;
                /* What it changed was applied, and is undone, by the commit
                 * runs: this one has nothing of its own to undo. */
                for (size_t i = 0; m.projects && m.projects[i]; i++)
                        memset(m.counts[i], 0, sizeof(m.counts[i]));
                for (size_t i = 0; m.projects && m.projects[i]; i++) {
                        char rel[32];
                        snprintf(rel, sizeof(rel), "p%zu", i);
                        (void) nsr_rm_rf_at(run_fd, rel, &e);
                }
        }
        if (nsr_run_meta_write(run_fd, &m, &e) >= 0)
                return 0;
fail:
        say("nsrun: session %s: cannot record how the run ended: %s\n", id, e.msg);
        return -1;
}

static int stop_cmd(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        _cleanup_free_ char *state_dir = NULL;
        _cleanup_close_ int fd = open_session(&stop_sub, argc, argv, &a, &state_dir);
        if (fd < 0)
                return fd == -2 ? 0 : fd == -3 ? NSR_EXIT_USAGE : 1;
        /* --commit stops first, keeping the run, and then commits it the
         * way "session commit" does: nothing writes any more, and earlier
         * commits set the conflict baseline. */
        int how = a.discard ? NSR_SESSION_DISCARD : NSR_SESSION_KEEP;
        int sr = nsr_session_send(fd, NSR_SMSG_STOP, 0, how, 0, NULL, 0, NULL, 0);
        if (sr < 0) {
                say("nsrun: session %s: cannot send the stop: %s\n", a.id, strerror(-sr));
                return 1;
        }
        _cleanup_free_ char *buf = nsr_malloc0(NSR_SESSION_PAYLOAD_MAX + 1);
        for (;;) {
                nsr_session_hdr h;
                int fds[3];
                int r = nsr_session_recv(fd, &h, buf, fds);
                if (r == -EBADMSG)
                        continue;
                if (r < 0) {
                        say("nsrun: session %s ended without saying how the stop went\n", a.id);
                        return 1;
                }
                if (h.type != NSR_SMSG_STOPPED)
                        continue;
                if (!a.commit)
                        say("%s", buf);
                say("nsrun: session %s stopped\n", a.id);
                if (h.value == NSR_EXIT_FAILURE)
                        return 1;
                if (a.discard)
                        return 0;
                if (!a.commit) {
                        return keep_with_base(state_dir, a.id, _NSR_OUTCOME_INVALID) < 0 ? 1 : 0;
                }
                bool conflict = false, withheld = false;
                int rc = session_commit(state_dir, a.id, a.on_conflict, &conflict, &withheld);
                if (keep_with_base(state_dir, a.id,
                                   rc || withheld ? _NSR_OUTCOME_INVALID
                                   : conflict     ? NSR_OUTCOME_CONFLICT
                                                  : NSR_OUTCOME_COMMITTED) < 0)
                        rc = 1;
                if (rc || withheld)
                        say("nsrun: the session's changes stay as kept run %s\n", a.id);
                return rc;
        }
}

static int list_cmd(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        if (parse(&list_sub, argc, argv, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help || a.id) {
                usage_session(a.help ? stdout : stderr);
                return a.help ? 0 : NSR_EXIT_USAGE;
        }
        _cleanup_free_ char *state_dir = state_dir_of(a.state_dir, false);
        if (!state_dir)
                return 1;
        recover(state_dir);
        nsr_error e = { 0 };
        _cleanup_strv_free_ char **ids = NULL;
        if (nsr_session_list(state_dir, &ids, &e) < 0) {
                err_print(&e);
                return 1;
        }
        _cleanup_close_ int statefd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(nsr_json_freep) nsr_json *j = a.json ? nsr_json_new(stdout, 0, 0) : NULL;
        if (j)
                nsr_json_array_begin(j, NULL);
        _cleanup_free_ char *buf = nsr_malloc0(NSR_SESSION_PAYLOAD_MAX + 1);
        for (size_t i = 0; ids[i]; i++) {
                nsr_run_meta m = { 0 };
                _cleanup_close_ int run_fd = statefd >= 0 ? nsr_run_open(statefd, ids[i], &e) : -1;
                if (run_fd < 0 || nsr_run_meta_read(run_fd, &m, &e) < 0) {
                        nsr_run_meta_done(&m);
                        continue;
                }
                /* How many commands run now: the daemon says. */
                long running = -1;
                _cleanup_close_ int fd = nsr_session_connect(state_dir, ids[i], &e);
                if (fd >= 0 && nsr_session_send(fd, NSR_SMSG_PING, 0, 0, 0, NULL, 0, NULL, 0) >= 0) {
                        nsr_session_hdr h;
                        int fds[3];
                        if (nsr_session_recv(fd, &h, buf, fds) >= 0 && h.type == NSR_SMSG_PONG)
                                running = h.value;
                }
                if (j) {
                        nsr_json_object_begin(j, NULL);
                        nsr_json_string(j, "id", ids[i]);
                        nsr_json_int(j, "pid", m.pid);
                        nsr_json_strv(j, "projects", m.projects);
                        nsr_json_int(j, "started", (int64_t) m.start.tv_sec);
                        nsr_json_int(j, "commands_running", running);
                        _cleanup_free_ char *dir = nsr_session_dir(state_dir, ids[i]);
                        _cleanup_free_ char *ctl = nsr_asprintf("%s/ctl", dir);
                        nsr_json_string(j, "socket", ctl);
                        nsr_json_object_end(j);
                } else {
                        nsr_utf8_fprintf_line(stdout, "%s pid %d, %ld running, %s\n", ids[i], (int) m.pid, running,
                                              m.projects && m.projects[0] ? m.projects[0] : "");
                }
                nsr_run_meta_done(&m);
        }
        if (j) {
                nsr_json_array_end(j);
                putchar('\n');
        }
        return 0;
}

static int diff_cmd(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        _cleanup_free_ char *state_dir = NULL;
        _cleanup_close_ int fd = open_session(&diff_sub, argc, argv, &a, &state_dir);
        if (fd < 0)
                return fd == -2 ? 0 : fd == -3 ? NSR_EXIT_USAGE : 1;
        /* A session's id is its run's: its upper layer is the run's. */
        char *dargv[] = { (char *) "diff", (char *) "--state-dir", state_dir, (char *) a.id, NULL };
        return nsr_cmd_diff(4, dargv);
}

int nsr_cmd_session(int argc, char **argv) {
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                usage_session(argc < 2 ? stderr : stdout);
                return argc < 2 ? NSR_EXIT_USAGE : 0;
        }
        if (streq(argv[1], "start"))
                return start(argc - 1, argv + 1);
        if (streq(argv[1], "stop"))
                return stop_cmd(argc - 1, argv + 1);
        if (streq(argv[1], "list"))
                return list_cmd(argc - 1, argv + 1);
        if (streq(argv[1], "diff"))
                return diff_cmd(argc - 1, argv + 1);
        if (streq(argv[1], "commit"))
                return commit_cmd(argc - 1, argv + 1);
        say("nsrun: session: unknown subcommand %s\n", argv[1]);
        usage_session(stderr);
        return NSR_EXIT_USAGE;
}

/* ---- exec ------------------------------------------------------------------------ */

static void nsr_session_events_stop_p(nsr_session_events *ev) {
        (void) nsr_session_events_stop(ev);
}

static nsr_refused *mfree_refused(nsr_refused *rf) {
        free(rf);
        return NULL;
}

static int write_report(const char *state_dir, const sargs *a, const nsr_session_changes *before, int status,
                        const nsr_session_step *step, nsr_outfile *rep) {
        nsr_error e = { 0 };
        _cleanup_(nsr_session_changes_free) nsr_session_changes after = { 0 };
        _cleanup_free_ char *json = NULL;
        if (nsr_session_changes_take(state_dir, a->id, &after, &e) < 0 ||
            nsr_session_report(before, &after, a->id, a->rest, status, step, &json, &e) < 0 ||
            nsr_outfile_write(rep, json, strlen(json), &e) < 0) {
                nsr_error_prefix(&e, "--report");
                err_print(&e);
                return -1;
        }
        return 0;
}

/* ^Z: the step stops (SIGSTOP to its group), and so do we at once, with
 * the caller's terminal as it was (the step's main process may report
 * its stop late, or never: a shell stopped in the middle of a vfork);
 * fg goes on with both. The step's own stop (SUSPENDED) does the same;
 * one the client hears of after it sent a SIGCONT, before the agent says
 * it passed that on, is stale. */
static void suspend(int fd, nsr_stepio *io, unsigned *cont_pending) {
        nsr_stepio_suspend(io);
        (void) raise(SIGSTOP);
        nsr_stepio_resume(io);
        if (nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, SIGCONT, 0, NULL, 0, NULL, 0) >= 0)
                (*cont_pending)++;
}

static void stop_step(int fd, nsr_stepio *io, unsigned *cont_pending) {
        if (nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, SIGSTOP, 0, NULL, 0, NULL, 0) >= 0)
                suspend(fd, io, cont_pending);
}

static void on_exec_signal(int fd, int sfd, nsr_stepio *io, unsigned *cont_pending) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) != (ssize_t) sizeof(si))
                return;
        if (si.ssi_signo == SIGWINCH)
                nsr_stepio_winch(io);
        else if (si.ssi_signo == SIGCONT)
                nsr_stepio_resume(io); /* fg: the terminal is ours again */
        else if (si.ssi_signo == SIGTSTP)
                /* The step's group is orphaned (it leads a session): only
                 * SIGSTOP stops it. */
                stop_step(fd, io, cont_pending);
        else
                (void) nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, (int32_t) si.ssi_signo, 0, NULL, 0, NULL, 0);
}

int nsr_cmd_exec(int argc, char **argv) {
        /* A closed stdio fd is /dev/null for the command, and is filled
         * now, before a socket could take its number and be passed on as
         * the command's stdin. */
        for (int i = 0; i < 3; i++)
                if (fcntl(i, F_GETFD) < 0) {
                        int fd = open("/dev/null", O_RDWR);
                        if (fd >= 0 && fd != i) {
                                (void) dup2(fd, i);
                                close(fd);
                        }
                }
        _cleanup_(sargs_done) sargs a;
        if (parse(&exec_sub, argc, argv, &a) < 0)
                return NSR_EXIT_USAGE;
        if (a.help || !a.id || !a.rest || !a.rest[0]) {
                usage_session(a.help ? stdout : stderr);
                return a.help ? 0 : NSR_EXIT_USAGE;
        }
        _cleanup_free_ char *state_dir = state_dir_of(a.state_dir, false);
        if (!state_dir)
                return NSR_EXIT_FAILURE;
        nsr_error e = { 0 };
        /* The caller's environment as it is (--clearenv: none): the
         * session's server filters it through the deny list a one-shot
         * run uses, and the agent adds the run's own edits. */
        nsr_session_exec x = { .argv = a.rest,
                               .set = a.set,
                               .unset = a.unset,
                               .cwd = (char *) a.cwd,
                               .base = a.clearenv ? NULL : environ,
                               .has_base = true,
                               .clear = a.clearenv,
                               .rlimits = a.rlimits };
        _cleanup_free_ char *payload = NULL;
        size_t len = 0;
        int er = nsr_session_exec_encode(&x, &payload, &len, &e);
        if (er < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        /* --events-fd: the watcher starts before the control socket and
         * the step's pipes exist, so it holds none of them. */
        _cleanup_(nsr_session_events_stop_p) nsr_session_events events = { .pid = -1, .stop_fd = -1, .run_fd = -1 };
        if (a.events_fd >= 0 && nsr_session_events_start(state_dir, a.id, a.events_fd, &events, &e) < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        /* The command gets pipes and a pty that this client owns and
         * relays, never the caller's fds: what the step leaves behind
         * loses them when its main process exits (project/stepio.h). */
        _cleanup_(nsr_stepio_finish) nsr_stepio io = NSR_STEPIO_INIT;
        if (nsr_stepio_open(&io, &e) < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        /* Ctrl-C, kill and a hangup reach the command's process group; a
         * window size change its pty; ^Z stops it, then us. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGQUIT);
        sigaddset(&set, SIGWINCH);
        sigaddset(&set, SIGTSTP);
        sigaddset(&set, SIGCONT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        signal(SIGPIPE, SIG_IGN);
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        /* Connected last, with everything the request needs made: the
         * server's wake-up for the connection then finds the request too
         * (session.c, on_accept), one wake-up instead of two. */
        _cleanup_close_ int fd = connect_or_say(state_dir, a.id);
        if (fd < 0)
                return NSR_EXIT_FAILURE;
        /* --report: the file is opened first (outfile.h), then the layer's
         * state is taken before the command and compared after it. */
        _cleanup_(nsr_outfile_done) nsr_outfile rep = NSR_OUTFILE_INIT;
        _cleanup_(nsr_session_changes_free) nsr_session_changes before = { 0 };
        if (a.report && (nsr_outfile_open("--report", a.report, &rep, &e) < 0 ||
                         nsr_session_changes_take(state_dir, a.id, &before, &e) < 0)) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        struct timespec started_at, t0, t1;
        clock_gettime(CLOCK_REALTIME, &started_at);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = nsr_session_send(fd, NSR_SMSG_EXEC, 0, io.winsize, io.tty_flags, payload, len, io.send, io.n_send);
        nsr_stepio_sent(&io);
        if (r < 0) {
                say("nsrun: session %s: cannot send the command: %s\n", a.id, strerror(-r));
                return NSR_EXIT_FAILURE;
        }
        /* Not zeroed: an exec's messages are a few bytes, and 64 KiB of
         * zeroes were 16 page faults of a client that lives a millisecond
         * (nsr_session_recv ends each payload with its NUL). */
        _cleanup_free_ char *buf = nsr_realloc_array(NULL, NSR_SESSION_PAYLOAD_MAX + 1, 1);
        unsigned cont_pending = 0; /* SIGCONTs sent, not yet passed on */
        /* --timeout: SIGTERM to the step's process group, SIGKILL after
         * --kill-after; the session and what else runs in it go on. */
        _cleanup_(nsr_deadline_done) nsr_deadline deadline = { .fd = -1 };
        char dur[32];
        if (nsr_deadline_start(&deadline, &a.rc, &e) < 0) {
                (void) nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, SIGKILL, 0, NULL, 0, NULL, 0);
                nsr_stepio_finish(&io);
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        for (;;) {
                struct pollfd p[3 + NSR_STEPIO_POLL_MAX] = { { .fd = fd, .events = POLLIN },
                                                             { .fd = sfd, .events = POLLIN },
                                                             { .fd = deadline.fd, .events = POLLIN } };
                size_t n = 3 + nsr_stepio_pollfds(&io, p + 3);
                if (poll(p, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return NSR_EXIT_FAILURE;
                }
                nsr_stepio_dispatch(&io, p + 3, n - 3);
                if (p[2].revents) {
                        nsr_deadline_step ds = nsr_deadline_next(&deadline);
                        int sig = ds == NSR_DEADLINE_TERM ? SIGTERM : ds == NSR_DEADLINE_KILL ? SIGKILL : 0;
                        /* A stopped step would not see the SIGTERM. */
                        if (sig)
                                (void) nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, sig, 0, NULL, 0, NULL, 0);
                        if (sig == SIGTERM &&
                            nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, SIGCONT, 0, NULL, 0, NULL, 0) >= 0)
                                cont_pending++;
                }
                if (io.want_stop) {
                        io.want_stop = false;
                        stop_step(fd, &io, &cont_pending);
                }
                if (p[1].revents)
                        on_exec_signal(fd, sfd, &io, &cont_pending);
                if (!p[0].revents)
                        continue;
                nsr_session_hdr h;
                int got[3];
                r = nsr_session_recv(fd, &h, buf, got);
                if (r == -EBADMSG)
                        continue;
                if (r < 0) {
                        nsr_stepio_finish(&io);
                        say("nsrun: session %s ended before the command did\n", a.id);
                        return NSR_EXIT_FAILURE;
                }
                if (h.type == NSR_SMSG_STARTED && nsr_stepio_started(&io, TAKE_FD(got[0]), &e) < 0) {
                        (void) nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, SIGKILL, 0, NULL, 0, NULL, 0);
                        nsr_stepio_finish(&io);
                        err_print(&e);
                        return NSR_EXIT_FAILURE;
                }
                for (int k = 0; k < 3; k++)
                        safe_close(got[k]);
                if (h.type == NSR_SMSG_SUSPENDED && (h.flags & NSR_SMSG_CONTINUED) && cont_pending)
                        cont_pending--;
                else if (h.type == NSR_SMSG_SUSPENDED && !(h.flags & NSR_SMSG_CONTINUED) && !cont_pending)
                        suspend(fd, &io, &cont_pending);
                if (h.type == NSR_SMSG_ERROR) {
                        nsr_stepio_finish(&io);
                        say("nsrun: session %s: %s\n", a.id, buf);
                        return NSR_EXIT_FAILURE;
                }
                if (h.type != NSR_SMSG_EXIT)
                        continue;
                /* The step is over: nothing it left behind reaches the
                 * caller's terminal or stdio from now on. */
                nsr_stepio_finish(&io);
                if (h.flags & NSR_SMSG_NOT_RUN)
                        say("nsrun: %s\n", buf);
                /* As a one-shot run: 124 when the timeout ended it. */
                int code = deadline.fired ? NSR_EXIT_TIMEOUT : nsr_exit_code_from_status(h.value);
                if (deadline.fired)
                        say("nsrun: the command timed out after %s%s\n",
                            nsr_format_duration(a.rc.timeout_ms, dur, sizeof(dur)),
                            deadline.fired > 1 ? " (SIGKILL after --kill-after)" : "");
                _cleanup_free_ nsr_refused *refused = NULL;
                if (a.report && (h.flags & NSR_SMSG_REFUSED)) {
                        refused = nsr_malloc0(sizeof(*refused));
                        if (nsr_session_refused_decode(buf, h.len, refused) < 0)
                                refused = mfree_refused(refused);
                }
                clock_gettime(CLOCK_MONOTONIC, &t1);
                uint64_t dropped = nsr_session_events_stop(&events);
                nsr_session_step step = { .refused = refused,
                                          .events_dropped = dropped,
                                          .started_at = started_at,
                                          .duration_ms = (uint64_t) ((t1.tv_sec - t0.tv_sec) * 1000 +
                                                                     (t1.tv_nsec - t0.tv_nsec) / 1000000),
                                          .timed_out = deadline.fired > 0,
                                          .killed = deadline.fired > 1,
                                          .timeout_ms = a.rc.timeout_ms };
                if (a.report && write_report(state_dir, &a, &before, h.value, &step, &rep) < 0)
                        return NSR_EXIT_FAILURE;
                return code;
        }
}
