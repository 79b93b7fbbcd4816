// Session 22 harness (not part of the build): can a graph launched from the GPU cut the host's
// ~5.5 us floor (session 19's graph_launch2.cu: the launch call 2.2 us, then ~3.3 us until the
// first kernel runs and the last kernel's flag is seen)? A one-thread "launcher" kernel, in a
// graph of its own, spins on a doorbell word in mapped host memory; when the host rings it, the
// launcher launches the work graph from the device (fire-and-forget or tail launch) and
// tail-launches its own graph again to wait for the next ring. The work: the same 33-kernel
// chain as graph_launch2 (plain, and "all": 384-byte params, clusters of 2, 100 KiB smem,
// 5 kernel kinds), with PDL edges, or without where a device graph refuses them.
// Each variant: median and p99 of t0 (ring or launch) -> the last kernel's flag in mapped
// memory, the GPU span (first kernel start -> last kernel end), the host part (difference).
// Build: nvcc -O2 -std=c++17 -arch=sm_90a -rdc=true graph_launch3.cu -lcudadevrt -o graph_launch3
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

struct Big {
    unsigned long long w[48]; // 384 bytes
};

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}

template <int K>
__global__ void k_step(float *scratch, int idx, int last, unsigned long long *times,
                       volatile unsigned *host_flag, const __grid_constant__ Big big) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (idx == 0 && blockIdx.x == 0 && threadIdx.x == 0)
        times[0] = gtime();
    scratch[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f + (float)(big.w[threadIdx.x % 48] & K);
    if (last) {
        __syncthreads();
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            times[1] = gtime();
            __threadfence_system();
            *host_flag = 1;
        }
    }
}

template <int K>
__global__ void k_small(float *scratch, int idx, int last, unsigned long long *times,
                        volatile unsigned *host_flag) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (idx == 0 && blockIdx.x == 0 && threadIdx.x == 0)
        times[0] = gtime();
    scratch[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f + K;
    if (last) {
        __syncthreads();
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            times[1] = gtime();
            __threadfence_system();
            *host_flag = 1;
        }
    }
}

// The doorbell: the host writes ring numbers 1, 2, ...; kStop ends the launcher.
static constexpr unsigned kStop = 0xffffffffu;

struct Launcher {
    cudaGraphExec_t work;
    int tail;      // 1: tail-launch the work (it runs after this launcher graph ends)
    unsigned seen; // the last ring served (device memory, this struct)
};

__global__ void k_launcher(volatile unsigned *doorbell, Launcher *l) {
    const unsigned want = l->seen + 1;
    unsigned v;
    while ((v = *doorbell) != want && v != kStop) {
    }
    if (v == kStop)
        return;
    l->seen = want;
    cudaGraphLaunch(l->work, l->tail ? cudaStreamGraphTailLaunch : cudaStreamGraphFireAndForget);
    cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
}

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
static double pct(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[(size_t)(q * (double)(v.size() - 1))];
}

