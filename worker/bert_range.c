/* worker/bert_range.c — provable activation bounds of a post-LN BERT (see bert_range.h). */
#include "worker/bert_range.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* raises the running maximum; NaN counts as infinite (such a model must fail the check: the
 * loops below turn a NaN term into INFINITY, which no later maximum can hide) */
static double s_note(wrk_bert_range_t *r, double bound) {
    if (isnan(bound))
        bound = INFINITY;
    if (bound > r->worst)
        r->worst = bound;
    return bound;
}

int wrk_bert_range_init(wrk_bert_range_t *r, int32_t hidden, com_error_t *err) {
    memset(r, 0, sizeof *r);
    if (hidden < 2)
        return com_error_set(err, COM_EINVAL, "bert range: hidden %d", (int)hidden);
    r->hidden = hidden;
    r->gamma = calloc((size_t)hidden, sizeof *r->gamma);
    r->beta = calloc((size_t)hidden, sizeof *r->beta);
    if (!r->gamma || !r->beta) {
        wrk_bert_range_fini(r);
        return com_error_set(err, COM_ENOMEM, "bert range: out of memory");
    }
    return 0;
}

void wrk_bert_range_fini(wrk_bert_range_t *r) {
    free(r->gamma), free(r->beta);
    r->gamma = r->beta = NULL;
}

/* Independent lanes (no early exit, no loop-carried chain through one accumulator) let the
 * compiler vectorise the loops below: the bounds pass reads every weight of the model at start. */
enum { S_LANES = 8 };

/* max |v| (infinite with a NaN) */
static double s_max_abs(const float *v, size_t n) {
    float mx[S_LANES] = {0}; /* max |v| in float: comparisons are exact */
    int nan = 0;
    size_t i = 0;
    for (; i + S_LANES <= n; i += S_LANES)
        for (int k = 0; k < S_LANES; k++) {
            const float a = fabsf(v[i + k]);
            nan |= isnan(a);
            mx[k] = a > mx[k] ? a : mx[k];
        }
    for (; i < n; i++) {
        const float a = fabsf(v[i]);
        nan |= isnan(a);
        mx[0] = a > mx[0] ? a : mx[0];
    }
    for (int k = 1; k < S_LANES; k++)
        mx[0] = mx[k] > mx[0] ? mx[k] : mx[0];
    return nan ? INFINITY : (double)mx[0];
}

double wrk_bert_range_values(wrk_bert_range_t *r, const float *v, size_t n) {
    return s_note(r, s_max_abs(v, n));
}

double wrk_bert_range_fold(wrk_bert_range_t *r, double bound) {
    if (isnan(bound))
        bound = INFINITY;
    if (bound > r->fold_max)
        r->fold_max = bound;
    return bound;
}

double wrk_bert_range_fold_values(wrk_bert_range_t *r, const float *v, size_t n) {
    return wrk_bert_range_fold(r, s_max_abs(v, n));
}

double wrk_bert_range_layernorm(wrk_bert_range_t *r, const float *gamma, const float *beta) {
    const int32_t H = r->hidden;
    memcpy(r->gamma, gamma, (size_t)H * sizeof *gamma);
    memcpy(r->beta, beta, (size_t)H * sizeof *beta);
    const double s = sqrt((double)H - 1.0);
    double mx = 0.0;
    for (int32_t i = 0; i < H; i++) {
        const double y = s * fabs((double)gamma[i]) + fabs((double)beta[i]);
        mx = isnan(y) ? INFINITY : y > mx ? y : mx;
    }
    r->ln_max = mx > r->ln_max ? mx : r->ln_max;
    return s_note(r, mx);
}

double wrk_bert_range_after_ln(wrk_bert_range_t *r, const float *w, const float *c, int32_t row0,
                               int32_t row1) {
    const int32_t H = r->hidden;
    const double s = sqrt((double)H);
    double mx = 0.0;
    for (int32_t j = row0; j < row1; j++) {
        const float *wj = w + (size_t)j * (size_t)H;
        double sq[S_LANES] = {0}, dot[S_LANES] = {0};
        int32_t i = 0;
        for (; i + S_LANES <= H; i += S_LANES)
            for (int k = 0; k < S_LANES; k++) {
                const double a = (double)wj[i + k] * (double)r->gamma[i + k];
                sq[k] += a * a;
                dot[k] += (double)wj[i + k] * (double)r->beta[i + k];
            }
        for (; i < H; i++) {
            const double a = (double)wj[i] * (double)r->gamma[i];
            sq[0] += a * a;
            dot[0] += (double)wj[i] * (double)r->beta[i];
        }
        double sq_sum = 0.0, dot_sum = (double)c[j];
        for (int k = 0; k < S_LANES; k++)
            sq_sum += sq[k], dot_sum += dot[k];
        const double y = s * sqrt(sq_sum) + fabs(dot_sum);
        mx = isnan(y) ? INFINITY : y > mx ? y : mx;
    }
    return s_note(r, mx);
}

double wrk_bert_range_after_bound(wrk_bert_range_t *r, const float *w, const float *c, int32_t out,
                                  int32_t in, double x) {
    double mx = 0.0;
    for (int32_t j = 0; j < out; j++) {
        const float *wj = w + (size_t)j * (size_t)in;
        double l1[S_LANES] = {0};
        int32_t i = 0;
        for (; i + S_LANES <= in; i += S_LANES)
            for (int k = 0; k < S_LANES; k++)
                l1[k] += fabs((double)wj[i + k]);
        for (; i < in; i++)
            l1[0] += fabs((double)wj[i]);
        double l1_sum = 0.0;
        for (int k = 0; k < S_LANES; k++)
            l1_sum += l1[k];
        const double y = x * l1_sum + fabs((double)c[j]);
        mx = isnan(y) ? INFINITY : y > mx ? y : mx;
    }
    return s_note(r, mx);
}

double wrk_bert_range_gelu(wrk_bert_range_t *r, double z) {
    /* GELU's minimum is -0.1700 (at z = -0.7518), the binary16 GELU's -0.1710 at most (its
     * error bound, kern_cuda_dev.cuh); above it GELU(z) <= max(z, 0) */
    return s_note(r, z > 0.172 || isnan(z) ? z : 0.172);
}
