/* common/registry.h — the Redis registry: who exists (workers, brokers), what they serve, their
 * load and when they were last seen. The data path never goes through here; a pool keeps
 * serving while Redis is down, and each heartbeat re-registers, so entries reappear on their own
 * when Redis comes back.
 *
 * Schema (docs/architecture.md):
 *   ember:worker:<id>  hash, TTL = ttl_ms, rewritten by every heartbeat
 *   ember:workers      sorted set, id scored by last-seen wall-clock ms
 *   ember:broker:<id>  hash, TTL;  ember:brokers  sorted set, likewise
 * A sorted-set member whose hash has expired is stale: listings skip it and prune it.
 *
 * Connection: synchronous hiredis with short connect/command timeouts so a dead Redis costs a
 * caller at most about timeout_ms per call; after a failure the next call reconnects, at most
 * once per reconnect interval (calls in between fail fast with COM_EIO).
 * Thread-safety: one thread per com_registry_t. */
#ifndef EMBER_COMMON_REGISTRY_H
#define EMBER_COMMON_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct com_registry com_registry_t;

typedef struct com_registry_opts {
    int32_t timeout_ms;     /* connect and command timeout (default 250) */
    int32_t reconnect_ms;   /* least time between reconnect attempts (default 1000) */
    const char *key_prefix; /* default "ember"; tests use their own to stay apart */
} com_registry_opts_t;

/* Parses url ("redis://host[:port][/db]", or "host[:port]") and prepares a connection; it
 * connects lazily, so a Redis that is down now is not an error here. Returns 0 or COM_EINVAL
 * (bad URL) / COM_ENOMEM. opts may be NULL. */
int com_registry_new(const char *url, const com_registry_opts_t *opts, com_registry_t **out,
                     com_error_t *err);
void com_registry_destroy(com_registry_t **self_p);

/* 1 if the last call reached Redis, else 0. */
int com_registry_connected(const com_registry_t *reg);

#define COM_REG_ID_MAX    64
#define COM_REG_FIELD_MAX 256

typedef struct com_worker_record {
    char id[COM_REG_ID_MAX]; /* unique per process: host-pid-random */
    char host[COM_REG_FIELD_MAX];
    char device[32];                 /* "cpu", "cuda:0" */
    char model[COM_REG_FIELD_MAX];   /* model name (directory base name) */
    char family[32];                 /* "bert" */
    char brokers[COM_REG_FIELD_MAX]; /* endpoints it is connected to, comma-separated */
    int64_t pid;
    int64_t started_ms;   /* wall clock */
    int64_t epoch;        /* bumped by each (re)registration after a Redis loss */
    int64_t last_seen_ms; /* wall clock, set by the registry on put */
    int64_t max_batch_tokens;
    int64_t load_tokens; /* outstanding tokens */
    int64_t batches_done;
    int64_t chunks_done;
    int64_t tokens_done;
    char state[16]; /* "ready", "draining", "unhealthy" */
} com_worker_record_t;

typedef struct com_broker_record {
    char id[COM_REG_ID_MAX];
    char host[COM_REG_FIELD_MAX];
    char frontend[COM_REG_FIELD_MAX]; /* endpoint clients connect to */
    char backend[COM_REG_FIELD_MAX];  /* endpoint workers connect to */
    char model[COM_REG_FIELD_MAX];
    int64_t pid;
    int64_t started_ms;
    int64_t last_seen_ms;
    int64_t workers; /* workers connected now */
    int64_t requests_done;
    int64_t requests_failed;
    int64_t chunks_sent;
    int64_t chunks_redispatched;
    char state[16]; /* "ready", "draining" */
} com_broker_record_t;

/* Writes the record (hash with TTL ttl_ms, and the sorted-set score = now) in one MULTI/EXEC.
 * Sets rec->last_seen_ms. Returns 0; COM_EIO when Redis cannot be reached (nothing else
 * changes; call again on the next heartbeat) or when it fails any command of the transaction
 * (the message names the command and carries Redis's error, e.g. WRONGTYPE; Redis does not roll
 * back, so the other commands may have been applied); COM_ENOMEM when the commands cannot be
 * queued (the connection is dropped unsent). */
int com_registry_put_worker(com_registry_t *reg, com_worker_record_t *rec, int32_t ttl_ms,
                            com_error_t *err);
int com_registry_put_broker(com_registry_t *reg, com_broker_record_t *rec, int32_t ttl_ms,
                            com_error_t *err);
/* Removes the record (hash and set member). Returns 0, COM_EIO (unreachable, or an error reply,
 * named in the message) or COM_ENOMEM. */
int com_registry_remove_worker(com_registry_t *reg, const char *id, com_error_t *err);
int com_registry_remove_broker(com_registry_t *reg, const char *id, com_error_t *err);

/* Every live record (hash present), newest first, into a new array (*out, free() it) of *n.
 * Stale set members are pruned, in one pipeline. Returns 0 or COM_EIO (unreachable, or an error
 * reply, pruning's included) / COM_ENOMEM; *out NULL on error. */
int com_registry_list_workers(com_registry_t *reg, com_worker_record_t **out, size_t *n,
                              com_error_t *err);
int com_registry_list_brokers(com_registry_t *reg, com_broker_record_t **out, size_t *n,
                              com_error_t *err);

#endif
