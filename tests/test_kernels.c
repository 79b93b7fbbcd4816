/* tests/test_kernels.c — every plain-C kernel (the headers in kernels/) against a straightforward,
 * independent computation in double precision, on seeded random inputs (common/prng.h) over
 * awkward shapes: 1 token, odd sizes, sequences of length 1, hidden not a multiple of 8, a long
 * batch; output buffers are poisoned with NaN before each run so unwritten elements show. Also
 * checks that splitting rows / attention units across parts gives identical bits, the accuracy
 * of the vectorisable exp/erf in kernels/kern_math.h, and the folded LayerNorm's row statistics
 * (kernels/row_stats.c) against double precision and kern_add_layernorm_ref. Single-threaded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/prng.h"
#include "kernels/add_layernorm.h"
#include "kernels/attention.h"
#include "kernels/bias_gelu.h"
#include "kernels/embed_layernorm.h"
#include "kernels/kern_math.h"
#include "kernels/linear.h"
#include "kernels/pool.h"
#include "kernels/row_stats.h"
#include "tests/test_util.h"

static com_prng_t g_rng;

static float *s_rand(size_t n, float lo, float hi) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = com_prng_uniform(&g_rng, lo, hi);
    return p;
}

static float *s_poisoned(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

static float *s_from_double(const double *d, size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)d[i];
    return p;
}

static void s_check(const char *what, const float *got, const double *ref, size_t n, double atol,
                    double rtol) {
    float *r = s_from_double(ref, n);
    test_cmp_t c = test_compare_f32(what, got, r, n, atol, rtol);
    CHECK_MSG(c.n_bad == 0, "%s: %zu bad of %zu, max |diff| %.3g", what, c.n_bad, n, c.max_abs);
    free(r);
}

/* cu_seqlens from lengths; returns total */
static int32_t s_cu(const int32_t *lens, int32_t n, int32_t *cu) {
    cu[0] = 0;
    for (int32_t i = 0; i < n; i++)
        cu[i + 1] = cu[i] + lens[i];
    return cu[n];
}

