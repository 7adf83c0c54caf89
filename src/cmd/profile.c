/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "nsrun profile list | show [NAME] [--json] | check [-p DIR] FILE": the profile
 * files of nsrun-profile(5), listed, expanded and checked. A front end: it
 * prints and picks the exit status (0 fine, 1 usage, 125 a bad file). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/utf8.h"
#include "cli/options.h"
#include "cli/plan.h"
#include "cli/profileset.h"
#include "cli/subopts.h"
#include "cmd/cmd.h"
#include "project/project.h"

extern char **environ;

static const nsr_subopt show_opts[] = {
        { "--json", NULL, 0, 0, NULL, "Print the lines as JSON" },
        { NULL, NULL, 0, 0, NULL, NULL },
};
static const nsr_subcmd list_sub = { "profile list", NULL, NULL, 0, 0, NULL };
static const nsr_subcmd show_sub = { "profile show", "[NAME|PATH]", NULL, 1, 0, show_opts };
static const nsr_subopt check_opts[] = {
        { "--project", "-p", 1, 1, "DIR", "Check FILE as a run on DIR reads it (inside DIR: tightening lines only)" },
        { NULL, NULL, 0, 0, NULL, NULL },
};
static const nsr_subcmd check_sub = { "profile check", "FILE", NULL, 1, 0, check_opts };

static void usage(FILE *f) {
        static const nsr_subcmd *const cmds[] = { &list_sub, &show_sub, &check_sub };
        nsr_subopts_help_group(f, "usage: ", cmds, ELEMENTSOF(cmds),
                               "\n"
                               "list    the profiles --profile NAME finds, and where\n"
                               "show    the options a project-mode run in this directory would take from\n"
                               "        files: the system and user configs, the profile, ./.nsrun/profile;\n"
                               "        each fully expanded, with the file and line it came from\n"
                               "check   parse FILE (a project's .nsrun/profile by its name; with -p DIR,\n"
                               "        a file inside DIR as that project's), check it as a run in DIR\n"
                               "        (or here) would: options that exclude each other, bind sources\n"
                               "        that must exist; report the first error as FILE:LINE\n\n"
                               "See nsrun-profile(5).\n");
}

typedef struct verb_opts {
        bool json;
        const char *project;
} verb_opts;

static int verb_option(void *userdata, const nsr_subopt *o, const char *val, nsr_error *err) {
        verb_opts *v = userdata;
        (void) err;
        if (o->key == 1)
                v->project = val;
        else
                v->json = true;
        return 0;
}

/* Parses a verb's words: 0 with the operand in *ret_operand, 1 after
 * --help, -1 after saying what is wrong. */
static int parse(const nsr_subcmd *c, int argc, char **argv, verb_opts *ret_opts, const char **ret_operand) {
        verb_opts vo = { 0 };
        nsr_subargs sa;
        nsr_error e = { 0 };
        int r = nsr_subopts_parse(c, argc, argv, verb_option, &vo, &sa, &e);
        bool help = sa.help;
        *ret_operand = sa.n_operands ? sa.operands[0] : NULL;
        nsr_subargs_done(&sa);
        if (r < 0) {
                nsr_cmd_print_error(&e);
                usage(stderr);
                return -1;
        }
        if (help) {
                usage(stdout);
                return 1;
        }
        *ret_opts = vo;
        return 0;
}

static void print_error(const nsr_error *e) {
        nsr_cmd_print_error(e);
}

static int cmd_list(void) {
        nsr_pf_ctx ctx;
        nsr_profileset_ctx(environ, &ctx);
        _cleanup_strv_free_ char **names = NULL, **paths = NULL;
        nsr_error err = { 0 };
        if (nsr_pf_list_names(&ctx, &names, &paths, &err) < 0) {
                print_error(&err);
                return NSR_EXIT_FAILURE;
        }
        for (size_t i = 0; names[i]; i++)
                nsr_utf8_fprintf_line(stdout, "%-20s %s\n", names[i], paths[i]);
        return 0;
}

/* A word as the shell would read it back, with nothing a terminal obeys
 * (a word that needs escaping shows in the shell's printf form). */
static void put_word(const char *w) {
        _cleanup_free_ char *q = nsr_utf8_escape_flags(w, NSR_ESCAPE_SHELL);
        fputs(q, stdout);
}

