/* kernels/qkv_attention.cu — the QKV projection and the attention of one BERT layer as one kernel
 * for buckets of at most 128 tokens (contract in qkv_attention.h). Built for sm_90a only.
 *
 * Why: at one short query (MiniLM, 1 x 128 tokens) the layer's QKV GEMM and attention kernel are
 * each a few microseconds of launch, prologue and tail in a PDL chain (H200: the QKV GEMM added
 * 2.9-3.4 us, the attention 3.0 us per layer, 6 layers), while their arithmetic is tiny (MiniLM:
 * 128 x 1152 x 384 and 12 heads of 128 x 128 x 32). One kernel pays that boundary once, and Q, K
 * and V never leave shared memory.
 *
 * Algorithm: head h is a cluster of CL CTAs (CL = 2 for max_tokens 65..128, 1 for <= 64; chosen
 * at launch from the bucket), CTA rank r = one warp group owning rows [64 r, 64 r + 64) (queries,
 * and keys of the whole cluster); every thread issues cp.async copies (no producer warps).
 *   1. Q|K|V of its rows = x W_h^T over 64-column slices (slice = x [64][64] and W_h's 3 HD rows
 *      [3 HD][64], 128-byte rows swizzled as kern::wgmma_desc's 128B mode reads them, chunk j of
 *      row r at j ^ (r % 8)); per slice 4 x wgmma.m64n(3 HD)k16 (n96 at head dim 32: a wrapper of
 *      this file; n192 at 64), both operands in shared memory, fp32 accumulators (3 HD / 2 per
 *      thread). W_h's first slices are copied before the PDL wait (no kernel writes weights), x
 *      after it. ONE (head dim 32, hidden <= 384 = 6 slices: MiniLM): every slice has a stage of
 *      its own; after the wait all of x is copied as one group, then one wait, one barrier and all
 *      4 nk wgmmas back to back (a wait + barrier per slice cost ~1 us at MiniLM: measured below).
 *      Otherwise a ring of STAGES stages (head dim 32: 6, 64: 5), one cp.async group per stage,
 *      one slice's wgmmas kept in flight, and the stage of slice k - 2 refilled at slice k after
 *      the barrier that follows the wait for its wgmmas (one group per refill step, possibly
 *      empty, so the waits are constants).
 *   2. Epilogue on the accumulators, as gemm_wgmma.cu's: + b, or the folded LayerNorm
 *      rstd (acc - mean c) + b with (mean, rstd) in kern::row_stats_one's arithmetic and order
 *      (the bits of every other consumer); rounded once to D; rows >= n_tokens stored as zeros
 *      (x, in_stats and tok_seq past n_tokens may be stale, even NaN: they are read, then dropped,
 *      so no load waits for n_tokens). b and c (as fp32), the rows' statistics and the keys'
 *      sequences are staged in shared memory from one burst of loads issued right after the x
 *      copies; with ONE their values are used only once the wgmmas are issued (nothing waits for
 *      them before the tensor cores start). Q goes to the CTA's Q tile, K and V to rows 64 r.. of
 *      the K and V tiles of both CTAs of the cluster (st.shared and st.shared::cluster into the
 *      peer: distributed shared memory), tiles laid out as attention_wgmma.cu's (64-byte swizzle
 *      at head dim 32, 128-byte at 64); then proxy fences and the cluster barrier (release /
 *      acquire; a relaxed arrive at the kernel's start, waited for before the first remote store,
 *      makes sure the peer runs).
 *   3. Attention over all 64 CL keys at once (one key block, no online rescaling): S = Q K^T by
 *      HD / 16 x wgmma.m64n(64 CL)k16 (both operands in shared memory, K K-major), the mask (key
 *      j valid for row i iff j < n_tokens and tok_seq[j] == tok_seq[i]; -1 staged past
 *      n_tokens), softmax in fp32 base 2 (scale log2 e folded in, one FFMA + one MUFU per score,
 *      row max and sum over the quad), P re-packed to D as the register A operand of 4 CL x
 *      wgmma.m64nHDk16 with V read MN-major (the transpose flag), O / l rounded once and stored
 *      for the rows < n_tokens: attention_wgmma.cu's step for one block (l sums the unrounded P).
 * Every per-batch number (n_tokens, tok_seq, in_stats, x) is read after the PDL wait. Nothing is
 * atomic: deterministic.
 *
 * Measured on an H200 (MiniLM; "graph": a CUDA graph of 20 back-to-back launches with PDL edges,
 * us per launch, median of 9, scratch harness; a null kernel costs 0.6 us there). This kernel
 * against the tuned QKV plan + kern_attention_cuda pair, graph, bf16: 1 x 128 tokens 5.22 against
 * 6.12 us, folded 5.61 against 5.80; 1 x 64: 4.27 against 5.10, folded 4.63 against 5.24 (f16
 * the same within 0.05 us, but its 1 x 128 pair 5.71). bench_kernels_cuda (plain launches): 1 x
 * 128 5.52 against 6.98, folded 5.83 against 6.87; 1 x 64 4.46 against 6.64, folded 4.88 against
 * 7.16. Earlier versions: one CTA of two warp groups per head (12 CTAs), a wait + barrier per
 * slice: 1 x 128 6.9 us (plain launches, against 6.65 for the pair then); the cluster of two
 * (24 CTAs; per SM half of x, of the GEMM and of the softmax), still waiting per slice: graph
 * 5.77 (folded 6.39). Where those 5.8 us went (graph, 1 x 128, each part left out in turn):
 * attention phase 1.4, GEMM wgmmas 0.5, the per-slice wait + barrier loop 1.0 even with nothing
 * to wait for, cluster barrier + remote stores 0.4, n_tokens / tok_seq loads 0.2, the final
 * stores 0.5, x copies 0.2, W copies 0 (hidden before the wait); the rest is a kernel's fixed cost
 * in the chain. Hence ONE (one wait, staging deferred past the wgmma issue). Still above the
 * ~3.5 us aimed at: the attention phase (MUFU-bound softmax and the dependent wgmma chain of one
 * warp group per SM) and the fold's statistics are the next things to shrink.
 *
 * Launch configurations: D bf16 / f16 x HD 32 / 64 x CL 1 / 2 x ONE (HD 32 only) (the folded
 * epilogue is a run-time branch: one uniform test per element). 128 threads, one CTA per SM.
 * Shared memory (dynamic; + 1 KiB to align the ring to the swizzle atom): STAGES x (64 + 3 HD) x
 * 128 bytes of ring, the Q tile (64 x HD) and the K and V tiles (64 CL x HD), 16-bit: HD 32,
 * CL 2: 6 x 20 + 4 + 16 = 140 KiB; HD 64, CL 2: 5 x 32 + 8 + 32 = 200 KiB; static: the staged b
 * and c (3 HD fp32 each), the rows' statistics and the keys' sequences (<= 2.5 KiB). Registers
 * (ptxas, sm_90a): HD 32 ONE 79 (CL 1) / 123 (CL 2), ring 148 / 150; HD 64 226 / 228; no
 * spills. Tested by tests/test_kernels_cuda.c (qkv_attention: against kern_linear_ref + the fold
 * formula + kern_attention_ref); timed by bench_kernels_cuda ("qkv+attention fused" beside
 * "qkv+attention pair"). */
