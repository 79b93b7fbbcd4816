/* kernels/linear.cu — dense layers on the GPU: a plan per (shape, epilogue, dtype) holding either
 * a cuBLASLt algorithm or one of our own tensor-core GEMM configurations (gemm_mma.cu,
 * gemm_wgmma.cu); contract in linear.h, plain-C reference kern_linear_ref beside it.
 *
 * cuBLASLt: row-major y[n, out] = x[n, in] W[out, in]^T is, in cuBLASLt's column-major terms,
 * Y(out x n) = op_T(W: in x out, ld in) * X(in x n, ld in): the "TN" GEMM, the layout cuBLASLt's
 * fastest kernels expect. A/B/C/D of the plan's dtype (CUDA_R_16BF or CUDA_R_16F),
 * CUBLAS_COMPUTE_32F (fp32 accumulation), scale type fp32; the bias (the same type, length out =
 * the rows of Y) is added by CUBLASLT_EPILOGUE_BIAS in fp32 before the single rounding to 16 bits.
 * Our configurations exist for both types; the plan's dtype picks the instantiation. cuBLASLt's
 * GELU epilogues use the tanh approximation, not BERT's erf GELU, so a cuBLASLt BIAS_GELU plan
 * runs the BIAS GEMM and then kern_bias_gelu_cuda in place (two roundings); our kernels fuse
 * bias + erf GELU and round once. In-place split-K (counters, order-dependent sums) is masked
 * out, so every candidate is deterministic.
 * BIAS_ADD_LN (the post-LN sublayer end) runs one of two ways: unfused, any algorithm with the
 * bias epilogue writes the GEMM to ln->scratch (the dtype) and kern_add_layernorm_cuda adds the
 * residual and normalises into y (its out_bf16 or, in an f16 plan, its out_f16); fused, one of
 * gemm_wgmma.cu's LayerNorm configurations (kern_gemm_wgmma_fuses_ln) does it all in its
 * epilogue. Those run nothing else, so which of our configurations a plan may use depends on its
 * epilogue: s_own_valid, the one place that says so. The folded LayerNorm's epilogues (4-6,
 * kernels/row_stats.h) have no cuBLASLt form: only gemm_wgmma.cu's folding configurations run
 * them, and a folded plan asked for rank 0 starts from the first of those.
 * The heuristic runs once, in kern_linear_plan_new (start-up), which also sets up the
 * shared-memory limits of the configurations of ours the plan can ever launch (the one a
 * negative rank names; those the tuner may time, s_tunable); kern_linear_cuda only launches with
 * the cached choice and the caller's preallocated workspace, so it is capture-safe and
 * allocation-free. kern_linear_plan_tune times each candidate as the whole op, queued behind a
 * short spin kernel so that host launch overhead (which a CUDA graph does not pay) does not decide.
 * Stream: the caller's. Tested by tests/test_kernels_cuda.c (heuristic ranks 0-3, each of our
 * configurations, tuned; every epilogue; both dtypes); timed by bench_kernels_cuda ("linear ..."
 * rows; its gemms mode in either dtype). */
#include <stdlib.h>

#include "kernels/add_layernorm.h"
#include "kernels/bias_gelu.h"
#include "kernels/gemm_mma.h"
#include "kernels/gemm_wgmma.h"
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/linear.h"
#include "kernels/row_stats.h"

struct kern_linear_plan {
    int32_t n, in, out;
    kern_linear_epilogue_t epi;
    kern_dtype_t dtype;     /* of x, w, b, y and ln->scratch */
    int32_t rank;           /* the choice: >= 0 cuBLASLt cand[rank], < 0 KERN_LINEAR_OWN(c) */
    int32_t alternative;    /* the other engine's fastest rank at the last tune, else rank */
    size_t workspace_bytes; /* what the chosen algorithm needs */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c; /* W^T, X, Y (C and D share a layout) */
    /* the heuristic's usable candidates, best first, for kern_linear_plan_tune */
    int32_t n_cand;
    cublasLtMatmulAlgo_t cand[8];
    size_t cand_ws[8];
    char desc[64]; /* kern_linear_plan_describe */
};

