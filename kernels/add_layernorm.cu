/* kernels/add_layernorm.cu — CUDA residual add + LayerNorm (contract in add_layernorm.h;
 * plain-C reference kern_add_layernorm_ref beside it).
 *
 * Algorithm: one warp per row, 4 rows per 128-thread block, grid = ceil(n_max / 4). Row t <
 * *n_rows: v = x (bf16) + b (bf16) + residual (fp32), in the reference's order, kept in the
 * lane's own slice of shared memory; two-pass mean / biased variance (warp reductions); y = (v -
 * mean) * rstd * gamma + beta written as fp32 (may overwrite residual: the lane read its
 * elements first) and/or bf16. Launch configurations: VEC = 8 (16-byte accesses; hidden % 8 == 0
 * and aligned pointers) or VEC = 1. Stream: the caller's. Tested by tests/test_kernels_cuda.c;
 * timed by bench_kernels_cuda ("add_layernorm"). */
#include "kernels/add_layernorm.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kWarps = 4;

template <int VEC>
__global__ void __launch_bounds__(kWarps * 32)
    k_add_ln(float *out_f32, uint16_t *__restrict__ out_bf16, const uint16_t *__restrict__ x,
             const uint16_t *__restrict__ b, const float *residual, const float *__restrict__ gamma,
             const float *__restrict__ beta, int32_t n_max, const int32_t *__restrict__ n_rows,
             int32_t H, float eps) {
    extern __shared__ float sm[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t t = blockIdx.x * kWarps + warp;
    if (t >= n_max || (n_rows && t >= *n_rows))
        return;
    float *row = sm + warp * H;
    const int64_t o = (int64_t)t * H;
    float sum = 0.f;
    for (int i = lane * VEC; i < H; i += 32 * VEC) {
        float a[VEC], r[VEC], bb[VEC];
        kern::load_bf16<VEC>(x + o + i, a);
        kern::load_f32<VEC>(residual + o + i, r);
        if (b)
            kern::load_bf16<VEC>(b + i, bb);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float v = b ? a[j] + bb[j] + r[j] : a[j] + r[j];
            row[i + j] = v;
            sum += v;
        }
    }
    kern::layernorm_row_store<VEC>(row, sum, H, eps, gamma, beta, o, out_f32, out_bf16);
}

} // namespace

extern "C" int kern_add_layernorm_cuda_config(int32_t hidden) {
    return hidden % 8 == 0 ? 1 : 0;
}

extern "C" int kern_add_layernorm_cuda(float *out_f32, uint16_t *out_bf16, const uint16_t *x,
                                       const uint16_t *b, const float *residual, const float *gamma,
                                       const float *beta, int32_t n_max, const int32_t *n_rows,
                                       int32_t hidden, float eps, cudaStream_t stream,
                                       com_error_t *err) {
    if (n_max < 1 || hidden < 1 || hidden > 16384 || !x || !residual || !gamma || !beta)
        return com_error_set(err, COM_EINVAL, "add_layernorm_cuda: bad arguments (n %d, hidden %d)",
                             (int)n_max, (int)hidden);
    const dim3 grid((unsigned)((n_max + kWarps - 1) / kWarps)), block(kWarps * 32);
    const size_t smem = (size_t)kWarps * hidden * sizeof(float);
    const bool vec = kern_add_layernorm_cuda_config(hidden) && kern::aligned16(x) &&
                     kern::aligned16(b) && kern::aligned16(residual) && kern::aligned16(gamma) &&
                     kern::aligned16(beta) && kern::aligned16(out_f32) && kern::aligned16(out_bf16);
    if (smem > 48 * 1024) {
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_add_ln<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem),
                      err);
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_add_ln<8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem),
                      err);
    }
    if (vec)
        k_add_ln<8><<<grid, block, smem, stream>>>(out_f32, out_bf16, x, b, residual, gamma, beta,
                                                   n_max, n_rows, hidden, eps);
    else
        k_add_ln<1><<<grid, block, smem, stream>>>(out_f32, out_bf16, x, b, residual, gamma, beta,
                                                   n_max, n_rows, hidden, eps);
    KERN_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}
