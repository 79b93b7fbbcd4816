/* kernels/gemm_mma.cu — our own tensor-core GEMM for the dense layers (contract in gemm_mma.h,
 * used by linear.cu as candidates of a kern_linear plan beside cuBLASLt's algorithms):
 * y[n, out] = epi(x[n, in] W[out, in]^T + b), 16-bit in, fp32 accumulation, the epilogue (none,
 * + bias, + bias then exact erf GELU, kern::gelu_pair) applied in fp32 and rounded once to 16
 * bits.
 * The 16-bit type (kern_dtype_t: bf16 or binary16, for x, w, b and y alike) is a template
 * parameter D: mma.sync of that type, the same tiles; each configuration exists for both.
 *
 * Algorithm: one CTA per BM x BN output tile (grid x over column tiles so neighbouring CTAs share
 * their x rows in L2, y over row tiles, z over the K split). Both operands are K-major, which is
 * what mma.sync.m16n8k16.row.col wants: ldmatrix (not transposed) loads the A fragments from
 * x's tile and the B fragments from W's tile. K is walked in BK = 32 or 64 slices through a
 * STAGES-deep cp.async ring (16-byte copies, .cg: L2 only); shared rows are padded by 8 elements
 * (80 or 144 bytes) so the 8 row addresses of every ldmatrix phase hit 8 distinct 16-byte bank
 * groups. Rows >= n, W rows >= out and K past in are zero-filled by the copy (src-size 0), so
 * the tails need no other masking; in % 8 == 0 keeps every 16-byte chunk wholly inside or out.
 * Epilogue: the fp32 accumulators go to shared memory (reusing the ring) and are written out as
 * 8-column (16-byte) chunks, bias and GELU applied there; rows >= n and columns >= out are not
 * stored. Split-K (SPLIT = 2, 4 or 8) uses a thread-block cluster of SPLIT CTAs along z, one K
 * range each; after a cluster barrier, CTA r of the cluster sums the tile's rows
 * [r BM/S, (r+1) BM/S) over the S CTAs' shared memory (distributed shared memory) in rank order
 * 0..S-1 and applies the epilogue: deterministic, no atomics, no workspace, and GELU still sees
 * the whole sum. A second cluster barrier keeps every CTA's shared memory alive until all reads
 * are done.
 *
 * Launch configurations (kConfigs, BM x BN, warps, BK, split): at small n the op is bound by
 * L2 traffic, x bytes x (out / BN) + W bytes x (n / BM), and by the CTA count: 128-row tiles read
 * W once at n <= 128 and split-K restores the CTA count; 32/64-row tiles give many CTAs. At
 * large n the 64x128 / 128x128 8-warp tiles (cuBLASLt's wgmma kernels are 2-4x faster there; the
 * tuner decides). Requires in % 8 == 0, out % 8 == 0 and 16-byte aligned x, w, y.
 * PDL launch: the weight tiles of the first STAGES-1 K slices (cp.async, not yet committed) and
 * each thread's 8 bias values are read BEFORE kern::pdl_wait(), overlapping the previous
 * kernel's tail (no kernel writes w or b); x, and y, only after it; the trigger follows the wait.
 * Stream: the caller's. Tested by tests/test_kernels_cuda.c (test_linear: every configuration x
 * epilogue over awkward shapes; test_linear_pdl: every configuration launched right behind the
 * kernel that writes x; both in bf16 and binary16); timed by bench_kernels_cuda ("linear ..."
 * rows, through the tuned plan; "gemms ... dtype=f16" for binary16). */
#include <cooperative_groups.h>

#include "kernels/gemm_mma.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

namespace cg = cooperative_groups;

