/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "project/stepio.h"
#include "sandbox/agent.h"

/* What one end of the step may still pass on once its main process
 * exited: what it wrote before is in the buffer, a leftover that keeps
 * writing gets no more than this. */
#define DRAIN_MAX (256u * 1024u)

static const uint32_t tty_bit[3] = { NSR_SMSG_TTY_IN, NSR_SMSG_TTY_OUT, NSR_SMSG_TTY_ERR };

static bool is_dev_null(int fd) {
        struct stat st;
        return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static bool same_file(int a, int b) {
        struct stat sa, sb;
        return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void nonblock(int fd) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                (void) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* One non-tty slot: a fresh /dev/null for the caller's /dev/null, else a
 * pipe whose other end we keep. */
static int open_slot(nsr_stepio *io, int i, nsr_error *err) {
        if (is_dev_null(i)) {
                int fd = open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
                if (fd < 0)
                        return nsr_error_set(err, errno, "cannot open /dev/null");
                io->send[io->n_send++] = fd;
                return 0;
        }
        /* 2>&1: one pipe, so the order of the two streams stays. */
        if (i == 2 && io->out_r[0] >= 0 && same_file(1, 2)) {
                int fd = fcntl(io->send[io->n_send - 1], F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return nsr_error_set(err, errno, "dup");
                io->send[io->n_send++] = fd;
                return 0;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2");
        if (i == 0) {
                io->send[io->n_send++] = p[0];
                io->in_w = p[1];
                nonblock(p[1]);
                io->stdin_open = true;
        } else {
                io->send[io->n_send++] = p[1];
                io->out_r[i - 1] = p[0];
                nonblock(p[0]);
        }
        return 0;
}

int nsr_stepio_open(nsr_stepio *io, nsr_error *err) {
        *io = (nsr_stepio) NSR_STEPIO_INIT;
        static const int out_order[3] = { 1, 2, 0 };
        for (int k = 0; k < 3; k++)
                if (io->tty_out < 0 && isatty(out_order[k]))
                        io->tty_out = out_order[k];
        for (int i = 0; i < 3; i++) {
                if (isatty(i)) {
                        io->tty_flags |= tty_bit[i];
                        continue;
                }
                int r = open_slot(io, i, err);
                if (r < 0) {
                        nsr_stepio_finish(io);
                        return r;
                }
        }
        if (io->tty_flags & NSR_SMSG_TTY_IN)
                io->stdin_open = true;
        struct winsize ws;
        if (io->tty_out >= 0 && ioctl(io->tty_out, TIOCGWINSZ, &ws) == 0)
                io->winsize = (int32_t) (((uint32_t) ws.ws_row << 16) | ws.ws_col);
        return 0;
}

void nsr_stepio_sent(nsr_stepio *io) {
        for (size_t i = 0; i < io->n_send; i++)
                io->send[i] = safe_close(io->send[i]);
        io->n_send = 0;
}

/* Whether the caller's terminal (fd 0) has us in its foreground: in the
 * background, reading it or changing its mode would stop us (SIGTTIN,
 * SIGTTOU), and the step's output with us. */
static bool foreground(void) {
        pid_t p = tcgetpgrp(0);
        return p >= 0 && p == getpgrp();
}

static void set_raw(nsr_stepio *io) {
        if (!io->have_saved || io->raw || !foreground())
                return;
        struct termios t = io->saved;
        cfmakeraw(&t);
        if (tcsetattr(0, TCSADRAIN, &t) == 0)
                io->raw = true;
}

static void restore(nsr_stepio *io) {
        if (io->raw)
                (void) tcsetattr(0, TCSADRAIN, &io->saved);
        io->raw = false;
}

int nsr_stepio_started(nsr_stepio *io, int fd, nsr_error *err) {
        if (!io->tty_flags) {
                safe_close(fd);
                return 0;
        }
        /* Only a pty's master is taken from the sandbox's side. */
        unsigned n;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || ioctl(fd, TIOCGPTN, &n) < 0) {
                safe_close(fd);
                return nsr_error_setx(err, EBADMSG, "the session sent no terminal for the command");
        }
        io->master = fd;
        nonblock(fd);
        if ((io->tty_flags & NSR_SMSG_TTY_IN) && tcgetattr(0, &io->saved) == 0) {
                io->have_saved = true;
                set_raw(io);
        }
        return 0;
}

/* The bytes go to the caller as they are: a terminal session is a raw
 * byte stream. A caller's fd that is non-blocking is waited for. Returns
 * false when it cannot take more. */
static bool put(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t k = write(fd, buf, len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN) {
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        (void) poll(&p, 1, -1);
                        continue;
                }
                if (k <= 0)
                        return false;
                buf += k;
                len -= (size_t) k;
        }
        return true;
}

/* Passes what fd has on to the caller's to. Returns the bytes moved, 0 at
 * the end (EOF, EIO, the caller's side closed), -1 when nothing is there
 * now. */
static ssize_t pass_out(int fd, int to) {
        char buf[NSR_STEPIO_BUF];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return -1;
        if (n <= 0)
                return 0;
        return put(to, buf, (size_t) n) ? n : 0;
}

size_t nsr_stepio_pollfds(const nsr_stepio *io, struct pollfd *p) {
        size_t n = 0;
        bool tty_in = io->tty_flags & NSR_SMSG_TTY_IN;
        if (io->stdin_open && io->in_len == 0 && (!tty_in || foreground()))
                p[n++] = (struct pollfd){ .fd = 0, .events = POLLIN };
        if (io->in_len && !tty_in && io->in_w >= 0)
                p[n++] = (struct pollfd){ .fd = io->in_w, .events = POLLOUT };
        if (io->master >= 0 && (!io->master_eof || (io->in_len && tty_in)))
                p[n++] = (struct pollfd){ .fd = io->master,
                                          .events = (short) ((io->master_eof ? 0 : POLLIN) |
                                                             (io->in_len && tty_in ? POLLOUT : 0)) };
        for (int k = 0; k < 2; k++)
                if (io->out_r[k] >= 0)
                        p[n++] = (struct pollfd){ .fd = io->out_r[k], .events = POLLIN };
        return n;
}

static void stdin_done(nsr_stepio *io) {
        io->stdin_open = false;
        io->in_len = io->in_off = 0;
        io->in_w = safe_close(io->in_w);
}

/* The step leads a session of its own, so its process group is orphaned
 * and the kernel ignores the SIGTSTP its pty would send for ^Z. While the
 * pty wants that key to suspend (ISIG, VSUSP), the key is taken out here
 * and the step stopped (SIGSTOP), as job control would. Returns the bytes
 * left. */
static size_t take_suspend(nsr_stepio *io, size_t n) {
        struct termios t;
        if (io->master < 0 || tcgetattr(io->master, &t) < 0 || !(t.c_lflag & ISIG) || t.c_cc[VSUSP] == _POSIX_VDISABLE)
                return n;
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
                if ((unsigned char) io->inbuf[i] == t.c_cc[VSUSP])
                        io->want_stop = true;
                else
                        io->inbuf[w++] = io->inbuf[i];
        }
        return w;
}

/* The caller's stdin, to the pipe or the pty. */
static void pass_in(nsr_stepio *io, const struct pollfd *q) {
        if (q->fd == 0) {
                if (!io->inbuf)
                        io->inbuf = nsr_malloc(NSR_STEPIO_BUF);
                ssize_t n = read(0, io->inbuf, NSR_STEPIO_BUF);
                if (n > 0 && (io->tty_flags & NSR_SMSG_TTY_IN))
                        n = (ssize_t) take_suspend(io, (size_t) n);
                if (n > 0) {
                        io->in_len = (size_t) n;
                        io->in_off = 0;
                } else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                        stdin_done(io);
                return;
        }
        int to = (io->tty_flags & NSR_SMSG_TTY_IN) ? io->master : io->in_w;
        ssize_t k = write(to, io->inbuf + io->in_off, io->in_len - io->in_off);
        if (k > 0) {
                io->in_off += (size_t) k;
                if (io->in_off == io->in_len)
                        io->in_len = io->in_off = 0;
        } else if (k < 0 && errno != EAGAIN && errno != EINTR)
                stdin_done(io);
}

void nsr_stepio_dispatch(nsr_stepio *io, const struct pollfd *p, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const struct pollfd *q = &p[i];
                if (!q->revents)
                        continue;
                if (q->fd == 0 || q->fd == io->in_w || (q->fd == io->master && (q->revents & POLLOUT)))
                        pass_in(io, q);
                if (q->fd == io->master && (q->revents & (POLLIN | POLLHUP | POLLERR)) &&
                    pass_out(io->master, io->tty_out) == 0)
                        io->master_eof = true; /* kept open: its close is the hangup */
                for (int k = 0; k < 2; k++)
                        if (q->fd == io->out_r[k] && io->out_r[k] >= 0 && pass_out(io->out_r[k], k + 1) == 0)
                                io->out_r[k] = safe_close(io->out_r[k]);
        }
}