static int show_json(const nsr_pf_list *l) {
        nsr_error e = { 0 };
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(stdout, 0, NSR_JSON_PRETTY);
        nsr_json_object_begin(j, NULL);
        nsr_json_array_begin(j, "options");
        for (size_t i = 0; i < l->n; i++) {
                const nsr_pf_entry *en = &l->entries[i];
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "option", en->words[0]);
                nsr_json_strv(j, "args", en->words + 1);
                nsr_json_string(j, "file", en->file);
                nsr_json_uint(j, "line", en->line);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        nsr_json_array_begin(j, "forbid");
        for (size_t i = 0; i < l->n_forbid; i++) {
                const nsr_pf_forbid *f = &l->forbid[i];
                nsr_json_object_begin(j, NULL);
                nsr_json_string(j, "option", f->opt->name);
                nsr_json_string(j, "value", f->value);
                nsr_json_string(j, "file", f->file);
                nsr_json_uint(j, "line", f->line);
                nsr_json_object_end(j);
        }
        nsr_json_array_end(j);
        nsr_json_object_end(j);
        if (nsr_json_finish(j, "profile", NULL, NULL, &e) < 0) {
                print_error(&e);
                return NSR_EXIT_FAILURE;
        }
        putchar('\n');
        return 0;
}

static int cmd_show(const char *name, bool json) {
        /* The files a "nsrun -p . [--profile NAME] -- true" run reads, run
         * through the parser so that an error shows as it would there. */
        char *args[] = { (char *) "--profile", (char *) name, (char *) "-p", (char *) ".", (char *) "true", NULL };
        char **a = name ? args : args + 2;
        size_t n = name ? 5 : 3;
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        _cleanup_(nsr_pf_list_done) nsr_pf_list files = { 0 };
        nsr_cli_result res;
        nsr_error err = { 0 };
        if (nsr_profileset_parse(a, n, environ, &plan, &res, &files, &err) < 0) {
                print_error(&err);
                return NSR_EXIT_FAILURE;
        }
        if (json)
                return show_json(&files);
        for (size_t i = 0; i < files.n_forbid; i++) {
                _cleanup_free_ char *v = nsr_utf8_escape(files.forbid[i].value ? files.forbid[i].value : "");
                _cleanup_free_ char *fn = nsr_utf8_escape(files.forbid[i].file);
                printf("# forbid %s%s%s    (%s:%u)\n", files.forbid[i].opt->name + 2, files.forbid[i].value ? "=" : "",
                       v, fn, files.forbid[i].line);
        }
        for (size_t i = 0; i < files.n; i++) {
                const nsr_pf_entry *en = &files.entries[i];
                /* As a profile line: copy it into a file as it is. */
                for (size_t k = 0; en->words[k]; k++) {
                        if (k)
                                putchar(' ');
                        put_word(k ? en->words[k] : en->words[k] + 2);
                }
                _cleanup_free_ char *fn = nsr_utf8_escape(en->file);
                printf("    # %s:%u\n", fn, en->line);
        }
        return 0;
}

/* What a run would find wrong with the first n lines: the parser's
 * complaints, then the plan's (options that exclude each other, such as
 * share-net with allow-host), checked as a project run in dir checks them. */
static int check_prefix(nsr_pf_list *l, size_t n, const char *dir, nsr_error *err) {
        size_t all = l->n;
        l->n = n;
        _cleanup_(nsr_plan_freep) nsr_plan *plan = NULL;
        nsr_cli_result res;
        char *args[] = { (char *) "--project", (char *) dir, (char *) "true", NULL };
        int r = nsr_cli_parse_with(l, args, 3, false, &plan, &res, err);
        l->n = all;
        if (r < 0)
                return r;
        _cleanup_(nsr_project_freep) nsr_project *pj = NULL;
        r = nsr_project_prepare(plan, 0, &pj, err);
        if (r < 0)
                return r;
        nsr_caller caller;
        nsr_caller_detect(&caller);
        return nsr_plan_validate(nsr_project_plan(pj), &caller, err);
}

/* A path a line binds from must exist, as the run's mount would find. */
static int check_sources(const nsr_pf_list *l, nsr_error *err) {
        for (size_t i = 0; i < l->n; i++) {
                const nsr_pf_entry *en = &l->entries[i];
                nsr_opt_id id = en->opt->id;
                bool needs = id == NSR_OPT_BIND || id == NSR_OPT_RO_BIND || id == NSR_OPT_DEV_BIND ||
                             id == NSR_OPT_RW || id == NSR_OPT_RO;
                struct stat st;
                if (needs && en->words[1] && stat(en->words[1], &st) < 0)
                        return nsr_error_set(err, errno, "%s:%u: Can't find source path %s", en->file, en->line,
                                             en->words[1]);
        }
        return 0;
}

/* The plan's complaint names the line that brought it: the shortest
 * prefix of the lines that fails. */
