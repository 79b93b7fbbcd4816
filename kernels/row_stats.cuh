/* kernels/row_stats.cuh — device side of kernels/row_stats.h: a row's mean and 1 / sqrt(var +
 * eps) from its folded-LayerNorm partials, in the header's fixed order, so that every kernel
 * that normalises a row on the fly (GEMM epilogues, pooling) gets the same bits as the others
 * and as kern_row_stats_finish_ref (fused multiply-adds written out, IEEE division and square
 * root). Either by the 4 lanes of a quad (q = lane % 4 takes blocks q, q + 4, ...; the whole
 * warp calls it, each quad for its own row) or by one thread. */
#ifndef EMBER_KERNELS_ROW_STATS_CUH
#define EMBER_KERNELS_ROW_STATS_CUH

#include "kernels/row_stats.h"

namespace kern {

/* G_q of the blocks' sums, then of their deviation terms (row_stats.h) */
__device__ __forceinline__ float stats_sum_part(const float *__restrict__ part, int nb, int q) {
    float g = 0.f;
    for (int k = q; k < nb; k += 4)
        g = __fadd_rn(g, part[2 * k]);
    return g;
}
__device__ __forceinline__ float stats_m2_part(const float *__restrict__ part, int nb, int q,
                                               float mu) {
    float g = 0.f;
    for (int k = q; k < nb; k += 4) {
        const float d = __fmaf_rn(part[2 * k], 1.0f / KERN_STATS_COLS, -mu);
        g = __fadd_rn(g, __fmaf_rn((float)KERN_STATS_COLS * d, d, part[2 * k + 1]));
    }
    return g;
}
/* (G_0 + G_1) + (G_2 + G_3) over a quad: identical on its 4 lanes (addition commutes) */
__device__ __forceinline__ float stats_quad_total(float g) {
    g = __fadd_rn(g, __shfl_xor_sync(0xffffffffu, g, 1));
    return __fadd_rn(g, __shfl_xor_sync(0xffffffffu, g, 2));
}

/* (mean, rstd) of the row whose partials start at part (cols / 64 blocks), by a quad; every lane
 * of the warp must call it (with its own quad's row). */
__device__ __forceinline__ float2 row_stats_quad(const float *__restrict__ part, int cols,
                                                 float eps, int q) {
    const int nb = cols / KERN_STATS_COLS;
    const float mu = __fdiv_rn(stats_quad_total(stats_sum_part(part, nb, q)), (float)cols);
    const float var = __fdiv_rn(stats_quad_total(stats_m2_part(part, nb, q, mu)), (float)cols);
    return make_float2(mu, __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, eps))));
}

/* The same by one thread. */
__device__ __forceinline__ float2 row_stats_one(const float *__restrict__ part, int cols,
                                                float eps) {
    const int nb = cols / KERN_STATS_COLS;
    float g[4];
#pragma unroll
    for (int q = 0; q < 4; q++)
        g[q] = stats_sum_part(part, nb, q);
    const float mu =
        __fdiv_rn(__fadd_rn(__fadd_rn(g[0], g[1]), __fadd_rn(g[2], g[3])), (float)cols);
#pragma unroll
    for (int q = 0; q < 4; q++)
        g[q] = stats_m2_part(part, nb, q, mu);
    const float var =
        __fdiv_rn(__fadd_rn(__fadd_rn(g[0], g[1]), __fadd_rn(g[2], g[3])), (float)cols);
    return make_float2(mu, __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, eps))));
}

} // namespace kern

#endif
