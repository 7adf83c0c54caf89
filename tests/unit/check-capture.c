/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* capture.c against hand-built upper/lower trees and against real overlays.
 *
 * Each scan runs up to three ways: here (whatever this process is), as
 * root of a new user namespace (how nsrun scans: CAP_DAC_OVERRIDE over the
 * mapped ids), and here with every capability dropped (the fallback that
 * chmods unreadable upper entries for a while). All must give the same
 * change set.
 *
 * The overlay tests mount a real overlay (userxattr) in a user and mount
 * namespace, change things through it, unmount it and scan the upper dir.
 * If the host cannot do that, they are skipped with the reason printed and
 * the program exits 77 (SKIP) once the other tests have passed. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>

#include "base/utf8.h"
#include "project/capture.h"
#include "sandbox/overlay.h"
#include "unit.h"

/* The tests' scratch dir, made by the unchecked fixture in the runner
 * process so that it is removed even when a test fails. */
static char scratch[PATH_MAX];
/* Set by main() from the probe: can this host make user namespaces? If
 * not, the "userns" scans are left out, loudly. */
static bool have_userns = true;

#define T0 ((time_t) 1600000000) /* lower mtimes */
#define T1 ((time_t) 1700000000) /* a "touch" */

/* ---- small file helpers (abort the test on failure) ---------------------- */

static char *pj(const char *dir, const char *rel) {
        return nsr_asprintf("%s/%s", dir, rel);
}

static void put_mode(const char *dir, const char *rel, const char *content, mode_t mode) {
        _cleanup_free_ char *p = pj(dir, rel);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        ck_assert_msg(fd >= 0, "create %s: %m", p);
        ck_assert_int_eq(nsr_write_all(fd, content, strlen(content)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
}

static void put(const char *dir, const char *rel, const char *content) {
        put_mode(dir, rel, content, 0644);
}

static void mkd(const char *dir, const char *rel) {
        _cleanup_free_ char *p = pj(dir, rel);
        ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %m", p);
}

static void sym(const char *dir, const char *rel, const char *target) {
        _cleanup_free_ char *p = pj(dir, rel);
        ck_assert_msg(symlink(target, p) == 0, "symlink %s: %m", p);
}

static void wht(const char *dir, const char *rel) {
        _cleanup_free_ char *p = pj(dir, rel);
        /* Whiteouts (0:0 char devices) need no CAP_MKNOD since Linux 5.8. */
        ck_assert_msg(mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0, "whiteout %s: %m", p);
}

static void xset(const char *dir, const char *rel, const char *name, const char *value) {
        _cleanup_free_ char *p = pj(dir, rel);
        ck_assert_msg(lsetxattr(p, name, value, strlen(value), 0) == 0, "setxattr %s %s: %m", p, name);
}

static void opq(const char *dir, const char *rel) {
        xset(dir, rel, "user.overlay.opaque", "y");
}

static void settime(const char *dir, const char *rel, time_t t) {
        _cleanup_free_ char *p = pj(dir, rel);
        struct timespec ts[2] = { { t, 0 }, { t, 0 } };
        ck_assert_msg(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0, "utimensat %s: %m", p);
}

static void chm(const char *dir, const char *rel, mode_t mode) {
        _cleanup_free_ char *p = pj(dir, rel);
        ck_assert_msg(chmod(p, mode) == 0, "chmod %s: %m", p);
}

static mode_t mode_of(const char *dir, const char *rel) {
        _cleanup_free_ char *p = pj(dir, rel);
        struct stat st;
        ck_assert_msg(lstat(p, &st) == 0, "lstat %s: %m", p);
        return st.st_mode & 07777;
}

/* Removes a tree, making dirs writable and searchable first (work/work is
 * 000, and so are the tests' own chmod 000 dirs). */
static void rm_rf_at(int dfd, const char *name) {
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        if (S_ISDIR(st.st_mode)) {
                (void) fchmodat(dfd, name, 0700, 0);
                int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0) {
                        DIR *d = fdopendir(fd);
                        if (!d)
                                close(fd);
                        else {
                                bool again = true;
                                while (again) {
                                        again = false;
                                        rewinddir(d);
                                        struct dirent *e;
                                        while ((e = readdir(d))) {
                                                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                                                        continue;
                                                rm_rf_at(dirfd(d), e->d_name);
                                                again = true;
                                        }
                                }
                                closedir(d);
                        }
                }
                (void) unlinkat(dfd, name, AT_REMOVEDIR);
        } else
                (void) unlinkat(dfd, name, 0);
}

static void rm_rf(const char *path) {
        rm_rf_at(AT_FDCWD, path);
}

/* ---- test trees ----------------------------------------------------------- */

typedef struct tree {
        char *base, *lower, *upper, *work, *merged;
} tree;

static void tree_init(tree *t, const char *name) {
        t->base = pj(scratch, name);
        rm_rf(t->base);
        ck_assert_msg(mkdir(t->base, 0755) == 0, "mkdir %s: %m", t->base);
        t->lower = pj(t->base, "lower");
        t->upper = pj(t->base, "upper");
        t->work = pj(t->base, "work");
        t->merged = pj(t->base, "merged");
        ck_assert_int_eq(mkdir(t->lower, 0755), 0);
        ck_assert_int_eq(mkdir(t->upper, 0755), 0);
        ck_assert_int_eq(mkdir(t->work, 0755), 0);
        ck_assert_int_eq(mkdir(t->merged, 0755), 0);
}

static void tree_done(tree *t) {
        rm_rf(t->base);
        free(t->base);
        free(t->lower);
        free(t->upper);
        free(t->work);
        free(t->merged);
}

/* ---- the dump the tests compare ------------------------------------------ */

static void append(char **buf, const char *s) {
        char *n = nsr_asprintf("%s%s", *buf, s);
        free(*buf);
        *buf = n;
}

/* "kind type path mode size [-> target] [desc=N] [was=type] [meta=...]" */
static char *dump(const nsr_changeset *cs) {
        char *buf = nsr_strdup("");
        for (size_t i = 0; i < nsr_changeset_size(cs); i++) {
                const nsr_change *c = &cs->changes[i];
                _cleanup_free_ char *p = nsr_utf8_escape(c->path);
                _cleanup_free_ char *line = nsr_asprintf("%s %s %s %04o %llu", nsr_change_kind_to_string(c->kind),
                                                         nsr_entry_type_to_string(c->type), p, (unsigned) c->mode,
                                                         (unsigned long long) c->size);
                append(&buf, line);
                if (c->target) {
                        _cleanup_free_ char *t = nsr_utf8_escape(c->target);
                        _cleanup_free_ char *x = nsr_asprintf(" -> %s", t);
                        append(&buf, x);
                }
                if ((c->kind == NSR_CHANGE_DELETED && c->type == NSR_ENTRY_DIR) ||
                    (c->kind == NSR_CHANGE_TYPE_CHANGED && c->old.type == NSR_ENTRY_DIR)) {
                        _cleanup_free_ char *x = nsr_asprintf(" desc=%llu", (unsigned long long) c->descendants);
                        append(&buf, x);
                }
                if (c->kind == NSR_CHANGE_TYPE_CHANGED) {
                        append(&buf, " was=");
                        append(&buf, nsr_entry_type_to_string(c->old.type));
                }
                if (c->kind == NSR_CHANGE_METADATA_CHANGED) {
                        append(&buf, " meta=");
                        const char *sep = "";
                        static const struct {
                                unsigned f;
                                const char *n;
                        } m[] = { { NSR_META_MODE, "mode" },
                                  { NSR_META_OWNER, "owner" },
                                  { NSR_META_XATTRS, "xattrs" },
                                  { NSR_META_MTIME, "mtime" } };
                        for (size_t k = 0; k < ELEMENTSOF(m); k++)
                                if (c->meta & m[k].f) {
                                        append(&buf, sep);
                                        append(&buf, m[k].n);
                                        sep = ",";
                                }
                }
                append(&buf, "\n");
        }
        return buf;
}

/* ---- running scans -------------------------------------------------------- */

typedef enum scan_mode {
        SCAN_HERE,   /* in this process */
        SCAN_USERNS, /* as root of a new user namespace */
        SCAN_NOCAPS, /* in a child with no capabilities */
        _SCAN_MODE_MAX,
} scan_mode;

static const char *const mode_names[] = { "here", "userns", "nocaps" };

typedef struct result {
        int r;
        nsr_capture_stats st;
        char *text; /* the dump, or the error message */
} result;

static void result_done(result *res) {
        free(res->text);
        res->text = NULL;
}

static char *scan_serialize(const char *upper, const char *lower, const nsr_capture_opts *opts_in) {
        nsr_capture_stats st = { 0 };
        nsr_capture_opts opts = opts_in ? *opts_in : (nsr_capture_opts){ 0 };
        opts.stats = &st;
        nsr_error err = { 0 };
        _cleanup_close_ int u = open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int l = open(lower, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
        int r = nsr_capture_scan(u, l, &opts, &cs, &err);
        _cleanup_free_ char *body = NULL;
        if (r < 0) {
                char msg[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&err, msg, sizeof(msg));
                body = nsr_strdup(msg);
        } else
                body = dump(cs);
        return nsr_asprintf("%d %llu %llu %llu %llu %llu\n%s", r, (unsigned long long) st.stat_calls,
                            (unsigned long long) st.upper_entries, (unsigned long long) st.lower_entries,
                            (unsigned long long) st.bytes_compared, (unsigned long long) st.mode_fixups, body);
}

static void scan_parse(const char *text, result *res) {
        unsigned long long a, b, c, d, e;
        ck_assert_msg(sscanf(text, "%d %llu %llu %llu %llu %llu", &res->r, &a, &b, &c, &d, &e) == 6,
                      "bad scan output: %s", text);
        res->st = (nsr_capture_stats){ a, b, c, d, e };
        const char *nl = strchr(text, '\n');
        res->text = nsr_strdup(nl ? nl + 1 : "");
}

static int write_file(const char *path, const char *s) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return nsr_write_all(fd, s, strlen(s));
}

/* In a child: a new user namespace (and mount namespace) with our ids
 * mapped to 0. Returns 0 or -errno with *what naming the step. */
static int enter_userns(const char **what) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];
        *what = "unshare(CLONE_NEWUSER|CLONE_NEWNS)";
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                return -errno;
        *what = "writing /proc/self/setgroups";
        int r = write_file("/proc/self/setgroups", "deny");
        if (r < 0)
                return r;
        *what = "writing /proc/self/uid_map";
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) uid);
        if ((r = write_file("/proc/self/uid_map", map)) < 0)
                return r;
        *what = "writing /proc/self/gid_map";
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) gid);
        if ((r = write_file("/proc/self/gid_map", map)) < 0)
                return r;
        *what = "making / private";
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        return 0;
}

