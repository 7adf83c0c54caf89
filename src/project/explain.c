/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* After a project run: what was refused (calls and connections), the
 * summary lines and notes for stderr, and the JSON report (built by
 * report.c) kept in the run dir; for a launch that ran nothing, its error. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/dirent.h"
#include "base/durable.h"
#include "base/utf8.h"
#include "project/internal.h"
#include "project/report.h"

static uint64_t duration_ms(struct timespec started, struct timespec ended) {
        return (uint64_t) ((ended.tv_sec - started.tv_sec) * 1000 + (ended.tv_nsec - started.tv_nsec) / 1000000);
}

/* Is there, near the top of the project, an entry the caller does not
 * own? Copy-up of those fails with EOVERFLOW inside a user namespace.
 * Bounded: called only to explain a failing command. */
static const char *foreign_owner_hint(int dirfd, uid_t uid, char *buf, size_t len) {
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(dirfd, ".", 0, &d) < 0)
                return NULL;
        unsigned n = 0;
        /* Only a hint: what cannot be read gives none. */
        FOREACH_DIRENT(de, d, break) {
                if (n++ >= 10000)
                        break;
                struct stat st;
                /* The files the user may write went into upper before the
                 * command (foreign.c): only the others are a reason. */
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != uid &&
                    faccessat(dirfd, de->d_name, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0) {
                        snprintf(buf, len, "%s (owned by uid %u)", de->d_name, (unsigned) st.st_uid);
                        return buf;
                }
        }
        return NULL;
}

static void layers_of(const nsr_plan *p, confinement conf, bool live, bool landlock, char ***ret) {
        char **v = nsr_malloc0(sizeof(char *));
        switch (conf) {
        case CONF_NONE:
                nsr_strv_extend(&v, "none");
                break;
        case CONF_LANDLOCK:
                if (landlock)
                        nsr_strv_extend(&v, "landlock");
                nsr_strv_extend(&v, "seccomp");
                break;
        case CONF_NAMESPACES:
                if (p->unshare_user)
                        nsr_strv_extend(&v, "userns");
                nsr_strv_extend(&v, "mountns");
                if (p->unshare_pid)
                        nsr_strv_extend(&v, "pidns");
                if (p->unshare_net)
                        nsr_strv_extend(&v, "netns");
                if (p->unshare_ipc)
                        nsr_strv_extend(&v, "ipcns");
                if (p->unshare_uts)
                        nsr_strv_extend(&v, "utsns");
                if (!live)
                        nsr_strv_extend(&v, "overlay");
                if (p->seccomp_policies || p->n_seccomp)
                        nsr_strv_extend(&v, "seccomp");
                if (landlock)
                        nsr_strv_extend(&v, "landlock");
                break;
        }
        *ret = v;
}

/* The refused record for the report, and its stderr line
 * ("nsrun: refused: ptrace x3, mount x1; timeout 90s"), NULL when nothing
 * was refused. */
/* The connections the egress rules refused, one entry per host and port
 * (at most max), into conns; returns how many. */
static size_t refused_connections(const nsr_egress_log *net, nsr_report_refused_conn *conns, size_t max) {
        size_t n = 0;
        for (size_t i = 0; net && i < net->n_records; i++) {
                const nsr_egress_record *r = &net->records[i];
                if (r->allowed)
                        continue;
                size_t k = 0;
                while (k < n && !(conns[k].port == r->port && streq(conns[k].host, r->host)))
                        k++;
                if (k == n) {
                        if (n == max)
                                continue;
                        conns[n++] = (nsr_report_refused_conn){ .host = r->host, .port = r->port, .reason = r->reason };
                }
                conns[k].count++;
        }
        return n;
}

