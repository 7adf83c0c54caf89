/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/sockmsg.h"
#include "base/utf8.h"
#include "seccomp/refused.h"

/* ---- a classic BPF interpreter, for seccomp programs -------------------- */

/* A = A op src; false for an operation seccomp does not allow. */
static bool bpf_alu(uint32_t op, uint32_t src, uint32_t *A) {
        switch (op) {
        case BPF_ADD:
                *A += src;
                return true;
        case BPF_SUB:
                *A -= src;
                return true;
        case BPF_MUL:
                *A *= src;
                return true;
        case BPF_DIV:
                if (!src)
                        return false;
                *A /= src;
                return true;
        case BPF_MOD:
                if (!src)
                        return false;
                *A %= src;
                return true;
        case BPF_AND:
                *A &= src;
                return true;
        case BPF_OR:
                *A |= src;
                return true;
        case BPF_XOR:
                *A ^= src;
                return true;
        case BPF_LSH:
                *A = src >= 32 ? 0 : *A << src;
                return true;
        case BPF_RSH:
                *A = src >= 32 ? 0 : *A >> src;
                return true;
        case BPF_NEG:
                *A = -*A;
                return true;
        default:
                return false;
        }
}

/* The condition of a conditional jump; false for an unknown one. */
static bool bpf_cond(uint32_t op, uint32_t A, uint32_t src, bool *ret) {
        switch (op) {
        case BPF_JEQ:
                *ret = A == src;
                return true;
        case BPF_JGT:
                *ret = A > src;
                return true;
        case BPF_JGE:
                *ret = A >= src;
                return true;
        case BPF_JSET:
                *ret = (A & src) != 0;
                return true;
        default:
                return false;
        }
}

uint32_t nsr_bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d) {
        uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
        const unsigned char *data = (const unsigned char *) d;
        /* Each step moves forward (jumps are unsigned offsets), so the
         * loop ends within n steps. */
        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *in = &f[pc];
                uint32_t k = in->k;
                uint32_t src = BPF_SRC(in->code) == BPF_X ? X : k;
                switch (BPF_CLASS(in->code)) {
                case BPF_LD:
                        switch (BPF_MODE(in->code)) {
                        case BPF_ABS:
                                if (BPF_SIZE(in->code) != BPF_W || k % 4 || k > sizeof(*d) - 4)
                                        return SECCOMP_RET_KILL_PROCESS;
                                memcpy(&A, data + k, 4);
                                break;
                        case BPF_LEN:
                                A = sizeof(*d);
                                break;
                        case BPF_IMM:
                                A = k;
                                break;
                        case BPF_MEM:
                                if (k >= BPF_MEMWORDS)
                                        return SECCOMP_RET_KILL_PROCESS;
                                A = M[k];
                                break;
                        default:
                                return SECCOMP_RET_KILL_PROCESS;
                        }
                        break;
                case BPF_LDX:
                        switch (BPF_MODE(in->code)) {
                        case BPF_LEN:
                                X = sizeof(*d);
                                break;
                        case BPF_IMM:
                                X = k;
                                break;
                        case BPF_MEM:
                                if (k >= BPF_MEMWORDS)
                                        return SECCOMP_RET_KILL_PROCESS;
                                X = M[k];
                                break;
                        default:
                                return SECCOMP_RET_KILL_PROCESS;
                        }
                        break;
                case BPF_ST:
                case BPF_STX:
                        if (k >= BPF_MEMWORDS)
                                return SECCOMP_RET_KILL_PROCESS;
                        M[k] = BPF_CLASS(in->code) == BPF_ST ? A : X;
                        break;
                case BPF_ALU:
                        if (!bpf_alu(BPF_OP(in->code), src, &A))
                                return SECCOMP_RET_KILL_PROCESS;
                        break;
                case BPF_JMP: {
                        if (BPF_OP(in->code) == BPF_JA) {
                                pc += k;
                                break;
                        }
                        bool t;
                        if (!bpf_cond(BPF_OP(in->code), A, src, &t))
                                return SECCOMP_RET_KILL_PROCESS;
                        pc += t ? in->jt : in->jf;
                        break;
                }
                case BPF_RET:
                        return BPF_RVAL(in->code) == BPF_A ? A : k;
                case BPF_MISC:
                        if (BPF_MISCOP(in->code) == BPF_TAX)
                                X = A;
                        else
                                A = X;
                        break;
                default:
                        return SECCOMP_RET_KILL_PROCESS;
                }
        }
        return SECCOMP_RET_KILL_PROCESS;
}

/* ---- the listener form of a program ------------------------------------- */

#if defined(__x86_64__) && !defined(__ILP32__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_I386
#endif

