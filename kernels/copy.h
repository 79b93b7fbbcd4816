/* kernels/copy.h — a device-side copy of a small buffer, for the engine's batch input: the packed
 * input lives in mapped (zero-copy) pinned host memory and this kernel, the first node of the
 * bucket's graph, pulls it into device memory in one parallel PCIe round trip. A copy-engine
 * cudaMemcpyAsync costs ~11 us of a batch-1 chunk on the H200 against ~3 us for this kernel
 * (docs/benchmarks.md, eighth round). The reference is memcpy. CUDA only. */
#ifndef EMBER_KERNELS_COPY_H
#define EMBER_KERNELS_COPY_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef EMBER_HAVE_CUDA
/* dst[0, bytes) = src[0, bytes). dst and src are 16-byte aligned device addresses (src may be
 * mapped host memory, cudaHostGetDevicePointer), bytes % 4 == 0, no overlap. Launched with
 * programmatic dependent launch like the other kernels: it waits for the previous grid on the
 * stream before it writes. Returns 0, COM_EINVAL or COM_EINTERNAL. Enqueued on stream. */
int kern_copy_cuda(void *dst, const void *src, size_t bytes, struct CUstream_st *stream,
                   com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
