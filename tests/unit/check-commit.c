/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* commit.c: apply, conflicts, rollback, crash recovery and undo, on temp
 * trees built by hand: a "project", a run dir with p0/upper holding the new
 * versions, and a change set filled from lstat of both. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>

#include "txn/changeset.h"
#include "txn/commit.h"
#include "txn/journal.h"
#include "txn/state.h"
#include "txn/txnfs.h"
#include "unit.h"

/* ---- helpers --------------------------------------------------------------------- */

static void sleep_ms(long ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0)
                ;
}

static void mkdirs_at(int dirfd, const char *path, mode_t mode) {
        _cleanup_free_ char *p = nsr_strdup(path);
        for (char *s = p;; s++) {
                if (*s && *s != '/')
                        continue;
                char c = *s;
                *s = '\0';
                int r = mkdirat(dirfd, p, mode);
                ck_assert_msg(r == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
                *s = c;
                if (!c)
                        break;
        }
}

static void parent_dirs(int dirfd, const char *path) {
        const char *sl = strrchr(path, '/');
        if (!sl)
                return;
        _cleanup_free_ char *d = nsr_strndup(path, (size_t) (sl - path));
        mkdirs_at(dirfd, d, 0755);
}

static void put(int dirfd, const char *path, const char *content, mode_t mode) {
        parent_dirs(dirfd, path);
        int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
        ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
        ck_assert_int_eq(nsr_write_all(fd, content, strlen(content)), 0);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
}

static void put_link(int dirfd, const char *path, const char *target) {
        parent_dirs(dirfd, path);
        ck_assert_int_eq(symlinkat(target, dirfd, path), 0);
}

static void put_dir(int dirfd, const char *path, mode_t mode) {
        mkdirs_at(dirfd, path, mode);
        ck_assert_int_eq(fchmodat(dirfd, path, mode, 0), 0);
}

/* The content of a file, or NULL if there is none. */
static char *get(int dirfd, const char *path) {
        int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *s = NULL;
        int r = nsr_read_all(fd, 1 << 20, &s, NULL);
        close(fd);
        return r < 0 ? NULL : s;
}

static bool exists_at(int dirfd, const char *path) {
        struct stat st;
        return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static mode_t mode_at(int dirfd, const char *path) {
        struct stat st;
        ck_assert_int_eq(fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
        return st.st_mode;
}

static void assert_content(int dirfd, const char *path, const char *want) {
        _cleanup_free_ char *s = get(dirfd, path);
        if (!want) {
                ck_assert_msg(!exists_at(dirfd, path), "%s should not exist", path);
                return;
        }
        ck_assert_msg(s != NULL, "%s is missing", path);
        ck_assert_str_eq(s, want);
}

static void assert_content_abs(const char *path, const char *want) {
        _cleanup_free_ char *s = get(AT_FDCWD, path);
        ck_assert_msg(s != NULL, "%s is missing", path);
        ck_assert_str_eq(s, want);
}

static bool has_user_xattrs(const char *path) {
        if (setxattr(path, "user.nsrun-probe", "1", 1, 0) < 0)
                return false;
        (void) removexattr(path, "user.nsrun-probe");
        return true;
}

static char *fd_path_of(int fd) {
        char p[64], buf[PATH_MAX];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(p, buf, sizeof(buf) - 1);
        ck_assert_int_gt(n, 0);
        buf[n] = '\0';
        return nsr_strdup(buf);
}

static uint64_t fnv(const char *s, size_t n) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char) s[i];
                h *= UINT64_C(1099511628211);
        }
        return h;
}

/* ---- tree snapshots: one line per entry, sorted --------------------------------------- */

typedef struct snap {
        char **lines;
        bool times;
} snap;

