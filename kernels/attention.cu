/* kernels/attention.cu — ragged (packed, padding-free) multi-head attention on tensor cores,
 * FlashAttention-2 style (contract in attention.h; plain-C reference kern_attention_ref beside
 * it).
 *
 * Grid: (ceil(max_tokens / 64), n_heads), 128 threads = 4 warps. CTA (tile, h) takes the 64
 * packed query rows [64 tile, 64 tile + 64) of head h; warp w owns 16 of them. The grid depends
 * on the bucket only; everything about the batch is read from device memory: *n_tokens (CTAs past
 * it exit), and for each row its sequence (tok_seq) and that sequence's key range [lo, hi) from
 * cu_seqlens (causal: hi = min(hi, row + 1)). A tile may span several sequences: the CTA walks
 * the keys [lo of its first row, hi of its last row) in blocks of 64 and masks per element
 * (key outside the row's range -> -inf), and a warp skips blocks outside its rows' union range.
 * Cost: at most the keys of the sequences the tile touches, so short sequences waste little.
 *
 * Per key block (double-buffered in shared memory by cp.async, zero-filled past the end):
 *   S = Q K^T          mma.sync m16n8k16 bf16 -> fp32; Q fragments held in registers, K by
 *                      ldmatrix.x4 from [key][dim] rows padded by 16 bytes (no bank conflicts)
 *   online softmax     in base 2: p = ex2.approx(s * scale * log2 e - m), one FFMA + one MUFU
 *                      per score; running max m (scaled units) and partial sum l per row (per
 *                      thread, reduced over the quad at the end), O rescaled. Masking only in
 *                      blocks that cross a row's key range (a warp-uniform test). For d = 32
 *                      the softmax's ALU work, not the tensor cores, bounds the kernel: these
 *                      two changes took the 100 ragged MiniLM texts from 984 to 817 us (H200)
 *   O += P V           P re-packed from the S accumulators into A fragments (no shared memory),
 *                      V by ldmatrix.x4.trans
 * then O / l is written as bf16 for the valid rows. GQA: kv head = h / (n_heads / n_kv_heads).
 * Launch configurations: HEAD_DIM 32 or 64 x causal no/yes (128 fits the same code with a larger
 * shared-memory carve-out: a later template instance). Shared memory: 2 stages x (K + V) x 64 x
 * (HEAD_DIM + 8) bf16 = 36 KiB at 64. Stream: the caller's.
 * Tested by tests/test_kernels_cuda.c (all four configurations, ragged shapes); timed by
 * bench_kernels_cuda ("attention"). */
#include <math.h>

#include "kernels/attention.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kBM = 64, kBN = 64, kWarps = 4, kThreads = kWarps * 32;

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                        const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldsm_x4_t(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                          const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_addr(p)));
}

/* c += a b, m16n8k16, bf16 inputs, fp32 accumulators */
__device__ __forceinline__ void mma_bf16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* 2^x by the special-function unit (~2 ulp; -inf -> +0), what exp2f costs several
 * instructions more for */
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

template <int HD> struct Smem {
    static constexpr int kStride = HD + 8; /* bf16 elements per row: +16 bytes, conflict-free */
    uint16_t k[2][kBN][kStride];
    uint16_t v[2][kBN][kStride];
};

template <int HD, bool CAUSAL>
__global__ void __launch_bounds__(kThreads)
    k_attention(uint16_t *__restrict__ out, int64_t ldo, const uint16_t *__restrict__ q,
                int64_t ldq, const uint16_t *__restrict__ k, int64_t ldk,
                const uint16_t *__restrict__ v, int64_t ldv, const int32_t *__restrict__ cu,
                const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ n_tokens_p,
                int32_t group, float scale_log2) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Smem<HD> &sm = *reinterpret_cast<Smem<HD> *>(smem_raw);
    const int32_t nt = *n_tokens_p;
    const int32_t q0 = blockIdx.x * kBM;
    if (q0 >= nt)
        return;
    const int h = blockIdx.y, kh = h / group;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c4 = lane % 4;
    const int32_t qlast = min(q0 + kBM, nt) - 1;
    const int32_t kbeg = cu[tok_seq[q0]];
    int32_t kend = cu[tok_seq[qlast] + 1];
    if (CAUSAL)
        kend = min(kend, qlast + 1);

    /* this thread's two rows and their key ranges (empty for rows past n_tokens) */
    int32_t row[2], lo[2], hi[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        row[i] = q0 + warp * 16 + g + 8 * i;
        lo[i] = 0, hi[i] = 0;
        if (row[i] < nt) {
            const int32_t s = tok_seq[row[i]];
            lo[i] = cu[s], hi[i] = cu[s + 1];
            if (CAUSAL)
                hi[i] = min(hi[i], row[i] + 1);
        }
    }
    /* the warp's union key range, to skip blocks none of its rows sees */
    int32_t wlo = min(lo[0] < hi[0] ? lo[0] : INT32_MAX, lo[1] < hi[1] ? lo[1] : INT32_MAX);
    int32_t whi = max(hi[0], hi[1]);
    /* ... and the keys every row of the warp sees (empty when a row is past n_tokens): blocks
     * inside it need no mask */
    int32_t wlo_in = max(lo[0], lo[1]), whi_in = min(hi[0], hi[1]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        wlo = min(wlo, __shfl_xor_sync(0xffffffffu, wlo, o));
        whi = max(whi, __shfl_xor_sync(0xffffffffu, whi, o));
        wlo_in = max(wlo_in, __shfl_xor_sync(0xffffffffu, wlo_in, o));
        whi_in = min(whi_in, __shfl_xor_sync(0xffffffffu, whi_in, o));
    }

    /* Q fragments (A operand, row-major 16 x HD), zero for invalid rows */
    uint32_t qa[HD / 16][4];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int i = j & 1, col = kk * 16 + 2 * c4 + 8 * (j >> 1);
            qa[kk][j] = row[i] < nt ? *reinterpret_cast<const uint32_t *>(
                                          q + (int64_t)row[i] * ldq + (int64_t)h * HD + col)
                                    : 0u;
        }

    float o_acc[HD / 8][4];