static bool s_has_bias(kern_linear_epilogue_t e) {
    return e != KERN_LINEAR_NONE;
}

/* the folded LayerNorm's epilogues (4-6), which only our folding configurations run */
static bool s_folded(kern_linear_epilogue_t e) {
    return e >= KERN_LINEAR_BIAS_ADD_STATS;
}

/* Our configurations: gemm_mma.cu's (mma.sync, any sm_80+ device) numbered first, then
 * gemm_wgmma.cu's (Hopper only); these route a configuration number to its family. */
extern "C" int32_t kern_linear_own_count(void) {
    return kern_gemm_mma_count() + kern_gemm_wgmma_count();
}

/* true iff our configuration c is one of gemm_wgmma's that fuse the LayerNorm */
static bool s_own_fuses_ln(int32_t c) {
    const int32_t m = kern_gemm_mma_count();
    return c >= m && kern_gemm_wgmma_fuses_ln(c - m);
}

/* true iff our configuration c is one of gemm_wgmma's with the folded epilogues */
static bool s_own_folds(int32_t c) {
    const int32_t m = kern_gemm_mma_count();
    return c >= m && kern_gemm_wgmma_folds(c - m);
}

/* Our configuration c can run a plan of epilogue epi at this shape. The fusing configurations
 * run only BIAS_ADD_LN, the folding ones only the folded epilogues (on whole 64-column blocks);
 * the others run the rest, BIAS_ADD_LN the unfused way (their bias GEMM into ln->scratch, then
 * the LayerNorm kernel). */
static bool s_own_valid(int32_t c, kern_linear_epilogue_t epi, kern_dtype_t dtype, int32_t n,
                        int32_t in, int32_t out) {
    const int32_t m = kern_gemm_mma_count();
    if ((s_own_fuses_ln(c) && epi != KERN_LINEAR_BIAS_ADD_LN) || s_own_folds(c) != s_folded(epi))
        return false;
    const int32_t stats_cols = epi == KERN_LINEAR_BIAS_ADD_STATS ? out : in;
    if (s_folded(epi) && (stats_cols % KERN_STATS_COLS || stats_cols > KERN_STATS_MAX_COLS))
        return false;
    return c < m ? kern_gemm_mma_valid(c, n, in, out)
                 : kern_gemm_wgmma_valid(c - m, dtype, n, in, out);
}

static bool s_own_worth(int32_t c, int32_t n) {
    const int32_t m = kern_gemm_mma_count();
    return c < m ? kern_gemm_mma_worth(c, n) : kern_gemm_wgmma_worth(c - m, n);
}

static const char *s_own_name(int32_t c) {
    const int32_t m = kern_gemm_mma_count();
    return c < m ? kern_gemm_mma_name(c) : kern_gemm_wgmma_name(c - m);
}

static int s_own_prepare(int32_t c, kern_dtype_t dtype, com_error_t *err) {
    const int32_t m = kern_gemm_mma_count();
    return c < m ? kern_gemm_mma_prepare(c, dtype, err)
                 : kern_gemm_wgmma_prepare(c - m, dtype, err);
}

/* ln: epi 3 (a fusing configuration) and 4-6 (a folding one), else NULL */
static int s_own_run(int32_t c, kern_dtype_t dtype, int epi, uint16_t *y, const uint16_t *x,
                     const uint16_t *w, const uint16_t *b, const kern_linear_ln_t *ln, int32_t n,
                     int32_t in, int32_t out, cudaStream_t stream, com_error_t *err) {
    const int32_t m = kern_gemm_mma_count();
    return c < m ? kern_gemm_mma_cuda(c, dtype, epi, y, x, w, b, n, in, out, stream, err)
                 : kern_gemm_wgmma_cuda(c - m, dtype, epi, y, x, w, b, ln, n, in, out, stream, err);
}

/* Candidate rank of plan p runs the LayerNorm as a kernel of its own (after a GEMM into
 * ln->scratch): every BIAS_ADD_LN candidate but our fusing configurations. */
