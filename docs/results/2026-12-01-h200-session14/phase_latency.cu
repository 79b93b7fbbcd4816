// phase_latency.cu — a study for the next GPU session (session 14, not yet run): what one
// dependent step costs on the H200 when the steps are (a) a chain of kernels in a CUDA graph with
// programmatic dependent launch, as the engine's forward pass is today (~4.1 us a node at
// MiniLM 1 x 128, most of it the nodes' own latency), or (b) phases of one persistent kernel
// separated by a grid-wide barrier (a "megakernel"). Each step does the same small dependent
// work: every CTA reads K slices of 1 KiB that other CTAs wrote in the step before (from L2:
// ld.global.cg), adds them, and writes its own slice. K = 0 measures the synchronisation alone.
// If (b) costs well under (a) per step with K = 8-32, a persistent forward pass for the latency
// buckets is worth building; if not, the chain stays (docs/engine.md "Why one graph of many
// kernels").
// Build: nvcc -O3 -arch=sm_90 -std=c++17 -o phase_latency phase_latency.cu
// Run:   ./phase_latency [STEPS]   (prints a table, one line per variant)
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

constexpr int kThreads = 256, kSlice = 256; // one float per thread per slice (1 KiB)

__device__ __forceinline__ float ld_cg(const float *p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void red_release_add(unsigned *p, unsigned v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// one step's work for CTA b at step s: read K slices of the buffer written at step s - 1
__device__ __forceinline__ void step_work(float *buf, int b, int s, int ctas, int K) {
    const float *in = buf + (size_t)(s & 1) * ctas * kSlice;
    float *out = buf + (size_t)((s + 1) & 1) * ctas * kSlice;
    float acc = 0.f;
    for (int k = 1; k <= K; k++)
        acc += ld_cg(in + (size_t)((b + k) % ctas) * kSlice + threadIdx.x);
    out[(size_t)b * kSlice + threadIdx.x] = acc * 0.5f + 1.0f;
}

// (b) persistent: steps separated by a barrier on a monotonic counter (no reset between steps)
__global__ void __launch_bounds__(kThreads)
    k_persistent(float *buf, unsigned *count, int steps, int K) {
    const int ctas = gridDim.x;
    for (int s = 0; s < steps; s++) {
        step_work(buf, blockIdx.x, s, ctas, K);
        __syncthreads();
        if (threadIdx.x == 0) {
            red_release_add(count, 1u);
            const unsigned target = (unsigned)(s + 1) * (unsigned)ctas;
            while (ld_acquire(count) < target) {
            }
        }
        __syncthreads();
    }
}

// (b') the same with cooperative_groups' grid.sync()
__global__ void __launch_bounds__(kThreads) k_persistent_cg(float *buf, int steps, int K) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int s = 0; s < steps; s++) {
        step_work(buf, blockIdx.x, s, gridDim.x, K);
        grid.sync();
    }
}

// (a) one kernel per step, programmatic dependent launch (wait before reading, trigger after)
__global__ void __launch_bounds__(kThreads) k_step(float *buf, int s, int K) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
    step_work(buf, blockIdx.x, s, gridDim.x, K);
}

static float time_chain(float *buf, int ctas, int steps, int K, bool pdl, cudaStream_t st) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int s = 0; s < steps; s++) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(ctas);
        cfg.blockDim = dim3(kThreads);
        cfg.stream = st;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = pdl ? 1 : 0;
        CHECK(cudaLaunchKernelEx(&cfg, k_step, buf, s, K));
    }
    CHECK(cudaStreamEndCapture(st, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaGraphLaunch(ge, st)); // warm-up
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        CHECK(cudaEventRecord(e0, st));
        CHECK(cudaGraphLaunch(ge, st));
        CHECK(cudaEventRecord(e1, st));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        best = ms < best ? ms : best;
    }
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    return best * 1000.f / steps;
}

static float time_persistent(float *buf, unsigned *count, int ctas, int steps, int K, bool cg,
                             cudaStream_t st) {
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int r = 0; r < 6; r++) { // the first is a warm-up
        CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned), st));
        CHECK(cudaEventRecord(e0, st));
        if (cg) {
            void *args[] = {&buf, &steps, &K};
            CHECK(cudaLaunchCooperativeKernel((void *)k_persistent_cg, dim3(ctas), dim3(kThreads),
                                              args, 0, st));
        } else {
            void *args[] = {&buf, &count, &steps, &K};
            CHECK(cudaLaunchCooperativeKernel((void *)k_persistent, dim3(ctas), dim3(kThreads),
                                              args, 0, st));
        }
        CHECK(cudaEventRecord(e1, st));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0)
            best = ms < best ? ms : best;
    }
    return best * 1000.f / steps;
}

int main(int argc, char **argv) {
    const int steps = argc > 1 ? atoi(argv[1]) : 2000;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const int ctas = prop.multiProcessorCount;
    float *buf;
    unsigned *count;
    CHECK(cudaMalloc(&buf, 2 * (size_t)ctas * kSlice * sizeof(float)));
    CHECK(cudaMemset(buf, 0, 2 * (size_t)ctas * kSlice * sizeof(float)));
    CHECK(cudaMalloc(&count, sizeof(unsigned)));
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    printf("%s, %d SMs, %d CTAs x %d threads, %d steps; us per step (best of 5)\n", prop.name,
           prop.multiProcessorCount, ctas, kThreads, steps);
    printf("%-4s %12s %12s %16s %16s\n", "K", "chain", "chain+PDL", "persistent", "persistent cg");
    const int Ks[] = {0, 1, 8, 32};
    for (int K : Ks) {
        const float a = time_chain(buf, ctas, steps, K, false, st);
        const float b = time_chain(buf, ctas, steps, K, true, st);
        const float c = time_persistent(buf, count, ctas, steps, K, false, st);
        const float d = time_persistent(buf, count, ctas, steps, K, true, st);
        printf("%-4d %12.3f %12.3f %16.3f %16.3f\n", K, a, b, c, d);
    }
    return 0;
}
