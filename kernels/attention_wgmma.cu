/* kernels/attention_wgmma.cu — ragged attention on Hopper's warp-group MMA (contract in
 * attention_wgmma.h; kernels/attention.cu picks it or its mma.sync kernel). Built for sm_90a only.
 *
 * Same tiling and masking as attention.cu's kernel (read its header first), or the batch's tile
 * table (kern_attention_tiles_build: per-sequence tiles, longest first): one CTA per (tile, head
 * h), heads fastest, a warp group taking the tile's (up to 64) consecutive packed query rows of
 * head h; it walks the keys [first key of its first row's sequence, last key of its last live
 * row's sequence) in blocks of 64 and masks per element only in the blocks that cross some row's
 * key range. Per key block:
 *   S = Q K^T        HD / 16 x wgmma.m64n64k16, Q and K from shared memory (K-major, swizzled as
 *                    kern::wgmma_desc describes: 128-byte rows at head dim 64, 64-byte at 32);
 *   online softmax   on the S accumulators in registers, in base 2 (one FFMA + one MUFU per
 *                    score) against a per-row reference that moves lazily: P is computed against
 *                    the current references, and only when some P of the warp passes
 *                    2^kern::kAttnLazy (one packed 16-bit maximum over the thread's P, a vote), or
 *                    at a row's first key block, does the exact path take the rows' maxima (over
 *                    the 4 lanes of a quad), move the references, rescale O and l and compute P
 *                    again; where every row of a warp has one key range the mask needs one test
 *                    per column;
 *   O += P V         4 x wgmma.m64nHDk16 with P as the register A operand (the S accumulators
 *                    re-packed to type D, no shared memory) and V read MN-major from shared memory
 *                    (the transpose flag), so nothing is transposed;
 *   l += P 1         the row sums on the tensor cores too, as P times ones (the sums are of the
 *                    rounded P that PV multiplies, and cost no FADD or shuffle): at head dim 32
 *                    folded into PV, whose wgmma is m64n40k16 with V's N running on into a tile
 *                    of ones (the descriptor's lbo); at 64 (the ones would not fit) 4 x
 *                    wgmma.m64n8k16 of P against 1 KiB of ones, in PV's commit group (the
 *                    fold: 1.6% off the head-dim-32 kernel, session 35).
 * The lazy check and the tensor-core sums take ~25% of the instructions off a key block (~307 ->
 * ~230 a warp in SASS) and 4-6% off the kernel (session 32): it is latency-bound, not issue-bound.
 * Pipelining (FlashAttention-3's intra-warp-group overlap): block j + 1's S is issued before O is
 * rescaled and block j's PV issued, and block j + 1's softmax runs while that PV does; every
 * wgmma is waited for within its step, because ptxas serialises all of a kernel's wgmmas when
 * one may be in flight across a loop back edge or a branch it cannot resolve (warnings C7513 /
 * C7514; hence the two-block unrolled loop and the last step without an S). K/V blocks stream
 * through 4 shared-memory stages by TMA, issued by thread 0 3 blocks ahead and completing on one
 * mbarrier per stage (no per-block CTA barrier, no address arithmetic in the loop); V rows past
 * n_tokens are zeroed in the one block that holds them (P is 0 there, but 0 x a stale NaN is not).
 * O / l leaves through the Q tile's shared memory, so each thread stores 16-byte pieces of a row
 * (out 16-byte aligned, ldo a multiple of 8).
 * The prologue needs two round trips: Q, n_tokens and the rows' sequence indices, then cu_seqlens.
 * kern_attention_pooled_cuda runs the same kernel with its entry made from cu_seqlens: CTA s
 * takes sequence s's first or last row as a one-row tile of one sequence (t_kind 2).
 *
 * Measured on an H200 (bench_kernels_cuda, 12 heads, session 27, TMA and lazy rescale): head dim
 * 64, 8 x 512 tokens 22.2 us (session 26's cp.async form 23.2, the mma.sync kernel 30.2-31.3),
 * 16384 ragged tokens 81.0 (84.9; 105.5-109.1); head dim 32, 16.4 (17.3; 19.5-19.8) and 59.7
 * (62.3; 67.5-69.4). The cp.async loader's first form (a loop from tid / kChunks, a generic loop
 * in SASS) had cost 13-18% more. Nsight Compute of the cp.async form, 16384 tokens: 11-15 warps
 * per SM (3 CTAs at head dim 64, shared memory; 4 at 32, registers), 5.6-6.1 cycles per issued
 * instruction, issue slots 46-53%: latency-bound; more warps per SM (2 warp groups sharing K/V,
 * FlashAttention-3) is the next step. Measured slower (session 32, docs/benchmarks.md thirty-first
 * round): 5 CTAs per SM at head dim 32 (96 registers, and ptxas then serialises the wgmmas,
 * C7512), a table tile's first K/V loads issued before its Q tile and n_tokens are read, and a
 * persistent form (CTAs taking tiles in turn, the next tile's loads issued by thread 0 from
 * within the steps: +14-21%; docs/results/2026-12-04-h200-session32/persistent.patch).
 *
 * Types: q, k, v, out and the wgmma operands (Q, K, V, P) are all bf16 or all IEEE binary16 (the
 * template parameter D, kern_dtype_t; one body for both); the accumulators and the online softmax
 * are fp32. Q moves by cp.async (rows past max_tokens zero-filled), K and V by TMA (two tensor
 * maps encoded per launch; a captured graph keeps them, the buffers being fixed).
 *
 * Launch configurations: bf16 / f16 x HD 32 / 64 x causal no / yes. Shared memory: the Q tile, 4
 * stages of K and V, 64 x HD 16-bit values each, and the ones (a 4 KiB tile at head dim 32, 1 KiB
 * at 64): 41 KiB at head dim 32, 74 KiB at 64. Tested
 * by tests/test_kernels_cuda.c beside the mma.sync kernel; timed by bench_kernels_cuda. */
