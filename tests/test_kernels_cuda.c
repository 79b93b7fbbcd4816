/* tests/test_kernels_cuda.c — every CUDA kernel (the kernels/ .cu files, through their C ABI)
 * against its plain-C reference (kern_<op>_ref, or common/half.h for the float16 conversion) on
 * seeded random inputs, over awkward shapes (1 token, odd sizes, sequences of length 1, lengths
 * that are not a multiple of the 64-row tile, the largest bucket) and every launch configuration
 * the launchers can pick (vector / scalar element-wise paths; attention head_dim 32 / 64 x causal x
 * GQA; several cuBLASLt heuristic ranks and each of our GEMM configurations x epilogue, the
 * bias + residual + LayerNorm epilogue fused and unfused in both residual types; rows past the
 * device-side count left untouched), and the PDL ordering: each GEMM launched right
 * behind the kernel that writes its input must not read it early (test_linear_pdl). The fused
 * FFN sublayer (ffn.cu, Hopper only; test "ffn") against kern_ffn_ref at BERT-like scales, over
 * token counts around its 64-row blocks, device row counts, in place and not, with and without
 * its fp32 copy, plus its refusals; skipped, saying so, where kern_ffn_supported is false. Every
 * op with 16-bit operands (linear, bias_gelu, add_layernorm's x / b, attention, embed_layernorm,
 * ffn) runs once per 16-bit type, bf16 then binary16, on the same random draws (s_both_dtypes).
 * Inputs are rounded to the type under test for both sides, so the comparison measures the kernel,
 * not the input rounding; bf16 outputs get relative tolerances of about 1e-2, binary16 ones 8x
 * tighter (s_tol16), fp32 outputs 1e-4 or tighter. Outputs are poisoned (NaN) before every run.
 * Without a CUDA device: prints "SKIPPED: no CUDA device" and exits 77 (ctest SKIP_RETURN_CODE).
 * Single-threaded; one stream. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/half.h"
#include "common/prng.h"
#include "kernels/add_layernorm.h"
#include "kernels/blas_core.h"
#include "kernels/attention.h"
#include "kernels/bias_gelu.h"
#include "kernels/convert.h"
#include "kernels/copy.h"
#include "kernels/embed_layernorm.h"
#include "kernels/ffn.h"
#include "kernels/kern_cuda.h"
#include "kernels/linear.h"
#include "kernels/pool.h"
#include "kernels/qkv_attention.h"
#include "kernels/row_stats.h"
#include "tests/test_util.h"

static com_prng_t g_rng;
static cudaStream_t g_st;

/* random fp32 values already representable in bf16 */
static float *s_rand_bf(size_t n, float lo, float hi) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = kern_bf16_to_f32(kern_bf16_from_f32(com_prng_uniform(&g_rng, lo, hi)));
    return p;
}

static void *s_dev(size_t bytes) {
    void *p = NULL;
    KERN_CUDA_FATAL(cudaMalloc(&p, bytes ? bytes : 16));
    KERN_CUDA_FATAL(cudaMemset(p, 0xff, bytes ? bytes : 16)); /* NaN in bf16 and fp32 */
    return p;
}

