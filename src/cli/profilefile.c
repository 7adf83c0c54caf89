/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/syscalls.h"
#include "cli/plan.h"
#include "cli/profilefile.h"

#ifndef NSR_SYSCONFDIR
#define NSR_SYSCONFDIR "/etc"
#endif

void nsr_pf_list_done(nsr_pf_list *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++) {
                nsr_strv_free(l->entries[i].words);
                free(l->entries[i].file);
        }
        for (size_t i = 0; i < l->n_forbid; i++) {
                free(l->forbid[i].value);
                free(l->forbid[i].file);
        }
        nsr_strv_free(l->files);
        free(l->entries);
        free(l->forbid);
        *l = (nsr_pf_list){ 0 };
}

const char *nsr_pf_sysconfdir(void) {
#ifdef NSR_TEST_HOOKS
        /* Only in test builds: an override of the system file would let any
         * user escape its "forbid" lines. */
        const char *d = getenv("NSRUN_TEST_SYSCONFDIR");
        if (d && d[0] == '/')
                return d;
#endif
        return NSR_SYSCONFDIR;
}

static const char *env_get(char *const *env, const char *name, size_t len) {
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
                        return env[i] + len + 1;
        return NULL;
}

/* $HOME and the XDG base dirs, with the spec's defaults when unset. NULL
 * for anything else, or when the home is unknown. */
static char *var_value(const nsr_pf_ctx *c, const char *name, size_t n) {
        static const struct {
                const char *name, *dflt;
        } xdg[] = {
                { "XDG_CONFIG_HOME", ".config" }, { "XDG_DATA_HOME", ".local/share" },
                { "XDG_CACHE_HOME", ".cache" },   { "XDG_STATE_HOME", ".local/state" },
                { "XDG_RUNTIME_DIR", NULL },
        };
        bool home_ok = c->home && c->home[0] == '/';
        if (n == 4 && strncmp(name, "HOME", 4) == 0)
                return home_ok ? nsr_strdup(c->home) : NULL;
        for (size_t i = 0; i < ELEMENTSOF(xdg); i++) {
                if (strlen(xdg[i].name) != n || strncmp(xdg[i].name, name, n) != 0)
                        continue;
                const char *v = env_get(c->env, xdg[i].name, n);
                if (v && v[0] == '/')
                        return nsr_strdup(v);
                if (!xdg[i].dflt || !home_ok)
                        return NULL;
                return nsr_path_join(c->home, xdg[i].dflt);
        }
        return NULL;
}

/* One "$NAME" or "${NAME}" at *s (just after the '$'). */
static int expand_var(const nsr_pf_ctx *c, const char **s, FILE *out, nsr_error *err) {
        const char *p = *s;
        bool brace = *p == '{';
        if (*p == '(' || *p == '`')
                return nsr_error_setx(err, EINVAL, "command substitution is not supported in profiles");
        if (brace)
                p++;
        const char *start = p;
        while (isalnum((unsigned char) *p) || *p == '_')
                p++;
        size_t n = (size_t) (p - start);
        if (brace && *p != '}')
                return nsr_error_setx(err, EINVAL, "unterminated ${ or a name that is not a variable");
        if (n == 0)
                return nsr_error_setx(err, EINVAL, "a lone \"$\": write '$' or \\$ for the character");
        bool allowed = (n == 4 && strncmp(start, "HOME", 4) == 0) || (n > 4 && strncmp(start, "XDG_", 4) == 0);
        if (!allowed)
                return nsr_error_setx(err, EINVAL, "$%.*s: only $HOME and $XDG_* are expanded in profiles", (int) n,
                                      start);
        _cleanup_free_ char *v = var_value(c, start, n);
        if (!v)
                return nsr_error_setx(err, EINVAL, "$%.*s is not set (or not an absolute path)", (int) n, start);
        fputs(v, out);
        *s = brace ? p + 1 : p;
        return 0;
}

