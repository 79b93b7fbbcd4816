/* kernels/copy.cu — device-side copy (contract in copy.h; the reference is memcpy).
 *
 * Algorithm: one 16-byte load and store per thread, 256-thread CTAs, the last partial 16 bytes
 * as 4-byte words by the first threads. From mapped host memory every load is a PCIe read, so
 * all of them are issued at once (one round trip) rather than looped by a few threads. Stream:
 * the caller's. Tested by tests/test_kernels_cuda.c; timed by bench_kernels_cuda ("copy"). */
#include "kernels/copy.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    k_copy(uint4 *__restrict__ dst, const uint4 *__restrict__ src, int64_t n16,
           const uint32_t *__restrict__ src_tail, uint32_t *__restrict__ dst_tail, int n_tail) {
    kern::pdl_begin(); /* the previous grid may still read dst, or write src */
    const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    if (i < n16)
        dst[i] = src[i];
    if (blockIdx.x == 0 && threadIdx.x < n_tail)
        dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

} // namespace

extern "C" int kern_copy_cuda(void *dst, const void *src, size_t bytes, cudaStream_t stream,
                              com_error_t *err) {
    if (!dst || !src || bytes % 4 != 0 || ((uintptr_t)dst | (uintptr_t)src) % 16 != 0 ||
        bytes > ((size_t)1 << 40))
        return com_error_set(err, COM_EINVAL, "copy_cuda: bad arguments (%zu bytes, %p <- %p)",
                             bytes, dst, src);
    if (bytes == 0)
        return 0;
    const int64_t n16 = (int64_t)(bytes / 16);
    const int n_tail = (int)(bytes % 16 / 4);
    const unsigned blocks = (unsigned)(n16 > 0 ? (n16 + kThreads - 1) / kThreads : 1);
    KERN_CUDA_TRY(kern::launch(k_copy, dim3(blocks), dim3(kThreads), 0, stream, (uint4 *)dst,
                               (const uint4 *)src, n16, (const uint32_t *)src + n16 * 4,
                               (uint32_t *)dst + n16 * 4, n_tail),
                  err);
    return 0;
}
