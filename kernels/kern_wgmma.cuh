/* kernels/kern_wgmma.cuh — the Hopper warp-group MMA (wgmma) wrappers shared by the sm_90a
 * kernels (gemm_wgmma.cu, attention_wgmma.cu): shared-memory matrix descriptors, fences, commit
 * and wait, and wgmma.mma_async m64nNk16 bf16 -> fp32 with both operands in shared memory (SS) or
 * A in registers (RS). CUDA C++, sm_90a only. Pure device functions; no state.
 *
 * Accumulator layout (m64nN, per warp group of 128 threads): d[4 g + 2 h + e] is row
 * 16 warp + lane / 4 + 8 h, column 8 g + 2 (lane % 4) + e, g = 0 .. N / 8 - 1 (the mma.sync
 * m16n8 layout, one 16-row slab per warp). The RS A fragment of a k16 slice is the mma.sync
 * m16n8k16 A fragment of the warp's 16 rows: {row r, cols 2c..}, {r + 8, 2c..}, {r, 8 + 2c..},
 * {r + 8, 8 + 2c..} with r = lane / 4, c = lane % 4, two bf16 per register. Also declares
 * kern_sm90a_device, the one device check both files use. */
#ifndef EMBER_KERNELS_KERN_WGMMA_CUH
#define EMBER_KERNELS_KERN_WGMMA_CUH

#include <stdint.h>

#include "kernels/kern_abi.h"

/* true iff the current device runs the sm_90a kernels (compute capability 9.0); asked once per
 * device (gemm_wgmma.cu) */
bool kern_sm90a_device(void);

namespace kern {

/* Swizzle modes of a descriptor (bits 62-63), named by the row length they swizzle. */
enum : uint32_t { kSwizzle128B = 1, kSwizzle64B = 2 };

/* Descriptor of a shared-memory tile stored as rows of 64 (128B mode) or 32 (64B mode) bf16,
 * swizzled as TMA writes them (16-byte chunk j of row r at j ^ (r % 8), resp. j ^ (r / 2 % 4)),
 * the tile 1024-byte aligned; sbo: the stride between 8-row groups (8 x the row length), lbo the
 * leading byte offset. K-major operand (rows along M/N, K along the row): lbo is ignored (16 by
 * convention); a k16 step adds 32 bytes to addr. MN-major operand (trans-b: rows along K, N along
 * the row): a k16 step adds 16 rows; sbo is the 8-row group stride and lbo the stride from one
 * row-long piece of N to the next (CUTLASS's canonical ((T,w,m),(8,k)):((1,T,LBO),(wT,SBO))),
 * unused while N fits one row. */
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t mode, uint32_t lbo,
                                               uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
           ((uint64_t)(sbo >> 4) << 32) | ((uint64_t)mode << 62);
}

__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* keeps the compiler from moving accumulator accesses across a wgmma fence or wait */
template <int N> __device__ __forceinline__ void acc_fence(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}
template <int N> __device__ __forceinline__ void acc_fence(uint32_t (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+r"(d[i])::"memory");
}

#define EMBER_F8(i)                                                                                \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#define EMBER_R16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define EMBER_R20 EMBER_R16 ", %16, %17, %18, %19"
#define EMBER_R32                                                                                  \
    EMBER_R16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define EMBER_R64                                                                                  \
    EMBER_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
              "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define EMBER_R96                                                                                  \
    EMBER_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
              "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define EMBER_R128                                                                                 \
    EMBER_R96 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, " \
              "%110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "     \
              "%123, %124, %125, %126, %127"
/* SS: d[0 .. N/2) = (scale_d 0) or += (scale_d 1) A(64 x 16, desc a) B(N x 16, desc b)^T, bf16,
 * fp32 accumulation; A K-major, B K-major (TB 0) or MN-major (TB 1). A, B, S, T: the operand
 * numbers after the N/2 accumulators. */
#define EMBER_WGMMA_SS(N, REGS, A, B, S, T, ...)                                                   \
    template <int TB, kern_dtype_t D>                                                              \
    __device__ __forceinline__ void wgmma_ss##N(float *d, uint64_t a, uint64_t b, int scale_d) {   \
        if constexpr (D == KERN_DTYPE_F16)                                                         \
            asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " S ", 0;\n"                          \
                         " wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 {" REGS "}, " A  \
                         ", " B ", p, 1, 1, 0, " T ";\n}\n"                                        \
                         : __VA_ARGS__                                                             \
                         : "l"(a), "l"(b), "r"(scale_d), "n"(TB));                                 \
        else                                                                                       \
            asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " S ", 0;\n"                          \
                         " wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS        \
                         "}, " A ", " B ", p, 1, 1, 0, " T ";\n}\n"                                \
                         : __VA_ARGS__                                                             \
                         : "l"(a), "l"(b), "r"(scale_d), "n"(TB));                                 \
    }
