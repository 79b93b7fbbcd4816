/* common/protocol_util.c — the protocol's names, defaults, message init/free, field-by-field
 * equality and tensor packing (little-endian f32/f16). See protocol.h; the encoders and
 * decoders are in protocol.c. Pure functions; no global state. */
#include "common/protocol.h"

#include <stdlib.h>
#include <string.h>

#include "common/half.h"

/* ---------------------------------------------------------------- names and small helpers */

static const char *const s_type_names[COM_PROTO_TYPE_COUNT] = {
    [COM_PROTO_NONE] = "?",
    [COM_PROTO_EMBED] = "embed",
    [COM_PROTO_SCORE] = "score",
    [COM_PROTO_TOKENIZE] = "tokenize",
    [COM_PROTO_INFO] = "info",
    [COM_PROTO_EMBED_REPLY] = "embed_reply",
    [COM_PROTO_SCORE_REPLY] = "score_reply",
    [COM_PROTO_TOKENIZE_REPLY] = "tokenize_reply",
    [COM_PROTO_INFO_REPLY] = "info_reply",
    [COM_PROTO_ERROR] = "error",
    [COM_PROTO_READY] = "ready",
    [COM_PROTO_CHUNK] = "chunk",
    [COM_PROTO_RESULT] = "result",
    [COM_PROTO_HEARTBEAT] = "hb",
    [COM_PROTO_DRAIN] = "drain",
    [COM_PROTO_DISCONNECT] = "disconnect",
};

const char *com_proto_type_name(com_proto_type_t t) {
    return (unsigned)t < COM_PROTO_TYPE_COUNT ? s_type_names[t] : "?";
}

const char *com_proto_code_name(uint32_t code) {
    static const char *const names[] = {
        "OK",         "BAD_REQUEST",       "TOO_LARGE",   "UNSUPPORTED_VERSION",
        "OVERLOADED", "DEADLINE_EXCEEDED", "NO_WORKERS",  "MODEL_MISMATCH",
        "INTERNAL",   "INPUT_TOO_LONG",    "UNSUPPORTED", "UNAVAILABLE",
    };
    return code < sizeof names / sizeof names[0] ? names[code] : "?";
}

const char *com_proto_dtype_name(com_proto_dtype_t dt) {
    return dt == COM_PROTO_F32 ? "f32" : dt == COM_PROTO_F16 ? "f16" : "?";
}

size_t com_proto_dtype_size(com_proto_dtype_t dt) {
    return dt == COM_PROTO_F32 ? 4 : dt == COM_PROTO_F16 ? 2 : 0;
}

void com_proto_limits_default(com_proto_limits_t *lim) {
    lim->max_msg_bytes = (size_t)64 << 20;
    lim->max_inputs = 65536;
    lim->max_tokens_per_input = 32768;
    lim->max_total_tokens = 8u << 20;
    lim->max_text_bytes = 1u << 20;
    lim->max_str_bytes = 4096;
    lim->max_dim = 65536;
    lim->max_depth = 8;
}

void com_proto_msg_init(com_proto_msg_t *m, com_proto_type_t type, uint64_t id) {
    memset(m, 0, sizeof *m);
    m->type = type;
    m->version = COM_PROTO_VERSION;
    m->id = id;
    m->has_id = true;
    switch (type) {
    case COM_PROTO_EMBED:
        m->u.embed.normalize = -1;
        m->u.embed.truncate = true;
        m->u.embed.in.kind = COM_PROTO_IN_TEXT;
        break;
    case COM_PROTO_SCORE:
        m->u.score.truncate = true;
        break;
    case COM_PROTO_TOKENIZE:
        m->u.tokenize.truncate = true;
        m->u.tokenize.in.kind = COM_PROTO_IN_TEXT;
        break;
    case COM_PROTO_TOKENIZE_REPLY:
        m->u.tokenize_reply.ids.kind = COM_PROTO_IN_IDS;
        break;
    case COM_PROTO_CHUNK:
        m->u.chunk.normalize = -1;
        m->u.chunk.in.kind = COM_PROTO_IN_IDS;
        break;
    default:
        break;
    }
}

void com_proto_msg_free(com_proto_msg_t *m) {
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n_owned_ && i < COM_PROTO_MAX_OWNED; i++)
        free(m->owned_[i]);
    memset(m, 0, sizeof *m);
}

