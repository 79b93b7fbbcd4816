/* common/registry.c — see registry.h. Records are described by field tables (name, offset,
 * kind) so that workers and brokers share one writer and one reader. One thread per object. */
#include "common/registry.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

struct com_registry {
    char host[256];
    int port;
    int db;
    char prefix[64];
    int32_t timeout_ms;
    int32_t reconnect_ms;
    redisContext *ctx;   /* NULL while disconnected */
    int64_t last_try_us; /* monotonic time of the last connect attempt */
};

enum { S_STR, S_I64 };

typedef struct s_field {
    const char *name;
    size_t off;
    int kind;
    size_t cap; /* S_STR: buffer size */
} s_field_t;

#define S_STRF(T, f)                                                                               \
    { #f, offsetof(T, f), S_STR, sizeof(((T *)0)->f) }
#define S_I64F(T, f)                                                                               \
    { #f, offsetof(T, f), S_I64, 0 }

static const s_field_t s_worker_fields[] = {
    S_STRF(com_worker_record_t, id),
    S_STRF(com_worker_record_t, host),
    S_STRF(com_worker_record_t, device),
    S_STRF(com_worker_record_t, model),
    S_STRF(com_worker_record_t, family),
    S_STRF(com_worker_record_t, brokers),
    S_I64F(com_worker_record_t, pid),
    S_I64F(com_worker_record_t, started_ms),
    S_I64F(com_worker_record_t, epoch),
    S_I64F(com_worker_record_t, last_seen_ms),
    S_I64F(com_worker_record_t, max_batch_tokens),
    S_I64F(com_worker_record_t, load_tokens),
    S_I64F(com_worker_record_t, batches_done),
    S_I64F(com_worker_record_t, chunks_done),
    S_I64F(com_worker_record_t, tokens_done),
    S_STRF(com_worker_record_t, state),
};

static const s_field_t s_broker_fields[] = {
    S_STRF(com_broker_record_t, id),
    S_STRF(com_broker_record_t, host),
    S_STRF(com_broker_record_t, frontend),
    S_STRF(com_broker_record_t, backend),
    S_STRF(com_broker_record_t, model),
    S_I64F(com_broker_record_t, pid),
    S_I64F(com_broker_record_t, started_ms),
    S_I64F(com_broker_record_t, last_seen_ms),
    S_I64F(com_broker_record_t, workers),
    S_I64F(com_broker_record_t, requests_done),
    S_I64F(com_broker_record_t, requests_failed),
    S_I64F(com_broker_record_t, chunks_sent),
    S_I64F(com_broker_record_t, chunks_redispatched),
    S_STRF(com_broker_record_t, state),
};

#define S_NFIELDS(t) (sizeof(t) / sizeof((t)[0]))
#define S_MAX_FIELDS 16
_Static_assert(S_NFIELDS(s_worker_fields) <= S_MAX_FIELDS, "field table");
_Static_assert(S_NFIELDS(s_broker_fields) <= S_MAX_FIELDS, "field table");

typedef struct s_kind {
    const char *one;  /* "worker": hash key ember:worker:<id> */
    const char *many; /* "workers": sorted set ember:workers */
    const s_field_t *fields;
    size_t nfields;
    size_t rec_size;
} s_kind_t;

static const s_kind_t s_workers = {"worker", "workers", s_worker_fields, S_NFIELDS(s_worker_fields),
                                   sizeof(com_worker_record_t)};
static const s_kind_t s_brokers = {"broker", "brokers", s_broker_fields, S_NFIELDS(s_broker_fields),
                                   sizeof(com_broker_record_t)};

int com_registry_new(const char *url, const com_registry_opts_t *opts, com_registry_t **out,
                     com_error_t *err) {
    *out = NULL;
    if (!url || !*url)
        return com_error_set(err, COM_EINVAL, "empty Redis URL");
    const char *p = url;
    if (strncmp(p, "redis://", 8) == 0)
        p += 8;
    com_registry_t *reg = calloc(1, sizeof *reg);
    if (!reg)
        return com_error_set(err, COM_ENOMEM, "out of memory");
    reg->port = 6379;
    size_t hl = strcspn(p, ":/");
    if (hl == 0 || hl >= sizeof reg->host) {
        free(reg);
        return com_error_set(err, COM_EINVAL, "bad Redis URL '%s': no host", url);
    }
    memcpy(reg->host, p, hl);
    p += hl;
    char *end;
    if (*p == ':') {
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port <= 0 || port > 65535 || (*end && *end != '/')) {
            free(reg);
            return com_error_set(err, COM_EINVAL, "bad Redis URL '%s': port", url);
        }
        reg->port = (int)port;
        p = end;
    }
    if (*p == '/' && p[1]) {
        long db = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end || db < 0 || db > 1000) {
            free(reg);
            return com_error_set(err, COM_EINVAL, "bad Redis URL '%s': database", url);
        }
        reg->db = (int)db;
    }
    reg->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 250;
    reg->reconnect_ms = opts && opts->reconnect_ms > 0 ? opts->reconnect_ms : 1000;
    const char *prefix = opts && opts->key_prefix ? opts->key_prefix : "ember";
    if (strlen(prefix) >= sizeof reg->prefix) {
        free(reg);
        return com_error_set(err, COM_EINVAL, "key prefix too long");
    }
    strcpy(reg->prefix, prefix);
    reg->last_try_us = com_clock_mono_us() - (int64_t)reg->reconnect_ms * 1000;
    *out = reg;
    return 0;
}