#include <math.h>

#include <atomic>
#include <type_traits>

#include "kernels/attention_wgmma.h"
#include "kernels/kern_cuda_dev.cuh"
#include "kernels/kern_tma.cuh"
#include "kernels/kern_wgmma.cuh"

namespace {

constexpr int kBN = 64;    /* keys per block */
constexpr int kStages = 4; /* K/V blocks in flight: this one, the next (its S runs beside this
                              softmax), and two loading */

template <int HD> struct AttnCfg {
    static constexpr int kRowBytes = HD * 2;          /* one row of a tile: 64 or 128 bytes */
    static constexpr int kTileBytes = 64 * kRowBytes; /* a 64-row tile of Q, K or V */
    static constexpr uint32_t kMode = HD == 64 ? kern::kSwizzle128B : kern::kSwizzle64B;
    static constexpr uint32_t kGroup = 8 * kRowBytes; /* 8-row group stride */
    /* Head dim 32 folds the row sums into PV: V's N runs on past its 32 columns into a tile of
     * ones (the descriptor's second 64-byte piece of N, lbo bytes on), so one m64n40k16 gives O
     * and l (four m64n8k16 of P x ones fewer a block). Head dim 64 would need an 8 KiB tile of
     * ones, past the shared memory of 3 CTAs with 4 stages (with 3 stages it was 12% slower,
     * session 35), and keeps the separate sums (1 KiB of ones). */
    static constexpr bool kFold = HD == 32;
    static constexpr int kOnesBytes = kFold ? kTileBytes : 1024;
    /* the Q tile, then kStages stages of (K, V), then the ones; + 1 KiB to align to the swizzle
     * atom */
    static constexpr size_t kSmem = (size_t)(1 + 2 * kStages) * kTileBytes + kOnesBytes + 1024;
    static_assert(HD == 32 || HD == 64, "head dim 32 or 64");
};

/* byte offset of 16-byte chunk c of row r in a swizzled tile (the pattern the descriptor reads) */
template <int HD> __device__ __forceinline__ uint32_t swz(int r, int c) {
    const int x = HD == 64 ? (r & 7) : ((r >> 1) & 3);
    return (uint32_t)r * (HD * 2) + ((uint32_t)(c ^ x) << 4);
}

/* the larger of two pairs of 16-bit values of type D, per half */
template <kern_dtype_t D> __device__ __forceinline__ uint32_t max16x2(uint32_t a, uint32_t b) {
    uint32_t r;
    if constexpr (D == KERN_DTYPE_F16)
        asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    else
        asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* some half of a pair of 16-bit values of type D above 2^kern::kAttnLazy (+inf included) */
template <kern_dtype_t D> __device__ __forceinline__ bool above_lazy16x2(uint32_t a) {
    static_assert(kern::kAttnLazy == 8.f, "the constants are 2^8");
    uint32_t r;
    if constexpr (D == KERN_DTYPE_F16)
        asm("{\n .reg .pred p, q;\n setp.gt.f16x2 p|q, %1, %2;\n or.pred p, p, q;\n"
            " selp.u32 %0, 1, 0, p;\n}"
            : "=r"(r)
            : "r"(a), "r"(0x5c005c00u));
    else
        asm("{\n .reg .pred p, q;\n setp.gt.bf16x2 p|q, %1, %2;\n or.pred p, p, q;\n"
            " selp.u32 %0, 1, 0, p;\n}"
            : "=r"(r)
            : "r"(a), "r"(0x43804380u));
    return r != 0u;
}

/* rows [r0, r0 + 64) of src (leading dimension ld, HD columns) into the swizzled tile at dst by
 * the 128 threads; rows >= nt are zero-filled (nothing is read for them). Thread tid copies the
 * 16-byte chunk tid % kChunks of rows tid / kChunks + i kStep: kStep is a multiple of the
 * swizzle's 8-row period, so those chunks sit at one swizzled offset plus whole row steps, and
 * the loop's trip count is a constant (written from tid, it compiled to a generic loop, ~130
 * instructions a K/V block with a 64-bit multiply per row, beside ~300 for the block's math) */
template <int HD>
__device__ __forceinline__ void load_tile(uint32_t dst, const uint16_t *src, int64_t ld, int32_t r0,
                                          int32_t nt, int tid) {
    constexpr int kChunks = HD / 8, kStep = 128 / kChunks;
    static_assert(kStep % 8 == 0 && 64 % kStep == 0, "whole swizzle periods, whole tiles");
    const int c = tid % kChunks, r = tid / kChunks;
    const uint16_t *p = src + (int64_t)(r0 + r) * ld + c * 8;
    const uint32_t d = dst + swz<HD>(r, c);
#pragma unroll
    for (int i = 0; i < 64 / kStep; i++)
        kern::cp_async16(d + (uint32_t)(i * kStep * HD * 2), p + (int64_t)i * kStep * ld,
                         r0 + r + i * kStep < nt ? 16 : 0);
}

template <kern_dtype_t D, int HD, bool CAUSAL>
__global__ void __launch_bounds__(128, HD == 32 ? 4 : 3)
    k_attention_wgmma(const __grid_constant__ CUtensorMap tk,
                      const __grid_constant__ CUtensorMap tv, uint16_t *__restrict__ out,
                      int64_t ldo, const uint16_t *__restrict__ q, int64_t ldq,
                      const int32_t *__restrict__ cu, const int32_t *__restrict__ tok_seq,
                      const int32_t *__restrict__ n_tokens_p, const int32_t *__restrict__ tiles,
                      int32_t max_tokens, int32_t n_heads, int32_t group, float scale_log2,
                      const int32_t *__restrict__ n_seqs_p, int pooled) {
    using C = AttnCfg<HD>;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t sq = (kern::smem_u32(smem_raw) + 1023u) & ~1023u;
    const uint32_t skv = sq + C::kTileBytes;        /* stage s: K at skv + 2 s tile, V after */
    __shared__ __align__(8) uint64_t full[kStages]; /* stage s holds its K/V block (TMA bytes) */
    /* CTA x = (tile, head), heads fastest: a table's longest tiles go first for every head */
    const int32_t tile = (int32_t)(blockIdx.x / (uint32_t)n_heads);
    const int h = (int)(blockIdx.x % (uint32_t)n_heads), kh = h / group;
    /* this CTA's rows [q0, q0 + n_rows): the table's entry (read before the PDL wait, L2 only:
     * see kern_attention_cuda) with the tile's key range, else the tile-th 64 packed rows */
    int32_t q0 = tile * 64, n_rows = 64, t_kbeg = 0, t_kend = 0;
    int t_kind = 0; /* 0: no table; 1: a table tile of several sequences; 2: of one sequence */
    if (pooled) {   /* kern_attention_pooled_cuda: tile s is sequence s's first (1) or last (2) row,
                       from the batch's layout, read before the PDL wait as a table's entry */
        if (tile >= *n_seqs_p)
            return;
        t_kbeg = cu[tile], t_kend = cu[tile + 1];
        q0 = pooled == 2 ? t_kend - 1 : t_kbeg, n_rows = 1, t_kind = 2;
    } else if (tiles) {
        const int4 te = __ldcg(reinterpret_cast<const int4 *>(tiles) + tile);
        if (te.x < 0)
            return; /* no tile */
        q0 = te.x & 0xffffff, n_rows = (te.x >> 24) + 1, t_kbeg = te.y, t_kend = te.z;
        t_kind = te.w ? 2 : 1;
    }
    kern::pdl_begin();
    const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32, c4 = lane % 4;
    const uint16_t *qh = q + (int64_t)h * HD;
    /* One round trip for everything that does not need n_tokens: the Q tile (rows past
     * max_tokens zero-filled; rows in [n_tokens, max_tokens) are loaded and never stored), the
     * tile's first and last rows' sequences (tok_seq has max_tokens entries) and this thread's
     * two rows' (accumulator rows lane / 4 and + 8 of the warp's 16); a table's tile of one
     * sequence needs none of them (its entry has the keys) and a table's tile of several needs
     * the rows' alone. */
    load_tile<HD>(sq, qh, ldq, q0, max_tokens, tid);
    const int32_t nt = *n_tokens_p;
    const int32_t q_end = min(q0 + n_rows - 1, max_tokens - 1);
    int32_t sf = 0, s_end = 0, row[2], rseq[2] = {0, 0};
    if (t_kind == 0)
        sf = tok_seq[q0], s_end = tok_seq[q_end];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        row[i] = q0 + 16 * warp + lane / 4 + 8 * i;
        if (t_kind != 2)
            rseq[i] = tok_seq[min(row[i], max_tokens - 1)];
    }
    const int32_t r_end = min(q0 + n_rows, nt); /* the live rows end */
    if (q0 >= r_end) {
        kern::cp_async_wait<0>();
        return; /* uniform over the CTA */
    }
    /* the CTA's live rows [q0, last]; sequences are packed in order, so the first row's sequence
     * starts its keys [kbeg, kend) and the last row's ends them; the keys every row sees
     * [in_lo, in_hi) (blocks inside need no mask) likewise. Second round trip: cu. */
    const int32_t last = r_end - 1;
    int32_t kbeg = t_kbeg, kend = CAUSAL ? min(t_kend, last + 1) : t_kend;
    /* a tile of several sequences has no block that every row sees whole */
    int32_t in_lo = t_kind == 2 ? t_kbeg : 1, in_hi = 0;
    if (t_kind == 2)
        in_hi = CAUSAL ? min(t_kend, q0 + 1) : t_kend;
    if (t_kind == 0) {
        const int32_t sl = last == q_end ? s_end : tok_seq[last]; /* the batch's last tile */
        kbeg = cu[sf], in_lo = cu[sl];
        kend = CAUSAL ? min(cu[sl + 1], last + 1) : cu[sl + 1];
        in_hi = CAUSAL ? min(cu[sf + 1], q0 + 1) : cu[sf + 1];
    }
    int32_t lo[2], hi[2]; /* this thread's rows' key ranges (empty past the live rows) */
#pragma unroll
    for (int i = 0; i < 2; i++) {
        lo[i] = 0, hi[i] = 0;
        if (row[i] < r_end) {
            const int32_t a = t_kind == 2 ? t_kbeg : cu[rseq[i]];
            const int32_t b = t_kind == 2 ? t_kend : cu[rseq[i] + 1];
            lo[i] = a, hi[i] = CAUSAL ? min(b, row[i] + 1) : b;
        }
    }
    const int n_blocks = (kend - kbeg + kBN - 1) / kBN;
    /* every row of the warp has the same key range (one sequence): a masked block then needs
     * one test per column for both of a thread's rows. (The shuffles run on every lane, outside
     * the && chain: a short-circuited __shfl_sync hung the kernel.) */
    const int32_t lo0 = __shfl_sync(0xffffffffu, lo[0], 0),
                  hi0 = __shfl_sync(0xffffffffu, hi[0], 0);
    const bool wshared =
        __all_sync(0xffffffffu, lo[0] == lo0 && hi[0] == hi0 && lo[1] == lo0 && hi[1] == hi0);
    auto stage_k = [&](int j) { return skv + (uint32_t)(j % kStages) * 2 * C::kTileBytes; };
    /* the operands' descriptors at stage 0; a stage or k16 step adds its bytes / 16 to the start
     * address field (shared addresses stay below 2^18, so it never carries out) */
    const uint32_t sones = skv + 2 * kStages * C::kTileBytes;
    /* V's lbo: folded, the ones from stage 0's V (a later stage's is that less its offset) */
    const uint32_t vlbo = C::kFold ? sones - (skv + C::kTileBytes) : C::kGroup;
    const uint64_t qdesc = kern::wgmma_desc(sq, C::kMode, 16, C::kGroup),
                   kdesc = kern::wgmma_desc(skv, C::kMode, 16, C::kGroup),
                   vdesc = kern::wgmma_desc(skv + C::kTileBytes, C::kMode, vlbo, C::kGroup),
                   onesdesc = kern::wgmma_desc(sones, 0, 128, 256); /* any layout reads ones */
    auto desc_at = [](uint64_t d, uint32_t bytes) { return d + (uint64_t)(bytes >> 4); };
    auto stage_off = [](int j) { return (uint32_t)(j % kStages) * 2 * C::kTileBytes; };
    /* V of block j at k16 slice kk; folded, lbo still reaches the one tile of ones */
    auto v_desc = [&](int j, int kk) {
        const uint64_t d = desc_at(vdesc, stage_off(j) + (uint32_t)kk * 16 * C::kRowBytes);
        return C::kFold ? d - ((uint64_t)(stage_off(j) >> 4) << 16) : d;
    };
    /* K/V blocks by TMA from thread 0 (rows past max_tokens read as zeros; rows in [n_tokens,
     * max_tokens) are loaded and then masked, V's zeroed by block_wait), completing on full[] */
    auto load_kv = [&](int j) {
        if (tid == 0 && j < n_blocks) {
            const uint32_t bar = kern::smem_u32(&full[j % kStages]);
            kern::mbar_expect_tx(bar, 2 * C::kTileBytes);
            kern::tma_load(stage_k(j), &tk, bar, kh * HD, kbeg + j * kBN);
            kern::tma_load(stage_k(j) + C::kTileBytes, &tv, bar, kh * HD, kbeg + j * kBN);
        }
    };
    if (tid == 0) {
        for (int st = 0; st < kStages; st++)
            kern::mbar_init(kern::smem_u32(&full[st]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    kern::cp_async_commit(); /* Q */
    __syncthreads();         /* the barriers are initialised */
    load_kv(0);
    load_kv(1);
    load_kv(2);

    /* S = Q K^T of block j into s (issued and committed, not waited for); desc: its operand
     * descriptors, which the caller keeps alive (desc_fence) until the wgmmas are waited for,
     * or ptxas, seeing their registers reused while the wgmmas may still read them, serialises
     * every wgmma of the kernel */
    auto issue_qk = [&](int j, float(&s)[kBN / 2], uint64_t(&desc)[HD / 16][2]) {
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            desc[kk][0] = desc_at(qdesc, kk * 32);
            desc[kk][1] = desc_at(kdesc, stage_off(j) + kk * 32);
        }
        kern::wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            kern::wgmma_ss<kBN, 0, D>(s, desc[kk][0], desc[kk][1], kk > 0);
        kern::wg_commit();
    };
    auto desc_fence = [](uint64_t(&desc)[HD / 16][2]) {
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            asm volatile("" ::"l"(desc[kk][0]), "l"(desc[kk][1]) : "memory");
    };
    /* Block j's K and V are in shared memory. Its V rows past n_tokens (only in the block that
     * holds the batch's last key) are zeroed: P is 0 there, but 0 x a stale NaN would not be. */
    auto block_wait = [&](int j) {
        kern::mbar_wait(kern::smem_u32(&full[j % kStages]), (uint32_t)(j / kStages) & 1u);
        const int32_t vr = nt - (kbeg + j * kBN); /* > 0: the block starts before n_tokens */
        if (vr < kBN) {                           /* uniform over the CTA */
            const uint32_t vt = stage_k(j) + C::kTileBytes;
            for (int c = vr * (C::kRowBytes / 16) + tid; c < kBN * (C::kRowBytes / 16); c += 128)
                asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(vt + 16u * c),
                             "r"(0u)
                             : "memory");
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            __syncthreads();
        }
    };

    /* O, then the rows' sums of P from the tensor cores as P x ones (o[HD / 2 + 2 i] is row i's;
     * all four columns agree): the accumulator of m64n(HD + 8), one 8-column group more */
    float o[HD / 2 + 4];
#pragma unroll
    for (int i = 0; i < HD / 2 + 4; i++)
        o[i] = 0.f;
    /* the rows' reference maxima (scaled, base 2) and their negation (0 while -inf) */
    float m_run[2] = {-INFINITY, -INFINITY}, negm[2] = {0.f, 0.f};
    /* each row's first key block, where the exact path sets its reference (-1: no live row) */
    int32_t jfirst[2];
#pragma unroll
    for (int i = 0; i < 2; i++)
        jfirst[i] = lo[i] < hi[i] ? (lo[i] - kbeg) / kBN : -1;

    /* P of the two scores of A fragment register r of k16 slice kk (s[4 g + 2 i + e]: row i, key
     * 8 g + 2 c4 + e), 2^(s scale log2(e) - m) against the row's reference, packed as type D; the
     * fast and the exact path both compute P by it */
    auto p_pair = [&](const float(&s)[kBN / 2], int kk, int r) {
        const int i0 = 8 * kk + 2 * r, row = r & 1;
        return kern::pack16<D>(kern::ex2(fmaf(s[i0], scale_log2, negm[row])),
                               kern::ex2(fmaf(s[i0 + 1], scale_log2, negm[row])));
    };
    /* Online softmax of block j's scores s (complete): masks, moves the reference max where it
     * must, returns O's (and the sums') rescale factors in alpha and P as A fragments of type D
     * (16 keys each) in pa. The sums are P x ones on the tensor cores (in step), so only the
     * exponentials are computed here. Fast path, where no row of the warp is at its first key
     * block: P against the current references, and only if some P passes 2^kAttnLazy (a packed
     * maximum of the 16-bit P, not a row maximum of the scores) the exact path runs: row maxima
     * of the scores, new references, P again (both by p_pair). */
    auto softmax = [&](int j, float(&s)[kBN / 2], float(&alpha)[2], bool &rescale,
                       uint32_t(&pa)[kBN / 16][4]) {
        const int32_t kb = kbeg + j * kBN;
        /* s[4 g + 2 i + e]: row i, key kb + 8 g + 2 c4 + e */
        if (!(kb >= in_lo && kb + kBN <= in_hi)) {
            /* A warp whose rows share one key range decides for itself (warp-uniform): a block
             * inside its range needs no mask; one outside it (the other sequence's keys of a tile
             * that spans two, or a warp of rows past n_tokens) gives P = 0, and its max, exp and
             * sum are skipped (O, l and the running max stay as they are) */
            const bool w_out = wshared && (kb + kBN <= lo0 || kb >= hi0);
            if (w_out) {
                rescale = false;
#pragma unroll
                for (int kk = 0; kk < kBN / 16; kk++)
#pragma unroll
                    for (int r = 0; r < 4; r++)
                        pa[kk][r] = 0u;
                return;
            }
            if (wshared && kb >= lo0 && kb + kBN <= hi0) {
                /* inside the warp's range: no mask */
            } else if (wshared) { /* warp-uniform */
                const int32_t rel = kb + 2 * c4 - lo[0];
                const uint32_t len = (uint32_t)(hi[0] - lo[0]);
#pragma unroll
                for (int g = 0; g < kBN / 8; g++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        if ((uint32_t)(rel + 8 * g + e) >= len)
                            s[4 * g + e] = s[4 * g + 2 + e] = -INFINITY;
            } else
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const int32_t rel = kb + 2 * c4 - lo[i];
                    const uint32_t len = (uint32_t)(hi[i] - lo[i]);
#pragma unroll
                    for (int g = 0; g < kBN / 8; g++)
#pragma unroll
                        for (int e = 0; e < 2; e++)
                            if ((uint32_t)(rel + 8 * g + e) >= len)
                                s[4 * g + 2 * i + e] = -INFINITY;
                }
        }
        if (!__any_sync(0xffffffffu, j == jfirst[0] || j == jfirst[1])) {
            uint32_t mx = 0u;
#pragma unroll
            for (int kk = 0; kk < kBN / 16; kk++)
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    pa[kk][r] = p_pair(s, kk, r);
                    mx = kk == 0 && r == 0 ? pa[0][0] : max16x2<D>(mx, pa[kk][r]);
                }
            if (!__any_sync(0xffffffffu, above_lazy16x2<D>(mx))) {
                rescale = false;
                return;
            }
        }
        float mb[2];
        bool grow = false;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            float mx[kBN / 8];
#pragma unroll
            for (int g = 0; g < kBN / 8; g++)
                mx[g] = fmaxf(s[4 * g + 2 * i], s[4 * g + 2 * i + 1]);
#pragma unroll
            for (int w = kBN / 16; w >= 1; w /= 2)
#pragma unroll
                for (int g = 0; g < w; g++)
                    mx[g] = fmaxf(mx[g], mx[g + w]);
            float m = mx[0];
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
            mb[i] = m * scale_log2;
            grow |= mb[i] > m_run[i] + kern::kAttnLazy; /* m_run -inf: any finite max */
        }
        /* the reference max moves (and O, l are rescaled) only when some row of the warp sees
         * a max above its reference by more than kern::kAttnLazy: P stays <= 2^8 */
        rescale = __any_sync(0xffffffffu, grow);
        if (rescale)
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const float mnew = fmaxf(m_run[i], mb[i]);
                alpha[i] = kern::ex2(m_run[i] - (mnew == -INFINITY ? 0.f : mnew)); /* -inf: 0 */
                m_run[i] = mnew;
                negm[i] = mnew == -INFINITY ? 0.f : -mnew;
            }
#pragma unroll
        for (int kk = 0; kk < kBN / 16; kk++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                pa[kk][r] = p_pair(s, kk, r);
    };

