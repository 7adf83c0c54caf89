/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/execfloor: the floor under "nsrun exec ID -- /bin/true", without
 * nsrun: the same processes and hops, and nothing else (no namespace, no
 * filter, no environment list, no options).
 *
 *   bench-execfloor serve DIR    starts a server and an agent, detached
 *   bench-execfloor exec DIR     one step: /bin/true, its exit status
 *   bench-execfloor stop DIR
 *
 * exec is the client: a fresh /dev/null for each of its three fds (what
 * nsrun's client gives a step whose stdio is /dev/null), connects to
 * DIR/ctl (SOCK_SEQPACKET), sends the request with the three fds, waits
 * for the exit. The server (an epoll loop, as the session server is in
 * the monitor's) accepts, reads the request at once, passes it to the
 * agent over a socketpair, keeps the pid the agent reports (as the
 * session server does, for refused calls) and passes the exit back. The
 * agent (poll on its socket and a signalfd for SIGCHLD) posix_spawns the
 * command in a session of its own with those fds. So: two process starts
 * (the client, the command) and the four hops each way that nsrun's exec
 * has at best. Compare them in one hyperfine run (bench/README.md, "nsrun
 * exec, second pass"). Not a test: it never fails a build. Built by
 * "make bench-execfloor". */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MSG_EXEC = 1, MSG_STARTED = 2, MSG_EXIT = 3 };

typedef struct msg {
        uint32_t type, id;
        int32_t value;
} msg;

static int send_msg(int fd, uint32_t type, uint32_t id, int32_t value, const int *fds, int n) {
        msg m = { type, id, value };
        struct iovec iov = { &m, sizeof(m) };
        char cbuf[CMSG_SPACE(3 * sizeof(int))] = { 0 };
        struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (n > 0) {
                h.msg_control = cbuf;
                h.msg_controllen = CMSG_SPACE((size_t) n * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&h);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN((size_t) n * sizeof(int));
                memcpy(CMSG_DATA(c), fds, (size_t) n * sizeof(int));
        }
        return sendmsg(fd, &h, MSG_NOSIGNAL) == (ssize_t) sizeof(m) ? 0 : -1;
}

/* Returns the number of fds that came (into fds), -1 at the end or on a
 * malformed message, -2 when nothing is there (a non-blocking fd). */
static int recv_msg(int fd, msg *m, int fds[3]) {
        struct iovec iov = { m, sizeof(*m) };
        char cbuf[CMSG_SPACE(3 * sizeof(int))];
        struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        ssize_t r = recvmsg(fd, &h, MSG_CMSG_CLOEXEC);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
                return -2;
        if (r != (ssize_t) sizeof(*m))
                return -1;
        int n = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        n = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        memcpy(fds, CMSG_DATA(c), (size_t) n * sizeof(int));
                }
        return n;
}

static void sun_of(struct sockaddr_un *sa, const char *dir) {
        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/ctl", dir);
}

/* ---- the agent ----------------------------------------------------------- */

static void agent(int sock) {
        sigset_t chld, none;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigemptyset(&none);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        pid_t pids[64] = { 0 };
        uint32_t ids[64] = { 0 };
        for (;;) {
                struct pollfd p[2] = { { sock, POLLIN, 0 }, { sfd, POLLIN, 0 } };
                if (poll(p, 2, -1) < 0)
                        continue;
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                ;
                        int st;
                        pid_t w;
                        while ((w = waitpid(-1, &st, WNOHANG)) > 0)
                                for (int i = 0; i < 64; i++)
                                        if (pids[i] == w) {
                                                send_msg(sock, MSG_EXIT, ids[i], st, NULL, 0);
                                                pids[i] = 0;
                                        }
                }
                if (!p[0].revents)
                        continue;
                msg m;
                int fds[3] = { -1, -1, -1 };
                int n = recv_msg(sock, &m, fds);
                if (n == -2)
                        continue;
                if (n < 0)
                        _exit(0);
                if (m.type != MSG_EXEC || n != 3)
                        continue;
                posix_spawn_file_actions_t fa;
                posix_spawnattr_t at;
                posix_spawn_file_actions_init(&fa);
                posix_spawnattr_init(&at);
                for (int i = 0; i < 3; i++)
                        posix_spawn_file_actions_adddup2(&fa, fds[i], i);
                posix_spawnattr_setsigmask(&at, &none);
                posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
                char *argv[] = { (char *) "/bin/true", NULL };
                char *envp[] = { NULL };
                pid_t pid = -1;
                int r = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
                posix_spawn_file_actions_destroy(&fa);
                posix_spawnattr_destroy(&at);
                for (int i = 0; i < 3; i++)
                        close(fds[i]);
                if (r != 0) {
                        send_msg(sock, MSG_EXIT, m.id, 127 << 8, NULL, 0);
                        continue;
                }
                for (int i = 0; i < 64; i++)
                        if (!pids[i]) {
                                pids[i] = pid;
                                ids[i] = m.id;
                                break;
                        }
                send_msg(sock, MSG_STARTED, m.id, pid, NULL, 0);
        }
}

