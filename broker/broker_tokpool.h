/* broker/broker_tokpool.h — the broker's tokenizer thread pool.
 *
 * The main thread submits jobs (a slice of one request's texts or text pairs) and later receives
 * them back, filled in, on a ZeroMQ PULL socket it polls together with its ROUTERs. Jobs travel
 * as pointers over inproc PUSH/PULL sockets: main PUSH -> every pool thread's PULL (ZeroMQ
 * round-robins), each pool thread's PUSH -> main PULL. The main thread tokenizes only
 * small requests itself (brk_tok_job_run), where the hand-off would cost more than the work.
 *
 * Ownership: a job always belongs to the request that created it (the main thread); a pool
 * thread borrows it from the moment it is submitted until it sends it back, and touches
 * nothing else (the tokenizer is immutable and shared; each thread has its own
 * com_encoding_t). The texts a job points at must stay alive until the job is back, or until
 * the pool is destroyed (which joins the threads first).
 *
 * Bounds: the inproc sockets have no high-water mark; the number of jobs outstanding is bounded
 * by the broker's request table (at most 2 x threads jobs per request). */
#ifndef EMBER_BROKER_TOKPOOL_H
#define EMBER_BROKER_TOKPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/protocol.h"
#include "common/tokenizer.h"

typedef struct brk_tokpool brk_tokpool_t;

typedef struct brk_tok_job {
    /* input: set by the main thread, read-only for the pool thread */
    uint64_t rid;                 /* the request it belongs to */
    uint32_t first, n;            /* inputs [first, first + n) of the request */
    const com_proto_str_t *texts; /* [n] texts, or [2n] (a, b) pairs; views owned by the
                                     request */
    bool pairs;
    com_encode_opts_t opts;
    /* output: written by the pool thread */
    int rc;             /* 0 or a COM_E* code (COM_ETOOLONG: an input over the limit) */
    uint32_t bad_index; /* rc != 0: input (request index) that failed */
    char errmsg[256];   /* rc != 0 */
    int32_t *ids;       /* [n_tokens] token ids of the n inputs back to back, malloc'd */
    uint32_t *lens;     /* [n] tokens per input, malloc'd */
    uint32_t *seg;      /* pairs: [n] first-segment lengths, malloc'd; else NULL */
    uint64_t n_tokens;
} brk_tok_job_t;

/* Starts n_threads (>= 1) threads sharing tok (which must outlive the pool) in zmq context
 * zctx. Returns 0 with *out, or COM_EINVAL / COM_ENOMEM / COM_EINTERNAL (sockets, threads). */
int brk_tokpool_new(void *zctx, const com_tokenizer_t *tok, int32_t n_threads, brk_tokpool_t **out,
                    com_error_t *err);
/* Stops and joins the threads, closes the sockets. Jobs still submitted are not freed (their
 * requests own them). Accepts NULL; nulls *self_p. */
void brk_tokpool_destroy(brk_tokpool_t **self_p);
int32_t brk_tokpool_threads(const brk_tokpool_t *pool);
/* The PULL socket the main thread polls for finished jobs. */
void *brk_tokpool_socket(brk_tokpool_t *pool);
/* Hands job to a pool thread (never blocks). Returns 0 or COM_EINTERNAL. */
int brk_tokpool_submit(brk_tokpool_t *pool, brk_tok_job_t *job, com_error_t *err);
/* Takes one finished job without blocking: 0 with *job set, COM_EBUSY when none is ready. */
int brk_tokpool_recv(brk_tokpool_t *pool, brk_tok_job_t **job);
/* Runs job on the calling thread with tok and enc (a scratch encoding of the caller's): what a
 * pool thread does with a submitted job. The broker's main thread uses it for small requests,
 * where the hand-off to a pool thread and back costs more than the tokenization. */
void brk_tok_job_run(const com_tokenizer_t *tok, brk_tok_job_t *job, com_encoding_t *enc);
/* Frees a job's outputs and the job. Accepts NULL; nulls *job_p. */
void brk_tok_job_destroy(brk_tok_job_t **job_p);

#endif
