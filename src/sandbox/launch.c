/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process model:
 *
 *   nsrun (monitor, host namespaces)
 *     └─ child, cloned into the new namespaces: maps ids, builds the root
 *          └─ pid 1 reaper (unless --as-pid-1 or nothing needs one)
 *               └─ the command, or in a session the agent (sandbox/agent.c),
 *                  which forks each step (docs/sessions.md)
 *
 * The child reports a setup failure as an nsr_error over the close-on-exec
 * "error pipe" and exits; the monitor prints it. A successful exec closes
 * the pipe, which is how the monitor knows the command really started.
 *
 * The monitor waits in one event loop (base/evloop.h): signals, the error
 * and status pipes, the deadline, the refused-call listener and the
 * session server's fds are each a source. With --allow-host the relay is
 * served by the egress helper (egresshelper.h), a confined process of its
 * own, never here. */
#include "config.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "base/evloop.h"
#include "base/outq.h"
#include "base/sockmsg.h"
#include "base/syscalls.h"
#include "base/timing.h"
#include "cli/runctl.h"
#include "egress/relay.h"
#include "sandbox/agent.h"
#include "sandbox/caps.h"
#include "sandbox/cgroup.h"
#include "sandbox/egresshelper.h"
#include "sandbox/landlock.h"
#include "sandbox/launch.h"
#include "sandbox/netns.h"
#include "sandbox/reaper.h"
#include "sandbox/rootfs.h"
#include "seccomp/refused.h"

extern char **environ;

typedef struct launch {
        const nsr_plan *plan;
        const nsr_launch_extra *extra;
        nsr_bpf *progs; /* every BPF program, in load order */
        size_t n_progs;
        char **env;
        uint64_t caps_keep;
        bool caps_touch;
        bool caps_bounding;  /* also cut the bounding set (user namespaces) */
        bool landlock_scope; /* asked for and available (ABI >= 6) */
        bool can_map_all;    /* uid 0 with CAP_SETUID and CAP_SETGID: may map every id it has */
        char *host_tty;
        char *old_cwd;
        uid_t real_uid;
        gid_t real_gid;
        int err_pipe[2];           /* child -> monitor: nsr_error, CLOEXEC */
        int status_pipe[2];        /* reaper -> monitor: the command's wait status */
        int go_pipe[2];            /* monitor -> child: release; HUP = monitor died */
        int pid_pipe[2];           /* --pidns: the sandbox's real pid, child -> monitor */
        nsr_relay *relay;          /* --allow-host: the egress relay, or NULL */
        nsr_egress_helper *helper; /* the process that serves it */
        sigset_t old_mask;
        struct rlimit old_nofile;
        bool raised_nofile;
        int snmp_fd, snmp6_fd; /* the sandbox's /proc/net/snmp{,6}, -1 when unused */
        nsr_cgroup *cgroup;    /* --memory, --cpu, --pids: the run's cgroup */
        char *notify_prog;     /* the listener form of progs[0] (refused.h), or NULL */
        size_t notify_len;
        int notify_sock[2]; /* command -> monitor: the listener fd */
        int listener;       /* the monitor's listener fd, or -1 */
        nsr_outq events_q;  /* --events-fd: the monitor's lines (timeout, refused calls) */
} launch;

/* ---- the sandbox child ---------------------------------------------- */

/* Waits until the coarse realtime clock is past fence. A host write made
 * from then on gets a ctime of at least the coarse clock's reading, so it
 * is after fence; one made before fence has a ctime at most fence (even a
 * fine-grained, multigrain one). The coarse clock moves only at a tick,
 * and can lag the fine one by more than a tick (5 ms on average, 7 at
 * most, with HZ=250 on the VM of bench/README.md), so this often waits:
 * in steps of at most FENCE_POLL_NS, since the gap to fence says nothing
 * about when the next tick comes (1 ms steps overshot it by 0.5 ms on
 * average). At most about a second in all, as before. */
#define FENCE_POLL_NS 200000L
static void wait_fence(const struct timespec *fence) {
        if (fence->tv_sec == 0 && fence->tv_nsec == 0)
                return;
        for (int i = 0; i < 5000; i++) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME_COARSE, &now);
                if (now.tv_sec > fence->tv_sec || (now.tv_sec == fence->tv_sec && now.tv_nsec > fence->tv_nsec))
                        return;
                long gap = (fence->tv_sec - now.tv_sec) * 1000000000L + fence->tv_nsec - now.tv_nsec;
                struct timespec d = { .tv_sec = 0, .tv_nsec = gap < FENCE_POLL_NS ? gap + 1 : FENCE_POLL_NS };
                (void) nanosleep(&d, NULL);
        }
}

_noreturn_ static void child_fail(launch *l, const nsr_error *e) {
        (void) nsr_write_all(l->err_pipe[1], e, sizeof(*e));
        _exit(1);
}

/* file is relative to /proc. The child keeps an fd to the /proc it started
 * with, because after the pivot the sandbox's /proc may be missing, read-only
 * or belong to another pid namespace. */
static int write_proc(int procfd, const char *file, const char *data) {
        _cleanup_close_ int fd = openat(procfd, file, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return nsr_write_all(fd, data, strlen(data));
}

/* count is 1 for the usual single mapping; project mode maps real root's
 * whole range so overlay copy-up works for files of every owner. */
static int write_id_maps(int procfd, uid_t inside_uid, uid_t outside_uid, gid_t inside_gid, gid_t outside_gid,
                         bool deny_setgroups, unsigned count, nsr_error *err) {
        char buf[64];
        int r;
        snprintf(buf, sizeof(buf), "%u %u %u\n", (unsigned) inside_uid, (unsigned) outside_uid, count);
        r = write_proc(procfd, "self/uid_map", buf);
        if (r < 0)
                return nsr_error_setk(err, NSR_ERR_USERNS_SETUP, -r, "setting up uid map");
        if (deny_setgroups) {
                r = write_proc(procfd, "self/setgroups", "deny\n");
                if (r < 0 && r != -ENOENT)
                        return nsr_error_setk(err, NSR_ERR_USERNS_SETUP, -r, "error writing to setgroups");
        }
        snprintf(buf, sizeof(buf), "%u %u %u\n", (unsigned) inside_gid, (unsigned) outside_gid, count);
        r = write_proc(procfd, "self/gid_map", buf);
        if (r < 0)
                return nsr_error_setk(err, NSR_ERR_USERNS_SETUP, -r, "setting up gid map");
        return 0;
}

/* Real root in project mode maps its whole id range, which only a process
 * outside the new user namespace may write. */
static bool parent_maps_ids(const launch *l) {
        return l->plan->map_all_ids && l->can_map_all && l->plan->unshare_user && l->plan->userns_block_fd == -1;
}

/* The child waits for the monitor's go before it sets anything up: the
 * monitor writes the id maps first, or the user asked to block. */
static bool child_waits_early(const launch *l) {
        return l->plan->userns_block_fd != -1 || parent_maps_ids(l);
}

/* Otherwise the child builds the sandbox at once but waits before the
 * command starts while the monitor writes --info-fd/--json-status-fd: if
 * that write fails, the command must never run (as with bwrap). */
static bool child_waits_late(const launch *l) {
        return !child_waits_early(l) && (l->plan->info_fd != -1 || l->plan->json_status_fd != -1);
}

/* Is the monitor still there? It holds the write end of go_pipe for its
 * whole life, so a hangup on our end means it is gone. getppid() cannot
 * tell across a pid namespace. */
static bool monitor_alive(const launch *l) {
        if (l->go_pipe[0] < 0)
                return true;
        struct pollfd p = { .fd = l->go_pipe[0], .events = POLLIN };
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
                return false;
        return true;
}

static int set_parent_death(const launch *l, nsr_error *err) {
        if (!l->plan->die_with_parent)
                return 0;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                return nsr_error_set(err, errno, "prctl");
        if (!monitor_alive(l))
                _exit(1);
        return 0;
}

/* The command's first program goes in with a listener when the refused
 * calls are recorded: the fd goes up to the monitor, which answers them.
 * Where that fails (EBUSY: an enclosing sandbox has a listener already),
 * the plain program, unrecorded. */
static bool load_listener(const launch *l) {
        if (!l->notify_prog || l->notify_sock[1] < 0)
                return false;
        int fd = nsr_refused_install(l->notify_prog, l->notify_len);
        if (fd < 0)
                return false;
        int r = nsr_refused_send_fd(l->notify_sock[1], fd);
        close(fd);
        /* A listener no one holds would answer every refused call with
         * ENOSYS: the plain program goes in on top, and its errno wins
         * (SECCOMP_RET_ERRNO takes precedence over USER_NOTIF). */
        return r >= 0;
}

static int load_seccomp(const launch *l, bool listener, nsr_error *err) {
        for (size_t i = 0; i < l->n_progs; i++) {
                if (i == 0 && listener && load_listener(l))
                        continue;
                struct sock_fprog prog = {
                        .len = (unsigned short) (l->progs[i].len / 8),
                        .filter = (struct sock_filter *) l->progs[i].data,
                };
                if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
                        if (errno == EINVAL)
                                return nsr_error_setx(
                                        err, EINVAL,
                                        "Unable to set up system call filtering as requested: "
                                        "prctl(PR_SET_SECCOMP) reported EINVAL. (Hint: this requires a kernel "
                                        "configured with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER.)");
                        return nsr_error_set(err, errno, "prctl(PR_SET_SECCOMP)");
                }
        }
        return 0;
}

