/* kernels/attention.cu — ragged (packed, padding-free) multi-head attention on tensor cores,
 * FlashAttention-2 style (contract in attention.h; plain-C reference kern_attention_ref beside
 * it), and the choice between this mma.sync kernel and the wgmma one (attention_wgmma.cu, same
 * tiling) in kern_attention_cuda_kernel.
 *
 * Types: q, k, v and out are all bf16 or all IEEE binary16 (kern_dtype_t, the template parameter
 * D; one kernel body for both); the tensor-core operands (Q, K, V and the re-packed P) are of that
 * type, accumulation and the online softmax fp32.
 *
 * Grid (ceil(max_tokens / 64), n_heads), 128 threads = 4 warps. CTA (tile, h) takes the
 * 64 packed query rows [64 tile, 64 tile + 64) of head h; warp w owns 16 of them. The grid
 * depends on the bucket only; everything about the batch is read from device memory: *n_tokens
 * (CTAs past it exit), and for each row its sequence (tok_seq) and that sequence's key range
 * [lo, hi) from cu_seqlens (causal: hi = min(hi, row + 1)). A tile may span several sequences:
 * the CTA walks the keys [lo of its first row, largest hi of its rows) in blocks of 64 and masks
 * per element (key outside the row's range -> -inf), and a warp skips blocks outside its rows'
 * union range. Cost: at most the keys of the sequences the tile touches.
 *
 * Per key block (in shared memory by cp.async, zero-filled past *n_tokens):
 *   S = Q K^T          mma.sync m16n8k16 (type D) -> fp32; Q fragments held in registers, K by
 *                      ldmatrix.x4 from [key][dim] rows padded by 16 bytes (no bank conflicts)
 *   online softmax     in base 2: p = ex2.approx(s * scale * log2 e - m), one FFMA + one MUFU
 *                      per score; m is a reference max per row (scaled units), moved and O
 *                      rescaled only when some row of the warp sees a max above its reference
 *                      by more than kAttnLazy = 8 (so p <= 2^8; after a row's first blocks the
 *                      rescale is mostly skipped). Masking only in blocks that cross a row's
 *                      key range (a warp-uniform test), one test per column when the warp's
 *                      rows share one sequence.
 *   O += P V           P re-packed from the S accumulators into A fragments (no shared memory),
 *                      V by ldmatrix.x4.trans
 * then O / l is written (type D) for the valid rows. GQA: kv head = h / (n_heads / n_kv_heads).
 *
 * What profiling (Nsight Compute, H200) showed to be latency and instruction overhead, not
 * tensor or memory throughput, shaped the kernel (each change against the previous kernel):
 *   - __launch_bounds__(128, 4) (<= 128 registers) and the maximum shared-memory carve-out
 *     (set once per device): 4 CTAs = 16 warps per SM instead of 3 = 12;
 *   - one barrier per key block instead of two (the stage refilled is the one every warp
 *     finished before the barrier), and a cp.async loader with no per-row 64-bit multiply;
 *   - row sums l accumulate on the tensor cores as P x ones (one extra mma per 16 keys instead
 *     of 2 FADD per score; l is then the sum of the rounded P that the P V product uses);
 *   - block row max as a tree; the masked path is straight-line code (per-16-key branches
 *     serialised the mma chains);
 *   - the prologue reads n_tokens and the rows' tok_seq in one round trip, then the row ranges,
 *     all before the PDL wait (the batch's layout is written by an earlier grid than the one
 *     before, attention.h), so only the K/V copies and the Q loads follow the wait.
 *   - the lazy rescale and the shared column mask (above): per 64-key block and warp 258
 *     instructions where 278 were (unmasked), 323 where 378 (masked, rows of one sequence).
 * Measured on an H200 (PDL on), previous kernel -> this one: one chunk of 16128 tokens in 100
 * sequences of 32..512 (log-uniform), 12 heads (scratch harness, median of 11 x 100 launches):
 * d = 64 102.6 -> 82.3 us, d = 32 64.3-65.1 -> 56.6-57.2 us; bench_kernels_cuda 8 x 512 tokens:
 * bert-base 37.1-38.1 -> 30.6-30.9 us, minilm 23.2 -> 20.7 us; 1 x 128 tokens: no slower
 * (4.35 -> 4.13 us, 3.52 -> 3.27 us). The lazy rescale and shared mask (session 23, same
 * bench, two rounds): minilm 16384 ragged tokens 70.0-70.4 -> 67.5-67.8 us, 8 x 512 20.0-20.1 ->
 * 19.6-19.8, bert-base 8 x 512 (f16) 30.4-30.9 -> 29.9-30.1. Tried and slower on that chunk: 2 m16
 * row tiles per warp (128-row CTAs: more masked waste, fewer CTAs), 8-warp CTAs, 32-key blocks, 3-4
 * stages, 5-6 CTAs per SM (spills), issuing the next block's Q K^T before this block's softmax
 * (register pressure), per-16-key chunk skipping inside masked blocks (branches serialise the
 * mmas).
 *
 * Launch configurations: bf16 / f16 x HEAD_DIM 32 or 64 x causal no/yes (the tile in Tile: 4
 * warps, 16 rows per warp, 64-key blocks, 2 stages, 4 CTAs per SM). Shared memory: 2 stages x
 * (K + V) x 64 x (HEAD_DIM + 8) x 16 bits = 36 KiB at 64. Stream: the caller's. Tested by
 * tests/test_kernels_cuda.c (all eight configurations, ragged shapes); timed by bench_kernels_cuda
 * ("attention", "attention mma f16"). */
