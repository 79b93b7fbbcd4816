/* kernels/pool.cu — CUDA sentence pooling (CLS / mean / last token), Matryoshka truncation and
 * L2 normalisation, fp32 out (contract in pool.h; plain-C reference kern_pool_ref beside it).
 *
 * Algorithm: grid-stride over sequences, one 1024-thread block per sequence. Mean: the threads
 * form R row lanes of H/4 float4 column groups (R = 1024 / (H/4), 10 at H = 384); lane r sums
 * the tokens t0 + r, t0 + r + R, ... with 8 loads in flight per thread into its own row of
 * shared memory; after a barrier each thread adds the R partial sums of its columns and scales by
 * 1/len (scalar columns when H % 4 != 0). The op is latency-bound: the earlier 8-warp version
 * with scalar loads took 12 us for one 128-token sequence and 38 us for 8 x 512 on an H200 (the
 * bench's "pool" row); the order of the sums is fixed, so results are deterministic. CLS/last:
 * a copy of one row. Each thread keeps its (at most 8) output columns in registers; with
 * normalize the block reduces the squares (warp shuffles + shared memory), and every output is
 * then stored once, scaled by 1/max(norm, 1e-12): out may be mapped host memory, where the
 * earlier store-then-rescale cost a PCIe read per thread. Hidden <= 8192. Every per-batch
 * number (n_seqs, out_dim, normalize) comes from device memory, so the launch (grid =
 * min(max_seqs, 512) blocks, R x hidden floats of shared memory) is the same for every batch
 * of a bucket.
 *
 * Folded (kern_pool_folded_cuda): the same kernel over a 16-bit pre-LN stream x and its row
 * statistics (kernels/row_stats.h); only the reading of a row differs (the Rows policies below).
 * A row reads as (x - mean_t) rstd_t, 8 values per 16-byte load, 4 loads in flight (as many
 * bytes as the fp32 kernel's 8; it spills 8 bytes where 8 in flight spilled 172; even in the
 * engine); LayerNorm's gamma and beta are applied once to the pooled value, as they commute with
 * CLS, last and mean. Each token's (mean, rstd) is computed once per block, by one thread
 * (kern::row_stats_one, the bits of every other consumer) into shared memory, for up to kThreads
 * tokens at a time (a chunk; the mean sums continue in the shared partial rows across chunks). With
 * 8 values per load a thread owns at most one column group (hidden <= 8192), so the chunk barriers
 * sit outside every per-thread loop. Shared memory: R x hidden floats (at most 32 KiB) + kThreads
 * float2.
 *
 * Stream: the caller's. Tested by tests/test_kernels_cuda.c; timed by bench_kernels_cuda
 * ("pool mean+L2", "pool folded mean+L2"). */
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/pool.h"
#include "kernels/row_stats.cuh"

