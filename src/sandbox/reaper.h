/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pid 1 of the sandbox: reaps zombies, forwards signals to the command and
 * passes the command's status out. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/util.h"

/* The signals nsrun forwards to the command: bwrap's pid 1 forwards none
 * (bubblewrap#369), so Ctrl-C and kill never reached the command. */
#define NSR_FORWARDED_SIGNALS SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGTSTP, SIGCONT

void nsr_forwarded_sigset(sigset_t *set);

/* Whether a signal nsrun got means "stop" (the run is then interrupted);
 * SIGWINCH (a resize) and SIGTSTP/SIGCONT (^Z and fg) do not. */
bool nsr_signal_interrupts(int sig);

/* nsr_reaper_run() flags. */
enum {
        /* The command leads a process group of its own, outside the
         * terminal's (a new session): the signals a terminal sends to its
         * whole foreground group (INT, QUIT, WINCH) go to that group, so
         * Ctrl-C stops "sh -c 'sleep 20; ...'" and not only the shell. */
        NSR_REAPER_GROUP = 1 << 0,
        /* pid 1 of a pid namespace of its own: TERM and HUP (kill, a
         * closed terminal) go to every process in it, the whole tree. */
        NSR_REAPER_TREE = 1 << 1,
        /* The command is a session's agent: a stop (SIGSTOP from a command
         * beside it) is undone at once, so nothing inside stalls it. */
        NSR_REAPER_RESUME = 1 << 2,
};

/* Sends a signal nsrun got on to the command, its group or its whole
 * tree, as flags say (for pid 1, and for the best-effort monitor, where the
 * command leads a session: its group is its tree). */
void nsr_signal_forward(pid_t command, int sig, unsigned flags);

/* What pid 1 tells the monitor when the command exits. */
typedef struct nsr_reaper_status {
        int wait_status;
        bool last; /* no other process is left: pid 1 exits right away */
} nsr_reaper_status;

/* Runs the reaper loop until no child is left, then exits with the
 * command's status (128+N for a signal). status_fd receives the command's
 * raw wait status as soon as it is known (an int), then is closed. The
 * signal mask must already block SIGCHLD and the forwarded signals. */
_noreturn_ void nsr_reaper_run(pid_t command, int status_fd, unsigned flags);

/* Confines pid 1 to the system calls the reaper loop makes, with a filter
 * of its own (every other call fails with EPERM). Loading a policy's full
 * filter costs a third of a millisecond per process; this one is a few
 * dozen instructions, and stricter than any policy. Needs no_new_privs.
 * -EOPNOTSUPP on an architecture it does not know. */
int nsr_reaper_confine(void);

/* Converts a wait status to a shell exit code: the code, 128+signal, or
 * 255. */
int nsr_exit_code_from_status(int status);
