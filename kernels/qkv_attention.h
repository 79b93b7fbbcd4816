/* kernels/qkv_attention.h — the QKV projection and bidirectional ragged attention of one BERT layer
 * as ONE kernel, for short buckets (max_tokens <= 128) on Hopper (sm_90a; qkv_attention.cu):
 *
 *   Q | K | V = epi(x W^T)        per head, rounded to the 16-bit dtype (as the QKV GEMM's output)
 *   ctx[t, h] = softmax(Q_h[t] K_h^T * scale) V_h     over the keys of t's sequence
 *
 * epi is the QKV GEMM's epilogue: + b (KERN_LINEAR_BIAS), or with in_stats the folded LayerNorm
 * rstd (x W^T - mean c) + b (KERN_LINEAR_LN_BIAS, kernels/linear.h and row_stats.h), in fp32 on the
 * accumulators, rounded once. The result equals kern_linear_cuda with that epilogue followed by
 * kern_attention_cuda (kernels/attention.h, not causal, n_kv_heads = n_heads) up to the fp32
 * summation order. CUDA only; there is no separate reference (kern_linear_ref, the fold formula and
 * kern_attention_ref are its reference: tests/test_kernels_cuda.c, test_qkv_attention). */
#ifndef EMBER_KERNELS_QKV_ATTENTION_H
#define EMBER_KERNELS_QKV_ATTENTION_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef EMBER_HAVE_CUDA
/* The largest bucket the fused kernel runs (query rows = keys of one CTA). */
#define KERN_QKV_ATTENTION_MAX_TOKENS 128

typedef struct kern_qkv_attention_args {
    kern_dtype_t dtype; /* KERN_DTYPE_BF16 or KERN_DTYPE_F16: x, w, b, out, and Q/K/V rounding */
    uint16_t *out;      /* ctx [max_tokens, >= n_heads*head_dim], device; 4-byte aligned */
    int64_t ldo;        /* out's leading dimension: even, >= hidden */
    const uint16_t *x;  /* [max_tokens, hidden] device, 16-byte aligned, ld = hidden */
    /* [3*hidden, hidden] device, 16-byte aligned: W[o][i], rows 0..H-1 = Q, H..2H-1 = K,
     * 2H..3H-1 = V; head h = rows h*head_dim.. of each third */
    const uint16_t *w;
    const uint16_t *b; /* [3*hidden] device */
    /* NULL, or the folded LayerNorm: [max_tokens, hidden/64, 2] partial row statistics of x
     * (kernels/row_stats.h), 8-byte aligned, with */
    const float *in_stats;
    const float *c; /* [3*hidden] fp32: y = rstd*(x W^T - mean*c) + b (KERN_LINEAR_LN_BIAS) */
    float eps;      /* with in_stats: the LayerNorm's eps (kern::row_stats_one), >= 0 */
    /* [max_tokens] device: sequence index of token t, valid for t < n_tokens only (stale
     * beyond) */
    const int32_t *tok_seq;
    const int32_t *n_tokens; /* [1] device: live tokens, <= max_tokens */
    int32_t max_tokens;      /* the bucket, 1..128 (the launch depends on it, not on n_tokens) */
    /* head_dim 32 or 64, hidden = n_heads*head_dim, hidden % 64 == 0 */
    int32_t hidden, n_heads, head_dim;
    float scale; /* logit scale, > 0 (usually 1/sqrt(head_dim)) */
} kern_qkv_attention_args_t;

/* 1 iff the fused kernel can run this shape on the current device: compute capability 9.0
 * (sm_90a), 1 <= max_tokens <= 128, head_dim 32 or 64, hidden = n_heads * head_dim, hidden % 64
 * == 0 and hidden <= KERN_STATS_MAX_COLS (any such hidden fits the shared-memory plan: x and W
 * stream through a ring of 64-column slices). */
int kern_qkv_attention_supported(int32_t max_tokens, int32_t hidden, int32_t n_heads,
                                 int32_t head_dim);

/* Enqueues the fused kernel on stream: per head one CTA (max_tokens <= 64) or a cluster of two
 * (65..128) computes the head's Q, K, V for all max_tokens rows and its attention
 * (qkv_attention.cu). Rows t >= *n_tokens of out are
 * not written (nor columns outside [h*head_dim, (h+1)*head_dim) of any head h); rows of x, tok_seq
 * and in_stats past *n_tokens may hold anything (they are read, never used). Token t attends to
 * the keys j < *n_tokens with tok_seq[j] == tok_seq[t]. Every per-batch number (n_tokens, tok_seq,
 * in_stats, x) is read after the kernel's PDL wait (kernels/kern_cuda_dev.cuh); w, b and c must be
 * weights (no kernel writes them): w is read before it. out must not overlap x, w, b, c or
 * in_stats. Deterministic; the same launch serves every batch of the bucket (CUDA graphs). The
 * first call per device sets the kernel's function attributes (thread-safe). Returns 0,
 * COM_EINVAL (bad arguments: NULL pointers, misalignment, inconsistent sizes, dtype),
 * COM_EUNSUPPORTED (a valid shape the kernel does not run: see kern_qkv_attention_supported) or
 * COM_EINTERNAL (CUDA failed). */
int kern_qkv_attention_cuda(const kern_qkv_attention_args_t *a, struct CUstream_st *stream,
                            com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
