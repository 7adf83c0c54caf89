/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsr-restrict: runs a command under a simulated host restriction, for the
 * "nsrun doctor" tests.
 *
 *   nsr-restrict [OPTION]... -- COMMAND [ARG]...
 *
 *   --max-userns N      in a new user namespace (the caller mapped to 0),
 *                       set user.max_user_namespaces to N: the sysctl is
 *                       per user namespace and its owner may set it
 *   --nest-max          nest user namespaces until the kernel refuses one
 *                       more (32 levels), and run COMMAND in the deepest
 *   --fake-sysctl NAME=VALUE
 *                       in a new user and mount namespace, cover
 *                       /proc/sys/kernel with a tmpfs holding the file NAME
 *                       with VALUE (repeatable): a sysctl this kernel
 *                       lacks, such as apparmor_restrict_unprivileged_userns
 *   --deny-userns ERRNO a seccomp filter makes clone and unshare with
 *                       CLONE_NEWUSER fail with ERRNO (EPERM, EINVAL, EUSERS,
 *                       ENOSPC or a number) and clone3 with ENOSYS, as
 *                       Docker's default profile does
 *   --deny-mount        the filter makes mount, fsopen, fsmount, move_mount,
 *                       open_tree and mount_setattr fail with EPERM
 *   --deny-landlock     the filter makes the landlock_* calls fail with
 *                       ENOSYS
 *   --deny-open-tree-attr ERRNO
 *                       the filter makes open_tree_attr (Linux 6.15) fail
 *                       with ERRNO: ENOSYS as on an older kernel, EPERM as
 *                       under a filter that refuses what it does not know
 *
 * The namespaces come first, then the filter (with no_new_privs), then
 * exec. Plain C without libnsrun, linked statically. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH_NR AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH_NR AUDIT_ARCH_AARCH64
#else
#define ARCH_NR 0
#endif

#define MAX_FAKES 8
#define MAX_INSNS 128

__attribute__((noreturn)) static void die(const char *what) {
        fprintf(stderr, "nsr-restrict: %s: %s\n", what, strerror(errno));
        exit(125);
}

static void write_file(const char *path, const char *data) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                die(path);
        size_t len = strlen(data);
        if (write(fd, data, len) != (ssize_t) len)
                die(path);
        close(fd);
}

/* A new user namespace with the caller (uid, gid) mapped to 0. */
static int enter_userns(uid_t uid, gid_t gid, int flags) {
        char map[64];
        if (unshare(CLONE_NEWUSER | flags) < 0)
                return -errno;
        int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                if (write(fd, "deny", 4) != 4)
                        die("setgroups");
                close(fd);
        }
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) gid);
        write_file("/proc/self/gid_map", map);
        return 0;
}

static int parse_errno(const char *s) {
        static const struct {
                const char *name;
                int e;
        } names[] = { { "EPERM", EPERM }, { "EINVAL", EINVAL }, { "EUSERS", EUSERS },
                      { "ENOSPC", ENOSPC }, { "EACCES", EACCES }, { "ENOSYS", ENOSYS } };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(s, names[i].name) == 0)
                        return names[i].e;
        int e = atoi(s);
        if (e <= 0 || e > 4095) {
                fprintf(stderr, "nsr-restrict: bad errno \"%s\"\n", s);
                exit(125);
        }
        return e;
}

typedef struct prog {
        struct sock_filter insns[MAX_INSNS];
        unsigned short n;
} prog;

static void emit(prog *p, struct sock_filter f) {
        if (p->n >= MAX_INSNS) {
                fprintf(stderr, "nsr-restrict: filter too long\n");
                exit(125);
        }
        p->insns[p->n++] = f;
}

