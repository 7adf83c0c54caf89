/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "base/sockmsg.h"
#include "cli/runctl.h"
#include "sandbox/agent.h"
#include "sandbox/rootfs.h"

extern char **environ;

/* ---- messages ---------------------------------------------------------- */

/* The header and iovecs of one message; -EMSGSIZE when it cannot go. */
static int message(nsr_session_hdr *h, struct iovec iov[2], uint32_t type, uint32_t id, int32_t value, uint32_t flags,
                   const void *payload, size_t len, size_t n_fds) {
        if (len > NSR_SESSION_PAYLOAD_MAX || n_fds > 3)
                return -EMSGSIZE;
        *h = (nsr_session_hdr){ .magic = NSR_SESSION_MAGIC,
                                .type = type,
                                .id = id,
                                .value = value,
                                .flags = flags,
                                .len = (uint32_t) len };
        iov[0] = (struct iovec){ .iov_base = h, .iov_len = sizeof(*h) };
        iov[1] = (struct iovec){ .iov_base = (void *) payload, .iov_len = len };
        return len ? 2 : 1;
}

int nsr_session_send(int fd, uint32_t type, uint32_t id, int32_t value, uint32_t flags, const void *payload, size_t len,
                     const int *fds, size_t n_fds) {
        nsr_session_hdr h;
        struct iovec iov[2];
        int n = message(&h, iov, type, id, value, flags, payload, len, n_fds);
        return n < 0 ? n : nsr_sockmsg_send(fd, iov, (size_t) n, fds, n_fds);
}

int nsr_session_queue(nsr_msgq *q, uint32_t type, uint32_t id, int32_t value, uint32_t flags, const void *payload,
                      size_t len, const int *fds, size_t n_fds) {
        nsr_session_hdr h;
        struct iovec iov[2];
        int n = message(&h, iov, type, id, value, flags, payload, len, n_fds);
        return n < 0 ? n : nsr_msgq_send(q, iov, (size_t) n, fds, n_fds);
}

int nsr_session_recv(int fd, nsr_session_hdr *ret, char *buf, int fds[3]) {
        nsr_session_hdr h;
        struct iovec iov[2] = { { .iov_base = &h, .iov_len = sizeof(h) },
                                { .iov_base = buf, .iov_len = NSR_SESSION_PAYLOAD_MAX } };
        nsr_sockmsg_info info;
        ssize_t n = nsr_sockmsg_recv(fd, iov, 2, 0, fds, 3, &info);
        if (n < 0)
                return (int) n;
        if (n == 0)
                return -ENODATA;
        if (info.extra_fds || info.truncated || (size_t) n < sizeof(h) || h.magic != NSR_SESSION_MAGIC ||
            h.len != (size_t) n - sizeof(h) || h.type >= _NSR_SMSG_MAX) {
                for (int i = 0; i < 3; i++)
                        fds[i] = safe_close(fds[i]);
                return -EBADMSG;
        }
        buf[h.len] = '\0';
        *ret = h;
        return 0;
}

/* ---- exec requests ----------------------------------------------------- */

void nsr_session_exec_done(nsr_session_exec *x) {
        char **v[] = { x->argv, x->set, x->unset, x->base, x->rlimits };
        for (size_t i = 0; i < ELEMENTSOF(v); i++)
                if (x->arena)
                        free(v[i]); /* its strings are the arena's */
                else
                        nsr_strv_free(v[i]);
        if (!x->arena)
                free(x->cwd);
        free(x->arena);
        *x = (nsr_session_exec){ 0 };
}

/* One tagged string at buf + *len (sized by the caller), or only its
 * size with buf NULL. */
static void put(char *buf, size_t *len, char tag, const char *s) {
        size_t l = strlen(s);
        if (buf) {
                buf[*len] = tag;
                memcpy(buf + *len + 1, s, l + 1);
        }
        *len += l + 2;
}

/* The request's strings, counted (buf NULL) or written: one pass of
 * each over the same order, so that the buffer is made once. */
