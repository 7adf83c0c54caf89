/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "project/profile.h"
#include "project/stepenv.h"

/* What the C locale's tolower(3) does, which is what fnmatch's
 * FNM_CASEFOLD compares with when MB_CUR_MAX is 1. */
static unsigned char fold(unsigned char c) {
        return c >= 'A' && c <= 'Z' ? (unsigned char) (c - 'A' + 'a') : c;
}

/* '*' (any run of bytes, '/' and a leading '.' included: no FNM_PATHNAME,
 * no FNM_PERIOD), '?' (any one byte) and literal bytes, compared folded.
 * The usual walk: on a mismatch, the last '*' takes one byte more. */
static bool simple_match(const char *p, const char *s) {
        const char *star = NULL, *resume = NULL;
        while (*s) {
                if (*p == '*') {
                        star = ++p;
                        resume = s;
                } else if (*p && (*p == '?' || fold((unsigned char) *p) == fold((unsigned char) *s))) {
                        p++;
                        s++;
                } else if (star) {
                        p = star;
                        s = ++resume;
                } else
                        return false;
        }
        while (*p == '*')
                p++;
        return *p == '\0';
}

/* How a pattern is matched: by fnmatch itself (brackets and escapes have
 * rules of their own: ranges, classes, a '!' or '^' inside; and in a
 * multibyte locale fnmatch folds wide characters), by the walk above
 * ('?' in it, or more '*' than SEGS_MAX), or, for '*' and literal bytes
 * only (every line of the deny list), as its parts between the '*'s
 * found in the folded name: the first at its start, the last at its end,
 * those between in order, each as early as it can be (the earliest never
 * leaves less room to what follows). */
typedef enum kind { KIND_FNMATCH, KIND_WALK, KIND_SEGMENTS } kind;

#define SEGS_MAX 8

typedef struct pattern {
        const char *text; /* as written, without a leading '!' */
        bool except;      /* it had one */
        kind kind;
        char *folded;
        size_t head, tail; /* KIND_SEGMENTS: the first and last parts' length */
        size_t tail_off;   /* where the last part starts */
        bool star;         /* it has a '*' (else: head is all of it) */
        size_t n_mid, mid_off[SEGS_MAX], mid_len[SEGS_MAX];
} pattern;

static char *folded(const char *s) {
        char *f = nsr_strdup(s);
        for (char *c = f; *c; c++)
                *c = (char) fold((unsigned char) *c);
        return f;
}

/* bang: a leading '!' marks an exception (a line of the list), else it
 * is a literal. */
static void pattern_make(pattern *p, const char *line, bool bang) {
        *p = (pattern){ .except = bang && line[0] == '!' };
        p->text = line + p->except;
        p->folded = folded(p->text);
        p->kind = strpbrk(p->text, "[\\") || MB_CUR_MAX != 1 ? KIND_FNMATCH
                  : strchr(p->text, '?')                     ? KIND_WALK
                                                             : KIND_SEGMENTS;
        if (p->kind != KIND_SEGMENTS)
                return;
        const char *f = p->folded, *first = strchr(f, '*');
        size_t len = strlen(f);
        p->star = first != NULL;
        if (!first) {
                p->head = len;
                return;
        }
        const char *last = strrchr(f, '*');
        p->head = (size_t) (first - f);
        p->tail = len - (size_t) (last - f) - 1;
        p->tail_off = (size_t) (last - f) + 1;
        for (const char *seg = first + 1; seg < last;) {
                const char *end = strchr(seg, '*');
                if (end > seg) {
                        if (p->n_mid == SEGS_MAX) {
                                p->kind = KIND_WALK;
                                return;
                        }
                        p->mid_off[p->n_mid] = (size_t) (seg - f);
                        p->mid_len[p->n_mid++] = (size_t) (end - seg);
                }
                seg = end + 1;
        }
}

/* Names are short: plain loops beat the library's calls here. */
static bool same(const char *a, const char *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (a[i] != b[i])
                        return false;
        return true;
}

