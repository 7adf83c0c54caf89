/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/affinity.h"

void nsr_affinity_pin_here(nsr_affinity *a) {
        a->pinned = false;
        CPU_ZERO(&a->saved);
        if (sched_getaffinity(0, sizeof(a->saved), &a->saved) < 0 || CPU_COUNT(&a->saved) < 2)
                return;
        int cpu = sched_getcpu();
        if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &a->saved))
                return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        a->pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
}

int nsr_affinity_restore(nsr_affinity *a) {
        if (!a->pinned)
                return 0;
        a->pinned = false;
        if (sched_setaffinity(0, sizeof(a->saved), &a->saved) == 0)
                return 0;
        /* The saved CPUs left the cpuset meanwhile: every CPU, which the
         * kernel cuts down to what the cpuset allows. */
        cpu_set_t all;
        memset(&all, 0xff, sizeof(all));
        return sched_setaffinity(0, sizeof(all), &all) == 0 ? 0 : -errno;
}

int nsr_affinity_restore_other(const nsr_affinity *a, pid_t pid) {
        if (!a->pinned || pid <= 0)
                return 0;
        return sched_setaffinity(pid, sizeof(a->saved), &a->saved) == 0 ? 0 : -errno;
}

void nsr_affinity_save(nsr_affinity *a) {
        CPU_ZERO(&a->saved);
        a->pinned = sched_getaffinity(0, sizeof(a->saved), &a->saved) == 0 && CPU_COUNT(&a->saved) >= 2;
        a->split = a->pinned;
}

int nsr_affinity_reassert(const nsr_affinity *a) {
        if (!a->split)
                return 0;
        cpu_set_t now;
        CPU_ZERO(&now);
        if (sched_getaffinity(0, sizeof(now), &now) == 0 && CPU_EQUAL(&now, &a->saved))
                return 0;
        nsr_affinity again = { .saved = a->saved, .pinned = true };
        return nsr_affinity_restore(&again);
}

/* The number of runnable tasks on the machine now (/proc/loadavg's
 * fourth field), or -1. */
static int runnable_now(void) {
        char buf[128];
        int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        int running = -1;
        if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1)
                return -1;
        return running;
}

int nsr_affinity_keep_off(const nsr_affinity *a, pid_t pid) {
        int cpu = sched_getcpu();
        if (!a->pinned || pid <= 0 || cpu < 0 || cpu >= CPU_SETSIZE)
                return 0;
        cpu_set_t rest = a->saved;
        CPU_CLR(cpu, &rest);
        if (CPU_COUNT(&rest) == 0)
                return 0;
        /* Only when every CPU is free for one of the two: a CPU the child
         * gets may be busy, and a busy CPU's time slice is milliseconds. */
        int running = runnable_now();
        if (running < 0 || running > CPU_COUNT(&a->saved))
                return 0;
        return sched_setaffinity(pid, sizeof(rest), &rest) == 0 ? 0 : -errno;
}
