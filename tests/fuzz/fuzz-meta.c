/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The run's meta reader (STATE/runs/RUN/meta), and its round trip: what
 * the writer makes of a parsed file must parse to the same record. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/durable.h"
#include "fuzz.h"
#include "txn/state.h"

static int dir_fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        dir_fd = fuzz_dir_open();
        return 0;
}

static bool strv_eq(char **a, char **b) {
        size_t n = nsr_strv_length(a);
        if (n != nsr_strv_length(b))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

static bool opt_eq(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static void check_same(const nsr_run_meta *a, const nsr_run_meta *b) {
        size_t np = nsr_strv_length(a->projects);
        if (!streq(a->run_id, b->run_id) || a->state != b->state || !opt_eq(a->kind, b->kind) ||
            !opt_eq(a->undoes, b->undoes) || a->start.tv_sec != b->start.tv_sec ||
            a->start.tv_nsec != b->start.tv_nsec || !strv_eq(a->projects, b->projects) || !strv_eq(a->argv, b->argv) ||
            a->exit_code != b->exit_code || a->signal != b->signal || a->pid != b->pid ||
            a->pid_start != b->pid_start || !streq(a->boot, b->boot) ||
            (np && memcmp(a->counts, b->counts, np * sizeof(*a->counts)) != 0))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 65536)
                return 0;
        nsr_error err = { 0 };
        if (nsr_durable_write(dir_fd, "meta", data, size, 0600, 0, &err) < 0)
                abort();
        nsr_run_meta m1 = { 0 }, m2 = { 0 }, m3 = { 0 };
        if (nsr_run_meta_read(dir_fd, &m1, &err) < 0)
                return 0;
        /* One write normalises (a value the writer leaves out, such as a
         * negative exit code); from then on it is a fixed point. */
        if (nsr_run_meta_write(dir_fd, &m1, &err) < 0 || nsr_run_meta_read(dir_fd, &m2, &err) < 0)
                abort();
        if (nsr_run_meta_write(dir_fd, &m2, &err) < 0 || nsr_run_meta_read(dir_fd, &m3, &err) < 0)
                abort();
        check_same(&m2, &m3);
        nsr_run_meta_done(&m1);
        nsr_run_meta_done(&m2);
        nsr_run_meta_done(&m3);
        return 0;
}
