/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure parts of sessions: the exec request's wire form, the command's
 * environment, durations, and the message framing over a socketpair; the
 * records of open and settled conflicts, and the refresh of the session's
 * view (settle.h) on plain dirs. */
#include "config.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/audit.h>

#include "project/profile.h"
#include "project/sesscommit.h"
#include "project/session.h"
#include "project/settle.h"
#include "txn/state.h"
#include "unit.h"

START_TEST(test_exec_roundtrip) {
        char *argv[] = { (char *) "sh", (char *) "-c", (char *) "", (char *) "x y", NULL };
        char *set[] = { (char *) "A=1", (char *) "B=", NULL };
        char *unset[] = { (char *) "HOME", NULL };
        nsr_session_exec x = { .argv = argv, .set = set, .unset = unset, .cwd = (char *) "/tmp" };
        nsr_error e = { 0 };
        char *buf = NULL;
        size_t len = 0;
        /* An empty argument is a tag with no text: it must survive. */
        ck_assert_int_eq(nsr_session_exec_encode(&x, &buf, &len, &e), 0);
        nsr_session_exec y = { 0 };
        ck_assert_int_eq(nsr_session_exec_decode(buf, len, &y, &e), 0);
        ck_assert_uint_eq(nsr_strv_length(y.argv), 4);
        ck_assert_str_eq(y.argv[2], "");
        ck_assert_str_eq(y.argv[3], "x y");
        ck_assert_str_eq(y.set[1], "B=");
        ck_assert_str_eq(y.unset[0], "HOME");
        ck_assert_str_eq(y.cwd, "/tmp");
        nsr_session_exec_done(&y);
        free(buf);
}
END_TEST

START_TEST(test_exec_malformed) {
        nsr_error e = { 0 };
        nsr_session_exec y = { 0 };
        static const struct {
                const char *data;
                size_t len;
        } bad[] = {
                { "", 0 },            /* no command */
                { "ecmd\0", 5 },      /* env without NAME=VALUE, no command */
                { "ash", 3 },         /* not terminated */
                { "xsh\0", 4 },       /* unknown tag */
                { "ash\0e=1\0", 8 },  /* empty name */
                { "ash\0uA=B\0", 9 }, /* unset with a value */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_int_lt(nsr_session_exec_decode(bad[i].data, bad[i].len, &y, &e), 0);
        char **big = nsr_malloc0(sizeof(char *));
        for (int i = 0; i < 2000; i++)
                nsr_strv_push(&big, nsr_asprintf("%0100d", i));
        nsr_session_exec x = { .argv = big };
        char *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_session_exec_encode(&x, &buf, &len, &e), -E2BIG);
        nsr_strv_free(big);
}
END_TEST

START_TEST(test_env) {
        char *base[] = { (char *) "HOME=/h", (char *) "PATH=/bin", (char *) "PWD=/old", (char *) "HOMEX=1", NULL };
        char *set[] = { (char *) "PATH=/usr/bin", (char *) "NEW=v", NULL };
        char *unset[] = { (char *) "HOME", NULL };
        nsr_session_exec x = { .set = set, .unset = unset };
        char **env = nsr_session_exec_env(base, &x, "/w");
        ck_assert_uint_eq(nsr_strv_length(env), 4);
        ck_assert_str_eq(env[0], "HOMEX=1");
        ck_assert_str_eq(env[1], "PATH=/usr/bin");
        ck_assert_str_eq(env[2], "NEW=v");
        ck_assert_str_eq(env[3], "PWD=/w");
        nsr_strv_free(env);
}
END_TEST

START_TEST(test_exec_base_env) {
        char *argv[] = { (char *) "env", NULL };
        char *base[] = { (char *) "A=1", (char *) "PWD=/caller", NULL };
        char *lim[] = { (char *) "nofile=64:128", NULL };
        nsr_session_exec x = { .argv = argv, .base = base, .has_base = true, .rlimits = lim };
        nsr_error e = { 0 };
        char *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_session_exec_encode(&x, &buf, &len, &e), 0);
        nsr_session_exec y = { 0 };
        ck_assert_int_eq(nsr_session_exec_decode(buf, len, &y, &e), 0);
        ck_assert(y.has_base && !y.clear);
        ck_assert_uint_eq(nsr_strv_length(y.base), 2);
        ck_assert_str_eq(y.rlimits[0], "nofile=64:128");
        /* The base replaces the session's; PWD is the step's. */
        char **env = nsr_session_exec_env(y.base, &y, "/w");
        ck_assert_uint_eq(nsr_strv_length(env), 2);
        ck_assert_str_eq(env[0], "A=1");
        ck_assert_str_eq(env[1], "PWD=/w");
        nsr_strv_free(env);
        nsr_session_exec_done(&y);
        free(buf);
        /* --clearenv: no base, no PWD, only --env. */
        char *set[] = { (char *) "ONLY=1", NULL };
        nsr_session_exec c = { .argv = argv, .base = base, .has_base = true, .clear = true, .set = set };
        ck_assert_int_eq(nsr_session_exec_encode(&c, &buf, &len, &e), 0);
        ck_assert_int_eq(nsr_session_exec_decode(buf, len, &y, &e), 0);
        ck_assert(y.clear && !y.base);
        env = nsr_session_exec_env(base, &y, "/w");
        ck_assert_uint_eq(nsr_strv_length(env), 1);
        ck_assert_str_eq(env[0], "ONLY=1");
        nsr_strv_free(env);
        nsr_session_exec_done(&y);
        free(buf);
        /* A base entry that is not NAME=VALUE is refused. */
        ck_assert_int_lt(nsr_session_exec_decode("ash\0B-\0Ebad\0", 12, &y, &e), 0);
}
END_TEST

