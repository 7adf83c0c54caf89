/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <string.h>

#include "base/dirent.h"

int nsr_opendir_at(int dirfd, const char *name, int flags, DIR **ret) {
        int fd = openat(dirfd, name && *name ? name : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
        if (fd < 0)
                return -errno;
        return nsr_fdopendir(fd, ret);
}

int nsr_fdopendir(int fd, DIR **ret) {
        DIR *d = fdopendir(fd);
        if (!d) {
                int e = -errno;
                close(fd);
                return e;
        }
        *ret = d;
        return 0;
}

struct dirent *nsr_readdir(DIR *d) {
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de)
                        return NULL;
                if (!(de->d_name[0] == '.' &&
                      (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0'))))
                        return de;
        }
}