#include <math.h>

#include <atomic>

#include "kernels/kern_cuda_dev.cuh"
#include "kernels/kern_wgmma.cuh"
#include "kernels/qkv_attention.h"
#include "kernels/row_stats.cuh"

namespace {

constexpr int kBK = 64; /* K columns per slice: one 128-byte swizzle row of 16-bit values */

template <int HD, int CL> struct QkvCfg {
    static constexpr int kKeys = 64 * CL; /* keys = the cluster's rows */
    static constexpr int kN = 3 * HD;     /* the head's Q | K | V columns */
    static constexpr int kStages = HD == 32 ? 6 : 5;
    static constexpr uint32_t kXBytes = 64 * 128u, kWBytes = kN * 128u;
    static constexpr uint32_t kStageBytes = kXBytes + kWBytes;
    static constexpr uint32_t kRing = kStages * kStageBytes;
    static constexpr uint32_t kRowBytes = HD * 2;          /* a row of the Q, K, V tiles */
    static constexpr uint32_t kQTile = 64 * kRowBytes;     /* the CTA's 64 query rows */
    static constexpr uint32_t kKVTile = kKeys * kRowBytes; /* K or V of all the cluster's rows */
    static constexpr uint32_t kMode = HD == 64 ? kern::kSwizzle128B : kern::kSwizzle64B;
    static constexpr uint32_t kGroup = 8 * kRowBytes; /* 8-row group stride of those tiles */
    static constexpr size_t kSmem = (size_t)kRing + kQTile + 2 * kKVTile + 1024;
    static_assert(HD == 32 || HD == 64, "head dim 32 or 64");
    static_assert(CL == 1 || CL == 2, "one or two 64-row blocks");
    static_assert(kStages >= 3, "the ring refills the stage of slice k - 2 at slice k");
    static_assert(kXBytes % 1024 == 0 && kWBytes % 1024 == 0 && kQTile % 1024 == 0 &&
                      kKVTile % 1024 == 0,
                  "tiles stay aligned to the swizzle atom");
    static_assert((kN * 8) % 128 == 0, "every thread copies the same number of 16-byte chunks");
    static_assert(kSmem + 2 * kN * 4 + 64 * 8 + kKeys * 4 <= 227 * 1024, "shared memory per block");
};

/* wgmma.m64n96k16 with both operands in shared memory, K-major, accumulating (scale-d 1): the
 * head-dim-32 Q | K | V width, which kern_wgmma.cuh does not wrap. */
#define QKV_F8(i)                                                                                  \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#define QKV_R48                                                                                    \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "   \
    "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47}"
template <kern_dtype_t D>
__device__ __forceinline__ void wgmma_ss96(float *d, uint64_t a, uint64_t b, int scale_d) {
    if constexpr (D == KERN_DTYPE_F16)
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %50, 0;\n"
                     " wgmma.mma_async.sync.aligned.m64n96k16.f32.f16.f16 " QKV_R48
                     ", %48, %49, p, 1, 1, 0, 0;\n}\n"
                     : QKV_F8(0), QKV_F8(8), QKV_F8(16), QKV_F8(24), QKV_F8(32), QKV_F8(40)
                     : "l"(a), "l"(b), "r"(scale_d));
    else
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %50, 0;\n"
                     " wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 " QKV_R48
                     ", %48, %49, p, 1, 1, 0, 0;\n}\n"
                     : QKV_F8(0), QKV_F8(8), QKV_F8(16), QKV_F8(24), QKV_F8(32), QKV_F8(40)
                     : "l"(a), "l"(b), "r"(scale_d));
}
#undef QKV_R48
#undef QKV_F8

