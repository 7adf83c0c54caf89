/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Capture: turn a project overlay's upper dir into a change set.
 *
 * After the command has exited and the overlay is unmounted, the upper dir
 * holds everything the command changed, in overlayfs's own encoding
 * (mounted with userxattr, so its xattrs are user.overlay.*):
 *
 *   - a whiteout (a character device 0:0, often with nlink > 1, which is
 *     never a user hardlink) deletes the lower entry of that name;
 *   - an opaque dir (user.overlay.opaque = "y") hides the whole lower dir;
 *   - any other entry is new or a copy-up of a lower entry, and a copy-up
 *     happens even when nothing changes (open O_RDWR, chmod of a dir).
 *
 * nsr_capture_scan() walks the upper tree and compares each entry with the
 * entry of the same relative path in lower (the live project). The work is
 * proportional to the number of upper entries, not to the project size:
 * lower entries are looked up by name only, except that an opaque dir's
 * lower dir is listed (to find what it hides) and a deleted or replaced
 * lower dir is counted (for "descendants").
 *
 * Classification:
 *   - whiteout, lower entry exists: DELETED (a dir is one change, with the
 *     number of entries below it); no lower entry: ignored;
 *   - opaque dir: each lower entry with no upper entry of the same name is
 *     DELETED; the mark by itself is not a change;
 *   - no lower entry: CREATED (also every entry below a created dir);
 *   - types differ: TYPE_CHANGED (entries below a new dir are CREATED);
 *   - files: size or bytes differ: MODIFIED; symlinks: target differs:
 *     MODIFIED; devices: rdev differs: MODIFIED;
 *   - otherwise mode, owner, xattrs or mtime differ: METADATA_CHANGED
 *     (dirs: mtime is ignored); nothing differs: a copy-up without
 *     change, dropped.
 * xattrs named user.overlay.* are overlay's own and are ignored, as are
 * LSM labels (security.selinux, security.SMACK64*, security.apparmor),
 * which the policy assigns at copy-up. security.capability and ACLs are
 * compared. The root dir itself is never reported: nsrun creates the upper
 * root, so its metadata says nothing about the command.
 *
 * An upper file with user.overlay.metacopy or a dir with
 * user.overlay.redirect is an error (-EPROTO): userxattr mounts never make
 * them, and their content cannot be read from upper alone.
 *
 * Symlinks are never followed, in upper or lower. Names may hold any byte
 * but '/' and NUL.
 *
 * Permissions: the scan is meant to run as root of the sandbox's user
 * namespace, where CAP_DAC_OVERRIDE lets it read entries the command
 * chmodded to 000. Without that capability, an upper entry that gives
 * EACCES is made readable (u+r for files, u+rx for dirs) for as long as it
 * is being read and then given its mode back (NSR_CAPTURE_NO_MODE_FIXUP
 * turns this off). The lower dir is the live project and is never
 * modified: EACCES there is an error.
 *
 * Resources: each directory level holds two fds (upper and lower), so the
 * depth limit also bounds the fds in use. Relative paths are limited to
 * PATH_MAX - 1 bytes, so that the apply step can open any of them with a
 * single openat2() from the project root. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"
#include "txn/changeset.h"

#define NSR_CAPTURE_MAX_DEPTH_DEFAULT   256u
#define NSR_CAPTURE_MAX_DEPTH_LIMIT     2048u /* PATH_MAX / 2: "a/a/a/..." */
#define NSR_CAPTURE_MAX_CHANGES_DEFAULT NSR_CHANGESET_MAX_CHANGES_DEFAULT
/* Entries one directory may hold (upper or lower). */
#define NSR_CAPTURE_DIR_ENTRIES_MAX ((size_t) 16 * 1024 * 1024)

enum {
        NSR_CAPTURE_NO_MODE_FIXUP = 1u << 0, /* never chmod upper entries */
        /* Two plain trees instead of an overlay's layers: "upper" is the
         * live project after the command, "lower" a snapshot taken before
         * it (best-effort and --no-overlay modes, see snapshot.h). Every
         * dir is compared in full, as if opaque; nothing is a whiteout, and
         * no user.overlay.* xattr means anything. */
        NSR_CAPTURE_TREES = 1u << 1,
};

