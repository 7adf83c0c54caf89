/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/sockmsg.h"

int nsr_sockmsg_send(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds) {
        return nsr_sockmsg_send_flags(sock, iov, n_iov, fds, n_fds, 0);
}

int nsr_sockmsg_send_flags(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds, int flags) {
        if (n_fds > NSR_SOCKMSG_FDS_MAX)
                return -EMSGSIZE;
        char cbuf[CMSG_SPACE(NSR_SOCKMSG_FDS_MAX * sizeof(int))];
        memset(cbuf, 0, sizeof(cbuf));
        struct msghdr msg = { .msg_iov = (struct iovec *) iov, .msg_iovlen = n_iov };
        if (n_fds) {
                msg.msg_control = cbuf;
                msg.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        }
        ssize_t n;
        do
                n = sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : 0;
}

int nsr_sockmsg_send_creds(int sock, char tag) {
        struct ucred cred = { .pid = getpid(), .uid = getuid(), .gid = getgid() };
        char cbuf[CMSG_SPACE(sizeof(cred))];
        memset(cbuf, 0, sizeof(cbuf));
        struct iovec iov = { .iov_base = &tag, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof(cred));
        memcpy(CMSG_DATA(c), &cred, sizeof(cred));
        ssize_t n;
        do
                n = sendmsg(sock, &msg, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : 0;
}

ssize_t nsr_sockmsg_recv(int sock, struct iovec *iov, size_t n_iov, int flags, int *fds, size_t max_fds,
                         nsr_sockmsg_info *ret) {
        /* Room for more fds than the caller takes, so that extra ones are
         * received (and closed) rather than silently cut off. */
        char cbuf[CMSG_SPACE(2 * NSR_SOCKMSG_FDS_MAX * sizeof(int))];
        struct msghdr msg = {
                .msg_iov = iov, .msg_iovlen = n_iov, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)
        };
        nsr_sockmsg_info info = { 0 };
        if (ret)
                *ret = info; /* defined on failure too: no fds, nothing lost */
        if (max_fds > NSR_SOCKMSG_FDS_MAX)
                max_fds = NSR_SOCKMSG_FDS_MAX;
        for (size_t i = 0; i < max_fds; i++)
                fds[i] = -1;
        ssize_t n;
        do
                n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (info.n_fds < max_fds)
                                fds[info.n_fds++] = fd;
                        else {
                                close(fd);
                                info.extra_fds = true;
                        }
                }
        }
        info.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
        if (ret)
                *ret = info;
        return n;
}

int nsr_sockmsg_recv_pid(int sock, pid_t *ret) {
        struct ucred cred;
        char cbuf[CMSG_SPACE(sizeof(cred))];
        char data;
        struct iovec iov = { .iov_base = &data, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        ssize_t n;
        do
                n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ENODATA;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                        memcpy(&cred, CMSG_DATA(c), sizeof(cred));
                        *ret = cred.pid;
                        return 0;
                }
        return -ENODATA;
}
