/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The JSON report round trip: a report built from the input's byte strings
 * (argv, paths, symlink targets, conflict and error texts) is written as
 * JSON, parsed back by the small reader below, and every byte string must
 * come back exactly: as the string itself when it is UTF-8, else from its
 * "_b64" sibling. The document must be valid JSON (RFC 8259) either way. */
#include "config.h"

#include <stdio.h>

#include "base/utf8.h"
#include "fuzz.h"
#include "project/report.h"
#include "txn/changeset.h"

/* ---- a minimal JSON reader: just enough to check the writer ------------- */

typedef struct jv {
        enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } t;
        char *s; /* J_STR: bytes (may hold NUL), J_OBJ: unused */
        size_t len;
        struct jv *items; /* J_ARR, J_OBJ (values) */
        char **keys;      /* J_OBJ */
        size_t n;
} jv;

static void jv_free(jv *v) {
        free(v->s);
        for (size_t i = 0; i < v->n; i++) {
                jv_free(&v->items[i]);
                if (v->keys)
                        free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
}

typedef struct {
        const char *p, *end;
        unsigned depth;
} jp;

static void ws(jp *r) {
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r'))
                r->p++;
}

static int hex4(jp *r, uint32_t *ret) {
        uint32_t v = 0;
        for (int i = 0; i < 4; i++, r->p++) {
                if (r->p >= r->end)
                        return -1;
                char c = *r->p;
                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (uint32_t) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (uint32_t) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (uint32_t) (c - 'A' + 10);
                else
                        return -1;
        }
        *ret = v;
        return 0;
}

static void put_utf8(char **b, size_t *n, uint32_t cp) {
        char tmp[4];
        size_t l;
        if (cp < 0x80)
                tmp[0] = (char) cp, l = 1;
        else if (cp < 0x800)
                tmp[0] = (char) (0xc0 | cp >> 6), tmp[1] = (char) (0x80 | (cp & 0x3f)), l = 2;
        else if (cp < 0x10000)
                tmp[0] = (char) (0xe0 | cp >> 12), tmp[1] = (char) (0x80 | ((cp >> 6) & 0x3f)),
                tmp[2] = (char) (0x80 | (cp & 0x3f)), l = 3;
        else
                tmp[0] = (char) (0xf0 | cp >> 18), tmp[1] = (char) (0x80 | ((cp >> 12) & 0x3f)),
                tmp[2] = (char) (0x80 | ((cp >> 6) & 0x3f)), tmp[3] = (char) (0x80 | (cp & 0x3f)), l = 4;
        *b = nsr_realloc_array(*b, *n + l + 1, 1);
        memcpy(*b + *n, tmp, l);
        *n += l;
        (*b)[*n] = '\0';
}

static int parse_string(jp *r, char **ret, size_t *ret_len) {
        if (r->p >= r->end || *r->p != '"')
                return -1;
        r->p++;
        char *b = nsr_malloc0(1);
        size_t n = 0;
        const char *raw_start = r->p;
        while (r->p < r->end && *r->p != '"') {
                unsigned char c = (unsigned char) *r->p;
                if (c < 0x20)
                        goto fail; /* control characters must be escaped */
                if (c != '\\') {
                        b = nsr_realloc_array(b, n + 2, 1);
                        b[n++] = (char) c;
                        b[n] = '\0';
                        r->p++;
                        continue;
                }
                if (++r->p >= r->end)
                        goto fail;
                char e = *r->p++;
                uint32_t cp;
                switch (e) {
                case '"':
                case '\\':
                case '/':
                        put_utf8(&b, &n, (uint32_t) e);
                        break;
                case 'b':
                        put_utf8(&b, &n, '\b');
                        break;
                case 'f':
                        put_utf8(&b, &n, '\f');
                        break;
                case 'n':
                        put_utf8(&b, &n, '\n');
                        break;
                case 'r':
                        put_utf8(&b, &n, '\r');
                        break;
                case 't':
                        put_utf8(&b, &n, '\t');
                        break;
                case 'u':
                        if (hex4(r, &cp) < 0)
                                goto fail;
                        if (cp >= 0xd800 && cp < 0xdc00) {
                                uint32_t lo;
                                if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u')
                                        goto fail;
                                r->p += 2;
                                if (hex4(r, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
                                        goto fail;
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        } else if (cp >= 0xdc00 && cp < 0xe000)
                                goto fail;
                        put_utf8(&b, &n, cp);
                        break;
                default:
                        goto fail;
                }
        }
        if (r->p >= r->end)
                goto fail;
        /* The text itself must be UTF-8: JSON is. */
        if (!nsr_utf8_valid(raw_start, (size_t) (r->p - raw_start)))
                goto fail;
        r->p++;
        *ret = b;
        *ret_len = n;
        return 0;
fail:
        free(b);
        return -1;
}

static int parse_value(jp *r, jv *v);

static int parse_container(jp *r, jv *v, bool obj) {
        char close = obj ? '}' : ']';
        r->p++;
        v->t = obj ? J_OBJ : J_ARR;
        if (++r->depth > 100)
                return -1;
        ws(r);
        if (r->p < r->end && *r->p == close) {
                r->p++;
                r->depth--;
                return 0;
        }
        for (;;) {
                v->items = nsr_realloc_array(v->items, v->n + 1, sizeof(jv));
                memset(&v->items[v->n], 0, sizeof(jv));
                if (obj) {
                        v->keys = nsr_realloc_array(v->keys, v->n + 1, sizeof(char *));
                        v->keys[v->n] = NULL;
                        size_t kl;
                        ws(r);
                        if (parse_string(r, &v->keys[v->n], &kl) < 0) {
                                v->n++;
                                return -1;
                        }
                        ws(r);
                        if (r->p >= r->end || *r->p++ != ':') {
                                v->n++;
                                return -1;
                        }
                }
                v->n++;
                if (parse_value(r, &v->items[v->n - 1]) < 0)
                        return -1;
                ws(r);
                if (r->p < r->end && *r->p == ',') {
                        r->p++;
                        continue;
                }
                if (r->p < r->end && *r->p == close) {
                        r->p++;
                        r->depth--;
                        return 0;
                }
                return -1;
        }
}

static int parse_value(jp *r, jv *v) {
        ws(r);
        if (r->p >= r->end)
                return -1;
        char c = *r->p;
        if (c == '{' || c == '[')
                return parse_container(r, v, c == '{');
        if (c == '"') {
                v->t = J_STR;
                return parse_string(r, &v->s, &v->len);
        }
        static const char *const words[] = { "null", "true", "false" };
        for (size_t i = 0; i < 3; i++)
                if ((size_t) (r->end - r->p) >= strlen(words[i]) && memcmp(r->p, words[i], strlen(words[i])) == 0) {
                        r->p += strlen(words[i]);
                        v->t = i ? J_BOOL : J_NULL;
                        return 0;
                }
        const char *s = r->p;
        if (r->p < r->end && *r->p == '-')
                r->p++;
        while (r->p < r->end && ((*r->p >= '0' && *r->p <= '9') || *r->p == '.' || *r->p == 'e' || *r->p == 'E' ||
                                 *r->p == '+' || *r->p == '-'))
                r->p++;
        if (r->p == s)
                return -1;
        v->t = J_NUM;
        return 0;
}

static const jv *member(const jv *o, const char *key) {
        for (size_t i = 0; o && o->t == J_OBJ && i < o->n; i++)
                if (streq(o->keys[i], key))
                        return &o->items[i];
        return NULL;
}

static char *b64_decode(const char *s, size_t len, size_t *ret_len) {
        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        if (len % 4)
                abort();
        char *out = nsr_malloc0(len / 4 * 3 + 1);
        size_t n = 0;
        for (size_t i = 0; i < len; i += 4) {
                uint32_t v = 0;
                int pad = 0;
                for (int k = 0; k < 4; k++) {
                        const char *pos = s[i + k] == '=' ? NULL : strchr(tbl, s[i + k]);
                        if (s[i + k] == '=')
                                pad++;
                        else if (!pos || !s[i + k] || pad)
                                abort();
                        v = v << 6 | (pos ? (uint32_t) (pos - tbl) : 0);
                }
                out[n++] = (char) (v >> 16);
                if (pad < 2)
                        out[n++] = (char) (v >> 8);
                if (pad < 1)
                        out[n++] = (char) v;
        }
        *ret_len = n;
        return out;
}

/* The byte string s came back: from v, or from its _b64 sibling b64. */
static void expect(const char *s, const jv *v, const jv *b64) {
        if (!v)
                abort();
        if (!s) {
                if (v->t != J_NULL)
                        abort();
                return;
        }
        if (v->t != J_STR)
                abort();
        if (nsr_utf8_valid(s, strlen(s))) {
                if (v->len != strlen(s) || memcmp(v->s, s, v->len) != 0)
                        abort();
                return;
        }
        if (!b64 || b64->t != J_STR)
                abort();
        size_t n;
        char *bytes = b64_decode(b64->s, b64->len, &n);
        if (n != strlen(s) || memcmp(bytes, s, n) != 0)
                abort();
        free(bytes);
}

/* ---- the target ------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 16384)
                return 0;
        size_t n = 0;
        char **w = fuzz_split(data, size, 64, &n);
        /* Words: 0 the project path, 1 a conflict path, 2 its reason, 3 an
         * error, 4.. the command; every word from 1 on also a change path
         * (those nsr_changeset_add accepts), with the next as its target. */
        const char *proj = n > 0 ? w[0] : "/p";
        nsr_changeset *cs = nsr_changeset_new();
        for (size_t i = 1; i < n; i++) {
                bool link = w[i][0] && (w[i][0] & 1);
                nsr_change c = { .path = w[i],
                                 .kind = (nsr_change_kind) (i % _NSR_CHANGE_KIND_MAX),
                                 .type = link ? NSR_ENTRY_SYMLINK : NSR_ENTRY_FILE,
                                 .mode = 0644,
                                 .target = link && i + 1 < n ? w[i + 1] : NULL };
                if (c.kind == NSR_CHANGE_DELETED)
                        c.target = NULL;
                nsr_error e = { 0 };
                (void) nsr_changeset_add(cs, &c, &e);
        }
        nsr_report_conflict conf = { .path = n > 1 ? w[1] : "c", .reason = n > 2 ? w[2] : "r", .kept_at = proj };
        char *errors[] = { n > 3 ? w[3] : (char *) "e", NULL };
        char *const *command = n > 4 ? w + 4 : (char *const[]){ (char *) "true", NULL };
        nsr_report_project rp = { .path = proj,
                                  .outcome = NSR_OUTCOME_COMMITTED,
                                  .changes = cs,
                                  .conflicts = &conf,
                                  .n_conflicts = 1,
                                  .errors = errors };
        nsr_report rep = { .run_id = "r",
                           .command = command,
                           .exit_code = 0,
                           .outcome = NSR_OUTCOME_COMMITTED,
                           .projects = &rp,
                           .n_projects = 1 };
        char *json = NULL;
        size_t len = 0;
        nsr_error err = { 0 };
        if (nsr_report_to_json(&rep, size & 1 ? NSR_REPORT_PRETTY : 0, &json, &len, &err) < 0)
                abort(); /* nothing here is over a limit */
        if (strlen(json) != len)
                abort(); /* no raw NUL in the document */

        jp r = { .p = json, .end = json + len };
        jv doc = { 0 };
        if (parse_value(&r, &doc) < 0)
                abort();
        ws(&r);
        if (r.p != r.end || doc.t != J_OBJ)
                abort();
        const jv *cmd = member(&doc, "command"), *cmd64 = member(&doc, "command_b64");
        size_t nc = nsr_strv_length(command);
        if (!cmd || cmd->t != J_ARR || cmd->n != nc || (cmd64 && cmd64->n != nc))
                abort();
        for (size_t i = 0; i < nc; i++)
                expect(command[i], &cmd->items[i], cmd64 ? &cmd64->items[i] : NULL);
        const jv *projects = member(&doc, "projects");
        if (!projects || projects->t != J_ARR || projects->n != 1)
                abort();
        const jv *p = &projects->items[0];
        expect(proj, member(p, "path"), member(p, "path_b64"));
        const jv *changes = member(p, "changes");
        if (!changes || changes->t != J_ARR || changes->n != cs->n_changes)
                abort();
        for (size_t i = 0; i < cs->n_changes; i++) {
                const jv *c = &changes->items[i];
                expect(cs->changes[i].path, member(c, "path"), member(c, "path_b64"));
                if (cs->changes[i].target)
                        expect(cs->changes[i].target, member(c, "target"), member(c, "target_b64"));
        }
        const jv *conflicts = member(p, "conflicts");
        if (!conflicts || conflicts->n != 1)
                abort();
        expect(conf.path, member(&conflicts->items[0], "path"), member(&conflicts->items[0], "path_b64"));
        expect(conf.kept_at, member(&conflicts->items[0], "kept_at"), member(&conflicts->items[0], "kept_at_b64"));

        jv_free(&doc);
        free(json);
        nsr_changeset_free(cs);
        nsr_strv_free(w);
        return 0;
}
