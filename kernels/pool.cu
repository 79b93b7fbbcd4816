/* kernels/pool.cu — CUDA sentence pooling (CLS / mean / last token), Matryoshka truncation and
 * L2 normalisation, fp32 out (contract in pool.h; plain-C reference kern_pool_ref beside it).
 *
 * Algorithm: grid-stride over sequences, one 256-thread block (8 warps) per sequence. Mean: warp
 * w sums the tokens t0 + w, t0 + w + 8, ... of the sequence, lanes over the kept columns
 * (coalesced 128-byte row reads, 4 tokens unrolled so several loads are in flight), into its own
 * row of shared memory; after a barrier each thread adds the 8 partial sums of its columns and
 * scales by 1/len. (A first version with one thread per column walking all tokens serially ran
 * 42 us for one 128-token sequence on an H200: latency-bound; the bench's "pool" row.) CLS/last:
 * a copy of one row. With normalize the block reduces the squares (warp shuffles + shared
 * memory) and each thread rescales its own columns by 1/max(norm, 1e-12). Every per-batch
 * number (n_seqs, out_dim, normalize) comes from device memory, so the launch (grid =
 * min(max_seqs, 2048) blocks, 8 x hidden floats of shared memory) is the same for every batch
 * of a bucket. Stream: the caller's. Tested by tests/test_kernels_cuda.c; timed by
 * bench_kernels_cuda ("pool"). */
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/pool.h"

namespace {

constexpr int kWarps = 8, kThreads = kWarps * 32;

__global__ void __launch_bounds__(kThreads)
    k_pool(float *__restrict__ out, const float *__restrict__ h, const int32_t *__restrict__ cu,
           const int32_t *__restrict__ n_seqs_p, const int32_t *__restrict__ out_dim_p,
           const int32_t *__restrict__ normalize_p, int32_t H, int mode) {
    extern __shared__ float part[]; /* [kWarps][H] */
    __shared__ float red[kWarps];
    const int32_t n_seqs = *n_seqs_p, D = *out_dim_p;
    const bool norm = *normalize_p != 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (D < 1 || D > H)
        return;
    for (int32_t s = blockIdx.x; s < n_seqs; s += gridDim.x) {
        const int32_t t0 = cu[s], t1 = cu[s + 1];
        float *o = out + (int64_t)s * D;
        if (mode == KERN_POOL_MEAN) {
            for (int32_t d = lane; d < D; d += 32) {
                float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
                int32_t t = t0 + warp;
                for (; t + 3 * kWarps < t1; t += 4 * kWarps) {
                    a0 += h[(int64_t)t * H + d];
                    a1 += h[(int64_t)(t + kWarps) * H + d];
                    a2 += h[(int64_t)(t + 2 * kWarps) * H + d];
                    a3 += h[(int64_t)(t + 3 * kWarps) * H + d];
                }
                for (; t < t1; t += kWarps)
                    a0 += h[(int64_t)t * H + d];
                part[warp * H + d] = (a0 + a1) + (a2 + a3);
            }
            __syncthreads();
        }
        float ss = 0.f;
        const float inv_len = 1.0f / (float)(t1 - t0);
        for (int32_t d = threadIdx.x; d < D; d += kThreads) {
            float v;
            if (mode == KERN_POOL_MEAN) {
                v = 0.f;
#pragma unroll
                for (int w = 0; w < kWarps; w++)
                    v += part[w * H + d];
                v *= inv_len;
            } else {
                v = h[(int64_t)(mode == KERN_POOL_CLS ? t0 : t1 - 1) * H + d];
            }
            o[d] = v;
            ss += v * v;
        }
        if (norm) {
            ss = kern::warp_sum(ss);
            if (lane == 0)
                red[warp] = ss;
            __syncthreads();
            float tot = 0.f;
#pragma unroll
            for (int w = 0; w < kWarps; w++)
                tot += red[w];
            const float inv = 1.0f / fmaxf(sqrtf(tot), 1e-12f);
            for (int32_t d = threadIdx.x; d < D; d += kThreads)
                o[d] *= inv;
        }
        __syncthreads(); /* part and red are reused by the next sequence */
    }
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
    const size_t smem = (size_t)kWarps * hidden * sizeof(float);
    if (smem > 200 * 1024)
        return com_error_set(err, COM_EUNSUPPORTED, "pool_cuda: hidden %d too wide", (int)hidden);
    if (smem > 48 * 1024)
        KERN_CUDA_TRY(
            cudaFuncSetAttribute(k_pool, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
            err);
    const unsigned blocks = (unsigned)(max_seqs < 2048 ? max_seqs : 2048);
    k_pool<<<blocks, kThreads, smem, stream>>>(out, h, cu_seqlens, n_seqs, out_dim, normalize,
                                               hidden, (int)mode);
    KERN_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}
