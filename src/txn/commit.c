/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Applying a change set: conflicts, the plan, the upper dir's preparation;
 * recovery of a project's unfinished journals; undo. The transaction itself
 * (journal, steps, rollback) is txn.c, whose top comment describes the
 * protocol and the file formats. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/dirent.h"
#include "base/utf8.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/state.h"
#include "txn/txn.h"
#include "txn/txnfs.h"

static char *esc(const char *path) {
        return nsr_utf8_escape(path);
}

static bool ts_eq(struct timespec a, struct timespec b) {
        return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* start: the fine clock, with the command held back until the coarse
 * clock passed it (docs/conflicts.md). A filesystem that keeps coarser
 * timestamps (1 s, FAT's 2 s, 100 ns) truncates them: such a ctime stands
 * for any moment up to one granule later, and the granule shows in the
 * zeros it ends with. */
bool nsr_commit_changed_after(struct timespec ctime, struct timespec start) {
        long gran = 1;
        if (ctime.tv_nsec == 0)
                gran = 2000000000L;
        else
                for (long ns = ctime.tv_nsec; ns % 10 == 0; ns /= 10)
                        gran *= 10;
        long long end_sec = (long long) ctime.tv_sec + (ctime.tv_nsec + gran) / 1000000000L;
        long end_nsec = (ctime.tv_nsec + gran) % 1000000000L;
        return end_sec > (long long) start.tv_sec || (end_sec == (long long) start.tv_sec && end_nsec > start.tv_nsec);
}

/* ---- what rolled-back transactions put back ------------------------------------------------ */

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

static void restore_set_done(restore_set *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].path);
        free(s->v);
        *s = (restore_set){ 0 };
}