static bool s_ln_unfused(const kern_linear_plan_t *p, int32_t rank) {
    return p->epi == KERN_LINEAR_BIAS_ADD_LN && !(rank < 0 && s_own_fuses_ln(-1 - rank));
}

/* appended to the description of an f16 plan (a bf16 one keeps its names) */
static const char *s_dtype_suffix(const kern_linear_plan_t *p) {
    return p->dtype == KERN_DTYPE_F16 ? " f16" : "";
}

static void s_describe(kern_linear_plan_t *p) {
    if (p->rank < 0) {
        snprintf(p->desc, sizeof p->desc, "%s%s%s", s_own_name(-1 - p->rank),
                 s_ln_unfused(p, p->rank) ? " +ln" : "", s_dtype_suffix(p));
        return;
    }
    int32_t id = -1;
    uint32_t tile = 0, splitk = 0;
    size_t got = 0;
    const cublasLtMatmulAlgo_t *a = &p->cand[p->rank];
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
                                         &got);
    snprintf(p->desc, sizeof p->desc, "cublasLt #%d algo %d tile %u splitK %u%s%s", (int)p->rank,
             (int)id, (unsigned)tile, (unsigned)splitk,
             p->epi == KERN_LINEAR_BIAS_GELU ? " +gelu"
             : s_ln_unfused(p, p->rank)      ? " +ln"
                                             : "",
             s_dtype_suffix(p));
}

extern "C" const char *kern_linear_plan_describe(const kern_linear_plan_t *p) {
    return p ? p->desc : "(none)";
}

extern "C" void kern_linear_plan_destroy(kern_linear_plan_t **self_p) {
    if (!self_p || !*self_p)
        return;
    kern_linear_plan_t *p = *self_p;
    if (p->op)
        cublasLtMatmulDescDestroy(p->op);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->c)
        cublasLtMatrixLayoutDestroy(p->c);
    free(p);
    *self_p = NULL;
}

/* Our configuration c may be timed (and so chosen) by kern_linear_plan_tune for the plan's
 * shape: the one test both s_plan_init (which prepares it) and the tuner use. */
static bool s_tunable(const kern_linear_plan_t *p, int32_t c) {
    return s_own_valid(c, p->epi, p->dtype, p->n, p->in, p->out) && s_own_worth(c, p->n);
}

