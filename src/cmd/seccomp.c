/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "nsrun seccomp check|compile|list": the front end for policy files. Like
 * main.c, it prints and picks exit codes: 0 for success, 1 for any failure. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>

#include "base/outfile.h"
#include "base/utf8.h"
#include "cli/subopts.h"
#include "cmd/cmd.h"
#include "seccomp/compile.h"

typedef enum seccomp_opt {
        SECCOMP_OPT_VERBOSE,
        SECCOMP_OPT_OUTPUT,
} seccomp_opt;

static const nsr_subopt check_opts[] = {
        { "--verbose", "-v", SECCOMP_OPT_VERBOSE, 0, NULL, "Also print the filter rules each policy expands to" },
        { NULL, NULL, 0, 0, NULL, NULL },
};
static const nsr_subopt compile_opts[] = {
        { "--output", "-o", SECCOMP_OPT_OUTPUT, 1, "FILE", "Write the program to FILE, or to standard output for '-'" },
        { NULL, NULL, 0, 0, NULL, NULL },
};
static const nsr_subcmd check_sub = { "seccomp check", "POLICY...", NULL, UINT_MAX, 0, check_opts };
static const nsr_subcmd compile_sub = { "seccomp compile", "POLICY", NULL, 1, 0, compile_opts };
static const nsr_subcmd list_sub = { "seccomp list", NULL, NULL, 0, 0, NULL };

static void usage(FILE *f) {
        static const nsr_subcmd *const cmds[] = { &check_sub, &compile_sub, &list_sub };
        nsr_subopts_help_group(f, "Usage: ", cmds, ELEMENTSOF(cmds),
                               "\n"
                               "POLICY is a shipped policy's name (see \"list\") or a path containing a '/'.\n"
                               "\n"
                               "  check     parse and compile each POLICY and report problems as FILE:LINE: MESSAGE\n"
                               "  compile   write the BPF program (i386 and x32 included on x86_64) to FILE;\n"
                               "            bwrap --seccomp FD accepts it\n"
                               "  list      show the shipped policies and what each one is for\n"
                               "\n"
                               "The policy language is described in nsrun-policy(5).\n");
}

typedef struct sargs {
        nsr_subargs sa;
        bool verbose;
        const char *out;
} sargs;

static int seccomp_option(void *userdata, const nsr_subopt *o, const char *val, nsr_error *err) {
        sargs *a = userdata;
        switch ((seccomp_opt) o->key) {
        case SECCOMP_OPT_VERBOSE:
                a->verbose = true;
                return 0;
        case SECCOMP_OPT_OUTPUT:
                a->out = val;
                return 0;
        }
        return nsr_error_setx(err, EINVAL, "%s has no handler", o->name);
}

/* 0, 1 after --help, or -EINVAL after saying what is wrong. */
static int parse(const nsr_subcmd *c, int argc, char **argv, sargs *a) {
        *a = (sargs){ 0 };
        nsr_error e = { 0 };
        if (nsr_subopts_parse(c, argc, argv, seccomp_option, a, &a->sa, &e) < 0) {
                char buf[NSR_ERROR_MSG_MAX + 64];
                nsr_error_format(&e, buf, sizeof(buf));
                nsr_utf8_fprintf_line(stderr, "nsrun: %s\n", buf);
                return -EINVAL;
        }
        if (a->sa.help) {
                usage(stdout);
                return 1;
        }
        return 0;
}

static void sargs_done(sargs *a) {
        nsr_subargs_done(&a->sa);
}

static void print_err(const nsr_error *e) {
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(e, buf, sizeof(buf));
        /* Errors in the policy text already start with FILE:LINE:, the way
         * compilers report them. */
        if (e->kind == NSR_ERR_USAGE)
                nsr_utf8_fprintf_line(stderr, "%s\n", buf);
        else
                nsr_utf8_fprintf_line(stderr, "nsrun: seccomp: %s\n", buf);
}

