/* broker/broker.h — the state of one ember-broker process (brk_t) and what its modules share:
 * configuration, counters, the worker table, the request table and the chunk FIFO.
 *
 * Modules (each a broker_*.c file over this one struct):
 *   broker_main.c      arguments, signals, sockets, the zmq_poll loop, exit report
 *   broker_net.c       ROUTER frame I/O: receive [identity][payload], send replies
 *   broker_tokpool.c   the tokenizer thread pool (its own threads, inproc PUSH/PULL)
 *   broker_request.c   request table, admission, chunk planning, reassembly, deadlines, replies
 *   broker_dispatch.c  workers, credits, the chunk FIFO, dispatch and re-dispatch
 *
 * Threading: everything in brk_t belongs to the main thread. The tokenizer threads see only the
 * jobs handed to them (broker_tokpool.h); the registry agent thread sees only record snapshots.
 *
 * Invariants (checked by brk_check_invariants when EMBER_DEBUG_CHECKS is on):
 *   - queued_tokens == sum of tokens of the chunks in the FIFO; a chunk is in the FIFO iff its
 *     state is BRK_CHUNK_QUEUED.
 *   - a chunk in state INFLIGHT names a used worker that holds an in-flight entry for it with
 *     the chunk's current attempt.
 *   - a worker never holds more in-flight entries than min(credits, BRK_MAX_CREDITS) at the
 *     moment of a dispatch (a credit window that shrinks later is honoured by not sending).
 *   - a request slot is BRK_REQ_FREE iff it is on the free list; active_requests counts the rest.
 */
#ifndef EMBER_BROKER_BROKER_H
#define EMBER_BROKER_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "common/error.h"
#include "common/model_info.h"
#include "common/protocol.h"
#include "common/registry.h"
#include "common/registry_agent.h"
#include "common/tokenizer.h"

#include "broker/broker_tokpool.h"

#define BRK_MAX_WORKERS 256 /* workers known at once; a ready beyond is answered disconnect */
#define BRK_MAX_CREDITS 64  /* cap on a worker's credit window (chunks in flight) */
#define BRK_IDENT_MAX   255 /* ZeroMQ routing ids are 1..255 bytes */
#define BRK_NAME_MAX    128 /* worker id, model name, etc. as kept for logs */
#define BRK_CODE_SLOTS  16  /* failures counted per protocol code 0..15 */

/* Command-line configuration; defaults in brk_config_defaults. */
typedef struct brk_config {
    const char *frontend;        /* --frontend endpoint to bind (clients) */
    const char *backend;         /* --backend endpoint to bind (workers) */
    const char *model_dir;       /* --model DIR: tokenizer.json, config.json */
    const char *redis_url;       /* --redis URL, NULL = no registry */
    const char *model_name;      /* --model-name, NULL = base name of model_dir */
    const char *id;              /* --id, NULL = <host>-<pid>-<random> */
    int32_t tokenizer_threads;   /* --tokenizer-threads, default 2 */
    int32_t chunk_tokens;        /* --chunk-tokens, default 2048 */
    int64_t max_queued_tokens;   /* --max-queued-tokens, default 1048576 */
    int32_t chunk_timeout_ms;    /* --chunk-timeout-ms, default 10000 */
    int32_t max_attempts;        /* --max-attempts, default 3 (dispatches per chunk) */
    int32_t default_deadline_ms; /* --default-deadline-ms, default 30000 */
    int32_t max_deadline_ms;     /* --max-deadline-ms, default 60000 */
    int32_t heartbeat_ms;        /* --heartbeat-ms, default 1000 */
    int32_t spin_us;             /* --spin-us: busy-poll this long before blocking, default 0 */
    int32_t max_requests;        /* --max-requests, default 4096 (requests open at once) */
} brk_config_t;

void brk_config_defaults(brk_config_t *cfg);