static void restore_set_add(restore_set *s, const nsr_journal *j) {
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

static void restore_set_sort(restore_set *s) {
        if (s->n > 1)
                qsort(s->v, s->n, sizeof(restored), restored_cmp);
}

static bool restore_set_match(const restore_set *s, const char *path, const struct stat *st) {
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

/* Names of the entries of a dir that pass pred (all when NULL), sorted
 * newest (largest) first. */
static int list_dir(int dirfd, bool (*pred)(const char *name), char ***ret) {
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

/* ---- planning an apply -------------------------------------------------------------------- */

typedef struct pconflict {
        size_t parent; /* index of the conflict whose upper entry carries ours, or SIZE_MAX */
        bool move;     /* our upper entry moves to conflict/ */
} pconflict;

typedef struct planner {
        const nsr_changeset *cs;
        const nsr_commit_opts *o;
        nsr_journal *j;
        nsr_commit_result res;
        pconflict *px;
        size_t n_px_allocated;
        char **excluded;
        /* The last parent dir looked up, live and in upper. */
        char *lp_dir;
        int lp_fd, lp_err;
        uint64_t lp_mnt;
        char *up_dir;
        int up_fd, up_err;
        uint64_t mnt_src, mnt_backup;
        /* The current blocking conflict (children conflict too). */
        char *block;
        size_t block_index;
        /* Units held back whole: triples of the unit, its first conflict and the reason. */
        char **held;
        bool root;
        restore_set restores;
} planner;

static void planner_done(planner *p) {
        nsr_commit_result_done(&p->res);
        free(p->px);
        nsr_strv_free(p->excluded);
        free(p->lp_dir);
        free(p->up_dir);
        free(p->block);
        nsr_strv_free(p->held);
        safe_close(p->lp_fd);
        safe_close(p->up_fd);
        restore_set_done(&p->restores);
}

/* Collects the "r" records of this run's rolled-back journals for project
 * index (journal/pN.TOKEN, set aside by nsr_txn_check_journal_slot). */
static int load_restored(planner *p, nsr_error *err) {
        _cleanup_close_ int jdir = openat(p->o->run_fd, "journal", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (jdir < 0)
                return errno == ENOENT ? 0 : nsr_error_set(err, errno, "cannot open the journal dir");
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "p%u.", p->o->project_index);
        _cleanup_strv_free_ char **names = NULL;
        int r = list_dir(jdir, NULL, &names);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot list the journal dir");
        for (char **n = names; n && *n; n++) {
                if (!nsr_startswith(*n, prefix))
                        continue;
                _cleanup_close_ int fd = openat(jdir, *n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_(nsr_journal_freep) nsr_journal *j = NULL;
                if (fd >= 0 && nsr_journal_read(fd, false, &j, NULL) == 0 && j->rolled_back)
                        restore_set_add(&p->restores, j);
        }
        restore_set_sort(&p->restores);
        return 0;
}

static void add_conflict(planner *p, const char *path, const char *reason, size_t parent, bool move, bool blocking) {
        nsr_commit_result *r = &p->res;
        if (r->n_conflicts == p->n_px_allocated) {
                p->n_px_allocated = p->n_px_allocated ? p->n_px_allocated * 2 : 16;
                r->conflicts = nsr_realloc_array(r->conflicts, p->n_px_allocated, sizeof(nsr_commit_conflict));
                p->px = nsr_realloc_array(p->px, p->n_px_allocated, sizeof(pconflict));
        }
        r->conflicts[r->n_conflicts] = (nsr_commit_conflict){ .path = nsr_strdup(path), .reason = nsr_strdup(reason) };
        p->px[r->n_conflicts] = (pconflict){ .parent = parent, .move = move };
        if (blocking) {
                free(p->block);
                p->block = nsr_strdup(path);
                p->block_index = r->n_conflicts;
        }
        r->n_conflicts++;
}

/* Looks a parent dir up below root through a one-entry cache (the change
 * set is sorted, so siblings come together). */
static int cached_parent(int root, const char *path, char **dir, int *fd, int *err, uint64_t *mnt,
                         const char **ret_leaf) {
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t) (slash - path) : 0;
        *ret_leaf = slash ? slash + 1 : path;
        if (*dir && strlen(*dir) == dl && memcmp(*dir, path, dl) == 0)
                return *err < 0 ? *err : *fd;
        free(*dir);
        *dir = nsr_strndup(path, dl);
        *fd = safe_close(*fd);
        int r = nsr_txnfs_open(root, *dir, O_PATH | O_DIRECTORY);
        *err = r < 0 ? r : 0;
        *fd = r < 0 ? -1 : r;
        if (r >= 0 && mnt) {
                int k = nsr_txnfs_mnt_id(r, mnt);
                if (k < 0)
                        *err = k;
        }
        return *err < 0 ? *err : *fd;
}

static size_t subtree_end(const nsr_changeset *cs, size_t i) {
        size_t j = i + 1;
        while (j < cs->n_changes && nsr_path_is_below(cs->changes[j].path, cs->changes[i].path))
                j++;
        return j;
}

static bool changed_since(const planner *p, const char *path, const struct stat *st, const nsr_entry_old *old) {
        if (nsr_commit_changed_after(st->st_ctim, p->o->run_start) && !restore_set_match(&p->restores, path, st))
                return true;
        if (S_ISDIR(st->st_mode))
                return false;
        return (uint64_t) st->st_size != old->size || !ts_eq(st->st_mtim, old->mtime);
}

static bool same_entry(const struct stat *st, const nsr_entry_old *old) {
        return (uint64_t) st->st_dev == (uint64_t) old->dev && (uint64_t) st->st_ino == (uint64_t) old->ino &&
               nsr_entry_type_from_mode(st->st_mode) == old->type;
}

typedef struct live_walk {
        const planner *p;
        const char *root;
        bool root_changed;
        char *changed;
} live_walk;

static int live_cb(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata) {
        (void) dirfd;
        (void) name;
        live_walk *w = userdata;
        if (!nsr_commit_changed_after(st->st_ctim, w->p->o->run_start) || restore_set_match(&w->p->restores, rel, st))
                return 0;
        /* The dir's own ctime moves when an entry is added or removed in
         * it: go on looking for the entry, which says more. */
        if (streq(rel, w->root)) {
                w->root_changed = true;
                return 0;
        }
        w->changed = nsr_strdup(rel);
        return -ESTALE;
}

/* The reason a live dir tree must not be removed, or NULL: anything in it
 * changed after the run started. */
static int live_tree_check(planner *p, int lp, const char *leaf, const char *path, char **ret_reason, nsr_error *err) {
        live_walk w = { .p = p, .root = path };
        int r = nsr_txnfs_walk(lp, leaf, path, 0, live_cb, &w);
        _cleanup_free_ char *changed = w.changed;
        *ret_reason = NULL;
        if (r == -ESTALE) {
                _cleanup_free_ char *e = esc(changed);
                *ret_reason = nsr_asprintf("the host changed '%s' inside it during the run", e);
                return 0;
        }
        if (r >= 0 && w.root_changed) {
                *ret_reason = nsr_strdup("the host added, removed or changed entries in it during the run");
                return 0;
        }
        if (r == -EACCES) {
                *ret_reason = nsr_strdup("it could not be checked for host changes (permission denied)");
                return 0;
        }
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot check for host changes below", path);
        return 0;
}

typedef struct tree_check {
        planner *p;
        const char *root;
        size_t begin, end; /* the change-set range of the subtree */
        size_t matched;
        int bad;
        char *bad_path;
} tree_check;

static int tree_cb(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata) {
        (void) dirfd;
        (void) name;
        tree_check *tc = userdata;
        if (streq(rel, tc->root))
                return 0;
        const nsr_change *c = nsr_changeset_lookup(tc->p->cs, rel);
        size_t idx = c ? (size_t) (c - tc->p->cs->changes) : 0;
        if (!c || idx <= tc->begin || idx >= tc->end) {
                /* Not in the change set (a protected path, a whiteout):
                 * not applied, set aside so the dir can move whole. */
                (void) nsr_strv_push(&tc->p->excluded, nsr_strdup(rel));
                return 1;
        }
        if (c->kind != NSR_CHANGE_CREATED || c->type != nsr_entry_type_from_mode(st->st_mode) ||
            nsr_change_makes_special(c)) {
                tc->bad = EINVAL;
                tc->bad_path = nsr_strdup(rel);
                return -EINVAL;
        }
        tc->matched++;
        return 0;
}

/* A new dir moves as a whole: its subtree in the change set must be all
 * "created" and match the upper dir. */
static int check_new_tree(planner *p, size_t i, size_t end, nsr_error *err) {
        const nsr_change *c = &p->cs->changes[i];
        const char *leaf = NULL;
        int up = cached_parent(p->o->upper_fd, c->path, &p->up_dir, &p->up_fd, &p->up_err, NULL, &leaf);
        if (up < 0)
                return nsr_txn_path_error(err, up, "cannot open the upper dir of", c->path);
        tree_check tc = { .p = p, .root = c->path, .begin = i, .end = end };
        int r = nsr_txnfs_walk(up, leaf, c->path, NSR_TXNFS_WALK_FORCE, tree_cb, &tc);
        _cleanup_free_ char *bad = tc.bad_path;
        if (r < 0 && bad)
                return nsr_txn_path_error(err, EINVAL, "the change set does not match the upper dir at", bad);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot walk the upper dir at", c->path);
        if (tc.matched != end - i - 1)
                return nsr_txn_path_error(err, EINVAL, "the change set lists entries the upper dir lacks below",
                                          c->path);
        return 0;
}

/* The upper entry of a change: it must exist with the change's type. */
static int upper_stat(planner *p, const nsr_change *c, struct stat *st, nsr_error *err) {
        const char *leaf = NULL;
        int up = cached_parent(p->o->upper_fd, c->path, &p->up_dir, &p->up_fd, &p->up_err, NULL, &leaf);
        if (up < 0)
                return nsr_txn_path_error(err, up, "cannot open the upper dir of", c->path);
        if (fstatat(up, leaf, st, AT_SYMLINK_NOFOLLOW) < 0)
                return nsr_txn_path_error(err, errno, "the upper dir lacks the new version of", c->path);
        bool whiteout = S_ISCHR(st->st_mode) && st->st_rdev == 0;
        if (whiteout || nsr_entry_type_from_mode(st->st_mode) != c->type)
                return nsr_txn_path_error(err, EINVAL, "the upper dir does not match the change set at", c->path);
        /* The protect stage drops these; a set that still has one did not
         * go through it, and the apply fails closed. */
        if (nsr_change_makes_special(c))
                return nsr_txn_path_error(err, EPERM,
                                          "a fifo, socket or device node never reaches the project:", c->path);
        return 0;
}

static nsr_ident new_ident(const struct stat *st) {
        nsr_ident id = nsr_ident_from_stat(st);
        id.mode &= ~(mode_t) (S_ISUID | S_ISGID); /* what sanitizing leaves */
        return id;
}

static nsr_step *add_step(planner *p, nsr_step_op op, const nsr_change *c, const struct stat *live,
                          const struct stat *upper) {
        nsr_step *s = nsr_journal_add_step(p->j, op, c->path);
        if (live)
                s->orig = nsr_ident_from_stat(live);
        if (upper) {
                s->new_id = new_ident(upper);
                s->tree = S_ISDIR(upper->st_mode);
        }
        bool src_other = upper && p->lp_mnt != p->mnt_src;
        bool bak_other = live && op != NSR_STEP_META && p->lp_mnt != p->mnt_backup;
        s->copy = src_other || bak_other;
        return s;
}

/* The metadata step of a dir that stays: only what differs. */
static int plan_meta(planner *p, const nsr_change *c, int lp, const char *leaf, const struct stat *live,
                     const struct stat *upper, nsr_error *err) {
        nsr_xattr *lx = NULL, *ux = NULL;
        size_t nl = 0, nu = 0;
        const char *uleaf = NULL;
        int up = cached_parent(p->o->upper_fd, c->path, &p->up_dir, &p->up_fd, &p->up_err, NULL, &uleaf);
        int r = up < 0 ? up : nsr_txnfs_user_xattrs(lp, leaf, &lx, &nl);
        if (r >= 0)
                r = nsr_txnfs_user_xattrs(up, uleaf, &ux, &nu);
        if (r < 0) {
                nsr_txnfs_xattrs_free(lx, nl);
                return nsr_txn_path_error(err, r, "cannot read the xattrs of", c->path);
        }
        mode_t lm = live->st_mode & 07777, um = upper->st_mode & 07777;
        mode_t nm = (um & 01777) | (um & lm & (S_ISUID | S_ISGID));
        bool chown = p->root && (upper->st_uid != live->st_uid || upper->st_gid != live->st_gid);
        nsr_xattr_change *xc = NULL;
        size_t nx = 0;
        /* Both lists are sorted by name: merge them. */
        for (size_t a = 0, b = 0; a < nl || b < nu;) {
                int cmp = a == nl ? 1 : b == nu ? -1 : strcmp(lx[a].name, ux[b].name);
                nsr_xattr_change x = { 0 };
                if (cmp < 0) {
                        x.name = nsr_strdup(lx[a].name);
                        x.old_value = TAKE_PTR(lx[a].value);
                        x.old_len = lx[a].len;
                        a++;
                } else if (cmp > 0) {
                        x.name = nsr_strdup(ux[b].name);
                        x.new_value = TAKE_PTR(ux[b].value);
                        x.new_len = ux[b].len;
                        b++;
                } else {
                        bool same = lx[a].len == ux[b].len && memcmp(lx[a].value, ux[b].value, lx[a].len) == 0;
                        if (!same) {
                                x.name = nsr_strdup(lx[a].name);
                                x.old_value = TAKE_PTR(lx[a].value);
                                x.old_len = lx[a].len;
                                x.new_value = TAKE_PTR(ux[b].value);
                                x.new_len = ux[b].len;
                        }
                        a++;
                        b++;
                }
                if (x.name) {
                        xc = nsr_realloc_array(xc, nx + 1, sizeof(*xc));
                        xc[nx++] = x;
                }
        }
        nsr_txnfs_xattrs_free(lx, nl);
        nsr_txnfs_xattrs_free(ux, nu);
        if (nm == lm && !chown && nx == 0)
                return 0;
        nsr_step *s = add_step(p, NSR_STEP_META, c, live, NULL);
        s->old_mode = lm;
        s->new_mode = nm;
        s->old_uid = live->st_uid;
        s->old_gid = live->st_gid;
        s->new_uid = chown ? upper->st_uid : live->st_uid;
        s->new_gid = chown ? upper->st_gid : live->st_gid;
        s->chown = chown;
        s->xattrs = xc;
        s->n_xattrs = nx;
        return 0;
}

static bool is_dirish(const nsr_change *c) {
        return c->type == NSR_ENTRY_DIR || (c->old.exists && c->old.type == NSR_ENTRY_DIR);
}

static int require_kind(planner *p, size_t i, size_t end, nsr_change_kind kind, nsr_error *err) {
        for (size_t k = i + 1; k < end; k++)
                if (p->cs->changes[k].kind != kind)
                        return nsr_txn_path_error(err, EINVAL, "an inconsistent change set below",
                                                  p->cs->changes[i].path);
        return 0;
}

char *nsr_commit_unit_of(const char *path) {
        for (const char *s = path; s; s = strchr(s, '/')) {
                if (*s == '/')
                        s++;
                if (strncmp(s, ".git", 4) == 0 && (s[4] == '/' || s[4] == '\0'))
                        return nsr_strndup(path, (size_t) (s + 4 - path));
        }
        return NULL;
}

/* The held unit path is in (its index in p->held), or -1. */
static ssize_t held_unit(const planner *p, const char *path) {
        for (size_t k = 0; p->held && p->held[k]; k += 3)
                if (streq(path, p->held[k]) || nsr_path_is_below(path, p->held[k]))
                        return (ssize_t) k;
        return -1;
}

/* The project root's own mode (the "." change, changeset.h): a meta step
 * on the root, its mode only, never its owner or xattrs (the upper dir,
 * the overlay's root, is nsrun's own dir, not a copy-up of the root). The
 * new mode is bounded here again, whatever the change says: no group or
 * other write and no sticky bit the root did not have; setuid and setgid
 * stay as they are, and so do the owner's read and search bits (nsrun
 * needs them to fingerprint, undo and recover the root). */
static int plan_root(planner *p, const nsr_change *c, nsr_error *err) {
        if (!nsr_change_is_root_mode(c))
                return nsr_txn_path_error(err, EINVAL, "an invalid change of the project root at", c->path);
        _cleanup_close_ int lp = nsr_txnfs_open(p->o->project_fd, "", O_PATH | O_DIRECTORY);
        _cleanup_close_ int up = lp < 0 ? lp : nsr_txnfs_open(p->o->upper_fd, "", O_PATH | O_DIRECTORY);
        struct stat st, ust;
        if (lp < 0 || up < 0 || fstat(lp, &st) < 0 || fstat(up, &ust) < 0)
                return nsr_txn_path_error(err,
                                          lp < 0   ? -lp
                                          : up < 0 ? -up
                                                   : errno,
                                          "cannot stat the project dir", c->path);
        if (!same_entry(&st, &c->old) || (st.st_mode & 07777) != c->old.mode || st.st_uid != c->old.uid ||
            st.st_gid != c->old.gid) {
                add_conflict(p, c->path, "the host changed the project dir's mode or owner during the run", SIZE_MAX,
                             false, false);
                return 0;
        }
        mode_t lm = st.st_mode & 07777, um = ust.st_mode & 07777;
        mode_t nm = (um & 0777 & (lm | ~(mode_t) (S_IWGRP | S_IWOTH))) | (um & lm & S_ISVTX) |
                    (lm & (S_ISUID | S_ISGID | S_IRUSR | S_IXUSR));
        p->res.applied++;
        if (nm == lm)
                return 0;
        nsr_step *s = add_step(p, NSR_STEP_META, c, &st, NULL);
        s->old_mode = lm;
        s->new_mode = nm;
        s->old_uid = s->new_uid = st.st_uid;
        s->old_gid = s->new_gid = st.st_gid;
        return 0;
}

/* Below a parent dir that conflicted, or in a git dir that conflicted
 * (held back as a whole): c is a conflict too, and true returned. */
static bool held_back(planner *p, const nsr_change *c) {
        if (p->block && nsr_path_is_below(c->path, p->block)) {
                _cleanup_free_ char *e = esc(p->block);
                _cleanup_free_ char *why = nsr_asprintf("its parent dir '%s' conflicted and was not applied", e);
                add_conflict(p, c->path, why, p->block_index, false, false);
                p->res.conflicts[p->res.n_conflicts - 1].held = true;
                return true;
        }
        free(p->block);
        p->block = NULL;
        ssize_t h = held_unit(p, c->path);
        if (h >= 0) {
                _cleanup_free_ char *u = esc(p->held[h]), *at = esc(p->held[h + 1]);
                _cleanup_free_ char *why = streq(c->path, p->held[h + 1])
                                                   ? nsr_strdup(p->held[h + 2])
                                                   : nsr_asprintf("held back with the rest of the git dir '%s', "
                                                                  "which conflicted at '%s'",
                                                                  u, at);
                add_conflict(p, c->path, why, SIZE_MAX, c->kind != NSR_CHANGE_DELETED, is_dirish(c));
                p->res.conflicts[p->res.n_conflicts - 1].held = !streq(c->path, p->held[h + 1]);
                return true;
        }
        return false;
}

/* The host entry st is as the run found it: it goes (with what is below
 * it), or the upper dir's version replaces it. */
static int plan_replace(planner *p, size_t i, const struct stat *st, size_t *next, nsr_error *err) {
        const nsr_change *c = &p->cs->changes[i];
        struct stat ust;
        int r;

        size_t end = subtree_end(p->cs, i);
        if (c->kind == NSR_CHANGE_DELETED) {
                if ((r = require_kind(p, i, end, NSR_CHANGE_DELETED, err)) < 0)
                        return r;
                add_step(p, NSR_STEP_REMOVE, c, st, NULL);
                p->res.applied += end - i;
                *next = end;
                return 0;
        }
        if ((r = upper_stat(p, c, &ust, err)) < 0)
                return r;
        if (c->type == NSR_ENTRY_DIR)
                r = check_new_tree(p, i, end, err);
        else if (c->old.type == NSR_ENTRY_DIR)
                r = require_kind(p, i, end, NSR_CHANGE_DELETED, err);
        else if (end != i + 1)
                r = nsr_txn_path_error(err, EINVAL, "changes below a non-dir at", c->path);
        if (r < 0)
                return r;
        if (c->in_place && c->kind == NSR_CHANGE_MODIFIED && S_ISREG(st->st_mode) && S_ISREG(ust.st_mode)) {
                /* Written into the host's inode: owner, mode and links stay,
                 * as with the user's own write (project/foreign.h). */
                add_step(p, NSR_STEP_WRITE, c, st, &ust)->copy = false;
                p->res.applied += end - i;
                *next = end;
                return 0;
        }
        /* The overlay copies a hard-linked file up alone, so inside the
         * sandbox its other names kept the old content; so they do here. */
        if (S_ISREG(st->st_mode) && st->st_nlink > 1)
                nsr_strv_extend(&p->res.split_links, c->path);
        add_step(p, NSR_STEP_REPLACE, c, st, &ust);
        p->res.applied += end - i;
        *next = end;
        return 0;
}

/* --on-conflict=prefer-sandbox: the host changed the entry of change i
 * during the run (st: what is there now, NULL when the host deleted it),
 * and the sandbox's version goes in all the same, over what is there. The
 * step's original is the host's entry as it is now: it goes to the
 * backups, and undo puts it back. */
static int overrule(planner *p, size_t i, const struct stat *st, const char *why, size_t *next, nsr_error *err) {
        const nsr_change *c = &p->cs->changes[i];
        nsr_strv_extend(&p->res.overruled, c->path);
        nsr_strv_extend(&p->res.overruled, why);
        if (st)
                return plan_replace(p, i, st, next, err);
        size_t end = subtree_end(p->cs, i);
        if (c->kind == NSR_CHANGE_DELETED) {
                /* Deleted on both sides. */
                p->res.applied += end - i;
                *next = end;
                return 0;
        }
        struct stat ust;
        int r = upper_stat(p, c, &ust, err);
        if (r >= 0 && c->type == NSR_ENTRY_DIR)
                r = check_new_tree(p, i, end, err);
        else if (r >= 0 && end != i + 1)
                r = nsr_txn_path_error(err, EINVAL, "changes below a non-dir at", c->path);
        if (r < 0)
                return r;
        add_step(p, NSR_STEP_PLACE, c, NULL, &ust);
        p->res.applied += end - i;
        *next = end;
        return 0;
}

/* Plans change i; *next is the first change not handled. */
static int plan_change(planner *p, size_t i, size_t *next, nsr_error *err) {
        const nsr_change *c = &p->cs->changes[i];
        *next = i + 1;
        if (held_back(p, c))
                return 0;
        if (nsr_changeset_path_is_root(c->path))
                return plan_root(p, c, err);
        if (strlen(c->path) >= PATH_MAX)
                return nsr_txn_path_error(err, ENAMETOOLONG, "a path too long", c->path);
        if (c->kind != NSR_CHANGE_CREATED && !c->old.exists)
                return nsr_txn_path_error(err, EINVAL, "a change without the old entry at", c->path);

        const char *leaf = NULL;
        int lp = cached_parent(p->o->project_fd, c->path, &p->lp_dir, &p->lp_fd, &p->lp_err, &p->lp_mnt, &leaf);
        bool upper_entry = c->kind != NSR_CHANGE_DELETED;
        if (lp == -ENOENT || lp == -ENOTDIR || lp == -ELOOP || lp == -EXDEV) {
                add_conflict(p, c->path,
                             lp == -ELOOP ? "a parent dir was replaced by a symlink on the host"
                                          : "a parent dir was deleted or replaced on the host",
                             SIZE_MAX, upper_entry, is_dirish(c));
                return 0;
        }
        if (lp < 0)
                return nsr_txn_path_error(err, lp, "cannot open the parent dir of", c->path);
        struct stat st;
        bool exists = fstatat(lp, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!exists && errno != ENOENT)
                return nsr_txn_path_error(err, errno, "cannot stat", c->path);

        struct stat ust;
        int r;
        switch (c->kind) {
        case NSR_CHANGE_CREATED:
                if (exists && S_ISDIR(st.st_mode) && c->type == NSR_ENTRY_DIR) {
                        p->res.applied++; /* merged: the children apply on their own */
                        return 0;
                }
                if (exists && p->o->prefer_sandbox)
                        return overrule(p, i, &st, "created on the host during the run", next, err);
                if (exists) {
                        add_conflict(p, c->path, "created on the host during the run", SIZE_MAX, true, is_dirish(c));
                        return 0;
                }
                if ((r = upper_stat(p, c, &ust, err)) < 0)
                        return r;
                if (c->type == NSR_ENTRY_DIR) {
                        size_t end = subtree_end(p->cs, i);
                        if ((r = check_new_tree(p, i, end, err)) < 0)
                                return r;
                        *next = end;
                }
                add_step(p, NSR_STEP_PLACE, c, NULL, &ust);
                p->res.applied += *next - i;
                return 0;
        case NSR_CHANGE_DELETED:
        case NSR_CHANGE_MODIFIED:
        case NSR_CHANGE_METADATA_CHANGED:
        case NSR_CHANGE_TYPE_CHANGED:
                break;
        case _NSR_CHANGE_KIND_MAX:
        case _NSR_CHANGE_KIND_INVALID:
                return nsr_txn_path_error(err, EINVAL, "an invalid change kind at", c->path);
        }

        /* A dir the sandbox kept has in its upper dir only what it
         * changed: never a whole dir to put in place of the host's. */
        bool dir_stays = c->kind != NSR_CHANGE_DELETED && c->type == NSR_ENTRY_DIR && c->old.type == NSR_ENTRY_DIR;
        if (!exists && p->o->prefer_sandbox && !dir_stays)
                return overrule(p, i, NULL, "deleted on the host during the run", next, err);
        if (!exists) {
                add_conflict(p, c->path, "deleted on the host during the run", SIZE_MAX, upper_entry, is_dirish(c));
                return 0;
        }
        /* A dir that goes away is judged by the walk below, which can say
         * what inside it changed. */
        bool ctime_here = !dir_stays && !S_ISDIR(st.st_mode);
        if (!same_entry(&st, &c->old) || (ctime_here && changed_since(p, c->path, &st, &c->old))) {
                if (p->o->prefer_sandbox && !dir_stays)
                        return overrule(p, i, &st, "changed on the host during the run", next, err);
                add_conflict(p, c->path, "changed on the host during the run", SIZE_MAX, upper_entry && !dir_stays,
                             is_dirish(c));
                return 0;
        }
        if (dir_stays) {
                /* A dir's ctime moves with every entry added or removed in
                 * it, so only its own metadata tells a host change. */
                bool host_meta =
                        (st.st_mode & 07777) != c->old.mode || st.st_uid != c->old.uid || st.st_gid != c->old.gid;
                if (host_meta && p->o->prefer_sandbox) {
                        nsr_strv_extend(&p->res.overruled, c->path);
                        nsr_strv_extend(&p->res.overruled, "the host changed the dir's mode or owner during the run");
                } else if (host_meta) {
                        add_conflict(p, c->path, "the host changed the dir's mode or owner during the run", SIZE_MAX,
                                     false, false);
                        return 0;
                }
                if ((r = upper_stat(p, c, &ust, err)) < 0)
                        return r;
                p->res.applied++;
                return plan_meta(p, c, lp, leaf, &st, &ust, err);
        }
        if (S_ISDIR(st.st_mode)) {
                _cleanup_free_ char *why = NULL;
                if ((r = live_tree_check(p, lp, leaf, c->path, &why, err)) < 0)
                        return r;
                if (why && p->o->prefer_sandbox)
                        return overrule(p, i, &st, why, next, err);
                if (why) {
                        add_conflict(p, c->path, why, SIZE_MAX, upper_entry, true);
                        return 0;
                }
        }
        return plan_replace(p, i, &st, next, err);
}

/* ---- the upper dir before the journal --------------------------------------------------- */

static int sanitize_cb(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata) {
        (void) rel;
        (void) userdata;
        return nsr_txnfs_sanitize(dirfd, name, st);
}

/* Entries the change set leaves out go aside; every new entry loses setuid
 * and setgid bits, security.capability and user.overlay.* xattrs. Only the
 * run dir changes here. */
static int prepare_upper(planner *p, nsr_error *err) {
        const nsr_commit_opts *o = p->o;
        if (p->excluded) {
                char rel[32];
                snprintf(rel, sizeof(rel), "excluded/p%u", o->project_index);
                _cleanup_close_ int xfd = nsr_txnfs_mkdir_open(o->run_fd, rel);
                if (xfd < 0)
                        return nsr_error_set(err, -xfd, "cannot create %s in the run dir", rel);
                for (char **x = p->excluded; *x; x++) {
                        const char *leaf = NULL, *xleaf = NULL;
                        _cleanup_close_ int up = nsr_txnfs_open_parent(o->upper_fd, *x, &leaf);
                        _cleanup_close_ int xp = up < 0 ? up : nsr_txnfs_open_parent_mkdir(xfd, *x, &xleaf);
                        int r = xp < 0 ? xp : nsr_txnfs_move_aside(up, leaf, xp, xleaf, &p->res.stats.copied);
                        if (r < 0)
                                return nsr_txn_path_error(err, r, "cannot set aside the unlisted upper entry", *x);
                }
        }
        for (size_t k = 0; k < p->j->n_steps; k++) {
                const nsr_step *s = &p->j->steps[k];
                if (!nsr_step_has_new(s))
                        continue;
                const char *leaf = NULL;
                _cleanup_close_ int up = nsr_txnfs_open_parent(o->upper_fd, s->path, &leaf);
                struct stat st;
                int r = up;
                if (up >= 0 && s->tree)
                        r = nsr_txnfs_walk(up, leaf, s->path, NSR_TXNFS_WALK_FORCE, sanitize_cb, NULL);
                else if (up >= 0)
                        r = fstatat(up, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno
                                                                            : nsr_txnfs_sanitize(up, leaf, &st);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot strip privileges from the new version of", s->path);
        }
        return 0;
}

/* After the apply: the sandbox's versions of conflicting paths move to
 * RUN/conflict/pN (a failure leaves them in the upper dir, and kept_at
 * says so). */
static void move_conflicts(planner *p, const char *source) {
        const nsr_commit_opts *o = p->o;
        nsr_commit_result *res = &p->res;
        char rel[32];
        snprintf(rel, sizeof(rel), "conflict/p%u", o->project_index);
        _cleanup_close_ int cfd = -1;
        for (size_t i = 0; i < res->n_conflicts; i++) {
                nsr_commit_conflict *c = &res->conflicts[i];
                const pconflict *x = &p->px[i];
                if (!x->move) {
                        const nsr_commit_conflict *parent = x->parent != SIZE_MAX ? &res->conflicts[x->parent] : NULL;
                        if (parent && parent->kept_at)
                                c->kept_at = nsr_asprintf("%s%s", parent->kept_at, c->path + strlen(parent->path));
                        continue;
                }
                if (cfd < 0)
                        cfd = nsr_txnfs_mkdir_open(o->run_fd, rel);
                const char *leaf = NULL, *cleaf = NULL;
                _cleanup_close_ int up = nsr_txnfs_open_parent(o->upper_fd, c->path, &leaf);
                struct stat st;
                if (up < 0 || fstatat(up, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* no sandbox version to keep */
                _cleanup_close_ int cp = cfd < 0 ? -1 : nsr_txnfs_open_parent_mkdir(cfd, c->path, &cleaf);
                int r = cp < 0 ? -ENOENT : nsr_txnfs_move_aside(up, leaf, cp, cleaf, &res->stats.copied);
                _cleanup_free_ char *name = NULL;
                for (unsigned n = 1; r == -EEXIST && n < 100; n++) {
                        free(name);
                        name = nsr_asprintf("%s~%u", cleaf, n);
                        r = nsr_txnfs_move_aside(up, leaf, cp, name, &res->stats.copied);
                }
                if (r == 0) {
                        size_t dl = (size_t) (cleaf - c->path);
                        c->kept_at =
                                nsr_asprintf("%s/%s/%.*s%s", o->run_path, rel, (int) dl, c->path, name ? name : cleaf);
                } else if (source)
                        c->kept_at = nsr_asprintf("%s/%s", source, c->path);
        }
}

/* ---- apply ---------------------------------------------------------------------------------- */

int nsr_commit_apply(const nsr_changeset *cs, const nsr_commit_opts *o, nsr_commit_result *ret, nsr_error *err) {
        if (!cs || !o || !ret || o->project_fd < 0 || o->upper_fd < 0 || o->run_fd < 0 || !o->project_path ||
            o->project_path[0] != '/' || !o->run_path)
                return nsr_error_setx(err, EINVAL, "nsr_commit_apply: invalid arguments");
        if (!cs->sorted)
                return nsr_error_setx(err, EINVAL, "the change set is not sorted");
        int r = nsr_txn_check_journal_slot(o->run_fd, o->project_index, err);
        if (r < 0)
                return r;
        _cleanup_close_ int backup_fd = nsr_txn_open_backup_root(o->run_fd, o->project_index, err);
        if (backup_fd < 0)
                return backup_fd;
        struct stat pst, ust;
        if (fstat(o->project_fd, &pst) < 0 || fstat(o->upper_fd, &ust) < 0)
                return nsr_error_set(err, errno, "cannot stat the project or its upper dir");

        _cleanup_(nsr_journal_freep) nsr_journal *j = nsr_journal_new();
        nsr_journal_token_new(j->token);
        j->project = nsr_strdup(o->project_path);
        j->index = o->project_index;
        j->run_start = o->run_start;
        j->source = nsr_txnfs_abs_path(o->upper_fd);
        j->source_dev = (uint64_t) ust.st_dev;
        j->source_ino = (uint64_t) ust.st_ino;

        _cleanup_(planner_done) planner p = { .lp_fd = -1, .up_fd = -1 };
        char **held = NULL;
        /* A conflict inside a git dir holds the whole git dir back: the
         * plan is made again with it held (rarely: only on a conflict). */
        for (int round = 0;; round++) {
                planner_done(&p);
                nsr_journal_clear_steps(j);
                p = (planner){ .cs = cs,
                               .o = o,
                               .j = j,
                               .lp_fd = -1,
                               .up_fd = -1,
                               .root = geteuid() == 0,
                               .held = TAKE_PTR(held) };
                if ((r = load_restored(&p, err)) < 0)
                        return r;
                if ((r = nsr_txnfs_mnt_id(o->upper_fd, &p.mnt_src)) < 0 ||
                    (r = nsr_txnfs_mnt_id(backup_fd, &p.mnt_backup)) < 0)
                        return nsr_error_set(err, -r, "cannot find the mounts of the run dir");
                for (size_t i = 0; i < cs->n_changes;) {
                        size_t next = i + 1;
                        r = plan_change(&p, i, &next, err);
                        if (r < 0)
                                return r;
                        i = next;
                }
                bool more = false;
                for (size_t k = 0; k < p.res.n_conflicts && round == 0; k++) {
                        if (p.res.conflicts[k].held)
                                continue; /* its parent dir conflicted: below it, nothing applies */
                        _cleanup_free_ char *u = nsr_commit_unit_of(p.res.conflicts[k].path);
                        if (!u || held_unit(&p, p.res.conflicts[k].path) >= 0)
                                continue;
                        bool seen = false;
                        for (size_t m = 0; held && held[m]; m += 3)
                                seen = seen || streq(held[m], u);
                        if (seen)
                                continue;
                        nsr_strv_extend(&held, u);
                        nsr_strv_extend(&held, p.res.conflicts[k].path);
                        nsr_strv_extend(&held, p.res.conflicts[k].reason);
                        more = true;
                }
                if (!more)
                        break;
        }
        for (size_t k = 0; p.held && p.held[k]; k += 3)
                nsr_strv_extend(&p.res.units, p.held[k]);
        /* The last lookups are not needed any more. */
        p.lp_fd = safe_close(p.lp_fd);
        p.up_fd = safe_close(p.up_fd);
        if (o->check_only || (o->all_or_nothing && p.res.n_conflicts > 0)) {
                /* Nothing moves, not even the excluded entries: the run
                 * stays as the command left it, for review. */
                p.res.withheld = p.res.n_conflicts > 0;
                p.res.applied = 0;
                *ret = p.res;
                p.res = (nsr_commit_result){ 0 };
                return 0;
        }
        r = prepare_upper(&p, err);
        if (r < 0)
                return r;

        nsr_txn t = {
                .j = j,
                .project_fd = o->project_fd,
                .run_fd = o->run_fd,
                .src_fd = o->upper_fd,
                .backup_fd = backup_fd,
                .journal_fd = -1,
                .project_dev = pst.st_dev,
                .stats = &p.res.stats,
                .state_fd = o->state_fd,
                .run_id = o->run_id,
        };
        p.res.stats.steps = j->n_steps;
        r = nsr_txn_run(&t, err);
        if (r < 0)
                return r;
        move_conflicts(&p, j->source);
        *ret = p.res;
        p.res = (nsr_commit_result){ 0 };
        return 0;
}

void nsr_commit_result_done(nsr_commit_result *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_conflicts; i++) {
                free(r->conflicts[i].path);
                free(r->conflicts[i].reason);
                free(r->conflicts[i].kept_at);
        }
        free(r->conflicts);
        nsr_strv_free(r->units);
        nsr_strv_free(r->split_links);
        nsr_strv_free(r->overruled);
        *r = (nsr_commit_result){ 0 };
}

/* "p0", "p1", ...: not the "pN.TOKEN" of a journal set aside. */
static bool is_journal_name(const char *name) {
        uint32_t n;
        if (name[0] != 'p' || nsr_parse_u32(name + 1, &n) < 0)
                return false;
        char canon[16];
        snprintf(canon, sizeof(canon), "p%u", (unsigned) n);
        return streq(canon, name);
}

static bool is_run_name(const char *name) {
        return nsr_run_id_is_valid(name);
}

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
                int r = list_dir(pending, NULL, &marks);
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
        int r = list_dir(runs, is_run_name, &ids);
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
                r = list_dir(jdir, is_journal_name, &names);
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

/* ---- undo ------------------------------------------------------------------------------------------ */

typedef struct uplanner {
        const nsr_undo_opts *o;
        nsr_journal *u;
        nsr_applied a;
        int rb_fd; /* the undone run's backup dir, or -1 */
        uint64_t mnt_src, mnt_backup;
        char **refused;
        restore_set restores;
} uplanner;

static void uplanner_done(uplanner *p) {
        restore_set_done(&p->restores);
        nsr_applied_done(&p->a);
        nsr_strv_free(p->refused);
        safe_close(p->rb_fd);
}

/* Does the live entry at path, and everything below it that the run wrote,
 * still carry the fingerprint the run recorded? */
static bool live_matches(uplanner *p, const char *path) {
        bool found;
        size_t i = nsr_applied_find(&p->a, path, &found);
        if (!found)
                return false;
        for (size_t k = i; k < p->a.n && (k == i || nsr_path_is_below(p->a.f[k].path, path)); k++) {
                const char *leaf = NULL;
                _cleanup_close_ int lp = nsr_txnfs_open_parent(p->o->project_fd, p->a.f[k].path, &leaf);
                struct stat st;
                if (lp < 0 || fstatat(lp, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return false;
                bool moved_back = restore_set_match(&p->restores, p->a.f[k].path, &st);
                if (!nsr_fingerprint_matches(&p->a.f[k], &st, moved_back))
                        return false;
        }
        return true;
}

/* Undos of the same run that were rolled back moved its entries away and
 * back: their "r" records excuse those ctimes (best effort: the run dirs
 * beside the undone one, which is where nsrun makes them). */
static void load_undo_restores(uplanner *p, const char *undone) {
        if (!undone)
                return;
        _cleanup_close_ int runs = openat(p->o->run_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_strv_free_ char **ids = NULL;
        if (runs < 0 || list_dir(runs, is_run_name, &ids) < 0)
                return;
        char name[32];
        snprintf(name, sizeof(name), "journal/p%u", p->o->project_index);
        for (char **id = ids; id && *id; id++) {
                _cleanup_close_ int rfd = openat(runs, *id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_close_ int fd = rfd < 0 ? -1 : openat(rfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_(nsr_journal_freep) nsr_journal *h = NULL;
                if (fd < 0 || nsr_journal_read(fd, true, &h, NULL) < 0 || !h->undo || !h->rolled_back ||
                    !streq(h->undoes, undone))
                        continue;
                _cleanup_(nsr_journal_freep) nsr_journal *j = NULL;
                if (nsr_journal_read(fd, false, &j, NULL) == 0)
                        restore_set_add(&p->restores, j);
        }
        restore_set_sort(&p->restores);
}

static nsr_step *add_undo_step(uplanner *p, nsr_step_op op, const char *path, uint64_t lmnt, const struct stat *live,
                               const struct stat *src) {
        nsr_step *s = nsr_journal_add_step(p->u, op, path);
        if (live)
                s->orig = nsr_ident_from_stat(live);
        if (src) {
                s->new_id = nsr_ident_from_stat(src);
                s->tree = S_ISDIR(src->st_mode);
        }
        s->copy = (src && lmnt != p->mnt_src) || (live && op != NSR_STEP_META && lmnt != p->mnt_backup);
        return s;
}

static int undo_meta(uplanner *p, const nsr_step *rs, int lp, const char *leaf, const struct stat *st) {
        nsr_xattr *cur = NULL;
        size_t ncur = 0;
        int r = nsr_txnfs_user_xattrs(lp, leaf, &cur, &ncur);
        if (r < 0)
                return r;
        nsr_step *s = add_undo_step(p, NSR_STEP_META, rs->path, 0, st, NULL);
        s->old_mode = st->st_mode & 07777;
        s->old_uid = st->st_uid;
        s->old_gid = st->st_gid;
        s->new_mode = rs->old_mode;
        s->chown = rs->chown && geteuid() == 0;
        s->new_uid = s->chown ? rs->old_uid : st->st_uid;
        s->new_gid = s->chown ? rs->old_gid : st->st_gid;
        for (size_t i = 0; i < rs->n_xattrs; i++) {
                const nsr_xattr_change *x = &rs->xattrs[i];
                nsr_xattr_change y = { .name = nsr_strdup(x->name) };
                for (size_t k = 0; k < ncur; k++)
                        if (streq(cur[k].name, x->name)) {
                                y.old_value = TAKE_PTR(cur[k].value);
                                y.old_len = cur[k].len;
                        }
                if (x->old_value) {
                        y.new_value = nsr_malloc0(x->old_len + 1);
                        memcpy(y.new_value, x->old_value, x->old_len);
                        y.new_len = x->old_len;
                }
                s->xattrs = nsr_realloc_array(s->xattrs, s->n_xattrs + 1, sizeof(*s->xattrs));
                s->xattrs[s->n_xattrs++] = y;
        }
        nsr_txnfs_xattrs_free(cur, ncur);
        return 0;
}

static void refuse(uplanner *p, const char *path) {
        (void) nsr_strv_extend(&p->refused, path);
}

/* Turns one step of the undone run into the undo's step, or a refusal. */
static int plan_undo_step(uplanner *p, const nsr_step *rs, nsr_error *err) {
        bool force = p->o->force;
        const char *leaf = NULL;
        _cleanup_close_ int lp = nsr_txnfs_open_parent(p->o->project_fd, rs->path, &leaf);
        if (lp == -ENOENT || lp == -ENOTDIR || lp == -ELOOP) {
                refuse(p, rs->path);
                return 0;
        }
        if (lp < 0)
                return nsr_txn_path_error(err, lp, "cannot open the parent dir of", rs->path);
        uint64_t lmnt;
        int r = nsr_txnfs_mnt_id(lp, &lmnt);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot find the mount of", rs->path);
        struct stat st, sst;
        bool exists = fstatat(lp, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!exists && errno != ENOENT)
                return nsr_txn_path_error(err, errno, "cannot stat", rs->path);
        bool src = false;
        if ((nsr_step_has_orig(rs) || rs->op == NSR_STEP_WRITE) && p->rb_fd >= 0) {
                const char *bleaf = NULL;
                _cleanup_close_ int bp = nsr_txnfs_open_parent(p->rb_fd, rs->path, &bleaf);
                src = bp >= 0 && fstatat(bp, bleaf, &sst, AT_SYMLINK_NOFOLLOW) == 0;
        }
        switch (rs->op) {
        case NSR_STEP_PLACE:
                if (!exists || (!live_matches(p, rs->path) && !force)) {
                        if (!exists && force)
                                return 0; /* already gone */
                        refuse(p, rs->path);
                        return 0;
                }
                add_undo_step(p, NSR_STEP_REMOVE, rs->path, lmnt, &st, NULL);
                return 0;
        case NSR_STEP_REPLACE:
                if (!src)
                        return 0; /* its backup is gone: an earlier undo of this run restored it */
                if (!force && (!exists || !live_matches(p, rs->path))) {
                        refuse(p, rs->path);
                        return 0;
                }
                add_undo_step(p, exists ? NSR_STEP_REPLACE : NSR_STEP_PLACE, rs->path, lmnt, exists ? &st : NULL, &sst);
                return 0;
        case NSR_STEP_REMOVE:
                if (!src)
                        return 0; /* restored by an earlier undo of this run */
                if (exists && !force) {
                        refuse(p, rs->path);
                        return 0;
                }
                add_undo_step(p, exists ? NSR_STEP_REPLACE : NSR_STEP_PLACE, rs->path, lmnt, exists ? &st : NULL, &sst);
                return 0;
        case NSR_STEP_WRITE:
                if (!src)
                        return 0; /* restored by an earlier undo of this run */
                /* Written back into the same inode, whose owner stays. */
                if (!exists || !S_ISREG(st.st_mode) || !nsr_ident_is(&rs->orig, &st) ||
                    (!force && !live_matches(p, rs->path))) {
                        refuse(p, rs->path);
                        return 0;
                }
                add_undo_step(p, NSR_STEP_WRITE, rs->path, lmnt, &st, &sst)->copy = false;
                return 0;
        case NSR_STEP_META:
                if (!exists || !nsr_ident_is(&rs->orig, &st) || (!force && !live_matches(p, rs->path))) {
                        refuse(p, rs->path);
                        return 0;
                }
                r = undo_meta(p, rs, lp, leaf, &st);
                return r < 0 ? nsr_txn_path_error(err, r, "cannot read the xattrs of", rs->path) : 0;
        case _NSR_STEP_OP_MAX:
        case _NSR_STEP_OP_INVALID:
                break;
        }
        return nsr_txn_path_error(err, EINVAL, "an invalid step in the journal at", rs->path);
}

int nsr_commit_undo(const nsr_undo_opts *o, nsr_undo_result *ret, nsr_error *err) {
        if (!o || !ret || o->project_fd < 0 || o->run_fd < 0 || o->undo_run_fd < 0 || !o->project_path ||
            o->project_path[0] != '/')
                return nsr_error_setx(err, EINVAL, "nsr_commit_undo: invalid arguments");
        struct stat a, b;
        if (fstat(o->run_fd, &a) < 0 || fstat(o->undo_run_fd, &b) < 0)
                return nsr_error_set(err, errno, "cannot stat the run dirs");
        if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                return nsr_error_setx(err, EINVAL, "an undo needs a run dir of its own");
        char name[32];
        snprintf(name, sizeof(name), "journal/p%u", o->project_index);
        _cleanup_close_ int jfd = openat(o->run_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (jfd < 0)
                return nsr_error_set(err, errno, "the run has no journal for project %u", o->project_index);
        _cleanup_(nsr_journal_freep) nsr_journal *rj = NULL;
        int r = nsr_journal_read(jfd, false, &rj, err);
        if (r < 0)
                return r;
        if (!rj->plan_valid || !rj->done || rj->rolled_back)
                return nsr_error_setx(err, ENOENT, "the run's apply to project %u did not complete", o->project_index);
        if (!streq(rj->project, o->project_path))
                return nsr_error_setx(err, EINVAL, "the run applied to another project");

        _cleanup_(uplanner_done) uplanner p = { .o = o, .rb_fd = -1 };
        {
                _cleanup_close_ int adir = openat(o->run_fd, "applied", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (adir < 0)
                        return nsr_error_set(err, errno, "the run has no fingerprints");
                snprintf(name, sizeof(name), "p%u", o->project_index);
                r = nsr_applied_read(adir, name, &p.a, err);
                if (r < 0)
                        return r;
        }
        snprintf(name, sizeof(name), "backup/p%u", o->project_index);
        p.rb_fd = openat(o->run_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (p.rb_fd < 0 && errno != ENOENT)
                return nsr_error_set(err, errno, "cannot open the run's backups");
        r = nsr_txn_check_journal_slot(o->undo_run_fd, o->project_index, err);
        if (r < 0)
                return r;
        _cleanup_close_ int backup_fd = nsr_txn_open_backup_root(o->undo_run_fd, o->project_index, err);
        if (backup_fd < 0)
                return backup_fd;

        _cleanup_(nsr_journal_freep) nsr_journal *u = nsr_journal_new();
        p.u = u;
        nsr_journal_token_new(u->token);
        u->undo = true;
        u->project = nsr_strdup(o->project_path);
        u->index = o->project_index;
        clock_gettime(CLOCK_REALTIME_COARSE, &u->run_start);
        u->undoes = nsr_txnfs_abs_path(o->run_fd);
        load_undo_restores(&p, u->undoes);
        if (p.rb_fd >= 0) {
                struct stat st;
                if (fstat(p.rb_fd, &st) < 0)
                        return nsr_error_set(err, errno, "cannot stat the run's backups");
                u->source = nsr_txnfs_abs_path(p.rb_fd);
                u->source_dev = (uint64_t) st.st_dev;
                u->source_ino = (uint64_t) st.st_ino;
                if ((r = nsr_txnfs_mnt_id(p.rb_fd, &p.mnt_src)) < 0)
                        return nsr_error_set(err, -r, "cannot find the mount of the run's backups");
        }
        if ((r = nsr_txnfs_mnt_id(backup_fd, &p.mnt_backup)) < 0)
                return nsr_error_set(err, -r, "cannot find the mount of the undo's backups");
        for (size_t k = 0; k < rj->n_steps; k++) {
                r = plan_undo_step(&p, &rj->steps[k], err);
                if (r < 0)
                        return r;
        }
        struct stat pst;
        if (fstat(o->project_fd, &pst) < 0)
                return nsr_error_set(err, errno, "cannot stat the project");
        nsr_undo_result res = { 0 };
        nsr_txn t = {
                .j = u,
                .project_fd = o->project_fd,
                .run_fd = o->undo_run_fd,
                .src_fd = p.rb_fd,
                .backup_fd = backup_fd,
                .journal_fd = -1,
                .project_dev = pst.st_dev,
                .stats = &res.stats,
                .state_fd = o->state_fd,
                .run_id = o->undo_run_id,
        };
        res.stats.steps = u->n_steps;
        r = nsr_txn_run(&t, err);
        if (r < 0)
                return r;
        res.restored = u->n_steps;
        res.refused = TAKE_PTR(p.refused);
        *ret = res;
        return 0;
}

void nsr_undo_result_done(nsr_undo_result *r) {
        if (!r)
                return;
        nsr_strv_free(r->refused);
        *r = (nsr_undo_result){ 0 };
}

/* ---- changes the command made live ----------------------------------------------------------- */

static int open_snapshot(const nsr_live_opts *o, nsr_error *err) {
        char name[32];
        snprintf(name, sizeof(name), "backup/p%u", o->project_index);
        int fd = openat(o->run_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? nsr_error_set(err, errno, "cannot open the snapshot %s", name) : fd;
}

/* Puts one protected path back as the snapshot has it. */
static int revert_one(const nsr_change *c, const nsr_live_opts *o, int snap, bool *ret_subtree) {
        const char *leaf = NULL;
        _cleanup_close_ int lp = nsr_txnfs_open_parent(o->project_fd, c->path, &leaf);
        if (lp < 0)
                return lp;
        *ret_subtree = false;
        if (c->kind == NSR_CHANGE_METADATA_CHANGED && c->type == NSR_ENTRY_DIR && c->old.type == NSR_ENTRY_DIR) {
                /* A dir that stays: its entries are changes of their own. */
                _cleanup_close_ int fd = openat(lp, leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                return fd < 0 ? -errno : nsr_txnfs_fd_chmod(fd, c->old.mode);
        }
        *ret_subtree = true;
        int r = 0;
        if (c->kind != NSR_CHANGE_DELETED && (r = nsr_txnfs_rm_rf(lp, leaf)) < 0)
                return r;
        if (c->kind == NSR_CHANGE_CREATED)
                return 0;
        const char *sleaf = NULL;
        _cleanup_close_ int sp = nsr_txnfs_open_parent(snap, c->path, &sleaf);
        if (sp < 0)
                return sp;
        /* Out of the snapshot (a rename when it shares the project's file
         * system): a protected path is never a backup the undo needs. */
        return nsr_txnfs_move_aside(sp, sleaf, lp, leaf, NULL);
}

int nsr_commit_revert_live(const nsr_changeset *cs, const nsr_live_opts *o, char ***ret_failed, nsr_error *err) {
        if (!cs || !o || o->project_fd < 0 || o->run_fd < 0)
                return nsr_error_setx(err, EINVAL, "nsr_commit_revert_live: invalid arguments");
        _cleanup_close_ int snap = open_snapshot(o, err);
        if (snap < 0)
                return snap;
        char **failed = NULL;
        const char *done = NULL;
        for (size_t i = 0; i < cs->n_changes; i++) {
                const nsr_change *c = &cs->changes[i];
                if (done && nsr_path_is_below(c->path, done))
                        continue;
                bool subtree = false;
                int r = revert_one(c, o, snap, &subtree);
                if (r < 0) {
                        _cleanup_free_ char *e = esc(c->path);
                        nsr_strv_push(&failed, nsr_asprintf("'%s': %s", e, strerror(-r)));
                        continue;
                }
                if (subtree)
                        done = c->path;
        }
        *ret_failed = failed;
        return 0;
}

/* The snapshot becomes the run's backup dir, holding only what the steps
 * replaced or removed: the snapshot is set aside as RUN/trash/pN, and the
 * originals move from it into a new backup/pN (renames, O(changes)). The
 * rest, O(project), is the trash's, which the caller removes off the
 * run's path (nsr_state_trash_background). */
static int snapshot_to_backup(const nsr_journal *j, const nsr_live_opts *o, nsr_error *err) {
        char name[32], trash[32];
        snprintf(name, sizeof(name), "backup/p%u", o->project_index);
        snprintf(trash, sizeof(trash), "trash/p%u", o->project_index);
        if (mkdirat(o->run_fd, "trash", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the trash dir");
        int r = nsr_txnfs_rename(o->run_fd, name, o->run_fd, trash, RENAME_NOREPLACE);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot set the snapshot aside");
        if (mkdirat(o->run_fd, name, 0700) < 0)
                return nsr_error_set(err, errno, "cannot create the backup dir");
        _cleanup_close_ int from = openat(o->run_fd, trash, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int to = openat(o->run_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (from < 0 || to < 0)
                return nsr_error_set(err, errno, "cannot open the backup dirs");
        for (size_t k = 0; k < j->n_steps; k++) {
                const nsr_step *s = &j->steps[k];
                if (!nsr_step_has_orig(s))
                        continue;
                const char *leaf = NULL, *tleaf = NULL;
                _cleanup_close_ int fp = nsr_txnfs_open_parent(from, s->path, &leaf);
                _cleanup_close_ int tp = fp < 0 ? fp : nsr_txnfs_open_parent_mkdir(to, s->path, &tleaf);
                r = tp < 0 ? tp : nsr_txnfs_rename(fp, leaf, tp, tleaf, RENAME_NOREPLACE);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot keep the original of", s->path);
        }
        return 0;
}

static int live_step(nsr_journal *j, nsr_step_op op, const char *path, const struct stat *live,
                     const struct stat *orig) {
        nsr_step *s = nsr_journal_add_step(j, op, path);
        if (op == NSR_STEP_META)
                s->orig = nsr_ident_from_stat(live);
        else if (orig)
                s->orig = nsr_ident_from_stat(orig);
        if (live && op != NSR_STEP_META) {
                s->new_id = nsr_ident_from_stat(live);
                s->tree = S_ISDIR(live->st_mode);
        }
        return 0;
}

/* A dir that stays, changed in place: the meta step an apply would have
 * made, from the snapshot's dir to the live one. */
static int live_meta(nsr_journal *j, const nsr_change *c, int lp, const char *leaf, int sp, const char *sleaf,
                     const struct stat *live) {
        nsr_xattr *lx = NULL, *sx = NULL;
        size_t nl = 0, ns = 0;
        int r = nsr_txnfs_user_xattrs(lp, leaf, &lx, &nl);
        if (r >= 0)
                r = nsr_txnfs_user_xattrs(sp, sleaf, &sx, &ns);
        if (r < 0) {
                nsr_txnfs_xattrs_free(lx, nl);
                return r;
        }
        live_step(j, NSR_STEP_META, c->path, live, NULL);
        nsr_step *s = &j->steps[j->n_steps - 1];
        s->old_mode = c->old.mode;
        s->new_mode = live->st_mode & 07777;
        s->old_uid = c->old.uid;
        s->old_gid = c->old.gid;
        s->new_uid = live->st_uid;
        s->new_gid = live->st_gid;
        s->chown = geteuid() == 0 && (c->old.uid != live->st_uid || c->old.gid != live->st_gid);
        for (size_t a = 0, b = 0; a < ns || b < nl;) {
                int cmp = a == ns ? 1 : b == nl ? -1 : strcmp(sx[a].name, lx[b].name);
                nsr_xattr_change x = { 0 };
                if (cmp < 0) {
                        x = (nsr_xattr_change){ .name = nsr_strdup(sx[a].name),
                                                .old_value = TAKE_PTR(sx[a].value),
                                                .old_len = sx[a].len };
                        a++;
                } else if (cmp > 0) {
                        x = (nsr_xattr_change){ .name = nsr_strdup(lx[b].name),
                                                .new_value = TAKE_PTR(lx[b].value),
                                                .new_len = lx[b].len };
                        b++;
                } else {
                        if (sx[a].len != lx[b].len || memcmp(sx[a].value, lx[b].value, sx[a].len) != 0)
                                x = (nsr_xattr_change){ .name = nsr_strdup(sx[a].name),
                                                        .old_value = TAKE_PTR(sx[a].value),
                                                        .old_len = sx[a].len,
                                                        .new_value = TAKE_PTR(lx[b].value),
                                                        .new_len = lx[b].len };
                        a++;
                        b++;
                }
                if (x.name) {
                        s->xattrs = nsr_realloc_array(s->xattrs, s->n_xattrs + 1, sizeof(*s->xattrs));
                        s->xattrs[s->n_xattrs++] = x;
                }
        }
        nsr_txnfs_xattrs_free(lx, nl);
        nsr_txnfs_xattrs_free(sx, ns);
        return 0;
}

static int sanitize_live_cb(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata) {
        (void) rel;
        (void) userdata;
        /* The protect stage put such entries back (revert); one that is
         * still there is never recorded as a change the project keeps. */
        if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode))
                return -EPERM;
        return nsr_txnfs_sanitize(dirfd, name, st);
}

/* Plans the step of change i from the live project and the snapshot. */
static int plan_live(nsr_journal *j, const nsr_changeset *cs, size_t i, const nsr_live_opts *o, int snap, size_t *next,
                     nsr_error *err) {
        const nsr_change *c = &cs->changes[i];
        *next = i + 1;
        const char *leaf = NULL, *sleaf = NULL;
        _cleanup_close_ int lp = nsr_txnfs_open_parent(o->project_fd, c->path, &leaf);
        if (lp < 0)
                return nsr_txn_path_error(err, lp, "cannot open the parent dir of", c->path);
        struct stat live, orig;
        bool have_live = fstatat(lp, leaf, &live, AT_SYMLINK_NOFOLLOW) == 0;
        if (!have_live && errno != ENOENT)
                return nsr_txn_path_error(err, errno, "cannot stat", c->path);
        _cleanup_close_ int sp = -1;
        bool have_orig = false;
        if (c->kind != NSR_CHANGE_CREATED) {
                sp = nsr_txnfs_open_parent(snap, c->path, &sleaf);
                if (sp < 0)
                        return nsr_txn_path_error(err, sp, "the snapshot lacks the parent dir of", c->path);
                have_orig = fstatat(sp, sleaf, &orig, AT_SYMLINK_NOFOLLOW) == 0;
                if (!have_orig)
                        return nsr_txn_path_error(err, errno, "the snapshot lacks", c->path);
        }
        if (c->kind != NSR_CHANGE_DELETED && !have_live)
                return nsr_txn_path_error(err, ENOENT, "changed again after the capture:", c->path);
        if (nsr_change_makes_special(c) ||
            (c->kind != NSR_CHANGE_DELETED && nsr_entry_type_from_mode(live.st_mode) == NSR_ENTRY_OTHER))
                return nsr_txn_path_error(err, EPERM,
                                          "a fifo, socket or device node never reaches the project:", c->path);
        if (c->kind == NSR_CHANGE_METADATA_CHANGED && S_ISDIR(live.st_mode) && S_ISDIR(orig.st_mode)) {
                int r = live_meta(j, c, lp, leaf, sp, sleaf, &live);
                return r < 0 ? nsr_txn_path_error(err, r, "cannot read the xattrs of", c->path) : 0;
        }
        *next = subtree_end(cs, i);
        if (c->kind == NSR_CHANGE_DELETED)
                return live_step(j, NSR_STEP_REMOVE, c->path, NULL, &orig);
        /* What an apply strips from a new entry, stripped here too; the
         * fingerprints are taken afterwards. */
        int r = S_ISDIR(live.st_mode) ? nsr_txnfs_walk(lp, leaf, c->path, NSR_TXNFS_WALK_FORCE, sanitize_live_cb, NULL)
                                      : nsr_txnfs_sanitize(lp, leaf, &live);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot strip privileges from", c->path);
        if (fstatat(lp, leaf, &live, AT_SYMLINK_NOFOLLOW) < 0)
                return nsr_txn_path_error(err, errno, "cannot stat", c->path);
        return live_step(j, c->kind == NSR_CHANGE_CREATED ? NSR_STEP_PLACE : NSR_STEP_REPLACE, c->path, &live,
                         have_orig ? &orig : NULL);
}

int nsr_commit_record_live(const nsr_changeset *cs, const nsr_live_opts *o, nsr_commit_result *ret, nsr_error *err) {
        if (!cs || !o || !ret || o->project_fd < 0 || o->run_fd < 0 || !o->project_path || o->project_path[0] != '/')
                return nsr_error_setx(err, EINVAL, "nsr_commit_record_live: invalid arguments");
        if (!cs->sorted)
                return nsr_error_setx(err, EINVAL, "the change set is not sorted");
        int r = nsr_txn_check_journal_slot(o->run_fd, o->project_index, err);
        if (r < 0)
                return r;
        _cleanup_close_ int snap = open_snapshot(o, err);
        if (snap < 0)
                return snap;
        struct stat pst;
        if (fstat(o->project_fd, &pst) < 0)
                return nsr_error_set(err, errno, "cannot stat the project");

        _cleanup_(nsr_journal_freep) nsr_journal *j = nsr_journal_new();
        nsr_journal_token_new(j->token);
        j->project = nsr_strdup(o->project_path);
        j->index = o->project_index;
        j->run_start = o->run_start;
        for (size_t i = 0; i < cs->n_changes;) {
                size_t next = i + 1;
                r = plan_live(j, cs, i, o, snap, &next, err);
                if (r < 0)
                        return r;
                i = next;
        }
        /* The backups first: a journal that says "done" must find them. */
        r = snapshot_to_backup(j, o, err);
        if (r < 0)
                return r;
        snap = safe_close(snap);
        snap = open_snapshot(o, err);
        if (snap < 0)
                return snap;
        nsr_commit_result res = { .applied = cs->n_changes };
        nsr_txn t = {
                .j = j,
                .project_fd = o->project_fd,
                .run_fd = o->run_fd,
                .src_fd = -1,
                .backup_fd = snap,
                .journal_fd = -1,
                .project_dev = pst.st_dev,
                .stats = &res.stats,
        };
        res.stats.steps = j->n_steps;
        r = nsr_txn_record(&t, err);
        if (r < 0)
                return r;
        *ret = res;
        return 0;
}
