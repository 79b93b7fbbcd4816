// docs/results/2026-12-01-h200-session8/run1 — scratch microbenchmark (not built by CMake):
// per-node cost of a PDL kernel chain in a CUDA graph vs grid barriers in one persistent kernel
// (H200), with and without a little L2 work per phase. Build: nvcc -O3 -arch=sm_90a THIS.cu
#include <cstdio>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e = (x);                                                                       \
        if (e) {                                                                                   \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));                       \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
__device__ __forceinline__ void pdl_wait() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void pdl_trig() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// work: each CTA reads `words` uint4 of src (L2) at its slice, sums, writes one value to dst
__device__ __forceinline__ void work(const uint4 *src, float *dst, int words, int phase) {
    float s = 0.f;
    const uint4 *p = src + ((size_t)(blockIdx.x + phase * 7) % gridDim.x) * words;
    for (int i = threadIdx.x; i < words; i += blockDim.x) {
        uint4 v = p[i];
        s += __uint_as_float(v.x) + __uint_as_float(v.w);
    }
    if (s == 1234.5f)
        dst[blockIdx.x] = s;
}
__global__ void k_node(const uint4 *src, float *dst, int words, int phase) {
    pdl_wait();
    pdl_trig();
    if (words)
        work(src, dst, words, phase);
}
__device__ __forceinline__ void bar(unsigned *arrived, unsigned expected) {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned nb = blockIdx.x == 0 ? 0x80000000u - (expected - 1) : 1u;
        unsigned old;
        asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(arrived), "r"(nb)
                     : "memory");
        unsigned cur;
        do {
            asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(cur) : "l"(arrived) : "memory");
        } while (((old ^ cur) & 0x80000000u) == 0);
    }
    __syncthreads();
}
__global__ void k_persist(const uint4 *src, float *dst, int words, int phases, unsigned *arrived) {
    for (int p = 0; p < phases; p++) {
        if (words)
            work(src, dst, words, p);
        bar(arrived, gridDim.x);
    }
}
__global__ void k_coop(const uint4 *src, float *dst, int words, int phases) {
    cg::grid_group g = cg::this_grid();
    for (int p = 0; p < phases; p++) {
        if (words)
            work(src, dst, words, p);
        g.sync();
    }
}
// replays ge 20 times to warm up, then reps times between two events; prints us per replay
// and per phase (phases per replay)
static int time_graph(cudaGraphExec_t ge, cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, int reps,
                      int phases, const char *name) {
    for (int i = 0; i < 20; i++)
        CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < reps; i++)
        CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    printf("%-34s %10.2f %10.3f\n", name, ms * 1000 / reps, ms * 1000 / reps / phases);
    return 0;
}
int main() {
    int nsm;
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    uint4 *src;
    float *dst;
    unsigned *arr;
    CK(cudaMalloc(&src, 64 << 20));
    CK(cudaMemset(src, 0, 64 << 20));
    CK(cudaMalloc(&dst, 4096));
    CK(cudaMalloc(&arr, 4));
    CK(cudaMemset(arr, 0, 4));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    const int N = 32, threads = 256, reps = 200;
    int wl[] = {0, 512, 2048, 8192}; // uint4 per CTA: 0, 8 KB, 32 KB, 128 KB
    printf("%-34s %10s %10s\n", "case", "us/replay", "us/phase");
    for (int wi = 0; wi < 4; wi++) {
        int words = wl[wi];
        for (int pdl = 0; pdl < 2; pdl++) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            for (int i = 0; i < N; i++) {
                cudaLaunchConfig_t c = {};
                c.gridDim = nsm;
                c.blockDim = threads;
                c.stream = st;
                cudaLaunchAttribute a[1];
                a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
                a[0].val.programmaticStreamSerializationAllowed = 1;
                c.attrs = a;
                c.numAttrs = pdl;
                CK(cudaLaunchKernelEx(&c, k_node, (const uint4 *)src, dst, words, i));
            }
            CK(cudaStreamEndCapture(st, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            char name[64];
            snprintf(name, 64, "graph %d nodes pdl=%d work=%dKB", N, pdl, words * 16 / 1024);
            if (time_graph(ge, st, e0, e1, reps, N, name))
                return 1;
        }
        for (int kind = 0; kind < 2; kind++) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            cudaLaunchConfig_t c = {};
            c.gridDim = nsm;
            c.blockDim = threads;
            c.stream = st;
            cudaLaunchAttribute a[1];
            a[0].id = cudaLaunchAttributeCooperative;
            a[0].val.cooperative = 1;
            c.attrs = a;
            c.numAttrs = 1;
            if (kind == 0)
                CK(cudaLaunchKernelEx(&c, k_persist, (const uint4 *)src, dst, words, N, arr));
            else
                CK(cudaLaunchKernelEx(&c, k_coop, (const uint4 *)src, dst, words, N));
            CK(cudaStreamEndCapture(st, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            char name[64];
            snprintf(name, 64, "%s %d barriers work=%dKB", kind ? "cg-sync" : "own-bar", N,
                     words * 16 / 1024);
            if (time_graph(ge, st, e0, e1, reps, N, name))
                return 1;
        }
    }
    return 0;
}
