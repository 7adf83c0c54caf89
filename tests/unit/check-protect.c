/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* protect.c: the git allow-list, protect.list matching, the mode rule,
 * the xattr rule and the git config reducer. */
#include "config.h"

#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "project/protect.h"
#include "unit.h"

static nsr_protect_verdict git(const char *rel, bool is_new, nsr_entry_type t, bool deleted) {
        const char *why = NULL;
        nsr_protect_verdict v = nsr_protect_git_entry(rel, is_new, t, deleted, &why);
        if (v != NSR_PROTECT_APPLY)
                ck_assert_ptr_nonnull(why);
        return v;
}

START_TEST(test_git_allow_list) {
        const nsr_entry_type F = NSR_ENTRY_FILE, D = NSR_ENTRY_DIR, L = NSR_ENTRY_SYMLINK;
        static const char *const allowed[] = {
                "objects",
                "objects/ab/cdef",
                "objects/pack/pack-1.pack",
                "objects/info/packs",
                "refs",
                "refs/heads/main",
                "logs/HEAD",
                "logs/refs/heads/x",
                "index",
                "HEAD",
                "ORIG_HEAD",
                "FETCH_HEAD",
                "MERGE_HEAD",
                "packed-refs",
                "COMMIT_EDITMSG",
                "shallow",
                "reftable/t.ref",
                "sharedindex.abc",
                "lfs/objects/aa/bb",
        };
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                ck_assert_msg(git(allowed[i], false, F, false) == NSR_PROTECT_APPLY, "%s", allowed[i]);
                ck_assert_msg(git(allowed[i], true, F, false) == NSR_PROTECT_APPLY, "%s", allowed[i]);
        }
        static const char *const dropped[] = {
                "hooks",
                "hooks/pre-commit",
                "config",
                "config.worktree",
                "commondir",
                "gitdir",
                "objects/info/alternates",
                "objects/info/http-alternates",
                "info",
                "info/attributes",
                "info/exclude",
                "info/grafts",
                "info/sparse-checkout",
                "modules/a/config",
                "modules/a/b/config",
                "modules/a/b/objects/x",
                "worktrees/w/HEAD",
                "worktrees/w/commondir",
                "rebase-merge/git-rebase-todo",
                "rebase-apply/x",
                "sequencer/todo",
                "branches/origin",
                "remotes/origin",
                "gc.pid",
                "hooksx",
                "configx",
                "lfs/tmp/x",
                "index.lock",
        };
        for (size_t i = 0; i < ELEMENTSOF(dropped); i++)
                ck_assert_msg(git(dropped[i], false, F, false) == NSR_PROTECT_DROP, "%s", dropped[i]);
        /* Deletions are dropped too where the entry is protected (nothing
         * protected changes at all), but may delete allowed entries. */
        ck_assert(git("hooks/pre-commit", false, F, true) == NSR_PROTECT_DROP);
        ck_assert(git("refs/heads/x", false, F, true) == NSR_PROTECT_APPLY);
        /* A symlink anywhere inside is dropped; removing one is not. */
        ck_assert(git("refs/heads/x", false, L, false) == NSR_PROTECT_DROP);
        ck_assert(git("HEAD", true, L, false) == NSR_PROTECT_DROP);
        ck_assert(git("objects/pack", false, L, false) == NSR_PROTECT_DROP);
        ck_assert(git("objects/pack", false, L, true) == NSR_PROTECT_APPLY);
        ck_assert(git("objects", false, D, false) == NSR_PROTECT_APPLY);
        /* A new repository's config is reduced; an old one's dropped. */
        ck_assert(git("config", true, F, false) == NSR_PROTECT_REDUCE_CONFIG);
        ck_assert(git("config", false, F, false) == NSR_PROTECT_DROP);
        ck_assert(git("config", true, D, false) == NSR_PROTECT_DROP);
        ck_assert(git("config", true, F, true) == NSR_PROTECT_DROP);
        ck_assert(git("hooks/post-checkout", true, F, false) == NSR_PROTECT_DROP);
        ck_assert(git("modules/x/config", true, F, false) == NSR_PROTECT_DROP);
}
END_TEST

static nsr_protect_verdict cls(const nsr_protect_rules *r, const char *path, nsr_change_kind k, nsr_entry_type t) {
        nsr_change c = { .path = (char *) path, .kind = k, .type = t };
        const char *why = NULL;
        return nsr_protect_classify(r, &c, &why);
}

START_TEST(test_classify) {
        nsr_protect_gitdir g[] = {
                { .path = (char *) ".git", .is_new = false },
                { .path = (char *) "a/b/.git", .is_new = true },
                { .path = (char *) "store", .is_new = true },
        };
        char *hooks[] = { (char *) ".githooks", NULL };
        char *pats[] = { (char *) ".vscode/tasks.json", (char *) "**/.envrc", (char *) ".claude/", NULL };
        nsr_protect_rules r = { .gitdirs = g, .n_gitdirs = 3, .hooks = hooks, .patterns = pats };
        const nsr_change_kind C = NSR_CHANGE_CREATED, M = NSR_CHANGE_MODIFIED, X = NSR_CHANGE_DELETED,
                              T = NSR_CHANGE_TYPE_CHANGED;
        const nsr_entry_type F = NSR_ENTRY_FILE, D = NSR_ENTRY_DIR, L = NSR_ENTRY_SYMLINK;
        ck_assert(cls(&r, ".git", M, D) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, ".git/hooks/pre-commit", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".git/config", M, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".git/objects/ab/cd", C, F) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, ".git/index", M, F) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, "a/b/.git/config", C, F) == NSR_PROTECT_REDUCE_CONFIG);
        ck_assert(cls(&r, "a/b/.git/hooks", C, D) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, "a/b/.git", C, D) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, "store/config", C, F) == NSR_PROTECT_REDUCE_CONFIG);
        ck_assert(cls(&r, "store/hooks/x", C, F) == NSR_PROTECT_DROP);
        /* A .git that is or becomes a file or a symlink: a pointer. */
        ck_assert(cls(&r, "sub/.git", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".git", T, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, "x/.git", C, L) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, "x/.git", X, F) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, ".gitignore", C, F) == NSR_PROTECT_APPLY);
        /* core.hooksPath and protect.list. */
        ck_assert(cls(&r, ".githooks", C, D) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".githooks/pre-commit", M, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".githooksx", M, F) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, ".vscode/tasks.json", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".vscode/notes", C, F) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, "deep/er/.envrc", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, ".claude/commands/x.md", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&r, "src/main.c", M, F) == NSR_PROTECT_APPLY);
        /* The project root as a git dir (a bare repository project). */
        nsr_protect_gitdir root[] = { { .path = (char *) "", .is_new = false } };
        nsr_protect_rules rr = { .gitdirs = root, .n_gitdirs = 1 };
        ck_assert(cls(&rr, "hooks/update", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&rr, "refs/heads/x", C, F) == NSR_PROTECT_APPLY);
        /* core.hooksPath = the project root: its hook names only. */
        char *roothooks[] = { (char *) "", NULL };
        nsr_protect_rules rh = { .hooks = roothooks };
        ck_assert(cls(&rh, "pre-commit", C, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&rh, "post-checkout", M, F) == NSR_PROTECT_DROP);
        ck_assert(cls(&rh, "README", C, F) == NSR_PROTECT_APPLY);
        ck_assert(cls(&rh, "src/pre-commit", C, F) == NSR_PROTECT_APPLY);
}
END_TEST

/* issue 23.5: a fifo, socket or device node never reaches a project,
 * whatever its name; deleting one does. */
START_TEST(test_classify_special) {
        nsr_protect_gitdir g[] = { { .path = (char *) ".git", .is_new = false } };
        nsr_protect_rules r = { .gitdirs = g, .n_gitdirs = 1 };
        const nsr_entry_type O = NSR_ENTRY_OTHER;
        const nsr_change_kind kinds[] = { NSR_CHANGE_CREATED, NSR_CHANGE_MODIFIED, NSR_CHANGE_TYPE_CHANGED,
                                          NSR_CHANGE_METADATA_CHANGED };
        const char *paths[] = { "package.json", ".git/HEAD", ".git/objects/ab/cd", "src/sock", ".git" };
        for (size_t k = 0; k < ELEMENTSOF(kinds); k++)
                for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                        nsr_change c = { .path = (char *) paths[i], .kind = kinds[k], .type = O };
                        const char *why = NULL;
                        ck_assert(nsr_protect_classify(&r, &c, &why) == NSR_PROTECT_DROP);
                        ck_assert_ptr_nonnull(strstr(why, "fifo, socket or device node"));
                }
        ck_assert(cls(&r, "old.fifo", NSR_CHANGE_DELETED, O) == NSR_PROTECT_APPLY);
        ck_assert(cls(&r, "package.json", NSR_CHANGE_TYPE_CHANGED, NSR_ENTRY_FILE) == NSR_PROTECT_APPLY);
}
END_TEST

