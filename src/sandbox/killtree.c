/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/syscalls.h"
#include "base/util.h"
#include "sandbox/killtree.h"

typedef struct proc_ent {
        pid_t pid, ppid;
        unsigned long long start; /* jiffies after boot: with the pid, names one process */
        char state;
        bool mark; /* a descendant of ours */
        bool killed;
} proc_ent;

/* "PID (COMM) S PPID PGRP ... STARTTIME ...": COMM may hold anything, even
 * ")" and spaces, so the fields are counted from the last ")". */
static int read_stat(int procfd, pid_t pid, proc_ent *e) {
        char path[32], buf[1024];
        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        _cleanup_close_ int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int n = nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return n < 0 ? n : -EIO;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        p++;
        /* Fields 3 (state) to 22 (starttime). */
        char *fields[20];
        char *save = NULL, *s = (char *) p;
        size_t k = 0;
        for (char *t = strtok_r(s, " ", &save); t && k < ELEMENTSOF(fields); t = strtok_r(NULL, " ", &save))
                fields[k++] = t;
        if (k < ELEMENTSOF(fields))
                return -EIO;
        char *end;
        errno = 0;
        long ppid = strtol(fields[1], &end, 10);
        if (errno || *end || ppid < 0)
                return -EIO;
        unsigned long long start = strtoull(fields[19], &end, 10);
        if (errno || *end)
                return -EIO;
        *e = (proc_ent){ .pid = pid, .ppid = (pid_t) ppid, .start = start, .state = fields[0][0] };
        return 0;
}

static int ent_cmp(const void *a, const void *b) {
        pid_t x = ((const proc_ent *) a)->pid, y = ((const proc_ent *) b)->pid;
        return x < y ? -1 : x > y;
}

static proc_ent *find(proc_ent *v, size_t n, pid_t pid) {
        proc_ent key = { .pid = pid };
        return bsearch(&key, v, n, sizeof(proc_ent), ent_cmp);
}

/* Every process in /proc, sorted by pid. nsr_opendir_at opens /proc anew
 * each time, never a dup of procfd: a dup shares the directory offset, so
 * every scan after the first would start at the end and find no process
 * at all (7f472fd). */
