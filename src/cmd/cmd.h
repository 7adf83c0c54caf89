/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Subcommands ("nsrun seccomp ...", "nsrun undo ...").
 *
 * These are front ends: like main.c they may print and choose exit codes,
 * and they are linked into the nsrun binary only, never into libnsrun.a.
 * Each gets argv starting at the subcommand's own name and returns the
 * process exit status. */
#pragma once

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