START_TEST(test_list_match) {
        char *pats[] = { (char *) ".vscode/tasks.json", (char *) "**/.envrc", (char *) ".idea/runConfigurations/",
                         (char *) "*.code-workspace", NULL };
        ck_assert(nsr_protect_list_match(pats, ".vscode/tasks.json"));
        ck_assert(!nsr_protect_list_match(pats, "sub/.vscode/tasks.json"));
        ck_assert(nsr_protect_list_match(pats, ".envrc"));
        ck_assert(nsr_protect_list_match(pats, "a/b/.envrc"));
        ck_assert(!nsr_protect_list_match(pats, "a/b/.envrc2"));
        ck_assert(nsr_protect_list_match(pats, ".idea/runConfigurations"));
        ck_assert(nsr_protect_list_match(pats, ".idea/runConfigurations/App.xml"));
        ck_assert(nsr_protect_list_match(pats, "x.code-workspace"));
        ck_assert(!nsr_protect_list_match(pats, "d/x.code-workspace"));
        /* A dir below a protected path is protected with it. */
        ck_assert(nsr_protect_list_match(pats, ".vscode/tasks.json/x"));
        ck_assert(!nsr_protect_list_match(pats, ".vscode"));
        ck_assert(!nsr_protect_list_match(NULL, ".envrc"));

        /* The survey's shapes: a glob at any depth, a dir under .config at
         * any depth, a root-only name, a whole dir at any depth. */
        char *survey[] = { (char *) "**/.lefthook.*", (char *) "**/.config/mise/", (char *) "default.nix",
                           (char *) "**/.vscode/",    (char *) "**/.env.*.local",  NULL };
        ck_assert(nsr_protect_list_match(survey, ".lefthook.yml"));
        ck_assert(nsr_protect_list_match(survey, "a/b/.lefthook.toml"));
        ck_assert(!nsr_protect_list_match(survey, "a/lefthook.yml"));
        ck_assert(nsr_protect_list_match(survey, ".config/mise/conf.d/x.toml"));
        ck_assert(nsr_protect_list_match(survey, "pkg/.config/mise/config.toml"));
        ck_assert(!nsr_protect_list_match(survey, "pkg/config/mise/config.toml"));
        ck_assert(nsr_protect_list_match(survey, "default.nix"));
        ck_assert(!nsr_protect_list_match(survey, "sub/default.nix"));
        ck_assert(nsr_protect_list_match(survey, "a/b/.vscode/tasks.json"));
        ck_assert(nsr_protect_list_match(survey, "a/b/.vscode"));
        ck_assert(!nsr_protect_list_match(survey, "a/b/.vscode-notes"));
        ck_assert(nsr_protect_list_match(survey, "web/.env.production.local"));
        ck_assert(!nsr_protect_list_match(survey, "web/.env.example"));
        /* Globs keep fnmatch(3)'s meaning: a "*" in brackets or escaped is
         * a literal star. */
        char *odd[] = { (char *) "**/a[*]", (char *) "b\\*c", (char *) "**/*.d?", NULL };
        ck_assert(nsr_protect_list_match(odd, "x/a*"));
        ck_assert(!nsr_protect_list_match(odd, "x/ab"));
        ck_assert(nsr_protect_list_match(odd, "b*c"));
        ck_assert(!nsr_protect_list_match(odd, "bxc"));
        ck_assert(nsr_protect_list_match(odd, "p/q.dx"));
        ck_assert(!nsr_protect_list_match(odd, "p/q.x"));
        /* Any depth means any: a path deeper and longer than PATH_MAX. */
        size_t depth = 3000;
        _cleanup_free_ char *deep = nsr_malloc0(depth * 2 + 32);
        for (size_t i = 0; i < depth; i++)
                memcpy(deep + 2 * i, "a/", 2);
        strcpy(deep + 2 * depth, ".vscode/tasks.json");
        ck_assert(nsr_protect_list_match(survey, deep));
        strcpy(deep + 2 * depth, ".vscodex/tasks.json");
        ck_assert(!nsr_protect_list_match(survey, deep));
}
END_TEST

