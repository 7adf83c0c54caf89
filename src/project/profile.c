/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/dirent.h"
#include "base/pathprobe.h"
#include "project/profile.h"

#define MAX_LIST_ENTRIES 4096

static const char *env_get(char *const *env, const char *name, size_t len) {
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
                        return env[i] + len + 1;
        return NULL;
}

/* Appends n bytes of s to the string in *buf (length *len, room *cap). */
static void put(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
        if (*len + n + 1 > *cap) {
                *cap = *len + n + 1 > 2 * *cap ? *len + n + 1 : 2 * *cap;
                *buf = nsr_realloc_array(*buf, *cap, 1);
        }
        memcpy(*buf + *len, s, n);
        *len += n;
        (*buf)[*len] = '\0';
}

/* Not with open_memstream: glibc zeroes a new buffer of several KiB for each
 * stream, and this runs for each of hide.list's hundreds of lines at every
 * launch (that calloc was 64% of the instructions of the hidden paths). */
char *nsr_profile_expand(const char *line, const char *home, char *const *env) {
        const char *s = line;
        bool tilde = s[0] == '~' && (s[1] == '/' || s[1] == '\0');
        if (tilde && (!home || home[0] != '/'))
                return NULL;
        /* Room for a line with no variable in one allocation: most of
         * hide.list is "~/...". */
        size_t len = 0, cap = strlen(line) + 1 + (tilde ? strlen(home) : 0);
        _cleanup_free_ char *buf = nsr_malloc0(cap);
        if (tilde) {
                put(&buf, &len, &cap, home, strlen(home));
                s++;
        }
        while (*s) {
                if (*s != '$') {
                        size_t k = strcspn(s, "$");
                        put(&buf, &len, &cap, s, k);
                        s += k;
                        continue;
                }
                s++;
                bool brace = *s == '{';
                if (brace)
                        s++;
                const char *start = s;
                while (isalnum((unsigned char) *s) || *s == '_')
                        s++;
                size_t n = (size_t) (s - start);
                if (brace) {
                        if (*s != '}')
                                return NULL;
                        s++;
                }
                const char *v = n ? env_get(env, start, n) : NULL;
                if (!v)
                        return NULL;
                put(&buf, &len, &cap, v, strlen(v));
        }
        return TAKE_PTR(buf);
}

/* A list file is a few KiB (hide.list about 17): read whole, in one call
 * to read(2) at most a few, with no stdio buffer. */
#define MAX_LIST_BYTES (4 * 1024 * 1024)

/* The entries of a list file: pointers into one arena, not strings of
 * their own (hide.list's hundreds of entries are only expanded). */
typedef struct list_text {
        char *arena;
        char **v; /* NULL-terminated */
        size_t n;
        size_t len; /* of the file */
} list_text;

static void list_text_done(list_text *t) {
        free(t->arena);
        free(t->v);
}

/* A list file whole, NUL-terminated: in one read of the size fstat gives
 * (nsr_read_all's growing buffer took five reads and three copies for
 * hide.list), or, when it is no regular file or grew, as nsr_read_all
 * reads it. */
static int read_whole(int fd, char **ret, size_t *ret_len) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < MAX_LIST_BYTES) {
                size_t size = (size_t) st.st_size;
                _cleanup_free_ char *buf = nsr_realloc_array(NULL, size + 2, 1);
                int n = nsr_read_full(fd, buf, size + 1);
                if (n < 0)
                        return n;
                if ((size_t) n <= size) {
                        buf[n] = '\0';
                        *ret = TAKE_PTR(buf);
                        *ret_len = (size_t) n;
                        return 0;
                }
                if (lseek(fd, 0, SEEK_SET) < 0)
                        return -errno;
        }
        return nsr_read_all(fd, MAX_LIST_BYTES, ret, ret_len);
}

static int read_entries(const char *path, list_text *ret, nsr_error *err) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno,
                                     "cannot read the profile file %s (is nsrun installed? \"make install\", or set "
                                     "NSRUN_DATADIR to the source tree to run it in place)",
                                     path);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_whole(fd, &text, &len);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot read the profile file %s", path);
        /* Each entry is at most its line, plus a NUL: the arena never
         * grows, and is not zeroed (that memset of twice the file was
         * half of this function's time). The vector doubles. */
        _cleanup_(list_text_done) list_text t = { .arena = nsr_realloc_array(NULL, 2 * len + 1, 1), .len = len };
        size_t cap = 64, used = 0;
        t.v = nsr_malloc0(cap * sizeof(char *));
        /* Lines as fgets(3) into a PATH_MAX + 64 buffer cut them, which is
         * how this was read before: a longer line is several entries, and
         * a NUL ends the entry where it stands. */
        const size_t chunk = PATH_MAX + 63;
        for (size_t at = 0, end; at < len; at = end) {
                const char *nl = memchr(text + at, '\n', len - at);
                end = nl ? (size_t) (nl - text) + 1 : len;
                if (end - at > chunk)
                        end = at + chunk;
                /* Trimmed of blanks; a comment or blank line is no entry. */
                size_t b = at;
                while (b < end && isspace((unsigned char) text[b]))
                        b++;
                if (b == end || text[b] == '#' || text[b] == '\0')
                        continue;
                size_t e = b + strnlen(text + b, end - b);
                while (e > b && isspace((unsigned char) text[e - 1]))
                        e--;
                if (t.n + 1 > MAX_LIST_ENTRIES)
                        return nsr_error_setx(err, E2BIG, "%s: more than %d entries", path, MAX_LIST_ENTRIES);
                if (t.n + 1 == cap) {
                        cap *= 2;
                        t.v = nsr_realloc_array(t.v, cap, sizeof(char *));
                }
                memcpy(t.arena + used, text + b, e - b);
                t.arena[used + e - b] = '\0';
                t.v[t.n++] = t.arena + used;
                t.v[t.n] = NULL;
                used += e - b + 1;
        }
        *ret = t;
        t = (list_text){ 0 };
        return 0;
}

int nsr_profile_check_list(const char *path, nsr_error *err) {
        _cleanup_(list_text_done) list_text t = { 0 };
        return read_entries(path, &t, err);
}

int nsr_profile_read_list(const char *path, char ***ret, nsr_error *err) {
        _cleanup_(list_text_done) list_text t = { 0 };
        int r = read_entries(path, &t, err);
        if (r < 0)
                return r;
        char **v = nsr_malloc0((t.n + 1) * sizeof(char *));
        for (size_t i = 0; i < t.n; i++)
                v[i] = nsr_strdup(t.v[i]);
        *ret = v;
        return 0;
}

/* One line of env-deny.list, ready to match: the forms every line has,
 * "*LIT*", "*LIT", "LIT*" and "LIT" with no other special character in
 * LIT, are a substring, suffix, prefix or equality test on the name and
 * LIT with ASCII letters folded; anything else goes to fnmatch. It runs for
 * each variable against each line at every launch, where fnmatch (or a
 * case-insensitive compare at each offset) cost tens of microseconds.
 * nsrun never calls setlocale, so fnmatch's FNM_CASEFOLD folds ASCII
 * letters only too. */
