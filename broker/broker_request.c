/* broker/broker_request.c — client requests: the request table, admission (decode, limits,
 * model, overload, drain), tokenization hand-off, chunk planning, reassembly of results in input
 * order, deadlines and the replies (embed_reply, score_reply, tokenize_reply, info_reply,
 * error).
 *
 * Table: cfg.max_requests fixed slots and a free list; a request's broker id (rid, the "id" of
 * its chunks) is (generation << 32) | slot, so a stale rid never finds a reused slot. Client ids
 * are only echoed in replies (two clients may use the same id).
 *
 * Life of a request: FREE -> (TOKENIZING ->) RUNNING -> answered. Answering removes its queued
 * chunks from the FIFO; its chunks still in flight stay in their workers' credit accounting
 * and their results are dropped as duplicates. A request answered while tokenizer jobs are out
 * becomes a ZOMBIE (the jobs point into its buffers) and is released when the last job is back.
 *
 * Memory per request is bounded by the decoder limits: the frame (<= max_msg_bytes), token ids
 * (<= max_inputs x max_seq_length), the output (checked to fit one reply frame). Main thread. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "common/clock.h"
#include "common/log.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0.0.0"
#endif

#define S_NO_SLOT UINT32_MAX
/* Requests with at most this many bytes of text are tokenized on the main thread: for them the
 * round trip to a pool thread (two inproc hand-offs, two thread wake-ups: 30-90 us) costs more
 * than the tokenization itself (a few microseconds per short text). */
#define S_INLINE_TOKENIZE_BYTES 2048

/* ---- table ---- */

int brk_requests_init(brk_t *b, com_error_t *err) {
    uint32_t n = (uint32_t)b->cfg.max_requests;
    b->reqs = calloc(n, sizeof *b->reqs);
    if (!b->reqs)
        return com_error_set(err, COM_ENOMEM, "request table: out of memory");
    for (uint32_t i = 0; i < n; i++)
        b->reqs[i].next_free = i + 1 < n ? i + 1 : S_NO_SLOT;
    b->free_head = 0;
    b->active_requests = 0;
    return 0;
}

static brk_req_t *s_alloc(brk_t *b) {
    if (b->free_head == S_NO_SLOT)
        return NULL;
    uint32_t slot = b->free_head;
    brk_req_t *r = &b->reqs[slot];
    b->free_head = r->next_free;
    memset(r, 0, sizeof *r);
    zmq_msg_init(&r->raw);
    if (++b->rid_gen == 0)
        b->rid_gen = 1;
    r->rid = ((uint64_t)b->rid_gen << 32) | slot;
    r->state = BRK_REQ_RUNNING; /* provisional until admitted */
    r->next_free = S_NO_SLOT;
    if (slot + 1 > b->req_hi)
        b->req_hi = slot + 1;
    b->active_requests++;
    return r;
}

/* Frees what r owns (jobs included: only call when none is out, or when the pool is gone). */
static void s_free_contents(brk_req_t *r) {
    for (uint32_t i = 0; i < r->n_jobs; i++)
        brk_tok_job_destroy(&r->jobs[i]);
    free(r->jobs);
    if (r->own_ids) {
        free(r->ids);
        free(r->offs);
        free(r->seg);
    }
    free(r->chunks);
    free(r->out);
    com_proto_msg_free(&r->msg);
    zmq_msg_close(&r->raw);
}

static void s_release(brk_t *b, brk_req_t *r) {
    s_free_contents(r);
    uint32_t slot = (uint32_t)(r - b->reqs);
    memset(r, 0, sizeof *r);
    r->state = BRK_REQ_FREE;
    r->next_free = b->free_head;
    b->free_head = slot;
    b->active_requests--;
    while (b->req_hi > 0 && b->reqs[b->req_hi - 1].state == BRK_REQ_FREE)
        b->req_hi--;
}

