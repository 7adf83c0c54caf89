/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command line with its profiles and configs: which files a run reads,
 * in which order, before the one parser applies them (nsrun-profile(5)).
 *
 *   1. SYSCONFDIR/nsrun/config         project mode; its forbid rules
 *                                      for every run under the nsrun name
 *   2. $XDG_CONFIG_HOME/nsrun/config   project mode
 *   3. each --profile, in order (one named by path inside a project is
 *      the project's: read like 5.)
 *   4. the command line, which wins over 1-3
 *   5. PROJECT/.nsrun/profile          project mode; tightening lines only,
 *                                      each compared with the value in force
 *                                      after 1-4 (cli.c)
 *
 * Every file read is recorded in the plan (proj.config_files), with the
 * config dirs, for protection when it lies in a project.
 */
#pragma once

#include "cli/cli.h"

/* Like nsr_cli_parse (nsrun mode), with the files above. A run that names
 * no --profile and no --project reads only the system config's forbid
 * rules (one open of a file that is usually missing).
 * env is the caller's environment (for $HOME and $XDG_*). *ret_files, when
 * not NULL, receives the lines that were applied (for "profile show"). */
int nsr_profileset_parse(char *const *args, size_t n, char *const *env, nsr_plan **ret_plan, nsr_cli_result *ret,
                         nsr_pf_list *ret_files, nsr_error *err);

/* The lookup context from the environment: $HOME, the sysconfdir and the
 * data dir. */
void nsr_profileset_ctx(char *const *env, nsr_pf_ctx *ret);
