/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"
#include "util.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)

/* The kernel's struct landlock_ruleset_attr as of ABI 6. */
struct ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

int nsr_landlock_abi_probe(void) {
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        return v < 0 ? -errno : (int) v;
}

int nsr_landlock_abi(void) {
        int v = nsr_landlock_abi_probe();
        return v < 0 ? 0 : v;
}

int nsr_landlock_scope(nsr_error *err) {
        struct ruleset_attr attr = {
                .scoped = NSR_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | NSR_LANDLOCK_SCOPE_SIGNAL,
        };
        int fd = (int) syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
        if (fd < 0)
                return nsr_error_set(err, errno, "Landlock: creating the scoping ruleset");
        long r = syscall(SYS_landlock_restrict_self, fd, 0);
        int e = errno;
        close(fd);
        if (r < 0)
                return nsr_error_set(err, e, "Landlock: restricting the sandbox");
        return 0;
}
