/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>

#include "sandbox/cgroup.h"

struct nsr_cgroup {
        char *path; /* absolute */
        int fd;     /* O_PATH|O_DIRECTORY */
};

/* What would give the caller a delegated cgroup: said in every failure. */
#define DELEGATE_HINT                                                                                                  \
        "a delegated cgroup v2 subtree would make it work: run nsrun inside a systemd user session's "                 \
        "cgroup with Delegate=yes (for instance a scope started with systemd-run --user -p Delegate=yes "              \
        "--scope), on a host whose cgroup v2 hierarchy has the memory, cpu and pids controllers"

bool nsr_cgroup_required(const nsr_runctl *rc) {
        return rc->memory || rc->cpu_milli;
}

static int read_small(const char *path, char *buf, size_t len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int n = nsr_read_full(fd, buf, len - 1);
        if (n < 0)
                return n;
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        return n;
}

static bool has_word(const char *list, const char *word) {
        size_t l = strlen(word);
        for (const char *p = list; (p = strstr(p, word)); p += l)
                if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
                        return true;
        return false;
}

static const char *v2_mount(void) {
        static const char *const candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                struct statfs sf;
                if (statfs(candidates[i], &sf) == 0 && (unsigned long) sf.f_type == CGROUP2_SUPER_MAGIC)
                        return candidates[i];
        }
        return NULL;
}

int nsr_cgroup_locate(const char *controllers, char **ret_dir, nsr_error *err) {
        const char *want = controllers ? controllers : "memory cpu pids";
        const char *mnt = v2_mount();
        if (!mnt)
                return nsr_error_setx(err, EOPNOTSUPP, "no cgroup v2 hierarchy is mounted; " DELEGATE_HINT);
        char self[4096];
        if (read_small("/proc/self/cgroup", self, sizeof(self)) < 0)
                return nsr_error_set(err, errno, "cannot read /proc/self/cgroup");
        const char *cg = NULL;
        for (char *line = strtok(self, "\n"); line && !cg; line = strtok(NULL, "\n"))
                if (nsr_startswith(line, "0::"))
                        cg = line + 3;
        if (!cg || cg[0] != '/')
                return nsr_error_setx(err, EOPNOTSUPP, "nsrun is in no cgroup v2 group; " DELEGATE_HINT);
        /* The group goes beside ours: ours holds processes (nsrun), so no
         * controller can be enabled below it. In the root group (which may
         * hold processes) it goes below. */
        _cleanup_free_ char *own = nsr_path_join(mnt, cg);
        _cleanup_free_ char *dir = NULL;
        if (streq(cg, "/"))
                dir = nsr_strdup(own);
        else {
                dir = nsr_strdup(own);
                char *slash = strrchr(dir, '/');
                if (slash && slash != dir)
                        *slash = '\0';
        }
        char avail[512] = "", enabled[512] = "";
        _cleanup_free_ char *ctl = nsr_path_join(dir, "cgroup.controllers");
        _cleanup_free_ char *sub = nsr_path_join(dir, "cgroup.subtree_control");
        _cleanup_free_ char *procs = nsr_path_join(dir, "cgroup.procs");
        (void) read_small(ctl, avail, sizeof(avail));
        (void) read_small(sub, enabled, sizeof(enabled));
        if (faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) < 0 || faccessat(AT_FDCWD, procs, W_OK, AT_EACCESS) < 0)
                return nsr_error_setx(err, EACCES,
                                      "the cgroup %s is not delegated to uid %u (not writable), so nsrun cannot make a "
                                      "group for the run in it; " DELEGATE_HINT,
                                      dir, (unsigned) geteuid());
        char need[64];
        snprintf(need, sizeof(need), "%s", want);
        for (char *w = strtok(need, " "); w; w = strtok(NULL, " ")) {
                if (has_word(enabled, w))
                        continue;
                if (!has_word(avail, w))
                        return nsr_error_setx(err, EOPNOTSUPP,
                                              "the cgroup v2 hierarchy has no %s controller for %s (its "
                                              "cgroup.controllers: \"%s\"; on a cgroup v1/v2 hybrid the controllers "
                                              "are bound to v1); " DELEGATE_HINT,
                                              w, dir, avail);
                /* Offered but not enabled for the children: enable it.
                 * This fails (EBUSY) when dir holds processes itself. */
                _cleanup_close_ int fd = open(sub, O_WRONLY | O_CLOEXEC);
                char plus[32];
                snprintf(plus, sizeof(plus), "+%s", w);
                int r = fd < 0 ? -errno : nsr_write_all(fd, plus, strlen(plus));
                if (r < 0)
                        return nsr_error_set(
                                err, -r, "cannot enable the %s controller in %s/cgroup.subtree_control; " DELEGATE_HINT,
                                w, dir);
        }
        *ret_dir = TAKE_PTR(dir);
        return 0;
}

