/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* NSRUN_TIMING=1: where one run spends its time, phase by phase, printed
 * on stderr when nsrun exits (bench/README.md keeps the table).
 *
 * The marks live in one shared anonymous page, so that the sandbox child
 * and the command's own process (cloned, forked, never exec'd before the
 * last mark) write into the same table as the monitor; the clock is
 * CLOCK_MONOTONIC, which every namespace shares. With the switch off
 * nothing is mapped and each mark is one NULL test. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "base/util.h"

#define NSR_TIMING_MAX 64

typedef struct nsr_timing_mark {
        char phase[40];
        uint64_t ns;     /* CLOCK_MONOTONIC */
        int32_t pid;     /* the process that marked it, as the host sees it: 0 in a namespace */
        uint64_t minflt; /* that process's minor page faults so far (getrusage) */
} nsr_timing_mark;

typedef struct nsr_timing {
        uint32_t n; /* marks taken; slots are claimed atomically */
        nsr_timing_mark marks[NSR_TIMING_MAX];
} nsr_timing;

/* A table when NSRUN_TIMING is set to something other than "" or "0",
 * else NULL; its first mark is "start". */
nsr_timing *nsr_timing_from_env(void);
nsr_timing *nsr_timing_free(nsr_timing *t);
DEFINE_CLEANUP_FUNC(nsr_timing *, nsr_timing_free)

/* Records that a phase ended now. t NULL: nothing. Async-signal-safe, and
 * safe from a cloned child (no allocation, no lock). */
void nsr_timing_mark_now(nsr_timing *t, const char *phase);

/* This process is about to load a seccomp filter, which may refuse the
 * getrusage(2) a mark makes: its later marks go without a fault count. */
void nsr_timing_no_rusage(void);

/* The table as text: each phase with the time since the one before it and
 * since the start, in ms, in time order. */
char *nsr_timing_format(const nsr_timing *t);