static void s_ln_ref(double *x, const float *g, const float *b, int32_t n, double eps) {
    double mean = 0, var = 0;
    for (int32_t i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (int32_t i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    for (int32_t i = 0; i < n; i++)
        x[i] = (x[i] - mean) / sqrt(var + eps) * g[i] + b[i];
}

static void test_math(void) {
    double worst_e = 0, worst_erf = 0;
    for (int i = 0; i <= 200000; i++) {
        float x = -87.0f + 175.0f * (float)i / 200000.0f;
        if (x > 88.3f)
            break;
        double ref = exp((double)x), got = kern_expf(x);
        double rel = fabs(got - ref) / ref;
        worst_e = rel > worst_e ? rel : worst_e;
    }
    for (int i = 0; i <= 200000; i++) {
        float x = -7.0f + 14.0f * (float)i / 200000.0f;
        double d = fabs((double)kern_erff(x) - erf((double)x));
        worst_erf = d > worst_erf ? d : worst_erf;
    }
    printf("kern_expf max rel error %.3g, kern_erff max abs error %.3g\n", worst_e, worst_erf);
    CHECK(worst_e < 4e-7);
    CHECK(worst_erf < 4e-7);
    CHECK(kern_expf(-200.0f) == 0.0f);
    CHECK(isinf(kern_expf(100.0f)));
    CHECK(kern_expf(0.0f) == 1.0f);
    float xs[40];
    for (int i = 0; i < 40; i++)
        xs[i] = (float)(i * 7 % 40) - 20.0f;
    CHECK(kern_max(xs, 40) == 19.0f);
    CHECK(kern_max(xs, 1) == xs[0]);
    CHECK(fabsf(kern_sum(xs, 40) - (-20.0f)) < 1e-5f);
}

static void test_embed_layernorm(void) {
    static const int32_t cases[][6] = {{1, 1}, {3, 1, 5, 3}, {4, 17, 1, 40, 2}, {1, 64}};
    static const int32_t hiddens[] = {1, 7, 33, 384};
    const int32_t V = 50, P = 64, TV = 2;
    for (size_t hc = 0; hc < sizeof hiddens / sizeof *hiddens; hc++) {
        const int32_t H = hiddens[hc];
        float *word = s_rand((size_t)V * H, -1, 1), *pos = s_rand((size_t)P * H, -1, 1);
        float *type = s_rand((size_t)TV * H, -1, 1);
        float *g = s_rand(H, 0.5f, 1.5f), *b = s_rand(H, -0.5f, 0.5f);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            const int32_t ns = cases[c][0];
            int32_t cu[8];
            const int32_t n = s_cu(&cases[c][1], ns, cu);
            int32_t *ids = malloc(n * sizeof *ids), *types = malloc(n * sizeof *types);
            for (int32_t t = 0; t < n; t++) {
                ids[t] = (int32_t)com_prng_below(&g_rng, V);
                types[t] = (int32_t)com_prng_below(&g_rng, TV);
            }
            for (int with_types = 0; with_types < 2; with_types++) {
                double *ref = calloc((size_t)n * H, sizeof *ref);
                for (int32_t s = 0; s < ns; s++)
                    for (int32_t t = cu[s]; t < cu[s + 1]; t++) {
                        int32_t ty = with_types ? types[t] : 0;
                        for (int32_t i = 0; i < H; i++)
                            ref[(size_t)t * H + i] = (double)word[ids[t] * H + i] +
                                                     pos[(t - cu[s]) * H + i] + type[ty * H + i];
                        s_ln_ref(ref + (size_t)t * H, g, b, H, 1e-12);
                    }
                float *out = s_poisoned((size_t)n * H), *out3 = s_poisoned((size_t)n * H);
                kern_embed_layernorm_ref(out, ids, with_types ? types : NULL, cu, ns, 0, n, word,
                                         pos, type, g, b, H, 1e-12f);
                char what[96];
                snprintf(what, sizeof what, "embed_layernorm H=%d case %zu types %d", (int)H, c,
                         with_types);
                s_check(what, out, ref, (size_t)n * H, 1e-5, 1e-4);
                /* three row ranges give the same bits */
                int32_t a = n / 3, bb = 2 * n / 3;
                const int32_t *tt = with_types ? types : NULL;
                kern_embed_layernorm_ref(out3, ids, tt, cu, ns, 0, a, word, pos, type, g, b, H,
                                         1e-12f);
                kern_embed_layernorm_ref(out3, ids, tt, cu, ns, a, bb, word, pos, type, g, b, H,
                                         1e-12f);
                kern_embed_layernorm_ref(out3, ids, tt, cu, ns, bb, n, word, pos, type, g, b, H,
                                         1e-12f);
                CHECK_MSG(memcmp(out, out3, (size_t)n * H * sizeof(float)) == 0, "%s split", what);
                free(ref);
                free(out);
                free(out3);
            }
            free(ids);
            free(types);
        }
        free(word);
        free(pos);
        free(type);
        free(g);
        free(b);
    }
}

static void test_linear(void) {
    static const int32_t shapes[][3] = {{1, 1, 1},    {1, 384, 384},   {7, 13, 5},
                                        {33, 31, 97}, {64, 384, 1152}, {5, 1536, 384}};
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        const int32_t n = shapes[c][0], in = shapes[c][1], out = shapes[c][2];
        float *x = s_rand((size_t)n * in, -1, 1), *w = s_rand((size_t)out * in, -0.2f, 0.2f);
        float *b = s_rand(out, -1, 1);
        for (int with_b = 0; with_b < 2; with_b++) {
            double *ref = malloc((size_t)n * out * sizeof *ref);
            for (int32_t t = 0; t < n; t++)
                for (int32_t o = 0; o < out; o++) {
                    double s = with_b ? b[o] : 0;
                    for (int32_t i = 0; i < in; i++)
                        s += (double)x[(size_t)t * in + i] * w[(size_t)o * in + i];
                    ref[(size_t)t * out + o] = s;
                }
            float *y = s_poisoned((size_t)n * out);
            kern_linear_ref(y, x, w, with_b ? b : NULL, n, in, out);
            char what[64];
            snprintf(what, sizeof what, "linear %dx%dx%d bias %d", (int)n, (int)in, (int)out,
                     with_b);
            s_check(what, y, ref, (size_t)n * out, 1e-5 * sqrt((double)in), 1e-4);
            free(ref);
            free(y);
        }
        free(x);
        free(w);
        free(b);
    }
}

