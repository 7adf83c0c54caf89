/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal reader (full and header-only) and the applied-fingerprints
 * reader, which recovery runs on files a crash may have torn. The first
 * byte picks the reader; for the journal, bit 0 recomputes the "plan CRC"
 * line so that inputs reach the steps, and a valid plan must survive a
 * write and a second read unchanged. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>

#include "fuzz.h"
#include "txn/journal.h"
#include "txn/txnfs.h"

static int dir_fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
        (void) argc;
        (void) argv;
        dir_fd = fuzz_dir_open();
        return 0;
}

/* The CRC the reader wants on the first "plan " line: of every line
 * before it. */
static char *fix_crc(const uint8_t *data, size_t size, size_t *ret_len) {
        char *buf = nsr_malloc0(size + 32);
        memcpy(buf, data, size);
        uint32_t crc = 0;
        for (size_t i = 0; i < size;) {
                const char *nl = memchr(buf + i, '\n', size - i);
                size_t l = nl ? (size_t) (nl - (buf + i)) : size - i;
                if (l >= 5 && memcmp(buf + i, "plan ", 5) == 0) {
                        char want[16];
                        snprintf(want, sizeof(want), "%08" PRIx32 "\n", crc);
                        /* Replace the rest of that line. */
                        size_t rest = nl ? size - (size_t) (nl + 1 - buf) : 0;
                        char *tail = nsr_malloc0(rest + 1);
                        if (rest)
                                memcpy(tail, nl + 1, rest);
                        memcpy(buf + i + 5, want, 9);
                        memcpy(buf + i + 14, tail, rest);
                        free(tail);
                        *ret_len = i + 14 + rest;
                        return buf;
                }
                crc = nsr_crc32(crc, buf + i, l);
                crc = nsr_crc32(crc, "\n", 1);
                i += l + 1;
        }
        *ret_len = size;
        return buf;
}

static void check_same(const nsr_journal *a, const nsr_journal *b) {
        if (a->n_steps != b->n_steps || a->undo != b->undo || a->index != b->index || strcmp(a->token, b->token) != 0 ||
            !b->plan_valid || strcmp(a->project ? a->project : "", b->project ? b->project : "") != 0)
                abort();
        for (size_t i = 0; i < a->n_steps; i++)
                if (a->steps[i].op != b->steps[i].op || strcmp(a->steps[i].path, b->steps[i].path) != 0 ||
                    a->steps[i].copy != b->steps[i].copy || a->steps[i].n_xattrs != b->steps[i].n_xattrs)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 65536)
                return 0;
        unsigned mode = data[0];
        data++, size--;
        nsr_error err = { 0 };
        if (mode & 4) {
                int fd = openat(dir_fd, "applied", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0 || nsr_write_all(fd, data, size) < 0 || close(fd) < 0)
                        abort();
                nsr_applied a = { 0 };
                if (nsr_applied_read(dir_fd, "applied", &a, &err) >= 0) {
                        for (size_t i = 0; i < a.n; i++) {
                                bool found = false;
                                if (nsr_applied_find(&a, a.f[i].path, &found) > a.n || !found)
                                        abort();
                        }
                        nsr_applied_done(&a);
                }
                return 0;
        }
        size_t len = size;
        _cleanup_free_ char *buf = (mode & 1) ? fix_crc(data, size, &len) : NULL;
        _cleanup_close_ int fd = fuzz_memfd(buf ? buf : (const char *) data, len);
        nsr_journal *j = NULL;
        if (nsr_journal_read(fd, mode & 2, &j, &err) < 0 || !j)
                return 0;
        if (j->plan_valid && !(mode & 2)) {
                _cleanup_close_ int out = fuzz_memfd(NULL, 0);
                nsr_journal *j2 = NULL;
                if (nsr_journal_write_plan(out, j, &err) < 0 || nsr_journal_read(out, false, &j2, &err) < 0 || !j2)
                        abort();
                check_same(j, j2);
                nsr_journal_free(j2);
        }
        nsr_journal_free(j);
        return 0;
}