/* Everything counted; printed as one JSON line at exit (brk_counters_json). */
typedef struct brk_counters {
    uint64_t requests_in; /* client messages that decoded to a request type */
    uint64_t requests_embed, requests_score, requests_tokenize, requests_info;
    uint64_t requests_ok;     /* answered with a *_reply (info included) */
    uint64_t requests_failed; /* answered with an error, any cause */
    uint64_t failed_by_code[BRK_CODE_SLOTS];
    uint64_t chunks_sent; /* dispatches (first ones and re-dispatches) */
    uint64_t chunks_done; /* chunks completed by an accepted result */
    uint64_t chunks_redispatched;
    uint64_t chunks_late;         /* in flight longer than --chunk-timeout-ms */
    uint64_t chunk_errors;        /* results carrying err, or a tensor of the wrong shape */
    uint64_t duplicates_dropped;  /* results for a finished chunk or an unknown request */
    uint64_t bad_frames;          /* wrong frame structure (missing, extra or empty frames) */
    uint64_t bad_client_msgs;     /* frontend messages that failed to decode or had a wrong type */
    uint64_t bad_worker_msgs;     /* backend messages that failed to decode or had a wrong type */
    uint64_t unknown_worker_msgs; /* non-ready messages from unknown workers (disconnect sent) */
    uint64_t model_mismatches;    /* ready with another model */
    uint64_t overloads;           /* OVERLOADED replies */
    uint64_t deadline_misses;     /* DEADLINE_EXCEEDED / NO_WORKERS replies */
    uint64_t tokens_tokenized;    /* tokens produced by the tokenizer pool */
    uint64_t tokens_served;       /* usage tokens of successful embed/score replies */
    uint64_t send_failures;       /* sends that failed (peer gone, queue full) */
    uint64_t workers_joined, workers_lost;
} brk_counters_t;

struct brk_req;

typedef enum brk_chunk_state {
    BRK_CHUNK_IDLE = 0, /* planned, not queued yet */
    BRK_CHUNK_QUEUED,   /* in the FIFO */
    BRK_CHUNK_INFLIGHT, /* sent to worker `worker`, attempt `attempt` */
    BRK_CHUNK_DONE,     /* accepted result copied into the request's output */
} brk_chunk_state_t;

/* Some whole sequences of one request: seqs [first, first + nseq). */
typedef struct brk_chunk {
    struct brk_req *req;
    uint32_t cid;
    uint32_t first, nseq;
    uint32_t tokens;
    brk_chunk_state_t state;
    uint32_t attempt;  /* the attempt of the current (or next) dispatch */
    int32_t worker;    /* INFLIGHT: worker slot; else the slot of the last dispatch or -1 */
    int32_t failed_on; /* slot of the worker that last answered this chunk with an error, or -1 */
    struct brk_chunk *qprev, *qnext; /* FIFO links while QUEUED */
} brk_chunk_t;

/* One dispatch a worker holds: it occupies one credit until the worker answers or is lost. */
typedef struct brk_inflight {
    uint64_t rid;
    uint32_t cid, att;
    uint32_t tokens;
    int64_t sent_us;
    bool late; /* already re-dispatched for lateness */
} brk_inflight_t;

typedef struct brk_worker {
    bool used;
    uint8_t ident[BRK_IDENT_MAX]; /* routing id */
    size_t ident_len;
    char wid[BRK_NAME_MAX]; /* "wid" from ready (truncated for logs) */
    com_proto_task_t task;
    uint32_t mbt;         /* max batch tokens from ready: caps the chunk budget */
    uint32_t credits;     /* window, capped at BRK_MAX_CREDITS */
    bool draining;        /* sent drain: no new chunks */
    int64_t last_recv_us; /* anything received from it */
    brk_inflight_t inflight[BRK_MAX_CREDITS];
    uint32_t n_inflight;
    uint64_t out_tokens; /* tokens in its in-flight entries */
} brk_worker_t;

