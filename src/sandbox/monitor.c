/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The monitor (launch_monitor): after the clone it waits in one event loop
 * for the command (signals forwarded, the error and status pipes, the
 * deadline, the refused-call listener, the session server's fds), and
 * fills the result: exit status, timeout, network counters. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "base/sockmsg.h"
#include "base/timing.h"
#include "sandbox/launch-internal.h"
#include "sandbox/reaper.h"
#include "seccomp/refused.h"

static void write_exit_status(const nsr_plan *p, int code) {
        if (p->json_status_fd == -1)
                return;
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{ \"exit-code\": %i }\n", code);
        (void) nsr_write_all(p->json_status_fd, buf, (size_t) n);
}

/* The value of counter name in a /proc/net/snmp file: "Ip: A B ..."
 * header lines followed by value lines (snmp), or "Name value" lines
 * (snmp6). 0 when it is not there. */
static uint64_t snmp_counter(int fd, const char *prefix, const char *name) {
        char buf[8192];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        size_t pl = strlen(prefix), nl = strlen(name);
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, prefix, pl) != 0)
                        continue;
                if (pl == 0) { /* snmp6: "Ip6OutNoRoutes   12" */
                        if (strncmp(line, name, nl) == 0 && (line[nl] == ' ' || line[nl] == '\t'))
                                return strtoull(line + nl, NULL, 10);
                        continue;
                }
                /* snmp: this is the header; the values are on the next line. */
                char *values = next;
                if (!values || strncmp(values, prefix, pl) != 0)
                        return 0;
                next = strchr(values, '\n');
                if (next)
                        *next++ = '\0';
                char *hs = NULL, *vs = NULL;
                char *h = strtok_r(line + pl, " ", &hs), *v = strtok_r(values + pl, " ", &vs);
                for (; h && v; h = strtok_r(NULL, " ", &hs), v = strtok_r(NULL, " ", &vs))
                        if (streq(h, name))
                                return strtoull(v, NULL, 10);
                return 0;
        }
        return 0;
}

/* --timeout: SIGTERM to every process of the sandbox, then SIGKILL to
 * pid 1, which takes the whole pid namespace down. Without a pid
 * namespace only the process nsrun started gets them. */
static void deadline_hook(launch *l, nsr_deadline *d, pid_t child, bool child_gone, nsr_launch_result *res) {
        nsr_deadline_step step = nsr_deadline_next(d);
        if (child_gone)
                return;
        bool pidns = l->plan->unshare_pid && need_reaper(l->plan);
        nsr_deadline_event(&l->events_q, step);
        switch (step) {
        case NSR_DEADLINE_TERM:
                res->timed_out = true;
                if (pidns)
                        (void) nsr_signal_pidns(child, SIGTERM);
                else
                        (void) kill(child, SIGTERM);
                return;
        case NSR_DEADLINE_KILL:
                res->killed_after = true;
                (void) kill(child, SIGKILL);
                return;
        case NSR_DEADLINE_NONE:
        case _NSR_DEADLINE_STEP_MAX:
        case _NSR_DEADLINE_STEP_INVALID:
                break;
        }
}

/* The relay's listeners (four at most) and the answerer's two sockets. */
#define WAKE_MAX 8

/* The monitor's state while the command runs: every fd it waits on is a
 * source of one event loop (base/evloop.h), with the relay's and the
 * session server's. */
typedef struct mon {
        launch *l;
        pid_t child;
        nsr_launch_result *res;
        nsr_evloop *loop;
        int sfd;
        nsr_deadline deadline;
        nsr_evsrc *s_err, *s_status, *s_deadline, *s_notify, *s_listener, *s_direct, *s_detach;
        /* The egress helper's wake-up (launch.c): the relay's and the
         * answerer's control sockets until their sockets come, then
         * those sockets. */
        nsr_evsrc *s_relay_ctl, *s_dns_ctl, *s_wake[WAKE_MAX];
        size_t n_wake;
        nsr_error child_err;
        size_t err_got;
        bool err_eof, have_status, child_gone, pid1_exiting;
        int status;
} mon;