static char *refused_record(const nsr_refused *rf, const nsr_launch_result *lr, const nsr_runctl *rc,
                            nsr_report_refused_call *calls, nsr_report_refused_conn *conns, size_t max_conns,
                            nsr_report_refused *ret) {
        nsr_report_refused_calls(rf, calls);
        *ret = (nsr_report_refused){ .recorded = rf->active,
                                     .calls = calls,
                                     .n_calls = rf->n_entries,
                                     .more = rf->dropped,
                                     .timed_out = lr->timed_out,
                                     .timeout_ms = rc->timeout_ms,
                                     .killed = lr->killed_after,
                                     .limits = lr->limits_hit };
        if (lr->net_on) {
                ret->connections = conns;
                ret->n_connections = refused_connections(&lr->net, conns, max_conns);
        }
        _cleanup_free_ char *line = nsr_refused_summary(rf);
        for (size_t i = 0; i < ret->n_connections; i++) {
                char count[32] = "";
                if (conns[i].count > 1)
                        snprintf(count, sizeof(count), " x%" PRIu64, conns[i].count);
                nsr_strappendf(&line, "%sconnect %s:%d%s", line ? (i ? ", " : "; ") : "", conns[i].host, conns[i].port,
                               count);
        }
        for (size_t i = 0; lr->limits_hit && lr->limits_hit[i]; i++)
                nsr_strappendf(&line, "%s%s", line ? "; " : "", lr->limits_hit[i]);
        if (lr->timed_out) {
                char d[32];
                nsr_strappendf(&line, "%stimeout %s%s", line ? "; " : "",
                               nsr_format_duration(rc->timeout_ms, d, sizeof(d)),
                               lr->killed_after ? " (SIGKILL after --kill-after)" : "");
        }
        return line ? nsr_asprintf("nsrun: refused: %s", line) : NULL;
}

/* Nothing ran: nothing to capture. The command could not be executed
 * (126/127), or nsrun failed (125). The run dir goes. */
void project_launch_failed(run_ctx *c, const nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        struct timespec started = c->started, ended = c->ended;

        if (err->kind == NSR_ERR_EXEC)
                o->exit_code = err->code == ENOENT ? NSR_EXIT_NOT_FOUND : NSR_EXIT_NOT_EXECUTABLE;
        o->error_kind = err->kind == NSR_ERR_NONE ? NSR_ERR_SETUP : err->kind;
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(err, buf, sizeof(buf));
        /* Project mode is never bwrap mode: a failure doctor can
         * explain points to it, as in main.c, and to best-effort
         * mode, which needs no user namespace. */
        const char *hint = nsr_hostcheck_hint(err);
        _cleanup_free_ char *full_hint =
                hint ? nsr_asprintf("%s%s", hint,
                                    c->a.conf == CONF_NAMESPACES && p->proj.sandbox == NSR_SANDBOX_REQUIRED
                                            ? "; --sandbox=best-effort runs without user namespaces (Landlock and "
                                              "seccomp)"
                                            : "")
                     : NULL;
        msg(o, "nsrun: %s%s%s", buf, full_hint ? "; " : "", full_hint ? full_hint : "");
        /* A tool reading --report gets the error too, not only
         * stderr: every project "failed", with the message. */
        char *errs[2] = { buf, NULL };
        nsr_report_project *rp = nsr_malloc0((pj->n + 1) * sizeof(nsr_report_project));
        for (size_t i = 0; i < pj->n; i++)
                rp[i] = (nsr_report_project){ .path = pj->p[i].path, .outcome = NSR_OUTCOME_FAILED, .errors = errs };
        nsr_report rep = {
                .run_id = pj->run_id,
                .command = pj->command,
                .exit_code = -1,
                .outcome = NSR_OUTCOME_FAILED,
                .started_at = started,
                .duration_ms = duration_ms(started, ended),
                .projects = rp,
                .n_projects = pj->n,
                .error = err,
                .error_hint = full_hint,
        };
        size_t len = 0;
        nsr_error je = { 0 };
        (void) nsr_report_to_json(&rep, 0, &o->report_json, &len, &je);
        free(rp);
        nsr_error e2 = { 0 };
        _cleanup_free_ char *rel = nsr_asprintf("runs/%s", pj->run_id);
        (void) nsr_rm_rf_at(c->statefd, rel, &e2);
}

