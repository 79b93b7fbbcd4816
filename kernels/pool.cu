/* kernels/pool.cu — CUDA sentence pooling (CLS / mean / last token), Matryoshka truncation and
 * L2 normalisation, fp32 out (contract in pool.h; plain-C reference kern_pool_ref beside it).
 *
 * Algorithm: a cluster of kCluster = 8 CTAs of 256 threads per sequence (grid-stride over
 * sequences along y). CLS and last are the mean over a one-token range, so all three modes take
 * one path: the tokens [a, b) pooled are split into kCluster contiguous parts, one per CTA. In a
 * CTA the threads form R row lanes of H / V column groups (V values per vector load: 4 floats,
 * or 8 16-bit values when folded; R = 5 at H = 384 folded); lane r sums the tokens ra + r,
 * ra + r + R, ... of its part with kUnroll loads in flight per thread (8 of 16 bytes folded) into
 * its own row of shared memory; after a barrier the CTA's R partial rows are added per column
 * (csum), a cluster barrier publishes csum, and CTA 0 adds the kCluster vectors in rank order
 * (distributed shared memory), scales by 1/(b - a), applies the affine, reduces the squares and
 * stores every output once, scaled by 1/max(norm, 1e-12) (out may be mapped host memory, where a
 * read-modify-write is a PCIe round trip per thread). The order of every sum is fixed:
 * deterministic. Why a cluster: the op is latency- and per-SM-bandwidth-bound. One 1024-thread
 * block per sequence (session 19's kernel) took 5.8 us after its PDL wait for MiniLM's 1 x 128
 * tokens in the engine's graph (statistics 1.2, two rounds of row loads 2.7 = 98 KB through one SM,
 * column sums of 21 lanes 1.2, norm 0.5: %globaltimer marks, session 20); split over 8 SMs each CTA
 * loads 16 rows in one round, its first round issued before the statistics are staged: the
 * kernel adds 5.3 us to the graph (was 6.5; BERT-base 5.8, was 7.4: CUPTI trace, session 20).
 * CTA 0 keeps the pooled values in its own csum, so the kernel needs 80 registers and 3 CTAs fit
 * an SM: the buckets of many sequences run in fewer waves (the first version, 128 registers and
 * 2 CTAs per SM, took 14.6 us for 16384 tokens in ~60 sequences of 32-512, against 11.8 for one
 * 1024-thread block per sequence; 12.3 with this one, session 22).
 *
 * Completion flags (kern_pool_done_t, optional): after CTA 0 of a sequence's cluster has stored
 * its row, every thread fences system-wide, the CTA meets at a barrier, and thread 0 writes the
 * batch's epoch into flags[s]: a host spinning on mapped memory sees the row complete ~4 us
 * before an event recorded after the kernel completes (graph_launch3, session 22).
 *
 * Folded (kern_pool_folded_cuda): the same kernel over a 16-bit pre-LN stream x and its row
 * statistics (kernels/row_stats.h); only the reading of a row differs (the Rows policies below).
 * A row reads as (x - mean_t) rstd_t; LayerNorm's gamma and beta are applied once to the pooled
 * value, as they commute with CLS, last and mean. Each token's (mean, rstd) is computed once per
 * CTA, by one thread (kern::row_stats_one, the bits of every other consumer) into shared memory,
 * for up to kThreads tokens at a time (a chunk; the sums continue in the partial rows across
 * chunks). Shared memory: kThreads float2 (statistics) + R x H floats (partial rows, 8 KiB when
 * H / V <= kThreads) + H floats (csum, where CTA 0 keeps the pooled values until the norm is
 * known). Hidden <= 8192. Every per-batch number (n_seqs, out_dim,
 * normalize) comes from device memory, so the launch (grid kCluster x min(max_seqs, 128)) is the
 * same for every batch of a bucket.
 *
 * Stream: the caller's. Tested by tests/test_kernels_cuda.c; timed by bench_kernels_cuda
 * ("pool mean+L2", "pool folded mean+L2"). */
#include <cooperative_groups.h>

