/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "base/dirent.h"
#include "cli/plan.h"
#include "project/orphan.h"
#include "project/profile.h"
#include "project/sesscommit.h"
#include "project/session.h"
#include "sandbox/launch.h"
#include "txn/state.h"

/* ---- the monitor side ---------------------------------------------------- */

enum { TAG_LISTEN = 0, TAG_AGENT = 1, TAG_TIMER = 2, _TAG_MAX };

/* A connection on the control socket: as many as the process has fds.
 * What goes to it waits in its own bounded queue, so a caller that stops
 * reading costs only its own connection, never the server. */
typedef struct client {
        struct session *s;
        int fd;
        nsr_evsrc *src;
        nsr_msgq out;
        uint32_t id;  /* of its exec; 0: none */
        bool running; /* its command was sent to the agent and has not ended */
        bool tty;     /* its exec asked for a pty: STARTED brings the master */
        struct client *next;
} client;

/* An exec in flight, by id: only the agent's EXIT for it ends it (what
 * comes from the sandbox is checked), also when its client has gone. */
typedef struct step {
        uint32_t id;
        pid_t pid;            /* in the sandbox, 0: not yet */
        nsr_refused *refused; /* what the policy refused it, or NULL */
        struct step *next;
} step;

/* One fd of the server in the monitor's event loop, by tag. */
typedef struct reg {
        struct session *s; /* NULL: not wanted */
        unsigned tag;
        int fd;
        nsr_evsrc *src; /* NULL until the loop is there */
} reg;

typedef struct session {
        nsr_project *pj;
        const nsr_session_opts *o;
        nsr_evloop *loop; /* the monitor's, while the command runs */
        reg regs[_TAG_MAX];
        int listen_fd, timer_fd, ready_fd;
        int spare_fd; /* given up when accept(2) runs out of fds */
        int agent[2];
        nsr_msgq agent_q; /* to the agent: it may stop reading, too */
        int dir_fd;
        char *dir;
        client *clients;
        step *steps;
        uint32_t next_id;
        unsigned running;
        bool refused_recorded; /* the run records refused calls */
        bool stopping;
        bool said_hello;
        char *notes; /* the run's notes for stderr, sent with "ok" */
        int stop_fd; /* the client that asked to stop, for the outcome */
        char *buf;
        nsr_env_filter *env_filter; /* the deny list, for each step's environment */
        nsr_env_memo env_memo;      /* the last step's, through it */
        nsr_launch_session hooks;
        pid_t pid1; /* the sandbox's pid 1 */
} session;

/* How long a stop waits for the agent to end the sandbox by itself before
 * the sandbox's pid 1 (and with it everything inside) is killed. */
#define STOP_GRACE_MS 1500

char *nsr_session_dir(const char *state_dir, const char *id) {
        return nsr_asprintf("%s/sessions/%s", state_dir, id);
}

static void on_event(nsr_evsrc *src, int fd, uint32_t ev, void *data);
static void on_client_event(nsr_evsrc *src, int fd, uint32_t ev, void *data);
static void stop(session *s, nsr_session_outcome how);

static void ep_add(session *s, int fd, unsigned tag) {
        reg *g = &s->regs[tag];
        *g = (reg){ .s = s, .tag = tag, .fd = fd };
        if (s->loop)
                (void) nsr_evloop_add(s->loop, fd, EPOLLIN, on_event, g, &g->src);
}

static void ep_del(session *s, unsigned tag) {
        reg *g = &s->regs[tag];
        g->src = nsr_evloop_del(g->src);
        g->s = NULL;
}

/* POLLOUT is asked for while a queue holds messages. */
static void arm_out(nsr_evsrc *src, const nsr_msgq *q) {
        if (src)
                (void) nsr_evloop_mod(src, EPOLLIN | (nsr_msgq_pending(q) ? EPOLLOUT : 0));
}

static void ready(session *s, const char *text) {
        if (s->ready_fd < 0)
                return;
        (void) nsr_write_all(s->ready_fd, text, strlen(text));
        s->ready_fd = safe_close(s->ready_fd);
}

