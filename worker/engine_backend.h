/* worker/engine_backend.h — internal: what worker/engine.c (the front of worker/engine.h) needs
 * from a backend, and the result record every backend shares.
 *
 * The front parses opts->device ("cpu" -> wrk_backend_cpu, "cuda" / "cuda:N" ->
 * wrk_backend_cuda when built with EMBER_HAVE_CUDA), validates every batch on the submitting
 * thread against the model info and max_batch_tokens the backend reports, then calls the
 * backend's submit with the resolved output width and normalisation. Backends complete results
 * through wrk_result_complete and the front's poll / wait / embeddings / destroy read only the
 * shared part below. A backend result struct starts with a wrk_result_t and frees itself in
 * release (called once, after the result completed). Thread-safety as worker/engine.h. */
#ifndef EMBER_WORKER_ENGINE_BACKEND_H
#define EMBER_WORKER_ENGINE_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "worker/engine.h"

struct wrk_result {
    atomic_int done; /* 1 once complete (success or error); set last, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    com_error_t err; /* err.code: 0 or the batch's error; written before done */
    int32_t n_seqs, dim;
    float *emb;                            /* [n_seqs, dim], host fp32, owned */
    void (*release)(struct wrk_result *r); /* frees the whole result (backend part included) */
};

/* Initialises the shared part and allocates emb. 0 or COM_ENOMEM (nothing left allocated). */
int wrk_result_init(wrk_result_t *r, int32_t n_seqs, int32_t dim, void (*release)(wrk_result_t *),
                    com_error_t *err);
/* Frees what wrk_result_init made (not r itself). */
void wrk_result_fini(wrk_result_t *r);
/* Marks r complete (err.code already set on failure) and wakes its waiters. Any thread. */
void wrk_result_complete(wrk_result_t *r);

typedef struct wrk_backend {
    const char *name;
    /* Loads model_dir for device index `device` (0 for cpu). On success *impl, *info (owned by
     * impl) and *max_tokens (the resolved max_batch_tokens). */
    int (*create)(const char *model_dir, const wrk_engine_opts_t *opts, int32_t device, void **impl,
                  const com_model_info_t **info, int32_t *max_tokens, com_error_t *err);
    void (*destroy)(void *impl); /* drains in-flight work first */
    int (*event_fd)(const void *impl);
    /* 0, or COM_EINTERNAL with the message once the device is unusable; NULL = always 0. */
    int (*health)(const void *impl, com_error_t *err);
    /* b is validated; dim (1..embedding_dim) and normalize resolved. 0 with *out or an error. */
    int (*submit)(void *impl, const wrk_batch_t *b, int32_t dim, bool normalize, wrk_result_t **out,
                  com_error_t *err);
} wrk_backend_t;

/* The backend and its implementation object behind e (for backend-specific extras such as
 * wrk_engine_cuda_stats). */
void *wrk_engine_impl(const wrk_engine_t *e, const wrk_backend_t **be);

extern const wrk_backend_t wrk_backend_cpu;
#ifdef EMBER_HAVE_CUDA
extern const wrk_backend_t wrk_backend_cuda;
#endif

#endif