    /* Block j (its softmax done: alpha, pa): S_{j+1} issued into s_next, O rescaled and PV_j
     * issued, S_{j+1} waited for and its softmax computed into alpha_next / pa_next while PV_j
     * runs, then PV_j waited for and the stage of block j - 1 refilled with block j + 3.
     * Nothing is in flight between steps (ptxas serialises wgmmas in flight across a loop's
     * back edge). */
    auto step = [&](auto more_c, int j, float(&alpha)[2], bool &resc, uint32_t(&pa)[kBN / 16][4],
                    float(&s_next)[kBN / 2], float(&alpha_next)[2], bool &resc_next,
                    uint32_t(&pa_next)[kBN / 16][4]) {
        constexpr bool more = decltype(more_c)::value; /* j + 1 < n_blocks */
        uint64_t desc[HD / 16][2];
        if constexpr (more) {
            block_wait(j + 1);
            issue_qk(j + 1, s_next, desc);
        }
        if (resc) /* warp-uniform; O and the sums */
#pragma unroll
            for (int g = 0; g < HD / 8 + 1; g++)
#pragma unroll
                for (int i = 0; i < 2; i++)
                    o[4 * g + 2 * i] *= alpha[i], o[4 * g + 2 * i + 1] *= alpha[i];
        kern::wg_fence();
        if constexpr (C::kFold) {
#pragma unroll
            for (int kk = 0; kk < kBN / 16; kk++)
                kern::wgmma_rs<HD + 8, 1, D>(o, pa[kk], v_desc(j, kk), 1);
        } else {
#pragma unroll
            for (int kk = 0; kk < kBN / 16; kk++)
                kern::wgmma_rs<HD, 1, D>(o, pa[kk], v_desc(j, kk), 1);
#pragma unroll
            for (int kk = 0; kk < kBN / 16; kk++)
                kern::wgmma_rs<8, 0, D>(o + HD / 2, pa[kk], onesdesc, 1);
        }
        kern::wg_commit();
        if constexpr (more) {
            kern::wg_wait<1>(); /* S_{j+1} done; PV_j may still run */
            kern::acc_fence(s_next);
            desc_fence(desc);
            softmax(j + 1, s_next, alpha_next, resc_next, pa_next);
        }
        kern::wg_wait<0>();
        kern::acc_fence(o);
#pragma unroll
        for (int kk = 0; kk < kBN / 16; kk++)
            kern::acc_fence(pa[kk]);
        /* into block j - 1's stage: PV_j done means every warp issued it, so every warp had
         * waited for PV_{j-1}, the last read of that stage */
        load_kv(j + 3);
    };

