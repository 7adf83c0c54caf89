/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* snapshot.c and the live-writes half of commit.c on temp trees: a
 * snapshot is a faithful copy, the comparison after "the command" (plain
 * file operations here) builds the change set an overlay run would, files
 * whose ctime did not move are not read, the limits hold, and a run
 * recorded with nsr_commit_record_live can be undone by nsr_commit_undo. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

#include "project/snapshot.h"
#include "txn/commit.h"
#include "unit.h"

static char *tmpdir_new(void) {
        char t[] = "/tmp/nsr-snapshot.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(t));
        return nsr_strdup(t);
}

static char *at(const char *d, const char *rel) {
        return nsr_path_join(d, rel);
}

static void put(const char *d, const char *rel, const char *content) {
        _cleanup_free_ char *p = at(d, rel);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        ck_assert_msg(fd >= 0, "create %s: %m", p);
        ck_assert_int_eq(nsr_write_all(fd, content, strlen(content)), 0);
}

static void mkd(const char *d, const char *rel) {
        _cleanup_free_ char *p = at(d, rel);
        ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %m", p);
}

static char *slurp(const char *d, const char *rel) {
        _cleanup_free_ char *p = at(d, rel);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return NULL;
        char *data = NULL;
        ck_assert_int_eq(nsr_read_all(fd, 1 << 20, &data, NULL), 0);
        return data;
}

static void rm_tree(const char *d) {
        _cleanup_free_ char *cmd = nsr_asprintf("chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", d, d);
        ck_assert_int_eq(system(cmd), 0);
}

/* "path:kind" for every change, sorted as the set is. */
static char *summary(const nsr_changeset *cs) {
        char *s = nsr_strdup("");
        for (size_t i = 0; i < cs->n_changes; i++) {
                const nsr_change *c = &cs->changes[i];
                char *n = nsr_asprintf("%s%s%s:%s", s, i ? " " : "", c->path, nsr_change_kind_to_string(c->kind));
                free(s);
                s = n;
        }
        return s;
}

/* A project with files, dirs, a symlink and a fifo. */
static void make_project(const char *p) {
        put(p, "keep", "keep\n");
        put(p, "mod", "old\n");
        put(p, "same-size", "aaaa\n");
        put(p, "del", "bye\n");
        put(p, "chmod", "x\n");
        put(p, "touched", "t\n");
        mkd(p, "gone");
        mkd(p, "gone/deep");
        put(p, "gone/deep/f", "f\n");
        put(p, "gone/g", "g\n");
        mkd(p, "todir");
        put(p, "todir/x", "x\n");
        put(p, "tofile", "file\n");
        mkd(p, "renamed");
        put(p, "renamed/r", "r\n");
        _cleanup_free_ char *l = at(p, "link");
        ck_assert_int_eq(symlink("keep", l), 0);
        _cleanup_free_ char *f = at(p, "fifo");
        ck_assert_int_eq(mkfifo(f, 0600), 0);
}

typedef struct fixture {
        char *d, *proj, *run;
        int proj_fd, run_fd, backup_fd;
} fixture;

