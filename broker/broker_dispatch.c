/* broker/broker_dispatch.c — workers and chunks: the worker table (ready, heartbeats, drain,
 * disconnect, loss after three silent heartbeat intervals), credit-based flow control, the FIFO
 * of chunks waiting for a credit, dispatch to the ready worker with a free credit and the
 * fewest outstanding tokens, re-dispatch on worker loss, lateness or a worker error, and
 * acceptance of results (first result for a chunk wins, later ones are dropped and counted).
 *
 * Credits: each dispatch occupies one of the worker's credits (an in-flight entry) until that
 * worker answers it or is lost, even when the chunk was meanwhile re-dispatched elsewhere: the
 * worker is still busy with it. A worker never gets a chunk while it holds
 * min(credits, BRK_MAX_CREDITS) entries.
 *
 * Re-entrancy: failing a request (after --max-attempts) removes its queued chunks from the
 * FIFO, so loops over the FIFO restart from its head after anything that may fail a request.
 * Main thread only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "common/clock.h"
#include "common/log.h"

/* ---- FIFO ---- */

void brk_fifo_push(brk_t *b, brk_chunk_t *ch, bool front) {
    ch->state = BRK_CHUNK_QUEUED;
    if (front) {
        ch->qprev = NULL;
        ch->qnext = b->q_head;
        if (b->q_head)
            b->q_head->qprev = ch;
        else
            b->q_tail = ch;
        b->q_head = ch;
    } else {
        ch->qnext = NULL;
        ch->qprev = b->q_tail;
        if (b->q_tail)
            b->q_tail->qnext = ch;
        else
            b->q_head = ch;
        b->q_tail = ch;
    }
    b->queued_tokens += ch->tokens;
}

void brk_fifo_remove(brk_t *b, brk_chunk_t *ch) {
    if (ch->qprev)
        ch->qprev->qnext = ch->qnext;
    else
        b->q_head = ch->qnext;
    if (ch->qnext)
        ch->qnext->qprev = ch->qprev;
    else
        b->q_tail = ch->qprev;
    ch->qprev = ch->qnext = NULL;
    ch->state = BRK_CHUNK_IDLE;
    b->queued_tokens -= ch->tokens;
}

/* ---- workers ---- */

static int s_find_worker(const brk_t *b, const uint8_t *ident, size_t len) {
    if (b->n_workers == 0)
        return -1;
    for (int i = 0; i < b->worker_hi; i++) {
        const brk_worker_t *w = &b->workers[i];
        if (w->used && w->ident_len == len && memcmp(w->ident, ident, len) == 0)
            return i;
    }
    return -1;
}

static bool s_usable(const brk_worker_t *w, int task) {
    return w->used && !w->draining && (task < 0 || (int)w->task == task);
}

uint32_t brk_workers_ready(const brk_t *b, int task) {
    uint32_t n = 0;
    for (int i = 0; i < b->worker_hi && b->n_workers; i++)
        n += s_usable(&b->workers[i], task);
    return n;
}

uint32_t brk_workers_min_mbt(const brk_t *b, int task) {
    uint32_t m = 0;
    for (int i = 0; i < b->worker_hi && b->n_workers; i++) {
        const brk_worker_t *w = &b->workers[i];
        if (s_usable(w, task) && (m == 0 || w->mbt < m))
            m = w->mbt;
    }
    return m;
}

static int s_send_notice(brk_t *b, const uint8_t *ident, size_t len, com_proto_type_t type,
                         const char *why) {
    com_proto_notice_t n = {0};
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    if (why) {
        n.reason.ptr = why;
        n.reason.len = (uint32_t)strlen(why);
    }
    int rc = type == COM_PROTO_DRAIN ? com_proto_encode_drain(++b->hb_seq, &n, &buf, &err)
                                     : com_proto_encode_disconnect(++b->hb_seq, &n, &buf, &err);
    if (rc != 0)
        return rc;
    return brk_net_send(b, b->backend, ident, len, &buf);
}

static int s_send_hb(brk_t *b, brk_worker_t *w) {
    com_proto_heartbeat_t hb = {0};
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    hb.load_tokens = b->queued_tokens + b->inflight_tokens;
    hb.load_seqs = 0;
    if (com_proto_encode_heartbeat(++b->hb_seq, &hb, &buf, &err) != 0)
        return COM_EINTERNAL;
    return brk_net_send(b, b->backend, w->ident, w->ident_len, &buf);
}