    float s[kBN / 2], alpha_a[2], alpha_b[2];
    bool resc_a, resc_b;
    uint32_t pa_a[kBN / 16][4], pa_b[kBN / 16][4]; /* P of even / odd blocks */
    { /* the ones the row sums multiply P by: 8 bytes a thread a KiB */
        const uint32_t one2 = D == KERN_DTYPE_F16 ? 0x3c003c00u : 0x3f803f80u;
#pragma unroll
        for (int i = 0; i < C::kOnesBytes / 1024; i++)
            asm volatile(
                "st.shared.v2.u32 [%0], {%1, %1};\n" ::"r"(sones + 1024u * i + 8u * (uint32_t)tid),
                "r"(one2)
                : "memory");
    }
    kern::cp_async_wait<0>(); /* Q and the ones, visible to the wgmmas (async proxy) */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    block_wait(0);
    {
        uint64_t desc[HD / 16][2];
        issue_qk(0, s, desc);
        kern::wg_wait<0>();
        kern::acc_fence(s);
        desc_fence(desc);
    }
    softmax(0, s, alpha_a, resc_a, pa_a);
    /* two blocks per iteration (even blocks use the a buffers); the last one issues no S */
    const std::true_type more;
    const std::false_type final_block;
    int j = 0;
    for (; j + 2 < n_blocks; j += 2) {
        step(more, j, alpha_a, resc_a, pa_a, s, alpha_b, resc_b, pa_b);
        step(more, j + 1, alpha_b, resc_b, pa_b, s, alpha_a, resc_a, pa_a);
    }
    if (j + 1 < n_blocks) {
        step(more, j, alpha_a, resc_a, pa_a, s, alpha_b, resc_b, pa_b);
        step(final_block, j + 1, alpha_b, resc_b, pa_b, s, alpha_a, resc_a, pa_a);
    } else {
        step(final_block, j, alpha_a, resc_a, pa_a, s, alpha_b, resc_b, pa_b);
    }

