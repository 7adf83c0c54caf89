/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy parser (every error, with its line), the compiler (checked by
 * running the BPF it produces through a small interpreter, for every arch),
 * the cache and its index, and SHA-256. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "base/sha256.h"
#include "seccomp/compile.h"
#include "seccomp/policy.h"
#include "unit.h"

/* ---- helpers ------------------------------------------------------------------ */

typedef struct mem_file {
        const char *name;
        const char *text;
} mem_file;

/* A loader that serves include files from a table. */
static int mem_open(void *userdata, const char *from, const char *name, FILE **ret_f, char **ret_path, nsr_error *err) {
        (void) from;
        for (const mem_file *m = userdata; m && m->name; m++)
                if (streq(m->name, name)) {
                        *ret_f = fmemopen((void *) m->text, strlen(m->text), "r");
                        ck_assert_ptr_nonnull(*ret_f);
                        *ret_path = nsr_asprintf("%s.policy", name);
                        return 0;
                }
        return nsr_error_setx(err, ENOENT, "cannot include '%s'", name);
}

static int parse_with(const char *text, size_t len, const mem_file *files, nsr_policy **ret, nsr_error *err) {
        FILE *f = fmemopen((void *) text, len, "r");
        ck_assert_ptr_nonnull(f);
        nsr_policy_loader loader = { .open = mem_open, .userdata = (void *) files };
        int r = nsr_policy_parse(f, "test.policy", &loader, ret, err);
        fclose(f);
        return r;
}

static nsr_policy *parse_ok(const char *text, const mem_file *files) {
        nsr_policy *p = NULL;
        nsr_error err = { 0 };
        int r = parse_with(text, strlen(text), files, &p, &err);
        ck_assert_msg(r == 0, "parse failed: %s", err.msg);
        return p;
}

static void parse_fails(const char *text, const mem_file *files, const char *where, const char *what) {
        nsr_policy *p = NULL;
        nsr_error err = { 0 };
        int r = parse_with(text, strlen(text), files, &p, &err);
        ck_assert_msg(r < 0, "'%s' parsed, expected: %s %s", text, where, what);
        ck_assert_ptr_null(p);
        ck_assert_msg(nsr_startswith(err.msg, where), "'%s': got '%s', expected it to start with '%s'", text, err.msg,
                      where);
        ck_assert_msg(strstr(err.msg, what), "'%s': got '%s', expected '%s'", text, err.msg, what);
        ck_assert_int_eq(err.kind, NSR_ERR_USAGE);
}

/* Evaluates a rule the way the kernel would, on 64-bit arguments. */
static bool rule_matches(const nsr_policy_rule *r, const uint64_t *args) {
        for (unsigned i = 0; i < r->n_cmp; i++) {
                const nsr_policy_cmp *c = &r->cmp[i];
                uint64_t a = args[c->arg];
                bool ok = false;
                switch (c->op) {
                case NSR_POLICY_OP_EQ:
                        ok = a == c->value;
                        break;
                case NSR_POLICY_OP_NE:
                        ok = a != c->value;
                        break;
                case NSR_POLICY_OP_LT:
                        ok = a < c->value;
                        break;
                case NSR_POLICY_OP_LE:
                        ok = a <= c->value;
                        break;
                case NSR_POLICY_OP_GT:
                        ok = a > c->value;
                        break;
                case NSR_POLICY_OP_GE:
                        ok = a >= c->value;
                        break;
                case NSR_POLICY_OP_MASKED_EQ:
                        ok = (a & c->mask) == c->value;
                        break;
                case _NSR_POLICY_OP_MAX:
                case _NSR_POLICY_OP_INVALID:
                        break;
                }
                if (!ok)
                        return false;
        }
        return true;
}

static unsigned matches(const nsr_policy *p, const char *syscall, const uint64_t *args) {
        unsigned n = 0;
        for (size_t i = 0; i < p->n_rules; i++)
                n += streq(p->rules[i].syscall, syscall) && rule_matches(&p->rules[i], args);
        return n;
}

/* ---- a classic BPF interpreter, for the programs libseccomp emits --------- */

static uint32_t bpf_run(const char *prog, size_t len, const struct seccomp_data *d) {
        const struct sock_filter *f = (const struct sock_filter *) prog;
        size_t n = len / sizeof(*f);
        uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *i = &f[pc];
                switch (i->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        ck_assert(i->k % 4 == 0 && i->k + 4 <= sizeof(*d));
                        memcpy(&A, (const char *) d + i->k, 4);
                        break;
                case BPF_LD | BPF_MEM:
                        A = M[i->k % BPF_MEMWORDS];
                        break;
                case BPF_LDX | BPF_MEM:
                        X = M[i->k % BPF_MEMWORDS];
                        break;
                case BPF_ST:
                        M[i->k % BPF_MEMWORDS] = A;
                        break;
                case BPF_STX:
                        M[i->k % BPF_MEMWORDS] = X;
                        break;
                case BPF_LD | BPF_IMM:
                        A = i->k;
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        A &= i->k;
                        break;
                case BPF_ALU | BPF_OR | BPF_K:
                        A |= i->k;
                        break;
                case BPF_MISC | BPF_TAX:
                        X = A;
                        break;
                case BPF_MISC | BPF_TXA:
                        A = X;
                        break;
                case BPF_JMP | BPF_JA:
                        pc += i->k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += A == i->k ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += A > i->k ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += A >= i->k ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (A & i->k) ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_X:
                        pc += A == X ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_X:
                        pc += A > X ? i->jt : i->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_X:
                        pc += A >= X ? i->jt : i->jf;
                        break;
                case BPF_RET | BPF_K:
                        return i->k;
                case BPF_RET | BPF_A:
                        return A;
                default:
                        ck_abort_msg("BPF opcode 0x%x at %zu is not handled by the test interpreter", i->code, pc);
                }
        }
        ck_abort_msg("the BPF program fell off its end");
        return 0;
}

typedef struct compiled {
        char *data;
        size_t len;
} compiled;

static compiled compile_text(const char *text, const mem_file *files) {
        _cleanup_(nsr_policy_freep) nsr_policy *p = parse_ok(text, files);
        compiled c = { 0 };
        nsr_error err = { 0 };
        int r = nsr_seccomp_compile(p, &c.data, &c.len, &err);
        ck_assert_msg(r == 0, "compile failed: %s", err.msg);
        return c;
}

/* i386's direct socket and IPC calls (Linux 4.3 and 5.1); libseccomp names
 * them by their multiplexed pseudo numbers. */
static const struct {
        const char *name;
        int nr;
} i386_direct[] = { { "socket", 359 }, { "accept4", 364 }, { "shmctl", 396 } };

static int nr_of(uint32_t arch, const char *name) {
        int nr = seccomp_syscall_resolve_name_arch(arch, name);
        for (size_t i = 0; arch == SCMP_ARCH_X86 && i < ELEMENTSOF(i386_direct); i++)
                if (streq(i386_direct[i].name, name))
                        nr = i386_direct[i].nr;
        if (nr == __NR_SCMP_ERROR)
                nr = nsr_policy_extra_syscall(name, arch);
        ck_assert_msg(nr >= 0, "%s has no number on arch 0x%x", name, arch);
        return nr;
}

static uint32_t run_call(const compiled *c, uint32_t arch, const char *name, uint64_t a0, uint64_t a1, uint64_t a2) {
        struct seccomp_data d = {
                .nr = nr_of(arch, name),
                /* x32 tasks report the x86_64 arch; their numbers differ. */
                .arch = arch == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : arch,
                .args = { a0, a1, a2 },
        };
        return bpf_run(c->data, c->len, &d);
}

static uint32_t run_nr(const compiled *c, uint32_t arch, int nr, uint64_t a0, uint64_t a1) {
        struct seccomp_data d = { .nr = nr, .arch = arch, .args = { a0, a1 } };
        return bpf_run(c->data, c->len, &d);
}

#define ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t) (e))
#define ALLOW    SECCOMP_RET_ALLOW

static compiled compile_shipped(const char *name) {
        const char *src = getenv("NSR_SRCDIR");
        setenv("NSRUN_DATADIR", src ? src : ".", 1);
        nsr_error err = { 0 };
        _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
        int r = nsr_seccomp_policy_load(name, &p, &err);
        ck_assert_msg(r == 0, "%s: %s", name, err.msg);
        compiled c = { 0 };
        r = nsr_seccomp_compile(p, &c.data, &c.len, &err);
        ck_assert_msg(r == 0, "%s: %s", name, err.msg);
        return c;
}

/* ---- SHA-256 ----------------------------------------------------------------- */

static void check_digest(const uint8_t *d, const char *hex) {
        char buf[2 * NSR_SHA256_SIZE + 1];
        nsr_sha256_hex(d, buf);
        ck_assert_str_eq(buf, hex);
}

/* FIPS 180-4's examples (one, two and four blocks, a million 'a's), with
 * the CPU's SHA instructions and without, so both block functions run. */
