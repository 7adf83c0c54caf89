/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recovery of a project's unfinished journals (nsr_commit_recover): an
 * apply or undo nsrun did not finish is finished or rolled back, as a
 * whole, before anything else touches the project. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "txn/commit-internal.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/txn.h"

/* Recovers one journal, RUNS/id/journal/name; *ret_final as for
 * nsr_txn_recover_journal. -ENOENT when the run or its journal is gone. */
static int recover_one(int runs, const char *id, const char *name, const char *project_path, int project_fd,
                       size_t *count, bool *ret_final, nsr_error *err) {
        *ret_final = false;
        _cleanup_close_ int rfd = openat(runs, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rfd < 0)
                return -errno;
        _cleanup_close_ int jdir = openat(rfd, "journal", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (jdir < 0)
                return -errno;
        if (faccessat(jdir, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        int r = nsr_txn_recover_journal(rfd, jdir, name, project_path, project_fd, count, ret_final, err);
        if (r < 0)
                nsr_error_prefix(err, "recovering run %s", id);
        return r;
}

/* "RUNID.pN" -> RUNID and "pN". */
static bool split_mark(const char *mark, char *id, size_t id_len, char *name, size_t name_len) {
        const char *dot = strrchr(mark, '.');
        if (!dot || (size_t) (dot - mark) >= id_len || strlen(dot + 1) >= name_len)
                return false;
        memcpy(id, mark, (size_t) (dot - mark));
        id[dot - mark] = '\0';
        snprintf(name, name_len, "%s", dot + 1);
        return nsr_run_id_is_valid(id) && is_journal_name(name);
}

int nsr_commit_recover(int statefd, const char *project_path, int project_fd, size_t *ret_recovered, nsr_error *err) {
        if (statefd < 0 || project_fd < 0 || !project_path || !ret_recovered)
                return nsr_error_setx(err, EINVAL, "nsr_commit_recover: invalid arguments");
        size_t count = 0;
        _cleanup_close_ int runs = openat(statefd, "runs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (runs < 0) {
                if (errno != ENOENT)
                        return nsr_error_set(err, errno, "cannot open the runs dir");
                *ret_recovered = 0;
                return 0;
        }
        int first = 0;
        bool final;
        _cleanup_close_ int pending = openat(statefd, "pending", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pending >= 0) {
                /* The index (see txn.c): only marked journals can be
                 * unfinished. Newest first, as the marks sort by run id. */
                _cleanup_strv_free_ char **marks = NULL;
                int r = commit_list_dir(pending, NULL, &marks);
                if (r < 0)
                        return nsr_error_set(err, -r, "cannot list the pending journals");
                for (char **m = marks; m && *m; m++) {
                        char id[NSR_RUN_ID_MAX], name[16];
                        if (!split_mark(*m, id, sizeof(id), name, sizeof(name)))
                                continue;
                        nsr_error e = { 0 };
                        r = recover_one(runs, id, name, project_path, project_fd, &count, &final, &e);
                        if (r == -ENOENT || (r >= 0 && final))
                                (void) unlinkat(pending, *m, 0);
                        else if (r < 0 && r != -ENOENT && first == 0) {
                                *err = e;
                                first = r;
                        }
                }
                *ret_recovered = count;
                return first;
        }
        if (errno != ENOENT)
                return nsr_error_set(err, errno, "cannot open the pending journals dir");

        /* A state dir from before the index: every run's journals, once.
         * What is not final afterwards (another project's, or a failed
         * recovery) gets its mark, and from then on the index is used. */
        if (mkdirat(statefd, "pending", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the pending journals dir");
        pending = openat(statefd, "pending", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pending < 0)
                return nsr_error_set(err, errno, "cannot open the pending journals dir");
        _cleanup_strv_free_ char **ids = NULL;
        int r = commit_list_dir(runs, is_run_name, &ids);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot list the runs");
        for (char **id = ids; id && *id; id++) {
                _cleanup_close_ int rfd = openat(runs, *id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (rfd < 0)
                        continue;
                _cleanup_close_ int jdir = openat(rfd, "journal", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (jdir < 0)
                        continue;
                _cleanup_strv_free_ char **names = NULL;
                r = commit_list_dir(jdir, is_journal_name, &names);
                if (r < 0) {
                        if (first == 0)
                                first = nsr_error_set(err, -r, "cannot list the journals of run %s", *id);
                        continue;
                }
                for (char **n = names; n && *n; n++) {
                        nsr_error e = { 0 };
                        r = nsr_txn_recover_journal(rfd, jdir, *n, project_path, project_fd, &count, &final, &e);
                        if (r < 0 && first == 0) {
                                *err = e;
                                first = nsr_error_prefix(err, "recovering run %s", *id);
                        }
                        if (r < 0 || !final) {
                                char mark[NSR_RUN_ID_MAX + 32];
                                uint32_t k = 0;
                                (void) nsr_parse_u32(*n + 1, &k);
                                nsr_txn_pending_name(*id, k, mark, sizeof(mark));
                                int fd = openat(pending, mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                                if (fd < 0 && first == 0)
                                        first = nsr_error_set(err, errno, "cannot mark the journal of run %s", *id);
                                safe_close(fd);
                        }
                }
        }
        _cleanup_close_ int pdir = openat(pending, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pdir >= 0)
                (void) fsync(pdir);
        *ret_recovered = count;
        return first;
}
