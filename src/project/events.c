/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/dirent.h"
#include "base/json.h"
#include "base/outq.h"
#include "base/util.h"
#include "project/events.h"

#define MASK        (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_ONLYDIR)
#define MAX_WATCHES 100000
#define MAX_SEEN    1000000
/* Changes of one path closer together than this are one event. */
#define WINDOW_NS   (INT64_C(100) * 1000000)
#define MAX_PENDING 100000

typedef struct watch {
        int proj;
        char *rel; /* "" for the upper root */
} watch;

/* What the stream last said about a path. */
typedef struct sig {
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
        mode_t mode;
} sig;

typedef struct seen {
        char *key;    /* proj NUL path, as one string "N/path" */
        char kind;    /* 'c' create, 'm' modify, 'd' delete: the last event reported */
        bool pending; /* a change inside the window, reported when it closes */
        int64_t at;   /* when the last event was reported (CLOCK_MONOTONIC, ns) */
        sig last;     /* the entry as it was then */
} seen;

typedef struct watcher {
        int ifd;
        nsr_outq out; /* --events-fd: bounded, never blocks the watcher */
        const nsr_events_project *projects;
        size_t n;
        watch *watches; /* indexed by wd */
        size_t n_watches;
        seen *seen; /* open-addressed set */
        size_t seen_cap, seen_n;
        char **pending; /* keys with a change held back by the window */
        size_t n_pending;
        uint32_t move_cookie; /* a pending IN_MOVED_FROM */
        int move_proj;
        char *move_rel;
} watcher;

static uint64_t hash(const char *s) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= UINT64_C(1099511628211);
        }
        return h;
}

static seen *lookup(watcher *w, const char *key, bool create) {
        if (w->seen_n * 2 >= w->seen_cap) {
                size_t cap = w->seen_cap ? w->seen_cap * 2 : 1024;
                seen *nv = nsr_malloc0(cap * sizeof(seen));
                for (size_t i = 0; i < w->seen_cap; i++)
                        if (w->seen[i].key) {
                                size_t k = hash(w->seen[i].key) & (cap - 1);
                                while (nv[k].key)
                                        k = (k + 1) & (cap - 1);
                                nv[k] = w->seen[i];
                        }
                free(w->seen);
                w->seen = nv;
                w->seen_cap = cap;
        }
        size_t k = hash(key) & (w->seen_cap - 1);
        while (w->seen[k].key) {
                if (streq(w->seen[k].key, key))
                        return &w->seen[k];
                k = (k + 1) & (w->seen_cap - 1);
        }
        if (!create || w->seen_n >= MAX_SEEN)
                return NULL;
        w->seen[k] = (seen){ .key = nsr_strdup(key) };
        w->seen_n++;
        return &w->seen[k];
}

static void write_line(watcher *w, const char *event, int proj, const char *rel, const char *from) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return;
        nsr_json *j = nsr_json_new(f, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_json_string(j, "event", event);
        if (proj >= 0) {
                nsr_json_string(j, "project", w->projects[proj].path);
                nsr_json_string(j, "path", rel);
                if (from)
                        nsr_json_string(j, "from", from);
        }
        nsr_json_object_end(j);
        nsr_error e = { 0 };
        (void) nsr_json_finish(j, "event", NULL, NULL, &e);
        nsr_json_free(j);
        fclose(f); /* the writer ended the line */
        nsr_outq_put(&w->out, buf, len);
        free(buf);
}

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The entry in upper as it is now (zeroes when it is gone). */
static sig sig_of(watcher *w, int proj, const char *rel) {
        _cleanup_free_ char *up = nsr_path_join(w->projects[proj].upper, rel);
        struct stat st;
        if (lstat(up, &st) < 0)
                return (sig){ 0 };
        return (sig){
                .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim, .ctime = st.st_ctim, .mode = st.st_mode
        };
}

