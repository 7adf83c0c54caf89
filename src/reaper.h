/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pid 1 of the sandbox: reaps zombies, forwards signals to the command and
 * passes the command's status out. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "util.h"

/* The signals nsrun forwards to the command: bwrap's pid 1 forwards none
 * (bubblewrap#369), so Ctrl-C and kill never reached the command. */
#define NSR_FORWARDED_SIGNALS SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2

void nsr_forwarded_sigset(sigset_t *set);

/* What pid 1 tells the monitor when the command exits. */
typedef struct nsr_reaper_status {
        int wait_status;
        bool last;      /* no other process is left: pid 1 exits right away */
} nsr_reaper_status;

/* Runs the reaper loop until no child is left, then exits with the
 * command's status (128+N for a signal). status_fd receives the command's
 * raw wait status as soon as it is known (an int), then is closed. The
 * signal mask must already block SIGCHLD and the forwarded signals. */
_noreturn_ void nsr_reaper_run(pid_t command, int status_fd);

/* Confines pid 1 to the system calls the reaper loop makes, with a filter
 * of its own (every other call fails with EPERM). Loading a policy's full
 * filter costs a third of a millisecond per process; this one is a few
 * dozen instructions, and stricter than any policy. Needs no_new_privs.
 * -EOPNOTSUPP on an architecture it does not know. */
int nsr_reaper_confine(void);

/* Converts a wait status to a shell exit code: the code, 128+signal, or
 * 255. */
int nsr_exit_code_from_status(int status);
