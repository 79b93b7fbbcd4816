/* tests/test_bert_range.c — worker/bert_range.c's activation bounds against the values the
 * reference kernels (the kern_*_ref functions, fp32) actually produce: never exceeded by random or
 * adversarial inputs, and reached (within rounding) by the input each bound's proof names as the
 * worst case, so a bound that is loose by construction fails too. NaN and infinite weights make
 * the verdict infinite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/prng.h"
#include "kernels/add_layernorm.h"
#include "kernels/bias_gelu.h"
#include "kernels/linear.h"
#include "tests/test_util.h"
#include "worker/bert_range.h"

static com_prng_t g_rng;

static float s_uniform(float lo, float hi) {
    return com_prng_uniform(&g_rng, lo, hi);
}

static double s_max_abs(const float *v, size_t n) {
    double mx = 0.0;
    for (size_t i = 0; i < n; i++)
        mx = fabs((double)v[i]) > mx ? fabs((double)v[i]) : mx;
    return mx;
}

/* LayerNorm: |y| <= sqrt(H - 1) |gamma| + |beta| over random rows of every scale, and a one-hot
 * row (signed to match gamma and beta) at the worst index reaches it */
static void test_layernorm(void) {
    enum { H = 384, N = 64 };
    wrk_bert_range_t r;
    com_error_t err = {0};
    CHECK(wrk_bert_range_init(&r, H, &err) == 0);
    float g[H], b[H];
    for (int i = 0; i < H; i++)
        g[i] = s_uniform(-2.f, 2.f), b[i] = s_uniform(-1.f, 1.f);
    const double bound = wrk_bert_range_layernorm(&r, g, b);
    CHECK(r.ln_max == bound && r.worst == bound);
    static float x[N * H], zero[N * H], y[N * H];
    for (int t = 0; t < N; t++) {
        const float scale = powf(10.f, (float)(t % 8) - 3.f);
        for (int i = 0; i < H; i++)
            x[t * H + i] = scale * s_uniform(-1.f, 1.f);
        if (t % 4 == 3) /* a spike: the shape the bound's worst case has */
            x[t * H + (int)com_prng_below(&g_rng, H)] += 1000.f * scale;
    }
    kern_add_layernorm_ref(y, x, NULL, zero, g, b, N, H, 1e-12f);
    CHECK_MSG(s_max_abs(y, (size_t)N * H) <= bound * (1 + 1e-5), "LN: %g > bound %g",
              s_max_abs(y, (size_t)N * H), bound);
    int k = 0;
    for (int i = 1; i < H; i++)
        if (sqrt(H - 1.0) * fabs(g[i]) + fabs(b[i]) > sqrt(H - 1.0) * fabs(g[k]) + fabs(b[k]))
            k = i;
    memset(x, 0, sizeof(float) * H);
    x[k] = (g[k] >= 0) == (b[k] >= 0) ? 1.f : -1.f;
    kern_add_layernorm_ref(y, x, NULL, zero, g, b, 1, H, 1e-12f);
    CHECK_MSG(fabs(y[k]) >= bound * (1 - 1e-5), "LN one-hot: %g, bound %g", fabs(y[k]), bound);
    wrk_bert_range_fini(&r);
}

/* A GEMM after a LayerNorm: rows of W o gamma with zero mean make sqrt(H) (W_j o gamma) / ||.||
 * a valid normalised row, which reaches row j's bound; random rows stay below it */
