/* kernels/kern_cuda_dev.cuh — device-side helpers shared by the .cu kernels: warp reductions,
 * bf16 vector loads/stores (8 x bf16 = one 16-byte access), the cp.async / ldmatrix / mma.sync
 * wrappers of the tensor-core kernels (gemm_mma.cu, attention.cu), programmatic dependent launch,
 * the launch-argument checks. CUDA C++ only (included by the kernels/ .cu files). Pure device
 * functions; no state. */
#ifndef EMBER_KERNELS_KERN_CUDA_DEV_CUH
#define EMBER_KERNELS_KERN_CUDA_DEV_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <utility>

#include "kernels/kern_abi.h"
#include "kernels/kern_cuda.h"

namespace kern {

/* The attention kernels' lazy rescale (attention.cu, attention_wgmma.cu): O and l are rescaled
 * only when a row's block max passes its reference by more than this (base 2): P <= 2^8 fits
 * bf16 / binary16, and the fp32 sums of <= 2^8 x keys stay exact enough. */
constexpr float kAttnLazy = 8.f;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float bf2f(uint16_t h) {
    return __uint_as_float((uint32_t)h << 16);
}

__device__ __forceinline__ uint16_t f2bf(float f) {
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    return *reinterpret_cast<uint16_t *>(&b);
}

/* 2^x by the special-function unit (~2 ulp; -inf -> +0), what exp2f costs several instructions
 * more for */
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* two floats as one register of two bf16 (lo in the low half) */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* GELU, the exact (erf) form 0.5 z (1 + erf(z / sqrt 2)), in fp32 through tanh: GELU(z) ~
 * h (1 + tanh(h (c1 + c2 h^2))) with h = z / 2 and c1, c2 a minimax fit to the erf form (error
 * 1.29e-4 max(1, |z|); the usual tanh constants give 1.79e-4), tanh by the MUFU approximation.
 * Shared by the bias + GELU kernel and the GEMM epilogues that fuse it, so both round the same
 * value. 6 instructions a value, 5 where an epilogue folds the halving into its bias add (the erf
 * form by A&S 7.1.26 took 13, the packed binary16 form through ex2 ~8: the FFN-up epilogue is
 * issue-bound). Bound, from an emulation over z in [-12, 12] with
 * tanh's error at either extreme of 2^-11 and the result rounded to binary16: |GELU(z) -
 * GELU_exact(z)| <= 7.5e-4 max(1, |z|) (rounding the exact value gives 4.9e-4; 3.7e-4 before
 * rounding), 5.05e-4 measured; bf16's rounding (up to 2^-8 relative) dominates its bound. Large
 * negative z give tanh's -1, so h - h = 0; +inf gives +inf, -inf NaN (inf - inf), NaN stays NaN.
 * (The same form in binary16, tanh.approx.f16x2, ~10 instructions a pair, failed the binary16 test
 * on the H200: z = 2.05 off by 2.7e-3.) */
__device__ __forceinline__ float gelu_erf_of_half(float h) { /* h = z / 2 */
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(h * fmaf(h * h, 0.281172126f, 1.59834111f)));
    return fmaf(h, t, h);
}
__device__ __forceinline__ float gelu_erf(float z) {
    return gelu_erf_of_half(0.5f * z);
}

/* GELU of a pair given as halves (h = z / 2), rounded to binary16 (lo in the low half), for
 * the epilogues that pack the pair anyway and can fold the halving into their bias add:
 * gelu_erf's bits. */
__device__ __forceinline__ uint32_t gelu_erf_h2_of_half(float h0, float h1) {
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %2, %1;"
        : "=r"(r)
        : "f"(gelu_erf_of_half(h0)), "f"(gelu_erf_of_half(h1)));
    return r;
}

/* VEC consecutive bf16 from p (16-byte aligned when VEC == 8) into f[]. */
template <int VEC> __device__ __forceinline__ void load_bf16(const uint16_t *p, float *f) {
    if constexpr (VEC == 8) {
        uint4 u = *reinterpret_cast<const uint4 *>(p);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            f[2 * j] = __uint_as_float(w[j] << 16);
            f[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
        }
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            f[j] = bf2f(p[j]);
    }
}

