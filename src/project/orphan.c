/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Runs whose nsrun died (kill -9, a crash, a lost machine) become kept runs
 * with their change counts, the moment any command looks at the state dir:
 * history, session list and their --json tell the truth at once instead of
 * showing "running" until a later command happens to clean up. */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "project/orphan.h"
#include "project/project.h"
#include "project/session.h"
#include "txn/changeset.h"
#include "txn/state.h"

/* Each project's counts, from its upper layer against the project as it is
 * now. A project that is gone or was replaced by another dir keeps zeros:
 * the layer is still there for diff, commit refuses the swapped dir. */
static void count_changes(int run_fd, nsr_run_meta *m) {
        size_t n = nsr_strv_length(m->projects);
        if (!m->counts)
                m->counts = nsr_malloc0((n + 1) * sizeof(*m->counts));
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int pfd = open(m->projects[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
                struct stat st;
                if (pfd < 0 || fstat(pfd, &st) < 0)
                        continue;
                if (m->ids && m->ids[i][1] &&
                    ((unsigned long long) st.st_dev != m->ids[i][0] || (unsigned long long) st.st_ino != m->ids[i][1]))
                        continue;
                nsr_error e = { 0 };
                _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
                _cleanup_(nsr_protect_result_freep) nsr_protect_result *prot = NULL;
                if (nsr_project_capture(run_fd, i, pfd, m->projects[i], &cs, &prot, &e) < 0)
                        continue;
                for (int k = 0; k < 5; k++)
                        m->counts[i][k] = nsr_changeset_count(cs, (nsr_change_kind) k);
        }
}

int nsr_orphan_keep_now(int run_fd, nsr_run_meta *m, nsr_error *err) {
        count_changes(run_fd, m);
        m->state = NSR_OUTCOME_KEPT;
        return nsr_run_meta_write(run_fd, m, err);
}

int nsr_orphan_keep(int run_fd, nsr_run_meta *m, nsr_error *err) {
        if (!nsr_run_meta_is_orphan(m))
                return 0;
        /* An apply the death interrupted is the journal recovery's: it
         * completes or rolls back as a whole on the next run. */
        if (!nsr_run_journals_settled(run_fd))
                return 0;
        /* Live writes (best effort, --no-overlay) have no layer to keep. */
        if (faccessat(run_fd, "p0/upper", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        int r = nsr_orphan_keep_now(run_fd, m, err);
        return r < 0 ? r : 1;
}

int nsr_orphans_recover(const char *state_dir, char ***ret_session_ids, nsr_error *err) {
        int r = nsr_session_recover(state_dir, ret_session_ids, err);
        if (r < 0)
                return r;
        _cleanup_close_ int statefd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (statefd < 0)
                return 0;
        _cleanup_strv_free_ char **runs = NULL;
        if (nsr_state_list_runs(statefd, &runs, err) < 0)
                return -err->code;
        for (size_t i = 0; runs[i]; i++) {
                nsr_error e = { 0 };
                _cleanup_close_ int run_fd = nsr_run_open(statefd, runs[i], &e);
                nsr_run_meta m = { 0 };
                if (run_fd >= 0 && nsr_run_meta_read(run_fd, &m, &e) >= 0)
                        (void) nsr_orphan_keep(run_fd, &m, &e);
                nsr_run_meta_done(&m);
        }
        return 0;
}
