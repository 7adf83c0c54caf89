/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* doctor/checks.c: the verdict, the explanations of user namespace failures,
 * the launch-error hint, overlay depth from mount tables, the sandbox
 * description, and the probe runner's timeout. */
#include "config.h"

#include <libmount/libmount.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "base/util.h"
#include "doctor/checks.h"
#include "unit.h"

/* ---- the verdict ---------------------------------------------------- */

static void all_ok(nsr_check c[_NSR_CHECK_ID_MAX]) {
        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++)
                c[i] = (nsr_check){ .id = (nsr_check_id) i, .ok = true };
}

START_TEST(test_verdict_full) {
        nsr_check c[_NSR_CHECK_ID_MAX];
        all_ok(c);
        ck_assert_int_eq(nsr_hostcheck_verdict(c), NSR_VERDICT_FULL);
        /* Optional extras and facts never change it; nor does Landlock
         * while the namespaces work. */
        c[NSR_CHECK_CGROUP].ok = false;
        c[NSR_CHECK_FANOTIFY].ok = false;
        c[NSR_CHECK_CLONE3].ok = false;
        c[NSR_CHECK_LANDLOCK_SCOPE].ok = false;
        c[NSR_CHECK_TMPFS_XATTR].ok = false;
        c[NSR_CHECK_PIDFD].ok = false;
        c[NSR_CHECK_SANDBOX].ok = false;
        c[NSR_CHECK_LANDLOCK].ok = false;
        ck_assert_int_eq(nsr_hostcheck_verdict(c), NSR_VERDICT_FULL);
}
END_TEST

START_TEST(test_verdict_degraded_layers) {
        static const nsr_check_id layers[] = { NSR_CHECK_PIDNS, NSR_CHECK_NETNS, NSR_CHECK_OVERLAY, NSR_CHECK_SECCOMP,
                                               NSR_CHECK_OVERLAY_DEPTH };
        for (size_t i = 0; i < ELEMENTSOF(layers); i++) {
                nsr_check c[_NSR_CHECK_ID_MAX];
                all_ok(c);
                c[layers[i]].ok = false;
                ck_assert_msg(nsr_hostcheck_verdict(c) == NSR_VERDICT_DEGRADED, "%s failing is degraded",
                              nsr_check_name(layers[i]));
                /* Without Landlock too: the namespaces still confine. */
                c[NSR_CHECK_LANDLOCK].ok = false;
                ck_assert_int_eq(nsr_hostcheck_verdict(c), NSR_VERDICT_DEGRADED);
        }
}
END_TEST

START_TEST(test_verdict_no_userns) {
        static const nsr_check_id core[] = { NSR_CHECK_USERNS, NSR_CHECK_UID_MAP, NSR_CHECK_USERNS_MOUNT };
        for (size_t i = 0; i < ELEMENTSOF(core); i++) {
                nsr_check c[_NSR_CHECK_ID_MAX];
                all_ok(c);
                c[core[i]].ok = false;
                ck_assert_int_eq(nsr_hostcheck_verdict(c), NSR_VERDICT_DEGRADED);
                c[NSR_CHECK_LANDLOCK].ok = false;
                ck_assert_msg(nsr_hostcheck_verdict(c) == NSR_VERDICT_UNAVAILABLE,
                              "no %s and no Landlock is unavailable", nsr_check_name(core[i]));
        }
}
END_TEST

