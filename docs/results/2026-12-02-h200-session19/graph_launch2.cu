// Session 19 harness (not part of the build): why the engine's graph launch call takes ~5 us
// (bench_engine_cuda's host share: enqueue 5.0-7.5 us, of which the CUDA calls 4.6-6.5 us) when
// session 18's graph_launch.cu measured 1.3 us for 35 tiny PDL-chained kernels. The same chain
// of 33 kernels, each variant changing one thing the engine's kernels have:
//   plain    tiny kernel, 5 scalar/pointer params (session 18's)
//   params   + a 384-byte __grid_constant__ parameter (three CUtensorMaps' worth)
//   cluster  + a cluster of 2 CTAs (the split-K GEMMs)
//   smem     + 100 KiB of dynamic shared memory (the GEMMs, pooling)
//   kinds    5 distinct kernel functions in turn (the engine's ~8 kinds)
//   events   plain between two cudaEventRecord calls (the engine's submit)
//   all      params + cluster on every other kernel + smem + kinds
// Each: median of the launch call(s), t0 -> host flag raised by the last kernel, GPU span; once
// relaunching the same graph, once rotating among 4 instantiations of it (the engine keeps one
// graph per bucket, staging slot and lane, and consecutive chunks take consecutive slots).
// Build: nvcc -O2 -std=c++17 -arch=sm_90a graph_launch2.cu -o graph_launch2
#include <algorithm>
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

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

enum { kPlain, kParams, kCluster, kSmem, kKinds, kEvents, kAll, kN };
static const char *names[kN] = {"plain", "params", "cluster", "smem", "kinds", "events", "all"};

template <int K> static void set_smem() {
    CK(cudaFuncSetAttribute(k_step<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    CK(cudaFuncSetAttribute(k_small<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 2000, n = 33;
    CK(cudaSetDevice(0));
    set_smem<0>(), set_smem<1>(), set_smem<2>(), set_smem<3>(), set_smem<4>();
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t ev0, ev1;
    CK(cudaEventCreate(&ev0));
    CK(cudaEventCreate(&ev1));
    float *scratch;
    CK(cudaMalloc(&scratch, 1 << 20));
    CK(cudaMemset(scratch, 0, 1 << 20));
    unsigned long long *times_h, *times_d;
    CK(cudaHostAlloc(&times_h, 2 * sizeof *times_h, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&times_d, times_h, 0));
    volatile unsigned *flag_h;
    unsigned *flag_d;
    CK(cudaHostAlloc((void **)&flag_h, 64, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&flag_d, (void *)flag_h, 0));
    Big big = {};
    printf("%8s %6s %12s %12s %12s %12s\n", "variant", "graphs", "launch_us", "t0_flag_us",
           "gpu_span_us", "host_part_us");
    for (int v = 0; v < kN; v++) {
        cudaGraph_t g;
        cudaGraphExec_t ge[4];
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < n; i++) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(24);
            cfg.blockDim = dim3(128);
            cfg.stream = st;
            cudaLaunchAttribute at[2];
            int na = 0;
            if (i > 0) {
                at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
                at[na++].val.programmaticStreamSerializationAllowed = 1;
            }
            if ((v == kCluster || (v == kAll && i % 2 == 1))) {
                at[na].id = cudaLaunchAttributeClusterDimension;
                at[na].val.clusterDim.x = 2, at[na].val.clusterDim.y = 1;
                at[na++].val.clusterDim.z = 1;
            }
            cfg.attrs = at;
            cfg.numAttrs = na;
            cfg.dynamicSmemBytes = v == kSmem || v == kAll ? 100 * 1024 : 0;
            const int kind = v == kKinds || v == kAll ? i % 5 : 0, last = i == n - 1;
            unsigned *fl = flag_d;
            if (v == kParams || v == kAll) {
                switch (kind) {
                case 0:
                    CK(cudaLaunchKernelEx(&cfg, k_step<0>, scratch, i, last, times_d, fl, big));
                    break;
                case 1:
                    CK(cudaLaunchKernelEx(&cfg, k_step<1>, scratch, i, last, times_d, fl, big));
                    break;
                case 2:
                    CK(cudaLaunchKernelEx(&cfg, k_step<2>, scratch, i, last, times_d, fl, big));
                    break;
                case 3:
                    CK(cudaLaunchKernelEx(&cfg, k_step<3>, scratch, i, last, times_d, fl, big));
                    break;
                default:
                    CK(cudaLaunchKernelEx(&cfg, k_step<4>, scratch, i, last, times_d, fl, big));
                }
            } else {
                switch (kind) {
                case 0:
                    CK(cudaLaunchKernelEx(&cfg, k_small<0>, scratch, i, last, times_d, fl));
                    break;
                case 1:
                    CK(cudaLaunchKernelEx(&cfg, k_small<1>, scratch, i, last, times_d, fl));
                    break;
                case 2:
                    CK(cudaLaunchKernelEx(&cfg, k_small<2>, scratch, i, last, times_d, fl));
                    break;
                case 3:
                    CK(cudaLaunchKernelEx(&cfg, k_small<3>, scratch, i, last, times_d, fl));
                    break;
                default:
                    CK(cudaLaunchKernelEx(&cfg, k_small<4>, scratch, i, last, times_d, fl));
                }
            }
        }
        CK(cudaStreamEndCapture(st, &g));
        for (int k = 0; k < 4; k++) {
            CK(cudaGraphInstantiate(&ge[k], g, 0));
            CK(cudaGraphUpload(ge[k], st));
        }
        CK(cudaStreamSynchronize(st));
        for (int rot = 0; rot < 2; rot++) {
            std::vector<double> launch, total, span;
            for (int r = 0; r < reps + 50; r++) {
                *flag_h = 0;
                const double t0 = now_us();
                if (v == kEvents)
                    CK(cudaEventRecord(ev0, st));
                CK(cudaGraphLaunch(ge[rot ? r % 4 : 0], st));
                if (v == kEvents)
                    CK(cudaEventRecord(ev1, st));
                const double t1 = now_us();
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
            const double l = median(launch), t = median(total), s = median(span);
            printf("%8s %6d %12.2f %12.2f %12.2f %12.2f\n", names[v], rot ? 4 : 1, l, t, s, t - s);
        }
        for (int k = 0; k < 4; k++)
            CK(cudaGraphExecDestroy(ge[k]));
        CK(cudaGraphDestroy(g));
    }
    return 0;
}