static size_t put_all(const nsr_session_exec *x, char *buf) {
        size_t len = 0;
        for (char **a = x->argv; *a; a++)
                put(buf, &len, 'a', *a);
        if (x->clear)
                put(buf, &len, 'C', "-");
        else if (x->has_base)
                put(buf, &len, 'B', "-");
        for (char **a = x->base; !x->clear && a && *a; a++)
                put(buf, &len, 'E', *a);
        for (char **a = x->rlimits; a && *a; a++)
                put(buf, &len, 'r', *a);
        for (char **a = x->set; a && *a; a++)
                put(buf, &len, 'e', *a);
        for (char **a = x->unset; a && *a; a++)
                put(buf, &len, 'u', *a);
        if (x->cwd)
                put(buf, &len, 'c', x->cwd);
        return len;
}

int nsr_session_exec_encode(const nsr_session_exec *x, char **ret, size_t *ret_len, nsr_error *err) {
        if (!x->argv || !x->argv[0])
                return nsr_error_setx(err, EINVAL, "no command");
        size_t len = put_all(x, NULL);
        if (len > NSR_SESSION_PAYLOAD_MAX)
                return nsr_error_setx(err, E2BIG,
                                      "the command, its environment and cwd exceed %u bytes "
                                      "(--clearenv with the --env the command needs passes less)",
                                      NSR_SESSION_PAYLOAD_MAX);
        char *buf = nsr_malloc(len + 1);
        *ret_len = put_all(x, buf);
        *ret = buf;
        return 0;
}

/* The vectors of a request, in the order of their tags in "aeuEr"; -1:
 * a tag with no vector. */
static int vec_index(char tag) {
        const char *p = tag ? strchr("aeuEr", tag) : NULL;
        return p ? (int) (p - "aeuEr") : -1;
}

static char ***vec_of(nsr_session_exec *x, int k) {
        char ***v[] = { &x->argv, &x->set, &x->unset, &x->base, &x->rlimits };
        return v[k];
}

/* The checks of one tagged string; NULL when it may stand. */
static const char *decode_refusal(char tag, const char *s) {
        switch (tag) {
        case 'a':
        case 'r':
        case 'c':
        case 'B':
        case 'C':
                return NULL;
        case 'e':
                return !strchr(s, '=') || s[0] == '=' ? "--env wants NAME=VALUE" : NULL;
        case 'u':
                return !*s || strchr(s, '=') ? "--unset-env wants a NAME" : NULL;
        case 'E':
                return !strchr(s, '=') || s[0] == '=' ? "malformed environment" : NULL;
        default:
                return "malformed exec request";
        }
}

/* Two passes over the payload: the first checks every string and counts
 * them, the second points the vectors, made once at their size, into
 * one copy of the payload (the arena). An agent decodes a request for
 * each step, and a string of its own for each variable was most of its
 * time before the command's clone. */
int nsr_session_exec_decode(const char *buf, size_t len, nsr_session_exec *ret, nsr_error *err) {
        size_t n[5] = { 0 };
        for (size_t off = 0; off < len;) {
                const char *end = memchr(buf + off, '\0', len - off);
                if (!end || end == buf + off)
                        return nsr_error_setx(err, EBADMSG, "malformed exec request");
                const char *why = decode_refusal(buf[off], buf + off + 1);
                if (why)
                        return nsr_error_setx(err, streq(why, "malformed exec request") ? EBADMSG : EINVAL, "%s", why);
                int k = vec_index(buf[off]);
                if (k >= 0)
                        n[k]++;
                off = (size_t) (end - buf) + 1;
        }
        if (n[0] == 0)
                return nsr_error_setx(err, EINVAL, "no command");
        nsr_session_exec x = { .arena = nsr_malloc(len) };
        memcpy(x.arena, buf, len);
        for (int k = 0; k < (int) ELEMENTSOF(n); k++)
                if (n[k])
                        *vec_of(&x, k) = nsr_malloc0((n[k] + 1) * sizeof(char *));
        memset(n, 0, sizeof(n));
        for (size_t off = 0; off < len;) {
                char tag = x.arena[off], *str = x.arena + off + 1;
                off += strlen(x.arena + off) + 1;
                int k = vec_index(tag);
                if (k >= 0)
                        (*vec_of(&x, k))[n[k]++] = str;
                else if (tag == 'c')
                        x.cwd = str; /* the last one, as before */
                else {
                        x.has_base = true; /* 'B' or 'C' */
                        x.clear = x.clear || tag == 'C';
                }
        }
        *ret = x;
        return 0;
}