START_TEST(test_config_match) {
        _cleanup_free_ char *esc = nsr_protect_escape("conf/a[1]*.profile");
        ck_assert_str_eq(esc, "conf/a\\[1\\]\\*.profile");
        char *pats[] = { (char *) "conf/ci.profile", esc, (char *) "pol/*.policy", (char *) ".config/nsrun", NULL };
        /* the files, and what lies below a protected dir */
        ck_assert(nsr_protect_config_match(pats, "conf/ci.profile", false, NSR_ENTRY_FILE));
        ck_assert(nsr_protect_config_match(pats, "conf/ci.profile", true, NSR_ENTRY_FILE));
        ck_assert(nsr_protect_config_match(pats, "conf/a[1]*.profile", false, NSR_ENTRY_FILE));
        ck_assert(!nsr_protect_config_match(pats, "conf/a1x.profile", false, NSR_ENTRY_FILE));
        ck_assert(nsr_protect_config_match(pats, "pol/default.policy", false, NSR_ENTRY_FILE));
        ck_assert(!nsr_protect_config_match(pats, "pol/notes.txt", false, NSR_ENTRY_FILE));
        ck_assert(nsr_protect_config_match(pats, ".config/nsrun/profiles/strict.profile", false, NSR_ENTRY_FILE));
        /* the files beside them are the run's */
        ck_assert(!nsr_protect_config_match(pats, "conf/other", false, NSR_ENTRY_FILE));
        /* an ancestor dir: changed as a dir is fine; deleted, or replaced
         * by a symlink or file, is not */
        ck_assert(!nsr_protect_config_match(pats, "conf", false, NSR_ENTRY_DIR));
        ck_assert(nsr_protect_config_match(pats, "conf", true, NSR_ENTRY_DIR));
        ck_assert(nsr_protect_config_match(pats, "conf", false, NSR_ENTRY_SYMLINK));
        ck_assert(nsr_protect_config_match(pats, ".config", false, NSR_ENTRY_FILE));
        ck_assert(nsr_protect_config_match(pats, "pol", false, NSR_ENTRY_SYMLINK));
        ck_assert(!nsr_protect_config_match(pats, "other", true, NSR_ENTRY_DIR));
        ck_assert(!nsr_protect_config_match(NULL, "conf", true, NSR_ENTRY_DIR));

        /* and classify drops them with the reason */
        nsr_protect_rules rules = { .config = pats };
        nsr_change c = { .path = (char *) "conf/ci.profile", .kind = NSR_CHANGE_MODIFIED, .type = NSR_ENTRY_FILE };
        const char *why = NULL;
        ck_assert_int_eq(nsr_protect_classify(&rules, &c, &why), NSR_PROTECT_DROP);
        ck_assert_msg(why && strstr(why, "own configuration"), "%s", why ? why : "(null)");
}
END_TEST

START_TEST(test_mode) {
        /* An existing entry: never g+w, o+w or special bits it lacked. */
        ck_assert_uint_eq(nsr_protect_mode(0777, true, 0755, 022), 0755);
        ck_assert_uint_eq(nsr_protect_mode(0666, true, 0644, 022), 0644);
        ck_assert_uint_eq(nsr_protect_mode(0755, true, 0644, 022), 0755); /* chmod +x */
        ck_assert_uint_eq(nsr_protect_mode(0775, true, 0664, 002), 0775);
        ck_assert_uint_eq(nsr_protect_mode(0775, true, 0644, 002), 0755); /* no new g+w even if umask allows */
        ck_assert_uint_eq(nsr_protect_mode(04755, true, 0755, 022), 0755);
        ck_assert_uint_eq(nsr_protect_mode(01777, true, 01777, 022), 01777); /* kept what it had */
        ck_assert_uint_eq(nsr_protect_mode(0700, true, 0777, 022), 0700);    /* narrowing is fine */
        ck_assert_uint_eq(nsr_protect_mode(0755, true, 0600, 077), 0700);    /* umask 077: no new r-x */
        /* A new entry: the umask, no special bits. */
        ck_assert_uint_eq(nsr_protect_mode(0777, false, 0, 022), 0755);
        ck_assert_uint_eq(nsr_protect_mode(02777, false, 0, 022), 0755);
        ck_assert_uint_eq(nsr_protect_mode(0666, false, 0, 002), 0664);
        ck_assert_uint_eq(nsr_protect_mode(0666, false, 0, 077), 0600);
}
END_TEST