static void sha256_vectors(void) {
        uint8_t d[NSR_SHA256_SIZE];
        nsr_sha256_buf("", 0, d);
        check_digest(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        nsr_sha256_buf("abc", 3, d);
        check_digest(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        nsr_sha256_buf(two, strlen(two), d);
        check_digest(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        const char *four =
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                "mnopqrstnopqrstu";
        nsr_sha256_buf(four, strlen(four), d);
        check_digest(d, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
        /* A million 'a's, fed in uneven pieces to exercise the buffering. */
        nsr_sha256 s;
        nsr_sha256_init(&s);
        char a[997];
        memset(a, 'a', sizeof(a));
        size_t left = 1000000;
        for (size_t step = 1; left > 0; step = step % 990 + 7) {
                size_t k = step < left ? step : left;
                nsr_sha256_update(&s, a, k);
                left -= k;
        }
        nsr_sha256_final(&s, d);
        check_digest(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

START_TEST(test_sha256_vectors) {
        sha256_vectors();
        nsr_sha256_set_accel(false);
        sha256_vectors();
        nsr_sha256_set_accel(true);
}
END_TEST

/* ---- parsing ------------------------------------------------------------------ */

START_TEST(test_parse_basic) {
        _cleanup_(nsr_policy_freep) nsr_policy *p = parse_ok("# a comment\n"
                                                             "\n"
                                                             "allow read   # trailing comment\n"
                                                             "deny write\n"
                                                             "\tdeny mount errno ENOSYS\n"
                                                             "deny reboot kill\n"
                                                             "deny acct log\n"
                                                             "deny swapon errno 77\r\n"
                                                             "deny swapoff errno EAGAIN",
                                                             NULL);
        ck_assert_int_eq(p->n_rules, 7);
        ck_assert_int_eq(p->default_action.verdict, NSR_POLICY_ALLOW);
        ck_assert_str_eq(p->rules[0].syscall, "read");
        ck_assert_int_eq(p->rules[0].line, 3);
        ck_assert_int_eq(p->rules[0].action.verdict, NSR_POLICY_ALLOW);
        ck_assert_int_eq(p->rules[1].action.verdict, NSR_POLICY_ERRNO);
        ck_assert_int_eq(p->rules[1].action.errnum, EPERM); /* the default errno */
        ck_assert_int_eq(p->rules[1].line, 4);
        ck_assert_int_eq(p->rules[2].action.errnum, ENOSYS);
        ck_assert_int_eq(p->rules[3].action.verdict, NSR_POLICY_KILL);
        ck_assert_int_eq(p->rules[4].action.verdict, NSR_POLICY_LOG);
        ck_assert_int_eq(p->rules[5].action.errnum, 77);
        ck_assert_int_eq(p->rules[6].action.errnum, EAGAIN);
        ck_assert_int_eq(p->rules[6].line, 9);
        for (size_t i = 0; i < p->n_rules; i++)
                ck_assert_int_eq(p->rules[i].n_cmp, 0);
}
END_TEST

START_TEST(test_parse_default) {
        nsr_policy *p = parse_ok("default deny\n", NULL);
        ck_assert_int_eq(p->default_action.verdict, NSR_POLICY_ERRNO);
        ck_assert_int_eq(p->default_action.errnum, EPERM);
        nsr_policy_free(p);
        p = parse_ok("default deny errno ENOSYS\nallow read\n", NULL);
        ck_assert_int_eq(p->default_action.errnum, ENOSYS);
        nsr_policy_free(p);
        p = parse_ok("default deny kill\n", NULL);
        ck_assert_int_eq(p->default_action.verdict, NSR_POLICY_KILL);
        nsr_policy_free(p);
        p = parse_ok("default allow\n", NULL);
        ck_assert_int_eq(p->default_action.verdict, NSR_POLICY_ALLOW);
        nsr_policy_free(p);
}
END_TEST

START_TEST(test_parse_conditions) {
        _cleanup_(nsr_policy_freep) nsr_policy *p =
                parse_ok("deny ioctl if arg1 & 0xffffffff == TIOCSTI\n"
                         "deny clone if arg0 & CLONE_NEWUSER\n"
                         "deny socket if arg0 == AF_NETLINK and arg2 != NETLINK_ROUTE\n"
                         "deny personality if arg0 in {PER_LINUX32 | UNAME26, 8, 010}\n"
                         "deny read if arg2 < 5 and arg0 >= 0x10\n",
                         NULL);
        const nsr_policy_rule *r = p->rules;
        ck_assert_int_eq(p->n_rules, 1 + 1 + 1 + 2 + 1); /* 8 and 010 are the same value */
        ck_assert_int_eq(r[0].n_cmp, 1);
        ck_assert_int_eq(r[0].cmp[0].arg, 1);
        ck_assert_int_eq(r[0].cmp[0].op, NSR_POLICY_OP_MASKED_EQ);
        ck_assert_uint_eq(r[0].cmp[0].mask, 0xffffffff);
        ck_assert_uint_eq(r[0].cmp[0].value, TIOCSTI);
        /* A single-bit "any of" is one masked equality. */
        ck_assert_int_eq(r[1].cmp[0].op, NSR_POLICY_OP_MASKED_EQ);
        ck_assert_uint_eq(r[1].cmp[0].mask, CLONE_NEWUSER);
        ck_assert_uint_eq(r[1].cmp[0].value, CLONE_NEWUSER);
        /* Unmasked != is libseccomp's NE; the comparisons come sorted by arg. */
        ck_assert_int_eq(r[2].n_cmp, 2);
        ck_assert_int_eq(r[2].cmp[0].op, NSR_POLICY_OP_EQ);
        ck_assert_uint_eq(r[2].cmp[0].value, AF_NETLINK);
        ck_assert_int_eq(r[2].cmp[1].arg, 2);
        ck_assert_int_eq(r[2].cmp[1].op, NSR_POLICY_OP_NE);
        ck_assert_uint_eq(r[3].cmp[0].value, 8);
        ck_assert_uint_eq(r[4].cmp[0].value, PER_LINUX32 | UNAME26);
        ck_assert_int_eq(r[5].cmp[0].arg, 0);
        ck_assert_int_eq(r[5].cmp[0].op, NSR_POLICY_OP_GE);
        ck_assert_int_eq(r[5].cmp[1].op, NSR_POLICY_OP_LT);

        char buf[256];
        nsr_policy_format_rule(&r[0], buf, sizeof(buf));
        ck_assert_str_eq(buf, "deny ioctl errno EPERM if arg1 & 0xffffffff == 0x5412");
        nsr_policy_format_rule(&r[2], buf, sizeof(buf));
        ck_assert_str_eq(buf, "deny socket errno EPERM if arg0 == 0x10 and arg2 != 0x0");
}
END_TEST

/* "arg & MASK" and "not in" expand into several masked equalities; check by
 * brute force that together they match exactly the intended values, and
 * that they do not overlap. */
START_TEST(test_parse_expansion_exact) {
        static const struct {
                const char *text;
                uint64_t mask;
                uint64_t set[4];
                size_t n;
        } cases[] = {
                { "deny read if arg0 & 0x5\n", 0x5, { 0 }, 1 },
                { "deny read if arg0 & 0xff != 7\n", 0xff, { 7 }, 1 },
                { "deny read if arg0 & 0x3ff not in {1, 2, 10, 16}\n", 0x3ff, { 1, 2, 10, 16 }, 4 },
                { "deny read if arg0 & 0x30c not in {0, 0x300, 0x4}\n", 0x30c, { 0, 0x300, 0x4 }, 3 },
        };
        for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
                _cleanup_(nsr_policy_freep) nsr_policy *p = parse_ok(cases[k].text, NULL);
                for (uint64_t x = 0; x < 4096; x++) {
                        uint64_t args[6] = { x | (x << 40) };
                        bool in = false;
                        for (size_t i = 0; i < cases[k].n; i++)
                                in = in || (x & cases[k].mask) == cases[k].set[i];
                        unsigned m = matches(p, "read", args);
                        ck_assert_msg(m == (in ? 0u : 1u), "%s: value 0x%llx matched %u rules", cases[k].text,
                                      (unsigned long long) x, m);
                }
        }
        /* The family rule of default.policy: 32 bits, 4 values. */
        _cleanup_(nsr_policy_freep) nsr_policy *p =
                parse_ok("deny socket if arg0 & 0xffffffff not in {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}\n", NULL);
        ck_assert_uint_le(p->n_rules, 32 * 4);
        uint64_t probes[] = { 0, 1, 2, 3, 9, 10, 11, 16, 17, 31, 32, 0x80000001, 0x100000001, 0xffffffff, 1ull << 33 };
        for (size_t i = 0; i < ELEMENTSOF(probes); i++) {
                uint64_t args[6] = { probes[i] };
                uint64_t low = probes[i] & 0xffffffff;
                bool allowed = low == AF_UNIX || low == AF_INET || low == AF_INET6 || low == AF_NETLINK;
                ck_assert_uint_eq(matches(p, "socket", args), allowed ? 0 : 1);
        }
}
END_TEST

START_TEST(test_parse_include) {
        static const mem_file files[] = {
                { "base", "deny mount\ninclude leaf\n" },
                { "leaf", "deny umount2\n" },
                { "other", "deny mount\n" },
                { NULL, NULL },
        };
        _cleanup_(nsr_policy_freep) nsr_policy *p =
                parse_ok("allow read\ninclude base\ndeny reboot\ninclude other\n", files);
        ck_assert_int_eq(p->n_rules, 5);
        ck_assert_str_eq(p->rules[1].syscall, "mount");
        ck_assert_str_eq(p->files[p->rules[1].file], "base.policy");
        ck_assert_int_eq(p->rules[1].line, 1);
        ck_assert_str_eq(p->rules[2].syscall, "umount2");
        ck_assert_str_eq(p->files[p->rules[2].file], "leaf.policy");
        ck_assert_str_eq(p->rules[3].syscall, "reboot");
        ck_assert_int_eq(p->rules[3].line, 3);
        ck_assert_str_eq(p->files[p->rules[3].file], "test.policy");
        ck_assert_int_eq(nsr_strv_length(p->files), 4);
}
END_TEST

START_TEST(test_parse_digest) {
        static const mem_file a[] = { { "inc", "deny mount\n" }, { NULL, NULL } };
        static const mem_file b[] = { { "inc", "deny umount2\n" }, { NULL, NULL } };
        _cleanup_(nsr_policy_freep) nsr_policy *p1 = parse_ok("include inc\n", a);
        _cleanup_(nsr_policy_freep) nsr_policy *p2 = parse_ok("include inc\n", a);
        _cleanup_(nsr_policy_freep) nsr_policy *p3 = parse_ok("include inc\n", b);
        _cleanup_(nsr_policy_freep) nsr_policy *p4 = parse_ok("include inc\n# edited\n", a);
        /* The same text in one file instead of two is a different input. */
        _cleanup_(nsr_policy_freep) nsr_policy *p5 = parse_ok("deny mount\n", NULL);
        ck_assert_mem_eq(p1->digest, p2->digest, NSR_SHA256_SIZE);
        ck_assert(memcmp(p1->digest, p3->digest, NSR_SHA256_SIZE) != 0);
        ck_assert(memcmp(p1->digest, p4->digest, NSR_SHA256_SIZE) != 0);
        ck_assert(memcmp(p1->digest, p5->digest, NSR_SHA256_SIZE) != 0);
}
END_TEST

START_TEST(test_parse_errors) {
        static const struct {
                const char *text;
                const char *where;
                const char *what;
        } cases[] = {
                { "bogus read\n",
                  "test.policy:1: ", "unknown statement 'bogus' (expected allow, deny, default or include)" },
                { "\n\n0x1\n", "test.policy:3: ", "unknown statement '0x1'" },
                { "deny\n", "test.policy:1: ", "expected a system call name after 'deny', got 'end of line'" },
                { "allow 12\n", "test.policy:1: ", "expected a system call name after 'allow', got '12'" },
                { "# x\ndeny nosuchcall\n", "test.policy:2: ", "unknown system call 'nosuchcall'" },
                { "deny read errno EFOO\n", "test.policy:1: ", "unknown errno name 'EFOO'" },
                { "deny read errno 0\n",
                  "test.policy:1: ", "errno must be a name or a number from 1 to 4095, got '0'" },
                { "deny read errno 4096\n", "test.policy:1: ", "errno must be a name or a number from 1 to 4095" },
                { "deny read errno\n", "test.policy:1: ", "expected an errno name after 'errno', got 'end of line'" },
                { "deny read kill now\n", "test.policy:1: ", "unexpected 'now'" },
                { "deny read if arg0 == FOO\n", "test.policy:1: ", "unknown constant 'FOO'" },
                { "deny read if arg0 == 08\n", "test.policy:1: ", "bad number '08'" },
                { "deny read if arg0 == 0x\n", "test.policy:1: ", "bad number '0x'" },
                { "deny read if arg0 == 12ab\n", "test.policy:1: ", "bad number '12ab'" },
                { "deny read if arg0 == 18446744073709551616\n", "test.policy:1: ", "does not fit in 64 bits" },
                { "deny read if arg0 == ==\n", "test.policy:1: ", "expected a number or a constant, got '=='" },
                { "deny read if arg6 == 1\n", "test.policy:1: ", "expected arg0 to arg5, got 'arg6'" },
                { "deny read if argx == 1\n", "test.policy:1: ", "expected arg0 to arg5, got 'argx'" },
                { "deny read if\n", "test.policy:1: ", "expected arg0 to arg5, got 'end of line'" },
                { "deny read if arg0\n", "test.policy:1: ", "expected a comparison after arg0, got 'end of line'" },
                { "deny read if arg0 & 0 == 0\n", "test.policy:1: ", "the mask of arg0 is zero" },
                { "deny read if arg0 & 0xf == 0x10\n", "test.policy:1: ", "value 0x10 has bits outside the mask 0xf" },
                { "deny read if arg0 & 0xf not in {1, 0x20}\n", "test.policy:1: ", "value 0x20 has bits outside" },
                { "deny read if arg0 & 0xf < 3\n",
                  "test.policy:1: ", "a mask works with ==, !=, in and not in, not with <" },
                { "deny read if arg0 == 1 and arg0 == 2\n", "test.policy:1: ", "arg0 is tested twice" },
                { "deny read if arg0 == 1 arg1 == 2\n",
                  "test.policy:1: ", "unexpected 'arg1' (conditions are joined with 'and')" },
                { "deny read if arg0 == 1 and\n", "test.policy:1: ", "expected arg0 to arg5, got 'end of line'" },
                { "deny read if arg0 not {1}\n", "test.policy:1: ", "expected 'in' after 'not', got '{'" },
                { "deny read if arg0 in 1\n", "test.policy:1: ", "expected '{' after 'in', got '1'" },
                { "deny read if arg0 in {1 2}\n", "test.policy:1: ", "expected ',' or '}' in a set, got '2'" },
                { "deny read if arg0 in {1,\n",
                  "test.policy:1: ", "expected a number or a constant, got 'end of line'" },
                { "deny read if arg0 & 0xffffffff != 1 and arg1 & 0xffffffff != 1 and arg2 & 0xffff != 3\n",
                  "test.policy:1: ", "this rule expands to more than 1024 filter rules" },
                { "deny read $\n", "test.policy:1: ", "unexpected character '$'" },
                { "deny read \x01\n", "test.policy:1: ", "unexpected byte 0x01" },
                { "default\n", "test.policy:1: ", "expected 'allow' or 'deny' after 'default', got 'end of line'" },
                { "default allow now\n", "test.policy:1: ", "unexpected 'now'" },
                { "default allow\n\ndefault deny\n",
                  "test.policy:3: ", "the default action is already set at test.policy:1" },
                { "include\n", "test.policy:1: ", "expected a policy name after 'include', got 'end of line'" },
                { "include .hidden\n", "test.policy:1: ", "unexpected character '.'" },
                { "include a/b\n", "test.policy:1: ", "unexpected character '/'" },
                { "include a b\n", "test.policy:1: ", "unexpected 'b' after the policy name" },
                { "allow read\ninclude nosuch\n", "test.policy:2: ", "cannot include 'nosuch'" },
                { "deny read\nallow read if arg0 == 1\n", "test.policy:2: ",
                  "this rule (allow) can match the same read calls as the rule at test.policy:1 (deny errno EPERM)" },
                { "deny ioctl errno EIO if arg1 <= 5\ndeny ioctl if arg1 >= 5\n",
                  "test.policy:2: ", "can match the same ioctl calls as the rule at test.policy:1 (deny errno EIO)" },
                { "deny ioctl if arg1 & 1\ndeny ioctl kill if arg1 & 2\n",
                  "test.policy:2: ", "can match the same ioctl" },
                { "deny ioctl if arg1 != 1\ndeny ioctl kill if arg1 != 2\n",
                  "test.policy:2: ", "can match the same ioctl" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                parse_fails(cases[i].text, NULL, cases[i].where, cases[i].what);
}
END_TEST

START_TEST(test_parse_errors_includes) {
        static const mem_file files[] = {
                { "sub", "\n\ndeny nosuch\n" }, { "a", "include b\n" },   { "b", "\ninclude a\n" },
                { "d1", "include d2\n" },       { "d2", "include d3\n" }, { "d3", "include d4\n" },
                { "d4", "include d5\n" },       { "d5", "include d6\n" }, { "d6", "include d7\n" },
                { "d7", "include d8\n" },       { "d8", "include d9\n" }, { "d9", "deny read\n" },
                { "dflt", "default allow\n" },  { NULL, NULL },
        };
        /* An error in an included file names that file and its line. */
        parse_fails("allow read\ninclude sub\n", files, "sub.policy:3: ", "unknown system call 'nosuch'");
        parse_fails("include a\n", files, "b.policy:2: ", "include cycle: a.policy is already being read");
        parse_fails("include d1\n", files, "d8.policy:1: ", "includes are nested more than 8 deep");
        parse_fails("default deny\ninclude dflt\n", files,
                    "dflt.policy:1: ", "the default action is already set at test.policy:1");
        /* Eight levels are fine. */
        nsr_policy_free(parse_ok("include d2\n", files));

        /* Without a loader, include cannot work. */
        const char *text = "include a\n";
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        nsr_policy *p = NULL;
        nsr_error err = { 0 };
        ck_assert_int_lt(nsr_policy_parse(f, "x.policy", NULL, &p, &err), 0);
        fclose(f);
        ck_assert_str_eq(err.msg, "x.policy:1: include is not possible here: this policy is not read from a directory");
}
END_TEST

START_TEST(test_parse_errors_limits) {
        nsr_policy *p = NULL;
        nsr_error err = { 0 };

        /* A line that is too long. */
        size_t n = NSR_POLICY_LINE_MAX + 10;
        _cleanup_free_ char *longline = nsr_malloc0(n + 32);
        strcpy(longline, "allow read\n#");
        memset(longline + strlen(longline), 'x', n);
        ck_assert_int_lt(parse_with(longline, strlen(longline), NULL, &p, &err), 0);
        ck_assert_str_eq(err.msg, "test.policy:2: the line is longer than 4096 bytes");

        /* A NUL byte. */
        static const char nul[] = "allow read\nallow write\0\n";
        ck_assert_int_lt(parse_with(nul, sizeof(nul) - 1, NULL, &p, &err), 0);
        ck_assert_str_eq(err.msg, "test.policy:2: NUL byte in the policy text");

        /* A file that is too large. */
        size_t big = NSR_POLICY_FILE_MAX + 100;
        _cleanup_free_ char *huge = nsr_malloc0(big + 1);
        for (size_t i = 0; i < big; i++)
                huge[i] = (i % 64 == 63) ? '\n' : '#';
        ck_assert_int_lt(parse_with(huge, big, NULL, &p, &err), 0);
        ck_assert(strstr(err.msg, "the file is larger than 1048576 bytes"));

        /* Too many rules: 65 lines of 64 alternatives each. */
        char *many = NULL;
        size_t manylen = 0;
        FILE *m = open_memstream(&many, &manylen);
        for (int line = 0; line < 65; line++) {
                fprintf(m, "deny ioctl if arg1 in {");
                for (int v = 0; v < 64; v++)
                        fprintf(m, "%s%d", v ? ", " : "", line * 64 + v);
                fprintf(m, "}\n");
        }
        fclose(m);
        ck_assert_int_lt(parse_with(many, manylen, NULL, &p, &err), 0);
        ck_assert_str_eq(err.msg, "test.policy:65: the policy has more than 4096 filter rules");
        free(many);

        /* A set that is too large. */
        m = open_memstream(&many, &manylen);
        fprintf(m, "deny ioctl if arg1 in {");
        for (int v = 0; v < 65; v++)
                fprintf(m, "%s%d", v ? ", " : "", v);
        fprintf(m, "}\n");
        fclose(m);
        ck_assert_int_lt(parse_with(many, manylen, NULL, &p, &err), 0);
        ck_assert_str_eq(err.msg, "test.policy:1: a set may hold at most 64 values");
        free(many);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_parse_overlaps_allowed) {
        /* Different actions are fine where the values cannot meet. */
        nsr_policy_free(parse_ok("deny ioctl errno EIO if arg1 == 1\ndeny ioctl errno EXDEV if arg1 == 2\n", NULL));
        nsr_policy_free(parse_ok("deny read errno EIO if arg0 < 5\ndeny read if arg0 >= 5\n", NULL));
        nsr_policy_free(parse_ok("deny socket errno EAFNOSUPPORT if arg0 & 0xffffffff not in {AF_UNIX, AF_NETLINK}\n"
                                 "deny socket errno EPROTONOSUPPORT if arg0 & 0xffffffff == AF_NETLINK and arg2 != 0\n",
                                 NULL));
        nsr_policy_free(parse_ok("deny read if arg1 != 3\nallow read if arg1 == 3\n", NULL));
        /* The same action may overlap anything. */
        nsr_policy_free(parse_ok("deny clone if arg0 & 1\ndeny clone if arg0 & 3\ndeny clone\n", NULL));
        /* Different system calls never overlap. */
        nsr_policy_free(parse_ok("deny read\nallow write\ndeny mount kill if arg0 == 1\n", NULL));
}
END_TEST

START_TEST(test_parse_unknown_to_libseccomp) {
        if (seccomp_syscall_resolve_name("open_tree_attr") != __NR_SCMP_ERROR)
                return; /* this libseccomp knows it: nothing special to test */
        _cleanup_(nsr_policy_freep) nsr_policy *p = parse_ok("deny open_tree_attr\n", NULL);
        ck_assert_int_eq(p->n_rules, 1);
        parse_fails("deny open_tree_attr if arg2 == 1\n", NULL, "test.policy:1: ",
                    "the arguments of open_tree_attr cannot be tested: the installed libseccomp does not know");
}
END_TEST

START_TEST(test_tables) {
        ck_assert_int_eq(nsr_policy_errno_from_name("EPERM"), EPERM);
        ck_assert_int_eq(nsr_policy_errno_from_name("EWOULDBLOCK"), EAGAIN);
        ck_assert_int_eq(nsr_policy_errno_from_name("EBOGUS"), -EINVAL);
        ck_assert_str_eq(nsr_policy_errno_name(EAFNOSUPPORT), "EAFNOSUPPORT");
        ck_assert_str_eq(nsr_policy_errno_name(EAGAIN), "EAGAIN");
        ck_assert_ptr_null(nsr_policy_errno_name(4000));
        uint64_t v;
        ck_assert_int_eq(nsr_policy_constant("TIOCSTI", &v), 0);
        ck_assert_uint_eq(v, TIOCSTI);
        ck_assert_int_eq(nsr_policy_constant("CLONE_NEWUSER", &v), 0);
        ck_assert_uint_eq(v, CLONE_NEWUSER);
        ck_assert_int_eq(nsr_policy_constant("NOPE", &v), -EINVAL);
        ck_assert(nsr_policy_name_valid("default-nested"));
        ck_assert(nsr_policy_name_valid("my_policy.policy"));
        ck_assert(!nsr_policy_name_valid(".."));
        ck_assert(!nsr_policy_name_valid("a/b"));
        ck_assert(!nsr_policy_name_valid(""));
        ck_assert_int_eq(nsr_policy_extra_syscall("open_tree_attr", SCMP_ARCH_X86_64), 467);
        ck_assert_int_eq(nsr_policy_extra_syscall("open_tree_attr", SCMP_ARCH_X32), 467 | 0x40000000);
        ck_assert_int_eq(nsr_policy_extra_syscall("read", SCMP_ARCH_X86_64), -ENOENT);
}
END_TEST

/* ---- compiling ----------------------------------------------------------------- */

START_TEST(test_compile_shipped) {
        if (seccomp_arch_native() != SCMP_ARCH_X86_64)
                return; /* the expectations below use x86 numbers */
        compiled c = compile_shipped("default");
        const uint32_t X64 = SCMP_ARCH_X86_64, I386 = SCMP_ARCH_X86, X32 = SCMP_ARCH_X32;
        const uint64_t HI = 1ull << 32;
        const uint32_t arches[] = { X64, I386, X32 };
        for (size_t i = 0; i < ELEMENTSOF(arches); i++) {
                uint32_t a = arches[i];
                ck_assert_uint_eq(run_call(&c, a, "read", 0, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "ioctl", 1, TIOCSTI, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&c, a, "ioctl", 1, TIOCLINUX, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&c, a, "ioctl", 1, TCGETS, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "mount", 0, 0, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&c, a, "clone", CLONE_NEWUSER | SIGCHLD, 0, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&c, a, "clone", CLONE_VM | CLONE_THREAD | CLONE_SIGHAND, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "unshare", CLONE_NEWUSER | CLONE_NEWNS, 0, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&c, a, "unshare", CLONE_NEWNS, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "clone3", 0, 0, 0), ERRNO(ENOSYS));
                ck_assert_uint_eq(run_call(&c, a, "keyctl", 0, 0, 0), ERRNO(ENOSYS));
                ck_assert_uint_eq(run_call(&c, a, "personality", 0xffffffff, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "personality", PER_LINUX32, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "personality", READ_IMPLIES_EXEC, 0, 0), ERRNO(EPERM));
                /* Linux 6.15's open_tree_attr, unknown to libseccomp 2.5:
                 * handled by nsrun's own instructions on every arch. */
                ck_assert_uint_eq(run_call(&c, a, "open_tree_attr", 0, 0, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&c, a, "ptrace", 0, 0, 0), ALLOW);
        }
        /* 64-bit: garbage in the upper half of an int argument changes
         * nothing, for denying and for allowing. */
        ck_assert_uint_eq(run_call(&c, X64, "ioctl", 1, TIOCSTI | HI, 0), ERRNO(EPERM));
        ck_assert_uint_eq(run_call(&c, X64, "socket", AF_PACKET | HI, 0, 0), ERRNO(EAFNOSUPPORT));
        ck_assert_uint_eq(run_call(&c, X64, "socket", AF_UNIX | HI, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, X64, "personality", READ_IMPLIES_EXEC | HI, 0, 0), ERRNO(EPERM));
        for (size_t i = 0; i < ELEMENTSOF(arches); i++) {
                uint32_t a = arches[i];
                ck_assert_uint_eq(run_call(&c, a, "socket", AF_UNIX, SOCK_STREAM, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "socket", AF_INET6, SOCK_DGRAM, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "socket", AF_NETLINK, SOCK_RAW, 0), ALLOW);
                ck_assert_uint_eq(run_call(&c, a, "socket", AF_NETLINK, SOCK_RAW, 9), ERRNO(EAFNOSUPPORT));
                ck_assert_uint_eq(run_call(&c, a, "socket", AF_PACKET, SOCK_RAW, 0), ERRNO(EAFNOSUPPORT));
                ck_assert_uint_eq(run_call(&c, a, "socket", 99, SOCK_RAW, 0), ERRNO(EAFNOSUPPORT));
        }
        /* i386: socketcall(SYS_SOCKET, ptr) cannot be inspected, so it gets
         * the rules' action whatever the family; other socketcall ops and
         * the old umount stay as they should. */
        ck_assert_uint_eq(run_call(&c, I386, "socketcall", 1 /* SYS_SOCKET */, 0, 0), ERRNO(EAFNOSUPPORT));
        ck_assert_uint_eq(run_call(&c, I386, "socketcall", 3 /* SYS_CONNECT */, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, I386, "umount", 0, 0, 0), ERRNO(EPERM));
        /* An arch the filter does not know is killed. */
        ck_assert_uint_eq(run_nr(&c, AUDIT_ARCH_AARCH64, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
        /* x32 numbers under the x86_64 arch are not x86_64 numbers. */
        ck_assert_uint_eq(run_nr(&c, AUDIT_ARCH_X86_64, nr_of(X32, "mount"), 0, 0), ERRNO(EPERM));
        free(c.data);

        compiled s = compile_shipped("strict");
        for (size_t i = 0; i < ELEMENTSOF(arches); i++) {
                ck_assert_uint_eq(run_call(&s, arches[i], "ptrace", 0, 0, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&s, arches[i], "process_vm_readv", 0, 0, 0), ERRNO(EPERM));
                ck_assert_uint_eq(run_call(&s, arches[i], "mount", 0, 0, 0), ERRNO(EPERM));
        }
        free(s.data);

        compiled n = compile_shipped("default-nested");
        for (size_t i = 0; i < ELEMENTSOF(arches); i++) {
                ck_assert_uint_eq(run_call(&n, arches[i], "mount", 0, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&n, arches[i], "unshare", CLONE_NEWUSER, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&n, arches[i], "clone3", 0, 0, 0), ALLOW);
                ck_assert_uint_eq(run_call(&n, arches[i], "bpf", 0, 0, 0), ERRNO(EPERM));
        }
        free(n.data);

        compiled pm = compile_shipped("permissive");
        ck_assert_uint_eq(run_call(&pm, X64, "bpf", 0, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&pm, X64, "finit_module", 0, 0, 0), ERRNO(EPERM));
        ck_assert_uint_eq(run_call(&pm, I386, "ioctl", 0, TIOCSTI, 0), ERRNO(EPERM));
        free(pm.data);
}
END_TEST

START_TEST(test_compile_32bit_constants) {
        if (seccomp_arch_native() != SCMP_ARCH_X86_64)
                return;
        /* On i386 an argument has no upper half: 0x100000001 can never be
         * passed, and must not turn into 1 (which libseccomp alone would do). */
        compiled c = compile_text("deny personality if arg0 == 0x100000001\n"
                                  "deny ioctl errno EIO if arg1 < 0x100000000\n"
                                  "deny read errno EXDEV if arg0 & 0xf00000001 == 0x1\n",
                                  NULL);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "personality", 0x100000001, 0, 0), ERRNO(EPERM));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "personality", 1, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "personality", 1, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "ioctl", 0, 0xffffffff, 0), ERRNO(EIO));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "ioctl", 0, 0x100000000, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "read", 0x1, 0, 0), ERRNO(EXDEV));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "read", 0x3, 0, 0), ERRNO(EXDEV));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "read", 0x100000001, 0, 0), ALLOW);
        free(c.data);
}
END_TEST

