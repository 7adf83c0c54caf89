/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/snapshot: what a snapshot costs (best-effort mode, --no-overlay).
 *
 *   bench-snapshot DIR [FILES [BYTES]]
 *
 * Makes a project of FILES files (default 10000) of BYTES bytes each
 * (default 4096), 100 to a directory, under DIR, then times, each as the
 * best of five: the snapshot with reflinks (where DIR's file system has
 * them), the snapshot as a copy, and the comparison after "a run" that
 * changed ten files. Put DIR on the file system to measure: a snapshot
 * shares data only within one file system. Not a test: it never fails a
 * build. Built by "make bench-snapshot". */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "project/snapshot.h"
#include "txn/txnfs.h"

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int make_project(int root, unsigned files, size_t bytes) {
        char *buf = nsr_malloc0(bytes + 1);
        for (size_t i = 0; i < bytes; i++)
                buf[i] = (char) ('a' + i % 26);
        for (unsigned i = 0; i < files; i++) {
                char dir[32], name[64];
                snprintf(dir, sizeof(dir), "d%03u", i / 100);
                if (i % 100 == 0 && mkdirat(root, dir, 0755) < 0)
                        return -errno;
                snprintf(name, sizeof(name), "%s/f%05u", dir, i);
                int fd = openat(root, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0)
                        return -errno;
                int r = nsr_write_all(fd, buf, bytes);
                close(fd);
                if (r < 0)
                        return r;
        }
        free(buf);
        return 0;
}

static double best_take(int proj, int dst, unsigned flags, nsr_snapshot_stats *ret) {
        double best = 1e9;
        for (int k = 0; k < 5; k++) {
                (void) nsr_txnfs_rm_rf(dst, "snap");
                if (getenv("BENCH_SYNC"))
                        sync();
                nsr_snapshot *s = NULL;
                nsr_error err = { 0 };
                nsr_snapshot_opts o = { .limit = UINT64_C(1) << 40, .flags = flags };
                double t = now();
                if (nsr_snapshot_take(proj, dst, "snap", &o, &s, &err) < 0) {
                        fprintf(stderr, "bench-snapshot: %s\n", err.msg);
                        exit(1);
                }
                t = now() - t;
                if (t < best)
                        best = t;
                *ret = *nsr_snapshot_stats_of(s);
                nsr_snapshot_free(s);
        }
        return best;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: bench-snapshot DIR [FILES [BYTES]]\n");
                return 2;
        }
        unsigned files = argc > 2 ? (unsigned) atoi(argv[2]) : 10000;
        size_t bytes = argc > 3 ? (size_t) atol(argv[3]) : 4096;
        char name[64];
        snprintf(name, sizeof(name), "nsr-bench-snapshot.%d", (int) getpid());
        int parent = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (parent < 0 || mkdirat(parent, name, 0700) < 0) {
                perror(argv[1]);
                return 1;
        }
        int top = openat(parent, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (mkdirat(top, "proj", 0755) < 0 || mkdirat(top, "state", 0700) < 0) {
                perror("mkdir");
                return 1;
        }
        int proj = openat(top, "proj", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int dst = openat(top, "state", O_PATH | O_DIRECTORY | O_CLOEXEC);
        int r = make_project(proj, files, bytes);
        if (r < 0) {
                fprintf(stderr, "bench-snapshot: making the project: %s\n", strerror(-r));
                return 1;
        }
        nsr_snapshot_stats sr, sc;
        double tr = best_take(proj, dst, 0, &sr);
        double tc = best_take(proj, dst, NSR_SNAPSHOT_NO_REFLINK, &sc);
        printf("project: %u files of %zu bytes (%.1f MiB) in %u dirs\n", files, bytes,
               (double) sc.bytes / (1 << 20), (files + 99) / 100);
        printf("snapshot, reflinks:  %8.1f ms  (%s; %.1f MiB shared, %.1f MiB copied)\n", tr * 1e3,
               sr.reflink ? "the file system shares data" : "no reflinks here: copied",
               (double) sr.cloned / (1 << 20), (double) sr.copied / (1 << 20));
        printf("snapshot, copy:      %8.1f ms  (%.1f MiB copied)\n", tc * 1e3, (double) sc.copied / (1 << 20));

        /* The comparison after a run that changed ten files. */
        nsr_snapshot *s = NULL;
        nsr_error err = { 0 };
        (void) nsr_txnfs_rm_rf(dst, "snap");
        nsr_snapshot_opts o = { .limit = UINT64_C(1) << 40 };
        if (nsr_snapshot_take(proj, dst, "snap", &o, &s, &err) < 0) {
                fprintf(stderr, "bench-snapshot: %s\n", err.msg);
                return 1;
        }
        for (unsigned i = 0; i < 10 && i < files; i++) {
                char f[64];
                snprintf(f, sizeof(f), "d%03u/f%05u", (i * 997 % files) / 100, i * 997 % files);
                int fd = openat(proj, f, O_WRONLY | O_APPEND | O_CLOEXEC);
                if (fd >= 0) {
                        (void) nsr_write_all(fd, "x", 1);
                        close(fd);
                }
        }
        int snap = openat(dst, "snap", O_PATH | O_DIRECTORY | O_CLOEXEC);
        double best = 1e9;
        size_t n = 0;
        for (int k = 0; k < 5; k++) {
                nsr_changeset *cs = NULL;
                double t = now();
                if (nsr_snapshot_compare(s, snap, proj, &cs, &err) < 0) {
                        fprintf(stderr, "bench-snapshot: %s\n", err.msg);
                        return 1;
                }
                t = now() - t;
                if (t < best)
                        best = t;
                n = nsr_changeset_size(cs);
                nsr_changeset_free(cs);
        }
        printf("comparison after the run: %5.1f ms  (%zu changes found)\n", best * 1e3, n);
        close(snap);
        nsr_snapshot_free(s);
        close(proj);
        close(dst);
        close(top);
        (void) nsr_txnfs_rm_rf(parent, name);
        close(parent);
        return 0;
}
