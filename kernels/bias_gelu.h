/* kernels/bias_gelu.h — x = GELU(x + b) in place, exact (erf) GELU as BERT's "gelu":
 * GELU(z) = 0.5 z (1 + erf(z / sqrt 2)). Reference/CPU version; CUDA: kern_bias_gelu_cuda. */
#ifndef EMBER_KERNELS_BIAS_GELU_H
#define EMBER_KERNELS_BIAS_GELU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void kern_bias_gelu_ref(float *x,       /* [n, dim], host, fp32, in place */
                        const float *b, /* [dim], host, fp32, or NULL */
                        int32_t n, int32_t dim);

#ifdef __cplusplus
}
#endif

#endif
