/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The doctor's probes. Each runs in a child process of its own (see
 * nsr_hostcheck_fork), so it may unshare, mount and load filters freely. */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/fanotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "base/syscalls.h"
#include "doctor/internal.h"
#include "egress/rules.h"
#include "sandbox/landlock.h"
#include "sandbox/libmount.h"
#include "sandbox/netns.h"
#include "seccomp/connect.h"

typedef struct probe_ctx {
        char cwd[PATH_MAX];       /* "" when unknown */
        char state_dir[PATH_MAX]; /* "" when unknown */
        uid_t uid;
        gid_t gid;
        pid_t parent; /* the caller's parent, for the ancestry walk */
} probe_ctx;

/* Reads a small file; trailing newlines are dropped. */
static int read_small(const char *path, char *buf, size_t len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        int k = nsr_read_full(fd, buf, len - 1);
        if (k < 0)
                return k;
        buf[k] = '\0';
        while (k > 0 && buf[k - 1] == '\n')
                buf[--k] = '\0';
        return k;
}

static long read_long(const char *path) {
        char buf[64];
        if (read_small(path, buf, sizeof(buf)) <= 0)
                return -1;
        char *end = NULL;
        long v = strtol(buf, &end, 10);
        return end != buf ? v : -1;
}

static int seccomp_mode(void) {
        char buf[4096];
        if (read_small("/proc/self/status", buf, sizeof(buf)) < 0)
                return -1;
        const char *s = strstr(buf, "\nSeccomp:");
        return s ? atoi(s + strlen("\nSeccomp:")) : -1;
}

static void userns_facts(nsr_userns_facts *f) {
        *f = (nsr_userns_facts){
                .max_user_namespaces = read_long("/proc/sys/user/max_user_namespaces"),
                .unprivileged_userns_clone = (int) read_long("/proc/sys/kernel/unprivileged_userns_clone"),
                .apparmor_restrict = (int) read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
                .seccomp_mode = seccomp_mode(),
                .have_userns_file = access("/proc/self/ns/user", F_OK) == 0,
        };
}

typedef struct userns_try {
        nsr_userns_step step; /* the step that failed, or NONE */
        int error;
        const char *scratch; /* where the tmpfs is, with want_tmpfs */
} userns_try;

/* A tmpfs to work in, inside the new mount namespace. */
static void mount_scratch(userns_try *t) {
        static const char *const scratch_dirs[] = { "/tmp", "/var/tmp", "/mnt", "/dev" };
        t->step = NSR_USERNS_STEP_MOUNT;
        t->error = ENOENT;
        for (size_t i = 0; i < ELEMENTSOF(scratch_dirs) && !t->scratch; i++) {
                if (mount("nsrun-doctor", scratch_dirs[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") == 0)
                        t->scratch = scratch_dirs[i];
                else if (errno != ENOENT && errno != ENOTDIR)
                        t->error = errno;
        }
        if (t->scratch) {
                t->step = NSR_USERNS_STEP_NONE;
                t->error = 0;
        }
}

/* The same steps nsrun's launch takes, one at a time, so a failure names
 * its step: a new user namespace, the id maps, a private mount namespace
 * and (want_tmpfs) a tmpfs to work in. */
static userns_try enter_userns(const probe_ctx *pc, bool want_tmpfs) {
        userns_try t = { .step = NSR_USERNS_STEP_CREATE };
        char map[64];
        int r;
        if (unshare(CLONE_NEWUSER) < 0) {
                t.error = errno;
                return t;
        }
        t.step = NSR_USERNS_STEP_SETGROUPS;
        r = nsr_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny");
        if (r < 0 && r != -ENOENT) {
                t.error = -r;
                return t;
        }
        t.step = NSR_USERNS_STEP_UID_MAP;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) pc->uid);
        r = nsr_write_file_at(AT_FDCWD, "/proc/self/uid_map", map);
        if (r < 0) {
                t.error = -r;
                return t;
        }
        t.step = NSR_USERNS_STEP_GID_MAP;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) pc->gid);
        r = nsr_write_file_at(AT_FDCWD, "/proc/self/gid_map", map);
        if (r < 0) {
                t.error = -r;
                return t;
        }
        t.step = NSR_USERNS_STEP_MOUNT_NS;
        if (unshare(CLONE_NEWNS) < 0) {
                t.error = errno;
                return t;
        }
        t.step = NSR_USERNS_STEP_MOUNT;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                t.error = errno;
                return t;
        }
        t.step = NSR_USERNS_STEP_NONE;
        t.error = 0;
        if (want_tmpfs)
                mount_scratch(&t);
        return t;
}

static void no_userns(nsr_check *c, const userns_try *t) {
        check_fail(c, "not tried: no user namespace (%s fails: %s)", nsr_userns_step_to_string(t->step),
                   errtxt(t->error).s);
        check_fix(c, "see the userns checks");
}

static char *scratch_path(const userns_try *t, const char *name) {
        return nsr_path_join(t->scratch, name);
}

