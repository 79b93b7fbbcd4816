/* kernels/attention.c — ragged attention over packed sequences (shapes in attention.h).
 *
 * Algorithm, per (sequence s of length L, head h, kv head kh = h / (n_heads / n_kv_heads)),
 * exact softmax (a whole row of scores fits in scratch, so no online rescaling):
 *   L >= KERN_ATTENTION_GEMM_MIN_LEN (long sequences; most of the FLOPs):
 *     S = scale * Q_h K_kh^T with cblas_sgemm straight from the strided rows ([L, L] scratch),
 *     per row: mask j > i if causal, subtract the max, exponentiate (kern_expf), sum;
 *     out_h = S V_kh with cblas_sgemm into the output rows, then each row times 1/sum.
 *   shorter sequences (GEMM call overhead dominates): plain loops —
 *     1. K of (s, kh) transposed into scratch kt[head_dim][L] (unit-stride score loop);
 *     2. per query i: scores[j] = scale * sum_d q[i][d] kt[d][j], softmax as above;
 *     3. out[i] = sum_j scores[j] v[j] / sum (accumulated in scratch, written once).
 * Both paths are O(L^2 head_dim) per (s, h); they agree to float rounding (tested).
 * kern_attention_rows_ref (one query row a sequence) is step 2-3 of the loops for that row.
 * Threading: the caller splits (s, h) units across parts; parts share nothing but read-only
 * inputs and disjoint output columns/rows. No allocation. Tested in tests/test_kernels.c. */
#include "kernels/attention.h"

#include <assert.h>

#include "kernels/kern_math.h"

#include <cblas.h>

size_t kern_attention_ref_scratch_floats(const kern_attention_params_t *p, int32_t max_seqlen) {
    const size_t L = (size_t)max_seqlen;
    /* loops: kt [head_dim * L] + scores [L] + acc [head_dim]; GEMM: S [L * L] + inv [L] */
    size_t loops = (size_t)p->head_dim * L + L + (size_t)p->head_dim;
    size_t gemm = L >= KERN_ATTENTION_GEMM_MIN_LEN ? L * L + L : 0;
    return loops > gemm ? loops : gemm;
}

/* Row softmax of S [len, len] in place (first i+1 entries if causal, the rest zeroed); writes
 * 1/sum of each row into inv. */
KERN_CLONES static void s_softmax_rows(float *S, float *inv, int32_t len, bool causal) {
    for (int32_t i = 0; i < len; i++) {
        float *restrict row = S + (size_t)i * len;
        const int32_t n = causal ? i + 1 : len;
        const float m = kern_max(row, n);
        for (int32_t j = 0; j < n; j++)
            row[j] = kern_expf(row[j] - m);
        for (int32_t j = n; j < len; j++)
            row[j] = 0.0f;
        inv[i] = 1.0f / kern_sum(row, n);
    }
}

KERN_CLONES static void s_scale_rows(float *out, int64_t ldo, const float *inv, int32_t len,
                                     int32_t hd) {
    for (int32_t i = 0; i < len; i++) {
        float *restrict o = out + (int64_t)i * ldo;
        const float f = inv[i];
        for (int32_t d = 0; d < hd; d++)
            o[d] *= f;
    }
}

static void s_unit_gemm(const kern_attention_params_t *p, float *out, int64_t ldo, const float *q,
                        int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                        int32_t t0, int32_t len, int32_t h, float *scratch) {
    const int32_t hd = p->head_dim;
    const int32_t kh = h / (p->n_heads / p->n_kv_heads);
    float *S = scratch, *inv = scratch + (size_t)len * len;
    const float *qh = q + (int64_t)t0 * ldq + (int64_t)h * hd;
    const float *kk = k + (int64_t)t0 * ldk + (int64_t)kh * hd;
    const float *vv = v + (int64_t)t0 * ldv + (int64_t)kh * hd;
    float *oh = out + (int64_t)t0 * ldo + (int64_t)h * hd;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, len, len, hd, p->scale, qh, (int)ldq, kk,
                (int)ldk, 0.0f, S, len);
    s_softmax_rows(S, inv, len, p->causal);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, len, hd, len, 1.0f, S, len, vv, (int)ldv,
                0.0f, oh, (int)ldo);
    s_scale_rows(oh, ldo, inv, len, hd);
}

/* One query row: o = softmax(scale * qr K^T) V over n keys, K transposed in kt (key j's
 * element d at kt[d * ld_kt + j]), key j's value at v + j * ldv. sc [n] and acc [head_dim] are
 * scratch. */
