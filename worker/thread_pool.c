/* worker/thread_pool.c — see pool.h. A generation counter under one mutex: wrk_tpool_run publishes
 * (fn, arg, n_parts), bumps the generation and broadcasts; each helper i runs part i if
 * i < n_parts, then decrements `pending`; the caller runs part 0 and waits until pending is 0.
 * Invariant: only one job at a time; helpers touch the job fields only between the generation
 * bump and their decrement of pending. */
#include "worker/thread_pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct s_helper {
    wrk_tpool_t *pool;
    int32_t index; /* part this helper runs, 1..n-1 */
    pthread_t thread;
} s_helper_t;

struct wrk_tpool {
    int32_t n;
    s_helper_t *helpers; /* [n - 1] */
    int32_t n_started;
    pthread_mutex_t mu;
    pthread_cond_t start;
    pthread_cond_t done;
    uint64_t generation;
    int32_t pending;
    int stop;
    wrk_tpool_fn fn;
    void *arg;
    int32_t n_parts;
};

static void *s_helper_main(void *p) {
    s_helper_t *h = p;
    wrk_tpool_t *pool = h->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->stop && pool->generation == seen)
            pthread_cond_wait(&pool->start, &pool->mu);
        if (pool->stop)
            break;
        seen = pool->generation;
        wrk_tpool_fn fn = pool->fn;
        void *arg = pool->arg;
        int32_t n_parts = pool->n_parts;
        pthread_mutex_unlock(&pool->mu);
        if (h->index < n_parts)
            fn(arg, h->index, n_parts);
        pthread_mutex_lock(&pool->mu);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

int wrk_tpool_new(int32_t n_parts, wrk_tpool_t **out, com_error_t *err) {
    *out = NULL;
    if (n_parts < 1 || n_parts > 1024)
        return com_error_set(err, COM_EINVAL, "pool: %d parts (want 1..1024)", (int)n_parts);
    wrk_tpool_t *pool = calloc(1, sizeof *pool);
    if (!pool)
        return com_error_set(err, COM_ENOMEM, "pool: out of memory");
    pool->n = n_parts;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->start, NULL);
    pthread_cond_init(&pool->done, NULL);
    int rc;
    if (n_parts > 1) {
        pool->helpers = calloc((size_t)n_parts - 1, sizeof *pool->helpers);
        if (!pool->helpers) {
            rc = com_error_set(err, COM_ENOMEM, "pool: out of memory");
            goto err;
        }
    }
    for (int32_t i = 0; i < n_parts - 1; i++) {
        pool->helpers[i].pool = pool;
        pool->helpers[i].index = i + 1;
        if (pthread_create(&pool->helpers[i].thread, NULL, s_helper_main, &pool->helpers[i])) {
            rc = com_error_set(err, COM_EINTERNAL, "pool: cannot start helper thread %d",
                               (int)i + 1);
            goto err;
        }
        pool->n_started++;
    }
    *out = pool;
    return 0;
err:
    wrk_tpool_destroy(&pool);
    return rc;
}

void wrk_tpool_destroy(wrk_tpool_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_tpool_t *pool = *self_p;
    pthread_mutex_lock(&pool->mu);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->mu);
    for (int32_t i = 0; i < pool->n_started; i++)
        pthread_join(pool->helpers[i].thread, NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->start);
    pthread_mutex_destroy(&pool->mu);
    free(pool->helpers);
    free(pool);
    *self_p = NULL;
}

int32_t wrk_tpool_size(const wrk_tpool_t *pool) {
    return pool->n;
}

void wrk_tpool_run(wrk_tpool_t *pool, wrk_tpool_fn fn, void *arg, int32_t n_parts) {
    if (n_parts <= 0 || n_parts > pool->n)
        n_parts = pool->n;
    if (n_parts == 1 || pool->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->fn = fn;
    pool->arg = arg;
    pool->n_parts = n_parts;
    pool->pending = pool->n - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->mu);
    fn(arg, 0, n_parts);
    pthread_mutex_lock(&pool->mu);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}
