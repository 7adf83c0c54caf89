/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay mount option strings. Pure: no system calls. */
#pragma once

#include <stddef.h>

/* Appends path to buf with ',' ':' and '\' escaped by a backslash, as the
 * overlay option parser expects. Returns a new string. */
char *nsr_overlay_escape(const char *path);

/* Builds "upperdir=U,workdir=W,lowerdir=L1:L2:...,userxattr" (upper and
 * work may be NULL). lowers are listed top first, as the kernel wants them.
 * Each path is prefixed with prefix (may be "") and escaped; the prefix
 * itself is not escaped. */
char *nsr_overlay_options(const char *prefix, const char *upper, const char *work, char *const *lowers_top_first,
                          size_t n_lowers);
