/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* plan -> the equivalent bwrap command line. Pure. */
#pragma once

#include <stddef.h>

#include "cli/plan.h"

/* The canonical bwrap argv (without "bwrap" itself), ending with "--" and
 * the command. */
char **nsr_trace_argv(const nsr_plan *p);
/* Notes that go on comment lines after the command: what each fd holds, and
 * what nsrun does that bwrap cannot express. */
char **nsr_trace_notes(const nsr_plan *p);
/* "bwrap ARG..." shell-quoted on one line, then "# note" lines. */
char *nsr_trace_shell(const nsr_plan *p);
/* "bwrap\0ARG\0...\0": NUL-separated, no notes. */
char *nsr_trace_nul(const nsr_plan *p, size_t *ret_len);
/* Quotes one word for a POSIX shell, only when needed, and escapes what a
 * terminal would obey: nsr_utf8_escape_flags(s, NSR_ESCAPE_SHELL). */
char *nsr_shell_quote(const char *s);
