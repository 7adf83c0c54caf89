/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy files → libseccomp → one BPF program, with a cache.
 *
 * Each arch gets its own libseccomp context, and the contexts are merged at
 * the end. One context for all arches would be simpler, but a rule must
 * sometimes differ per arch: on 32-bit arches an argument has no upper
 * half (libseccomp would silently truncate a 64-bit constant), and on i386
 * the socket calls can arrive through socketcall(2), whose arguments the
 * filter cannot see. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "base/dirent.h"
#include "base/durable.h"
#include "seccomp/compile.h"

/* ---- finding policies ------------------------------------------------------ */

char *nsr_seccomp_dir(void) {
        return nsr_path_join(nsr_datadir(), "seccomp");
}

static char *policy_file_name(const char *name) {
        return nsr_endswith(name, ".policy") ? nsr_strdup(name) : nsr_asprintf("%s.policy", name);
}

int nsr_seccomp_policy_path(const char *name_or_path, char **ret, nsr_error *err) {
        if (strchr(name_or_path, '/')) {
                *ret = nsr_strdup(name_or_path);
                return 0;
        }
        if (!nsr_policy_name_valid(name_or_path))
                return nsr_error_setx(err, EINVAL,
                                      "invalid seccomp policy name '%s' (use a shipped name, or a path with a '/')",
                                      name_or_path);
        _cleanup_free_ char *dir = nsr_seccomp_dir();
        _cleanup_free_ char *file = policy_file_name(name_or_path);
        *ret = nsr_path_join(dir, file);
        return 0;
}

/* Every file a load tried, in order, for the cache index: the ones it read
 * (with their identity) and the include candidates it found missing. A
 * load whose outcome cannot be told from that (a candidate it could not
 * open for another reason, a file that is not a regular one) is marked so
 * and never indexed. */
typedef struct policy_file {
        char *path;
        bool present;
        struct stat st; /* present only */
} policy_file;

typedef struct policy_files {
        policy_file *v;
        size_t n;
        bool unindexable;
} policy_files;

static void policy_files_done(policy_files *pf) {
        for (size_t i = 0; i < pf->n; i++)
                free(pf->v[i].path);
        free(pf->v);
        *pf = (policy_files){ 0 };
}

static void record_file(policy_files *pf, const char *path, const struct stat *st, int open_errno) {
        if (!pf || pf->unindexable)
                return;
        if (st ? !S_ISREG(st->st_mode) : open_errno != ENOENT) {
                pf->unindexable = true;
                return;
        }
        pf->v = nsr_realloc_array(pf->v, pf->n + 1, sizeof(*pf->v));
        pf->v[pf->n++] =
                (policy_file){ .path = nsr_strdup(path), .present = st != NULL, .st = st ? *st : (struct stat){ 0 } };
}

/* fopen, but a directory is an error of its own rather than a read error
 * on line 1. The identity recorded is the opened file's own (fstat), taken
 * before a byte of it is read. */
static FILE *open_policy_file(const char *path, policy_files *rec) {
        FILE *f = fopen(path, "re");
        int e = errno;
        struct stat st;
        bool have_st = f && fstat(fileno(f), &st) == 0;
        if (have_st && S_ISDIR(st.st_mode)) {
                fclose(f);
                f = NULL;
                e = EISDIR;
        }
        if (f && !have_st) {
                if (rec)
                        rec->unindexable = true;
        } else
                record_file(rec, path, f ? &st : NULL, e);
        errno = e;
        return f;
}

static char *dir_of(const char *path) {
        const char *slash = strrchr(path, '/');
        if (!slash)
                return nsr_strdup(".");
        if (slash == path)
                return nsr_strdup("/");
        return nsr_strndup(path, (size_t) (slash - path));
}

/* "include NAME": NAME.policy next to the including file, else the shipped
 * one, so that a policy of one's own can say "include default". */
static int loader_open(void *userdata, const char *from, const char *name, FILE **ret_f, char **ret_path,
                       nsr_error *err) {
        policy_files *rec = userdata;
        _cleanup_free_ char *file = policy_file_name(name);
        _cleanup_free_ char *here = dir_of(from);
        _cleanup_free_ char *shipped = nsr_seccomp_dir();
        const char *dirs[] = { here, shipped };
        int first_errno = 0;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *joined = nsr_path_join(dirs[i], file);
                char *path = nsr_path_normalize(joined);
                FILE *f = open_policy_file(path, rec);
                if (f) {
                        *ret_f = f;
                        *ret_path = path;
                        return 0;
                }
                if (first_errno == 0 || first_errno == ENOENT)
                        first_errno = errno;
                free(path);
        }
        return nsr_error_set(err, first_errno, "cannot include '%s': no readable %s in %s or %s", name, file, here,
                             shipped);
}

static int policy_load(const char *name_or_path, nsr_policy **ret, policy_files *rec, nsr_error *err) {
        _cleanup_free_ char *path = NULL;
        int r = nsr_seccomp_policy_path(name_or_path, &path, err);
        if (r < 0)
                return r;
        _cleanup_fclose_ FILE *f = open_policy_file(path, rec);
        if (!f) {
                if (errno == ENOENT && !strchr(name_or_path, '/'))
                        return nsr_error_setx(err, ENOENT, "no seccomp policy called '%s' (looked for %s)",
                                              name_or_path, path);
                return nsr_error_set(err, errno, "cannot open seccomp policy %s", path);
        }
        const nsr_policy_loader loader = { .open = loader_open, .userdata = rec };
        return nsr_policy_parse(f, path, &loader, ret, err);
}

int nsr_seccomp_policy_load(const char *name_or_path, nsr_policy **ret, nsr_error *err) {
        return policy_load(name_or_path, ret, NULL, err);
}

/* ---- arches ----------------------------------------------------------------- */

size_t nsr_seccomp_arches(uint32_t *ret, size_t max) {
        size_t n = 0;
        uint32_t native = seccomp_arch_native();
        if (n < max)
                ret[n++] = native;
        /* A 64-bit process can still enter the kernel through the compat
         * entry points (int 0x80, or an x32 syscall number), and those run
         * with the compat arch in seccomp_data: a filter that only knows
         * the native arch would be bypassed, so it must cover them. */
        if (native == SCMP_ARCH_X86_64) {
                if (n < max)
                        ret[n++] = SCMP_ARCH_X86;
                if (n < max)
                        ret[n++] = SCMP_ARCH_X32;
        } else if (native == SCMP_ARCH_AARCH64) {
                if (n < max)
                        ret[n++] = SCMP_ARCH_ARM;
        }
        return n;
}

static const char *arch_name(uint32_t arch) {
        switch (arch) {
        case SCMP_ARCH_X86_64:
                return "x86_64";
        case SCMP_ARCH_X86:
                return "i386";
        case SCMP_ARCH_X32:
                return "x32";
        case SCMP_ARCH_AARCH64:
                return "aarch64";
        case SCMP_ARCH_ARM:
                return "arm";
        default:
                return "native";
        }
}

/* Arches whose system call arguments are 32 bits wide, as libseccomp sees
 * them (it treats x32 as one of these). */
