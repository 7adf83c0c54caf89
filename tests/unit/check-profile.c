/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* profile.c: expansion of project mode into plan ops; state.c: run ids
 * and run meta files; textdiff.c. */
#include "config.h"

#include <linux/capability.h>

#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/textdiff.h"
#include "base/util.h"
#include "cli/plan.h"
#include "cli/trace.h"
#include "project/profile.h"
#include "txn/state.h"
#include "unit.h"

START_TEST(test_expand) {
        char *env[] = { "HOME=/home/u", "XDG_CONFIG_HOME=/cfg", "EMPTY=", NULL };
        _cleanup_free_ char *a = nsr_profile_expand("~/.ssh", "/home/u", env);
        ck_assert_str_eq(a, "/home/u/.ssh");
        _cleanup_free_ char *b = nsr_profile_expand("$XDG_CONFIG_HOME/gh", "/home/u", env);
        ck_assert_str_eq(b, "/cfg/gh");
        _cleanup_free_ char *c = nsr_profile_expand("${XDG_CONFIG_HOME}/x/$HOME", "/h", env);
        ck_assert_str_eq(c, "/cfg/x//home/u");
        ck_assert_ptr_null(nsr_profile_expand("$UNSET/x", "/h", env));
        ck_assert_ptr_null(nsr_profile_expand("~/x", NULL, env));
        ck_assert_ptr_null(nsr_profile_expand("${BROKEN", "/h", env));
        _cleanup_free_ char *d = nsr_profile_expand("/etc/shadow", NULL, env);
        ck_assert_str_eq(d, "/etc/shadow");
        _cleanup_free_ char *e = nsr_profile_expand("~user", "/h", env);
        ck_assert_str_eq(e, "~user"); /* only "~/" is the home */
        /* Growing past the first guess, empty values, a lone "$" or "~". */
        _cleanup_free_ char *f =
                nsr_profile_expand("~/$XDG_CONFIG_HOME$EMPTY/$XDG_CONFIG_HOME/~", "/a-long-home-dir", env);
        ck_assert_str_eq(f, "/a-long-home-dir//cfg//cfg/~");
        _cleanup_free_ char *g = nsr_profile_expand("~", "/h", env);
        ck_assert_str_eq(g, "/h");
        _cleanup_free_ char *h = nsr_profile_expand("", "/h", env);
        ck_assert_str_eq(h, "");
        ck_assert_ptr_null(nsr_profile_expand("/x/$", "/h", env));
        ck_assert_ptr_null(nsr_profile_expand("/x/${}", "/h", env));
        ck_assert_ptr_null(nsr_profile_expand("/x/$/y", "/h", env));
}
END_TEST

START_TEST(test_read_list) {
        char dir[] = "/tmp/nsr-list.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        _cleanup_free_ char *path = nsr_path_join(dir, "l");
        /* Comments, blank lines and blanks around entries go; a line longer
         * than PATH_MAX + 63 bytes is cut where fgets(3) cut it (the list
         * was read with it), and a NUL ends the entry; no newline at the
         * end is an entry all the same. */
        _cleanup_free_ char *lng = nsr_malloc0(PATH_MAX + 100);
        memset(lng, 'a', PATH_MAX + 63);
        memcpy(lng + PATH_MAX + 63, "tail", 4);
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "# comment\n\n   \n  one  \n\t# indented comment\ntwo\n%s\n", lng);
        fwrite("nul\0after\n", 1, 10, f);
        fputs("last", f);
        ck_assert_int_eq(fclose(f), 0);
        _cleanup_strv_free_ char **v = NULL;
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_profile_read_list(path, &v, &err), 0);
        ck_assert_int_eq(nsr_profile_check_list(path, &err), 0);
        ck_assert_uint_eq(nsr_strv_length(v), 6);
        ck_assert_str_eq(v[0], "one");
        ck_assert_str_eq(v[1], "two");
        ck_assert_uint_eq(strlen(v[2]), PATH_MAX + 63);
        ck_assert_str_eq(v[3], "tail");
        ck_assert_str_eq(v[4], "nul");
        ck_assert_str_eq(v[5], "last");
        /* The limit on entries, and a list that cannot be read. */
        f = fopen(path, "we");
        for (int i = 0; i < 4097; i++)
                fprintf(f, "/e%d\n", i);
        ck_assert_int_eq(fclose(f), 0);
        _cleanup_strv_free_ char **w = NULL;
        ck_assert_int_eq(nsr_profile_read_list(path, &w, &err), -E2BIG);
        ck_assert_int_eq(nsr_profile_check_list(path, &err), -E2BIG);
        ck_assert_int_eq(nsr_profile_read_list(dir, &w, &err), -EISDIR);
        ck_assert_int_eq(nsr_profile_check_list(dir, &err), -EISDIR);
        ck_assert_ptr_null(w);
        unlink(path);
        rmdir(dir);
}
END_TEST

