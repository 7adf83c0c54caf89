/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which of many paths exist now, as lstat(2) says, with one listing of a dir
 * that many of them share instead of one failing lookup each (hide.list
 * names hundreds of paths under $HOME, nearly none of which exist). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Paths that share a dir are answered from one listing of it only when
 * there are at least this many. */
#define NSR_PATHPROBE_LIST_MIN 8

/* ret[i] = whether lstat(paths[i]) succeeds now (or fails with EOVERFLOW:
 * the path exists, too big to describe). Nothing is kept between calls. */
void nsr_paths_exist(char *const *paths, size_t n, bool *ret);

/* The same for one path. */
bool nsr_path_exists(const char *path);
