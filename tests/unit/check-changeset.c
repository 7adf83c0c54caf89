/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <sys/stat.h>

#include "txn/changeset.h"
#include "unit.h"

static nsr_change mk(const char *path, nsr_change_kind kind, nsr_entry_type type) {
        return (nsr_change){ .path = (char *) path, .kind = kind, .type = type, .mode = 0644 };
}

static void add_ok(nsr_changeset *cs, const char *path, nsr_change_kind kind, nsr_entry_type type) {
        nsr_error err = { 0 };
        nsr_change c = mk(path, kind, type);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
}

START_TEST(test_new_free) {
        ck_assert_ptr_null(nsr_changeset_free(NULL));
        nsr_changeset *cs = nsr_changeset_new();
        ck_assert_uint_eq(nsr_changeset_size(cs), 0);
        ck_assert(nsr_changeset_is_empty(cs));
        ck_assert_uint_eq(nsr_changeset_size(NULL), 0);
        ck_assert_uint_eq(nsr_changeset_count(NULL, NSR_CHANGE_CREATED), 0);
        ck_assert_ptr_null(nsr_changeset_lookup(NULL, "a"));
        ck_assert_ptr_null(nsr_changeset_free(cs));
}
END_TEST

START_TEST(test_add_counts_copies) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        nsr_error err = { 0 };
        char path[] = "dir/link";
        char target[] = "../t";
        nsr_change c = mk(path, NSR_CHANGE_CREATED, NSR_ENTRY_SYMLINK);
        c.target = target;
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
        /* The set owns copies. */
        path[0] = 'X';
        target[0] = 'X';
        ck_assert_str_eq(cs->changes[0].path, "dir/link");
        ck_assert_str_eq(cs->changes[0].target, "../t");

        add_ok(cs, "a", NSR_CHANGE_MODIFIED, NSR_ENTRY_FILE);
        add_ok(cs, "b", NSR_CHANGE_DELETED, NSR_ENTRY_DIR);
        add_ok(cs, "c", NSR_CHANGE_DELETED, NSR_ENTRY_FILE);
        add_ok(cs, "d", NSR_CHANGE_TYPE_CHANGED, NSR_ENTRY_DIR);
        add_ok(cs, "e", NSR_CHANGE_METADATA_CHANGED, NSR_ENTRY_OTHER);
        ck_assert_uint_eq(nsr_changeset_size(cs), 6);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_CREATED), 1);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_MODIFIED), 1);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_DELETED), 2);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_TYPE_CHANGED), 1);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_METADATA_CHANGED), 1);
        ck_assert_uint_eq(nsr_changeset_count(cs, _NSR_CHANGE_KIND_MAX), 0);
        ck_assert_uint_eq(nsr_changeset_count(cs, _NSR_CHANGE_KIND_INVALID), 0);
}
END_TEST