typedef struct envpat {
        const char *pattern; /* without its '!' */
        bool except;         /* a "!PATTERN" line */
        enum { ENV_SUB, ENV_SUFFIX, ENV_PREFIX, ENV_EXACT, ENV_FNMATCH } kind;
        char *lit; /* folded */
        size_t n;
        uint64_t bytes; /* charmask() of lit: a name without one of them cannot match */
} envpat;

/* Which bytes a string holds, folded into 64 buckets: LIT can be in a name
 * only if every bucket of LIT is in the name's. One test then rules out
 * most (variable, line) pairs without a scan. */
static uint64_t charmask(const char *s, size_t n) {
        uint64_t m = 0;
        for (size_t i = 0; i < n; i++)
                m |= UINT64_C(1) << ((unsigned char) s[i] & 63);
        return m;
}

static void fold(char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] >= 'a' && s[i] <= 'z')
                        s[i] = (char) (s[i] - 'a' + 'A');
}

static envpat *envpats_new(char *const *patterns) {
        size_t n = nsr_strv_length(patterns);
        envpat *v = nsr_malloc0((n + 1) * sizeof(envpat));
        for (size_t i = 0; i < n; i++) {
                envpat *e = &v[i];
                e->except = patterns[i][0] == '!';
                e->pattern = patterns[i] + e->except;
                bool lead = e->pattern[0] == '*';
                const char *lit = e->pattern + lead;
                size_t l = strlen(lit);
                bool trail = l > 0 && lit[l - 1] == '*';
                l -= trail;
                if (strcspn(lit, "*?[\\") < l) {
                        e->kind = ENV_FNMATCH;
                        continue;
                }
                e->kind = lead && trail ? ENV_SUB : lead ? ENV_SUFFIX : trail ? ENV_PREFIX : ENV_EXACT;
                e->lit = nsr_strndup(lit, l);
                fold(e->lit, l);
                e->n = l;
                e->bytes = charmask(e->lit, l);
        }
        v[n].pattern = NULL;
        return v;
}

static envpat *envpats_free(envpat *v) {
        for (size_t i = 0; v && v[i].pattern; i++)
                free(v[i].lit);
        free(v);
        return NULL;
}
DEFINE_CLEANUP_FUNC(envpat *, envpats_free)

/* name as given, and folded (up, of length len, its bytes charmask()). */
static bool envpat_match(const envpat *e, const char *name, const char *up, size_t len, uint64_t bytes) {
        if (e->kind != ENV_FNMATCH && (e->bytes & ~bytes))
                return false;
        switch (e->kind) {
        case ENV_SUB:
                /* Not memmem: its setup per call cost more than these
                 * short names take to scan. */
                if (e->n == 0)
                        return true;
                for (const char *p = up; len >= e->n && (p = memchr(p, e->lit[0], (size_t) (up + len - e->n + 1 - p)));
                     p++)
                        if (memcmp(p, e->lit, e->n) == 0)
                                return true;
                return false;
        case ENV_SUFFIX:
                return len >= e->n && memcmp(up + len - e->n, e->lit, e->n) == 0;
        case ENV_PREFIX:
                return len >= e->n && memcmp(up, e->lit, e->n) == 0;
        case ENV_EXACT:
                return len == e->n && memcmp(up, e->lit, e->n) == 0;
        case ENV_FNMATCH:
                return fnmatch(e->pattern, name, FNM_CASEFOLD) == 0;
        }
        return false;
}

static bool envpats_deny(const envpat *v, const char *name) {
        size_t len = strlen(name);
        char buf[256];
        _cleanup_free_ char *heap = len < sizeof(buf) ? NULL : nsr_strndup(name, len);
        char *up = heap ?: buf;
        if (len < sizeof(buf)) /* else heap holds the copy */
                memcpy(buf, name, len + 1);
        fold(up, len);
        uint64_t bytes = charmask(up, len);
        /* "!PATTERN" lines are exceptions, whatever their place: *PWD*
         * catches MYSQL_PWD but must leave PWD and OLDPWD. */
        for (size_t i = 0; v[i].pattern; i++)
                if (v[i].except && envpat_match(&v[i], name, up, len, bytes))
                        return false;
        for (size_t i = 0; v[i].pattern; i++)
                if (!v[i].except && envpat_match(&v[i], name, up, len, bytes))
                        return true;
        return false;
}

bool nsr_profile_env_denied(const char *name, char *const *patterns) {
        _cleanup_(envpats_freep) envpat *v = envpats_new(patterns);
        return envpats_deny(v, name);
}

bool nsr_profile_env_value_secret(const char *value) {
        /* Every "scheme://user:secret@host" in the value (several URLs
         * may share one variable, such as PIP_EXTRA_INDEX_URL). */
        for (const char *s = strstr(value, "://"); s; s = strstr(s, "://")) {
                s += 3;
                size_t auth = strcspn(s, "/?#@ \t\n");
                if (s[auth] != '@')
                        continue;
                const char *colon = memchr(s, ':', auth);
                /* "user:" with an empty secret gives nothing away. */
                if (colon && colon + 1 < s + auth)
                        return true;
        }
        return false;
}

/* ---- what the profile hides, as paths ---------------------------------- */

static const char *runtime_dir(const nsr_profile_ctx *c, char *buf, size_t len);

static void add_real(char ***v, const char *path) {
        char buf[PATH_MAX];
        struct stat st;
        /* The real path: a symlink's target is what must stay unreadable
         * (a symlink itself gives nothing to read). */
        if (lstat(path, &st) < 0 || !realpath(path, buf))
                return;
        if (!nsr_strv_contains(*v, buf))
                nsr_strv_extend(v, buf);
}

/* Whether a pattern means itself: no glob character, escape or trailing
 * slash. It then exists exactly when lstat (or its EOVERFLOW) says so, as
 * in glob(3). */
static bool literal(const char *pattern) {
        size_t n = strcspn(pattern, "*?[\\");
        return !pattern[n] && (n == 0 || pattern[n - 1] != '/');
}

static void add_glob(char ***v, const char *pattern) {
        glob_t g;
        if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
                return;
        for (size_t i = 0; i < g.gl_pathc; i++)
                nsr_strv_extend(v, g.gl_pathv[i]);
        globfree(&g);
}

/* The dir a glob pattern lists, when that part of it is literal: no match
 * can exist where it does not (glob opens it and finds nothing). */
static char *glob_dir(const char *pattern) {
        const char *slash = strrchr(pattern, '/');
        if (!slash || slash == pattern)
                return NULL;
        _cleanup_free_ char *dir = nsr_strndup(pattern, (size_t) (slash - pattern));
        return literal(dir) ? TAKE_PTR(dir) : NULL;
}

