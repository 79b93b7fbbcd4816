/* worker/worker_sched.h — the worker's first-come-first-served scheduler: the sequences of every
 * chunk received (from any broker) wait in one FIFO pool; batches are cut from the head of the
 * pool under a token budget and handed to the engine, at most max_inflight at once (the CPU
 * prepares batch N+1 while batch N runs). A chunk's sequences may be split across batches; when
 * its last sequence is done its result (or failure) is encoded and handed to the send callback
 * together with the link (broker) it came from.
 *
 * Batching rules: a batch takes the options (normalize, dims) of the sequence at the head of the
 * pool and stops at the first sequence whose options differ (the engine wants uniform options
 * per batch, and FCFS order is kept). A chunk found past its deadline when it reaches the head
 * is failed DEADLINE_EXCEEDED instead of computed. Chunks are validated against the model when
 * they are added (ids in the vocabulary, lengths within max_seq_length, segments, dims), so one
 * bad chunk gets BAD_REQUEST / UNSUPPORTED alone and never fails a batch of others. An engine
 * error fails the chunks of that batch (INTERNAL) and serving goes on.
 *
 * Invariants: every chunk added is answered exactly once (result or failed result) through the
 * send callback, either from wrk_sched_add (rejected) or later from wrk_sched_pump; a chunk is
 * freed only after it is answered and no batch in flight refers to it.
 * Thread: the worker's event-loop thread only (the engine's own threads are behind its API). */
#ifndef EMBER_WORKER_WORKER_SCHED_H
#define EMBER_WORKER_WORKER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/protocol.h"
#include "worker/engine.h"

typedef struct wrk_sched wrk_sched_t;

/* Hands one encoded "result" message to the link (broker) a chunk came from. The bytes are
 * owned by the scheduler and valid during the call only. */
typedef void (*wrk_sched_send_fn)(void *arg, int32_t link, const uint8_t *data, size_t len);

typedef struct wrk_sched_opts {
    int32_t max_batch_tokens; /* token budget per batch (>= the model's max_seq_length) */
    int32_t max_inflight;     /* batches in flight at once, 1..8 (0 = 2) */
} wrk_sched_opts_t;

typedef struct wrk_sched_stats {
    uint64_t chunks_in;       /* chunks offered to wrk_sched_add / wrk_sched_reject */
    uint64_t chunks_done;     /* answered with embeddings */
    uint64_t chunks_failed;   /* answered with an error (all reasons below) */
    uint64_t chunks_bad;      /* failed at validation (BAD_REQUEST, UNSUPPORTED) */
    uint64_t chunks_rejected; /* failed by wrk_sched_reject (draining, overload, undecodable) */
    uint64_t deadline_drops;  /* failed DEADLINE_EXCEEDED */
    uint64_t engine_failed;   /* failed INTERNAL (engine error) */
    uint64_t seqs_in, seqs_done;
    uint64_t tokens_in, tokens_done;
    uint64_t batches_submitted, batches_done, batches_failed;
    uint64_t send_encode_failed; /* results that could not be encoded (dropped) */
    int64_t load_tokens;         /* tokens of chunks held (queued or in flight) */
    int64_t load_seqs;           /* sequences of chunks held */
    int32_t chunks_held;         /* chunks held */
    int32_t batches_inflight;
} wrk_sched_stats_t;

/* Creates a scheduler over engine (borrowed; must outlive the scheduler). Returns 0 with *out,
 * or COM_EINVAL (budget below the model's max_seq_length, bad max_inflight) / COM_ENOMEM. */
int wrk_sched_new(wrk_engine_t *engine, const wrk_sched_opts_t *opts, wrk_sched_send_fn send,
                  void *send_arg, wrk_sched_t **out, com_error_t *err);
/* Waits for the batches in flight, frees every chunk held without answering it. Accepts NULL;
 * nulls *self_p. */
void wrk_sched_destroy(wrk_sched_t **self_p);

/* Validates chunk c (request id req_id, from link) and pools its sequences; now_us is the
 * receipt time (monotonic). Returns 0 when pooled (answered later by wrk_sched_pump), or
 * COM_EINVAL when it was rejected and a failed result has already been sent (err says why).
 * Copies what it keeps: c may be freed after the call. Does not submit: call wrk_sched_pump. */
int wrk_sched_add(wrk_sched_t *s, int32_t link, uint64_t req_id, const com_proto_chunk_t *c,
                  int64_t now_us, com_error_t *err);

/* Answers a chunk that is not pooled with a failed result (code, message) at once: the worker is
 * draining, the broker is over its credits, or the chunk could not be decoded. */
void wrk_sched_reject(wrk_sched_t *s, int32_t link, uint64_t req_id, uint32_t cid, uint32_t att,
                      com_proto_code_t code, const char *msg);

/* The scheduler's step: with engine_event (the engine's event fd polled readable) clears the
 * event fd; then finishes every completed batch in order (answering finished chunks), and
 * submits new batches from the head of the pool while a slot is free. Never blocks. Returns the
 * number of chunks answered. */
int wrk_sched_pump(wrk_sched_t *s, bool engine_event, int64_t now_us);

/* Chunks held (queued or in flight), in all and from one link. */
int32_t wrk_sched_held(const wrk_sched_t *s);
int32_t wrk_sched_held_link(const wrk_sched_t *s, int32_t link);

/* Copies the counters and the current load into *out. */
void wrk_sched_stats(const wrk_sched_t *s, wrk_sched_stats_t *out);

#endif