static int cmd_check(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        int pr = parse(&check_sub, argc, argv, &a);
        if (pr != 0)
                return pr < 0 ? NSR_EXIT_USAGE : 0;
        bool verbose = a.verbose;
        if (a.sa.n_operands == 0) {
                fputs("nsrun: seccomp check: no policy given\n", stderr);
                return NSR_EXIT_USAGE;
        }
        int rc = 0;
        for (size_t i = 0; i < a.sa.n_operands; i++) {
                nsr_error err = { 0 };
                _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
                _cleanup_free_ char *bpf = NULL;
                size_t len = 0;
                if (nsr_seccomp_policy_load(a.sa.operands[i], &p, &err) < 0 ||
                    nsr_seccomp_compile(p, &bpf, &len, &err) < 0) {
                        print_err(&err);
                        rc = 1;
                        continue;
                }
                if (verbose) {
                        char act[64], line[NSR_ERROR_MSG_MAX];
                        nsr_utf8_fprintf_line(stdout, "# %s: default %s\n", p->files[0],
                                              nsr_policy_action_to_string(&p->default_action, act, sizeof(act)));
                        for (size_t r = 0; r < p->n_rules; r++) {
                                nsr_policy_format_rule(&p->rules[r], line, sizeof(line));
                                nsr_utf8_fprintf_line(stdout, "%s  # %s:%u\n", line, p->files[p->rules[r].file],
                                                      p->rules[r].line);
                        }
                }
                nsr_utf8_fprintf_line(stdout, "%s: ok, %zu filter rules, %zu BPF instructions\n", p->files[0],
                                      p->n_rules, len / sizeof(struct sock_filter));
        }
        return rc;
}

static int cmd_compile(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        int pr = parse(&compile_sub, argc, argv, &a);
        if (pr != 0)
                return pr < 0 ? NSR_EXIT_USAGE : 0;
        const char *policy = a.sa.n_operands ? a.sa.operands[0] : NULL, *out = a.out;
        if (!policy || !out) {
                fputs("nsrun: seccomp compile: usage: nsrun seccomp compile POLICY -o FILE\n", stderr);
                return NSR_EXIT_USAGE;
        }
        nsr_error err = { 0 };
        _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
        _cleanup_free_ char *bpf = NULL;
        size_t len = 0;
        if (nsr_seccomp_policy_load(policy, &p, &err) < 0 || nsr_seccomp_compile(p, &bpf, &len, &err) < 0) {
                print_err(&err);
                return 1;
        }
        if (streq(out, "-")) {
                int r = nsr_write_all(STDOUT_FILENO, bpf, len);
                if (r < 0) {
                        fprintf(stderr, "nsrun: seccomp compile: cannot write to stdout: %s\n", strerror(-r));
                        return 1;
                }
                return 0;
        }
        /* Written like every file nsrun makes on the host: a new file
         * renamed into place, never through a symlink (outfile.h). */
        _cleanup_(nsr_outfile_done) nsr_outfile f = NSR_OUTFILE_INIT;
        if (nsr_outfile_open("-o", out, &f, &err) < 0 || nsr_outfile_write(&f, bpf, len, &err) < 0) {
                nsr_error_prefix(&err, "seccomp compile");
                print_err(&err);
                return 1;
        }
        return 0;
}

static int cmd_list(int argc, char **argv) {
        _cleanup_(sargs_done) sargs a;
        int pr = parse(&list_sub, argc, argv, &a);
        if (pr != 0)
                return pr < 0 ? NSR_EXIT_USAGE : 0;
        nsr_error err = { 0 };
        _cleanup_strv_free_ char **names = NULL;
        if (nsr_seccomp_list(&names, &err) < 0) {
                print_err(&err);
                return 1;
        }
        _cleanup_free_ char *dir = nsr_seccomp_dir();
        for (size_t i = 0; names[i]; i++) {
                _cleanup_free_ char *file = nsr_asprintf("%s.policy", names[i]);
                _cleanup_free_ char *path = nsr_path_join(dir, file);
                _cleanup_free_ char *summary = NULL;
                if (nsr_seccomp_summary(path, &summary, &err) < 0) {
                        print_err(&err);
                        return 1;
                }
                printf("%-16s %s\n", names[i], summary);
        }
        return 0;
}

int nsr_cmd_seccomp(int argc, char **argv) {
        if (argc < 2) {
                usage(stderr);
                return NSR_EXIT_USAGE;
        }
        const char *verb = argv[1];
        if (streq(verb, "--help") || streq(verb, "-h") || streq(verb, "help")) {
                usage(stdout);
                return 0;
        }
        if (streq(verb, "check"))
                return cmd_check(argc - 1, argv + 1);
        if (streq(verb, "compile"))
                return cmd_compile(argc - 1, argv + 1);
        if (streq(verb, "list"))
                return cmd_list(argc - 1, argv + 1);
        fprintf(stderr, "nsrun: seccomp: unknown command '%s'\n", verb);
        usage(stderr);
        return NSR_EXIT_USAGE;
}
