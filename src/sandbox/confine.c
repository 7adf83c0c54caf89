/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/dirent.h"
#include "base/evloop.h"
#include "base/outq.h"
#include "cli/runctl.h"
#include "egress/relay.h"
#include "sandbox/confine.h"
#include "sandbox/egresshelper.h"
#include "sandbox/killtree.h"
#include "sandbox/reaper.h"
#include "seccomp/compile.h"
#include "seccomp/refused.h"

extern char **environ;

/* ---- the read allow-list ---------------------------------------------------- */

int nsr_confine_list_dir(const char *dir, char ***ret, void *userdata) {
        (void) userdata;
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(AT_FDCWD, dir, 0, &d);
        if (r < 0)
                return r;
        char **v = nsr_malloc0(sizeof(char *));
        size_t n = 0;
        FOREACH_DIRENT(de, d, r = -errno) {
                if (++n > NSR_CONFINE_MAX_RULES * 4) {
                        r = -E2BIG;
                        break;
                }
                unsigned char t = de->d_type;
                if (t == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        t = S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
                }
                if (t != DT_LNK)
                        nsr_strv_extend(&v, de->d_name);
        }
        if (r < 0) {
                nsr_strv_free(v);
                return r;
        }
        *ret = v;
        return 0;
}

static int str_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The entries to grant so that everything below root is covered except
 * the excluded paths (absolute, below root): the entries of root and of
 * each ancestor of an excluded path (up to root), minus the excluded paths
 * and those ancestors. */
static int expand_around(const char *root, char *const *excluded, nsr_confine_lister list, void *userdata, size_t max,
                         char ***ret, nsr_error *err) {
        /* Excluded paths below another excluded path add nothing. */
        _cleanup_strv_free_ char **top = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; excluded[i]; i++) {
                bool covered = false;
                for (size_t k = 0; excluded[k] && !covered; k++)
                        if (k != i && nsr_path_under(excluded[i], excluded[k]) &&
                            (!streq(excluded[i], excluded[k]) || k < i))
                                covered = true;
                if (!covered)
                        nsr_strv_extend(&top, excluded[i]);
        }
        /* Their ancestors from root down: the dirs whose entries are
         * granted one by one. */
        size_t rl = streq(root, "/") ? 0 : strlen(root);
        _cleanup_strv_free_ char **split = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; top[i]; i++) {
                const char *p = top[i];
                if (!nsr_strv_contains(split, root))
                        nsr_strv_extend(&split, root);
                for (const char *s = strchr(p + rl + 1, '/'); s; s = strchr(s + 1, '/')) {
                        _cleanup_free_ char *a = nsr_strndup(p, (size_t) (s - p));
                        if (!nsr_strv_contains(split, a))
                                nsr_strv_extend(&split, a);
                }
        }
        char **out = nsr_malloc0(sizeof(char *));
        size_t n = 0;
        for (size_t i = 0; split[i]; i++) {
                _cleanup_strv_free_ char **names = NULL;
                if (list(split[i], &names, userdata) < 0)
                        continue; /* unreadable: nothing in it is granted */
                for (size_t k = 0; names && names[k]; k++) {
                        _cleanup_free_ char *p = nsr_path_join(split[i], names[k]);
                        if (nsr_strv_contains(top, p) || nsr_strv_contains(split, p))
                                continue;
                        if (++n > max) {
                                nsr_strv_free(out);
                                return nsr_error_setx(err, E2BIG,
                                                      "taking paths out of a Landlock grant takes one rule per entry "
                                                      "beside them, and there are more than %zu",
                                                      max);
                        }
                        nsr_strv_push(&out, TAKE_PTR(p));
                }
        }
        if (n > 1)
                qsort(out, n, sizeof(char *), str_cmp);
        *ret = out;
        return 0;
}

