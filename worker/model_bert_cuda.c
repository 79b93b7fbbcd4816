/* worker/model_bert_cuda.c — BERT weights and forward pass on a CUDA device (see
 * model_bert_cuda.h; the CPU twin is worker/model_bert.c, whose tensor naming it follows).
 *
 * Weights: names with or without "bert."; each com_safetensors_expect-ed with the configured
 * shape, read as fp32, copied to the device and converted there to the model's 16-bit type
 * (kern_convert_cuda, round to nearest even); Q, K, V concatenated into Wqkv [3H, H] / bqkv
 * [3H]. LayerNorm gamma/beta stay fp32. The 16-bit type (dtype, kern_dtype_t) of the weights and of
 * every 16-bit activation below ("16" in the table): binary16 when worker/bert_range.h bounds every
 * such value inside its range (checked in a first pass over the weights, s_load), else bf16.
 *
 * Activations per lane (T = the largest bucket, H hidden, I intermediate), all planned here,
 * zeroed once; the tuner times in lane 0's:
 *   in     int32 [4 + 4T + 4    the input area (wrk_bert_cuda_input_words; + the attention's
 *                 (+ 4 cap)]    tile table, 4 kern_attention_tiles_cap(T) words, from 8192)
 *   h32    fp32  [T, H]         residual stream (LayerNorm outputs, kept in fp32); with a
 *                               16-bit stream only the last LayerNorm writes it (the pooling
 *                               reads it) and, with r16, the embedding's (the first sublayer
 *                               end reads it)
 *   r16    f16   [T, H]         the residual stream with residual f16 beside bf16 activations
 *                               (else not allocated)
 *   hb     16    [T, H]         the LayerNorm outputs rounded to 16 bits: the next GEMM's input,
 *                               and the residual stream itself with residual bf16 (bf16
 *                               activations) or f16 (binary16 activations)
 *   big    16    [T, max(3H,I)] QKV, later the FFN intermediate; after the last layer the
 *                               pooled fp32 embeddings when forward is given no destination
 *                               (the tuner's timing runs)
 *   ctx    16    [T, H]         attention output
 *   tmp    16    [T, H]         the output / FFN-down GEMM's result (+ bias) when the plan
 *                               runs the residual + LayerNorm as a kernel of its own (ln scratch)
 *   ws     32 MiB               cuBLASLt workspace (every plan is chosen to fit it)
 * GEMM algorithms: per bucket and GEMM, the fastest of cuBLASLt's heuristic candidates and our
 * own kernels (kernels/linear.h), timed at start (s_tune; checked in the whole forward pass at
 * the latency buckets) or taken from the tuning cache (worker/tune_cache.h).
 * Forward pass: copy the batch's input area in (kern_copy_cuda, when given one); embedding +
 * LayerNorm; per layer (bucket T): qkv = hb Wqkv^T + bqkv (BIAS epilogue); ctx = attention;
 * h32,hb = LN(ctx Wo^T + bo + h32) (BIAS_ADD_LN epilogue: one kernel when our fused Hopper GEMM
 * wins the timing, else the GEMM into tmp and the residual + LayerNorm kernel);
 * big = GELU(hb W1^T + b1) (one kernel when ours wins the timing, else cuBLASLt + the GELU
 * kernel); h32,hb = LN(big W2^T + b2 + h32) (BIAS_ADD_LN again). With r16 the sublayer ends
 * write r16 and hb (the first reads h32, the last writes h32 too); when hb is the stream they
 * read and write hb alone (hb = LN(. + hb); the last one writes h32 too). Then
 * pooling from h32 into forward's destination. Padding rows [n_tokens, T) of hb are zeros
 * (embedding kernel) and stay finite everywhere else (the LayerNorms do not write them). Thread:
 * the engine's submitting thread; stream: the one passed to forward.
 *
 * The folded LayerNorm (opts.fold; kernels/row_stats.h, docs/engine.md), at the buckets of up to
 * fold_max tokens (s_folded; the others run the pass above, with the plain weights): no sublayer
 * end normalises. Each writes its pre-LN sum x in binary16 and per-row statistics (sa after
 * attention, sf after the FFN; epilogue BIAS_ADD_STATS), and whoever reads LN(x) takes it from
 * x: the QKV (layers >= 1, S_QKVF) and FFN-up GEMMs run on x with W' = W diag(gamma) and
 * bias b + W beta, normalising per row in their epilogue (LN_BIAS[_GELU]: rstd (x W'^T - mean c)
 * + b', c = W' row sums), the next sublayer end and the pooling normalise their input on the fly.
 * Layer 0 reads the embedding's LayerNorm output as before (S_QKV, plain residual hb). Buffers:
 * hb = the embedding output, then x after each FFN; tmp = x after each attention. So the pass
 * has no LayerNorm of its own: 2 fewer nodes per layer (or no cluster barrier in a fused
 * sublayer end), at the price of our GEMMs being the only candidates for four of its five
 * GEMMs. The pre-LN sums and the folded weights are bounded at load like everything else
 * (fold_max, worker/bert_range.h): the fold needs binary16 to hold them.
 *
 * The fused FFN (opts.ffn; kernels/ffn.h), at the unfolded buckets of at least ffn_min tokens
 * (s_ffn_fused): the FFN-up GEMM, its GELU and the FFN-down sublayer end are one kernel,
 * hb (and h32, last layer) = LN(GELU(hb W1^T + b1) W2^T + b2 + hb), so big never holds the
 * [T, I] intermediate (its largest traffic). The kernel's residual is its input, so only
 * buckets whose stream is hb itself qualify (residual f16 with binary16 activations, or bf16):
 * with fp32 or r16 the stream is another buffer. Its operands are those s_sublayer_end gives
 * the GEMM pair (one source for both paths); those buckets have no S_FF1 / S_FF2 plans.
 *
 * The pruned last layer (opts.prune; docs/engine.md): a pooling that reads one row a sequence
 * (CLS, last token) needs, past the last layer's attention, only those rows. At the unfolded
 * buckets with the hb stream (as the fused FFN), a bucket of T tokens gets a tail of Ts rows
 * (s_tail_rows: the smallest bucket of at least T / 8 tokens, at most T / 2) and three more
 * plans of Ts rows (S_TOUT, S_TFF1, S_TFF2). A chunk of at most Ts sequences may then run the
 * pruned pass (wrk_bert_cuda_forward's pruned): the last attention computes those rows alone
 * (kern_attention_pooled_cuda, where the GPU runs it), kern_pool_rows_cuda
 * gathers each sequence's pooled row of ctx and of hb into big (ctx_c, res_c: rows [0, Ts),
 * the rest zeroed), the output projection's sublayer end, FFN-up and FFN-down's sublayer end
 * run on those Ts rows (the FFN intermediate after them in big, the LayerNorms' scratch tmp,
 * the last one writing h32's first rows too), and the pooling reads row s of h32 as sequence
 * s (a one-token sequence each: ident, 0, 1, 2, ...). Everything before is the plain pass. */
#include "worker/model_bert_cuda.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/half.h"
#include "common/log.h"
#include "common/safetensors.h"
#include "kernels/add_layernorm.h"
#include "kernels/attention.h"
#include "kernels/convert.h"
#include "kernels/copy.h"
#include "kernels/embed_layernorm.h"
#include "kernels/ffn.h"
#include "kernels/kern_cuda.h"
#include "kernels/linear.h"
#include "kernels/pool.h"
#include "kernels/qkv_attention.h"
#include "kernels/row_stats.h"
#include "worker/bert_range.h"
#include "worker/tune_cache.h"

#define S_WORKSPACE_BYTES ((size_t)32 << 20)
/* the largest bound (worker/bert_range.h) a value stored in binary16 may have: its largest finite
 * value is 65504, and the margin covers the fp32 arithmetic's own rounding before the store */
#define S_F16_LIMIT 65000.0
/* buckets up to this many tokens get their GEMM choices checked inside the whole forward pass */
#define S_CONTEXT_MAX 256

/* S_QKVF: the folded pass's QKV of layers >= 1 (NULL otherwise); S_TOUT, S_TFF1, S_TFF2: the
 * pruned last layer's output projection and FFN on its tail of pooled rows (NULL otherwise) */
enum { S_QKV = 0, S_OUT, S_FF1, S_FF2, S_QKVF, S_TOUT, S_TFF1, S_TFF2, S_N_GEMM };

typedef struct s_layer {
    uint16_t *wqkv, *bqkv; /* [3H, H], [3H] bf16 (plain: NULL when every bucket folds, l >= 1) */
    uint16_t *wo, *bo;     /* [H, H], [H] */
    float *ln1_g, *ln1_b;  /* [H] fp32 */
    uint16_t *w1, *b1;     /* [I, H], [I] */
    uint16_t *w2, *b2;     /* [H, I], [H] */
    float *ln2_g, *ln2_b;
    /* fold: the QKV (layers >= 1) and FFN-up weights with the LayerNorm before them folded in
     * (w1 and b1 plain: NULL when every bucket folds), and cqkv, c1 [3H], [I] fp32, the rows'
     * sums of wqkv_f and w1_f as stored (binary16) */
    uint16_t *wqkv_f, *bqkv_f, *w1_f, *b1_f;
    float *cqkv, *c1;
} s_layer_t;

/* One lane's activations (the header comment's list): a forward pass reads and writes only its
 * lane's, so passes on different lanes (and streams) may run at the same time. */
typedef struct s_acts {
    int32_t *in;
    float *h32;
    uint16_t *hb, *r16, *big, *ctx, *tmp;
    float *sa, *sf; /* fold: [T, H / 64, 2] statistics of tmp (after attention) and hb (FFN) */
    void *ws;
} s_acts_t;

struct wrk_bert_cuda {
    com_model_info_t info;
    int32_t n_buckets;
    int32_t *buckets;           /* [n_buckets] ascending */
    kern_linear_plan_t **plans; /* [n_buckets * S_N_GEMM] */
    cublasLtHandle_t lt;
    uint16_t *word, *pos, *type; /* bf16 tables */
    float *emb_g, *emb_b;
    s_layer_t *layers;
    void **allocs; /* every cudaMalloc, for destroy */
    size_t n_allocs, cap_allocs, bytes;
    int32_t n_lanes;
    s_acts_t *lanes;                   /* [n_lanes]; the tuner uses lane 0 */
    kern_dtype_t dtype;                /* of the weights and 16-bit activations */
    kern_residual_type_t residual;     /* the residual stream: h32, r16 or hb alone */
    bool fold;                         /* the folded LayerNorm (the header comment) */
    int32_t fold_max;                  /* its largest bucket (INT32_MAX: every one) */
    int32_t fuse_max;                  /* the largest bucket with QKV + attention fused (0: none) */
    int32_t ffn_from;                  /* unfolded buckets of >= this many tokens run the fused
                                          FFN (INT32_MAX: none) */
    int32_t *tail;                     /* [n_buckets]: the pruned last layer's rows (0: none) */
    bool pooled_attention;             /* the pruned layer's attention for its pooled rows alone
                                          (kern_attention_pooled_cuda; else every row's) */
    int32_t *ident;                    /* device [largest tail + 1]: 0, 1, 2, ... (NULL
                                          without tails) */
    int32_t plans_timed, plans_cached; /* s_tune: timed at start / from the tuning cache */
};

