/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsr-sysprobe: tries system calls and prints what happened, one line per
 * probe: "NAME RESULT", where RESULT is "ok", an errno name such as EPERM,
 * "unsupported" (no such call on this arch) or "refused" (see below).
 *
 *   nsr-sysprobe [--witness] PROBE...
 *   nsr-sysprobe --list
 *
 * The seccomp tests use it to show which calls a policy denies, and with
 * which errno. Many calls fail with EPERM for an unprivileged caller anyway,
 * so a plain EPERM proves nothing. --witness therefore first installs a
 * filter of its own that answers the probed calls with SECCOMP_RET_TRACE.
 * With no tracer attached that makes a call fail with ENOSYS without running
 * it, and since SECCOMP_RET_ERRNO takes precedence over SECCOMP_RET_TRACE,
 * a call the policy denies still fails with the policy's errno. So under
 * --witness: the policy's errno means "denied by the policy", ENOSYS means
 * "not denied", and the call itself never reaches the kernel.
 *
 * Every probe passes invalid arguments. The dangerous ones (reboot, kexec,
 * modules, swap, accounting, quotas) also refuse to run ("refused") unless
 * --witness is given, the caller is not root and holds no capabilities: a
 * policy that failed to deny them still could not run them.
 *
 * Built static, and also as an i386 binary where gcc -m32 works, so the same
 * probes show that the compat entry points are filtered too. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#define HAVE_HIGH_BITS 1
#elif defined(__i386__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_I386
#define HAVE_HIGH_BITS 0
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define HAVE_HIGH_BITS 1
#else
#error "add this arch's AUDIT_ARCH"
#endif

#define UNSUPPORTED (-1000)
/* Garbage in the upper half of a 64-bit register: the kernel ignores it for
 * int and unsigned int arguments, so the filter must too. */
#if HAVE_HIGH_BITS
#define HIGH (1UL << 32)
#else
#define HIGH 0UL
#endif

typedef struct probe {
        const char *name;
        long nr;            /* the call the witness traps; -1 when unsupported */
        int (*fn)(void);    /* returns 0 or -errno */
        int dangerous;
} probe;

static int ret(long r) {
        return r < 0 ? -errno : 0;
}

static int sock(unsigned long family, int type, unsigned long proto) {
        long fd = syscall(SYS_socket, family, type, proto);
        if (fd >= 0)
                close((int) fd);
        return ret(fd);
}

#ifdef SYS_socketcall
/* i386 glibc creates sockets through socketcall(2), which passes the real
 * arguments in memory. */
static int sockcall(unsigned long family, int type, unsigned long proto) {
        unsigned long args[3] = { family, (unsigned long) type, proto };
        long fd = syscall(SYS_socketcall, 1 /* SYS_SOCKET */, args);
        if (fd >= 0)
                close((int) fd);
        return ret(fd);
}
#endif

/* personality() changes this process; put it back so later probes run as usual. */
static int pers(unsigned long p) {
        long old = syscall(SYS_personality, 0xffffffffUL);
        long r = syscall(SYS_personality, p);
        int e = r < 0 ? -errno : 0;
        if (old >= 0)
                syscall(SYS_personality, (unsigned long) old);
        return e;
}

#define P(name, expr) static int p_##name(void) { return (expr); }
#define N(name) static int p_##name(void) { return UNSUPPORTED; }