static void test_bias_gelu(void) {
    static const int32_t shapes[][2] = {{1, 1}, {3, 37}, {17, 1536}};
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        const int32_t n = shapes[c][0], d = shapes[c][1];
        float *x = s_rand((size_t)n * d, -6, 6), *b = s_rand(d, -1, 1);
        for (int with_b = 0; with_b < 2; with_b++) {
            double *ref = malloc((size_t)n * d * sizeof *ref);
            for (int32_t t = 0; t < n; t++)
                for (int32_t i = 0; i < d; i++) {
                    double z = (double)x[(size_t)t * d + i] + (with_b ? b[i] : 0);
                    ref[(size_t)t * d + i] = test_gelu_erf(z);
                }
            float *y = malloc((size_t)n * d * sizeof *y);
            memcpy(y, x, (size_t)n * d * sizeof *y);
            kern_bias_gelu_ref(y, with_b ? b : NULL, n, d);
            char what[64];
            snprintf(what, sizeof what, "bias_gelu %dx%d bias %d", (int)n, (int)d, with_b);
            s_check(what, y, ref, (size_t)n * d, 2e-6, 1e-5);
            free(ref);
            free(y);
        }
        free(x);
        free(b);
    }
}

static void test_add_layernorm(void) {
    static const int32_t shapes[][2] = {{1, 1}, {1, 7}, {5, 33}, {19, 384}};
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        const int32_t n = shapes[c][0], H = shapes[c][1];
        const size_t N = (size_t)n * H;
        float *x = s_rand(N, -3, 3), *r = s_rand(N, -3, 3), *b = s_rand(H, -1, 1);
        float *g = s_rand(H, 0.5f, 1.5f), *be = s_rand(H, -0.5f, 0.5f);
        for (int mode = 0; mode < 3; mode++) { /* 0: separate out, 1: out = residual (bias),
                                                  2: out = x, no bias */
            const float *bias = mode == 2 ? NULL : b;
            double *ref = malloc(N * sizeof *ref);
            for (int32_t t = 0; t < n; t++) {
                for (int32_t i = 0; i < H; i++)
                    ref[(size_t)t * H + i] =
                        (double)x[(size_t)t * H + i] + (bias ? bias[i] : 0) + r[(size_t)t * H + i];
                s_ln_ref(ref + (size_t)t * H, g, be, H, 1e-12);
            }
            float *xc = malloc(N * sizeof *xc), *rc = malloc(N * sizeof *rc);
            memcpy(xc, x, N * sizeof *xc);
            memcpy(rc, r, N * sizeof *rc);
            float *sep = s_poisoned(N);
            float *out = mode == 0 ? sep : mode == 1 ? rc : xc;
            kern_add_layernorm_ref(out, xc, bias, rc, g, be, n, H, 1e-12f);
            char what[64];
            snprintf(what, sizeof what, "add_layernorm %dx%d mode %d", (int)n, (int)H, mode);
            s_check(what, out, ref, N, 1e-5, 1e-4);
            free(ref);
            free(xc);
            free(rc);
            free(sep);
        }
        free(x);
        free(r);
        free(b);
        free(g);
        free(be);
    }
}

/* Double-precision attention over the same layout. */
static void s_attention_dbl(const kern_attention_params_t *p, double *out, int64_t ldo,
                            const float *q, int64_t ldq, const float *k, int64_t ldk,
                            const float *v, int64_t ldv, const int32_t *cu, int32_t ns) {
    const int32_t hd = p->head_dim, grp = p->n_heads / p->n_kv_heads;
    for (int32_t s = 0; s < ns; s++) {
        const int32_t t0 = cu[s], L = cu[s + 1] - cu[s];
        double *w = malloc((size_t)L * sizeof *w);
        for (int32_t h = 0; h < p->n_heads; h++) {
            const int32_t kh = h / grp;
            for (int32_t i = 0; i < L; i++) {
                const int32_t n = p->causal ? i + 1 : L;
                double m = -INFINITY, sum = 0;
                for (int32_t j = 0; j < n; j++) {
                    double d = 0;
                    for (int32_t c = 0; c < hd; c++)
                        d += (double)q[(t0 + i) * ldq + h * hd + c] *
                             k[(t0 + j) * ldk + kh * hd + c];
                    w[j] = d * p->scale;
                    m = w[j] > m ? w[j] : m;
                }
                for (int32_t j = 0; j < n; j++)
                    sum += (w[j] = exp(w[j] - m));
                for (int32_t c = 0; c < hd; c++) {
                    double o = 0;
                    for (int32_t j = 0; j < n; j++)
                        o += w[j] * v[(t0 + j) * ldv + kh * hd + c];
                    out[(t0 + i) * ldo + h * hd + c] = o / sum;
                }
            }
        }
        free(w);
    }
}

