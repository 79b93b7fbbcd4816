/* worker/worker_link.h — the worker's links to its brokers: one DEALER socket per broker endpoint
 * (routing id = worker id), the ready handshake, heartbeats both ways, broker loss, drain and
 * disconnect notices (docs/pool.md), and broker discovery from Redis on a thread of its own.
 *
 * Link states: HELLO (ready sent, nothing heard yet: ready is re-sent every heartbeat interval),
 * LIVE (the broker answered: heartbeats every interval), LOST (three intervals of silence: the
 * socket stays, ZeroMQ reconnects, ready is re-sent every interval until the broker answers).
 * Any message from the broker makes the link LIVE, except `disconnect`, which sends it back to
 * HELLO (with "unknown worker" ready goes out at once: a restarted broker relearns us).
 * Messages are one frame; a multipart or empty message is dropped and counted; a message that
 * does not decode is dropped and counted, except a chunk whose cid/att can still be read, which
 * is handed on so that it can be answered.
 *
 * Closing (discovery only): a link added by discovery is closed when a successful Redis read no
 * longer lists its broker (wrk_links_prune). The slot becomes a tombstone (no socket, no
 * endpoint): it is skipped by tick, drain, disconnect, recv and endpoints, and a send to it is
 * dropped and counted (`orphan_dropped`: results of chunks the closed link had delivered). Link
 * indices stay stable: a tombstone is reused by a later wrk_links_add only when the owner's
 * `busy` callback says nothing refers to that index any more (the scheduler holds no chunk from
 * it), so a late result can never reach a different broker through a reused index.
 *
 * Thread: the event-loop thread, except the discovery thread (wrk_discovery_*), which owns its
 * Redis connection and publishes endpoint lists under a mutex. */
#ifndef EMBER_WORKER_WORKER_LINK_H
#define EMBER_WORKER_WORKER_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/protocol.h"

typedef struct wrk_links wrk_links_t;

/* True while something outside the link set still refers to link index i (e.g. chunks held). */
typedef bool (*wrk_links_busy_fn)(void *arg, int32_t i);

typedef struct wrk_links_opts {
    const char *worker_id;     /* routing id and "wid" */
    const char *model;         /* "model" */
    const char *family;        /* "fam" */
    const char *device;        /* "dev" */
    uint32_t max_batch_tokens; /* "mbt" */
    uint32_t dim;              /* "dim" */
    uint32_t max_seq;          /* "msl" */
    uint32_t credits;          /* "cred" */
    int32_t heartbeat_ms;      /* interval, > 0 */
    wrk_links_busy_fn busy;    /* may a closed slot be reused? NULL = always */
    void *busy_arg;
} wrk_links_opts_t;

/* Load and progress carried by heartbeats. */
typedef struct wrk_links_load {
    uint64_t tokens;
    uint64_t seqs;
    uint64_t batches_done;
    uint32_t credits;
} wrk_links_load_t;

/* A chunk received on a link: decoded (chunk != NULL), or undecodable but addressable (chunk
 * NULL; cid/att read from the raw map; code/why from the decoder). */
typedef struct wrk_link_chunk {
    int32_t link;
    uint64_t id;
    const com_proto_chunk_t *chunk; /* valid during the callback only */
    uint32_t cid, att;
    com_proto_code_t code;
    const char *why;
} wrk_link_chunk_t;

typedef void (*wrk_links_chunk_fn)(void *arg, const wrk_link_chunk_t *ch);

typedef struct wrk_links_stats {
    uint64_t msgs_in, msgs_out;
    uint64_t bad_frames; /* multipart or empty messages dropped */
    uint64_t bad_msgs;   /* undecodable messages dropped (or answered, for chunks) */
    uint64_t unexpected; /* well-formed messages a worker does not expect (ready, result..) */
    uint64_t hb_in, hb_out, ready_out;
    uint64_t disconnects_in, drains_in;
    uint64_t brokers_lost;   /* LIVE -> LOST transitions */
    uint64_t send_dropped;   /* sends that failed (queue full) */
    uint64_t links_closed;   /* discovered links closed: their broker left Redis */
    uint64_t orphan_dropped; /* sends to a closed link (results for a broker that left) */
} wrk_links_stats_t;

/* Creates the link set on a ZeroMQ context (borrowed). Strings in o are copied. Returns 0 with
 * *out, or COM_EINVAL / COM_ENOMEM. */
int wrk_links_new(void *zctx, const wrk_links_opts_t *o, wrk_links_t **out, com_error_t *err);
/* Closes every socket with linger_ms (0 = drop what is unsent). Accepts NULL; nulls *self_p. */
void wrk_links_destroy(wrk_links_t **self_p, int linger_ms);

