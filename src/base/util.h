/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers shared by every module: cleanup attributes, string vectors,
 * strict number parsing and full reads and writes. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define _unused_       __attribute__((unused))
#define _noreturn_     __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _must_check_   __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* DEFINE_CLEANUP_FUNC(type, func) makes funcp(type *) that calls func(*p)
 * when *p is not NULL; _cleanup_(funcp) then runs it at scope exit. */
#define DEFINE_CLEANUP_FUNC(type, func)                                                                                \
        static inline void func##p(type *p) {                                                                          \
                if (*p)                                                                                                \
                        func(*p);                                                                                      \
        }

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void nsr_freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(nsr_freep)

static inline void nsr_closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(nsr_closep)

static inline void nsr_fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(nsr_fclosep)

void nsr_strv_free(char **v);
DEFINE_CLEANUP_FUNC(char **, nsr_strv_free)
#define _cleanup_strv_free_ _cleanup_(nsr_strv_freep)

/* Ownership moves only through these two. */
#define TAKE_PTR(p)                                                                                                    \
        ({                                                                                                             \
                __typeof__(p) _taken = (p);                                                                            \
                (p) = NULL;                                                                                            \
                _taken;                                                                                                \
        })
#define TAKE_FD(fd)                                                                                                    \
        ({                                                                                                             \
                int _taken = (fd);                                                                                     \
                (fd) = -1;                                                                                             \
                _taken;                                                                                                \
        })

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

/* Allocation failure is not recoverable in a launcher; these abort with a
 * message instead of spreading NULL checks over every caller. */
/* A buffer the caller fills before it reads it: not zeroed, so that its
 * pages are touched only as far as they are used (a memset of fresh heap
 * is a page fault for each 4 KiB, after a fork a copy too). */
void *nsr_malloc(size_t n);
void *nsr_malloc0(size_t n);
void *nsr_realloc_array(void *p, size_t n, size_t size);
char *nsr_strdup(const char *s);
char *nsr_strndup(const char *s, size_t n);
char *nsr_asprintf(const char *fmt, ...) _printf_(1, 2);
/* Appends the formatted text to *s (malloc'ed, or NULL for ""). */
void nsr_strappendf(char **s, const char *fmt, ...) _printf_(2, 3);
char *nsr_vasprintf(const char *fmt, va_list ap) _printf_(1, 0);

/* String vectors: NULL-terminated arrays of owned strings. */
size_t nsr_strv_length(char *const *v);
int nsr_strv_push(char ***v, char *s); /* takes ownership of s */
int nsr_strv_extend(char ***v, const char *s);
char **nsr_strv_copy(char *const *v);
bool nsr_strv_contains(char *const *v, const char *s);

static inline bool streq(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}
bool nsr_startswith(const char *s, const char *prefix);

/* Enum <-> name tables. Given a table indexed by the enum,
 *     static const char *const foo_names[_FOO_MAX] = { [FOO_A] = "a", ... };
 * DEFINE_STRING_TABLE_LOOKUP(nsr_foo, nsr_foo, foo_names) defines
 *     const char *nsr_foo_to_string(nsr_foo i);  NULL out of range or unnamed
 *     nsr_foo nsr_foo_from_string(const char *s); -EINVAL when s is NULL or no name
 * DEFINE_PRIVATE_STRING_TABLE_LOOKUP makes them static; the _TO_STRING and
 * _FROM_STRING forms define one direction. Names compare exactly. */
#define _DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table, scope)                                                \
        scope const char *name##_to_string(type i) {                                                                   \
                if ((size_t) i >= ELEMENTSOF(table))                                                                   \
                        return NULL;                                                                                   \
                return (table)[(size_t) i];                                                                            \
        }
#define _DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table, scope)                                              \
        scope type name##_from_string(const char *s) {                                                                 \
                if (!s)                                                                                                \
                        return (type) -EINVAL;                                                                         \
                for (size_t _i = 0; _i < ELEMENTSOF(table); _i++)                                                      \
                        if ((table)[_i] && strcmp((table)[_i], s) == 0)                                                \
                                return (type) _i;                                                                      \
                return (type) -EINVAL;                                                                                 \
        }
#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table)                                                        \
        _DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table, )
#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table)                                                      \
        _DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table, )
#define DEFINE_STRING_TABLE_LOOKUP(name, type, table)                                                                  \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table)                                                        \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table)
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table)                                                \
        _DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table, _unused_ static)
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table)                                              \
        _DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table, _unused_ static)
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP(name, type, table)                                                          \
        DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table)                                                \
        DEFINE_PRIVATE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table)