    /* The output through the Q tile's shared memory, free once every warp is past its last
     * wgmma: a warp writes its 16 rows as the accumulators hold them (4-byte pairs), then reads
     * them back as 16-byte chunks, so each global store covers whole rows (the 4-byte stores
     * left a third of the L2 sectors half written, ncu). A row's chunks are XOR-swizzled by the
     * row, so neither side has bank conflicts. */
    constexpr int kChunks = HD / 8; /* 16-byte chunks a row */
    auto chunk_at = [](int rw, int c) { return HD == 64 ? c ^ (rw & 7) : c ^ ((rw >> 1) & 3); };
    const uint32_t swarp = sq + (uint32_t)warp * 16u * (HD * 2);
    uint32_t stored[2]; /* bit 4 x (row % 8) of stored[row / 8]: the warp's row is live */
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int rw = lane / 4 + 8 * i;
        const int32_t r = q0 + 16 * warp + rw;
        stored[i] = __ballot_sync(0xffffffffu, r < r_end && lo[i] < hi[i]);
        const float inv = 1.0f / o[HD / 2 + 2 * i];
#pragma unroll
        for (int g = 0; g < kChunks; g++)
            asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(swarp + (uint32_t)rw * (HD * 2) +
                                                           16u * chunk_at(rw, g) + 4u * c4),
                         "r"(kern::pack16<D>(o[4 * g + 2 * i] * inv, o[4 * g + 2 * i + 1] * inv))
                         : "memory");
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < kChunks / 2; k++) {
        const int idx = 32 * k + lane, rw = idx / kChunks, c = idx % kChunks;
        if (!(((rw < 8 ? stored[0] : stored[1]) >> (4 * (rw % 8))) & 1u))
            continue;
        uint32_t v[4];
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                     : "r"(swarp + (uint32_t)rw * (HD * 2) + 16u * chunk_at(rw, c))
                     : "memory");
        uint16_t *dst = out + (int64_t)(q0 + 16 * warp + rw) * ldo + (int64_t)h * HD + 8 * c;
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(v[0]), "r"(v[1]),
                     "r"(v[2]), "r"(v[3])
                     : "memory");
    }
}

