/* kernels/ffn.cu — the fused FFN sublayer on Hopper (contract in ffn.h):
 * y = LayerNorm(GELU(x W1^T + b1) W2^T + b2 + x) * gamma + beta, hidden 384, in one kernel whose
 * intermediate never leaves the SM. Built for sm_90a only (wgmma, TMA).
 *
 * Why: unfused, the FFN-up GEMM writes the [n, inter] intermediate (4x the hidden width) through
 * its epilogue, the FFN-down GEMM reads it back, and a LayerNorm pass (or a cluster exchange of
 * row statistics) ends the sublayer. Under the H200's 700 W cap the bulk pass is paid in joules,
 * and the intermediate's epilogue and stores were ~5 mJ of a ~130 mJ MiniLM layer
 * (docs/benchmarks.md, thirty-fourth round). Here the intermediate lives in registers.
 *
 * Algorithm: a tile is 128 rows; warp group 0 produces (one thread issues every TMA copy),
 * warp groups 1 and 2 each own 64 of the rows and the whole output
 * row of them: 2 x m64n192 accumulators, 192 fp32 registers a thread (setmaxnreg gives the
 * consumers 240). A tile's x [128][384] is loaded once (six 128-byte-swizzled slabs) and doubles
 * as the residual and as the output staging. The intermediate is walked in chunks of 32 columns;
 * per chunk a ring of equal stages brings W1's [32][384] slice as two K halves and W2's [384][32]
 * slice as two 192-row halves, both groups reading every stage (so the weights cross L2 once per
 * 128 rows, as in the unfused GEMMs' 128-row tiles). Per chunk a group computes h = x W1_c^T
 * (m64n32k16, both operands in shared memory), adds b1, applies GELU and rounds to 16 bits
 * straight into the A fragments of the FFN-down wgmma (the accumulator and A-fragment layouts
 * agree, as in flash attention's P), then y += h W2_c^T (m64n192k16, A from registers). The two
 * groups share the tensor cores: one's GELU runs while the other's wgmmas do. Chunks of
 * 64 columns would re-read x from shared memory half as often, but their 32 more accumulators do
 * not fit beside the 192 (ptxas serialised the wgmmas; measured 1.75x slower).
 * Epilogue (per group, its own rows): + b2 + x (from the staged tile), the row's mean and
 * variance from the accumulators (a row is spread over a quad of lanes: in-thread sums and two
 * shuffles), normalise, round into the staged tile in place, then 16-byte stores of the live
 * rows (and the fp32 copy straight from registers when asked).
 * A CTA a tile (one an SM: 217 KiB of shared memory). Measured and not kept (docs/benchmarks.md,
 * thirty-fifth round): stream-K (the CTAs sharing tiles x chunks evenly, a split tile summed
 * through a workspace) for the partial last wave: the same joules, the same engine time; and
 * ping-pong turns between the two groups' wgmma batches (FlashAttention-3's scheduler
 * barriers): no faster. Below a wave (under 128 x the SMs rows) the GPU is part idle and the
 * unfused pair wins (kern_ffn_wave_rows).
 * PDL: the first stages' weights are requested before the wait; x and n_rows after it. */
#include <cuda.h>

#include <atomic>

#include "kernels/ffn.h"
#include "kernels/kern_cuda.h"
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/kern_tma.cuh"
#include "kernels/kern_wgmma.cuh"