START_TEST(test_env_denied_as_fnmatch) {
        /* The deny list's patterns are matched without fnmatch where they
         * have its simple forms: each answer must be fnmatch's. */
        static const char *const patterns[] = { "*TOKEN*", "*_KEY", "AWS_*", "DATABASE_URL", "*",     "**",
                                                "",        "*PWD*", "PWD",   "*a*b*",        "A?C",   "[AB]*",
                                                "*\\*",    "AB\\*", "*x\\",  "*_AUTH_*",     "OP_*_X" };
        static const char *const names[] = { "GH_TOKEN",
                                             "token",
                                             "MY_TOKEN_X",
                                             "API_KEY",
                                             "api_key_x",
                                             "aws_region",
                                             "AWS_",
                                             "AWS",
                                             "database_url",
                                             "DATABASE_URLS",
                                             "",
                                             "PWD",
                                             "OLDPWD",
                                             "MYSQL_PWD",
                                             "ab",
                                             "xaxbx",
                                             "ABC",
                                             "A/C",
                                             "*",
                                             "AB*",
                                             "ABx",
                                             "x\\",
                                             "_AUTH_",
                                             "OP_SESSION_X",
                                             "\xc3\x84_TOKEN",
                                             "T\xc3\xb6KEN" };
        for (size_t i = 0; i < ELEMENTSOF(patterns); i++)
                for (size_t k = 0; k < ELEMENTSOF(names); k++) {
                        char *v[] = { (char *) patterns[i], NULL };
                        bool want = fnmatch(patterns[i], names[k], FNM_CASEFOLD) == 0;
                        ck_assert_msg(nsr_profile_env_denied(names[k], v) == want, "%s on %s: fnmatch says %d",
                                      patterns[i], names[k], want);
                        char neg[64];
                        snprintf(neg, sizeof(neg), "!%s", patterns[i]);
                        char *w[] = { neg, "*", NULL };
                        ck_assert(nsr_profile_env_denied(names[k], w) == !want);
                }
}
END_TEST

START_TEST(test_env_denied) {
        char *pat[] = { "*TOKEN*", "*_KEY", "AWS_*", "SSH_AUTH_SOCK", NULL };
        ck_assert(nsr_profile_env_denied("GITHUB_TOKEN", pat));
        ck_assert(nsr_profile_env_denied("github_token", pat));
        ck_assert(nsr_profile_env_denied("TOKENIZER", pat));
        ck_assert(nsr_profile_env_denied("OPENAI_API_KEY", pat));
        ck_assert(nsr_profile_env_denied("AWS_SECRET_ACCESS_KEY", pat));
        ck_assert(nsr_profile_env_denied("SSH_AUTH_SOCK", pat));
        ck_assert(!nsr_profile_env_denied("PATH", pat));
        ck_assert(!nsr_profile_env_denied("KEYBOARD", pat));
        ck_assert(!nsr_profile_env_denied("SSH_AUTH_SOCKET", pat));
}
END_TEST

START_TEST(test_env_denied_exceptions) {
        char *pat[] = { "*PWD*", "*PASS*", "!PWD", "!OLDPWD", "*_DSN", "OP_SESSION_*", NULL };
        ck_assert(nsr_profile_env_denied("MYSQL_PWD", pat));
        ck_assert(nsr_profile_env_denied("PGPASSWORD", pat));
        ck_assert(nsr_profile_env_denied("SENTRY_DSN", pat));
        ck_assert(nsr_profile_env_denied("OP_SESSION_my", pat));
        ck_assert(!nsr_profile_env_denied("PWD", pat));
        ck_assert(!nsr_profile_env_denied("OLDPWD", pat));
        ck_assert(!nsr_profile_env_denied("pwd", pat));
        ck_assert(!nsr_profile_env_denied("HOME", pat));
}
END_TEST

START_TEST(test_env_value_secret) {
        ck_assert(nsr_profile_env_value_secret("postgres://u:p@h/db"));
        ck_assert(nsr_profile_env_value_secret("https://x-access-token:ghp_abc@github.com/o/r.git"));
        ck_assert(nsr_profile_env_value_secret("https://pypi.org/simple https://me:pw@pkgs.example/simple"));
        ck_assert(nsr_profile_env_value_secret("redis://:hunter2@cache:6379/0"));
        ck_assert(!nsr_profile_env_value_secret("ssh://git@github.com/o/r"));
        ck_assert(!nsr_profile_env_value_secret("https://example.com/a:b@c"));
        ck_assert(!nsr_profile_env_value_secret("https://example.com:8443/x"));
        ck_assert(!nsr_profile_env_value_secret("http://user:@host/"));
        ck_assert(!nsr_profile_env_value_secret("/usr/bin:/bin"));
        ck_assert(!nsr_profile_env_value_secret("user:pw@host"));
        ck_assert(!nsr_profile_env_value_secret(""));
}
END_TEST

static char *tmpdir_new(void) {
        char tmpl[] = "/tmp/nsr-unit-profile.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(tmpl));
        return nsr_strdup(tmpl);
}