/* ---- the egress helper, forked on the sandbox's first use of the network ----
 *
 * The monitor never reads the sandbox's network bytes: it takes the
 * sockets the child sent before the command existed, watches them for
 * readiness only, and forks the helper at the first connection, query or
 * passed-on connect, which waits for it meanwhile. */

static void wake_sources_del(mon *m) {
        m->s_relay_ctl = nsr_evloop_del(m->s_relay_ctl);
        m->s_dns_ctl = nsr_evloop_del(m->s_dns_ctl);
        for (size_t i = 0; i < m->n_wake; i++)
                m->s_wake[i] = nsr_evloop_del(m->s_wake[i]);
        m->n_wake = 0;
}

/* No helper: nobody serves. The monitor's copies of the relay's and the
 * answerer's sockets are the only ones, so closing them refuses every
 * later connection and query; passed-on connects are refused too. The
 * record says the helper died, as when it dies later. */
static void helper_unavailable(mon *m) {
        launch *l = m->l;
        l->helper_failed = true;
        l->relay = nsr_relay_free(l->relay);
        l->dns = nsr_dns_free(l->dns);
        l->direct = nsr_direct_free(l->direct);
        m->s_direct = nsr_evloop_del(m->s_direct);
        l->direct_sock = safe_close(l->direct_sock);
        if (l->listener >= 0)
                nsr_direct_sent_fail(&l->direct_sent, l->listener);
}

static bool helper_waits(const launch *l) {
        return l->helper_lazy && !l->helper && !l->helper_failed;
}

static void helper_wake(mon *m) {
        launch *l = m->l;
        wake_sources_del(m);
        if (!helper_waits(l))
                return;
        nsr_error e = { 0 };
#ifdef NSR_TEST_HOOKS
        /* A fork that fails: the tests show nobody waits for ever. */
        if (getenv("NSRUN_TEST_HELPER_FORK_FAILS")) {
                helper_unavailable(m);
                return;
        }
#endif
        if (launch_start_helper(l, &e) < 0)
                helper_unavailable(m);
}

static void on_wake(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        (void) s;
        (void) fd;
        (void) ev;
        helper_wake(data);
}

static void watch_wake_fds(mon *m, const int *fds, size_t n) {
        for (size_t i = 0; i < n && helper_waits(m->l); i++)
                if (m->n_wake < WAKE_MAX &&
                    nsr_evloop_add(m->loop, fds[i], EPOLLIN, on_wake, m, &m->s_wake[m->n_wake]) >= 0)
                        m->n_wake++;
                else /* a socket it cannot watch: the helper now, rather than never */
                        helper_wake(m);
}

/* The sockets of the relay (relay) or of the answerer, taken from their
 * control socket if they came: how many went into fds, or -1 when they
 * have not come yet. */
static ssize_t take_wake_fds(launch *l, bool relay, int *fds, size_t max) {
        if (!(relay ? nsr_relay_take_listeners(l->relay) : nsr_dns_take_sockets(l->dns)))
                return -1;
        return (ssize_t) (relay ? nsr_relay_wake_fds(l->relay, fds, max) : nsr_dns_wake_fds(l->dns, fds, max));
}

/* A control socket is taken out of the loop before the take closes it (a
 * closed fd's registration outlives it while another process holds the
 * socket), and put back when its message is not there yet. */
static void on_ctl(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        (void) ev;
        bool relay = fd == nsr_relay_control_fd(l->relay);
        nsr_evsrc **src = relay ? &m->s_relay_ctl : &m->s_dns_ctl;
        *src = nsr_evloop_del(*src);
        int fds[WAKE_MAX];
        ssize_t n = take_wake_fds(l, relay, fds, WAKE_MAX);
        if (n >= 0)
                watch_wake_fds(m, fds, (size_t) n);
        else if (nsr_evloop_add(m->loop, fd, EPOLLIN, on_ctl, m, src) < 0)
                helper_wake(m);
}

