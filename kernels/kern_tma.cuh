/* kernels/kern_tma.cuh — the tensor-memory accelerator (TMA) and mbarriers, shared by the sm_90a
 * kernels that stream tiles by TMA (gemm_wgmma.cu, attention_wgmma.cu): 2-D tensor maps of
 * row-major 16-bit matrices (host, kern_tma.cu: the driver's cuTensorMapEncodeTiled, found
 * through the runtime, so nothing links libcuda), and the PTX wrappers for mbarrier init /
 * arrive / wait and a 2-D tile load that completes on an mbarrier (device). CUDA C++ only. */
#ifndef EMBER_KERNELS_KERN_TMA_CUH
#define EMBER_KERNELS_KERN_TMA_CUH

#include <cuda.h>
#include <stdint.h>

#include "common/error.h"
#include "kernels/kern_abi.h"

namespace kern {

/* Looks the driver's cuTensorMapEncodeTiled up once per process. 0, or COM_EUNSUPPORTED (the
 * driver has none) / the runtime's error, with err. Thread-safe. */
int tma_init(com_error_t *err);
/* Whether tma_init has succeeded. */
bool tma_ready(void);
/* The 2-D tensor map of a row-major 16-bit matrix of type dtype at p: rows x cols elements, ld
 * elements from one row to the next (ld * 2 a multiple of 16, p 16-byte aligned), box
 * [box_rows][box_cols] (box_cols * 2 bytes at most the swizzle's row), zeros read outside.
 * Needs tma_init. 0, or COM_EINTERNAL with err when the driver refuses the map. */
int tma_encode_2d(CUtensorMap *m, kern_dtype_t dtype, const uint16_t *p, int64_t rows, int64_t cols,
                  int64_t ld, int box_rows, int box_cols, CUtensorMapSwizzle swizzle,
                  com_error_t *err);

#if defined(__CUDA_ARCH__) || defined(__CUDACC__)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
/* 2-D tile (c0 = column element, c1 = row) of the tensor map into shared dst, completing on bar. */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                         int32_t c0, int32_t c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}
#endif

} // namespace kern

#endif
