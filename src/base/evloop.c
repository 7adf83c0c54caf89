/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one epoll loop sources register with (evloop.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/evloop.h"
#include "base/util.h"

#define BATCH 64

struct nsr_evsrc {
        nsr_evloop *loop;
        nsr_evsrc *prev, *next; /* live sources, or the dead list */
        int fd;                 /* the caller's */
        int own_fd;             /* the duplicate registered instead, or -1 */
        bool polled;            /* false: epoll refused it, always ready */
        bool in_set;            /* in the epoll set: only while events != 0 */
        bool dead;
        uint32_t events;
        nsr_evloop_cb cb;
        void *data;
};

typedef struct post {
        nsr_evloop_post cb;
        void *data;
} post;

struct nsr_evloop {
        int ep;
        bool stop;
        nsr_evsrc *live, *dead;
        size_t n_ready; /* unpolled sources that ask for events */
        post *posts;
        size_t n_posts;
};

int nsr_evloop_new(nsr_evloop **ret) {
        nsr_evloop *l = nsr_malloc0(sizeof(*l));
        l->ep = epoll_create1(EPOLL_CLOEXEC);
        if (l->ep < 0) {
                int r = -errno;
                free(l);
                return r;
        }
        *ret = l;
        return 0;
}

static void src_free(nsr_evsrc *s) {
        safe_close(s->own_fd);
        free(s);
}

static void bury(nsr_evloop *l) {
        for (nsr_evsrc *s = l->dead, *n; s; s = n) {
                n = s->next;
                src_free(s);
        }
        l->dead = NULL;
}

nsr_evloop *nsr_evloop_free(nsr_evloop *l) {
        if (!l)
                return NULL;
        for (nsr_evsrc *s = l->live, *n; s; s = n) {
                n = s->next;
                src_free(s);
        }
        bury(l);
        safe_close(l->ep);
        free(l->posts);
        free(l);
        return NULL;
}

static int reg_fd(const nsr_evsrc *s) {
        return s->own_fd >= 0 ? s->own_fd : s->fd;
}

/* Level-triggered; EPOLLHUP and EPOLLERR come whatever is asked. */
static int ctl(nsr_evsrc *s, int op, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = s };
        return epoll_ctl(s->loop->ep, op, reg_fd(s), &ev) < 0 ? -errno : 0;
}

/* Into the epoll set, with s->events. A source that asks for nothing
 * stays out of it: epoll would report a hangup or an error on it all the
 * same, over and over. */
static int src_register(nsr_evsrc *s) {
        if (!s->polled)
                return 0;
        int r = ctl(s, EPOLL_CTL_ADD, s->events);
        if (r == -EEXIST) {
                /* The same fd number twice: epoll keys on the pair of fd
                 * and file, so a duplicate of our own tells them apart. */
                s->own_fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 3);
                if (s->own_fd < 0)
                        return -errno;
                r = ctl(s, EPOLL_CTL_ADD, s->events);
        }
        if (r == -EPERM) {
                s->polled = false; /* a regular file: always ready */
                return 0;
        }
        s->in_set = r >= 0;
        return r;
}

int nsr_evloop_add(nsr_evloop *l, int fd, uint32_t events, nsr_evloop_cb cb, void *data, nsr_evsrc **ret) {
        if (fd < 0 || !cb)
                return -EBADF;
        nsr_evsrc *s = nsr_malloc0(sizeof(*s));
        *s = (nsr_evsrc){ .loop = l, .fd = fd, .own_fd = -1, .polled = true, .events = events, .cb = cb, .data = data };
        int r = events ? src_register(s) : fcntl(fd, F_GETFD) < 0 ? -errno : 0;
        if (r < 0) {
                src_free(s);
                return r;
        }
        if (!s->polled && events)
                l->n_ready++;
        s->next = l->live;
        if (l->live)
                l->live->prev = s;
        l->live = s;
        if (ret)
                *ret = s;
        return 0;
}

