/* kernels/embed_layernorm.h — BERT input embeddings fused with LayerNorm, over a packed batch.
 *
 *   out[t] = LayerNorm(word[token_ids[t]] + pos[t - cu_seqlens[s]] + type[type_ids[t]])
 *
 * for every token t of sequence s (positions restart at 0 in each sequence). Tokens are packed
 * back to back, no padding; cu_seqlens gives the boundaries. Reference/CPU version; the CUDA
 * version will be kern_embed_layernorm_cuda in embed_layernorm.cu. */
#ifndef EMBER_KERNELS_EMBED_LAYERNORM_H
#define EMBER_KERNELS_EMBED_LAYERNORM_H

#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif
