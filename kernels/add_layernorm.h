/* kernels/add_layernorm.h — residual add fused with LayerNorm (BERT's post-LN sublayer end):
 *
 *   out[t] = LayerNorm(x[t] + b + residual[t]) * gamma + beta
 *
 * Reference/CPU version; CUDA: kern_add_layernorm_cuda. */
#ifndef EMBER_KERNELS_ADD_LAYERNORM_H
#define EMBER_KERNELS_ADD_LAYERNORM_H

#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif
