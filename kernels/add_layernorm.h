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
/* The element type of a residual stream on the GPU. */
typedef enum kern_residual_type {
    KERN_RESIDUAL_F32 = 0,  /* fp32 (12 bytes per element and LayerNorm with a bf16 copy) */
    KERN_RESIDUAL_BF16 = 1, /* bf16: the next GEMM's input is the stream itself (6 bytes) */
    KERN_RESIDUAL_F16 = 2,  /* IEEE binary16 (8 bytes with the bf16 copy): 3 more mantissa bits
                               than bf16; finite only while |value| <= 65504 */
} kern_residual_type_t;

/* CUDA (add_layernorm.cu): rows t < *n_rows (all n_max rows when n_rows is NULL):
 *   y = LayerNorm(x[t] + b + residual[t]) * gamma + beta, fp32 math (every input read as fp32;
 * x and b, the GEMM's output and bias, are of the 16-bit type dtype: bf16 or binary16),
 * written to each output that is not NULL: out_f32, out_f16 (binary16, rounded to nearest even)
 * and out_bf16 (the next GEMM's input). Any output may be the residual's own buffer (in place:
 * each element is read before it is written). At least one output. Rows past *n_rows are not
 * touched. Launch configurations (see kern_add_layernorm_cuda_config): register-resident rows
 * for hidden 384 / 768 / 1024, else the generic 16-byte vector path (hidden % 8 == 0) or scalar
 * path; a pointer that is not 16-byte aligned forces the scalar path. Returns 0, COM_EINVAL or
 * COM_EINTERNAL (err says where). Enqueued on stream. The reference is kern_add_layernorm_ref on
 * the inputs converted to fp32. */
int kern_add_layernorm_cuda(float *out_f32,       /* [n_max, hidden], device, or NULL */
                            uint16_t *out_f16,    /* [n_max, hidden], device binary16, or NULL */
                            uint16_t *out_bf16,   /* [n_max, hidden], device bf16, or NULL */
                            const uint16_t *x,    /* [n_max, hidden], device dtype */
                            const uint16_t *b,    /* [hidden], device dtype, or NULL */
                            kern_dtype_t dtype,   /* of x and b */
                            const void *residual, /* [n_max, hidden], device, residual_type */
                            kern_residual_type_t residual_type,
                            const float *gamma,                   /* [hidden], device fp32 */
                            const float *beta,                    /* [hidden], device fp32 */
                            int32_t n_max, const int32_t *n_rows, /* [1] device, or NULL */
                            int32_t hidden, float eps, struct CUstream_st *stream,
                            com_error_t *err);
/* The launch configuration the launchers pick for hidden, given 16-byte aligned pointers (0
 * scalar, 1 generic vector, 2 register-resident); for tests. */
int kern_add_layernorm_cuda_config(int32_t hidden);
/* Rows a thread of the register-resident configuration takes at n_max rows with that residual
 * (1, 2 or 4; 1 for the other configurations); for tests. */
int kern_add_layernorm_cuda_rows(int32_t hidden, int32_t n_max, kern_residual_type_t residual_type);
#endif

#ifdef __cplusplus
}
#endif

#endif