int nsr_confine_allowlist(char *const *hidden, nsr_confine_lister list, void *userdata, size_t max, char ***ret,
                          nsr_error *err) {
        _cleanup_strv_free_ char **h = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; hidden && hidden[i]; i++) {
                if (hidden[i][0] != '/')
                        return nsr_error_setx(err, EINVAL, "a hidden path must be absolute: %s", hidden[i]);
                _cleanup_free_ char *p = nsr_path_normalize(hidden[i]);
                if (streq(p, "/"))
                        return nsr_error_setx(err, EINVAL, "cannot hide / itself: nothing would be readable");
                nsr_strv_extend(&h, p);
        }
        return expand_around("/", h, list, userdata, max, ret, err);
}

int nsr_confine_protected(const char *project, char ***ret) {
        /* Today's list (profile.c, nsr_profile_is_protected), as paths:
         * namespace mode binds the same ones read-only. */
        static const char *const fixed[] = { ".git/hooks", ".git/config", ".git/config.worktree", ".git/worktrees" };
        static const char *const globs[] = { ".git/modules/*/hooks", ".git/modules/*/config" };
        _cleanup_free_ char *git = nsr_path_join(project, ".git");
        char **v = nsr_malloc0(sizeof(char *));
        struct stat st;
        if (lstat(git, &st) < 0) {
                *ret = v;
                return 0;
        }
        if (!S_ISDIR(st.st_mode)) {
                /* A worktree's pointer file: protected as a whole. */
                nsr_strv_extend(&v, git);
                *ret = v;
                return 0;
        }
        /* Protected whether they exist or not: their parent, an ancestor,
         * gets no right to create entries. */
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                nsr_strv_push(&v, nsr_path_join(project, fixed[i]));
        for (size_t i = 0; i < ELEMENTSOF(globs); i++) {
                _cleanup_free_ char *pat = nsr_path_join(project, globs[i]);
                glob_t g;
                if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
                        continue;
                for (size_t k = 0; k < g.gl_pathc; k++)
                        nsr_strv_extend(&v, g.gl_pathv[k]);
                globfree(&g);
        }
        *ret = v;
        return 0;
}

/* ---- running the command ------------------------------------------------------- */

_noreturn_ static void child_fail(int fd, const nsr_error *e) {
        (void) nsr_write_all(fd, e, sizeof(*e));
        _exit(1);
}

/* The refused-call record (refused.h): bpf[0] in its listener form, the
 * listener fd passed up to the monitor; the plain program where that
 * cannot be. */
typedef struct listener {
        char *prog;
        size_t len;
        int sock[2];
        int fd; /* the monitor's */
} listener;

static int load_bpf(const nsr_confine_opts *o, listener *ls, nsr_error *err) {
        for (size_t i = 0; i < o->n_bpf; i++) {
                if (i == 0 && ls->prog && ls->sock[1] >= 0) {
                        int fd = nsr_refused_install(ls->prog, ls->len);
                        if (fd >= 0) {
                                (void) nsr_refused_send_fd(ls->sock[1], fd);
                                close(fd);
                                continue;
                        }
                }
                int r = nsr_seccomp_load(o->bpf[i].data, o->bpf[i].len);
                if (r < 0)
                        return nsr_error_set(err, -r, "prctl(PR_SET_SECCOMP)");
        }
        return 0;
}

