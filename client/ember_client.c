/* client/ember_client.c — libember's client: brokers, requests, the send/receive pump,
 * retries, failover and Redis discovery (API and contract in client/ember.h).
 *
 * Structure. A client owns one ZeroMQ context and, per known broker, one DEALER socket
 * (ZMQ_IMMEDIATE, so a message is only queued to a completed connection and a dead broker is
 * never written to) plus a PAIR socket reading that socket's monitor events (a lost connection
 * fails over at once instead of waiting for the attempt timeout). Requests live in a slot
 * table; a request id is (generation << 24 | slot) and the id on the wire is (request id << 8 |
 * attempt & 0xff), so a reply finds its request in O(1), a reply to a finished or abandoned
 * request (its slot gone or reused under a new generation) is recognised and ignored, and an
 * error reply from an earlier attempt cannot fail the current one (a success from any attempt
 * wins: embedding is idempotent).
 *
 * Request states: QUEUED (waiting for a writable broker) -> SENT (attempt deadline running) ->
 * DONE (outcome kept until collected); a retryable failure goes SENT -> BACKOFF (retry_at) ->
 * QUEUED. Every request also has an overall deadline; past it the request finishes with the
 * last failure (ETIMEOUT when an attempt was waiting for a reply).
 *
 * Progress happens only inside API calls, in s_step: timers, discovery, dispatch, then one
 * zmq_poll over all sockets (bounded by the caller's wait and the next timer), then every
 * message that arrived. Timers use the monotonic clock.
 *
 * Thread-safety: one thread at a time per client (documented in ember.h); no globals. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "client/ember.h"
#include "client/ember_internal.h"
#include "common/zmq_poll_spin.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/prng.h"
#include "common/protocol.h"
#include "common/registry.h"

#define S_MAX_BROKERS   256
#define S_SLOT_BITS     24
#define S_SLOT_MAX      (1u << S_SLOT_BITS)
#define S_MSG_MAX       512
#define S_REENCODE_US   50000    /* a queued message older than this is encoded again (dl) */
#define S_FORCE_DISC_US 500000   /* least time between forced Redis reads */
#define S_MAX_TIMEOUT   86400000 /* 24 h */
#define S_POLL_CAP_MS   1000     /* one zmq_poll waits at most this long */

typedef enum s_state { S_QUEUED = 1, S_SENT, S_BACKOFF, S_DONE } s_state_t;

typedef struct s_broker {
    char *endpoint;
    void *sock;            /* DEALER, NULL when closed */
    void *mon;             /* PAIR reading sock's monitor events, NULL when closed */
    bool listed;           /* part of the current configuration / registry listing */
    int64_t down_until_us; /* penalised (timed out, unreachable, unavailable) until then */
    uint32_t failures;     /* consecutive failures; reset by any reply */
} s_broker_t;

typedef struct s_req s_req_t;
struct s_req {
    uint32_t gen;
    uint32_t slot;
    emb_kind_t kind;
    s_state_t state;
    /* inputs, owned: text bytes back to back, or ids back to back with prefix offsets */
    com_proto_in_kind_t in_kind;
    uint32_t n;
    char *text_buf;         /* TEXT: all texts */
    com_proto_str_t *texts; /* TEXT: [n] views into text_buf */
    int32_t *ids;           /* IDS: [offs[n]] */
    int32_t *offs;          /* IDS: [n + 1] */
    ember_request_opts_t opts;
    /* timing */
    int64_t start_us, deadline_us, attempt_deadline_us, retry_at_us;
    uint32_t attempts; /* sent so far */
    int broker;        /* broker of the current (or last) attempt, -1 before the first */
    /* encoded message of the next send, kept while no broker is writable */
    com_proto_buf_t wire;
    uint32_t wire_attempt;
    int64_t wire_at_us;
    /* the last retryable failure, reported if the deadline or max_attempts ends the request */
    int last_status;
    char last_msg[S_MSG_MAX];
    /* outcome (DONE) */
    int status;
    ember_result_t *result;
    char msg[S_MSG_MAX];
    s_req_t *done_prev, *done_next; /* completion FIFO, while DONE and not collected */
};

struct ember_client {
    void *ctx;
    s_broker_t brokers[S_MAX_BROKERS];
    size_t n_brokers;
    unsigned rr; /* round-robin cursor over brokers */
    /* options */
    char *model;
    int32_t timeout_ms, attempt_timeout_ms, max_attempts, backoff_initial_ms, backoff_max_ms;
    int32_t discovery_refresh_ms;
    int32_t spin_us; /* busy-poll before sleeping in s_step (0 = never) */
    /* discovery */
    com_registry_t *reg; /* NULL unless Redis mode */
    char *redis_url;
    int64_t next_discovery_us, last_discovery_us;
    /* requests */
    s_req_t **slots; /* [cap] NULL = free */
    uint32_t cap;
    uint32_t *free_slots; /* [cap] stack of free slot numbers */
    uint32_t n_free;
    uint32_t gen;
    size_t live; /* requests not yet collected */
    s_req_t *done_head, *done_tail;
    com_prng_t prng;
    uint32_t mon_seq;
    bool queued; /* some request waits in QUEUED: new ones queue behind it (send order =
                    submission order while no slot is reused) */
    ember_stats_t stats;
    char err[S_MSG_MAX];
};

/* ---- small helpers ------------------------------------------------------------------------ */