static char *memdup(const char *p, size_t n) {
        char *c = nsr_malloc(n + 1);
        memcpy(c, p, n);
        return c;
}

/* Where a request's base entries are (encode writes them in one run):
 * [*ret_start, *ret_end), empty when there are none, and *ret_one_run
 * false when they come in more than one run. false for a payload decode
 * would refuse for its shape. */
static bool base_span(const char *buf, size_t len, size_t *ret_start, size_t *ret_end, bool *ret_one_run) {
        size_t start = len, end = len;
        bool one_run = true;
        for (size_t off = 0; off < len;) {
                const char *z = memchr(buf + off, '\0', len - off);
                if (!z || z == buf + off)
                        return false;
                size_t next = (size_t) (z - buf) + 1;
                if (buf[off] == 'E') {
                        if (start == len)
                                start = off;
                        else if (end != off)
                                one_run = false;
                        end = next;
                }
                off = next;
        }
        *ret_start = start == len ? 0 : start;
        *ret_end = start == len ? 0 : end;
        *ret_one_run = one_run;
        return true;
}

ssize_t nsr_session_exec_filter_env(char *buf, size_t len, bool (*keep)(void *data, const char *entry), void *data,
                                    nsr_env_memo *memo) {
        size_t start, end;
        bool one_run;
        if (!base_span(buf, len, &start, &end, &one_run))
                return -EBADMSG;
        size_t span = end - start;
        /* The same caller's environment as the last request's: the same
         * entries go (keep depends on nothing else). */
        if (memo && one_run && span && memo->in && memo->in_len == span && memcmp(memo->in, buf + start, span) == 0) {
                memmove(buf + start + memo->out_len, buf + end, len - end);
                memcpy(buf + start, memo->out, memo->out_len);
                return (ssize_t) (len - span + memo->out_len);
        }
        _cleanup_free_ char *in = memo && one_run && span ? memdup(buf + start, span) : NULL;
        size_t out = 0;
        for (size_t off = 0; off < len;) {
                size_t n = strlen(buf + off) + 1;
                if (buf[off] != 'E' || keep(data, buf + off + 1)) {
                        memmove(buf + out, buf + off, n);
                        out += n;
                }
                off += n;
        }
        if (in) {
                size_t kept = span - (len - out);
                nsr_env_memo_done(memo);
                *memo = (nsr_env_memo){
                        .in = TAKE_PTR(in), .in_len = span, .out = memdup(buf + start, kept), .out_len = kept
                };
        }
        return (ssize_t) out;
}

void nsr_env_memo_done(nsr_env_memo *memo) {
        free(memo->in);
        free(memo->out);
        *memo = (nsr_env_memo){ 0 };
}

static bool env_is(const char *entry, const char *name, size_t nl) {
        return strncmp(entry, name, nl) == 0 && entry[nl] == '=';
}

static void env_drop(char **v, const char *name, size_t nl) {
        size_t w = 0;
        for (size_t i = 0; v[i]; i++) {
                if (env_is(v[i], name, nl))
                        free(v[i]);
                else
                        v[w++] = v[i];
        }
        v[w] = NULL;
}

char **nsr_session_exec_env(char *const *base, const nsr_session_exec *x, const char *cwd) {
        char *const none[] = { NULL };
        return nsr_session_exec_env_take(nsr_strv_copy(x->clear ? none : base), x, cwd);
}

