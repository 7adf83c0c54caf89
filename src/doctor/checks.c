/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The doctor's names, verdict and explanations (pure), and the runner that
 * puts every probe in a child of its own. The probes are in probes.c. */
#include "config.h"

#include <stdarg.h>

#include <fcntl.h>
#include <libmount/libmount.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "doctor/internal.h"

static const struct {
        const char *name;
        nsr_check_class cls;
} check_table[_NSR_CHECK_ID_MAX] = {
        [NSR_CHECK_USERNS] = { "userns", NSR_CHECK_REQUIRED },
        [NSR_CHECK_UID_MAP] = { "uid-map", NSR_CHECK_REQUIRED },
        [NSR_CHECK_USERNS_MOUNT] = { "userns-mount", NSR_CHECK_REQUIRED },
        [NSR_CHECK_PIDNS] = { "pidns", NSR_CHECK_REQUIRED },
        [NSR_CHECK_NETNS] = { "netns", NSR_CHECK_REQUIRED },
        [NSR_CHECK_OVERLAY] = { "overlay", NSR_CHECK_REQUIRED },
        [NSR_CHECK_OVERLAY_DEPTH] = { "overlay-depth", NSR_CHECK_REQUIRED },
        [NSR_CHECK_SECCOMP] = { "seccomp", NSR_CHECK_REQUIRED },
        [NSR_CHECK_LANDLOCK] = { "landlock", NSR_CHECK_FALLBACK },
        [NSR_CHECK_LANDLOCK_SCOPE] = { "landlock-scope", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_TMPFS_XATTR] = { "tmpfs-xattr", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_FANOTIFY] = { "fanotify", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_PIDFD] = { "pidfd", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_CLONE3] = { "clone3", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_CGROUP] = { "cgroup", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_SANDBOX] = { "sandbox", NSR_CHECK_INFO },
        [NSR_CHECK_PROC_HIDEPID] = { "proc-hidepid", NSR_CHECK_OPTIONAL },
        [NSR_CHECK_EGRESS] = { "egress", NSR_CHECK_INFO },
};

void nsr_hostcheck_egress_describe(const nsr_check checks[_NSR_CHECK_ID_MAX], int landlock_abi, nsr_check *out) {
        bool ns = checks[NSR_CHECK_USERNS].ok && checks[NSR_CHECK_UID_MAP].ok && checks[NSR_CHECK_USERNS_MOUNT].ok &&
                  checks[NSR_CHECK_NETNS].ok;
        *out = (nsr_check){ .id = NSR_CHECK_EGRESS, .ok = true };
        if (ns)
                snprintf(out->detail, sizeof(out->detail),
                         "--allow-host works: nsrun's HTTP and SOCKS5 relay into a private network namespace");
        else if (checks[NSR_CHECK_LANDLOCK].ok && landlock_abi >= 4)
                snprintf(out->detail, sizeof(out->detail),
                         "--allow-host works in best-effort mode: the relay listens on the host's loopback and "
                         "Landlock ABI %d lets the command connect to it alone",
                         landlock_abi);
        else
                snprintf(out->detail, sizeof(out->detail),
                         "--allow-host is refused here: without a network namespace it needs Landlock ABI 4 or "
                         "later (TCP rules)");
}

const char *nsr_check_name(nsr_check_id id) {
        if (id < 0 || id >= _NSR_CHECK_ID_MAX)
                return NULL;
        return check_table[id].name;
}

nsr_check_class nsr_check_class_of(nsr_check_id id) {
        if (id < 0 || id >= _NSR_CHECK_ID_MAX)
                return _NSR_CHECK_CLASS_INVALID;
        return check_table[id].cls;
}

static const char *const verdict_names[_NSR_VERDICT_MAX] = {
        [NSR_VERDICT_FULL] = "full",
        [NSR_VERDICT_DEGRADED] = "degraded",
        [NSR_VERDICT_UNAVAILABLE] = "unavailable",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_verdict, nsr_verdict, verdict_names)

