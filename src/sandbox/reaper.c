/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/reaper.h"

void nsr_forwarded_sigset(sigset_t *set) {
        static const int sigs[] = { NSR_FORWARDED_SIGNALS };
        sigemptyset(set);
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                sigaddset(set, sigs[i]);
}

bool nsr_signal_interrupts(int sig) {
        return sig != SIGWINCH && sig != SIGCHLD && sig != SIGTSTP && sig != SIGCONT;
}

void nsr_signal_forward(pid_t command, int sig, unsigned flags) {
        bool terminal = sig == SIGINT || sig == SIGQUIT || sig == SIGWINCH || sig == SIGTSTP || sig == SIGCONT;
        bool ending = sig == SIGTERM || sig == SIGHUP;
        if ((flags & NSR_REAPER_TREE) && ending) {
                /* From pid 1, -1 means every process of the namespace but
                 * pid 1 itself. */
                if (kill(-1, sig) == 0)
                        return;
        } else if ((flags & NSR_REAPER_GROUP) && (terminal || ending)) {
                if (kill(-command, sig) == 0)
                        return;
        }
        (void) kill(command, sig);
}

int nsr_exit_code_from_status(int status) {
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return 255;
}

_noreturn_ void nsr_reaper_run(pid_t command, int status_fd, unsigned flags) {
        sigset_t set;
        nsr_forwarded_sigset(&set);
        sigaddset(&set, SIGCHLD);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        int command_status = -1;

        /* pid 1 gets only the signals it has asked for; a blocked signal
         * read from a signalfd counts, so nothing here can kill us except
         * SIGKILL, which takes the whole namespace down anyway. */
        for (;;) {
                pid_t p;
                int st;
                bool report = false;
                while ((p = waitpid(-1, &st, WNOHANG | ((flags & NSR_REAPER_RESUME) ? WUNTRACED : 0))) > 0)
                        if (p == command && WIFSTOPPED(st))
                                (void) kill(command, SIGCONT);
                        else if (p == command) {
                                command_status = st;
                                report = status_fd >= 0;
                        }
                bool last = p < 0 && errno == ECHILD;
                if (report) {
                        /* "last" tells the monitor we are about to exit:
                         * it returns the status without waiting for the
                         * namespaces' teardown, as bwrap does. */
                        nsr_reaper_status msg = { .wait_status = command_status, .last = last };
                        (void) nsr_write_all(status_fd, &msg, sizeof(msg));
                        status_fd = safe_close(status_fd);
                }
                if (last) {
#ifdef NSR_TEST_HOOKS
                        /* A slow teardown: the tests show nobody waits for it. */
                        const char *delay = getenv("NSRUN_TEST_PID1_EXIT_DELAY_MS");
                        if (delay)
                                (void) usleep((useconds_t) atoi(delay) * 1000);
#endif
                        break;
                }
                if (sfd < 0) {
                        /* No signalfd: block in waitpid instead. */
                        p = waitpid(-1, &st, 0);
                        if (p == command) {
                                command_status = st;
                                if (status_fd >= 0) {
                                        nsr_reaper_status msg = { .wait_status = st, .last = false };
                                        (void) nsr_write_all(status_fd, &msg, sizeof(msg));
                                        status_fd = safe_close(status_fd);
                                }
                        }
                        if (p < 0 && errno == ECHILD)
                                break;
                        continue;
                }
                struct signalfd_siginfo si;
                ssize_t n = read(sfd, &si, sizeof(si));
                if (n != (ssize_t) sizeof(si))
                        continue;
                if (si.ssi_signo != SIGCHLD && command_status == -1)
                        nsr_signal_forward(command, (int) si.ssi_signo, flags);
        }
        _exit(command_status == -1 ? 1 : nsr_exit_code_from_status(command_status));
}

#if defined(__x86_64__) && !defined(__ILP32__)
#define REAPER_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define REAPER_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define REAPER_AUDIT_ARCH AUDIT_ARCH_I386
#endif

int nsr_reaper_confine(void) {
#ifdef REAPER_AUDIT_ARCH
        /* What nsr_reaper_run() and glibc under it call. An x32 number has
         * bit 30 set, so it matches none of these. */
        static const unsigned allowed[] = {
                SYS_read,
                SYS_write,
                SYS_close,
                SYS_wait4,
                SYS_kill,
                SYS_signalfd4,
                SYS_exit,
                SYS_exit_group,
                SYS_rt_sigreturn,
                SYS_rt_sigprocmask,
                SYS_restart_syscall,
#ifdef NSR_SANITIZERS
                /* The ASan/UBSan runtime in this process: its interceptors
                 * check the signal stack, and a report needs its tid and
                 * memory. Sanitizer builds only. */
                SYS_sigaltstack,
                SYS_gettid,
                SYS_getpid,
                SYS_mmap,
                SYS_munmap,
                SYS_mprotect,
                SYS_madvise,
                SYS_sched_yield,
                SYS_futex,
                SYS_rt_sigaction,
#endif
        };
#define N_ALLOWED (sizeof(allowed) / sizeof(allowed[0]))
        struct sock_filter f[4 + 2 * N_ALLOWED + 1];
        size_t n = 0;
        f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, REAPER_AUDIT_ARCH, 1, 0);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t i = 0; i < N_ALLOWED; i++) {
                f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i], 0, 1);
                f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        }
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
#undef N_ALLOWED
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };
        return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 ? -errno : 0;
#else
        return -EOPNOTSUPP;
#endif
}