/* For every pattern x[i] with todo[i] that is "dir/" and a glob without a
 * slash: the names in dir it matches, into found[i], as glob(3) would give
 * them (a leading dot matched only explicitly), from one listing of dir
 * for all of them: hide.list's two globs in the home dir were two more
 * listings of it. Each one done is cleared in todo. */
static void match_in(char ***found, char **x, size_t n, bool *todo, const char *dir) {
        size_t dirlen = strlen(dir);
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(AT_FDCWD, dir, 0, &d) < 0) {
                for (size_t i = 0; i < n; i++)
                        if (todo[i] && strncmp(x[i], dir, dirlen) == 0 && x[i][dirlen] == '/' &&
                            !strchr(x[i] + dirlen + 1, '/'))
                                todo[i] = false; /* glob finds nothing in a dir it cannot open */
                return;
        }
        _cleanup_free_ bool *mine = nsr_malloc0(n + 1);
        for (size_t i = 0; i < n; i++)
                mine[i] = todo[i] && strncmp(x[i], dir, dirlen) == 0 && x[i][dirlen] == '/' &&
                          !strchr(x[i] + dirlen + 1, '/');
        FOREACH_DIRENT(de, d, break) {
                for (size_t i = 0; i < n; i++)
                        if (mine[i] && fnmatch(x[i] + dirlen + 1, de->d_name, FNM_PERIOD) == 0)
                                nsr_strv_push(&found[i], nsr_asprintf("%s/%s", dir, de->d_name));
        }
        for (size_t i = 0; i < n; i++)
                if (mine[i])
                        todo[i] = false;
}

/* The patterns x[0..n) that exist now, in their order: the literal ones
 * (nearly all of hide.list, most of them missing) looked up together by
 * nsr_paths_exist, which lists a dir many of them share once instead of
 * failing one lookup each; the others matched against one listing of the
 * dir they name (or globbed, when more than their last part is a glob),
 * unless that dir is looked up with them and missing
 * (~/.cargo/credentials*). */
static void add_existing(char ***v, char **x, size_t n) {
        _cleanup_free_ char **lit = nsr_malloc0((2 * n + 1) * sizeof(char *));
        _cleanup_free_ bool *exists = nsr_malloc0((2 * n + 1) * sizeof(bool));
        _cleanup_free_ ssize_t *at = nsr_malloc0((n + 1) * sizeof(ssize_t)); /* in lit, or -1 */
        _cleanup_strv_free_ char **dirs = nsr_malloc0((n + 1) * sizeof(char *));
        _cleanup_free_ bool *is_lit = nsr_malloc0((n + 1) * sizeof(bool));
        size_t m = 0, nd = 0;
        for (size_t i = 0; i < n; i++) {
                at[i] = -1;
                is_lit[i] = literal(x[i]);
                char *d = is_lit[i] ? NULL : glob_dir(x[i]);
                if (d)
                        dirs[nd++] = d;
                if (is_lit[i] || d) {
                        at[i] = (ssize_t) m;
                        lit[m++] = d ?: x[i];
                }
        }
        nsr_paths_exist(lit, m, exists);
        /* Globs in a dir known to exist, by their last part alone. */
        _cleanup_free_ bool *todo = nsr_malloc0(n + 1), *matched = nsr_malloc0(n + 1);
        _cleanup_free_ char ***found = nsr_malloc0((n + 1) * sizeof(char **));
        for (size_t i = 0; i < n; i++) {
                bool there = at[i] >= 0 && exists[at[i]];
                const char *last = strrchr(x[i], '/');
                matched[i] = todo[i] = !is_lit[i] && there && last && last[1] && !literal(last + 1);
        }
        for (size_t i = 0; i < n; i++)
                if (todo[i]) {
                        _cleanup_free_ char *dir = nsr_strndup(x[i], (size_t) (strrchr(x[i], '/') - x[i]));
                        match_in(found, x, n, todo, dir);
                }
        for (size_t i = 0; i < n; i++) {
                bool known = at[i] >= 0, there = known && exists[at[i]];
                if (matched[i]) {
                        for (size_t k = 0; found[i] && found[i][k]; k++)
                                nsr_strv_push(v, TAKE_PTR(found[i][k]));
                        free(found[i]);
                } else if (!is_lit[i]) {
                        if (!known || there)
                                add_glob(v, x[i]);
                } else if (there)
                        nsr_strv_extend(v, x[i]);
        }
}

/* --hide's paths, expanded; the first that does not expand (a variable it
 * names is unset) is the caller's mistake. */
static int expand_hide(char *const *hide, const nsr_profile_ctx *c, char ***ret, nsr_error *err) {
        size_t n = nsr_strv_length(hide);
        char **v = nsr_malloc0((n + 1) * sizeof(char *));
        for (size_t i = 0; i < n; i++)
                if (!(v[i] = nsr_profile_expand(hide[i], c->home, c->env))) {
                        nsr_strv_free(v);
                        return nsr_error_setx(err, EINVAL, "--hide %s: cannot expand it", hide[i]);
                }
        *ret = v;
        return 0;
}

/* Whether a --hide path (or pattern) is "/" or right below it: its slot
 * may then mount on "/" or /proc (cli/plan.h, slots_near_root). */
static bool hides_near_root(char *const *hide_x) {
        for (size_t i = 0; hide_x && hide_x[i]; i++) {
                _cleanup_free_ char *n = nsr_path_normalize_dotdot(hide_x[i]);
                if (n[0] != '/' || !strchr(n + 1, '/'))
                        return true;
        }
        return false;
}

/* The paths to hide that exist now: hide.list's (*ret_listed) and those
 * of hide_x, --hide's expanded (*ret_asked), globbed, read once per
 * launch. */
static int hide_paths(char **hide_x, const nsr_profile_ctx *c, char ***ret_listed, char ***ret_asked, nsr_error *err) {
        _cleanup_free_ char *file = nsr_asprintf("%s/profiles/hide.list", c->datadir);
        _cleanup_strv_free_ char **listed = nsr_malloc0(sizeof(char *)), **asked = nsr_malloc0(sizeof(char *));
        _cleanup_(list_text_done) list_text list = { 0 };
        int r = read_entries(file, &list, err);
        if (r < 0)
                return r;
        /* Expanded, those that expand to an absolute path (a line with a
         * variable unset hides nothing). "~/..." with no variable, most of
         * the list, is the home and the rest, written into one arena; the
         * others are nsr_profile_expand's (kept in owned). */
        size_t n = list.n, k = 0, used = 0, home_len = c->home ? strlen(c->home) : 0;
        bool home_ok = c->home && c->home[0] == '/' && home_len < PATH_MAX;
        _cleanup_free_ char **x = nsr_malloc0((n + 1) * sizeof(char *));
        _cleanup_free_ char *arena = nsr_realloc_array(NULL, list.n * (home_len + 1) + 2 * list.len + 1, 1);
        _cleanup_strv_free_ char **owned = nsr_malloc0((n + 1) * sizeof(char *));
        for (size_t i = 0, m = 0; i < n; i++) {
                const char *line = list.v[i];
                if (home_ok && line[0] == '~' && line[1] == '/' && !strchr(line, '$')) {
                        size_t l = strlen(line + 1);
                        x[k++] = memcpy(arena + used, c->home, home_len);
                        memcpy(arena + used + home_len, line + 1, l + 1);
                        used += home_len + l + 1;
                        continue;
                }
                char *e = nsr_profile_expand(line, c->home, c->env);
                if (e && e[0] == '/')
                        x[k++] = owned[m++] = e;
                else
                        free(e);
        }
        add_existing(&listed, x, k);
        add_existing(&asked, hide_x, nsr_strv_length(hide_x));
        *ret_listed = TAKE_PTR(listed);
        *ret_asked = TAKE_PTR(asked);
        return 0;
}

