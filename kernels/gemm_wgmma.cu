/* kernels/gemm_wgmma.cu — our Hopper GEMM for the dense layers (contract in gemm_wgmma.h; used
 * by linear.cu as candidates beside cuBLASLt's algorithms and gemm_mma.cu's):
 * y[n, out] = epi(x[n, in] W[out, in]^T + b), 16-bit in, fp32 accumulation, the epilogue (none,
 * + bias, + bias then exact erf GELU, kern::gelu_pair) applied to the fp32 accumulators and
 * rounded once to 16 bits (a binary16 pair packed by kern::gelu_erf_h2_of_half). Built
 * for sm_90a only (wgmma and the tensor-memory accelerator). The 16-bit type of x, w, b and y
 * (kern_dtype_t: bf16 or binary16) is a template parameter D: wgmma .bf16 or .f16, tensor maps of
 * that type, the epilogue's conversions; every configuration exists for both (same tiles, same
 * shared memory), the plan's dtype picks the kernel.
 *
 * Algorithm: BM x BN output tiles, column tiles fastest. Warp group 0 is the producer: one
 * thread issues TMA copies of a 64-wide K slice of x ([BM][64] 16-bit) and of W ([BN][64]) into a
 * STAGES-deep ring of shared-memory stages, each guarded by a "full" mbarrier (the copies' byte
 * count) and an "empty" one (one arrival per consumer warp group). Warp groups 1..NC consume:
 * for every stage 4 (k16) x MI x wgmma.m64nBNk16 with both operands read from shared memory,
 * one stage's wgmmas kept in flight (wait_group 1), the stage before released. Both operands are
 * K-major with 128-byte rows, the layout TMA's 128-byte swizzle writes and wgmma's swizzled
 * descriptor reads (8-row, 1024-byte core groups; a k16 step advances the address by 32 bytes).
 * TMA fills rows >= n, W rows >= out and K past in with zeros, so there is no tail masking.
 * Without split-K the kernel is persistent (grid = min(tiles, SMs); the ring counter runs on
 * across tiles, so the producer loads the next tile while the consumers store the last).
 * Cooperative mode: the NC groups split a tile's rows. Ping-pong mode (PP): each of the NC = 2
 * or 3 groups owns every NC-th tile, so a group's epilogue overlaps the others' main loops; named
 * barriers make the groups take the ring in turn (without them a group could run a whole ring
 * lap ahead and the mbarrier parities alias). With two consumer groups and many accumulators,
 * setmaxnreg moves registers from the producer (40) to the consumers (232; three groups: 24 / 160).
 * Epilogue: bias, GELU and 16-bit rounding in registers, the tile written into swizzled shared
 * staging and stored by TMA (which clips rows >= n and columns >= out); per-thread 4-byte stores
 * straight from the accumulators wrote at under 1 TB/s and were the large-n bottleneck.
 * Split-K (SPLIT = 2 or 4, one tile per CTA): a cluster of SPLIT CTAs along z, one K range each;
 * the fp32 tiles go to shared memory (the drained ring) and, after a cluster barrier, CTA r sums
 * rows [r BM/S, (r+1) BM/S) over the S tiles in rank order (distributed shared memory):
 * deterministic, no atomics, no workspace (as gemm_mma.cu).
 * LayerNorm epilogue (the "ln" configurations, epilogue 3: y = LayerNorm(x W^T + b + residual)
 * gamma + beta, BERT's post-LN sublayer end): one tile per CTA, and a cluster, sized at launch,
 * of the row block's N / BN column tiles (x split-K ranks, <= 16 CTAs). The idle producer warps
 * stage bias, gamma and beta (before the PDL wait) and the residual tile (cp.async, after it)
 * into shared memory while the main loop runs. Each CTA then adds bias and residual to its fp32
 * tile, computes per row the sum and the squared deviations over its BN columns (8 lanes per
 * row), pushes them into every peer's shared memory, and after one cluster barrier combines the
 * row's partials (Chan et al.'s pairwise update) into the mean and variance over all N columns,
 * normalises and stores its own columns (y in D, and fp32 / f16 where ln asks for them). This
 * removes the LayerNorm kernel and the 16-bit round trip of the GEMM output between them.
 * PDL: the producer issues the weight halves of the first stages before kern::pdl_wait() (no
 * kernel writes W), x only after it; every thread waits before it stores anything.
 * Requires in % 8 == 0, out % 8 == 0, 16-byte aligned x, w, y. Stream: the caller's. Tested by
 * tests/test_kernels_cuda.c (every configuration x epilogue x dtype); timed by
 * bench_kernels_cuda (its gemms mode, "dtype=f16" for binary16). */
#include <cooperative_groups.h>
#include <cuda.h>

#include <atomic>
#include <type_traits>

#include "kernels/gemm_wgmma.h"
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/kern_tma.cuh"
#include "kernels/kern_wgmma.cuh"
#include "kernels/row_stats.cuh"

namespace {

namespace cg = cooperative_groups;

constexpr int kBK = 64; /* one 128-byte swizzle row of 16-bit elements */

template <int NC, int MI, int BN, int STAGES, int SPLIT, bool PP, bool LN> struct Cfg {
    /* cooperative: the NC groups split a tile's rows; ping-pong (PP): each owns whole tiles */
    static constexpr int kBM = 64 * MI * (PP ? 1 : NC);
    static constexpr int kThreads = 128 * (NC + 1);
    static constexpr int kABytes = kBM * kBK * 2, kBBytes = BN * kBK * 2;
    static constexpr int kStageBytes = kABytes + kBBytes;
    static constexpr int kAcc = MI * BN / 2; /* fp32 accumulators per thread */
    static constexpr int kCS = BN + 4;       /* split staging row stride (floats) */
    static constexpr size_t kRing = (size_t)STAGES * kStageBytes;
    /* one tile per CTA (split-K, LayerNorm): the fp32 tile, in the drained ring; else (TMA
     * store) the 16-bit output tile, after the ring */
    static constexpr bool kOneTile = SPLIT > 1 || LN;
    static constexpr size_t kStaging = kOneTile ? (size_t)kBM * kCS * 4 : 0;
    static constexpr size_t kOut = kOneTile ? 0 : (size_t)NC * 64 * MI * BN * 2;
    /* LayerNorm: this CTA's rows of the residual tile (fp32, or bf16 / f16 in the first half),
     * prefetched during the main loop, at kResidOff from the ring */
    static constexpr size_t kResid = LN ? (size_t)(kBM / SPLIT) * BN * 4 : 0;
    static constexpr size_t kResidOff = kRing > kStaging ? kRing : kStaging;
    /* + 1 KiB to align the ring to 1024 bytes (the swizzle atom) */
    static constexpr size_t kSmem = kResidOff + kOut + kResid + 1024;
    static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma N: 64 to 256");
    static_assert(kBM <= 256 && BN <= 256, "TMA box: at most 256 rows");
    static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "stages stay 1024-aligned");
    static_assert(kSmem <= 227 * 1024, "shared memory per block");
    static_assert(!PP || (NC >= 2 && NC <= 3 && SPLIT == 1),
                  "ping-pong: two or three consumer groups, no split");
    static_assert(SPLIT == 1 || (!PP && kBM % SPLIT == 0), "split epilogue: whole rows per rank");
    static_assert(!LN || (!PP && BN % 64 == 0), "LayerNorm: cooperative, 64-column lane steps");
};

/* ---- PTX wrappers: TMA stores (loads and mbarriers: kern_tma.cuh) ---- */

using kern::mbar_arrive;
using kern::mbar_expect_tx;
using kern::mbar_init;
using kern::mbar_wait;
using kern::tma_load;

/* Shared [rows][64] 16-bit tile (128-byte swizzled, as TMA loads it) to the tensor map at (c0, c1);
 * rows / columns outside the tensor are not written. Committed as one bulk group per call. */
__device__ __forceinline__ void tma_store(const CUtensorMap *map, uint32_t src, int32_t c0,
                                          int32_t c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
                 "cp.async.bulk.commit_group;\n" ::"l"(reinterpret_cast<uint64_t>(map)),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
/* Waits until this thread's bulk stores have read their shared memory (READ_ONLY) or are done. */
template <bool READ_ONLY> __device__ __forceinline__ void bulk_wait_all() {
    if constexpr (READ_ONLY)
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    else
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
/* barrier over the 128 threads of one warp group (named barrier id = the group, 1 or 2) */
__device__ __forceinline__ void wg_bar(int id) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}
/* Ping-pong turn-taking among consumer groups 1 .. NC in rotation (group g's turn: named barrier
 * NC + g, 256 threads: its own 128 waiting and the previous group's 128 arriving): a group waits
 * for its turn before its main loop and hands the turn to the next group after it. */
template <int NC> __device__ __forceinline__ void turn_wait(int wg) {
    asm volatile("bar.sync %0, 256;\n" ::"r"(NC + wg) : "memory");
}
template <int NC> __device__ __forceinline__ void turn_give(int wg) {
    asm volatile("bar.arrive %0, 256;\n" ::"r"(NC + wg % NC + 1) : "memory");
}

/* wgmma descriptor of a [rows][64] 16-bit stage tile (K-major, 128-byte swizzle) */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
    return kern::wgmma_desc(addr, kern::kSwizzle128B, 16, 1024);
}