char **nsr_session_exec_env_take(char **v, const nsr_session_exec *x, const char *cwd) {
        if (x->clear || !v) {
                nsr_strv_free(v);
                v = nsr_malloc0(sizeof(char *));
                if (x->clear)
                        cwd = NULL;
        }
        for (char **u = x->unset; u && *u; u++)
                env_drop(v, *u, strlen(*u));
        for (char **s = x->set; s && *s; s++) {
                env_drop(v, *s, (size_t) (strchr(*s, '=') - *s));
                nsr_strv_extend(&v, *s);
        }
        if (cwd) {
                env_drop(v, "PWD", 3);
                nsr_strv_push(&v, nsr_asprintf("PWD=%s", cwd));
        }
        return v;
}

/* ---- the agent (inside the sandbox) ------------------------------------ */

typedef struct agent_cmd {
        pid_t pid;
        uint32_t id;
} agent_cmd;

/* The request's --rlimit words, parsed again (the client parsed them
 * first). */
static int step_rlimits(const nsr_session_exec *x, nsr_runctl *rc, nsr_error *e) {
        *rc = (nsr_runctl){ 0 };
        for (char **w = x->rlimits; w && *w; w++) {
                nsr_rlimit_id id;
                nsr_rlimit_spec spec;
                int r = nsr_parse_rlimit(*w, &id, &spec, e);
                if (r < 0)
                        return r;
                rc->rlim[id] = spec;
        }
        return 0;
}

/* A step with rlimits of its own: posix_spawn cannot set them in the
 * child, so the agent forks and takes posix_spawn's steps by hand, the
 * rlimits last before the exec. The exec's failure comes back through a
 * close-on-exec pipe. */
static pid_t spawn_limited(nsr_session_agent *a, nsr_session_exec *x, const nsr_runctl *rc, const int fds[3],
                           const char *slave, char **env, int *ret_code, nsr_error *e) {
        int ep[2];
        if (pipe2(ep, O_CLOEXEC) < 0)
                return nsr_error_set(e, errno, "pipe");
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(ep[0]);
                close(ep[1]);
                return nsr_error_set(e, -r, "fork");
        }
        if (pid == 0) {
                nsr_error ce = { 0 };
                int step = 0; /* 0: setup failed (125); 1: the exec did */
                for (int sig = 1; sig < NSIG; sig++)
                        if (sig != SIGKILL && sig != SIGSTOP)
                                signal(sig, SIG_DFL);
                bool ok = setsid() >= 0;
                int tty = -1;
                for (int i = 0; ok && i < 3; i++)
                        if (fds[i] >= 0)
                                ok = dup2(fds[i], i) >= 0;
                for (int i = 0; ok && i < 3; i++)
                        if (fds[i] < 0 && tty < 0)
                                ok = (tty = open(slave, O_RDWR)) >= 0 && dup2(tty, i) >= 0;
                        else if (fds[i] < 0)
                                ok = dup2(tty, i) >= 0;
                if (tty > 2)
                        close(tty);
                if (ok && x->cwd && chdir(x->cwd) < 0)
                        ok = false;
                if (!ok)
                        nsr_error_set(&ce, errno, "cannot set up the command");
                else if (nsr_runctl_apply_rlimits(rc, &ce) >= 0) {
                        sigprocmask(SIG_SETMASK, &a->mask, NULL);
                        environ = env;
                        execvp(x->argv[0], x->argv);
                        nsr_error_set(&ce, errno, "execvp %s", x->argv[0]);
                        step = 1;
                }
                (void) nsr_write_all(ep[1], &step, sizeof(step));
                (void) nsr_write_all(ep[1], &ce, sizeof(ce));
                _exit(127);
        }
        close(ep[1]);
        int step = -1;
        nsr_error ce = { 0 };
        bool failed = nsr_read_full(ep[0], &step, sizeof(step)) == (int) sizeof(step) &&
                      nsr_read_full(ep[0], &ce, sizeof(ce)) == (int) sizeof(ce);
        close(ep[0]);
        if (!failed)
                return pid;
        (void) waitpid(pid, NULL, 0);
        nsr_error_sanitize(&ce);
        *e = ce;
        *ret_code = step == 1 ? (ce.code == ENOENT ? 127 : 126) : 125;
        return -(ce.code ? ce.code : EIO);
}

