/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the policy compiler lands. */
#include "config.h"

#include <stdlib.h>

#include "seccomp.h"

const char *nsr_seccomp_dir(void) {
        const char *d = getenv("NSRUN_DATADIR");
        return d ? d : NSR_PKGDATADIR;
}

int nsr_seccomp_policy_bpf(const char *name_or_path, char **ret_data, size_t *ret_len, nsr_error *err) {
        (void) ret_data;
        (void) ret_len;
        return nsr_error_setx(err, ENOSYS, "--seccomp-policy %s: not implemented yet", name_or_path);
}