template <int K> static void set_smem() {
    CK(cudaFuncSetAttribute(k_step<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
}

struct Ctx {
    cudaStream_t st;
    float *scratch;
    unsigned long long *times_h, *times_d;
    volatile unsigned *flag_h;
    unsigned *flag_d;
};

// The 33-kernel chain captured from c.st; all: params + clusters + smem + kinds; pdl: edges.
static cudaGraph_t capture(const Ctx &c, bool all, bool pdl) {
    const int n = 33;
    Big big = {};
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(c.st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; i++) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(24);
        cfg.blockDim = dim3(128);
        cfg.stream = c.st;
        cudaLaunchAttribute at[2];
        int na = 0;
        if (i > 0 && pdl) {
            at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[na++].val.programmaticStreamSerializationAllowed = 1;
        }
        if (all && i % 2 == 1) {
            at[na].id = cudaLaunchAttributeClusterDimension;
            at[na].val.clusterDim.x = 2, at[na].val.clusterDim.y = 1;
            at[na++].val.clusterDim.z = 1;
        }
        cfg.attrs = at;
        cfg.numAttrs = na;
        cfg.dynamicSmemBytes = all ? 100 * 1024 : 0;
        const int last = i == n - 1;
        unsigned *fl = c.flag_d;
        if (all) {
            switch (i % 5) {
            case 0:
                CK(cudaLaunchKernelEx(&cfg, k_step<0>, c.scratch, i, last, c.times_d, fl, big));
                break;
            case 1:
                CK(cudaLaunchKernelEx(&cfg, k_step<1>, c.scratch, i, last, c.times_d, fl, big));
                break;
            case 2:
                CK(cudaLaunchKernelEx(&cfg, k_step<2>, c.scratch, i, last, c.times_d, fl, big));
                break;
            case 3:
                CK(cudaLaunchKernelEx(&cfg, k_step<3>, c.scratch, i, last, c.times_d, fl, big));
                break;
            default:
                CK(cudaLaunchKernelEx(&cfg, k_step<4>, c.scratch, i, last, c.times_d, fl, big));
            }
        } else {
            CK(cudaLaunchKernelEx(&cfg, k_small<0>, c.scratch, i, last, c.times_d, fl));
        }
    }
    CK(cudaStreamEndCapture(c.st, &g));
    return g;
}

static void report(const char *name, const std::vector<double> &launch,
                   const std::vector<double> &total, const std::vector<double> &span) {
    const double l = pct(launch, 0.5), t = pct(total, 0.5), s = pct(span, 0.5);
    printf("%-22s %10.2f %10.2f %10.2f %10.2f %10.2f\n", name, l, t, pct(total, 0.99), s, t - s);
}

// Host launch of the work graph (the engine today). With event: an event recorded after the
// launch, and (printed after the row) t0 -> cudaEventSynchronize returned, once the flag is seen:
// what the engine's completion thread waits for instead of a flag.
static void run_host(const Ctx &c, const char *name, bool all, bool event, int reps) {
    cudaGraph_t g = capture(c, all, true);
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, c.st));
    CK(cudaStreamSynchronize(c.st));
    cudaEvent_t ev;
    CK(cudaEventCreate(&ev));
    std::vector<double> launch, total, span, evt;
    for (int r = 0; r < reps + 50; r++) {
        *c.flag_h = 0;
        const double t0 = now_us();
        CK(cudaGraphLaunch(ge, c.st));
        if (event)
            CK(cudaEventRecord(ev, c.st));
        const double t1 = now_us();
        while (*c.flag_h == 0) {
        }
        const double t2 = now_us();
        if (event)
            CK(cudaEventSynchronize(ev));
        const double t3 = now_us();
        if (r >= 50) {
            launch.push_back(t1 - t0);
            total.push_back(t2 - t0);
            span.push_back((double)(c.times_h[1] - c.times_h[0]) / 1000.0);
            evt.push_back(t3 - t0);
        }
        CK(cudaStreamSynchronize(c.st));
    }
    report(name, launch, total, span);
    if (event)
        printf("%-22s t0 -> event seen: median %.2f p99 %.2f us\n", name, pct(evt, 0.5),
               pct(evt, 0.99));
    CK(cudaEventDestroy(ev));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
}