/* d (+)= A B^T, m64nNk16, A and B K-major from shared memory: N = 3 HD */
template <int N, kern_dtype_t D>
__device__ __forceinline__ void wgmma_qkv(float *d, uint64_t a, uint64_t b) {
    if constexpr (N == 96)
        wgmma_ss96<D>(d, a, b, 1);
    else
        kern::wgmma_ss<N, 0, D>(d, a, b, 1);
}

/* descriptor of a [rows][64] 16-bit ring tile (K-major, 128-byte swizzle, 1024-byte groups) */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
    return kern::wgmma_desc(addr, kern::kSwizzle128B, 16, 1024);
}

/* byte offset of 16-byte chunk c of row r in a swizzled Q / K / V tile (attention_wgmma.cu's) */
template <int HD> __device__ __forceinline__ uint32_t swz(int r, int c) {
    const int x = HD == 64 ? (r & 7) : ((r >> 1) & 3);
    return (uint32_t)r * (HD * 2) + ((uint32_t)(c ^ x) << 4);
}

/* this CTA's rank in its cluster (0 without one) and shared-memory addresses in the peer's
 * window; the cluster barrier in halves (arrive, wait; every thread, in turn) */
__device__ __forceinline__ uint32_t peer_addr(uint32_t addr, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait;\n" ::: "memory");
}