#ifdef NSR_TEST_HOOKS
/* Makes one of pid 1's confinement steps fail, to show the failure is
 * fatal: NSRUN_TEST_PID1_FAIL=caps|nnp|seccomp. */
static bool pid1_test_fail(const char *step) {
        const char *v = getenv("NSRUN_TEST_PID1_FAIL");
        return v && streq(v, step);
}
#else
static bool pid1_test_fail(const char *step) {
        (void) step;
        return false;
}
#endif

/* pid 1's own confinement: no capabilities in any set, no_new_privs, and
 * a seccomp filter whenever the command gets one (nsrun's own policies:
 * the reaper's small allow-list, else the command's programs; the
 * caller's bwrap programs: those, as bwrap loads them). pid 1 shares the
 * command's namespaces and can be ptraced or signalled from them, so a
 * step that fails must stop the run, not be skipped. */
static int confine_pid1(const launch *l, uint64_t bound, nsr_error *err) {
        const nsr_plan *p = l->plan;
        int r = nsr_caps_bound_drop(bound, err);
        if (r < 0)
                return r;
        r = nsr_caps_set(0, err);
        if (r < 0)
                return r;
        uint64_t eff = 0, perm = 0;
        if (nsr_caps_current(&eff) < 0 || nsr_caps_permitted(&perm) < 0 || eff || perm || pid1_test_fail("caps"))
                return nsr_error_setx(err, EPERM, "pid 1: cannot drop its capabilities");
        if (pid1_test_fail("nnp"))
                errno = EPERM;
        if (pid1_test_fail("nnp") || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return nsr_error_set(err, errno, "pid 1: prctl(PR_SET_NO_NEW_PRIVS) failed");
        if (l->n_progs == 0)
                return 0;
        if (pid1_test_fail("seccomp"))
                return nsr_error_setx(err, EINVAL, "pid 1: cannot load its seccomp filter");
        if (p->n_seccomp == 0 && nsr_reaper_confine() >= 0)
                return 0;
        r = load_seccomp(l, false, err);
        return r < 0 ? nsr_error_prefix(err, "pid 1") : 0;
}

static bool has_slash(const char *s) {
        return strchr(s, '/') != NULL;
}

/* execvp with the sandbox's PATH (not nsrun's), the way bwrap behaves after
 * editing its own environment. */
static void exec_command(launch *l) {
        const nsr_plan *p = l->plan;
        char **argv = p->argv;
        _cleanup_free_ char **args = NULL;
        if (p->argv0) {
                size_t n = nsr_strv_length(argv);
                args = nsr_malloc0((n + 1) * sizeof(char *));
                for (size_t i = 0; i < n; i++)
                        args[i] = argv[i];
                args[0] = p->argv0;
                argv = args;
        }
        environ = l->env;
        nsr_timing_mark_now(p->timing, "command: execve");
        if (has_slash(p->argv[0]))
                execv(p->argv[0], argv);
        else
                execvp(p->argv[0], argv);
}

static void choose_cwd(launch *l, nsr_error *err, int *r) {
        const nsr_plan *p = l->plan;
        const char *cwd = NULL;
        if (p->chdir) {
                if (chdir(p->chdir) < 0) {
                        *r = nsr_error_set(err, errno, "Can't chdir to %s", p->chdir);
                        return;
                }
                cwd = p->chdir;
        } else if (l->old_cwd && chdir(l->old_cwd) == 0)
                cwd = l->old_cwd;
        else {
                const char *home = NULL;
                for (char **e = l->env; e && *e; e++)
                        if (nsr_startswith(*e, "HOME="))
                                home = *e + 5;
                if (home && chdir(home) == 0)
                        cwd = home;
                else
                        cwd = "/";
        }
        /* PWD is always set last, even after --clearenv. */
        _cleanup_free_ char *pwd = nsr_asprintf("PWD=%s", cwd);
        bool replaced = false;
        for (char **e = l->env; e && *e; e++)
                if (nsr_startswith(*e, "PWD=")) {
                        free(*e);
                        *e = TAKE_PTR(pwd);
                        replaced = true;
                        break;
                }
        if (!replaced)
                nsr_strv_push(&l->env, TAKE_PTR(pwd));
        *r = 0;
}

static int take_locks(const nsr_plan *p, nsr_error *err) {
        for (size_t i = 0; p->lock_files && p->lock_files[i]; i++) {
                /* Held by the process that becomes pid 1; POSIX locks belong
                 * to the process, so the command's copy of the fd (closed
                 * on exec) does not release it. */
                int fd = open(p->lock_files[i], O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return nsr_error_set(err, errno, "Unable to open lock file %s", p->lock_files[i]);
                struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
                if (fcntl(fd, F_SETLK, &fl) < 0)
                        return nsr_error_set(err, errno, "Unable to lock file %s", p->lock_files[i]);
        }
        return 0;
}

static bool need_reaper(const nsr_plan *p) {
        if (p->as_pid_1)
                return false;
        return p->unshare_pid || p->lock_files || p->sync_fd != -1;
}

/* The command's own confinement, the last steps before its exec: the
 * bounding set, the capabilities it keeps, no_new_privs, the Landlock
 * scopes, the caller's rlimit back, no inherited fd, the seccomp filters
 * and the signal mask. A one-shot run takes them once before its exec; a
 * session's agent takes them once on itself, and every command it forks
 * inherits them (sandbox/agent.h), so both are confined by this one
 * function. The fds it needs (the refused-call socket) are its own: the
 * agent keeps them (nsr_session_agent.confine_fds) and this closes them. */
static int confine_command(launch *l, uint64_t bound, nsr_error *e) {
        const nsr_plan *p = l->plan;
        int r;
        if (l->caps_bounding && (bound & ~l->caps_keep) && (r = nsr_caps_bound(l->caps_keep, e)) < 0)
                return r;
        if (l->caps_bounding && (r = nsr_caps_bound_verify(l->caps_keep, e)) < 0)
                return r;
        if (l->caps_touch && (r = nsr_caps_set(l->caps_keep, e)) < 0)
                return r;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return nsr_error_set(e, errno, "prctl(PR_SET_NO_NEW_PRIVS) failed");
        if (l->landlock_scope && (r = nsr_landlock_scope(e)) < 0)
                return r;
        if (l->raised_nofile)
                (void) setrlimit(RLIMIT_NOFILE, &l->old_nofile);
        if ((r = nsr_runctl_apply_rlimits(&p->run, e)) < 0)
                return r;
        /* An fd the caller leaked would reach past the sandbox: a dir fd
         * escapes the read-only root, a file fd can be reopened writable
         * through /proc/self/fd. */
        if (p->close_inherited_fds && nsr_fds_cloexec_above_stdio(p->sync_fd) < 0)
                return nsr_error_set(e, errno, "cannot close the inherited file descriptors");
        /* With the refused record, the first program goes in as its
         * listener form, and the listener fd goes up to the monitor. */
        if ((r = load_seccomp(l, true, e)) < 0)
                return r;
        l->notify_sock[1] = safe_close(l->notify_sock[1]);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, &l->old_mask, NULL);
        return 0;
}

typedef struct agent_ctx {
        launch *l;
        uint64_t bound;
} agent_ctx;

static int agent_confine(void *data, nsr_error *e) {
        agent_ctx *c = data;
        return confine_command(c->l, c->bound, e);
}

/* A step's environment from its caller's: the plan's edits and the
 * relay's proxy variables, as prepare() gives a one-shot command. */
static char **agent_step_env(void *data, char *const *base) {
        agent_ctx *c = data;
        char **env = nsr_plan_build_env(c->l->plan, base);
        if (c->l->relay)
                nsr_relay_env(&env);
        return env;
}

/* A session: the process that would run the command becomes the agent,
 * which forks each command on the monitor's request (agent.h). */
_noreturn_ static void run_agent(launch *l, uint64_t bound) {
        agent_ctx c = { .l = l, .bound = bound };
        nsr_session_agent ag = {
                .sock = l->extra->session->agent_fd,
                .setup_fd = l->err_pipe[1],
                /* The refused-call socket belongs to the confinement: the
                 * agent's close of every other fd must leave it. */
                .confine_fds = { l->notify_sock[1], -1 },
                .env = l->env,
                .confine = agent_confine,
                .step_env = agent_step_env,
                .data = &c,
        };
        nsr_session_agent_run(&ag);
}

/* The child keeps none of the monitor's ends of the pipes, nor the fds
 * only the monitor writes to. */
static void close_monitor_ends(launch *l) {
        const nsr_plan *p = l->plan;

        l->err_pipe[0] = safe_close(l->err_pipe[0]);
        l->status_pipe[0] = safe_close(l->status_pipe[0]);
        l->go_pipe[1] = safe_close(l->go_pipe[1]);
        l->pid_pipe[0] = safe_close(l->pid_pipe[0]);
        l->notify_sock[0] = safe_close(l->notify_sock[0]);
        if (l->extra && l->extra->session)
                close(l->extra->session->monitor_fd);
        if (p->info_fd >= 0)
                close(p->info_fd);
        if (p->json_status_fd >= 0)
                close(p->json_status_fd);
}

/* --userns: the monitor joined the user namespace; switch ids only when
 * asked to, keeping the caps setup needs. */
static void switch_ids(launch *l) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };

        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "prctl(PR_SET_KEEPCAPS) failed"), &e));
        if (p->gid != l->real_gid && setresgid(p->gid, p->gid, p->gid) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "unable to switch to gid %u", (unsigned) p->gid), &e));
        if (p->uid != l->real_uid && setresuid(p->uid, p->uid, p->uid) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "unable to switch to uid %u", (unsigned) p->uid), &e));
        uint64_t all = 0;
        (void) nsr_caps_permitted(&all);
        if (nsr_caps_raise_effective(all) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "capset failed"), &e));
}

