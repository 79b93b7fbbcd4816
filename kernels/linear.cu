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
    enum { kMaxAlgos = 8 };
    cublasLtMatmulHeuristicResult_t res[kMaxAlgos];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, pref, kMaxAlgos, res,
                                            &found);
    cublasLtMatmulPreferenceDestroy(pref);
    KERN_CUBLAS_TRY(st, err);
    int usable = 0;
    for (int i = 0; i < found; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        if (usable == rank) {
            p->algo = res[i].algo;
            p->workspace_bytes = res[i].workspaceSize;
            return 0;
        }
        usable++;
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