template <int VEC> __device__ __forceinline__ void store_bf16(uint16_t *p, const float *f) {
    if constexpr (VEC == 8) {
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            w[j] = (uint32_t)f2bf(f[2 * j]) | ((uint32_t)f2bf(f[2 * j + 1]) << 16);
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            p[j] = f2bf(f[j]);
    }
}

/* VEC consecutive IEEE binary16 (the f16 residual stream) from / to p (16-byte aligned when
 * VEC == 8); stores round to nearest even (the caller keeps values in the finite range). */
template <int VEC> __device__ __forceinline__ void load_f16(const uint16_t *p, float *f) {
    if constexpr (VEC == 8) {
        const uint4 u = *reinterpret_cast<const uint4 *>(p);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float2 t = __half22float2(*reinterpret_cast<const __half2 *>(&w[j]));
            f[2 * j] = t.x, f[2 * j + 1] = t.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            f[j] = __half2float(__ushort_as_half(p[j]));
    }
}

template <int VEC> __device__ __forceinline__ void store_f16(uint16_t *p, const float *f) {
    if constexpr (VEC == 8) {
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const __half2 h = __floats2half2_rn(f[2 * j], f[2 * j + 1]);
            w[j] = *reinterpret_cast<const uint32_t *>(&h);
        }
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            p[j] = __half_as_ushort(__float2half_rn(f[j]));
    }
}

/* The 16-bit type as a template parameter (kern_dtype_t, kern_abi.h): one kernel body serves
 * bf16 and binary16 weights and activations. to_f32 / load16 / store16 / pack16 dispatch to the
 * functions above; mma16 is mma.sync m16n8k16 of that type (as mma_bf16, below). */
template <kern_dtype_t D> __device__ __forceinline__ float to_f32(uint16_t v) {
    if constexpr (D == KERN_DTYPE_F16)
        return __half2float(__ushort_as_half(v));
    else
        return bf2f(v);
}
template <kern_dtype_t D, int VEC>
__device__ __forceinline__ void load16(const uint16_t *p, float *f) {
    if constexpr (D == KERN_DTYPE_F16)
        load_f16<VEC>(p, f);
    else
        load_bf16<VEC>(p, f);
}
template <kern_dtype_t D, int VEC>
__device__ __forceinline__ void store16(uint16_t *p, const float *f) {
    if constexpr (D == KERN_DTYPE_F16)
        store_f16<VEC>(p, f);
    else
        store_bf16<VEC>(p, f);
}
/* two floats as one register of two 16-bit values of type D (lo in the low half) */
template <kern_dtype_t D> __device__ __forceinline__ uint32_t pack16(float lo, float hi) {
    if constexpr (D == KERN_DTYPE_F16) {
        const __half2 v = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const uint32_t *>(&v);
    } else {
        return pack_bf16(lo, hi);
    }
}

/* GELU in place on a column pair of 16-bit type D, rounded as that type will round it: binary16
 * packed (unpacked again: packing the result again gives its bits back), bf16 through
 * gelu_erf. Where a binary16 epilogue packs the pair anyway it calls gelu_erf_h2_of_half. */
template <kern_dtype_t D> __device__ __forceinline__ void gelu_pair(float &v0, float &v1) {
    if constexpr (D == KERN_DTYPE_F16) {
        const uint32_t h = gelu_erf_h2_of_half(0.5f * v0, 0.5f * v1);
        v0 = to_f32<D>((uint16_t)(h & 0xffffu));
        v1 = to_f32<D>((uint16_t)(h >> 16));
    } else {
        v0 = gelu_erf(v0), v1 = gelu_erf(v1);
    }
}

template <int VEC> __device__ __forceinline__ void load_f32(const float *p, float *f) {
    if constexpr (VEC == 8) {
        float4 a = *reinterpret_cast<const float4 *>(p),
               b = *reinterpret_cast<const float4 *>(p + 4);
        f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z,
        f[7] = b.w;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            f[j] = p[j];
    }
}