namespace {

constexpr int kThreads = 1024;
/* kept dims per thread, in registers until the norm is known: hidden <= 8192 */
constexpr int kMaxDimsPerThread = 8;

/* Row lanes of a block for hidden size H read V floats at a time: threads form R lanes of H / V
 * column groups (R >= 1; a single lane loops over the groups when they outnumber the threads). */
__host__ __device__ constexpr int row_lanes(int32_t H, int V) {
    return H / V >= kThreads ? 1 : kThreads / (H / V);
}

template <int V> struct Vec;
template <> struct Vec<1> {
    using T = float;
    __device__ static void add(float *a, T x) {
        a[0] += x;
    }
};
template <> struct Vec<4> {
    using T = float4;
    __device__ static void add(float *a, T x) {
        a[0] += x.x, a[1] += x.y, a[2] += x.z, a[3] += x.w;
    }
};

/* How the kernel reads the token rows, the one difference between the two poolings: rows of
 * In, kV values per vector VT; add() sums a vector of a row with statistics st into acc, at()
 * reads one value, affine() maps the pooled value of dim d to the output's. */
template <int V> struct RowsF32 { /* the fp32 hidden state as it is */
    using In = float;
    using VT = typename Vec<V>::T;
    static constexpr int kV = V;
    static constexpr int kUnroll = 8; /* loads in flight per thread */
    static constexpr bool kStats = false;
    __device__ static void add(float *acc, VT x, float2) {
        Vec<V>::add(acc, x);
    }
    __device__ static float at(const float *h, int64_t i, float2) {
        return h[i];
    }
    __device__ static float affine(float v, const float *, const float *, int32_t) {
        return v;
    }
};
template <kern_dtype_t D> struct RowsFolded { /* LN(x) of a folded stream, x of type D */
    using In = uint16_t;
    using VT = uint4;
    static constexpr int kV = 8;
    /* 16-byte loads: 4 in flight carry as many bytes as RowsF32's 8 float4 (8 spilled 172 bytes:
     * 1024 threads leave 64 registers each) */
    static constexpr int kUnroll = 4;
    static constexpr bool kStats = true;
    __device__ static void add(float *acc, VT x, float2 st) {
        float f[8];
        kern::load16<D, 8>(reinterpret_cast<const uint16_t *>(&x), f);
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[j] += (f[j] - st.x) * st.y;
    }
    __device__ static float at(const uint16_t *x, int64_t i, float2 st) {
        return (kern::to_f32<D>(x[i]) - st.x) * st.y;
    }
    __device__ static float affine(float v, const float *gamma, const float *beta, int32_t d) {
        return v * gamma[d] + beta[d];
    }
};

/* Rows with statistics: thread i puts the (mean, rstd) of token t0 + i (< t1) in st[i], for the
 * whole block after the barrier. No-op otherwise. */
template <class Rows>
__device__ __forceinline__ void stage_stats(float2 *st, const float *__restrict__ stats, int32_t t0,
                                            int32_t t1, int32_t H, float eps) {
    if constexpr (Rows::kStats) {
        const int32_t t = t0 + (int32_t)threadIdx.x;
        if (t < t1) {
            const float *p = stats + (int64_t)t * (H / KERN_STATS_COLS) * 2;
            st[threadIdx.x] = kern::row_stats_one(p, H, eps);
        }
        __syncthreads();
    }
}

template <class Rows>
__global__ void __launch_bounds__(kThreads)
    k_pool(float *__restrict__ out, const typename Rows::In *__restrict__ h,
           const float *__restrict__ stats, const float *__restrict__ gamma,
           const float *__restrict__ beta, float eps, const int32_t *__restrict__ cu,
           const int32_t *__restrict__ n_seqs_p, const int32_t *__restrict__ out_dim_p,
           const int32_t *__restrict__ normalize_p, int32_t H, int mode) {
    constexpr int V = Rows::kV;
    using VT = typename Rows::VT;
    extern __shared__ float part[]; /* [R][H] partial sums, one row per row lane; then, with
                                       statistics, [kThreads] float2 (st) */
    __shared__ float red[kThreads / 32];
    /* Before the PDL wait (kern_cuda_dev.cuh, pdl_wait; pool.h): the batch's layout, written by
     * an earlier grid than the one before, the first sequence's bounds, and gamma / beta pulled
     * into L1 (weights) */
    const int32_t n_seqs = *n_seqs_p, D = *out_dim_p;
    const bool norm = *normalize_p != 0;
    const int32_t s_first = (int32_t)blockIdx.x;
    const int32_t t0_first = s_first < n_seqs ? cu[s_first] : 0,
                  t1_first = s_first < n_seqs ? cu[s_first + 1] : 0;
    if constexpr (Rows::kStats)
        for (int32_t d = 32 * (int32_t)threadIdx.x; d < D && D <= H; d += 32 * kThreads) {
            kern::prefetch_l1(gamma + d), kern::prefetch_l1(beta + d);
        }
    kern::pdl_begin(); /* the rows (and their statistics) from here on */
    if (D < 1 || D > H)
        return;
    const int G = H / V, R = row_lanes(H, V);
    const int lane_r = R > 1 ? (int)threadIdx.x / G : 0;
    const int c_first = R > 1 ? (int)threadIdx.x % G : (int)threadIdx.x;
    const int c_step = R > 1 ? G : kThreads; /* R > 1: each thread owns one column group */
    const int G_kept = (D + V - 1) / V;      /* groups holding a kept column */
    float2 *st = reinterpret_cast<float2 *>(part + R * H);
    for (int32_t s = s_first; s < n_seqs; s += gridDim.x) {
        const int32_t t0 = s == s_first ? t0_first : cu[s],
                      t1 = s == s_first ? t1_first : cu[s + 1];
        float *o = out + (int64_t)s * D;
        if (mode == KERN_POOL_MEAN) {
            /* tokens [tc, te): the whole sequence, or with statistics a chunk of kThreads,
             * the partial rows carried over */
            for (int32_t tc = t0;; tc += kThreads) {
                const int32_t te = Rows::kStats && t1 - tc > kThreads ? tc + kThreads : t1;
                stage_stats<Rows>(st, stats, tc, te, H, eps);
                if (lane_r < R)
                    for (int c = c_first; c < G_kept; c += c_step) {
                        float acc[V] = {};
                        const VT *col = reinterpret_cast<const VT *>(h) + c;
                        /* kUnroll independent loads in flight per thread, the tail predicated
                         * rather than serial: the op is latency-bound */
                        for (int32_t t = tc + lane_r; t < te; t += Rows::kUnroll * R) {
                            VT x[Rows::kUnroll];
#pragma unroll
                            for (int u = 0; u < Rows::kUnroll; u++)
                                if (t + u * R < te)
                                    x[u] = col[(int64_t)(t + u * R) * G];
#pragma unroll
                            for (int u = 0; u < Rows::kUnroll; u++)
                                if (t + u * R < te)
                                    Rows::add(acc, x[u], st[t + u * R - tc]);
                        }
#pragma unroll
                        for (int j = 0; j < V; j++) {
                            float &p = part[lane_r * H + c * V + j];
                            p = tc == t0 ? acc[j] : p + acc[j];
                        }
                    }
                __syncthreads(); /* st is restaged; part is read below */
                if (te == t1)
                    break;
            }
        } else {
            const int32_t t = mode == KERN_POOL_CLS ? t0 : t1 - 1;
            stage_stats<Rows>(st, stats, t, t + 1, H, eps);
        }
        /* each thread keeps its columns in registers until the norm is known and stores each
         * once: out may be mapped host memory (the engine's staging slot), where a
         * read-modify-write is a PCIe round trip per thread */
        const float inv_len = 1.0f / (float)(t1 - t0);
        float v[kMaxDimsPerThread];
        float ss = 0.f;
#pragma unroll
        for (int i = 0; i < kMaxDimsPerThread; i++) {
            const int32_t d = threadIdx.x + i * kThreads;
            v[i] = 0.f;
            if (d < D) {
                if (mode == KERN_POOL_MEAN) {
                    for (int r = 0; r < R; r++)
                        v[i] += part[r * H + d];
                    v[i] *= inv_len;
                } else {
                    v[i] =
                        Rows::at(h, (int64_t)(mode == KERN_POOL_CLS ? t0 : t1 - 1) * H + d, st[0]);
                }
                v[i] = Rows::affine(v[i], gamma, beta, d);
                ss += v[i] * v[i];
            }
        }
        float scale = 1.f;
        if (norm) {
            ss = kern::warp_sum(ss);
            if (threadIdx.x % 32 == 0)
                red[threadIdx.x / 32] = ss;
            __syncthreads();
            float tot = 0.f;
#pragma unroll 8
            for (int w = 0; w < kThreads / 32; w++)
                tot += red[w];
            scale = 1.0f / fmaxf(sqrtf(tot), 1e-12f);
        }
#pragma unroll
        for (int i = 0; i < kMaxDimsPerThread; i++) {
            const int32_t d = threadIdx.x + i * kThreads;
            if (d < D)
                o[d] = v[i] * scale;
        }
        __syncthreads(); /* part, st and red are reused by the next sequence */
    }
}

template <class Rows>
int s_launch(float *out, const typename Rows::In *h, const float *stats, const float *gamma,
             const float *beta, float eps, const int32_t *cu, const int32_t *n_seqs,
             const int32_t *out_dim, const int32_t *normalize, int32_t max_seqs, int32_t hidden,
             kern_pool_mode_t mode, cudaStream_t stream, com_error_t *err) {
    const size_t smem = (size_t)row_lanes(hidden, Rows::kV) * hidden * sizeof(float) +
                        (Rows::kStats ? kThreads * sizeof(float2) : 0);
    if (smem > 200 * 1024 || hidden > kMaxDimsPerThread * kThreads)
        return com_error_set(err, COM_EUNSUPPORTED, "pool%s_cuda: hidden %d too wide (at most %d)",
                             Rows::kStats ? "_folded" : "", (int)hidden,
                             kMaxDimsPerThread * kThreads);
    if (smem > 48 * 1024)
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_pool<Rows>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
    /* grid-stride over sequences: a few waves of blocks at most (idle 1024-thread blocks are
     * not free) */
    const unsigned blocks = (unsigned)(max_seqs < 512 ? max_seqs : 512);
    KERN_CUDA_TRY(kern::launch(k_pool<Rows>, dim3(blocks), dim3(kThreads), smem, stream, out, h,
                               stats, gamma, beta, eps, cu, n_seqs, out_dim, normalize, hidden,
                               (int)mode),
                  err);
    return 0;
}

bool s_mode_ok(kern_pool_mode_t mode) {
    return mode == KERN_POOL_CLS || mode == KERN_POOL_MEAN || mode == KERN_POOL_LAST;
}

} // namespace

