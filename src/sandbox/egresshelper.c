/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The egress helper process: fork, confinement, its loop, and the
 * monitor's checked reading of what it sends (egresshelper.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/evloop.h"
#include "base/syscalls.h"
#include "base/util.h"
#include "sandbox/direct.h"
#include "sandbox/egresshelper.h"
#include "sandbox/landlock.h"
#include "seccomp/compile.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define FINISH_MS 5000 /* the relay gives a log reader 1 s; this is the whole answer */
#define KEEP_MAX  16

#define MSG_RECORD NSR_EGRESS_MSG_RECORD
#define MSG_END    NSR_EGRESS_MSG_END
typedef nsr_egress_msg msg;
typedef nsr_egress_msg_end msg_end;

struct nsr_egress_helper {
        pid_t pid;
        int pidfd;
        int sock; /* the monitor's end */
};

pid_t nsr_egress_helper_pid(const nsr_egress_helper *h) {
        return h ? h->pid : 0;
}

/* ---- the helper's side ------------------------------------------------ */

/* The resolver's files, and where their links lead (Landlock does not
 * follow a link named in a rule). */
static int confine_fs(nsr_error *err) {
        static const char *const files[] = { "/etc/resolv.conf", "/etc/hosts",     "/etc/nsswitch.conf",
                                             "/etc/gai.conf",    "/etc/host.conf", "/etc/services" };
        if (nsr_landlock_abi_probe() < 1)
                return 0; /* no Landlock: seccomp and the closed fds remain */
        _cleanup_strv_free_ char **read = NULL;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                nsr_strv_extend(&read, files[i]);
                char *real = realpath(files[i], NULL);
                if (real && !streq(real, files[i]))
                        nsr_strv_push(&read, real);
                else
                        free(real);
        }
        nsr_landlock_rules rules = { .read = read };
        nsr_landlock_info info;
        _cleanup_close_ int fd = -1;
        int r = nsr_landlock_build(&rules, &fd, &info, err);
        if (r < 0)
                return r;
        return nsr_landlock_enforce(fd, err);
}

static const int allowed_calls[] = {
        SCMP_SYS(read),
        SCMP_SYS(write),
        SCMP_SYS(readv),
        SCMP_SYS(writev),
        SCMP_SYS(close),
        SCMP_SYS(epoll_create1),
        SCMP_SYS(epoll_wait),
        SCMP_SYS(epoll_pwait),
        SCMP_SYS(epoll_ctl),
        SCMP_SYS(connect),
        SCMP_SYS(accept4),
        SCMP_SYS(accept),
        SCMP_SYS(getsockopt),
        SCMP_SYS(setsockopt),
        SCMP_SYS(getsockname),
        SCMP_SYS(getpeername),
        SCMP_SYS(sendto),
        SCMP_SYS(recvfrom),
        SCMP_SYS(sendmsg),
        SCMP_SYS(recvmsg),
        SCMP_SYS(sendmmsg),
        SCMP_SYS(shutdown),
        SCMP_SYS(splice),
        SCMP_SYS(pipe2),
        SCMP_SYS(fcntl),
        SCMP_SYS(poll),
        SCMP_SYS(ppoll),
        SCMP_SYS(timerfd_settime),
        SCMP_SYS(timerfd_gettime),
        SCMP_SYS(eventfd2),
        SCMP_SYS(clock_gettime),
        SCMP_SYS(clock_nanosleep),
        SCMP_SYS(nanosleep),
        SCMP_SYS(gettimeofday),
        SCMP_SYS(getpid),
        SCMP_SYS(gettid),
        SCMP_SYS(getuid),
        SCMP_SYS(geteuid),
        SCMP_SYS(getgid),
        SCMP_SYS(getegid),
        SCMP_SYS(futex),
        SCMP_SYS(set_robust_list),
        SCMP_SYS(rseq),
        SCMP_SYS(mmap),
        SCMP_SYS(munmap),
        SCMP_SYS(mprotect),
        SCMP_SYS(madvise),
        SCMP_SYS(brk),
        SCMP_SYS(mremap),
        SCMP_SYS(exit),
        SCMP_SYS(exit_group),
        SCMP_SYS(rt_sigprocmask),
        SCMP_SYS(rt_sigaction),
        SCMP_SYS(rt_sigreturn),
        SCMP_SYS(sigaltstack),
        SCMP_SYS(openat),
        SCMP_SYS(open),
        SCMP_SYS(newfstatat),
        SCMP_SYS(fstat),
        SCMP_SYS(stat),
        SCMP_SYS(statx),
        SCMP_SYS(lseek),
        SCMP_SYS(pread64),
        SCMP_SYS(getrandom),
        SCMP_SYS(sched_yield),
        SCMP_SYS(sched_getaffinity),
        SCMP_SYS(uname),
        SCMP_SYS(restart_syscall),
        SCMP_SYS(getrlimit),
        SCMP_SYS(prlimit64),

};

