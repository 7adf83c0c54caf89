/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the run subcommands (runs.c) share with diff.c, and nothing else. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "base/utf8.h"
#include "cli/plan.h"
#include "cli/subopts.h"
#include "txn/commit.h"
#include "txn/state.h"

/* Every line these subcommands print: names, link targets, paths and
 * messages may come from a sandboxed command, so the whole line goes
 * through the one escaping function (utf8.h), which is idempotent on the
 * names escaped already. A diff's body goes through textdiff.c instead. */
#define say nsr_utf8_fprintf_line

typedef struct args {
        const char *state_dir;
        const char *project;
        const char *run;
        bool json, force, help;
        long keep_days;        /* -1: default */
        long limit;            /* history --limit; 0: all */
        uint64_t backup_limit; /* 0: default */
        nsr_conflict_mode on_conflict;
} args;

/* The options of these subcommands: one table each, one handler. */
typedef enum run_opt {
        RUN_OPT_STATE_DIR,
        RUN_OPT_PROJECT,
        RUN_OPT_JSON,
        RUN_OPT_FORCE,
        RUN_OPT_KEEP_DAYS,
        RUN_OPT_LIMIT,
        RUN_OPT_BACKUP_LIMIT,
        RUN_OPT_ON_CONFLICT,
} run_opt;

#define OPT_STATE_DIR                                                                                                  \
        { "--state-dir", NULL, RUN_OPT_STATE_DIR, 1, "DIR", "The state dir (default: as project mode uses it)" }
#define OPT_PROJECT                                                                                                    \
        { "--project", "-p", RUN_OPT_PROJECT, 1, "DIR", "The runs of the project at DIR" }
#define OPT_END                                                                                                        \
        { NULL, NULL, 0, 0, NULL, NULL }

/* nsr_cmd_print_error. */
void runs_err_print(const nsr_error *e);
/* Project i of a run, opened as the very dir the run was made in (no
 * symlink on the way, same st_dev and st_ino); -1 after printing why not. */
int runs_open_project_dir(const nsr_run_meta *m, size_t i);
/* The options and RUN into *a; -EINVAL after printing what is wrong. */
int runs_parse_args(int argc, char **argv, const nsr_subcmd *c, args *a);
/* The state dir, opened (O_PATH; *ret_dir its path, may be NULL), after
 * the recovery of orphaned runs; -1 after printing why not. */
int runs_open_state(const args *a, char **ret_dir);
/* Run dir fd and *meta; -1 after printing why not. */
int runs_open_run(int statefd, const char *run, nsr_run_meta *meta);
/* realpath(3), or a copy of p when it fails. */
char *runs_realpath_or_self(const char *p);