void brk_workers_notify(brk_t *b, com_proto_type_t type, const char *why) {
    for (int i = 0; i < b->worker_hi && b->n_workers; i++) {
        brk_worker_t *w = &b->workers[i];
        if (w->used)
            s_send_notice(b, w->ident, w->ident_len, type, why);
    }
}

/* Forgets worker wi and re-dispatches the chunks it held (without dispatching: the caller
 * runs brk_dispatch_run when it is safe). */
static void s_worker_lost(brk_t *b, int wi, const char *why) {
    brk_worker_t *w = &b->workers[wi];
    brk_inflight_t held[BRK_MAX_CREDITS];
    uint32_t n = w->n_inflight;
    memcpy(held, w->inflight, n * sizeof *held);
    COM_WARN("worker %s lost (%s); %u chunks in flight to re-dispatch", w->wid, why, n);
    b->inflight_tokens -= w->out_tokens;
    memset(w, 0, sizeof *w);
    b->n_workers--;
    while (b->worker_hi > 0 && !b->workers[b->worker_hi - 1].used)
        b->worker_hi--;
    b->c.workers_lost++;
    for (uint32_t k = 0; k < n; k++) {
        brk_req_t *r = brk_request_find(b, held[k].rid);
        if (!r || held[k].cid >= r->n_chunks)
            continue;
        brk_chunk_t *ch = &r->chunks[held[k].cid];
        if (ch->state == BRK_CHUNK_INFLIGHT && ch->worker == wi && ch->attempt == held[k].att)
            brk_chunk_redispatch(b, ch, why);
    }
}

void brk_chunk_redispatch(brk_t *b, brk_chunk_t *ch, const char *why) {
    brk_req_t *r = ch->req;
    ch->state = BRK_CHUNK_IDLE;
    ch->attempt++;
    if (ch->attempt >= (uint32_t)b->cfg.max_attempts) {
        brk_request_fail(b, r, COM_PROTO_UNAVAILABLE,
                         "chunk %u failed %u times (last: %s); giving up", ch->cid, ch->attempt,
                         why);
        return;
    }
    b->c.chunks_redispatched++;
    COM_INFO("request %llu chunk %u: re-dispatch as attempt %u (%s)", (unsigned long long)r->rid,
             ch->cid, ch->attempt, why);
    brk_fifo_push(b, ch, true);
}

/* Removes the in-flight entry (rid, cid, att) from w; returns whether it was there. */
static bool s_release_credit(brk_t *b, brk_worker_t *w, uint64_t rid, uint32_t cid, uint32_t att) {
    for (uint32_t k = 0; k < w->n_inflight; k++) {
        brk_inflight_t *e = &w->inflight[k];
        if (e->rid == rid && e->cid == cid && e->att == att) {
            w->out_tokens -= e->tokens;
            b->inflight_tokens -= e->tokens;
            *e = w->inflight[--w->n_inflight];
            return true;
        }
    }
    return false;
}

/* ---- dispatch ---- */

static uint32_t s_window(const brk_worker_t *w) {
    return w->credits < BRK_MAX_CREDITS ? w->credits : BRK_MAX_CREDITS;
}

static int s_task_of(const brk_chunk_t *ch) {
    return ch->req->type == COM_PROTO_SCORE ? COM_PROTO_TASK_SCORE : COM_PROTO_TASK_EMBED;
}

/* The worker for ch: usable for its task, a free credit, a batch large enough; fewest
 * outstanding tokens, and for a re-dispatch another worker than the last one when possible. */
static int s_pick(const brk_t *b, const brk_chunk_t *ch, const bool *blocked) {
    int task = s_task_of(ch);
    /* A chunk that a worker answered with an error avoids that worker whenever another worker
     * could take it, even one with no free credit right now: waiting for a credit beats burning
     * every attempt on one broken worker in a millisecond. A chunk that merely went late (or
     * whose worker was lost) only prefers another worker among those with a credit now: its
     * old worker may just be slow, and another may never free a credit. */
    int avoid = -1;
    if (ch->failed_on >= 0) {
        for (int i = 0; i < b->worker_hi && avoid < 0; i++) {
            const brk_worker_t *w = &b->workers[i];
            if (i != ch->failed_on && s_usable(w, task) && w->mbt >= ch->tokens)
                avoid = ch->failed_on;
        }
    }
    int best = -1;
    bool best_same = true;
    uint64_t best_tok = UINT64_MAX;
    for (int i = 0; i < b->worker_hi; i++) {
        const brk_worker_t *w = &b->workers[i];
        if (i == avoid || !s_usable(w, task) || blocked[i] || w->n_inflight >= s_window(w) ||
            w->mbt < ch->tokens)
            continue;
        bool same = ch->attempt > 0 && ch->worker == i;
        if (best < 0 || (best_same && !same) || (same == best_same && w->out_tokens < best_tok)) {
            best = i;
            best_same = same;
            best_tok = w->out_tokens;
        }
    }
    return best;
}