static int snap_cb(int dirfd, const char *name, const char *rel, const struct stat *st, void *userdata) {
        snap *sn = userdata;
        _cleanup_free_ char *h = nsr_hex_encode(rel, strlen(rel));
        _cleanup_free_ char *what = NULL;
        if (S_ISREG(st->st_mode)) {
                int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                char *s = NULL;
                size_t n = 0;
                if (fd >= 0 && nsr_read_all(fd, 64 << 20, &s, &n) == 0)
                        what = sn->times ? nsr_asprintf("f %016llx %lld.%09ld", (unsigned long long) fnv(s, n),
                                                        (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec)
                                         : nsr_asprintf("f %016llx", (unsigned long long) fnv(s, n));
                else
                        what = nsr_strdup("f unreadable");
                free(s);
                safe_close(fd);
        } else if (S_ISLNK(st->st_mode)) {
                char t[PATH_MAX + 1];
                ssize_t n = readlinkat(dirfd, name, t, PATH_MAX);
                t[n < 0 ? 0 : n] = '\0';
                what = nsr_asprintf("l %s", t);
        } else if (S_ISDIR(st->st_mode))
                what = nsr_strdup("d");
        else
                what = nsr_asprintf("o %o", (unsigned) (st->st_mode & S_IFMT));
        _cleanup_free_ char *xs = nsr_strdup("");
        nsr_xattr *x = NULL;
        size_t nx = 0;
        if (nsr_txnfs_user_xattrs(dirfd, name, &x, &nx) == 0)
                for (size_t i = 0; i < nx; i++) {
                        _cleanup_free_ char *v = nsr_hex_encode(x[i].value, x[i].len);
                        char *n = nsr_asprintf("%s %s=%s", xs, x[i].name, v);
                        free(xs);
                        xs = n;
                }
        nsr_txnfs_xattrs_free(x, nx);
        (void) nsr_strv_push(&sn->lines, nsr_asprintf("%s %s %o %u:%u%s", h, what, (unsigned) (st->st_mode & 07777),
                                                      (unsigned) st->st_uid, (unsigned) st->st_gid, xs));
        return 0;
}

static int line_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static char *snapshot(int dirfd) {
        snap sn = { .times = true };
        ck_assert_int_eq(nsr_txnfs_walk(dirfd, ".", "", NSR_TXNFS_WALK_SKIP_UNREADABLE, snap_cb, &sn), 0);
        char **lines = sn.lines;
        size_t n = nsr_strv_length(lines);
        qsort(lines, n, sizeof(char *), line_cmp);
        char *out = nsr_strdup("");
        for (size_t i = 0; i < n; i++) {
                char *o = nsr_asprintf("%s%s\n", out, lines[i]);
                free(out);
                out = o;
        }
        nsr_strv_free(lines);
        return out;
}

/* What one path is: "absent", or its snapshot line without the path. */
static char *describe(int dirfd, const char *path) {
        struct stat st;
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return nsr_strdup("absent");
        snap sn = { .times = false };
        const char *sl = strrchr(path, '/');
        _cleanup_free_ char *dir = sl ? nsr_strndup(path, (size_t) (sl - path)) : nsr_strdup(".");
        int pfd = openat(dirfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(pfd, 0);
        snap_cb(pfd, sl ? sl + 1 : path, "", &st, &sn);
        close(pfd);
        char *r = nsr_strdup(sn.lines[0]);
        nsr_strv_free(sn.lines);
        return r;
}

/* ---- fixtures -------------------------------------------------------------------------- */

typedef struct fixture {
        char *base, *project, *state, *run_path;
        char run_id[NSR_RUN_ID_MAX];
        int state_fd, project_fd, run_fd, upper_fd;
        struct timespec run_start;
        nsr_changeset *cs;
} fixture;

static void fx_open_project(fixture *f) {
        f->project_fd = open(f->project, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(f->project_fd, 0);
}

/* project_parent: where the project dir goes (NULL: beside the state). */
static void fx_init_at(fixture *f, const char *project_parent) {
        *f = (fixture){ .state_fd = -1, .project_fd = -1, .run_fd = -1, .upper_fd = -1 };
        const char *tmp = getenv("TMPDIR");
        _cleanup_free_ char *tmpl = nsr_asprintf("%s/nsrun-commit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(tmpl));
        f->base = nsr_strdup(tmpl);
        if (project_parent) {
                f->project = nsr_asprintf("%s/project-XXXXXX", project_parent);
                ck_assert_ptr_nonnull(mkdtemp(f->project));
                ck_assert_int_eq(chmod(f->project, 0755), 0);
        } else {
                f->project = nsr_asprintf("%s/project", f->base);
                ck_assert_int_eq(mkdir(f->project, 0755), 0);
        }
        f->state = nsr_asprintf("%s/state", f->base);
        nsr_error err = { 0 };
        f->state_fd = nsr_state_open(f->state, &err);
        ck_assert_msg(f->state_fd >= 0, "%s", err.msg);
        nsr_run_id_new(f->run_id);
        f->run_fd = nsr_run_create(f->state_fd, f->run_id, 1, &err);
        ck_assert_msg(f->run_fd >= 0, "%s", err.msg);
        f->run_path = nsr_asprintf("%s/runs/%s", f->state, f->run_id);
        f->upper_fd = openat(f->run_fd, "p0/upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(f->upper_fd, 0);
        fx_open_project(f);
        f->cs = nsr_changeset_new();
}

static void fx_init(fixture *f) {
        fx_init_at(f, NULL);
}

static void fx_done(fixture *f) {
        safe_close(f->project_fd);
        safe_close(f->run_fd);
        safe_close(f->upper_fd);
        safe_close(f->state_fd);
        nsr_changeset_free(f->cs);
        if (f->base)
                (void) nsr_rm_rf_at(AT_FDCWD, f->base, NULL);
        if (f->project)
                (void) nsr_rm_rf_at(AT_FDCWD, f->project, NULL);
        free(f->base);
        free(f->project);
        free(f->state);
        free(f->run_path);
}

/* The sandbox starts: the coarse clock must move on both sides, so the
 * project's entries are older and host edits newer. */
static void fx_start_run(fixture *f) {
        sleep_ms(20);
        clock_gettime(CLOCK_REALTIME_COARSE, &f->run_start);
        sleep_ms(20);
}

/* n files named PREFIXNNNNN in dirfd/dir (made), content = name. */
static bool bulk_files(int dirfd, const char *prefix, int n, const char *content) {
        for (int i = 0; i < n; i++) {
                char p[64];
                snprintf(p, sizeof(p), "%s%05d", prefix, i);
                int fd = openat(dirfd, p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0)
                        return false;
                bool ok = nsr_write_all(fd, content ? content : p, strlen(content ? content : p)) == 0;
                close(fd);
                if (!ok)
                        return false;
        }
        return true;
}

static void fill_old(int dirfd, const char *path, nsr_entry_old *old) {
        struct stat st;
        *old = (nsr_entry_old){ 0 };
        if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        *old = (nsr_entry_old){
                .exists = true,
                .type = nsr_entry_type_from_mode(st.st_mode),
                .mode = st.st_mode & 07777,
                .uid = st.st_uid,
                .gid = st.st_gid,
                .size = (uint64_t) st.st_size,
                .mtime = st.st_mtim,
                .ctime = st.st_ctim,
                .dev = st.st_dev,
                .ino = st.st_ino,
        };
}

/* Adds a change: old from the project, the new entry from upper. Returns
 * false instead of asserting (Check records every assertion, which makes
 * loops of 20k slow). */
static bool fx_change_quiet(fixture *f, const char *path, nsr_change_kind kind) {
        nsr_change c = { .path = (char *) path, .kind = kind };
        fill_old(f->project_fd, path, &c.old);
        char target[PATH_MAX + 1];
        if (kind == NSR_CHANGE_DELETED) {
                ck_assert_msg(c.old.exists, "%s: nothing to delete", path);
                c.type = c.old.type;
                c.mode = c.old.mode;
                c.size = c.old.size;
                c.mtime = c.old.mtime;
        } else {
                struct stat st;
                if (fstatat(f->upper_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return false;
                c.type = nsr_entry_type_from_mode(st.st_mode);
                c.mode = st.st_mode & 07777;
                c.uid = st.st_uid;
                c.gid = st.st_gid;
                c.size = S_ISDIR(st.st_mode) ? 0 : (uint64_t) st.st_size;
                c.mtime = st.st_mtim;
                if (S_ISLNK(st.st_mode)) {
                        ssize_t n = readlinkat(f->upper_fd, path, target, PATH_MAX);
                        if (n < 0)
                                return false;
                        target[n] = '\0';
                        c.target = target;
                }
                if (kind == NSR_CHANGE_METADATA_CHANGED)
                        c.meta = NSR_META_MODE | NSR_META_XATTRS;
        }
        return nsr_changeset_add(f->cs, &c, NULL) == 0;
}

static void fx_change(fixture *f, const char *path, nsr_change_kind kind) {
        ck_assert_msg(fx_change_quiet(f, path, kind), "cannot add a change for %s", path);
}

static nsr_commit_opts fx_opts(fixture *f) {
        return (nsr_commit_opts){
                .project_fd = f->project_fd,
                .project_path = f->project,
                .upper_fd = f->upper_fd,
                .run_fd = f->run_fd,
                .run_path = f->run_path,
                .project_index = 0,
                .run_start = f->run_start,
                .state_fd = f->state_fd,
                .run_id = f->run_id,
        };
}

/* The marks in STATE/pending, space-separated ("" for none). */
static char *pending_marks(fixture *f) {
        char *out = nsr_strdup("");
        int fd = openat(f->state_fd, "pending", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return out;
        DIR *d = fdopendir(fd);
        ck_assert_ptr_nonnull(d);
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                char *n = nsr_asprintf("%s%s%s", out, *out ? " " : "", de->d_name);
                free(out);
                out = n;
        }
        closedir(d);
        return out;
}

static int fx_apply(fixture *f, nsr_commit_result *res, nsr_error *err) {
        int r = nsr_changeset_sort(f->cs, err);
        if (r < 0)
                return r;
        nsr_commit_opts o = fx_opts(f);
        return nsr_commit_apply(f->cs, &o, res, err);
}

static void fx_apply_ok(fixture *f, nsr_commit_result *res) {
        nsr_error err = { 0 };
        int r = fx_apply(f, res, &err);
        ck_assert_msg(r == 0, "apply: %d %s", r, err.msg);
}

static const nsr_commit_conflict *find_conflict(const nsr_commit_result *res, const char *path) {
        for (size_t i = 0; i < res->n_conflicts; i++)
                if (streq(res->conflicts[i].path, path))
                        return &res->conflicts[i];
        return NULL;
}

static int open_rel(int dirfd, const char *path) {
        int fd = openat(dirfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
        return fd;
}

/* A second run dir, for an undo. */
static int fx_new_run(fixture *f, char **ret_path) {
        char id[NSR_RUN_ID_MAX];
        nsr_run_id_new(id);
        nsr_error err = { 0 };
        int fd = nsr_run_create(f->state_fd, id, 1, &err);
        ck_assert_msg(fd >= 0, "%s", err.msg);
        if (ret_path)
                *ret_path = nsr_asprintf("%s/runs/%s", f->state, id);
        return fd;
}

static int fx_undo(fixture *f, int run_fd, int undo_run_fd, bool force, nsr_undo_result *res, nsr_error *err) {
        nsr_undo_opts o = {
                .project_fd = f->project_fd,
                .project_path = f->project,
                .run_fd = run_fd,
                .project_index = 0,
                .undo_run_fd = undo_run_fd,
                .force = force,
        };
        return nsr_commit_undo(&o, res, err);
}

static char *journal_tail(int run_fd) {
        _cleanup_free_ char *s = get(run_fd, "journal/p0");
        ck_assert_ptr_nonnull(s);
        size_t n = strlen(s);
        while (n > 0 && s[n - 1] == '\n')
                s[--n] = '\0';
        const char *l = strrchr(s, '\n');
        return nsr_strdup(l ? l + 1 : s);
}

/* ---- a scenario with every kind of change, used by several tests ------------------------ */

/* Ten steps: modified, created, deleted file, deleted dir, created dir (one
 * step), file->dir, dir->symlink, symlink retarget, dir metadata, odd name. */
#define ODD "we\nird\xff"

static void scenario_project(fixture *f) {
        int p = f->project_fd;
        put(p, "mod.txt", "old mod\n", 0644);
        put(p, "del.txt", "to delete\n", 0644);
        put(p, "deldir/a/b.txt", "deep\n", 0644);
        put(p, "deldir/c.txt", "c\n", 0600);
        put(p, "t2f", "file to become a dir\n", 0644);
        put(p, "d2l/x", "x in a dir\n", 0644);
        put_link(p, "lnk", "old-target");
        put_dir(p, "meta", 0755);
        put(p, "meta/keep", "kept\n", 0644);
        put(p, "sub/" ODD, "odd old\n", 0644);
        put(p, "untouched", "same\n", 0644);
}

static void scenario_changes(fixture *f) {
        int u = f->upper_fd;
        put(u, "mod.txt", "new mod\n", 0644);
        fx_change(f, "mod.txt", NSR_CHANGE_MODIFIED);
        put(u, "new.txt", "created\n", 0640);
        fx_change(f, "new.txt", NSR_CHANGE_CREATED);
        fx_change(f, "del.txt", NSR_CHANGE_DELETED);
        fx_change(f, "deldir", NSR_CHANGE_DELETED);
        put(u, "newdir/one", "1\n", 0644);
        put(u, "newdir/two/three", "3\n", 0644);
        fx_change(f, "newdir", NSR_CHANGE_CREATED);
        fx_change(f, "newdir/one", NSR_CHANGE_CREATED);
        fx_change(f, "newdir/two", NSR_CHANGE_CREATED);
        fx_change(f, "newdir/two/three", NSR_CHANGE_CREATED);
        put(u, "t2f/inside", "now a dir\n", 0644);
        fx_change(f, "t2f", NSR_CHANGE_TYPE_CHANGED);
        fx_change(f, "t2f/inside", NSR_CHANGE_CREATED);
        put_link(u, "d2l", "somewhere");
        fx_change(f, "d2l", NSR_CHANGE_TYPE_CHANGED);
        put_link(u, "lnk", "new-target");
        fx_change(f, "lnk", NSR_CHANGE_MODIFIED);
        put_dir(u, "meta", 0700);
        fx_change(f, "meta", NSR_CHANGE_METADATA_CHANGED);
        put_dir(u, "sub", 0755);
        put(u, "sub/" ODD, "odd new\n", 0644);
        fx_change(f, "sub/" ODD, NSR_CHANGE_MODIFIED);
}

static const char *const scenario_paths[] = {
        "mod.txt",    "new.txt", "del.txt", "deldir", "deldir/a/b.txt", "newdir",     "newdir/two/three", "t2f",
        "t2f/inside", "d2l",     "d2l/x",   "lnk",    "meta",           ("sub/" ODD), "untouched",
};

static void assert_scenario_applied(fixture *f) {
        int p = f->project_fd;
        assert_content(p, "mod.txt", "new mod\n");
        assert_content(p, "new.txt", "created\n");
        ck_assert_uint_eq(mode_at(p, "new.txt") & 07777, 0640);
        assert_content(p, "del.txt", NULL);
        ck_assert(!exists_at(p, "deldir"));
        assert_content(p, "newdir/one", "1\n");
        assert_content(p, "newdir/two/three", "3\n");
        assert_content(p, "t2f/inside", "now a dir\n");
        ck_assert(S_ISLNK(mode_at(p, "d2l")));
        char t[64];
        ssize_t n = readlinkat(p, "lnk", t, sizeof(t) - 1);
        ck_assert_int_gt(n, 0);
        t[n] = '\0';
        ck_assert_str_eq(t, "new-target");
        ck_assert_uint_eq(mode_at(p, "meta") & 07777, 0700);
        assert_content(p, "meta/keep", "kept\n");
        assert_content(p, "sub/" ODD, "odd new\n");
        assert_content(p, "untouched", "same\n");
}

/* ---- tests: apply ------------------------------------------------------------------------------- */

START_TEST(test_changed_after) {
        struct timespec start = { .tv_sec = 1000, .tv_nsec = 500000001 };
#define TS(s, ns) ((struct timespec){ .tv_sec = (s), .tv_nsec = (ns) })
        /* nanosecond timestamps: only after (or at) start */
        ck_assert(!nsr_commit_changed_after(TS(1000, 500000000 - 1), start));
        ck_assert(!nsr_commit_changed_after(TS(999, 999999999), start));
        ck_assert(nsr_commit_changed_after(TS(1000, 500000001), start));
        ck_assert(nsr_commit_changed_after(TS(1000, 500000003), start));
        ck_assert(nsr_commit_changed_after(TS(1001, 1), start));
        /* truncated: 1 s (or FAT's 2 s) granules that reach past start */
        ck_assert(nsr_commit_changed_after(TS(1000, 0), start));
        ck_assert(nsr_commit_changed_after(TS(999, 0), start));
        ck_assert(!nsr_commit_changed_after(TS(998, 0), start));
        /* 100 ns (NTFS, SMB): 500000000 is a 100 ms granule, up to 600000000 */
        ck_assert(nsr_commit_changed_after(TS(1000, 500000000), start));
        ck_assert(!nsr_commit_changed_after(TS(1000, 400000000), start));
        ck_assert(!nsr_commit_changed_after(TS(1000, 499999900), start));
        ck_assert(nsr_commit_changed_after(TS(1000, 499999910), TS(1000, 499999911)));
#undef TS
}
END_TEST

/* Writes a one-step plan on the project root (".") and reads it back. */
static int root_journal(nsr_step_op op, bool chown, nsr_journal **ret) {
        _cleanup_(nsr_journal_freep) nsr_journal *j = nsr_journal_new();
        nsr_journal_token_new(j->token);
        j->project = nsr_strdup("/p");
        nsr_step *s = nsr_journal_add_step(j, op, ".");
        s->orig = (nsr_ident){ .set = true, .dev = 1, .ino = 2, .type = NSR_ENTRY_DIR, .mode = 0755 };
        if (op != NSR_STEP_META)
                s->new_id = s->orig;
        s->old_mode = 0755;
        s->new_mode = 0700;
        s->chown = chown;
        _cleanup_close_ int fd = memfd_create("journal", MFD_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_journal_write_plan(fd, j, &err), 0);
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        return nsr_journal_read(fd, false, ret, &err);
}

/* The root's "." is a journal path for a meta step of its mode only. */
START_TEST(test_journal_root_step) {
        nsr_journal *j = NULL;
        ck_assert_int_eq(root_journal(NSR_STEP_META, false, &j), 0);
        ck_assert(j->plan_valid);
        ck_assert_uint_eq(j->n_steps, 1);
        ck_assert_str_eq(j->steps[0].path, ".");
        ck_assert_uint_eq(j->steps[0].new_mode, 0700);
        j = nsr_journal_free(j);
        static const nsr_step_op bad[] = { NSR_STEP_PLACE, NSR_STEP_REPLACE, NSR_STEP_REMOVE };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = root_journal(bad[i], false, &j);
                ck_assert_msg(r < 0 || !j->plan_valid, "a %s step on '.' read back", nsr_step_op_to_string(bad[i]));
                j = nsr_journal_free(j);
        }
        int r = root_journal(NSR_STEP_META, true, &j);
        ck_assert_msg(r < 0 || !j->plan_valid, "a chown of '.' read back");
        nsr_journal_free(j);
}
END_TEST

START_TEST(test_apply_scenario) {
        fixture f;
        fx_init(&f);
        scenario_project(&f);
        fx_start_run(&f);
        scenario_changes(&f);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.n_conflicts, 0);
        ck_assert_uint_eq(res.applied, nsr_changeset_size(f.cs));
        ck_assert_uint_eq(res.stats.steps, 10);
        ck_assert_uint_eq(res.stats.copied, 0);
        assert_scenario_applied(&f);
        /* Originals went to the backup, whole: nothing was unlinked. */
        int b = open_rel(f.run_fd, "backup/p0");
        assert_content(b, "mod.txt", "old mod\n");
        assert_content(b, "del.txt", "to delete\n");
        assert_content(b, "deldir/a/b.txt", "deep\n");
        assert_content(b, "deldir/c.txt", "c\n");
        ck_assert_uint_eq(mode_at(b, "deldir/c.txt") & 07777, 0600);
        assert_content(b, "t2f", "file to become a dir\n");
        assert_content(b, "d2l/x", "x in a dir\n");
        assert_content(b, "sub/" ODD, "odd old\n");
        ck_assert(S_ISLNK(mode_at(b, "lnk")));
        /* The metadata change was made in place: no backup of the dir. */
        ck_assert(!exists_at(b, "meta"));
        close(b);
        _cleanup_free_ char *tail = journal_tail(f.run_fd);
        ck_assert_str_eq(tail, "swept");
        _cleanup_free_ char *j = get(f.run_fd, "journal/p0");
        ck_assert_ptr_nonnull(strstr(j, "\ndone\n"));
        /* The odd name is hex in the journal: no raw newline or 0xff. */
        ck_assert_ptr_null(strstr(j, "\xff"));
        _cleanup_free_ char *hex = nsr_hex_encode("sub/" ODD, strlen("sub/" ODD));
        ck_assert_ptr_nonnull(strstr(j, hex));
        _cleanup_free_ char *applied = get(f.run_fd, "applied/p0");
        ck_assert_ptr_nonnull(applied);
        ck_assert(nsr_startswith(applied, "nsrun-applied 1\n"));
        ck_assert(nsr_endswith(applied, "end\n"));
        /* A second apply of the same run is refused. */
        nsr_commit_result again = { 0 };
        nsr_error err = { 0 };
        nsr_commit_opts o = fx_opts(&f);
        ck_assert_int_eq(nsr_commit_apply(f.cs, &o, &again, &err), -EEXIST);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_created_dir_one_rename) {
        fixture f;
        fx_init(&f);
        put(f.project_fd, "keep", "k\n", 0644);
        fx_start_run(&f);
        put(f.upper_fd, "tree/a/b/c", "c\n", 0644);
        put(f.upper_fd, "tree/a/d", "d\n", 0644);
        put_link(f.upper_fd, "tree/l", "a/d");
        fx_change(&f, "tree", NSR_CHANGE_CREATED);
        fx_change(&f, "tree/a", NSR_CHANGE_CREATED);
        fx_change(&f, "tree/a/b", NSR_CHANGE_CREATED);
        fx_change(&f, "tree/a/b/c", NSR_CHANGE_CREATED);
        fx_change(&f, "tree/a/d", NSR_CHANGE_CREATED);
        fx_change(&f, "tree/l", NSR_CHANGE_CREATED);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.stats.steps, 1);
        ck_assert_uint_eq(res.stats.renames, 1);
        ck_assert_uint_eq(res.applied, 6);
        assert_content(f.project_fd, "tree/a/b/c", "c\n");
        ck_assert(!exists_at(f.upper_fd, "tree"));
        /* Fingerprints cover the whole tree. */
        _cleanup_free_ char *applied = get(f.run_fd, "applied/p0");
        size_t lines = 0;
        for (const char *s = applied; *s; s++)
                lines += *s == '\n';
        ck_assert_uint_eq(lines, 6 + 2);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_excluded_entries_set_aside) {
        /* An upper entry the change set leaves out (a protected path) is not
         * applied, and does not stop the dir from moving whole. */
        fixture f;
        fx_init(&f);
        fx_start_run(&f);
        put(f.upper_fd, "pkg/ok", "ok\n", 0644);
        put(f.upper_fd, "pkg/.git/hooks/post-commit", "evil\n", 0755);
        fx_change(&f, "pkg", NSR_CHANGE_CREATED);
        fx_change(&f, "pkg/ok", NSR_CHANGE_CREATED);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.stats.renames, 1);
        assert_content(f.project_fd, "pkg/ok", "ok\n");
        ck_assert(!exists_at(f.project_fd, "pkg/.git"));
        assert_content(f.run_fd, "excluded/p0/pkg/.git/hooks/post-commit", "evil\n");
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

/* A fresh fixture whose run created nd/ with a file nd/x and a fifo nd/f
 * in it; nd itself is listed as created. */
static void fx_new_dir_with_fifo(fixture *f) {
        fx_init(f);
        fx_start_run(f);
        put(f->upper_fd, "nd/x", "x\n", 0644);
        ck_assert_int_eq(mkfifoat(f->upper_fd, "nd/f", 0644), 0);
        fx_change(f, "nd", NSR_CHANGE_CREATED);
}

START_TEST(test_special_fails_closed) {
        /* issue 23.5: the protect stage drops fifos, sockets and device
         * nodes; a change set that still has one fails the apply, which
         * leaves the project as it was. */
        fixture f;
        fx_init(&f);
        put(f.project_fd, "package.json", "{}\n", 0644);
        fx_start_run(&f);
        ck_assert_int_eq(mkfifoat(f.upper_fd, "package.json", 0644), 0);
        fx_change(&f, "package.json", NSR_CHANGE_TYPE_CHANGED);
        ck_assert_int_eq(f.cs->changes[0].type, NSR_ENTRY_OTHER);
        nsr_commit_result res = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(fx_apply(&f, &res, &err), -EPERM);
        ck_assert_ptr_nonnull(strstr(err.msg, "fifo, socket or device node"));
        assert_content(f.project_fd, "package.json", "{}\n");
        nsr_commit_result_done(&res);
        fx_done(&f);

        /* Inside a new dir that moves whole: listed, it fails; left out
         * (dropped), the dir moves and the fifo is set aside. */
        fx_new_dir_with_fifo(&f);
        fx_change(&f, "nd/f", NSR_CHANGE_CREATED);
        fx_change(&f, "nd/x", NSR_CHANGE_CREATED);
        res = (nsr_commit_result){ 0 };
        ck_assert_int_lt(fx_apply(&f, &res, &err), 0);
        ck_assert(!exists_at(f.project_fd, "nd"));
        nsr_commit_result_done(&res);
        fx_done(&f);

        fx_new_dir_with_fifo(&f);
        fx_change(&f, "nd/x", NSR_CHANGE_CREATED);
        res = (nsr_commit_result){ 0 };
        fx_apply_ok(&f, &res);
        assert_content(f.project_fd, "nd/x", "x\n");
        ck_assert(!exists_at(f.project_fd, "nd/f"));
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_merge_created_dir) {
        /* The host made the same dir during the run: not a conflict, the
         * children apply one by one and the host's dir is kept. */
        fixture f;
        fx_init(&f);
        fx_start_run(&f);
        put(f.upper_fd, "m/a", "from sandbox\n", 0644);
        fx_change(&f, "m", NSR_CHANGE_CREATED);
        fx_change(&f, "m/a", NSR_CHANGE_CREATED);
        put(f.project_fd, "m/host", "from host\n", 0644);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.n_conflicts, 0);
        assert_content(f.project_fd, "m/a", "from sandbox\n");
        assert_content(f.project_fd, "m/host", "from host\n");
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_opaque_dir) {
        /* rm -rf d; mkdir d; echo > d/new in the sandbox: overlay makes d
         * opaque; the change set lists the deleted and created children. */
        fixture f;
        fx_init(&f);
        put(f.project_fd, "d/old1", "1\n", 0644);
        put(f.project_fd, "d/old2/x", "x\n", 0644);
        fx_start_run(&f);
        put(f.upper_fd, "d/new", "new\n", 0644);
        _cleanup_free_ char *ud = nsr_asprintf("%s/p0/upper/d", f.run_path);
        if (has_user_xattrs(ud))
                ck_assert_int_eq(setxattr(ud, "user.overlay.opaque", "y", 1, 0), 0);
        ck_assert_int_eq(fchmodat(f.upper_fd, "d", 0755, 0), 0);
        fx_change(&f, "d/old1", NSR_CHANGE_DELETED);
        fx_change(&f, "d/old2", NSR_CHANGE_DELETED);
        fx_change(&f, "d/old2/x", NSR_CHANGE_DELETED);
        fx_change(&f, "d/new", NSR_CHANGE_CREATED);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.n_conflicts, 0);
        ck_assert_uint_eq(res.stats.steps, 3);
        assert_content(f.project_fd, "d/new", "new\n");
        ck_assert(!exists_at(f.project_fd, "d/old1"));
        ck_assert(!exists_at(f.project_fd, "d/old2"));
        _cleanup_free_ char *d = nsr_asprintf("%s/d", f.project);
        char v[8];
        ck_assert_int_lt(getxattr(d, "user.overlay.opaque", v, sizeof(v)), 0);
        assert_content(f.run_fd, "backup/p0/d/old2/x", "x\n");
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_type_changes) {
        fixture f;
        fx_init(&f);
        put(f.project_fd, "f2d", "was a file\n", 0644);
        put(f.project_fd, "d2l/deep/x", "x\n", 0644);
        put_link(f.project_fd, "l2f", "elsewhere");
        fx_start_run(&f);
        put(f.upper_fd, "f2d/child", "child\n", 0644);
        fx_change(&f, "f2d", NSR_CHANGE_TYPE_CHANGED);
        fx_change(&f, "f2d/child", NSR_CHANGE_CREATED);
        put_link(f.upper_fd, "d2l", "target");
        fx_change(&f, "d2l", NSR_CHANGE_TYPE_CHANGED);
        put(f.upper_fd, "l2f", "now a file\n", 0644);
        fx_change(&f, "l2f", NSR_CHANGE_TYPE_CHANGED);
        /* capture may also list the old dir's children as deleted */
        nsr_change c = { .path = (char *) "d2l/deep", .kind = NSR_CHANGE_DELETED };
        fill_old(f.project_fd, "d2l/deep", &c.old);
        c.type = NSR_ENTRY_DIR;
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_changeset_add(f.cs, &c, &err), 0);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.n_conflicts, 0);
        assert_content(f.project_fd, "f2d/child", "child\n");
        ck_assert(S_ISLNK(mode_at(f.project_fd, "d2l")));
        assert_content(f.project_fd, "l2f", "now a file\n");
        int b = open_rel(f.run_fd, "backup/p0");
        assert_content(b, "f2d", "was a file\n");
        assert_content(b, "d2l/deep/x", "x\n");
        ck_assert(S_ISLNK(mode_at(b, "l2f")));
        close(b);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_metadata_changes) {
        fixture f;
        fx_init(&f);
        put_dir(f.project_fd, "d", 0755);
        put(f.project_fd, "d/in", "in\n", 0644);
        _cleanup_free_ char *d = nsr_asprintf("%s/d", f.project);
        bool xattrs = has_user_xattrs(d);
        if (xattrs)
                ck_assert_int_eq(setxattr(d, "user.foo", "old", 3, 0), 0);
        put(f.project_fd, "file", "same content\n", 0644);
        fx_start_run(&f);
        put_dir(f.upper_fd, "d", 0750);
        _cleanup_free_ char *ud = nsr_asprintf("%s/p0/upper/d", f.run_path);
        if (xattrs) {
                ck_assert_int_eq(setxattr(ud, "user.foo", "new", 3, 0), 0);
                ck_assert_int_eq(setxattr(ud, "user.bar", "added", 5, 0), 0);
                ck_assert_int_eq(setxattr(ud, "user.overlay.opaque", "y", 1, 0), 0);
        }
        fx_change(&f, "d", NSR_CHANGE_METADATA_CHANGED);
        put(f.upper_fd, "file", "same content\n", 0600);
        fx_change(&f, "file", NSR_CHANGE_METADATA_CHANGED);
        struct stat before;
        ck_assert_int_eq(fstatat(f.project_fd, "d", &before, 0), 0);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        struct stat after;
        ck_assert_int_eq(fstatat(f.project_fd, "d", &after, 0), 0);
        ck_assert_uint_eq(after.st_ino, before.st_ino); /* changed in place */
        ck_assert_uint_eq(after.st_mode & 07777, 0750);
        ck_assert_uint_eq(mode_at(f.project_fd, "file") & 07777, 0600);
        assert_content(f.project_fd, "d/in", "in\n");
        if (xattrs) {
                char v[16] = { 0 };
                ck_assert_int_eq(getxattr(d, "user.foo", v, sizeof(v)), 3);
                ck_assert_str_eq(v, "new");
                ck_assert_int_eq(getxattr(d, "user.bar", v, sizeof(v)), 5);
                ck_assert_int_lt(getxattr(d, "user.overlay.opaque", v, sizeof(v)), 0);
        }
        /* Undo puts the old metadata back. */
        int urun = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, urun, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        ck_assert_uint_eq(mode_at(f.project_fd, "d") & 07777, 0755);
        ck_assert_uint_eq(mode_at(f.project_fd, "file") & 07777, 0644);
        if (xattrs) {
                char v[16] = { 0 };
                ck_assert_int_eq(getxattr(d, "user.foo", v, sizeof(v)), 3);
                ck_assert_str_eq(v, "old");
                ck_assert_int_lt(getxattr(d, "user.bar", v, sizeof(v)), 0);
        } else
                fprintf(stderr, "check-commit: SKIP xattr checks: the temp file system has no user xattrs\n");
        nsr_undo_result_done(&ur);
        close(urun);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_privileges_stripped) {
        fixture f;
        fx_init(&f);
        put(f.project_fd, "tool", "old tool\n", 0755);
        fx_start_run(&f);
        put(f.upper_fd, "suid", "#!/bin/sh\n", 04755);
        put(f.upper_fd, "sgid", "#!/bin/sh\n", 02775);
        put(f.upper_fd, "tool", "new tool\n", 06755);
        put(f.upper_fd, "sdir/x", "x\n", 04755);
        fx_change(&f, "suid", NSR_CHANGE_CREATED);
        fx_change(&f, "sgid", NSR_CHANGE_CREATED);
        fx_change(&f, "tool", NSR_CHANGE_MODIFIED);
        fx_change(&f, "sdir", NSR_CHANGE_CREATED);
        fx_change(&f, "sdir/x", NSR_CHANGE_CREATED);
        _cleanup_free_ char *x = nsr_asprintf("%s/p0/upper/suid", f.run_path);
        _cleanup_free_ char *y = nsr_asprintf("%s/p0/upper/sdir/x", f.run_path);
        bool xattrs = has_user_xattrs(x);
        if (xattrs) {
                ck_assert_int_eq(setxattr(x, "user.overlay.origin", "o", 1, 0), 0);
                ck_assert_int_eq(setxattr(x, "user.foo", "kept", 4, 0), 0);
                ck_assert_int_eq(setxattr(y, "user.overlay.impure", "y", 1, 0), 0);
                ck_assert_int_eq(setxattr(y, "user.foo", "kept too", 8, 0), 0);
        } else
                fprintf(stderr, "check-commit: SKIP user.overlay.* stripping: no user xattrs here\n");
        /* security.capability: version 2, cap_net_raw permitted. Root only. */
        static const unsigned char cap[20] = { 0x00, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00 };
        bool caps = geteuid() == 0 && setxattr(y, "security.capability", cap, sizeof(cap), 0) == 0;
        if (!caps)
                fprintf(stderr, "check-commit: SKIP security.capability stripping: needs root\n");
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(mode_at(f.project_fd, "suid") & 07777, 0755);
        ck_assert_uint_eq(mode_at(f.project_fd, "sgid") & 07777, 0775);
        ck_assert_uint_eq(mode_at(f.project_fd, "tool") & 07777, 0755);
        ck_assert_uint_eq(mode_at(f.project_fd, "sdir/x") & 07777, 0755);
        _cleanup_free_ char *lx = nsr_asprintf("%s/suid", f.project);
        _cleanup_free_ char *ly = nsr_asprintf("%s/sdir/x", f.project);
        char v[32] = { 0 };
        if (xattrs) {
                ck_assert_int_lt(getxattr(lx, "user.overlay.origin", v, sizeof(v)), 0);
                ck_assert_int_eq(getxattr(lx, "user.foo", v, sizeof(v)), 4);
                ck_assert_int_lt(getxattr(ly, "user.overlay.impure", v, sizeof(v)), 0);
                ck_assert_int_eq(getxattr(ly, "user.foo", v, sizeof(v)), 8);
        }
        if (caps)
                ck_assert_int_lt(getxattr(ly, "security.capability", v, sizeof(v)), 0);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_read_only_dirs) {
        /* A read-only dir created by the sandbox moves in (as a non-root
         * user, moving a dir to another parent needs u+w on it), and a file
         * changes in a read-only project dir. Modes stay as they were. */
        fixture f;
        fx_init(&f);
        put(f.project_fd, "ro/f", "old\n", 0644);
        ck_assert_int_eq(fchmodat(f.project_fd, "ro", 0555, 0), 0);
        fx_start_run(&f);
        put(f.upper_fd, "ro/f", "new\n", 0644);
        put(f.upper_fd, "rodir/sub/x", "x\n", 0444);
        ck_assert_int_eq(fchmodat(f.upper_fd, "rodir/sub", 0555, 0), 0);
        ck_assert_int_eq(fchmodat(f.upper_fd, "rodir", 0555, 0), 0);
        fx_change(&f, "ro/f", NSR_CHANGE_MODIFIED);
        fx_change(&f, "rodir", NSR_CHANGE_CREATED);
        fx_change(&f, "rodir/sub", NSR_CHANGE_CREATED);
        fx_change(&f, "rodir/sub/x", NSR_CHANGE_CREATED);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        assert_content(f.project_fd, "ro/f", "new\n");
        assert_content(f.project_fd, "rodir/sub/x", "x\n");
        ck_assert_uint_eq(mode_at(f.project_fd, "ro") & 07777, 0555);
        ck_assert_uint_eq(mode_at(f.project_fd, "rodir") & 07777, 0555);
        ck_assert_uint_eq(mode_at(f.project_fd, "rodir/sub") & 07777, 0555);
        int u = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, u, false, &ur, &err) == 0, "%s", err.msg);
        assert_content(f.project_fd, "ro/f", "old\n");
        ck_assert(!exists_at(f.project_fd, "rodir"));
        ck_assert_uint_eq(mode_at(f.project_fd, "ro") & 07777, 0555);
        nsr_undo_result_done(&ur);
        close(u);
        ck_assert_int_eq(fchmodat(f.project_fd, "ro", 0755, 0), 0);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_odd_names) {
        fixture f;
        fx_init(&f);
        static const char *const names[] = {
                "line\nbreak", "\xff\xfe", "sp ace", "back\\slash", "tab\there", "\x01\x7f"
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                put(f.project_fd, names[i], "old\n", 0644);
        fx_start_run(&f);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                put(f.upper_fd, names[i], "new\n", 0644);
                fx_change(&f, names[i], NSR_CHANGE_MODIFIED);
                _cleanup_free_ char *d = nsr_asprintf("dir\n%zu\xff/f\n", i);
                put(f.upper_fd, d, "created\n", 0644);
        }
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *d = nsr_asprintf("dir\n%zu\xff", i);
                _cleanup_free_ char *c = nsr_asprintf("dir\n%zu\xff/f\n", i);
                fx_change(&f, d, NSR_CHANGE_CREATED);
                fx_change(&f, c, NSR_CHANGE_CREATED);
        }
        _cleanup_free_ char *before = snapshot(f.project_fd);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                assert_content(f.project_fd, names[i], "new\n");
                _cleanup_free_ char *c = nsr_asprintf("dir\n%zu\xff/f\n", i);
                assert_content(f.project_fd, c, "created\n");
        }
        /* And back. */
        int urun = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, urun, false, &ur, &err) == 0, "%s", err.msg);
        _cleanup_free_ char *after = snapshot(f.project_fd);
        ck_assert_str_eq(after, before);
        nsr_undo_result_done(&ur);
        close(urun);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

