/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Committing a session while it runs: each commit is a run of its own that
 * applies what the session's upper layer holds beyond the live projects
 * (sesscommit.c and docs/sessions.md say why and how). */
#pragma once

#include <stdbool.h>
#include <time.h>

#include "base/error.h"
#include "cli/plan.h"
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
int nsr_session_report(const nsr_session_changes *before, const nsr_session_changes *after, const char *session_id,
                       char *const *argv, int wait_status, char **ret, nsr_error *err);