static int check_plan(nsr_pf_list *l, const char *dir, nsr_error *err) {
        if (check_prefix(l, l->n, dir, err) >= 0)
                return check_sources(l, err);
        for (size_t n = 1; n <= l->n; n++) {
                nsr_error e = { 0 };
                if (check_prefix(l, n, dir, &e) < 0) {
                        *err = e;
                        return nsr_error_prefix(err, "%s:%u", l->entries[n - 1].file, l->entries[n - 1].line);
                }
        }
        return -err->code; /* fails whole, not by a line: as it is */
}

static int cmd_check(const char *file, const char *project) {
        nsr_pf_ctx ctx;
        nsr_profileset_ctx(environ, &ctx);
        _cleanup_(nsr_pf_list_done) nsr_pf_list l = { 0 };
        nsr_error err = { 0 };
        bool local = nsr_endswith(file, "/.nsrun/profile") || streq(file, ".nsrun/profile");
        /* With -p DIR: the run's view, where a file inside DIR is the
         * project's (nsrun-profile(5)). */
        char real[PATH_MAX];
        char *projects[2] = { NULL, NULL };
        if (project) {
                if (!realpath(project, real)) {
                        fprintf(stderr, "nsrun: --project %s: %s\n", project, strerror(errno));
                        return NSR_EXIT_FAILURE;
                }
                projects[0] = real;
                ctx.projects = projects;
        }
        int r;
        if (local) {
                _cleanup_free_ char *dir = nsr_strndup(file, strlen(file) - strlen(".nsrun/profile"));
                r = nsr_pf_load_project(&ctx, *dir ? dir : ".", &l, &err);
        } else
                r = nsr_pf_load(&ctx, file,
                                strchr(file, '/') && nsr_pf_in_project(&ctx, file) ? NSR_PF_PROJECT_PROFILE
                                                                                   : NSR_PF_PROFILE,
                                false, &l, &err);
        if (r >= 0) {
                /* Through the parser and the plan's checks, as a run would
                 * apply it: in the project whose .nsrun/profile it is, else
                 * in the current dir. */
                _cleanup_free_ char *dir = project ? nsr_strdup(real)
                                           : local ? nsr_strndup(file, strlen(file) - strlen(".nsrun/profile"))
                                                   : nsr_strdup(".");
                char here[PATH_MAX];
                /* The whole host is no project: check as one in /tmp. */
                if (!project && !local && realpath(".", here) && streq(here, "/"))
                        free(dir), dir = nsr_strdup("/tmp");
                r = check_plan(&l, *dir ? dir : ".", &err);
        }
        if (r < 0) {
                print_error(&err);
                return NSR_EXIT_FAILURE;
        }
        nsr_utf8_fprintf_line(stdout, "%s: %zu option line%s, ok\n", file, l.n, l.n == 1 ? "" : "s");
        return 0;
}

/* For the completion scripts (generated at build time): one line per
 * option and per short form, "NAME NARGS [METAVAR WORDS...]", such as
 * "--bind 2 SRC DEST" or "--home 1 overlay|ro|hide". Not documented: an
 * interface for the build. */
static int dump_options(void) {
        for (size_t i = 0; i < _NSR_OPT_MAX; i++) {
                const nsr_option *o = &nsr_options[i];
                if (!o->name || !(o->flags & NSR_OPTF_NSRUN))
                        continue;
                for (int k = 0; k < 2; k++) {
                        const char *name = k ? o->short_name : o->name;
                        if (name)
                                printf("%s %u%s%s\n", name, o->nargs, o->metavar ? " " : "",
                                       o->metavar ? o->metavar : "");
                }
        }
        return 0;
}

int nsr_cmd_profile(int argc, char **argv) {
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                usage(argc < 2 ? stderr : stdout);
                return argc < 2 ? NSR_EXIT_USAGE : 0;
        }
        const char *sub = argv[1], *operand = NULL;
        verb_opts vo = { 0 };
        const nsr_subcmd *c = streq(sub, "list")    ? &list_sub
                              : streq(sub, "show")  ? &show_sub
                              : streq(sub, "check") ? &check_sub
                                                    : NULL;
        if (c) {
                int r = parse(c, argc - 1, argv + 1, &vo, &operand);
                if (r != 0)
                        return r < 0 ? NSR_EXIT_USAGE : 0;
        }
        if (c == &list_sub)
                return cmd_list();
        if (c == &show_sub)
                return cmd_show(operand, vo.json);
        if (c == &check_sub && operand)
                return cmd_check(operand, vo.project);
        if (streq(sub, "--dump-options") && argc == 2)
                return dump_options();
        usage(stderr);
        return NSR_EXIT_USAGE;
}