#include <math.h>

#include <atomic>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_wgmma.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

/* How a key block is masked: not at all (every row of the warp sees all its keys), by one
 * range for the warp (its rows share a sequence), or per row */
enum { kMaskNone, kMaskShared, kMaskPerRow };
using kern::kAttnLazy;

/* Template: D the 16-bit type of q/k/v/out, HD head dim, W warps, MT m16 row tiles per warp (CTA
 * rows = 16 MT W), BN keys per block, ST cp.async stages, MINB CTAs per SM for __launch_bounds__
 * (caps registers). The tile in use is Tile's; the other values are kept for tuning (see the file
 * header). */
template <int HD, int BN, int ST> struct SmemT {
    static constexpr int kStride = HD + 8; /* 16-bit values per row: +16 bytes, conflict-free */
    static constexpr size_t kBytes = (size_t)ST * 2 * BN * kStride * sizeof(uint16_t);
};

template <kern_dtype_t D, int HD, bool CAUSAL, int W, int MT, int BN, int ST, int MINB>
__global__ void __launch_bounds__(W * 32, MINB)
    k_attention(uint16_t *__restrict__ out, int64_t ldo, const uint16_t *__restrict__ q,
                int64_t ldq, const uint16_t *__restrict__ k, int64_t ldk,
                const uint16_t *__restrict__ v, int64_t ldv, const int32_t *__restrict__ cu,
                const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ n_tokens_p,
                int32_t max_tokens, int32_t group, float scale_log2) {
    constexpr int kS = HD + 8, kRows = 16 * MT * W;
    constexpr int kColT = HD / 8, kRowStep = W * 32 / kColT, kLoads = BN / kRowStep;
    static_assert(BN % 16 == 0 && BN % kRowStep == 0 && ST >= 2, "tile shape");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    uint16_t(*sk)[BN][kS] = reinterpret_cast<uint16_t(*)[BN][kS]>(smem_raw);
    uint16_t(*sv)[BN][kS] =
        reinterpret_cast<uint16_t(*)[BN][kS]>(smem_raw + (size_t)ST * BN * kS * sizeof(uint16_t));
    __shared__ int32_t s_whi[W];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c4 = lane % 4;
    const int32_t q0 = blockIdx.x * kRows;
    /* The batch's layout, before the PDL wait (kern_cuda_dev.cuh, pdl_wait; attention.h): first
     * n_tokens and the rows' sequences in one round trip (tok_seq has max_tokens entries; padding
     * entries are loaded but never used), then the key ranges from cu_seqlens */
    const int32_t nt = *n_tokens_p;
    const int32_t seq0 = tok_seq[q0];
    int32_t row[MT][2], sq[MT][2];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            row[t][i] = q0 + warp * 16 * MT + 16 * t + g + 8 * i;
            sq[t][i] = row[t][i] < max_tokens ? tok_seq[row[t][i]] : -1;
        }
    const int32_t kbeg = q0 < nt ? cu[seq0] : 0;
    /* this thread's rows and their key ranges (empty for rows past n_tokens) */
    int32_t lo[MT][2], hi[MT][2];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            lo[t][i] = 0, hi[t][i] = 0;
            if (row[t][i] < nt) {
                lo[t][i] = cu[sq[t][i]], hi[t][i] = cu[sq[t][i] + 1];
                if (CAUSAL)
                    hi[t][i] = min(hi[t][i], row[t][i] + 1);
            }
        }
    kern::pdl_begin(); /* q, k, v (the previous grid's output) from here on */
    if (q0 >= nt)
        return; /* uniform over the CTA */
    const int h = blockIdx.y, kh = h / group;

    /* K/V block loader: thread copies 16-byte column chunk tc of rows tr, tr + kRowStep, ...
     * of the next block to load (kld, vld: its row tr). Keys past n_tokens are zero-filled
     * (src-size 0: nothing is read, so their addresses, which may lie past the buffer, are
     * never dereferenced). Keys in [kend, n_tokens) are real rows of other sequences: loaded,
     * then masked. */
    const int tc = threadIdx.x % kColT, tr = threadIdx.x / kColT;
    const uint16_t *kld = k + (int64_t)kh * HD + tc * 8 + (int64_t)(kbeg + tr) * ldk;
    const uint16_t *vld = v + (int64_t)kh * HD + tc * 8 + (int64_t)(kbeg + tr) * ldv;
    const uint32_t sk0 = kern::smem_u32(&sk[0][tr][tc * 8]),
                   sv0 = kern::smem_u32(&sv[0][tr][tc * 8]);
    auto load_block = [&](int stage, int32_t kb) {
        const uint32_t so = (uint32_t)stage * (BN * kS * 2);
        const int32_t lim = nt - tr - kb; /* rows r < lim of the block exist */
#pragma unroll
        for (int i = 0; i < kLoads; i++) {
            const bool ok = i * kRowStep < lim;
            kern::cp_async16(sk0 + so + i * (kRowStep * kS * 2),
                             kld + (int64_t)(i * kRowStep) * ldk, ok ? 16 : 0);
            kern::cp_async16(sv0 + so + i * (kRowStep * kS * 2),
                             vld + (int64_t)(i * kRowStep) * ldv, ok ? 16 : 0);
        }
        kld += (int64_t)BN * ldk, vld += (int64_t)BN * ldv;
    };
