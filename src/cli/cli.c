/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* argv (and --args FD, profile and config files) to a plan, in bwrap's
 * order: the files' lines, then the command line, then the lines that may
 * only tighten what is in force; what each option does is handlers.c's. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-internal.h"
#include "cli/cli.h"
#include "cli/options.h"

/* bwrap's message, word for word, under the name bwrap; as nsrun, with the
 * closest option's name when one is close. */
static int unknown_option(const parser *ps, const char *name, const char *typed, nsr_error *err) {
        /* "--chdir=/x": the option exists, only its =VALUE form does not */
        bool exists = nsr_options_find(name, false) != NULL;
        const char *hint =
                ps->bwrap_mode || exists || name[0] != '-' || name[1] != '-' ? NULL : nsr_options_suggest(name, false);
        if (hint)
                return nsr_error_setxk(err, NSR_ERR_USAGE, EINVAL, "Unknown option %s; did you mean %s?", typed, hint);
        return nsr_error_setxk(err, NSR_ERR_USAGE, EINVAL, "Unknown option %s", typed);
}

/* bwrap's checks after every option: a pending modifier must be consumed by
 * the very next option. */
static int check_modifiers(parser *ps, nsr_opt_id id, nsr_error *err) {
        if (id != NSR_OPT_PERMS && id != NSR_OPT_SIZE) {
                if (ps->pending_perms != NSR_PERMS_UNSET)
                        return nsr_error_setx(err, EINVAL, "--perms must be followed by an option that creates a file");
                if (ps->pending_size)
                        return nsr_error_setx(err, EINVAL, "--size must be followed by --tmpfs");
        }
        if (id != NSR_OPT_OVERLAY_SRC && ps->pending_overlay)
                return nsr_error_setx(err, EINVAL,
                                      "--overlay-src must be followed by another --overlay-src or one of --overlay, "
                                      "--tmp-overlay, or --ro-overlay");
        return 0;
}

static int check_forbidden(parser *ps, const nsr_option *o, const char *value, nsr_error *err) {
        const nsr_pf_forbid *f = nsr_pf_forbidden(ps->files, o, value);
        if (!f)
                return 0;
        ps->policy_error = true;
        if (f->value)
                return nsr_error_setx(err, EPERM, "%s=%s is forbidden on this system (%s:%u)", o->name, f->value,
                                      f->file, f->line);
        return nsr_error_setx(err, EPERM, "%s is forbidden on this system (%s:%u)", o->name, f->file, f->line);
}

/* A file line: its option, handled like the command line's. */
static int apply_entry(parser *ps, const nsr_pf_entry *e, char *const *vals, nsr_error *err) {
        int r = cli_handle(ps, e->opt, e->opt->name, vals, false, err);
        if (r >= 0)
                r = check_modifiers(ps, e->opt->id, err);
        return r;
}

static void entry_vals(const nsr_pf_entry *e, char *vals[3]) {
        for (unsigned k = 0; k < 3; k++)
                vals[k] = k < e->opt->nargs ? e->words[1 + k] : NULL;
}

/* The options of profile and config files, one line each, before the
 * command line's; not the lines of files the sandbox can write, which
 * parse_tightening() applies after it. Errors name the file and line. */
static int parse_files(parser *ps, nsr_error *err) {
        for (size_t i = 0; ps->files && i < ps->files->n; i++) {
                const nsr_pf_entry *e = &ps->files->entries[i];
                if (nsr_pf_kind_tightening_only(e->kind))
                        continue;
                char *vals[3];
                entry_vals(e, vals);
                int r = check_forbidden(ps, e->opt, vals[0], err);
                if (r >= 0)
                        r = apply_entry(ps, e, vals, err);
                if (r < 0) {
                        ps->policy_error = true;
                        return nsr_error_prefix(err, "%s:%u", e->file, e->line);
                }
        }
        /* A file's --perms, --size or --overlay-src is for that file's
         * next line, never for the command line's first option. */
        if (ps->files && ps->files->n &&
            (ps->pending_perms != NSR_PERMS_UNSET || ps->pending_size || ps->pending_overlay)) {
                const nsr_pf_entry *e = &ps->files->entries[ps->files->n - 1];
                ps->policy_error = true;
                check_modifiers(ps, _NSR_OPT_MAX, err);
                return nsr_error_prefix(err, "%s:%u", e->file, e->line);
        }
        return 0;
}

/* ---- tightening only, against the value in force ------------------------- */