#include "kernels/kern_cuda_dev.cuh"
#include "kernels/pool.h"
#include "kernels/row_stats.cuh"

namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256;
constexpr int kCluster = 8; /* CTAs per sequence */
/* widest hidden size: shared memory of (R + 1) x hidden floats + the statistics <= 66 KiB */
constexpr int kMaxHidden = 8192;

/* Row lanes of a block for hidden size H read V values at a time: threads form R lanes of H / V
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
 * In, kV values per vector VT; add() sums a vector of a row with statistics st into acc,
 * affine() maps the pooled value of dim d to the output's. kUnroll loads in flight per thread. */
template <int V> struct RowsF32 { /* the fp32 hidden state as it is */
    using In = float;
    using VT = typename Vec<V>::T;
    static constexpr int kV = V;
    static constexpr int kUnroll = 6; /* 8 spill at 3 CTAs per SM (80 registers) */
    static constexpr bool kStats = false;
    __device__ static void add(float *acc, VT x, float2) {
        Vec<V>::add(acc, x);
    }
    __device__ static float affine(float v, const float *, const float *, int32_t) {
        return v;
    }
};
template <kern_dtype_t D> struct RowsFolded { /* LN(x) of a folded stream, x of type D */
    using In = uint16_t;
    using VT = uint4;
    static constexpr int kV = 8;
    static constexpr int kUnroll = 8;
    static constexpr bool kStats = true;
    __device__ static void add(float *acc, VT x, float2 st) {
        float f[8];
        kern::load16<D, 8>(reinterpret_cast<const uint16_t *>(&x), f);
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[j] += (f[j] - st.x) * st.y;
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

/* One round of a row lane's loads: rows t, t + R, ... (< te) of column group col */
template <class Rows>
__device__ __forceinline__ void load_round(typename Rows::VT (&x)[Rows::kUnroll],
                                           const typename Rows::VT *__restrict__ col, int32_t t,
                                           int32_t te, int R, int G) {
#pragma unroll
    for (int u = 0; u < Rows::kUnroll; u++)
        if (t + u * R < te)
            x[u] = col[(int64_t)(t + u * R) * G];
}

template <class Rows>
__global__ void __launch_bounds__(kThreads, 3) /* 80 registers: 3 CTAs per SM */
    k_pool(float *__restrict__ out, const typename Rows::In *__restrict__ h,
           const float *__restrict__ stats, const float *__restrict__ gamma,
           const float *__restrict__ beta, float eps, const int32_t *__restrict__ cu,
           const int32_t *__restrict__ n_seqs_p, const int32_t *__restrict__ out_dim_p,
           const int32_t *__restrict__ normalize_p, uint32_t *__restrict__ done,
           const int32_t *__restrict__ epoch_p, int32_t H, int mode) {
    constexpr int V = Rows::kV;
    using VT = typename Rows::VT;
    extern __shared__ float2 smem[]; /* st [kThreads] float2 (with statistics), then part
                                        [R][H] (one partial row per row lane), then csum [H] */
    __shared__ float red[kThreads / 32];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    /* Before the PDL wait (kern_cuda_dev.cuh, pdl_wait; pool.h): the batch's layout, written by
     * an earlier grid than the one before, the first sequence's bounds, and gamma / beta pulled
     * into L1 by the CTA that applies them (weights) */
    const int32_t n_seqs = *n_seqs_p, D = *out_dim_p;
    const bool norm = *normalize_p != 0;
    const uint32_t epoch = done ? (uint32_t)*epoch_p : 0u;
    const int32_t s_first = (int32_t)blockIdx.y;
    const int32_t t0_first = s_first < n_seqs ? cu[s_first] : 0,
                  t1_first = s_first < n_seqs ? cu[s_first + 1] : 0;
    if (Rows::kStats && rank == 0)
        for (int32_t d = 32 * (int32_t)threadIdx.x; d < D && D <= H; d += 32 * kThreads) {
            kern::prefetch_l1(gamma + d), kern::prefetch_l1(beta + d);
        }
    kern::pdl_begin(); /* the rows (and their statistics) from here on */
    if (D < 1 || D > H)
        return; /* the whole cluster: no barrier is left waiting */
    const int G = H / V, R = row_lanes(H, V);
    const int lane_r = R > 1 ? (int)threadIdx.x / G : 0;
    const int c_first = R > 1 ? (int)threadIdx.x % G : (int)threadIdx.x;
    const int c_step = R > 1 ? G : kThreads; /* R > 1: each thread owns one column group */
    const int G_kept = (D + V - 1) / V;      /* groups holding a kept column */
    const bool lane_live = lane_r < R && c_first < G_kept;
    float2 *st = smem;
    float *part = reinterpret_cast<float *>(smem + (Rows::kStats ? kThreads : 0));
    float *csum = part + R * H;
    for (int32_t s = s_first; s < n_seqs; s += gridDim.y) {
        const int32_t t0 = s == s_first ? t0_first : cu[s],
                      t1 = s == s_first ? t1_first : cu[s + 1];
        /* the tokens pooled, [a, b): the sequence, or its first or last token; this CTA's
         * contiguous part [ra, rb) of them */
        const int32_t a = mode == KERN_POOL_LAST ? t1 - 1 : t0;
        const int32_t b = mode == KERN_POOL_MEAN ? t1 : a + 1;
        const int32_t per = (b - a + kCluster - 1) / kCluster;
        const int32_t ra = min(b, a + rank * per), rb = min(b, ra + per);
        /* chunks [tc, te) of at most kThreads tokens with statistics (one without): the row
         * lanes' sums continue in their partial rows */
        for (int32_t tc = ra; tc < rb; tc += kThreads) {
            const int32_t te = Rows::kStats && rb - tc > kThreads ? tc + kThreads : rb;
            /* the first round of loads is issued before the statistics are staged, so the two
             * overlap: the op is latency-bound */
            VT x[Rows::kUnroll];
            if (lane_live)
                load_round<Rows>(x, reinterpret_cast<const VT *>(h) + c_first, tc + lane_r, te, R,
                                 G);
            stage_stats<Rows>(st, stats, tc, te, H, eps);
            if (lane_r < R)
                for (int c = c_first; c < G_kept; c += c_step) {
                    float acc[V] = {};
                    const VT *col = reinterpret_cast<const VT *>(h) + c;
                    for (int32_t t = tc + lane_r; t < te; t += Rows::kUnroll * R) {
                        if (c != c_first || t != tc + lane_r)
                            load_round<Rows>(x, col, t, te, R, G);
#pragma unroll
                        for (int u = 0; u < Rows::kUnroll; u++)
                            if (t + u * R < te)
                                Rows::add(acc, x[u], st[t + u * R - tc]);
                    }
#pragma unroll
                    for (int j = 0; j < V; j++) {
                        float &p = part[lane_r * H + c * V + j];
                        p = tc == ra ? acc[j] : p + acc[j];
                    }
                }
            __syncthreads(); /* st is restaged; part is read below */
        }
        /* this CTA's sums per kept column (0 without tokens) */
        for (int32_t d = (int32_t)threadIdx.x; d < D; d += kThreads) {
            float v = 0.f;
            if (ra < rb)
                for (int r = 0; r < R; r++)
                    v += part[r * H + d];
            csum[d] = v;
        }
        kern::cluster_barrier_own_smem(); /* every CTA's csum readable by CTA 0 */
        if (rank == 0) {
            /* the pooled values replace CTA 0's own csum (each read only by the thread that
             * owns its column) until the norm is known; then every output is stored once */
            const float inv_len = 1.0f / (float)(b - a);
            const float *peer[kCluster];
#pragma unroll
            for (int q = 0; q < kCluster; q++)
                peer[q] = cluster.map_shared_rank(csum, q);
            float ss = 0.f;
            for (int32_t d = (int32_t)threadIdx.x; d < D; d += kThreads) {
                float v = 0.f;
#pragma unroll
                for (int q = 0; q < kCluster; q++)
                    v += peer[q][d];
                v = Rows::affine(v * inv_len, gamma, beta, d);
                csum[d] = v;
                ss += v * v;
            }
            float scale = 1.f;
            if (norm) {
                ss = kern::warp_sum(ss);
                if (threadIdx.x % 32 == 0)
                    red[threadIdx.x / 32] = ss;
                __syncthreads();
                float tot = 0.f;
#pragma unroll
                for (int w = 0; w < kThreads / 32; w++)
                    tot += red[w];
                scale = 1.0f / fmaxf(sqrtf(tot), 1e-12f);
            }
            float *o = out + (int64_t)s * D;
            for (int32_t d = (int32_t)threadIdx.x; d < D; d += kThreads)
                o[d] = csum[d] * scale;
            if (done) { /* the row is in memory (system-wide) before its flag */
                __threadfence_system();
                __syncthreads();
                if (threadIdx.x == 0)
                    *reinterpret_cast<volatile uint32_t *>(done + s) = epoch;
            }
        }
        /* CTA 0 has read every csum (and red) before the next sequence rewrites them */
        kern::cluster_barrier_relaxed();
    }
}

template <class Rows>
int s_launch(float *out, const typename Rows::In *h, const float *stats, const float *gamma,
             const float *beta, float eps, const int32_t *cu, const int32_t *n_seqs,
             const int32_t *out_dim, const int32_t *normalize, const kern_pool_done_t *done,
             int32_t max_seqs, int32_t hidden, kern_pool_mode_t mode, cudaStream_t stream,
             com_error_t *err) {
    const size_t smem = (Rows::kStats ? kThreads * sizeof(float2) : 0) +
                        (size_t)(row_lanes(hidden, Rows::kV) + 1) * hidden * sizeof(float);
    if (hidden > kMaxHidden)
        return com_error_set(err, COM_EUNSUPPORTED, "pool%s_cuda: hidden %d too wide (at most %d)",
                             Rows::kStats ? "_folded" : "", (int)hidden, kMaxHidden);
    if (smem > 48 * 1024)
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_pool<Rows>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
    /* grid-stride over sequences: a few waves of clusters at most */
    const unsigned seq_slots = (unsigned)(max_seqs < 128 ? max_seqs : 128);
    KERN_CUDA_TRY(kern::launch_cluster(k_pool<Rows>, dim3(kCluster, seq_slots),
                                       dim3(kCluster, 1, 1), dim3(kThreads), smem, stream, out, h,
                                       stats, gamma, beta, eps, cu, n_seqs, out_dim, normalize,
                                       done ? done->flags : nullptr, done ? done->epoch : nullptr,
                                       hidden, (int)mode),
                  err);
    return 0;
}

bool s_mode_ok(kern_pool_mode_t mode) {
    return mode == KERN_POOL_CLS || mode == KERN_POOL_MEAN || mode == KERN_POOL_LAST;
}

bool s_done_ok(const kern_pool_done_t *done) {
    return !done || (done->flags && done->epoch);
}

} // namespace

extern "C" int kern_pool_cuda(float *out, const float *h, const int32_t *cu_seqlens,
                              const int32_t *n_seqs, const int32_t *out_dim,
                              const int32_t *normalize, const kern_pool_done_t *done,
                              int32_t max_seqs, int32_t hidden, kern_pool_mode_t mode,
                              cudaStream_t stream, com_error_t *err) {
    if (!out || !h || !cu_seqlens || !n_seqs || !out_dim || !normalize || max_seqs < 1 ||
        hidden < 1 || !s_mode_ok(mode) || !s_done_ok(done))
        return com_error_set(err, COM_EINVAL, "pool_cuda: bad arguments (max_seqs %d, hidden %d)",
                             (int)max_seqs, (int)hidden);
    /* float4 rows when every row starts 16-byte aligned */
    if (hidden % 4 == 0 && kern::aligned16(h))
        return s_launch<RowsF32<4>>(out, h, nullptr, nullptr, nullptr, 0.f, cu_seqlens, n_seqs,
                                    out_dim, normalize, done, max_seqs, hidden, mode, stream, err);
    return s_launch<RowsF32<1>>(out, h, nullptr, nullptr, nullptr, 0.f, cu_seqlens, n_seqs, out_dim,
                                normalize, done, max_seqs, hidden, mode, stream, err);
}

extern "C" int kern_pool_folded_cuda(float *out, const uint16_t *x, kern_dtype_t dtype,
                                     const float *part, const float *gamma, const float *beta,
                                     float eps, const int32_t *cu_seqlens, const int32_t *n_seqs,
                                     const int32_t *out_dim, const int32_t *normalize,
                                     const kern_pool_done_t *done, int32_t max_seqs, int32_t hidden,
                                     kern_pool_mode_t mode, cudaStream_t stream, com_error_t *err) {
    if (!out || !x || !part || !gamma || !beta || !cu_seqlens || !n_seqs || !out_dim ||
        !normalize || max_seqs < 1 || !s_mode_ok(mode) || !s_done_ok(done))
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
                                                      n_seqs, out_dim, normalize, done, max_seqs,
                                                      hidden, mode, stream, err)
               : s_launch<RowsFolded<KERN_DTYPE_BF16>>(out, x, part, gamma, beta, eps, cu_seqlens,
                                                       n_seqs, out_dim, normalize, done, max_seqs,
                                                       hidden, mode, stream, err);
}

