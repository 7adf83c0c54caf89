/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsrun's DNS answerer: the resolver of a sandbox with --allow-host and
 * a network namespace. The sandbox's /etc/resolv.conf names
 * NSR_DNS_ADDRESS (port 53), where a UDP socket and a TCP listener made
 * inside the sandbox's network namespace wait; the egress helper
 * (sandbox/egresshelper.h) serves them from the host side, as it serves
 * the relay (relay.h), and both are made and passed out the same way: the
 * sandbox child binds them right after loopback is up and sends them up a
 * socketpair with SCM_RIGHTS, before the command starts.
 *
 * A query (egress/dnsparse.h parses it strictly) for a name that some
 * --allow-host pattern allows for some port, and no --deny-host denies
 * for every port, is resolved on the host off the event loop (the
 * relay's resolver pool, egress/resolver.h); the addresses go through
 * the relay's address rules and rebinding guard (nsr_egress_addr_allowed_own
 * with the host's own addresses), and those allowed are the answer (A or
 * AAAA, as asked; TTL NSR_DNS_TTL) and go into the run's name table
 * (nsr_dns_map(), egress/dnsmap.h), which judges a transparent connect.
 * Any other type for such a name gets NOERROR with no record (NODATA). A
 * name whose addresses the rules all refuse, one that does not resolve,
 * and every name not allowed get NXDOMAIN at once; malformed queries
 * FORMERR (dnsparse.h says which refusals get what).
 *
 * Every query answered becomes a record (NSR_EGRESS_PROTO_DNS: the name
 * asked, port 53, allowed or not, why not, the first address answered)
 * in the relay's log, so it reaches the report and --net-log-fd as the
 * connections do; a message that was no query at all is only counted
 * (n_malformed).
 *
 * Limits: NSR_DNS_INFLIGHT_MAX queries resolving at once, at most
 * NSR_DNS_CLIENT_MAX of them from one client (a UDP source address and
 * port, or a TCP connection): past either, SERVFAIL at once. At most
 * NSR_DNS_TCP_MAX TCP connections (the oldest goes for a new one), each
 * closed after NSR_DNS_TCP_IDLE_S seconds without a query, when a query
 * is longer than NSR_DNS_TCP_QUERY_MAX, or when it holds more than
 * NSR_DNS_TCP_OUT_MAX bytes of answers its client has not read. Nothing
 * blocks: UDP answers that the socket does not take are dropped (the
 * client asks again). */
#pragma once

#include "base/error.h"
#include "base/evloop.h"
#include "egress/dnsmap.h"
#include "egress/rules.h"

#define NSR_DNS_ADDRESS       "127.0.0.53"
#define NSR_DNS_TTL           60
#define NSR_DNS_INFLIGHT_MAX  64
#define NSR_DNS_CLIENT_MAX    8
#define NSR_DNS_TCP_MAX       16
#define NSR_DNS_TCP_IDLE_S    10
#define NSR_DNS_TCP_QUERY_MAX 4096
#define NSR_DNS_TCP_OUT_MAX   (64 * 1024)

/* What the sandbox's /etc/resolv.conf says. */
#define NSR_DNS_RESOLV_CONF                                                                                            \
        "# nsrun: names are answered by nsrun (--allow-host); see nsrun(1)\n"                                          \
        "nameserver " NSR_DNS_ADDRESS "\n"                                                                             \
        "options timeout:2 attempts:2\n"

typedef struct nsr_dns nsr_dns;
typedef struct nsr_relay nsr_relay;

/* Before the clone. rules is borrowed and must outlive the answerer. */
int nsr_dns_new(const nsr_egress_rules *rules, nsr_dns **ret, nsr_error *err);
nsr_dns *nsr_dns_free(nsr_dns *d);
DEFINE_CLEANUP_FUNC(nsr_dns *, nsr_dns_free)

/* In the sandbox child, in the new network namespace with loopback up:
 * binds NSR_DNS_ADDRESS:53 (UDP and TCP) and sends the sockets out. */
int nsr_dns_child_setup(nsr_dns *d, nsr_error *err);
/* After the clone, in the monitor: drops the child's end. */
void nsr_dns_parent_started(nsr_dns *d);

/* In the monitor, when the egress helper starts only once the sandbox
 * uses the network (sandbox/egresshelper.h): the sockets the child sent,
 * taken now, for the helper forked later to serve. 1: taken, or the
 * child's end closed without them (nothing more comes); 0: not sent yet.
 * control_fd: what to wait on for them (-1 once taken). wake_fds: the
 * sockets, each readable when a query waits. */
int nsr_dns_take_sockets(nsr_dns *d);
int nsr_dns_control_fd(const nsr_dns *d);
size_t nsr_dns_wake_fds(const nsr_dns *d, int *fds, size_t max);

/* The fds the answerer serves with: what the helper must keep. */
size_t nsr_dns_fds(const nsr_dns *d, int *fds, size_t max);
/* In the egress helper: serves on loop; records go to relay's log (and
 * its --net-log-fd). Both must outlive the answerer or nsr_dns_detach. */
int nsr_dns_attach(nsr_dns *d, nsr_evloop *loop, nsr_relay *relay);
void nsr_dns_detach(nsr_dns *d);

/* The names the sandbox resolved through the answerer, for the other
 * services of the helper (a transparent connect is judged by it). Owned
 * by the answerer; lives as long as it does. */
nsr_dnsmap *nsr_dns_map(nsr_dns *d);
