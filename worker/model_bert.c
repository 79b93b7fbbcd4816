/* worker/model_bert.c — BERT weights and forward pass on the CPU, fp32 (see model_bert.h).
 *
 * Weights: tensor names with or without the "bert." prefix; each is com_safetensors_expect-ed
 * with the shape the config implies. An f32 tensor that is 4-byte aligned in the mapping is used
 * in place (the mapping stays open for the model's life); anything else (f16, bf16, unaligned) is
 * converted into an owned fp32 copy. Q, K and V are always concatenated into one owned
 * [3*hidden, hidden] weight and [3*hidden] bias so one GEMM computes all three.
 *
 * Workspace (planned once, T = max_tokens, H = hidden, I = intermediate):
 *   h   [T, H]             residual stream / layer output
 *   big [T, max(3H, I)]    QKV, later the FFN intermediate (never live at the same time)
 *   ctx [T, H]             attention output, later the FFN down-projection output
 *   tmp [T, H]             attention output projection
 *   att [n_parts][scratch] per-thread attention scratch (sequences up to max positions)
 *   rows [T + 1]           the pooled rows (CLS or last token), then [0, 1, ..., n_seqs]
 * With CLS or last-token pooling the last layer computes, past its QKV projection (K and V of
 * every token are still needed), only the one row a sequence the pooling reads: attention for
 * that query alone (kern_attention_rows_ref), then the output projection, FFN and LayerNorms on
 * [n_seqs, H] (for a 6-layer model about a seventh of the pass's FLOPs fewer).
 * All parallelism is the pool's: the GEMMs are split by rows (each part one single-threaded
 * cblas_sgemm over its rows, reading the whole weight), the element-wise ops by rows, attention by
 * (seq, head) units. OpenBLAS must run single-threaded (the engine sets 1 thread): measured on
 * 2 cores, OpenBLAS's own threads plus concurrent calls from the pool were 4x slower. Results can
 * differ in the last bits between part counts only through the GEMM's blocking of rows.
 * Threading: the model is immutable after load; the workspace belongs to the calling thread. */
#include "worker/model_bert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/safetensors.h"
#include "kernels/add_layernorm.h"
#include "kernels/attention.h"
#include "kernels/bias_gelu.h"
#include "kernels/embed_layernorm.h"
#include "kernels/linear.h"
#include "kernels/pool.h"

typedef struct s_layer {
    const float *wqkv, *bqkv; /* [3H, H], [3H] (owned copies) */
    const float *wo, *bo;     /* [H, H], [H] */
    const float *ln1_g, *ln1_b;
    const float *w1, *b1; /* [I, H], [I] */
    const float *w2, *b2; /* [H, I], [H] */
    const float *ln2_g, *ln2_b;
} s_layer_t;

struct wrk_bert {
    com_model_info_t info;
    com_safetensors_t *st;
    const float *word, *pos, *type; /* [V, H], [P, H], [TV, H] */
    const float *emb_ln_g, *emb_ln_b;
    s_layer_t *layers; /* [num_layers] */
    float **owned;     /* fp32 copies to free */
    size_t n_owned, cap_owned;
};

struct wrk_bert_ws {
    int32_t max_tokens, n_parts;
    float *h, *big, *ctx, *tmp;
    float *att;        /* [n_parts * att_stride] */
    size_t att_stride; /* floats per part */
    int32_t *rows;     /* [max_tokens + 1] */
};

static float *s_own(wrk_bert_t *m, size_t n, com_error_t *err) {
    if (m->n_owned == m->cap_owned) {
        size_t cap = m->cap_owned ? 2 * m->cap_owned : 64;
        float **p = realloc(m->owned, cap * sizeof *p);
        if (!p) {
            com_error_set(err, COM_ENOMEM, "bert: out of memory");
            return NULL;
        }
        m->owned = p;
        m->cap_owned = cap;
    }
    float *buf = malloc(n * sizeof(float));
    if (!buf) {
        com_error_set(err, COM_ENOMEM, "bert: out of memory (%zu floats)", n);
        return NULL;
    }
    m->owned[m->n_owned++] = buf;
    return buf;
}

/* Finds prefix+name with the given shape; returns an fp32 view (in place or an owned copy), or
 * NULL with the error set. With dst, converts into dst instead (for the fused QKV). */
