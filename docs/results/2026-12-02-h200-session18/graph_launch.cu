// Session 18 harness (not part of the build): what the host's part of a batch-1 forward pass
// costs. The engine's submit call measured ~9-11 us of MiniLM's 1 x 128 wall time (0.137 ms,
// GPU 0.126), most of it presumably cudaGraphLaunch of a ~35-kernel graph with programmatic
// (PDL) edges. Measures, for a graph of N tiny kernels chained with PDL (each: wait, trigger, a
// store; the last also writes a flag into mapped host memory, as the engine's pooling kernel
// writes the embeddings):
//   plain  t0 -> cudaGraphLaunch -> spin on the host flag: launch call time, t0 to flag
//   armed  the launch made earlier, behind cuStreamWaitValue32 on a mapped host word; t0 ->
//          the host writes the word -> spin on the flag: t0 to flag
// and the GPU span (globaltimer at the first kernel's start and the last one's end), so the
// host-side latency is the rest. Build: nvcc -O2 -std=c++17 -arch=sm_90a graph_launch.cu -lcuda
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CKD(x)                                                                                     \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = nullptr;                                                              \
            cuGetErrorString(r_, &s_);                                                             \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?");              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

// first: record the start; last: record the end and raise the host flag to seq
__global__ void k_step(float *scratch, int idx, int last, unsigned long long *times,
                       volatile unsigned *host_flag, unsigned seq) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (idx == 0 && blockIdx.x == 0 && threadIdx.x == 0)
        times[0] = gtime();
    scratch[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
    if (last) {
        __syncthreads();
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            times[1] = gtime();
            __threadfence_system();
            *host_flag = seq;
        }
    }
}

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Stats {
    double med, p99;
};
static Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v[(size_t)(v.size() * 0.99)]};
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 2000;
    CK(cudaSetDevice(0));
    CKD(cuInit(0));
    int memops = 0;
    CKD(cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 0));
    printf("stream memory ops (wait value NOR) supported: %d\n", memops);
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    float *scratch;
    CK(cudaMalloc(&scratch, 1 << 20));
    CK(cudaMemset(scratch, 0, 1 << 20));
    unsigned long long *times_h, *times_d;
    CK(cudaHostAlloc(&times_h, 2 * sizeof *times_h, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&times_d, times_h, 0));
    volatile unsigned *flag_h; // raised by the last kernel
    unsigned *flag_d;
    CK(cudaHostAlloc((void **)&flag_h, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&flag_d, (void *)flag_h, 0));
    volatile unsigned *go_h; // written by the host, waited on by the stream (armed)
    unsigned *go_d;
    CK(cudaHostAlloc((void **)&go_h, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&go_d, (void *)go_h, 0));
    *flag_h = 0, *go_h = 0;

    const int sizes[] = {1, 8, 35};
    unsigned seq = 0;
    printf("%8s %6s %12s %12s %12s %12s %12s\n", "kernels", "mode", "launch_us", "t0_flag_us",
           "p99_us", "gpu_span_us", "host_part_us");
    for (int n : sizes) {
        // the last kernel writes 1 into the flag; the host clears it before each run
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < n; i++) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(24);
            cfg.blockDim = dim3(128);
            cfg.stream = st;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = at;
            cfg.numAttrs = i > 0 ? 1 : 0;
            CK(cudaLaunchKernelEx(&cfg, k_step, scratch, i, (int)(i == n - 1), times_d,
                                  (volatile unsigned *)flag_d, 1u));
        }
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphUpload(ge, st));
        CK(cudaStreamSynchronize(st));
        for (int mode = 0; mode < 2; mode++) {
            std::vector<double> launch, total, span;
            for (int r = 0; r < reps + 50; r++) {
                *flag_h = 0;
                double t0, t1;
                if (mode == 0) {
                    t0 = now_us();
                    CK(cudaGraphLaunch(ge, st));
                    t1 = now_us();
                } else {
                    seq++;
                    CKD(cuStreamWaitValue32((CUstream)st, (CUdeviceptr)go_d, seq,
                                            CU_STREAM_WAIT_VALUE_GEQ));
                    CK(cudaGraphLaunch(ge, st));
                    // let the launch reach the GPU and the wait start polling
                    const double ta = now_us();
                    while (now_us() - ta < 50.0) {
                    }
                    t0 = now_us();
                    *go_h = seq;
                    t1 = now_us();
                }
                while (*flag_h == 0) {
                }
                const double t2 = now_us();
                if (r >= 50) {
                    launch.push_back(t1 - t0);
                    total.push_back(t2 - t0);
                    span.push_back((double)(times_h[1] - times_h[0]) / 1000.0);
                }
                CK(cudaStreamSynchronize(st));
            }
            const Stats l = stats(launch), t = stats(total), s = stats(span);
            printf("%8d %6s %12.2f %12.2f %12.2f %12.2f %12.2f\n", n, mode ? "armed" : "plain",
                   l.med, t.med, t.p99, s.med, t.med - s.med);
        }
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
    return 0;
}
