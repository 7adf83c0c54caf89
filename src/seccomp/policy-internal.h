/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What policy.c (the parser) and policynames.c (the language's names) share.
 * Private to those two files. */
#pragma once

#include <seccomp.h>
#include <stdbool.h>

static inline bool libseccomp_knows(const char *name) {
        return seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR;
}
