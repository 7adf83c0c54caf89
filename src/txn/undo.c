/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Undo (nsr_commit_undo): a run's applied changes put back from its
 * backups, as a transaction of its own, entry by entry only where the
 * project still carries what the run wrote. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "txn/commit-internal.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/txn.h"
#include "txn/txnfs.h"

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
        if (runs < 0 || commit_list_dir(runs, is_run_name, &ids) < 0)
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