static int s_plan_init(kern_linear_plan_t *p, cublasLtHandle_t lt, size_t workspace_bytes,
                       int32_t rank, com_error_t *err) {
    KERN_CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), err);
    const cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
    KERN_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA), err);
    KERN_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB), err);
    const bool bias = s_has_bias(p->epi);
    /* BIAS_GELU: cuBLASLt adds the bias; kern_bias_gelu_cuda applies the erf GELU after it.
     * BIAS_ADD_LN: the same BIAS GEMM (into ln->scratch), then the LayerNorm kernel. */
    const cublasLtEpilogue_t epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    KERN_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
        err);
    /* A, B, C, D and the bias: all of the plan's 16-bit type */
    const cudaDataType_t t = p->dtype == KERN_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    if (bias)
        KERN_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                       &t, sizeof t),
                        err);
    KERN_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->a, t, p->in, p->out, p->in), err);
    KERN_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->b, t, p->in, p->n, p->in), err);
    KERN_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->c, t, p->out, p->n, p->out), err);
    cublasLtMatmulPreference_t pref = NULL;
    KERN_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref), err);
    enum { kMaxAlgos = sizeof p->cand / sizeof *p->cand };
    cublasLtMatmulHeuristicResult_t res[kMaxAlgos];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
    /* no in-place split-K (partial sums added into the output under counters): every
     * candidate must give the same bits on every run, whatever the tuning picks */
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK & ~CUBLASLT_REDUCTION_SCHEME_INPLACE;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                  &schemes, sizeof schemes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, pref, kMaxAlgos, res,
                                            &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s_folded(p->epi))
        found = 0; /* cuBLASLt has no such epilogue */
    else if (st != CUBLAS_STATUS_SUCCESS && rank < 0)
        found = 0; /* our own configuration does not need cuBLASLt's offer */
    else
        KERN_CUBLAS_TRY(st, err);
    int usable = 0;
    for (int i = 0; i < found; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        p->cand[usable] = res[i].algo;
        p->cand_ws[usable] = res[i].workspaceSize;
        usable++;
    }
    p->n_cand = usable;
    /* Our configurations get their shared-memory limits now, so that neither kern_linear_cuda
     * nor a later tune sets attributes: exactly those the plan can ever launch, i.e. the one a
     * negative rank asks for (whatever n) and those kern_linear_plan_tune may time and pick
     * (s_tunable); nothing else can become p->rank. */
    for (int32_t c = 0; c < kern_linear_own_count(); c++)
        if (KERN_LINEAR_OWN(c) == rank ? s_own_valid(c, p->epi, p->dtype, p->n, p->in, p->out)
                                       : s_tunable(p, c)) {
            const int rc = s_own_prepare(c, p->dtype, err);
            if (rc != 0)
                return rc;
        }
    if (s_folded(p->epi) && rank >= 0) { /* rank 0 of a folded plan: the first we would time */
        for (int32_t c = 0; c < kern_linear_own_count() && rank >= 0; c++)
            if (s_tunable(p, c))
                rank = KERN_LINEAR_OWN(c);
        if (rank >= 0)
            return com_error_set(err, COM_EUNSUPPORTED,
                                 "linear plan %dx%dx%d epilogue %d: none of our configurations "
                                 "folds the LayerNorm at this shape on this device",
                                 (int)p->n, (int)p->in, (int)p->out, (int)p->epi);
    }
    if (rank < 0) {
        const int32_t c = -1 - rank;
        if (c < kern_linear_own_count() && s_own_valid(c, p->epi, p->dtype, p->n, p->in, p->out)) {
            p->rank = p->alternative = rank;
            p->workspace_bytes = 0;
            return 0;
        }
        return com_error_set(err, COM_EUNSUPPORTED,
                             "linear plan %dx%dx%d epilogue %d: own configuration %d cannot run "
                             "this shape and epilogue",
                             (int)p->n, (int)p->in, (int)p->out, (int)p->epi, (int)c);
    }
    if (rank < usable) {
        p->rank = p->alternative = rank;
        p->workspace_bytes = p->cand_ws[rank];
        return 0;
    }
    return com_error_set(err, COM_EUNSUPPORTED,
                         "linear plan %dx%dx%d epilogue %d: heuristic offers %d algorithm(s), rank "
                         "%d asked",
                         (int)p->n, (int)p->in, (int)p->out, (int)p->epi, usable, (int)rank);
}

extern "C" int kern_linear_plan_new(cublasLtHandle_t lt, int32_t n, int32_t in, int32_t out,
                                    kern_linear_epilogue_t epi, size_t workspace_bytes,
                                    int32_t rank, kern_dtype_t dtype, kern_linear_plan_t **out_plan,
                                    com_error_t *err) {
    *out_plan = NULL;
    if (!lt || n < 1 || in < 1 || out < 1 || rank < KERN_LINEAR_OWN(kern_linear_own_count() - 1) ||
        epi < KERN_LINEAR_NONE || epi > KERN_LINEAR_LN_BIAS_GELU)
        return com_error_set(err, COM_EINVAL, "linear plan: n %d, in %d, out %d, epi %d, rank %d",
                             (int)n, (int)in, (int)out, (int)epi, (int)rank);
    if (dtype != KERN_DTYPE_BF16 && dtype != KERN_DTYPE_F16)
        return com_error_set(err, COM_EINVAL, "linear plan: dtype %d", (int)dtype);
    kern_linear_plan_t *p = (kern_linear_plan_t *)calloc(1, sizeof *p);
    if (!p)
        return com_error_set(err, COM_ENOMEM, "linear plan: out of memory");
    p->n = n, p->in = in, p->out = out, p->epi = epi, p->dtype = dtype;
    int rc = s_plan_init(p, lt, workspace_bytes, rank, err);
    if (rc != 0) {
        kern_linear_plan_destroy(&p);
        return rc;
    }
    s_describe(p);
    *out_plan = p;
    return 0;
}

