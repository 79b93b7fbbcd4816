/* worker/model_bert_cuda.h — the BERT encoder on one CUDA device, bf16 weights and activations
 * with fp32 accumulation, fp32 residual stream and fp32 pooled output; the GPU twin of
 * worker/model_bert.h, built from the CUDA kernels in kernels/ (the .cu files).
 *
 * Memory is planned once, at creation, for the largest bucket (T = buckets[n_buckets - 1]); the
 * forward pass allocates nothing. Everything a batch changes lives in one device input area
 * whose layout depends only on the bucket (wrk_bert_cuda_pack writes it on the host, the forward
 * pass's first kernel copies it in), so the kernels read counts and boundaries from device
 * memory and one CUDA graph per bucket serves any mix of sequences.
 *
 * Lanes: the activations (and the cuBLASLt workspace) exist once per lane, the weights and GEMM
 * plans once; passes on different lanes, enqueued on different streams, may run on the GPU at
 * the same time (one pass's kernel tails then fill with the other's work).
 *
 * Thread-safety: a model is used by one thread at a time (the engine's submitting thread); the
 * forward pass enqueues on the stream it is given and returns before the GPU runs it. */
#ifndef EMBER_WORKER_MODEL_BERT_CUDA_H
#define EMBER_WORKER_MODEL_BERT_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/model_info.h"

struct CUstream_st;

typedef struct wrk_bert_cuda wrk_bert_cuda_t;

/* Input area for bucket T, int32 words:
 *   [0] n_seqs  [1] n_tokens  [2] out_dim  [3] normalize (0/1)
 *   [4, 4+T)        token ids            [4+T, 4+2T)  sequence index of each token
 *   [4+2T, 4+3T)    token type ids       [4+3T, 4+4T+1) cu_seqlens (first n_seqs + 1 used)
 *   [4+4T+1]        the chunk's epoch (the pooling's completion flags, wrk_bert_cuda_forward)
 *   [4+4T+4, +4cap) the attention's query tiles in buckets of >= 8192 tokens
 *                   (kern_attention_tiles_build, cap = kern_attention_tiles_cap(T); 16-byte
 *                   aligned when the area is); smaller buckets end at 4+4T+4
 * Only the first n_tokens entries of each token section are meaningful. */
size_t wrk_bert_cuda_input_words(int32_t bucket_tokens);

/* Writes the input area for one chunk into dst (host, wrk_bert_cuda_input_words(bucket) words):
 * sequences given by cu (host, cu[0] may be non-zero: it is rebased), ids/types (host, indexed
 * from cu[0]; types NULL = all 0). Preconditions (validated by the engine): n_tokens = cu[n_seqs]
 * - cu[0] <= bucket_tokens, 1 <= out_dim <= hidden. */
void wrk_bert_cuda_pack(int32_t *dst, int32_t bucket_tokens, const int32_t *ids,
                        const int32_t *types, const int32_t *cu, int32_t n_seqs, int32_t out_dim,
                        bool normalize, uint32_t epoch);

/* Choices made at start. residual: the type of the residual stream (the LayerNorm outputs that
 * the next add reads; the GEMMs read a bf16 copy either way): a kern_residual_type_t, or
 * WRK_BERT_RESIDUAL_AUTO = f16 when the LayerNorm weights bound every output within binary16's
 * range, else fp32. f16 and bf16 cut the LayerNorms' memory traffic (12 bytes per element with
 * fp32, 8 with f16, 6 with bf16); f16 keeps 3 more mantissa bits than bf16. */
#define WRK_BERT_RESIDUAL_AUTO (-1)
/* dtype: the 16-bit type of the weights and activations (kern_dtype_t, kernels/kern_abi.h), or
 * WRK_BERT_DTYPE_AUTO = binary16 when worker/bert_range.h bounds every value the pass stores in
 * 16 bits within its range (8x finer rounding than bf16), else bf16. With binary16 the residual
 * stream (auto) is the GEMMs' binary16 input itself: no second copy. residual bf16 implies bf16
 * (the stream is the bf16 activations); with dtype binary16 it is refused (COM_EINVAL). */
