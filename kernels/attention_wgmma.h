/* kernels/attention_wgmma.h — internal (C++, for kernels/attention.cu only): ragged attention on
 * Hopper's warp-group MMA (wgmma; sm_90a only), same contract and arguments as
 * kern_attention_cuda (kernels/attention.h), bf16 or binary16 operands. */
#ifndef EMBER_KERNELS_ATTENTION_WGMMA_H
#define EMBER_KERNELS_ATTENTION_WGMMA_H

#include "kernels/attention.h"
#include "kernels/kern_cuda.h"

/* true iff the current device can run it (compute capability 9.0) and head_dim is 32 or 64 */
bool kern_attention_wgmma_valid(const kern_attention_params_t *p);
/* true iff out and ldo suit its 16-byte output stores: out 16-byte aligned, ldo a multiple of 8 */
bool kern_attention_wgmma_out_ok(const uint16_t *out, int64_t ldo);
/* q, k, v, out in dtype (bf16 or binary16; else COM_EINVAL); out and ldo as
 * kern_attention_wgmma_out_ok wants (else COM_EINVAL) */
int kern_attention_wgmma_cuda(const kern_attention_params_t *p, kern_dtype_t dtype, uint16_t *out,
                              int64_t ldo, const uint16_t *q, int64_t ldq, const uint16_t *k,
                              int64_t ldk, const uint16_t *v, int64_t ldv, const int32_t *cu,
                              const int32_t *tok_seq, const int32_t *n_tokens, const int32_t *tiles,
                              int32_t max_tokens, cudaStream_t stream, com_error_t *err);

/* kern_attention_pooled_cuda's kernel (kernels/attention.h): one CTA a (sequence, head) for the
 * sequence's first row (last false) or last row (last true); max_seqs >= *n_seqs CTAs a head */
int kern_attention_wgmma_pooled_cuda(const kern_attention_params_t *p, kern_dtype_t dtype,
                                     uint16_t *out, int64_t ldo, const uint16_t *q, int64_t ldq,
                                     const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
                                     const int32_t *cu, const int32_t *tok_seq,
                                     const int32_t *n_tokens, const int32_t *n_seqs,
                                     int32_t max_seqs, bool last, int32_t max_tokens,
                                     cudaStream_t stream, com_error_t *err);

#endif