template <int BM, int BN, int WARPS_M, int WARPS_N, int SPLIT, int STAGES, int BK> struct Cfg {
    static constexpr int kBK = BK, kSA = BK + 8; /* K slice per stage; padded shared row */
    static constexpr int kThreads = WARPS_M * WARPS_N * 32;
    static constexpr int kWTM = BM / WARPS_M, kWTN = BN / WARPS_N; /* warp tile */
    static constexpr int kMI = kWTM / 16, kNI = kWTN / 8;          /* mma tiles per warp */
    static constexpr int kCS = BN + 4; /* fp32 staging row stride (keeps float4 alignment) */
    static constexpr size_t kRing = (size_t)STAGES * (BM + BN) * kSA * 2;
    static constexpr size_t kStage = (size_t)BM * kCS * 4;
    static constexpr size_t kSmem = kRing > kStage ? kRing : kStage;
    static_assert(kWTM % 16 == 0 && kWTN % 16 == 0, "warp tile: 16-row A and 16-column B pairs");
    static_assert(BK == 32 || BK == 64, "ldmatrix rows: 80 or 144 bytes apart, conflict-free");
    static_assert((BM * kBK / 8) % kThreads == 0 && (BN * kBK / 8) % kThreads == 0,
                  "tile copy: whole chunks per thread");
    static_assert(BM % SPLIT == 0 && BN % 8 == 0, "epilogue rows per cluster rank");
};

/* One operand's half of a pipeline stage: rows [r0, r0 + BR) of the K-major matrix src
 * ([lim, K] 16-bit, global) at K tile kt into dst ([BR][BK + 8] 16-bit, shared), as BR * BK / 8
 * 16-byte cp.async chunks spread over the CTA's THREADS threads. Rows >= lim and columns >= K
 * are zero-filled (src-size 0: nothing is read). */
template <int BR, int BK, int THREADS>
__device__ __forceinline__ void load_rows(uint16_t *dst, const uint16_t *__restrict__ src,
                                          int32_t r0, int32_t lim, int32_t K, int32_t kt, int tid) {
    constexpr int kSA = BK + 8;
    const int32_t k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < BR * BK / 8 / THREADS; i++) {
        const int c = tid + i * THREADS, r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
        const int32_t gr = r0 + r, gk = k0 + kc;
        const bool ok = gr < lim && gk < K;
        kern::cp_async16(kern::smem_u32(dst + r * kSA + kc), ok ? src + (int64_t)gr * K + gk : src,
                         ok ? 16 : 0);
    }
}

template <kern_dtype_t D, int BM, int BN, int WARPS_M, int WARPS_N, int SPLIT, int STAGES, int BK>
__device__ __forceinline__ void
gemm_body(uint16_t *__restrict__ y, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
          const uint16_t *__restrict__ b, int32_t n, int32_t K, int32_t N, int epi) {
    using C = Cfg<BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>;
    constexpr int kBK = C::kBK, kSA = C::kSA;
    constexpr int kRows = BM / SPLIT, kChunks = BN / 8; /* epilogue: rows per rank, 8-col chunks */
    static_assert(C::kThreads % kChunks == 0, "epilogue: one column chunk per thread");
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *As = reinterpret_cast<uint16_t *>(smem); /* [STAGES][BM][kSA] */
    uint16_t *Bs = As + (size_t)STAGES * BM * kSA;     /* [STAGES][BN][kSA] */
    float *Cs = reinterpret_cast<float *>(smem);       /* [BM][kCS], after the main loop */
    const int tid = (int)threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int32_t row0 = (int32_t)blockIdx.y * BM, col0 = (int32_t)blockIdx.x * BN;
    int rank = 0;
    if constexpr (SPLIT > 1)
        rank = (int)cg::this_cluster().block_rank();
    const int32_t nk = (K + kBK - 1) / kBK;
    const int32_t kt0 = (int32_t)((int64_t)rank * nk / SPLIT),
                  kt1 = (int32_t)((int64_t)(rank + 1) * nk / SPLIT);
    const int32_t my_nk = kt1 - kt0;

    /* stage st <- K tile kt: BM rows of x (rows >= n zero) and BN rows of w (rows >= N zero) */
    auto load_x = [&](int st, int32_t kt) {
        load_rows<BM, kBK, C::kThreads>(As + (size_t)st * BM * kSA, x, row0, n, K, kt, tid);
    };
    auto load_w = [&](int st, int32_t kt) {
        load_rows<BN, kBK, C::kThreads>(Bs + (size_t)st * BN * kSA, w, col0, N, K, kt, tid);
    };

    /* Before the PDL wait, only what no kernel writes (kern::pdl_wait): the weight tiles of the
     * prologue stages and this thread's 8 bias values (the epilogue's column chunk of a thread
     * is the same on every pass, kThreads % kChunks == 0), kept as 4 16-bit pairs. The previous
     * grid may still be running; nothing global is written before the wait. */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++)
        if (s < my_nk)
            load_w(s, kt0 + s);
    const int ec = (tid % kChunks) * 8; /* epilogue columns col0 + ec .. + 7 */
    uint32_t bias2[4] = {0u, 0u, 0u, 0u};
    if (epi >= 1 && tid < kRows * kChunks && col0 + ec < N)