static int s_fail(ember_client_t *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int s_fail(ember_client_t *c, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return status;
}

static void s_msgf(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_msgf(char *dst, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, S_MSG_MAX, fmt, ap);
    va_end(ap);
}

static void s_errbuf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_errbuf(char *buf, size_t len, const char *fmt, ...) {
    if (!buf || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Maps a protocol error code to a status, and says whether it is worth another attempt. */
static int s_status_for_code(uint32_t code, bool *retryable) {
    *retryable = false;
    switch (code) {
    case COM_PROTO_BAD_REQUEST:
        return EMBER_EBAD_REQUEST;
    case COM_PROTO_TOO_LARGE:
        return EMBER_ETOO_LARGE;
    case COM_PROTO_UNSUPPORTED_VERSION:
        return EMBER_EPROTOCOL;
    case COM_PROTO_OVERLOADED:
        *retryable = true;
        return EMBER_EOVERLOADED;
    case COM_PROTO_DEADLINE_EXCEEDED:
        return EMBER_EDEADLINE;
    case COM_PROTO_NO_WORKERS:
        *retryable = true;
        return EMBER_ENO_WORKERS;
    case COM_PROTO_MODEL_MISMATCH:
        return EMBER_EMODEL_MISMATCH;
    case COM_PROTO_INPUT_TOO_LONG:
        return EMBER_EINPUT_TOO_LONG;
    case COM_PROTO_UNSUPPORTED:
        return EMBER_EUNSUPPORTED;
    case COM_PROTO_UNAVAILABLE:
        *retryable = true;
        return EMBER_EUNAVAILABLE;
    case COM_PROTO_INTERNAL:
    default:
        return EMBER_EINTERNAL;
    }
}

static int64_t s_ms_to_us(int32_t ms) {
    return (int64_t)ms * 1000;
}

/* ---- brokers ------------------------------------------------------------------------------ */

static void s_broker_close(s_broker_t *b) {
    if (b->sock) {
        zmq_socket_monitor(b->sock, NULL, 0);
        zmq_close(b->sock);
        b->sock = NULL;
    }
    if (b->mon) {
        zmq_close(b->mon);
        b->mon = NULL;
    }
}

/* The status of a ZeroMQ call that failed with errno e: EMBER_ENOMEM when it ran out of memory,
 * else `otherwise` (EMBER_EINVAL for a connect to a bad endpoint, EMBER_EINTERNAL for the rest). */
static int s_zmq_status(int e, int otherwise) {
    return e == ENOMEM ? EMBER_ENOMEM : otherwise;
}

/* Opens b's DEALER and its monitor and connects. Returns EMBER_OK, or with c->err set and b's
 * sockets closed: EMBER_EINVAL (the endpoint cannot be connected to: malformed, unknown
 * transport), EMBER_ENOMEM, EMBER_EINTERNAL (another ZeroMQ failure). */
static int s_broker_open(ember_client_t *c, s_broker_t *b) {
    int zero = 0, one = 1;
    int64_t maxmsg = 64 * 1024 * 1024 + 4096; /* the decoder's default message limit */
    char mon_ep[64];
    b->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    if (!b->sock)
        goto err;
    if (zmq_setsockopt(b->sock, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        zmq_setsockopt(b->sock, ZMQ_IMMEDIATE, &one, sizeof one) != 0 ||
        zmq_setsockopt(b->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0)
        goto err;
    snprintf(mon_ep, sizeof mon_ep, "inproc://ember-mon-%p-%u", (void *)c, c->mon_seq++);
    if (zmq_socket_monitor(b->sock, mon_ep, ZMQ_EVENT_DISCONNECTED) != 0)
        goto err;
    b->mon = zmq_socket(c->ctx, ZMQ_PAIR);
    if (!b->mon || zmq_setsockopt(b->mon, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        zmq_connect(b->mon, mon_ep) != 0)
        goto err;
    if (zmq_connect(b->sock, b->endpoint) != 0) {
        int e = zmq_errno();
        s_broker_close(b);
        return s_fail(c, s_zmq_status(e, EMBER_EINVAL), "cannot connect to '%s': %s", b->endpoint,
                      zmq_strerror(e));
    }
    return EMBER_OK;
err:;
    int e = zmq_errno();
    s_broker_close(b);
    return s_fail(c, s_zmq_status(e, EMBER_EINTERNAL), "broker '%s': zmq: %s", b->endpoint,
                  zmq_strerror(e));
}

/* Finds the broker with endpoint ep, or adds it (opening its socket). Returns its index (>= 0),
 * or with c->err set a negative status: EMBER_EINVAL (the table is full, the endpoint cannot be
 * connected to), EMBER_ENOMEM, EMBER_EINTERNAL (ZeroMQ); the table is unchanged then. */
static int s_broker_add(ember_client_t *c, const char *ep) {
    for (size_t i = 0; i < c->n_brokers; i++)
        if (strcmp(c->brokers[i].endpoint, ep) == 0) {
            if (!c->brokers[i].sock) {
                int rc = s_broker_open(c, &c->brokers[i]);
                if (rc != EMBER_OK)
                    return rc;
            }
            return (int)i;
        }
    if (c->n_brokers == S_MAX_BROKERS)
        return s_fail(c, EMBER_EINVAL, "more than %d brokers", S_MAX_BROKERS);
    s_broker_t *b = &c->brokers[c->n_brokers];
    memset(b, 0, sizeof *b);
    b->endpoint = strdup(ep);
    if (!b->endpoint)
        return s_fail(c, EMBER_ENOMEM, "out of memory");
    int rc = s_broker_open(c, b);
    if (rc != EMBER_OK) {
        free(b->endpoint);
        b->endpoint = NULL;
        return rc;
    }
    return (int)c->n_brokers++;
}

static size_t s_brokers_listed(const ember_client_t *c) {
    size_t n = 0;
    for (size_t i = 0; i < c->n_brokers; i++)
        n += c->brokers[i].listed && c->brokers[i].sock;
    return n;
}

static void s_broker_penalise(ember_client_t *c, int bi, int64_t now) {
    if (bi < 0 || (size_t)bi >= c->n_brokers)
        return;
    s_broker_t *b = &c->brokers[bi];
    if (b->failures < 16)
        b->failures++;
    int64_t pen = s_ms_to_us(250) << (b->failures - 1 < 5 ? b->failures - 1 : 5);
    if (pen > s_ms_to_us(5000))
        pen = s_ms_to_us(5000);
    b->down_until_us = now + pen;
}

/* Reads the registry (Redis mode): brokers in state "ready" with a frontend become the listed
 * set; an empty or failed read keeps the current set (registry entries are hints, and the pool
 * keeps serving while Redis is down). Returns 0, or an EMBER_* code with c->err set when the
 * registry could not be read. */
static int s_discover(ember_client_t *c, int64_t now) {
    c->last_discovery_us = now;
    c->next_discovery_us = now + s_ms_to_us(c->discovery_refresh_ms);
    com_broker_record_t *recs = NULL;
    size_t n = 0;
    com_error_t e = {0};
    if (com_registry_list_brokers(c->reg, &recs, &n, &e) != 0)
        return s_fail(c, e.code == COM_ENOMEM ? EMBER_ENOMEM : EMBER_EUNAVAILABLE,
                      "cannot read the brokers from %s: %s", c->redis_url, e.msg);
    c->stats.discoveries++;
    size_t usable = 0;
    for (size_t i = 0; i < n; i++)
        usable += recs[i].frontend[0] && (!recs[i].state[0] || !strcmp(recs[i].state, "ready"));
    if (usable > 0) {
        for (size_t i = 0; i < c->n_brokers; i++)
            c->brokers[i].listed = false;
        for (size_t i = 0; i < n; i++) {
            if (!recs[i].frontend[0] || (recs[i].state[0] && strcmp(recs[i].state, "ready")))
                continue;
            /* a record that cannot be added (bad endpoint, table full, out of memory) is
             * skipped, c->err says why: one bad record must not hide the others */
            int bi = s_broker_add(c, recs[i].frontend);
            if (bi >= 0)
                c->brokers[bi].listed = true;
        }
        /* a broker that left the listing keeps its socket while an attempt waits on it */
        for (size_t i = 0; i < c->n_brokers; i++) {
            if (c->brokers[i].listed || !c->brokers[i].sock)
                continue;
            bool busy = false;
            for (uint32_t s = 0; s < c->cap && !busy; s++)
                busy = c->slots[s] && c->slots[s]->state == S_SENT && c->slots[s]->broker == (int)i;
            if (!busy)
                s_broker_close(&c->brokers[i]);
        }
    }
    free(recs);
    return EMBER_OK;
}

static void s_discover_maybe(ember_client_t *c, int64_t now, bool force) {
    if (!c->reg)
        return;
    if (now >= c->next_discovery_us || (force && now - c->last_discovery_us >= S_FORCE_DISC_US))
        s_discover(c, now);
}

/* ---- requests ----------------------------------------------------------------------------- */

static uint64_t s_req_id(const s_req_t *r) {
    return ((uint64_t)r->gen << S_SLOT_BITS) | r->slot;
}

static void s_req_free(s_req_t *r) {
    if (!r)
        return;
    free(r->text_buf);
    free(r->texts);
    free(r->ids);
    free(r->offs);
    com_proto_buf_free(&r->wire);
    ember_result_destroy(&r->result);
    free(r);
}

/* Takes a free slot for r (growing the table). Returns 0 or -1 (out of memory / full). */
static int s_slot_take(ember_client_t *c, s_req_t *r) {
    if (c->n_free == 0) {
        if (c->cap >= S_SLOT_MAX)
            return -1;
        uint32_t ncap = c->cap ? c->cap * 2 : 64;
        if (ncap > S_SLOT_MAX)
            ncap = S_SLOT_MAX;
        s_req_t **ns = realloc(c->slots, ncap * sizeof *ns);
        if (!ns)
            return -1;
        c->slots = ns;
        uint32_t *nf = realloc(c->free_slots, ncap * sizeof *nf);
        if (!nf)
            return -1;
        c->free_slots = nf;
        for (uint32_t s = ncap; s > c->cap; s--) {
            c->slots[s - 1] = NULL;
            c->free_slots[c->n_free++] = s - 1;
        }
        c->cap = ncap;
    }
    r->slot = c->free_slots[--c->n_free];
    if (++c->gen == 0 || c->gen >= (1u << 31))
        c->gen = 1;
    r->gen = c->gen;
    c->slots[r->slot] = r;
    c->live++;
    return 0;
}

static void s_done_unlink(ember_client_t *c, s_req_t *r) {
    if (r->done_prev)
        r->done_prev->done_next = r->done_next;
    else if (c->done_head == r)
        c->done_head = r->done_next;
    if (r->done_next)
        r->done_next->done_prev = r->done_prev;
    else if (c->done_tail == r)
        c->done_tail = r->done_prev;
    r->done_prev = r->done_next = NULL;
}

/* Removes r from the client and frees it. */
static void s_req_release(ember_client_t *c, s_req_t *r) {
    if (r->state == S_DONE)
        s_done_unlink(c, r);
    c->slots[r->slot] = NULL;
    c->free_slots[c->n_free++] = r->slot;
    c->live--;
    s_req_free(r);
}

static s_req_t *s_req_find(const ember_client_t *c, uint64_t id) {
    if (id == 0)
        return NULL;
    uint32_t slot = (uint32_t)(id & (S_SLOT_MAX - 1));
    uint64_t gen = id >> S_SLOT_BITS;
    if (slot >= c->cap || !c->slots[slot] || c->slots[slot]->gen != gen)
        return NULL;
    return c->slots[slot];
}

/* Finishes r with status (and result on success); it waits in the completion FIFO. */
static void s_req_finish(ember_client_t *c, s_req_t *r, int status, ember_result_t *res,
                         const char *msg) {
    r->state = S_DONE;
    r->status = status;
    r->result = res;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
    com_proto_buf_free(&r->wire);
    r->done_next = NULL;
    r->done_prev = c->done_tail;
    if (c->done_tail)
        c->done_tail->done_next = r;
    else
        c->done_head = r;
    c->done_tail = r;
}

/* A retryable failure of r's current attempt: another attempt after a backoff if attempts and
 * the deadline allow, else the request fails with this status. */
static void s_req_retry(ember_client_t *c, s_req_t *r, int64_t now, int status, const char *msg) {
    r->last_status = status;
    snprintf(r->last_msg, sizeof r->last_msg, "%s", msg);
    if (r->attempts >= (uint32_t)c->max_attempts) {
        char m[S_MSG_MAX];
        snprintf(m, sizeof m, "%s (after %u attempts)", msg, r->attempts);
        s_req_finish(c, r, status, NULL, m);
        return;
    }
    int64_t d = s_ms_to_us(c->backoff_initial_ms);
    for (uint32_t k = 1; k < r->attempts && d < s_ms_to_us(c->backoff_max_ms); k++)
        d *= 2;
    if (d > s_ms_to_us(c->backoff_max_ms))
        d = s_ms_to_us(c->backoff_max_ms);
    d = d / 2 + (int64_t)com_prng_below(&c->prng, (uint64_t)(d - d / 2) + 1); /* jitter */
    if (now + d >= r->deadline_us) {
        s_req_finish(c, r, status, NULL, msg);
        return;
    }
    r->state = S_BACKOFF;
    r->retry_at_us = now + d;
}

/* Encodes r's next attempt into r->wire. Returns 0 or an EMBER_* code (message in msg). */
static int s_req_encode(ember_client_t *c, s_req_t *r, int64_t now, char *msg) {
    com_proto_buf_free(&r->wire);
    uint64_t wire_id = (s_req_id(r) << 8) | (r->attempts & 0xff);
    int64_t left_ms = (r->deadline_us - now + 999) / 1000;
    uint32_t dl = left_ms < 1 ? 1 : left_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)left_ms;
    com_proto_str_t model = {c->model, c->model ? (uint32_t)strlen(c->model) : 0};
    com_proto_inputs_t in = {
        .kind = r->in_kind, .n = r->n, .texts = r->texts, .ids = r->ids, .offs = r->offs};
    com_error_t e = {0};
    int rc;
    if (r->kind == EMB_KIND_EMBED) {
        com_proto_embed_t b = {.in = in,
                               .model = model,
                               .normalize = r->opts.normalize,
                               .dims = r->opts.dimensions,
                               .dtype =
                                   r->opts.dtype == EMBER_DTYPE_F16 ? COM_PROTO_F16 : COM_PROTO_F32,
                               .truncate = r->opts.truncate != 0,
                               .deadline_ms = dl};
        rc = com_proto_encode_embed(wire_id, &b, &r->wire, &e);
    } else if (r->kind == EMB_KIND_TOKENIZE) {
        com_proto_tokenize_t b = {
            .in = in, .model = model, .truncate = r->opts.truncate != 0, .deadline_ms = dl};
        rc = com_proto_encode_tokenize(wire_id, &b, &r->wire, &e);
    } else {
        com_proto_info_t b = {.model = model};
        rc = com_proto_encode_info(wire_id, &b, &r->wire, &e);
    }
    if (rc != 0) {
        s_msgf(msg, "cannot encode the request: %s", e.msg);
        return rc == COM_ENOMEM ? EMBER_ENOMEM : EMBER_EINVAL;
    }
    r->wire_attempt = r->attempts;
    r->wire_at_us = now;
    return 0;
}

static bool s_writable(const s_broker_t *b) {
    if (!b->sock)
        return false;
    int ev = 0;
    size_t len = sizeof ev;
    return zmq_getsockopt(b->sock, ZMQ_EVENTS, &ev, &len) == 0 && (ev & ZMQ_POLLOUT);
}

/* Picks the broker for r's next attempt: a listed, writable one; healthy before penalised, one
 * other than the previous attempt's before it, round-robin among equals. -1 if none. */
static int s_pick(ember_client_t *c, const s_req_t *r, int64_t now) {
    int best = -1, best_score = 1 << 30;
    size_t nb = c->n_brokers;
    for (size_t k = 0; k < nb; k++) {
        size_t i = (c->rr + k) % nb;
        s_broker_t *b = &c->brokers[i];
        if (!b->listed || !s_writable(b))
            continue;
        int score = (b->down_until_us > now ? 2 : 0) + ((int)i == r->broker ? 1 : 0);
        if (score < best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    if (best >= 0)
        c->rr = (unsigned)(best + 1);
    return best;
}

/* Tries to send r's next attempt. Leaves r SENT, QUEUED (no broker writable), or DONE (could
 * not encode). */
static void s_req_send(ember_client_t *c, s_req_t *r, int64_t now) {
    int bi = s_pick(c, r, now);
    if (bi < 0) {
        c->queued = true;
        if (!r->last_status || r->last_status == EMBER_EUNAVAILABLE) {
            r->last_status = EMBER_EUNAVAILABLE;
            if (c->n_brokers == 0 || s_brokers_listed(c) == 0)
                s_msgf(r->last_msg, "no broker known%s%s", c->reg ? " in redis " : "",
                       c->reg ? c->redis_url : "");
            else
                s_msgf(r->last_msg, "no broker reachable (%zu known, first '%s')",
                       s_brokers_listed(c), c->brokers[0].endpoint);
        }
        return;
    }
    char msg[S_MSG_MAX];
    if (!r->wire.data || r->wire_attempt != r->attempts || now - r->wire_at_us > S_REENCODE_US) {
        int rc = s_req_encode(c, r, now, msg);
        if (rc != 0) {
            s_req_finish(c, r, rc, NULL, msg);
            return;
        }
    }
    s_broker_t *b = &c->brokers[bi];
    if (zmq_send(b->sock, r->wire.data, r->wire.len, ZMQ_DONTWAIT) < 0) {
        int e = zmq_errno();
        if (e != EAGAIN) {
            s_broker_penalise(c, bi, now);
            r->last_status = EMBER_EUNAVAILABLE;
            s_msgf(r->last_msg, "send to %s: %s", b->endpoint, zmq_strerror(e));
        }
        c->queued = true;
        return; /* stays QUEUED */
    }
    com_proto_buf_free(&r->wire);
    c->stats.sends++;
    if (r->attempts > 0) {
        c->stats.retries++;
        if (bi != r->broker)
            c->stats.failovers++;
    }
    r->attempts++;
    r->broker = bi;
    r->state = S_SENT;
    int64_t ad = now + s_ms_to_us(c->attempt_timeout_ms);
    r->attempt_deadline_us = ad < r->deadline_us ? ad : r->deadline_us;
}

/* ---- replies ------------------------------------------------------------------------------ */

static void s_copy_timing(ember_result_t *res, const com_proto_timings_t *t, uint64_t usage) {
    res->tm.tokenize_us = t->tokenize_us;
    res->tm.queue_us = t->queue_us;
    res->tm.compute_us = t->compute_us;
    res->tm.server_us = t->total_us;
    res->usage_tokens = usage;
}

/* Builds r's result from a decoded success reply. Returns 0, or an EMBER_* code with msg. */
static int s_build_result(ember_client_t *c, s_req_t *r, const com_proto_msg_t *m, int bi,
                          ember_result_t **out, char *msg) {
    ember_result_t *res = emb_result_new(r->kind);
    if (!res)
        return s_msgf(msg, "out of memory"), EMBER_ENOMEM;
    const char *ep = c->brokers[bi].endpoint;
    if (r->kind == EMB_KIND_EMBED) {
        const com_proto_embed_reply_t *e = &m->u.embed_reply;
        if (m->type != COM_PROTO_EMBED_REPLY || e->emb.n != r->n || e->emb.dim == 0) {
            s_msgf(msg, "%s: reply %s with %u rows to an embed request of %u inputs", ep,
                   com_proto_type_name(m->type), m->type == COM_PROTO_EMBED_REPLY ? e->emb.n : 0,
                   r->n);
            goto proto;
        }
        res->n = e->emb.n;
        res->dim = e->emb.dim;
        res->emb = malloc((size_t)e->emb.n * e->emb.dim * sizeof(float));
        res->ntok = malloc((size_t)e->emb.n * sizeof(uint32_t));
        if (!res->emb || !res->ntok)
            goto nomem;
        com_proto_tensor_unpack(&e->emb, res->emb);
        memcpy(res->ntok, e->ntok, (size_t)e->emb.n * sizeof(uint32_t));
        emb_copy_str(res->model, sizeof res->model, e->model.ptr, e->model.len);
        s_copy_timing(res, &e->timing, e->usage.tokens);
    } else if (r->kind == EMB_KIND_TOKENIZE) {
        const com_proto_tokenize_reply_t *t = &m->u.tokenize_reply;
        if (m->type != COM_PROTO_TOKENIZE_REPLY || t->ids.n != r->n) {
            s_msgf(msg, "%s: reply %s to a tokenize request of %u inputs", ep,
                   com_proto_type_name(m->type), r->n);
            goto proto;
        }
        size_t total = (size_t)t->ids.offs[t->ids.n];
        res->n = t->ids.n;
        res->ids = malloc((total ? total : 1) * sizeof(int32_t));
        res->id_offs = malloc((res->n + 1) * sizeof(size_t));
        res->ntok = malloc(res->n * sizeof(uint32_t));
        if (!res->ids || !res->id_offs || !res->ntok)
            goto nomem;
        if (total)
            memcpy(res->ids, t->ids.ids, total * sizeof(int32_t));
        for (size_t i = 0; i <= res->n; i++)
            res->id_offs[i] = (size_t)t->ids.offs[i];
        for (size_t i = 0; i < res->n; i++)
            res->ntok[i] = (uint32_t)(res->id_offs[i + 1] - res->id_offs[i]);
        emb_copy_str(res->model, sizeof res->model, t->model.ptr, t->model.len);
        s_copy_timing(res, &t->timing, t->usage.tokens);
    } else {
        const com_proto_info_reply_t *i = &m->u.info_reply;
        if (m->type != COM_PROTO_INFO_REPLY) {
            s_msgf(msg, "%s: reply %s to an info request", ep, com_proto_type_name(m->type));
            goto proto;
        }
        res->info.healthy = i->ok ? 1 : 0;
        res->info.workers = i->workers;
        res->info.dim = i->dim;
        res->info.max_seq = i->max_seq;
        res->info.load_tokens = i->load_tokens;
        emb_copy_str(res->info.model, sizeof res->info.model, i->model.ptr, i->model.len);
        emb_copy_str(res->info.family, sizeof res->info.family, i->family.ptr, i->family.len);
        emb_copy_str(res->info.version, sizeof res->info.version, i->version.ptr, i->version.len);
        emb_copy_str(res->info.endpoint, sizeof res->info.endpoint, ep, strlen(ep));
        emb_copy_str(res->model, sizeof res->model, i->model.ptr, i->model.len);
        s_copy_timing(res, &i->timing, i->usage.tokens);
    }
    *out = res;
    return 0;
proto:
    ember_result_destroy(&res);
    return EMBER_EPROTOCOL;
nomem:
    ember_result_destroy(&res);
    s_msgf(msg, "out of memory for a reply");
    return EMBER_ENOMEM;
}

/* Handles one frame that arrived from broker bi. */
static void s_on_frame(ember_client_t *c, int bi, const void *data, size_t len, int64_t now) {
    com_proto_msg_t m;
    com_error_t e = {0};
    if (com_proto_decode(data, len, NULL, &m, &e) != 0) {
        c->stats.bad_replies++;
        return;
    }
    bool reply = m.type == COM_PROTO_EMBED_REPLY || m.type == COM_PROTO_TOKENIZE_REPLY ||
                 m.type == COM_PROTO_INFO_REPLY || m.type == COM_PROTO_ERROR ||
                 m.type == COM_PROTO_SCORE_REPLY;
    if (!reply) {
        c->stats.bad_replies++;
        com_proto_msg_free(&m);
        return;
    }
    s_broker_t *b = &c->brokers[bi];
    b->failures = 0;
    b->down_until_us = 0;
    s_req_t *r = s_req_find(c, m.id >> 8);
    if (!r || r->state == S_DONE) {
        c->stats.stale_replies++;
        com_proto_msg_free(&m);
        return;
    }
    uint32_t attempt = (uint32_t)(m.id & 0xff);
    bool current = r->attempts > 0 && attempt == ((r->attempts - 1) & 0xff) && r->state == S_SENT;
    char msg[S_MSG_MAX];
    if (m.type == COM_PROTO_ERROR) {
        if (!current) { /* an earlier attempt's failure: the current one is still running */
            c->stats.stale_replies++;
            com_proto_msg_free(&m);
            return;
        }
        c->stats.replies++;
        bool retryable;
        int st = s_status_for_code(m.u.error.code, &retryable);
        s_msgf(msg, "%s: %s: %.*s", b->endpoint, com_proto_code_name(m.u.error.code),
               (int)(m.u.error.msg.len > 400 ? 400 : m.u.error.msg.len),
               m.u.error.msg.ptr ? m.u.error.msg.ptr : "");
        if (retryable) {
            if (st != EMBER_EOVERLOADED)
                s_broker_penalise(c, bi, now);
            s_discover_maybe(c, now, st == EMBER_EUNAVAILABLE);
            s_req_retry(c, r, now, st, msg);
        } else {
            s_req_finish(c, r, st, NULL, msg);
        }
        com_proto_msg_free(&m);
        return;
    }
    c->stats.replies++;
    ember_result_t *res = NULL;
    int rc = s_build_result(c, r, &m, bi, &res, msg);
    com_proto_msg_free(&m);
    if (rc != 0) {
        s_req_finish(c, r, rc, NULL, msg);
        return;
    }
    res->tm.client_us = (uint64_t)(now - r->start_us);
    res->tm.attempts = r->attempts;
    s_req_finish(c, r, EMBER_OK, res, NULL);
}

/* Reads every message waiting on broker bi's socket. */
static void s_drain_broker(ember_client_t *c, int bi, int64_t now) {
    s_broker_t *b = &c->brokers[bi];
    for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, b->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            return;
        }
        if (zmq_msg_more(&msg)) { /* one frame per message: drop the rest of this one */
            c->stats.bad_replies++;
            do {
                zmq_msg_close(&msg);
                zmq_msg_init(&msg);
                if (zmq_msg_recv(&msg, b->sock, ZMQ_DONTWAIT) < 0)
                    break;
            } while (zmq_msg_more(&msg));
            zmq_msg_close(&msg);
            continue;
        }
        s_on_frame(c, bi, zmq_msg_data(&msg), zmq_msg_size(&msg), now);
        zmq_msg_close(&msg);
        if (!b->sock) /* closed by a discovery while handling the frame */
            return;
    }
}

/* Reads broker bi's monitor events: a lost connection fails over the attempts waiting on it. */
static void s_drain_monitor(ember_client_t *c, int bi, int64_t now) {
    s_broker_t *b = &c->brokers[bi];
    for (;;) {
        zmq_msg_t ev;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, b->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        uint16_t event = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&event, zmq_msg_data(&ev), sizeof event);
        while (zmq_msg_more(&ev)) { /* the endpoint frame */
            zmq_msg_close(&ev);
            zmq_msg_init(&ev);
            if (zmq_msg_recv(&ev, b->mon, ZMQ_DONTWAIT) < 0)
                break;
        }
        zmq_msg_close(&ev);
        if (event != ZMQ_EVENT_DISCONNECTED)
            continue;
        c->stats.disconnects++;
        s_broker_penalise(c, bi, now);
        char msg[S_MSG_MAX];
        s_msgf(msg, "connection to %s lost", b->endpoint);
        bool any = false;
        for (uint32_t s = 0; s < c->cap; s++) {
            s_req_t *r = c->slots[s];
            if (r && r->state == S_SENT && r->broker == bi) {
                s_req_retry(c, r, now, EMBER_EUNAVAILABLE, msg);
                any = true;
            }
        }
        if (any || c->reg)
            s_discover_maybe(c, now, true);
        if (!b->mon)
            return;
    }
}

/* ---- the pump ----------------------------------------------------------------------------- */

/* Deadlines and attempt timeouts, backoffs that ended, and sends of queued requests. Returns
 * the earliest future timer (INT64_MAX when none), and whether a request waits for a broker. */
static int64_t s_timers_and_dispatch(ember_client_t *c, int64_t now, bool *want_out) {
    int64_t next = INT64_MAX;
    bool failover = false;
    *want_out = false;
    for (uint32_t s = 0; s < c->cap; s++) {
        s_req_t *r = c->slots[s];
        if (!r || r->state == S_DONE)
            continue;
        if (now >= r->deadline_us) {
            int64_t waited_ms = (now - r->start_us) / 1000;
            char msg[S_MSG_MAX];
            if (r->state == S_SENT || !r->last_status) {
                c->stats.timeouts += r->state == S_SENT;
                s_msgf(msg, "no reply within %lld ms (%u attempts%s%s)", (long long)waited_ms,
                       r->attempts, r->last_status ? "; earlier: " : "",
                       r->last_status ? r->last_msg : "");
                s_req_finish(
                    c, r, r->state == S_SENT || r->attempts ? EMBER_ETIMEOUT : EMBER_EUNAVAILABLE,
                    NULL, msg);
            } else {
                s_msgf(msg, "%s (deadline of %lld ms passed, %u attempts)", r->last_msg,
                       (long long)waited_ms, r->attempts);
                s_req_finish(c, r, r->last_status, NULL, msg);
            }
            continue;
        }
        if (r->state == S_SENT && now >= r->attempt_deadline_us) {
            char msg[S_MSG_MAX];
            c->stats.timeouts++;
            s_msgf(msg, "no reply from %s within %d ms", c->brokers[r->broker].endpoint,
                   c->attempt_timeout_ms);
            s_broker_penalise(c, r->broker, now);
            s_req_retry(c, r, now, EMBER_ETIMEOUT, msg);
            failover = true;
            if (r->state == S_DONE)
                continue;
        }
        if (r->state == S_BACKOFF && now >= r->retry_at_us)
            r->state = S_QUEUED;
    }
    s_discover_maybe(c, now, failover);
    c->queued = false;
    for (uint32_t s = 0; s < c->cap; s++) {
        s_req_t *r = c->slots[s];
        if (!r || r->state == S_DONE)
            continue;
        /* once one request could not go out, the later ones wait too: a connection that
         * completes during this loop must not let them overtake it */
        if (r->state == S_QUEUED && !c->queued)
            s_req_send(c, r, now);
        if (r->state == S_QUEUED) {
            c->queued = true;
            *want_out = true;
            if (c->reg && s_brokers_listed(c) == 0)
                s_discover_maybe(c, now, true);
        }
        if (r->state == S_DONE)
            continue;
        if (r->deadline_us < next)
            next = r->deadline_us;
        if (r->state == S_SENT && r->attempt_deadline_us < next)
            next = r->attempt_deadline_us;
        if (r->state == S_BACKOFF && r->retry_at_us < next)
            next = r->retry_at_us;
    }
    if (c->reg && c->live > 0) {
        int64_t d = c->next_discovery_us;
        if (*want_out && s_brokers_listed(c) == 0 && c->last_discovery_us + S_FORCE_DISC_US < d)
            d = c->last_discovery_us + S_FORCE_DISC_US;
        if (d < next)
            next = d;
    }
    return next;
}

/* One round of progress; blocks in zmq_poll until something arrives, a timer is due, or
 * until_us. No blocking when until_us <= now or when what the caller waits for is done already:
 * target (NULL: any request) finished. */
static void s_step(ember_client_t *c, int64_t until_us, const s_req_t *target) {
    int64_t now = com_clock_mono_us();
    bool want_out = false;
    int64_t next = s_timers_and_dispatch(c, now, &want_out);
    int64_t wake = next < until_us ? next : until_us;
    long timeout_ms = 0;
    bool done = target ? target->state == S_DONE : c->done_head != NULL;
    if (!done && wake > now) {
        int64_t ms = (wake - now + 999) / 1000;
        timeout_ms = ms > S_POLL_CAP_MS ? S_POLL_CAP_MS : (long)ms;
    }
    zmq_pollitem_t items[2 * S_MAX_BROKERS];
    int owner[2 * S_MAX_BROKERS];
    int n = 0;
    for (size_t i = 0; i < c->n_brokers; i++) {
        s_broker_t *b = &c->brokers[i];
        if (!b->sock)
            continue;
        short ev = ZMQ_POLLIN;
        if (want_out && b->listed)
            ev |= ZMQ_POLLOUT;
        items[n] = (zmq_pollitem_t){.socket = b->sock, .events = ev};
        owner[n++] = (int)i;
        if (b->mon) {
            items[n] = (zmq_pollitem_t){.socket = b->mon, .events = ZMQ_POLLIN};
            owner[n++] = -1 - (int)i;
        }
    }
    if (n == 0) {
        if (timeout_ms > 0) {
            struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        return;
    }
    int rc = com_zmq_poll_spin(items, n, timeout_ms, c->spin_us);
    if (rc <= 0)
        return;
    now = com_clock_mono_us();
    for (int k = 0; k < n; k++) {
        if (!(items[k].revents & ZMQ_POLLIN))
            continue;
        int i = owner[k] >= 0 ? owner[k] : -1 - owner[k];
        if (owner[k] >= 0 && c->brokers[i].sock == items[k].socket)
            s_drain_broker(c, i, now);
        else if (owner[k] < 0 && c->brokers[i].mon == items[k].socket)
            s_drain_monitor(c, i, now);
    }
}

/* ---- submitting --------------------------------------------------------------------------- */

static int s_read_opts(ember_client_t *c, const ember_request_opts_t *in, ember_request_opts_t *o) {
    ember_request_opts_init(o);
    if (in) {
        if (in->struct_size < sizeof(uint32_t) || in->struct_size > 65536)
            return s_fail(c, EMBER_EINVAL,
                          "request options: struct_size %u (use ember_request_opts_init)",
                          in->struct_size);
        size_t k = in->struct_size < sizeof *o ? in->struct_size : sizeof *o;
        memcpy(o, in, k);
        o->struct_size = (uint32_t)sizeof *o;
    }
    if (o->normalize < -1 || o->normalize > 1)
        return s_fail(c, EMBER_EINVAL, "normalize must be -1, 0 or 1, not %d", o->normalize);
    if (o->dtype != EMBER_DTYPE_F32 && o->dtype != EMBER_DTYPE_F16)
        return s_fail(c, EMBER_EINVAL, "dtype must be EMBER_DTYPE_F32 or EMBER_DTYPE_F16");
    if (o->truncate != 0 && o->truncate != 1)
        return s_fail(c, EMBER_EINVAL, "truncate must be 0 or 1, not %d", o->truncate);
    if (o->timeout_ms < 0 || o->timeout_ms > S_MAX_TIMEOUT)
        return s_fail(c, EMBER_EINVAL, "timeout_ms %d out of [0, %d]", o->timeout_ms,
                      S_MAX_TIMEOUT);
    com_proto_limits_t lim;
    com_proto_limits_default(&lim);
    if (o->dimensions > lim.max_dim)
        return s_fail(c, EMBER_EINVAL, "dimensions %u over the limit %u", o->dimensions,
                      lim.max_dim);
    return 0;
}

static s_req_t *s_req_new(ember_client_t *c, emb_kind_t kind, const ember_request_opts_t *o) {
    s_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->kind = kind;
    r->opts = *o;
    r->broker = -1;
    r->state = S_QUEUED;
    r->start_us = com_clock_mono_us();
    int32_t t = o->timeout_ms > 0 ? o->timeout_ms : c->timeout_ms;
    r->deadline_us = r->start_us + s_ms_to_us(t);
    return r;
}

/* Registers r (taking ownership; freed on failure), tries its first send, returns its id. */
static int s_submit(ember_client_t *c, s_req_t *r, ember_req_t *req) {
    if (s_slot_take(c, r) != 0) {
        s_req_free(r);
        return s_fail(c, EMBER_ENOMEM, "out of memory (or too many requests in flight)");
    }
    c->stats.requests++;
    *req = s_req_id(r);
    if (!c->queued) /* else it waits for its turn in the next s_step */
        s_req_send(c, r, com_clock_mono_us());
    c->err[0] = '\0';
    return EMBER_OK;
}

/* What every submit checks first: arguments, options (into *o) and the input count against the
 * protocol limits (*lim). Zeroes *req. Returns 0 or a status with the client's message set. */
static int s_submit_checks(ember_client_t *c, const void *inputs, const size_t *lens, size_t n,
                           const ember_request_opts_t *opts, ember_req_t *req,
                           ember_request_opts_t *o, com_proto_limits_t *lim) {
    if (req)
        *req = 0;
    if (!c)
        return EMBER_EINVAL;
    if (!req || (n > 0 && (!inputs || !lens)))
        return s_fail(c, EMBER_EINVAL, "NULL argument");
    if (n == 0)
        return s_fail(c, EMBER_EINVAL, "no inputs (n == 0)");
    int rc = s_read_opts(c, opts, o);
    if (rc != 0)
        return rc;
    com_proto_limits_default(lim);
    if (n > lim->max_inputs)
        return s_fail(c, EMBER_ETOO_LARGE, "%zu inputs exceed the limit %u per request", n,
                      lim->max_inputs);
    return 0;
}

static int s_submit_texts(ember_client_t *c, emb_kind_t kind, const char *const *texts,
                          const size_t *lens, size_t n, const ember_request_opts_t *opts,
                          ember_req_t *req) {
    ember_request_opts_t o;
    com_proto_limits_t lim;
    int rc = s_submit_checks(c, texts, lens, n, opts, req, &o, &lim);
    if (rc != 0)
        return rc;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!texts[i] && lens[i] > 0)
            return s_fail(c, EMBER_EINVAL, "input %zu: NULL text of %zu bytes", i, lens[i]);
        if (lens[i] > lim.max_text_bytes)
            return s_fail(c, EMBER_ETOO_LARGE, "input %zu: %zu bytes exceed the limit %u", i,
                          lens[i], lim.max_text_bytes);
        total += lens[i];
    }
    if (total + 16 * n + 1024 > lim.max_msg_bytes)
        return s_fail(c, EMBER_ETOO_LARGE, "%zu bytes of text exceed the message limit %zu", total,
                      lim.max_msg_bytes);
    s_req_t *r = s_req_new(c, kind, &o);
    if (!r)
        return s_fail(c, EMBER_ENOMEM, "out of memory");
    r->in_kind = COM_PROTO_IN_TEXT;
    r->n = (uint32_t)n;
    r->text_buf = malloc(total ? total : 1);
    r->texts = malloc(n * sizeof *r->texts);
    if (!r->text_buf || !r->texts) {
        s_req_free(r);
        return s_fail(c, EMBER_ENOMEM, "out of memory");
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (lens[i])
            memcpy(r->text_buf + off, texts[i], lens[i]);
        r->texts[i] = (com_proto_str_t){r->text_buf + off, (uint32_t)lens[i]};
        off += lens[i];
    }
    return s_submit(c, r, req);
}

EMBER_API int ember_submit_embed(ember_client_t *client, const char *const *texts,
                                 const size_t *lens, size_t n, const ember_request_opts_t *opts,
                                 ember_req_t *req) {
    return s_submit_texts(client, EMB_KIND_EMBED, texts, lens, n, opts, req);
}

EMBER_API int ember_submit_tokenize(ember_client_t *client, const char *const *texts,
                                    const size_t *lens, size_t n, const ember_request_opts_t *opts,
                                    ember_req_t *req) {
    return s_submit_texts(client, EMB_KIND_TOKENIZE, texts, lens, n, opts, req);
}

EMBER_API int ember_submit_embed_tokens(ember_client_t *c, const int32_t *const *ids,
                                        const size_t *lens, size_t n,
                                        const ember_request_opts_t *opts, ember_req_t *req) {
    ember_request_opts_t o;
    com_proto_limits_t lim;
    int rc = s_submit_checks(c, ids, lens, n, opts, req, &o, &lim);
    if (rc != 0)
        return rc;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] == 0 || !ids[i])
            return s_fail(c, EMBER_EINVAL, "input %zu: empty token-id sequence", i);
        if (lens[i] > lim.max_tokens_per_input)
            return s_fail(c, EMBER_ETOO_LARGE, "input %zu: %zu ids exceed the limit %u", i, lens[i],
                          lim.max_tokens_per_input);
        for (size_t k = 0; k < lens[i]; k++)
            if (ids[i][k] < 0)
                return s_fail(c, EMBER_EINVAL, "input %zu: negative token id %d at %zu", i,
                              ids[i][k], k);
        total += lens[i];
        if (total > lim.max_total_tokens)
            return s_fail(c, EMBER_ETOO_LARGE, "more than %u token ids in one request",
                          lim.max_total_tokens);
    }
    s_req_t *r = s_req_new(c, EMB_KIND_EMBED, &o);
    if (!r)
        return s_fail(c, EMBER_ENOMEM, "out of memory");
    r->in_kind = COM_PROTO_IN_IDS;
    r->n = (uint32_t)n;
    r->ids = malloc(total * sizeof(int32_t));
    r->offs = malloc((n + 1) * sizeof(int32_t));
    if (!r->ids || !r->offs) {
        s_req_free(r);
        return s_fail(c, EMBER_ENOMEM, "out of memory");
    }
    size_t off = 0;
    r->offs[0] = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(r->ids + off, ids[i], lens[i] * sizeof(int32_t));
        off += lens[i];
        r->offs[i + 1] = (int32_t)off;
    }
    return s_submit(c, r, req);
}

