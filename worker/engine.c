/* worker/engine.c — the front of worker/engine.h: picks the backend from opts->device through
 * the small vtable in worker/engine_backend.h ("cpu": worker/engine_cpu.c, fp32 reference;
 * "cuda" / "cuda:N": worker/engine_cuda.c when built with CUDA), validates every batch on the
 * submitting thread (nothing is queued on error), and implements the result handle functions
 * over the shared result record.
 *
 * Invariants: a result's done flag is set once, under its mutex, after err/emb are final; the
 * front never touches backend state except through the vtable. Threading: as engine.h (one
 * submitting thread per engine; a result is waited on / destroyed by one thread). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "worker/engine_backend.h"

#define S_MAX_SEQS (1 << 24)

struct wrk_engine {
    const wrk_backend_t *be;
    void *impl;
    const com_model_info_t *info; /* owned by impl */
    int32_t max_tokens;
};

int wrk_result_init(wrk_result_t *r, int32_t n_seqs, int32_t dim, void (*release)(wrk_result_t *),
                    com_error_t *err) {
    memset(r, 0, sizeof *r);
    r->emb = malloc((size_t)n_seqs * (size_t)dim * sizeof *r->emb);
    if (!r->emb)
        return com_error_set(err, COM_ENOMEM, "submit: out of memory (%d x %d floats)", (int)n_seqs,
                             (int)dim);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_init(&r->done, 0);
    r->n_seqs = n_seqs;
    r->dim = dim;
    r->release = release;
    return 0;
}

void wrk_result_fini(wrk_result_t *r) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->emb);
    r->emb = NULL;
}

void wrk_result_complete(wrk_result_t *r) {
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->done, 1);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* The one parser of a device string. "cpu" -> cpu; "cuda" / "cuda:N", each optionally followed
 * by ",options" (the backend parses them) -> cuda device N. Returns 0, COM_EINVAL (not of that
 * form: a usage error) or COM_EUNSUPPORTED (a CUDA device in a build without CUDA). */
static int s_pick(const char *device, const wrk_backend_t **be, int32_t *index, com_error_t *err) {
    *index = 0;
    if (strcmp(device, "cpu") == 0) {
        *be = &wrk_backend_cpu;
        return 0;
    }
    if (strncmp(device, "cuda", 4) != 0 ||
        (device[4] != '\0' && device[4] != ':' && device[4] != ','))
        return com_error_set(err, COM_EINVAL, "engine: device \"%s\" (want cpu, cuda or cuda:N)",
                             device);
    if (device[4] == ':') {
        const char *p = device + 5;
        char *end = NULL;
        errno = 0;
        long n = strtol(p, &end, 10);
        if (*p < '0' || *p > '9' || (*end != '\0' && *end != ',') || errno != 0 || n < 0 ||
            n > 1023)
            return com_error_set(err, COM_EINVAL,
                                 "engine: device \"%s\" (want cpu, cuda or cuda:N)", device);
        *index = (int32_t)n;
    }
#ifdef EMBER_HAVE_CUDA
    *be = &wrk_backend_cuda;
    return 0;
#else
    return com_error_set(err, COM_EUNSUPPORTED,
                         "engine: device \"%s\": this build has no CUDA (EMBER_CUDA=OFF)", device);
#endif
}

int wrk_engine_new(const char *model_dir, const wrk_engine_opts_t *opts, wrk_engine_t **out,
                   com_error_t *err) {
    *out = NULL;
    const char *device = opts && opts->device ? opts->device : "cpu";
    const wrk_backend_t *be = NULL;
    int32_t index = 0;
    int rc = s_pick(device, &be, &index, err);
    if (rc != 0)
        return rc;
    wrk_engine_t *e = calloc(1, sizeof *e);
    if (!e)
        return com_error_set(err, COM_ENOMEM, "engine: out of memory");
    e->be = be;
    rc = be->create(model_dir, opts, index, &e->impl, &e->info, &e->max_tokens, err);
    if (rc != 0) {
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

void wrk_engine_destroy(wrk_engine_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_engine_t *e = *self_p;
    e->be->destroy(e->impl);
    free(e);
    *self_p = NULL;
}

void *wrk_engine_impl(const wrk_engine_t *e, const wrk_backend_t **be) {
    if (be)
        *be = e->be;
    return e->impl;
}

const com_model_info_t *wrk_engine_model(const wrk_engine_t *e) {
    return e->info;
}

int wrk_engine_event_fd(const wrk_engine_t *e) {
    return e->be->event_fd(e->impl);
}

int wrk_engine_health(const wrk_engine_t *e, com_error_t *err) {
    return e->be->health ? e->be->health(e->impl, err) : 0;
}

static int s_validate(const wrk_engine_t *e, const wrk_batch_t *b, com_error_t *err) {
    const com_model_info_t *in = e->info;
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
    const int32_t dim = batch->out_dim ? batch->out_dim : e->info->embedding_dim;
    const bool normalize = batch->normalize < 0 ? e->info->normalize : batch->normalize == 1;
    return e->be->submit(e->impl, batch, dim, normalize, out, err);
}

int wrk_result_poll(const wrk_result_t *r) {
    return atomic_load(&((wrk_result_t *)r)->done) ? 1 : 0;
}

int wrk_result_wait(wrk_result_t *r, com_error_t *err) {
    /* always through the lock, even when done is already set: wrk_result_complete sets it
     * inside the lock, so once we hold it the completing thread has left r alone and the caller
     * may destroy it (a lock-free return here let a spinning waiter free r while the completer
     * was still in pthread_cond_broadcast: a segfault seen with wrk_result_wait_spin) */
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

int wrk_result_wait_spin(wrk_result_t *r, int32_t spin_us, com_error_t *err) {
    if (spin_us > 0 && !atomic_load(&r->done)) {
        const int64_t end = com_clock_mono_us() + spin_us;
        while (!atomic_load(&r->done) && com_clock_mono_us() < end) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause(); /* spin-wait hint: yields the core's shared resources */
#endif
        }
    }
    return wrk_result_wait(r, err);
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
    r->release(r);
    *self_p = NULL;
}