/* The kernel's last message about a failed fs context operation. */
static void fs_context_message(int fsfd, char *msg, size_t len) {
        char buf[256];
        for (int i = 0; i < 16; i++) {
                ssize_t k = read(fsfd, buf, sizeof(buf) - 1);
                if (k <= 2)
                        break;
                buf[k] = '\0';
                while (k > 0 && buf[k - 1] == '\n')
                        buf[--k] = '\0';
                if (buf[0] == 'e' || !msg[0])
                        snprintf(msg, len, "%s", buf + 2);
        }
}

/* Mounts an overlay with userxattr through the fs context API, so that the
 * kernel's own message ("maximum fs stacking depth exceeded") can be
 * reported; mount(2) where fsopen is missing or filtered. upper and work
 * may be NULL (then lower needs two layers). */
static int mount_overlay(const char *target, const char *lower, const char *upper, const char *work, char *msg,
                         size_t msglen) {
        msg[0] = '\0';
        _cleanup_close_ int fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
        if (fsfd < 0) {
                if (errno != ENOSYS && errno != EPERM)
                        return -errno;
                _cleanup_free_ char *o =
                        upper ? nsr_asprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work)
                              : nsr_asprintf("lowerdir=%s,userxattr", lower);
                return mount("overlay", target, "overlay", 0, o) < 0 ? -errno : 0;
        }
        int r = fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir", lower, 0);
        if (r >= 0 && upper)
                r = fsconfig(fsfd, FSCONFIG_SET_STRING, "upperdir", upper, 0);
        if (r >= 0 && work)
                r = fsconfig(fsfd, FSCONFIG_SET_STRING, "workdir", work, 0);
        if (r >= 0)
                r = fsconfig(fsfd, FSCONFIG_SET_FLAG, "userxattr", NULL, 0);
        if (r >= 0)
                r = fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
        if (r < 0) {
                int e = errno;
                fs_context_message(fsfd, msg, msglen);
                return -e;
        }
        _cleanup_close_ int mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, 0);
        if (mfd < 0)
                return -errno;
        if (move_mount(mfd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
        return 0;
}

/* ---- the probes --------------------------------------------------- */

static void probe_userns(const void *arg, nsr_check *out, size_t n) {
        const probe_ctx *pc = arg;
        nsr_userns_facts f;
        userns_facts(&f);
        userns_try t = enter_userns(pc, true);
        (void) n;
        if (t.step == NSR_USERNS_STEP_NONE) {
                check_ok(&out[0], "unshare(CLONE_NEWUSER) works");
                check_ok(&out[1], "uid %u and gid %u map to 0 in the new namespace (setgroups denied)",
                         (unsigned) pc->uid, (unsigned) pc->gid);
                check_ok(&out[2], "a tmpfs mounts on %s in a new mount namespace", t.scratch);
                return;
        }
        f.step = t.step;
        f.error = t.error;
        nsr_check *failed = t.step == NSR_USERNS_STEP_CREATE    ? &out[0]
                            : t.step <= NSR_USERNS_STEP_GID_MAP ? &out[1]
                                                                : &out[2];
        nsr_hostcheck_userns_explain(&f, failed->detail, sizeof(failed->detail), failed->fix, sizeof(failed->fix));
        failed->ok = false;
        if (failed > &out[0])
                check_ok(&out[0], "unshare(CLONE_NEWUSER) works");
        if (failed > &out[1])
                check_ok(&out[1], "uid %u and gid %u map to 0 in the new namespace (setgroups denied)",
                         (unsigned) pc->uid, (unsigned) pc->gid);
        for (nsr_check *c = failed + 1; c <= &out[2]; c++) {
                check_fail(c, "not tried: %s fails", nsr_userns_step_to_string(t.step));
                check_fix(c, "see the check above");
        }
}

static void probe_pidns(const void *arg, nsr_check *out, size_t n) {
        userns_try t = enter_userns(arg, false);
        (void) n;
        if (t.step != NSR_USERNS_STEP_NONE) {
                no_userns(out, &t);
                return;
        }
        if (unshare(CLONE_NEWPID) < 0) {
                check_fail(out, "unshare(CLONE_NEWPID) fails: %s", errtxt(errno).s);
                return;
        }
        pid_t pid = fork();
        if (pid < 0) {
                check_fail(out, "fork into the new pid namespace fails: %s", errtxt(errno).s);
                return;
        }
        if (pid == 0) {
                /* pid 1 of the new namespace reports by exit status: 0,
                 * the errno of the proc mount, or 255. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                        _exit(errno > 0 && errno < 255 ? errno : 254);
                char self[16];
                ssize_t k = readlink("/proc/self", self, sizeof(self) - 1);
                _exit(getpid() == 1 && k == 1 && self[0] == '1' ? 0 : 255);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
        if (code == 0)
                check_ok(out, "a new pid namespace gets its own /proc (the probe was pid 1 there)");
        else if (code == 255)
                check_fail(out, "the new /proc does not show the new pid namespace");
        else {
                check_fail(out, "mounting a new /proc in a new pid namespace fails: %s", errtxt(code).s);
                if (code == EPERM)
                        check_fix(out, "the /proc visible here has parts covered by other mounts (as in a container "
                                       "with masked /proc paths), so the kernel refuses a new one: run with an "
                                       "unmasked /proc (docker: --security-opt systempaths=unconfined; podman: "
                                       "--security-opt unmask=ALL)");
        }
}

static void probe_netns(const void *arg, nsr_check *out, size_t n) {
        userns_try t = enter_userns(arg, false);
        nsr_error e = { 0 };
        char buf[NSR_ERROR_MSG_MAX + 64];
        (void) n;
        if (t.step != NSR_USERNS_STEP_NONE) {
                no_userns(out, &t);
                return;
        }
        if (unshare(CLONE_NEWNET) < 0) {
                check_fail(out, "unshare(CLONE_NEWNET) fails: %s", errtxt(errno).s);
                return;
        }
        if (nsr_netns_loopback_up(&e) < 0) {
                nsr_error_format(&e, buf, sizeof(buf));
                check_fail(out, "%s", buf);
                return;
        }
        _cleanup_close_ int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        _cleanup_close_ int cs = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof(sa);
        if (ls < 0 || cs < 0 || bind(ls, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(ls, 1) < 0 ||
            getsockname(ls, (struct sockaddr *) &sa, &sl) < 0 || connect(cs, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                check_fail(out, "loopback is up, but a TCP connection to 127.0.0.1 fails: %s", errtxt(errno).s);
                return;
        }
        check_ok(out, "a new network namespace has loopback up (TCP to 127.0.0.1 works)");
}

static void probe_overlay(const void *arg, nsr_check *out, size_t n) {
        userns_try t = enter_userns(arg, true);
        (void) n;
        if (t.step != NSR_USERNS_STEP_NONE) {
                no_userns(out, &t);
                return;
        }
        _cleanup_free_ char *l = scratch_path(&t, "l"), *u = scratch_path(&t, "u"), *w = scratch_path(&t, "w"),
                            *m = scratch_path(&t, "m"), *gone = scratch_path(&t, "l/gone");
        _cleanup_close_ int gfd = -1;
        if (mkdir(l, 0755) < 0 || mkdir(u, 0755) < 0 || mkdir(w, 0755) < 0 || mkdir(m, 0755) < 0 ||
            (gfd = open(gone, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0) {
                check_fail(out, "cannot prepare the layers on the tmpfs: %s", errtxt(errno).s);
                return;
        }
        char msg[256];
        int r = mount_overlay(m, l, u, w, msg, sizeof(msg));
        if (r < 0) {
                check_fail(out, "mounting an overlay with userxattr in the user namespace fails: %s%s%s", errtxt(-r).s,
                           msg[0] ? "; the kernel says: " : "", msg);
                check_fix(out, "overlay in a user namespace needs kernel 5.11 or later; without it project mode "
                               "needs --no-overlay");
                return;
        }
        _cleanup_free_ char *mnew = scratch_path(&t, "m/new"), *unew = scratch_path(&t, "u/new"),
                            *mgone = scratch_path(&t, "m/gone"), *ugone = scratch_path(&t, "u/gone");
        struct stat st;
        _cleanup_close_ int nfd = open(mnew, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (nfd < 0 || stat(unew, &st) < 0) {
                check_fail(out, "the overlay mounts, but a new file does not reach the upper dir: %s", errtxt(errno).s);
                return;
        }
        if (unlink(mgone) < 0 || lstat(ugone, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != 0) {
                check_fail(out, "the overlay mounts, but deleting a lower file leaves no whiteout in the upper dir");
                return;
        }
        check_ok(out, "an overlay with userxattr mounts on a tmpfs in the user namespace; copy-up and whiteouts work");
}

/* How many overlays can still be stacked on the directory open at fd: 0,
 * 1 or 2, found by stacking read-only overlays on it; -errno when a mount
 * fails for a reason other than the depth. */
static int stack_levels(const userns_try *t, int fd, int idx, char *msg, size_t msglen) {
        char name[16];
        snprintf(name, sizeof(name), "e%d", idx);
        _cleanup_free_ char *empty = scratch_path(t, name);
        snprintf(name, sizeof(name), "a%d", idx);
        _cleanup_free_ char *m1 = scratch_path(t, name);
        snprintf(name, sizeof(name), "b%d", idx);
        _cleanup_free_ char *m2 = scratch_path(t, name);
        if (mkdir(empty, 0755) < 0 || mkdir(m1, 0755) < 0 || mkdir(m2, 0755) < 0)
                return -errno;
        _cleanup_free_ char *lower1 = nsr_asprintf("/proc/self/fd/%d:%s", fd, empty);
        _cleanup_free_ char *lower2 = nsr_asprintf("%s:%s", m1, empty);
        for (int level = 0; level < OVERLAY_MAX_DEPTH; level++) {
                int r = mount_overlay(level == 0 ? m1 : m2, level == 0 ? lower1 : lower2, NULL, NULL, msg, msglen);
                /* The depth limit is EINVAL, with this message where the
                 * kernel can give one. */
                if (r == -EINVAL && (!msg[0] || strstr(msg, "stacking depth")))
                        return level;
                if (r < 0)
                        return r;
        }
        return OVERLAY_MAX_DEPTH;
}

/* "cwd /x: on an overlay, 1 more level"; path NULL when the label is the
 * path ("/tmp"). */
static void describe_levels(char *buf, size_t len, const char *label, const char *path, int levels, bool estimated) {
        const char *est = estimated ? " (estimated from mountinfo)" : "";
        const char *sep = path ? " " : "";
        path = path ? path : "";
        if (levels >= OVERLAY_MAX_DEPTH)
                snprintf(buf, len, "%s%s%.300s: not on an overlay, %d more levels%s", label, sep, path, levels, est);
        else if (levels == 1)
                snprintf(buf, len, "%s%s%.300s: on an overlay, 1 more level%s", label, sep, path, est);
        else
                snprintf(buf, len, "%s%s%.300s: on stacked overlays, no more levels%s", label, sep, path, est);
}

static void probe_overlay_depth(const void *arg, nsr_check *out, size_t n) {
        const probe_ctx *pc = arg;
        enum { CWD, STATE, TMP, N_PATHS };
        static const char *const labels[N_PATHS] = { "cwd", "state dir", "/tmp" };
        char paths[N_PATHS][PATH_MAX] = { "", "", "/tmp" };
        int est[N_PATHS], levels[N_PATHS], fds[N_PATHS];
        bool estimated[N_PATHS];
        (void) n;

        snprintf(paths[CWD], sizeof(paths[CWD]), "%s", pc->cwd);
        /* The state dir may not exist yet: it will be made in its
         * nearest existing ancestor, on that file system. */
        _cleanup_free_ char *state = pc->state_dir[0] ? nsr_strdup(pc->state_dir) : NULL;
        while (state && access(state, F_OK) < 0 && strrchr(state, '/') && !streq(state, "/")) {
                char *slash = strrchr(state, '/');
                if (slash == state)
                        slash[1] = '\0';
                else
                        *slash = '\0';
        }
        if (state)
                snprintf(paths[STATE], sizeof(paths[STATE]), "%s", state);

        struct libmnt_table *tb = mnt_new_table_from_file("/proc/self/mountinfo");
        for (int i = 0; i < N_PATHS; i++) {
                char canon[PATH_MAX];
                struct stat st;
                est[i] = -ENOENT;
                fds[i] = -1;
                levels[i] = -1;
                estimated[i] = true;
                if (!paths[i][0] || !realpath(paths[i], canon))
                        continue;
                snprintf(paths[i], sizeof(paths[i]), "%s", canon);
                if (tb)
                        est[i] = nsr_hostcheck_overlay_depth(tb, canon, stat(canon, &st) == 0 ? st.st_dev : 0);
        }
        mnt_unref_table(tb);

        /* mountinfo cannot always tell (layers named by relative paths,
         * or paths from before a pivot_root): stack overlays to find out.
         * The layers must be opened inside the new mount namespace
         * (overlay refuses a layer on another namespace's mount), and
         * before the scratch tmpfs may cover /tmp. */
        userns_try t = enter_userns(pc, false);
        for (int i = 0; i < N_PATHS && t.step == NSR_USERNS_STEP_NONE; i++)
                if (paths[i][0])
                        fds[i] = open(paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (t.step == NSR_USERNS_STEP_NONE)
                mount_scratch(&t);
        char msg[256];
        for (int i = 0; i < N_PATHS; i++) {
                if (i != STATE && fds[i] >= 0 && t.step == NSR_USERNS_STEP_NONE) {
                        int r = stack_levels(&t, fds[i], i, msg, sizeof(msg));
                        if (r >= 0) {
                                levels[i] = r;
                                estimated[i] = false;
                        }
                }
                if (levels[i] < 0 && est[i] >= 0)
                        levels[i] = est[i] >= OVERLAY_MAX_DEPTH ? 0 : OVERLAY_MAX_DEPTH - est[i];
                safe_close(fds[i]);
        }

        char parts[N_PATHS][NSR_CHECK_TEXT_MAX];
        bool state_on_overlay = est[STATE] >= 1;
        for (int i = 0; i < N_PATHS; i++) {
                if (!paths[i][0] || (est[i] == -ENOENT && levels[i] < 0))
                        snprintf(parts[i], sizeof(parts[i]), "%s: unknown%s", labels[i],
                                 paths[i][0] ? "" : " (no HOME or XDG_STATE_HOME)");
                else if (i == STATE)
                        snprintf(parts[i], sizeof(parts[i]), "state dir %.150s%s%.150s%s: %s", pc->state_dir,
                                 streq(pc->state_dir, paths[i]) ? "" : " (not made yet: checked ",
                                 streq(pc->state_dir, paths[i]) ? "" : paths[i],
                                 streq(pc->state_dir, paths[i]) ? "" : ")",
                                 state_on_overlay ? "on an overlay, which cannot hold overlay upper dirs"
                                                  : "not on an overlay");
                else
                        describe_levels(parts[i], sizeof(parts[i]), labels[i], i == TMP ? NULL : paths[i], levels[i],
                                        estimated[i]);
        }

        bool cwd_ok = levels[CWD] != 0;
        char fix[NSR_CHECK_TEXT_MAX] = "";
        if (!cwd_ok)
                append(fix, sizeof(fix),
                       "an overlay cannot go on the cwd: run project mode on a directory outside the stacked overlays, "
                       "or with --no-overlay");
        if (state_on_overlay)
                append(fix, sizeof(fix),
                       "put the state dir on a file system that is not an overlay (--state-dir DIR or XDG_STATE_HOME)");
        if (cwd_ok && !state_on_overlay)
                check_ok(out, "%s; %s; %s (the kernel stacks at most %d)", parts[CWD], parts[STATE], parts[TMP],
                         OVERLAY_MAX_DEPTH);
        else {
                check_fail(out, "%s; %s; %s (the kernel stacks at most %d)", parts[CWD], parts[STATE], parts[TMP],
                           OVERLAY_MAX_DEPTH);
                check_fix(out, "%s", fix);
        }
}

static void probe_tmpfs_xattr(const void *arg, nsr_check *out, size_t n) {
        userns_try t = enter_userns(arg, true);
        (void) n;
        if (t.step != NSR_USERNS_STEP_NONE) {
                no_userns(out, &t);
                return;
        }
        _cleanup_free_ char *f = scratch_path(&t, "x");
        _cleanup_close_ int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 || fsetxattr(fd, "user.nsrun.doctor", "1", 1, 0) < 0) {
                int e = errno;
                check_fail(out, "setting a user.* xattr on a tmpfs in the user namespace fails: %s", errtxt(e).s);
                check_fix(out, "kernel 6.6 or later: an overlay with userxattr on a tmpfs upper dir (--tmp-overlay, "
                               "project mode's $HOME layer) needs user.* xattrs there");
                return;
        }
        check_ok(out, "user.* xattrs work on a tmpfs mounted in the user namespace");
}

static void probe_fanotify(const void *arg, nsr_check *out, size_t n) {
        userns_try t = enter_userns(arg, true);
        struct utsname un;
        (void) n;
        if (uname(&un) < 0)
                snprintf(un.release, sizeof(un.release), "unknown");
        if (t.step != NSR_USERNS_STEP_NONE) {
                no_userns(out, &t);
                return;
        }
        _cleanup_close_ int fd =
                fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                check_fail(out, "fanotify_init(FAN_REPORT_FID) in the user namespace fails: %s", errtxt(errno).s);
                check_fix(out, "kernel 6.16 or later; without it nsrun watches with inotify and scans the upper dirs");
                return;
        }
        if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CREATE | FAN_ONDIR, AT_FDCWD, t.scratch) < 0) {
                check_fail(out,
                           "a filesystem mark on a tmpfs mounted in the user namespace fails: %s (this needs kernel "
                           "6.16 or later; this one is %s)",
                           errtxt(errno).s, un.release);
                check_fix(out, "kernel 6.16 or later; without it nsrun watches with inotify and scans the upper dirs");
                return;
        }
        _cleanup_free_ char *f = scratch_path(&t, "created");
        _cleanup_close_ int ffd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char buf[4096];
        if (ffd < 0 || poll(&p, 1, 500) <= 0 || read(fd, buf, sizeof(buf)) <= 0) {
                check_fail(out, "a filesystem mark is accepted, but creating a file gives no event");
                return;
        }
        check_ok(out, "FAN_REPORT_FID and a filesystem mark on a tmpfs in the user namespace work (kernel %s)",
                 un.release);
}

