/* worker/engine_cpu.c — the "cpu" backend of worker/engine.h (wrk_backend_cpu, picked by the
 * front in worker/engine.c, which also validates batches): the fp32 reference backend.
 *
 * create loads the model info and weights (worker/model_bert.c), plans one workspace
 * for max_batch_tokens, starts a fork-join pool (worker/thread_pool.c) for attention and the
 * element-wise ops and the GEMMs (split by rows; OpenBLAS is set to 1 thread, process-wide),
 * and starts one compute thread.
 * submit (the batch already validated by the front) copies ids / type ids / boundaries into the
 * result, and appends it to a FIFO; the compute thread pops results in order, runs them (a batch
 * over max_batch_tokens is split at sequence boundaries into chunks that fit), and marks each
 * complete under the result's own mutex/condvar, then writes 1 to the engine's eventfd
 * (wrk_engine_event_fd) so an event loop can poll for completions. A finished result references
 * nothing of the engine, so results may outlive it.
 *
 * Invariants: the queue (head/tail/stop) is guarded by e->mu; a result is touched by the
 * compute thread only between being popped and being marked done, and by its owner otherwise
 * (after done, or through done/mu/cv). Destroy sets stop, the compute thread drains the queue
 * and exits, then everything is freed. No allocation on the compute path.
 * Threading: one submitting thread; one compute thread per engine (+ pool helpers). Note: the
 * engine sets OpenBLAS to 1 thread, which is process-wide. */
#include "worker/engine_backend.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "kernels/blas_core.h"
#include "worker/model_bert.h"
#include "worker/thread_pool.h"

#define S_DEFAULT_MAX_TOKENS 16384

typedef struct s_result {
    wrk_result_t base; /* n_seqs, dim, emb [n_seqs, dim], done/err */
    int32_t n_tokens;
    bool normalize;
    int32_t *ids;   /* [n_tokens] */
    int32_t *types; /* [n_tokens] or NULL */
    int32_t *cu;    /* [n_seqs + 1] */
    struct s_result *next;
} s_result_t;

typedef struct s_cpu {
    com_model_info_t info;
    int32_t max_tokens, threads;
    wrk_bert_t *model;
    wrk_bert_ws_t *ws;
    wrk_tpool_t *pool;
    int32_t *chunk_cu; /* [max_tokens + 1]: boundaries of a chunk, rebased to 0 */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    s_result_t *head, *tail;
    bool stop;
    int event_fd; /* eventfd, written after each completed batch; -1 until created */
} s_cpu_t;

static void s_result_release(wrk_result_t *base) {
    s_result_t *r = (s_result_t *)base;
    free(r->ids);
    free(r->types);
    free(r->cu);
    wrk_result_fini(&r->base);
    free(r);
}

/* Runs one queued batch, in chunks of at most max_tokens tokens at sequence boundaries. */
static void s_run_batch(s_cpu_t *e, s_result_t *r) {
    int32_t s0 = 0;
    const int32_t n_seqs = r->base.n_seqs, dim = r->base.dim;
    while (s0 < n_seqs) {
        const int32_t base = r->cu[s0];
        int32_t s1 = s0;
        while (s1 < n_seqs && r->cu[s1 + 1] - base <= e->max_tokens)
            s1++;
        /* submit guarantees every sequence fits, so s1 > s0 */
        const int32_t *cu = r->cu + s0;
        if (base != 0 || s1 != n_seqs) {
            for (int32_t i = 0; i <= s1 - s0; i++)
                e->chunk_cu[i] = r->cu[s0 + i] - base;
            cu = e->chunk_cu;
        }
        int rc = wrk_bert_forward(e->model, e->ws, e->pool, r->ids + base,
                                  r->types ? r->types + base : NULL, cu, s1 - s0, r->cu[s1] - base,
                                  dim, r->normalize, r->base.emb + (size_t)s0 * dim, &r->base.err);
        if (rc != 0) {
            if (r->base.err.code == 0)
                com_error_set(&r->base.err, rc, "forward failed");
            return;
        }
        s0 = s1;
    }
}

static void *s_compute_main(void *arg) {
    s_cpu_t *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->head && !e->stop)
            pthread_cond_wait(&e->cv, &e->mu);
        s_result_t *r = e->head;
        if (!r) { /* stop and drained */
            pthread_mutex_unlock(&e->mu);
            break;
        }
        e->head = r->next;
        if (!e->head)
            e->tail = NULL;
        pthread_mutex_unlock(&e->mu);
        r->next = NULL;
        s_run_batch(e, r);
        wrk_result_complete(&r->base);
        const uint64_t one = 1;
        if (write(e->event_fd, &one, sizeof one) < 0) {
            /* EAGAIN: the counter is saturated, a wake-up is already pending */
        }
    }
    return NULL;
}

static void s_destroy(void *impl);

