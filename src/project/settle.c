/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Settling a session's conflicts: the open and settled records, and the
 * refresh of the session's view (settle.h). */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/durable.h"
#include "project/settle.h"
#include "txn/state.h"
#include "txn/txnfs.h"

#define RECORD_MAX (16u << 20)

static char *read_record(int srun_fd, const char *name) {
        _cleanup_close_ int fd = openat(srun_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        char *data = NULL;
        if (fd < 0 || nsr_read_all(fd, RECORD_MAX, &data, NULL) < 0) {
                free(data);
                return NULL;
        }
        return data;
}

static int write_record(int srun_fd, const char *name, const char *data) {
        nsr_error e = { 0 };
        return nsr_durable_write(srun_fd, name, data, strlen(data), 0600, NSR_DURABLE_SYNC, &e);
}

/* A hex-encoded path with no NUL inside, or NULL. */
static char *decode_path(const char *hex) {
        char *path = NULL;
        size_t len = 0;
        if (nsr_hex_decode(hex, strlen(hex), &path, &len) < 0 || strlen(path) != len || len == 0) {
                free(path);
                return NULL;
        }
        return path;
}

static bool at_or_below(const char *path, const char *top) {
        /* The root's own conflict ("") holds no other path. */
        return *top ? nsr_path_under(path, top) : !*path;
}

/* ---- the open conflicts ---------------------------------------------------------- */

void nsr_settle_open_done(nsr_settle_open *o) {
        nsr_strv_free(o->paths);
        nsr_strv_free(o->since);
        *o = (nsr_settle_open){ 0 };
}

void nsr_settle_open_add(nsr_settle_open *o, const char *path, const char *since) {
        if (nsr_strv_contains(o->paths, path))
                return;
        nsr_strv_extend(&o->paths, path);
        nsr_strv_extend(&o->since, since ? since : "");
}

void nsr_settle_open_read(int srun_fd, size_t i, nsr_settle_open *ret) {
        char name[48];
        snprintf(name, sizeof(name), "session-conflicts-p%zu", i);
        *ret = (nsr_settle_open){ .paths = nsr_malloc0(sizeof(char *)), .since = nsr_malloc0(sizeof(char *)) };
        _cleanup_free_ char *data = read_record(srun_fd, name);
        char *save = NULL;
        for (char *l = data ? strtok_r(data, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
                /* "HEX" (older records) or "HEX RUN". */
                char *sp = strchr(l, ' ');
                if (sp)
                        *sp = '\0';
                _cleanup_free_ char *path = decode_path(l);
                const char *run = sp && nsr_run_id_is_valid(sp + 1) ? sp + 1 : "";
                if (path)
                        nsr_settle_open_add(ret, path, run);
        }
}

int nsr_settle_open_write(int srun_fd, size_t i, const nsr_settle_open *o) {
        char name[48];
        snprintf(name, sizeof(name), "session-conflicts-p%zu", i);
        /* The common case, no conflict ever: no file, and no fsync per commit. */
        if ((!o->paths || !o->paths[0]) && faccessat(srun_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                return 0;
        _cleanup_free_ char *all = nsr_strdup("");
        for (size_t k = 0; o->paths && o->paths[k]; k++) {
                _cleanup_free_ char *hex = nsr_hex_encode(o->paths[k], strlen(o->paths[k]));
                nsr_strappendf(&all, "%s%s%s\n", hex, o->since[k][0] ? " " : "", o->since[k]);
        }
        return write_record(srun_fd, name, all);
}

bool nsr_settle_open_remove(nsr_settle_open *o, const char *path) {
        bool any = false;
        size_t w = 0;
        for (size_t k = 0; o->paths && o->paths[k]; k++) {
                if (at_or_below(o->paths[k], path)) {
                        free(o->paths[k]);
                        free(o->since[k]);
                        any = true;
                        continue;
                }
                o->paths[w] = o->paths[k];
                o->since[w++] = o->since[k];
        }
        if (o->paths) {
                o->paths[w] = NULL;
                o->since[w] = NULL;
        }
        return any;
}

const char *nsr_settle_open_find(const nsr_settle_open *o, const char *path, const char **ret_since) {
        for (size_t k = 0; o->paths && o->paths[k]; k++)
                if (at_or_below(path, o->paths[k])) {
                        if (ret_since)
                                *ret_since = o->since[k];
                        return o->paths[k];
                }
        return NULL;
}

/* ---- the refresh ----------------------------------------------------------------- */

int nsr_settle_refresh(int upper_fd, int project_fd, const char *path) {
        const char *leaf = NULL;
        _cleanup_close_ int up = nsr_txnfs_open_parent(upper_fd, path, &leaf);
        if (up < 0)
                return up;
        struct stat ust, hst;
        if (fstatat(up, leaf, &ust, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISREG(ust.st_mode) || ust.st_nlink != 1)
                return -EOPNOTSUPP;
        _cleanup_close_ int hfd = nsr_txnfs_open(project_fd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (hfd == -ENOENT || hfd == -ELOOP)
                return -EOPNOTSUPP;
        if (hfd < 0)
                return hfd;
        if (fstat(hfd, &hst) < 0)
                return -errno;
        if (!S_ISREG(hst.st_mode))
                return -EOPNOTSUPP;
        /* The upper entry was a lone regular file; a swap since then
         * shows in the fd's own stat. */
        _cleanup_close_ int ufd = openat(up, leaf, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (ufd < 0)
                return -errno;
        struct stat fst;
        if (fstat(ufd, &fst) < 0)
                return -errno;
        if (!S_ISREG(fst.st_mode) || fst.st_nlink != 1 || fst.st_ino != ust.st_ino || fst.st_dev != ust.st_dev)
                return -EOPNOTSUPP;
        if (ftruncate(ufd, 0) < 0)
                return -errno;
        uint64_t n = 0;
        int r = nsr_txnfs_copy_data(hfd, ufd, false, &n);
        if (r < 0)
                return r;
        /* What the capture compares beside the content: mode, owner (as
         * root; a user owns both anyway) and mtime. No setuid or setgid
         * bit in the sandbox's layer. */
        if (geteuid() == 0 && (fst.st_uid != hst.st_uid || fst.st_gid != hst.st_gid))
                (void) fchown(ufd, hst.st_uid, hst.st_gid);
        if (fchmod(ufd, hst.st_mode & 01777) < 0)
                return -errno;
        struct timespec ts[2] = { hst.st_atim, hst.st_mtim };
        if (futimens(ufd, ts) < 0)
                return -errno;
        return 0;
}

/* ---- the settled paths ----------------------------------------------------------- */

static bool is_whiteout(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == 0;
}

static int upper_lstat(int upper_fd, const char *path, struct stat *st) {
        const char *leaf = NULL;
        _cleanup_close_ int up = nsr_txnfs_open_parent(upper_fd, path, &leaf);
        if (up < 0)
                return up;
        return fstatat(up, leaf, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

typedef struct settled {
        char **paths; /* the records that still match */
} settled;

static bool in_settled(const nsr_change *c, void *userdata) {
        settled *s = userdata;
        return nsr_strv_contains(s->paths, c->path);
}

int nsr_settle_drop_settled(int srun_fd, size_t i, int upper_fd, nsr_changeset *cs) {
        char name[48];
        snprintf(name, sizeof(name), "session-settled-p%zu", i);
        _cleanup_free_ char *data = read_record(srun_fd, name);
        if (!data)
                return 0;
        _cleanup_free_ char *kept = nsr_strdup(""), *data_copy = nsr_strdup(data);
        settled s = { 0 };
        char *save = NULL;
        for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char hex[2 * 4096 + 2];
                unsigned long long dev, ino, sec;
                long nsec;
                int wo;
                if (sscanf(l, "%8193s %llu %llu %llu %ld %d", hex, &dev, &ino, &sec, &nsec, &wo) != 6)
                        continue;
                _cleanup_free_ char *path = decode_path(hex);
                struct stat st;
                if (!path || upper_lstat(upper_fd, path, &st) < 0)
                        continue;
                /* Whiteouts share one inode, whose ctime moves with every
                 * other whiteout: a whiteout is a deletion, whichever. */
                bool same = wo ? is_whiteout(&st)
                               : (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino &&
                                            (unsigned long long) st.st_ctim.tv_sec == sec && st.st_ctim.tv_nsec == nsec;
                if (!same)
                        continue;
                nsr_strappendf(&kept, "%s\n", l);
                nsr_strv_extend(&s.paths, path);
        }
        int r = 0;
        if (s.paths) {
                _cleanup_(nsr_changeset_freep) nsr_changeset *dropped = NULL;
                r = nsr_changeset_split(cs, in_settled, &s, &dropped);
        }
        nsr_strv_free(s.paths);
        int w = streq(kept, data_copy) ? 0 : write_record(srun_fd, name, kept);
        return r < 0 ? r : w;
}

int nsr_settle_record(int srun_fd, size_t i, int upper_fd, char *const *paths) {
        if (!paths || !paths[0])
                return 0;
        char name[48];
        snprintf(name, sizeof(name), "session-settled-p%zu", i);
        _cleanup_free_ char *all = read_record(srun_fd, name);
        if (!all)
                all = nsr_strdup("");
        for (size_t k = 0; paths[k]; k++) {
                struct stat st;
                if (strlen(paths[k]) > 4096 || upper_lstat(upper_fd, paths[k], &st) < 0)
                        continue; /* no sandbox version left: nothing to drop later */
                _cleanup_free_ char *hex = nsr_hex_encode(paths[k], strlen(paths[k]));
                nsr_strappendf(&all, "%s %llu %llu %llu %ld %d\n", hex, (unsigned long long) st.st_dev,
                               (unsigned long long) st.st_ino, (unsigned long long) st.st_ctim.tv_sec,
                               st.st_ctim.tv_nsec, is_whiteout(&st) ? 1 : 0);
        }
        return write_record(srun_fd, name, all);
}
