/* worker/worker_sched.c — see worker_sched.h: FCFS pool of sequences, batch forming under a token
 * budget, batches in flight (LazyTensor handles from the engine), chunk completion.
 *
 * Data: every chunk held is in the doubly linked list `all` (ownership). A chunk with sequences
 * not yet in a batch is also in the singly linked FIFO `pending` (head = oldest); its cursor
 * next_seq says which sequence comes next. Batches in flight sit in a ring of max_inflight
 * slots, oldest first (the engine completes them in submission order); each lists its segments
 * (chunk, first sequence, count, first row in the batch).
 * Invariants: a chunk is answered when accounted == n (every sequence either computed or
 * dropped); it is freed when answered and refs == 0 (no batch in flight names it). A failed
 * chunk (deadline, engine error) leaves `pending` at once and drops its unscheduled sequences;
 * sequences of it still in flight are accounted when their batch returns.
 * Thread: the event-loop thread only. */
#include "worker/worker_sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

#define S_MAX_INFLIGHT 8

typedef struct s_chunk s_chunk_t;
struct s_chunk {
    s_chunk_t *prev, *next; /* `all` list */
    s_chunk_t *pnext;       /* `pending` FIFO */
    int32_t link;
    uint64_t req_id;
    uint32_t cid, att;
    int32_t n;         /* sequences */
    int32_t *ids;      /* [offs[n]] token ids, host */
    int32_t *offs;     /* [n + 1] prefix sums */
    uint32_t *seg;     /* [n] first-segment lengths, or NULL (all type 0) */
    int32_t normalize; /* resolved: 0 or 1 */
    int32_t out_dim;   /* engine out_dim: 0 = full width */
    int32_t dim;       /* row width of the result */
    com_proto_dtype_t dtype;
    int64_t recv_us, deadline_us; /* monotonic; deadline 0 = none */
    int64_t first_start_us;       /* estimated compute start of its first batch; 0 = none yet */
    int64_t compute_us;           /* sum over its batches of their estimated compute time */
    uint8_t *out;                 /* [n, dim] dtype LE, the packed result being filled */
    int32_t next_seq;             /* first sequence not yet put in a batch */
    int32_t accounted;            /* sequences computed or dropped */
    int32_t refs;                 /* batches in flight naming this chunk */
    bool in_pending;
    bool answered;
    bool failed;
    uint32_t err_code;
    char err_msg[160];
};

typedef struct s_seg {
    s_chunk_t *c;
    int32_t seq0, nseq, row0;
} s_seg_t;

typedef struct s_batch {
    wrk_result_t *res;
    s_seg_t *segs;
    int32_t n_segs, cap_segs;
    int32_t n_seqs, n_tokens;
    int64_t submit_us;
} s_batch_t;

struct wrk_sched {
    wrk_engine_t *engine;
    com_model_info_t info;
    int32_t budget;
    int32_t max_seq; /* longest sequence accepted, tokens */
    int32_t max_inflight;
    wrk_sched_send_fn send;
    void *send_arg;
    s_chunk_t *all;
    s_chunk_t *pend_head, *pend_tail;
    s_batch_t ring[S_MAX_INFLIGHT];
    int32_t ring_head, ring_count;
    int64_t last_done_us; /* completion time of the previous batch (compute start estimate) */
    int32_t *st_ids;      /* [budget] staging: token ids of the batch being formed */
    int32_t *st_types;    /* [budget] staging: type ids */
    int32_t *st_cu;       /* [budget + 1] staging: boundaries */
    int32_t *held_link;   /* [n_links] chunks held per link */
    int32_t n_links;
    wrk_sched_stats_t st;
};

/* ------------------------------------------------------------------ answering */

static void s_send_buf(wrk_sched_t *s, int32_t link, com_proto_buf_t *buf) {
    s->send(s->send_arg, link, buf->data, buf->len);
    com_proto_buf_free(buf);
}

static void s_send_failed(wrk_sched_t *s, int32_t link, uint64_t req_id, uint32_t cid, uint32_t att,
                          uint32_t code, const char *msg, const com_proto_timings_t *tm) {
    com_proto_result_t r = {.chunk_id = cid, .attempt = att, .failed = true, .err_code = code};
    r.err_msg.ptr = msg ? msg : "";
    r.err_msg.len = (uint32_t)strlen(r.err_msg.ptr);
    if (tm)
        r.timing = *tm;
    com_proto_buf_t buf;
    com_error_t err;
    if (com_proto_encode_result(req_id, &r, &buf, &err) != 0) {
        s->st.send_encode_failed++;
        COM_ERROR("sched: cannot encode a failed result: %s", err.msg);
        return;
    }
    s_send_buf(s, link, &buf);
}

