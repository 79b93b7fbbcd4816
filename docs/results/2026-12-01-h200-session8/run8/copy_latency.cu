// docs/results/2026-12-01-h200-session8/run8 — scratch microbenchmark (not built by CMake): what
// the input/output copies around a 32-kernel graph cost at batch-1 latency, and what a copy
// kernel reading mapped pinned memory plus direct writes into mapped memory save.
// Build: nvcc -O3 -arch=sm_90a THIS.cu
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_) {                                                                                  \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
__device__ __forceinline__ void pdl() {
    asm volatile("griddepcontrol.wait;\ngriddepcontrol.launch_dependents;" ::: "memory");
}
// first kernel: reads n ints of the input (device copy or mapped host), writes a device buffer
__global__ void k_first(const int *in, int n, float *buf) {
    pdl();
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += (float)in[i];
    buf[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// copy-in: one CTA moves n ints from mapped host memory to the device in one parallel round trip
__global__ void k_copy_in(const int *host, int *dev, int n) {
    pdl();
    for (int i = threadIdx.x * 4; i < n; i += blockDim.x * 4) {
        if (i + 4 <= n)
            *reinterpret_cast<int4 *>(dev + i) = *reinterpret_cast<const int4 *>(host + i);
        else
            for (int j = i; j < n; j++)
                dev[j] = host[j];
    }
}
__global__ void k_mid(float *buf) {
    pdl();
    buf[blockIdx.x * blockDim.x + threadIdx.x] += 1.f;
}
// last kernel: writes m floats of output (device buffer or mapped host)
__global__ void k_last(const float *buf, float *out, int m) {
    pdl();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x)
        out[i] = buf[i % 1024];
}
int main() {
    const int nin = 517, nout = 384, N = 32, iters = 2000;
    int *h_in, *d_in, *h_in_dev;
    float *h_out, *d_out, *h_out_dev, *buf;
    CK(cudaHostAlloc(&h_in, 4096, cudaHostAllocMapped));
    CK(cudaHostAlloc(&h_out, 4096, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&h_in_dev, h_in, 0));
    CK(cudaHostGetDevicePointer((void **)&h_out_dev, h_out, 0));
    CK(cudaMalloc(&d_in, 4096));
    CK(cudaMalloc(&d_out, 4096));
    CK(cudaMalloc(&buf, 132 * 256 * 4));
    for (int i = 0; i < nin; i++)
        h_in[i] = i;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    cudaLaunchAttribute a[1];
    a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a[0].val.programmaticStreamSerializationAllowed = 1;
    auto cfg = [&](int grid) {
        cudaLaunchConfig_t c = {};
        c.gridDim = grid;
        c.blockDim = 256;
        c.stream = st;
        c.attrs = a;
        c.numAttrs = 1;
        return c;
    };
    // kind: 0 graph only (device in/out), 1 graph with copies captured inside, 2 zero-copy in+out,
    // 3 zero-copy out only (H2D copy inside)
    auto capture = [&](int kind, cudaGraphExec_t *ge) -> int {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        if (kind == 1 || kind == 3)
            CK(cudaMemcpyAsync(d_in, h_in, nin * 4, cudaMemcpyHostToDevice, st));
        if (kind == 4) {
            auto c = cfg(1);
            CK(cudaLaunchKernelEx(&c, k_copy_in, (const int *)h_in_dev, d_in, nin));
        }
        {
            auto c = cfg(132);
            CK(cudaLaunchKernelEx(&c, k_first, (const int *)(kind == 2 ? h_in_dev : d_in), nin,
                                  buf));
        }
        for (int i = 0; i < N - 2; i++) {
            auto c = cfg(132);
            CK(cudaLaunchKernelEx(&c, k_mid, buf));
        }
        {
            auto c = cfg(2);
            CK(cudaLaunchKernelEx(&c, k_last, (const float *)buf, kind >= 2 ? h_out_dev : d_out,
                                  nout));
        }
        if (kind == 1)
            CK(cudaMemcpyAsync(h_out, d_out, nout * 4, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(ge, g, 0));
        return 0;
    };
    cudaGraphExec_t ge[5];
    for (int k = 0; k < 5; k++)
        if (capture(k, &ge[k]))
            return 1;
    const char *names[6] = {"graph only (no copies)",
                            "copies captured in the graph",
                            "zero-copy in + out",
                            "zero-copy out, H2D copy in graph",
                            "copy, graph, copy (3 stream ops)",
                            "copy-in kernel + zero-copy out"};
    printf("%-36s %12s %12s\n", "case (32 kernels, 1 chunk at a time)", "wall us", "GPU us");
    for (int rep = 0; rep < 2; rep++)
        for (int k = 0; k < 6; k++) {
            std::vector<double> w, g;
            for (int it = 0; it < iters; it++) {
                auto t0 = std::chrono::steady_clock::now();
                CK(cudaEventRecord(e0, st));
                if (k == 4) {
                    CK(cudaMemcpyAsync(d_in, h_in, nin * 4, cudaMemcpyHostToDevice, st));
                    CK(cudaGraphLaunch(ge[0], st));
                    CK(cudaMemcpyAsync(h_out, d_out, nout * 4, cudaMemcpyDeviceToHost, st));
                } else
                    CK(cudaGraphLaunch(ge[k == 5 ? 4 : k], st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                auto t1 = std::chrono::steady_clock::now();
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                w.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
                g.push_back(ms * 1000);
            }
            std::sort(w.begin(), w.end());
            std::sort(g.begin(), g.end());
            printf("%-36s %12.2f %12.2f\n", names[k], w[iters / 2], g[iters / 2]);
        }
    return 0;
}