/* BIAS_ADD_LN's LayerNorm as a kernel of its own: y = LN(ln->scratch + residual) (the bias is
 * in scratch already), whichever residual stream ln carries. scratch and y are of the plan's
 * dtype: y is the LayerNorm's bf16 output, or in an f16 plan its binary16 one (ln->out_f16 is
 * then NULL or y: s_ln_check). */
static int s_add_ln(const kern_linear_plan_t *p, uint16_t *y, const kern_linear_ln_t *ln,
                    cudaStream_t stream, com_error_t *err) {
    const void *res = ln->residual       ? (const void *)ln->residual
                      : ln->residual_f16 ? (const void *)ln->residual_f16
                                         : (const void *)ln->residual_bf16;
    const kern_residual_type_t rt = ln->residual       ? KERN_RESIDUAL_F32
                                    : ln->residual_f16 ? KERN_RESIDUAL_F16
                                                       : KERN_RESIDUAL_BF16;
    const bool f16 = p->dtype == KERN_DTYPE_F16;
    return kern_add_layernorm_cuda(ln->out_f32, f16 ? y : ln->out_f16, f16 ? NULL : y, ln->scratch,
                                   NULL, p->dtype, res, rt, ln->gamma, ln->beta, p->n, ln->n_rows,
                                   p->out, ln->eps, stream, err);
}

/* The whole op of candidate rank (see kern_linear_plan::rank) on stream; ln checked by the
 * caller (s_ln_check). */
static int s_run(cublasLtHandle_t lt, const kern_linear_plan_t *p, int32_t rank, uint16_t *y,
                 const uint16_t *x, const uint16_t *w, const uint16_t *b,
                 const kern_linear_ln_t *ln, void *workspace, cudaStream_t stream,
                 com_error_t *err) {
    const bool ln_kernel = s_ln_unfused(p, rank);
    if (rank < 0 && p->epi == KERN_LINEAR_BIAS_ADD_LN && !ln_kernel) /* fused */
        return s_own_run(-1 - rank, p->dtype, (int)p->epi, y, x, w, b, ln, p->n, p->in, p->out,
                         stream, err);
    /* unfused BIAS_ADD_LN: the bias GEMM into scratch, then the LayerNorm into y */
    uint16_t *g = ln_kernel ? ln->scratch : y;
    int rc = 0;
    if (rank < 0) {
        rc = s_own_run(-1 - rank, p->dtype, ln_kernel ? (int)KERN_LINEAR_BIAS : (int)p->epi, g, x,
                       w, b, s_folded(p->epi) ? ln : NULL, p->n, p->in, p->out, stream, err);
    } else {
        const float alpha = 1.0f, beta = 0.0f;
        KERN_CUBLAS_TRY(cublasLtMatmul(lt, p->op, &alpha, w, p->a, x, p->b, &beta, g, p->c, g, p->c,
                                       &p->cand[rank], workspace, p->cand_ws[rank], stream),
                        err);
        if (p->epi == KERN_LINEAR_BIAS_GELU)
            rc = kern_bias_gelu_cuda(y, NULL, p->n, NULL, p->out, p->dtype, stream, err);
    }
    if (rc == 0 && ln_kernel)
        rc = s_add_ln(p, y, ln, stream, err);
    return rc;
}

/* ln for a folded plan p (epilogues 4-6; linear.h): the operands its epilogue names, none of the
 * statistics or the output overlapping what the kernel reads while others write it. Returns 0 or
 * COM_EINVAL. */
