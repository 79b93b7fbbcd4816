/* kernels/pool.h — sentence pooling over packed sequences, with optional L2 normalisation and
 * Matryoshka truncation:
 *
 *   e_s = CLS: h[first token of s] | MEAN: mean of h over s's tokens | LAST: h[last token of s]
 *   out[s] = e_s[0..out_dim)                      normalize = false
 *   out[s] = e_s[0..out_dim) / max(||e_s[0..out_dim)||_2, 1e-12)   normalize = true
 *
 * i.e. truncate, then (re-)normalise — what sentence-transformers gives with truncate_dim and
 * normalize_embeddings=True, and, on a normalised embedding, the same as normalising, truncating
 * and normalising again. Reference/CPU version; CUDA: kern_pool_cuda, and kern_pool_folded_cuda
 * over a folded LayerNorm's stream. */
#ifndef EMBER_KERNELS_POOL_H
#define EMBER_KERNELS_POOL_H

#include <stdbool.h>
#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kern_pool_mode {
    KERN_POOL_CLS = 0,
    KERN_POOL_MEAN,
    KERN_POOL_LAST,
} kern_pool_mode_t;

/* The row CLS pooling (a sequence's first token) or LAST pooling (its last) reads of sequence s. */
static inline int32_t kern_pool_row(const int32_t *cu_seqlens, int32_t s, kern_pool_mode_t mode) {
    return mode == KERN_POOL_LAST ? cu_seqlens[s + 1] - 1 : cu_seqlens[s];
}

/* Every sequence has >= 1 token (caller-validated); 1 <= out_dim <= hidden. */
void kern_pool_ref(float *out,                /* [n_seqs, out_dim], host, fp32 */
                   const float *h,            /* [n_tokens, hidden], host, fp32 */
                   const int32_t *cu_seqlens, /* [n_seqs + 1], host */
                   int32_t n_seqs, int32_t hidden, kern_pool_mode_t mode, int32_t out_dim,
                   bool normalize);

/* The row a one-row pooling reads of each sequence (CLS: its first token, LAST: its last),
 * gathered from two [n_tokens, hidden] 16-bit arrays: dst_a[s] = src_a[row(s)] and dst_b[s] =
 * src_b[row(s)] for s < n_seqs, bit copies; rows [n_seqs, max_rows) of both set to zero. For a
 * last layer that computes only the pooled rows (worker/model_bert_cuda.c). dst and src do not
 * overlap; n_seqs <= max_rows; mode CLS or LAST. Reference: */
void kern_pool_rows_ref(uint16_t *dst_a, const uint16_t *src_a, /* [max_rows | n_tokens, hidden] */
                        uint16_t *dst_b, const uint16_t *src_b, /* the same */
                        const int32_t *cu_seqlens, int32_t n_seqs, int32_t max_rows, int32_t hidden,
                        kern_pool_mode_t mode);

#ifdef EMBER_HAVE_CUDA
/* Completion flags for a host waiting on mapped memory (both device addresses): once out[s] is
 * written and visible system-wide (to the host too), flags[s] = *epoch (s < *n_seqs). epoch is a
 * per-batch number (device memory, may be read before the PDL wait, like n_seqs); a waiter that
 * packed a fresh epoch knows row s is complete when flags[s] holds it. */
typedef struct kern_pool_done {
    uint32_t *flags;      /* [max_seqs] */
    const int32_t *epoch; /* [1] */
} kern_pool_done_t;

/* CUDA (pool.cu): the same op on the device, with every per-batch number read from device
 * memory so one CUDA graph serves any batch: *n_seqs sequences (at most max_seqs), *out_dim kept
 * dims (1..hidden), *normalize (0/1). out is packed [*n_seqs, *out_dim] fp32. h is the fp32 final
 * hidden state. A cluster of 8 CTAs per sequence (grid-stride), each summing a part of its
 * tokens, CTA 0 adding the parts and normalising (pool.cu). cu_seqlens, *n_seqs, *out_dim and
 * *normalize may be read before the kernel's PDL wait (kernels/kern_cuda_dev.cuh), so the grid
 * launched just before it on the stream must not write them (h may be its output). done: NULL,
 * or the completion flags above (both pointers set, else COM_EINVAL). Returns 0, COM_EINVAL,
 * COM_EUNSUPPORTED (hidden > 8192) or COM_EINTERNAL. Enqueued on stream. */
int kern_pool_cuda(float *out,                   /* [max_seqs * hidden] capacity, device fp32 */
                   const float *h,               /* [n_tokens, hidden], device fp32 */
                   const int32_t *cu_seqlens,    /* [n_seqs + 1], device */
                   const int32_t *n_seqs,        /* [1], device */
                   const int32_t *out_dim,       /* [1], device */
                   const int32_t *normalize,     /* [1], device */
                   const kern_pool_done_t *done, /* NULL or completion flags */
                   int32_t max_seqs, int32_t hidden, kern_pool_mode_t mode,
                   struct CUstream_st *stream, com_error_t *err);

/* CUDA: kern_pool_rows_ref with *n_seqs in device memory (read after the PDL wait: src may be
 * the previous grid's output), one 16-byte piece a thread; the grid is sized by max_rows, so one
 * graph serves every batch of up to max_rows sequences. hidden a multiple of 8 and all four
 * arrays 16-byte aligned, mode CLS or LAST (else COM_EINVAL). Enqueued on stream. */
int kern_pool_rows_cuda(uint16_t *dst_a, const uint16_t *src_a, uint16_t *dst_b,
                        const uint16_t *src_b, const int32_t *cu_seqlens, /* device */
                        const int32_t *n_seqs,                            /* [1], device */
                        int32_t max_rows, int32_t hidden, kern_pool_mode_t mode,
                        struct CUstream_st *stream, com_error_t *err);

/* CUDA: kern_pool_cuda over LN(x) computed on the fly, the final LayerNorm of a model whose last
 * sublayer end is folded (kernels/row_stats.h): h[t, j] = (x[t, j] - mean_t) rstd_t gamma[j] +
 * beta[j], with x 16-bit of type dtype and part its row statistics. gamma / beta are weights
 * (never written by a kernel: may be read before the PDL wait). Each row's statistics are
 * finished once per block by kern::row_stats_one (the bits of every other consumer). 64 <=
 * hidden <= 8192 (COM_EUNSUPPORTED above), hidden % 64 == 0, x 16-byte and part 8-byte aligned.
 * Returns 0, COM_EINVAL, COM_EUNSUPPORTED or COM_EINTERNAL. Reference:
 * kern_row_stats_normalize_ref, then kern_pool_ref. */
int kern_pool_folded_cuda(float *out,                /* [max_seqs * hidden] capacity, device fp32 */
                          const uint16_t *x,         /* [n_tokens, hidden], device dtype */
                          kern_dtype_t dtype,        /* of x */
                          const float *part,         /* [n_tokens, hidden / 64, 2], device */
                          const float *gamma,        /* [hidden], device fp32 */
                          const float *beta,         /* [hidden], device fp32 */
                          float eps,                 /* of the LayerNorm */
                          const int32_t *cu_seqlens, /* [n_seqs + 1], device */
                          const int32_t *n_seqs,     /* [1], device */
                          const int32_t *out_dim,    /* [1], device */
                          const int32_t *normalize,  /* [1], device */
                          const kern_pool_done_t *done, /* NULL or completion flags */
                          int32_t max_seqs, int32_t hidden, kern_pool_mode_t mode,
                          struct CUstream_st *stream, com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
