/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>

#include "base/util.h"
#include "sandbox/netns.h"

typedef struct nl_req {
        struct nlmsghdr nh;
        union {
                struct ifinfomsg ifi;
                struct ifaddrmsg ifa;
        };
        char attrs[64];
} nl_req;

static void add_attr(nl_req *req, unsigned short type, const void *data, size_t len) {
        struct rtattr *rta = (struct rtattr *) ((char *) req + NLMSG_ALIGN(req->nh.nlmsg_len));
        rta->rta_type = type;
        rta->rta_len = (unsigned short) RTA_LENGTH(len);
        memcpy(RTA_DATA(rta), data, len);
        req->nh.nlmsg_len = NLMSG_ALIGN(req->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

/* Sends one request and waits for its ack. Returns 0 or -errno from the
 * kernel's answer. */
static int transact(int fd, nl_req *req, unsigned seq) {
        struct sockaddr_nl dst = { .nl_family = AF_NETLINK };
        req->nh.nlmsg_seq = seq;
        req->nh.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
        if (sendto(fd, req, req->nh.nlmsg_len, 0, (struct sockaddr *) &dst, sizeof(dst)) < 0)
                return -errno;
        char buf[1024];
        for (;;) {
                ssize_t n = recv(fd, buf, sizeof(buf), 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *) buf; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
                        if (h->nlmsg_seq != seq)
                                continue;
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                struct nlmsgerr *e = NLMSG_DATA(h);
                                return e->error;
                        }
                }
        }
}

/* The kernel binds the socket on its first send: no bind(2) needed. */
static int open_route(nsr_error *err) {
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return nsr_error_set(err, errno, "loopback: Failed to create NETLINK_ROUTE socket");
        return fd;
}

static int add_v4(int fd, unsigned idx, struct in_addr addr, unsigned seq) {
        nl_req req;
        memset(&req, 0, sizeof(req));
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
        req.nh.nlmsg_type = RTM_NEWADDR;
        req.nh.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
        req.ifa.ifa_family = AF_INET;
        req.ifa.ifa_prefixlen = 8;
        req.ifa.ifa_flags = IFA_F_PERMANENT;
        req.ifa.ifa_scope = RT_SCOPE_HOST;
        req.ifa.ifa_index = idx;
        add_attr(&req, IFA_LOCAL, &addr, sizeof(addr));
        add_attr(&req, IFA_ADDRESS, &addr, sizeof(addr));
        int r = transact(fd, &req, seq);
        return r == -EEXIST ? 0 : r;
}

/* Up is all it takes: on NETDEV_UP the kernel gives a loopback device
 * 127.0.0.1/8 (host scope, permanent) and ::1 itself, the same addresses
 * bwrap's RTM_NEWADDR adds first (and `ip addr` shows the same). One
 * request where bwrap makes two, on a socket the kernel binds (and no
 * if_nametoindex): "child: network" 0.124 -> 0.102 ms (bench/README.md,
 * fourth pass). */
int nsr_netns_loopback_up(nsr_error *err) {
        _cleanup_close_ int fd = open_route(err);
        if (fd < 0)
                return fd;
        nl_req req;
        memset(&req, 0, sizeof(req));
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
        req.nh.nlmsg_type = RTM_NEWLINK;
        req.ifi.ifi_family = AF_UNSPEC;
        req.ifi.ifi_flags = IFF_UP;
        req.ifi.ifi_change = IFF_UP;
        add_attr(&req, IFLA_IFNAME, "lo", sizeof("lo"));
        int r = transact(fd, &req, 1);
        if (r < 0)
                return nsr_error_set(err, -r, "loopback: Failed RTM_NEWLINK");
        return 0;
}

int nsr_netns_loopback_add(const char *ipv4, nsr_error *err) {
        struct in_addr addr;
        if (inet_pton(AF_INET, ipv4, &addr) != 1)
                return nsr_error_setx(err, EINVAL, "loopback: %s is no IPv4 address", ipv4);
        unsigned idx = if_nametoindex("lo");
        if (idx == 0)
                return nsr_error_set(err, errno, "loopback: Failed to look up lo");
        _cleanup_close_ int fd = open_route(err);
        if (fd < 0)
                return fd;
        int r = add_v4(fd, idx, addr, 3);
        if (r < 0)
                return nsr_error_set(err, -r, "loopback: Failed to add %s", ipv4);
        return 0;
}