static int s_fold_check(const kern_linear_plan_t *p, const uint16_t *y, const uint16_t *x,
                        const kern_linear_ln_t *ln, const char *who, com_error_t *err) {
    if (!ln || !(ln->eps >= 0.f))
        return com_error_set(err, COM_EINVAL, "%s: epilogue %d needs ln with eps >= 0", who,
                             (int)p->epi);
    if (p->epi != KERN_LINEAR_BIAS_ADD_STATS) {
        if (!ln->in_stats || !ln->c)
            return com_error_set(err, COM_EINVAL, "%s: epilogue %d needs ln->in_stats and ln->c",
                                 who, (int)p->epi);
        return 0;
    }
    const uint16_t *plain = p->dtype == KERN_DTYPE_F16 ? ln->residual_f16 : ln->residual_bf16;
    const uint16_t *other = p->dtype == KERN_DTYPE_F16 ? ln->residual_bf16 : ln->residual_f16;
    if (ln->residual || other || !!plain + !!ln->residual_x != 1 || !ln->out_stats ||
        (ln->residual_x && (!ln->residual_stats || !ln->gamma || !ln->beta)))
        return com_error_set(err, COM_EINVAL,
                             "%s: BIAS_ADD_STATS needs out_stats and exactly one residual: of the "
                             "plan's dtype, or residual_x with residual_stats, gamma and beta",
                             who);
    /* other tiles still read the residual's statistics and x while this one writes */
    if (ln->out_stats == ln->residual_stats || y == ln->residual_x || y == plain || y == x)
        return com_error_set(err, COM_EINVAL,
                             "%s: BIAS_ADD_STATS's y and out_stats must not be its inputs", who);
    return 0;
}

/* ln for plan p: required (and consistent) iff its epilogue is BIAS_ADD_LN or a folded one, else
 * ignored. Returns 0 or COM_EINVAL. */
static int s_ln_check(const kern_linear_plan_t *p, const uint16_t *y, const uint16_t *x,
                      const kern_linear_ln_t *ln, const char *who, com_error_t *err) {
    if (s_folded(p->epi))
        return s_fold_check(p, y, x, ln, who, err);
    if (p->epi != KERN_LINEAR_BIAS_ADD_LN)
        return 0;
    if (!ln)
        return com_error_set(err, COM_EINVAL, "%s: epilogue BIAS_ADD_LN needs ln (NULL)", who);
    const int n_res = !!ln->residual + !!ln->residual_bf16 + !!ln->residual_f16;
    if (n_res != 1)
        return com_error_set(err, COM_EINVAL,
                             "%s: ln needs exactly one of residual (fp32), residual_bf16 and "
                             "residual_f16 (%d set)",
                             who, n_res);
    if (!(ln->eps >= 0.f))
        return com_error_set(err, COM_EINVAL, "%s: ln->eps %g (must be >= 0)", who,
                             (double)ln->eps);
    if (!ln->gamma || !ln->beta || !ln->scratch)
        return com_error_set(err, COM_EINVAL, "%s: ln needs gamma, beta and scratch (%s missing)",
                             who,
                             !ln->gamma  ? "gamma"
                             : !ln->beta ? "beta"
                                         : "scratch");
    /* the unfused candidates write the GEMM to scratch while y, x and the residual are live */
    const void *s = ln->scratch;
    if (s == y || s == x || s == ln->residual_bf16 || s == ln->residual_f16 || s == ln->residual ||
        s == ln->out_f32 || s == ln->out_f16)
        return com_error_set(err, COM_EINVAL, "%s: ln->scratch is one of the other operands", who);
    /* an f16 plan's y is the binary16 output already (the unfused LayerNorm kernel has one) */
    if (p->dtype == KERN_DTYPE_F16 && ln->out_f16 && ln->out_f16 != y)
        return com_error_set(err, COM_EINVAL,
                             "%s: an f16 plan writes y as binary16; ln->out_f16 must be NULL "
                             "or y",
                             who);
    return 0;
}

