/* worker/engine_cpu.c — worker/engine.h for device "cpu": the fp32 reference backend.
 *
 * wrk_engine_new loads the model info and weights (worker/model_bert.c), plans one workspace
 * for max_batch_tokens, starts a fork-join pool (worker/thread_pool.c) for attention and the
 * element-wise ops and the GEMMs (split by rows; OpenBLAS is set to 1 thread, process-wide),
 * and starts one compute thread.
 * wrk_engine_submit validates the batch completely on the caller's thread (nothing is queued on
 * error), copies ids / type ids / boundaries into the result, and appends it to a FIFO; the
 * compute thread pops results in order, runs them (a batch over max_batch_tokens is split at
 * sequence boundaries into chunks that fit), and marks each complete under the result's own
 * mutex/condvar, then writes 1 to the engine's eventfd (wrk_engine_event_fd) so an event loop
 * can poll for completions. A finished result references nothing of the engine, so results may
 * outlive it.
 *
 * Invariants: the queue (head/tail/stop) is guarded by e->mu; a result is touched by the
 * compute thread only between being popped and being marked done, and by its owner otherwise
 * (after done, or through done/mu/cv). Destroy sets stop, the compute thread drains the queue
 * and exits, then everything is freed. No allocation on the compute path.
 * Threading: one submitting thread; one compute thread per engine (+ pool helpers). Note: the
 * engine sets OpenBLAS to 1 thread, which is process-wide. */
#include "worker/engine.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/model_bert.h"
#include "worker/thread_pool.h"

#define S_DEFAULT_MAX_TOKENS 16384
#define S_MAX_SEQS           (1 << 24)

struct wrk_result {
    atomic_int done;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    com_error_t err; /* err.code: 0 or the batch's error */
    int32_t n_seqs, n_tokens, dim;
    bool normalize;
    int32_t *ids;   /* [n_tokens] */
    int32_t *types; /* [n_tokens] or NULL */
    int32_t *cu;    /* [n_seqs + 1] */
    float *emb;     /* [n_seqs, dim] */
    wrk_result_t *next;
};

struct wrk_engine {
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
    wrk_result_t *head, *tail;
    bool stop;
    int event_fd; /* eventfd, written after each completed batch; -1 until created */
};

static void s_result_free(wrk_result_t *r) {
    if (!r)
        return;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->ids);
    free(r->types);
    free(r->cu);
    free(r->emb);
    free(r);
}

static void s_complete(wrk_result_t *r) {
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->done, 1);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Runs one queued batch, in chunks of at most max_tokens tokens at sequence boundaries. */
static void s_run_batch(wrk_engine_t *e, wrk_result_t *r) {
    int32_t s0 = 0;
    while (s0 < r->n_seqs) {
        const int32_t base = r->cu[s0];
        int32_t s1 = s0;
        while (s1 < r->n_seqs && r->cu[s1 + 1] - base <= e->max_tokens)
            s1++;
        /* submit guarantees every sequence fits, so s1 > s0 */
        const int32_t *cu = r->cu + s0;
        if (base != 0 || s1 != r->n_seqs) {
            for (int32_t i = 0; i <= s1 - s0; i++)
                e->chunk_cu[i] = r->cu[s0 + i] - base;
            cu = e->chunk_cu;
        }
        int rc = wrk_bert_forward(e->model, e->ws, e->pool, r->ids + base,
                                  r->types ? r->types + base : NULL, cu, s1 - s0, r->cu[s1] - base,
                                  r->dim, r->normalize, r->emb + (size_t)s0 * r->dim, &r->err);
        if (rc != 0) {
            if (r->err.code == 0)
                com_error_set(&r->err, rc, "forward failed");
            return;
        }
        s0 = s1;
    }
}

static void *s_compute_main(void *arg) {
    wrk_engine_t *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->head && !e->stop)
            pthread_cond_wait(&e->cv, &e->mu);
        wrk_result_t *r = e->head;
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
        s_complete(r);
        const uint64_t one = 1;
        if (write(e->event_fd, &one, sizeof one) < 0) {
            /* EAGAIN: the counter is saturated, a wake-up is already pending */
        }
    }
    return NULL;
}

int wrk_engine_new(const char *model_dir, const wrk_engine_opts_t *opts, wrk_engine_t **out,
                   com_error_t *err) {
    *out = NULL;
    int rc;
    const char *device = opts && opts->device ? opts->device : "cpu";
    if (strcmp(device, "cpu") != 0)
        return com_error_set(err, COM_EUNSUPPORTED, "engine: device \"%s\" not supported (cpu)",
                             device);
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

    wrk_engine_t *e = calloc(1, sizeof *e);
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
    COM_INFO("engine cpu: %s (%s, %d layers, hidden %d), %d threads, max %d tokens per batch",
             model_dir, e->info.architecture, (int)e->info.num_layers, (int)e->info.hidden_size,
             (int)threads, (int)max_tokens);
    *out = e;
    return 0;
err:
    wrk_engine_destroy(&e);
    return rc;
}

void wrk_engine_destroy(wrk_engine_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_engine_t *e = *self_p;
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
    *self_p = NULL;
}

const com_model_info_t *wrk_engine_model(const wrk_engine_t *e) {
    return &e->info;
}

