/* kernels/row_stats.cuh — device side of kernels/row_stats.h: a row's mean and 1 / sqrt(var +
 * eps) from its folded-LayerNorm partials, by one thread, in the header's fixed order, so that
 * every kernel that normalises a row on the fly (GEMM epilogues, pooling) gets the same bits as
 * the others and as kern_row_stats_finish_ref (fused multiply-adds written out, IEEE division
 * and square root). */
#ifndef EMBER_KERNELS_ROW_STATS_CUH
#define EMBER_KERNELS_ROW_STATS_CUH

#include "kernels/row_stats.h"

namespace kern {

/* Rows of up to this many 64-column blocks (1024 columns) have their partials loaded at once, in
 * registers; wider ones are read in a loop. With the loop, each of the 4 block chains' first
 * loads waited on its own (a runtime trip count), 24 dependent loads per row at hidden 768: the
 * folded GEMM epilogues spent longer on the statistics than on the product. */
constexpr int kStatsRegBlocks = 16;

/* (G_0 + G_1) + (G_2 + G_3) (row_stats.h) */
__device__ __forceinline__ float stats_total(const float (&g)[4]) {
    return __fadd_rn(__fadd_rn(g[0], g[1]), __fadd_rn(g[2], g[3]));
}
/* block k's term of the squared deviations: M2_k + 64 (sum_k / 64 - mu)^2 */
__device__ __forceinline__ float stats_m2_term(float2 p, float mu) {
    const float d = __fmaf_rn(p.x, 1.0f / KERN_STATS_COLS, -mu);
    return __fmaf_rn((float)KERN_STATS_COLS * d, d, p.y);
}
__device__ __forceinline__ float2 stats_finish(float m2_total, float mu, int cols, float eps) {
    const float var = __fdiv_rn(m2_total, (float)cols);
    return make_float2(mu, __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, eps))));
}

/* (mean, rstd) of a row from its first nb <= N partials, already in registers (v[k], k < nb;
 * cols = 64 nb): row_stats_one's arithmetic and order, for a kernel that loads the partials early
 * (kernels/qkv_attention.cu). */
template <int N>
__device__ __forceinline__ float2 row_stats_regs(const float2 (&v)[N], int nb, int cols,
                                                 float eps) {
    float g[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < N; k++)
        if (k < nb)
            g[k % 4] = __fadd_rn(g[k % 4], v[k].x);
    const float mu = __fdiv_rn(stats_total(g), (float)cols);
#pragma unroll
    for (int q = 0; q < 4; q++)
        g[q] = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++)
        if (k < nb)
            g[k % 4] = __fadd_rn(g[k % 4], stats_m2_term(v[k], mu));
    return stats_finish(stats_total(g), mu, cols, eps);
}

/* (mean, rstd) of the row whose partials start at part (cols / 64 blocks, 8-byte aligned). REGS:
 * rows of up to kStatsRegBlocks blocks loaded at once; else (or wider rows) in a loop of few
 * registers, for threads that have few. */
template <bool REGS = true>
__device__ __forceinline__ float2 row_stats_one(const float *__restrict__ part, int cols,
                                                float eps) {
    const int nb = cols / KERN_STATS_COLS;
    const float2 *p2 = reinterpret_cast<const float2 *>(part);
    if (REGS && nb <= kStatsRegBlocks) {
        float2 v[kStatsRegBlocks];
#pragma unroll
        for (int k = 0; k < kStatsRegBlocks; k++)
            v[k] = k < nb ? p2[k] : make_float2(0.f, 0.f);
        return row_stats_regs(v, nb, cols, eps);
    }
    float g[4] = {0.f, 0.f, 0.f, 0.f};
    /* 4 blocks a step, so that g stays in registers (g[k % 4] with k unknown would not) */
    for (int k = 0; k < nb; k += 4)
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (k + q < nb)
                g[q] = __fadd_rn(g[q], p2[k + q].x);
    const float mu = __fdiv_rn(stats_total(g), (float)cols);
#pragma unroll
    for (int q = 0; q < 4; q++)
        g[q] = 0.f;
    for (int k = 0; k < nb; k += 4)
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (k + q < nb)
                g[q] = __fadd_rn(g[q], stats_m2_term(p2[k + q], mu));
    return stats_finish(stats_total(g), mu, cols, eps);
}

} // namespace kern

#endif