static void probe_seccomp(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) n;
        int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (mode < 0) {
                check_fail(out, "prctl(PR_GET_SECCOMP) fails: %s", errtxt(errno).s);
                check_fix(out, "a kernel built with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER");
                return;
        }
        struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        struct sock_fprog prog = { .len = ELEMENTSOF(allow), .filter = allow };
        (void) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
                check_fail(out, "loading a seccomp filter fails: %s", errtxt(errno).s);
                check_fix(out, "a kernel built with CONFIG_SECCOMP_FILTER");
                return;
        }
        if (mode == 2)
                check_ok(out, "a filter loads; this process was already filtered (Seccomp: 2, e.g. a container's "
                              "profile), and filters stack");
        else
                check_ok(out, "a filter loads (none was loaded before)");
}

static void probe_landlock(const void *arg, nsr_check *out, size_t n) {
        static const char *const added[] = {
                NULL, "filesystem", "refer", "truncate", "TCP bind and connect", "device ioctl", "scoping", "audit",
        };
        nsr_error e = { 0 };
        char buf[NSR_ERROR_MSG_MAX + 64];
        (void) arg;
        (void) n;
        int abi = nsr_landlock_abi_probe();
        if (abi < 0) {
                if (abi == -EOPNOTSUPP) {
                        check_fail(&out[0], "Landlock is built into the kernel but not enabled at boot: %s",
                                   errtxt(-abi).s);
                        check_fix(&out[0], "add landlock to the lsm= boot parameter");
                } else {
                        check_fail(&out[0],
                                   "landlock_create_ruleset fails: %s: the kernel lacks Landlock (5.13 or later, "
                                   "CONFIG_SECURITY_LANDLOCK) or a seccomp filter hides it",
                                   errtxt(-abi).s);
                        check_fix(&out[0], "a kernel with Landlock; in a container, allow the landlock_* system calls");
                }
                check_fail(&out[1], "no Landlock");
                check_fix(&out[1], "see the landlock check");
                return;
        }
        char list[256] = "";
        for (int i = 1; i < (int) ELEMENTSOF(added) && i <= abi; i++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i > 1 ? ", " : "", added[i]);
        check_ok(&out[0], "ABI %d (%s)", abi, list);
        if (abi < 6) {
                check_fail(&out[1], "ABI %d cannot scope abstract unix sockets and signals (that needs ABI 6)", abi);
                check_fix(&out[1], "kernel 6.12 or later");
                return;
        }
        (void) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (nsr_landlock_scope(&e) < 0) {
                nsr_error_format(&e, buf, sizeof(buf));
                check_fail(&out[1], "%s", buf);
                return;
        }
        check_ok(&out[1], "ABI %d scopes abstract unix sockets and signals to the sandbox", abi);
}

