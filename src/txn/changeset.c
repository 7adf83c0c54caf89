/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>
#include <sys/stat.h>

#include "base/utf8.h"
#include "txn/changeset.h"

static const char *const kind_names[_NSR_CHANGE_KIND_MAX] = {
        [NSR_CHANGE_CREATED] = "created",
        [NSR_CHANGE_MODIFIED] = "modified",
        [NSR_CHANGE_DELETED] = "deleted",
        [NSR_CHANGE_TYPE_CHANGED] = "type_changed",
        [NSR_CHANGE_METADATA_CHANGED] = "metadata_changed",
};

static const char *const type_names[_NSR_ENTRY_TYPE_MAX] = {
        [NSR_ENTRY_FILE] = "file",
        [NSR_ENTRY_DIR] = "dir",
        [NSR_ENTRY_SYMLINK] = "symlink",
        [NSR_ENTRY_OTHER] = "other",
};

DEFINE_STRING_TABLE_LOOKUP(nsr_change_kind, nsr_change_kind, kind_names)

DEFINE_STRING_TABLE_LOOKUP(nsr_entry_type, nsr_entry_type, type_names)

nsr_entry_type nsr_entry_type_from_mode(mode_t m) {
        if (S_ISREG(m))
                return NSR_ENTRY_FILE;
        if (S_ISDIR(m))
                return NSR_ENTRY_DIR;
        if (S_ISLNK(m))
                return NSR_ENTRY_SYMLINK;
        return NSR_ENTRY_OTHER;
}