/* To the agent. A queue that ended (the agent stopped reading, or died)
 * ends the session: the run is kept. */
static int to_agent(session *s, uint32_t type, uint32_t id, int32_t value, uint32_t flags, const void *payload,
                    size_t len, const int *fds, size_t n_fds) {
        if (s->agent[0] < 0)
                return -EPIPE;
        int r = nsr_session_queue(&s->agent_q, type, id, value, flags, payload, len, fds, n_fds);
        if (r < 0 && !s->stopping)
                stop(s, NSR_SESSION_KEEP);
        else
                arm_out(s->regs[TAG_AGENT].src, &s->agent_q);
        return r;
}

static void drop_client(session *s, client *c);

/* To a client; one that does not take its messages is dropped. */
static void to_client(session *s, client *c, uint32_t type, int32_t value, uint32_t flags, const void *payload,
                      size_t len, const int *fds, size_t n_fds) {
        if (nsr_session_queue(&c->out, type, 0, value, flags, payload, len, fds, n_fds) < 0)
                drop_client(s, c);
        else
                arm_out(c->src, &c->out);
}

static step *step_of(const session *s, uint32_t id) {
        for (step *t = s->steps; id && t; t = t->next)
                if (t->id == id)
                        return t;
        return NULL;
}

static void step_add(session *s, uint32_t id) {
        step *t = nsr_malloc0(sizeof(*t));
        *t = (step){ .id = id, .next = s->steps };
        s->steps = t;
        s->running++;
}

static bool step_end(session *s, uint32_t id) {
        for (step **pp = &s->steps; id && *pp; pp = &(*pp)->next) {
                step *t = *pp;
                if (t->id != id)
                        continue;
                *pp = t->next;
                free(t->refused);
                free(t);
                if (s->running > 0)
                        s->running--;
                return true;
        }
        return false;
}

/* A refused call (launch.h): it counts for the step whose session the
 * caller is in (each step leads its own, with its pid as the id). A call
 * from a process that left its step's session counts for the run only. */
static void refused_call(void *data, pid_t sid, uint32_t arch, int nr, int errnum, const char *comm) {
        session *s = data;
        for (step *t = s->steps; sid > 0 && t; t = t->next) {
                if (t->pid != sid)
                        continue;
                if (!t->refused) {
                        t->refused = nsr_malloc0(sizeof(nsr_refused));
                        t->refused->events_fd = -1;
                }
                nsr_refused_count(t->refused, arch, nr, errnum, comm);
                return;
        }
}

/* The agent's EXIT for a step, to its client: the status, the agent's
 * reason when the command did not run, else the step's refused record. */
static void send_exit(session *s, client *c, const nsr_session_hdr *h) {
        uint32_t flags = h->flags & NSR_SMSG_NOT_RUN;
        if (flags) {
                to_client(s, c, NSR_SMSG_EXIT, h->value, flags, s->buf, h->len, NULL, 0);
                return;
        }
        const step *t = step_of(s, h->id);
        /* A record is 32 KiB: read where it is, never copied or zeroed
         * on the way to each step's EXIT. */
        const nsr_refused *rf = t ? t->refused : NULL;
        size_t len = 0;
        _cleanup_free_ char *text = NULL;
        if (s->refused_recorded || rf) {
                text = nsr_session_refused_encode(rf, s->refused_recorded, NSR_SESSION_PAYLOAD_MAX, &len);
                flags |= NSR_SMSG_REFUSED;
        }
        to_client(s, c, NSR_SMSG_EXIT, h->value, flags, text, len, NULL, 0);
}

static void arm_idle(session *s) {
        if (s->stopping)
                return; /* the timer is the stop's deadline now */
        struct itimerspec t = { 0 };
        if (s->running == 0 && s->o->idle_timeout)
                t.it_value.tv_sec = (time_t) s->o->idle_timeout;
        (void) timerfd_settime(s->timer_fd, 0, &t, NULL);
}

/* The agent reads EOF, exits, pid 1 reports it, and the monitor loop in
 * launch.c ends: the run then finishes as the plan now says. */