static void probe_pidfd(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) n;
        int fd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (fd < 0) {
                check_fail(out, "pidfd_open fails: %s", errtxt(errno).s);
                check_fix(out, "kernel 5.3 or later; in a container, allow pidfd_open");
                return;
        }
        close(fd);
        check_ok(out, "pidfd_open works");
}

static void probe_clone3(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) n;
        /* A NULL argument of size 0 is refused with EINVAL before
         * anything happens: that tells the call exists. */
        (void) syscall(SYS_clone3, NULL, 0);
        int e = errno;
        if (e == EINVAL || e == EFAULT || e == E2BIG)
                check_ok(out, "clone3 exists (a bad argument gives %s)", errtxt(e).s);
        else if (e == ENOSYS) {
                check_fail(out,
                           "clone3 gives %s: the kernel is older than 5.3, or a seccomp filter answers ENOSYS "
                           "for it (as Docker's default profile does)",
                           errtxt(e).s);
                check_fix(out, "nothing needed: nsrun uses clone; CLONE_INTO_CGROUP needs clone3");
        } else {
                check_fail(out, "clone3 gives %s (a seccomp filter?)", errtxt(e).s);
                check_fix(out, "nothing needed: nsrun uses clone; CLONE_INTO_CGROUP needs clone3");
        }
}

