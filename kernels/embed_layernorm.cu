/* kernels/embed_layernorm.cu — CUDA embedding gather + LayerNorm over a bucket of packed tokens
 * (contract in embed_layernorm.h; plain-C reference kern_embed_layernorm_ref beside it).
 *
 * Algorithm: a row t < *n_tokens finds its position as t - cu_seqlens[tok_seq[t]] (two loads,
 * no search), sums word + position + type rows (16-bit tables, fp32 sum, same order as the
 * reference), then two-pass mean / biased variance and writes fp32 and/or 16-bit. Rows past
 * *n_tokens are zeroed. Grid sized by max_tokens (the bucket). Launch configurations
 * (kern_embed_layernorm_cuda_config):
 *   2  register-resident, hidden 384 / 768 / 1024 (G = 16 / 32 / 32 lanes per row, N = 3 / 3 / 4
 *      16-byte vectors per lane, 128-thread blocks of 128 / G rows): gamma/beta loaded before
 *      the PDL wait (weights; kern_cuda_dev.cuh), the row's ids and n_tokens together after it,
 *      then the word and type rows with cu[tok_seq[t]], then the position row: three dependent
 *      round trips before the group shuffle reductions;
 *   1  generic, hidden % 8 == 0: one warp per row, 4 rows per block, the row staged in shared
 *      memory (each lane owns i = lane*8 + 256 k, no barrier), 16-byte loads;
 *   0  generic, scalar loads (any hidden, or a table not 16-byte aligned).
 * Types: the tables and the 16-bit output are all bf16 or all IEEE binary16 (kern_dtype_t, the
 * template parameter D of every kernel, one body for both); math is fp32.
 * Shapes: tables [rows, hidden], gamma/beta [hidden] fp32, out [max_tokens, hidden].
 * Stream: the caller's. Tested by tests/test_kernels_cuda.c; timed by bench_kernels_cuda. */
#include "kernels/embed_layernorm.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kThreads = 128, kWarps = kThreads / 32;

/* the 16-bit output as the shared LayerNorm stores take it: their binary16 or their bf16 output */
template <kern_dtype_t D> __device__ __forceinline__ uint16_t *s_f16(uint16_t *out16) {
    return D == KERN_DTYPE_F16 ? out16 : nullptr;
}
template <kern_dtype_t D> __device__ __forceinline__ uint16_t *s_bf16(uint16_t *out16) {
    return D == KERN_DTYPE_BF16 ? out16 : nullptr;
}

/* Register-resident: H = G * N * 8. Every lane of the warp reaches the shuffles (no early
 * return); ids of rows < max_tokens are read before n_tokens is known (in bounds; used only by
 * live rows). */
