/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The connect listener program and its chaining (connect.h). */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/net.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "seccomp/compile.h"
#include "seccomp/connect.h"

static void release_ctx(scmp_filter_ctx *c) {
        if (*c)
                seccomp_release(*c);
}

static int connect_prog_compile(char **ret, size_t *ret_len, nsr_error *err) {
        _cleanup_(release_ctx) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return nsr_error_setx(err, ENOMEM, "seccomp_init failed");
        uint32_t arches[4];
        size_t n = nsr_seccomp_arches(arches, ELEMENTSOF(arches));
        int k = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        for (size_t i = 1; k >= 0 && i < n; i++)
                k = seccomp_arch_add(ctx, arches[i]);
        /* libseccomp adds socketcall(SYS_CONNECT, ...) on i386 by itself. */
        if (k >= 0)
                k = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
        /* A process that shares another's fd table without being its
         * thread could swap a descriptor under a unix connect that goes on
         * (sandbox/direct.h); clone3 hides its flags from a filter, so
         * ENOSYS sends glibc back to clone, as the shipped policies do. */
        if (k >= 0)
                k = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_FILES | CLONE_THREAD, CLONE_FILES));
        if (k >= 0)
                k = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        static const char *const uring[] = { "io_uring_setup", "io_uring_enter", "io_uring_register" };
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(uring); i++) {
                int nr = seccomp_syscall_resolve_name(uring[i]);
                if (nr != __NR_SCMP_ERROR)
                        k = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
        }
        if (k < 0)
                return nsr_error_setx(err, -k, "libseccomp could not build the connect filter: %s", strerror(-k));
        return nsr_seccomp_export(ctx, ret, ret_len, err);
}

/* What the program is, for the compile cache's key (with nsrun's binary,
 * libseccomp and the arches, as for a policy): change the generation when
 * the rules above change. */
#define CONNECT_PROG_ID "nsrun connect program 1"

int nsr_connect_prog(char **ret, size_t *ret_len, nsr_error *err) {
        /* Compiling it takes about 0.1 ms, a fifth of what --allow-host
         * costs a run: it comes from the cache when it can. */
        return nsr_seccomp_builtin_bpf(CONNECT_PROG_ID, connect_prog_compile, ret, ret_len, err);
}

int nsr_bpf_chain(const char *first, size_t first_len, const char *second, size_t second_len, char **ret,
                  size_t *ret_len) {
        size_t a = first_len / sizeof(struct sock_filter), b = second_len / sizeof(struct sock_filter);
        if (first_len % sizeof(struct sock_filter) || second_len % sizeof(struct sock_filter) || !a || !b)
                return -EINVAL;
        if (a + b > BPF_MAXINSNS)
                return -E2BIG;
        struct sock_filter *out = nsr_malloc0((a + b) * sizeof(*out));
        memcpy(out, first, first_len);
        memcpy(out + a, second, second_len);
        /* Jumps are forward and relative: an "allow" return becomes a
         * jump to the first instruction of second, which starts from the
         * seccomp_data again (its first load is absolute). */
        for (size_t i = 0; i < a; i++) {
                if (BPF_CLASS(out[i].code) != BPF_RET)
                        continue;
                if (BPF_RVAL(out[i].code) != BPF_K) {
                        free(out);
                        return -EOPNOTSUPP;
                }
                if ((out[i].k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ALLOW)
                        out[i] = (struct sock_filter) BPF_STMT(BPF_JMP | BPF_JA, (uint32_t) (a - i - 1));
        }
        *ret = (char *) out;
        *ret_len = (a + b) * sizeof(*out);
        return 0;
}

bool nsr_connect_is_connect(const struct seccomp_data *d, int *ret_args) {
        *ret_args = 0;
        int nr = seccomp_syscall_resolve_name_arch(d->arch, "connect");
        if (nr != __NR_SCMP_ERROR && d->nr == nr)
                return true;
#ifdef __x86_64__
        /* x32 shares the native arch value, its numbers carry a bit. */
        if (d->arch == AUDIT_ARCH_X86_64) {
                nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X32, "connect");
                if (nr != __NR_SCMP_ERROR && d->nr == nr)
                        return true;
        }
#endif
        nr = seccomp_syscall_resolve_name_arch(d->arch, "socketcall");
        if (nr > 0 && d->nr == nr && (uint32_t) d->args[0] == SYS_CONNECT) {
                *ret_args = 1;
                return true;
        }
        return false;
}

bool nsr_connect_inject_available(void) {
        return !nsr_test_hook_on("NSRUN_TEST_NO_FD_INJECT") && nsr_kernel_at_least(5, 14);
}