static const float *s_get(wrk_bert_t *m, const char *prefix, const char *name, int32_t ndim,
                          int64_t d0, int64_t d1, float *dst, com_error_t *err) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    const int64_t dims[2] = {d0, d1};
    const com_tensor_t *t = com_safetensors_expect(m->st, full, ndim, dims, err);
    if (!t) {
        if (err && err->code == 0)
            com_error_set(err, COM_EFORMAT, "tensor %s missing or mis-shaped", full);
        return NULL;
    }
    size_t n = com_tensor_numel(t);
    if (!dst && t->dtype == COM_DTYPE_F32 && ((uintptr_t)t->data % sizeof(float)) == 0)
        return t->data;
    if (!dst && !(dst = s_own(m, n, err)))
        return NULL;
    int rc = com_tensor_to_f32(t, dst, n, err);
    if (rc != 0) {
        com_error_prefix(err, rc, "tensor %s", full);
        return NULL;
    }
    return dst;
}

int wrk_bert_new(const com_model_info_t *info, const char *weights_path, wrk_bert_t **out,
                 com_error_t *err) {
    *out = NULL;
    int rc;
    if (info->family != COM_FAMILY_BERT)
        return com_error_set(err, COM_EUNSUPPORTED, "bert: model family %d is not BERT",
                             (int)info->family);
    if (info->hidden_act != COM_ACT_GELU_ERF)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "bert: activation %d not supported by the CPU engine (only gelu)",
                             (int)info->hidden_act);
    if (info->hidden_size != info->num_heads * info->head_dim || info->hidden_size < 1)
        return com_error_set(err, COM_EFORMAT, "bert: hidden %d != heads %d x head_dim %d",
                             (int)info->hidden_size, (int)info->num_heads, (int)info->head_dim);
    wrk_bert_t *m = calloc(1, sizeof *m);
    if (!m)
        return com_error_set(err, COM_ENOMEM, "bert: out of memory");
    m->info = *info;
    if ((rc = com_safetensors_open(weights_path, &m->st, err)) != 0)
        goto err;
    m->layers = calloc((size_t)info->num_layers, sizeof *m->layers);
    if (!m->layers) {
        rc = com_error_set(err, COM_ENOMEM, "bert: out of memory");
        goto err;
    }
    const char *pre = com_safetensors_find(m->st, "embeddings.word_embeddings.weight") ? ""
                      : com_safetensors_find(m->st, "bert.embeddings.word_embeddings.weight")
                          ? "bert."
                          : "";
    const int64_t H = info->hidden_size, I = info->intermediate_size;
#define GET(dst, name, nd, a, b)                                                                   \
    do {                                                                                           \
        if (!((dst) = s_get(m, pre, (name), (nd), (a), (b), NULL, err))) {                         \
            rc = err ? err->code : COM_EFORMAT;                                                    \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)
    GET(m->word, "embeddings.word_embeddings.weight", 2, info->vocab_size, H);
    GET(m->pos, "embeddings.position_embeddings.weight", 2, info->max_position_embeddings, H);
    GET(m->type, "embeddings.token_type_embeddings.weight", 2, info->type_vocab_size, H);
    GET(m->emb_ln_g, "embeddings.LayerNorm.weight", 1, H, 0);
    GET(m->emb_ln_b, "embeddings.LayerNorm.bias", 1, H, 0);
    for (int32_t l = 0; l < info->num_layers; l++) {
        s_layer_t *L = &m->layers[l];
        char n[160];
        float *wqkv = s_own(m, (size_t)(3 * H * H), err);
        float *bqkv = wqkv ? s_own(m, (size_t)(3 * H), err) : NULL;
        if (!bqkv) {
            rc = COM_ENOMEM;
            goto err;
        }
        static const char *const qkv[3] = {"query", "key", "value"};
        for (int j = 0; j < 3; j++) {
            snprintf(n, sizeof n, "encoder.layer.%d.attention.self.%s.weight", (int)l, qkv[j]);
            if (!s_get(m, pre, n, 2, H, H, wqkv + j * H * H, err)) {
                rc = err ? err->code : COM_EFORMAT;
                goto err;
            }
            snprintf(n, sizeof n, "encoder.layer.%d.attention.self.%s.bias", (int)l, qkv[j]);
            if (!s_get(m, pre, n, 1, H, 0, bqkv + j * H, err)) {
                rc = err ? err->code : COM_EFORMAT;
                goto err;
            }
        }
        L->wqkv = wqkv;
        L->bqkv = bqkv;
#define GETL(dst, fmt, nd, a, b)                                                                   \
    do {                                                                                           \
        snprintf(n, sizeof n, fmt, (int)l);                                                        \
        GET(dst, n, nd, a, b);                                                                     \
    } while (0)
        GETL(L->wo, "encoder.layer.%d.attention.output.dense.weight", 2, H, H);
        GETL(L->bo, "encoder.layer.%d.attention.output.dense.bias", 1, H, 0);
        GETL(L->ln1_g, "encoder.layer.%d.attention.output.LayerNorm.weight", 1, H, 0);
        GETL(L->ln1_b, "encoder.layer.%d.attention.output.LayerNorm.bias", 1, H, 0);
        GETL(L->w1, "encoder.layer.%d.intermediate.dense.weight", 2, I, H);
        GETL(L->b1, "encoder.layer.%d.intermediate.dense.bias", 1, I, 0);
        GETL(L->w2, "encoder.layer.%d.output.dense.weight", 2, H, I);
        GETL(L->b2, "encoder.layer.%d.output.dense.bias", 1, H, 0);
        GETL(L->ln2_g, "encoder.layer.%d.output.LayerNorm.weight", 1, H, 0);
        GETL(L->ln2_b, "encoder.layer.%d.output.LayerNorm.bias", 1, H, 0);
#undef GETL
    }
#undef GET
    *out = m;
    return 0;
err:
    if (rc == 0)
        rc = COM_EINTERNAL;
    com_error_prefix(err, rc, "%s", weights_path);
    wrk_bert_destroy(&m);
    return rc;
}