static int s_dalloc(wrk_bert_cuda_t *m, size_t bytes, void **p, com_error_t *err) {
    if (m->n_allocs == m->cap_allocs) {
        size_t cap = m->cap_allocs ? 2 * m->cap_allocs : 128;
        void **a = realloc(m->allocs, cap * sizeof *a);
        if (!a)
            return com_error_set(err, COM_ENOMEM, "bert cuda: out of memory");
        m->allocs = a;
        m->cap_allocs = cap;
    }
    KERN_CUDA_TRY(cudaMalloc(p, bytes ? bytes : 16), err);
    m->allocs[m->n_allocs++] = *p;
    m->bytes += bytes;
    return 0;
}

/* Copies n fp32 values to the device into dst (allocated): as fp32, or (as16) in the model's
 * 16-bit type, converted on the device from the fp32 copy in stage ([n] or more floats) —
 * the host's scalar conversion took ~5 ns a value, 0.6 s of BERT-base's start-up. Enqueued
 * on the legacy stream: the next upload's cudaMemcpy waits for the conversion reading stage,
 * and s_load synchronises before anything runs on the engine's own streams. */
static int s_upload(wrk_bert_cuda_t *m, const float *src, size_t n, bool as16, float *stage,
                    void **dst, com_error_t *err) {
    int rc = s_dalloc(m, n * (as16 ? 2 : 4), dst, err);
    if (rc != 0)
        return rc;
    KERN_CUDA_TRY(cudaMemcpy(as16 ? (void *)stage : *dst, src, n * 4, cudaMemcpyHostToDevice), err);
    if (!as16)
        return 0;
    return kern_convert_cuda(*dst, stage, (int64_t)n,
                             m->dtype == KERN_DTYPE_F16 ? KERN_OUT_F16 : KERN_OUT_BF16, NULL, err);
}

/* Reads prefix+name ([d0] or [d0, d1]) as fp32 into host buf (n values). */
static int s_read(const com_safetensors_t *st, const char *prefix, const char *name, int32_t nd,
                  int64_t d0, int64_t d1, float *buf, com_error_t *err) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    const int64_t dims[2] = {d0, d1};
    const com_tensor_t *t = com_safetensors_expect(st, full, nd, dims, err);
    if (!t)
        return err && err->code ? err->code
                                : com_error_set(err, COM_EFORMAT, "tensor %s missing", full);
    size_t n = com_tensor_numel(t);
    int rc = com_tensor_to_f32(t, buf, n, err);
    if (rc != 0)
        return com_error_prefix(err, rc, "tensor %s", full);
    return 0;
}

/* Whether some bucket runs the plain pass (so the plain QKV and FFN-up weights must exist):
 * nothing is folded, or the largest bucket is past fold_max. The fused FFN's buckets are among
 * them (never folded, s_ffn_fused): it reads the plain w1 and b1. */
static bool s_some_plain(const wrk_bert_cuda_t *m) {
    return !m->fold || m->fold_max < m->buckets[m->n_buckets - 1];
}

/* Folds a LayerNorm (gamma, beta [H]) into the GEMM that reads its output, for the folded pass
 * (the header comment): w [rows, H] and bias [rows] (fp32 host copies, in place) become
 * w diag(gamma) and bias + w beta; c[j] (when not NULL) = the sum of row j as binary16 holds it
 * (the upload rounds it so), which the LN_BIAS epilogue subtracts mean times. */
static void s_fold_weights(float *w, float *bias, float *c, const float *gamma, const float *beta,
                           int64_t rows, int64_t H) {
    for (int64_t j = 0; j < rows; j++) {
        float *row = w + j * H;
        double db = 0.0, dc = 0.0;
        for (int64_t k = 0; k < H; k++) {
            db += (double)row[k] * beta[k];
            row[k] *= gamma[k];
            if (c)
                dc += com_half_to_f32(com_half_from_f32(row[k]));
        }
        bias[j] = (float)(bias[j] + db);
        if (c)
            c[j] = (float)dc;
    }
}

/* Loads the weights onto the device, in two passes over the file: the first bounds every
 * value the forward pass stores in 16 bits (worker/bert_range.h) into *range and settles the
 * 16-bit type (dtype: a kern_dtype_t, or WRK_BERT_DTYPE_AUTO = binary16 when every bound stays
 * inside its range, else bf16; binary16 asked for beyond it is refused), the second uploads the
 * weights in that type (LayerNorm parameters in fp32). fold (WRK_BERT_FOLD_*): the folded pass
 * (the header comment) is asked for: the first pass also bounds what only it stores
 * (range->fold_max), and the second folds each LayerNorm but the embedding's into the GEMM
 * after it (ON: refused with COM_EUNSUPPORTED unless binary16 holds everything; AUTO: then not
 * folded), uploading the plain QKV and FFN-up weights as well when some bucket is not folded
 * (m->fold_max, set by the caller, below the largest). */
