/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsr-threads: a small threaded workload for the seccomp tests. Starts N
 * threads (glibc tries clone3 first and falls back to clone), each sums a
 * range, joins them and prints the total, which the test checks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N_THREADS 8
#define PER_THREAD 100000

static void *work(void *arg) {
        uint64_t base = (uint64_t) (uintptr_t) arg * PER_THREAD, *sum = malloc(sizeof(*sum));
        if (!sum)
                return NULL;
        *sum = 0;
        for (uint64_t i = 0; i < PER_THREAD; i++)
                *sum += base + i;
        return sum;
}

int main(void) {
        pthread_t t[N_THREADS];
        uint64_t total = 0;
        for (uintptr_t i = 0; i < N_THREADS; i++)
                if (pthread_create(&t[i], NULL, work, (void *) i) != 0) {
                        perror("pthread_create");
                        return 1;
                }
        for (int i = 0; i < N_THREADS; i++) {
                void *r = NULL;
                if (pthread_join(t[i], &r) != 0 || !r) {
                        fputs("pthread_join failed\n", stderr);
                        return 1;
                }
                total += *(uint64_t *) r;
                free(r);
        }
        printf("%llu\n", (unsigned long long) total);
        return 0;
}
