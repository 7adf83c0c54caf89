/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"
#include "sandbox/landlock.h"

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

/* ---- rulesets with paths ------------------------------------------------ */

#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#define LANDLOCK_RULE_PATH_BENEATH 1

struct path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

/* struct landlock_net_port_attr (ABI 4). */
#define LANDLOCK_RULE_NET_PORT 2
struct net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
} __attribute__((packed));

#define FS_FILE_RIGHTS                                                                                                 \
        (NSR_LANDLOCK_FS_EXECUTE | NSR_LANDLOCK_FS_WRITE_FILE | NSR_LANDLOCK_FS_READ_FILE | NSR_LANDLOCK_FS_TRUNCATE)
#define FS_READ (NSR_LANDLOCK_FS_EXECUTE | NSR_LANDLOCK_FS_READ_FILE | NSR_LANDLOCK_FS_READ_DIR)

/* Every filesystem right of an ABI. Device ioctls (ABI 5) are left
 * unhandled: terminals need them, and TIOCSTI is seccomp's job. */
static uint64_t fs_rights(int abi) {
        uint64_t r = (UINT64_C(1) << 13) - 1;
        if (abi >= 2)
                r |= NSR_LANDLOCK_FS_REFER;
        if (abi >= 3)
                r |= NSR_LANDLOCK_FS_TRUNCATE;
        return r;
}

static int add_path(int ruleset, const char *path, uint64_t access, uint64_t handled, size_t *count, nsr_error *err) {
        /* O_PATH without following: a symlink given here would grant its
         * target's hierarchy, which nobody asked for. */
        _cleanup_close_ int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP)
                        return 0;
                return nsr_error_set(err, errno, "Landlock: cannot open %s", path);
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return nsr_error_set(err, errno, "Landlock: cannot stat %s", path);
        if (S_ISLNK(st.st_mode))
                return 0;
        if (!S_ISDIR(st.st_mode))
                access &= FS_FILE_RIGHTS;
        struct path_beneath_attr pb = { .allowed_access = access & handled, .parent_fd = fd };
        if (pb.allowed_access == 0)
                return 0;
        if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                return nsr_error_set(err, errno, "Landlock: cannot add a rule for %s", path);
        (*count)++;
        return 0;
}

int nsr_landlock_build(const nsr_landlock_rules *rules, int *ret_fd, nsr_landlock_info *ret_info, nsr_error *err) {
        int abi = nsr_landlock_abi_probe();
        if (abi < 0)
                return nsr_error_set(err, -abi, "Landlock is not available");
        nsr_landlock_info info = { .abi = abi, .fs = true };
        uint64_t handled = fs_rights(abi);
        struct ruleset_attr attr = { .handled_access_fs = handled };
        if (rules->deny_tcp && abi >= 4) {
                attr.handled_access_net = NSR_LANDLOCK_NET_BIND_TCP | NSR_LANDLOCK_NET_CONNECT_TCP;
                info.tcp = true;
        }
        if (rules->scope && abi >= 6) {
                attr.scoped = NSR_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | NSR_LANDLOCK_SCOPE_SIGNAL;
                info.scope = true;
        }
        /* Older kernels take a shorter struct: the fields they know. */
        size_t size = abi >= 6 ? sizeof(attr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
        _cleanup_close_ int fd = (int) syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        if (fd < 0)
                return nsr_error_set(err, errno, "Landlock: creating the ruleset");
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "Landlock: fcntl");
        int r = 0;
        for (char **p = rules->read; r >= 0 && p && *p; p++)
                r = add_path(fd, *p, FS_READ, handled, &info.n_rules, err);
        for (char **p = rules->write; r >= 0 && p && *p; p++)
                r = add_path(fd, *p, handled, handled, &info.n_rules, err);
        for (char **p = rules->write_files; r >= 0 && p && *p; p++)
                r = add_path(fd, *p, FS_FILE_RIGHTS, handled, &info.n_rules, err);
        for (size_t i = 0; r >= 0 && info.tcp && i < rules->n_connect_ports && i < ELEMENTSOF(rules->connect_ports);
             i++) {
                struct net_port_attr np = { .allowed_access = NSR_LANDLOCK_NET_CONNECT_TCP,
                                            .port = rules->connect_ports[i] };
                if (syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_NET_PORT, &np, 0) < 0)
                        r = nsr_error_set(err, errno, "Landlock: cannot allow TCP port %u", (unsigned) np.port);
                else
                        info.n_rules++;
        }
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        *ret_info = info;
        return 0;
}

int nsr_landlock_enforce(int ruleset_fd, nsr_error *err) {
        if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) < 0)
                return nsr_error_set(err, errno, "Landlock: restricting the sandbox");
        return 0;
}
