/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsr_error: where a failure happened, in one fixed-size struct.
 *
 * It is fixed-size so that the sandbox child can send it to the monitor over
 * the sync pipe, and so that it never needs freeing. Functions that fail
 * record the error once, at the place it happened, and return -errno; only
 * main.c prints it. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>

#include "base/util.h"

#define NSR_ERROR_MSG_MAX 1024

typedef enum nsr_error_kind {
        NSR_ERR_NONE = 0,
        NSR_ERR_SETUP, /* a generic failure: nsrun's own problem */
        NSR_ERR_USAGE, /* bad input on the command line */
        NSR_ERR_EXEC,  /* the command could not be executed */
        /* The steps a host's policy on user namespaces breaks, which
         * doctor explains (nsr_hostcheck_hint()): */
        NSR_ERR_CLONE,         /* creating the namespaces (clone, unshare) */
        NSR_ERR_USERNS_SETUP,  /* the id maps and the first mounts in the new user namespace */
        NSR_ERR_OVERLAY_MOUNT, /* an overlay mount of the plan (op names which) */
        /* Failures a program driving nsrun acts on (the report's
         * error.kind, nsr_error_kind_report_name()): */
        NSR_ERR_CONFIG,          /* a profile or config file is invalid */
        NSR_ERR_PROJECT_MISSING, /* a --project dir does not exist */
        NSR_ERR_STATE_FULL,      /* the state dir's file system is full */
        NSR_ERR_APPLY,           /* applying a run's changes to a project failed */
        _NSR_ERR_KIND_MAX,
        _NSR_ERR_KIND_INVALID = -EINVAL,
} nsr_error_kind;

typedef struct nsr_error {
        int code;            /* positive errno, or 0 */
        bool with_errno;     /* append ": strerror(code)" when printed */
        bool usage;          /* also print the usage hint? (bwrap does not) */
        nsr_error_kind kind; /* what failed: callers branch on this, never on msg */
        unsigned op;         /* the mount op that failed: 1 + its index in the plan's ops; 0: none */
        char msg[NSR_ERROR_MSG_MAX];
} nsr_error;

/* Records "msg: strerror(code)", of kind NSR_ERR_SETUP (op 0). Returns
 * -code (or -EIO when code is 0). */
int nsr_error_set(nsr_error *err, int code, const char *fmt, ...) _printf_(3, 4);
/* Records "msg" without the strerror suffix. Returns -code. */
int nsr_error_setx(nsr_error *err, int code, const char *fmt, ...) _printf_(3, 4);
/* The same, of the given kind. */
int nsr_error_setk(nsr_error *err, nsr_error_kind kind, int code, const char *fmt, ...) _printf_(4, 5);
int nsr_error_setxk(nsr_error *err, nsr_error_kind kind, int code, const char *fmt, ...) _printf_(4, 5);
/* The kind as a name ("clone", "overlay-mount", ...), for tests and logs. */
const char *nsr_error_kind_to_string(nsr_error_kind k);
/* The kind as the report and --json outputs name it, a documented and
 * stable set (nsrun(1), ERRORS): "userns-refused", "overlay-refused",
 * "usage", "config-invalid", "project-missing", "state-dir-full",
 * "apply-failed", "exec-failed", "setup-failed". Never NULL. */
const char *nsr_error_kind_report_name(nsr_error_kind k);
/* What to do about an error of that kind, one line, or NULL. */
const char *nsr_error_kind_hint(nsr_error_kind k);
/* An error that crossed a pipe from another process: an unknown kind
 * becomes NSR_ERR_SETUP, and the message is terminated. */
void nsr_error_sanitize(nsr_error *err);
/* Prepends "prefix: " to an already recorded message; kind and op stay.
 * Returns -err->code. */
int nsr_error_prefix(nsr_error *err, const char *fmt, ...) _printf_(2, 3);
void nsr_error_clear(nsr_error *err);
/* Formats the message as it is printed: "msg[: strerror]". */
void nsr_error_format(const nsr_error *err, char *buf, size_t len);