/* Starts one command with posix_spawn (a vfork-style clone: the agent's
 * page tables are not copied): its own session and process group, its
 * stdio, its cwd and environment, the commands' signal mask and default
 * dispositions. Its confinement is the agent's, which it inherits. A slot
 * of fds that is -1 gets the pty slave at slave (opened after setsid,
 * without O_NOCTTY: it becomes the command's controlling terminal, with
 * the command's group in the foreground). Returns the pid, or -errno with
 * e set and *ret_code the status to report (126, 127, or 125 for nsrun's
 * own failure). */
static pid_t spawn(nsr_session_agent *a, nsr_session_exec *x, const int fds[3], const char *slave, int *ret_code,
                   nsr_error *e) {
        *ret_code = 125;
        /* A missing cwd is told apart from a missing command. */
        if (x->cwd && access(x->cwd, X_OK) < 0)
                return nsr_error_set(e, errno, "Can't chdir to %s", x->cwd);
        /* On the stack: getcwd(NULL, 0) takes a page from malloc, and a
         * request that large first consolidates every small chunk the
         * previous step freed, on the way to each command's start. A
         * longer path goes the old way. */
        char cwdbuf[PATH_MAX];
        _cleanup_free_ char *longer = NULL;
        const char *here = x->cwd ? NULL : getcwd(cwdbuf, sizeof(cwdbuf));
        if (!x->cwd && !here && errno == ERANGE)
                here = longer = getcwd(NULL, 0);
        /* The caller's environment (filtered by the client) gets the
         * run's own edits, as a one-shot run's does; without it, the
         * session's. */
        char *const none[] = { NULL };
        const char *pwd = x->cwd ? x->cwd : here;
        char **env = x->has_base && !x->clear
                             ? nsr_session_exec_env_take(a->step_env(a->data, x->base ? x->base : none), x, pwd)
                             : nsr_session_exec_env(a->env, x, pwd);
        if (x->rlimits) {
                nsr_runctl rc;
                int r = step_rlimits(x, &rc, e);
                pid_t pid = r < 0 ? r : spawn_limited(a, x, &rc, fds, slave, env, ret_code, e);
                nsr_strv_free(env);
                return pid;
        }
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        int tty_at = -1;
        for (int i = 0; i < 3; i++)
                if (fds[i] >= 0)
                        posix_spawn_file_actions_adddup2(&fa, fds[i], i);
        for (int i = 0; i < 3; i++)
                if (fds[i] < 0 && tty_at < 0) {
                        posix_spawn_file_actions_addopen(&fa, i, slave, O_RDWR, 0);
                        tty_at = i;
                } else if (fds[i] < 0)
                        posix_spawn_file_actions_adddup2(&fa, tty_at, i);
        if (x->cwd)
                posix_spawn_file_actions_addchdir_np(&fa, x->cwd);
        sigset_t all;
        sigfillset(&all);
        posix_spawnattr_setsigmask(&at, &a->mask);
        posix_spawnattr_setsigdefault(&at, &all);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        pid_t pid = -1;
        int r;
        if (strchr(x->argv[0], '/'))
                r = posix_spawn(&pid, x->argv[0], &fa, &at, x->argv, env);
        else {
                /* The search uses the command's PATH, as a one-shot run's
                 * execvp does, not the agent's. */
                char **saved = environ;
                environ = env;
                r = posix_spawnp(&pid, x->argv[0], &fa, &at, x->argv, env);
                environ = saved;
        }
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        nsr_strv_free(env);
        if (r != 0) {
                *ret_code = r == ENOENT ? 127 : 126;
                return nsr_error_set(e, r, "execvp %s", x->argv[0]);
        }
        return pid;
}

/* A pty in the sandbox's own devpts for the command: the master (returned)
 * goes to the exec client, the slave's path to the command. */