/* bias (type D; when epi >= 1) and GELU (epi == 2) on an fp32 pair at columns c, c + 1 */
template <kern_dtype_t D>
__device__ __forceinline__ void epilogue2(float &v0, float &v1, const uint16_t *__restrict__ b,
                                          int32_t c, int epi) {
    if (epi >= 1) {
        v0 += kern::to_f32<D>(b[c]);
        v1 += kern::to_f32<D>(b[c + 1]);
        if (epi == 2)
            kern::gelu_pair<D>(v0, v1);
    }
}

/* Rows t >= n_live of the residual stream are neither read nor written (n_rows: the batch's
 * tokens inside the bucket's n rows). After the PDL wait. */
__device__ __forceinline__ int32_t live_rows(const kern_linear_ln_t &ln, int32_t n) {
    return ln.n_rows ? min(n, *ln.n_rows) : n;
}

/* ---- the folded LayerNorm's epilogues (4-6; kern_linear_ln_t, kernels/row_stats.h) ---- */
/* Their operands are staged in shared memory per tile (FoldStage) by the producer group's idle
 * warps 1-3 while the consumers' main loop runs: the columns' bias, c or gamma / beta, and the
 * rows' (mean, rstd) finished from their partials. The consumers' epilogue then reads shared
 * memory only (and, for epilogue 4, the residual, pulled into L1 by the same warps). Staged by
 * the consumers themselves after their main loop, the statistics' loads and arithmetic sat on the
 * critical path (bench_kernels_cuda, MiniLM QKV at 128 tokens: 4.71 us, 3.72 staged this way,
 * 2.87 plain; session 16). */

/* The columns of one staged tile: [0] bias, [1] c (epi 5, 6) or gamma (epi 4, folded residual),
 * [2] beta (epi 4, folded residual); rows: (mean, rstd), (0, 0) where none is needed. The float2
 * member aligns the columns for pairwise 8-byte reads (BN is even). */
template <int BN, int ROWS> struct FoldStage {
    float col[3][BN];
    float2 row[ROWS];
};

/* Threads t = 0 .. nt - 1 stage the columns [col0, col0 + BN) (columns past N read column N - 1:
 * their outputs are clipped by the store, their values only must be finite). Weights only. */
template <kern_dtype_t D, int BN, int ROWS>
__device__ __forceinline__ void fold_cols(FoldStage<BN, ROWS> &s, const kern_linear_ln_t &ln,
                                          const uint16_t *__restrict__ b, int epi, int32_t col0,
                                          int32_t N, int t, int nt) {
    for (int c = t; c < BN; c += nt) {
        const int32_t gc = min(col0 + c, N - 1);
        s.col[0][c] = kern::to_f32<D>(b[gc]);
        s.col[1][c] = epi >= 5 ? ln.c[gc] : ln.residual_x ? ln.gamma[gc] : 0.f;
        s.col[2][c] = epi == 4 && ln.residual_x ? ln.beta[gc] : 0.f;
    }
}

/* (mean, rstd) of rows [r0, r0 + ROWS) into s.row by threads t = 0 .. nt - 1: x's statistics
 * (epi 5, 6: in_stats over K columns) or the folded residual's (epi 4: residual_stats over N);
 * (0, 0) for a plain residual and for rows past the live ones (nothing read for them). REGS:
 * a row's partials loaded at once (kern::row_stats_one), else in a loop (the same bits; for
 * warps whose registers were given to the consumers). */
template <bool REGS, int BN, int ROWS>
__device__ __forceinline__ void fold_rows(FoldStage<BN, ROWS> &s, const kern_linear_ln_t &ln,
                                          int epi, int32_t r0, int32_t n_live, int32_t K, int32_t N,
                                          int t, int nt) {
    const bool none = epi == 4 && !ln.residual_x;
    const int32_t cols = epi == 4 ? N : K;
    const float *part = epi == 4 ? ln.residual_stats : ln.in_stats;
    for (int i = t; i < ROWS; i += nt) {
        const int32_t gr = r0 + i;
        s.row[i] = none || gr >= n_live
                       ? make_float2(0.f, 0.f)
                       : kern::row_stats_one<REGS>(
                             part + (int64_t)gr * (cols / KERN_STATS_COLS) * 2, cols, ln.eps);
    }
}

/* Epilogues 4-6 on the fp32 pair v0, v1 (columns of the staged tile cl, cl + 1; the row's st),
 * in place: 5 / 6: rstd (v - mean c) + b (then GELU); 4: v + b + the residual pair r (plain
 * 16-bit of type D, or the folded stream normalised with st, gamma, beta; 0 for dead rows). */
template <kern_dtype_t D, int BN, int ROWS>
__device__ __forceinline__ void fold_pair(float &v0, float &v1, const FoldStage<BN, ROWS> &s,
                                          int epi, bool folded, int cl, float2 st, uint32_t r) {
    const float2 bb = *reinterpret_cast<const float2 *>(&s.col[0][cl]),
                 c1 = *reinterpret_cast<const float2 *>(&s.col[1][cl]);
    if (epi >= 5) {
        v0 = __fmaf_rn(st.y, __fmaf_rn(-st.x, c1.x, v0), bb.x);
        v1 = __fmaf_rn(st.y, __fmaf_rn(-st.x, c1.y, v1), bb.y);
        if (epi == 6)
            kern::gelu_pair<D>(v0, v1);
        return;
    }
    float r0 = kern::to_f32<D>((uint16_t)(r & 0xffffu)), r1 = kern::to_f32<D>((uint16_t)(r >> 16));
    if (folded) {
        const float2 c2 = *reinterpret_cast<const float2 *>(&s.col[2][cl]);
        r0 = __fmaf_rn((r0 - st.x) * st.y, c1.x, c2.x);
        r1 = __fmaf_rn((r1 - st.x) * st.y, c1.y, c2.y);
    }
    v0 += bb.x + r0;
    v1 += bb.y + r1;
}

/* The residual epilogue 4 adds (plain 16-bit of type D, or the folded stream x) */
template <kern_dtype_t D>
__device__ __forceinline__ const uint16_t *fold_residual(const kern_linear_ln_t &ln) {
    return ln.residual_x ? ln.residual_x : D == KERN_DTYPE_F16 ? ln.residual_f16 : ln.residual_bf16;
}

/* (sum, squared deviations from its mean) of one 64-column block whose values are spread over G
 * aligned consecutive lanes, kV each (v); identical on those lanes (xor-shuffle sums). */