int nsr_refused_notify_prog(const char *data, size_t len, char **ret, size_t *ret_len) {
        if (len % sizeof(struct sock_filter) || len == 0)
                return -EINVAL;
        size_t n = len / sizeof(struct sock_filter);
        const struct sock_filter *orig = (const struct sock_filter *) data;
        struct sock_filter prefix[5];
        size_t np = 0;
#if defined(NATIVE_AUDIT_ARCH) && defined(SYS_clone3)
        /* glibc probes clone3 and falls back to clone on ENOSYS: answer
         * the probe in the filter, as the original does, so that every
         * thread and posix_spawn does not pay a round trip. */
        struct seccomp_data probe = { .nr = SYS_clone3, .arch = NATIVE_AUDIT_ARCH };
        uint32_t act = nsr_bpf_run(orig, n, &probe);
        if ((act & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO) {
                prefix[np++] =
                        (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
                prefix[np++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 0, 3);
                prefix[np++] =
                        (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
                prefix[np++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
                prefix[np++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, act);
        }
#endif
        if (n + np > BPF_MAXINSNS)
                return -E2BIG;
        struct sock_filter *out = nsr_malloc0((n + np + 1) * sizeof(*out));
        memcpy(out, prefix, np * sizeof(*out));
        /* Jumps are relative and forward: the prefix moves none of them. */
        for (size_t i = 0; i < n; i++) {
                struct sock_filter in = orig[i];
                if (BPF_CLASS(in.code) == BPF_RET) {
                        if (BPF_RVAL(in.code) != BPF_K) {
                                free(out);
                                return -EOPNOTSUPP;
                        }
                        if ((in.k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
                                in.k = SECCOMP_RET_USER_NOTIF;
                }
                out[np + i] = in;
        }
        *ret = (char *) out;
        *ret_len = (n + np) * sizeof(*out);
        return 0;
}

/* ---- the record ------------------------------------------------------------ */

void nsr_refused_init(nsr_refused *rf, const char *prog, size_t len, int events_fd) {
        *rf = (nsr_refused){ .events_fd = events_fd };
        rf->prog = nsr_malloc0(len + 1);
        memcpy(rf->prog, prog, len);
        rf->prog_len = len;
}

void nsr_refused_done(nsr_refused *rf) {
        free(rf->prog);
        rf->prog = NULL;
}

static void syscall_name(uint32_t arch, int nr, char *buf, size_t len) {
        char *s = seccomp_syscall_resolve_num_arch(arch, nr);
        if (s && s[0])
                snprintf(buf, len, "%s", s);
        else
                snprintf(buf, len, "syscall %d", nr);
        free(s);
}

/* s is already printable (nsr_utf8_escape): only quotes, backslashes and
 * anything below 0x20 need JSON escapes. */
static void json_escape(const char *s, char *buf, size_t len) {
        size_t o = 0;
        for (; *s && o + 7 < len; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = (char) c;
                } else if (c < 0x20)
                        o += (size_t) snprintf(buf + o, len - o, "\\u%04x", c);
                else
                        buf[o++] = (char) c;
        }
        buf[o] = '\0';
}

static void emit_event(const nsr_refused *rf, const nsr_refused_entry *e) {
        if (rf->events_fd < 0 || !rf->events)
                return;
        /* name is a libseccomp name or "syscall N"; comm is the escaped
         * name of a hostile process. */
        char comm[sizeof(e->comm) * 2 + 8], name[sizeof(e->name) * 2 + 8];
        json_escape(e->comm, comm, sizeof(comm));
        json_escape(e->name, name, sizeof(name));
        char line[512];
        int n = snprintf(line, sizeof(line),
                         "{\"event\":\"refused\",\"syscall\":\"%s\",\"errno\":%d,\"comm\":\"%s\"}\n", name, e->errnum,
                         comm);
        if (n > 0 && (size_t) n < sizeof(line))
                nsr_outq_put(rf->events, line, (size_t) n);
}

void nsr_refused_count(nsr_refused *rf, uint32_t arch, int nr, int errnum, const char *comm) {
        for (size_t i = 0; i < rf->n_entries; i++) {
                nsr_refused_entry *e = &rf->entries[i];
                if (e->arch == arch && e->nr == nr && e->errnum == errnum) {
                        e->count++;
                        return;
                }
        }
        if (rf->n_entries >= NSR_REFUSED_MAX_ENTRIES) {
                rf->dropped++;
                return;
        }
        nsr_refused_entry *e = &rf->entries[rf->n_entries++];
        *e = (nsr_refused_entry){ .arch = arch, .nr = nr, .errnum = errnum, .count = 1 };
        syscall_name(arch, nr, e->name, sizeof(e->name));
        _cleanup_free_ char *esc = nsr_utf8_escape(comm ? comm : "?");
        snprintf(e->comm, sizeof(e->comm), "%s", esc);
        emit_event(rf, e);
}

/* The command's name, read while the call is pending; the id check after
 * makes sure the pid was still that task. Hostile: escaped on output. */
static void read_comm(pid_t pid, char *buf, size_t len) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        int n = fd < 0 ? -1 : nsr_read_full(fd, buf, len - 1);
        if (n <= 0) {
                snprintf(buf, len, "?");
                return;
        }
        buf[n] = '\0';
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
}

/* The caller's session id in its innermost pid namespace (the last field
 * of NSsid), or 0. */
static pid_t read_inner_sid(pid_t pid) {
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        int n = fd < 0 ? -1 : nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        const char *line = strstr(buf, "\nNSsid:");
        if (!line)
                return 0;
        line += strlen("\nNSsid:");
        const char *end = strchr(line, '\n');
        if (!end)
                return 0;
        const char *last = end;
        while (last > line && last[-1] != '\t' && last[-1] != ' ')
                last--;
        long v = 0;
        for (const char *c = last; c < end; c++) {
                if (*c < '0' || *c > '9' || v > (long) INT32_MAX / 10)
                        return 0;
                v = v * 10 + (*c - '0');
        }
        return (pid_t) v;
}

int nsr_refused_answer(nsr_refused *rf, int listener, const struct seccomp_notif *req) {
        uint32_t act = nsr_bpf_run((const struct sock_filter *) rf->prog, rf->prog_len / sizeof(struct sock_filter),
                                   &req->data);
        /* Only ERRNO returns were turned into notifications; anything
         * else would be a bug: refuse it all the same. */
        int errnum = (act & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO ? (int) (act & SECCOMP_RET_DATA) : EPERM;
        char comm[32];
        read_comm((pid_t) req->pid, comm, sizeof(comm));
        pid_t sid = rf->on_call ? read_inner_sid((pid_t) req->pid) : 0;
        /* The task may have gone and its pid been reused meanwhile: what
         * was read of it is then not the caller's. */
        if (seccomp_notify_id_valid(listener, req->id) < 0) {
                snprintf(comm, sizeof(comm), "?");
                sid = 0;
        }
        struct seccomp_notif_resp resp = { .id = req->id, .error = -errnum };
        int r = seccomp_notify_respond(listener, &resp);
        /* ENOENT: the task was killed meanwhile; the call still counts. */
        nsr_refused_count(rf, req->data.arch, req->data.nr, errnum, comm);
        if (rf->on_call)
                rf->on_call(rf->on_call_data, sid, req->data.arch, req->data.nr, errnum, comm);
        return r < 0 && r != -ENOENT ? r : 0;
}

bool nsr_refused_is_refusal(const nsr_refused *rf, const struct seccomp_data *d) {
        if (!rf || !rf->prog)
                return false;
        uint32_t act = nsr_bpf_run((const struct sock_filter *) rf->prog, rf->prog_len / sizeof(struct sock_filter), d);
        return (act & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO;
}

int nsr_refused_handle(nsr_refused *rf, int listener) {
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req));
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
                return errno == EINTR || errno == ENOENT ? 0 : -errno;
        return nsr_refused_answer(rf, listener, &req);
}

static int cmp_count(const void *a, const void *b) {
        const nsr_refused_entry *x = *(nsr_refused_entry *const *) a, *y = *(nsr_refused_entry *const *) b;
        return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->name, y->name);
}

char *nsr_refused_summary(const nsr_refused *rf) {
        if (rf->n_entries == 0)
                return NULL;
        const nsr_refused_entry *v[NSR_REFUSED_MAX_ENTRIES];
        for (size_t i = 0; i < rf->n_entries; i++)
                v[i] = &rf->entries[i];
        qsort(v, rf->n_entries, sizeof(v[0]), cmp_count);
        char *s = NULL;
        for (size_t i = 0; i < rf->n_entries; i++)
                nsr_strappendf(&s, "%s%s x%" PRIu64, i ? ", " : "", v[i]->name, v[i]->count);
        if (rf->dropped)
                nsr_strappendf(&s, ", %" PRIu64 " more", rf->dropped);
        return s;
}

/* ---- installing and passing the listener ------------------------------------ */

int nsr_refused_install(const char *notify_prog, size_t len) {
        struct sock_fprog prog = {
                .len = (unsigned short) (len / sizeof(struct sock_filter)),
                .filter = (struct sock_filter *) notify_prog,
        };
        int fd = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        return fd < 0 ? -errno : fd;
}

int nsr_refused_send_fd(int sock, int fd) {
        char tag = 'l';
        struct iovec iov = { .iov_base = &tag, .iov_len = 1 };
        return nsr_sockmsg_send(sock, &iov, 1, &fd, 1);
}

int nsr_refused_recv_fd(int sock) {
        char tag;
        struct iovec iov = { .iov_base = &tag, .iov_len = 1 };
        int fd;
        ssize_t n = nsr_sockmsg_recv(sock, &iov, 1, MSG_DONTWAIT, &fd, 1, NULL);
        if (n < 0)
                return (int) n;
        return n == 0 || fd < 0 ? -ENODATA : fd;
}