template <kern_dtype_t D, int HD, bool CAUSAL>
int s_launch(const kern_attention_params_t *p, uint16_t *out, int64_t ldo, const uint16_t *q,
             int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
             const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens,
             const int32_t *tiles, int32_t max_tokens, const int32_t *n_seqs, int pooled,
             int32_t max_seqs, cudaStream_t stream, com_error_t *err) {
    auto *kfn = k_attention_wgmma<D, HD, CAUSAL>;
    constexpr size_t smem = AttnCfg<HD>::kSmem;
    static std::atomic<uint64_t> s_ready{0};
    KERN_CUDA_TRY(kern::setup_once(kfn, smem, s_ready), err);
    /* K and V as [max_tokens][n_kv_heads HD] matrices, a block = one head's 64 x HD box, swizzled
     * as the wgmma descriptors read it */
    const CUtensorMapSwizzle swz =
        HD == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
    CUtensorMap tk, tv;
    int rc = kern::tma_init(err);
    if (rc == 0)
        rc = kern::tma_encode_2d(&tk, D, k, max_tokens, (int64_t)p->n_kv_heads * HD, ldk, kBN, HD,
                                 swz, err);
    if (rc == 0)
        rc = kern::tma_encode_2d(&tv, D, v, max_tokens, (int64_t)p->n_kv_heads * HD, ldv, kBN, HD,
                                 swz, err);
    if (rc != 0)
        return rc;
    const int64_t n_tiles = pooled  ? max_seqs
                            : tiles ? kern_attention_tiles_cap(max_tokens)
                                    : (max_tokens + 63) / 64;
    if (tiles && !kern::aligned16(tiles))
        return com_error_set(err, COM_EINVAL, "attention_wgmma: tiles not 16-byte aligned");
    const int64_t ctas = n_tiles * p->n_heads;
    if (ctas > INT32_MAX)
        return com_error_set(err, COM_EINVAL, "attention_wgmma: %lld CTAs (max_tokens %d)",
                             (long long)ctas, (int)max_tokens);
    KERN_CUDA_TRY(kern::launch(kfn, dim3((unsigned)ctas), dim3(128), smem, stream, tk, tv, out, ldo,
                               q, ldq, cu, tok_seq, n_tokens, tiles, max_tokens, p->n_heads,
                               (int32_t)(p->n_heads / p->n_kv_heads),
                               p->scale * 1.4426950408889634f, n_seqs, pooled),
                  err);
    return 0;
}