/* One project's summary line, and what stopped its changes: protected
 * paths, conflicts, split hard links. */
static void explain_project(nsr_project *pj, size_t i, nsr_project_outcome *o) {
        nsr_plan *p = pj->plan;
        project_entry *e = &pj->p[i];

        if (e->changes) {
                /* The counts are what the command changed; with a
                 * conflict, the outcome says how much of it applied. */
                _cleanup_free_ char *outcome = e->outcome == NSR_OUTCOME_CONFLICT
                                                       ? nsr_asprintf("conflict, %zu of %zu applied", e->commit.applied,
                                                                      nsr_changeset_size(e->changes))
                                                       : nsr_strdup(nsr_outcome_to_string(e->outcome));
                _cleanup_free_ char *line = nsr_report_summary(e->path, e->changes, outcome, pj->run_id);
                nsr_strv_extend(&o->summary, line);
        }
        _cleanup_free_ char *prot = nsr_protect_summary(e->protected_changes, pj->live);
        if (prot)
                msg(o, "nsrun: %s: %s", e->path, prot);
        /* One line per conflict, not per entry it held back (a git
         * dir holds back its objects, a dir its children). */
        size_t n_held = 0;
        for (size_t k = 0; k < e->commit.n_conflicts; k++)
                n_held += e->commit.conflicts[k].held;
        for (size_t k = 0; e->commit.units && e->commit.units[k]; k++) {
                _cleanup_free_ char *shown = nsr_utf8_escape(e->commit.units[k]);
                msg(o,
                    "nsrun: %s: conflict in the git dir %s: none of its changes %s, so that its index, "
                    "refs and logs stay in step",
                    e->path, shown, e->commit.withheld ? "can apply" : "were applied");
        }
        for (size_t k = 0; k < e->commit.n_conflicts; k++) {
                const nsr_commit_conflict *cf = &e->commit.conflicts[k];
                _cleanup_free_ char *shown = nsr_utf8_escape(cf->path);
                _cleanup_free_ char *kept = cf->kept_at ? nsr_utf8_escape(cf->kept_at) : NULL;
                if (cf->held)
                        continue;
                if (e->commit.withheld)
                        msg(o, "nsrun: %s: conflict: %s %s", e->path, shown, cf->reason);
                else if (p->proj.on_conflict == NSR_CONFLICT_PREFER_HOST)
                        msg(o, "nsrun: %s: settled for the host: %s %s; the host's version stays%s%s", e->path, shown,
                            cf->reason, kept ? ", the sandbox's is kept at " : "", kept ? kept : "");
                else if (cf->kept_at)
                        msg(o, "nsrun: %s: conflict: %s %s; the sandbox's version is kept at %s", e->path, shown,
                            cf->reason, kept);
                else
                        msg(o, "nsrun: %s: conflict: %s %s; left as the host has it", e->path, shown, cf->reason);
        }
        for (size_t k = 0; e->commit.overruled && e->commit.overruled[k] && e->commit.overruled[k + 1]; k += 2) {
                _cleanup_free_ char *shown = nsr_utf8_escape(e->commit.overruled[k]);
                msg(o,
                    "nsrun: %s: settled for the sandbox: %s %s; the sandbox's version replaced it, the host's is "
                    "backed up (nsrun undo %s)",
                    e->path, shown, e->commit.overruled[k + 1], pj->run_id);
        }
        if (n_held > 0 && !e->commit.withheld)
                msg(o,
                    "nsrun: %s: %zu more change%s held back with %s; the sandbox's versions are in "
                    "%s/conflict/p%zu",
                    e->path, n_held, n_held == 1 ? " was" : "s were",
                    n_held == 1 ? "its git dir or parent dir" : "their git dirs or parent dirs", pj->run_dir, i);
        for (size_t k = 0; !e->commit.withheld && e->commit.split_links && e->commit.split_links[k]; k++) {
                _cleanup_free_ char *shown = nsr_utf8_escape(e->commit.split_links[k]);
                msg(o,
                    "nsrun: %s: note: %s had other hard links on the host; the new version replaced this "
                    "name only, and the other names keep the old content (as they did inside the sandbox)",
                    e->path, shown);
        }
        if (e->commit.withheld)
                msg(o, "nsrun: %s: nothing applied (--on-conflict=%s)", e->path,
                    nsr_conflict_mode_to_string(p->proj.on_conflict));
}

