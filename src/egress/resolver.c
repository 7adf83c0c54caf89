/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The resolver pool: names resolved off the event loop by a few threads,
 * the answers handed back to the loop through an eventfd (resolver.h). */
#include "config.h"

#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/util.h"
#include "egress/resolver.h"

#define RESOLVE_THREADS 4

struct nsr_resolver {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        nsr_resolve_req *queue, **queue_tail;
        nsr_resolve_req *done;
        int efd;
        unsigned threads, idle, refs;
        bool stop;
        int delay_ms; /* test hook: a slow resolver */
};

void nsr_resolve_req_free(nsr_resolve_req *q) {
        if (q->res)
                freeaddrinfo(q->res);
        free(q);
}

static void pool_unref_locked(nsr_resolver *p) {
        /* Called with p->mu held; drops it. */
        bool last = --p->refs == 0;
        pthread_mutex_unlock(&p->mu);
        if (!last)
                return;
        for (nsr_resolve_req *q = p->queue, *n; q; q = n) {
                n = q->next;
                nsr_resolve_req_free(q);
        }
        for (nsr_resolve_req *q = p->done, *n; q; q = n) {
                n = q->next;
                nsr_resolve_req_free(q);
        }
        safe_close(p->efd);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
}

static void *pool_thread(void *arg) {
        nsr_resolver *p = arg;
        pthread_mutex_lock(&p->mu);
        for (;;) {
                while (!p->stop && !p->queue) {
                        p->idle++;
                        pthread_cond_wait(&p->cv, &p->mu);
                        p->idle--;
                }
                if (p->stop)
                        break;
                nsr_resolve_req *q = p->queue;
                p->queue = q->next;
                if (!p->queue)
                        p->queue_tail = &p->queue;
                pthread_mutex_unlock(&p->mu);

                struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
                if (p->delay_ms > 0)
                        (void) usleep((useconds_t) p->delay_ms * 1000);
                q->gai = getaddrinfo(q->host, NULL, &hints, &q->res);

                pthread_mutex_lock(&p->mu);
                if (p->stop) {
                        nsr_resolve_req_free(q);
                        break;
                }
                q->next = p->done;
                p->done = q;
                uint64_t one = 1;
                (void) !write(p->efd, &one, sizeof(one));
        }
        pool_unref_locked(p);
        return NULL;
}

nsr_resolver *nsr_resolver_new(int delay_ms) {
        nsr_resolver *p = nsr_malloc0(sizeof(*p));
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0) {
                free(p);
                return NULL;
        }
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
        p->queue_tail = &p->queue;
        p->refs = 1;
        p->delay_ms = delay_ms;
        return p;
}

int nsr_resolver_submit(nsr_resolver *p, nsr_resolve_req *q) {
        pthread_mutex_lock(&p->mu);
        q->next = NULL;
        *p->queue_tail = q;
        p->queue_tail = &q->next;
        if (p->idle == 0 && p->threads < RESOLVE_THREADS) {
                pthread_attr_t attr;
                pthread_t t;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&attr, 512 * 1024);
                if (pthread_create(&t, &attr, pool_thread, p) == 0) {
                        p->threads++;
                        p->refs++;
                }
                pthread_attr_destroy(&attr);
        }
        bool stuck = p->threads == 0;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return stuck ? -EAGAIN : 0;
}

nsr_resolve_req *nsr_resolver_take_done(nsr_resolver *p) {
        uint64_t v;
        (void) !read(p->efd, &v, sizeof(v));
        pthread_mutex_lock(&p->mu);
        nsr_resolve_req *d = p->done;
        p->done = NULL;
        pthread_mutex_unlock(&p->mu);
        return d;
}

void nsr_resolver_release(nsr_resolver *p) {
        if (!p)
                return;
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pool_unref_locked(p);
}
int nsr_resolver_fd(const nsr_resolver *p) {
        return p->efd;
}