static bool arch_is_32bit(uint32_t arch) {
        switch (arch) {
        case SCMP_ARCH_X86:
        case SCMP_ARCH_X32:
        case SCMP_ARCH_ARM:
        case SCMP_ARCH_MIPS:
        case SCMP_ARCH_MIPSEL:
        case SCMP_ARCH_MIPS64N32:
        case SCMP_ARCH_MIPSEL64N32:
        case SCMP_ARCH_PPC:
        case SCMP_ARCH_S390:
        case SCMP_ARCH_PARISC:
                return true;
        default:
                return false;
        }
}

/* The arch value the kernel puts in seccomp_data for an arch's tasks. x32
 * tasks report AUDIT_ARCH_X86_64 and are told apart by their syscall
 * numbers. */
static uint32_t arch_audit_token(uint32_t arch) {
        return arch == SCMP_ARCH_X32 ? SCMP_ARCH_X86_64 : arch;
}

/* ---- compiling ----------------------------------------------------------- */

static uint32_t scmp_action(const nsr_policy_action *a) {
        switch (a->verdict) {
        case NSR_POLICY_ALLOW:
                return SCMP_ACT_ALLOW;
        case NSR_POLICY_LOG:
                return SCMP_ACT_LOG;
        case NSR_POLICY_ERRNO:
                return SCMP_ACT_ERRNO((uint32_t) a->errnum);
        case NSR_POLICY_KILL:
        case _NSR_POLICY_VERDICT_MAX:
        case _NSR_POLICY_VERDICT_INVALID:
                break;
        }
        return SCMP_ACT_KILL_PROCESS;
}

static enum scmp_compare scmp_op(nsr_policy_op op) {
        switch (op) {
        case NSR_POLICY_OP_EQ:
                return SCMP_CMP_EQ;
        case NSR_POLICY_OP_NE:
                return SCMP_CMP_NE;
        case NSR_POLICY_OP_LT:
                return SCMP_CMP_LT;
        case NSR_POLICY_OP_LE:
                return SCMP_CMP_LE;
        case NSR_POLICY_OP_GT:
                return SCMP_CMP_GT;
        case NSR_POLICY_OP_GE:
                return SCMP_CMP_GE;
        case NSR_POLICY_OP_MASKED_EQ:
        case _NSR_POLICY_OP_MAX:
        case _NSR_POLICY_OP_INVALID:
                break;
        }
        return SCMP_CMP_MASKED_EQ;
}

/* On a 32-bit arch an argument is a 32-bit value (the kernel zero-extends
 * it into seccomp_data). Rewrites the comparisons to say exactly that, and
 * returns false when the rule can never match there. Without this,
 * libseccomp would truncate the constants: "arg0 == 0x100000001" would
 * become "arg0 == 1". */
static bool normalize_32bit(nsr_policy_rule *r) {
        const uint64_t lo = UINT32_MAX;
        unsigned o = 0;
        for (unsigned i = 0; i < r->n_cmp; i++) {
                nsr_policy_cmp c = r->cmp[i];
                bool keep = true;
                switch (c.op) {
                case NSR_POLICY_OP_EQ:
                        if (c.value > lo)
                                return false;
                        break;
                case NSR_POLICY_OP_MASKED_EQ:
                        if (c.value > lo)
                                return false;
                        c.mask &= lo;
                        keep = c.mask != 0;
                        break;
                case NSR_POLICY_OP_NE:
                        keep = c.value <= lo;
                        break;
                case NSR_POLICY_OP_LT:
                        keep = c.value <= lo;
                        break;
                case NSR_POLICY_OP_LE:
                        keep = c.value < lo;
                        break;
                case NSR_POLICY_OP_GT:
                        if (c.value >= lo)
                                return false;
                        break;
                case NSR_POLICY_OP_GE:
                        if (c.value > lo)
                                return false;
                        break;
                case _NSR_POLICY_OP_MAX:
                case _NSR_POLICY_OP_INVALID:
                        break;
                }
                if (keep)
                        r->cmp[o++] = c;
        }
        r->n_cmp = o;
        return true;
}

/* A rule on a system call libseccomp does not know, handled by a few BPF
 * instructions of our own in front of libseccomp's program. */
typedef struct extra_rule {
        uint32_t token; /* seccomp_data.arch */
        uint32_t nr;
        uint32_t ret; /* SECCOMP_RET_* (libseccomp's SCMP_ACT_* are the same values) */
        /* Or NULL: the call's action is ret when the argument is outside
         * this set (a "not in" line, see nsr_policy_set). */
        const nsr_policy_set *set;
} extra_rule;

typedef struct compiler {
        const nsr_policy *policy;
        uint32_t arch;
        extra_rule *extra; /* the instructions of our own, in front of libseccomp's (build_prefix) */
        size_t n_extra;
        nsr_error *err;
} compiler;

static int add_one(compiler *c, scmp_filter_ctx ctx, int nr, const nsr_policy_action *a, const nsr_policy_rule *r) {
        struct scmp_arg_cmp cmp[NSR_POLICY_ARGS];
        for (unsigned i = 0; i < r->n_cmp; i++) {
                const nsr_policy_cmp *pc = &r->cmp[i];
                cmp[i] = (struct scmp_arg_cmp){
                        .arg = pc->arg,
                        .op = scmp_op(pc->op),
                        .datum_a = pc->op == NSR_POLICY_OP_MASKED_EQ ? pc->mask : pc->value,
                        .datum_b = pc->op == NSR_POLICY_OP_MASKED_EQ ? pc->value : 0,
                };
        }
        int k = seccomp_rule_add_array(ctx, scmp_action(a), nr, r->n_cmp, cmp);
        if (k < 0)
                return nsr_error_setx(c->err, -k, "%s:%u: libseccomp rejected the rule for %s on %s: %s",
                                      c->policy->files[r->file], r->line, r->syscall, arch_name(c->arch), strerror(-k));
        return 0;
}

static unsigned verdict_rank(const nsr_policy_action *a) {
        return (unsigned) a->verdict;
}

static int push_extra(compiler *c, int nr, const nsr_policy_action *a, const nsr_policy_set *set) {
        /* The table has a few names and there are at most three arches;
         * this only bounds the prefix. */
        if (c->n_extra >= 256)
                return nsr_error_setx(c->err, E2BIG, "too many rules for nsrun's own filter instructions");
        c->extra = nsr_realloc_array(c->extra, c->n_extra + 1, sizeof(*c->extra));
        c->extra[c->n_extra++] = (extra_rule){
                .token = arch_audit_token(c->arch),
                .nr = (uint32_t) nr,
                .ret = scmp_action(a),
                .set = set,
        };
        return 0;
}

/* A group's rules on a call that is no multiplexer: to libseccomp, except
 * those of a "not in" set, which go to the prefix once per set. Each set's
 * complement costs libseccomp up to 32 rules per value (default.policy's
 * two sets were 414 of its 709 instructions, and the kernel's load time
 * grows with the program), where the prefix tests the set in about as many
 * instructions as it has values. The parser made sure no rule with another
 * action overlaps them, so the order of the two programs does not matter. */