static int s_create(const char *model_dir, const wrk_engine_opts_t *opts, int32_t device,
                    void **out, const com_model_info_t **info_out, int32_t *max_tokens_out,
                    com_error_t *err) {
    (void)device;
    *out = NULL;
    int rc;
    int32_t threads = opts ? opts->threads : 0;
    int32_t max_tokens = opts ? opts->max_batch_tokens : 0;
    if (threads < 0 || threads > 1024 || max_tokens < 0)
        return com_error_set(err, COM_EINVAL, "engine: threads %d, max_batch_tokens %d",
                             (int)threads, (int)max_tokens);
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (n > 1024 ? 1024 : (int32_t)n) : 1;
    }
    if (max_tokens == 0)
        max_tokens = S_DEFAULT_MAX_TOKENS;

    s_cpu_t *e = calloc(1, sizeof *e);
    if (!e)
        return com_error_set(err, COM_ENOMEM, "engine: out of memory");
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->event_fd = -1;
    e->threads = threads;
    e->max_tokens = max_tokens;
    e->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->event_fd < 0) {
        rc = com_error_set(err, COM_EINTERNAL, "engine: eventfd failed");
        goto err;
    }
    if ((rc = com_model_info_load(model_dir, &e->info, err)) != 0)
        goto err;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", model_dir);
    if ((rc = wrk_bert_new(&e->info, path, &e->model, err)) != 0)
        goto err;
    if ((rc = wrk_bert_ws_new(e->model, max_tokens, threads, &e->ws, err)) != 0)
        goto err;
    if ((rc = wrk_tpool_new(threads, &e->pool, err)) != 0)
        goto err;
    e->chunk_cu = malloc(((size_t)max_tokens + 1) * sizeof *e->chunk_cu);
    if (!e->chunk_cu) {
        rc = com_error_set(err, COM_ENOMEM, "engine: out of memory");
        goto err;
    }
    openblas_set_num_threads(1); /* the pool splits the GEMMs itself (model_bert.c) */
    if (pthread_create(&e->thread, NULL, s_compute_main, e) != 0) {
        rc = com_error_set(err, COM_EINTERNAL, "engine: cannot start the compute thread");
        goto err;
    }
    e->thread_started = true;
    COM_INFO("engine cpu: %s (%s, %d layers, hidden %d), %d threads, max %d tokens per batch, "
             "OpenBLAS %s kernels",
             model_dir, e->info.architecture, (int)e->info.num_layers, (int)e->info.hidden_size,
             (int)threads, (int)max_tokens, openblas_get_corename());
    const char *better = kern_blas_better_core();
    if (better) /* a process that did not run kern_blas_reexec_for_core (kernels/blas_core.h) */
        COM_WARN("engine cpu: OpenBLAS chose its %s kernels on a CPU that runs its %s ones (4.5x "
                 "faster on an Emerald Rapids Xeon): start the process with OPENBLAS_CORETYPE=%s",
                 openblas_get_corename(), better, better);
    *out = e;
    *info_out = &e->info;
    *max_tokens_out = max_tokens;
    return 0;
err:
    s_destroy(e);
    return rc;
}

static void s_destroy(void *impl) {
    s_cpu_t *e = impl;
    if (!e)
        return;
    if (e->thread_started) {
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    wrk_tpool_destroy(&e->pool);
    wrk_bert_ws_destroy(&e->ws);
    wrk_bert_destroy(&e->model);
    free(e->chunk_cu);
    if (e->event_fd >= 0)
        close(e->event_fd);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static int s_event_fd(const void *impl) {
    return ((const s_cpu_t *)impl)->event_fd;
}

static int s_submit(void *impl, const wrk_batch_t *batch, int32_t dim, bool normalize,
                    wrk_result_t **out, com_error_t *err) {
    s_cpu_t *e = impl;
    *out = NULL;
    s_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return com_error_set(err, COM_ENOMEM, "submit: out of memory");
    if (wrk_result_init(&r->base, batch->n_seqs, dim, s_result_release, err) != 0) {
        free(r);
        return COM_ENOMEM;
    }
    r->n_tokens = batch->n_tokens;
    r->normalize = normalize;
    const size_t nt = (size_t)batch->n_tokens, ns = (size_t)batch->n_seqs;
    r->ids = malloc(nt * sizeof *r->ids);
    r->cu = malloc((ns + 1) * sizeof *r->cu);
    r->types = batch->type_ids ? malloc(nt * sizeof *r->types) : NULL;
    if (!r->ids || !r->cu || (batch->type_ids && !r->types)) {
        s_result_release(&r->base);
        return com_error_set(err, COM_ENOMEM, "submit: out of memory (%zu tokens)", nt);
    }
    memcpy(r->ids, batch->token_ids, nt * sizeof *r->ids);
    memcpy(r->cu, batch->cu_seqlens, (ns + 1) * sizeof *r->cu);
    if (r->types)
        memcpy(r->types, batch->type_ids, nt * sizeof *r->types);
    pthread_mutex_lock(&e->mu);
    if (e->tail)
        e->tail->next = r;
    else
        e->head = r;
    e->tail = r;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    *out = &r->base;
    return 0;
}

const wrk_backend_t wrk_backend_cpu = {.name = "cpu",
                                       .create = s_create,
                                       .destroy = s_destroy,
                                       .event_fd = s_event_fd,
                                       .health = NULL,
                                       .submit = s_submit};