#define WRK_BERT_DTYPE_AUTO (-1)
typedef struct wrk_bert_cuda_opts {
    bool tune;              /* time every GEMM candidate per bucket at start, keep the fastest */
    int residual;           /* kern_residual_type_t or WRK_BERT_RESIDUAL_AUTO */
    const char *tune_cache; /* with tune: file of earlier choices (worker/tune_cache.h), or NULL */
    int lanes;              /* activation sets (0 = 1): passes that may run side by side */
    int dtype;              /* kern_dtype_t or WRK_BERT_DTYPE_AUTO */
    int fold;               /* the folded LayerNorm (model_bert_cuda.c's header), WRK_BERT_FOLD_* */
    int32_t fold_max;       /* WRK_BERT_FOLD_AUTO: the largest bucket folded (0: the default) */
    int fuse;               /* the fused short-bucket kernels, WRK_BERT_FUSE_* */
    int ffn;                /* the fused FFN sublayer, WRK_BERT_FFN_* */
    int32_t ffn_min;        /* its smallest bucket (0: the default of ffn's mode) */
    int prune;              /* the pruned last layer, WRK_BERT_PRUNE_* */
} wrk_bert_cuda_opts_t;
/* prune: with a pooling that reads one row a sequence (CLS, last token), the last layer past its
 * attention runs on those rows alone (model_bert_cuda.c's header comment): AUTO at the unfolded
 * buckets whose residual stream is the 16-bit activations (as the fused FFN's), for chunks of at
 * most wrk_bert_cuda_tail_rows sequences; OFF never. */
#define WRK_BERT_PRUNE_AUTO 0
#define WRK_BERT_PRUNE_OFF  1
/* fold: OFF; ON, every bucket (binary16 activations that hold the folded pass's values, hidden %
 * 64 == 0 and a Hopper GPU, else refused with COM_EUNSUPPORTED); AUTO, the buckets of up to
 * fold_max tokens (default: the buckets of up to WRK_BERT_FOLD_ELEMS_DEFAULT / hidden tokens,
 * wrk_bert_cuda_fold_max_default) where ON would be taken with the residual stream auto or f16,
 * else none. Measured on the H200 (docs/benchmarks.md, eighteenth and twenty-seventh rounds): the
 * fold wins up to 256 tokens (BERT-base 0.411 against 0.463 ms at 256; MiniLM 0.152 against
 * 0.163); at 512 MiniLM gains (0.188 against 0.199 ms) and BERT-base loses (0.604 against 0.544);
 * from 1024 on both lose. The crossover is a layer's size: 512 x 384 = 256 x 768 activations. So
 * AUTO keeps both passes (the folded QKV and FFN-up weights twice) and picks one per bucket. */
#define WRK_BERT_FOLD_OFF  0
#define WRK_BERT_FOLD_ON   1
#define WRK_BERT_FOLD_AUTO 2
/* tokens x hidden of the largest bucket folded by default (512 x 384 = 256 x 768) */
#define WRK_BERT_FOLD_ELEMS_DEFAULT 196608
/* the largest bucket AUTO folds by default for a model of this hidden size: the tokens of
 * WRK_BERT_FOLD_ELEMS_DEFAULT activations (MiniLM 512, BERT-base 256) */
static inline int32_t wrk_bert_cuda_fold_max_default(int32_t hidden) {
    return hidden > 0 ? WRK_BERT_FOLD_ELEMS_DEFAULT / hidden : 0;
}
/* fuse: ON runs a layer's QKV projection and attention as one kernel (kernels/qkv_attention.h)
 * at every bucket it supports (<= 128 tokens, Hopper); AUTO does so only at head dim 32, where it
 * was measured faster (H200, MiniLM 1 x 128: GPU 0.1165 against 0.1190 ms; at BERT-base's head
 * dim 64 it was slower, 0.360 against 0.311); OFF keeps the GEMM + attention pair everywhere. */
#define WRK_BERT_FUSE_AUTO 0
#define WRK_BERT_FUSE_OFF  1
#define WRK_BERT_FUSE_ON   2
/* ffn: a layer's FFN-up, GELU, FFN-down and LayerNorm as one kernel (kernels/ffn.h: the
 * [T, I] intermediate never leaves the chip) at the buckets of at least ffn_min tokens that are
 * not folded, where the kernel runs the shape (kern_ffn_supported: Hopper, hidden 384) and the
 * residual stream is the 16-bit activations themselves (residual f16 with binary16 activations,
 * or bf16): the kernel's residual is its own input. ON: ffn_min default 1, every such bucket
 * (the fold keeps its own); refused with COM_EUNSUPPORTED when the model, GPU or residual stream
 * rule it out, or the fold takes every bucket. AUTO: ffn_min default 0.9 of
 * kern_ffn_wave_rows(), a wave of the kernel's 128-row tiles (15206 tokens on the H200's 132
 * SMs, so its 16384-token bucket, 128 tiles: with ffn=on whole MiniLM passes ran 6.4% slower at
 * 12288 tokens, 96 tiles, 29% at 8192; this default against ffn=off: 2.1% faster at 16384, even
 * on the 100-text ragged batch; docs/benchmarks.md, thirty-fifth and thirty-sixth rounds);
 * nothing when ineligible. OFF: the two GEMMs everywhere. Fused buckets have no FFN plans. */
