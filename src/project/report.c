/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/utf8.h"
#include "project/report.h"
#include "seccomp/policy.h"
#include "seccomp/refused.h"

static const char *const signal_names[] = {
        [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",       [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
        [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",     [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
        [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1",     [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
        [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",     [SIGTERM] = "SIGTERM", [SIGSTKFLT] = "SIGSTKFLT",
        [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",     [SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP",
        [SIGTTIN] = "SIGTTIN", [SIGTTOU] = "SIGTTOU",     [SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU",
        [SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH",
        [SIGIO] = "SIGIO",     [SIGPWR] = "SIGPWR",       [SIGSYS] = "SIGSYS",
};

DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(signal, int, signal_names)

const char *nsr_report_signal_name(int sig) {
        return signal_to_string(sig); /* signal_names[0] is NULL */
}

/* ---- text ------------------------------------------------------------- */

static void append(char **buf, size_t *len, const char *s) {
        size_t l = strlen(s);
        *buf = nsr_realloc_array(*buf, *len + l + 1, 1);
        memcpy(*buf + *len, s, l + 1);
        *len += l;
}

static const char *const human_kinds[_NSR_CHANGE_KIND_MAX] = {
        [NSR_CHANGE_CREATED] = "created",
        [NSR_CHANGE_MODIFIED] = "modified",
        [NSR_CHANGE_DELETED] = "deleted",
        [NSR_CHANGE_TYPE_CHANGED] = "type changed",
        [NSR_CHANGE_METADATA_CHANGED] = "metadata changed",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(human_kind, nsr_change_kind, human_kinds)

static const char *human_kind(nsr_change_kind k) {
        return human_kind_to_string(k) ?: "?";
}

char *nsr_report_summary(const char *project_path, const nsr_changeset *cs, const char *outcome, const char *run_id) {
        _cleanup_free_ char *p = nsr_utf8_escape(project_path ? project_path : "");
        char *buf = nsr_asprintf("nsrun: %s: ", p);
        size_t len = strlen(buf);
        bool any = false;
        for (int k = 0; k < _NSR_CHANGE_KIND_MAX; k++) {
                size_t n = nsr_changeset_count(cs, (nsr_change_kind) k);
                if (n == 0)
                        continue;
                _cleanup_free_ char *part =
                        nsr_asprintf("%s%zu %s", any ? ", " : "", n, human_kind((nsr_change_kind) k));
                append(&buf, &len, part);
                any = true;
        }
        if (!any)
                append(&buf, &len, "no changes");
        if (outcome) {
                _cleanup_free_ char *o = nsr_utf8_escape(outcome);
                append(&buf, &len, "; ");
                append(&buf, &len, o);
        }
        if (run_id) {
                _cleanup_free_ char *r = nsr_utf8_escape(run_id);
                _cleanup_free_ char *part = nsr_asprintf(" (run %s)", r);
                append(&buf, &len, part);
        }
        return buf;
}

static char *meta_list(unsigned meta) {
        static const struct {
                unsigned flag;
                const char *name;
        } names[] = {
                { NSR_META_MODE, "mode" },
                { NSR_META_OWNER, "owner" },
                { NSR_META_XATTRS, "xattrs" },
                { NSR_META_MTIME, "mtime" },
        };
        char *buf = nsr_strdup("");
        size_t len = 0;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (meta & names[i].flag) {
                        if (len > 0)
                                append(&buf, &len, ", ");
                        append(&buf, &len, names[i].name);
                }
        return buf;
}

char *nsr_report_listing(const nsr_changeset *cs) {
        char *buf = nsr_strdup("");
        size_t len = 0;
        for (size_t i = 0; i < nsr_changeset_size(cs); i++) {
                const nsr_change *c = &cs->changes[i];
                _cleanup_free_ char *p = nsr_utf8_escape(c->path);
                _cleanup_free_ char *extra = NULL;
                if (c->target) {
                        _cleanup_free_ char *t = nsr_utf8_escape(c->target);
                        extra = nsr_asprintf(" -> %s", t);
                } else if (c->kind == NSR_CHANGE_DELETED && c->type == NSR_ENTRY_DIR)
                        extra = nsr_asprintf(" (%" PRIu64 " entries below)", c->descendants);
                if (c->kind == NSR_CHANGE_TYPE_CHANGED && c->old.exists) {
                        _cleanup_free_ char *prev = TAKE_PTR(extra);
                        extra = nsr_asprintf("%s (was %s)", prev ? prev : "", nsr_entry_type_to_string(c->old.type));
                } else if (c->kind == NSR_CHANGE_METADATA_CHANGED && c->meta) {
                        _cleanup_free_ char *m = meta_list(c->meta);
                        _cleanup_free_ char *prev = TAKE_PTR(extra);
                        extra = nsr_asprintf("%s (%s)", prev ? prev : "", m);
                }
                _cleanup_free_ char *line = nsr_asprintf("%-16s %s%s%s\n", nsr_change_kind_to_string(c->kind), p,
                                                         c->type == NSR_ENTRY_DIR ? "/" : "", extra ? extra : "");
                append(&buf, &len, line);
        }
        return buf;
}

/* ---- JSON ------------------------------------------------------------- */

static void emit_change(nsr_json *j, const nsr_change *c) {
        char mode[16];
        snprintf(mode, sizeof(mode), "%04o", (unsigned) (c->mode & 07777));
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "path", c->path);
        nsr_json_string(j, "change", nsr_change_kind_to_string(c->kind));
        nsr_json_string(j, "type", nsr_entry_type_to_string(c->type));
        nsr_json_uint(j, "size", c->size);
        nsr_json_string(j, "mode", mode);
        if (c->target)
                nsr_json_string(j, "target", c->target);
        if (c->old.exists && c->kind != NSR_CHANGE_DELETED && c->type != NSR_ENTRY_SYMLINK &&
            c->old.type != NSR_ENTRY_SYMLINK && (c->old.mode & 07777) != (c->mode & 07777)) {
                char old[16];
                snprintf(old, sizeof(old), "%04o", (unsigned) (c->old.mode & 07777));
                nsr_json_string(j, "old_mode", old);
        }
        bool dir_gone = (c->kind == NSR_CHANGE_DELETED && c->type == NSR_ENTRY_DIR) ||
                        (c->kind == NSR_CHANGE_TYPE_CHANGED && c->old.exists && c->old.type == NSR_ENTRY_DIR);
        if (dir_gone)
                nsr_json_uint(j, "descendants", c->descendants);
        nsr_json_object_end(j);
}

static void emit_changes(nsr_json *j, const char *key, const nsr_changeset *cs) {
        nsr_json_array_begin(j, key);
        for (size_t i = 0; i < nsr_changeset_size(cs); i++)
                emit_change(j, &cs->changes[i]);
        nsr_json_array_end(j);
}

static void json_mode(nsr_json *j, const char *key, mode_t m) {
        char buf[16];
        snprintf(buf, sizeof(buf), "%04o", (unsigned) (m & 07777));
        nsr_json_string(j, key, buf);
}

static void emit_protected(nsr_json *j, const nsr_protect_result *res) {
        nsr_json_array_begin(j, "protected");
        for (size_t i = 0; res && i < res->n_notes; i++) {
                const nsr_protect_note *n = &res->notes[i];
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "path", n->path);
                nsr_json_string(j, "action", nsr_protect_action_to_string(n->action));
                nsr_json_string(j, "reason", n->reason);
                const nsr_change *c =
                        n->action == NSR_PROTECT_DROPPED ? nsr_changeset_lookup(res->dropped, n->path) : NULL;
                if (c) {
                        nsr_json_string(j, "change", nsr_change_kind_to_string(c->kind));
                        nsr_json_string(j, "type", nsr_entry_type_to_string(c->type));
                        json_mode(j, "mode", c->mode);
                }
                if (n->action == NSR_PROTECT_MODE_REDUCED) {
                        if (n->old_exists)
                                json_mode(j, "old_mode", n->old_mode);
                        json_mode(j, "requested_mode", n->requested);
                        json_mode(j, "mode", n->mode);
                }
                if (n->action == NSR_PROTECT_XATTR_DROPPED && n->detail)
                        nsr_json_string(j, "xattr", n->detail);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
}

static void emit_project(nsr_json *j, const nsr_report_project *p) {
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "path", p->path);
        nsr_json_string(j, "outcome", nsr_outcome_to_string(p->outcome));
        emit_changes(j, "changes", p->changes);
        emit_protected(j, p->protect);
        nsr_json_array_begin(j, "conflicts");
        for (size_t i = 0; i < p->n_conflicts; i++) {
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "path", p->conflicts[i].path);
                nsr_json_string(j, "reason", p->conflicts[i].reason);
                nsr_json_string(j, "kept_at", p->conflicts[i].kept_at);
                if (p->settled_for_host)
                        nsr_json_string(j, "settled", "host");
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        if (p->overruled) {
                nsr_json_array_begin(j, "overruled");
                for (size_t i = 0; p->overruled[i] && p->overruled[i + 1]; i += 2) {
                        nsr_json_object_begin(j, NULL);
                        nsr_json_string(j, "path", p->overruled[i]);
                        nsr_json_string(j, "reason", p->overruled[i + 1]);
                        nsr_json_object_end(j);
                }
                nsr_json_array_end(j);
        }
        nsr_json_strv(j, "errors", p->errors);
        if (p->held_units)
                nsr_json_strv(j, "conflict_units", p->held_units);
        if (p->split_links)
                nsr_json_strv(j, "split_hard_links", p->split_links);
        nsr_json_object_end(j);
}

void nsr_report_emit_refused(nsr_json *j, const nsr_report_refused *rf) {
        nsr_json_object_begin(j, "refused");
        nsr_json_bool(j, "recorded", rf->recorded);
        nsr_json_array_begin(j, "syscalls");
        for (size_t i = 0; i < rf->n_calls; i++) {
                const nsr_report_refused_call *c = &rf->calls[i];
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "name", c->name);
                nsr_json_uint(j, "count", c->count);
                const char *e = nsr_policy_errno_name(c->errnum);
                if (e)
                        nsr_json_string(j, "errno", e);
                else
                        nsr_json_int(j, "errno", c->errnum);
                nsr_json_string(j, "first_comm", c->comm);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        nsr_json_uint(j, "more", rf->more);
        if (rf->timed_out) {
                nsr_json_object_begin(j, "timeout");
                nsr_json_uint(j, "after_ms", rf->timeout_ms);
                nsr_json_bool(j, "killed", rf->killed);
                nsr_json_object_end(j);
        } else
                nsr_json_null(j, "timeout");
        nsr_json_strv(j, "limits", rf->limits);
        if (rf->connections) {
                nsr_json_array_begin(j, "connections");
                for (size_t i = 0; i < rf->n_connections; i++) {
                        const nsr_report_refused_conn *c = &rf->connections[i];
                        nsr_json_object_begin(j, NULL);
                        nsr_json_string(j, "host", c->host);
                        nsr_json_int(j, "port", c->port);
                        nsr_json_string(j, "reason", c->reason);
                        nsr_json_uint(j, "count", c->count);
                        nsr_json_object_end(j);
                }
                nsr_json_array_end(j);
        }
        nsr_json_object_end(j);
}

static int emit_report(nsr_json *j, const nsr_report *r, nsr_error *err) {
        char when[32];
        int k = nsr_json_format_time(&r->started_at, when, sizeof(when));
        if (k < 0)
                return nsr_error_setx(err, -k, "report: start time out of range");

        nsr_json_object_begin(j, NULL);
        nsr_json_int(j, "version", NSR_REPORT_VERSION);
        nsr_json_string(j, "run_id", r->run_id);
        nsr_json_strv(j, "command", r->command);
        if (r->exit_code >= 0)
                nsr_json_int(j, "exit_code", r->exit_code);
        else
                nsr_json_null(j, "exit_code");
        if (r->signal > 0) {
                const char *name = nsr_report_signal_name(r->signal);
                char other[32];
                if (!name) {
                        /* Real-time signals have no fixed name. */
                        snprintf(other, sizeof(other), "SIG%d", r->signal);
                        name = other;
                }
                nsr_json_string(j, "signal", name);
        } else
                nsr_json_null(j, "signal");
        nsr_json_string(j, "outcome", nsr_outcome_to_string(r->outcome));
        nsr_json_string(j, "started_at", when);
        nsr_json_uint(j, "duration_ms", r->duration_ms);
        nsr_json_strv(j, "layers", r->layers);
        if (r->interrupted)
                nsr_json_bool(j, "interrupted", true);
        if (r->network) {
                nsr_json_array_begin(j, "network");
                for (size_t i = 0; i < r->network->n_records; i++)
                        nsr_egress_record_emit(j, &r->network->records[i]);
                nsr_json_array_end(j);
                if (r->network->n_dropped)
                        nsr_json_uint(j, "network_dropped", r->network->n_dropped);
                if (r->network->n_log_dropped)
                        nsr_json_uint(j, "net_log_dropped", r->network->n_log_dropped);
                if (r->network->helper_died)
                        nsr_json_bool(j, "network_helper_died", true);
                if (nsr_egress_log_mode(r->network))
                        nsr_json_string(j, "network_mode", nsr_egress_log_mode(r->network));
        }
        if (r->events_dropped)
                nsr_json_uint(j, "events_dropped", r->events_dropped);
        if (r->timed_out)
                nsr_json_bool(j, "timed_out", true);
        if (r->refused)
                nsr_report_emit_refused(j, r->refused);
        if (r->error)
                nsr_report_emit_error(j, r->error, r->error_hint);
        nsr_json_array_begin(j, "projects");
        for (size_t i = 0; i < r->n_projects; i++)
                emit_project(j, &r->projects[i]);
        nsr_json_array_end(j);
        nsr_json_object_end(j);
        return 0;
}

static int report_json(const nsr_report *r, FILE *f, unsigned flags, char **ret, size_t *ret_len, nsr_error *err) {
        size_t max = r->max_bytes ? r->max_bytes : NSR_REPORT_MAX_BYTES;
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(f, max, (flags & NSR_REPORT_PRETTY) ? NSR_JSON_PRETTY : 0);
        int k = emit_report(j, r, err);
        if (k < 0)
                return k;
        return nsr_json_finish(j, "report", ret, ret_len, err);
}

int nsr_report_write_json(const nsr_report *r, FILE *f, unsigned flags, nsr_error *err) {
        if (!f)
                return nsr_error_setx(err, EINVAL, "report: no output stream");
        return report_json(r, f, flags, NULL, NULL, err);
}

int nsr_report_to_json(const nsr_report *r, unsigned flags, char **ret, size_t *ret_len, nsr_error *err) {
        return report_json(r, NULL, flags, ret, ret_len, err);
}

void nsr_report_emit_error(nsr_json *j, const nsr_error *e, const char *hint) {
        char msg[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(e, msg, sizeof(msg));
        nsr_json_object_begin(j, "error");
        nsr_json_string(j, "kind", nsr_error_kind_report_name(e->kind));
        nsr_json_string(j, "message", msg);
        nsr_json_string(j, "hint", hint ? hint : nsr_error_kind_hint(e->kind));
        nsr_json_object_end(j);
}

char *nsr_report_error_json(const nsr_error *e, const char *hint) {
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(NULL, NSR_REPORT_MAX_BYTES, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_int(j, "version", NSR_REPORT_VERSION);
        nsr_json_null(j, "run_id");
        nsr_json_null(j, "exit_code");
        nsr_json_string(j, "outcome", nsr_outcome_to_string(NSR_OUTCOME_FAILED));
        nsr_report_emit_error(j, e, hint);
        nsr_json_object_end(j);
        char *text = NULL;
        nsr_error ignored = { 0 };
        if (nsr_json_finish(j, "report", &text, NULL, &ignored) < 0)
                return NULL;
        return text;
}

static int by_count(const void *x, const void *y) {
        const nsr_report_refused_call *a = x, *b = y;
        return a->count < b->count ? 1 : a->count > b->count ? -1 : strcmp(a->name, b->name);
}

void nsr_report_refused_calls(const nsr_refused *rf, nsr_report_refused_call *calls) {
        for (size_t i = 0; i < rf->n_entries; i++)
                calls[i] = (nsr_report_refused_call){ .name = rf->entries[i].name,
                                                      .count = rf->entries[i].count,
                                                      .errnum = rf->entries[i].errnum,
                                                      .comm = rf->entries[i].comm };
        if (rf->n_entries > 1)
                qsort(calls, rf->n_entries, sizeof(*calls), by_count);
}
