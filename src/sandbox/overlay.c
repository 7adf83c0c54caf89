/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>

#include "base/util.h"
#include "sandbox/overlay.h"

char *nsr_overlay_escape(const char *path) {
        size_t n = strlen(path);
        char *out = nsr_malloc0(2 * n + 1);
        char *o = out;
        for (const char *s = path; *s; s++) {
                if (*s == ',' || *s == ':' || *s == '\\')
                        *o++ = '\\';
                *o++ = *s;
        }
        *o = '\0';
        return out;
}

static void append(char **buf, size_t *len, const char *s) {
        size_t l = strlen(s);
        *buf = nsr_realloc_array(*buf, *len + l + 1, 1);
        memcpy(*buf + *len, s, l + 1);
        *len += l;
}

static void append_path(char **buf, size_t *len, const char *prefix, const char *path) {
        _cleanup_free_ char *e = nsr_overlay_escape(path);
        append(buf, len, prefix);
        append(buf, len, e);
}

char *nsr_overlay_options(const char *prefix, const char *upper, const char *work, char *const *lowers_top_first,
                          size_t n_lowers) {
        char *buf = nsr_strdup("");
        size_t len = 0;
        if (upper) {
                append(&buf, &len, "upperdir=");
                append_path(&buf, &len, prefix, upper);
                append(&buf, &len, ",workdir=");
                append_path(&buf, &len, prefix, work ? work : "");
                append(&buf, &len, ",");
        }
        append(&buf, &len, "lowerdir=");
        for (size_t i = 0; i < n_lowers; i++) {
                if (i > 0)
                        append(&buf, &len, ":");
                append_path(&buf, &len, prefix, lowers_top_first[i]);
        }
        append(&buf, &len, ",userxattr");
        return buf;
}