typedef enum brk_req_state {
    BRK_REQ_FREE = 0,
    BRK_REQ_TOKENIZING, /* jobs in the tokenizer pool */
    BRK_REQ_RUNNING,    /* chunks queued / in flight */
    BRK_REQ_ZOMBIE,     /* answered, waiting for its tokenizer jobs to come back */
} brk_req_state_t;

typedef struct brk_req {
    brk_req_state_t state;
    uint64_t rid;                 /* broker-assigned id (the "id" of its chunks); 0 when free */
    uint64_t client_id;           /* the client's "id" */
    uint8_t ident[BRK_IDENT_MAX]; /* client routing id */
    size_t ident_len;
    zmq_msg_t raw;         /* the request frame; msg's views point into it */
    com_proto_msg_t msg;   /* decoded request */
    com_proto_type_t type; /* EMBED, SCORE or TOKENIZE */
    int64_t recv_us, tok_start_us, tok_done_us, deadline_us;
    /* parameters */
    com_proto_dtype_t dtype;
    int32_t normalize;
    uint32_t dims;
    bool truncate;
    uint32_t out_dim; /* row width of the output (1 for scores) */
    uint32_t n;       /* inputs (pairs for score) */
    /* tokens, [offs[n]] ids of n sequences; owned when own_ids, else views into msg */
    int32_t *ids;
    int32_t *offs; /* [n + 1] */
    uint32_t *seg; /* [n] first-segment lengths (score) or NULL */
    bool own_ids;
    uint64_t total_tokens;
    /* tokenization */
    brk_tok_job_t **jobs; /* [n_jobs], owned */
    uint32_t n_jobs, jobs_pending;
    /* chunks and output */
    brk_chunk_t *chunks; /* [n_chunks], owned */
    uint32_t n_chunks, chunks_done;
    uint8_t *out; /* [n, out_dim] dtype LE, owned */
    size_t out_bytes;
    uint64_t compute_us_max; /* slowest accepted chunk's compute */
    bool dispatched;         /* a chunk was ever sent */
    uint32_t next_free;      /* free list link (slot index), while FREE */
} brk_req_t;

typedef struct brk {
    brk_config_t cfg;
    char model_name[BRK_NAME_MAX];
    char id[COM_REG_ID_MAX];
    char host[COM_REG_FIELD_MAX];
    char frontend_ep[COM_REG_FIELD_MAX]; /* endpoints as bound (ZMQ_LAST_ENDPOINT) */
    char backend_ep[COM_REG_FIELD_MAX];
    com_model_info_t info;
    com_tokenizer_t *tok;
    com_encoding_t enc; /* main thread's encoding, for small requests tokenized inline */
    com_proto_limits_t limits;
    void *zctx;
    void *frontend; /* ROUTER */
    void *backend;  /* ROUTER */
    brk_tokpool_t *pool;
    com_registry_agent_t *agent;
    int64_t started_ms;
    /* workers */
    brk_worker_t *workers; /* [BRK_MAX_WORKERS] */
    uint32_t n_workers;
    int worker_hi; /* every used worker slot is below this (loops stop here, not at 256) */
    uint64_t hb_seq;
    /* requests */
    brk_req_t *reqs;    /* [cfg.max_requests] */
    uint32_t free_head; /* UINT32_MAX = none */
    uint32_t req_hi;    /* every non-FREE request slot is below this (timer walks stop here) */
    uint32_t active_requests;
    uint32_t rid_gen;
    /* FIFO of queued chunks */
    brk_chunk_t *q_head, *q_tail;
    uint64_t queued_tokens;
    uint64_t inflight_tokens;
    /* scratch for encoding chunks */
    int32_t *scratch_offs;
    size_t scratch_cap;
    bool draining;
    int64_t last_refusal_log_us; /* rate limit for the refused-worker warning */
    brk_counters_t c;
} brk_t;

/* ---- broker_net.c: frames ---- */