START_TEST(test_xattrs) {
        ck_assert(nsr_protect_xattr_allowed("user.mime_type"));
        ck_assert(!nsr_protect_xattr_allowed("user.overlay.origin"));
        ck_assert(!nsr_protect_xattr_allowed("system.posix_acl_access"));
        ck_assert(!nsr_protect_xattr_allowed("system.posix_acl_default"));
        ck_assert(!nsr_protect_xattr_allowed("trusted.x"));
        ck_assert(!nsr_protect_xattr_allowed("security.capability"));
        ck_assert(!nsr_protect_xattr_allowed("security.ima"));
        ck_assert(nsr_protect_xattr_allowed("security.selinux"));
}
END_TEST

static char *reduce(const char *in, size_t *dropped) {
        char *out = NULL;
        ck_assert_int_eq(nsr_protect_git_config_reduce(in, strlen(in), &out, dropped), 0);
        ck_assert_ptr_nonnull(out);
        return out;
}

#define HDR "# reduced by nsrun to keys that run nothing\n"

START_TEST(test_config_reduce) {
        size_t dropped = 0;
        _cleanup_free_ char *a = reduce("[core]\n"
                                        "\trepositoryformatversion = 0\n"
                                        "\tfilemode = true\n"
                                        "\tbare = false\n"
                                        "\tlogallrefupdates = true\n"
                                        "\tfsmonitor = touch /tmp/pwned\n"
                                        "\tsshCommand = evil\n"
                                        "\tpager = evil\n"
                                        "\thooksPath = /tmp\n"
                                        "\tworktree = ../../x\n"
                                        "[remote \"origin\"]\n"
                                        "\turl = https://example.invalid/r.git\n"
                                        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
                                        "\tuploadpack = evil\n"
                                        "[branch \"main\"]\n"
                                        "\tremote = origin\n"
                                        "\tmerge = refs/heads/main\n"
                                        "[alias]\n"
                                        "\tst = !evil\n"
                                        "[include]\n"
                                        "\tpath = /tmp/evil\n"
                                        "[includeIf \"gitdir:/\"]\n"
                                        "\tpath = /tmp/evil\n"
                                        "[filter \"x\"]\n"
                                        "\tclean = evil\n",
                                        &dropped);
        ck_assert_str_eq(a, HDR "[core]\n"
                                "\trepositoryformatversion = 0\n"
                                "\tfilemode = true\n"
                                "\tbare = false\n"
                                "\tlogallrefupdates = true\n"
                                "[remote \"origin\"]\n"
                                "\turl = https://example.invalid/r.git\n"
                                "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
                                "[branch \"main\"]\n"
                                "\tremote = origin\n"
                                "\tmerge = refs/heads/main\n");
        ck_assert_uint_eq(dropped, 10);

        /* Odd lines: never interpreted. */
        _cleanup_free_ char *b = reduce("[core]\n"
                                        "\tbare = \"fa\\\"lse\"\n" /* escapes */
                                        "\tfilemode = true \\\n"   /* a continued line */
                                        "\tfsmonitor = evil\n"
                                        "\tsymlinks = true ; comment\n"      /* a comment in the value */
                                        "\tignorecase = \"true\"\n"          /* plainly quoted: fine */
                                        "\tprecomposeunicode = yes\x1b[2J\n" /* control bytes */
                                        "[core] fsmonitor = evil\n"          /* a key after a header */
                                        "\tbare = true\n"
                                        "[remote \"a\\\"b\"]\n" /* escape in a subsection */
                                        "\turl = x\n"
                                        "[remote \"ext\"]\n"
                                        "\turl = ext::sh -c evil\n"
                                        "\turl = ext::sh\n"
                                        "\turl = -uevil\n"
                                        "\turl = fd::3\n"
                                        "[remote.old]\n" /* the old [a.b] form */
                                        "\turl = x\n"
                                        "[extensions]\n"
                                        "\tobjectformat = sha256\n"
                                        "\tworktreeconfig = true\n"
                                        "[core]\n"
                                        "\trepositoryformatversion = 7\n"
                                        "\tbare\n",
                                        &dropped);
        ck_assert_str_eq(b, HDR "[core]\n"
                                "\tignorecase = true\n"
                                "[extensions]\n"
                                "\tobjectformat = sha256\n"
                                "[core]\n"
                                "\tbare = true\n");
        ck_assert_uint_gt(dropped, 10);

        _cleanup_free_ char *c = reduce("", &dropped);
        ck_assert_str_eq(c, HDR);
        ck_assert_uint_eq(dropped, 0);

        char *big = nsr_malloc0(((size_t) 1 << 20) + 2);
        memset(big, '#', ((size_t) 1 << 20) + 1);
        char *out = NULL;
        ck_assert_int_eq(nsr_protect_git_config_reduce(big, strlen(big), &out, &dropped), -E2BIG);
        free(big);
}
END_TEST