static void tmpdir_remove(const char *d) {
        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", d);
        ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = nsr_path_join(dir, name);
        FILE *f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

/* The profile as trace words: the stable way to compare plans. */
static char *trace_of(const nsr_plan *p) {
        _cleanup_strv_free_ char **v = nsr_trace_argv(p);
        char *s = nsr_strdup("");
        for (size_t i = 0; v[i]; i++) {
                char *n = nsr_asprintf("%s%s%s", s, i ? " " : "", v[i]);
                free(s);
                s = n;
        }
        return s;
}

/* nsr_profile_build, then its hidden paths looked up at once, as prepare
 * does for a trace. */
static int build_filled(nsr_plan *user, const nsr_profile_ctx *ctx, nsr_plan **p, nsr_error *err) {
        nsr_profile_later *later = NULL;
        int r = nsr_profile_build(user, ctx, p, &later, err);
        if (r >= 0 && later)
                r = nsr_profile_fill(later, *p, NULL, NULL, err);
        return r;
}

START_TEST(test_build) {
        _cleanup_free_ char *d = tmpdir_new();
        _cleanup_free_ char *home = nsr_path_join(d, "home");
        _cleanup_free_ char *data = nsr_path_join(d, "data");
        _cleanup_free_ char *profiles = nsr_path_join(d, "data/profiles");
        _cleanup_free_ char *proj = nsr_path_join(d, "home/proj");
        _cleanup_free_ char *git = nsr_path_join(d, "home/proj/.git/hooks");
        _cleanup_free_ char *ssh = nsr_path_join(d, "home/.ssh");
        ck_assert_int_eq(mkdir(home, 0755), 0);
        ck_assert_int_eq(mkdir(data, 0755), 0);
        ck_assert_int_eq(mkdir(profiles, 0755), 0);
        ck_assert_int_eq(mkdir(proj, 0755), 0);
        _cleanup_free_ char *gitdir = nsr_path_join(d, "home/proj/.git");
        ck_assert_int_eq(mkdir(gitdir, 0755), 0);
        ck_assert_int_eq(mkdir(git, 0755), 0);
        ck_assert_int_eq(mkdir(ssh, 0700), 0);
        write_file(home, ".netrc", "machine x\n");
        write_file(profiles, "hide.list", "# comment\n\n  ~/.ssh  \n~/.netrc\n~/.missing\n$NOPE/x\n");
        write_file(profiles, "env-deny.list", "*TOKEN*\n");
        _cleanup_free_ char *upper = nsr_path_join(d, "state/runs/R/p0/upper");
        _cleanup_free_ char *work = nsr_path_join(d, "state/runs/R/p0/work");
        _cleanup_free_ char *state = nsr_path_join(d, "state");
        struct stat st;
        ck_assert_int_eq(stat(proj, &st), 0);
        nsr_profile_project pp = { .path = proj, .upper = upper, .work = work, .dev = st.st_dev, .ino = st.st_ino };
        char *env[] = { "GH_TOKEN=x", "PATH=/bin", "XDG_RUNTIME_DIR=/run/user/1000", NULL };
        nsr_profile_ctx ctx = { .uid = 1000,
                                .gid = 1000,
                                .home = home,
                                .cwd = "/elsewhere",
                                .env = env,
                                .datadir = data,
                                .state_dir = state,
                                .projects = &pp,
                                .n_projects = 1 };
        nsr_plan *user = nsr_plan_new();
        nsr_strv_extend(&user->argv, "make");
        nsr_plan_add_env(user, NSR_ENV_SET, "MINE", "1");
        user->unshare_net = false;
        user->run.tmp_size = 1 << 20;
        nsr_plan *p = NULL;
        nsr_error err = { 0 };
        ck_assert_int_eq(build_filled(user, &ctx, &p, &err), 0);
        /* every tmpfs is capped (--tmp-size; --dev and --tmp-overlay
         * too, which the trace cannot show) */
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].type == NSR_OP_TMPFS || p->ops[i].type == NSR_OP_DEV ||
                    p->ops[i].type == NSR_OP_TMP_OVERLAY) {
                        ck_assert_uint_eq(p->ops[i].size, 1 << 20);
                        /* ... by one budget they all share (issue 23.8) */
                        ck_assert(p->ops[i].flags & NSR_OPF_SHARED_TMP);
                }
        ck_assert_uint_eq(p->run.pids, NSR_PIDS_DEFAULT);
        ck_assert_uint_eq(p->run.rlim[NSR_RLIMIT_CORE].hard, 0);
        _cleanup_free_ char *t = trace_of(p);
        _cleanup_free_ char *expect = nsr_asprintf(
                "--unshare-user --unshare-ipc --unshare-pid --unshare-net --unshare-uts --unshare-cgroup-try "
                "--unsetenv GH_TOKEN --setenv NSRUN 1 --setenv XDG_RUNTIME_DIR /run/user/1000 --setenv MINE 1 "
                "--chdir %s --die-with-parent --new-session "
                "--ro-bind / / --dev /dev --proc /proc --size 1048576 --tmpfs /tmp --size 1048576 --tmpfs /var/tmp "
                "--size 1048576 --tmpfs /run "
                "--perms 0700 --size 1048576 --tmpfs /run/user/1000 --remount-ro /run "
                "--overlay-src %s --tmp-overlay %s "
                "--overlay-src %s --overlay %s %s %s --ro-bind %s %s "
                "--perms 0755 --size 1048576 --tmpfs %s --remount-ro %s --dev-bind /dev/null %s/.netrc --remount-ro %s/.netrc -- make",
                proj, home, home, proj, upper, work, proj, git, git, ssh, ssh, home, home);
        ck_assert_msg(streq(t, expect), "got\n%s\nwant\n%s", t, expect);
        ck_assert_ptr_nonnull(p->seccomp_policies);
        ck_assert_str_eq(p->seccomp_policies[0], "default");
        ck_assert(p->landlock_scope);
        ck_assert(!p->map_all_ids);
        /* the project overlay carries the inode it must still be */
        bool verified = false;
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].type == NSR_OP_OVERLAY)
                        verified = (p->ops[i].flags & NSR_OPF_VERIFY) && p->ops[i].verify_ino == st.st_ino;
        ck_assert(verified);
        nsr_plan_free(p);
        nsr_plan_free(user);
        tmpdir_remove(d);
}
END_TEST

static size_t at(const char *hay, const char *needle) {
        const char *x = strstr(hay, needle);
        ck_assert_msg(x, "'%s' is not in\n%s", needle, hay);
        return (size_t) (x - hay);
}

/* What nsr_profile_build reads for one project at proj, as uid 1000 from
 * inside it; f must stay where it is (its ctx points into it). */
typedef struct fixture {
        nsr_profile_project pp;
        char *env[2];
        nsr_profile_ctx ctx;
} fixture;

