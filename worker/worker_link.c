/* worker/worker_link.c — see worker_link.h: DEALER links to brokers (ready, heartbeats, loss,
 * drain, disconnect) and the Redis discovery thread.
 *
 * Invariants: an open slot has a socket and an endpoint; a closed slot (tombstone) has neither
 * and is never sent on, polled or ticked. An index names one broker for as long as anything
 * refers to it: a tombstone is reused only when the owner's busy callback says the index is
 * free, so chunks are answered on the link they came from or dropped, never on another
 * broker's. next_send_us is the time of an open link's next heartbeat (LIVE) or ready (HELLO,
 * LOST). One sequence number ("id") counts every ready/hb/drain/disconnect the worker sends.
 * Thread: links on the event-loop thread; discovery on its own thread, sharing only the
 * published endpoint list (under d->mu). */
#include "worker/worker_link.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/msgpack_read.h"
#include "common/registry.h"

enum { S_HELLO = 0, S_LIVE = 1, S_LOST = 2 };

#define S_LOST_INTERVALS 3
#define S_WARN_BAD_MAX   10 /* bad messages logged at warn level; the rest at debug */

typedef struct s_link {
    char *endpoint;  /* NULL: closed slot */
    void *sock;      /* NULL: closed slot */
    bool discovered; /* added by discovery: wrk_links_prune may close it */
    bool heard;      /* the broker was ever live on this link (gets disconnect when closed) */
    int state;
    int64_t last_recv_us; /* last decoded message (not counting disconnect); 0 = never */
    int64_t next_send_us;
} s_link_t;

struct wrk_links {
    void *zctx;
    char *worker_id, *model, *family, *device;
    uint32_t mbt, dim, max_seq, credits;
    int64_t hb_us;
    wrk_links_busy_fn busy;
    void *busy_arg;
    s_link_t *links;
    int32_t n, cap;
    uint64_t seq;
    wrk_links_load_t load; /* last load given to tick, for heartbeats */
    wrk_links_stats_t st;
    /* set by wrk_links_drain_all: every later ready (a re-hello, a broker that forgot us, a new
     * link) offers no credit and is followed by a drain notice, so no broker re-enlists us */
    bool draining;
    char drain_why[128];
};

static const char *s_state_name(int st) {
    return st == S_LIVE ? "live" : st == S_LOST ? "lost" : "hello";
}

static char *s_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static com_proto_str_t s_str(const char *s) {
    return (com_proto_str_t){.ptr = s, .len = (uint32_t)strlen(s)};
}

/* ------------------------------------------------------------------ create / destroy */

int wrk_links_new(void *zctx, const wrk_links_opts_t *o, wrk_links_t **out, com_error_t *err) {
    *out = NULL;
    if (!zctx || !o || !o->worker_id || !o->model || !o->family || !o->device ||
        o->heartbeat_ms <= 0)
        return com_error_set(err, COM_EINVAL, "links: missing options");
    wrk_links_t *l = calloc(1, sizeof *l);
    if (!l)
        return com_error_set(err, COM_ENOMEM, "links: out of memory");
    l->zctx = zctx;
    l->worker_id = s_strdup(o->worker_id);
    l->model = s_strdup(o->model);
    l->family = s_strdup(o->family);
    l->device = s_strdup(o->device);
    l->mbt = o->max_batch_tokens;
    l->dim = o->dim;
    l->max_seq = o->max_seq;
    l->credits = o->credits;
    l->load.credits = o->credits;
    l->hb_us = (int64_t)o->heartbeat_ms * 1000;
    l->busy = o->busy;
    l->busy_arg = o->busy_arg;
    if (!l->worker_id || !l->model || !l->family || !l->device) {
        wrk_links_destroy(&l, 0);
        return com_error_set(err, COM_ENOMEM, "links: out of memory");
    }
    *out = l;
    return 0;
}

