/* kernels/convert.cu — CUDA conversion fp32 -> float32 / float16 / bfloat16 (contract in
 * convert.h; the references are common/half.h's com_half_from_f32 and kern_cuda.h's
 * kern_bf16_from_f32, round to nearest even).
 *
 * Algorithm: element-wise, 4 elements per thread (a 16-byte load when aligned),
 * __float2half_rn / __float2bfloat16_rn (round to nearest even, overflow to inf, exact
 * subnormals). Stream: the caller's. Tested by
 * tests/test_kernels_cuda.c; timed by bench_kernels_cuda ("convert"). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/convert.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

template <typename T> __device__ __forceinline__ T cvt(float f);
template <> __device__ __forceinline__ float cvt<float>(float f) {
    return f;
}
template <> __device__ __forceinline__ __half cvt<__half>(float f) {
    return __float2half_rn(f);
}
template <> __device__ __forceinline__ __nv_bfloat16 cvt<__nv_bfloat16>(float f) {
    return __float2bfloat16_rn(f);
}

template <typename T>
__global__ void __launch_bounds__(256)
    k_convert(T *__restrict__ out, const float *__restrict__ in, int64_t n) {
    kern::pdl_begin();
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 4 <= n) {
        float v[4];
        if (((uintptr_t)(in + i) & 15u) == 0) {
            const float4 a = *reinterpret_cast<const float4 *>(in + i);
            v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
                v[j] = in[i + j];
        }
#pragma unroll
        for (int j = 0; j < 4; j++)
            out[i + j] = cvt<T>(v[j]);
    } else {
        for (int64_t j = i; j < n; j++)
            out[j] = cvt<T>(in[j]);
    }
}

} // namespace

extern "C" int kern_convert_cuda(void *out, const float *in, int64_t n, kern_out_dtype_t dtype,
                                 cudaStream_t stream, com_error_t *err) {
    if (!out || !in || n < 0 ||
        (dtype != KERN_OUT_F32 && dtype != KERN_OUT_F16 && dtype != KERN_OUT_BF16))
        return com_error_set(err, COM_EINVAL, "convert_cuda: bad arguments (n %lld, dtype %d)",
                             (long long)n, (int)dtype);
    if (n == 0)
        return 0;
    const unsigned blocks = (unsigned)((n + 4 * 256 - 1) / (4 * 256));
    if (dtype == KERN_OUT_F32)
        KERN_CUDA_TRY(
            kern::launch(k_convert<float>, dim3(blocks), dim3(256), 0, stream, (float *)out, in, n),
            err);
    else if (dtype == KERN_OUT_F16)
        KERN_CUDA_TRY(kern::launch(k_convert<__half>, dim3(blocks), dim3(256), 0, stream,
                                   (__half *)out, in, n),
                      err);
    else
        KERN_CUDA_TRY(kern::launch(k_convert<__nv_bfloat16>, dim3(blocks), dim3(256), 0, stream,
                                   (__nv_bfloat16 *)out, in, n),
                      err);
    return 0;
}