int nsr_pf_split(const nsr_pf_ctx *c, const char *line, char ***ret, nsr_error *err) {
        _cleanup_strv_free_ char **words = nsr_malloc0(sizeof(char *));
        const char *s = line;
        int r = 0;

        for (;;) {
                while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
                        s++;
                if (!*s || *s == '#')
                        break;
                char *buf = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&buf, &len);
                if (!f)
                        return nsr_error_set(err, errno, "open_memstream");
                /* "~" or "~/..." at the start of an unquoted word. */
                if (s[0] == '~' && (s[1] == '/' || s[1] == '\0' || isspace((unsigned char) s[1]))) {
                        if (!c->home || c->home[0] != '/')
                                r = nsr_error_setx(err, EINVAL, "~: the home dir is unknown ($HOME)");
                        else
                                fputs(c->home, f);
                        s++;
                }
                while (r >= 0 && *s && !isspace((unsigned char) *s)) {
                        char ch = *s;
                        if (ch == '\'') {
                                const char *e = strchr(s + 1, '\'');
                                if (!e) {
                                        r = nsr_error_setx(err, EINVAL, "unterminated single quote");
                                        break;
                                }
                                fwrite(s + 1, 1, (size_t) (e - s - 1), f);
                                s = e + 1;
                        } else if (ch == '"') {
                                s++;
                                while (r >= 0 && *s && *s != '"') {
                                        if (*s == '\\' && (s[1] == '"' || s[1] == '\\' || s[1] == '$' || s[1] == '`')) {
                                                fputc(s[1], f);
                                                s += 2;
                                        } else if (*s == '$') {
                                                s++;
                                                r = expand_var(c, &s, f, err);
                                        } else if (*s == '`') {
                                                r = nsr_error_setx(err, EINVAL,
                                                                   "command substitution is not supported in profiles");
                                        } else
                                                fputc(*s++, f);
                                }
                                if (r >= 0 && *s != '"')
                                        r = nsr_error_setx(err, EINVAL, "unterminated double quote");
                                else if (r >= 0)
                                        s++;
                        } else if (ch == '\\') {
                                if (!s[1]) {
                                        r = nsr_error_setx(err, EINVAL, "a backslash at the end of the line");
                                        break;
                                }
                                fputc(s[1], f);
                                s += 2;
                        } else if (ch == '$') {
                                s++;
                                r = expand_var(c, &s, f, err);
                        } else if (ch == '`') {
                                r = nsr_error_setx(err, EINVAL, "command substitution is not supported in profiles");
                        } else
                                fputc(*s++, f);
                }
                fclose(f);
                if (r < 0) {
                        free(buf);
                        return r;
                }
                if (nsr_strv_length(words) >= 8) {
                        free(buf);
                        return nsr_error_setx(err, E2BIG, "too many words on one line");
                }
                nsr_strv_push(&words, buf);
        }
        *ret = TAKE_PTR(words);
        return 0;
}

/* ---- finding files -------------------------------------------------------- */

static bool valid_name(const char *name) {
        if (!name[0] || name[0] == '.' || strlen(name) > 64)
                return false;
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char) *p) && *p != '-' && *p != '_' && *p != '.')
                        return false;
        return true;
}

/* The three dirs in lookup order; entries may be NULL (unknown home). */
static void search_dirs(const nsr_pf_ctx *c, char *dirs[3]) {
        _cleanup_free_ char *cfg = var_value(c, "XDG_CONFIG_HOME", strlen("XDG_CONFIG_HOME"));
        dirs[0] = cfg ? nsr_path_join(cfg, "nsrun/profiles") : NULL;
        dirs[1] = nsr_path_join(c->sysconfdir ? c->sysconfdir : nsr_pf_sysconfdir(), "nsrun/profiles");
        dirs[2] = c->datadir ? nsr_path_join(c->datadir, "profiles") : NULL;
}

static void dirs_free(char *dirs[3]) {
        for (int i = 0; i < 3; i++)
                free(dirs[i]);
}

int nsr_pf_find(const nsr_pf_ctx *c, const char *name, char **ret, nsr_error *err) {
        if (strchr(name, '/')) {
                *ret = nsr_strdup(name);
                return 0;
        }
        if (!valid_name(name))
                return nsr_error_setx(err, EINVAL,
                                      "profile name \"%s\": use letters, digits, '-', '_' and '.', or a path with a /",
                                      name);
        char *dirs[3];
        search_dirs(c, dirs);
        _cleanup_free_ char *tried = NULL;
        for (int i = 0; i < 3; i++) {
                if (!dirs[i])
                        continue;
                _cleanup_free_ char *file = nsr_asprintf("%s/%s.profile", dirs[i], name);
                if (access(file, F_OK) == 0) {
                        *ret = TAKE_PTR(file);
                        dirs_free(dirs);
                        return 0;
                }
                char *t = nsr_asprintf("%s%s%s", tried ? tried : "", tried ? ", " : "", dirs[i]);
                free(tried);
                tried = t;
        }
        dirs_free(dirs);
        return nsr_error_setx(err, ENOENT, "no profile \"%s\" in %s", name, tried ? tried : "(no dirs)");
}