static int open_pty(int32_t size, char *slave, size_t slave_len, nsr_error *e) {
        _cleanup_close_ int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0)
                return nsr_error_set(e, errno, "cannot open a pty (/dev/ptmx)");
        if (unlockpt(m) < 0 || ptsname_r(m, slave, slave_len) != 0)
                return nsr_error_set(e, errno, "cannot set up a pty");
        struct winsize ws = { .ws_row = (unsigned short) ((uint32_t) size >> 16),
                              .ws_col = (unsigned short) ((uint32_t) size & 0xffff) };
        if (ws.ws_row && ws.ws_col)
                (void) ioctl(m, TIOCSWINSZ, &ws);
        return TAKE_FD(m);
}

/* The command's stdio: the fds that came, in order, for the slots without
 * a pty. Returns the number of slots that want the pty. */
static int place_stdio(uint32_t flags, int got[3], int fds[3], nsr_error *e) {
        static const uint32_t bit[3] = { NSR_SMSG_TTY_IN, NSR_SMSG_TTY_OUT, NSR_SMSG_TTY_ERR };
        int k = 0, ttys = 0;
        for (int i = 0; i < 3; i++) {
                if (flags & bit[i]) {
                        fds[i] = -1;
                        ttys++;
                } else if ((fds[i] = got[k++]) < 0)
                        return nsr_error_setx(e, EBADMSG, "exec without its stdio");
        }
        if (k < 3 && got[k] >= 0)
                return nsr_error_setx(e, EBADMSG, "exec with more fds than stdio");
        return ttys;
}

static void agent_exec(nsr_session_agent *a, const nsr_session_hdr *h, const char *buf, int got[3], agent_cmd *cmds) {
        nsr_error e = { 0 };
        nsr_session_exec x = { 0 };
        size_t slot = NSR_SESSION_EXEC_MAX;
        for (size_t i = 0; i < NSR_SESSION_EXEC_MAX; i++)
                if (cmds[i].pid == 0) {
                        slot = i;
                        break;
                }
        int code = 125, fds[3] = { -1, -1, -1 };
        _cleanup_close_ int master = -1;
        char slave[64] = "";
        int r = slot == NSR_SESSION_EXEC_MAX
                        ? nsr_error_setx(&e, EAGAIN, "%u commands run already", NSR_SESSION_EXEC_MAX)
                        : place_stdio(h->flags, got, fds, &e);
        if (r > 0)
                r = master = open_pty(h->value, slave, sizeof(slave), &e);
        if (r >= 0)
                r = nsr_session_exec_decode(buf, h->len, &x, &e);
        pid_t pid = r >= 0 ? spawn(a, &x, fds, slave, &code, &e) : -1;
        for (int i = 0; i < 3; i++)
                safe_close(got[i]);
        nsr_session_exec_done(&x);
        if (pid < 0) {
                char msg[NSR_ERROR_MSG_MAX + 64];
                nsr_error_format(&e, msg, sizeof(msg));
                (void) nsr_session_send(a->sock, NSR_SMSG_EXIT, h->id, code << 8, NSR_SMSG_NOT_RUN, msg, strlen(msg),
                                        NULL, 0);
                return;
        }
        cmds[slot] = (agent_cmd){ .pid = pid, .id = h->id };
        /* The master leaves the sandbox: the client alone holds it, and
         * its close hangs up whatever still has the slave. */
        (void) nsr_session_send(a->sock, NSR_SMSG_STARTED, h->id, (int32_t) pid, 0, NULL, 0, &master,
                                master >= 0 ? 1 : 0);
}

/* Ends the agent by sig, as its default action would have. */
_noreturn_ static void die_of(int sig) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        signal(sig, SIG_DFL);
        (void) raise(sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        _exit(128 + sig);
}

/* What the outer part of the agent does once its inner part (the init of
 * the commands' pid namespace) runs: nothing but wait for it, pass on the
 * ending signals pid 1 sends, and end as it ends. Nothing in the sandbox
 * can name it: the commands see only their own namespace. */