#pragma unroll
    for (int st = 0; st < ST - 1; st++) {
        load_block(st, kbeg + st * BN);
        kern::cp_async_commit();
    }

    /* Q fragments (A operand, row-major 16 x HD per tile), zero for rows past n_tokens */
    uint32_t qa[MT][HD / 16][4];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int i = j & 1, col = kk * 16 + 2 * c4 + 8 * (j >> 1);
                qa[t][kk][j] = row[t][i] < nt
                                   ? *reinterpret_cast<const uint32_t *>(
                                         q + (int64_t)row[t][i] * ldq + (int64_t)h * HD + col)
                                   : 0u;
            }

    /* the warp's union key range (blocks and 16-key chunks outside it are skipped) and the keys
     * every row of the warp sees (blocks inside need no mask; empty if a row is past n_tokens) */
    int32_t wlo = INT32_MAX, whi = 0, wlo_in = INT32_MIN, whi_in = INT32_MAX;
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            if (lo[t][i] < hi[t][i])
                wlo = min(wlo, lo[t][i]), whi = max(whi, hi[t][i]);
            wlo_in = max(wlo_in, lo[t][i]), whi_in = min(whi_in, hi[t][i]);
        }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        wlo = min(wlo, __shfl_xor_sync(0xffffffffu, wlo, o));
        whi = max(whi, __shfl_xor_sync(0xffffffffu, whi, o));
        wlo_in = max(wlo_in, __shfl_xor_sync(0xffffffffu, wlo_in, o));
        whi_in = min(whi_in, __shfl_xor_sync(0xffffffffu, whi_in, o));
    }
    /* the CTA's key range [kbeg, kend): kbeg is row q0's first key, kend the largest hi */
    if (lane == 0)
        s_whi[warp] = whi;
    __syncthreads();
    int32_t kend = s_whi[0];
#pragma unroll
    for (int w = 1; w < W; w++)
        kend = max(kend, s_whi[w]);
    const int n_blocks = (kend - kbeg + BN - 1) / BN;

    float o_acc[MT][HD / 8][4];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int n = 0; n < HD / 8; n++)
            o_acc[t][n][0] = o_acc[t][n][1] = o_acc[t][n][2] = o_acc[t][n][3] = 0.f;
    /* reference max per row (scaled units; the row's running max is at most kAttnLazy above it);
     * row sums of P accumulate on the tensor cores as P x ones: l_acc[t][0] is row g's sum,
     * l_acc[t][2] row g + 8's ([1], [3]: copies) */
    float m_run[MT][2], l_acc[MT][4];