static int drop_caps(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2] = { { 0 } };
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        return 0;
}

typedef char *(*child_fn)(void *userdata);

/* Runs fn in a child (in a user namespace, or without capabilities) and
 * returns its text. Exit status 77 with "SKIP: reason" means the child
 * could not set itself up. */
static int run_child(scan_mode mode, child_fn fn, void *userdata, char **ret_text) {
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(p[0]);
                int code = 0;
                char *text = NULL;
                const char *what = "capset";
                int r = 0;
                if (mode == SCAN_USERNS)
                        r = enter_userns(&what);
                else if (mode == SCAN_NOCAPS)
                        r = drop_caps();
                if (r < 0) {
                        text = nsr_asprintf("SKIP: %s: %s", what, strerror(-r));
                        code = 77;
                } else
                        text = fn(userdata);
                (void) nsr_write_all(p[1], text, strlen(text));
                _exit(code);
        }
        close(p[1]);
        char *text = NULL;
        ck_assert_int_eq(nsr_read_all(p[0], 64 * 1024 * 1024, &text, NULL), 0);
        close(p[0]);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        *ret_text = text;
        ck_assert_msg(WIFEXITED(status), "child died: status %d", status);
        return WEXITSTATUS(status);
}

typedef struct scan_args {
        const char *upper, *lower;
        const nsr_capture_opts *opts;
} scan_args;

static char *scan_child(void *userdata) {
        scan_args *a = userdata;
        return scan_serialize(a->upper, a->lower, a->opts);
}

static void scan(const tree *t, scan_mode mode, const nsr_capture_opts *opts, result *res) {
        _cleanup_free_ char *text = NULL;
        if (mode == SCAN_HERE)
                text = scan_serialize(t->upper, t->lower, opts);
        else {
                scan_args a = { t->upper, t->lower, opts };
                int code = run_child(mode, scan_child, &a, &text);
                ck_assert_msg(code == 0, "scan child (%s) exited %d: %s", mode_names[mode], code, text);
        }
        scan_parse(text, res);
}