static int s_load(wrk_bert_cuda_t *m, const char *path, int dtype, int fold,
                  wrk_bert_range_t *range, com_error_t *err) {
    const com_model_info_t *in = &m->info;
    com_safetensors_t *st = NULL;
    int rc = com_safetensors_open(path, &st, err);
    if (rc != 0)
        return rc;
    const char *pre = com_safetensors_find(st, "bert.embeddings.word_embeddings.weight") &&
                              !com_safetensors_find(st, "embeddings.word_embeddings.weight")
                          ? "bert."
                          : "";
    const int64_t H = in->hidden_size, I = in->intermediate_size, V = in->vocab_size;
    const int64_t P = in->max_position_embeddings, TV = in->type_vocab_size;
    size_t big = (size_t)V * H;
    size_t need[] = {(size_t)P * H, 3 * (size_t)H * H, (size_t)I * H};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        big = need[i] > big ? need[i] : big;
    const size_t wide = (size_t)(I > 3 * H ? I : 3 * H);
    float *buf = malloc(big * sizeof *buf), *bias = malloc(wide * 4), *c = malloc(wide * 4);
    float *g = malloc((size_t)H * sizeof *g), *stage = NULL; /* stage: device, [big] */
    /* fold: the last LayerNorm's parameters (the next GEMM folds them) and its output's bound */
    float *ln_g = malloc((size_t)H * sizeof *ln_g), *ln_b = malloc((size_t)H * sizeof *ln_b);
    double ln_bound = 0.0;
    bool plain = true; /* pass 1: the plain QKV and FFN-up weights are uploaded (s_some_plain) */
    if (!buf || !bias || !c || !g || !ln_g || !ln_b) {
        rc = com_error_set(err, COM_ENOMEM, "bert cuda: out of memory (%zu floats)", big);
        goto out;
    }
#define READ(into, name, nd, a, b)                                                                 \
    do {                                                                                           \
        if ((rc = s_read(st, pre, (name), (nd), (a), (b), (into), err)) != 0)                      \
            goto out;                                                                              \
    } while (0)
#define UPLOAD(dst, from, count, as16)                                                             \
    do {                                                                                           \
        if (pass == 1 &&                                                                           \
            (rc = s_upload(m, (from), (size_t)(count), (as16), stage, (void **)&(dst), err)) != 0) \
            goto out;                                                                              \
    } while (0)
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            const bool fits = range->worst <= S_F16_LIMIT;
            if (dtype == KERN_DTYPE_F16 && !fits) {
                rc = com_error_set(err, COM_EUNSUPPORTED,
                                   "bert cuda: dtype=f16: a value of the forward pass may reach "
                                   "%g, beyond binary16's range (65504)",
                                   range->worst);
                goto out;
            }
            m->dtype = dtype != WRK_BERT_DTYPE_AUTO ? (kern_dtype_t)dtype
                       : fits                       ? KERN_DTYPE_F16
                                                    : KERN_DTYPE_BF16;
            const bool can_fold = m->dtype == KERN_DTYPE_F16 && range->fold_max <= S_F16_LIMIT &&
                                  H % KERN_STATS_COLS == 0;
            if (fold == WRK_BERT_FOLD_ON && !can_fold) {
                rc = com_error_set(err, COM_EUNSUPPORTED,
                                   "bert cuda: fold=on needs binary16 activations that hold every "
                                   "pre-LayerNorm sum and folded weight (bounds %g and %g, dtype "
                                   "%s) and a hidden size that is a multiple of 64 (%d)",
                                   range->worst, range->fold_max,
                                   m->dtype == KERN_DTYPE_F16 ? "f16" : "bf16", (int)H);
                goto out;
            }
            m->fold = fold != WRK_BERT_FOLD_OFF && can_fold;
            if (fold == WRK_BERT_FOLD_AUTO && !can_fold)
                COM_INFO("bert cuda: fold=auto: the LayerNorms stay unfolded (%s activations, "
                         "folded values bounded by %g, binary16 holds %g, hidden %d)",
                         m->dtype == KERN_DTYPE_F16 ? "binary16" : "bf16", range->fold_max,
                         S_F16_LIMIT, (int)H);
            plain = s_some_plain(m);
            cudaError_t ce = cudaMalloc((void **)&stage, big * sizeof *stage);
            if (ce != cudaSuccess) {
                stage = NULL;
                rc = kern_check_fail(err, "cudaMalloc(stage)", cudaGetErrorName(ce),
                                     cudaGetErrorString(ce), __func__, __FILE__, __LINE__);
                goto out;
            }
        }
        READ(buf, "embeddings.word_embeddings.weight", 2, V, H);
        if (pass == 0)
            wrk_bert_range_values(range, buf, (size_t)(V * H));
        UPLOAD(m->word, buf, V * H, true);
        READ(buf, "embeddings.position_embeddings.weight", 2, P, H);
        if (pass == 0)
            wrk_bert_range_values(range, buf, (size_t)(P * H));
        UPLOAD(m->pos, buf, P * H, true);
        READ(buf, "embeddings.token_type_embeddings.weight", 2, TV, H);
        if (pass == 0)
            wrk_bert_range_values(range, buf, (size_t)(TV * H));
        UPLOAD(m->type, buf, TV * H, true);
        READ(g, "embeddings.LayerNorm.weight", 1, H, 0);
        READ(buf, "embeddings.LayerNorm.bias", 1, H, 0);
        if (pass == 0)
            ln_bound = wrk_bert_range_layernorm(range, g, buf);
        UPLOAD(m->emb_g, g, H, false);
        UPLOAD(m->emb_b, buf, H, false);
        for (int32_t l = 0; l < in->num_layers; l++) {
            s_layer_t *L = &m->layers[l];
            char n[160];
#define NAME(fmt) (snprintf(n, sizeof n, "encoder.layer.%d." fmt, (int)l), n)
            static const char *const qkv[3] = {"query", "key", "value"};
            for (int j = 0; j < 3; j++) {
                snprintf(n, sizeof n, "encoder.layer.%d.attention.self.%s.weight", (int)l, qkv[j]);
                READ(buf + (size_t)j * H * H, n, 2, H, H);
                snprintf(n, sizeof n, "encoder.layer.%d.attention.self.%s.bias", (int)l, qkv[j]);
                READ(bias + (size_t)j * H, n, 1, H, 0);
            }
            double v_bound = 0.0, up_bound = 0.0;
            /* the folded pass: layers >= 1 read the last FFN's pre-LN sum (the embedding's
             * LayerNorm stays a kernel of its own) */
            const bool fold_qkv = fold != WRK_BERT_FOLD_OFF && l > 0 && (pass == 0 || m->fold);
            if (pass == 0) { /* QKV, and its V rows: what the attention output mixes */
                wrk_bert_range_values(range, buf, (size_t)(3 * H * H));
                wrk_bert_range_values(range, bias, (size_t)(3 * H));
                wrk_bert_range_after_ln(range, buf, bias, 0, (int32_t)(2 * H));
                v_bound =
                    wrk_bert_range_after_ln(range, buf, bias, (int32_t)(2 * H), (int32_t)(3 * H));
            }
            if (!fold_qkv || plain) {
                UPLOAD(L->wqkv, buf, 3 * H * H, true);
                UPLOAD(L->bqkv, bias, 3 * H, true);
            }
            if (fold_qkv) {
                s_fold_weights(buf, bias, pass == 1 ? c : NULL, ln_g, ln_b, 3 * H, H);
                if (pass == 0) {
                    wrk_bert_range_fold_values(range, buf, (size_t)(3 * H * H));
                    wrk_bert_range_fold_values(range, bias, (size_t)(3 * H));
                }
                UPLOAD(L->wqkv_f, buf, 3 * H * H, true);
                UPLOAD(L->bqkv_f, bias, 3 * H, true);
                UPLOAD(L->cqkv, c, 3 * H, false);
            }
            READ(buf, NAME("attention.output.dense.weight"), 2, H, H);
            READ(bias, NAME("attention.output.dense.bias"), 1, H, 0);
            if (pass == 0) { /* and its pre-LN sum: output + residual (the last LN's output) */
                wrk_bert_range_values(range, buf, (size_t)(H * H));
                wrk_bert_range_values(range, bias, (size_t)H);
                wrk_bert_range_fold(range, wrk_bert_range_after_bound(range, buf, bias, (int32_t)H,
                                                                      (int32_t)H, v_bound) +
                                               ln_bound);
            }
            UPLOAD(L->wo, buf, H * H, true);
            UPLOAD(L->bo, bias, H, true);
            READ(g, NAME("attention.output.LayerNorm.weight"), 1, H, 0);
            READ(bias, NAME("attention.output.LayerNorm.bias"), 1, H, 0);
            if (pass == 0)
                ln_bound = wrk_bert_range_layernorm(range, g, bias);
            memcpy(ln_g, g, (size_t)H * sizeof *g), memcpy(ln_b, bias, (size_t)H * sizeof *bias);
            UPLOAD(L->ln1_g, g, H, false);
            UPLOAD(L->ln1_b, bias, H, false);
            READ(buf, NAME("intermediate.dense.weight"), 2, I, H);
            READ(bias, NAME("intermediate.dense.bias"), 1, I, 0);
            if (pass == 0) { /* FFN-up, then its GELU: FFN-down's input */
                wrk_bert_range_values(range, buf, (size_t)(I * H));
                wrk_bert_range_values(range, bias, (size_t)I);
                up_bound = wrk_bert_range_gelu(
                    range, wrk_bert_range_after_ln(range, buf, bias, 0, (int32_t)I));
            }
            const bool fold_up = fold != WRK_BERT_FOLD_OFF && (pass == 0 || m->fold);
            if (!fold_up || plain) {
                UPLOAD(L->w1, buf, I * H, true);
                UPLOAD(L->b1, bias, I, true);
            }
            if (fold_up) {
                s_fold_weights(buf, bias, pass == 1 ? c : NULL, ln_g, ln_b, I, H);
                if (pass == 0) {
                    wrk_bert_range_fold_values(range, buf, (size_t)(I * H));
                    wrk_bert_range_fold_values(range, bias, (size_t)I);
                }
                UPLOAD(L->w1_f, buf, I * H, true);
                UPLOAD(L->b1_f, bias, I, true);
                UPLOAD(L->c1, c, I, false);
            }
            READ(buf, NAME("output.dense.weight"), 2, H, I);
            READ(bias, NAME("output.dense.bias"), 1, H, 0);
            if (pass == 0) {
                wrk_bert_range_values(range, buf, (size_t)(H * I));
                wrk_bert_range_values(range, bias, (size_t)H);
                wrk_bert_range_fold(range, wrk_bert_range_after_bound(range, buf, bias, (int32_t)H,
                                                                      (int32_t)I, up_bound) +
                                               ln_bound);
            }
            UPLOAD(L->w2, buf, H * I, true);
            UPLOAD(L->b2, bias, H, true);
            READ(g, NAME("output.LayerNorm.weight"), 1, H, 0);
            READ(bias, NAME("output.LayerNorm.bias"), 1, H, 0);
            if (pass == 0)
                ln_bound = wrk_bert_range_layernorm(range, g, bias);
            memcpy(ln_g, g, (size_t)H * sizeof *g), memcpy(ln_b, bias, (size_t)H * sizeof *bias);
            UPLOAD(L->ln2_g, g, H, false);
            UPLOAD(L->ln2_b, bias, H, false);
#undef NAME
        }
    }
#undef UPLOAD
#undef READ
    {
        cudaError_t ce = cudaStreamSynchronize(NULL); /* the last conversions */
        if (ce != cudaSuccess)
            rc = kern_check_fail(err, "cudaStreamSynchronize(load)", cudaGetErrorName(ce),
                                 cudaGetErrorString(ce), __func__, __FILE__, __LINE__);
    }
out:
    if (stage)
        cudaFree(stage);
    free(buf), free(bias), free(c), free(g), free(ln_g), free(ln_b);
    com_safetensors_destroy(&st);
    if (rc != 0)
        com_error_prefix(err, rc, "%s", path);
    return rc;
}

/* The attention's host-built tile table (kern_attention_tiles_build) from this bucket up; below
 * it the kernel walks its packed tiles in order. Session 31 (docs/results/2026-12-04-h200-
 * session31): the table made the ragged passes (~13.7k-token buckets) 0-2% faster and the 1024-
 * and 4096-token ones 1-2.4% slower (the CTA's first read of its entry, 25% more CTAs). */
#define S_TILES_MIN_TOKENS 8192

static bool s_tiles(int32_t T) {
    return T >= S_TILES_MIN_TOKENS;
}

size_t wrk_bert_cuda_input_words(int32_t T) {
    return 4 + 4 * (size_t)T + 4 +
           (s_tiles(T) ? (size_t)KERN_ATTENTION_TILE_WORDS * (size_t)kern_attention_tiles_cap(T)
                       : 0);
}

void wrk_bert_cuda_pack(int32_t *dst, int32_t T, const int32_t *ids, const int32_t *types,
                        const int32_t *cu, int32_t n_seqs, int32_t out_dim, bool normalize,
                        uint32_t epoch) {
    const int32_t base = cu[0], n_tokens = cu[n_seqs] - base;
    dst[0] = n_seqs;
    dst[1] = n_tokens;
    dst[2] = out_dim;
    dst[3] = normalize ? 1 : 0;
    int32_t *d_ids = dst + 4, *d_seq = d_ids + T, *d_types = d_seq + T, *d_cu = d_types + T;
    memcpy(d_ids, ids + base, (size_t)n_tokens * sizeof *ids);
    if (types)
        memcpy(d_types, types + base, (size_t)n_tokens * sizeof *types);
    else
        memset(d_types, 0, (size_t)n_tokens * sizeof *types);
    for (int32_t s = 0; s < n_seqs; s++) {
        d_cu[s] = cu[s] - base;
        for (int32_t t = cu[s] - base; t < cu[s + 1] - base; t++)
            d_seq[t] = s;
    }
    d_cu[n_seqs] = n_tokens;
    dst[4 + 4 * (size_t)T + 1] = (int32_t)epoch;
    if (s_tiles(T))
        kern_attention_tiles_build(dst + 4 + 4 * (size_t)T + 4, T, d_cu, n_seqs);
}

void wrk_bert_cuda_destroy(wrk_bert_cuda_t **self_p) {
    if (!self_p || !*self_p)
        return;
    wrk_bert_cuda_t *m = *self_p;
    if (m->plans)
        for (int32_t i = 0; i < m->n_buckets * S_N_GEMM; i++)
            kern_linear_plan_destroy(&m->plans[i]);
    free(m->plans);
    if (m->lt)
        cublasLtDestroy(m->lt);
    for (size_t i = 0; i < m->n_allocs; i++)
        cudaFree(m->allocs[i]);
    free(m->allocs);
    free(m->layers);
    free(m->lanes);
    free(m->buckets);
    free(m->tail);
    free(m);
    *self_p = NULL;
}

/* One lane's row statistics of the folded pass (sa or sf): [T, H / 64, 2] fp32. */
static size_t s_stats_bytes(const wrk_bert_cuda_t *m) {
    return (size_t)m->buckets[m->n_buckets - 1] * (size_t)(m->info.hidden_size / KERN_STATS_COLS) *
           2 * sizeof(float);
}