void brk_requests_free(brk_t *b) {
    if (!b->reqs)
        return;
    for (int32_t i = 0; i < b->cfg.max_requests; i++) {
        brk_req_t *r = &b->reqs[i];
        if (r->state == BRK_REQ_FREE)
            continue;
        for (uint32_t c = 0; c < r->n_chunks; c++) {
            if (r->chunks[c].state == BRK_CHUNK_QUEUED)
                brk_fifo_remove(b, &r->chunks[c]);
        }
        s_release(b, r);
    }
    free(b->reqs);
    b->reqs = NULL;
}

brk_req_t *brk_request_find(brk_t *b, uint64_t rid) {
    uint64_t slot = rid & 0xffffffffu;
    if (slot >= (uint64_t)b->cfg.max_requests)
        return NULL;
    brk_req_t *r = &b->reqs[slot];
    if (r->rid != rid || (r->state != BRK_REQ_TOKENIZING && r->state != BRK_REQ_RUNNING))
        return NULL;
    return r;
}

/* After the reply: drops queued chunks, releases r or leaves it a zombie. */
static void s_finish(brk_t *b, brk_req_t *r) {
    for (uint32_t c = 0; c < r->n_chunks; c++) {
        if (r->chunks[c].state == BRK_CHUNK_QUEUED)
            brk_fifo_remove(b, &r->chunks[c]);
    }
    if (r->jobs_pending > 0)
        r->state = BRK_REQ_ZOMBIE;
    else
        s_release(b, r);
}

void brk_request_fail(brk_t *b, brk_req_t *r, com_proto_code_t code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (code == COM_PROTO_DEADLINE_EXCEEDED || code == COM_PROTO_NO_WORKERS ||
        code == COM_PROTO_UNAVAILABLE || code == COM_PROTO_INTERNAL)
        COM_INFO("request %llu (client id %llu): %s: %s", (unsigned long long)r->rid,
                 (unsigned long long)r->client_id, com_proto_code_name(code), msg);
    brk_net_reply_error(b, r->ident, r->ident_len, r->client_id, code, "%s", msg);
    s_finish(b, r);
}

/* ---- replies ---- */

static com_proto_str_t s_str(const char *s) {
    com_proto_str_t v = {s, (uint32_t)strlen(s)};
    return v;
}

static void s_timings(const brk_req_t *r, int64_t now, com_proto_timings_t *tm) {
    memset(tm, 0, sizeof *tm);
    uint64_t total = (uint64_t)(now - r->recv_us);
    uint64_t tok =
        r->tok_done_us > r->tok_start_us ? (uint64_t)(r->tok_done_us - r->tok_start_us) : 0;
    uint64_t comp = r->compute_us_max;
    tm->total_us = total;
    tm->tokenize_us = tok;
    tm->compute_us = comp;
    /* Everything else: waiting in the FIFO, transport, batching on the worker. */
    tm->queue_us = total > tok + comp ? total - tok - comp : 0;
}

/* Sends a success reply already encoded; counts it. */
static void s_send_ok(brk_t *b, brk_req_t *r, com_proto_buf_t *buf) {
    b->c.requests_ok++;
    brk_net_send(b, b->frontend, r->ident, r->ident_len, buf);
}

static void s_reply_tokenize(brk_t *b, brk_req_t *r) {
    com_proto_tokenize_reply_t rep = {0};
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    rep.model = s_str(b->model_name);
    rep.ids.kind = COM_PROTO_IN_IDS;
    rep.ids.n = r->n;
    rep.ids.ids = r->ids;
    rep.ids.offs = r->offs;
    rep.usage.tokens = r->total_tokens;
    s_timings(r, com_clock_mono_us(), &rep.timing);
    if (com_proto_encode_tokenize_reply(r->client_id, &rep, &buf, &err) != 0) {
        brk_request_fail(b, r, COM_PROTO_INTERNAL, "encoding the reply: %s", err.msg);
        return;
    }
    if (buf.len > b->limits.max_msg_bytes) {
        const size_t len = buf.len; /* the free below zeroes it */
        com_proto_buf_free(&buf);
        brk_request_fail(b, r, COM_PROTO_TOO_LARGE,
                         "the reply (%zu bytes) exceeds the message limit max_msg_bytes = %zu", len,
                         b->limits.max_msg_bytes);
        return;
    }
    s_send_ok(b, r, &buf);
    s_finish(b, r);
}