static void probe_cgroup(const void *arg, nsr_check *out, size_t n) {
        const probe_ctx *pc = arg;
        (void) n;
        const char *why = NULL;
        if (!nsr_mountlib_available(&why)) {
                check_fail(out, "cannot read the mount table: %s", why);
                check_fix(out, "%s", nsr_mountlib_fix());
                return;
        }
        struct libmnt_table *tb = mnt_new_table_from_file("/proc/self/mountinfo");
        struct libmnt_fs *fs = NULL;
        struct libmnt_iter *it = mnt_new_iter(MNT_ITER_BACKWARD);
        struct libmnt_fs *f = NULL;
        while (tb && it && !fs && mnt_table_next_fs(tb, it, &f) == 0)
                if (streq(mnt_fs_get_fstype(f), "cgroup2"))
                        fs = f;
        mnt_free_iter(it);
        char target[PATH_MAX] = "", root[PATH_MAX] = "/";
        if (fs) {
                snprintf(target, sizeof(target), "%s", mnt_fs_get_target(fs));
                if (mnt_fs_get_root(fs))
                        snprintf(root, sizeof(root), "%s", mnt_fs_get_root(fs));
        }
        mnt_unref_table(tb);
        if (!target[0]) {
                check_fail(out, "no cgroup v2 hierarchy is mounted");
                check_fix(out, "mount cgroup2 (systemd does on current distributions)");
                return;
        }
        char self[4096], *cg = NULL;
        if (read_small("/proc/self/cgroup", self, sizeof(self)) > 0) {
                for (char *line = strtok(self, "\n"); line && !cg; line = strtok(NULL, "\n"))
                        if (nsr_startswith(line, "0::"))
                                cg = line + 3;
        }
        if (!cg) {
                check_fail(out, "this process is in no cgroup v2 group (/proc/self/cgroup has no \"0::\" line)");
                return;
        }
        /* Inside a cgroup namespace the mount's root is where we are. */
        const char *rel = cg;
        if (!streq(root, "/") && nsr_startswith(cg, root))
                rel = cg + strlen(root);
        _cleanup_free_ char *dir = nsr_path_join(target, rel);
        _cleanup_free_ char *procs = nsr_path_join(dir, "cgroup.procs");
        _cleanup_free_ char *ctl = nsr_path_join(dir, "cgroup.controllers");
        char controllers[256] = "";
        (void) read_small(ctl, controllers, sizeof(controllers));
        bool writable =
                faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0 && faccessat(AT_FDCWD, procs, W_OK, AT_EACCESS) == 0;
        bool useful = false;
        char tmp[256];
        snprintf(tmp, sizeof(tmp), " %s ", controllers);
        for (const char *c = "cpu\0memory\0pids\0"; *c; c += strlen(c) + 1) {
                char word[16];
                snprintf(word, sizeof(word), " %s ", c);
                if (strstr(tmp, word))
                        useful = true;
        }
        if (!writable) {
                check_fail(out, "the cgroup %s (%s) is not writable by uid %u: it is not delegated", cg, dir,
                           (unsigned) pc->uid);
                check_fix(out, "optional, for --memory, --cpu and a pids.max under --pids: start nsrun in a "
                               "delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes nsrun ...");
        } else if (!useful) {
                check_fail(out,
                           "the cgroup %s (%s) is writable, but none of the cpu, memory and pids controllers is "
                           "available there (cgroup.controllers: \"%s\")",
                           cg, dir, controllers);
                check_fix(out, "optional, for --memory, --cpu and a pids.max under --pids: enable the controllers in "
                               "the parent's cgroup.subtree_control (or boot with the unified cgroup v2 hierarchy, if "
                               "they are bound to cgroup v1)");
        } else
                check_ok(out, "the cgroup %s (%s) is writable; controllers: %s", cg, dir, controllers);
}