nsr_verdict nsr_hostcheck_verdict(const nsr_check checks[_NSR_CHECK_ID_MAX]) {
        /* Without a user namespace in which we may map ids and mount,
         * there is no namespace sandbox at all: what is left is
         * best-effort mode, which needs Landlock. */
        bool core = checks[NSR_CHECK_USERNS].ok && checks[NSR_CHECK_UID_MAP].ok && checks[NSR_CHECK_USERNS_MOUNT].ok;
        if (!core)
                return checks[NSR_CHECK_LANDLOCK].ok ? NSR_VERDICT_DEGRADED : NSR_VERDICT_UNAVAILABLE;
        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++)
                if (check_table[i].cls == NSR_CHECK_REQUIRED && !checks[i].ok)
                        return NSR_VERDICT_DEGRADED;
        return NSR_VERDICT_FULL;
}

bool nsr_hostcheck_hidepid(const char *opts) {
        if (!opts)
                return false;
        for (const char *o = opts; (o = strstr(o, "hidepid=")); o++) {
                if (o != opts && o[-1] != ',')
                        continue;
                const char *v = o + strlen("hidepid=");
                size_t l = strcspn(v, ",");
                return !(l == 1 && v[0] == '0') && !(l == 3 && strncmp(v, "off", 3) == 0) && l > 0;
        }
        return false;
}

static void guarantee(nsr_guarantee *g, const char *name, bool holds, const char *fmt, ...) _printf_(4, 5);
static void guarantee(nsr_guarantee *g, const char *name, bool holds, const char *fmt, ...) {
        g->name = name;
        g->holds = holds;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->detail, sizeof(g->detail), fmt, ap);
        va_end(ap);
}

size_t nsr_hostcheck_best_effort(const nsr_check c[_NSR_CHECK_ID_MAX], int abi, nsr_guarantee ret[NSR_GUARANTEES_MAX]) {
        bool ll = c[NSR_CHECK_LANDLOCK].ok && abi >= 1;
        bool sc = c[NSR_CHECK_SECCOMP].ok;
        bool scope = c[NSR_CHECK_LANDLOCK_SCOPE].ok && abi >= 6;
        size_t n = 0;
        static const char no_ll[] = "no Landlock here: best-effort mode refuses to run";
        if (ll)
                guarantee(&ret[n++], "files-write", true,
                          "writes only to the projects, --rw dirs, a private TMPDIR and a few devices (Landlock "
                          "ABI %d)",
                          abi);
        else
                guarantee(&ret[n++], "files-write", false, "%s", no_ll);
        guarantee(&ret[n++], "files-hidden", ll,
                  ll ? "hide.list, --hide, the state dir, /run and $XDG_RUNTIME_DIR cannot be read (their parent "
                       "dirs cannot be listed either)"
                     : no_ll);
        guarantee(&ret[n++], "truncate", ll && abi >= 3,
                  ll && abi >= 3 ? "truncate(2) outside the writable paths fails"
                  : ll           ? "Landlock ABI < 3 does not handle truncate: a file the user may write can be "
                                   "truncated to any length (not written)"
                                 : no_ll);
        guarantee(&ret[n++], "protected-git-paths", ll,
                  ll ? ".git/hooks, .git/config and the rest cannot be written during the run; the project's top "
                       "dir and .git take no new entries"
                     : no_ll);
        guarantee(&ret[n++], "review-before-commit", false,
                  "writes go to the projects at once (no overlay): a snapshot taken before the run backs nsrun "
                  "undo, and --keep is refused");
        guarantee(&ret[n++], "network", sc,
                  sc ? "socket(2) fails for every family (fallback.policy): no network, no host unix socket, and "
                       "no private loopback either"
                     : "no seccomp filter here: sockets are not confined");
        guarantee(&ret[n++], "signals", scope,
                  scope ? "signals and abstract unix sockets are scoped to the sandbox (Landlock ABI 6)"
                        : "Landlock ABI < 6: the command can signal every process of the user");
        guarantee(&ret[n++], "ptrace", ll,
                  ll ? "no ptrace of, and no /proc/PID/mem or environ of, processes outside the sandbox" : no_ll);
        guarantee(&ret[n++], "host-processes", sc,
                  sc ? "prlimit, setpriority, sched_setaffinity, ioprio_set and the like act only on the caller "
                       "(pid 0); pidfd_open, process_vm_* and kcmp fail"
                     : "no seccomp filter here: another process of the user can be reniced or limited");
        bool hp = c[NSR_CHECK_PROC_HIDEPID].ok;
        guarantee(&ret[n++], "process-list", false,
                  "no pid namespace: the command sees the user's processes and their command lines%s",
                  hp ? "; other users' are hidden (/proc has hidepid)"
                     : ", and other users' command lines too (/proc has no hidepid)");
        guarantee(&ret[n++], "leftovers", true,
                  "every process the command started is killed before the capture (nsrun is a child subreaper "
                  "and walks its process tree until none is left)");
        guarantee(&ret[n++], "terminal", ll && sc,
                  ll && sc ? "a new session, TIOCSTI refused, and of /dev/pts only the terminal nsrun runs on"
                           : "needs Landlock and seccomp");
        guarantee(&ret[n++], "ipc", false,
                  "no IPC namespace: the user's System V shared memory, semaphores and message queues are "
                  "reachable");
        return n;
}