#pragma unroll
    for (int t = 0; t < MT; t++) {
        m_run[t][0] = m_run[t][1] = -INFINITY;
        l_acc[t][0] = l_acc[t][1] = l_acc[t][2] = l_acc[t][3] = 0.f;
    }
    /* two 1.0 of type D */
    constexpr uint32_t kOnes = D == KERN_DTYPE_F16 ? 0x3c003c00u : 0x3f803f80u;

    using Scores = float[MT][BN / 8][4];
    /* S = Q K^T for the key block in stage st; each K fragment serves the MT row tiles */
    auto qk = [&](int st, Scores &s) {
#pragma unroll
        for (int t = 0; t < MT; t++)
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
                s[t][n][0] = s[t][n][1] = s[t][n][2] = s[t][n][3] = 0.f;
#pragma unroll
        for (int n2 = 0; n2 < BN / 16; n2++)
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                uint32_t b0, b1, b2, b3;
                kern::ldmatrix_x4(kern::smem_u32(&sk[st][16 * n2 + (lane % 8) + 8 * (lane / 16)]
                                                    [kk * 16 + 8 * ((lane / 8) % 2)]),
                                  b0, b1, b2, b3);
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    kern::mma16<D>(s[t][2 * n2], qa[t][kk], b0, b1);
                    kern::mma16<D>(s[t][2 * n2 + 1], qa[t][kk], b2, b3);
                }
            }
    };
    /* online softmax of the scores s of key block kb, then O += P V from stage st. MASK: how
     * the scores are masked when the block crosses some row's key range (kMaskShared, kMaskPerRow).
     * Straight-line code but for the warp-uniform rescale, so the compiler can interleave the
     * independent chains. */
    auto soft_pv = [&](auto mask_c, int st, int32_t kb, Scores &s) {
        constexpr int MASK = decltype(mask_c)::value;
        float muse[MT][2];
        /* kMaskShared: every row of the warp has the key range [wlo, whi), so a column's
         * test serves both of the thread's rows */
        if (MASK == kMaskShared) {
            const int32_t rel = kb + 2 * c4 - wlo;
            const uint32_t len = (uint32_t)(whi - wlo);
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    if ((uint32_t)(rel + 8 * n + e) >= len) {
#pragma unroll
                        for (int t = 0; t < MT; t++)
                            s[t][n][e] = s[t][n][2 + e] = -INFINITY;
                    }
        }
#pragma unroll
        for (int t = 0; t < MT; t++) {
            if (MASK == kMaskPerRow) {
                /* key - lo for n = 0, e = 0: in range iff (unsigned)(rel + 8n + e) < hi - lo */
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const int32_t rel = kb + 2 * c4 - lo[t][i];
                    const uint32_t len = (uint32_t)(hi[t][i] - lo[t][i]);
#pragma unroll
                    for (int n = 0; n < BN / 8; n++)
#pragma unroll
                        for (int e = 0; e < 2; e++)
                            if ((uint32_t)(rel + 8 * n + e) >= len)
                                s[t][n][2 * i + e] = -INFINITY;
                }
            }
            /* block row max of the raw scores, as a tree (short dependency chains) */
            float mx[2][BN / 8];
#pragma unroll
            for (int n = 0; n < BN / 8; n++) {
                mx[0][n] = fmaxf(s[t][n][0], s[t][n][1]);
                mx[1][n] = fmaxf(s[t][n][2], s[t][n][3]);
            }
#pragma unroll
            for (int w = BN / 16; w >= 1; w /= 2) {
#pragma unroll
                for (int n = 0; n < w; n++) {
                    mx[0][n] = fmaxf(mx[0][n], mx[0][n + w]);
                    mx[1][n] = fmaxf(mx[1][n], mx[1][n + w]);
                }
            }
            /* the block's row max in scaled base-2 units (scale > 0, so the max commutes with
             * it); the reference m_run moves (and O, l are rescaled) only when some row of the
             * warp sees a max above its reference by more than kAttnLazy, so P stays <= 2^8 */
            float mb[2];
            bool grow = false;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                float m = mx[i][0];
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
                mb[i] = m * scale_log2;
                grow |= mb[i] > m_run[t][i] + kAttnLazy; /* m_run -inf: any finite max */
            }
            if (__any_sync(0xffffffffu, grow)) {
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const float mnew = fmaxf(m_run[t][i], mb[i]);
                    const float alpha =
                        kern::ex2(m_run[t][i] - (mnew == -INFINITY ? 0.f : mnew)); /* -inf: 0 */
                    m_run[t][i] = mnew;
                    l_acc[t][2 * i] *= alpha;
#pragma unroll
                    for (int n = 0; n < HD / 8; n++)
                        o_acc[t][n][2 * i] *= alpha, o_acc[t][n][2 * i + 1] *= alpha;
                }
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
                muse[t][i] = m_run[t][i] == -INFINITY ? 0.f : m_run[t][i];
                /* p = 2^(s scale log2(e) - m): one FFMA, one MUFU.EX2 (masked: -inf -> 0) */
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    s[t][n][e] = kern::ex2(fmaf(s[t][n][e], scale_log2, -muse[t][e >> 1]));
        }
        /* O += P V; P re-packed from the S accumulators into A fragments */
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t pa[MT][4];
#pragma unroll
            for (int t = 0; t < MT; t++) {
                pa[t][0] = kern::pack16<D>(s[t][2 * kk][0], s[t][2 * kk][1]);
                pa[t][1] = kern::pack16<D>(s[t][2 * kk][2], s[t][2 * kk][3]);
                pa[t][2] = kern::pack16<D>(s[t][2 * kk + 1][0], s[t][2 * kk + 1][1]);
                pa[t][3] = kern::pack16<D>(s[t][2 * kk + 1][2], s[t][2 * kk + 1][3]);
            }