static void *s_up(const void *h, size_t bytes) {
    void *d = s_dev(bytes);
    KERN_CUDA_FATAL(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* x as bf16 (or IEEE binary16 when f16) on the device */
static uint16_t *s_up_16(const float *x, size_t n, bool f16) {
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = f16 ? com_half_from_f32(x[i]) : kern_bf16_from_f32(x[i]);
    uint16_t *d = s_up(h, n * sizeof *h);
    free(h);
    return d;
}

static uint16_t *s_up_bf(const float *x, size_t n) {
    return s_up_16(x, n, false);
}

static void s_poison(void *d, size_t bytes) {
    KERN_CUDA_FATAL(cudaMemset(d, 0xff, bytes));
}

/* bytes of device memory, as they are (after the stream's work) */
static void *s_down_raw(const void *d, size_t bytes) {
    void *h = malloc(bytes ? bytes : 1);
    KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
    KERN_CUDA_FATAL(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

static float *s_down_f32(const float *d, size_t n) {
    return s_down_raw(d, n * sizeof(float));
}

/* compute capability 9.0: where the sm_90a kernels (wgmma, TMA) run */
static bool s_sm90(void) {
    int dev = 0, major = 0, minor = 0;
    CHECK(cudaGetDevice(&dev) == cudaSuccess);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major == 9 && minor == 0;
}

/* n bf16 (or binary16 when f16) device values as fp32 */
static float *s_down_16(const uint16_t *d, size_t n, bool f16) {
    uint16_t *b = malloc((n ? n : 1) * sizeof *b);
    float *h = malloc((n ? n : 1) * sizeof *h);
    KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
    KERN_CUDA_FATAL(cudaMemcpy(b, d, n * sizeof *b, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        h[i] = f16 ? com_half_to_f32(b[i]) : kern_bf16_to_f32(b[i]);
    free(b);
    return h;
}

static float *s_down_bf(const uint16_t *d, size_t n) {
    return s_down_16(d, n, false);
}

static double s_rms(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return n ? sqrt(s / (double)n) : 0;
}

/* test_compare_f32 + a CHECK; atol scaled by the reference's rms when scale_atol. */
static void s_cmp(const char *what, const float *got, const float *ref, size_t n, double atol,
                  double rtol) {
    test_cmp_t c = test_compare_f32(what, got, ref, n, atol, rtol);
    CHECK_MSG(c.n_bad == 0, "%s: %zu bad of %zu, max |diff| %.3g, nmse %.3g", what, c.n_bad, n,
              c.max_abs, c.nmse);
}

static int32_t s_cu(const int32_t *lens, int32_t n, int32_t *cu) {
    cu[0] = 0;
    for (int32_t i = 0; i < n; i++)
        cu[i + 1] = cu[i] + lens[i];
    return cu[n];
}

static int32_t *s_tok_seq(const int32_t *cu, int32_t n_seqs, int32_t max_tokens) {
    int32_t *ts = malloc((size_t)max_tokens * sizeof *ts);
    for (int32_t t = 0; t < max_tokens; t++)
        ts[t] = -1; /* padding: never read */
    for (int32_t s = 0; s < n_seqs; s++)
        for (int32_t t = cu[s]; t < cu[s + 1]; t++)
            ts[t] = s;
    return ts;
}

static int32_t s_round64(int32_t n) {
    return (n + 63) / 64 * 64;
}

/* Our GEMM configurations seen per dtype and epilogue (test_linear: 0-2, test_linear_ln: 3,
 * test_linear_fold: 4-6), which of them fuse the LayerNorm (run only epilogue 3) and which fold
 * it (run only 4-6), for the coverage checks at the end of test_linear_ln and test_linear_fold
 * and for test_linear_pdl. */
enum { S_MAX_OWN = 64 };
static int g_own_seen[2][S_MAX_OWN][7];
static bool g_own_fuses[S_MAX_OWN], g_own_folds[S_MAX_OWN];

/* ---- the 16-bit type of the GEMM-side kernels (linear, bias_gelu, add_layernorm's x / b) ---- */
static const char *s_dtype_name(kern_dtype_t dt) {
    return dt == KERN_DTYPE_F16 ? "f16" : "bf16";
}

static uint16_t s_bits16(float v, kern_dtype_t dt) {
    return dt == KERN_DTYPE_F16 ? com_half_from_f32(v) : kern_bf16_from_f32(v);
}

static float s_from_bits16(uint16_t b, kern_dtype_t dt) {
    return dt == KERN_DTYPE_F16 ? com_half_to_f32(b) : kern_bf16_to_f32(b);
}

/* random fp32 values already representable in dt (bf16: s_rand_bf's draws) */
static float *s_rand_16(size_t n, float lo, float hi, kern_dtype_t dt) {
    if (dt == KERN_DTYPE_BF16)
        return s_rand_bf(n, lo, hi);
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = com_half_to_f32(com_half_from_f32(com_prng_uniform(&g_rng, lo, hi)));
    return p;
}

/* Relative tolerance of an output rounded to dt (once, or twice in a row): bf16's 1e-2, and 8x
 * tighter for binary16 (3 more significand bits). */
static double s_tol16(kern_dtype_t dt) {
    return dt == KERN_DTYPE_F16 ? 1.25e-3 : 1e-2;
}

/* test(bf16), then test(f16) on the same random draws; g_rng is left as the bf16 run leaves it,
 * so the later tests' inputs do not depend on the f16 runs. */
static void s_both_dtypes(void (*test)(kern_dtype_t)) {
    const com_prng_t start = g_rng;
    test(KERN_DTYPE_BF16);
    const com_prng_t after = g_rng;
    g_rng = start;
    test(KERN_DTYPE_F16);
    g_rng = after;
}

/* ---- embedding + LayerNorm (per dtype: tables rounded to it, the 16-bit output compared at
 * s_tol16, the fp32 one at 1e-4) ---- */
static void test_embed_dt(kern_dtype_t dtype) {
    static const int32_t cases[][7] = {{1, 1}, {4, 3, 1, 5, 3}, {5, 17, 1, 40, 2, 64}, {1, 200}};
    static const int32_t hiddens[] = {7, 33, 136, 384, 768, 1024};
    const int32_t V = 50, P = 256, TV = 2;
    const bool h16 = dtype == KERN_DTYPE_F16;
    const double tol = s_tol16(dtype);
    int n_cfg[3] = {0, 0, 0};
    for (size_t hc = 0; hc < sizeof hiddens / sizeof *hiddens; hc++) {
        const int32_t H = hiddens[hc];
        float *word = s_rand_16((size_t)V * H, -1, 1, dtype);
        float *pos = s_rand_16((size_t)P * H, -1, 1, dtype);
        float *type = s_rand_16((size_t)TV * H, -1, 1, dtype);
        float *g = s_rand_bf(H, 0.5f, 1.5f), *b = s_rand_bf(H, -0.5f, 0.5f);
        uint16_t *dw = s_up_16(word, (size_t)V * H, h16), *dp = s_up_16(pos, (size_t)P * H, h16);
        uint16_t *dt = s_up_16(type, (size_t)TV * H, h16);
        float *dg = s_up(g, H * sizeof *g), *db = s_up(b, H * sizeof *b);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            const int32_t ns = cases[c][0];
            int32_t cu[8];
            const int32_t n = s_cu(&cases[c][1], ns, cu), T = s_round64(n + 1);
            int32_t *ids = calloc((size_t)T, sizeof *ids), *types = calloc((size_t)T, sizeof *ids);
            for (int32_t t = 0; t < n; t++) {
                ids[t] = (int32_t)com_prng_below(&g_rng, V);
                types[t] = (int32_t)com_prng_below(&g_rng, TV);
            }
            int32_t *ts = s_tok_seq(cu, ns, T);
            float *ref = calloc((size_t)T * H, sizeof *ref); /* padding rows: zeros */
            kern_embed_layernorm_ref(ref, ids, types, cu, ns, 0, n, word, pos, type, g, b, H,
                                     1e-12f);
            int32_t *d_ids = s_up(ids, T * 4), *d_types = s_up(types, T * 4);
            int32_t *d_ts = s_up(ts, T * 4), *d_cu = s_up(cu, (ns + 1) * 4), *d_n = s_up(&n, 4);
            float *o32 = s_dev((size_t)T * H * 4);
            uint16_t *o16 = s_dev((size_t)T * H * 2);
            com_error_t err = {0};
            int rc = kern_embed_layernorm_cuda(dtype, o32, o16, d_ids, d_types, d_ts, d_cu, d_n, T,
                                               dw, dp, dt, dg, db, H, 1e-12f, g_st, &err);
            CHECK_MSG(rc == 0, "embed_layernorm_cuda %s: %s", s_dtype_name(dtype), err.msg);
            n_cfg[kern_embed_layernorm_cuda_config(H)]++;
            char what[96];
            float *got = s_down_f32(o32, (size_t)T * H);
            snprintf(what, sizeof what, "embed_ln %s tables, fp32 H=%d case %zu",
                     s_dtype_name(dtype), (int)H, c);
            s_cmp(what, got, ref, (size_t)T * H, 1e-4, 1e-4);
            free(got);
            got = s_down_16(o16, (size_t)T * H, h16);
            snprintf(what, sizeof what, "embed_ln %s H=%d case %zu", s_dtype_name(dtype), (int)H,
                     c);
            s_cmp(what, got, ref, (size_t)T * H, tol, tol);
            free(got);
            cudaFree(d_ids), cudaFree(d_types), cudaFree(d_ts), cudaFree(d_cu), cudaFree(d_n);
            cudaFree(o32), cudaFree(o16);
            free(ids), free(types), free(ts), free(ref);
        }
        cudaFree(dw), cudaFree(dp), cudaFree(dt), cudaFree(dg), cudaFree(db);
        free(word), free(pos), free(type), free(g), free(b);
    }
    CHECK(n_cfg[0] > 0 && n_cfg[1] > 0 && n_cfg[2] > 0);
    printf("embed_layernorm %s: scalar, vector and register-resident paths checked\n",
           s_dtype_name(dtype));
}

static void test_embed(void) {
    s_both_dtypes(test_embed_dt);
    /* an unknown dtype is refused, nothing enqueued */
    com_error_t err = {0};
    int32_t *dummy = s_dev(64);
    const float *df = (const float *)dummy;
    const uint16_t *dh = (const uint16_t *)dummy;
    CHECK(kern_embed_layernorm_cuda((kern_dtype_t)2, (float *)dummy, (uint16_t *)dummy, dummy, NULL,
                                    dummy, dummy, dummy, 1, dh, dh, dh, df, df, 8, 1e-12f, g_st,
                                    &err) == COM_EINVAL);
    cudaFree(dummy);
}

/* ---- linear (cuBLASLt ranks, our own GEMM configurations, tuned; every epilogue; per dtype:
 * inputs rounded to it, outputs compared at s_tol16) ---- */
static void test_linear_dt(kern_dtype_t dt) {
    /* n, in, out: 1 row; n not a multiple of any tile; in not a multiple of BK = 32 (40, 72,
     * 264); out not a multiple of a column tile (24, 40, 136); in or out not a multiple of 8
     * (cuBLASLt only); long K (the split-K configurations: K 1032 = 16 tiles of 64 + 8); several
     * tiles per CTA for the persistent configurations (4100 x 1152: ~300 tiles of 128 x 128;
     * 8200 x 1152 at K = 72: ~4.5 per CTA and a main loop of two K slices, so each group's
     * staging tile is rewritten while its last stores may still read it, again and again) */
    static const int32_t shapes[][3] = {
        {1, 8, 8},      {3, 40, 24},       {64, 384, 1152}, {129, 384, 1536}, {200, 1536, 384},
        {1, 768, 2304}, {7, 33, 17},       {37, 72, 40},    {300, 264, 136},  {1, 3072, 768},
        {65, 1032, 96}, {4100, 384, 1152}, {8200, 72, 1152}};
    static const char *epi_name[3] = {"none", "bias", "bias+gelu"};
    const int32_t n_own = kern_linear_own_count();
    CHECK(n_own > 0 && n_own <= S_MAX_OWN);
    cublasLtHandle_t lt = NULL;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    const size_t ws_bytes = (size_t)32 << 20;
    void *ws = s_dev(ws_bytes);
    int n_plans = 0;
    /* the configurations that fold the LayerNorm: they plan a folded epilogue at a shape of
     * whole 64-column blocks (and nothing else; test_linear_fold). K = 1536: 24 K tiles, enough
     * for every split (at K = 384 the 4-way split-K one was missed, and then counted as a
     * configuration that must run the plain epilogues) */
    for (int32_t c = 0; c < n_own; c++) {
        kern_linear_plan_t *q = NULL;
        g_own_folds[c] = kern_linear_plan_new(lt, 64, 1536, 384, KERN_LINEAR_BIAS_ADD_STATS,
                                              ws_bytes, KERN_LINEAR_OWN(c), dt, &q, NULL) == 0;
        kern_linear_plan_destroy(&q);
    }
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int32_t n = shapes[si][0], in = shapes[si][1], out = shapes[si][2];
        const bool h = dt == KERN_DTYPE_F16;
        float *x = s_rand_16((size_t)n * in, -1, 1, dt),
              *w = s_rand_16((size_t)out * in, -1, 1, dt);
        float *bias = s_rand_16(out, -1, 1, dt);
        uint16_t *dx = s_up_16(x, (size_t)n * in, h), *dw = s_up_16(w, (size_t)out * in, h);
        uint16_t *dbias = s_up_16(bias, out, h), *dy = s_dev((size_t)n * out * 2);
        for (int ep = KERN_LINEAR_NONE; ep <= KERN_LINEAR_BIAS_GELU; ep++) {
            const kern_linear_epilogue_t epi = (kern_linear_epilogue_t)ep;
            const bool hb = epi != KERN_LINEAR_NONE;
            float *ref = malloc((size_t)n * out * sizeof *ref);
            kern_linear_ref(ref, x, w, hb ? bias : NULL, n, in, out);
            if (epi == KERN_LINEAR_BIAS_GELU)
                kern_bias_gelu_ref(ref, NULL, n, out);
            const double tol = s_tol16(dt), atol = tol * s_rms(ref, (size_t)n * out);
            /* heuristic ranks 0-3, each of our configurations, then the plan that
             * kern_linear_plan_tune picks */
            for (int32_t i = 0; i < 4 + n_own + 1; i++) {
                const bool tuned = i == 4 + n_own, own = i >= 4 && !tuned;
                const int32_t rank = tuned ? 0 : own ? KERN_LINEAR_OWN(i - 4) : i;
                kern_linear_plan_t *p = NULL;
                com_error_t err = {0};
                int rc = kern_linear_plan_new(lt, n, in, out, epi, ws_bytes, rank, dt, &p, &err);
                if (rc == COM_EUNSUPPORTED && i > 0 && !tuned)
                    continue; /* fewer algorithms offered, or not a shape ours can run */
                CHECK_MSG(rc == 0, "linear plan %dx%dx%d rank %d: %s", (int)n, (int)in, (int)out,
                          (int)rank, err.msg);
                if (rc != 0)
                    break;
                if (own)
                    g_own_seen[dt][i - 4][ep]++;
                if (tuned) {
                    int32_t chosen = -1000;
                    rc = kern_linear_plan_tune(lt, p, dy, dx, dw, hb ? dbias : NULL, NULL, ws,
                                               ws_bytes, g_st, &chosen, &err);
                    CHECK_MSG(rc == 0 && chosen > -1000 && chosen < 8, "linear tune %dx%dx%d: %s",
                              (int)n, (int)in, (int)out, err.msg);
                    if (n >= 64)
                        printf("linear %dx%dx%d %s tuned: %s\n", (int)n, (int)in, (int)out,
                               epi_name[ep], kern_linear_plan_describe(p));
                }
                char what[128];
                snprintf(what, sizeof what, "linear %dx%dx%d %s %s %d (%s)", (int)n, (int)in,
                         (int)out, epi_name[ep], tuned ? "tuned" : "rank", (int)rank,
                         kern_linear_plan_describe(p));
                s_poison(dy, (size_t)n * out * 2);
                rc = kern_linear_cuda(lt, p, dy, dx, dw, hb ? dbias : NULL, NULL, ws, ws_bytes,
                                      g_st, &err);
                CHECK_MSG(rc == 0, "linear_cuda %s: %s", what, err.msg);
                float *got = s_down_16(dy, (size_t)n * out, h);
                s_cmp(what, got, ref, (size_t)n * out, atol, tol);
                /* deterministic: a second run gives the same bits */
                s_poison(dy, (size_t)n * out * 2);
                rc = kern_linear_cuda(lt, p, dy, dx, dw, hb ? dbias : NULL, NULL, ws, ws_bytes,
                                      g_st, &err);
                CHECK_MSG(rc == 0, "linear_cuda %s: %s", what, err.msg);
                float *again = s_down_16(dy, (size_t)n * out, h);
                CHECK_MSG(memcmp(got, again, (size_t)n * out * sizeof *got) == 0,
                          "%s: second run differs", what);
                free(got), free(again);
                kern_linear_plan_destroy(&p);
                CHECK(p == NULL);
                n_plans++;
            }
            free(ref);
        }
        cudaFree(dx), cudaFree(dw), cudaFree(dbias), cudaFree(dy);
        free(x), free(w), free(bias);
    }
    printf("linear %s: %d (shape, epilogue, heuristic rank / own configuration / tuned) plans "
           "checked, %d own configurations\n",
           s_dtype_name(dt), n_plans, (int)n_own);
    cudaFree(ws);
    cublasLtDestroy(lt);
}

static void test_linear(void) {
    s_both_dtypes(test_linear_dt);
}

/* ---- linear + bias + residual + LayerNorm (epilogue 3, KERN_LINEAR_BIAS_ADD_LN) ---- */
/* Elements [from, to) of got: each equal to keep[i] (bit for bit), or NaN (still poisoned) when
 * keep is NULL. Returns how many are not. */
static size_t s_untouched(const float *got, const float *keep, size_t from, size_t to) {
    size_t bad = 0;
    for (size_t i = from; i < to; i++)
        bad += keep ? memcmp(&got[i], &keep[i], sizeof *got) != 0 : !isnan(got[i]);
    return bad;
}

/* Every candidate of an epilogue-3 plan (cuBLASLt ranks 0-7 as offered: GEMM + LayerNorm
 * kernel; each of our configurations valid for it, unfused or fused; the tuned choice) in the
 * three residual types: fp32 (out_f32 == residual, in place), bf16 (y == residual_bf16, in place;
 * out_f32 separate or NULL) and f16 (out_f16 == residual_f16, in place; y and out_f32 separate),
 * with n_rows NULL and *n_rows < n (the rows past it keep the residual / stay poisoned). Reference:
 * kern_add_layernorm_ref over kern_linear_ref (fp32 on the bf16 inputs). W is scaled by 1/sqrt(in)
 * so that x W^T is O(0.3) beside a residual in [-2, 2]: rounding the GEMM's output to bf16 before
 * the add (the unfused way) then moves a LayerNorm output by at most ~0.005, half the 1e-2
 * tolerance, while a lost bias (up to 0.5 / std 1.2) or a wrong mean or variance moves it by far
 * more. Then the argument checks. Per dtype dt (x, w, bias, y, scratch; s_tol16 for y and the
 * fp32 copy, whose error is the 16-bit rounding of the GEMM's output, 8x smaller in f16): in an
 * f16 plan y is binary16, so with the f16 residual y is that residual (in place) and out_f16 y or
 * NULL, and with the bf16 residual y is a buffer of its own (the bf16 stream is only read). */
static void test_linear_ln_dt(kern_dtype_t dt) {
    static const int32_t shapes[][3] = {{1, 384, 384},    {37, 384, 384},   {128, 1536, 384},
                                        {300, 768, 768},  {128, 3072, 768}, {1000, 384, 384},
                                        {4100, 1536, 384}};
    static const char *mode_name[3] = {"fp32 residual", "bf16 residual", "f16 residual"};
    const float eps = 1e-12f;
    const int32_t n_own = kern_linear_own_count();
    CHECK(n_own > 0 && n_own <= S_MAX_OWN);
    bool fuses_known[S_MAX_OWN] = {false};
    struct cudaDeviceProp prop;
    KERN_CUDA_FATAL(cudaGetDeviceProperties(&prop, 0));
    cublasLtHandle_t lt = NULL;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    const size_t ws_bytes = (size_t)32 << 20;
    void *ws = s_dev(ws_bytes);
    int n_cand = 0, n_runs = 0, n_fused = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int32_t n = shapes[si][0], in = shapes[si][1], out = shapes[si][2];
        const size_t no = (size_t)n * out;
        const float ws_scale = 1.0f / sqrtf((float)in);
        const bool h = dt == KERN_DTYPE_F16;
        const double tol = s_tol16(dt);
        float *x = s_rand_16((size_t)n * in, -1, 1, dt);
        float *w = s_rand_16((size_t)out * in, -ws_scale, ws_scale, dt);
        float *bias = s_rand_16(out, -0.5f, 0.5f, dt), *res = s_rand_bf(no, -2, 2);
        float *g = s_rand_bf(out, 0.5f, 1.5f), *be = s_rand_bf(out, -0.5f, 0.5f);
        float *ref = malloc(no * sizeof *ref);
        kern_linear_ref(ref, x, w, bias, n, in, out);
        kern_add_layernorm_ref(ref, ref, NULL, res, g, be, n, out, eps);
        uint16_t *dx = s_up_16(x, (size_t)n * in, h), *dw = s_up_16(w, (size_t)out * in, h);
        uint16_t *dbias = s_up_16(bias, out, h), *dres16 = s_up_bf(res, no);
        uint16_t *dy = s_dev(no * 2), *dscratch = s_dev(no * 2);
        float *dres32 = s_up(res, no * 4), *do32 = s_dev(no * 4);
        float *dg = s_up(g, out * 4), *dbe = s_up(be, out * 4);
        int32_t *dn = s_dev(4);
        uint16_t *res16 = malloc(no * sizeof *res16); /* the bf16 residual, to restore it */
        KERN_CUDA_FATAL(cudaMemcpy(res16, dres16, no * 2, cudaMemcpyDeviceToHost));
        /* the f16 residual, and its values as the rows past *n_rows must keep them */
        uint16_t *resh16 = malloc(no * sizeof *resh16), *dresh = s_dev(no * 2);
        float *resh = malloc(no * sizeof *resh);
        com_half_from_f32_n(res, resh16, no);
        com_half_to_f32_n(resh16, resh, no);
        /* heuristic ranks 0-7, each of our configurations, then the tuned plan */
        for (int32_t i = 0; i < 8 + n_own + 1; i++) {
            const bool tuned = i == 8 + n_own, own = i >= 8 && !tuned;
            const int32_t c = i - 8, rank = tuned ? 0 : own ? KERN_LINEAR_OWN(c) : i;
            kern_linear_plan_t *p = NULL;
            com_error_t err = {0};
            int rc = kern_linear_plan_new(lt, n, in, out, KERN_LINEAR_BIAS_ADD_LN, ws_bytes, rank,
                                          dt, &p, &err);
            if (rc == COM_EUNSUPPORTED && i > 0 && !tuned)
                continue; /* fewer algorithms offered, or not a shape ours can run */
            CHECK_MSG(rc == 0, "linear+ln plan %dx%dx%d rank %d: %s", (int)n, (int)in, (int)out,
                      (int)rank, err.msg);
            if (rc != 0)
                continue;
            if (own) {
                g_own_seen[dt][c][3]++;
                if (!fuses_known[c]) { /* valid for epilogue 3 here, but not for the bias alone */
                    kern_linear_plan_t *q = NULL;
                    const int rq = kern_linear_plan_new(lt, n, in, out, KERN_LINEAR_BIAS, ws_bytes,
                                                        rank, dt, &q, NULL);
                    CHECK(rq == 0 || rq == COM_EUNSUPPORTED);
                    g_own_fuses[c] = rq == COM_EUNSUPPORTED, fuses_known[c] = true;
                    kern_linear_plan_destroy(&q);
                }
                n_fused += g_own_fuses[c];
            }
            if (tuned) { /* in one residual type per shape, alternately: fp32, or the plan's */
                const bool r16 = si % 2;
                const kern_linear_ln_t tl = {.residual = r16 ? NULL : dres32,
                                             .residual_bf16 = r16 && !h ? dres16 : NULL,
                                             .residual_f16 = r16 && h ? dresh : NULL,
                                             .gamma = dg,
                                             .beta = dbe,
                                             .eps = eps,
                                             .out_f32 = r16 ? NULL : dres32,
                                             .n_rows = NULL,
                                             .scratch = dscratch};
                int32_t chosen = -1000;
                rc = kern_linear_plan_tune(lt, p, r16 ? (h ? dresh : dres16) : dy, dx, dw, dbias,
                                           &tl, ws, ws_bytes, g_st, &chosen, &err);
                CHECK_MSG(rc == 0 && chosen > -1000 && chosen < 8, "linear+ln tune %dx%dx%d: %s",
                          (int)n, (int)in, (int)out, err.msg);
                if (n >= 128)
                    printf("linear %dx%dx%d bias+residual+LN (%s) tuned: %s\n", (int)n, (int)in,
                           (int)out, mode_name[r16 ? 1 + h : 0], kern_linear_plan_describe(p));
            }
            n_cand++;
            for (int mode = 0; mode < 3; mode++)
                for (int part = 0; part < 2; part++) {
                    const bool r16 = mode == 1, rh = mode == 2;
                    const int32_t rows = part && n > 1 ? 2 * n / 3 : n;
                    const size_t nr = (size_t)rows * out;
                    /* fresh residual, poisoned outputs and scratch */
                    KERN_CUDA_FATAL(cudaMemcpy(dres32, res, no * 4, cudaMemcpyHostToDevice));
                    KERN_CUDA_FATAL(cudaMemcpy(dres16, res16, no * 2, cudaMemcpyHostToDevice));
                    KERN_CUDA_FATAL(cudaMemcpy(dresh, resh16, no * 2, cudaMemcpyHostToDevice));
                    KERN_CUDA_FATAL(cudaMemcpy(dn, &rows, 4, cudaMemcpyHostToDevice));
                    s_poison(dy, no * 2), s_poison(do32, no * 4), s_poison(dscratch, no * 2);
                    float *o32 = mode == 0 ? dres32 : part ? NULL : do32;
                    /* y in place on the residual of the plan's type (bf16: f16 out_f16 of its own;
                     * f16: out_f16 y itself or NULL), else a buffer of its own */
                    uint16_t *y = r16 && !h ? dres16 : rh && h ? dresh : dy;
                    const kern_linear_ln_t ln = {.residual = mode == 0 ? dres32 : NULL,
                                                 .residual_bf16 = r16 ? dres16 : NULL,
                                                 .residual_f16 = rh ? dresh : NULL,
                                                 .gamma = dg,
                                                 .beta = dbe,
                                                 .eps = eps,
                                                 .out_f32 = o32,
                                                 .out_f16 = rh && !(h && part) ? dresh : NULL,
                                                 .n_rows = part ? dn : NULL,
                                                 .scratch = dscratch};
                    char what[160];
                    snprintf(what, sizeof what, "linear+ln %dx%dx%d %s rows %d %s %d (%s)", (int)n,
                             (int)in, (int)out, mode_name[mode], (int)rows,
                             tuned ? "tuned" : "rank", (int)rank, kern_linear_plan_describe(p));
                    rc = kern_linear_cuda(lt, p, y, dx, dw, dbias, &ln, ws, ws_bytes, g_st, &err);
                    CHECK_MSG(rc == 0, "linear_cuda %s: %s", what, err.msg);
                    if (rc != 0)
                        continue;
                    float *got = s_down_16(y, no, h);
                    s_cmp(what, got, ref, nr, tol, tol);
                    /* rows past *n_rows: the in-place residual kept, else still poisoned */
                    const size_t bad = s_untouched(got,
                                                   y == dres16  ? res
                                                   : y == dresh ? resh
                                                                : NULL,
                                                   nr, no);
                    CHECK_MSG(bad == 0, "%s: %zu elements past row %d written (y)", what, bad,
                              (int)rows);
                    free(got);
                    if (o32) { /* fp32 copy: as close (the unfused sum was rounded to dt) */
                        got = s_down_f32(o32, no);
                        char what32[176];
                        snprintf(what32, sizeof what32, "%s fp32 out", what);
                        s_cmp(what32, got, ref, nr, tol, tol);
                        const size_t bad32 = s_untouched(got, mode == 0 ? res : NULL, nr, no);
                        CHECK_MSG(bad32 == 0, "%s: %zu elements past row %d written (out_f32)",
                                  what, bad32, (int)rows);
                        free(got);
                    }
                    if (rh && y != dresh) { /* the f16 stream, in place: the rows past *n_rows
                                             * keep it (checked above when it is y) */
                        got = s_down_16(dresh, no, true);
                        char whath[176];
                        snprintf(whath, sizeof whath, "%s f16 out", what);
                        s_cmp(whath, got, ref, nr, 1e-2, 1e-2);
                        const size_t badh = s_untouched(got, resh, nr, no);
                        CHECK_MSG(badh == 0, "%s: %zu elements past row %d changed (out_f16)", what,
                                  badh, (int)rows);
                        free(got);
                    }
                    n_runs++;
                }
            kern_linear_plan_destroy(&p);
        }
        /* argument checks, on a plan of cuBLASLt's first choice */
        if (si == 0) {
            kern_linear_plan_t *p = NULL, *pb = NULL;
            com_error_t err = {0};
            CHECK(kern_linear_plan_new(lt, n, in, out, KERN_LINEAR_BIAS_ADD_LN, ws_bytes, 0, dt, &p,
                                       &err) == 0);
            CHECK(kern_linear_plan_new(lt, n, in, out, KERN_LINEAR_BIAS, ws_bytes, 0, dt, &pb,
                                       &err) == 0);
            kern_linear_plan_t *pz = (kern_linear_plan_t *)1; /* an unknown dtype: refused */
            CHECK(kern_linear_plan_new(lt, n, in, out, KERN_LINEAR_BIAS, ws_bytes, 0,
                                       (kern_dtype_t)7, &pz, &err) == COM_EINVAL &&
                  pz == NULL);
            const kern_linear_ln_t good = {.residual = dres32,
                                           .gamma = dg,
                                           .beta = dbe,
                                           .eps = eps,
                                           .out_f32 = dres32,
                                           .scratch = dscratch};
            kern_linear_ln_t both = good, neither = good, no_scratch = good, alias = good,
                             alias_h = good;
            both.residual_f16 = dresh;
            neither.residual = NULL;
            no_scratch.scratch = NULL;
            alias.scratch = dy;
            alias_h.out_f16 = dscratch;
            const kern_linear_ln_t *bad[] = {NULL, &both, &neither, &no_scratch, &alias, &alias_h};
            for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
                CHECK_MSG(kern_linear_cuda(lt, p, dy, dx, dw, dbias, bad[k], ws, ws_bytes, g_st,
                                           &err) == COM_EINVAL,
                          "linear_cuda accepted bad ln %zu", k);
                CHECK_MSG(kern_linear_plan_tune(lt, p, dy, dx, dw, dbias, bad[k], ws, ws_bytes,
                                                g_st, NULL, &err) == COM_EINVAL,
                          "linear tune accepted bad ln %zu", k);
            }
            if (h) { /* an f16 plan's y is the binary16 output: out_f16 must be y or NULL */
                kern_linear_ln_t other_h = good;
                other_h.out_f16 = dresh;
                CHECK(kern_linear_cuda(lt, p, dy, dx, dw, dbias, &other_h, ws, ws_bytes, g_st,
                                       &err) == COM_EINVAL);
                CHECK(kern_linear_plan_tune(lt, p, dy, dx, dw, dbias, &other_h, ws, ws_bytes, g_st,
                                            NULL, &err) == COM_EINVAL);
            }
            /* other epilogues ignore ln, whatever it holds */
            CHECK(kern_linear_cuda(lt, pb, dy, dx, dw, dbias, &both, ws, ws_bytes, g_st, &err) ==
                  0);
            KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
            kern_linear_plan_destroy(&p);
            kern_linear_plan_destroy(&pb);
        }
        free(x), free(w), free(bias), free(res), free(g), free(be), free(ref), free(res16);
        free(resh16), free(resh), cudaFree(dresh);
        cudaFree(dx), cudaFree(dw), cudaFree(dbias), cudaFree(dres16), cudaFree(dy);
        cudaFree(dscratch), cudaFree(dres32), cudaFree(do32), cudaFree(dg), cudaFree(dbe);
        cudaFree(dn);
    }
    /* on Hopper the fused configurations must have run (gemm_wgmma is sm_90a only) */
    if (prop.major == 9 && prop.minor == 0)
        CHECK_MSG(n_fused > 0, "linear+ln: no configuration fusing the LayerNorm ran");
    /* every configuration of ours ran: the others at every epilogue 0-2 (test_linear) and the
     * unfused epilogue 3, those fusing the LayerNorm at epilogue 3 alone */
    static const char *epi_name[4] = {"none", "bias", "bias+gelu", "bias+residual+LN"};
    for (int32_t c = 0; c < n_own; c++)
        for (int ep = 0; ep < 4; ep++) {
            const bool want = g_own_fuses[c] ? ep == 3 : !g_own_folds[c];
            const int min = ep == 3 ? 2 : 3;
            CHECK_MSG(want ? g_own_seen[dt][c][ep] >= min : g_own_seen[dt][c][ep] == 0,
                      "linear %s: own configuration %d (%s the LayerNorm), epilogue %s: %d shapes",
                      s_dtype_name(dt), (int)c, g_own_fuses[c] ? "fusing" : "not fusing",
                      epi_name[ep], g_own_seen[dt][c][ep]);
        }
    printf("linear + LayerNorm %s: %d candidates x shapes (%d of them fused) x 6 modes (fp32 / "
           "bf16 / f16 residual x all / partial rows) = %d runs checked\n",
           s_dtype_name(dt), n_cand, n_fused, n_runs);
    cudaFree(ws);
    cublasLtDestroy(lt);
}

static void test_linear_ln(void) {
    s_both_dtypes(test_linear_ln_dt);
}

/* ---- the folded LayerNorm's epilogues (4-6; kernels/row_stats.h) ---- */
/* Every configuration that folds (and the tuned plan) against references that take the other
 * route, normalising first: BIAS_ADD_STATS y = x W^T + b + residual, the residual plain (16-bit)
 * or a folded stream normalised by kern_row_stats_normalize_ref, its statistics against
 * kern_row_stats_ref of the fp32 reference; LN_BIAS(_GELU) y = LN0(x) W^T + b (then GELU),
 * LN0 = kern_row_stats_normalize_ref with gamma 1, beta 0, while the kernel computes
 * rstd (x W^T - mean c) + b. Rows have offsets of up to 1.5 beside a spread of 2, so the mean
 * matters. With n_rows < n the rows past it keep their (poisoned) statistics. Tolerances: y as the
 * other GEMM tests (s_tol16 of the rms); the statistics come from the fp32 sums before rounding,
 * which differ from the reference's by the accumulation order, so 1e-3 relative (of a 64-value
 * block's sum and squared deviations) is loose for fp32 and tight for any real error. */
static void test_linear_fold_dt(kern_dtype_t dt) {
    static const int32_t shapes[][3] = {{1, 384, 384},    {37, 384, 1152},  {128, 768, 768},
                                        {128, 3072, 768}, {200, 1536, 384}, {300, 384, 1536},
                                        {1000, 384, 384}, {2100, 768, 2304}};
    static const char *epi_name[7] = {
        "", "", "", "", "bias+residual+stats", "ln+bias", "ln+bias+gelu"};
    const float eps = 1e-12f;
    const bool h = dt == KERN_DTYPE_F16;
    const double tol = s_tol16(dt);
    const int32_t n_own = kern_linear_own_count();
    cublasLtHandle_t lt = NULL;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    const size_t ws_bytes = (size_t)32 << 20;
    void *ws = s_dev(ws_bytes);
    int n_runs = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int32_t n = shapes[si][0], in = shapes[si][1], out = shapes[si][2];
        const size_t nx = (size_t)n * in, no = (size_t)n * out;
        const int32_t nb_out = out / KERN_STATS_COLS; /* statistics: [rows][blocks][2] floats */
        const size_t np_in = (size_t)n * (in / KERN_STATS_COLS) * 2,
                     np_out = (size_t)n * nb_out * 2;
        /* x with a per-row offset (a folded stream), W scaled so that x W^T is O(1) */
        float *x = s_rand_16(nx, -2, 2, dt), *off = s_rand_bf((size_t)n, -1.5f, 1.5f);
        for (size_t i = 0; i < nx; i++)
            x[i] = h ? com_half_to_f32(com_half_from_f32(x[i] + off[i / in]))
                     : kern_bf16_to_f32(kern_bf16_from_f32(x[i] + off[i / in]));
        const float wsc = 1.0f / sqrtf((float)in);
        float *w = s_rand_16((size_t)out * in, -wsc, wsc, dt), *bias = s_rand_16(out, -1, 1, dt);
        float *res = s_rand_16(no, -2, 2, dt), *g = s_rand_bf(out, 0.5f, 1.5f);
        float *be = s_rand_bf(out, -0.5f, 0.5f), *ones = malloc((size_t)in * sizeof *ones);
        float *zeros = calloc((size_t)in, sizeof *zeros), *c = malloc((size_t)out * sizeof *c);
        for (int32_t k = 0; k < in; k++)
            ones[k] = 1.0f;
        for (int32_t j = 0; j < out; j++) {
            double sum = 0;
            for (int32_t k = 0; k < in; k++)
                sum += w[(size_t)j * in + k];
            c[j] = (float)sum;
        }
        float *in_part = malloc(np_in * sizeof *in_part);
        float *res_part = malloc(np_out * sizeof *res_part);
        kern_row_stats_ref(in_part, x, n, in);
        kern_row_stats_ref(res_part, res, n, out);
        /* references: [0] epilogue 4 plain residual, [1] 4 folded residual, [2] 5, [3] 6 */
        float *ref[4], *ref_part[2], *t = malloc(no * sizeof *t), *xn = malloc(no * sizeof *xn);
        kern_linear_ref(t, x, w, bias, n, in, out);
        kern_row_stats_normalize_ref(xn, res, res_part, g, be, n, out, eps);
        for (int k = 0; k < 2; k++) {
            ref[k] = malloc(no * sizeof *ref[k]);
            for (size_t i = 0; i < no; i++)
                ref[k][i] = t[i] + (k ? xn[i] : res[i]);
            ref_part[k] = malloc(np_out * sizeof *ref_part[k]);
            kern_row_stats_ref(ref_part[k], ref[k], n, out);
        }
        float *xin = malloc(nx * sizeof *xin);
        kern_row_stats_normalize_ref(xin, x, in_part, ones, zeros, n, in, eps);
        ref[2] = malloc(no * sizeof *ref[2]);
        kern_linear_ref(ref[2], xin, w, bias, n, in, out);
        ref[3] = malloc(no * sizeof *ref[3]);
        memcpy(ref[3], ref[2], no * sizeof *ref[3]);
        kern_bias_gelu_ref(ref[3], NULL, n, out);
        uint16_t *dx = s_up_16(x, nx, h), *dw = s_up_16(w, (size_t)out * in, h);
        uint16_t *dbias = s_up_16(bias, out, h), *dres = s_up_16(res, no, h), *dy = s_dev(no * 2);
        float *dg = s_up(g, (size_t)out * 4), *dbe = s_up(be, (size_t)out * 4);
        float *dc = s_up(c, (size_t)out * 4), *din_part = s_up(in_part, np_in * 4);
        float *dres_part = s_up(res_part, np_out * 4), *dout_part = s_dev(np_out * 4);
        int32_t *dn = s_dev(4);
        for (int epi = KERN_LINEAR_BIAS_ADD_STATS; epi <= KERN_LINEAR_LN_BIAS_GELU; epi++)
            for (int32_t i = 0; i <= n_own; i++) { /* each of ours, then the tuned plan */
                const bool tuned = i == n_own;
                if (!tuned && !g_own_folds[i])
                    continue;
                kern_linear_plan_t *p = NULL;
                com_error_t err = {0};
                int rc = kern_linear_plan_new(lt, n, in, out, (kern_linear_epilogue_t)epi, ws_bytes,
                                              tuned ? 0 : KERN_LINEAR_OWN(i), dt, &p, &err);
                if (rc == COM_EUNSUPPORTED && !tuned)
                    continue; /* not a shape this one runs */
                CHECK_MSG(rc == 0, "fold plan %dx%dx%d epi %d rank %d: %s", (int)n, (int)in,
                          (int)out, epi, tuned ? 0 : (int)KERN_LINEAR_OWN(i), err.msg);
                if (rc != 0)
                    continue;
                if (!tuned)
                    g_own_seen[dt][i][epi]++;
                for (int mode = 0; mode < (epi == KERN_LINEAR_BIAS_ADD_STATS ? 2 : 1); mode++) {
                    const int32_t rows = (si + (size_t)mode) % 2 && n > 1 ? 2 * n / 3 : n;
                    KERN_CUDA_FATAL(cudaMemcpy(dn, &rows, 4, cudaMemcpyHostToDevice));
                    const bool folded_res = mode == 1;
                    const kern_linear_ln_t ln = {
                        .residual_bf16 = epi == 4 && !folded_res && !h ? dres : NULL,
                        .residual_f16 = epi == 4 && !folded_res && h ? dres : NULL,
                        .gamma = folded_res ? dg : NULL,
                        .beta = folded_res ? dbe : NULL,
                        .eps = eps,
                        .n_rows = rows < n ? dn : NULL,
                        .residual_x = folded_res ? dres : NULL,
                        .residual_stats = folded_res ? dres_part : NULL,
                        .out_stats = epi == 4 ? dout_part : NULL,
                        .in_stats = epi >= 5 ? din_part : NULL,
                        .c = epi >= 5 ? dc : NULL};
                    if (tuned && mode == 0) {
                        int32_t chosen = 0;
                        rc = kern_linear_plan_tune(lt, p, dy, dx, dw, dbias, &ln, ws, ws_bytes,
                                                   g_st, &chosen, &err);
                        CHECK_MSG(rc == 0 && chosen < 0, "fold tune %dx%dx%d epi %d: %s (%d)",
                                  (int)n, (int)in, (int)out, epi, err.msg, (int)chosen);
                    }
                    char what[192];
                    snprintf(what, sizeof what, "linear %dx%dx%d %s%s rows %d %s (%s)", (int)n,
                             (int)in, (int)out, epi_name[epi],
                             epi == 4 ? (folded_res ? " folded residual" : " plain residual") : "",
                             (int)rows, tuned ? "tuned" : "own", kern_linear_plan_describe(p));
                    s_poison(dy, no * 2), s_poison(dout_part, np_out * 4);
                    rc = kern_linear_cuda(lt, p, dy, dx, dw, dbias, &ln, ws, ws_bytes, g_st, &err);
                    CHECK_MSG(rc == 0, "%s: %s", what, err.msg);
                    if (rc != 0)
                        continue;
                    const float *r = ref[epi == 4 ? mode : epi - 3];
                    const size_t nr = (size_t)rows * out;
                    float *got = s_down_16(dy, no, h);
                    s_cmp(what, got, r, nr, tol * s_rms(r, nr), tol);
                    free(got);
                    if (epi == 4) {
                        float *gp = s_down_f32(dout_part, np_out);
                        const float *rp = ref_part[mode];
                        size_t bad = 0;
                        for (size_t k = 0; k < (size_t)rows * nb_out * 2; k++) {
                            const double scale = k % 2 ? 64.0 * 4.0 : 8.0 * 2.0;
                            bad += !(fabs((double)gp[k] - rp[k]) <= 1e-3 * (fabs(rp[k]) + scale));
                        }
                        /* rows past *n_rows: their statistics untouched (still NaN) */
                        for (size_t k = (size_t)rows * nb_out * 2; k < np_out; k++)
                            bad += !isnan(gp[k]);
                        CHECK_MSG(bad == 0, "%s: %zu statistics wrong", what, bad);
                        free(gp);
                    }
                    /* deterministic: a second run gives the same bits */
                    float *a = s_down_16(dy, no, h);
                    rc = kern_linear_cuda(lt, p, dy, dx, dw, dbias, &ln, ws, ws_bytes, g_st, &err);
                    float *b2 = s_down_16(dy, no, h);
                    CHECK_MSG(rc == 0 && memcmp(a, b2, nr * sizeof *a) == 0,
                              "%s: second run differs", what);
                    free(a), free(b2);
                    n_runs++;
                }
                if (epi == 4 && si == 0 && !tuned) { /* what the epilogue must not take */
                    const kern_linear_ln_t alias = {.eps = eps,
                                                    .residual_x = dy,
                                                    .residual_stats = dres_part,
                                                    .gamma = dg,
                                                    .beta = dbe,
                                                    .out_stats = dout_part};
                    CHECK(kern_linear_cuda(lt, p, dy, dx, dw, dbias, &alias, ws, ws_bytes, g_st,
                                           &err) == COM_EINVAL);
                    const kern_linear_ln_t none = {.eps = eps, .out_stats = dout_part};
                    CHECK(kern_linear_cuda(lt, p, dy, dx, dw, dbias, &none, ws, ws_bytes, g_st,
                                           &err) == COM_EINVAL);
                    /* statistics are read as float2: 4-byte-aligned ones are refused */
                    const kern_linear_ln_t odd = {.eps = eps,
                                                  .residual_x = dres,
                                                  .residual_stats = dres_part + 1,
                                                  .gamma = dg,
                                                  .beta = dbe,
                                                  .out_stats = dout_part};
                    CHECK(kern_linear_cuda(lt, p, dy, dx, dw, dbias, &odd, ws, ws_bytes, g_st,
                                           &err) == COM_EINVAL);
                }
                if (epi == 5 && si == 0 && !tuned) {
                    const kern_linear_ln_t odd = {.eps = eps, .in_stats = din_part + 1, .c = dc};
                    CHECK(kern_linear_cuda(lt, p, dy, dx, dw, dbias, &odd, ws, ws_bytes, g_st,
                                           &err) == COM_EINVAL);
                }
                kern_linear_plan_destroy(&p);
            }
        KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
        for (int k = 0; k < 4; k++)
            free(ref[k]);
        free(ref_part[0]), free(ref_part[1]);
        free(x), free(off), free(w), free(bias), free(res), free(g), free(be), free(ones);
        free(zeros), free(c), free(in_part), free(res_part), free(t), free(xn), free(xin);
        cudaFree(dx), cudaFree(dw), cudaFree(dbias), cudaFree(dres), cudaFree(dy), cudaFree(dg);
        cudaFree(dbe), cudaFree(dc), cudaFree(din_part), cudaFree(dres_part), cudaFree(dout_part);
        cudaFree(dn);
    }
    /* every folding configuration ran each folded epilogue at two shapes or more; on Hopper
     * there are some */
    struct cudaDeviceProp prop;
    KERN_CUDA_FATAL(cudaGetDeviceProperties(&prop, 0));
    int n_fold = 0;
    for (int32_t c = 0; c < n_own; c++) {
        n_fold += g_own_folds[c];
        for (int epi = 4; epi <= 6 && g_own_folds[c]; epi++)
            CHECK_MSG(g_own_seen[dt][c][epi] >= 2,
                      "linear %s: folding configuration %d, epilogue "
                      "%d: %d shapes",
                      s_dtype_name(dt), (int)c, epi, g_own_seen[dt][c][epi]);
    }
    if (prop.major == 9 && prop.minor == 0)
        CHECK_MSG(n_fold > 0, "linear fold: no configuration folds the LayerNorm on sm_90");
    printf("linear %s folded LayerNorm: %d runs, %d folding configurations\n", s_dtype_name(dt),
           n_runs, n_fold);
    cudaFree(ws);
    cublasLtDestroy(lt);
}

static void test_linear_fold(void) {
    s_both_dtypes(test_linear_fold_dt);
}

/* ---- a GEMM right behind the kernel that writes its input (PDL ordering) ---- */
/* x [T, 1024] is written by kern_attention_cuda (one sequence of T = 1024 tokens, 16 heads x 64,
 * not causal) and read at once by the GEMM on the same stream, with no synchronisation between:
 * each of our configurations (KERN_LINEAR_OWN plans: kern_linear_cuda -> kern_gemm_mma_cuda, a
 * direct launch; not those fusing the LayerNorm, which run only epilogue 3 and need out to be a
 * multiple of their tile width) and cuBLASLt's first choice, every epilogue 0-2. Why a bug would
 * show: our kernels trigger their dependents right after their own pdl_wait, so the GEMM grid is
 * launched as soon as every attention CTA has started, and its CTAs run beside them (16 x 16 = 256
 * attention CTAs, about 2 per SM on an H200, leave registers and shared memory free). Each
 * attention CTA walks all 16 key blocks before it writes its 64 rows, microseconds after the GEMM's
 * CTAs have started; x is poisoned (NaN) before every run. A GEMM that copied an x tile before its
 * pdl_wait would thus read NaN and y would hold NaN, which s_cmp counts as bad; reading w and b
 * early (uploaded by cudaMemcpy before) is allowed. The reference is kern_linear_ref over x as the
 * device holds it (downloaded; the producer is deterministic, checked every run). Per dtype dt:
 * the attention and the GEMM both in it. */
static void test_linear_pdl_dt(kern_dtype_t dt) {
    const int32_t T = 1024, nh = 16, hd = 64, in = nh * hd, out = 136;
    static const char *epi_name[3] = {"none", "bias", "bias+gelu"};
    kern_pdl_set(true);
    const kern_attention_params_t ap = {nh, nh, hd, 1.0f / sqrtf((float)hd), false};
    const int32_t cu[2] = {0, T};
    int32_t *ts = calloc((size_t)T, sizeof *ts); /* every token in sequence 0 */
    const bool h = dt == KERN_DTYPE_F16;
    float *qkv = s_rand_16((size_t)T * 3 * in, -2, 2, dt);
    uint16_t *dqkv = s_up_16(qkv, (size_t)T * 3 * in, h), *dx = s_dev((size_t)T * in * 2);
    int32_t *dts = s_up(ts, (size_t)T * 4), *dcu = s_up(cu, sizeof cu), *dn = s_up(&T, 4);
    float *w = s_rand_16((size_t)out * in, -1, 1, dt), *bias = s_rand_16(out, -1, 1, dt);
    uint16_t *dw = s_up_16(w, (size_t)out * in, h), *dbias = s_up_16(bias, out, h);
    uint16_t *dy = s_dev((size_t)T * out * 2);
    cublasLtHandle_t lt = NULL;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    const size_t ws_bytes = (size_t)32 << 20;
    void *ws = s_dev(ws_bytes);
    com_error_t err = {0};
    /* a first producer run, alone: x as the device computes it, and the attention kernel's
     * one-time function attributes out of the way */
    CHECK(kern_attention_cuda(&ap, dt, dx, in, dqkv, 3 * in, dqkv + in, 3 * in, dqkv + 2 * in,
                              3 * in, dcu, dts, dn, NULL, T, g_st, &err) == 0);
    float *x = s_down_16(dx, (size_t)T * in, h);
    float *ref[3];
    for (int ep = 0; ep < 3; ep++) {
        ref[ep] = malloc((size_t)T * out * sizeof *ref[ep]);
        kern_linear_ref(ref[ep], x, w, ep ? bias : NULL, T, in, out);
        if (ep == KERN_LINEAR_BIAS_GELU)
            kern_bias_gelu_ref(ref[ep], NULL, T, out);
    }
    const int32_t n_own = kern_linear_own_count();
    int n_runs = 0;
    for (int32_t i = 0; i < n_own + 3; i++) {
        const bool own = i < n_own;
        const int32_t rank = own ? KERN_LINEAR_OWN(i) : 0;
        const int ep = own ? (int)(i % 3) : (int)(i - n_own);
        if (own && (g_own_fuses[i] || g_own_folds[i]))
            continue; /* runs only epilogue 3 (at out % its tile width == 0), or only 4-6 */
        kern_linear_plan_t *p = NULL;
        int rc = kern_linear_plan_new(lt, T, in, out, (kern_linear_epilogue_t)ep, ws_bytes, rank,
                                      dt, &p, &err);
        CHECK_MSG(rc == 0, "linear pdl plan rank %d: %s", (int)rank, err.msg);
        if (rc != 0)
            continue;
        char what[128];
        snprintf(what, sizeof what, "linear %dx%dx%d %s behind attention (%s)", (int)T, (int)in,
                 (int)out, epi_name[ep], kern_linear_plan_describe(p));
        s_poison(dx, (size_t)T * in * 2);
        s_poison(dy, (size_t)T * out * 2);
        /* back to back: the producer, then the GEMM, nothing between */
        rc = kern_attention_cuda(&ap, dt, dx, in, dqkv, 3 * in, dqkv + in, 3 * in, dqkv + 2 * in,
                                 3 * in, dcu, dts, dn, NULL, T, g_st, &err);
        if (rc == 0)
            rc = kern_linear_cuda(lt, p, dy, dx, dw, ep ? dbias : NULL, NULL, ws, ws_bytes, g_st,
                                  &err);
        CHECK_MSG(rc == 0, "%s: %s", what, err.msg);
        float *got = s_down_16(dy, (size_t)T * out, h), *x2 = s_down_16(dx, (size_t)T * in, h);
        CHECK_MSG(memcmp(x2, x, (size_t)T * in * sizeof *x) == 0, "%s: the producer's x differs",
                  what);
        const double tol = s_tol16(dt);
        s_cmp(what, got, ref[ep], (size_t)T * out, tol * s_rms(ref[ep], (size_t)T * out), tol);
        free(got), free(x2);
        kern_linear_plan_destroy(&p);
        n_runs++;
    }
    printf("linear %s behind its producer (PDL): %d plans (%d own configurations but those fusing "
           "the LayerNorm, cuBLASLt x 3 epilogues) checked\n",
           s_dtype_name(dt), n_runs, (int)n_own);
    for (int ep = 0; ep < 3; ep++)
        free(ref[ep]);
    free(ts), free(qkv), free(x), free(w), free(bias);
    cudaFree(dqkv), cudaFree(dx), cudaFree(dts), cudaFree(dcu), cudaFree(dn);
    cudaFree(dw), cudaFree(dbias), cudaFree(dy), cudaFree(ws);
    cublasLtDestroy(lt);
}

static void test_linear_pdl(void) {
    s_both_dtypes(test_linear_pdl_dt);
}

/* ---- bias + GELU (x and b of type dt, rounded to it for both sides; s_tol16) ---- */
static void test_bias_gelu_dt(kern_dtype_t dt) {
    /* 97 and 520: more column vectors than one 64-wide block; 130 rows: a partial 16-row block */
    static const int32_t dims[] = {7, 33, 97, 520, 1536};
    static const int32_t ns[] = {1, 5, 130};
    int n_cfg[2] = {0, 0};
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
        for (size_t ni = 0; ni < 3; ni++)
            for (int partial = 0; partial < 2; partial++) {
                const int32_t D = dims[di], N = ns[ni], rows = partial && N > 1 ? N - 1 : N;
                const bool h = dt == KERN_DTYPE_F16;
                float *x = s_rand_16((size_t)N * D, -4, 4, dt), *b = s_rand_16(D, -1, 1, dt);
                float *ref = malloc((size_t)N * D * sizeof *ref);
                memcpy(ref, x, (size_t)N * D * sizeof *ref);
                kern_bias_gelu_ref(ref, b, rows, D); /* later rows stay as the input */
                uint16_t *dx = s_up_16(x, (size_t)N * D, h), *db = s_up_16(b, D, h);
                int32_t *dn = s_up(&rows, 4);
                com_error_t err = {0};
                int rc = kern_bias_gelu_cuda(dx, db, N, partial ? dn : NULL, D, dt, g_st, &err);
                CHECK_MSG(rc == 0, "bias_gelu_cuda: %s", err.msg);
                n_cfg[kern_bias_gelu_cuda_config(D)]++;
                float *got = s_down_16(dx, (size_t)N * D, h);
                char what[64];
                snprintf(what, sizeof what, "bias_gelu %s %dx%d rows %d", s_dtype_name(dt), (int)N,
                         (int)D, (int)rows);
                s_cmp(what, got, ref, (size_t)N * D, s_tol16(dt), s_tol16(dt));
                free(got), free(x), free(b), free(ref);
                cudaFree(dx), cudaFree(db), cudaFree(dn);
            }
    CHECK(n_cfg[0] > 0 && n_cfg[1] > 0);
    /* an unknown dtype is refused */
    com_error_t err = {0};
    uint16_t *d = s_dev(64 * 2);
    CHECK(kern_bias_gelu_cuda(d, NULL, 1, NULL, 64, (kern_dtype_t)7, g_st, &err) == COM_EINVAL);
    cudaFree(d);
    printf("bias_gelu %s: scalar and vector paths checked (%d runs)\n", s_dtype_name(dt),
           n_cfg[0] + n_cfg[1]);
}

/* The GELU's own bound (kern_cuda_dev.cuh), against erf in double: every 16-bit pattern of dt as
 * x with no bias (the two scalar-path columns included: dim 1030), then 2^20 draws x in
 * [-12, 12] plus a bias in [-1, 1], z = x + b in fp32 as the kernel adds it (between the 16-bit
 * values). |GELU(z) - GELU_exact(z)| <= tol max(1, |z|), tol 1e-3 for binary16 (7.5e-4 by
 * emulation, kern::gelu_erf; 5.05e-4 measured on the H200, where the packed binary16 form it
 * replaced measured 1.01e-3) and 4.5e-3 for bf16 (bf16's rounding, up to 2^-8 relative, plus the
 * fp32 GELU's 3.7e-4). +inf gives +inf, -inf NaN (inf - inf). NaN stays NaN. */
static void s_gelu_bound_check(const char *what, const uint16_t *dy, const float *z, int32_t n,
                               int32_t dim, kern_dtype_t dt) {
    const bool h = dt == KERN_DTYPE_F16;
    const double tol = h ? 1e-3 : 4.5e-3;
    float *got = s_down_16(dy, (size_t)n * dim, h);
    size_t bad = 0, checked = 0;
    double worst = 0.0;
    for (size_t i = 0; i < (size_t)n * dim; i++) {
        const double zi = z[i], g = got[i];
        bool ok;
        if (isnan(zi))
            ok = isnan(g);
        else if (isinf(zi))
            ok = zi > 0 ? isinf(g) && g > 0 : isnan(g);
        else {
            const double e = fabs(g - test_gelu_erf(zi)) / fmax(1.0, fabs(zi));
            ok = e <= tol;
            worst = e > worst ? e : worst;
            checked++;
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: z %.9g gives %.9g, exact %.9g\n", what, zi, g,
                    test_gelu_erf(zi));
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu outside %.3g max(1, |z|)", what, bad, (size_t)n * dim, tol);
    printf("%s: %zu finite z, worst |error| / max(1, |z|) %.3g (bound %.3g)\n", what, checked,
           worst, tol);
    free(got);
}

static void test_gelu_bound_dt(kern_dtype_t dt) {
    const bool h = dt == KERN_DTYPE_F16;
    com_error_t err = {0};
    /* every bit pattern, no bias: 64 rows of 1030 (the 8-wide path, then 6 scalar columns) */
    {
        const int32_t n = 64, dim = 1030;
        uint16_t *bits = malloc((size_t)n * dim * sizeof *bits);
        float *z = malloc((size_t)n * dim * sizeof *z);
        for (size_t i = 0; i < (size_t)n * dim; i++) {
            bits[i] = (uint16_t)(i % 65536);
            z[i] = h ? com_half_to_f32(bits[i]) : kern_bf16_to_f32(bits[i]);
        }
        uint16_t *dy = s_up(bits, (size_t)n * dim * sizeof *bits);
        CHECK(kern_bias_gelu_cuda(dy, NULL, n, NULL, dim, dt, g_st, &err) == 0);
        char what[64];
        snprintf(what, sizeof what, "gelu %s, every 16-bit z", s_dtype_name(dt));
        s_gelu_bound_check(what, dy, z, n, dim, dt);
        free(bits), free(z);
        cudaFree(dy);
    }
    /* 2^20 sums x + b between the 16-bit values */
    {
        const int32_t n = 1024, dim = 1024;
        float *x = s_rand_16((size_t)n * dim, -12, 12, dt), *b = s_rand_16(dim, -1, 1, dt);
        float *z = malloc((size_t)n * dim * sizeof *z);
        for (size_t i = 0; i < (size_t)n * dim; i++)
            z[i] = x[i] + b[i % dim];
        uint16_t *dy = s_up_16(x, (size_t)n * dim, h), *db = s_up_16(b, dim, h);
        CHECK(kern_bias_gelu_cuda(dy, db, n, NULL, dim, dt, g_st, &err) == 0);
        char what[64];
        snprintf(what, sizeof what, "gelu %s, 2^20 z = x + b", s_dtype_name(dt));
        s_gelu_bound_check(what, dy, z, n, dim, dt);
        free(x), free(b), free(z);
        cudaFree(dy), cudaFree(db);
    }
}

static void test_bias_gelu(void) {
    s_both_dtypes(test_bias_gelu_dt);
    s_both_dtypes(test_gelu_bound_dt);
}

/* ---- residual + LayerNorm ---- */
/* Each residual type (fp32, bf16, f16) x configuration path x two variants: 0: + bias, every
 * output a buffer of its own (fp32, f16 and bf16), all rows; 1: no bias, the output of the
 * residual's own type in place on it (plus the bf16 copy when that is another buffer), a device
 * row count of N - 1: the rows past it keep the residual in place and stay poisoned elsewhere.
 * Per dtype dt of x and b (rounded to it for both sides); the tolerances are the outputs' own. */
static void test_add_layernorm_dt(kern_dtype_t dt) {
    static const int32_t hiddens[] = {7, 33, 136, 384, 768, 1024};
    /* 3100, 6150, 12301: the register path's 2 and 4 rows a thread with a 16-bit residual
     * (kern_add_layernorm_cuda_rows: hidden 768 / 1024; 384 takes 2 from 6150), partial last
     * blocks */
    static const int32_t ns[] = {1, 3, 129, 3100, 6150, 12301};
    static const char *rt_name[3] = {"fp32", "bf16", "f16"};
    int n_cfg[3] = {0, 0, 0}, n_rows_per_thread[5] = {0};
    for (int rt = KERN_RESIDUAL_F32; rt <= KERN_RESIDUAL_F16; rt++)
        for (size_t hi = 0; hi < sizeof hiddens / sizeof *hiddens; hi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
                for (int variant = 0; variant < 2; variant++) {
                    const int32_t H = hiddens[hi], N = ns[ni], rows = variant && N > 1 ? N - 1 : N;
                    const size_t n = (size_t)N * H, nr = (size_t)rows * H;
                    float *x = s_rand_16(n, -2, 2, dt), *res = s_rand_bf(n, -2, 2);
                    float *b = s_rand_16(H, -1, 1, dt), *g = s_rand_bf(H, 0.5f, 1.5f);
                    float *be = s_rand_bf(H, -0.5f, 0.5f);
                    float *ref = malloc(n * sizeof *ref);
                    memcpy(ref, res, n * sizeof *ref); /* rows past `rows` keep the residual */
                    kern_add_layernorm_ref(ref, x, variant ? NULL : b, res, g, be, rows, H, 1e-12f);
                    const bool h = dt == KERN_DTYPE_F16;
                    uint16_t *dx = s_up_16(x, n, h), *db = s_up_16(b, H, h);
                    float *dg = s_up(g, H * 4), *dbe = s_up(be, H * 4);
                    void *dres = rt == KERN_RESIDUAL_F32
                                     ? s_up(res, n * 4)
                                     : (void *)s_up_16(res, n, rt == KERN_RESIDUAL_F16);
                    /* outputs: in place on the residual (variant 1, its own type), else fresh
                     * poisoned buffers; variant 1 leaves the other 16-bit type out */
                    float *o32 = rt == KERN_RESIDUAL_F32 && variant ? dres
                                 : variant                          ? NULL
                                                                    : s_dev(n * 4);
                    uint16_t *oh = rt == KERN_RESIDUAL_F16 && variant ? dres
                                   : variant                          ? NULL
                                                                      : s_dev(n * 2);
                    uint16_t *obf = rt == KERN_RESIDUAL_BF16 && variant ? dres : s_dev(n * 2);
                    int32_t *dn = s_up(&rows, 4);
                    com_error_t err = {0};
                    int rc = kern_add_layernorm_cuda(o32, oh, obf, dx, variant ? NULL : db, dt,
                                                     dres, (kern_residual_type_t)rt, dg, dbe, N,
                                                     variant ? dn : NULL, H, 1e-12f, g_st, &err);
                    CHECK_MSG(rc == 0, "add_layernorm_cuda: %s", err.msg);
                    n_cfg[kern_add_layernorm_cuda_config(H)]++;
                    n_rows_per_thread[kern_add_layernorm_cuda_rows(H, N,
                                                                   (kern_residual_type_t)rt)]++;
                    const struct {
                        void *d;
                        int kind; /* 0 fp32, 1 bf16, 2 f16 (as kern_residual_type_t) */
                        double tol;
                    } outs[3] = {{o32, KERN_RESIDUAL_F32, 1e-4},
                                 {obf, KERN_RESIDUAL_BF16, 1e-2},
                                 {oh, KERN_RESIDUAL_F16, 2e-3}};
                    for (int k = 0; k < 3; k++) {
                        if (!outs[k].d)
                            continue;
                        const bool in_place = outs[k].d == dres;
                        float *got =
                            outs[k].kind == KERN_RESIDUAL_F32
                                ? s_down_f32(outs[k].d, n)
                                : s_down_16(outs[k].d, n, outs[k].kind == KERN_RESIDUAL_F16);
                        char what[96];
                        snprintf(what, sizeof what,
                                 "add_ln %s x, %s residual, %s out %dx%d variant %d",
                                 s_dtype_name(dt), rt_name[rt], rt_name[outs[k].kind], (int)N,
                                 (int)H, variant);
                        /* in place: the rows past *n_rows keep the residual (ref holds it) */
                        s_cmp(what, got, ref, in_place ? n : nr, outs[k].tol, outs[k].tol);
                        if (!in_place && rows < N) /* the rows past *n_rows stay poisoned */
                            CHECK_MSG(isnan(got[nr]) && isnan(got[n - 1]), "%s: row %d written",
                                      what, (int)rows);
                        free(got);
                    }
                    free(x), free(res), free(b), free(g), free(be), free(ref);
                    cudaFree(dx), cudaFree(db), cudaFree(dres), cudaFree(dg), cudaFree(dbe);
                    if (o32 != dres)
                        cudaFree(o32);
                    if (oh != dres)
                        cudaFree(oh);
                    if (obf != dres)
                        cudaFree(obf);
                    cudaFree(dn);
                }
    /* no output at all, an unknown residual type, an unknown dtype */
    com_error_t err = {0};
    uint16_t *d = s_dev(64 * 2);
    float *p = s_dev(64 * 4);
    CHECK(kern_add_layernorm_cuda(NULL, NULL, NULL, d, NULL, dt, p, KERN_RESIDUAL_F32, p, p, 1,
                                  NULL, 64, 1e-12f, g_st, &err) == COM_EINVAL);
    CHECK(kern_add_layernorm_cuda(p, NULL, NULL, d, NULL, dt, p, (kern_residual_type_t)7, p, p, 1,
                                  NULL, 64, 1e-12f, g_st, &err) == COM_EINVAL);
    CHECK(kern_add_layernorm_cuda(p, NULL, NULL, d, NULL, (kern_dtype_t)7, p, KERN_RESIDUAL_F32, p,
                                  p, 1, NULL, 64, 1e-12f, g_st, &err) == COM_EINVAL);
    cudaFree(d), cudaFree(p);
    CHECK(n_cfg[0] > 0 && n_cfg[1] > 0 && n_cfg[2] > 0);
    CHECK(n_rows_per_thread[2] > 0 && n_rows_per_thread[4] > 0);
    printf("add_layernorm %s x/b: fp32, bf16 and f16 residuals; scalar, vector and "
           "register-resident paths (1, 2 and 4 rows a thread: %d / %d / %d runs) checked (%d "
           "runs)\n",
           s_dtype_name(dt), n_rows_per_thread[1], n_rows_per_thread[2], n_rows_per_thread[4],
           n_cfg[0] + n_cfg[1] + n_cfg[2]);
}

static void test_add_layernorm(void) {
    s_both_dtypes(test_add_layernorm_dt);
}

/* ---- attention (per dtype: q/k/v rounded to it, outputs compared at 1x / 2x s_tol16) ---- */
/* the batch's tile table (kern_attention_tiles_build) on the device */
static int32_t *s_up_tiles(const int32_t *cu, int32_t n_seqs, int32_t T) {
    const int32_t cap = kern_attention_tiles_cap(T);
    const size_t bytes = (size_t)cap * KERN_ATTENTION_TILE_WORDS * 4;
    int32_t *t = malloc(bytes);
    CHECK(kern_attention_tiles_build(t, T, cu, n_seqs) >= 0);
    int32_t *d = s_up(t, bytes);
    free(t);
    return d;
}

/* One ragged batch (cu[0..ns], n = cu[ns] tokens, a bucket of T) through kernel against
 * kern_attention_ref, q | k | v packed in rows as the QKV GEMM writes them. Rows past n_tokens
 * hold NaN, as stale activations may (P is 0 for those keys, and 0 x NaN would leak into the
 * outputs); the output rows past n_tokens must stay unwritten (poisoned by s_dev). */
/* One batch through kernel (with the batch's tile table, or, pooled 1 / 2, through
 * kern_attention_pooled_cuda for each sequence's first / last row, every other row then left
 * unwritten) against kern_attention_ref. */
static void s_attention_batch(const char *what, kern_attention_kernel_t kernel, bool with_tiles,
                              int pooled, kern_dtype_t dtype, const kern_attention_params_t *p,
                              const int32_t *cu, int32_t ns, int32_t T, double atol, double rtol) {
    const bool h16 = dtype == KERN_DTYPE_F16;
    const int32_t n = cu[ns], nh = p->n_heads, nkv = p->n_kv_heads, hd = p->head_dim;
    const int64_t ld = (int64_t)(nh + 2 * nkv) * hd;
    float *qkv = s_rand_16((size_t)T * ld, -2, 2, dtype);
    for (size_t i = (size_t)n * ld; i < (size_t)T * ld; i++)
        qkv[i] = NAN;
    float *ref = malloc((size_t)T * nh * hd * sizeof *ref);
    float *scratch = malloc(kern_attention_ref_scratch_floats(p, 512) * sizeof *scratch);
    kern_attention_ref(p, ref, nh * hd, qkv, ld, qkv + nh * hd, ld, qkv + (nh + nkv) * hd, ld, cu,
                       ns, 0, 1, scratch);
    uint16_t *dqkv = s_up_16(qkv, (size_t)T * ld, h16);
    uint16_t *dout = s_dev((size_t)T * nh * hd * 2);
    int32_t *ts = s_tok_seq(cu, ns, T);
    int32_t *dts = s_up(ts, T * 4), *dcu = s_up(cu, (ns + 1) * 4), *dn = s_up(&n, 4);
    int32_t *dtt = with_tiles ? s_up_tiles(cu, ns, T) : NULL;
    int32_t *dns = s_up(&ns, 4);
    com_error_t err = {0};
    const int rc =
        pooled ? kern_attention_pooled_cuda(p, dtype, dout, nh * hd, dqkv, ld, dqkv + nh * hd, ld,
                                            dqkv + (nh + nkv) * hd, ld, dcu, dts, dn, dns, ns + 3,
                                            pooled == 2, T, g_st, &err)
               : kern_attention_cuda_kernel(kernel, p, dtype, dout, nh * hd, dqkv, ld,
                                            dqkv + nh * hd, ld, dqkv + (nh + nkv) * hd, ld, dcu,
                                            dts, dn, dtt, T, g_st, &err);
    CHECK_MSG(rc == 0, "%s: %s", what, err.msg);
    float *got = s_down_16(dout, (size_t)T * nh * hd, h16);
    if (pooled) { /* the pooled rows as the reference's, every other row still poisoned */
        const size_t w = (size_t)nh * hd;
        int32_t s = 0, unwritten = 0;
        for (int32_t t = 0; t < T; t++) {
            while (s < ns && cu[s + 1] <= t)
                s++;
            const bool kept = s < ns && t == (pooled == 2 ? cu[s + 1] - 1 : cu[s]);
            if (kept)
                s_cmp(what, got + t * w, ref + t * w, w, atol, rtol);
            else
                unwritten += isnan(got[t * w]) && isnan(got[t * w + w - 1]);
        }
        CHECK_MSG(unwritten == T - ns, "%s: %d of the %d rows not pooled were written", what,
                  (int)(T - ns - unwritten), (int)(T - ns));
    } else {
        s_cmp(what, got, ref, (size_t)n * nh * hd, atol, rtol);
        if (n < T)
            CHECK_MSG(isnan(got[(size_t)n * nh * hd]) && isnan(got[(size_t)T * nh * hd - 1]),
                      "%s: rows past n_tokens were written", what);
    }
    free(got), free(qkv), free(ref), free(scratch), free(ts);
    cudaFree(dqkv), cudaFree(dout), cudaFree(dts), cudaFree(dcu), cudaFree(dn), cudaFree(dns);
    cudaFree(dtt);
}

static void test_attention_dt(kern_dtype_t dtype) {
    static const int32_t cases[][8] = {
        {1, 1},          {3, 1, 1, 1}, {5, 5, 64, 65, 1, 130}, {1, 300},
        {3, 512, 3, 17}, {2, 63, 129}, {6, 1, 2, 3, 4, 5, 6},  {7, 100, 33, 200, 1, 64, 128, 250}};
    /* every kernel kern_attention_cuda chooses from (the wgmma one also with the batch's tile
     * table, kern_attention_tiles_build); the wgmma ones must run on sm_90 */
    static const kern_attention_kernel_t kernels[] = {KERN_ATTENTION_MMA, KERN_ATTENTION_WGMMA,
                                                      KERN_ATTENTION_WGMMA, KERN_ATTENTION_WGMMA,
                                                      KERN_ATTENTION_WGMMA};
    static const char *kernel_name[] = {"mma", "wgmma", "wgmma tiles", "wgmma pooled first",
                                        "wgmma pooled last"};
    const char *dn16 = s_dtype_name(dtype);
    const double atol = s_tol16(dtype), rtol = 2 * s_tol16(dtype); /* bf16: 1e-2, 2e-2 */
    int dev = 0, major = 0, minor = 0;
    CHECK(cudaGetDevice(&dev) == cudaSuccess);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    const bool sm90 = major == 9 && minor == 0;
    int n_cfg = 0;
    for (size_t ki = 0; ki < sizeof kernels / sizeof *kernels; ki++) {
        const kern_attention_kernel_t kernel = kernels[ki];
        const bool with_tiles = ki == 2;
        const int pooled = ki < 3 ? 0 : (int)ki - 2; /* kern_attention_pooled_cuda */
        if (kernel != KERN_ATTENTION_MMA && !sm90) {
            printf("attention: kernel %s %s skipped (wgmma needs compute capability 9.0, this is "
                   "%d.%d)\n",
                   kernel_name[ki], dn16, major, minor);
            continue;
        }
        for (int hd_i = 0; hd_i < 2; hd_i++)
            for (int causal = 0; causal < 2; causal++)
                for (int gqa = 0; gqa < 2; gqa++) {
                    /* an odd head count beside GQA's 4 (2 KV heads) */
                    const int32_t hd = hd_i ? 64 : 32, nh = gqa ? 4 : 3, nkv = gqa ? 2 : 3;
                    const kern_attention_params_t p = {nh, nkv, hd, 1.0f / sqrtf((float)hd),
                                                       causal != 0};
                    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
                        const int32_t ns = cases[c][0];
                        int32_t cu[8];
                        const int32_t n = s_cu(&cases[c][1], ns, cu), T = s_round64(n) + 64;
                        char what[96];
                        snprintf(what, sizeof what,
                                 "attention kernel %s %s hd %d causal %d kv %d case %zu",
                                 kernel_name[ki], dn16, (int)hd, causal, (int)nkv, c);
                        s_attention_batch(what, kernel, with_tiles, pooled, dtype, &p, cu, ns, T,
                                          atol, rtol);
                    }
                    n_cfg++;
                }
        /* the largest bucket: 16 x 512 tokens = 8192, MiniLM's heads (12 x 32) */
        {
            const int32_t hd = 32, nh = 12, ns = 16;
            const kern_attention_params_t p = {nh, nh, hd, 1.0f / sqrtf((float)hd), false};
            int32_t cu[17];
            for (int32_t s = 0; s <= ns; s++)
                cu[s] = 512 * s;
            char what[64];
            snprintf(what, sizeof what, "attention kernel %s %s 16 x 512 (bucket 8192)",
                     kernel_name[ki], dn16);
            s_attention_batch(what, kernel, with_tiles, pooled, dtype, &p, cu, ns, 8192, atol,
                              rtol);
        }
        /* a larger ragged batch: 2981 tokens in 30 sequences of 1 to 300 tokens, half of them
         * under 41 (with a table, packed into shared tiles), 16 heads (several (tile, head)
         * items a CTA), GQA, both head dims, causal or not */
        for (int hd_i = 0; hd_i < 2; hd_i++)
            for (int causal = 0; causal < 2; causal++) {
                const int32_t hd = hd_i ? 64 : 32;
                const kern_attention_params_t p = {16, 8, hd, 1.0f / sqrtf((float)hd), causal != 0};
                int32_t cu[64], ns = 0;
                cu[0] = 0;
                for (uint32_t x = 7; ns < 63; ns++) { /* 1..300 or 1..40, a fixed sequence */
                    x = x * 1103515245u + 12345u;
                    const int32_t len = 1 + (int32_t)((x >> 16) % ((x & 0x400u) ? 300u : 40u));
                    if (cu[ns] + len > 3000)
                        break;
                    cu[ns + 1] = cu[ns] + len;
                }
                char what[96];
                snprintf(what, sizeof what, "attention kernel %s %s %d ragged hd %d causal %d",
                         kernel_name[ki], dn16, (int)cu[ns], (int)hd, causal);
                s_attention_batch(what, kernel, with_tiles, pooled, dtype, &p, cu, ns, 3072, atol,
                                  rtol);
            }
        printf("attention: kernel %s %s checked\n", kernel_name[ki], dn16);
    }
    {
        const kern_attention_params_t bad = {4, 4, 48, 0.1f, false};
        com_error_t err = {0};
        int32_t *dummy = s_dev(64);
        CHECK(kern_attention_cuda(&bad, dtype, (uint16_t *)dummy, 192, (uint16_t *)dummy, 192,
                                  (uint16_t *)dummy, 192, (uint16_t *)dummy, 192, dummy, dummy,
                                  dummy, NULL, 64, g_st, &err) == COM_EUNSUPPORTED);
        /* the wgmma kernel stores 16-byte pieces: ldo a multiple of 8, out 16-byte aligned */
        const kern_attention_params_t p32 = {4, 4, 32, 0.1f, false};
        for (int a = 0; sm90 && a < 2; a++)
            CHECK(kern_attention_cuda_kernel(KERN_ATTENTION_WGMMA, &p32, dtype,
                                             (uint16_t *)dummy + (a ? 2 : 0), a ? 128 : 130,
                                             (uint16_t *)dummy, 384, (uint16_t *)dummy, 384,
                                             (uint16_t *)dummy, 384, dummy, dummy, dummy, NULL, 64,
                                             g_st, &err) == COM_EINVAL);
        cudaFree(dummy);
    }
    printf("attention %s: %d configurations (kernel x head_dim x causal x GQA) checked\n", dn16,
           n_cfg);
}

static void test_attention(void) {
    s_both_dtypes(test_attention_dt);
    /* an unknown dtype is refused by both kernels, nothing enqueued */
    const kern_attention_params_t p = {4, 4, 64, 0.125f, false};
    com_error_t err = {0};
    int32_t *dummy = s_dev(64);
    uint16_t *d16 = (uint16_t *)dummy;
    for (int k = KERN_ATTENTION_AUTO; k <= KERN_ATTENTION_WGMMA; k++)
        CHECK(kern_attention_cuda_kernel((kern_attention_kernel_t)k, &p, (kern_dtype_t)2, d16, 256,
                                         d16, 768, d16, 768, d16, 768, dummy, dummy, dummy, NULL,
                                         64, g_st, &err) == COM_EINVAL);
    cudaFree(dummy);
}

/* ---- fused QKV projection + attention (qkv_attention.cu; compute capability 9.0 only) ---- */
/* Against an independent host reference: kern_linear_ref (x W^T + b, or the folded LayerNorm's
 * rstd (x W^T - mean c) + b with mean / rstd from kern_row_stats_finish_ref over the same
 * partials the kernel reads), Q / K / V rounded to the dtype (as the unfused QKV GEMM stores
 * them), then kern_attention_ref; tolerances as test_attention's. x is uniform in [-2, 2] (plus a
 * per-row offset in [-1.5, 1.5] when folded, c the rows' sums of W), W uniform in
 * +-1.5 / sqrt(hidden) (Q, K, V of rms ~1, logits of rms ~1 at scale 1 / sqrt(head_dim)), b in
 * [-0.5, 0.5]. The rows past n_tokens are stale: x and in_stats NaN, tok_seq naming sequence 0
 * (a kernel that took them for keys of sequence 0 would be off); the output is poisoned, and
 * everything outside rows < n_tokens x columns < hidden (ldo = hidden + 8 in every other case)
 * must stay so. Buckets 1..128 (one warp group up to 64 rows, two above), layouts from a single
 * token to one sequence filling the bucket, n_tokens below and at the bucket (and 0); shapes:
 * MiniLM (384 = 12 x 32), 4 x 32, 24 x 32 and 12 x 64 (x and W stream through the ring of
 * stages: 12 slices), 4 x 64. Each run twice: the same bits. */
static float s_round16(float v, kern_dtype_t dt) {
    return s_from_bits16(s_bits16(v, dt), dt);
}

static void test_qkv_attention_dt(kern_dtype_t dt) {
    static const int32_t shapes[][3] = {
        {384, 12, 32}, {128, 4, 32}, {768, 24, 32}, {256, 4, 64}, {768, 12, 64}};
    /* max_tokens, n_seqs, the sequences' lengths */
    static const int32_t cases[][8] = {{1, 1, 1},
                                       {7, 3, 1, 2, 3},
                                       {7, 1, 7},
                                       {64, 1, 64},
                                       {64, 4, 1, 2, 30, 20},
                                       {65, 1, 65},
                                       {65, 2, 64, 1},
                                       {65, 2, 1, 63},
                                       {100, 4, 1, 2, 40, 50},
                                       {100, 1, 100},
                                       {128, 1, 128},
                                       {128, 5, 1, 2, 60, 64, 1},
                                       {128, 4, 3, 70, 2, 1},
                                       {128, 1, 1},
                                       {128, 0}};
    const bool h16 = dt == KERN_DTYPE_F16;
    const double atol = s_tol16(dt), rtol = 2 * s_tol16(dt);
    const float eps = 1e-12f;
    int n_runs = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const int32_t H = shapes[si][0], nh = shapes[si][1], hd = shapes[si][2], H3 = 3 * H;
        CHECK(kern_qkv_attention_supported(128, H, nh, hd));
        const float wsc = 1.5f / sqrtf((float)H);
        float *w = s_rand_16((size_t)H3 * H, -wsc, wsc, dt), *b = s_rand_16(H3, -0.5f, 0.5f, dt);
        float *c = malloc((size_t)H3 * sizeof *c);
        for (int32_t j = 0; j < H3; j++) {
            double sum = 0;
            for (int32_t k = 0; k < H; k++)
                sum += w[(size_t)j * H + k];
            c[j] = (float)sum;
        }
        uint16_t *dw = s_up_16(w, (size_t)H3 * H, h16), *db = s_up_16(b, H3, h16);
        float *dc = s_up(c, (size_t)H3 * 4);
        const kern_attention_params_t ap = {nh, nh, hd, 1.0f / sqrtf((float)hd), false};
        for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
            for (int fold = 0; fold < 2; fold++) {
                const int32_t T = cases[ci][0], ns = cases[ci][1];
                int32_t cu[8];
                const int32_t n = s_cu(&cases[ci][2], ns, cu);
                const int64_t ldo = ci % 2 ? H + 8 : H;
                const int32_t nb = H / KERN_STATS_COLS;
                const size_t nx = (size_t)T * H, no = (size_t)T * ldo;
                /* x (rows past n: NaN), its partials (likewise), tok_seq (past n: sequence 0) */
                float *x = s_rand_16(nx, -2, 2, dt);
                for (int32_t t = 0; t < T; t++) {
                    const float off = fold ? com_prng_uniform(&g_rng, -1.5f, 1.5f) : 0.f;
                    for (int32_t k = 0; k < H; k++)
                        x[(size_t)t * H + k] =
                            t < n ? s_round16(x[(size_t)t * H + k] + off, dt) : NAN;
                }
                float *part = malloc((size_t)T * nb * 2 * sizeof *part);
                for (size_t i = 0; i < (size_t)T * nb * 2; i++)
                    part[i] = NAN;
                if (n > 0)
                    kern_row_stats_ref(part, x, n, H);
                int32_t *ts = s_tok_seq(cu, ns, T);
                for (int32_t t = n; t < T; t++)
                    ts[t] = 0;
                /* the reference: Q | K | V rounded to dt, then attention, rows < n */
                float *ref = malloc(((size_t)n * H + 1) * sizeof *ref);
                if (n > 0) {
                    float *qkv = malloc((size_t)n * H3 * sizeof *qkv);
                    kern_linear_ref(qkv, x, w, fold ? NULL : b, n, H, H3);
                    if (fold) {
                        float *mean = malloc((size_t)n * sizeof *mean),
                              *rstd = malloc((size_t)n * sizeof *rstd);
                        kern_row_stats_finish_ref(mean, rstd, part, n, H, eps);
                        for (int32_t t = 0; t < n; t++)
                            for (int32_t j = 0; j < H3; j++) {
                                float *v = &qkv[(size_t)t * H3 + j];
                                *v = rstd[t] * (*v - mean[t] * c[j]) + b[j];
                            }
                        free(mean), free(rstd);
                    }
                    for (size_t i = 0; i < (size_t)n * H3; i++)
                        qkv[i] = s_round16(qkv[i], dt);
                    float *scratch =
                        malloc(kern_attention_ref_scratch_floats(&ap, 128) * sizeof *scratch);
                    kern_attention_ref(&ap, ref, H, qkv, H3, qkv + H, H3, qkv + 2 * H, H3, cu, ns,
                                       0, 1, scratch);
                    free(qkv), free(scratch);
                }
                uint16_t *dx = s_up_16(x, nx, h16), *dout = s_dev(no * 2);
                float *dpart = s_up(part, (size_t)T * nb * 2 * 4);
                int32_t *dts = s_up(ts, (size_t)T * 4), *dn = s_up(&n, 4);
                const kern_qkv_attention_args_t a = {.dtype = dt,
                                                     .out = dout,
                                                     .ldo = ldo,
                                                     .x = dx,
                                                     .w = dw,
                                                     .b = db,
                                                     .in_stats = fold ? dpart : NULL,
                                                     .c = fold ? dc : NULL,
                                                     .eps = eps,
                                                     .tok_seq = dts,
                                                     .n_tokens = dn,
                                                     .max_tokens = T,
                                                     .hidden = H,
                                                     .n_heads = nh,
                                                     .head_dim = hd,
                                                     .scale = ap.scale};
                char what[128];
                snprintf(what, sizeof what,
                         "qkv_attention %s %d x %d, bucket %d, case %zu (%d tokens)%s",
                         s_dtype_name(dt), (int)nh, (int)hd, (int)T, ci, (int)n,
                         fold ? " folded" : "");
                com_error_t err = {0};
                float *got[2] = {NULL, NULL};
                for (int run = 0; run < 2; run++) {
                    s_poison(dout, no * 2);
                    const int rc = kern_qkv_attention_cuda(&a, g_st, &err);
                    CHECK_MSG(rc == 0, "%s: %s", what, err.msg);
                    got[run] = s_down_16(dout, no, h16);
                }
                /* the written block, packed as the reference; everything else still poisoned */
                float *live = malloc(((size_t)n * H + 1) * sizeof *live);
                size_t outside = 0;
                for (int32_t t = 0; t < T; t++)
                    for (int64_t j = 0; j < ldo; j++) {
                        const float v = got[0][(size_t)t * ldo + j];
                        if (t < n && j < H)
                            live[(size_t)t * H + j] = v;
                        else
                            outside += !isnan(v);
                    }
                s_cmp(what, live, ref, (size_t)n * H, atol, rtol);
                CHECK_MSG(outside == 0, "%s: %zu elements outside the live rows written", what,
                          outside);
                CHECK_MSG(memcmp(got[0], got[1], no * sizeof *got[0]) == 0,
                          "%s: second run differs", what);
                n_runs++;
                free(got[0]), free(got[1]), free(live), free(x), free(part), free(ts), free(ref);
                cudaFree(dx), cudaFree(dout), cudaFree(dpart), cudaFree(dts), cudaFree(dn);
            }
        free(w), free(b), free(c);
        cudaFree(dw), cudaFree(db), cudaFree(dc);
    }
    printf("qkv_attention %s: %d runs (shape x bucket x layout x plain / folded) checked\n",
           s_dtype_name(dt), n_runs);
}

/* The arguments the fused kernel must refuse, each with its code, nothing enqueued. */
static void s_qkv_attention_refusals(void) {
    uint16_t *d = s_dev(256 * 1152 * 2);
    int32_t *di = s_dev(256 * 4);
    float *df = s_dev(256 * 16 * 4);
    const kern_qkv_attention_args_t good = {.dtype = KERN_DTYPE_BF16,
                                            .out = d,
                                            .ldo = 384,
                                            .x = d,
                                            .w = d,
                                            .b = d,
                                            .eps = 1e-12f,
                                            .tok_seq = di,
                                            .n_tokens = di,
                                            .max_tokens = 128,
                                            .hidden = 384,
                                            .n_heads = 12,
                                            .head_dim = 32,
                                            .scale = 0.17f};
    com_error_t err = {0};
    enum { kCases = 16 };
    kern_qkv_attention_args_t bad[kCases];
    int want[kCases];
    for (int i = 0; i < kCases; i++)
        bad[i] = good, want[i] = COM_EINVAL;
    bad[0].max_tokens = 129, want[0] = COM_EUNSUPPORTED;
    bad[1].max_tokens = 0;
    bad[2].x = NULL;
    bad[3].out = NULL;
    bad[4].n_tokens = NULL;
    bad[5].x = d + 1;                                                     /* 2-byte aligned */
    bad[6].head_dim = 48, bad[6].n_heads = 8, want[6] = COM_EUNSUPPORTED; /* 384 = 8 x 48 */
    bad[7].hidden = 96, bad[7].n_heads = 3, bad[7].ldo = 96, want[7] = COM_EUNSUPPORTED;
    bad[8].n_heads = 11; /* hidden != n_heads x head_dim */
    bad[9].dtype = (kern_dtype_t)7;
    bad[10].in_stats = df;                     /* no c */
    bad[11].in_stats = df + 1, bad[11].c = df; /* in_stats read as float2 */
    bad[12].ldo = 383;
    bad[13].scale = 0.f;
    bad[14].w = d + 4; /* 8-byte aligned */
    bad[15].tok_seq = NULL;
    for (int i = 0; i < kCases; i++)
        CHECK_MSG(kern_qkv_attention_cuda(&bad[i], g_st, &err) == want[i],
                  "qkv_attention refusal %d: expected %d (%s)", i, want[i], err.msg);
    CHECK(kern_qkv_attention_cuda(NULL, g_st, &err) == COM_EINVAL);
    CHECK(!kern_qkv_attention_supported(129, 384, 12, 32));
    CHECK(!kern_qkv_attention_supported(128, 384, 8, 48));
    CHECK(!kern_qkv_attention_supported(128, 96, 3, 32));
    CHECK(!kern_qkv_attention_supported(0, 384, 12, 32));
    KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
    cudaFree(d), cudaFree(di), cudaFree(df);
}

static void test_qkv_attention(void) {
    int dev = 0, major = 0, minor = 0;
    CHECK(cudaGetDevice(&dev) == cudaSuccess);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    s_qkv_attention_refusals();
    if (!(major == 9 && minor == 0)) {
        CHECK(!kern_qkv_attention_supported(128, 384, 12, 32));
        printf("qkv_attention: skipped (the fused kernel needs compute capability 9.0, this is "
               "%d.%d)\n",
               major, minor);
        return;
    }
    s_both_dtypes(test_qkv_attention_dt);
}

/* ---- the fused FFN sublayer (ffn.cu; compute capability 9.0, hidden 384) ---- */
/* kern_ffn_cuda against kern_ffn_ref over operands rounded to the dtype (both sides read the same
 * values), with round_h = 1 + dtype: the reference rounds h to the dtype as the kernel keeps it on
 * chip. Scales of a trained BERT layer: x ~ N(0, 1) (a LayerNorm's output), W1, W2 ~ N(0, 0.05)
 * (x W1^T of rms ~1 at hidden 384: the GELU's curved part), b1, b2 and beta uniform in +-0.1,
 * gamma in 1 +- 0.1 (fp32). Shapes: inter 64 and 128 (one and two 64-wide slices of h) and 1536
 * (MiniLM's); n from one token over the 64-row block's edges (63, 64, 65, 127, 128, 129) to many
 * blocks (4096 + 77: a partial last one), and past one wave of 128-row tiles on the H200's 132
 * SMs (16973, 27392: CTAs queued behind the first wave). Each shape in 8 modes: n_rows NULL or a
 * device count of 2n/3
 * (0 for n = 1) x in place (y == x) or not x out_f32 NULL or set. The rows past *n_rows hold a
 * NaN sentinel in x, y and out_f32 before the run and must keep its bits (not written; stale NaN
 * in x must not reach a live row); out of place, x must come back unchanged. Per run: y (and
 * out_f32) of the live rows within tolerance and finite; y bit for bit out_f32 rounded to the
 * dtype (out_f32 is y's fp32 copy); a second run (x restored) gives the same bits; every mode's
 * live y has the bits of the plain mode's (n_rows NULL, out of place, no
 * out_f32): the same op, wherever it writes.
 * Tolerance |got - ref| <= atol + rtol |ref|: bf16 2e-2 + 1e-2 |ref|, binary16 5e-3 + 2.5e-3 |ref|.
 * What separates the kernel from the reference: (a) y's rounding, half an ulp (up to 2^-8 |y| in
 * bf16, 2^-11 |y| in binary16); (b) the device GELU (kern_cuda_dev.cuh, tanh.approx: up to
 * 3.7e-4 max(1, |z|) before rounding), which moves h across a rounding boundary in ~10% (bf16) to
 * ~50% (binary16) of its elements, +-1 ulp of h each, summed over inter with W2's random signs and
 * divided by the row's std (so (b) is as large as (a) in binary16, and pushes y across its own
 * rounding boundaries: up to 1 ulp); the fp32 accumulation orders add nothing visible. A numpy
 * emulation of these shapes and scales (3000 rows, tanh with a random relative error of 2^-11)
 * gave a worst |diff| / tolerance of 0.26 in bf16 (|diff| 0.017 at |y| 4.3: one ulp) and 0.15
 * (inter 64) to 0.29 (inter 1536) in binary16 (out_f32: 0.22 and 0.29): a margin of ~3.5 for both
 * types. The binary16 tolerance is twice s_tol16's (the emulation reached 0.58 of that), the bf16
 * one s_tol16's relative part over the 2e-2 floor the LayerNorm's O(1) outputs call for. A lost
 * bias (b2, beta: up to 0.1), gamma (1 +- 0.1) or a wrong row statistic moves y by far more. The
 * worst ratio seen is printed per dtype and inter. */
static uint16_t s_sentinel16(size_t i) {
    return (uint16_t)(0x7fffu - i % 97u); /* NaN in bf16 and in binary16 */
}

static uint32_t s_sentinel32(size_t i) {
    return 0x7fffffffu - (uint32_t)(i % 97u); /* NaN */
}

/* N(0, sd) from g_rng (Box-Muller) */
static float s_randn(float sd) {
    const double u1 = 1.0 - com_prng_uniform(&g_rng, 0, 1), u2 = com_prng_uniform(&g_rng, 0, 1);
    return (float)(sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* n draws of N(0, sd) rounded to dt */
static float *s_randn_16(size_t n, float sd, kern_dtype_t dt) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = s_round16(s_randn(sd), dt);
    return p;
}

/* max over i < n of |got - ref| / (atol + rtol |ref|) (NaN: infinity) */
static double s_worst_ratio(const float *got, const float *ref, size_t n, double atol,
                            double rtol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double r = fabs((double)got[i] - ref[i]) / (atol + rtol * fabs((double)ref[i]));
        worst = isnan(r) ? INFINITY : r > worst ? r : worst;
    }
    return worst;
}

static void test_ffn_dt(kern_dtype_t dt) {
    static const int32_t inters[] = {64, 128, 1536};
    static const int32_t ns[] = {1, 63, 64, 65, 127, 128, 129, 300, 1000, 4096 + 77, 16973, 27392};
    const int32_t H = 384;
    const float eps = 1e-12f;
    const bool h16 = dt == KERN_DTYPE_F16, sm90 = s_sm90();
    const double atol = h16 ? 5e-3 : 2e-2, rtol = h16 ? 2.5e-3 : 1e-2;
    bool prepared = false;
    for (size_t ii = 0; ii < sizeof inters / sizeof *inters; ii++) {
        const int32_t I = inters[ii];
        const bool sup = kern_ffn_supported(dt, H, I);
        /* the contract: exactly on compute capability 9.0 for these shapes */
        CHECK_MSG(sup == sm90, "kern_ffn_supported(%s, %d, %d) = %d, compute capability 9.0: %d",
                  s_dtype_name(dt), (int)H, (int)I, sup, sm90);
        if (!sup) {
            printf("ffn %s hidden %d inter %d: skipped (kern_ffn_supported is false; the fused "
                   "FFN needs compute capability 9.0)\n",
                   s_dtype_name(dt), (int)H, (int)I);
            continue;
        }
        if (!prepared) {
            com_error_t err = {0};
            const int rc = kern_ffn_prepare(dt, &err);
            CHECK_MSG(rc == 0, "kern_ffn_prepare(%s): %d %s", s_dtype_name(dt), rc, err.msg);
            if (rc != 0)
                return;
            prepared = true;
        }
        float *w1 = s_randn_16((size_t)I * H, 0.05f, dt),
              *w2 = s_randn_16((size_t)H * I, 0.05f, dt);
        float *b1 = s_rand_16(I, -0.1f, 0.1f, dt), *b2 = s_rand_16(H, -0.1f, 0.1f, dt);
        float *g = malloc((size_t)H * sizeof *g), *be = malloc((size_t)H * sizeof *be);
        for (int32_t k = 0; k < H; k++) {
            g[k] = com_prng_uniform(&g_rng, 0.9f, 1.1f);
            be[k] = com_prng_uniform(&g_rng, -0.1f, 0.1f);
        }
        uint16_t *dw1 = s_up_16(w1, (size_t)I * H, h16), *dw2 = s_up_16(w2, (size_t)H * I, h16);
        uint16_t *db1 = s_up_16(b1, I, h16), *db2 = s_up_16(b2, H, h16);
        float *dg = s_up(g, (size_t)H * 4), *dbe = s_up(be, (size_t)H * 4);
        int n_runs = 0;
        double worst_y = 0, worst_o = 0;
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
            const int32_t n = ns[ni];
            const size_t nh = (size_t)n * H;
            float *x = s_randn_16(nh, 1.0f, dt), *ref = malloc(nh * sizeof *ref);
            kern_ffn_ref(ref, x, w1, b1, w2, b2, g, be, eps, n, H, I, 1 + (int)dt);
            uint16_t *xb = malloc(nh * 2), *xin = malloc(nh * 2), *ysent = malloc(nh * 2);
            uint32_t *osent = malloc(nh * 4);
            for (size_t i = 0; i < nh; i++) {
                xb[i] = s_bits16(x[i], dt);
                ysent[i] = s_sentinel16(i);
                osent[i] = s_sentinel32(i);
            }
            uint16_t *dx = s_dev(nh * 2), *dy = s_dev(nh * 2);
            float *do32 = s_dev(nh * 4), *yf = malloc(nh * sizeof *yf);
            int32_t *dn = s_dev(4);
            /* each mode: bits 1 out_f32, 2 in place, 4 n_rows; mode 0 first, the plain one */
            {
                uint16_t *base = NULL;
                for (int mode = 0; mode < 8; mode++) {
                    const bool f32 = mode & 1, in_place = mode & 2, part = mode & 4;
                    const int32_t rows = part ? 2 * n / 3 : n;
                    const size_t nr = (size_t)rows * H;
                    memcpy(xin, xb, nh * 2);
                    for (size_t i = nr; i < nh; i++)
                        xin[i] = s_sentinel16(i); /* stale rows */
                    KERN_CUDA_FATAL(cudaMemcpy(dn, &rows, 4, cudaMemcpyHostToDevice));
                    uint16_t *y = in_place ? dx : dy;
                    const kern_ffn_args_t a = {.dtype = dt,
                                               .y = y,
                                               .x = dx,
                                               .w1 = dw1,
                                               .b1 = db1,
                                               .w2 = dw2,
                                               .b2 = db2,
                                               .gamma = dg,
                                               .beta = dbe,
                                               .eps = eps,
                                               .out_f32 = f32 ? do32 : NULL,
                                               .n_rows = part ? dn : NULL,
                                               .n = n,
                                               .hidden = H,
                                               .inter = I};
                    char what[192];
                    snprintf(what, sizeof what, "ffn %s %dx%dx%d rows %d %s%s%s", s_dtype_name(dt),
                             (int)n, (int)H, (int)I, (int)rows, part ? "(device n_rows) " : "",
                             in_place ? "in place" : "out of place", f32 ? " + out_f32" : "");
                    uint16_t *got[2] = {NULL, NULL}, *gx = NULL;
                    float *go[2] = {NULL, NULL};
                    int rc = 0;
                    for (int run = 0; run < 2; run++) {
                        /* x fresh (in place, the last run wrote it), sentinels in the outputs */
                        KERN_CUDA_FATAL(cudaMemcpy(dx, xin, nh * 2, cudaMemcpyHostToDevice));
                        if (!in_place)
                            KERN_CUDA_FATAL(cudaMemcpy(dy, ysent, nh * 2, cudaMemcpyHostToDevice));
                        if (f32)
                            KERN_CUDA_FATAL(
                                cudaMemcpy(do32, osent, nh * 4, cudaMemcpyHostToDevice));
                        com_error_t err = {0};
                        rc = kern_ffn_cuda(&a, g_st, &err);
                        CHECK_MSG(rc == 0, "%s: %d %s", what, rc, err.msg);
                        if (rc != 0)
                            break;
                        got[run] = s_down_raw(y, nh * 2);
                        if (f32)
                            go[run] = s_down_raw(do32, nh * 4);
                        if (run == 0 && !in_place)
                            gx = s_down_raw(dx, nh * 2);
                    }
                    if (rc == 0) {
                        for (size_t i = 0; i < nh; i++)
                            yf[i] = s_from_bits16(got[0][i], dt);
                        s_cmp(what, yf, ref, nr, atol, rtol);
                        const double wy = s_worst_ratio(yf, ref, nr, atol, rtol);
                        worst_y = wy > worst_y ? wy : worst_y;
                        size_t bad = 0;
                        for (size_t i = 0; i < nr; i++)
                            bad += !isfinite(yf[i]);
                        CHECK_MSG(bad == 0, "%s: %zu of y's live elements not finite", what, bad);
                        bad = 0;
                        for (size_t i = nr; i < nh; i++)
                            bad += got[0][i] != s_sentinel16(i);
                        CHECK_MSG(bad == 0, "%s: %zu elements past row %d written (y)", what, bad,
                                  (int)rows);
                        CHECK_MSG(memcmp(got[0], got[1], nh * 2) == 0, "%s: second run differs (y)",
                                  what);
                        if (gx)
                            CHECK_MSG(memcmp(gx, xin, nh * 2) == 0, "%s: x changed", what);
                        if (base)
                            CHECK_MSG(memcmp(got[0], base, nr * 2) == 0,
                                      "%s: y differs from the plain mode's (n_rows NULL, out of "
                                      "place, no out_f32)",
                                      what);
                        if (f32) {
                            char what32[208];
                            snprintf(what32, sizeof what32, "%s: out_f32", what);
                            s_cmp(what32, go[0], ref, nr, atol, rtol);
                            const double wo = s_worst_ratio(go[0], ref, nr, atol, rtol);
                            worst_o = wo > worst_o ? wo : worst_o;
                            size_t nonfinite = 0, stale = 0, unrounded = 0;
                            for (size_t i = 0; i < nr; i++) {
                                nonfinite += !isfinite(go[0][i]);
                                unrounded += got[0][i] != s_bits16(go[0][i], dt);
                            }
                            for (size_t i = nr; i < nh; i++) {
                                uint32_t u;
                                memcpy(&u, &go[0][i], sizeof u);
                                stale += u != s_sentinel32(i);
                            }
                            CHECK_MSG(nonfinite == 0,
                                      "%s: %zu of out_f32's live elements not finite", what,
                                      nonfinite);
                            CHECK_MSG(unrounded == 0,
                                      "%s: %zu elements of y not out_f32 rounded to %s", what,
                                      unrounded, s_dtype_name(dt));
                            CHECK_MSG(stale == 0, "%s: %zu elements past row %d written (out_f32)",
                                      what, stale, (int)rows);
                            CHECK_MSG(memcmp(go[0], go[1], nh * 4) == 0,
                                      "%s: second run differs (out_f32)", what);
                        }
                        n_runs++;
                    }
                    if (mode == 0 && rc == 0)
                        base = got[0], got[0] = NULL;
                    free(got[0]), free(got[1]), free(go[0]), free(go[1]), free(gx);
                }
                free(base);
            }
            free(x), free(ref), free(xb), free(xin), free(ysent), free(osent), free(yf);
            cudaFree(dx), cudaFree(dy), cudaFree(do32), cudaFree(dn);
        }
        printf("ffn %s hidden %d inter %d: %d runs (n x n_rows x in place x "
               "out_f32) checked, worst |diff| / tolerance %.3f (y), %.3f (out_f32)\n",
               s_dtype_name(dt), (int)H, (int)I, n_runs, worst_y, worst_o);
        free(w1), free(w2), free(b1), free(b2), free(g), free(be);
        cudaFree(dw1), cudaFree(dw2), cudaFree(db1), cudaFree(db2), cudaFree(dg), cudaFree(dbe);
    }
}