/* Scans all three ways and checks each against the expected dump. */
static void expect_all(const tree *t, const nsr_capture_opts *opts, const char *want, result out[_SCAN_MODE_MAX]) {
        for (int m = 0; m < _SCAN_MODE_MAX; m++) {
                result res = { 0 };
                if (m == SCAN_USERNS && !have_userns) {
                        if (out)
                                out[m] = (result){ 0 };
                        continue;
                }
                scan(t, (scan_mode) m, opts, &res);
                ck_assert_msg(res.r == 0, "scan (%s) failed: %s", mode_names[m], res.text);
                if (!streq(res.text, want))
                        fprintf(stderr, "scan (%s) got:\n%s\nwanted:\n%s\n", mode_names[m], res.text, want);
                ck_assert_msg(streq(res.text, want), "scan (%s): unexpected change set", mode_names[m]);
                if (out)
                        out[m] = res;
                else
                        result_done(&res);
        }
}

static void expect_error(const tree *t, scan_mode mode, const nsr_capture_opts *opts, int code, const char *msg) {
        result res = { 0 };
        scan(t, mode, opts, &res);
        ck_assert_msg(res.r == -code, "scan (%s): expected %d, got %d: %s", mode_names[mode], -code, res.r, res.text);
        ck_assert_msg(streq(res.text, msg), "scan (%s): message '%s', expected '%s'", mode_names[mode], res.text, msg);
        result_done(&res);
}

/* ---- hand-built trees ------------------------------------------------------ */

START_TEST(test_classify) {
        tree t;
        tree_init(&t, "classify");
        const char *L = t.lower, *U = t.upper;

        put(L, "same.txt", "same");
        put(U, "same.txt", "same");
        xset(U, "same.txt", "user.overlay.origin", "\x00\xfb\x21");
        put(L, "mod.txt", "aaaa");
        put(U, "mod.txt", "bbbb");
        put(L, "grow.txt", "a");
        put(U, "grow.txt", "aa");
        put(L, "touch.txt", "t");
        put(U, "touch.txt", "t");
        put(L, "mode.txt", "m");
        put_mode(U, "mode.txt", "m", 0600);
        put(L, "xattr.txt", "x");
        put(U, "xattr.txt", "x");
        xset(U, "xattr.txt", "user.foo", "bar");
        put(L, "gone.txt", "gone");
        wht(U, "gone.txt");
        mkd(L, "gonedir");
        put(L, "gonedir/a", "a");
        mkd(L, "gonedir/b");
        put(L, "gonedir/b/c", "c");
        wht(U, "gonedir");
        wht(U, "ghost");
        sym(L, "link", "a");
        sym(U, "link", "b");
        sym(L, "samelink", "a");
        sym(U, "samelink", "a");
        put(L, "f2d", "f");
        mkd(U, "f2d");
        opq(U, "f2d");
        put(U, "f2d/in", "i");
        mkd(L, "d2f");
        put(L, "d2f/q", "q");
        put(U, "d2f", "D");
        mkd(L, "opq");
        put(L, "opq/keep", "k");
        put(L, "opq/gone", "g");
        mkd(L, "opq/sub");
        put(L, "opq/sub/s", "s");
        mkd(U, "opq");
        opq(U, "opq");
        put(U, "opq/keep", "k");
        put(U, "opq/new", "n");
        mkd(L, "mark");
        put(L, "mark/m", "m");
        mkd(U, "mark");
        opq(U, "mark");
        put(U, "mark/m", "m");
        mkd(L, "dmode");
        mkd(U, "dmode");
        chm(U, "dmode", 0700);
        mkd(L, "dtime");
        mkd(U, "dtime");
        settime(U, "dtime", T1);
        put(L, "nl\nx\xff", "1");
        put(U, "nl\nx\xff", "2");
        _cleanup_free_ char *fifo = pj(U, "pipe");
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        mkd(L, "realdir");
        put(L, "realdir/f", "f");
        sym(L, "l2d", "realdir");
        mkd(U, "l2d");
        opq(U, "l2d");
        put(U, "l2d/f", "f");
        mkd(L, "d2l");
        put(L, "d2l/z", "z");
        sym(U, "d2l", "/");
        mkd(U, "new");
        mkd(U, "new/deep");
        put(U, "new/deep/file", "file");
        put(U, "\xff", "x");

        /* Copy-ups keep the lower mtime; a touch does not. */
        static const char *const same_time[] = { "same.txt", "mod.txt",   "grow.txt", "touch.txt",
                                                 "mode.txt", "xattr.txt", "link",     "samelink",
                                                 "opq/keep", "mark/m",    "l2d/f",    "nl\nx\xff" };
        for (size_t i = 0; i < ELEMENTSOF(same_time); i++) {
                settime(L, same_time[i], T0);
                settime(U, same_time[i], T0);
        }
        settime(U, "touch.txt", T1);

        expect_all(&t, NULL,
                   "type_changed file d2f 0644 1 desc=1 was=dir\n"
                   "type_changed symlink d2l 0777 1 -> / desc=1 was=dir\n"
                   "metadata_changed dir dmode 0700 0 meta=mode\n"
                   "type_changed dir f2d 0755 0 was=file\n"
                   "created file f2d/in 0644 1\n"
                   "deleted file gone.txt 0644 4\n"
                   "deleted dir gonedir 0755 0 desc=3\n"
                   "modified file grow.txt 0644 2\n"
                   "type_changed dir l2d 0755 0 was=symlink\n"
                   "created file l2d/f 0644 1\n"
                   "modified symlink link 0777 1 -> b\n"
                   "modified file mod.txt 0644 4\n"
                   "metadata_changed file mode.txt 0600 1 meta=mode\n"
                   "created dir new 0755 0\n"
                   "created dir new/deep 0755 0\n"
                   "created file new/deep/file 0644 4\n"
                   "modified file nl\\nx\\xff 0644 1\n"
                   "deleted file opq/gone 0644 1\n"
                   "created file opq/new 0644 1\n"
                   "deleted dir opq/sub 0755 0 desc=1\n"
                   "created other pipe 0644 0\n"
                   "metadata_changed file touch.txt 0644 1 meta=mtime\n"
                   "metadata_changed file xattr.txt 0644 1 meta=xattrs\n"
                   "created file \\xff 0644 1\n",
                   NULL);
        tree_done(&t);
}
END_TEST