template <int G, int kV> __device__ __forceinline__ float2 block_stats(const float (&v)[kV]) {
    static_assert(G * kV == KERN_STATS_COLS, "one block of 64 columns");
    float sum = 0.f;
#pragma unroll
    for (int e = 0; e < kV; e++)
        sum += v[e];
#pragma unroll
    for (int o = 1; o < G; o *= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float mean = sum * (1.0f / KERN_STATS_COLS);
    float m2 = 0.f;
#pragma unroll
    for (int e = 0; e < kV; e++)
        m2 = __fmaf_rn(v[e] - mean, v[e] - mean, m2);
#pragma unroll
    for (int o = 1; o < G; o *= 2)
        m2 += __shfl_xor_sync(0xffffffffu, m2, o);
    return make_float2(sum, m2);
}

/* Epilogues 4-6 on one consumer group's accumulators in the persistent path's layout (d[mi BN/2
 * + 4 g + 2 h + e] is row rloc + 64 mi + lane / 4 + 8 h of the staged rows, global row0 + that,
 * column col0 + 8 g + 2 (lane % 4) + e), in place before the 16-bit store; epilogue 4 also
 * writes the live rows' statistics (a quad of lanes holds a row's 64-column block, 16 values
 * each). No branch between a row's residual loads, so they are in flight together. */
template <kern_dtype_t D, int MI, int BN, int ROWS>
__device__ __forceinline__ void
fold_tile(float *d, const kern_linear_ln_t &ln, const FoldStage<BN, ROWS> &s, int epi,
          int32_t n_live, int32_t N, int32_t row0, int rloc, int32_t col0, int lane) {
    const int q = lane % 4;
    const bool folded = ln.residual_x != nullptr;
    const uint16_t *res = fold_residual<D>(ln);
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int rl = rloc + mi * 64 + lane / 4 + 8 * h;
            const int32_t gr = row0 + rl;
            const bool live = gr < n_live;
            const float2 st = s.row[rl];
            float *row = d + mi * (BN / 2) + 2 * h;
#pragma unroll
            for (int j = 0; j < BN / 64; j++) { /* 64-column blocks: 8 residual pairs in flight */
                uint32_t r[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
                if (epi == 4 && live)
#pragma unroll
                    for (int g = 0; g < 8; g++)
                        r[g] = *reinterpret_cast<const uint32_t *>(
                            res + (int64_t)gr * N + min(col0 + 64 * j + g * 8 + 2 * q, N - 2));
#pragma unroll
                for (int g = 8 * j; g < 8 * j + 8; g++)
                    fold_pair<D>(row[4 * g], row[4 * g + 1], s, epi, folded, g * 8 + 2 * q, st,
                                 r[g - 8 * j]);
                if (epi != 4)
                    continue;
                float v[16];
#pragma unroll
                for (int g = 0; g < 8; g++)
                    v[2 * g] = row[4 * (8 * j + g)], v[2 * g + 1] = row[4 * (8 * j + g) + 1];
                const float2 bs = block_stats<4, 16>(v);
                const int32_t cb = col0 + 64 * j;
                if (q == 0 && live && cb < N)
                    *reinterpret_cast<float2 *>(
                        ln.out_stats +
                        ((int64_t)gr * (N / KERN_STATS_COLS) + cb / KERN_STATS_COLS) * 2) = bs;
            }
        }
}

/* Epilogue 4's residual rows [r0, min(r1, n_live)) x columns [c0, c0 + BN), pulled into L1 by
 * the staging warps while the main loop runs (the consumers read them from there right after it;
 * prefetches are hints: nothing waits for them). Threads t = 0 .. nt - 1. */
template <kern_dtype_t D, int BN>
__device__ __forceinline__ void fold_prefetch(const kern_linear_ln_t &ln, int epi, int32_t r0,
                                              int32_t r1, int32_t c0, int32_t n_live, int32_t N,
                                              int t, int nt) {
    if (epi != 4)
        return;
    const uint16_t *res = fold_residual<D>(ln);
    const int32_t live = min(r1, n_live), cols = min(BN, N - c0);
    for (int32_t r = r0 + t; r < live; r += nt)
        kern::prefetch_l1(res + (int64_t)r * N + c0, res + (int64_t)r * N + c0 + cols);
}

/* The residual stream ln carries (exactly one pointer is set: checked by the launcher) */
__device__ __forceinline__ const void *residual_ptr(const kern_linear_ln_t &ln) {
    return ln.residual       ? (const void *)ln.residual
           : ln.residual_f16 ? (const void *)ln.residual_f16
                             : (const void *)ln.residual_bf16;
}

/* Threads i0 = 0 .. 95 (warps 1-3, idle otherwise) copy rows [r0, r0 + kRows) x columns
 * [c0, c0 + BN) of the residual (fp32, bf16 or f16) into the dense [rows][BN] tile at dst; rows
 * past the live ones read as zeros. One commit group, waited for by the epilogue. */
template <int kRows, int BN>
__device__ __forceinline__ void prefetch_residual(uint32_t dst, const kern_linear_ln_t &ln,
                                                  int32_t n, int32_t N, int32_t r0, int32_t c0,
                                                  int i0) {
    const int32_t n_live = live_rows(ln, n);
    const int esz = ln.residual ? 4 : 2, per_row = BN * esz / 16; /* 16-byte chunks */
    const unsigned char *base = static_cast<const unsigned char *>(residual_ptr(ln));
    for (int i = i0; i < kRows * per_row; i += 96) {
        const int r = i / per_row, k = i % per_row;
        const int32_t gr = r0 + r; /* a dead row reads nothing (0 source bytes) */
        kern::cp_async16(dst + (uint32_t)(r * per_row + k) * 16u,
                         base + ((int64_t)gr * N + c0) * esz + k * 16, gr < n_live ? 16 : 0);
    }
    kern::cp_async_commit();
}

/* Rows and columns of output tile `tile` (column tiles fastest: CTAs running side by side share
 * x's rows in L2). */
template <int BM, int BN>
__device__ __forceinline__ void tile_origin(int32_t tile, int32_t n_col_tiles, int32_t &row0,
                                            int32_t &col0) {
    row0 = tile / n_col_tiles * BM;
    col0 = tile % n_col_tiles * BN;
}

/* The CTA's j-th tile, or -1 past its last. Plain: tiles blockIdx.x, + gridDim.x, ... (CTAs
 * running side by side share x's row blocks in L2). CHUNK (the folding configurations): a
 * contiguous range, so a CTA's consecutive tiles share a row block whose statistics are staged
 * once (measured only with the kernels that still spilled, 16384 tokens: MiniLM qkv+fold 55.2 ->
 * 53.3 us, ffn2+stats 46.2 -> 55.0; docs/results/2026-12-02-h200-session16 fold_interleave.patch
 * is the A/B for today's). One tile per CTA (grid = tiles): blockIdx.x either way. */
template <bool CHUNK> __device__ __forceinline__ int32_t cta_tile(int32_t j, int32_t n_tiles) {
    if constexpr (CHUNK) {
        const int32_t t = (int32_t)((int64_t)blockIdx.x * n_tiles / gridDim.x) + j;
        return t < (int32_t)((int64_t)(blockIdx.x + 1) * n_tiles / gridDim.x) ? t : -1;
    } else {
        const int64_t t = (int64_t)blockIdx.x + (int64_t)j * gridDim.x;
        return t < n_tiles ? (int32_t)t : -1;
    }
}

/* The folded epilogues' operands, staged by the producer group's warps 1-3 (t = 0 .. 95). First,
 * before the PDL wait, the columns (weights) of each group's first tile. Then (fold_stage), after
 * the wait: one tile per CTA (ONE), the rank's rows into fold_s[0], read after the CTA barrier
 * that follows the main loop; persistent, for each of the CTA's tiles in the consumers' order,
 * each group's columns (once the group has read the stage's previous tile: empty[g]) and, when
 * its row block changed, its rows into fold_s[g]; then full[g]. The stage of tile j is written
 * while the consumers' main loop of tile j runs. */
template <kern_dtype_t D, int NC, int BN, bool PP, bool ONE, int ROWS>
__device__ __forceinline__ void fold_first_cols(FoldStage<BN, ROWS> *fold_s,
                                                const kern_linear_ln_t &ln,
                                                const uint16_t *__restrict__ b, int epi, int32_t N,
                                                int32_t n_tiles, int32_t n_col_tiles, int t) {
#pragma unroll
    for (int g = 0; g < (ONE ? 1 : NC); g++) {
        const int32_t tile = cta_tile<true>(PP ? g : 0, n_tiles);
        if (tile >= 0)
            fold_cols<D>(fold_s[g], ln, b, epi, tile % n_col_tiles * BN, N, t, 96);
    }
}

template <kern_dtype_t D, int NC, int MI, int BN, int SPLIT, bool PP, bool ONE, bool REGS, int ROWS>
__device__ __forceinline__ void
fold_stage(FoldStage<BN, ROWS> *fold_s, uint64_t *full, uint64_t *empty, const kern_linear_ln_t &ln,
           const uint16_t *__restrict__ b, int epi, int32_t n, int32_t K, int32_t N,
           int32_t n_tiles, int32_t n_col_tiles, int rank, int t) {
    constexpr int BM = 64 * MI * (PP ? 1 : NC);
    const int32_t n_live = live_rows(ln, n);
    if constexpr (ONE) {
        int32_t row0, col0;
        tile_origin<BM, BN>((int32_t)blockIdx.x, n_col_tiles, row0, col0);
        const int32_t r0 = row0 + rank * (BM / SPLIT);
        fold_prefetch<D, BN>(ln, epi, r0, r0 + ROWS, col0, n_live, N, t, 96);
        fold_rows<REGS>(fold_s[0], ln, epi, r0, n_live, K, N, t, 96);
    } else {
        int32_t staged[NC]; /* the first row of each group's staged rows */
#pragma unroll
        for (int g = 0; g < NC; g++)
            staged[g] = -1;
        for (int32_t j = 0;; j++) {
            const int32_t tile = cta_tile<true>(j, n_tiles);
            if (tile < 0)
                break;
            int32_t row0, col0;
            tile_origin<BM, BN>(tile, n_col_tiles, row0, col0);
            const uint32_t u = PP ? (uint32_t)j / NC : (uint32_t)j; /* the group's u-th tile */
#pragma unroll
            for (int g = 0; g < NC; g++) {
                if (PP && g != j % NC)
                    continue;
                const int32_t r0 = row0 + (PP ? 0 : g * MI * 64);
                fold_prefetch<D, BN>(ln, epi, r0, r0 + ROWS, col0, n_live, N, t, 96);
                if (u > 0) {
                    mbar_wait(kern::smem_u32(&empty[g]), (u - 1) & 1u);
                    fold_cols<D>(fold_s[g], ln, b, epi, col0, N, t, 96);
                }
                if (r0 != staged[g]) {
                    fold_rows<REGS>(fold_s[g], ln, epi, r0, n_live, K, N, t, 96);
                    staged[g] = r0;
                }
                mbar_arrive(kern::smem_u32(&full[g]));
            }
        }
    }
}

/* EPI: a folded epilogue (4-6) compiled in, or -1: the epilogue epi (0-3) chosen at run time */
template <kern_dtype_t D, int NC, int MI, int BN, int STAGES, int SPLIT, bool PP, bool LN, int EPI>
__device__ __forceinline__ void
gemm_body(const CUtensorMap *tx, const CUtensorMap *tw, const CUtensorMap *ty,
          uint16_t *__restrict__ y, const uint16_t *__restrict__ b, const kern_linear_ln_t &ln,
          int32_t n, int32_t K, int32_t N, int epi) {
    constexpr bool FOLD = EPI >= 4;
    if constexpr (FOLD) /* the other folded epilogues' code and registers drop out */
        epi = EPI;
    using C = Cfg<NC, MI, BN, STAGES, SPLIT, PP, LN>;
    constexpr int BM = C::kBM;
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const uint32_t raw = kern::smem_u32(smem_raw);
    const uint32_t ring =
        (raw + 1023u) & ~1023u; /* stage s: A at ring + s * kStageBytes, B after */
    unsigned char *ring_ptr = smem_raw + (ring - raw);
    const int wg = (int)threadIdx.x / 128, t128 = (int)threadIdx.x % 128;
    const int32_t n_col_tiles = (N + BN - 1) / BN, n_tiles = n_col_tiles * ((n + BM - 1) / BM);
    const int rank = (int)blockIdx.z; /* the K range (split-K: gridDim.z == SPLIT) */
    const int32_t nk = (K + kBK - 1) / kBK;
    const int32_t kt0 = (int32_t)((int64_t)rank * nk / SPLIT),
                  kt1 = (int32_t)((int64_t)(rank + 1) * nk / SPLIT);
    const int32_t my_nk = kt1 - kt0;
    /* LayerNorm: bias, gamma, beta of the tile's columns (staged with the residual, below) */
    __shared__ float ln_par[LN ? 3 : 1][LN ? BN : 1];
    /* Folded: each consumer group's staged epilogue operands (one tile per CTA: the rank's rows),
     * written by the producer group's warps 1-3; persistent: fold_full[g] (96 arrivals) says
     * group g's stage holds its next tile, fold_empty[g] (1) that the group has read it */
    constexpr int kFoldRows = C::kOneTile ? BM / SPLIT : 64 * MI;
    __shared__ FoldStage<FOLD ? BN : 2, FOLD ? kFoldRows : 1> fold_s[FOLD && !C::kOneTile ? NC : 1];
    __shared__ __align__(8) uint64_t fold_full[NC], fold_empty[NC];

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(kern::smem_u32(&full[s]), 1);
            mbar_init(kern::smem_u32(&empty[s]), PP ? 1 : NC); /* the groups that read it */
        }
        if constexpr (FOLD && !C::kOneTile)
            for (int g = 0; g < NC; g++) {
                mbar_init(kern::smem_u32(&fold_full[g]), 96);
                mbar_init(kern::smem_u32(&fold_empty[g]), 1);
            }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    /* Persistent: the CTA walks its tiles (cta_tile); the ring's slot and phase
     * follow one K-slice counter `it` across tiles, so the producer fills the next tile's first
     * stages while the consumers store the last one. (Split-K grids have one tile per CTA.) */
    float d[C::kAcc];
    /* Three warp groups hold 65536 / 384 = 168 registers each: the producer gives most of its
     * share to the consumers, whose 96-128 accumulators would otherwise spill (192 spill even
     * at 232 registers: no such configuration), and so do the folded epilogues' consumers (at
     * 168 registers the 128x128 fold tile spilled in its epilogue: ncu, 297,888 local memory
     * requests at MiniLM's QKV, 16384 tokens, 62 us against its plain twin's 37). */
    /* Four groups (three-group ping-pong) hold 128 each: the producer keeps 24, the consumers
     * take 160 (at 40 / 152 the 64x192 tile's epilogue spilled 96 bytes). */
    constexpr bool kRebalance = (NC == 3 || (NC == 2 && (C::kAcc >= 96 || FOLD))) && !LN;
    constexpr int kProducerRegs = NC == 3 ? 24 : 40, kConsumerRegs = NC == 3 ? 160 : 232;
    if (wg == 0) {
        if constexpr (kRebalance)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
        if (t128 == 0) { /* the producer: one thread issues every copy */
            uint32_t it = 0;
            for (int32_t jt = 0;; jt++) {
                const int32_t tile = cta_tile<FOLD>(jt, n_tiles);
                if (tile < 0)
                    break;
                int32_t row0, col0;
                tile_origin<BM, BN>(tile, n_col_tiles, row0, col0);
                int32_t t = 0;
                if (it == 0) {
                    /* the first stages' weight halves before the wait (no kernel writes W) */
                    const int pre = my_nk < STAGES ? my_nk : STAGES;
                    for (int s = 0; s < pre; s++) {
                        const uint32_t st = ring + (uint32_t)s * C::kStageBytes;
                        mbar_expect_tx(kern::smem_u32(&full[s]), C::kStageBytes);
                        tma_load(st + C::kABytes, tw, kern::smem_u32(&full[s]), (kt0 + s) * kBK,
                                 col0);
                    }
                    kern::pdl_wait();
                    kern::pdl_trigger();
                    for (int s = 0; s < pre; s++)
                        tma_load(ring + (uint32_t)s * C::kStageBytes, tx, kern::smem_u32(&full[s]),
                                 (kt0 + s) * kBK, row0);
                    t = pre, it = (uint32_t)pre;
                }
                for (; t < my_nk; t++, it++) {
                    const int s = (int)(it % STAGES);
                    const uint32_t st = ring + (uint32_t)s * C::kStageBytes;
                    if (it >= (uint32_t)STAGES) /* wait for the consumers to free the slot */
                        mbar_wait(kern::smem_u32(&empty[s]), ((it / STAGES) + 1) & 1u);
                    mbar_expect_tx(kern::smem_u32(&full[s]), C::kStageBytes);
                    tma_load(st, tx, kern::smem_u32(&full[s]), (kt0 + t) * kBK, row0);
                    tma_load(st + C::kABytes, tw, kern::smem_u32(&full[s]), (kt0 + t) * kBK, col0);
                }
            }
            if (it == 0) { /* no tile for this CTA */
                kern::pdl_wait();
                kern::pdl_trigger();
            }
        } else {
            if constexpr (LN)
                if (t128 >= 32) {
                    /* warps 1-3 stage the epilogue's operands off the consumers' path: the
                     * LayerNorm parameters (weights) before the PDL wait, the residual after it
                     * (it arrives while the main loop runs) */
                    const int32_t c0 = (int32_t)blockIdx.x % n_col_tiles * BN; /* one tile */
                    for (int c = t128 - 32; c < BN; c += 96) {
                        ln_par[0][c] = kern::to_f32<D>(b[c0 + c]);
                        ln_par[1][c] = ln.gamma[c0 + c];
                        ln_par[2][c] = ln.beta[c0 + c];
                    }
                }
            if constexpr (FOLD)
                if (t128 >= 32)
                    fold_first_cols<D, NC, BN, PP, C::kOneTile>(fold_s, ln, b, epi, N, n_tiles,
                                                                n_col_tiles, t128 - 32);
            kern::pdl_wait();
            kern::pdl_trigger();
            if constexpr (FOLD)
                if (t128 >= 32)
                    fold_stage<D, NC, MI, BN, SPLIT, PP, C::kOneTile, !kRebalance>(
                        fold_s, fold_full, fold_empty, ln, b, epi, n, K, N, n_tiles, n_col_tiles,
                        rank, t128 - 32);
            if constexpr (LN)
                if (t128 >= 32) {
                    int32_t row0, col0; /* one tile per CTA */
                    tile_origin<BM, BN>((int32_t)blockIdx.x, n_col_tiles, row0, col0);
                    prefetch_residual<BM / SPLIT, BN>(ring + (uint32_t)C::kResidOff, ln, n, N,
                                                      row0 + rank * (BM / SPLIT), col0, t128 - 32);
                }
        }
    } else {
        if constexpr (kRebalance)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
        kern::pdl_wait();
        kern::pdl_trigger();
        [[maybe_unused]] const int32_t n_live = FOLD ? live_rows(ln, n) : n;
        /* this group's 64-row blocks of the stage */
        const uint32_t a_off = PP ? 0u : (uint32_t)(wg - 1) * MI * 64 * 128;
        const int warp = t128 / 32, lane = t128 % 32;
        /* The CTA's j-th tile; its K slices are ring counts j my_nk .. + my_nk - 1. Ping-pong:
         * group 1 takes the even j, group 2 the odd, and their main loops take turns (group 1
         * first), so one group's epilogue runs beside the other's main loop; the turns also
         * keep each group's wait on a slot within one phase of the slot's state (a group
         * skipping the other's slices could otherwise mistake an older phase for its own). */
        for (int32_t j = PP ? wg - 1 : 0;; j += PP ? NC : 1) {
            const int32_t tile = cta_tile<FOLD>(j, n_tiles);
            if (tile < 0)
                break;
            if constexpr (PP)
                if (j > 0)
                    turn_wait<NC>(wg);
            uint32_t it = (uint32_t)j * (uint32_t)my_nk;
#pragma unroll
            for (int i = 0; i < C::kAcc; i++)
                d[i] = 0.f;
            for (int32_t t = 0; t < my_nk; t++, it++) {
                const int s = (int)(it % STAGES);
                const uint32_t st = ring + (uint32_t)s * C::kStageBytes;
                mbar_wait(kern::smem_u32(&full[s]), (it / STAGES) & 1u);
                kern::acc_fence(d);
                kern::wg_fence();
#pragma unroll
                for (int k = 0; k < kBK / 16; k++)
#pragma unroll
                    for (int mi = 0; mi < MI; mi++) /* one m64nBNk16 per 64-row block */
                        kern::wgmma_ss<BN, 0, D>(
                            d + mi * (BN / 2),
                            desc_sw128(st + a_off + (uint32_t)mi * 64 * 128 + (uint32_t)k * 32),
                            desc_sw128(st + C::kABytes + (uint32_t)k * 32), 1);
                kern::wg_commit();
                kern::acc_fence(d);
                /* the previous slice's wgmmas are done: hand its slot back to the producer */
                kern::wg_wait<1>();
                kern::acc_fence(d);
                if (t > 0 && t128 == 0)
                    mbar_arrive(kern::smem_u32(&empty[(it - 1) % STAGES]));
            }
            kern::wg_wait<0>();
            kern::acc_fence(d);
            if (t128 == 0)
                mbar_arrive(kern::smem_u32(&empty[(it - 1) % STAGES]));
            if constexpr (PP) /* the other group's turn, if it has a tile j + 1 */
                if (cta_tile<FOLD>(j + 1, n_tiles) >= 0)
                    turn_give<NC>(wg);
            if constexpr (!C::kOneTile) {
                /* The epilogue: bias, GELU, D into this group's staging tile (64 MI rows, BN /
                 * 64 blocks of [64 MI][64] 16-bit, 128-byte swizzled: chunk j of row r at j ^ (r %
                 * 8), which also keeps the warp's 8-row stores free of bank conflicts), then TMA
                 * stores it, clipping rows >= n and columns >= N, while the group goes on to its
                 * next tile. Accumulator layout (64-row block mi, 8-column group g):
                 * d[mi N/2 + 4 g + 2 h + e] is row 16 warp + lane/4 + 8 h, column 8 g + 2 (lane%4)
                 * + e. */
                int32_t row0, col0;
                tile_origin<BM, BN>(tile, n_col_tiles, row0, col0);
                /* Bias and GELU in place first, a column pair's 2 MI accumulators at a time: no
                 * memory operation between them, so their dependent chains (~15 instructions of
                 * GELU each) interleave. With each pair's bias load and shared store in one loop
                 * the stores (asm volatile) fenced the loads and every pair waited on its own:
                 * the epilogue, latency-bound at one warp per scheduler, outlasted the other
                 * group's main loop (ncu, BERT-base FFN-up: 37% issue slots, tensor pipe 48%). */
                if constexpr (FOLD) {
                    /* the group's u-th tile's stage (handed back after the wg_bar below) */
                    const int32_t grow0 = row0 + (PP ? 0 : (wg - 1) * MI * 64);
                    const uint32_t u = PP ? (uint32_t)j / NC : (uint32_t)j;
                    mbar_wait(kern::smem_u32(&fold_full[wg - 1]), u & 1u);
                    fold_tile<D, MI, BN>(d, ln, fold_s[wg - 1], epi, n_live, N, grow0, warp * 16,
                                         col0, lane);
                } else if (epi >= 1) {
                    /* 8-column groups; each group's bias pair is loaded while the group before
                     * is computed (a load at the head of each group's block left its 8 GELU
                     * chains waiting on it: SASS of the 128x128 ping-pong tile). Columns past
                     * N read 0 (the TMA store clips them; out % 8 == 0). */
                    const int32_t cl = col0 + 2 * (lane % 4);
                    auto bias = [&](int g, int e) {
                        return cl + g * 8 < N ? kern::to_f32<D>(b[cl + g * 8 + e]) : 0.f;
                    };
                    auto groups = [&](auto gelu_c) {
                        /* binary16 GELU: the bias halved, z / 2 by one FFMA */
                        constexpr bool kHalf = decltype(gelu_c)::value && D == KERN_DTYPE_F16;
                        const float bs = kHalf ? 0.5f : 1.f;
                        float b0 = bs * bias(0, 0), b1 = bs * bias(0, 1);
#pragma unroll
                        for (int g = 0; g < BN / 8; g++) {
                            float n0 = 0.f, n1 = 0.f;
                            if (g + 1 < BN / 8)
                                n0 = bs * bias(g + 1, 0), n1 = bs * bias(g + 1, 1);
                            if (col0 + g * 8 < N) /* warp-uniform: past N the tile is clipped */
#pragma unroll
                                for (int mi = 0; mi < MI; mi++)
#pragma unroll
                                    for (int h = 0; h < 2; h++) {
                                        float *p = d + mi * (BN / 2) + 4 * g + 2 * h;
                                        if constexpr (kHalf) /* packed, staged as it is below */
                                            p[0] = __uint_as_float(kern::gelu_erf_h2_of_half(
                                                fmaf(p[0], 0.5f, b0), fmaf(p[1], 0.5f, b1)));
                                        else {
                                            p[0] += b0, p[1] += b1;
                                            if constexpr (decltype(gelu_c)::value)
                                                kern::gelu_pair<D>(p[0], p[1]);
                                        }
                                    }
                            b0 = n0, b1 = n1;
                        }
                    };
                    if (epi == 2)
                        groups(std::true_type{});
                    else
                        groups(std::false_type{});
                }
                constexpr uint32_t kBlock = 64u * MI * 128u; /* one [64 MI][64] block */
                const uint32_t stage_out =
                    ring + (uint32_t)C::kRing + (uint32_t)(wg - 1) * BN / 64 * kBlock;
                if (t128 == 0)
                    bulk_wait_all<true>(); /* the last tile's stores have read the staging tile */
                wg_bar(wg);
                if constexpr (FOLD)
                    if (t128 == 0) /* every lane has read the group's fold stage */
                        mbar_arrive(kern::smem_u32(&fold_empty[wg - 1]));
                /* packed_c: each pair's p[0] already holds its packed binary16 result (the
                 * binary16 GELU above) */
                auto stage = [&](auto packed_c) {
#pragma unroll
                    for (int mi = 0; mi < MI; mi++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            const int r = mi * 64 + warp * 16 + lane / 4 + 8 * h;
#pragma unroll
                            for (int g = 0; g < BN / 8; g++) {
                                const int c = g * 8 + 2 * (lane % 4);
                                const float *p = d + mi * (BN / 2) + 4 * g + 2 * h;
                                const float v0 = p[0], v1 = p[1];
                                const uint32_t addr = stage_out + (uint32_t)(c / 64) * kBlock +
                                                      (uint32_t)r * 128u +
                                                      ((uint32_t)((c % 64) / 8 ^ (r % 8)) << 4) +
                                                      (uint32_t)(c % 8) * 2u;
                                uint32_t pair;
                                if constexpr (decltype(packed_c)::value)
                                    pair = __float_as_uint(v0);
                                else if constexpr (D == KERN_DTYPE_F16)
                                    pair = kern::pack16<D>(v0, v1);
                                else
                                    pair =
                                        (uint32_t)kern::f2bf(v0) | ((uint32_t)kern::f2bf(v1) << 16);
                                asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(pair)
                                             : "memory");
                            }
                        }
                };
                if (!FOLD && D == KERN_DTYPE_F16 && epi == 2)
                    stage(std::true_type{});
                else
                    stage(std::false_type{});
                /* the generic-proxy writes must be visible to the TMA (async proxy) */
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                wg_bar(wg);
                if (t128 == 0)
#pragma unroll
                    for (int blk = 0; blk < BN / 64; blk++)
                        tma_store(ty, stage_out + (uint32_t)blk * kBlock, col0 + blk * 64,
                                  row0 + (PP ? 0 : (wg - 1) * MI * 64));
            }
        }
        if constexpr (!C::kOneTile)
            if (t128 == 0)
                bulk_wait_all<false>(); /* y is complete before the grid is */
    }

    if constexpr (C::kOneTile) {
        /* One tile per CTA (grid x = the tile count): the accumulators go to an fp32 tile in the
         * drained ring. Split-K: the cluster's SPLIT CTAs along z hold the partial tiles of one
         * output tile; CTA z sums rows [z BM/S, (z+1) BM/S) over them in rank order (distributed
         * shared memory: deterministic, no atomics, no workspace), in place (no other CTA reads
         * those rows of it). LayerNorm: the cluster also spans the row block's CN = N / BN
         * column tiles along x (CTA rank x + CN z), and the epilogue is the sublayer end. */
        int32_t row0, col0;
        tile_origin<BM, BN>((int32_t)blockIdx.x, n_col_tiles, row0, col0);
        const int warp = t128 / 32, lane = t128 % 32;
        constexpr int kRows = BM / SPLIT, kChunks = BN / 8;
        const int ct = (int)threadIdx.x - 128; /* consumer thread index */
        [[maybe_unused]] const int32_t n_live = FOLD || LN ? live_rows(ln, n) : n;
        __syncthreads(); /* also: the producer group's fold stage is written */
        float *Cs = reinterpret_cast<float *>(ring_ptr); /* [BM][kCS] */
        if (wg > 0)
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int g = 0; g < BN / 8; g++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int r = (wg - 1) * MI * 64 + mi * 64 + warp * 16 + lane / 4 + 8 * h;
                        const int c = g * 8 + 2 * (lane % 4);
                        const float *p = d + mi * (BN / 2) + 4 * g + 2 * h;
                        *reinterpret_cast<float2 *>(Cs + r * C::kCS + c) = make_float2(p[0], p[1]);
                    }
        cg::cluster_group cluster = cg::this_cluster();
        const int cn = LN ? (int)cluster.dim_blocks().x : 1, cx = LN ? (int)blockIdx.x % cn : 0;
        static_assert(!FOLD || ((kRows * kChunks) % (C::kThreads - 128) == 0 && BN % 64 == 0),
                      "folded split epilogue: every lane takes the same number of rows, 8 lanes "
                      "to a 64-column block");
        if constexpr (SPLIT > 1) {
            kern::cluster_barrier_own_smem(); /* every rank's partial tile is visible */
            if (ct >= 0) {
                for (int idx = ct; idx < kRows * kChunks; idx += C::kThreads - 128) {
                    const int r = rank * kRows + idx / kChunks, c = idx % kChunks * 8;
                    const int32_t gr = row0 + r, gc = col0 + c;
                    const bool in = gr < n && gc < N;
                    if (!LN && !FOLD && !in) /* the folded epilogue's shuffles need every lane */
                        continue;
                    float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
                    for (int s = 0; s < SPLIT; s++) { /* rank order: the same sum every run */
                        const float *src =
                            cluster.map_shared_rank(Cs, cx + s * cn) + r * C::kCS + c;
                        const float4 p = *reinterpret_cast<const float4 *>(src),
                                     q = *reinterpret_cast<const float4 *>(src + 4);
                        v[0] += p.x, v[1] += p.y, v[2] += p.z, v[3] += p.w;
                        v[4] += q.x, v[5] += q.y, v[6] += q.z, v[7] += q.w;
                    }
                    if constexpr (LN) {
                        float *dst = Cs + r * C::kCS + c;
                        *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
                        *reinterpret_cast<float4 *>(dst + 4) = make_float4(v[4], v[5], v[6], v[7]);
                    } else if constexpr (FOLD) {
                        /* 8 lanes (aligned) hold a row's 64-column block, 8 values each */
                        const bool live = gr < n_live;
                        uint32_t rp[4] = {0u, 0u, 0u, 0u};
                        if (epi == 4 && live && gc < N)
#pragma unroll
                            for (int e = 0; e < 4; e++)
                                rp[e] = *reinterpret_cast<const uint32_t *>(
                                    fold_residual<D>(ln) + (int64_t)gr * N + gc + 2 * e);
                        const float2 st = fold_s[0].row[r - rank * kRows];
#pragma unroll
                        for (int e = 0; e < 8; e += 2)
                            fold_pair<D>(v[e], v[e + 1], fold_s[0], epi, ln.residual_x != nullptr,
                                         c + e, st, rp[e / 2]);
                        if (epi == 4) {
                            const float2 bs = block_stats<8, 8>(v);
                            if (lane % 8 == 0 && live && gc < N)
                                *reinterpret_cast<float2 *>(
                                    ln.out_stats +
                                    ((int64_t)gr * (N / KERN_STATS_COLS) + gc / KERN_STATS_COLS) *
                                        2) = bs;
                        }
                        if (in)
                            kern::store16<D, 8>(y + (int64_t)gr * N + gc, v);
                    } else {
#pragma unroll
                        for (int e = 0; e < 8; e += 2)
                            epilogue2<D>(v[e], v[e + 1], b, gc + e, epi);
                        kern::store16<D, 8>(y + (int64_t)gr * N + gc, v);
                    }
                }
            }
        }
        if constexpr (LN) {
            /* The sublayer end over this CTA's rows [rank kRows, + kRows) and BN columns, by all
             * its threads: 8 lanes per row, lane g = lane % 8 holding columns 64 j + 8 g .. + 7
             * (so a row's reductions take 3 shuffles and a warp works on 4 rows at once; with a
             * warp per row the serial shuffle chains dominated the kernel). v = tile + bias +
             * residual (prefetched; back into the tile); the row's sum and squared deviations
             * over the BN columns go to stats; after a cluster barrier each row's CN partials
             * combine (Chan et al.) into the mean and variance over all N columns. */
            /* the most column tiles per cluster (a float2 per row and peer; valid() agrees) */
            constexpr int kMaxCN = BM == 64 ? 16 : 8, kJ = BN / 64, kWarps = C::kThreads / 32,
                          kQuads = kRows / 4;
            /* [peer x][row]: every CTA pushes its rows' partials into each peer's array (remote
             * stores, released by the one cluster barrier), so each reads only its own shared
             * memory afterwards and no exit barrier is needed (the push replaced a pull, which
             * cost a second barrier and the remote loads' latency) */
            __shared__ float2 stats[kMaxCN][kRows];
            static_assert(kRows % 4 == 0, "whole row quads");
            const int wi = (int)threadIdx.x / 32, g = lane % 8;
            const unsigned char *resid = ring_ptr + C::kResidOff; /* dense [kRows][BN] */
            const bool r32 = ln.residual != nullptr, rf16 = ln.residual_f16 != nullptr;
            kern::cp_async_wait<0>();
            __syncthreads(); /* the reduced rows (split-K), residual and parameters are in place */
            for (int q = wi; q < kQuads; q += kWarps) {
                const int rr = 4 * q + lane / 8, r = rank * kRows + rr;
                float v[8 * kJ], sum = 0.f;
#pragma unroll
                for (int j = 0; j < kJ; j++) {
                    const int c = 64 * j + 8 * g;
                    float *t = Cs + r * C::kCS + c;
                    float rs[8];
                    if (r32)
                        kern::load_f32<8>(reinterpret_cast<const float *>(resid) + rr * BN + c, rs);
                    else if (rf16)
                        kern::load_f16<8>(reinterpret_cast<const uint16_t *>(resid) + rr * BN + c,
                                          rs);
                    else
                        kern::load_bf16<8>(reinterpret_cast<const uint16_t *>(resid) + rr * BN + c,
                                           rs);
                    float *vj = v + 8 * j;
                    kern::load_f32<8>(t, vj);
#pragma unroll
                    for (int e = 0; e < 8; e++) {
                        vj[e] += ln_par[0][c + e] + rs[e];
                        sum += vj[e];
                    }
                    kern::store_f32<8>(t, vj);
                }
#pragma unroll
                for (int o = 1; o < 8; o *= 2)
                    sum += __shfl_xor_sync(0xffffffffu, sum, o);
                const float mean = sum / (float)BN;
                float m2 = 0.f;
#pragma unroll
                for (int e = 0; e < 8 * kJ; e++)
                    m2 += (v[e] - mean) * (v[e] - mean);
#pragma unroll
                for (int o = 1; o < 8; o *= 2)
                    m2 += __shfl_xor_sync(0xffffffffu, m2, o);
#pragma unroll
                for (int k = 0; k < kMaxCN / 8; k++)
                    if (g + 8 * k < cn)
                        *cluster.map_shared_rank(&stats[cx][rr], g + 8 * k + rank * cn) =
                            make_float2(sum, m2);
            }
            cluster.sync(); /* every CTA's partial statistics are visible cluster-wide */
            for (int q = wi; q < kQuads; q += kWarps) {
                const int rr = 4 * q + lane / 8, r = rank * kRows + rr;
                const int32_t gr = row0 + r;
                float2 st[kMaxCN / 8]; /* peers g, g + 8 */
#pragma unroll
                for (int k = 0; k < kMaxCN / 8; k++)
                    st[k] = g + 8 * k < cn ? stats[g + 8 * k][rr] : make_float2(0.f, 0.f);
                float sum = 0.f;
#pragma unroll
                for (int k = 0; k < kMaxCN / 8; k++)
                    sum += st[k].x;
#pragma unroll
                for (int o = 1; o < 8; o *= 2)
                    sum += __shfl_xor_sync(0xffffffffu, sum, o);
                const float mean = sum / (float)N;
                float m2 = 0.f;
#pragma unroll
                for (int k = 0; k < kMaxCN / 8; k++)
                    if (g + 8 * k < cn) {
                        const float dm = st[k].x / (float)BN - mean;
                        m2 += st[k].y + (float)BN * dm * dm;
                    }
#pragma unroll
                for (int o = 1; o < 8; o *= 2)
                    m2 += __shfl_xor_sync(0xffffffffu, m2, o);
                const float rstd = rsqrtf(m2 / (float)N + ln.eps);
                if (gr >= n_live)
                    continue;
#pragma unroll
                for (int j = 0; j < kJ; j++) {
                    const int c = 64 * j + 8 * g;
                    const float *t = Cs + r * C::kCS + c;
                    float o8[8];
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        o8[e] = (t[e] - mean) * rstd * ln_par[1][c + e] + ln_par[2][c + e];
                    const int64_t o = (int64_t)gr * N + col0 + c;
                    kern::store16<D, 8>(y + o, o8);
                    if (ln.out_f32)
                        kern::store_f32<8>(ln.out_f32 + o, o8);
                    if (ln.out_f16)
                        kern::store_f16<8>(ln.out_f16 + o, o8);
                }
            }
        }
        if constexpr (!LN) /* no CTA leaves while another still reads its partial tile (with
                            * LayerNorm the statistics barrier, after every read, does that); a
                            * lifetime only: no fence, so the y stores need not drain first */
            kern::cluster_barrier_relaxed();
    }
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__) /* empty for other archs */
#define EMBER_GEMM_BODY(LN, EPI)                                                                   \
    gemm_body<D, NC, MI, BN, STAGES, SPLIT, PP, LN, EPI>(&tx, &tw, &ty, y, b, ln, n, K, N, epi)
