/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "nsrun doctor [--json] [--state-dir DIR]": what this host lets nsrun do.
 * A front end: it prints, and picks the exit status: 0 when every layer
 * project mode uses by default works, 2 when nsrun can only run degraded,
 * 1 when it cannot confine anything (or on bad usage). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/utf8.h"
#include "cli/subopts.h"
#include "cmd/cmd.h"
#include "doctor/checks.h"
#include "sandbox/landlock.h"
#include "txn/state.h"

extern char **environ;

#define DOCTOR_DEGRADED 2

typedef enum doctor_opt {
        DOCTOR_OPT_JSON,
        DOCTOR_OPT_STATE_DIR,
} doctor_opt;

static const nsr_subopt doctor_opts[] = {
        { "--json", NULL, DOCTOR_OPT_JSON, 0, NULL, "Print {\"verdict\":...,\"checks\":[...]}" },
        { "--state-dir", NULL, DOCTOR_OPT_STATE_DIR, 1, "DIR", "The state dir to check (default: as nsrun uses it)" },
        { NULL, NULL, 0, 0, NULL, NULL },
};

static const nsr_subcmd doctor_cmd = {
        "doctor",
        NULL,
        "\n"
        "Probe what this host lets nsrun do: user namespaces (and which restriction\n"
        "is in force), id maps, mounts, overlay, seccomp, Landlock, network and pid\n"
        "namespaces, and optional extras. Every probe runs in a child process.\n"
        "Then which of the namespace sandbox's guarantees best-effort mode keeps here.\n"
        "\n"
        "Exit status: 0 full, 2 degraded (nsrun runs without some default layer),\n"
        "1 unavailable.\n",
        0,
        0,
        doctor_opts,
};

typedef struct dargs {
        bool json;
        const char *state_dir;
} dargs;

static int doctor_option(void *userdata, const nsr_subopt *o, const char *val, nsr_error *err) {
        dargs *a = userdata;
        switch ((doctor_opt) o->key) {
        case DOCTOR_OPT_JSON:
                a->json = true;
                return 0;
        case DOCTOR_OPT_STATE_DIR:
                if (!*val)
                        return nsr_error_setx(err, EINVAL, "%s needs a directory", o->name);
                a->state_dir = val;
                return 0;
        }
        return nsr_error_setx(err, EINVAL, "%s has no handler", o->name);
}

static int print_json(const nsr_check *checks, nsr_verdict v, const nsr_guarantee *g, size_t n_g) {
        nsr_error e = { 0 };
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(stdout, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "verdict", nsr_verdict_to_string(v));
        nsr_json_array_begin(j, "checks");
        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++) {
                const nsr_check *c = &checks[i];
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "name", nsr_check_name(c->id));
                nsr_json_bool(j, "ok", c->ok);
                nsr_json_string(j, "detail", c->detail);
                nsr_json_string(j, "fix", c->fix[0] ? c->fix : NULL);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        /* Which of the namespace sandbox's guarantees best-effort mode
         * keeps on this host. */
        nsr_json_array_begin(j, "best_effort");
        for (size_t i = 0; i < n_g; i++) {
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "name", g[i].name);
                nsr_json_bool(j, "holds", g[i].holds);
                nsr_json_string(j, "detail", g[i].detail);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        nsr_json_object_end(j);
        if (nsr_json_finish(j, "doctor report", NULL, NULL, &e) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 64];
                nsr_error_format(&e, buf, sizeof(buf));
                nsr_utf8_fprintf_line(stderr, "nsrun: %s\n", buf);
                return -1;
        }
        return 0;
}

/* The failed default layers, by name: "overlay, overlay-depth". */
static void failed_required(const nsr_check *checks, char *buf, size_t len) {
        buf[0] = '\0';
        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++) {
                if (checks[i].ok || nsr_check_class_of(checks[i].id) != NSR_CHECK_REQUIRED)
                        continue;
                size_t used = strlen(buf);
                snprintf(buf + used, len - used, "%s%s", used ? ", " : "", nsr_check_name(checks[i].id));
        }
}

/* Details name host paths (the state dir, a container): each line goes
 * through the one escaping function. */
