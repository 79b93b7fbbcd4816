/* throwaway timing harness (not part of the tree): fused FFN vs the two folded GEMMs */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/half.h"
#include "kernels/ffn_fused.h"
#include "kernels/kern_cuda.h"
#include "kernels/linear.h"
#include "kernels/row_stats.h"

static void *dev(size_t b) {
    void *p;
    KERN_CUDA_FATAL(cudaMalloc(&p, b));
    return p;
}
static uint16_t *up16(size_t n, float lo, float hi, unsigned *seed) {
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        h[i] = com_half_from_f32(lo + (hi - lo) * (float)(*seed >> 8) / 16777216.0f);
    }
    uint16_t *d = dev(n * 2);
    KERN_CUDA_FATAL(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
    free(h);
    return d;
}
static float *upf(size_t n, float lo, float hi, unsigned *seed) {
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * (float)(*seed >> 8) / 16777216.0f;
    }
    float *d = dev(n * 4);
    KERN_CUDA_FATAL(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
    free(h);
    return d;
}
int main(int argc, char **argv) {
    const int T = argc > 1 ? atoi(argv[1]) : 128, H = 384, I = 1536, N = 400;
    unsigned seed = 1;
    cudaStream_t st;
    KERN_CUDA_FATAL(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    uint16_t *x = up16((size_t)T * H, -2, 2, &seed), *y = dev((size_t)T * H * 2),
             *u = dev((size_t)T * I * 2);
    uint16_t *w1 = up16((size_t)I * H, -0.05f, 0.05f, &seed),
             *w2 = up16((size_t)I * H, -0.025f, 0.025f, &seed);
    uint16_t *b1 = up16(I, -1, 1, &seed), *b2 = up16(H, -1, 1, &seed);
    float *c1 = upf(I, -1, 1, &seed), *g = upf(H, 0.5f, 1.5f, &seed),
          *be = upf(H, -.5f, .5f, &seed);
    float *xs = upf((size_t)T * H / 32, 1, 2, &seed), *ys = dev((size_t)T * H / 32 * 4);
    int32_t *dn = dev(4);
    KERN_CUDA_FATAL(cudaMemcpy(dn, &T, 4, cudaMemcpyHostToDevice));
    kern_ffn_folded_args_t a = {.dtype = KERN_DTYPE_F16,
                                .y = y,
                                .y_stats = ys,
                                .x = x,
                                .x_stats = xs,
                                .w1 = w1,
                                .b1 = b1,
                                .c1 = c1,
                                .w2 = w2,
                                .b2 = b2,
                                .gamma = g,
                                .beta = be,
                                .eps = 1e-12f,
                                .n_tokens = dn,
                                .max_tokens = T,
                                .hidden = H,
                                .inter = I};
    com_error_t err = {0};
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int cl = 16; cl >= 8; cl -= 8) {
        kern_ffn_folded_set_cluster(cl);
        for (int i = 0; i < 20; i++)
            if (kern_ffn_folded_cuda(&a, st, &err)) {
                printf("err %s\n", err.msg);
                return 1;
            }
        cudaStreamSynchronize(st);
        /* graph of 12 launches (2 x 6 layers) replayed */
        cudaGraph_t gr;
        cudaGraphExec_t ge;
        KERN_CUDA_FATAL(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < 12; i++)
            kern_ffn_folded_cuda(&a, st, &err);
        KERN_CUDA_FATAL(cudaStreamEndCapture(st, &gr));
        KERN_CUDA_FATAL(cudaGraphInstantiate(&ge, gr, 0));
        for (int i = 0; i < 5; i++)
            cudaGraphLaunch(ge, st);
        cudaEventRecord(e0, st);
        for (int i = 0; i < N / 12; i++)
            cudaGraphLaunch(ge, st);
        cudaEventRecord(e1, st);
        KERN_CUDA_FATAL(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        printf("fused T=%d cluster %d: %.2f us per launch (graph of 12, PDL)\n", T, cl,
               ms * 1000 / (N / 12 * 12));
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(gr);
    }
    kern_ffn_folded_set_cluster(0);
    /* the two folded GEMMs, tuned */
    cublasLtHandle_t lt;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    size_t wsb = 32 << 20;
    void *ws = dev(wsb);
    kern_linear_plan_t *p1 = NULL, *p2 = NULL;
    kern_linear_ln_t l1 = {.eps = 1e-12f, .in_stats = xs, .c = c1};
    kern_linear_ln_t l2 = {.eps = 1e-12f,
                           .residual_x = x,
                           .residual_stats = xs,
                           .gamma = g,
                           .beta = be,
                           .out_stats = ys};
    if (kern_linear_plan_new(lt, T, H, I, KERN_LINEAR_LN_BIAS_GELU, wsb, 0, KERN_DTYPE_F16, &p1,
                             &err) ||
        kern_linear_plan_new(lt, T, I, H, KERN_LINEAR_BIAS_ADD_STATS, wsb, 0, KERN_DTYPE_F16, &p2,
                             &err)) {
        printf("plan %s\n", err.msg);
        return 1;
    }
    int32_t ch1, ch2;
    if (kern_linear_plan_tune(lt, p1, u, x, w1, b1, &l1, ws, wsb, st, &ch1, &err) ||
        kern_linear_plan_tune(lt, p2, y, u, w2, b2, &l2, ws, wsb, st, &ch2, &err)) {
        printf("tune %s\n", err.msg);
        return 1;
    }
    printf("unfused: %s | %s\n", kern_linear_plan_describe(p1), kern_linear_plan_describe(p2));
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    KERN_CUDA_FATAL(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 12; i++) {
        kern_linear_cuda(lt, p1, u, x, w1, b1, &l1, ws, wsb, st, &err);
        kern_linear_cuda(lt, p2, y, u, w2, b2, &l2, ws, wsb, st, &err);
    }
    KERN_CUDA_FATAL(cudaStreamEndCapture(st, &gr));
    KERN_CUDA_FATAL(cudaGraphInstantiate(&ge, gr, 0));
    for (int i = 0; i < 5; i++)
        cudaGraphLaunch(ge, st);
    cudaEventRecord(e0, st);
    for (int i = 0; i < N / 12; i++)
        cudaGraphLaunch(ge, st);
    cudaEventRecord(e1, st);
    KERN_CUDA_FATAL(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    printf("unfused T=%d: %.2f us per FFN (graph of 12 x 2, PDL)\n", T, ms * 1000 / (N / 12 * 12));
    return 0;
}
