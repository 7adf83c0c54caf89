/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <signal.h>

#include "base/json.h"
#include "project/report.h"
#include "unit.h"

static void add(nsr_changeset *cs, const char *path, nsr_change_kind kind, nsr_entry_type type) {
        nsr_error err = { 0 };
        nsr_change c = { .path = (char *) path, .kind = kind, .type = type, .mode = 0644, .size = 3 };
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
}

/* ---- summary and listing ------------------------------------------------ */

START_TEST(test_summary) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        _cleanup_free_ char *none = nsr_report_summary("/p", cs, "applied", "R");
        ck_assert_str_eq(none, "nsrun: /p: no changes; applied (run R)");
        _cleanup_free_ char *null_cs = nsr_report_summary("/p", NULL, "discarded", NULL);
        ck_assert_str_eq(null_cs, "nsrun: /p: no changes; discarded");

        add(cs, "a", NSR_CHANGE_DELETED, NSR_ENTRY_FILE);
        add(cs, "b", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add(cs, "c", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add(cs, "d", NSR_CHANGE_CREATED, NSR_ENTRY_DIR);
        add(cs, "e", NSR_CHANGE_MODIFIED, NSR_ENTRY_FILE);
        add(cs, "f", NSR_CHANGE_DELETED, NSR_ENTRY_DIR);
        _cleanup_free_ char *s = nsr_report_summary("/p", cs, "applied", "R");
        ck_assert_str_eq(s, "nsrun: /p: 3 created, 1 modified, 2 deleted; applied (run R)");

        add(cs, "g", NSR_CHANGE_TYPE_CHANGED, NSR_ENTRY_FILE);
        add(cs, "h", NSR_CHANGE_METADATA_CHANGED, NSR_ENTRY_FILE);
        add(cs, "i", NSR_CHANGE_METADATA_CHANGED, NSR_ENTRY_FILE);
        _cleanup_free_ char *all = nsr_report_summary("/home/u/proj", cs, "kept", "2026-11-25-001");
        ck_assert_str_eq(all, "nsrun: /home/u/proj: 3 created, 1 modified, 2 deleted, 1 type changed, "
                              "2 metadata changed; kept (run 2026-11-25-001)");
        _cleanup_free_ char *bare = nsr_report_summary("/p", cs, NULL, NULL);
        ck_assert_str_eq(bare, "nsrun: /p: 3 created, 1 modified, 2 deleted, 1 type changed, 2 metadata changed");
        /* A path with a newline or an escape sequence cannot forge lines. */
        _cleanup_free_ char *evil = nsr_report_summary("/p\n\x1b[2J\xff", NULL, "applied", "R");
        ck_assert_str_eq(evil, "nsrun: /p\\n\\x1b[2J\\xff: no changes; applied (run R)");
}
END_TEST

START_TEST(test_listing) {
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        _cleanup_free_ char *empty = nsr_report_listing(cs);
        ck_assert_str_eq(empty, "");
        nsr_error err = { 0 };
        add(cs, "src/new.c", NSR_CHANGE_CREATED, NSR_ENTRY_FILE);
        add(cs, "a\nb\xff", NSR_CHANGE_MODIFIED, NSR_ENTRY_FILE);
        nsr_change c = {
                .path = (char *) "build", .kind = NSR_CHANGE_DELETED, .type = NSR_ENTRY_DIR, .descendants = 120
        };
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "link",
                          .kind = NSR_CHANGE_MODIFIED,
                          .type = NSR_ENTRY_SYMLINK,
                          .target = (char *) "new\ttarget" };
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "x",
                          .kind = NSR_CHANGE_TYPE_CHANGED,
                          .type = NSR_ENTRY_DIR,
                          .old = { .exists = true, .type = NSR_ENTRY_FILE } };
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "run.sh",
                          .kind = NSR_CHANGE_METADATA_CHANGED,
                          .type = NSR_ENTRY_FILE,
                          .meta = NSR_META_MODE | NSR_META_MTIME };
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &err), 0);
        add(cs, "d", NSR_CHANGE_CREATED, NSR_ENTRY_DIR);
        _cleanup_free_ char *l = nsr_report_listing(cs);
        ck_assert_str_eq(l, "created          src/new.c\n"
                            "modified         a\\nb\\xff\n"
                            "deleted          build/ (120 entries below)\n"
                            "modified         link -> new\\ttarget\n"
                            "type_changed     x/ (was file)\n"
                            "metadata_changed run.sh (mode, mtime)\n"
                            "created          d/\n");
}
END_TEST