static void test_after_ln(void) {
    enum { H = 64, OUT = 12, N = 200 };
    wrk_bert_range_t r;
    com_error_t err = {0};
    CHECK(wrk_bert_range_init(&r, H, &err) == 0);
    float g[H], b[H], zb[H] = {0}, w[OUT * H], c[OUT], zc[OUT] = {0};
    for (int i = 0; i < H; i++)
        g[i] = s_uniform(0.2f, 1.5f) * (i % 3 ? 1.f : -1.f), b[i] = s_uniform(-0.5f, 0.5f);
    for (int j = 0; j < OUT; j++) {
        float v[H], mean = 0.f;
        for (int i = 0; i < H; i++)
            v[i] = s_uniform(-1.f, 1.f), mean += v[i] / H;
        for (int i = 0; i < H; i++)
            w[j * H + i] = (v[i] - mean) / g[i]; /* W_j o gamma = v - mean: zero mean */
        c[j] = s_uniform(-3.f, 3.f);
    }
    /* beta = 0, c = 0: the adversarial row reaches the bound */
    wrk_bert_range_layernorm(&r, g, zb);
    static float x[N * H], zero[N * H], u[N * H], y[N * OUT];
    for (int j = 0; j < OUT; j++) {
        const double row_bound = wrk_bert_range_after_ln(&r, w, zc, j, j + 1);
        double norm = 0.0;
        for (int i = 0; i < H; i++)
            norm += (double)w[j * H + i] * g[i] * w[j * H + i] * g[i];
        for (int i = 0; i < H; i++) /* zero mean, sum of squares H: LayerNorm keeps it */
            x[i] = (float)(sqrt((double)H) * w[j * H + i] * g[i] / sqrt(norm));
        kern_add_layernorm_ref(u, x, NULL, zero, g, zb, 1, H, 1e-12f);
        kern_linear_ref(y, u, w, zc, 1, H, OUT);
        CHECK_MSG(fabs(y[j]) <= row_bound * (1 + 1e-5) && fabs(y[j]) >= row_bound * (1 - 1e-4),
                  "after LN row %d: adversarial %g, bound %g", j, fabs(y[j]), row_bound);
    }
    /* beta and c: random LayerNorm inputs stay below the bound over all rows */
    wrk_bert_range_layernorm(&r, g, b);
    const double bound = wrk_bert_range_after_ln(&r, w, c, 0, OUT);
    for (int t = 0; t < N * H; t++)
        x[t] = s_uniform(-1.f, 1.f) * (t % 97 == 0 ? 50.f : 1.f);
    kern_add_layernorm_ref(u, x, NULL, zero, g, b, N, H, 1e-12f);
    kern_linear_ref(y, u, w, c, N, H, OUT);
    CHECK_MSG(s_max_abs(y, (size_t)N * OUT) <= bound, "after LN: %g > bound %g",
              s_max_abs(y, (size_t)N * OUT), bound);
    CHECK(r.worst >= bound);
    wrk_bert_range_fini(&r);
}

/* A GEMM after an element-wise bound X: x = X sign(W_j) sign(c_j) reaches row j's bound */
static void test_after_bound(void) {
    enum { IN = 48, OUT = 10 };
    wrk_bert_range_t r;
    com_error_t err = {0};
    CHECK(wrk_bert_range_init(&r, 8, &err) == 0);
    float w[OUT * IN], c[OUT], x[IN], y[OUT];
    for (int i = 0; i < OUT * IN; i++)
        w[i] = s_uniform(-1.f, 1.f);
    for (int j = 0; j < OUT; j++)
        c[j] = s_uniform(-2.f, 2.f);
    const double X = 3.5;
    const double bound = wrk_bert_range_after_bound(&r, w, c, OUT, IN, X);
    double reached = 0.0;
    for (int j = 0; j < OUT; j++) {
        for (int i = 0; i < IN; i++)
            x[i] = (float)X * ((w[j * IN + i] >= 0) == (c[j] >= 0) ? 1.f : -1.f);
        kern_linear_ref(y, x, w, c, 1, IN, OUT);
        reached = fabs(y[j]) > reached ? fabs(y[j]) : reached;
        for (int t = 0; t < 50; t++) { /* random inputs inside the bound */
            for (int i = 0; i < IN; i++)
                x[i] = (float)X * s_uniform(-1.f, 1.f);
            kern_linear_ref(y, x, w, c, 1, IN, OUT);
            CHECK(s_max_abs(y, OUT) <= bound);
        }
    }
    CHECK_MSG(reached <= bound * (1 + 1e-5) && reached >= bound * (1 - 1e-5),
              "after bound: reached %g, bound %g", reached, bound);
    wrk_bert_range_fini(&r);
}