namespace {

using kern::mbar_arrive;
using kern::mbar_expect_tx;
using kern::mbar_init;
using kern::mbar_wait;
using kern::tma_load;

constexpr int kHid = 384;          /* hidden: a 64-row block's output rows fit the registers */
constexpr int kHalf = kHid / 2;    /* one m64n192 accumulator block */
constexpr int kBM = 128;           /* rows per CTA: two consumer groups of 64 */
constexpr int kSlabs = kHid / 64;  /* 128-byte swizzle slabs across a row */
constexpr int kThreads = 384;      /* producer group + two consumer groups */
constexpr int kMaxInter = 2048;    /* b1 staged in shared memory */
constexpr int kConsumerRegs = 240; /* 2 x 128 x 240 + 128 x 24 <= 65536 */
constexpr int kProducerRegs = 24;

struct Params {
    uint16_t *y;
    const uint16_t *b1, *b2;
    const float *gamma, *beta;
    float eps;
    float *out_f32;
    const int32_t *n_rows;
    int32_t n, inter;
};

/* the intermediate's chunk width: 64 leaves no registers (its wgmmas were serialised); W2's stage
 * rows are then 64 bytes (desc_w2) */
constexpr int kBI = 32;

struct Cfg {
    /* a ring stage: W1 [kBI][192] (three [kBI][64] slabs) or W2 [192][kBI] */
    static constexpr int kStage = 3 * kBI * 128;
    static constexpr int kStages = 120 * 1024 / kStage; /* 10 */
    static constexpr int kX = kSlabs * kBM * 128;       /* the x tile: 96 KiB */
    static constexpr int kRing = kStages * kStage;
    static constexpr int kPar = kX + kRing; /* fp32 b2, gamma, beta, then b1 (16-bit) */
    static constexpr size_t kSmem = 1024 + (size_t)kPar + 3 * kHid * 4 + kMaxInter * 2;
    static_assert(kSmem <= 227 * 1024, "shared memory per block");
};

__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
    return kern::wgmma_desc(addr, kern::kSwizzle128B, 16, 1024);
}
/* W2's [192][32] stage: rows of 64 bytes, swizzled as TMA wrote them (64-byte mode) */
__device__ __forceinline__ uint64_t desc_w2(uint32_t addr) {
    return kern::wgmma_desc(addr, kern::kSwizzle64B, 16, 512);
}
/* Descriptor d moved on by off bytes: the start address is the low 14 bits (address / 16) and
 * shared addresses stay below 256 KiB, so it is one add (ncu: rebuilding each of the 28
 * descriptors a chunk from its address took ~8 instructions apiece, most of a consumer warp's
 * issue slots). */
__device__ __forceinline__ uint64_t desc_at(uint64_t d, uint32_t off) {
    return (d & 0xffffffff00000000ull) | (uint32_t)((uint32_t)d + (off >> 4));
}

__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void sts32(uint32_t addr, uint32_t v) {
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}
template <kern_dtype_t D> __device__ __forceinline__ float2 unpack16(uint32_t v) {
    return make_float2(kern::to_f32<D>((uint16_t)(v & 0xffffu)),
                       kern::to_f32<D>((uint16_t)(v >> 16)));
}

/* Byte offset of column pair (col, col + 1) of local row lr in a [rows][384] tile stored as
 * [kSlabs][kBM][64] 128-byte-swizzled slabs (16-byte chunk j of row r at j ^ (r % 8)). */
__device__ __forceinline__ uint32_t tile_off(int lr, int col) {
    return (uint32_t)(col / 64) * kBM * 128 + (uint32_t)lr * 128 +
           ((uint32_t)((col % 64 / 8) ^ (lr % 8)) << 4) + (uint32_t)(col % 8) * 2;
}

/* barrier over the 128 threads of consumer group wg (named barrier wg: 1 or 2) */
__device__ __forceinline__ void group_bar(int wg) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(wg) : "memory");
}

