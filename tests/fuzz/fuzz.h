/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the libFuzzer targets (tests/fuzz/README). */
#pragma once

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input split at NUL bytes, at most max words (the rest ignored). */
static inline char **fuzz_split(const uint8_t *data, size_t size, size_t max, size_t *ret_n) {
        char **v = nsr_malloc0((max + 1) * sizeof(char *));
        size_t n = 0, i = 0;
        while (i < size && n < max) {
                size_t l = strnlen((const char *) data + i, size - i);
                v[n++] = nsr_strndup((const char *) data + i, l);
                i += l + 1;
        }
        *ret_n = n;
        return v;
}

/* A memfd holding data, offset 0. */
static inline int fuzz_memfd(const void *data, size_t size) {
        int fd = memfd_create("fuzz", MFD_CLOEXEC);
        if (fd < 0)
                abort();
        if (size && nsr_write_all(fd, data, size) < 0)
                abort();
        if (lseek(fd, 0, SEEK_SET) != 0)
                abort();
        return fd;
}

/* A scratch dir for targets whose reader takes a dirfd; its files and the
 * dir itself are removed at a normal exit (a crash leaves them, in
 * $TMPDIR/nsrun-fuzz.*). */
static char fuzz_dir_path[4096];
static void fuzz_dir_remove(void) {
        static const char *const names[] = { "meta", "applied", NULL };
        int fd = open(fuzz_dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (size_t i = 0; fd >= 0 && names[i]; i++)
                (void) unlinkat(fd, names[i], 0);
        if (fd >= 0)
                close(fd);
        (void) rmdir(fuzz_dir_path);
}
static inline int fuzz_dir_open(void) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/nsrun-fuzz.XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
        if (!mkdtemp(fuzz_dir_path))
                abort();
        atexit(fuzz_dir_remove);
        int fd = open(fuzz_dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                abort();
        return fd;
}