static void test_attention(void) {
    typedef struct {
        int32_t heads, kv, hd;
        bool causal;
        bool packed;
    } cfg_t;
    static const cfg_t cfgs[] = {{1, 1, 1, false, false},   {2, 2, 5, false, true},
                                 {12, 12, 32, false, true}, {4, 2, 8, false, false},
                                 {3, 1, 33, true, false},   {12, 12, 32, true, true}};
    static const int32_t lens_a[] = {1}, lens_b[] = {1, 7, 2, 19, 1}, lens_c[] = {256, 255, 1};
    static const struct {
        const int32_t *lens;
        int32_t n;
    } batches[] = {{lens_a, 1}, {lens_b, 5}, {lens_c, 3}};
    for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++) {
        const cfg_t *cf = &cfgs[c];
        kern_attention_params_t p = {cf->heads, cf->kv, cf->hd, 1.0f / sqrtf((float)cf->hd),
                                     cf->causal};
        for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
            if (bi == 2 && cf->hd < 8)
                continue; /* the long batch only for realistic heads (runtime) */
            int32_t cu[8];
            const int32_t ns = batches[bi].n, n = s_cu(batches[bi].lens, ns, cu);
            int32_t maxlen = 0;
            for (int32_t s = 0; s < ns; s++)
                maxlen = batches[bi].lens[s] > maxlen ? batches[bi].lens[s] : maxlen;
            const int64_t qw = (int64_t)cf->heads * cf->hd, kw = (int64_t)cf->kv * cf->hd;
            float *q, *k, *v, *buf = NULL;
            int64_t ldq, ldk, ldv;
            if (cf->packed) { /* [n, q | k | v] as the fused QKV GEMM writes it */
                buf = s_rand((size_t)n * (qw + 2 * kw), -2, 2);
                q = buf;
                k = buf + qw;
                v = buf + qw + kw;
                ldq = ldk = ldv = qw + 2 * kw;
            } else {
                q = s_rand((size_t)n * qw, -2, 2);
                k = s_rand((size_t)n * kw, -2, 2);
                v = s_rand((size_t)n * kw, -2, 2);
                ldq = qw;
                ldk = ldv = kw;
            }
            double *ref = malloc((size_t)n * qw * sizeof *ref);
            s_attention_dbl(&p, ref, qw, q, ldq, k, ldk, v, ldv, cu, ns);
            float *scratch =
                malloc(kern_attention_ref_scratch_floats(&p, maxlen) * 3 * sizeof(float));
            const size_t sfl = kern_attention_ref_scratch_floats(&p, maxlen);
            float *out1 = s_poisoned((size_t)n * qw), *out3 = s_poisoned((size_t)n * qw);
            kern_attention_ref(&p, out1, qw, q, ldq, k, ldk, v, ldv, cu, ns, 0, 1, scratch);
            for (int32_t part = 0; part < 3; part++)
                kern_attention_ref(&p, out3, qw, q, ldq, k, ldk, v, ldv, cu, ns, part, 3,
                                   scratch + part * sfl);
            char what[96];
            snprintf(what, sizeof what, "attention h%d kv%d d%d causal %d packed %d batch %zu",
                     (int)cf->heads, (int)cf->kv, (int)cf->hd, cf->causal, cf->packed, bi);
            s_check(what, out1, ref, (size_t)n * qw, 2e-6, 1e-4);
            CHECK_MSG(memcmp(out1, out3, (size_t)n * qw * sizeof(float)) == 0, "%s: 3 parts", what);
            /* one query row a sequence (kern_attention_rows_ref): the first (CLS), the last, a
             * middle one; against the same double reference's rows, 1 and 3 parts */
            for (int32_t pick = 0; pick < 3; pick++) {
                int32_t rows[8];
                double *ref_rows = malloc((size_t)ns * qw * sizeof *ref_rows);
                for (int32_t s = 0; s < ns; s++) {
                    rows[s] = pick == 0   ? cu[s]
                              : pick == 1 ? cu[s + 1] - 1
                                          : cu[s] + (cu[s + 1] - cu[s]) / 2;
                    memcpy(ref_rows + (size_t)s * qw, ref + (size_t)rows[s] * qw,
                           (size_t)qw * sizeof *ref_rows);
                }
                float *r1 = s_poisoned((size_t)ns * qw), *r3 = s_poisoned((size_t)ns * qw);
                kern_attention_rows_ref(&p, r1, qw, q, ldq, k, ldk, v, ldv, cu, rows, ns, 0, 1,
                                        scratch);
                for (int32_t part = 0; part < 3; part++)
                    kern_attention_rows_ref(&p, r3, qw, q, ldq, k, ldk, v, ldv, cu, rows, ns, part,
                                            3, scratch + part * sfl);
                char rwhat[128];
                snprintf(rwhat, sizeof rwhat, "%s rows %d", what, (int)pick);
                s_check(rwhat, r1, ref_rows, (size_t)ns * qw, 2e-6, 1e-4);
                CHECK_MSG(memcmp(r1, r3, (size_t)ns * qw * sizeof(float)) == 0, "%s: 3 parts",
                          rwhat);
                free(ref_rows);
                free(r1);
                free(r3);
            }
            free(ref);
            free(scratch);
            free(out1);
            free(out3);
            if (cf->packed) {
                free(buf);
            } else {
                free(q);
                free(k);
                free(v);
            }
        }
    }
}