/* ---- tests: conflicts ----------------------------------------------------------------------------- */

START_TEST(test_conflicts) {
        fixture f;
        fx_init(&f);
        int p = f.project_fd, u = f.upper_fd;
        put(p, "edited", "orig\n", 0644);
        put(p, "gone", "orig\n", 0644);
        put(p, "both-deleted", "orig\n", 0644);
        put(p, "dd/x", "x\n", 0644);
        put(p, "ok", "orig\n", 0644);
        put(p, "later", "orig\n", 0644);
        fx_start_run(&f);
        /* host edit during the run, before capture */
        put(p, "later", "host edit during the run\n", 0644);
        put(u, "edited", "sandbox\n", 0644);
        fx_change(&f, "edited", NSR_CHANGE_MODIFIED);
        put(u, "later", "sandbox later\n", 0644);
        fx_change(&f, "later", NSR_CHANGE_MODIFIED);
        put(u, "created", "sandbox created\n", 0644);
        fx_change(&f, "created", NSR_CHANGE_CREATED);
        put(u, "gone", "sandbox gone\n", 0644);
        fx_change(&f, "gone", NSR_CHANGE_MODIFIED);
        fx_change(&f, "both-deleted", NSR_CHANGE_DELETED);
        fx_change(&f, "dd", NSR_CHANGE_DELETED);
        fx_change(&f, "dd/x", NSR_CHANGE_DELETED);
        put(u, "cdir/a", "sandbox a\n", 0644);
        fx_change(&f, "cdir", NSR_CHANGE_CREATED);
        fx_change(&f, "cdir/a", NSR_CHANGE_CREATED);
        put(u, "ok", "sandbox ok\n", 0644);
        fx_change(&f, "ok", NSR_CHANGE_MODIFIED);
        /* host changes after capture */
        put(p, "edited", "host edit\n", 0644);
        put(p, "created", "host created\n", 0644);
        ck_assert_int_eq(unlinkat(p, "gone", 0), 0);
        ck_assert_int_eq(unlinkat(p, "both-deleted", 0), 0);
        put(p, "dd/host-new", "host file in a dir the sandbox deletes\n", 0644);
        put(p, "cdir", "host made a file where the sandbox made a dir\n", 0644);

        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.n_conflicts, 9);
        assert_content(p, "ok", "sandbox ok\n");
        const nsr_commit_conflict *c;

        c = find_conflict(&res, "edited");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->reason, "changed on the host during the run");
        assert_content(p, "edited", "host edit\n");
        assert_content_abs(c->kept_at, "sandbox\n");
        _cleanup_free_ char *want = nsr_asprintf("%s/conflict/p0/edited", f.run_path);
        ck_assert_str_eq(c->kept_at, want);

        c = find_conflict(&res, "later");
        ck_assert_ptr_nonnull(c);
        assert_content(p, "later", "host edit during the run\n");
        assert_content_abs(c->kept_at, "sandbox later\n");

        c = find_conflict(&res, "created");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->reason, "created on the host during the run");
        assert_content(p, "created", "host created\n");
        assert_content_abs(c->kept_at, "sandbox created\n");

        c = find_conflict(&res, "gone");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->reason, "deleted on the host during the run");
        ck_assert(!exists_at(p, "gone"));
        assert_content_abs(c->kept_at, "sandbox gone\n");

        c = find_conflict(&res, "both-deleted");
        ck_assert_ptr_nonnull(c);
        ck_assert_ptr_null(c->kept_at);

        c = find_conflict(&res, "dd");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->reason, "the host changed 'dd/host-new' inside it during the run");
        ck_assert_ptr_null(c->kept_at);
        assert_content(p, "dd/x", "x\n");
        assert_content(p, "dd/host-new", "host file in a dir the sandbox deletes\n");
        c = find_conflict(&res, "dd/x");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->reason, "its parent dir 'dd' conflicted and was not applied");

        c = find_conflict(&res, "cdir");
        ck_assert_ptr_nonnull(c);
        assert_content(p, "cdir", "host made a file where the sandbox made a dir\n");
        c = find_conflict(&res, "cdir/a");
        ck_assert_ptr_nonnull(c);
        ck_assert_ptr_nonnull(strstr(c->reason, "parent dir"));
        ck_assert_ptr_nonnull(c->kept_at);
        assert_content_abs(c->kept_at, "sandbox a\n");
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_symlink_attack) {
        /* The host (or anything) swaps a project dir for a symlink to a dir
         * outside before the apply: nothing may be written outside. */
        fixture f;
        fx_init(&f);
        _cleanup_free_ char *outside = nsr_asprintf("%s/outside", f.base);
        ck_assert_int_eq(mkdir(outside, 0755), 0);
        int out = open(outside, O_PATH | O_DIRECTORY | O_CLOEXEC);
        put(out, "f", "outside f\n", 0644);
        put(f.project_fd, "sub/f", "inside f\n", 0644);
        put(f.project_fd, "sub/g", "inside g\n", 0644);
        fx_start_run(&f);
        put(f.upper_fd, "sub/f", "sandbox f\n", 0644);
        put(f.upper_fd, "sub/new", "sandbox new\n", 0644);
        fx_change(&f, "sub/f", NSR_CHANGE_MODIFIED);
        fx_change(&f, "sub/new", NSR_CHANGE_CREATED);
        fx_change(&f, "sub/g", NSR_CHANGE_DELETED);
        ck_assert_int_eq(renameat(f.project_fd, "sub", f.project_fd, "sub.real"), 0);
        ck_assert_int_eq(symlinkat(outside, f.project_fd, "sub"), 0);
        _cleanup_free_ char *before = snapshot(out);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        _cleanup_free_ char *after = snapshot(out);
        ck_assert_str_eq(after, before);
        ck_assert_uint_eq(res.n_conflicts, 3);
        const nsr_commit_conflict *c = find_conflict(&res, "sub/f");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(c->reason, "a parent dir was replaced by a symlink on the host");
        assert_content(f.project_fd, "sub.real/f", "inside f\n");
        assert_content(f.project_fd, "sub.real/g", "inside g\n");
        close(out);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_upper_symlink_refused) {
        /* A symlink in the upper dir cannot lead the apply anywhere either:
         * the apply fails before the project changes. */
        fixture f;
        fx_init(&f);
        put(f.project_fd, "a", "a\n", 0644);
        fx_start_run(&f);
        _cleanup_free_ char *outside = nsr_asprintf("%s/outside", f.base);
        ck_assert_int_eq(mkdir(outside, 0755), 0);
        int out = open(outside, O_PATH | O_DIRECTORY | O_CLOEXEC);
        put(out, "secret", "outside\n", 0644);
        put(f.upper_fd, "a", "new a\n", 0644);
        fx_change(&f, "a", NSR_CHANGE_MODIFIED);
        ck_assert_int_eq(symlinkat(outside, f.upper_fd, "evil"), 0);
        ck_assert_int_eq(mkdirat(f.project_fd, "evil", 0755), 0);
        nsr_change c = { .path = (char *) "evil/secret", .kind = NSR_CHANGE_CREATED, .type = NSR_ENTRY_FILE };
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_changeset_add(f.cs, &c, &err), 0);
        _cleanup_free_ char *before = snapshot(f.project_fd);
        nsr_commit_result res = { 0 };
        ck_assert_int_lt(fx_apply(&f, &res, &err), 0);
        _cleanup_free_ char *after = snapshot(f.project_fd);
        ck_assert_str_eq(after, before);
        assert_content(out, "secret", "outside\n");
        close(out);
        fx_done(&f);
}
END_TEST