/* Encodes and sends ch to worker wi. 0: sent (ch INFLIGHT); -EHOSTUNREACH / -EAGAIN: not sent
 * (ch still queued); COM_EINTERNAL: encoding failed and the request was failed. */
static int s_send_chunk(brk_t *b, int wi, brk_chunk_t *ch) {
    brk_worker_t *w = &b->workers[wi];
    brk_req_t *r = ch->req;
    int64_t now = com_clock_mono_us();
    if (b->scratch_cap < (size_t)ch->nseq + 1) {
        size_t nc = (size_t)ch->nseq + 1;
        int32_t *p = realloc(b->scratch_offs, nc * sizeof *p);
        if (!p) {
            brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory");
            return COM_EINTERNAL;
        }
        b->scratch_offs = p;
        b->scratch_cap = nc;
    }
    int32_t base = r->offs[ch->first];
    for (uint32_t i = 0; i <= ch->nseq; i++)
        b->scratch_offs[i] = r->offs[ch->first + i] - base;
    com_proto_chunk_t c = {0};
    c.chunk_id = ch->cid;
    c.attempt = ch->attempt;
    c.in.kind = COM_PROTO_IN_IDS;
    c.in.n = ch->nseq;
    c.in.ids = r->ids + base;
    c.in.offs = b->scratch_offs;
    c.seg = r->seg ? r->seg + ch->first : NULL;
    c.normalize = r->normalize;
    c.dims = r->dims;
    c.dtype = r->dtype;
    int64_t left_ms = (r->deadline_us - now) / 1000;
    c.deadline_ms = left_ms < 1 ? 1 : (left_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)left_ms);
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    if (com_proto_encode_chunk(r->rid, &c, &buf, &err) != 0) {
        brk_request_fail(b, r, COM_PROTO_INTERNAL, "encoding chunk %u: %s", ch->cid, err.msg);
        return COM_EINTERNAL;
    }
    int rc = brk_net_send(b, b->backend, w->ident, w->ident_len, &buf);
    if (rc != 0)
        return rc;
    brk_fifo_remove(b, ch);
    ch->state = BRK_CHUNK_INFLIGHT;
    ch->worker = wi;
    brk_inflight_t *e = &w->inflight[w->n_inflight++];
    *e = (brk_inflight_t){r->rid, ch->cid, ch->attempt, ch->tokens, now, false};
    w->out_tokens += ch->tokens;
    b->inflight_tokens += ch->tokens;
    b->c.chunks_sent++;
    r->dispatched = true;
    COM_DEBUG("chunk %llu/%u att %u (%u seqs, %u tokens) -> %s", (unsigned long long)r->rid,
              ch->cid, ch->attempt, ch->nseq, ch->tokens, w->wid);
    return 0;
}

/* Whether some worker of each task has a free credit. */
static void s_avail(const brk_t *b, const bool *blocked, bool avail[2]) {
    avail[0] = avail[1] = false;
    for (int i = 0; i < b->worker_hi && b->n_workers; i++) {
        const brk_worker_t *w = &b->workers[i];
        if (w->used && !w->draining && !blocked[i] && w->n_inflight < s_window(w))
            avail[w->task == COM_PROTO_TASK_SCORE] = true;
    }
}

void brk_dispatch_run(brk_t *b) {
    bool blocked[BRK_MAX_WORKERS] = {0}; /* full queues (EAGAIN) in this round */
    bool avail[2];
    s_avail(b, blocked, avail);
    brk_chunk_t *ch = b->q_head;
    while (ch && (avail[0] || avail[1])) {
        int task = s_task_of(ch);
        int wi = avail[task] ? s_pick(b, ch, blocked) : -1;
        if (wi < 0) {
            ch = ch->qnext;
            continue;
        }
        brk_chunk_t *next = ch->qnext;
        int rc = s_send_chunk(b, wi, ch);
        if (rc == -EHOSTUNREACH)
            s_worker_lost(b, wi, "unroutable");
        else if (rc == -EAGAIN)
            blocked[wi] = true;
        s_avail(b, blocked, avail);
        /* sent: only ch left the queue, go on after it; not sent (full queue): try ch again
         * on another worker; a lost worker or a failed request may have changed the whole
         * queue: start over */
        if (rc == 0)
            ch = next;
        else if (rc != -EAGAIN)
            ch = b->q_head;
    }
#ifdef EMBER_DEBUG_CHECKS
    brk_check_invariants(b);
#endif
}