/* Sets every activation byte of lane a to byte (cudaMemset), synchronously. */
static int s_fill_activations(const wrk_bert_cuda_t *m, const s_acts_t *a, int byte,
                              com_error_t *err) {
    const size_t T = (size_t)m->buckets[m->n_buckets - 1], H = (size_t)m->info.hidden_size;
    const size_t I = (size_t)m->info.intermediate_size, wide = 3 * H > I ? 3 * H : I;
    void *const bufs[] = {a->in, a->h32, a->hb, a->r16, a->big, a->ctx, a->tmp, a->sa, a->sf};
    const size_t sizes[] = {wrk_bert_cuda_input_words((int32_t)T) * 4,
                            T * H * 4,
                            T * H * 2,
                            T * H * 2,
                            T * wide * 2,
                            T * H * 2,
                            T * H * 2,
                            s_stats_bytes(m),
                            s_stats_bytes(m)};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) /* r16 only with an f16 residual, sa and sf only folded */
            KERN_CUDA_TRY(cudaMemset(bufs[i], byte, sizes[i]), err);
    KERN_CUDA_TRY(cudaDeviceSynchronize(), err);
    return 0;
}

/* The device and libraries a timing holds for (worker/tune_cache.h): GPU name, compute
 * capability, SM count, cuBLASLt, runtime and driver versions, how many configurations of our
 * own exist and their code's revision (a rebuilt kernel list or faster kernels re-time) and the
 * in-context bound (s_refine_in_context). */
static void s_fingerprint(char *out, size_t cap) {
    int dev = 0, rt = 0, drv = 0;
    struct cudaDeviceProp pr;
    memset(&pr, 0, sizeof pr);
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&pr, dev) != cudaSuccess)
        snprintf(pr.name, sizeof pr.name, "unknown");
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    snprintf(out, cap, "%.100s sm%d%d %dSM cublasLt %zu cudart %d driver %d own %d r%d ctx %d",
             pr.name, pr.major, pr.minor, pr.multiProcessorCount, cublasLtGetVersion(), rt, drv,
             (int)kern_linear_own_count(), KERN_LINEAR_OWN_REVISION, S_CONTEXT_MAX);
    for (char *c = out; *c; c++) /* the cache's separators cannot occur */
        if (*c == '\t' || *c == '\n' || *c == '\r')
            *c = ' ';
}

/* Replays a graph of bucket bi's forward pass (lane 0) on stream st: the best of 3 trials of 20
 * replays, in ms per pass, into *ms. The input area must hold a valid batch. */
static int s_time_forward(wrk_bert_cuda_t *m, int32_t bi, cudaStream_t st, cudaEvent_t e0,
                          cudaEvent_t e1, float *ms, com_error_t *err) {
    enum { kWarm = 3, kReps = 20, kTrials = 3 };
    KERN_CUDA_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), err);
    int rc = wrk_bert_cuda_forward(m, 0, bi, false, NULL, NULL, NULL, st, err);
    cudaGraph_t graph = NULL;
    cudaError_t ce = cudaStreamEndCapture(st, &graph);
    if (rc != 0) {
        if (graph)
            cudaGraphDestroy(graph);
        return rc;
    }
    KERN_CUDA_TRY(ce, err);
    cudaGraphExec_t exec = NULL;
    ce = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    KERN_CUDA_TRY(ce, err);
    *ms = 1e30f;
    for (int i = 0; i < kWarm && ce == cudaSuccess; i++)
        ce = cudaGraphLaunch(exec, st);
    for (int t = 0; t < kTrials && ce == cudaSuccess; t++) {
        ce = cudaEventRecord(e0, st);
        for (int i = 0; i < kReps && ce == cudaSuccess; i++)
            ce = cudaGraphLaunch(exec, st);
        if (ce == cudaSuccess)
            ce = cudaEventRecord(e1, st);
        if (ce == cudaSuccess)
            ce = cudaEventSynchronize(e1);
        float t_ms = 0.f;
        if (ce == cudaSuccess)
            ce = cudaEventElapsedTime(&t_ms, e0, e1);
        if (ce == cudaSuccess && t_ms / kReps < *ms)
            *ms = t_ms / kReps;
    }
    cudaGraphExecDestroy(exec);
    KERN_CUDA_TRY(ce, err);
    return 0;
}

/* Whether bucket b runs the folded pass (the header comment). */
static bool s_folded(const wrk_bert_cuda_t *m, int32_t b) {
    return m->fold && m->buckets[b] <= m->fold_max;
}

/* Whether bucket b runs QKV + attention as one kernel (kernels/qkv_attention.h). */
static bool s_fused(const wrk_bert_cuda_t *m, int32_t b) {
    return m->buckets[b] <= m->fuse_max;
}

/* Whether bucket b runs the FFN sublayer as one kernel (kernels/ffn.h; the header comment). */
static bool s_ffn_fused(const wrk_bert_cuda_t *m, int32_t b) {
    return !s_folded(m, b) && m->buckets[b] >= m->ffn_from;
}

/* The epilogue of GEMM i (enum above) at bucket b, as its pass runs it (folded or not). */
static kern_linear_epilogue_t s_epi(const wrk_bert_cuda_t *m, int32_t b, int i) {
    const bool fold = s_folded(m, b);
    switch (i) {
    case S_QKV:
        return KERN_LINEAR_BIAS;
    case S_FF1:
    case S_TFF1: /* the tail's buckets are not folded */
        return fold ? KERN_LINEAR_LN_BIAS_GELU : KERN_LINEAR_BIAS_GELU;
    case S_QKVF:
        return KERN_LINEAR_LN_BIAS;
    default: /* the sublayer ends */
        return fold ? KERN_LINEAR_BIAS_ADD_STATS : KERN_LINEAR_BIAS_ADD_LN;
    }
}

/* GEMM i's input and output widths */
static void s_gemm_shape(const wrk_bert_cuda_t *m, int i, int32_t *in, int32_t *out) {
    const int32_t H = m->info.hidden_size, I = m->info.intermediate_size;
    *in = i == S_FF2 || i == S_TFF2 ? I : H;
    *out = i == S_QKV || i == S_QKVF ? 3 * H : i == S_FF1 || i == S_TFF1 ? I : H;
}

/* The rows of GEMM i's plan at bucket b: the bucket's, or its tail's. */
static int32_t s_plan_rows(const wrk_bert_cuda_t *m, int32_t b, int i) {
    return i >= S_TOUT ? m->tail[b] : m->buckets[b];
}

/* The pruned last layer's compact buffers in lane a's big (the header comment): the pooled rows
 * of ctx and of the stream, then the FFN intermediate, for a tail of Ts rows. */
static uint16_t *s_ctx_c(const s_acts_t *a) {
    return a->big;
}
static uint16_t *s_res_c(const wrk_bert_cuda_t *m, const s_acts_t *a, int32_t Ts) {
    return a->big + (size_t)Ts * (size_t)m->info.hidden_size;
}
static uint16_t *s_mid_c(const wrk_bert_cuda_t *m, const s_acts_t *a, int32_t Ts) {
    return a->big + 2 * (size_t)Ts * (size_t)m->info.hidden_size;
}

/* true iff the residual stream is a binary16 copy beside bf16 activations (r16) */
static bool s_r16(const wrk_bert_cuda_t *m) {
    return m->residual == KERN_RESIDUAL_F16 && m->dtype == KERN_DTYPE_BF16;
}

/* Whether the fused FFN can run this model here at all: kern_ffn_supported's shapes and GPU,
 * and a residual stream that is hb itself (its residual is its input x = hb), i.e. not fp32
 * and not r16 (s_sublayer_end's residual_f16 / residual_bf16 = hb cases). */
static bool s_hb_stream(const wrk_bert_cuda_t *m) {
    return (m->residual == KERN_RESIDUAL_F16 && m->dtype == KERN_DTYPE_F16) ||
           (m->residual == KERN_RESIDUAL_BF16 && m->dtype == KERN_DTYPE_BF16);
}
static bool s_ffn_eligible(const wrk_bert_cuda_t *m) {
    return s_hb_stream(m) &&
           kern_ffn_supported(m->dtype, m->info.hidden_size, m->info.intermediate_size);
}

/* The tail of bucket b (the header comment): the smallest bucket of >= T / 8 tokens when it is
 * at most T / 2 (so the compact buffers fit big: Ts (2H + I) <= T max(3H, I)), at an unfolded
 * bucket of a model whose pooling reads one row a sequence and whose stream is hb; else 0. */
static int32_t s_tail_rows(const wrk_bert_cuda_t *m, int32_t b, bool prune) {
    const int32_t T = m->buckets[b];
    if (!prune || !s_hb_stream(m) || s_folded(m, b) ||
        (m->info.pooling != COM_POOL_CLS && m->info.pooling != COM_POOL_LAST))
        return 0;
    for (int32_t k = 0; k < b; k++)
        if (8 * (int64_t)m->buckets[k] >= T)
            return 2 * (int64_t)m->buckets[k] <= T ? m->buckets[k] : 0;
    return 0;
}

/* The operands of a sublayer end (KERN_LINEAR_BIAS_ADD_LN) of layer L: after attention (ffn
 * false) or after the FFN. The residual stream is updated in place: h32 and hb with the fp32
 * residual; r16 and hb with f16 (the first sublayer end reads h32, which the embedding's
 * LayerNorm wrote); hb alone with bf16. f32_too (the last layer's FFN): h32 as well, which the
 * pooling reads. tmp is the GEMM's output when the LayerNorm runs as a kernel of its own. */
static kern_linear_ln_t s_sublayer_end(const wrk_bert_cuda_t *m, const s_acts_t *a,
                                       const s_layer_t *L, bool ffn, const int32_t *n_rows,
                                       bool first, bool f32_too) {
    const kern_residual_type_t rt = m->residual;
    kern_linear_ln_t ln = {.gamma = ffn ? L->ln2_g : L->ln1_g,
                           .beta = ffn ? L->ln2_b : L->ln1_b,
                           .eps = m->info.layer_norm_eps,
                           .n_rows = n_rows,
                           .scratch = a->tmp};
    if (rt == KERN_RESIDUAL_F32 || (s_r16(m) && first))
        ln.residual = a->h32;
    else if (s_r16(m))
        ln.residual_f16 = a->r16;
    else if (rt == KERN_RESIDUAL_F16) /* binary16 activations: hb is the stream */
        ln.residual_f16 = a->hb;
    else
        ln.residual_bf16 = a->hb;
    if (rt == KERN_RESIDUAL_F32 || f32_too)
        ln.out_f32 = a->h32;
    if (s_r16(m) && !f32_too)
        ln.out_f16 = a->r16;
    return ln;
}

/* The pruned last layer's sublayer ends on its compact rows (the header comment): as the plain
 * pass's (s_sublayer_end, the hb stream), with the gathered rows res_c as the stream. */
