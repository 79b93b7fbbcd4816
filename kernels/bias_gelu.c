/* kernels/bias_gelu.c — bias + exact GELU in place (shapes in bias_gelu.h).
 *
 * Algorithm: one pass per row; erf from kern_math.h (a vectorisable erfc fit, |error| < 3e-7),
 * so the loop vectorises without -ffast-math. Rows are independent: split [0, n) across threads
 * by offsetting x. No allocation; any thread. Tested in tests/test_kernels.c. */
#include "kernels/bias_gelu.h"

#include "kernels/kern_math.h"

KERN_CLONES void kern_bias_gelu_ref(float *x, const float *b, int32_t n, int32_t dim) {
    for (int32_t t = 0; t < n; t++) {
        float *restrict r = x + (int64_t)t * dim;
        if (b) {
            const float *restrict bb = b;
            for (int32_t i = 0; i < dim; i++)
                r[i] += bb[i];
        }
        for (int32_t i = 0; i < dim; i++) {
            float z = r[i];
            r[i] = 0.5f * z * (1.0f + kern_erff(z * 0.70710678118654752f));
        }
    }
}
