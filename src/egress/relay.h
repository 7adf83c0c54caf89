/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The egress relay: an HTTP proxy (CONNECT and absolute-URI requests) and
 * a SOCKS5 proxy (no authentication, CONNECT, names and addresses) that
 * nsrun serves in the host's network namespace on sockets that listen
 * inside the sandbox's. The relay object is made in the monitor; the
 * egress helper (sandbox/egresshelper.h), a confined process forked
 * before the command starts, serves it.
 *
 * The sandbox child, right after it brought up loopback in the new
 * network namespace, creates the listening sockets (127.0.0.1:3128 and
 * :1080, and [::1] when loopback has IPv6) and sends them up (to the
 * helper, which holds the other end) over a socketpair with SCM_RIGHTS, before the command starts: a client
 * that connects early waits in the listen backlog. No unix socket and no
 * helper enters the sandbox.
 *
 * The helper attaches the relay to its event loop (base/evloop.h), where
 * every socket, pipe and timer of the relay is a source of its own;
 * nothing in the relay blocks: names are resolved by a small pool of threads that answer
 * through an eventfd. Every limit is fixed: 256 connections at once (the
 * oldest that has not yet named a target makes room for a new one),
 * 64 KiB buffered and a 256 KiB pipe each way, 16 KiB of request header,
 * 30 s to name a
 * target and to connect, 10 minutes idle. */
#pragma once

#include "base/error.h"
#include "base/evloop.h"
#include "egress/rules.h"

typedef struct nsr_relay nsr_relay;

/* Before the clone. rules is borrowed and must outlive the relay.
 * log_fd (or -1) gets a JSON line per connection as it ends. */
int nsr_relay_new(const nsr_egress_rules *rules, int log_fd, nsr_relay **ret, nsr_error *err);
nsr_relay *nsr_relay_free(nsr_relay *r);
DEFINE_CLEANUP_FUNC(nsr_relay *, nsr_relay_free)

/* In the sandbox child, in the new network namespace with loopback up:
 * listens and sends the sockets to the monitor. Closes the child's copies
 * of the monitor's fds. */
int nsr_relay_child_setup(nsr_relay *r, nsr_error *err);
/* In the monitor, after the clone: drops the child's end. */
void nsr_relay_parent_started(nsr_relay *r);

/* In the monitor, when the egress helper starts only once the sandbox
 * uses the network (sandbox/egresshelper.h): the listeners the child
 * sent, taken now, for the helper forked later to serve. 1: taken, or the
 * child's end closed without them; 0: not sent yet. control_fd: what to
 * wait on for them (-1 once taken). wake_fds: the listeners, each
 * readable when a connection waits. */
int nsr_relay_take_listeners(nsr_relay *r);
int nsr_relay_control_fd(const nsr_relay *r);
size_t nsr_relay_wake_fds(const nsr_relay *r, int *fds, size_t max);

/* In the egress helper (sandbox/egresshelper.h): registers the relay's fds with loop,
 * which must outlive it or nsr_relay_detach(). -errno. */
int nsr_relay_attach(nsr_relay *r, nsr_evloop *loop);
/* The fds the relay serves with (its control socket, timer, listeners,
 * the --net-log-fd): what a process that runs it must keep. */
size_t nsr_relay_fds(const nsr_relay *r, int *fds, size_t max);
/* Takes every fd of the relay out of the loop (nsr_relay_free does). */
void nsr_relay_detach(nsr_relay *r);

/* For the other services of the egress helper (the DNS answerer,
 * egress/dns.h): a record of theirs goes into the relay's log and out on
 * --net-log-fd like a connection's; a client that was no client at all
 * is only counted. */
void nsr_relay_record(nsr_relay *r, const nsr_egress_record *rec);
void nsr_relay_malformed(nsr_relay *r);
/* The host's own addresses, re-read first when rtnetlink said they
 * changed: what nsr_egress_addr_allowed_own() takes. */
const nsr_egress_own *nsr_relay_own(nsr_relay *r);

/* The host's own addresses read afresh into *own (known from then on): 0,
 * or -errno with *own as it was. */
int nsr_egress_own_read(nsr_egress_own *own);

/* Closes every connection (recording it) and moves the log to *ret. */
void nsr_relay_finish(nsr_relay *r, nsr_egress_log *ret);

/* Sets HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY and their lowercase
 * forms in env (a NULL-terminated strv), replacing what was there. */
void nsr_relay_env(char ***env);

/* ---- best-effort mode: no network namespace ------------------------------
 *
 * The relay listens on the host's loopback instead, on ports the kernel
 * picks, and Landlock (ABI 4+) lets the command connect over TCP to those
 * two ports only; a seccomp filter refuses every socket but TCP over IPv4
 * and IPv6, since Landlock does not cover UDP or unix sockets. Any process
 * of the host could use these ports too; they reach only what the rules
 * allow. */

/* Listens on 127.0.0.1 (ephemeral ports) in this namespace. */
int nsr_relay_listen_host(nsr_relay *r, uint16_t *ret_http, uint16_t *ret_socks, nsr_error *err);
/* nsr_relay_env with the given ports. */
void nsr_relay_env_ports(char ***env, uint16_t http, uint16_t socks);
/* The seccomp filter that takes the place of fallback.policy then. */
int nsr_relay_fallback_bpf(char **ret_data, size_t *ret_len, nsr_error *err);