template <kern_dtype_t D>
__device__ __forceinline__ void ffn_body(const CUtensorMap *tx, const CUtensorMap *tw1,
                                         const CUtensorMap *tw2, const Params &p) {
    using C = Cfg;
    constexpr int kKs = kBI / 16; /* k16 slices of a chunk: the FFN-down's K steps */
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[C::kStages], empty[C::kStages], xfull;
    const uint32_t raw = kern::smem_u32(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const uint32_t xs = base, ring = base + (uint32_t)C::kX;
    float *par = reinterpret_cast<float *>(smem_raw + (base - raw) + C::kPar); /* [3][384] */
    uint16_t *b1s = reinterpret_cast<uint16_t *>(par + 3 * kHid);
    const int wg = (int)threadIdx.x / 128, t128 = (int)threadIdx.x % 128;
    const int32_t n_chunks = p.inter / kBI, row0 = (int32_t)blockIdx.x * kBM;

    if (threadIdx.x == 0) {
        for (int s = 0; s < C::kStages; s++) {
            mbar_init(kern::smem_u32(&full[s]), 1);
            mbar_init(kern::smem_u32(&empty[s]), 2); /* both consumer groups read every stage */
        }
        mbar_init(kern::smem_u32(&xfull), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    /* the epilogue's parameters and b1: weights, read before the PDL wait */
    for (int i = (int)threadIdx.x; i < kHid; i += kThreads) {
        par[i] = kern::to_f32<D>(p.b2[i]);
        par[kHid + i] = p.gamma[i];
        par[2 * kHid + i] = p.beta[i];
    }
    for (int i = (int)threadIdx.x; i < p.inter; i += kThreads)
        b1s[i] = p.b1[i];
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
        if (t128 == 0) {
            /* stage it: chunk it / 4, part it % 4 (0, 1: W1's K halves; 2, 3: W2's row halves) */
            auto load = [&](int32_t it) {
                const int s = it % C::kStages, q = it % 4;
                const int32_t c = it / 4;
                const uint32_t st = ring + (uint32_t)s * C::kStage, bar = kern::smem_u32(&full[s]);
                mbar_expect_tx(bar, C::kStage);
                if (q < 2)
                    for (int j = 0; j < 3; j++)
                        tma_load(st + (uint32_t)j * kBI * 128, tw1, bar, (3 * q + j) * 64, c * kBI);
                else
                    tma_load(st, tw2, bar, c * kBI, (q - 2) * kHalf);
            };
            const int32_t n_stages = 4 * n_chunks;
            const int32_t pre = n_stages < C::kStages ? n_stages : C::kStages;
            for (int32_t it = 0; it < pre; it++) /* weights: before the wait */
                load(it);
            kern::pdl_wait();
            kern::pdl_trigger();
            mbar_expect_tx(kern::smem_u32(&xfull), C::kX);
            for (int j = 0; j < kSlabs; j++)
                tma_load(xs + (uint32_t)j * kBM * 128, tx, kern::smem_u32(&xfull), j * 64, row0);
            for (int32_t it = pre; it < n_stages; it++) {
                const int s = it % C::kStages;
                mbar_wait(kern::smem_u32(&empty[s]), (uint32_t)(it / C::kStages + 1) & 1u);
                load(it);
            }
        } else {
            kern::pdl_wait();
            kern::pdl_trigger();
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    kern::pdl_wait();
    kern::pdl_trigger();
    const int32_t n_live = p.n_rows ? min(p.n, *p.n_rows) : p.n;
    const int warp = t128 / 32, lane = t128 % 32;
    const uint32_t xa = xs + (uint32_t)(wg - 1) * 64 * 128; /* this group's rows of each slab */
    float y0[kHalf / 2], y1[kHalf / 2], h[kBI / 2];
    uint32_t a[kKs][4];

    auto wait_full = [&](int32_t it) {
        mbar_wait(kern::smem_u32(&full[it % C::kStages]), (uint32_t)(it / C::kStages) & 1u);
        return ring + (uint32_t)(it % C::kStages) * C::kStage;
    };
    auto release = [&](int32_t it) {
        if (t128 == 0)
            mbar_arrive(kern::smem_u32(&empty[it % C::kStages]));
    };
    /* h = x W1_c^T over stages it, it + 1 (the K halves) */
    auto up = [&](int32_t it) {
        /* x's descriptors are the same every chunk: hoisted, their 24 64-bit values spilled */
        uint32_t xo;
        asm volatile("mov.u32 %0, %1;\n" : "=r"(xo) : "r"(xa));
        const uint64_t xd = desc_sw128(xo);
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const uint64_t wd = desc_sw128(wait_full(it + hf));
            kern::acc_fence(h);
            kern::wg_fence();
#pragma unroll
            for (int j = 0; j < 3; j++)
#pragma unroll
                for (int k = 0; k < 4; k++)
                    kern::wgmma_ss<kBI, 0, D>(
                        h, desc_at(xd, (uint32_t)(3 * hf + j) * kBM * 128 + (uint32_t)k * 32),
                        desc_at(wd, (uint32_t)j * kBI * 128 + (uint32_t)k * 32), hf | j | k);
        }
        kern::wg_commit();
    };
    /* y += GELU(h + b1) W2_c^T over stages it, it + 1 (the output halves), A from a */
    auto down = [&](int32_t it) {
        {
            const uint64_t wd = desc_w2(wait_full(it));
            kern::acc_fence(y0);
            kern::wg_fence();
#pragma unroll
            for (int kk = 0; kk < kKs; kk++)
                kern::wgmma_rs<kHalf, 0, D>(y0, a[kk], desc_at(wd, (uint32_t)kk * 32), 1);
        }
        {
            const uint64_t wd = desc_w2(wait_full(it + 1));
            kern::acc_fence(y1);
            kern::wg_fence();
#pragma unroll
            for (int kk = 0; kk < kKs; kk++)
                kern::wgmma_rs<kHalf, 0, D>(y1, a[kk], desc_at(wd, (uint32_t)kk * 32), 1);
        }
        kern::wg_commit();
    };
    /* bias + GELU, rounded to 16 bits into the A fragments: slice kk's register i holds the
     * accumulator pair of 8-column group 2 kk + i / 2, row half i % 2 (kern_wgmma.cuh) */
    const int cl = 2 * (lane % 4);
    auto gelu = [&](int32_t c) {
#pragma unroll
        for (int kk = 0; kk < kKs; kk++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int g = 2 * kk + i / 2;
                const float *v = h + 4 * g + 2 * (i % 2);
                const float2 bb =
                    unpack16<D>(*reinterpret_cast<const uint32_t *>(b1s + c * kBI + 8 * g + cl));
                if constexpr (D == KERN_DTYPE_F16) /* z / 2 by one FFMA each */
                    a[kk][i] = kern::gelu_erf_h2_of_half(fmaf(v[0], 0.5f, 0.5f * bb.x),
                                                         fmaf(v[1], 0.5f, 0.5f * bb.y));
                else
                    a[kk][i] =
                        kern::pack_bf16(kern::gelu_erf(v[0] + bb.x), kern::gelu_erf(v[1] + bb.y));
            }
    };

    /* the main loop: per chunk, FFN-up, GELU, FFN-down (stages 4 c .. 4 c + 3) */
    auto run_chunks = [&]() {
        up(0);
        kern::wg_wait<0>();
        kern::acc_fence(h);
        release(0), release(1);
        gelu(0);
        for (int32_t c = 0, it = 0; c < n_chunks; c++, it += 4) {
            down(it + 2); /* chunk c's W2 stages; c + 1's W1 stages follow */
            kern::wg_wait<0>();
            kern::acc_fence(y0);
            kern::acc_fence(y1);
            release(it + 2), release(it + 3);
            if (c + 1 < n_chunks) {
                up(it + 4);
                kern::wg_wait<0>();
                kern::acc_fence(h);
                release(it + 4), release(it + 5);
                gelu(c + 1);
            }
        }
    };
    /* Epilogue. Thread rows lr0 = 16 warp + lane / 4 and lr0 + 8 of the group's 64; the
     * accumulator pair 4 g + 2 hh of block half is columns 192 half + 8 g + cl, + 1. Each pair's
     * result passes an empty asm before the next pair's loads may issue: left free, the
     * compiler hoisted every load of the residual and the parameters ahead of their uses and
     * spilled ~2 KiB a thread. */
    const int lr0 = 16 * warp + lane / 4;
    /* Pair (half, g, hh)'s place in the staged tile (tile_off folded by hand): the slab is a
     * compile-time offset; the 16-byte chunk is (g % 8) ^ (lr % 8) with lr % 8 = lane / 4 for
     * both rows, and the row base has those address bits clear, so one XOR with a constant.
     * The bases pass an empty asm in each pass: hoisted, the 48 addresses were spilled. */
    const uint32_t rs0[2] = {
        (xa + (uint32_t)lr0 * 128 + (uint32_t)cl * 2) | ((uint32_t)(lane / 4) << 4),
        (xa + (uint32_t)(lr0 + 8) * 128 + (uint32_t)cl * 2) | ((uint32_t)(lane / 4) << 4)};
    uint32_t rs[2];
    auto pair_bases = [&]() {
        asm volatile("mov.u32 %0, %1;\n" : "=r"(rs[0]) : "r"(rs0[0]));
        asm volatile("mov.u32 %0, %1;\n" : "=r"(rs[1]) : "r"(rs0[1]));
    };
    auto pair_at = [&](int half, int g, int hh) {
        const int sg = half * (kHalf / 8) + g; /* the 8-column group across the row */
        return (rs[hh] ^ ((uint32_t)(sg % 8) << 4)) + (uint32_t)(sg / 8) * kBM * 128;
    };
    /* this thread's column pair of b2 (gamma, beta: + kHid / 2): compile-time offsets from here */
    const float2 *par2 = reinterpret_cast<const float2 *>(par) + cl / 2;
    /* f(half, g, hh, v) for each of the thread's accumulator pairs, v its two values */
    auto for_pairs = [&](auto f) {
#pragma unroll
        for (int half = 0; half < 2; half++)
#pragma unroll
            for (int g = 0; g < kHalf / 8; g++)
#pragma unroll
                for (int hh = 0; hh < 2; hh++)
                    f(half, g, hh, (half ? y1 : y0) + 4 * g + 2 * hh);
    };
    auto finish = [&](int32_t grow0) {
        float mean[2], rstd[2];
        {
            pair_bases();
            float s[2] = {0.f, 0.f};
            for_pairs([&](int half, int g, int hh, float *v) {
                const float2 r = unpack16<D>(lds32(pair_at(half, g, hh)));
                const float2 bb = par2[(half * kHalf + 8 * g) / 2];
                v[0] += bb.x + r.x;
                v[1] += bb.y + r.y;
                s[hh] += v[0] + v[1];
                asm volatile("" : "+f"(v[0]), "+f"(v[1]), "+f"(s[hh]));
            });
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                s[hh] += __shfl_xor_sync(0xffffffffu, s[hh], 1);
                s[hh] += __shfl_xor_sync(0xffffffffu, s[hh], 2);
                mean[hh] = s[hh] * (1.f / kHid);
            }
            float q[2] = {0.f, 0.f}; /* two passes: the deviations' squares */
            for_pairs([&](int, int, int hh, float *v) {
                const float d0 = v[0] - mean[hh], d1 = v[1] - mean[hh];
                q[hh] = fmaf(d0, d0, fmaf(d1, d1, q[hh]));
            });
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                q[hh] += __shfl_xor_sync(0xffffffffu, q[hh], 1);
                q[hh] += __shfl_xor_sync(0xffffffffu, q[hh], 2);
                rstd[hh] = rsqrtf(q[hh] * (1.f / kHid) + p.eps);
            }
        }
        pair_bases();
        float *const o32[2] = {p.out_f32 && grow0 + lr0 < n_live
                                   ? p.out_f32 + (int64_t)(grow0 + lr0) * kHid + cl
                                   : nullptr,
                               p.out_f32 && grow0 + lr0 + 8 < n_live
                                   ? p.out_f32 + (int64_t)(grow0 + lr0 + 8) * kHid + cl
                                   : nullptr};
        for_pairs([&](int half, int g, int hh, float *v) {
            const int c0 = half * kHalf + 8 * g; /* + cl */
            const float2 ga = par2[(kHid + c0) / 2], be = par2[(2 * kHid + c0) / 2];
            v[0] = (v[0] - mean[hh]) * rstd[hh] * ga.x + be.x;
            v[1] = (v[1] - mean[hh]) * rstd[hh] * ga.y + be.y;
            sts32(pair_at(half, g, hh), kern::pack16<D>(v[0], v[1]));
            if (o32[hh])
                *reinterpret_cast<float2 *>(o32[hh] + c0) = make_float2(v[0], v[1]);
        });
        group_bar(wg); /* the group's rows are staged */
        /* 16-byte chunks q of the group's 64 x 48: row q / 48, chunk q % 48 */
        for (int q = t128; q < 64 * (kHid / 8); q += 128) {
            const int lr = q / (kHid / 8), cc = q % (kHid / 8);
            if (grow0 + lr < n_live)
                *reinterpret_cast<uint4 *>(p.y + (int64_t)(grow0 + lr) * kHid + cc * 8) =
                    lds128(xa + tile_off(lr, cc * 8));
        }
    };

    mbar_wait(kern::smem_u32(&xfull), 0);
#pragma unroll
    for (int i = 0; i < kHalf / 2; i++)
        y0[i] = 0.f, y1[i] = 0.f;
    run_chunks();
    finish(row0 + (wg - 1) * 64);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__) /* empty for other archs */
#define EMBER_FFN_BODY ffn_body<D>(&tx, &tw1, &tw2, p)
#else
#define EMBER_FFN_BODY (void)0
#endif
template <kern_dtype_t D>
__global__ void __launch_bounds__(kThreads, 1)
    k_ffn(const __grid_constant__ CUtensorMap tx, const __grid_constant__ CUtensorMap tw1,
          const __grid_constant__ CUtensorMap tw2, const Params p) {
    EMBER_FFN_BODY;
}
#undef EMBER_FFN_BODY

typedef void (*kernel_t)(CUtensorMap, CUtensorMap, CUtensorMap, Params);
const kernel_t kKernels[2] = {k_ffn<KERN_DTYPE_BF16>, k_ffn<KERN_DTYPE_F16>};

std::atomic<uint64_t> g_ready[2]; /* per dtype: kern::setup_once's devices */

bool s_dtype_ok(kern_dtype_t dtype) {
    return dtype == KERN_DTYPE_BF16 || dtype == KERN_DTYPE_F16;
}

/* the host-side set-up a launch needs (no-ops once done on the device) */
int s_setup(kern_dtype_t dtype, com_error_t *err) {
    const int rc = kern::tma_init(err);
    if (rc != 0)
        return rc;
    KERN_CUDA_TRY(kern::setup_once(kKernels[dtype], Cfg::kSmem, g_ready[dtype]), err);
    return 0;
}

} // namespace

