/* kernels/embed_layernorm.h — BERT input embeddings fused with LayerNorm, over a packed batch.
 *
 *   out[t] = LayerNorm(word[token_ids[t]] + pos[t - cu_seqlens[s]] + type[type_ids[t]])
 *
 * for every token t of sequence s (positions restart at 0 in each sequence). Tokens are packed
 * back to back, no padding; cu_seqlens gives the boundaries. Reference/CPU version (fp32); the
 * CUDA version is kern_embed_layernorm_cuda in embed_layernorm.cu, with bf16 or binary16 tables
 * and 16-bit output (kern_dtype_t). */
#ifndef EMBER_KERNELS_EMBED_LAYERNORM_H
#define EMBER_KERNELS_EMBED_LAYERNORM_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Computes rows [t_begin, t_end) of out (so callers can split the rows across threads).
 * Preconditions (the caller validated them; checked only by assert): ids in [0, vocab),
 * type ids in [0, type_vocab), every position < max positions, cu_seqlens monotone with
 * cu_seqlens[0] = 0 and cu_seqlens[n_seqs] >= t_end. */
void kern_embed_layernorm_ref(float *out,                /* [n_tokens, hidden], host, fp32 */
                              const int32_t *token_ids,  /* [n_tokens], host */
                              const int32_t *type_ids,   /* [n_tokens], host; NULL = all 0 */
                              const int32_t *cu_seqlens, /* [n_seqs + 1], host */
                              int32_t n_seqs, int32_t t_begin, int32_t t_end,
                              const float *word,  /* [vocab, hidden], host, fp32 */
                              const float *pos,   /* [max_positions, hidden], host, fp32 */
                              const float *type,  /* [type_vocab, hidden], host, fp32 */
                              const float *gamma, /* [hidden], host, fp32 */
                              const float *beta,  /* [hidden], host, fp32 */
                              int32_t hidden, float eps);

#ifdef EMBER_HAVE_CUDA
/* CUDA (embed_layernorm.cu): the same op over a bucket of max_tokens rows, tables in dtype (bf16
 * or IEEE binary16, kern_dtype_t; another dtype: COM_EINVAL), fp32 math. Row t < *n_tokens:
 * out = LayerNorm(word[ids[t]] + pos[t - cu_seqlens[tok_seq[t]]] + type[types[t]]); rows
 * [*n_tokens, max_tokens) are written as zeros (the padding of a bucket stays finite). Written
 * twice: fp32 (the residual stream) and 16-bit in dtype (out16: the next GEMM's input); either
 * may be NULL. Counts come from device memory so one CUDA graph serves any batch of the
 * bucket. hidden >= 1. Launch configurations (kern_embed_layernorm_cuda_config): register-
 * resident rows for hidden 384 / 768 / 1024, else the generic 16-byte (hidden % 8 == 0) or
 * scalar path; a pointer that is not 16-byte aligned forces the scalar path. Returns 0,
 * COM_EINVAL (bad sizes) or COM_EINTERNAL (launch failed; err says where). Enqueued on stream;
 * returns before the kernel runs. */
int kern_embed_layernorm_cuda(kern_dtype_t dtype, /* of word, pos, type and out16 */
                              float *out_f32,     /* [max_tokens, hidden], device, or NULL */
                              uint16_t *out16, /* [max_tokens, hidden], device, in dtype, or NULL */
                              const int32_t *token_ids,  /* [max_tokens], device */
                              const int32_t *type_ids,   /* [max_tokens], device; NULL = all 0 */
                              const int32_t *tok_seq,    /* [max_tokens], device: sequence of t */
                              const int32_t *cu_seqlens, /* [n_seqs + 1], device */
                              const int32_t *n_tokens,   /* [1], device: real tokens */
                              int32_t max_tokens,
                              const uint16_t *word, /* [vocab, hidden], device, in dtype */
                              const uint16_t *pos,  /* [max_positions, hidden], device, in dtype */
                              const uint16_t *type, /* [type_vocab, hidden], device, in dtype */
                              const float *gamma,   /* [hidden], device fp32 */
                              const float *beta,    /* [hidden], device fp32 */
                              int32_t hidden, float eps, struct CUstream_st *stream,
                              com_error_t *err);
/* The launch configuration picked for hidden, given 16-byte aligned pointers (0 scalar, 1
 * generic vector, 2 register-resident); for tests. */
int kern_embed_layernorm_cuda_config(int32_t hidden);
#endif

#ifdef __cplusplus
}
#endif

#endif