template <kern_dtype_t D, int HD, int CL, bool ONE>
__global__ void __launch_bounds__(128, 1)
    k_qkv_attention(uint16_t *__restrict__ out, int64_t ldo, const uint16_t *__restrict__ x,
                    const uint16_t *__restrict__ w, const uint16_t *__restrict__ b,
                    const float *__restrict__ in_stats, const float *__restrict__ c, float eps,
                    const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ n_tokens_p,
                    int32_t max_tokens, int32_t hidden, float scale_log2) {
    using C = QkvCfg<HD, CL>;
    constexpr int S = C::kStages;
    if constexpr (CL > 1) /* the peer has started before anyone writes into its shared memory */
        cluster_arrive_relaxed();
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) float s_bias[C::kN];
    __shared__ __align__(8) float s_c[C::kN];
    __shared__ float2 s_stats[64];                   /* the rows' (mean, rstd); (0, 0) unfolded */
    __shared__ __align__(8) int32_t s_seq[C::kKeys]; /* the keys' sequences, -1 past n_tokens */
    const uint32_t ring = (kern::smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t sq = ring + C::kRing, sk = sq + C::kQTile, sv = sk + C::kKVTile;
    const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32, c4 = lane % 4;
    const int h = (int)blockIdx.x / CL, rank = (int)blockIdx.x % CL;
    const int32_t row0 = 64 * rank; /* the CTA's rows: queries, and keys of the cluster */
    const int32_t H = hidden, nk = hidden / kBK;
    const bool fold = in_stats != nullptr;

    /* slice `slice` of W_h (rows p H + h HD + rr of part p = Q, K, V) into stage st */
    auto load_w = [&](int32_t slice, int st) {
        const uint32_t dst = ring + (uint32_t)st * C::kStageBytes + C::kXBytes;
#pragma unroll
        for (int j = 0; j < C::kN * 8 / 128; j++) {
            const int i = tid + j * 128, r = i / 8, ch = i % 8;
            const int p = r / HD, rr = r % HD;
            const uint16_t *src =
                w + ((int64_t)p * H + (int64_t)h * HD + rr) * H + (int64_t)slice * kBK + ch * 8;
            kern::cp_async16(dst + (uint32_t)r * 128u + ((uint32_t)(ch ^ (r & 7)) << 4), src, 16);
        }
    };
    /* slice `slice` of x's rows [row0, row0 + 64) into stage st; rows >= max_tokens zero-filled
     * (nothing read for them) */
    auto load_x = [&](int32_t slice, int st) {
        const uint32_t dst = ring + (uint32_t)st * C::kStageBytes;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int i = tid + j * 128, r = i / 8, ch = i % 8;
            const bool ok = row0 + r < max_tokens;
            const uint16_t *src =
                x + (int64_t)(ok ? row0 + r : 0) * H + (int64_t)slice * kBK + ch * 8;
            kern::cp_async16(dst + (uint32_t)r * 128u + ((uint32_t)(ch ^ (r & 7)) << 4), src,
                             ok ? 16 : 0);
        }
    };

    /* Before the PDL wait, weights only: W_h's first slices (cp.async group 0) */
    for (int32_t s = 0; s < S && s < nk; s++)
        load_w(s, s);
    kern::cp_async_commit();
    kern::pdl_wait();
    kern::pdl_trigger();
    /* x: ONE, every slice in one group; else the first S slices, one group each (empty past the
     * last slice: the counts stay constant) */
#pragma unroll
    for (int s = 0; s < S; s++) {
        if (s < nk)
            load_x(s, s);
        if (!ONE || s == S - 1)
            kern::cp_async_commit();
    }
    /* Then one burst of loads, in flight with the copies: b and c (weights) of the columns,
     * n_tokens and the keys' sequences (threads 0-63), the CTA's rows' statistics (threads
     * 64-127). Their values are used by stage() only: with ONE after the GEMM's wgmmas are
     * issued, so no thread waits for them before the tensor cores start. */
    constexpr int kBC = (C::kN + 127) / 128; /* columns staged per thread */
    uint16_t bv[kBC];
    float cv[kBC];
#pragma unroll
    for (int j = 0; j < kBC; j++) {
        const int i = tid + 128 * j;
        bv[j] = 0, cv[j] = 0.f;
        if (i < C::kN) {
            const int64_t gc = (int64_t)(i / HD) * H + (int64_t)h * HD + i % HD;
            bv[j] = b[gc];
            if (fold)
                cv[j] = c[gc];
        }
    }
    const int32_t nt = min(*n_tokens_p, max_tokens); /* <= max_tokens by contract */
    int32_t ks[CL];
#pragma unroll
    for (int cl = 0; cl < CL; cl++) {
        const int key = tid + 64 * cl;
        ks[cl] = tid < 64 && key < max_tokens ? tok_seq[key] : -1;
    }
    const int32_t srow = row0 + tid - 64; /* threads 64-127: this row's statistics */
    const bool stats = fold && tid >= 64 && srow < max_tokens;
    const float *part = stats ? in_stats + (int64_t)srow * (H / KERN_STATS_COLS) * 2 : in_stats;
    float2 pv[ONE ? S : 1]; /* ONE: the row's partials (nk <= S blocks) */
