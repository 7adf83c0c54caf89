/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* confine.c: the read allow-list that hides paths from a Landlock sandbox
 * (against a fake tree and a real one), the rules for a project-mode
 * command, and the rules enforced in a child. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "sandbox/confine.h"
#include "unit.h"

/* ---- a fake tree: "dir: name name ..." lines ----------------------------- */

static const char *const fake_tree[] = {
        "/: bin etc home run tmp usr",
        "/etc: hosts passwd shadow ssh",
        "/etc/ssh: ssh_config ssh_host_rsa_key",
        "/home: u v",
        "/home/u: .bashrc .ssh src",
        NULL,
};

static int fake_list(const char *dir, char ***ret, void *userdata) {
        unsigned *calls = userdata;
        (*calls)++;
        size_t l = strlen(dir);
        for (size_t i = 0; fake_tree[i]; i++) {
                if (strncmp(fake_tree[i], dir, l) != 0 || fake_tree[i][l] != ':')
                        continue;
                char **v = nsr_malloc0(sizeof(char *));
                _cleanup_free_ char *copy = nsr_strdup(fake_tree[i] + l + 1);
                for (char *t = strtok(copy, " "); t; t = strtok(NULL, " "))
                        nsr_strv_extend(&v, t);
                *ret = v;
                return 0;
        }
        return -ENOENT;
}

static char *joined(char **v) {
        char *s = nsr_strdup("");
        for (size_t i = 0; v && v[i]; i++) {
                char *n = nsr_asprintf("%s%s%s", s, i ? " " : "", v[i]);
                free(s);
                s = n;
        }
        return s;
}

START_TEST(test_allowlist_fake) {
        char *hidden[] = { "/home/u/.ssh",   "/etc/shadow", "/run", "/etc/ssh/ssh_host_rsa_key",
                           "/home/u/.ssh/x", "//run/",      NULL };
        unsigned calls = 0;
        char **out = NULL;
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_confine_allowlist(hidden, fake_list, &calls, 100, &out, &err), 0);
        _cleanup_free_ char *s = joined(out);
        /* The siblings of every hidden path and of every ancestor, never an
         * ancestor, never a hidden path. */
        ck_assert_str_eq(s, "/bin /etc/hosts /etc/passwd /etc/ssh/ssh_config /home/u/.bashrc /home/u/src /home/v "
                            "/tmp /usr");
        /* One listing per ancestor: /, /home, /home/u, /etc, /etc/ssh. */
        ck_assert_uint_eq(calls, 5);
        nsr_strv_free(out);
}
END_TEST

START_TEST(test_allowlist_errors) {
        unsigned calls = 0;
        char **out = NULL;
        nsr_error err = { 0 };
        char *root[] = { "/usr", "/", NULL };
        ck_assert_int_eq(nsr_confine_allowlist(root, fake_list, &calls, 100, &out, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "cannot hide /"), "%s", err.msg);
        char *rel[] = { "home/u", NULL };
        ck_assert_int_eq(nsr_confine_allowlist(rel, fake_list, &calls, 100, &out, &err), -EINVAL);
        /* The bound: /home/u/.ssh needs 8 rules here. */
        char *one[] = { "/home/u/.ssh", NULL };
        ck_assert_int_eq(nsr_confine_allowlist(one, fake_list, &calls, 7, &out, &err), -E2BIG);
        ck_assert_int_eq(nsr_confine_allowlist(one, fake_list, &calls, 8, &out, &err), 0);
        ck_assert_uint_eq(nsr_strv_length(out), 8);
        nsr_strv_free(out);
        /* Nothing hidden: nothing to list either (and nothing granted; the
         * caller then grants nothing to read, so it never asks). */
        calls = 0;
        char *none[] = { NULL };
        ck_assert_int_eq(nsr_confine_allowlist(none, fake_list, &calls, 8, &out, &err), 0);
        ck_assert_ptr_null(out[0]);
        ck_assert_uint_eq(calls, 0);
        nsr_strv_free(out);
}
END_TEST

/* ---- a real tree ----------------------------------------------------------------- */

static char *tmpdir_new(void) {
        char t[] = "/tmp/nsr-confine.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(t));
        return nsr_strdup(t);
}

static void mk(const char *d, const char *rel, bool dir) {
        _cleanup_free_ char *p = nsr_path_join(d, rel);
        if (dir)
                ck_assert_int_eq(mkdir(p, 0755), 0);
        else {
                int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                ck_assert_int_ge(fd, 0);
                close(fd);
        }
}