static void s_reply_result(brk_t *b, brk_req_t *r) {
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    uint32_t *ntok = malloc((size_t)r->n * sizeof *ntok);
    if (!ntok) {
        brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < r->n; i++)
        ntok[i] = (uint32_t)(r->offs[i + 1] - r->offs[i]);
    com_proto_timings_t tm;
    s_timings(r, com_clock_mono_us(), &tm);
    int rc;
    if (r->type == COM_PROTO_SCORE) {
        com_proto_score_reply_t rep = {0};
        rep.model = s_str(b->model_name);
        rep.scores = (com_proto_tensor_t){r->dtype, r->n, 1, r->out, r->out_bytes};
        rep.ntok = ntok;
        rep.usage.tokens = r->total_tokens;
        rep.timing = tm;
        rc = com_proto_encode_score_reply(r->client_id, &rep, &buf, &err);
    } else {
        com_proto_embed_reply_t rep = {0};
        rep.model = s_str(b->model_name);
        rep.emb = (com_proto_tensor_t){r->dtype, r->n, r->out_dim, r->out, r->out_bytes};
        rep.ntok = ntok;
        rep.usage.tokens = r->total_tokens;
        rep.timing = tm;
        rc = com_proto_encode_embed_reply(r->client_id, &rep, &buf, &err);
    }
    free(ntok);
    if (rc != 0) {
        brk_request_fail(b, r, COM_PROTO_INTERNAL, "encoding the reply: %s", err.msg);
        return;
    }
    b->c.tokens_served += r->total_tokens;
    COM_DEBUG("request %llu done: %u inputs, %llu tokens, %u chunks, %llu us",
              (unsigned long long)r->rid, r->n, (unsigned long long)r->total_tokens, r->n_chunks,
              (unsigned long long)tm.total_us);
    s_send_ok(b, r, &buf);
    s_finish(b, r);
}

static void s_reply_info(brk_t *b, const uint8_t *ident, size_t ident_len, uint64_t id) {
    com_proto_info_reply_t rep = {0};
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    rep.workers = brk_workers_ready(b, -1);
    rep.ok = rep.workers > 0 && !b->draining;
    rep.model = s_str(b->model_name);
    rep.family = s_str(b->info.model_type);
    rep.version = s_str(EMBER_VERSION);
    rep.dim = (uint32_t)b->info.embedding_dim;
    rep.max_seq = (uint32_t)b->info.max_seq_length;
    rep.load_tokens = b->queued_tokens + b->inflight_tokens;
    if (com_proto_encode_info_reply(id, &rep, &buf, &err) != 0) {
        brk_net_reply_error(b, ident, ident_len, id, COM_PROTO_INTERNAL, "encoding: %s", err.msg);
        return;
    }
    b->c.requests_ok++;
    brk_net_send(b, b->frontend, ident, ident_len, &buf);
}

/* ---- admission ---- */

static bool s_model_ok(const brk_t *b, com_proto_str_t model) {
    if (!model.ptr)
        return true;
    size_t n = strlen(b->model_name);
    return model.len == n && memcmp(model.ptr, b->model_name, n) == 0;
}

/* Token-id inputs: in the vocabulary and within max_seq_length. Never truncated: ids are the
 * client's final sequences (special tokens included), and cutting them would silently drop
 * the closing special token. Returns 0 or fails r. */
