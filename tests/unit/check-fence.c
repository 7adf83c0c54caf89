/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The start fence by the multigrain ctime floor (project/fence.c): when it
 * says the floor is past T, every later change gets a ctime after T. */
#include "config.h"

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "project/fence.h"
#include "txn/state.h"
#include "unit.h"

static int tmpdir(char path[64], const char *base) {
        snprintf(path, 64, "%s/nsr-fence.XXXXXX", base);
        ck_assert_ptr_nonnull(mkdtemp(path));
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        return fd;
}

/* Multigrain timestamps and their floor came with Linux 6.13. */
static bool kernel_has_floor(void) {
        struct utsname u;
        int major = 0, minor = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
                return false;
        return major > 6 || (major == 6 && minor >= 13);
}

static bool ctime_after(const struct stat *st, const struct timespec *t) {
        return st->st_ctim.tv_sec > t->tv_sec || (st->st_ctim.tv_sec == t->tv_sec && st->st_ctim.tv_nsec > t->tv_nsec);
}

/* A change made right after the floor was raised: a new file, and a
 * chmod of a file nobody asked the ctime of since its last change. */
static void check_later_changes(int dirfd, const char *where) {
        int held = openat(dirfd, "held", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(held, 0);
        int raised = 0, runs = 300;
        for (int i = 0; i < runs; i++) {
                struct timespec t;
                clock_gettime(CLOCK_REALTIME, &t);
                if (!nsr_fence_raise_floor(dirfd, &t))
                        continue;
                raised++;
                ck_assert_int_eq(fchmod(held, i % 2 ? 0600 : 0640), 0);
                int fd = openat(dirfd, "new", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                ck_assert_int_ge(fd, 0);
                struct stat st, hst;
                ck_assert_int_eq(fstat(fd, &st), 0);
                ck_assert_int_eq(fstat(held, &hst), 0);
                ck_assert_msg(ctime_after(&st, &t), "%s: a file made after the floor was raised has a ctime before T",
                              where);
                ck_assert_msg(ctime_after(&hst, &t), "%s: a chmod after the floor was raised has a ctime before T",
                              where);
                close(fd);
                ck_assert_int_eq(unlinkat(dirfd, "new", 0), 0);
                /* Let the coarse clock tick now and then. */
                if (i % 16 == 0)
                        usleep(1000);
        }
        close(held);
        if (kernel_has_floor())
                ck_assert_msg(raised == runs, "%s: the floor was raised in %d of %d runs on a 6.13+ kernel", where,
                              raised, runs);
        else
                fprintf(stderr, "note: kernel before 6.13: the floor was raised in %d of %d runs\n", raised, runs);
}

START_TEST(test_floor_ext4_or_tmp) {
        char path[64];
        int dirfd = tmpdir(path, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        check_later_changes(dirfd, path);
        close(dirfd);
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e), 0);
}
END_TEST

START_TEST(test_floor_tmpfs) {
        if (access("/dev/shm", W_OK) < 0)
                return; /* covered by the other case where /tmp is tmpfs */
        char path[64];
        int dirfd = tmpdir(path, "/dev/shm");
        check_later_changes(dirfd, path);
        close(dirfd);
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e), 0);
}
END_TEST

/* The proof's new inode is made once per boot and file system: the floor
 * file then says so, and a later raise skips it. A file that says anything
 * else (another boot, other bytes) is proved again and rewritten. */