int nsr_profile_hidden(const nsr_project_opts *o, const nsr_profile_ctx *c, char ***ret, nsr_error *err) {
        _cleanup_strv_free_ char **v = nsr_malloc0(sizeof(char *));
        /* What namespace mode replaces with private mounts, and /run with
         * the host's sockets. */
        static const char *const fixed[] = { "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue" };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                add_real(&v, fixed[i]);
        char rtbuf[64];
        add_real(&v, runtime_dir(c, rtbuf, sizeof(rtbuf)));
        add_real(&v, c->state_dir);
        if (c->cache_dir)
                add_real(&v, c->cache_dir);
        if (o->home == NSR_HOME_HIDE && c->home && c->home[0] == '/' && !streq(c->home, "/"))
                add_real(&v, c->home);
        _cleanup_strv_free_ char **listed = NULL, **asked = NULL;
        _cleanup_strv_free_ char **hide_x = NULL;
        int r = expand_hide(o->hide, c, &hide_x, err);
        if (r >= 0)
                r = hide_paths(hide_x, c, &listed, &asked, err);
        if (r < 0)
                return r;
        for (size_t i = 0; listed[i]; i++)
                add_real(&v, listed[i]);
        for (size_t i = 0; asked[i]; i++)
                add_real(&v, asked[i]);
        *ret = TAKE_PTR(v);
        return 0;
}

/* ---- building the plan ------------------------------------------------ */

typedef struct builder {
        nsr_plan *p;
        const nsr_profile_ctx *ctx;
        char **hidden;          /* dirs already covered, so their insides are skipped */
        char **exposed;         /* --ro and --rw paths: hide.list does not hide them */
        char **shown;           /* the projects and the --ro/--rw paths */
        char **late_ro;         /* hidden dirs made read-only only after those */
        char **listed, **asked; /* paths to hide: hide.list's, --hide's */
        nsr_profile_later *later;
} builder;

/* The plan's places for what the hidden paths decide (nsr_profile_fill):
 * the hidden paths that hold a project or a --ro/--rw path (mounted
 * first), the read-only remounts of those of them that are dirs (after
 * what they hold), the others (last, over everything), and whether the
 * state dir and the cache dir still need a mask of their own. */
enum {
        SLOT_HOLDERS,
        SLOT_LATE_RO,
        SLOT_OTHERS,
        SLOT_GUARD_STATE,
        SLOT_GUARD_CACHE,
        N_SLOTS,
};

struct nsr_profile_later {
        char **hide; /* --hide, expanded */
        char *home, *datadir;
        char **env;
        /* The builder's, where the first slot is: dirs hidden so far
         * (/run, the home with --home hide), --ro/--rw paths, and those
         * with the projects. */
        char **hidden, **exposed, **shown;
        uint64_t tmp_size; /* of the one shared tmpfs, which a hidden dir is a dir of */
        /* guard_trusted's dirs, NULL where it has no mask to decide, and
         * whether a caller's op reached into one. */
        char *guard[2];
        bool reached[2];
};

nsr_profile_later *nsr_profile_later_free(nsr_profile_later *l) {
        if (!l)
                return NULL;
        nsr_strv_free(l->hide);
        free(l->home);
        free(l->datadir);
        nsr_strv_free(l->env);
        nsr_strv_free(l->hidden);
        nsr_strv_free(l->exposed);
        nsr_strv_free(l->shown);
        free(l->guard[0]);
        free(l->guard[1]);
        free(l);
        return NULL;
}

static void slot(builder *b, unsigned k) {
        nsr_plan_add_op(b->p, NSR_OP_SLOT)->slot = k;
}

static nsr_op *op2(builder *b, nsr_op_type t, const char *src, const char *dest) {
        nsr_op *op = nsr_plan_add_op(b->p, t);
        op->source = src ? nsr_strdup(src) : NULL;
        op->dest = dest ? nsr_strdup(dest) : NULL;
        return op;
}

/* A project or a --ro/--rw path at or below dir that holds path: mounted
 * over a hidden dir, it shows path again. */
static bool shown_between(builder *b, const char *dir, const char *path) {
        for (size_t i = 0; b->shown && b->shown[i]; i++)
                if (nsr_path_under(b->shown[i], dir) && nsr_path_under(path, b->shown[i]))
                        return true;
        return false;
}

static bool covered(builder *b, const char *path) {
        for (size_t i = 0; b->hidden && b->hidden[i]; i++)
                if (nsr_path_under(path, b->hidden[i]) && !shown_between(b, b->hidden[i], path))
                        return true;
        return false;
}

/* Whether a project or a --ro/--rw path lies at or below path. */
static bool holds_shown(builder *b, const char *path) {
        for (size_t i = 0; b->shown && b->shown[i]; i++)
                if (nsr_path_under(b->shown[i], path))
                        return true;
        return false;
}

/* An empty read-only tmpfs over a dir, /dev/null over anything else. The
 * /dev/null bind must allow devices (binds are nodev by default, and a
 * nodev /dev/null cannot even be opened), then is made read-only: in bwrap
 * terms --dev-bind plus --remount-ro, on that one file. */
static void hide(builder *b, const char *path) {
        struct stat st;
        if (covered(b, path) || stat(path, &st) < 0)
                return;
        if (S_ISDIR(st.st_mode)) {
                op2(b, NSR_OP_TMPFS, NULL, path)->perms = 0755;
                /* A project or bind inside needs its mount point made in
                 * the tmpfs first: read-only comes after them. */
                if (holds_shown(b, path))
                        nsr_strv_extend(&b->late_ro, path);
                else
                        op2(b, NSR_OP_REMOUNT_RO, NULL, path);
                nsr_strv_extend(&b->hidden, path);
        } else {
                op2(b, NSR_OP_DEV_BIND, "/dev/null", path);
                op2(b, NSR_OP_REMOUNT_RO, NULL, path);
        }
}

/* An empty read-only tmpfs over dir, whatever was mounted there before. */
static void mask_dir(builder *b, const char *dir) {
        op2(b, NSR_OP_TMPFS, NULL, dir)->perms = 0755;
        op2(b, NSR_OP_REMOUNT_RO, NULL, dir);
}

static bool is_bind(nsr_op_type t) {
        return t == NSR_OP_BIND || t == NSR_OP_RO_BIND || t == NSR_OP_DEV_BIND;
}

