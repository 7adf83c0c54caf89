/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state dir's records: the durable write helper, the run's meta file
 * and the one rm -rf (issue 18). */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/durable.h"
#include "base/util.h"
#include "txn/state.h"
#include "txn/txnfs.h"
#include "unit.h"

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

        /* The mode asked for, whatever the umask. */
        mode_t old_mask = umask(077);
        ck_assert_int_eq(nsr_durable_write(dir, "m", "m", 1, 0644, 0, &err), 0);
        umask(old_mask);
        ck_assert_int_eq(fstatat(dir, "m", &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0644);

        /* The two halves: a write that failed midway leaves the old file
         * and no temporary; one never finished (the cleanup) neither. */
        size_t before = count_entries(dir);
        nsr_durable d = NSR_DURABLE_INIT;
        ck_assert_int_eq(nsr_durable_begin(&d, dir, "f", 0600, NSR_DURABLE_SYNC, &err), 0);
        ck_assert_int_eq(nsr_write_all(d.fd, "three\n", 6), 0);
        ck_assert_uint_eq(count_entries(dir), before + 1);
        ck_assert_int_eq(nsr_durable_finish(&d, nsr_error_set(&err, EIO, "a write failed"), &err), -EIO);
        ck_assert_int_eq(d.fd, -1);
        ck_assert_uint_eq(count_entries(dir), before);
        free(s);
        s = slurp(dir, "f");
        ck_assert_str_eq(s, "two\n");
        {
                _cleanup_(nsr_durable_done) nsr_durable u = NSR_DURABLE_INIT;
                ck_assert_int_eq(nsr_durable_begin(&u, dir, "f", 0600, 0, &err), 0);
                ck_assert_uint_eq(count_entries(dir), before + 1);
        }
        ck_assert_uint_eq(count_entries(dir), before);
        ck_assert_int_eq(nsr_durable_begin(&d, dir, "f", 0600, NSR_DURABLE_SYNC, &err), 0);
        ck_assert_int_eq(nsr_write_all(d.fd, "four\n", 5), 0);
        ck_assert_int_eq(nsr_durable_finish(&d, 0, &err), 0);
        ck_assert_uint_eq(count_entries(dir), before);
        free(s);
        s = slurp(dir, "f");
        ck_assert_str_eq(s, "four\n");

        /* NSR_DURABLE_IF_CHANGED: the same bytes and mode leave the file
         * (the same inode); other bytes, another mode, another length or
         * a symlink at the name are replaced; a synced write always
         * writes. */
        struct stat a, b;
        ck_assert_int_eq(nsr_durable_write(dir, "c", "same", 4, 0600, 0, &err), 0);
        ck_assert_int_eq(fstatat(dir, "c", &a, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "c", "same", 4, 0600, NSR_DURABLE_IF_CHANGED, &err), 0);
        ck_assert_int_eq(fstatat(dir, "c", &b, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(a.st_ino, b.st_ino);
        ck_assert_int_eq(nsr_durable_write(dir, "c", "same", 4, 0600, NSR_DURABLE_IF_CHANGED | NSR_DURABLE_SYNC, &err),
                         0);
        ck_assert_int_eq(fstatat(dir, "c", &b, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_ne(a.st_ino, b.st_ino);
        a = b;
        ck_assert_int_eq(nsr_durable_write(dir, "c", "sane", 4, 0600, NSR_DURABLE_IF_CHANGED, &err), 0);
        ck_assert_int_eq(fstatat(dir, "c", &b, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_ne(a.st_ino, b.st_ino);
        free(s);
        s = slurp(dir, "c");
        ck_assert_str_eq(s, "sane");
        ck_assert_int_eq(nsr_durable_write(dir, "c", "san", 3, 0600, NSR_DURABLE_IF_CHANGED, &err), 0);
        free(s);
        s = slurp(dir, "c");
        ck_assert_str_eq(s, "san");
        ck_assert_int_eq(nsr_durable_write(dir, "c", "san", 3, 0644, NSR_DURABLE_IF_CHANGED, &err), 0);
        ck_assert_int_eq(fstatat(dir, "c", &b, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(b.st_mode & 07777, 0644);
        ck_assert_int_eq(symlinkat("c", dir, "cl"), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "cl", "san", 3, 0644, NSR_DURABLE_IF_CHANGED, &err), 0);
        ck_assert_int_eq(fstatat(dir, "cl", &b, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert(S_ISREG(b.st_mode));

        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
        close(dir);
}
END_TEST

static ino_t ino_at(int dirfd, const char *name) {
        struct stat st;
        ck_assert_int_eq(fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
        return st.st_ino;
}

/* NSR_DURABLE_SPARE: each write takes the first spare left (its inode
 * becomes the file), in a subdir too; a spare that is not an empty regular
 * file of ours is never written through (a link is not followed, a fifo
 * not waited on, content not kept) and goes; with none left a write makes
 * its own temporary; the spares not taken are dropped. */
START_TEST(test_durable_spares) {
        char path[64];
        int dir = tmpdir(path);
        nsr_error err = { 0 };
        ck_assert(nsr_durable_spares_make(dir));
        ck_assert(!nsr_durable_spares_make(dir)); /* O_EXCL: none made over one there */
        ck_assert_uint_eq(count_entries(dir), NSR_DURABLE_SPARES);
        ck_assert(nsr_durable_spare_is(dir, ".spare-0"));
        ck_assert_uint_eq(NSR_DURABLE_SPARES, 3);
        ino_t s0 = ino_at(dir, ".spare-0"), s2 = ino_at(dir, ".spare-2");
        ck_assert_int_eq(mkdirat(dir, "sub", 0700), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "sub/a", "a\n", 2, 0640, NSR_DURABLE_SPARE, &err), 0);
        ck_assert_uint_eq(ino_at(dir, "sub/a"), s0);
        struct stat st;
        ck_assert_int_eq(fstatat(dir, "sub/a", &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0640);
        _cleanup_free_ char *a = slurp(dir, "sub/a");
        ck_assert_str_eq(a, "a\n");
        /* .spare-1 holds content: not written through (its bytes would
         * show after the "b"), and gone. */
        int fd = openat(dir, ".spare-1", O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(nsr_write_all(fd, "planted", 7), 0);
        close(fd);
        ck_assert_int_eq(nsr_durable_write(dir, "b", "b", 1, 0600, NSR_DURABLE_SPARE, &err), 0);
        ck_assert_int_eq(faccessat(dir, ".spare-1", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        _cleanup_free_ char *b = slurp(dir, "b");
        ck_assert_str_eq(b, "b");
        ck_assert_int_eq(nsr_durable_write(dir, "c", "c", 1, 0600, NSR_DURABLE_SPARE, &err), 0);
        ck_assert_uint_eq(ino_at(dir, "c"), s2);
        _cleanup_free_ char *c = slurp(dir, "c");
        ck_assert_str_eq(c, "c");
        /* None left: a temporary of its own, and nothing left behind. */
        size_t before = count_entries(dir);
        ck_assert_int_eq(nsr_durable_write(dir, "e", "e", 1, 0600, NSR_DURABLE_SPARE, &err), 0);
        ck_assert_uint_eq(count_entries(dir), before + 1);

        /* A symlink and a fifo planted as spares: neither followed nor
         * waited on; the write still lands. */
        ck_assert_int_eq(openat(dir, "victim", O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0, 1);
        ck_assert_int_eq(symlinkat("victim", dir, ".spare-0"), 0);
        ck_assert_int_eq(mkfifoat(dir, ".spare-1", 0600), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "f", "f", 1, 0600, NSR_DURABLE_SPARE, &err), 0);
        ck_assert_int_eq(nsr_durable_write(dir, "g", "g", 1, 0600, NSR_DURABLE_SPARE, &err), 0);
        ck_assert_int_eq(fstatat(dir, "victim", &st, 0), 0);
        ck_assert_int_eq(st.st_size, 0);
        ck_assert_int_eq(fstatat(dir, "f", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_int_eq(fstatat(dir, "g", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert(S_ISREG(st.st_mode));

        /* Dropped: the spares only, never another file. */
        ck_assert(nsr_durable_spares_make(dir));
        ck_assert_int_eq(fd = openat(dir, ".spare-2", O_WRONLY | O_CLOEXEC), fd);
        ck_assert_int_eq(nsr_write_all(fd, "x", 1), 0);
        close(fd);
        nsr_durable_spares_drop(dir);
        ck_assert_int_eq(faccessat(dir, ".spare-0", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(faccessat(dir, ".spare-2", F_OK, AT_SYMLINK_NOFOLLOW), 0);
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
        static const char *const names[] = {
                "running", "committed", "conflict", "kept", "discarded", "failed", "undone"
        };
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
                { "state kept\n", NSR_OUTCOME_KEPT },        { "state undone\n", NSR_OUTCOME_UNDONE },
                { "state kept-ish\n", NSR_OUTCOME_UNKNOWN }, { "state \xff\x1b[2J\n", NSR_OUTCOME_UNKNOWN },
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

/* A run's final record is appended to the one it wrote when it began
 * (nsr_run_meta_append): the reader takes the last whole record, a part
 * a crash or a full disk cut short (no "end" line, or zeros in its place)
 * leaves the first one standing, and a file that is not as a run leaves it
 * (a record without "end", a second link) is written whole instead. */
static void write_raw(int dir, const char *name, const char *data, size_t len) {
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, data, len), (ssize_t) len);
        close(fd);
}

static nsr_outcome state_read(int dir) {
        nsr_run_meta r = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), 0);
        nsr_outcome o = r.state;
        nsr_run_meta_done(&r);
        return o;
}

START_TEST(test_meta_append) {
        char path[64];
        int dir = tmpdir(path);
        char *projects[] = { (char *) "/p/a", NULL };
        unsigned long counts[2][5] = { { 0 } };
        nsr_run_meta m = { .state = NSR_OUTCOME_RUNNING,
                           .kind = (char *) "run",
                           .start = { .tv_sec = 1764000000, .tv_nsec = 5 },
                           .projects = projects,
                           .exit_code = -1,
                           .counts = counts };
        snprintf(m.run_id, sizeof(m.run_id), "20261127T000000.000Z-abcdef");
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_run_meta_write(dir, &m, &err), 0);
        struct stat before, after;
        ck_assert_int_eq(fstatat(dir, "meta", &before, 0), 0);
        _cleanup_free_ char *first = slurp(dir, "meta");
        ck_assert(nsr_endswith(first, "\nend\n"));

        /* The final record goes after the first, in the same file. */
        m.state = NSR_OUTCOME_COMMITTED;
        m.exit_code = 0;
        counts[0][1] = 4;
        ck_assert_int_eq(nsr_run_meta_append(dir, &m, &err), 0);
        ck_assert_int_eq(fstatat(dir, "meta", &after, 0), 0);
        ck_assert_uint_eq(after.st_ino, before.st_ino);
        nsr_run_meta r = { 0 };
        ck_assert_int_eq(nsr_run_meta_read(dir, &r, &err), 0);
        ck_assert_int_eq(r.state, NSR_OUTCOME_COMMITTED);
        ck_assert_int_eq(r.exit_code, 0);
        ck_assert_uint_eq(nsr_strv_length(r.projects), 1);
        ck_assert_uint_eq(r.counts[0][1], 4);
        nsr_run_meta_done(&r);
        _cleanup_free_ char *both = slurp(dir, "meta");
        ck_assert_uint_eq(count_entries(dir), 1);

        /* An append cut short: every prefix of the second record that is
         * not all of it, and zeros in its place, read as the first. */
        size_t n1 = strlen(first), n2 = strlen(both);
        for (size_t cut = n1; cut < n2; cut++) {
                write_raw(dir, "meta", both, cut);
                ck_assert_msg(state_read(dir) == NSR_OUTCOME_RUNNING, "cut at %zu of %zu", cut, n2);
        }
        _cleanup_free_ char *zeros = nsr_malloc0(n2);
        memcpy(zeros, both, n1);
        write_raw(dir, "meta", zeros, n2);
        ck_assert_int_eq(state_read(dir), NSR_OUTCOME_RUNNING);
        /* ... and an append after such a file writes it whole. */
        write_raw(dir, "meta", both, n2 - 2);
        ck_assert_int_eq(nsr_run_meta_append(dir, &m, &err), 0);
        _cleanup_free_ char *whole = slurp(dir, "meta");
        ck_assert_str_eq(whole, both + n1);
        ck_assert_int_eq(state_read(dir), NSR_OUTCOME_COMMITTED);

        /* A meta written before records ended in "end" reads whole, and an
         * append to it writes it whole. */
        static const char old[] = "version 1\nrun R1\nkind run\nstate kept\nstart 1.000000002\n";
        write_raw(dir, "meta", old, strlen(old));
        ck_assert_int_eq(state_read(dir), NSR_OUTCOME_KEPT);
        ck_assert_int_eq(nsr_run_meta_append(dir, &m, &err), 0);
        _cleanup_free_ char *rewritten = slurp(dir, "meta");
        ck_assert_str_eq(rewritten, both + n1);

        /* A second link (another name reads it too): written whole, under
         * a new inode, and the other name keeps the first record. */
        m.state = NSR_OUTCOME_RUNNING;
        ck_assert_int_eq(nsr_run_meta_write(dir, &m, &err), 0);
        ck_assert_int_eq(linkat(dir, "meta", dir, "other", 0), 0);
        _cleanup_free_ char *linked = slurp(dir, "other");
        m.state = NSR_OUTCOME_DISCARDED;
        ck_assert_int_eq(nsr_run_meta_append(dir, &m, &err), 0);
        ck_assert_int_eq(state_read(dir), NSR_OUTCOME_DISCARDED);
        _cleanup_free_ char *other = slurp(dir, "other");
        ck_assert_str_eq(other, linked);
        _cleanup_free_ char *single = slurp(dir, "meta");
        ck_assert_ptr_null(strstr(single, "state running"));

        /* No meta at all: written whole. */
        ck_assert_int_eq(unlinkat(dir, "meta", 0), 0);
        ck_assert_int_eq(nsr_run_meta_append(dir, &m, &err), 0);
        ck_assert_int_eq(state_read(dir), NSR_OUTCOME_DISCARDED);

        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
        close(dir);
}
END_TEST

/* ---- the one rm -rf ---------------------------------------------------- */

/* The checks below run in a child that may drop to an unprivileged uid
 * (root opens a 000 dir anyway, so as root the mode fixing is never
 * needed); it reports the first failed check as its exit code. */
#define EXPECT(cond, code)                                                                                             \
        do {                                                                                                           \
                if (!(cond))                                                                                           \
                        _exit(code);                                                                                   \
        } while (0)

static int mode_of(const char *path) {
        struct stat st;
        return lstat(path, &st) < 0 ? -1 : (int) (st.st_mode & 07777);
}

/* A tree a sandbox could leave: symlinks to a host file and a host dir,
 * dirs with mode 000 (nested) and 0500. */
static void rm_static(const char *base) {
        char outside[128], outdir[128], tree[128], p[256];
        snprintf(outside, sizeof(outside), "%s/outside", base);
        snprintf(outdir, sizeof(outdir), "%s/outdir", base);
        snprintf(tree, sizeof(tree), "%s/tree", base);
        int fd = open(outside, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
        EXPECT(fd >= 0 && write(fd, "host\n", 5) == 5 && close(fd) == 0, 10);
        EXPECT(chmod(outside, 0640) == 0 && mkdir(outdir, 0750) == 0 && chmod(outdir, 0750) == 0, 11);
        snprintf(p, sizeof(p), "%s/keep", outdir);
        EXPECT(close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0, 12);
        EXPECT(mkdir(tree, 0700) == 0, 13);
        snprintf(p, sizeof(p), "%s/a", tree);
        EXPECT(mkdir(p, 0700) == 0, 14);
        snprintf(p, sizeof(p), "%s/a/abs", tree);
        EXPECT(symlink(outside, p) == 0, 15);
        snprintf(p, sizeof(p), "%s/a/rel", tree);
        EXPECT(symlink("../../outside", p) == 0, 16);
        snprintf(p, sizeof(p), "%s/a/dir", tree);
        EXPECT(symlink(outdir, p) == 0, 17);
        snprintf(p, sizeof(p), "%s/z", tree);
        EXPECT(mkdir(p, 0700) == 0, 18);
        snprintf(p, sizeof(p), "%s/z/sub", tree);
        EXPECT(mkdir(p, 0700) == 0, 19);
        snprintf(p, sizeof(p), "%s/z/sub/f", tree);
        EXPECT(close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0, 20);
        snprintf(p, sizeof(p), "%s/z/host", tree);
        EXPECT(symlink(outside, p) == 0, 21);
        snprintf(p, sizeof(p), "%s/z/sub", tree);
        EXPECT(chmod(p, 0) == 0, 22);
        snprintf(p, sizeof(p), "%s/z", tree);
        EXPECT(chmod(p, 0) == 0, 23);
        snprintf(p, sizeof(p), "%s/b", tree);
        EXPECT(mkdir(p, 0700) == 0, 24);
        snprintf(p, sizeof(p), "%s/b/f", tree);
        EXPECT(close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0, 25);
        snprintf(p, sizeof(p), "%s/b", tree);
        EXPECT(chmod(p, 0500) == 0, 26);

        nsr_error err = { 0 };
        EXPECT(nsr_rm_rf_at(AT_FDCWD, tree, &err) == 0, 30);
        EXPECT(access(tree, F_OK) < 0 && errno == ENOENT, 31);
        /* What the links pointed at keeps its mode and content. */
        EXPECT(mode_of(outside) == 0640, 32);
        EXPECT(mode_of(outdir) == 0750, 33);
        snprintf(p, sizeof(p), "%s/keep", outdir);
        EXPECT(access(p, F_OK) == 0, 34);
        int rfd = open(outside, O_RDONLY | O_CLOEXEC);
        char buf[16] = "";
        EXPECT(rfd >= 0 && read(rfd, buf, sizeof(buf)) == 5 && memcmp(buf, "host\n", 5) == 0, 35);
        close(rfd);
}

/* The race the old state.c rm had: lstat sees a dir, the open fails (mode
 * 000), and the mode fix by name (fchmodat without AT_SYMLINK_NOFOLLOW)
 * then follows what is now a symlink to a host file. A second process
 * swaps the two as fast as it can; the host file must keep its mode. */
static void rm_race(const char *base) {
        char target[128], tree[128];
        snprintf(target, sizeof(target), "%s/target", base);
        snprintf(tree, sizeof(tree), "%s/race", base);
        EXPECT(close(open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == 0, 40);
        EXPECT(chmod(target, 0600) == 0, 41);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        enum { PAIRS = 16 };
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_sec - t0.tv_sec >= 4)
                        break;
                EXPECT(mkdir(tree, 0700) == 0, 42);
                int tfd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
                EXPECT(tfd >= 0, 43);
                for (int k = 0; k < PAIRS; k++) {
                        char x[8], y[8];
                        snprintf(x, sizeof(x), "x%d", k);
                        snprintf(y, sizeof(y), "y%d", k);
                        EXPECT(mkdirat(tfd, x, 0) == 0 && symlinkat(target, tfd, y) == 0, 43);
                }
                pid_t sw = fork();
                EXPECT(sw >= 0, 44);
                if (sw == 0) {
                        /* Until rm has taken one of each pair away. */
                        bool live[PAIRS];
                        for (int k = 0; k < PAIRS; k++)
                                live[k] = true;
                        for (int n = PAIRS; n > 0;)
                                for (int k = 0; k < PAIRS; k++) {
                                        char x[8], y[8];
                                        snprintf(x, sizeof(x), "x%d", k);
                                        snprintf(y, sizeof(y), "y%d", k);
                                        if (live[k] && renameat2(tfd, x, tfd, y, RENAME_EXCHANGE) < 0) {
                                                live[k] = false;
                                                n--;
                                        }
                                }
                        _exit(0);
                }
                nsr_error err = { 0 };
                /* Bounded by time, not by tries: a hundred tries could all
                 * fall while the swapper still ran (1 run in 12 on a slow
                 * file system). */
                struct timespec r0, rn;
                clock_gettime(CLOCK_MONOTONIC, &r0);
                do {
                        (void) nsr_rm_rf_at(AT_FDCWD, tree, &err);
                        clock_gettime(CLOCK_MONOTONIC, &rn);
                } while (access(tree, F_OK) == 0 && rn.tv_sec - r0.tv_sec < 20);
                kill(sw, SIGKILL);
                waitpid(sw, NULL, 0);
                close(tfd);
                EXPECT(access(tree, F_OK) < 0, 45);
                EXPECT(mode_of(target) == 0600, 46);
        }
}

static void run_rm_check(void (*fn)(const char *base), bool as_user) {
        char base[64];
        int dir = tmpdir(base);
        close(dir);
        if (as_user && chown(base, 65534, 65534) < 0)
                ck_abort_msg("chown %s: %s", base, strerror(errno));
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (as_user && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                                setresuid(65534, 65534, 65534) < 0))
                        _exit(2);
                fn(base);
                _exit(0);
        }
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, base, &e2), 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "check %d failed%s",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1, as_user ? " (as uid 65534)" : "");
}

/* Deeper than the walk holds fds for (NSR_TXNFS_MAX_DEPTH), with a 000
 * dir at the bottom: a command must not make its run impossible to remove
 * by nesting dirs. */
static void rm_deep(const char *base) {
        char tree[128];
        snprintf(tree, sizeof(tree), "%s/deep", base);
        EXPECT(mkdir(tree, 0700) == 0, 50);
        int fd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
        EXPECT(fd >= 0, 51);
        for (unsigned i = 0; i < 5 * NSR_TXNFS_MAX_DEPTH + 7; i++) {
                EXPECT(mkdirat(fd, "d", 0700) == 0, 52);
                EXPECT(close(openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == 0, 53);
                int next = openat(fd, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
                EXPECT(next >= 0, 54);
                close(fd);
                fd = next;
        }
        EXPECT(mkdirat(fd, "locked", 0700) == 0 && mkdirat(fd, "locked/in", 0700) == 0, 55);
        EXPECT(fchmodat(fd, "locked/in", 0, 0) == 0 && fchmodat(fd, "locked", 0, 0) == 0, 56);
        close(fd);
        nsr_error err = { 0 };
        EXPECT(nsr_rm_rf_at(AT_FDCWD, tree, &err) == 0, 57);
        EXPECT(access(tree, F_OK) < 0 && errno == ENOENT, 58);
}

START_TEST(test_rm_rf_deep) {
        run_rm_check(rm_deep, false);
        if (geteuid() == 0)
                run_rm_check(rm_deep, true);
}
END_TEST

START_TEST(test_rm_rf_no_follow) {
        run_rm_check(rm_static, false);
        if (geteuid() == 0)
                run_rm_check(rm_static, true);
}
END_TEST

/* The one mode-change primitive refuses a symlink's own fd. */
START_TEST(test_fd_chmod_symlink) {
        char path[64];
        int dir = tmpdir(path);
        ck_assert_int_eq(close(openat(dir, "t", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
        ck_assert_int_eq(fchmodat(dir, "t", 0600, 0), 0);
        ck_assert_int_eq(symlinkat("t", dir, "l"), 0);
        int lfd = openat(dir, "l", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        ck_assert_int_ge(lfd, 0);
        ck_assert_int_eq(nsr_txnfs_fd_chmod(lfd, 0777), -ELOOP);
        close(lfd);
        struct stat st;
        ck_assert_int_eq(fstatat(dir, "t", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0600);
        int tfd = openat(dir, "t", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        ck_assert_int_eq(nsr_txnfs_fd_chmod(tfd, 0640), 0);
        close(tfd);
        ck_assert_int_eq(fstatat(dir, "t", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0640);
        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
        close(dir);
}
END_TEST

START_TEST(test_rm_rf_race) {
        run_rm_check(rm_race, geteuid() == 0);
}
END_TEST

/* The run's reserve: a run that did not need it leaves it to the next run
 * (no block freed on its path), which takes it only when it is a whole
 * reserve of its own; a full state dir frees it. */
static ino_t reserve_ino(int run_fd) {
        struct stat st;
        ck_assert_int_eq(fstatat(run_fd, "reserve", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert(S_ISREG(st.st_mode));
        ck_assert_uint_eq(st.st_nlink, 1);
        ck_assert_uint_ge((uint64_t) st.st_blocks * 512, NSR_RUN_RESERVE);
        return st.st_ino;
}

static int new_run(int statefd, const char *name) {
        ck_assert_int_eq(mkdirat(statefd, name, 0700), 0);
        int fd = openat(statefd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        return fd;
}

START_TEST(test_reserve_spare) {
        char path[64];
        int statefd = tmpdir(path);
        nsr_error e = { 0 };
        int r1 = new_run(statefd, "r1"), r2 = new_run(statefd, "r2"), r3 = new_run(statefd, "r3");
        ck_assert_int_eq(nsr_run_reserve(statefd, r1, &e), 0);
        ino_t first = reserve_ino(r1);
        /* Released with room: it becomes the spare, the next run takes it. */
        nsr_run_release(statefd, r1, false);
        ck_assert_int_eq(faccessat(r1, "reserve", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(faccessat(statefd, NSR_RESERVE_SPARE, F_OK, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_eq(nsr_run_reserve(statefd, r2, &e), 0);
        ck_assert_uint_eq(reserve_ino(r2), first);
        ck_assert_int_eq(faccessat(statefd, NSR_RESERVE_SPARE, F_OK, AT_SYMLINK_NOFOLLOW), -1);
        /* No spare: a new one; a second release finds the spare taken and
         * frees its own. */
        ck_assert_int_eq(nsr_run_reserve(statefd, r3, &e), 0);
        ck_assert_uint_ne(reserve_ino(r3), first);
        nsr_run_release(statefd, r2, false);
        nsr_run_release(statefd, r3, false);
        ck_assert_int_eq(faccessat(r3, "reserve", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        struct stat st;
        ck_assert_int_eq(fstatat(statefd, NSR_RESERVE_SPARE, &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(st.st_ino, first);
        /* A full state dir: freed, not kept. */
        ck_assert_int_eq(unlinkat(statefd, NSR_RESERVE_SPARE, 0), 0);
        ck_assert_int_eq(nsr_run_reserve(statefd, r1, &e), 0);
        nsr_run_release(statefd, r1, true);
        ck_assert_int_eq(faccessat(r1, "reserve", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(faccessat(statefd, NSR_RESERVE_SPARE, F_OK, AT_SYMLINK_NOFOLLOW), -1);

        /* What is not a whole reserve of its own is not taken: a symlink
         * (left as it was by nobody but us: it is removed), a short file,
         * a file with a second link, a dir. */
        ck_assert_int_eq(symlinkat("/dev/zero", statefd, NSR_RESERVE_SPARE), 0);
        ck_assert_int_eq(nsr_run_reserve(statefd, r2, &e), 0);
        reserve_ino(r2);
        nsr_run_release(statefd, r2, true);
        int fd = openat(statefd, NSR_RESERVE_SPARE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "x", 1), 1);
        close(fd);
        ck_assert_int_eq(nsr_run_reserve(statefd, r2, &e), 0);
        reserve_ino(r2);
        nsr_run_release(statefd, r2, true);
        ck_assert_int_eq(nsr_run_reserve(statefd, r1, &e), 0);
        nsr_run_release(statefd, r1, false);
        ck_assert_int_eq(linkat(statefd, NSR_RESERVE_SPARE, statefd, "second-link", 0), 0);
        ck_assert_int_eq(nsr_run_reserve(statefd, r2, &e), 0);
        reserve_ino(r2);
        nsr_run_release(statefd, r2, true);
        ck_assert_int_eq(mkdirat(statefd, NSR_RESERVE_SPARE, 0700), 0);
        ck_assert_int_eq(nsr_run_reserve(statefd, r3, &e), 0);
        reserve_ino(r3);
        nsr_run_release(statefd, r3, true);
        close(r1);
        close(r2);
        close(r3);
        close(statefd);
        nsr_error e2 = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e2), 0);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("state");
        TCase *tc = tcase_create("records");
        tcase_add_test(tc, test_durable_write);
        tcase_add_test(tc, test_durable_spares);
        tcase_add_test(tc, test_meta_round_trip);
        tcase_add_test(tc, test_meta_outcome);
        tcase_add_test(tc, test_meta_append);
        tcase_add_test(tc, test_reserve_spare);
        suite_add_tcase(s, tc);
        TCase *rm = tcase_create("rm");
        tcase_set_timeout(rm, 60);
        tcase_add_test(rm, test_rm_rf_no_follow);
        tcase_add_test(rm, test_fd_chmod_symlink);
        tcase_add_test(rm, test_rm_rf_deep);
        tcase_add_test(rm, test_rm_rf_race);
        suite_add_tcase(s, rm);
        return s;
}

NSR_UNIT_MAIN(suite)
