/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Transparent connect(): the monitor's forwarding and the helper's
 * answers (direct.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/sockmsg.h"
#include "base/syscalls.h"
#include "base/util.h"
#include "egress/relay.h"
#include "sandbox/direct.h"
#include "seccomp/connect.h"
#include "seccomp/refused.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

enum { MSG_LISTENER = 1, MSG_CONNECT = 2 };

/* Monitor -> helper: one fixed-size message, the socket attached. */
typedef struct direct_msg {
        uint32_t type;
        int32_t fdnum; /* the sandbox's fd number */
        uint64_t id;   /* the notification */
        uint32_t cloexec;
        uint32_t addr_len;
        struct sockaddr_storage addr;
} direct_msg;

/* ---- the monitor's side ------------------------------------------------- */

int nsr_direct_send_listener(int sock, int listener) {
        direct_msg m = { .type = MSG_LISTENER };
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        return nsr_sockmsg_send(sock, &iov, 1, &listener, 1);
}

static void respond(int listener, uint64_t id, int error, uint32_t flags) {
        struct seccomp_notif_resp r = { .id = id, .error = error, .flags = flags };
        (void) ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len) {
        struct iovec local = { .iov_base = buf, .iov_len = len };
        struct iovec remote = { .iov_base = (void *) (uintptr_t) addr, .iov_len = len };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        return n == (ssize_t) len ? 0 : -EFAULT;
}

/* Is fdnum close-on-exec in pid? The "flags:" line of its fdinfo. */
static bool fd_cloexec(pid_t pid, int fdnum) {
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int) pid, fdnum);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        int n = fd < 0 ? -1 : nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return true;
        buf[n] = '\0';
        const char *f = strstr(buf, "flags:");
        unsigned long flags = f ? strtoul(f + strlen("flags:"), NULL, 8) : O_CLOEXEC;
        return (flags & O_CLOEXEC) != 0;
}

/* The caller's thread group from its status (a notification names the
 * thread that called, and pidfd_open(2) takes only a group's leader):
 * *tgid, and whether the group is one thread ("Threads:"). -1 when the
 * task is gone. */
static int thread_group(pid_t tid, pid_t *tgid, bool *alone) {
        char path[64], buf[2048];
        snprintf(path, sizeof(path), "/proc/%d/status", (int) tid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        int n = fd < 0 ? -1 : nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        const char *g = strstr(buf, "\nTgid:"), *t = strstr(buf, "\nThreads:");
        long v = g ? strtol(g + strlen("\nTgid:"), NULL, 10) : 0;
        if (v <= 0)
                return -1;
        *tgid = (pid_t) v;
        *alone = t && strtol(t + strlen("\nThreads:"), NULL, 10) == 1;
        return 0;
}

/* connect(fd, sa), made here for the sandbox, never blocking the loop: a
 * unix stream connect that would wait (the server's backlog is full)
 * says EAGAIN. A named unix socket is found in the caller's own view of
 * the file system (its root; a relative name beneath its working dir),
 * and reached through /proc/self/fd. A netlink connect to multicast
 * groups is refused (EPERM): here it would have the monitor's rights.
 * Returns 0 or a positive errno. */
static int local_connect(pid_t pid, int fd, int domain, const struct sockaddr_storage *ss, socklen_t len) {
        struct sockaddr_storage a = *ss;
        if (domain == AF_NETLINK && a.ss_family == AF_NETLINK && len >= sizeof(struct sockaddr_nl) &&
            ((const struct sockaddr_nl *) &a)->nl_groups)
                return EPERM;
        _cleanup_close_ int target = -1;
        struct sockaddr_un *un = (struct sockaddr_un *) &a;
        size_t off = offsetof(struct sockaddr_un, sun_path);
        if (domain == AF_UNIX && a.ss_family == AF_UNIX && len > off && un->sun_path[0] != '\0') {
                size_t n = strnlen(un->sun_path, len - off);
                if (n >= sizeof(un->sun_path))
                        return EINVAL;
                un->sun_path[n] = '\0';
                char dir[64];
                bool abs = un->sun_path[0] == '/';
                snprintf(dir, sizeof(dir), "/proc/%d/%s", (int) pid, abs ? "root" : "cwd");
                _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return errno;
                target = nsr_openat2(dfd, abs ? un->sun_path + 1 : un->sun_path, O_PATH | O_CLOEXEC,
                                     (abs ? RESOLVE_IN_ROOT : RESOLVE_BENEATH) | RESOLVE_NO_MAGICLINKS);
                if (target < 0)
                        return errno == EXDEV ? EACCES : errno;
                memset(un->sun_path, 0, sizeof(un->sun_path));
                snprintf(un->sun_path, sizeof(un->sun_path), "/proc/self/fd/%d", target);
                len = (socklen_t) (off + strlen(un->sun_path) + 1);
        }
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return errno;
        if (!(fl & O_NONBLOCK))
                (void) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        int r = connect(fd, (const struct sockaddr *) &a, len);
        int e = r < 0 ? errno : 0;
        if (!(fl & O_NONBLOCK))
                (void) fcntl(fd, F_SETFL, fl);
        return e;
}

static void sent_add(nsr_direct_sent *s, int listener, uint64_t id) {
        if (!s)
                return;
        if (s->n == s->cap && s->n > 0) {
                size_t k = 0;
                for (size_t i = 0; i < s->n; i++)
                        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &s->ids[i]) == 0)
                                s->ids[k++] = s->ids[i];
                s->n = k;
        }
        if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 64;
                s->ids = nsr_realloc_array(s->ids, s->cap, sizeof(*s->ids));
        }
        s->ids[s->n++] = id;
}