static const char *find(const char *hay, size_t hn, const char *needle, size_t nn) {
        for (size_t i = 0; i + nn <= hn; i++)
                if (hay[i] == needle[0] && same(hay + i, needle, nn))
                        return hay + i;
        return NULL;
}

/* name as it is, and folded with its length. */
static bool pattern_match(const pattern *p, const char *name, const char *fname, size_t nl) {
        switch (p->kind) {
        case KIND_FNMATCH:
                return fnmatch(p->text, name, FNM_CASEFOLD) == 0;
        case KIND_WALK:
                return simple_match(p->text, name);
        case KIND_SEGMENTS:
                break;
        }
        const char *f = p->folded;
        if (!p->star)
                return nl == p->head && same(fname, f, nl);
        if (p->head + p->tail > nl || !same(fname, f, p->head) || !same(fname + nl - p->tail, f + p->tail_off, p->tail))
                return false;
        const char *at = fname + p->head, *end = fname + nl - p->tail;
        for (size_t i = 0; i < p->n_mid; i++) {
                const char *hit = find(at, (size_t) (end - at), f + p->mid_off[i], p->mid_len[i]);
                if (!hit)
                        return false;
                at = hit + p->mid_len[i];
        }
        return true;
}

bool nsr_stepenv_match(const char *pattern_text, const char *name) {
        pattern p;
        pattern_make(&p, pattern_text, false);
        _cleanup_free_ char *fname = folded(name);
        bool r = pattern_match(&p, name, fname, strlen(fname));
        free(p.folded);
        return r;
}

/* The deny list, compiled; nsr_profile_env_denied's rule: an exception
 * wins over every other line. */
typedef struct list {
        size_t n;
        pattern *p;
} list;

static void list_done(list *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->p[i].folded);
        free(l->p);
}

static bool denied(const list *l, const char *name) {
        char fname[256];
        size_t nl = strlen(name);
        /* A name longer than that goes the slow way, pattern by pattern. */
        if (nl >= sizeof(fname)) {
                for (size_t i = 0; i < l->n; i++)
                        if (l->p[i].except && fnmatch(l->p[i].text, name, FNM_CASEFOLD) == 0)
                                return false;
                for (size_t i = 0; i < l->n; i++)
                        if (!l->p[i].except && fnmatch(l->p[i].text, name, FNM_CASEFOLD) == 0)
                                return true;
                return false;
        }
        for (size_t i = 0; i <= nl; i++)
                fname[i] = (char) fold((unsigned char) name[i]);
        for (size_t i = 0; i < l->n; i++)
                if (l->p[i].except && pattern_match(&l->p[i], name, fname, nl))
                        return false;
        for (size_t i = 0; i < l->n; i++)
                if (!l->p[i].except && pattern_match(&l->p[i], name, fname, nl))
                        return true;
        return false;
}

char **nsr_stepenv_filter(char *const *env, const char *datadir, nsr_error *err) {
        _cleanup_free_ char *file = nsr_asprintf("%s/profiles/env-deny.list", datadir);
        _cleanup_strv_free_ char **deny = NULL;
        if (nsr_profile_read_list(file, &deny, err) < 0)
                return NULL;
        _cleanup_(list_done) list l = { .n = nsr_strv_length(deny) };
        l.p = nsr_malloc0((l.n + 1) * sizeof(pattern));
        for (size_t i = 0; i < l.n; i++)
                pattern_make(&l.p[i], deny[i], true);
        size_t n = nsr_strv_length(env);
        char **kept = nsr_malloc0((n + 1) * sizeof(char *));
        size_t k = 0;
        char name[256];
        for (size_t i = 0; i < n; i++) {
                const char *eq = strchr(env[i], '=');
                if (!eq || eq == env[i])
                        continue;
                size_t nl = (size_t) (eq - env[i]);
                _cleanup_free_ char *longname = nl >= sizeof(name) ? nsr_strndup(env[i], nl) : NULL;
                if (!longname) {
                        memcpy(name, env[i], nl);
                        name[nl] = '\0';
                }
                if (!denied(&l, longname ? longname : name) && !nsr_profile_env_value_secret(eq + 1))
                        kept[k++] = nsr_strdup(env[i]);
        }
        return kept;
}