static int s_check_ids(brk_t *b, brk_req_t *r, const com_proto_inputs_t *in) {
    int32_t vocab = b->info.vocab_size;
    int32_t msl = b->info.max_seq_length;
    for (uint32_t i = 0; i < in->n; i++) {
        int32_t len = in->offs[i + 1] - in->offs[i];
        if (len > msl) {
            brk_request_fail(b, r, COM_PROTO_INPUT_TOO_LONG,
                             "input %u: %d token ids exceed the model's max_seq_length %d "
                             "(token-id inputs are never truncated)",
                             i, len, msl);
            return COM_EINVAL;
        }
        for (int32_t k = in->offs[i]; k < in->offs[i + 1]; k++) {
            if (in->ids[k] >= vocab) {
                brk_request_fail(b, r, COM_PROTO_BAD_REQUEST,
                                 "input %u: token id %d is outside the vocabulary (size %d)", i,
                                 in->ids[k], vocab);
                return COM_EINVAL;
            }
        }
    }
    return 0;
}

/* Splits the sequences into chunks under the token budget, queues them and dispatches. */
static void s_start_chunks(brk_t *b, brk_req_t *r) {
    if (b->queued_tokens > 0 &&
        b->queued_tokens + r->total_tokens > (uint64_t)b->cfg.max_queued_tokens) {
        brk_request_fail(b, r, COM_PROTO_OVERLOADED,
                         "%llu tokens queued; this request's %llu would exceed "
                         "max-queued-tokens %lld",
                         (unsigned long long)b->queued_tokens, (unsigned long long)r->total_tokens,
                         (long long)b->cfg.max_queued_tokens);
        return;
    }
    int task = r->type == COM_PROTO_SCORE ? COM_PROTO_TASK_SCORE : COM_PROTO_TASK_EMBED;
    uint32_t budget = (uint32_t)b->cfg.chunk_tokens;
    uint32_t mbt = brk_workers_min_mbt(b, task);
    if (mbt > 0 && mbt < budget)
        budget = mbt;
    uint32_t max_seqs = b->limits.max_inputs;
    /* Two passes: count, then fill. A sequence longer than the budget gets a chunk alone. */
    uint32_t n_chunks = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t c = 0, first = 0, tokens = 0;
        for (uint32_t i = 0; i <= r->n; i++) {
            uint32_t len = i < r->n ? (uint32_t)(r->offs[i + 1] - r->offs[i]) : 0;
            bool close =
                i == r->n || (i > first && (tokens + len > budget || i - first >= max_seqs));
            if (close && i > first) {
                if (pass == 1) {
                    brk_chunk_t *ch = &r->chunks[c];
                    memset(ch, 0, sizeof *ch);
                    ch->req = r;
                    ch->cid = c;
                    ch->first = first;
                    ch->nseq = i - first;
                    ch->tokens = tokens;
                    ch->worker = -1;
                    ch->failed_on = -1;
                }
                c++;
                first = i;
                tokens = 0;
            }
            tokens += len;
        }
        if (pass == 0) {
            n_chunks = c;
            r->chunks = calloc(n_chunks, sizeof *r->chunks);
            r->out = calloc(r->out_bytes ? r->out_bytes : 1, 1);
            if (!r->chunks || !r->out) {
                brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory");
                return;
            }
        }
    }
    r->n_chunks = n_chunks;
    r->state = BRK_REQ_RUNNING;
    for (uint32_t c = 0; c < n_chunks; c++)
        brk_fifo_push(b, &r->chunks[c], false);
    COM_DEBUG("request %llu: %u inputs, %llu tokens, %u chunks (budget %u)",
              (unsigned long long)r->rid, r->n, (unsigned long long)r->total_tokens, n_chunks,
              budget);
    brk_dispatch_run(b); /* may answer (and release) r */
}

/* Hands the texts (or pairs) to the tokenizer pool in up to 2 x threads slices; a small request
 * (at most S_INLINE_TOKENIZE_BYTES of text) is tokenized here, on the main thread, as one job. */