/* The server's pass over a request: what the deny list names goes, every
 * other byte stays, the rest of the request included; a request decode
 * refuses for its shape is refused here too. Then the agent decodes it. */
static bool keep_no_secret(void *data, const char *entry) {
        (*(int *) data)++;
        return strncmp(entry, "SECRET", 6) != 0;
}

/* A request encoded, through the server's pass (keep_no_secret), then
 * decoded by the agent: the filtered length, the encoded one in
 * *ret_len. */
static ssize_t filter_req(const nsr_session_exec *x, int *asked, nsr_env_memo *memo, size_t *ret_len,
                          nsr_session_exec *ret) {
        nsr_error e = { 0 };
        char *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(nsr_session_exec_encode(x, &buf, &len, &e), 0);
        ssize_t n = nsr_session_exec_filter_env(buf, len, keep_no_secret, asked, memo);
        ck_assert_int_ge(n, 0);
        ck_assert_int_eq(nsr_session_exec_decode(buf, (size_t) n, ret, &e), 0);
        free(buf);
        if (ret_len)
                *ret_len = len;
        return n;
}

START_TEST(test_exec_filter_env) {
        char *argv[] = { (char *) "env", (char *) "SECRET=arg", NULL };
        char *base[] = { (char *) "SECRET_A=1", (char *) "PATH=/bin", (char *) "SECRET_B=2", (char *) "X=", NULL };
        char *set[] = { (char *) "SECRET_SET=kept", NULL };
        nsr_session_exec x = { .argv = argv, .base = base, .has_base = true, .set = set, .cwd = (char *) "/w" };
        size_t len = 0;
        int asked = 0;
        nsr_session_exec y = { 0 };
        ssize_t n = filter_req(&x, &asked, NULL, &len, &y);
        ck_assert_int_eq(asked, 4); /* the base entries only */
        ck_assert_int_eq(n, (ssize_t) (len - strlen("ESECRET_A=1") - 1 - strlen("ESECRET_B=2") - 1));
        ck_assert_uint_eq(nsr_strv_length(y.base), 2);
        ck_assert_str_eq(y.base[0], "PATH=/bin");
        ck_assert_str_eq(y.base[1], "X=");
        /* --env and the command's own words are the caller's to give. */
        ck_assert_str_eq(y.argv[1], "SECRET=arg");
        ck_assert_str_eq(y.set[0], "SECRET_SET=kept");
        ck_assert_str_eq(y.cwd, "/w");
        ck_assert(y.has_base && !y.clear);
        nsr_session_exec_done(&y);
        /* Not terminated, or an empty entry: refused, nothing asked. */
        char bad1[] = "aenv\0ESECRET=1";
        ck_assert_int_eq(nsr_session_exec_filter_env(bad1, sizeof(bad1) - 1, keep_no_secret, &asked, NULL), -EBADMSG);
        char bad2[] = "aenv\0\0EA=1";
        ck_assert_int_eq(nsr_session_exec_filter_env(bad2, sizeof(bad2), keep_no_secret, &asked, NULL), -EBADMSG);
        ck_assert_int_eq(asked, 4);
        /* Nothing to keep: an empty request stays empty. */
        ck_assert_int_eq(nsr_session_exec_filter_env(bad1, 0, keep_no_secret, &asked, NULL), 0);
}
END_TEST

/* The server's memo: a request whose base entries are the last one's
 * byte for byte gets the last result without asking keep again, whatever
 * else it carries; other entries are asked about; base entries in two
 * runs (no encode makes that) are filtered, never memoized. */
static void filter_memo(char **argv, char **base, int *asked, nsr_env_memo *memo, nsr_session_exec *ret) {
        nsr_session_exec x = { .argv = argv, .base = base, .has_base = true };
        (void) filter_req(&x, asked, memo, NULL, ret);
}