static const char *const userns_step_names[_NSR_USERNS_STEP_MAX] = {
        [NSR_USERNS_STEP_NONE] = "nothing",
        [NSR_USERNS_STEP_CREATE] = "unshare(CLONE_NEWUSER)",
        [NSR_USERNS_STEP_SETGROUPS] = "writing /proc/self/setgroups",
        [NSR_USERNS_STEP_UID_MAP] = "writing /proc/self/uid_map",
        [NSR_USERNS_STEP_GID_MAP] = "writing /proc/self/gid_map",
        [NSR_USERNS_STEP_MOUNT_NS] = "unshare(CLONE_NEWNS)",
        [NSR_USERNS_STEP_MOUNT] = "mounting a tmpfs",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(userns_step, nsr_userns_step, userns_step_names)

const char *nsr_userns_step_to_string(nsr_userns_step s) {
        return userns_step_to_string(s) ?: "an unknown step";
}

#define FIX_APPARMOR                                                                                                   \
        "load nsrun's AppArmor profile, which lets nsrun (and only nsrun) use user namespaces: make "                  \
        "install-apparmor, then apparmor_parser -r " NSR_APPARMOR_DIR "/nsrun"
#define FIX_BEST_EFFORT "or run project mode with --sandbox=best-effort (Landlock and seccomp, no namespaces)"

static void explain_create(const nsr_userns_facts *f, char *reason, size_t rl, char *fix, size_t fl) {
        errtext et = errtxt(f->error);
        switch (f->error) {
        case EPERM:
        case EACCES:
                if (f->unprivileged_userns_clone == 0) {
                        snprintf(reason, rl,
                                 "kernel.unprivileged_userns_clone is 0, so unshare(CLONE_NEWUSER) fails: %s", et.s);
                        snprintf(
                                fix, fl,
                                "sysctl -w kernel.unprivileged_userns_clone=1 (and keep it in /etc/sysctl.d/), " FIX_BEST_EFFORT);
                } else if (f->seccomp_mode == 2) {
                        snprintf(
                                reason, rl,
                                "a seccomp filter denies unshare(CLONE_NEWUSER): %s while the sysctls allow user "
                                "namespaces and /proc/self/status says Seccomp: 2 (Docker's default profile does this)",
                                et.s);
                        snprintf(fix, fl,
                                 "run the container with a seccomp profile that allows clone and unshare with "
                                 "CLONE_NEWUSER, " FIX_BEST_EFFORT);
                } else if (f->apparmor_restrict == 1) {
                        snprintf(
                                reason, rl,
                                "AppArmor denies creating the user namespace (kernel.apparmor_restrict_unprivileged_userns "
                                "is 1): %s",
                                et.s);
                        snprintf(fix, fl, "%s", FIX_APPARMOR);
                } else {
                        snprintf(reason, rl,
                                 "unshare(CLONE_NEWUSER) fails: %s, although no known sysctl forbids it (a security "
                                 "module, a chroot, or the container runtime denies it)",
                                 et.s);
                        snprintf(fix, fl,
                                 "ask the administrator which policy denies user namespaces, " FIX_BEST_EFFORT);
                }
                return;
        case ENOSPC:
                if (f->max_user_namespaces == 0) {
                        snprintf(reason, rl, "user.max_user_namespaces is 0, so unshare(CLONE_NEWUSER) fails: %s",
                                 et.s);
                        snprintf(fix, fl,
                                 "sysctl -w user.max_user_namespaces=15000 (the limit is per user namespace: if a "
                                 "container or sandbox set it to 0, raise it there), " FIX_BEST_EFFORT);
                } else {
                        snprintf(reason, rl,
                                 "unshare(CLONE_NEWUSER) fails: %s: the user.max_user_namespaces limit (%ld) is used "
                                 "up, or user namespaces are already nested 32 deep",
                                 et.s, f->max_user_namespaces);
                        snprintf(fix, fl,
                                 "end processes that hold user namespaces, raise user.max_user_namespaces, or run "
                                 "nsrun from a less deeply nested sandbox");
                }
                return;
        case EUSERS:
                snprintf(reason, rl, "user namespaces are nested too deeply (the kernel allows 32 levels): %s", et.s);
                snprintf(fix, fl, "run nsrun from a less deeply nested sandbox");
                return;
        case EINVAL:
                if (!f->have_userns_file) {
                        snprintf(reason, rl, "the kernel has no user namespaces (CONFIG_USER_NS is off): %s", et.s);
                        snprintf(fix, fl, "use a kernel built with CONFIG_USER_NS=y, " FIX_BEST_EFFORT);
                } else {
                        snprintf(reason, rl,
                                 "unshare(CLONE_NEWUSER) fails: %s, although the kernel has user namespaces (a seccomp "
                                 "filter%s returns it)",
                                 et.s, f->seccomp_mode == 2 ? ", loaded here," : "");
                        snprintf(fix, fl, "allow unshare and clone with CLONE_NEWUSER, " FIX_BEST_EFFORT);
                }
                return;
        default:
                snprintf(reason, rl, "unshare(CLONE_NEWUSER) fails: %s%s", et.s,
                         f->seccomp_mode == 2 ? " (a seccomp filter is loaded: Seccomp: 2)" : "");
                snprintf(fix, fl, "%s",
                         f->error == ENOSYS ? "allow unshare in the seccomp profile, " FIX_BEST_EFFORT
                                            : "see unshare(2) for this error");
                return;
        }
}

void nsr_hostcheck_userns_explain(const nsr_userns_facts *f, char *reason, size_t rl, char *fix, size_t fl) {
        if (f->step == NSR_USERNS_STEP_CREATE) {
                explain_create(f, reason, rl, fix, fl);
                return;
        }
        const char *what = nsr_userns_step_to_string(f->step);
        errtext et = errtxt(f->error);
        if (f->step == NSR_USERNS_STEP_NONE) {
                snprintf(reason, rl, "user namespaces work");
                fix[0] = '\0';
        } else if (f->error == EROFS && f->step <= NSR_USERNS_STEP_GID_MAP) {
                snprintf(reason, rl, "%s fails: %s: /proc is mounted read-only here (a sandbox bound it so)", what,
                         et.s);
                snprintf(fix, fl,
                         "give the sandbox a writable /proc (bwrap or nsrun: --unshare-pid --proc /proc, or "
                         "--bind /proc /proc)");
        } else if ((f->error == EPERM || f->error == EACCES) && f->apparmor_restrict == 1) {
                /* Ubuntu 23.10+: the namespace is created, but an
                 * unconfined process lands in a profile without
                 * capabilities there. */
                snprintf(
                        reason, rl,
                        "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns "
                        "is 1): the namespace is created but has no capabilities, so %s fails: %s",
                        what, et.s);
                snprintf(fix, fl, "%s", FIX_APPARMOR);
        } else if ((f->error == EPERM || f->error == EACCES) && f->seccomp_mode == 2) {
                snprintf(reason, rl,
                         "%s fails inside the new user namespace: %s; a seccomp filter is loaded (Seccomp: 2)", what,
                         et.s);
                snprintf(
                        fix, fl,
                        "allow mount, unshare and writes to /proc/self/*_map in the seccomp profile, " FIX_BEST_EFFORT);
        } else if (f->error == EPERM || f->error == EACCES) {
                snprintf(reason, rl, "%s fails inside the new user namespace: %s (a security module denies it)", what,
                         et.s);
                snprintf(fix, fl, "ask the administrator which policy confines user namespaces, " FIX_BEST_EFFORT);
        } else {
                snprintf(reason, rl, "%s fails inside the new user namespace: %s", what, et.s);
                snprintf(fix, fl, "%s", "see user_namespaces(7) and mount(2) for this error");
        }
}

const char *nsr_hostcheck_hint(const nsr_error *e) {
        /* Failures that belong to the user namespace layers: the clone
         * itself (any errno doctor can explain), then the id maps and
         * the first mounts, which AppArmor's restriction breaks with
         * EPERM. The kind says which step failed, not the message. */
        static const char hint[] = "run \"nsrun doctor\" for details";
        if (!e)
                return NULL;
        if (e->kind == NSR_ERR_CLONE &&
            (e->code == EPERM || e->code == ENOSPC || e->code == EINVAL || e->code == EUSERS))
                return hint;
        if (e->kind == NSR_ERR_USERNS_SETUP && (e->code == EPERM || e->code == EACCES))
                return hint;
        return NULL;
}

/* ---- mount tables ------------------------------------------------- */

/* The mount holding path: by device number first (a directory on an
 * overlay reports the overlay's own device), else the last mount whose
 * mount point is the longest prefix of path. No system calls: the table
 * has no cache, so lookups compare strings. */
static struct libmnt_fs *fs_of(struct libmnt_table *tb, const char *path, dev_t dev) {
        if (dev != 0) {
                struct libmnt_fs *fs = mnt_table_find_devno(tb, dev, MNT_ITER_BACKWARD);
                if (fs)
                        return fs;
        }
        if (!path || path[0] != '/')
                return NULL;
        _cleanup_free_ char *p = nsr_path_normalize(path);
        for (;;) {
                struct libmnt_fs *fs = mnt_table_find_target(tb, p, MNT_ITER_BACKWARD);
                if (fs)
                        return fs;
                if (streq(p, "/"))
                        return NULL;
                char *slash = strrchr(p, '/');
                if (slash == p)
                        p[1] = '\0';
                else
                        *slash = '\0';
        }
}

static bool is_overlay(struct libmnt_fs *fs) {
        return streq(mnt_fs_get_fstype(fs), "overlay");
}

static int fs_depth(struct libmnt_table *tb, struct libmnt_fs *fs, unsigned budget);

/* The deepest layer in a ':'-separated list (overlay escapes ':' and '\'
 * with a backslash). */
static int layers_depth(struct libmnt_table *tb, struct libmnt_fs *self, const char *list, size_t len,
                        unsigned budget) {
        int depth = 0;
        _cleanup_free_ char *buf = nsr_malloc0(len + 1);
        size_t o = 0;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && list[i] == '\\' && i + 1 < len) {
                        buf[o++] = list[++i];
                        continue;
                }
                if (i < len && list[i] != ':') {
                        buf[o++] = list[i];
                        continue;
                }
                buf[o] = '\0';
                o = 0;
                if (buf[0] != '/')
                        continue;
                struct libmnt_fs *lfs = fs_of(tb, buf, 0);
                if (lfs && lfs != self) {
                        int d = fs_depth(tb, lfs, budget);
                        if (d > depth)
                                depth = d;
                }
        }
        return depth;
}