START_TEST(test_signal_names) {
        ck_assert_str_eq(nsr_report_signal_name(SIGHUP), "SIGHUP");
        ck_assert_str_eq(nsr_report_signal_name(SIGINT), "SIGINT");
        ck_assert_str_eq(nsr_report_signal_name(SIGKILL), "SIGKILL");
        ck_assert_str_eq(nsr_report_signal_name(SIGSEGV), "SIGSEGV");
        ck_assert_str_eq(nsr_report_signal_name(SIGTERM), "SIGTERM");
        ck_assert_str_eq(nsr_report_signal_name(SIGCHLD), "SIGCHLD");
        ck_assert_str_eq(nsr_report_signal_name(SIGSYS), "SIGSYS");
        for (int i = 1; i <= 31; i++) {
                const char *n = nsr_report_signal_name(i);
                ck_assert_msg(n && nsr_startswith(n, "SIG"), "signal %d has no name", i);
                /* glibc calls 29 "POLL"; Linux tools say SIGIO. */
                ck_assert_str_eq(n + 3, i == SIGIO ? "IO" : sigabbrev_np(i));
        }
        ck_assert_ptr_null(nsr_report_signal_name(0));
        ck_assert_ptr_null(nsr_report_signal_name(-1));
        ck_assert_ptr_null(nsr_report_signal_name(32));
        ck_assert_ptr_null(nsr_report_signal_name(SIGRTMIN));
}
END_TEST