static void fixture_init(fixture *f, const char *proj, const char *home, const char *datadir, const char *state,
                         const char *cache) {
        struct stat st;
        ck_assert_int_eq(stat(proj, &st), 0);
        f->pp = (nsr_profile_project){
                .path = proj, .upper = "/s/u", .work = "/s/w", .dev = st.st_dev, .ino = st.st_ino
        };
        f->env[0] = "PATH=/bin";
        f->env[1] = NULL;
        f->ctx = (nsr_profile_ctx){ .uid = 1000,
                                    .gid = 1000,
                                    .home = home,
                                    .cwd = proj,
                                    .env = f->env,
                                    .datadir = datadir,
                                    .state_dir = state,
                                    .cache_dir = cache,
                                    .projects = &f->pp,
                                    .n_projects = 1 };
}

START_TEST(test_hide_order) {
        /* Hidden paths go over the project and the binds: a --hide inside
         * the project stays hidden, and so does a hide.list path under a
         * --ro dir. Only a hide.list path named exactly by --ro shows. */
        _cleanup_free_ char *d = tmpdir_new();
        _cleanup_free_ char *home = nsr_path_join(d, "home");
        _cleanup_free_ char *profiles = nsr_path_join(d, "profiles");
        _cleanup_free_ char *proj = nsr_path_join(d, "proj");
        _cleanup_free_ char *aws = nsr_path_join(d, "home/.aws");
        _cleanup_free_ char *env_file = nsr_path_join(d, "proj/.env");
        ck_assert_int_eq(mkdir(home, 0755), 0);
        ck_assert_int_eq(mkdir(profiles, 0755), 0);
        ck_assert_int_eq(mkdir(proj, 0755), 0);
        ck_assert_int_eq(mkdir(aws, 0700), 0);
        write_file(home, ".netrc", "machine x\n");
        write_file(proj, ".env", "SECRET=1\n");
        _cleanup_free_ char *gh = nsr_path_join(d, "home/gh");
        _cleanup_free_ char *hosts = nsr_path_join(d, "home/gh/hosts.yml");
        ck_assert_int_eq(mkdir(gh, 0700), 0);
        write_file(gh, "hosts.yml", "token: x\n");
        write_file(gh, "other", "token: y\n");
        write_file(profiles, "hide.list", "~/.aws\n~/.netrc\n~/gh\n");
        write_file(profiles, "env-deny.list", "");
        fixture f;
        fixture_init(&f, proj, home, d, "/nonexistent-state", NULL);
        nsr_plan *user = nsr_plan_new();
        nsr_strv_extend(&user->argv, "true");
        nsr_strv_extend(&user->proj.hide, env_file);
        nsr_strv_extend(&user->proj.ro, aws);
        nsr_strv_extend(&user->proj.ro, home);
        nsr_strv_extend(&user->proj.ro, hosts);
        nsr_plan *p = NULL;
        nsr_error err = { 0 };
        ck_assert_int_eq(build_filled(user, &f.ctx, &p, &err), 0);
        _cleanup_free_ char *t = trace_of(p);
        _cleanup_free_ char *overlay = nsr_asprintf("--overlay /s/u /s/w %s ", proj);
        _cleanup_free_ char *hide_env = nsr_asprintf("--dev-bind /dev/null %s --remount-ro %s ", env_file, env_file);
        _cleanup_free_ char *ro_home = nsr_asprintf("--ro-bind %s %s ", home, home);
        _cleanup_free_ char *hide_netrc = nsr_asprintf("--dev-bind /dev/null %s/.netrc ", home);
        _cleanup_free_ char *aws_tmpfs = nsr_asprintf("--tmpfs %s ", aws);
        ck_assert(at(t, overlay) < at(t, hide_env));
        ck_assert(at(t, ro_home) < at(t, hide_netrc));
        ck_assert_msg(!strstr(t, aws_tmpfs), "--ro of a hide.list path shows it:\n%s", t);
        /* --ro of a file inside a hidden dir: the dir is hidden first, the
         * file bound over it after, so it shows and its siblings do not. */
        _cleanup_free_ char *gh_tmpfs = nsr_asprintf("--tmpfs %s ", gh);
        _cleanup_free_ char *ro_hosts = nsr_asprintf("--ro-bind %s %s ", hosts, hosts);
        ck_assert(at(t, gh_tmpfs) < at(t, ro_hosts));
        nsr_plan_free(p);
        nsr_plan_free(user);
        tmpdir_remove(d);
}
END_TEST