/* The CUDA attention's tile table (attention_tiles.c), host only: every row of the batch in
 * exactly one tile of 1..64 rows, sequences of >= 64 tokens in tiles of their own, the longest
 * key walks first, -1 past the tiles; the dense fallback when per-sequence tiles overflow. */
/* the sequences of rows [q0, q0 + rows): *sf the first row's, *sl the last row's */
static void s_tile_seqs(const int32_t *cu, int32_t q0, int32_t rows, int32_t *sf, int32_t *sl) {
    for (*sf = 0; cu[*sf + 1] <= q0; (*sf)++) {
    }
    for (*sl = *sf; cu[*sl + 1] < q0 + rows; (*sl)++) {
    }
}

/* returns whether the table was the dense fallback */
static bool s_check_tiles(const int32_t *cu, int32_t n_seqs, int32_t T) {
    const int32_t cap = kern_attention_tiles_cap(T), n = cu[n_seqs];
    /* per-sequence tiles: ceil(L / 64) per sequence of >= 64 tokens, ceil(run / 64) per run of
     * shorter ones; more than the table holds: the dense fallback */
    int32_t per_seq = 0, run = 0;
    for (int32_t s = 0; s <= n_seqs; s++) {
        const int32_t len = s < n_seqs ? cu[s + 1] - cu[s] : 64;
        if (len < 64 && s < n_seqs) {
            run += len;
            continue;
        }
        per_seq += (run + 63) / 64 + (s < n_seqs ? (len + 63) / 64 : 0), run = 0;
    }
    const bool want_dense = per_seq > cap;
    CHECK(cap == (T + 63) / 64 + (T + 255) / 256);
    int32_t *t = malloc((size_t)cap * KERN_ATTENTION_TILE_WORDS * 4);
    uint8_t *seen = calloc((size_t)(n > 0 ? n : 1), 1);
    const int32_t count = kern_attention_tiles_build(t, T, cu, n_seqs);
    CHECK(count >= 0 && count <= cap);
    bool rows_ok = true, order_ok = true, own_ok = true, keys_ok = true, dense = true;
    int32_t prev = 1 << 30;
    for (int32_t i = 0; i < count; i++) {
        const int32_t *e = t + (size_t)KERN_ATTENTION_TILE_WORDS * i;
        const int32_t q0 = e[0] & 0xffffff, rows = (e[0] >> 24) + 1;
        if (e[0] < 0 || rows < 1 || rows > 64 || q0 + rows > n) {
            rows_ok = false;
            break;
        }
        for (int32_t r = q0; r < q0 + rows; r++)
            rows_ok &= seen[r]++ == 0;
        int32_t s = 0, e_s = 0;
        s_tile_seqs(cu, q0, rows, &s, &e_s);
        /* the key walk's 64-key blocks (capped as the builder's sort key) never grow */
        const int32_t blocks = (cu[e_s + 1] - cu[s] + 63) / 64, b = blocks < 255 ? blocks : 255;
        order_ok &= b <= prev;
        prev = b;
        dense &= q0 % 64 == 0 && (rows == 64 || q0 + rows == n);
        /* a row of a sequence of >= 64 tokens: the tile is that sequence's, from its start in
         * steps of 64 */
        if (!want_dense && cu[s + 1] - cu[s] >= 64)
            own_ok &= q0 + rows <= cu[s + 1] && (q0 - cu[s]) % 64 == 0 &&
                      (rows == 64 || q0 + rows == cu[s + 1]);
        if (!want_dense && cu[e_s + 1] - cu[e_s] >= 64)
            own_ok &= q0 >= cu[e_s];
        /* the keys: the first row's sequence's start to the last row's sequence's end */
        keys_ok &= e[1] == cu[s] && e[2] == cu[e_s + 1] && e[3] == (s == e_s);
    }
    for (int32_t r = 0; r < n && rows_ok; r++)
        rows_ok &= seen[r] == 1;
    bool tail_ok = true;
    for (int32_t i = (count > 0 ? count : 0) * KERN_ATTENTION_TILE_WORDS;
         i < cap * KERN_ATTENTION_TILE_WORDS; i++)
        tail_ok &= t[i] == -1;
    CHECK_MSG(rows_ok, "tiles: every row once (%d seqs, %d tokens, bucket %d)", (int)n_seqs, (int)n,
              (int)T);
    CHECK_MSG(order_ok, "tiles: longest key walk first (%d seqs)", (int)n_seqs);
    CHECK_MSG(keys_ok, "tiles: the entries' key ranges (%d seqs)", (int)n_seqs);
    CHECK_MSG(own_ok, "tiles: long sequences in tiles of their own (%d seqs)", (int)n_seqs);
    CHECK_MSG(tail_ok, "tiles: -1 past the %d tiles", (int)count);
    if (want_dense)
        CHECK_MSG(dense && count == (n + 63) / 64, "tiles: dense fallback (%d tiles)", (int)count);
    else
        CHECK_MSG(count == per_seq, "tiles: %d per-sequence tiles, want %d", (int)count,
                  (int)per_seq);
    free(t), free(seen);
    return want_dense;
}