int nsr_pf_list_names(const nsr_pf_ctx *c, char ***ret_names, char ***ret_paths, nsr_error *err) {
        char *dirs[3];
        search_dirs(c, dirs);
        _cleanup_strv_free_ char **names = nsr_malloc0(sizeof(char *)), **paths = nsr_malloc0(sizeof(char *));
        for (int i = 0; i < 3; i++) {
                if (!dirs[i])
                        continue;
                _cleanup_closedir_ DIR *d = NULL;
                if (nsr_opendir_at(AT_FDCWD, dirs[i], 0, &d) < 0)
                        continue;
                size_t seen = 0;
                /* A dir that cannot be read to the end lists what it gave,
                 * as one that cannot be opened lists nothing. */
                FOREACH_DIRENT(de, d, break) {
                        if (seen++ >= 10000)
                                break;
                        if (!nsr_endswith(de->d_name, ".profile"))
                                continue;
                        _cleanup_free_ char *n = nsr_strndup(de->d_name, strlen(de->d_name) - strlen(".profile"));
                        if (!valid_name(n) || nsr_strv_contains(names, n))
                                continue;
                        nsr_strv_push(&paths, nsr_asprintf("%s/%s", dirs[i], de->d_name));
                        nsr_strv_push(&names, TAKE_PTR(n));
                }
        }
        dirs_free(dirs);
        /* Sort both by name (few entries: insertion sort). */
        size_t n = nsr_strv_length(names);
        for (size_t i = 1; i < n; i++)
                for (size_t k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0; k--) {
                        char *t = names[k];
                        names[k] = names[k - 1];
                        names[k - 1] = t;
                        t = paths[k];
                        paths[k] = paths[k - 1];
                        paths[k - 1] = t;
                }
        (void) err;
        *ret_names = TAKE_PTR(names);
        *ret_paths = TAKE_PTR(paths);
        return 0;
}

/* ---- loading --------------------------------------------------------------- */

typedef struct loader {
        const nsr_pf_ctx *ctx;
        nsr_pf_list *out;
        char *stack[NSR_PF_MAX_DEPTH + 1]; /* real paths being read, for cycles */
        size_t depth;
        size_t lines;
        bool prefixed; /* the error already names its file:line */
} loader;

/* Printable for messages: a file's words are the caller's, but a
 * project-local file may have been written by the sandbox. */
static void sanitize(char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        *s = '?';
}