/* ---- collecting --------------------------------------------------------------------------- */

/* Hands r's outcome to the caller and releases r. */
static int s_collect(ember_client_t *c, s_req_t *r, ember_result_t **out) {
    int st = r->status;
    if (st == EMBER_OK) {
        *out = r->result;
        r->result = NULL;
        c->err[0] = '\0';
    } else {
        *out = NULL;
        snprintf(c->err, sizeof c->err, "%s", r->msg[0] ? r->msg : ember_status_name(st));
    }
    s_req_release(c, r);
    return st;
}

static int64_t s_until(int32_t timeout_ms) {
    int64_t now = com_clock_mono_us();
    return timeout_ms < 0 ? INT64_MAX : now + s_ms_to_us(timeout_ms);
}

EMBER_API int ember_wait(ember_client_t *c, ember_req_t req, int32_t timeout_ms,
                         ember_result_t **out) {
    if (out)
        *out = NULL;
    if (!c)
        return EMBER_EINVAL;
    if (!out)
        return s_fail(c, EMBER_EINVAL, "NULL result pointer");
    s_req_t *r = s_req_find(c, req);
    if (!r)
        return s_fail(c, EMBER_EINVAL, "unknown request id %llu", (unsigned long long)req);
    int64_t until = s_until(timeout_ms);
    for (;;) {
        if (r->state == S_DONE)
            return s_collect(c, r, out);
        s_step(c, until, r);
        if (r->state == S_DONE)
            return s_collect(c, r, out);
        if (com_clock_mono_us() >= until) {
            c->err[0] = '\0';
            return EMBER_EAGAIN;
        }
    }
}

