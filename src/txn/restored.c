/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What rolled-back transactions put back: the set of entries whose ctime a
 * rollback changed (the journals' "r" records), which the conflict checks
 * of an apply and an undo excuse; and the listing of run and journal names
 * they are read from. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/dirent.h"
#include "txn/commit-internal.h"
#include "txn/journal.h"

void restore_set_done(restore_set *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].path);
        free(s->v);
        *s = (restore_set){ 0 };
}

void restore_set_add(restore_set *s, const nsr_journal *j) {
        for (size_t k = 0; k < j->n_steps; k++) {
                const nsr_step *st = &j->steps[k];
                if (!st->restored)
                        continue;
                s->v = nsr_realloc_array(s->v, s->n + 1, sizeof(restored));
                s->v[s->n++] = (restored){ .path = nsr_strdup(st->path),
                                           .dev = st->orig.dev,
                                           .ino = st->orig.ino,
                                           .ctime = st->restored_ctime };
        }
}

static int restored_cmp(const void *a, const void *b) {
        return strcmp(((const restored *) a)->path, ((const restored *) b)->path);
}

void restore_set_sort(restore_set *s) {
        if (s->n > 1)
                qsort(s->v, s->n, sizeof(restored), restored_cmp);
}

bool restore_set_match(const restore_set *s, const char *path, const struct stat *st) {
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(s->v[mid].path, path) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo; i < s->n && streq(s->v[i].path, path); i++) {
                const restored *x = &s->v[i];
                if (x->dev == (uint64_t) st->st_dev && x->ino == (uint64_t) st->st_ino && ts_eq(x->ctime, st->st_ctim))
                        return true;
        }
        return false;
}

static int str_cmp_desc(const void *a, const void *b) {
        return -strcmp(*(char *const *) a, *(char *const *) b);
}

int commit_list_dir(int dirfd, bool (*pred)(const char *name), char ***ret) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(dirfd, ".", 0, &d);
        if (r < 0)
                return r;
        char **v = NULL;
        FOREACH_DIRENT(de, d, r = -errno)
        if (!pred || pred(de->d_name))
                (void) nsr_strv_extend(&v, de->d_name);
        if (r < 0) {
                nsr_strv_free(v);
                return r;
        }
        if (v)
                qsort(v, nsr_strv_length(v), sizeof(char *), str_cmp_desc);
        *ret = v;
        return 0;
}