/* Connects a DEALER to endpoint and sends ready, unless an open link to it exists. discovered
 * marks a link that wrk_links_prune may close (false: given on the command line, never closed).
 * The new link takes a closed slot that is not busy, else a new one. Returns the link index
 * (>= 0), or COM_EINVAL (bad endpoint) / COM_ENOMEM with err set; state unchanged on error. */
int wrk_links_add(wrk_links_t *l, const char *endpoint, bool discovered, int64_t now_us,
                  com_error_t *err);
/* Closes every open discovered link whose endpoint is not among keep[0..n_keep) (draining
 * brokers included: they are still listed): sends it
 * `disconnect` (why) when its broker was ever heard from, closes the socket with linger_ms (so
 * the notice can leave) and makes the slot a tombstone. Returns the number of links closed. */
typedef struct wrk_broker_ep wrk_broker_ep_t;
int wrk_links_prune(wrk_links_t *l, const wrk_broker_ep_t *keep, size_t n_keep, const char *why,
                    int linger_ms);
/* The index of the open link to endpoint, or -1. */
int32_t wrk_links_find(const wrk_links_t *l, const char *endpoint);
/* Slots (open and closed): indices run 0..count-1. */
int32_t wrk_links_count(const wrk_links_t *l);
/* Open links only. */
int32_t wrk_links_open_count(const wrk_links_t *l);
bool wrk_links_is_open(const wrk_links_t *l, int32_t i);
/* The socket of link i; NULL for a closed slot. */
void *wrk_links_socket(const wrk_links_t *l, int32_t i);
/* Writes the open links' endpoints, comma-separated, into buf (truncated to cap). */
void wrk_links_endpoints(const wrk_links_t *l, char *buf, size_t cap);

/* Reads up to max_msgs messages waiting on link i (never blocks), handles the protocol ones and
 * passes chunks to on_chunk. Returns the number of messages read (0 for a closed slot). */
int wrk_links_recv(wrk_links_t *l, int32_t i, int64_t now_us, int max_msgs,
                   wrk_links_chunk_fn on_chunk, void *arg);

/* Sends one message (bytes copied) on link i without blocking. Returns 0, COM_EBUSY (queue full,
 * or link i closed: dropped and counted) or COM_EINVAL (i was never a link). */
int wrk_links_send(wrk_links_t *l, int32_t i, const void *data, size_t len);

/* Timers: sends heartbeats / ready re-sends that are due, notices lost brokers. Returns the
 * monotonic time (us) of the next timer. */
int64_t wrk_links_tick(wrk_links_t *l, int64_t now_us, const wrk_links_load_t *load);

/* Sends drain (why) / disconnect (why) to every open link. */
void wrk_links_drain_all(wrk_links_t *l, const char *why);
void wrk_links_disconnect_all(wrk_links_t *l, const char *why);

void wrk_links_stats(const wrk_links_t *l, wrk_links_stats_t *out);

/* ---- discovery: broker backends listed in Redis, re-read every interval on a thread. */
typedef struct wrk_discovery wrk_discovery_t;

/* One broker listed in Redis: its backend endpoint (wildcards resolved through its host), and
 * whether it is draining (keep a link to it, but do not open one). */
struct wrk_broker_ep {
    char *endpoint; /* malloc'd */
    bool draining;
};

/* Starts the thread (first read at once). Only complete, successful reads are published: a Redis
 * error or an allocation failure leaves the last list as it was, so a broker is never missing
 * from a published list because a read failed. Returns 0 or COM_EINVAL (bad URL) / COM_ENOMEM /
 * COM_EINTERNAL. */
int wrk_discovery_start(const char *redis_url, int32_t interval_ms, wrk_discovery_t **out,
                        com_error_t *err);
/* Stops and joins the thread. Accepts NULL; nulls *self_p. */
void wrk_discovery_stop(wrk_discovery_t **self_p);
/* When the list changed since *gen: copies it whole into a new array of n entries (free with
 * wrk_discovery_list_free), updates *gen and returns 1; else (unchanged, or out of memory: *gen
 * kept, so the next call tries again) returns 0 with *out NULL. */
int wrk_discovery_take(wrk_discovery_t *d, uint64_t *gen, wrk_broker_ep_t **out, size_t *n);
/* Frees a list from wrk_discovery_take. Accepts NULL. */
void wrk_discovery_list_free(wrk_broker_ep_t *v, size_t n);

#endif