void nsr_direct_sent_fail(nsr_direct_sent *s, int listener) {
        /* One the helper answered is gone: its id gets ENOENT, nothing else
         * (ids are never reused by a filter). */
        for (size_t i = 0; i < s->n; i++)
                respond(listener, s->ids[i], -ECONNREFUSED, 0);
        s->n = 0;
}

void nsr_direct_sent_done(nsr_direct_sent *s) {
        free(s->ids);
        *s = (nsr_direct_sent){ 0 };
}

void nsr_direct_forward(int listener, int sock, const struct seccomp_notif *req, int where, nsr_direct_sent *sent) {
        pid_t pid = (pid_t) req->pid;
        uint64_t args[3] = { req->data.args[0], req->data.args[1], req->data.args[2] };
        if (where == 1) {
                /* i386 socketcall: the three arguments in memory, 32-bit each. */
                uint32_t a[3];
                if (read_mem(pid, req->data.args[1], a, sizeof(a)) < 0)
                        return respond(listener, req->id, -EFAULT, 0);
                for (int i = 0; i < 3; i++)
                        args[i] = a[i];
        }
        int fdnum = (int) args[0];
        /* The kernel refuses a longer address with EINVAL. */
        if ((int) args[2] < 0 || args[2] > sizeof(struct sockaddr_storage))
                return respond(listener, req->id, -EINVAL, 0);
        direct_msg m = { .type = MSG_CONNECT, .fdnum = fdnum, .id = req->id, .addr_len = (uint32_t) args[2] };
        if (m.addr_len && read_mem(pid, args[1], &m.addr, m.addr_len) < 0)
                return respond(listener, req->id, -EFAULT, 0);
        pid_t tgid = pid;
        bool alone = false;
        if (thread_group(pid, &tgid, &alone) < 0)
                return respond(listener, req->id, -ECONNREFUSED, 0);
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, tgid, 0);
        _cleanup_close_ int fd = pidfd < 0 ? -1 : (int) syscall(SYS_pidfd_getfd, pidfd, fdnum, 0);
        if (fd < 0) {
                int e = errno;
                /* The task is gone, or fdnum is not open: never let the
                 * call go on for an fd nsrun did not see. */
                return respond(listener, req->id, pidfd < 0 || e == ESRCH ? -ECONNREFUSED : -EBADF, 0);
        }
        m.cloexec = fd_cloexec(pid, fdnum);
        /* pid may have been reused meanwhile: then what was read is not
         * the caller's, and there is no one to answer. */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
                return;
        int domain;
        socklen_t l = sizeof(domain);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) < 0)
                return respond(listener, req->id, -(errno == ENOTSOCK ? ENOTSOCK : EBADF), 0);
        /* Unix and netlink sockets: the sandbox's own namespace and file
         * system. They are never sockets nsrun put in place, but a call
         * that goes on reads its fd number again: a caller with another
         * thread could have swapped in one that is (and the address for a
         * disconnect). A single thread cannot (connect.h refuses a shared
         * fd table outside a thread group); for the others the call is
         * made here, on the socket nsrun saw. */
        if (domain == AF_UNIX || domain == AF_NETLINK) {
                if (alone)
                        return respond(listener, req->id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
                return respond(listener, req->id, -local_connect(pid, fd, domain, &m.addr, m.addr_len), 0);
        }
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        int r = nsr_sockmsg_send(sock, &iov, 1, &fd, 1);
        if (r < 0) /* the helper is gone: no network */
                respond(listener, req->id, -ECONNREFUSED, 0);
        else
                sent_add(sent, listener, req->id);
}

