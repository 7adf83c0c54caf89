/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>

#include "base/error.h"

static const char *const kind_names[_NSR_ERR_KIND_MAX] = {
        [NSR_ERR_NONE] = "none",
        [NSR_ERR_SETUP] = "setup",
        [NSR_ERR_USAGE] = "usage",
        [NSR_ERR_EXEC] = "exec",
        [NSR_ERR_CLONE] = "clone",
        [NSR_ERR_USERNS_SETUP] = "userns-setup",
        [NSR_ERR_OVERLAY_MOUNT] = "overlay-mount",
        [NSR_ERR_CONFIG] = "config",
        [NSR_ERR_PROJECT_MISSING] = "project-missing",
        [NSR_ERR_STATE_FULL] = "state-full",
        [NSR_ERR_APPLY] = "apply",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_error_kind, nsr_error_kind, kind_names)

static const char *const report_names[_NSR_ERR_KIND_MAX] = {
        [NSR_ERR_NONE] = "setup-failed",
        [NSR_ERR_SETUP] = "setup-failed",
        [NSR_ERR_USAGE] = "usage",
        [NSR_ERR_EXEC] = "exec-failed",
        [NSR_ERR_CLONE] = "userns-refused",
        [NSR_ERR_USERNS_SETUP] = "userns-refused",
        [NSR_ERR_OVERLAY_MOUNT] = "overlay-refused",
        [NSR_ERR_CONFIG] = "config-invalid",
        [NSR_ERR_PROJECT_MISSING] = "project-missing",
        [NSR_ERR_STATE_FULL] = "state-dir-full",
        [NSR_ERR_APPLY] = "apply-failed",
};

const char *nsr_error_kind_report_name(nsr_error_kind k) {
        return k >= 0 && k < _NSR_ERR_KIND_MAX && report_names[k] ? report_names[k] : "setup-failed";
}

static const char *const kind_hints[_NSR_ERR_KIND_MAX] = {
        [NSR_ERR_USAGE] = "\"nsrun --help\" lists the options",
        [NSR_ERR_CONFIG] = "fix the file and line named; \"nsrun profile check FILE\" checks a profile",
        [NSR_ERR_PROJECT_MISSING] = "give --project an existing directory",
        [NSR_ERR_STATE_FULL] = "free space where the state dir is (\"nsrun gc\" prunes old runs) or give --state-dir",
        [NSR_ERR_APPLY] = "the run is kept: fix the cause, then \"nsrun commit RUN\"",
        [NSR_ERR_EXEC] = "check the command's name and that it is executable inside the sandbox",
        [NSR_ERR_CLONE] = "\"nsrun doctor\" says why; --sandbox=best-effort runs without user namespaces",
        [NSR_ERR_USERNS_SETUP] = "\"nsrun doctor\" says why; --sandbox=best-effort runs without user namespaces",
        [NSR_ERR_OVERLAY_MOUNT] = "\"nsrun doctor\" says why; --no-overlay writes live, with a snapshot to undo",
};

const char *nsr_error_kind_hint(nsr_error_kind k) {
        return k >= 0 && k < _NSR_ERR_KIND_MAX ? kind_hints[k] : NULL;
}

/* A new error replaces the kind and op of an earlier one in the same
 * struct: they describe this message. */
static int record(nsr_error *err, nsr_error_kind kind, int code, bool with_errno, const char *fmt, va_list ap)
        _printf_(5, 0);
static int record(nsr_error *err, nsr_error_kind kind, int code, bool with_errno, const char *fmt, va_list ap) {
        if (code < 0)
                code = -code;
        if (err) {
                err->code = code;
                err->with_errno = with_errno && code != 0;
                err->kind = kind;
                err->op = 0;
                vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        }
        return code ? -code : -EIO;
}

int nsr_error_set(nsr_error *err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = record(err, NSR_ERR_SETUP, code, true, fmt, ap);
        va_end(ap);
        return r;
}

int nsr_error_setx(nsr_error *err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = record(err, NSR_ERR_SETUP, code, false, fmt, ap);
        va_end(ap);
        return r;
}

int nsr_error_setk(nsr_error *err, nsr_error_kind kind, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = record(err, kind, code, true, fmt, ap);
        va_end(ap);
        return r;
}

int nsr_error_setxk(nsr_error *err, nsr_error_kind kind, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = record(err, kind, code, false, fmt, ap);
        va_end(ap);
        return r;
}

void nsr_error_sanitize(nsr_error *err) {
        if ((unsigned) err->kind >= _NSR_ERR_KIND_MAX)
                err->kind = NSR_ERR_SETUP;
        err->msg[sizeof(err->msg) - 1] = '\0';
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
