/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "state.h"
#include "util.h"

static const char *env_get(char *const *env, const char *name) {
        size_t l = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, l) == 0 && env[i][l] == '=')
                        return env[i] + l + 1;
        return NULL;
}

int nsr_state_dir_resolve(const char *opt, char *const *env, char **ret, nsr_error *err) {
        if (opt) {
                if (opt[0] != '/') {
                        char *cwd = getcwd(NULL, 0);
                        if (!cwd)
                                return nsr_error_set(err, errno, "--state-dir %s: cannot resolve a relative path", opt);
                        *ret = nsr_path_join(cwd, opt);
                        free(cwd);
                } else
                        *ret = nsr_path_normalize(opt);
                return 0;
        }
        const char *xdg = env_get(env, "XDG_STATE_HOME");
        if (xdg && xdg[0] == '/') {
                *ret = nsr_path_join(xdg, "nsrun");
                return 0;
        }
        const char *home = env_get(env, "HOME");
        if (!home || home[0] != '/')
                return nsr_error_setx(err, ENOENT, "no state dir: set HOME, XDG_STATE_HOME or --state-dir");
        *ret = nsr_path_join(home, ".local/state/nsrun");
        return 0;
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = nsr_strdup(path);
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int nsr_state_open(const char *dir, nsr_error *err) {
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot create the state dir %s (choose another with --state-dir)", dir);
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open the state dir %s", dir);
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
                close(fd);
                return nsr_error_setx(err, EPERM, "the state dir %s is not owned by you", dir);
        }
        if (mkdirat(fd, "runs", 0700) < 0 && errno != EEXIST) {
                close(fd);
                return nsr_error_set(err, errno, "cannot create %s/runs", dir);
        }
        if (mkdirat(fd, "projects", 0700) < 0 && errno != EEXIST) {
                close(fd);
                return nsr_error_set(err, errno, "cannot create %s/projects", dir);
        }
        return fd;
}

void nsr_run_id_new(char ret[NSR_RUN_ID_MAX]) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        uint8_t rnd[3] = { 0 };
        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd)) {
                /* Without entropy, the pid and the nanoseconds still make
                 * two runs started together differ. */
                uint32_t x = (uint32_t) getpid() ^ (uint32_t) ts.tv_nsec;
                memcpy(rnd, &x, sizeof(rnd));
        }
        snprintf(ret, NSR_RUN_ID_MAX, "%04d%02d%02dT%02d%02d%02d.%03ldZ-%02x%02x%02x", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, rnd[0], rnd[1], rnd[2]);
}

bool nsr_run_id_is_valid(const char *id) {
        size_t n = strlen(id);
        if (n == 0 || n >= NSR_RUN_ID_MAX || id[0] == '.')
                return false;
        for (const char *s = id; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '.' ||
                      *s == '-'))
                        return false;
        return true;
}

int nsr_run_create(int statefd, const char *run_id, size_t n_projects, nsr_error *err) {
        _cleanup_free_ char *rel = nsr_asprintf("runs/%s", run_id);
        if (mkdirat(statefd, rel, 0700) < 0)
                return nsr_error_set(err, errno, "cannot create the run dir %s", rel);
        _cleanup_close_ int fd = openat(statefd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open the run dir %s", rel);
        for (size_t i = 0; i < n_projects; i++) {
                char p[32], u[48], w[48];
                snprintf(p, sizeof(p), "p%zu", i);
                snprintf(u, sizeof(u), "p%zu/upper", i);
                snprintf(w, sizeof(w), "p%zu/work", i);
                if (mkdirat(fd, p, 0700) < 0 || mkdirat(fd, u, 0755) < 0 || mkdirat(fd, w, 0700) < 0)
                        return nsr_error_set(err, errno, "cannot create the overlay dirs of run %s", run_id);
        }
        return TAKE_FD(fd);
}

int nsr_run_open(int statefd, const char *run_id, nsr_error *err) {
        if (!nsr_run_id_is_valid(run_id))
                return nsr_error_setx(err, EINVAL, "\"%s\" is not a run id", run_id);
        _cleanup_free_ char *rel = nsr_asprintf("runs/%s", run_id);
        int fd = openat(statefd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return nsr_error_set(err, errno, "no run %s", run_id);
        return fd;
}

void nsr_project_key(const char *abs_path, char ret[17]) {
        /* FNV-1a, 64 bits: a stable, short name for a path. */
        uint64_t h = UINT64_C(14695981039346656037);
        for (const unsigned char *s = (const unsigned char *) abs_path; *s; s++) {
                h ^= *s;
                h *= UINT64_C(1099511628211);
        }
        snprintf(ret, 17, "%016llx", (unsigned long long) h);
}

int nsr_project_lock(int statefd, const char *abs_path, nsr_error *err) {
        char key[17];
        nsr_project_key(abs_path, key);
        _cleanup_free_ char *dir = nsr_asprintf("projects/%s", key);
        if (mkdirat(statefd, dir, 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create %s in the state dir", dir);
        _cleanup_free_ char *path = nsr_asprintf("%s/path", dir);
        {
                _cleanup_close_ int pf =
                        openat(statefd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (pf >= 0)
                        (void) nsr_write_all(pf, abs_path, strlen(abs_path));
        }
        _cleanup_free_ char *lock = nsr_asprintf("%s/lock", dir);
        _cleanup_close_ int fd = openat(statefd, lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open the lock of %s", abs_path);
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return nsr_error_set(err, errno, "cannot lock %s", abs_path);
        return TAKE_FD(fd);
}

/* Depth-first removal through dirfds. Entries a sandboxed command made
 * unreadable (mode 000) get u+rwx first: we own them. */
static int rm_tree(int parent, const char *name, unsigned depth) {
        if (depth > 4096)
                return -ELOOP;
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == EACCES) {
                (void) fchmodat(parent, name, 0700, 0);
                fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0)
                return -errno;
        if ((st.st_mode & 0700) != 0700)
                (void) fchmod(fd, 0700);
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int k = rm_tree(dirfd(d), de->d_name, depth + 1);
                if (k < 0 && r == 0)
                        r = k;
        }
        closedir(d);
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

int nsr_rm_rf_at(int dirfd, const char *name, nsr_error *err) {
        /* rm_tree needs a real dir fd as parent, not O_PATH, for readdir of
         * children; fstatat/unlinkat work on O_PATH fds. */
        int r = rm_tree(dirfd, name, 0);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot remove %s", name);
        return 0;
}