static void fixture_open(fixture *fx) {
        fx->d = tmpdir_new();
        fx->proj = at(fx->d, "proj");
        fx->run = at(fx->d, "run");
        ck_assert_int_eq(mkdir(fx->proj, 0755), 0);
        ck_assert_int_eq(mkdir(fx->run, 0700), 0);
        _cleanup_free_ char *b = at(fx->d, "run/backup");
        ck_assert_int_eq(mkdir(b, 0700), 0);
        fx->proj_fd = open(fx->proj, O_PATH | O_DIRECTORY | O_CLOEXEC);
        fx->run_fd = open(fx->run, O_PATH | O_DIRECTORY | O_CLOEXEC);
        fx->backup_fd = open(b, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert(fx->proj_fd >= 0 && fx->run_fd >= 0 && fx->backup_fd >= 0);
}

static void fixture_close(fixture *fx) {
        close(fx->proj_fd);
        close(fx->run_fd);
        close(fx->backup_fd);
        rm_tree(fx->d);
        free(fx->d);
        free(fx->proj);
        free(fx->run);
}

static nsr_changeset *compare(const fixture *fx, const nsr_snapshot *s, nsr_capture_stats *stats) {
        _cleanup_close_ int snap = openat(fx->backup_fd, "p0", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(snap, 0);
        nsr_capture_opts co = {
                .flags = NSR_CAPTURE_TREES, .prior = nsr_snapshot_prior, .prior_userdata = (void *) s, .stats = stats
        };
        nsr_changeset *cs = NULL;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_capture_scan(fx->proj_fd, snap, &co, &cs, &err) == 0, "%s", err.msg);
        return cs;
}

/* What "the command" does. */
static void change_project(const char *p) {
        put(p, "new", "new\n");
        put(p, "mod", "changed\n");
        /* Same size, and the mtime put back: only ctime tells. */
        _cleanup_free_ char *ss = at(p, "same-size");
        struct stat st;
        ck_assert_int_eq(stat(ss, &st), 0);
        put(p, "same-size", "bbbb\n");
        struct timespec ts[2] = { st.st_atim, st.st_mtim };
        ck_assert_int_eq(utimensat(AT_FDCWD, ss, ts, 0), 0);
        _cleanup_free_ char *del = at(p, "del");
        ck_assert_int_eq(unlink(del), 0);
        _cleanup_free_ char *ch = at(p, "chmod");
        ck_assert_int_eq(chmod(ch, 0600), 0);
        _cleanup_free_ char *to = at(p, "touched");
        struct timespec t2[2] = { { 1000, 0 }, { 1000, 0 } };
        ck_assert_int_eq(utimensat(AT_FDCWD, to, t2, 0), 0);
        _cleanup_free_ char *cmd =
                nsr_asprintf("rm -r '%s/gone' '%s/todir' && rm '%s/tofile' && mkdir -p '%s/tofile/in' "
                             "'%s/made/inner' && echo x > '%s/todir' && echo i > '%s/made/inner/f' && "
                             "mv '%s/renamed' '%s/moved' && ln -sf mod '%s/link'",
                             p, p, p, p, p, p, p, p, p, p);
        ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_take_compare) {
        fixture fx;
        fixture_open(&fx);
        make_project(fx.proj);
        nsr_snapshot_opts so = { .flags = NSR_SNAPSHOT_NO_REFLINK };
        nsr_snapshot *s = NULL;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_snapshot_take(fx.proj_fd, fx.backup_fd, "p0", &so, &s, &err) == 0, "%s", err.msg);
        const nsr_snapshot_stats *ss = nsr_snapshot_stats_of(s);
        ck_assert_uint_eq(ss->entries, 17);
        ck_assert_uint_eq(ss->copied, ss->bytes);
        ck_assert_uint_eq(ss->cloned, 0);

        /* Right after the snapshot: nothing changed, and nothing was read
         * (every ctime still matches). */
        nsr_capture_stats cst = { 0 };
        nsr_changeset *cs = compare(&fx, s, &cst);
        ck_assert_uint_eq(nsr_changeset_size(cs), 0);
        ck_assert_uint_eq(cst.bytes_compared, 0);
        nsr_changeset_free(cs);
        /* The copy itself is faithful: mode, mtime, content, target. */
        _cleanup_free_ char *snapdir = at(fx.run, "backup/p0");
        _cleanup_free_ char *keep = slurp(snapdir, "keep");
        ck_assert_str_eq(keep, "keep\n");
        char target[64] = "";
        _cleanup_free_ char *sl = at(snapdir, "link");
        ck_assert_int_eq(readlink(sl, target, sizeof(target) - 1), 4);
        ck_assert_str_eq(target, "keep");

        change_project(fx.proj);
        cs = compare(&fx, s, &cst);
        _cleanup_free_ char *sum = summary(cs);
        ck_assert_str_eq(sum, "chmod:metadata_changed del:deleted gone:deleted link:modified made:created "
                              "made/inner:created made/inner/f:created mod:modified moved:created moved/r:created "
                              "new:created renamed:deleted same-size:modified todir:type_changed "
                              "tofile:type_changed tofile/in:created touched:metadata_changed");
        const nsr_change *g = nsr_changeset_lookup(cs, "gone");
        ck_assert_uint_eq(g->descendants, 3);
        ck_assert_uint_eq(nsr_changeset_lookup(cs, "todir")->descendants, 1);
        ck_assert_uint_eq(nsr_changeset_lookup(cs, "chmod")->old.mode, 0644);
        ck_assert_uint_eq(nsr_changeset_lookup(cs, "chmod")->mode, 0600);
        ck_assert(nsr_changeset_lookup(cs, "touched")->meta & NSR_META_MTIME);
        /* Only the files whose ctime moved were read. */
        ck_assert_uint_le(cst.bytes_compared, 16);
        nsr_changeset_free(cs);
        nsr_snapshot_free(s);
        fixture_close(&fx);
}
END_TEST

START_TEST(test_limits) {
        fixture fx;
        fixture_open(&fx);
        char big[4096];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        for (int i = 0; i < 5; i++) {
                char n[16];
                snprintf(n, sizeof(n), "f%d", i);
                put(fx.proj, n, big);
        }
        nsr_snapshot *s = NULL;
        nsr_error err = { 0 };
        nsr_snapshot_opts so = { .limit = 10000, .flags = NSR_SNAPSHOT_NO_REFLINK };
        ck_assert_int_eq(nsr_snapshot_take(fx.proj_fd, fx.backup_fd, "p0", &so, &s, &err), -EFBIG);
        ck_assert_msg(strstr(err.msg, "--snapshot-limit") && strstr(err.msg, "5 entries"), "%s", err.msg);
        /* Refused before anything was copied. */
        struct stat st;
        ck_assert_int_lt(fstatat(fx.backup_fd, "p0", &st, AT_SYMLINK_NOFOLLOW), 0);
        so = (nsr_snapshot_opts){ .max_entries = 4, .flags = NSR_SNAPSHOT_NO_REFLINK };
        ck_assert_int_eq(nsr_snapshot_take(fx.proj_fd, fx.backup_fd, "p0", &so, &s, &err), -E2BIG);
        so = (nsr_snapshot_opts){ .limit = 20475, .flags = NSR_SNAPSHOT_NO_REFLINK };
        ck_assert_int_eq(nsr_snapshot_take(fx.proj_fd, fx.backup_fd, "p0", &so, &s, &err), 0);
        nsr_snapshot_free(s);
        fixture_close(&fx);
}
END_TEST

