/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a run did, for humans (one summary line per project, an optional
 * listing) and for programs (a JSON document, version 1).
 *
 * The functions here only format; main.c prints. Byte strings from file
 * names and argv are shown with nsr_utf8_escape() in text, and losslessly
 * in JSON (see json.h: U+FFFD plus a "<key>_b64" sibling).
 *
 * JSON document, version 1 (member order as written):
 *
 *   {
 *     "version": 1,
 *     "run_id": "R",
 *     "command": ["argv0", ...],        + "command_b64": [...] if any
 *                                         element is not UTF-8, with
 *                                         every element encoded
 *     "exit_code": 0 | null,
 *     "signal": "SIGTERM" | null,
 *     "outcome": "committed",            the run's (nsr_outcome's names)
 *     "started_at": "2026-11-25T22:10:00.123Z",
 *     "duration_ms": 1234,
 *     "layers": ["...", ...],
 *     "interrupted": true,               only when interrupted
 *     "network": [ CONNECTION, ... ],    only with --allow-host, in the
 *                                         order the connections ended
 *     "network_dropped": N,              connections beyond the first
 *                                         10000, counted only (if any)
 *     "timed_out": true,                 only when --timeout expired
 *     "refused": {                       what the sandbox refused (project mode)
 *         "recorded": true,                a listener recorded the syscalls
 *                                          (false: none could be installed)
 *         "syscalls": [ {"name": "ptrace", "count": 3, "errno": "EPERM",
 *                        "first_comm": "strace"}, ... ],   largest count first
 *         "more": 0,                       calls of syscalls beyond the table
 *         "timeout": {"after_ms": 90000, "killed": true} | null,
 *                                          killed: SIGKILL was needed
 *         "limits": ["pids.max (3 forks refused)", ...],
 *         "connections": [ {"host": "example.net", "port": 443,
 *                           "reason": "host not in --allow-host",
 *                           "count": 2}, ... ]   with --allow-host: the
 *                                          connections the rules refused,
 *                                          one entry per host and port
 *     },
 *     "projects": [ {
 *         "path": "/p",
 *         "outcome": "committed",        the project's
 *         "changes": [ CHANGE, ... ],
 *         "protected": [ PROTECTED, ... ], every change dropped or
 *                                         reduced because it touches
 *                                         protected paths (protect.h)
 *         "conflicts": [ {"path", "reason", "kept_at"}, ... ],
 *                                         with "settled": "host" each
 *                                         under --on-conflict=prefer-host
 *         "overruled": [ {"path", "reason"}, ... ]  only with
 *                                         --on-conflict=prefer-sandbox:
 *                                         host changes the sandbox's
 *                                         version replaced (backed up)
 *         "errors": ["...", ...],
 *         "conflict_units": ["...", ...]    only when a conflict held back
 *                                         a whole git dir (its path)
 *         "split_hard_links": ["...", ...]  only when a replaced file had
 *                                         other hard links on the host,
 *                                         which keep the old content
 *     } ]
 *   }
 *
 *   CHANGE = {"path", "change" (kind name), "type", "size", "mode" ("0644"),
 *             "target" (symlinks that exist after the run only),
 *             "descendants" (deleted dirs and dirs replaced by another
 *             type only), "old_mode" (when the host entry had another
 *             mode)}
 *
 *   PROTECTED = {"path", "action" ("dropped", "config_reduced",
 *             "mode_reduced", "xattr_dropped"), "reason",
 *             dropped: "change", "type", "mode" of the dropped change;
 *             mode_reduced: "old_mode" (an entry the host had),
 *             "requested_mode", "mode" (the one applied);
 *             xattr_dropped: "xattr"}
 *
 * CONNECTION = {"host", "port", "protocol" ("http", "connect", "socks5"),
 *               "allowed", "reason" (why refused or failed, else null),
 *               "address" (the address connected to or refused, or null),
 *               "bytes_up", "bytes_down" (to and from the server),
 *               "started_at", "duration_ms"}
 *
 * Every "path", "target", "kept_at" and "command" element follows the
 * _b64 rule. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/error.h"
#include "base/json.h"
#include "egress/rules.h"
#include "project/protect.h"
#include "txn/changeset.h"
#include "txn/state.h"

#define NSR_REPORT_VERSION 1
/* A report larger than this is refused (-EFBIG) rather than written. */
#define NSR_REPORT_MAX_BYTES ((size_t) 256 * 1024 * 1024)

enum {
        NSR_REPORT_PRETTY = 1u << 0, /* indented JSON */
};

typedef struct nsr_report_conflict {
        const char *path;    /* relative to the project root */
        const char *reason;  /* e.g. "changed on the host during the run" */
        const char *kept_at; /* where the sandbox's version was kept */
} nsr_report_conflict;