START_TEST(test_compile_socketcall) {
        if (seccomp_arch_native() != SCMP_ARCH_X86_64)
                return;
        const uint32_t I386 = SCMP_ARCH_X86;
        /* Mixed actions on socket: i386 gets the first, most restrictive one
         * for both entry points; x86_64 stays precise. */
        compiled c = compile_text("deny socket errno EIO if arg0 == 5\ndeny socket errno EXDEV if arg0 == 6\n"
                                  "deny accept4 errno ENOTSOCK if arg3 & 1\n"
                                  "deny shmctl errno EIDRM if arg1 == 0\n",
                                  NULL);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "socket", 6, 0, 0), ERRNO(EXDEV));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "socket", 1, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, I386, "socket", 1, 0, 0), ERRNO(EIO));
        ck_assert_uint_eq(run_call(&c, I386, "socketcall", 1, 0, 0), ERRNO(EIO));
        /* One action: direct calls stay precise, the multiplexed op is
         * blocked. The op numbers are SYS_ACCEPT4 (18) and SHMCTL (24). */
        struct seccomp_data d4 = { .nr = nr_of(I386, "accept4"), .arch = I386, .args = { 3, 0, 0, 1 } };
        ck_assert_uint_eq(bpf_run(c.data, c.len, &d4), ERRNO(ENOTSOCK));
        d4.args[3] = 2;
        ck_assert_uint_eq(bpf_run(c.data, c.len, &d4), ALLOW);
        ck_assert_uint_eq(run_call(&c, I386, "shmctl", 5, 0, 0), ERRNO(EIDRM));
        ck_assert_uint_eq(run_call(&c, I386, "shmctl", 5, 2, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, I386, "socketcall", 18, 0, 0), ERRNO(ENOTSOCK));
        ck_assert_uint_eq(run_call(&c, I386, "socketcall", 5 /* SYS_ACCEPT */, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, I386, "ipc", 24, 0, 0), ERRNO(EIDRM));
        ck_assert_uint_eq(run_call(&c, I386, "ipc", 23 /* SHMGET */, 0, 0), ALLOW);
        free(c.data);

        /* Allow rules in a default-deny policy: the i386 socketcall copy
         * must not let every family through. */
        compiled d = compile_text("default deny errno EACCES\nallow read\nallow socket if arg0 == 1\n", NULL);
        ck_assert_uint_eq(run_call(&d, SCMP_ARCH_X86_64, "socket", 1, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&d, SCMP_ARCH_X86_64, "socket", 2, 0, 0), ERRNO(EACCES));
        ck_assert_uint_eq(run_call(&d, I386, "socketcall", 1, 0, 0), ERRNO(EACCES));
        ck_assert_uint_eq(run_call(&d, I386, "socket", 2, 0, 0), ERRNO(EACCES));
        ck_assert_uint_eq(run_call(&d, I386, "read", 0, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&d, SCMP_ARCH_X86_64, "write", 0, 0, 0), ERRNO(EACCES));
        free(d.data);
}
END_TEST