#else
#define EMBER_GEMM_BODY(LN, EPI) (void)0
#endif

/* EPI: one of the folded LayerNorm's epilogues (4-6), or -1: epilogue 0-2 by epi */
template <kern_dtype_t D, int NC, int MI, int BN, int STAGES, int SPLIT, bool PP, int EPI>
__global__ void __launch_bounds__(128 * (NC + 1))
    k_gemm(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
           const __grid_constant__ CUtensorMap ty, uint16_t *__restrict__ y,
           const uint16_t *__restrict__ b, const kern_linear_ln_t ln, int32_t n, int32_t K,
           int32_t N, int epi) {
    EMBER_GEMM_BODY(false, EPI);
}

template <kern_dtype_t D, int NC, int MI, int BN, int STAGES, int SPLIT, bool PP, int EPI>
__global__ void __cluster_dims__(1, 1, SPLIT) __launch_bounds__(128 * (NC + 1))
    k_gemm_split(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
                 const __grid_constant__ CUtensorMap ty, uint16_t *__restrict__ y,
                 const uint16_t *__restrict__ b, const kern_linear_ln_t ln, int32_t n, int32_t K,
                 int32_t N, int epi) {
    EMBER_GEMM_BODY(false, EPI);
}

/* The sublayer end fused: launched in clusters of (N / BN, 1, SPLIT), set at launch. */
template <kern_dtype_t D, int NC, int MI, int BN, int STAGES, int SPLIT, bool PP>
__global__ void __launch_bounds__(128 * (NC + 1))
    k_gemm_ln(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw,
              const __grid_constant__ CUtensorMap ty, uint16_t *__restrict__ y,
              const uint16_t *__restrict__ b, const kern_linear_ln_t ln, int32_t n, int32_t K,
              int32_t N, int epi) {
    EMBER_GEMM_BODY(true, -1);
}
#undef EMBER_GEMM_BODY

