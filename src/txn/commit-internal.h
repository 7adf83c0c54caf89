/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What commit.c (apply), restored.c, recover.c, undo.c and live.c share:
 * the set of entries rolled-back transactions put back, the listing of
 * run and journal names, small helpers. Private to those files. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "base/utf8.h"
#include "base/util.h"
#include "txn/changeset.h"
#include "txn/journal.h"
#include "txn/state.h"

static inline char *esc(const char *path) {
        return nsr_utf8_escape(path);
}

/* Moving an original away and back changes its ctime. A rollback records
 * the ctime it left ("r" lines); an entry with exactly that (dev, inode,
 * ctime) has not been changed by the host since. */
typedef struct restored {
        char *path;
        uint64_t dev, ino;
        struct timespec ctime;
} restored;

typedef struct restore_set {
        restored *v;
        size_t n;
} restore_set;

static inline size_t subtree_end(const nsr_changeset *cs, size_t i) {
        size_t j = i + 1;
        while (j < cs->n_changes && nsr_path_is_below(cs->changes[j].path, cs->changes[i].path))
                j++;
        return j;
}

static inline bool ts_eq(struct timespec a, struct timespec b) {
        return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* "p0", "p1", ...: not the "pN.TOKEN" of a journal set aside. */
static inline bool is_journal_name(const char *name) {
        uint32_t n;
        if (name[0] != 'p' || nsr_parse_u32(name + 1, &n) < 0)
                return false;
        char canon[16];
        snprintf(canon, sizeof(canon), "p%u", (unsigned) n);
        return streq(canon, name);
}

static inline bool is_run_name(const char *name) {
        return nsr_run_id_is_valid(name);
}

/* restored.c */
void restore_set_done(restore_set *s);
void restore_set_add(restore_set *s, const nsr_journal *j);
void restore_set_sort(restore_set *s);
bool restore_set_match(const restore_set *s, const char *path, const struct stat *st);
/* Names of the entries of a dir that pass pred (all when NULL), sorted
 * newest (largest) first. */
int commit_list_dir(int dirfd, bool (*pred)(const char *name), char ***ret);