P(reboot, ret(syscall(SYS_reboot, 0, 0, 0, NULL)))
P(kexec_load, ret(syscall(SYS_kexec_load, 0, 0, NULL, 0xffff0000UL)))
#ifdef SYS_kexec_file_load
P(kexec_file_load, ret(syscall(SYS_kexec_file_load, -1, -1, 0, NULL, ~0UL)))
#else
N(kexec_file_load)
#define SYS_kexec_file_load (-1)
#endif
P(init_module, ret(syscall(SYS_init_module, NULL, 0, "")))
P(finit_module, ret(syscall(SYS_finit_module, -1, "", ~0U)))
P(delete_module, ret(syscall(SYS_delete_module, "nsr-no-such-module", O_NONBLOCK)))
P(swapon, ret(syscall(SYS_swapon, "/nonexistent-nsr-swap", 0)))
P(swapoff, ret(syscall(SYS_swapoff, "/nonexistent-nsr-swap")))
P(acct, ret(syscall(SYS_acct, "/nonexistent-nsr-dir/acct")))
P(quotactl, ret(syscall(SYS_quotactl, 0x7fffffff, "/nonexistent-nsr", 0, NULL)))
P(quotactl_fd, ret(syscall(SYS_quotactl_fd, -1, 0x7fffffff, 0, NULL)))
P(syslog, ret(syscall(SYS_syslog, 9999, NULL, 0)))
P(bpf, ret(syscall(SYS_bpf, -1, NULL, 0)))
P(perf_event_open, ret(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0)))
P(userfaultfd, ret(syscall(SYS_userfaultfd, ~0U)))
P(add_key, ret(syscall(SYS_add_key, NULL, NULL, NULL, 0, 0)))
P(request_key, ret(syscall(SYS_request_key, NULL, NULL, NULL, 0)))
P(keyctl, ret(syscall(SYS_keyctl, -1, 0, 0, 0, 0)))
P(io_uring_setup, ret(syscall(SYS_io_uring_setup, 0, NULL)))
P(io_uring_enter, ret(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0)))
P(io_uring_register, ret(syscall(SYS_io_uring_register, -1, 0, NULL, 0)))
P(open_by_handle_at, ret(syscall(SYS_open_by_handle_at, -1, NULL, 0)))
P(modify_ldt, ret(syscall(SYS_modify_ldt, 1, NULL, 0)))
P(uselib, ret(syscall(SYS_uselib, NULL)))
P(personality_exec, pers(READ_IMPLIES_EXEC))
P(personality_norandom, pers(ADDR_NO_RANDOMIZE))
P(personality_exec_high, HAVE_HIGH_BITS ? pers(READ_IMPLIES_EXEC | HIGH) : UNSUPPORTED)
P(personality_linux, pers(PER_LINUX))
P(personality_linux32, pers(PER_LINUX32))
P(personality_query, pers(0xffffffffUL))
P(ioctl_tiocsti, ret(syscall(SYS_ioctl, -1, (unsigned long) TIOCSTI, NULL)))
P(ioctl_tiocsti_high, HAVE_HIGH_BITS ? ret(syscall(SYS_ioctl, -1, TIOCSTI | HIGH, NULL)) : UNSUPPORTED)
P(ioctl_tioclinux, ret(syscall(SYS_ioctl, -1, (unsigned long) TIOCLINUX, NULL)))
P(ioctl_tcgets, ret(syscall(SYS_ioctl, -1, (unsigned long) TCGETS, NULL)))
P(socket_unix, sock(AF_UNIX, SOCK_STREAM, 0))
P(socket_unix_high, HAVE_HIGH_BITS ? sock(AF_UNIX | HIGH, SOCK_STREAM, 0) : UNSUPPORTED)
P(socket_inet, sock(AF_INET, SOCK_DGRAM, 0))
P(socket_inet6, sock(AF_INET6, SOCK_DGRAM, 0))
P(socket_netlink_route, sock(AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */))
P(socket_netlink_audit, sock(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */))
P(socket_netlink_route_high, HAVE_HIGH_BITS ? sock(AF_NETLINK, SOCK_RAW, 0 | HIGH) : UNSUPPORTED)
P(socket_packet, sock(AF_PACKET, SOCK_DGRAM, 0))
P(socket_packet_high, HAVE_HIGH_BITS ? sock(AF_PACKET | HIGH, SOCK_DGRAM, 0) : UNSUPPORTED)
P(socket_alg, sock(AF_ALG, SOCK_SEQPACKET, 0))
P(socket_vsock, sock(AF_VSOCK, SOCK_STREAM, 0))
P(socket_bluetooth, sock(AF_BLUETOOTH, SOCK_STREAM, 0))
P(socket_key, sock(AF_KEY, SOCK_RAW, 2))
P(socket_family_99, sock(99, SOCK_STREAM, 0))
#ifdef SYS_socketcall
P(socketcall_unix, sockcall(AF_UNIX, SOCK_STREAM, 0))
P(socketcall_packet, sockcall(AF_PACKET, SOCK_DGRAM, 0))
#else
N(socketcall_unix)
N(socketcall_packet)
#define SYS_socketcall (-1)
#endif
P(mount, ret(syscall(SYS_mount, NULL, NULL, NULL, 0, NULL)))
#ifdef SYS_umount
P(umount, ret(syscall(SYS_umount, "/nonexistent-nsr")))
#else
N(umount)
#define SYS_umount (-1)
#endif
P(umount2, ret(syscall(SYS_umount2, "/nonexistent-nsr", 0)))
P(pivot_root, ret(syscall(SYS_pivot_root, "/nonexistent-nsr", "/nonexistent-nsr")))
P(move_mount, ret(syscall(SYS_move_mount, -1, "", -1, "", 0)))
P(open_tree, ret(syscall(SYS_open_tree, -1, "", 0)))
P(open_tree_attr, ret(syscall(SYS_open_tree_attr, -1, "", 0, NULL, 0)))
P(fsopen, ret(syscall(SYS_fsopen, "nsr-no-such-fs", 0)))
P(fsmount, ret(syscall(SYS_fsmount, -1, 0, 0)))
P(fsconfig, ret(syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0)))
P(fspick, ret(syscall(SYS_fspick, -1, "", 0)))
P(mount_setattr, ret(syscall(SYS_mount_setattr, -1, "", 0, NULL, 0)))
P(setns, ret(syscall(SYS_setns, -1, 0)))
P(unshare_user, ret(syscall(SYS_unshare, CLONE_NEWUSER)))
P(unshare_none, ret(syscall(SYS_unshare, 0)))
/* CLONE_NEWUSER with CLONE_FS is invalid, so the kernel never makes a child. */
P(clone_user, ret(syscall(SYS_clone, CLONE_NEWUSER | CLONE_FS, NULL, NULL, NULL, NULL)))
P(clone3, ret(syscall(SYS_clone3, NULL, 0)))
P(ptrace, ret(syscall(SYS_ptrace, -1L, 0, NULL, NULL)))
P(process_vm_readv, ret(syscall(SYS_process_vm_readv, 0, NULL, 0, NULL, 0, ~0UL)))
P(process_vm_writev, ret(syscall(SYS_process_vm_writev, 0, NULL, 0, NULL, 0, ~0UL)))
/* Calls on another process (fallback.policy): pid -1 names none, so even a
 * call that got through would change nothing. */
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
P(prlimit64_other, ret(syscall(SYS_prlimit64, -1, 0, NULL, NULL)))
P(prlimit64_self, ret(syscall(SYS_prlimit64, 0, 0, NULL, NULL)))
P(sched_setaffinity_other, ret(syscall(SYS_sched_setaffinity, -1, 0, NULL)))
P(sched_setaffinity_self, ret(syscall(SYS_sched_setaffinity, 0, 0, NULL)))
P(sched_setparam_other, ret(syscall(SYS_sched_setparam, -1, NULL)))
P(sched_setscheduler_other, ret(syscall(SYS_sched_setscheduler, -1, 0, NULL)))
P(sched_setattr_other, ret(syscall(SYS_sched_setattr, -1, NULL, 0)))
P(migrate_pages_other, ret(syscall(SYS_migrate_pages, -1, 0, NULL, NULL)))
P(move_pages_other, ret(syscall(SYS_move_pages, -1, 0, NULL, NULL, NULL, 0)))
P(get_robust_list_other, ret(syscall(SYS_get_robust_list, -1, NULL, NULL)))
P(setpriority_other, ret(syscall(SYS_setpriority, 0, -1, 0)))
P(setpriority_self, ret(syscall(SYS_setpriority, 0, 0, 0x7fffffff)))
/* PRIO_USER with a uid nobody has: harmless should it get through. */
P(setpriority_user, ret(syscall(SYS_setpriority, 2 | HIGH, 0, 0x7fffffff)))
P(ioprio_set_other, ret(syscall(SYS_ioprio_set, 1, -1, 0)))
P(ioprio_set_self, ret(syscall(SYS_ioprio_set, 1, 0, -1)))
P(ioprio_set_user, ret(syscall(SYS_ioprio_set, 3 | HIGH, 0, -1)))
P(pidfd_open, ret(syscall(SYS_pidfd_open, -1, 0)))
P(pidfd_getfd, ret(syscall(SYS_pidfd_getfd, -1, -1, 0)))
P(process_madvise, ret(syscall(SYS_process_madvise, -1, NULL, 0, 0, 0)))
P(process_mrelease, ret(syscall(SYS_process_mrelease, -1, 0)))
P(kcmp, ret(syscall(SYS_kcmp, -1, -1, 0, 0, 0)))