/* ---- tests: rollback, crashes, recovery ---------------------------------------------------------- */

#ifdef NSR_TEST_HOOKS
#define HOOKS 1
#else
#define HOOKS 0
#endif

static bool need_hooks(const char *what) {
        if (HOOKS)
                return true;
        fprintf(stderr,
                "check-commit: SKIP %s: fault-injection hooks are not compiled in "
                "(./configure --enable-test-hooks)\n",
                what);
        return false;
}

static void scenario_setup(fixture *f, char **before, char **upper_before) {
        scenario_project(f);
        fx_start_run(f);
        scenario_changes(f);
        ck_assert_int_eq(nsr_changeset_sort(f->cs, NULL), 0);
        *before = snapshot(f->project_fd);
        *upper_before = snapshot(f->upper_fd);
}

START_TEST(test_rollback_enospc) {
        if (!need_hooks("rollback on injected ENOSPC"))
                return;
        for (int k = 1; k <= 10; k++) {
                fixture f;
                fx_init(&f);
                _cleanup_free_ char *before = NULL, *upper_before = NULL;
                scenario_setup(&f, &before, &upper_before);
                char v[16];
                snprintf(v, sizeof(v), "%d", k);
                setenv("NSRUN_TEST_ENOSPC_AT", v, 1);
                nsr_commit_result res = { 0 };
                nsr_error err = { 0 };
                int r = fx_apply(&f, &res, &err);
                unsetenv("NSRUN_TEST_ENOSPC_AT");
                ck_assert_msg(r == -ENOSPC, "step %d: %d %s", k, r, err.msg);
                ck_assert_ptr_null(res.conflicts);
                _cleanup_free_ char *after = snapshot(f.project_fd);
                ck_assert_msg(streq(after, before), "step %d: project differs:\n%s\nvs\n%s", k, after, before);
                _cleanup_free_ char *upper_after = snapshot(f.upper_fd);
                ck_assert_msg(streq(upper_after, upper_before), "step %d: upper differs", k);
                _cleanup_free_ char *tail = journal_tail(f.run_fd);
                ck_assert_str_eq(tail, "rolled-back");
                ck_assert(!exists_at(f.run_fd, "applied/p0"));
                /* The run can be applied again. */
                fx_apply_ok(&f, &res);
                ck_assert_uint_eq(res.n_conflicts, 0);
                assert_scenario_applied(&f);
                nsr_commit_result_done(&res);
                fx_done(&f);
        }
}
END_TEST