#pragma unroll
    for (int n = 0; n < HD / 8; n++)
        o_acc[n][0] = o_acc[n][1] = o_acc[n][2] = o_acc[n][3] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

    const uint16_t *kbase = k + (int64_t)kh * HD, *vbase = v + (int64_t)kh * HD;
    constexpr int kChunks = kBN * HD / 8; /* 16-byte chunks per K (or V) block */
    auto load_block = [&](int stage, int32_t kb) {
#pragma unroll
        for (int c = threadIdx.x; c < kChunks; c += kThreads) {
            const int r = c / (HD / 8), col = (c % (HD / 8)) * 8;
            const int32_t key = kb + r;
            const bool ok = key < kend;
            const int64_t kr = ok ? key : kbeg;
            cp_async16(&sm.k[stage][r][col], kbase + kr * ldk + col, ok);
            cp_async16(&sm.v[stage][r][col], vbase + kr * ldv + col, ok);
        }
        cp_commit();
    };

    const int n_blocks = (kend - kbeg + kBN - 1) / kBN;
    load_block(0, kbeg);
    for (int j = 0; j < n_blocks; j++) {
        const int stage = j & 1;
        const int32_t kb = kbeg + j * kBN;
        if (j + 1 < n_blocks) {
            load_block(stage ^ 1, kb + kBN);
            cp_wait<1>();
        } else {
            cp_wait<0>();
        }
        __syncthreads();
        if (kb < whi && kb + kBN > wlo) {
            float s[kBN / 8][4];
#pragma unroll
            for (int n = 0; n < kBN / 8; n++)
                s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
            for (int n2 = 0; n2 < kBN / 16; n2++)
#pragma unroll
                for (int kk = 0; kk < HD / 16; kk++) {
                    uint32_t b0, b1, b2, b3;
                    ldsm_x4(b0, b1, b2, b3,
                            &sm.k[stage][16 * n2 + (lane % 8) + 8 * (lane / 16)]
                                 [kk * 16 + 8 * ((lane / 8) % 2)]);
                    mma_bf16(s[2 * n2], qa[kk], b0, b1);
                    mma_bf16(s[2 * n2 + 1], qa[kk], b2, b3);
                }
            /* block row max of the raw scores; masking only where the block crosses a row's
             * key range (warp-uniform test: most blocks of long sequences are interior) */
            float mb[2] = {-INFINITY, -INFINITY};
            if (kb >= wlo_in && kb + kBN <= whi_in) {
#pragma unroll
                for (int n = 0; n < kBN / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        mb[e >> 1] = fmaxf(mb[e >> 1], s[n][e]);
            } else {
#pragma unroll
                for (int n = 0; n < kBN / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int i = e >> 1;
                        const int32_t key = kb + 8 * n + 2 * c4 + (e & 1);
                        const bool ok = key >= lo[i] && key < hi[i];
                        s[n][e] = ok ? s[n][e] : -INFINITY;
                        mb[i] = fmaxf(mb[i], s[n][e]);
                    }
            }
            /* running max in scaled base-2 units (scale > 0, so the max commutes with it) */
            float alpha[2], muse[2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                mb[i] = fmaxf(mb[i], __shfl_xor_sync(0xffffffffu, mb[i], 1));
                mb[i] = fmaxf(mb[i], __shfl_xor_sync(0xffffffffu, mb[i], 2));
                const float mnew = fmaxf(m_run[i], mb[i] * scale_log2);
                muse[i] = mnew == -INFINITY ? 0.f : mnew;
                alpha[i] = m_run[i] == -INFINITY ? 0.f : ex2(m_run[i] - muse[i]);
                m_run[i] = mnew;
                l_run[i] *= alpha[i];
            }
#pragma unroll
            for (int n = 0; n < HD / 8; n++) {
                o_acc[n][0] *= alpha[0], o_acc[n][1] *= alpha[0];
                o_acc[n][2] *= alpha[1], o_acc[n][3] *= alpha[1];
            }
            /* p = 2^(s scale log2(e) - m): one FFMA, one MUFU.EX2 (masked: -inf -> 0) */
#pragma unroll
            for (int n = 0; n < kBN / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float p = ex2(fmaf(s[n][e], scale_log2, -muse[e >> 1]));
                    s[n][e] = p;
                    l_run[e >> 1] += p;
                }
                /* O += P V */
#pragma unroll
            for (int kk = 0; kk < kBN / 16; kk++) {
                const uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]),
                                        pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                                        pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                        pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
                for (int dp = 0; dp < HD / 16; dp++) {
                    uint32_t b0, b1, b2, b3;
                    ldsm_x4_t(b0, b1, b2, b3,
                              &sm.v[stage][16 * kk + (lane % 8) + 8 * ((lane / 8) % 2)]
                                   [16 * dp + 8 * (lane / 16)]);
                    mma_bf16(o_acc[2 * dp], pa, b0, b1);
                    mma_bf16(o_acc[2 * dp + 1], pa, b2, b3);
                }
            }
        }
        __syncthreads(); /* the stage is refilled by the next iteration's load */
    }