/* The arguments kern_ffn_cuda must refuse with COM_EINVAL, nothing enqueued (y keeps its
 * sentinel): unsupported shapes, dtype, eps < 0, a missing operand,
 * and operands below the alignment the kernel reads them with (y, x, w1, w2, out_f32: 16 bytes,
 * for TMA and vector stores; b1: 4). Then the same call with good arguments runs (where
 * supported), so the refusals are not those of an op that refuses everything. After test_ffn_dt:
 * bf16 is prepared. */
static void s_ffn_refusals(void) {
    const int32_t H = 384, I = 128, n = 64;
    const size_t nh = (size_t)n * H;
    uint16_t *dx = s_dev(nh * 2), *dy = s_dev(nh * 2), *dw = s_dev((size_t)1536 * 768 * 2);
    uint16_t *db = s_dev(1536 * 2);
    float *df = s_dev(1536 * 4), *do32 = s_dev(nh * 4);
    KERN_CUDA_FATAL(cudaMemset(dx, 0, nh * 2));
    KERN_CUDA_FATAL(cudaMemset(dw, 0, (size_t)1536 * 768 * 2));
    KERN_CUDA_FATAL(cudaMemset(db, 0, 1536 * 2));
    KERN_CUDA_FATAL(cudaMemset(df, 0, 1536 * 4));
    uint16_t *ysent = malloc(nh * 2);
    for (size_t i = 0; i < nh; i++)
        ysent[i] = s_sentinel16(i);
    KERN_CUDA_FATAL(cudaMemcpy(dy, ysent, nh * 2, cudaMemcpyHostToDevice));
    const kern_ffn_args_t good = {.dtype = KERN_DTYPE_BF16,
                                  .y = dy,
                                  .x = dx,
                                  .w1 = dw,
                                  .b1 = db,
                                  .w2 = dw,
                                  .b2 = db,
                                  .gamma = df,
                                  .beta = df,
                                  .eps = 1e-12f,
                                  .out_f32 = do32,
                                  .n_rows = NULL,
                                  .n = n,
                                  .hidden = H,
                                  .inter = I};
    enum { kCases = 21 };
    kern_ffn_args_t bad[kCases];
    const char *why[kCases];
    for (int i = 0; i < kCases; i++)
        bad[i] = good, why[i] = "?";
    int k = 0;
    bad[k].hidden = 768, why[k++] = "hidden 768";
    bad[k].hidden = 0, why[k++] = "hidden 0";
    bad[k].inter = 100, why[k++] = "inter 100 (not a multiple of 64)";
    bad[k].inter = 0, why[k++] = "inter 0";
    bad[k].n = -1, why[k++] = "n -1";
    bad[k].dtype = (kern_dtype_t)7, why[k++] = "dtype 7";
    bad[k].eps = -1.0f, why[k++] = "eps -1";
    bad[k].y = NULL, why[k++] = "y NULL";
    bad[k].x = NULL, why[k++] = "x NULL";
    bad[k].w1 = NULL, why[k++] = "w1 NULL";
    bad[k].b1 = NULL, why[k++] = "b1 NULL";
    bad[k].w2 = NULL, why[k++] = "w2 NULL";
    bad[k].b2 = NULL, why[k++] = "b2 NULL";
    bad[k].gamma = NULL, why[k++] = "gamma NULL";
    bad[k].beta = NULL, why[k++] = "beta NULL";
    bad[k].y = dy + 1, why[k++] = "y 2-byte aligned";
    bad[k].x = dx + 1, why[k++] = "x 2-byte aligned";
    bad[k].w1 = dw + 4, why[k++] = "w1 8-byte aligned";
    bad[k].b1 = db + 1, why[k++] = "b1 2-byte aligned";
    bad[k].w2 = dw + 4, why[k++] = "w2 8-byte aligned";
    bad[k].out_f32 = do32 + 1, why[k++] = "out_f32 4-byte aligned";
    CHECK(k == kCases);
    com_error_t err = {0};
    for (int i = 0; i < kCases; i++) {
        const int rc = kern_ffn_cuda(&bad[i], g_st, &err);
        CHECK_MSG(rc == COM_EINVAL, "kern_ffn_cuda with %s: %d, expected COM_EINVAL (%d)", why[i],
                  rc, COM_EINVAL);
    }
    CHECK(kern_ffn_cuda(NULL, g_st, &err) == COM_EINVAL);
    /* the wave the engine fuses from: 128-row tiles, one CTA an SM */
    int dev = 0, sms = 0;
    KERN_CUDA_FATAL(cudaGetDevice(&dev));
    KERN_CUDA_FATAL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK_MSG(kern_ffn_wave_rows() == 128 * sms, "kern_ffn_wave_rows() = %d, %d SMs",
              (int)kern_ffn_wave_rows(), sms);
    KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
    uint16_t *got = s_down_raw(dy, nh * 2);
    CHECK_MSG(memcmp(got, ysent, nh * 2) == 0, "ffn: a refused call wrote y");
    free(got);
    CHECK(!kern_ffn_supported(KERN_DTYPE_BF16, 768, 3072));
    CHECK(!kern_ffn_supported(KERN_DTYPE_BF16, 384, 100));
    CHECK(!kern_ffn_supported(KERN_DTYPE_BF16, 384, 0));
    CHECK(!kern_ffn_supported((kern_dtype_t)7, 384, 1536));
    const int rp = kern_ffn_prepare((kern_dtype_t)7, &err);
    CHECK_MSG(rp == COM_EINVAL || (!s_sm90() && rp == COM_EUNSUPPORTED),
              "kern_ffn_prepare(dtype 7): %d", rp);
    if (kern_ffn_supported(KERN_DTYPE_BF16, H, I)) { /* the good call runs: y written, finite */
        const int rc = kern_ffn_cuda(&good, g_st, &err);
        CHECK_MSG(rc == 0, "kern_ffn_cuda, good arguments: %d %s", rc, err.msg);
        got = s_down_raw(dy, nh * 2);
        size_t bad_y = 0;
        for (size_t i = 0; i < nh; i++)
            bad_y += !isfinite(kern_bf16_to_f32(got[i]));
        CHECK_MSG(bad_y == 0, "ffn, good arguments: %zu elements of y not finite", bad_y);
        free(got);
    }
    free(ysent);
    cudaFree(dx), cudaFree(dy), cudaFree(dw), cudaFree(db), cudaFree(df), cudaFree(do32);
}