/* The values a file the sandbox can write may only make stricter, each
 * as a number where lower is stricter; unset ones are the built-in
 * defaults of project mode (the only mode that reads such files). */
typedef enum force_field {
        F_TIMEOUT,
        F_KILL_AFTER,
        F_PIDS,
        F_TMP_SIZE,
        F_MEMORY,
        F_CPU,
        F_SNAPSHOT_LIMIT,
        F_HOME,
        F_SANDBOX,
        F_ON_CONFLICT,
        F_RLIMIT_SOFT,
        F_RLIMIT_HARD,
        _F_MAX,
} force_field;

typedef struct in_force {
        uint64_t v[_F_MAX];
        nsr_runctl run; /* for the rlimits, which have no field each */
} in_force;

#define NONE UINT64_MAX

/* How much of the host a conflict may cost, lower is stricter: fail
 * (nothing applies) < keep-all < apply-rest = prefer-host (a host edit
 * always stays) < prefer-sandbox (host edits are overwritten, backed up). */
static uint64_t conflict_rank(nsr_conflict_mode m) {
        switch (m) {
        case NSR_CONFLICT_FAIL:
                return 0;
        case NSR_CONFLICT_KEEP_ALL:
                return 1;
        case NSR_CONFLICT_APPLY_REST:
        case NSR_CONFLICT_PREFER_HOST:
                return 2;
        case NSR_CONFLICT_PREFER_SANDBOX:
        case _NSR_CONFLICT_MODE_MAX:
        case _NSR_CONFLICT_MODE_INVALID:
                break;
        }
        return 3;
}

static const char *conflict_rank_name(uint64_t rank) {
        static const char *const names[] = { "fail", "keep-all", "apply-rest or prefer-host", "prefer-sandbox" };
        return rank < ELEMENTSOF(names) ? names[rank] : "?";
}

static void in_force_get(const nsr_plan *p, nsr_rlimit_id rid, in_force *f) {
        const nsr_runctl *rc = &p->run;
        f->v[F_TIMEOUT] = rc->timeout_ms ? rc->timeout_ms : NONE;
        f->v[F_KILL_AFTER] = rc->has_kill_after ? rc->kill_after_ms : NSR_KILL_AFTER_DEFAULT_MS;
        f->v[F_PIDS] = rc->pids ? rc->pids : NSR_PIDS_DEFAULT;
        f->v[F_TMP_SIZE] = rc->tmp_size ? rc->tmp_size : nsr_tmp_size_default();
        f->v[F_MEMORY] = rc->memory ? rc->memory : NONE;
        f->v[F_CPU] = rc->cpu_milli ? rc->cpu_milli : NONE;
        f->v[F_SNAPSHOT_LIMIT] = p->proj.snapshot_limit ? p->proj.snapshot_limit : NSR_SNAPSHOT_LIMIT_DEFAULT;
        /* overlay < ro < hide, turned so that lower is stricter; required
         * < best-effort < off; on-conflict by conflict_rank(). */
        f->v[F_HOME] = (uint64_t) (_NSR_HOME_MODE_MAX - 1 - p->proj.home);
        f->v[F_SANDBOX] = (uint64_t) p->proj.sandbox;
        f->v[F_ON_CONFLICT] = conflict_rank(p->proj.on_conflict);
        f->v[F_RLIMIT_SOFT] = f->v[F_RLIMIT_HARD] = NONE;
        f->run = *rc;
        if (rid >= 0)
                nsr_runctl_effective_rlimit(rc, rid, &f->v[F_RLIMIT_SOFT], &f->v[F_RLIMIT_HARD]);
}

