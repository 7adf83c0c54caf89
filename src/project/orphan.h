/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Runs and sessions whose nsrun died, turned into kept runs. */
#pragma once

#include "base/error.h"
#include "txn/state.h"

/* A run marked running whose owner is gone (nsr_run_meta_is_orphan), with
 * its journals settled and an overlay layer: *m becomes a kept run with its
 * change counts, written to the run dir. 1 when it did, 0 when the run is
 * not such a run. */
int nsr_orphan_keep(int run_fd, nsr_run_meta *m, nsr_error *err);

/* The same without the checks: counts, "kept", written (a session whose
 * daemon died, once its base time is set). */
int nsr_orphan_keep_now(int run_fd, nsr_run_meta *m, nsr_error *err);

/* Every such run of the state dir, sessions first (their ids are appended
 * to *ret_session_ids when it is not NULL, for the message). */
int nsr_orphans_recover(const char *state_dir, char ***ret_session_ids, nsr_error *err);