#define WRK_BERT_FFN_AUTO 0
#define WRK_BERT_FFN_OFF  1
#define WRK_BERT_FFN_ON   2

/* Loads weights_path onto the current CUDA device (bf16, Q/K/V fused, LayerNorm parameters
 * fp32), plans activations for the largest of buckets[0..n_buckets) (ascending) and one cuBLASLt
 * algorithm per GEMM and bucket (heuristic run here, once; with opts->tune, the fastest of its
 * candidates, timed here on layer 0's weights, 5-6 s for 76 buckets on the H200, or taken from
 * opts->tune_cache when it holds this GPU's earlier choice). Returns 0 with *out, or
 * COM_EIO / COM_EFORMAT / COM_EUNSUPPORTED (activation, head_dim not 32/64, hidden % 8, fold=on
 * or ffn=on where they cannot run) /
 * COM_ENOMEM / COM_EINTERNAL (CUDA or cuBLASLt failed; err says where) with *out NULL. */
int wrk_bert_cuda_new(const com_model_info_t *info, const char *weights_path,
                      const int32_t *buckets, int32_t n_buckets, const wrk_bert_cuda_opts_t *opts,
                      wrk_bert_cuda_t **out, com_error_t *err);
void wrk_bert_cuda_destroy(wrk_bert_cuda_t **self_p);

size_t wrk_bert_cuda_device_bytes(const wrk_bert_cuda_t *m); /* weights + lanes x (acts + ws) */
int wrk_bert_cuda_residual(const wrk_bert_cuda_t *m);        /* the kern_residual_type_t chosen */
int wrk_bert_cuda_dtype(const wrk_bert_cuda_t *m);           /* the kern_dtype_t chosen */
/* The largest bucket the folded pass runs (0: none; every bucket with fold ON). */
int32_t wrk_bert_cuda_fold_max(const wrk_bert_cuda_t *m);
/* The largest bucket whose pass runs QKV + attention as one kernel (0: none). */
int32_t wrk_bert_cuda_fuse_max(const wrk_bert_cuda_t *m);
/* The smallest bucket whose pass runs the fused FFN (0: none); every larger one does too. */
int32_t wrk_bert_cuda_ffn_min(const wrk_bert_cuda_t *m);
/* The sequences a chunk of bucket buckets[bucket_index] may have to run the pruned last layer
 * (wrk_bert_cuda_forward's pruned; 0: the bucket has none). */
int32_t wrk_bert_cuda_tail_rows(const wrk_bert_cuda_t *m, int32_t bucket_index);
/* GEMM plans whose algorithm start-up timed, and those taken from the tuning cache. */
void wrk_bert_cuda_plan_counts(const wrk_bert_cuda_t *m, int32_t *timed, int32_t *cached);

/* Enqueues the whole forward pass for bucket buckets[bucket_index] on stream, in lane's
 * activations (0 <= lane < opts.lanes; a lane's passes must be ordered, e.g. by one stream per
 * lane), capturable: no allocation, no synchronisation, no host reads of device data. in: the
 * batch's input area (wrk_bert_cuda_pack, wrk_bert_cuda_input_words(bucket) words, 16-byte
 * aligned), a device address, typically of mapped pinned host memory: the first kernel copies it
 * into the model's device input area, so no copy-engine transfer is needed; NULL = the device area
 * already holds it. out: where the pooled [n_seqs, out_dim] fp32 result goes (16-byte aligned
 * device address, e.g. mapped host memory, which the pooling kernel then writes across PCIe); NULL
 * = an internal device buffer. done: NULL, or [bucket] flags (device address, e.g. mapped host
 * memory): the pooling writes the input's epoch into done[s] once row s of out is visible
 * system-wide (kernels/pool.h, kern_pool_done_t), so a host spinning on them sees the result
 * without waiting for an event. A CUDA graph of the pass bakes the three addresses. pruned: the
 * pruned last layer (wrk_bert_cuda_opts_t's prune), for a batch of at most
 * wrk_bert_cuda_tail_rows(bucket_index) sequences (the caller's promise: the device reads the
 * count; a bucket without a tail refuses it, COM_EINVAL). Returns 0 or COM_EINTERNAL /
 * COM_EINVAL with err. */
int wrk_bert_cuda_forward(wrk_bert_cuda_t *m, int32_t lane, int32_t bucket_index, bool pruned,
                          const int32_t *in, float *out, uint32_t *done, struct CUstream_st *stream,
                          com_error_t *err);

#endif