/* The fields an option sets: [first, last], or -1. */
static int fields_of(nsr_opt_id id, force_field *ret_last) {
        static const struct {
                nsr_opt_id id;
                force_field first, last;
        } map[] = {
                { NSR_OPT_TIMEOUT, F_TIMEOUT, F_TIMEOUT },
                { NSR_OPT_KILL_AFTER, F_KILL_AFTER, F_KILL_AFTER },
                { NSR_OPT_PIDS, F_PIDS, F_PIDS },
                { NSR_OPT_TMP_SIZE, F_TMP_SIZE, F_TMP_SIZE },
                { NSR_OPT_MEMORY, F_MEMORY, F_MEMORY },
                { NSR_OPT_CPU, F_CPU, F_CPU },
                { NSR_OPT_SNAPSHOT_LIMIT, F_SNAPSHOT_LIMIT, F_SNAPSHOT_LIMIT },
                { NSR_OPT_HOME, F_HOME, F_HOME },
                { NSR_OPT_SANDBOX, F_SANDBOX, F_SANDBOX },
                { NSR_OPT_ON_CONFLICT, F_ON_CONFLICT, F_ON_CONFLICT },
                { NSR_OPT_RLIMIT, F_RLIMIT_SOFT, F_RLIMIT_HARD },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (map[i].id == id) {
                        *ret_last = map[i].last;
                        return (int) map[i].first;
                }
        return -1;
}

static const char *format_field(force_field f, uint64_t v, char *buf, size_t len) {
        if (v == NONE)
                return f == F_TIMEOUT ? "none" : "unlimited";
        if (f == F_TIMEOUT || f == F_KILL_AFTER)
                return nsr_format_duration(v, buf, len);
        if (f == F_CPU)
                snprintf(buf, len, "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
        else if (f == F_HOME)
                snprintf(buf, len, "%s", nsr_home_mode_to_string((nsr_home_mode) (_NSR_HOME_MODE_MAX - 1 - (int) v)));
        else if (f == F_SANDBOX)
                snprintf(buf, len, "%s", nsr_sandbox_mode_to_string((nsr_sandbox_mode) v));
        else if (f == F_ON_CONFLICT)
                snprintf(buf, len, "%s", conflict_rank_name(v));
        else
                snprintf(buf, len, "%" PRIu64, v);
        return buf;
}

/* One line of a file the sandbox can write, of an option that is
 * compared: applied when no field gets looser than the value in force
 * now; skipped when it is looser only than what the command line set (the
 * caller's own choice, stricter already); refused otherwise. */
static int tighten(parser *ps, const nsr_pf_entry *e, char *const *vals, const in_force *before_cmd, nsr_error *err) {
        const nsr_option *o = e->opt;
        force_field last;
        int first = fields_of(o->id, &last);
        if (first < 0)
                return nsr_error_setx(err, EPERM, "%s cannot be compared here", o->name);
        /* The line alone, parsed into a scratch plan: its values, checked
         * by the option's own parser. */
        parser t = { .plan = nsr_plan_new(), .pending_perms = NSR_PERMS_UNSET, .hb = ps->hb, .hb_known = ps->hb_known };
        int r = cli_handle(&t, o, o->name, vals, false, err);
        nsr_rlimit_id rid = _NSR_RLIMIT_INVALID;
        nsr_rlimit_spec sp;
        if (r >= 0 && o->id == NSR_OPT_RLIMIT)
                r = nsr_parse_rlimit(vals[0], &rid, &sp, err);
        in_force want, now, before = *before_cmd;
        if (r >= 0) {
                in_force_get(t.plan, rid, &want);
                in_force_get(ps->plan, rid, &now);
                if (rid >= 0)
                        nsr_runctl_effective_rlimit(&before.run, rid, &before.v[F_RLIMIT_SOFT],
                                                    &before.v[F_RLIMIT_HARD]);
        }
        nsr_plan_free(t.plan);
        nsr_strv_free(t.pending_overlay);
        if (r < 0)
                return r;
        bool from_cmdline = false;
        for (int f = first; f <= (int) last; f++) {
                if (want.v[f] <= now.v[f])
                        continue;
                if (now.v[f] != before.v[f]) {
                        from_cmdline = true;
                        continue;
                }
                char b[64];
                _cleanup_free_ char *what = rid >= 0 ? nsr_asprintf("%s's %s limit", nsr_rlimit_name(rid),
                                                                    f == F_RLIMIT_SOFT ? "soft" : "hard")
                                                     : nsr_strdup(o->name);
                return nsr_error_setx(err, EPERM,
                                      "%s %s would loosen %s %s, the value in force (built-in defaults, config files, "
                                      "profiles and the command line counted), and the sandbox can write this "
                                      "file: lower the line or remove it",
                                      o->name, vals[0], what, format_field((force_field) f, now.v[f], b, sizeof(b)));
        }
        if (from_cmdline)
                return 0;
        return apply_entry(ps, e, vals, err);
}

static bool has_tightening(const nsr_pf_list *files) {
        for (size_t i = 0; files && i < files->n; i++)
                if (nsr_pf_kind_tightening_only(files->entries[i].kind))
                        return true;
        return false;
}

/* The lines of files the sandbox can write (a project's .nsrun/profile, a
 * --profile inside a project): after the command line, each compared with
 * the value in force then, so that they only ever tighten. */
static int parse_tightening(parser *ps, const in_force *before_cmd, nsr_error *err) {
        for (size_t i = 0; ps->files && i < ps->files->n; i++) {
                const nsr_pf_entry *e = &ps->files->entries[i];
                if (!nsr_pf_kind_tightening_only(e->kind))
                        continue;
                char *vals[3];
                entry_vals(e, vals);
                int r = check_forbidden(ps, e->opt, vals[0], err);
                if (r >= 0)
                        r = nsr_pf_check_tightening(e->opt, vals, err);
                if (r == 0)
                        r = apply_entry(ps, e, vals, err);
                else if (r > 0)
                        r = tighten(ps, e, vals, before_cmd, err);
                if (r < 0) {
                        ps->policy_error = true;
                        return nsr_error_prefix(err, "%s:%u", e->file, e->line);
                }
        }
        return 0;
}

/* Parses a list of words. Stops at "--" or the first non-option word; at
 * the top level that word starts the command, inside an --args file the
 * rest of the file is ignored (bwrap does the same). */
int cli_parse_list(parser *ps, char *const *args, size_t n, bool in_args_file, nsr_error *err) {
        size_t i = 0;
        while (i < n) {
                const char *a = args[i];
                if (streq(a, "--")) {
                        i++;
                        if (!in_args_file) {
                                ps->command_found = true;
                                ps->command = (char **) args + i;
                                ps->n_command = n - i;
                        }
                        return 0;
                }
                if (a[0] != '-') {
                        if (!in_args_file) {
                                ps->command_found = true;
                                ps->command = (char **) args + i;
                                ps->n_command = n - i;
                        }
                        return 0;
                }

                const nsr_option *o = nsr_options_find(a, ps->bwrap_mode);
                const char *inline_val = NULL;
                _cleanup_free_ char *name = NULL;
                if (!o && !ps->bwrap_mode && a[1] == '-' && strchr(a, '=')) {
                        /* nsrun's own options also take --opt=VALUE. */
                        const char *eq = strchr(a, '=');
                        name = nsr_strndup(a, (size_t) (eq - a));
                        const nsr_option *c = nsr_options_find(name, false);
                        if (c && !(c->flags & NSR_OPTF_BWRAP) && c->nargs == 1) {
                                o = c;
                                inline_val = eq + 1;
                        }
                }
                /* bwrap 0.12's debugging switch, left out of its --help:
                 * force-openat-fallback makes it emulate openat2(
                 * RESOLVE_IN_ROOT) for old kernels. nsrun has no emulation
                 * (it needs openat2), so there is nothing to force. */
                if (!o && nsr_startswith(a, "--debug-opt=")) {
                        const char *v = a + strlen("--debug-opt=");
                        if (!streq(v, "force-openat-fallback"))
                                return nsr_error_setx(err, EINVAL, "Unknown --debug-opt value: %s", v);
                        i++;
                        continue;
                }
                if (!o)
                        return unknown_option(ps, name ? name : a, a, err);

                if (o->id == NSR_OPT_ARGS && in_args_file)
                        return nsr_error_setx(err, EINVAL, "--args not supported in arguments file");
                if (o->id == NSR_OPT_HELP || o->id == NSR_OPT_VERSION) {
                        ps->command_found = false;
                        return o->id == NSR_OPT_HELP ? 1 : 2;
                }

                char *vals[3] = { NULL, NULL, NULL };
                if (inline_val) {
                        vals[0] = (char *) inline_val;
                        i += 1;
                } else if (o->id == NSR_OPT_OVERLAY_SRC) {
                        /* bwrap checks no argument count here: a trailing
                         * --overlay-src is still a pending source (with no
                         * path), so the usual checks run and the pending
                         * check after parsing reports it. The placeholder
                         * can never reach an overlay: nothing follows it. */
                        vals[0] = i + 1 < n ? args[i + 1] : (char *) "";
                        i = i + 1 < n ? i + 2 : n;
                } else {
                        if (n - i < (size_t) o->nargs + 1) {
                                if (o->missing_msg)
                                        return nsr_error_setx(err, EINVAL, "%s", o->missing_msg);
                                return nsr_error_setx(err, EINVAL, "%s takes %s", a,
                                                      o->nargs == 1   ? "an argument"
                                                      : o->nargs == 2 ? "two arguments"
                                                                      : "three arguments");
                        }
                        for (unsigned k = 0; k < o->nargs; k++)
                                vals[k] = args[i + 1 + k];
                        i += 1 + o->nargs;
                }

                int r = check_forbidden(ps, o, vals[0], err);
                if (r < 0)
                        return r;
                r = cli_handle(ps, o, a, vals, in_args_file, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        return r;
                r = check_modifiers(ps, o->id, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int nsr_cli_parse(char *const *args, size_t n, bool bwrap_mode, nsr_plan **ret_plan, nsr_cli_result *ret,
                  nsr_error *err) {
        return nsr_cli_parse_with(NULL, args, n, bwrap_mode, ret_plan, ret, err);
}

int nsr_cli_parse_with(const nsr_pf_list *files, char *const *args, size_t n, bool bwrap_mode, nsr_plan **ret_plan,
                       nsr_cli_result *ret, nsr_error *err) {
        parser ps = {
                .plan = nsr_plan_new(),
                .bwrap_mode = bwrap_mode,
                .total_args = n,
                .pending_perms = NSR_PERMS_UNSET,
                .files = files,
        };
        nsr_cli_result res = { .action = NSR_CLI_RUN };
        in_force before_cmd = { .v = { 0 } };
        int r;

        if (ps.total_args > NSR_MAX_ARGS) {
                r = nsr_error_setx(err, E2BIG, "Exceeded maximum number of arguments %u", NSR_MAX_ARGS);
                goto finish;
        }

        r = parse_files(&ps, err);
        if (r < 0)
                goto finish;
        if (has_tightening(files))
                in_force_get(ps.plan, _NSR_RLIMIT_INVALID, &before_cmd);
        r = cli_parse_list(&ps, args, n, false, err);
        if (r == 0)
                r = parse_tightening(&ps, &before_cmd, err);
        if (r == 1) {
                res.action = NSR_CLI_HELP;
                r = 0;
                goto finish;
        }
        if (r == 2) {
                res.action = NSR_CLI_VERSION;
                r = 0;
                goto finish;
        }
        if (r < 0)
                goto finish;
        if (ps.pending_overlay) {
                r = nsr_error_setx(err, EINVAL,
                                   "--overlay-src must be followed by another --overlay-src or one of --overlay, "
                                   "--tmp-overlay, or --ro-overlay");
                goto finish;
        }
        if (ps.command_found && ps.n_command > 0) {
                ps.plan->argv = nsr_malloc0((ps.n_command + 1) * sizeof(char *));
                for (size_t i = 0; i < ps.n_command; i++)
                        ps.plan->argv[i] = nsr_strdup(ps.command[i]);
        } else
                res.action = NSR_CLI_NO_COMMAND;
        r = 0;

finish:
        res.level_prefix = ps.plan->level_prefix;
        res.policy_error = r < 0 && ps.policy_error;
        res.project_only = ps.project_only;
        nsr_strv_free(ps.pending_overlay);
        *ret_plan = ps.plan;
        *ret = res;
        return r;
}

int nsr_cli_prescan(char *const *args, size_t n, char ***ret_profiles, char ***ret_projects) {
        _cleanup_strv_free_ char **profiles = nsr_malloc0(sizeof(char *)), **projects = nsr_malloc0(sizeof(char *));
        size_t i = 0;
        while (i < n) {
                const char *a = args[i];
                if (streq(a, "--") || a[0] != '-')
                        break;
                const nsr_option *o = nsr_options_find(a, false);
                const char *val = NULL;
                if (!o && a[1] == '-' && strchr(a, '=')) {
                        _cleanup_free_ char *name = nsr_strndup(a, (size_t) (strchr(a, '=') - a));
                        o = nsr_options_find(name, false);
                        if (!o || (o->flags & NSR_OPTF_BWRAP) || o->nargs != 1)
                                break;
                        val = strchr(a, '=') + 1;
                        i += 1;
                } else if (!o || o->id == NSR_OPT_ARGS || o->id == NSR_OPT_HELP || o->id == NSR_OPT_VERSION)
                        break; /* the parser reports it, or reads on from there */
                else {
                        if (n - i < (size_t) o->nargs + 1)
                                break;
                        val = o->nargs ? args[i + 1] : NULL;
                        i += 1 + o->nargs;
                }
                if (o->id == NSR_OPT_PROFILE)
                        nsr_strv_extend(&profiles, val);
                else if (o->id == NSR_OPT_PROJECT)
                        nsr_strv_extend(&projects, val);
        }
        *ret_profiles = TAKE_PTR(profiles);
        *ret_projects = TAKE_PTR(projects);
        return 0;
}