/* Allowed: the list above; clone for threads only; sockets of IPv4, IPv6
 * (the relay, the resolver) and netlink (getaddrinfo's AI_ADDRCONFIG,
 * getifaddrs), bind for netlink only, and ioctl for the listener's reply
 * and fd injection only. Transparent connects need nothing else here:
 * the monitor reads the call and takes the socket (sandbox/direct.h).
 * clone3 says ENOSYS, so glibc falls back to clone, whose flags a filter
 * can see. Anything else: EPERM. */
static int helper_prog_compile(char **ret, size_t *ret_len, nsr_error *err) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return nsr_error_setx(err, ENOMEM, "egress helper: seccomp_init");
        int k = 0;
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(allowed_calls); i++)
                if (allowed_calls[i] >= 0)
                        k = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed_calls[i], 0);
        const struct scmp_arg_cmp thread = {
                .arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = CLONE_THREAD, .datum_b = CLONE_THREAD
        };
        if (k >= 0)
                k = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1, &thread);
        if (k >= 0)
                k = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        static const int domains[] = { AF_INET, AF_INET6, AF_NETLINK };
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(domains); i++) {
                const struct scmp_arg_cmp dom = {
                        .arg = 0, .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t) domains[i], .datum_b = 0
                };
                k = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, &dom);
        }
        /* getifaddrs (the host's own addresses, re-read when the rtnetlink
         * watch says they changed) binds its netlink socket. bind is let
         * through only with a netlink address's length: one of IPv4 or
         * IPv6 is longer, so the kernel refuses it (EINVAL), and no other
         * family's socket can be made here. */
        const struct scmp_arg_cmp nl_len = {
                .arg = 2, .op = SCMP_CMP_EQ, .datum_a = sizeof(struct sockaddr_nl), .datum_b = 0
        };
        if (k >= 0)
                k = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(bind), 1, &nl_len);
        /* ioctl: only the two requests that answer the command's listener
         * (sandbox/direct.h): a reply, and a socket put in place. The
         * request is an unsigned int: its low 32 bits. */
        static const unsigned long requests[] = { SECCOMP_IOCTL_NOTIF_SEND, SECCOMP_IOCTL_NOTIF_ADDFD };
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(requests); i++) {
                const struct scmp_arg_cmp req = {
                        .arg = 1, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffU, .datum_b = (uint32_t) requests[i]
                };
                k = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, &req);
        }
        int r = k < 0 ? nsr_error_set(err, -k, "egress helper: building its seccomp filter")
                      : nsr_seccomp_export(ctx, ret, ret_len, err);
        seccomp_release(ctx);
        return r;
}

/* Compiling the program above took 0.5 ms of a CPU that the sandbox's
 * child wants at the same moment (a fifth of the --allow-host target):
 * it comes from the seccomp cache, looked up before Landlock shuts the
 * file system. Id: see nsr_seccomp_builtin_bpf. */
#define HELPER_PROG_ID "nsrun egress helper program 1"

int nsr_egress_helper_prog(char **ret, size_t *ret_len, nsr_error *err) {
        return nsr_seccomp_builtin_bpf(HELPER_PROG_ID, helper_prog_compile, ret, ret_len, err);
}

/* After no_new_privs. */
static int confine_seccomp(const char *data, size_t len, nsr_error *err) {
        int r = nsr_seccomp_load(data, len);
        return r < 0 ? nsr_error_set(err, -r, "egress helper: loading its seccomp filter") : 0;
}

/* What the helper serves. Its services reach each other through here:
 * the DNS answerer's table of names (nsr_dns_map(dns)) is what a
 * transparent connect is judged by. */
typedef struct helper_run {
        nsr_evloop *loop;
        nsr_relay *relay;
        nsr_dns *dns; /* or NULL: no network namespace, no answerer */
} helper_run;

static void on_monitor(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        helper_run *h = data;
        char c;
        (void) s;
        (void) ev;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                nsr_evloop_stop(h->loop); /* the monitor shut its end: finish */
}