static kern_linear_ln_t s_tail_end(const wrk_bert_cuda_t *m, const s_acts_t *a, const s_layer_t *L,
                                   bool ffn, uint16_t *res_c, const int32_t *n_rows) {
    kern_linear_ln_t ln = s_sublayer_end(m, a, L, ffn, n_rows, false, ffn);
    if (ln.residual_f16)
        ln.residual_f16 = res_c;
    else
        ln.residual_bf16 = res_c;
    return ln;
}

/* The folded pass's operands of GEMM i of layer l (the header comment): the sublayer ends write
 * their sum (tmp after attention, hb after the FFN) and its statistics (sa, sf); their residual
 * is the layer's input, plain (hb, layer 0: the embedding's LayerNorm output) or folded (hb and
 * sf with the last layer's FFN LayerNorm), or, after the FFN, the attention's sum (tmp, sa, this
 * layer's first LayerNorm); FFN-up and the folded QKV read tmp (sa) and hb (sf). */
static kern_linear_ln_t s_fold_ops(const wrk_bert_cuda_t *m, const s_acts_t *a, int32_t l, int i,
                                   const int32_t *n_rows) {
    const s_layer_t *L = &m->layers[l];
    kern_linear_ln_t ln = {.eps = m->info.layer_norm_eps, .n_rows = n_rows};
    switch (i) {
    case S_OUT:
        ln.out_stats = a->sa;
        if (l == 0) {
            ln.residual_f16 = a->hb;
        } else {
            ln.residual_x = a->hb, ln.residual_stats = a->sf;
            ln.gamma = m->layers[l - 1].ln2_g, ln.beta = m->layers[l - 1].ln2_b;
        }
        break;
    case S_FF1:
        ln.in_stats = a->sa, ln.c = L->c1;
        break;
    case S_FF2:
        ln.out_stats = a->sf;
        ln.residual_x = a->tmp, ln.residual_stats = a->sa;
        ln.gamma = L->ln1_g, ln.beta = L->ln1_b;
        break;
    case S_QKVF:
        ln.in_stats = a->sf, ln.c = L->cqkv;
        break;
    default:
        break;
    }
    return ln;
}

/* The tuning cache key of GEMM i at bucket b: shape and epilogue, and for the LayerNorm
 * epilogue the residual stream's type (a 16-bit residual makes another op to time). */
static void s_plan_key(const wrk_bert_cuda_t *m, int32_t b, int i, char *key, size_t cap) {
    int32_t in, out;
    s_gemm_shape(m, i, &in, &out);
    snprintf(key, cap, "n %d in %d out %d epi %d%s%s", (int)s_plan_rows(m, b, i), (int)in, (int)out,
             (int)s_epi(m, b, i), m->dtype == KERN_DTYPE_F16 ? " f16" : "",
             s_epi(m, b, i) != KERN_LINEAR_BIAS_ADD_LN ? ""
             : m->residual == KERN_RESIDUAL_BF16       ? " residual bf16"
             : m->residual == KERN_RESIDUAL_F16        ? " residual f16"
                                                       : "");
}

/* Latency buckets (<= S_CONTEXT_MAX tokens) whose plans were just timed one GEMM at a time: for
 * each GEMM, the other engine's fastest candidate (kern_linear_plan_alternative) is tried inside
 * the whole forward pass (a graph of it, with programmatic launch as served) and kept when the
 * pass gets 1% faster. Timed alone, ours and cuBLASLt's can rank the other way round (MiniLM
 * 1 x 128 on the H200: 0.1772 ms with our FFN-down, which won alone, 0.1695 with cuBLASLt's).
 * The input area gets batches of up to 128-token sequences filling the bucket. Returns 0 or an
 * error; *refined counts the plans changed. */
static int s_refine_in_context(wrk_bert_cuda_t *m, int32_t b, int32_t *refined, com_error_t *err) {
    const int32_t T = m->buckets[b], H = m->info.hidden_size;
    const int32_t n_seqs = (T + 127) / 128;
    const size_t words = wrk_bert_cuda_input_words(T);
    int32_t *host = malloc(words * sizeof *host), *ids = malloc((size_t)T * sizeof *ids);
    int32_t cu[S_CONTEXT_MAX / 128 + 2];
    if (!host || !ids) {
        free(host), free(ids);
        return com_error_set(err, COM_ENOMEM, "bert cuda: out of memory");
    }
    for (int32_t t = 0; t < T; t++)
        ids[t] = (1000 + 7 * t) % m->info.vocab_size;
    for (int32_t s = 0; s <= n_seqs; s++)
        cu[s] = s * 128 < T ? s * 128 : T;
    wrk_bert_cuda_pack(host, T, ids, NULL, cu, n_seqs, H, false, 0);
    cudaError_t ce = cudaMemcpy(m->lanes[0].in, host, words * sizeof *host, cudaMemcpyHostToDevice);
    /* from pageable memory cudaMemcpy may return before its DMA has landed, and the timing
     * below runs on a non-blocking stream, which does not wait for the legacy stream: without
     * this the first graph could read the previous bucket's input area (whose layout differs)
     * and index out of bounds (an illegal address seen once under a loaded GPU) */
    if (ce == cudaSuccess)
        ce = cudaDeviceSynchronize();
    free(host), free(ids);
    KERN_CUDA_TRY(ce, err);
    cudaStream_t st = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = 0;
    if ((ce = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) == cudaSuccess &&
        (ce = cudaEventCreate(&e0)) == cudaSuccess)
        ce = cudaEventCreate(&e1);
    if (ce != cudaSuccess)
        rc = kern_check_fail(err, "stream/event create", cudaGetErrorName(ce),
                             cudaGetErrorString(ce), __func__, __FILE__, __LINE__);
    kern_linear_plan_t **p = m->plans + (size_t)b * S_N_GEMM;
    float base = 0.f;
    if (rc == 0)
        rc = s_time_forward(m, b, st, e0, e1, &base, err);
    for (int i = 0; i < S_TOUT && rc == 0; i++) { /* the tail's are not in the timed pass */
        if (!p[i])
            continue;
        const int32_t cur = kern_linear_plan_rank(p[i]), alt = kern_linear_plan_alternative(p[i]);
        if (alt == cur || kern_linear_plan_choose(p[i], alt, NULL) != 0)
            continue;
        float ms = 0.f;
        rc = s_time_forward(m, b, st, e0, e1, &ms, err);
        if (rc == 0 && ms < base * 0.99f) {
            base = ms;
            (*refined)++;
        } else if (kern_linear_plan_choose(p[i], cur, NULL) != 0) {
            rc = com_error_set(err, COM_EINTERNAL, "bert cuda: plan rank %d lost", (int)cur);
        }
    }
    if (e1)
        cudaEventDestroy(e1);
    if (e0)
        cudaEventDestroy(e0);
    if (st)
        cudaStreamDestroy(st);
    return rc;
}

/* Picks each GEMM plan's algorithm per bucket: the choice kept in the tuning cache at
 * cache_path (NULL: none) when it still names the same algorithm, else the fastest of the
 * heuristic's candidates and ours, timed on layer 0's weights (activations set to a finite
 * non-zero bf16 pattern, then zeroed again) and, at buckets <= S_CONTEXT_MAX, checked inside
 * the whole forward pass (s_refine_in_context), which then goes into the cache. A cache that
 * cannot be read or written costs only the timing (a warning). */
/* The plans that exist (S_QKVF only at folded buckets of a model with more than one layer;
 * none for QKV where it runs fused, s_fused, none for the FFN where it does, s_ffn_fused). */
static int32_t s_n_plans(const wrk_bert_cuda_t *m) {
    int32_t n = 0;
    for (int32_t i = 0; i < m->n_buckets * S_N_GEMM; i++)
        n += m->plans[i] != NULL;
    return n;
}

