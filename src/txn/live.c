/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Changes a command made live (in place, against a snapshot): put back
 * (nsr_commit_revert_live), or recorded as an apply that is done, so that
 * undo works (nsr_commit_record_live). */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "txn/commit-internal.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/txn.h"
#include "txn/txnfs.h"

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