int wrk_engine_event_fd(const wrk_engine_t *e) {
    return e->event_fd;
}

static int s_validate(const wrk_engine_t *e, const wrk_batch_t *b, com_error_t *err) {
    const com_model_info_t *in = &e->info;
    if (!b || !b->token_ids || !b->cu_seqlens)
        return com_error_set(err, COM_EINVAL, "batch: missing token_ids or cu_seqlens");
    if (b->n_seqs < 1 || b->n_seqs > S_MAX_SEQS)
        return com_error_set(err, COM_EINVAL, "batch: n_seqs %d (want 1..%d)", (int)b->n_seqs,
                             S_MAX_SEQS);
    if (b->n_tokens < 1)
        return com_error_set(err, COM_EINVAL, "batch: n_tokens %d", (int)b->n_tokens);
    if (b->cu_seqlens[0] != 0)
        return com_error_set(err, COM_EINVAL, "batch: cu_seqlens[0] = %d, want 0",
                             (int)b->cu_seqlens[0]);
    for (int32_t s = 0; s < b->n_seqs; s++) {
        int64_t len = (int64_t)b->cu_seqlens[s + 1] - b->cu_seqlens[s];
        if (len < 1 || len > in->max_position_embeddings)
            return com_error_set(err, COM_EINVAL,
                                 "batch: sequence %d has %lld tokens (want 1..%d, the model's "
                                 "max_position_embeddings)",
                                 (int)s, (long long)len, (int)in->max_position_embeddings);
        if (len > e->max_tokens)
            return com_error_set(err, COM_EINVAL,
                                 "batch: sequence %d has %lld tokens, over max_batch_tokens %d",
                                 (int)s, (long long)len, (int)e->max_tokens);
    }
    if (b->cu_seqlens[b->n_seqs] != b->n_tokens)
        return com_error_set(err, COM_EINVAL, "batch: n_tokens %d != cu_seqlens[n_seqs] %d",
                             (int)b->n_tokens, (int)b->cu_seqlens[b->n_seqs]);
    for (int32_t t = 0; t < b->n_tokens; t++) {
        if (b->token_ids[t] < 0 || b->token_ids[t] >= in->vocab_size)
            return com_error_set(err, COM_EINVAL, "batch: token %d has id %d (vocab %d)", (int)t,
                                 (int)b->token_ids[t], (int)in->vocab_size);
        if (b->type_ids && (b->type_ids[t] < 0 || b->type_ids[t] >= in->type_vocab_size))
            return com_error_set(err, COM_EINVAL, "batch: token %d has type id %d (types %d)",
                                 (int)t, (int)b->type_ids[t], (int)in->type_vocab_size);
    }
    if (b->out_dim < 0 || b->out_dim > in->embedding_dim)
        return com_error_set(err, COM_EINVAL, "batch: out_dim %d (want 0..%d)", (int)b->out_dim,
                             (int)in->embedding_dim);
    if (b->normalize < -1 || b->normalize > 1)
        return com_error_set(err, COM_EINVAL, "batch: normalize %d (want -1, 0 or 1)",
                             (int)b->normalize);
    return 0;
}

int wrk_engine_submit(wrk_engine_t *e, const wrk_batch_t *batch, wrk_result_t **out,
                      com_error_t *err) {
    *out = NULL;
    int rc = s_validate(e, batch, err);
    if (rc != 0)
        return rc;
    wrk_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return com_error_set(err, COM_ENOMEM, "submit: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_init(&r->done, 0);
    r->n_seqs = batch->n_seqs;
    r->n_tokens = batch->n_tokens;
    r->dim = batch->out_dim ? batch->out_dim : e->info.embedding_dim;
    r->normalize = batch->normalize < 0 ? e->info.normalize : batch->normalize == 1;
    const size_t nt = (size_t)batch->n_tokens, ns = (size_t)batch->n_seqs;
    r->ids = malloc(nt * sizeof *r->ids);
    r->cu = malloc((ns + 1) * sizeof *r->cu);
    r->emb = malloc(ns * (size_t)r->dim * sizeof *r->emb);
    r->types = batch->type_ids ? malloc(nt * sizeof *r->types) : NULL;
    if (!r->ids || !r->cu || !r->emb || (batch->type_ids && !r->types)) {
        s_result_free(r);
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
    *out = r;
    return 0;
}

int wrk_result_poll(const wrk_result_t *r) {
    return atomic_load(&((wrk_result_t *)r)->done) ? 1 : 0;
}

int wrk_result_wait(wrk_result_t *r, com_error_t *err) {
    pthread_mutex_lock(&r->mu);
    while (!atomic_load(&r->done))
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (r->err.code != 0) {
        if (err)
            *err = r->err;
        return r->err.code;
    }
    return 0;
}

const float *wrk_result_embeddings(const wrk_result_t *r, int32_t *n_seqs, int32_t *dim) {
    bool ok = atomic_load(&((wrk_result_t *)r)->done) && r->err.code == 0;
    if (n_seqs)
        *n_seqs = ok ? r->n_seqs : 0;
    if (dim)
        *dim = ok ? r->dim : 0;
    return ok ? r->emb : NULL;
}

void wrk_result_destroy(wrk_result_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_result_t *r = *self_p;
    wrk_result_wait(r, NULL);
    s_result_free(r);
    *self_p = NULL;
}