/* the kernel of type D for p's head_dim (32 or 64) and causality */
template <kern_dtype_t D>
int s_launch_dtype(const kern_attention_params_t *p, uint16_t *out, int64_t ldo, const uint16_t *q,
                   int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
                   const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens,
                   const int32_t *tiles, int32_t max_tokens, const int32_t *n_seqs, int pooled,
                   int32_t max_seqs, cudaStream_t stream, com_error_t *err) {
    auto *fn = p->head_dim == 64 ? (p->causal ? s_launch<D, 64, true> : s_launch<D, 64, false>)
                                 : (p->causal ? s_launch<D, 32, true> : s_launch<D, 32, false>);
    return fn(p, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq, n_tokens, tiles, max_tokens, n_seqs,
              pooled, max_seqs, stream, err);
}

/* kern_attention_wgmma_cuda's checks, then the launch (pooled: 0, or 1 / 2 for
 * kern_attention_wgmma_pooled_cuda's first / last rows) */
int s_checked(const kern_attention_params_t *p, kern_dtype_t dtype, uint16_t *out, int64_t ldo,
              const uint16_t *q, int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v,
              int64_t ldv, const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens,
              const int32_t *tiles, int32_t max_tokens, const int32_t *n_seqs, int pooled,
              int32_t max_seqs, cudaStream_t stream, com_error_t *err) {
    if (!kern_attention_wgmma_valid(p))
        return com_error_set(err, COM_EUNSUPPORTED,
                             "attention_wgmma: needs compute capability 9.0 and head_dim 32 or "
                             "64");
    if (!kern_attention_wgmma_out_ok(out, ldo))
        return com_error_set(err, COM_EINVAL,
                             "attention_wgmma: out needs 16-byte alignment and ldo a multiple of 8 "
                             "(ldo %lld)",
                             (long long)ldo);
    if (dtype == KERN_DTYPE_F16)
        return s_launch_dtype<KERN_DTYPE_F16>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq,
                                              n_tokens, tiles, max_tokens, n_seqs, pooled, max_seqs,
                                              stream, err);
    if (dtype == KERN_DTYPE_BF16)
        return s_launch_dtype<KERN_DTYPE_BF16>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq,
                                               n_tokens, tiles, max_tokens, n_seqs, pooled,
                                               max_seqs, stream, err);
    return com_error_set(err, COM_EINVAL, "attention_wgmma: dtype %d", (int)dtype);
}

} // namespace