/* ---- worker messages ---- */

static bool s_eq(com_proto_str_t s, const char *c) {
    size_t n = strlen(c);
    return s.ptr && s.len == n && memcmp(s.ptr, c, n) == 0;
}

static void s_on_ready(brk_t *b, int wi, const uint8_t *ident, size_t len,
                       const com_proto_ready_t *rd, int64_t now) {
    char why[512];
    const char *bad = NULL;
    if (!s_eq(rd->model, b->model_name)) {
        snprintf(why, sizeof why, "model mismatch: the broker serves \"%s\", the worker \"%.*s\"",
                 b->model_name, (int)(rd->model.len > 200 ? 200 : rd->model.len),
                 rd->model.ptr ? rd->model.ptr : "");
        bad = why;
    } else if (rd->task == COM_PROTO_TASK_EMBED && rd->dim != (uint32_t)b->info.embedding_dim) {
        snprintf(why, sizeof why, "dimension mismatch: the model's width is %d, the worker's %u",
                 b->info.embedding_dim, rd->dim);
        bad = why;
    }
    if (bad) {
        b->c.model_mismatches++;
        /* At most one line a second: a misbehaving peer must not flood the log. */
        if (now - b->last_refusal_log_us >= 1000000) {
            b->last_refusal_log_us = now;
            COM_WARN("refusing worker %.*s: %s (%llu refusals so far)",
                     (int)(rd->worker_id.len > 100 ? 100 : rd->worker_id.len), rd->worker_id.ptr,
                     bad, (unsigned long long)b->c.model_mismatches);
        }
        if (wi >= 0) {
            s_worker_lost(b, wi, "model changed");
            brk_dispatch_run(b);
        }
        s_send_notice(b, ident, len, COM_PROTO_DISCONNECT, bad);
        return;
    }
    if (wi < 0) {
        for (int i = 0; i < BRK_MAX_WORKERS; i++) {
            if (!b->workers[i].used) {
                wi = i;
                break;
            }
        }
        if (wi < 0) {
            COM_WARN("worker table full (%d); refusing a worker", BRK_MAX_WORKERS);
            s_send_notice(b, ident, len, COM_PROTO_DISCONNECT, "broker full");
            return;
        }
        brk_worker_t *w = &b->workers[wi];
        memset(w, 0, sizeof *w);
        w->used = true;
        if (wi + 1 > b->worker_hi)
            b->worker_hi = wi + 1;
        memcpy(w->ident, ident, len);
        w->ident_len = len;
        b->n_workers++;
        b->c.workers_joined++;
    }
    brk_worker_t *w = &b->workers[wi];
    snprintf(w->wid, sizeof w->wid, "%.*s", (int)rd->worker_id.len, rd->worker_id.ptr);
    w->task = rd->task;
    w->mbt = rd->max_batch_tokens;
    w->credits = rd->credits < BRK_MAX_CREDITS ? rd->credits : BRK_MAX_CREDITS;
    w->draining = false;
    w->last_recv_us = now;
    COM_INFO("worker %s ready (%s, %u credits, max batch %u tokens)", w->wid,
             w->task == COM_PROTO_TASK_SCORE ? "score" : "embed", w->credits, w->mbt);
    if (s_send_hb(b, w) == -EHOSTUNREACH)
        s_worker_lost(b, wi, "unroutable");
    brk_dispatch_run(b);
}

static bool s_retryable(uint32_t code) {
    switch (code) {
    case COM_PROTO_BAD_REQUEST:
    case COM_PROTO_TOO_LARGE:
    case COM_PROTO_UNSUPPORTED_VERSION:
    case COM_PROTO_MODEL_MISMATCH:
    case COM_PROTO_INPUT_TOO_LONG:
    case COM_PROTO_UNSUPPORTED:
        return false;
    default:
        return true;
    }
}

