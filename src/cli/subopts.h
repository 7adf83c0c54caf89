/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The options of the subcommands ("nsrun history --limit N"). Each
 * subcommand has a table of its own in this one form, read by one parser
 * (one set of messages, --opt VALUE and --opt=VALUE alike, -h and --help
 * everywhere) and by the --help it generates, so that an option lives in
 * its table and its handler only. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "base/error.h"

typedef struct nsr_subopt {
        const char *name;       /* "--state-dir"; NULL ends a table */
        const char *short_name; /* "-p", or NULL */
        int key;                /* what the subcommand's handler tells options apart by */
        unsigned nargs;         /* 0, or 1: "--opt VALUE" or "--opt=VALUE" */
        const char *metavar;    /* "DIR", or NULL */
        const char *help;       /* one line */
} nsr_subopt;

typedef enum nsr_subcmd_flags {
        /* The first operand ends the options: the words after it (after
         * one optional "--") are a command to run (nsrun exec). */
        NSR_SUBCMD_COMMAND_AFTER = 1 << 0,
        /* Words the table does not know are operands, not errors, kept in
         * order (session start hands them to the main parser). */
        NSR_SUBCMD_PASS_UNKNOWN = 1 << 1,
} nsr_subcmd_flags;

typedef struct nsr_subcmd {
        const char *name;      /* "history", "session stop": in usage and messages */
        const char *operands;  /* the usage line after the options: "[RUN]", or NULL */
        const char *about;     /* --help's text after the usage line(s), or NULL */
        unsigned max_operands; /* words that are no option; one more is an error */
        unsigned flags;        /* nsr_subcmd_flags */
        const nsr_subopt *opts;
} nsr_subcmd;

/* Called for each option in the order given; value is NULL for a flag.
 * Returns 0, or -errno with err set. */
typedef int (*nsr_subopt_fn)(void *userdata, const nsr_subopt *o, const char *value, nsr_error *err);

typedef struct nsr_subargs {
        bool help;       /* -h or --help was given */
        char **operands; /* NULL-terminated; the words point into argv */
        size_t n_operands;
        char **command; /* NSR_SUBCMD_COMMAND_AFTER: what follows the first operand */
} nsr_subargs;

/* Parses argv[1..argc) (argv[0] is the subcommand's name). On failure
 * err says why, in words that start with the subcommand's name. *ret is
 * always set and must be released with nsr_subargs_done. */
int nsr_subopts_parse(const nsr_subcmd *c, int argc, char **argv, nsr_subopt_fn fn, void *userdata, nsr_subargs *ret,
                      nsr_error *err);
void nsr_subargs_done(nsr_subargs *a);
const nsr_subopt *nsr_subopts_find(const nsr_subcmd *c, const char *name);

/* --help: the usage line, the about text, then every option. */
void nsr_subopts_help(FILE *f, const nsr_subcmd *c);
/* --help of a subcommand with verbs (session, seccomp, profile): a usage
 * line per verb (the first starting with lead, "usage: "), the about
 * text, then each verb's options. */
void nsr_subopts_help_group(FILE *f, const char *lead, const nsr_subcmd *const *cmds, size_t n, const char *about);