typedef void (*kernel_t)(CUtensorMap, CUtensorMap, CUtensorMap, uint16_t *, const uint16_t *,
                         kern_linear_ln_t, int32_t, int32_t, int32_t, int);

struct Entry {
    const char *name;
    /* by kern_dtype_t (bf16, binary16) and, for the folding ones, epilogue - 4 (one kernel per
     * folded epilogue: compiled together, all three dragged each other's registers and code
     * along, and the 128x128 tile spilled); the others run every epilogue from [d][0] */
    kernel_t kernel[2][3];
    int bm, bn, threads, split;
    bool ln;      /* fuses the sublayer end (epilogue 3 only) */
    bool fold;    /* the folded LayerNorm's epilogues (4-6 only) */
    int out_rows; /* the rows of one consumer group's output store (64 MI) */
    size_t smem;
    int32_t min_n, max_n; /* the rows at which the tuner times it */
};

template <kern_dtype_t D, int NC, int MI, int BN, int STAGES, int SPLIT, bool PP, bool LN, int EPI>
constexpr kernel_t kernel_of() {
    if constexpr (LN)
        return k_gemm_ln<D, NC, MI, BN, STAGES, SPLIT, PP>;
    else if constexpr (SPLIT > 1)
        return k_gemm_split<D, NC, MI, BN, STAGES, SPLIT, PP, EPI>;
    else
        return k_gemm<D, NC, MI, BN, STAGES, SPLIT, PP, EPI>;
}
/* the kernels of one dtype: epilogues 4, 5, 6 when folding, else the one kernel three times */
#define EMBER_KERNELS(D)                                                                           \
    {                                                                                              \
        kernel_of<D, NC, MI, BN, STAGES, SPLIT, PP, LN, FOLD ? 4 : -1>(),                          \
            kernel_of<D, NC, MI, BN, STAGES, SPLIT, PP, LN, FOLD ? 5 : -1>(),                      \
            kernel_of<D, NC, MI, BN, STAGES, SPLIT, PP, LN, FOLD ? 6 : -1>()                       \
    }

