/* kernels/kern_tma.cu — the host half of kern_tma.cuh: the driver's cuTensorMapEncodeTiled,
 * looked up through the runtime once per process, and 2-D tensor maps of 16-bit matrices. */
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

#include "kernels/kern_tma.cuh"

namespace {
std::atomic<PFN_cuTensorMapEncodeTiled_v12000> g_encode{nullptr};
std::mutex g_init_mu;
} // namespace

namespace kern {

int tma_init(com_error_t *err) {
    if (g_encode.load(std::memory_order_acquire))
        return 0;
    std::lock_guard<std::mutex> lock(g_init_mu);
    if (g_encode.load(std::memory_order_acquire))
        return 0;
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t ce = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                            cudaEnableDefault, &q);
    if (ce != cudaSuccess)
        return com_error_set(err, COM_EUNSUPPORTED, "tma: driver entry point lookup: %s",
                             cudaGetErrorString(ce));
    if (q != cudaDriverEntryPointSuccess || !fn)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "tma: the driver has no cuTensorMapEncodeTiled");
    g_encode.store(reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn),
                   std::memory_order_release);
    return 0;
}

bool tma_ready(void) {
    return g_encode.load(std::memory_order_acquire) != nullptr;
}

int tma_encode_2d(CUtensorMap *m, kern_dtype_t dtype, const uint16_t *p, int64_t rows, int64_t cols,
                  int64_t ld, int box_rows, int box_cols, CUtensorMapSwizzle swizzle,
                  com_error_t *err) {
    const PFN_cuTensorMapEncodeTiled_v12000 encode = g_encode.load(std::memory_order_acquire);
    if (!encode)
        return com_error_set(err, COM_EINTERNAL, "tma: tma_init has not run");
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * 2};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1, 1};
    const CUresult r = encode(
        m,
        dtype == KERN_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        2, const_cast<uint16_t *>(p), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return com_error_set(err, COM_EINTERNAL, "tma: cuTensorMapEncodeTiled failed (%d)", (int)r);
    return 0;
}

} // namespace kern