_noreturn_ static void child_main(const nsr_confine_opts *o, int errfd, pid_t parent, char **env,
                                  const sigset_t *old_mask, listener *ls) {
        const nsr_plan *p = o->plan;
        nsr_error e = { 0 };
        if (p->new_session && setsid() < 0)
                child_fail(errfd, (nsr_error_set(&e, errno, "setsid"), &e));
        if (p->die_with_parent) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                        child_fail(errfd, (nsr_error_set(&e, errno, "prctl"), &e));
                /* No pid namespace here: getppid() tells. */
                if (getppid() != parent)
                        _exit(1);
        }
        if (p->chdir && chdir(p->chdir) < 0)
                child_fail(errfd, (nsr_error_set(&e, errno, "Can't chdir to %s", p->chdir), &e));
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail(errfd, (nsr_error_set(&e, errno, "prctl(PR_SET_NO_NEW_PRIVS) failed"), &e));
        if (o->landlock_fd >= 0 && nsr_landlock_enforce(o->landlock_fd, &e) < 0)
                child_fail(errfd, &e);
        if (p->close_inherited_fds && nsr_fds_cloexec_above_stdio(p->sync_fd) < 0)
                child_fail(errfd, (nsr_error_set(&e, errno, "cannot close the inherited file descriptors"), &e));
        if (nsr_runctl_apply_rlimits(&p->run, &e) < 0)
                child_fail(errfd, &e);
        if (load_bpf(o, ls, &e) < 0)
                child_fail(errfd, &e);
        ls->sock[1] = safe_close(ls->sock[1]);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, old_mask, NULL);
        environ = env;
        if (strchr(p->argv[0], '/'))
                execv(p->argv[0], p->argv);
        else
                execvp(p->argv[0], p->argv);
        e = (nsr_error){ 0 };
        nsr_error_set(&e, errno, "execvp %s", p->argv[0]);
        e.kind = NSR_ERR_EXEC;
        child_fail(errfd, &e);
}

/* The monitor cannot go on: the command and all it started go, so that
 * nothing keeps writing to the projects while nsrun reports a failure.
 * The child is not reaped yet, so its pid is still its own. */
static int give_up(const nsr_confine_opts *o, pid_t child, int r) {
        (void) kill(child, SIGKILL);
        (void) nsr_killtree(o->spare, o->n_spare);
        return r;
}

/* --timeout without namespaces: the command's process group (it has a
 * session of its own) gets SIGTERM, then SIGKILL; whatever left the group
 * is killed with the other leftovers once the command is gone. */
static void deadline_hook(nsr_deadline *d, nsr_outq *events, pid_t child, nsr_launch_result *res) {
        nsr_deadline_step step = nsr_deadline_next(d);
        nsr_deadline_event(events, step);
        int sig = step == NSR_DEADLINE_TERM ? SIGTERM : step == NSR_DEADLINE_KILL ? SIGKILL : 0;
        if (!sig)
                return;
        if (sig == SIGTERM)
                res->timed_out = true;
        else
                res->killed_after = true;
        (void) kill(-child, sig);
        (void) kill(child, sig);
}

/* The monitor's state while the command runs: each fd it waits on is a
 * source of one event loop (base/evloop.h), with the relay's. */
typedef struct cmon {
        const nsr_confine_opts *o;
        pid_t child;
        int errfd;
        listener *ls;
        nsr_outq *evq;
        nsr_launch_result *res;
        nsr_evloop *loop;
        nsr_egress_helper *helper; /* serves the relay (egresshelper.h) */
        nsr_deadline deadline;
        nsr_evsrc *s_err, *s_notify, *s_listener;
        nsr_error child_err;
        size_t got;
        bool gone;
        int status;
} cmon;

static void on_listener(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        cmon *m = data;
        (void) s;
        if (ev & EPOLLIN)
                (void) nsr_refused_handle(m->o->refused, fd);
        else if (ev & (EPOLLHUP | EPOLLERR)) {
                m->s_listener = nsr_evloop_del(m->s_listener);
                m->ls->fd = safe_close(m->ls->fd);
        }
}

static void on_notify_sock(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        cmon *m = data;
        listener *ls = m->ls;
        (void) s;
        (void) ev;
        int got = nsr_refused_recv_fd(fd);
        if (got >= 0 && ls->fd < 0) {
                ls->fd = got;
                m->o->refused->active = true;
                if (nsr_evloop_add(m->loop, got, EPOLLIN, on_listener, m, &m->s_listener) < 0)
                        ls->fd = safe_close(ls->fd);
        } else if (got >= 0)
                close(got);
        if (got != -EAGAIN && got != -EINTR) {
                m->s_notify = nsr_evloop_del(m->s_notify);
                ls->sock[0] = safe_close(ls->sock[0]);
        }
}