/* A "not in" set over the low 32 bits, a line's only test, is tested by
 * nsrun's own instructions (compile.c, build_prefix) rather than libseccomp's
 * rules for its complement, up to 32 a value: the same answers on every arch
 * (i386's direct socket call included, its socketcall op blocked whole),
 * garbage in an argument's upper half ignored, and a far smaller program. */
START_TEST(test_compile_sets) {
        if (seccomp_arch_native() != SCMP_ARCH_X86_64)
                return;
        compiled c = compile_text(
                "deny personality errno EIO if arg0 & 0xffffffff not in {0, 8, 0x20000, 0x20008, 0xffffffff}\n"
                "deny socket errno EAFNOSUPPORT if arg0 & 0xffff not in {1, 2, 10, 16}\n"
                "deny read errno EXDEV if arg1 & 0xff00 != 0x100\n"
                "deny unshare if arg0 & 0x10000000\n",
                NULL);
        /* libseccomp's complements of the first three: over 600. */
        ck_assert_uint_lt(c.len / sizeof(struct sock_filter), 250);
        const uint32_t arches[] = { SCMP_ARCH_X86_64, SCMP_ARCH_X86, SCMP_ARCH_X32 };
        const uint64_t probes[] = { 0,          1,          2,          3,          8,         9,       10,
                                    16,         17,         0x100,      0x1ff,      0x101,     0x200,   0xff00,
                                    0x10001,    0x10010,    0x1000a,    0x20000,    0x20008,   0x20001, 0x7fffffff,
                                    0x80000000, 0xfffffffe, 0xffffffff, 0x10000000, 0x10000001 };
        for (size_t a = 0; a < ELEMENTSOF(arches); a++)
                for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                        for (int hi = 0; hi < (arches[a] == SCMP_ARCH_X86 ? 1 : 2); hi++) {
                                uint64_t v = probes[i] | (hi ? UINT64_C(0xdead) << 32 : 0);
                                uint32_t lo = (uint32_t) probes[i];
                                bool pers_ok = lo == 0 || lo == 8 || lo == 0x20000 || lo == 0x20008 || lo == 0xffffffff;
                                bool fam_ok = (lo & 0xffff) == 1 || (lo & 0xffff) == 2 || (lo & 0xffff) == 10 ||
                                              (lo & 0xffff) == 16;
                                ck_assert_uint_eq(run_call(&c, arches[a], "personality", v, 0, 0),
                                                  pers_ok ? ALLOW : ERRNO(EIO));
                                ck_assert_uint_eq(run_call(&c, arches[a], "socket", v, 1, 0),
                                                  fam_ok ? ALLOW : ERRNO(EAFNOSUPPORT));
                                ck_assert_uint_eq(run_call(&c, arches[a], "read", 3, v, 0),
                                                  (lo & 0xff00) == 0x100 ? ALLOW : ERRNO(EXDEV));
                                ck_assert_uint_eq(run_call(&c, arches[a], "unshare", v, 0, 0),
                                                  (lo & 0x10000000) ? ERRNO(EPERM) : ALLOW);
                        }
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "socketcall", 1 /* SYS_SOCKET */, 0, 0), ERRNO(EAFNOSUPPORT));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "socketcall", 3 /* SYS_CONNECT */, 0, 0), ALLOW);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "write", 0, 0, 0), ALLOW);
        ck_assert_uint_eq(run_nr(&c, AUDIT_ARCH_AARCH64, 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
        free(c.data);

        /* Sets on several arguments of one call (best-effort mode's
         * --allow-host filter): a value inside one set goes on to the
         * others, and any that it is outside of refuses the call. */
        c = compile_text("deny socket errno EACCES if arg0 & 0xffffffff not in {2, 10}\n"
                         "deny socket errno EACCES if arg1 & 0xf != 1\n"
                         "deny socket errno EACCES if arg2 & 0xffffffff not in {0, 6}\n",
                         NULL);
        for (size_t a = 0; a < ELEMENTSOF(arches); a++)
                for (uint64_t fam = 0; fam < 12; fam++)
                        for (uint64_t type = 0; type < 4; type++)
                                for (uint64_t proto = 0; proto < 8; proto++) {
                                        bool ok = (fam == 2 || fam == 10) && type == 1 && (proto == 0 || proto == 6);
                                        ck_assert_uint_eq(run_call(&c, arches[a], "socket", fam, type | 0x80000, proto),
                                                          ok ? ALLOW : ERRNO(EACCES));
                                }
        free(c.data);

        /* A set with a precondition on another argument (default.policy's
         * netlink line), either way round, beside a set on the same call:
         * the set is tested only where the precondition holds, on the low
         * words alone, and the program is small (libseccomp's complement
         * of "!= 0" is 32 rules). */
        const char *pre_first = "deny socket errno EAFNOSUPPORT if arg0 & 0xffffffff not in {1, 2, 10, 16}\n"
                                "deny socket errno EAFNOSUPPORT if arg0 & 0xffffffff == 16 and arg2 & 0xffffffff "
                                "not in {0, 9}\n"
                                "deny read errno EXDEV if arg2 & 0xf0 != 0x10 and arg0 & 0xff == 7\n";
        c = compile_text(pre_first, NULL);
        ck_assert_uint_lt(c.len / sizeof(struct sock_filter), 120);
        for (size_t a = 0; a < ELEMENTSOF(arches); a++)
                for (int hi = 0; hi < (arches[a] == SCMP_ARCH_X86 ? 1 : 2); hi++) {
                        uint64_t junk = hi ? UINT64_C(0xdead) << 32 : 0;
                        for (uint64_t fam = 0; fam < 20; fam++)
                                for (uint64_t proto = 0; proto < 12; proto++) {
                                        bool fam_ok = fam == 1 || fam == 2 || fam == 10 || fam == 16;
                                        bool ok = fam_ok && (fam != 16 || proto == 0 || proto == 9);
                                        ck_assert_uint_eq(
                                                run_call(&c, arches[a], "socket", fam | junk, 3, proto | junk),
                                                ok ? ALLOW : ERRNO(EAFNOSUPPORT));
                                }
                        for (uint64_t fd = 0; fd < 0x300; fd += 0x7f)
                                for (uint64_t v = 0; v < 0x40; v += 3) {
                                        bool deny = (fd & 0xff) == 7 && (v & 0xf0) != 0x10;
                                        ck_assert_uint_eq(run_call(&c, arches[a], "read", fd | junk, 0, v | junk),
                                                          deny ? ERRNO(EXDEV) : ALLOW);
                                }
                        ck_assert_uint_eq(run_call(&c, arches[a], "read", 7 | junk, 0, 0x20 | junk), ERRNO(EXDEV));
                        ck_assert_uint_eq(run_call(&c, arches[a], "read", 7 | junk, 0, 0x1f | junk), ALLOW);
                        ck_assert_uint_eq(run_call(&c, arches[a], "read", 8 | junk, 0, 0x20 | junk), ALLOW);
                }
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "socketcall", 1 /* SYS_SOCKET */, 0, 0), ERRNO(EAFNOSUPPORT));
        free(c.data);
}
END_TEST

