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

#include "cli/cli.h"
#include "cmd/cmd.h"
#include "base/json.h"
#include "base/outfile.h"
#include "cli/plan.h"
#include "cli/profileset.h"
#include "project/project.h"
#include "sandbox/reaper.h"
#include "project/sesscommit.h"
#include "project/session.h"
#include "txn/state.h"
#include "base/utf8.h"

extern char **environ;

/* Every line goes through the one escaping function: messages carry
 * names and text a sandboxed command chose. */
#define say(...) nsr_utf8_fprintf(stderr, __VA_ARGS__)

static void err_print(const nsr_error *e) {
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(e, buf, sizeof(buf));
        say("nsrun: %s\n", buf);
}

static const char usage_session[] =
        "usage: nsrun session start [--json] [--idle-timeout DURATION] --project DIR [project-mode options]\n"
        "       nsrun session stop [--state-dir DIR] [--commit | --discard] ID\n"
        "       nsrun session list [--state-dir DIR] [--json]\n"
        "       nsrun session diff [--state-dir DIR] ID\n"
        "       nsrun session commit [--state-dir DIR] ID\n"
        "       nsrun exec [--state-dir DIR] [--cwd DIR] [--env NAME=VALUE] [--unset-env NAME]\n"
        "                  [--report FILE] ID -- COMMAND [ARGS]\n"
        "A session keeps one project sandbox up for many commands; see nsrun(1), SESSIONS.\n";

/* The small option set of the session subcommands. */
typedef struct sargs {
        const char *state_dir;
        const char *id;
        bool json, help, commit, discard;
        char **rest; /* exec: the command */
        char **set, **unset;
        const char *cwd;
        const char *report;
} sargs;

static void sargs_done(sargs *a) {
        nsr_strv_free(a->set);
        nsr_strv_free(a->unset);
}

/* allowed: s state-dir, j json, c commit/discard, x exec options. The first
 * word that is not an option is the id; with x, what follows it (after an
 * optional "--") is the command. */
static int parse(int argc, char **argv, const char *allowed, sargs *a) {
        *a = (sargs){ 0 };
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i];
                const char *val = NULL;
                _cleanup_free_ char *name = NULL;
                const char *eq = s[0] == '-' && s[1] == '-' ? strchr(s, '=') : NULL;
                if (eq) {
                        name = nsr_strndup(s, (size_t) (eq - s));
                        val = eq + 1;
                        s = name;
                }
#define VALUE()                                                                                  \
        do {                                                                                     \
                if (!val) {                                                                      \
                        if (i + 1 >= argc) {                                                     \
                                say("nsrun: %s %s takes an argument\n", argv[0], s);             \
                                return -EINVAL;                                                  \
                        }                                                                        \
                        val = argv[++i];                                                         \
                }                                                                                \
        } while (0)
                if (a->id) {
                        if (!strchr(allowed, 'x')) {
                                say("nsrun: %s: unexpected argument %s\n", argv[0], argv[i]);
                                return -EINVAL;
                        }
                        a->rest = argv + i + (streq(argv[i], "--") ? 1 : 0);
                        break;
                }
                if (streq(s, "--help") || streq(s, "-h"))
                        a->help = true;
                else if (streq(s, "--state-dir") && strchr(allowed, 's')) {
                        VALUE();
                        a->state_dir = val;
                } else if (streq(s, "--json") && strchr(allowed, 'j'))
                        a->json = true;
                else if (streq(s, "--commit") && strchr(allowed, 'c'))
                        a->commit = true;
                else if (streq(s, "--discard") && strchr(allowed, 'c'))
                        a->discard = true;
                else if (streq(s, "--cwd") && strchr(allowed, 'x')) {
                        VALUE();
                        a->cwd = val;
                } else if (streq(s, "--report") && strchr(allowed, 'x')) {
                        VALUE();
                        a->report = val;
                } else if (streq(s, "--env") && strchr(allowed, 'x')) {
                        VALUE();
                        if (!strchr(val, '=') || val[0] == '=') {
                                say("nsrun: --env wants NAME=VALUE, not \"%s\"\n", val);
                                return -EINVAL;
                        }
                        nsr_strv_extend(&a->set, val);
                } else if (streq(s, "--unset-env") && strchr(allowed, 'x')) {
                        VALUE();
                        if (!*val || strchr(val, '=')) {
                                say("nsrun: --unset-env wants a NAME, not \"%s\"\n", val);
                                return -EINVAL;
                        }
                        nsr_strv_extend(&a->unset, val);
                } else if (s[0] == '-' && s[1] != '\0') {
                        say("nsrun: %s: unknown option %s\n", argv[0], argv[i]);
                        return -EINVAL;
                } else
                        a->id = argv[i];
