/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/profileset.h"
#include "seccomp/compile.h"

static const char *env_get(char *const *env, const char *name) {
        size_t len = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
                        return env[i][len + 1] ? env[i] + len + 1 : NULL;
        return NULL;
}

void nsr_profileset_ctx(char *const *env, nsr_pf_ctx *ret) {
        *ret = (nsr_pf_ctx){
                .home = env_get(env, "HOME"),
                .env = env,
                .sysconfdir = nsr_pf_sysconfdir(),
                .datadir = nsr_datadir(),
        };
}

/* Appends src's lines to dst (src is emptied). */
static void move_lines(nsr_pf_list *dst, nsr_pf_list *src) {
        if (src->n == 0) /* memcpy must not see a NULL entries, even for 0 bytes */
                return;
        dst->entries = nsr_realloc_array(dst->entries, dst->n + src->n, sizeof(nsr_pf_entry));
        memcpy(dst->entries + dst->n, src->entries, src->n * sizeof(nsr_pf_entry));
        dst->n += src->n;
        free(src->entries);
        src->entries = NULL;
        src->n = 0;
}

/* The real paths of the projects that exist (the others fail later, in
 * the project's own checks). */
static char **real_projects(char *const *projects) {
        char **v = nsr_malloc0(sizeof(char *));
        char real[PATH_MAX];
        for (size_t i = 0; projects && projects[i]; i++)
                if (realpath(projects[i], real) && !nsr_strv_contains(v, real))
                        nsr_strv_extend(&v, real);
        return v;
}

/* Each --profile; one named by path inside a project of the run is the
 * project's file, read like its .nsrun/profile. */
static int load_profiles(char *const *profiles, const nsr_pf_ctx *ctx, nsr_pf_list *prof, nsr_error *err) {
        for (size_t i = 0; profiles && profiles[i]; i++) {
                _cleanup_free_ char *path = NULL;
                int r = nsr_pf_find(ctx, profiles[i], &path, err);
                if (r < 0)
                        return nsr_error_prefix(err, "--profile");
                nsr_pf_kind kind = strchr(profiles[i], '/') && nsr_pf_in_project(ctx, path) ? NSR_PF_PROJECT_PROFILE
                                                                                            : NSR_PF_PROFILE;
                r = nsr_pf_load(ctx, path, kind, false, prof, err);
                if (r < 0)
                        return r;
                /* The path as named too, not only the file it resolves to:
                 * a symlink on the way is what the next run follows. */
                _cleanup_free_ char *cwd = path[0] == '/' ? NULL : getcwd(NULL, 0);
                _cleanup_free_ char *abs = cwd ? nsr_path_join(cwd, path) : nsr_strdup(path);
                if (!nsr_strv_contains(prof->files, abs))
                        nsr_strv_extend(&prof->files, abs);
        }
        return 0;
}

/* The command line's projects and those the profiles name ("project DIR";
 * not from a file the sandbox can write, which may not say it). */
static char **all_projects(char *const *projects, const nsr_pf_list *prof) {
        char **proj = nsr_strv_copy(projects);
        for (size_t i = 0; i < prof->n; i++)
                if (prof->entries[i].opt->id == NSR_OPT_PROJECT && !nsr_pf_kind_tightening_only(prof->entries[i].kind))
                        nsr_strv_extend(&proj, prof->entries[i].words[1]);
        return proj;
}

static void take_files(nsr_pf_list *dst, nsr_pf_list *src) {
        for (size_t i = 0; src->files && src->files[i]; i++)
                if (!nsr_strv_contains(dst->files, src->files[i]))
                        nsr_strv_extend(&dst->files, src->files[i]);
}