/* --pidns: the pid namespace joined; the process that goes on is in it. */
static void join_pidns(launch *l) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };

        /* Join the pid namespace: only children enter it, so fork;
         * with --unshare-pid, nest a new one inside and fork again
         * (unshare(CLONE_NEWPID) is refused right after a setns).
         * The process that goes on reports its pid with
         * SCM_CREDENTIALS, which the kernel translates into the
         * monitor's pid namespace; the middle processes leave and
         * the monitor, a child subreaper, adopts the sandbox. */
        if (setns(p->pidns_fd, CLONE_NEWPID) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Setting pidns failed"), &e));
        pid_t pid = fork();
        if (pid < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Can't fork for --pidns"), &e));
        if (pid > 0)
                _exit(0);
        if (p->unshare_pid) {
                if (unshare(CLONE_NEWPID) < 0)
                        child_fail(l, (nsr_error_set(&e, errno, "unshare pid ns"), &e));
                pid = fork();
                if (pid < 0)
                        child_fail(l, (nsr_error_set(&e, errno, "Can't fork for --pidns"), &e));
                if (pid > 0)
                        _exit(0);
        }
        if (nsr_sockmsg_send_creds(l->pid_pipe[1], 'p') < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Can't send pid"), &e));
}

/* The sandbox's user namespace gets its id maps. Returned: the ids nsrun
 * has in it (root with --dev, until the nested namespace maps the
 * requested ones). */
static void map_ids(launch *l, int procfd, uid_t *ret_uid, gid_t *ret_gid) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };
        int r;

        /* ids: with --dev, devpts needs root mapped, so map the caller to 0
         * now and to the requested ids in a nested namespace later. */
        uid_t ns_uid = p->needs_devpts ? 0 : p->uid;
        gid_t ns_gid = p->needs_devpts ? 0 : p->gid;
        if (p->unshare_user && p->userns_block_fd == -1) {
                /* A map of more than our own id needs CAP_SETUID in the
                 * parent namespace: the monitor wrote it already. */
                if (!parent_maps_ids(l)) {
                        r = write_id_maps(procfd, ns_uid, l->real_uid, ns_gid, l->real_gid, true, 1, &e);
                        if (r < 0)
                                child_fail(l, &e);
                } else {
                        ns_uid = 0;
                        ns_gid = 0;
                }
        } else {
                ns_uid = p->uid;
                ns_gid = p->gid;
        }
        *ret_uid = ns_uid;
        *ret_gid = ns_gid;
}

/* --userns2, the nested user namespace with the requested ids, and
 * --disable-userns. */
static void nest_userns(launch *l, int procfd, uid_t ns_uid, gid_t ns_gid) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };
        int r;

        if (p->userns2_fd != -1 && setns(p->userns2_fd, CLONE_NEWUSER) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Setting userns2 failed"), &e));

        if (p->unshare_user && p->userns_block_fd == -1 &&
            (ns_uid != p->uid || ns_gid != p->gid || p->disable_userns)) {
                if (p->disable_userns) {
                        r = write_proc(procfd, "sys/user/max_user_namespaces", "1");
                        if (r == -ENOENT || r == -EACCES)
                                child_fail(l, (nsr_error_set(&e, -r, "cannot open /proc/sys/user/max_user_namespaces"),
                                               &e));
                        if (r < 0)
                                child_fail(l, (nsr_error_set(&e, -r, "sysctl user.max_user_namespaces = 1"), &e));
                }
                if (unshare(CLONE_NEWUSER) < 0)
                        child_fail(l, (nsr_error_setk(&e, NSR_ERR_CLONE, errno, "unshare user ns"), &e));
                if (write_id_maps(procfd, p->uid, ns_uid, p->gid, ns_gid, false, 1, &e) < 0)
                        child_fail(l, &e);
        }
        if (p->disable_userns || p->assert_userns_disabled) {
                if (unshare(CLONE_NEWUSER) == 0)
                        child_fail(l, (nsr_error_setx(&e, EPERM,
                                                      "creation of new user namespaces was not disabled as requested"),
                                       &e));
        }
}

/* A pid 1 of nsrun's own (the reaper) forks the command's process and
 * stays; what is still in the bounding set returned to the command. */
