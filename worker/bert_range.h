/* worker/bert_range.h — provable bounds on the magnitude of every value a post-LN BERT forward
 * pass stores in 16 bits, from its weights alone: no input can exceed them. The CUDA model
 * (worker/model_bert_cuda.c) checks them at load to decide whether IEEE binary16, finite only
 * below 65504, can hold the residual stream and the whole pass.
 *
 * The bounds, each over every input (H = hidden size):
 *   LayerNorm output    |y_i| <= sqrt(H - 1) |gamma_i| + |beta_i|: with the biased variance the
 *                       normalised row n has sum n_i^2 <= H and zero mean, so |n_i| <= sqrt(H - 1)
 *   GEMM after a LN     y_j = sum_i W_ji (gamma_i n_i + beta_i) + c_j, so by Cauchy-Schwarz
 *   (QKV, FFN-up)       |y_j| <= sqrt(H) ||W_j o gamma||_2 + |W_j . beta + c_j|
 *   attention output    a convex combination of V rows: the V rows' bound
 *   GEMM after an       |x_i| <= X element-wise gives |y_j| <= X ||W_j||_1 + |c_j|
 *   element-wise bound  (output projection after attention, FFN-down after the GELU)
 *   GELU                GELU(z) lies in [-0.172, max(z, 0)] (binary16's GELU included)
 * Each call returns its bound and raises `worst` (the largest over everything checked, the
 * 16-bit weights included); a NaN or infinite weight makes it infinite. Pure C over fp32 host
 * copies of the weights, double accumulation. For all-MiniLM-L6-v2 every bound stays below
 * 6,300 (docs/results/2026-12-01-h200-session11/f16_bounds_minilm.txt). */
#ifndef EMBER_WORKER_BERT_RANGE_H
#define EMBER_WORKER_BERT_RANGE_H

#include <stdint.h>

#include "common/error.h"

typedef struct wrk_bert_range {
    int32_t hidden;
    float *gamma, *beta; /* [hidden]: the last LayerNorm's, whose output the next GEMM reads */
    double ln_max;       /* the largest LayerNorm output bound so far */
    double worst;        /* the largest bound so far, over every value checked */
    double fold_max;     /* the largest of what only a folded pass stores (below) */
} wrk_bert_range_t;

/* Zeroed bounds for hidden size hidden (>= 2). Returns 0 or COM_ENOMEM / COM_EINVAL. */
int wrk_bert_range_init(wrk_bert_range_t *r, int32_t hidden, com_error_t *err);
void wrk_bert_range_fini(wrk_bert_range_t *r);

/* Values stored as they are (weights, embedding tables): max |v|. */
double wrk_bert_range_values(wrk_bert_range_t *r, const float *v, size_t n);
/* A LayerNorm with gamma, beta [hidden] (copied: the next after_ln call reads them). */
double wrk_bert_range_layernorm(wrk_bert_range_t *r, const float *gamma, const float *beta);
/* Rows [row0, row1) of a GEMM w [rows, hidden] + c whose input is the last LayerNorm's output. */
double wrk_bert_range_after_ln(wrk_bert_range_t *r, const float *w, const float *c, int32_t row0,
                               int32_t row1);
/* A GEMM w [out, in] + c whose input is bounded element-wise by x. */
double wrk_bert_range_after_bound(wrk_bert_range_t *r, const float *w, const float *c, int32_t out,
                                  int32_t in, double x);
/* GELU applied to values bounded by z. */
double wrk_bert_range_gelu(wrk_bert_range_t *r, double z);
/* What only a pass with the folded LayerNorm (docs/engine.md) stores in 16 bits: a pre-LN sum
 * bounded by bound (a sublayer's output bound plus its residual's), or the values v of a weight
 * or bias after folding. These raise fold_max, not worst: they decide whether that pass can run
 * in binary16, not the other. NaN counts as infinite. */
double wrk_bert_range_fold(wrk_bert_range_t *r, double bound);
double wrk_bert_range_fold_values(wrk_bert_range_t *r, const float *v, size_t n);

#endif