static void s_submit_jobs(brk_t *b, brk_req_t *r, const com_proto_str_t *texts, bool pairs) {
    uint64_t bytes = 0;
    const uint64_t n_texts = (uint64_t)r->n * (pairs ? 2 : 1);
    for (uint64_t i = 0; i < n_texts && bytes <= S_INLINE_TOKENIZE_BYTES; i++)
        bytes += texts[i].len;
    const bool inline_tok = bytes <= S_INLINE_TOKENIZE_BYTES;
    uint32_t threads = (uint32_t)brk_tokpool_threads(b->pool);
    uint32_t nj = inline_tok ? 1 : r->n < 2 * threads ? r->n : 2 * threads;
    uint32_t per = (r->n + nj - 1) / nj;
    nj = (r->n + per - 1) / per;
    r->jobs = calloc(nj, sizeof *r->jobs);
    if (!r->jobs) {
        brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory");
        return;
    }
    for (uint32_t j = 0; j < nj; j++) {
        brk_tok_job_t *job = calloc(1, sizeof *job);
        if (!job) {
            brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory");
            return;
        }
        r->jobs[r->n_jobs++] = job;
        job->rid = r->rid;
        job->first = j * per;
        job->n = r->n - job->first < per ? r->n - job->first : per;
        job->texts = texts + (size_t)job->first * (pairs ? 2 : 1);
        job->pairs = pairs;
        job->opts = com_encode_opts_default();
        job->opts.max_length = b->info.max_seq_length;
        job->opts.truncate = r->truncate;
        job->opts.add_special_tokens = true;
    }
    r->state = BRK_REQ_TOKENIZING;
    r->tok_start_us = com_clock_mono_us();
    if (inline_tok) {
        /* The same path as a job back from the pool (errors, counters, gathering). */
        brk_tok_job_run(b->tok, r->jobs[0], &b->enc);
        r->jobs_pending = 1;
        brk_request_on_job(b, r->jobs[0]); /* may answer (and release) r */
        return;
    }
    for (uint32_t j = 0; j < nj; j++) {
        com_error_t err = {0};
        if (brk_tokpool_submit(b->pool, r->jobs[j], &err) != 0) {
            brk_request_fail(b, r, COM_PROTO_INTERNAL, "%s", err.msg);
            return;
        }
        r->jobs_pending++;
    }
}

/* Checks the reply will fit one frame (this also bounds the output buffer). */
static int s_check_out_size(brk_t *b, brk_req_t *r) {
    uint64_t bytes = (uint64_t)r->n * r->out_dim * com_proto_dtype_size(r->dtype);
    uint64_t frame = bytes + (uint64_t)r->n * 5 + 1024;
    if (frame > b->limits.max_msg_bytes) {
        brk_request_fail(b, r, COM_PROTO_TOO_LARGE,
                         "the reply (%u x %u %s, about %llu bytes) would exceed the message "
                         "limit max_msg_bytes = %zu; split the request",
                         r->n, r->out_dim, com_proto_dtype_name(r->dtype),
                         (unsigned long long)frame, b->limits.max_msg_bytes);
        return COM_ETOOLONG;
    }
    r->out_bytes = (size_t)bytes;
    return 0;
}

