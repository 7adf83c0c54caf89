/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy language parser: text to a flat rule list, checked for
 * overlaps; and rules and actions as text. See policy.h for the shape of
 * the result and man/nsrun-policy.5 for the language; its names are
 * policynames.c's. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seccomp/policy-internal.h"
#include "seccomp/policy.h"

bool nsr_policy_action_equal(const nsr_policy_action *a, const nsr_policy_action *b) {
        if (a->verdict != b->verdict)
                return false;
        return a->verdict != NSR_POLICY_ERRNO || a->errnum == b->errnum;
}

const char *nsr_policy_action_to_string(const nsr_policy_action *a, char *buf, size_t len) {
        switch (a->verdict) {
        case NSR_POLICY_ALLOW:
                snprintf(buf, len, "allow");
                break;
        case NSR_POLICY_LOG:
                snprintf(buf, len, "deny log");
                break;
        case NSR_POLICY_KILL:
                snprintf(buf, len, "deny kill");
                break;
        case NSR_POLICY_ERRNO: {
                const char *n = nsr_policy_errno_name(a->errnum);
                if (n)
                        snprintf(buf, len, "deny errno %s", n);
                else
                        snprintf(buf, len, "deny errno %d", a->errnum);
                break;
        }
        case _NSR_POLICY_VERDICT_MAX:
        case _NSR_POLICY_VERDICT_INVALID:
                snprintf(buf, len, "?");
                break;
        }
        return buf;
}