static void stop(session *s, nsr_session_outcome how) {
        nsr_plan *p = nsr_project_plan(s->pj);
        p->proj.keep = how == NSR_SESSION_KEEP;
        p->proj.discard = how == NSR_SESSION_DISCARD;
        s->stopping = true;
        if (s->agent[0] >= 0) {
                ep_del(s, TAG_AGENT);
                s->agent[0] = safe_close(s->agent[0]);
                nsr_msgq_done(&s->agent_q);
        }
        if (s->listen_fd >= 0) {
                ep_del(s, TAG_LISTEN);
                s->listen_fd = safe_close(s->listen_fd);
        }
        /* Whatever runs inside, the stop is bounded: the agent ends the
         * sandbox by itself at once; if it has not when the timer fires,
         * the sandbox's pid 1 is killed from here. */
        struct itimerspec t = { .it_value = { .tv_sec = STOP_GRACE_MS / 1000,
                                              .tv_nsec = (STOP_GRACE_MS % 1000) * 1000000L } };
        (void) timerfd_settime(s->timer_fd, 0, &t, NULL);
}

static void client_free(client *c) {
        c->src = nsr_evloop_del(c->src);
        nsr_msgq_done(&c->out);
        safe_close(c->fd);
        free(c);
}

static void unlink_client(session *s, client *c) {
        for (client **pp = &s->clients; *pp; pp = &(*pp)->next)
                if (*pp == c) {
                        *pp = c->next;
                        return;
                }
}

/* The loop never calls a deleted source again, so the client can go at
 * once, also from its own callback. */
static void drop_client(session *s, client *c) {
        /* A caller that went away is a hangup for its command, as a
         * terminal's would be. */
        if (c->running)
                (void) to_agent(s, NSR_SMSG_SIGNAL, c->id, SIGHUP, 0, NULL, 0, NULL, 0);
        unlink_client(s, c);
        client_free(c);
}

static int listen_ctl(session *s, nsr_error *err) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return nsr_error_set(err, errno, "socket");
        /* The path may be longer than sun_path: bind through the dir fd. */
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/ctl", s->dir_fd);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
                int e = errno;
                close(fd);
                return nsr_error_set(err, e, "cannot listen on %s/ctl", s->dir);
        }
        s->listen_fd = fd;
        ep_add(s, fd, TAG_LISTEN);
        return 0;
}

static int accept_one(session *s) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || s->spare_fd < 0)
                return fd;
        /* Out of fds: the pending connection would keep the listener ready
         * for ever. The spare fd makes room to take it and close it. */
        s->spare_fd = safe_close(s->spare_fd);
        fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        safe_close(fd);
        s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        errno = EMFILE;
        return -1;
}

static bool on_client(session *s, client *c);

static void on_accept(session *s) {
        int fd = accept_one(s);
        if (fd < 0)
                return;
        /* The dir is 0700 already; the peer's uid is checked all the same
         * (a socket passed on by its owner reaches no one else). */
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != getuid() || !s->loop) {
                close(fd);
                return;
        }
        client *c = nsr_malloc0(sizeof(*c));
        *c = (client){ .s = s, .fd = fd, .next = s->clients };
        nsr_msgq_init(&c->out, fd, 0);
        if (nsr_evloop_add(s->loop, fd, EPOLLIN, on_client_event, c, &c->src) < 0) {
                client_free(c);
                return;
        }
        s->clients = c;
        /* The exec client sends its request right after its connect, and
         * this wake-up is usually late enough to find it: taken now, it
         * costs no second one. Nothing there yet: the loop calls back. */
        (void) on_client(s, c);
}

/* The fds that came, packed at the front (nsr_session_recv). */
static size_t count_fds(const int fds[3]) {
        size_t n = 0;
        while (n < 3 && fds[n] >= 0)
                n++;
        return n;
}

static bool keep_env(void *data, const char *entry) {
        return nsr_env_filter_keeps(data, entry);
}