void wrk_links_destroy(wrk_links_t **self_p, int linger_ms) {
    if (!self_p || !*self_p)
        return;
    wrk_links_t *l = *self_p;
    for (int32_t i = 0; i < l->n; i++) {
        if (l->links[i].sock) {
            zmq_setsockopt(l->links[i].sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
            zmq_close(l->links[i].sock);
        }
        free(l->links[i].endpoint);
    }
    free(l->links);
    free(l->worker_id);
    free(l->model);
    free(l->family);
    free(l->device);
    free(l);
    *self_p = NULL;
}

/* ------------------------------------------------------------------ sending */

int wrk_links_send(wrk_links_t *l, int32_t i, const void *data, size_t len) {
    if (i < 0 || i >= l->n)
        return COM_EINVAL; /* never a link: a caller's bug, not a broker that left */
    if (!l->links[i].sock) {
        l->st.orphan_dropped++;
        return COM_EBUSY;
    }
    if (zmq_send(l->links[i].sock, data, len, ZMQ_DONTWAIT) < 0) {
        l->st.send_dropped++;
        COM_DEBUG("link %s: send dropped: %s", l->links[i].endpoint, zmq_strerror(errno));
        return COM_EBUSY;
    }
    l->st.msgs_out++;
    return 0;
}

static void s_send_msg(wrk_links_t *l, int32_t i, const com_proto_msg_t *m) {
    com_proto_buf_t buf;
    com_error_t err;
    if (com_proto_encode(m, &buf, &err) != 0) {
        COM_ERROR("link %s: cannot encode %s: %s", l->links[i].endpoint,
                  com_proto_type_name(m->type), err.msg);
        return;
    }
    wrk_links_send(l, i, buf.data, buf.len);
    com_proto_buf_free(&buf);
}

static void s_send_notice(wrk_links_t *l, int32_t i, com_proto_type_t type, const char *why) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, type, ++l->seq);
    com_proto_notice_t *nt = type == COM_PROTO_DRAIN ? &m.u.drain : &m.u.disconnect;
    if (why && *why)
        nt->reason = s_str(why);
    s_send_msg(l, i, &m);
}

static void s_send_ready(wrk_links_t *l, int32_t i) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_READY, ++l->seq);
    m.u.ready.worker_id = s_str(l->worker_id);
    m.u.ready.model = s_str(l->model);
    m.u.ready.family = s_str(l->family);
    m.u.ready.device = s_str(l->device);
    m.u.ready.max_batch_tokens = l->mbt;
    m.u.ready.dim = l->dim;
    m.u.ready.max_seq = l->max_seq;
    m.u.ready.credits = l->draining ? 0 : l->credits;
    m.u.ready.task = COM_PROTO_TASK_EMBED;
    s_send_msg(l, i, &m);
    l->st.ready_out++;
    if (l->draining)
        s_send_notice(l, i, COM_PROTO_DRAIN, l->drain_why);
}

static void s_send_hb(wrk_links_t *l, int32_t i) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_HEARTBEAT, ++l->seq);
    m.u.hb.load_tokens = l->load.tokens;
    m.u.hb.load_seqs = l->load.seqs;
    m.u.hb.batches_done = l->load.batches_done;
    m.u.hb.credits = l->load.credits;
    s_send_msg(l, i, &m);
    l->st.hb_out++;
}

void wrk_links_drain_all(wrk_links_t *l, const char *why) {
    l->draining = true;
    snprintf(l->drain_why, sizeof l->drain_why, "%s", why ? why : "");
    for (int32_t i = 0; i < l->n; i++)
        if (l->links[i].sock)
            s_send_notice(l, i, COM_PROTO_DRAIN, why);
}

void wrk_links_disconnect_all(wrk_links_t *l, const char *why) {
    for (int32_t i = 0; i < l->n; i++)
        if (l->links[i].sock)
            s_send_notice(l, i, COM_PROTO_DISCONNECT, why);
}

/* ------------------------------------------------------------------ links */

/* A closed slot that nothing refers to any more, or -1. */
static int32_t s_free_slot(const wrk_links_t *l) {
    for (int32_t i = 0; i < l->n; i++)
        if (!l->links[i].sock && (!l->busy || !l->busy(l->busy_arg, i)))
            return i;
    return -1;
}