/* Explanations: the summary lines and notes on stderr, and with --verbose
 * the listing. */
void project_explain(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        const nsr_launch_result *lr = &c->lr;

        if (lr->exit_code != 0 && getuid() != 0 && !pj->live) {
                for (size_t i = 0; i < pj->n; i++) {
                        char hint[NAME_MAX + 64];
                        const char *h = foreign_owner_hint(pj->p[i].fd, getuid(), hint, sizeof(hint));
                        if (h)
                                msg(o,
                                    "nsrun: %s: note: %s and maybe more are not yours, and you may not write them; the "
                                    "sandbox cannot move, rename or change them (copy-up fails with EOVERFLOW, "
                                    "\"Value too large for defined data type\")",
                                    pj->p[i].path, h);
                }
        }
        for (size_t i = 0; i < pj->n; i++)
                explain_project(pj, i, o);
        if (lr->net_on)
                nsr_strv_push(&o->summary, nsr_egress_summary(&lr->net));
        if (c->kept_failed)
                msg(o,
                    "nsrun: run %s kept: the %s failed and %s was applied; the command's files are in "
                    "%s/pN/upper; once the cause is fixed, \"nsrun diff %s\", then \"nsrun commit %s\" or \"nsrun "
                    "discard %s\"",
                    pj->run_id, c->capture_failed ? "capture" : "apply",
                    c->capture_failed ? "nothing" : "nothing of what failed", pj->run_dir, pj->run_id, pj->run_id,
                    pj->run_id);
        else if (c->state_full && run_outcome == NSR_OUTCOME_KEPT) {
                char rel[32];
                uint64_t used = 0;
                for (size_t i = 0; i < pj->n; i++) {
                        snprintf(rel, sizeof(rel), "p%zu/upper", i);
                        used += nsr_state_tree_size(c->run_fd, rel);
                }
                msg(o,
                    "nsrun: the state dir %s filled up while the command ran: its writes that did not fit failed "
                    "(ENOSPC, \"No space left on device\"), and the run holds %llu KiB there; run %s kept, nothing "
                    "applied; free space there (a run needs at least %llu KiB free to start, plus room for what the "
                    "command writes), then \"nsrun diff %s\", \"nsrun commit %s\" or \"nsrun discard %s\"",
                    pj->state_dir, (unsigned long long) (used >> 10), pj->run_id,
                    (unsigned long long) (NSR_STATE_MIN_FREE >> 10), pj->run_id, pj->run_id, pj->run_id);
        } else if (c->state_full && !pj->live)
                msg(o,
                    "nsrun: the state dir %s filled up while the command ran: its writes that did not fit failed "
                    "(ENOSPC, \"No space left on device\"); a run needs at least %llu KiB free there to start, plus "
                    "room for what the command writes",
                    pj->state_dir, (unsigned long long) (NSR_STATE_MIN_FREE >> 10));
        else if (run_outcome == NSR_OUTCOME_KEPT)
                msg(o,
                    "nsrun: run %s kept%s: review it with \"nsrun diff %s\", then \"nsrun commit %s\" or \"nsrun "
                    "discard %s\"",
                    pj->run_id,
                    c->interrupted ? " (nsrun was interrupted)"
                    : c->timed_out ? " (the command timed out)"
                                   : "",
                    pj->run_id, pj->run_id, pj->run_id);
        if (p->proj.verbose) {
                char *all = nsr_strdup("");
                for (size_t i = 0; i < pj->n; i++) {
                        if (!pj->p[i].changes)
                                continue;
                        _cleanup_free_ char *l = nsr_report_listing(pj->p[i].changes);
                        char *n = nsr_asprintf("%s%s", all, l);
                        free(all);
                        all = n;
                }
                o->listing = all;
        }
}