static int s_held_slot(wrk_sched_t *s, int32_t link) {
    if (link < 0)
        return COM_EINVAL;
    if (link >= s->n_links) {
        int32_t n = link + 8;
        int32_t *p = realloc(s->held_link, (size_t)n * sizeof *p);
        if (!p)
            return COM_ENOMEM;
        memset(p + s->n_links, 0, (size_t)(n - s->n_links) * sizeof *p);
        s->held_link = p;
        s->n_links = n;
    }
    return 0;
}

static void s_chunk_free(s_chunk_t *c) {
    free(c->ids);
    free(c->offs);
    free(c->seg);
    free(c->out);
    free(c);
}

static void s_unlink_all(wrk_sched_t *s, s_chunk_t *c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        s->all = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* Answers c (once) when every sequence is accounted, frees it when no batch names it. */
static int s_chunk_settle(wrk_sched_t *s, s_chunk_t *c, int64_t now_us) {
    int answered = 0;
    if (!c->answered && c->accounted == c->n) {
        c->answered = true;
        answered = 1;
        com_proto_timings_t tm = {0};
        const int64_t qend = c->first_start_us > 0 ? c->first_start_us : now_us;
        tm.queue_us = qend > c->recv_us ? (uint64_t)(qend - c->recv_us) : 0;
        tm.compute_us = (uint64_t)c->compute_us;
        const int64_t tokens = c->offs[c->n];
        if (c->failed) {
            s->st.chunks_failed++;
            s_send_failed(s, c->link, c->req_id, c->cid, c->att, c->err_code, c->err_msg, &tm);
        } else {
            com_proto_result_t r = {.chunk_id = c->cid, .attempt = c->att, .timing = tm};
            r.emb.dtype = c->dtype;
            r.emb.n = (uint32_t)c->n;
            r.emb.dim = (uint32_t)c->dim;
            r.emb.data = c->out;
            r.emb.nbytes = (size_t)c->n * (size_t)c->dim * com_proto_dtype_size(c->dtype);
            com_proto_buf_t buf;
            com_error_t err;
            if (com_proto_encode_result(c->req_id, &r, &buf, &err) != 0) {
                s->st.send_encode_failed++;
                s->st.chunks_failed++;
                COM_ERROR("sched: cannot encode result %llu/%u: %s", (unsigned long long)c->req_id,
                          c->cid, err.msg);
            } else {
                s->st.chunks_done++;
                s->st.seqs_done += (uint64_t)c->n;
                s->st.tokens_done += (uint64_t)tokens;
                s_send_buf(s, c->link, &buf);
            }
        }
        s->st.load_tokens -= tokens;
        s->st.load_seqs -= c->n;
        s->st.chunks_held--;
        s->held_link[c->link]--;
    }
    if (c->answered && c->refs == 0) {
        s_unlink_all(s, c);
        s_chunk_free(c);
    }
    return answered;
}

static void s_pend_remove(wrk_sched_t *s, s_chunk_t *c) {
    if (!c->in_pending)
        return;
    s_chunk_t *prev = NULL, *p = s->pend_head;
    while (p && p != c) {
        prev = p;
        p = p->pnext;
    }
    if (!p)
        return;
    if (prev)
        prev->pnext = c->pnext;
    else
        s->pend_head = c->pnext;
    if (s->pend_tail == c)
        s->pend_tail = prev;
    c->pnext = NULL;
    c->in_pending = false;
}

/* Marks c failed (the first reason wins), takes it out of the pool and drops its sequences not
 * yet in a batch. */
static void s_chunk_fail(wrk_sched_t *s, s_chunk_t *c, uint32_t code, const char *what,
                         const char *detail) {
    s_pend_remove(s, c);
    if (!c->failed) {
        c->failed = true;
        c->err_code = code;
        snprintf(c->err_msg, sizeof c->err_msg, "%s%.120s", what, detail ? detail : "");
    }
    c->accounted += c->n - c->next_seq;
    c->next_seq = c->n;
}

/* ------------------------------------------------------------------ create / destroy */

int wrk_sched_new(wrk_engine_t *engine, const wrk_sched_opts_t *opts, wrk_sched_send_fn send,
                  void *send_arg, wrk_sched_t **out, com_error_t *err) {
    *out = NULL;
    if (!engine || !opts || !send)
        return com_error_set(err, COM_EINVAL, "sched: missing engine, options or send callback");
    const com_model_info_t *info = wrk_engine_model(engine);
    int32_t max_seq = info->max_seq_length;
    if (max_seq > info->max_position_embeddings)
        max_seq = info->max_position_embeddings;
    int32_t inflight = opts->max_inflight ? opts->max_inflight : 2;
    if (inflight < 1 || inflight > S_MAX_INFLIGHT)
        return com_error_set(err, COM_EINVAL, "sched: max_inflight %d (want 1..%d)", (int)inflight,
                             S_MAX_INFLIGHT);
    if (opts->max_batch_tokens < max_seq || opts->max_batch_tokens > (1 << 24))
        return com_error_set(err, COM_EINVAL,
                             "sched: max batch tokens %d must be at least the model's "
                             "max_seq_length %d (and at most %d)",
                             (int)opts->max_batch_tokens, (int)max_seq, 1 << 24);
    wrk_sched_t *s = calloc(1, sizeof *s);
    if (!s)
        return com_error_set(err, COM_ENOMEM, "sched: out of memory");
    s->engine = engine;
    s->info = *info;
    s->budget = opts->max_batch_tokens;
    s->max_seq = max_seq;
    s->max_inflight = inflight;
    s->send = send;
    s->send_arg = send_arg;
    s->st_ids = malloc((size_t)s->budget * sizeof *s->st_ids);
    s->st_types = malloc((size_t)s->budget * sizeof *s->st_types);
    s->st_cu = malloc(((size_t)s->budget + 1) * sizeof *s->st_cu);
    if (!s->st_ids || !s->st_types || !s->st_cu) {
        wrk_sched_destroy(&s);
        return com_error_set(err, COM_ENOMEM, "sched: out of memory");
    }
    *out = s;
    return 0;
}

void wrk_sched_destroy(wrk_sched_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_sched_t *s = *self_p;
    for (int32_t i = 0; i < s->ring_count; i++) {
        s_batch_t *b = &s->ring[(s->ring_head + i) % S_MAX_INFLIGHT];
        wrk_result_destroy(&b->res);
    }
    for (int32_t i = 0; i < S_MAX_INFLIGHT; i++)
        free(s->ring[i].segs);
    s_chunk_t *c = s->all;
    while (c) {
        s_chunk_t *next = c->next;
        s_chunk_free(c);
        c = next;
    }
    free(s->st_ids);
    free(s->st_types);
    free(s->st_cu);
    free(s->held_link);
    free(s);
    *self_p = NULL;
}

/* ------------------------------------------------------------------ adding chunks */

/* Checks c against the model. Returns 0, or a protocol code with the reason in err. */
static com_proto_code_t s_validate(const wrk_sched_t *s, const com_proto_chunk_t *c,
                                   com_error_t *err) {
    const com_proto_inputs_t *in = &c->in;
    if (in->kind != COM_PROTO_IN_IDS || in->n < 1 || !in->ids || !in->offs) {
        com_error_set(err, COM_EINVAL, "chunk: \"in\" must hold token-id arrays");
        return COM_PROTO_BAD_REQUEST;
    }
    if (in->offs[in->n] > INT32_MAX - 1) {
        com_error_set(err, COM_EINVAL, "chunk: too many tokens");
        return COM_PROTO_BAD_REQUEST;
    }
    for (uint32_t i = 0; i < in->n; i++) {
        int32_t len = in->offs[i + 1] - in->offs[i];
        if (len < 1 || len > s->max_seq) {
            com_error_set(err, COM_EINVAL,
                          "chunk: sequence %u has %d tokens (the model takes 1..%d)", i, (int)len,
                          (int)s->max_seq);
            return COM_PROTO_BAD_REQUEST;
        }
        if (c->seg && c->seg[i] < (uint32_t)len && s->info.type_vocab_size < 2) {
            com_error_set(err, COM_EINVAL,
                          "chunk: sequence %u has a second segment but the model has %d token "
                          "type(s)",
                          i, (int)s->info.type_vocab_size);
            return COM_PROTO_BAD_REQUEST;
        }
    }
    const int32_t total = in->offs[in->n];
    for (int32_t t = 0; t < total; t++) {
        if (in->ids[t] < 0 || in->ids[t] >= s->info.vocab_size) {
            com_error_set(err, COM_EINVAL, "chunk: token %d has id %d, outside the vocabulary (%d)",
                          (int)t, (int)in->ids[t], (int)s->info.vocab_size);
            return COM_PROTO_BAD_REQUEST;
        }
    }
    if (c->dims > (uint32_t)s->info.embedding_dim) {
        com_error_set(err, COM_EINVAL, "chunk: dims %u is wider than the model's %d", c->dims,
                      (int)s->info.embedding_dim);
        return COM_PROTO_UNSUPPORTED;
    }
    if (c->normalize < -1 || c->normalize > 1) {
        com_error_set(err, COM_EINVAL, "chunk: norm %d", (int)c->normalize);
        return COM_PROTO_BAD_REQUEST;
    }
    if (com_proto_dtype_size(c->dtype) == 0) {
        com_error_set(err, COM_EINVAL, "chunk: unknown dtype %d", (int)c->dtype);
        return COM_PROTO_UNSUPPORTED;
    }
    return COM_PROTO_OK;
}

void wrk_sched_reject(wrk_sched_t *s, int32_t link, uint64_t req_id, uint32_t cid, uint32_t att,
                      com_proto_code_t code, const char *msg) {
    s->st.chunks_in++;
    s->st.chunks_failed++;
    s->st.chunks_rejected++;
    s_send_failed(s, link, req_id, cid, att, code, msg, NULL);
}

int wrk_sched_add(wrk_sched_t *s, int32_t link, uint64_t req_id, const com_proto_chunk_t *c,
                  int64_t now_us, com_error_t *err) {
    com_error_t verr = {0};
    s->st.chunks_in++;
    com_proto_code_t code = s_validate(s, c, &verr);
    if (code == COM_PROTO_OK && s_held_slot(s, link) != 0) {
        code = COM_PROTO_INTERNAL;
        com_error_set(&verr, COM_ENOMEM, "worker: out of memory");
    }
    s_chunk_t *k = NULL;
    if (code == COM_PROTO_OK) {
        const uint32_t n = c->in.n;
        const int32_t total = c->in.offs[n];
        k = calloc(1, sizeof *k);
        if (k) {
            k->n = (int32_t)n;
            k->normalize = c->normalize < 0 ? (s->info.normalize ? 1 : 0) : c->normalize;
            k->out_dim =
                (c->dims == 0 || c->dims == (uint32_t)s->info.embedding_dim) ? 0 : (int32_t)c->dims;
            k->dim = k->out_dim ? k->out_dim : s->info.embedding_dim;
            k->dtype = c->dtype;
            k->ids = malloc((size_t)total * sizeof *k->ids);
            k->offs = malloc(((size_t)n + 1) * sizeof *k->offs);
            k->seg = c->seg ? malloc((size_t)n * sizeof *k->seg) : NULL;
            k->out = malloc((size_t)n * (size_t)k->dim * com_proto_dtype_size(k->dtype));
        }
        if (!k || !k->ids || !k->offs || (c->seg && !k->seg) || !k->out) {
            if (k)
                s_chunk_free(k);
            k = NULL;
            code = COM_PROTO_INTERNAL;
            com_error_set(&verr, COM_ENOMEM, "worker: out of memory for a chunk of %u sequences",
                          n);
        } else {
            memcpy(k->ids, c->in.ids, (size_t)total * sizeof *k->ids);
            memcpy(k->offs, c->in.offs, ((size_t)n + 1) * sizeof *k->offs);
            if (k->seg)
                memcpy(k->seg, c->seg, (size_t)n * sizeof *k->seg);
        }
    }
    if (code != COM_PROTO_OK) {
        s->st.chunks_failed++;
        if (code != COM_PROTO_INTERNAL)
            s->st.chunks_bad++;
        s_send_failed(s, link, req_id, c->chunk_id, c->attempt, code, verr.msg, NULL);
        if (err)
            *err = verr;
        return COM_EINVAL;
    }
    k->link = link;
    k->req_id = req_id;
    k->cid = c->chunk_id;
    k->att = c->attempt;
    k->recv_us = now_us;
    k->deadline_us = c->deadline_ms ? now_us + (int64_t)c->deadline_ms * 1000 : 0;
    /* ownership list */
    k->next = s->all;
    if (s->all)
        s->all->prev = k;
    s->all = k;
    /* FIFO */
    k->in_pending = true;
    if (s->pend_tail)
        s->pend_tail->pnext = k;
    else
        s->pend_head = k;
    s->pend_tail = k;
    const int64_t tokens = k->offs[k->n];
    s->st.seqs_in += (uint64_t)k->n;
    s->st.tokens_in += (uint64_t)tokens;
    s->st.load_tokens += tokens;
    s->st.load_seqs += k->n;
    s->st.chunks_held++;
    s->held_link[link]++;
    return 0;
}

/* ------------------------------------------------------------------ batches */

static void s_pend_pop(wrk_sched_t *s) {
    s_chunk_t *c = s->pend_head;
    s->pend_head = c->pnext;
    if (!s->pend_head)
        s->pend_tail = NULL;
    c->pnext = NULL;
    c->in_pending = false;
}

static int s_seg_push(s_batch_t *b, s_chunk_t *c, int32_t seq0, int32_t nseq, int32_t row0) {
    if (b->n_segs == b->cap_segs) {
        int32_t cap = b->cap_segs ? b->cap_segs * 2 : 16;
        s_seg_t *p = realloc(b->segs, (size_t)cap * sizeof *p);
        if (!p)
            return COM_ENOMEM;
        b->segs = p;
        b->cap_segs = cap;
    }
    b->segs[b->n_segs++] = (s_seg_t){.c = c, .seq0 = seq0, .nseq = nseq, .row0 = row0};
    return 0;
}

/* Forms one batch from the head of the pool and submits it. Returns the number of chunks
 * answered on the way (deadline drops, submit failures), or -1 when nothing was submitted and
 * nothing is left to try. */
static int s_form_and_submit(wrk_sched_t *s, int64_t now_us) {
    s_batch_t *b = &s->ring[(s->ring_head + s->ring_count) % S_MAX_INFLIGHT];
    b->n_segs = 0;
    b->n_seqs = 0;
    b->n_tokens = 0;
    int answered = 0;
    int32_t normalize = 0, out_dim = 0;
    bool any_seg = false;
    s->st_cu[0] = 0;
    while (s->pend_head) {
        s_chunk_t *c = s->pend_head;
        if (c->deadline_us && now_us >= c->deadline_us) {
            s_chunk_fail(s, c, COM_PROTO_DEADLINE_EXCEEDED, "worker: deadline passed in the queue",
                         NULL);
            s->st.deadline_drops++;
            answered += s_chunk_settle(s, c, now_us);
            continue;
        }
        if (b->n_seqs == 0) {
            normalize = c->normalize;
            out_dim = c->out_dim;
        } else if (c->normalize != normalize || c->out_dim != out_dim) {
            break;
        }
        const int32_t seq0 = c->next_seq;
        int32_t q = seq0;
        while (q < c->n) {
            const int32_t len = c->offs[q + 1] - c->offs[q];
            if (b->n_tokens + len > s->budget)
                break;
            const int32_t *src = c->ids + c->offs[q];
            memcpy(s->st_ids + b->n_tokens, src, (size_t)len * sizeof *src);
            const int32_t first = c->seg ? (int32_t)c->seg[q] : len;
            for (int32_t t = 0; t < len; t++)
                s->st_types[b->n_tokens + t] = t < first ? 0 : 1;
            if (first < len)
                any_seg = true;
            b->n_tokens += len;
            s->st_cu[++b->n_seqs] = b->n_tokens;
            q++;
        }
        if (q == seq0)
            break; /* budget full */
        if (s_seg_push(b, c, seq0, q - seq0, b->n_seqs - (q - seq0)) != 0) {
            /* cannot record the segment: undo it and fail the chunk */
            b->n_seqs -= q - seq0;
            b->n_tokens = s->st_cu[b->n_seqs];
            s_chunk_fail(s, c, COM_PROTO_INTERNAL, "worker: out of memory", NULL);
            answered += s_chunk_settle(s, c, now_us);
            break;
        }
        c->next_seq = q;
        c->refs++;
        if (q < c->n)
            break; /* budget full inside this chunk: the rest goes in the next batch */
        s_pend_pop(s);
    }
    if (b->n_seqs == 0)
        return answered > 0 ? answered : -1;
    wrk_batch_t eb = {.n_seqs = b->n_seqs,
                      .n_tokens = b->n_tokens,
                      .token_ids = s->st_ids,
                      .type_ids = any_seg ? s->st_types : NULL,
                      .cu_seqlens = s->st_cu,
                      .out_dim = out_dim,
                      .normalize = normalize};
    com_error_t err = {0};
    int rc = wrk_engine_submit(s->engine, &eb, &b->res, &err);
    if (rc != 0) {
        COM_ERROR("sched: engine rejected a batch of %d sequences (%d tokens): %s", (int)b->n_seqs,
                  (int)b->n_tokens, err.msg);
        s->st.batches_failed++;
        for (int32_t i = 0; i < b->n_segs; i++) {
            s_chunk_t *c = b->segs[i].c;
            c->refs--;
            c->accounted += b->segs[i].nseq;
            s_chunk_fail(s, c, COM_PROTO_INTERNAL, "worker: engine: ", err.msg);
            s->st.engine_failed++;
            answered += s_chunk_settle(s, c, now_us);
        }
        b->n_segs = 0;
        return answered > 0 ? answered : 0;
    }
    b->submit_us = now_us;
    s->ring_count++;
    s->st.batches_submitted++;
    return answered;
}

/* Finishes the oldest batch in flight (complete). Returns chunks answered. */
static int s_finish_batch(wrk_sched_t *s, int64_t now_us) {
    s_batch_t *b = &s->ring[s->ring_head];
    com_error_t err = {0};
    int rc = wrk_result_wait(b->res, &err); /* complete: does not block */
    const float *emb = NULL;
    int32_t n = 0, dim = 0;
    if (rc == 0) {
        emb = wrk_result_embeddings(b->res, &n, &dim);
        if (!emb || n != b->n_seqs) {
            rc = COM_EINTERNAL;
            com_error_set(&err, rc, "engine returned %d rows for %d sequences", (int)n,
                          (int)b->n_seqs);
        }
    }
    /* The engine runs batches one after another: this one started when the previous ended. */
    const int64_t start = b->submit_us > s->last_done_us ? b->submit_us : s->last_done_us;
    s->last_done_us = now_us;
    if (rc == 0) {
        s->st.batches_done++;
    } else {
        s->st.batches_failed++;
        COM_ERROR("sched: batch of %d sequences failed: %s", (int)b->n_seqs, err.msg);
    }
    int answered = 0;
    for (int32_t i = 0; i < b->n_segs; i++) {
        const s_seg_t *g = &b->segs[i];
        s_chunk_t *c = g->c;
        c->refs--;
        c->accounted += g->nseq;
        if (c->first_start_us == 0)
            c->first_start_us = start;
        c->compute_us += now_us - start;
        if (rc == 0 && !c->failed) {
            if (dim != c->dim) {
                s_chunk_fail(s, c, COM_PROTO_INTERNAL, "worker: engine returned the wrong width",
                             NULL);
                s->st.engine_failed++;
            } else {
                const size_t esz = com_proto_dtype_size(c->dtype);
                com_proto_tensor_pack(emb + (size_t)g->row0 * (size_t)dim,
                                      (size_t)g->nseq * (size_t)dim, c->dtype,
                                      c->out + (size_t)g->seq0 * (size_t)dim * esz);
            }
        } else if (rc != 0) {
            if (!c->failed)
                s->st.engine_failed++;
            s_chunk_fail(s, c, COM_PROTO_INTERNAL, "worker: engine: ", err.msg);
        }
        answered += s_chunk_settle(s, c, now_us);
    }
    wrk_result_destroy(&b->res);
    b->n_segs = 0;
    s->ring_head = (s->ring_head + 1) % S_MAX_INFLIGHT;
    s->ring_count--;
    return answered;
}

int wrk_sched_pump(wrk_sched_t *s, bool engine_event, int64_t now_us) {
    if (engine_event) {
        uint64_t v;
        ssize_t r = read(wrk_engine_event_fd(s->engine), &v, sizeof v);
        (void)r; /* EAGAIN: nothing pending; the results are checked below either way */
    }
    int answered = 0;
    while (s->ring_count > 0 && wrk_result_poll(s->ring[s->ring_head].res))
        answered += s_finish_batch(s, now_us);
    while (s->ring_count < s->max_inflight && s->pend_head) {
        int r = s_form_and_submit(s, now_us);
        if (r < 0)
            break;
        answered += r;
    }
    return answered;
}

int32_t wrk_sched_held(const wrk_sched_t *s) {
    return s->st.chunks_held;
}

int32_t wrk_sched_held_link(const wrk_sched_t *s, int32_t link) {
    return link >= 0 && link < s->n_links ? s->held_link[link] : 0;
}

void wrk_sched_stats(const wrk_sched_t *s, wrk_sched_stats_t *out) {
    *out = s->st;
    out->batches_inflight = s->ring_count;
}