static void on_deadline(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        cmon *m = data;
        (void) s;
        (void) fd;
        (void) ev;
        deadline_hook(&m->deadline, m->evq, m->child, m->res);
}

static void on_err_pipe(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        cmon *m = data;
        (void) s;
        (void) ev;
        ssize_t n = read(fd, (char *) &m->child_err + m->got, sizeof(m->child_err) - m->got);
        if (n > 0)
                m->got += (size_t) n;
        else if (n == 0 || errno != EINTR)
                m->s_err = nsr_evloop_del(m->s_err);
}

static void on_sfd(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        cmon *m = data;
        (void) s;
        (void) ev;
        struct signalfd_siginfo si;
        if (read(fd, &si, sizeof(si)) != (ssize_t) sizeof(si))
                return;
        if (si.ssi_signo == SIGCHLD) {
                int st;
                while (waitpid(m->child, &st, WNOHANG) == m->child) {
                        m->status = st;
                        m->gone = true;
                }
                return;
        }
        if (!m->res->forwarded_signal && nsr_signal_interrupts((int) si.ssi_signo))
                m->res->forwarded_signal = (int) si.ssi_signo;
        /* The child leads its session: its group is the tree
         * (kill_leftovers gets the rest). */
        nsr_signal_forward(m->child, (int) si.ssi_signo, m->o->plan->new_session ? NSR_REAPER_GROUP : 0);
        if (si.ssi_signo == SIGTSTP)
                (void) raise(SIGSTOP); /* ^Z: the command, then nsrun */
}

static int cmon_sources(cmon *m, int sfd) {
        int r = nsr_evloop_add(m->loop, sfd, EPOLLIN, on_sfd, m, NULL);
        if (r >= 0)
                r = nsr_evloop_add(m->loop, m->errfd, EPOLLIN, on_err_pipe, m, &m->s_err);
        if (r >= 0 && m->deadline.fd >= 0)
                r = nsr_evloop_add(m->loop, m->deadline.fd, EPOLLIN, on_deadline, m, NULL);
        if (r >= 0 && m->ls->sock[0] >= 0)
                r = nsr_evloop_add(m->loop, m->ls->sock[0], EPOLLIN, on_notify_sock, m, &m->s_notify);
        if (r >= 0)
                (void) nsr_outq_watch(m->evq, m->loop); /* failing, it writes on each line */
        return r;
}

static int monitor_loop(cmon *m, nsr_error *err) {
        const nsr_confine_opts *o = m->o;
        sigset_t set;
        nsr_forwarded_sigset(&set);
        sigaddset(&set, SIGCHLD);
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0)
                return give_up(o, m->child, nsr_error_set(err, errno, "Can't create signalfd"));
        if (nsr_deadline_start(&m->deadline, &o->plan->run, err) < 0) {
                (void) kill(m->child, SIGKILL);
                (void) waitpid(m->child, NULL, 0);
                return -EIO;
        }
        if (o->relay) {
                nsr_relay_parent_started(o->relay);
                /* The command's network bytes are parsed there, not here. */
                int k = nsr_egress_helper_start(o->relay, NULL, NULL, &m->helper, err);
                if (k < 0)
                        return give_up(o, m->child, k);
        }
        int r = nsr_evloop_new(&m->loop);
        if (r >= 0)
                r = cmon_sources(m, sfd);
        if (r < 0)
                return give_up(o, m->child, nsr_error_set(err, -r, "monitor: event loop"));
        while (!m->gone) {
                r = nsr_evloop_run_once(m->loop, -1);
                if (r < 0)
                        return give_up(o, m->child, nsr_error_set(err, -r, "epoll_wait"));
        }
        return 0;
}

