/* kernels/add_layernorm.c — out = LayerNorm(x + b + residual) (shapes in add_layernorm.h).
 *
 * Algorithm: per row, the sum goes into out (one pass; out may alias x or residual since each
 * element is read before it is written), then LayerNorm in place (two-pass fp32 mean/variance
 * with 16 partial sums, biased variance, as torch). Rows are independent: split [0, n) across
 * threads by offsetting the pointers. No allocation; any thread. Tested in test_kernels.c. */
#include "kernels/add_layernorm.h"

#include "kernels/kern_math.h"

KERN_CLONES void kern_add_layernorm_ref(float *out, const float *x, const float *b,
                                        const float *residual, const float *gamma,
                                        const float *beta, int32_t n, int32_t hidden, float eps) {
    for (int32_t t = 0; t < n; t++) {
        float *o = out + (int64_t)t * hidden;
        const float *xr = x + (int64_t)t * hidden;
        const float *rr = residual + (int64_t)t * hidden;
        if (b) {
            for (int32_t i = 0; i < hidden; i++)
                o[i] = xr[i] + b[i] + rr[i];
        } else {
            for (int32_t i = 0; i < hidden; i++)
                o[i] = xr[i] + rr[i];
        }
        kern_layernorm_row(o, gamma, beta, hidden, eps);
    }
}
