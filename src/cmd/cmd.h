/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Subcommands ("nsrun seccomp ...", "nsrun undo ...").
 *
 * These are front ends: like main.c they may print and choose exit codes,
 * and they are linked into the nsrun binary only, never into libnsrun.a.
 * Each gets argv starting at the subcommand's own name and returns the
 * process exit status. */
#pragma once

/* Every usage error of nsrun's own command lines (project mode and every
 * subcommand: an unknown option or subcommand, a missing, extra or bad
 * argument) exits with this one status, nsrun's own failure status, which
 * no status of a command that nsrun passes through can be confused with.
 * A bwrap command line keeps bwrap's 1 (man nsrun, EXIT STATUS). */
#define NSR_EXIT_USAGE 125

#include <stdbool.h>

#include "base/error.h"

/* errors.c: the subcommands print every error through
 * nsr_cmd_print_error() (or note a message they printed themselves), and
 * with --json a failing subcommand's stdout ends with {"error": {kind,
 * message, hint}}: main.c calls begin before and end after it. */
void nsr_cmd_errors_begin(bool json);
void nsr_cmd_print_error(const nsr_error *e);
void nsr_cmd_note_text(nsr_error_kind kind, const char *text);
int nsr_cmd_errors_end(int rc);

int nsr_cmd_seccomp(int argc, char **argv);
int nsr_cmd_diff(int argc, char **argv);
int nsr_cmd_commit(int argc, char **argv);
int nsr_cmd_discard(int argc, char **argv);
int nsr_cmd_undo(int argc, char **argv);
int nsr_cmd_history(int argc, char **argv);
int nsr_cmd_gc(int argc, char **argv);
int nsr_cmd_doctor(int argc, char **argv);
int nsr_cmd_profile(int argc, char **argv);
int nsr_cmd_session(int argc, char **argv);
int nsr_cmd_exec(int argc, char **argv);