extern "C" int kern_linear_cuda(cublasLtHandle_t lt, const kern_linear_plan_t *p, uint16_t *y,
                                const uint16_t *x, const uint16_t *w, const uint16_t *b,
                                const kern_linear_ln_t *ln, void *workspace, size_t workspace_bytes,
                                cudaStream_t stream, com_error_t *err) {
    if (!p || !y || !x || !w || (s_has_bias(p->epi) && !b) ||
        workspace_bytes < p->workspace_bytes || (p->workspace_bytes && !workspace))
        return com_error_set(err, COM_EINVAL, "linear_cuda: bad arguments (workspace %zu < %zu?)",
                             workspace_bytes, p ? p->workspace_bytes : 0);
    int rc = s_ln_check(p, y, x, ln, "linear_cuda", err);
    if (rc != 0)
        return rc;
    if (p->rank >= 0 && s_has_bias(p->epi))
        KERN_CUBLAS_TRY(
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
            err);
    return s_run(lt, p, p->rank, y, x, w, b, ln, workspace, stream, err);
}

extern "C" int kern_linear_plan_choose(kern_linear_plan_t *p, int32_t rank, com_error_t *err) {
    if (!p)
        return com_error_set(err, COM_EINVAL, "linear choose: no plan");
    /* only what the tuner itself could pick: a heuristic candidate, or one of ours that
     * kern_linear_plan_new prepared for this shape */
    const bool ok =
        rank >= 0 ? rank < p->n_cand
                  : rank >= KERN_LINEAR_OWN(kern_linear_own_count() - 1) && s_tunable(p, -1 - rank);
    if (!ok)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "linear plan %dx%dx%d: rank %d is not a candidate here", (int)p->n,
                             (int)p->in, (int)p->out, (int)rank);
    p->rank = p->alternative = rank;
    p->workspace_bytes = rank >= 0 ? p->cand_ws[rank] : 0;
    s_describe(p);
    return 0;
}

/* Holds the stream for ns nanoseconds, so that the timed launches queued behind it run back to
 * back on the GPU instead of at the host's launch rate. */
static __global__ void k_linear_spin(uint64_t ns) {
    kern::pdl_begin();
    uint64_t t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

/* Mean time (ms) of one run of candidate rank: the best of kTrials trials of reps back-to-back
 * runs, timed by events on stream. reps follows a first timed run, so that a trial lasts about
 * kTrialMs (2..16 runs): the big buckets' GEMMs, which dominate start-up, get few repetitions.
 * Each trial queues behind a spin kernel long enough to cover the host's time to enqueue it. */
static int s_time_cand(cublasLtHandle_t lt, kern_linear_plan_t *p, int32_t rank, uint16_t *y,
                       const uint16_t *x, const uint16_t *w, const uint16_t *b,
                       const kern_linear_ln_t *ln, void *workspace, cudaStream_t stream,
                       cudaEvent_t e0, cudaEvent_t e1, float *best_ms, com_error_t *err) {
    enum { kTrials = 3, kMinReps = 2, kMaxReps = 16 };
    const float kTrialMs = 0.3f;
    const uint64_t kLaunchNs = 12 * 1000; /* host time to enqueue one run, generously */
    *best_ms = 1e30f;
    int rc = s_run(lt, p, rank, y, x, w, b, ln, workspace, stream, err); /* warm-up */
    int reps = 1;
    for (int t = 0; t <= kTrials && rc == 0; t++) {
        KERN_CUDA_TRY(kern::launch(k_linear_spin, dim3(1), dim3(1), 0, stream,
                                   (uint64_t)reps * kLaunchNs + 20 * 1000),
                      err);
        KERN_CUDA_TRY(cudaEventRecord(e0, stream), err);
        for (int r = 0; r < reps && rc == 0; r++)
            rc = s_run(lt, p, rank, y, x, w, b, ln, workspace, stream, err);
        KERN_CUDA_TRY(cudaEventRecord(e1, stream), err);
        KERN_CUDA_TRY(cudaEventSynchronize(e1), err);
        float ms = 0.f;
        KERN_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1), err);
        ms /= (float)reps;
        if (t == 0) { /* the sizing run: not counted */
            const float want = ms > 0.f ? kTrialMs / ms : (float)kMaxReps;
            reps = want < kMinReps ? kMinReps : want > kMaxReps ? kMaxReps : (int)want;
            continue;
        }
        *best_ms = fminf(*best_ms, ms);
    }
    return rc;
}