#pragma unroll
    for (int k = 0; k < (ONE ? S : 0); k++)
        pv[k] = stats && k < nk ? reinterpret_cast<const float2 *>(part)[k] : make_float2(0.f, 0.f);
    auto stage = [&]() {
#pragma unroll
        for (int j = 0; j < kBC; j++)
            if (tid + 128 * j < C::kN)
                s_bias[tid + 128 * j] = kern::to_f32<D>(bv[j]), s_c[tid + 128 * j] = cv[j];
        if (tid < 64) {
#pragma unroll
            for (int cl = 0; cl < CL; cl++)
                s_seq[tid + 64 * cl] = tid + 64 * cl < nt ? ks[cl] : -1;
        } else {
            float2 st = make_float2(0.f, 0.f);
            if (stats) {
                if constexpr (ONE) /* the partials loaded with the first burst */
                    st = kern::row_stats_regs(pv, nk, H, eps);
                else
                    st = kern::row_stats_one<true>(part, H, eps);
            }
            s_stats[tid - 64] = st;
        }
    };

    /* ---- 1. acc = x W_h^T: the CTA's 64 rows x 3 HD columns ---- */
    float d[C::kN / 2];
#pragma unroll
    for (int i = 0; i < C::kN / 2; i++)
        d[i] = 0.f;
    if constexpr (ONE) {
        /* every slice resident: one wait, one barrier, all 4 nk wgmmas back to back (a wait and
         * a barrier per slice cost ~1 us in all at MiniLM's 6 slices, H200) */
        kern::cp_async_wait<0>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        kern::acc_fence(d);
        kern::wg_fence();
        for (int32_t k = 0; k < nk; k++) {
            const uint32_t sa = ring + (uint32_t)k * C::kStageBytes;
#pragma unroll
            for (int kk = 0; kk < kBK / 16; kk++)
                wgmma_qkv<C::kN, D>(d, desc_sw128(sa + (uint32_t)kk * 32u),
                                    desc_sw128(sa + C::kXBytes + (uint32_t)kk * 32u));
        }
        kern::wg_commit();
        kern::acc_fence(d);
        stage();
        kern::wg_wait<0>();
        kern::acc_fence(d);
        __syncthreads(); /* the staged columns, rows and keys are visible */
    } else {
        stage();
        for (int32_t k = 0; k < nk; k++) {
            const int st = (int)(k % S);
            /* slice k is cp.async group k + 1 (group 0: the first W slices); committed so far:
             * 1 + S + max(0, k - 2) */
            if (k == 0)
                kern::cp_async_wait<S - 1>();
            else if (k == 1)
                kern::cp_async_wait<S - 2>();
            else
                kern::cp_async_wait<S - 3>();
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            __syncthreads(); /* slice k is in shared memory for every thread's wgmma (and the
                                staging above is visible); slice k - 2's wgmmas are done */
            const uint32_t sa = ring + (uint32_t)st * C::kStageBytes;
            kern::acc_fence(d);
            kern::wg_fence();
#pragma unroll
            for (int kk = 0; kk < kBK / 16; kk++)
                wgmma_qkv<C::kN, D>(d, desc_sw128(sa + (uint32_t)kk * 32u),
                                    desc_sw128(sa + C::kXBytes + (uint32_t)kk * 32u));
            kern::wg_commit();
            kern::acc_fence(d);
            if (k >= 2) { /* slice k - 2's stage takes slice k - 2 + S */
                const int32_t nxt = k - 2 + S;
                if (nxt < nk) {
                    load_w(nxt, (int)((k - 2) % S));
                    load_x(nxt, (int)((k - 2) % S));
                }
                kern::cp_async_commit(); /* possibly empty */
            }
            kern::wg_wait<1>(); /* slice k - 1 done: its stage may be refilled after the next
                                   barrier */
            kern::acc_fence(d);
        }
        kern::wg_wait<0>();
        kern::acc_fence(d);
    }

    /* ---- 2. epilogue: + b or the folded LayerNorm, rounded to D: Q into the CTA's Q tile, K
     * and V into row row0 + r of the K and V tiles of every CTA of the cluster ----
     * d[4 g + 2 hh + e]: row 16 warp + lane / 4 + 8 hh, column 8 g + 2 c4 + e */
    if constexpr (CL > 1)
        cluster_wait(); /* the peer runs (its arrive was its first instruction) */
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        const int r = warp * 16 + lane / 4 + 8 * hh;
        const bool live = row0 + r < nt;
        const float2 rs = s_stats[r];
