/* kernels/kern_math.h — inline helpers shared by the plain-C kernels: exp and erf written so that
 * the compiler can vectorise loops that call them (glibc's expf/erff are opaque calls that block
 * vectorisation unless -ffast-math), and reductions with 16 independent partial sums (float
 * addition is not associative, so a plain `s += x[i]` loop stays scalar).
 *
 * Accuracy (checked in tests/test_kernels.c against double precision): kern_expf relative error
 * < 2e-7 on [-87, 88]; kern_erff absolute error < 3e-7. Deterministic: same inputs, same bits
 * (the partial-sum order is fixed). Pure functions; any thread. Not an op of its own. */
#ifndef EMBER_KERNELS_KERN_MATH_H
#define EMBER_KERNELS_KERN_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* KERN_CLONES on a hot kernel makes GCC compile it three times (baseline x86-64, x86-64-v3 =
 * AVX2+FMA, x86-64-v4 = AVX-512) and pick one at load time by the CPU (an ifunc), so the plain C
 * vectorises to the machine's width without -march flags in the build. The clones give identical
 * bits: C11 mode keeps -ffp-contract=off (no FMA contraction) and every reduction fixes its order
 * (16 partial sums below), so only the vector width differs. Elsewhere it expands to nothing. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define KERN_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define KERN_CLONES
#endif

/* exp(x), x = n ln2 + r with n rounded to nearest (the 1.5*2^23 trick: exact, branch-free),
 * |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial, 2^n put in the exponent bits. Results
 * under 2^-126 flush to 0 and x >= 88.37 (n > 127) gives +inf (integer selects: a float compare
 * would block vectorisation under the default -ftrapping-math). Valid for |x| < 2^21. */
static inline float kern_expf(float x) {
    const float shifter = 12582912.0f; /* 1.5 * 2^23 */
    float t = x * 1.44269504088896341f + shifter;
    float n = t - shifter;
    float r = x - n * 0.693145751953125f;  /* ln2 hi (exact in float) */
    r = r - n * 1.428606765330187045e-06f; /* ln2 lo */
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    const int32_t ni = (int32_t)(tb - 0x4B400000u); /* n as an integer (unsigned: no overflow) */
    uint32_t bits = ((uint32_t)ni + 127u) << 23;
    bits = ni < -126 ? 0u : bits;
    bits = ni > 127 ? 0x7f800000u : bits; /* +inf */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* erf(x) = sign(x) (1 - erfc|x|), erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2): the Chebyshev
 * fit from Numerical Recipes (erfcc, fractional error < 1.2e-7), evaluated branch-free. */
static inline float kern_erff(float x) {
    float z = fabsf(x);
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    float erfc = t * kern_expf(-z * z + p);
    return copysignf(1.0f - erfc, x);
}

/* Sum of x[0..n) with 16 partial sums (vectorises; fixed order). */
static inline float kern_sum(const float *x, int32_t n) {
    float acc[16] = {0};
    int32_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            acc[j] += x[i + j];
    for (; i < n; i++)
        acc[i & 15] += x[i];
    float s = 0;
    for (int j = 0; j < 16; j++)
        s += acc[j];
    return s;
}

/* Sum of (x[i] - c)^2 over [0, n) with 16 partial sums. */
static inline float kern_sum_sq_dev(const float *x, int32_t n, float c) {
    float acc[16] = {0};
    int32_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float d = x[i + j] - c;
            acc[j] += d * d;
        }
    for (; i < n; i++) {
        float d = x[i] - c;
        acc[i & 15] += d * d;
    }
    float s = 0;
    for (int j = 0; j < 16; j++)
        s += acc[j];
    return s;
}

/* max of x[0..n), n >= 1. */
static inline float kern_max(const float *x, int32_t n) {
    float acc[16];
    for (int j = 0; j < 16; j++)
        acc[j] = x[0];
    int32_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (; i < n; i++)
        acc[0] = x[i] > acc[0] ? x[i] : acc[0];
    float m = acc[0];
    for (int j = 1; j < 16; j++)
        m = acc[j] > m ? acc[j] : m;
    return m;
}

/* Normalises x[0..n) in place to (x - mean) / sqrt(var + eps) * gamma + beta (biased variance,
 * two-pass, as torch.nn.LayerNorm). */
static inline void kern_layernorm_row(float *restrict x, const float *restrict gamma,
                                      const float *restrict beta, int32_t n, float eps) {
    float mean = kern_sum(x, n) / (float)n;
    float var = kern_sum_sq_dev(x, n, mean) / (float)n;
    float rstd = 1.0f / sqrtf(var + eps);
    for (int32_t i = 0; i < n; i++)
        x[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
}

#endif