EMBER_API int ember_poll(ember_client_t *c, ember_req_t req, ember_result_t **out) {
    return ember_wait(c, req, 0, out);
}

EMBER_API int ember_wait_any(ember_client_t *c, int32_t timeout_ms, ember_req_t *req,
                             ember_result_t **out) {
    if (req)
        *req = 0;
    if (out)
        *out = NULL;
    if (!c)
        return EMBER_EINVAL;
    if (!req || !out)
        return s_fail(c, EMBER_EINVAL, "NULL argument");
    if (c->live == 0)
        return s_fail(c, EMBER_ENOT_FOUND, "no request in flight");
    int64_t until = s_until(timeout_ms);
    for (;;) {
        if (!c->done_head)
            s_step(c, until, NULL);
        if (c->done_head) {
            s_req_t *r = c->done_head;
            *req = s_req_id(r);
            return s_collect(c, r, out);
        }
        if (com_clock_mono_us() >= until) {
            c->err[0] = '\0';
            return EMBER_EAGAIN;
        }
    }
}

EMBER_API int ember_abandon(ember_client_t *c, ember_req_t req) {
    if (!c)
        return EMBER_EINVAL;
    s_req_t *r = s_req_find(c, req);
    if (!r)
        return s_fail(c, EMBER_EINVAL, "unknown request id %llu", (unsigned long long)req);
    s_req_release(c, r);
    c->err[0] = '\0';
    return EMBER_OK;
}