#pragma unroll
        for (int g = 0; g < C::kN / 8; g++) {
            const int col = 8 * g + 2 * c4;
            const float2 bb = *reinterpret_cast<const float2 *>(&s_bias[col]);
            float v0 = d[4 * g + 2 * hh], v1 = d[4 * g + 2 * hh + 1];
            if (fold) {
                const float2 cc = *reinterpret_cast<const float2 *>(&s_c[col]);
                v0 = __fmaf_rn(rs.y, __fmaf_rn(-rs.x, cc.x, v0), bb.x);
                v1 = __fmaf_rn(rs.y, __fmaf_rn(-rs.x, cc.y, v1), bb.y);
            } else {
                v0 += bb.x;
                v1 += bb.y;
            }
            const uint32_t pair = live ? kern::pack16<D>(v0, v1) : 0u;
            const int part = g / (HD / 8), ch = g % (HD / 8); /* 0 Q, 1 K, 2 V; 16-byte chunk */
            if (part == 0) {
                const uint32_t addr = sq + swz<HD>(r, ch) + (uint32_t)c4 * 4u;
                asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(pair) : "memory");
            } else {
                const uint32_t addr =
                    (part == 1 ? sk : sv) + swz<HD>(row0 + r, ch) + (uint32_t)c4 * 4u;
                asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(pair) : "memory");
                if constexpr (CL > 1)
                    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(
                                     peer_addr(addr, (uint32_t)(rank ^ 1))),
                                 "r"(pair)
                                 : "memory");
            }
        }
    }
    /* the generic-proxy stores must be visible to the wgmmas (async proxy) of every CTA of the
     * cluster: proxy fence, then the barrier (release / acquire at cluster scope) */
    if constexpr (CL > 1) {
        asm volatile("fence.proxy.async.shared::cta;\n"
                     "fence.proxy.async.shared::cluster;\n" ::
                         : "memory");
        asm volatile("barrier.cluster.arrive.release;\n"
                     "barrier.cluster.wait.acquire;\n" ::
                         : "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    } else {
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
    }

    /* ---- 3. attention of the CTA's 64 query rows over the cluster's 64 CL keys ---- */
    float s[C::kKeys / 2]; /* s[4 g + 2 i + e]: row i, key 8 g + 2 c4 + e */
    {
        uint64_t desc[HD / 16][2];
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            desc[kk][0] = kern::wgmma_desc(sq + kk * 32u, C::kMode, 16, C::kGroup);
            desc[kk][1] = kern::wgmma_desc(sk + kk * 32u, C::kMode, 16, C::kGroup);
        }
        kern::wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            kern::wgmma_ss<C::kKeys, 0, D>(s, desc[kk][0], desc[kk][1], kk > 0);
        kern::wg_commit();
        kern::wg_wait<0>();
        kern::acc_fence(s);
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) /* keep the descriptors alive up to the wait */
            asm volatile("" ::"l"(desc[kk][0]), "l"(desc[kk][1]) : "memory");
    }
    /* mask: key j is seen by row i iff their sequences match (s_seq[j] is -1 past n_tokens; a
     * row past n_tokens sees nothing) */
    int32_t qseq[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int32_t r = row0 + warp * 16 + lane / 4 + 8 * i;
        qseq[i] = r < nt ? s_seq[r] : -2;
    }