static void s_admit(brk_t *b, brk_req_t *r, int64_t now) {
    com_proto_msg_t *m = &r->msg;
    com_proto_str_t model = {0};
    uint32_t dl = 0;
    switch (r->type) {
    case COM_PROTO_EMBED:
        model = m->u.embed.model;
        dl = m->u.embed.deadline_ms;
        break;
    case COM_PROTO_SCORE:
        model = m->u.score.model;
        dl = m->u.score.deadline_ms;
        break;
    default:
        model = m->u.tokenize.model;
        dl = m->u.tokenize.deadline_ms;
        break;
    }
    int64_t ms = dl ? (int64_t)dl : (int64_t)b->cfg.default_deadline_ms;
    if (ms > b->cfg.max_deadline_ms)
        ms = b->cfg.max_deadline_ms;
    r->deadline_us = now + ms * 1000;
    if (b->draining) {
        brk_request_fail(b, r, COM_PROTO_UNAVAILABLE, "the broker is draining");
        return;
    }
    if (!s_model_ok(b, model)) {
        brk_request_fail(b, r, COM_PROTO_MODEL_MISMATCH, "this pool serves \"%s\", not \"%.*s\"",
                         b->model_name, (int)(model.len > 200 ? 200 : model.len), model.ptr);
        return;
    }
    if (b->queued_tokens > (uint64_t)b->cfg.max_queued_tokens) {
        brk_request_fail(b, r, COM_PROTO_OVERLOADED,
                         "%llu tokens queued exceed max-queued-tokens %lld",
                         (unsigned long long)b->queued_tokens, (long long)b->cfg.max_queued_tokens);
        return;
    }
    if (r->type == COM_PROTO_EMBED) {
        const com_proto_embed_t *e = &m->u.embed;
        r->dtype = e->dtype;
        r->normalize = e->normalize;
        r->dims = e->dims;
        r->truncate = e->truncate;
        r->n = e->in.n;
        if (e->dims > (uint32_t)b->info.embedding_dim) {
            brk_request_fail(b, r, COM_PROTO_UNSUPPORTED,
                             "\"dims\" %u exceeds the model's embedding width %d", e->dims,
                             b->info.embedding_dim);
            return;
        }
        r->out_dim = e->dims ? e->dims : (uint32_t)b->info.embedding_dim;
        if (s_check_out_size(b, r) != 0)
            return;
        if (e->in.kind == COM_PROTO_IN_IDS) {
            if (s_check_ids(b, r, &e->in) != 0)
                return;
            r->ids = e->in.ids;
            r->offs = e->in.offs;
            r->own_ids = false;
            r->total_tokens = (uint64_t)e->in.offs[e->in.n];
            s_start_chunks(b, r);
            return;
        }
        s_submit_jobs(b, r, e->in.texts, false);
        return;
    }
    if (r->type == COM_PROTO_SCORE) {
        const com_proto_score_t *s = &m->u.score;
        if (brk_workers_ready(b, COM_PROTO_TASK_SCORE) == 0) {
            brk_request_fail(b, r, COM_PROTO_UNSUPPORTED,
                             "score: no cross-encoder worker is ready (this pool serves the "
                             "embedding model \"%s\")",
                             b->model_name);
            return;
        }
        r->dtype = s->dtype;
        r->normalize = -1;
        r->truncate = s->truncate;
        r->n = s->n;
        r->out_dim = 1;
        if (s_check_out_size(b, r) != 0)
            return;
        s_submit_jobs(b, r, s->pairs, true);
        return;
    }
    /* tokenize */
    const com_proto_tokenize_t *t = &m->u.tokenize;
    if (t->in.kind != COM_PROTO_IN_TEXT) {
        brk_request_fail(b, r, COM_PROTO_BAD_REQUEST, "\"in\": tokenize takes texts");
        return;
    }
    r->truncate = t->truncate;
    r->n = t->in.n;
    s_submit_jobs(b, r, t->in.texts, false);
}

