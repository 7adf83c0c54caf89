/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Files nsrun writes on the host for the caller (--report FILE, an export),
 * opened so that nothing a sandboxed command leaves behind can redirect the
 * write.
 *
 * nsr_outfile_open() runs before the command starts: it opens the target's
 * directory (following the caller's own symlinks, which the command has not
 * touched yet) and keeps that fd. nsr_outfile_write() then writes a fresh
 * file in that directory (O_CREAT | O_EXCL | O_NOFOLLOW, a random name) and
 * renames it over the target: a symlink the command planted at the target
 * is replaced, never followed, and a directory the command swapped for a
 * symlink is never entered, because the fd still names the old one.
 *
 * A target that exists as a pipe, a terminal or another non-regular file,
 * or is reached through /dev or /proc (/dev/stdout, /dev/fd/N), is opened
 * for writing right away instead, before the command can touch it. A
 * symlink anywhere else at the target is refused: it may have been left by
 * an earlier run. */
#pragma once

#include <stddef.h>

#include "base/error.h"

typedef struct nsr_outfile {
        int dirfd;  /* the target's directory (O_PATH), or -1 */
        int fd;     /* a target opened for writing up front, or -1 */
        char *name; /* the target's name in dirfd */
        char *path; /* as the caller gave it, for messages */
        char *dir;  /* the directory's path, to notice it was replaced */
} nsr_outfile;

#define NSR_OUTFILE_INIT                                                                                               \
        { .dirfd = -1, .fd = -1 }

/* Opens path's directory (or path itself, see above). opt names the option
 * in messages ("--report"). */
int nsr_outfile_open(const char *opt, const char *path, nsr_outfile *ret, nsr_error *err);
/* Writes buf as the whole new content of the target. */
int nsr_outfile_write(nsr_outfile *o, const void *buf, size_t len, nsr_error *err);
void nsr_outfile_done(nsr_outfile *o);