static void rm_tree(const char *d) {
        _cleanup_free_ char *cmd = nsr_asprintf("rm -rf '%s'", d);
        ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_allowlist_real) {
        _cleanup_free_ char *d = tmpdir_new();
        mk(d, "a", false);
        mk(d, "b", true);
        mk(d, "b/secret", false);
        mk(d, "b/pub", true);
        _cleanup_free_ char *link = nsr_path_join(d, "link");
        ck_assert_int_eq(symlink("b/secret", link), 0);
        _cleanup_free_ char *secret = nsr_path_join(d, "b/secret");
        char *hidden[] = { secret, NULL };
        char **out = NULL;
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_confine_allowlist(hidden, nsr_confine_list_dir, NULL, NSR_CONFINE_MAX_RULES, &out, &err),
                         0);
        /* Below d: its plain entries and b's, not b itself, not the
         * symlink (it would lead to the secret), not the secret. */
        char *below = nsr_strdup("");
        size_t l = strlen(d);
        for (size_t i = 0; out[i]; i++) {
                ck_assert_msg(!streq(out[i], secret) && !streq(out[i], d), "granted %s", out[i]);
                ck_assert_msg(strncmp(secret, out[i], strlen(out[i])) != 0 || secret[strlen(out[i])] != '/',
                              "granted an ancestor: %s", out[i]);
                if (strncmp(out[i], d, l) == 0 && out[i][l] == '/') {
                        char *n = nsr_asprintf("%s %s", below, out[i] + l + 1);
                        free(below);
                        below = n;
                }
        }
        ck_assert_str_eq(below, " a b/pub");
        free(below);
        nsr_strv_free(out);
        rm_tree(d);
}
END_TEST

START_TEST(test_rules) {
        _cleanup_free_ char *d = tmpdir_new();
        mk(d, "proj", true);
        mk(d, "proj/.env", false);
        _cleanup_free_ char *proj = nsr_path_join(d, "proj");
        _cleanup_free_ char *env = nsr_path_join(d, "proj/.env");
        char *projects[] = { proj, NULL };
        char *hidden[] = { env, NULL };
        nsr_confine_paths cp = { .hidden = hidden, .projects = projects };
        nsr_landlock_rules r = { 0 };
        nsr_error err = { 0 };
        /* A secret inside a writable tree cannot be taken out of it. */
        ck_assert_int_eq(nsr_confine_rules(&cp, &r, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "Landlock cannot"), "%s", err.msg);
        char *h2[] = { d, NULL }; /* the project inside a hidden dir is fine: granted on its own */
        cp.hidden = h2;
        ck_assert_int_eq(nsr_confine_rules(&cp, &r, &err), 0);
        ck_assert(nsr_strv_contains(r.write, proj));
        ck_assert(nsr_strv_contains(r.write_files, "/dev/null"));
        ck_assert(r.deny_tcp && r.scope);
        ck_assert(!nsr_strv_contains(r.read, d));
        nsr_confine_rules_done(&r);
        rm_tree(d);
}
END_TEST