static uint64_t start_pid1(launch *l, uint64_t bound) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };

        /* The bounding set is inherited: cut it here, once, for both
         * pid 1 and the command, instead of one prctl per
         * capability in each of them. */
        if (l->caps_bounding) {
                if (nsr_caps_bound(l->caps_keep, &e) < 0 || nsr_caps_bound_verify(l->caps_keep, &e) < 0)
                        child_fail(l, &e);
                bound = l->caps_keep;
        }
        /* The command waits for pid 1 to be confined: pid 1 shares
         * its namespaces, and the command must never run beside
         * a pid 1 that kept its capabilities or its filter. */
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Can't create a pipe for pid 1"), &e));
        pid_t cmd = fork();
        if (cmd < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Can't fork for pid 1"), &e));
        /* Project mode, in a new session: the command leads a
         * process group of its own (set on both sides of the fork,
         * so neither races), which pid 1 signals as a terminal
         * would its foreground group. The bwrap name keeps bwrap's
         * layout (the command in pid 1's group), which the parity
         * tests compare. */
        bool own_group = p->new_session && l->extra && l->extra->kill_leftovers;
        if (own_group)
                (void) setpgid(cmd > 0 ? cmd : 0, cmd > 0 ? cmd : 0);
        if (cmd > 0) {
                close(ready[0]);
                /* Before pid 1's own filter, which forbids getpid. */
                unsigned rflags = own_group ? NSR_REAPER_GROUP : 0;
                if (l->extra && l->extra->kill_leftovers && getpid() == 1)
                        rflags |= NSR_REAPER_TREE;
                if (l->extra && l->extra->session)
                        rflags |= NSR_REAPER_RESUME;
                if (set_parent_death(l, &e) < 0)
                        _exit(1);
                /* pid 1: keep only what it needs. Every step fails
                 * closed: the command is killed before it starts
                 * and the error goes to the monitor. */
                if (confine_pid1(l, bound, &e) < 0) {
                        (void) kill(cmd, SIGKILL);
                        child_fail(l, &e);
                }
                l->err_pipe[1] = safe_close(l->err_pipe[1]);
                l->notify_sock[1] = safe_close(l->notify_sock[1]);
                /* The agent's end is the agent's alone: its death
                 * must reach the monitor as a hangup. */
                if (l->extra && l->extra->session) {
                        close(l->extra->session->agent_fd);
                        for (size_t i = 0; i < ELEMENTSOF(l->extra->session->sandbox_close); i++)
                                safe_close(l->extra->session->sandbox_close[i]);
                }
                if (nsr_write_all(ready[1], "x", 1) < 0) {
                        (void) kill(cmd, SIGKILL);
                        _exit(1);
                }
                close(ready[1]);
                nsr_reaper_run(cmd, l->status_pipe[1], rflags);
        }
        close(ready[1]);
        char c;
        if (nsr_read_full(ready[0], &c, 1) != 1)
                _exit(1); /* pid 1 failed and says why */
        close(ready[0]);
        if (p->sync_fd != -1)
                close(p->sync_fd);
        return bound;
}

_noreturn_ static void child_main(launch *l) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };
        int r;

        close_monitor_ends(l);

        _cleanup_close_ int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (procfd < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Can't open /proc"), &e));

        if (child_waits_early(l) && l->go_pipe[0] >= 0) {
                char c;
                (void) nsr_read_full(l->go_pipe[0], &c, 1);
        }

        if (p->userns_fd != -1)
                switch_ids(l);

        if (p->pidns_fd != -1)
                join_pidns(l);
        l->pid_pipe[1] = safe_close(l->pid_pipe[1]);

        uid_t ns_uid;
        gid_t ns_gid;
        map_ids(l, procfd, &ns_uid, &ns_gid);
        nsr_timing_mark_now(p->timing, "child: ids mapped");

        if (p->unshare_net && nsr_netns_loopback_up(&e) < 0)
                child_fail(l, &e);
        /* The relay's sockets listen in this namespace before the command
         * exists, so its first connection waits in the backlog. */
        if (l->relay && nsr_relay_child_setup(l->relay, &e) < 0)
                child_fail(l, &e);
        nsr_timing_mark_now(p->timing, "child: network (loopback, relay)");

        mode_t old_umask = umask(0);
        nsr_mount_ctx mctx = { .host_tty = l->host_tty, .fresh_proc = p->unshare_pid || p->pidns_fd != -1 };
        if (nsr_mount_build_root(p, &mctx, &e) < 0)
                child_fail(l, &e);
        nsr_timing_mark_now(p->timing, "child: mounts (root, hidden paths)");

        nest_userns(l, procfd, ns_uid, ns_gid);

        if (p->block_fd != -1) {
                char c;
                (void) nsr_read_full(p->block_fd, &c, 1);
                close(p->block_fd);
        }

        umask(old_umask);
        choose_cwd(l, &e, &r);
        if (r < 0)
                child_fail(l, &e);
        if (p->new_session && setsid() < 0)
                child_fail(l, (nsr_error_set(&e, errno, "setsid"), &e));

        if (take_locks(p, &e) < 0)
                child_fail(l, &e);

        /* What is still in the bounding set. */
        uint64_t bound = nsr_caps_all();
        if (need_reaper(p))
                bound = start_pid1(l, bound);
        nsr_timing_mark_now(p->timing, "child: pid 1 started");
        l->status_pipe[1] = safe_close(l->status_pipe[1]);

        /* The command. */
        if (set_parent_death(l, &e) < 0)
                child_fail(l, &e);
        if (child_waits_late(l)) {
                char c;
                if (nsr_read_full(l->go_pipe[0], &c, 1) != 1)
                        _exit(1); /* the monitor failed and says why */
        }
        l->go_pipe[0] = safe_close(l->go_pipe[0]);
        if (l->extra) {
                wait_fence(&l->extra->start_fence);
                nsr_timing_mark_now(p->timing, "child: start fence (coarse clock)");
        }
        if (l->extra && l->extra->session)
                run_agent(l, bound);
        if (confine_command(l, bound, &e) < 0)
                child_fail(l, &e);
        nsr_timing_mark_now(p->timing, "command: confined (caps, seccomp)");

        exec_command(l);
        e = (nsr_error){ .kind = NSR_ERR_EXEC };
        nsr_error_set(&e, errno, "execvp %s", p->argv[0]);
        e.kind = NSR_ERR_EXEC;
        child_fail(l, &e);
}

/* ---- the monitor ----------------------------------------------------- */

static const struct {
        const char *name;
        unsigned bit;
} ns_order[] = {
        { "cgroup", NSR_NS_CGROUP }, { "ipc", NSR_NS_IPC }, { "mnt", NSR_NS_MNT },
        { "net", NSR_NS_NET },       { "pid", NSR_NS_PID }, { "uts", NSR_NS_UTS },
};

static int write_info(const launch *l, pid_t child, nsr_error *err) {
        const nsr_plan *p = l->plan;
        if (p->info_fd == -1 && p->json_status_fd == -1)
                return 0;
        unsigned ns = nsr_plan_unshared(p);
        char info[1024], line[1024];
        size_t il = 0, jl = 0;
        il += (size_t) snprintf(info + il, sizeof(info) - il, "{\n    \"child-pid\": %i", (int) child);
        jl += (size_t) snprintf(line + jl, sizeof(line) - jl, "{ \"child-pid\": %i", (int) child);
        for (size_t i = 0; i < ELEMENTSOF(ns_order); i++) {
                if (!(ns & ns_order[i].bit))
                        continue;
                char path[64];
                struct stat st;
                snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int) child, ns_order[i].name);
                if (stat(path, &st) < 0)
                        continue;
                il += (size_t) snprintf(info + il, sizeof(info) - il, ",\n    \"%s-namespace\": %ju", ns_order[i].name,
                                        (uintmax_t) st.st_ino);
                jl += (size_t) snprintf(line + jl, sizeof(line) - jl, ", \"%s-namespace\": %ju", ns_order[i].name,
                                        (uintmax_t) st.st_ino);
        }
        il += (size_t) snprintf(info + il, sizeof(info) - il, "\n}\n");
        jl += (size_t) snprintf(line + jl, sizeof(line) - jl, " }\n");
        if (p->info_fd != -1) {
                int r = nsr_write_all(p->info_fd, info, il);
                close(p->info_fd);
                if (r < 0)
                        return nsr_error_set(err, -r, "Write to info_fd");
        }
        if (p->json_status_fd != -1) {
                int r = nsr_write_all(p->json_status_fd, line, jl);
                if (r < 0)
                        return nsr_error_set(err, -r, "Write to info_fd");
        }
        return 0;
}

