/* kernels/add_layernorm.h — residual add fused with LayerNorm (BERT's post-LN sublayer end):
 *
 *   out[t] = LayerNorm(x[t] + b + residual[t]) * gamma + beta
 *
 * Reference/CPU version; CUDA: kern_add_layernorm_cuda. */
#ifndef EMBER_KERNELS_ADD_LAYERNORM_H
#define EMBER_KERNELS_ADD_LAYERNORM_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out may be the same buffer as x or as residual (element-wise, read before written). */
void kern_add_layernorm_ref(float *out,            /* [n, hidden], host, fp32 */
                            const float *x,        /* [n, hidden], host, fp32 (sublayer out) */
                            const float *b,        /* [hidden], host, fp32 bias of x, or NULL */
                            const float *residual, /* [n, hidden], host, fp32 */
                            const float *gamma,    /* [hidden], host, fp32 */
                            const float *beta,     /* [hidden], host, fp32 */
                            int32_t n, int32_t hidden, float eps);

#ifdef EMBER_HAVE_CUDA
/* CUDA (add_layernorm.cu): rows t < *n_rows (all n_max rows when n_rows is NULL):
 *   y = LayerNorm(x[t] + b + residual[t]) * gamma + beta, fp32 math,
 * written to out_f32 (fp32 residual stream; may alias residual) and out_bf16 (next GEMM's input);
 * either output may be NULL. Rows past *n_rows are not touched. Launch configurations (see
 * kern_add_layernorm_cuda_config): register-resident rows for hidden 384 / 768 / 1024, else the
 * generic 16-byte vector path (hidden % 8 == 0) or scalar path; a pointer that is not 16-byte
 * aligned forces the scalar path. Returns 0, COM_EINVAL or COM_EINTERNAL (err says where).
 * Enqueued on stream. */
int kern_add_layernorm_cuda(float *out_f32,        /* [n_max, hidden], device, or NULL */
                            uint16_t *out_bf16,    /* [n_max, hidden], device bf16, or NULL */
                            const uint16_t *x,     /* [n_max, hidden], device bf16 */
                            const uint16_t *b,     /* [hidden], device bf16, or NULL */
                            const float *residual, /* [n_max, hidden], device fp32 */
                            const float *gamma,    /* [hidden], device fp32 */
                            const float *beta,     /* [hidden], device fp32 */
                            int32_t n_max, const int32_t *n_rows, /* [1] device, or NULL */
                            int32_t hidden, float eps, struct CUstream_st *stream,
                            com_error_t *err);
/* The same with a bf16 residual stream (6 bytes/element instead of 12): v = x + b + residual,
 * all bf16 read as fp32, y = LayerNorm(v) * gamma + beta written as bf16 to out_bf16 (required;
 * may equal residual: in place) and as fp32 to out_f32 when not NULL. Same launch
 * configurations, same checks and returns. The reference is kern_add_layernorm_ref on the
 * inputs converted to fp32. */
int kern_add_layernorm_bf16_cuda(float *out_f32,           /* [n_max, hidden], device, or NULL */
                                 uint16_t *out_bf16,       /* [n_max, hidden], device bf16 */
                                 const uint16_t *x,        /* [n_max, hidden], device bf16 */
                                 const uint16_t *b,        /* [hidden], device bf16, or NULL */
                                 const uint16_t *residual, /* [n_max, hidden], device bf16 */
                                 const float *gamma,       /* [hidden], device fp32 */
                                 const float *beta,        /* [hidden], device fp32 */
                                 int32_t n_max, const int32_t *n_rows, /* [1] device, or NULL */
                                 int32_t hidden, float eps, struct CUstream_st *stream,
                                 com_error_t *err);
/* The launch configuration the launchers pick for hidden, given 16-byte aligned pointers (0
 * scalar, 1 generic vector, 2 register-resident); for tests. */
int kern_add_layernorm_cuda_config(int32_t hidden);
#endif

#ifdef __cplusplus
}
#endif

#endif