static void test_ffn(void) {
    s_both_dtypes(test_ffn_dt);
    s_ffn_refusals();
}

/* ---- pooling ---- */
/* kern_pool_folded_cuda (per dtype): x is random in [-3, 3] plus a per-row offset in [-8, 8]
 * (rows whose mean is far from 0), its partials taken from the fp32 values and x stored rounded to
 * dt, as a folded sublayer end writes them; the reference normalises the rounded x with those
 * partials (kern_row_stats_normalize_ref) and pools it. Both sides get the same statistics bits
 * (row_stats.h's fixed order) and the same x, so only the fp32 rounding order differs: the mean's
 * summation (row lanes, 256-token chunks and the 8 CTAs' parts against one serial sum) and
 * gamma / beta applied once to the pooled value rather than to every token. An fp32 emulation of
 * the kernel's order on these cases stays within 1.4e-6 of the reference (outputs of rms ~0.6; 1e-7
 * normalised), so 1e-5 relative plus 1e-5 x the reference's rms leaves a margin of 5 or more
 * (measured with the one-block kernel; the cluster adds 8 partial sums in rank order). Lengths 1 to
 * 2300 (shorter than the cluster: CTAs without tokens; 2300: a CTA's part past one chunk of
 * statistics); hidden 64 to 1024 (32 to 2 row lanes); dim 37 keeps part of a column group. */
