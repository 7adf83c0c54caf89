/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Write steps of a transaction (txn.c's "Steps"): a file the user may
 * write but whose owner the apply could not keep gets its new content
 * written into its own inode, after a faithful copy of the original went
 * to the backup; rollback writes the backup's content back when it
 * differs, so it is safe to repeat. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "txn/txn-internal.h"
#include "txn/txnfs.h"

/* to's content becomes from's (both regular files, from offset 0). */
static int rewrite(int to, int from, uint64_t *copied) {
        char buf[64 * 1024];
        if (ftruncate(to, 0) < 0 || lseek(to, 0, SEEK_SET) < 0 || lseek(from, 0, SEEK_SET) < 0)
                return -errno;
        for (;;) {
                int n = nsr_read_full(from, buf, sizeof(buf));
                if (n < 0)
                        return n;
                if (n == 0)
                        break;
                int r = nsr_write_all(to, buf, (size_t) n);
                if (r < 0)
                        return r;
                if ((size_t) n < sizeof(buf))
                        break;
        }
        (*copied)++;
        return 0;
}

/* 1 when the two files' contents differ, 0 when not. */
static int differ(int a, int b) {
        char x[16 * 1024], y[16 * 1024];
        if (lseek(a, 0, SEEK_SET) < 0 || lseek(b, 0, SEEK_SET) < 0)
                return -errno;
        for (;;) {
                int n = nsr_read_full(a, x, sizeof(x));
                int m = nsr_read_full(b, y, sizeof(y));
                if (n < 0 || m < 0)
                        return n < 0 ? n : m;
                if (n != m || memcmp(x, y, (size_t) n) != 0)
                        return 1;
                if ((size_t) n < sizeof(x))
                        return 0;
        }
}

/* The live file of a write step, opened with flags; -EBUSY when the path
 * holds anything but the step's original (never followed: beneath, no
 * symlinks). */
static int write_open_live(nsr_txn *t, const nsr_step *s, int flags) {
        int fd = nsr_txnfs_open(t->project_fd, s->path, flags);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !nsr_ident_is(&s->orig, &st)) {
                close(fd);
                return -EBUSY;
        }
        return fd;
}

/* Phase 1: the original's content (mode, times, xattrs: a faithful copy)
 * into the backup dir, durable before the live file is written. */
int txn_write_prepare(nsr_txn *t, size_t k, nsr_error *err) {
        const nsr_step *s = &t->j->steps[k];
        _cleanup_close_ int lf = write_open_live(t, s, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (lf < 0)
                return nsr_txn_path_error(err, lf == -EBUSY ? EBUSY : -lf,
                                          lf == -EBUSY ? "changed on the host during the apply:" : "cannot open",
                                          s->path);
        const char *leaf = NULL, *n = NULL;
        _cleanup_close_ int lp = nsr_txnfs_open_parent(t->project_fd, s->path, &leaf);
        _cleanup_close_ int bfd = nsr_txnfs_open_parent_mkdir(t->backup_fd, s->path, &n);
        if (lp < 0 || bfd < 0)
                return nsr_txn_path_error(err, lp < 0 ? -lp : -bfd, "cannot open the backup dir of", s->path);
        char tmp[96];
        txn_tmpname(tmp, sizeof(tmp), t->j, k, "tmp");
        (void) nsr_txnfs_rm_rf(bfd, tmp);
        int r = nsr_txnfs_copy(lp, leaf, bfd, tmp, true, &t->stats->copied);
        if (r >= 0) {
                _cleanup_close_ int cf = openat(bfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                r = cf < 0 || fsync(cf) < 0 ? -errno : 0;
        }
        if (r >= 0)
                r = nsr_txnfs_rename(bfd, tmp, bfd, n, RENAME_NOREPLACE);
        if (r < 0) {
                (void) nsr_txnfs_rm_rf(bfd, tmp);
                return nsr_txn_path_error(err, r, "cannot back up (by copying)", s->path);
        }
        return 0;
}

/* Phase 2: the new content into the live inode, with the new mtime. */
int txn_write_forward(nsr_txn *t, const nsr_step *s, nsr_error *err) {
        _cleanup_close_ int lf = write_open_live(t, s, O_WRONLY | O_NONBLOCK | O_NOCTTY);
        if (lf < 0)
                return nsr_txn_path_error(err, lf == -EBUSY ? EBUSY : -lf,
                                          lf == -EBUSY ? "changed on the host during the apply:" : "cannot open",
                                          s->path);
        _cleanup_close_ int sf =
                t->src_fd < 0 ? -ENOENT : nsr_txnfs_open(t->src_fd, s->path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        struct stat sst;
        if (sf < 0 || fstat(sf, &sst) < 0 || !S_ISREG(sst.st_mode))
                return nsr_txn_path_error(err, sf < 0 ? -sf : EINVAL, "cannot open the new version of", s->path);
        int r = rewrite(lf, sf, &t->stats->copied);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot write the new content into", s->path);
        txn_note_dev(t, lf);
        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, sst.st_mtim };
        (void) futimens(lf, ts);
        return 0;
}

/* Rollback: the backup's content back into the live inode, when it was
 * prepared at all and the content differs. */
int txn_write_back(nsr_txn *t, const nsr_step *s, nsr_error *err) {
        _cleanup_close_ int bf = nsr_txnfs_open(t->backup_fd, s->path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (bf == -ENOENT)
                return 0; /* never prepared, so never written */
        struct stat bst;
        if (bf < 0)
                return nsr_txn_path_error(err, -bf, "cannot open the backup of", s->path);
        if (fstat(bf, &bst) < 0)
                return nsr_txn_path_error(err, errno, "cannot stat the backup of", s->path);
        if (!S_ISREG(bst.st_mode))
                return nsr_txn_path_error(err, EINVAL, "the backup is not a file:", s->path);
        _cleanup_close_ int lf = write_open_live(t, s, O_RDWR | O_NONBLOCK | O_NOCTTY);
        if (lf < 0)
                return nsr_txn_path_error(err, lf == -EBUSY ? EEXIST : -lf,
                                          lf == -EBUSY ? "cannot roll back: the host put something at"
                                                       : "cannot open to roll back",
                                          s->path);
        int r = differ(lf, bf);
        if (r > 0)
                r = rewrite(lf, bf, &t->stats->copied);
        if (r < 0)
                return nsr_txn_path_error(err, r, "cannot roll back", s->path);
        struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, bst.st_mtim };
        (void) futimens(lf, ts);
        txn_note_dev(t, lf);
        return 0;
}