extern "C" int kern_pool_cuda(float *out, const float *h, const int32_t *cu_seqlens,
                              const int32_t *n_seqs, const int32_t *out_dim,
                              const int32_t *normalize, int32_t max_seqs, int32_t hidden,
                              kern_pool_mode_t mode, cudaStream_t stream, com_error_t *err) {
    if (!out || !h || !cu_seqlens || !n_seqs || !out_dim || !normalize || max_seqs < 1 ||
        hidden < 1 || !s_mode_ok(mode))
        return com_error_set(err, COM_EINVAL, "pool_cuda: bad arguments (max_seqs %d, hidden %d)",
                             (int)max_seqs, (int)hidden);
    /* float4 rows when every row starts 16-byte aligned */
    if (hidden % 4 == 0 && kern::aligned16(h))
        return s_launch<RowsF32<4>>(out, h, nullptr, nullptr, nullptr, 0.f, cu_seqlens, n_seqs,
                                    out_dim, normalize, max_seqs, hidden, mode, stream, err);
    return s_launch<RowsF32<1>>(out, h, nullptr, nullptr, nullptr, 0.f, cu_seqlens, n_seqs, out_dim,
                                normalize, max_seqs, hidden, mode, stream, err);
}

extern "C" int kern_pool_folded_cuda(float *out, const uint16_t *x, kern_dtype_t dtype,
                                     const float *part, const float *gamma, const float *beta,
                                     float eps, const int32_t *cu_seqlens, const int32_t *n_seqs,
                                     const int32_t *out_dim, const int32_t *normalize,
                                     int32_t max_seqs, int32_t hidden, kern_pool_mode_t mode,
                                     cudaStream_t stream, com_error_t *err) {
    if (!out || !x || !part || !gamma || !beta || !cu_seqlens || !n_seqs || !out_dim ||
        !normalize || max_seqs < 1 || !s_mode_ok(mode))
        return com_error_set(err, COM_EINVAL, "pool_folded_cuda: bad arguments (max_seqs %d)",
                             (int)max_seqs);
    if (hidden < KERN_STATS_COLS || hidden % KERN_STATS_COLS != 0)
        return com_error_set(err, COM_EINVAL,
                             "pool_folded_cuda: hidden %d is not a positive multiple of %d",
                             (int)hidden, KERN_STATS_COLS);
    if (dtype != KERN_DTYPE_BF16 && dtype != KERN_DTYPE_F16)
        return com_error_set(err, COM_EINVAL, "pool_folded_cuda: dtype %d", (int)dtype);
    if (!kern::aligned16(x)) /* 16-byte loads of 8 values */
        return com_error_set(err, COM_EINVAL, "pool_folded_cuda: x %p not 16-byte aligned",
                             (const void *)x);
    if ((uintptr_t)part & 7u) /* a block's partials are read as a float2 */
        return com_error_set(err, COM_EINVAL, "pool_folded_cuda: part %p not 8-byte aligned",
                             (const void *)part);
    return dtype == KERN_DTYPE_F16
               ? s_launch<RowsFolded<KERN_DTYPE_F16>>(out, x, part, gamma, beta, eps, cu_seqlens,
                                                      n_seqs, out_dim, normalize, max_seqs, hidden,
                                                      mode, stream, err)
               : s_launch<RowsFolded<KERN_DTYPE_BF16>>(out, x, part, gamma, beta, eps, cu_seqlens,
                                                       n_seqs, out_dim, normalize, max_seqs, hidden,
                                                       mode, stream, err);
}