static void test_pool_folded_dt(kern_dtype_t dt) {
    static const int32_t lens[] = {1, 7, 130, 512, 1, 1030, 2300};
    const int32_t ns = 7;
    int32_t cu[8];
    const int32_t n = s_cu(lens, ns, cu);
    static const int32_t hiddens[] = {64, 384, 768, 1024};
    const bool f16 = dt == KERN_DTYPE_F16;
    const float eps = 1e-12f;
    for (int hi = 0; hi < 4; hi++) {
        const int32_t H = hiddens[hi];
        const size_t nh = (size_t)n * H, np = (size_t)n * (H / KERN_STATS_COLS) * 2;
        float *x = malloc(nh * sizeof *x), *xr = malloc(nh * sizeof *xr);
        float *h = malloc(nh * sizeof *h), *part = malloc(np * sizeof *part);
        for (int32_t t = 0; t < n; t++) {
            const float off = com_prng_uniform(&g_rng, -8, 8);
            for (int32_t j = 0; j < H; j++) {
                const size_t i = (size_t)t * H + j;
                x[i] = off + com_prng_uniform(&g_rng, -3, 3);
                xr[i] = f16 ? com_half_to_f32(com_half_from_f32(x[i]))
                            : kern_bf16_to_f32(kern_bf16_from_f32(x[i]));
            }
        }
        kern_row_stats_ref(part, x, n, H);
        float *g = s_rand_bf(H, 0.5f, 1.5f), *b = s_rand_bf(H, -1, 1);
        kern_row_stats_normalize_ref(h, xr, part, g, b, n, H, eps);
        uint16_t *dx = s_up_16(x, nh, f16);
        float *dpart = s_up(part, np * 4), *dg = s_up(g, (size_t)H * 4),
              *db = s_up(b, (size_t)H * 4);
        int32_t *dcu = s_up(cu, sizeof cu), *dns = s_up(&ns, 4);
        float *dout = s_dev((size_t)ns * H * 4);
        for (int mode = 0; mode < 3; mode++)
            for (int norm = 0; norm < 2; norm++)
                for (int dsel = 0; dsel < 2; dsel++) {
                    const int32_t D = dsel ? 37 : H;
                    float *ref = malloc((size_t)ns * D * sizeof *ref);
                    kern_pool_ref(ref, h, cu, ns, H, (kern_pool_mode_t)mode, D, norm != 0);
                    int32_t *dd = s_up(&D, 4), *dnorm = s_up(&norm, 4);
                    s_poison(dout, (size_t)ns * H * 4);
                    com_error_t err = {0};
                    int rc =
                        kern_pool_folded_cuda(dout, dx, dt, dpart, dg, db, eps, dcu, dns, dd, dnorm,
                                              NULL, ns, H, (kern_pool_mode_t)mode, g_st, &err);
                    CHECK_MSG(rc == 0, "pool_folded_cuda: %s", err.msg);
                    float *got = s_down_f32(dout, (size_t)ns * D);
                    char what[96];
                    snprintf(what, sizeof what, "pool folded %s H=%d mode %d norm %d dim %d",
                             s_dtype_name(dt), (int)H, mode, norm, (int)D);
                    s_cmp(what, got, ref, (size_t)ns * D, 1e-5 * s_rms(ref, (size_t)ns * D), 1e-5);
                    free(got), free(ref);
                    cudaFree(dd), cudaFree(dnorm);
                }
        if (H == 64) { /* refused before anything is enqueued */
            com_error_t err = {0};
            CHECK(kern_pool_folded_cuda(dout, dx, dt, dpart, dg, db, eps, dcu, dns, dns, dns, NULL,
                                        ns, 96, KERN_POOL_MEAN, g_st, &err) == COM_EINVAL);
            CHECK(kern_pool_folded_cuda(dout, dx, (kern_dtype_t)2, dpart, dg, db, eps, dcu, dns,
                                        dns, dns, NULL, ns, H, KERN_POOL_MEAN, g_st,
                                        &err) == COM_EINVAL);
            CHECK(kern_pool_folded_cuda(dout, dx, dt, NULL, dg, db, eps, dcu, dns, dns, dns, NULL,
                                        ns, H, KERN_POOL_MEAN, g_st, &err) == COM_EINVAL);
            CHECK(kern_pool_folded_cuda(dout, dx + 4, dt, dpart, dg, db, eps, dcu, dns, dns, dns,
                                        NULL, ns, H, KERN_POOL_MEAN, g_st, &err) == COM_EINVAL);
            CHECK(kern_pool_folded_cuda(dout, dx, dt, dpart + 1, dg, db, eps, dcu, dns, dns, dns,
                                        NULL, ns, H, KERN_POOL_MEAN, g_st, &err) == COM_EINVAL);
            CHECK(kern_pool_folded_cuda(dout, dx, dt, dpart, dg, db, eps, dcu, dns, dns, dns, NULL,
                                        ns, 8256, KERN_POOL_MEAN, g_st, &err) == COM_EUNSUPPORTED);
        }
        free(x), free(xr), free(h), free(part), free(g), free(b);
        cudaFree(dx), cudaFree(dpart), cudaFree(dg), cudaFree(db);
        cudaFree(dcu), cudaFree(dns), cudaFree(dout);
    }
    printf("pool folded (%s): CLS / mean / last x normalize x Matryoshka checked\n",
           s_dtype_name(dt));
}