_noreturn_ static void outer_wait(pid_t inner) {
        sigset_t all, watch;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        sigemptyset(&watch);
        sigaddset(&watch, SIGCHLD);
        sigaddset(&watch, SIGTERM);
        sigaddset(&watch, SIGINT);
        sigaddset(&watch, SIGHUP);
        sigaddset(&watch, SIGQUIT);
        int sfd = signalfd(-1, &watch, SFD_CLOEXEC);
        for (;;) {
                int st;
                pid_t w = waitpid(inner, &st, sfd < 0 ? 0 : WNOHANG);
                if (w == inner && WIFEXITED(st))
                        _exit(WEXITSTATUS(st));
                if (w == inner && WIFSIGNALED(st))
                        die_of(WTERMSIG(st));
                if (w < 0 && errno != EINTR)
                        _exit(125);
                struct signalfd_siginfo si;
                if (sfd >= 0 && read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si) && si.ssi_signo != SIGCHLD &&
                    si.ssi_code == SI_USER && si.ssi_pid == 1)
                        (void) kill(inner, (int) si.ssi_signo);
        }
}

/* The commands get a pid namespace of their own whose init is the agent:
 * the kernel delivers no signal from inside to a namespace's init unless
 * it asked for it, and never SIGSTOP or SIGKILL, so no command can stop or
 * kill the agent; a procfs of that namespace on /proc keeps ps, pkill and
 * kill PID in agreement. The process that called this stays outside and
 * waits; the one that returns is the init, and returns true. When the
 * namespaces cannot be had (no fresh procfs inside some containers), the
 * agent stays as it was, and says so by returning false. */
static bool nest(const nsr_session_agent *a) {
        _cleanup_close_ int own = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
        if (own < 0 || unshare(CLONE_NEWPID) < 0)
                return false;
        int ok[2];
        if (pipe2(ok, O_CLOEXEC) < 0)
                _exit(125);
        pid_t inner = fork();
        if (inner < 0)
                _exit(125);
        if (inner == 0) {
                nsr_error e = { 0 };
                char c = unshare(CLONE_NEWNS) == 0 && nsr_rootfs_proc_renew(&e) >= 0 ? 'y' : 'n';
                (void) nsr_write_all(ok[1], &c, 1);
                if (c != 'y')
                        _exit(0);
                close(ok[0]);
                close(ok[1]);
                return true;
        }
        close(ok[1]);
        char c = 'n';
        bool nested = nsr_read_full(ok[0], &c, 1) == 1 && c == 'y';
        close(ok[0]);
        if (!nested) {
                (void) waitpid(inner, NULL, 0);
                /* Children go back to the agent's own namespace. */
                if (setns(own, CLONE_NEWPID) < 0)
                        _exit(125);
                return false;
        }
        close(a->sock);
        close(a->setup_fd);
        for (size_t i = 0; i < NSR_SESSION_CONFINE_FDS; i++)
                if (a->confine_fds[i] >= 0)
                        close(a->confine_fds[i]);
        outer_wait(inner);
}

