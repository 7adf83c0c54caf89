/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal and applied-fingerprint files. The formats are documented at
 * the top of commit.c, next to the protocol that uses them. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "base/durable.h"
#include "txn/journal.h"
#include "txn/txnfs.h"

static const char *const op_names[_NSR_STEP_OP_MAX] = {
        [NSR_STEP_PLACE] = "place", [NSR_STEP_REPLACE] = "replace", [NSR_STEP_REMOVE] = "remove",
        [NSR_STEP_META] = "meta",   [NSR_STEP_WRITE] = "write",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_step_op, nsr_step_op, op_names)
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_FROM_STRING(op, nsr_step_op, op_names)

static const char type_letters[_NSR_ENTRY_TYPE_MAX] = {
        [NSR_ENTRY_FILE] = 'f',
        [NSR_ENTRY_DIR] = 'd',
        [NSR_ENTRY_SYMLINK] = 'l',
        [NSR_ENTRY_OTHER] = 'o',
};

static nsr_entry_type type_from_letter(const char *s) {
        if (!s || !s[0] || s[1])
                return _NSR_ENTRY_TYPE_INVALID;
        for (int i = 0; i < _NSR_ENTRY_TYPE_MAX; i++)
                if (type_letters[i] == s[0])
                        return (nsr_entry_type) i;
        return _NSR_ENTRY_TYPE_INVALID;
}

bool nsr_path_is_below(const char *child, const char *parent) {
        size_t l = strlen(parent);
        return strncmp(child, parent, l) == 0 && child[l] == '/';
}

/* ---- the journal object ------------------------------------------------------ */

nsr_journal *nsr_journal_new(void) {
        return nsr_malloc0(sizeof(nsr_journal));
}

static void step_done(nsr_step *s) {
        free(s->path);
        for (size_t i = 0; i < s->n_xattrs; i++) {
                free(s->xattrs[i].name);
                free(s->xattrs[i].old_value);
                free(s->xattrs[i].new_value);
        }
        free(s->xattrs);
}

nsr_journal *nsr_journal_free(nsr_journal *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_steps; i++)
                step_done(&j->steps[i]);
        free(j->steps);
        free(j->project);
        free(j->source);
        free(j->undoes);
        free(j);
        return NULL;
}

nsr_step *nsr_journal_add_step(nsr_journal *j, nsr_step_op op, const char *path) {
        if (j->n_steps == j->n_allocated) {
                j->n_allocated = j->n_allocated ? j->n_allocated * 2 : 64;
                j->steps = nsr_realloc_array(j->steps, j->n_allocated, sizeof(nsr_step));
        }
        nsr_step *s = &j->steps[j->n_steps++];
        *s = (nsr_step){ .op = op, .path = nsr_strdup(path) };
        return s;
}

void nsr_journal_clear_steps(nsr_journal *j) {
        for (size_t i = 0; i < j->n_steps; i++)
                step_done(&j->steps[i]);
        j->n_steps = 0;
}

void nsr_journal_token_new(char ret[17]) {
        uint8_t b[8];
        if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t) sizeof(b)) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                uint64_t x = (uint64_t) ts.tv_nsec ^ ((uint64_t) getpid() << 32) ^ (uint64_t) ts.tv_sec;
                memcpy(b, &x, sizeof(b));
        }
        for (size_t i = 0; i < sizeof(b); i++)
                snprintf(ret + 2 * i, 3, "%02x", b[i]);
}

nsr_ident nsr_ident_from_stat(const struct stat *st) {
        return (nsr_ident){
                .set = true,
                .dev = (uint64_t) st->st_dev,
                .ino = (uint64_t) st->st_ino,
                .type = nsr_entry_type_from_mode(st->st_mode),
                .mode = st->st_mode & 07777,
        };
}

bool nsr_ident_is(const nsr_ident *id, const struct stat *st) {
        return id->set && id->dev == (uint64_t) st->st_dev && id->ino == (uint64_t) st->st_ino &&
               id->type == nsr_entry_type_from_mode(st->st_mode);
}

/* ---- writing ----------------------------------------------------------------------- */

typedef struct writer {
        int fd;
        char buf[64 * 1024];
        size_t len;
        uint32_t crc;
        uint64_t total;
        uint64_t max;
        int error;
} writer;