static int add_group(compiler *c, scmp_filter_ctx ctx, int nr, int nr_arch, const nsr_policy_rule *group, size_t g) {
        int r = 0;
        for (size_t j = 0; j < g && r >= 0; j++) {
                unsigned s = group[j].set;
                size_t in_set = 0;
                for (size_t k = 0; s && k < g; k++)
                        in_set += group[k].set == s;
                /* A set whose complement is a rule or two (a flag: "arg0 &
                 * CLONE_NEWUSER") costs libseccomp no more. */
                if (nr_arch < 0 || s == 0 || s > c->policy->n_sets || in_set <= c->policy->sets[s - 1].n_values + 1) {
                        r = add_one(c, ctx, nr, &group[j].action, &group[j]);
                        continue;
                }
                bool first = true;
                for (size_t k = 0; k < j && first; k++)
                        first = group[k].set != s;
                if (first)
                        r = push_extra(c, nr_arch, &group[j].action, &c->policy->sets[s - 1]);
        }
        return r;
}

/* i386's direct socket calls (Linux 4.3), which libseccomp names by their
 * socketcall pseudo numbers only (-101 for socket, ...): what the prefix
 * needs to test them itself. */
static int i386_direct_nr(int pseudo) {
        static const int direct[] = { 359, 361, 362, 363, -1,  367, 368, 360, 369, -1,
                                      371, -1,  373, 366, 365, 370, 372, -1,  -1,  -1 };
        int call = -pseudo - 100; /* SYS_SOCKET (1) .. SYS_SENDMMSG (20) */
        return call >= 1 && call <= (int) ELEMENTSOF(direct) ? direct[call - 1] : -1;
}

/* i386 socket and SysV IPC calls exist twice: as direct system calls, and
 * multiplexed through socketcall(2) and ipc(2), which pass the real
 * arguments in memory the filter cannot read. libseccomp turns a rule on
 * socket() into a rule on both, but for the socketcall copy it keeps
 * comparisons on argument positions that mean something else there. So:
 *   - the multiplexed call gets one action for all its uses of this call:
 *     the most restrictive of the rules' actions and the default;
 *   - when every rule has that action, the direct call keeps its precise
 *     rules (the broad multiplexed rule, added first, absorbs libseccomp's
 *     copies); otherwise the direct call gets the same blanket action. */
static int add_multiplexed(compiler *c, scmp_filter_ctx ctx, int nr, int nr_arch, const nsr_policy_rule *rules,
                           size_t n) {
        const nsr_policy_action *def = &c->policy->default_action;
        const nsr_policy_action *strict = def;
        for (size_t i = 0; i < n; i++)
                if (verdict_rank(&rules[i].action) > verdict_rank(strict))
                        strict = &rules[i].action;
        if (nsr_policy_action_equal(strict, def))
                return 0; /* the default already covers it */
        bool all_same = true;
        for (size_t i = 0; i < n; i++)
                all_same = all_same && nsr_policy_action_equal(&rules[i].action, strict);

        nsr_policy_rule blanket = rules[0];
        blanket.n_cmp = 0;
        if (!all_same)
                return add_one(c, ctx, nr, strict, &blanket);
        bool is_socket = nr_arch <= -100 && nr_arch >= -120;

        /* libseccomp numbers its pseudo syscalls so that the call number
         * (SYS_SOCKET etc. from linux/net.h, SEMOP etc. from linux/ipc.h) is
         * the pseudo number's last digits: socket is -101, SYS_SOCKET 1. */
        uint64_t call = (uint64_t) (is_socket ? (-nr_arch) % 100 : (-nr_arch) % 200);
        int mux = seccomp_syscall_resolve_name(is_socket ? "socketcall" : "ipc");
        blanket.n_cmp = 1;
        blanket.cmp[0] = (nsr_policy_cmp){ .arg = 0, .op = NSR_POLICY_OP_EQ, .value = call };
        int r = add_one(c, ctx, mux, strict, &blanket);
        /* The direct call: its sets in the prefix, when its number is
         * known (i386's socket calls). */
        int direct = c->arch == SCMP_ARCH_X86 && is_socket ? i386_direct_nr(nr_arch) : -1;
        if (r >= 0)
                r = add_group(c, ctx, nr, direct, rules, n);
        return r;
}