START_TEST(test_exec_filter_memo) {
        char *a1[] = { (char *) "true", NULL };
        char *a2[] = { (char *) "sh", (char *) "-c", (char *) "echo a longer command", NULL };
        char *b1[] = { (char *) "A=1", (char *) "SECRET=x", (char *) "B=2", NULL };
        char *b2[] = { (char *) "A=1", (char *) "SECRET=x", (char *) "B=3", NULL };
        char *b3[] = { (char *) "SECRET=1", (char *) "SECRET=2", NULL };
        nsr_env_memo memo = { 0 };
        nsr_session_exec y = { 0 };
        int asked = 0;
        filter_memo(a1, b1, &asked, &memo, &y);
        ck_assert_int_eq(asked, 3);
        ck_assert_uint_eq(nsr_strv_length(y.base), 2);
        nsr_session_exec_done(&y);
        /* The same environment, another command: nothing asked, the
         * same entries kept, the command whole. */
        filter_memo(a2, b1, &asked, &memo, &y);
        ck_assert_int_eq(asked, 3);
        ck_assert_uint_eq(nsr_strv_length(y.base), 2);
        ck_assert_str_eq(y.base[0], "A=1");
        ck_assert_str_eq(y.base[1], "B=2");
        ck_assert_str_eq(y.argv[2], "echo a longer command");
        nsr_session_exec_done(&y);
        /* One byte different: asked again, and the memo follows. */
        filter_memo(a1, b2, &asked, &memo, &y);
        ck_assert_int_eq(asked, 6);
        ck_assert_str_eq(y.base[1], "B=3");
        nsr_session_exec_done(&y);
        filter_memo(a1, b2, &asked, &memo, &y);
        ck_assert_int_eq(asked, 6);
        ck_assert_str_eq(y.base[1], "B=3");
        nsr_session_exec_done(&y);
        /* Everything dropped: remembered as nothing. */
        filter_memo(a1, b3, &asked, &memo, &y);
        nsr_session_exec_done(&y);
        filter_memo(a2, b3, &asked, &memo, &y);
        ck_assert_int_eq(asked, 8);
        ck_assert_ptr_null(y.base);
        ck_assert_str_eq(y.argv[0], "sh");
        nsr_session_exec_done(&y);
        /* Two runs of base entries: each asked about, every time. */
        char two[] = "atrue\0EA=1\0aarg\0ESECRET=2\0";
        int n0 = asked;
        ssize_t n = nsr_session_exec_filter_env(two, sizeof(two) - 1, keep_no_secret, &asked, &memo);
        ck_assert_int_eq(n, (ssize_t) (sizeof(two) - 1 - strlen("ESECRET=2") - 1));
        ck_assert_int_eq(asked, n0 + 2);
        ck_assert_int_eq(memcmp(two, "atrue\0EA=1\0aarg\0", (size_t) n), 0);
        nsr_env_memo_done(&memo);
        ck_assert_ptr_null(memo.in);
}
END_TEST

/* One copy of the request holds every string: a later cwd wins, and the
 * vectors a request does not use stay NULL. */
START_TEST(test_exec_decode_arena) {
        static const char req[] = "aecho\0ahi\0c/a\0c/b\0rnofile=8\0";
        nsr_error e = { 0 };
        nsr_session_exec y = { 0 };
        ck_assert_int_eq(nsr_session_exec_decode(req, sizeof(req) - 1, &y, &e), 0);
        ck_assert_ptr_nonnull(y.arena);
        ck_assert_uint_eq(nsr_strv_length(y.argv), 2);
        ck_assert_str_eq(y.argv[1], "hi");
        ck_assert_str_eq(y.cwd, "/b");
        ck_assert_str_eq(y.rlimits[0], "nofile=8");
        ck_assert_ptr_null(y.set);
        ck_assert_ptr_null(y.unset);
        ck_assert_ptr_null(y.base);
        ck_assert(!y.has_base);
        nsr_session_exec_done(&y);
        ck_assert_ptr_null(y.arena);
        /* The first bad string decides the message. */
        ck_assert_int_eq(nsr_session_exec_decode("ush=1\0ebad\0", 11, &y, &e), -EINVAL);
        ck_assert_str_eq(e.msg, "--unset-env wants a NAME");
        ck_assert_int_eq(nsr_session_exec_decode("ebad\0ush=1\0", 11, &y, &e), -EINVAL);
        ck_assert_str_eq(e.msg, "--env wants NAME=VALUE");
        ck_assert_int_eq(nsr_session_exec_decode("ea=1\0", 5, &y, &e), -EINVAL);
        ck_assert_str_eq(e.msg, "no command");
}
END_TEST