START_TEST(test_egress) {
        nsr_check c[_NSR_CHECK_ID_MAX], e;
        all_ok(c);
        nsr_hostcheck_egress_describe(c, 0, &e);
        ck_assert(e.ok);
        ck_assert_int_eq(e.id, NSR_CHECK_EGRESS);
        ck_assert_ptr_nonnull(strstr(e.detail, "--allow-host works: "));
        static const nsr_check_id need[] = { NSR_CHECK_USERNS, NSR_CHECK_UID_MAP, NSR_CHECK_USERNS_MOUNT,
                                             NSR_CHECK_NETNS };
        for (size_t i = 0; i < ELEMENTSOF(need); i++) {
                all_ok(c);
                c[need[i]].ok = false;
                nsr_hostcheck_egress_describe(c, 3, &e);
                ck_assert(e.ok);
                ck_assert_ptr_nonnull(strstr(e.detail, "--allow-host is refused here"));
                nsr_hostcheck_egress_describe(c, 4, &e);
                ck_assert_ptr_nonnull(strstr(e.detail, "--allow-host works in best-effort mode"));
                c[NSR_CHECK_LANDLOCK].ok = false;
                nsr_hostcheck_egress_describe(c, 4, &e);
                ck_assert_ptr_nonnull(strstr(e.detail, "--allow-host is refused here"));
        }
        ck_assert_int_eq(nsr_check_class_of(NSR_CHECK_EGRESS), NSR_CHECK_INFO);
}
END_TEST

START_TEST(test_names) {
        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++) {
                const char *n = nsr_check_name((nsr_check_id) i);
                ck_assert_msg(n && *n, "check %d has a name", i);
                for (int j = 0; j < i; j++)
                        ck_assert_msg(!streq(n, nsr_check_name((nsr_check_id) j)), "%s is unique", n);
                ck_assert_int_ge(nsr_check_class_of((nsr_check_id) i), 0);
        }
        ck_assert_ptr_null(nsr_check_name(_NSR_CHECK_ID_MAX));
        ck_assert_ptr_null(nsr_check_name(_NSR_CHECK_ID_INVALID));
        ck_assert_int_eq(nsr_check_class_of(_NSR_CHECK_ID_MAX), _NSR_CHECK_CLASS_INVALID);
        ck_assert_str_eq(nsr_verdict_to_string(NSR_VERDICT_FULL), "full");
        ck_assert_str_eq(nsr_verdict_to_string(NSR_VERDICT_DEGRADED), "degraded");
        ck_assert_str_eq(nsr_verdict_to_string(NSR_VERDICT_UNAVAILABLE), "unavailable");
        ck_assert_ptr_null(nsr_verdict_to_string(_NSR_VERDICT_MAX));
        /* The JSON and the tests use these names. */
        ck_assert_str_eq(nsr_check_name(NSR_CHECK_USERNS), "userns");
        ck_assert_str_eq(nsr_check_name(NSR_CHECK_OVERLAY_DEPTH), "overlay-depth");
        ck_assert_int_eq(nsr_check_class_of(NSR_CHECK_LANDLOCK), NSR_CHECK_FALLBACK);
        ck_assert_int_eq(nsr_check_class_of(NSR_CHECK_CGROUP), NSR_CHECK_OPTIONAL);
        ck_assert_int_eq(nsr_check_class_of(NSR_CHECK_SANDBOX), NSR_CHECK_INFO);
}
END_TEST

/* ---- explanations --------------------------------------------------- */

