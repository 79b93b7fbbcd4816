/* worker/model_bert.h — the BERT encoder (BertModel and checkpoints with a "bert." prefix) on the
 * CPU in fp32: weights from model.safetensors, a workspace planned once for the largest batch,
 * and the forward pass over a packed (padding-free) batch ending in sentence pooling.
 *
 * Forward: h = LN(word[id] + pos[i] + type[tt]); per layer: qkv = h Wqkv^T + bqkv (Q, K, V fused
 * into one [3*hidden, hidden] weight at load), ctx = attention(qkv), h = LN(ctx Wo^T + bo + h),
 * f = GELU(h W1^T + b1), h = LN(f W2^T + b2 + h); then pooling / Matryoshka / L2 (kernels/pool.h).
 * With CLS or last-token pooling the last layer computes only the pooled rows past its QKV.
 *
 * Thread-safety: a loaded wrk_bert_t is immutable and may be shared; a workspace belongs to one
 * thread at a time (wrk_bert_forward uses the pool's helpers and OpenBLAS's threads inside). */
#ifndef EMBER_WORKER_MODEL_BERT_H
#define EMBER_WORKER_MODEL_BERT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/model_info.h"
#include "worker/thread_pool.h"

typedef struct wrk_bert wrk_bert_t;
typedef struct wrk_bert_ws wrk_bert_ws_t;

/* Loads the weights in weights_path (a .safetensors file) for the model info describes. Every
 * tensor is checked against the shape the config implies (missing or mis-shaped: COM_EFORMAT
 * naming it); f32 tensors are used in place from the mapping when 4-byte aligned, f16/bf16 are
 * converted to fp32 copies. Returns 0 with *out, or COM_EIO / COM_EFORMAT / COM_EUNSUPPORTED
 * (family, activation) / COM_ENOMEM with *out NULL. info is copied. */
int wrk_bert_new(const com_model_info_t *info, const char *weights_path, wrk_bert_t **out,
                 com_error_t *err);
void wrk_bert_destroy(wrk_bert_t **self_p);

/* Plans the activations for batches of up to max_tokens tokens (sequences of up to the model's
 * max_position_embeddings) split across n_parts threads. Returns 0 with *out or COM_ENOMEM /
 * COM_EINVAL. */
int wrk_bert_ws_new(const wrk_bert_t *m, int32_t max_tokens, int32_t n_parts, wrk_bert_ws_t **out,
                    com_error_t *err);
void wrk_bert_ws_destroy(wrk_bert_ws_t **self_p);

/* Runs the encoder and pooling on one packed batch that the caller validated (ids and type ids
 * in range, lengths 1..max_position_embeddings, n_tokens <= the workspace's max_tokens,
 * 1 <= out_dim <= hidden). Writes out [n_seqs, out_dim]. pool may be NULL (single-threaded
 * element-wise ops). No allocation. Returns 0 (or COM_EINVAL if a precondition is broken). */
int wrk_bert_forward(const wrk_bert_t *m, wrk_bert_ws_t *ws, wrk_tpool_t *pool,
                     const int32_t *token_ids,  /* [n_tokens], host */
                     const int32_t *type_ids,   /* [n_tokens], host, or NULL = all 0 */
                     const int32_t *cu_seqlens, /* [n_seqs + 1], host */
                     int32_t n_seqs, int32_t n_tokens, int32_t out_dim, bool normalize,
                     float *out, /* [n_seqs, out_dim], host, fp32 */
                     com_error_t *err);

#endif