static void write_exit_status(const nsr_plan *p, int code) {
        if (p->json_status_fd == -1)
                return;
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{ \"exit-code\": %i }\n", code);
        (void) nsr_write_all(p->json_status_fd, buf, (size_t) n);
}

static int clone_error(const nsr_plan *p, int e, nsr_error *err) {
        if (p->unshare_user && e == EINVAL)
                return nsr_error_setxk(err, NSR_ERR_CLONE, e,
                                       "Creating new namespace failed, likely because the kernel does not support user "
                                       "namespaces.");
        /* Inside an nsrun project sandbox the reason is the outer run's
         * seccomp policy, not the kernel: say so, and what allows it. */
        const char *outer = getenv("NSRUN");
        if ((e == EPERM || e == ENOSPC || e == EUSERS) && outer && streq(outer, "1"))
                return nsr_error_setx(err, e,
                                      "Creating a nested sandbox failed (%s): this runs inside an nsrun project "
                                      "sandbox, which refuses sandboxes inside it unless the outer nsrun was given "
                                      "--allow-nested",
                                      strerror(e));
        /* Name the Debian sysctl only where the kernel has it. */
        if (p->unshare_user && e == EPERM && access("/proc/sys/kernel/unprivileged_userns_clone", F_OK) == 0)
                return nsr_error_setxk(err, NSR_ERR_CLONE, e,
                                       "No permissions to create a new namespace, likely because the kernel does not "
                                       "allow non-privileged user namespaces. On e.g. debian this can be enabled with "
                                       "'sysctl kernel.unprivileged_userns_clone=1'.");
        if (p->unshare_user && e == EPERM)
                return nsr_error_setxk(err, NSR_ERR_CLONE, e,
                                       "No permissions to create a new namespace, likely because this system does "
                                       "not allow non-privileged user namespaces (a seccomp filter, AppArmor, or a "
                                       "container)");
        if (e == ENOSPC)
                return nsr_error_setxk(
                        err, NSR_ERR_CLONE, e,
                        "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces "
                        "exceeded (ENOSPC)");
        return nsr_error_setk(err, NSR_ERR_CLONE, e, "Creating new namespace failed");
}

/* The value of counter name in a /proc/net/snmp file: "Ip: A B ..."
 * header lines followed by value lines (snmp), or "Name value" lines
 * (snmp6). 0 when it is not there. */
static uint64_t snmp_counter(int fd, const char *prefix, const char *name) {
        char buf[8192];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        size_t pl = strlen(prefix), nl = strlen(name);
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, prefix, pl) != 0)
                        continue;
                if (pl == 0) { /* snmp6: "Ip6OutNoRoutes   12" */
                        if (strncmp(line, name, nl) == 0 && (line[nl] == ' ' || line[nl] == '\t'))
                                return strtoull(line + nl, NULL, 10);
                        continue;
                }
                /* snmp: this is the header; the values are on the next line. */
                char *values = next;
                if (!values || strncmp(values, prefix, pl) != 0)
                        return 0;
                next = strchr(values, '\n');
                if (next)
                        *next++ = '\0';
                char *hs = NULL, *vs = NULL;
                char *h = strtok_r(line + pl, " ", &hs), *v = strtok_r(values + pl, " ", &vs);
                for (; h && v; h = strtok_r(NULL, " ", &hs), v = strtok_r(NULL, " ", &vs))
                        if (streq(h, name))
                                return strtoull(v, NULL, 10);
                return 0;
        }
        return 0;
}

/* --timeout: SIGTERM to every process of the sandbox, then SIGKILL to
 * pid 1, which takes the whole pid namespace down. Without a pid
 * namespace only the process nsrun started gets them. */
static void deadline_hook(launch *l, nsr_deadline *d, pid_t child, bool child_gone, nsr_launch_result *res) {
        nsr_deadline_step step = nsr_deadline_next(d);
        if (child_gone)
                return;
        bool pidns = l->plan->unshare_pid && need_reaper(l->plan);
        nsr_deadline_event(&l->events_q, step);
        switch (step) {
        case NSR_DEADLINE_TERM:
                res->timed_out = true;
                if (pidns)
                        (void) nsr_signal_pidns(child, SIGTERM);
                else
                        (void) kill(child, SIGTERM);
                return;
        case NSR_DEADLINE_KILL:
                res->killed_after = true;
                (void) kill(child, SIGKILL);
                return;
        case NSR_DEADLINE_NONE:
        case _NSR_DEADLINE_STEP_MAX:
        case _NSR_DEADLINE_STEP_INVALID:
                break;
        }
}

/* The monitor's state while the command runs: every fd it waits on is a
 * source of one event loop (base/evloop.h), with the relay's and the
 * session server's. */
typedef struct mon {
        launch *l;
        pid_t child;
        nsr_launch_result *res;
        nsr_evloop *loop;
        int sfd;
        nsr_deadline deadline;
        nsr_evsrc *s_err, *s_status, *s_deadline, *s_notify, *s_listener;
        nsr_error child_err;
        size_t err_got;
        bool err_eof, have_status, child_gone, pid1_exiting;
        int status;
} mon;

static void on_listener(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        if (ev & EPOLLIN)
                (void) nsr_refused_handle(l->extra->refused, fd);
        else if (ev & (EPOLLHUP | EPOLLERR)) {
                /* every task of the filter is gone */
                m->s_listener = nsr_evloop_del(m->s_listener);
                l->listener = safe_close(l->listener);
        }
}

/* The refused-call listener: its fd arrives once from the command, then
 * each refused call is answered (with the policy's errno) and counted. */
static void on_notify_sock(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        launch *l = m->l;
        (void) s;
        (void) ev;
        int got = nsr_refused_recv_fd(fd);
        if (got >= 0 && l->listener < 0) {
                l->listener = got;
                l->extra->refused->active = true;
                if (l->extra->session && l->extra->session->refused_recorded)
                        *l->extra->session->refused_recorded = true;
                if (nsr_evloop_add(m->loop, got, EPOLLIN, on_listener, m, &m->s_listener) < 0)
                        l->listener = safe_close(l->listener); /* calls get ENOSYS, as with no listener */
        } else if (got >= 0)
                close(got);
        /* One fd, once; EOF too means nothing more comes. */
        if (got >= 0 || got == -ENODATA || (got != -EAGAIN && got != -EINTR)) {
                m->s_notify = nsr_evloop_del(m->s_notify);
                l->notify_sock[0] = safe_close(l->notify_sock[0]);
        }
}

/* A signal to the monitor: SIGCHLD reaps (the child's status, unless pid 1
 * reported it already); any other goes on to the sandbox. */
static void on_signal(int sfd, pid_t child, bool *child_gone, bool *have_status, int *status, nsr_launch_result *res) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                        /* Also reaps the middle processes
                         * of --pidns, adopted as subreaper. */
                        int st;
                        pid_t w;
                        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
                                if (w != child)
                                        continue;
                                *child_gone = true;
                                if (!*have_status) {
                                        *status = st;
                                        *have_status = true;
                                }
                        }
                } else if (!*child_gone) {
                        if (!res->forwarded_signal && nsr_signal_interrupts((int) si.ssi_signo))
                                res->forwarded_signal = (int) si.ssi_signo;
                        (void) kill(child, (int) si.ssi_signo);
                        /* ^Z: the command's group stops (pid 1
                         * passes it on), then nsrun, so the
                         * shell gets its prompt back; fg
                         * sends SIGCONT, which goes on too. */
                        if (si.ssi_signo == SIGTSTP)
                                (void) raise(SIGSTOP);
                }
        }
}

