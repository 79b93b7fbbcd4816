/* kernels/bias_gelu.cu — CUDA bias + exact (erf) GELU in place on 16-bit values, bf16 or binary16
 * (contract in bias_gelu.h; plain-C reference kern_bias_gelu_ref beside it).
 *
 * Algorithm: element-wise: z = x + b in fp32; x = GELU(z) by kern::gelu_pair<D> on column pairs
 * (fp32 math through tanh: the GEMM epilogues' own GELU, so both give the same bits for the same
 * z; error bounds in kern_cuda_dev.cuh), rounded once to the 16-bit
 * type (dtype: x and b alike; the template parameter D of the kernel). 2-D grid, 32-bit index math:
 * a 64 x 4 thread block covers 64 column vectors of VEC elements x 16 rows; a thread keeps its
 * column's bias in registers and handles rows r, r + 4, r + 8, r + 12 with all four loads issued
 * before the math (64 bytes in flight per thread at VEC = 8); blockIdx.y strides over 16-row blocks
 * (grid.y capped at 65535). Grid sized by n_max rows (the bucket); rows >= *n_rows are skipped.
 * Launch configurations: VEC = 8 (16-byte accesses; dim % 8 == 0 and aligned) or VEC = 1, each for
 * both types. Shapes: x [n_max, dim], b [dim]. Stream: the caller's. Tested by
 * tests/test_kernels_cuda.c; timed by bench_kernels_cuda
 * ("bias_gelu"). */
#include "kernels/bias_gelu.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kCols = 64, kRowThreads = 4, kThreads = kCols * kRowThreads, kUnroll = 4,
              kRowsPerBlock = kRowThreads * kUnroll;

template <kern_dtype_t D, int VEC>
__global__ void __launch_bounds__(kThreads)
    k_bias_gelu(uint16_t *__restrict__ x, const uint16_t *__restrict__ b, int32_t n_max,
                const int32_t *__restrict__ n_rows, int32_t dim) {
    kern::pdl_begin();
    const int32_t c = ((int32_t)blockIdx.x * kCols + (int32_t)threadIdx.x) * VEC;
    if (c >= dim) /* VEC = 8 only with dim % 8 == 0: the whole vector is in the row */
        return;
    float bb[VEC];
    if (b)
        kern::load16<D, VEC>(b + c, bb);
    const int32_t rows = n_rows ? min(*n_rows, n_max) : n_max;
    for (int32_t r0 = (int32_t)(blockIdx.y * kRowsPerBlock + threadIdx.y); r0 < rows;
         r0 += (int32_t)gridDim.y * kRowsPerBlock) {
        float v[kUnroll][VEC];
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            if (r0 + u * kRowThreads < rows)
                kern::load16<D, VEC>(x + (int64_t)(r0 + u * kRowThreads) * dim + c, v[u]);
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            if (r0 + u * kRowThreads < rows) {
#pragma unroll
                for (int j = 0; j < VEC; j++)
                    if (b)
                        v[u][j] += bb[j];
                if constexpr (VEC == 1) {
                    float unused = 0.f;
                    kern::gelu_pair<D>(v[u][0], unused);
                } else {
#pragma unroll
                    for (int j = 0; j < VEC; j += 2)
                        kern::gelu_pair<D>(v[u][j], v[u][j + 1]);
                }
                kern::store16<D, VEC>(x + (int64_t)(r0 + u * kRowThreads) * dim + c, v[u]);
            }
    }
}

template <kern_dtype_t D>
cudaError_t s_launch(bool vec, dim3 grid, dim3 block, uint16_t *x, const uint16_t *b, int32_t n_max,
                     const int32_t *n_rows, int32_t dim, cudaStream_t stream) {
    return vec ? kern::launch(k_bias_gelu<D, 8>, grid, block, 0, stream, x, b, n_max, n_rows, dim)
               : kern::launch(k_bias_gelu<D, 1>, grid, block, 0, stream, x, b, n_max, n_rows, dim);
}

} // namespace

extern "C" int kern_bias_gelu_cuda_config(int32_t dim) {
    return dim % 8 == 0 ? 1 : 0;
}

extern "C" int kern_bias_gelu_cuda(uint16_t *x, const uint16_t *b, int32_t n_max,
                                   const int32_t *n_rows, int32_t dim, kern_dtype_t dtype,
                                   cudaStream_t stream, com_error_t *err) {
    if (!x || n_max < 1 || dim < 1)
        return com_error_set(err, COM_EINVAL, "bias_gelu_cuda: bad arguments (n %d, dim %d)",
                             (int)n_max, (int)dim);
    if (dtype != KERN_DTYPE_BF16 && dtype != KERN_DTYPE_F16)
        return com_error_set(err, COM_EINVAL, "bias_gelu_cuda: dtype %d", (int)dtype);
    const bool vec = kern_bias_gelu_cuda_config(dim) && kern::aligned16(x) && kern::aligned16(b);
    const int vw = vec ? 8 : 1;
    const int32_t row_blocks = (n_max + kRowsPerBlock - 1) / kRowsPerBlock;
    const dim3 grid((unsigned)((dim / vw + kCols - 1) / kCols),
                    (unsigned)(row_blocks < 65535 ? row_blocks : 65535)),
        block(kCols, kRowThreads);
    if (dtype == KERN_DTYPE_F16)
        KERN_CUDA_TRY(s_launch<KERN_DTYPE_F16>(vec, grid, block, x, b, n_max, n_rows, dim, stream),
                      err);
    else
        KERN_CUDA_TRY(s_launch<KERN_DTYPE_BF16>(vec, grid, block, x, b, n_max, n_rows, dim, stream),
                      err);
    return 0;
}