static void on_exec(session *s, client *c, const nsr_session_hdr *h, const int fds[3]) {
        if (s->stopping || c->id || s->agent[0] < 0) {
                const char *why = c->id ? "one exec per connection" : "the session is stopping";
                to_client(s, c, NSR_SMSG_ERROR, 0, 0, why, strlen(why), NULL, 0);
                return;
        }
        /* The caller's environment through the deny list here, on the
         * host: the client sends its own as it is (it no longer reads the
         * list for each step), and nothing the list names reaches the
         * agent, whatever the client did. */
        ssize_t len = nsr_session_exec_filter_env(s->buf, h->len, keep_env, s->env_filter, &s->env_memo);
        if (len < 0) {
                const char *why = "malformed exec request";
                to_client(s, c, NSR_SMSG_ERROR, 0, 0, why, strlen(why), NULL, 0);
                return;
        }
        c->id = ++s->next_id;
        step_add(s, c->id);
        c->running = true;
        c->tty = h->flags & NSR_SMSG_TTY_ALL;
        arm_idle(s);
        if (to_agent(s, NSR_SMSG_EXEC, c->id, h->value, h->flags & NSR_SMSG_TTY_ALL, s->buf, (size_t) len, fds,
                     count_fds(fds)) < 0) {
                const char *why = "the session's sandbox is gone";
                step_end(s, c->id);
                c->running = false;
                arm_idle(s);
                to_client(s, c, NSR_SMSG_ERROR, 0, 0, why, strlen(why), NULL, 0);
        }
}

/* One message from a client. Returns false when the client is gone. */
static bool on_client(session *s, client *c) {
        nsr_session_hdr h;
        int fds[3];
        int r = nsr_session_recv(c->fd, &h, s->buf, fds);
        if (r == -EAGAIN)
                return true;
        if (r < 0) {
                drop_client(s, c);
                return false;
        }
        bool alive = true;
        switch ((nsr_session_msg_type) h.type) {
        case NSR_SMSG_EXEC:
                on_exec(s, c, &h, fds);
                break;
        case NSR_SMSG_SIGNAL:
                if (c->running)
                        (void) to_agent(s, NSR_SMSG_SIGNAL, c->id, h.value, 0, NULL, 0, NULL, 0);
                break;
        case NSR_SMSG_STOP:
                if (h.value < 0 || h.value >= _NSR_SESSION_OUTCOME_MAX || s->stopping)
                        break;
                /* The caller waits for the outcome, after the run: its
                 * connection leaves the loop and is answered at the end. */
                s->stop_fd = TAKE_FD(c->fd);
                unlink_client(s, c);
                client_free(c);
                alive = false;
                stop(s, (nsr_session_outcome) h.value);
                break;
        case NSR_SMSG_PING:
                to_client(s, c, NSR_SMSG_PONG, (int32_t) s->running, 0, NULL, 0, NULL, 0);
                break;
        case NSR_SMSG_HELLO:
        case NSR_SMSG_STARTED:
        case NSR_SMSG_EXIT:
        case NSR_SMSG_STOPPED:
        case NSR_SMSG_ERROR:
        case NSR_SMSG_PONG:
        case NSR_SMSG_SUSPENDED:
        case _NSR_SMSG_MAX:
        case _NSR_SMSG_INVALID:
                break;
        }
        for (int k = 0; k < 3; k++)
                safe_close(fds[k]);
        return alive;
}

static void on_client_event(nsr_evsrc *src, int fd, uint32_t ev, void *data) {
        client *c = data;
        session *s = c->s;
        (void) src;
        (void) fd;
        if (ev & EPOLLOUT) {
                if (nsr_msgq_flush(&c->out) < 0) {
                        drop_client(s, c);
                        return;
                }
                arm_out(c->src, &c->out);
        }
        /* A hangup reads as the end (nsr_session_recv: -ENODATA). */
        if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
                (void) on_client(s, c);
}