_noreturn_ void nsr_session_agent_run(nsr_session_agent *a) {
        /* Only the socket, the setup pipe and the fds the confinement
         * owns are ours: the monitor's other fds (the start pipe, the
         * epoll set) must not be in the sandbox. */
        int keep[2 + NSR_SESSION_CONFINE_FDS] = { a->sock, a->setup_fd };
        for (size_t i = 0; i < NSR_SESSION_CONFINE_FDS; i++)
                keep[2 + i] = a->confine_fds[i];
        if (nsr_close_all_but(3, keep, ELEMENTSOF(keep)) < 0)
                _exit(125);
        /* The daemon ignores SIGPIPE and SIGHUP; an ignored signal stays
         * ignored across execve, and no command may start that way. */
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
        /* Nothing in the sandbox may ptrace the agent or read its memory. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                _exit(125);
        /* Before the confinement drops the capabilities it needs. */
        bool nested = nest(a);
        /* The agent takes the command's confinement itself, once: every
         * command it forks inherits it (capabilities, no_new_privs, the
         * Landlock scopes, the seccomp filters), which spares each command
         * the filter's load, a third of a millisecond. The mask it restores
         * is the one each command gets. */
        nsr_error ce = { 0 };
        if (a->confine(a->data, &ce) < 0) {
                (void) nsr_write_all(a->setup_fd, &ce, sizeof(ce));
                _exit(125);
        }
        /* confine closed what it owned: no command inherits those. */
        for (size_t i = 0; i < NSR_SESSION_CONFINE_FDS; i++)
                a->confine_fds[i] = -1;
        sigprocmask(SIG_SETMASK, NULL, &a->mask);
        /* The commands run as the agent's uid, in its Landlock domain:
         * they may send it signals. Every signal is blocked, so none ends
         * or stops it by default; the ending ones are read and obeyed only
         * from pid 1 (the daemon was told to stop: the session ends as an
         * interrupted run, kept). SIGSTOP cannot be blocked: pid 1 resumes
         * the agent at once (NSR_REAPER_RESUME); SIGKILL ends the session,
         * kept. Confinement may have reset dumpability: no ptrace. */
        if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                _exit(125);
        sigset_t all, watch;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        sigemptyset(&watch);
        static const int ending[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
        for (size_t i = 0; i < ELEMENTSOF(ending); i++)
                sigaddset(&watch, ending[i]);
        sigaddset(&watch, SIGCHLD);
        int sfd = signalfd(-1, &watch, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                _exit(125);
        agent_cmd *cmds = nsr_malloc0(NSR_SESSION_EXEC_MAX * sizeof(agent_cmd));
        char *buf = nsr_malloc0(NSR_SESSION_PAYLOAD_MAX + 1);
        if (nsr_session_send(a->sock, NSR_SMSG_HELLO, 0, (int32_t) getpid(), 0, NULL, 0, NULL, 0) < 0)
                _exit(125);
        /* Setup is over: the monitor's error pipe sees its end. */
        close(a->setup_fd);
        for (;;) {
                struct pollfd p[2] = { { .fd = a->sock, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(125);
                }
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                if (si.ssi_signo != SIGCHLD && si.ssi_code == SI_USER &&
                                    si.ssi_pid == (nested ? 0u : 1u))
                                        die_of((int) si.ssi_signo);
                        int st;
                        pid_t w;
                        /* A stopped command (^Z in its terminal) is told to
                         * the client, which stops too. */
                        while ((w = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0)
                                for (size_t i = 0; i < NSR_SESSION_EXEC_MAX; i++) {
                                        if (cmds[i].pid != w)
                                                continue;
                                        bool stopped = WIFSTOPPED(st);
                                        (void) nsr_session_send(a->sock, stopped ? NSR_SMSG_SUSPENDED : NSR_SMSG_EXIT,
                                                                cmds[i].id, st, 0, NULL, 0, NULL, 0);
                                        if (!stopped)
                                                cmds[i] = (agent_cmd){ 0 };
                                }
                }
                if (!p[0].revents)
                        continue;
                nsr_session_hdr h;
                int fds[3];
                int r = nsr_session_recv(a->sock, &h, buf, fds);
                if (r == -EBADMSG)
                        continue;
                if (r < 0) {
#ifdef NSR_TEST_HOOKS
                        /* An agent that never ends: the tests show the stop
                         * is bounded from the host side all the same. */
                        if (getenv("NSRUN_TEST_AGENT_DEAF"))
                                for (;;)
                                        (void) poll(NULL, 0, -1);
#endif
                        _exit(0); /* the monitor ended the session */
                }
                if (h.type == NSR_SMSG_EXEC)
                        agent_exec(a, &h, buf, fds, cmds);
                else {
                        for (int i = 0; i < 3; i++)
                                safe_close(fds[i]);
                        if (h.type == NSR_SMSG_SIGNAL && h.value > 0 && h.value < NSIG)
                                for (size_t i = 0; i < NSR_SESSION_EXEC_MAX; i++)
                                        if (cmds[i].pid > 0 && cmds[i].id == h.id) {
                                                (void) kill(-cmds[i].pid, h.value);
                                                if (h.value == SIGCONT)
                                                        (void) nsr_session_send(a->sock, NSR_SMSG_SUSPENDED, h.id, 0,
                                                                                NSR_SMSG_CONTINUED, NULL, 0, NULL, 0);
                                        }
                }
        }
}
