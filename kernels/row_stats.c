/* kernels/row_stats.c — the folded LayerNorm's row statistics, reference versions (format and
 * the fixed combining order in row_stats.h). Tested in tests/test_kernels.c against
 * kern_add_layernorm_ref. */
#include "kernels/row_stats.h"

#include <math.h>

void kern_row_stats_ref(float *part, const float *x, int32_t n, int32_t cols) {
    const int32_t nb = cols / KERN_STATS_COLS;
    for (int32_t t = 0; t < n; t++)
        for (int32_t k = 0; k < nb; k++) {
            const float *v = x + (int64_t)t * cols + (int64_t)k * KERN_STATS_COLS;
            double s = 0.0;
            for (int j = 0; j < KERN_STATS_COLS; j++)
                s += v[j];
            const double mean = s / KERN_STATS_COLS;
            double m2 = 0.0;
            for (int j = 0; j < KERN_STATS_COLS; j++)
                m2 += (v[j] - mean) * (v[j] - mean);
            part[((int64_t)t * nb + k) * 2] = (float)s;
            part[((int64_t)t * nb + k) * 2 + 1] = (float)m2;
        }
}

/* (G_0 + G_1) + (G_2 + G_3), G_g the in-order sum of term[k] over k = g mod 4 */
static float s_total(const float *term, int32_t nb) {
    float g[4] = {0.f, 0.f, 0.f, 0.f};
    for (int32_t k = 0; k < nb; k++)
        g[k % 4] += term[k];
    return (g[0] + g[1]) + (g[2] + g[3]);
}

void kern_row_stats_finish_ref(float *mean, float *rstd, const float *part, int32_t n, int32_t cols,
                               float eps) {
    const int32_t nb = cols / KERN_STATS_COLS;
    float term[KERN_STATS_MAX_COLS / KERN_STATS_COLS];
    for (int32_t t = 0; t < n; t++) {
        const float *p = part + (int64_t)t * nb * 2;
        for (int32_t k = 0; k < nb; k++)
            term[k] = p[2 * k];
        const float mu = s_total(term, nb) / (float)cols;
        for (int32_t k = 0; k < nb; k++) { /* fused as row_stats.cuh does: the same bits */
            const float d = fmaf(p[2 * k], 1.0f / KERN_STATS_COLS, -mu);
            term[k] = fmaf((float)KERN_STATS_COLS * d, d, p[2 * k + 1]);
        }
        const float var = s_total(term, nb) / (float)cols;
        if (mean)
            mean[t] = mu;
        if (rstd)
            rstd[t] = 1.0f / sqrtf(var + eps);
    }
}

void kern_row_stats_normalize_ref(float *out, const float *x, const float *part, const float *gamma,
                                  const float *beta, int32_t n, int32_t cols, float eps) {
    const int32_t nb = cols / KERN_STATS_COLS;
    for (int32_t t = 0; t < n; t++) {
        float mu, r;
        kern_row_stats_finish_ref(&mu, &r, part + (int64_t)t * nb * 2, 1, cols, eps);
        for (int32_t j = 0; j < cols; j++) {
            const int64_t i = (int64_t)t * cols + j;
            out[i] = (x[i] - mu) * r * gamma[j] + beta[j];
        }
    }
}