START_TEST(test_explain) {
        /* Host defaults: every sysctl allows, no filter, userns built in. */
        const nsr_userns_facts base = { .max_user_namespaces = 15000,
                                        .unprivileged_userns_clone = -1,
                                        .apparmor_restrict = -1,
                                        .seccomp_mode = 0,
                                        .have_userns_file = true };
        static const struct {
                nsr_userns_step step;
                int error;
                long max_userns;
                int clone_sysctl, apparmor, seccomp;
                bool no_userns_file;
                const char *reason; /* substrings */
                const char *reason2;
                const char *fix;
        } cases[] = {
                { NSR_USERNS_STEP_CREATE, ENOSPC, 0, -1, -1, 0, false, "user.max_user_namespaces is 0", "ENOSPC",
                  "sysctl -w user.max_user_namespaces=" },
                { NSR_USERNS_STEP_CREATE, ENOSPC, 15000, -1, -1, 0, false, "limit (15000) is used up", "nested 32 deep",
                  "raise user.max_user_namespaces" },
                { NSR_USERNS_STEP_CREATE, EPERM, 15000, 0, -1, 2, false, "kernel.unprivileged_userns_clone is 0",
                  "EPERM", "sysctl -w kernel.unprivileged_userns_clone=1" },
                { NSR_USERNS_STEP_CREATE, EPERM, 15000, 1, -1, 2, false, "a seccomp filter denies", "Seccomp: 2",
                  "seccomp profile" },
                { NSR_USERNS_STEP_CREATE, EPERM, 15000, -1, 1, 0, false, "AppArmor denies", "EPERM",
                  "apparmor_parser -r" },
                { NSR_USERNS_STEP_CREATE, EPERM, 15000, -1, 0, 0, false, "no known sysctl forbids it", "EPERM",
                  "best-effort" },
                { NSR_USERNS_STEP_CREATE, EINVAL, 15000, -1, -1, 0, true, "CONFIG_USER_NS is off", "EINVAL",
                  "CONFIG_USER_NS=y" },
                { NSR_USERNS_STEP_CREATE, EINVAL, 15000, -1, -1, 2, false, "although the kernel has user namespaces",
                  "seccomp", "CLONE_NEWUSER" },
                { NSR_USERNS_STEP_CREATE, EUSERS, 15000, -1, -1, 0, false, "nested too deeply", "EUSERS",
                  "less deeply nested" },
                { NSR_USERNS_STEP_UID_MAP, EPERM, 15000, -1, 1, 0, false, "AppArmor restricts",
                  "writing /proc/self/uid_map fails", "apparmor_parser -r" },
                { NSR_USERNS_STEP_MOUNT, EPERM, 15000, -1, 1, 2, false, "AppArmor restricts", "mounting a tmpfs fails",
                  "make install-apparmor" },
                { NSR_USERNS_STEP_SETGROUPS, EACCES, 15000, -1, 1, 0, false,
                  "kernel.apparmor_restrict_unprivileged_userns is 1", "setgroups", "AppArmor profile" },
                { NSR_USERNS_STEP_MOUNT_NS, EPERM, 15000, -1, -1, 2, false, "unshare(CLONE_NEWNS) fails",
                  "a seccomp filter is loaded", "seccomp profile" },
                { NSR_USERNS_STEP_GID_MAP, EPERM, 15000, -1, 0, 0, false, "writing /proc/self/gid_map fails",
                  "a security module", "administrator" },
                { NSR_USERNS_STEP_UID_MAP, EROFS, 15000, -1, -1, 0, false, "/proc is mounted read-only", "EROFS",
                  "--proc /proc" },
                { NSR_USERNS_STEP_MOUNT, ENODEV, 15000, -1, -1, 0, false, "mounting a tmpfs fails", "ENODEV",
                  "mount(2)" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                nsr_userns_facts f = base;
                f.step = cases[i].step;
                f.error = cases[i].error;
                f.max_user_namespaces = cases[i].max_userns;
                f.unprivileged_userns_clone = cases[i].clone_sysctl;
                f.apparmor_restrict = cases[i].apparmor;
                f.seccomp_mode = cases[i].seccomp;
                f.have_userns_file = !cases[i].no_userns_file;
                char reason[NSR_CHECK_TEXT_MAX], fix[NSR_CHECK_TEXT_MAX];
                nsr_hostcheck_userns_explain(&f, reason, sizeof(reason), fix, sizeof(fix));
                ck_assert_msg(strstr(reason, cases[i].reason), "case %zu: reason \"%s\" lacks \"%s\"", i, reason,
                              cases[i].reason);
                ck_assert_msg(strstr(reason, cases[i].reason2), "case %zu: reason \"%s\" lacks \"%s\"", i, reason,
                              cases[i].reason2);
                ck_assert_msg(strstr(fix, cases[i].fix), "case %zu: fix \"%s\" lacks \"%s\"", i, fix, cases[i].fix);
        }
        /* A seccomp denial is not blamed on AppArmor, nor the reverse. */
        nsr_userns_facts f = base;
        f.step = NSR_USERNS_STEP_CREATE;
        f.error = EPERM;
        f.seccomp_mode = 2;
        char reason[NSR_CHECK_TEXT_MAX], fix[NSR_CHECK_TEXT_MAX];
        nsr_hostcheck_userns_explain(&f, reason, sizeof(reason), fix, sizeof(fix));
        ck_assert_ptr_null(strstr(reason, "AppArmor"));
        f.step = NSR_USERNS_STEP_UID_MAP;
        f.apparmor_restrict = 1;
        nsr_hostcheck_userns_explain(&f, reason, sizeof(reason), fix, sizeof(fix));
        ck_assert_ptr_null(strstr(reason, "seccomp"));
        /* Tiny buffers truncate, never overflow. */
        char small[8];
        nsr_hostcheck_userns_explain(&f, small, sizeof(small), fix, 1);
        ck_assert_uint_eq(strlen(small), 7);
        ck_assert_str_eq(fix, "");
}
END_TEST

START_TEST(test_hint) {
        /* The kind of the error decides, never its text. */
        static const struct {
                nsr_error_kind kind;
                int code;
                const char *msg;
                bool hinted;
        } cases[] = {
                { NSR_ERR_CLONE, ENOSPC,
                  "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)",
                  true },
                { NSR_ERR_CLONE, EPERM, "No permissions to create a new namespace, likely because", true },
                { NSR_ERR_CLONE, EINVAL,
                  "Creating new namespace failed, likely because the kernel does not support user namespaces.", true },
                { NSR_ERR_CLONE, EUSERS, "Creating new namespace failed", true },
                { NSR_ERR_CLONE, ENOMEM, "Creating new namespace failed", false },
                { NSR_ERR_CLONE, ENOSPC, "unshare user ns", true },
                { NSR_ERR_USERNS_SETUP, EPERM, "setting up uid map", true },
                { NSR_ERR_USERNS_SETUP, EPERM, "setting up gid map", true },
                { NSR_ERR_USERNS_SETUP, EACCES, "error writing to setgroups", true },
                { NSR_ERR_USERNS_SETUP, EINVAL, "setting up uid map", false },
                { NSR_ERR_USERNS_SETUP, EPERM, "Failed to make / slave: Operation not permitted", true },
                { NSR_ERR_USERNS_SETUP, EPERM, "Failed to mount tmpfs: Operation not permitted", true },
                { NSR_ERR_USERNS_SETUP, EINVAL, "Failed to mount tmpfs: Invalid argument", false },
                { NSR_ERR_USERNS_SETUP, ENOSPC, "setting up uid map", false },
                /* a clone's errno on a later step is no clone failure */
                { NSR_ERR_USERNS_SETUP, EUSERS, "setting up uid map", false },
                { NSR_ERR_SETUP, EPERM, "Can't find source path /x", false },
                { NSR_ERR_EXEC, ENOENT, "execvp nosuch", false },
                { NSR_ERR_OVERLAY_MOUNT, EPERM, "Can't make overlay mount on /x", false },
                /* the text alone: a generic error that reads like one */
                { NSR_ERR_SETUP, EPERM, "Creating new namespace failed", false },
                { NSR_ERR_SETUP, EPERM, "setting up uid map", false },
                { NSR_ERR_NONE, EPERM, "Failed to make / slave: Operation not permitted", false },
                /* the kind alone: the message does not matter */
                { NSR_ERR_CLONE, EPERM, "prefix: Creating new namespace failed", true },
                { NSR_ERR_USERNS_SETUP, EACCES, "", true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                nsr_error e = { .code = cases[i].code, .kind = cases[i].kind };
                snprintf(e.msg, sizeof(e.msg), "%s", cases[i].msg);
                const char *h = nsr_hostcheck_hint(&e);
                ck_assert_msg((h != NULL) == cases[i].hinted, "case %zu (%s): hint %s", i, cases[i].msg,
                              h ? h : "(none)");
                if (h)
                        ck_assert_str_eq(h, "run \"nsrun doctor\" for details");
        }
        ck_assert_ptr_null(nsr_hostcheck_hint(NULL));
}
END_TEST

/* ---- overlay depth from mount tables -------------------------------- */

static struct libmnt_table *table(const char *text) {
        char path[] = "/tmp/nsr-unit-mountinfo.XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(nsr_write_all(fd, text, strlen(text)), 0);
        close(fd);
        struct libmnt_table *tb = mnt_new_table_from_file(path);
        unlink(path);
        ck_assert_ptr_nonnull(tb);
        return tb;
}

#define ROOT_EXT4 "1 0 254:0 / / rw,relatime - ext4 /dev/vda rw\n"

START_TEST(test_depth_plain) {
        struct libmnt_table *tb = table(ROOT_EXT4 "2 1 0:21 / /proc rw - proc proc rw\n"
                                                  "3 1 0:30 / /tmp rw - tmpfs tmpfs rw\n");
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/", 0), 0);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/home/u/project", 0), 0);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/tmp/x/", 0), 0);
        mnt_unref_table(tb);
        /* No mount holds the path at all. */
        tb = table("3 1 0:30 / /tmp rw - tmpfs tmpfs rw\n");
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/home", 0), -ENOENT);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "relative", 0), -ENOENT);
        mnt_unref_table(tb);
}
END_TEST

