/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* argv -> plan, following the options table and bwrap's grammar. */
#pragma once

#include <stdbool.h>

#include "base/error.h"
#include "cli/plan.h"
#include "cli/profilefile.h"

typedef enum nsr_cli_action {
        NSR_CLI_RUN,        /* a plan with a command */
        NSR_CLI_HELP,       /* --help: usage on stdout, exit 0 */
        NSR_CLI_VERSION,    /* --version */
        NSR_CLI_NO_COMMAND, /* usage on stderr, exit 1 (after validation, as bwrap) */
        _NSR_CLI_ACTION_MAX,
        _NSR_CLI_ACTION_INVALID = -EINVAL,
} nsr_cli_action;

typedef struct nsr_cli_result {
        nsr_cli_action action;
        /* --level-prefix was seen before the point where parsing stopped;
         * an error message must then carry "<3>". */
        bool level_prefix;
        /* The error came from a profile or config line, or a forbid rule:
         * nsrun's own failure (exit 125), not bwrap's usage error. */
        bool policy_error;
        /* The first option given (in a file or on the command line) that
         * only works with --project (NSR_OPTF_PROJECT), or NULL. */
        const struct nsr_option *project_only;
} nsr_cli_result;

/* Parses args[0..n) (the words after argv[0]). On success *ret_plan holds
 * the plan, even for HELP and VERSION (its warnings must still be printed).
 * On failure *ret_plan still holds the partial plan so that its warnings can
 * be printed before the error, exactly as bwrap interleaves them. */
int nsr_cli_parse(char *const *args, size_t n, bool bwrap_mode, nsr_plan **ret_plan, nsr_cli_result *ret,
                  nsr_error *err);
/* The same, with the lines of profile and config files applied first, in
 * order (errors name file:line), and their forbid rules checked against
 * every option, the command line's included. files may be NULL. */
int nsr_cli_parse_with(const nsr_pf_list *files, char *const *args, size_t n, bool bwrap_mode, nsr_plan **ret_plan,
                       nsr_cli_result *ret, nsr_error *err);
/* The --profile and --project values among the leading options of args
 * (before the command), found through the options table without applying
 * anything: profiles and configs must be read before the command line. */
int nsr_cli_prescan(char *const *args, size_t n, char ***ret_profiles, char ***ret_projects);

/* Warnings are stored as strings; the first character is '1' when
 * --level-prefix was active when the warning was raised, '0' otherwise. */
#define NSR_WARNING_TEXT(w)         ((w) + 1)
#define NSR_WARNING_LEVEL_PREFIX(w) ((w)[0] == '1')