/* kern_pool_rows_cuda against kern_pool_rows_ref: bit copies of each sequence's first or last
 * row of two arrays, the rows past n_seqs zeroed (the destination poisoned first), for several
 * n_seqs read from device memory by one launch shape; misaligned or unsupported arguments
 * refused. */
static void test_pool_rows(void) {
    static const int32_t lens[] = {1, 7, 64, 1, 130, 2, 1001, 3};
    enum { NS = 8, MAX_ROWS = 11 };
    int32_t cu[NS + 1];
    const int32_t n = s_cu(lens, NS, cu);
    static const int32_t hiddens[] = {8, 384, 768};
    for (int hi = 0; hi < 3; hi++) {
        const int32_t H = hiddens[hi];
        const size_t in_bytes = (size_t)n * H * 2, out_bytes = (size_t)MAX_ROWS * H * 2;
        uint16_t *a = malloc(in_bytes), *b = malloc(in_bytes);
        for (size_t i = 0; i < (size_t)n * H; i++)
            a[i] = (uint16_t)com_prng_below(&g_rng, 65536),
            b[i] = (uint16_t)com_prng_below(&g_rng, 65536);
        uint16_t *da = s_up(a, in_bytes), *db = s_up(b, in_bytes), *oa = s_dev(out_bytes),
                 *ob = s_dev(out_bytes);
        int32_t *dcu = s_up(cu, sizeof cu);
        uint16_t *ra = malloc(out_bytes), *rb = malloc(out_bytes);
        for (int mode = 0; mode < 2; mode++)
            for (int32_t ns = 0; ns <= NS; ns += ns < 2 ? 1 : 3) {
                const kern_pool_mode_t pm = mode ? KERN_POOL_LAST : KERN_POOL_CLS;
                int32_t *dns = s_up(&ns, 4);
                s_poison(oa, out_bytes), s_poison(ob, out_bytes);
                com_error_t err = {0};
                CHECK_MSG(
                    kern_pool_rows_cuda(oa, da, ob, db, dcu, dns, MAX_ROWS, H, pm, g_st, &err) == 0,
                    "pool_rows_cuda: %s", err.msg);
                kern_pool_rows_ref(ra, a, rb, b, cu, ns, MAX_ROWS, H, pm);
                uint16_t *ga = s_down_raw(oa, out_bytes), *gb = s_down_raw(ob, out_bytes);
                CHECK_MSG(memcmp(ga, ra, out_bytes) == 0 && memcmp(gb, rb, out_bytes) == 0,
                          "pool_rows H=%d mode %s n_seqs %d differs from the reference", (int)H,
                          mode ? "last" : "CLS", (int)ns);
                free(ga), free(gb);
                cudaFree(dns);
            }
        free(a), free(b), free(ra), free(rb);
        cudaFree(da), cudaFree(db), cudaFree(oa), cudaFree(ob), cudaFree(dcu);
    }
    { /* refused, nothing enqueued: mean pooling, a width not of 16-byte pieces, misalignment */
        uint16_t *d = s_dev(4096);
        int32_t *d1 = s_up(&n, 4);
        com_error_t err = {0};
        CHECK(kern_pool_rows_cuda(d, d + 1024, d + 512, d + 1536, d1, d1, 1, 8, KERN_POOL_MEAN,
                                  g_st, &err) == COM_EINVAL);
        CHECK(kern_pool_rows_cuda(d, d + 1024, d + 512, d + 1536, d1, d1, 1, 12, KERN_POOL_CLS,
                                  g_st, &err) == COM_EINVAL);
        CHECK(kern_pool_rows_cuda(d + 1, d + 1024, d + 512, d + 1536, d1, d1, 1, 8, KERN_POOL_CLS,
                                  g_st, &err) == COM_EINVAL);
        cudaFree(d), cudaFree(d1);
    }
    printf("pool rows: CLS / last rows of two arrays gathered, the rest zeroed (bit-exact)\n");
}