#pragma unroll
        for (int e = 0; e < 4; e++)
            bias2[e] = (uint32_t)b[col0 + ec + 2 * e] | ((uint32_t)b[col0 + ec + 2 * e + 1] << 16);
    kern::pdl_wait(); /* x (and y) only from here on */
    kern::pdl_trigger();
    /* cp.async groups: the W copies above were not committed, so they join the first group
     * committed here. Group 0 = W tiles 0..STAGES-2 + x tile 0; group s = x tile s for
     * s = 1..STAGES-2 (empty past my_nk); the main loop's group for tile t >= STAGES-1 holds
     * both halves of it. At iteration t, STAGES-1+t groups are committed and
     * cp_async_wait<STAGES-2> leaves at most STAGES-2 pending; groups complete in order, so
     * groups 0..t are done: group 0 (every prologue W tile) and group t (x tile t, or all of
     * tile t), i.e. both halves of tile t. */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < my_nk)
            load_x(s, kt0 + s);
        kern::cp_async_commit(); /* empty groups too: the wait counts stay aligned */
    }

    float acc[C::kMI][C::kNI][4];
#pragma unroll
    for (int i = 0; i < C::kMI; i++)
#pragma unroll
        for (int j = 0; j < C::kNI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.f;

    for (int32_t t = 0; t < my_nk; t++) {
        kern::cp_async_wait<STAGES - 2>(); /* tile t has landed (for this thread) */
        __syncthreads();                   /* ... for all threads; and tile t-1's stage is free */
        if (t + STAGES - 1 < my_nk) {
            load_x((t + STAGES - 1) % STAGES, kt0 + t + STAGES - 1);
            load_w((t + STAGES - 1) % STAGES, kt0 + t + STAGES - 1);
        }
        kern::cp_async_commit();
        const uint16_t *as = As + (size_t)(t % STAGES) * BM * kSA;
        const uint16_t *bs = Bs + (size_t)(t % STAGES) * BN * kSA;
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 16) {
            uint32_t af[C::kMI][4], bf[C::kNI][2];
#pragma unroll
            for (int i = 0; i < C::kMI; i++) {
                /* lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: rows 0-15 at k 8-15 */
                const int r = wm * C::kWTM + i * 16 + (lane % 16), k = kk + (lane / 16) * 8;
                kern::ldmatrix_x4(kern::smem_u32(as + r * kSA + k), af[i][0], af[i][1], af[i][2],
                                  af[i][3]);
            }
#pragma unroll
            for (int j = 0; j < C::kNI; j += 2) {
                /* matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) */
                const int r = wn * C::kWTN + j * 8 + (lane & 7) + ((lane >> 4) << 3);
                const int k = kk + ((lane >> 3) & 1) * 8;
                kern::ldmatrix_x4(kern::smem_u32(bs + r * kSA + k), bf[j][0], bf[j][1],
                                  bf[j + 1][0], bf[j + 1][1]);
            }
#pragma unroll
            for (int i = 0; i < C::kMI; i++)
#pragma unroll
                for (int j = 0; j < C::kNI; j++)
                    kern::mma16<D>(acc[i][j], af[i], bf[j][0], bf[j][1]);
        }
    }
    kern::cp_async_wait<0>();
    __syncthreads(); /* the ring is now reused as the fp32 staging tile */

    /* accumulator (i, j): rows lane/4 and lane/4 + 8, columns 2 (lane%4) and + 1 */