START_TEST(test_depth_stacked) {
        struct libmnt_table *tb = table(
                ROOT_EXT4
                "10 1 0:40 / /mnt rw - overlay overlay rw,lowerdir=/data,upperdir=/tmp/u,workdir=/tmp/w,userxattr\n"
                "11 1 0:41 / /mnt2 ro - overlay overlay ro,lowerdir=/mnt/sub:/empty,userxattr\n"
                "12 1 0:42 / /stack3 ro - overlay overlay ro,lowerdir=/mnt2:/empty,userxattr\n");
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/data", 0), 0);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt", 0), 1);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt/a/b", 0), 1);
        /* A layer on an overlay makes the depth 2: the kernel's limit. */
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt2/x", 0), 2);
        /* A table can describe more than the kernel would mount. */
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/stack3", 0), 3);
        /* "/mnt2x" is not below "/mnt2". */
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt2x", 0), 0);
        mnt_unref_table(tb);
}
END_TEST

START_TEST(test_depth_devno) {
        struct libmnt_table *tb =
                table(ROOT_EXT4 "10 1 0:40 / /mnt rw - overlay overlay rw,lowerdir=/data,upperdir=/u,workdir=/w\n"
                                "11 1 0:41 / /mnt2 ro - overlay overlay ro,lowerdir=/mnt:/e\n");
        /* The device number wins over the path: a bind mount of an
         * overlay elsewhere, or a path that moved. */
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/somewhere/else", makedev(0, 41)), 2);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt2", makedev(0, 40)), 1);
        /* An unknown device (btrfs subvolumes report their own) falls
         * back to the path. */
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt2", makedev(0, 99)), 2);
        mnt_unref_table(tb);
}
END_TEST

START_TEST(test_depth_layers) {
        struct libmnt_table *tb =
                table(ROOT_EXT4 "10 1 0:40 / /ovl rw - overlay overlay rw,lowerdir=/data,upperdir=/u,workdir=/w\n"
                                /* relative layers cannot be resolved: a lower bound */
                                "11 1 0:41 / /rel ro - overlay o ro,lowerdir=l1:l2,userxattr\n"
                                /* an escaped ':' is part of the name */
                                "12 1 0:42 / /esc ro - overlay o ro,lowerdir=/a\\:b:/ovl/x\n"
                                "13 1 0:43 / /esc2 ro - overlay o ro,lowerdir=/ovl\\:x:/e\n"
                                /* the new mount API's forms */
                                "14 1 0:44 / /plus ro - overlay o ro,lowerdir+=/e,lowerdir+=/ovl/y,datadir+=/d\n"
                                "15 1 0:45 / /data2 ro - overlay o ro,lowerdir+=/e,datadir+=/ovl/d\n"
                                /* a path from before pivot_root resolves to / */
                                "16 1 0:46 / /stale ro - overlay o ro,lowerdir=/oldroot/x:/oldroot/y\n");
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/rel", 0), 1);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/esc", 0), 2);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/esc2", 0), 1);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/plus", 0), 2);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/data2", 0), 2);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/stale", 0), 1);
        mnt_unref_table(tb);
}
END_TEST

