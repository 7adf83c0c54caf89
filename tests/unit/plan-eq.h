/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Plan comparison for the unit tests: parse -> trace -> parse round trips,
 * and "--args FD" versus the same words on the command line. */
#pragma once

#include <stdbool.h>

#include "cli/plan.h"

typedef enum test_plan_eq_flags {
        /* Ignore what a bwrap argv cannot carry: --seccomp-policy,
         * --trace-bwrap and --trace-bwrap-fd. The trace shows those as notes. */
        TEST_PLAN_EQ_IGNORE_NSRUN_ONLY = 1 << 0,
} test_plan_eq_flags;

/* NULL when a and b hold the same plan, else a description of the first
 * difference (free it). Warnings are not compared: a reparsed trace never
 * repeats an option, so it has none. The fd number of an --add-seccomp-fd
 * program is not compared either: that fd is read and closed while parsing,
 * so a reparse needs a new one; its data is compared instead. */
char *test_plan_diff(const nsr_plan *a, const nsr_plan *b, unsigned flags);