EMBER_API size_t ember_in_flight(const ember_client_t *c) {
    return c ? c->live : 0;
}

EMBER_API void ember_client_stats(const ember_client_t *c, ember_stats_t *stats) {
    if (!c || !stats)
        return;
    *stats = c->stats;
    size_t n = 0;
    for (size_t i = 0; i < c->n_brokers; i++)
        n += c->brokers[i].listed;
    stats->brokers = n;
}

EMBER_API const char *ember_client_last_error(const ember_client_t *c) {
    return c ? c->err : "no client";
}

/* ---- synchronous calls -------------------------------------------------------------------- */

EMBER_API int ember_embed(ember_client_t *c, const char *const *texts, const size_t *lens, size_t n,
                          const ember_request_opts_t *opts, ember_result_t **out) {
    if (out)
        *out = NULL;
    if (c && !out)
        return s_fail(c, EMBER_EINVAL, "NULL result pointer");
    ember_req_t req = 0;
    int rc = ember_submit_embed(c, texts, lens, n, opts, &req);
    return rc != EMBER_OK ? rc : ember_wait(c, req, -1, out);
}

EMBER_API int ember_embed_tokens(ember_client_t *c, const int32_t *const *ids, const size_t *lens,
                                 size_t n, const ember_request_opts_t *opts, ember_result_t **out) {
    if (out)
        *out = NULL;
    if (c && !out)
        return s_fail(c, EMBER_EINVAL, "NULL result pointer");
    ember_req_t req = 0;
    int rc = ember_submit_embed_tokens(c, ids, lens, n, opts, &req);
    return rc != EMBER_OK ? rc : ember_wait(c, req, -1, out);
}