/* nr fails with e (only when arg0 has flag set, if flag is not 0). */
static void rule(prog *p, long nr, unsigned flag, int e) {
        emit(p, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        emit(p, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) nr, 0, flag ? 4 : 1));
        if (flag) {
                /* The low 32 bits of the first argument (little endian). */
                emit(p, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
                emit(p, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, flag, 0, 1));
        }
        emit(p, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned) e & SECCOMP_RET_DATA)));
        if (flag)
                emit(p, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

int main(int argc, char **argv) {
        long max_userns = -1;
        int deny_userns = 0;
        int nest = 0, deny_mount = 0, deny_landlock = 0, deny_tree_attr = 0;
        const char *fakes[MAX_FAKES];
        int n_fakes = 0;
        int i = 1;
        for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (strcmp(argv[i], "--max-userns") == 0 && i + 1 < argc)
                        max_userns = atol(argv[++i]);
                else if (strcmp(argv[i], "--nest-max") == 0)
                        nest = 1;
                else if (strcmp(argv[i], "--fake-sysctl") == 0 && i + 1 < argc && n_fakes < MAX_FAKES)
                        fakes[n_fakes++] = argv[++i];
                else if (strcmp(argv[i], "--deny-userns") == 0 && i + 1 < argc)
                        deny_userns = parse_errno(argv[++i]);
                else if (strcmp(argv[i], "--deny-mount") == 0)
                        deny_mount = 1;
                else if (strcmp(argv[i], "--deny-landlock") == 0)
                        deny_landlock = 1;
                else if (strcmp(argv[i], "--deny-open-tree-attr") == 0 && i + 1 < argc)
                        deny_tree_attr = parse_errno(argv[++i]);
                else {
                        fprintf(stderr, "nsr-restrict: unknown option %s\n", argv[i]);
                        return 125;
                }
        }
        if (i + 1 >= argc) {
                fprintf(stderr, "usage: nsr-restrict [OPTION]... -- COMMAND [ARG]...\n");
                return 125;
        }
        char **cmd = argv + i + 1;
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (max_userns >= 0 || n_fakes > 0) {
                if (enter_userns(uid, gid, n_fakes ? CLONE_NEWNS : 0) < 0)
                        die("unshare(CLONE_NEWUSER)");
                uid = gid = 0;
        }
        if (n_fakes > 0) {
                if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                        die("making / private");
                if (mount("nsr-restrict", "/proc/sys/kernel", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
                        die("mounting a tmpfs on /proc/sys/kernel");
                for (int k = 0; k < n_fakes; k++) {
                        char path[256], value[64];
                        const char *eq = strchr(fakes[k], '=');
                        if (!eq || strchr(fakes[k], '/')) {
                                fprintf(stderr, "nsr-restrict: --fake-sysctl takes NAME=VALUE\n");
                                return 125;
                        }
                        snprintf(path, sizeof(path), "/proc/sys/kernel/%.*s", (int) (eq - fakes[k]), fakes[k]);
                        snprintf(value, sizeof(value), "%s\n", eq + 1);
                        write_file(path, value);
                }
        }
        if (max_userns >= 0) {
                char v[32];
                snprintf(v, sizeof(v), "%ld", max_userns);
                write_file("/proc/sys/user/max_user_namespaces", v);
        }
        if (nest) {
                int levels = 0, r;
                while (levels < 64 && (r = enter_userns(uid, gid, 0)) == 0) {
                        uid = gid = 0;
                        levels++;
                }
                fprintf(stderr, "nsr-restrict: nested %d user namespaces, then: %s\n", levels, strerror(-r));
        }
        if (deny_userns || deny_mount || deny_landlock || deny_tree_attr) {
                if (ARCH_NR == 0) {
                        fprintf(stderr, "nsr-restrict: no seccomp filter for this architecture\n");
                        return 125;
                }
                prog p = { .n = 0 };
                emit(&p, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
                emit(&p, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH_NR, 1, 0));
                emit(&p, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
                if (deny_userns) {
                        rule(&p, SYS_unshare, CLONE_NEWUSER, deny_userns);
                        rule(&p, SYS_clone, CLONE_NEWUSER, deny_userns);
                        rule(&p, SYS_clone3, 0, ENOSYS);
                }
                if (deny_mount) {
                        rule(&p, SYS_mount, 0, EPERM);
                        rule(&p, SYS_fsopen, 0, EPERM);
                        rule(&p, SYS_fsmount, 0, EPERM);
                        rule(&p, SYS_move_mount, 0, EPERM);
                        rule(&p, SYS_open_tree, 0, EPERM);
                        rule(&p, SYS_mount_setattr, 0, EPERM);
                }
                if (deny_tree_attr)
                        rule(&p, 467 /* open_tree_attr */, 0, deny_tree_attr);
                if (deny_landlock) {
                        rule(&p, SYS_landlock_create_ruleset, 0, ENOSYS);
                        rule(&p, SYS_landlock_add_rule, 0, ENOSYS);
                        rule(&p, SYS_landlock_restrict_self, 0, ENOSYS);
                }
                emit(&p, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
                struct sock_fprog fp = { .len = p.n, .filter = p.insns };
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) < 0)
                        die("loading the seccomp filter");
        }
        execvp(cmd[0], cmd);
        die(cmd[0]);
}
