/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File-system helpers for the transactions (txn.c, commit.c, journal.c)
 * and for every host-side step that reads a tree a sandboxed command wrote
 * (project/protect.c, snapshot.c, sesscommit.c): beneath-only lookups, renames that never replace, copies
 * that keep metadata, recursive walks and removal, xattrs, hex and CRC.
 *
 * Every lookup below a root fd goes through openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), and every last component is handled with an *at()
 * call that does not follow it, so no symlink planted in the project or in
 * a run dir can send an operation elsewhere. Functions return -errno and
 * leave error messages to the caller, which knows which path it meant. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "txn/changeset.h"

/* The deepest tree a walk, copy or removal descends into. Every level holds
 * an open dir fd, so this also bounds fd use. */
#define NSR_TXNFS_MAX_DEPTH 256
/* The most entries one walk visits. */
#define NSR_TXNFS_MAX_ENTRIES ((uint64_t) 50 * 1000 * 1000)

/* ---- encoding -------------------------------------------------------------- */
/* CRC-32 (IEEE, reflected), continuing from crc (start with 0). */
uint32_t nsr_crc32(uint32_t crc, const void *p, size_t n);

/* ---- lookups below a root ------------------------------------------------- */
/* openat2(rootfd, path, flags | O_CLOEXEC) with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS (and O_NOFOLLOW unless
 * O_DIRECTORY: a symlink anywhere gives ELOOP); "" means the root itself.
 * Retries EAGAIN and EINTR. Returns the fd or -errno. */
int nsr_txnfs_open(int rootfd, const char *path, int flags);
/* Opens the parent dir of path (O_PATH) and points *ret_name at the last
 * component inside path. */
int nsr_txnfs_open_parent(int rootfd, const char *path, const char **ret_name);
/* Like nsr_txnfs_open_parent, creating missing parent dirs (mode 0700). */
int nsr_txnfs_open_parent_mkdir(int rootfd, const char *path, const char **ret_name);
/* The mount id of the mount fd is on (statx STATX_MNT_ID). */
int nsr_txnfs_mnt_id(int fd, uint64_t *ret);
/* "/proc/self/fd/N" for fd, into buf (at least 32 bytes). */
void nsr_txnfs_fd_path(int fd, char *buf, size_t len);

/* ---- changes ---------------------------------------------------------------- */
/* renameat2 with flags (RENAME_NOREPLACE, RENAME_EXCHANGE). When the file
 * system lacks RENAME_NOREPLACE (EINVAL), it checks for the target and falls
 * back to a plain renameat (a documented race). On EACCES, dirs of ours
 * without u+w (the moved ones and both parents) get it for the rename
 * only. Returns 0 or -errno. */
int nsr_txnfs_rename(int olddir, const char *oldname, int newdir, const char *newname, unsigned flags);
/* nsrun's one rm -rf: removes name below dirfd, recursively, never
 * following symlinks (mode changes go through an fd of the dir); makes our
 * own dirs without u+rwx removable; any depth, with at most
 * NSR_TXNFS_MAX_DEPTH dirs open (deeper ones are moved up and removed on
 * another pass). Goes on past errors and returns the first. ENOENT is
 * success. */
int nsr_txnfs_rm_rf(int dirfd, const char *name);
/* Removes every empty dir in the tree at name (the root too if it ends
 * empty). Entries that are not dirs are kept; *ret_kept says if any were. */
int nsr_txnfs_prune_empty(int dirfd, const char *name, bool *ret_kept);

/* Copies the entry srcname (a file, dir tree, symlink, fifo or socket; a
 * device only as root) to dstname, which must not exist. Content, mode,
 * mtime and user xattrs are kept, owner too when running as root. With
 * faithful false (a new entry from a sandbox) setuid and setgid bits,
 * user.overlay.* xattrs and security.* are dropped; with faithful true (a
 * backup) they are kept where the kernel lets us. *count is incremented
 * per entry copied. */
int nsr_txnfs_copy(int srcdir, const char *srcname, int dstdir, const char *dstname, bool faithful, uint64_t *count);

/* Strips what a new entry must not bring into the project: setuid and
 * setgid bits, security.capability and user.overlay.* xattrs. name is
 * below dirfd; st is its lstat. */
int nsr_txnfs_sanitize(int dirfd, const char *name, const struct stat *st);

/* ---- xattrs -------------------------------------------------------------------- */
typedef struct nsr_xattr {
        char *name;
        char *value;
        size_t len;
} nsr_xattr;

/* The user.* xattrs of name below dirfd (none for symlinks), sorted by name,
 * without user.overlay.*. */
int nsr_txnfs_user_xattrs(int dirfd, const char *name, nsr_xattr **ret, size_t *ret_n);
void nsr_txnfs_xattrs_free(nsr_xattr *x, size_t n);
/* On an O_PATH fd of a non-symlink: set (value != NULL) or remove (value
 * NULL, ENODATA is success) one xattr. */
int nsr_txnfs_fd_setxattr(int fd, const char *name, const char *value, size_t len);
/* chmod of the inode fd (O_PATH or not) was opened on, never through a
 * path; -ELOOP for a symlink's own fd. */
int nsr_txnfs_fd_chmod(int fd, mode_t mode);

/* ---- walks ------------------------------------------------------------------------ */
/* Called for the root and every entry below it, parents before children.
 * rel is the entry's path relative to the walk's base (the root's rel is
 * given). Return < 0 to stop with that error, 1 to skip a dir's children,
 * 0 to go on. */
typedef int (*nsr_txnfs_walk_fn)(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata);
enum {
        /* A dir of ours that we cannot read gets u+rx for the walk (used in
         * run dirs only: it changes the dir's ctime). */
        NSR_TXNFS_WALK_FORCE = 1u << 0,
        /* A dir that cannot be read (EACCES) is reported but not entered. */
        NSR_TXNFS_WALK_SKIP_UNREADABLE = 1u << 1,
};
/* Walks the tree at name below dirfd without following symlinks. Fails with
 * -ELOOP beyond NSR_TXNFS_MAX_DEPTH, -E2BIG beyond NSR_TXNFS_MAX_ENTRIES,
 * -ENAMETOOLONG when a rel path reaches PATH_MAX, and -EACCES on an
 * unreadable dir unless flags say otherwise. */
int nsr_txnfs_walk(int dirfd, const char *name, const char *rel, unsigned flags, nsr_txnfs_walk_fn fn, void *userdata);

/* ---- run-dir helpers ----------------------------------------------------------------- */
/* The absolute path an fd was opened on (from /proc), or NULL. */
char *nsr_txnfs_abs_path(int fd);
/* mkdir -p of rel (plain names) below dirfd, then an O_PATH fd of it. */
int nsr_txnfs_mkdir_open(int dirfd, const char *rel);
/* Moves an entry within the state dir: a rename, or a faithful copy and a
 * removal when the two are on different mounts. Never replaces. */
int nsr_txnfs_move_aside(int fromdir, const char *from, int todir, const char *to, uint64_t *copied);

/* Copies sfd's data to dfd from their offsets: copy_file_range() (which
 * shares extents where the file system can), or read and write where it
 * cannot, or when plain. The bytes copied go to *ret_total. */
int nsr_txnfs_copy_data(int sfd, int dfd, bool plain, uint64_t *ret_total);
