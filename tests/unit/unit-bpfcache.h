/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the tests of a program nsrun builds itself and keeps in the seccomp
 * cache share (nsr_seccomp_builtin_bpf). */
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"
#include "seccomp/compile.h"
#include "unit.h"

/* The entries of the seccomp cache under dir: how many, and the last. */
static inline size_t bpfcache_entries(const char *dir, char **ret_last) {
        _cleanup_free_ char *sub = nsr_asprintf("%s/nsrun/seccomp", dir);
        DIR *d = opendir(sub);
        ck_assert_ptr_nonnull(d);
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        n++;
                        free(*ret_last);
                        *ret_last = nsr_asprintf("%s/%s", sub, de->d_name);
                }
        closedir(d);
        return n;
}

/* build, in a cache of its own: compiled and stored once (one entry), then
 * the same bytes from the cache, and compiled again, the same, when the
 * entry fails its check (a flipped byte). check (or NULL) is called on
 * the compiled and on the cached program. Returns the program. */
static inline char *bpfcache_check(nsr_seccomp_build_fn build, void (*check)(const char *, size_t), size_t *ret_len) {
        char dir[] = "/tmp/check-bpfcache.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        setenv("XDG_CACHE_HOME", dir, 1);
        char *a = NULL, *b = NULL, *c = NULL, *entry = NULL;
        size_t alen = 0, blen = 0, clen = 0;
        nsr_error e = { 0 };
        ck_assert_msg(build(&a, &alen, &e) == 0, "%s", e.msg);
        ck_assert_uint_eq(bpfcache_entries(dir, &entry), 1);
        if (check)
                check(a, alen);
        ck_assert_int_eq(build(&b, &blen, &e), 0);
        ck_assert_uint_eq(alen, blen);
        ck_assert_mem_eq(a, b, alen);
        ck_assert_uint_eq(bpfcache_entries(dir, &entry), 1);
        if (check)
                check(b, blen);
        int fd = open(entry, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(pwrite(fd, "\xff", 1, 0), 1);
        close(fd);
        ck_assert_int_eq(build(&c, &clen, &e), 0);
        ck_assert_uint_eq(alen, clen);
        ck_assert_mem_eq(a, c, alen);
        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
        unsetenv("XDG_CACHE_HOME");
        free(entry);
        free(b);
        free(c);
        *ret_len = alen;
        return a;
}