void brk_request_on_frame(brk_t *b, const uint8_t *ident, size_t ident_len, zmq_msg_t *payload) {
    int64_t now = com_clock_mono_us();
    com_error_t derr = {0};
    brk_req_t *r = s_alloc(b);
    if (!r) {
        /* Table full: decode only to address the answer (info needs no slot). */
        com_proto_msg_t m;
        int rc =
            com_proto_decode(zmq_msg_data(payload), zmq_msg_size(payload), &b->limits, &m, &derr);
        if (rc != 0) {
            b->c.bad_client_msgs++;
            brk_net_reply_error(b, ident, ident_len, m.has_id ? m.id : 0, m.perr, "%s", derr.msg);
        } else if (m.type == COM_PROTO_INFO) {
            b->c.requests_in++;
            b->c.requests_info++;
            s_reply_info(b, ident, ident_len, m.id);
        } else {
            b->c.requests_in++;
            brk_net_reply_error(b, ident, ident_len, m.id, COM_PROTO_OVERLOADED,
                                "%d requests open (max-requests)", b->cfg.max_requests);
        }
        com_proto_msg_free(&m);
        zmq_msg_close(payload);
        return;
    }
    /* The decoded views point into r->raw, whose address is stable while r lives (small
     * messages are stored inside the zmq_msg_t itself, so the frame is moved first). */
    zmq_msg_move(&r->raw, payload);
    zmq_msg_close(payload);
    memcpy(r->ident, ident, ident_len);
    r->ident_len = ident_len;
    r->recv_us = now;
    int rc =
        com_proto_decode(zmq_msg_data(&r->raw), zmq_msg_size(&r->raw), &b->limits, &r->msg, &derr);
    if (rc != 0) {
        b->c.bad_client_msgs++;
        COM_DEBUG("bad client message: %s", derr.msg);
        brk_net_reply_error(b, ident, ident_len, r->msg.has_id ? r->msg.id : 0,
                            r->msg.perr ? r->msg.perr : COM_PROTO_BAD_REQUEST, "%s", derr.msg);
        s_release(b, r);
        return;
    }
    r->client_id = r->msg.id;
    r->type = r->msg.type;
    switch (r->type) {
    case COM_PROTO_INFO:
        b->c.requests_in++;
        b->c.requests_info++;
        s_reply_info(b, ident, ident_len, r->msg.id);
        s_release(b, r);
        return;
    case COM_PROTO_EMBED:
        b->c.requests_embed++;
        break;
    case COM_PROTO_SCORE:
        b->c.requests_score++;
        break;
    case COM_PROTO_TOKENIZE:
        b->c.requests_tokenize++;
        break;
    default:
        b->c.bad_client_msgs++;
        brk_net_reply_error(b, ident, ident_len, r->msg.id, COM_PROTO_BAD_REQUEST,
                            "\"%s\" is not a client request (frontend)",
                            com_proto_type_name(r->type));
        s_release(b, r);
        return;
    }
    b->c.requests_in++;
    s_admit(b, r, now);
}

/* ---- tokenizer results ---- */

/* All jobs are back and succeeded: gathers ids, offsets and segments in input order. */
static void s_tokenized(brk_t *b, brk_req_t *r) {
    r->tok_done_us = com_clock_mono_us();
    uint64_t total = 0;
    for (uint32_t j = 0; j < r->n_jobs; j++)
        total += r->jobs[j]->n_tokens;
    bool pairs = r->type == COM_PROTO_SCORE;
    r->own_ids = true;
    r->ids = malloc((size_t)(total ? total : 1) * sizeof *r->ids);
    r->offs = malloc(((size_t)r->n + 1) * sizeof *r->offs);
    r->seg = pairs ? malloc((size_t)r->n * sizeof *r->seg) : NULL;
    if (!r->ids || !r->offs || (pairs && !r->seg) || total > INT32_MAX) {
        brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory gathering %llu tokens",
                         (unsigned long long)total);
        return;
    }
    uint64_t at = 0;
    r->offs[0] = 0;
    for (uint32_t j = 0; j < r->n_jobs; j++) {
        brk_tok_job_t *job = r->jobs[j];
        memcpy(r->ids + at, job->ids, (size_t)job->n_tokens * sizeof *r->ids);
        for (uint32_t i = 0; i < job->n; i++) {
            r->offs[job->first + i + 1] = r->offs[job->first + i] + (int32_t)job->lens[i];
            if (pairs)
                r->seg[job->first + i] = job->seg[i];
        }
        at += job->n_tokens;
        brk_tok_job_destroy(&r->jobs[j]);
    }
    r->n_jobs = 0;
    r->total_tokens = total;
    if (r->type == COM_PROTO_TOKENIZE) {
        s_reply_tokenize(b, r);
        return;
    }
    for (uint32_t i = 0; i < r->n; i++) {
        if (r->offs[i + 1] == r->offs[i]) {
            brk_request_fail(b, r, COM_PROTO_BAD_REQUEST, "input %u: no tokens", i);
            return;
        }
    }
    s_start_chunks(b, r);
}

