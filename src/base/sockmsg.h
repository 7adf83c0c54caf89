/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One message on a unix socket with file descriptors (SCM_RIGHTS) or the
 * sender's credentials (SCM_CREDENTIALS): the one place that builds and
 * reads control messages. Retries EINTR; never raises SIGPIPE. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define NSR_SOCKMSG_FDS_MAX 8

/* Sends iov[0..n_iov) as one message with fds[0..n_fds) attached. */
int nsr_sockmsg_send(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds);
/* The same with sendmsg(2)'s flags (MSG_DONTWAIT: -EAGAIN when the socket
 * has no room; a SOCK_SEQPACKET message goes whole or not at all). */
int nsr_sockmsg_send_flags(int sock, const struct iovec *iov, size_t n_iov, const int *fds, size_t n_fds, int flags);

/* Sends the one byte tag with this process's pid, uid and gid; the kernel
 * translates them into the receiver's namespaces. */
int nsr_sockmsg_send_creds(int sock, char tag);

/* What one received message carried beyond its bytes. */
typedef struct nsr_sockmsg_info {
        size_t n_fds;   /* fds stored in the caller's array */
        bool extra_fds; /* more fds came than the array holds: closed */
        bool truncated; /* MSG_TRUNC or MSG_CTRUNC: bytes or fds were lost */
} nsr_sockmsg_info;

/* Receives one message into iov[0..n_iov); flags are recvmsg's (the fds
 * are always close-on-exec). Up to max_fds (<= NSR_SOCKMSG_FDS_MAX) fds
 * land in fds, the unused slots are -1. Returns the byte count, 0 at the
 * peer's hangup, or -errno. */
/* *ret is filled on failure too (no fds). */
ssize_t nsr_sockmsg_recv(int sock, struct iovec *iov, size_t n_iov, int flags, int *fds, size_t max_fds,
                         nsr_sockmsg_info *ret);

/* Receives one message sent by nsr_sockmsg_send_creds (the socket needs
 * SO_PASSCRED) and returns the sender's pid as the receiver sees it.
 * -ENODATA at hangup or when the message had no credentials. */
int nsr_sockmsg_recv_pid(int sock, pid_t *ret);