static int add_arch_rules(compiler *c, scmp_filter_ctx ctx) {
        const nsr_policy *p = c->policy;
        /* The rules that matter on this arch, rewritten for it. */
        _cleanup_free_ nsr_policy_rule *rules = nsr_malloc0((p->n_rules + 1) * sizeof(*rules));
        size_t n = 0;
        for (size_t i = 0; i < p->n_rules; i++) {
                /* A rule with the default's action changes nothing (the
                 * parser made sure it overlaps no rule with another action),
                 * and libseccomp refuses it. */
                if (nsr_policy_action_equal(&p->rules[i].action, &p->default_action))
                        continue;
                rules[n] = p->rules[i];
                if (arch_is_32bit(c->arch) && !normalize_32bit(&rules[n]))
                        continue;
                n++;
        }
        _cleanup_free_ bool *done = nsr_malloc0(n + 1);
        _cleanup_free_ nsr_policy_rule *group = nsr_malloc0((n + 1) * sizeof(*group));
        for (size_t i = 0; i < n; i++) {
                if (done[i])
                        continue;
                const char *name = rules[i].syscall;
                size_t g = 0;
                const nsr_policy_rule *blanket = NULL;
                for (size_t j = i; j < n; j++)
                        if (!done[j] && streq(rules[j].syscall, name)) {
                                done[j] = true;
                                group[g++] = rules[j];
                        }
                for (size_t j = 0; j < g && !blanket; j++)
                        if (group[j].n_cmp == 0)
                                blanket = &group[j];

                int nr_arch = seccomp_syscall_resolve_name_arch(c->arch, name);
                if (nr_arch == __NR_SCMP_ERROR) {
                        /* Unknown to libseccomp: the parser allowed it only
                         * without conditions, and only from our table. */
                        int extra = nsr_policy_extra_syscall(name, c->arch);
                        if (extra >= 0 && blanket) {
                                int r = push_extra(c, extra, &blanket->action, NULL);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }
                bool muxed = (nr_arch <= -100 && nr_arch >= -120) || (nr_arch <= -200 && nr_arch >= -224);
                if (nr_arch < 0 && !muxed)
                        continue; /* not a system call on this arch */
                /* libseccomp wants the native number (or its pseudo number)
                 * and translates it for the context's arch. */
                int nr = seccomp_syscall_resolve_name(name);
                int r;
                if (blanket)
                        /* The other rules have the same action (the parser
                         * checked), so this one covers them. */
                        r = add_one(c, ctx, nr, &blanket->action, blanket);
                else if (muxed)
                        r = add_multiplexed(c, ctx, nr, nr_arch, group, g);
                else
                        r = add_group(c, ctx, nr, nr_arch, group, g);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void release_ctx(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

static int new_ctx(compiler *c, scmp_filter_ctx *ret) {
        uint32_t native = seccomp_arch_native();
        scmp_filter_ctx ctx = seccomp_init(scmp_action(&c->policy->default_action));
        if (!ctx)
                return nsr_error_setx(c->err, ENOMEM, "seccomp_init failed");
        int k = 0;
        if (c->arch != native) {
                k = seccomp_arch_add(ctx, c->arch);
                if (k >= 0)
                        k = seccomp_arch_remove(ctx, native);
        }
        /* An arch the filter does not know at all is an attempt to get
         * around it: kill, and kill the whole process rather than a thread. */
        if (k >= 0)
                k = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        /* A binary tree over the syscall numbers instead of a linear chain.
         * The kernel runs the filter once per syscall number when it loads
         * it (to find the ones it can allow without running it again), so
         * the chain's length was paid about a thousand times per launch:
         * 0.47 ms for default.policy, more than the whole mount setup. */
        if (k >= 0)
                k = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (k < 0) {
                seccomp_release(ctx);
                return nsr_error_setx(c->err, -k, "libseccomp could not set up a filter for %s: %s", arch_name(c->arch),
                                      strerror(-k));
        }
        *ret = ctx;
        return 0;
}

/* Writes the libseccomp program somewhere readable. memfd first; a pipe if
 * memfd_create is blocked (nsrun inside another sandbox). The pipe is
 * non-blocking so that an oversized program fails instead of hanging. */
int nsr_seccomp_load(const char *data, size_t len) {
        struct sock_fprog prog = { .len = (unsigned short) (len / sizeof(struct sock_filter)),
                                   .filter = (struct sock_filter *) data };
        return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 ? -errno : 0;
}

int nsr_seccomp_export(void *ctx, char **ret, size_t *ret_len, nsr_error *err) {
        _cleanup_close_ int fd = memfd_create("nsrun-seccomp", MFD_CLOEXEC);
        int k;
        if (fd >= 0) {
                k = seccomp_export_bpf(ctx, fd);
                if (k < 0)
                        return nsr_error_setx(err, -k, "libseccomp could not export the filter: %s", strerror(-k));
                if (lseek(fd, 0, SEEK_SET) < 0)
                        return nsr_error_set(err, errno, "lseek on the filter memfd");
                k = nsr_read_all(fd, (NSR_SECCOMP_MAX_INSNS + 1) * sizeof(struct sock_filter) * 16, ret, ret_len);
                if (k < 0)
                        return nsr_error_set(err, -k, "reading the exported filter");
                return 0;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return nsr_error_set(err, errno, "memfd_create and pipe2 both failed");
        _cleanup_close_ int rd = p[0];
        _cleanup_close_ int wr = p[1];
        k = seccomp_export_bpf(ctx, wr);
        if (k < 0)
                return nsr_error_setx(err, -k, "libseccomp could not export the filter: %s", strerror(-k));
        wr = safe_close(wr);
        k = nsr_read_all(rd, (NSR_SECCOMP_MAX_INSNS + 1) * sizeof(struct sock_filter) * 16, ret, ret_len);
        if (k < 0)
                return nsr_error_set(err, -k, "reading the exported filter");
        return 0;
}

/* The instructions in front of libseccomp's program (see extra_rule), a
 * block per arch:
 *
 *         ld  arch
 *         jeq TOKEN, 1, 0
 *         ja  <next arch's block>
 *         ld  nr
 *         jeq NR, 0, 1                    a call libseccomp does not know
 *         ret ACTION
 *         ...
 *         jeq NR, 0, <past the set>       a "not in" set
 *         ld  the precondition's argument (a set that has one:
 *         and PRE_MASK                     "argN & PRE_MASK == PRE_VALUE
 *         jeq PRE_VALUE, 0, <in>           and argM ... not in {...}")
 *         ld  the argument's low word
 *         and MASK                        (unless it is 0xffffffff)
 *         jeq VALUE1, <in>, 0
 *         ...
 *         ret ACTION                      none matched: outside the set
 *   in:   ld  nr                          on to the next rule (another set
 *         ...                             of the same call may match)
 *         ja  <end>
 *   end:  libseccomp's program, which starts over from seccomp_data.arch
 *
 * A call that none of them is about passes one test per rule: the kernel
 * runs the program for every call number as it loads it, to find the ones
 * it can allow without running it again. */
typedef struct emitter {
        struct sock_filter *f;
        size_t n, cap;
} emitter;

static size_t emit(emitter *e, struct sock_filter in) {
        if (e->n == e->cap) {
                e->cap = e->cap ? 2 * e->cap : 64;
                e->f = nsr_realloc_array(e->f, e->cap, sizeof(*e->f));
        }
        e->f[e->n] = in;
        return e->n++;
}

/* Points the "ja" at `at` to the next instruction to be emitted. */
static void land(emitter *e, size_t at) {
        e->f[at].k = (uint32_t) (e->n - (at + 1));
}

/* Where an argument's low 32 bits are: the first word on a little-endian
 * arch. */
static uint32_t arg_low_word(uint32_t token, unsigned arg) {
        return (uint32_t) (offsetof(struct seccomp_data, args) + 8 * arg) + ((token & __AUDIT_ARCH_LE) ? 0 : 4);
}

static void emit_set(emitter *e, uint32_t token, const extra_rule *x) {
        const nsr_policy_set *s = x->set;
        uint32_t lo = arg_low_word(token, s->arg);
        bool mask = s->mask != UINT32_MAX, pre_mask = s->has_pre && s->pre_mask != UINT32_MAX;
        /* The set's test: the load, the mask, a jump per value, the ret. */
        size_t test = 1 + (mask ? 1 : 0) + s->n_values + 1;
        size_t pre = s->has_pre ? 1 + (pre_mask ? 1 : 0) + 1 : 0;
        emit(e, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, x->nr, 0, (uint8_t) (pre + test + 1)));
        if (s->has_pre) {
                /* The precondition does not hold: on, as for a value in
                 * the set. */
                emit(e, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg_low_word(token, s->pre_arg)));
                if (pre_mask)
                        emit(e, (struct sock_filter) BPF_STMT(BPF_ALU | BPF_AND | BPF_K, s->pre_mask));
                emit(e, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, s->pre_value, 0, (uint8_t) test));
        }
        emit(e, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, lo));
        if (mask)
                emit(e, (struct sock_filter) BPF_STMT(BPF_ALU | BPF_AND | BPF_K, s->mask));
        for (size_t v = 0; v < s->n_values; v++)
                emit(e, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, s->values[v],
                                                      (uint8_t) (s->n_values - v), 0));
        emit(e, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, x->ret));
        emit(e, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
}

