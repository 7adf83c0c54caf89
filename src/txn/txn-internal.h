/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What txn.c shares with txnwrite.c, and nothing else. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "txn/journal.h"
#include "txn/txn.h"

/* The temporary name of step k's entry: ".nsrun.TOKEN.K.WHAT". */
static inline void txn_tmpname(char *buf, size_t len, const nsr_journal *j, size_t k, const char *what) {
        snprintf(buf, len, ".nsrun.%s.%zu.%s", j->token, k + 1, what);
}

/* Notes the file system of dirfd for the syncfs at the end. */
void txn_note_dev(nsr_txn *t, int dirfd);

/* Write steps (txnwrite.c): the backup copy, the new content, rollback. */
int txn_write_prepare(nsr_txn *t, size_t k, nsr_error *err);
int txn_write_forward(nsr_txn *t, const nsr_step *s, nsr_error *err);
int txn_write_back(nsr_txn *t, const nsr_step *s, nsr_error *err);