static int s_tune(wrk_bert_cuda_t *m, const char *cache_path, com_error_t *err) {
    const double t0 = com_clock_mono_us();
    wrk_tune_cache_t *cache = NULL;
    if (cache_path) {
        char fp[256];
        s_fingerprint(fp, sizeof fp);
        com_error_t e = {0};
        if (wrk_tune_cache_open(cache_path, fp, &cache, &e) != 0)
            COM_WARN("bert cuda: tuning cache %s: %s", cache_path, e.msg);
        else if (wrk_tune_cache_warning(cache)[0])
            COM_WARN("bert cuda: tuning cache ignored: %s", wrk_tune_cache_warning(cache));
        else if (wrk_tune_cache_skipped(cache) > 0)
            COM_WARN("bert cuda: tuning cache %s: %d malformed lines skipped", cache_path,
                     (int)wrk_tune_cache_skipped(cache));
    }
    /* bf16 0x3c3c and fp32 0x3c3c3c3c are both 0.0115, f16 0x3c3c 1.06: finite inputs and
     * residuals. The LayerNorm plans then renormalise the residual stream in place on every
     * timed run, which keeps it finite (LayerNorm output is bounded by gamma and beta). */
    const s_acts_t *a = &m->lanes[0];
    int rc = s_fill_activations(m, a, 0x3c, err);
    int32_t changed = 0, timed = 0, refined = 0;
    for (int32_t b = 0; b < m->n_buckets && rc == 0; b++) {
        kern_linear_plan_t **p = m->plans + (size_t)b * S_N_GEMM;
        /* layer 0's weights; folded, layer 1's (its QKV is folded: it has cqkv) when there is
         * one, and layer 0's plain QKV (the only one the pass has) */
        const bool fold = s_folded(m, b);
        const int32_t lt = fold && m->info.num_layers > 1 ? 1 : 0;
        const s_layer_t *L = &m->layers[lt], *L0 = &m->layers[0];
        /* as the forward pass has them, but n_rows NULL (every row: a full bucket; the input
         * area holds the last in-context batch, whose token count may be smaller) */
        const kern_linear_ln_t ln1 = fold ? s_fold_ops(m, a, lt, S_OUT, NULL)
                                          : s_sublayer_end(m, a, L, false, NULL, false, false),
                               ln2 = fold ? s_fold_ops(m, a, lt, S_FF2, NULL)
                                          : s_sublayer_end(m, a, L, true, NULL, false, false),
                               lnu = s_fold_ops(m, a, lt, S_FF1, NULL),
                               lnq = s_fold_ops(m, a, lt, S_QKVF, NULL);
        /* folded: the sums go to tmp (attention) and hb (FFN), FFN-up reads tmp */
        uint16_t *const x_att = fold ? a->tmp : a->hb;
        /* the tail's (unfolded buckets): its compact buffers in big */
        const int32_t Ts = m->tail[b];
        uint16_t *const res_c = s_res_c(m, a, Ts), *const mid_c = s_mid_c(m, a, Ts);
        const kern_linear_ln_t lnt1 = s_tail_end(m, a, L, false, res_c, NULL),
                               lnt2 = s_tail_end(m, a, L, true, res_c, NULL);
        struct {
            uint16_t *y;
            const uint16_t *x, *w, *bias;
            const kern_linear_ln_t *ln;
        } g[S_N_GEMM] = {[S_QKV] = {a->big, a->hb, L0->wqkv, L0->bqkv, NULL},
                         [S_OUT] = {x_att, a->ctx, L->wo, L->bo, &ln1},
                         [S_FF1] = {a->big, x_att, fold ? L->w1_f : L->w1, fold ? L->b1_f : L->b1,
                                    fold ? &lnu : NULL},
                         [S_FF2] = {a->hb, a->big, L->w2, L->b2, &ln2},
                         [S_QKVF] = {a->big, a->hb, L->wqkv_f, L->bqkv_f, &lnq},
                         [S_TOUT] = {res_c, s_ctx_c(a), L->wo, L->bo, &lnt1},
                         [S_TFF1] = {mid_c, res_c, L->w1, L->b1, NULL},
                         [S_TFF2] = {res_c, mid_c, L->w2, L->b2, &lnt2}};
        char key[S_N_GEMM][64];
        int32_t timed_here = 0;
        for (int i = 0; i < S_N_GEMM && rc == 0; i++) {
            if (!p[i])
                continue;
            s_plan_key(m, b, i, key[i], sizeof key[i]);
            int32_t chosen = 0;
            const char *kept = NULL;
            if (wrk_tune_cache_get(cache, key[i], &chosen, &kept) &&
                kern_linear_plan_choose(p[i], chosen, NULL) == 0 &&
                strcmp(kern_linear_plan_describe(p[i]), kept) == 0)
                continue;
            rc = kern_linear_plan_tune(m->lt, p[i], g[i].y, g[i].x, g[i].w, g[i].bias, g[i].ln,
                                       a->ws, S_WORKSPACE_BYTES, NULL, &chosen, err);
            timed_here++;
        }
        /* cached choices were refined when they were saved */
        if (rc == 0 && timed_here > 0 && m->buckets[b] <= S_CONTEXT_MAX)
            rc = s_refine_in_context(m, b, &refined, err);
        for (int i = 0; i < S_N_GEMM && rc == 0; i++) {
            if (!p[i])
                continue;
            changed += kern_linear_plan_rank(p[i]) != 0;
            if (cache && wrk_tune_cache_put(cache, key[i], kern_linear_plan_rank(p[i]),
                                            kern_linear_plan_describe(p[i]), NULL) != 0)
                COM_WARN("bert cuda: tuning cache: cannot keep %s", key[i]);
        }
        timed += timed_here;
        if (rc == 0 && m->buckets[b] <= S_CONTEXT_MAX) /* the latency buckets: which engine won */
            COM_DEBUG("bert cuda: bucket %d: qkv %s | out %s | ff1 %s | ff2 %s", (int)m->buckets[b],
                      kern_linear_plan_describe(p[S_QKV]), kern_linear_plan_describe(p[S_OUT]),
                      kern_linear_plan_describe(p[S_FF1]), kern_linear_plan_describe(p[S_FF2]));
    }
    if (rc == 0)
        rc = s_fill_activations(m, a, 0, err);
    com_error_t e = {0};
    if (rc == 0 && cache && wrk_tune_cache_save(cache, &e) != 0)
        COM_WARN("bert cuda: tuning cache: %s (the next start times the GEMMs again)", e.msg);
    wrk_tune_cache_destroy(&cache);
    m->plans_timed = timed;
    const int32_t n_plans = s_n_plans(m);
    m->plans_cached = n_plans - timed;
    if (rc == 0)
        COM_INFO("bert cuda: GEMM algorithms for %d plans in %.0f ms (%d timed, %d from the "
                 "tuning cache%s%s, %d changed by timing in context); %d differ from the "
                 "heuristic's first choice",
                 (int)n_plans, (com_clock_mono_us() - t0) / 1e3, (int)timed, (int)(n_plans - timed),
                 cache_path ? " " : "", cache_path ? cache_path : "", (int)refined, (int)changed);
    return rc;
}

