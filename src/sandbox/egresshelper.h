/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The egress helper: the process that serves the egress relay (relay.h),
 * so that the bytes of the sandbox's network are parsed outside the
 * monitor, the process that later commits to the user's projects.
 *
 * It serves the DNS answerer (egress/dns.h) too, with a network
 * namespace: the sandbox's queries are parsed here as well.
 *
 * With a network namespace the monitor forks it when the sandbox first
 * uses the network: a connection to the relay, a query to the answerer,
 * a connect passed on (sandbox/monitor.c); each waits for it meanwhile,
 * and a run that never does costs no helper. With --userns2, and in
 * best-effort mode, it is forked before the command starts. The helper
 * names itself "nsrun-egress", dies with the
 * monitor (PR_SET_PDEATHSIG), keeps only the relay's fds, the caller's
 * --net-log-fd and one socket to the monitor, warms the resolver up, and
 * confines itself: Landlock grants nothing on the file system but reading
 * the resolver's files under /etc, then no_new_privs and a seccomp filter
 * that allows what serving connections and resolving names take (no
 * execve, no fork but threads, sockets of IPv4, IPv6 and netlink only).
 * It runs its own event loop until the monitor shuts the socket: then it
 * closes every connection and sends the records and counts, and exits.
 *
 * The monitor reads those messages as untrusted input: fixed sizes, every
 * field checked (strings cut at their end; their bytes are escaped by
 * every printer), at most NSR_EGRESS_RECORDS_MAX records, within a
 * deadline. A helper that died, lied or went silent costs the run its
 * network and its network records, never the project: the log then says
 * the helper died. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "egress/dns.h"
#include "egress/relay.h"

typedef struct nsr_egress_helper nsr_egress_helper;

/* In the monitor, after nsr_relay_parent_started() (and
 * nsr_dns_parent_started()). The relay's and the answerer's fds stay open
 * in the monitor too, unused. dns: the DNS answerer, or NULL (best-effort
 * mode has none). direct: transparent connects (direct.h), or NULL; the
 * monitor's copy, which the caller frees after the fork. */
typedef struct nsr_direct nsr_direct;
int nsr_egress_helper_start(nsr_relay *relay, nsr_dns *dns, nsr_direct *direct, nsr_egress_helper **ret,
                            nsr_error *err);
/* Asks the helper to finish, reads its log into *ret (helper_died set
 * when it did not deliver one), and kills it. */
void nsr_egress_helper_finish(nsr_egress_helper *h, nsr_egress_log *ret);
nsr_egress_helper *nsr_egress_helper_free(nsr_egress_helper *h);
/* The monitor's reading of the helper's messages on sock, within
 * timeout_ms: 0 and the log, or -EBADMSG and an empty log that says the
 * helper died. */
int nsr_egress_helper_read(int sock, int timeout_ms, nsr_egress_log *ret);

/* The helper's own seccomp program (egresshelper.c says what it allows),
 * from the seccomp cache when it is there (nsr_seccomp_builtin_bpf), else
 * compiled and stored. The helper takes it before Landlock shuts the file
 * system, and loads it after no_new_privs. Exposed for the tests. */
int nsr_egress_helper_prog(char **ret, size_t *ret_len, nsr_error *err);

/* The wire format, for the tests: one message per record, then the end. */
enum { NSR_EGRESS_MSG_RECORD = 1, NSR_EGRESS_MSG_END = 2 };
typedef struct nsr_egress_msg_end {
        uint64_t n_records, n_dropped, n_total, n_refused, n_malformed, n_log_dropped;
} nsr_egress_msg_end;
typedef struct nsr_egress_msg {
        uint32_t type;
        uint32_t pad;
        union {
                nsr_egress_record rec;
                nsr_egress_msg_end end;
        } u;
} nsr_egress_msg;
DEFINE_CLEANUP_FUNC(nsr_egress_helper *, nsr_egress_helper_free)
pid_t nsr_egress_helper_pid(const nsr_egress_helper *h);