typedef struct nsr_report_project {
        const char *path; /* the project root, absolute */
        nsr_outcome outcome;
        const nsr_changeset *changes;      /* NULL means none; written in set order */
        const nsr_protect_result *protect; /* NULL means none */
        const nsr_report_conflict *conflicts;
        size_t n_conflicts;
        char *const *errors;      /* NULL-terminated, may be NULL */
        char *const *split_links; /* replaced files whose other hard links kept the old content; may be NULL */
        char *const *held_units;  /* git dirs held back whole because part of them conflicted; may be NULL */
        char *const *overruled;   /* pairs of a path and the host change prefer-sandbox replaced; may be NULL */
        bool settled_for_host;    /* prefer-host: the conflicts are settled, the host's version stays */
} nsr_report_project;

typedef struct nsr_report_refused_call {
        const char *name; /* the syscall's name */
        uint64_t count;
        int errnum;       /* what the command got */
        const char *comm; /* the first caller's name, already escaped */
} nsr_report_refused_call;

typedef struct nsr_report_refused_conn {
        const char *host;
        int port;
        const char *reason; /* the first refusal's */
        uint64_t count;
} nsr_report_refused_conn;

typedef struct nsr_report_refused {
        bool recorded;
        const nsr_report_refused_call *calls; /* in the order to write */
        size_t n_calls;
        uint64_t more;
        bool timed_out;
        uint64_t timeout_ms;
        bool killed;
        char *const *limits;                        /* NULL-terminated, may be NULL */
        const nsr_report_refused_conn *connections; /* egress refusals, may be NULL */
        size_t n_connections;
} nsr_report_refused;

/* The "refused" member (also a session step's report, sesscommit.h). */
void nsr_report_emit_refused(nsr_json *j, const nsr_report_refused *rf);

/* Filled in by the caller; the report only borrows these pointers. */
typedef struct nsr_report {
        const char *run_id;
        char *const *command; /* argv, NULL-terminated */
        int exit_code;        /* < 0: null (killed by a signal, or never ran) */
        int signal;           /* 0: null */
        nsr_outcome outcome;
        struct timespec started_at; /* CLOCK_REALTIME */
        uint64_t duration_ms;
        char *const *layers;               /* NULL-terminated, may be NULL */
        bool interrupted;                  /* written only when true */
        bool timed_out;                    /* written only when true */
        const nsr_report_refused *refused; /* NULL: no "refused" member */
        const nsr_report_project *projects;
        size_t n_projects;
        size_t max_bytes;              /* 0: NSR_REPORT_MAX_BYTES */
        const nsr_egress_log *network; /* --allow-host runs only, else NULL */
        const nsr_error *error;        /* why the run failed: the "error" member, or NULL */
        const char *error_hint;        /* its hint (NULL: the kind's own) */
        uint64_t events_dropped;       /* --events-fd lines its reader did not take; written when > 0 */
} nsr_report;

/* Writes the JSON document to f, or returns it in *ret (NUL-terminated,
 * *ret_len without the NUL). flags: NSR_REPORT_PRETTY. Nothing is returned
 * on failure; a partial document may have been written to f. */
int nsr_report_write_json(const nsr_report *r, FILE *f, unsigned flags, nsr_error *err);
int nsr_report_to_json(const nsr_report *r, unsigned flags, char **ret, size_t *ret_len, nsr_error *err);
/* The calls of a refused-call record as the report lists them (calls has
 * room for rf->n_entries): most refused first, then by name. */
struct nsr_refused;
void nsr_report_refused_calls(const struct nsr_refused *rf, nsr_report_refused_call *calls);

/* A failure as the "error" member of a JSON object: {"kind", "message",
 * "hint"}, kind from nsr_error_kind_report_name(); hint NULL takes the
 * kind's own (nsr_error_kind_hint()), which may be null. */
void nsr_report_emit_error(nsr_json *j, const nsr_error *e, const char *hint);
/* The report of a project run that failed before a run was made (a bad
 * command line or profile, a missing project): {"version", "run_id": null,
 * "exit_code": null, "outcome": "failed", "error"}, as text with a
 * newline. NULL only if it cannot be built. */
char *nsr_report_error_json(const nsr_error *e, const char *hint);

/* One line, without a trailing newline:
 *   "nsrun: /p: 3 created, 1 modified, 2 deleted; applied (run R)"
 * Kinds with a zero count are left out ("no changes" when there are
 * none), "type_changed" reads "type changed". outcome and run_id may be
 * NULL, which leaves out "; outcome" and " (run R)". */
char *nsr_report_summary(const char *project_path, const nsr_changeset *cs, const char *outcome, const char *run_id);

/* One line per change, each ending in a newline ("" when empty):
 *   "created          src/new.c"
 *   "deleted          build/ (120 entries below)"
 *   "modified         link -> new-target"
 * The kind name padded to 16 columns, the escaped path, "/" after dirs. */
char *nsr_report_listing(const nsr_changeset *cs);

/* "SIGHUP" .. "SIGSYS" for 1..31; NULL for anything else. */
const char *nsr_report_signal_name(int sig);