static int write_at(int dirfd, const char *file, const char *val) {
        _cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return nsr_write_all(fd, val, strlen(val));
}

int nsr_cgroup_create(const nsr_runctl *rc, nsr_cgroup **ret, nsr_error *err) {
        char want[64] = "";
        if (rc->memory)
                strcat(want, "memory ");
        if (rc->cpu_milli)
                strcat(want, "cpu ");
        if (rc->pids)
                strcat(want, "pids ");
        size_t l = strlen(want);
        if (l)
                want[l - 1] = '\0';
        _cleanup_free_ char *dir = NULL;
        int r = nsr_cgroup_locate(want, &dir, err);
        if (r < 0)
                return r;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        _cleanup_free_ char *path =
                nsr_asprintf("%s/nsrun-%d-%ld", dir, (int) getpid(), (long) (ts.tv_nsec ^ ts.tv_sec) & 0xffffff);
        if (mkdir(path, 0755) < 0)
                return nsr_error_set(err, errno, "cannot make the cgroup %s", path);
        nsr_cgroup *cg = nsr_malloc0(sizeof(*cg));
        cg->path = TAKE_PTR(path);
        cg->fd = open(cg->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cg->fd < 0) {
                r = nsr_error_set(err, errno, "cannot open the cgroup %s", cg->path);
                nsr_cgroup_destroy(cg);
                return r;
        }
        char buf[64];
        if (rc->memory) {
                snprintf(buf, sizeof(buf), "%" PRIu64, rc->memory);
                r = write_at(cg->fd, "memory.max", buf);
                /* A sandbox at its memory cap must not live on in swap. */
                if (r >= 0)
                        (void) write_at(cg->fd, "memory.swap.max", "0");
                if (r < 0)
                        goto fail_write;
        }
        if (rc->cpu_milli) {
                /* quota per 100 ms period */
                snprintf(buf, sizeof(buf), "%" PRIu64 " 100000", rc->cpu_milli * 100);
                r = write_at(cg->fd, "cpu.max", buf);
                if (r < 0)
                        goto fail_write;
        }
        if (rc->pids) {
                snprintf(buf, sizeof(buf), "%" PRIu64, rc->pids);
                r = write_at(cg->fd, "pids.max", buf);
                if (r < 0)
                        goto fail_write;
        }
        *ret = cg;
        return 0;
fail_write:
        nsr_error_set(err, -r, "cannot set the limits of the cgroup %s", cg->path);
        nsr_cgroup_destroy(cg);
        return r;
}

int nsr_cgroup_fd(const nsr_cgroup *cg) {
        return cg ? cg->fd : -1;
}

pid_t nsr_cgroup_clone(const nsr_cgroup *cg, unsigned long flags) {
        struct clone_args args;
        memset(&args, 0, sizeof(args));
        args.flags = (uint64_t) (flags & ~(unsigned long) 0xff) | CLONE_INTO_CGROUP;
        args.exit_signal = (uint64_t) (flags & 0xff);
        args.cgroup = (uint64_t) cg->fd;
        return (pid_t) syscall(SYS_clone3, &args, sizeof(args));
}

static long event_count(int dirfd, const char *file, const char *key) {
        _cleanup_close_ int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC);
        char buf[1024];
        int n = fd < 0 ? -1 : nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        size_t kl = strlen(key);
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
                if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
                        return strtol(line + kl + 1, NULL, 10);
        return 0;
}

char **nsr_cgroup_hits(const nsr_cgroup *cg) {
        char **v = nsr_malloc0(sizeof(char *));
        if (!cg)
                return v;
        long oom = event_count(cg->fd, "memory.events", "oom_kill");
        if (oom > 0)
                nsr_strv_push(&v, nsr_asprintf("memory.max (%ld process%s killed)", oom, oom == 1 ? "" : "es"));
        long pids = event_count(cg->fd, "pids.events", "max");
        if (pids > 0)
                nsr_strv_push(&v, nsr_asprintf("pids.max (%ld fork%s refused)", pids, pids == 1 ? "" : "s"));
        return v;
}

nsr_cgroup *nsr_cgroup_destroy(nsr_cgroup *cg) {
        if (!cg)
                return NULL;
        if (cg->fd >= 0) {
                (void) write_at(cg->fd, "cgroup.kill", "1");
                /* Wait until it is empty: rmdir fails with EBUSY before. */
                for (int i = 0; i < 200; i++) {
                        if (event_count(cg->fd, "cgroup.events", "populated") == 0)
                                break;
                        struct timespec t = { .tv_nsec = 10 * 1000 * 1000 };
                        nanosleep(&t, NULL);
                }
        }
        if (cg->path)
                (void) rmdir(cg->path);
        safe_close(cg->fd);
        free(cg->path);
        free(cg);
        return NULL;
}