static void on_hello(session *s) {
        nsr_error e = { 0 };
        s->said_hello = true;
        s->agent[1] = safe_close(s->agent[1]);
        /* The control socket exists only now, after the clone: nothing in
         * the sandbox ever held it. */
        if (listen_ctl(s, &e) < 0) {
                char msg[NSR_ERROR_MSG_MAX + 64];
                nsr_error_format(&e, msg, sizeof(msg));
                ready(s, msg);
                stop(s, NSR_SESSION_DISCARD);
                return;
        }
        _cleanup_free_ char *text = nsr_asprintf("%sok\n", s->notes ? s->notes : "");
        ready(s, text);
        arm_idle(s);
}

static void on_agent(session *s) {
        nsr_session_hdr h;
        int fds[3];
        int r = nsr_session_recv(s->agent[0], &h, s->buf, fds);
        /* Only a STARTED carries an fd on: the pty's master, which the
         * client checks. */
        _cleanup_close_ int master = r >= 0 && h.type == NSR_SMSG_STARTED ? TAKE_FD(fds[0]) : -1;
        for (int k = 0; k < 3; k++)
                safe_close(fds[k]);
        if (r == -EAGAIN || r == -EBADMSG)
                return;
        if (r < 0) {
                /* The agent died: pid 1 reports it and the loop ends. */
                ep_del(s, TAG_AGENT);
                s->agent[0] = safe_close(s->agent[0]);
                return;
        }
        /* The agent lives in the sandbox: what it says is checked like
         * anything else from there. It says hello once. */
        if (h.type == NSR_SMSG_HELLO) {
                if (s->listen_fd < 0 && !s->stopping && !s->said_hello)
                        on_hello(s);
                return;
        }
        if ((h.type != NSR_SMSG_STARTED && h.type != NSR_SMSG_EXIT && h.type != NSR_SMSG_SUSPENDED) || h.id == 0)
                return;
        step *t = step_of(s, h.id);
        if (h.type == NSR_SMSG_STARTED && t && h.value > 0 && !t->pid)
                t->pid = (pid_t) h.value;
        for (client *c = s->clients; c; c = c->next) {
                if (c->id != h.id)
                        continue;
                if (h.type == NSR_SMSG_EXIT) {
                        c->running = false;
                        send_exit(s, c, &h);
                } else if (h.type != NSR_SMSG_STARTED || c->tty)
                        to_client(s, c, h.type, h.value, h.flags & ~NSR_SMSG_REFUSED, s->buf, h.len, &master,
                                  master >= 0);
                /* A STARTED without a pty stays here: the client has no
                 * use for it (its signals go by the exec's id), and a
                 * message less is a wake-up less. The pid is kept above for
                 * the refused calls; a master the agent sent all the same
                 * is closed. */
                break;
        }
        if (h.type == NSR_SMSG_EXIT && step_end(s, h.id))
                arm_idle(s);
}

/* Lines a run prints before its command (the state dir chosen, ...): the
 * caller of session start prints them. */
static void collect_note(const char *line, void *userdata) {
        session *s = userdata;
        if (s->notes && strlen(s->notes) > 2048)
                return;
        char *n = nsr_asprintf("%s%s\n", s->notes ? s->notes : "", line);
        free(s->notes);
        s->notes = n;
}