EMBER_API int ember_tokenize(ember_client_t *c, const char *const *texts, const size_t *lens,
                             size_t n, const ember_request_opts_t *opts, ember_result_t **out) {
    if (out)
        *out = NULL;
    if (c && !out)
        return s_fail(c, EMBER_EINVAL, "NULL result pointer");
    ember_req_t req = 0;
    int rc = ember_submit_tokenize(c, texts, lens, n, opts, &req);
    return rc != EMBER_OK ? rc : ember_wait(c, req, -1, out);
}

EMBER_API int ember_info(ember_client_t *c, int32_t timeout_ms, ember_info_t *info) {
    if (info)
        memset(info, 0, sizeof *info);
    if (!c)
        return EMBER_EINVAL;
    if (!info)
        return s_fail(c, EMBER_EINVAL, "NULL info pointer");
    ember_request_opts_t o;
    ember_request_opts_init(&o);
    if (timeout_ms < 0 || timeout_ms > S_MAX_TIMEOUT)
        return s_fail(c, EMBER_EINVAL, "timeout_ms %d out of [0, %d]", timeout_ms, S_MAX_TIMEOUT);
    o.timeout_ms = timeout_ms;
    s_req_t *r = s_req_new(c, EMB_KIND_INFO, &o);
    if (!r)
        return s_fail(c, EMBER_ENOMEM, "out of memory");
    ember_req_t req;
    ember_result_t *res = NULL;
    int rc = s_submit(c, r, &req);
    if (rc == EMBER_OK)
        rc = ember_wait(c, req, -1, &res);
    if (rc == EMBER_OK) {
        *info = res->info;
        ember_result_destroy(&res);
    }
    return rc;
}