START_TEST(test_compile_actions) {
        if (seccomp_arch_native() != SCMP_ARCH_X86_64)
                return;
        compiled c = compile_text("deny reboot kill\ndeny acct log\ndeny swapon errno 77\nallow read\n"
                                  "deny open_tree_attr kill\n",
                                  NULL);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "reboot", 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86, "acct", 0, 0, 0), SECCOMP_RET_LOG);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X32, "swapon", 0, 0, 0), ERRNO(77));
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X32, "open_tree_attr", 0, 0, 0), SECCOMP_RET_KILL_PROCESS);
        ck_assert_uint_eq(run_call(&c, SCMP_ARCH_X86_64, "read", 0, 0, 0), ALLOW);
        free(c.data);
}
END_TEST

START_TEST(test_compile_too_big) {
        /* Enough distinct values to pass the kernel's 4096 instructions
         * (libseccomp shares what the arches have in common, so fewer
         * would still fit). */
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        for (int line = 0; line < 64; line++) {
                fprintf(m, "deny ioctl if arg1 in {");
                for (int v = 0; v < 64; v++)
                        fprintf(m, "%s%d", v ? ", " : "", line * 64 + v);
                fprintf(m, "}\n");
        }
        fclose(m);
        _cleanup_(nsr_policy_freep) nsr_policy *p = parse_ok(text, NULL);
        free(text);
        char *data = NULL;
        size_t n = 0;
        nsr_error err = { 0 };
        ck_assert_int_lt(nsr_seccomp_compile(p, &data, &n, &err), 0);
        ck_assert_msg(strstr(err.msg, "instructions; the kernel allows at most 4096"), "%s", err.msg);
        ck_assert_ptr_null(data);
}
END_TEST

