/* kernels/linear.cu — dense layers on the GPU through cuBLASLt (contract in linear.h; plain-C
 * reference kern_linear_ref beside it).
 *
 * Row-major y[n, out] = x[n, in] W[out, in]^T is, in cuBLASLt's column-major terms,
 * Y(out x n) = op_T(W: in x out, ld in) * X(in x n, ld in): the "TN" GEMM, the layout cuBLASLt's
 * fastest kernels expect. bf16 A/B/C/D, CUBLAS_COMPUTE_32F (fp32 accumulation), scale type fp32;
 * the bias (bf16, length out = the rows of Y) is added by CUBLASLT_EPILOGUE_BIAS in fp32 before
 * the single rounding to bf16, which is exact with respect to the reference's order up to that
 * rounding. (cuBLASLt's GELU epilogues use the tanh approximation, not BERT's erf GELU, so GELU
 * stays a separate kernel: bias_gelu.cu.)
 * The heuristic runs once, in kern_linear_plan_new (start-up); kern_linear_cuda only calls
 * cublasLtMatmul with the cached algorithm and the caller's preallocated workspace, so it is
 * capture-safe and allocation-free. Stream: the caller's. Tested by tests/test_kernels_cuda.c
 * (several heuristic ranks per shape); timed by bench_kernels_cuda ("linear"). */
#include <stdlib.h>

#include "kernels/kern_cuda_dev.cuh"
#include "kernels/linear.h"

struct kern_linear_plan {
    int32_t n, in, out;
    bool bias;
    size_t workspace_bytes; /* what the chosen algorithm needs */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c; /* W^T, X, Y (C and D share a layout) */
    cublasLtMatmulAlgo_t algo;
    /* the heuristic's usable candidates, best first, for kern_linear_plan_tune */
    int32_t n_cand;
    cublasLtMatmulAlgo_t cand[8];
    size_t cand_ws[8];
};

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

static int s_plan_init(kern_linear_plan_t *p, cublasLtHandle_t lt, size_t workspace_bytes,
                       int32_t rank, com_error_t *err) {
    KERN_CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), err);
    const cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
    KERN_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA), err);
    KERN_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB), err);
    const cublasLtEpilogue_t epi = p->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    KERN_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
        err);
    if (p->bias) {
        const cudaDataType_t bt = CUDA_R_16BF;
        KERN_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                       &bt, sizeof bt),
                        err);
    }
    KERN_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, p->in, p->out, p->in), err);
    KERN_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, p->in, p->n, p->in), err);
    KERN_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, p->out, p->n, p->out), err);
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
    if (rank < usable) {
        p->algo = p->cand[rank];
        p->workspace_bytes = p->cand_ws[rank];
        return 0;
    }
    return com_error_set(err, COM_EUNSUPPORTED,
                         "linear plan %dx%dx%d%s: heuristic offers %d algorithm(s), rank %d asked",
                         (int)p->n, (int)p->in, (int)p->out, p->bias ? " +bias" : "", usable,
                         (int)rank);
}

extern "C" int kern_linear_plan_new(cublasLtHandle_t lt, int32_t n, int32_t in, int32_t out,
                                    bool bias, size_t workspace_bytes, int32_t rank,
                                    kern_linear_plan_t **out_plan, com_error_t *err) {
    *out_plan = NULL;
    if (!lt || n < 1 || in < 1 || out < 1 || rank < 0)
        return com_error_set(err, COM_EINVAL, "linear plan: n %d, in %d, out %d, rank %d", (int)n,
                             (int)in, (int)out, (int)rank);
    kern_linear_plan_t *p = (kern_linear_plan_t *)calloc(1, sizeof *p);
    if (!p)
        return com_error_set(err, COM_ENOMEM, "linear plan: out of memory");
    p->n = n, p->in = in, p->out = out, p->bias = bias;
    int rc = s_plan_init(p, lt, workspace_bytes, rank, err);
    if (rc != 0) {
        kern_linear_plan_destroy(&p);
        return rc;
    }
    *out_plan = p;
    return 0;
}