static int wait_child(pid_t pid) {
        int status;
        while (waitpid(pid, &status, 0) < 0)
                ck_assert_int_eq(errno, EINTR);
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

/* Applies in a child that dies after step k; returns its exit code. */
static int crash_apply(fixture *f, const char *hook, int k) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char v[16];
                snprintf(v, sizeof(v), "%d", k);
                setenv(hook, v, 1);
                nsr_commit_result res = { 0 };
                nsr_error err = { 0 };
                nsr_commit_opts o = fx_opts(f);
                int r = nsr_commit_apply(f->cs, &o, &res, &err);
                if (r < 0)
                        fprintf(stderr, "apply failed: %s\n", err.msg);
                _exit(r < 0 ? 1 : 0);
        }
        return wait_child(pid);
}

static int crash_recover(fixture *f, int k) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char v[16];
                snprintf(v, sizeof(v), "%d", k);
                setenv("NSRUN_TEST_CRASH_RECOVER_AT", v, 1);
                size_t n = 0;
                nsr_error err = { 0 };
                int r = nsr_commit_recover(f->state_fd, f->project, f->project_fd, &n, &err);
                if (r < 0)
                        fprintf(stderr, "recover failed: %s\n", err.msg);
                _exit(r < 0 ? 1 : 0);
        }
        return wait_child(pid);
}

/* Each path is its old or its new self, never something in between. */
static void assert_each_old_or_new(fixture *f, char **olds, char **news, int k) {
        for (size_t i = 0; i < ELEMENTSOF(scenario_paths); i++) {
                _cleanup_free_ char *now = describe(f->project_fd, scenario_paths[i]);
                ck_assert_msg(streq(now, olds[i]) || streq(now, news[i]),
                              "crash after step %d: %s is neither old (%s) nor new (%s): %s", k, scenario_paths[i],
                              olds[i], news[i], now);
        }
}

static void describe_all(int dirfd, char **ret) {
        for (size_t i = 0; i < ELEMENTSOF(scenario_paths); i++)
                ret[i] = describe(dirfd, scenario_paths[i]);
}

static void free_all(char **v) {
        for (size_t i = 0; i < ELEMENTSOF(scenario_paths); i++)
                free(v[i]);
}

/* The new state of every scenario path, from a reference apply. */
static void scenario_news(char **news) {
        fixture g;
        fx_init(&g);
        scenario_project(&g);
        fx_start_run(&g);
        scenario_changes(&g);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&g, &res);
        describe_all(g.project_fd, news);
        nsr_commit_result_done(&res);
        fx_done(&g);
}