/* The command ran: its status and exit code, what the relay saw, the
 * routes it found missing; the sandbox's leftovers go. */
static void command_done(launch *l, pid_t child, bool child_gone, int status, nsr_launch_result *ret) {
        const nsr_plan *p = l->plan;

        /* The command has ended: what follows (capture, commit) must not
         * die with the thread that started nsrun. Only the user's own
         * signal stops it now (--die-with-parent is about the sandbox). */
        (void) prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);

        if (l->helper) {
                nsr_egress_helper_finish(l->helper, &ret->net);
                ret->net_on = true;
        }
        ret->exec_done = true;
        ret->wait_status = status;
        ret->exit_code = ret->timed_out ? NSR_EXIT_TIMEOUT : nsr_exit_code_from_status(status);
        if (l->snmp_fd >= 0)
                ret->no_route = snmp_counter(l->snmp_fd, "Ip:", "OutNoRoutes");
        if (l->snmp6_fd >= 0)
                ret->no_route += snmp_counter(l->snmp6_fd, "", "Ip6OutNoRoutes");
        write_exit_status(p, ret->exit_code);
        nsr_outq_finish(&l->events_q, NSR_OUTQ_FINISH_MS);
        ret->events_dropped = l->events_q.dropped;
        if (l->extra && l->extra->kill_leftovers && !child_gone) {
                /* SIGKILL to pid 1 takes the whole pid namespace down. */
                (void) kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
        }
}

static void on_sfd(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) ev;
        on_signal(fd, m->child, &m->child_gone, &m->have_status, &m->status, m->res);
}

static void on_deadline(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) fd;
        (void) ev;
        deadline_hook(m->l, &m->deadline, m->child, m->child_gone, m->res);
}

static void on_err_pipe(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) ev;
        ssize_t n = read(fd, (char *) &m->child_err + m->err_got, sizeof(m->child_err) - m->err_got);
        if (n > 0)
                m->err_got += (size_t) n;
        else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                m->err_eof = true;
                m->s_err = nsr_evloop_del(m->s_err);
                nsr_timing_mark_now(m->l->plan->timing, "monitor: command started");
        }
}

static void on_status_pipe(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        mon *m = data;
        (void) s;
        (void) ev;
        nsr_reaper_status msg;
        int n = nsr_read_full(fd, &msg, sizeof(msg));
        if (n == (int) sizeof(msg)) {
                m->status = msg.wait_status;
                m->have_status = true;
                /* pid 1 exits now. Waiting for it would charge the caller
                 * for the namespaces' teardown; bwrap returns here too. */
                if (msg.last)
                        m->pid1_exiting = true;
        } else {
                m->s_status = nsr_evloop_del(m->s_status);
                m->l->status_pipe[0] = safe_close(m->l->status_pipe[0]);
        }
        if (m->have_status) {
                m->s_status = nsr_evloop_del(m->s_status);
                m->s_deadline = nsr_evloop_del(m->s_deadline);
        }
}

/* Every fd the monitor waits on, into the loop. */
static int monitor_sources(mon *m, nsr_error *err) {
        launch *l = m->l;
        const nsr_launch_session *ses = l->extra ? l->extra->session : NULL;
        int r = nsr_evloop_add(m->loop, m->sfd, EPOLLIN, on_sfd, m, NULL);
        if (r >= 0)
                r = nsr_evloop_add(m->loop, l->err_pipe[0], EPOLLIN, on_err_pipe, m, &m->s_err);
        if (r >= 0 && l->status_pipe[0] >= 0)
                r = nsr_evloop_add(m->loop, l->status_pipe[0], EPOLLIN, on_status_pipe, m, &m->s_status);
        if (r >= 0 && m->deadline.fd >= 0)
                r = nsr_evloop_add(m->loop, m->deadline.fd, EPOLLIN, on_deadline, m, &m->s_deadline);
        if (r >= 0 && l->notify_sock[0] >= 0)
                r = nsr_evloop_add(m->loop, l->notify_sock[0], EPOLLIN, on_notify_sock, m, &m->s_notify);
        if (r >= 0 && ses && ses->attach)
                r = ses->attach(m->loop, ses->data);
        if (r < 0)
                return nsr_error_set(err, -r, "monitor: event loop");
        /* A caller's fd the loop cannot watch: the queue still writes on
         * each line, never blocking. */
        (void) nsr_outq_watch(&l->events_q, m->loop);
        return 0;
}

/* An error report is complete, or the command ran and we know its
 * status: done. With a reaper the status arrives before pid 1 exits
 * (bwrap returns at that point too). */
static bool monitor_done(mon *m) {
        launch *l = m->l;
        if (m->err_got == sizeof(m->child_err))
                return true;
        if (!m->have_status || !(m->err_eof || m->child_gone || m->pid1_exiting))
                return false;
        if (!m->err_eof) {
                /* Drain whatever the child left in the pipe. */
                ssize_t n;
                while ((n = read(l->err_pipe[0], (char *) &m->child_err + m->err_got,
                                 sizeof(m->child_err) - m->err_got)) > 0)
                        m->err_got += (size_t) n;
        }
        return true;
}

static int monitor_run(mon *m, nsr_error *err) {
        launch *l = m->l;
        const nsr_plan *p = l->plan;
        if (nsr_deadline_start(&m->deadline, &p->run, err) < 0) {
                (void) kill(m->child, SIGKILL);
                (void) waitpid(m->child, NULL, 0);
                return -EIO;
        }
        /* Every line the monitor writes to --events-fd goes through one
         * bounded queue, written as the fd takes it: a reader that stops
         * reading must not stop the deadline or the signals. */
        nsr_outq_init(&l->events_q, p->proj.events_fd, 0, NSR_OUTQ_EVENTS_NOTE);
        if (l->extra && l->extra->refused)
                l->extra->refused->events = &l->events_q;
        /* A session counts each refused call for the step it came from. */
        if (l->extra && l->extra->refused && l->extra->session && l->extra->session->refused_call) {
                l->extra->refused->on_call = l->extra->session->refused_call;
                l->extra->refused->on_call_data = l->extra->session->data;
        }
        int r = monitor_sources(m, err);
        if (r < 0) {
                (void) kill(m->child, SIGKILL);
                (void) waitpid(m->child, NULL, 0);
                return r;
        }
        while (!monitor_done(m)) {
                r = nsr_evloop_run_once(m->loop, -1);
                if (r < 0)
                        return nsr_error_set(err, -r, "epoll_wait");
        }
        if (m->err_got == sizeof(m->child_err)) {
                if (!m->child_gone)
                        (void) waitpid(m->child, NULL, 0);
                nsr_error_sanitize(&m->child_err);
                *err = m->child_err;
                return -(m->child_err.code ? m->child_err.code : EIO);
        }
        command_done(l, m->child, m->child_gone, m->status, m->res);
        return 0;
}

static int monitor(launch *l, pid_t child, nsr_launch_result *ret, nsr_error *err) {
        sigset_t set;
        nsr_forwarded_sigset(&set);
        sigaddset(&set, SIGCHLD);
        _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
        if (sfd < 0)
                return nsr_error_set(err, errno, "Can't create signalfd");
        mon m = { .l = l, .child = child, .res = ret, .sfd = sfd, .deadline = { .fd = -1 } };
        int r = nsr_evloop_new(&m.loop);
        if (r < 0) {
                (void) kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                return nsr_error_set(err, -r, "epoll_create1");
        }
        r = monitor_run(&m, err);
        /* The relay outlives the loop (its log is read later): out of it. */
        nsr_relay_detach(l->relay);
        if (l->extra && l->extra->session && l->extra->session->attach)
                (void) l->extra->session->attach(NULL, l->extra->session->data);
        m.loop = nsr_evloop_free(m.loop);
        nsr_deadline_done(&m.deadline);
        return r;
}

