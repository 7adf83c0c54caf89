/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One way to persist a file in the state dir: the whole new content or the
 * old file, never a torn one and never a leftover temporary. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

/* fsync the file before the rename and its directory after it: for files a
 * recovery reads after a crash. Without it the rename is still atomic, but
 * a crash may lose the new content (the old file or none is then seen). */
#define NSR_DURABLE_SYNC (1u << 0)

/* Writes len bytes of data to dirfd/name (dirfd may be O_PATH): a new
 * temporary in the same dir (O_EXCL, O_NOFOLLOW, so nothing that lies in
 * wait there is followed or reused), every write and the close checked,
 * then renameat over name. On failure name is untouched and the temporary
 * is gone. name must be a plain name or a path relative to dirfd whose
 * last component is the file. */
int nsr_durable_write(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                      nsr_error *err);
