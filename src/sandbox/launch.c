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
 * own, never here.
 *
 * This file: the shared setup (the launch struct, pipes, caps, cgroup),
 * the clone, the id maps the monitor writes, --info-fd; the child's side
 * is child.c, the monitor's loop monitor.c. */
#include "config.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/sockmsg.h"
#include "base/syscalls.h"
#include "base/timing.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/launch-internal.h"
#include "sandbox/launch.h"
#include "sandbox/reaper.h"
#include "sandbox/rootfs.h"
#include "seccomp/connect.h"
#include "seccomp/refused.h"

extern char **environ;

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
        for (int i = 0; i < 2; i++) {
                safe_close(l->notify_sock[i]);
                safe_close(l->detach_sock[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(l->held); i++)
                safe_close(l->held[i]);
        for (size_t i = 0; i < l->n_progs; i++)
                free(l->progs[i].data);
        free(l->progs);
        nsr_strv_free(l->env);
        l->helper = nsr_egress_helper_free(l->helper);
        nsr_dns_free(l->dns);
        l->direct = nsr_direct_free(l->direct);
        l->direct_sock = safe_close(l->direct_sock);
        nsr_direct_sent_done(&l->direct_sent);
        nsr_relay_free(l->relay);
        free(l->host_tty);
        free(l->old_cwd);
        for (int i = 0; i < 2; i++) {
                safe_close(l->err_pipe[i]);
                safe_close(l->status_pipe[i]);
                safe_close(l->go_pipe[i]);
                safe_close(l->gate_pipe[i]);
                safe_close(l->slot_pipe[i]);
                safe_close(l->pid_pipe[i]);
        }
        safe_close(l->snmp_fd);
        safe_close(l->snmp6_fd);
}

/* Transparent egress (sandbox/direct.h): the connect program, chained
 * after the refused record's listener form or alone, and the socket to
 * the helper. A kernel that cannot put a socket in place: proxy only. */
static int prepare_direct(launch *l, nsr_error *err) {
        if (!nsr_connect_inject_available()) {
                l->direct_unavailable = true;
                return 0;
        }
        _cleanup_free_ char *prog = NULL;
        size_t len = 0;
        int r = nsr_connect_prog(&prog, &len, err);
        if (r < 0)
                return r;
        if (l->notify_prog) {
                char *chained = NULL;
                size_t clen = 0;
                r = nsr_bpf_chain(l->notify_prog, l->notify_len, prog, len, &chained, &clen);
                if (r < 0)
                        return nsr_error_set(err, -r, "the connect filter after the policy's");
                free(l->notify_prog);
                l->notify_prog = chained;
                l->notify_len = clen;
        } else {
                l->notify_prog = TAKE_PTR(prog);
                l->notify_len = len;
                l->notify_alone = true;
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, l->notify_sock) < 0)
                        return nsr_error_set(err, errno, "socketpair()");
        }
        /* Non-blocking: a helper that stops reading costs connects
         * (ECONNREFUSED), never the monitor's loop. */
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                return nsr_error_set(err, errno, "socketpair()");
        l->direct_sock = sv[0];
        l->notify_connect = true;
        return nsr_direct_new(&l->plan->egress, sv[1], &l->direct, err);
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
                if (r >= 0)
                        r = nsr_dns_new(&p->egress, &l->dns, err);
                if (r < 0)
                        return r;
                nsr_relay_env(&l->env);
                nsr_timing_mark_now(p->timing, "egress: relay and DNS answerer made");
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

        launch_raise_nofile(l);

        if (pipe2(l->err_pipe, O_CLOEXEC) < 0 || pipe2(l->status_pipe, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2()");
        if ((child_waits_early(l) || child_waits_late(l) || p->die_with_parent) && pipe2(l->go_pipe, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2()");
        if (extra && extra->after_clone && pipe2(l->gate_pipe, O_CLOEXEC) < 0)
                return nsr_error_set(err, errno, "pipe2()");
        if (extra && extra->fill_slots && pipe2(l->slot_pipe, O_CLOEXEC) < 0)
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
        if (extra && extra->hold_mounts && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, l->detach_sock) < 0)
                return nsr_error_set(err, errno, "socketpair()");
        if (l->relay && p->unshare_net) {
                int r = prepare_direct(l, err);
                if (r < 0)
                        return r;
                nsr_timing_mark_now(p->timing, "egress: connect filter");
        }

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

/* Bytes down a pipe to the child. It may have failed a step before it
 * reads (a --chdir that does not exist) and be gone with its end of the
 * pipe: that is EPIPE here, not a SIGPIPE that kills the monitor before
 * it reports the child's error (an ignored signal is discarded, never left
 * pending). */
static void write_to_child(int fd, const void *data, size_t len) {
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        (void) sigaction(SIGPIPE, &ign, &old);
        (void) nsr_write_all(fd, data, len);
        (void) sigaction(SIGPIPE, &old, NULL);
}

/* Lets the waiting child go on (go_pipe, gate_pipe). */
static void tell_child(int fd) {
        write_to_child(fd, "x", 1);
}

void launch_raise_nofile(launch *l) {
        size_t need = nsr_mount_fds_needed(l->plan) + 64;
        if (l->raised_nofile || getrlimit(RLIMIT_NOFILE, &l->old_nofile) < 0 ||
            l->old_nofile.rlim_cur == RLIM_INFINITY || need <= l->old_nofile.rlim_cur)
                return;
        struct rlimit nl = l->old_nofile;
        nl.rlim_cur = l->old_nofile.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
                l->raised_nofile = true;
}

/* extra->fill_slots, and its ops down the slot pipe (a child that died
 * meanwhile says why through its error pipe). */
static int send_slots(launch *l, nsr_error *err) {
        _cleanup_free_ char *packed = NULL;
        size_t len = 0;
        int r = l->extra->fill_slots(l->extra->fill_slots_data, &packed, &len, err);
        if (r < 0)
                return r;
#ifdef NSR_TEST_HOOKS
        /* t529: what the child does with ops that do not unpack. */
        if (getenv("NSRUN_TEST_SLOTS_TRUNCATED"))
                len /= 2;
#endif
        write_to_child(l->slot_pipe[1], packed, len);
        l->slot_pipe[1] = safe_close(l->slot_pipe[1]);
        return 0;
}

/* The child may run in the monitor's memory until its execve
 * (CLONE_VM | CLONE_VFORK, the way posix_spawn starts a program) when it
 * ends in the command's own execve and never waits for the monitor: no pid
 * 1 of nsrun's and no middle process (either would outlive the execve),
 * no --info-fd, --json-status-fd, --block-fd, --userns-block-fd or id maps
 * the monitor writes (the monitor sleeps until the execve), and none of
 * project mode's or the listeners' state, which the child would change
 * under the monitor. The gain is the launch's hand-off: no page tables
 * copied, no copy-on-write faults in either process, and the child runs
 * on the CPU the monitor leaves (0.15 to 0.3 ms of a 1.8 ms launch here). */
static bool child_may_share_vm(const launch *l) {
        const nsr_plan *p = l->plan;
        const nsr_launch_extra *x = l->extra;
        if (need_reaper(p) || p->pidns_fd != -1 || child_waits_early(l) || child_waits_late(l) || p->block_fd != -1 ||
            p->sync_fd != -1 || p->userns_block_fd != -1)
                return false;
        if (l->cgroup || l->relay || l->dns || l->notify_prog || l->listener != -1)
                return false;
        if (x && (x->kill_leftovers || x->refused || x->session || x->hold_mounts || x->after_clone || x->fill_slots ||
                  x->start_fence.tv_sec || x->start_fence.tv_nsec))
                return false;
        /* The child's stack is a part of the monitor's own. */
        struct rlimit st;
        return getrlimit(RLIMIT_STACK, &st) == 0 && st.rlim_cur >= 4 * SHARED_VM_STACK;
}

static int shared_vm_child(void *arg) {
        launch_child_main_shared(arg);
}

#ifdef NSR_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* The monitor is stopped until the child's execve (or its exit), so the
 * child's stack can be an array in this frame: the monitor's frames are
 * above it, and ASan knows it as the main thread's stack. The child's
 * frames never return (it ends in execve or _exit), so under ASan their
 * redzones would stay marked in the array's shadow: cleared here. */
static pid_t clone_shared_vm(launch *l, unsigned long flags) {
        char stack[SHARED_VM_STACK] __attribute__((aligned(64)));
        char **env = environ;
        struct child_leftovers left = { 0 };
        l->leftovers = &left;
        /* The child runs on this CPU as the monitor stops (base/affinity.h). */
        nsr_affinity_pin_here(&l->cpus);
        l->monitor_pid = (flags & CLONE_NEWPID) ? 0 : getpid();
        pid_t pid = clone(shared_vm_child, stack + sizeof(stack), (int) (flags | CLONE_VM | CLONE_VFORK), l);
        int e = errno;
#ifdef NSR_ASAN
        __asan_unpoison_memory_region(stack, sizeof(stack));
#endif
        /* The command's execve set the environment in the shared memory. */
        environ = env;
        l->leftovers = NULL;
        nsr_strv_free(left.env);
        free(left.args);
        (void) nsr_affinity_restore(&l->cpus);
        errno = e;
        return pid;
}

/* The process that parses the sandbox's network bytes (egresshelper.h). */
int launch_start_helper(launch *l, nsr_error *err) {
        int r = nsr_egress_helper_start(l->relay, l->dns, l->direct, &l->helper, err);
        /* The helper has its copy; the monitor keeps only its end. */
        l->direct = nsr_direct_free(l->direct);
        if (r >= 0)
                nsr_timing_mark_now(l->plan->timing, "monitor: egress helper started");
        return r;
}

/* Creates the sandbox and monitors it. Signals are blocked around it. */
static int run(launch *l, nsr_launch_result *res, nsr_error *err) {
        const nsr_plan *p = l->plan;
        int r;

        /* A session's monitor is its daemon, meant to outlive the caller:
         * its parent is the middle process of the double fork, which exits
         * at once. Dying with that parent killed the daemon, silently,
         * whenever it got here first (a loaded machine). The sandbox still
         * dies with the monitor (child.c). */
        bool detached = l->extra && l->extra->session;
        if (p->die_with_parent && !detached && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                return nsr_error_set(err, errno, "prctl");

        pid_t child;
        bool shared = child_may_share_vm(l);
        /* The monitor looks up the hidden paths (the plan's slots) beside
         * its child: the child keeps off the monitor's CPU meanwhile
         * (base/affinity.h). Only with slots: the child takes the caller's
         * set back once it has made its namespaces, and once more when the
         * slots came, which the monitor sends after it moved the child, so
         * a move that came after the first restore is undone then. */
        l->cpus_split = !shared && l->extra && l->extra->fill_slots;
        if (l->cpus_split)
                nsr_affinity_save(&l->cpus);
        if (shared)
                child = clone_shared_vm(l, clone_flags(p));
        else {
                child = l->cgroup ? nsr_cgroup_clone(l->cgroup, clone_flags(p)) : nsr_raw_clone(clone_flags(p), NULL);
                if (child == 0)
                        launch_child_main(l);
        }
        if (child < 0)
                return clone_error(p, errno, err);
        nsr_timing_mark_now(p->timing, shared ? "monitor: clone, shared until the execve" : "monitor: clone");
        if (l->cpus_split) {
#ifdef NSR_TEST_HOOKS
                /* A monitor slow to move its child (t761): the move comes
                 * after the child gave its CPUs back. */
                const char *late = getenv("NSRUN_TEST_KEEP_OFF_DELAY_MS");
                if (late)
                        (void) usleep((useconds_t) atoi(late) * 1000);
#endif
                (void) nsr_affinity_keep_off(&l->cpus, child);
        }

        l->err_pipe[1] = safe_close(l->err_pipe[1]);
        l->status_pipe[1] = safe_close(l->status_pipe[1]);
        l->go_pipe[0] = safe_close(l->go_pipe[0]);
        l->gate_pipe[0] = safe_close(l->gate_pipe[0]);
        l->slot_pipe[0] = safe_close(l->slot_pipe[0]);
        l->pid_pipe[1] = safe_close(l->pid_pipe[1]);
        l->detach_sock[1] = safe_close(l->detach_sock[1]);
        /* The egress helper is forked when the sandbox first uses the
         * network (below), or now, before --userns2 would put it in that
         * namespace. The child's ends of the relay's and the answerer's
         * control sockets close first. */
        pid_t cloned = child;
        bool helper_early = l->relay && p->userns2_fd != -1;
        if (l->relay) {
                nsr_relay_parent_started(l->relay);
                nsr_dns_parent_started(l->dns);
        }
        if (helper_early && (r = launch_start_helper(l, err)) < 0)
                return r;
        res->direct_unavailable = l->direct_unavailable;
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
                tell_child(l->go_pipe[1]);
        } else if (parent_maps_ids(l)) {
                r = write_full_maps(child, err);
                if (r < 0) {
                        kill(child, SIGKILL);
                        (void) waitpid(child, NULL, 0);
                        return r;
                }
                tell_child(l->go_pipe[1]);
        } else if (child_waits_late(l))
                tell_child(l->go_pipe[1]);
        /* The plan's slots, filled while the child makes its namespaces. */
        if (l->extra && l->extra->fill_slots) {
                r = send_slots(l, err);
                if (r < 0) {
                        kill(child, SIGKILL);
                        (void) waitpid(child, NULL, 0);
                        return r;
                }
        }
        /* The caller's work the root waits for, done while the child
         * builds the rest of it. */
        if (l->extra && l->extra->after_clone) {
                r = l->extra->after_clone(l->extra->after_clone_data, err);
                if (r < 0) {
                        kill(child, SIGKILL);
                        (void) waitpid(child, NULL, 0);
                        return r;
                }
                tell_child(l->gate_pipe[1]);
                l->gate_pipe[1] = safe_close(l->gate_pipe[1]);
        }
        /* Otherwise the helper is forked when the sandbox first uses the
         * network (monitor.c): a connection, a query or a connect waits
         * for it in the backlog, the socket's queue or the listener. A
         * run that never does costs no helper: forked beside the child it
         * took 0.2 ms of the run (its fork, its set-up on a CPU the child
         * wanted, its log at the end). */
        if (l->relay && !helper_early)
                l->helper_lazy = true;
        /* Opened now, never inherited by the egress helper for longer
         * than its first steps (it closes every fd it does not serve
         * with): no process but the monitor (and whoever it hands it to)
         * may hold the sandbox's mounts, or dropping them would not tear
         * them down (and sync) at once. */
        if (l->extra && l->extra->hold_mounts) {
                char ns[64];
                snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int) cloned);
                res->mnt_ns = open(ns, O_RDONLY | O_CLOEXEC);
        }
        if (l->extra && l->extra->session && l->extra->session->sandbox_pid)
                *l->extra->session->sandbox_pid = child;
        return launch_monitor(l, child, res, err);
}

int nsr_launch(const nsr_plan *p, const nsr_launch_extra *extra, nsr_launch_result *ret, nsr_error *err) {
        launch l = {
                .plan = p,
                .extra = extra,
                .err_pipe = { -1, -1 },
                .status_pipe = { -1, -1 },
                .go_pipe = { -1, -1 },
                .gate_pipe = { -1, -1 },
                .slot_pipe = { -1, -1 },
                .snmp_fd = -1,
                .snmp6_fd = -1,
                .pid_pipe = { -1, -1 },
                .pid1_ready = -1,
                .detached = { -1, -1, -1, -1, -1 },
                .notify_sock = { -1, -1 },
                .detach_sock = { -1, -1 },
                .held = { -1, -1, -1, -1, -1 },
                .listener = -1,
                .direct_sock = -1,
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