int wrk_bert_cuda_new(const com_model_info_t *info, const char *weights_path,
                      const int32_t *buckets, int32_t n_buckets, const wrk_bert_cuda_opts_t *opts,
                      wrk_bert_cuda_t **out, com_error_t *err) {
    *out = NULL;
    if (info->family != COM_FAMILY_BERT)
        return com_error_set(err, COM_EUNSUPPORTED, "bert cuda: model family %d is not BERT",
                             (int)info->family);
    if (info->hidden_act != COM_ACT_GELU_ERF)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "bert cuda: activation %d not supported (only gelu)",
                             (int)info->hidden_act);
    if (info->hidden_size != info->num_heads * info->head_dim ||
        (info->head_dim != 32 && info->head_dim != 64) || info->hidden_size % 8 != 0 ||
        info->intermediate_size % 8 != 0)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "bert cuda: hidden %d, heads %d x head_dim %d, intermediate %d "
                             "(supported: head_dim 32 or 64, sizes multiples of 8)",
                             (int)info->hidden_size, (int)info->num_heads, (int)info->head_dim,
                             (int)info->intermediate_size);
    if (n_buckets < 1)
        return com_error_set(err, COM_EINVAL, "bert cuda: no buckets");
    wrk_bert_cuda_t *m = calloc(1, sizeof *m);
    if (!m)
        return com_error_set(err, COM_ENOMEM, "bert cuda: out of memory");
    int rc = COM_ENOMEM;
    m->info = *info;
    m->n_buckets = n_buckets;
    m->buckets = malloc((size_t)n_buckets * sizeof *m->buckets);
    m->tail = calloc((size_t)n_buckets, sizeof *m->tail);
    m->plans = calloc((size_t)n_buckets * S_N_GEMM, sizeof *m->plans);
    m->layers = calloc((size_t)info->num_layers, sizeof *m->layers);
    m->n_lanes = opts->lanes > 0 ? opts->lanes : 1;
    m->lanes = calloc((size_t)m->n_lanes, sizeof *m->lanes);
    if (!m->buckets || !m->tail || !m->plans || !m->layers || !m->lanes) {
        rc = com_error_set(err, COM_ENOMEM, "bert cuda: out of memory");
        goto err;
    }
    memcpy(m->buckets, buckets, (size_t)n_buckets * sizeof *buckets);
    if (opts->residual < WRK_BERT_RESIDUAL_AUTO || opts->residual > KERN_RESIDUAL_F16) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: residual type %d", opts->residual);
        goto err;
    }
    if (opts->dtype < WRK_BERT_DTYPE_AUTO || opts->dtype > KERN_DTYPE_F16) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: dtype %d", opts->dtype);
        goto err;
    }
    if (opts->fuse != WRK_BERT_FUSE_AUTO && opts->fuse != WRK_BERT_FUSE_OFF &&
        opts->fuse != WRK_BERT_FUSE_ON) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: fuse %d", opts->fuse);
        goto err;
    }
    if ((opts->ffn != WRK_BERT_FFN_AUTO && opts->ffn != WRK_BERT_FFN_OFF &&
         opts->ffn != WRK_BERT_FFN_ON) ||
        opts->ffn_min < 0) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: ffn %d, ffn_min %d", opts->ffn,
                           (int)opts->ffn_min);
        goto err;
    }
    if (opts->prune != WRK_BERT_PRUNE_AUTO && opts->prune != WRK_BERT_PRUNE_OFF) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: prune %d", opts->prune);
        goto err;
    }
    if (opts->fold < WRK_BERT_FOLD_OFF || opts->fold > WRK_BERT_FOLD_AUTO || opts->fold_max < 0) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: fold %d, fold_max %d", opts->fold,
                           (int)opts->fold_max);
        goto err;
    }
    /* a bf16 residual stream is the bf16 activations themselves */
    if (opts->residual == KERN_RESIDUAL_BF16 && opts->dtype == KERN_DTYPE_F16) {
        rc = com_error_set(err, COM_EINVAL, "bert cuda: residual=bf16 needs dtype=bf16");
        goto err;
    }
    const int dtype = opts->residual == KERN_RESIDUAL_BF16 ? KERN_DTYPE_BF16 : opts->dtype;
    wrk_bert_range_t range;
    if ((rc = wrk_bert_range_init(&range, info->hidden_size, err)) != 0)
        goto err;
    /* AUTO folds only where ON would be taken without asking for more: the residual stream left
     * to the pass (the folded one is its binary16 sums), a Hopper GPU (our folding GEMMs) */
    const int32_t fold_max =
        opts->fold_max > 0 ? opts->fold_max : wrk_bert_cuda_fold_max_default(info->hidden_size);
    int fold = opts->fold, major = 0, dev = 0;
    if (fold == WRK_BERT_FOLD_AUTO &&
        ((opts->residual != WRK_BERT_RESIDUAL_AUTO && opts->residual != KERN_RESIDUAL_F16) ||
         cudaGetDevice(&dev) != cudaSuccess ||
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
         major < 9 || fold_max < buckets[0]))
        fold = WRK_BERT_FOLD_OFF;
    m->fold_max = fold == WRK_BERT_FOLD_ON ? INT32_MAX : fold_max;
    double t0 = com_clock_mono_us();
    rc = s_load(m, weights_path, dtype, fold, &range, err);
    const double load_ms = (com_clock_mono_us() - t0) / 1e3;
    const double ln_bound = range.ln_max;
    if (rc == 0)
        COM_INFO("bert cuda: every 16-bit value bounded by %.5g (LayerNorm outputs by %.5g; "
                 "binary16 needs <= %g): weights and activations in %s",
                 range.worst, ln_bound, S_F16_LIMIT,
                 m->dtype == KERN_DTYPE_F16 ? "binary16" : "bf16");
    wrk_bert_range_fini(&range);
    if (rc != 0)
        goto err;
    /* auto: the 16-bit activations themselves with binary16 ones (then in range: s_load checked
     * every value); with bf16 ones a binary16 copy when no LayerNorm output can leave its finite
     * range (S_F16_LIMIT), else fp32 */
    const bool f16_fits = ln_bound <= S_F16_LIMIT;
    m->residual = opts->residual != WRK_BERT_RESIDUAL_AUTO ? (kern_residual_type_t)opts->residual
                  : f16_fits                               ? KERN_RESIDUAL_F16
                                                           : KERN_RESIDUAL_F32;
    if (m->residual == KERN_RESIDUAL_F16 && !f16_fits) {
        rc = com_error_set(err, COM_EUNSUPPORTED,
                           "bert cuda: residual=f16: a LayerNorm's output may reach %g, beyond "
                           "binary16's range (65504)",
                           ln_bound);
        goto err;
    }
    /* the fused FFN: now that the 16-bit type and the residual stream are settled */
    m->ffn_from = INT32_MAX;
    if (opts->ffn != WRK_BERT_FFN_OFF) {
        const bool eligible = s_ffn_eligible(m);
        const bool all_folded = m->fold && m->fold_max >= buckets[n_buckets - 1];
        if (opts->ffn == WRK_BERT_FFN_ON && (!eligible || all_folded)) {
            static const char *const res_name[] = {"f32", "bf16", "f16"};
            const char *const dt = m->dtype == KERN_DTYPE_F16 ? "f16" : "bf16";
            if (!kern_ffn_supported(m->dtype, info->hidden_size, info->intermediate_size))
                rc = com_error_set(err, COM_EUNSUPPORTED,
                                   "bert cuda: ffn=on: the fused FFN does not run hidden %d, "
                                   "intermediate %d, dtype %s on this GPU (it needs compute "
                                   "capability 9.0, hidden 384, intermediate %% 64 == 0)",
                                   (int)info->hidden_size, (int)info->intermediate_size, dt);
            else if (!eligible)
                rc = com_error_set(err, COM_EUNSUPPORTED,
                                   "bert cuda: ffn=on: its residual is its 16-bit input, but the "
                                   "residual stream is %s%s (it needs residual=f16 with dtype=f16, "
                                   "or residual=bf16)",
                                   res_name[m->residual],
                                   s_r16(m) ? ", a copy beside bf16 activations" : "");
            else
                rc = com_error_set(err, COM_EUNSUPPORTED,
                                   "bert cuda: ffn=on: every bucket runs the folded LayerNorm "
                                   "(fold=on, or fold_max at or past the largest bucket, %d)",
                                   (int)buckets[n_buckets - 1]);
            goto err;
        }
        /* auto: from 0.9 of a wave of the kernel's tiles (wrk_bert_cuda_opts_t's comment) */
        const int32_t wave = kern_ffn_wave_rows(); /* > 0 wherever the kernel runs */
        if (eligible)
            m->ffn_from = opts->ffn_min > 0              ? opts->ffn_min
                          : opts->ffn == WRK_BERT_FFN_ON ? 1
                          : wave > 0                     ? wave / 10 * 9
                                                         : INT32_MAX;
    }
    /* once, before any pass (the tuner's runs the whole forward pass) or graph capture */
    if (wrk_bert_cuda_ffn_min(m) > 0) {
        com_error_t e = {0};
        if ((rc = kern_ffn_prepare(m->dtype, &e)) != 0) {
            if (rc != COM_EUNSUPPORTED || opts->ffn == WRK_BERT_FFN_ON) {
                rc = com_error_set(err, rc, "bert cuda: ffn: %s", e.msg);
                goto err;
            }
            COM_WARN("bert cuda: ffn=auto: the fused FFN stays off (%s)", e.msg);
            m->ffn_from = INT32_MAX;
            rc = 0;
        }
    }
    t0 = com_clock_mono_us();
    const size_t T = (size_t)buckets[n_buckets - 1], H = (size_t)info->hidden_size;
    const size_t I = (size_t)info->intermediate_size, wide = 3 * H > I ? 3 * H : I;
    for (int32_t l = 0; l < m->n_lanes; l++) {
        s_acts_t *a = &m->lanes[l];
        if ((rc = s_dalloc(m, wrk_bert_cuda_input_words((int32_t)T) * 4, (void **)&a->in, err)) ||
            (rc = s_dalloc(m, T * H * 4, (void **)&a->h32, err)) ||
            (rc = s_dalloc(m, T * H * 2, (void **)&a->hb, err)) ||
            (s_r16(m) && (rc = s_dalloc(m, T * H * 2, (void **)&a->r16, err))) ||
            (rc = s_dalloc(m, T * wide * 2, (void **)&a->big, err)) ||
            (rc = s_dalloc(m, T * H * 2, (void **)&a->ctx, err)) ||
            (rc = s_dalloc(m, T * H * 2, (void **)&a->tmp, err)) ||
            (m->fold && (rc = s_dalloc(m, s_stats_bytes(m), (void **)&a->sa, err))) ||
            (m->fold && (rc = s_dalloc(m, s_stats_bytes(m), (void **)&a->sf, err))) ||
            (rc = s_dalloc(m, S_WORKSPACE_BYTES, &a->ws, err)))
            goto err;
        /* zeroed once: padding rows are then finite from the first batch on */
        if ((rc = s_fill_activations(m, a, 0, err)) != 0)
            goto err;
    }
    {
        cublasStatus_t st = cublasLtCreate(&m->lt);
        if (st != CUBLAS_STATUS_SUCCESS) {
            rc = kern_check_fail(err, "cublasLtCreate(&m->lt)", "cublasStatus",
                                 cublasLtGetStatusString(st), __func__, __FILE__, __LINE__);
            m->lt = NULL;
            goto err;
        }
    }
    { /* the pruned last layer: its tails and, where there are any, the pooling's one-row
         sequences (0, 1, 2, ... up to the largest tail) */
        const bool prune = opts->prune != WRK_BERT_PRUNE_OFF;
        int32_t max_tail = 0;
        for (int32_t b = 0; b < n_buckets; b++) {
            m->tail[b] = s_tail_rows(m, b, prune);
            max_tail = m->tail[b] > max_tail ? m->tail[b] : max_tail;
        }
        const kern_attention_params_t ap = {info->num_heads, info->num_heads, info->head_dim,
                                            1.0f / sqrtf((float)info->head_dim), false};
        m->pooled_attention = kern_attention_pooled_supported(&ap);
        const size_t n_ident = (size_t)max_tail + 1;
        int32_t *ident = max_tail > 0 ? malloc(n_ident * sizeof *ident) : NULL;
        if (max_tail > 0) {
            if (!ident) {
                rc = com_error_set(err, COM_ENOMEM, "bert cuda: out of memory");
                goto err;
            }
            for (size_t t = 0; t < n_ident; t++)
                ident[t] = (int32_t)t;
            cudaError_t ce = cudaSuccess;
            if ((rc = s_dalloc(m, n_ident * sizeof *ident, (void **)&m->ident, err)) == 0 &&
                (ce = cudaMemcpy(m->ident, ident, n_ident * sizeof *ident,
                                 cudaMemcpyHostToDevice)) != cudaSuccess)
                rc = kern_check_fail(err, "cudaMemcpy(ident)", cudaGetErrorName(ce),
                                     cudaGetErrorString(ce), __func__, __FILE__, __LINE__);
            free(ident);
            if (rc != 0)
                goto err;
        }
    }
    const double acts_ms = (com_clock_mono_us() - t0) / 1e3;
    t0 = com_clock_mono_us();
    /* the fused kernel takes every bucket up to its largest (kern_qkv_attention_supported) */
    if (opts->fuse == WRK_BERT_FUSE_ON ||
        (opts->fuse == WRK_BERT_FUSE_AUTO && info->head_dim == 32))
        for (int32_t b = 0; b < n_buckets; b++)
            if (kern_qkv_attention_supported(buckets[b], info->hidden_size, info->num_heads,
                                             info->head_dim))
                m->fuse_max = buckets[b];
    for (int32_t b = 0; b < n_buckets; b++) {
        kern_linear_plan_t **p = m->plans + (size_t)b * S_N_GEMM;
        for (int i = 0; i < S_N_GEMM; i++) {
            if (i == S_QKVF && !(s_folded(m, b) && info->num_layers > 1))
                continue; /* no folded QKV */
            if ((i == S_QKV || i == S_QKVF) && s_fused(m, b))
                continue; /* the fused kernel projects Q, K and V itself */
            if ((i == S_FF1 || i == S_FF2) && s_ffn_fused(m, b))
                continue; /* the fused FFN runs both products itself */
            if (i >= S_TOUT && m->tail[b] == 0)
                continue; /* no pruned last layer */
            int32_t gin, gout;
            s_gemm_shape(m, i, &gin, &gout);
            if ((rc = kern_linear_plan_new(m->lt, s_plan_rows(m, b, i), gin, gout, s_epi(m, b, i),
                                           S_WORKSPACE_BYTES, 0, m->dtype, &p[i], err)) != 0)
                goto err;
        }
    }
    const double plans_ms = (com_clock_mono_us() - t0) / 1e3;
    t0 = com_clock_mono_us();
    if (opts->tune && (rc = s_tune(m, opts->tune_cache, err)) != 0)
        goto err;
    COM_INFO("bert cuda: start-up: weights %.0f ms, activations %.0f ms (%d lanes), %d GEMM plans "
             "%.0f ms, tuning %.0f ms",
             load_ms, acts_ms, (int)m->n_lanes, (int)s_n_plans(m), plans_ms,
             (com_clock_mono_us() - t0) / 1e3);
    *out = m;
    return 0;
err:
    wrk_bert_cuda_destroy(&m);
    return rc ? rc : COM_EINTERNAL;
}

void wrk_bert_cuda_plan_counts(const wrk_bert_cuda_t *m, int32_t *timed, int32_t *cached) {
    *timed = m->plans_timed;
    *cached = m->plans_cached;
}

int wrk_bert_cuda_residual(const wrk_bert_cuda_t *m) {
    return (int)m->residual;
}

int wrk_bert_cuda_dtype(const wrk_bert_cuda_t *m) {
    return (int)m->dtype;
}

int32_t wrk_bert_cuda_fuse_max(const wrk_bert_cuda_t *m) {
    return m->fuse_max;
}

int32_t wrk_bert_cuda_ffn_min(const wrk_bert_cuda_t *m) {
    for (int32_t b = 0; b < m->n_buckets; b++)
        if (s_ffn_fused(m, b))
            return m->buckets[b];
    return 0;
}

int32_t wrk_bert_cuda_tail_rows(const wrk_bert_cuda_t *m, int32_t bucket_index) {
    return bucket_index >= 0 && bucket_index < m->n_buckets ? m->tail[bucket_index] : 0;
}

int32_t wrk_bert_cuda_fold_max(const wrk_bert_cuda_t *m) {
    int32_t largest = 0;
    for (int32_t b = 0; b < m->n_buckets; b++)
        if (s_folded(m, b))
            largest = m->buckets[b];
    return largest;
}

size_t wrk_bert_cuda_device_bytes(const wrk_bert_cuda_t *m) {
    return m->bytes;
}