/* ---- the server ---------------------------------------------------------- */

#define CLIENTS 64

static void serve(int lfd, int agent_fd) {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
        epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
        ev.data.u32 = UINT32_MAX - 1;
        epoll_ctl(ep, EPOLL_CTL_ADD, agent_fd, &ev);
        int client[CLIENTS];
        pid_t pid[CLIENTS];
        for (int i = 0; i < CLIENTS; i++) {
                client[i] = -1;
                pid[i] = 0;
        }
        uint32_t next = 0;
        for (;;) {
                struct epoll_event got[8];
                int n = epoll_wait(ep, got, 8, -1);
                for (int k = 0; k < n; k++) {
                        uint32_t tag = got[k].data.u32;
                        int fds[3] = { -1, -1, -1 }, nf;
                        msg m;
                        if (tag == UINT32_MAX) {
                                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                                uint32_t slot = next++ % CLIENTS;
                                if (c < 0)
                                        continue;
                                if (client[slot] >= 0)
                                        close(client[slot]);
                                client[slot] = c;
                                ev.data.u32 = slot;
                                epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
                                tag = slot; /* the request is usually there already */
                        } else if (tag == UINT32_MAX - 1) {
                                int r = recv_msg(agent_fd, &m, fds);
                                if (r == -2)
                                        continue;
                                if (r < 0)
                                        _exit(0);
                                if (m.id >= CLIENTS || client[m.id] < 0)
                                        continue;
                                /* The pid is kept, as the session server keeps
                                 * it for the step's refused calls. */
                                if (m.type == MSG_STARTED && !pid[m.id])
                                        pid[m.id] = m.value;
                                else if (m.type == MSG_EXIT) {
                                        pid[m.id] = 0;
                                        send_msg(client[m.id], MSG_EXIT, 0, m.value, NULL, 0);
                                }
                                continue;
                        }
                        nf = recv_msg(client[tag], &m, fds);
                        if (nf == -2)
                                continue;
                        if (nf < 0) {
                                close(client[tag]);
                                client[tag] = -1;
                                continue;
                        }
                        if (m.type == MSG_EXEC && nf == 3)
                                send_msg(agent_fd, MSG_EXEC, tag, 0, fds, 3);
                        for (int i = 0; i < nf; i++)
                                close(fds[i]);
                }
        }
}

static int cmd_serve(const char *dir) {
        struct sockaddr_un sa;
        sun_of(&sa, dir);
        unlink(sa.sun_path);
        int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int sp[2];
        if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 64) < 0 ||
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                perror("execfloor: serve");
                return 1;
        }
        pid_t d = fork();
        if (d != 0)
                return d < 0 ? 1 : 0;
        setsid();
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        pid_t a = fork();
        if (a == 0) {
                close(lfd);
                close(sp[0]);
                agent(sp[1]);
        }
        close(sp[1]);
        char pidfile[sizeof(sa.sun_path) + 8];
        snprintf(pidfile, sizeof(pidfile), "%s/pids", dir);
        FILE *f = fopen(pidfile, "we");
        if (f) {
                fprintf(f, "%d %d\n", (int) getpid(), (int) a);
                fclose(f);
        }
        serve(lfd, sp[0]);
        return 0;
}

static int cmd_exec(const char *dir) {
        int fds[3];
        for (int i = 0; i < 3; i++)
                fds[i] = open("/dev/null", (i ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
        struct sockaddr_un sa;
        sun_of(&sa, dir);
        int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (s < 0 || connect(s, (struct sockaddr *) &sa, sizeof(sa)) < 0 || send_msg(s, MSG_EXEC, 0, 0, fds, 3) < 0) {
                perror("execfloor: exec");
                return 125;
        }
        for (int i = 0; i < 3; i++)
                close(fds[i]);
        for (;;) {
                msg m;
                int got[3];
                int n = recv_msg(s, &m, got);
                if (n == -2)
                        continue;
                if (n < 0)
                        return 125;
                if (m.type == MSG_EXIT)
                        return WIFEXITED(m.value) ? WEXITSTATUS(m.value) : 128 + WTERMSIG(m.value);
        }
}

static int cmd_stop(const char *dir) {
        char pidfile[PATH_MAX];
        snprintf(pidfile, sizeof(pidfile), "%s/pids", dir);
        FILE *f = fopen(pidfile, "re");
        int s = 0, a = 0;
        if (!f || fscanf(f, "%d %d", &s, &a) != 2 || s <= 0 || a <= 0) {
                fprintf(stderr, "execfloor: no server in %s\n", dir);
                return 1;
        }
        fclose(f);
        kill(s, SIGTERM);
        kill(a, SIGTERM);
        unlink(pidfile);
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "serve") == 0)
                return cmd_serve(argv[2]);
        if (argc == 3 && strcmp(argv[1], "exec") == 0)
                return cmd_exec(argv[2]);
        if (argc == 3 && strcmp(argv[1], "stop") == 0)
                return cmd_stop(argv[2]);
        fprintf(stderr, "usage: bench-execfloor serve|exec|stop DIR\n");
        return 2;
}