static int wake_sources(mon *m) {
        launch *l = m->l;
        if (!l->helper_lazy)
                return 0;
        int r = 0;
        if (nsr_relay_control_fd(l->relay) >= 0)
                r = nsr_evloop_add(m->loop, nsr_relay_control_fd(l->relay), EPOLLIN, on_ctl, m, &m->s_relay_ctl);
        if (r >= 0 && l->dns && nsr_dns_control_fd(l->dns) >= 0)
                r = nsr_evloop_add(m->loop, nsr_dns_control_fd(l->dns), EPOLLIN, on_ctl, m, &m->s_dns_ctl);
        return r;
}

/* The command has ended: a connection or query it left waiting still
 * gets the helper, and so its record. */
static void helper_wake_pending(mon *m) {
        launch *l = m->l;
        wake_sources_del(m); /* before the takes below close the control sockets */
        if (!helper_waits(l))
                return;
        int fds[WAKE_MAX];
        size_t n = 0;
        ssize_t k = take_wake_fds(l, true, fds, WAKE_MAX);
        n += k > 0 ? (size_t) k : 0;
        k = l->dns ? take_wake_fds(l, false, fds + n, WAKE_MAX - n) : -1;
        n += k > 0 ? (size_t) k : 0;
        struct pollfd p[WAKE_MAX];
        for (size_t i = 0; i < n; i++)
                p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
        if (n && poll(p, n, 0) > 0)
                helper_wake(m);
}

static void on_listener(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        nsr_refused *rf = l->extra ? l->extra->refused : NULL;
        if ((ev & EPOLLIN) && l->notify_connect) {
                if (nsr_direct_handle(rf && rf->prog && !l->notify_alone ? rf : NULL, fd, l->direct_sock,
                                      &l->direct_sent) > 0)
                        helper_wake(m); /* the connect waits in its socket for it */
        } else if (ev & EPOLLIN)
                (void) nsr_refused_handle(rf, fd);
        else if (ev & (EPOLLHUP | EPOLLERR)) {
                /* every task of the filter is gone */
                m->s_listener = nsr_evloop_del(m->s_listener);
                l->listener = safe_close(l->listener);
        }
}

/* The helper never writes to the monitor: its end closes when it dies.
 * The connects passed on to it are then answered here (ECONNREFUSED),
 * and every later one at once (no socket to pass them on). */
static void on_direct_sock(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        /* EOF or an error: gone. Bytes would be a broken helper: gone too
         * (it never writes here), and never a busy loop on them. */
        char c;
        ssize_t n = (ev & (EPOLLHUP | EPOLLERR)) ? 0 : recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        m->s_direct = nsr_evloop_del(m->s_direct);
        l->direct_sock = safe_close(l->direct_sock);
        if (l->listener >= 0)
                nsr_direct_sent_fail(&l->direct_sent, l->listener);
}

/* The refused-call listener: its fd arrives once from the command, then
 * each refused call is answered (with the policy's errno) and counted. */
static void on_notify_sock(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        (void) ev;
        int got = nsr_refused_recv_fd(fd);
        if (got >= 0 && l->listener < 0) {
                l->listener = got;
                /* The helper answers connects on it too. */
                if (l->direct_sock >= 0 && nsr_direct_send_listener(l->direct_sock, got) >= 0)
                        m->res->direct_on = true;
                else { /* a helper without the listener could not answer: connects are refused here */
                        m->s_direct = nsr_evloop_del(m->s_direct);
                        l->direct_sock = safe_close(l->direct_sock);
                }
                bool recorded = l->extra && l->extra->refused && l->extra->refused->prog && !l->notify_alone;
                if (recorded)
                        l->extra->refused->active = true;
                if (recorded && l->extra->session && l->extra->session->refused_recorded)
                        *l->extra->session->refused_recorded = true;
                if (nsr_evloop_add(m->loop, got, EPOLLIN, on_listener, m, &m->s_listener) < 0)
                        l->listener = safe_close(l->listener); /* calls get ENOSYS, as with no listener */
        } else if (got >= 0)
                close(got);
        /* One fd, once; EOF too means nothing more comes. */
        if (got >= 0 || got == -ENODATA || (got != -EAGAIN && got != -EINTR)) {
                m->s_notify = nsr_evloop_del(m->s_notify);
                l->notify_sock[0] = safe_close(l->notify_sock[0]);
        }
}