static void w_flush(writer *w) {
        if (w->error == 0 && w->len > 0)
                w->error = nsr_write_all(w->fd, w->buf, w->len);
        w->len = 0;
}

static void w_put(writer *w, const char *s, size_t n) {
        if (w->error)
                return;
        w->crc = nsr_crc32(w->crc, s, n);
        w->total += n;
        if (w->total > w->max) {
                w->error = -E2BIG;
                return;
        }
        while (n > 0) {
                if (w->len == sizeof(w->buf))
                        w_flush(w);
                size_t k = sizeof(w->buf) - w->len;
                if (k > n)
                        k = n;
                memcpy(w->buf + w->len, s, k);
                w->len += k;
                s += k;
                n -= k;
        }
}

static void w_str(writer *w, const char *s) {
        w_put(w, s, strlen(s));
}

_printf_(2, 3) static void w_fmt(writer *w, const char *fmt, ...) {
        char b[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b, sizeof(b), fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(b)) {
                w->error = -EINVAL;
                return;
        }
        w_put(w, b, (size_t) n);
}

static void w_hex(writer *w, const void *p, size_t n) {
        _cleanup_free_ char *h = nsr_hex_encode(p, n);
        w_put(w, h, n * 2);
}

static void w_ident(writer *w, const nsr_ident *id) {
        if (!id->set) {
                w_str(w, " -");
                return;
        }
        w_fmt(w, " %" PRIu64 ":%" PRIu64 ":%c:%o", id->dev, id->ino, type_letters[id->type], (unsigned) id->mode);
}

static void w_value(writer *w, const char *v, size_t len) {
        if (!v) {
                w_str(w, " -");
                return;
        }
        w_str(w, " v");
        w_hex(w, v, len);
}

static void w_step(writer *w, const nsr_step *s, size_t k) {
        w_fmt(w, "s %zu %s ", k, nsr_step_op_to_string(s->op));
        if (!s->copy && !s->tree)
                w_str(w, "-");
        if (s->copy)
                w_str(w, "c");
        if (s->tree)
                w_str(w, "t");
        w_str(w, " ");
        w_hex(w, s->path, strlen(s->path));
        w_ident(w, &s->orig);
        w_ident(w, &s->new_id);
        w_str(w, "\n");
        if (s->op != NSR_STEP_META)
                return;
        w_fmt(w, "m %zu %o %u %u %o %u %u %d\n", k, (unsigned) s->old_mode, (unsigned) s->old_uid,
              (unsigned) s->old_gid, (unsigned) s->new_mode, (unsigned) s->new_uid, (unsigned) s->new_gid,
              s->chown ? 1 : 0);
        for (size_t i = 0; i < s->n_xattrs; i++) {
                const nsr_xattr_change *x = &s->xattrs[i];
                w_fmt(w, "x %zu ", k);
                w_hex(w, x->name, strlen(x->name));
                w_value(w, x->old_value, x->old_len);
                w_value(w, x->new_value, x->new_len);
                w_str(w, "\n");
        }
}