namespace {

/* kern_pool_rows_cuda: thread i of the grid copies 16-byte piece i % per_row of row i / per_row
 * of both arrays (per_row = hidden / 8). */
__global__ void __launch_bounds__(kThreads)
    k_pool_rows(uint4 *__restrict__ dst_a, const uint4 *__restrict__ src_a,
                uint4 *__restrict__ dst_b, const uint4 *__restrict__ src_b,
                const int32_t *__restrict__ cu_seqlens, const int32_t *__restrict__ n_seqs,
                int32_t max_rows, int32_t per_row, bool last) {
    kern::pdl_begin(); /* src is the previous grid's output; dst may still be read by it */
    const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    if (i >= (int64_t)max_rows * per_row)
        return;
    const int32_t s = (int32_t)(i / per_row), c = (int32_t)(i % per_row);
    uint4 a = make_uint4(0, 0, 0, 0), b = a;
    if (s < *n_seqs) {
        const int64_t t = last ? cu_seqlens[s + 1] - 1 : cu_seqlens[s];
        a = src_a[t * per_row + c];
        b = src_b[t * per_row + c];
    }
    dst_a[i] = a;
    dst_b[i] = b;
}

} // namespace

extern "C" int kern_pool_rows_cuda(uint16_t *dst_a, const uint16_t *src_a, uint16_t *dst_b,
                                   const uint16_t *src_b, const int32_t *cu_seqlens,
                                   const int32_t *n_seqs, int32_t max_rows, int32_t hidden,
                                   kern_pool_mode_t mode, cudaStream_t stream, com_error_t *err) {
    if (!dst_a || !src_a || !dst_b || !src_b || !cu_seqlens || !n_seqs || max_rows < 1 ||
        hidden < 8 || hidden % 8 != 0 || (mode != KERN_POOL_CLS && mode != KERN_POOL_LAST) ||
        !kern::aligned16(dst_a) || !kern::aligned16(src_a) || !kern::aligned16(dst_b) ||
        !kern::aligned16(src_b))
        return com_error_set(err, COM_EINVAL,
                             "pool_rows_cuda: bad arguments (max_rows %d, hidden %d, mode %d)",
                             (int)max_rows, (int)hidden, (int)mode);
    const int32_t per_row = hidden / 8;
    const int64_t n = (int64_t)max_rows * per_row;
    KERN_CUDA_TRY(kern::launch(k_pool_rows, dim3((unsigned)((n + kThreads - 1) / kThreads)),
                               dim3(kThreads), 0, stream, (uint4 *)dst_a, (const uint4 *)src_a,
                               (uint4 *)dst_b, (const uint4 *)src_b, cu_seqlens, n_seqs, max_rows,
                               per_row, mode == KERN_POOL_LAST),
                  err);
    return 0;
}
