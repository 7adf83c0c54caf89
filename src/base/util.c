/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/util.h"

_noreturn_ static void oom(void) {
        static const char msg[] = "nsrun: out of memory\n";
        (void) !write(STDERR_FILENO, msg, sizeof(msg) - 1);
        abort();
}

void *nsr_malloc(size_t n) {
        void *p = malloc(n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *nsr_malloc0(size_t n) {
        void *p = calloc(1, n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *nsr_realloc_array(void *p, size_t n, size_t size) {
        if (size && n > SIZE_MAX / size)
                oom();
        void *q = realloc(p, (n * size) != 0 ? n * size : 1);
        if (!q)
                oom();
        return q;
}

char *nsr_strdup(const char *s) {
        char *r = strdup(s);
        if (!r)
                oom();
        return r;
}

char *nsr_strndup(const char *s, size_t n) {
        char *r = strndup(s, n);
        if (!r)
                oom();
        return r;
}

char *nsr_vasprintf(const char *fmt, va_list ap) {
        char *r = NULL;
        if (vasprintf(&r, fmt, ap) < 0)
                oom();
        return r;
}

char *nsr_asprintf(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *r = nsr_vasprintf(fmt, ap);
        va_end(ap);
        return r;
}

void nsr_strappendf(char **s, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *add = nsr_vasprintf(fmt, ap);
        va_end(ap);
        char *n = nsr_asprintf("%s%s", *s ? *s : "", add);
        free(*s);
        *s = n;
}

void nsr_strv_free(char **v) {
        if (!v)
                return;
        for (char **i = v; *i; i++)
                free(*i);
        free(v);
}

size_t nsr_strv_length(char *const *v) {
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

int nsr_strv_push(char ***v, char *s) {
        size_t n = nsr_strv_length(*v);
        char **w = nsr_realloc_array(*v, n + 2, sizeof(char *));
        w[n] = s;
        w[n + 1] = NULL;
        *v = w;
        return 0;
}

int nsr_strv_extend(char ***v, const char *s) {
        return nsr_strv_push(v, nsr_strdup(s));
}

char **nsr_strv_copy(char *const *v) {
        size_t n = nsr_strv_length(v);
        char **w = nsr_malloc0((n + 1) * sizeof(char *));
        for (size_t i = 0; i < n; i++)
                w[i] = nsr_strdup(v[i]);
        return w;
}

bool nsr_strv_contains(char *const *v, const char *s) {
        for (size_t i = 0; v && v[i]; i++)
                if (streq(v[i], s))
                        return true;
        return false;
}

bool nsr_startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool nsr_endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

/* strtoull accepts leading blanks and a minus sign (wrapping the value);
 * callers of these parsers want neither. */
static int parse_unsigned(const char *s, int base, unsigned long long max, unsigned long long *ret) {
        char *end = NULL;
        if (!s || !*s || isspace((unsigned char) *s) || *s == '-' || *s == '+')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, base);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || !end || *end != '\0')
                return -EINVAL;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int nsr_parse_int(const char *s, int *ret) {
        unsigned long long v;
        bool neg = s && *s == '-';
        int r = parse_unsigned(neg ? s + 1 : s, 10, neg ? (unsigned long long) INT_MAX + 1 : INT_MAX, &v);
        if (r < 0)
                return r;
        *ret = neg ? (int) -(long long) v : (int) v;
        return 0;
}

int nsr_parse_fd(const char *s, int *ret) {
        unsigned long long v;
        int r = parse_unsigned(s, 10, INT_MAX, &v);
        if (r < 0)
                return r;
        *ret = (int) v;
        return 0;
}

int nsr_parse_u32(const char *s, uint32_t *ret) {
        unsigned long long v;
        int r = parse_unsigned(s, 10, UINT32_MAX, &v);
        if (r < 0)
                return r;
        *ret = (uint32_t) v;
        return 0;
}

int nsr_parse_u64(const char *s, uint64_t *ret) {
        unsigned long long v;
        int r = parse_unsigned(s, 10, UINT64_MAX, &v);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

int nsr_parse_octal_mode(const char *s, mode_t *ret) {
        unsigned long long v;
        int r = parse_unsigned(s, 8, 07777, &v);
        if (r < 0)
                return r;
        *ret = (mode_t) v;
        return 0;
}

int nsr_parse_size_suffix(const char *s, uint64_t *ret) {
        char *end = NULL;
        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || v == 0)
                return -EINVAL;
        unsigned shift = 0;
        switch (*end) {
        case 'K':
        case 'k':
                shift = 10;
                end++;
                break;
        case 'M':
        case 'm':
                shift = 20;
                end++;
                break;
        case 'G':
        case 'g':
                shift = 30;
                end++;
                break;
        case 'T':
        case 't':
                shift = 40;
                end++;
                break;
        default:
                break;
        }
        if (shift && *end == 'i')
                end++;
        if (*end == 'B')
                end++;
        if (*end || (shift && v > (UINT64_MAX >> shift)))
                return -EINVAL;
        *ret = (uint64_t) v << shift;
        return 0;
}

int nsr_read_all(int fd, size_t max, char **ret, size_t *ret_len) {
        /* We read up to one byte past max: that byte is what tells "exactly
         * max bytes, then EOF" apart from "too much". */
        if (max > SIZE_MAX / 2)
                max = SIZE_MAX / 2;
        size_t limit = max + 1;
        size_t len = 0, cap = limit < 4096 ? limit : 4096;
        char *buf = nsr_malloc0(cap + 1);
        for (;;) {
                if (len > max) {
                        free(buf);
                        return -EFBIG;
                }
                if (len == cap) {
                        cap = cap > limit / 2 ? limit : cap * 2;
                        buf = nsr_realloc_array(buf, cap + 1, 1);
                }
                ssize_t k = read(fd, buf + len, cap - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = errno;
                        free(buf);
                        return -e;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = '\0';
        *ret = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int nsr_read_full(int fd, void *buf, size_t len) {
        size_t done = 0;
        while (done < len) {
                ssize_t k = read(fd, (char *) buf + done, len - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        return (int) done;
}

int nsr_write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t k = write(fd, p, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                len -= (size_t) k;
        }
        return 0;
}

int nsr_write_file_at(int dirfd, const char *path, const char *data) {
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return nsr_write_all(fd, data, strlen(data));
}

char *nsr_path_join(const char *a, const char *b) {
        size_t la = strlen(a);
        while (la > 0 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        return nsr_asprintf("%.*s/%s", (int) la, a, b);
}

bool nsr_path_under(const char *path, const char *dir) {
        size_t l = strlen(dir);
        while (l > 1 && dir[l - 1] == '/')
                l--;
        if (l == 0)
                return path[0] != '/';
        if (l == 1 && dir[0] == '/')
                return path[0] == '/';
        return strncmp(path, dir, l) == 0 && (path[l] == '/' || path[l] == '\0');
}

static char *normalize(const char *p, bool dotdot) {
        size_t n = strlen(p);
        char *out = nsr_malloc0(n + 2);
        size_t o = 0, root = p[0] == '/' ? 1 : 0;
        if (root)
                out[o++] = '/';
        const char *s = p;
        while (*s) {
                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                const char *e = strchrnul(s, '/');
                size_t l = (size_t) (e - s);
                if (dotdot && l == 2 && s[0] == '.' && s[1] == '.') {
                        while (o > root && out[o - 1] != '/')
                                o--;
                        if (o > root)
                                o--;
                } else if (!(l == 1 && s[0] == '.')) {
                        if (o > 0 && out[o - 1] != '/')
                                out[o++] = '/';
                        memcpy(out + o, s, l);
                        o += l;
                }
                s = e;
        }
        if (o == 0)
                out[o++] = '.';
        out[o] = '\0';
        return out;
}

char *nsr_path_normalize(const char *p) {
        return normalize(p, false);
}

char *nsr_path_normalize_dotdot(const char *p) {
        return normalize(p, true);
}

const char *nsr_datadir(void) {
        const char *d = getenv("NSRUN_DATADIR");
        if (d && *d)
                return d;
#if defined(NSR_SOURCE_DIR) && defined(NSR_BUILT_BINARY)
        /* The binary as built, not installed yet (./build/src/nsrun): its
         * profiles and policies are in the source tree. Only that very
         * file qualifies, so an installed nsrun never reads a source tree. */
        struct stat st;
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n > 0) {
                self[n] = '\0';
                if (streq(self, NSR_BUILT_BINARY) && stat(NSR_PKGDATADIR "/profiles", &st) < 0 &&
                    stat(NSR_SOURCE_DIR "/profiles", &st) == 0)
                        return NSR_SOURCE_DIR;
        }
#endif
        return NSR_PKGDATADIR;
}

/* Days since 1970-01-01 of a proleptic Gregorian date, and back: eras of
 * 400 years (146097 days) from 0000-03-01, so that leap days end a year. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

void nsr_boot_id(char ret[40]) {
        /* It cannot change while a process lives: read once (a project
         * run asks for it in its fence and for its meta). */
        static char boot[40];
        static bool read_once;
        if (!read_once) {
                _cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
                int n = fd >= 0 ? nsr_read_full(fd, boot, sizeof(boot) - 1) : -1;
                boot[n > 0 ? n : 0] = '\0';
                char *nl = strchr(boot, '\n');
                if (nl)
                        *nl = '\0';
                /* A failed read is tried again next time. */
                read_once = boot[0] != '\0';
        }
        memcpy(ret, boot, sizeof(boot));
}

bool nsr_kernel_at_least(unsigned maj, unsigned min) {
        struct utsname u;
        unsigned a = 0, b = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &a, &b) != 2)
                return false;
        return a > maj || (a == maj && b >= min);
}

bool nsr_test_hook_on(const char *name) {
#ifdef NSR_TEST_HOOKS
        const char *v = getenv(name);
        return v && streq(v, "1");
#else
        (void) name;
        return false;
#endif
}

bool nsr_gmtime(int64_t t, struct tm *ret) {
        int64_t days = t / 86400, secs = t % 86400;
        if (secs < 0) {
                secs += 86400;
                days--;
        }
        /* |days| < 2^47: no overflow below, and a year far past INT_MAX. */
        if (days > INT64_C(1) << 46 || days < -(INT64_C(1) << 46))
                return false;
        int64_t z = days + 719468;
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        int64_t doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153;
        int64_t d = doy - (153 * mp + 2) / 5 + 1;
        int64_t m = mp < 10 ? mp + 3 : mp - 9;
        int64_t y = yoe + era * 400 + (m <= 2);
        if (y - 1900 > INT_MAX || y - 1900 < INT_MIN)
                return false;
        *ret = (struct tm){
                .tm_year = (int) (y - 1900),
                .tm_mon = (int) (m - 1),
                .tm_mday = (int) d,
                .tm_hour = (int) (secs / 3600),
                .tm_min = (int) (secs / 60 % 60),
                .tm_sec = (int) (secs % 60),
                .tm_wday = (int) (((days % 7) + 11) % 7), /* 1970-01-01 was a Thursday */
                .tm_yday = (int) (days - days_from_civil(y, 1, 1)),
        };
        return true;
}

char *nsr_hex_encode(const void *data, size_t len) {
        static const char digits[] = "0123456789abcdef";
        const unsigned char *s = data;
        char *out = nsr_malloc0(2 * len + 1);
        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[s[i] >> 4];
                out[2 * i + 1] = digits[s[i] & 15];
        }
        return out;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int nsr_hex_decode(const char *hex, size_t n, char **ret, size_t *ret_len) {
        if (n % 2 != 0)
                return -EINVAL;
        char *out = nsr_malloc0(n / 2 + 1);
        for (size_t i = 0; i < n / 2; i++) {
                int a = hexval(hex[2 * i]), b = hexval(hex[2 * i + 1]);
                if (a < 0 || b < 0) {
                        free(out);
                        return -EINVAL;
                }
                out[i] = (char) (a << 4 | b);
        }
        *ret = out;
        if (ret_len)
                *ret_len = n / 2;
        return 0;
}

static int cloexec_range(unsigned first, unsigned last) {
        if (first > last)
                return 0;
#ifdef SYS_close_range
        if (syscall(SYS_close_range, first, last, CLOSE_RANGE_CLOEXEC) == 0)
                return 0;
        if (errno != ENOSYS && errno != EINVAL)
                return -errno;
#endif
        /* Before Linux 5.11: walk the open fds. */
        _cleanup_closedir_ DIR *d = NULL;
        int r = nsr_opendir_at(AT_FDCWD, "/proc/self/fd", 0, &d);
        if (r < 0)
                return r;
        int dfd = dirfd(d);
        /* An fd not seen would stay open across exec: a read error fails. */
        FOREACH_DIRENT(e, d, return -errno) {
                char *end = NULL;
                unsigned long fd = strtoul(e->d_name, &end, 10);
                if (!end || *end || (int) fd == dfd || fd < first || fd > last)
                        continue;
                int fl = fcntl((int) fd, F_GETFD);
                if (fl >= 0)
                        (void) fcntl((int) fd, F_SETFD, fl | FD_CLOEXEC);
        }
        return 0;
}

int nsr_fds_cloexec_above_stdio(int keep) {
        if (keep < 3)
                return cloexec_range(3, ~0U);
        int r = cloexec_range(3, (unsigned) keep - 1);
        return r < 0 ? r : cloexec_range((unsigned) keep + 1, ~0U);
}

static int cmp_fd(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

int nsr_close_all_but(int from, int *keep, size_t n) {
        qsort(keep, n, sizeof(int), cmp_fd);
        unsigned lo = from < 0 ? 0 : (unsigned) from;
        for (size_t i = 0; i < n; i++) {
                if (keep[i] < 0 || (unsigned) keep[i] < lo)
                        continue;
                if ((unsigned) keep[i] > lo && syscall(SYS_close_range, lo, (unsigned) keep[i] - 1, 0u) < 0)
                        return -errno;
                lo = (unsigned) keep[i] + 1;
        }
        if (syscall(SYS_close_range, lo, ~0U, 0u) < 0)
                return -errno;
        return 0;
}

size_t nsr_edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        if (la > 32 || lb > 32)
                return SIZE_MAX;
        size_t row[33];
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];
                        size_t best = diag + (a[i - 1] != b[j - 1]);
                        if (up + 1 < best)
                                best = up + 1;
                        if (row[j - 1] + 1 < best)
                                best = row[j - 1] + 1;
                        row[j] = best;
                        diag = up;
                }
        }
        return row[lb];
}

bool nsr_close_enough(const char *typed, const char *candidate) {
        typed += strspn(typed, "-");
        candidate += strspn(candidate, "-");
        size_t d = nsr_edit_distance(typed, candidate);
        return d <= 2 && d * 2 < strlen(typed);
}
