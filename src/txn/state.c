/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "base/dirent.h"
#include "base/durable.h"
#include "base/util.h"
#include "txn/spare.h"
#include "txn/state.h"
#include "txn/txnfs.h"

#ifdef NSR_ASAN
#include <sanitizer/lsan_interface.h>
#endif

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

#define OVERLAYFS_MAGIC 0x794c7630

/* Why dir (which need not exist yet) cannot be a state dir here, or NULL:
 * judged on it or on its nearest existing ancestor, where it would be
 * made. */
static const char *state_dir_unusable(const char *dir) {
        _cleanup_free_ char *p = nsr_strdup(dir);
        struct stat st;
        while (lstat(p, &st) < 0) {
                char *slash = strrchr(p, '/');
                if (errno != ENOENT || !slash)
                        return "it cannot be looked up";
                if (slash == p)
                        slash[1] = '\0';
                else
                        *slash = '\0';
        }
        if (!S_ISDIR(st.st_mode))
                return "it is not a directory";
        struct statvfs vfs;
        if (statvfs(p, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
                return "read-only file system";
        struct statfs fs;
        if (statfs(p, &fs) == 0 && (unsigned long) fs.f_type == OVERLAYFS_MAGIC)
                return "it is on an overlay, which cannot hold the overlay layers of runs";
        if (faccessat(AT_FDCWD, p, W_OK | X_OK, AT_EACCESS) < 0)
                return "not writable";
        if (streq(p, dir) && st.st_uid != geteuid())
                return "not owned by you";
        return NULL;
}

/* The private fallback: a real dir of ours that nobody else may write,
 * made if missing. */
static int fallback_state_dir(const char *path, nsr_error *err) {
        struct stat st;
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the state dir %s", path);
        if (lstat(path, &st) < 0)
                return nsr_error_set(err, errno, "cannot stat the state dir %s", path);
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
                return nsr_error_setx(err, EPERM,
                                      "%s exists but is not a private directory of yours (owner uid %u, mode %04o); "
                                      "choose a state dir with --state-dir",
                                      path, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
        return 0;
}

int nsr_state_dir_choose(const char *opt, char *const *env, bool for_run, char **ret, char **ret_note, nsr_error *err) {
        _cleanup_free_ char *dir = NULL;
        int r = nsr_state_dir_resolve(opt, env, &dir, err);
        if (r < 0 && (opt || r != -ENOENT))
                return r;
        nsr_error_clear(err);
        *ret_note = NULL;
        if (opt) {
                *ret = TAKE_PTR(dir);
                return 0;
        }
        const char *tmp = env_get(env, "TMPDIR");
        if (!tmp || tmp[0] != '/')
                tmp = "/tmp";
        _cleanup_free_ char *base = nsr_path_normalize(tmp);
        _cleanup_free_ char *fb = nsr_asprintf("%s/nsrun-state-%u", base, (unsigned) geteuid());
        struct stat st;
        const char *why = dir ? state_dir_unusable(dir) : "no HOME or XDG_STATE_HOME";
        /* On an overlay, but so is the temp dir (a container's root): the
         * move would gain nothing and lose the runs' persistence. */
        if (why && nsr_startswith(why, "it is on an overlay") && state_dir_unusable(base))
                why = NULL;
        if (!for_run) {
                /* Subcommands look where runs went: where a run would
                 * have gone, if that dir exists. */
                if (why && lstat(fb, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
                        *ret = TAKE_PTR(fb);
                        return 0;
                }
                if (!dir)
                        return nsr_error_setx(err, ENOENT, "no state dir: set HOME, XDG_STATE_HOME or --state-dir");
                *ret = TAKE_PTR(dir);
                return 0;
        }
        if (!why) {
                *ret = TAKE_PTR(dir);
                return 0;
        }
        r = fallback_state_dir(fb, err);
        if (r < 0)
                return nsr_error_prefix(err, "the state dir %s cannot be used (%s), and the fallback", dir ? dir : "",
                                        why);
        *ret_note = nsr_asprintf("the state dir %s cannot be used here (%s); using %s", dir ? dir : "(none)", why, fb);
        *ret = TAKE_PTR(fb);
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
        /* A state dir that is there (every run but the first) is opened
         * without a mkdir of each of its ancestors first, each failing
         * with EEXIST; a run opens it twice. */
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                int r = mkdir_p(dir, 0700);
                if (r < 0)
                        return nsr_error_set(err, -r,
                                             "cannot create the state dir %s (choose another with --state-dir)", dir);
                fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
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
        struct tm tm = { 0 };
        (void) nsr_gmtime(ts.tv_sec, &tm);
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
        int spare = nsr_run_take_spare(statefd, rel, n_projects);
        if (spare >= 0)
                return spare;
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

uint64_t nsr_state_free(int statefd) {
        struct statvfs vfs;
        if (fstatvfs(statefd, &vfs) < 0)
                return UINT64_MAX;
        return (uint64_t) vfs.f_bavail * vfs.f_frsize;
}

int nsr_state_full_error(int statefd, const char *dir, nsr_error *err) {
        uint64_t free_b = nsr_state_free(statefd);
        char have[64] = "";
        if (free_b != UINT64_MAX)
                snprintf(have, sizeof(have), ": %llu KiB free", (unsigned long long) (free_b >> 10));
        return nsr_error_setxk(err, NSR_ERR_STATE_FULL, ENOSPC,
                               "the state dir %s is full%s, and a run needs at least %llu KiB there to start, "
                               "plus room for what the command writes; free space there (\"nsrun gc\", \"nsrun "
                               "discard RUN\") or choose another state dir (--state-dir)",
                               dir, have, (unsigned long long) (NSR_STATE_MIN_FREE >> 10));
}

int nsr_state_check_space(int statefd, const char *dir, nsr_error *err) {
        uint64_t free_b = nsr_state_free(statefd);
        /* The spare reserve is only kept while there is room: it yields
         * before a run is refused for space. */
        if (free_b != UINT64_MAX && free_b < NSR_STATE_MIN_FREE) {
                nsr_run_drop_spare(statefd);
                if (unlinkat(statefd, NSR_RESERVE_SPARE, 0) == 0)
                        free_b = nsr_state_free(statefd);
        }
        if (free_b != UINT64_MAX && free_b < NSR_STATE_MIN_FREE)
                return nsr_state_full_error(statefd, dir, err);
        return 0;
}

/* The spare, moved into the run dir, is taken when it is what a reserve
 * must be: a regular file of ours, with no other link (its blocks must go
 * when it is released on a full state dir), holding the whole reserve. */
static bool take_spare(int statefd, int run_fd) {
        if (renameat(statefd, NSR_RESERVE_SPARE, run_fd, "reserve") < 0)
                return false;
        struct stat st;
        if (fstatat(run_fd, "reserve", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && st.st_nlink == 1 && (uint64_t) st.st_blocks * 512 >= NSR_RUN_RESERVE)
                return true;
        nsr_error e = { 0 };
        (void) nsr_rm_rf_at(run_fd, "reserve", &e);
        return false;
}

int nsr_run_reserve(int statefd, int run_fd, nsr_error *err) {
        if (take_spare(statefd, run_fd))
                return 0;
        _cleanup_close_ int fd = openat(run_fd, "reserve", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot create the run's reserve");
        int r = posix_fallocate(fd, 0, (off_t) NSR_RUN_RESERVE);
        if (r == EOPNOTSUPP || r == EINVAL) {
                /* No fallocate here: blocks written hold the space as well. */
                static const char zero[4096];
                r = 0;
                for (uint64_t done = 0; done < NSR_RUN_RESERVE && r == 0; done += sizeof(zero))
                        r = -nsr_write_all(fd, zero, sizeof(zero));
        }
        if (r != 0) {
                (void) unlinkat(run_fd, "reserve", 0);
                return nsr_error_set(err, r, "cannot hold the run's reserve in the state dir");
        }
        return 0;
}

void nsr_run_release(int statefd, int run_fd, bool state_full) {
        /* Freeing its blocks costs a synchronous discard on a file system
         * mounted with "discard" (2 to 4 ms each on the VM of
         * bench/README.md): a run that does not need the space leaves the
         * reserve to the next run, unless another run left one already. */
        if (!state_full && renameat2(run_fd, "reserve", statefd, NSR_RESERVE_SPARE, RENAME_NOREPLACE) == 0)
                return;
        (void) unlinkat(run_fd, "reserve", 0);
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
        /* Only a note for whoever looks at the state dir by hand: the key
         * is the path's hash, and the lock does not depend on it. Written
         * once, not at every lock (two a run). */
        nsr_error pe = { 0 };
        (void) nsr_durable_write(statefd, path, abs_path, strlen(abs_path), 0600, NSR_DURABLE_IF_CHANGED, &pe);
        _cleanup_free_ char *lock = nsr_asprintf("%s/lock", dir);
        _cleanup_close_ int fd = openat(statefd, lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open the lock of %s", abs_path);
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return nsr_error_set(err, errno, "cannot lock %s", abs_path);
        return TAKE_FD(fd);
}

int nsr_rm_rf_at(int dirfd, const char *name, nsr_error *err) {
        /* The one rm -rf (txnfs.c): no symlink followed, 000 dirs of ours
         * made removable, depth bounded. */
        int r = nsr_txnfs_rm_rf(dirfd, name);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot remove %s", name);
        return 0;
}

static const char *const outcome_names[_NSR_OUTCOME_MAX] = {
        [NSR_OUTCOME_RUNNING] = "running", [NSR_OUTCOME_COMMITTED] = "committed", [NSR_OUTCOME_CONFLICT] = "conflict",
        [NSR_OUTCOME_KEPT] = "kept",       [NSR_OUTCOME_DISCARDED] = "discarded", [NSR_OUTCOME_FAILED] = "failed",
        [NSR_OUTCOME_UNDONE] = "undone",   [NSR_OUTCOME_UNKNOWN] = "unknown",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_outcome, nsr_outcome, outcome_names)
DEFINE_PRIVATE_STRING_TABLE_LOOKUP(outcome, nsr_outcome, outcome_names)

nsr_outcome nsr_outcome_from_string(const char *s) {
        nsr_outcome o = outcome_from_string(s);
        return o < 0 ? NSR_OUTCOME_UNKNOWN : o;
}

void nsr_run_meta_done(nsr_run_meta *m) {
        free(m->kind);
        free(m->undoes);
        nsr_strv_free(m->projects);
        nsr_strv_free(m->argv);
        free(m->counts);
        free(m->ids);
        memset(m, 0, sizeof(*m));
}

/* One record: "version 1", a line per field, "end". */
static char *meta_format(const nsr_run_meta *m, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fprintf(f, "version 1\nrun %s\nkind %s\nstate %s\nstart %lld.%09ld\n", m->run_id, m->kind ? m->kind : "run",
                nsr_outcome_to_string(m->state) ?: "unknown", (long long) m->start.tv_sec, m->start.tv_nsec);
        if (m->undoes)
                fprintf(f, "undoes %s\n", m->undoes);
        if (m->pid > 0)
                fprintf(f, "owner %d %llu %s\n", (int) m->pid, m->pid_start, m->boot[0] ? m->boot : "-");
        if (m->exit_code >= 0)
                fprintf(f, "exit %d\n", m->exit_code);
        if (m->signal > 0)
                fprintf(f, "signal %d\n", m->signal);
        for (size_t i = 0; m->projects && m->projects[i]; i++) {
                _cleanup_free_ char *hex = nsr_hex_encode(m->projects[i], strlen(m->projects[i]));
                fprintf(f, "project %s", hex);
                if (m->counts)
                        for (int k = 0; k < 5; k++)
                                fprintf(f, " %lu", m->counts[i][k]);
                fputc('\n', f);
                if (m->ids && (m->ids[i][0] || m->ids[i][1]))
                        fprintf(f, "project-id %llu %llu\n", m->ids[i][0], m->ids[i][1]);
        }
        for (size_t i = 0; m->argv && m->argv[i]; i++) {
                _cleanup_free_ char *hex = nsr_hex_encode(m->argv[i], strlen(m->argv[i]));
                fprintf(f, "arg %s\n", hex);
        }
        fputs("end\n", f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        *ret_len = len;
        return buf;
}

int nsr_run_meta_write(int run_fd, const nsr_run_meta *m, nsr_error *err) {
        size_t len = 0;
        char *buf = meta_format(m, &len);
        if (!buf)
                return nsr_error_set(err, ENOMEM, "run meta");
        /* No fsync: the journals carry what a recovery needs; a meta lost
         * in a crash leaves the older state, which gc and undo handle. */
        int r = nsr_durable_write(run_fd, "meta", buf, len, 0600, NSR_DURABLE_SPARE, err);
        free(buf);
        if (r < 0)
                return nsr_error_prefix(err, "cannot write the run's meta file");
        return 0;
}

/* The most a meta may hold before an append rewrites it whole instead. */
#define META_APPEND_MAX (64u << 10)

int nsr_run_meta_append(int run_fd, const nsr_run_meta *m, nsr_error *err) {
        _cleanup_close_ int fd =
                openat(run_fd, "meta", O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        char tail[6] = "";
        /* A file of ours, alone (no other link reads it as another run's),
         * that ends in a whole record: else the whole file is written
         * anew. */
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 ||
            st.st_size < 5 || st.st_size > (off_t) META_APPEND_MAX || pread(fd, tail, 5, st.st_size - 5) != 5 ||
            !streq(tail, "\nend\n"))
                return nsr_run_meta_write(run_fd, m, err);
        size_t len = 0;
        _cleanup_free_ char *buf = meta_format(m, &len);
        if (!buf)
                return nsr_error_set(err, ENOMEM, "run meta");
        /* No fsync, as for a whole write. A crash may keep a part of it,
         * or zeros in its place: without its "end" line it is no record,
         * and the one before stands (nsr_run_meta_read). */
        ssize_t w = write(fd, buf, len);
        if (w == (ssize_t) len)
                return 0;
        /* What did go in ends in no "end": the whole file, written anew,
         * says it all, or the error does. */
        return nsr_run_meta_write(run_fd, m, err);
}

/* The record a meta holds: its last whole one, from a "version" line to an
 * "end" line; a part an append left without its end (a crash, a full
 * disk) or anything after a NUL byte does not count. A file with no whole
 * record (written before records ended in "end") is read whole. Returns
 * where it starts, with the file cut after it. */
static char *meta_record(char *data) {
        char *start = NULL, *best = NULL, *best_end = NULL;
        for (char *line = data; line && *line;) {
                char *nl = strchr(line, '\n');
                size_t n = nl ? (size_t) (nl - line) : strlen(line);
                if (n > 8 && strncmp(line, "version ", 8) == 0)
                        start = line;
                else if (n == 3 && strncmp(line, "end", 3) == 0 && nl && start) {
                        best = start;
                        best_end = nl + 1;
                        start = NULL;
                }
                line = nl ? nl + 1 : NULL;
        }
        if (!best)
                return data;
        *best_end = '\0';
        return best;
}

int nsr_run_meta_read(int run_fd, nsr_run_meta *ret, nsr_error *err) {
        _cleanup_close_ int fd = openat(run_fd, "meta", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot read the run's meta file");
        _cleanup_free_ char *data = NULL;
        int r = nsr_read_all(fd, 16u << 20, &data, NULL);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot read the run's meta file");
        nsr_run_meta m = { .exit_code = -1 };
        bool have_state = false;
        size_t n_proj = 0;
        for (char *line = meta_record(data), *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                char *sp = strchr(line, ' ');
                if (!sp)
                        continue;
                *sp = '\0';
                const char *key = line, *val = sp + 1;
                if (streq(key, "run"))
                        snprintf(m.run_id, sizeof(m.run_id), "%s", val);
                else if (streq(key, "state"))
                        m.state = nsr_outcome_from_string(val), have_state = true;
                else if (streq(key, "kind"))
                        free(m.kind), m.kind = nsr_strdup(val);
                else if (streq(key, "undoes"))
                        free(m.undoes), m.undoes = nsr_strdup(val);
                else if (streq(key, "start")) {
                        long long s = 0;
                        long ns = 0;
                        if (sscanf(val, "%lld.%ld", &s, &ns) == 2)
                                m.start = (struct timespec){ .tv_sec = s, .tv_nsec = ns };
                } else if (streq(key, "owner")) {
                        /* Without it every running run would look orphaned
                         * (a session's, a run in progress). */
                        int pid = 0;
                        unsigned long long st = 0;
                        char boot[40] = "";
                        if (sscanf(val, "%d %llu %39s", &pid, &st, boot) >= 2 && pid > 0) {
                                m.pid = pid;
                                m.pid_start = st;
                                if (!streq(boot, "-"))
                                        snprintf(m.boot, sizeof(m.boot), "%s", boot);
                        }
                } else if (streq(key, "exit"))
                        m.exit_code = atoi(val);
                else if (streq(key, "signal"))
                        m.signal = atoi(val);
                else if (streq(key, "project-id")) {
                        /* Belongs to the project line just before it. */
                        unsigned long long dev = 0, ino = 0;
                        if (n_proj > 0 && sscanf(val, "%llu %llu", &dev, &ino) == 2) {
                                m.ids[n_proj - 1][0] = dev;
                                m.ids[n_proj - 1][1] = ino;
                        }
                } else if (streq(key, "project") || streq(key, "arg")) {
                        char *sp2 = strchr(val, ' ');
                        _cleanup_free_ char *hex = sp2 ? nsr_strndup(val, (size_t) (sp2 - val)) : nsr_strdup(val);
                        char *bytes = NULL;
                        if (nsr_hex_decode(hex, strlen(hex), &bytes, NULL) < 0)
                                continue;
                        if (streq(key, "arg")) {
                                nsr_strv_push(&m.argv, bytes);
                                continue;
                        }
                        nsr_strv_push(&m.projects, bytes);
                        m.counts = nsr_realloc_array(m.counts, n_proj + 1, sizeof(*m.counts));
                        memset(m.counts[n_proj], 0, sizeof(*m.counts));
                        m.ids = nsr_realloc_array(m.ids, n_proj + 1, sizeof(*m.ids));
                        memset(m.ids[n_proj], 0, sizeof(*m.ids));
                        if (sp2)
                                sscanf(sp2, " %lu %lu %lu %lu %lu", &m.counts[n_proj][0], &m.counts[n_proj][1],
                                       &m.counts[n_proj][2], &m.counts[n_proj][3], &m.counts[n_proj][4]);
                        n_proj++;
                }
        }
        if (!have_state || !m.run_id[0]) {
                nsr_run_meta_done(&m);
                return nsr_error_setx(err, EINVAL, "the run's meta file is damaged");
        }
        *ret = m;
        return 0;
}

static int cmp_desc(const void *a, const void *b) {
        return -strcmp(*(char *const *) a, *(char *const *) b);
}

int nsr_state_list_runs(int statefd, char ***ret, nsr_error *err) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(statefd, "runs", O_NOFOLLOW, &d);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot list the runs");
        _cleanup_strv_free_ char **v = nsr_malloc0(sizeof(char *));
        FOREACH_DIRENT(de, d, return nsr_error_set(err, errno, "cannot list the runs"))
        if (nsr_run_id_is_valid(de->d_name))
                nsr_strv_extend(&v, de->d_name);
        qsort(v, nsr_strv_length(v), sizeof(char *), cmp_desc);
        *ret = TAKE_PTR(v);
        return 0;
}

static uint64_t tree_size(int parent, const char *name, unsigned depth) {
        struct stat st;
        if (depth > 256 || fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        uint64_t total = (uint64_t) st.st_blocks * 512;
        if (!S_ISDIR(st.st_mode))
                return total;
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(parent, name, O_NOFOLLOW, &d) < 0)
                return total;
        /* An estimate for gc's report: what cannot be read counts as 0. */
        FOREACH_DIRENT(de, d, break)
        total += tree_size(dirfd(d), de->d_name, depth + 1);
        return total;
}

uint64_t nsr_state_tree_size(int dirfd, const char *name) {
        return tree_size(dirfd, name, 0);
}

typedef struct gc_run {
        char *id;
        nsr_run_meta meta;
        uint64_t size;   /* all of the run dir */
        uint64_t layers; /* of it, what the sandbox wrote (see run_layers) */
        bool undoable;   /* applied: its backups are what an undo restores */
        bool gone;
        bool busy;
        bool newest; /* the newest run of one of its projects: always kept */
} gc_run;

/* An applied run's dirs that hold what the sandbox wrote, not what an undo
 * needs: the protected entries set aside, the sandbox's versions of
 * conflicting paths, a snapshot's leftovers, and any layer left behind. */
static const char *const leftover_dirs[] = { "excluded", "conflict", "trash" };
static const char *const layer_dirs[] = { "upper", "work" };

/* What of run id the sandbox wrote: all of it for a run that applied
 * nothing (kept, failed, discarded, undone: its layers and snapshots are
 * its whole size), the leftovers above for an applied one. */
static uint64_t run_layers(int runs_fd, gc_run *g) {
        if (!g->undoable)
                return g->size;
        _cleanup_close_ int fd = openat(runs_fd, g->id, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        uint64_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(leftover_dirs); i++)
                n += tree_size(fd, leftover_dirs[i], 0);
        for (size_t p = 0; g->meta.projects && g->meta.projects[p]; p++) {
                char rel[32];
                snprintf(rel, sizeof(rel), "p%zu", p);
                _cleanup_close_ int pfd = openat(fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                for (size_t i = 0; pfd >= 0 && i < ELEMENTSOF(layer_dirs); i++)
                        n += tree_size(pfd, layer_dirs[i], 0);
        }
        return n < g->size ? n : g->size;
}

static int remove_run(int statefd, gc_run *g, nsr_gc_stats *st, nsr_error *err) {
        _cleanup_free_ char *rel = nsr_asprintf("runs/%s", g->id);
        int r = nsr_rm_rf_at(statefd, rel, err);
        if (r < 0)
                return r;
        g->gone = true;
        st->removed++;
        st->bytes += g->size;
        return 0;
}

/* An applied run over the layer budget loses its leftovers only: its
 * backups stay for undo. */
static int remove_leftovers(int runs_fd, gc_run *g, nsr_gc_stats *st, nsr_error *err) {
        _cleanup_close_ int fd = openat(runs_fd, g->id, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open run %s", g->id);
        int r = 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(leftover_dirs); i++)
                if (faccessat(fd, leftover_dirs[i], F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                        r = nsr_rm_rf_at(fd, leftover_dirs[i], err);
        for (size_t p = 0; r >= 0 && g->meta.projects && g->meta.projects[p]; p++) {
                char rel[32];
                snprintf(rel, sizeof(rel), "p%zu", p);
                _cleanup_close_ int pfd = openat(fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                for (size_t i = 0; r >= 0 && pfd >= 0 && i < ELEMENTSOF(layer_dirs); i++)
                        if (faccessat(pfd, layer_dirs[i], F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                                r = nsr_rm_rf_at(pfd, layer_dirs[i], err);
        }
        if (r < 0)
                return r;
        st->bytes += g->layers;
        g->size -= g->layers;
        g->layers = 0;
        return 0;
}

/* The two size budgets of one project, newest run first. Backups: the
 * NSR_GC_UNDO_KEEP newest applied runs stay whatever their size; older
 * applied runs go once the backups counted so far pass the limit. Layers:
 * once what sandboxes wrote (every run's layers, an applied run's
 * leftovers) passes the limit, an unapplied run goes whole (never the
 * project's newest run), an applied one loses its leftovers only. The
 * budgets never mix: what a run writes cannot push out an undo. */
static int gc_project(int statefd, int runs_fd, gc_run *runs, size_t n, const char *proj, uint64_t limit,
                      nsr_gc_stats *st, nsr_error *err) {
        uint64_t backups = 0, layers = 0;
        size_t applied = 0;
        bool newest = true;
        int r = 0;
        for (size_t k = 0; k < n && r >= 0; k++) {
                gc_run *g = &runs[k];
                if (g->gone || !nsr_strv_contains(g->meta.projects, proj))
                        continue;
                bool first = newest;
                newest = false;
                if (g->undoable) {
                        backups += g->size - g->layers;
                        if (++applied > NSR_GC_UNDO_KEEP && backups > limit && !g->busy) {
                                r = remove_run(statefd, g, st, err);
                                continue;
                        }
                }
                layers += g->layers;
                if (layers <= limit || g->busy || first)
                        continue;
                if (g->undoable) {
                        layers -= g->layers;
                        r = remove_leftovers(runs_fd, g, st, err);
                } else
                        r = remove_run(statefd, g, st, err);
        }
        return r;
}

int nsr_state_gc(int statefd, long keep_days, uint64_t backup_limit, nsr_gc_stats *ret, nsr_error *err) {
        _cleanup_strv_free_ char **ids = NULL;
        nsr_gc_stats st = { 0 };
        int r = nsr_state_list_runs(statefd, &ids, err);
        if (r < 0)
                return r;
        size_t n = nsr_strv_length(ids);
        gc_run *runs = nsr_malloc0((n + 1) * sizeof(gc_run));
        _cleanup_close_ int runs_fd = openat(statefd, "runs", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        /* keep_days comes from the user: a count of days beyond the epoch
         * must not overflow into a cutoff in the future, which would make
         * every run old. Such a count keeps everything. */
        bool by_age = keep_days >= 0 && now.tv_sec >= 0 && keep_days <= now.tv_sec / 86400;
        time_t cutoff = by_age ? now.tv_sec - (time_t) keep_days * 86400 : 0;
        for (size_t i = 0; i < n; i++) {
                runs[i].id = ids[i];
                nsr_error e = { 0 };
                _cleanup_close_ int fd = nsr_run_open(statefd, ids[i], &e);
                if (fd < 0 || nsr_run_meta_read(fd, &runs[i].meta, &e) < 0) {
                        runs[i].gone = true; /* not ours to judge: leave it */
                        continue;
                }
                /* What a run's own removal left behind (its nsrun died
                 * first): never needed. */
                if (runs[i].meta.state != NSR_OUTCOME_RUNNING) {
                        nsr_error te = { 0 };
                        (void) nsr_rm_rf_at(fd, "trash", &te);
                }
                runs[i].size = tree_size(runs_fd, ids[i], 0);
                runs[i].undoable =
                        runs[i].meta.state == NSR_OUTCOME_COMMITTED || runs[i].meta.state == NSR_OUTCOME_CONFLICT;
                runs[i].layers = run_layers(runs_fd, &runs[i]);
                /* A live run, or an apply waiting for recovery, is not ours
                 * to prune. An orphaned run (its nsrun died) is. */
                if ((runs[i].meta.state == NSR_OUTCOME_RUNNING && !nsr_run_meta_is_orphan(&runs[i].meta)) ||
                    !nsr_run_journals_settled(fd))
                        runs[i].busy = true;
        }
        /* The ids sort newest first: a run is the newest of a project when
         * no run before it names that project. */
        for (size_t i = 0; i < n; i++) {
                if (runs[i].gone)
                        continue;
                for (size_t p = 0; runs[i].meta.projects && runs[i].meta.projects[p] && !runs[i].newest; p++) {
                        bool newer = false;
                        for (size_t k = 0; k < i && !newer; k++)
                                newer = !runs[k].gone &&
                                        nsr_strv_contains(runs[k].meta.projects, runs[i].meta.projects[p]);
                        runs[i].newest = !newer;
                }
        }
        for (size_t i = 0; i < n && r >= 0 && by_age; i++) {
                gc_run *g = &runs[i];
                if (g->gone || g->busy || g->newest)
                        continue;
                if (g->meta.start.tv_sec <= cutoff)
                        r = remove_run(statefd, g, &st, err);
        }
        /* The budgets, once per project. */
        _cleanup_strv_free_ char **done = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (runs[i].gone || !runs[i].meta.projects)
                        continue;
                for (size_t p = 0; runs[i].meta.projects[p] && r >= 0; p++) {
                        const char *proj = runs[i].meta.projects[p];
                        if (nsr_strv_contains(done, proj))
                                continue;
                        nsr_strv_extend(&done, proj);
                        r = gc_project(statefd, runs_fd, runs, n, proj, backup_limit, &st, err);
                }
        }
        for (size_t i = 0; i < n; i++)
                nsr_run_meta_done(&runs[i].meta);
        free(runs);
        if (ret)
                *ret = st;
        return r < 0 ? r : 0;
}

/* The child's side of a background process: its own session, no fd of
 * the caller's, a low priority. keep[i] (n at most 2) becomes fd 3 + i and
 * no other fd past 2 stays open; false when that cannot be arranged (the
 * child then does nothing). */
static bool detached_setup(const int *keep, size_t n) {
        if (setsid() < 0 || n > 2)
                return false;
        int moved[2];
        /* Out of the way of the dup2s first. */
        for (size_t i = 0; i < n; i++)
                if ((moved[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 10)) < 0)
                        return false;
        for (size_t i = 0; i < n; i++)
                if (dup2(moved[i], 3 + (int) i) < 0)
                        return false;
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
        }
        closefrom(3 + (int) n);
        (void) nice(10);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        return true;
}

/* A child in its own session, with no fd of the caller's once it runs
 * and a low priority: whoever reads nsrun's output must not wait for its
 * work. Returns false in the caller, true in the child. The caller goes
 * on at once: it does not wait for a middle process to
 * fork and exit, as a fresh process can wait milliseconds for a CPU on a
 * busy machine (0.01 to 17 ms, 2 ms typical, on the VM of
 * bench/README.md). Both callers, a run's monitor and a session's, exit
 * soon after; the child, reparented then, is never a zombie for long.
 * In the child, keep[i] (n at most 2) is fd 3 + i, and no other fd past 2
 * is open; a child that cannot arrange that does nothing. */
static bool detach(const int *keep, size_t n) {
        pid_t pid = fork();
        if (pid != 0)
                return false;
        if (!detached_setup(keep, n))
                _exit(0);
        return true;
}

/* The trash's removal and the next spare, in the background process: fd 3
 * holds the sandbox's mounts when hold, fd 4 (when ordered) ends once the
 * caller's copy of fd 3 is closed. */
static void trash_work(const char *state_dir, const char *run_dir, bool hold, bool ordered) {
        int fd = open(run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                nsr_durable_spares_drop(fd);
                nsr_run_trash_trim(fd);
        }
        /* The sandbox's mounts go (the overlay syncs), then the next run's
         * dir is made ahead (txn/spare.h), from what the trash holds where
         * it can: the layers are reused only once no mount holds them. What
         * is left in the trash goes last. */
        if (ordered) {
                char c;
                while (read(4, &c, 1) < 0 && errno == EINTR)
                        ;
        }
        close(3);
        int statefd = state_dir ? open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        if (statefd >= 0 && nsr_state_free(statefd) >= 2 * NSR_STATE_MIN_FREE)
                nsr_run_make_spare(statefd, hold ? fd : -1);
        if (fd >= 0) {
                nsr_error e = { 0 };
                (void) nsr_rm_rf_at(fd, "trash", &e);
        }
        safe_close(statefd);
        safe_close(fd);
}

static void gc_work(const char *state_dir, long keep_days, uint64_t backup_limit) {
        int statefd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (statefd >= 0) {
                nsr_error e = { 0 };
                (void) nsr_state_gc(statefd, keep_days, backup_limit, NULL, &e);
                close(statefd);
        }
}

/* What nsr_state_background_defer() keeps for nsr_state_background_exit(). */
static struct {
        bool defer, trash, gc;
        char *state_dir, *run_dir, *gc_dir;
        int hold_fd;
        long keep_days;
        uint64_t backup_limit;
} kept = { .hold_fd = -1 };

void nsr_state_background_defer(void) {
        kept.defer = true;
}

/* The fds a trash's background process takes (its fds 3 and 4): the held
 * mounts and the read end of order, n of them. */
typedef struct kept_fds {
        int fd[2];
        size_t n;
} kept_fds;

/* The caller's copy of hold_fd must go first: should the child close its
 * own before, the caller's close would be the last, and the caller would
 * wait for the mounts' teardown (an overlay's sync, milliseconds). The
 * child waits for the end of order[0]. */
static kept_fds trash_keep(int hold_fd, int order[2]) {
        order[0] = order[1] = -1;
        if (hold_fd >= 0 && pipe2(order, O_CLOEXEC) < 0)
                order[0] = order[1] = -1;
        return (kept_fds){ .fd = { hold_fd, order[0] }, .n = hold_fd < 0 ? 0 : order[0] < 0 ? 1 : 2 };
}

void nsr_state_trash_background(const char *state_dir, const char *run_dir, int hold_fd) {
        if (kept.defer && !kept.trash) {
                kept.trash = true;
                kept.state_dir = state_dir ? nsr_strdup(state_dir) : NULL;
                kept.run_dir = nsr_strdup(run_dir);
                kept.hold_fd = hold_fd;
                return;
        }
        int order[2];
        kept_fds k = trash_keep(hold_fd, order);
        if (!detach(k.fd, k.n)) {
                safe_close(hold_fd);
                safe_close(order[0]);
                safe_close(order[1]);
                return;
        }
        trash_work(state_dir, run_dir, k.n >= 1, k.n == 2);
        _exit(0);
}

void nsr_state_gc_background(const char *state_dir, long keep_days, uint64_t backup_limit) {
        _cleanup_free_ char *stamp = nsr_path_join(state_dir, "gc.stamp");
        struct stat st;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (stat(stamp, &st) == 0 && now.tv_sec - st.st_mtime < 3600)
                return;
        /* Only its mtime counts: a new empty file says when gc last ran. */
        nsr_error se = { 0 };
        if (nsr_durable_write(AT_FDCWD, stamp, "", 0, 0600, 0, &se) < 0)
                return;
        if (kept.defer && !kept.gc) {
                kept.gc = true;
                kept.gc_dir = nsr_strdup(state_dir);
                kept.keep_days = keep_days;
                kept.backup_limit = backup_limit;
                return;
        }
        if (!detach(NULL, 0))
                return;
        gc_work(state_dir, keep_days, backup_limit);
        _exit(0);
}

#ifdef NSR_TEST_HOOKS
/* NSRUN_TEST_BG_HOLD=FILE: the background process waits (30 s at most)
 * until FILE exists before its work, so that a test sees it run (t765). */
static void test_hold(void) {
        const char *f = getenv("NSRUN_TEST_BG_HOLD");
        for (int i = 0; f && i < 3000 && access(f, F_OK) < 0; i++)
                (void) poll(NULL, 0, 10);
}
#else
static void test_hold(void) {
}
#endif

/* The kept work, in a child that shares the exiting caller's memory. It
 * returns, and clone's wrapper ends the process: a call to a noreturn
 * function such as _exit on a stack the sanitizers did not make would have
 * them warn. */
static int kept_main(void *arg) {
        const kept_fds *k = arg;
        size_t n = kept.trash ? k->n : 0;
        if (detached_setup(k->fd, n)) {
                test_hold();
                if (kept.trash)
                        trash_work(kept.state_dir, kept.run_dir, n >= 1, n == 2);
                if (kept.gc)
                        gc_work(kept.gc_dir, kept.keep_days, kept.backup_limit);
        }
        return 0;
}

#define KEPT_STACK (8u << 20)

void nsr_state_background_exit(int rc) {
        if (!kept.trash && !kept.gc)
                return;
        static kept_fds k;
        int order[2] = { -1, -1 };
        if (kept.trash)
                k = trash_keep(kept.hold_fd, order);
        /* A fork would copy this process's page tables, and its exit would
         * tear them down, both on the caller's path (0.1 ms each in a
         * project no-op, bench/README.md "Sixteenth pass"). The child shares
         * the memory instead, and this process does nothing after the
         * clone but end: no allocation, no write, so the two never touch
         * the same data at once; the memory goes with the child. The
         * caller's copy of the held fd closes as it exits. */
        void *stack = mmap(NULL, KEPT_STACK, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        /* NSRUN_TEST_BG_NO_CLONE=1: the clone fails, as ENOMEM would make it. */
        if (stack != MAP_FAILED && !nsr_test_hook_on("NSRUN_TEST_BG_NO_CLONE")) {
#ifdef NSR_ASAN
                /* The sanitizers' leak check runs at exit, which _exit
                 * skips: run it now, when everything is freed but this. */
                __lsan_do_leak_check();
#endif
                pid_t pid = clone(kept_main, (char *) stack + KEPT_STACK, CLONE_VM | SIGCHLD, &k);
                if (pid > 0) {
                        /* The held fd first, as the fork's caller does
                         * (a valid fd: close leaves errno, which the two
                         * share, alone). */
                        if (kept.hold_fd >= 0)
                                close(kept.hold_fd);
                        _exit(rc);
                }
        }
        /* No clone: a fork, as without deferral. */
        if (stack != MAP_FAILED)
                (void) munmap(stack, KEPT_STACK);
        pid_t pid = fork();
        if (pid == 0)
                _exit(kept_main(&k));
        safe_close(kept.hold_fd);
        safe_close(order[0]);
        safe_close(order[1]);
        kept.trash = kept.gc = false;
        kept.hold_fd = -1;
        free(kept.state_dir);
        free(kept.run_dir);
        free(kept.gc_dir);
        kept.state_dir = kept.run_dir = kept.gc_dir = NULL;
}

/* The start time of a process (0 when it is gone), and whether it has
 * exited: a zombie (Z) or a dying process (X) still answers kill(pid, 0)
 * until its parent reaps it, which a busy init may do late. */
static unsigned long long proc_start_time_state(pid_t pid, bool *ret_exited) {
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        int n = nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        /* The comm field may hold spaces and parens: skip to the last ')'. */
        char *s = strrchr(buf, ')');
        if (!s)
                return 0;
        unsigned long long v = 0;
        /* fields after comm: state(3) ... starttime(22) */
        int field = 2;
        for (char *t = strtok(s + 1, " "); t; t = strtok(NULL, " "))
                if (++field == 3 && ret_exited)
                        *ret_exited = t[0] == 'Z' || t[0] == 'X' || t[0] == 'x';
                else if (field == 22) {
                        v = strtoull(t, NULL, 10);
                        break;
                }
        return v;
}

static unsigned long long proc_start_time(pid_t pid) {
        return proc_start_time_state(pid, NULL);
}

void nsr_run_meta_set_owner(nsr_run_meta *m) {
        /* A run writes its meta twice, from one process: its start time is
         * read once (per process: a fork reads its own), as is the boot's
         * id (nsr_boot_id). */
        static pid_t pid;
        static unsigned long long start;
        if (pid != getpid()) {
                pid = getpid();
                start = proc_start_time(pid);
        }
        m->pid = pid;
        m->pid_start = start;
        nsr_boot_id(m->boot);
}

bool nsr_run_meta_is_orphan(const nsr_run_meta *m) {
        if (m->state != NSR_OUTCOME_RUNNING)
                return false;
        if (m->pid <= 0)
                return true; /* no owner recorded: older than owner records */
        char now[40];
        nsr_boot_id(now);
        if (m->boot[0] && now[0] && !streq(now, m->boot))
                return true;
        if (kill(m->pid, 0) < 0 && errno == ESRCH)
                return true;
        bool exited = false;
        unsigned long long start = proc_start_time_state(m->pid, &exited);
        return exited || start != m->pid_start;
}

static bool journal_settled(int dirfd, const char *name) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return false;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return false;
        /* The settling lines are appended last: read the tail. */
        off_t off = st.st_size > 65536 ? st.st_size - 65536 : 0;
        if (lseek(fd, off, SEEK_SET) < 0)
                return false;
        _cleanup_free_ char *data = NULL;
        if (nsr_read_all(fd, 65536 + 1, &data, NULL) < 0)
                return false;
        for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n"))
                if (streq(line, "done") || streq(line, "rolled-back"))
                        return true;
        return false;
}

bool nsr_run_journals_settled(int run_fd) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(run_fd, "journal", O_NOFOLLOW, &d);
        if (r < 0)
                return r == -ENOENT;
        /* A journal that could not be listed may hide an unsettled one. */
        FOREACH_DIRENT(de, d, return false)
        if (de->d_name[0] != '.' && !journal_settled(dirfd(d), de->d_name))
                return false;
        return true;
}