#define R(name, nr, danger) { #name, nr, p_##name, danger }
static const probe probes[] = {
        R(reboot, SYS_reboot, 1),
        R(kexec_load, SYS_kexec_load, 1),
        R(kexec_file_load, SYS_kexec_file_load, 1),
        R(init_module, SYS_init_module, 1),
        R(finit_module, SYS_finit_module, 1),
        R(delete_module, SYS_delete_module, 1),
        R(swapon, SYS_swapon, 1),
        R(swapoff, SYS_swapoff, 1),
        R(acct, SYS_acct, 1),
        R(quotactl, SYS_quotactl, 1),
        R(quotactl_fd, SYS_quotactl_fd, 1),
        R(syslog, SYS_syslog, 0),
        R(bpf, SYS_bpf, 0),
        R(perf_event_open, SYS_perf_event_open, 0),
        R(userfaultfd, SYS_userfaultfd, 0),
        R(add_key, SYS_add_key, 0),
        R(request_key, SYS_request_key, 0),
        R(keyctl, SYS_keyctl, 0),
        R(io_uring_setup, SYS_io_uring_setup, 0),
        R(io_uring_enter, SYS_io_uring_enter, 0),
        R(io_uring_register, SYS_io_uring_register, 0),
        R(open_by_handle_at, SYS_open_by_handle_at, 0),
        R(modify_ldt, SYS_modify_ldt, 0),
        R(uselib, SYS_uselib, 0),
        R(personality_exec, SYS_personality, 0),
        R(personality_norandom, SYS_personality, 0),
        R(personality_exec_high, SYS_personality, 0),
        R(personality_linux, SYS_personality, 0),
        R(personality_linux32, SYS_personality, 0),
        R(personality_query, SYS_personality, 0),
        R(ioctl_tiocsti, SYS_ioctl, 0),
        R(ioctl_tiocsti_high, SYS_ioctl, 0),
        R(ioctl_tioclinux, SYS_ioctl, 0),
        R(ioctl_tcgets, SYS_ioctl, 0),
        R(socket_unix, SYS_socket, 0),
        R(socket_unix_high, SYS_socket, 0),
        R(socket_inet, SYS_socket, 0),
        R(socket_inet6, SYS_socket, 0),
        R(socket_netlink_route, SYS_socket, 0),
        R(socket_netlink_route_high, SYS_socket, 0),
        R(socket_netlink_audit, SYS_socket, 0),
        R(socket_packet, SYS_socket, 0),
        R(socket_packet_high, SYS_socket, 0),
        R(socket_alg, SYS_socket, 0),
        R(socket_vsock, SYS_socket, 0),
        R(socket_bluetooth, SYS_socket, 0),
        R(socket_key, SYS_socket, 0),
        R(socket_family_99, SYS_socket, 0),
        R(socketcall_unix, SYS_socketcall, 0),
        R(socketcall_packet, SYS_socketcall, 0),
        R(mount, SYS_mount, 0),
        R(umount, SYS_umount, 0),
        R(umount2, SYS_umount2, 0),
        R(pivot_root, SYS_pivot_root, 0),
        R(move_mount, SYS_move_mount, 0),
        R(open_tree, SYS_open_tree, 0),
        R(open_tree_attr, SYS_open_tree_attr, 0),
        R(fsopen, SYS_fsopen, 0),
        R(fsmount, SYS_fsmount, 0),
        R(fsconfig, SYS_fsconfig, 0),
        R(fspick, SYS_fspick, 0),
        R(mount_setattr, SYS_mount_setattr, 0),
        R(setns, SYS_setns, 0),
        R(unshare_user, SYS_unshare, 0),
        R(unshare_none, SYS_unshare, 0),
        R(clone_user, SYS_clone, 0),
        R(clone3, SYS_clone3, 0),
        R(ptrace, SYS_ptrace, 0),
        R(process_vm_readv, SYS_process_vm_readv, 0),
        R(process_vm_writev, SYS_process_vm_writev, 0),
        R(prlimit64_other, SYS_prlimit64, 0),
        R(prlimit64_self, SYS_prlimit64, 0),
        R(sched_setaffinity_other, SYS_sched_setaffinity, 0),
        R(sched_setaffinity_self, SYS_sched_setaffinity, 0),
        R(sched_setparam_other, SYS_sched_setparam, 0),
        R(sched_setscheduler_other, SYS_sched_setscheduler, 0),
        R(sched_setattr_other, SYS_sched_setattr, 0),
        R(migrate_pages_other, SYS_migrate_pages, 0),
        R(move_pages_other, SYS_move_pages, 0),
        R(get_robust_list_other, SYS_get_robust_list, 0),
        R(setpriority_other, SYS_setpriority, 0),
        R(setpriority_self, SYS_setpriority, 0),
        R(setpriority_user, SYS_setpriority, 1),
        R(ioprio_set_other, SYS_ioprio_set, 0),
        R(ioprio_set_self, SYS_ioprio_set, 0),
        R(ioprio_set_user, SYS_ioprio_set, 1),
        R(pidfd_open, SYS_pidfd_open, 0),
        R(pidfd_getfd, SYS_pidfd_getfd, 0),
        R(process_madvise, SYS_process_madvise, 0),
        R(process_mrelease, SYS_process_mrelease, 0),
        R(kcmp, SYS_kcmp, 0),
};

