/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which names the sandbox resolved, through nsrun's DNS answerer, to which
 * addresses: the table a transparent connect() is judged by. A connect to
 * an address is allowed when a name that resolved to it is allowed for the
 * port (or a literal address rule allows it), so the table answers "which
 * names led here".
 *
 * Entries live for the whole run (clients cache answers beyond their TTL),
 * at most NSR_DNSMAP_MAX of them; the oldest goes first when it is full.
 * Pure: no I/O, unit tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "egress/rules.h"

#define NSR_DNSMAP_MAX 4096

typedef struct nsr_dnsmap nsr_dnsmap;

nsr_dnsmap *nsr_dnsmap_new(void);
nsr_dnsmap *nsr_dnsmap_free(nsr_dnsmap *m);

/* Records that the normalised name resolved to sa (AF_INET or AF_INET6;
 * the port is ignored). -EINVAL for another family or a name longer than
 * NSR_EGRESS_HOST_MAX, -ENOMEM. Adding a pair again refreshes it. */
int nsr_dnsmap_add(nsr_dnsmap *m, const char *name, const struct sockaddr *sa);

/* The names that resolved to sa, newest first: at most max pointers into
 * the table, valid until the next add or free. Returns how many. */
size_t nsr_dnsmap_names(const nsr_dnsmap *m, const struct sockaddr *sa, const char **names, size_t max);

size_t nsr_dnsmap_size(const nsr_dnsmap *m);