template <int VEC> __device__ __forceinline__ void store_f32(float *p, const float *f) {
    if constexpr (VEC == 8) {
        *reinterpret_cast<float4 *>(p) = make_float4(f[0], f[1], f[2], f[3]);
        *reinterpret_cast<float4 *>(p + 4) = make_float4(f[4], f[5], f[6], f[7]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            p[j] = f[j];
    }
}

/* The second half of a warp-per-row LayerNorm, shared by the fused LayerNorm kernels: row[0..H)
 * (this warp's staging row in shared memory, already filled, with sum = the warp's partial sum
 * of it) is normalised with gamma/beta and written to whichever of out_f32, out_f16 and out_bf16
 * is not NULL, at offset o.
 * Two passes over the row (mean, then the variance of the deviations) keep it exact enough for
 * the references' double-precision comparison. */
template <int VEC>
__device__ __forceinline__ void
layernorm_row_store(const float *row, float sum, int32_t H, float eps,
                    const float *__restrict__ gamma, const float *__restrict__ beta, int64_t o,
                    float *out_f32, uint16_t *out_f16, uint16_t *out_bf16) {
    const int lane = threadIdx.x % 32;
    const float mean = warp_sum(sum) / (float)H;
    float sq = 0.f;
    for (int i = lane * VEC; i < H; i += 32 * VEC)
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float d = row[i + j] - mean;
            sq += d * d;
        }
    const float rstd = rsqrtf(warp_sum(sq) / (float)H + eps);
    for (int i = lane * VEC; i < H; i += 32 * VEC) {
        float y[VEC], g[VEC], be[VEC];
        load_f32<VEC>(gamma + i, g);
        load_f32<VEC>(beta + i, be);
#pragma unroll
        for (int j = 0; j < VEC; j++)
            y[j] = (row[i + j] - mean) * rstd * g[j] + be[j];
        if (out_f32)
            store_f32<VEC>(out_f32 + o + i, y);
        if (out_f16)
            store_f16<VEC>(out_f16 + o + i, y);
        if (out_bf16)
            store_bf16<VEC>(out_bf16 + o + i, y);
    }
}

/* gamma / beta of a register-resident LayerNorm row (layernorm_regs_store's layout: lane lg of
 * a G-lane group holds vectors lg + G k, k < N) */
template <int G, int N>
__device__ __forceinline__ void load_ln_params(const float *gamma, const float *beta, int lg,
                                               float (&g)[N][8], float (&be)[N][8]) {
#pragma unroll
    for (int k = 0; k < N; k++) {
        load_f32<8>(gamma + (lg + G * k) * 8, g[k]);
        load_f32<8>(beta + (lg + G * k) * 8, be[k]);
    }
}

/* Register-resident variant for the hidden sizes with a fixed shape, H = G * N * 8: a group of G
 * lanes (G = 16 or 32, aligned within the warp) holds one row, lane lg owning the 8-element
 * vectors lg + G k (k < N; coalesced) in v[k] (zeros when the row is not live), with gamma/beta
 * already loaded the same way. Two-pass mean / biased variance (group xor-shuffle reductions,
 * every lane of the warp must call this, live or not), then y = (v - mean) * rstd * g + be
 * stored at row offset o to each of out_f32, out_f16 and out_bf16 that is not NULL, when live. */
template <int G, int N>
__device__ __forceinline__ void layernorm_regs_store(const float (&v)[N][8], const float (&g)[N][8],
                                                     const float (&be)[N][8], float eps, bool live,
                                                     int lg, int64_t o, float *out_f32,
                                                     uint16_t *out_f16, uint16_t *out_bf16) {
    static_assert(G == 16 || G == 32, "lane group of 16 or 32");
    constexpr int32_t H = G * N * 8;
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            s += v[k][j];
#pragma unroll
    for (int m = G / 2; m > 0; m >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, m);
    const float mean = s / (float)H;
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < N; k++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float d = v[k][j] - mean;
            sq += d * d;
        }
#pragma unroll
    for (int m = G / 2; m > 0; m >>= 1)
        sq += __shfl_xor_sync(0xffffffffu, sq, m);
    const float rstd = rsqrtf(sq / (float)H + eps);
    if (!live)
        return;
#pragma unroll
    for (int k = 0; k < N; k++) {
        float y[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            y[j] = (v[k][j] - mean) * rstd * g[k][j] + be[k][j];
        const int64_t i = o + (int64_t)(lg + G * k) * 8;
        if (out_f32)
            store_f32<8>(out_f32 + i, y);
        if (out_f16)
            store_f16<8>(out_f16 + i, y);
        if (out_bf16)
            store_bf16<8>(out_bf16 + i, y);
    }
}