static void probe_sandbox(const void *arg, nsr_check *out, size_t n) {
        const probe_ctx *pc = arg;
        nsr_sandbox_facts f = { .env_nsrun = streq(getenv("NSRUN"), "1") };
        (void) n;
        /* Heuristics: bwrap (and nsrun) stay the parent of what they
         * run, or pid 1 of its pid namespace; both keep their name. */
        pid_t pid = pc->parent;
        for (int depth = 0; depth < 64 && pid > 0; depth++) {
                char path[64], comm[64], stat[1024];
                snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
                if (read_small(path, comm, sizeof(comm)) > 0) {
                        f.ancestor_bwrap |= streq(comm, "bwrap");
                        f.ancestor_nsrun |= streq(comm, "nsrun");
                }
                if (pid == 1)
                        break;
                snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
                const char *paren = read_small(path, stat, sizeof(stat)) > 0 ? strrchr(stat, ')') : NULL;
                int ppid = 0;
                if (!paren || sscanf(paren, ") %*c %d", &ppid) != 1)
                        break;
                pid = ppid;
        }
        char comm1[64];
        if (read_small("/proc/1/comm", comm1, sizeof(comm1)) > 0) {
                f.ancestor_bwrap |= streq(comm1, "bwrap");
                f.ancestor_nsrun |= streq(comm1, "nsrun");
        }
        f.flatpak_info = access("/.flatpak-info", F_OK) == 0;
        f.dockerenv = access("/.dockerenv", F_OK) == 0;
        f.containerenv = access("/run/.containerenv", F_OK) == 0;
        (void) read_small("/run/systemd/container", f.container, sizeof(f.container));
        char map[256];
        if (read_small("/proc/self/uid_map", map, sizeof(map)) > 0) {
                /* "         0          0 4294967295" → "0 0 4294967295" */
                size_t o = 0;
                for (const char *s = map; *s && *s != '\n' && o + 1 < sizeof(f.uid_map); s++) {
                        if (*s == ' ' || *s == '\t') {
                                if (o > 0 && f.uid_map[o - 1] != ' ')
                                        f.uid_map[o++] = ' ';
                        } else
                                f.uid_map[o++] = *s;
                }
                while (o > 0 && f.uid_map[o - 1] == ' ')
                        o--;
                f.uid_map[o] = '\0';
        }
        nsr_hostcheck_sandbox_describe(&f, out->detail, sizeof(out->detail));
        out->ok = true;
}

