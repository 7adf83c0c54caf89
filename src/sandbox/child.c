/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sandbox child (launch_child_main), cloned into the new namespaces:
 * ids mapped, the network and the root built, pid 1 started, the command
 * confined (caps, no_new_privs, Landlock, seccomp) and exec'd, or in a
 * session the agent run. A failure goes over the error pipe, then _exit. */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "base/sockmsg.h"
#include "base/syscalls.h"
#include "base/timing.h"
#include "sandbox/agent.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/launch-internal.h"
#include "sandbox/netns.h"
#include "sandbox/reaper.h"
#include "sandbox/rootfs.h"
#include "seccomp/compile.h"
#include "seccomp/refused.h"

/* The packed ops of the plan's slots (take_slots): hide.list and --hide
 * globs come to thousands of paths at most. */
#define SLOTS_MAX (64U << 20)

extern char **environ;

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
        /* The connect program alone (no refused record): the listener,
         * and every program after it. Without it (a listener already
         * above), connects stay in the sandbox's namespace: proxy only. */
        if (listener && l->notify_alone)
                (void) load_listener(l);
        for (size_t i = 0; i < l->n_progs; i++) {
                if (i == 0 && listener && !l->notify_alone && load_listener(l))
                        continue;
                int r = nsr_seccomp_load(l->progs[i].data, l->progs[i].len);
                if (r < 0) {
                        if (r == -EINVAL)
                                return nsr_error_setx(
                                        err, EINVAL,
                                        "Unable to set up system call filtering as requested: "
                                        "prctl(PR_SET_SECCOMP) reported EINVAL. (Hint: this requires a kernel "
                                        "configured with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER.)");
                        return nsr_error_set(err, -r, "prctl(PR_SET_SECCOMP)");
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

/* NSRUN_TEST_PID1_SLOW=1: pid 1 starts its confinement a quarter second
 * late, as a loaded machine may, to show the command still waits for it. */
static void pid1_test_slow(void) {
        if (getenv("NSRUN_TEST_PID1_SLOW"))
                (void) poll(NULL, 0, 250);
}
#else
static void pid1_test_slow(void) {
}

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
        pid1_test_slow();
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
                if (l->leftovers)
                        l->leftovers->args = args;
        }
        environ = l->env;
        nsr_timing_mark_now(p->timing, "command: execve");
        if (has_slash(p->argv[0]))
                execv(p->argv[0], argv);
        else
                execvp(p->argv[0], argv);
        if (l->leftovers)
                l->leftovers->args = NULL; /* freed here: the execve failed */
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

static int take_locks(launch *l, nsr_error *err) {
        const nsr_plan *p = l->plan;
        size_t n = nsr_strv_length(p->lock_files);
        l->lock_fds = n ? nsr_realloc_array(NULL, n, sizeof(int)) : NULL;
        for (size_t i = 0; i < n; i++) {
                /* Held by the process that becomes pid 1; POSIX locks belong
                 * to the process, so the command's copy of the fd (closed
                 * on exec) does not release it. */
                int fd = open(p->lock_files[i], O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return nsr_error_set(err, errno, "Unable to open lock file %s", p->lock_files[i]);
                l->lock_fds[l->n_lock_fds++] = fd;
                struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
                if (fcntl(fd, F_SETLK, &fl) < 0)
                        return nsr_error_set(err, errno, "Unable to lock file %s", p->lock_files[i]);
        }
        return 0;
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
        /* Cut here unless pid 1 cut it before the fork (bound says). */
        if (l->caps_bounding && (bound & ~l->caps_keep) && (r = nsr_caps_bound(l->caps_keep, e)) < 0)
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
        l->gate_pipe[1] = safe_close(l->gate_pipe[1]);
        l->slot_pipe[1] = safe_close(l->slot_pipe[1]);
        l->pid_pipe[0] = safe_close(l->pid_pipe[0]);
        l->notify_sock[0] = safe_close(l->notify_sock[0]);
        l->detach_sock[0] = safe_close(l->detach_sock[0]);
        /* Both ends of the monitor's socket to the egress helper. */
        l->direct_sock = safe_close(l->direct_sock);
        l->direct = nsr_direct_free(l->direct);
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

/* Whether nest_userns makes a nested user namespace (and so writes its
 * maps through /proc). */
static bool nests_userns(const launch *l, uid_t ns_uid, gid_t ns_gid) {
        const nsr_plan *p = l->plan;
        return p->unshare_user && p->userns_block_fd == -1 &&
               (ns_uid != p->uid || ns_gid != p->gid || p->disable_userns);
}

/* --userns2, the nested user namespace with the requested ids, and
 * --disable-userns. */
static void nest_userns(launch *l, int procfd, uid_t ns_uid, gid_t ns_gid) {
        const nsr_plan *p = l->plan;
        nsr_error e = { 0 };
        int r;

        if (p->userns2_fd != -1 && setns(p->userns2_fd, CLONE_NEWUSER) < 0)
                child_fail(l, (nsr_error_set(&e, errno, "Setting userns2 failed"), &e));

        if (nests_userns(l, ns_uid, ns_gid)) {
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

/* The root's detached mounts go (rootfs.h): each waits for an RCU grace
 * period, unless another process still holds it. */
static void close_detached(launch *l) {
        for (size_t i = 0; i < ELEMENTSOF(l->detached); i++)
                l->detached[i] = safe_close(l->detached[i]);
}

/* Project mode: the root's detached mounts go to the monitor too, before
 * pid 1 and the command let go of theirs (launch-internal.h, held). Each
 * tree costs an RCU grace period when its last reference goes (30 to
 * 40 us); pid 1's closes were the last, and the command waited for them.
 * Now the monitor's are, once the command runs. Best effort: unsent, pid
 * 1's close is the last one, as before. */
static void hand_detached(launch *l) {
        if (l->detach_sock[1] < 0)
                return;
        int fds[ELEMENTSOF(l->detached)];
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(l->detached); i++)
                if (l->detached[i] >= 0)
                        fds[n++] = l->detached[i];
        char tag = 'd';
        struct iovec iov = { .iov_base = &tag, .iov_len = 1 };
        if (n > 0)
                (void) nsr_sockmsg_send(l->detach_sock[1], &iov, 1, fds, n);
        l->detach_sock[1] = safe_close(l->detach_sock[1]);
}

static bool has_detached(const launch *l) {
        for (size_t i = 0; i < ELEMENTSOF(l->detached); i++)
                if (l->detached[i] >= 0)
                        return true;
        return false;
}

/* Project mode: pid 1 keeps only the fds it works with (and stdio, which
 * the command has too). The others are the monitor's: the projects' dirs,
 * the state dir, the fds the caller left open, which the command never
 * gets. pid 1 held them while the command ran, and a command that can
 * read pid 1's fds (/proc/1/fd: the same user, and only a Landlock scope,
 * ABI 6 or later, stood between them) wrote to the host's project dir
 * past the overlay, and reached the state dir. */
static int pid1_close_others(launch *l, const int *ready, const int *let_go, nsr_error *err) {
        if (!l->extra)
                return 0;
        const nsr_launch_session *ses = l->extra->session;
        _cleanup_free_ int *keep = nsr_realloc_array(
                NULL, 7 + ELEMENTSOF(l->detached) + 1 + ELEMENTSOF(ses->sandbox_close) + l->n_lock_fds, sizeof(int));
        size_t n = 0;
        keep[n++] = ready[1];
        keep[n++] = let_go[0];
        keep[n++] = let_go[1];
        keep[n++] = l->status_pipe[1];
        keep[n++] = l->err_pipe[1];
        keep[n++] = l->notify_sock[1];
        keep[n++] = l->plan->sync_fd;
        for (size_t i = 0; i < ELEMENTSOF(l->detached); i++)
                keep[n++] = l->detached[i];
        if (ses) {
                keep[n++] = ses->agent_fd;
                for (size_t i = 0; i < ELEMENTSOF(ses->sandbox_close); i++)
                        keep[n++] = ses->sandbox_close[i];
        }
        for (size_t i = 0; i < l->n_lock_fds; i++)
                keep[n++] = l->lock_fds[i];
        int r = nsr_close_all_but(3, keep, n);
        return r < 0 ? nsr_error_set(err, -r, "pid 1: cannot close the monitor's fds") : 0;
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
                if (nsr_caps_bound(l->caps_keep, &e) < 0)
                        child_fail(l, &e);
                bound = l->caps_keep;
        }
        /* The command's program waits for pid 1 to be confined: pid 1
         * shares its namespaces, and the command must never run beside
         * a pid 1 that kept its capabilities or its filter. nsrun's own
         * steps in the command (its confinement, above all the filter's
         * load) go on meanwhile, on the other CPU: wait_pid1. */
        int ready[2], let_go[2] = { -1, -1 };
        if (pipe2(ready, O_CLOEXEC) < 0 || (has_detached(l) && pipe2(let_go, O_CLOEXEC) < 0))
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
        /* The root's detached mounts: the command lets go of its copies at
         * once and says so, and pid 1 waits for that before it closes its
         * own, so that its close is the last one in the sandbox: it waits
         * for the grace periods while the command loads its filter, or, in
         * project mode, drops a reference the monitor still holds
         * (hand_detached). */
        if (cmd == 0) {
                close_detached(l);
                if (let_go[1] >= 0)
                        (void) nsr_write_all(let_go[1], "x", 1);
                safe_close(let_go[0]);
                safe_close(let_go[1]);
        }
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
                /* pid 1: keep only what it needs (its fds first: its
                 * filter refuses close_range). Every step fails
                 * closed: the command is killed before it starts
                 * and the error goes to the monitor. */
                if (pid1_close_others(l, ready, let_go, &e) < 0 || confine_pid1(l, bound, &e) < 0) {
                        (void) kill(cmd, SIGKILL);
                        child_fail(l, &e);
                }
                l->err_pipe[1] = safe_close(l->err_pipe[1]);
                l->notify_sock[1] = safe_close(l->notify_sock[1]);
                /* Before the command may run: they reach host dirs. A
                 * command that died first ends the wait too (EOF). */
                if (let_go[0] >= 0) {
                        char c;
                        close(let_go[1]);
                        (void) nsr_read_full(let_go[0], &c, 1);
                        close(let_go[0]);
                }
                close_detached(l);
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
        l->pid1_ready = ready[0];
        if (p->sync_fd != -1)
                close(p->sync_fd);
        return bound;
}

/* Until pid 1 is confined (it says so, or it failed, said why and kills
 * this process). The last step before the command's own code (or the
 * agent's) runs; after the command's filter, which every policy nsrun
 * ships lets read(2) through. A policy that refuses it ends the launch
 * here, before the execve. Once only: a second call returns. */
static void wait_pid1(launch *l) {
        if (l->pid1_ready < 0)
                return;
        char c;
        ssize_t k = nsr_read_full(l->pid1_ready, &c, 1);
        if (k < 0) {
                nsr_error e = { 0 };
                nsr_error_set(&e, -k, "cannot wait for the sandbox's pid 1 (does the seccomp policy refuse read?)");
                child_fail(l, &e);
        }
        if (k != 1)
                _exit(1); /* pid 1 failed and says why */
        l->pid1_ready = safe_close(l->pid1_ready);
}

/* The ops the monitor found for the plan's slots (extra->fill_slots), for
 * the build, which asks for them when it reaches the first slot
 * (nsr_mount_ctx.take_slots). Nothing of the sandbox runs without them: a
 * monitor that died or sent bytes that do not unpack fails the build. */
static int take_slots(void *data, nsr_plan ***ret, size_t *ret_n, nsr_error *err) {
        launch *l = data;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = l->slot_pipe[0] < 0 ? -EBADF : nsr_read_all(l->slot_pipe[0], SLOTS_MAX, &buf, &len);
        l->slot_pipe[0] = safe_close(l->slot_pipe[0]);
        if (r >= 0)
                r = len ? nsr_plan_slots_unpack(buf, len, ret, ret_n) : -EPROTO;
        /* The monitor moved this process before it sent them: a move that
         * came after the restore (launch_child_main) is undone, before pid
         * 1 and the command are forked (base/affinity.h). */
        if (l->cpus_split)
                (void) nsr_affinity_reassert(&l->cpus);
        nsr_timing_mark_now(l->plan->timing, "child: slots taken");
        if (r < 0)
                return nsr_error_setx(err, -r,
                                      "the hidden paths did not come from the monitor: the command did not run");
        return 0;
}

_noreturn_ void launch_child_main(launch *l) {
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
        /* So do the DNS answerer's, and the root gets a resolv.conf that
         * names them. */
        if (l->dns && (nsr_netns_loopback_add(NSR_DNS_ADDRESS, &e) < 0 || nsr_dns_child_setup(l->dns, &e) < 0))
                child_fail(l, &e);
        nsr_timing_mark_now(p->timing, "child: network (loopback, relay)");
        /* No more waits for the monitor before the slots (which its build
         * takes when it reaches them, data long sent): the caller's CPUs
         * again (base/affinity.h). Kept off the monitor's CPU through the
         * build, this process was 0.1 to 0.2 ms slower to the command. */
        if (l->cpus_split)
                (void) nsr_affinity_restore(&l->cpus);

        mode_t old_umask = umask(0);
        bool proc_fresh = false;
        nsr_mount_ctx mctx = { .host_tty = l->host_tty,
                               .fresh_proc = p->unshare_pid || p->pidns_fd != -1,
                               .resolv_conf = l->dns ? NSR_DNS_RESOLV_CONF : NULL,
                               .gate_fd = l->gate_pipe[0],
                               .gate_under = l->extra ? l->extra->after_clone_under : NULL,
                               .proc_after = nests_userns(l, ns_uid, ns_gid) ? &procfd : NULL,
                               .proc_after_ids_only = !p->disable_userns,
                               .proc_after_fresh = &proc_fresh,
                               .detached_out = l->detached,
                               .take_slots = l->slot_pipe[0] >= 0 ? take_slots : NULL,
                               .take_slots_data = l };
        if (nsr_mount_build_root(p, &mctx, &e) < 0)
                child_fail(l, &e);
        l->gate_pipe[0] = safe_close(l->gate_pipe[0]);
        nsr_timing_mark_now(p->timing, "child: mounts (root, hidden paths)");

        nest_userns(l, procfd, ns_uid, ns_gid);
        /* /proc's fd (a detached clone when the root was built in place,
         * rootfs.h) goes with the root's detached mounts; the sandbox's
         * own procfs, attached, goes now. */
        if (proc_fresh)
                procfd = safe_close(procfd);
        else
                l->detached[NSR_MOUNT_DETACHED_MAX] = TAKE_FD(procfd);

        if (p->block_fd != -1) {
                char c;
                (void) nsr_read_full(p->block_fd, &c, 1);
                close(p->block_fd);
        }

        umask(old_umask);
        choose_cwd(l, &e, &r);
        if (l->leftovers)
                l->leftovers->env = l->env; /* moved if PWD was added */
        if (r < 0)
                child_fail(l, &e);
        if (p->new_session && setsid() < 0)
                child_fail(l, (nsr_error_set(&e, errno, "setsid"), &e));

        if (take_locks(l, &e) < 0)
                child_fail(l, &e);

        hand_detached(l);
        /* What is still in the bounding set. */
        uint64_t bound = nsr_caps_all();
        if (need_reaper(p))
                bound = start_pid1(l, bound);
        else
                close_detached(l);
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
        if (l->extra && (l->extra->start_fence.tv_sec || l->extra->start_fence.tv_nsec)) {
                wait_fence(&l->extra->start_fence);
                nsr_timing_mark_now(p->timing, "child: start fence (coarse clock)");
        }
        /* Before the filter, which may refuse it: the command (or the
         * agent) runs on the caller's CPUs, and so does the monitor, which
         * wakes as this execve ends (on any CPU, not behind the command on
         * this one). No-ops unless the shared-memory clone pinned them. */
        (void) nsr_affinity_restore_other(&l->cpus, l->monitor_pid);
        (void) nsr_affinity_restore(&l->cpus);
        if (l->extra && l->extra->session) {
                wait_pid1(l);
                run_agent(l, bound);
        }
        /* The caller's bwrap programs (--seccomp, --add-seccomp-fd) may
         * refuse even read(2): with them the command waits first, as
         * bwrap's would. */
        if (p->n_seccomp)
                wait_pid1(l);
        nsr_timing_no_rusage();
        if (confine_command(l, bound, &e) < 0)
                child_fail(l, &e);
        nsr_timing_mark_now(p->timing, "command: confined (caps, seccomp)");
        wait_pid1(l);
        nsr_timing_mark_now(p->timing, "command: pid 1 confined");

        exec_command(l);
        e = (nsr_error){ .kind = NSR_ERR_EXEC };
        nsr_error_set(&e, errno, "execvp %s", p->argv[0]);
        e.kind = NSR_ERR_EXEC;
        child_fail(l, &e);
}

_noreturn_ void launch_child_main_shared(const launch *parent) {
        launch l = *parent;
        l.env = nsr_strv_copy(parent->env);
        l.leftovers->env = l.env;
        launch_child_main(&l);
}