int nsr_direct_handle(nsr_refused *rf, int listener, int sock, nsr_direct_sent *sent) {
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req));
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
                return errno == EINTR || errno == ENOENT ? 0 : -errno;
        int where;
        /* A connect the policy refuses is a refused call like any other;
         * the connect program comes after the policy's in the chain. */
        if (nsr_connect_is_connect(&req.data, &where) && !nsr_refused_is_refusal(rf, &req.data)) {
                nsr_direct_forward(listener, sock, &req, where, sent);
                return 1;
        }
        if (rf && rf->prog)
                return nsr_refused_answer(rf, listener, &req);
        respond(listener, req.id, -ENOSYS, 0); /* nothing else is sent here */
        return 0;
}

/* ---- the helper's side ---------------------------------------------------- */

typedef struct pending {
        struct nsr_direct *d;
        uint64_t id;
        int fdnum;
        bool cloexec, nonblock;
        bool inside;       /* the sandbox's own socket, connected here for it: no injection */
        bool note_refused; /* inside: a refusal is recorded (a TCP loopback port nothing inside serves) */
        int fd;            /* the host's socket, connecting (inside: a duplicate of the sandbox's) */
        nsr_evsrc *src;
        nsr_egress_record rec;
        struct timespec t0;
        struct pending *next;
} pending;

struct nsr_direct {
        const nsr_egress_rules *rules;
        const nsr_dnsmap *map;
        struct sockaddr_storage dns;
        bool have_dns;
        nsr_egress_own own;
        int sock;
        int listener;
        uint64_t host_cookie;
        nsr_evloop *loop;
        nsr_evsrc *s_sock;
        pending *pending;
        size_t n_pending;
        nsr_egress_log log;
        void (*on_record)(void *data, const nsr_egress_record *rec);
        void *on_record_data;
};

int nsr_direct_new(const nsr_egress_rules *rules, int sock, nsr_direct **ret, nsr_error *err) {
        (void) err;
        nsr_direct *d = nsr_malloc0(sizeof(*d));
        *d = (nsr_direct){ .rules = rules, .sock = sock, .listener = -1 };
        *ret = d;
        return 0;
}

static void pending_free(pending *p) {
        nsr_evloop_del(p->src);
        safe_close(p->fd);
        free(p);
}

nsr_direct *nsr_direct_free(nsr_direct *d) {
        if (!d)
                return NULL;
        while (d->pending) {
                pending *p = d->pending;
                d->pending = p->next;
                pending_free(p);
        }
        nsr_evloop_del(d->s_sock);
        safe_close(d->sock);
        safe_close(d->listener);
        nsr_egress_own_done(&d->own);
        nsr_egress_log_free(&d->log);
        free(d);
        return NULL;
}

size_t nsr_direct_fds(const nsr_direct *d, int *fds, size_t max) {
        size_t n = 0;
        if (d && d->sock >= 0 && n < max)
                fds[n++] = d->sock;
        return n;
}