START_TEST(test_slots_near_root) {
        /* A --hide that is "/" or right below it (a pattern too, or a path
         * that gets there through "..") may put a slot's mount on "/" or
         * /proc: the plan says so, and the sandbox then builds its root by
         * the pivot. Deeper paths leave the root in place. */
        _cleanup_free_ char *d = tmpdir_new();
        _cleanup_free_ char *profiles = nsr_path_join(d, "profiles");
        _cleanup_free_ char *proj = nsr_path_join(d, "proj");
        ck_assert_int_eq(mkdir(profiles, 0755), 0);
        ck_assert_int_eq(mkdir(proj, 0755), 0);
        write_file(profiles, "hide.list", "/etc/shadow\n");
        write_file(profiles, "env-deny.list", "");
        _cleanup_free_ char *deep = nsr_path_join(d, "proj/.env");
        const struct {
                const char *hide;
                bool near;
        } cases[] = {
                { NULL, false }, { deep, false },  { "/etc/x", false }, { "/proc", true },      { "/", true },
                { "/p*", true }, { "/opt", true }, { "//proc/", true }, { "/a/../proc", true }, { "/a/b/../c", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                fixture f;
                fixture_init(&f, proj, NULL, d, "/nonexistent-state", NULL);
                nsr_plan *user = nsr_plan_new();
                nsr_strv_extend(&user->argv, "true");
                if (cases[i].hide)
                        nsr_strv_extend(&user->proj.hide, cases[i].hide);
                nsr_plan *p = NULL;
                nsr_profile_later *later = NULL;
                nsr_error err = { 0 };
                ck_assert_int_eq(nsr_profile_build(user, &f.ctx, &p, &later, &err), 0);
                ck_assert_msg(p->slots_near_root == cases[i].near, "--hide %s: slots_near_root is %d",
                              cases[i].hide ? cases[i].hide : "(none)", p->slots_near_root);
                ck_assert(nsr_plan_has_slots(p));
                nsr_profile_later_free(later);
                nsr_plan_free(p);
                nsr_plan_free(user);
        }
        tmpdir_remove(d);
}
END_TEST

START_TEST(test_build_user_wins) {
        /* --share-net after the profile's --unshare-net; the user's policy
         * replaces the profile's; cwd inside the project is kept. */
        _cleanup_free_ char *d = tmpdir_new();
        _cleanup_free_ char *profiles = nsr_path_join(d, "profiles");
        ck_assert_int_eq(mkdir(profiles, 0755), 0);
        write_file(profiles, "hide.list", "");
        write_file(profiles, "env-deny.list", "");
        struct stat st;
        ck_assert_int_eq(stat(d, &st), 0);
        nsr_profile_project pp = { .path = d, .upper = "/s/u", .work = "/s/w", .dev = st.st_dev, .ino = st.st_ino };
        _cleanup_free_ char *cwd = nsr_path_join(d, "sub");
        char *env[] = { NULL };
        nsr_profile_ctx ctx = { .uid = 0,
                                .gid = 0,
                                .home = NULL,
                                .cwd = cwd,
                                .env = env,
                                .datadir = d,
                                .state_dir = "/nonexistent-state",
                                .projects = &pp,
                                .n_projects = 1 };
        nsr_plan *user = nsr_plan_new();
        nsr_strv_extend(&user->argv, "true");
        user->share_net = true;
        nsr_strv_extend(&user->seccomp_policies, "strict");
        user->proj.allow_nested = true;
        nsr_plan *p = NULL;
        nsr_error err = { 0 };
        ck_assert_int_eq(build_filled(user, &ctx, &p, &err), 0);
        ck_assert(!p->unshare_net);
        ck_assert_str_eq(p->seccomp_policies[0], "strict");
        ck_assert_ptr_null(p->seccomp_policies[1]);
        ck_assert_str_eq(p->chdir, cwd);
        ck_assert(p->map_all_ids);       /* real root maps its whole range */
        ck_assert_uint_eq(p->n_caps, 2); /* ... and drops every cap */
        ck_assert(!p->caps[0].add);
        ck_assert_int_eq(p->caps[0].cap, -1);
        ck_assert(p->caps[1].add); /* but CAP_SETFCAP, for a nested sandbox as uid 0 */
        ck_assert_int_eq(p->caps[1].cap, CAP_SETFCAP);
        nsr_plan_free(p);
        nsr_plan_free(user);
        tmpdir_remove(d);
}
END_TEST

/* A plan whose hidden paths were looked up in another process (the
 * monitor, after the clone) and passed packed is the plan whose paths were
 * looked up at once: the same ops in the same places, holders first with
 * their read-only remounts after what they hold, a guard that a hidden dir
 * makes needless left out, one that none covers kept. */
static nsr_plan *later_user(const char *hide, const char *ro) {
        nsr_plan *user = nsr_plan_new();
        nsr_strv_extend(&user->argv, "true");
        nsr_strv_extend(&user->proj.hide, hide);
        nsr_strv_extend(&user->proj.ro, ro);
        return user;
}

START_TEST(test_fill_later) {
        _cleanup_free_ char *d = tmpdir_new();
        const char *dirs[] = { "home",
                               "profiles",
                               "proj",
                               "home/gh",
                               "home/.local",
                               "home/.local/state",
                               "home/.local/state/nsrun",
                               "home/.cache",
                               "home/.cache/nsrun" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *x = nsr_path_join(d, dirs[i]);
                ck_assert_int_eq(mkdir(x, 0755), 0);
        }
        _cleanup_free_ char *home = nsr_path_join(d, "home"), *proj = nsr_path_join(d, "proj");
        _cleanup_free_ char *gh = nsr_path_join(d, "home/gh"), *profiles = nsr_path_join(d, "profiles");
        _cleanup_free_ char *hosts = nsr_path_join(d, "home/gh/hosts.yml");
        _cleanup_free_ char *env_file = nsr_path_join(d, "proj/.env");
        _cleanup_free_ char *state = nsr_path_join(d, "home/.local/state/nsrun");
        _cleanup_free_ char *cache = nsr_path_join(d, "home/.cache/nsrun");
        write_file(home, ".netrc", "machine x\n");
        write_file(proj, ".env", "SECRET=1\n");
        write_file(gh, "hosts.yml", "token: x\n");
        write_file(profiles, "hide.list", "~/.netrc\n~/gh\n~/.local/state\n~/.missing\n");
        write_file(profiles, "env-deny.list", "");
        fixture f;
        fixture_init(&f, proj, home, d, state, cache);
        nsr_error err = { 0 };
        nsr_plan *u[3], *p[3];
        nsr_profile_later *later[3];
        for (int i = 0; i < 3; i++) {
                u[i] = later_user(env_file, hosts);
                ck_assert_int_eq(nsr_profile_build(u[i], &f.ctx, &p[i], &later[i], &err), 0);
                ck_assert_ptr_nonnull(later[i]);
                ck_assert(nsr_plan_has_slots(p[i]));
        }
        /* 0: at once; 1: packed too; 2: from 1's packing, as the child. */
        ck_assert_int_eq(nsr_profile_fill(later[0], p[0], NULL, NULL, &err), 0);
        char *packed = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_profile_fill(later[1], p[1], &packed, &len, &err), 0);
        ck_assert_ptr_nonnull(packed);
        nsr_profile_later_free(later[2]);
        nsr_plan **slots = NULL;
        size_t n = 0;
        ck_assert_int_eq(nsr_plan_slots_unpack(packed, len, &slots, &n), 0);
        ck_assert_int_eq(nsr_plan_fill_slots(p[2], slots, n), 0);
        nsr_plan_slots_free(slots, n);
        free(packed);
        _cleanup_free_ char *t0 = trace_of(p[0]), *t1 = trace_of(p[1]), *t2 = trace_of(p[2]);
        ck_assert_msg(streq(t0, t1) && streq(t0, t2), "at once:\n%s\npacked:\n%s\nunpacked:\n%s", t0, t1, t2);
        for (int i = 0; i < 3; i++)
                ck_assert(!nsr_plan_has_slots(p[i]));
        _cleanup_free_ char *gh_tmpfs = nsr_asprintf("--tmpfs %s ", gh);
        _cleanup_free_ char *ro_hosts = nsr_asprintf("--ro-bind %s %s ", hosts, hosts);
        _cleanup_free_ char *gh_ro = nsr_asprintf("--remount-ro %s ", gh);
        _cleanup_free_ char *overlay = nsr_asprintf("--overlay /s/u /s/w %s ", proj);
        _cleanup_free_ char *hide_env = nsr_asprintf("--dev-bind /dev/null %s --remount-ro %s ", env_file, env_file);
        _cleanup_free_ char *netrc = nsr_asprintf("--dev-bind /dev/null %s/.netrc --remount-ro %s/.netrc ", home, home);
        _cleanup_free_ char *state_mask = nsr_asprintf("--tmpfs %s ", state);
        _cleanup_free_ char *cache_mask = nsr_asprintf("--perms 0755 --tmpfs %s --remount-ro %s ", cache, cache);
        ck_assert(at(t0, gh_tmpfs) < at(t0, overlay));
        ck_assert(at(t0, ro_hosts) < at(t0, gh_ro));
        ck_assert(at(t0, overlay) < at(t0, hide_env));
        ck_assert(at(t0, overlay) < at(t0, netrc));
        /* hide.list's ~/.local/state covers the state dir; nothing covers
         * the cache. */
        ck_assert_msg(!strstr(t0, state_mask), "%s", t0);
        ck_assert(at(t0, hide_env) < at(t0, cache_mask));
        /* a hidden dir is a dir of the one shared tmpfs */
        for (size_t i = 0; i < p[2]->n_ops; i++)
                if (p[2]->ops[i].type == NSR_OP_TMPFS && streq(p[2]->ops[i].dest, gh))
                        ck_assert(p[2]->ops[i].flags & NSR_OPF_SHARED_TMP);
        for (int i = 0; i < 3; i++) {
                nsr_plan_free(p[i]);
                nsr_plan_free(u[i]);
        }
        tmpdir_remove(d);
}
END_TEST