static int load_files(char *const *profiles, char *const *projects, const nsr_pf_ctx *ctx0, nsr_pf_list *out,
                      nsr_error *err) {
        _cleanup_(nsr_pf_list_done) nsr_pf_list prof = { 0 }, sys = { 0 }, user = { 0 }, local = { 0 };
        int r;

        nsr_pf_ctx ctx = *ctx0;
        _cleanup_strv_free_ char **real = real_projects(projects);
        ctx.projects = real;
        r = load_profiles(profiles, &ctx, &prof, err);
        if (r < 0)
                return r;
        /* A profile may itself say "project DIR": then the profiles are
         * read again, knowing that project (once: the second reading
         * takes no "project" from a file inside one). */
        _cleanup_strv_free_ char **proj = all_projects(projects, &prof);
        _cleanup_strv_free_ char **real2 = real_projects(proj);
        if (nsr_strv_length(real2) != nsr_strv_length(real)) {
                nsr_pf_list_done(&prof);
                ctx.projects = real2;
                r = load_profiles(profiles, &ctx, &prof, err);
                if (r < 0)
                        return r;
                nsr_strv_free(proj);
                proj = all_projects(projects, &prof);
        }
        bool project_mode = nsr_strv_length(proj) > 0;

        _cleanup_free_ char *sysfile = nsr_path_join(ctx.sysconfdir, "nsrun/config");
        r = nsr_pf_load(&ctx, sysfile, NSR_PF_SYSTEM_CONFIG, true, &sys, err);
        if (r < 0)
                return r;
        if (project_mode) {
                const char *cfg = NULL;
                _cleanup_free_ char *dflt = NULL;
                for (size_t i = 0; ctx.env && ctx.env[i]; i++)
                        if (nsr_startswith(ctx.env[i], "XDG_CONFIG_HOME=/"))
                                cfg = ctx.env[i] + strlen("XDG_CONFIG_HOME=");
                if (!cfg && ctx.home && ctx.home[0] == '/')
                        cfg = dflt = nsr_path_join(ctx.home, ".config");
                if (cfg) {
                        _cleanup_free_ char *userfile = nsr_path_join(cfg, "nsrun/config");
                        r = nsr_pf_load(&ctx, userfile, NSR_PF_USER_CONFIG, true, &user, err);
                        if (r < 0)
                                return r;
                        /* Where the user's config, profiles and protect.list
                         * live: protected as a whole inside a project, so
                         * that a run cannot plant one the next run reads. */
                        nsr_strv_push(&out->files, nsr_path_join(cfg, "nsrun"));
                }
                for (size_t i = 0; proj[i]; i++) {
                        r = nsr_pf_load_project(&ctx, proj[i], &local, err);
                        if (r < 0)
                                return r;
                }
                nsr_strv_push(&out->files, nsr_path_join(ctx.sysconfdir, "nsrun"));
                /* The shipped lists, profiles and policies: inside a
                 * project only when nsrun runs from its own source tree. */
                if (ctx.datadir)
                        nsr_strv_push(&out->files, nsr_path_join(ctx.datadir, "profiles"));
                nsr_strv_push(&out->files, nsr_seccomp_dir());
                take_files(out, &sys);
                move_lines(out, &sys);
        }
        /* The system's forbid rules hold in every case. */
        out->forbid = TAKE_PTR(sys.forbid);
        out->n_forbid = sys.n_forbid;
        sys.n_forbid = 0;
        take_files(out, &user);
        take_files(out, &prof);
        take_files(out, &local);
        move_lines(out, &user);
        move_lines(out, &prof);
        move_lines(out, &local);
        return 0;
}

/* A --project that only the parser saw (inside an --args file) came too
 * late for the configs, their forbid rules and .nsrun/profile: refused,
 * rather than run without them. */
static int check_late_project(const nsr_plan *plan, size_t seen, nsr_cli_result *ret, nsr_error *err) {
        if (nsr_strv_length(plan->proj.projects) <= seen)
                return 0;
        ret->policy_error = true;
        return nsr_error_setx(err, EINVAL,
                              "--project inside an --args file: give it on the command line, so that the config "
                              "files and the project's .nsrun/profile apply");
}

int nsr_profileset_parse(char *const *args, size_t n, char *const *env, nsr_plan **ret_plan, nsr_cli_result *ret,
                         nsr_pf_list *ret_files, nsr_error *err) {
        _cleanup_strv_free_ char **profiles = NULL, **projects = NULL;
        nsr_cli_prescan(args, n, &profiles, &projects);

        nsr_pf_ctx ctx;
        nsr_profileset_ctx(env, &ctx);
        _cleanup_(nsr_pf_list_done) nsr_pf_list files = { 0 };
        int r = load_files(profiles, projects, &ctx, &files, err);
        if (r < 0) {
                err->kind = NSR_ERR_CONFIG;
                *ret_plan = nsr_plan_new();
                *ret = (nsr_cli_result){ .action = NSR_CLI_RUN, .policy_error = true };
                return r;
        }
        r = nsr_cli_parse_with(&files, args, n, false, ret_plan, ret, err);
        size_t seen = nsr_strv_length(projects);
        for (size_t i = 0; i < files.n; i++)
                seen += files.entries[i].opt->id == NSR_OPT_PROJECT;
        if (r >= 0)
                r = check_late_project(*ret_plan, seen, ret, err);
        for (size_t i = 0; files.files && files.files[i]; i++)
                nsr_strv_extend(&(*ret_plan)->proj.config_files, files.files[i]);
        if (ret_files) {
                *ret_files = files;
                files = (nsr_pf_list){ 0 };
        }
        return r;
}
