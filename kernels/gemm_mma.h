/* kernels/gemm_mma.h — internal (C++, for kernels/linear.cu only): our own tensor-core GEMM,
 * y[n, out] = epi(x[n, in] W[out, in]^T (+ b)), 16-bit in/out, fp32 accumulation. The public
 * contract is kern_linear_* in linear.h; this header lists the tile configurations so the plan
 * can time and pick them. Configurations are numbered 0 .. kern_gemm_mma_count() - 1; each is
 * built for both 16-bit types (dtype: x, w, b and y all bf16 or all binary16), the same tiles. */
#ifndef EMBER_KERNELS_GEMM_MMA_H
#define EMBER_KERNELS_GEMM_MMA_H

#include "kernels/kern_abi.h"
#include "kernels/kern_cuda.h"

int32_t kern_gemm_mma_count(void);
/* Short name ("mma 64x128 w8 s4" etc.) or NULL when config is out of range. */
const char *kern_gemm_mma_name(int32_t config);
/* true iff config can run this shape: in % 8 == 0, out % 8 == 0 (16-byte rows) and, for the
 * split-K configurations, enough K tiles to split. Pointers must also be 16-byte aligned
 * (kern_gemm_mma_cuda checks). */
bool kern_gemm_mma_valid(int32_t config, int32_t n, int32_t in, int32_t out);
/* false when config is valid but not worth timing at n rows (ours only competes while the GEMM
 * is latency-bound: n <= 1024); the tuner skips those. */
bool kern_gemm_mma_worth(int32_t config, int32_t n);
/* Host-side set-up of config's dtype kernel (its dynamic shared memory limit); call before the
 * first launch, outside graph capture. Returns 0, COM_EINVAL or COM_EINTERNAL. */
int kern_gemm_mma_prepare(int32_t config, kern_dtype_t dtype, com_error_t *err);
/* epi: 0 none, 1 bias, 2 bias + erf GELU (kern_linear_epilogue_t); x, w, b and y of type dtype.
 * config must have been prepared (kern_gemm_mma_prepare) for dtype on this device. w and b are
 * read before the kernel's PDL wait (kern_cuda_dev.cuh), so no kernel may write them: weights
 * only. Returns 0, COM_EINVAL (bad config / shape / alignment / dtype) or COM_EINTERNAL.
 * Enqueued on stream; capture-safe. */
int kern_gemm_mma_cuda(int32_t config, kern_dtype_t dtype, int epi, uint16_t *y, const uint16_t *x,
                       const uint16_t *w, const uint16_t *b, int32_t n, int32_t in, int32_t out,
                       cudaStream_t stream, com_error_t *err);

#endif
