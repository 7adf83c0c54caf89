/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What cli.c (the order of parsing: files, the command line, tightening)
 * and handlers.c (what each option does to the plan) share: the parser's
 * state. Private to those two files. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "cli/options.h"
#include "cli/plan.h"
#include "cli/profilefile.h"
#include "cli/runctl.h"

typedef struct parser {
        nsr_plan *plan;
        bool bwrap_mode;
        size_t total_args;    /* for the 9000-argument limit */
        mode_t pending_perms; /* NSR_PERMS_UNSET when none */
        bool pending_size;
        uint64_t size;
        char **pending_overlay; /* --overlay-src values not yet consumed */
        bool seen_seccomp, seen_add_seccomp;
        bool seen_argv0;
        bool command_found;
        char **command; /* points into the caller's argv */
        size_t n_command;
        const nsr_pf_list *files; /* profile and config lines, and forbid rules */
        nsr_host_bounds hb;       /* read at the first run-control option */
        bool hb_known;
        bool policy_error;              /* the error is a file's or a forbid rule's */
        const nsr_option *project_only; /* the first NSR_OPTF_PROJECT option */
} parser;

/* cli.c: parses args[0..n) into ps (handlers.c calls it for --args). */
int cli_parse_list(parser *ps, char *const *args, size_t n, bool in_args_file, nsr_error *err);

/* handlers.c: handles one option whose arguments are vals[0..nargs). */
int cli_handle(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
               nsr_error *err);