START_TEST(test_depth_overmount_and_loops) {
        struct libmnt_table *tb =
                table(ROOT_EXT4 "10 1 0:40 / /mnt rw - overlay overlay rw,lowerdir=/data,upperdir=/u,workdir=/w\n"
                                "11 10 0:30 / /mnt rw - tmpfs tmpfs rw\n"
                                /* layers naming each other: the walk is bounded */
                                "12 1 0:41 / /a ro - overlay o ro,lowerdir=/b/x:/e\n"
                                "13 1 0:42 / /b ro - overlay o ro,lowerdir=/a/y:/e\n"
                                /* an overlay whose layer is inside itself */
                                "14 1 0:43 / /self ro - overlay o ro,lowerdir=/self/x:/e\n");
        /* The last mount on a mount point is the visible one. */
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/mnt/f", 0), 0);
        int d = nsr_hostcheck_overlay_depth(tb, "/a", 0);
        ck_assert_int_ge(d, 2);
        ck_assert_int_le(d, 4);
        ck_assert_int_eq(nsr_hostcheck_overlay_depth(tb, "/self", 0), 1);
        mnt_unref_table(tb);
}
END_TEST

/* ---- the sandbox description ---------------------------------------- */

START_TEST(test_sandbox_describe) {
        char buf[NSR_CHECK_TEXT_MAX];
        nsr_sandbox_facts f = { .uid_map = "0 0 4294967295" };
        nsr_hostcheck_sandbox_describe(&f, buf, sizeof(buf));
        ck_assert_str_eq(buf, "not inside a known sandbox or container");
        /* An unreadable uid_map says nothing. */
        f.uid_map[0] = '\0';
        nsr_hostcheck_sandbox_describe(&f, buf, sizeof(buf));
        ck_assert_str_eq(buf, "not inside a known sandbox or container");

        f = (nsr_sandbox_facts){ .dockerenv = true, .uid_map = "0 1000 1" };
        nsr_hostcheck_sandbox_describe(&f, buf, sizeof(buf));
        ck_assert_str_eq(buf, "already inside: Docker (/.dockerenv); a user namespace (uid_map \"0 1000 1\")");

        f = (nsr_sandbox_facts){ .env_nsrun = true, .ancestor_nsrun = true, .uid_map = "0 0 4294967295" };
        nsr_hostcheck_sandbox_describe(&f, buf, sizeof(buf));
        ck_assert_str_eq(buf, "already inside: an nsrun project sandbox (NSRUN=1)");

        f = (nsr_sandbox_facts){ .ancestor_nsrun = true,
                                 .ancestor_bwrap = true,
                                 .flatpak_info = true,
                                 .containerenv = true,
                                 .container = "lxc" };
        nsr_hostcheck_sandbox_describe(&f, buf, sizeof(buf));
        ck_assert_str_eq(buf, "already inside: nsrun (a parent process or pid 1 is nsrun); bubblewrap (a parent "
                              "process or pid 1 is bwrap); Flatpak (/.flatpak-info); Podman (/run/.containerenv); a "
                              "container \"lxc\" (/run/systemd/container)");
        /* Truncated, never overflowing. */
        char small[16];
        nsr_hostcheck_sandbox_describe(&f, small, sizeof(small));
        ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

/* ---- the probe runner ----------------------------------------------- */

static void probe_fine(const void *arg, nsr_check *out, size_t n) {
        for (size_t i = 0; i < n; i++) {
                out[i].ok = i == 0;
                snprintf(out[i].detail, sizeof(out[i].detail), "%s %zu", (const char *) arg, i);
                snprintf(out[i].fix, sizeof(out[i].fix), "fix %zu", i);
        }
}

static void probe_hangs(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) out;
        (void) n;
        for (;;)
                pause();
}