KERN_CLONES static void s_query(const kern_attention_params_t *p, float *restrict o,
                                const float *restrict qr, const float *restrict kt, int32_t ld_kt,
                                const float *v, int64_t ldv, int32_t n, float *restrict sc,
                                float *restrict acc) {
    const int32_t hd = p->head_dim;
    for (int32_t j = 0; j < n; j++)
        sc[j] = 0.0f;
    for (int32_t d = 0; d < hd; d++) {
        const float qd = qr[d] * p->scale;
        const float *restrict kd = kt + (size_t)d * ld_kt;
        for (int32_t j = 0; j < n; j++)
            sc[j] += qd * kd[j];
    }
    const float m = kern_max(sc, n);
    for (int32_t j = 0; j < n; j++)
        sc[j] = kern_expf(sc[j] - m);
    const float inv = 1.0f / kern_sum(sc, n);
    for (int32_t d = 0; d < hd; d++)
        acc[d] = 0.0f;
    for (int32_t j = 0; j < n; j++) {
        const float pj = sc[j];
        const float *restrict vr = v + (int64_t)j * ldv;
        for (int32_t d = 0; d < hd; d++)
            acc[d] += pj * vr[d];
    }
    for (int32_t d = 0; d < hd; d++)
        o[d] = acc[d] * inv;
}

/* K rows [t0, t0 + n) of kv head kh, transposed into kt [head_dim][n]. */
static void s_transpose_keys(const kern_attention_params_t *p, float *restrict kt, const float *k,
                             int64_t ldk, int32_t t0, int32_t n, int32_t kh) {
    const int32_t hd = p->head_dim;
    for (int32_t j = 0; j < n; j++) {
        const float *kr = k + (int64_t)(t0 + j) * ldk + (int64_t)kh * hd;
        for (int32_t d = 0; d < hd; d++)
            kt[(size_t)d * n + j] = kr[d];
    }
}

static void s_unit(const kern_attention_params_t *p, float *out, int64_t ldo, const float *q,
                   int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                   int32_t t0, int32_t len, int32_t h, float *scratch) {
    const int32_t hd = p->head_dim;
    const int32_t kh = h / (p->n_heads / p->n_kv_heads);
    float *kt = scratch, *sc = kt + (size_t)hd * len, *acc = sc + len;
    s_transpose_keys(p, kt, k, ldk, t0, len, kh);
    const float *vh = v + (int64_t)t0 * ldv + (int64_t)kh * hd;
    for (int32_t i = 0; i < len; i++)
        s_query(p, out + (int64_t)(t0 + i) * ldo + (int64_t)h * hd,
                q + (int64_t)(t0 + i) * ldq + (int64_t)h * hd, kt, len, vh, ldv,
                p->causal ? i + 1 : len, sc, acc);
}

void kern_attention_ref(const kern_attention_params_t *p, float *out, int64_t ldo, const float *q,
                        int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                        const int32_t *cu_seqlens, int32_t n_seqs, int32_t part, int32_t n_parts,
                        float *scratch) {
    assert(p->n_kv_heads >= 1 && p->n_heads % p->n_kv_heads == 0);
    assert(n_parts >= 1 && part >= 0 && part < n_parts);
    const int64_t n_units = (int64_t)n_seqs * p->n_heads;
    for (int64_t u = part; u < n_units; u += n_parts) {
        const int32_t s = (int32_t)(u / p->n_heads), h = (int32_t)(u % p->n_heads);
        const int32_t t0 = cu_seqlens[s], len = cu_seqlens[s + 1] - t0;
        if (len >= KERN_ATTENTION_GEMM_MIN_LEN)
            s_unit_gemm(p, out, ldo, q, ldq, k, ldk, v, ldv, t0, len, h, scratch);
        else if (len > 0)
            s_unit(p, out, ldo, q, ldq, k, ldk, v, ldv, t0, len, h, scratch);
    }
}

void kern_attention_rows_ref(const kern_attention_params_t *p, float *out, int64_t ldo,
                             const float *q, int64_t ldq, const float *k, int64_t ldk,
                             const float *v, int64_t ldv, const int32_t *cu_seqlens,
                             const int32_t *rows, int32_t n_seqs, int32_t part, int32_t n_parts,
                             float *scratch) {
    assert(p->n_kv_heads >= 1 && p->n_heads % p->n_kv_heads == 0);
    assert(n_parts >= 1 && part >= 0 && part < n_parts);
    const int32_t hd = p->head_dim;
    const int64_t n_units = (int64_t)n_seqs * p->n_heads;
    for (int64_t u = part; u < n_units; u += n_parts) {
        const int32_t s = (int32_t)(u / p->n_heads), h = (int32_t)(u % p->n_heads);
        const int32_t kh = h / (p->n_heads / p->n_kv_heads);
        const int32_t t0 = cu_seqlens[s], len = cu_seqlens[s + 1] - t0, i = rows[s] - t0;
        assert(i >= 0 && i < len);
        /* causal: the keys up to the row; only those are transposed */
        const int32_t n = p->causal ? i + 1 : len;
        float *kt = scratch, *sc = kt + (size_t)hd * n, *acc = sc + n;
        s_transpose_keys(p, kt, k, ldk, t0, n, kh);
        s_query(p, out + (int64_t)s * ldo + (int64_t)h * hd,
                q + (int64_t)rows[s] * ldq + (int64_t)h * hd, kt, n,
                v + (int64_t)t0 * ldv + (int64_t)kh * hd, ldv, n, sc, acc);
    }
}