/* Best-effort mode has no pid namespace: whether other users' processes
 * (and their command lines) show in /proc is the host's choice, the
 * hidepid option of its /proc mount. */
static void probe_proc_hidepid(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) n;
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f) {
                check_fail(out, "cannot read /proc/self/mountinfo: %s", errtxt(errno).s);
                return;
        }
        char line[4096], opts[512] = "";
        bool found = false;
        while (fgets(line, sizeof(line), f)) {
                /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS" */
                char mp[PATH_MAX];
                const char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || !streq(mp, "/proc"))
                        continue;
                char fstype[64], super[512];
                if (sscanf(sep + 3, "%63s %*s %511s", fstype, super) == 2 && streq(fstype, "proc")) {
                        snprintf(opts, sizeof(opts), "%s", super);
                        found = true; /* the last one is on top */
                }
        }
        if (!found)
                check_fail(out, "no proc file system is mounted on /proc");
        else if (nsr_hostcheck_hidepid(opts))
                check_ok(out,
                         "/proc is mounted with hidepid (%s): a best-effort run cannot see other users' "
                         "processes",
                         opts);
        else {
                check_fail(out,
                           "/proc has no hidepid (%s): a best-effort run (no pid namespace) can read other "
                           "users' command lines in /proc/*/cmdline",
                           opts);
                check_fix(out, "the host's choice: mount /proc with hidepid=invisible (and gid= for the admins); "
                               "the namespace sandbox needs no such thing");
        }
}

static const struct probe {
        nsr_probe_fn fn;
        nsr_check_id ids[3];
        size_t n;
} probes[] = {
        { probe_userns, { NSR_CHECK_USERNS, NSR_CHECK_UID_MAP, NSR_CHECK_USERNS_MOUNT }, 3 },
        { probe_pidns, { NSR_CHECK_PIDNS }, 1 },
        { probe_netns, { NSR_CHECK_NETNS }, 1 },
        { probe_overlay, { NSR_CHECK_OVERLAY }, 1 },
        { probe_overlay_depth, { NSR_CHECK_OVERLAY_DEPTH }, 1 },
        { probe_seccomp, { NSR_CHECK_SECCOMP }, 1 },
        { probe_landlock, { NSR_CHECK_LANDLOCK, NSR_CHECK_LANDLOCK_SCOPE }, 2 },
        { probe_tmpfs_xattr, { NSR_CHECK_TMPFS_XATTR }, 1 },
        { probe_fanotify, { NSR_CHECK_FANOTIFY }, 1 },
        { probe_pidfd, { NSR_CHECK_PIDFD }, 1 },
        { probe_clone3, { NSR_CHECK_CLONE3 }, 1 },
        { probe_cgroup, { NSR_CHECK_CGROUP }, 1 },
        { probe_sandbox, { NSR_CHECK_SANDBOX }, 1 },
        { probe_proc_hidepid, { NSR_CHECK_PROC_HIDEPID }, 1 },
};

/* With the namespace sandbox: is connect() decided by nsrun (transparent
 * egress), or does only the proxy serve? */
static void egress_direct(nsr_check *c) {
        static const char ns[] = "--allow-host works: ";
        if (strncmp(c->detail, ns, strlen(ns)) != 0)
                return;
        size_t n = strlen(c->detail);
        if (nsr_connect_inject_available())
                snprintf(c->detail + n, sizeof(c->detail) - n,
                         "; connect() is decided by nsrun too, so clients need no proxy settings");
        else
                snprintf(c->detail + n, sizeof(c->detail) - n, "; %s", NSR_EGRESS_DIRECT_UNAVAILABLE);
}

int nsr_hostcheck_run(const nsr_hostcheck_opts *o, nsr_check ret[_NSR_CHECK_ID_MAX], nsr_error *err) {
        probe_ctx pc = { .uid = getuid(), .gid = getgid(), .parent = getppid() };
        if (o->cwd)
                snprintf(pc.cwd, sizeof(pc.cwd), "%s", o->cwd);
        else if (!getcwd(pc.cwd, sizeof(pc.cwd)))
                pc.cwd[0] = '\0';
        if (o->state_dir)
                snprintf(pc.state_dir, sizeof(pc.state_dir), "%s", o->state_dir);
        int timeout = o->timeout_ms > 0 ? o->timeout_ms : NSR_HOSTCHECK_TIMEOUT_MS;

        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++) {
                ret[i] = (nsr_check){ .id = (nsr_check_id) i };
                check_fail(&ret[i], "no probe ran");
        }
        int first = 0;
        bool any = false;
        for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
                const struct probe *p = &probes[i];
                nsr_check got[ELEMENTSOF(p->ids)];
                int r = nsr_hostcheck_fork(p->fn, &pc, p->ids, p->n, timeout, got);
                if (r < 0) {
                        first = first ? first : r;
                        for (size_t j = 0; j < p->n; j++) {
                                check_fail(&ret[p->ids[j]], "the probe could not start: %s", errtxt(-r).s);
                                check_fix(&ret[p->ids[j]], "run nsrun doctor again");
                        }
                        continue;
                }
                any = true;
                for (size_t j = 0; j < p->n; j++)
                        ret[p->ids[j]] = got[j];
        }
        if (!any)
                return nsr_error_set(err, -first, "cannot start the doctor's probes");
        nsr_hostcheck_egress_describe(ret, nsr_landlock_abi(), &ret[NSR_CHECK_EGRESS]);
        egress_direct(&ret[NSR_CHECK_EGRESS]);
        return 0;
}

bool nsr_hostcheck_userns_works(char *reason, size_t len) {
        probe_ctx pc = { .uid = getuid(), .gid = getgid(), .parent = getppid() };
        static const nsr_check_id ids[3] = { NSR_CHECK_USERNS, NSR_CHECK_UID_MAP, NSR_CHECK_USERNS_MOUNT };
        nsr_check got[3];
        int r = nsr_hostcheck_fork(probe_userns, &pc, ids, 3, NSR_HOSTCHECK_TIMEOUT_MS, got);
        if (r < 0) {
                snprintf(reason, len, "the probe could not start: %s", errtxt(-r).s);
                return false;
        }
        for (size_t i = 0; i < 3; i++)
                if (!got[i].ok) {
                        snprintf(reason, len, "%s", got[i].detail);
                        return false;
                }
        return true;
}