START_TEST(test_change_fields) {
        tree t;
        tree_init(&t, "fields");
        put(t.lower, "f", "old");
        put(t.upper, "f", "newer");
        settime(t.upper, "f", T1);
        mkd(t.lower, "d");
        wht(t.upper, "d");
        sym(t.upper, "s", "tgt");

        nsr_error err = { 0 };
        _cleanup_close_ int u = open(t.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int l = open(t.lower, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat lf, ld;
        ck_assert_int_eq(fstatat(l, "f", &lf, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_eq(fstatat(l, "d", &ld, AT_SYMLINK_NOFOLLOW), 0);
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = NULL;
        /* NULL opts: the defaults. */
        ck_assert_int_eq(nsr_capture_scan(u, l, NULL, &cs, &err), 0);
        ck_assert(cs->sorted);
        ck_assert_uint_eq(nsr_changeset_size(cs), 3);
        ck_assert_uint_eq(cs->max_changes, NSR_CAPTURE_MAX_CHANGES_DEFAULT);

        const nsr_change *c = nsr_changeset_lookup(cs, "f");
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(c->kind, NSR_CHANGE_MODIFIED);
        ck_assert_uint_eq(c->size, 5);
        ck_assert_int_eq(c->mtime.tv_sec, T1);
        ck_assert_uint_eq(c->uid, geteuid());
        ck_assert(c->old.exists);
        ck_assert_int_eq(c->old.type, NSR_ENTRY_FILE);
        ck_assert_uint_eq(c->old.size, 3);
        ck_assert_uint_eq(c->old.ino, lf.st_ino);
        ck_assert_uint_eq(c->old.dev, lf.st_dev);
        ck_assert_int_eq(c->old.ctime.tv_sec, lf.st_ctim.tv_sec);
        ck_assert_int_eq(c->old.ctime.tv_nsec, lf.st_ctim.tv_nsec);
        ck_assert(c->meta & NSR_META_MTIME);

        c = nsr_changeset_lookup(cs, "d");
        ck_assert_int_eq(c->kind, NSR_CHANGE_DELETED);
        ck_assert_int_eq(c->type, NSR_ENTRY_DIR);
        ck_assert_uint_eq(c->descendants, 0);
        ck_assert_uint_eq(c->old.ino, ld.st_ino);

        c = nsr_changeset_lookup(cs, "s");
        ck_assert_int_eq(c->kind, NSR_CHANGE_CREATED);
        ck_assert(!c->old.exists);
        ck_assert_str_eq(c->target, "tgt");
        tree_done(&t);
}
END_TEST

/* Upper entries the command made unreadable. */
static void build_locked(tree *t) {
        const char *L = t->lower, *U = t->upper;
        put(L, "same000.txt", "s");
        put(U, "same000.txt", "s");
        settime(L, "same000.txt", T0);
        settime(U, "same000.txt", T0);
        chm(U, "same000.txt", 0);
        put(U, "secret", "x");
        chm(U, "secret", 0);
        mkd(U, "sdir");
        put(U, "sdir/inner", "i");
        chm(U, "sdir", 0);
        mkd(L, "locked");
        put(L, "locked/f", "f");
        mkd(U, "locked");
        put(U, "locked/new", "n");
        chm(U, "locked", 0);
        /* Readable but not searchable, and the other way round. */
        mkd(U, "rwdir");
        put(U, "rwdir/f", "f");
        chm(U, "rwdir", 0600);
        mkd(U, "wxdir");
        put(U, "wxdir/f", "f");
        chm(U, "wxdir", 0300);
}

static const char locked_want[] = "metadata_changed dir locked 0000 0 meta=mode\n"
                                  "created file locked/new 0644 1\n"
                                  "created dir rwdir 0600 0\n"
                                  "created file rwdir/f 0644 1\n"
                                  "metadata_changed file same000.txt 0000 1 meta=mode\n"
                                  "created dir sdir 0000 0\n"
                                  "created file sdir/inner 0644 1\n"
                                  "created file secret 0000 1\n"
                                  "created dir wxdir 0300 0\n"
                                  "created file wxdir/f 0644 1\n";

static void check_locked_modes(const tree *t) {
        ck_assert_uint_eq(mode_of(t->upper, "same000.txt"), 0);
        ck_assert_uint_eq(mode_of(t->upper, "secret"), 0);
        ck_assert_uint_eq(mode_of(t->upper, "sdir"), 0);
        ck_assert_uint_eq(mode_of(t->upper, "locked"), 0);
        ck_assert_uint_eq(mode_of(t->upper, "rwdir"), 0600);
        ck_assert_uint_eq(mode_of(t->upper, "wxdir"), 0300);
}

START_TEST(test_mode_fixup) {
        tree t;
        tree_init(&t, "locked");
        build_locked(&t);
        result res[_SCAN_MODE_MAX];
        expect_all(&t, NULL, locked_want, res);
        /* Mapped root reads everything; without capabilities five entries
         * had to be opened up (a created file such as "secret" is never
         * opened), and all got their modes back. */
        if (have_userns)
                ck_assert_uint_eq(res[SCAN_USERNS].st.mode_fixups, 0);
        ck_assert_uint_eq(res[SCAN_NOCAPS].st.mode_fixups, 5);
        for (int m = 0; m < _SCAN_MODE_MAX; m++)
                result_done(&res[m]);
        check_locked_modes(&t);

        /* With the fallback off, the same scan fails clearly. */
        nsr_capture_opts opts = { .flags = NSR_CAPTURE_NO_MODE_FIXUP };
        result r = { 0 };
        scan(&t, SCAN_NOCAPS, &opts, &r);
        ck_assert_int_eq(r.r, -EACCES);
        ck_assert_msg(nsr_startswith(r.text, "capture: cannot open '") &&
                              strstr(r.text, "' in the upper dir: Permission denied"),
                      "%s", r.text);
        result_done(&r);
        check_locked_modes(&t);
        tree_done(&t);
}
END_TEST

START_TEST(test_root_locked) {
        tree t;
        tree_init(&t, "root000");
        put(t.lower, "f", "f");
        put(t.upper, "f", "g");
        put(t.upper, "new", "n");
        chmod(t.upper, 0);
        result res[_SCAN_MODE_MAX];
        /* The root's own metadata is never reported. */
        expect_all(&t, NULL, "modified file f 0644 1\ncreated file new 0644 1\n", res);
        ck_assert_uint_eq(res[SCAN_NOCAPS].st.mode_fixups, 1); /* the root only */
        for (int m = 0; m < _SCAN_MODE_MAX; m++)
                result_done(&res[m]);
        struct stat st;
        ck_assert_int_eq(lstat(t.upper, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0);
        tree_done(&t);
}
END_TEST

START_TEST(test_lower_unreadable) {
        tree t;
        tree_init(&t, "lower000");
        mkd(t.lower, "ldir");
        put(t.lower, "ldir/f", "f");
        chm(t.lower, "ldir", 0);
        mkd(t.upper, "ldir");
        put(t.upper, "ldir/new", "n");
        /* The project is never chmodded: without capabilities this is an
         * error that names the path and the layer. */
        expect_error(&t, SCAN_NOCAPS, NULL, EACCES, "capture: cannot open 'ldir' in the project: Permission denied");
        ck_assert_uint_eq(mode_of(t.lower, "ldir"), 0);
        tree_done(&t);
}
END_TEST

START_TEST(test_overlay_features_refused) {
        tree t;
        tree_init(&t, "metacopy");
        put(t.lower, "f", "data");
        put(t.upper, "f", "");
        xset(t.upper, "f", "user.overlay.metacopy", "");
        expect_error(&t, SCAN_HERE, NULL, EPROTO,
                     "capture: a metacopy file (user.overlay.metacopy) is not supported: 'f' in the upper dir");
        tree_done(&t);

        tree_init(&t, "redirect");
        mkd(t.lower, "d");
        mkd(t.upper, "d");
        xset(t.upper, "d", "user.overlay.redirect", "/other");
        expect_error(&t, SCAN_HERE, NULL, EPROTO,
                     "capture: a redirected dir (user.overlay.redirect) is not supported: 'd' in the upper dir");
        tree_done(&t);
}
END_TEST

START_TEST(test_root_record) {
        nsr_capture_prior p;
        ck_assert_int_eq(nsr_capture_root_parse("nsrun-root 1 2750 1000 100 2049 12345 1700000000 123456789\n", &p), 0);
        ck_assert_uint_eq(p.mode, 02750);
        ck_assert_uint_eq(p.uid, 1000);
        ck_assert_uint_eq(p.gid, 100);
        ck_assert_uint_eq(p.dev, 2049);
        ck_assert_uint_eq(p.ino, 12345);
        ck_assert_int_eq(p.ctime.tv_sec, 1700000000);
        ck_assert_int_eq(p.ctime.tv_nsec, 123456789);
        static const char *const bad[] = {
                "",
                "nsrun-root 1 755 0 0 1 2 3 4",
                "nsrun-root 2 755 0 0 1 2 3 4\n",
                "nsrun-root 1 17777 0 0 1 2 3 4\n",
                "nsrun-root 1 755 0 0 1 2 3 1000000000\n",
                "nsrun-root 1 755 0 0 1 2 3 4\nx",
                "nsrun-root 1 755 0 0 1 2 3\n",
                "nsrun-root 1 755 4294967296 0 1 2 3 4\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(nsr_capture_root_parse(bad[i], &p) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_int_eq(nsr_capture_root_parse(NULL, &p), -EINVAL);

        /* Saved and loaded back through a file; a second save replaces it. */
        char dir[] = "/tmp/nsr-rootrec.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);
        struct stat st;
        ck_assert_int_eq(fstat(dfd, &st), 0);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_capture_root_load(dfd, "root", &p), -ENOENT);
        ck_assert_int_eq(nsr_capture_root_save(dfd, "root", &st, &err), 0);
        ck_assert_int_eq(nsr_capture_root_save(dfd, "root", &st, &err), 0);
        ck_assert_int_eq(nsr_capture_root_load(dfd, "root", &p), 0);
        ck_assert_uint_eq(p.mode, st.st_mode & 07777);
        ck_assert_uint_eq(p.ino, st.st_ino);
        ck_assert_int_eq(p.ctime.tv_nsec, st.st_ctim.tv_nsec);
        ck_assert_int_eq(unlinkat(dfd, "root", 0), 0);
        close(dfd);
        ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(test_limits) {
        tree t;
        tree_init(&t, "limits");
        mkd(t.upper, "a");
        mkd(t.upper, "a/b");
        mkd(t.upper, "a/b/c");
        mkd(t.upper, "a/b/c/d");
        put(t.upper, "a/b/c/d/f", "f");
        nsr_capture_opts opts = { .max_depth = 3 };
        expect_error(&t, SCAN_HERE, &opts, ELOOP,
                     "capture: directory tree deeper than the limit at 'a/b/c/d' in the upper dir");
        opts.max_depth = 4;
        expect_all(&t, &opts,
                   "created dir a 0755 0\n"
                   "created dir a/b 0755 0\n"
                   "created dir a/b/c 0755 0\n"
                   "created dir a/b/c/d 0755 0\n"
                   "created file a/b/c/d/f 0644 1\n",
                   NULL);
        opts.max_changes = 4;
        expect_error(&t, SCAN_HERE, &opts, E2BIG, "more than 4 changes");

        /* Counting a deleted lower tree obeys the depth limit too. */
        mkd(t.lower, "x");
        mkd(t.lower, "x/y");
        mkd(t.lower, "x/y/z");
        mkd(t.lower, "x/y/z/w");
        opts = (nsr_capture_opts){ .max_depth = 3 };
        rm_rf(t.upper);
        mkd(t.base, "upper");
        wht(t.upper, "x");
        expect_error(&t, SCAN_HERE, &opts, ELOOP,
                     "capture: directory tree deeper than the limit at 'x' in the project");
        opts.max_depth = 4;
        expect_all(&t, &opts, "deleted dir x 0755 0 desc=3\n", NULL);

        opts = (nsr_capture_opts){ .max_depth = NSR_CAPTURE_MAX_DEPTH_LIMIT + 1 };
        expect_error(&t, SCAN_HERE, &opts, EINVAL, "capture: a maximum depth of 2049 is above the limit of 2048");

        nsr_error err = { 0 };
        nsr_changeset *cs = NULL;
        ck_assert_int_eq(nsr_capture_scan(-1, AT_FDCWD, NULL, &cs, &err), -EBADF);
        ck_assert_ptr_null(cs);
        tree_done(&t);
}
END_TEST

START_TEST(test_path_too_long) {
        tree t;
        tree_init(&t, "longpath");
        /* 17 levels of 250-byte names: 4266 bytes, more than PATH_MAX - 1. */
        char name[251];
        memset(name, 'n', 250);
        name[250] = '\0';
        int fd = open(t.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        for (int i = 0; i < 17; i++) {
                ck_assert_int_eq(mkdirat(fd, name, 0755), 0);
                int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ck_assert_int_ge(sub, 0);
                close(fd);
                fd = sub;
        }
        close(fd);
        result res = { 0 };
        scan(&t, SCAN_HERE, NULL, &res);
        ck_assert_int_eq(res.r, -ENAMETOOLONG);
        ck_assert_msg(nsr_startswith(res.text, "capture: a path longer than 4095 bytes below 'nnn"), "%s", res.text);
        result_done(&res);
        tree_done(&t);
}
END_TEST

/* 20 dirs of 1000 files. They are hardlinks of one file outside the
 * project: creating 20k inodes takes seconds on some disks, and the scan
 * looks at names, never at link counts. */
static void populate_big(const tree *t) {
        put(t->base, "content", "content");
        _cleanup_free_ char *src = pj(t->base, "content");
        char rel[64];
        for (int d = 0; d < 20; d++) {
                snprintf(rel, sizeof(rel), "d%02d", d);
                mkd(t->lower, rel);
                for (int f = 0; f < 1000; f++) {
                        snprintf(rel, sizeof(rel), "d%02d/f%04d", d, f);
                        _cleanup_free_ char *p = pj(t->lower, rel);
                        ck_assert_msg(link(src, p) == 0, "link %s: %m", p);
                }
        }
}

/* Not a timing test: the scan must look at O(changes) entries however big
 * the project is. */
START_TEST(test_scaling) {
        tree t;
        tree_init(&t, "scaling");
        populate_big(&t);
        mkd(t.upper, "d07");
        put(t.upper, "d07/f0001", "changed");
        mkd(t.upper, "d13");
        wht(t.upper, "d13/f0500");
        put(t.upper, "new.txt", "n");
        result res[_SCAN_MODE_MAX];
        expect_all(&t, NULL,
                   "modified file d07/f0001 0644 7\n"
                   "deleted file d13/f0500 0644 7\n"
                   "created file new.txt 0644 1\n",
                   res);
        for (int m = 0; m < _SCAN_MODE_MAX; m++) {
                if (m == SCAN_USERNS && !have_userns)
                        continue;
                ck_assert_msg(res[m].st.stat_calls < 50, "%llu stat calls", (unsigned long long) res[m].st.stat_calls);
                ck_assert_uint_eq(res[m].st.upper_entries, 5);
                ck_assert_uint_eq(res[m].st.lower_entries, 0);
                result_done(&res[m]);
        }
        tree_done(&t);
}
END_TEST

/* ---- real overlays ---------------------------------------------------------- */

/* One step in the child; the first failure ends it with a message. */
#define OP(expr)                                                                                                       \
        do {                                                                                                           \
                if ((expr) < 0)                                                                                        \
                        return nsr_asprintf("FAIL: %s (line %d): %s", #expr, __LINE__, strerror(errno));               \
        } while (0)

static int wr(const char *path, const char *content) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -1;
        int r = nsr_write_all(fd, content, strlen(content));
        if (r < 0) {
                errno = -r;
                return -1;
        }
        return 0;
}

static int rmtree(const char *path) {
        rm_rf(path);
        return access(path, F_OK) == 0 ? (errno = ENOTEMPTY, -1) : 0;
}

typedef struct overlay_args {
        const tree *t;
        char *(*ops)(void); /* runs in the merged dir, returns NULL or "FAIL: ..." */
} overlay_args;

/* In the user namespace: mount, run ops in the merged dir, unmount, scan
 * upper as mapped root. */
static char *overlay_child(void *userdata) {
        overlay_args *a = userdata;
        char *lowers[] = { a->t->lower };
        _cleanup_free_ char *opts = nsr_overlay_options("", a->t->upper, a->t->work, lowers, 1);
        if (mount("overlay", a->t->merged, "overlay", 0, opts) < 0)
                return nsr_asprintf("SKIP: mounting overlay (%s): %s", opts, strerror(errno));
        umask(022);
        if (chdir(a->t->merged) < 0)
                return nsr_asprintf("FAIL: chdir: %s", strerror(errno));
        char *failed = a->ops();
        if (failed)
                return failed;
        if (chdir("/") < 0 || umount2(a->t->merged, 0) < 0)
                return nsr_asprintf("FAIL: umount: %s", strerror(errno));
        return scan_serialize(a->t->upper, a->t->lower, NULL);
}

static char *probe_ops(void) {
        return wr("probe", "x") < 0 ? nsr_asprintf("FAIL: write through the overlay: %s", strerror(errno)) : NULL;
}

/* Runs ops on a real overlay of t and returns the in-namespace scan. */
static void overlay_run(const tree *t, char *(*ops)(void), result *res) {
        overlay_args a = { t, ops };
        _cleanup_free_ char *text = NULL;
        int code = run_child(SCAN_USERNS, overlay_child, &a, &text);
        ck_assert_msg(code == 0 && !nsr_startswith(text, "SKIP") && !nsr_startswith(text, "FAIL"),
                      "overlay child exited %d: %s", code, text);
        scan_parse(text, res);
}

/* Checked once in main(): NULL if overlays work here, else why not. */
static char *overlay_probe(bool *ret_userns) {
        tree t;
        t.base = pj(scratch, "probe");
        rm_rf(t.base);
        if (mkdir(t.base, 0755) < 0)
                return nsr_asprintf("mkdir %s: %s", t.base, strerror(errno));
        t.lower = pj(t.base, "lower");
        t.upper = pj(t.base, "upper");
        t.work = pj(t.base, "work");
        t.merged = pj(t.base, "merged");
        if (mkdir(t.lower, 0755) < 0 || mkdir(t.upper, 0755) < 0 || mkdir(t.work, 0755) < 0 ||
            mkdir(t.merged, 0755) < 0)
                return nsr_asprintf("mkdir: %s", strerror(errno));
        overlay_args a = { &t, probe_ops };
        char *text = NULL;
        char *why = NULL;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return nsr_asprintf("pipe: %s", strerror(errno));
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
                close(p[0]);
                const char *what = NULL;
                int r = enter_userns(&what);
                text = r < 0 ? nsr_asprintf("NOUSERNS: %s: %s", what, strerror(-r)) : overlay_child(&a);
                (void) nsr_write_all(p[1], text, strlen(text));
                _exit(0);
        }
        close(p[1]);
        if (pid < 0 || nsr_read_all(p[0], 1 << 20, &text, NULL) < 0)
                why = nsr_strdup("fork or read failed");
        close(p[0]);
        if (pid > 0)
                (void) waitpid(pid, NULL, 0);
        *ret_userns = !why && !nsr_startswith(text, "NOUSERNS: ");
        if (!why && !*ret_userns)
                why = nsr_strdup(text + 10);
        else if (!why && (nsr_startswith(text, "SKIP: ") || nsr_startswith(text, "FAIL: ")))
                why = nsr_strdup(text + 6);
        else if (!why && !nsr_startswith(text, "0 "))
                why = nsr_asprintf("unexpected probe result: %s", text);
        free(text);
        rm_rf(t.base);
        free(t.base);
        free(t.lower);
        free(t.upper);
        free(t.work);
        free(t.merged);
        return why;
}

static void build_project(const tree *t) {
        const char *L = t->lower;
        put(L, "keep.txt", "keep");
        put(L, "mod.txt", "old content");
        put(L, "del.txt", "bye");
        mkd(L, "deldir");
        put(L, "deldir/a", "a");
        mkd(L, "deldir/b");
        put(L, "deldir/b/c", "c");
        put(L, "deldir/b/d", "d");
        mkd(L, "opq");
        put(L, "opq/x", "x");
        put(L, "opq/y", "y");
        put(L, "opq/w", "w");
        mkd(L, "opq/sub");
        put(L, "opq/sub/z", "z");
        put(L, "mvfile.txt", "move me");
        mkd(L, "mvdir");
        put(L, "mvdir/f1", "1");
        put(L, "mvdir/f2", "2");
        put(L, "chmod.sh", "#!/bin/sh\n");
        put(L, "touch.txt", "t");
        put(L, "rdwr.txt", "r");
        put(L, "xattr.txt", "x");
        sym(L, "link", "keep.txt");
        sym(L, "same-link", "keep.txt");
        put(L, "f2d", "f");
        mkd(L, "d2f");
        put(L, "d2f/one", "1");
        put(L, "d2f/two", "2");
        mkd(L, "dirchmod");
        put(L, "dirchmod/k", "k");
        mkd(L, "dirtouch");
        put(L, "dirtouch/k", "k");
        put(L, "nl\nname", "1");
        put(L, "\xff\xfe", "z");
        put(L, "lower000.txt", "l");
        static const char *const files[] = { "keep.txt",   "mod.txt",  "del.txt",   "opq/x",    "opq/y",       "opq/w",
                                             "mvfile.txt", "chmod.sh", "touch.txt", "rdwr.txt", "xattr.txt",   "link",
                                             "same-link",  "f2d",      "nl\nname",  "\xff\xfe", "lower000.txt" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                settime(L, files[i], T0);
}

static char *project_ops(void) {
        OP(wr("mod.txt", "new content, longer"));
        OP(unlink("del.txt"));
        OP(rmtree("deldir"));
        /* rm -rf a dir, then make it again: upper gets an opaque dir. */
        OP(rmtree("opq"));
        OP(mkdir("opq", 0755));
        OP(wr("opq/y", "yy"));
        OP(wr("opq/w", "w"));
        OP(rename("mvfile.txt", "moved.txt"));
        /* A lower dir cannot be renamed without redirect_dir, which
         * userxattr rules out: mv copies and deletes instead. */
        if (rename("mvdir", "mvdir2") == 0 || errno != EXDEV)
                return nsr_asprintf("FAIL: renaming a lower dir did not fail with EXDEV: %s", strerror(errno));
        OP(mkdir("mvdir2", 0755));
        OP(wr("mvdir2/f1", "1"));
        OP(wr("mvdir2/f2", "2"));
        OP(rmtree("mvdir"));
        OP(chmod("chmod.sh", 0755));
        OP(utimensat(AT_FDCWD, "touch.txt", NULL, 0));
        int fd;
        OP(fd = open("rdwr.txt", O_RDWR | O_CLOEXEC)); /* copy-up, no change */
        close(fd);
        OP(setxattr("xattr.txt", "user.foo", "bar", 3, 0));
        OP(unlink("link"));
        OP(symlink("mod.txt", "link"));
        OP(lchown("same-link", 0, 0)); /* copy-up, no change */
        OP(unlink("f2d"));
        OP(mkdir("f2d", 0755));
        OP(wr("f2d/inner", "in"));
        OP(rmtree("d2f"));
        OP(wr("d2f", "now a file"));
        OP(chmod("dirchmod", 0700));
        OP(wr("dirtouch/tmp", "t"));
        OP(unlink("dirtouch/tmp"));
        OP(wr("nl\nname", "22"));
        OP(unlink("\xff\xfe"));
        OP(chmod("lower000.txt", 0));
        OP(wr("new.txt", "new"));
        OP(mkdir("newdir", 0755));
        OP(mkdir("newdir/sub", 0755));
        OP(wr("newdir/sub/file", "file"));
        OP(wr("new\nline\xff", "nl"));
        OP(wr("secret", "s"));
        OP(chmod("secret", 0));
        OP(mkdir("secretdir", 0755));
        OP(wr("secretdir/inner", "i"));
        OP(chmod("secretdir", 0));
        return NULL;
}

static const char project_want[] = "metadata_changed file chmod.sh 0755 10 meta=mode\n"
                                   "type_changed file d2f 0644 10 desc=2 was=dir\n"
                                   "deleted file del.txt 0644 3\n"
                                   "deleted dir deldir 0755 0 desc=4\n"
                                   "metadata_changed dir dirchmod 0700 0 meta=mode\n"
                                   "type_changed dir f2d 0755 0 was=file\n"
                                   "created file f2d/inner 0644 2\n"
                                   "modified symlink link 0777 7 -> mod.txt\n"
                                   "metadata_changed file lower000.txt 0000 1 meta=mode\n"
                                   "modified file mod.txt 0644 19\n"
                                   "created file moved.txt 0644 7\n"
                                   "deleted dir mvdir 0755 0 desc=2\n"
                                   "created dir mvdir2 0755 0\n"
                                   "created file mvdir2/f1 0644 1\n"
                                   "created file mvdir2/f2 0644 1\n"
                                   "deleted file mvfile.txt 0644 7\n"
                                   "created file new\\nline\\xff 0644 2\n"
                                   "created file new.txt 0644 3\n"
                                   "created dir newdir 0755 0\n"
                                   "created dir newdir/sub 0755 0\n"
                                   "created file newdir/sub/file 0644 4\n"
                                   "modified file nl\\nname 0644 2\n"
                                   "deleted dir opq/sub 0755 0 desc=1\n"
                                   "metadata_changed file opq/w 0644 1 meta=mtime\n"
                                   "deleted file opq/x 0644 1\n"
                                   "modified file opq/y 0644 2\n"
                                   "created file secret 0000 1\n"
                                   "created dir secretdir 0000 0\n"
                                   "created file secretdir/inner 0644 1\n"
                                   "metadata_changed file touch.txt 0644 1 meta=mtime\n"
                                   "metadata_changed file xattr.txt 0644 1 meta=xattrs\n"
                                   "deleted file \\xff\\xfe 0644 1\n";

START_TEST(test_overlay_project) {
        tree t;
        tree_init(&t, "overlay");
        build_project(&t);
        result inside = { 0 };
        overlay_run(&t, project_ops, &inside);
        ck_assert_msg(inside.r == 0, "scan in the user namespace failed: %s", inside.text);
        if (!streq(inside.text, project_want))
                fprintf(stderr, "in-namespace scan got:\n%s\nwanted:\n%s\n", inside.text, project_want);
        ck_assert_str_eq(inside.text, project_want);
        ck_assert_uint_eq(inside.st.mode_fixups, 0);
        /* Lower dirs read: deldir (4 below), opq (4 listed, 1 in the deleted
         * opq/sub), mvdir (2), d2f (2). Nothing else of the project. */
        ck_assert_uint_eq(inside.st.lower_entries, 4 + 4 + 1 + 2 + 2);
        result_done(&inside);

        /* What overlay left in upper, as the kernel notes describe it. */
        struct stat st;
        _cleanup_free_ char *wo = pj(t.upper, "del.txt");
        ck_assert_int_eq(lstat(wo, &st), 0);
        ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        /* The copy-ups that changed nothing are really there (and dropped). */
        static const char *const copied_up[] = { "rdwr.txt", "same-link", "dirtouch", "keep.txt" };
        for (size_t i = 0; i < ELEMENTSOF(copied_up); i++) {
                _cleanup_free_ char *p = pj(t.upper, copied_up[i]);
                ck_assert_msg((lstat(p, &st) == 0) == !streq(copied_up[i], "keep.txt"), "upper %s", copied_up[i]);
        }
        _cleanup_free_ char *od = pj(t.upper, "opq");
        char v[4];
        ck_assert_int_eq(lgetxattr(od, "user.overlay.opaque", v, sizeof(v)), 1);

        /* The same change set from outside the namespace: once as we are,
         * once without capabilities (chmod 000 entries need the fixup). */
        result res[_SCAN_MODE_MAX];
        for (int m = 0; m < _SCAN_MODE_MAX; m++) {
                if (m == SCAN_USERNS)
                        continue;
                res[m] = (result){ 0 };
                scan(&t, (scan_mode) m, NULL, &res[m]);
                ck_assert_msg(res[m].r == 0, "scan (%s) failed: %s", mode_names[m], res[m].text);
                if (!streq(res[m].text, project_want))
                        fprintf(stderr, "scan (%s) got:\n%s\n", mode_names[m], res[m].text);
                ck_assert_str_eq(res[m].text, project_want);
        }
        /* lower000.txt (compared with lower) and secretdir (walked); the
         * created file "secret" is not opened. */
        ck_assert_uint_eq(res[SCAN_NOCAPS].st.mode_fixups, 2);
        result_done(&res[SCAN_HERE]);
        result_done(&res[SCAN_NOCAPS]);
        ck_assert_uint_eq(mode_of(t.upper, "secret"), 0);
        ck_assert_uint_eq(mode_of(t.upper, "secretdir"), 0);
        ck_assert_uint_eq(mode_of(t.upper, "lower000.txt"), 0);
        tree_done(&t);
}
END_TEST

/* A big project, a few changes, through a real overlay. */
static char *few_ops(void) {
        OP(wr("d03/f0042", "changed!"));
        OP(unlink("d11/f0999"));
        OP(wr("d19/new", "n"));
        return NULL;
}

START_TEST(test_overlay_scaling) {
        tree t;
        tree_init(&t, "overlay-scaling");
        populate_big(&t);
        result res = { 0 };
        overlay_run(&t, few_ops, &res);
        ck_assert_msg(res.r == 0, "%s", res.text);
        ck_assert_str_eq(res.text, "modified file d03/f0042 0644 8\n"
                                   "deleted file d11/f0999 0644 7\n"
                                   "created file d19/new 0644 1\n");
        ck_assert_msg(res.st.stat_calls < 50, "%llu stat calls", (unsigned long long) res.st.stat_calls);
        ck_assert_uint_eq(res.st.lower_entries, 0);
        result_done(&res);
        tree_done(&t);
}
END_TEST

/* ---- the runner ---------------------------------------------------------- */

static void scratch_setup(void) {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch, sizeof(scratch), "%s/nsr-check-capture.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(scratch)) {
                fprintf(stderr, "mkdtemp %s: %m\n", scratch);
                abort();
        }
        umask(022);
}

static void scratch_teardown(void) {
        rm_rf(scratch);
}

static Suite *suite(bool with_overlay) {
        Suite *s = suite_create("capture");
        TCase *tc = tcase_create("trees");
        tcase_add_unchecked_fixture(tc, scratch_setup, scratch_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_classify);
        tcase_add_test(tc, test_change_fields);
        tcase_add_test(tc, test_mode_fixup);
        tcase_add_test(tc, test_root_locked);
        tcase_add_test(tc, test_lower_unreadable);
        tcase_add_test(tc, test_overlay_features_refused);
        tcase_add_test(tc, test_root_record);
        tcase_add_test(tc, test_limits);
        tcase_add_test(tc, test_path_too_long);
        tcase_add_test(tc, test_scaling);
        suite_add_tcase(s, tc);
        if (with_overlay) {
                tc = tcase_create("overlay");
                tcase_add_unchecked_fixture(tc, scratch_setup, scratch_teardown);
                tcase_set_timeout(tc, 60);
                tcase_add_test(tc, test_overlay_project);
                tcase_add_test(tc, test_overlay_scaling);
                suite_add_tcase(s, tc);
        }
        return s;
}

int main(void) {
        scratch_setup();
        _cleanup_free_ char *why = overlay_probe(&have_userns);
        scratch_teardown();
        if (!have_userns)
                fprintf(stderr, "\n*** SKIP: no user namespaces here, scans as mapped root are left out ***\n");
        if (why)
                fprintf(stderr, "\n*** SKIP: overlay tests cannot run here: %s ***\n\n", why);
        SRunner *sr = srunner_create(suite(!why));
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        if (failed)
                return EXIT_FAILURE;
        return why ? 77 : EXIT_SUCCESS;
}