void wrk_bert_destroy(wrk_bert_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_bert_t *m = *self_p;
    for (size_t i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    free(m->owned);
    free(m->layers);
    com_safetensors_destroy(&m->st);
    free(m);
    *self_p = NULL;
}

static float *s_alloc(size_t n) {
    /* 64-byte aligned: whole cache lines for the GEMMs */
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

int wrk_bert_ws_new(const wrk_bert_t *m, int32_t max_tokens, int32_t n_parts, wrk_bert_ws_t **out,
                    com_error_t *err) {
    *out = NULL;
    if (max_tokens < 1 || n_parts < 1)
        return com_error_set(err, COM_EINVAL, "bert workspace: max_tokens %d, parts %d",
                             (int)max_tokens, (int)n_parts);
    const com_model_info_t *in = &m->info;
    wrk_bert_ws_t *ws = calloc(1, sizeof *ws);
    if (!ws)
        return com_error_set(err, COM_ENOMEM, "bert workspace: out of memory");
    ws->max_tokens = max_tokens;
    ws->n_parts = n_parts;
    const size_t T = (size_t)max_tokens, H = (size_t)in->hidden_size;
    const size_t I = (size_t)in->intermediate_size, wide = 3 * H > I ? 3 * H : I;
    const kern_attention_params_t ap = {in->num_heads, in->num_heads, in->head_dim, 0, false};
    ws->att_stride =
        (kern_attention_ref_scratch_floats(&ap, in->max_position_embeddings) + 15) & ~(size_t)15;
    ws->h = s_alloc(T * H);
    ws->big = s_alloc(T * wide);
    ws->ctx = s_alloc(T * H);
    ws->tmp = s_alloc(T * H);
    ws->att = s_alloc(ws->att_stride * (size_t)n_parts);
    ws->rows = malloc((T + 1) * sizeof *ws->rows);
    if (!ws->h || !ws->big || !ws->ctx || !ws->tmp || !ws->att || !ws->rows) {
        wrk_bert_ws_destroy(&ws);
        return com_error_set(err, COM_ENOMEM, "bert workspace: cannot allocate %zu MiB",
                             (T * (3 * H + wide) * sizeof(float)) >> 20);
    }
    *out = ws;
    return 0;
}

void wrk_bert_ws_destroy(wrk_bert_ws_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_bert_ws_t *ws = *self_p;
    free(ws->h);
    free(ws->big);
    free(ws->ctx);
    free(ws->tmp);
    free(ws->att);
    free(ws->rows);
    free(ws);
    *self_p = NULL;
}

/* ---- the parallel steps: each splits rows (or attention units) by part ---- */

typedef struct s_step {
    const wrk_bert_t *m;
    wrk_bert_ws_t *ws;
    const s_layer_t *L;
    const int32_t *ids, *types, *cu;
    int32_t n_seqs, n_tokens;
    bool pooled_rows; /* attention for the pooled rows only (ws->rows): ctx row s is sequence s's */
} s_step_t;

static void s_rows(int32_t n, int32_t part, int32_t n_parts, int32_t *r0, int32_t *r1) {
    *r0 = (int32_t)((int64_t)n * part / n_parts);
    *r1 = (int32_t)((int64_t)n * (part + 1) / n_parts);
}

static void s_embed_part(void *arg, int32_t part, int32_t n_parts) {
    const s_step_t *s = arg;
    const com_model_info_t *in = &s->m->info;
    int32_t r0, r1;
    s_rows(s->n_tokens, part, n_parts, &r0, &r1);
    kern_embed_layernorm_ref(s->ws->h, s->ids, s->types, s->cu, s->n_seqs, r0, r1, s->m->word,
                             s->m->pos, s->m->type, s->m->emb_ln_g, s->m->emb_ln_b, in->hidden_size,
                             in->layer_norm_eps);
}

static void s_attention_part(void *arg, int32_t part, int32_t n_parts) {
    const s_step_t *s = arg;
    const com_model_info_t *in = &s->m->info;
    const int64_t H = in->hidden_size;
    const kern_attention_params_t ap = {in->num_heads, in->num_heads, in->head_dim,
                                        1.0f / sqrtf((float)in->head_dim), false};
    const float *qkv = s->ws->big;
    float *scratch = s->ws->att + (size_t)part * s->ws->att_stride;
    if (s->pooled_rows)
        kern_attention_rows_ref(&ap, s->ws->ctx, H, qkv, 3 * H, qkv + H, 3 * H, qkv + 2 * H, 3 * H,
                                s->cu, s->ws->rows, s->n_seqs, part, n_parts, scratch);
    else
        kern_attention_ref(&ap, s->ws->ctx, H, qkv, 3 * H, qkv + H, 3 * H, qkv + 2 * H, 3 * H,
                           s->cu, s->n_seqs, part, n_parts, scratch);
}

static void s_attn_ln_part(void *arg, int32_t part, int32_t n_parts) {
    const s_step_t *s = arg;
    const int32_t H = s->m->info.hidden_size;
    int32_t r0, r1;
    s_rows(s->n_tokens, part, n_parts, &r0, &r1);
    const size_t o = (size_t)r0 * H;
    kern_add_layernorm_ref(s->ws->h + o, s->ws->tmp + o, s->L->bo, s->ws->h + o, s->L->ln1_g,
                           s->L->ln1_b, r1 - r0, H, s->m->info.layer_norm_eps);
}

static void s_gelu_part(void *arg, int32_t part, int32_t n_parts) {
    const s_step_t *s = arg;
    const int32_t I = s->m->info.intermediate_size;
    int32_t r0, r1;
    s_rows(s->n_tokens, part, n_parts, &r0, &r1);
    kern_bias_gelu_ref(s->ws->big + (size_t)r0 * I, s->L->b1, r1 - r0, I);
}

static void s_ffn_ln_part(void *arg, int32_t part, int32_t n_parts) {
    const s_step_t *s = arg;
    const int32_t H = s->m->info.hidden_size;
    int32_t r0, r1;
    s_rows(s->n_tokens, part, n_parts, &r0, &r1);
    const size_t o = (size_t)r0 * H;
    kern_add_layernorm_ref(s->ws->h + o, s->ws->ctx + o, s->L->b2, s->ws->h + o, s->L->ln2_g,
                           s->L->ln2_b, r1 - r0, H, s->m->info.layer_norm_eps);
}

typedef struct s_gemm {
    float *y;
    const float *x, *w, *b;
    int32_t n, in, out;
} s_gemm_t;

static void s_gemm_part(void *arg, int32_t part, int32_t n_parts) {
    const s_gemm_t *g = arg;
    int32_t r0, r1;
    s_rows(g->n, part, n_parts, &r0, &r1);
    if (r1 > r0)
        kern_linear_ref(g->y + (size_t)r0 * g->out, g->x + (size_t)r0 * g->in, g->w, g->b, r1 - r0,
                        g->in, g->out);
}

static void s_run(wrk_tpool_t *pool, wrk_tpool_fn fn, void *arg) {
    if (pool)
        wrk_tpool_run(pool, fn, arg, 0);
    else
        fn(arg, 0, 1);
}

/* y = x W^T (+ b), rows split across the pool's parts (each a single-threaded sgemm). */
static void s_linear(wrk_tpool_t *pool, float *y, const float *x, const float *w, const float *b,
                     int32_t n, int32_t in, int32_t out) {
    s_gemm_t g = {y, x, w, b, n, in, out};
    s_run(pool, s_gemm_part, &g);
}

int wrk_bert_forward(const wrk_bert_t *m, wrk_bert_ws_t *ws, wrk_tpool_t *pool,
                     const int32_t *token_ids, const int32_t *type_ids, const int32_t *cu_seqlens,
                     int32_t n_seqs, int32_t n_tokens, int32_t out_dim, bool normalize, float *out,
                     com_error_t *err) {
    const com_model_info_t *in = &m->info;
    if (n_seqs < 1 || n_tokens < 1 || n_tokens > ws->max_tokens || cu_seqlens[n_seqs] != n_tokens ||
        out_dim < 1 || out_dim > in->hidden_size)
        return com_error_set(err, COM_EINVAL,
                             "bert forward: %d seqs, %d tokens (workspace %d), out_dim %d",
                             (int)n_seqs, (int)n_tokens, (int)ws->max_tokens, (int)out_dim);
    if (pool && wrk_tpool_size(pool) > ws->n_parts)
        return com_error_set(err, COM_EINVAL, "bert forward: pool of %d parts, workspace for %d",
                             (int)wrk_tpool_size(pool), (int)ws->n_parts);
    const int32_t H = in->hidden_size, I = in->intermediate_size;
    const kern_pool_mode_t mode = in->pooling == COM_POOL_CLS    ? KERN_POOL_CLS
                                  : in->pooling == COM_POOL_LAST ? KERN_POOL_LAST
                                                                 : KERN_POOL_MEAN;
    const bool one_row = mode != KERN_POOL_MEAN;
    s_step_t s = {m, ws, NULL, token_ids, type_ids, cu_seqlens, n_seqs, n_tokens, false};
    s_run(pool, s_embed_part, &s);
    for (int32_t l = 0; l < in->num_layers; l++) {
        const s_layer_t *L = &m->layers[l];
        s.L = L;
        s_linear(pool, ws->big, ws->h, L->wqkv, L->bqkv, n_tokens, H, 3 * H);
        /* the last layer of a one-row pooling: from its attention on, row s is sequence s's
         * pooled row (see the top of this file) */
        s.pooled_rows = one_row && l == in->num_layers - 1;
        if (s.pooled_rows)
            for (int32_t q = 0; q < n_seqs; q++)
                ws->rows[q] = kern_pool_row(cu_seqlens, q, mode);
        s_run(pool, s_attention_part, &s);
        if (s.pooled_rows) { /* the residual rows moved up in place: rows[q] >= q, increasing */
            for (int32_t q = 0; q < n_seqs; q++)
                if (ws->rows[q] != q)
                    memcpy(ws->h + (size_t)q * H, ws->h + (size_t)ws->rows[q] * H,
                           (size_t)H * sizeof *ws->h);
            s.n_tokens = n_seqs;
        }
        const int32_t n = s.n_tokens;
        s_linear(pool, ws->tmp, ws->ctx, L->wo, NULL, n, H, H);
        s_run(pool, s_attn_ln_part, &s);
        s_linear(pool, ws->big, ws->h, L->w1, NULL, n, H, I);
        s_run(pool, s_gelu_part, &s);
        s_linear(pool, ws->ctx, ws->big, L->w2, NULL, n, I, H);
        s_run(pool, s_ffn_ln_part, &s);
    }
    if (one_row) { /* each sequence's row is row s: pool one-token sequences */
        for (int32_t q = 0; q <= n_seqs; q++)
            ws->rows[q] = q;
        kern_pool_ref(out, ws->h, ws->rows, n_seqs, H, KERN_POOL_CLS, out_dim, normalize);
    } else {
        kern_pool_ref(out, ws->h, cu_seqlens, n_seqs, H, KERN_POOL_MEAN, out_dim, normalize);
    }
    return 0;
}