template <int NC, int MI, int BN, int STAGES, int SPLIT, bool PP = false, bool LN = false,
          bool FOLD = false>
constexpr Entry entry(const char *name, int32_t min_n, int32_t max_n) {
    using C = Cfg<NC, MI, BN, STAGES, SPLIT, PP, LN>;
    return Entry{name,        {EMBER_KERNELS(KERN_DTYPE_BF16), EMBER_KERNELS(KERN_DTYPE_F16)},
                 C::kBM,      BN,
                 C::kThreads, SPLIT,
                 LN,          FOLD,
                 64 * MI,     C::kSmem,
                 min_n,       max_n};
}
#undef EMBER_KERNELS
template <int NC, int MI, int BN, int STAGES, int SPLIT>
constexpr Entry entry_ln(const char *name, int32_t min_n, int32_t max_n) {
    return entry<NC, MI, BN, STAGES, SPLIT, false, true>(name, min_n, max_n);
}
template <int NC, int MI, int BN, int STAGES, int SPLIT, bool PP = false>
constexpr Entry entry_fold(const char *name, int32_t min_n, int32_t max_n) {
    return entry<NC, MI, BN, STAGES, SPLIT, PP, false, true>(name, min_n, max_n);
}

/* Small n: 64-row tiles, split-K to fill the GPU while W streams through once. Large n: 128- and
 * 256-row tiles with 128 or 256 columns (two consumer warp groups, or one with two row blocks). */