bool nsr_endswith(const char *s, const char *suffix);
/* Levenshtein distance of two short words (SIZE_MAX past 32 bytes), for
 * "did you mean". */
size_t nsr_edit_distance(const char *a, const char *b);
/* Whether a candidate is close enough to a mistyped word to suggest it:
 * at most 2 edits, and fewer than half the word's length (leading dashes
 * not counted). */
bool nsr_close_enough(const char *typed, const char *candidate);

/* Strict parsers: the whole string must be consumed, no sign games, no
 * overflow. They return 0 or -EINVAL / -ERANGE and set *ret only on success. */
int nsr_parse_int(const char *s, int *ret);
int nsr_parse_fd(const char *s, int *ret);
int nsr_parse_u32(const char *s, uint32_t *ret);
int nsr_parse_u64(const char *s, uint64_t *ret);
int nsr_parse_octal_mode(const char *s, mode_t *ret);
/* A byte count with an optional K, M, G or T suffix (powers of 1024, "iB"
 * or "B" allowed after it); zero is refused. */
int nsr_parse_size_suffix(const char *s, uint64_t *ret);

/* Read until EOF, at most max bytes (-EFBIG beyond). The buffer is
 * NUL-terminated for convenience; *ret_len excludes that NUL. */
int nsr_read_all(int fd, size_t max, char **ret, size_t *ret_len);
int nsr_write_all(int fd, const void *buf, size_t len);
int nsr_read_full(int fd, void *buf, size_t len); /* returns bytes read, short only on EOF */
/* Marks every fd from 3 up close-on-exec, except keep (-1 for none), so
 * that what a caller left open does not reach an exec'd program. */
int nsr_fds_cloexec_above_stdio(int keep);
/* Closes every fd from `from` up but those in keep[0..n) (negative ones
 * are skipped; keep is sorted in place). Returns 0 or -errno. */
int nsr_close_all_but(int from, int *keep, size_t n);
int nsr_write_file_at(int dirfd, const char *path, const char *data);

/* Where nsrun's data files live: $NSRUN_DATADIR when set (tests run
 * uninstalled), else $(pkgdatadir). */
const char *nsr_datadir(void);
/* Lower-case hex of len bytes. Used to store arbitrary bytes (paths, argv,
 * xattrs) in line files. */
char *nsr_hex_encode(const void *data, size_t len);

/* The kernel's boot id (/proc/sys/kernel/random/boot_id, without its
 * newline), read once per process; "" when it cannot be read. */
void nsr_boot_id(char ret[40]);

/* Whether the running kernel's release is maj.min or later (false when
 * uname fails or its release does not parse). */
bool nsr_kernel_at_least(unsigned maj, unsigned min);

/* Whether the test hook `name` (an environment variable) is "1": never in
 * a build without --enable-test-hooks. */
bool nsr_test_hook_on(const char *name);

/* NSR_ASAN: defined in a build with AddressSanitizer (gcc's or clang's
 * spelling), for the few places that must tell its runtime about a stack of
 * their own or run its leak check early. */
#if defined(__SANITIZE_ADDRESS__)
#define NSR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NSR_ASAN 1
#endif
#endif

struct tm;
/* gmtime_r without glibc's time zone setup: its first call reads
 * /etc/localtime (seven system calls) even for UTC, and a run needs UTC
 * only. The calendar fields, tm_wday and tm_yday; false when the year
 * does not fit tm_year. */
bool nsr_gmtime(int64_t t, struct tm *ret);
/* Decodes len hex digits (an even count); the result is NUL-terminated.
 * -EINVAL for bad input. */
int nsr_hex_decode(const char *hex, size_t len, char **ret, size_t *ret_len);

/* Joins a and b with exactly one slash. */
char *nsr_path_join(const char *a, const char *b);
/* Strips duplicate and trailing slashes and "." components (no symlink
 * resolution). Returns a new string. */
char *nsr_path_normalize(const char *p);
/* The same, and ".." takes the component before it away (lexically: as
 * the kernel would only without symlinks); above the root stays at the
 * root. For an absolute path. */
char *nsr_path_normalize_dotdot(const char *p);
/* Whether path is dir or lies below it, by whole components: "/a/b" and
 * "/a/b/c" are under "/a/b", "/a/bc" is not. Slashes at the end of dir do
 * not count; dir "/" holds every absolute path, and "" (the root of
 * relative paths) every relative one. Nothing else is normalised: compare
 * paths of one form (real, or relative to one root). Pure. */
bool nsr_path_under(const char *path, const char *dir);
