/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The profile lists (profiles/hide.list, profiles/env-deny.list): the
 * reader, "~/" and $VAR expansion of each entry, and the env deny match
 * that uses the entries as fnmatch patterns. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>

#include "fuzz.h"
#include "project/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 65536)
                return 0;
        _cleanup_close_ int fd = fuzz_memfd(data, size);
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        char **list = NULL;
        nsr_error err = { 0 };
        if (nsr_profile_read_list(path, &list, &err) < 0)
                return 0;
        char *env[] = { (char *) "HOME=/home/u", (char *) "XDG_RUNTIME_DIR=/run/user/1",
                        (char *) "EMPTY=", (char *) "A=$B", NULL };
        for (size_t i = 0; list[i]; i++) {
                if (!list[i][0] || list[i][0] == '#' || list[i][0] == ' ')
                        abort(); /* the reader drops blanks and comments and trims */
                free(nsr_profile_expand(list[i], "/home/u", env));
                free(nsr_profile_expand(list[i], NULL, env));
        }
        (void) nsr_profile_env_denied("AWS_SECRET_ACCESS_KEY", list);
        (void) nsr_profile_env_denied(list[0] ? list[0] : "X", list);
        nsr_strv_free(list);
        return 0;
}