/* What cannot be looked up fails the fill, and uses its state up; a --hide
 * that does not expand fails the build itself, before anything runs. */
START_TEST(test_fill_fails) {
        _cleanup_free_ char *d = tmpdir_new();
        struct stat st;
        ck_assert_int_eq(stat(d, &st), 0);
        nsr_profile_project pp = { .path = d, .upper = "/s/u", .work = "/s/w", .dev = st.st_dev, .ino = st.st_ino };
        char *env[] = { NULL };
        nsr_profile_ctx ctx = { .uid = 1000, .gid = 1000, .env = env, .datadir = d, .projects = &pp, .n_projects = 1 };
        nsr_error err = { 0 };
        nsr_plan *user = later_user("$NSRUN_UNSET_VARIABLE/x", "/");
        nsr_plan *p = NULL;
        nsr_profile_later *later = NULL;
        ck_assert_int_eq(nsr_profile_build(user, &ctx, &p, &later, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "cannot expand"), "%s", err.msg);
        ck_assert_ptr_null(p);
        nsr_plan_free(user);
        /* No profiles/env-deny.list: the build fails, rather than let
         * every variable it names through. */
        user = later_user("/x", "/");
        nsr_error_clear(&err);
        ck_assert_int_eq(nsr_profile_build(user, &ctx, &p, &later, &err), -ENOENT);
        ck_assert_msg(strstr(err.msg, "env-deny.list"), "%s", err.msg);
        ck_assert_ptr_null(p);
        /* no profiles/hide.list in the data dir: the fill fails */
        _cleanup_free_ char *profiles = nsr_path_join(d, "profiles");
        ck_assert_int_eq(mkdir(profiles, 0755), 0);
        write_file(profiles, "env-deny.list", "*TOKEN*\n");
        nsr_error_clear(&err);
        ck_assert_int_eq(nsr_profile_build(user, &ctx, &p, &later, &err), 0);
        char *packed = (char *) 1;
        size_t len = 0;
        ck_assert_int_lt(nsr_profile_fill(later, p, &packed, &len, &err), 0);
        ck_assert_ptr_null(packed);
        ck_assert(nsr_plan_has_slots(p));
        nsr_plan_free(p);
        nsr_plan_free(user);
        _cleanup_free_ char *list = nsr_path_join(profiles, "env-deny.list");
        ck_assert_int_eq(unlink(list), 0);
        ck_assert_int_eq(rmdir(profiles), 0);
        ck_assert_int_eq(rmdir(d), 0);
}
END_TEST

