/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The names of the policy language (policy.h): errnos, constants, the
 * system calls newer than the libseccomp nsrun is built against, and which
 * names are valid. Pure. */
#include "config.h"

#include <linux/netlink.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include "base/syscalls.h"
#include "seccomp/policy-internal.h"
#include "seccomp/policy.h"

/* ---- name tables --------------------------------------------------------- */

#define E(x)                                                                                                           \
        { #x, x }
static const struct {
        const char *name;
        int value;
} errno_table[] = {
        /* Canonical names first: nsr_policy_errno_name returns the first match. */
        E(EPERM),
        E(ENOENT),
        E(ESRCH),
        E(EINTR),
        E(EIO),
        E(ENXIO),
        E(E2BIG),
        E(ENOEXEC),
        E(EBADF),
        E(ECHILD),
        E(EAGAIN),
        E(ENOMEM),
        E(EACCES),
        E(EFAULT),
        E(ENOTBLK),
        E(EBUSY),
        E(EEXIST),
        E(EXDEV),
        E(ENODEV),
        E(ENOTDIR),
        E(EISDIR),
        E(EINVAL),
        E(ENFILE),
        E(EMFILE),
        E(ENOTTY),
        E(ETXTBSY),
        E(EFBIG),
        E(ENOSPC),
        E(ESPIPE),
        E(EROFS),
        E(EMLINK),
        E(EPIPE),
        E(EDOM),
        E(ERANGE),
        E(EDEADLK),
        E(ENAMETOOLONG),
        E(ENOLCK),
        E(ENOSYS),
        E(ENOTEMPTY),
        E(ELOOP),
        E(ENOMSG),
        E(EIDRM),
        E(ENOSTR),
        E(ENODATA),
        E(ETIME),
        E(ENOSR),
        E(ENOLINK),
        E(EPROTO),
        E(EBADMSG),
        E(EOVERFLOW),
        E(EILSEQ),
        E(EUSERS),
        E(ENOTSOCK),
        E(EDESTADDRREQ),
        E(EMSGSIZE),
        E(EPROTOTYPE),
        E(ENOPROTOOPT),
        E(EPROTONOSUPPORT),
        E(ESOCKTNOSUPPORT),
        E(EOPNOTSUPP),
        E(EPFNOSUPPORT),
        E(EAFNOSUPPORT),
        E(EADDRINUSE),
        E(EADDRNOTAVAIL),
        E(ENETDOWN),
        E(ENETUNREACH),
        E(ENETRESET),
        E(ECONNABORTED),
        E(ECONNRESET),
        E(ENOBUFS),
        E(EISCONN),
        E(ENOTCONN),
        E(ESHUTDOWN),
        E(ETOOMANYREFS),
        E(ETIMEDOUT),
        E(ECONNREFUSED),
        E(EHOSTDOWN),
        E(EHOSTUNREACH),
        E(EALREADY),
        E(EINPROGRESS),
        E(ESTALE),
        E(EDQUOT),
        E(ENOMEDIUM),
        E(EMEDIUMTYPE),
        E(ECANCELED),
        E(ENOKEY),
        E(EKEYEXPIRED),
        E(EKEYREVOKED),
        E(EKEYREJECTED),
        E(EOWNERDEAD),
        E(ENOTRECOVERABLE),
        E(ERFKILL),
        E(EHWPOISON),
        E(EXFULL),
        /* Aliases. */
        E(EWOULDBLOCK),
        E(ENOTSUP),
        E(EDEADLOCK),
};

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef AF_MCTP
#define AF_MCTP 45
#endif

#define C(x)                                                                                                           \
        { #x, (uint64_t) (x) }
static const struct {
        const char *name;
        uint64_t value;
} constant_table[] = {
        /* clone(2), unshare(2) */
        C(CLONE_VM),
        C(CLONE_FS),
        C(CLONE_FILES),
        C(CLONE_SIGHAND),
        C(CLONE_PIDFD),
        C(CLONE_PTRACE),
        C(CLONE_VFORK),
        C(CLONE_PARENT),
        C(CLONE_THREAD),
        C(CLONE_NEWNS),
        C(CLONE_SYSVSEM),
        C(CLONE_SETTLS),
        C(CLONE_PARENT_SETTID),
        C(CLONE_CHILD_CLEARTID),
        C(CLONE_UNTRACED),
        C(CLONE_CHILD_SETTID),
        C(CLONE_NEWCGROUP),
        C(CLONE_NEWUTS),
        C(CLONE_NEWIPC),
        C(CLONE_NEWUSER),
        C(CLONE_NEWPID),
        C(CLONE_NEWNET),
        C(CLONE_IO),
        C(CLONE_NEWTIME),
        /* socket(2) families */
        C(AF_UNSPEC),
        C(AF_UNIX),
        C(AF_LOCAL),
        C(AF_INET),
        C(AF_AX25),
        C(AF_IPX),
        C(AF_APPLETALK),
        C(AF_NETROM),
        C(AF_BRIDGE),
        C(AF_ATMPVC),
        C(AF_X25),
        C(AF_INET6),
        C(AF_ROSE),
        C(AF_DECnet),
        C(AF_NETBEUI),
        C(AF_SECURITY),
        C(AF_KEY),
        C(AF_NETLINK),
        C(AF_PACKET),
        C(AF_ASH),
        C(AF_ECONET),
        C(AF_ATMSVC),
        C(AF_RDS),
        C(AF_SNA),
        C(AF_IRDA),
        C(AF_PPPOX),
        C(AF_WANPIPE),
        C(AF_LLC),
        C(AF_IB),
        C(AF_MPLS),
        C(AF_CAN),
        C(AF_TIPC),
        C(AF_BLUETOOTH),
        C(AF_IUCV),
        C(AF_RXRPC),
        C(AF_ISDN),
        C(AF_PHONET),
        C(AF_IEEE802154),
        C(AF_CAIF),
        C(AF_ALG),
        C(AF_NFC),
        C(AF_VSOCK),
        C(AF_KCM),
        C(AF_QIPCRTR),
        C(AF_SMC),
        C(AF_XDP),
        C(AF_MCTP),
        /* socket(2) types */
        C(SOCK_STREAM),
        C(SOCK_DGRAM),
        C(SOCK_RAW),
        C(SOCK_RDM),
        C(SOCK_SEQPACKET),
        C(SOCK_PACKET),
        C(SOCK_NONBLOCK),
        C(SOCK_CLOEXEC),
        /* netlink protocols (socket(2) arg2 with AF_NETLINK) */
        C(NETLINK_ROUTE),
        C(NETLINK_UNUSED),
        C(NETLINK_USERSOCK),
        C(NETLINK_FIREWALL),
        C(NETLINK_SOCK_DIAG),
        C(NETLINK_NFLOG),
        C(NETLINK_XFRM),
        C(NETLINK_SELINUX),
        C(NETLINK_ISCSI),
        C(NETLINK_AUDIT),
        C(NETLINK_FIB_LOOKUP),
        C(NETLINK_CONNECTOR),
        C(NETLINK_NETFILTER),
        C(NETLINK_IP6_FW),
        C(NETLINK_DNRTMSG),
        C(NETLINK_KOBJECT_UEVENT),
        C(NETLINK_GENERIC),
        C(NETLINK_SCSITRANSPORT),
        C(NETLINK_ECRYPTFS),
        C(NETLINK_RDMA),
        C(NETLINK_CRYPTO),
        C(NETLINK_SMC),
        /* ioctl(2) requests on terminals */
        C(TIOCSTI),
        C(TIOCLINUX),
        C(TIOCSCTTY),
        C(TIOCCONS),
        C(TIOCSETD),
        C(TIOCGETD),
        /* personality(2) */
        C(PER_LINUX),
        C(PER_LINUX_32BIT),
        C(PER_LINUX32),
        C(PER_LINUX32_3GB),
        C(PER_BSD),
        C(PER_SVR4),
        C(PER_MASK),
        C(UNAME26),
        C(ADDR_NO_RANDOMIZE),
        C(FDPIC_FUNCPTRS),
        C(MMAP_PAGE_ZERO),
        C(ADDR_COMPAT_LAYOUT),
        C(READ_IMPLIES_EXEC),
        C(ADDR_LIMIT_32BIT),
        C(SHORT_INODE),
        C(WHOLE_SECONDS),
        C(STICKY_TIMEOUTS),
        C(ADDR_LIMIT_3GB),
};

/* System calls newer than the libseccomp nsrun may be built against. From
 * Linux 5.1 on, new system calls get one number on every architecture that
 * uses the generic table, x86 included (x32 adds its 0x40000000 bit), so
 * one number serves them all. */
static const struct {
        const char *name;
        int nr;
} extra_syscalls[] = {
        { "statmount", 457 },         { "listmount", 458 },        { "lsm_get_self_attr", 459 },
        { "lsm_set_self_attr", 460 }, { "lsm_list_modules", 461 }, { "mseal", 462 },
        { "setxattrat", 463 },        { "getxattrat", 464 },       { "listxattrat", 465 },
        { "removexattrat", 466 },     { "open_tree_attr", 467 },   { "file_getattr", 468 },
        { "file_setattr", 469 },      { "listns", 470 },
};

#define X32_SYSCALL_BIT 0x40000000

int nsr_policy_errno_from_name(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(errno_table); i++)
                if (streq(errno_table[i].name, name))
                        return errno_table[i].value;
        return -EINVAL;
}

const char *nsr_policy_errno_name(int errnum) {
        for (size_t i = 0; i < ELEMENTSOF(errno_table); i++)
                if (errno_table[i].value == errnum)
                        return errno_table[i].name;
        return NULL;
}

int nsr_policy_constant(const char *name, uint64_t *ret) {
        for (size_t i = 0; i < ELEMENTSOF(constant_table); i++)
                if (streq(constant_table[i].name, name)) {
                        *ret = constant_table[i].value;
                        return 0;
                }
        return -EINVAL;
}

int nsr_policy_extra_syscall(const char *name, uint32_t arch) {
        for (size_t i = 0; i < ELEMENTSOF(extra_syscalls); i++) {
                if (!streq(extra_syscalls[i].name, name))
                        continue;
                switch (arch) {
                case SCMP_ARCH_X86_64:
                case SCMP_ARCH_X86:
                case SCMP_ARCH_AARCH64:
                case SCMP_ARCH_ARM:
                case SCMP_ARCH_RISCV64:
                        return extra_syscalls[i].nr;
                case SCMP_ARCH_X32:
                        return extra_syscalls[i].nr | X32_SYSCALL_BIT;
                default:
                        return -ENOENT;
                }
        }
        return -ENOENT;
}

static bool extra_known(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(extra_syscalls); i++)
                if (streq(extra_syscalls[i].name, name))
                        return true;
        return false;
}

bool nsr_policy_syscall_known(const char *name) {
        return libseccomp_knows(name) || extra_known(name);
}

bool nsr_policy_name_valid(const char *name) {
        if (!name || !*name || *name == '.' || strlen(name) > 128)
                return false;
        for (const char *c = name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                      *c == '-' || *c == '.'))
                        return false;
        return true;
}
