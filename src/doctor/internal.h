/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What checks.c (names, verdict, explanations, the runner) and
 * probes.c (the probes) share: small text helpers. Private to them. */
#pragma once

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "doctor/checks.h"

/* The kernel refuses a file system stacked deeper than this
 * (FILESYSTEM_MAX_STACK_DEPTH): a plain file system is depth 0, an overlay
 * one more than its deepest layer. */
#define OVERLAY_MAX_DEPTH 2

_printf_(2, 3) static inline void check_ok(nsr_check *c, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        c->ok = true;
        vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
        c->fix[0] = '\0';
        va_end(ap);
}

_printf_(2, 3) static inline void check_fail(nsr_check *c, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        c->ok = false;
        vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
        va_end(ap);
}

_printf_(2, 3) static inline void check_fix(nsr_check *c, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->fix, sizeof(c->fix), fmt, ap);
        va_end(ap);
}

static inline const char *errno_name(int e) {
        switch (e) {
        case EPERM:
                return "EPERM";
        case EACCES:
                return "EACCES";
        case ENOENT:
                return "ENOENT";
        case ENOSPC:
                return "ENOSPC";
        case EINVAL:
                return "EINVAL";
        case EUSERS:
                return "EUSERS";
        case ENOSYS:
                return "ENOSYS";
        case EOPNOTSUPP:
                return "EOPNOTSUPP";
        case EBUSY:
                return "EBUSY";
        case ELOOP:
                return "ELOOP";
        case ENOMEM:
                return "ENOMEM";
        case EFAULT:
                return "EFAULT";
        case ENODEV:
                return "ENODEV";
        case EROFS:
                return "EROFS";
        default:
                return NULL;
        }
}

/* "No space left on device (ENOSPC)"; a struct, so it can be used inside
 * one printf call without a buffer at every call site. */
typedef struct errtext {
        char s[96];
} errtext;

static inline errtext errtxt(int e) {
        errtext t;
        const char *n = errno_name(e);
        if (n)
                snprintf(t.s, sizeof(t.s), "%s (%s)", strerror(e), n);
        else
                snprintf(t.s, sizeof(t.s), "%s", strerror(e));
        return t;
}

/* Appends s to buf, "; "-separated. */
static inline void append(char *buf, size_t len, const char *s) {
        size_t used = strnlen(buf, len);
        if (used + 1 >= len)
                return;
        snprintf(buf + used, len - used, "%s%s", used ? "; " : "", s);
}