#undef VALUE
        }
        if (a->commit && a->discard) {
                say("nsrun: --commit and --discard cannot be combined\n");
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
        if (nsr_session_recover(state_dir, &ids, &e) < 0)
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

static int start(int argc, char **argv) {
        bool json = false;
        unsigned idle = NSR_SESSION_IDLE_DEFAULT;
        _cleanup_strv_free_ char **rest = nsr_malloc0(sizeof(char *));
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i];
                if (streq(s, "--help") || streq(s, "-h")) {
                        fputs(usage_session, stdout);
                        return 0;
                } else if (streq(s, "--json"))
                        json = true;
                else if (streq(s, "--idle-timeout") || nsr_startswith(s, "--idle-timeout=")) {
                        const char *v = s[14] == '=' ? s + 15 : i + 1 < argc ? argv[++i] : NULL;
                        if (!v || nsr_session_parse_duration(v, &idle) < 0) {
                                say("nsrun: --idle-timeout takes a duration (30m, 90s, 2h, 0 for none), not \"%s\"\n",
                                    v ? v : "");
                                return NSR_EXIT_FAILURE;
                        }
                } else if (streq(s, "--")) {
                        say("nsrun: session start takes no command: run commands with \"nsrun exec ID -- CMD\"\n");
                        return NSR_EXIT_FAILURE;
                } else
                        nsr_strv_extend(&rest, s);
        }
        nsr_error e = { 0 };
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        nsr_cli_result res;
        if (nsr_profileset_parse(rest, nsr_strv_length(rest), environ, &plan, &res, NULL, &e) < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
        if (!plan->proj.projects) {
                say("nsrun: session start needs --project DIR\n");
                return NSR_EXIT_FAILURE;
        }
        if (plan->argv) {
                say("nsrun: session start takes no command: run commands with \"nsrun exec ID -- CMD\"\n");
                return NSR_EXIT_FAILURE;
        }
        /* What a one-shot run writes at its end has no end to wait for
         * here: exec --report covers one command. */
        const char *endless = plan->proj.report_file ? "--report" : plan->proj.report_fd != -1 ? "--report-fd"
                                                           : plan->proj.events_fd != -1 ? "--events-fd"
                                                           : plan->trace_bwrap || plan->trace_bwrap_fd != -1
                                                                   ? "--trace-bwrap"
                                                                   : NULL;
        if (endless) {
                say("nsrun: session start does not take %s (\"nsrun exec --report FILE\" reports one command)\n",
                    endless);
                return NSR_EXIT_FAILURE;
        }
        if (plan->proj.keep || plan->proj.discard) {
                say("nsrun: session start: the outcome is chosen at \"nsrun session stop\" (--commit, --discard)\n");
                return NSR_EXIT_FAILURE;
        }
        plan->argv = nsr_malloc0(2 * sizeof(char *));
        plan->argv[0] = nsr_strdup("nsrun-session");
        _cleanup_free_ char *state_opt = plan->proj.state_dir ? nsr_strdup(plan->proj.state_dir) : NULL;
        _cleanup_(nsr_project_freep) nsr_project *pj = NULL;
        if (nsr_project_prepare(plan, true, &pj, &e) < 0) {
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

        int rp[2];
        if (pipe2(rp, O_CLOEXEC) < 0) {
                say("nsrun: pipe2: %s\n", strerror(errno));
                return NSR_EXIT_FAILURE;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
                say("nsrun: fork: %s\n", strerror(errno));
                return NSR_EXIT_FAILURE;
        }
        if (pid == 0) {
                /* The daemon: detached from the caller's session and
                 * terminal, its stdio on /dev/null. Setup errors still
                 * reach the caller, through the start pipe. */
                close(rp[0]);
                if (setsid() < 0)
                        _exit(1);
                pid_t d = fork();
                if (d != 0)
                        _exit(d < 0 ? 1 : 0);
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
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        _cleanup_close_ int rfd = rp[0];
        (void) nsr_read_all(rfd, 64 * 1024, &text, &len);
        /* "PID\n" from the daemon, then the run's notes and "ok\n", or
         * why it failed. */
        char *nl = text ? strchr(text, '\n') : NULL;
        char *tail = nl ? nl + 1 : NULL;
        size_t rl = tail ? strlen(tail) : 0;
        bool ok = tail && rl >= 3 && streq(tail + rl - 3, "ok\n") && (rl == 3 || tail[rl - 4] == '\n');
        if (!ok) {
                const char *why = tail && *tail ? tail : "nsrun: the session daemon failed before it was ready\n";
                say("%s", why);
                return NSR_EXIT_FAILURE;
        }
        tail[rl - 3] = '\0';
        if (*tail)
                say("%s", tail);
        *nl = '\0';
        if (!json) {
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
        nsr_json_uint(j, "idle_timeout", idle);
        nsr_json_object_end(j);
        putchar('\n');
        return 0;
}

/* ---- commit, stop, list, diff -------------------------------------------------- */

/* Prints what a session commit did; 0, or 1 when an apply failed. */
static int session_commit(const char *state_dir, const char *id, bool *ret_conflict) {
        nsr_error e = { 0 };
        nsr_session_commit_result res = { 0 };
        if (nsr_session_commit(state_dir, id, &res, &e) < 0) {
                err_print(&e);
                return 1;
        }
        for (size_t i = 0; res.lines && res.lines[i]; i++)
                say("%s\n", res.lines[i]);
        if (ret_conflict)
                *ret_conflict = res.conflict;
        int rc = res.failed ? 1 : 0;
        nsr_session_commit_done(&res);
        return rc;
}

/* The start of the subcommands that talk to one session: the options,
 * the usage, the state dir and the connection. Returns the connected fd,
 * -1 after saying what failed, or -2 after --help. */
static int open_session(int argc, char **argv, const char *allowed, sargs *a, char **ret_state_dir) {
        if (parse(argc, argv, allowed, a) < 0)
                return -1;
        if (a->help || !a->id) {
                fputs(usage_session, a->help ? stdout : stderr);
                return a->help ? -2 : -1;
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
        _cleanup_close_ int fd = open_session(argc, argv, "s", &a, &state_dir);
        if (fd < 0)
                return fd == -2 ? 0 : 1;
        return session_commit(state_dir, a.id, NULL);
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
        _cleanup_close_ int fd = open_session(argc, argv, "sc", &a, &state_dir);
        if (fd < 0)
                return fd == -2 ? 0 : 1;
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
                bool conflict = false;
                int rc = session_commit(state_dir, a.id, &conflict);
                if (keep_with_base(state_dir, a.id,
                                   rc ? _NSR_OUTCOME_INVALID : conflict ? NSR_OUTCOME_CONFLICT : NSR_OUTCOME_COMMITTED) < 0)
                        rc = 1;
                if (rc)
                        say("nsrun: the session's changes stay as kept run %s\n", a.id);
                return rc;
        }
}

static int list_cmd(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        if (parse(argc, argv, "sj", &a) < 0)
                return 1;
        if (a.help || a.id) {
                fputs(usage_session, a.help ? stdout : stderr);
                return a.help ? 0 : 1;
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
                        _cleanup_free_ char *line = nsr_asprintf("%s pid %d, %ld running, %s\n", ids[i], (int) m.pid,
                                                                 running, m.projects && m.projects[0] ? m.projects[0] : "");
                        _cleanup_free_ char *shown = nsr_utf8_escape_flags(line, NSR_ESCAPE_MESSAGE);
                        fputs(shown, stdout);
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
        _cleanup_close_ int fd = open_session(argc, argv, "s", &a, &state_dir);
        if (fd < 0)
                return fd == -2 ? 0 : 1;
        /* A session's id is its run's: its upper layer is the run's. */
        char *dargv[] = { (char *) "diff", (char *) "--state-dir", state_dir, (char *) a.id, NULL };
        return nsr_cmd_diff(4, dargv);
}

int nsr_cmd_session(int argc, char **argv) {
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                fputs(usage_session, argc < 2 ? stderr : stdout);
                return argc < 2 ? 1 : 0;
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
        fputs(usage_session, stderr);
        return 1;
}

/* ---- exec ------------------------------------------------------------------------ */

static int write_report(const char *state_dir, const sargs *a, const nsr_session_changes *before, int status,
                        nsr_outfile *rep) {
        nsr_error e = { 0 };
        _cleanup_(nsr_session_changes_free) nsr_session_changes after = { 0 };
        _cleanup_free_ char *json = NULL;
        if (nsr_session_changes_take(state_dir, a->id, &after, &e) < 0 ||
            nsr_session_report(before, &after, a->id, a->rest, status, &json, &e) < 0 ||
            nsr_outfile_write(rep, json, strlen(json), &e) < 0) {
                nsr_error_prefix(&e, "--report");
                err_print(&e);
                return -1;
        }
        return 0;
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
        if (parse(argc, argv, "sx", &a) < 0)
                return NSR_EXIT_FAILURE;
        if (a.help || !a.id || !a.rest || !a.rest[0]) {
                fputs(usage_session, a.help ? stdout : stderr);
                return a.help ? 0 : NSR_EXIT_FAILURE;
        }
        _cleanup_free_ char *state_dir = state_dir_of(a.state_dir, false);
        if (!state_dir)
                return NSR_EXIT_FAILURE;
        nsr_error e = { 0 };
        nsr_session_exec x = { .argv = a.rest, .set = a.set, .unset = a.unset, .cwd = (char *) a.cwd };
        _cleanup_free_ char *payload = NULL;
        size_t len = 0;
        if (nsr_session_exec_encode(&x, &payload, &len, &e) < 0) {
                err_print(&e);
                return NSR_EXIT_FAILURE;
        }
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
        /* Our stdio goes to the command. */
        int fds[3] = { 0, 1, 2 };
        /* Ctrl-C, kill and a hangup reach the command's process group. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGQUIT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        int r = nsr_session_send(fd, NSR_SMSG_EXEC, 0, 0, 0, payload, len, fds, 3);
        if (r < 0) {
                say("nsrun: session %s: cannot send the command: %s\n", a.id, strerror(-r));
                return NSR_EXIT_FAILURE;
        }
        _cleanup_free_ char *buf = nsr_malloc0(NSR_SESSION_PAYLOAD_MAX + 1);
        for (;;) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return NSR_EXIT_FAILURE;
                }
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        if (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                (void) nsr_session_send(fd, NSR_SMSG_SIGNAL, 0, (int32_t) si.ssi_signo, 0, NULL, 0,
                                                        NULL, 0);
                }
                if (!p[0].revents)
                        continue;
                nsr_session_hdr h;
                int got[3];
                r = nsr_session_recv(fd, &h, buf, got);
                if (r == -EBADMSG)
                        continue;
                if (r < 0) {
                        say("nsrun: session %s ended before the command did\n", a.id);
                        return NSR_EXIT_FAILURE;
                }
                if (h.type == NSR_SMSG_ERROR) {
                        say("nsrun: session %s: %s\n", a.id, buf);
                        return NSR_EXIT_FAILURE;
                }
                if (h.type != NSR_SMSG_EXIT)
                        continue;
                if (h.flags & NSR_SMSG_NOT_RUN)
                        say("nsrun: %s\n", buf);
                int code = nsr_exit_code_from_status(h.value);
                if (a.report && write_report(state_dir, &a, &before, h.value, &rep) < 0)
                        return NSR_EXIT_FAILURE;
                return code;
        }
}