void com_proto_buf_free(com_proto_buf_t *b) {
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

/* ---------------------------------------------------------------- equality */

static bool s_str_eq(com_proto_str_t a, com_proto_str_t b, bool optional) {
    if (optional && ((a.ptr == NULL) != (b.ptr == NULL)))
        return false;
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static bool s_inputs_eq(const com_proto_inputs_t *a, const com_proto_inputs_t *b) {
    if (a->kind != b->kind || a->n != b->n)
        return false;
    if (a->kind == COM_PROTO_IN_TEXT) {
        for (uint32_t i = 0; i < a->n; i++)
            if (!s_str_eq(a->texts[i], b->texts[i], false))
                return false;
        return true;
    }
    if (memcmp(a->offs, b->offs, ((size_t)a->n + 1) * sizeof *a->offs) != 0)
        return false;
    size_t total = (size_t)a->offs[a->n];
    return total == 0 || memcmp(a->ids, b->ids, total * sizeof *a->ids) == 0;
}

static bool s_tensor_eq(const com_proto_tensor_t *a, const com_proto_tensor_t *b) {
    return a->dtype == b->dtype && a->n == b->n && a->dim == b->dim && a->nbytes == b->nbytes &&
           (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

static bool s_u32s_eq(const uint32_t *a, const uint32_t *b, uint32_t n) {
    if (!a || !b)
        return a == b || n == 0;
    return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static bool s_use_eq(const com_proto_usage_t *a, const com_proto_usage_t *b) {
    return a->tokens == b->tokens;
}

static bool s_tm_eq(const com_proto_timings_t *a, const com_proto_timings_t *b) {
    return a->tokenize_us == b->tokenize_us && a->queue_us == b->queue_us &&
           a->compute_us == b->compute_us && a->total_us == b->total_us;
}

bool com_proto_msg_equal(const com_proto_msg_t *a, const com_proto_msg_t *b) {
    if (a->type != b->type || a->id != b->id || a->version != b->version)
        return false;
    switch (a->type) {
    case COM_PROTO_EMBED: {
        const com_proto_embed_t *x = &a->u.embed, *y = &b->u.embed;
        return s_inputs_eq(&x->in, &y->in) && s_str_eq(x->model, y->model, true) &&
               x->normalize == y->normalize && x->dims == y->dims && x->dtype == y->dtype &&
               x->truncate == y->truncate && x->deadline_ms == y->deadline_ms;
    }
    case COM_PROTO_SCORE: {
        const com_proto_score_t *x = &a->u.score, *y = &b->u.score;
        if (x->n != y->n)
            return false;
        for (uint32_t i = 0; i < 2 * x->n; i++)
            if (!s_str_eq(x->pairs[i], y->pairs[i], false))
                return false;
        return s_str_eq(x->model, y->model, true) && x->dtype == y->dtype &&
               x->truncate == y->truncate && x->deadline_ms == y->deadline_ms;
    }
    case COM_PROTO_TOKENIZE: {
        const com_proto_tokenize_t *x = &a->u.tokenize, *y = &b->u.tokenize;
        return s_inputs_eq(&x->in, &y->in) && s_str_eq(x->model, y->model, true) &&
               x->truncate == y->truncate && x->deadline_ms == y->deadline_ms;
    }
    case COM_PROTO_INFO:
        return s_str_eq(a->u.info.model, b->u.info.model, true);
    case COM_PROTO_EMBED_REPLY: {
        const com_proto_embed_reply_t *x = &a->u.embed_reply, *y = &b->u.embed_reply;
        return s_str_eq(x->model, y->model, true) && s_tensor_eq(&x->emb, &y->emb) &&
               s_u32s_eq(x->ntok, y->ntok, x->emb.n) && s_use_eq(&x->usage, &y->usage) &&
               s_tm_eq(&x->timing, &y->timing);
    }
    case COM_PROTO_SCORE_REPLY: {
        const com_proto_score_reply_t *x = &a->u.score_reply, *y = &b->u.score_reply;
        return s_str_eq(x->model, y->model, true) && s_tensor_eq(&x->scores, &y->scores) &&
               s_u32s_eq(x->ntok, y->ntok, x->scores.n) && s_use_eq(&x->usage, &y->usage) &&
               s_tm_eq(&x->timing, &y->timing);
    }
    case COM_PROTO_TOKENIZE_REPLY: {
        const com_proto_tokenize_reply_t *x = &a->u.tokenize_reply, *y = &b->u.tokenize_reply;
        return s_str_eq(x->model, y->model, true) && s_inputs_eq(&x->ids, &y->ids) &&
               s_use_eq(&x->usage, &y->usage) && s_tm_eq(&x->timing, &y->timing);
    }
    case COM_PROTO_INFO_REPLY: {
        const com_proto_info_reply_t *x = &a->u.info_reply, *y = &b->u.info_reply;
        return x->ok == y->ok && x->workers == y->workers && s_str_eq(x->model, y->model, true) &&
               s_str_eq(x->family, y->family, true) && s_str_eq(x->version, y->version, true) &&
               x->dim == y->dim && x->max_seq == y->max_seq && x->load_tokens == y->load_tokens &&
               s_use_eq(&x->usage, &y->usage) && s_tm_eq(&x->timing, &y->timing);
    }
    case COM_PROTO_ERROR: {
        const com_proto_error_msg_t *x = &a->u.error, *y = &b->u.error;
        return x->code == y->code && s_str_eq(x->msg, y->msg, false) &&
               s_use_eq(&x->usage, &y->usage) && s_tm_eq(&x->timing, &y->timing);
    }
    case COM_PROTO_READY: {
        const com_proto_ready_t *x = &a->u.ready, *y = &b->u.ready;
        return s_str_eq(x->worker_id, y->worker_id, false) && s_str_eq(x->model, y->model, false) &&
               s_str_eq(x->family, y->family, false) && s_str_eq(x->device, y->device, false) &&
               x->max_batch_tokens == y->max_batch_tokens && x->dim == y->dim &&
               x->max_seq == y->max_seq && x->credits == y->credits && x->task == y->task;
    }
    case COM_PROTO_CHUNK: {
        const com_proto_chunk_t *x = &a->u.chunk, *y = &b->u.chunk;
        return x->chunk_id == y->chunk_id && x->attempt == y->attempt &&
               s_inputs_eq(&x->in, &y->in) && (x->seg == NULL) == (y->seg == NULL) &&
               s_u32s_eq(x->seg, y->seg, x->in.n) && x->normalize == y->normalize &&
               x->dims == y->dims && x->dtype == y->dtype && x->deadline_ms == y->deadline_ms;
    }
    case COM_PROTO_RESULT: {
        const com_proto_result_t *x = &a->u.result, *y = &b->u.result;
        if (x->chunk_id != y->chunk_id || x->attempt != y->attempt || x->failed != y->failed ||
            !s_tm_eq(&x->timing, &y->timing))
            return false;
        if (x->failed)
            return x->err_code == y->err_code && s_str_eq(x->err_msg, y->err_msg, false);
        return s_tensor_eq(&x->emb, &y->emb);
    }
    case COM_PROTO_HEARTBEAT:
        return a->u.hb.load_tokens == b->u.hb.load_tokens &&
               a->u.hb.load_seqs == b->u.hb.load_seqs &&
               a->u.hb.batches_done == b->u.hb.batches_done && a->u.hb.credits == b->u.hb.credits;
    case COM_PROTO_DRAIN:
        return s_str_eq(a->u.drain.reason, b->u.drain.reason, true);
    case COM_PROTO_DISCONNECT:
        return s_str_eq(a->u.disconnect.reason, b->u.disconnect.reason, true);
    default:
        return false;
    }
}

/* ---------------------------------------------------------------- tensor packing */

void com_proto_tensor_pack(const float *src, size_t count, com_proto_dtype_t dt, void *dst) {
    uint8_t *o = (uint8_t *)dst;
    for (size_t i = 0; i < count; i++) {
        if (dt == COM_PROTO_F16) {
            uint16_t h = com_half_from_f32(src[i]);
            o[2 * i] = (uint8_t)h;
            o[2 * i + 1] = (uint8_t)(h >> 8);
        } else {
            uint32_t x;
            memcpy(&x, &src[i], sizeof x);
            o[4 * i] = (uint8_t)x;
            o[4 * i + 1] = (uint8_t)(x >> 8);
            o[4 * i + 2] = (uint8_t)(x >> 16);
            o[4 * i + 3] = (uint8_t)(x >> 24);
        }
    }
}

void com_proto_tensor_unpack(const com_proto_tensor_t *t, float *dst) {
    const uint8_t *p = (const uint8_t *)t->data;
    size_t count = (size_t)t->n * t->dim;
    for (size_t i = 0; i < count; i++) {
        if (t->dtype == COM_PROTO_F16) {
            dst[i] = com_half_to_f32((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
        } else {
            uint32_t x = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) |
                         ((uint32_t)p[4 * i + 2] << 16) | ((uint32_t)p[4 * i + 3] << 24);
            memcpy(&dst[i], &x, sizeof x);
        }
    }
}
