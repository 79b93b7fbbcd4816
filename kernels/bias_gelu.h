/* kernels/bias_gelu.h — x = GELU(x + b) in place, exact (erf) GELU as BERT's "gelu":
 * GELU(z) = 0.5 z (1 + erf(z / sqrt 2)). Reference/CPU version; CUDA: kern_bias_gelu_cuda. */
#ifndef EMBER_KERNELS_BIAS_GELU_H
#define EMBER_KERNELS_BIAS_GELU_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

void kern_bias_gelu_ref(float *x,       /* [n, dim], host, fp32, in place */
                        const float *b, /* [dim], host, fp32, or NULL */
                        int32_t n, int32_t dim);

#ifdef EMBER_HAVE_CUDA
/* CUDA (bias_gelu.cu): x = GELU_erf(x + b) in place on 16-bit values of type dtype (x and b:
 * bf16 or binary16; the result rounded to it once), the GEMM epilogues' GELU (kern::gelu_pair:
 * fp32 math through tanh, error bounds in kern_cuda_dev.cuh), rows
 * t < *n_rows (all n_max rows when n_rows is NULL); later rows untouched. Launch
 * configurations: 8-wide vector path (dim % 8 == 0) and scalar path. Returns 0, COM_EINVAL or
 * COM_EINTERNAL. Enqueued on stream. */
int kern_bias_gelu_cuda(uint16_t *x,       /* [n_max, dim], device dtype, in place */
                        const uint16_t *b, /* [dim], device dtype, or NULL */
                        int32_t n_max, const int32_t *n_rows, /* [1] device, or NULL */
                        int32_t dim, kern_dtype_t dtype, struct CUstream_st *stream,
                        com_error_t *err);
int kern_bias_gelu_cuda_config(int32_t dim); /* 0 scalar, 1 vector; for tests */
#endif

#ifdef __cplusplus
}
#endif

#endif