static int read_seccomp_fd(const nsr_seccomp_prog *sp, nsr_bpf *ret, nsr_error *err) {
        char *data = NULL;
        size_t len = 0;
        int r = nsr_read_all(sp->fd, 64u << 20, &data, &len);
        if (r < 0)
                return nsr_error_set(err, -r, "Can't read seccomp data");
        close(sp->fd);
        if (len % 8 != 0) {
                free(data);
                return nsr_error_setx(err, EINVAL, "Invalid seccomp data, must be multiple of 8");
        }
        *ret = (nsr_bpf){ .data = data, .len = len };
        return 0;
}

static void launch_done(launch *l) {
        if (l->extra && l->extra->refused && l->extra->refused->events == &l->events_q)
                l->extra->refused->events = NULL;
        if (l->extra && l->extra->refused)
                l->extra->refused->on_call = NULL;
        nsr_outq_done(&l->events_q);
        l->cgroup = nsr_cgroup_destroy(l->cgroup);
        free(l->notify_prog);
        l->listener = safe_close(l->listener);
        for (int i = 0; i < 2; i++)
                safe_close(l->notify_sock[i]);
        for (size_t i = 0; i < l->n_progs; i++)
                free(l->progs[i].data);
        free(l->progs);
        nsr_strv_free(l->env);
        l->helper = nsr_egress_helper_free(l->helper);
        nsr_relay_free(l->relay);
        free(l->host_tty);
        free(l->old_cwd);
        for (int i = 0; i < 2; i++) {
                safe_close(l->err_pipe[i]);
                safe_close(l->status_pipe[i]);
                safe_close(l->go_pipe[i]);
                safe_close(l->pid_pipe[i]);
        }
        safe_close(l->snmp_fd);
        safe_close(l->snmp6_fd);
}

