/* kernels/bias_gelu.cu — CUDA bias + exact (erf) GELU in place on bf16 (contract in bias_gelu.h;
 * plain-C reference kern_bias_gelu_ref beside it).
 *
 * Algorithm: element-wise, fp32 math: z = x + b; x = 0.5 z (1 + erff(z / sqrt 2)) rounded once
 * to bf16. Grid sized by n_max rows (the bucket); threads of rows >= *n_rows return at once.
 * Launch configurations: VEC = 8 (one 16-byte load/store per thread; dim % 8 == 0 and aligned)
 * or VEC = 1. Shapes: x [n_max, dim] bf16, b [dim] bf16. Stream: the caller's. Tested by
 * tests/test_kernels_cuda.c; timed by bench_kernels_cuda ("bias_gelu"). */
#include "kernels/bias_gelu.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

template <int VEC>
__global__ void __launch_bounds__(256)
    k_bias_gelu(uint16_t *__restrict__ x, const uint16_t *__restrict__ b, int32_t n_max,
                const int32_t *__restrict__ n_rows, int32_t dim) {
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    const int64_t rows = n_rows ? (int64_t)min(*n_rows, n_max) : (int64_t)n_max;
    if (i >= rows * dim)
        return;
    const int32_t c = (int32_t)(i % dim);
    float v[VEC], bb[VEC];
    kern::load_bf16<VEC>(x + i, v);
    if (b)
        kern::load_bf16<VEC>(b + c, bb);
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        const float z = b ? v[j] + bb[j] : v[j];
        v[j] = 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    }
    kern::store_bf16<VEC>(x + i, v);
}

} // namespace

extern "C" int kern_bias_gelu_cuda_config(int32_t dim) {
    return dim % 8 == 0 ? 1 : 0;
}

extern "C" int kern_bias_gelu_cuda(uint16_t *x, const uint16_t *b, int32_t n_max,
                                   const int32_t *n_rows, int32_t dim, cudaStream_t stream,
                                   com_error_t *err) {
    if (!x || n_max < 1 || dim < 1)
        return com_error_set(err, COM_EINVAL, "bias_gelu_cuda: bad arguments (n %d, dim %d)",
                             (int)n_max, (int)dim);
    const bool vec = kern_bias_gelu_cuda_config(dim) && kern::aligned16(x) && kern::aligned16(b);
    const int64_t threads = (int64_t)n_max * dim / (vec ? 8 : 1);
    const unsigned blocks = (unsigned)((threads + 255) / 256);
    if (vec)
        k_bias_gelu<8><<<blocks, 256, 0, stream>>>(x, b, n_max, n_rows, dim);
    else
        k_bias_gelu<1><<<blocks, 256, 0, stream>>>(x, b, n_max, n_rows, dim);
    KERN_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}