static void on_event(nsr_evsrc *src, int fd, uint32_t ev, void *data) {
        const reg *g = data;
        session *s = g->s;
        unsigned tag = g->tag;
        (void) src;
        (void) fd;
        if (!s)
                return;
        if (tag == TAG_AGENT && (ev & EPOLLOUT) && s->agent[0] >= 0) {
                if (nsr_msgq_flush(&s->agent_q) < 0 && !s->stopping)
                        stop(s, NSR_SESSION_KEEP);
                else
                        arm_out(s->regs[TAG_AGENT].src, &s->agent_q);
        }
        if (tag == TAG_LISTEN && s->listen_fd >= 0)
                on_accept(s);
        else if (tag == TAG_AGENT && s->agent[0] >= 0 && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                on_agent(s);
        else if (tag == TAG_TIMER) {
                uint64_t x;
                (void) read(s->timer_fd, &x, sizeof(x));
                if (s->running == 0 && !s->stopping)
                        stop(s, NSR_SESSION_KEEP);
                else if (s->stopping && s->pid1 > 0)
                        (void) kill(s->pid1, SIGKILL); /* still our child: not reaped yet */
        }
}

/* The monitor's loop: every fd registered so far goes in; NULL, at its
 * end: out again (the loop is freed, the server lives on a little). */
static int attach(nsr_evloop *loop, void *data) {
        session *s = data;
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(s->regs); i++) {
                reg *g = &s->regs[i];
                if (!loop)
                        g->src = nsr_evloop_del(g->src);
                else if (g->s && !g->src && r >= 0)
                        r = nsr_evloop_add(loop, g->fd, EPOLLIN, on_event, g, &g->src);
        }
        /* Clients come only while the loop runs; they leave it with it. */
        for (client *c = s->clients; !loop && c; c = c->next)
                c->src = nsr_evloop_del(c->src);
        s->loop = loop;
        return r;
}

static void session_done(session *s) {
        safe_close(s->listen_fd);
        safe_close(s->timer_fd);
        safe_close(s->ready_fd);
        safe_close(s->agent[0]);
        safe_close(s->agent[1]);
        safe_close(s->spare_fd);
        nsr_msgq_done(&s->agent_q);
        while (s->clients) {
                client *c = s->clients;
                s->clients = c->next;
                client_free(c);
        }
        while (s->steps)
                (void) step_end(s, s->steps->id);
        if (s->dir_fd >= 0) {
                (void) unlinkat(s->dir_fd, "ctl", 0);
                close(s->dir_fd);
                (void) rmdir(s->dir);
        }
        free(s->dir);
        free(s->buf);
        free(s->notes);
        nsr_env_filter_free(s->env_filter);
        nsr_env_memo_done(&s->env_memo);
}

