/* kernels/ffn.c — reference of the fused FFN sublayer (kernels/ffn.h), composed from the plain
 * ops it fuses: linear, bias + GELU, linear, residual + LayerNorm. */
#include "kernels/ffn.h"

#include <stdlib.h>
#include <string.h>

#include "common/half.h"
#include "kernels/add_layernorm.h"
#include "kernels/bias_gelu.h"
#include "kernels/linear.h"

/* round to nearest even in bf16 (NaN kept quiet) */
static float s_round_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        u |= 0x00400000u;
    else
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

void kern_ffn_ref(float *y, const float *x, const float *w1, const float *b1, const float *w2,
                  const float *b2, const float *gamma, const float *beta, float eps, int32_t n,
                  int32_t hidden, int32_t inter, int round_h) {
    float *h = malloc((size_t)n * (size_t)inter * sizeof *h);
    float *o = malloc((size_t)n * (size_t)hidden * sizeof *o);
    if (!h || !o)
        abort(); /* a reference for tests: no recovery */
    kern_linear_ref(h, x, w1, NULL, n, hidden, inter);
    kern_bias_gelu_ref(h, b1, n, inter);
    if (round_h != 0)
        for (size_t i = 0; i < (size_t)n * (size_t)inter; i++)
            h[i] = round_h == 1 + KERN_DTYPE_F16 ? com_half_to_f32(com_half_from_f32(h[i]))
                                                 : s_round_bf16(h[i]);
    kern_linear_ref(o, h, w2, NULL, n, inter, hidden);
    kern_add_layernorm_ref(y, o, b2, x, gamma, beta, n, hidden, eps);
    free(o);
    free(h);
}