/* ---- life cycle --------------------------------------------------------------------------- */

static int s_read_client_opts(const ember_options_t *in, ember_options_t *o, char *errbuf,
                              size_t errlen) {
    ember_options_init(o);
    if (in->struct_size < sizeof(uint32_t) || in->struct_size > 65536) {
        s_errbuf(errbuf, errlen, "options: struct_size %u (use ember_options_init)",
                 in->struct_size);
        return EMBER_EINVAL;
    }
    size_t k = in->struct_size < sizeof *o ? in->struct_size : sizeof *o;
    memcpy(o, in, k);
    o->struct_size = (uint32_t)sizeof *o;
    struct {
        const char *name;
        int32_t v, lo, hi;
    } checks[] = {
        {"timeout_ms", o->timeout_ms, 1, S_MAX_TIMEOUT},
        {"attempt_timeout_ms", o->attempt_timeout_ms, 1, S_MAX_TIMEOUT},
        {"max_attempts", o->max_attempts, 1, 255},
        {"backoff_initial_ms", o->backoff_initial_ms, 1, 3600000},
        {"backoff_max_ms", o->backoff_max_ms, 1, 3600000},
        {"discovery_refresh_ms", o->discovery_refresh_ms, 100, 3600000},
        {"redis_timeout_ms", o->redis_timeout_ms, 1, 60000},
        {"spin_us", o->spin_us, 0, 100000},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].v < checks[i].lo || checks[i].v > checks[i].hi) {
            s_errbuf(errbuf, errlen, "options: %s = %d out of [%d, %d]", checks[i].name,
                     checks[i].v, checks[i].lo, checks[i].hi);
            return EMBER_EINVAL;
        }
    if (o->backoff_max_ms < o->backoff_initial_ms)
        o->backoff_max_ms = o->backoff_initial_ms;
    if (o->n_brokers > S_MAX_BROKERS) {
        s_errbuf(errbuf, errlen, "options: %zu brokers, at most %d", o->n_brokers, S_MAX_BROKERS);
        return EMBER_EINVAL;
    }
    if (o->n_brokers == 0 && (!o->redis_url || !o->redis_url[0])) {
        s_errbuf(errbuf, errlen, "options: no broker endpoint and no redis_url");
        return EMBER_EINVAL;
    }
    if (o->n_brokers > 0 && !o->brokers) {
        s_errbuf(errbuf, errlen, "options: brokers is NULL");
        return EMBER_EINVAL;
    }
    for (size_t i = 0; i < o->n_brokers; i++)
        if (!o->brokers[i] || !o->brokers[i][0]) {
            s_errbuf(errbuf, errlen, "options: broker %zu is empty", i);
            return EMBER_EINVAL;
        }
    return 0;
}