/* ---- tensor-core building blocks (sm_80+ PTX), used by gemm_mma.cu and attention.cu ----
 * Ordering: the cp.async wrappers carry a "memory" clobber, so the compiler neither moves plain
 * shared-memory accesses across an issue / commit / wait nor keeps shared values in registers
 * across them. ldmatrix and mma have none (they are asm volatile, which keeps their order
 * relative to the cp.async wrappers); the callers order ldmatrix reads against the copies with
 * cp_async_wait + __syncthreads, and plain stores into the same shared memory come after a
 * __syncthreads. */

/* Shared-memory (state-space) address of a generic pointer into shared memory. */
__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* prefetch.global.L1 of the 128-byte line holding p: a hint, nothing waits for it */
__device__ __forceinline__ void prefetch_l1(const void *p) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(__cvta_generic_to_global(p)));
}
/* ... of every line of bytes [p, end) */
__device__ __forceinline__ void prefetch_l1(const void *p, const void *end) {
    for (const char *a = reinterpret_cast<const char *>((uintptr_t)p & ~(uintptr_t)127);
         a < static_cast<const char *>(end); a += 128)
        prefetch_l1(a);
}

/* 16-byte async global -> shared copy, L2 only (.cg). src_bytes 16 copies; src_bytes 0 reads
 * nothing (src is not dereferenced, so it may point anywhere) and fills dst with zeros. dst and
 * src 16-byte aligned. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}
/* Closes this thread's group of the cp.async copies issued since the last commit (possibly
 * none: an empty group still counts). */
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/* Waits until at most N of this thread's committed groups are pending; groups complete in
 * commit order. Other threads' copies need a barrier after it. */
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Four 8x8 b16 matrices from shared memory: lanes 8i..8i+7 give the row addresses of matrix i
 * (16-byte rows), r_i receives this lane's fragment of matrix i. */
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                            uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
/* The same, each matrix transposed. */
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t &r0, uint32_t &r1,
                                                  uint32_t &r2, uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

/* d += a b: mma.sync m16n8k16, row-major A (4 registers of bf16 pairs), column-major B (b0, b1),
 * fp32 accumulators d[0..3]. */
