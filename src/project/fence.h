/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The start fence of a project run (docs/conflicts.md): every host write
 * after the command starts must get a ctime after T. */
#pragma once

#include <stdbool.h>
#include <time.h>

/* Puts the kernel's multigrain ctime floor past t and proves it took: a
 * private file in dirfd is changed until its ctime is after t, then a new
 * inode, which no one has asked the time of, must get a ctime after t as
 * well. True only when that proof holds on one of the file systems known
 * to stamp from the kernel's clock (ext4, xfs, btrfs, tmpfs); false means
 * the caller waits for the coarse clock instead. */
bool nsr_fence_raise_floor(int dirfd, const struct timespec *t);
