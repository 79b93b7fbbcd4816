/* kernels/embed_layernorm.cu — CUDA embedding gather + LayerNorm over a bucket of packed tokens
 * (contract in embed_layernorm.h; plain-C reference kern_embed_layernorm_ref beside it).
 *
 * Algorithm: one warp per token row, 4 rows per 128-thread block, grid = ceil(max_tokens / 4)
 * (sized by the bucket, not the batch). A row t < *n_tokens finds its position as
 * t - cu_seqlens[tok_seq[t]] (two loads, no search), sums word + position + type rows (bf16
 * tables, fp32 sum, same order as the reference) into a per-lane slice of shared memory, then
 * two-pass mean / biased variance with warp reductions, and writes fp32 and/or bf16. Each lane
 * owns its elements (i = lane*VEC + 32*VEC*k), so no barrier is needed. Rows past *n_tokens are
 * zeroed. Launch configurations: VEC = 8 (16-byte loads; hidden % 8 == 0) or 1.
 * Shapes: tables [rows, hidden] bf16, gamma/beta [hidden] fp32, out [max_tokens, hidden].
 * Stream: the caller's. Tested by tests/test_kernels_cuda.c; timed by bench_kernels_cuda. */
#include "kernels/embed_layernorm.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kWarps = 4;

template <int VEC>
__global__ void __launch_bounds__(kWarps * 32)
    k_embed_ln(float *__restrict__ out_f32, uint16_t *__restrict__ out_bf16,
               const int32_t *__restrict__ ids, const int32_t *__restrict__ types,
               const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ cu,
               const int32_t *__restrict__ n_tokens, int32_t max_tokens,
               const uint16_t *__restrict__ word, const uint16_t *__restrict__ pos,
               const uint16_t *__restrict__ type, const float *__restrict__ gamma,
               const float *__restrict__ beta, int32_t H, float eps) {
    extern __shared__ float sm[];
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
            if (out_bf16)
                kern::store_bf16<VEC>(out_bf16 + o + i, z);
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
        kern::load_bf16<VEC>(w + i, a);
        kern::load_bf16<VEC>(pp + i, b);
        kern::load_bf16<VEC>(ty + i, c);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float v = a[j] + b[j] + c[j];
            row[i + j] = v;
            sum += v;
        }
    }
    kern::layernorm_row_store<VEC>(row, sum, H, eps, gamma, beta, o, out_f32, out_bf16);
}

} // namespace

extern "C" int kern_embed_layernorm_cuda(
    float *out_f32, uint16_t *out_bf16, const int32_t *token_ids, const int32_t *type_ids,
    const int32_t *tok_seq, const int32_t *cu_seqlens, const int32_t *n_tokens, int32_t max_tokens,
    const uint16_t *word, const uint16_t *pos, const uint16_t *type, const float *gamma,
    const float *beta, int32_t hidden, float eps, cudaStream_t stream, com_error_t *err) {
    if (max_tokens < 1 || hidden < 1 || hidden > 16384 || !token_ids || !tok_seq || !cu_seqlens ||
        !n_tokens || !word || !pos || !type || !gamma || !beta)
        return com_error_set(err, COM_EINVAL,
                             "embed_layernorm_cuda: bad arguments (max_tokens %d,"
                             " hidden %d)",
                             (int)max_tokens, (int)hidden);
    const dim3 grid((unsigned)((max_tokens + kWarps - 1) / kWarps)), block(kWarps * 32);
    const size_t smem = (size_t)kWarps * hidden * sizeof(float);
    const bool vec = hidden % 8 == 0 && kern::aligned16(word) && kern::aligned16(pos) &&
                     kern::aligned16(type) && kern::aligned16(gamma) && kern::aligned16(beta) &&
                     kern::aligned16(out_f32) && kern::aligned16(out_bf16);
    if (smem > 48 * 1024) {
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_embed_ln<1>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
        KERN_CUDA_TRY(cudaFuncSetAttribute(k_embed_ln<8>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                      err);
    }
    if (vec)
        k_embed_ln<8><<<grid, block, smem, stream>>>(out_f32, out_bf16, token_ids, type_ids,
                                                     tok_seq, cu_seqlens, n_tokens, max_tokens,
                                                     word, pos, type, gamma, beta, hidden, eps);
    else
        k_embed_ln<1><<<grid, block, smem, stream>>>(out_f32, out_bf16, token_ids, type_ids,
                                                     tok_seq, cu_seqlens, n_tokens, max_tokens,
                                                     word, pos, type, gamma, beta, hidden, eps);
    KERN_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}