/* Sends [ident][buf] on a ROUTER without blocking; counts a failure in send_failures. Returns 0
 * or -errno-style: -EHOSTUNREACH when the peer is gone, -EAGAIN when its queue is full. The
 * buffer is consumed (freed) either way. */
int brk_net_send(brk_t *b, void *sock, const uint8_t *ident, size_t ident_len,
                 com_proto_buf_t *buf);
/* Answers a client on the frontend with an error reply: counts it (requests_failed,
 * failed_by_code, overloads, deadline_misses), encodes it with com_proto_reply_error (the
 * message truncated to 511 bytes) and sends it with brk_net_send. */
void brk_net_reply_error(brk_t *b, const uint8_t *ident, size_t ident_len, uint64_t id,
                         com_proto_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* ---- broker_request.c ---- */

/* Allocates the request table (cfg.max_requests slots). 0 or COM_ENOMEM. */
int brk_requests_init(brk_t *b, com_error_t *err);
/* Frees every request (answered or not) and the table. Call after the tokenizer pool has been
 * stopped, since requests own the jobs the pool threads read. */
void brk_requests_free(brk_t *b);
/* Handles one client frame: ident, payload (zmq_msg, consumed: moved into a request or closed). */
void brk_request_on_frame(brk_t *b, const uint8_t *ident, size_t ident_len, zmq_msg_t *payload);
/* A tokenizer job came back (ownership stays with its request). */
void brk_request_on_job(brk_t *b, brk_tok_job_t *job);
/* The request with rid, or NULL when unknown or already answered. */
brk_req_t *brk_request_find(brk_t *b, uint64_t rid);
/* An accepted result for chunk ch: copies rows, completes the request when it was the last. */
void brk_request_chunk_done(brk_t *b, brk_chunk_t *ch, const com_proto_result_t *res);
/* Answers the request with an error and releases it (or leaves it a zombie until its jobs come
 * back). Counts the failure. */
void brk_request_fail(brk_t *b, brk_req_t *r, com_proto_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Deadlines: fails requests past theirs. */
void brk_requests_tick(brk_t *b, int64_t now_us);
/* Fails every open request with UNAVAILABLE (forced shutdown). */
void brk_requests_abort_all(brk_t *b, const char *why);

/* ---- broker_dispatch.c ---- */

/* Handles one worker frame. */
void brk_dispatch_on_frame(brk_t *b, const uint8_t *ident, size_t ident_len, zmq_msg_t *payload);
/* Appends a chunk to the FIFO tail (front = true: head, for re-dispatches). */
void brk_fifo_push(brk_t *b, brk_chunk_t *ch, bool front);
/* Removes a QUEUED chunk from the FIFO (state becomes IDLE). */
void brk_fifo_remove(brk_t *b, brk_chunk_t *ch);
/* Sends queued chunks to workers with free credits (fewest outstanding tokens first). */
void brk_dispatch_run(brk_t *b);
/* Heartbeats to workers, worker loss, chunk lateness. */
void brk_dispatch_tick(brk_t *b, int64_t now_us, bool send_heartbeats);
/* Ready workers (not draining) with the given task; task < 0 counts all. */
uint32_t brk_workers_ready(const brk_t *b, int task);
/* Smallest max-batch-tokens among ready workers of task, or 0 when none. */
uint32_t brk_workers_min_mbt(const brk_t *b, int task);
/* Sends drain (or disconnect) to every known worker. */
void brk_workers_notify(brk_t *b, com_proto_type_t type, const char *why);
/* Re-dispatches a chunk whose dispatch was lost (attempt + 1), or fails its request after
 * --max-attempts. */
void brk_chunk_redispatch(brk_t *b, brk_chunk_t *ch, const char *why);

/* ---- broker_main.c / counters ---- */

/* Writes the counters as one JSON object (no newline) into f. */
void brk_counters_json(const brk_t *b, void *file);
/* Expensive consistency checks (EMBER_DEBUG_CHECKS builds); aborts on a broken invariant. */
void brk_check_invariants(const brk_t *b);

#endif