const Entry kConfigs[] = {
    entry<1, 1, 64, 8, 1>("wgmma 64x64 s8", 1, 1024),
    entry<1, 1, 64, 8, 2>("wgmma 64x64 s8 splitk2", 1, 512),
    entry<1, 1, 64, 8, 4>("wgmma 64x64 s8 splitk4", 1, 512),
    entry<1, 1, 128, 6, 1>("wgmma 64x128 s6", 1, 2048),
    entry<1, 1, 128, 6, 2>("wgmma 64x128 s6 splitk2", 1, 512),
    entry<2, 1, 128, 5, 1>("wgmma 128x128 s5", 256, 1 << 30),
    entry<2, 1, 192, 4, 1>("wgmma 128x192 s4", 512, 1 << 30),
    entry<2, 1, 256, 3, 1>("wgmma 128x256 s3", 512, 1 << 30),
    entry<2, 2, 128, 3, 1>("wgmma 256x128 s3", 1024, 1 << 30),
    entry<2, 2, 128, 4, 1, true>("wgmma 128x128 s4 pingpong", 512, 1 << 30),
    entry<2, 1, 192, 5, 1, true>("wgmma 64x192 s5 pingpong", 512, 1 << 30),
    entry<2, 1, 256, 4, 1, true>("wgmma 64x256 s4 pingpong", 512, 1 << 30),
    /* three groups in rotation, each epilogue beside two others' main loops. Made for the GELU
     * epilogue, where they lose (session 27: MiniLM FFN-up 16384 tokens 61.7 / 64.2 us against
     * 51.7); they win 2-3% at MiniLM's small bias GEMMs (4096 tokens), and the tuner's picks
     * there make the 1024-token bucket 2.5% faster */
    entry<3, 1, 128, 5, 1, true>("wgmma 64x128 s5 pingpong3", 512, 1 << 30),
    entry<3, 1, 192, 4, 1, true>("wgmma 64x192 s4 pingpong3", 512, 1 << 30),
    /* the sublayer end fused (clusters over a row block's column tiles, <= 16 CTAs) */
    entry_ln<1, 1, 64, 8, 1>("wgmma 64x64 s8 ln", 1, 1024),
    entry_ln<1, 1, 64, 8, 2>("wgmma 64x64 s8 ln splitk2", 1, 512),
    entry_ln<1, 1, 128, 6, 1>("wgmma 64x128 s6 ln", 1, 2048),
    entry_ln<1, 1, 128, 6, 2>("wgmma 64x128 s6 ln splitk2", 1, 512),
    entry_ln<1, 1, 128, 6, 4>("wgmma 64x128 s6 ln splitk4", 1, 512),
    entry_ln<1, 1, 192, 5, 2>("wgmma 64x192 s5 ln splitk2", 1, 512),
    entry_ln<1, 1, 192, 5, 4>("wgmma 64x192 s5 ln splitk4", 1, 512),
    entry_ln<2, 1, 128, 4, 1>("wgmma 128x128 s4 ln", 256, 1 << 30),
    /* the folded LayerNorm's epilogues, on the tiles that win elsewhere at small and large n */
    entry_fold<1, 1, 64, 8, 1>("wgmma 64x64 s8 fold", 1, 1024),
    entry_fold<1, 1, 64, 8, 2>("wgmma 64x64 s8 splitk2 fold", 1, 512),
    entry_fold<1, 1, 64, 8, 4>("wgmma 64x64 s8 splitk4 fold", 1, 512),
    entry_fold<1, 1, 128, 6, 1>("wgmma 64x128 s6 fold", 1, 2048),
    entry_fold<2, 1, 128, 5, 1>("wgmma 128x128 s5 fold", 256, 1 << 30),
    entry_fold<2, 1, 192, 4, 1>("wgmma 128x192 s4 fold", 512, 1 << 30),
    entry_fold<2, 2, 128, 4, 1, true>("wgmma 128x128 s4 pingpong fold", 512, 1 << 30),
    entry_fold<2, 1, 192, 5, 1, true>("wgmma 64x192 s5 pingpong fold", 512, 1 << 30),
};
constexpr int32_t kNConfigs = (int32_t)(sizeof kConfigs / sizeof *kConfigs);
static_assert(kNConfigs <= 64, "g_cluster_ok has 64 rows");

/* per device ordinal: 0 unknown, 1 sm_90, 2 other; and its SM count (set with 1) */
std::atomic<int> g_device_ok[64], g_device_sms[64];

bool s_device_ok() { /* compute capability 9.0 (cached per device) */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
        return false;
    int v = g_device_ok[dev].load(std::memory_order_relaxed);
    if (v == 0) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
            return false;
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return false;
        v = major == 9 && minor == 0 && sms > 0 ? 1 : 2;
        g_device_sms[dev].store(sms, std::memory_order_relaxed);
        g_device_ok[dev].store(v, std::memory_order_relaxed);
    }
    return v == 1;
}

bool s_dtype_ok(kern_dtype_t dtype) {
    return dtype == KERN_DTYPE_BF16 || dtype == KERN_DTYPE_F16;
}

/* rows x K of dtype, row-major, box [box_rows][64] with 128-byte swizzle; zeros outside */
int s_encode(CUtensorMap *m, kern_dtype_t dtype, const uint16_t *p, int32_t rows, int32_t K,
             int box_rows, com_error_t *err) {
    return kern::tma_encode_2d(m, dtype, p, rows, K, K, box_rows, kBK, CU_TENSOR_MAP_SWIZZLE_128B,
                               err);
}

/* Whether clusters of `size` CTAs of config's dtype kernel (<= 16, non-portable above 8) can be
 * resident on this device at all; asked once per (dtype, config, size) and kept (0 unknown,
 * 1 yes, 2 no). Needs the kernel's attributes, so it sets them (host-side, not stream-ordered). */
std::atomic<int> g_cluster_ok[2][64][17];