bool kern_ffn_supported(kern_dtype_t dtype, int32_t hidden, int32_t inter) {
    return s_dtype_ok(dtype) && hidden == kHid && inter >= 64 && inter <= kMaxInter &&
           inter % 64 == 0 && kern_sm90a_device();
}

int32_t kern_ffn_wave_rows(void) {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 0;
    return sms * kBM;
}

int kern_ffn_prepare(kern_dtype_t dtype, com_error_t *err) {
    if (!s_dtype_ok(dtype))
        return com_error_set(err, COM_EINVAL, "ffn: dtype %d", (int)dtype);
    if (!kern_sm90a_device())
        return com_error_set(err, COM_EUNSUPPORTED, "ffn: needs compute capability 9.0");
    return s_setup(dtype, err);
}

int kern_ffn_cuda(const kern_ffn_args_t *a, cudaStream_t stream, com_error_t *err) {
    if (!a || !s_dtype_ok(a->dtype) || !kern_ffn_supported(a->dtype, a->hidden, a->inter) ||
        a->n < 1)
        return com_error_set(err, COM_EINVAL,
                             "ffn: unsupported operands (dtype, hidden %d, inter %d, n %d; "
                             "supported: hidden 384, inter a multiple of 64 up to %d, Hopper)",
                             a ? (int)a->hidden : 0, a ? (int)a->inter : 0, a ? (int)a->n : 0,
                             kMaxInter);
    if (!a->y || !a->x || !a->w1 || !a->b1 || !a->w2 || !a->b2 || !a->gamma || !a->beta ||
        !(a->eps >= 0.f) || !kern::aligned16(a->y) || !kern::aligned16(a->x) ||
        !kern::aligned16(a->w1) || !kern::aligned16(a->w2) || !kern::aligned16(a->out_f32) ||
        ((uintptr_t)a->b1 & 3u) != 0)
        return com_error_set(err, COM_EINVAL,
                             "ffn: needs y, x, w1, b1, w2, b2, gamma, beta, eps >= 0, 16-byte "
                             "aligned y, x, w1, w2, out_f32 and a 4-byte aligned b1");
    const int rc0 = s_setup(a->dtype, err);
    if (rc0 != 0)
        return rc0;
    CUtensorMap tx, tw1, tw2;
    int rc = kern::tma_encode_2d(&tx, a->dtype, a->x, a->n, kHid, kHid, kBM, 64,
                                 CU_TENSOR_MAP_SWIZZLE_128B, err);
    if (rc == 0)
        rc = kern::tma_encode_2d(&tw1, a->dtype, a->w1, a->inter, kHid, kHid, kBI, 64,
                                 CU_TENSOR_MAP_SWIZZLE_128B, err);
    if (rc == 0) /* [192][32]: 64-byte rows */
        rc = kern::tma_encode_2d(&tw2, a->dtype, a->w2, kHid, a->inter, a->inter, kHalf, kBI,
                                 CU_TENSOR_MAP_SWIZZLE_64B, err);
    if (rc != 0)
        return rc;
    const Params p = {a->y,   a->b1,      a->b2,     a->gamma, a->beta,
                      a->eps, a->out_f32, a->n_rows, a->n,     a->inter};
    KERN_CUDA_TRY(kern::launch(kKernels[a->dtype], dim3((unsigned)((a->n + kBM - 1) / kBM)),
                               dim3(kThreads), Cfg::kSmem, stream, tx, tw1, tw2, p),
                  err);
    return 0;
}