int nsr_evloop_mod(nsr_evsrc *s, uint32_t events) {
        if (s->dead)
                return -ESTALE;
        if (s->events == events)
                return 0;
        if (s->polled) {
                uint32_t old = s->events;
                s->events = events;
                int r = !events ? ctl(s, EPOLL_CTL_DEL, 0) : !old ? src_register(s) : ctl(s, EPOLL_CTL_MOD, events);
                if (r < 0) {
                        s->events = old;
                        return r;
                }
                s->in_set = s->polled && events;
                if (!s->polled && events)
                        s->loop->n_ready++; /* epoll refused it only now */
                return 0;
        }
        if (!s->events != !events) {
                if (events)
                        s->loop->n_ready++;
                else
                        s->loop->n_ready--;
        }
        s->events = events;
        return 0;
}

uint32_t nsr_evloop_events(const nsr_evsrc *s) {
        return s->dead ? 0 : s->events;
}

nsr_evsrc *nsr_evloop_del(nsr_evsrc *s) {
        if (!s || s->dead)
                return NULL;
        nsr_evloop *l = s->loop;
        if (s->in_set)
                (void) ctl(s, EPOLL_CTL_DEL, 0);
        else if (!s->polled && s->events)
                l->n_ready--;
        s->dead = true;
        s->events = 0;
        if (s->prev)
                s->prev->next = s->next;
        else
                l->live = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = NULL;
        s->next = l->dead;
        l->dead = s;
        return NULL;
}

int nsr_evloop_add_post(nsr_evloop *l, nsr_evloop_post cb, void *data) {
        l->posts = nsr_realloc_array(l->posts, l->n_posts + 1, sizeof(*l->posts));
        l->posts[l->n_posts++] = (post){ cb, data };
        return 0;
}

void nsr_evloop_del_post(nsr_evloop *l, nsr_evloop_post cb, void *data) {
        for (size_t i = 0; i < l->n_posts; i++)
                if (l->posts[i].cb == cb && l->posts[i].data == data) {
                        l->posts[i] = l->posts[--l->n_posts];
                        return;
                }
}

/* The sources epoll cannot watch, which ask for something: ready now. A
 * callback may delete any source; a deleted next one ends this round (the
 * rest come on the next, which does not wait). */
static int run_unpolled(nsr_evloop *l) {
        int called = 0;
        for (nsr_evsrc *s = l->live, *n; s; s = n) {
                n = s->next;
                if (s->polled || !s->events)
                        continue;
                s->cb(s, s->fd, s->events, s->data);
                called++;
                if (n && n->dead)
                        break;
        }
        return called;
}

int nsr_evloop_run_once(nsr_evloop *l, int timeout_ms) {
        struct epoll_event ev[BATCH];
        int n = epoll_wait(l->ep, ev, BATCH, l->n_ready ? 0 : timeout_ms);
        if (n < 0)
                return errno == EINTR ? 0 : -errno;
        int called = 0;
        for (int i = 0; i < n; i++) {
                nsr_evsrc *s = ev[i].data.ptr;
                /* Deleted earlier in this batch: freed only after it. */
                if (s->dead)
                        continue;
                s->cb(s, s->fd, ev[i].events, s->data);
                called++;
        }
        if (l->n_ready)
                called += run_unpolled(l);
        for (size_t i = 0; i < l->n_posts; i++)
                l->posts[i].cb(l->posts[i].data);
        bury(l);
        return called;
}

int nsr_evloop_run(nsr_evloop *l) {
        while (!l->stop) {
                int r = nsr_evloop_run_once(l, -1);
                if (r < 0)
                        return r;
        }
        return 0;
}

void nsr_evloop_stop(nsr_evloop *l) {
        l->stop = true;
}

bool nsr_evloop_stopped(const nsr_evloop *l) {
        return l->stop;
}
