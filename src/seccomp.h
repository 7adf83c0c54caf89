/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Seccomp policy files (the .policy files under seccomp/): parse, compile with libseccomp,
 * export BPF. */
#pragma once

#include <stddef.h>

#include "error.h"

/* Where shipped policies live: $NSRUN_DATADIR/seccomp when set (tests run
 * uninstalled), else $(pkgdatadir)/seccomp. */
const char *nsr_seccomp_dir(void);

/* Compiles a policy, given by name ("default") or by path (anything with a
 * '/'), to a BPF program for the native arch and its compat arches. The
 * result may come from a cache keyed by the policy's content. */
int nsr_seccomp_policy_bpf(const char *name_or_path, char **ret_data, size_t *ret_len, nsr_error *err);