static void print_text(const nsr_check *checks, nsr_verdict v, const nsr_guarantee *g, size_t n_g) {
        for (int i = 0; i < _NSR_CHECK_ID_MAX; i++) {
                const nsr_check *c = &checks[i];
                const char *optional = nsr_check_class_of(c->id) == NSR_CHECK_OPTIONAL ? "[optional] " : "";
                if (c->ok)
                        nsr_utf8_fprintf_line(stdout, "OK      %s: %s\n", nsr_check_name(c->id), c->detail);
                else if (c->fix[0])
                        nsr_utf8_fprintf_line(stdout, "FAILED  %s: %s%s \u2014 fix: %s\n", nsr_check_name(c->id),
                                              optional, c->detail, c->fix);
                else
                        nsr_utf8_fprintf_line(stdout, "FAILED  %s: %s%s\n", nsr_check_name(c->id), optional, c->detail);
        }
        printf("best-effort mode (--sandbox=best-effort) here, against the namespace sandbox:\n");
        for (size_t i = 0; i < n_g; i++)
                nsr_utf8_fprintf_line(stdout, "  %-9s %s: %s\n", g[i].holds ? "holds" : "NOT HELD", g[i].name,
                                      g[i].detail);
        char failed[512];
        failed_required(checks, failed, sizeof(failed));
        bool core = checks[NSR_CHECK_USERNS].ok && checks[NSR_CHECK_UID_MAP].ok && checks[NSR_CHECK_USERNS_MOUNT].ok;
        switch (v) {
        case NSR_VERDICT_FULL:
                printf("verdict: full: every layer project mode uses by default works\n");
                break;
        case NSR_VERDICT_DEGRADED:
                if (!core)
                        printf("verdict: degraded: no user namespace sandbox (%s); project mode can only run "
                               "best-effort (--sandbox=best-effort), confined by Landlock and seccomp\n",
                               failed);
                else if (!checks[NSR_CHECK_OVERLAY].ok || !checks[NSR_CHECK_OVERLAY_DEPTH].ok)
                        printf("verdict: degraded: without %s; project mode runs with --no-overlay here (it "
                               "switches by itself)\n",
                               failed);
                else
                        printf("verdict: degraded: nsrun runs, but without %s\n", failed);
                break;
        case NSR_VERDICT_UNAVAILABLE:
                printf("verdict: unavailable: no user namespace sandbox (%s) and no Landlock: nsrun cannot "
                       "confine anything here\n",
                       failed);
                break;
        case _NSR_VERDICT_MAX:
        case _NSR_VERDICT_INVALID:
                break;
        }
}

int nsr_cmd_doctor(int argc, char **argv) {
        dargs a = { 0 };
        nsr_subargs sa;
        nsr_error pe = { 0 };
        int pr = nsr_subopts_parse(&doctor_cmd, argc, argv, doctor_option, &a, &sa, &pe);
        bool help = sa.help;
        nsr_subargs_done(&sa);
        if (pr < 0) {
                nsr_cmd_print_error(&pe);
                nsr_subopts_help(stderr, &doctor_cmd);
                return NSR_EXIT_USAGE;
        }
        if (help) {
                nsr_subopts_help(stdout, &doctor_cmd);
                return 0;
        }
        bool json = a.json;
        const char *state_opt = a.state_dir;

        /* Without HOME there is no default state dir; the overlay-depth
         * check then says so. */
        nsr_error e = { 0 };
        _cleanup_free_ char *state_dir = NULL;
        (void) nsr_state_dir_resolve(state_opt, environ, &state_dir, &e);

        nsr_check checks[_NSR_CHECK_ID_MAX];
        nsr_hostcheck_opts o = { .state_dir = state_dir };
        if (nsr_hostcheck_run(&o, checks, &e) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 64];
                nsr_error_format(&e, buf, sizeof(buf));
                nsr_utf8_fprintf_line(stderr, "nsrun: %s\n", buf);
                return 1;
        }
        nsr_verdict v = nsr_hostcheck_verdict(checks);
        nsr_guarantee g[NSR_GUARANTEES_MAX];
        size_t n_g = nsr_hostcheck_best_effort(checks, nsr_landlock_abi(), g);
        if (json) {
                if (print_json(checks, v, g, n_g) < 0)
                        return 1;
        } else
                print_text(checks, v, g, n_g);
        fflush(stdout);
        switch (v) {
        case NSR_VERDICT_FULL:
                return 0;
        case NSR_VERDICT_DEGRADED:
                return DOCTOR_DEGRADED;
        case NSR_VERDICT_UNAVAILABLE:
        case _NSR_VERDICT_MAX:
        case _NSR_VERDICT_INVALID:
                break;
        }
        return 1;
}
