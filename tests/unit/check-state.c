/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state dir's records: the durable write helper and the run's meta
 * file (issue 18). */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/durable.h"
#include "txn/state.h"
#include "unit.h"
#include "base/util.h"

static int tmpdir(char path[64]) {
        snprintf(path, 64, "%s/nsr-state.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(path));
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        return fd;
}

static size_t count_entries(int dirfd) {
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fdopendir(fd);
        ck_assert_ptr_nonnull(d);
        size_t n = 0;
        for (struct dirent *de; (de = readdir(d));)
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

static char *slurp(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        char *s = NULL;
        ck_assert_int_ge(nsr_read_all(fd, 1 << 20, &s, NULL), 0);
        close(fd);
        return s;
}

START_TEST(test_durable_write) {
        char path[64];
        int dir = tmpdir(path);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_durable_write(dir, "f", "one\n", 4, 0600, 0, &err), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "f", "two\n", 4, 0600, NSR_DURABLE_SYNC, &err), 0);
        _cleanup_free_ char *s = slurp(dir, "f");
        ck_assert_str_eq(s, "two\n");
        struct stat st;
        ck_assert_int_eq(fstatat(dir, "f", &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0600);
        ck_assert_uint_eq(count_entries(dir), 1); /* no temporary left */

        /* A rename that fails (a non-empty dir is in the way): the old
         * entry stays, the temporary goes, and the error says so. */
        ck_assert_int_eq(mkdirat(dir, "d", 0700), 0);
        ck_assert_int_eq(mkdirat(dir, "d/x", 0700), 0);
        ck_assert_int_lt(nsr_durable_write(dir, "d", "x", 1, 0600, 0, &err), 0);
        ck_assert_msg(strstr(err.msg, "cannot write d"), "%s", err.msg);
        ck_assert_uint_eq(count_entries(dir), 2);

        /* A symlink planted at the name is replaced, never followed. */
        ck_assert_int_eq(symlinkat("/nonexistent/target", dir, "l"), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "l", "z", 1, 0600, 0, &err), 0);
        ck_assert_int_eq(fstatat(dir, "l", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert(S_ISREG(st.st_mode));

        /* Through a subdir path, with a sync of that subdir. */
        ck_assert_int_eq(nsr_durable_write(dir, "d/x/y", "y", 1, 0600, NSR_DURABLE_SYNC, &err), 0);
        ck_assert_int_eq(fstatat(dir, "d/x/y", &st, 0), 0);

        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
        close(dir);
}
END_TEST

/* The owner line was written but never read back: every running run
 * looked orphaned (pid 0), and gc would prune a live one. */
START_TEST(test_meta_round_trip) {
        char path[64];
        int dir = tmpdir(path);
        char *projects[] = { (char *) "/p/a", (char *) "/p/b b", NULL };
        char *argv[] = { (char *) "sh", (char *) "-c", (char *) "echo \n \xff", NULL };
        unsigned long counts[3][5] = { { 1, 2, 3, 4, 5 }, { 6, 7, 8, 9, 10 } };
        nsr_run_meta m = { .state = NSR_OUTCOME_RUNNING,
                           .kind = (char *) "run",
                           .start = { .tv_sec = 1764000000, .tv_nsec = 123456789 },
                           .projects = projects,
                           .argv = argv,
                           .exit_code = 3,
                           .signal = 0,
                           .counts = counts };
        snprintf(m.run_id, sizeof(m.run_id), "20261126T000000.000Z-abcdef");
        nsr_run_meta_set_owner(&m);
        ck_assert_int_gt(m.pid, 0);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_run_meta_write(dir, &m, &err), 0);
        nsr_run_meta r = { 0 };
        ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), 0);
        ck_assert_str_eq(r.run_id, m.run_id);
        ck_assert_int_eq(r.state, NSR_OUTCOME_RUNNING);
        ck_assert_int_eq(r.pid, m.pid);
        ck_assert_uint_eq(r.pid_start, m.pid_start);
        ck_assert_str_eq(r.boot, m.boot);
        ck_assert(!nsr_run_meta_is_orphan(&r)); /* this process runs it */
        ck_assert_int_eq(r.start.tv_sec, m.start.tv_sec);
        ck_assert_int_eq(r.start.tv_nsec, m.start.tv_nsec);
        ck_assert_str_eq(r.projects[1], "/p/b b");
        ck_assert_str_eq(r.argv[2], argv[2]);
        ck_assert_int_eq(r.exit_code, 3);
        ck_assert_uint_eq(r.counts[1][4], 10);
        nsr_run_meta_done(&r);
        ck_assert_uint_eq(count_entries(dir), 1);

        /* A pid that is not running: orphaned. */
        m.pid = 0x3ffffff0;
        ck_assert_int_eq(nsr_run_meta_write(dir, &m, &err), 0);
        ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), 0);
        ck_assert(nsr_run_meta_is_orphan(&r));
        nsr_run_meta_done(&r);

        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
        close(dir);
}
END_TEST