static void send_log(int sock, const nsr_egress_log *log) {
        msg m;
        for (size_t i = 0; i < log->n_records; i++) {
                memset(&m, 0, sizeof(m));
                m.type = MSG_RECORD;
                m.u.rec = log->records[i];
                if (send(sock, &m, offsetof(msg, u) + sizeof(m.u.rec), MSG_NOSIGNAL) < 0)
                        return;
        }
        memset(&m, 0, sizeof(m));
        m.type = MSG_END;
        m.u.end = (msg_end){ .n_records = log->n_records,
                             .n_dropped = log->n_dropped,
                             .n_total = log->n_total,
                             .n_refused = log->n_refused,
                             .n_malformed = log->n_malformed,
                             .n_log_dropped = log->n_log_dropped };
        (void) send(sock, &m, offsetof(msg, u) + sizeof(m.u.end), MSG_NOSIGNAL);
}

static void relay_record(void *data, const nsr_egress_record *rec) {
        nsr_relay_record(data, rec);
}

static _Noreturn void helper_main(nsr_relay *relay, nsr_dns *dns, nsr_direct *direct, int sock, pid_t parent) {
        nsr_error e = { 0 };
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
                _exit(1);
        (void) prctl(PR_SET_NAME, "nsrun-egress", 0, 0, 0);
        signal(SIGPIPE, SIG_IGN);
        int keep[KEEP_MAX];
        size_t n = nsr_relay_fds(relay, keep, KEEP_MAX - 1);
        if (dns)
                n += nsr_dns_fds(dns, keep + n, KEEP_MAX - 1 - n);
        n += nsr_direct_fds(direct, keep + n, KEEP_MAX - 1 - n);
        keep[n++] = sock;
        /* Every fd but these goes, stdio too: nothing of the monitor's
         * (run dirs, the state dir, the caller's terminal) stays in reach. */
        if (nsr_close_all_but(0, keep, n) < 0)
                _exit(1);
        /* The resolver loads what it needs now, while it still can. */
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
        if (getaddrinfo("localhost", NULL, &hints, &ai) == 0)
                freeaddrinfo(ai);
        _cleanup_free_ char *prog = NULL;
        size_t prog_len = 0;
        if (nsr_egress_helper_prog(&prog, &prog_len, &e) < 0 || confine_fs(&e) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || confine_seccomp(prog, prog_len, &e) < 0)
                _exit(1);
        helper_run h = { .relay = relay, .dns = dns };
        if (nsr_evloop_new(&h.loop) < 0 || nsr_relay_attach(relay, h.loop) < 0 ||
            (dns && nsr_dns_attach(dns, h.loop, relay) < 0) ||
            nsr_evloop_add(h.loop, sock, EPOLLIN, on_monitor, &h, NULL) < 0)
                _exit(1);
        /* Without it connects are refused (the monitor's forwarding fails):
         * the proxy still serves. */
        if (direct && nsr_direct_attach(direct, h.loop) < 0)
                direct = nsr_direct_free(direct);
        if (direct)
                nsr_direct_on_record(direct, relay_record, relay);
        /* A connect is judged by the names the sandbox resolved through
         * the answerer, and a UDP or TCP query to the answerer stays
         * inside. */
        if (direct && dns) {
                struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(53) };
                (void) inet_pton(AF_INET, NSR_DNS_ADDRESS, &a.sin_addr);
                nsr_direct_set_names(direct, nsr_dns_map(dns), (const struct sockaddr *) &a);
        }
        (void) nsr_evloop_run(h.loop);
        nsr_dns_detach(dns);
        /* Connects still waiting are refused first: their records go
         * into the relay's log before it is taken. */
        nsr_egress_log direct_log = { 0 }, log = { 0 };
        if (direct)
                nsr_direct_finish(direct, &direct_log);
        nsr_relay_finish(relay, &log);
        for (size_t i = 0; i < direct_log.n_records; i++)
                nsr_egress_log_add(&log, &direct_log.records[i]);
        send_log(sock, &log);
        _exit(0);
}

int nsr_egress_helper_start(nsr_relay *relay, nsr_dns *dns, nsr_direct *direct, nsr_egress_helper **ret,
                            nsr_error *err) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return nsr_error_set(err, errno, "egress helper: socketpair");
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close(sv[0]);
                close(sv[1]);
                return nsr_error_set(err, e, "egress helper: fork");
        }
        if (pid == 0) {
                close(sv[0]);
                helper_main(relay, dns, direct, sv[1], parent);
        }
        close(sv[1]);
        nsr_egress_helper *h = nsr_malloc0(sizeof(*h));
        *h = (nsr_egress_helper){ .pid = pid, .sock = sv[0] };
        h->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        *ret = h;
        return 0;
}

/* ---- the monitor's side: untrusted input ------------------------------- */