static int make_dir(session *s, nsr_error *err) {
        _cleanup_free_ char *top = nsr_asprintf("%s/sessions", s->o->state_dir);
        if (mkdir(top, 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create %s", top);
        s->dir = nsr_session_dir(s->o->state_dir, nsr_project_run_id(s->pj));
        if (mkdir(s->dir, 0700) < 0)
                return nsr_error_set(err, errno, "cannot create %s", s->dir);
        s->dir_fd = open(s->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s->dir_fd < 0)
                return nsr_error_set(err, errno, "cannot open %s", s->dir);
        return 0;
}

int nsr_session_serve(nsr_project *pj, const nsr_session_opts *o, nsr_error *err) {
        session s = { .pj = pj,
                      .o = o,
                      .listen_fd = -1,
                      .timer_fd = -1,
                      .ready_fd = o->ready_fd,
                      .agent = { -1, -1 },
                      .dir_fd = -1,
                      .stop_fd = -1 };
        s.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        s.buf = nsr_malloc0(NSR_SESSION_PAYLOAD_MAX + 1);
        /* Read once: a step's environment is filtered with the list the
         * session started with. */
        int r = nsr_env_filter_new(nsr_datadir(), &s.env_filter, err);
        if (r < 0)
                nsr_error_prefix(err, "the environment's deny list");
        else
                r = make_dir(&s, err);
        if (r >= 0 && ((s.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0 ||
                       socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s.agent) < 0 ||
                       fcntl(s.agent[0], F_SETFL, O_NONBLOCK) < 0))
                r = nsr_error_set(err, errno, "cannot set up the session");
        nsr_msgq_init(&s.agent_q, s.agent[0], 0);
        if (r < 0) {
                /* The caller waits for a word on the ready pipe: say why. */
                char msg[NSR_ERROR_MSG_MAX + 64];
                nsr_error_format(err, msg, sizeof(msg));
                _cleanup_free_ char *text = nsr_asprintf("!kind=%d\nnsrun: %s\n", (int) NSR_ERR_SETUP, msg);
                (void) nsr_write_all(s.ready_fd, text, strlen(text));
                session_done(&s);
                return r;
        }
        ep_add(&s, s.agent[0], TAG_AGENT);
        ep_add(&s, s.timer_fd, TAG_TIMER);
        s.hooks = (nsr_launch_session){ .agent_fd = s.agent[1],
                                        .monitor_fd = s.agent[0],
                                        .sandbox_close = { s.ready_fd, s.timer_fd, s.spare_fd },
                                        .attach = attach,
                                        .data = &s,
                                        .sandbox_pid = &s.pid1,
                                        .refused_call = refused_call,
                                        .refused_recorded = &s.refused_recorded };
        nsr_project_set_session(pj, &s.hooks);
        nsr_project_set_notify(pj, collect_note, &s);
        /* A session's default outcome is a kept run. */
        nsr_project_plan(pj)->proj.keep = true;

        nsr_project_outcome out = { 0 };
        nsr_error re = { 0 };
        r = nsr_project_run(pj, &out, &re);
        nsr_project_set_session(pj, NULL);
        /* Never ready: the sandbox could not be built. Say why. */
        if (s.ready_fd >= 0) {
                /* The failure's kind first, on a line of its own, for the
                 * caller's --json (cmd/session.c reads and drops it). */
                int kind = r < 0 ? (int) re.kind : (int) out.error_kind;
                char *text = nsr_asprintf("!kind=%d\n%s", kind ? kind : (int) NSR_ERR_SETUP, s.notes ? s.notes : "");
                if (r < 0) {
                        char msg[NSR_ERROR_MSG_MAX + 64];
                        nsr_error_format(&re, msg, sizeof(msg));
                        char *t = nsr_asprintf("%snsrun: %s\n", text, msg);
                        free(text);
                        text = t;
                }
                for (size_t i = 0; out.messages && out.messages[i]; i++) {
                        char *t = nsr_asprintf("%s%s\n", text, out.messages[i]);
                        free(text);
                        text = t;
                }
                if (!out.messages && r >= 0) {
                        char *t = nsr_asprintf("%snsrun: the session's sandbox ended before it was ready\n", text);
                        free(text);
                        text = t;
                }
                if (strlen(text) > 4000)
                        text[4000] = '\0';
                ready(&s, text);
                free(text);
        }
        if (s.stop_fd >= 0) {
                char *text = nsr_strdup("");
                char **parts[2] = { out.messages, out.summary };
                for (size_t k = 0; k < 2; k++)
                        for (size_t i = 0; parts[k] && parts[k][i]; i++) {
                                char *t = nsr_asprintf("%s%s\n", text, parts[k][i]);
                                free(text);
                                text = t;
                        }
                size_t len = strlen(text);
                if (len > NSR_SESSION_PAYLOAD_MAX)
                        len = NSR_SESSION_PAYLOAD_MAX;
                (void) fcntl(s.stop_fd, F_SETFL, 0);
                (void) nsr_session_send(s.stop_fd, NSR_SMSG_STOPPED, 0, out.exit_code, 0, text, len, NULL, 0);
                free(text);
        }
        nsr_project_outcome_done(&out);
        session_done(&s);
        if (r < 0)
                *err = re;
        return r;
}

/* ---- the client side ------------------------------------------------------- */

int nsr_session_connect(const char *state_dir, const char *id, nsr_error *err) {
        if (!nsr_run_id_is_valid(id))
                return nsr_error_setx(err, EINVAL, "%s is not a session id", id);
        _cleanup_free_ char *dir = nsr_session_dir(state_dir, id);
        _cleanup_free_ char *ctl = nsr_path_join(dir, "ctl");
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return nsr_error_set(err, errno, "socket");
        /* The socket by its path when that fits in sun_path, else through
         * an fd of its dir: /proc/self/fd/N of a new process is a lookup
         * procfs makes inodes for, each time. Whoever serves it must be
         * us (SO_PEERCRED below), wherever the path leads. */
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int dfd = -1;
        if (strlen(ctl) < sizeof(sa.sun_path))
                memcpy(sa.sun_path, ctl, strlen(ctl) + 1);
        else {
                dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return nsr_error_set(err, errno == ENOENT ? ENOENT : errno, "no session %s", id);
                snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/ctl", dfd);
        }
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = errno;
                struct stat st;
                if (e == ENOENT && stat(dir, &st) < 0)
                        return nsr_error_set(err, errno == ENOENT ? ENOENT : errno, "no session %s", id);
                return nsr_error_set(err, e == ENOENT ? ECONNREFUSED : e, "session %s is not running", id);
        }
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != getuid())
                return nsr_error_setx(err, EPERM, "session %s is served by another user", id);
        return TAKE_FD(fd);
}