/* Trees mode: what the upper entry was when the snapshot was taken. */
typedef struct nsr_capture_prior {
        dev_t dev;
        ino_t ino;
        struct timespec ctime;
        mode_t mode;
        uid_t uid;
        gid_t gid;
} nsr_capture_prior;

/* Counters, for tests and diagnostics. */
typedef struct nsr_capture_stats {
        uint64_t stat_calls;    /* fstatat() and fstat() calls, upper and lower */
        uint64_t upper_entries; /* directory entries read from upper */
        uint64_t lower_entries; /* directory entries read from lower (opaque and deleted dirs) */
        uint64_t bytes_compared;
        uint64_t mode_fixups; /* upper entries made readable for a while */
} nsr_capture_stats;

typedef struct nsr_capture_opts {
        size_t max_changes;       /* 0: NSR_CAPTURE_MAX_CHANGES_DEFAULT; -E2BIG beyond */
        unsigned max_depth;       /* 0: NSR_CAPTURE_MAX_DEPTH_DEFAULT; at most NSR_CAPTURE_MAX_DEPTH_LIMIT */
        unsigned flags;           /* NSR_CAPTURE_* */
        nsr_capture_stats *stats; /* optional, filled in on success and failure */
        /* Trees mode, optional: the record of an upper entry (by relative
         * path) from before the command, or NULL. An entry whose device,
         * inode and ctime still match is unchanged without reading it (a
         * dir is still descended into); otherwise its mode and owner are
         * compared with the record's rather than with the lower copy's,
         * which a caller who is not root could not chown. */
        const nsr_capture_prior *(*prior)(void *userdata, const char *rel);
        void *prior_userdata;
        /* Overlay mode, optional: the project root as it was when the
         * command started (nsr_capture_root_load). The upper dir is the
         * overlay's root, so its mode is the root's mode inside; when its
         * permission bits and sticky bit differ from these, the set gets a
         * "." change of the root's mode (changeset.h), from this old
         * state. Setuid and setgid stay as the host has them (the upper
         * dir never carries them). Without it the root is not compared.
         * In trees mode the root is always compared (with the snapshot's
         * root, which has the project's mode from before the command). */
        const nsr_capture_prior *root_prior;
} nsr_capture_opts;

/* Scans the upper dir against the lower dir (both dir fds, O_PATH is fine;
 * they are not consumed) and returns a sorted change set. opts may be NULL.
 * Errors: -ELOOP when deeper than max_depth, -ENAMETOOLONG for a path
 * beyond PATH_MAX - 1, -E2BIG for too many changes, -EPROTO for overlay
 * features nsrun does not use, and the errno of a failed system call; each
 * names the path (escaped) and the layer. */
int nsr_capture_scan(int upper_dirfd, int lower_dirfd, const nsr_capture_opts *opts, nsr_changeset **ret,
                     nsr_error *err);

/* The project root's record before the command, in a small file of the
 * run dir (dirfd/name): written before the command starts, read by every
 * capture of the run (the first, a later "nsrun commit RUN", a diff), so
 * a host change of the root's mode during the run (or before a kept run
 * is committed) is a conflict and never taken for the command's change.
 * _save replaces an earlier record (a session moves its baseline to
 * what each commit applied); _load: -ENOENT when there is none (a run
 * from an older nsrun). */
int nsr_capture_root_save(int dirfd, const char *name, const struct stat *st, nsr_error *err);
int nsr_capture_root_load(int dirfd, const char *name, nsr_capture_prior *ret);

/* Pure. Parses the record's text ("nsrun-root 1 MODE UID GID DEV INO
 * CSEC CNSEC\n"); -EINVAL for anything else. */
int nsr_capture_root_parse(const char *text, nsr_capture_prior *ret);