/* A string field ends within its array. Its bytes are the sandbox's
 * anyway (a host name a SOCKS5 client sent): every printer escapes them. */
static void text_end(char *s, size_t size) {
        s[size - 1] = '\0';
}

/* One record from the helper, checked field by field; its bool is read
 * as a byte, since any other value in a bool is undefined. */
static bool record_ok(const char *raw, nsr_egress_record *rec) {
        unsigned char allowed;
        memcpy(&allowed, raw + offsetof(nsr_egress_record, allowed), 1);
        if (allowed > 1)
                return false;
        memcpy(rec, raw, sizeof(*rec));
        rec->allowed = allowed;
        text_end(rec->host, sizeof(rec->host));
        text_end(rec->reason, sizeof(rec->reason));
        text_end(rec->address, sizeof(rec->address));
        if ((int) rec->proto < 0 || rec->proto >= _NSR_EGRESS_PROTO_MAX || rec->port < 0 || rec->port > 65535)
                return false;
        if (rec->started.tv_nsec < 0 || rec->started.tv_nsec >= 1000000000L || rec->started.tv_sec < 0)
                return false;
        return true;
}

static bool read_log(int sock, int timeout_ms, nsr_egress_log *log);

int nsr_egress_helper_read(int sock, int timeout_ms, nsr_egress_log *ret) {
        *ret = (nsr_egress_log){ 0 };
        if (read_log(sock, timeout_ms, ret))
                return 0;
        nsr_egress_log_free(ret);
        *ret = (nsr_egress_log){ .helper_died = true };
        return -EBADMSG;
}

/* Reads until the end message, a deadline, or anything malformed. */
static bool read_log(int sock, int timeout_ms, nsr_egress_log *log) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        size_t cap = 0;
        for (;;) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                long left = timeout_ms - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
                struct pollfd p = { .fd = sock, .events = POLLIN };
                if (left <= 0 || poll(&p, 1, (int) left) <= 0)
                        return false;
                char buf[sizeof(msg) + 1];
                ssize_t n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
                uint32_t type;
                if (n < (ssize_t) offsetof(msg, u))
                        return false;
                memcpy(&type, buf, sizeof(type));
                const char *body = buf + offsetof(msg, u);
                if (type == MSG_RECORD && n == (ssize_t) (offsetof(msg, u) + sizeof(nsr_egress_record))) {
                        nsr_egress_record rec;
                        if (log->n_records >= NSR_EGRESS_RECORDS_MAX || !record_ok(body, &rec))
                                return false;
                        if (log->n_records == cap) {
                                cap = cap ? cap * 2 : 64;
                                log->records = nsr_realloc_array(log->records, cap, sizeof(rec));
                        }
                        log->records[log->n_records++] = rec;
                } else if (type == MSG_END && n == (ssize_t) (offsetof(msg, u) + sizeof(msg_end))) {
                        msg_end e;
                        memcpy(&e, body, sizeof(e));
                        /* Counts that cannot be: the whole log is suspect. */
                        if (e.n_records != log->n_records || e.n_total < e.n_records || e.n_refused > e.n_total ||
                            e.n_total > UINT32_MAX || e.n_malformed > UINT32_MAX || e.n_log_dropped > UINT32_MAX ||
                            e.n_dropped > e.n_total)
                                return false;
                        log->n_dropped = e.n_dropped;
                        log->n_total = e.n_total;
                        log->n_refused = e.n_refused;
                        log->n_malformed = e.n_malformed;
                        log->n_log_dropped = e.n_log_dropped;
                        return true;
                } else
                        return false;
        }
}

void nsr_egress_helper_finish(nsr_egress_helper *h, nsr_egress_log *ret) {
        (void) shutdown(h->sock, SHUT_WR);
        /* Anything short of a whole, well-formed log: none of it is the
         * run's record. */
        (void) nsr_egress_helper_read(h->sock, FINISH_MS, ret);
        if (h->pidfd >= 0)
                (void) nsr_pidfd_send_signal(h->pidfd, SIGKILL);
        h->sock = safe_close(h->sock);
}

nsr_egress_helper *nsr_egress_helper_free(nsr_egress_helper *h) {
        if (!h)
                return NULL;
        if (h->pidfd >= 0) {
                (void) nsr_pidfd_send_signal(h->pidfd, SIGKILL);
                siginfo_t si;
                (void) waitid((idtype_t) P_PIDFD, (id_t) h->pidfd, &si, WEXITED | WNOHANG);
        }
        safe_close(h->pidfd);
        safe_close(h->sock);
        free(h);
        return NULL;
}