START_TEST(test_refused_wire) {
        nsr_refused rf = { .events_fd = -1, .active = true };
        nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 165, EPERM, "python3");
        nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 165, EPERM, "python3");
        nsr_refused_count(&rf, AUDIT_ARCH_X86_64, 250, ENOSYS, "a\tb\nc");
        size_t len = 0;
        char *buf = nsr_session_refused_encode(&rf, true, NSR_SESSION_PAYLOAD_MAX, &len);
        nsr_refused *back = nsr_malloc0(sizeof(*back));
        ck_assert_int_eq(nsr_session_refused_decode(buf, len, back), 0);
        ck_assert(back->active);
        ck_assert_uint_eq(back->n_entries, 2);
        ck_assert_uint_eq(back->entries[0].count, 2);
        ck_assert_int_eq(back->entries[0].errnum, EPERM);
        ck_assert_str_eq(back->entries[0].name, rf.entries[0].name);
        ck_assert_str_eq(back->entries[0].comm, "python3");
        ck_assert(!strpbrk(back->entries[1].comm, "\t\n"));
        free(buf);
        /* Nothing refused, in a run that records: "1 0", no lines; one
         * that does not record says so. */
        buf = nsr_session_refused_encode(NULL, true, NSR_SESSION_PAYLOAD_MAX, &len);
        ck_assert_str_eq(buf, "1 0\n");
        ck_assert_uint_eq(len, 4);
        free(buf);
        buf = nsr_session_refused_encode(NULL, false, NSR_SESSION_PAYLOAD_MAX, &len);
        ck_assert_str_eq(buf, "0 0\n");
        free(buf);
        /* Too small a budget: what does not fit is counted, not cut. */
        buf = nsr_session_refused_encode(&rf, true, 80, &len);
        ck_assert_int_eq(nsr_session_refused_decode(buf, len, back), 0);
        ck_assert_uint_eq(back->n_entries + back->dropped, 3);
        free(buf);
        static const char *const bad[] = { "",
                                           "2 0\n",
                                           "1 0",
                                           "1 0\n1\t1\tx\n",
                                           "1 0\nx\t1\tmount\tc\n",
                                           "1 0\n1\t1\t\tc\n",
                                           "1 0\n99999\t1\tmount\tc\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_int_lt(nsr_session_refused_decode(bad[i], strlen(bad[i]), back), 0);
        free(back);
}
END_TEST