static void s_disconnect(com_registry_t *reg) {
    if (reg->ctx)
        redisFree(reg->ctx);
    reg->ctx = NULL;
}

void com_registry_destroy(com_registry_t **self_p) {
    if (!self_p || !*self_p)
        return;
    s_disconnect(*self_p);
    free(*self_p);
    *self_p = NULL;
}

int com_registry_connected(const com_registry_t *reg) {
    return reg->ctx != NULL;
}

/* Connects when disconnected, at most once per reconnect interval. 0 or COM_EIO. */
static int s_ensure(com_registry_t *reg, com_error_t *err) {
    if (reg->ctx)
        return 0;
    int64_t now = com_clock_mono_us();
    if (now - reg->last_try_us < (int64_t)reg->reconnect_ms * 1000)
        return com_error_set(err, COM_EIO, "redis %s:%d unreachable (next try within %d ms)",
                             reg->host, reg->port, reg->reconnect_ms);
    reg->last_try_us = now;
    struct timeval tv = {reg->timeout_ms / 1000, (reg->timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(reg->host, reg->port, tv);
    if (!c || c->err) {
        int rc = com_error_set(err, COM_EIO, "redis %s:%d: %s", reg->host, reg->port,
                               c ? c->errstr : "cannot allocate context");
        if (c)
            redisFree(c);
        return rc;
    }
    redisSetTimeout(c, tv);
    reg->ctx = c;
    if (reg->db) {
        redisReply *r = redisCommand(c, "SELECT %d", reg->db);
        int bad = !r || r->type == REDIS_REPLY_ERROR;
        if (r)
            freeReplyObject(r);
        if (bad) {
            s_disconnect(reg);
            return com_error_set(err, COM_EIO, "redis: SELECT %d failed", reg->db);
        }
    }
    return 0;
}

/* Reads one pipelined reply; on a transport failure disconnects. Returns the reply or NULL. */
static redisReply *s_reply(com_registry_t *reg, com_error_t *err) {
    void *r = NULL;
    if (redisGetReply(reg->ctx, &r) != REDIS_OK || !r) {
        com_error_set(err, COM_EIO, "redis %s:%d: %s", reg->host, reg->port,
                      reg->ctx->errstr[0] ? reg->ctx->errstr : "no reply");
        s_disconnect(reg);
        return NULL;
    }
    return r;
}

/* After a pipeline has been queued: hiredis fails to queue only when out of memory, leaving
 * ctx->err set and a partial pipeline in its buffer; dropping the connection makes sure none of
 * that (a MULTI without its EXEC, say) is ever sent. 0 or COM_ENOMEM. */
static int s_queued(com_registry_t *reg, const char *what, com_error_t *err) {
    if (!reg->ctx->err)
        return 0;
    int rc = com_error_set(err, COM_ENOMEM, "redis: cannot queue %s: %s", what, reg->ctx->errstr);
    s_disconnect(reg);
    return rc;
}

/* Checks one reply to `cmd arg`: an error reply, or (when want is not NULL) anything but the
 * status reply want, fails with a message naming the command and Redis's error text.
 * 0 or COM_EIO. */
static int s_check(const redisReply *r, const char *want, const char *cmd, const char *arg,
                   com_error_t *err) {
    const char *sp = *arg ? " " : "";
    if (r->type == REDIS_REPLY_ERROR)
        return com_error_set(err, COM_EIO, "redis: %s%s%s: %s", cmd, sp, arg, r->str);
    if (want && (r->type != REDIS_REPLY_STATUS || strcmp(r->str, want) != 0))
        return com_error_set(err, COM_EIO, "redis: %s%s%s: unexpected reply (type %d), wanted %s",
                             cmd, sp, arg, r->type, want);
    return 0;
}

/* Checks EXEC's reply to a transaction of n commands (cmd[i] on arg[i]): it must be an array of
 * n replies, none an error. Nil means the transaction was aborted, an error that it was
 * discarded (a command was refused while queueing). 0 or COM_EIO. */
static int s_check_exec(const redisReply *r, size_t n, const char *const *cmd,
                        const char *const *arg, com_error_t *err) {
    if (r->type == REDIS_REPLY_ERROR)
        return com_error_set(err, COM_EIO, "redis: EXEC: %s", r->str);
    if (r->type == REDIS_REPLY_NIL)
        return com_error_set(err, COM_EIO, "redis: EXEC: transaction aborted (nil reply)");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        return com_error_set(err, COM_EIO,
                             "redis: EXEC: unexpected reply (type %d, %zu elements, wanted %zu)",
                             r->type, r->type == REDIS_REPLY_ARRAY ? r->elements : 0, n);
    for (size_t i = 0; i < n; i++) {
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            return com_error_set(err, COM_EIO, "redis: EXEC: %s %s: %s", cmd[i], arg[i],
                                 r->element[i]->str);
    }
    return 0;
}

static int s_put(com_registry_t *reg, const s_kind_t *k, void *rec, int64_t *last_seen,
                 int32_t ttl_ms, com_error_t *err) {
    if (s_ensure(reg, err) != 0)
        return COM_EIO;
    *last_seen = com_clock_wall_ms();
    const char *id = (const char *)rec + k->fields[0].off;
    char key[COM_REG_ID_MAX + 96], set[96], num[S_MAX_FIELDS][24], score[24];
    snprintf(key, sizeof key, "%s:%s:%s", reg->prefix, k->one, id);
    snprintf(set, sizeof set, "%s:%s", reg->prefix, k->many);
    const char *argv[2 + 2 * S_MAX_FIELDS];
    size_t argl[2 + 2 * S_MAX_FIELDS];
    int argc = 0;
    argv[argc++] = "HSET";
    argv[argc++] = key;
    for (size_t i = 0; i < k->nfields; i++) {
        const s_field_t *f = &k->fields[i];
        argv[argc++] = f->name;
        if (f->kind == S_STR) {
            argv[argc++] = (const char *)rec + f->off;
        } else {
            snprintf(num[i], sizeof num[i], "%lld", (long long)*(int64_t *)((char *)rec + f->off));
            argv[argc++] = num[i];
        }
    }
    for (int i = 0; i < argc; i++)
        argl[i] = strlen(argv[i]);
    snprintf(score, sizeof score, "%lld", (long long)*last_seen);
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%d", ttl_ms);
    redisAppendCommand(reg->ctx, "MULTI");
    redisAppendCommandArgv(reg->ctx, argc, argv, argl);
    redisAppendCommand(reg->ctx, "PEXPIRE %s %s", key, ttl);
    redisAppendCommand(reg->ctx, "ZADD %s %s %s", set, score, id);
    redisAppendCommand(reg->ctx, "EXEC");
    if (s_queued(reg, "MULTI/EXEC", err) != 0)
        return COM_ENOMEM;
    /* Replies: +OK to MULTI, +QUEUED to each command (or an error when one is refused, e.g. OOM,
     * which makes EXEC fail too), then EXEC's. All are read, even after a failure, so that the
     * connection stays in step; the first failure is reported. */
    static const char *const cmd[] = {"HSET", "PEXPIRE", "ZADD"};
    const char *const arg[] = {key, key, set};
    int rc = 0;
    for (int i = 0; i < 5; i++) {
        redisReply *r = s_reply(reg, err);
        if (!r)
            return COM_EIO;
        if (rc == 0) {
            if (i == 0)
                rc = s_check(r, "OK", "MULTI", "", err);
            else if (i < 4)
                rc = s_check(r, "QUEUED", cmd[i - 1], arg[i - 1], err);
            else
                rc = s_check_exec(r, 3, cmd, arg, err);
        }
        freeReplyObject(r);
    }
    return rc;
}

static int s_remove(com_registry_t *reg, const s_kind_t *k, const char *id, com_error_t *err) {
    if (s_ensure(reg, err) != 0)
        return COM_EIO;
    char key[COM_REG_ID_MAX + 96], set[96];
    snprintf(key, sizeof key, "%s:%s:%s", reg->prefix, k->one, id);
    snprintf(set, sizeof set, "%s:%s", reg->prefix, k->many);
    redisAppendCommand(reg->ctx, "DEL %s", key);
    redisAppendCommand(reg->ctx, "ZREM %s %s", set, id);
    if (s_queued(reg, "DEL/ZREM", err) != 0)
        return COM_ENOMEM;
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        redisReply *r = s_reply(reg, err);
        if (!r)
            return COM_EIO;
        if (rc == 0)
            rc = s_check(r, NULL, i == 0 ? "DEL" : "ZREM", i == 0 ? key : set, err);
        freeReplyObject(r);
    }
    return rc;
}

/* Fills rec from an HGETALL reply (field, value, ...). Unknown fields are ignored; strings are
 * cut to their buffers; numbers that do not parse stay 0. */
static void s_fill(const s_kind_t *k, const redisReply *r, void *rec) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *name = r->element[i], *val = r->element[i + 1];
        if (name->type != REDIS_REPLY_STRING || val->type != REDIS_REPLY_STRING)
            continue;
        for (size_t j = 0; j < k->nfields; j++) {
            const s_field_t *f = &k->fields[j];
            if (strcmp(f->name, name->str) != 0)
                continue;
            if (f->kind == S_STR) {
                snprintf((char *)rec + f->off, f->cap, "%s", val->str);
            } else {
                char *end;
                long long v = strtoll(val->str, &end, 10);
                *(int64_t *)((char *)rec + f->off) = *end ? 0 : v;
            }
        }
    }
}