static const probe *find(const char *name) {
        for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
                if (strcmp(probes[i].name, name) == 0)
                        return &probes[i];
        return NULL;
}

/* SECCOMP_RET_TRACE for the probed calls, ALLOW for everything else. */
static int install_witness(const probe **list, int n) {
        struct sock_filter f[4 + 2 * 128];
        int pc = 0;
        f[pc++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        f[pc++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0);
        f[pc++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f[pc++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (int i = 0; i < n && i < 128; i++) {
                if (list[i]->nr < 0)
                        continue;
                f[pc++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) list[i]->nr, 0, 1);
                f[pc++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
        }
        f[pc++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { .len = (unsigned short) pc, .filter = f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
}

static int no_capabilities(void) {
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        int none = 0;
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "CapEff:", 7) == 0)
                        none = strtoull(line + 7, NULL, 16) == 0;
        fclose(f);
        return none;
}

static const char *errname(int e) {
        const char *n = strerrorname_np(e);
        return n ? n : "E?";
}

int main(int argc, char **argv) {
        int witness = 0, first = 1;
        if (argc > 1 && strcmp(argv[1], "--list") == 0) {
                for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
                        printf("%s%s\n", probes[i].name, probes[i].dangerous ? " dangerous" : "");
                return 0;
        }
        if (argc > 1 && strcmp(argv[1], "--witness") == 0) {
                witness = 1;
                first = 2;
        }
        if (first >= argc) {
                fputs("usage: nsr-sysprobe [--witness] PROBE... | --list\n", stderr);
                return 2;
        }
        const probe *list[80];
        int n = 0;
        for (int i = first; i < argc && n < 80; i++) {
                list[n] = find(argv[i]);
                if (!list[n]) {
                        fprintf(stderr, "nsr-sysprobe: unknown probe %s\n", argv[i]);
                        return 2;
                }
                n++;
        }
        int safe = witness && geteuid() != 0 && getuid() != 0 && no_capabilities();
        if (witness) {
                int r = install_witness(list, n);
                if (r < 0) {
                        fprintf(stderr, "nsr-sysprobe: cannot install the witness filter: %s\n", strerror(-r));
                        return 2;
                }
        }
        for (int i = 0; i < n; i++) {
                const probe *p = list[i];
                if (p->dangerous && !safe) {
                        printf("%s refused\n", p->name);
                        continue;
                }
                int r = p->fn();
                if (r == UNSUPPORTED)
                        printf("%s unsupported\n", p->name);
                else if (r == 0)
                        printf("%s ok\n", p->name);
                else
                        printf("%s %s\n", p->name, errname(-r));
                fflush(stdout);
        }
        return 0;
}
