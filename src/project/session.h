/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sessions: one sandbox, many commands (docs/sessions.md): the host side.
 *
 *   nsrun session start (daemon: the monitor, host namespaces)
 *     ├─ STATE/sessions/ID/ctl   the control socket (SOCK_SEQPACKET, 0700 dir,
 *     │                          SO_PEERCRED: the same uid only)
 *     └─ pid 1 (reaper) ── agent ── command, command, ...
 *
 * The agent and the messages are sandbox/agent.h. */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "base/util.h"
#include "project/project.h"
#include "sandbox/agent.h"

/* The daemon: serves the session of a prepared project until it stops,
 * then finishes the run as the stop asked (kept by default). ready_fd gets
 * "ok\n" once commands can run, or the reason it could not start. */
typedef struct nsr_session_opts {
        const char *state_dir;
        unsigned idle_timeout; /* seconds; 0: none */
        int ready_fd;
} nsr_session_opts;

int nsr_session_serve(nsr_project *pj, const nsr_session_opts *o, nsr_error *err);

/* The control socket's dir, STATE/sessions/ID. */
char *nsr_session_dir(const char *state_dir, const char *id);

/* Connects to session id's control socket and checks that the peer is our
 * uid. -ENOENT: no such session; -ECONNREFUSED: its daemon is gone. */
int nsr_session_connect(const char *state_dir, const char *id, nsr_error *err);

/* Sessions whose daemon died (kill -9): their run becomes a kept run and
 * the session dir goes. The ids recovered are appended to *ret_ids. */
int nsr_session_recover(const char *state_dir, char ***ret_ids, nsr_error *err);

/* The ids of the live sessions, sorted. */
int nsr_session_list(const char *state_dir, char ***ret_ids, nsr_error *err);

/* "30m", "90s", "2h", "1d", or plain seconds. */
int nsr_session_parse_duration(const char *s, unsigned *ret);
