/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command-line parser: argv from the input split at NUL bytes. The
 * first byte picks bwrap or nsrun mode. The options that read an fd
 * (--args, --seccomp, --add-seccomp-fd) get a memfd holding the bytes after
 * the first "\0\0\0" in the input, so nothing real is read or closed. */
#include "config.h"

#include <fcntl.h>

#include "cli/cli.h"
#include "fuzz.h"

#define FD_NUM 900

static bool reads_fd(const char *w, size_t *ret_prefix) {
        static const char *const opts[] = { "--args", "--seccomp", "--add-seccomp-fd" };
        for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
                size_t l = strlen(opts[i]);
                if (strncmp(w, opts[i], l) == 0 && (w[l] == '\0' || w[l] == '=')) {
                        *ret_prefix = w[l] == '=' ? l + 1 : 0;
                        return true;
                }
        }
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 4096)
                return 0;
        bool bwrap = data[0] & 1;
        data++, size--;
        const uint8_t *fd_data = memmem(data, size, "\0\0\0", 3);
        size_t words_len = fd_data ? (size_t) (fd_data - data) : size;
        size_t fd_len = fd_data ? size - words_len - 3 : 0;
        size_t n = 0;
        char **args = fuzz_split(data, words_len, 256, &n);
        for (size_t i = 0; i < n; i++) {
                size_t prefix = 0;
                if (!reads_fd(args[i], &prefix))
                        continue;
                char **slot = prefix ? &args[i] : (i + 1 < n ? &args[i + 1] : NULL);
                if (!slot)
                        continue;
                char *repl = nsr_asprintf("%.*s%d", (int) prefix, *slot, FD_NUM);
                free(*slot);
                *slot = repl;
        }
        /* A fresh fd each time: the parser closes what it reads. Several
         * reading options share it; the second finds it closed (EBADF). */
        int fd = fuzz_memfd(fd_data ? fd_data + 3 : data, fd_len);
        if (dup2(fd, FD_NUM) < 0)
                abort();
        close(fd);

        nsr_plan *plan = NULL;
        nsr_cli_result res;
        nsr_error err = { 0 };
        (void) nsr_cli_parse(args, n, bwrap, &plan, &res, &err);
        nsr_plan_free(plan);
        (void) close(FD_NUM);
        nsr_strv_free(args);
        return 0;
}