/* The root's detached mounts the child handed over (child.c,
 * hand_detached): held until the command runs, when pid 1 and the command
 * have let go of theirs, and these closes pay the grace periods. */
static void drop_held(launch *l) {
        for (size_t i = 0; i < ELEMENTSOF(l->held); i++)
                l->held[i] = safe_close(l->held[i]);
}

static void on_detach_sock(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        (void) ev;
        char tag;
        struct iovec iov = { .iov_base = &tag, .iov_len = 1 };
        nsr_sockmsg_info info;
        ssize_t n = nsr_sockmsg_recv(fd, &iov, 1, MSG_DONTWAIT, l->held, ELEMENTSOF(l->held), &info);
        if (n == -EAGAIN || n == -EINTR)
                return;
        /* One message, once; the command may be running already. */
        if (m->err_eof)
                drop_held(l);
        m->s_detach = nsr_evloop_del(m->s_detach);
        l->detach_sock[0] = safe_close(l->detach_sock[0]);
}

/* A signal to the monitor: SIGCHLD reaps (the child's status, unless pid 1
 * reported it already); any other goes on to the sandbox. */
static void on_signal(int sfd, pid_t child, bool *child_gone, bool *have_status, int *status, nsr_launch_result *res) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                        /* Also reaps the middle processes
                         * of --pidns, adopted as subreaper. */
                        int st;
                        pid_t w;
                        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
                                if (w != child)
                                        continue;
                                *child_gone = true;
                                if (!*have_status) {
                                        *status = st;
                                        *have_status = true;
                                }
                        }
                } else if (!*child_gone) {
                        if (!res->forwarded_signal && nsr_signal_interrupts((int) si.ssi_signo))
                                res->forwarded_signal = (int) si.ssi_signo;
                        (void) kill(child, (int) si.ssi_signo);
                        /* ^Z: the command's group stops (pid 1
                         * passes it on), then nsrun, so the
                         * shell gets its prompt back; fg
                         * sends SIGCONT, which goes on too. */
                        if (si.ssi_signo == SIGTSTP)
                                (void) raise(SIGSTOP);
                }
        }
}

/* The command ran: its status and exit code, what the relay saw, the
 * routes it found missing; the sandbox's leftovers go. */
static void command_done(launch *l, pid_t child, bool child_gone, int status, nsr_launch_result *ret) {
        const nsr_plan *p = l->plan;

        /* The command has ended: what follows (capture, commit) must not
         * die with the thread that started nsrun. Only the user's own
         * signal stops it now (--die-with-parent is about the sandbox). */
        (void) prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);

        if (l->helper)
                nsr_egress_helper_finish(l->helper, &ret->net);
        /* A helper never forked: no connection, no query, nothing to record. */
        if (l->helper || l->helper_lazy) {
                ret->net_on = true;
                ret->net.helper_died |= l->helper_failed;
                ret->net.direct_on = ret->direct_on;
                ret->net.direct_unavailable = l->direct_unavailable;
                /* The listener never came (EBUSY: one above took the place). */
                ret->net.direct_no_listener = l->notify_connect && l->listener < 0 && !ret->direct_on;
        }
        /* SIGKILL to pid 1 takes the whole pid namespace down. Sent
         * first, so that the sandbox's teardown goes on while the counters
         * are read (their fds hold the network namespace, whoever is left
         * in it) and the status goes out; reaped last. */
        bool reap = l->extra && l->extra->kill_leftovers && !child_gone;
        if (reap)
                (void) kill(child, SIGKILL);
        ret->exec_done = true;
        ret->wait_status = status;
        ret->exit_code = ret->timed_out ? NSR_EXIT_TIMEOUT : nsr_exit_code_from_status(status);
        if (l->snmp_fd >= 0)
                ret->no_route = snmp_counter(l->snmp_fd, "Ip:", "OutNoRoutes");
        if (l->snmp6_fd >= 0)
                ret->no_route += snmp_counter(l->snmp6_fd, "", "Ip6OutNoRoutes");
        write_exit_status(p, ret->exit_code);
        nsr_outq_finish(&l->events_q, NSR_OUTQ_FINISH_MS);
        ret->events_dropped = l->events_q.dropped;
        if (reap)
                (void) waitpid(child, NULL, 0);
}