START_TEST(test_hooks_path) {
        const char *cfg = "[core]\n\tbare = false\n\thooksPath = .husky/_\n";
        _cleanup_free_ char *a = nsr_protect_git_config_hooks_path(cfg, strlen(cfg));
        ck_assert_str_eq(a, ".husky/_");
        /* git's own quoting of the host's (trusted) config is understood. */
        const char *q = "[Core]\n\tHooksPath = \"my hooks\" # comment\n";
        _cleanup_free_ char *b = nsr_protect_git_config_hooks_path(q, strlen(q));
        ck_assert_str_eq(b, "my hooks");
        const char *last = "[core]\nhookspath = a\n[core]\nhookspath = b\n";
        _cleanup_free_ char *c = nsr_protect_git_config_hooks_path(last, strlen(last));
        ck_assert_str_eq(c, "b");
        const char *none = "[remote \"core\"]\nhookspath = a\n";
        ck_assert_ptr_null(nsr_protect_git_config_hooks_path(none, strlen(none)));
}
END_TEST

START_TEST(test_summary) {
        ck_assert_ptr_null(nsr_protect_summary(NULL, false));
        nsr_protect_note notes[] = {
                { .path = (char *) ".git/hooks/a\x1b[2Jb", .action = NSR_PROTECT_DROPPED, .reason = "git runs hooks" },
                { .path = (char *) ".git/config", .action = NSR_PROTECT_DROPPED, .reason = "x" },
                { .path = (char *) "src",
                  .action = NSR_PROTECT_MODE_REDUCED,
                  .reason = "m",
                  .requested = 0777,
                  .mode = 0755 },
                { .path = (char *) "d",
                  .action = NSR_PROTECT_XATTR_DROPPED,
                  .reason = "x",
                  .detail = (char *) "system.posix_acl_default" },
        };
        nsr_protect_result res = { .notes = notes, .n_notes = ELEMENTSOF(notes) };
        _cleanup_free_ char *s = nsr_protect_summary(&res, false);
        /* The sandbox chose the name: no raw escape reaches the terminal. */
        ck_assert_ptr_null(strchr(s, '\x1b'));
        ck_assert_msg(strstr(s, "protected: 2 changes dropped, e.g. .git/hooks/a") == s, "%s", s);
        ck_assert_msg(strstr(s, "; 1 mode reduced, e.g. src (0777 requested, 0755 applied)"), "%s", s);
        ck_assert_msg(strstr(s, "; 1 xattr stripped, e.g. system.posix_acl_default on d"), "%s", s);
        _cleanup_free_ char *l = nsr_protect_summary(&res, true);
        ck_assert_msg(strstr(l, "2 changes reverted"), "%s", l);
}
END_TEST

START_TEST(test_action_names) {
        static const char *const names[] = { "dropped", "config_reduced", "mode_reduced", "xattr_dropped" };
        ck_assert_int_eq(ELEMENTSOF(names), _NSR_PROTECT_ACTION_MAX);
        for (int i = 0; i < _NSR_PROTECT_ACTION_MAX; i++)
                ck_assert_str_eq(nsr_protect_action_to_string((nsr_protect_action) i), names[i]);
        ck_assert_ptr_null(nsr_protect_action_to_string(_NSR_PROTECT_ACTION_MAX));
        ck_assert_ptr_null(nsr_protect_action_to_string(_NSR_PROTECT_ACTION_INVALID));
}
END_TEST

static Suite *protect_suite(void) {
        Suite *s = suite_create("protect");
        TCase *tc = tcase_create("protect");
        tcase_add_test(tc, test_git_allow_list);
        tcase_add_test(tc, test_classify);
        tcase_add_test(tc, test_classify_special);
        tcase_add_test(tc, test_list_match);
        tcase_add_test(tc, test_config_match);
        tcase_add_test(tc, test_mode);
        tcase_add_test(tc, test_xattrs);
        tcase_add_test(tc, test_config_reduce);
        tcase_add_test(tc, test_hooks_path);
        tcase_add_test(tc, test_summary);
        tcase_add_test(tc, test_action_names);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(protect_suite)