/* After the loop: what the child reported, the leftovers, the result. */
static int monitor_end(cmon *m, nsr_error *err) {
        const nsr_confine_opts *o = m->o;
        nsr_launch_result *res = m->res;
        int errfd = m->errfd, status = m->status;
        size_t got = m->got;
        nsr_error child_err = m->child_err;
        /* The error pipe's write end died with the child (or the exec). */
        ssize_t n;
        while (got < sizeof(child_err) && (n = read(errfd, (char *) &child_err + got, sizeof(child_err) - got)) > 0)
                got += (size_t) n;
        /* The network's record first: the helper is in nsrun's tree too,
         * and would go with the command's leftovers. */
        if (m->helper) {
                nsr_egress_helper_finish(m->helper, &res->net);
                res->net_on = true;
        }
        /* Whatever the command left goes before anything is captured,
         * however deep or fast it forks (killtree.h). */
        (void) nsr_killtree(o->spare, o->n_spare);
        if (got == sizeof(child_err)) {
                nsr_error_sanitize(&child_err);
                *err = child_err;
                return -(child_err.code ? child_err.code : EIO);
        }
        nsr_outq_finish(m->evq, NSR_OUTQ_FINISH_MS);
        res->events_dropped = m->evq->dropped;
        res->exec_done = true;
        res->wait_status = status;
        res->exit_code = res->timed_out ? NSR_EXIT_TIMEOUT : nsr_exit_code_from_status(status);
        return 0;
}

static int monitor(const nsr_confine_opts *o, pid_t child, int errfd, listener *ls, nsr_launch_result *res,
                   nsr_error *err) {
        /* --events-fd lines of the monitor: one bounded queue, polled, so
         * a reader that stops reading cannot stop the deadline. */
        nsr_outq evq;
        nsr_outq_init(&evq, o->plan->proj.events_fd, 0, NSR_OUTQ_EVENTS_NOTE);
        if (o->refused)
                o->refused->events = &evq;
        cmon m = {
                .o = o, .child = child, .errfd = errfd, .ls = ls, .evq = &evq, .res = res, .deadline = { .fd = -1 }
        };
        int r = monitor_loop(&m, err);
        if (r >= 0)
                r = monitor_end(&m, err);
        /* The relay outlives the loop (its log is read later): out of it. */
        nsr_relay_detach(o->relay);
        m.loop = nsr_evloop_free(m.loop);
        m.helper = nsr_egress_helper_free(m.helper);
        nsr_deadline_done(&m.deadline);
        if (o->refused)
                o->refused->events = NULL;
        nsr_outq_done(&evq);
        return r;
}

static void listener_done(listener *ls) {
        free(ls->prog);
        safe_close(ls->sock[0]);
        safe_close(ls->sock[1]);
        safe_close(ls->fd);
}

int nsr_confine_run(const nsr_confine_opts *o, nsr_launch_result *ret, nsr_error *err) {
        const nsr_plan *p = o->plan;
        nsr_launch_result res = { .exit_code = 1 };
        _cleanup_strv_free_ char **env = nsr_plan_build_env(p, environ);
        if (o->tmpdir) {
                size_t n = nsr_strv_length(env), k = 0;
                for (size_t i = 0; i < n; i++)
                        if (nsr_startswith(env[i], "TMPDIR="))
                                free(env[i]);
                        else
                                env[k++] = env[i];
                env[k] = NULL;
                nsr_strv_push(&env, nsr_asprintf("TMPDIR=%s", o->tmpdir));
        }
        for (char *const *e = o->extra_env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                size_t n = nsr_strv_length(env), k = 0, l = eq ? (size_t) (eq - *e) + 1 : 0;
                for (size_t i = 0; i < n; i++)
                        if (l && strncmp(env[i], *e, l) == 0)
                                free(env[i]);
                        else
                                env[k++] = env[i];
                env[k] = NULL;
                nsr_strv_extend(&env, *e);
        }
        if (p->chdir) {
                size_t n = nsr_strv_length(env), k = 0;
                for (size_t i = 0; i < n; i++)
                        if (nsr_startswith(env[i], "PWD="))
                                free(env[i]);
                        else
                                env[k++] = env[i];
                env[k] = NULL;
                nsr_strv_push(&env, nsr_asprintf("PWD=%s", p->chdir));
        }
        _cleanup_(listener_done) listener ls = { .sock = { -1, -1 }, .fd = -1 };
        if (o->refused && o->refused->prog && o->n_bpf > 0 &&
            nsr_refused_notify_prog(o->bpf[0].data, o->bpf[0].len, &ls.prog, &ls.len) >= 0 &&
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ls.sock) < 0)
                return nsr_error_set(err, errno, "socketpair()");
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2()");
        _cleanup_close_ int rfd = pipefd[0];
        _cleanup_close_ int wfd = pipefd[1];

        sigset_t block, old;
        nsr_forwarded_sigset(&block);
        sigaddset(&block, SIGCHLD);
        sigprocmask(SIG_BLOCK, &block, &old);
        /* Orphans of the command come to us, so that none survives it. */
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        pid_t parent = getpid();
        pid_t child = fork();
        if (child == 0) {
                rfd = safe_close(rfd);
                ls.sock[0] = safe_close(ls.sock[0]);
                child_main(o, wfd, parent, env, &old, &ls);
        }
        int r;
        if (child < 0)
                r = nsr_error_set(err, errno, "fork");
        else {
                wfd = safe_close(wfd);
                ls.sock[1] = safe_close(ls.sock[1]);
                res.child_pid = child;
                r = monitor(o, child, rfd, &ls, &res, err);
        }
        (void) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        sigprocmask(SIG_SETMASK, &old, NULL);
        *ret = res;
        return r;
}