static int s_list(com_registry_t *reg, const s_kind_t *k, void **out, size_t *n, com_error_t *err) {
    *out = NULL;
    *n = 0;
    if (s_ensure(reg, err) != 0)
        return COM_EIO;
    char set[96];
    snprintf(set, sizeof set, "%s:%s", reg->prefix, k->many);
    redisAppendCommand(reg->ctx, "ZREVRANGE %s 0 -1", set);
    if (s_queued(reg, "ZREVRANGE", err) != 0)
        return COM_ENOMEM;
    redisReply *ids = s_reply(reg, err);
    if (!ids)
        return COM_EIO;
    int rc = s_check(ids, NULL, "ZREVRANGE", set, err);
    if (rc == 0 && ids->type != REDIS_REPLY_ARRAY)
        rc = com_error_set(err, COM_EIO, "redis: ZREVRANGE %s: unexpected reply (type %d)", set,
                           ids->type);
    if (rc != 0) {
        freeReplyObject(ids);
        return rc;
    }
    size_t nids = ids->elements;
    char *recs = calloc(nids ? nids : 1, k->rec_size);
    unsigned char *stale = calloc(nids ? nids : 1, 1); /* [nids]: 1 where the hash is gone */
    if (!recs || !stale) {
        free(recs);
        free(stale);
        freeReplyObject(ids);
        return com_error_set(err, COM_ENOMEM, "out of memory listing %s", k->many);
    }
    for (size_t i = 0; i < nids; i++)
        redisAppendCommand(reg->ctx, "HGETALL %s:%s:%b", reg->prefix, k->one, ids->element[i]->str,
                           (size_t)ids->element[i]->len);
    rc = s_queued(reg, "HGETALL", err);
    size_t live = 0, n_stale = 0;
    /* Read every pipelined reply first; stale members (their hash expired) are pruned after. */
    for (size_t i = 0; i < nids && rc == 0; i++) {
        redisReply *h = s_reply(reg, err);
        if (!h) {
            rc = COM_EIO;
            break;
        }
        if (h->type == REDIS_REPLY_ARRAY && h->elements > 0) {
            s_fill(k, h, recs + live * k->rec_size);
            live++;
        } else {
            stale[i] = 1;
            n_stale++;
        }
        freeReplyObject(h);
    }
    /* Prune in one pipeline too (many workers can expire at once, e.g. when a host goes down):
     * queue every ZREM, then read every reply, all of them even after an error reply so that the
     * connection stays in step; the first failure is reported. */
    if (rc == 0 && n_stale > 0) {
        for (size_t i = 0; i < nids; i++) {
            if (stale[i])
                redisAppendCommand(reg->ctx, "ZREM %s %b", set, ids->element[i]->str,
                                   (size_t)ids->element[i]->len);
        }
        rc = s_queued(reg, "ZREM", err);
        int bad = 0;
        for (size_t i = 0; i < nids && rc == 0; i++) {
            if (!stale[i])
                continue;
            redisReply *z = s_reply(reg, err);
            if (!z) {
                rc = COM_EIO;
                break;
            }
            if (bad == 0)
                bad = s_check(z, NULL, "ZREM", set, err);
            freeReplyObject(z);
        }
        if (rc == 0)
            rc = bad;
    }
    free(stale);
    freeReplyObject(ids);
    if (rc != 0) {
        free(recs);
        return rc;
    }
    *out = recs;
    *n = live;
    return 0;
}

int com_registry_put_worker(com_registry_t *reg, com_worker_record_t *rec, int32_t ttl_ms,
                            com_error_t *err) {
    return s_put(reg, &s_workers, rec, &rec->last_seen_ms, ttl_ms, err);
}

int com_registry_put_broker(com_registry_t *reg, com_broker_record_t *rec, int32_t ttl_ms,
                            com_error_t *err) {
    return s_put(reg, &s_brokers, rec, &rec->last_seen_ms, ttl_ms, err);
}

int com_registry_remove_worker(com_registry_t *reg, const char *id, com_error_t *err) {
    return s_remove(reg, &s_workers, id, err);
}

int com_registry_remove_broker(com_registry_t *reg, const char *id, com_error_t *err) {
    return s_remove(reg, &s_brokers, id, err);
}

int com_registry_list_workers(com_registry_t *reg, com_worker_record_t **out, size_t *n,
                              com_error_t *err) {
    return s_list(reg, &s_workers, (void **)out, n, err);
}

int com_registry_list_brokers(com_registry_t *reg, com_broker_record_t **out, size_t *n,
                              com_error_t *err) {
    return s_list(reg, &s_brokers, (void **)out, n, err);
}
