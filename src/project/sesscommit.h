/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Committing a session while it runs: each commit is a run of its own that
 * applies what the session's upper layer holds beyond the live projects
 * (sesscommit.c and docs/sessions.md say why and how). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"
#include "cli/plan.h"
#include "seccomp/refused.h"
#include "txn/changeset.h"
#include "txn/state.h"

typedef struct nsr_session_commit_result {
        char run_id[NSR_RUN_ID_MAX]; /* the run the commit made (for undo) */
        char **lines;                /* summaries and conflicts, for stderr */
        bool conflict;
        bool failed;   /* a project's apply failed (rolled back) */
        bool withheld; /* keep-all, fail: a conflict held a project's changes back */
} nsr_session_commit_result;

void nsr_session_commit_done(nsr_session_commit_result *r);

/* Applies what session_id's upper layers hold beyond the projects. Returns
 * a negative errno only when nothing could start; a project that failed
 * is in *ret (failed, and a line). Safe while the session runs. */
int nsr_session_commit(const char *state_dir, const char *session_id, nsr_session_commit_result *ret, nsr_error *err);
/* The same with --on-conflict's mode (nsr_session_commit: apply-rest):
 * prefer-host settles conflicts, earlier ones too, for the host and shows
 * the session the host's file; prefer-sandbox applies the sandbox's
 * version over the host's; keep-all and fail apply nothing on a conflict
 * (withheld) and leave the baseline where it was. */
int nsr_session_commit_as(const char *state_dir, const char *session_id, nsr_conflict_mode mode,
                          nsr_session_commit_result *ret, nsr_error *err);

/* The session's conflict baseline: when its last commit started. */
int nsr_session_base_read(int run_fd, struct timespec *ret);

/* exec --report: the session's change sets before and after a command. */
typedef struct nsr_session_changes {
        nsr_changeset **sets; /* one per project */
        char **projects;
        size_t n;
} nsr_session_changes;

void nsr_session_changes_free(nsr_session_changes *c);
int nsr_session_changes_take(const char *state_dir, const char *session_id, nsr_session_changes *ret, nsr_error *err);
/* The JSON report of what differs from before to after: changes, and
 * "reverted" for what an earlier command changed and this one undid. */
/* exec --events-fd: the one-shot watcher (events.h) on the session's
 * upper dirs while one step runs. */
typedef struct nsr_session_events {
        pid_t pid;
        int stop_fd;
        int run_fd; /* the session run's dir, which the watcher's paths go through */
} nsr_session_events;
int nsr_session_events_start(const char *state_dir, const char *session_id, int out_fd, nsr_session_events *ret,
                             nsr_error *err);
/* Drains and ends the watcher; returns how many lines its reader did not
 * take. */
uint64_t nsr_session_events_stop(nsr_session_events *ev);

/* What a step's report has besides its changes, as a one-shot report has
 * it: "timed_out", and "refused" (the calls, the timeout). */
typedef struct nsr_session_step {
        const nsr_refused *refused; /* NULL: no "refused" member */
        bool timed_out;             /* --timeout stopped the step */
        bool killed;                /* ... with SIGKILL after --kill-after */
        uint64_t timeout_ms;
        uint64_t events_dropped;    /* --events-fd lines its reader did not take */
        struct timespec started_at; /* CLOCK_REALTIME; 0: not written */
        uint64_t duration_ms;
} nsr_session_step;
int nsr_session_report(const nsr_session_changes *before, const nsr_session_changes *after, const char *session_id,
                       char *const *argv, int wait_status, const nsr_session_step *step, char **ret, nsr_error *err);

/* A step's refused record on the wire (the monitor's EXIT to the exec
 * client, flag NSR_SMSG_REFUSED): "recorded dropped" then one line per
 * entry, "errno TAB count TAB name TAB comm". At most max bytes: entries
 * that do not fit are counted in dropped. rf NULL: nothing refused;
 * recorded says whether the run records refused calls at all (rf's
 * own active is not read). Decode is strict. */
char *nsr_session_refused_encode(const nsr_refused *rf, bool recorded, size_t max, size_t *ret_len);
int nsr_session_refused_decode(const char *buf, size_t len, nsr_refused *ret);