static nsr_plan **some_slots(size_t *n) {
        nsr_plan **s = nsr_malloc0(4 * sizeof(nsr_plan *));
        for (size_t i = 0; i < 3; i++)
                s[i] = nsr_plan_new();
        nsr_op *op = nsr_plan_add_op(s[0], NSR_OP_TMPFS);
        op->dest = nsr_strdup("/a");
        op->perms = 0755;
        op->size = 1 << 20;
        op->flags = NSR_OPF_SHARED_TMP;
        nsr_plan_add_op(s[0], NSR_OP_REMOUNT_RO)->dest = nsr_strdup("/a");
        op = nsr_plan_add_op(s[2], NSR_OP_DEV_BIND);
        op->source = nsr_strdup("/dev/null");
        op->dest = nsr_strdup("/b c");
        *n = 3;
        return s;
}

START_TEST(test_slots_pack) {
        size_t n, len;
        nsr_plan **s = some_slots(&n);
        char *packed = nsr_plan_slots_pack(s, n, &len);
        ck_assert_ptr_nonnull(packed);
        /* every cut, a byte more, a type past the last, a NUL in a name */
        nsr_plan **back = NULL;
        size_t nb = 0;
        for (size_t cut = 0; cut < len; cut++)
                ck_assert_int_eq(nsr_plan_slots_unpack(packed, cut, &back, &nb), -EINVAL);
        char *more = nsr_malloc0(len + 1);
        memcpy(more, packed, len);
        ck_assert_int_eq(nsr_plan_slots_unpack(more, len + 1, &back, &nb), -EINVAL);
        uint32_t bad = NSR_OP_SLOT;
        memcpy(more + 8, &bad, sizeof(bad)); /* slot 0's first op's type */
        ck_assert_int_eq(nsr_plan_slots_unpack(more, len, &back, &nb), -EINVAL);
        memcpy(more, packed, len);
        more[len - 2] = '\0'; /* in "/b c" */
        ck_assert_int_eq(nsr_plan_slots_unpack(more, len, &back, &nb), -EINVAL);
        free(more);
        ck_assert_int_eq(nsr_plan_slots_unpack(packed, len, &back, &nb), 0);
        ck_assert_uint_eq(nb, 3);
        ck_assert_uint_eq(back[0]->n_ops, 2);
        ck_assert_uint_eq(back[1]->n_ops, 0);
        ck_assert_uint_eq(back[2]->n_ops, 1);
        ck_assert_int_eq(back[0]->ops[0].type, NSR_OP_TMPFS);
        ck_assert_uint_eq(back[0]->ops[0].perms, 0755);
        ck_assert_uint_eq(back[0]->ops[0].size, 1 << 20);
        ck_assert_uint_eq(back[0]->ops[0].flags, NSR_OPF_SHARED_TMP);
        ck_assert_ptr_null(back[0]->ops[0].source);
        ck_assert_uint_eq(back[0]->ops[1].perms, NSR_PERMS_UNSET);
        ck_assert_str_eq(back[2]->ops[0].source, "/dev/null");
        ck_assert_str_eq(back[2]->ops[0].dest, "/b c");
        ck_assert_int_eq(back[2]->ops[0].fd, -1);
        /* spliced where the plan names them, a slot past them refused */
        nsr_plan *p = nsr_plan_new();
        nsr_plan_add_op(p, NSR_OP_PROC)->dest = nsr_strdup("/proc");
        nsr_plan_add_op(p, NSR_OP_SLOT)->slot = 2;
        nsr_plan_add_op(p, NSR_OP_SLOT)->slot = 3;
        ck_assert_int_eq(nsr_plan_fill_slots(p, back, nb), -EINVAL);
        ck_assert_uint_eq(p->n_ops, 3);
        p->ops[2].slot = 0;
        ck_assert_int_eq(nsr_plan_fill_slots(p, back, nb), 0);
        ck_assert_uint_eq(p->n_ops, 4);
        ck_assert_str_eq(p->ops[1].dest, "/b c");
        ck_assert_int_eq(p->ops[2].type, NSR_OP_TMPFS);
        ck_assert_int_eq(p->ops[3].type, NSR_OP_REMOUNT_RO);
        ck_assert(!nsr_plan_has_slots(p));
        nsr_plan_free(p);
        nsr_plan_slots_free(back, nb);
        free(packed);
        /* an op with more than a hiding uses does not travel */
        nsr_plan_add_op(s[1], NSR_OP_BIND_FD)->fd = 3;
        ck_assert_ptr_null(nsr_plan_slots_pack(s, n, &len));
        nsr_plan_slots_free(s, n);
}
END_TEST

START_TEST(test_run_ids) {
        char a[NSR_RUN_ID_MAX], b[NSR_RUN_ID_MAX];
        nsr_run_id_new(a);
        nsr_run_id_new(b);
        ck_assert(nsr_run_id_is_valid(a));
        ck_assert_str_ne(a, b);
        ck_assert(!nsr_run_id_is_valid(""));
        ck_assert(!nsr_run_id_is_valid(".."));
        ck_assert(!nsr_run_id_is_valid("a/b"));
        ck_assert(!nsr_run_id_is_valid(".hidden"));
        ck_assert(!nsr_run_id_is_valid("x y"));
}
END_TEST