int wrk_links_add(wrk_links_t *l, const char *endpoint, bool discovered, int64_t now_us,
                  com_error_t *err) {
    const int32_t found = wrk_links_find(l, endpoint);
    if (found >= 0)
        return found;
    const int32_t reuse = s_free_slot(l);
    if (reuse < 0 && l->n == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 4;
        s_link_t *p = realloc(l->links, (size_t)cap * sizeof *p);
        if (!p)
            return com_error_set(err, COM_ENOMEM, "links: out of memory");
        l->links = p;
        l->cap = cap;
    }
    s_link_t k = {0};
    k.endpoint = s_strdup(endpoint);
    k.sock = zmq_socket(l->zctx, ZMQ_DEALER);
    if (!k.endpoint || !k.sock) {
        free(k.endpoint);
        if (k.sock)
            zmq_close(k.sock);
        return com_error_set(err, COM_ENOMEM, "links: cannot create a socket for %s", endpoint);
    }
    const int64_t maxmsg = 64 << 20; /* the decoder's default max_msg_bytes */
    const int zero = 0;
    zmq_setsockopt(k.sock, ZMQ_ROUTING_ID, l->worker_id, strlen(l->worker_id));
    zmq_setsockopt(k.sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(k.sock, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_connect(k.sock, endpoint) != 0) {
        int e = errno;
        zmq_close(k.sock);
        free(k.endpoint);
        return com_error_set(err, COM_EINVAL, "cannot connect to broker \"%s\": %s", endpoint,
                             zmq_strerror(e));
    }
    k.state = S_HELLO;
    k.discovered = discovered;
    k.next_send_us = now_us + l->hb_us;
    int32_t i = reuse >= 0 ? reuse : l->n++;
    l->links[i] = k;
    COM_INFO("link %s: connecting as %s (slot %d%s)", endpoint, l->worker_id, (int)i,
             reuse >= 0 ? ", reused" : "");
    s_send_ready(l, i);
    return i;
}

/* Sends disconnect when the broker ever heard us, closes the socket (lingering linger_ms so the
 * notice can leave), leaves a tombstone. */
static void s_close(wrk_links_t *l, int32_t i, const char *why, int linger_ms) {
    s_link_t *k = &l->links[i];
    const int held = l->busy && l->busy(l->busy_arg, i);
    COM_INFO("link %s: closing (%s)%s%s", k->endpoint, why, k->heard ? ", disconnect sent" : "",
             held ? ", results of chunks held for it will be dropped" : "");
    if (k->heard)
        s_send_notice(l, i, COM_PROTO_DISCONNECT, why);
    zmq_setsockopt(k->sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    zmq_close(k->sock);
    free(k->endpoint);
    memset(k, 0, sizeof *k);
    l->st.links_closed++;
}

int wrk_links_prune(wrk_links_t *l, const wrk_broker_ep_t *keep, size_t n_keep, const char *why,
                    int linger_ms) {
    int closed = 0;
    for (int32_t i = 0; i < l->n; i++) {
        const s_link_t *k = &l->links[i];
        if (!k->sock || !k->discovered)
            continue;
        bool listed = false;
        for (size_t j = 0; j < n_keep && !listed; j++)
            listed = strcmp(keep[j].endpoint, k->endpoint) == 0;
        if (!listed) {
            s_close(l, i, why, linger_ms);
            closed++;
        }
    }
    return closed;
}

int32_t wrk_links_find(const wrk_links_t *l, const char *endpoint) {
    for (int32_t i = 0; i < l->n; i++)
        if (l->links[i].endpoint && strcmp(l->links[i].endpoint, endpoint) == 0)
            return i;
    return -1;
}

int32_t wrk_links_count(const wrk_links_t *l) {
    return l->n;
}

int32_t wrk_links_open_count(const wrk_links_t *l) {
    int32_t n = 0;
    for (int32_t i = 0; i < l->n; i++)
        n += l->links[i].sock != NULL;
    return n;
}

bool wrk_links_is_open(const wrk_links_t *l, int32_t i) {
    return i >= 0 && i < l->n && l->links[i].sock != NULL;
}

void *wrk_links_socket(const wrk_links_t *l, int32_t i) {
    return wrk_links_is_open(l, i) ? l->links[i].sock : NULL;
}

void wrk_links_endpoints(const wrk_links_t *l, char *buf, size_t cap) {
    if (cap == 0)
        return;
    buf[0] = '\0';
    size_t used = 0;
    for (int32_t i = 0; i < l->n && used + 1 < cap; i++) {
        if (!l->links[i].endpoint)
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s", used ? "," : "", l->links[i].endpoint);
        if (w < 0)
            break;
        used += (size_t)w;
        if (used >= cap) {
            buf[cap - 1] = '\0';
            break;
        }
    }
}

void wrk_links_stats(const wrk_links_t *l, wrk_links_stats_t *out) {
    *out = l->st;
}

/* ------------------------------------------------------------------ receiving */

/* Reads "cid" and "att" from a chunk that failed to decode, so the failure can be answered.
 * Returns 1 when both were found as u32 values in a well-formed top-level map. */
static int s_peek_address(const void *buf, size_t len, uint32_t *cid, uint32_t *att) {
    if (com_mpr_check(buf, len, COM_MPR_DEPTH_CAP, NULL) != 0)
        return 0;
    com_mpr_t r;
    com_mpr_obj_t top, k, v;
    com_mpr_init(&r, buf, len);
    if (com_mpr_next(&r, &top, NULL) != 0 || top.kind != COM_MPR_MAP)
        return 0;
    int have = 0;
    for (uint32_t i = 0; i < top.len; i++) {
        com_mpr_t key_at = r;
        if (com_mpr_next(&r, &k, NULL) != 0)
            return 0;
        if (k.kind == COM_MPR_ARRAY || k.kind == COM_MPR_MAP) {
            /* a container key (allowed for unknown keys): step over it, then its value */
            r = key_at;
            if (com_mpr_skip(&r, COM_MPR_DEPTH_CAP, NULL) != 0 ||
                com_mpr_skip(&r, COM_MPR_DEPTH_CAP, NULL) != 0)
                return 0;
            continue;
        }
        const bool is_cid = k.kind == COM_MPR_STR && k.len == 3 && memcmp(k.ptr, "cid", 3) == 0;
        const bool is_att = k.kind == COM_MPR_STR && k.len == 3 && memcmp(k.ptr, "att", 3) == 0;
        if (is_cid || is_att) {
            com_mpr_t save = r;
            if (com_mpr_next(&r, &v, NULL) != 0)
                return 0;
            if (v.kind == COM_MPR_UINT && v.v.u <= UINT32_MAX) {
                if (is_cid) {
                    *cid = (uint32_t)v.v.u;
                    have |= 1;
                } else {
                    *att = (uint32_t)v.v.u;
                    have |= 2;
                }
                continue;
            }
            r = save;
        }
        if (com_mpr_skip(&r, COM_MPR_DEPTH_CAP, NULL) != 0)
            return 0;
    }
    return have == 3;
}

static void s_mark_alive(wrk_links_t *l, int32_t i, int64_t now_us) {
    s_link_t *k = &l->links[i];
    k->last_recv_us = now_us;
    k->heard = true;
    if (k->state != S_LIVE) {
        COM_INFO("link %s: broker %s -> live", k->endpoint, s_state_name(k->state));
        k->state = S_LIVE;
        k->next_send_us = now_us + l->hb_us;
    }
}

static bool s_contains(com_proto_str_t s, const char *needle) {
    size_t n = strlen(needle);
    if (!s.ptr || s.len < n)
        return false;
    for (uint32_t i = 0; i + n <= s.len; i++)
        if (memcmp(s.ptr + i, needle, n) == 0)
            return true;
    return false;
}

static void s_handle(wrk_links_t *l, int32_t i, const uint8_t *data, size_t len, int64_t now_us,
                     wrk_links_chunk_fn on_chunk, void *arg) {
    s_link_t *k = &l->links[i];
    com_proto_msg_t m;
    com_error_t derr = {0};
    int rc = com_proto_decode(data, len, NULL, &m, &derr);
    if (rc != 0) {
        l->st.bad_msgs++;
        uint32_t cid = 0, att = 0;
        const bool addressable =
            m.type == COM_PROTO_CHUNK && m.has_id && s_peek_address(data, len, &cid, &att);
        COM_LOG(l->st.bad_msgs <= S_WARN_BAD_MAX ? COM_LOG_WARN : COM_LOG_DEBUG,
                "link %s: bad message (%zu bytes)%s: %s", k->endpoint, len,
                addressable ? ", answered" : ", dropped", derr.msg);
        if (addressable) {
            wrk_link_chunk_t ch = {.link = i,
                                   .id = m.id,
                                   .chunk = NULL,
                                   .cid = cid,
                                   .att = att,
                                   .code = m.perr ? m.perr : COM_PROTO_BAD_REQUEST,
                                   .why = derr.msg};
            on_chunk(arg, &ch);
        }
        com_proto_msg_free(&m);
        return;
    }
    switch (m.type) {
    case COM_PROTO_CHUNK: {
        s_mark_alive(l, i, now_us);
        wrk_link_chunk_t ch = {.link = i,
                               .id = m.id,
                               .chunk = &m.u.chunk,
                               .cid = m.u.chunk.chunk_id,
                               .att = m.u.chunk.attempt,
                               .code = COM_PROTO_OK,
                               .why = NULL};
        on_chunk(arg, &ch);
        break;
    }
    case COM_PROTO_HEARTBEAT:
        l->st.hb_in++;
        s_mark_alive(l, i, now_us);
        break;
    case COM_PROTO_DRAIN:
        l->st.drains_in++;
        s_mark_alive(l, i, now_us);
        COM_INFO("link %s: broker drains (%.*s)", k->endpoint, (int)m.u.drain.reason.len,
                 m.u.drain.reason.ptr ? m.u.drain.reason.ptr : "");
        break;
    case COM_PROTO_DISCONNECT: {
        l->st.disconnects_in++;
        const com_proto_str_t why = m.u.disconnect.reason;
        const bool unknown = s_contains(why, "unknown worker");
        COM_LOG(unknown ? COM_LOG_INFO : COM_LOG_WARN, "link %s: broker says disconnect (%.*s)%s",
                k->endpoint, (int)why.len, why.ptr ? why.ptr : "",
                unknown ? ": sending ready" : "");
        k->state = S_HELLO;
        k->last_recv_us = now_us;
        if (unknown) {
            s_send_ready(l, i);
            k->next_send_us = now_us + l->hb_us;
        }
        break;
    }
    default:
        l->st.unexpected++;
        s_mark_alive(l, i, now_us);
        COM_DEBUG("link %s: unexpected %s from the broker, ignored", k->endpoint,
                  com_proto_type_name(m.type));
        break;
    }
    com_proto_msg_free(&m);
}

int wrk_links_recv(wrk_links_t *l, int32_t i, int64_t now_us, int max_msgs,
                   wrk_links_chunk_fn on_chunk, void *arg) {
    void *sock = wrk_links_socket(l, i);
    if (!sock)
        return 0;
    int got = 0;
    while (got < max_msgs) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        got++;
        l->st.msgs_in++;
        bool bad = zmq_msg_more(&msg) != 0;
        if (bad) {
            /* multipart: drop every part */
            zmq_msg_t part;
            int more = 1;
            while (more) {
                zmq_msg_init(&part);
                if (zmq_msg_recv(&part, sock, ZMQ_DONTWAIT) < 0) {
                    zmq_msg_close(&part);
                    break;
                }
                more = zmq_msg_more(&part);
                zmq_msg_close(&part);
            }
        }
        if (bad || zmq_msg_size(&msg) == 0) {
            l->st.bad_frames++;
            COM_LOG(l->st.bad_frames <= S_WARN_BAD_MAX ? COM_LOG_WARN : COM_LOG_DEBUG,
                    "link %s: %s message dropped", l->links[i].endpoint,
                    bad ? "multipart" : "empty");
        } else {
            s_handle(l, i, zmq_msg_data(&msg), zmq_msg_size(&msg), now_us, on_chunk, arg);
        }
        zmq_msg_close(&msg);
    }
    return got;
}

/* ------------------------------------------------------------------ timers */

int64_t wrk_links_tick(wrk_links_t *l, int64_t now_us, const wrk_links_load_t *load) {
    if (load)
        l->load = *load;
    int64_t next = now_us + l->hb_us;
    for (int32_t i = 0; i < l->n; i++) {
        s_link_t *k = &l->links[i];
        if (!k->sock)
            continue;
        if (k->state == S_LIVE && now_us - k->last_recv_us >= S_LOST_INTERVALS * l->hb_us) {
            l->st.brokers_lost++;
            COM_WARN("link %s: broker silent for %lld ms: lost, sending ready", k->endpoint,
                     (long long)((now_us - k->last_recv_us) / 1000));
            k->state = S_LOST;
            k->next_send_us = now_us; /* ready at once */
        }
        if (now_us >= k->next_send_us) {
            if (k->state == S_LIVE)
                s_send_hb(l, i);
            else
                s_send_ready(l, i);
            k->next_send_us += l->hb_us;
            if (k->next_send_us <= now_us)
                k->next_send_us = now_us + l->hb_us;
        }
        if (k->next_send_us < next)
            next = k->next_send_us;
        if (k->state == S_LIVE) {
            int64_t lost_at = k->last_recv_us + S_LOST_INTERVALS * l->hb_us;
            if (lost_at < next)
                next = lost_at;
        }
    }
    return next;
}

/* ------------------------------------------------------------------ discovery */

struct wrk_discovery {
    com_registry_t *reg; /* the discovery thread's */
    int32_t interval_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    wrk_broker_ep_t *eps; /* published list, sorted by endpoint, under mu */
    size_t n_eps;
    uint64_t gen; /* bumped when eps changes, under mu */
};

void wrk_discovery_list_free(wrk_broker_ep_t *v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        free(v[i].endpoint);
    free(v);
}

/* A broker may advertise a wildcard bind (tcp://STAR:5556 where STAR is '*', or
 * tcp://0.0.0.0:5556): connect to its host instead. */
static char *s_backend_endpoint(const com_broker_record_t *b) {
    const char *ep = b->backend;
    const char *wild[] = {"tcp://*:", "tcp://0.0.0.0:"};
    for (size_t w = 0; w < 2; w++) {
        size_t n = strlen(wild[w]);
        if (strncmp(ep, wild[w], n) == 0 && b->host[0]) {
            size_t len = strlen("tcp://") + strlen(b->host) + 1 + strlen(ep + n) + 1;
            char *p = malloc(len);
            if (p)
                snprintf(p, len, "tcp://%s:%s", b->host, ep + n);
            return p;
        }
    }
    return s_strdup(ep);
}

static int s_cmp_ep(const void *a, const void *b) {
    const wrk_broker_ep_t *x = a, *y = b;
    int c = strcmp(x->endpoint, y->endpoint);
    return c ? c : (int)x->draining - (int)y->draining;
}

/* One read. Publishes only a complete list: a Redis error or an allocation failure publishes
 * nothing (the links would otherwise take a missing broker for one that left). */
static void s_discover_once(wrk_discovery_t *d) {
    com_broker_record_t *recs = NULL;
    size_t n = 0;
    com_error_t err = {0};
    if (com_registry_list_brokers(d->reg, &recs, &n, &err) != 0) {
        COM_DEBUG("discovery: %s", err.msg);
        return;
    }
    wrk_broker_ep_t *eps = calloc(n ? n : 1, sizeof *eps);
    size_t m = 0;
    bool oom = !eps;
    for (size_t i = 0; !oom && i < n; i++) {
        if (!recs[i].backend[0])
            continue;
        char *ep = s_backend_endpoint(&recs[i]);
        if (!ep) {
            oom = true;
            break;
        }
        eps[m].endpoint = ep;
        eps[m++].draining = strcmp(recs[i].state, "draining") == 0;
    }
    free(recs);
    if (oom) {
        COM_DEBUG("discovery: out of memory, list not published");
        wrk_discovery_list_free(eps, m);
        return;
    }
    qsort(eps, m, sizeof *eps, s_cmp_ep);
    pthread_mutex_lock(&d->mu);
    bool same = m == d->n_eps;
    for (size_t i = 0; same && i < m; i++)
        same = strcmp(eps[i].endpoint, d->eps[i].endpoint) == 0 &&
               eps[i].draining == d->eps[i].draining;
    if (!same) {
        wrk_discovery_list_free(d->eps, d->n_eps);
        d->eps = eps;
        d->n_eps = m;
        d->gen++;
        eps = NULL;
    }
    pthread_mutex_unlock(&d->mu);
    if (eps)
        wrk_discovery_list_free(eps, m);
}

static void *s_discovery_main(void *arg) {
    wrk_discovery_t *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        pthread_mutex_unlock(&d->mu);
        s_discover_once(d);
        pthread_mutex_lock(&d->mu);
        struct timespec ts = com_clock_deadline_ms(d->interval_ms); /* d->cv is monotonic */
        while (!d->stop && pthread_cond_timedwait(&d->cv, &d->mu, &ts) != ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int wrk_discovery_start(const char *redis_url, int32_t interval_ms, wrk_discovery_t **out,
                        com_error_t *err) {
    *out = NULL;
    if (interval_ms <= 0)
        return com_error_set(err, COM_EINVAL, "discovery: interval %d ms", (int)interval_ms);
    wrk_discovery_t *d = calloc(1, sizeof *d);
    if (!d)
        return com_error_set(err, COM_ENOMEM, "discovery: out of memory");
    d->interval_ms = interval_ms;
    pthread_mutex_init(&d->mu, NULL);
    if (com_clock_cond_init(&d->cv) != 0) {
        pthread_mutex_destroy(&d->mu);
        free(d);
        return com_error_set(err, COM_ENOMEM, "discovery: cannot make a condvar");
    }
    int rc = com_registry_new(redis_url, NULL, &d->reg, err);
    if (rc == 0 && pthread_create(&d->thread, NULL, s_discovery_main, d) != 0)
        rc = com_error_set(err, COM_EINTERNAL, "discovery: cannot start a thread");
    if (rc != 0) {
        com_registry_destroy(&d->reg);
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void wrk_discovery_stop(wrk_discovery_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_discovery_t *d = *self_p;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    com_registry_destroy(&d->reg);
    wrk_discovery_list_free(d->eps, d->n_eps);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
    *self_p = NULL;
}

int wrk_discovery_take(wrk_discovery_t *d, uint64_t *gen, wrk_broker_ep_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&d->mu);
    int changed = d->gen != *gen;
    if (changed) {
        /* all or nothing: a partial copy would make the loop close links to listed brokers */
        wrk_broker_ep_t *v = calloc(d->n_eps ? d->n_eps : 1, sizeof *v);
        size_t m = 0;
        for (; v && m < d->n_eps; m++) {
            v[m].endpoint = s_strdup(d->eps[m].endpoint);
            v[m].draining = d->eps[m].draining;
            if (!v[m].endpoint)
                break;
        }
        if (v && m == d->n_eps) {
            *out = v;
            *n = m;
            *gen = d->gen;
        } else {
            wrk_discovery_list_free(v, m);
            changed = 0;
        }
    }
    pthread_mutex_unlock(&d->mu);
    return changed;
}