static proc_ent *scan(int procfd, size_t *ret_n) {
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(procfd, ".", 0, &d) < 0) {
                *ret_n = 0;
                return NULL;
        }
        size_t n = 0, cap = 256;
        proc_ent *v = nsr_realloc_array(NULL, cap, sizeof(proc_ent));
        /* A scan cut short is still a scan: the caller looks again until
         * a look finds nothing left to kill. */
        FOREACH_DIRENT(de, d, break) {
                uint32_t pid;
                if (nsr_parse_u32(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                        continue;
                if (n == cap) {
                        cap *= 2;
                        v = nsr_realloc_array(v, cap, sizeof(proc_ent));
                }
                if (read_stat(procfd, (pid_t) pid, &v[n]) == 0)
                        n++;
        }
        qsort(v, n, sizeof(proc_ent), ent_cmp);
        *ret_n = n;
        return v;
}

static bool spared(const pid_t *spare, size_t n_spare, pid_t pid) {
        for (size_t i = 0; i < n_spare; i++)
                if (spare[i] == pid)
                        return true;
        return false;
}

/* Marks the descendants of self: until nothing changes, a process whose
 * parent is self (and not spared) or is marked. Mostly one pass, as
 * children have higher pids than their parents until the pids wrap. */
static size_t mark_tree(proc_ent *v, size_t n, pid_t self, const pid_t *spare, size_t n_spare) {
        size_t marked = 0;
        for (bool changed = true; changed;) {
                changed = false;
                for (size_t i = 0; i < n; i++) {
                        if (v[i].mark || v[i].pid == self)
                                continue;
                        bool below;
                        if (v[i].ppid == self)
                                below = !spared(spare, n_spare, v[i].pid);
                        else {
                                const proc_ent *p = find(v, n, v[i].ppid);
                                below = p && p->mark;
                        }
                        if (below) {
                                v[i].mark = changed = true;
                                marked++;
                        }
                }
        }
        return marked;
}

/* SIGKILL through a pidfd, once /proc confirms the pidfd's process is the
 * one the scan found (same parent and start time): a pid the scan saw
 * may have been freed and taken by an unrelated process since. Returns a
 * pidfd to wait on, -1 when there is none (gone, or no pidfds). */
static int kill_one(int procfd, const proc_ent *e, bool *killed) {
        *killed = false;
        int pfd = (int) syscall(SYS_pidfd_open, e->pid, 0);
        if (pfd < 0 && errno != ENOSYS && errno != EPERM)
                return -1; /* ESRCH: gone already */
        proc_ent now;
        if (read_stat(procfd, e->pid, &now) < 0 || now.ppid != e->ppid || now.start != e->start) {
                if (pfd >= 0)
                        close(pfd);
                return -1;
        }
        if (pfd >= 0) {
                if (nsr_pidfd_send_signal(pfd, SIGKILL) == 0)
                        *killed = true;
                (void) fcntl(pfd, F_SETFD, FD_CLOEXEC);
                return pfd;
        }
        /* No pidfds: the same check, then a plain kill (the window between
         * them is the only one left). */
        if (kill(e->pid, SIGKILL) == 0)
                *killed = true;
        return -1;
}

size_t nsr_killtree(const pid_t *spare, size_t n_spare) {
        _cleanup_close_ int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        pid_t self = getpid();
        size_t total = 0;
        for (;;) {
                size_t n = 0;
                _cleanup_free_ proc_ent *v = procfd >= 0 ? scan(procfd, &n) : NULL;
                if (!v) {
                        /* No /proc: our own children at least, round after
                         * round (each orphan comes to us as its parent
                         * dies). */
                        siginfo_t si = { 0 };
                        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
                                break;
                        if (spared(spare, n_spare, si.si_pid))
                                break;
                        (void) kill(si.si_pid, SIGKILL);
                        (void) waitpid(si.si_pid, NULL, 0);
                        continue;
                }
                size_t m = mark_tree(v, n, self, spare, n_spare);
                if (m == 0)
                        break;
                /* Zombies are killed too: a process whose main thread has
                 * exited shows as one while its other threads run on. The
                 * pidfd of a real zombie is readable at once. */
                bool any_alive = false;
                for (size_t i = 0; i < n; i++)
                        if (v[i].mark && v[i].state != 'Z' && v[i].state != 'X')
                                any_alive = true;
                _cleanup_free_ struct pollfd *pfds = nsr_malloc0(m * sizeof(struct pollfd));
                size_t np = 0;
                for (size_t i = 0; i < n; i++) {
                        if (!v[i].mark)
                                continue;
                        int pfd = kill_one(procfd, &v[i], &v[i].killed);
                        if (v[i].killed)
                                total++;
                        if (pfd >= 0)
                                pfds[np++] = (struct pollfd){ .fd = pfd, .events = POLLIN };
                }
                /* A pidfd turns readable when its process has exited. A
                 * process stuck in the kernel (D state) may take long: we
                 * wait, since nothing may run while the run is captured. */
                for (size_t left = np; left > 0;) {
                        int r = poll(pfds, np, 1000);
                        if (r < 0 && errno != EINTR)
                                break;
                        left = 0;
                        for (size_t i = 0; i < np; i++) {
                                if (pfds[i].fd >= 0 && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
                                        close(pfds[i].fd);
                                        pfds[i].fd = -1;
                                }
                                if (pfds[i].fd >= 0)
                                        left++;
                        }
                }
                for (size_t i = 0; i < np; i++)
                        if (pfds[i].fd >= 0)
                                close(pfds[i].fd);
                /* Reap what was ours: without pidfds, wait for it here. */
                for (size_t i = 0; i < n; i++)
                        if (v[i].mark && v[i].ppid == self)
                                while (waitpid(v[i].pid, NULL, np == 0 && v[i].killed ? 0 : WNOHANG) < 0 &&
                                       errno == EINTR)
                                        ;
                if (np == 0 || !any_alive)
                        (void) poll(NULL, 0, 1); /* the others' exits and reaping, before the next look */
        }
        return total;
}