START_TEST(test_meta_roundtrip) {
        _cleanup_free_ char *d = tmpdir_new();
        _cleanup_close_ int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        char *projects[] = { "/p/one", "/p/with\nnewline\xff", NULL };
        char *argv[] = { "sh", "-c", "echo 'x y'", "", NULL };
        unsigned long counts[2][5] = { { 1, 2, 3, 4, 5 }, { 0, 0, 7, 0, 0 } };
        nsr_run_meta m = { .state = NSR_OUTCOME_COMMITTED,
                           .kind = "run",
                           .start = { 1234, 5678 },
                           .projects = projects,
                           .argv = argv,
                           .exit_code = 3,
                           .signal = 0,
                           .counts = counts };
        snprintf(m.run_id, sizeof(m.run_id), "20261125T000000.000Z-abcdef");
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_run_meta_write(fd, &m, &err), 0);
        nsr_run_meta r = { 0 };
        ck_assert_int_eq(nsr_run_meta_read(fd, &r, &err), 0);
        ck_assert_str_eq(r.run_id, m.run_id);
        ck_assert_int_eq(r.state, NSR_OUTCOME_COMMITTED);
        ck_assert_int_eq(r.start.tv_sec, 1234);
        ck_assert_int_eq(r.start.tv_nsec, 5678);
        ck_assert_int_eq(r.exit_code, 3);
        ck_assert_str_eq(r.projects[1], projects[1]);
        ck_assert_str_eq(r.argv[2], "echo 'x y'");
        ck_assert_str_eq(r.argv[3], "");
        ck_assert_uint_eq(r.counts[0][4], 5);
        ck_assert_uint_eq(r.counts[1][2], 7);
        nsr_run_meta_done(&r);
        tmpdir_remove(d);
}
END_TEST

static char *diff_tty(const char *a, const char *b, bool for_terminal) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_diff_unified(a, strlen(a), b, strlen(b), "a", "b", f, for_terminal, &err), 0);
        fclose(f);
        return buf;
}

static char *diff_of(const char *a, const char *b) {
        return diff_tty(a, b, false);
}

START_TEST(test_textdiff_terminal) {
        /* ESC, CR, DEL and a C1 CSI are shown, not sent; tab and UTF-8 stay. */
        _cleanup_free_ char *t = diff_tty("x\n", "x\n\033[2K\r\tok \xc3\xa9\x7f\xc2\x9b\xff\n", true);
        ck_assert_str_eq(t, "--- a\n+++ b\n@@ -1,1 +1,2 @@\n x\n"
                            "+\xe2\x90\x9b[2K\xe2\x90\x8d\tok \xc3\xa9\xe2\x90\xa1\xef\xbf\xbd\xef\xbf\xbd\n");
        /* Not for a terminal: byte-exact. */
        _cleanup_free_ char *raw = diff_tty("x\n", "x\n\033[2K\n", false);
        ck_assert_str_eq(raw, "--- a\n+++ b\n@@ -1,1 +1,2 @@\n x\n+\033[2K\n");
}
END_TEST

START_TEST(test_textdiff) {
        _cleanup_free_ char *same = diff_of("x\ny\n", "x\ny\n");
        ck_assert_str_eq(same, "");
        _cleanup_free_ char *one = diff_of("a\nb\nc\n", "a\nB\nc\n");
        ck_assert_str_eq(one, "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        _cleanup_free_ char *add = diff_of("", "new\n");
        ck_assert_str_eq(add, "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+new\n");
        _cleanup_free_ char *nonl = diff_of("a\n", "a\nb");
        ck_assert_str_eq(nonl, "--- a\n+++ b\n@@ -1,1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n");
        /* two changes far apart: two hunks */
        char a[200] = "", b[200] = "";
        for (int i = 0; i < 20; i++) {
                char l[8];
                snprintf(l, sizeof(l), "%d\n", i);
                strcat(a, l);
                strcat(b, i == 2 || i == 17 ? "X\n" : l);
        }
        _cleanup_free_ char *two = diff_of(a, b);
        ck_assert_str_eq(two, "--- a\n+++ b\n@@ -1,6 +1,6 @@\n 0\n 1\n-2\n+X\n 3\n 4\n 5\n"
                              "@@ -15,6 +15,6 @@\n 14\n 15\n 16\n-17\n+X\n 18\n 19\n");
        ck_assert(nsr_diff_is_text("abc", 3));
        ck_assert(!nsr_diff_is_text("a\0c", 3));
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("profile");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_expand);
        tcase_add_test(tc, test_read_list);
        tcase_add_test(tc, test_env_denied);
        tcase_add_test(tc, test_env_denied_as_fnmatch);
        tcase_add_test(tc, test_env_denied_exceptions);
        tcase_add_test(tc, test_env_value_secret);
        tcase_add_test(tc, test_build);
        tcase_add_test(tc, test_build_user_wins);
        tcase_add_test(tc, test_slots_near_root);
        tcase_add_test(tc, test_hide_order);
        tcase_add_test(tc, test_fill_later);
        tcase_add_test(tc, test_fill_fails);
        tcase_add_test(tc, test_slots_pack);
        tcase_add_test(tc, test_run_ids);
        tcase_add_test(tc, test_meta_roundtrip);
        tcase_add_test(tc, test_textdiff);
        tcase_add_test(tc, test_textdiff_terminal);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