static const char *const op_names[_NSR_POLICY_OP_MAX] = {
        [NSR_POLICY_OP_EQ] = "==", [NSR_POLICY_OP_MASKED_EQ] = "==", [NSR_POLICY_OP_NE] = "!=",
        [NSR_POLICY_OP_LT] = "<",  [NSR_POLICY_OP_LE] = "<=",        [NSR_POLICY_OP_GT] = ">",
        [NSR_POLICY_OP_GE] = ">=",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(op, nsr_policy_op, op_names)

static const char *op_string(nsr_policy_op op) {
        return op_to_string(op) ?: "?";
}

void nsr_policy_format_rule(const nsr_policy_rule *r, char *buf, size_t len) {
        char act[64];
        nsr_policy_action_to_string(&r->action, act, sizeof(act));
        /* "allow" and "deny ..." put the syscall name after the first word. */
        const char *rest = strchr(act, ' ');
        size_t o = (size_t) snprintf(buf, len, "%.*s %s%s", rest ? (int) (rest - act) : (int) strlen(act), act,
                                     r->syscall, rest ? rest : "");
        for (unsigned i = 0; i < r->n_cmp && o < len; i++) {
                const nsr_policy_cmp *c = &r->cmp[i];
                o += (size_t) snprintf(buf + o, len - o, "%s arg%u", i == 0 ? " if" : " and", c->arg);
                if (o < len && c->op == NSR_POLICY_OP_MASKED_EQ)
                        o += (size_t) snprintf(buf + o, len - o, " & 0x%" PRIx64, c->mask);
                if (o < len)
                        o += (size_t) snprintf(buf + o, len - o, " %s 0x%" PRIx64, op_string(c->op), c->value);
        }
}

/* ---- the lexer ----------------------------------------------------------- */

typedef enum tok_type {
        TOK_WORD,   /* a name: keyword, system call, constant, include name */
        TOK_NUMBER, /* starts with a digit; checked when used */
        TOK_SYM,    /* & | == != < <= > >= { } , */
} tok_type;

typedef struct token {
        tok_type type;
        const char *text; /* NUL-terminated, in parser.tokbuf */
} token;

typedef struct parser {
        nsr_policy *policy;
        const nsr_policy_loader *loader;
        nsr_error *err;
        nsr_sha256 hash;
        size_t bytes; /* read from the current file */
        /* where we are */
        const char *path;
        size_t file;
        unsigned line;
        const char *stack[NSR_POLICY_INCLUDE_DEPTH + 1]; /* files being read, for cycles */
        unsigned depth;
        /* the current line's tokens; a line has at most one per byte, and
         * their texts plus NULs fit in twice its length */
        token *tok;
        char *tokbuf;
        size_t n_tok, pos;
        /* the first "default" line */
        bool default_seen;
        size_t default_file;
        unsigned default_line;
} parser;

_printf_(3, 4) static int fail(parser *ps, int code, const char *fmt, ...) {
        char msg[NSR_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        nsr_error_setx(ps->err, code, "%s:%u: %s", ps->path, ps->line, msg);
        ps->err->kind = NSR_ERR_USAGE;
        return -code;
}

static bool is_word_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_word_char(char c) {
        /* '-' and '.' only matter for include names ("default-nested"). */
        return is_word_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static int lex(parser *ps, const char *line) {
        static const char *const two[] = { "==", "!=", "<=", ">=" };
        ps->n_tok = ps->pos = 0;
        char *out = ps->tokbuf;
        for (const char *p = line; *p;) {
                if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
                        p++;
                        continue;
                }
                if (*p == '#')
                        break;
                token *t = &ps->tok[ps->n_tok];
                size_t n = 0;
                if (is_word_start(*p) || (*p >= '0' && *p <= '9')) {
                        t->type = is_word_start(*p) ? TOK_WORD : TOK_NUMBER;
                        while (is_word_char(p[n]))
                                n++;
                } else {
                        t->type = TOK_SYM;
                        for (size_t i = 0; i < ELEMENTSOF(two) && n == 0; i++)
                                if (p[0] == two[i][0] && p[1] == two[i][1])
                                        n = 2;
                        if (n == 0 && strchr("&|<>{},", *p))
                                n = 1;
                        if (n == 0) {
                                unsigned char c = (unsigned char) *p;
                                if (c > 0x20 && c < 0x7f)
                                        return fail(ps, EINVAL, "unexpected character '%c'", c);
                                return fail(ps, EINVAL, "unexpected byte 0x%02x", c);
                        }
                }
                memcpy(out, p, n);
                out[n] = '\0';
                t->text = out;
                out += n + 1;
                p += n;
                ps->n_tok++;
        }
        return 0;
}

static const token *peek(parser *ps) {
        return ps->pos < ps->n_tok ? &ps->tok[ps->pos] : NULL;
}

static const token *next(parser *ps) {
        return ps->pos < ps->n_tok ? &ps->tok[ps->pos++] : NULL;
}

static bool accept_tok(parser *ps, tok_type type, const char *text) {
        const token *t = peek(ps);
        if (t && t->type == type && streq(t->text, text)) {
                ps->pos++;
                return true;
        }
        return false;
}

static const char *describe(const token *t) {
        return t ? t->text : "end of line";
}

/* ---- values ----------------------------------------------------------------- */

static int parse_number(const char *s, uint64_t *ret) {
        unsigned base = 10;
        const char *p = s;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
                base = 16;
                p += 2;
                if (!*p)
                        return -EINVAL;
        } else if (p[0] == '0' && p[1]) {
                base = 8;
                p++;
        }
        uint64_t v = 0;
        for (; *p; p++) {
                unsigned d;
                if (*p >= '0' && *p <= '9')
                        d = (unsigned) (*p - '0');
                else if (*p >= 'a' && *p <= 'f')
                        d = (unsigned) (*p - 'a' + 10);
                else if (*p >= 'A' && *p <= 'F')
                        d = (unsigned) (*p - 'A' + 10);
                else
                        return -EINVAL;
                if (d >= base)
                        return -EINVAL;
                if (v > (UINT64_MAX - d) / base)
                        return -ERANGE;
                v = v * base + d;
        }
        *ret = v;
        return 0;
}

/* VALUE := TERM ('|' TERM)*, TERM := NUMBER | CONSTANT */
static int parse_value(parser *ps, uint64_t *ret) {
        uint64_t v = 0;
        for (;;) {
                const token *t = next(ps);
                uint64_t term;
                if (t && t->type == TOK_NUMBER) {
                        int r = parse_number(t->text, &term);
                        if (r == -ERANGE)
                                return fail(ps, ERANGE, "number '%s' does not fit in 64 bits", t->text);
                        if (r < 0)
                                return fail(ps, EINVAL, "bad number '%s'", t->text);
                } else if (t && t->type == TOK_WORD) {
                        if (nsr_policy_constant(t->text, &term) < 0)
                                return fail(ps, EINVAL, "unknown constant '%s'", t->text);
                } else
                        return fail(ps, EINVAL, "expected a number or a constant, got '%s'", describe(t));
                v |= term;
                if (!accept_tok(ps, TOK_SYM, "|"))
                        break;
        }
        *ret = v;
        return 0;
}

/* ---- conditions ------------------------------------------------------------ */

typedef struct test {
        unsigned arg;
        bool has_mask;
        uint64_t mask;
        nsr_policy_op op; /* EQ, NE or an ordering */
        /* EQ: any of the values; NE: none of them; orderings: values[0] */
        uint64_t values[NSR_POLICY_SET_MAX];
        size_t n_values;
} test;

/* One test becomes a list of alternatives, each a single comparison. */
typedef struct alts {
        nsr_policy_cmp *v;
        size_t n;
} alts;

static void alts_push(alts *a, nsr_policy_cmp c) {
        a->v = nsr_realloc_array(a->v, a->n + 1, sizeof(*a->v));
        a->v[a->n++] = c;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static size_t dedup(uint64_t *v, size_t n) {
        qsort(v, n, sizeof(*v), cmp_u64);
        size_t o = 0;
        for (size_t i = 0; i < n; i++)
                if (o == 0 || v[o - 1] != v[i])
                        v[o++] = v[i];
        return o;
}

/* The complement of a set of values, under a mask, as a union of masked
 * equalities. Walk the mask's bits from the top as a binary trie of the
 * set: wherever a branch holds no member of the set, every value below it
 * is outside the set, and one comparison on the prefix so far covers them
 * all. That gives at most (bits in mask) x (values in set) comparisons,
 * and they are disjoint from each other. */
static void complement(uint64_t mask, int bit, uint64_t pm, uint64_t pv, uint64_t *set, size_t n, unsigned arg,
                       alts *out) {
        if (n == 0) {
                nsr_policy_cmp c = { .arg = arg, .op = NSR_POLICY_OP_MASKED_EQ, .mask = pm, .value = pv };
                if (pm == UINT64_MAX)
                        c.op = NSR_POLICY_OP_EQ;
                alts_push(out, c);
                return;
        }
        while (bit >= 0 && !(mask & (UINT64_C(1) << bit)))
                bit--;
        if (bit < 0)
                return; /* every bit fixed: this value is in the set */
        uint64_t b = UINT64_C(1) << bit;
        /* Partition: values with the bit clear first. */
        size_t lo = 0;
        for (size_t i = 0; i < n; i++)
                if (!(set[i] & b)) {
                        uint64_t t = set[lo];
                        set[lo++] = set[i];
                        set[i] = t;
                }
        complement(mask, bit - 1, pm | b, pv, set, lo, arg, out);
        complement(mask, bit - 1, pm | b, pv | b, set + lo, n - lo, arg, out);
}

static void expand_test(test *t, alts *out) {
        uint64_t mask = t->has_mask ? t->mask : UINT64_MAX;
        switch (t->op) {
        case NSR_POLICY_OP_EQ:
                for (size_t i = 0; i < t->n_values; i++) {
                        nsr_policy_cmp c = { .arg = t->arg, .op = NSR_POLICY_OP_EQ, .value = t->values[i] };
                        if (mask != UINT64_MAX) {
                                c.op = NSR_POLICY_OP_MASKED_EQ;
                                c.mask = mask;
                        }
                        alts_push(out, c);
                }
                return;
        case NSR_POLICY_OP_NE:
                if (mask == UINT64_MAX && t->n_values == 1) {
                        /* libseccomp has this one directly. */
                        alts_push(out,
                                  (nsr_policy_cmp){ .arg = t->arg, .op = NSR_POLICY_OP_NE, .value = t->values[0] });
                        return;
                }
                complement(mask, 63, 0, 0, t->values, t->n_values, t->arg, out);
                return;
        case NSR_POLICY_OP_LT:
        case NSR_POLICY_OP_LE:
        case NSR_POLICY_OP_GT:
        case NSR_POLICY_OP_GE:
                alts_push(out, (nsr_policy_cmp){ .arg = t->arg, .op = t->op, .value = t->values[0] });
                return;
        case NSR_POLICY_OP_MASKED_EQ:
        case _NSR_POLICY_OP_MAX:
        case _NSR_POLICY_OP_INVALID:
                break;
        }
}

static int parse_set(parser *ps, test *t) {
        if (!accept_tok(ps, TOK_SYM, "{"))
                return fail(ps, EINVAL, "expected '{' after 'in', got '%s'", describe(peek(ps)));
        for (;;) {
                if (t->n_values >= NSR_POLICY_SET_MAX)
                        return fail(ps, E2BIG, "a set may hold at most %u values", NSR_POLICY_SET_MAX);
                int r = parse_value(ps, &t->values[t->n_values]);
                if (r < 0)
                        return r;
                t->n_values++;
                if (accept_tok(ps, TOK_SYM, "}"))
                        return 0;
                if (!accept_tok(ps, TOK_SYM, ","))
                        return fail(ps, EINVAL, "expected ',' or '}' in a set, got '%s'", describe(peek(ps)));
        }
}

/* TEST := ARG ['&' VALUE] [OP VALUE | 'in' SET | 'not' 'in' SET] */
static int parse_test(parser *ps, test *t) {
        const token *a = next(ps);
        if (!a || a->type != TOK_WORD || strlen(a->text) != 4 || !nsr_startswith(a->text, "arg") || a->text[3] < '0' ||
            a->text[3] > '5')
                return fail(ps, EINVAL, "expected arg0 to arg5, got '%s'", describe(a));
        *t = (test){ .arg = (unsigned) (a->text[3] - '0') };
        int r;
        if (accept_tok(ps, TOK_SYM, "&")) {
                r = parse_value(ps, &t->mask);
                if (r < 0)
                        return r;
                if (t->mask == 0)
                        return fail(ps, EINVAL, "the mask of arg%u is zero", t->arg);
                t->has_mask = true;
        }
        static const struct {
                const char *sym;
                nsr_policy_op op;
        } ops[] = {
                { "==", NSR_POLICY_OP_EQ }, { "!=", NSR_POLICY_OP_NE }, { "<", NSR_POLICY_OP_LT },
                { "<=", NSR_POLICY_OP_LE }, { ">", NSR_POLICY_OP_GT },  { ">=", NSR_POLICY_OP_GE },
        };
        bool have_op = false;
        for (size_t i = 0; i < ELEMENTSOF(ops) && !have_op; i++)
                if (accept_tok(ps, TOK_SYM, ops[i].sym)) {
                        t->op = ops[i].op;
                        have_op = true;
                }
        if (have_op) {
                r = parse_value(ps, &t->values[0]);
                if (r < 0)
                        return r;
                t->n_values = 1;
        } else if (accept_tok(ps, TOK_WORD, "in") || accept_tok(ps, TOK_WORD, "not")) {
                bool negate = streq(ps->tok[ps->pos - 1].text, "not");
                if (negate && !accept_tok(ps, TOK_WORD, "in"))
                        return fail(ps, EINVAL, "expected 'in' after 'not', got '%s'", describe(peek(ps)));
                r = parse_set(ps, t);
                if (r < 0)
                        return r;
                t->op = negate ? NSR_POLICY_OP_NE : NSR_POLICY_OP_EQ;
        } else if (t->has_mask) {
                /* "arg0 & FLAG": any of the mask's bits set. */
                t->op = NSR_POLICY_OP_NE;
                t->values[0] = 0;
                t->n_values = 1;
        } else
                return fail(ps, EINVAL, "expected a comparison after arg%u, got '%s'", t->arg, describe(peek(ps)));

        if (t->has_mask && t->op != NSR_POLICY_OP_EQ && t->op != NSR_POLICY_OP_NE)
                return fail(ps, EINVAL, "a mask works with ==, !=, in and not in, not with %s", op_string(t->op));
        if (t->has_mask)
                for (size_t i = 0; i < t->n_values; i++)
                        if (t->values[i] & ~t->mask)
                                return fail(ps, EINVAL, "value 0x%" PRIx64 " has bits outside the mask 0x%" PRIx64,
                                            t->values[i], t->mask);
        t->n_values = dedup(t->values, t->n_values);
        return 0;
}

/* ---- statements ------------------------------------------------------------- */

/* r->syscall is ignored; the rule gets its own copy of name. */
static int add_rule(parser *ps, const nsr_policy_rule *r, const char *name) {
        nsr_policy *p = ps->policy;
        if (p->n_rules >= NSR_POLICY_RULES_MAX)
                return fail(ps, E2BIG, "the policy has more than %u filter rules", NSR_POLICY_RULES_MAX);
        p->rules = nsr_realloc_array(p->rules, p->n_rules + 1, sizeof(*p->rules));
        p->rules[p->n_rules] = *r;
        p->rules[p->n_rules].syscall = nsr_strdup(name);
        p->n_rules++;
        return 0;
}

/* Action after "deny" (and after "default deny"): [errno NAME|NUMBER | kill | log] */
static int parse_deny_action(parser *ps, nsr_policy_action *ret) {
        *ret = (nsr_policy_action){ .verdict = NSR_POLICY_ERRNO, .errnum = EPERM };
        if (accept_tok(ps, TOK_WORD, "kill"))
                ret->verdict = NSR_POLICY_KILL;
        else if (accept_tok(ps, TOK_WORD, "log"))
                ret->verdict = NSR_POLICY_LOG;
        else if (accept_tok(ps, TOK_WORD, "errno")) {
                const token *t = next(ps);
                if (t && t->type == TOK_WORD) {
                        int e = nsr_policy_errno_from_name(t->text);
                        if (e < 0)
                                return fail(ps, EINVAL, "unknown errno name '%s'", t->text);
                        ret->errnum = e;
                } else if (t && t->type == TOK_NUMBER) {
                        uint64_t v;
                        /* 4095 is the kernel's MAX_ERRNO. */
                        if (parse_number(t->text, &v) < 0 || v < 1 || v > 4095)
                                return fail(ps, EINVAL, "errno must be a name or a number from 1 to 4095, got '%s'",
                                            t->text);
                        ret->errnum = (int) v;
                } else
                        return fail(ps, EINVAL, "expected an errno name after 'errno', got '%s'", describe(t));
        }
        return 0;
}

/* The set of a "not in" test (see nsr_policy_set); its number, from 1.
 * Its values are under the mask (the parser checked), so they fit too. */
static unsigned add_set(nsr_policy *p, const test *t, const test *pre) {
        p->sets = nsr_realloc_array(p->sets, p->n_sets + 1, sizeof(*p->sets));
        nsr_policy_set *s = &p->sets[p->n_sets++];
        *s = (nsr_policy_set){ .arg = t->arg, .mask = (uint32_t) t->mask, .n_values = t->n_values };
        for (size_t i = 0; i < t->n_values; i++)
                s->values[i] = (uint32_t) t->values[i];
        if (pre) {
                s->has_pre = true;
                s->pre_arg = pre->arg;
                s->pre_mask = (uint32_t) pre->mask;
                s->pre_value = (uint32_t) pre->values[0];
        }
        return (unsigned) p->n_sets;
}

/* "arg & MASK not in {...}" or "!=", the mask in the low 32 bits: a set. */
static bool set_test(const test *t) {
        return t->op == NSR_POLICY_OP_NE && t->has_mask && t->mask <= UINT32_MAX;
}

/* "arg & MASK == VALUE", the mask in the low 32 bits (so the value too,
 * or the test never holds): a set's precondition, which the compiler
 * tests on the low word alone, as exactly as libseccomp does. */
static bool pre_test(const test *t) {
        return t->op == NSR_POLICY_OP_EQ && t->has_mask && t->mask <= UINT32_MAX && t->n_values == 1 &&
               t->values[0] <= UINT32_MAX;
}

static int cmp_test_arg(const void *a, const void *b) {
        const test *x = a, *y = b;
        return (int) x->arg - (int) y->arg;
}

/* allow SYSCALL [if ...] | deny SYSCALL [ACTION] [if ...] */
static int parse_rule(parser *ps, bool deny) {
        const token *name = next(ps);
        if (!name || name->type != TOK_WORD)
                return fail(ps, EINVAL, "expected a system call name after '%s', got '%s'", deny ? "deny" : "allow",
                            describe(name));
        if (!nsr_policy_syscall_known(name->text))
                return fail(ps, EINVAL, "unknown system call '%s'", name->text);

        nsr_policy_action action = { .verdict = NSR_POLICY_ALLOW };
        int r;
        if (deny) {
                r = parse_deny_action(ps, &action);
                if (r < 0)
                        return r;
        }

        test tests[NSR_POLICY_ARGS];
        size_t n_tests = 0;
        if (accept_tok(ps, TOK_WORD, "if")) {
                do {
                        test t;
                        r = parse_test(ps, &t);
                        if (r < 0)
                                return r;
                        for (size_t i = 0; i < n_tests; i++)
                                if (tests[i].arg == t.arg)
                                        return fail(ps, EINVAL,
                                                    "arg%u is tested twice; libseccomp allows one test per argument",
                                                    t.arg);
                        tests[n_tests++] = t;
                } while (accept_tok(ps, TOK_WORD, "and"));
        }
        if (peek(ps))
                return fail(ps, EINVAL, "unexpected '%s'%s", peek(ps)->text,
                            n_tests ? " (conditions are joined with 'and')" : "");
        if (n_tests > 0 && !libseccomp_knows(name->text))
                return fail(ps, EINVAL,
                            "the arguments of %s cannot be tested: the installed libseccomp does not know this "
                            "system call",
                            name->text);

        qsort(tests, n_tests, sizeof(tests[0]), cmp_test_arg);
        unsigned set = 0;
        if (n_tests == 1 && set_test(&tests[0]))
                set = add_set(ps->policy, &tests[0], NULL);
        else if (n_tests == 2 && set_test(&tests[0]) && pre_test(&tests[1]))
                set = add_set(ps->policy, &tests[0], &tests[1]);
        else if (n_tests == 2 && set_test(&tests[1]) && pre_test(&tests[0]))
                set = add_set(ps->policy, &tests[1], &tests[0]);
        alts a[NSR_POLICY_ARGS] = { { 0 } };
        size_t total = 1;
        for (size_t i = 0; i < n_tests; i++) {
                expand_test(&tests[i], &a[i]);
                total = a[i].n == 0 ? 0 : (total > NSR_POLICY_EXPAND_MAX ? total : total * a[i].n);
        }
        if (total > NSR_POLICY_EXPAND_MAX) {
                for (size_t i = 0; i < n_tests; i++)
                        free(a[i].v);
                return fail(ps, E2BIG, "this rule expands to more than %u filter rules", NSR_POLICY_EXPAND_MAX);
        }
        /* The cartesian product, like an odometer over the alternatives. */
        size_t idx[NSR_POLICY_ARGS] = { 0 };
        r = 0;
        for (size_t k = 0; k < total && r >= 0; k++) {
                nsr_policy_rule rule = {
                        .action = action,
                        .n_cmp = (unsigned) n_tests,
                        .file = ps->file,
                        .line = ps->line,
                        .set = set,
                };
                for (size_t i = 0; i < n_tests; i++)
                        rule.cmp[i] = a[i].v[idx[i]];
                r = add_rule(ps, &rule, name->text);
                for (size_t i = n_tests; i-- > 0;) {
                        if (++idx[i] < a[i].n)
                                break;
                        idx[i] = 0;
                }
        }
        for (size_t i = 0; i < n_tests; i++)
                free(a[i].v);
        return r;
}

static int parse_default(parser *ps) {
        nsr_policy_action action = { .verdict = NSR_POLICY_ALLOW };
        int r;
        if (ps->default_seen)
                return fail(ps, EINVAL, "the default action is already set at %s:%u",
                            ps->policy->files[ps->default_file], ps->default_line);
        if (accept_tok(ps, TOK_WORD, "deny")) {
                r = parse_deny_action(ps, &action);
                if (r < 0)
                        return r;
        } else if (!accept_tok(ps, TOK_WORD, "allow"))
                return fail(ps, EINVAL, "expected 'allow' or 'deny' after 'default', got '%s'", describe(peek(ps)));
        if (peek(ps))
                return fail(ps, EINVAL, "unexpected '%s'", peek(ps)->text);
        ps->policy->default_action = action;
        ps->default_seen = true;
        ps->default_file = ps->file;
        ps->default_line = ps->line;
        return 0;
}

static int parse_stream(parser *ps, FILE *f);

static int parse_include(parser *ps) {
        const token *t = next(ps);
        if (!t || t->type != TOK_WORD || !nsr_policy_name_valid(t->text))
                return fail(ps, EINVAL, "expected a policy name after 'include', got '%s'", describe(t));
        if (peek(ps))
                return fail(ps, EINVAL, "unexpected '%s' after the policy name", peek(ps)->text);
        if (!ps->loader)
                return fail(ps, ENOTSUP, "include is not possible here: this policy is not read from a directory");
        if (ps->depth >= NSR_POLICY_INCLUDE_DEPTH)
                return fail(ps, ELOOP, "includes are nested more than %u deep", NSR_POLICY_INCLUDE_DEPTH);

        char name[NSR_POLICY_LINE_MAX + 1];
        snprintf(name, sizeof(name), "%s", t->text);
        FILE *f = NULL;
        char *path = NULL;
        int r = ps->loader->open(ps->loader->userdata, ps->path, name, &f, &path, ps->err);
        if (r < 0) {
                nsr_error_prefix(ps->err, "%s:%u", ps->path, ps->line);
                ps->err->kind = NSR_ERR_USAGE;
                return r;
        }
        for (unsigned i = 0; i <= ps->depth; i++)
                if (streq(ps->stack[i], path)) {
                        fclose(f);
                        r = fail(ps, ELOOP, "include cycle: %s is already being read", path);
                        free(path);
                        return r;
                }

        /* The file list owns the path from here on. */
        nsr_strv_push(&ps->policy->files, path);
        const char *saved_path = ps->path;
        size_t saved_file = ps->file, saved_bytes = ps->bytes;
        unsigned saved_line = ps->line;
        ps->path = path;
        ps->file = nsr_strv_length(ps->policy->files) - 1;
        ps->line = 0;
        ps->bytes = 0;
        ps->stack[++ps->depth] = path;
        r = parse_stream(ps, f);
        fclose(f);
        ps->depth--;
        ps->path = saved_path;
        ps->file = saved_file;
        ps->line = saved_line;
        ps->bytes = saved_bytes;
        /* The included file reused the token buffers; this line is done. */
        ps->n_tok = ps->pos = 0;
        return r;
}

static int parse_line(parser *ps, const char *line) {
        int r = lex(ps, line);
        if (r < 0)
                return r;
        const token *t = next(ps);
        if (!t)
                return 0;
        if (t->type == TOK_WORD) {
                if (streq(t->text, "allow"))
                        return parse_rule(ps, false);
                if (streq(t->text, "deny"))
                        return parse_rule(ps, true);
                if (streq(t->text, "default"))
                        return parse_default(ps);
                if (streq(t->text, "include"))
                        return parse_include(ps);
        }
        return fail(ps, EINVAL, "unknown statement '%s' (expected allow, deny, default or include)", t->text);
}

static int parse_stream(parser *ps, FILE *f) {
        _cleanup_free_ char *buf = nsr_malloc0(NSR_POLICY_LINE_MAX + 2);
        /* A NUL separates files in the digest; the text itself holds none. */
        nsr_sha256_update(&ps->hash, "", 1);
        for (;;) {
                size_t n = 0;
                int c = EOF;
                ps->line++;
                /* Unlocked: the stream is this parser's alone, and a lock
                 * per byte was a visible part of reading a policy. */
                while ((c = getc_unlocked(f)) != EOF) {
                        if (c == '\0')
                                return fail(ps, EINVAL, "NUL byte in the policy text");
                        if (++ps->bytes > NSR_POLICY_FILE_MAX)
                                return fail(ps, EFBIG, "the file is larger than %u bytes", NSR_POLICY_FILE_MAX);
                        if (n >= NSR_POLICY_LINE_MAX && c != '\n')
                                return fail(ps, E2BIG, "the line is longer than %u bytes", NSR_POLICY_LINE_MAX);
                        buf[n++] = (char) c;
                        if (c == '\n')
                                break;
                }
                if (ferror(f))
                        return fail(ps, EIO, "read error");
                if (n == 0 && c == EOF)
                        return 0;
                buf[n] = '\0';
                nsr_sha256_update(&ps->hash, buf, n);
                int r = parse_line(ps, buf);
                if (r < 0)
                        return r;
                if (c == EOF)
                        return 0;
        }
}

/* ---- overlaps ---------------------------------------------------------------- */

/* The values an argument may take under one comparison, as an interval.
 * NE has no interval; it returns false. */
static bool cmp_interval(const nsr_policy_cmp *c, uint64_t *lo, uint64_t *hi) {
        switch (c->op) {
        case NSR_POLICY_OP_EQ:
                *lo = *hi = c->value;
                return true;
        case NSR_POLICY_OP_MASKED_EQ:
                /* Bits outside the mask are free: the smallest match has them
                 * clear, the largest has them set. */
                *lo = c->value;
                *hi = c->value | ~c->mask;
                return true;
        case NSR_POLICY_OP_LT:
                if (c->value == 0) {
                        *lo = 1;
                        *hi = 0; /* empty */
                        return true;
                }
                *lo = 0;
                *hi = c->value - 1;
                return true;
        case NSR_POLICY_OP_LE:
                *lo = 0;
                *hi = c->value;
                return true;
        case NSR_POLICY_OP_GT:
                if (c->value == UINT64_MAX) {
                        *lo = 1;
                        *hi = 0;
                        return true;
                }
                *lo = c->value + 1;
                *hi = UINT64_MAX;
                return true;
        case NSR_POLICY_OP_GE:
                *lo = c->value;
                *hi = UINT64_MAX;
                return true;
        case NSR_POLICY_OP_NE:
        case _NSR_POLICY_OP_MAX:
        case _NSR_POLICY_OP_INVALID:
                break;
        }
        return false;
}

static bool cmp_is_point(const nsr_policy_cmp *c, uint64_t *v) {
        if (c->op == NSR_POLICY_OP_EQ || (c->op == NSR_POLICY_OP_MASKED_EQ && c->mask == UINT64_MAX)) {
                *v = c->value;
                return true;
        }
        return false;
}

/* True when no value satisfies both comparisons. Conservative: false means
 * "could not prove it". */
static bool cmps_disjoint(const nsr_policy_cmp *a, const nsr_policy_cmp *b) {
        uint64_t alo, ahi, blo, bhi, v;
        bool ai = cmp_interval(a, &alo, &ahi), bi = cmp_interval(b, &blo, &bhi);
        if (ai && alo > ahi)
                return true;
        if (bi && blo > bhi)
                return true;
        if (ai && bi && (ahi < blo || bhi < alo))
                return true;
        if ((a->op == NSR_POLICY_OP_EQ || a->op == NSR_POLICY_OP_MASKED_EQ) &&
            (b->op == NSR_POLICY_OP_EQ || b->op == NSR_POLICY_OP_MASKED_EQ)) {
                uint64_t am = a->op == NSR_POLICY_OP_EQ ? UINT64_MAX : a->mask;
                uint64_t bm = b->op == NSR_POLICY_OP_EQ ? UINT64_MAX : b->mask;
                if ((a->value ^ b->value) & am & bm)
                        return true;
        }
        if (a->op == NSR_POLICY_OP_NE && cmp_is_point(b, &v) && v == a->value)
                return true;
        if (b->op == NSR_POLICY_OP_NE && cmp_is_point(a, &v) && v == b->value)
                return true;
        return false;
}

static bool rules_disjoint(const nsr_policy_rule *a, const nsr_policy_rule *b) {
        for (unsigned i = 0; i < a->n_cmp; i++)
                for (unsigned j = 0; j < b->n_cmp; j++)
                        if (a->cmp[i].arg == b->cmp[j].arg && cmps_disjoint(&a->cmp[i], &b->cmp[j]))
                                return true;
        return false;
}

static int cmp_rule_index(const void *x, const void *y, void *userdata) {
        const nsr_policy *p = userdata;
        size_t a = *(const size_t *) x, b = *(const size_t *) y;
        int c = strcmp(p->rules[a].syscall, p->rules[b].syscall);
        if (c != 0)
                return c;
        return a < b ? -1 : a > b;
}

/* libseccomp gives no defined order between overlapping rules of one system
 * call that have different actions (and it is not even the same order on
 * every arch), so a policy must not contain any. Rules with the same action
 * may overlap freely. */
static int check_overlaps(parser *ps) {
        nsr_policy *p = ps->policy;
        if (p->n_rules == 0)
                return 0;
        _cleanup_free_ size_t *idx = nsr_malloc0(p->n_rules * sizeof(size_t));
        for (size_t i = 0; i < p->n_rules; i++)
                idx[i] = i;
        qsort_r(idx, p->n_rules, sizeof(size_t), cmp_rule_index, p);
        for (size_t s = 0; s < p->n_rules;) {
                size_t e = s + 1;
                while (e < p->n_rules && streq(p->rules[idx[e]].syscall, p->rules[idx[s]].syscall))
                        e++;
                for (size_t j = s + 1; j < e; j++)
                        for (size_t i = s; i < j; i++) {
                                const nsr_policy_rule *a = &p->rules[idx[i]], *b = &p->rules[idx[j]];
                                if (nsr_policy_action_equal(&a->action, &b->action) || rules_disjoint(a, b))
                                        continue;
                                char aa[64], ba[64];
                                ps->path = p->files[b->file];
                                ps->line = b->line;
                                return fail(ps, EINVAL,
                                            "this rule (%s) can match the same %s calls as the rule at %s:%u (%s); "
                                            "rules for one system call may only overlap when their actions are "
                                            "the same",
                                            nsr_policy_action_to_string(&b->action, ba, sizeof(ba)), b->syscall,
                                            p->files[a->file], a->line,
                                            nsr_policy_action_to_string(&a->action, aa, sizeof(aa)));
                        }
                s = e;
        }
        return 0;
}

/* ---- entry points ---------------------------------------------------------- */

nsr_policy *nsr_policy_free(nsr_policy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_rules; i++)
                free(p->rules[i].syscall);
        free(p->rules);
        free(p->sets);
        nsr_strv_free(p->files);
        free(p);
        return NULL;
}

int nsr_policy_parse(FILE *f, const char *path, const nsr_policy_loader *loader, nsr_policy **ret, nsr_error *err) {
        _cleanup_(nsr_policy_freep) nsr_policy *p = nsr_malloc0(sizeof(*p));
        _cleanup_free_ token *tok = nsr_malloc0(sizeof(token) * (NSR_POLICY_LINE_MAX + 1));
        _cleanup_free_ char *tokbuf = nsr_malloc0(2 * (NSR_POLICY_LINE_MAX + 1));
        p->default_action.verdict = NSR_POLICY_ALLOW;
        nsr_strv_extend(&p->files, path);
        parser ps = {
                .policy = p,
                .loader = loader,
                .err = err,
                .path = p->files[0],
                .file = 0,
                .tok = tok,
                .tokbuf = tokbuf,
        };
        ps.stack[0] = p->files[0];
        nsr_sha256_init(&ps.hash);
        int r = parse_stream(&ps, f);
        if (r < 0)
                return r;
        r = check_overlaps(&ps);
        if (r < 0)
                return r;
        nsr_sha256_final(&ps.hash, p->digest);
        *ret = TAKE_PTR(p);
        return 0;
}
