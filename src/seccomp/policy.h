/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seccomp policy language (man/nsrun-policy.5): text in, a flat list of
 * rules out.
 *
 * The parser is pure: it reads a FILE *, asks a loader for included files,
 * and touches nothing else. It resolves system call names through
 * libseccomp's tables (no system calls) and constants through its own
 * table. Every error carries "file:line: ".
 *
 * The result is already expanded into the shape libseccomp takes: each rule
 * is one system call, one action and a conjunction of at most one comparison
 * per argument. A source line such as
 *     deny socket if arg0 & 0xffffffff not in {AF_UNIX, AF_INET}
 * becomes several rules, because libseccomp can only AND comparisons. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "base/sha256.h"

/* Limits: every one of them is user-controlled input. */
#define NSR_POLICY_LINE_MAX      4096       /* bytes in one line */
#define NSR_POLICY_FILE_MAX      (1u << 20) /* bytes in one file */
#define NSR_POLICY_INCLUDE_DEPTH 8          /* nested includes */
#define NSR_POLICY_SET_MAX       64         /* values in one {...} set */
#define NSR_POLICY_EXPAND_MAX    1024       /* rules one line may expand to */
#define NSR_POLICY_RULES_MAX     4096       /* rules in a whole policy */
#define NSR_POLICY_ARGS          6          /* arg0 .. arg5 */

/* Ordered from the least to the most restrictive; the order matters where
 * nsrun has to pick one action for calls it cannot tell apart (i386
 * socketcall, see compile.c). */
typedef enum nsr_policy_verdict {
        NSR_POLICY_ALLOW,
        NSR_POLICY_LOG,   /* allow, and log through the audit subsystem */
        NSR_POLICY_ERRNO, /* fail with errnum */
        NSR_POLICY_KILL,  /* kill the whole process */
        _NSR_POLICY_VERDICT_MAX,
        _NSR_POLICY_VERDICT_INVALID = -EINVAL,
} nsr_policy_verdict;

typedef struct nsr_policy_action {
        nsr_policy_verdict verdict;
        int errnum; /* NSR_POLICY_ERRNO only */
} nsr_policy_action;

/* The comparisons libseccomp can do, one-to-one with its SCMP_CMP_*. */
typedef enum nsr_policy_op {
        NSR_POLICY_OP_EQ,
        NSR_POLICY_OP_NE,
        NSR_POLICY_OP_LT,
        NSR_POLICY_OP_LE,
        NSR_POLICY_OP_GT,
        NSR_POLICY_OP_GE,
        NSR_POLICY_OP_MASKED_EQ, /* (arg & mask) == value */
        _NSR_POLICY_OP_MAX,
        _NSR_POLICY_OP_INVALID = -EINVAL,
} nsr_policy_op;

typedef struct nsr_policy_cmp {
        unsigned arg; /* 0 .. 5 */
        nsr_policy_op op;
        uint64_t mask; /* NSR_POLICY_OP_MASKED_EQ only */
        uint64_t value;
} nsr_policy_cmp;

typedef struct nsr_policy_rule {
        char *syscall;
        nsr_policy_action action;
        unsigned n_cmp;
        nsr_policy_cmp cmp[NSR_POLICY_ARGS]; /* ANDed; sorted by arg, one per arg */
        size_t file;                         /* index into nsr_policy.files */
        unsigned line;
        unsigned set; /* the nsr_policy_set it expands, counted from 1; 0: none */
} nsr_policy_rule;

/* A line whose only test is "arg & MASK not in {...}" (or "!="), with a
 * mask in the low 32 bits, or whose other test is one such equality on
 * another argument ("argN & MASK == VALUE", the set's precondition). Its
 * rules are the set's complement as masked equalities, up to 32 per value
 * (each with the precondition), which is what libseccomp can take; the
 * compiler may test the set itself instead, in a few instructions of its
 * own (compile.c). */
typedef struct nsr_policy_set {
        unsigned arg;
        uint32_t mask;
        uint32_t values[NSR_POLICY_SET_MAX];
        size_t n_values;
        bool has_pre; /* and only where arg pre_arg & pre_mask == pre_value */
        unsigned pre_arg;
        uint32_t pre_mask, pre_value;
} nsr_policy_set;

typedef struct nsr_policy {
        nsr_policy_action default_action; /* allow unless a "default" line says otherwise */
        nsr_policy_rule *rules;           /* in source order, includes expanded in place */
        size_t n_rules;
        nsr_policy_set *sets; /* see nsr_policy_rule.set */
        size_t n_sets;
        char **files; /* every file read, in order (names for messages) */
        /* SHA-256 over the text of every file read, in order: the policy's
         * identity for the compile cache. */
        uint8_t digest[NSR_SHA256_SIZE];
} nsr_policy;

/* Opens the file an "include NAME" line names. from is the path of the
 * including file, as the loader itself returned it (or as given to
 * nsr_policy_parse). On success returns 0 with *ret_f open for reading and
 * *ret_path set to a name that identifies the file (it is used in messages
 * and to detect include cycles). */
typedef struct nsr_policy_loader {
        int (*open)(void *userdata, const char *from, const char *name, FILE **ret_f, char **ret_path, nsr_error *err);
        void *userdata;
} nsr_policy_loader;

/* Parses a policy read from f, called path in messages. loader may be NULL,
 * in which case any include line is an error. */
int nsr_policy_parse(FILE *f, const char *path, const nsr_policy_loader *loader, nsr_policy **ret, nsr_error *err);
nsr_policy *nsr_policy_free(nsr_policy *p);
DEFINE_CLEANUP_FUNC(nsr_policy *, nsr_policy_free)

/* True when "include NAME" may name this: letters, digits, '_', '-', '.',
 * not starting with '.' (so never "..", never a path). */
bool nsr_policy_name_valid(const char *name);

/* Name tables, shared with the front end and the tests. */
int nsr_policy_errno_from_name(const char *name);         /* errno value or -EINVAL */
const char *nsr_policy_errno_name(int errnum);            /* NULL when unknown */
int nsr_policy_constant(const char *name, uint64_t *ret); /* 0 or -EINVAL */

/* A system call's number on the given libseccomp arch, for names that the
 * installed libseccomp does not know yet (system calls added after it was
 * released). Returns the number, or -ENOENT. */
int nsr_policy_extra_syscall(const char *name, uint32_t arch);
/* True when libseccomp or the table above knows the name. */
bool nsr_policy_syscall_known(const char *name);

/* Formats a rule the way a policy would spell it (one expanded rule, so
 * possibly not the line that produced it), for messages and "check -v". */
void nsr_policy_format_rule(const nsr_policy_rule *r, char *buf, size_t len);
const char *nsr_policy_action_to_string(const nsr_policy_action *a, char *buf, size_t len);
bool nsr_policy_action_equal(const nsr_policy_action *a, const nsr_policy_action *b);