static int fs_depth(struct libmnt_table *tb, struct libmnt_fs *fs, unsigned budget) {
        if (!is_overlay(fs))
                return 0;
        if (budget == 0)
                return 1;
        int below = 0;
        char *opts = (char *) mnt_fs_get_fs_options(fs);
        char *name = NULL, *value = NULL;
        size_t namesz = 0, valuesz = 0;
        while (opts && mnt_optstr_next_option(&opts, &name, &namesz, &value, &valuesz) == 0) {
                if (!value)
                        continue;
                bool layer = (namesz == 8 && strncmp(name, "lowerdir", 8) == 0) ||
                             (namesz == 8 && strncmp(name, "upperdir", 8) == 0) ||
                             (namesz == 9 && strncmp(name, "lowerdir+", 9) == 0) ||
                             (namesz == 8 && strncmp(name, "datadir+", 8) == 0);
                if (!layer)
                        continue;
                int d = layers_depth(tb, fs, value, valuesz, budget - 1);
                if (d > below)
                        below = d;
        }
        return 1 + below;
}

int nsr_hostcheck_overlay_depth(struct libmnt_table *tb, const char *path, dev_t dev) {
        struct libmnt_fs *fs = fs_of(tb, path, dev);
        if (!fs)
                return -ENOENT;
        /* The budget bounds the walk should layers name each other. */
        return fs_depth(tb, fs, OVERLAY_MAX_DEPTH + 1);
}

