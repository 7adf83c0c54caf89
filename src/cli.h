/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* argv -> plan, following the options table and bwrap's grammar. */
#pragma once

#include <stdbool.h>

#include "error.h"
#include "plan.h"

typedef enum nsr_cli_action {
        NSR_CLI_RUN,          /* a plan with a command */
        NSR_CLI_HELP,         /* --help: usage on stdout, exit 0 */
        NSR_CLI_VERSION,      /* --version */
        NSR_CLI_NO_COMMAND,   /* usage on stderr, exit 1 (after validation, as bwrap) */
        _NSR_CLI_ACTION_MAX,
        _NSR_CLI_ACTION_INVALID = -EINVAL,
} nsr_cli_action;

typedef struct nsr_cli_result {
        nsr_cli_action action;
        /* --level-prefix was seen before the point where parsing stopped;
         * an error message must then carry "<3>". */
        bool level_prefix;
} nsr_cli_result;

/* Parses args[0..n) (the words after argv[0]). On success *ret_plan holds
 * the plan, even for HELP and VERSION (its warnings must still be printed).
 * On failure *ret_plan still holds the partial plan so that its warnings can
 * be printed before the error, exactly as bwrap interleaves them. */
int nsr_cli_parse(char *const *args, size_t n, bool bwrap_mode, nsr_plan **ret_plan, nsr_cli_result *ret,
                  nsr_error *err);

/* Warnings are stored as strings; the first character is '1' when
 * --level-prefix was active when the warning was raised, '0' otherwise. */
#define NSR_WARNING_TEXT(w) ((w) + 1)
#define NSR_WARNING_LEVEL_PREFIX(w) ((w)[0] == '1')