static bool sig_eq(const sig *a, const sig *b) {
        return a->ino == b->ino && a->size == b->size && a->mode == b->mode && a->mtime.tv_sec == b->mtime.tv_sec &&
               a->mtime.tv_nsec == b->mtime.tv_nsec && a->ctime.tv_sec == b->ctime.tv_sec &&
               a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Records what was just said about a path. */
static void said(watcher *w, seen *s, char kind, int proj, const char *rel) {
        if (!s)
                return;
        s->kind = kind;
        s->pending = false;
        s->at = now_ns();
        s->last = kind == 'd' ? (sig){ 0 } : sig_of(w, proj, rel);
}

/* Coalesces: the first create or modify of a path is reported at once;
 * a later change of it is a modify, reported at once when the last event
 * of the path is older than the window, or when the window closes
 * (flush_window) when it is not, and only when the entry differs from
 * what the last event saw (an IN_CLOSE_WRITE after the write that was
 * reported says nothing new). One delete until the path comes back. */
static void emit(watcher *w, char kind, int proj, const char *rel) {
        _cleanup_free_ char *key = nsr_asprintf("%d/%s", proj, rel);
        seen *s = lookup(w, key, true);
        if (s) {
                if (kind == 'd' && s->kind == 'd')
                        return;
                if (kind != 'd' && (s->kind == 'c' || s->kind == 'm')) {
                        if (now_ns() - s->at < WINDOW_NS) {
                                if (!s->pending && w->n_pending < MAX_PENDING) {
                                        s->pending = true;
                                        w->pending = nsr_realloc_array(w->pending, w->n_pending + 1, sizeof(char *));
                                        w->pending[w->n_pending++] = TAKE_PTR(key);
                                }
                                return;
                        }
                        sig now = sig_of(w, proj, rel);
                        if (sig_eq(&now, &s->last))
                                return;
                        kind = 'm';
                }
        }
        write_line(w, kind == 'c' ? "create" : kind == 'm' ? "modify" : "delete", proj, rel, NULL);
        said(w, s, kind, proj, rel);
}

/* The changes held back by the window: each is reported once its
 * window has closed (all of them at the end). Returns the milliseconds
 * until the next window closes, -1 for none. */
static int flush_window(watcher *w, bool all) {
        int64_t now = now_ns(), next = -1;
        size_t kept = 0;
        for (size_t i = 0; i < w->n_pending; i++) {
                char *key = w->pending[i];
                seen *s = lookup(w, key, false);
                if (!s || !s->pending || (s->kind != 'c' && s->kind != 'm')) {
                        if (s)
                                s->pending = false;
                        free(key);
                        continue;
                }
                int64_t left = s->at + WINDOW_NS - now;
                if (left > 0 && !all) {
                        next = next < 0 || left < next ? left : next;
                        w->pending[kept++] = key;
                        continue;
                }
                char *slash = strchr(key, '/');
                int proj = atoi(key);
                const char *rel = slash + 1;
                s->pending = false;
                sig cur = sig_of(w, proj, rel);
                if (!sig_eq(&cur, &s->last)) {
                        write_line(w, "modify", proj, rel, NULL);
                        said(w, s, 'm', proj, rel);
                }
                free(key);
        }
        w->n_pending = kept;
        return next < 0 ? -1 : (int) (next / 1000000) + 1;
}

/* What an entry appearing in upper means. */
static char classify(watcher *w, int proj, const char *rel) {
        _cleanup_free_ char *up = nsr_path_join(w->projects[proj].upper, rel);
        const char *lower = w->projects[proj].lower ? w->projects[proj].lower : w->projects[proj].path;
        _cleanup_free_ char *lo = nsr_path_join(lower, rel);
        struct stat st;
        if (lstat(up, &st) < 0) {
                /* Gone again before we looked (a short-lived temp file):
                 * it was created all the same, unless the project has the
                 * name, where a later event says what happened. */
                return lstat(lo, &st) < 0 ? 'c' : 0;
        }
        if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0)
                return 'd';
        return lstat(lo, &st) == 0 ? 'm' : 'c';
}

static char *join_rel(const char *dir, const char *name) {
        return *dir ? nsr_asprintf("%s/%s", dir, name) : nsr_strdup(name);
}