START_TEST(test_add_rejects) {
        static const char *const bad[] = {
                "", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/../b", "a/..", "../a", "/",
        };
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                nsr_error err = { 0 };
                nsr_change c = mk(bad[i], NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
                ck_assert_msg(!nsr_changeset_path_is_valid(bad[i]), "'%s' accepted", bad[i]);
                ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
                ck_assert_int_eq(err.code, EINVAL);
                ck_assert_ptr_nonnull(strstr(err.msg, "invalid change path"));
        }
        nsr_error err = { 0 };
        nsr_change c = mk(NULL, NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        /* Unprintable bytes in the message are escaped. */
        c = mk("a//\n\xff", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        ck_assert_str_eq(err.msg, "invalid change path 'a//\\n\\xff'");

        c = mk("a", _NSR_CHANGE_KIND_MAX, NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        c = mk("a", _NSR_CHANGE_KIND_INVALID, NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        c = mk("a", NSR_CHANGE_CREATED, _NSR_ENTRY_TYPE_MAX);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        c = mk("a", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        c.old.exists = true;
        c.old.type = _NSR_ENTRY_TYPE_INVALID;
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        c = mk("a", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        c.target = (char *) "x";
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -EINVAL);
        ck_assert_uint_eq(nsr_changeset_size(cs), 0);

        /* Any byte but NUL and '/' is fine in a name. */
        ck_assert(nsr_changeset_path_is_valid("a\nb/\xff\xfe/...\x01/.a/a."));
}
END_TEST

START_TEST(test_root_mode) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        nsr_change r = mk(".", NSR_CHANGE_METADATA_CHANGED, NSR_ENTRY_DIR);
        r.meta = NSR_META_MODE;
        r.mode = 0700;
        r.old = (nsr_entry_old){ .exists = true, .type = NSR_ENTRY_DIR, .mode = 0755 };
        ck_assert(!nsr_changeset_path_is_valid("."));
        ck_assert(nsr_changeset_path_is_root("."));
        ck_assert(!nsr_changeset_path_is_root("./"));
        ck_assert(nsr_change_is_root_mode(&r));
        /* Any other change of the root is refused: it would need a parent. */
        nsr_change bad[6];
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                bad[i] = r;
        bad[0].kind = NSR_CHANGE_DELETED;
        bad[1].kind = NSR_CHANGE_MODIFIED;
        bad[2].meta = NSR_META_MODE | NSR_META_OWNER;
        bad[3].meta = NSR_META_XATTRS;
        bad[4].old.exists = false;
        bad[5].type = NSR_ENTRY_FILE;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                nsr_error err = { 0 };
                ck_assert_msg(nsr_changeset_add(cs, &bad[i], &err) == -EINVAL, "root change %zu accepted", i);
                ck_assert_ptr_nonnull(strstr(err.msg, "invalid change path '.'"));
        }
        ck_assert_uint_eq(nsr_changeset_size(cs), 0);
        /* The root sorts first, before names with bytes below '.'. */
        add_ok(cs, "-a", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add_ok(cs, "!", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_changeset_add(cs, &r, &err), 0);
        add_ok(cs, "a", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_changeset_sort(cs, &err), 0);
        ck_assert_str_eq(cs->changes[0].path, ".");
        ck_assert_str_eq(cs->changes[1].path, "!");
        ck_assert_ptr_eq(nsr_changeset_lookup(cs, "."), &cs->changes[0]);
        ck_assert_ptr_eq(nsr_changeset_lookup(cs, "a"), &cs->changes[3]);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_METADATA_CHANGED), 1);
        /* Twice is a duplicate like any other. */
        ck_assert_int_eq(nsr_changeset_add(cs, &r, &err), 0);
        ck_assert_int_eq(nsr_changeset_sort(cs, &err), -EEXIST);
}
END_TEST

START_TEST(test_limit) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        ck_assert_uint_eq(cs->max_changes, NSR_CHANGESET_MAX_CHANGES_DEFAULT);
        cs->max_changes = 2;
        add_ok(cs, "a", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add_ok(cs, "b", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        nsr_error err = { 0 };
        nsr_change c = mk("c", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), -E2BIG);
        ck_assert_str_eq(err.msg, "more than 2 changes");
        ck_assert_uint_eq(nsr_changeset_size(cs), 2);
}
END_TEST

static char *joined(const nsr_changeset *cs) {
        char *buf = nsr_strdup("");
        for (size_t i = 0; i < cs->n_changes; i++) {
                char *n = nsr_asprintf("%s%s|", buf, cs->changes[i].path);
                free(buf);
                buf = n;
        }
        return buf;
}

START_TEST(test_sort) {
        static const char *const in[] = {
                "b", "a-b", "a/z", "a", "a/b/c", "a/b", "\xff", "a\nb", "a.b", "B", "a/b-c", "a/b/\x01",
        };
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        for (size_t i = 0; i < ELEMENTSOF(in); i++)
                add_ok(cs, in[i], NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert(!cs->sorted);
        /* Unsorted lookups work too (linear). */
        ck_assert_ptr_nonnull(nsr_changeset_lookup(cs, "a/b/c"));
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_changeset_sort(cs, &err), 0);
        ck_assert(cs->sorted);
        /* Component-wise: a dir's subtree follows it, before its siblings
         * "a-b" and "a.b"; bytes compare unsigned (0xff last). */
        _cleanup_free_ char *got = joined(cs);
        ck_assert_str_eq(got, "B|a|a/b|a/b/\x01|a/b/c|a/b-c|a/z|a\nb|a-b|a.b|b|\xff|");
        for (size_t i = 0; i < ELEMENTSOF(in); i++) {
                const nsr_change *c = nsr_changeset_lookup(cs, in[i]);
                ck_assert_ptr_nonnull(c);
                ck_assert_str_eq(c->path, in[i]);
        }
        ck_assert_ptr_null(nsr_changeset_lookup(cs, "a/b/d"));
        ck_assert_ptr_null(nsr_changeset_lookup(cs, "0"));
        ck_assert_ptr_null(nsr_changeset_lookup(cs, "\xff\xff"));
        ck_assert_ptr_null(nsr_changeset_lookup(cs, ""));
}
END_TEST

START_TEST(test_sorted_while_in_order) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        add_ok(cs, "a", NSR_CHANGE_CREATED, NSR_ENTRY_DIR);
        add_ok(cs, "a/b", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add_ok(cs, "a-c", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert(cs->sorted);
        add_ok(cs, "a/c", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        ck_assert(!cs->sorted);
}
END_TEST

START_TEST(test_sort_duplicates) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        add_ok(cs, "x/\n", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add_ok(cs, "a", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add_ok(cs, "x/\n", NSR_CHANGE_DELETED, NSR_ENTRY_FILE);
        nsr_error err = { 0 };
        ck_assert_int_eq(nsr_changeset_sort(cs, &err), -EEXIST);
        ck_assert_str_eq(err.msg, "two changes for the same path 'x/\\n'");
}
END_TEST

static bool is_deleted(const nsr_change *c, void *userdata) {
        (*(int *) userdata)++;
        return c->kind == NSR_CHANGE_DELETED;
}

START_TEST(test_split) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        add_ok(cs, "a", NSR_CHANGE_DELETED, NSR_ENTRY_FILE);
        add_ok(cs, "b", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add_ok(cs, "c", NSR_CHANGE_DELETED, NSR_ENTRY_DIR);
        add_ok(cs, "d", NSR_CHANGE_MODIFIED, NSR_ENTRY_FILE);
        _cleanup_(nsr_changeset_freep) nsr_changeset *moved = NULL;
        int calls = 0;
        ck_assert_int_eq(nsr_changeset_split(cs, is_deleted, &calls, &moved), 0);
        ck_assert_int_eq(calls, 4);
        _cleanup_free_ char *a = joined(cs);
        _cleanup_free_ char *b = joined(moved);
        ck_assert_str_eq(a, "b|d|");
        ck_assert_str_eq(b, "a|c|");
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_DELETED), 0);
        ck_assert_uint_eq(nsr_changeset_count(cs, NSR_CHANGE_CREATED), 1);
        ck_assert_uint_eq(nsr_changeset_count(moved, NSR_CHANGE_DELETED), 2);
        ck_assert(cs->sorted && moved->sorted);
        ck_assert_ptr_nonnull(nsr_changeset_lookup(moved, "c"));
        ck_assert_ptr_null(nsr_changeset_lookup(cs, "c"));

        /* Nothing matches: an empty set. */
        _cleanup_(nsr_changeset_freep) nsr_changeset *none = NULL;
        ck_assert_int_eq(nsr_changeset_split(cs, is_deleted, &calls, &none), 0);
        ck_assert(nsr_changeset_is_empty(none));
        ck_assert_uint_eq(nsr_changeset_size(cs), 2);
}
END_TEST

START_TEST(test_names) {
        static const char *const kinds[] = { "created", "modified", "deleted", "type_changed", "metadata_changed" };
        static const char *const types[] = { "file", "dir", "symlink", "other" };
        ck_assert_int_eq(ELEMENTSOF(kinds), _NSR_CHANGE_KIND_MAX);
        ck_assert_int_eq(ELEMENTSOF(types), _NSR_ENTRY_TYPE_MAX);
        for (int i = 0; i < _NSR_CHANGE_KIND_MAX; i++) {
                ck_assert_str_eq(nsr_change_kind_to_string((nsr_change_kind) i), kinds[i]);
                ck_assert_int_eq(nsr_change_kind_from_string(kinds[i]), i);
        }
        for (int i = 0; i < _NSR_ENTRY_TYPE_MAX; i++) {
                ck_assert_str_eq(nsr_entry_type_to_string((nsr_entry_type) i), types[i]);
                ck_assert_int_eq(nsr_entry_type_from_string(types[i]), i);
        }
        ck_assert_ptr_null(nsr_change_kind_to_string(_NSR_CHANGE_KIND_MAX));
        ck_assert_ptr_null(nsr_change_kind_to_string(_NSR_CHANGE_KIND_INVALID));
        ck_assert_ptr_null(nsr_entry_type_to_string(_NSR_ENTRY_TYPE_MAX));
        ck_assert_int_eq(nsr_change_kind_from_string("Created"), _NSR_CHANGE_KIND_INVALID);
        ck_assert_int_eq(nsr_change_kind_from_string(NULL), _NSR_CHANGE_KIND_INVALID);
        ck_assert_int_eq(nsr_entry_type_from_string("directory"), _NSR_ENTRY_TYPE_INVALID);

        ck_assert_int_eq(nsr_entry_type_from_mode(S_IFREG | 0644), NSR_ENTRY_FILE);
        ck_assert_int_eq(nsr_entry_type_from_mode(S_IFDIR), NSR_ENTRY_DIR);
        ck_assert_int_eq(nsr_entry_type_from_mode(S_IFLNK | 0777), NSR_ENTRY_SYMLINK);
        ck_assert_int_eq(nsr_entry_type_from_mode(S_IFIFO), NSR_ENTRY_OTHER);
        ck_assert_int_eq(nsr_entry_type_from_mode(S_IFCHR), NSR_ENTRY_OTHER);
        ck_assert_int_eq(nsr_entry_type_from_mode(S_IFSOCK), NSR_ENTRY_OTHER);
}
END_TEST

START_TEST(test_makes_special) {
        for (int k = 0; k < _NSR_CHANGE_KIND_MAX; k++)
                for (int t = 0; t < _NSR_ENTRY_TYPE_MAX; t++) {
                        nsr_change c = { .path = (char *) "x", .kind = k, .type = t };
                        bool want = k != NSR_CHANGE_DELETED && t == NSR_ENTRY_OTHER;
                        ck_assert_msg(nsr_change_makes_special(&c) == want, "kind %d type %d", k, t);
                }
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("changeset");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_new_free);
        tcase_add_test(tc, test_add_counts_copies);
        tcase_add_test(tc, test_add_rejects);
        tcase_add_test(tc, test_root_mode);
        tcase_add_test(tc, test_limit);
        tcase_add_test(tc, test_sort);
        tcase_add_test(tc, test_sorted_while_in_order);
        tcase_add_test(tc, test_sort_duplicates);
        tcase_add_test(tc, test_split);
        tcase_add_test(tc, test_names);
        tcase_add_test(tc, test_makes_special);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