/* Masks a dir that later runs trust, in the last mount round: at its own
 * path unless a hidden dir already covers it and nothing mounted since
 * shows it again, and at every place a caller's bind maps it to. */
static void guard_trusted(builder *b, const char *dir, size_t first_user_op, unsigned g) {
        struct stat st;
        if (!dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                return;
        bool reached = false;
        size_t n = b->p->n_ops;
        for (size_t i = first_user_op; i < n; i++) {
                const nsr_op *op = &b->p->ops[i];
                if (op->dest && nsr_path_under(dir, op->dest))
                        reached = true;
                char real[PATH_MAX];
                if (!is_bind(op->type) || !op->source || !op->dest || !realpath(op->source, real) ||
                    !nsr_path_under(dir, real) || streq(op->dest, real))
                        continue;
                /* --bind ~/.local /x shows the state dir at /x/state/nsrun. */
                _cleanup_free_ char *alias = nsr_path_join(op->dest, streq(real, "/") ? dir : dir + strlen(real));
                mask_dir(b, alias);
        }
        /* Whether a hidden dir covers it is known once they are looked up
         * (nsr_profile_fill). */
        b->later->guard[g] = nsr_strdup(dir);
        b->later->reached[g] = reached;
        slot(b, SLOT_GUARD_STATE + g);
}

/* A path of hide.list that the caller named with --ro or --rw stays: that
 * is how one lets the command see, say, ~/.aws. --hide always hides. */
static bool exposed(builder *b, const char *path) {
        for (size_t i = 0; b->exposed && b->exposed[i]; i++)
                if (streq(path, b->exposed[i]))
                        return true;
        return false;
}

/* Hidden paths are mounted in two rounds. Those that hold a project or a
 * --ro/--rw path go first, so that the project or bind lands on top and
 * shows; all others go last, over the projects and binds, so that a
 * secret inside a project (--hide $PWD/.env) stays hidden. A hide.list
 * path named exactly by --ro/--rw is not hidden. */
static void add_hidden(builder *b, bool holders) {
        for (size_t i = 0; b->listed[i]; i++)
                if (!exposed(b, b->listed[i]) && holds_shown(b, b->listed[i]) == holders)
                        hide(b, b->listed[i]);
        for (size_t i = 0; b->asked[i]; i++)
                if (holds_shown(b, b->asked[i]) == holders)
                        hide(b, b->asked[i]);
}

/* With the network shared, DNS needs /etc/resolv.conf, which on many
 * systems links into /run (systemd-resolved, NetworkManager). Bind the
 * target file (never its dir: resolved keeps a socket beside it) back into
 * the hidden /run. */
static void keep_resolv_conf(builder *b) {
        char target[PATH_MAX];
        if (!realpath("/etc/resolv.conf", target))
                return;
        if (nsr_path_under(target, "/run") || nsr_path_under(target, "/var/run"))
                op2(b, NSR_OP_RO_BIND, target, target)->flags |= NSR_OPF_TRY;
}

static const char *runtime_dir(const nsr_profile_ctx *c, char *buf, size_t len) {
        const char *x = env_get(c->env, "XDG_RUNTIME_DIR", strlen("XDG_RUNTIME_DIR"));
        if (x && x[0] == '/' && !streq(x, "/"))
                return x;
        snprintf(buf, len, "/run/user/%u", (unsigned) c->uid);
        return buf;
}

struct nsr_env_filter {
        list_text deny; /* pats point into its arena */
        envpat *pats;
};

int nsr_env_filter_new(const char *datadir, nsr_env_filter **ret, nsr_error *err) {
        _cleanup_free_ char *file = nsr_asprintf("%s/profiles/env-deny.list", datadir);
        _cleanup_(nsr_env_filter_freep) nsr_env_filter *f = nsr_malloc0(sizeof(*f));
        int r = read_entries(file, &f->deny, err);
        if (r < 0)
                return r;
        f->pats = envpats_new(f->deny.v);
        *ret = TAKE_PTR(f);
        return 0;
}

nsr_env_filter *nsr_env_filter_free(nsr_env_filter *f) {
        if (f) {
                f->pats = envpats_free(f->pats);
                list_text_done(&f->deny);
                free(f);
        }
        return NULL;
}

bool nsr_env_filter_keeps(const nsr_env_filter *f, const char *entry) {
        const char *eq = strchr(entry, '=');
        if (!eq || eq == entry)
                return false;
        size_t n = (size_t) (eq - entry);
        char buf[256];
        _cleanup_free_ char *heap = n < sizeof(buf) ? NULL : nsr_strndup(entry, n);
        if (!heap) {
                memcpy(buf, entry, n);
                buf[n] = '\0';
        }
        return !envpats_deny(f->pats, heap ?: buf) && !nsr_profile_env_value_secret(eq + 1);
}

/* A list that cannot be read stops the run, as hide.list does: without
 * it every variable it names would reach the command. */
static int add_env(builder *b, nsr_error *err) {
        const nsr_profile_ctx *c = b->ctx;
        _cleanup_(nsr_env_filter_freep) nsr_env_filter *f = NULL;
        int r = nsr_env_filter_new(c->datadir, &f, err);
        if (r < 0)
                return r;
        for (size_t i = 0; c->env && c->env[i]; i++) {
                const char *eq = strchr(c->env[i], '=');
                if (!eq || eq == c->env[i])
                        continue;
                _cleanup_free_ char *name = nsr_strndup(c->env[i], (size_t) (eq - c->env[i]));
                if (!nsr_strv_contains(b->p->proj.keep_env, name) && !nsr_env_filter_keeps(f, c->env[i]))
                        nsr_plan_add_env(b->p, NSR_ENV_UNSET, name, NULL);
        }
        nsr_plan_add_env(b->p, NSR_ENV_SET, "NSRUN", "1");
        return 0;
}

static void protect_git(builder *b, const nsr_profile_project *pr) {
        const char *project = pr->path;
        _cleanup_free_ char *git = nsr_path_join(project, ".git");
        _cleanup_free_ char *local = nsr_path_join(project, ".nsrun");
        struct stat st;
        /* The project-local profile, and what else of the project nsrun
         * read as its configuration: read-only inside too, so the command
         * is told at once (its changes would be dropped at apply anyway). */
        if (lstat(local, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                op2(b, NSR_OP_RO_BIND, local, local);
        for (size_t i = 0; pr->config && pr->config[i]; i++)
                op2(b, NSR_OP_RO_BIND, pr->config[i], pr->config[i]);
        if (lstat(git, &st) < 0)
                return;
        if (S_ISREG(st.st_mode)) {
                op2(b, NSR_OP_RO_BIND, git, git);
                return;
        }
        if (!S_ISDIR(st.st_mode))
                return;
        static const char *const fixed[] = { "hooks", "config", "config.worktree" };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
                _cleanup_free_ char *p = nsr_path_join(git, fixed[i]);
                if (lstat(p, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                        op2(b, NSR_OP_RO_BIND, p, p);
        }
        static const char *const globs[] = { "modules/*/hooks", "modules/*/config", "worktrees" };
        for (size_t i = 0; i < ELEMENTSOF(globs); i++) {
                _cleanup_free_ char *pat = nsr_path_join(git, globs[i]);
                glob_t g;
                if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
                        continue;
                for (size_t k = 0; k < g.gl_pathc; k++)
                        if (lstat(g.gl_pathv[k], &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                                op2(b, NSR_OP_RO_BIND, g.gl_pathv[k], g.gl_pathv[k]);
                globfree(&g);
        }
}

/* A --rw path is written live, with no commit to drop changes at: what of
 * it nsrun read as its configuration is bound read-only over it, and each
 * dir on the way from the --rw path is bound onto itself, so that it is a
 * mount point: a dir holding a mount can still be renamed, and a new file
 * planted under the old name, but a mount point cannot (EBUSY). */
static void protect_config_in_rw(builder *b, size_t n_ro) {
        char *const *cf = b->p->proj.config_files;
        /* No --rw path, nothing to protect in one: not a realpath of each
         * config file for nothing (a readlink per component). */
        if (!b->exposed || !b->exposed[n_ro])
                return;
        for (size_t i = 0; cf && cf[i]; i++) {
                char real[PATH_MAX];
                struct stat st;
                if (!realpath(cf[i], real) || lstat(real, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
                        continue;
                for (size_t k = n_ro; b->exposed && b->exposed[k]; k++) {
                        const char *top = b->exposed[k];
                        if (!nsr_path_under(real, top) || streq(real, top))
                                continue;
                        size_t l = strlen(top);
                        for (char *s = strchr(real + l + 1, '/'); s; s = strchr(s + 1, '/')) {
                                *s = '\0';
                                op2(b, NSR_OP_BIND, real, real);
                                *s = '/';
                        }
                        op2(b, NSR_OP_RO_BIND, real, real);
                        break;
                }
        }
}

static void builder_done(builder *b) {
        nsr_strv_free(b->hidden);
        nsr_strv_free(b->exposed);
        nsr_strv_free(b->shown);
        nsr_strv_free(b->late_ro);
        nsr_strv_free(b->listed);
        nsr_strv_free(b->asked);
}

/* ---- --workspace-root ----------------------------------------------------- */

/* What the host lends a workspace root, read-only: the system dirs, as
 * binds, or as the same symlinks where the host has symlinks (merged /usr). */
static const char *const workspace_host_dirs[] = { "/usr",   "/etc",    "/lib", "/lib32",
                                                   "/lib64", "/libx32", "/bin", "/sbin" };

static bool in_workspace_host_dirs(const char *path) {
        for (size_t i = 0; i < ELEMENTSOF(workspace_host_dirs); i++)
                if (nsr_path_under(path, workspace_host_dirs[i]))
                        return true;
        return false;
}

/* "/" + the part of path below project. */
static char *relocate(const char *path, const char *project) {
        const char *rest = path + strlen(project);
        return nsr_strdup(*rest ? rest : "/");
}

/* The project as /: an overlay of the project and the skeleton (the mount
 * points), the host's system dirs read-only, fresh /dev, /proc, /tmp and
 * /run. Nothing else of the host exists inside: no home, no /var, no
 * /srv, so hide.list matters only where it names a path under /etc or
 * /usr, and --hide paths in the project are hidden at their place under /. */
static int build_workspace(builder *b, const char *rt, nsr_error *err) {
        const nsr_profile_ctx *c = b->ctx;
        nsr_plan *p = b->p;
        const nsr_profile_project *pr = &c->projects[0];
        struct stat st;

        nsr_op *op = op2(b, NSR_OP_OVERLAY, pr->upper, "/");
        op->workdir = nsr_strdup(pr->work);
        /* The project first: the sandbox checks that it is still the dir
         * resolved before anything was created. */
        nsr_strv_extend(&op->overlay_srcs, pr->path);
        if (pr->skel)
                nsr_strv_extend(&op->overlay_srcs, pr->skel);
        op->flags |= NSR_OPF_VERIFY;
        op->verify_dev = pr->dev;
        op->verify_ino = pr->ino;

        for (size_t i = 0; i < ELEMENTSOF(workspace_host_dirs); i++) {
                const char *d = workspace_host_dirs[i];
                char target[PATH_MAX];
                if (lstat(d, &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        ssize_t k = readlink(d, target, sizeof(target) - 1);
                        if (k <= 0)
                                continue;
                        target[k] = '\0';
                        op2(b, NSR_OP_SYMLINK, target, d);
                } else if (S_ISDIR(st.st_mode))
                        op2(b, NSR_OP_RO_BIND, d, d);
        }
        op2(b, NSR_OP_DEV, NULL, "/dev");
        op2(b, NSR_OP_PROC, NULL, "/proc")->flags |= NSR_OPF_PROC_FALLBACK;
        op2(b, NSR_OP_TMPFS, NULL, "/tmp");
        op2(b, NSR_OP_TMPFS, NULL, "/run");
        op2(b, NSR_OP_TMPFS, NULL, rt)->perms = 0700;
        if (p->share_net)
                keep_resolv_conf(b);
        op2(b, NSR_OP_REMOUNT_RO, NULL, "/run");

        /* Hidden paths: those of the lent system dirs where they are, those
         * of the project at their place under /. */
        _cleanup_strv_free_ char **hide_x = NULL;
        int r = expand_hide(p->proj.hide, c, &hide_x, err);
        if (r >= 0)
                r = hide_paths(hide_x, c, &b->listed, &b->asked, err);
        if (r < 0)
                return r;
        for (int round = 0; round < 2; round++) {
                char **v = round ? b->asked : b->listed;
                for (size_t i = 0; v && v[i]; i++) {
                        if (in_workspace_host_dirs(v[i])) {
                                hide(b, v[i]);
                                continue;
                        }
                        if (!nsr_path_under(v[i], pr->path) || streq(v[i], pr->path) || lstat(v[i], &st) < 0)
                                continue;
                        _cleanup_free_ char *dest = relocate(v[i], pr->path);
                        if (S_ISDIR(st.st_mode)) {
                                op2(b, NSR_OP_TMPFS, NULL, dest)->perms = 0755;
                                op2(b, NSR_OP_REMOUNT_RO, NULL, dest);
                        } else {
                                op2(b, NSR_OP_DEV_BIND, "/dev/null", dest);
                                op2(b, NSR_OP_REMOUNT_RO, NULL, dest);
                        }
                }
        }

        /* The protected paths, bound where the project now is. */
        size_t first = p->n_ops;
        protect_git(b, pr);
        for (size_t i = first; i < p->n_ops; i++) {
                char *d = p->ops[i].dest;
                if (d && nsr_path_under(d, pr->path)) {
                        p->ops[i].dest = relocate(d, pr->path);
                        free(d);
                }
        }

        /* No host home inside: a private one. */
        nsr_plan_add_env(p, NSR_ENV_SET, "HOME", "/tmp");
        const char *cwd = c->cwd && nsr_path_under(c->cwd, pr->path) ? c->cwd : pr->path;
        p->chdir = relocate(cwd, pr->path);
        return 0;
}

/* Run control: the defaults (no core dumps, bounded open files and
 * processes), and one memory budget for every tmpfs the profile mounts
 * (/tmp, /var/tmp, /dev with /dev/shm, the runtime dir, the home layer):
 * they are dirs of one shared tmpfs of that size (NSR_OPF_SHARED_TMP), so
 * together they hold at most --tmp-size (default a quarter of the RAM);
 * each with a cap of its own would reach the whole RAM together. The
 * user's own options are merged over these by nsr_plan_append. */
static uint64_t tmp_budget(const nsr_plan *user) {
        return user->run.tmp_size ? user->run.tmp_size : nsr_tmp_size_default();
}

static void share_tmp(nsr_plan *p, uint64_t size) {
        for (size_t i = 0; i < p->n_ops; i++) {
                nsr_op *op = &p->ops[i];
                if ((op->type == NSR_OP_TMPFS || op->type == NSR_OP_DEV || op->type == NSR_OP_TMP_OVERLAY) &&
                    !op->size) {
                        op->size = size;
                        op->flags |= NSR_OPF_SHARED_TMP;
                }
        }
}

static void run_defaults(nsr_plan *p, const nsr_plan *user) {
        nsr_runctl_project_defaults(&p->run);
        share_tmp(p, tmp_budget(user));
}

/* What every project run unshares, drops and filters. */
static void isolate(nsr_plan *p, const nsr_profile_ctx *c) {
        p->unshare_user = p->unshare_pid = p->unshare_ipc = p->unshare_uts = true;
        p->unshare_cgroup_try = p->unshare_net = true;
        p->die_with_parent = p->new_session = true;
        p->map_all_ids = c->uid == 0;
        p->landlock_scope = true;
        p->close_inherited_fds = true;
        if (c->uid == 0) {
                /* Real root keeps its caps by default; not here. */
                p->caps = nsr_malloc0(2 * sizeof(nsr_cap_edit));
                p->caps[0] = (nsr_cap_edit){ .add = false, .cap = -1 };
                p->n_caps = 1;
                /* Except, with --allow-nested, CAP_SETFCAP: since Linux
                 * 5.12 a new user namespace may map uid 0 only if its
                 * creator had it, so without it a nested nsrun or bwrap
                 * run as uid 0 could build no sandbox at all. It grants
                 * nothing else here: no_new_privs voids file capabilities
                 * at exec, the host's file systems belong to the initial
                 * user namespace, and the apply strips security.capability
                 * from whatever enters a project. */
                if (p->proj.allow_nested)
                        p->caps[p->n_caps++] = (nsr_cap_edit){ .add = true, .cap = CAP_SETFCAP };
        }
        nsr_strv_extend(&p->seccomp_policies, p->proj.allow_nested ? "default-nested" : "default");
}

/* The host, its /run and the home, as the command sees them; rt is the
 * private runtime dir. */
static void add_host(builder *b, const nsr_plan *user, const char *rt) {
        const nsr_profile_ctx *c = b->ctx;
        nsr_plan *p = b->p;

        /* The host, read-only; fresh /dev, /proc, /tmp and /var/tmp. */
        op2(b, NSR_OP_RO_BIND, "/", "/");
        op2(b, NSR_OP_DEV, NULL, "/dev");
        op2(b, NSR_OP_PROC, NULL, "/proc")->flags |= NSR_OPF_PROC_FALLBACK;
        /* Not marked hidden: a home or project under /tmp is mounted back
         * on top of these, and mount points can be made in them. */
        op2(b, NSR_OP_TMPFS, NULL, "/tmp");
        op2(b, NSR_OP_TMPFS, NULL, "/var/tmp");

        /* /run holds every host socket (D-Bus, docker.sock, the agents):
         * an empty read-only tmpfs, with a private runtime dir. */
        op2(b, NSR_OP_TMPFS, NULL, "/run");
        struct stat st;
        if (lstat("/var/run", &st) == 0 && S_ISDIR(st.st_mode)) {
                op2(b, NSR_OP_TMPFS, NULL, "/var/run");
                op2(b, NSR_OP_REMOUNT_RO, NULL, "/var/run");
                nsr_strv_extend(&b->hidden, "/var/run");
        }
        op2(b, NSR_OP_TMPFS, NULL, rt)->perms = 0700;
        if (user->share_net)
                keep_resolv_conf(b);
        op2(b, NSR_OP_REMOUNT_RO, NULL, "/run");
        nsr_strv_extend(&b->hidden, "/run");

        /* The home: a throwaway writable layer by default. */
        bool home_ok =
                c->home && c->home[0] == '/' && !streq(c->home, "/") && stat(c->home, &st) == 0 && S_ISDIR(st.st_mode);
        if (home_ok && p->proj.home == NSR_HOME_OVERLAY) {
                nsr_op *op = op2(b, NSR_OP_TMP_OVERLAY, NULL, c->home);
                nsr_strv_extend(&op->overlay_srcs, c->home);
        } else if (home_ok && p->proj.home == NSR_HOME_HIDE) {
                op2(b, NSR_OP_TMPFS, NULL, c->home)->perms = 0700;
                nsr_strv_extend(&b->hidden, c->home);
        }
}

/* The projects: overlaid (or, live, bound writable), checked to be the
 * dirs resolved, their git dirs protected. */
static void add_projects(builder *b) {
        const nsr_profile_ctx *c = b->ctx;

        for (size_t i = 0; i < c->n_projects; i++) {
                const nsr_profile_project *pr = &c->projects[i];
                nsr_op *op;
                if (pr->live)
                        /* --no-overlay: the project itself, writable; a
                         * snapshot taken before the run catches the
                         * changes. */
                        op = op2(b, NSR_OP_BIND, pr->path, pr->path);
                else {
                        op = op2(b, NSR_OP_OVERLAY, pr->upper, pr->path);
                        op->workdir = nsr_strdup(pr->work);
                        nsr_strv_extend(&op->overlay_srcs, pr->path);
                }
                op->flags |= NSR_OPF_VERIFY;
                op->verify_dev = pr->dev;
                op->verify_ino = pr->ino;
                protect_git(b, pr);
        }
}

int nsr_profile_build(nsr_plan *user, const nsr_profile_ctx *c, nsr_plan **ret, nsr_profile_later **ret_later,
                      nsr_error *err) {
        _cleanup_(nsr_plan_freep) nsr_plan *p = nsr_plan_new();
        _cleanup_(nsr_profile_later_freep) nsr_profile_later *later = nsr_malloc0(sizeof(*later));
        _cleanup_(builder_done) builder b = { .p = p, .ctx = c, .later = later };
        int r;

        /* The project options travel with the plan. */
        p->proj = user->proj;
        memset(&user->proj, 0, sizeof(user->proj));
        user->proj.report_fd = -1;

        isolate(p, c);

        if (p->proj.workspace_root) {
                char wsbuf[64];
                if (c->n_projects != 1 || c->projects[0].live)
                        return nsr_error_setx(err, EINVAL, "--workspace-root needs exactly one project, on an overlay");
                if (p->proj.ro || p->proj.rw)
                        return nsr_error_setx(err, EINVAL,
                                              "--ro and --rw cannot be combined with --workspace-root: only the "
                                              "system dirs of the host exist under it");
                r = build_workspace(&b, runtime_dir(c, wsbuf, sizeof(wsbuf)), err);
                if (r < 0)
                        return r;
                r = add_env(&b, err);
                if (r < 0)
                        return r;
                nsr_plan_add_env(p, NSR_ENV_SET, "XDG_RUNTIME_DIR", runtime_dir(c, wsbuf, sizeof(wsbuf)));
                run_defaults(p, user);
                nsr_plan_append(p, user);
                *ret = TAKE_PTR(p);
                *ret_later = NULL;
                return 0;
        }

        char rtbuf[64];
        const char *rt = runtime_dir(c, rtbuf, sizeof(rtbuf));
        add_host(&b, user, rt);

        /* b.exposed: the --ro paths, then the --rw paths. */
        size_t n_ro = nsr_strv_length(p->proj.ro);
        for (size_t i = 0; i < n_ro + nsr_strv_length(p->proj.rw); i++) {
                const char *arg = i < n_ro ? p->proj.ro[i] : p->proj.rw[i - n_ro];
                char *x = nsr_profile_expand(arg, c->home, c->env);
                if (!x)
                        return nsr_error_setx(err, EINVAL, "%s %s: cannot expand it", i < n_ro ? "--ro" : "--rw", arg);
                nsr_strv_push(&b.exposed, x);
                nsr_strv_extend(&b.shown, x);
        }
        for (size_t i = 0; i < c->n_projects; i++)
                nsr_strv_extend(&b.shown, c->projects[i].path);

        /* A --hide that does not expand is told before anything starts. */
        _cleanup_strv_free_ char **hide_x = NULL;
        r = expand_hide(p->proj.hide, c, &hide_x, err);
        if (r < 0)
                return r;
        p->slots_near_root = hides_near_root(hide_x);
        slot(&b, SLOT_HOLDERS);

        add_projects(&b);
        for (size_t i = 0; b.exposed && b.exposed[i]; i++)
                op2(&b, i < n_ro ? NSR_OP_RO_BIND : NSR_OP_BIND, b.exposed[i], b.exposed[i]);
        protect_config_in_rw(&b, n_ro);
        slot(&b, SLOT_LATE_RO);
        slot(&b, SLOT_OTHERS);

        r = add_env(&b, err);
        if (r < 0)
                return r;
        nsr_plan_add_env(p, NSR_ENV_SET, "XDG_RUNTIME_DIR", rt);
        run_defaults(p, user);
        later->tmp_size = tmp_budget(user); /* the hidden dirs' share, once they are known */

        /* Start where the caller is when that is inside a project. */
        const char *cwd = c->n_projects ? c->projects[0].path : "/";
        for (size_t i = 0; c->cwd && i < c->n_projects; i++)
                if (nsr_path_under(c->cwd, c->projects[i].path))
                        cwd = c->cwd;
        p->chdir = nsr_strdup(cwd);

        size_t first_user_op = p->n_ops;
        nsr_plan_append(p, user);
        /* What later runs trust goes last, after every bind, the caller's
         * own bwrap options included: the state dir (other runs' layers,
         * backups, journals, which commit and undo replay) and the cache
         * of compiled filters (which the next run loads as its seccomp
         * filter). No --ro, --rw or bind can show them again. */
        guard_trusted(&b, c->state_dir, first_user_op, 0);
        guard_trusted(&b, c->cache_dir, first_user_op, 1);

        later->hide = TAKE_PTR(hide_x);
        later->home = c->home ? nsr_strdup(c->home) : NULL;
        later->datadir = nsr_strdup(c->datadir);
        later->env = nsr_strv_copy(c->env);
        later->hidden = TAKE_PTR(b.hidden);
        later->exposed = TAKE_PTR(b.exposed);
        later->shown = TAKE_PTR(b.shown);
        *ret = TAKE_PTR(p);
        *ret_later = TAKE_PTR(later);
        return 0;
}

int nsr_profile_fill(nsr_profile_later *later, nsr_plan *p, char **ret_packed, size_t *ret_len, nsr_error *err) {
        _cleanup_(nsr_profile_later_freep) nsr_profile_later *l = later;
        if (ret_packed)
                *ret_packed = NULL;
        nsr_profile_ctx c = { .home = l->home, .env = l->env, .datadir = l->datadir };
        nsr_plan *slots[N_SLOTS] = { NULL };
        for (size_t k = 0; k < N_SLOTS; k++)
                slots[k] = nsr_plan_new();
        _cleanup_(builder_done) builder b = {
                .ctx = &c,
                .hidden = TAKE_PTR(l->hidden),
                .exposed = TAKE_PTR(l->exposed),
                .shown = TAKE_PTR(l->shown),
        };
        int r = hide_paths(l->hide, &c, &b.listed, &b.asked, err);
        if (r >= 0) {
                /* In the order nsr_profile_build would have gone. */
                b.p = slots[SLOT_HOLDERS];
                add_hidden(&b, true);
                b.p = slots[SLOT_LATE_RO];
                for (size_t i = 0; b.late_ro && b.late_ro[i]; i++)
                        op2(&b, NSR_OP_REMOUNT_RO, NULL, b.late_ro[i]);
                b.p = slots[SLOT_OTHERS];
                add_hidden(&b, false);
                /* A hidden dir is a dir of the shared tmpfs, as every
                 * tmpfs of the profile's own (run_defaults). */
                share_tmp(slots[SLOT_HOLDERS], l->tmp_size);
                share_tmp(slots[SLOT_OTHERS], l->tmp_size);
                for (unsigned g = 0; g < 2; g++) {
                        b.p = slots[SLOT_GUARD_STATE + g];
                        if (l->guard[g] && (l->reached[g] || !covered(&b, l->guard[g])))
                                mask_dir(&b, l->guard[g]);
                }
                if (ret_packed && !(*ret_packed = nsr_plan_slots_pack(slots, N_SLOTS, ret_len)))
                        r = nsr_error_setx(err, EINVAL, "the hidden paths' ops cannot be passed on");
        }
        if (r >= 0 && nsr_plan_fill_slots(p, slots, N_SLOTS) < 0)
                r = nsr_error_setx(err, EINVAL, "the plan's hidden paths have no place");
        for (size_t k = 0; k < N_SLOTS; k++)
                nsr_plan_free(slots[k]);
        if (r < 0 && ret_packed) {
                free(*ret_packed);
                *ret_packed = NULL;
        }
        return r < 0 ? r : 0;
}