#pragma unroll
    for (int i = 0; i < C::kMI; i++)
#pragma unroll
        for (int j = 0; j < C::kNI; j++) {
            const int r = wm * C::kWTM + i * 16 + lane / 4,
                      c = wn * C::kWTN + j * 8 + (lane % 4) * 2;
            *reinterpret_cast<float2 *>(Cs + r * C::kCS + c) =
                make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2 *>(Cs + (r + 8) * C::kCS + c) =
                make_float2(acc[i][j][2], acc[i][j][3]);
        }
    if constexpr (SPLIT > 1)
        kern::cluster_barrier_own_smem(); /* every rank's partial tile is visible */
    else
        __syncthreads();

    for (int idx = tid; idx < kRows * kChunks; idx += C::kThreads) {
        const int r = rank * kRows + idx / kChunks, c = ec; /* idx % kChunks == tid % kChunks */
        const int32_t gr = row0 + r, gc = col0 + c;
        if (gr >= n || gc >= N) /* N % 8 == 0: a chunk is wholly in or out */
            continue;
        float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        /* rank order 0..SPLIT-1 whatever this CTA's rank: the same sum on every run */
#pragma unroll
        for (int s = 0; s < SPLIT; s++) {
            const float *src = Cs + r * C::kCS + c;
            if constexpr (SPLIT > 1)
                src = cg::this_cluster().map_shared_rank(Cs, s) + r * C::kCS + c;
            const float4 p = *reinterpret_cast<const float4 *>(src),
                         q = *reinterpret_cast<const float4 *>(src + 4);
            v[0] += p.x, v[1] += p.y, v[2] += p.z, v[3] += p.w;
            v[4] += q.x, v[5] += q.y, v[6] += q.z, v[7] += q.w;
        }
        if (epi >= 1) {
#pragma unroll
            for (int e = 0; e < 8; e++) { /* b[gc + e], read before the wait */
                if constexpr (D == KERN_DTYPE_F16)
                    v[e] += kern::to_f32<D>((uint16_t)(bias2[e / 2] >> (e % 2 * 16)));
                else
                    v[e] +=
                        __uint_as_float(e % 2 ? bias2[e / 2] & 0xffff0000u : bias2[e / 2] << 16);
            }
            if (epi == 2)
#pragma unroll
                for (int e = 0; e < 8; e += 2)
                    kern::gelu_pair<D>(v[e], v[e + 1]);
        }
        kern::store16<D, 8>(y + (int64_t)gr * N + gc, v);
    }
    if constexpr (SPLIT > 1)
        kern::cluster_barrier_relaxed(); /* no CTA leaves while another reads its tile */
}

template <kern_dtype_t D, int BM, int BN, int WARPS_M, int WARPS_N, int SPLIT, int STAGES, int BK>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32)
    k_gemm(uint16_t *__restrict__ y, const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
           const uint16_t *__restrict__ b, int32_t n, int32_t K, int32_t N, int epi) {
    gemm_body<D, BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>(y, x, w, b, n, K, N, epi);
}