static void test_pool(void) {
    /* lengths around the kernel's 8-deep unroll; hidden sizes for scalar columns (7), float4
     * columns in several row lanes (384) and one lane looping over column groups (4100) */
    static const int32_t lens[] = {1, 7, 64, 1, 130, 2, 1001};
    const int32_t ns = 7;
    int32_t cu[8];
    const int32_t n = s_cu(lens, ns, cu);
    static const int32_t hiddens[] = {7, 384, 4100};
    for (int hi = 0; hi < 3; hi++) {
        const int32_t H = hiddens[hi];
        float *h = s_rand_bf((size_t)n * H, -2, 2);
        float *dh = s_up(h, (size_t)n * H * 4);
        int32_t *dcu = s_up(cu, sizeof cu), *dns = s_up(&ns, 4);
        for (int mode = 0; mode < 3; mode++)
            for (int norm = 0; norm < 2; norm++)
                for (int dsel = 0; dsel < 2; dsel++) {
                    const int32_t D = dsel ? (H > 5 ? 5 : H) : H;
                    float *ref = malloc((size_t)ns * D * sizeof *ref);
                    kern_pool_ref(ref, h, cu, ns, H, (kern_pool_mode_t)mode, D, norm != 0);
                    int32_t *dd = s_up(&D, 4), *dnorm = s_up(&norm, 4);
                    float *dout = s_dev((size_t)n * H * 4);
                    com_error_t err = {0};
                    int rc = kern_pool_cuda(dout, dh, dcu, dns, dd, dnorm, NULL, n, H,
                                            (kern_pool_mode_t)mode, g_st, &err);
                    CHECK_MSG(rc == 0, "pool_cuda: %s", err.msg);
                    float *got = s_down_f32(dout, (size_t)ns * D);
                    char what[80];
                    snprintf(what, sizeof what, "pool H=%d mode %d norm %d dim %d", (int)H, mode,
                             norm, (int)D);
                    s_cmp(what, got, ref, (size_t)ns * D, 1e-5, 1e-4);
                    free(got), free(ref);
                    cudaFree(dd), cudaFree(dnorm), cudaFree(dout);
                }
        if (H == 384) { /* into mapped pinned host memory, as the engine's staging slots, with
                           the completion flags the engine waits on: flags[s] = epoch for the
                           ns sequences, the flag past them untouched */
            float *host = NULL, *mapped = NULL;
            uint32_t *flags = NULL, *flags_dev = NULL;
            CHECK(cudaHostAlloc((void **)&host, (size_t)ns * H * 4, cudaHostAllocMapped) ==
                  cudaSuccess);
            CHECK(cudaHostGetDevicePointer((void **)&mapped, host, 0) == cudaSuccess);
            CHECK(cudaHostAlloc((void **)&flags, (ns + 1) * 4, cudaHostAllocMapped) == cudaSuccess);
            CHECK(cudaHostGetDevicePointer((void **)&flags_dev, flags, 0) == cudaSuccess);
            const int32_t one = 1, epoch = 0x5eed;
            int32_t *dd = s_up(&H, 4), *dnorm = s_up(&one, 4), *depoch = s_up(&epoch, 4);
            for (int32_t s = 0; s <= ns; s++)
                flags[s] = 7;
            const kern_pool_done_t done = {flags_dev, depoch};
            float *ref = malloc((size_t)ns * H * sizeof *ref);
            kern_pool_ref(ref, h, cu, ns, H, KERN_POOL_MEAN, H, true);
            com_error_t err = {0};
            CHECK_MSG(kern_pool_cuda(mapped, dh, dcu, dns, dd, dnorm, &done, n, H, KERN_POOL_MEAN,
                                     g_st, &err) == 0,
                      "pool_cuda mapped: %s", err.msg);
            CHECK(cudaStreamSynchronize(g_st) == cudaSuccess);
            s_cmp("pool mean L2 into mapped host memory", host, ref, (size_t)ns * H, 1e-5, 1e-4);
            for (int32_t s = 0; s <= ns; s++)
                CHECK_MSG(flags[s] == (s < ns ? (uint32_t)epoch : 7u),
                          "pool completion flag %d: %u, want %u", (int)s, flags[s],
                          s < ns ? (unsigned)epoch : 7u);
            free(ref);
            cudaFree(dd), cudaFree(dnorm), cudaFree(depoch), cudaFreeHost(host),
                cudaFreeHost(flags);
        }
        free(h);
        cudaFree(dh), cudaFree(dcu), cudaFree(dns);
    }
    { /* wider than the kernel keeps in registers: refused, not wrong */
        com_error_t err = {0};
        int32_t *d1 = s_up(&ns, 4);
        CHECK(kern_pool_cuda((float *)d1, (const float *)d1, d1, d1, d1, d1, NULL, 1, 8196,
                             KERN_POOL_MEAN, g_st, &err) == COM_EUNSUPPORTED);
        const kern_pool_done_t half = {(uint32_t *)d1, NULL}; /* flags without an epoch */
        CHECK(kern_pool_cuda((float *)d1, (const float *)d1, d1, d1, d1, d1, &half, 1, 8,
                             KERN_POOL_MEAN, g_st, &err) == COM_EINVAL);
        cudaFree(d1);
    }
    printf("pool: CLS / mean / last x normalize x Matryoshka checked\n");
    s_both_dtypes(test_pool_folded_dt);
    test_pool_rows();
}