static bool is_hook(const nsr_change *c, void *userdata) {
        (void) userdata;
        return nsr_startswith(c->path, ".git/hooks");
}

/* The whole live path: snapshot, change, compare, record, undo. */
START_TEST(test_record_undo) {
        fixture fx;
        fixture_open(&fx);
        make_project(fx.proj);
        mkd(fx.proj, ".git");
        mkd(fx.proj, ".git/hooks");
        put(fx.proj, ".git/hooks/pre-commit", "good\n");
        _cleanup_free_ char *before = nsr_asprintf("cd '%s' && find . -printf '%%p %%y %%m %%s\\n' | sort", fx.proj);
        _cleanup_free_ char *listing_cmd = nsr_asprintf("%s > '%s/before'", before, fx.d);
        ck_assert_int_eq(system(listing_cmd), 0);

        nsr_snapshot *s = NULL;
        nsr_error err = { 0 };
        ck_assert_msg(nsr_snapshot_take(fx.proj_fd, fx.backup_fd, "p0", NULL, &s, &err) == 0, "%s", err.msg);
        struct timespec start;
        clock_gettime(CLOCK_REALTIME_COARSE, &start);
        change_project(fx.proj);
        put(fx.proj, ".git/hooks/pre-commit", "evil\n");
        put(fx.proj, ".git/hooks/post-checkout", "evil\n");
        nsr_changeset *cs = compare(&fx, s, NULL);
        nsr_changeset *prot = NULL;
        ck_assert_int_eq(nsr_changeset_split(cs, is_hook, NULL, &prot), 0);
        ck_assert_uint_eq(nsr_changeset_size(prot), 2);

        nsr_live_opts lo = { .project_fd = fx.proj_fd,
                             .project_path = fx.proj,
                             .run_fd = fx.run_fd,
                             .project_index = 0,
                             .run_start = start };
        char **failed = NULL;
        ck_assert_msg(nsr_commit_revert_live(prot, &lo, &failed, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(failed);
        _cleanup_free_ char *hook = slurp(fx.proj, ".git/hooks/pre-commit");
        ck_assert_str_eq(hook, "good\n");
        _cleanup_free_ char *post = at(fx.proj, ".git/hooks/post-checkout");
        ck_assert_int_lt(access(post, F_OK), 0);

        nsr_commit_result res = { 0 };
        ck_assert_msg(nsr_commit_record_live(cs, &lo, &res, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(res.applied, nsr_changeset_size(cs));
        /* The backup keeps only what an undo restores: no "keep". */
        _cleanup_free_ char *bkeep = at(fx.run, "backup/p0/keep");
        _cleanup_free_ char *bmod = at(fx.run, "backup/p0/mod");
        _cleanup_free_ char *bgone = at(fx.run, "backup/p0/gone/deep/f");
        ck_assert_int_lt(access(bkeep, F_OK), 0);
        ck_assert_int_eq(access(bmod, F_OK), 0);
        ck_assert_int_eq(access(bgone, F_OK), 0);
        _cleanup_free_ char *journal = at(fx.run, "journal/p0");
        ck_assert_int_eq(access(journal, F_OK), 0);
        /* The live files are what the command left. */
        _cleanup_free_ char *mod = slurp(fx.proj, "mod");
        ck_assert_str_eq(mod, "changed\n");

        _cleanup_free_ char *undo = at(fx.d, "undo");
        ck_assert_int_eq(mkdir(undo, 0700), 0);
        _cleanup_close_ int undo_fd = open(undo, O_PATH | O_DIRECTORY | O_CLOEXEC);
        nsr_undo_opts uo = { .project_fd = fx.proj_fd,
                             .project_path = fx.proj,
                             .run_fd = fx.run_fd,
                             .project_index = 0,
                             .undo_run_fd = undo_fd };
        nsr_undo_result ur = { 0 };
        ck_assert_msg(nsr_commit_undo(&uo, &ur, &err) == 0, "%s", err.msg);
        ck_assert_ptr_null(ur.refused);
        nsr_undo_result_done(&ur);
        /* Back as it was: names, types, modes and sizes. */
        _cleanup_free_ char *cmp = nsr_asprintf("%s | diff -u '%s/before' -", before, fx.d);
        ck_assert_int_eq(system(cmp), 0);
        _cleanup_free_ char *mod2 = slurp(fx.proj, "mod");
        ck_assert_str_eq(mod2, "old\n");

        nsr_commit_result_done(&res);
        nsr_changeset_free(cs);
        nsr_changeset_free(prot);
        nsr_snapshot_free(s);
        fixture_close(&fx);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("snapshot");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, test_take_compare);
        tcase_add_test(tc, test_limits);
        tcase_add_test(tc, test_record_undo);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