static void probe_crashes(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) out;
        (void) n;
        /* Not SIGSEGV, which AddressSanitizer catches, nor SIGTERM, which
         * Check catches (the child inherits its handler). */
        raise(SIGUSR1);
}

static void probe_leaves(const void *arg, nsr_check *out, size_t n) {
        (void) arg;
        (void) out;
        (void) n;
        _exit(0);
}

START_TEST(test_fork) {
        static const nsr_check_id ids[] = { NSR_CHECK_SECCOMP, NSR_CHECK_PIDFD };
        nsr_check got[2];
        ck_assert_int_eq(nsr_hostcheck_fork(probe_fine, "hello", ids, 2, 2000, got), 0);
        ck_assert(got[0].ok);
        ck_assert(!got[1].ok);
        ck_assert_int_eq(got[0].id, NSR_CHECK_SECCOMP);
        ck_assert_int_eq(got[1].id, NSR_CHECK_PIDFD);
        ck_assert_str_eq(got[1].detail, "hello 1");
        ck_assert_str_eq(got[1].fix, "fix 1");

        int64_t t0 = (int64_t) time(NULL);
        ck_assert_int_eq(nsr_hostcheck_fork(probe_hangs, NULL, ids, 2, 200, got), 0);
        ck_assert(!got[0].ok && !got[1].ok);
        ck_assert_str_eq(got[0].detail, "the probe did not answer within 200 ms and was killed");
        ck_assert_int_le((int64_t) time(NULL) - t0, 2);

        ck_assert_int_eq(nsr_hostcheck_fork(probe_crashes, NULL, ids, 1, 2000, got), 0);
        ck_assert(!got[0].ok);
        char want[32];
        snprintf(want, sizeof(want), "signal %d", SIGUSR1);
        ck_assert_msg(strstr(got[0].detail, want), "%s", got[0].detail);

        ck_assert_int_eq(nsr_hostcheck_fork(probe_leaves, NULL, ids, 1, 2000, got), 0);
        ck_assert(!got[0].ok);
        ck_assert_str_eq(got[0].detail, "the probe ended without an answer");
}
END_TEST

/* ---- best-effort mode's guarantees, and hidepid ---------------------------- */

static const nsr_guarantee *guar(const nsr_guarantee *g, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(g[i].name, name))
                        return &g[i];
        ck_abort_msg("no guarantee %s", name);
        return NULL;
}

START_TEST(test_best_effort) {
        nsr_check c[_NSR_CHECK_ID_MAX];
        nsr_guarantee g[NSR_GUARANTEES_MAX];
        all_ok(c);
        size_t n = nsr_hostcheck_best_effort(c, 7, g);
        ck_assert_uint_ge(n, 10);
        ck_assert_uint_le(n, NSR_GUARANTEES_MAX);
        ck_assert(guar(g, n, "files-write")->holds && guar(g, n, "signals")->holds && guar(g, n, "truncate")->holds);
        ck_assert(!guar(g, n, "review-before-commit")->holds && !guar(g, n, "process-list")->holds);
        ck_assert_ptr_nonnull(strstr(guar(g, n, "process-list")->detail, "hidden"));
        /* ABI 2: no truncate, no scoping (whatever the scope check says). */
        n = nsr_hostcheck_best_effort(c, 2, g);
        ck_assert(guar(g, n, "files-write")->holds && !guar(g, n, "truncate")->holds && !guar(g, n, "signals")->holds);
        /* No Landlock: nothing of it holds, and the run is refused. */
        c[NSR_CHECK_LANDLOCK].ok = false;
        c[NSR_CHECK_PROC_HIDEPID].ok = false;
        n = nsr_hostcheck_best_effort(c, 0, g);
        ck_assert(!guar(g, n, "files-write")->holds && !guar(g, n, "files-hidden")->holds &&
                  !guar(g, n, "protected-git-paths")->holds && !guar(g, n, "terminal")->holds);
        ck_assert_ptr_nonnull(strstr(guar(g, n, "files-write")->detail, "refuses"));
        ck_assert_ptr_nonnull(strstr(guar(g, n, "process-list")->detail, "no hidepid"));
        ck_assert(guar(g, n, "network")->holds && guar(g, n, "leftovers")->holds);
        /* No seccomp either. */
        c[NSR_CHECK_SECCOMP].ok = false;
        n = nsr_hostcheck_best_effort(c, 0, g);
        ck_assert(!guar(g, n, "network")->holds && !guar(g, n, "host-processes")->holds);
}
END_TEST