static void on_sfd(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) ev;
        on_signal(fd, m->child, &m->child_gone, &m->have_status, &m->status, m->res);
}

static void on_deadline(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) fd;
        (void) ev;
        deadline_hook(m->l, &m->deadline, m->child, m->child_gone, m->res);
}

static void on_err_pipe(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) ev;
        ssize_t n = read(fd, (char *) &m->child_err + m->err_got, sizeof(m->child_err) - m->err_got);
        if (n > 0)
                m->err_got += (size_t) n;
        else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                m->err_eof = true;
                m->s_err = nsr_evloop_del(m->s_err);
                nsr_timing_mark_now(m->l->plan->timing, "monitor: command started");
                drop_held(m->l);
        }
}

static void on_status_pipe(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) ev;
        nsr_reaper_status msg;
        int n = nsr_read_full(fd, &msg, sizeof(msg));
        if (n == (int) sizeof(msg)) {
                m->status = msg.wait_status;
                m->have_status = true;
                /* pid 1 exits now. Waiting for it would charge the caller
                 * for the namespaces' teardown; bwrap returns here too. */
                if (msg.last)
                        m->pid1_exiting = true;
        } else {
                m->s_status = nsr_evloop_del(m->s_status);
                m->l->status_pipe[0] = safe_close(m->l->status_pipe[0]);
        }
        if (m->have_status) {
                m->s_status = nsr_evloop_del(m->s_status);
                m->s_deadline = nsr_evloop_del(m->s_deadline);
        }
}

/* Every fd the monitor waits on, into the loop. */
static int monitor_sources(mon *m, nsr_error *err) {
        launch *l = m->l;
        const nsr_launch_session *ses = l->extra ? l->extra->session : NULL;
        int r = nsr_evloop_add(m->loop, m->sfd, EPOLLIN, on_sfd, m, NULL);
        if (r >= 0)
                r = nsr_evloop_add(m->loop, l->err_pipe[0], EPOLLIN, on_err_pipe, m, &m->s_err);
        if (r >= 0 && l->status_pipe[0] >= 0)
                r = nsr_evloop_add(m->loop, l->status_pipe[0], EPOLLIN, on_status_pipe, m, &m->s_status);
        if (r >= 0 && m->deadline.fd >= 0)
                r = nsr_evloop_add(m->loop, m->deadline.fd, EPOLLIN, on_deadline, m, &m->s_deadline);
        if (r >= 0 && l->notify_sock[0] >= 0)
                r = nsr_evloop_add(m->loop, l->notify_sock[0], EPOLLIN, on_notify_sock, m, &m->s_notify);
        if (r >= 0 && l->direct_sock >= 0)
                r = nsr_evloop_add(m->loop, l->direct_sock, EPOLLIN, on_direct_sock, m, &m->s_direct);
        if (r >= 0 && l->detach_sock[0] >= 0)
                r = nsr_evloop_add(m->loop, l->detach_sock[0], EPOLLIN, on_detach_sock, m, &m->s_detach);
        if (r >= 0)
                r = wake_sources(m);
        if (r >= 0 && ses && ses->attach)
                r = ses->attach(m->loop, ses->data);
        if (r < 0)
                return nsr_error_set(err, -r, "monitor: event loop");
        /* A caller's fd the loop cannot watch: the queue still writes on
         * each line, never blocking. */
        (void) nsr_outq_watch(&l->events_q, m->loop);
        return 0;
}