#pragma unroll
            for (int t = 0; t < MT; t++)
                kern::mma16<D>(l_acc[t], pa[t], kOnes, kOnes); /* row sums of the rounded P */
#pragma unroll
            for (int dp = 0; dp < HD / 16; dp++) {
                uint32_t b0, b1, b2, b3;
                kern::ldmatrix_x4_trans(
                    kern::smem_u32(&sv[st][16 * kk + (lane % 8) + 8 * ((lane / 8) % 2)]
                                      [16 * dp + 8 * (lane / 16)]),
                    b0, b1, b2, b3);
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    kern::mma16<D>(o_acc[t][2 * dp], pa[t], b0, b1);
                    kern::mma16<D>(o_acc[t][2 * dp + 1], pa[t], b2, b3);
                }
            }
        }
    };

    /* ST-stage pipeline, one barrier per block: after the barrier of block j every warp is done
     * with block j - 1, whose stage then takes block j + ST - 1 */
    int st = 0;
    for (int j = 0; j < n_blocks; j++) {
        const int32_t kb = kbeg + j * BN;
        kern::cp_async_wait<ST - 2>();
        __syncthreads();
        if (j + ST - 1 < n_blocks)
            load_block(st == 0 ? ST - 1 : st - 1, kb + (ST - 1) * BN);
        kern::cp_async_commit(); /* possibly empty: keeps the group count in step */
        /* the warp skips blocks none of its rows sees */
        if (kb < whi && kb + BN > wlo) {
            Scores sc;
            qk(st, sc);
            if (kb >= wlo_in && kb + BN <= whi_in)
                soft_pv(std::integral_constant<int, kMaskNone>{}, st, kb, sc);
            else if (wlo == wlo_in && whi == whi_in)
                soft_pv(std::integral_constant<int, kMaskShared>{}, st, kb, sc);
            else
                soft_pv(std::integral_constant<int, kMaskPerRow>{}, st, kb, sc);
        }
        st = st == ST - 1 ? 0 : st + 1;
    }
    kern::cp_async_wait<0>(); /* prefetched blocks past the end must land before the CTA retires */

#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            if (row[t][i] >= nt || lo[t][i] >= hi[t][i])
                continue;
            const float inv = 1.0f / l_acc[t][2 * i];
            uint16_t *orow = out + (int64_t)row[t][i] * ldo + (int64_t)h * HD + 2 * c4;
#pragma unroll
            for (int n = 0; n < HD / 8; n++)
                *reinterpret_cast<uint32_t *>(orow + 8 * n) =
                    kern::pack16<D>(o_acc[t][n][2 * i] * inv, o_acc[t][n][2 * i + 1] * inv);
        }
}

