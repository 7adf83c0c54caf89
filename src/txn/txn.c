/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The transaction engine under commit.c: the journal protocol, steps,
 * rollback and the recovery of one journal.
 *
 * ## Steps
 * A plan is a list of steps, each on one path, in change-set order
 * (parents before children); no step's path is below another step's path
 * unless that other step is a META step:
 *   place    a new entry where the project has none
 *   replace  the original goes to the backup, the new entry takes its place
 *   remove   the original goes to the backup
 *   meta     a dir's mode, owner and user xattrs, changed in place
 *   write    a file the user may write but whose owner the apply could not
 *            keep (another uid, a group outside the sandbox's id map): its
 *            original content is copied to B while preparing, then the new
 *            content is written into L's inode, which keeps its owner, mode
 *            and links, as the user's own write would. Rollback writes B's
 *            content back into the same inode (when it differs), so it is
 *            safe to repeat; L's identity never changes, so only B tells
 *            whether the step was prepared.
 * A dir created as a whole (all of its subtree "created") is one place step:
 * one rename whatever its size. An entry of a step can be in four places:
 *   L  the live path                      PROJECT/PATH
 *   S  where the new entry comes from     rename steps: SOURCE/PATH (the
 *                                          upper dir, or for an undo the
 *                                          undone run's backup dir)
 *                                          copy steps: PROJECT/DIR/.nsrun.T.K.new
 *   B  where the original goes            rename steps: RUN/backup/pN/PATH
 *                                          copy steps: PROJECT/DIR/.nsrun.T.K.old
 *   R  a spare name for rollbacks         PROJECT/DIR/.nsrun.T.K.rst
 * (T is the transaction's token, K the step number.) A step is a "copy
 * step" when the live parent dir is not on the mount of S or of the backup
 * dir, so rename(2) would fail with EXDEV: then the new entry is copied to
 * its S name beside the target and the original is copied to
 * RUN/backup/pN/PATH before anything changes, and only renames within the
 * project's mount follow.
 *
 * The forward step is a rename: place S->L (RENAME_NOREPLACE); replace
 * S<->L (RENAME_EXCHANGE, so L is never missing), then, for rename steps,
 * S->B; remove L->B. Nothing in the project is ever unlinked or
 * overwritten before the transaction is done.
 *
 * ## Journal: RUN/journal/pN, text, one record a line
 *   nsrun-journal 1
 *   token HEX16                  random; names the temporary entries
 *   kind apply|undo
 *   project HEX                  the project's absolute path, hex-encoded
 *   index N
 *   run-start SEC NSEC
 *   source HEX|- DEV INO         the root S paths are relative to
 *   undoes HEX|-                 an undo: the run dir it undoes
 *   steps COUNT
 *   s K OP FLAGS PATH ORIG NEW   one per step, K = 1..COUNT; FLAGS is "-" or
 *                                c (copy step) and t (new entry is a dir tree);
 *                                PATH is hex (any byte but NUL survives);
 *                                ORIG and NEW are "-" or DEV:INO:TYPE:MODE
 *                                (TYPE f d l o, MODE octal)
 *   m K OMODE OUID OGID NMODE NUID NGID CHOWN   after a meta step
 *   x K NAME OLD NEW             after a meta step, per xattr; NAME hex,
 *                                values "-" (absent) or v followed by hex
 *   plan CRC32                   of every byte above; fsync(file, dir) here
 *   n K DEV:INO:TYPE:MODE        a copy step's copy, once made
 *   prepared                     all copies made (fsync)
 *   done                         after one syncfs per file system (fsync)
 *   swept                        a copy transaction's temporary entries removed
 *   r K SEC NSEC                 after a rollback: step K's original is back
 *                                at its live path with this ctime
 *   rolled-back                  after the rollback and a syncfs (fsync)
 * A journal without a valid plan line was torn before it was durable:
 * nothing in the project was touched yet. Limits: NSR_JOURNAL_MAX bytes,
 * NSR_JOURNAL_LINE_MAX per line.
 *
 * ## Rollback and recovery
 * Undoing a step never trusts memory: it looks at L, S, B and R, tells the
 * original from the new entry by (dev, inode, type) as journaled, and moves
 * them until the original is at L and the new entry at S (rename steps) or
 * removed (copy steps, whose new entry is a copy). Each move is one rename,
 * and the classification is redone after each, so a crash at any point is
 * undone by running the same code again. When the source dir is gone, new
 * entries are parked in RUN/rollback/pN instead.
 *
 * Recovery always rolls back, never forward: a journal that is not done
 * means nsrun died before it could report the apply, the user never saw it
 * succeed, and the run (its upper dir restored) can be applied again. A
 * roll-forward would need every copy complete and durable, which a crash
 * during a copy does not give. It is safe because every step keeps both
 * versions until "done" is durable: originals are moved (not deleted) and
 * the new entries' sources are moved (rename steps) or copied (copy steps),
 * and every move refuses to replace anything.
 *
 * Moving an original away and back changes its ctime, which the conflict
 * check reads as a host change. So a rollback records the ctime it left
 * ("r" lines), and a new apply of the same run accepts an entry whose
 * (dev, inode, ctime) is exactly a recorded one.
 *
 * ## Durability
 * The plan is fsynced (with its dir) before the project changes. A copy
 * transaction also fsyncs its journal at "prepared", so the inodes of the
 * copies are known before any of them is renamed into the project. After
 * the last step comes one syncfs() per file system (the project's, the run
 * dir's if different, sync() if a step's dir is on another mount inside the
 * project), then "done" is fsynced. No per-file fsync.
 *
 * ## Fingerprints: RUN/applied/pN
 *   nsrun-applied 1
 *   f|m PATH TYPE DEV INO SIZE MSEC MNSEC CSEC CNSEC MODE UID GID
 *   end
 * f: an entry the transaction wrote (every entry of a dir tree); m: a dir
 * changed in place (only inode, mode and owner are compared). */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/utf8.h"
#include "txn/journal.h"
#include "txn/state.h"
#include "txn/txn-internal.h"
#include "txn/txn.h"
#include "txn/txnfs.h"

/* ---- test hooks ------------------------------------------------------------------ */

#ifdef NSR_TEST_HOOKS
static long hook_value(const char *name) {
        const char *v = getenv(name);
        uint64_t n;
        if (!v || nsr_parse_u64(v, &n) < 0 || n > 1000000000)
                return -1;
        return (long) n;
}
/* Dies like a SIGKILL would: no cleanup, no atexit handlers. */
#define HOOK_CRASH(name, k, code)                                                                                      \
        do {                                                                                                           \
                if (hook_value(name) == (long) (k))                                                                    \
                        _exit(code);                                                                                   \
        } while (0)
#define HOOK_ENOSPC(k) (hook_value("NSRUN_TEST_ENOSPC_AT") == (long) (k))
#else
#define HOOK_CRASH(name, k, code)                                                                                      \
        do {                                                                                                           \
        } while (0)
#define HOOK_ENOSPC(k) false
#endif

/* ---- the pending index --------------------------------------------------------------
 *
 * A recovery must find every journal that may be unfinished. Scanning every
 * run for them made each start O(runs kept): 230 runs were 460 opens, more
 * than a millisecond. So a transaction first marks its journal with an
 * empty file STATE/pending/RUNID.pN, durable before the journal (and so
 * before the project) is touched, and removes the mark once the journal is
 * final (done and swept, or rolled back). A recovery reads only the marks.
 * A leftover mark costs one journal read; a missing one cannot happen, as
 * the mark comes first. */

static int fsync_dir_at(int dirfd, const char *name);

void nsr_txn_pending_name(const char *run_id, unsigned index, char *buf, size_t len) {
        snprintf(buf, len, "%s.p%u", run_id, index);
}

static int pending_mark(nsr_txn *t) {
        if (!t->run_id)
                return 0;
        if (mkdirat(t->state_fd, "pending", 0700) < 0 && errno != EEXIST)
                return -errno;
        char name[NSR_RUN_ID_MAX + 32], rel[NSR_RUN_ID_MAX + 48];
        nsr_txn_pending_name(t->run_id, t->j->index, name, sizeof(name));
        snprintf(rel, sizeof(rel), "pending/%s", name);
        int fd = openat(t->state_fd, rel, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        close(fd);
        int r = fsync_dir_at(t->state_fd, "pending");
        return r < 0 ? r : fsync_dir_at(t->state_fd, ".");
}

static void pending_clear(nsr_txn *t) {
        if (!t->run_id)
                return;
        char name[NSR_RUN_ID_MAX + 32], rel[NSR_RUN_ID_MAX + 48];
        nsr_txn_pending_name(t->run_id, t->j->index, name, sizeof(name));
        snprintf(rel, sizeof(rel), "pending/%s", name);
        (void) unlinkat(t->state_fd, rel, 0);
}

/* ---- small helpers ---------------------------------------------------------------- */

static char *esc(const char *path) {
        return nsr_utf8_escape(path);
}

static int fsync_dir_at(int dirfd, const char *name) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (fsync(fd) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

/* ---- transactions ------------------------------------------------------------------------ */

typedef enum at {
        AT_NONE,
        AT_ORIG,
        AT_NEW,
        AT_OTHER,
} at;

typedef struct slot {
        int dirfd;
        const char *name;
} slot;

typedef struct slots {
        int live_fd, src_fd, bak_fd; /* owned */
        char s_tmp[96], b_tmp[96], r_tmp[96];
        slot L, S, B, R;
} slots;

static void slots_done(slots *s) {
        s->live_fd = safe_close(s->live_fd);
        s->src_fd = safe_close(s->src_fd);
        s->bak_fd = safe_close(s->bak_fd);
}

/* Opens the parent dirs of a step's places. forward: we are about to do the
 * step, so S and B parents are made; otherwise (rollback) a missing live
 * parent or backup parent is "nothing there". */
static int slots_open(nsr_txn *t, size_t k, bool forward, slots *ret) {
        const nsr_step *s = &t->j->steps[k];
        *ret = (slots){ .live_fd = -1, .src_fd = -1, .bak_fd = -1 };
        const char *leaf = NULL;
        int fd = nsr_txnfs_open_parent(t->project_fd, s->path, &leaf);
        if (fd < 0 && (forward || (fd != -ENOENT && fd != -ENOTDIR && fd != -ELOOP)))
                return fd;
        if (fd < 0) {
                const char *sl = strrchr(s->path, '/');
                leaf = sl ? sl + 1 : s->path;
        }
        ret->live_fd = fd;
        txn_tmpname(ret->s_tmp, sizeof(ret->s_tmp), t->j, k, "new");
        txn_tmpname(ret->b_tmp, sizeof(ret->b_tmp), t->j, k, "old");
        txn_tmpname(ret->r_tmp, sizeof(ret->r_tmp), t->j, k, "rst");
        ret->L = (slot){ ret->live_fd, leaf };
        ret->R = (slot){ ret->live_fd, ret->r_tmp };
        if (s->copy) {
                ret->S = (slot){ ret->live_fd, ret->s_tmp };
                ret->B = (slot){ ret->live_fd, ret->b_tmp };
                return 0;
        }
        ret->S = ret->B = (slot){ -1, leaf };
        if (nsr_step_has_new(s)) {
                /* Rolling back, the source's parent may have to be made
                 * again (a park dir starts empty). */
                const char *n = NULL;
                fd = t->src_fd < 0 ? -ENOENT : nsr_txnfs_open_parent_mkdir(t->src_fd, s->path, &n);
                if (fd < 0) {
                        slots_done(ret);
                        return fd;
                }
                ret->src_fd = fd;
                ret->S = (slot){ fd, n };
        }
        if (nsr_step_has_orig(s)) {
                const char *n = NULL;
                fd = forward ? nsr_txnfs_open_parent_mkdir(t->backup_fd, s->path, &n)
                             : nsr_txnfs_open_parent(t->backup_fd, s->path, &n);
                if (fd < 0 && (forward || (fd != -ENOENT && fd != -ENOTDIR))) {
                        slots_done(ret);
                        return fd;
                }
                ret->bak_fd = fd < 0 ? -1 : fd;
                ret->B = (slot){ ret->bak_fd, n ? n : leaf };
        }
        return 0;
}

static int classify(slot x, const nsr_step *s, at *ret) {
        struct stat st;
        if (x.dirfd < 0) {
                *ret = AT_NONE;
                return 0;
        }
        if (fstatat(x.dirfd, x.name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                *ret = AT_NONE;
                return 0;
        }
        if (nsr_ident_is(&s->orig, &st))
                *ret = AT_ORIG;
        else if (nsr_ident_is(&s->new_id, &st))
                *ret = AT_NEW;
        else
                *ret = AT_OTHER;
        return 0;
}

static int mv(nsr_txn *t, slot a, slot b, unsigned flags) {
        if (a.dirfd < 0 || b.dirfd < 0)
                return -ENOENT;
        int r = nsr_txnfs_rename(a.dirfd, a.name, b.dirfd, b.name, flags);
        if (r == 0)
                t->stats->renames++;
        return r;
}

/* Exchanges x and L; without RENAME_EXCHANGE, L goes to R first. */
static int exch(nsr_txn *t, slots *sl, slot x) {
        int r = mv(t, x, sl->L, RENAME_EXCHANGE);
        if (r != -EINVAL && r != -EOPNOTSUPP)
                return r;
        r = mv(t, sl->L, sl->R, RENAME_NOREPLACE);
        if (r < 0)
                return r;
        return mv(t, x, sl->L, RENAME_NOREPLACE);
}

int nsr_txn_path_error(nsr_error *err, int r, const char *what, const char *path) {
        _cleanup_free_ char *p = esc(path);
        return nsr_error_set(err, r, "%s '%s'", what, p);
}

/* A dir's mode, owner and xattrs: the new values (undo false) or the old. */
static int meta_set(nsr_txn *t, const nsr_step *s, bool undo, nsr_error *err) {
        _cleanup_close_ int fd = nsr_txnfs_open(t->project_fd, s->path, O_PATH | O_DIRECTORY);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) < 0)
                return nsr_txn_path_error(err, errno, "cannot stat", s->path);
        if (fd < 0 || !nsr_ident_is(&s->orig, &st)) {
                if (undo)
                        return 0; /* not ours any more: nothing to put back */
                return nsr_txn_path_error(err, fd < 0 ? -fd : EBUSY, "changed on the host during the apply:", s->path);
        }
        if (s->chown &&
            fchownat(fd, "", undo ? s->old_uid : s->new_uid, undo ? s->old_gid : s->new_gid, AT_EMPTY_PATH) < 0)
                return nsr_txn_path_error(err, errno, "cannot change the owner of", s->path);
        int r = nsr_txnfs_fd_chmod(fd, undo ? s->old_mode : s->new_mode);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot change the mode of", s->path);
        for (size_t i = 0; i < s->n_xattrs; i++) {
                const nsr_xattr_change *x = &s->xattrs[i];
                r = undo ? nsr_txnfs_fd_setxattr(fd, x->name, x->old_value, x->old_len)
                         : nsr_txnfs_fd_setxattr(fd, x->name, x->new_value, x->new_len);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot change the xattrs of", s->path);
        }
        return 0;
}

/* Phase 1 of a copy step: the new entry copied beside the target, the
 * original copied into the backup dir. Nothing in the project changes
 * (apart from the temporary name). */
static int step_prepare(nsr_txn *t, size_t k, nsr_error *err) {
        nsr_step *s = &t->j->steps[k];
        if (s->op == NSR_STEP_WRITE)
                return txn_write_prepare(t, k, err);
        _cleanup_(slots_done) slots sl = { .live_fd = -1, .src_fd = -1, .bak_fd = -1 };
        int r = slots_open(t, k, true, &sl);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot open the parent dir of", s->path);
        if (nsr_step_has_orig(s)) {
                at l;
                r = classify(sl.L, s, &l);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot stat", s->path);
                if (l != AT_ORIG)
                        return nsr_txn_path_error(err, EBUSY, "changed on the host during the apply:", s->path);
                const char *n = NULL;
                _cleanup_close_ int bfd = nsr_txnfs_open_parent_mkdir(t->backup_fd, s->path, &n);
                if (bfd < 0)
                        return nsr_txn_path_error(err, -bfd, "cannot create the backup dir of", s->path);
                char tmp[96];
                txn_tmpname(tmp, sizeof(tmp), t->j, k, "tmp");
                (void) nsr_txnfs_rm_rf(bfd, tmp);
                r = nsr_txnfs_copy(sl.L.dirfd, sl.L.name, bfd, tmp, true, &t->stats->copied);
                if (r >= 0)
                        r = nsr_txnfs_rename(bfd, tmp, bfd, n, RENAME_NOREPLACE);
                if (r < 0) {
                        (void) nsr_txnfs_rm_rf(bfd, tmp);
                        return nsr_txn_path_error(err, r, "cannot back up (by copying)", s->path);
                }
        }
        if (nsr_step_has_new(s)) {
                const char *n = NULL;
                _cleanup_close_ int sfd = t->src_fd < 0 ? -ENOENT : nsr_txnfs_open_parent(t->src_fd, s->path, &n);
                if (sfd < 0)
                        return nsr_txn_path_error(err, -sfd, "cannot open the new version of", s->path);
                r = nsr_txnfs_rm_rf(sl.S.dirfd, sl.S.name);
                if (r >= 0)
                        r = nsr_txnfs_copy(sfd, n, sl.S.dirfd, sl.S.name, t->j->undo, &t->stats->copied);
                struct stat st;
                if (r >= 0 && fstatat(sl.S.dirfd, sl.S.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = -errno;
                if (r >= 0) {
                        s->new_id = nsr_ident_from_stat(&st);
                        r = nsr_journal_append_new(t->journal_fd, k + 1, &s->new_id);
                }
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot copy the new version of", s->path);
        }
        return 0;
}

void txn_note_dev(nsr_txn *t, int dirfd) {
        struct stat st;
        if (dirfd >= 0 && fstat(dirfd, &st) == 0 && st.st_dev != t->project_dev)
                t->other_fs = true;
}

/* Phase 2: the step itself. */
static int step_forward(nsr_txn *t, size_t k, nsr_error *err) {
        const nsr_step *s = &t->j->steps[k];
        if (s->op == NSR_STEP_META) {
                if (HOOK_ENOSPC(k + 1))
                        return nsr_txn_path_error(err, ENOSPC, "test hook: cannot apply", s->path);
                return meta_set(t, s, false, err);
        }
        if (s->op == NSR_STEP_WRITE) {
                if (HOOK_ENOSPC(k + 1))
                        return nsr_txn_path_error(err, ENOSPC, "test hook: cannot apply", s->path);
                return txn_write_forward(t, s, err);
        }
        _cleanup_(slots_done) slots sl = { .live_fd = -1, .src_fd = -1, .bak_fd = -1 };
        int r = slots_open(t, k, true, &sl);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot open the parent dir of", s->path);
        txn_note_dev(t, sl.live_fd);
        at l;
        r = classify(sl.L, s, &l);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot stat", s->path);
        if (s->op == NSR_STEP_PLACE) {
                if (l != AT_NONE)
                        return nsr_txn_path_error(err, EEXIST, "created on the host during the apply:", s->path);
                if (HOOK_ENOSPC(k + 1))
                        return nsr_txn_path_error(err, ENOSPC, "test hook: cannot apply", s->path);
                r = mv(t, sl.S, sl.L, RENAME_NOREPLACE);
                return r < 0 ? nsr_txn_path_error(err, r, "cannot move into place", s->path) : 0;
        }
        if (l != AT_ORIG)
                return nsr_txn_path_error(err, EBUSY, "changed on the host during the apply:", s->path);
        if (s->op == NSR_STEP_REMOVE) {
                if (HOOK_ENOSPC(k + 1))
                        return nsr_txn_path_error(err, ENOSPC, "test hook: cannot apply", s->path);
                r = mv(t, sl.L, sl.B, RENAME_NOREPLACE);
                return r < 0 ? nsr_txn_path_error(err, r, "cannot move to the backup", s->path) : 0;
        }
        /* Replace: exchange, so the live path always has one version. */
        r = mv(t, sl.S, sl.L, RENAME_EXCHANGE);
        if (r == -EINVAL || r == -EOPNOTSUPP) {
                r = mv(t, sl.L, sl.B, RENAME_NOREPLACE);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot move to the backup", s->path);
                if (HOOK_ENOSPC(k + 1))
                        return nsr_txn_path_error(err, ENOSPC, "test hook: cannot apply", s->path);
                r = mv(t, sl.S, sl.L, RENAME_NOREPLACE);
                return r < 0 ? nsr_txn_path_error(err, r, "cannot move into place", s->path) : 0;
        }
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot move into place", s->path);
        if (HOOK_ENOSPC(k + 1))
                return nsr_txn_path_error(err, ENOSPC, "test hook: cannot apply", s->path);
        if (s->copy)
                return 0; /* the original waits at S until the sweep */
        r = mv(t, sl.S, sl.B, RENAME_NOREPLACE);
        return r < 0 ? nsr_txn_path_error(err, r, "cannot move to the backup", s->path) : 0;
}

/* Undoes step k, whatever part of it was done: see the top of the file. */
static int step_back(nsr_txn *t, size_t k, nsr_error *err) {
        const nsr_step *s = &t->j->steps[k];
        if (s->op == NSR_STEP_META)
                return meta_set(t, s, true, err);
        if (s->op == NSR_STEP_WRITE)
                return txn_write_back(t, s, err);
        _cleanup_(slots_done) slots sl = { .live_fd = -1, .src_fd = -1, .bak_fd = -1 };
        int r = slots_open(t, k, false, &sl);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot open the dirs to roll back", s->path);
        at l = AT_NONE, as = AT_NONE, ab = AT_NONE, ar = AT_NONE;
        for (unsigned iter = 0;; iter++) {
                if ((r = classify(sl.L, s, &l)) < 0 || (r = classify(sl.S, s, &as)) < 0 ||
                    (r = classify(sl.B, s, &ab)) < 0 || (r = classify(sl.R, s, &ar)) < 0)
                        return nsr_txn_path_error(err, r, "cannot stat while rolling back", s->path);
                if (iter == 8)
                        break;
                if (l == AT_NEW) {
                        if (s->orig.set) {
                                if (as != AT_ORIG && ab != AT_ORIG)
                                        return nsr_txn_path_error(
                                                err, EIO, "cannot roll back: the original is missing:", s->path);
                                r = exch(t, &sl, as == AT_ORIG ? sl.S : sl.B);
                        } else if (!s->copy && as == AT_NONE)
                                r = mv(t, sl.L, sl.S, RENAME_NOREPLACE);
                        else if (ar == AT_NONE)
                                r = mv(t, sl.L, sl.R, RENAME_NOREPLACE);
                        else
                                r = -EEXIST;
                } else if (s->orig.set && l == AT_NONE && (ab == AT_ORIG || as == AT_ORIG || ar == AT_ORIG))
                        r = mv(t, ab == AT_ORIG ? sl.B : as == AT_ORIG ? sl.S : sl.R, sl.L, RENAME_NOREPLACE);
                else if (!s->copy && as == AT_NONE && (ab == AT_NEW || ar == AT_NEW))
                        r = mv(t, ab == AT_NEW ? sl.B : sl.R, sl.S, RENAME_NOREPLACE);
                else
                        break;
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot roll back", s->path);
        }
        if (l == AT_NEW || (s->orig.set && l != AT_ORIG && (as == AT_ORIG || ab == AT_ORIG || ar == AT_ORIG)))
                return nsr_txn_path_error(err, EEXIST, "cannot roll back: the host put something at", s->path);
        if (!s->copy && (ar == AT_NEW || ab == AT_NEW))
                return nsr_txn_path_error(err, EEXIST, "cannot roll back: the source path is taken for", s->path);
        /* Copy steps: what is left at S, B and R is a copy of the new entry
         * or a partial copy, never the original (checked above). */
        if (!s->copy)
                return 0;
        slot left[] = { sl.S, sl.B, sl.R };
        at what[] = { as, ab, ar };
        for (size_t i = 0; i < ELEMENTSOF(left); i++) {
                if (what[i] == AT_NONE || what[i] == AT_ORIG)
                        continue;
                r = nsr_txnfs_rm_rf(left[i].dirfd, left[i].name);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot remove a temporary copy of", s->path);
        }
        return 0;
}

/* Rolls back steps [0, n) in reverse. Every step is tried; the first error
 * is returned. */
static int rollback_steps(nsr_txn *t, size_t n, bool recovery, nsr_error *err) {
        int first = 0;
        size_t undone = 0;
        for (size_t k = n; k-- > 0;) {
                nsr_error e = { 0 };
                int r = step_back(t, k, &e);
                if (r < 0 && first == 0) {
                        first = r;
                        *err = e;
                }
                undone++;
                if (recovery)
                        HOOK_CRASH("NSRUN_TEST_CRASH_RECOVER_AT", undone, 98);
        }
        return first;
}

/* syncfs() of the file system dirfd is on; a dir we cannot open for
 * reading (syncfs refuses O_PATH fds) asks for a sync() instead. syncfs
 * reports writeback errors (EIO, ENOSPC): those fail the transaction. */
static int syncfs_at(nsr_txn *t, int dirfd) {
        _cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                t->other_fs = true;
                return 0;
        }
        return syncfs(fd) < 0 ? -errno : 0;
}

/* One syncfs per file system: the project's, the run dir's if different,
 * and sync() when a step's dir is on yet another one. */
static int sync_all(nsr_txn *t) {
        int r = syncfs_at(t, t->project_fd);
        struct stat st;
        if (r >= 0 && fstat(t->run_fd, &st) == 0 && st.st_dev != t->project_dev)
                r = syncfs_at(t, t->run_fd);
        if (r >= 0 && t->other_fs)
                sync();
        return r;
}

static int fp_add(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata) {
        (void) dirfd;
        (void) name;
        nsr_applied_add(userdata, rel, st, false);
        return 0;
}

static int write_fingerprints(nsr_txn *t, nsr_error *err) {
        _cleanup_(nsr_applied_done) nsr_applied a = { 0 };
        for (size_t k = 0; k < t->j->n_steps; k++) {
                const nsr_step *s = &t->j->steps[k];
                if (s->op == NSR_STEP_REMOVE)
                        continue;
                const char *leaf = NULL;
                _cleanup_close_ int lp = nsr_txnfs_open_parent(t->project_fd, s->path, &leaf);
                if (lp < 0)
                        return nsr_txn_path_error(err, -lp, "cannot fingerprint", s->path);
                struct stat st;
                int r = 0;
                if (s->op == NSR_STEP_META || !s->tree) {
                        if (fstatat(lp, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                r = -errno;
                        else
                                nsr_applied_add(&a, s->path, &st, s->op == NSR_STEP_META);
                } else
                        r = nsr_txnfs_walk(lp, leaf, s->path, NSR_TXNFS_WALK_SKIP_UNREADABLE, fp_add, &a);
                if (r < 0)
                        return nsr_txn_path_error(err, r, "cannot fingerprint", s->path);
        }
        if (mkdirat(t->run_fd, "applied", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the applied dir");
        _cleanup_close_ int dfd = openat(t->run_fd, "applied", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return nsr_error_set(err, errno, "cannot open the applied dir");
        char name[32];
        snprintf(name, sizeof(name), "p%u", t->j->index);
        return nsr_applied_write(dfd, name, &a, err);
}

/* After "done": a copy transaction's originals (kept at their temporary
 * names until now) and any temporary entry are removed. */
static void sweep(nsr_txn *t) {
        for (size_t k = 0; k < t->j->n_steps; k++) {
                const nsr_step *s = &t->j->steps[k];
                if (!s->copy)
                        continue;
                const char *leaf = NULL;
                _cleanup_close_ int lp = nsr_txnfs_open_parent(t->project_fd, s->path, &leaf);
                if (lp < 0)
                        continue;
                static const char *const what[] = { "new", "old", "rst" };
                for (size_t i = 0; i < ELEMENTSOF(what); i++) {
                        char n[96];
                        txn_tmpname(n, sizeof(n), t->j, k, what[i]);
                        (void) nsr_txnfs_rm_rf(lp, n);
                }
        }
        /* Also without copies, so a recovery can skip the journal by its
         * last lines alone. */
        (void) nsr_journal_append(t->journal_fd, "swept", false);
}

/* Steps with a phase 1: copy steps, and writes (their backup). */
static bool needs_prepare(const nsr_step *s) {
        return s->copy || s->op == NSR_STEP_WRITE;
}

static bool any_copy(const nsr_journal *j) {
        for (size_t k = 0; k < j->n_steps; k++)
                if (needs_prepare(&j->steps[k]))
                        return true;
        return false;
}

/* After a complete rollback: the journal says so (after a syncfs, so the
 * rollback is durable first), the fingerprints go, and the backup dir is
 * emptied of the copies made for copy steps and of empty dirs. */
static int finish_rollback(nsr_txn *t) {
        for (size_t k = 0; k < t->j->n_steps; k++) {
                const nsr_step *s = &t->j->steps[k];
                if (!s->orig.set || s->op == NSR_STEP_META)
                        continue;
                const char *leaf = NULL;
                _cleanup_close_ int lp = nsr_txnfs_open_parent(t->project_fd, s->path, &leaf);
                struct stat st;
                if (lp >= 0 && fstatat(lp, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && nsr_ident_is(&s->orig, &st)) {
                        int k2 = nsr_journal_append_restored(t->journal_fd, k + 1, st.st_ctim);
                        if (k2 < 0)
                                return k2;
                }
        }
        int r = sync_all(t);
        if (r < 0)
                return r;
        r = nsr_journal_append(t->journal_fd, "rolled-back", true);
        if (r < 0)
                return r;
        pending_clear(t);
        char name[32];
        snprintf(name, sizeof(name), "applied/p%u", t->j->index);
        (void) unlinkat(t->run_fd, name, 0);
        for (size_t k = 0; k < t->j->n_steps; k++) {
                const nsr_step *s = &t->j->steps[k];
                if (!(s->copy && nsr_step_has_orig(s)) && s->op != NSR_STEP_WRITE)
                        continue;
                const char *n = NULL;
                _cleanup_close_ int bfd = nsr_txnfs_open_parent(t->backup_fd, s->path, &n);
                if (bfd >= 0)
                        (void) nsr_txnfs_rm_rf(bfd, n);
        }
        (void) nsr_txnfs_prune_empty(t->backup_fd, ".", NULL);
        return 0;
}

static int rollback_after_failure(nsr_txn *t, int r, size_t n, nsr_error *err) {
        nsr_error rb = { 0 };
        int k = rollback_steps(t, n, false, &rb);
        if (k == 0)
                k = finish_rollback(t);
        if (k < 0) {
                char msg[NSR_ERROR_MSG_MAX], rbmsg[NSR_ERROR_MSG_MAX];
                nsr_error_format(err, msg, sizeof(msg));
                nsr_error_format(&rb, rbmsg, sizeof(rbmsg));
                return nsr_error_setx(err, -r,
                                      "%s; the rollback failed too (%s): the journal is kept, and the next "
                                      "nsrun start for this project will retry it",
                                      msg, rbmsg);
        }
        return r;
}

/* Journal, steps, fingerprints, syncfs, done. Everything is rolled back on
 * failure. */
int nsr_txn_run(nsr_txn *t, nsr_error *err) {
        nsr_journal *j = t->j;
        if (mkdirat(t->run_fd, "journal", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the journal dir");
        int r = pending_mark(t);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot mark the journal in the state dir's pending/");
        char name[32];
        snprintf(name, sizeof(name), "journal/p%u", j->index);
        _cleanup_close_ int fd =
                openat(t->run_fd, name, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = nsr_error_set(err, errno, "cannot create the journal");
                pending_clear(t);
                return r;
        }
        t->journal_fd = fd;
        r = nsr_journal_write_plan(fd, j, err);
        if (r < 0) {
                (void) unlinkat(t->run_fd, name, 0);
                pending_clear(t);
                return r;
        }
        /* The journal's name must be durable too, before the project changes
         * (and the run dir's, in its parent). */
        if ((r = fsync_dir_at(t->run_fd, "journal")) < 0 || (r = fsync_dir_at(t->run_fd, ".")) < 0 ||
            (r = fsync_dir_at(t->run_fd, "..")) < 0)
                return rollback_after_failure(t, nsr_error_set(err, -r, "cannot fsync the journal dir"), 0, err);
        HOOK_CRASH("NSRUN_TEST_CRASH_AT", 0, 99);

        bool copies = any_copy(j);
        if (copies) {
                for (size_t k = 0; k < j->n_steps; k++) {
                        if (!needs_prepare(&j->steps[k]))
                                continue;
                        r = step_prepare(t, k, err);
                        if (r < 0)
                                return rollback_after_failure(t, r, j->n_steps, err);
                        HOOK_CRASH("NSRUN_TEST_CRASH_PREPARE_AT", k + 1, 99);
                }
                /* A write step's backup is the only copy of the original
                 * content once the live file is written: on disk first,
                 * with every dir above it. */
                for (size_t k = 0; k < j->n_steps && r >= 0; k++)
                        if (j->steps[k].op == NSR_STEP_WRITE) {
                                r = syncfs_at(t, t->backup_fd);
                                break;
                        }
                if (r < 0)
                        return rollback_after_failure(t, nsr_error_set(err, -r, "cannot sync the backups"), j->n_steps,
                                                      err);
                r = nsr_journal_append(fd, "prepared", true);
                if (r < 0)
                        return rollback_after_failure(t, nsr_error_set(err, -r, "cannot write the journal"), j->n_steps,
                                                      err);
                j->prepared = true;
        }
        for (size_t k = 0; k < j->n_steps; k++) {
                r = step_forward(t, k, err);
                if (r < 0)
                        return rollback_after_failure(t, r, copies ? j->n_steps : k + 1, err);
                HOOK_CRASH("NSRUN_TEST_CRASH_AT", k + 1, 99);
        }
        r = write_fingerprints(t, err);
        if (r >= 0 && (r = sync_all(t)) < 0)
                nsr_error_set(err, -r, "cannot sync the file systems");
        if (r >= 0 && (r = nsr_journal_append(fd, "done", true)) < 0)
                nsr_error_set(err, -r, "cannot write the journal");
        if (r < 0)
                return rollback_after_failure(t, r, j->n_steps, err);
        j->done = true;
        HOOK_CRASH("NSRUN_TEST_CRASH_AT", j->n_steps + 1, 99);
        sweep(t);
        pending_clear(t);
        t->journal_fd = -1;
        return 0;
}

/* A transaction whose steps already happened: the command wrote to the
 * project itself (best-effort and --no-overlay modes), and the originals
 * are in the backup dir already (the snapshot). Only the record is left:
 * the journal, complete and done, and the fingerprints. The journal is
 * written under a temporary name and renamed into place last, so a crash
 * never leaves an unfinished journal that a recovery would roll back:
 * rolling back would move the command's live writes away. */
int nsr_txn_record(nsr_txn *t, nsr_error *err) {
        nsr_journal *j = t->j;
        if (mkdirat(t->run_fd, "journal", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the journal dir");
        char name[32], tmp[48];
        snprintf(name, sizeof(name), "journal/p%u", j->index);
        snprintf(tmp, sizeof(tmp), "journal/p%u.record", j->index);
        _cleanup_close_ int fd =
                openat(t->run_fd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot create the journal");
        t->journal_fd = fd;
        int r = nsr_journal_write_plan(fd, j, err);
        if (r >= 0)
                r = write_fingerprints(t, err);
        if (r >= 0 && (r = sync_all(t)) < 0)
                nsr_error_set(err, -r, "cannot sync the file systems");
        if (r >= 0 &&
            ((r = nsr_journal_append(fd, "done", false)) < 0 || (r = nsr_journal_append(fd, "swept", true)) < 0))
                nsr_error_set(err, -r, "cannot write the journal");
        if (r >= 0 && renameat(t->run_fd, tmp, t->run_fd, name) < 0)
                r = nsr_error_set(err, errno, "cannot put the journal in place");
        if (r >= 0 && (r = fsync_dir_at(t->run_fd, "journal")) < 0)
                nsr_error_set(err, -r, "cannot fsync the journal dir");
        t->journal_fd = -1;
        if (r < 0) {
                (void) unlinkat(t->run_fd, tmp, 0);
                char a[32];
                snprintf(a, sizeof(a), "applied/p%u", j->index);
                (void) unlinkat(t->run_fd, a, 0);
                return r;
        }
        j->done = true;
        return 0;
}

/* The backup dir of a new transaction: created, and empty (a rolled-back
 * attempt may have left empty dirs). */
int nsr_txn_open_backup_root(int run_fd, unsigned index, nsr_error *err) {
        if (mkdirat(run_fd, "backup", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the backup dir");
        char name[32];
        snprintf(name, sizeof(name), "backup/p%u", index);
        bool kept = false;
        int r = nsr_txnfs_prune_empty(run_fd, name, &kept);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot clean the backup dir");
        if (kept)
                return nsr_error_setx(err, EEXIST, "the backup dir %s of this run is not empty", name);
        if (mkdirat(run_fd, name, 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the backup dir");
        int fd = openat(run_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? nsr_error_set(err, errno, "cannot open the backup dir") : fd;
}

/* A new transaction needs journal/pN to be free. A rolled-back journal is
 * kept under another name; a done or unfinished one stops us. */
int nsr_txn_check_journal_slot(int run_fd, unsigned index, nsr_error *err) {
        char name[32];
        snprintf(name, sizeof(name), "journal/p%u", index);
        _cleanup_close_ int fd = openat(run_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : nsr_error_set(err, errno, "cannot open %s", name);
        _cleanup_(nsr_journal_freep) nsr_journal *j = NULL;
        int r = nsr_journal_read(fd, true, &j, err);
        if (r < 0)
                return r;
        if (j->done && !j->rolled_back)
                return nsr_error_setx(err, EEXIST, "this run was already applied to project %u", index);
        if (!j->rolled_back && j->project)
                return nsr_error_setx(err, EBUSY, "an unfinished apply of this run waits for recovery (project %u)",
                                      index);
        char old[64];
        snprintf(old, sizeof(old), "journal/p%u.%s", index, j->token[0] ? j->token : "torn");
        if (renameat(run_fd, name, run_fd, old) < 0)
                return nsr_error_set(err, errno, "cannot set the old journal aside");
        return 0;
}

/* ---- recovery of one journal ---------------------------------------------------------------------------------- */

/* The source root a journal names, if it is still the same dir; otherwise
 * the run's park dir. */
static int open_source(const nsr_journal *j, int run_fd) {
        if (j->source) {
                int fd = open(j->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t) st.st_dev == j->source_dev &&
                    (uint64_t) st.st_ino == j->source_ino)
                        return fd;
                safe_close(fd);
        }
        char rel[32];
        snprintf(rel, sizeof(rel), "rollback/p%u", j->index);
        return nsr_txnfs_mkdir_open(run_fd, rel);
}

int nsr_txn_recover_journal(int run_fd, int jdir, const char *name, const char *project_path, int project_fd,
                            size_t *count, bool *ret_final, nsr_error *err) {
        *ret_final = false;
        _cleanup_close_ int fd = openat(jdir, name, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open the journal %s", name);
        _cleanup_(nsr_journal_freep) nsr_journal *h = NULL;
        int r = nsr_journal_read(fd, true, &h, err);
        if (r < 0)
                return r;
        if (h->rolled_back || (h->done && h->swept)) {
                *ret_final = true;
                return 0;
        }
        if (!h->project || !streq(h->project, project_path))
                return 0;
        _cleanup_(nsr_journal_freep) nsr_journal *j = NULL;
        r = nsr_journal_read(fd, false, &j, err);
        if (r < 0)
                return r;
        if (!j->plan_valid) {
                /* Torn before it was durable: the project was not touched. */
                r = nsr_journal_append(fd, "rolled-back", true);
                if (r < 0)
                        return nsr_error_set(err, -r, "cannot write the journal");
                (*count)++;
                *ret_final = true;
                return 0;
        }
        struct stat pst;
        if (fstat(project_fd, &pst) < 0)
                return nsr_error_set(err, errno, "cannot stat the project");
        char rel[32];
        snprintf(rel, sizeof(rel), "backup/p%u", j->index);
        _cleanup_close_ int backup_fd = nsr_txnfs_mkdir_open(run_fd, rel);
        if (backup_fd < 0)
                return nsr_error_set(err, -backup_fd, "cannot open the backup dir");
        _cleanup_close_ int src_fd = j->done ? -1 : open_source(j, run_fd);
        nsr_commit_stats stats = { 0 };
        nsr_txn t = {
                .j = j,
                .project_fd = project_fd,
                .run_fd = run_fd,
                .src_fd = src_fd,
                .backup_fd = backup_fd,
                .journal_fd = fd,
                .project_dev = pst.st_dev,
                .stats = &stats,
        };
        if (j->done) {
                sweep(&t);
                *ret_final = true;
                return 0;
        }
        r = rollback_steps(&t, j->n_steps, true, err);
        if (r < 0)
                return r;
        r = finish_rollback(&t);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot finish the rollback");
        (*count)++;
        *ret_final = true;
        return 0;
}
