/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "nsrun seccomp check|compile|list": the front end for policy files. Like
 * main.c, it prints and picks exit codes: 0 for success, 1 for any failure. */
#include "config.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/outfile.h"
#include "seccomp/compile.h"

static const char usage[] =
        "Usage: nsrun seccomp check [-v] POLICY...\n"
        "       nsrun seccomp compile POLICY -o FILE\n"
        "       nsrun seccomp list\n"
        "\n"
        "POLICY is a shipped policy's name (see \"list\") or a path containing a '/'.\n"
        "\n"
        "  check     parse and compile each POLICY and report problems as FILE:LINE: MESSAGE;\n"
        "            -v also prints the filter rules the policy expands to\n"
        "  compile   write the BPF program (i386 and x32 included on x86_64) to FILE, or\n"
        "            to standard output for '-'; bwrap --seccomp FD accepts it\n"
        "  list      show the shipped policies and what each one is for\n"
        "\n"
        "The policy language is described in nsrun-policy(5).\n";

static void print_err(const nsr_error *e) {
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(e, buf, sizeof(buf));
        /* Errors in the policy text already start with FILE:LINE:, the way
         * compilers report them. */
        if (e->kind == NSR_ERR_USAGE)
                fprintf(stderr, "%s\n", buf);
        else
                fprintf(stderr, "nsrun: seccomp: %s\n", buf);
}

static int cmd_check(int argc, char **argv) {
        bool verbose = false;
        int first = 1;
        if (argc > 1 && (streq(argv[1], "-v") || streq(argv[1], "--verbose"))) {
                verbose = true;
                first = 2;
        }
        if (first >= argc) {
                fputs("nsrun: seccomp check: no policy given\n", stderr);
                return 1;
        }
        int rc = 0;
        for (int i = first; i < argc; i++) {
                nsr_error err = { 0 };
                _cleanup_(nsr_policy_freep) nsr_policy *p = NULL;
                _cleanup_free_ char *bpf = NULL;
                size_t len = 0;
                if (nsr_seccomp_policy_load(argv[i], &p, &err) < 0 || nsr_seccomp_compile(p, &bpf, &len, &err) < 0) {
                        print_err(&err);
                        rc = 1;
                        continue;
                }
                if (verbose) {
                        char act[64], line[NSR_ERROR_MSG_MAX];
                        printf("# %s: default %s\n", p->files[0],
                               nsr_policy_action_to_string(&p->default_action, act, sizeof(act)));
                        for (size_t r = 0; r < p->n_rules; r++) {
                                nsr_policy_format_rule(&p->rules[r], line, sizeof(line));
                                printf("%s  # %s:%u\n", line, p->files[p->rules[r].file], p->rules[r].line);
                        }
                }
                printf("%s: ok, %zu filter rules, %zu BPF instructions\n", p->files[0], p->n_rules,
                       len / sizeof(struct sock_filter));
        }
        return rc;
}

static int cmd_compile(int argc, char **argv) {
        const char *policy = NULL, *out = NULL;
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "-o") || streq(argv[i], "--output")) {
                        if (i + 1 >= argc) {
                                fputs("nsrun: seccomp compile: -o needs a file name\n", stderr);
                                return 1;
                        }
                        out = argv[++i];
                } else if (!policy && (argv[i][0] != '-' || strchr(argv[i], '/')))
                        policy = argv[i];
                else {
                        fprintf(stderr, "nsrun: seccomp compile: unexpected argument '%s'\n", argv[i]);
                        return 1;
                }
        }
        if (!policy || !out) {
                fputs("nsrun: seccomp compile: usage: nsrun seccomp compile POLICY -o FILE\n", stderr);
                return 1;
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
        (void) argv;
        if (argc > 1) {
                fputs("nsrun: seccomp list takes no arguments\n", stderr);
                return 1;
        }
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
                fputs(usage, stderr);
                return 1;
        }
        const char *verb = argv[1];
        if (streq(verb, "--help") || streq(verb, "-h") || streq(verb, "help")) {
                fputs(usage, stdout);
                return 0;
        }
        for (int i = 2; i < argc; i++)
                if (streq(argv[i], "--help") || streq(argv[i], "-h")) {
                        fputs(usage, stdout);
                        return 0;
                }
        if (streq(verb, "check"))
                return cmd_check(argc - 1, argv + 1);
        if (streq(verb, "compile"))
                return cmd_compile(argc - 1, argv + 1);
        if (streq(verb, "list"))
                return cmd_list(argc - 1, argv + 1);
        fprintf(stderr, "nsrun: seccomp: unknown command '%s'\n%s", verb, usage);
        return 1;
}