/* the tile configuration per head dim (see the file header) */
template <int HD> struct Tile;
template <> struct Tile<32> { static constexpr int kW = 4, kMT = 1, kBN = 64, kST = 2, kMinB = 4; };
template <> struct Tile<64> { static constexpr int kW = 4, kMT = 1, kBN = 64, kST = 2, kMinB = 4; };

template <kern_dtype_t D, int HD, bool CAUSAL, int W, int MT, int BN, int ST, int MINB>
int s_launch_tile(const kern_attention_params_t *p, uint16_t *out, int64_t ldo, const uint16_t *q,
                  int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
                  const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens,
                  int32_t max_tokens, cudaStream_t stream, com_error_t *err) {
    auto *kfn = k_attention<D, HD, CAUSAL, W, MT, BN, ST, MINB>;
    constexpr size_t smem = SmemT<HD, BN, ST>::kBytes;
    static std::atomic<uint64_t> s_ready{0};
    KERN_CUDA_TRY(kern::setup_once(kfn, smem, s_ready), err);
    constexpr int rows = 16 * MT * W;
    const dim3 grid((unsigned)((max_tokens + rows - 1) / rows), (unsigned)p->n_heads);
    KERN_CUDA_TRY(kern::launch(kfn, grid, dim3(W * 32), smem, stream, out, ldo, q, ldq, k, ldk, v,
                               ldv, cu, tok_seq, n_tokens, max_tokens,
                               (int32_t)(p->n_heads / p->n_kv_heads),
                               p->scale * 1.4426950408889634f),
                  err);
    return 0;
}

template <kern_dtype_t D, int HD, bool CAUSAL>
int s_launch(const kern_attention_params_t *p, uint16_t *out, int64_t ldo, const uint16_t *q,
             int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
             const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens, int32_t max_tokens,
             cudaStream_t stream, com_error_t *err) {
    using T = Tile<HD>;
    return s_launch_tile<D, HD, CAUSAL, T::kW, T::kMT, T::kBN, T::kST, T::kMinB>(
        p, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq, n_tokens, max_tokens, stream, err);
}

/* the mma.sync kernel of type D for p's head_dim and causality */
template <kern_dtype_t D>
int s_launch_mma(const kern_attention_params_t *p, uint16_t *out, int64_t ldo, const uint16_t *q,
                 int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
                 const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens,
                 int32_t max_tokens, cudaStream_t stream, com_error_t *err) {
#define S_CASE(HD)                                                                                 \
    case HD:                                                                                       \
        return p->causal ? s_launch<D, HD, true>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq, \
                                                 n_tokens, max_tokens, stream, err)                \
                         : s_launch<D, HD, false>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu,         \
                                                  tok_seq, n_tokens, max_tokens, stream, err);
    switch (p->head_dim) {
        S_CASE(32)
        S_CASE(64)
    default:
        return com_error_set(err, COM_EUNSUPPORTED,
                             "attention_cuda: head_dim %d (supported: 32, 64)", (int)p->head_dim);
    }
#undef S_CASE
}

} // namespace

/* The arguments every kernel here needs (attention.h): 0, or COM_EINVAL with err. */
static int s_check_args(const kern_attention_params_t *p, kern_dtype_t dtype, const uint16_t *out,
                        int64_t ldo, const uint16_t *q, int64_t ldq, const uint16_t *k, int64_t ldk,
                        const uint16_t *v, int64_t ldv, const int32_t *cu_seqlens,
                        const int32_t *tok_seq, const int32_t *n_tokens, const int32_t *tiles,
                        int32_t max_tokens, com_error_t *err) {
    if (!p || !out || !q || !k || !v || !cu_seqlens || !tok_seq || !n_tokens || max_tokens < 1 ||
        (tiles && kern_attention_tiles_cap(max_tokens) == 0) || p->n_heads < 1 ||
        p->n_kv_heads < 1 || p->n_heads % p->n_kv_heads != 0 || p->n_heads > 65535 ||
        !(p->scale > 0.f)) /* the running max is kept scaled */
        return com_error_set(err, COM_EINVAL, "attention_cuda: bad arguments");
    if ((ldq | ldk | ldv) % 8 != 0 || ldo % 2 != 0 || !kern::aligned16(q) || !kern::aligned16(k) ||
        !kern::aligned16(v) || ((uintptr_t)out & 3u))
        return com_error_set(err, COM_EINVAL,
                             "attention_cuda: q/k/v need 16-byte alignment and leading dims that "
                             "are multiples of 8 (ldq %lld, ldk %lld, ldv %lld, ldo %lld)",
                             (long long)ldq, (long long)ldk, (long long)ldv, (long long)ldo);
    if (dtype != KERN_DTYPE_BF16 && dtype != KERN_DTYPE_F16)
        return com_error_set(err, COM_EINVAL, "attention_cuda: dtype %d", (int)dtype);
    return 0;
}