void brk_request_on_job(brk_t *b, brk_tok_job_t *job) {
    uint64_t slot = job->rid & 0xffffffffu;
    if (slot >= (uint64_t)b->cfg.max_requests || b->reqs[slot].rid != job->rid) {
        /* Cannot happen: a request is not released while it has jobs out. */
        COM_ERROR("tokenizer job for unknown request %llu", (unsigned long long)job->rid);
        return;
    }
    brk_req_t *r = &b->reqs[slot];
    r->jobs_pending--;
    b->c.tokens_tokenized += job->n_tokens;
    if (r->state == BRK_REQ_ZOMBIE) {
        if (r->jobs_pending == 0)
            s_release(b, r);
        return;
    }
    if (job->rc != 0) {
        com_proto_code_t code =
            job->rc == COM_ETOOLONG ? COM_PROTO_INPUT_TOO_LONG : COM_PROTO_INTERNAL;
        brk_request_fail(b, r, code, "input %u: %s", job->bad_index, job->errmsg);
        return;
    }
    if (r->jobs_pending == 0)
        s_tokenized(b, r);
}

/* ---- results ---- */

void brk_request_chunk_done(brk_t *b, brk_chunk_t *ch, const com_proto_result_t *res) {
    brk_req_t *r = ch->req;
    size_t esz = com_proto_dtype_size(r->dtype);
    size_t row = (size_t)r->out_dim * esz;
    uint8_t *dst = r->out + (size_t)ch->first * row;
    if (res->emb.dtype == r->dtype) {
        memcpy(dst, res->emb.data, (size_t)ch->nseq * row);
    } else {
        size_t count = (size_t)ch->nseq * r->out_dim;
        float *tmp = malloc(count * sizeof *tmp);
        if (!tmp) {
            brk_request_fail(b, r, COM_PROTO_INTERNAL, "out of memory");
            return;
        }
        com_proto_tensor_unpack(&res->emb, tmp);
        com_proto_tensor_pack(tmp, count, r->dtype, dst);
        free(tmp);
    }
    ch->state = BRK_CHUNK_DONE;
    r->chunks_done++;
    if (res->timing.compute_us > r->compute_us_max)
        r->compute_us_max = res->timing.compute_us;
    if (r->chunks_done == r->n_chunks)
        s_reply_result(b, r);
}

/* ---- timers ---- */

void brk_requests_tick(brk_t *b, int64_t now_us) {
    if (b->active_requests == 0)
        return;
    for (uint32_t i = 0; i < b->req_hi; i++) {
        brk_req_t *r = &b->reqs[i];
        if (r->state != BRK_REQ_TOKENIZING && r->state != BRK_REQ_RUNNING)
            continue;
        if (now_us < r->deadline_us)
            continue;
        int task = r->type == COM_PROTO_SCORE ? COM_PROTO_TASK_SCORE : COM_PROTO_TASK_EMBED;
        int64_t ms = (r->deadline_us - r->recv_us) / 1000;
        if (r->state == BRK_REQ_RUNNING && !r->dispatched && brk_workers_ready(b, task) == 0)
            brk_request_fail(b, r, COM_PROTO_NO_WORKERS,
                             "no worker was ready within the deadline (%lld ms)", (long long)ms);
        else
            brk_request_fail(b, r, COM_PROTO_DEADLINE_EXCEEDED,
                             "deadline of %lld ms passed (%u of %u chunks done)", (long long)ms,
                             r->chunks_done, r->n_chunks);
    }
}

void brk_requests_abort_all(brk_t *b, const char *why) {
    for (uint32_t i = 0; i < b->req_hi; i++) {
        brk_req_t *r = &b->reqs[i];
        if (r->state == BRK_REQ_TOKENIZING || r->state == BRK_REQ_RUNNING)
            brk_request_fail(b, r, COM_PROTO_UNAVAILABLE, "%s", why);
    }
}