extern "C" int kern_linear_cuda(cublasLtHandle_t lt, const kern_linear_plan_t *p, uint16_t *y,
                                const uint16_t *x, const uint16_t *w, const uint16_t *b,
                                void *workspace, size_t workspace_bytes, cudaStream_t stream,
                                com_error_t *err) {
    if (!p || !y || !x || !w || (p->bias && !b) || workspace_bytes < p->workspace_bytes ||
        (p->workspace_bytes && !workspace))
        return com_error_set(err, COM_EINVAL, "linear_cuda: bad arguments (workspace %zu < %zu?)",
                             workspace_bytes, p ? p->workspace_bytes : 0);
    if (p->bias)
        KERN_CUBLAS_TRY(
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
            err);
    const float alpha = 1.0f, beta = 0.0f;
    KERN_CUBLAS_TRY(cublasLtMatmul(lt, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c,
                                   &p->algo, workspace, p->workspace_bytes, stream),
                    err);
    return 0;
}

/* Mean time (ms) of reps runs of candidate c, the best of trials, timed by events on stream. */
static int s_time_cand(cublasLtHandle_t lt, kern_linear_plan_t *p, int32_t c, uint16_t *y,
                       const uint16_t *x, const uint16_t *w, void *workspace, cudaStream_t stream,
                       cudaEvent_t e0, cudaEvent_t e1, float *best_ms, com_error_t *err) {
    enum { kWarm = 2, kReps = 5, kTrials = 2 };
    const float alpha = 1.0f, beta = 0.0f;
    *best_ms = 1e30f;
    for (int t = 0; t < kTrials; t++) {
        for (int r = 0; r < (t == 0 ? kWarm : 0) + kReps; r++) {
            if (r == (t == 0 ? kWarm : 0))
                KERN_CUDA_TRY(cudaEventRecord(e0, stream), err);
            KERN_CUBLAS_TRY(cublasLtMatmul(lt, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->c, y,
                                           p->c, &p->cand[c], workspace, p->cand_ws[c], stream),
                            err);
        }
        KERN_CUDA_TRY(cudaEventRecord(e1, stream), err);
        KERN_CUDA_TRY(cudaEventSynchronize(e1), err);
        float ms = 0.f;
        KERN_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1), err);
        *best_ms = fminf(*best_ms, ms / kReps);
    }
    return 0;
}

extern "C" int kern_linear_plan_tune(cublasLtHandle_t lt, kern_linear_plan_t *p, uint16_t *y,
                                     const uint16_t *x, const uint16_t *w, const uint16_t *b,
                                     void *workspace, size_t workspace_bytes, cudaStream_t stream,
                                     int32_t *chosen, com_error_t *err) {
    if (!lt || !p || !y || !x || !w || (p->bias && !b) || !workspace)
        return com_error_set(err, COM_EINVAL, "linear tune: bad arguments");
    if (p->bias)
        KERN_CUBLAS_TRY(
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
            err);
    cudaEvent_t e0 = NULL, e1 = NULL;
    KERN_CUDA_TRY(cudaEventCreate(&e0), err);
    cudaError_t ce = cudaEventCreate(&e1);
    if (ce != cudaSuccess) {
        cudaEventDestroy(e0);
        KERN_CUDA_TRY(ce, err);
    }
    int rc = 0, best = -1;
    float best_ms = 1e30f;
    for (int32_t c = 0; c < p->n_cand && rc == 0; c++) {
        if (p->cand_ws[c] > workspace_bytes)
            continue;
        float ms = 0.f;
        rc = s_time_cand(lt, p, c, y, x, w, workspace, stream, e0, e1, &ms, err);
        /* a challenger must win by 3%: timing noise should not undo the heuristic */
        if (rc == 0 && (best < 0 || ms < best_ms * 0.97f))
            best = c, best_ms = ms;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (rc != 0)
        return rc;
    if (best >= 0) {
        p->algo = p->cand[best];
        p->workspace_bytes = p->cand_ws[best];
    }
    if (chosen)
        *chosen = best;
    return 0;
}