template <kern_dtype_t D, int G, int N>
__global__ void __launch_bounds__(kThreads)
    k_embed_ln_reg(float *__restrict__ out_f32, uint16_t *__restrict__ out16,
                   const int32_t *__restrict__ ids, const int32_t *__restrict__ types,
                   const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ cu,
                   const int32_t *__restrict__ n_tokens, int32_t max_tokens,
                   const uint16_t *__restrict__ word, const uint16_t *__restrict__ pos,
                   const uint16_t *__restrict__ type, const float *__restrict__ gamma,
                   const float *__restrict__ beta, float eps) {
    constexpr int32_t H = G * N * 8;
    const int lg = threadIdx.x % G;
    const int32_t t = blockIdx.x * (kThreads / G) + threadIdx.x / G;
    const bool in = t < max_tokens;
    float g[N][8], be[N][8];
    /* gamma/beta are weights (no kernel writes them): loaded before the PDL wait */
    kern::load_ln_params<G, N>(gamma, beta, lg, g, be);
    kern::pdl_begin();
    int32_t id = 0, ty = 0, sq = 0;
    if (in) {
        id = ids[t];
        ty = types ? types[t] : 0;
        sq = tok_seq[t];
    }
    const bool live = in && t < *n_tokens;
    const int64_t o = (int64_t)t * H;
    float v[N][8] = {}; /* a row past n_rows stays zero (every lane joins the shuffles) */
    if (live) {
        const uint16_t *w = word + (int64_t)id * H, *ty_row = type + (int64_t)ty * H;
        float a[N][8], c[N][8], p[N][8];
#pragma unroll
        for (int k = 0; k < N; k++) {
            kern::load16<D, 8>(w + (lg + G * k) * 8, a[k]);
            kern::load16<D, 8>(ty_row + (lg + G * k) * 8, c[k]);
        }
        const uint16_t *pp = pos + (int64_t)(t - cu[sq]) * H;
#pragma unroll
        for (int k = 0; k < N; k++)
            kern::load16<D, 8>(pp + (lg + G * k) * 8, p[k]);
#pragma unroll
        for (int k = 0; k < N; k++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                v[k][j] = a[k][j] + p[k][j] + c[k][j];
    }
    kern::layernorm_regs_store<G, N>(v, g, be, eps, live, lg, o, out_f32, s_f16<D>(out16),
                                     s_bf16<D>(out16));
    if (in && !live) { /* padding row of the bucket: zeros */
        const float z[8] = {};
#pragma unroll
        for (int k = 0; k < N; k++) {
            const int64_t i = o + (lg + G * k) * 8;
            if (out_f32)
                kern::store_f32<8>(out_f32 + i, z);
            if (out16)
                kern::store16<D, 8>(out16 + i, z);
        }
    }
}

template <kern_dtype_t D, int VEC>
__global__ void __launch_bounds__(kThreads)
    k_embed_ln(float *__restrict__ out_f32, uint16_t *__restrict__ out16,
               const int32_t *__restrict__ ids, const int32_t *__restrict__ types,
               const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ cu,
               const int32_t *__restrict__ n_tokens, int32_t max_tokens,
               const uint16_t *__restrict__ word, const uint16_t *__restrict__ pos,
               const uint16_t *__restrict__ type, const float *__restrict__ gamma,
               const float *__restrict__ beta, int32_t H, float eps) {
    extern __shared__ float sm[];
    kern::pdl_begin();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t t = blockIdx.x * kWarps + warp;
    if (t >= max_tokens)
        return;
    const int64_t o = (int64_t)t * H;
    if (t >= *n_tokens) {
        float z[VEC] = {};
        for (int i = lane * VEC; i < H; i += 32 * VEC) {
            if (out_f32)
                kern::store_f32<VEC>(out_f32 + o + i, z);
            if (out16)
                kern::store16<D, VEC>(out16 + o + i, z);
        }
        return;
    }
    float *row = sm + warp * H;
    const int32_t p = t - cu[tok_seq[t]];
    const uint16_t *w = word + (int64_t)ids[t] * H;
    const uint16_t *pp = pos + (int64_t)p * H;
    const uint16_t *ty = type + (int64_t)(types ? types[t] : 0) * H;
    float sum = 0.f;
    for (int i = lane * VEC; i < H; i += 32 * VEC) {
        float a[VEC], b[VEC], c[VEC];
        kern::load16<D, VEC>(w + i, a);
        kern::load16<D, VEC>(pp + i, b);
        kern::load16<D, VEC>(ty + i, c);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float v = a[j] + b[j] + c[j];
            row[i + j] = v;
            sum += v;
        }
    }
    kern::layernorm_row_store<VEC>(row, sum, H, eps, gamma, beta, o, out_f32, s_f16<D>(out16),
                                   s_bf16<D>(out16));
}

template <kern_dtype_t D, int G, int N>
static cudaError_t s_launch_reg(float *out_f32, uint16_t *out16, const int32_t *ids,
                                const int32_t *types, const int32_t *tok_seq, const int32_t *cu,
                                const int32_t *n_tokens, int32_t max_tokens, const uint16_t *word,
                                const uint16_t *pos, const uint16_t *type, const float *gamma,
                                const float *beta, float eps, cudaStream_t stream) {
    constexpr int rows = kThreads / G;
    const dim3 grid((unsigned)((max_tokens + rows - 1) / rows)), block(kThreads);
    return kern::launch(k_embed_ln_reg<D, G, N>, grid, block, 0, stream, out_f32, out16, ids, types,
                        tok_seq, cu, n_tokens, max_tokens, word, pos, type, gamma, beta, eps);
}

