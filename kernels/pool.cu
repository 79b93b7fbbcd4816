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
 * of a bucket. Stream: the caller's. Tested by tests/test_kernels_cuda.c; timed by
 * bench_kernels_cuda ("pool"). */
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/pool.h"

namespace {

constexpr int kThreads = 1024, kUnroll = 8;
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

template <int V>
__global__ void __launch_bounds__(kThreads)
    k_pool(float *__restrict__ out, const float *__restrict__ h, const int32_t *__restrict__ cu,
           const int32_t *__restrict__ n_seqs_p, const int32_t *__restrict__ out_dim_p,
           const int32_t *__restrict__ normalize_p, int32_t H, int mode) {
    using VT = typename Vec<V>::T;
    extern __shared__ float part[]; /* [R][H] partial sums, one row per row lane */
    __shared__ float red[kThreads / 32];
    kern::pdl_begin();
    const int32_t n_seqs = *n_seqs_p, D = *out_dim_p;
    const bool norm = *normalize_p != 0;
    if (D < 1 || D > H)
        return;
    const int G = H / V, R = row_lanes(H, V);
    const int lane_r = R > 1 ? (int)threadIdx.x / G : 0;
    const int c_first = R > 1 ? (int)threadIdx.x % G : (int)threadIdx.x;
    const int c_step = R > 1 ? G : kThreads; /* R > 1: each thread owns one column group */
    const int G_kept = (D + V - 1) / V;      /* groups holding a kept column */
    for (int32_t s = blockIdx.x; s < n_seqs; s += gridDim.x) {
        const int32_t t0 = cu[s], t1 = cu[s + 1];
        float *o = out + (int64_t)s * D;
        if (mode == KERN_POOL_MEAN) {
            if (lane_r < R)
                for (int c = c_first; c < G_kept; c += c_step) {
                    float acc[V] = {};
                    const VT *col = reinterpret_cast<const VT *>(h) + c;
                    /* kUnroll independent loads in flight per thread, the tail predicated
                     * rather than serial: the op is latency-bound */
                    for (int32_t t = t0 + lane_r; t < t1; t += kUnroll * R) {
                        VT x[kUnroll];
#pragma unroll
                        for (int u = 0; u < kUnroll; u++)
                            if (t + u * R < t1)
                                x[u] = col[(int64_t)(t + u * R) * G];
#pragma unroll
                        for (int u = 0; u < kUnroll; u++)
                            if (t + u * R < t1)
                                Vec<V>::add(acc, x[u]);
                    }
#pragma unroll
                    for (int j = 0; j < V; j++)
                        part[lane_r * H + c * V + j] = acc[j];
                }
            __syncthreads();
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
                    v[i] = h[(int64_t)(mode == KERN_POOL_CLS ? t0 : t1 - 1) * H + d];
                }
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
        __syncthreads(); /* part and red are reused by the next sequence */
    }
}

template <int V>
int s_launch(float *out, const float *h, const int32_t *cu, const int32_t *n_seqs,
             const int32_t *out_dim, const int32_t *normalize, int32_t max_seqs, int32_t hidden,
             kern_pool_mode_t mode, cudaStream_t stream, com_error_t *err) {
    const size_t smem = (size_t)row_lanes(hidden, V) * hidden * sizeof(float);
    if (smem > 200 * 1024 || hidden > kMaxDimsPerThread * kThreads)
        return com_error_set(err, COM_EUNSUPPORTED, "pool_cuda: hidden %d too wide", (int)hidden);
    if (smem > 48 * 1024)
        KERN_CUDA_TRY(
            cudaFuncSetAttribute(k_pool<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
            err);
    /* grid-stride over sequences: a few waves of blocks at most (idle 1024-thread blocks are
     * not free) */
    const unsigned blocks = (unsigned)(max_seqs < 512 ? max_seqs : 512);
    KERN_CUDA_TRY(kern::launch(k_pool<V>, dim3(blocks), dim3(kThreads), smem, stream, out, h, cu,
                               n_seqs, out_dim, normalize, hidden, (int)mode),
                  err);
    return 0;
}

} // namespace

extern "C" int kern_pool_cuda(float *out, const float *h, const int32_t *cu_seqlens,
                              const int32_t *n_seqs, const int32_t *out_dim,
                              const int32_t *normalize, int32_t max_seqs, int32_t hidden,
                              kern_pool_mode_t mode, cudaStream_t stream, com_error_t *err) {
    if (!out || !h || !cu_seqlens || !n_seqs || !out_dim || !normalize || max_seqs < 1 ||
        hidden < 1 || (mode != KERN_POOL_CLS && mode != KERN_POOL_MEAN && mode != KERN_POOL_LAST))
        return com_error_set(err, COM_EINVAL, "pool_cuda: bad arguments (max_seqs %d, hidden %d)",
                             (int)max_seqs, (int)hidden);
    /* float4 rows when every row starts 16-byte aligned */
    if (hidden % 4 == 0 && kern::aligned16(h))
        return s_launch<4>(out, h, cu_seqlens, n_seqs, out_dim, normalize, max_seqs, hidden, mode,
                           stream, err);
    return s_launch<1>(out, h, cu_seqlens, n_seqs, out_dim, normalize, max_seqs, hidden, mode,
                       stream, err);
}
