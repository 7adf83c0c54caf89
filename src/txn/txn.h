/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The transaction engine behind commit.c (only commit.c uses it): runs a journaled plan
 * of steps against a project, rolls it back, recovers one journal. The
 * protocol is described at the top of txn.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "txn/commit.h"
#include "txn/journal.h"

typedef struct nsr_txn {
        nsr_journal *j;
        int project_fd;
        int run_fd;
        int src_fd;    /* the source root (or the park dir in a recovery); -1: none */
        int backup_fd; /* RUN/backup/pN */
        int journal_fd;
        dev_t project_dev;
        bool other_fs; /* a step's dir is on another file system than the project root */
        nsr_commit_stats *stats;
        /* The state dir and the run's id: a transaction that may leave
         * an unfinished journal marks it in STATE/pending (see txn.c).
         * NULL run_id: no mark (tests that build run dirs of their own). */
        int state_fd;
        const char *run_id;
} nsr_txn;

/* Writes the journal (RUN/journal/pN) and makes it durable, prepares the
 * copies, runs every step, writes the fingerprints, syncs and marks the
 * journal done. On failure everything is rolled back (and the error says
 * if the rollback failed too, leaving the journal to the next recovery). */
int nsr_txn_run(nsr_txn *t, nsr_error *err);

/* Records steps that already happened (the command wrote live; the
 * originals are in RUN/backup/pN already): writes the journal, done, and
 * the fingerprints, so that an undo can restore the backups. The journal
 * appears under its real name only once complete. */
int nsr_txn_record(nsr_txn *t, nsr_error *err);
/* RUN/backup/pN, created, and empty (a rolled-back attempt may have left
 * empty dirs): an O_PATH fd. */
int nsr_txn_open_backup_root(int run_fd, unsigned index, nsr_error *err);
/* Makes RUN/journal/pN free for a new transaction: a rolled-back (or torn)
 * journal is set aside as pN.TOKEN; a done one gives -EEXIST, an unfinished
 * one -EBUSY. */
int nsr_txn_check_journal_slot(int run_fd, unsigned index, nsr_error *err);
/* The name of a journal's mark in STATE/pending: "RUNID.pN". */
void nsr_txn_pending_name(const char *run_id, unsigned index, char *buf, size_t len);
/* Recovers the journal jdir/name of the run dir run_fd if it belongs to
 * project_path: rolls it back if unfinished (counting it in *count), or
 * removes a done copy transaction's temporary entries. *ret_final tells
 * whether the journal now needs nothing more from any recovery. */
int nsr_txn_recover_journal(int run_fd, int jdir, const char *name, const char *project_path, int project_fd,
                            size_t *count, bool *ret_final, nsr_error *err);
/* Records "WHAT 'PATH'" (the path escaped) with errno r; returns -r. */
int nsr_txn_path_error(nsr_error *err, int r, const char *what, const char *path);