START_TEST(test_format_time) {
        char buf[32];
        struct timespec ts = { .tv_sec = 1795644600, .tv_nsec = 123456789 };
        ck_assert_int_eq(nsr_json_format_time(&ts, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "2026-11-25T22:10:00.123Z");
        ts = (struct timespec){ 0, 999999999 };
        ck_assert_int_eq(nsr_json_format_time(&ts, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "1970-01-01T00:00:00.999Z");
        ts = (struct timespec){ 951782400, 5000000 }; /* a leap day */
        ck_assert_int_eq(nsr_json_format_time(&ts, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "2000-02-29T00:00:00.005Z");
        ts = (struct timespec){ 0, 1000000000 };
        ck_assert_int_eq(nsr_json_format_time(&ts, buf, sizeof(buf)), -EINVAL);
        ts = (struct timespec){ (time_t) 300000000000, 0 }; /* year 11476 */
        ck_assert_int_eq(nsr_json_format_time(&ts, buf, sizeof(buf)), -EOVERFLOW);
        ts = (struct timespec){ 0, 0 };
        ck_assert_int_eq(nsr_json_format_time(&ts, buf, 10), -ENOBUFS);
}
END_TEST

/* ---- JSON --------------------------------------------------------------- */

typedef struct fixture {
        nsr_changeset *changes;
        nsr_protect_result *protect;
        nsr_report_conflict conflicts[1];
        nsr_report_project projects[2];
        nsr_report report;
} fixture;

static char *argv_[] = { (char *) "make", (char *) "-j2", NULL };
static char *layers_[] = { (char *) "agent", NULL };
static char *errors_[] = { (char *) "cannot apply 'x': Permission denied", NULL };

static void fixture_init(fixture *f) {
        nsr_error err = { 0 };
        *f = (fixture){ 0 };
        f->changes = nsr_changeset_new();
        nsr_change c = {
                .path = (char *) "new.txt", .kind = NSR_CHANGE_CREATED, .type = NSR_ENTRY_FILE, .size = 12, .mode = 0644
        };
        ck_assert_int_eq(nsr_changeset_add(f->changes, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "old",
                          .kind = NSR_CHANGE_DELETED,
                          .type = NSR_ENTRY_DIR,
                          .mode = 0755,
                          .descendants = 7,
                          .old = { .exists = true, .type = NSR_ENTRY_DIR } };
        ck_assert_int_eq(nsr_changeset_add(f->changes, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "run.sh",
                          .kind = NSR_CHANGE_METADATA_CHANGED,
                          .type = NSR_ENTRY_FILE,
                          .size = 100,
                          .mode = 04755 };
        ck_assert_int_eq(nsr_changeset_add(f->changes, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "sym",
                          .kind = NSR_CHANGE_MODIFIED,
                          .type = NSR_ENTRY_SYMLINK,
                          .size = 3,
                          .mode = 0777,
                          .target = (char *) "a\xff"
                                             "b" };
        ck_assert_int_eq(nsr_changeset_add(f->changes, &c, &err), 0);
        c = (nsr_change){ .path = (char *) "t",
                          .kind = NSR_CHANGE_TYPE_CHANGED,
                          .type = NSR_ENTRY_FILE,
                          .size = 1,
                          .mode = 0600,
                          .descendants = 2,
                          .old = { .exists = true, .type = NSR_ENTRY_DIR, .mode = 0700 } };
        ck_assert_int_eq(nsr_changeset_add(f->changes, &c, &err), 0);
        f->protect = nsr_malloc0(sizeof(*f->protect));
        f->protect->dropped = nsr_changeset_new();
        c = (nsr_change){ .path = (char *) ".git/config",
                          .kind = NSR_CHANGE_MODIFIED,
                          .type = NSR_ENTRY_FILE,
                          .size = 5,
                          .mode = 0644 };
        ck_assert_int_eq(nsr_changeset_add(f->protect->dropped, &c, &err), 0);
        f->protect->notes = nsr_malloc0(2 * sizeof(nsr_protect_note));
        f->protect->notes[0] = (nsr_protect_note){ .path = nsr_strdup(".git/config"),
                                                   .action = NSR_PROTECT_DROPPED,
                                                   .reason = "git config can run commands" };
        f->protect->notes[1] = (nsr_protect_note){ .path = nsr_strdup("src"),
                                                   .action = NSR_PROTECT_MODE_REDUCED,
                                                   .reason = "modes",
                                                   .old_exists = true,
                                                   .old_mode = 0755,
                                                   .requested = 0777,
                                                   .mode = 0755 };
        f->protect->n_notes = 2;
        f->conflicts[0] = (nsr_report_conflict){ .path = "n\x80",
                                                 .reason = "changed on the host during the run",
                                                 .kept_at = "/state/runs/R/kept/n\x80" };
        f->projects[0] = (nsr_report_project){
                .path = "/p",
                .outcome = NSR_OUTCOME_COMMITTED,
                .changes = f->changes,
                .protect = f->protect,
                .conflicts = f->conflicts,
                .n_conflicts = 1,
                .errors = errors_,
        };
        f->projects[1] = (nsr_report_project){ .path = "/q", .outcome = NSR_OUTCOME_DISCARDED };
        f->report = (nsr_report){
                .run_id = "R",
                .command = argv_,
                .exit_code = 0,
                .outcome = NSR_OUTCOME_COMMITTED,
                .started_at = { .tv_sec = 1795644600, .tv_nsec = 123456789 },
                .duration_ms = 1500,
                .layers = layers_,
                .projects = f->projects,
                .n_projects = 2,
        };
}

static void fixture_done(fixture *f) {
        nsr_changeset_free(f->changes);
        nsr_protect_result_free(f->protect);
}

static const char golden_compact[] =
        "{\"version\":1,\"run_id\":\"R\",\"command\":[\"make\",\"-j2\"],\"exit_code\":0,\"signal\":null,"
        "\"outcome\":\"committed\",\"started_at\":\"2026-11-25T22:10:00.123Z\",\"duration_ms\":1500,"
        "\"layers\":[\"agent\"],\"projects\":["
        "{\"path\":\"/p\",\"outcome\":\"committed\",\"changes\":["
        "{\"path\":\"new.txt\",\"change\":\"created\",\"type\":\"file\",\"size\":12,\"mode\":\"0644\"},"
        "{\"path\":\"old\",\"change\":\"deleted\",\"type\":\"dir\",\"size\":0,\"mode\":\"0755\",\"descendants\":7},"
        "{\"path\":\"run.sh\",\"change\":\"metadata_changed\",\"type\":\"file\",\"size\":100,\"mode\":\"4755\"},"
        "{\"path\":\"sym\",\"change\":\"modified\",\"type\":\"symlink\",\"size\":3,\"mode\":\"0777\","
        "\"target\":\"a\\ufffdb\",\"target_b64\":\"Yf9i\"},"
        "{\"path\":\"t\",\"change\":\"type_changed\",\"type\":\"file\",\"size\":1,\"mode\":\"0600\","
        "\"old_mode\":\"0700\",\"descendants\":2}"
        "],\"protected\":["
        "{\"path\":\".git/config\",\"action\":\"dropped\",\"reason\":\"git config can run commands\","
        "\"change\":\"modified\",\"type\":\"file\",\"mode\":\"0644\"},"
        "{\"path\":\"src\",\"action\":\"mode_reduced\",\"reason\":\"modes\",\"old_mode\":\"0755\","
        "\"requested_mode\":\"0777\",\"mode\":\"0755\"}"
        "],\"conflicts\":["
        "{\"path\":\"n\\ufffd\",\"path_b64\":\"boA=\",\"reason\":\"changed on the host during the run\","
        "\"kept_at\":\"/state/runs/R/kept/n\\ufffd\",\"kept_at_b64\":\"L3N0YXRlL3J1bnMvUi9rZXB0L26A\"}"
        "],\"errors\":[\"cannot apply 'x': Permission denied\"]},"
        "{\"path\":\"/q\",\"outcome\":\"discarded\",\"changes\":[],\"protected\":[],\"conflicts\":[],\"errors\":[]}"
        "]}\n";

START_TEST(test_json_golden) {
        fixture f;
        fixture_init(&f);
        nsr_error err = { 0 };
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_report_to_json(&f.report, 0, &out, &len, &err), 0);
        ck_assert_str_eq(out, golden_compact);
        ck_assert_uint_eq(len, strlen(golden_compact));

        /* The same through a FILE. */
        char *buf = NULL;
        size_t size = 0;
        FILE *mf = open_memstream(&buf, &size);
        ck_assert_int_eq(nsr_report_write_json(&f.report, mf, 0, &err), 0);
        fclose(mf);
        ck_assert_str_eq(buf, golden_compact);
        free(buf);
        fixture_done(&f);
}
END_TEST

START_TEST(test_json_signal_and_flags) {
        static char *bad_argv[] = { (char *) "sh", (char *) "-c", (char *) "echo \xff", NULL };
        nsr_report r = {
                .run_id = "R2",
                .command = bad_argv,
                .exit_code = -1,
                .signal = SIGTERM,
                .outcome = NSR_OUTCOME_KEPT,
                .started_at = { 0, 0 },
                .interrupted = true,
        };
        nsr_error err = { 0 };
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(nsr_report_to_json(&r, 0, &out, NULL, &err), 0);
        ck_assert_str_eq(out, "{\"version\":1,\"run_id\":\"R2\",\"command\":[\"sh\",\"-c\",\"echo \\ufffd\"],"
                              "\"command_b64\":[\"c2g=\",\"LWM=\",\"ZWNobyD/\"],\"exit_code\":null,"
                              "\"signal\":\"SIGTERM\",\"outcome\":\"kept\",\"started_at\":\"1970-01-01T00:00:00.000Z\","
                              "\"duration_ms\":0,\"layers\":[],\"interrupted\":true,\"projects\":[]}\n");

        r.signal = SIGRTMIN + 2;
        _cleanup_free_ char *rt = NULL;
        ck_assert_int_eq(nsr_report_to_json(&r, 0, &rt, NULL, &err), 0);
        _cleanup_free_ char *want = nsr_asprintf("\"signal\":\"SIG%d\"", SIGRTMIN + 2);
        ck_assert_ptr_nonnull(strstr(rt, want));
}
END_TEST

START_TEST(test_json_pretty) {
        nsr_report r = { .run_id = "R", .exit_code = 3, .outcome = NSR_OUTCOME_FAILED };
        nsr_report_project p = { .path = "/p", .outcome = NSR_OUTCOME_FAILED };
        r.projects = &p;
        r.n_projects = 1;
        nsr_error err = { 0 };
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(nsr_report_to_json(&r, NSR_REPORT_PRETTY, &out, NULL, &err), 0);
        ck_assert_str_eq(out, "{\n"
                              "  \"version\": 1,\n"
                              "  \"run_id\": \"R\",\n"
                              "  \"command\": [],\n"
                              "  \"exit_code\": 3,\n"
                              "  \"signal\": null,\n"
                              "  \"outcome\": \"failed\",\n"
                              "  \"started_at\": \"1970-01-01T00:00:00.000Z\",\n"
                              "  \"duration_ms\": 0,\n"
                              "  \"layers\": [],\n"
                              "  \"projects\": [\n"
                              "    {\n"
                              "      \"path\": \"/p\",\n"
                              "      \"outcome\": \"failed\",\n"
                              "      \"changes\": [],\n"
                              "      \"protected\": [],\n"
                              "      \"conflicts\": [],\n"
                              "      \"errors\": []\n"
                              "    }\n"
                              "  ]\n"
                              "}\n");
}
END_TEST

START_TEST(test_json_size_limit) {
        fixture f;
        fixture_init(&f);
        nsr_error err = { 0 };
        f.report.max_bytes = 100;
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(nsr_report_to_json(&f.report, 0, &out, NULL, &err), -EFBIG);
        ck_assert_ptr_null(out);
        ck_assert_str_eq(err.msg, "report is larger than the limit of 100 bytes");
        /* Exactly the size fits. */
        f.report.max_bytes = strlen(golden_compact);
        ck_assert_int_eq(nsr_report_to_json(&f.report, 0, &out, NULL, &err), 0);
        ck_assert_str_eq(out, golden_compact);
        ck_assert_uint_eq(NSR_REPORT_MAX_BYTES, 256u * 1024 * 1024);
        fixture_done(&f);
}
END_TEST

START_TEST(test_json_bad_time) {
        nsr_report r = { .outcome = NSR_OUTCOME_UNKNOWN, .started_at = { 0, -1 } };
        nsr_error err = { 0 };
        char *out = NULL;
        ck_assert_int_eq(nsr_report_to_json(&r, 0, &out, NULL, &err), -EINVAL);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(nsr_report_write_json(&r, NULL, 0, &err), -EINVAL);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("report");
        TCase *tc = tcase_create("text");
        tcase_add_test(tc, test_summary);
        tcase_add_test(tc, test_listing);
        tcase_add_test(tc, test_signal_names);
        tcase_add_test(tc, test_format_time);
        suite_add_tcase(s, tc);
        tc = tcase_create("json");
        tcase_add_test(tc, test_json_golden);
        tcase_add_test(tc, test_json_signal_and_flags);
        tcase_add_test(tc, test_json_pretty);
        tcase_add_test(tc, test_json_size_limit);
        tcase_add_test(tc, test_json_bad_time);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(suite)