bool kern_attention_wgmma_valid(const kern_attention_params_t *p) {
    return p && (p->head_dim == 32 || p->head_dim == 64) && kern_sm90a_device();
}

bool kern_attention_wgmma_out_ok(const uint16_t *out, int64_t ldo) {
    return ldo % 8 == 0 && kern::aligned16(out); /* the output's 16-byte stores */
}

int kern_attention_wgmma_cuda(const kern_attention_params_t *p, kern_dtype_t dtype, uint16_t *out,
                              int64_t ldo, const uint16_t *q, int64_t ldq, const uint16_t *k,
                              int64_t ldk, const uint16_t *v, int64_t ldv, const int32_t *cu,
                              const int32_t *tok_seq, const int32_t *n_tokens, const int32_t *tiles,
                              int32_t max_tokens, cudaStream_t stream, com_error_t *err) {
    return s_checked(p, dtype, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq, n_tokens, tiles,
                     max_tokens, NULL, 0, 0, stream, err);
}

int kern_attention_wgmma_pooled_cuda(const kern_attention_params_t *p, kern_dtype_t dtype,
                                     uint16_t *out, int64_t ldo, const uint16_t *q, int64_t ldq,
                                     const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
                                     const int32_t *cu, const int32_t *tok_seq,
                                     const int32_t *n_tokens, const int32_t *n_seqs,
                                     int32_t max_seqs, bool last, int32_t max_tokens,
                                     cudaStream_t stream, com_error_t *err) {
    return s_checked(p, dtype, out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq, n_tokens, NULL,
                     max_tokens, n_seqs, last ? 2 : 1, max_seqs, stream, err);
}