#pragma unroll
    for (int g = 0; g < C::kKeys / 8; g++) {
        const int2 ks = *reinterpret_cast<const int2 *>(&s_seq[8 * g + 2 * c4]);
#pragma unroll
        for (int i = 0; i < 2; i++) {
            if (ks.x != qseq[i])
                s[4 * g + 2 * i] = -INFINITY;
            if (ks.y != qseq[i])
                s[4 * g + 2 * i + 1] = -INFINITY;
        }
    }
    /* softmax in base 2: p = 2^(s scale log2(e) - m), m the row max in scaled units */
    float muse[2], l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 2; i++) {
        float mx[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}; /* 4 short chains */
#pragma unroll
        for (int g = 0; g < C::kKeys / 8; g++)
            mx[g % 2 * 2] = fmaxf(mx[g % 2 * 2], s[4 * g + 2 * i]),
                       mx[g % 2 * 2 + 1] = fmaxf(mx[g % 2 * 2 + 1], s[4 * g + 2 * i + 1]);
        float m = fmaxf(fmaxf(mx[0], mx[1]), fmaxf(mx[2], mx[3]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        muse[i] = m == -INFINITY ? 0.f : m * scale_log2;
    }
    uint32_t pa[C::kKeys / 16][4]; /* P as A fragments of type D, 16 keys each */
#pragma unroll
    for (int kk = 0; kk < C::kKeys / 16; kk++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int i0 = 8 * kk + 2 * r, row = r & 1;
            const float p0 = kern::ex2(fmaf(s[i0], scale_log2, -muse[row]));
            const float p1 = kern::ex2(fmaf(s[i0 + 1], scale_log2, -muse[row]));
            l[row] += p0 + p1;
            pa[kk][r] = kern::pack16<D>(p0, p1);
        }
    /* O = P V, V MN-major (keys along K: a k16 step is 16 rows of the tile) */
    float o[HD / 2];
#pragma unroll
    for (int i = 0; i < HD / 2; i++)
        o[i] = 0.f;
    kern::acc_fence(o);
    kern::wg_fence();
#pragma unroll
    for (int kk = 0; kk < C::kKeys / 16; kk++)
        kern::wgmma_rs<HD, 1, D>(o, pa[kk],
                                 kern::wgmma_desc(sv + (uint32_t)kk * 16u * C::kRowBytes, C::kMode,
                                                  C::kGroup, C::kGroup),
                                 1);
    kern::wg_commit();
    kern::wg_wait<0>();
    kern::acc_fence(o);
#pragma unroll
    for (int kk = 0; kk < C::kKeys / 16; kk++)
        kern::acc_fence(pa[kk]);

#pragma unroll
    for (int i = 0; i < 2; i++) {
        float li = l[i];
        li += __shfl_xor_sync(0xffffffffu, li, 1);
        li += __shfl_xor_sync(0xffffffffu, li, 2);
        const int32_t r = row0 + warp * 16 + lane / 4 + 8 * i;
        if (r >= nt)
            continue;
        const float inv = 1.0f / li;
        uint16_t *orow = out + (int64_t)r * ldo + (int64_t)h * HD + 2 * c4;
#pragma unroll
        for (int g = 0; g < HD / 8; g++)
            *reinterpret_cast<uint32_t *>(orow + 8 * g) =
                kern::pack16<D>(o[4 * g + 2 * i] * inv, o[4 * g + 2 * i + 1] * inv);
    }
}

template <kern_dtype_t D, int HD, int CL, bool ONE>
int s_launch(const kern_qkv_attention_args_t *a, cudaStream_t stream, com_error_t *err) {
    auto *kfn = k_qkv_attention<D, HD, CL, ONE>;
    constexpr size_t smem = QkvCfg<HD, CL>::kSmem;
    static std::atomic<uint64_t> s_ready{0};
    KERN_CUDA_TRY(kern::setup_once(kfn, smem, s_ready), err);
    KERN_CUDA_TRY(kern::launch_cluster(kfn, dim3((unsigned)(a->n_heads * CL)), dim3(CL, 1, 1),
                                       dim3(128), smem, stream, a->out, a->ldo, a->x, a->w, a->b,
                                       a->in_stats, a->c, a->eps, a->tok_seq, a->n_tokens,
                                       a->max_tokens, a->hidden, a->scale * 1.4426950408889634f),
                  err);
    return 0;
}

/* CL: 64-row CTAs per head; ONE: every slice of x and W_h has a stage of its own (head dim 32,
 * hidden <= 384) */
template <kern_dtype_t D, int HD, int CL>
int s_launch_cl(const kern_qkv_attention_args_t *a, cudaStream_t stream, com_error_t *err) {
    if constexpr (HD == 32)
        if (a->hidden / kBK <= QkvCfg<HD, CL>::kStages)
            return s_launch<D, HD, CL, true>(a, stream, err);
    return s_launch<D, HD, CL, false>(a, stream, err);
}

template <kern_dtype_t D, int HD>
int s_launch_hd(const kern_qkv_attention_args_t *a, cudaStream_t stream, com_error_t *err) {
    return a->max_tokens <= 64 ? s_launch_cl<D, HD, 1>(a, stream, err)
                               : s_launch_cl<D, HD, 2>(a, stream, err);
}

template <kern_dtype_t D>
int s_launch_dtype(const kern_qkv_attention_args_t *a, cudaStream_t stream, com_error_t *err) {
    return a->head_dim == 64 ? s_launch_hd<D, 64>(a, stream, err)
                             : s_launch_hd<D, 32>(a, stream, err);
}

} // namespace

