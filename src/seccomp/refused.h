/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the sandbox refused: a record of the system calls the seccomp
 * policy denied, for the report ("refused") and one stderr line
 * ("nsrun: refused: ptrace x3, mount x1").
 *
 * How, without slowing allowed calls down: the command's policy filter is
 * loaded in a second form in which every "fail with errno E" return
 * (SECCOMP_RET_ERRNO) is SECCOMP_RET_USER_NOTIF instead, with a listener
 * (SECCOMP_FILTER_FLAG_NEW_LISTENER). Allowed calls take exactly the paths
 * they took before. A refused call stops in the kernel until the monitor
 * (nsrun, outside the sandbox) reads the notification, runs the *original*
 * program on the same seccomp_data with the small interpreter below to
 * learn E, counts the call, and answers with error -E: the command sees
 * the same errno as without the record.
 *
 * Limits:
 *   - a task may have one listener filter in its chain: a program in the
 *     sandbox that installs its own (a nested sandbox with --allow-nested,
 *     say) gets EBUSY; a nested nsrun falls back to its plain filter;
 *   - only the first policy program has the listener; programs stacked
 *     after it answer for themselves, unrecorded;
 *   - clone3 refused with ENOSYS is glibc's probe before it falls back to
 *     clone: it is answered in the filter itself and not recorded;
 *   - if the monitor is gone, a refused call fails with ENOSYS. */
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/outq.h"
#include "base/util.h"

#define NSR_REFUSED_MAX_ENTRIES 256

/* Runs a classic BPF seccomp program on d. Returns its SECCOMP_RET_*
 * value; a program that is malformed or runs off its end gives
 * SECCOMP_RET_KILL_PROCESS. Pure. */
uint32_t nsr_bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d);

/* The listener form of a policy program: ERRNO returns become
 * USER_NOTIF, and a prefix answers the exempt calls (clone3's ENOSYS) as
 * the original does. -EOPNOTSUPP for a program this cannot rewrite (a
 * return taken from the accumulator). Pure but for the native arch. */
int nsr_refused_notify_prog(const char *data, size_t len, char **ret, size_t *ret_len);

typedef struct nsr_refused_entry {
        uint32_t arch;
        int nr;
        char name[40]; /* "ptrace", or "syscall 451" */
        int errnum;    /* what the command got */
        uint64_t count;
        char comm[16 * 4 + 1]; /* the first caller's name, escaped */
} nsr_refused_entry;

struct nsr_refused {
        char *prog; /* the original program */
        size_t prog_len;
        nsr_refused_entry entries[NSR_REFUSED_MAX_ENTRIES];
        size_t n_entries;
        uint64_t dropped; /* calls of syscalls beyond NSR_REFUSED_MAX_ENTRIES */
        int events_fd;    /* --events-fd, or -1: a JSON line per new entry... */
        nsr_outq *events; /* ...through the monitor's queue for it, once set */
        bool active;      /* a listener was installed */
        /* Each refused call once more, for a session's per-step record:
         * sid is the caller's session id in its innermost pid namespace
         * (a session step leads its own), 0 when unknown. */
        void (*on_call)(void *data, pid_t sid, uint32_t arch, int nr, int errnum, const char *comm);
        void *on_call_data;
};
typedef struct nsr_refused nsr_refused;

/* Keeps a copy of the original program. */
void nsr_refused_init(nsr_refused *rf, const char *prog, size_t len, int events_fd);
void nsr_refused_done(nsr_refused *rf);
/* Takes and answers one notification from the listener fd. -errno when
 * the listener is gone (every task of the filter exited). */
int nsr_refused_handle(nsr_refused *rf, int listener);
/* Answers one notification already received (req), as above. */
int nsr_refused_answer(nsr_refused *rf, int listener, const struct seccomp_notif *req);
/* Is d a call the original program refuses (SECCOMP_RET_ERRNO)? false
 * without a program. */
bool nsr_refused_is_refusal(const nsr_refused *rf, const struct seccomp_data *d);
/* Adds one refused call to the record (used by nsr_refused_handle). */
void nsr_refused_count(nsr_refused *rf, uint32_t arch, int nr, int errnum, const char *comm);
/* "ptrace x3, mount x1, 2 more" in count order (largest first, then by
 * name), or NULL when nothing was refused: the start of the stderr line. */
char *nsr_refused_summary(const nsr_refused *rf);

/* Installs the listener filter in the calling process and returns the
 * listener fd; -errno (EBUSY: there is a listener already) to fall back
 * to the plain program. */
int nsr_refused_install(const char *notify_prog, size_t len);
/* Passes the listener fd over a unix socket (SCM_RIGHTS), and takes it. */
int nsr_refused_send_fd(int sock, int fd);
int nsr_refused_recv_fd(int sock);