/* The meta file's state names are the outcome table's; a name this nsrun
 * does not know (a newer one's, a damaged or planted file) reads as
 * "unknown", never as a crash or as one of the states it would act on. */
START_TEST(test_meta_outcome) {
        static const char *const names[] = { "running", "committed", "conflict", "kept",
                                             "discarded", "failed", "undone" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                nsr_outcome o = nsr_outcome_from_string(names[i]);
                ck_assert_int_eq(o, (nsr_outcome) i);
                ck_assert_str_eq(nsr_outcome_to_string(o), names[i]);
        }
        ck_assert_int_eq(nsr_outcome_from_string("applied"), NSR_OUTCOME_UNKNOWN);
        ck_assert_int_eq(nsr_outcome_from_string("Kept"), NSR_OUTCOME_UNKNOWN);
        ck_assert_int_eq(nsr_outcome_from_string(""), NSR_OUTCOME_UNKNOWN);
        ck_assert_int_eq(nsr_outcome_from_string(NULL), NSR_OUTCOME_UNKNOWN);
        ck_assert_str_eq(nsr_outcome_to_string(NSR_OUTCOME_UNKNOWN), "unknown");
        ck_assert_ptr_null(nsr_outcome_to_string(_NSR_OUTCOME_MAX));
        ck_assert_ptr_null(nsr_outcome_to_string(_NSR_OUTCOME_INVALID));

        char path[64];
        int dir = tmpdir(path);
        nsr_error err = { 0 };
        nsr_run_meta r = { 0 };
        static const struct {
                const char *state_line;
                nsr_outcome want;
        } cases[] = {
                { "state kept\n", NSR_OUTCOME_KEPT },
                { "state undone\n", NSR_OUTCOME_UNDONE },
                { "state kept-ish\n", NSR_OUTCOME_UNKNOWN },
                { "state \xff\x1b[2J\n", NSR_OUTCOME_UNKNOWN },
                { "state \n", NSR_OUTCOME_UNKNOWN },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text =
                        nsr_asprintf("version 1\nrun R1\nkind run\n%sstart 1.000000002\n", cases[i].state_line);
                ck_assert_int_eq(nsr_durable_write(dir, "meta", text, strlen(text), 0600, 0, &err), 0);
                ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), 0);
                ck_assert_msg(r.state == cases[i].want, "case %zu: state %d", i, (int) r.state);
                ck_assert(!nsr_run_meta_is_orphan(&r) || r.state == NSR_OUTCOME_RUNNING);
                /* written back, it keeps a name nsrun knows */
                ck_assert_int_eq(nsr_run_meta_write(dir, &r, &err), 0);
                nsr_run_meta_done(&r);
                ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), 0);
                ck_assert_int_eq(r.state, cases[i].want);
                nsr_run_meta_done(&r);
        }
        /* no state line: damaged, as before */
        static const char bare[] = "version 1\nrun R1\nkind run\n";
        ck_assert_int_eq(nsr_durable_write(dir, "meta", bare, strlen(bare), 0600, 0, &err), 0);
        ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), -EINVAL);

        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
        close(dir);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("state");
        TCase *tc = tcase_create("records");
        tcase_add_test(tc, test_durable_write);
        tcase_add_test(tc, test_meta_round_trip);
        tcase_add_test(tc, test_meta_outcome);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