extern "C" int kern_attention_cuda_kernel(kern_attention_kernel_t which,
                                          const kern_attention_params_t *p, kern_dtype_t dtype,
                                          uint16_t *out, int64_t ldo, const uint16_t *q,
                                          int64_t ldq, const uint16_t *k, int64_t ldk,
                                          const uint16_t *v, int64_t ldv, const int32_t *cu_seqlens,
                                          const int32_t *tok_seq, const int32_t *n_tokens,
                                          const int32_t *tiles, int32_t max_tokens,
                                          cudaStream_t stream, com_error_t *err) {
    const int rc = s_check_args(p, dtype, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens, tok_seq,
                                n_tokens, tiles, max_tokens, err);
    if (rc != 0)
        return rc;
    if (which == KERN_ATTENTION_AUTO) /* see kern_attention_cuda in attention.h */
        which = max_tokens >= 512 && kern_attention_wgmma_valid(p) &&
                        kern_attention_wgmma_out_ok(out, ldo)
                    ? KERN_ATTENTION_WGMMA
                    : KERN_ATTENTION_MMA;
    if (which == KERN_ATTENTION_WGMMA)
        return kern_attention_wgmma_cuda(p, dtype, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens,
                                         tok_seq, n_tokens, tiles, max_tokens, stream, err);
    if (which != KERN_ATTENTION_MMA)
        return com_error_set(err, COM_EINVAL, "attention_cuda: kernel %d", (int)which);
    return dtype == KERN_DTYPE_F16
               ? s_launch_mma<KERN_DTYPE_F16>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens,
                                              tok_seq, n_tokens, max_tokens, stream, err)
               : s_launch_mma<KERN_DTYPE_BF16>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens,
                                               tok_seq, n_tokens, max_tokens, stream, err);
}

extern "C" int kern_attention_cuda(const kern_attention_params_t *p, kern_dtype_t dtype,
                                   uint16_t *out, int64_t ldo, const uint16_t *q, int64_t ldq,
                                   const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
                                   const int32_t *cu_seqlens, const int32_t *tok_seq,
                                   const int32_t *n_tokens, const int32_t *tiles,
                                   int32_t max_tokens, cudaStream_t stream, com_error_t *err) {
    return kern_attention_cuda_kernel(KERN_ATTENTION_AUTO, p, dtype, out, ldo, q, ldq, k, ldk, v,
                                      ldv, cu_seqlens, tok_seq, n_tokens, tiles, max_tokens, stream,
                                      err);
}

extern "C" bool kern_attention_pooled_supported(const kern_attention_params_t *p) {
    return kern_attention_wgmma_valid(p);
}

extern "C" int kern_attention_pooled_cuda(const kern_attention_params_t *p, kern_dtype_t dtype,
                                          uint16_t *out, int64_t ldo, const uint16_t *q,
                                          int64_t ldq, const uint16_t *k, int64_t ldk,
                                          const uint16_t *v, int64_t ldv, const int32_t *cu_seqlens,
                                          const int32_t *tok_seq, const int32_t *n_tokens,
                                          const int32_t *n_seqs, int32_t max_seqs, bool last,
                                          int32_t max_tokens, cudaStream_t stream,
                                          com_error_t *err) {
    int rc = s_check_args(p, dtype, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens, tok_seq, n_tokens,
                          NULL, max_tokens, err);
    if (rc == 0 && (!n_seqs || max_seqs < 1 || max_seqs > max_tokens))
        rc = com_error_set(err, COM_EINVAL, "attention_pooled_cuda: max_seqs %d (max_tokens %d)",
                           (int)max_seqs, (int)max_tokens);
    return rc ? rc
              : kern_attention_wgmma_pooled_cuda(p, dtype, out, ldo, q, ldq, k, ldk, v, ldv,
                                                 cu_seqlens, tok_seq, n_tokens, n_seqs, max_seqs,
                                                 last, max_tokens, stream, err);
}