static const char *const kind_names[_NSR_PF_KIND_MAX] = {
        [NSR_PF_PROFILE] = "a profile",
        [NSR_PF_SYSTEM_CONFIG] = "the system config",
        [NSR_PF_USER_CONFIG] = "the user config",
        [NSR_PF_PROJECT_LOCAL] = "a project's .nsrun/profile",
        [NSR_PF_PROJECT_PROFILE] = "a profile inside a project",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(pf_kind, nsr_pf_kind, kind_names)

static const char *kind_name(nsr_pf_kind k) {
        return pf_kind_to_string(k) ?: "?";
}

/* Options that make no sense in a file. */
static const char *not_in_file(const nsr_option *o) {
        if (o->id == NSR_OPT_HELP || o->id == NSR_OPT_VERSION)
                return "it is an action, not a setting";
        if (o->id == NSR_OPT_ARGS)
                return "write the words of an --args file as lines";
        if (o->id == NSR_OPT_PROFILE)
                return "use \"include NAME\" in a file";
        return NULL;
}

static int load_file(loader *L, int dfd, const char *path, nsr_pf_kind kind, bool optional, nsr_error *err);

/* "name" or "name=value" as the first word: the option and its values. */
static int resolve_option(char **words, const nsr_option **ret_opt, char ***ret_vals, nsr_error *err) {
        const char *w = words[0];
        if (w[0] == '-')
                return nsr_error_setx(err, EINVAL, "write \"%s\" without the leading dashes", w + strspn(w, "-"));
        _cleanup_free_ char *name = NULL;
        const char *eq = strchr(w, '=');
        name = eq ? nsr_strndup(w, (size_t) (eq - w)) : nsr_strdup(w);
        _cleanup_free_ char *dashed = nsr_asprintf("--%s", name);
        const nsr_option *o = nsr_options_find(dashed, false);
        if (!o) {
                const char *hint = nsr_options_suggest(dashed, false);
                sanitize(name);
                if (hint)
                        return nsr_error_setx(err, EINVAL, "unknown option \"%s\" (did you mean \"%s\"?)", name,
                                              hint + 2);
                return nsr_error_setx(err, EINVAL, "unknown option \"%s\"", name);
        }
        _cleanup_strv_free_ char **vals = nsr_malloc0(sizeof(char *));
        if (eq) {
                if (o->nargs == 0)
                        return nsr_error_setx(err, EINVAL, "%s takes no value", o->name);
                nsr_strv_extend(&vals, eq + 1);
        }
        for (size_t i = 1; words[i]; i++)
                nsr_strv_extend(&vals, words[i]);
        *ret_opt = o;
        *ret_vals = TAKE_PTR(vals);
        return 0;
}

static int add_forbid(loader *L, char **words, const char *file, unsigned line, nsr_error *err) {
        if (!words[1] || words[2])
                return nsr_error_setx(err, EINVAL, "forbid takes one OPTION or OPTION=VALUE");
        _cleanup_strv_free_ char **one = nsr_malloc0(2 * sizeof(char *));
        one[0] = nsr_strdup(words[1]);
        const nsr_option *o = NULL;
        _cleanup_strv_free_ char **vals = NULL;
        int r = resolve_option(one, &o, &vals, err);
        if (r < 0)
                return r;
        nsr_pf_list *l = L->out;
        l->forbid = nsr_realloc_array(l->forbid, l->n_forbid + 1, sizeof(nsr_pf_forbid));
        l->forbid[l->n_forbid++] = (nsr_pf_forbid){
                .opt = o,
                .value = vals[0] ? nsr_strdup(vals[0]) : NULL,
                .file = nsr_strdup(file),
                .line = line,
        };
        return 0;
}

bool nsr_pf_kind_tightening_only(nsr_pf_kind kind) {
        return kind == NSR_PF_PROJECT_LOCAL || kind == NSR_PF_PROJECT_PROFILE;
}

static int include(loader *L, char **words, const char *file, nsr_pf_kind kind, nsr_error *err) {
        /* A path would make nsrun read host files on the project's say. */
        if (nsr_pf_kind_tightening_only(kind))
                return nsr_error_setx(err, EPERM,
                                      "include is refused in %s (the sandbox can write it): give the profile as "
                                      "another --profile",
                                      kind_name(kind));
        if (!words[1] || words[2])
                return nsr_error_setx(err, EINVAL, "include takes one NAME or PATH");
        _cleanup_free_ char *path = NULL;
        const char *name = words[1];
        bool by_path = strchr(name, '/') || nsr_endswith(name, ".profile");
        if (by_path && name[0] != '/') {
                /* A file: relative to the including file's dir. */
                _cleanup_free_ char *dir = nsr_strdup(file);
                char *slash = strrchr(dir, '/');
                if (slash)
                        *slash = '\0';
                path = nsr_path_join(slash ? dir : ".", name);
        } else {
                int r = nsr_pf_find(L->ctx, name, &path, err);
                if (r < 0)
                        return r;
        }
        /* Included lines keep the includer's kind: only the system config
         * and what it includes may "forbid". A file named by path inside a
         * project is the project's, whoever names it. */
        if (by_path && nsr_pf_in_project(L->ctx, path))
                kind = NSR_PF_PROJECT_PROFILE;
        int r = load_file(L, -1, path, kind, false, err);
        if (r >= 0 && by_path) {
                /* As named too: a symlink on the way is what the next run
                 * follows. */
                _cleanup_free_ char *cwd = path[0] == '/' ? NULL : getcwd(NULL, 0);
                _cleanup_free_ char *abs = cwd ? nsr_path_join(cwd, path) : nsr_strdup(path);
                if (!nsr_strv_contains(L->out->files, abs))
                        nsr_strv_extend(&L->out->files, abs);
        }
        return r;
}

static int load_line(loader *L, char *text, const char *file, unsigned line, nsr_pf_kind kind, nsr_error *err) {
        _cleanup_strv_free_ char **words = NULL;
        int r = nsr_pf_split(L->ctx, text, &words, err);
        if (r < 0)
                return r;
        if (!words[0])
                return 0;
        if (++L->lines > NSR_PF_MAX_LINES)
                return nsr_error_setx(err, E2BIG, "more than %d option lines", NSR_PF_MAX_LINES);
        if (streq(words[0], "include"))
                return include(L, words, file, kind, err);
        if (streq(words[0], "forbid")) {
                if (kind != NSR_PF_SYSTEM_CONFIG)
                        return nsr_error_setx(err, EPERM,
                                              "forbid is only read from the system config (%s/nsrun/config)",
                                              L->ctx->sysconfdir ? L->ctx->sysconfdir : nsr_pf_sysconfdir());
                return add_forbid(L, words, file, line, err);
        }
        const nsr_option *o = NULL;
        _cleanup_strv_free_ char **vals = NULL;
        r = resolve_option(words, &o, &vals, err);
        if (r < 0)
                return r;
        const char *why = not_in_file(o);
        if (why)
                return nsr_error_setx(err, EINVAL, "%s cannot be used in a file: %s", o->name, why);
        size_t nv = nsr_strv_length(vals);
        if (nv != o->nargs) {
                if (nv < o->nargs)
                        return nsr_error_setx(err, EINVAL, "%s takes %s", o->name,
                                              o->nargs == 1   ? "an argument"
                                              : o->nargs == 2 ? "two arguments"
                                                              : "three arguments");
                return nsr_error_setx(err, EINVAL,
                                      "%s takes %u argument%s, this line has %zu (quote a value with blanks)", o->name,
                                      o->nargs, o->nargs == 1 ? "" : "s", nv);
        }
        nsr_pf_list *l = L->out;
        l->entries = nsr_realloc_array(l->entries, l->n + 1, sizeof(nsr_pf_entry));
        char **w = nsr_malloc0((nv + 2) * sizeof(char *));
        w[0] = nsr_strdup(o->name);
        for (size_t i = 0; i < nv; i++)
                w[i + 1] = TAKE_PTR(vals[i]);
        l->entries[l->n++] =
                (nsr_pf_entry){ .words = w, .opt = o, .file = nsr_strdup(file), .line = line, .kind = kind };
        return 0;
}

/* Reads a whole file, bounded, refusing anything but a regular file. */
static int read_file(int dfd, const char *path, bool optional, char **ret, nsr_error *err) {
        /* dfd >= 0: a project's file, opened beneath the project without
         * following any symlink (the sandbox may have planted one). */
        _cleanup_close_ int fd =
                dfd >= 0 ? nsr_openat2(dfd, ".nsrun/profile", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
                         : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (optional && errno == ENOENT)
                        return 0;
                return nsr_error_set(err, errno, "cannot read %s", path);
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return nsr_error_set(err, errno, "cannot read %s", path);
        if (!S_ISREG(st.st_mode))
                return nsr_error_setx(err, EINVAL, "%s is not a regular file", path);
        size_t len = 0;
        int r = nsr_read_all(fd, NSR_PF_MAX_FILE, ret, &len);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot read %s", path);
        if (strlen(*ret) != len) {
                free(TAKE_PTR(*ret));
                return nsr_error_setx(err, EINVAL, "%s holds a NUL byte: not a profile", path);
        }
        return 1;
}

static int load_file(loader *L, int dfd, const char *path, nsr_pf_kind kind, bool optional, nsr_error *err) {
        _cleanup_free_ char *data = NULL;
        int r = read_file(dfd, path, optional, &data, err);
        if (r <= 0)
                return r;
        char real[PATH_MAX];
        if (dfd >= 0)
                snprintf(real, sizeof(real), "%s", path);
        else if (!realpath(path, real))
                return nsr_error_set(err, errno, "cannot resolve %s", path);
        for (size_t i = 0; i < L->depth; i++)
                if (streq(L->stack[i], real))
                        return nsr_error_setx(err, ELOOP, "%s includes itself (through %s)", path,
                                              L->stack[L->depth - 1]);
        if (L->depth >= NSR_PF_MAX_DEPTH)
                return nsr_error_setx(err, ELOOP, "includes nested deeper than %d at %s", NSR_PF_MAX_DEPTH, path);
        L->stack[L->depth++] = nsr_strdup(real);
        if (!nsr_strv_contains(L->out->files, real))
                nsr_strv_extend(&L->out->files, real);

        unsigned lineno = 0;
        char *s = data;
        r = 0;
        while (*s && r >= 0) {
                char *nl = strchr(s, '\n');
                if (nl)
                        *nl = '\0';
                lineno++;
                if (strlen(s) > NSR_PF_MAX_LINE)
                        r = nsr_error_setx(err, E2BIG, "a line longer than %d bytes", NSR_PF_MAX_LINE);
                else
                        r = load_line(L, s, path, lineno, kind, err);
                /* An error from an include names its own file:line. */
                if (r < 0 && !L->prefixed) {
                        nsr_error_prefix(err, "%s:%u", path, lineno);
                        L->prefixed = true;
                }
                s = nl ? nl + 1 : s + strlen(s);
        }
        free(L->stack[--L->depth]);
        return r;
}

bool nsr_pf_in_project(const nsr_pf_ctx *ctx, const char *path) {
        char real[PATH_MAX];
        if (!ctx->projects || !ctx->projects[0])
                return false;
        /* A file that cannot be resolved is not read either. */
        if (!realpath(path, real))
                return false;
        for (size_t i = 0; ctx->projects[i]; i++)
                if (nsr_path_under(real, ctx->projects[i]))
                        return true;
        return false;
}

int nsr_pf_load(const nsr_pf_ctx *ctx, const char *path, nsr_pf_kind kind, bool optional, nsr_pf_list *l,
                nsr_error *err) {
        loader L = { .ctx = ctx, .out = l, .lines = l->n };
        return load_file(&L, -1, path, kind, optional, err);
}

int nsr_pf_load_project(const nsr_pf_ctx *ctx, const char *project, nsr_pf_list *l, nsr_error *err) {
        _cleanup_close_ int dfd = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return 0; /* the project's own checks report it */
        _cleanup_free_ char *name = nsr_path_join(project, ".nsrun/profile");
        loader L = { .ctx = ctx, .out = l, .lines = l->n };
        return load_file(&L, dfd, name, NSR_PF_PROJECT_LOCAL, true, err);
}

/* ---- project-local tightening and forbid ---------------------------------- */

static bool name_in(const nsr_option *o, const char *const *names, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (streq(o->name + 2, names[i]))
                        return true;
        return false;
}

int nsr_pf_check_tightening(const nsr_option *o, char *const *vals, nsr_error *err) {
        /* Additions that can only take away. Named, not numbered: options
         * other parts of nsrun add later (protect, deny-host) are accepted
         * once they exist in the table. */
        static const char *const additive[] = { "hide",        "protect",        "deny-host",
                                                "unshare-net", "disable-userns", "cap-drop" };
        /* Limits and modes: accepted when no looser than the value in force
         * once everything else (built-in defaults, the config files, the
         * profiles and the command line) is counted; the parser compares. */
        static const char *const compared[] = { "timeout", "kill-after",  "memory",        "pids",
                                                "cpu",     "tmp-size",    "rlimit",        "home",
                                                "sandbox", "on-conflict", "snapshot-limit" };

        if (name_in(o, additive, ELEMENTSOF(additive)))
                return 0;
        if (o->id == NSR_OPT_SECCOMP_POLICY) {
                /* Policies stack, so any policy only takes away; but only a
                 * shipped one: a path would make nsrun read host files on
                 * the project's say. */
                if (streq(vals[0], "strict"))
                        return 0;
                return nsr_error_setx(err, EPERM, "only \"seccomp-policy strict\" is accepted here");
        }
        if (name_in(o, compared, ELEMENTSOF(compared)))
                return 1;
        if (o->id == NSR_OPT_KEEP_DAYS || o->id == NSR_OPT_BACKUP_LIMIT)
                return nsr_error_setx(err, EPERM,
                                      "%s sizes the caller's undo history, which a project neither shortens nor "
                                      "grows: give it on the command line or in ~/.config/nsrun/config",
                                      o->name);
        return nsr_error_setx(err, EPERM,
                              "%s could loosen the sandbox, and the sandbox can write this file: only hide, protect, "
                              "deny-host, a stricter home, a stricter on-conflict, seccomp-policy strict and lower "
                              "limits are accepted; give it on the command line or in a profile outside the project",
                              o->name);
}

const nsr_pf_forbid *nsr_pf_forbidden(const nsr_pf_list *l, const nsr_option *o, const char *value) {
        for (size_t i = 0; l && i < l->n_forbid; i++) {
                const nsr_pf_forbid *f = &l->forbid[i];
                if (f->opt != o)
                        continue;
                if (!f->value || (value && streq(f->value, value)))
                        return f;
        }
        return NULL;
}
