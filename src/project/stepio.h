/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stdio of one "nsrun exec" step, owned by the exec client: the
 * command never gets the caller's fds. Each of the caller's terminals is
 * replaced by one pty that the agent allocates in the sandbox (the master
 * comes back with STARTED), each other fd by a pipe the client makes
 * (a caller's /dev/null by a fresh /dev/null). The client relays the
 * bytes, raw, both ways, and when the step's main process has exited it
 * takes what is already buffered (bounded) and closes its ends: whatever
 * the step left behind reads EOF or EIO and writes to nothing (the pty's
 * hangup also sends its session SIGHUP), and never again reaches the
 * caller's terminal or stdio. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "base/error.h"

#define NSR_STEPIO_BUF      16384
#define NSR_STEPIO_POLL_MAX 5

typedef struct nsr_stepio {
        uint32_t tty_flags; /* NSR_SMSG_TTY_* asked for */
        int32_t winsize;    /* rows << 16 | columns, for the EXEC */
        int send[3];        /* what goes to the sandbox, packed; closed once sent */
        size_t n_send;
        int master;           /* the pty's master, once STARTED brought it */
        int in_w;             /* the command's stdin pipe, our end */
        int out_r[2];         /* its stdout and stderr pipes, our ends (-1: none or shared) */
        int tty_out;          /* the caller's fd the pty's output goes to */
        bool stdin_open;      /* the caller's fd 0 is relayed and not at EOF */
        bool master_eof;      /* every slave is closed */
        bool want_stop;       /* the caller typed the pty's suspend key: stop the step */
        bool raw;             /* the caller's terminal (fd 0) is in raw mode */
        bool have_saved;      /* saved holds its mode */
        struct termios saved; /* its mode before */
        /* Made at the first read of fd 0: a step with no stdin to relay
         * (most of them) never touches its pages, and the struct stays
         * small enough to be set up without a 16 KiB memset. */
        char *inbuf;           /* NSR_STEPIO_BUF bytes */
        size_t in_len, in_off; /* read from fd 0, not yet passed on */
} nsr_stepio;

#define NSR_STEPIO_INIT                                                                                                \
        { .send = { -1, -1, -1 }, .master = -1, .in_w = -1, .out_r = { -1, -1 }, .tty_out = -1 }

/* Looks at the caller's fds 0 1 2 and makes the pipes. */
int nsr_stepio_open(nsr_stepio *io, nsr_error *err);

/* The fds were sent: our copies of the sandbox's ends go. */
void nsr_stepio_sent(nsr_stepio *io);

/* STARTED came with fd (or -1): a pty's master when one was asked for,
 * refused otherwise. Puts the caller's terminal in raw mode. Takes fd. */
int nsr_stepio_started(nsr_stepio *io, int fd, nsr_error *err);

/* The fds to poll (at most NSR_STEPIO_POLL_MAX) and what to do when they are ready. */
size_t nsr_stepio_pollfds(const nsr_stepio *io, struct pollfd *p);
void nsr_stepio_dispatch(nsr_stepio *io, const struct pollfd *p, size_t n);

/* SIGWINCH: the caller's terminal size to the pty. */
void nsr_stepio_winch(nsr_stepio *io);

/* ^Z: the caller's terminal back to its mode (before stopping), raw again
 * (after, and at any SIGCONT: a background exec brought to the
 * foreground). Only a foreground exec reads a terminal stdin or changes
 * its mode. */
void nsr_stepio_suspend(nsr_stepio *io);
void nsr_stepio_resume(nsr_stepio *io);

/* The main process exited: what is buffered now is passed on (at most
 * a pipe's or a pty's worth), then every end is closed and the caller's
 * terminal restored. Safe to call more than once. */
void nsr_stepio_finish(nsr_stepio *io);