static void s_on_result(brk_t *b, int wi, uint64_t rid, const com_proto_result_t *res) {
    brk_worker_t *w = &b->workers[wi];
    s_release_credit(b, w, rid, res->chunk_id, res->attempt);
    brk_req_t *r = brk_request_find(b, rid);
    if (!r || res->chunk_id >= r->n_chunks || r->chunks[res->chunk_id].state == BRK_CHUNK_DONE ||
        r->chunks[res->chunk_id].state == BRK_CHUNK_IDLE) {
        b->c.duplicates_dropped++;
        COM_DEBUG("dropping a late result %llu/%u att %u from %s", (unsigned long long)rid,
                  res->chunk_id, res->attempt, w->wid);
        return;
    }
    brk_chunk_t *ch = &r->chunks[res->chunk_id];
    bool current =
        ch->state == BRK_CHUNK_INFLIGHT && ch->worker == wi && ch->attempt == res->attempt;
    bool bad_shape = !res->failed && (res->emb.n != ch->nseq || res->emb.dim != r->out_dim);
    if (res->failed || bad_shape) {
        b->c.chunk_errors++;
        char why[300];
        if (bad_shape)
            snprintf(why, sizeof why, "worker %s sent a [%u, %u] tensor for [%u, %u]", w->wid,
                     res->emb.n, res->emb.dim, ch->nseq, r->out_dim);
        else
            snprintf(why, sizeof why, "worker %s: %s: %.*s", w->wid,
                     com_proto_code_name(res->err_code),
                     (int)(res->err_msg.len > 200 ? 200 : res->err_msg.len),
                     res->err_msg.ptr ? res->err_msg.ptr : "");
        COM_WARN("request %llu chunk %u: %s", (unsigned long long)rid, ch->cid, why);
        if (!current)
            return; /* an older attempt failed; the current one may still succeed */
        if (res->failed && !s_retryable(res->err_code)) {
            brk_request_fail(b, r, (com_proto_code_t)res->err_code, "%s", why);
        } else {
            ch->failed_on = wi;
            brk_chunk_redispatch(b, ch, why);
        }
        return;
    }
    if (ch->state == BRK_CHUNK_QUEUED)
        brk_fifo_remove(b, ch);
    b->c.chunks_done++;
    brk_request_chunk_done(b, ch, res); /* may answer and release r */
}

void brk_dispatch_on_frame(brk_t *b, const uint8_t *ident, size_t ident_len, zmq_msg_t *payload) {
    int64_t now = com_clock_mono_us();
    com_proto_msg_t m;
    com_error_t err = {0};
    int wi = s_find_worker(b, ident, ident_len);
    if (com_proto_decode(zmq_msg_data(payload), zmq_msg_size(payload), &b->limits, &m, &err) != 0) {
        b->c.bad_worker_msgs++;
        COM_DEBUG("bad worker message (dropped): %s", err.msg);
        return;
    }
    if (wi >= 0)
        b->workers[wi].last_recv_us = now;
    if (m.type == COM_PROTO_READY) {
        s_on_ready(b, wi, ident, ident_len, &m.u.ready, now);
        goto out;
    }
    if (wi < 0) {
        if (m.type == COM_PROTO_RESULT || m.type == COM_PROTO_HEARTBEAT ||
            m.type == COM_PROTO_DRAIN) {
            /* A worker this broker does not know (it restarted, or lost the worker): ask it to
             * send ready again. Its result, if any, is late by definition. */
            b->c.unknown_worker_msgs++;
            if (m.type == COM_PROTO_RESULT)
                b->c.duplicates_dropped++;
            s_send_notice(b, ident, ident_len, COM_PROTO_DISCONNECT, "unknown worker");
        } else if (m.type != COM_PROTO_DISCONNECT) {
            b->c.bad_worker_msgs++;
        }
        goto out;
    }
    brk_worker_t *w = &b->workers[wi];
    switch (m.type) {
    case COM_PROTO_RESULT:
        s_on_result(b, wi, m.id, &m.u.result);
        break;
    case COM_PROTO_HEARTBEAT:
        /* "cred" is an absolute window; 0 (or absent) leaves it unchanged: a worker that wants
         * no more work sends drain. */
        if (m.u.hb.credits > 0)
            w->credits = m.u.hb.credits < BRK_MAX_CREDITS ? m.u.hb.credits : BRK_MAX_CREDITS;
        break;
    case COM_PROTO_DRAIN:
        COM_INFO("worker %s draining", w->wid);
        w->draining = true;
        break;
    case COM_PROTO_DISCONNECT:
        s_worker_lost(b, wi, "disconnected");
        break;
    default:
        b->c.bad_worker_msgs++;
        COM_DEBUG("worker %s sent a \"%s\" (dropped)", w->wid, com_proto_type_name(m.type));
        break;
    }
    brk_dispatch_run(b);
out:
    com_proto_msg_free(&m);
}