static int list_dirs(const char *state_dir, char ***ret) {
        _cleanup_free_ char *top = nsr_asprintf("%s/sessions", state_dir);
        char **v = nsr_malloc0(sizeof(char *));
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(AT_FDCWD, top, 0, &d);
        if (r < 0) {
                *ret = v;
                return r == -ENOENT ? 0 : r;
        }
        FOREACH_DIRENT(de, d, r = -errno)
        if (nsr_run_id_is_valid(de->d_name))
                nsr_strv_extend(&v, de->d_name);
        if (r < 0) {
                nsr_strv_free(v);
                return r;
        }
        size_t n = nsr_strv_length(v);
        for (size_t i = 1; i < n; i++)
                for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
                        char *t = v[k];
                        v[k] = v[k - 1];
                        v[k - 1] = t;
                }
        *ret = v;
        return 0;
}

int nsr_session_recover(const char *state_dir, char ***ret_ids, nsr_error *err) {
        _cleanup_strv_free_ char **ids = NULL;
        int r = list_dirs(state_dir, &ids);
        if (r < 0)
                return nsr_error_set(err, -r, "%s/sessions", state_dir);
        _cleanup_close_ int statefd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (statefd < 0)
                return 0;
        for (size_t i = 0; ids[i]; i++) {
                nsr_error e = { 0 };
                _cleanup_close_ int run_fd = nsr_run_open(statefd, ids[i], &e);
                nsr_run_meta m = { 0 };
                if (run_fd < 0 || nsr_run_meta_read(run_fd, &m, &e) < 0) {
                        nsr_run_meta_done(&m);
                        continue;
                }
                /* The daemon recorded itself as the run's owner: a run still
                 * "running" with its owner gone was killed. Its layers are
                 * intact (the sandbox died with it): keep them. */
                bool dead = nsr_run_meta_is_orphan(&m);
                if (dead) {
                        /* Conflicts are judged from the session's last
                         * commit, as at a stop. */
                        struct timespec base;
                        if (nsr_session_base_read(run_fd, &base) >= 0)
                                m.start = base;
                        if (nsr_orphan_keep_now(run_fd, &m, &e) >= 0 && ret_ids)
                                nsr_strv_extend(ret_ids, ids[i]);
                }
                if (dead || m.state != NSR_OUTCOME_RUNNING) {
                        _cleanup_free_ char *dir = nsr_session_dir(state_dir, ids[i]);
                        _cleanup_free_ char *ctl = nsr_asprintf("%s/ctl", dir);
                        (void) unlink(ctl);
                        (void) rmdir(dir);
                }
                nsr_run_meta_done(&m);
        }
        return 0;
}

int nsr_session_list(const char *state_dir, char ***ret_ids, nsr_error *err) {
        int r = list_dirs(state_dir, ret_ids);
        if (r < 0)
                return nsr_error_set(err, -r, "%s/sessions", state_dir);
        return 0;
}

int nsr_session_parse_duration(const char *s, unsigned *ret) {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || s[0] == '-')
                return -EINVAL;
        unsigned long mul = 1;
        if (streq(end, "") || streq(end, "s"))
                mul = 1;
        else if (streq(end, "m"))
                mul = 60;
        else if (streq(end, "h"))
                mul = 3600;
        else if (streq(end, "d"))
                mul = 86400;
        else
                return -EINVAL;
        if (v > UINT32_MAX / mul)
                return -ERANGE;
        *ret = (unsigned) (v * mul);
        return 0;
}