static void crash_test(const char *project_parent) {
        char *news[ELEMENTSOF(scenario_paths)];
        scenario_news(news);
        /* 0: after the journal; 1..10: after each step; 11: after done. */
        for (int k = 0; k <= 11; k++) {
                fixture f;
                fx_init_at(&f, project_parent);
                _cleanup_free_ char *before = NULL, *upper_before = NULL;
                scenario_setup(&f, &before, &upper_before);
                char *olds[ELEMENTSOF(scenario_paths)];
                describe_all(f.project_fd, olds);
                int code = crash_apply(&f, "NSRUN_TEST_CRASH_AT", k);
                ck_assert_msg(code == 99, "step %d: the child exited with %d", k, code);
                assert_each_old_or_new(&f, olds, news, k);
                _cleanup_free_ char *mark = nsr_asprintf("%s.p0", f.run_id);
                _cleanup_free_ char *marks = pending_marks(&f);
                ck_assert_msg(streq(marks, mark), "crash after step %d: pending/ holds '%s'", k, marks);
                size_t n = 99;
                nsr_error err = { 0 };
                ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
                _cleanup_free_ char *marks_after = pending_marks(&f);
                ck_assert_msg(streq(marks_after, ""), "crash after step %d: recovery left '%s'", k, marks_after);
                if (k == 11) {
                        /* done was durable: the apply stands. */
                        ck_assert_uint_eq(n, 0);
                        assert_scenario_applied(&f);
                        _cleanup_free_ char *tail = journal_tail(f.run_fd);
                        ck_assert_str_eq(tail, "swept");
                } else {
                        ck_assert_uint_eq(n, 1);
                        _cleanup_free_ char *after = snapshot(f.project_fd);
                        ck_assert_msg(streq(after, before), "crash after step %d: project differs:\n%s\nvs\n%s", k,
                                      after, before);
                        _cleanup_free_ char *upper_after = snapshot(f.upper_fd);
                        ck_assert_msg(streq(upper_after, upper_before), "crash after step %d: upper differs", k);
                        _cleanup_free_ char *tail = journal_tail(f.run_fd);
                        ck_assert_str_eq(tail, "rolled-back");
                }
                /* Recovery again: nothing more to do. */
                ck_assert_int_eq(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err), 0);
                ck_assert_uint_eq(n, 0);
                free_all(olds);
                fx_done(&f);
        }
        free_all(news);
}

/* The pending index: an apply leaves no mark behind; a recovery reads only
 * the marks, and drops those whose run or journal is gone. */
START_TEST(test_pending_index) {
        fixture f;
        fx_init(&f);
        scenario_project(&f);
        fx_start_run(&f);
        scenario_changes(&f);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        nsr_commit_result_done(&res);
        _cleanup_free_ char *marks = pending_marks(&f);
        ck_assert_str_eq(marks, "");
        ck_assert(exists_at(f.state_fd, "pending"));

        /* A mark for a run that no longer exists, and one for a run that
         * never got its journal: both go. */
        _cleanup_free_ char *gone = nsr_asprintf("pending/%s", "20200101T000000.000Z-abcdef.p0");
        _cleanup_free_ char *nojournal = nsr_asprintf("pending/%s.p1", f.run_id);
        put(f.state_fd, gone, "", 0600);
        put(f.state_fd, nojournal, "", 0600);
        _cleanup_free_ char *two = pending_marks(&f);
        ck_assert_msg(strstr(two, ".p1") && strstr(two, "abcdef"), "marks: %s", two);
        size_t n = 99;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 0);
        _cleanup_free_ char *left = pending_marks(&f);
        ck_assert_str_eq(left, "");

        /* A journal left unfinished but not marked is not read: the index
         * is what a recovery trusts. (It cannot happen: the mark comes
         * first. This shows the scan is gone.) */
        int jfd = openat(f.run_fd, "journal/p0", O_WRONLY | O_TRUNC | O_CLOEXEC);
        ck_assert_int_ge(jfd, 0);
        close(jfd);
        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 0);
        _cleanup_free_ char *tail = get(f.run_fd, "journal/p0");
        ck_assert_str_eq(tail, "");
        fx_done(&f);
}
END_TEST

/* A state dir from before the index: the first recovery scans every run
 * once, marks what it leaves unfinished (another project's journal), and
 * the index is used from then on. */
START_TEST(test_pending_migration) {
        if (!need_hooks("a crash before the index existed"))
                return;
        fixture f;
        fx_init(&f);
        _cleanup_free_ char *before = NULL, *upper_before = NULL;
        scenario_setup(&f, &before, &upper_before);
        ck_assert_int_eq(crash_apply(&f, "NSRUN_TEST_CRASH_AT", 3), 99);
        _cleanup_free_ char *mark = nsr_asprintf("pending/%s.p0", f.run_id);
        ck_assert_int_eq(unlinkat(f.state_fd, mark, 0), 0);
        ck_assert_int_eq(unlinkat(f.state_fd, "pending", AT_REMOVEDIR), 0);

        /* Another project's recovery: not ours to roll back, but marked. */
        _cleanup_free_ char *other = nsr_asprintf("%s/other", f.base);
        ck_assert_int_eq(mkdir(other, 0755), 0);
        int ofd = open(other, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(ofd, 0);
        size_t n = 99;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_commit_recover(f.state_fd, other, ofd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 0);
        close(ofd);
        _cleanup_free_ char *marks = pending_marks(&f);
        _cleanup_free_ char *want = nsr_asprintf("%s.p0", f.run_id);
        ck_assert_str_eq(marks, want);

        /* Ours, through the index. */
        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 1);
        _cleanup_free_ char *after = snapshot(f.project_fd);
        ck_assert_str_eq(after, before);
        _cleanup_free_ char *left = pending_marks(&f);
        ck_assert_str_eq(left, "");
        fx_done(&f);
}
END_TEST

START_TEST(test_crash_every_step) {
        if (!need_hooks("crash at every step"))
                return;
        crash_test(NULL);
}
END_TEST

START_TEST(test_crash_during_recovery) {
        if (!need_hooks("crash during recovery"))
                return;
        int steps[] = { 3, 7, 10 };
        for (size_t i = 0; i < ELEMENTSOF(steps); i++)
                for (int m = 1; m <= 10; m += 3) {
                        fixture f;
                        fx_init(&f);
                        _cleanup_free_ char *before = NULL, *upper_before = NULL;
                        scenario_setup(&f, &before, &upper_before);
                        ck_assert_int_eq(crash_apply(&f, "NSRUN_TEST_CRASH_AT", steps[i]), 99);
                        ck_assert_int_eq(crash_recover(&f, m), 98);
                        /* and once more, crashing again at the same point */
                        ck_assert_int_eq(crash_recover(&f, m), 98);
                        size_t n = 0;
                        nsr_error err = { 0 };
                        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s",
                                      err.msg);
                        ck_assert_uint_eq(n, 1);
                        _cleanup_free_ char *after = snapshot(f.project_fd);
                        ck_assert_msg(streq(after, before), "apply crash %d, recovery crash %d: project differs",
                                      steps[i], m);
                        _cleanup_free_ char *upper_after = snapshot(f.upper_fd);
                        ck_assert(streq(upper_after, upper_before));
                        fx_done(&f);
                }
}
END_TEST

START_TEST(test_crash_big_journal) {
        /* A journal larger than the tail recovery reads to find its state. */
        if (!need_hooks("crash with a large journal"))
                return;
        fixture f;
        fx_init(&f);
        bool ok = true;
        for (int i = 0; i < 300; i++) {
                char p[64];
                snprintf(p, sizeof(p), "dir-with-a-longish-name/file-%05d", i);
                put(f.project_fd, p, "old\n", 0644);
        }
        fx_start_run(&f);
        for (int i = 0; i < 300; i++) {
                char p[64];
                snprintf(p, sizeof(p), "dir-with-a-longish-name/file-%05d", i);
                put(f.upper_fd, p, "new\n", 0644);
                ok = ok && fx_change_quiet(&f, p, NSR_CHANGE_MODIFIED);
        }
        ck_assert(ok);
        ck_assert_int_eq(nsr_changeset_sort(f.cs, NULL), 0);
        _cleanup_free_ char *before = snapshot(f.project_fd);
        ck_assert_int_eq(crash_apply(&f, "NSRUN_TEST_CRASH_AT", 200), 99);
        struct stat st;
        ck_assert_int_eq(fstatat(f.run_fd, "journal/p0", &st, 0), 0);
        ck_assert_int_gt(st.st_size, 8192);
        size_t n = 0;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 1);
        _cleanup_free_ char *after = snapshot(f.project_fd);
        ck_assert_str_eq(after, before);
        ck_assert_int_eq(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err), 0);
        ck_assert_uint_eq(n, 0);
        /* Applied again, with no conflict from the ctimes the rollback
         * changed. */
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_eq(res.n_conflicts, 0);
        assert_content(f.project_fd, "dir-with-a-longish-name/file-00299", "new\n");
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_recover_without_source) {
        /* The upper dir is gone by the time of the recovery: the new
         * versions are parked in RUN/rollback/p0, the project is restored. */
        if (!need_hooks("recovery without a source dir"))
                return;
        fixture f;
        fx_init(&f);
        _cleanup_free_ char *before = NULL, *upper_before = NULL;
        scenario_setup(&f, &before, &upper_before);
        ck_assert_int_eq(crash_apply(&f, "NSRUN_TEST_CRASH_AT", 10), 99);
        ck_assert_int_eq(renameat(f.run_fd, "p0/upper", f.run_fd, "p0/upper.moved"), 0);
        size_t n = 0;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 1);
        _cleanup_free_ char *after = snapshot(f.project_fd);
        ck_assert_str_eq(after, before);
        assert_content(f.run_fd, "rollback/p0/mod.txt", "new mod\n");
        assert_content(f.run_fd, "rollback/p0/newdir/two/three", "3\n");
        assert_content(f.run_fd, "rollback/p0/sub/" ODD, "odd new\n");
        fx_done(&f);
}
END_TEST

START_TEST(test_malformed_journal) {
        /* A plan whose checksum is right but whose steps do not parse is a
         * bug, not a torn write: recovery fails loudly and marks nothing. */
        fixture f;
        fx_init(&f);
        ck_assert_int_eq(mkdirat(f.run_fd, "journal", 0700), 0);
        _cleanup_free_ char *hex = nsr_hex_encode(f.project, strlen(f.project));
        _cleanup_free_ char *plan = nsr_asprintf("nsrun-journal 1\ntoken 0123456789abcdef\nkind apply\nproject %s\n"
                                                 "index 0\nrun-start 1 0\nsource - 0 0\nundoes -\nsteps 1\n"
                                                 "s 1 frobnicate - 61 - -\n",
                                                 hex);
        _cleanup_free_ char *j = nsr_asprintf("%splan %08x\n", plan, (unsigned) nsr_crc32(0, plan, strlen(plan)));
        put(f.run_fd, "journal/p0", j, 0600);
        size_t n = 0;
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(err.msg, "malformed"));
        _cleanup_free_ char *tail = journal_tail(f.run_fd);
        ck_assert(nsr_startswith(tail, "plan "));
        ck_assert_uint_eq(nsr_crc32(0, "123456789", 9), 0xCBF43926);
        fx_done(&f);
}
END_TEST