static void add_dir(watcher *w, int proj, const char *rel, unsigned depth) {
        if (depth > 256 || w->n_watches >= MAX_WATCHES)
                return;
        _cleanup_free_ char *abs =
                *rel ? nsr_path_join(w->projects[proj].upper, rel) : nsr_strdup(w->projects[proj].upper);
        int wd = inotify_add_watch(w->ifd, abs, MASK);
        if (wd < 0)
                return;
        if ((size_t) wd >= w->n_watches) {
                size_t n = (size_t) wd + 64;
                w->watches = nsr_realloc_array(w->watches, n, sizeof(watch));
                memset(w->watches + w->n_watches, 0, (n - w->n_watches) * sizeof(watch));
                w->n_watches = n;
        }
        free(w->watches[wd].rel);
        w->watches[wd] = (watch){ .proj = proj, .rel = nsr_strdup(rel) };
        /* Rescan: whatever appeared before the watch existed. */
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(AT_FDCWD, abs, O_NOFOLLOW, &d) < 0)
                return;
        /* Best effort, like the watch itself: the events are a live view,
         * the change set is computed from the upper dir afterwards. */
        FOREACH_DIRENT(de, d, break) {
                _cleanup_free_ char *sub = join_rel(rel, de->d_name);
                char k = classify(w, proj, sub);
                if (k)
                        emit(w, k, proj, sub);
                if (de->d_type == DT_DIR)
                        add_dir(w, proj, sub, depth + 1);
        }
}

static void flush_move(watcher *w) {
        if (!w->move_rel)
                return;
        /* Moved away and not back into upper: gone. */
        emit(w, 'd', w->move_proj, w->move_rel);
        free(w->move_rel);
        w->move_rel = NULL;
        w->move_cookie = 0;
}

/* Whether the project (or the snapshot of it) has rel: what tells a
 * modification from a creation. */
static bool lower_has(watcher *w, int proj, const char *rel) {
        const char *lower = w->projects[proj].lower ? w->projects[proj].lower : w->projects[proj].path;
        _cleanup_free_ char *lo = nsr_path_join(lower, rel);
        struct stat st;
        return lstat(lo, &st) == 0;
}

/* One event. The watcher may read it long after it happened (a loaded
 * machine), so the upper dir may show a later state of the entry:
 * - a write (IN_MODIFY, IN_CLOSE_WRITE) is a modification or a creation
 *   whatever the entry became since, since only a file can be written;
 * - an entry that appeared and is now a whiteout was deleted later: when a
 *   later event for the same name is in this batch (stale), that one
 *   reports it, so this one does not say "delete" before the writes it
 *   was followed by. */
static void handle(watcher *w, const struct inotify_event *ev, bool stale) {
        if (ev->mask & IN_Q_OVERFLOW) {
                write_line(w, "overflow", -1, NULL, NULL);
                return;
        }
        if (ev->wd < 0 || (size_t) ev->wd >= w->n_watches || !w->watches[ev->wd].rel || !ev->len)
                return;
        watch *wt = &w->watches[ev->wd];
        _cleanup_free_ char *rel = join_rel(wt->rel, ev->name);
        if (ev->mask & IN_MOVED_FROM) {
                flush_move(w);
                w->move_cookie = ev->cookie;
                w->move_proj = wt->proj;
                w->move_rel = TAKE_PTR(rel);
                return;
        }
        if ((ev->mask & IN_MOVED_TO) && w->move_rel && ev->cookie == w->move_cookie && w->move_proj == wt->proj) {
                write_line(w, "rename", wt->proj, rel, w->move_rel);
                _cleanup_free_ char *key = nsr_asprintf("%d/%s", wt->proj, rel);
                said(w, lookup(w, key, true), 'c', wt->proj, rel);
                free(w->move_rel);
                w->move_rel = NULL;
                if (ev->mask & IN_ISDIR)
                        add_dir(w, wt->proj, rel, 0);
                return;
        }
        flush_move(w);
        if (ev->mask & IN_DELETE) {
                emit(w, 'd', wt->proj, rel);
                return;
        }
        char k;
        if ((ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) && !(ev->mask & IN_ISDIR))
                k = lower_has(w, wt->proj, rel) ? 'm' : 'c';
        else {
                k = classify(w, wt->proj, rel);
                if (k == 'd' && stale)
                        k = 0;
        }
        if (k)
                emit(w, k, wt->proj, rel);
        if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && (ev->mask & IN_ISDIR))
                add_dir(w, wt->proj, rel, 0);
}

