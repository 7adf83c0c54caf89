/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the steps of a project run share: the projects and the run (struct
 * nsr_project), and what nsr_project_run carries from one step to the next
 * (run_ctx). project.c keeps the step sequence; prepare.c, launching.c and
 * explain.c are steps of it. Private to those four files. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "base/util.h"
#include "doctor/checks.h"
#include "project/profile.h"
#include "project/project.h"
#include "project/snapshot.h"
#include "seccomp/refused.h"
#include "txn/commit.h"

typedef struct project_entry {
        char *path; /* realpath */
        int fd;     /* O_PATH|O_DIRECTORY, opened once */
        dev_t dev;
        ino_t ino;
        char *upper, *work; /* host paths of its layers */
        nsr_changeset *changes;
        nsr_protect_result *protected_changes;
        nsr_commit_result commit;
        nsr_outcome outcome;
        char **errors;
        nsr_snapshot *snap;    /* live writes: the project before the run */
        bool protect_enforced; /* nsr_project_protect ran on changes */
        char **config;         /* what the run read as nsrun's configuration: protect patterns */
        char **config_bind;    /* ... the files and dirs of it that exist, read-only inside */
} project_entry;

/* What confines the command. */
typedef enum confinement {
        CONF_NAMESPACES, /* the namespace sandbox (overlay or, with live writes, binds) */
        CONF_LANDLOCK,   /* best-effort mode: Landlock and seccomp, no namespaces */
        CONF_NONE,       /* --sandbox=off */
} confinement;

struct nsr_project {
        nsr_plan *plan;
        char run_id[NSR_RUN_ID_MAX];
        char *state_dir;
        int state_fd; /* the state dir as prepare opened it, taken by the run; or -1 */
        char *run_dir;
        project_entry *p;
        size_t n;
        char **command;
        /* Live writes (--no-overlay, an overlay impossible here, best-effort
         * mode, --sandbox=off): the projects are written in place and
         * captured against snapshots. All projects of a run alike. */
        bool live;
        char **notes;  /* for stderr before the run (the state dir chosen, ...) */
        char **hidden; /* best-effort mode: what Landlock keeps from the command */
        /* NSR_PREPARE_DEFER_HIDDEN: what fills the plan's slots, until
         * the launch does (launching.c); else NULL. */
        nsr_profile_later *later;
        char **ro, **rw; /* --ro and --rw, expanded */
        char *skel;      /* --workspace-root: the mount-point layer (workspace.h) */
        void (*notify)(const char *line, void *userdata);
        void *notify_data;
        const nsr_launch_session *session; /* a session's daemon (session.h) */
};

_printf_(2, 3) static inline void note(nsr_project *pj, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = nsr_vasprintf(fmt, ap);
        va_end(ap);
        if (pj->notify)
                pj->notify(s, pj->notify_data);
}

static inline const char *env_get(const char *name) {
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

_printf_(2, 3) static inline void msg(nsr_project_outcome *o, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        nsr_strv_push(&o->messages, nsr_vasprintf(fmt, ap));
        va_end(ap);
}

typedef struct attempt {
        nsr_refused refused; /* what the policy refused (refused.h) */
        confinement conf;
        char reason[NSR_CHECK_TEXT_MAX + 64]; /* why not the namespace sandbox */
        bool landlock;                        /* a Landlock ruleset confines the command */
} attempt;

static inline void attempt_done(attempt *a) {
        nsr_refused_done(&a->refused);
}

/* What nsr_project_run carries from one step to the next. */
typedef struct run_ctx {
        nsr_project *pj;
        int statefd;          /* the state dir */
        int run_fd;           /* the run's dir, runs/ID */
        attempt a;            /* what confines the command */
        nsr_launch_result lr; /* how the command ended */
        /* The wall clock when the launch began and when it ended, and the
         * fence conflicts compare host ctimes with (launch). */
        struct timespec started, run_start, ended, mono_start;
        bool capture_failed;   /* a project's changes could not be captured */
        bool interrupted;      /* nsrun was interrupted (a forwarded signal) */
        bool timed_out;        /* --timeout stopped the command */
        bool apply_failed;     /* an apply failed and was rolled back (overlay runs) */
        bool state_full;       /* the state dir filled up while the command ran */
        bool kept_failed;      /* kept because the capture or the apply failed (record) */
        bool create_failed;    /* the run dir could not be made: nothing ran */
        bool trash_pending;    /* record left RUN/trash (or the mounts) for the background */
        nsr_error failure;     /* the report's "error": the first apply failure, or kind NONE */
        nsr_project_outcome o; /* for the caller */
} run_ctx;

/* prepare.c: the run's dir and its meta, or nothing (-errno, and
 * c->create_failed). */
int project_create_run(run_ctx *c, nsr_error *err);

/* launching.c: does the monitor make the run dir while the sandbox's root
 * is built (project_launch), rather than before the launch? */
bool project_run_dir_deferred(const run_ctx *c);

/* project.c: the run's meta file, written whole, or (append) its final
 * record after the first (txn/state.h, nsr_run_meta_append). */
int project_write_meta(nsr_project *pj, int run_fd, nsr_outcome state, const struct timespec *start, int wait_status,
                       bool ran, bool append, nsr_error *err);

/* launching.c: what confines the command, and the command run. */
int project_choose_confinement(run_ctx *c, nsr_error *err);
int project_launch(run_ctx *c, nsr_error *err);

/* explain.c: what the caller is told, and the JSON report. */
void project_launch_failed(run_ctx *c, const nsr_error *err);
void project_explain(run_ctx *c, nsr_outcome run_outcome);
void project_report(run_ctx *c, nsr_outcome run_outcome);
