/* graph timing (PDL chain of 20 identical launches, median of 9) of the QKV plan + attention pair
 * and the fused kern_qkv_attention_cuda, MiniLM shapes, bf16 and f16 */
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <functional>
#include <vector>
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/attention.h"
#include "kernels/linear.h"
#include "kernels/qkv_attention.h"

__global__ void k_null(int *p) {
    kern::pdl_begin();
    if (p && threadIdx.x == 1000)
        *p = 1;
}
static cudaStream_t st;
static double time_graph(std::function<void()> f) {
    const int kRuns = 20, kS = 9;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    f();
    KERN_CUDA_FATAL(cudaStreamSynchronize(st));
    KERN_CUDA_FATAL(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int r = 0; r < kRuns; r++)
        f();
    KERN_CUDA_FATAL(cudaStreamEndCapture(st, &g));
    KERN_CUDA_FATAL(cudaGraphInstantiate(&ge, g, 0));
    KERN_CUDA_FATAL(cudaGraphLaunch(ge, st));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms(kS);
    for (int i = 0; i < kS; i++) {
        cudaEventRecord(e0, st);
        cudaGraphLaunch(ge, st);
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms[i], e0, e1);
    }
    std::sort(ms.begin(), ms.end());
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    return 1e3 * ms[kS / 2] / kRuns;
}
static void *dev_rand16(size_t n, float lo, float hi, unsigned seed) {
    std::vector<uint16_t> h(n);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        h[i] = kern_bf16_from_f32(lo + (hi - lo) * (rand() / (float)RAND_MAX));
    void *d;
    KERN_CUDA_FATAL(cudaMalloc(&d, n * 2 + 16));
    KERN_CUDA_FATAL(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
    return d;
}
int main() {
    const int H = 384, nh = 12, hd = 32, T = 128;
    KERN_CUDA_FATAL(cudaStreamCreate(&st));
    uint16_t *x = (uint16_t *)dev_rand16((size_t)T * H, -1, 1, 1),
             *w = (uint16_t *)dev_rand16((size_t)3 * H * H, -0.07f, 0.07f, 2);
    uint16_t *b = (uint16_t *)dev_rand16(3 * H, -0.5f, 0.5f, 3),
             *y = (uint16_t *)dev_rand16((size_t)T * 3 * H, 0, 0, 4),
             *out = (uint16_t *)dev_rand16((size_t)T * H, 0, 0, 5);
    std::vector<float> part((size_t)T * (H / 64) * 2), ch(3 * H);
    for (size_t i = 0; i < part.size(); i++)
        part[i] = i % 2 ? 64.f : 0.f;
    for (int i = 0; i < 3 * H; i++)
        ch[i] = 0.01f * (i % 7);
    float *dpart, *dc;
    cudaMalloc(&dpart, part.size() * 4);
    cudaMalloc(&dc, ch.size() * 4);
    cudaMemcpy(dpart, part.data(), part.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dc, ch.data(), ch.size() * 4, cudaMemcpyHostToDevice);
    std::vector<int32_t> ts(T, 0);
    int32_t cu128[2] = {0, 128}, cu64[2] = {0, 64};
    int32_t *dts, *dcu128, *dcu64;
    cudaMalloc(&dts, T * 4);
    cudaMalloc(&dcu128, 8);
    cudaMalloc(&dcu64, 8);
    cudaMemcpy(dts, ts.data(), T * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dcu128, cu128, 8, cudaMemcpyHostToDevice);
    cudaMemcpy(dcu64, cu64, 8, cudaMemcpyHostToDevice);
    int *dnull;
    cudaMalloc(&dnull, 4);
    cublasLtHandle_t lt;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    size_t wsb = 32 << 20;
    void *ws;
    cudaMalloc(&ws, wsb);
    const kern_attention_params_t ap = {nh, nh, hd, 0.1767767f, false};
    printf("null kernel chain: %.2f us\n",
           time_graph([&] { kern::launch(k_null, dim3(24), dim3(128), 0, st, dnull); }));
    for (int dt = 0; dt < 2; dt++)
        for (int Tq : {128, 64}) {
            const int32_t *cu = Tq == 128 ? dcu128 : dcu64, *nn = cu + 1;
            for (int fold = 0; fold < 2; fold++) {
                kern_linear_ln_t lnf = {};
                lnf.eps = 1e-12f;
                lnf.in_stats = dpart;
                lnf.c = dc;
                const kern_linear_ln_t *lq = fold ? &lnf : NULL;
                kern_linear_plan_t *p = NULL;
                com_error_t e = {};
                if (kern_linear_plan_new(lt, Tq, H, 3 * H,
                                         fold ? KERN_LINEAR_LN_BIAS : KERN_LINEAR_BIAS, wsb, 0,
                                         (kern_dtype_t)dt, &p, &e) ||
                    kern_linear_plan_tune(lt, p, y, x, w, b, lq, ws, wsb, st, NULL, &e)) {
                    printf("plan: %s\n", e.msg);
                    return 1;
                }
                const double tp = time_graph([&] {
                    com_error_t e2 = {};
                    kern_linear_cuda(lt, p, y, x, w, b, lq, ws, wsb, st, &e2);
                    kern_attention_cuda(&ap, (kern_dtype_t)dt, out, H, y, 3 * H, y + H, 3 * H,
                                        y + 2 * H, 3 * H, cu, dts, nn, Tq, st, &e2);
                });
                kern_qkv_attention_args_t a = {};
                a.dtype = (kern_dtype_t)dt;
                a.out = out;
                a.ldo = H;
                a.x = x;
                a.w = w;
                a.b = b;
                a.in_stats = fold ? dpart : NULL;
                a.c = fold ? dc : NULL;
                a.eps = 1e-12f;
                a.cu_seqlens = cu;
                a.tok_seq = dts;
                a.n_tokens = nn;
                a.max_tokens = Tq;
                a.hidden = H;
                a.n_heads = nh;
                a.head_dim = hd;
                a.scale = ap.scale;
                com_error_t e3 = {};
                if (kern_qkv_attention_cuda(&a, st, &e3)) {
                    printf("fused: %s\n", e3.msg);
                    return 1;
                }
                const double tf = time_graph([&] {
                    com_error_t e2 = {};
                    kern_qkv_attention_cuda(&a, st, &e2);
                });
                printf("%s T=%d%s: pair (%s + attention) %.2f us, fused %.2f us\n",
                       dt ? "f16" : "bf16", Tq, fold ? " fold" : "", kern_linear_plan_describe(p),
                       tp, tf);
                kern_linear_plan_destroy(&p);
            }
        }
    KERN_CUDA_FATAL(cudaDeviceSynchronize());
    printf("errors: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