int wrk_bert_cuda_forward(wrk_bert_cuda_t *m, int32_t lane, int32_t bi, bool pruned,
                          const int32_t *in_src, float *out, uint32_t *done, cudaStream_t stream,
                          com_error_t *err) {
    if (bi < 0 || bi >= m->n_buckets || lane < 0 || lane >= m->n_lanes ||
        (pruned && m->tail[bi] == 0))
        return com_error_set(
            err, COM_EINVAL, "bert cuda forward: bucket index %d, lane %d, pruned %d (tail %d)",
            (int)bi, (int)lane, (int)pruned, bi >= 0 && bi < m->n_buckets ? (int)m->tail[bi] : 0);
    const s_acts_t *a = &m->lanes[lane];
    const com_model_info_t *in = &m->info;
    const int32_t T = m->buckets[bi], H = in->hidden_size, I = in->intermediate_size;
    const float eps = in->layer_norm_eps;
    const int32_t *meta = a->in, *ids = a->in + 4, *seq = ids + T, *types = seq + T,
                  *cu = types + T;
    const int32_t *n_seqs = meta, *n_tokens = meta + 1, *out_dim = meta + 2, *norm = meta + 3;
    const kern_pool_done_t pool_done = {done, cu + T + 1}; /* the epoch follows cu_seqlens */
    /* the attention's tile table (16-byte aligned), in the buckets that have one */
    const int32_t *tiles = s_tiles(T) ? cu + T + 4 : NULL;
    kern_linear_plan_t *const *p = m->plans + (size_t)bi * S_N_GEMM;
    const bool fold = s_folded(m, bi);
    const kern_attention_params_t ap = {in->num_heads, in->num_heads, in->head_dim,
                                        1.0f / sqrtf((float)in->head_dim), false};
    int rc;
#define S_TRY(call)                                                                                \
    do {                                                                                           \
        if ((rc = (call)) != 0)                                                                    \
            return rc;                                                                             \
    } while (0)
    /* the embedding's LayerNorm writes h32 when h32 is the stream or layer 0's first sublayer end
     * reads it (a binary16 copy beside bf16 activations); else hb alone is the stream */
    const bool emb_f32 = m->residual == KERN_RESIDUAL_F32 || s_r16(m);
    if (in_src)
        S_TRY(kern_copy_cuda(a->in, in_src, wrk_bert_cuda_input_words(T) * sizeof(int32_t), stream,
                             err));
    S_TRY(kern_embed_layernorm_cuda(m->dtype, emb_f32 ? a->h32 : NULL, a->hb, ids, types, seq, cu,
                                    n_tokens, T, m->word, m->pos, m->type, m->emb_g, m->emb_b, H,
                                    eps, stream, err));
    const kern_pool_mode_t mode = in->pooling == COM_POOL_CLS    ? KERN_POOL_CLS
                                  : in->pooling == COM_POOL_LAST ? KERN_POOL_LAST
                                                                 : KERN_POOL_MEAN;
    for (int32_t l = 0; l < in->num_layers; l++) {
        const s_layer_t *L = &m->layers[l];
        const bool last = l == in->num_layers - 1; /* the pooling reads h32 */
        /* hb (and h32) = LN(GEMM + b + residual); rows >= n_tokens untouched. Folded: tmp and
         * hb = the sums, sa and sf their statistics, the QKV of layers >= 1 and FFN-up
         * normalising x in their epilogues (s_fold_ops) */
        const bool fold_qkv = fold && l > 0;
        const kern_linear_ln_t ln1 = fold ? s_fold_ops(m, a, l, S_OUT, n_tokens)
                                          : s_sublayer_end(m, a, L, false, n_tokens, l == 0, false),
                               ln2 = fold ? s_fold_ops(m, a, l, S_FF2, n_tokens)
                                          : s_sublayer_end(m, a, L, true, n_tokens, false, last),
                               lnu = s_fold_ops(m, a, l, S_FF1, n_tokens),
                               lnq = s_fold_ops(m, a, l, S_QKVF, n_tokens);
        uint16_t *const x_att = fold ? a->tmp : a->hb; /* the attention sublayer's output */
        /* the fused FFN's residual is its input: ln2 must be the hb-in-place stream (eligibility
         * at creation guarantees it; checked here so the two paths cannot drift apart) */
        const bool ffn = s_ffn_fused(m, bi);
        if (ffn && (ln2.residual || ln2.out_f16 || x_att != a->hb ||
                    (ln2.residual_f16 != a->hb && ln2.residual_bf16 != a->hb)))
            return com_error_set(err, COM_EINTERNAL,
                                 "bert cuda forward: fused FFN at bucket %d without hb as the "
                                 "residual stream",
                                 (int)T);
        if (s_fused(m, bi)) { /* the same two ops as one kernel */
            const kern_qkv_attention_args_t qa = {.dtype = m->dtype,
                                                  .out = a->ctx,
                                                  .ldo = H,
                                                  .x = a->hb,
                                                  .w = fold_qkv ? L->wqkv_f : L->wqkv,
                                                  .b = fold_qkv ? L->bqkv_f : L->bqkv,
                                                  .in_stats = fold_qkv ? a->sf : NULL,
                                                  .c = fold_qkv ? L->cqkv : NULL,
                                                  .eps = eps,
                                                  .tok_seq = seq,
                                                  .n_tokens = n_tokens,
                                                  .max_tokens = T,
                                                  .hidden = H,
                                                  .n_heads = in->num_heads,
                                                  .head_dim = in->head_dim,
                                                  .scale = ap.scale};
            S_TRY(kern_qkv_attention_cuda(&qa, stream, err));
        } else {
            S_TRY(kern_linear_cuda(m->lt, fold_qkv ? p[S_QKVF] : p[S_QKV], a->big, a->hb,
                                   fold_qkv ? L->wqkv_f : L->wqkv, fold_qkv ? L->bqkv_f : L->bqkv,
                                   fold_qkv ? &lnq : NULL, a->ws, S_WORKSPACE_BYTES, stream, err));
            if (last && pruned && m->pooled_attention) /* the pooled rows' queries alone */
                S_TRY(kern_attention_pooled_cuda(&ap, m->dtype, a->ctx, H, a->big, 3 * H,
                                                 a->big + H, 3 * H, a->big + 2 * H, 3 * H, cu, seq,
                                                 n_tokens, n_seqs, m->tail[bi],
                                                 mode == KERN_POOL_LAST, T, stream, err));
            else
                S_TRY(kern_attention_cuda(&ap, m->dtype, a->ctx, H, a->big, 3 * H, a->big + H,
                                          3 * H, a->big + 2 * H, 3 * H, cu, seq, n_tokens, tiles, T,
                                          stream, err));
        }
        if (last && pruned) { /* the pooled rows alone from here (the header comment) */
            const int32_t Ts = m->tail[bi];
            uint16_t *const res_c = s_res_c(m, a, Ts), *const mid_c = s_mid_c(m, a, Ts);
            const kern_linear_ln_t t1 = s_tail_end(m, a, L, false, res_c, n_seqs),
                                   t2 = s_tail_end(m, a, L, true, res_c, n_seqs);
            S_TRY(kern_pool_rows_cuda(s_ctx_c(a), a->ctx, res_c, a->hb, cu, n_seqs, Ts, H, mode,
                                      stream, err));
            S_TRY(kern_linear_cuda(m->lt, p[S_TOUT], res_c, s_ctx_c(a), L->wo, L->bo, &t1, a->ws,
                                   S_WORKSPACE_BYTES, stream, err));
            S_TRY(kern_linear_cuda(m->lt, p[S_TFF1], mid_c, res_c, L->w1, L->b1, NULL, a->ws,
                                   S_WORKSPACE_BYTES, stream, err));
            S_TRY(kern_linear_cuda(m->lt, p[S_TFF2], res_c, mid_c, L->w2, L->b2, &t2, a->ws,
                                   S_WORKSPACE_BYTES, stream, err));
            break;
        }
        S_TRY(kern_linear_cuda(m->lt, p[S_OUT], x_att, a->ctx, L->wo, L->bo, &ln1, a->ws,
                               S_WORKSPACE_BYTES, stream, err)); /* + bias + residual + LN */
        if (ffn) { /* the two below as one kernel, with the sublayer end's own operands */
            const kern_ffn_args_t fa = {.dtype = m->dtype,
                                        .y = a->hb,
                                        .x = x_att,
                                        .w1 = L->w1,
                                        .b1 = L->b1,
                                        .w2 = L->w2,
                                        .b2 = L->b2,
                                        .gamma = ln2.gamma,
                                        .beta = ln2.beta,
                                        .eps = ln2.eps,
                                        .out_f32 = ln2.out_f32,
                                        .n_rows = ln2.n_rows,
                                        .n = T,
                                        .hidden = H,
                                        .inter = I};
            S_TRY(kern_ffn_cuda(&fa, stream, err));
        } else {
            S_TRY(kern_linear_cuda(m->lt, p[S_FF1], a->big, x_att, fold ? L->w1_f : L->w1,
                                   fold ? L->b1_f : L->b1, fold ? &lnu : NULL, a->ws,
                                   S_WORKSPACE_BYTES, stream, err)); /* + bias + GELU */
            S_TRY(kern_linear_cuda(m->lt, p[S_FF2], a->hb, a->big, L->w2, L->b2, &ln2, a->ws,
                                   S_WORKSPACE_BYTES, stream, err)); /* + bias + residual + LN */
        }
    }
    /* no destination (the tuner's timing runs): big, free again once the last FFN is done, holds
     * the [n_seqs, H] fp32 result (it has T x max(3H, I) bf16 >= T x H fp32) */
    float *dst = out ? out : (float *)a->big;
    const s_layer_t *last = &m->layers[in->num_layers - 1];
    if (pruned) /* row s of h32 is sequence s's: one-token sequences */
        S_TRY(kern_pool_cuda(dst, a->h32, m->ident, n_seqs, out_dim, norm, done ? &pool_done : NULL,
                             m->tail[bi], H, KERN_POOL_CLS, stream, err));
    else if (fold) /* the last LayerNorm on the fly, from hb and sf */
        S_TRY(kern_pool_folded_cuda(dst, a->hb, m->dtype, a->sf, last->ln2_g, last->ln2_b, eps, cu,
                                    n_seqs, out_dim, norm, done ? &pool_done : NULL, T, H, mode,
                                    stream, err));
    else
        S_TRY(kern_pool_cuda(dst, a->h32, cu, n_seqs, out_dim, norm, done ? &pool_done : NULL, T, H,
                             mode, stream, err));
#undef S_TRY
    return 0;
}
