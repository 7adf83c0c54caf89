/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/dnsmap.h"

typedef struct entry {
        char name[NSR_EGRESS_HOST_MAX + 1];
        int family;
        unsigned char addr[16];
        uint64_t seq; /* when added or refreshed; 0: free */
} entry;

struct nsr_dnsmap {
        entry *e; /* NSR_DNSMAP_MAX slots, from the first add: the monitor
                   * makes the map before the egress helper forks, and only
                   * the helper fills it */
        size_t n;
        uint64_t seq;
};

nsr_dnsmap *nsr_dnsmap_new(void) {
        return calloc(1, sizeof(nsr_dnsmap));
}

nsr_dnsmap *nsr_dnsmap_free(nsr_dnsmap *m) {
        if (m) {
                free(m->e);
                free(m);
        }
        return NULL;
}

/* The address bytes of sa and their length, 0 for another family. */
static size_t addr_of(const struct sockaddr *sa, int *family, const unsigned char **bytes) {
        *family = sa->sa_family;
        if (sa->sa_family == AF_INET) {
                *bytes = (const unsigned char *) &((const struct sockaddr_in *) (const void *) sa)->sin_addr;
                return 4;
        }
        if (sa->sa_family == AF_INET6) {
                *bytes = (const unsigned char *) &((const struct sockaddr_in6 *) (const void *) sa)->sin6_addr;
                return 16;
        }
        return 0;
}

static bool same_addr(const entry *e, int family, const unsigned char *b, size_t len) {
        return e->seq && e->family == family && memcmp(e->addr, b, len) == 0;
}

int nsr_dnsmap_add(nsr_dnsmap *m, const char *name, const struct sockaddr *sa) {
        int family;
        const unsigned char *b;
        size_t len = addr_of(sa, &family, &b);
        if (!len || strlen(name) > NSR_EGRESS_HOST_MAX)
                return -EINVAL;
        if (!m->e && !(m->e = calloc(NSR_DNSMAP_MAX, sizeof(entry))))
                return -ENOMEM;
        entry *slot = NULL, *oldest = NULL;
        for (size_t i = 0; i < m->n; i++) {
                entry *e = &m->e[i];
                if (same_addr(e, family, b, len) && strcmp(e->name, name) == 0) {
                        slot = e;
                        break;
                }
                if (!oldest || e->seq < oldest->seq)
                        oldest = e;
        }
        if (!slot)
                slot = m->n < NSR_DNSMAP_MAX ? &m->e[m->n++] : oldest;
        memset(slot, 0, sizeof(*slot));
        strcpy(slot->name, name);
        slot->family = family;
        memcpy(slot->addr, b, len);
        slot->seq = ++m->seq;
        return 0;
}

size_t nsr_dnsmap_names(const nsr_dnsmap *m, const struct sockaddr *sa, const char **names, size_t max) {
        int family;
        const unsigned char *b;
        size_t len = addr_of(sa, &family, &b), n = 0;
        if (!len)
                return 0;
        /* Newest first: each round takes the newest entry older than the
         * last one taken (max is small: a few names per address). */
        uint64_t below = UINT64_MAX;
        while (n < max) {
                const entry *best = NULL;
                for (size_t i = 0; i < m->n; i++) {
                        const entry *e = &m->e[i];
                        if (same_addr(e, family, b, len) && e->seq < below && (!best || e->seq > best->seq))
                                best = e;
                }
                if (!best)
                        break;
                names[n++] = best->name;
                below = best->seq;
        }
        return n;
}

size_t nsr_dnsmap_size(const nsr_dnsmap *m) {
        return m->n;
}