/* ---- timers ---- */

void brk_dispatch_tick(brk_t *b, int64_t now_us, bool send_heartbeats) {
    int64_t lost_after = 3 * (int64_t)b->cfg.heartbeat_ms * 1000;
    int64_t late_after = (int64_t)b->cfg.chunk_timeout_ms * 1000;
    for (int i = 0; i < b->worker_hi && b->n_workers; i++) {
        brk_worker_t *w = &b->workers[i];
        if (!w->used)
            continue;
        if (now_us - w->last_recv_us > lost_after) {
            s_worker_lost(b, i, "missed 3 heartbeats");
            continue;
        }
        if (send_heartbeats && s_send_hb(b, w) == -EHOSTUNREACH) {
            s_worker_lost(b, i, "unroutable");
            continue;
        }
        for (uint32_t k = 0; k < w->n_inflight; k++) {
            brk_inflight_t *e = &w->inflight[k];
            if (e->late || now_us - e->sent_us <= late_after)
                continue;
            e->late = true;
            b->c.chunks_late++;
            brk_req_t *r = brk_request_find(b, e->rid);
            if (!r || e->cid >= r->n_chunks)
                continue;
            brk_chunk_t *ch = &r->chunks[e->cid];
            if (ch->state == BRK_CHUNK_INFLIGHT && ch->worker == i && ch->attempt == e->att)
                brk_chunk_redispatch(b, ch, "late");
        }
    }
    brk_dispatch_run(b);
}

/* ---- invariants ---- */

void brk_check_invariants(const brk_t *b) {
    uint64_t q = 0;
    for (const brk_chunk_t *ch = b->q_head; ch; ch = ch->qnext) {
        if (ch->state != BRK_CHUNK_QUEUED || (ch->qnext && ch->qnext->qprev != ch)) {
            COM_ERROR("invariant: FIFO chunk in state %d", (int)ch->state);
            abort();
        }
        q += ch->tokens;
    }
    uint64_t inflight = 0;
    for (int i = 0; i < BRK_MAX_WORKERS; i++) {
        if (b->workers[i].used && i >= b->worker_hi) {
            COM_ERROR("invariant: worker slot %d used above worker_hi %d", i, b->worker_hi);
            abort();
        }
        const brk_worker_t *w = &b->workers[i];
        if (!w->used)
            continue;
        uint64_t t = 0;
        for (uint32_t k = 0; k < w->n_inflight; k++)
            t += w->inflight[k].tokens;
        if (t != w->out_tokens || w->n_inflight > BRK_MAX_CREDITS) {
            COM_ERROR("invariant: worker %s tokens %llu != %llu", w->wid, (unsigned long long)t,
                      (unsigned long long)w->out_tokens);
            abort();
        }
        inflight += t;
    }
    if (q != b->queued_tokens || inflight != b->inflight_tokens) {
        COM_ERROR("invariant: queued %llu/%llu in flight %llu/%llu", (unsigned long long)q,
                  (unsigned long long)b->queued_tokens, (unsigned long long)inflight,
                  (unsigned long long)b->inflight_tokens);
        abort();
    }
    for (int32_t i = 0; i < b->cfg.max_requests; i++) {
        const brk_req_t *r = &b->reqs[i];
        if (r->state != BRK_REQ_RUNNING)
            continue;
        for (uint32_t c = 0; c < r->n_chunks; c++) {
            const brk_chunk_t *ch = &r->chunks[c];
            if (ch->state != BRK_CHUNK_INFLIGHT)
                continue;
            const brk_worker_t *w = ch->worker >= 0 ? &b->workers[ch->worker] : NULL;
            bool found = false;
            for (uint32_t k = 0; w && w->used && k < w->n_inflight; k++)
                found |= w->inflight[k].rid == r->rid && w->inflight[k].cid == c &&
                         w->inflight[k].att == ch->attempt;
            if (!found) {
                COM_ERROR("invariant: chunk %llu/%u in flight without a worker entry",
                          (unsigned long long)r->rid, c);
                abort();
            }
        }
    }
}
