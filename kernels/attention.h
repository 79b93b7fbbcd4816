/* kernels/attention.h — ragged (packed, padding-free) multi-head attention, softmax(Q K^T *
 * scale) V per sequence and head, bidirectional or causal, with grouped-query heads.
 *
 * Layout: token t of the batch has its query at q + t*ldq, key at k + t*ldk, value at
 * v + t*ldv; head h occupies [h*head_dim, (h+1)*head_dim) of the row (kv head kh likewise).
 * So the packed QKV GEMM output [n_tokens, 3*hidden] is q = qkv, k = qkv + hidden,
 * v = qkv + 2*hidden with ldq = ldk = ldv = 3*hidden; separate buffers work with ld = width.
 * Output row t, head h at out + t*ldo + h*head_dim. Sequence s is tokens
 * [cu_seqlens[s], cu_seqlens[s+1]); tokens attend only within their sequence.
 * Reference/CPU version (fp32); the CUDA version is kern_attention_cuda (varlen), with bf16 or
 * binary16 q/k/v/out (kern_dtype_t). */
#ifndef EMBER_KERNELS_ATTENTION_H
#define EMBER_KERNELS_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sequences at least this long take the cblas_sgemm path (attention.c); shorter ones the loops. */
#define KERN_ATTENTION_GEMM_MIN_LEN 32

typedef struct kern_attention_params {
    int32_t n_heads;    /* query heads */
    int32_t n_kv_heads; /* key/value heads; divides n_heads (== n_heads: MHA, fewer: GQA) */
    int32_t head_dim;   /* any >= 1 */
    float scale;        /* logit scale, usually 1/sqrt(head_dim); the CUDA kernel needs > 0 */
    bool causal;        /* false: bidirectional (BERT); true: token i sees tokens <= i */
} kern_attention_params_t;

/* Floats of scratch one part needs for sequences of at most max_seqlen tokens. */
size_t kern_attention_ref_scratch_floats(const kern_attention_params_t *p, int32_t max_seqlen);

/* Computes the (sequence, head) units u = s*n_heads + h with u % n_parts == part, so n_parts
 * threads calling it with part = 0..n_parts-1 (each with its own scratch) cover the batch
 * (heads of one sequence alternate between parts, which balances ragged lengths). Long
 * sequences call cblas_sgemm, so OpenBLAS must be safe to call from the calling threads (it is,
 * built with USE_THREAD; with several parts, 1 OpenBLAS thread per call is best).
 * out must not overlap q, k, v. Preconditions as above (caller-validated). */
void kern_attention_ref(const kern_attention_params_t *p, float *out,
                        int64_t ldo,                 /* [n_tokens, >= n_heads*head_dim] fp32 */
                        const float *q, int64_t ldq, /* [n_tokens, ...], host, fp32 */
                        const float *k, int64_t ldk, /* [n_tokens, ...], host, fp32 */
                        const float *v, int64_t ldv, /* [n_tokens, ...], host, fp32 */
                        const int32_t *cu_seqlens,   /* [n_seqs + 1], host */
                        int32_t n_seqs, int32_t part, int32_t n_parts,
                        float *scratch); /* [kern_attention_ref_scratch_floats], host */

/* The same attention for one query row a sequence: out row s (of [n_seqs, ...]) is the output of
 * packed query row rows[s] (cu_seqlens[s] <= rows[s] < cu_seqlens[s + 1]) over its sequence's keys
 * (causal: the keys up to it). For poolings that read one row a sequence (CLS, last token), whose
 * last layer needs no other query. Units (s, h) split by part as kern_attention_ref's, with the
 * same scratch; out must not overlap q, k, v. */
void kern_attention_rows_ref(const kern_attention_params_t *p, float *out,
                             int64_t ldo, /* [n_seqs, >= n_heads*head_dim] fp32 */
                             const float *q, int64_t ldq, const float *k, int64_t ldk,
                             const float *v, int64_t ldv, const int32_t *cu_seqlens,
                             const int32_t *rows, /* [n_seqs], host */
                             int32_t n_seqs, int32_t part, int32_t n_parts, float *scratch);