START_TEST(test_hidepid) {
        ck_assert(nsr_hostcheck_hidepid("rw,hidepid=2"));
        ck_assert(nsr_hostcheck_hidepid("rw,hidepid=invisible,gid=4"));
        ck_assert(nsr_hostcheck_hidepid("hidepid=ptraceable"));
        ck_assert(nsr_hostcheck_hidepid("rw,hidepid=1"));
        ck_assert(!nsr_hostcheck_hidepid("rw"));
        ck_assert(!nsr_hostcheck_hidepid("rw,hidepid=0"));
        ck_assert(!nsr_hostcheck_hidepid("rw,hidepid=off,subset=pid"));
        ck_assert(!nsr_hostcheck_hidepid("rw,xhidepid=2"));
        ck_assert(!nsr_hostcheck_hidepid(""));
        ck_assert(!nsr_hostcheck_hidepid(NULL));
}
END_TEST

/* The name tables replaced switches, whose -Wswitch-enum caught a value
 * without a name: this does now. */
START_TEST(test_name_tables) {
        for (int i = 0; i < _NSR_VERDICT_MAX; i++)
                ck_assert_ptr_nonnull(nsr_verdict_to_string((nsr_verdict) i));
        ck_assert_ptr_null(nsr_verdict_to_string(_NSR_VERDICT_MAX));
        ck_assert_ptr_null(nsr_verdict_to_string(_NSR_VERDICT_INVALID));
        for (int i = 0; i < _NSR_USERNS_STEP_MAX; i++)
                ck_assert_str_ne(nsr_userns_step_to_string((nsr_userns_step) i), "an unknown step");
        ck_assert_str_eq(nsr_userns_step_to_string(NSR_USERNS_STEP_GID_MAP), "writing /proc/self/gid_map");
        ck_assert_str_eq(nsr_userns_step_to_string(_NSR_USERNS_STEP_MAX), "an unknown step");
        ck_assert_str_eq(nsr_userns_step_to_string(_NSR_USERNS_STEP_INVALID), "an unknown step");
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("hostcheck");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 20);
        tcase_add_test(tc, test_verdict_full);
        tcase_add_test(tc, test_best_effort);
        tcase_add_test(tc, test_hidepid);
        tcase_add_test(tc, test_verdict_degraded_layers);
        tcase_add_test(tc, test_verdict_no_userns);
        tcase_add_test(tc, test_names);
        tcase_add_test(tc, test_egress);
        tcase_add_test(tc, test_explain);
        tcase_add_test(tc, test_hint);
        tcase_add_test(tc, test_name_tables);
        tcase_add_test(tc, test_depth_plain);
        tcase_add_test(tc, test_depth_stacked);
        tcase_add_test(tc, test_depth_devno);
        tcase_add_test(tc, test_depth_layers);
        tcase_add_test(tc, test_depth_overmount_and_loops);
        tcase_add_test(tc, test_sandbox_describe);
        tcase_add_test(tc, test_fork);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