/* ---- the rules for a project-mode command ------------------------------------------------ */

/* Devices a command writes to without owning anything: the usual sinks
 * and sources, and the terminal (already open ones need no rule:
 * Landlock checks at open). */
static const char *const write_devices[] = { "/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
                                             "/dev/urandom", "/dev/tty",  "/dev/ptmx" };

/* A path as the kernel will find it: its parent dir resolved (Landlock's
 * add_path follows the symlinks in the parents, not in the last
 * component), so that comparing it with the hidden paths, which are real
 * paths, tells what the grant covers. */
static char *canonical(const char *path) {
        _cleanup_free_ char *norm = nsr_path_normalize(path);
        const char *slash = strrchr(norm, '/');
        if (!slash || slash == norm || !slash[1])
                return TAKE_PTR(norm);
        _cleanup_free_ char *parent = nsr_strndup(norm, (size_t) (slash - norm));
        char buf[PATH_MAX];
        if (!realpath(parent, buf))
                return TAKE_PTR(norm);
        return nsr_path_join(buf, slash + 1);
}

int nsr_confine_terminals(char ***ret) {
        char **v = nsr_malloc0(sizeof(char *));
        for (int fd = 0; fd <= 2; fd++) {
                char buf[64];
                if (!isatty(fd) || ttyname_r(fd, buf, sizeof(buf)) != 0 || !nsr_startswith(buf, "/dev/pts/"))
                        continue;
                if (!nsr_strv_contains(v, buf))
                        nsr_strv_extend(&v, buf);
        }
        *ret = v;
        return 0;
}

void nsr_confine_rules_done(nsr_landlock_rules *r) {
        nsr_strv_free(r->read);
        nsr_strv_free(r->write);
        nsr_strv_free(r->write_files);
        *r = (nsr_landlock_rules){ 0 };
}