bool nsr_changeset_path_is_valid(const char *path) {
        if (!path || !*path || *path == '/')
                return false;
        const char *s = path;
        for (;;) {
                const char *e = strchrnul(s, '/');
                size_t l = (size_t) (e - s);
                if (l == 0 || (l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
                        return false;
                if (!*e)
                        return true;
                s = e + 1;
        }
}

bool nsr_changeset_path_is_root(const char *path) {
        return path && streq(path, NSR_CHANGESET_ROOT);
}

bool nsr_change_is_root_mode(const nsr_change *c) {
        return nsr_changeset_path_is_root(c->path) && c->kind == NSR_CHANGE_METADATA_CHANGED &&
               c->type == NSR_ENTRY_DIR && c->old.exists && c->old.type == NSR_ENTRY_DIR && c->meta == NSR_META_MODE &&
               !c->target;
}

bool nsr_change_makes_special(const nsr_change *c) {
        return c->kind != NSR_CHANGE_DELETED && c->type != NSR_ENTRY_FILE && c->type != NSR_ENTRY_DIR &&
               c->type != NSR_ENTRY_SYMLINK;
}

nsr_changeset *nsr_changeset_new(void) {
        nsr_changeset *cs = nsr_malloc0(sizeof(*cs));
        cs->max_changes = NSR_CHANGESET_MAX_CHANGES_DEFAULT;
        cs->sorted = true;
        return cs;
}

static void change_done(nsr_change *c) {
        free(c->path);
        free(c->target);
        c->path = c->target = NULL;
}

nsr_changeset *nsr_changeset_free(nsr_changeset *cs) {
        if (!cs)
                return NULL;
        for (size_t i = 0; i < cs->n_changes; i++)
                change_done(&cs->changes[i]);
        free(cs->changes);
        free(cs);
        return NULL;
}

static bool kind_valid(nsr_change_kind k) {
        return k >= 0 && k < _NSR_CHANGE_KIND_MAX;
}

static bool type_valid(nsr_entry_type t) {
        return t >= 0 && t < _NSR_ENTRY_TYPE_MAX;
}

/* Compares component by component: '/' sorts before every other byte, so
 * a directory's subtree is contiguous and follows the directory. */
int nsr_changeset_path_cmp(const char *a, const char *b) {
        /* The root's "." comes first. */
        bool ra = nsr_changeset_path_is_root(a), rb = nsr_changeset_path_is_root(b);
        if (ra || rb)
                return ra && rb ? 0 : ra ? -1 : 1;
        const unsigned char *x = (const unsigned char *) a, *y = (const unsigned char *) b;
        for (;; x++, y++) {
                if (*x == *y) {
                        if (!*x)
                                return 0;
                        continue;
                }
                /* NUL (end) < '/' < any other byte */
                unsigned cx = *x == '/' ? 1 : *x == 0 ? 0 : (unsigned) *x + 1;
                unsigned cy = *y == '/' ? 1 : *y == 0 ? 0 : (unsigned) *y + 1;
                return cx < cy ? -1 : 1;
        }
}

/* Adds without validation; takes ownership of c's strings. */
static void push(nsr_changeset *cs, nsr_change *c) {
        if (cs->n_changes == cs->n_allocated) {
                size_t n = cs->n_allocated ? cs->n_allocated * 2 : 64;
                cs->changes = nsr_realloc_array(cs->changes, n, sizeof(nsr_change));
                cs->n_allocated = n;
        }
        /* Stays sorted while changes arrive in order. */
        if (cs->n_changes > 0 && nsr_changeset_path_cmp(cs->changes[cs->n_changes - 1].path, c->path) >= 0)
                cs->sorted = false;
        cs->changes[cs->n_changes++] = *c;
        cs->counts[c->kind]++;
}

int nsr_changeset_add(nsr_changeset *cs, const nsr_change *c, nsr_error *err) {
        if (nsr_changeset_path_is_root(c->path) && !nsr_change_is_root_mode(c))
                return nsr_error_setx(err, EINVAL, "invalid change path '.': the project root changes only its mode");
        if (!nsr_changeset_path_is_valid(c->path) && !nsr_changeset_path_is_root(c->path)) {
                _cleanup_free_ char *p = nsr_utf8_escape(c->path ? c->path : "(null)");
                return nsr_error_setx(err, EINVAL, "invalid change path '%s'", p);
        }
        if (!kind_valid(c->kind) || !type_valid(c->type) || (c->old.exists && !type_valid(c->old.type)))
                return nsr_error_setx(err, EINVAL, "invalid change kind or type (%d, %d)", (int) c->kind,
                                      (int) c->type);
        if (c->target && c->type != NSR_ENTRY_SYMLINK)
                return nsr_error_setx(err, EINVAL, "a symlink target on a change of type %s",
                                      nsr_entry_type_to_string(c->type));
        if (cs->n_changes >= cs->max_changes)
                return nsr_error_setx(err, E2BIG, "more than %zu changes", cs->max_changes);
        nsr_change copy = *c;
        copy.path = nsr_strdup(c->path);
        copy.target = c->target ? nsr_strdup(c->target) : NULL;
        push(cs, &copy);
        return 0;
}

static int change_cmp(const void *a, const void *b) {
        return nsr_changeset_path_cmp(((const nsr_change *) a)->path, ((const nsr_change *) b)->path);
}

int nsr_changeset_sort(nsr_changeset *cs, nsr_error *err) {
        if (cs->n_changes > 1)
                qsort(cs->changes, cs->n_changes, sizeof(nsr_change), change_cmp);
        for (size_t i = 1; i < cs->n_changes; i++)
                if (nsr_changeset_path_cmp(cs->changes[i - 1].path, cs->changes[i].path) == 0) {
                        _cleanup_free_ char *p = nsr_utf8_escape(cs->changes[i].path);
                        return nsr_error_setx(err, EEXIST, "two changes for the same path '%s'", p);
                }
        cs->sorted = true;
        return 0;
}

const nsr_change *nsr_changeset_lookup(const nsr_changeset *cs, const char *path) {
        if (!cs || !path)
                return NULL;
        if (!cs->sorted) {
                for (size_t i = 0; i < cs->n_changes; i++)
                        if (strcmp(cs->changes[i].path, path) == 0)
                                return &cs->changes[i];
                return NULL;
        }
        size_t lo = 0, hi = cs->n_changes;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int r = nsr_changeset_path_cmp(path, cs->changes[mid].path);
                if (r == 0)
                        return &cs->changes[mid];
                if (r < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

size_t nsr_changeset_count(const nsr_changeset *cs, nsr_change_kind kind) {
        if (!cs || !kind_valid(kind))
                return 0;
        return cs->counts[kind];
}

size_t nsr_changeset_size(const nsr_changeset *cs) {
        return cs ? cs->n_changes : 0;
}

int nsr_changeset_split(nsr_changeset *cs, bool (*pred)(const nsr_change *c, void *userdata), void *userdata,
                        nsr_changeset **ret_moved) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *moved = nsr_changeset_new();
        moved->max_changes = cs->max_changes;
        size_t kept = 0;
        for (size_t i = 0; i < cs->n_changes; i++) {
                nsr_change *c = &cs->changes[i];
                if (pred(c, userdata)) {
                        push(moved, c);
                        cs->counts[c->kind]--;
                } else
                        cs->changes[kept++] = *c;
        }
        /* Filtering keeps the order, so both halves of a sorted set stay
         * sorted (push() already tracked the moved half). */
        cs->n_changes = kept;
        *ret_moved = TAKE_PTR(moved);
        return 0;
}