static void test_attention_tiles(void) {
    int32_t cu[1100];
    /* the bench's mix (32..512), short runs between long sequences, zero-length sequences */
    int n_dense = 0;
    for (int trial = 0; trial < 200; trial++) {
        const int32_t T = 64 * (1 + (int32_t)com_prng_below(&g_rng, 256));
        int32_t ns = 0;
        cu[0] = 0;
        while (ns < 1000) {
            const int kind = (int)com_prng_below(&g_rng, 4);
            int32_t len = kind == 0   ? (int32_t)com_prng_below(&g_rng, 64)
                          : kind == 1 ? 32 + (int32_t)com_prng_below(&g_rng, 481)
                          : kind == 2 ? 64 * (1 + (int32_t)com_prng_below(&g_rng, 4))
                                      : 1 + (int32_t)com_prng_below(&g_rng, 8);
            if (cu[ns] + len > T)
                break;
            cu[ns + 1] = cu[ns] + len;
            ns++;
        }
        n_dense += s_check_tiles(cu, ns, T);
    }
    /* 65-token sequences (two tiles each) overflow the table: one dense run */
    int32_t ns = 0;
    for (cu[0] = 0; cu[ns] + 65 <= 4096; ns++)
        cu[ns + 1] = cu[ns] + 65;
    CHECK(s_check_tiles(cu, ns, 4096));
    /* none, one, a full bucket */
    const int32_t one[2] = {0, 1}, full[2] = {0, 512};
    CHECK(!s_check_tiles(cu, 0, 64) && !s_check_tiles(one, 1, 64) && !s_check_tiles(full, 1, 512));
    /* bad arguments */
    int32_t t[8 * KERN_ATTENTION_TILE_WORDS];
    const int32_t over[2] = {0, 129}, based[2] = {1, 2};
    CHECK(kern_attention_tiles_build(t, 128, over, 1) == -1);
    CHECK(kern_attention_tiles_build(t, 128, based, 1) == -1);
    CHECK(kern_attention_tiles_build(NULL, 128, one, 1) == -1);
    CHECK(kern_attention_tiles_cap(0) == 0 && kern_attention_tiles_cap(-5) == 0);
    CHECK(kern_attention_tiles_cap(KERN_ATTENTION_TILES_MAX_TOKENS + 1) == 0);
    printf("attention tiles: 200 random batches (%d dense), the dense fallback and edge cases "
           "checked\n",
           n_dense);
}