/* RS: as SS with A's k16 slice in registers (a[4], the fragment layout above). */
#define EMBER_WGMMA_RS(N, REGS, A, B, S, T, ...)                                                   \
    template <int TB, kern_dtype_t D>                                                              \
    __device__ __forceinline__ void wgmma_rs##N(float *d, const uint32_t *a, uint64_t b,           \
                                                int scale_d) {                                     \
        if constexpr (D == KERN_DTYPE_F16)                                                         \
            asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " S ", 0;\n"                          \
                         " wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 {" REGS "}, " A  \
                         ", " B ", p, 1, 1, " T ";\n}\n"                                           \
                         : __VA_ARGS__                                                             \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d),       \
                           "n"(TB));                                                               \
        else                                                                                       \
            asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " S ", 0;\n"                          \
                         " wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS        \
                         "}, " A ", " B ", p, 1, 1, " T ";\n}\n"                                   \
                         : __VA_ARGS__                                                             \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d),       \
                           "n"(TB));                                                               \
    }
#define EMBER_ACC16  EMBER_F8(0), EMBER_F8(8)
#define EMBER_ACC32  EMBER_ACC16, EMBER_F8(16), EMBER_F8(24)
#define EMBER_ACC64  EMBER_ACC32, EMBER_F8(32), EMBER_F8(40), EMBER_F8(48), EMBER_F8(56)
#define EMBER_ACC96  EMBER_ACC64, EMBER_F8(64), EMBER_F8(72), EMBER_F8(80), EMBER_F8(88)
#define EMBER_ACC128 EMBER_ACC96, EMBER_F8(96), EMBER_F8(104), EMBER_F8(112), EMBER_F8(120)
EMBER_WGMMA_SS(32, EMBER_R16, "%16", "%17", "%18", "%19", EMBER_ACC16)
EMBER_WGMMA_SS(64, EMBER_R32, "%32", "%33", "%34", "%35", EMBER_ACC32)
EMBER_WGMMA_SS(128, EMBER_R64, "%64", "%65", "%66", "%67", EMBER_ACC64)
EMBER_WGMMA_SS(192, EMBER_R96, "%96", "%97", "%98", "%99", EMBER_ACC96)
EMBER_WGMMA_SS(256, EMBER_R128, "%128", "%129", "%130", "%131", EMBER_ACC128)
EMBER_WGMMA_RS(8, "%0, %1, %2, %3", "{%4, %5, %6, %7}", "%8", "%9", "%10", "+f"(d[0]), "+f"(d[1]),
               "+f"(d[2]), "+f"(d[3]))
EMBER_WGMMA_RS(32, EMBER_R16, "{%16, %17, %18, %19}", "%20", "%21", "%22", EMBER_ACC16)
EMBER_WGMMA_RS(40, EMBER_R20, "{%20, %21, %22, %23}", "%24", "%25", "%26", EMBER_ACC16, "+f"(d[16]),
               "+f"(d[17]), "+f"(d[18]), "+f"(d[19]))
EMBER_WGMMA_RS(64, EMBER_R32, "{%32, %33, %34, %35}", "%36", "%37", "%38", EMBER_ACC32)
EMBER_WGMMA_RS(192, EMBER_R96, "{%96, %97, %98, %99}", "%100", "%101", "%102", EMBER_ACC96)
#undef EMBER_WGMMA_SS
#undef EMBER_WGMMA_RS
#undef EMBER_ACC128
#undef EMBER_ACC96
#undef EMBER_ACC64
#undef EMBER_ACC32
#undef EMBER_ACC16
#undef EMBER_R128
#undef EMBER_R96
#undef EMBER_R64
#undef EMBER_R32
#undef EMBER_R20
#undef EMBER_R16
#undef EMBER_F8

/* wgmma_ss<N, TB, D> and wgmma_rs<N, TB, D>: the above by width, for operands of type D
 * (kern_dtype_t: bf16 by default, or binary16) */
template <int N, int TB, kern_dtype_t D = KERN_DTYPE_BF16>
__device__ __forceinline__ void wgmma_ss(float *d, uint64_t a, uint64_t b, int scale_d) {
    if constexpr (N == 32)
        wgmma_ss32<TB, D>(d, a, b, scale_d);
    else if constexpr (N == 64)
        wgmma_ss64<TB, D>(d, a, b, scale_d);
    else if constexpr (N == 128)
        wgmma_ss128<TB, D>(d, a, b, scale_d);
    else if constexpr (N == 192)
        wgmma_ss192<TB, D>(d, a, b, scale_d);
    else
        wgmma_ss256<TB, D>(d, a, b, scale_d);
}
template <int N, int TB, kern_dtype_t D = KERN_DTYPE_BF16>
__device__ __forceinline__ void wgmma_rs(float *d, const uint32_t *a, uint64_t b, int scale_d) {
    if constexpr (N == 8)
        wgmma_rs8<TB, D>(d, a, b, scale_d);
    else if constexpr (N == 32)
        wgmma_rs32<TB, D>(d, a, b, scale_d);
    else if constexpr (N == 40)
        wgmma_rs40<TB, D>(d, a, b, scale_d);
    else if constexpr (N == 64)
        wgmma_rs64<TB, D>(d, a, b, scale_d);
    else {
        static_assert(N == 192, "wgmma_rs: N = 8, 32, 40, 64 or 192");
        wgmma_rs192<TB, D>(d, a, b, scale_d);
    }
}
} // namespace kern

#endif