START_TEST(test_rules_around) {
        _cleanup_free_ char *d = tmpdir_new();
        mk(d, "proj", true);
        mk(d, "proj/.git", true);
        mk(d, "proj/.git/hooks", true);
        mk(d, "proj/.git/objects", true);
        mk(d, "proj/.git/config", false);
        mk(d, "proj/src", true);
        mk(d, "vault", true);
        mk(d, "vault/secret", false);
        mk(d, "vault/notes", false);
        _cleanup_free_ char *proj = nsr_path_join(d, "proj");
        _cleanup_free_ char *secret = nsr_path_join(d, "vault/secret");
        char *projects[] = { proj, NULL };
        char *hidden[] = { secret, NULL };
        char *ro[] = { d, NULL };
        char *ttys[] = { "/dev/pts/7", "/dev/pts/../tty", "/dev/tty1", NULL };
        nsr_confine_paths cp = { .hidden = hidden, .projects = projects, .ro = ro, .terminals = ttys };
        nsr_landlock_rules r = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_confine_rules(&cp, &r, &err), 0);
        _cleanup_free_ char *src = nsr_path_join(d, "proj/src");
        _cleanup_free_ char *objects = nsr_path_join(d, "proj/.git/objects");
        _cleanup_free_ char *hooks = nsr_path_join(d, "proj/.git/hooks");
        _cleanup_free_ char *config = nsr_path_join(d, "proj/.git/config");
        _cleanup_free_ char *git = nsr_path_join(d, "proj/.git");
        _cleanup_free_ char *notes = nsr_path_join(d, "vault/notes");
        _cleanup_free_ char *vault = nsr_path_join(d, "vault");
        /* The project: read as a whole, write around the protected paths. */
        ck_assert(nsr_strv_contains(r.read, proj));
        ck_assert(!nsr_strv_contains(r.write, proj) && !nsr_strv_contains(r.write, git));
        ck_assert(nsr_strv_contains(r.write, src) && nsr_strv_contains(r.write, objects));
        ck_assert(!nsr_strv_contains(r.write, hooks) && !nsr_strv_contains(r.write, config));
        /* --ro d: around the hidden file below it. */
        ck_assert(!nsr_strv_contains(r.read, d) && !nsr_strv_contains(r.read, vault));
        ck_assert(nsr_strv_contains(r.read, notes) && !nsr_strv_contains(r.read, secret));
        /* Of the terminals, only a plain /dev/pts/N; /dev/pts not as a tree. */
        ck_assert(nsr_strv_contains(r.write_files, "/dev/pts/7"));
        ck_assert(!nsr_strv_contains(r.write_files, "/dev/pts/../tty") &&
                  !nsr_strv_contains(r.write_files, "/dev/tty1"));
        ck_assert(!nsr_strv_contains(r.write, "/dev/pts") && !nsr_strv_contains(r.read, "/dev/pts"));
        ck_assert(!nsr_strv_contains(r.read, "/dev"));
        nsr_confine_rules_done(&r);
        /* The protected paths: a repository has them, a plain dir none. */
        _cleanup_strv_free_ char **prot = NULL;
        ck_assert_int_eq(nsr_confine_protected(proj, &prot), 0);
        ck_assert(nsr_strv_contains(prot, hooks) && nsr_strv_contains(prot, config));
        nsr_strv_free(TAKE_PTR(prot));
        ck_assert_int_eq(nsr_confine_protected(vault, &prot), 0);
        ck_assert_ptr_null(prot[0]);
        rm_tree(d);
}
END_TEST

/* ---- enforced, in a child ------------------------------------------------------------- */

static int try_open(const char *path, int flags) {
        int fd = open(path, flags | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno;
        close(fd);
        return 0;
}

START_TEST(test_enforced) {
        if (nsr_landlock_abi() < 1) {
                fprintf(stderr, "check-confine: no Landlock here, test_enforced skipped\n");
                return;
        }
        _cleanup_free_ char *d = tmpdir_new();
        mk(d, "proj", true);
        mk(d, "home", true);
        mk(d, "home/.ssh", true);
        mk(d, "home/.ssh/id", false);
        mk(d, "home/notes", false);
        _cleanup_free_ char *proj = nsr_path_join(d, "proj");
        _cleanup_free_ char *ssh = nsr_path_join(d, "home/.ssh");
        char *projects[] = { proj, NULL };
        char *hidden[] = { ssh, NULL };
        nsr_confine_paths cp = { .hidden = hidden, .projects = projects };
        nsr_landlock_rules r = { 0 };
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_confine_rules(&cp, &r, &err), 0);
        int fd = -1;
        nsr_landlock_info info;
        ck_assert_int_eq(nsr_landlock_build(&r, &fd, &info, &err), 0);
        nsr_confine_rules_done(&r);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || nsr_landlock_enforce(fd, &err) < 0)
                        _exit(10);
                _cleanup_free_ char *id = nsr_path_join(d, "home/.ssh/id");
                _cleanup_free_ char *notes = nsr_path_join(d, "home/notes");
                _cleanup_free_ char *newf = nsr_path_join(d, "proj/new");
                _cleanup_free_ char *outside = nsr_path_join(d, "home/new");
                if (try_open(id, O_RDONLY) != EACCES)
                        _exit(11); /* hidden */
                if (try_open(notes, O_RDONLY) != 0)
                        _exit(12); /* a sibling of the hidden dir */
                if (try_open(newf, O_WRONLY | O_CREAT) != 0)
                        _exit(13); /* the project is writable */
                if (try_open(outside, O_WRONLY | O_CREAT) != EACCES)
                        _exit(14); /* nothing else is */
                if (try_open("/dev/null", O_WRONLY | O_TRUNC) != 0)
                        _exit(15);
                _exit(0);
        }
        close(fd);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
        rm_tree(d);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("confine");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_allowlist_fake);
        tcase_add_test(tc, test_allowlist_errors);
        tcase_add_test(tc, test_allowlist_real);
        tcase_add_test(tc, test_rules_around);
        tcase_add_test(tc, test_rules);
        tcase_add_test(tc, test_enforced);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