/* the split-K flavour: SPLIT CTAs along z form one cluster */
template <kern_dtype_t D, int BM, int BN, int WARPS_M, int WARPS_N, int SPLIT, int STAGES, int BK>
__global__ void __cluster_dims__(1, 1, SPLIT) __launch_bounds__(WARPS_M *WARPS_N * 32)
    k_gemm_split(uint16_t *__restrict__ y, const uint16_t *__restrict__ x,
                 const uint16_t *__restrict__ w, const uint16_t *__restrict__ b, int32_t n,
                 int32_t K, int32_t N, int epi) {
    gemm_body<D, BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>(y, x, w, b, n, K, N, epi);
}

typedef void (*kernel_t)(uint16_t *, const uint16_t *, const uint16_t *, const uint16_t *, int32_t,
                         int32_t, int32_t, int);

struct Entry {
    const char *name;
    kernel_t kernel[2]; /* by kern_dtype_t: bf16, binary16 */
    int bm, bn, threads, split, bk;
    size_t smem;
};

template <kern_dtype_t D, int BM, int BN, int WARPS_M, int WARPS_N, int SPLIT, int STAGES, int BK>
constexpr kernel_t kernel_of() {
    if constexpr (SPLIT > 1)
        return k_gemm_split<D, BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>;
    else
        return k_gemm<D, BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>;
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int SPLIT, int STAGES, int BK>
constexpr Entry entry(const char *name) {
    using C = Cfg<BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>;
    return Entry{name,
                 {kernel_of<KERN_DTYPE_BF16, BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>(),
                  kernel_of<KERN_DTYPE_F16, BM, BN, WARPS_M, WARPS_N, SPLIT, STAGES, BK>()},
                 BM,
                 BN,
                 C::kThreads,
                 SPLIT,
                 BK,
                 C::kSmem};
}

bool s_dtype_ok(kern_dtype_t dtype) {
    return dtype == KERN_DTYPE_BF16 || dtype == KERN_DTYPE_F16;
}

/* 32-row tiles: many CTAs at small n; 64/128-row tiles read W fewer times (at n = 128 a 128-row
 * tile reads it once), the split-K ones then make up the CTA count */
const Entry kConfigs[] = {
    entry<32, 32, 2, 2, 1, 8, 64>("mma 32x32 w4 k64"),
    entry<32, 64, 2, 2, 1, 8, 64>("mma 32x64 w4 k64"),
    entry<64, 64, 2, 2, 1, 4, 32>("mma 64x64 w4"),
    entry<64, 128, 2, 4, 1, 4, 32>("mma 64x128 w8"),
    entry<128, 128, 2, 4, 1, 4, 32>("mma 128x128 w8"),
    entry<32, 32, 2, 2, 2, 8, 64>("mma 32x32 w4 k64 splitk2"),
    entry<32, 32, 2, 2, 4, 8, 64>("mma 32x32 w4 k64 splitk4"),
    entry<32, 64, 2, 2, 2, 8, 64>("mma 32x64 w4 k64 splitk2"),
    entry<32, 64, 2, 2, 4, 8, 64>("mma 32x64 w4 k64 splitk4"),
    entry<64, 32, 2, 2, 1, 8, 64>("mma 64x32 w4 k64"),
    entry<64, 32, 2, 2, 2, 8, 64>("mma 64x32 w4 k64 splitk2"),
    entry<64, 32, 2, 2, 4, 8, 64>("mma 64x32 w4 k64 splitk4"),
    entry<128, 32, 4, 1, 1, 6, 64>("mma 128x32 w4 k64"),
    entry<128, 32, 4, 1, 2, 6, 64>("mma 128x32 w4 k64 splitk2"),
    entry<128, 32, 4, 1, 4, 6, 64>("mma 128x32 w4 k64 splitk4"),
    entry<128, 32, 4, 1, 8, 6, 64>("mma 128x32 w4 k64 splitk8"),
    entry<128, 64, 2, 2, 1, 4, 64>("mma 128x64 w4 k64"),
    entry<128, 64, 2, 2, 2, 4, 64>("mma 128x64 w4 k64 splitk2"),
    entry<128, 64, 2, 2, 4, 4, 64>("mma 128x64 w4 k64 splitk4"),
    entry<128, 64, 2, 2, 8, 4, 64>("mma 128x64 w4 k64 splitk8"),
    entry<128, 128, 2, 4, 2, 4, 32>("mma 128x128 w8 splitk2"),
    entry<128, 128, 2, 4, 4, 4, 32>("mma 128x128 w8 splitk4"),
};
constexpr int32_t kNConfigs = (int32_t)(sizeof kConfigs / sizeof *kConfigs);

} // namespace

