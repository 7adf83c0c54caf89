/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Applying a change set (nsr_commit_apply): conflicts, the plan, the upper
 * dir's preparation. Recovery is recover.c, undo undo.c, live writes
 * live.c. The transaction itself (journal, steps, rollback) is txn.c, whose
 * top comment describes the protocol and the file formats. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "txn/commit-internal.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/txn.h"
#include "txn/txnfs.h"

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
        int r = commit_list_dir(jdir, NULL, &names);
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
                if (nsr_path_under(s, ".git"))
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