/* The query-tile table of the CUDA attention (attention_tiles.c), built on the host per batch:
 * entry i (KERN_ATTENTION_TILE_WORDS words) = the packed rows [q0, q0 + n) one CTA takes (per
 * head), q0 | (n - 1) << 24 with 1 <= n <= 64, then the keys [kbeg, kend) it walks (the first
 * row's sequence's first key, the last row's sequence's end), then 1 if those rows are of one
 * sequence, else 0 (the kernel then looks up each row's range); -1 in every word: no tile. The
 * entry gives a CTA its work in one read. Sequences of >= 64 tokens get tiles of their own (no
 * other sequence's keys to walk or mask), runs of shorter ones are packed densely; the tiles come
 * in the order of their key walks, longest first, so the short ones fill the last wave. Every row
 * in [0, cu_seqlens[n_seqs]) is in exactly one tile. */
#define KERN_ATTENTION_TILES_MAX_TOKENS (1 << 24) /* q0 fits 24 bits */
#define KERN_ATTENTION_TILE_WORDS       4
/* Entries of the table for buckets of max_tokens (1 .. KERN_ATTENTION_TILES_MAX_TOKENS; else 0):
 * ceil(max_tokens / 64) + ceil(max_tokens / 256). */
int32_t kern_attention_tiles_cap(int32_t max_tokens);
/* Fills tiles[KERN_ATTENTION_TILE_WORDS * kern_attention_tiles_cap(max_tokens)] for the sequences
 * of cu_seqlens (host, cu_seqlens[0] == 0, cu_seqlens[n_seqs] <= max_tokens); returns the number of
 * tiles, or -1 for bad arguments. No allocation; O(n_seqs + tiles). */
int32_t kern_attention_tiles_build(int32_t *tiles, int32_t max_tokens, const int32_t *cu_seqlens,
                                   int32_t n_seqs);

#ifdef EMBER_HAVE_CUDA
/* CUDA (attention.cu): the same op on tensor cores (mma.sync m16n8k16 of dtype, fp32 accumulation,
 * online softmax; FlashAttention-2 style; on compute capability 9.0 from 512 tokens the same
 * tiling on warp-group MMAs, attention_wgmma.cu: see kern_attention_cuda_kernel
 * below). q/k/v/out all in dtype: bf16 or IEEE binary16 (kern_dtype_t; binary16 only for models
 * whose q/k/v stay inside its range, |x| <= 65504; softmax and accumulation are fp32 either way;
 * another dtype: COM_EINVAL). The first call per device also sets the
 * kernel's function attributes. The grid is sized by the bucket: (ceil(max_tokens / 64) packed
 * query tiles, n_heads); a tile is 64 consecutive packed tokens and may span several sequences: it
 * walks the keys of every sequence it touches and masks keys of other sequences, so no per-sequence
 * launch is needed and one CUDA graph serves any mix of sequences. tiles (device, 16-byte
 * aligned, optional: NULL = those packed tiles in order) is the batch's kern_attention_tiles_build
 * table (kern_attention_tiles_cap(max_tokens) entries; the grid is sized by that), which the wgmma
 * kernel follows; the mma.sync kernel ignores it (same results). Rows past *n_tokens are not
 * written. Supported: head_dim 32 and 64 (128 later), GQA (n_kv_heads divides
 * n_heads), causal or not; q / k / v 16-byte aligned with ldq / ldk / ldv multiples of 8, out
 * 4-byte aligned with ldo even (else COM_EINVAL / COM_EUNSUPPORTED; the wgmma kernel stores
 * 16-byte pieces and is taken only for out 16-byte aligned with ldo a multiple of 8).
 * cu_seqlens, tok_seq, *n_tokens and tiles may be read before the kernel's PDL wait
 * (kernels/kern_cuda_dev.cuh), so the grid launched just before it on the stream must not write
 * them (q/k/v may be its output). Enqueued on stream. */