START_TEST(test_floor_proof_kept) {
        if (!kernel_has_floor())
                return; /* before 6.13 a raise may fail; test_floor_* cover it */
        char path[64];
        int dirfd = tmpdir(path, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        ck_assert(nsr_fence_raise_floor(dirfd, &t));
        char boot[40], want[96];
        nsr_boot_id(boot);
        ck_assert(boot[0]);
        snprintf(want, sizeof(want), "proved %s ", boot);
        int fd = openat(dirfd, "ctime-floor", O_RDWR | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        char buf[128] = { 0 };
        ck_assert_int_gt(pread(fd, buf, sizeof(buf) - 1, 0), 0);
        ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "the floor file holds \"%s\"", buf);
        const char *forged = "proved 00000000-0000-0000-0000-000000000000 1 ef53\n";
        ck_assert_int_eq(ftruncate(fd, 0), 0);
        ck_assert_int_eq(pwrite(fd, forged, strlen(forged), 0), (ssize_t) strlen(forged));
        clock_gettime(CLOCK_REALTIME, &t);
        ck_assert(nsr_fence_raise_floor(dirfd, &t));
        memset(buf, 0, sizeof(buf));
        ck_assert_int_gt(pread(fd, buf, sizeof(buf) - 1, 0), 0);
        ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "another boot's proof was kept: \"%s\"", buf);
        close(fd);
        close(dirfd);
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e), 0);
}
END_TEST

/* A floor file its owner made read-only (a caller other than root cannot
 * open it for writing): the floor is still raised and proved; the proof
 * is kept from the next run on. */
START_TEST(test_floor_file_read_only) {
        if (!kernel_has_floor() || geteuid() != 0)
                return; /* needs root to become another uid; a 6.13+ kernel to be raised */
        char path[64];
        int dirfd = tmpdir(path, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        ck_assert_int_eq(fchown(dirfd, 65534, 65534), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(10);
                int fd = openat(dirfd, "ctime-floor", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
                if (fd < 0)
                        _exit(11);
                close(fd);
                struct timespec t;
                clock_gettime(CLOCK_REALTIME, &t);
                if (!nsr_fence_raise_floor(dirfd, &t))
                        _exit(12);
                /* Raised and proved, not kept; the raise's fchmod made it
                 * 0600 again, so the next run keeps it. */
                struct stat st;
                if (fstatat(dirfd, "ctime-floor", &st, 0) < 0 || st.st_size != 0)
                        _exit(13);
                clock_gettime(CLOCK_REALTIME, &t);
                if (!nsr_fence_raise_floor(dirfd, &t))
                        _exit(14);
                if (fstatat(dirfd, "ctime-floor", &st, 0) < 0 || st.st_size == 0)
                        _exit(15);
                _exit(0);
        }
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "as uid 65534: step %d failed",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        close(dirfd);
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e), 0);
}
END_TEST

/* The floor never goes past the present: a T ahead of now is refused (the
 * caller waits for the coarse clock), as are a floor file that is not a
 * regular file and a file system that does not stamp from the kernel. */
START_TEST(test_floor_refused) {
        char path[64];
        int dirfd = tmpdir(path, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 2;
        ck_assert(!nsr_fence_raise_floor(dirfd, &t));
        clock_gettime(CLOCK_REALTIME, &t);
        ck_assert_int_eq(unlinkat(dirfd, "ctime-floor", 0), 0);
        ck_assert_int_eq(symlinkat("held", dirfd, "ctime-floor"), 0);
        ck_assert(!nsr_fence_raise_floor(dirfd, &t));
        /* Not followed (nothing made at its target), and removed: the next
         * run makes its own. */
        ck_assert_int_eq(faccessat(dirfd, "held", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(faccessat(dirfd, "ctime-floor", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(mkdirat(dirfd, "ctime-floor", 0700), 0);
        ck_assert(!nsr_fence_raise_floor(dirfd, &t));
        ck_assert_int_eq(faccessat(dirfd, "ctime-floor", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        int proc = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(proc, 0);
        ck_assert(!nsr_fence_raise_floor(proc, &t));
        close(proc);
        close(dirfd);
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_rm_rf_at(AT_FDCWD, path, &e), 0);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("fence");
        TCase *tc = tcase_create("floor");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_floor_ext4_or_tmp);
        tcase_add_test(tc, test_floor_tmpfs);
        tcase_add_test(tc, test_floor_refused);
        tcase_add_test(tc, test_floor_proof_kept);
        tcase_add_test(tc, test_floor_file_read_only);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
