/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench/protect: what matching protect.list costs at capture.
 *
 *   bench-protect LIST [PATHS]
 *
 * Reads the entries of LIST (a protect.list) and times, as the best of
 * five, nsr_protect_list_match() over PATHS changed paths (default 20000)
 * six components deep, none of them protected (the common case: every
 * entry is tried). Prints the time per path, with the list and with none.
 * Not a test: it never fails a build. Built by "make bench-protect". */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "project/protect.h"

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Best of five: seconds for one pass over n paths. */
static double best(char *const *entries, unsigned n, size_t *ret_hits) {
        double b = -1;
        for (int round = 0; round < 5; round++) {
                size_t hits = 0;
                double t0 = now();
                for (unsigned i = 0; i < n; i++) {
                        char p[128];
                        snprintf(p, sizeof(p), "src%u/pkg%u/lib/x/y/file%u.c", i % 10, i / 10 % 10, i);
                        hits += nsr_protect_list_match(entries, p);
                }
                double t = now() - t0;
                if (b < 0 || t < b)
                        b = t;
                *ret_hits = hits;
        }
        return b;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: bench-protect LIST [PATHS]\n");
                return 2;
        }
        unsigned n = argc > 2 ? (unsigned) strtoul(argv[2], NULL, 10) : 20000;
        FILE *f = fopen(argv[1], "re");
        if (!f) {
                perror(argv[1]);
                return 1;
        }
        char **entries = nsr_malloc0(sizeof(char *));
        char line[4096];
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                if (line[0] && line[0] != '#')
                        nsr_strv_extend(&entries, line);
        }
        fclose(f);
        char *none[] = { NULL };
        size_t hits = 0, hits0 = 0;
        double t = best(entries, n, &hits), t0 = best(none, n, &hits0);
        printf("%zu entries: %.2f us per path (%u paths, %zu protected); no entries: %.2f us\n",
               nsr_strv_length(entries), t * 1e6 / n, n, hits, t0 * 1e6 / n);
        nsr_strv_free(entries);
        return 0;
}
