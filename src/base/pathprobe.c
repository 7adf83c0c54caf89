/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsr_paths_exist: the answers lstat(2) gives, for fewer system calls.
 *
 * A name missing from a listing of its dir is a name that a lookup in that
 * dir does not find, on a file system whose lookups match names exactly
 * and list every name they find: ext2/3/4 and tmpfs without casefolding
 * (checked on the dir itself: it is a per-dir flag), btrfs. Not on others:
 * a case-insensitive dir (casefold, vfat, XFS's ASCII-CI) finds ".SSH" for
 * ".ssh"; autofs and FUSE may find names they never list; an overlay's
 * layers may be any of these. There, and wherever the dir cannot be read,
 * every path gets its own lstat. A name the listing has gets its own lstat
 * too (few exist), so a permission or a dangling link answers as lstat
 * does. A listed dir that lacks the next component of a path below it
 * answers for that path too: ~/.config missing from the listing of ~ is
 * every ~/.config/... missing, as a lookup would fail at that component.
 * Nothing is cached: each call lists anew, so a path created since the
 * last call is seen. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>

#include "base/dirent.h"
#include "base/pathprobe.h"

#ifndef FS_CASEFOLD_FL
#define FS_CASEFOLD_FL 0x40000000
#endif

/* A dir with more entries than this many per path asked about costs more to
 * list than the lookups it saves. */
#define ENTRIES_PER_PATH 64

bool nsr_path_exists(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0 || errno == EOVERFLOW;
}

/* Dirs are found again by a hash of their path, names in a listing by a
 * hash of the name: sorting hundreds of paths cost more than the lookups
 * it saved. Eight bytes a step: this runs over every path of hide.list at
 * each launch. */
static uint64_t hash(const char *s, size_t len) {
        uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
        size_t i = 0;
        for (; i + 8 <= len; i += 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                h = (h ^ w) * 0xff51afd7ed558ccdULL;
                h ^= h >> 32;
        }
        uint64_t w = 0;
        memcpy(&w, s + i, len - i);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
        return h ^ (h >> 29);
}

/* A set of names, open addressing; the names point into the listing's own
 * copy. */
typedef struct nameset {
        const char **name;
        size_t *len;
        size_t cap; /* a power of two, at least twice the names */
} nameset;

static void nameset_done(nameset *s) {
        free(s->name);
        free(s->len);
}

static void nameset_put(nameset *s, const char *name, size_t len) {
        for (size_t i = hash(name, len) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
                if (!s->name[i]) {
                        s->name[i] = name;
                        s->len[i] = len;
                        return;
                }
                if (s->len[i] == len && memcmp(s->name[i], name, len) == 0)
                        return;
        }
}

static bool nameset_has(const nameset *s, const char *name, size_t len) {
        for (size_t i = hash(name, len) & (s->cap - 1); s->name[i]; i = (i + 1) & (s->cap - 1))
                if (s->len[i] == len && memcmp(s->name[i], name, len) == 0)
                        return true;
        return false;
}

/* The paths of one dir. */
typedef struct group {
        const char *dir; /* the first path's text: its dir is dir[0..dirlen), "" for "/" */
        size_t dirlen;
        size_t n;
        size_t first; /* of its paths, chained through next[] */
        enum { UNSEEN, LISTED, MISSING } state;
        nameset names; /* LISTED: the dir's names */
        char *text;    /* LISTED: the names, NUL-separated */
} group;

/* An absolute path with no empty, "." or ".." component and no trailing
 * slash (others are looked up one by one), and its dir's length. From
 * slash to slash, which strchr finds a word at a time. */
static bool plain(const char *path, size_t *ret_dirlen) {
        if (path[0] != '/')
                return false;
        const char *last = path;
        for (const char *c = path + 1;; c++) {
                const char *e = strchrnul(c, '/');
                size_t l = (size_t) (e - c);
                if (l == 0 || (c[0] == '.' && (l == 1 || (l == 2 && c[1] == '.'))))
                        return false;
                if (!*e)
                        break;
                last = e;
                c = e;
        }
        *ret_dirlen = (size_t) (last - path);
        return true;
}

/* Whether names in the open dir fd are exactly the names its lookups find
 * (see the top of the file). */
static bool listing_exact(int fd) {
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return false;
        switch ((unsigned long) sf.f_type) {
        case EXT4_SUPER_MAGIC: /* also ext2 and ext3 */
        case TMPFS_MAGIC:
        case BTRFS_SUPER_MAGIC:
                break;
        default:
                return false;
        }
        /* The kernel reads and writes an int, whatever the header says. */
        int flags = 0;
        if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
                return false;
        return !(flags & FS_CASEFOLD_FL);
}

/* Lists g's dir: LISTED with its names, MISSING when lstat of anything in
 * it fails for the dir (missing, not a dir, a link loop), else UNSEEN (each
 * path is looked up). */
static void list_dir(group *g) {
        _cleanup_free_ char *dir = g->dirlen ? nsr_strndup(g->dir, g->dirlen) : nsr_strdup("/");
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
                        g->state = MISSING;
                return;
        }
        if (!listing_exact(fd)) {
                close(fd);
                return;
        }
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_fdopendir(fd, &d) < 0)
                return;
        size_t max = g->n * ENTRIES_PER_PATH, count = 0, len = 0, cap = 4096;
        _cleanup_free_ char *text = nsr_malloc0(cap);
        bool whole = true;
        FOREACH_DIRENT(de, d, whole = false) {
                if (++count > max) {
                        whole = false;
                        break;
                }
                size_t l = strlen(de->d_name) + 1;
                if (len + l > cap) {
                        cap = 2 * (len + l);
                        text = nsr_realloc_array(text, cap, 1);
                }
                memcpy(text + len, de->d_name, l);
                len += l;
        }
        if (!whole)
                return;
        nameset s = { .cap = 16 };
        while (s.cap < 2 * count)
                s.cap *= 2;
        s.name = nsr_malloc0(s.cap * sizeof(char *));
        s.len = nsr_malloc0(s.cap * sizeof(size_t));
        for (size_t at = 0; at < len;) {
                size_t l = strlen(text + at);
                nameset_put(&s, text + at, l);
                at += l + 1;
        }
        g->names = s;
        g->text = TAKE_PTR(text);
        g->state = LISTED;
}