START_TEST(test_duration) {
        unsigned v = 0;
        ck_assert_int_eq(nsr_session_parse_duration("30m", &v), 0);
        ck_assert_uint_eq(v, 1800);
        ck_assert_int_eq(nsr_session_parse_duration("90", &v), 0);
        ck_assert_uint_eq(v, 90);
        ck_assert_int_eq(nsr_session_parse_duration("2h", &v), 0);
        ck_assert_uint_eq(v, 7200);
        ck_assert_int_eq(nsr_session_parse_duration("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_lt(nsr_session_parse_duration("-1", &v), 0);
        ck_assert_int_lt(nsr_session_parse_duration("5x", &v), 0);
        ck_assert_int_lt(nsr_session_parse_duration("", &v), 0);
        ck_assert_int_lt(nsr_session_parse_duration("99999999999d", &v), 0);
}
END_TEST

START_TEST(test_framing) {
        int sp[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        int fds[3] = { 0, 1, 2 };
        ck_assert_int_eq(nsr_session_send(sp[0], NSR_SMSG_EXEC, 7, -3, 1, "abc", 3, fds, 3), 0);
        char *buf = nsr_malloc0(NSR_SESSION_PAYLOAD_MAX + 1);
        nsr_session_hdr h;
        int got[3];
        ck_assert_int_eq(nsr_session_recv(sp[1], &h, buf, got), 0);
        ck_assert_uint_eq(h.type, NSR_SMSG_EXEC);
        ck_assert_uint_eq(h.id, 7);
        ck_assert_int_eq(h.value, -3);
        ck_assert_str_eq(buf, "abc");
        for (int i = 0; i < 3; i++) {
                ck_assert_int_ge(got[i], 3);
                close(got[i]);
        }
        /* Not our magic: refused. A short datagram too. */
        nsr_session_hdr bad = { .magic = 1, .type = NSR_SMSG_PING };
        ck_assert_int_eq(write(sp[0], &bad, sizeof(bad)), (ssize_t) sizeof(bad));
        ck_assert_int_eq(nsr_session_recv(sp[1], &h, buf, got), -EBADMSG);
        ck_assert_int_eq(write(sp[0], "x", 1), 1);
        ck_assert_int_eq(nsr_session_recv(sp[1], &h, buf, got), -EBADMSG);
        /* A type beyond the enum: refused. */
        bad = (nsr_session_hdr){ .magic = NSR_SESSION_MAGIC, .type = _NSR_SMSG_MAX };
        ck_assert_int_eq(write(sp[0], &bad, sizeof(bad)), (ssize_t) sizeof(bad));
        ck_assert_int_eq(nsr_session_recv(sp[1], &h, buf, got), -EBADMSG);
        close(sp[0]);
        ck_assert_int_eq(nsr_session_recv(sp[1], &h, buf, got), -ENODATA);
        close(sp[1]);
        free(buf);
}
END_TEST

/* A session's run is "running" as long as its daemon lives: the owner
 * line must come back from the meta, or every running run looks orphaned
 * (and a live session would be recovered as killed). */
START_TEST(test_meta_owner) {
        const char *tmp = getenv("TMPDIR");
        char *dir = nsr_asprintf("%s/nsrun-session-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        char *projects[] = { (char *) "/p", NULL };
        nsr_run_meta m = {
                .state = NSR_OUTCOME_RUNNING, .kind = (char *) "run", .projects = projects, .exit_code = -1
        };
        snprintf(m.run_id, sizeof(m.run_id), "20261126T000000.000Z-000000");
        nsr_run_meta_set_owner(&m);
        nsr_error e = { 0 };
        ck_assert_int_eq(nsr_run_meta_write(fd, &m, &e), 0);
        nsr_run_meta r = { 0 };
        ck_assert_int_eq(nsr_run_meta_read(fd, &r, &e), 0);
        ck_assert_int_eq(r.pid, getpid());
        ck_assert_uint_eq(r.pid_start, m.pid_start);
        ck_assert_str_eq(r.boot, m.boot);
        ck_assert(!nsr_run_meta_is_orphan(&r));
        r.pid = 0;
        ck_assert(nsr_run_meta_is_orphan(&r));
        nsr_run_meta_done(&r);
        ck_assert_int_eq(unlinkat(fd, "meta", 0), 0);
        close(fd);
        rmdir(dir);
        free(dir);
}
END_TEST

/* A temp dir with run/, upper/ and proj/ (fds), removed afterwards. */
typedef struct tree {
        char dir[64];
        int run, upper, proj;
} tree;

static void tree_new(tree *t) {
        snprintf(t->dir, sizeof(t->dir), "/tmp/check-settle.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(t->dir));
        int d = open(t->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(d, 0);
        ck_assert_int_eq(mkdirat(d, "run", 0700), 0);
        ck_assert_int_eq(mkdirat(d, "upper", 0700), 0);
        ck_assert_int_eq(mkdirat(d, "proj", 0700), 0);
        t->run = openat(d, "run", O_PATH | O_DIRECTORY | O_CLOEXEC);
        t->upper = openat(d, "upper", O_PATH | O_DIRECTORY | O_CLOEXEC);
        t->proj = openat(d, "proj", O_PATH | O_DIRECTORY | O_CLOEXEC);
        close(d);
}

static void tree_done(tree *t) {
        close(t->run);
        close(t->upper);
        close(t->proj);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
        ck_assert_int_eq(system(cmd), 0);
}

static void put(const tree *t, const char *sub, const char *name, const char *text) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s/%s", t->dir, sub, name);
        FILE *f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static char *get(const tree *t, const char *sub, const char *name) {
        char path[256], buf[256] = "";
        snprintf(path, sizeof(path), "%s/%s/%s", t->dir, sub, name);
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        return nsr_strdup(buf);
}

START_TEST(test_settle_open_record) {
        tree t;
        tree_new(&t);
        nsr_settle_open o;
        nsr_settle_open_read(t.run, 0, &o);
        ck_assert_ptr_null(o.paths[0]);
        /* Nothing ever conflicted: no file is written. */
        ck_assert_int_eq(nsr_settle_open_write(t.run, 0, &o), 0);
        ck_assert_int_lt(faccessat(t.run, "session-conflicts-p0", F_OK, AT_SYMLINK_NOFOLLOW), 0);
        nsr_settle_open_add(&o, "d", "20260101T000000.000Z-abcdef");
        nsr_settle_open_add(&o, "f\nx", "");
        nsr_settle_open_add(&o, "d", "20260101T000000.000Z-000000"); /* once */
        ck_assert_int_eq(nsr_settle_open_write(t.run, 0, &o), 0);
        nsr_settle_open_done(&o);
        /* An older record has no run; a bad line is skipped. */
        put(&t, "run", "session-conflicts-p1", "67\nzz\n68 not/a run\n");
        nsr_settle_open_read(t.run, 0, &o);
        ck_assert_uint_eq(nsr_strv_length(o.paths), 2);
        const char *since = NULL;
        ck_assert_str_eq(nsr_settle_open_find(&o, "d/below", &since), "d");
        ck_assert_str_eq(since, "20260101T000000.000Z-abcdef");
        ck_assert_ptr_null(nsr_settle_open_find(&o, "dd", NULL));
        ck_assert_str_eq(nsr_settle_open_find(&o, "f\nx", &since), "f\nx");
        ck_assert_str_eq(since, "");
        ck_assert(nsr_settle_open_remove(&o, "d"));
        ck_assert(!nsr_settle_open_remove(&o, "d"));
        ck_assert_uint_eq(nsr_strv_length(o.paths), 1);
        nsr_settle_open_done(&o);
        nsr_settle_open_read(t.run, 1, &o);
        ck_assert_uint_eq(nsr_strv_length(o.paths), 2);
        ck_assert_str_eq(o.paths[0], "g");
        ck_assert_str_eq(o.paths[1], "h");
        ck_assert_str_eq(o.since[1], "");
        nsr_settle_open_done(&o);
        tree_done(&t);
}
END_TEST

START_TEST(test_settle_refresh) {
        tree t;
        tree_new(&t);
        put(&t, "proj", "f", "host\n");
        put(&t, "upper", "f", "sandbox, longer\n");
        ck_assert_int_eq(fchmodat(t.proj, "f", 04640, 0), 0);
        ck_assert_int_eq(nsr_settle_refresh(t.upper, t.proj, "f"), 0);
        _cleanup_free_ char *got = get(&t, "upper", "f");
        ck_assert_str_eq(got, "host\n");
        struct stat a, b;
        ck_assert_int_eq(fstatat(t.proj, "f", &a, 0), 0);
        ck_assert_int_eq(fstatat(t.upper, "f", &b, 0), 0);
        ck_assert_int_eq(b.st_mode & 07777, 0640); /* no setuid bit in the layer */
        ck_assert_int_eq(b.st_mtim.tv_sec, a.st_mtim.tv_sec);
        ck_assert_int_eq(b.st_mtim.tv_nsec, a.st_mtim.tv_nsec);

        /* The upper dir is the sandbox's: a symlink, a hard link, a fifo
         * or a symlinked parent is never written through. */
        put(&t, "proj", "s", "host\n");
        ck_assert_int_eq(symlinkat("/etc/passwd", t.upper, "s"), 0);
        ck_assert_int_eq(nsr_settle_refresh(t.upper, t.proj, "s"), -EOPNOTSUPP);
        put(&t, "proj", "h", "host\n");
        put(&t, "upper", "other", "mine\n");
        ck_assert_int_eq(linkat(t.upper, "other", t.upper, "h", 0), 0);
        ck_assert_int_eq(nsr_settle_refresh(t.upper, t.proj, "h"), -EOPNOTSUPP);
        _cleanup_free_ char *other = get(&t, "upper", "other");
        ck_assert_str_eq(other, "mine\n");
        put(&t, "proj", "p", "host\n");
        ck_assert_int_eq(mkfifoat(t.upper, "p", 0600), 0);
        ck_assert_int_eq(nsr_settle_refresh(t.upper, t.proj, "p"), -EOPNOTSUPP);
        ck_assert_int_eq(mkdirat(t.proj, "d", 0700), 0);
        put(&t, "proj", "d/x", "host\n");
        ck_assert_int_eq(symlinkat(t.dir, t.upper, "d"), 0);
        ck_assert_int_lt(nsr_settle_refresh(t.upper, t.proj, "d/x"), 0);
        /* The host deleted it, or has a dir there: not a file to show. */
        put(&t, "upper", "gone", "mine\n");
        ck_assert_int_eq(nsr_settle_refresh(t.upper, t.proj, "gone"), -EOPNOTSUPP);
        tree_done(&t);
}
END_TEST

START_TEST(test_settle_settled) {
        tree t;
        tree_new(&t);
        put(&t, "upper", "a", "mine\n");
        put(&t, "upper", "b", "mine\n");
        char *paths[] = { (char *) "a", (char *) "b", (char *) "none", NULL };
        ck_assert_int_eq(nsr_settle_record(t.run, 0, t.upper, paths), 0);
        /* b is written again: a change of its own from now on. */
        ck_assert_int_eq(fchmodat(t.upper, "b", 0600, 0), 0);
        _cleanup_(nsr_changeset_freep) nsr_changeset *cs = nsr_changeset_new();
        nsr_error e = { 0 };
        nsr_change c = { .path = (char *) "a", .kind = NSR_CHANGE_MODIFIED, .type = NSR_ENTRY_FILE };
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &e), 0);
        c.path = (char *) "b";
        ck_assert_int_eq(nsr_changeset_add(cs, &c, &e), 0);
        ck_assert_int_eq(nsr_settle_drop_settled(t.run, 0, t.upper, cs), 0);
        ck_assert_uint_eq(cs->n_changes, 1);
        ck_assert_str_eq(cs->changes[0].path, "b");
        _cleanup_free_ char *rec = get(&t, "run", "session-settled-p0");
        /* a's record only ("61" is its hex): b's is forgotten. */
        ck_assert_int_eq(strncmp(rec, "61 ", 3), 0);
        ck_assert_ptr_null(strchr(strchr(rec, '\n') + 1, '\n'));
        tree_done(&t);
}
END_TEST

/* The exec client's deny-list match is fnmatch(FNM_CASEFOLD)'s answer,
 * for every pattern: random patterns and names over the bytes that
 * matter ('*', '?', brackets, escapes, '!', both cases, high bytes). */
static uint32_t lcg(uint32_t *x) {
        *x = *x * 1103515245u + 12345u;
        return *x >> 8;
}

/* The deny list's matcher (nsr_profile_env_denied) says what
 * fnmatch(pattern, name, FNM_CASEFOLD) says, for any one pattern; a "!"
 * line is an exception and denies nothing by itself. */
static bool denied_by(const char *pattern, const char *name) {
        char *const one[] = { (char *) pattern, NULL };
        return nsr_profile_env_denied(name, one);
}

START_TEST(test_env_match) {
        static const char pa[] = "aAbBzZ*?[]!\\_-./";
        static const char na[] = "aAbBzZ*?[]!\\_-./\x80\xe9";
        uint32_t x = 28;
        for (int i = 0; i < 300000; i++) {
                char p[10], n[12];
                size_t pl = lcg(&x) % 9, nl = 1 + lcg(&x) % 10;
                for (size_t k = 0; k < pl; k++)
                        p[k] = pa[lcg(&x) % (sizeof(pa) - 1)];
                for (size_t k = 0; k < nl; k++)
                        n[k] = na[lcg(&x) % (sizeof(na) - 1)];
                p[pl] = n[nl] = '\0';
                bool want = p[0] != '!' && fnmatch(p, n, FNM_CASEFOLD) == 0;
                if (denied_by(p, n) != want)
                        ck_abort_msg("pattern \"%s\", name \"%s\": fnmatch says %d", p, n, want);
        }
        /* The deny list's shapes, by hand. */
        ck_assert(denied_by("*TOKEN*", "github_token"));
        ck_assert(denied_by("OP_SESSION_*", "op_session_me"));
        ck_assert(denied_by("*_KEY", "A_KEY"));
        ck_assert(!denied_by("*_KEY", "_KEYS"));
        ck_assert(!denied_by("*_AUTH_*", "X_AUTH"));
        ck_assert(denied_by("*A*B*C*D*E*F*G*H*I*J*", "xaxbxcxdxexfxgxhxixjx"));
        ck_assert(!denied_by("*A*B*C*D*E*F*G*H*I*J*", "xaxbxcxdxexfxgxhxix"));
        ck_assert(denied_by("AB*BA", "ABA") == (fnmatch("AB*BA", "ABA", FNM_CASEFOLD) == 0));
}
END_TEST

/* What the filter must pass, by the rule itself: a variable goes when a
 * line matches its name (fnmatch, case folded) and no "!" line does, or
 * when its value carries a credential; a line without '=' or with an
 * empty name goes too. */
static char **reference_filter(char *const *env, char *const *lines) {
        char **kept = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; env[i]; i++) {
                const char *eq = strchr(env[i], '=');
                if (!eq || eq == env[i])
                        continue;
                _cleanup_free_ char *name = nsr_strndup(env[i], (size_t) (eq - env[i]));
                bool deny = false, except = false;
                for (size_t k = 0; lines[k]; k++) {
                        bool ex = lines[k][0] == '!';
                        if (fnmatch(lines[k] + ex, name, FNM_CASEFOLD) == 0)
                                *(ex ? &except : &deny) = true;
                }
                if (!(deny && !except) && !nsr_profile_env_value_secret(eq + 1))
                        nsr_strv_extend(&kept, env[i]);
        }
        return kept;
}

/* What passes the deny list of datadir, as the one-shot run and the
 * session's server pass it (nsr_env_filter); NULL when the list cannot
 * be read. */
static char **env_filter(char *const *env, const char *datadir, nsr_error *err) {
        _cleanup_(nsr_env_filter_freep) nsr_env_filter *f = NULL;
        if (nsr_env_filter_new(datadir, &f, err) < 0)
                return NULL;
        char **kept = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; env && env[i]; i++)
                if (nsr_env_filter_keeps(f, env[i]))
                        nsr_strv_extend(&kept, env[i]);
        return kept;
}

static void filter_as_rule(const char *datadir, char **env) {
        nsr_error e1 = { 0 }, e2 = { 0 };
        _cleanup_free_ char *file = nsr_asprintf("%s/profiles/env-deny.list", datadir);
        _cleanup_strv_free_ char **lines = NULL;
        ck_assert_int_ge(nsr_profile_read_list(file, &lines, &e1), 0);
        _cleanup_strv_free_ char **want = reference_filter(env, lines);
        _cleanup_strv_free_ char **got = env_filter(env, datadir, &e2);
        ck_assert_ptr_nonnull(got);
        size_t n = nsr_strv_length(want);
        ck_assert_uint_eq(nsr_strv_length(got), n);
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(got[i], want[i]);
}

/* The deny list's filter (nsr_env_filter: the one-shot run's, the session's)
 * passes exactly what the rule passes, in the same order: the shipped
 * list, and one with every kind of pattern; names a pattern matches in
 * another case, exceptions, values with credentials, a name longer than
 * the fast path takes. */
START_TEST(test_env_filter) {
        _cleanup_strv_free_ char **env = NULL;
        static const char *const fixed[] = {
                "PATH=/usr/bin",
                "github_token=x",
                "Db_Password=p",
                "MYSQL_PWD=m",
                "PWD=/x",
                "OLDPWD=/y",
                "KEYBOARD=k",
                "SSH_AUTH_SOCK=/s",
                "SSH_AUTH_SOCKET=/s",
                "OP_SESSION_me=o",
                "AUTHOR=a",
                "PIP_INDEX_URL=https://u:secret@host/x",
                "URL=https://u:@host/",
                "=novalue",
                "NOEQUALS",
                "bracketa=1",
                "X1Y=2",
                "*LIT=3",
                "KEEP_TOKEN=4",
                "xaxbxcxdxexfxgxhxixjx=5",
                "caf\xe9_TOKEN=6",
        };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                nsr_strv_extend(&env, fixed[i]);
        char longname[400];
        memset(longname, 'Q', sizeof(longname));
        memcpy(longname + 300, "_TOKEN=1", 9);
        nsr_strv_extend(&env, longname);
        memcpy(longname + 300, "_TOKEX=1", 9);
        nsr_strv_extend(&env, longname);
        uint32_t x = 7;
        static const char al[] = "AKEYTOKNPSWDabc_";
        for (int i = 0; i < 300; i++) {
                char v[16];
                size_t l = 1 + lcg(&x) % 12;
                for (size_t k = 0; k < l; k++)
                        v[k] = al[lcg(&x) % (sizeof(al) - 1)];
                v[l] = '\0';
                nsr_strv_push(&env, nsr_asprintf("%s=v", v));
        }
        filter_as_rule(NSR_TEST_DATADIR "/../..", env);

        char dir[] = "/tmp/nsrun-envfilter.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        _cleanup_free_ char *pdir = nsr_asprintf("%s/profiles", dir);
        _cleanup_free_ char *list = nsr_asprintf("%s/env-deny.list", pdir);
        ck_assert_int_eq(mkdir(pdir, 0700), 0);
        FILE *f = fopen(list, "we");
        ck_assert_ptr_nonnull(f);
        fputs("# every kind\n*TOKEN*\n[ab]racket*\nX?Y\n\\*LIT\n!KEEP*\n*A*B*C*D*E*F*G*H*I*J*\n*_KEY\n"
              "OP_SESSION_*\n*PWD*\n!PWD\n",
              f);
        fclose(f);
        filter_as_rule(dir, env);
        /* No list: nothing passes unchecked. */
        ck_assert_int_eq(unlink(list), 0);
        nsr_error e = { 0 };
        ck_assert_ptr_null(env_filter(env, dir, &e));
        ck_assert_int_ne(e.code, 0);
        rmdir(pdir);
        rmdir(dir);
}
END_TEST

static Suite *session_suite(void) {
        Suite *s = suite_create("session");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_exec_roundtrip);
        tcase_add_test(tc, test_exec_malformed);
        tcase_add_test(tc, test_env);
        tcase_add_test(tc, test_exec_base_env);
        tcase_add_test(tc, test_exec_filter_env);
        tcase_add_test(tc, test_exec_filter_memo);
        tcase_add_test(tc, test_exec_decode_arena);
        tcase_add_test(tc, test_refused_wire);
        tcase_add_test(tc, test_duration);
        tcase_add_test(tc, test_framing);
        tcase_add_test(tc, test_meta_owner);
        tcase_add_test(tc, test_settle_open_record);
        tcase_add_test(tc, test_settle_refresh);
        tcase_add_test(tc, test_settle_settled);
        tcase_add_test(tc, test_env_match);
        tcase_add_test(tc, test_env_filter);
        suite_add_tcase(s, tc);
        return s;
}

NSR_UNIT_MAIN(session_suite)