/* Everything that can be worked out before any process is created. */
static int prepare(launch *l, nsr_error *err) {
        const nsr_plan *p = l->plan;
        const nsr_launch_extra *extra = l->extra;

        /* Every BPF program, in the order they stack: policies first, then
         * the caller's own programs. */
        size_t n_extra = extra ? extra->n_bpf : 0;
        l->progs = nsr_malloc0((n_extra + p->n_seccomp + 1) * sizeof(nsr_bpf));
        for (size_t i = 0; i < n_extra; i++) {
                l->progs[l->n_progs].data = nsr_malloc0(extra->bpf[i].len + 1);
                memcpy(l->progs[l->n_progs].data, extra->bpf[i].data, extra->bpf[i].len);
                l->progs[l->n_progs++].len = extra->bpf[i].len;
        }
        for (size_t i = 0; i < p->n_seccomp; i++) {
                const nsr_seccomp_prog *sp = &p->seccomp[i];
                if (sp->kind == NSR_SECCOMP_FD) {
                        int r = read_seccomp_fd(sp, &l->progs[l->n_progs], err);
                        if (r < 0)
                                return r;
                        l->n_progs++;
                } else {
                        l->progs[l->n_progs].data = nsr_malloc0(sp->len + 1);
                        memcpy(l->progs[l->n_progs].data, sp->data, sp->len);
                        l->progs[l->n_progs++].len = sp->len;
                }
        }

        l->env = nsr_plan_build_env(p, environ);
        if (!nsr_egress_rules_empty(&p->egress)) {
                /* The log is the caller's: the command must not write to it. */
                if (p->net_log_fd != -1 && fcntl(p->net_log_fd, F_SETFD, FD_CLOEXEC) < 0)
                        return nsr_error_set(err, errno, "--net-log-fd %d", p->net_log_fd);
                int r = nsr_relay_new(&p->egress, p->net_log_fd, &l->relay, err);
                if (r < 0)
                        return r;
                nsr_relay_env(&l->env);
        }

        /* Capabilities: a caller who is not root keeps only --cap-add; real
         * root starts from what it has. Without --cap-add/--cap-drop, real
         * root's sets are left alone, as bwrap leaves them: no_new_privs
         * keeps execve from granting more than the process has. A new user
         * namespace resets the bounding set to everything, so there it is
         * cut back to what is kept. */
        uint64_t start = 0;
        if (l->real_uid == 0)
                (void) nsr_caps_current(&start);
        bool edited = nsr_plan_caps(p, start, nsr_caps_all(), &l->caps_keep);
        l->caps_touch = l->real_uid != 0 || edited;
        l->caps_bounding = p->unshare_user || p->userns_fd != -1;
        l->landlock_scope = p->landlock_scope && nsr_landlock_abi() >= 6;
        /* uid 0 is not always root: inside a sandbox that dropped its
         * capabilities (nsrun's own project mode), writing a map of more
         * than one id fails with EPERM, so map just ourselves there. */
        uint64_t eff = 0;
        l->can_map_all = l->real_uid == 0 && nsr_caps_current(&eff) >= 0 && (eff & (UINT64_C(1) << CAP_SETUID)) &&
                         (eff & (UINT64_C(1) << CAP_SETGID));

        if (isatty(STDOUT_FILENO)) {
                const char *t = ttyname(STDOUT_FILENO);
                if (t && *t)
                        l->host_tty = nsr_strdup(t);
        }
        l->old_cwd = getcwd(NULL, 0);

        /* Many binds need many fds at once; raise the soft limit for the
         * setup and give the command the original one back. */
        size_t need = nsr_mount_fds_needed(p) + 64;
        if (getrlimit(RLIMIT_NOFILE, &l->old_nofile) == 0 && l->old_nofile.rlim_cur != RLIM_INFINITY &&
            need > l->old_nofile.rlim_cur) {
                struct rlimit nl = l->old_nofile;
                nl.rlim_cur = l->old_nofile.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
                        l->raised_nofile = true;
        }

        if (pipe2(l->err_pipe, O_CLOEXEC) < 0 || pipe2(l->status_pipe, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2()");
        if ((child_waits_early(l) || child_waits_late(l) || p->die_with_parent) && pipe2(l->go_pipe, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2()");
        if (p->pidns_fd != -1) {
                int one = 1;
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, l->pid_pipe) < 0 ||
                    setsockopt(l->pid_pipe[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                        return nsr_error_set(err, errno, "Can't create intermediate pids socket");
                if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                        return nsr_error_set(err, errno, "prctl(PR_SET_CHILD_SUBREAPER)");
        }

        /* The refused-call record: the listener form of the first
         * program, and a socket to pass the listener fd up. A program it
         * cannot rewrite is loaded as it is, unrecorded. */
        if (extra && extra->refused && extra->refused->prog && l->n_progs > 0 && n_extra > 0 &&
            nsr_refused_notify_prog(l->progs[0].data, l->progs[0].len, &l->notify_prog, &l->notify_len) >= 0 &&
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, l->notify_sock) < 0)
                return nsr_error_set(err, errno, "socketpair()");

        /* --memory and --cpu need a cgroup of the run's own, or fail here
         * and say why; --pids takes one where there is one (RLIMIT_NPROC
         * holds anyway). */
        if (nsr_cgroup_required(&p->run)) {
                int r = nsr_cgroup_create(&p->run, &l->cgroup, err);
                if (r < 0)
                        return nsr_error_prefix(
                                err, "%s%s%s needs a cgroup for the run", p->run.memory ? "--memory" : "",
                                p->run.memory && p->run.cpu_milli ? " and " : "", p->run.cpu_milli ? "--cpu" : "");
        } else if (p->run.pids_explicit) {
                nsr_error ignored = { 0 };
                (void) nsr_cgroup_create(&p->run, &l->cgroup, &ignored);
        }

        /* Join --userns here, so that every namespace the clone creates is
         * owned by it. */
        if (p->userns_fd != -1 && setns(p->userns_fd, CLONE_NEWUSER) < 0) {
                if (errno == EINVAL)
                        return nsr_error_setx(err, EINVAL,
                                              "Joining the specified user namespace failed, it might not be a "
                                              "descendant of the current user namespace.");
                return nsr_error_set(err, errno, "Joining specified user namespace failed");
        }
        return 0;
}

static unsigned long clone_flags(const nsr_plan *p) {
        unsigned long flags = CLONE_NEWNS | SIGCHLD;
        if (p->unshare_user)
                flags |= CLONE_NEWUSER;
        if (p->unshare_pid && p->pidns_fd == -1)
                flags |= CLONE_NEWPID;
        if (p->unshare_net)
                flags |= CLONE_NEWNET;
        if (p->unshare_ipc)
                flags |= CLONE_NEWIPC;
        if (p->unshare_uts)
                flags |= CLONE_NEWUTS;
        if (p->unshare_cgroup)
                flags |= CLONE_NEWCGROUP;
        return flags;
}

/* With --pidns the cloned child forks into the joined namespace and leaves;
 * the sandbox reports its pid. */
static int adopt_pidns_child(launch *l, pid_t middle, pid_t *ret, nsr_error *err) {
        pid_t real = 0;
        int n = nsr_sockmsg_recv_pid(l->pid_pipe[0], &real);
        if (n >= 0 && real > 0) {
                *ret = real;
                return 0;
        }
        /* The child failed before it could report: its error is in the
         * error pipe. */
        (void) waitpid(middle, NULL, 0);
        nsr_error ce = { 0 };
        if (nsr_read_full(l->err_pipe[0], &ce, sizeof(ce)) == (int) sizeof(ce)) {
                nsr_error_sanitize(&ce);
                *err = ce;
                return -(ce.code ? ce.code : EIO);
        }
        return nsr_error_setx(err, EIO, "No pid returned on socket");
}

/* The identity map over every id range this namespace has: the whole
 * range for real root on the host, and only what there is when nsrun
 * itself runs in a user namespace (nested in a sandbox or a container). */
static int identity_map(const char *self_map, char **ret) {
        _cleanup_close_ int fd = open(self_map, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *data = NULL;
        int r = nsr_read_all(fd, 64 * 1024, &data, NULL);
        if (r < 0)
                return r;
        char *out = nsr_strdup("");
        for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
                unsigned long inside, outside, count;
                if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) != 3)
                        continue;
                char *n = nsr_asprintf("%s%lu %lu %lu\n", out, inside, inside, count);
                free(out);
                out = n;
        }
        *ret = out;
        return 0;
}

static int write_full_maps(pid_t child, nsr_error *err) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d", (int) child);
        _cleanup_close_ int pfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return nsr_error_setk(err, NSR_ERR_USERNS_SETUP, errno, "setting up uid map");
        _cleanup_free_ char *umap = NULL, *gmap = NULL;
        int r = identity_map("/proc/self/uid_map", &umap);
        if (r >= 0)
                r = write_proc(pfd, "uid_map", umap);
        if (r < 0)
                return nsr_error_setk(err, NSR_ERR_USERNS_SETUP, -r, "setting up uid map");
        r = identity_map("/proc/self/gid_map", &gmap);
        if (r >= 0)
                r = write_proc(pfd, "gid_map", gmap);
        if (r < 0)
                return nsr_error_setk(err, NSR_ERR_USERNS_SETUP, -r, "setting up gid map");
        return 0;
}

/* Lets the waiting child go on. It may have failed a step before it waits
 * (a --chdir that does not exist) and be gone with its end of the pipe: that
 * is EPIPE here, not a SIGPIPE that kills the monitor before it reports the
 * child's error (an ignored signal is discarded, never left pending). */
static void tell_child_go(launch *l) {
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        (void) sigaction(SIGPIPE, &ign, &old);
        (void) nsr_write_all(l->go_pipe[1], "x", 1);
        (void) sigaction(SIGPIPE, &old, NULL);
}

/* Creates the sandbox and monitors it. Signals are blocked around it. */
static int run(launch *l, nsr_launch_result *res, nsr_error *err) {
        const nsr_plan *p = l->plan;
        int r;

        if (p->die_with_parent && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                return nsr_error_set(err, errno, "prctl");

        pid_t child = l->cgroup ? nsr_cgroup_clone(l->cgroup, clone_flags(p)) : nsr_raw_clone(clone_flags(p), NULL);
        if (child < 0)
                return clone_error(p, errno, err);
        if (child == 0)
                child_main(l);
        nsr_timing_mark_now(p->timing, "monitor: clone");

        l->err_pipe[1] = safe_close(l->err_pipe[1]);
        l->status_pipe[1] = safe_close(l->status_pipe[1]);
        l->go_pipe[0] = safe_close(l->go_pipe[0]);
        l->pid_pipe[1] = safe_close(l->pid_pipe[1]);
        if (l->relay) {
                nsr_relay_parent_started(l->relay);
                /* The sandbox's network bytes are parsed there, not here. */
                r = nsr_egress_helper_start(l->relay, &l->helper, err);
                if (r < 0)
                        return r;
        }
        l->notify_sock[1] = safe_close(l->notify_sock[1]);

        if (p->pidns_fd != -1) {
                r = adopt_pidns_child(l, child, &child, err);
                if (r < 0)
                        return r;
        }
        res->child_pid = child;
        res->landlock = l->landlock_scope;
        if (p->unshare_net && l->extra && l->extra->kill_leftovers) {
                /* Opened now, read after the command: an open /proc/net
                 * file keeps reading its namespace, however the sandbox
                 * ends. Project mode tells a command that met no network
                 * why. */
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/net/snmp", (int) child);
                l->snmp_fd = open(path, O_RDONLY | O_CLOEXEC);
                snprintf(path, sizeof(path), "/proc/%d/net/snmp6", (int) child);
                l->snmp6_fd = open(path, O_RDONLY | O_CLOEXEC);
        }
        if (p->userns2_fd != -1)
                (void) setns(p->userns2_fd, CLONE_NEWUSER);

#ifdef NSR_TEST_HOOKS
        /* A slow monitor: the tests show the command waits for it. */
        const char *delay = getenv("NSRUN_TEST_MONITOR_DELAY_MS");
        if (delay)
                (void) usleep((useconds_t) atoi(delay) * 1000);
#endif
        r = write_info(l, child, err);
        if (r < 0) {
                kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                return r;
        }
        if (p->userns_block_fd != -1) {
                char c;
                (void) nsr_read_full(p->userns_block_fd, &c, 1);
                close(p->userns_block_fd);
                tell_child_go(l);
        } else if (parent_maps_ids(l)) {
                r = write_full_maps(child, err);
                if (r < 0) {
                        kill(child, SIGKILL);
                        (void) waitpid(child, NULL, 0);
                        return r;
                }
                tell_child_go(l);
        } else if (child_waits_late(l))
                tell_child_go(l);
        if (l->extra && l->extra->session && l->extra->session->sandbox_pid)
                *l->extra->session->sandbox_pid = child;
        return monitor(l, child, res, err);
}

int nsr_launch(const nsr_plan *p, const nsr_launch_extra *extra, nsr_launch_result *ret, nsr_error *err) {
        launch l = {
                .plan = p,
                .extra = extra,
                .err_pipe = { -1, -1 },
                .status_pipe = { -1, -1 },
                .go_pipe = { -1, -1 },
                .snmp_fd = -1,
                .snmp6_fd = -1,
                .pid_pipe = { -1, -1 },
                .notify_sock = { -1, -1 },
                .listener = -1,
                .events_q = { .fd = -1 },
                .real_uid = getuid(),
                .real_gid = getgid(),
        };
        nsr_launch_result res = { .exit_code = 1 };

        int r = prepare(&l, err);
        if (r >= 0) {
                sigset_t block;
                nsr_forwarded_sigset(&block);
                sigaddset(&block, SIGCHLD);
                sigprocmask(SIG_BLOCK, &block, &l.old_mask);
                r = run(&l, &res, err);
                sigprocmask(SIG_SETMASK, &l.old_mask, NULL);
        }
        if (r >= 0 && l.cgroup)
                res.limits_hit = nsr_cgroup_hits(l.cgroup);
        launch_done(&l);
        *ret = res;
        return r;
}