static void test_pool(void) {
    static const int32_t lens[] = {1, 3, 17, 1, 40};
    int32_t cu[6];
    const int32_t ns = 5, n = s_cu(lens, ns, cu);
    static const int32_t hiddens[] = {1, 7, 384};
    for (size_t hc = 0; hc < 3; hc++) {
        const int32_t H = hiddens[hc];
        float *h = s_rand((size_t)n * H, -2, 2);
        for (int mode = 0; mode < 3; mode++)
            for (int norm = 0; norm < 2; norm++) {
                const int32_t dims[] = {H, (H + 1) / 2, 1};
                for (int di = 0; di < 3; di++) {
                    const int32_t D = dims[di];
                    double *ref = malloc((size_t)ns * D * sizeof *ref);
                    for (int32_t s = 0; s < ns; s++) {
                        double ss = 0;
                        for (int32_t d = 0; d < D; d++) {
                            double e = 0;
                            if (mode == KERN_POOL_CLS)
                                e = h[(size_t)cu[s] * H + d];
                            else if (mode == KERN_POOL_LAST)
                                e = h[(size_t)(cu[s + 1] - 1) * H + d];
                            else {
                                for (int32_t t = cu[s]; t < cu[s + 1]; t++)
                                    e += h[(size_t)t * H + d];
                                e /= lens[s];
                            }
                            ref[(size_t)s * D + d] = e;
                            ss += e * e;
                        }
                        if (norm)
                            for (int32_t d = 0; d < D; d++)
                                ref[(size_t)s * D + d] /= fmax(sqrt(ss), 1e-12);
                    }
                    float *out = s_poisoned((size_t)ns * D);
                    kern_pool_ref(out, h, cu, ns, H, (kern_pool_mode_t)mode, D, norm);
                    char what[64];
                    snprintf(what, sizeof what, "pool H=%d mode %d norm %d dim %d", (int)H, mode,
                             norm, (int)D);
                    s_check(what, out, ref, (size_t)ns * D, 1e-6, 1e-5);
                    free(ref);
                    free(out);
                }
            }
        free(h);
    }
}

/* The folded LayerNorm's statistics (kernels/row_stats.c). (1) kern_row_stats_finish_ref against a
 * two-pass double-precision mean and variance, on rows of uniform values, rows with an offset and
 * rows of 1000 + N(0, 1), where E[x^2] - mean^2 in fp32 would lose everything (ulp(1e6) = 0.06
 * against a variance of 1). The mean is within 1e-6 of the row's scale (|mean| + std), rstd
 * within 1e-6 relative; on the rows of mean 1000, within 1e-5: the law of total variance does
 * not cancel, but the partials' fp32 block sums (~64000, so up to 0.002 off) move each block's
 * mean by up to 3e-5, which the term 64 (block mean - mean)^2 turns into up to ~3e-6 of the
 * variance (2.5e-6 seen over 100 such rows at hidden 384). (2) kern_row_stats_normalize_ref on the
 * fp32 rows equals kern_add_layernorm_ref(x + 0) within 1e-5, both being fp32 LayerNorms of the
 * same rows (the rows of mean 1000 left out: an fp32 mean there is only good to ulp(1000) / 2 =
 * 3e-5, which either side's x - mean carries). */
