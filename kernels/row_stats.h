/* kernels/row_stats.h — the row statistics of a folded LayerNorm (docs/engine.md "Folded
 * LayerNorm"): a post-LN sublayer end that does not normalise writes its pre-LN sum x [n, cols]
 * and, per row t and block k of KERN_STATS_COLS columns,
 *
 *   part[(t * (cols / 64) + k) * 2 + 0] = sum of x[t, 64k .. 64k + 63]
 *   part[(t * (cols / 64) + k) * 2 + 1] = sum of (x[t, j] - block mean)^2 over the same columns
 *
 * (fp32, from the fp32 values before x is rounded to 16 bits). Whoever needs LN(x) — the next
 * GEMM's epilogue, the next sublayer end's residual, the pooling — finishes the row's mean and
 * 1 / sqrt(var + eps) from its partials in one fixed order (below), so every CUDA consumer
 * (kernels/row_stats.cuh) gets the same bits: with G_g the sum over blocks k = g, g + 4, g + 8, ...
 * (in that order, from 0) of a per-block term, the row's total is (G_0 + G_1) + (G_2 + G_3). The
 * mean is that total of the blocks' sums over cols; the squared deviations are that total of M2_k +
 * 64 (sum_k / 64 - mean)^2 (the law of total variance: exact, no cancellation, whatever the mean);
 * var = M2 / cols (biased, as torch); rstd = 1 / sqrtf(var + eps). Reference/CPU versions. 64 <=
 * cols <= KERN_STATS_MAX_COLS, cols % 64 == 0. */
#ifndef EMBER_KERNELS_ROW_STATS_H
#define EMBER_KERNELS_ROW_STATS_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KERN_STATS_COLS     64
#define KERN_STATS_MAX_COLS 16384 /* the widest rows the statistics serve */

/* part [n, cols / 64, 2] (layout above) of the fp32 rows x [n, cols]. */
void kern_row_stats_ref(float *part, const float *x, int32_t n, int32_t cols);

/* mean[t] and rstd[t] = 1 / sqrt(var + eps) of each row from its partials, in the fixed order
 * above (mean or rstd may be NULL). */
void kern_row_stats_finish_ref(float *mean, float *rstd, const float *part, int32_t n, int32_t cols,
                               float eps);

/* The folded LayerNorm applied: out[t, j] = (x[t, j] - mean_t) rstd_t gamma[j] + beta[j], the
 * statistics from part (x may be the 16-bit-rounded values the partials were taken before). */
void kern_row_stats_normalize_ref(float *out, const float *x, const float *part, const float *gamma,
                                  const float *beta, int32_t n, int32_t cols, float eps);

#ifdef __cplusplus
}
#endif

#endif
