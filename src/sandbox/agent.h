/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The session wire protocol and the agent: the part of a session that runs
 * inside the sandbox (project/session.h is the host side, docs/sessions.md
 * the whole picture).
 *
 * The agent is the process a one-shot run would exec as the command: it
 * is inside every namespace and the new root already, and forks each
 * command with the confinement a one-shot command gets (launch.c's
 * confine_command()). The monitor relays requests between the control
 * socket and the agent over a socketpair made before the clone; the
 * command's stdio travels with SCM_RIGHTS: pipes the exec client made, and
 * for the caller's terminals a pty the agent allocates in the sandbox's
 * devpts, whose master goes back to the client (it relays, and hangs the
 * pty up when the command's main process exits).
 *
 * Every message is one SOCK_SEQPACKET datagram: a header and a payload of
 * at most NSR_SESSION_PAYLOAD_MAX bytes. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/msgq.h"
#include "base/util.h"

#define NSR_SESSION_MAGIC        0x6e737331u /* "nss1" */
#define NSR_SESSION_PAYLOAD_MAX  (64u * 1024u)
#define NSR_SESSION_IDLE_DEFAULT (30u * 60u)
#define NSR_SESSION_EXEC_MAX     64 /* commands running at once */
#define NSR_SESSION_CONFINE_FDS  2  /* fds the agent's confinement owns */

typedef enum nsr_session_msg_type {
        NSR_SMSG_HELLO,   /* agent -> monitor: the sandbox is up */
        NSR_SMSG_EXEC,    /* client -> monitor -> agent: the request; flags TTY_*: those
                           * of fds 0 1 2 get a pty (value: rows << 16 | columns), the
                           * others come as fds, in order */
        NSR_SMSG_STARTED, /* value: the command's pid (in the sandbox); with TTY_* asked
                           * for, one fd: the pty's master */
        NSR_SMSG_EXIT,    /* value: wait status; flags NOT_RUN: payload says why */
        NSR_SMSG_SIGNAL,  /* value: a signal for the command's process group */
        NSR_SMSG_STOP,    /* value: nsr_session_outcome */
        NSR_SMSG_STOPPED, /* payload: what the stop did, lines */
        NSR_SMSG_ERROR,   /* payload: a message */
        NSR_SMSG_PING,    /* -> PONG, value: commands running */
        NSR_SMSG_PONG,
        NSR_SMSG_SUSPENDED, /* agent -> monitor -> client: the command stopped (^Z) */
        _NSR_SMSG_MAX,
        _NSR_SMSG_INVALID = -EINVAL,
} nsr_session_msg_type;

#define NSR_SMSG_NOT_RUN 1u
#define NSR_SMSG_TTY_IN  (1u << 1)
#define NSR_SMSG_TTY_OUT (1u << 2)
#define NSR_SMSG_TTY_ERR (1u << 3)
#define NSR_SMSG_TTY_ALL (NSR_SMSG_TTY_IN | NSR_SMSG_TTY_OUT | NSR_SMSG_TTY_ERR)
/* SUSPENDED with this flag: the agent passed a SIGCONT on. A stop the
 * client hears of before that is stale (the SIGCONT ended it). */
#define NSR_SMSG_CONTINUED (1u << 4)
/* EXIT from the monitor with this flag: the payload is the step's refused
 * record (project/sesscommit.h). The agent's own flags never pass on. */
#define NSR_SMSG_REFUSED (1u << 5)

typedef enum nsr_session_outcome {
        NSR_SESSION_KEEP,
        NSR_SESSION_COMMIT,
        NSR_SESSION_DISCARD,
        _NSR_SESSION_OUTCOME_MAX,
        _NSR_SESSION_OUTCOME_INVALID = -EINVAL,
} nsr_session_outcome;

typedef struct nsr_session_hdr {
        uint32_t magic;
        uint32_t type;
        uint32_t id;
        int32_t value;
        uint32_t flags;
        uint32_t len;
} nsr_session_hdr;

/* Sends one message with up to 3 fds. */
int nsr_session_send(int fd, uint32_t type, uint32_t id, int32_t value, uint32_t flags, const void *payload, size_t len,
                     const int *fds, size_t n_fds);
/* The same through a peer's queue: never blocks; -errno once the queue
 * has ended (the peer is to be dropped). */
int nsr_session_queue(nsr_msgq *q, uint32_t type, uint32_t id, int32_t value, uint32_t flags, const void *payload,
                      size_t len, const int *fds, size_t n_fds);

/* Receives one message. buf holds NSR_SESSION_PAYLOAD_MAX + 1 bytes; the
 * payload is NUL-terminated there. Up to 3 fds land in fds (CLOEXEC; the
 * rest are -1). -ENODATA at the peer's hangup, -EBADMSG for a message that
 * is not one (the fds it carried are closed). */
int nsr_session_recv(int fd, nsr_session_hdr *ret, char *buf, int fds[3]);

/* An exec request. */
typedef struct nsr_session_exec {
        char **argv;
        char **set;     /* NAME=VALUE */
        char **unset;   /* NAME */
        char *cwd;      /* NULL: the session's */
        char **base;    /* NAME=VALUE: the caller's environment, filtered */
        bool has_base;  /* base replaces the session's environment */
        bool clear;     /* --clearenv: no base, no PWD, only set */
        char **rlimits; /* --rlimit NAME=SOFT[:HARD], as given */
        char *arena;    /* decode's: every string above is in it */
} nsr_session_exec;

void nsr_session_exec_done(nsr_session_exec *x);
/* To and from the payload: tagged NUL-terminated strings. Pure. */
int nsr_session_exec_encode(const nsr_session_exec *x, char **ret, size_t *ret_len, nsr_error *err);
int nsr_session_exec_decode(const char *buf, size_t len, nsr_session_exec *ret, nsr_error *err);
/* What the last request's base entries were, and what was left of them
 * (nsr_session_exec_filter_env): a client's environment is the same from
 * one step to the next, and is then not filtered again. */
typedef struct nsr_env_memo {
        char *in, *out;
        size_t in_len, out_len;
} nsr_env_memo;
void nsr_env_memo_done(nsr_env_memo *memo);

/* The request's caller environment (its base entries) through keep, in
 * place: an entry keep refuses is dropped, every other byte stays as it
 * was. The session's server runs each request through the deny list
 * this way, so that what the list names never reaches the sandbox, from
 * any client. With memo (NULL: none), base entries byte for byte the
 * same as the last request's get the last result without a call of keep,
 * which must then answer the same for the same entry. The new length, or
 * -EBADMSG for a payload decode would refuse for its shape. Pure. */
ssize_t nsr_session_exec_filter_env(char *buf, size_t len, bool (*keep)(void *data, const char *entry), void *data,
                                    nsr_env_memo *memo);
/* The command's environment: base (nothing with clear) with the
 * request's edits, and PWD (not with clear). Pure. */
char **nsr_session_exec_env(char *const *base, const nsr_session_exec *x, const char *cwd);
/* The same on base itself, which it takes (an owned vector, as the
 * run's edits give it): no copy of each variable on the way. */
char **nsr_session_exec_env_take(char **base, const nsr_session_exec *x, const char *cwd);

/* The agent, inside the sandbox (launch.c starts it). */
typedef struct nsr_session_agent {
        int sock;     /* to the monitor */
        int setup_fd; /* the launch's error pipe: closed once the agent runs */
        /* The fds the confinement owns (the refused-call socket, up to the
         * monitor): the agent keeps them through its close of every other
         * fd, and confine closes them once it used them; -1: none. */
        int confine_fds[NSR_SESSION_CONFINE_FDS];
        char **env; /* the command environment a one-shot run would give */
        /* The command's confinement, taken by the agent before its first
         * command: the commands inherit it. */
        int (*confine)(void *data, nsr_error *err);
        /* A step's environment from the caller's: the run's edits applied
         * to base, as a one-shot run applies them to its caller's. */
        char **(*step_env)(void *data, char *const *base);
        void *data;
        sigset_t mask; /* the commands' signal mask (set by the agent) */
} nsr_session_agent;

_noreturn_ void nsr_session_agent_run(nsr_session_agent *a);
