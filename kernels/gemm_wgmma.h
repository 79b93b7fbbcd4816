/* kernels/gemm_wgmma.h — internal (C++, for kernels/linear.cu only): our Hopper GEMM (TMA
 * loads, wgmma, an mbarrier ring; sm_90a only), y[n, out] = epi(x[n, in] W[out, in]^T (+ b)),
 * 16-bit in/out (dtype: bf16 or binary16, x, w, b and y alike), fp32 accumulation. Same contract
 * as gemm_mma.h, whose functions these mirror; configurations are numbered
 * 0 .. kern_gemm_wgmma_count() - 1, each built for both types. On a device that is not compute
 * capability 9.0 no configuration is valid. */
#ifndef EMBER_KERNELS_GEMM_WGMMA_H
#define EMBER_KERNELS_GEMM_WGMMA_H

#include "kernels/kern_cuda.h"
#include "kernels/linear.h"

int32_t kern_gemm_wgmma_count(void);
const char *kern_gemm_wgmma_name(int32_t config);
/* true iff config can run this shape in dtype on the current device: compute capability 9.0,
 * in % 8 == 0 and out % 8 == 0 (16-byte rows for TMA), and for split-K enough K tiles (the
 * LayerNorm configurations' cluster check asks about the dtype's kernel). */
bool kern_gemm_wgmma_valid(int32_t config, kern_dtype_t dtype, int32_t n, int32_t in, int32_t out);
/* false when config is valid but not worth timing at n rows (see kConfigs). */
bool kern_gemm_wgmma_worth(int32_t config, int32_t n);
/* Host-side set-up of config's dtype kernel (shared-memory limit, the driver's tensor-map
 * encoder); before the first launch, outside graph capture. Returns 0, COM_EINVAL,
 * COM_EUNSUPPORTED or COM_EINTERNAL. */
int kern_gemm_wgmma_prepare(int32_t config, kern_dtype_t dtype, com_error_t *err);
/* true iff config is one of the configurations that fuse the sublayer end (epilogue 3,
 * KERN_LINEAR_BIAS_ADD_LN): a cluster of the CTAs of one row block exchanges each row's
 * LayerNorm statistics. These run only epilogue 3 and the others only 0-2. Their valid() also
 * requires out % BN == 0 and at most 16 CTAs per cluster (out / BN x split). */
bool kern_gemm_wgmma_fuses_ln(int32_t config);
/* true iff config is one of the configurations with the folded LayerNorm's epilogues (4-6,
 * KERN_LINEAR_BIAS_ADD_STATS / LN_BIAS / LN_BIAS_GELU, kernels/row_stats.h); these run only
 * those, and no other configuration runs them. */
bool kern_gemm_wgmma_folds(int32_t config);
/* As kern_gemm_mma_cuda (epi 0 none, 1 bias, 2 bias + erf GELU; x, w, b, y of type dtype; w and
 * b read before the PDL wait), plus epi 3 (KERN_LINEAR_BIAS_ADD_LN) with ln's operands
 * (ln->scratch unused; y, the LayerNorm output, in dtype, the residual and out_f32 / out_f16 of
 * their own types), only for the configurations that fuse it, and epi 4-6 with ln's folded
 * operands, only for the configurations that fold; ln is ignored for epi 0-2.
 * Encodes the tensor maps on the host (no device work), so it stays capture-safe. */
int kern_gemm_wgmma_cuda(int32_t config, kern_dtype_t dtype, int epi, uint16_t *y,
                         const uint16_t *x, const uint16_t *w, const uint16_t *b,
                         const kern_linear_ln_t *ln, int32_t n, int32_t in, int32_t out,
                         cudaStream_t stream, com_error_t *err);

#endif