void nsr_direct_set_names(nsr_direct *d, const nsr_dnsmap *map, const struct sockaddr *dns) {
        d->map = map;
        d->have_dns = false;
        if (dns && (dns->sa_family == AF_INET || dns->sa_family == AF_INET6)) {
                memcpy(&d->dns, dns,
                       dns->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
                d->have_dns = true;
        }
}

void nsr_direct_on_record(nsr_direct *d, void (*cb)(void *data, const nsr_egress_record *rec), void *data) {
        d->on_record = cb;
        d->on_record_data = data;
}

static uint64_t ms_since(const struct timespec *t0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t ms = (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
        return ms > 0 ? (uint64_t) ms : 0;
}

/* Into the relay's log (and --net-log-fd) when there is one, else into
 * this one's, appended at the end. */
static void record(nsr_direct *d, nsr_egress_record *rec) {
        if (d->on_record)
                d->on_record(d->on_record_data, rec);
        else
                nsr_egress_log_add(&d->log, rec);
}

static void start_record(const nsr_direct_verdict *v, nsr_egress_record *rec) {
        *rec = (nsr_egress_record){ .port = v->port, .proto = NSR_EGRESS_PROTO_DIRECT };
        snprintf(rec->host, sizeof(rec->host), "%s", v->host);
        snprintf(rec->address, sizeof(rec->address), "%s", v->address);
        clock_gettime(CLOCK_REALTIME, &rec->started);
}

/* One option from the sandbox's socket to ours, as it is. */
static void copy_opt(int from, int to, int level, int name) {
        int v;
        socklen_t l = sizeof(v);
        if (getsockopt(from, level, name, &v, &l) == 0 && l == sizeof(v))
                (void) setsockopt(to, level, name, &v, l);
}

/* A buffer size the program set: the kernel reports twice what was asked. */
static void copy_buf(int from, int to, int name) {
        int v, def;
        socklen_t l = sizeof(v), ld = sizeof(def);
        if (getsockopt(from, SOL_SOCKET, name, &v, &l) == 0 && getsockopt(to, SOL_SOCKET, name, &def, &ld) == 0 &&
            v != def)
                (void) setsockopt(to, SOL_SOCKET, name, &(int){ v / 2 }, sizeof(int));
}

static void copy_opts(int from, int to, int family) {
        copy_opt(from, to, IPPROTO_TCP, TCP_NODELAY);
        copy_opt(from, to, SOL_SOCKET, SO_KEEPALIVE);
        copy_opt(from, to, IPPROTO_TCP, TCP_KEEPIDLE);
        copy_opt(from, to, IPPROTO_TCP, TCP_KEEPINTVL);
        copy_opt(from, to, IPPROTO_TCP, TCP_KEEPCNT);
        copy_opt(from, to, IPPROTO_TCP, TCP_USER_TIMEOUT);
        copy_opt(from, to, SOL_SOCKET, SO_PRIORITY);
        struct linger lg;
        socklen_t l = sizeof(lg);
        if (getsockopt(from, SOL_SOCKET, SO_LINGER, &lg, &l) == 0 && l == sizeof(lg) && lg.l_onoff)
                (void) setsockopt(to, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        copy_buf(from, to, SO_RCVBUF);
        copy_buf(from, to, SO_SNDBUF);
        if (family == AF_INET)
                copy_opt(from, to, IPPROTO_IP, IP_TOS);
        else {
                copy_opt(from, to, IPPROTO_IPV6, IPV6_TCLASS);
                copy_opt(from, to, IPPROTO_IPV6, IPV6_V6ONLY);
        }
}

static void pending_unlink(nsr_direct *d, pending *p) {
        for (pending **pp = &d->pending; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        d->n_pending--;
                        return;
                }
}

/* The host's connect finished: put the socket in place, answer, record. */
static void complete(pending *p, int error) {
        nsr_direct *d = p->d;
        if (p->inside) {
                respond(d->listener, p->id, -error, 0);
                if (p->note_refused && error == ECONNREFUSED) {
                        snprintf(p->rec.reason, sizeof(p->rec.reason), "%s",
                                 "not in --allow-host; nothing listens on the sandbox's own loopback there");
                        record(d, &p->rec);
                }
                pending_unlink(d, p);
                return pending_free(p);
        }
        if (error == 0) {
                /* The file status flags the program's socket had. */
                int fl = fcntl(p->fd, F_GETFL);
                if (fl >= 0 && !p->nonblock)
                        (void) fcntl(p->fd, F_SETFL, fl & ~O_NONBLOCK);
                struct seccomp_notif_addfd a = { .id = p->id,
                                                 .flags = SECCOMP_ADDFD_FLAG_SETFD,
                                                 .srcfd = (uint32_t) p->fd,
                                                 .newfd = (uint32_t) p->fdnum,
                                                 .newfd_flags = p->cloexec ? O_CLOEXEC : 0 };
                if (ioctl(d->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0)
                        error = errno == ENOENT ? EINTR : errno; /* the call was interrupted meanwhile */
        }
        if (error == 0)
                respond(d->listener, p->id, p->nonblock ? -EINPROGRESS : 0, 0);
        else if (error != EINTR)
                respond(d->listener, p->id, -error, 0);
        p->rec.allowed = true;
        p->rec.duration_ms = ms_since(&p->t0);
        if (error) {
                p->rec.allowed = false;
                snprintf(p->rec.reason, sizeof(p->rec.reason), "%s",
                         error == EINTR ? "the call was interrupted" : strerror(error));
        }
        record(d, &p->rec);
        pending_unlink(d, p);
        pending_free(p);
}

static void on_connected(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        pending *p = data;
        (void) s;
        (void) ev;
        int err = 0;
        socklen_t l = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                err = errno;
        if (err == 0) {
                /* Writable without an error: connected (a spurious wake-up
                 * of a socket still connecting says EINPROGRESS nowhere,
                 * so check). */
                struct sockaddr_storage peer;
                socklen_t pl = sizeof(peer);
                if (getpeername(fd, (struct sockaddr *) &peer, &pl) < 0)
                        return;
        }
        complete(p, err);
}

/* The sandbox's own call, made here on the socket nsrun saw and with the
 * address it read: letting the call go on would let the kernel read the
 * fd number and the address again, and another thread could have put a
 * socket nsrun handed in at that number (a disconnect would then leave a
 * host socket that binds and listens). The socket is of the sandbox's
 * namespace, so this reaches what the call would have. A blocking one is
 * made non-blocking for the call alone, and answered once it completes. */
static void connect_inside(nsr_direct *d, const direct_msg *m, int sfd, const nsr_direct_query *q,
                           const nsr_direct_verdict *v) {
        int fl = fcntl(sfd, F_GETFL);
        if (fl < 0)
                return respond(d->listener, m->id, -errno, 0);
        bool nonblock = fl & O_NONBLOCK;
        if (!nonblock)
                (void) fcntl(sfd, F_SETFL, fl | O_NONBLOCK);
        int r = connect(sfd, (const struct sockaddr *) &q->addr, q->addr_len);
        int e = r < 0 ? errno : 0;
        if (!nonblock)
                (void) fcntl(sfd, F_SETFL, fl);
        pending *p = nsr_malloc0(sizeof(*p));
        *p = (pending){ .d = d, .id = m->id, .inside = true, .fd = -1 };
        /* A host-loopback port the user may have meant, refused: say so
         * in the record (the sandbox's own servers are not recorded). */
        p->note_refused = q->type == SOCK_STREAM && v->port > 0 && !q->connected && !q->listening;
        start_record(v, &p->rec);
        p->next = d->pending;
        d->pending = p;
        d->n_pending++;
        if (nonblock || (e != EINPROGRESS && e != EALREADY))
                return complete(p, e);
        p->fd = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
        if (p->fd < 0 || d->n_pending > NSR_DIRECT_PENDING_MAX)
                return complete(p, p->fd < 0 ? errno : ECONNREFUSED);
        if (nsr_evloop_add(d->loop, p->fd, EPOLLOUT, on_connected, p, &p->src) < 0)
                return complete(p, ENOMEM);
}

/* Connects from the host, non-blocking. */
static void connect_host(nsr_direct *d, const direct_msg *m, int sfd, int family, const nsr_direct_verdict *v) {
        pending *p = nsr_malloc0(sizeof(*p));
        *p = (pending){ .d = d, .id = m->id, .fdnum = m->fdnum, .cloexec = m->cloexec != 0, .fd = -1 };
        start_record(v, &p->rec);
        clock_gettime(CLOCK_MONOTONIC, &p->t0);
        int fl = fcntl(sfd, F_GETFL);
        p->nonblock = fl >= 0 && (fl & O_NONBLOCK);
        p->fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        p->next = d->pending;
        d->pending = p;
        d->n_pending++;
        if (p->fd < 0 || d->n_pending > NSR_DIRECT_PENDING_MAX)
                return complete(p, p->fd < 0 ? errno : ECONNREFUSED);
        copy_opts(sfd, p->fd, family);
        if (connect(p->fd, (const struct sockaddr *) &v->target, v->target_len) == 0)
                return complete(p, 0);
        if (errno != EINPROGRESS)
                return complete(p, errno);
        if (nsr_evloop_add(d->loop, p->fd, EPOLLOUT, on_connected, p, &p->src) < 0)
                return complete(p, ENOMEM);
}

static uint64_t netns_cookie(int fd) {
        uint64_t c = 0;
        socklen_t l = sizeof(c);
        if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &l) < 0)
                return 0;
        return c;
}

static int sockopt_int(int fd, int level, int name) {
        int v = -1;
        socklen_t l = sizeof(v);
        if (getsockopt(fd, level, name, &v, &l) < 0)
                return -1;
        return v;
}

static void handle(nsr_direct *d, const direct_msg *m, int sfd) {
        nsr_direct_query q = { .domain = sockopt_int(sfd, SOL_SOCKET, SO_DOMAIN),
                               .type = sockopt_int(sfd, SOL_SOCKET, SO_TYPE),
                               .listening = sockopt_int(sfd, SOL_SOCKET, SO_ACCEPTCONN) == 1,
                               .addr_len = m->addr_len };
        uint64_t cookie = netns_cookie(sfd);
        /* Not of the helper's (the host's) namespace: the sandbox's. */
        q.sandbox_ns = cookie != 0 && cookie != d->host_cookie;
        struct sockaddr_storage peer;
        socklen_t pl = sizeof(peer);
        q.connected = getpeername(sfd, (struct sockaddr *) &peer, &pl) == 0;
        memcpy(&q.addr, &m->addr, sizeof(q.addr));
        nsr_direct_ctx c = {
                .rules = d->rules,
                .map = d->map,
                .own = &d->own,
                .dns = d->have_dns ? (const struct sockaddr *) &d->dns : NULL,
        };
        nsr_direct_verdict v;
        nsr_direct_judge(&c, &q, &v);
        nsr_egress_record rec;
        switch (v.action) {
        case NSR_DIRECT_CONTINUE:
                /* Never SECCOMP_USER_NOTIF_FLAG_CONTINUE for an IP socket. */
                return connect_inside(d, m, sfd, &q, &v);
        case NSR_DIRECT_REFUSE:
                respond(d->listener, m->id, -v.errnum, 0);
                if (!v.record)
                        return;
                start_record(&v, &rec);
                snprintf(rec.reason, sizeof(rec.reason), "%s", v.reason ? v.reason : "refused");
                return record(d, &rec);
        case NSR_DIRECT_HOST:
                return connect_host(d, m, sfd, q.domain, &v);
        case _NSR_DIRECT_ACTION_MAX:
        case _NSR_DIRECT_ACTION_INVALID:
                break;
        }
        respond(d->listener, m->id, -ECONNREFUSED, 0);
}

static void on_sock(nsr_evsrc *s, int fd, uint32_t ev, void *data) {
        nsr_direct *d = data;
        (void) ev;
        direct_msg m;
        int fds[1] = { -1 };
        nsr_sockmsg_info info;
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        ssize_t n = nsr_sockmsg_recv(fd, &iov, 1, MSG_DONTWAIT, fds, 1, &info);
        if (n == -EAGAIN || n == -EINTR)
                return;
        _cleanup_close_ int sfd = fds[0];
        if (n <= 0) { /* the monitor is gone */
                d->s_sock = nsr_evloop_del(s);
                return;
        }
        if (n != (ssize_t) sizeof(m) || info.truncated || sfd < 0)
                return;
        if (m.type == MSG_LISTENER) {
                if (d->listener < 0)
                        d->listener = TAKE_FD(sfd);
                return;
        }
        if (m.type != MSG_CONNECT || d->listener < 0 || m.addr_len > sizeof(m.addr))
                return;
#ifdef NSR_TEST_HOOKS
        /* A helper that dies with a connect in hand, not yet answered:
         * the monitor must answer it (nsr_direct_sent_fail). */
        if (getenv("NSRUN_TEST_HELPER_DIES_ON_CONNECT"))
                _exit(9);
#endif
        /* The host's own addresses, at the first connect: a run that
         * makes none does not pay for the netlink dump. Until a read
         * succeeds, every public address is refused as the host's. */
        if (!d->own.known)
                (void) nsr_egress_own_read(&d->own);
        handle(d, &m, sfd);
}

int nsr_direct_attach(nsr_direct *d, nsr_evloop *loop) {
        d->loop = loop;
        _cleanup_close_ int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        d->host_cookie = probe < 0 ? 0 : netns_cookie(probe);
        if (d->host_cookie == 0)
                return -EOPNOTSUPP; /* then no socket could be told apart */
        return nsr_evloop_add(loop, d->sock, EPOLLIN, on_sock, d, &d->s_sock);
}

void nsr_direct_finish(nsr_direct *d, nsr_egress_log *log) {
        while (d->pending)
                complete(d->pending, ECONNABORTED);
        size_t refused = 0;
        for (size_t i = 0; i < d->log.n_records; i++) {
                nsr_egress_log_add(log, &d->log.records[i]);
                refused += !d->log.records[i].allowed;
        }
        /* Those beyond the limit were counted only. */
        log->n_total += d->log.n_dropped;
        log->n_refused += d->log.n_refused - refused;
        log->n_dropped += d->log.n_dropped;
        nsr_egress_log_free(&d->log);
        d->log = (nsr_egress_log){ 0 };
}