/* ---- sandbox facts ------------------------------------------------ */

void nsr_hostcheck_sandbox_describe(const nsr_sandbox_facts *f, char *buf, size_t len) {
        char found[NSR_CHECK_TEXT_MAX] = "";
        char tmp[160];
        if (f->env_nsrun)
                append(found, sizeof(found), "an nsrun project sandbox (NSRUN=1)");
        if (f->ancestor_nsrun && !f->env_nsrun)
                append(found, sizeof(found), "nsrun (a parent process or pid 1 is nsrun)");
        if (f->ancestor_bwrap)
                append(found, sizeof(found), "bubblewrap (a parent process or pid 1 is bwrap)");
        if (f->flatpak_info)
                append(found, sizeof(found), "Flatpak (/.flatpak-info)");
        if (f->dockerenv)
                append(found, sizeof(found), "Docker (/.dockerenv)");
        if (f->containerenv)
                append(found, sizeof(found), "Podman (/run/.containerenv)");
        if (f->container[0]) {
                snprintf(tmp, sizeof(tmp), "a container \"%s\" (/run/systemd/container)", f->container);
                append(found, sizeof(found), tmp);
        }
        /* The initial user namespace maps every id to itself. */
        if (f->uid_map[0] && !streq(f->uid_map, "0 0 4294967295")) {
                snprintf(tmp, sizeof(tmp), "a user namespace (uid_map \"%s\")", f->uid_map);
                append(found, sizeof(found), tmp);
        }
        if (found[0])
                snprintf(buf, len, "already inside: %s", found);
        else
                snprintf(buf, len, "not inside a known sandbox or container");
}