// Device launch: the launcher graph spins on the doorbell and launches the work graph.
static void run_device(const Ctx &c, const char *name, bool all, bool pdl, bool tail, int reps) {
    cudaGraph_t g = capture(c, all, pdl);
    cudaGraphExec_t ge;
    cudaError_t ce = cudaGraphInstantiate(&ge, g, cudaGraphInstantiateFlagDeviceLaunch);
    if (ce != cudaSuccess) {
        printf("%-22s refused: cudaGraphInstantiate(DeviceLaunch): %s\n", name,
               cudaGetErrorString(ce));
        (void)cudaGetLastError();
        CK(cudaGraphDestroy(g));
        return;
    }
    CK(cudaGraphUpload(ge, c.st));
    volatile unsigned *bell_h;
    unsigned *bell_d;
    CK(cudaHostAlloc((void **)&bell_h, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&bell_d, (void *)bell_h, 0));
    *bell_h = 0;
    Launcher l_h = {ge, tail ? 1 : 0, 0}, *l_d;
    CK(cudaMalloc(&l_d, sizeof l_h));
    CK(cudaMemcpy(l_d, &l_h, sizeof l_h, cudaMemcpyHostToDevice));
    cudaStream_t ls;
    CK(cudaStreamCreateWithFlags(&ls, cudaStreamNonBlocking));
    cudaGraph_t lg;
    CK(cudaStreamBeginCapture(ls, cudaStreamCaptureModeThreadLocal));
    k_launcher<<<1, 1, 0, ls>>>(bell_d, l_d);
    CK(cudaStreamEndCapture(ls, &lg));
    cudaGraphExec_t lge;
    CK(cudaGraphInstantiate(&lge, lg, cudaGraphInstantiateFlagDeviceLaunch));
    CK(cudaGraphUpload(lge, ls));
    CK(cudaStreamSynchronize(ls));
    CK(cudaGraphLaunch(lge, ls));
    std::vector<double> launch, total, span;
    for (int r = 0; r < reps + 50; r++) {
        *c.flag_h = 0;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const double t0 = now_us();
        *bell_h = (unsigned)r + 1;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const double t1 = now_us();
        const double give_up = t0 + 1e6;
        while (*c.flag_h == 0) {
            if (now_us() > give_up) {
                printf("%-22s no flag after 1 s at ring %d (%s)\n", name, r + 1,
                       cudaGetErrorString(cudaStreamQuery(ls)));
                exit(1);
            }
        }
        const double t2 = now_us();
        if (r >= 50) {
            launch.push_back(t1 - t0);
            total.push_back(t2 - t0);
            span.push_back((double)(c.times_h[1] - c.times_h[0]) / 1000.0);
        }
        // let the work graph end and the launcher re-arm (as the host variant synchronises)
        const double settle = now_us() + 60;
        while (now_us() < settle) {
        }
    }
    *bell_h = kStop;
    CK(cudaStreamSynchronize(ls));
    CK(cudaDeviceSynchronize());
    report(name, launch, total, span);
    CK(cudaGraphExecDestroy(lge));
    CK(cudaGraphDestroy(lg));
    CK(cudaStreamDestroy(ls));
    CK(cudaFree(l_d));
    CK(cudaFreeHost((void *)bell_h));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 2000;
    CK(cudaSetDevice(0));
    // spinning waits: what the default (auto) picks on the engine's 16-core host
    CK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
    set_smem<0>(), set_smem<1>(), set_smem<2>(), set_smem<3>(), set_smem<4>();
    Ctx c;
    CK(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking));
    CK(cudaMalloc(&c.scratch, 1 << 20));
    CK(cudaMemset(c.scratch, 0, 1 << 20));
    CK(cudaHostAlloc(&c.times_h, 2 * sizeof *c.times_h, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&c.times_d, c.times_h, 0));
    CK(cudaHostAlloc((void **)&c.flag_h, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&c.flag_d, (void *)c.flag_h, 0));
    printf("%-22s %10s %10s %10s %10s %10s\n", "variant", "launch_us", "t0_flag", "t0_flag_p99",
           "gpu_span", "host_part");
    for (int all = 0; all < 2; all++) {
        char n[64];
        snprintf(n, sizeof n, "host %s", all ? "all" : "plain");
        run_host(c, n, all, false, reps);
        snprintf(n, sizeof n, "host+event %s", all ? "all" : "plain");
        run_host(c, n, all, true, reps);
        snprintf(n, sizeof n, "device fnf pdl %s", all ? "all" : "plain");
        run_device(c, n, all, true, false, reps);
        snprintf(n, sizeof n, "device fnf %s", all ? "all" : "plain");
        run_device(c, n, all, false, false, reps);
        snprintf(n, sizeof n, "device tail pdl %s", all ? "all" : "plain");
        run_device(c, n, all, true, true, reps);
    }
    return 0;
}