/* ---- output conversion ---- */
static void test_convert(void) {
    static const int64_t sizes[] = {1, 5, 1000, 4099};
    for (size_t si = 0; si < 4; si++) {
        const int64_t n = sizes[si];
        float *x = malloc((size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++)
            x[i] = com_prng_uniform(&g_rng, -3, 3) * (i % 7 == 0 ? 3e4f : i % 11 == 0 ? 1e-6f : 1);
        if (n > 4)
            x[1] = 70000.0f, x[2] = -1e-8f, x[3] = 65504.0f, x[4] = 3.4e38f;
        float *dx = s_up(x, (size_t)n * 4);
        void *dout = s_dev((size_t)n * 4);
        com_error_t err = {0};
        CHECK(kern_convert_cuda(dout, dx, n, KERN_OUT_F32, g_st, &err) == 0);
        float *got = s_down_f32(dout, (size_t)n);
        CHECK_MSG(memcmp(got, x, (size_t)n * 4) == 0, "convert f32 n=%lld not exact", (long long)n);
        free(got);
        s_poison(dout, (size_t)n * 4);
        CHECK(kern_convert_cuda(dout, dx, n, KERN_OUT_F16, g_st, &err) == 0);
        uint16_t *h16 = malloc((size_t)n * 2), *ref = malloc((size_t)n * 2);
        KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
        KERN_CUDA_FATAL(cudaMemcpy(h16, dout, (size_t)n * 2, cudaMemcpyDeviceToHost));
        com_half_from_f32_n(x, ref, (size_t)n);
        size_t bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += h16[i] != ref[i];
        CHECK_MSG(bad == 0, "convert f16 n=%lld: %zu elements differ from com_half_from_f32",
                  (long long)n, bad);
        s_poison(dout, (size_t)n * 4);
        CHECK(kern_convert_cuda(dout, dx, n, KERN_OUT_BF16, g_st, &err) == 0);
        KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
        KERN_CUDA_FATAL(cudaMemcpy(h16, dout, (size_t)n * 2, cudaMemcpyDeviceToHost));
        bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += h16[i] != kern_bf16_from_f32(x[i]);
        CHECK_MSG(bad == 0, "convert bf16 n=%lld: %zu elements differ from kern_bf16_from_f32",
                  (long long)n, bad);
        free(h16), free(ref), free(x);
        cudaFree(dx), cudaFree(dout);
    }
    printf("convert: float32, float16 and bfloat16 checked (bit-exact)\n");
}

/* ---- device-side copy, from device memory and from mapped host memory ---- */
static void test_copy(void) {
    static const size_t sizes[] = {4, 12, 16, 20, 2068, 4096 * 16 + 12, 262164};
    const size_t cap = 262164;
    uint8_t *src_h = NULL;
    KERN_CUDA_FATAL(cudaHostAlloc((void **)&src_h, cap, cudaHostAllocMapped));
    void *src_mapped = NULL;
    KERN_CUDA_FATAL(cudaHostGetDevicePointer(&src_mapped, src_h, 0));
    for (size_t i = 0; i < cap; i++)
        src_h[i] = (uint8_t)com_prng_below(&g_rng, 256);
    void *src_dev = s_up(src_h, cap);
    uint8_t *dst = s_dev(cap + 64), *got = malloc(cap + 64), *want = malloc(cap + 64);
    com_error_t err = {0};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int mapped = 0; mapped < 2; mapped++) {
            const size_t n = sizes[si];
            KERN_CUDA_FATAL(cudaMemset(dst, 0xa5, cap + 64));
            CHECK(kern_copy_cuda(dst, mapped ? src_mapped : src_dev, n, g_st, &err) == 0);
            KERN_CUDA_FATAL(cudaStreamSynchronize(g_st));
            KERN_CUDA_FATAL(cudaMemcpy(got, dst, n + 64, cudaMemcpyDeviceToHost));
            memcpy(want, src_h, n);
            memset(want + n, 0xa5, 64); /* nothing past the end is written */
            CHECK_MSG(memcmp(got, want, n + 64) == 0, "copy of %zu bytes (%s source) differs", n,
                      mapped ? "mapped host" : "device");
        }
    /* misaligned pointers and lengths are refused, nothing enqueued */
    CHECK(kern_copy_cuda(dst + 4, src_dev, 16, g_st, &err) == COM_EINVAL);
    CHECK(kern_copy_cuda(dst, (uint8_t *)src_dev + 8, 16, g_st, &err) == COM_EINVAL);
    CHECK(kern_copy_cuda(dst, src_dev, 18, g_st, &err) == COM_EINVAL);
    CHECK(kern_copy_cuda(dst, src_dev, 0, g_st, &err) == 0);
    free(got), free(want);
    cudaFree(dst), cudaFree(src_dev), cudaFreeHost(src_h);
    printf("copy: device and mapped host sources checked (bit-exact, nothing past the end)\n");
}

/* kernels_cuda [NAME...]: every test, or only the named ones (a quick check of one kernel on
 * the GPU machine; ctest runs them all). A test brings the one it needs with it: linear_ln and
 * linear_fold check the coverage of our GEMM configurations that linear records, linear_pdl
 * skips the configurations linear_ln finds fusing the LayerNorm (they plan nothing else). */
int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*run)(void);
        const char *needs; /* a test earlier in the table, run before it */
    } tests[] = {{"embed", test_embed, NULL},
                 {"linear", test_linear, NULL},
                 {"linear_ln", test_linear_ln, "linear"},
                 {"linear_fold", test_linear_fold, "linear"},
                 {"linear_pdl", test_linear_pdl, "linear_ln"},
                 {"bias_gelu", test_bias_gelu, NULL},
                 {"add_layernorm", test_add_layernorm, NULL},
                 {"attention", test_attention, NULL},
                 {"qkv_attention", test_qkv_attention, NULL},
                 {"ffn", test_ffn, NULL},
                 {"pool", test_pool, NULL},
                 {"convert", test_convert, NULL},
                 {"copy", test_copy, NULL}};
    const size_t n_tests = sizeof tests / sizeof *tests;
    kern_blas_reexec_for_core(); /* the references' GEMMs (kernels/blas_core.h) */
    for (int a = 1; a < argc; a++) {
        size_t t = 0;
        while (t < n_tests && strcmp(argv[a], tests[t].name) != 0)
            t++;
        if (t == n_tests) {
            fprintf(stderr, "kernels_cuda: no test \"%s\"\n", argv[a]);
            return 2;
        }
    }
    int n_dev = 0;
    cudaError_t ce = cudaGetDeviceCount(&n_dev);
    if (ce != cudaSuccess || n_dev < 1) {
        printf("SKIPPED: no CUDA device (%s)\n",
               ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return TEST_SKIP_CODE;
    }
    struct cudaDeviceProp prop;
    KERN_CUDA_FATAL(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    com_prng_seed(&g_rng, 20261201);
    KERN_CUDA_FATAL(cudaStreamCreate(&g_st));
    bool chosen[sizeof tests / sizeof *tests];
    for (size_t t = 0; t < n_tests; t++) {
        chosen[t] = argc == 1;
        for (int a = 1; a < argc; a++)
            chosen[t] |= strcmp(argv[a], tests[t].name) == 0;
    }
    for (size_t t = n_tests; t-- > 0;) /* backwards: a prerequisite's own prerequisite too */
        for (size_t u = 0; u < t && chosen[t] && tests[t].needs; u++)
            chosen[u] |= strcmp(tests[u].name, tests[t].needs) == 0;
    for (size_t t = 0; t < n_tests; t++)
        if (chosen[t])
            tests[t].run();
    KERN_CUDA_FATAL(cudaStreamDestroy(g_st));
    return test_finish();
}
