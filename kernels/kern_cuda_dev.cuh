/* kernels/kern_cuda_dev.cuh — device-side helpers shared by the .cu kernels: warp reductions,
 * bf16 vector loads/stores (8 x bf16 = one 16-byte access), the launch-argument checks.
 * CUDA C++ only (included by the kernels/ .cu files). Pure device functions; no state. */
#ifndef EMBER_KERNELS_KERN_CUDA_DEV_CUH
#define EMBER_KERNELS_KERN_CUDA_DEV_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/kern_cuda.h"

namespace kern {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float bf2f(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}

__device__ __forceinline__ uint16_t f2bf(float f) {
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    return *reinterpret_cast<uint16_t *>(&b);
}

/* VEC consecutive bf16 from p (16-byte aligned when VEC == 8) into f[]. */
template <int VEC> __device__ __forceinline__ void load_bf16(const uint16_t *p, float *f) {
    if constexpr (VEC == 8) {
        uint4 u = *reinterpret_cast<const uint4 *>(p);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            f[2 * j] = __uint_as_float(w[j] << 16);
            f[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
        }
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            f[j] = bf2f(p[j]);
    }
}

template <int VEC> __device__ __forceinline__ void store_bf16(uint16_t *p, const float *f) {
    if constexpr (VEC == 8) {
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            w[j] = (uint32_t)f2bf(f[2 * j]) | ((uint32_t)f2bf(f[2 * j + 1]) << 16);
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            p[j] = f2bf(f[j]);
    }
}

template <int VEC> __device__ __forceinline__ void load_f32(const float *p, float *f) {
    if constexpr (VEC == 8) {
        float4 a = *reinterpret_cast<const float4 *>(p),
               b = *reinterpret_cast<const float4 *>(p + 4);
        f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z,
        f[7] = b.w;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            f[j] = p[j];
    }
}

template <int VEC> __device__ __forceinline__ void store_f32(float *p, const float *f) {
    if constexpr (VEC == 8) {
        *reinterpret_cast<float4 *>(p) = make_float4(f[0], f[1], f[2], f[3]);
        *reinterpret_cast<float4 *>(p + 4) = make_float4(f[4], f[5], f[6], f[7]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            p[j] = f[j];
    }
}

/* The second half of a warp-per-row LayerNorm, shared by the fused LayerNorm kernels: row[0..H)
 * (this warp's staging row in shared memory, already filled, with sum = the warp's partial sum
 * of it) is normalised with gamma/beta and written to out_f32 and/or out_bf16 at offset o.
 * Two passes over the row (mean, then the variance of the deviations) keep it exact enough for
 * the references' double-precision comparison. */
template <int VEC>
__device__ __forceinline__ void layernorm_row_store(const float *row, float sum, int32_t H,
                                                    float eps, const float *__restrict__ gamma,
                                                    const float *__restrict__ beta, int64_t o,
                                                    float *out_f32, uint16_t *out_bf16) {
    const int lane = threadIdx.x % 32;
    const float mean = warp_sum(sum) / (float)H;
    float sq = 0.f;
    for (int i = lane * VEC; i < H; i += 32 * VEC)
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float d = row[i + j] - mean;
            sq += d * d;
        }
    const float rstd = rsqrtf(warp_sum(sq) / (float)H + eps);
    for (int i = lane * VEC; i < H; i += 32 * VEC) {
        float y[VEC], g[VEC], be[VEC];
        load_f32<VEC>(gamma + i, g);
        load_f32<VEC>(beta + i, be);
#pragma unroll
        for (int j = 0; j < VEC; j++)
            y[j] = (row[i + j] - mean) * rstd * g[j] + be[j];
        if (out_f32)
            store_f32<VEC>(out_f32 + o + i, y);
        if (out_bf16)
            store_bf16<VEC>(out_bf16 + o + i, y);
    }
}

/* 16-byte aligned? */
static inline bool aligned16(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

} // namespace kern

#endif
