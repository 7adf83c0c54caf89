/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>

#include "base/util.h"
#include "cli/subopts.h"

void nsr_subargs_done(nsr_subargs *a) {
        free(a->operands);
        a->operands = NULL;
}

const nsr_subopt *nsr_subopts_find(const nsr_subcmd *c, const char *name) {
        for (const nsr_subopt *o = c->opts; o && o->name; o++)
                if (streq(o->name, name) || (o->short_name && streq(o->short_name, name)))
                        return o;
        return NULL;
}

static int unknown_subopt(const nsr_subcmd *c, const char *name, const char *word, nsr_error *err) {
        const char *best = NULL;
        size_t best_d = SIZE_MAX;
        for (const nsr_subopt *o = c->opts; name[1] == '-' && o && o->name; o++) {
                size_t d = nsr_edit_distance(name, o->name);
                if (d < best_d && nsr_close_enough(name, o->name)) {
                        best_d = d;
                        best = o->name;
                }
        }
        if (best)
                return nsr_error_setxk(err, NSR_ERR_USAGE, EINVAL,
                                       "%s: unexpected argument \"%s\" (no such option; did you mean %s?)", c->name,
                                       word, best);
        return nsr_error_setxk(err, NSR_ERR_USAGE, EINVAL, "%s: unexpected argument \"%s\" (no such option)", c->name,
                               word);
}

/* One word that starts with '-': an option of the table, with its value
 * from the word itself (--opt=VALUE) or from the next one. *i moves past
 * what was used. 1 when the table does not know it and the subcommand
 * passes such words on. */
static int parse_option(const nsr_subcmd *c, int argc, char **argv, int *i, nsr_subopt_fn fn, void *userdata,
                        nsr_error *err) {
        const char *word = argv[*i];
        const char *eq = word[1] == '-' ? strchr(word, '=') : NULL;
        _cleanup_free_ char *name = eq ? nsr_strndup(word, (size_t) (eq - word)) : nsr_strdup(word);
        const nsr_subopt *o = nsr_subopts_find(c, name);
        if (!o) {
                if (c->flags & NSR_SUBCMD_PASS_UNKNOWN)
                        return 1;
                return unknown_subopt(c, name, word, err);
        }
        const char *value = eq ? eq + 1 : NULL;
        if (o->nargs == 0 && value)
                return nsr_error_setx(err, EINVAL, "%s: %s takes no value", c->name, name);
        if (o->nargs > 0 && !value) {
                if (*i + 1 >= argc)
                        return nsr_error_setx(err, EINVAL, "%s %s takes an argument", c->name, name);
                value = argv[++*i];
        }
        return fn(userdata, o, value, err);
}

int nsr_subopts_parse(const nsr_subcmd *c, int argc, char **argv, nsr_subopt_fn fn, void *userdata, nsr_subargs *ret,
                      nsr_error *err) {
        nsr_subargs a = { .operands = nsr_malloc0(((size_t) (argc > 0 ? argc : 0) + 1) * sizeof(char *)) };
        int r = 0;
        for (int i = 1; i < argc && r >= 0; i++) {
                char *s = argv[i];
                if (streq(s, "--help") || streq(s, "-h")) {
                        a.help = true;
                        continue;
                }
                if (s[0] == '-' && s[1] != '\0') {
                        r = parse_option(c, argc, argv, &i, fn, userdata, err);
                        if (r <= 0)
                                continue;
                        r = 0; /* passed on */
                } else if (!(c->flags & NSR_SUBCMD_PASS_UNKNOWN) && a.n_operands >= c->max_operands) {
                        r = nsr_error_setx(err, EINVAL, "%s: unexpected argument \"%s\"", c->name, s);
                        break;
                }
                a.operands[a.n_operands++] = s;
                if (c->flags & NSR_SUBCMD_COMMAND_AFTER) {
                        a.command = argv + i + 1 + (i + 1 < argc && streq(argv[i + 1], "--"));
                        break;
                }
        }
        *ret = a;
        return r;
}

static void option_lines(FILE *f, const nsr_subopt *opts) {
        for (const nsr_subopt *o = opts; o && o->name; o++) {
                char left[96];
                snprintf(left, sizeof(left), "%s%s%s%s%s", o->short_name ? o->short_name : "",
                         o->short_name ? ", " : "", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
                if (strlen(left) > 28)
                        fprintf(f, "    %s\n    %-28s %s\n", left, "", o->help);
                else
                        fprintf(f, "    %-28s %s\n", left, o->help);
        }
}

static void usage_line(FILE *f, const char *lead, const nsr_subcmd *c) {
        fprintf(f, "%snsrun %s", lead, c->name);
        for (const nsr_subopt *o = c->opts; o && o->name; o++)
                fprintf(f, " [%s%s%s]", o->short_name ? o->short_name : o->name, o->metavar ? " " : "",
                        o->metavar ? o->metavar : "");
        if (c->operands)
                fprintf(f, " %s", c->operands);
        fputc('\n', f);
}

void nsr_subopts_help(FILE *f, const nsr_subcmd *c) {
        usage_line(f, "usage: ", c);
        if (c->about)
                fputs(c->about, f);
        fputs("\nOptions:\n", f);
        option_lines(f, c->opts);
        fprintf(f, "    %-28s %s\n", "-h, --help", "Show this help and exit");
}

void nsr_subopts_help_group(FILE *f, const char *lead, const nsr_subcmd *const *cmds, size_t n, const char *about) {
        for (size_t i = 0; i < n; i++)
                usage_line(f, i ? "       " : lead, cmds[i]);
        if (about)
                fputs(about, f);
        for (size_t i = 0; i < n; i++) {
                if (!cmds[i]->opts || !cmds[i]->opts[0].name)
                        continue;
                fprintf(f, "\nOptions of %s:\n", cmds[i]->name);
                option_lines(f, cmds[i]->opts);
        }
        fprintf(f, "\nEach takes -h, --help.\n");
}