void nsr_stepio_winch(nsr_stepio *io) {
        struct winsize ws;
        if (io->master >= 0 && io->tty_out >= 0 && ioctl(io->tty_out, TIOCGWINSZ, &ws) == 0)
                (void) ioctl(io->master, TIOCSWINSZ, &ws);
}

void nsr_stepio_suspend(nsr_stepio *io) {
        restore(io);
}

void nsr_stepio_resume(nsr_stepio *io) {
        set_raw(io);
        nsr_stepio_winch(io);
}

static void drain(int fd, int to) {
        size_t moved = 0;
        ssize_t n;
        while (moved < DRAIN_MAX && (n = pass_out(fd, to)) > 0)
                moved += (size_t) n;
}

void nsr_stepio_finish(nsr_stepio *io) {
        if (io->master >= 0 && !io->master_eof)
                drain(io->master, io->tty_out);
        for (int k = 0; k < 2; k++)
                if (io->out_r[k] >= 0)
                        drain(io->out_r[k], k + 1);
        /* The hangup: the slave's holders get SIGHUP, then EIO. */
        io->master = safe_close(io->master);
        for (int k = 0; k < 2; k++)
                io->out_r[k] = safe_close(io->out_r[k]);
        stdin_done(io);
        free(io->inbuf);
        io->inbuf = NULL;
        nsr_stepio_sent(io);
        restore(io);
}