START_TEST(test_torn_journal) {
        /* A journal cut before its plan line: nothing was done; recovery
         * marks it and moves on. Another project's journal is left alone. */
        fixture f;
        fx_init(&f);
        ck_assert_int_eq(mkdirat(f.run_fd, "journal", 0700), 0);
        _cleanup_free_ char *hex = nsr_hex_encode(f.project, strlen(f.project));
        _cleanup_free_ char *j = nsr_asprintf("nsrun-journal 1\ntoken 0123456789abcdef\nkind apply\nproject %s\n"
                                              "index 0\nrun-start 1 0\nsource - 0 0\nundoes -\nsteps 2\ns 1 pla",
                                              hex);
        put(f.run_fd, "journal/p0", j, 0600);
        put(f.run_fd, "journal/p1", "nsrun-journal 1\ntoken 0123456789abcdef\nkind apply\nproject 2f6f74686572\n",
            0600);
        size_t n = 0;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(n, 1);
        _cleanup_free_ char *tail = journal_tail(f.run_fd);
        ck_assert_str_eq(tail, "rolled-back");
        _cleanup_free_ char *other = get(f.run_fd, "journal/p1");
        ck_assert(nsr_endswith(other, "2f6f74686572\n"));
        ck_assert_int_eq(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err), 0);
        ck_assert_uint_eq(n, 0);
        /* A new apply of the run sets the rolled-back journal aside. */
        put(f.project_fd, "a", "a\n", 0644);
        fx_start_run(&f);
        put(f.upper_fd, "a", "new\n", 0644);
        fx_change(&f, "a", NSR_CHANGE_MODIFIED);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert(exists_at(f.run_fd, "journal/p0.0123456789abcdef"));
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

/* ---- tests: undo ------------------------------------------------------------------------------------- */