bool s_cluster_fits(int32_t config, kern_dtype_t dtype, int size) {
    const Entry &e = kConfigs[config];
    const kernel_t kernel = e.kernel[dtype][0]; /* a LayerNorm configuration: one kernel */
    std::atomic<int> &known = g_cluster_ok[dtype][config][size];
    int v = known.load(std::memory_order_relaxed);
    if (v == 0) {
        int clusters = 0;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = (unsigned)size;
        attr.val.clusterDim.y = 1;
        attr.val.clusterDim.z = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3((unsigned)size);
        cfg.blockDim = dim3((unsigned)e.threads);
        cfg.dynamicSmemBytes = e.smem;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        const bool ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)e.smem) == cudaSuccess &&
                        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                             1) == cudaSuccess &&
                        cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess &&
                        clusters > 0;
        (void)cudaGetLastError(); /* a refusal here is an answer, not a sticky error */
        v = ok ? 1 : 2;
        known.store(v, std::memory_order_relaxed);
    }
    return v == 1;
}

/* The operands of folded epilogue epi (4-6; kern_linear_ln_t in linear.h) are there and fit. */
bool s_fold_ok(int epi, kern_dtype_t dtype, const kern_linear_ln_t *ln, int32_t in, int32_t out) {
    const int32_t cols = epi == 4 ? out : in;
    if (!ln || !(ln->eps >= 0.f) || cols % KERN_STATS_COLS || cols > KERN_STATS_MAX_COLS)
        return false;
    if (epi >= 5) /* the statistics are read as float2 (kern::row_stats_one) */
        return ln->in_stats && ((uintptr_t)ln->in_stats & 7u) == 0 && ln->c;
    const uint16_t *plain = dtype == KERN_DTYPE_F16 ? ln->residual_f16 : ln->residual_bf16;
    const uint16_t *other = dtype == KERN_DTYPE_F16 ? ln->residual_bf16 : ln->residual_f16;
    return ln->out_stats && !ln->residual && !other && !!plain + !!ln->residual_x == 1 &&
           (!ln->residual_x || (ln->residual_stats && ((uintptr_t)ln->residual_stats & 7u) == 0 &&
                                ln->gamma && ln->beta)) &&
           ((uintptr_t)(plain ? plain : ln->residual_x) & 3u) == 0 &&
           ((uintptr_t)ln->out_stats & 7u) == 0;
}

} // namespace

int32_t kern_gemm_wgmma_count(void) {
    return kNConfigs;
}

const char *kern_gemm_wgmma_name(int32_t config) {
    return config >= 0 && config < kNConfigs ? kConfigs[config].name : NULL;
}

bool kern_gemm_wgmma_fuses_ln(int32_t config) {
    return config >= 0 && config < kNConfigs && kConfigs[config].ln;
}

bool kern_gemm_wgmma_folds(int32_t config) {
    return config >= 0 && config < kNConfigs && kConfigs[config].fold;
}

bool kern_sm90a_device(void) {
    return s_device_ok();
}

bool kern_gemm_wgmma_valid(int32_t config, kern_dtype_t dtype, int32_t n, int32_t in, int32_t out) {
    if (config < 0 || config >= kNConfigs || !s_dtype_ok(dtype) || n < 1 || in < 8 || out < 8 ||
        in % 8 || out % 8)
        return false;
    const Entry &e = kConfigs[config];
    const int32_t nk = (in + kBK - 1) / kBK; /* a split needs 2 K tiles per rank */
    if (e.split > 1 && nk < 2 * e.split)
        return false;
    /* LayerNorm: whole rows in one cluster of out / BN x split CTAs */
    if (e.ln &&
        (out % e.bn != 0 || out / e.bn * e.split > 16 || out / e.bn > (e.bm == 64 ? 16 : 8)))
        return false;
    if (!s_device_ok())
        return false;
    return !e.ln || s_cluster_fits(config, dtype, out / e.bn * e.split);
}

bool kern_gemm_wgmma_worth(int32_t config, int32_t n) {
    return config >= 0 && config < kNConfigs && n >= kConfigs[config].min_n &&
           n <= kConfigs[config].max_n;
}

int kern_gemm_wgmma_prepare(int32_t config, kern_dtype_t dtype, com_error_t *err) {
    if (config < 0 || config >= kNConfigs)
        return com_error_set(err, COM_EINVAL, "gemm_wgmma: config %d", (int)config);
    if (!s_dtype_ok(dtype))
        return com_error_set(err, COM_EINVAL, "gemm_wgmma: dtype %d", (int)dtype);
    if (!s_device_ok())
        return com_error_set(err, COM_EUNSUPPORTED, "gemm_wgmma: needs compute capability 9.0");
    const int rc = kern::tma_init(err);
    if (rc != 0)
        return rc;
    const Entry &e = kConfigs[config];
    for (int v = 0; v < (e.fold ? 3 : 1); v++) {
        const kernel_t kernel = e.kernel[dtype][v];
        KERN_CUDA_TRY(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)e.smem),
            err);
        if (e.ln)
            KERN_CUDA_TRY(
                cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                err);
    }
    return 0;
}

int kern_gemm_wgmma_cuda(int32_t config, kern_dtype_t dtype, int epi, uint16_t *y,
                         const uint16_t *x, const uint16_t *w, const uint16_t *b,
                         const kern_linear_ln_t *ln, int32_t n, int32_t in, int32_t out,
                         cudaStream_t stream, com_error_t *err) {
    if (!s_dtype_ok(dtype))
        return com_error_set(err, COM_EINVAL, "gemm_wgmma: dtype %d", (int)dtype);
    const bool fuses_ln = kern_gemm_wgmma_fuses_ln(config), folds = kern_gemm_wgmma_folds(config);
    if (!kern_gemm_wgmma_valid(config, dtype, n, in, out) || epi < 0 || epi > 6 ||
        (epi == 3) != fuses_ln || (epi >= 4) != folds || !y || !x || !w || (epi >= 1 && !b) ||
        !kern::aligned16(y) || !kern::aligned16(x) || !kern::aligned16(w) || !kern::tma_ready())
        return com_error_set(err, COM_EINVAL,
                             "gemm_wgmma: config %d, %dx%dx%d, epilogue %d: unsupported shape, "
                             "epilogue, unaligned pointers or not prepared",
                             (int)config, (int)n, (int)in, (int)out, epi);
    kern_linear_ln_t lnv = {};
    if (epi == 3) {
        /* 16-byte accesses (cp.async of the residual, vector stores) */
        if (!ln || !ln->gamma || !ln->beta ||
            !!ln->residual + !!ln->residual_bf16 + !!ln->residual_f16 != 1 ||
            !kern::aligned16(ln->residual) || !kern::aligned16(ln->residual_bf16) ||
            !kern::aligned16(ln->residual_f16) || !kern::aligned16(ln->out_f32) ||
            !kern::aligned16(ln->out_f16) || !(ln->eps >= 0.f))
            return com_error_set(err, COM_EINVAL,
                                 "gemm_wgmma: LayerNorm epilogue: needs gamma, beta, exactly one "
                                 "residual, 16-byte aligned residual, out_f32 and out_f16, and "
                                 "eps >= 0");
        lnv = *ln;
        /* y is binary16 too: a second store of the same values to the same place is not needed */
        if (dtype == KERN_DTYPE_F16 && lnv.out_f16 == y)
            lnv.out_f16 = nullptr;
    } else if (epi >= 4) {
        if (!s_fold_ok(epi, dtype, ln, in, out))
            return com_error_set(err, COM_EINVAL,
                                 "gemm_wgmma: folded LayerNorm epilogue %d, %dx%d: needs 64-column "
                                 "blocks (<= %d columns), eps >= 0, and the operands of "
                                 "kern_linear_ln_t that the epilogue names",
                                 epi, (int)in, (int)out, KERN_STATS_MAX_COLS);
        lnv = *ln;
    }
    const Entry &e = kConfigs[config];
    CUtensorMap tx, tw, ty;
    int rc = s_encode(&tx, dtype, x, n, in, e.bm, err);
    if (rc == 0)
        rc = s_encode(&tw, dtype, w, out, in, e.bn, err);
    if (rc == 0)
        rc = s_encode(&ty, dtype, y, n, out, e.out_rows, err);
    if (rc != 0)
        return rc;
    /* split-K and LayerNorm: one CTA per tile and rank; otherwise persistent, at most one CTA
     * per SM */
    const int32_t col_tiles = (out + e.bn - 1) / e.bn, tiles = col_tiles * ((n + e.bm - 1) / e.bm);
    int dev = 0;
    KERN_CUDA_TRY(cudaGetDevice(&dev), err); /* valid: 0 <= dev < 64, its SM count is known */
    const int32_t sms = g_device_sms[dev].load(std::memory_order_relaxed);
    const int32_t ctas = e.split > 1 || e.ln || tiles < sms ? tiles : sms;
    const dim3 grid((unsigned)ctas, 1u, (unsigned)e.split);
    /* LayerNorm: a row block's column tiles and K ranges form one cluster (split-K alone has
     * its cluster shape compiled in) */
    const dim3 cluster = e.ln ? dim3((unsigned)col_tiles, 1u, (unsigned)e.split) : dim3(1, 1, 1);
    KERN_CUDA_TRY(kern::launch_cluster(e.kernel[dtype][e.fold ? epi - 4 : 0], grid, cluster,
                                       dim3((unsigned)e.threads), e.smem, stream, tx, tw, ty, y, b,
                                       lnv, n, in, out, epi),
                  err);
    return 0;
}