extern "C" int kern_qkv_attention_supported(int32_t max_tokens, int32_t hidden, int32_t n_heads,
                                            int32_t head_dim) {
    return max_tokens >= 1 && max_tokens <= KERN_QKV_ATTENTION_MAX_TOKENS &&
           (head_dim == 32 || head_dim == 64) && n_heads >= 1 &&
           (int64_t)n_heads * head_dim == hidden && hidden % KERN_STATS_COLS == 0 &&
           hidden <= KERN_STATS_MAX_COLS && kern_sm90a_device();
}

extern "C" int kern_qkv_attention_cuda(const kern_qkv_attention_args_t *a, cudaStream_t stream,
                                       com_error_t *err) {
    if (!a)
        return com_error_set(err, COM_EINVAL, "qkv_attention_cuda: no arguments");
    if (a->dtype != KERN_DTYPE_BF16 && a->dtype != KERN_DTYPE_F16)
        return com_error_set(err, COM_EINVAL, "qkv_attention_cuda: dtype %d", (int)a->dtype);
    if (!a->out || !a->x || !a->w || !a->b || !a->tok_seq || !a->n_tokens)
        return com_error_set(err, COM_EINVAL,
                             "qkv_attention_cuda: out, x, w, b, tok_seq and n_tokens are required");
    if (a->max_tokens < 1 || a->n_heads < 1 || a->head_dim < 1 ||
        (int64_t)a->n_heads * a->head_dim != a->hidden || !(a->scale > 0.f) || !isfinite(a->scale))
        return com_error_set(err, COM_EINVAL,
                             "qkv_attention_cuda: bad shape (max_tokens %d, hidden %d, n_heads %d, "
                             "head_dim %d, scale %g)",
                             (int)a->max_tokens, (int)a->hidden, (int)a->n_heads, (int)a->head_dim,
                             (double)a->scale);
    if (a->max_tokens > KERN_QKV_ATTENTION_MAX_TOKENS)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "qkv_attention_cuda: max_tokens %d (the fused kernel runs buckets of "
                             "at most %d)",
                             (int)a->max_tokens, KERN_QKV_ATTENTION_MAX_TOKENS);
    if ((a->head_dim != 32 && a->head_dim != 64) || a->hidden % KERN_STATS_COLS != 0 ||
        a->hidden > KERN_STATS_MAX_COLS)
        return com_error_set(err, COM_EUNSUPPORTED,
                             "qkv_attention_cuda: head_dim %d, hidden %d (supported: head_dim 32 "
                             "or 64, hidden a multiple of 64 up to %d)",
                             (int)a->head_dim, (int)a->hidden, KERN_STATS_MAX_COLS);
    if (a->ldo < a->hidden || a->ldo % 2 != 0 || ((uintptr_t)a->out & 3u) ||
        !kern::aligned16(a->x) || !kern::aligned16(a->w))
        return com_error_set(err, COM_EINVAL,
                             "qkv_attention_cuda: x and w need 16-byte alignment, out 4-byte "
                             "alignment and an even ldo >= hidden (ldo %lld, hidden %d)",
                             (long long)a->ldo, (int)a->hidden);
    if (a->in_stats && (!a->c || ((uintptr_t)a->in_stats & 7u) || !(a->eps >= 0.f)))
        return com_error_set(err, COM_EINVAL,
                             "qkv_attention_cuda: the folded LayerNorm needs c, 8-byte aligned "
                             "in_stats and eps >= 0 (eps %g)",
                             (double)a->eps);
    if (!kern_sm90a_device())
        return com_error_set(err, COM_EUNSUPPORTED,
                             "qkv_attention_cuda: needs compute capability 9.0 (sm_90a)");
    return a->dtype == KERN_DTYPE_F16 ? s_launch_dtype<KERN_DTYPE_F16>(a, stream, err)
                                      : s_launch_dtype<KERN_DTYPE_BF16>(a, stream, err);
}