static void test_row_stats(void) {
    static const int32_t hiddens[] = {64, 384, 768, 1024, 16384};
    const int32_t n = 12; /* 4 rows of each kind */
    for (size_t hc = 0; hc < sizeof hiddens / sizeof *hiddens; hc++) {
        const int32_t H = hiddens[hc];
        const size_t N = (size_t)n * H;
        float *x = malloc(N * sizeof *x), *part = s_poisoned(N / 32);
        for (int32_t t = 0; t < n; t++) {
            const int kind = t % 3; /* 0: uniform, 1: offset, 2: 1000 + N(0, 1) */
            const float off = kind == 1 ? com_prng_uniform(&g_rng, -8, 8) : 0;
            for (int32_t j = 0; j < H; j++) {
                float v;
                if (kind == 2) { /* Box-Muller, 1 - u in (0, 1] */
                    const double u = 1.0 - com_prng_uniform(&g_rng, 0, 1);
                    const double w = com_prng_uniform(&g_rng, 0, 1);
                    v = (float)(1000.0 + sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w));
                } else {
                    v = off + com_prng_uniform(&g_rng, -3, 3);
                }
                x[(size_t)t * H + j] = v;
            }
        }
        kern_row_stats_ref(part, x, n, H);
        float *mean = s_poisoned((size_t)n), *rstd = s_poisoned((size_t)n);
        kern_row_stats_finish_ref(mean, rstd, part, n, H, 1e-12f);
        double worst_mean = 0, worst_rstd[2] = {0, 0}; /* rows of mean 0-8, of mean 1000 */
        for (int32_t t = 0; t < n; t++) {
            const float *r = x + (size_t)t * H;
            double m = 0, v = 0;
            for (int32_t j = 0; j < H; j++)
                m += r[j];
            m /= H;
            for (int32_t j = 0; j < H; j++)
                v += (r[j] - m) * (r[j] - m);
            v /= H;
            const double rs = 1.0 / sqrt(v + 1e-12);
            worst_mean = fmax(worst_mean, fabs(mean[t] - m) / (fabs(m) + sqrt(v)));
            const int big = t % 3 == 2;
            worst_rstd[big] = fmax(worst_rstd[big], fabs(rstd[t] - rs) / rs);
        }
        CHECK_MSG(worst_mean <= 1e-6 && worst_rstd[0] <= 1e-6 && worst_rstd[1] <= 1e-5,
                  "row_stats H=%d: mean off by %.3g of the row's scale, rstd by %.3g (%.3g on "
                  "the rows of mean 1000)",
                  (int)H, worst_mean, worst_rstd[0], worst_rstd[1]);
        /* (2) on the rows of kinds 0 and 1 */
        float *g = s_rand((size_t)H, 0.5f, 1.5f), *b = s_rand((size_t)H, -1, 1);
        float *zero = calloc((size_t)H, sizeof *zero);
        float *got = s_poisoned(N), *want = s_poisoned(N);
        kern_row_stats_normalize_ref(got, x, part, g, b, n, H, 1e-12f);
        for (int32_t t = 0; t < n; t++) {
            if (t % 3 == 2)
                continue;
            const size_t o = (size_t)t * H;
            kern_add_layernorm_ref(want + o, x + o, NULL, zero, g, b, 1, H, 1e-12f);
            char what[64];
            snprintf(what, sizeof what, "row_stats_normalize H=%d row %d", (int)H, (int)t);
            test_cmp_t c = test_compare_f32(what, got + o, want + o, (size_t)H, 1e-5, 1e-5);
            CHECK_MSG(c.n_bad == 0, "%s: %zu bad, max |diff| %.3g", what, c.n_bad, c.max_abs);
        }
        free(x), free(part), free(mean), free(rstd), free(g), free(b), free(zero), free(got);
        free(want);
    }
}

int main(void) {
    com_prng_seed(&g_rng, 0x5eed1234);
    test_math();
    test_embed_layernorm();
    test_linear();
    test_bias_gelu();
    test_add_layernorm();
    test_attention();
    test_attention_tiles();
    test_pool();
    test_row_stats();
    return test_finish();
}