static int fsync_retry(int fd) {
        while (fsync(fd) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

int nsr_journal_write_plan(int fd, const nsr_journal *j, nsr_error *err) {
        _cleanup_free_ writer *w = nsr_malloc0(sizeof(*w));
        w->fd = fd;
        w->max = NSR_JOURNAL_MAX;
        w_str(w, "nsrun-journal 1\n");
        w_fmt(w, "token %s\n", j->token);
        w_fmt(w, "kind %s\n", j->undo ? "undo" : "apply");
        w_str(w, "project ");
        w_hex(w, j->project, strlen(j->project));
        w_fmt(w, "\nindex %u\n", j->index);
        w_fmt(w, "run-start %lld %ld\n", (long long) j->run_start.tv_sec, (long) j->run_start.tv_nsec);
        w_str(w, "source ");
        if (j->source)
                w_hex(w, j->source, strlen(j->source));
        else
                w_str(w, "-");
        w_fmt(w, " %" PRIu64 " %" PRIu64 "\n", j->source_dev, j->source_ino);
        w_str(w, "undoes ");
        if (j->undoes)
                w_hex(w, j->undoes, strlen(j->undoes));
        else
                w_str(w, "-");
        w_fmt(w, "\nsteps %zu\n", j->n_steps);
        for (size_t i = 0; i < j->n_steps; i++)
                w_step(w, &j->steps[i], i + 1);
        uint32_t crc = w->crc;
        w_fmt(w, "plan %08" PRIx32 "\n", crc);
        w_flush(w);
        if (w->error == -E2BIG)
                return nsr_error_setx(err, E2BIG, "the journal would be larger than %" PRIu64 " MiB",
                                      NSR_JOURNAL_MAX >> 20);
        if (w->error < 0)
                return nsr_error_set(err, -w->error, "cannot write the journal");
        int r = fsync_retry(fd);
        if (r < 0)
                return nsr_error_set(err, -r, "cannot fsync the journal");
        return 0;
}

int nsr_journal_append(int fd, const char *line, bool sync) {
        /* A torn last line (a crash in the middle of an append) must not
         * swallow this one. */
        struct stat st;
        char last = '\n';
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
                return -EIO;
        _cleanup_free_ char *l = nsr_asprintf("%s%s\n", last == '\n' ? "" : "\n", line);
        int r = nsr_write_all(fd, l, strlen(l));
        if (r < 0)
                return r;
        return sync ? fsync_retry(fd) : 0;
}

int nsr_journal_append_new(int fd, size_t k, const nsr_ident *id) {
        _cleanup_free_ char *l = nsr_asprintf("n %zu %" PRIu64 ":%" PRIu64 ":%c:%o", k, id->dev, id->ino,
                                              type_letters[id->type], (unsigned) id->mode);
        return nsr_journal_append(fd, l, false);
}

int nsr_journal_append_restored(int fd, size_t k, struct timespec ctime) {
        _cleanup_free_ char *l = nsr_asprintf("r %zu %lld %ld", k, (long long) ctime.tv_sec, (long) ctime.tv_nsec);
        return nsr_journal_append(fd, l, false);
}

/* ---- reading -------------------------------------------------------------------------- */

#define MAX_FIELDS 16

static size_t split(char *line, char **f) {
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                if (n == MAX_FIELDS)
                        return MAX_FIELDS + 1;
                f[n++] = t;
        }
        return n;
}

static int parse_i64(const char *s, int64_t *ret) {
        bool neg = s[0] == '-';
        uint64_t v;
        int r = nsr_parse_u64(neg ? s + 1 : s, &v);
        if (r < 0)
                return r;
        if (v > (uint64_t) INT64_MAX)
                return -ERANGE;
        *ret = neg ? -(int64_t) v : (int64_t) v;
        return 0;
}

static int parse_ident(const char *s, nsr_ident *ret) {
        if (streq(s, "-")) {
                *ret = (nsr_ident){ 0 };
                return 0;
        }
        char buf[128];
        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        char *parts[4];
        char *save = NULL;
        size_t n = 0;
        for (char *t = strtok_r(buf, ":", &save); t && n < 4; t = strtok_r(NULL, ":", &save))
                parts[n++] = t;
        if (n != 4 || strtok_r(NULL, ":", &save))
                return -EINVAL;
        nsr_ident id = { .set = true };
        if (nsr_parse_u64(parts[0], &id.dev) < 0 || nsr_parse_u64(parts[1], &id.ino) < 0 ||
            nsr_parse_octal_mode(parts[3], &id.mode) < 0)
                return -EINVAL;
        id.type = type_from_letter(parts[2]);
        if (id.type < 0)
                return -EINVAL;
        *ret = id;
        return 0;
}

static int parse_hex_str(const char *s, char **ret) {
        size_t len;
        char *v = NULL;
        int r = nsr_hex_decode(s, strlen(s), &v, &len);
        if (r < 0)
                return r;
        if (strlen(v) != len) { /* an embedded NUL */
                free(v);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int parse_value(const char *s, char **ret, size_t *ret_len) {
        if (streq(s, "-")) {
                *ret = NULL;
                *ret_len = 0;
                return 0;
        }
        if (s[0] != 'v')
                return -EINVAL;
        return nsr_hex_decode(s + 1, strlen(s + 1), ret, ret_len);
}

static int parse_k(const nsr_journal *j, const char *s, size_t *ret) {
        uint64_t k;
        if (nsr_parse_u64(s, &k) < 0 || k == 0 || k > j->n_steps)
                return -EINVAL;
        *ret = (size_t) k;
        return 0;
}

/* "s K OP FLAGS PATH ORIG NEW" */
static int parse_step(nsr_journal *j, char **f, size_t n) {
        uint64_t k;
        if (n != 7 || nsr_parse_u64(f[1], &k) < 0 || k != (uint64_t) j->n_steps + 1)
                return -EINVAL;
        nsr_step_op op = op_from_string(f[2]);
        if (op < 0)
                return -EINVAL;
        bool copy = false, tree = false;
        if (!streq(f[3], "-"))
                for (const char *c = f[3]; *c; c++) {
                        if (*c == 'c')
                                copy = true;
                        else if (*c == 't')
                                tree = true;
                        else
                                return -EINVAL;
                }
        _cleanup_free_ char *path = NULL;
        nsr_ident orig, nw;
        if (parse_hex_str(f[4], &path) < 0 || parse_ident(f[5], &orig) < 0 || parse_ident(f[6], &nw) < 0)
                return -EINVAL;
        /* The project root itself ("."): only ever a meta step, its mode. */
        if (!nsr_changeset_path_is_valid(path) &&
            !(nsr_changeset_path_is_root(path) && op == NSR_STEP_META && !copy && !tree))
                return -EINVAL;
        nsr_step *s = nsr_journal_add_step(j, op, path);
        s->copy = copy;
        s->tree = tree;
        s->orig = orig;
        s->new_id = nw;
        return 0;
}

/* "m K OMODE OUID OGID NMODE NUID NGID CHOWN", right after its meta step */
static int parse_meta(nsr_journal *j, char **f, size_t n) {
        size_t k;
        if (n != 9 || parse_k(j, f[1], &k) < 0 || k != j->n_steps || j->steps[k - 1].op != NSR_STEP_META)
                return -EINVAL;
        nsr_step *s = &j->steps[k - 1];
        uint32_t ou, og, nu, ng;
        if (nsr_parse_octal_mode(f[2], &s->old_mode) < 0 || nsr_parse_u32(f[3], &ou) < 0 ||
            nsr_parse_u32(f[4], &og) < 0 || nsr_parse_octal_mode(f[5], &s->new_mode) < 0 ||
            nsr_parse_u32(f[6], &nu) < 0 || nsr_parse_u32(f[7], &ng) < 0 || (!streq(f[8], "0") && !streq(f[8], "1")))
                return -EINVAL;
        s->old_uid = ou;
        s->old_gid = og;
        s->new_uid = nu;
        s->new_gid = ng;
        s->chown = streq(f[8], "1");
        /* The root's step changes its mode, never its owner. */
        if (s->chown && nsr_changeset_path_is_root(s->path))
                return -EINVAL;
        return 0;
}

/* "x K NAME OLD NEW" */
static int parse_xattr(nsr_journal *j, char **f, size_t n) {
        size_t k;
        if (n != 5 || parse_k(j, f[1], &k) < 0 || k != j->n_steps || j->steps[k - 1].op != NSR_STEP_META)
                return -EINVAL;
        nsr_step *s = &j->steps[k - 1];
        if (nsr_changeset_path_is_root(s->path))
                return -EINVAL; /* the root's step changes its mode only */
        nsr_xattr_change x = { 0 };
        if (parse_hex_str(f[2], &x.name) < 0)
                return -EINVAL;
        if (parse_value(f[3], &x.old_value, &x.old_len) < 0 || parse_value(f[4], &x.new_value, &x.new_len) < 0) {
                free(x.name);
                free(x.old_value);
                return -EINVAL;
        }
        s->xattrs = nsr_realloc_array(s->xattrs, s->n_xattrs + 1, sizeof(*s->xattrs));
        s->xattrs[s->n_xattrs++] = x;
        return 0;
}

typedef struct reader {
        FILE *f;
        char *line;
        size_t cap;
        uint64_t total;
} reader;

static void reader_done(reader *r) {
        if (r->f)
                fclose(r->f);
        free(r->line);
}

/* Returns the line length without '\n', -ENODATA at EOF, -EPIPE for a last
 * line without '\n' (a torn append), -E2BIG beyond the limits. */
static ssize_t r_line(reader *r) {
        errno = 0;
        ssize_t n = getline(&r->line, &r->cap, r->f);
        if (n < 0)
                return errno ? -errno : -ENODATA;
        r->total += (uint64_t) n;
        if (r->total > NSR_JOURNAL_MAX || (size_t) n > NSR_JOURNAL_LINE_MAX)
                return -E2BIG;
        if (r->line[n - 1] != '\n')
                return -EPIPE;
        r->line[n - 1] = '\0';
        if (strlen(r->line) != (size_t) n - 1) /* a NUL: torn data */
                return -EBADMSG;
        return n - 1;
}

/* The header, in this order: nsrun-journal 1, token, kind, project, index,
 * run-start, source, undoes, steps. Returns the step count. */
static int parse_header(reader *r, nsr_journal *j, uint32_t *crc, uint64_t *ret_steps) {
        static const char *const keys[] = { "nsrun-journal", "token",  "kind",   "project", "index",
                                            "run-start",     "source", "undoes", "steps" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                ssize_t n = r_line(r);
                if (n < 0)
                        return (int) n;
                *crc = nsr_crc32(*crc, r->line, (size_t) n);
                *crc = nsr_crc32(*crc, "\n", 1);
                char *f[MAX_FIELDS];
                size_t nf = split(r->line, f);
                if (nf < 2 || nf > 4 || !streq(f[0], keys[i]))
                        return -EBADMSG;
                int k = 0;
                switch (i) {
                case 0:
                        k = nf == 2 && streq(f[1], "1") ? 0 : -EPROTONOSUPPORT;
                        break;
                case 1:
                        k = nf == 2 && strlen(f[1]) == 16 ? 0 : -EBADMSG;
                        if (k == 0)
                                memcpy(j->token, f[1], 17);
                        break;
                case 2:
                        j->undo = streq(f[1], "undo");
                        k = nf == 2 && (j->undo || streq(f[1], "apply")) ? 0 : -EBADMSG;
                        break;
                case 3:
                        k = nf == 2 ? parse_hex_str(f[1], &j->project) : -EBADMSG;
                        break;
                case 4:
                        k = nf == 2 ? nsr_parse_u32(f[1], &j->index) : -EBADMSG;
                        break;
                case 5: {
                        int64_t sec, nsec;
                        k = nf == 3 && parse_i64(f[1], &sec) == 0 && parse_i64(f[2], &nsec) == 0 && nsec >= 0 &&
                                            nsec < 1000000000
                                    ? 0
                                    : -EBADMSG;
                        if (k == 0)
                                j->run_start = (struct timespec){ .tv_sec = (time_t) sec, .tv_nsec = (long) nsec };
                        break;
                }
                case 6:
                        k = nf == 4 && nsr_parse_u64(f[2], &j->source_dev) == 0 &&
                                            nsr_parse_u64(f[3], &j->source_ino) == 0
                                    ? 0
                                    : -EBADMSG;
                        if (k == 0 && !streq(f[1], "-"))
                                k = parse_hex_str(f[1], &j->source);
                        break;
                case 7:
                        k = nf == 2 ? 0 : -EBADMSG;
                        if (k == 0 && !streq(f[1], "-"))
                                k = parse_hex_str(f[1], &j->undoes);
                        break;
                case 8:
                        k = nf == 2 ? nsr_parse_u64(f[1], ret_steps) : -EBADMSG;
                        break;
                default:
                        break;
                }
                if (k < 0)
                        return k == -EPROTONOSUPPORT ? k : -EBADMSG;
        }
        return 0;
}

static int apply_state_line(nsr_journal *j, char *line) {
        if (streq(line, "prepared"))
                j->prepared = true;
        else if (streq(line, "done"))
                j->done = true;
        else if (streq(line, "swept"))
                j->swept = true;
        else if (streq(line, "rolled-back"))
                j->rolled_back = true;
        else if (nsr_startswith(line, "r ")) {
                char *f[MAX_FIELDS];
                size_t n = split(line, f);
                size_t k;
                int64_t sec, nsec;
                if (n != 4 || parse_k(j, f[1], &k) < 0 || parse_i64(f[2], &sec) < 0 || parse_i64(f[3], &nsec) < 0 ||
                    nsec < 0 || nsec >= 1000000000 || !j->steps[k - 1].orig.set)
                        return -EBADMSG;
                j->steps[k - 1].restored = true;
                j->steps[k - 1].restored_ctime = (struct timespec){ .tv_sec = (time_t) sec, .tv_nsec = (long) nsec };
        } else {
                char *f[MAX_FIELDS];
                size_t n = split(line, f);
                size_t k;
                nsr_ident id;
                if (n != 3 || !streq(f[0], "n") || parse_k(j, f[1], &k) < 0 || parse_ident(f[2], &id) < 0 || !id.set ||
                    !j->steps[k - 1].copy)
                        return -EBADMSG;
                j->steps[k - 1].new_id = id;
        }
        return 0;
}

/* The state lines are at the end of the file: read its last few KiB. */
static int read_tail_state(int fd, nsr_journal *j) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        off_t off = st.st_size > 4096 ? st.st_size - 4096 : 0;
        char buf[4097];
        ssize_t n = pread(fd, buf, 4096, off);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        char *start = buf;
        if (off > 0) { /* the window starts inside a line: skip its end */
                start = strchr(buf, '\n');
                if (!start)
                        return 0;
        }
        for (char *save = NULL, *l = strtok_r(start, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (streq(l, "done"))
                        j->done = true;
                else if (streq(l, "swept"))
                        j->swept = true;
                else if (streq(l, "rolled-back"))
                        j->rolled_back = true;
                else if (streq(l, "prepared"))
                        j->prepared = true;
        }
        return 0;
}

int nsr_journal_read(int fd, bool header_only, nsr_journal **ret, nsr_error *err) {
        int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return nsr_error_set(err, errno, "cannot read the journal");
        if (lseek(dfd, 0, SEEK_SET) < 0) {
                close(dfd);
                return nsr_error_set(err, errno, "cannot read the journal");
        }
        reader r = { .f = fdopen(dfd, "r") };
        if (!r.f) {
                close(dfd);
                return nsr_error_set(err, errno, "cannot read the journal");
        }
        _cleanup_(nsr_journal_freep) nsr_journal *j = nsr_journal_new();
        uint32_t crc = 0;
        uint64_t n_steps = 0;
        int k = parse_header(&r, j, &crc, &n_steps);
        if (k == -ENODATA || k == -EPIPE || k == -EBADMSG) {
                /* Torn before the header was complete: nothing was done. */
                reader_done(&r);
                *ret = TAKE_PTR(j);
                return 0;
        }
        if (k < 0) {
                reader_done(&r);
                return nsr_error_set(err, -k, "cannot read the journal");
        }
        if (header_only) {
                reader_done(&r);
                k = read_tail_state(fd, j);
                if (k < 0)
                        return nsr_error_set(err, -k, "cannot read the journal");
                *ret = TAKE_PTR(j);
                return 0;
        }
        /* The steps, up to "plan CRC". A malformed line here is either torn
         * data (no valid "plan" line follows) or a bug (it does). */
        bool malformed = false;
        for (;;) {
                ssize_t n = r_line(&r);
                if (n == -ENODATA || n == -EPIPE || n == -EBADMSG)
                        break;
                if (n < 0) {
                        reader_done(&r);
                        return nsr_error_set(err, (int) -n, "cannot read the journal");
                }
                if (nsr_startswith(r.line, "plan ")) {
                        char want[16];
                        snprintf(want, sizeof(want), "%08" PRIx32, crc);
                        if (streq(r.line + 5, want)) {
                                if (malformed || j->n_steps != n_steps) {
                                        reader_done(&r);
                                        return nsr_error_setx(err, EBADMSG, "the journal's steps are malformed");
                                }
                                j->plan_valid = true;
                        }
                        break;
                }
                crc = nsr_crc32(crc, r.line, (size_t) n);
                crc = nsr_crc32(crc, "\n", 1);
                if (malformed)
                        continue;
                char *f[MAX_FIELDS];
                size_t nf = split(r.line, f);
                int p = -EINVAL;
                if (nf > 0 && streq(f[0], "s"))
                        p = parse_step(j, f, nf);
                else if (nf > 0 && streq(f[0], "m"))
                        p = parse_meta(j, f, nf);
                else if (nf > 0 && streq(f[0], "x"))
                        p = parse_xattr(j, f, nf);
                if (p < 0 || j->n_steps > n_steps)
                        malformed = true;
        }
        if (!j->plan_valid) {
                reader_done(&r);
                *ret = TAKE_PTR(j);
                return 0;
        }
        for (;;) {
                ssize_t n = r_line(&r);
                if (n == -ENODATA || n == -EPIPE)
                        break; /* the end, or a torn last append */
                if (n < 0) {
                        reader_done(&r);
                        return nsr_error_set(err, (int) -n, "cannot read the journal");
                }
                if (apply_state_line(j, r.line) < 0) {
                        reader_done(&r);
                        return nsr_error_setx(err, EBADMSG, "the journal has a malformed line after its plan");
                }
        }
        reader_done(&r);
        *ret = TAKE_PTR(j);
        return 0;
}

/* ---- fingerprints ------------------------------------------------------------------------ */

void nsr_applied_done(nsr_applied *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->f[i].path);
        free(a->f);
        *a = (nsr_applied){ 0 };
}

void nsr_applied_add(nsr_applied *a, const char *path, const struct stat *st, bool meta_only) {
        if (a->n == a->n_allocated) {
                a->n_allocated = a->n_allocated ? a->n_allocated * 2 : 64;
                a->f = nsr_realloc_array(a->f, a->n_allocated, sizeof(nsr_fingerprint));
        }
        a->f[a->n++] = (nsr_fingerprint){
                .path = nsr_strdup(path),
                .meta_only = meta_only,
                .type = nsr_entry_type_from_mode(st->st_mode),
                .dev = (uint64_t) st->st_dev,
                .ino = (uint64_t) st->st_ino,
                .size = (uint64_t) st->st_size,
                .mtime = st->st_mtim,
                .ctime = st->st_ctim,
                .mode = st->st_mode & 07777,
                .uid = st->st_uid,
                .gid = st->st_gid,
        };
}

bool nsr_fingerprint_matches(const nsr_fingerprint *f, const struct stat *st, bool ignore_ctime) {
        if (f->dev != (uint64_t) st->st_dev || f->ino != (uint64_t) st->st_ino ||
            f->type != nsr_entry_type_from_mode(st->st_mode))
                return false;
        if (f->meta_only)
                return f->mode == (st->st_mode & 07777) && f->uid == st->st_uid && f->gid == st->st_gid;
        return f->size == (uint64_t) st->st_size && f->mtime.tv_sec == st->st_mtim.tv_sec &&
               f->mtime.tv_nsec == st->st_mtim.tv_nsec &&
               (ignore_ctime || (f->ctime.tv_sec == st->st_ctim.tv_sec && f->ctime.tv_nsec == st->st_ctim.tv_nsec)) &&
               f->mode == (st->st_mode & 07777) && f->uid == st->st_uid && f->gid == st->st_gid;
}

int nsr_applied_write(int dirfd, const char *name, const nsr_applied *a, nsr_error *err) {
        _cleanup_(nsr_durable_done) nsr_durable d = NSR_DURABLE_INIT;
        int r = nsr_durable_begin(&d, dirfd, name, 0600, 0, err);
        if (r < 0)
                return nsr_error_prefix(err, "cannot create the fingerprints file");
        _cleanup_free_ writer *w = nsr_malloc0(sizeof(*w));
        w->fd = d.fd;
        w->max = NSR_APPLIED_MAX;
        w_str(w, "nsrun-applied 1\n");
        for (size_t i = 0; i < a->n; i++) {
                const nsr_fingerprint *f = &a->f[i];
                w_str(w, f->meta_only ? "m " : "f ");
                w_hex(w, f->path, strlen(f->path));
                w_fmt(w, " %c %" PRIu64 " %" PRIu64 " %" PRIu64 " %lld %ld %lld %ld %o %u %u\n", type_letters[f->type],
                      f->dev, f->ino, f->size, (long long) f->mtime.tv_sec, (long) f->mtime.tv_nsec,
                      (long long) f->ctime.tv_sec, (long) f->ctime.tv_nsec, (unsigned) f->mode, (unsigned) f->uid,
                      (unsigned) f->gid);
        }
        w_str(w, "end\n");
        w_flush(w);
        /* No fsync here: the caller syncs the file systems before the
         * journal says done. */
        if (w->error < 0)
                return nsr_durable_finish(&d, nsr_error_set(err, -w->error, "cannot write the fingerprints file"), err);
        r = nsr_durable_finish(&d, 0, err);
        return r < 0 ? nsr_error_prefix(err, "the fingerprints file") : 0;
}

static int fp_cmp(const void *x, const void *y) {
        return nsr_changeset_path_cmp(((const nsr_fingerprint *) x)->path, ((const nsr_fingerprint *) y)->path);
}

static int parse_fingerprint(char **f, size_t n, nsr_fingerprint *fp) {
        int64_t ms, mns, cs, cns;
        uint32_t uid, gid;
        if (n != 13 || (!streq(f[0], "f") && !streq(f[0], "m")))
                return -EINVAL;
        fp->meta_only = streq(f[0], "m");
        fp->type = type_from_letter(f[2]);
        if (parse_hex_str(f[1], &fp->path) < 0)
                return -EINVAL;
        if (fp->type < 0 || nsr_parse_u64(f[3], &fp->dev) < 0 || nsr_parse_u64(f[4], &fp->ino) < 0 ||
            nsr_parse_u64(f[5], &fp->size) < 0 || parse_i64(f[6], &ms) < 0 || parse_i64(f[7], &mns) < 0 ||
            parse_i64(f[8], &cs) < 0 || parse_i64(f[9], &cns) < 0 || nsr_parse_octal_mode(f[10], &fp->mode) < 0 ||
            nsr_parse_u32(f[11], &uid) < 0 || nsr_parse_u32(f[12], &gid) < 0) {
                free(fp->path);
                fp->path = NULL;
                return -EINVAL;
        }
        fp->mtime = (struct timespec){ .tv_sec = (time_t) ms, .tv_nsec = (long) mns };
        fp->ctime = (struct timespec){ .tv_sec = (time_t) cs, .tv_nsec = (long) cns };
        fp->uid = uid;
        fp->gid = gid;
        return 0;
}

int nsr_applied_read(int dirfd, const char *name, nsr_applied *ret, nsr_error *err) {
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return nsr_error_set(err, errno, "cannot open the fingerprints of the run");
        reader r = { .f = fdopen(fd, "r") };
        if (!r.f) {
                close(fd);
                return nsr_error_set(err, errno, "cannot open the fingerprints of the run");
        }
        nsr_applied a = { 0 };
        bool header = false, end = false;
        int k = 0;
        for (;;) {
                ssize_t n = r_line(&r);
                if (n == -ENODATA)
                        break;
                if (n < 0) {
                        k = (int) n;
                        break;
                }
                if (!header) {
                        header = streq(r.line, "nsrun-applied 1");
                        if (!header) {
                                k = -EBADMSG;
                                break;
                        }
                        continue;
                }
                if (end || streq(r.line, "end")) {
                        k = end ? -EBADMSG : 0;
                        end = true;
                        if (k < 0)
                                break;
                        continue;
                }
                char *f[MAX_FIELDS];
                size_t nf = split(r.line, f);
                nsr_fingerprint fp = { 0 };
                if (parse_fingerprint(f, nf, &fp) < 0) {
                        k = -EBADMSG;
                        break;
                }
                if (a.n == a.n_allocated) {
                        a.n_allocated = a.n_allocated ? a.n_allocated * 2 : 64;
                        a.f = nsr_realloc_array(a.f, a.n_allocated, sizeof(nsr_fingerprint));
                }
                a.f[a.n++] = fp;
        }
        reader_done(&r);
        if (k == 0 && !end)
                k = -EBADMSG;
        if (k < 0) {
                nsr_applied_done(&a);
                return nsr_error_set(err, -k, "cannot read the fingerprints of the run");
        }
        if (a.n > 1)
                qsort(a.f, a.n, sizeof(nsr_fingerprint), fp_cmp);
        *ret = a;
        return 0;
}

size_t nsr_applied_find(const nsr_applied *a, const char *path, bool *ret_found) {
        size_t lo = 0, hi = a->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = nsr_changeset_path_cmp(a->f[mid].path, path);
                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}