extern "C" int kern_linear_plan_tune(cublasLtHandle_t lt, kern_linear_plan_t *p, uint16_t *y,
                                     const uint16_t *x, const uint16_t *w, const uint16_t *b,
                                     const kern_linear_ln_t *ln, void *workspace,
                                     size_t workspace_bytes, cudaStream_t stream, int32_t *chosen,
                                     com_error_t *err) {
    if (!lt || !p || !y || !x || !w || (s_has_bias(p->epi) && !b) || !workspace)
        return com_error_set(err, COM_EINVAL, "linear tune: bad arguments");
    int rc = s_ln_check(p, y, x, ln, "linear tune", err);
    if (rc != 0)
        return rc;
    if (s_has_bias(p->epi))
        KERN_CUBLAS_TRY(
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
            err);
    /* 16-byte alignment, which our configurations need of what they read and write: the GEMM's
     * output is y, or ln->scratch when the LayerNorm runs as a kernel of its own; the fused
     * ones also copy the residual and store out_f32 16 bytes at a time (gemm_wgmma.cu) */
    const bool ln_epi = p->epi == KERN_LINEAR_BIAS_ADD_LN;
    const bool in_ok = kern::aligned16(x) && kern::aligned16(w);
    const bool aligned_unfused = in_ok && kern::aligned16(ln_epi ? ln->scratch : y);
    const bool aligned_fused =
        in_ok && ln_epi && kern::aligned16(y) && kern::aligned16(ln->residual) &&
        kern::aligned16(ln->residual_bf16) && kern::aligned16(ln->residual_f16) &&
        kern::aligned16(ln->out_f32) && kern::aligned16(ln->out_f16);
    cudaEvent_t e0 = NULL, e1 = NULL;
    KERN_CUDA_TRY(cudaEventCreate(&e0), err);
    cudaError_t ce = cudaEventCreate(&e1);
    if (ce != cudaSuccess) {
        cudaEventDestroy(e0);
        KERN_CUDA_TRY(ce, err);
    }
    int32_t best = p->rank;
    bool have = false;
    float best_ms = 1e30f;
    int32_t fastest[2] = {0, 0}; /* per engine (0 cuBLASLt, 1 ours): its fastest rank */
    float fastest_ms[2] = {1e30f, 1e30f};
    /* cuBLASLt's candidates in the heuristic's order, then ours */
    const int32_t n_own = kern_linear_own_count();
    for (int32_t i = 0; i < p->n_cand + n_own && rc == 0; i++) {
        const int32_t rank = i < p->n_cand ? i : KERN_LINEAR_OWN(i - p->n_cand);
        if (rank >= 0 && p->cand_ws[rank] > workspace_bytes)
            continue;
        if (rank < 0 && !s_tunable(p, -1 - rank)) /* prepared iff tunable */
            continue;
        const bool fused = ln_epi && !s_ln_unfused(p, rank);
        if (rank < 0 && !(fused ? aligned_fused : aligned_unfused))
            continue;
        float ms = 0.f;
        rc = s_time_cand(lt, p, rank, y, x, w, b, ln, workspace, stream, e0, e1, &ms, err);
        /* a challenger must win by 3%: timing noise should not undo the heuristic */
        if (rc == 0 && (!have || ms < best_ms * 0.97f))
            best = rank, best_ms = ms, have = true;
        if (rc == 0 && ms < fastest_ms[rank < 0])
            fastest[rank < 0] = rank, fastest_ms[rank < 0] = ms;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (rc != 0)
        return rc;
    p->rank = best;
    p->workspace_bytes = best >= 0 ? p->cand_ws[best] : 0;
    const int other = best >= 0; /* the engine that lost */
    p->alternative = fastest_ms[other] < 1e30f ? fastest[other] : best;
    s_describe(p);
    if (chosen)
        *chosen = best;
    return 0;
}

extern "C" int32_t kern_linear_plan_rank(const kern_linear_plan_t *p) {
    return p ? p->rank : 0;
}

extern "C" int32_t kern_linear_plan_alternative(const kern_linear_plan_t *p) {
    return p ? p->alternative : 0;
}