__device__ __forceinline__ void mma_bf16(float *d, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <kern_dtype_t D>
__device__ __forceinline__ void mma16(float *d, const uint32_t *a, uint32_t b0, uint32_t b1) {
    if constexpr (D == KERN_DTYPE_F16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        mma_bf16(d, a, b0, b1);
}

/* Programmatic dependent launch (sm_90). Every kernel launched by kern::launch calls pdl_wait()
 * before it writes any global memory (the previous grid may still read it) and before it reads
 * anything else: activations, per-batch inputs (ids, cu_seqlens, n_rows, n_tokens). The one
 * exception: data that no kernel ever writes, i.e. the weights (GEMM w and b, LayerNorm gamma
 * and beta), uploaded by host copies before the first launch, may be read before the wait,
 * overlapping the previous grid's tail (gemm_mma.cu prefetches its first weight tiles and its
 * bias, add_layernorm.cu and embed_layernorm.cu load gamma/beta). The wait returns once the
 * previous grid on the stream has finished and its writes are visible, and because every grid
 * waits before it triggers, "finished" is transitive (after its wait, a kernel may read what
 * any earlier one wrote). Hence a second exception: when a grid starts, the one before it has
 * passed its wait, so every grid before that one has finished; what those wrote may be read
 * before the wait too. The attention and pooling kernels read the batch's layout (n_tokens,
 * tok_seq, cu_seqlens, n_seqs, ...) that way, so their headers require that the grid launched
 * just before them did not write it (the engine's pass copies the layout in with its first
 * kernel, several launches earlier). pdl_trigger(), right after the wait, then lets the next grid
 * be launched while this one runs, so its launch latency hides behind this grid's work; its blocks
 * sit in their own pdl_wait() until this grid is done. Both are no-ops when the grid was
 * launched without the attribute. */
__device__ __forceinline__ void pdl_wait() {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void pdl_trigger() {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
/* The first statement of every kernel of ours that reads nothing before the wait. */
__device__ __forceinline__ void pdl_begin() {
    pdl_wait();
    pdl_trigger();
}

/* A thread-block-cluster barrier that orders execution only: every thread of the cluster has
 * arrived before any passes the wait. cooperative_groups' cluster.sync() arrives with release
 * semantics, which ptxas implements as MEMBAR.ALL.GPU: the thread first waits until its global
 * stores are acknowledged (Nsight Compute, session 17: the last barrier of a fused kernel held 24%
 * of its stall samples). For barriers whose only job is a lifetime (no CTA leaves while a peer
 * may still read its shared memory: every peer read has returned its value, used before the
 * arrive, by then). Any thread divergence allowed (not .aligned). */
__device__ __forceinline__ void cluster_barrier_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed;\n"
                 "barrier.cluster.wait;\n" ::
                     : "memory");
}

/* A cluster barrier that publishes this CTA's own shared memory: its threads' earlier writes to
 * their CTA's shared memory are visible to every thread of the cluster (distributed shared
 * memory reads) once it passes the wait. The release is restricted to shared::cta operations, so
 * ptxas emits MEMBAR.ALL.CTA instead of cluster.sync()'s MEMBAR.ALL.GPU (which also waits for
 * every global access of the thread to be performed). Not for writes into a peer's shared memory
 * (shared::cluster: those need cluster.sync()). */
__device__ __forceinline__ void cluster_barrier_own_smem() {
    asm volatile("fence.release.sync_restrict::shared::cta.cluster;\n"
                 "barrier.cluster.arrive.relaxed;\n"
                 "barrier.cluster.wait.acquire;\n" ::
                     : "memory");
}

/* Launches kernel<<<grid, block, smem, stream>>>(args...) with the programmatic-serialisation
 * attribute when kern_pdl_enabled() (so it may start while the previous kernel on the stream is
 * still running; see pdl_wait). Inside stream capture the attribute becomes a programmatic edge
 * of the graph. Returns the launch's cudaError_t. */
/* As launch, in thread-block clusters of the given shape chosen at launch time (1 x 1 x 1: no
 * cluster attribute; a kernel declared with __cluster_dims__ needs none). */
template <typename... KArgs, typename... Args>
static inline cudaError_t launch_cluster(void (*kernel)(KArgs...), dim3 grid, dim3 cluster,
                                         dim3 block, size_t smem, cudaStream_t stream,
                                         Args &&...args) {
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (kern_pdl_enabled()) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    if (cluster.x * cluster.y * cluster.z > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = cluster.x;
        attr[n].val.clusterDim.y = cluster.y;
        attr[n].val.clusterDim.z = cluster.z;
        n++;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

template <typename... KArgs, typename... Args>
static inline cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t stream, Args &&...args) {
    return launch_cluster(kernel, grid, dim3(1, 1, 1), block, smem, stream,
                          std::forward<Args>(args)...);
}

/* Sets kernel's function attributes once per device (a bit per device ordinal in ready;
 * threads racing to set them twice is harmless): the largest shared-memory carve-out, so that as
 * many CTAs fit as registers allow (the default carve-out fits fewer), and more than 48 KiB of
 * dynamic shared memory where smem needs it. */
template <typename... KArgs>
static inline cudaError_t setup_once(void (*kernel)(KArgs...), size_t smem,
                                     std::atomic<uint64_t> &ready) {
    int dev = 0;
    cudaError_t ce = cudaGetDevice(&dev);
    if (ce != cudaSuccess)
        return ce;
    const uint64_t bit = dev < 64 ? (uint64_t)1 << dev : 0;
    if (ready.load(std::memory_order_acquire) & bit)
        return cudaSuccess;
    if (smem > 48 * 1024 &&
        (ce = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)smem)) != cudaSuccess)
        return ce;
    if ((ce = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   (int)cudaSharedmemCarveoutMaxShared)) != cudaSuccess)
        return ce;
    ready.fetch_or(bit, std::memory_order_release);
    return cudaSuccess;
}

/* 16-byte aligned? */
static inline bool aligned16(const void *p) {
    return ((uintptr_t)p & 15u) == 0;
}

} // namespace kern

#endif