/* An error report is complete, or the command ran and we know its
 * status: done. With a reaper the status arrives before pid 1 exits
 * (bwrap returns at that point too). */
static bool monitor_done(mon *m) {
        launch *l = m->l;
        if (m->err_got == sizeof(m->child_err))
                return true;
        if (!m->have_status || !(m->err_eof || m->child_gone || m->pid1_exiting))
                return false;
        if (!m->err_eof) {
                /* Drain whatever the child left in the pipe. */
                ssize_t n;
                while ((n = read(l->err_pipe[0], (char *) &m->child_err + m->err_got,
                                 sizeof(m->child_err) - m->err_got)) > 0)
                        m->err_got += (size_t) n;
        }
        return true;
}

static int monitor_run(mon *m, nsr_error *err) {
        launch *l = m->l;
        const nsr_plan *p = l->plan;
        if (nsr_deadline_start(&m->deadline, &p->run, err) < 0) {
                (void) kill(m->child, SIGKILL);
                (void) waitpid(m->child, NULL, 0);
                return -EIO;
        }
        /* Every line the monitor writes to --events-fd goes through one
         * bounded queue, written as the fd takes it: a reader that stops
         * reading must not stop the deadline or the signals. */
        nsr_outq_init(&l->events_q, p->proj.events_fd, 0, NSR_OUTQ_EVENTS_NOTE);
        if (l->extra && l->extra->refused)
                l->extra->refused->events = &l->events_q;
        /* A session counts each refused call for the step it came from. */
        if (l->extra && l->extra->refused && l->extra->session && l->extra->session->refused_call) {
                l->extra->refused->on_call = l->extra->session->refused_call;
                l->extra->refused->on_call_data = l->extra->session->data;
        }
        int r = monitor_sources(m, err);
        if (r < 0) {
                (void) kill(m->child, SIGKILL);
                (void) waitpid(m->child, NULL, 0);
                return r;
        }
        while (!monitor_done(m)) {
                r = nsr_evloop_run_once(m->loop, -1);
                if (r < 0)
                        return nsr_error_set(err, -r, "epoll_wait");
        }
        if (m->err_got == sizeof(m->child_err)) {
                if (!m->child_gone)
                        (void) waitpid(m->child, NULL, 0);
                nsr_error_sanitize(&m->child_err);
                *err = m->child_err;
                return -(m->child_err.code ? m->child_err.code : EIO);
        }
        helper_wake_pending(m);
        command_done(l, m->child, m->child_gone, m->status, m->res);
        return 0;
}

int launch_monitor(launch *l, pid_t child, nsr_launch_result *ret, nsr_error *err) {
        sigset_t set;
        nsr_forwarded_sigset(&set);
        sigaddset(&set, SIGCHLD);
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0)
                return nsr_error_set(err, errno, "Can't create signalfd");
        mon m = { .l = l, .child = child, .res = ret, .sfd = sfd, .deadline = { .fd = -1 } };
        int r = nsr_evloop_new(&m.loop);
        if (r < 0) {
                (void) kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                return nsr_error_set(err, -r, "epoll_create1");
        }
        r = monitor_run(&m, err);
        /* The relay outlives the loop (its log is read later): out of it. */
        nsr_relay_detach(l->relay);
        if (l->extra && l->extra->session && l->extra->session->attach)
                (void) l->extra->session->attach(NULL, l->extra->session->data);
        m.loop = nsr_evloop_free(m.loop);
        nsr_deadline_done(&m.deadline);
        return r;
}