/* ---- running probes ----------------------------------------------- */

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int nsr_hostcheck_fork(nsr_probe_fn fn, const void *arg, const nsr_check_id *ids, size_t n, int timeout_ms,
                       nsr_check *ret) {
        for (size_t i = 0; i < n; i++)
                ret[i] = (nsr_check){ .id = ids[i] };
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close(p[0]);
                close(p[1]);
                return -e;
        }
        if (pid == 0) {
                /* The probe may hang in a namespace of its own; it must
                 * not outlive us. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                close(p[0]);
                nsr_check *out = nsr_malloc0(n * sizeof(nsr_check));
                for (size_t i = 0; i < n; i++)
                        out[i].id = ids[i];
                fn(arg, out, n);
                (void) nsr_write_all(p[1], out, n * sizeof(nsr_check));
                _exit(0);
        }
        close(p[1]);
        _cleanup_close_ int rfd = p[0];

        size_t want = n * sizeof(nsr_check), got = 0;
        _cleanup_free_ char *buf = nsr_malloc0(want);
        int64_t deadline = now_ms() + timeout_ms;
        bool timed_out = false;
        while (got < want) {
                int64_t left = deadline - now_ms();
                if (left <= 0) {
                        timed_out = true;
                        break;
                }
                struct pollfd pfd = { .fd = rfd, .events = POLLIN };
                int r = poll(&pfd, 1, (int) left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        timed_out = r == 0;
                        break;
                }
                ssize_t k = read(rfd, buf + got, want - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        /* Done or not, the child goes; its own children (pid 1 of a pid
         * namespace) die with it through PR_SET_PDEATHSIG. */
        (void) kill(pid, SIGKILL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (got == want) {
                memcpy(ret, buf, want);
                for (size_t i = 0; i < n; i++) {
                        ret[i].id = ids[i];
                        ret[i].detail[sizeof(ret[i].detail) - 1] = '\0';
                        ret[i].fix[sizeof(ret[i].fix) - 1] = '\0';
                }
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                if (timed_out)
                        check_fail(&ret[i], "the probe did not answer within %d ms and was killed", timeout_ms);
                else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
                        check_fail(&ret[i], "the probe died of signal %d (%s)", WTERMSIG(status),
                                   strsignal(WTERMSIG(status)));
                else
                        check_fail(&ret[i], "the probe ended without an answer");
                check_fix(&ret[i], "run nsrun doctor again; if this repeats, report it as a bug");
        }
        return 0;
}