START_TEST(test_undo_and_redo) {
        fixture f;
        fx_init(&f);
        _cleanup_free_ char *before = NULL, *upper_before = NULL;
        scenario_setup(&f, &before, &upper_before);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        _cleanup_free_ char *applied = snapshot(f.project_fd);
        ck_assert_str_ne(applied, before); /* so the undo below has something to undo */
        int u1 = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, u1, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        ck_assert_uint_eq(ur.restored, 10);
        _cleanup_free_ char *undone = snapshot(f.project_fd);
        ck_assert_msg(streq(undone, before), "after undo:\n%s\nvs\n%s", undone, before);
        nsr_undo_result_done(&ur);
        /* Undoing twice: the backups are gone, so everything is refused. */
        int u1b = fx_new_run(&f, NULL);
        ck_assert_int_eq(fx_undo(&f, f.run_fd, u1b, false, &ur, &err), 0);
        ck_assert_uint_eq(ur.restored, 0);
        ck_assert_ptr_nonnull(ur.refused);
        nsr_undo_result_done(&ur);
        /* Undo the undo: back to the applied state. */
        int u2 = fx_new_run(&f, NULL);
        ck_assert_msg(fx_undo(&f, u1, u2, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        _cleanup_free_ char *redone = snapshot(f.project_fd);
        ck_assert_msg(streq(redone, applied), "after undoing the undo:\n%s\nvs\n%s", redone, applied);
        nsr_undo_result_done(&ur);
        /* And undo that again. */
        int u3 = fx_new_run(&f, NULL);
        ck_assert_msg(fx_undo(&f, u2, u3, false, &ur, &err) == 0, "%s", err.msg);
        _cleanup_free_ char *again = snapshot(f.project_fd);
        ck_assert_str_eq(again, before);
        nsr_undo_result_done(&ur);
        close(u1);
        close(u1b);
        close(u2);
        close(u3);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_undo_refused_and_forced) {
        fixture f;
        fx_init(&f);
        put(f.project_fd, "a", "old a\n", 0644);
        put(f.project_fd, "b", "old b\n", 0644);
        put(f.project_fd, "c", "old c\n", 0644);
        fx_start_run(&f);
        put(f.upper_fd, "a", "new a\n", 0644);
        put(f.upper_fd, "b", "new b\n", 0644);
        put(f.upper_fd, "n/x", "created\n", 0644);
        fx_change(&f, "a", NSR_CHANGE_MODIFIED);
        fx_change(&f, "b", NSR_CHANGE_MODIFIED);
        fx_change(&f, "c", NSR_CHANGE_DELETED);
        fx_change(&f, "n", NSR_CHANGE_CREATED);
        fx_change(&f, "n/x", NSR_CHANGE_CREATED);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        /* The host edits after the apply: b, a file inside the created dir,
         * and recreates the deleted c. */
        sleep_ms(20);
        put(f.project_fd, "b", "host b\n", 0644);
        put(f.project_fd, "n/x", "host x\n", 0644);
        put(f.project_fd, "c", "host c\n", 0644);
        int u1 = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, u1, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(ur.restored, 1);
        ck_assert_uint_eq(nsr_strv_length(ur.refused), 3);
        ck_assert(nsr_strv_contains(ur.refused, "b"));
        ck_assert(nsr_strv_contains(ur.refused, "c"));
        ck_assert(nsr_strv_contains(ur.refused, "n"));
        assert_content(f.project_fd, "a", "old a\n");
        assert_content(f.project_fd, "b", "host b\n");
        assert_content(f.project_fd, "n/x", "host x\n");
        assert_content(f.project_fd, "c", "host c\n");
        nsr_undo_result_done(&ur);
        /* With force: the host's versions go to the undo's backup. */
        _cleanup_free_ char *u2path = NULL;
        int u2 = fx_new_run(&f, &u2path);
        ck_assert_msg(fx_undo(&f, f.run_fd, u2, true, &ur, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(ur.restored, 3);
        /* a: the first undo restored it and used its backup up; that is
         * not a refusal, there is nothing left to do for it */
        ck_assert_uint_eq(nsr_strv_length(ur.refused), 0);
        assert_content(f.project_fd, "a", "old a\n");
        assert_content(f.project_fd, "b", "old b\n");
        assert_content(f.project_fd, "c", "old c\n");
        ck_assert(!exists_at(f.project_fd, "n"));
        int b = open_rel(u2, "backup/p0");
        assert_content(b, "b", "host b\n");
        assert_content(b, "c", "host c\n");
        assert_content(b, "n/x", "host x\n");
        close(b);
        nsr_undo_result_done(&ur);
        close(u1);
        close(u2);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

START_TEST(test_undo_rollback_and_retry) {
        /* An undo that fails half way is rolled back; a new undo of the run
         * is not fooled by the ctimes the rollback changed. */
        if (!need_hooks("undo rollback"))
                return;
        fixture f;
        fx_init(&f);
        _cleanup_free_ char *before = NULL, *upper_before = NULL;
        scenario_setup(&f, &before, &upper_before);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        _cleanup_free_ char *applied = snapshot(f.project_fd);
        ck_assert_str_ne(applied, before); /* so the undo below has something to undo */
        int u1 = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        setenv("NSRUN_TEST_ENOSPC_AT", "7", 1);
        int r = fx_undo(&f, f.run_fd, u1, false, &ur, &err);
        unsetenv("NSRUN_TEST_ENOSPC_AT");
        ck_assert_msg(r == -ENOSPC, "%d %s", r, err.msg);
        _cleanup_free_ char *after = snapshot(f.project_fd);
        ck_assert_str_eq(after, applied);
        int u2 = fx_new_run(&f, NULL);
        ck_assert_msg(fx_undo(&f, f.run_fd, u2, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        _cleanup_free_ char *undone = snapshot(f.project_fd);
        ck_assert_str_eq(undone, before);
        nsr_undo_result_done(&ur);
        close(u1);
        close(u2);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

/* ---- tests: writes in place ------------------------------------------------------------------------ */

static ino_t ino_at(int dirfd, const char *path) {
        struct stat st;
        ck_assert_int_eq(fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
        return st.st_ino;
}

/* A modified file marked in_place is written into the host's inode: its
 * mode, inode and other names stay; a failed apply, and an undo, write
 * the old content back into the same inode. */
START_TEST(test_write_in_place) {
        fixture f;
        fx_init(&f);
        put(f.project_fd, "a", "old\n", 0640);
        ck_assert_int_eq(linkat(f.project_fd, "a", f.project_fd, "a2", 0), 0);
        ino_t ino = ino_at(f.project_fd, "a");
        fx_start_run(&f);
        put(f.upper_fd, "a", "new content\n", 0600);
        put(f.upper_fd, "b", "b\n", 0644);
        fx_change(&f, "a", NSR_CHANGE_MODIFIED);
        f.cs->changes[f.cs->n_changes - 1].in_place = true;
        fx_change(&f, "b", NSR_CHANGE_CREATED);
        nsr_commit_result res = { 0 };
        nsr_error err = { 0 };
        if (need_hooks("a write in place rolled back")) {
                setenv("NSRUN_TEST_ENOSPC_AT", "2", 1);
                int r = fx_apply(&f, &res, &err);
                unsetenv("NSRUN_TEST_ENOSPC_AT");
                ck_assert_msg(r == -ENOSPC, "%d %s", r, err.msg);
                assert_content(f.project_fd, "a", "old\n");
                ck_assert_int_eq(ino_at(f.project_fd, "a"), ino);
                ck_assert(!exists_at(f.project_fd, "b"));
                nsr_commit_result_done(&res);
        }
        fx_apply_ok(&f, &res);
        _cleanup_free_ char *j = get(f.run_fd, "journal/p0");
        ck_assert_ptr_nonnull(strstr(j, " write - "));
        assert_content(f.project_fd, "a", "new content\n");
        assert_content(f.project_fd, "a2", "new content\n");
        ck_assert_int_eq(ino_at(f.project_fd, "a"), ino);
        ck_assert_int_eq(mode_at(f.project_fd, "a") & 07777, 0640);
        assert_content(f.project_fd, "b", "b\n");
        int u = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, u, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        assert_content(f.project_fd, "a", "old\n");
        ck_assert_int_eq(ino_at(f.project_fd, "a"), ino);
        ck_assert(!exists_at(f.project_fd, "b"));
        nsr_undo_result_done(&ur);
        close(u);
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

/* ---- tests: across mounts (EXDEV) --------------------------------------------------------------------- */

static bool write_proc(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        bool ok = nsr_write_all(fd, s, strlen(s)) == 0;
        close(fd);
        return ok;
}

/* In a forked child: a private mount namespace with a tmpfs at dir (a user
 * namespace too when not root, mapping our own ids). Returns false if the
 * host forbids it. */
static bool private_tmpfs(const char *dir) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (uid != 0) {
                if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                        return false;
                char m[64];
                snprintf(m, sizeof(m), "%u %u 1", (unsigned) uid, (unsigned) uid);
                if (!write_proc("/proc/self/setgroups", "deny") || !write_proc("/proc/self/uid_map", m))
                        return false;
                snprintf(m, sizeof(m), "%u %u 1", (unsigned) gid, (unsigned) gid);
                if (!write_proc("/proc/self/gid_map", m))
                        return false;
        } else if (unshare(CLONE_NEWNS) < 0)
                return false;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return false;
        return mount("tmpfs", dir, "tmpfs", 0, "mode=0755") == 0;
}

/* The EXDEV tests run in a child that owns the tmpfs; it reports with its
 * exit code: 0 pass, 77 skip, else fail (Check asserts in the child end it
 * with a non-zero code, and the message goes to stderr). */
static void run_exdev(void (*body)(const char *mnt)) {
        const char *tmp = getenv("TMPDIR");
        _cleanup_free_ char *tmpl = nsr_asprintf("%s/nsrun-exdev-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(tmpl));
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (!private_tmpfs(tmpl)) {
                        fprintf(stderr,
                                "check-commit: SKIP cross-mount (EXDEV) tests: cannot mount a tmpfs "
                                "in a private namespace here (%s)\n",
                                strerror(errno));
                        _exit(77);
                }
                body(tmpl);
                _exit(0);
        }
        int code = wait_child(pid);
        rmdir(tmpl);
        if (code == 77)
                return;
        ck_assert_msg(code == 0, "the cross-mount child failed with %d", code);
}

static void exdev_apply_undo(const char *mnt) {
        fixture f;
        fx_init_at(&f, mnt);
        _cleanup_free_ char *before = NULL, *upper_before = NULL;
        scenario_setup(&f, &before, &upper_before);
        nsr_commit_result res = { 0 };
        fx_apply_ok(&f, &res);
        ck_assert_uint_gt(res.stats.copied, 0);
        assert_scenario_applied(&f);
        /* No temporary entry is left in the project. */
        _cleanup_free_ char *listing = snapshot(f.project_fd);
        _cleanup_free_ char *hex = nsr_hex_encode(".nsrun.", 7);
        ck_assert_ptr_null(strstr(listing, hex));
        int b = open_rel(f.run_fd, "backup/p0");
        assert_content(b, "deldir/a/b.txt", "deep\n");
        assert_content(b, "mod.txt", "old mod\n");
        close(b);
        _cleanup_free_ char *applied = snapshot(f.project_fd);
        ck_assert_str_ne(applied, before); /* so the undo below has something to undo */
        int u1 = fx_new_run(&f, NULL);
        nsr_undo_result ur = { 0 };
        nsr_error err = { 0 };
        ck_assert_msg(fx_undo(&f, f.run_fd, u1, false, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        _cleanup_free_ char *undone = snapshot(f.project_fd);
        ck_assert_msg(streq(undone, before), "after undo:\n%s\nvs\n%s", undone, before);
        nsr_undo_result_done(&ur);
        close(u1);
        nsr_commit_result_done(&res);
        fx_done(&f);
}

START_TEST(test_exdev_apply_undo) {
        run_exdev(exdev_apply_undo);
}
END_TEST

static void exdev_crash(const char *mnt) {
        crash_test(mnt);
        /* And a crash while copying (step 5 is the metadata step, which
         * copies nothing). */
        static const int ks[] = { 1, 4, 10 };
        for (size_t i = 0; i < ELEMENTSOF(ks); i++) {
                int k = ks[i];
                fixture f;
                fx_init_at(&f, mnt);
                _cleanup_free_ char *before = NULL, *upper_before = NULL;
                scenario_setup(&f, &before, &upper_before);
                ck_assert_int_eq(crash_apply(&f, "NSRUN_TEST_CRASH_PREPARE_AT", k), 99);
                size_t n = 0;
                nsr_error err = { 0 };
                ck_assert_msg(nsr_commit_recover(f.state_fd, f.project, f.project_fd, &n, &err) == 0, "%s", err.msg);
                ck_assert_uint_eq(n, 1);
                _cleanup_free_ char *after = snapshot(f.project_fd);
                ck_assert_str_eq(after, before);
                fx_done(&f);
        }
}

START_TEST(test_exdev_crash) {
        if (!need_hooks("cross-mount crashes"))
                return;
        run_exdev(exdev_crash);
}
END_TEST

static void exdev_enospc(const char *mnt) {
        for (int k = 1; k <= 10; k++) {
                fixture f;
                fx_init_at(&f, mnt);
                _cleanup_free_ char *before = NULL, *upper_before = NULL;
                scenario_setup(&f, &before, &upper_before);
                char v[16];
                snprintf(v, sizeof(v), "%d", k);
                setenv("NSRUN_TEST_ENOSPC_AT", v, 1);
                nsr_commit_result res = { 0 };
                nsr_error err = { 0 };
                int r = fx_apply(&f, &res, &err);
                unsetenv("NSRUN_TEST_ENOSPC_AT");
                ck_assert_msg(r == -ENOSPC, "step %d: %s", k, err.msg);
                _cleanup_free_ char *after = snapshot(f.project_fd);
                ck_assert_msg(streq(after, before), "step %d: project differs", k);
                fx_apply_ok(&f, &res);
                assert_scenario_applied(&f);
                nsr_commit_result_done(&res);
                fx_done(&f);
        }
}

START_TEST(test_exdev_enospc) {
        if (!need_hooks("cross-mount rollback"))
                return;
        run_exdev(exdev_enospc);
}
END_TEST

/* ---- tests: size ----------------------------------------------------------------------------------------- */

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

START_TEST(test_20k_files) {
        fixture f;
        fx_init(&f);
        put(f.project_fd, "readme", "r\n", 0644);
        fx_start_run(&f);
        ck_assert_int_eq(mkdirat(f.upper_fd, "gen", 0755), 0);
        int g = open_rel(f.upper_fd, "gen");
        fx_change(&f, "gen", NSR_CHANGE_CREATED);
        ck_assert(bulk_files(g, "f", 20000, NULL));
        bool ok = true;
        for (int i = 0; i < 20000; i++) {
                char p[40];
                snprintf(p, sizeof(p), "gen/f%05d", i);
                ok = ok && fx_change_quiet(&f, p, NSR_CHANGE_CREATED);
        }
        ck_assert(ok);
        close(g);
        nsr_commit_result res = { 0 };
        double t0 = now_s();
        fx_apply_ok(&f, &res);
        double t1 = now_s();
        fprintf(stderr, "check-commit: 20k created files in one dir: %.3f s, %zu steps, %zu renames\n", t1 - t0,
                res.stats.steps, res.stats.renames);
        ck_assert_uint_eq(res.applied, 20001);
        ck_assert_uint_eq(res.stats.steps, 1);
        ck_assert_uint_le(res.stats.renames, 2);
        assert_content(f.project_fd, "gen/f00000", "f00000");
        assert_content(f.project_fd, "gen/f19999", "f19999");
        nsr_commit_result_done(&res);
        fx_done(&f);
}
END_TEST

/* 10k files in one new dir, against 10k modified files spread over 100
 * dirs. What is asserted is the work, which a regression changes and a
 * loaded machine does not: a new dir is one rename whatever it holds, a
 * modified file one step. The times are printed for the record only. */
START_TEST(test_timing_10k) {
        fixture f;
        fx_init(&f);
        bool ok = true;
        for (int d = 0; d < 100; d++) {
                char p[16];
                snprintf(p, sizeof(p), "d%02d", d);
                put_dir(f.project_fd, p, 0755);
                int dfd = open_rel(f.project_fd, p);
                ok = ok && bulk_files(dfd, "f", 100, "old\n");
                close(dfd);
        }
        ck_assert(ok);
        fx_start_run(&f);
        put_dir(f.upper_fd, "new", 0755);
        int nfd = open_rel(f.upper_fd, "new");
        ck_assert(bulk_files(nfd, "f", 10000, "x\n"));
        close(nfd);
        fx_change(&f, "new", NSR_CHANGE_CREATED);
        for (int i = 0; i < 10000; i++) {
                char p[64];
                snprintf(p, sizeof(p), "new/f%05d", i);
                ok = ok && fx_change_quiet(&f, p, NSR_CHANGE_CREATED);
        }
        ck_assert(ok);
        nsr_commit_result res = { 0 };
        ck_assert_int_eq(nsr_changeset_sort(f.cs, NULL), 0);
        sync(); /* the setup's dirty data would land in the apply's syncfs */
        double t0 = now_s();
        fx_apply_ok(&f, &res);
        double t1 = now_s();
        fprintf(stderr, "check-commit: 10k created files in one dir: %.3f s (%zu renames)\n", t1 - t0,
                res.stats.renames);
        ck_assert_uint_eq(res.stats.renames, 1);
        assert_content(f.project_fd, "new/f09999", "x\n");
        nsr_commit_result_done(&res);

        int run2 = fx_new_run(&f, NULL);
        int up2 = openat(run2, "p0/upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
        nsr_changeset_free(f.cs);
        f.cs = nsr_changeset_new();
        int saved = f.upper_fd;
        f.upper_fd = up2;
        fx_start_run(&f);
        for (int d = 0; d < 100; d++) {
                char p[16];
                snprintf(p, sizeof(p), "d%02d", d);
                put_dir(up2, p, 0755);
                int dfd = open_rel(up2, p);
                ok = ok && bulk_files(dfd, "f", 100, "new\n");
                close(dfd);
                for (int i = 0; i < 100; i++) {
                        char q[64];
                        snprintf(q, sizeof(q), "d%02d/f%05d", d, i);
                        ok = ok && fx_change_quiet(&f, q, NSR_CHANGE_MODIFIED);
                }
        }
        ck_assert(ok);
        ck_assert_int_eq(nsr_changeset_sort(f.cs, NULL), 0);
        nsr_commit_opts o = fx_opts(&f);
        o.run_fd = run2;
        _cleanup_free_ char *p2 = fd_path_of(run2);
        o.run_path = p2;
        nsr_error err = { 0 };
        sync();
        t0 = now_s();
        ck_assert_msg(nsr_commit_apply(f.cs, &o, &res, &err) == 0, "%s", err.msg);
        t1 = now_s();
        fprintf(stderr, "check-commit: 10k modified files in 100 dirs: %.3f s (%zu steps, %zu renames)\n", t1 - t0,
                res.stats.steps, res.stats.renames);
        ck_assert_uint_eq(res.stats.steps, 10000);
        ck_assert_uint_eq(res.n_conflicts, 0);
        assert_content(f.project_fd, "d42/f00042", "new\n");
        nsr_commit_result_done(&res);
        f.upper_fd = saved;
        close(up2);
        close(run2);
        fx_done(&f);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("commit");
        TCase *tc = tcase_create("apply");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_journal_root_step);
        tcase_add_test(tc, test_apply_scenario);
        tcase_add_test(tc, test_created_dir_one_rename);
        tcase_add_test(tc, test_excluded_entries_set_aside);
        tcase_add_test(tc, test_special_fails_closed);
        tcase_add_test(tc, test_merge_created_dir);
        tcase_add_test(tc, test_opaque_dir);
        tcase_add_test(tc, test_type_changes);
        tcase_add_test(tc, test_metadata_changes);
        tcase_add_test(tc, test_privileges_stripped);
        tcase_add_test(tc, test_read_only_dirs);
        tcase_add_test(tc, test_odd_names);
        suite_add_tcase(s, tc);
        tc = tcase_create("conflicts");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_changed_after);
        tcase_add_test(tc, test_conflicts);
        tcase_add_test(tc, test_symlink_attack);
        tcase_add_test(tc, test_upper_symlink_refused);
        suite_add_tcase(s, tc);
        tc = tcase_create("recovery");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_rollback_enospc);
        tcase_add_test(tc, test_write_in_place);
        tcase_add_test(tc, test_pending_index);
        tcase_add_test(tc, test_pending_migration);
        tcase_add_test(tc, test_crash_every_step);
        tcase_add_test(tc, test_crash_during_recovery);
        tcase_add_test(tc, test_torn_journal);
        tcase_add_test(tc, test_crash_big_journal);
        tcase_add_test(tc, test_recover_without_source);
        tcase_add_test(tc, test_malformed_journal);
        suite_add_tcase(s, tc);
        tc = tcase_create("undo");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_undo_and_redo);
        tcase_add_test(tc, test_undo_refused_and_forced);
        tcase_add_test(tc, test_undo_rollback_and_retry);
        suite_add_tcase(s, tc);
        tc = tcase_create("exdev");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_exdev_apply_undo);
        tcase_add_test(tc, test_exdev_crash);
        tcase_add_test(tc, test_exdev_enospc);
        suite_add_tcase(s, tc);
        tc = tcase_create("size");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_20k_files);
        tcase_add_test(tc, test_timing_10k);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