/* What was refused (one line, and the report's "refused"), and the JSON
 * report, kept in the run dir. */
void project_report(run_ctx *c, nsr_outcome run_outcome) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        nsr_project_outcome *o = &c->o;
        nsr_launch_result *lr = &c->lr;
        struct timespec started = c->started, ended = c->ended;
        int ws = lr->wait_status;

        nsr_report_refused_call calls[NSR_REFUSED_MAX_ENTRIES];
        nsr_report_refused_conn conns[64];
        nsr_report_refused refused;
        _cleanup_free_ char *refused_line =
                refused_record(&c->a.refused, lr, &p->run, calls, conns, ELEMENTSOF(conns), &refused);
        if (refused_line)
                nsr_strv_extend(&o->summary, refused_line);

        /* The report. */
        _cleanup_strv_free_ char **layers = NULL;
        layers_of(p, c->a.conf, pj->live, c->a.landlock, &layers);
        nsr_report_project *rp = nsr_malloc0((pj->n + 1) * sizeof(nsr_report_project));
        nsr_report_conflict **rc = nsr_malloc0((pj->n + 1) * sizeof(nsr_report_conflict *));
        for (size_t i = 0; i < pj->n; i++) {
                project_entry *e = &pj->p[i];
                rc[i] = nsr_malloc0((e->commit.n_conflicts + 1) * sizeof(nsr_report_conflict));
                for (size_t k = 0; k < e->commit.n_conflicts; k++)
                        rc[i][k] = (nsr_report_conflict){ .path = e->commit.conflicts[k].path,
                                                          .reason = e->commit.conflicts[k].reason,
                                                          .kept_at = e->commit.conflicts[k].kept_at };
                rp[i] = (nsr_report_project){ .path = e->path,
                                              .outcome = e->outcome,
                                              .changes = e->changes,
                                              .protect = e->protected_changes,
                                              .conflicts = rc[i],
                                              .n_conflicts = e->commit.n_conflicts,
                                              .errors = e->errors,
                                              .split_links = e->commit.split_links,
                                              .held_units = e->commit.units,
                                              .overruled = e->commit.overruled,
                                              .settled_for_host = p->proj.on_conflict == NSR_CONFLICT_PREFER_HOST };
        }
        nsr_report rep = {
                .run_id = pj->run_id,
                .command = pj->command,
                .exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
                .signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0,
                .outcome = run_outcome,
                .started_at = started,
                .duration_ms = duration_ms(started, ended),
                .layers = layers,
                .interrupted = c->interrupted,
                .timed_out = c->timed_out,
                .refused = &refused,
                .projects = rp,
                .n_projects = pj->n,
                .network = lr->net_on ? &lr->net : NULL,
                .events_dropped = lr->events_dropped,
                .error = c->failure.kind != NSR_ERR_NONE ? &c->failure : NULL,
        };
        o->error_kind = c->failure.kind;
        size_t len = 0;
        nsr_error je = { 0 };
        if (nsr_report_to_json(&rep, 0, &o->report_json, &len, &je) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&je, buf, sizeof(buf));
                msg(o, "nsrun: cannot build the report: %s", buf);
        } else if (nsr_durable_write(c->run_fd, "report.json", o->report_json, strlen(o->report_json), 0600,
                                     NSR_DURABLE_SPARE, &je) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(&je, buf, sizeof(buf));
                msg(o, "nsrun: the run's report was not kept: %s", buf);
        }
        for (size_t i = 0; i < pj->n; i++)
                free(rc[i]);
        free(rc);
        free(rp);
        nsr_egress_log_free(&lr->net);
}