int nsr_confine_rules(const nsr_confine_paths *in, nsr_landlock_rules *ret, nsr_error *err) {
        _cleanup_strv_free_ char **writable = nsr_malloc0(sizeof(char *));
        for (char *const *p = in->projects; p && *p; p++)
                nsr_strv_extend(&writable, *p);
        for (char *const *p = in->rw; p && *p; p++)
                nsr_strv_push(&writable, canonical(*p));
        if (in->tmpdir)
                nsr_strv_extend(&writable, in->tmpdir);
        /* A writable tree is readable as a whole, so nothing in it can be
         * hidden (Landlock only adds): refuse rather than show it. */
        for (char *const *h = in->hidden; h && *h; h++)
                for (char **w = writable; *w; w++)
                        if (nsr_path_under(*h, *w) && !streq(*w, in->tmpdir))
                                return nsr_error_setx(err, EINVAL,
                                                      "%s would be writable, but %s inside it must stay hidden, which "
                                                      "Landlock cannot do (it can only grant): best-effort mode "
                                                      "cannot run on it",
                                                      *w, *h);
        /* A project with protected git paths is granted around them:
         * readable as a whole, writable entry by entry beside them, so
         * writes to .git/hooks or .git/config fail with EACCES during the
         * run, as in namespace mode. */
        _cleanup_strv_free_ char **projects_read = nsr_malloc0(sizeof(char *));
        _cleanup_strv_free_ char **w2 = nsr_malloc0(sizeof(char *));
        for (char **w = writable; *w; w++) {
                _cleanup_strv_free_ char **prot = NULL;
                bool is_project = in->projects && nsr_strv_contains(in->projects, *w);
                if (is_project)
                        (void) nsr_confine_protected(*w, &prot);
                if (!prot || !prot[0]) {
                        nsr_strv_extend(&w2, *w);
                        continue;
                }
                _cleanup_strv_free_ char **around = NULL;
                int k = expand_around(*w, prot, nsr_confine_list_dir, NULL, NSR_CONFINE_MAX_RULES, &around, err);
                if (k < 0)
                        return k;
                for (size_t i = 0; around[i]; i++)
                        nsr_strv_extend(&w2, around[i]);
                nsr_strv_extend(&projects_read, *w);
        }
        nsr_strv_free(writable);
        writable = TAKE_PTR(w2);
        nsr_landlock_rules r = { 0 };
        /* /dev/pts holds the user's other terminals: reading one steals
         * keystrokes, writing one prints into another session. Hidden as
         * a whole; the terminals nsrun runs on are granted one by one. */
        _cleanup_strv_free_ char **hidden = nsr_strv_copy(in->hidden);
        if (!hidden)
                hidden = nsr_malloc0(sizeof(char *));
        nsr_strv_extend(&hidden, "/dev/pts");
        int k = nsr_confine_allowlist(hidden, nsr_confine_list_dir, NULL, NSR_CONFINE_MAX_RULES, &r.read, err);
        if (k < 0)
                return k;
        /* --ro DIR grants DIR, even inside a hidden path (the user asked
         * for it), but never the hidden paths below DIR (secrets, the state
         * dir, /dev/pts): around those it is expanded entry by entry, as
         * the allow-list is. */
        for (char *const *p0 = in->ro; p0 && *p0; p0++) {
                _cleanup_free_ char *p = canonical(*p0);
                _cleanup_strv_free_ char **below = nsr_malloc0(sizeof(char *));
                for (char **h = hidden; *h; h++)
                        if (nsr_path_under(*h, p) && !streq(*h, p))
                                nsr_strv_extend(&below, *h);
                if (!below[0]) {
                        nsr_strv_extend(&r.read, p);
                        continue;
                }
                _cleanup_strv_free_ char **around = NULL;
                k = expand_around(p, below, nsr_confine_list_dir, NULL, NSR_CONFINE_MAX_RULES, &around, err);
                if (k < 0) {
                        nsr_confine_rules_done(&r);
                        return k;
                }
                for (size_t i = 0; around[i]; i++)
                        nsr_strv_extend(&r.read, around[i]);
        }
        for (char **p = projects_read; *p; p++)
                nsr_strv_extend(&r.read, *p);
        r.write = TAKE_PTR(writable);
        r.write_files = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; i < ELEMENTSOF(write_devices); i++)
                nsr_strv_extend(&r.write_files, write_devices[i]);
        for (char *const *t = in->terminals; t && *t; t++)
                if (nsr_startswith(*t, "/dev/pts/") && !strchr(*t + 9, '/'))
                        nsr_strv_extend(&r.write_files, *t);
        r.deny_tcp = true;
        r.scope = true;
        *ret = r;
        return 0;
}
