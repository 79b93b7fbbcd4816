/* worker/engine.h — the engine interface every backend implements: "cpu" (fp32, reference, in
 * worker/engine_cpu.c) and "cuda" / "cuda:N" (bf16, worker/engine_cuda.c); worker/engine.c
 * dispatches on opts->device.
 *
 * A batch is packed, without padding: the token ids of all sequences back to back, with
 * cu_seqlens giving the boundaries. wrk_engine_submit() copies what it needs and returns at
 * once with a result handle (a LazyTensor): the embeddings are valid after wrk_result_wait()
 * returns 0. Several batches may be in flight; they complete in submission order.
 *
 * Thread-safety: one thread submits to an engine at a time; a result handle may be waited on
 * and destroyed from any one thread. The engine owns its compute thread(s). */
#ifndef EMBER_WORKER_ENGINE_H
#define EMBER_WORKER_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/model_info.h"

typedef struct wrk_engine wrk_engine_t;
typedef struct wrk_result wrk_result_t;

typedef struct wrk_engine_opts {
    const char *device;       /* "cpu" (default when NULL), "cuda" (= "cuda:0"), "cuda:N", and
                                 for cuda options after commas: graphs=, tune=, pdl=, residual=
                                 (docs/engine.md) */
    int32_t threads;          /* cpu: compute threads, 0 = all cores */
    int32_t max_batch_tokens; /* largest packed batch accepted, 0 = default (16384; cuda 32768) */
} wrk_engine_opts_t;

typedef struct wrk_batch {
    int32_t n_seqs;
    int32_t n_tokens;          /* == cu_seqlens[n_seqs] */
    const int32_t *token_ids;  /* [n_tokens], host; each in [0, vocab_size) */
    const int32_t *type_ids;   /* [n_tokens], host, each in [0, type_vocab_size); NULL = all 0 */
    const int32_t *cu_seqlens; /* [n_seqs + 1], host; [0] = 0, every length in
                                  [1, max_position_embeddings] */
    int32_t out_dim;           /* Matryoshka: keep the first out_dim dims (re-normalised when
                                  normalising); 0 = full width */
    int32_t normalize;         /* 1 = L2-normalise, 0 = raw pooled, -1 = as the model says */
} wrk_batch_t;

/* Loads the model in model_dir (config, sentence-transformers files, weights) for opts->device.
 * Returns 0 with *out, or with *out NULL: COM_EINVAL (a malformed device string or option),
 * COM_EUNSUPPORTED (no such device, no CUDA in this build, an unsupported model), COM_EIO /
 * COM_EFORMAT / COM_ENOMEM. */
int wrk_engine_new(const char *model_dir, const wrk_engine_opts_t *opts, wrk_engine_t **out,
                   com_error_t *err);
/* Waits for every batch in flight, then frees everything. Accepts NULL; nulls *self_p. */
void wrk_engine_destroy(wrk_engine_t **self_p);

const com_model_info_t *wrk_engine_model(const wrk_engine_t *e);

/* A file descriptor that becomes readable when a submitted batch completes (an eventfd: read 8
 * bytes to clear it). Several completions may fold into one wake-up, so after a wake-up check
 * every batch in flight with wrk_result_poll. Owned by the engine (closed by destroy); for
 * zmq_poll / poll(2) in an event loop. */
int wrk_engine_event_fd(const wrk_engine_t *e);

/* 0 while the engine can run batches. Once a device error has made it unusable for good (a
 * sticky CUDA error), COM_EINTERNAL with the first error's message: every later submit fails,
 * and the owner should report itself unhealthy and exit so that its supervisor restarts it.
 * The CPU backend is always healthy. Any thread. */
int wrk_engine_health(const wrk_engine_t *e, com_error_t *err);

/* Validates the batch (counts, boundaries, id ranges: COM_EINVAL with a message, nothing
 * queued) and queues it. Returns 0 with *out (caller destroys it), or an error with *out NULL. */
int wrk_engine_submit(wrk_engine_t *e, const wrk_batch_t *batch, wrk_result_t **out,
                      com_error_t *err);

/* 1 when the result is complete (successfully or not), 0 while it is still running. */
int wrk_result_poll(const wrk_result_t *r);
/* Blocks until complete. Returns 0, or the batch's error code with its message in err. */
int wrk_result_wait(wrk_result_t *r, com_error_t *err);
/* As wrk_result_wait, after busy-polling for up to spin_us microseconds (no system call, as a
 * CUDA synchronisation does by default): for in-process callers that spend a core to skip the
 * wake-up of a blocked thread (a few microseconds, more from a deep idle state). spin_us <= 0:
 * wrk_result_wait. */
int wrk_result_wait_spin(wrk_result_t *r, int32_t spin_us, com_error_t *err);
/* After a successful wait: the embeddings, [n_seqs, dim] row-major fp32 in host memory, owned
 * by r. dim is out_dim when it was set, else the model's embedding width. */
const float *wrk_result_embeddings(const wrk_result_t *r, int32_t *n_seqs, int32_t *dim);
/* Waits if still running, then frees. Accepts NULL; nulls *self_p. */
void wrk_result_destroy(wrk_result_t **self_p);

#endif
