/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Capability names and sets (pure) and applying them in the child. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Highest capability number the running kernel knows. */
int nsr_caps_last(void);
/* Mask of every capability the running kernel knows. */
uint64_t nsr_caps_all(void);
/* The effective set of the calling process. */
int nsr_caps_current(uint64_t *ret);
/* The permitted set of the calling process. */
int nsr_caps_permitted(uint64_t *ret);
/* Makes the effective set exactly caps (must be within permitted). */
int nsr_caps_raise_effective(uint64_t caps);
/* Cuts the bounding set down to `keep`; fails if any capability outside it
 * could not be dropped. */
int nsr_caps_bound(uint64_t keep, nsr_error *err);
/* Drops just the capabilities in DROP from the bounding set (one prctl
 * each: a set that was cut before a fork need not be cut again). */
int nsr_caps_bound_drop(uint64_t drop, nsr_error *err);
/* Leaves exactly `keep` in the permitted, effective, inheritable and
 * ambient sets, so the caps survive execve whatever the uid is. With
 * no_new_privs set, execve can never add to them. */
int nsr_caps_set(uint64_t keep, nsr_error *err);