static int build_prefix(const extra_rule *extra, size_t n, struct sock_filter **ret, size_t *ret_len, nsr_error *err) {
        uint32_t tokens[8];
        size_t n_tokens = 0;
        for (size_t i = 0; i < n; i++) {
                bool seen = false;
                for (size_t t = 0; t < n_tokens; t++)
                        seen = seen || tokens[t] == extra[i].token;
                if (!seen && n_tokens < ELEMENTSOF(tokens))
                        tokens[n_tokens++] = extra[i].token;
        }
        /* Every jump to the end: one per arch block. */
        size_t ends[ELEMENTSOF(tokens)];
        size_t n_ends = 0;
        emitter e = { 0 };
        for (size_t t = 0; t < n_tokens; t++) {
                emit(&e, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
                emit(&e, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, tokens[t], 1, 0));
                size_t next = emit(&e, (struct sock_filter) BPF_STMT(BPF_JMP | BPF_JA, 0));
                /* A keeps the number: a set's body loads its argument only
                 * when the number matched, and loads the number again
                 * before it goes on. */
                emit(&e, (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
                for (size_t i = 0; i < n; i++) {
                        if (extra[i].token != tokens[t])
                                continue;
                        if (extra[i].set) {
                                emit_set(&e, tokens[t], &extra[i]);
                                continue;
                        }
                        emit(&e, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, extra[i].nr, 0, 1));
                        emit(&e, (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, extra[i].ret));
                }
                ends[n_ends++] = emit(&e, (struct sock_filter) BPF_STMT(BPF_JMP | BPF_JA, 0));
                land(&e, next);
        }
        for (size_t i = 0; i < n_ends; i++)
                land(&e, ends[i]);
        if (e.n > NSR_SECCOMP_MAX_INSNS) {
                free(e.f);
                return nsr_error_setx(err, E2BIG, "too many rules for nsrun's own filter instructions");
        }
        *ret = e.f;
        *ret_len = e.n;
        return 0;
}

int nsr_seccomp_compile(const nsr_policy *p, char **ret_data, size_t *ret_len, nsr_error *err) {
        uint32_t arches[4];
        size_t n_arches = nsr_seccomp_arches(arches, ELEMENTSOF(arches));
        compiler c = { .policy = p, .err = err };
        _cleanup_(release_ctx) scmp_filter_ctx main_ctx = NULL;
        _cleanup_free_ char *prog = NULL;
        _cleanup_free_ struct sock_filter *prefix = NULL;
        size_t prog_len = 0, prefix_len = 0, insns, total;
        char *data;
        int k, r = 0;

        for (size_t i = 0; i < n_arches; i++) {
                _cleanup_(release_ctx) scmp_filter_ctx ctx = NULL;
                c.arch = arches[i];
                r = new_ctx(&c, &ctx);
                if (r < 0)
                        goto out;
                r = add_arch_rules(&c, ctx);
                if (r < 0)
                        goto out;
                if (!main_ctx) {
                        main_ctx = TAKE_PTR(ctx);
                        continue;
                }
                k = seccomp_merge(main_ctx, ctx);
                if (k < 0) {
                        r = nsr_error_setx(err, -k, "libseccomp could not merge the %s filter: %s", arch_name(c.arch),
                                           strerror(-k));
                        goto out;
                }
                ctx = NULL; /* seccomp_merge consumed it */
        }
        r = nsr_seccomp_export(main_ctx, &prog, &prog_len, err);
        if (r < 0)
                goto out;
        if (prog_len == 0 || prog_len % sizeof(struct sock_filter) != 0) {
                r = nsr_error_setx(err, EINVAL, "libseccomp exported a filter of %zu bytes", prog_len);
                goto out;
        }
        if (c.n_extra > 0) {
                r = build_prefix(c.extra, c.n_extra, &prefix, &prefix_len, err);
                if (r < 0)
                        goto out;
        }
        insns = prefix_len + prog_len / sizeof(struct sock_filter);
        if (insns > NSR_SECCOMP_MAX_INSNS) {
                r = nsr_error_setx(err, E2BIG, "%s: the filter has %zu instructions; the kernel allows at most %u",
                                   p->files[0], insns, NSR_SECCOMP_MAX_INSNS);
                goto out;
        }
        total = insns * sizeof(struct sock_filter);
        data = nsr_malloc0(total);
        if (prefix_len)
                memcpy(data, prefix, prefix_len * sizeof(struct sock_filter));
        memcpy(data + prefix_len * sizeof(struct sock_filter), prog, prog_len);
        *ret_data = data;
        *ret_len = total;
out:
        free(c.extra);
        return r;
}

/* ---- the cache --------------------------------------------------------------- */

/* Bumped whenever the compiler's output for the same input changes. */
#define CACHE_GENERATION 4
#define CACHE_MAGIC      "NSRBPF01"
#define CACHE_HEADER     (8 + 2 * NSR_SHA256_SIZE)
#define CACHE_FILE_MAX   (CACHE_HEADER + NSR_SECCOMP_MAX_INSNS * sizeof(struct sock_filter))

int nsr_seccomp_cache_key(const nsr_policy *p, uint8_t ret[NSR_SHA256_SIZE]) {
        return nsr_seccomp_cache_key_of(p->digest, ret);
}

/* What every cached program depends on besides its source, fed into s: the
 * compiler (nsrun's version and this very binary: a distribution patch may
 * change the output without changing the version), libseccomp (its version,
 * and the API level it found the kernel and the filters above us to allow,
 * which decides the actions and flags it generates), the arches, and the
 * cache's generation. */
static int cache_env_compute(nsr_sha256 *s) {
        struct stat st;
        if (stat("/proc/self/exe", &st) < 0)
                return -errno;
        const struct scmp_version *v = seccomp_version();
        uint32_t arches[4];
        size_t n_arches = nsr_seccomp_arches(arches, ELEMENTSOF(arches));
        char buf[512];
        int l = snprintf(
                buf, sizeof(buf),
                "nsrun seccomp cache %d\nnsrun %s\nexe %llu:%llu:%lld:%lld.%09ld\nlibseccomp %u.%u.%u api %u\n",
                CACHE_GENERATION, PACKAGE_VERSION, (unsigned long long) st.st_dev, (unsigned long long) st.st_ino,
                (long long) st.st_size, (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec, v->major, v->minor, v->micro,
                seccomp_api_get());
        nsr_sha256_init(s);
        nsr_sha256_update(s, buf, (size_t) l);
        for (size_t i = 0; i < n_arches; i++)
                nsr_sha256_update(s, &arches[i], sizeof(arches[i]));
        return 0;
}

/* Computed once per process: none of it changes while the process runs
 * (/proc/self/exe is the binary that is running, libseccomp probes the API
 * level once), and a launch with --allow-host asks for it once per program
 * (its policies, the connect program). */
static nsr_sha256 env_memo;
static int env_memo_r;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_memo_init(void) {
        env_memo_r = cache_env_compute(&env_memo);
}

static int cache_env(nsr_sha256 *s) {
        pthread_once(&env_once, env_memo_init);
        if (env_memo_r < 0)
                return env_memo_r;
        *s = env_memo;
        return 0;
}

static void key_from_env(const nsr_sha256 *env, const uint8_t digest[NSR_SHA256_SIZE], uint8_t ret[NSR_SHA256_SIZE]) {
        nsr_sha256 s = *env;
        nsr_sha256_update(&s, digest, NSR_SHA256_SIZE);
        nsr_sha256_final(&s, ret);
}

int nsr_seccomp_cache_key_of(const uint8_t digest[NSR_SHA256_SIZE], uint8_t ret[NSR_SHA256_SIZE]) {
        nsr_sha256 env;
        int r = cache_env(&env);
        if (r < 0)
                return r;
        key_from_env(&env, digest, ret);
        return 0;
}

/* Opens a directory we may trust: ours, and writable by nobody else. */
static int open_trusted_dir(int at, const char *name, bool create, bool strict_mode) {
        int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (strict_mode ? O_NOFOLLOW : 0);
        /* Made only when missing: a mkdir that fails with EEXIST takes
         * the parent's lock, and every run but the first would pay it. */
        int fd = openat(at, name, flags);
        if (fd < 0 && errno == ENOENT && create) {
                if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
                        return -errno;
                fd = openat(at, name, flags);
        }
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (strict_mode && (st.st_mode & 022))) {
                close(fd);
                return -EPERM;
        }
        return fd;
}

static int cache_root_open(bool create);

char *nsr_seccomp_cache_root(bool create) {
        _cleanup_close_ int fd = cache_root_open(create);
        if (fd < 0)
                return NULL;
        char link[64], buf[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        /* The kernel's name for the open dir is its canonical path; realpath
         * would look up every component of /proc/self/fd/N and of the
         * target again (ten readlink calls a launch). It is checked to
         * name the dir still (not "... (deleted)", not another one). */
        ssize_t n = readlink(link, buf, sizeof(buf) - 1);
        struct stat a, b;
        if (n <= 0 || buf[0] != '/')
                return NULL;
        buf[n] = '\0';
        if (fstat(fd, &a) < 0 || stat(buf, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return NULL;
        return nsr_strdup(buf);
}

static int cache_dir_open(bool create) {
        _cleanup_close_ int mid = cache_root_open(create);
        if (mid < 0)
                return mid;
        return open_trusted_dir(mid, "seccomp", create, true);
}

static int cache_root_open(bool create) {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        _cleanup_close_ int base = -1;
        /* Relative values are to be ignored, says the XDG spec. */
        if (xdg && xdg[0] == '/')
                base = open_trusted_dir(AT_FDCWD, xdg, create, false);
        else if (home && home[0] == '/') {
                _cleanup_close_ int h = open_trusted_dir(AT_FDCWD, home, false, false);
                if (h < 0)
                        return h;
                base = open_trusted_dir(h, ".cache", create, false);
        } else
                return -ENOENT;
        if (base < 0)
                return base;
        return open_trusted_dir(base, "nsrun", create, true);
}

static void cache_file_name(const uint8_t key[NSR_SHA256_SIZE], char *buf) {
        nsr_sha256_hex(key, buf);
        strcat(buf, ".bpf");
}

/* Opens a cache file for reading if we may trust it: a regular file of our
 * own that nobody else can write. */
static int cache_file_open(int dir, const char *name) {
        int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
                close(fd);
                return -EPERM;
        }
        return fd;
}

/* The whole of such a file, at most max bytes. */
static int cache_file_read(int dir, const char *name, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = cache_file_open(dir, name);
        if (fd < 0)
                return fd;
        return nsr_read_all(fd, max, ret, ret_len);
}

static int cache_lookup_at(int dir, const uint8_t key[NSR_SHA256_SIZE], char **ret_data, size_t *ret_len) {
        char name[2 * NSR_SHA256_SIZE + 8];
        cache_file_name(key, name);
        /* Never load a filter someone else could have written. */
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = cache_file_read(dir, name, CACHE_FILE_MAX, &buf, &len);
        if (r < 0)
                return r;
        /* A torn or corrupt entry is ignored (and later overwritten). */
        size_t body = len - CACHE_HEADER;
        if (len <= CACHE_HEADER || body % sizeof(struct sock_filter) != 0 || memcmp(buf, CACHE_MAGIC, 8) != 0 ||
            memcmp(buf + 8, key, NSR_SHA256_SIZE) != 0)
                return -EBADMSG;
        uint8_t sum[NSR_SHA256_SIZE];
        nsr_sha256_buf(buf + CACHE_HEADER, body, sum);
        if (memcmp(sum, buf + 8 + NSR_SHA256_SIZE, NSR_SHA256_SIZE) != 0)
                return -EBADMSG;
        char *data = nsr_malloc0(body);
        memcpy(data, buf + CACHE_HEADER, body);
        *ret_data = data;
        *ret_len = body;
        return 0;
}

int nsr_seccomp_cache_lookup(const uint8_t key[NSR_SHA256_SIZE], char **ret_data, size_t *ret_len) {
        _cleanup_close_ int dir = cache_dir_open(false);
        if (dir < 0)
                return dir;
        return cache_lookup_at(dir, key, ret_data, ret_len);
}

/* Programs, and the index's entries (below). */
static bool is_cache_entry(const char *name) {
        return nsr_endswith(name, ".bpf") || nsr_endswith(name, ".idx");
}

/* The cache only grows when nsrun, libseccomp or a policy changes; when it
 * holds too many entries anyway, start over rather than track ages. */
static void cache_trim(int dir) {
        /* A new open, not a dup of dir: a dup would share (and leave at
         * the end) the offset of the caller's fd. */
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(dir, ".", 0, &d) < 0)
                return;
        /* Best effort both times: a cache that cannot be listed or trimmed
         * only costs a compile. */
        size_t n = 0;
        FOREACH_DIRENT(e, d, return )
        n += is_cache_entry(e->d_name);
        if (n >= NSR_SECCOMP_CACHE_MAX) {
                rewinddir(d);
                FOREACH_DIRENT(e, d, return )
                if (is_cache_entry(e->d_name))
                        (void) unlinkat(dir, e->d_name, 0);
        }
}

int nsr_seccomp_cache_store(const uint8_t key[NSR_SHA256_SIZE], const char *data, size_t len) {
        if (len == 0 || len % sizeof(struct sock_filter) != 0 ||
            len > NSR_SECCOMP_MAX_INSNS * sizeof(struct sock_filter))
                return -EINVAL;
        _cleanup_close_ int dir = cache_dir_open(true);
        if (dir < 0)
                return dir;
        cache_trim(dir);

        char name[2 * NSR_SHA256_SIZE + 8];
        cache_file_name(key, name);

        _cleanup_free_ char *buf = nsr_malloc0(CACHE_HEADER + len);
        memcpy(buf, CACHE_MAGIC, 8);
        memcpy(buf + 8, key, NSR_SHA256_SIZE);
        nsr_sha256_buf(data, len, (uint8_t *) buf + 8 + NSR_SHA256_SIZE);
        memcpy(buf + CACHE_HEADER, data, len);

        /* No fsync: a torn entry fails its checksum and is recompiled. */
        nsr_error e = { 0 };
        return nsr_durable_write(dir, name, buf, CACHE_HEADER + len, 0600, 0, &e);
}

int nsr_seccomp_builtin_bpf(const char *id, nsr_seccomp_build_fn build, char **ret_data, size_t *ret_len,
                            nsr_error *err) {
        uint8_t digest[NSR_SHA256_SIZE], key[NSR_SHA256_SIZE];
        nsr_sha256_buf(id, strlen(id), digest);
        bool cache = nsr_seccomp_cache_key_of(digest, key) >= 0;
        if (cache && nsr_seccomp_cache_lookup(key, ret_data, ret_len) >= 0)
                return 0;
        int r = build(ret_data, ret_len, err);
        if (r >= 0 && cache)
                (void) nsr_seccomp_cache_store(key, *ret_data, *ret_len);
        return r;
}

/* ---- the index: a policy's files to its digest ------------------------------------ */

/* A cache hit used to read, parse and hash the policy and its includes on
 * every launch, only to learn the digest the compiled program is filed
 * under. The index remembers that digest per policy name, with the identity
 * of every file the load read and of every include candidate it found
 * missing; when all of them are as they were, the load would read the very
 * same bytes again, so its digest is the one remembered.
 *
 * Why the key is complete:
 *   - The slot (the index file's name) covers what decides which files a
 *     load opens: the name or path as given, the shipped policy dir
 *     (NSRUN_DATADIR), and everything the program key covers (nsrun's
 *     version and binary, libseccomp and its API level, the arches, the
 *     cache generation), so a new nsrun never trusts an old one's index.
 *   - Each file read is known by its device, inode, size, mode, mtime and
 *     ctime (in ns), taken from the open file before it was read. A file
 *     replaced by another (rename, a new copy) has another inode; a file
 *     written in place has a new ctime, which the kernel sets on every
 *     change and nobody can set back (utimensat sets mtime, never ctime)
 *     short of setting the system clock back.
 *   - An include looks next to the including file first: a candidate that
 *     was missing must still be missing, or a file created there later
 *     would be ignored. Any other outcome (a candidate that could not be
 *     opened, a file that is not a regular one) is never indexed.
 *   - A change made in the same clock tick as the read, after it, would
 *     get the same ctime (timestamps are coarse, and truncated to the file
 *     system's granularity): a file is only indexed once its ctime is
 *     INDEX_SETTLE_NS old, and until then every launch takes the full path.
 * The index lives with the programs and is trusted the same way (our own
 * directory and file, writable by nobody else); it is checksummed, and
 * anything wrong with it (torn, foreign, stale) only costs the full path,
 * which rewrites it. */
#define INDEX_MAGIC     "NSRIDX01"
#define INDEX_FILES_MAX 64
#define INDEX_FILE_MAX  (64 * 1024)
#define INDEX_SETTLE_NS (2 * (int64_t) 1000000000)
#define INDEX_HEADER    (8 + 2 * NSR_SHA256_SIZE + 4)

/* One file's identity as stored; compared whole, so every field counts
 * (and there is no padding to compare: 8 64-bit fields, 2 32-bit ones). */
typedef struct index_rec {
        uint64_t dev, ino, size, mode;
        int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
        uint32_t present, path_len;
} index_rec;

static index_rec index_rec_of(const char *path, const struct stat *st) {
        index_rec r = { .path_len = (uint32_t) strlen(path) };
        if (st)
                r = (index_rec){
                        .dev = st->st_dev,
                        .ino = st->st_ino,
                        .size = (uint64_t) st->st_size,
                        .mode = st->st_mode,
                        .mtime_sec = st->st_mtim.tv_sec,
                        .mtime_nsec = st->st_mtim.tv_nsec,
                        .ctime_sec = st->st_ctim.tv_sec,
                        .ctime_nsec = st->st_ctim.tv_nsec,
                        .present = 1,
                        .path_len = r.path_len,
                };
        return r;
}

static void index_slot(const nsr_sha256 *env, const char *name_or_path, uint8_t ret[NSR_SHA256_SIZE]) {
        _cleanup_free_ char *shipped = nsr_seccomp_dir();
        nsr_sha256 s = *env;
        nsr_sha256_update(&s, "\0index\0", 7);
        nsr_sha256_update(&s, name_or_path, strlen(name_or_path) + 1);
        nsr_sha256_update(&s, shipped, strlen(shipped) + 1);
        nsr_sha256_final(&s, ret);
}

static void index_file_name(const uint8_t slot[NSR_SHA256_SIZE], char *buf) {
        nsr_sha256_hex(slot, buf);
        strcat(buf, ".idx");
}

/* Checks one stored file against the file system now: 0 when unchanged.
 * The attributes are asked with AT_STATX_FORCE_SYNC: a network file system
 * may answer a plain stat from attributes it cached before another client
 * changed the file, where the open of a full load would have asked the
 * server. Local file systems ignore the flag. */
static int index_check_file(const index_rec *stored, const char *path) {
        const unsigned need = STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME;
        struct statx sx;
        index_rec now;
        if (statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC, need, &sx) == 0) {
                if ((sx.stx_mask & need) != need)
                        return -EIO;
                struct stat st = {
                        .st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
                        .st_ino = sx.stx_ino,
                        .st_size = (off_t) sx.stx_size,
                        .st_mode = sx.stx_mode,
                        .st_mtim = { .tv_sec = sx.stx_mtime.tv_sec, .tv_nsec = sx.stx_mtime.tv_nsec },
                        .st_ctim = { .tv_sec = sx.stx_ctime.tv_sec, .tv_nsec = sx.stx_ctime.tv_nsec },
                };
                now = index_rec_of(path, &st);
        } else if (errno == ENOENT)
                now = index_rec_of(path, NULL);
        else
                return -errno;
        return memcmp(&now, stored, sizeof(now)) == 0 ? 0 : -ESTALE;
}

/* The digest the slot's entry gives, if every file it names is unchanged
 * and the first is first_path. */
static int index_lookup_at(int dir, const uint8_t slot[NSR_SHA256_SIZE], const char *first_path,
                           uint8_t ret_digest[NSR_SHA256_SIZE]) {
        char name[2 * NSR_SHA256_SIZE + 8];
        index_file_name(slot, name);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r = cache_file_read(dir, name, INDEX_FILE_MAX, &buf, &len);
        if (r < 0)
                return r;
        if (len < INDEX_HEADER + NSR_SHA256_SIZE)
                return -EBADMSG;
        size_t end = len - NSR_SHA256_SIZE;
        uint8_t sum[NSR_SHA256_SIZE];
        nsr_sha256_buf(buf, end, sum);
        if (memcmp(sum, buf + end, NSR_SHA256_SIZE) != 0 || memcmp(buf, INDEX_MAGIC, 8) != 0 ||
            memcmp(buf + 8, slot, NSR_SHA256_SIZE) != 0)
                return -EBADMSG;
        uint32_t n;
        memcpy(&n, buf + 8 + 2 * NSR_SHA256_SIZE, sizeof(n));
        if (n == 0 || n > INDEX_FILES_MAX)
                return -EBADMSG;
        size_t off = INDEX_HEADER;
        for (uint32_t i = 0; i < n; i++) {
                index_rec rec;
                if (end - off < sizeof(rec))
                        return -EBADMSG;
                memcpy(&rec, buf + off, sizeof(rec));
                off += sizeof(rec);
                if (rec.path_len == 0 || rec.path_len > PATH_MAX || end - off < rec.path_len)
                        return -EBADMSG;
                char path[PATH_MAX + 1];
                memcpy(path, buf + off, rec.path_len);
                path[rec.path_len] = '\0';
                off += rec.path_len;
                if (strlen(path) != rec.path_len || (i == 0 && !streq(path, first_path)))
                        return -EBADMSG;
                r = index_check_file(&rec, path);
                if (r < 0)
                        return r;
        }
        if (off != end)
                return -EBADMSG;
        memcpy(ret_digest, buf + 8 + NSR_SHA256_SIZE, NSR_SHA256_SIZE);
        return 0;
}

static int64_t index_settle_ns(void) {
#ifdef NSR_TEST_HOOKS
        /* The unit tests cannot make a file's ctime old; they shorten the
         * wait instead. */
        const char *v = getenv("NSRUN_TEST_INDEX_SETTLE_MS");
        if (v)
                return (int64_t) strtoul(v, NULL, 10) * 1000000;
#endif
        return INDEX_SETTLE_NS;
}

/* Files changed too recently to be known by their ctime (see above). */
static bool index_settled(const policy_files *pf) {
        struct timespec now;
        if (clock_gettime(CLOCK_REALTIME, &now) < 0)
                return false;
        int64_t limit = (int64_t) now.tv_sec * 1000000000 + now.tv_nsec - index_settle_ns();
        for (size_t i = 0; i < pf->n; i++)
                if (pf->v[i].present &&
                    (int64_t) pf->v[i].st.st_ctim.tv_sec * 1000000000 + pf->v[i].st.st_ctim.tv_nsec >= limit)
                        return false;
        return true;
}

static int index_store(const uint8_t slot[NSR_SHA256_SIZE], const policy_files *pf,
                       const uint8_t digest[NSR_SHA256_SIZE]) {
        if (pf->unindexable || pf->n == 0 || pf->n > INDEX_FILES_MAX)
                return -EINVAL;
        if (!index_settled(pf))
                return -EAGAIN;
        size_t len = INDEX_HEADER + NSR_SHA256_SIZE;
        for (size_t i = 0; i < pf->n; i++) {
                size_t l = strlen(pf->v[i].path);
                if (l == 0 || l > PATH_MAX)
                        return -ENAMETOOLONG;
                len += sizeof(index_rec) + l;
        }
        if (len > INDEX_FILE_MAX)
                return -E2BIG;
        _cleanup_free_ char *buf = nsr_malloc0(len);
        memcpy(buf, INDEX_MAGIC, 8);
        memcpy(buf + 8, slot, NSR_SHA256_SIZE);
        memcpy(buf + 8 + NSR_SHA256_SIZE, digest, NSR_SHA256_SIZE);
        uint32_t n = (uint32_t) pf->n;
        memcpy(buf + 8 + 2 * NSR_SHA256_SIZE, &n, sizeof(n));
        size_t off = INDEX_HEADER;
        for (size_t i = 0; i < pf->n; i++) {
                const policy_file *f = &pf->v[i];
                index_rec rec = index_rec_of(f->path, f->present ? &f->st : NULL);
                memcpy(buf + off, &rec, sizeof(rec));
                off += sizeof(rec);
                memcpy(buf + off, f->path, rec.path_len);
                off += rec.path_len;
        }
        nsr_sha256_buf(buf, off, (uint8_t *) buf + off);
        _cleanup_close_ int dir = cache_dir_open(true);
        if (dir < 0)
                return dir;
        char name[2 * NSR_SHA256_SIZE + 8];
        index_file_name(slot, name);
        /* No fsync, as for the programs: a torn index fails its checksum. */
        nsr_error e = { 0 };
        return nsr_durable_write(dir, name, buf, len, 0600, 0, &e);
}

/* The fast path: the program, by the index, without reading the policy. */
static int index_hit(const nsr_sha256 *env, const uint8_t slot[NSR_SHA256_SIZE], const char *name_or_path,
                     char **ret_data, size_t *ret_len) {
        _cleanup_free_ char *path = NULL;
        nsr_error e = { 0 };
        int r = nsr_seccomp_policy_path(name_or_path, &path, &e);
        if (r < 0)
                return r;
        _cleanup_close_ int dir = cache_dir_open(false);
        if (dir < 0)
                return dir;
        uint8_t digest[NSR_SHA256_SIZE], key[NSR_SHA256_SIZE];
        r = index_lookup_at(dir, slot, path, digest);
        if (r < 0)
                return r;
        key_from_env(env, digest, key);
        return cache_lookup_at(dir, key, ret_data, ret_len);
}

int nsr_seccomp_index_lookup(const char *name_or_path, uint8_t ret_digest[NSR_SHA256_SIZE]) {
        nsr_sha256 env;
        int r = cache_env(&env);
        if (r < 0)
                return r;
        uint8_t slot[NSR_SHA256_SIZE];
        index_slot(&env, name_or_path, slot);
        _cleanup_free_ char *path = NULL;
        nsr_error e = { 0 };
        r = nsr_seccomp_policy_path(name_or_path, &path, &e);
        if (r < 0)
                return r;
        _cleanup_close_ int dir = cache_dir_open(false);
        if (dir < 0)
                return dir;
        return index_lookup_at(dir, slot, path, ret_digest);
}

/* ---- the entry point for launches ------------------------------------------------ */

int nsr_seccomp_policy_bpf(const char *name_or_path, char **ret_data, size_t *ret_len, nsr_error *err) {
        nsr_sha256 env;
        uint8_t slot[NSR_SHA256_SIZE], key[NSR_SHA256_SIZE];
        bool cache = cache_env(&env) >= 0;
        if (cache) {
                index_slot(&env, name_or_path, slot);
                if (index_hit(&env, slot, name_or_path, ret_data, ret_len) >= 0)
                        return 0;
        }
        /* The full path: read and parse the policy (recording its files
         * for the index), then the program from the cache, else compiled.
         * The key covers every file the policy read, so an edited include
         * is noticed. */
        _cleanup_(policy_files_done) policy_files rec = { 0 };
        _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
        int r = policy_load(name_or_path, &p, &rec, err);
        if (r < 0)
                return r;
        if (cache) {
                key_from_env(&env, p->digest, key);
                if (nsr_seccomp_cache_lookup(key, ret_data, ret_len) >= 0) {
                        (void) index_store(slot, &rec, p->digest);
                        return 0;
                }
        }
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        r = nsr_seccomp_compile(p, &data, &len, err);
        if (r < 0)
                return r;
        if (cache && nsr_seccomp_cache_store(key, data, len) >= 0)
                (void) index_store(slot, &rec, p->digest);
        *ret_data = TAKE_PTR(data);
        *ret_len = len;
        return 0;
}

/* ---- listing ------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int nsr_seccomp_list(char ***ret, nsr_error *err) {
        _cleanup_free_ char *dir = nsr_seccomp_dir();
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(AT_FDCWD, dir, 0, &d);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot read the seccomp policy directory %s", dir);
        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0;
        FOREACH_DIRENT(e, d, return nsr_error_set(err, errno, "cannot read the seccomp policy directory %s", dir)) {
                if (n >= 1024)
                        break;
                if (e->d_name[0] == '.' || !nsr_endswith(e->d_name, ".policy"))
                        continue;
                nsr_strv_push(&names, nsr_strndup(e->d_name, strlen(e->d_name) - strlen(".policy")));
                n++;
        }
        if (names)
                qsort(names, n, sizeof(char *), cmp_str);
        else
                names = nsr_malloc0(sizeof(char *));
        *ret = TAKE_PTR(names);
        return 0;
}

int nsr_seccomp_summary(const char *path, char **ret, nsr_error *err) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return nsr_error_set(err, errno, "cannot open %s", path);
        char line[512];
        while (fgets(line, sizeof(line), f)) {
                char *s = line;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s == '\n' || *s == '\0')
                        continue;
                if (*s != '#')
                        break;
                s++;
                while (*s == ' ' || *s == '\t')
                        s++;
                s[strcspn(s, "\r\n")] = '\0';
                *ret = nsr_strdup(s);
                return 0;
        }
        *ret = nsr_strdup("");
        return 0;
}