/* kern_embed_layernorm_cuda for tables and out16 of type D (arguments validated) */
template <kern_dtype_t D>
static int s_run(float *out_f32, uint16_t *out16, const int32_t *token_ids, const int32_t *type_ids,
                 const int32_t *tok_seq, const int32_t *cu_seqlens, const int32_t *n_tokens,
                 int32_t max_tokens, const uint16_t *word, const uint16_t *pos,
                 const uint16_t *type, const float *gamma, const float *beta, int32_t hidden,
                 float eps, cudaStream_t stream, com_error_t *err) {
    const bool aligned = kern::aligned16(word) && kern::aligned16(pos) && kern::aligned16(type) &&
                         kern::aligned16(gamma) && kern::aligned16(beta) &&
                         kern::aligned16(out_f32) && kern::aligned16(out16);
    const int cfg = aligned ? kern_embed_layernorm_cuda_config(hidden) : 0;
    if (cfg == 2) {
        if (hidden == 384)
            KERN_CUDA_TRY((s_launch_reg<D, 16, 3>(out_f32, out16, token_ids, type_ids, tok_seq,
                                                  cu_seqlens, n_tokens, max_tokens, word, pos, type,
                                                  gamma, beta, eps, stream)),
                          err);
        else if (hidden == 768)
            KERN_CUDA_TRY((s_launch_reg<D, 32, 3>(out_f32, out16, token_ids, type_ids, tok_seq,
                                                  cu_seqlens, n_tokens, max_tokens, word, pos, type,
                                                  gamma, beta, eps, stream)),
                          err);
        else
            KERN_CUDA_TRY((s_launch_reg<D, 32, 4>(out_f32, out16, token_ids, type_ids, tok_seq,
                                                  cu_seqlens, n_tokens, max_tokens, word, pos, type,
                                                  gamma, beta, eps, stream)),
                          err);
        return 0;
    }
    const dim3 grid((unsigned)((max_tokens + kWarps - 1) / kWarps)), block(kThreads);
    const size_t smem = (size_t)kWarps * hidden * sizeof(float);
    if (smem > 48 * 1024) {
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_embed_ln<D, 1>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_embed_ln<D, 8>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
    }
    if (cfg == 1)
        KERN_CUDA_TRY(kern::launch(k_embed_ln<D, 8>, grid, block, smem, stream, out_f32, out16,
                                   token_ids, type_ids, tok_seq, cu_seqlens, n_tokens, max_tokens,
                                   word, pos, type, gamma, beta, hidden, eps),
                      err);
    else
        KERN_CUDA_TRY(kern::launch(k_embed_ln<D, 1>, grid, block, smem, stream, out_f32, out16,
                                   token_ids, type_ids, tok_seq, cu_seqlens, n_tokens, max_tokens,
                                   word, pos, type, gamma, beta, hidden, eps),
                      err);
    return 0;
}

} // namespace

extern "C" int kern_embed_layernorm_cuda_config(int32_t hidden) {
    if (hidden == 384 || hidden == 768 || hidden == 1024)
        return 2;
    return hidden % 8 == 0 ? 1 : 0;
}

extern "C" int kern_embed_layernorm_cuda(kern_dtype_t dtype, float *out_f32, uint16_t *out16,
                                         const int32_t *token_ids, const int32_t *type_ids,
                                         const int32_t *tok_seq, const int32_t *cu_seqlens,
                                         const int32_t *n_tokens, int32_t max_tokens,
                                         const uint16_t *word, const uint16_t *pos,
                                         const uint16_t *type, const float *gamma,
                                         const float *beta, int32_t hidden, float eps,
                                         cudaStream_t stream, com_error_t *err) {
    if (max_tokens < 1 || hidden < 1 || hidden > 16384 || !token_ids || !tok_seq || !cu_seqlens ||
        !n_tokens || !word || !pos || !type || !gamma || !beta)
        return com_error_set(err, COM_EINVAL,
                             "embed_layernorm_cuda: bad arguments (max_tokens %d,"
                             " hidden %d)",
                             (int)max_tokens, (int)hidden);
    if (dtype == KERN_DTYPE_F16)
        return s_run<KERN_DTYPE_F16>(out_f32, out16, token_ids, type_ids, tok_seq, cu_seqlens,
                                     n_tokens, max_tokens, word, pos, type, gamma, beta, hidden,
                                     eps, stream, err);
    if (dtype == KERN_DTYPE_BF16)
        return s_run<KERN_DTYPE_BF16>(out_f32, out16, token_ids, type_ids, tok_seq, cu_seqlens,
                                      n_tokens, max_tokens, word, pos, type, gamma, beta, hidden,
                                      eps, stream, err);
    return com_error_set(err, COM_EINVAL, "embed_layernorm_cuda: dtype %d", (int)dtype);
}