/* GELU over [-Z, Z]: within [-0.172, max(Z, 0)] */
static void test_gelu(void) {
    wrk_bert_range_t r;
    com_error_t err = {0};
    CHECK(wrk_bert_range_init(&r, 8, &err) == 0);
    static const double zs[] = {0.05, 0.5, 1.0, 4.0, 30.0};
    enum { N = 4001 };
    static float v[N];
    for (size_t k = 0; k < sizeof zs / sizeof *zs; k++) {
        const double bound = wrk_bert_range_gelu(&r, zs[k]);
        for (int i = 0; i < N; i++)
            v[i] = (float)(zs[k] * (2.0 * i / (N - 1) - 1.0));
        kern_bias_gelu_ref(v, NULL, 1, N);
        CHECK_MSG(s_max_abs(v, N) <= bound, "GELU over +-%g: %g > bound %g", zs[k], s_max_abs(v, N),
                  bound);
    }
    CHECK(wrk_bert_range_gelu(&r, 0.05) == 0.172 && wrk_bert_range_gelu(&r, 2.0) == 2.0);
    wrk_bert_range_fini(&r);
}

/* NaN or infinite weights: the verdict is infinite and stays so */
static void test_not_finite(void) {
    enum { H = 8 };
    wrk_bert_range_t r;
    com_error_t err = {0};
    CHECK(wrk_bert_range_init(&r, H, &err) == 0);
    float g[H], b[H], w[2 * H], c[2] = {0, 0};
    for (int i = 0; i < H; i++)
        g[i] = 1.f, b[i] = 0.f, w[i] = w[H + i] = 0.5f;
    w[3] = NAN;
    CHECK(isinf(wrk_bert_range_values(&r, w, 2 * H)) && isinf(r.worst));
    wrk_bert_range_fini(&r);
    CHECK(wrk_bert_range_init(&r, H, &err) == 0);
    wrk_bert_range_layernorm(&r, g, b);
    CHECK(isinf(wrk_bert_range_after_ln(&r, w, c, 0, 2)) && isinf(r.worst));
    w[3] = 0.5f;
    CHECK(isfinite(wrk_bert_range_after_ln(&r, w, c, 0, 2)) && isinf(r.worst));
    g[5] = INFINITY;
    CHECK(isinf(wrk_bert_range_layernorm(&r, g, b)) && isinf(r.ln_max));
    w[H + 1] = NAN;
    CHECK(isinf(wrk_bert_range_after_bound(&r, w, c, 2, H, 1.0)));
    wrk_bert_range_fini(&r);
    CHECK(wrk_bert_range_init(&r, 1, &err) == COM_EINVAL && r.gamma == NULL);
}

/* the folded pass's bounds raise fold_max alone, NaN as infinite */
static void test_fold(void) {
    wrk_bert_range_t r;
    com_error_t err = {0};
    CHECK(wrk_bert_range_init(&r, 8, &err) == 0);
    const float v[5] = {1.f, -7.5f, 3.f, 0.f, 2.f};
    CHECK(wrk_bert_range_fold_values(&r, v, 5) == 7.5 && r.fold_max == 7.5 && r.worst == 0.0);
    CHECK(wrk_bert_range_fold(&r, 3.0) == 3.0 && r.fold_max == 7.5);
    CHECK(wrk_bert_range_fold(&r, 9.25) == 9.25 && r.fold_max == 9.25 && r.worst == 0.0);
    CHECK(isinf(wrk_bert_range_fold(&r, NAN)) && isinf(r.fold_max) && r.worst == 0.0);
    wrk_bert_range_fini(&r);
}

int main(void) {
    com_prng_seed(&g_rng, 7);
    test_layernorm();
    test_after_ln();
    test_after_bound();
    test_gelu();
    test_not_finite();
    test_fold();
    return test_finish();
}