#pragma unroll
    for (int i = 0; i < 2; i++) {
        l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 1);
        l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 2);
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        if (row[i] >= nt || lo[i] >= hi[i])
            continue;
        const float inv = 1.0f / l_run[i];
        uint16_t *orow = out + (int64_t)row[i] * ldo + (int64_t)h * HD + 2 * c4;
#pragma unroll
        for (int n = 0; n < HD / 8; n++)
            *reinterpret_cast<uint32_t *>(orow + 8 * n) =
                pack_bf16(o_acc[n][2 * i] * inv, o_acc[n][2 * i + 1] * inv);
    }
}

template <int HD, bool CAUSAL>
int s_launch(const kern_attention_params_t *p, uint16_t *out, int64_t ldo, const uint16_t *q,
             int64_t ldq, const uint16_t *k, int64_t ldk, const uint16_t *v, int64_t ldv,
             const int32_t *cu, const int32_t *tok_seq, const int32_t *n_tokens, int32_t max_tokens,
             cudaStream_t stream, com_error_t *err) {
    const size_t smem = sizeof(Smem<HD>);
    if (smem > 48 * 1024)
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_attention<HD, CAUSAL>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
    const dim3 grid((unsigned)((max_tokens + kBM - 1) / kBM), (unsigned)p->n_heads);
    k_attention<HD, CAUSAL><<<grid, kThreads, smem, stream>>>(
        out, ldo, q, ldq, k, ldk, v, ldv, cu, tok_seq, n_tokens, p->n_heads / p->n_kv_heads,
        p->scale * 1.4426950408889634f);
    KERN_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}

} // namespace

extern "C" int kern_attention_cuda(const kern_attention_params_t *p, uint16_t *out, int64_t ldo,
                                   const uint16_t *q, int64_t ldq, const uint16_t *k, int64_t ldk,
                                   const uint16_t *v, int64_t ldv, const int32_t *cu_seqlens,
                                   const int32_t *tok_seq, const int32_t *n_tokens,
                                   int32_t max_tokens, cudaStream_t stream, com_error_t *err) {
    if (!p || !out || !q || !k || !v || !cu_seqlens || !tok_seq || !n_tokens || max_tokens < 1 ||
        p->n_heads < 1 || p->n_kv_heads < 1 || p->n_heads % p->n_kv_heads != 0 ||
        p->n_heads > 65535 || !(p->scale > 0.f)) /* the running max is kept scaled */
        return com_error_set(err, COM_EINVAL, "attention_cuda: bad arguments");
    if ((ldq | ldk | ldv) % 8 != 0 || ldo % 2 != 0 || !kern::aligned16(q) || !kern::aligned16(k) ||
        !kern::aligned16(v) || ((uintptr_t)out & 3u))
        return com_error_set(err, COM_EINVAL,
                             "attention_cuda: q/k/v need 16-byte alignment and leading dims that "
                             "are multiples of 8 (ldq %lld, ldk %lld, ldv %lld, ldo %lld)",
                             (long long)ldq, (long long)ldk, (long long)ldv, (long long)ldo);
#define S_CASE(HD)                                                                                 \
    case HD:                                                                                       \
        return p->causal ? s_launch<HD, true>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens,     \
                                              tok_seq, n_tokens, max_tokens, stream, err)          \
                         : s_launch<HD, false>(p, out, ldo, q, ldq, k, ldk, v, ldv, cu_seqlens,    \
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