EMBER_API int ember_client_new(const ember_options_t *opts, ember_client_t **out, char *errbuf,
                               size_t errbuf_len) {
    if (errbuf && errbuf_len)
        errbuf[0] = '\0';
    if (!out) {
        s_errbuf(errbuf, errbuf_len, "NULL out pointer");
        return EMBER_EINVAL;
    }
    *out = NULL;
    if (!opts) {
        s_errbuf(errbuf, errbuf_len, "NULL options (use ember_options_init)");
        return EMBER_EINVAL;
    }
    ember_options_t o;
    int rc = s_read_client_opts(opts, &o, errbuf, errbuf_len);
    if (rc != 0)
        return rc;
    ember_client_t *c = calloc(1, sizeof *c);
    if (!c) {
        s_errbuf(errbuf, errbuf_len, "out of memory");
        return EMBER_ENOMEM;
    }
    c->timeout_ms = o.timeout_ms;
    c->attempt_timeout_ms = o.attempt_timeout_ms;
    c->max_attempts = o.max_attempts;
    c->backoff_initial_ms = o.backoff_initial_ms;
    c->backoff_max_ms = o.backoff_max_ms;
    c->discovery_refresh_ms = o.discovery_refresh_ms;
    c->spin_us = o.spin_us;
    com_prng_seed(&c->prng, (uint64_t)com_clock_mono_us() ^ (uint64_t)(uintptr_t)c ^
                                ((uint64_t)com_clock_wall_ms() << 20));
    c->gen = (uint32_t)com_prng_below(&c->prng, 1u << 20);
    rc = EMBER_ENOMEM;
    if (o.model && !(c->model = strdup(o.model))) {
        s_errbuf(errbuf, errbuf_len, "out of memory");
        goto err;
    }
    c->ctx = zmq_ctx_new();
    if (!c->ctx) {
        s_errbuf(errbuf, errbuf_len, "zmq_ctx_new: %s", zmq_strerror(zmq_errno()));
        rc = EMBER_EINTERNAL;
        goto err;
    }
    zmq_ctx_set(c->ctx, ZMQ_IO_THREADS, 1);
    for (size_t i = 0; i < o.n_brokers; i++) {
        int bi = s_broker_add(c, o.brokers[i]);
        if (bi < 0) {
            s_errbuf(errbuf, errbuf_len, "%s", c->err);
            rc = bi;
            goto err;
        }
        c->brokers[bi].listed = true;
    }
    if (o.n_brokers == 0) {
        com_registry_opts_t ro = {.timeout_ms = o.redis_timeout_ms, .reconnect_ms = 500};
        com_error_t e = {0};
        if (!(c->redis_url = strdup(o.redis_url))) {
            s_errbuf(errbuf, errbuf_len, "out of memory");
            goto err;
        }
        if (com_registry_new(o.redis_url, &ro, &c->reg, &e) != 0) {
            s_errbuf(errbuf, errbuf_len, "redis url '%s': %s", o.redis_url, e.msg);
            rc = e.code == COM_ENOMEM ? EMBER_ENOMEM : EMBER_EINVAL;
            goto err;
        }
        rc = s_discover(c, com_clock_mono_us());
        if (rc != EMBER_OK) {
            s_errbuf(errbuf, errbuf_len, "%s", c->err);
            goto err;
        }
    }
    c->err[0] = '\0';
    *out = c;
    return EMBER_OK;
err:
    ember_client_destroy(&c);
    return rc;
}

EMBER_API void ember_client_destroy(ember_client_t **client_p) {
    if (!client_p || !*client_p)
        return;
    ember_client_t *c = *client_p;
    for (uint32_t s = 0; s < c->cap; s++)
        s_req_free(c->slots[s]);
    free(c->slots);
    free(c->free_slots);
    for (size_t i = 0; i < c->n_brokers; i++) {
        s_broker_close(&c->brokers[i]);
        free(c->brokers[i].endpoint);
    }
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    com_registry_destroy(&c->reg);
    free(c->redis_url);
    free(c->model);
    free(c);
    *client_p = NULL;
}
