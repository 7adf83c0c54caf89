/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Git config read strictly: a new repository's config reduced to the keys
 * that cannot run anything (nsr_protect_git_config_reduce), and the
 * core.hooksPath a config names (nsr_protect_git_config_hooks_path). Pure. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "project/protect-internal.h"

/* ---- git config, read strictly --------------------------------------------------- */

typedef struct cfg_key {
        char section[32];
        char sub[256];
        bool has_sub;
        char key[64];
        char *value; /* NULL: a bare key (boolean true) */
} cfg_key;

static bool is_blank(char ch) {
        return ch == ' ' || ch == '\t';
}

static bool clean_bytes(const char *s, const char *e) {
        for (; s < e; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return false;
        return true;
}

/* "[section]" or "[section "sub"]", an optional comment after it. */
static bool parse_header(const char *s, const char *e, cfg_key *k) {
        s++;
        size_t n = 0;
        while (s < e && (isalnum((unsigned char) *s) || *s == '-')) {
                if (n + 1 >= sizeof(k->section))
                        return false;
                k->section[n++] = (char) tolower((unsigned char) *s++);
        }
        k->section[n] = '\0';
        if (n == 0)
                return false;
        k->has_sub = false;
        if (s < e && *s == ' ') {
                s++;
                if (s >= e || *s != '"')
                        return false;
                s++;
                size_t m = 0;
                while (s < e && *s != '"') {
                        if (*s == '\\' || m + 1 >= sizeof(k->sub))
                                return false;
                        k->sub[m++] = *s++;
                }
                if (s >= e || m == 0)
                        return false;
                k->sub[m] = '\0';
                k->has_sub = true;
                s++;
        }
        if (s >= e || *s != ']')
                return false;
        s++;
        while (s < e && is_blank(*s))
                s++;
        return s == e || *s == '#' || *s == ';';
}

/* A value: plain, or wholly in double quotes; no escapes, no comment
 * characters, no control bytes. NULL when odd. */
static char *strict_value(const char *s, const char *e) {
        while (s < e && is_blank(*s))
                s++;
        while (e > s && is_blank(e[-1]))
                e--;
        if (e - s >= 2 && *s == '"' && e[-1] == '"') {
                s++;
                e--;
        }
        for (const char *p = s; p < e; p++)
                if (*p == '"' || *p == '\\' || *p == '#' || *p == ';')
                        return NULL;
        return nsr_strndup(s, (size_t) (e - s));
}

/* git's own reading of a value (quotes, \\ \" \n \t \b, comments), for the
 * host's config. */
static char *lenient_value(const char *s, const char *e) {
        char *out = nsr_malloc0((size_t) (e - s) + 1);
        size_t n = 0, keep = 0;
        bool quoted = false;
        while (s < e && is_blank(*s))
                s++;
        for (; s < e; s++) {
                if (*s == '"') {
                        quoted = !quoted;
                        keep = n;
                        continue;
                }
                if (!quoted && (*s == '#' || *s == ';'))
                        break;
                if (*s == '\\' && s + 1 < e) {
                        s++;
                        char ch = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'b' ? '\b' : *s;
                        out[n++] = ch;
                        keep = n;
                        continue;
                }
                out[n++] = *s;
                if (quoted || !is_blank(*s))
                        keep = n;
        }
        out[keep] = '\0';
        return out;
}

/* Calls fn for every key line; *valid_section false for keys under a
 * header that could not be read. Returns the number of odd lines. */
static size_t cfg_walk(const char *in, size_t len, bool strict, void (*fn)(const cfg_key *k, bool ok, void *userdata),
                       void *userdata) {
        cfg_key k = { .section = "" };
        bool section_ok = false;
        size_t odd = 0;
        const char *end = in + len;
        for (const char *s = in; s < end;) {
                const char *e = memchr(s, '\n', (size_t) (end - s));
                if (!e)
                        e = end;
                const char *next = e < end ? e + 1 : end;
                while (s < e && is_blank(*s))
                        s++;
                if (s == e || *s == '#' || *s == ';') {
                        s = next;
                        continue;
                }
                bool line_ok = clean_bytes(s, e) && (e == s || e[-1] != '\\');
                if (*s == '[') {
                        section_ok = line_ok && parse_header(s, e, &k);
                        odd += !section_ok;
                        s = next;
                        continue;
                }
                size_t n = 0;
                const char *p = s;
                if (isalpha((unsigned char) *p))
                        while (p < e && (isalnum((unsigned char) *p) || *p == '-') && n + 1 < sizeof(k.key))
                                k.key[n++] = (char) tolower((unsigned char) *p++);
                k.key[n] = '\0';
                while (p < e && is_blank(*p))
                        p++;
                bool ok = line_ok && section_ok && n > 0 && (p == e || *p == '=');
                k.value = NULL;
                if (ok && p < e) {
                        k.value = strict ? strict_value(p + 1, e) : lenient_value(p + 1, e);
                        ok = k.value != NULL;
                }
                if (!ok)
                        odd++;
                fn(&k, ok, userdata);
                free(k.value);
                k.value = NULL;
                s = next;
        }
        return odd;
}

static bool is_bool(const char *v) {
        static const char *const words[] = { "true", "false", "yes", "no", "on", "off", "1", "0" };
        if (!v)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (strcasecmp(v, words[i]) == 0)
                        return true;
        return false;
}

/* Printable, no blanks, no option-looking start. */
static bool is_token(const char *v) {
        if (!v || !*v || *v == '-')
                return false;
        for (const char *p = v; *p; p++)
                if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7f)
                        return false;
        return true;
}

