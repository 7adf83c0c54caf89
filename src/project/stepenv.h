/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The environment an "nsrun exec" client sends with its step: the
 * caller's, through the one-shot deny list (profile.h,
 * nsr_profile_env_filter), and nothing else. The same answer, faster: the
 * client runs once per step, and fnmatch(3) over every pattern for every
 * variable was 50 us in a warm loop (26 here); in a fresh client reading
 * the list costs as much again, so the whole filter went from 78 to about
 * 70 us (bench/README.md, "nsrun exec, second pass"). */
#pragma once

#include <stdbool.h>

#include "base/error.h"

/* fnmatch(pattern, name, FNM_CASEFOLD) == 0 in the C locale, for any
 * pattern (those with a bracket or a backslash go to fnmatch itself). */
bool nsr_stepenv_match(const char *pattern, const char *name);

/* nsr_profile_env_filter(env, datadir, err), with nsr_stepenv_match for
 * its fnmatch: the same list file, the same exceptions, the same test of
 * values for credentials, the same failure when the list cannot be read. */
char **nsr_stepenv_filter(char *const *env, const char *datadir, nsr_error *err);
