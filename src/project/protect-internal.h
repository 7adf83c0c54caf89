/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What protect.c (the pure core, scan and enforce), gitconfig.c (git
 * config read strictly) and protectrules.c (the rules from the project
 * before the run) share. Private to those three files. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "project/protect.h"
#include "txn/changeset.h"

#define CONFIG_MAX ((size_t) 1 << 20)

static inline bool under(const char *path, const char *dir) {
        if (!*dir)
                return true;
        size_t l = strlen(dir);
        return strncmp(path, dir, l) == 0 && (path[l] == '/' || path[l] == '\0');
}

/* protectrules.c: the regular file path below fd, at most CONFIG_MAX. */
int protect_read_at(int fd, const char *path, char **ret, size_t *ret_len);
/* protectrules.c: the rules a scan classifies with. */
void protect_find_gitdirs(nsr_protect_rules *r, const nsr_changeset *cs, int before_fd);
void protect_find_hooks(nsr_protect_rules *r, const nsr_protect_ctx *ctx);
