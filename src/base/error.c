/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>

#include "base/error.h"

static int record(nsr_error *err, int code, bool with_errno, const char *fmt, va_list ap) _printf_(4, 0);
static int record(nsr_error *err, int code, bool with_errno, const char *fmt, va_list ap) {
        if (code < 0)
                code = -code;
        if (err) {
                err->code = code;
                err->with_errno = with_errno && code != 0;
                if (err->kind == NSR_ERR_NONE)
                        err->kind = NSR_ERR_SETUP;
                vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        }
        return code ? -code : -EIO;
}

int nsr_error_set(nsr_error *err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = record(err, code, true, fmt, ap);
        va_end(ap);
        return r;
}

int nsr_error_setx(nsr_error *err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = record(err, code, false, fmt, ap);
        va_end(ap);
        return r;
}

int nsr_error_prefix(nsr_error *err, const char *fmt, ...) {
        if (!err)
                return -EIO;
        char prefix[NSR_ERROR_MSG_MAX], old[NSR_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof(old));
        /* prefix + ": " + old, truncated to fit. */
        size_t lp = strnlen(prefix, sizeof(err->msg) - 1);
        memcpy(err->msg, prefix, lp);
        size_t o = lp;
        for (const char *s = ": "; *s && o < sizeof(err->msg) - 1; s++)
                err->msg[o++] = *s;
        size_t lo = strnlen(old, sizeof(old));
        if (lo > sizeof(err->msg) - 1 - o)
                lo = sizeof(err->msg) - 1 - o;
        memcpy(err->msg + o, old, lo);
        err->msg[o + lo] = '\0';
        return err->code ? -err->code : -EIO;
}

void nsr_error_clear(nsr_error *err) {
        if (err)
                memset(err, 0, sizeof(*err));
}

void nsr_error_format(const nsr_error *err, char *buf, size_t len) {
        if (err->with_errno)
                snprintf(buf, len, "%s: %s", err->msg, strerror(err->code));
        else
                snprintf(buf, len, "%s", err->msg);
}
