/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Project mode, end to end: resolve the projects and the state dir, expand
 * the profile into a plan, run it, capture what changed, apply it as a
 * transaction, and build the report. main.c prints what this returns. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "base/error.h"
#include "cli/plan.h"
#include "project/protect.h"
#include "sandbox/launch.h"
#include "txn/changeset.h"
#include "txn/state.h"

typedef struct nsr_project nsr_project;

/* nsrun's own failures in project mode exit with this, so callers can tell
 * them from the command's own statuses. */
#define NSR_EXIT_FAILURE        125
#define NSR_EXIT_NOT_EXECUTABLE 126
#define NSR_EXIT_NOT_FOUND      127

/* nsr_project_prepare's flags. */
typedef enum nsr_prepare_flags {
        /* Create the state dir (not for --trace-bwrap, which creates
         * nothing). */
        NSR_PREPARE_CREATE_STATE = 1 << 0,
        /* Leave the hidden paths to the run (nsr_project_run), which looks
         * them up while the sandbox child makes its namespaces: the plan
         * holds NSR_OP_SLOT ops until then, so only a caller that neither
         * traces nor shows the plan asks for this. */
        NSR_PREPARE_DEFER_HIDDEN = 1 << 1,
} nsr_prepare_flags;

/* Resolves the projects (each opened once, O_PATH) and the state dir, and
 * builds the expanded plan. Takes the contents of user. */
int nsr_project_prepare(nsr_plan *user, unsigned flags, nsr_project **ret, nsr_error *err);
nsr_project *nsr_project_free(nsr_project *pj);
DEFINE_CLEANUP_FUNC(nsr_project *, nsr_project_free)

/* The expanded plan, for validation and the trace. */
nsr_plan *nsr_project_plan(nsr_project *pj);

typedef struct nsr_project_outcome {
        int exit_code;             /* what nsrun exits with */
        char **messages;           /* lines for stderr (recovery notes, errors), in order */
        char **summary;            /* one line per project, unless --quiet */
        char *listing;             /* --verbose: every change */
        char *report_json;         /* the report, NULL if none could be built */
        nsr_error_kind error_kind; /* the kind of the failure the report names, or NSR_ERR_NONE */
} nsr_project_outcome;

void nsr_project_outcome_done(nsr_project_outcome *o);

/* Turns the upper layer of project `index` of a run into a change set,
 * with the protected changes split off and the reductions the apply will
 * make noted (protect.h). project_path is the project's absolute path. */
int nsr_project_capture(int run_fd, size_t index, int project_fd, const char *project_path, nsr_changeset **ret_changes,
                        nsr_protect_result **ret_protected, nsr_error *err);
/* After the capture of a run whose overlay is gone (not a running
 * session's: its upper may not change while mounted): new entries in a
 * setgid dir of the host take its group, as the user's own writes would
 * (foreign.h). Best effort. */
void nsr_project_inherit_groups(int run_fd, size_t index, int project_fd, nsr_changeset *cs);

/* Makes the upper layer of project `index` what the apply may take: new
 * git configs reduced, modes reduced, ACLs and non-user xattrs stripped
 * (nsr_protect_enforce). Call right before nsr_commit_apply(). */
int nsr_project_protect(int run_fd, size_t index, int project_fd, const char *project_path, nsr_changeset *cs,
                        const nsr_protect_result *prot, nsr_error *err);

/* Lines for stderr that matter before the command runs (the state dir
 * chosen, the sandbox that best-effort mode could build, a switch to
 * --no-overlay): main.c prints them through fn as they come. */
void nsr_project_set_notify(nsr_project *pj, void (*fn)(const char *line, void *userdata), void *userdata);

/* Sessions (session.h): the launch serves a session instead of running
 * the command. Set before nsr_project_run(). */
void nsr_project_set_session(nsr_project *pj, const nsr_launch_session *s);
/* The run's id, known once prepared (a session's id is its run's). */
const char *nsr_project_run_id(const nsr_project *pj);

/* Runs the prepared project. Returns a negative errno (err set) only when
 * nothing ran; otherwise fills *ret, whose exit_code says how it went.
 *
 * How the command is confined (--sandbox): the namespace sandbox, or in
 * best-effort mode, when the user namespace layers cannot be built here,
 * Landlock and seccomp (confine.h); with --sandbox=off nothing. How its
 * writes are caught: an overlay per project, or (--no-overlay, an overlay
 * impossible here, best-effort mode without namespaces, off) in place,
 * against a snapshot taken before the run (snapshot.h), recorded so that
 * undo works (nsr_commit_record_live). */
int nsr_project_run(nsr_project *pj, nsr_project_outcome *ret, nsr_error *err);