/* Whether an event after p in the batch names the same entry as ev. */
static bool named_later(const char *p, const char *end, const struct inotify_event *ev) {
        while (p < end) {
                const struct inotify_event *e = (const struct inotify_event *) p;
                if (e->wd == ev->wd && e->len && ev->len && streq(e->name, ev->name))
                        return true;
                p += sizeof(*e) + e->len;
        }
        return false;
}

static void drain(watcher *w) {
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
#ifdef NSR_TEST_HOOKS
        /* A watcher that lags behind the command, as on a loaded machine. */
        const char *lag = getenv("NSRUN_TEST_EVENTS_LAG_MS");
        if (lag && atoi(lag) > 0)
                usleep((useconds_t) atoi(lag) * 1000);
#endif
        for (;;) {
                ssize_t n = read(w->ifd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        char *next = p + sizeof(*ev) + ev->len;
                        handle(w, ev, named_later(next, buf + n, ev));
                        p = next;
                }
        }
        flush_move(w);
}

_noreturn_ static void watcher_main(int out, int stop, const nsr_events_project *projects, size_t n) {
        watcher w = { .projects = projects, .n = n, .move_proj = -1 };
        nsr_outq_init(&w.out, out, 0, NSR_OUTQ_EVENTS_NOTE);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        w.ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (w.ifd < 0)
                _exit(1);
        for (size_t i = 0; i < n; i++)
                add_dir(&w, (int) i, "", 0);
        /* Tell the parent the watches are in place. */
        (void) nsr_write_all(stop, "r", 1);
        for (;;) {
                struct pollfd p[3] = { { .fd = w.ifd, .events = POLLIN },
                                       { .fd = stop, .events = POLLIN },
                                       { .fd = nsr_outq_pending(&w.out) ? w.out.fd : -1, .events = POLLOUT } };
                if (poll(p, 3, flush_window(&w, false)) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[2].revents)
                        nsr_outq_flush(&w.out);
                if (p[0].revents)
                        drain(&w);
                if (p[1].revents) {
                        drain(&w);
                        break;
                }
        }
        /* The command is over: what the window held back is said now. */
        (void) flush_window(&w, true);
        /* A reader that stopped reading gets a moment, then the rest is
         * dropped: the monitor waits for this process. The count goes
         * back for the report. */
        nsr_outq_finish(&w.out, NSR_OUTQ_FINISH_MS);
        uint64_t dropped = w.out.dropped;
        (void) nsr_write_all(stop, &dropped, sizeof(dropped));
        _exit(0);
}

int nsr_events_start(int out_fd, const nsr_events_project *projects, size_t n, pid_t *ret_pid, int *ret_stop_fd,
                     nsr_error *err) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return nsr_error_set(err, errno, "--events-fd: socketpair");
        pid_t pid = fork();
        if (pid < 0) {
                int e = errno;
                close(sp[0]);
                close(sp[1]);
                return nsr_error_set(err, e, "--events-fd: fork");
        }
        if (pid == 0) {
                close(sp[0]);
                watcher_main(out_fd, sp[1], projects, n);
        }
        close(sp[1]);
        char c;
        (void) nsr_read_full(sp[0], &c, 1); /* watches ready */
        *ret_pid = pid;
        *ret_stop_fd = sp[0];
        return 0;
}

uint64_t nsr_events_stop(pid_t pid, int stop_fd) {
        if (pid <= 0)
                return 0;
        /* Shutting our end down wakes the watcher, which drains, says how
         * many lines it dropped, and exits. */
        (void) shutdown(stop_fd, SHUT_WR);
        uint64_t dropped = 0;
        if (nsr_read_full(stop_fd, &dropped, sizeof(dropped)) != (int) sizeof(dropped))
                dropped = 0;
        close(stop_fd);
        (void) waitpid(pid, NULL, 0);
        return dropped;
}