int32_t kern_gemm_mma_count(void) {
    return kNConfigs;
}

const char *kern_gemm_mma_name(int32_t config) {
    return config >= 0 && config < kNConfigs ? kConfigs[config].name : NULL;
}

bool kern_gemm_mma_valid(int32_t config, int32_t n, int32_t in, int32_t out) {
    if (config < 0 || config >= kNConfigs || n < 1 || in < 8 || out < 8 || in % 8 || out % 8)
        return false;
    /* a split needs at least 2 K tiles per rank to be worth its cluster */
    const int32_t nk = (in + kConfigs[config].bk - 1) / kConfigs[config].bk;
    return nk >= 2 * kConfigs[config].split || kConfigs[config].split == 1;
}

bool kern_gemm_mma_worth(int32_t config, int32_t n) {
    /* Only latency-bound shapes: on the H200 (bench_kernels_cuda, 2026-11-30) ours won only at
     * n = 128 (MiniLM out and ffn1+gelu) and cuBLASLt won every GEMM at n = 4096, where ours
     * peaks near 250 TFLOP/s; timing ~20 more candidates per large bucket made engine start-up
     * several times slower for nothing. */
    return config >= 0 && config < kNConfigs && n <= 1024;
}

int kern_gemm_mma_prepare(int32_t config, kern_dtype_t dtype, com_error_t *err) {
    if (config < 0 || config >= kNConfigs)
        return com_error_set(err, COM_EINVAL, "gemm_mma: config %d", (int)config);
    if (!s_dtype_ok(dtype))
        return com_error_set(err, COM_EINVAL, "gemm_mma: dtype %d", (int)dtype);
    const Entry &e = kConfigs[config];
    KERN_CUDA_TRY(cudaFuncSetAttribute(e.kernel[dtype], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)e.smem),
                  err);
    return 0;
}

int kern_gemm_mma_cuda(int32_t config, kern_dtype_t dtype, int epi, uint16_t *y, const uint16_t *x,
                       const uint16_t *w, const uint16_t *b, int32_t n, int32_t in, int32_t out,
                       cudaStream_t stream, com_error_t *err) {
    if (!kern_gemm_mma_valid(config, n, in, out) || epi < 0 || epi > 2 || !y || !x || !w ||
        (epi >= 1 && !b) || !kern::aligned16(y) || !kern::aligned16(x) || !kern::aligned16(w))
        return com_error_set(err, COM_EINVAL,
                             "gemm_mma: config %d, %dx%dx%d, epilogue %d: unsupported shape or "
                             "unaligned pointers",
                             (int)config, (int)n, (int)in, (int)out, epi);
    if (!s_dtype_ok(dtype))
        return com_error_set(err, COM_EINVAL, "gemm_mma: dtype %d", (int)dtype);
    const Entry &e = kConfigs[config];
    const dim3 grid((unsigned)((out + e.bn - 1) / e.bn), (unsigned)((n + e.bm - 1) / e.bm),
                    (unsigned)e.split);
    KERN_CUDA_TRY(kern::launch(e.kernel[dtype], grid, dim3((unsigned)e.threads), e.smem, stream, y,
                               x, w, b, n, in, out, epi),
                  err);
    return 0;
}