int kern_attention_cuda(const kern_attention_params_t *p, kern_dtype_t dtype, uint16_t *out,
                        int64_t ldo,                    /* [max_tokens, ...], device, in dtype */
                        const uint16_t *q, int64_t ldq, /* device, in dtype */
                        const uint16_t *k, int64_t ldk, /* device, in dtype */
                        const uint16_t *v, int64_t ldv, /* device, in dtype */
                        const int32_t *cu_seqlens,      /* [n_seqs + 1], device */
                        const int32_t *tok_seq,         /* [max_tokens], device */
                        const int32_t *n_tokens,        /* [1], device */
                        const int32_t *tiles,           /* see above; device or NULL */
                        int32_t max_tokens, struct CUstream_st *stream, com_error_t *err);
/* CUDA: the output of one query row a sequence, its first (last false: CLS pooling) or its last
 * (last true: last-token pooling), written at its packed row; the other rows are not written.
 * For a last layer that keeps only those rows (worker/model_bert_cuda.c). The wgmma kernel with
 * one CTA a (sequence, head) walking the sequence's keys (its 64-row tile holds the one live
 * row), *n_seqs (device, read before the PDL wait like cu_seqlens) <= max_seqs sequences, the grid
 * sized by max_seqs; every sequence holds at least one token (an empty one would leave its CTA
 * waiting for keys that are never loaded; the engine refuses empty sequences, worker/engine.c).
 * Compute capability 9.0 and head dim 32 / 64 only, else COM_EUNSUPPORTED (the caller then runs
 * kern_attention_cuda, whose other rows are merely extra); the other arguments as
 * kern_attention_cuda's (out 16-byte aligned, ldo a multiple of 8). Reference:
 * kern_attention_rows_ref. */
bool kern_attention_pooled_supported(const kern_attention_params_t *p); /* on this device */
int kern_attention_pooled_cuda(const kern_attention_params_t *p, kern_dtype_t dtype, uint16_t *out,
                               int64_t ldo, const uint16_t *q, int64_t ldq, const uint16_t *k,
                               int64_t ldk, const uint16_t *v, int64_t ldv,
                               const int32_t *cu_seqlens, /* device */
                               const int32_t *tok_seq, const int32_t *n_tokens,
                               const int32_t *n_seqs, /* [1], device */
                               int32_t max_seqs, bool last, int32_t max_tokens,
                               struct CUstream_st *stream, com_error_t *err);
/* The kernels kern_attention_cuda chooses from, for tests and benches: AUTO is what
 * kern_attention_cuda runs: WGMMA for max_tokens >= 512 on compute capability 9.0, MMA otherwise
 * (measured on an H200, bench_kernels_cuda, session 26: the wgmma kernel 61.4 against 67.5-68.6
 * us at head dim 32 and 16384 ragged tokens, 84.4-85.3 against 105.5-109.1 at 64; at 128 tokens
 * they are even, and inside the engine's 1 x 128-token graph the mma one was faster); MMA the
 * mma.sync kernel (any supported device); WGMMA the warp-group MMA kernel (attention_wgmma.cu;
 * compute capability 9.0 only, else COM_EUNSUPPORTED). The choice does not depend on dtype. */
typedef enum kern_attention_kernel {
    KERN_ATTENTION_AUTO = 0,
    KERN_ATTENTION_MMA = 1,
    KERN_ATTENTION_WGMMA = 2,
} kern_attention_kernel_t;
int kern_attention_cuda_kernel(kern_attention_kernel_t which, const kern_attention_params_t *p,
                               kern_dtype_t dtype, uint16_t *out, int64_t ldo, const uint16_t *q,
                               int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v,
                               int64_t ldv, const int32_t *cu_seqlens, const int32_t *tok_seq,
                               const int32_t *n_tokens, const int32_t *tiles, int32_t max_tokens,
                               struct CUstream_st *stream, com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