/* ---- finding policies and the cache ------------------------------------------ */

START_TEST(test_policy_path) {
        setenv("NSRUN_DATADIR", "/data", 1);
        nsr_error err = { 0 };
        char *path = NULL;
        ck_assert_int_eq(nsr_seccomp_policy_path("default", &path, &err), 0);
        ck_assert_str_eq(path, "/data/seccomp/default.policy");
        free(path);
        ck_assert_int_eq(nsr_seccomp_policy_path("strict.policy", &path, &err), 0);
        ck_assert_str_eq(path, "/data/seccomp/strict.policy");
        free(path);
        ck_assert_int_eq(nsr_seccomp_policy_path("./mine.policy", &path, &err), 0);
        ck_assert_str_eq(path, "./mine.policy");
        free(path);
        ck_assert_int_lt(nsr_seccomp_policy_path("..", &path, &err), 0);
        ck_assert(strstr(err.msg, "invalid seccomp policy name '..'"));
        ck_assert_int_lt(nsr_seccomp_policy_load("no-such-policy", &(nsr_policy *){ NULL }, &err), 0);
        ck_assert_str_eq(err.msg, "no seccomp policy called 'no-such-policy' (looked for "
                                  "/data/seccomp/no-such-policy.policy)");
}
END_TEST

static char *scratch_dir(void) {
        char tmpl[] = "/tmp/nsr-check-seccomp.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(tmpl));
        return nsr_strdup(tmpl);
}

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

START_TEST(test_load_includes_from_disk) {
        _cleanup_free_ char *dir = scratch_dir();
        _cleanup_free_ char *shipped = nsr_path_join(dir, "seccomp");
        _cleanup_free_ char *mine = nsr_path_join(dir, "mine");
        ck_assert_int_eq(mkdir(shipped, 0700), 0);
        ck_assert_int_eq(mkdir(mine, 0700), 0);
        _cleanup_free_ char *f1 = nsr_path_join(shipped, "base.policy");
        _cleanup_free_ char *f2 = nsr_path_join(mine, "top.policy");
        _cleanup_free_ char *f3 = nsr_path_join(mine, "local.policy");
        write_text(f1, "deny mount\n");
        write_text(f2, "include local\ninclude base\n");
        write_text(f3, "deny reboot\n");
        setenv("NSRUN_DATADIR", dir, 1);
        nsr_error err = { 0 };
        _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
        /* local.policy comes from next to top.policy, base.policy from the
         * shipped directory. */
        ck_assert_msg(nsr_seccomp_policy_load(f2, &p, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(p->n_rules, 2);
        ck_assert_str_eq(p->files[p->rules[0].file], f3);
        ck_assert_str_eq(p->files[p->rules[1].file], f1);
        write_text(f3, "include nowhere\n");
        nsr_policy *q = NULL;
        ck_assert_int_lt(nsr_seccomp_policy_load(f2, &q, &err), 0);
        ck_assert_msg(nsr_startswith(err.msg, f3) && strstr(err.msg, ":1: cannot include 'nowhere'"), "%s", err.msg);
        unlink(f1);
        unlink(f2);
        unlink(f3);
        rmdir(shipped);
        rmdir(mine);
        rmdir(dir);
}
END_TEST

START_TEST(test_cache) {
        _cleanup_free_ char *dir = scratch_dir();
        setenv("XDG_CACHE_HOME", dir, 1);
        uint8_t key[NSR_SHA256_SIZE] = { 1, 2, 3 };
        char data[16] = "0123456789abcdef", *got = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_seccomp_cache_lookup(key, &got, &len), -ENOENT);
        ck_assert_int_eq(nsr_seccomp_cache_store(key, data, 12), -EINVAL); /* not whole instructions */
        ck_assert_int_eq(nsr_seccomp_cache_store(key, data, sizeof(data)), 0);
        ck_assert_int_eq(nsr_seccomp_cache_lookup(key, &got, &len), 0);
        ck_assert_int_eq(len, sizeof(data));
        ck_assert_mem_eq(got, data, len);
        free(got);

        char hex[2 * NSR_SHA256_SIZE + 1];
        nsr_sha256_hex(key, hex);
        _cleanup_free_ char *sub = nsr_asprintf("%s/nsrun/seccomp", dir);
        _cleanup_free_ char *file = nsr_asprintf("%s/%s.bpf", sub, hex);
        struct stat st;
        ck_assert_int_eq(stat(file, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        ck_assert_int_eq(stat(sub, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0700);

        /* Another key misses. */
        uint8_t other[NSR_SHA256_SIZE] = { 9 };
        ck_assert_int_eq(nsr_seccomp_cache_lookup(other, &got, &len), -ENOENT);
        /* A flipped byte fails the checksum; a torn file fails the length. */
        int fd = open(file, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(pwrite(fd, "X", 1, st.st_size - 1), 1);
        ck_assert_int_eq(nsr_seccomp_cache_lookup(key, &got, &len), -EBADMSG);
        ck_assert_int_eq(ftruncate(fd, st.st_size - 3), 0);
        close(fd);
        ck_assert_int_eq(nsr_seccomp_cache_lookup(key, &got, &len), -EBADMSG);
        /* A writable entry, or a writable directory, is not trusted. */
        ck_assert_int_eq(nsr_seccomp_cache_store(key, data, sizeof(data)), 0);
        ck_assert_int_eq(chmod(file, 0622), 0);
        ck_assert_int_eq(nsr_seccomp_cache_lookup(key, &got, &len), -EPERM);
        ck_assert_int_eq(chmod(file, 0600), 0);
        ck_assert_int_eq(chmod(sub, 0777), 0);
        ck_assert_int_eq(nsr_seccomp_cache_lookup(key, &got, &len), -EPERM);
        ck_assert_int_eq(nsr_seccomp_cache_store(key, data, sizeof(data)), -EPERM);
        ck_assert_int_eq(chmod(sub, 0700), 0);
        /* Entries owned by someone else are checked in the integration
         * tests, which run as root. */

        /* The end-to-end path: compile, store, then hit. */
        const char *src = getenv("NSR_SRCDIR");
        setenv("NSRUN_DATADIR", src ? src : ".", 1);
        nsr_error err = { 0 };
        char *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        ck_assert_msg(nsr_seccomp_policy_bpf("permissive", &a, &alen, &err) == 0, "%s", err.msg);
        _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
        ck_assert_int_eq(nsr_seccomp_policy_load("permissive", &p, &err), 0);
        uint8_t pkey[NSR_SHA256_SIZE];
        ck_assert_int_eq(nsr_seccomp_cache_key(p, pkey), 0);
        ck_assert_int_eq(nsr_seccomp_cache_lookup(pkey, &b, &blen), 0);
        ck_assert_int_eq(alen, blen);
        ck_assert_mem_eq(a, b, alen);
        free(b);
        ck_assert_int_eq(nsr_seccomp_policy_bpf("permissive", &b, &blen, &err), 0);
        ck_assert_mem_eq(a, b, alen);
        free(a);
        free(b);
        /* The key depends on the text. */
        _cleanup_(nsr_policy_freep) nsr_policy *q = parse_ok("deny mount\n", NULL);
        uint8_t qkey[NSR_SHA256_SIZE];
        ck_assert_int_eq(nsr_seccomp_cache_key(q, qkey), 0);
        ck_assert(memcmp(pkey, qkey, NSR_SHA256_SIZE) != 0);

        /* A relative XDG_CACHE_HOME is ignored, as the spec says; HOME is used. */
        setenv("XDG_CACHE_HOME", "relative", 1);
        setenv("HOME", dir, 1);
        ck_assert_int_eq(nsr_seccomp_cache_store(key, data, sizeof(data)), 0);
        _cleanup_free_ char *viahome = nsr_asprintf("%s/.cache/nsrun/seccomp/%s.bpf", dir, hex);
        ck_assert_int_eq(access(viahome, F_OK), 0);

        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_cache_trim) {
        _cleanup_free_ char *dir = scratch_dir();
        setenv("XDG_CACHE_HOME", dir, 1);
        char data[8] = { 0 };
        for (unsigned i = 0; i < NSR_SECCOMP_CACHE_MAX + 5; i++) {
                uint8_t key[NSR_SHA256_SIZE] = { (uint8_t) i, (uint8_t) (i >> 8), 7 };
                ck_assert_int_eq(nsr_seccomp_cache_store(key, data, sizeof(data)), 0);
        }
        _cleanup_free_ char *cmd =
                nsr_asprintf("test $(ls '%s/nsrun/seccomp' | wc -l) -le %u", dir, NSR_SECCOMP_CACHE_MAX);
        ck_assert_int_eq(system(cmd), 0);
        free(cmd);
        cmd = nsr_asprintf("rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- the cache index --------------------------------------------------------- */

/* The only .idx file in the cache under dir (the tests use one policy name
 * per cache). */
static char *index_file(const char *cache) {
        _cleanup_free_ char *sub = nsr_path_join(cache, "nsrun/seccomp");
        DIR *d = opendir(sub);
        ck_assert_ptr_nonnull(d);
        char *found = NULL;
        struct dirent *e;
        while ((e = readdir(d)))
                if (nsr_endswith(e->d_name, ".idx")) {
                        ck_assert_ptr_null(found);
                        found = nsr_path_join(sub, e->d_name);
                }
        closedir(d);
        ck_assert_ptr_nonnull(found);
        return found;
}

/* Rewrites a file in place with text of the same length and puts its mtime
 * back: only the ctime tells the change. Waits for the ctime to differ (a
 * coarse clock may give the same value within one tick), never a fixed
 * time. */
static void edit_in_place(const char *path, const char *text) {
        struct stat before, after;
        ck_assert_int_eq(stat(path, &before), 0);
        ck_assert_int_eq((size_t) before.st_size, strlen(text));
        for (unsigned tries = 0;; tries++) {
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(pwrite(fd, text, strlen(text), 0), (ssize_t) strlen(text));
                struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, before.st_mtim };
                ck_assert_int_eq(futimens(fd, t), 0);
                close(fd);
                ck_assert_int_eq(stat(path, &after), 0);
                if (after.st_ctim.tv_sec != before.st_ctim.tv_sec || after.st_ctim.tv_nsec != before.st_ctim.tv_nsec)
                        break;
                ck_assert_int_lt(tries, 5000);
                usleep(1000);
        }
        ck_assert_int_eq(after.st_ino, before.st_ino);
        ck_assert_int_eq(after.st_size, before.st_size);
        ck_assert_int_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
        ck_assert_int_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

/* A launch's program, and the index entry it leaves (settle time 0). */
static void launch_and_check(const char *policy, const char *expect_text) {
        nsr_error err = { 0 };
        char *got = NULL, *want = NULL;
        size_t got_len = 0, want_len = 0;
        ck_assert_msg(nsr_seccomp_policy_bpf(policy, &got, &got_len, &err) == 0, "%s", err.msg);
        _cleanup_(nsr_policy_freep) nsr_policy *p = parse_ok(expect_text, NULL);
        ck_assert_msg(nsr_seccomp_compile(p, &want, &want_len, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(got_len, want_len);
        ck_assert_mem_eq(got, want, got_len);
        free(got);
        free(want);
        /* The full load's digest is the one the index gives now. */
        _cleanup_(nsr_policy_freep) nsr_policy *q = NULL;
        ck_assert_msg(nsr_seccomp_policy_load(policy, &q, &err) == 0, "%s", err.msg);
        uint8_t d[NSR_SHA256_SIZE];
        ck_assert_int_eq(nsr_seccomp_index_lookup(policy, d), 0);
        ck_assert_mem_eq(d, q->digest, NSR_SHA256_SIZE);
}

START_TEST(test_index) {
        _cleanup_free_ char *dir = scratch_dir();
        _cleanup_free_ char *cache = nsr_path_join(dir, "cache");
        _cleanup_free_ char *data = nsr_path_join(dir, "data");
        _cleanup_free_ char *shipped = nsr_path_join(dir, "data/seccomp");
        _cleanup_free_ char *mine = nsr_path_join(dir, "mine");
        ck_assert_int_eq(mkdir(data, 0700), 0);
        ck_assert_int_eq(mkdir(shipped, 0700), 0);
        ck_assert_int_eq(mkdir(mine, 0700), 0);
        _cleanup_free_ char *base = nsr_path_join(shipped, "base.policy");
        _cleanup_free_ char *top = nsr_path_join(mine, "top.policy");
        _cleanup_free_ char *local = nsr_path_join(mine, "local.policy");
        _cleanup_free_ char *shadow = nsr_path_join(mine, "base.policy");
        write_text(base, "deny mount\n");
        write_text(top, "include local\ninclude base\n");
        write_text(local, "deny reboot\n");
        setenv("XDG_CACHE_HOME", cache, 1);
        setenv("NSRUN_DATADIR", data, 1);
        setenv("NSRUN_TEST_INDEX_SETTLE_MS", "0", 1);
        uint8_t d[NSR_SHA256_SIZE];

        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ENOENT);
        launch_and_check(top, "deny reboot\ndeny mount\n");
        /* Unchanged files: a hit, again and again. */
        launch_and_check(top, "deny reboot\ndeny mount\n");

        /* Same size, mtime put back: only the ctime differs. */
        edit_in_place(local, "deny swapon\n");
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny mount\n");
        /* The included shipped file, edited the same way. */
        edit_in_place(base, "deny chown\n");
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny chown\n");
        /* Size. */
        write_text(local, "deny swapon\ndeny swapoff\n");
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny swapoff\ndeny chown\n");
        /* mtime alone (utimensat also moves the ctime; the entry must miss
         * either way). */
        struct timespec old[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };
        ck_assert_int_eq(utimensat(AT_FDCWD, local, old, 0), 0);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny swapoff\ndeny chown\n");
        /* Another file (another inode) put in place by a rename. */
        _cleanup_free_ char *tmp = nsr_path_join(mine, "local.tmp");
        write_text(tmp, "deny swapon\ndeny acct\n");
        ck_assert_int_eq(rename(tmp, local), 0);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");
        /* An include candidate that was missing appears: base.policy next
         * to top.policy now shadows the shipped one. */
        write_text(shadow, "deny chroot\n");
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chroot\n");
        /* A file that was read is gone: a miss, and the full path fails. */
        ck_assert_int_eq(unlink(shadow), 0);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");
        _cleanup_free_ char *moved = nsr_path_join(mine, "local.away");
        ck_assert_int_eq(rename(local, moved), 0);
        ck_assert_int_lt(nsr_seccomp_index_lookup(top, d), 0);
        nsr_error err = { 0 };
        char *bpf = NULL;
        size_t len = 0;
        ck_assert_int_lt(nsr_seccomp_policy_bpf(top, &bpf, &len, &err), 0);
        ck_assert_msg(strstr(err.msg, "cannot include 'local'"), "%s", err.msg);
        ck_assert_int_eq(rename(moved, local), 0);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");

        /* The name and the shipped dir are part of the slot: a name has an
         * entry of its own, and another NSRUN_DATADIR (with the same files)
         * has none yet. */
        ck_assert_int_eq(nsr_seccomp_index_lookup("base", d), -ENOENT);
        _cleanup_free_ char *data2 = nsr_path_join(dir, "data2");
        _cleanup_free_ char *cmd = nsr_asprintf("cp -a '%s' '%s'", data, data2);
        ck_assert_int_eq(system(cmd), 0);
        setenv("NSRUN_DATADIR", data2, 1);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ENOENT);
        setenv("NSRUN_DATADIR", data, 1);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), 0);

        /* A corrupt entry is ignored; the full path works and rewrites it. */
        _cleanup_free_ char *idx = index_file(cache);
        struct stat st;
        ck_assert_int_eq(stat(idx, &st), 0);
        int fd = open(idx, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(pwrite(fd, "X", 1, st.st_size / 2), 1);
        close(fd);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -EBADMSG);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");
        ck_assert_int_eq(truncate(idx, st.st_size - 1), 0);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -EBADMSG);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");
        /* One others may write, or someone else's, is not trusted. */
        ck_assert_int_eq(chmod(idx, 0622), 0);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -EPERM);
        launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");
        ck_assert_int_eq(stat(idx, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        if (geteuid() == 0) {
                ck_assert_int_eq(chown(idx, 65534, 65534), 0);
                ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -EPERM);
                launch_and_check(top, "deny swapon\ndeny acct\ndeny chown\n");
                ck_assert_int_eq(stat(idx, &st), 0);
                ck_assert_int_eq(st.st_uid, 0);
        } else
                fprintf(stderr, "check-seccomp: skipped a foreign-owned index entry: only root can give a file away\n");

        /* A file changed less than the settle time ago is never indexed:
         * its ctime could repeat within the same clock tick. */
        setenv("NSRUN_TEST_INDEX_SETTLE_MS", "3600000", 1);
        edit_in_place(local, "deny swapon\ndeny sync\n");
        ck_assert_int_eq(nsr_seccomp_policy_bpf(top, &bpf, &len, &err), 0);
        free(bpf);
        ck_assert_int_eq(nsr_seccomp_index_lookup(top, d), -ESTALE);
        unsetenv("NSRUN_TEST_INDEX_SETTLE_MS");

        free(cmd);
        cmd = nsr_asprintf("rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("seccomp");
        TCase *tc = tcase_create("sha256");
        tcase_add_test(tc, test_sha256_vectors);
        suite_add_tcase(s, tc);

        tc = tcase_create("parse");
        tcase_add_test(tc, test_parse_basic);
        tcase_add_test(tc, test_parse_default);
        tcase_add_test(tc, test_parse_conditions);
        tcase_add_test(tc, test_parse_expansion_exact);
        tcase_add_test(tc, test_parse_include);
        tcase_add_test(tc, test_parse_digest);
        tcase_add_test(tc, test_parse_errors);
        tcase_add_test(tc, test_parse_errors_includes);
        tcase_add_test(tc, test_parse_errors_limits);
        tcase_add_test(tc, test_parse_overlaps_allowed);
        tcase_add_test(tc, test_parse_unknown_to_libseccomp);
        tcase_add_test(tc, test_tables);
        suite_add_tcase(s, tc);

        tc = tcase_create("compile");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_compile_shipped);
        tcase_add_test(tc, test_compile_32bit_constants);
        tcase_add_test(tc, test_compile_socketcall);
        tcase_add_test(tc, test_compile_sets);
        tcase_add_test(tc, test_compile_actions);
        tcase_add_test(tc, test_compile_too_big);
        suite_add_tcase(s, tc);

        tc = tcase_create("files");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_policy_path);
        tcase_add_test(tc, test_load_includes_from_disk);
        tcase_add_test(tc, test_cache);
        tcase_add_test(tc, test_cache_trim);
        tcase_add_test(tc, test_index);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