/* Whether a dir listed or found missing says that no path in dir[0..dirlen)
 * exists: the dir is missing, or a listed dir above it lacks the next
 * component on the way. */
static bool known_missing(group *const *done, size_t n_done, const char *dir, size_t dirlen) {
        for (size_t k = 0; k < n_done; k++) {
                const group *a = done[k];
                if (a->dirlen > dirlen || memcmp(a->dir, dir, a->dirlen) != 0 ||
                    (a->dirlen < dirlen && dir[a->dirlen] != '/'))
                        continue;
                if (a->state == MISSING)
                        return true;
                if (a->dirlen == dirlen)
                        continue;
                const char *c = dir + a->dirlen + 1;
                const char *e = memchr(c, '/', dirlen - a->dirlen - 1);
                size_t l = e ? (size_t) (e - c) : dirlen - a->dirlen - 1;
                if (!nameset_has(&a->names, c, l))
                        return true;
        }
        return false;
}

void nsr_paths_exist(char *const *paths, size_t n, bool *ret) {
        if (n == 0)
                return;
        size_t cap = 16;
        while (cap < 2 * n)
                cap *= 2;
        _cleanup_free_ group *groups = nsr_malloc0(n * sizeof(group));
        _cleanup_free_ size_t *slot = nsr_malloc0(cap * sizeof(size_t)); /* group + 1, 0 free */
        _cleanup_free_ size_t *next = nsr_malloc0(n * sizeof(size_t));   /* path + 1, 0 last */
        size_t ng = 0;
        for (size_t i = 0; i < n; i++) {
                size_t dirlen;
                if (!plain(paths[i], &dirlen)) {
                        ret[i] = nsr_path_exists(paths[i]);
                        continue;
                }
                size_t h = hash(paths[i], dirlen) & (cap - 1);
                for (; slot[h]; h = (h + 1) & (cap - 1)) {
                        group *g = &groups[slot[h] - 1];
                        if (g->dirlen == dirlen && memcmp(g->dir, paths[i], dirlen) == 0)
                                break;
                }
                if (!slot[h]) {
                        groups[ng] = (group){ .dir = paths[i], .dirlen = dirlen };
                        slot[h] = ++ng;
                }
                group *g = &groups[slot[h] - 1];
                next[i] = g->first;
                g->first = i + 1;
                g->n++;
        }
        /* The dirs worth a listing, shortest first: a listed dir then
         * answers for the dirs below it before they are listed or looked
         * into. */
        _cleanup_free_ group **done = nsr_malloc0((ng + 1) * sizeof(group *));
        size_t n_done = 0;
        for (size_t k = 0; k < ng; k++) {
                if (groups[k].n < NSR_PATHPROBE_LIST_MIN)
                        continue;
                size_t at = n_done++;
                while (at > 0 && done[at - 1]->dirlen > groups[k].dirlen) {
                        done[at] = done[at - 1];
                        at--;
                }
                done[at] = &groups[k];
        }
        size_t n_listed = 0;
        for (size_t k = 0; k < n_done; k++) {
                group *g = done[k];
                if (known_missing(done, n_listed, g->dir, g->dirlen))
                        g->state = MISSING;
                else
                        list_dir(g);
                if (g->state != UNSEEN)
                        done[n_listed++] = g;
        }
        for (size_t k = 0; k < ng; k++) {
                group *g = &groups[k];
                bool missing = g->state == MISSING || known_missing(done, n_listed, g->dir, g->dirlen);
                for (size_t i = g->first; i > 0; i = next[i - 1]) {
                        const char *p = paths[i - 1];
                        if (missing)
                                ret[i - 1] = false;
                        else if (g->state == LISTED)
                                /* A listed name is looked up too: lstat
                                 * answers, as for a dangling link or a
                                 * dir that can be read but not searched. */
                                ret[i - 1] = nameset_has(&g->names, p + g->dirlen + 1, strlen(p + g->dirlen + 1)) &&
                                             nsr_path_exists(p);
                        else
                                ret[i - 1] = nsr_path_exists(p);
                }
        }
        for (size_t k = 0; k < ng; k++) {
                nameset_done(&groups[k].names);
                free(groups[k].text);
        }
}