static bool name_ok(const char *s) {
        if (!*s || *s == '-' || strstr(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("._/-", *p))
                        return false;
        return true;
}

static bool key_allowed(const cfg_key *k) {
        const char *v = k->value;
        if (streq(k->section, "core") && !k->has_sub) {
                if (streq(k->key, "repositoryformatversion"))
                        return v && (streq(v, "0") || streq(v, "1"));
                if (streq(k->key, "logallrefupdates"))
                        return is_bool(v) || (v && strcasecmp(v, "always") == 0);
                return (streq(k->key, "bare") || streq(k->key, "filemode") || streq(k->key, "ignorecase") ||
                        streq(k->key, "precomposeunicode") || streq(k->key, "symlinks")) &&
                       is_bool(v);
        }
        if (streq(k->section, "extensions") && !k->has_sub) {
                if (streq(k->key, "objectformat"))
                        return v && (streq(v, "sha1") || streq(v, "sha256"));
                if (streq(k->key, "refstorage"))
                        return v && (streq(v, "files") || streq(v, "reftable"));
                return false;
        }
        if (streq(k->section, "remote") && k->has_sub && name_ok(k->sub)) {
                /* "transport::address" runs git-remote-transport, ext::
                 * any command. */
                if (streq(k->key, "url"))
                        return is_token(v) && !strstr(v, "::");
                return streq(k->key, "fetch") && is_token(v);
        }
        if (streq(k->section, "branch") && k->has_sub && name_ok(k->sub))
                return (streq(k->key, "remote") || streq(k->key, "merge")) && is_token(v) && !strstr(v, "::");
        return false;
}

typedef struct reduce_ctx {
        FILE *f;
        char last_section[32];
        char last_sub[256];
        bool last_has_sub;
        bool any;
        size_t dropped;
} reduce_ctx;

static void reduce_cb(const cfg_key *k, bool ok, void *userdata) {
        reduce_ctx *rc = userdata;
        if (!ok)
                return; /* counted as odd */
        if (!key_allowed(k)) {
                rc->dropped++;
                return;
        }
        if (!rc->any || !streq(rc->last_section, k->section) || rc->last_has_sub != k->has_sub ||
            (k->has_sub && !streq(rc->last_sub, k->sub))) {
                if (k->has_sub)
                        fprintf(rc->f, "[%s \"%s\"]\n", k->section, k->sub);
                else
                        fprintf(rc->f, "[%s]\n", k->section);
                snprintf(rc->last_section, sizeof(rc->last_section), "%s", k->section);
                snprintf(rc->last_sub, sizeof(rc->last_sub), "%s", k->has_sub ? k->sub : "");
                rc->last_has_sub = k->has_sub;
                rc->any = true;
        }
        fprintf(rc->f, "\t%s = %s\n", k->key, k->value ? k->value : "true");
}

int nsr_protect_git_config_reduce(const char *in, size_t len, char **ret, size_t *ret_dropped) {
        if (len > CONFIG_MAX)
                return -E2BIG;
        char *buf = NULL;
        size_t blen = 0;
        reduce_ctx rc = { .f = open_memstream(&buf, &blen) };
        if (!rc.f)
                return -ENOMEM;
        fputs("# reduced by nsrun to keys that run nothing\n", rc.f);
        size_t odd = cfg_walk(in, len, true, reduce_cb, &rc);
        fclose(rc.f);
        *ret = buf;
        *ret_dropped = odd + rc.dropped;
        return 0;
}

typedef struct hooks_ctx {
        char *value;
} hooks_ctx;

static void hooks_cb(const cfg_key *k, bool ok, void *userdata) {
        hooks_ctx *hc = userdata;
        if (ok && streq(k->section, "core") && !k->has_sub && streq(k->key, "hookspath") && k->value) {
                free(hc->value);
                hc->value = nsr_strdup(k->value);
        }
}

char *nsr_protect_git_config_hooks_path(const char *in, size_t len) {
        hooks_ctx hc = { 0 };
        (void) cfg_walk(in, len < CONFIG_MAX ? len : CONFIG_MAX, false, hooks_cb, &hc);
        if (hc.value && !*hc.value) {
                free(hc.value);
                return NULL;
        }
        return hc.value;
}
