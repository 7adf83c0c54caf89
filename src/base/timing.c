/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The phase timer of NSRUN_TIMING (timing.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/timing.h"

nsr_timing *nsr_timing_from_env(void) {
        const char *v = getenv("NSRUN_TIMING");
        if (!v || !*v || streq(v, "0"))
                return NULL;
        void *p = mmap(NULL, sizeof(nsr_timing), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        nsr_timing *t = p;
        nsr_timing_mark_now(t, "start");
        return t;
}

nsr_timing *nsr_timing_free(nsr_timing *t) {
        if (t)
                (void) munmap(t, sizeof(*t));
        return NULL;
}

/* The process that said so: a child sharing the monitor's memory (a
 * minimal launch's clone) sets this for itself alone. */
static pid_t no_rusage;

void nsr_timing_no_rusage(void) {
        no_rusage = getpid();
}

void nsr_timing_mark_now(nsr_timing *t, const char *phase) {
        if (!t)
                return;
        uint32_t i = __atomic_fetch_add(&t->n, 1, __ATOMIC_RELAXED);
        if (i >= NSR_TIMING_MAX)
                return;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        nsr_timing_mark *m = &t->marks[i];
        size_t len = strnlen(phase, sizeof(m->phase) - 1);
        memcpy(m->phase, phase, len);
        m->phase[len] = '\0';
        m->pid = (int32_t) getpid();
        struct rusage ru;
        m->minflt = no_rusage != m->pid && getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t) ru.ru_minflt : UINT64_MAX;
        __atomic_store_n(&m->ns, (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec, __ATOMIC_RELEASE);
}

static int by_time(const void *a, const void *b) {
        const nsr_timing_mark *x = a, *y = b;
        return x->ns < y->ns ? -1 : x->ns > y->ns;
}

char *nsr_timing_format(const nsr_timing *t) {
        if (!t)
                return nsr_strdup("");
        uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);
        if (n > NSR_TIMING_MAX)
                n = NSR_TIMING_MAX;
        nsr_timing_mark sorted[NSR_TIMING_MAX];
        uint32_t k = 0;
        /* The page is shared with the sandbox's side until the command's
         * execve (and with pid 1 after): read it as untrusted, a name
         * terminated and printable whatever was written there. */
        for (uint32_t i = 0; i < n; i++)
                if (__atomic_load_n(&t->marks[i].ns, __ATOMIC_ACQUIRE)) {
                        nsr_timing_mark *m = &sorted[k++];
                        *m = t->marks[i];
                        m->phase[sizeof(m->phase) - 1] = '\0';
                        for (char *c = m->phase; *c; c++)
                                if (*c < 0x20 || *c > 0x7e)
                                        *c = '?';
                }
        qsort(sorted, k, sizeof(sorted[0]), by_time);
        char *out = nsr_strdup("nsrun timing (ms): phase, page faults, its own time, since start\n");
        for (uint32_t i = 0; i < k; i++) {
                uint64_t self = i ? sorted[i].ns - sorted[i - 1].ns : 0;
                uint64_t total = sorted[i].ns - sorted[0].ns;
                /* The minor page faults of the process that marked it since
                 * its mark before (a first-touch or copy-on-write fault is
                 * a microsecond or more on a VM); 0 for its first. */
                char flt[24] = "0";
                for (uint32_t j = i; j > 0; j--)
                        if (sorted[j - 1].pid == sorted[i].pid) {
                                uint64_t a = sorted[j - 1].minflt, b = sorted[i].minflt;
                                if (a == UINT64_MAX || b == UINT64_MAX || b < a)
                                        snprintf(flt, sizeof(flt), "-");
                                else
                                        snprintf(flt, sizeof(flt), "%llu", (unsigned long long) (b - a));
                                break;
                        }
                nsr_strappendf(&out, "  %-40s %6s %8.3f %9.3f\n", sorted[i].phase, flt, (double) self / 1e6,
                               (double) total / 1e6);
        }
        if (__atomic_load_n(&t->n, __ATOMIC_ACQUIRE) > NSR_TIMING_MAX)
                nsr_strappendf(&out, "  (more than %d marks: the rest were dropped)\n", NSR_TIMING_MAX);
        return out;
}
