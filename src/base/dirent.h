/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one way nsrun reads a directory: FOREACH_DIRENT, over a DIR that has
 * an open file description of its own. */
#pragma once

#include <dirent.h>
#include <errno.h>

#include "base/util.h"

static inline void nsr_closedirp(DIR **d) {
        if (*d) {
                int saved = errno;
                closedir(*d);
                errno = saved;
        }
}
#define _cleanup_closedir_ _cleanup_(nsr_closedirp)

/* Opens dirfd/name (name "" or "." for dirfd itself, which may be O_PATH;
 * dirfd AT_FDCWD for a plain path) as a DIR. It is always a new open of the
 * dir, never a dup of dirfd: a dup shares the file offset, so a second walk
 * through one would start where the first ended and see nothing (killtree
 * lost every process after its first look that way). flags adds to
 * O_RDONLY | O_DIRECTORY | O_CLOEXEC, e.g. O_NOFOLLOW. Returns 0 and sets
 * *ret, or -errno. */
int nsr_opendir_at(int dirfd, const char *name, int flags, DIR **ret);
/* fdopendir for an fd the caller opened itself just now (never a dup, see
 * above): the DIR owns fd from here on, and fd is closed on failure. */
int nsr_fdopendir(int fd, DIR **ret);

/* The next entry that is not "." or "..". NULL at the end, with errno 0,
 * or on a read error, with errno set: readdir(3) tells the two apart only
 * through errno, which must be cleared before each call. */
struct dirent *nsr_readdir(DIR *d);

/* FOREACH_DIRENT(de, d, on_error) { ... } runs the body once per entry of
 * d (not "." and ".."), with de a struct dirent *. break and continue work
 * as in any loop. When reading fails, on_error runs with errno set (it may
 * assign, return or goto) and the loop ends: a dir that could not be read
 * to the end was not seen whole, which a caller must not take for all. */
#define FOREACH_DIRENT(de, d, on_error)                                                                                \
        for (struct dirent *de = nsr_readdir(d);; de = nsr_readdir(d))                                                 \
                if (!de) {                                                                                             \
                        if (errno != 0) {                                                                              \
                                on_error;                                                                              \
                        }                                                                                              \
                        break;                                                                                         \
                } else
