/* kernels/add_layernorm.cu — CUDA residual add + LayerNorm, fp32, bf16 or f16 residual stream
 * (contracts in add_layernorm.h; plain-C reference kern_add_layernorm_ref beside it).
 *
 * Algorithm: row t < *n_rows: v = x + b (16-bit, both of type dtype: bf16 or binary16, the
 * kernels' template parameter D) + residual (fp32, bf16 or f16), in the reference's order;
 * two-pass mean / biased variance; y = (v - mean) * rstd * gamma + beta written as any of fp32,
 * f16 and bf16 (an output may overwrite residual: each element is read before it is written, by
 * the same thread). Bandwidth-bound (12 bytes/element with the fp32
 * residual and its bf16 copy, 8 with f16, 6 with bf16 alone). Launch configurations
 * (kern_add_layernorm_cuda_config):
 *   2  register-resident, hidden 384 / 768 / 1024 (G = 16 / 32 / 32 lanes per row, N = 3 / 3 / 4
 *      16-byte vectors per lane, 128-thread blocks of 128 / G rows): gamma/beta loaded before
 *      the PDL wait (weights; kern_cuda_dev.cuh), then b and n_rows, then every load of the row
 *      before the first reduction (one dependent round trip after n_rows), group shuffle
 *      reductions, no shared memory;
 *      with a 16-bit residual, hidden 768 / 1024 from 3072 rows and hidden 384 from 6144
 *      (kern_add_layernorm_cuda_rows): each thread takes 2 or 4 rows (384: 2), their loads
 *      staged in shared memory by cp.async (k_add_ln_rows);
 *   1  generic, hidden % 8 == 0: one warp per row, 4 rows per block, the row staged in shared
 *      memory, 16-byte accesses;
 *   0  generic, scalar accesses (any hidden, or a pointer not 16-byte aligned).
 * Grid sized by n_max (the bucket). Stream: the caller's. Tested by tests/test_kernels_cuda.c;
 * timed by bench_kernels_cuda ("add_layernorm", "add_layernorm bf16"). */
#include "kernels/add_layernorm.h"
#include "kernels/kern_cuda_dev.cuh"

namespace {

constexpr int kThreads = 128, kWarps = kThreads / 32;

/* VEC residual elements from offset i as fp32; RK: the stream's kern_residual_type_t. */
template <int RK, int VEC>
__device__ __forceinline__ void load_res(const void *p, int64_t i, float *f) {
    if constexpr (RK == KERN_RESIDUAL_F32)
        kern::load_f32<VEC>(static_cast<const float *>(p) + i, f);
    else if constexpr (RK == KERN_RESIDUAL_BF16)
        kern::load_bf16<VEC>(static_cast<const uint16_t *>(p) + i, f);
    else
        kern::load_f16<VEC>(static_cast<const uint16_t *>(p) + i, f);
}

/* Register-resident: H = G * N * 8. Every lane of the warp reaches the shuffles (no early
 * return); lanes of rows >= *n_rows (or >= n_max) only skip their loads and stores. */
template <kern_dtype_t D, int G, int N, int RK>
__global__ void __launch_bounds__(kThreads)
    k_add_ln_reg(float *out_f32, uint16_t *out_f16, uint16_t *out_bf16, const uint16_t *x,
                 const uint16_t *__restrict__ b, const void *residual,
                 const float *__restrict__ gamma, const float *__restrict__ beta, int32_t n_max,
                 const int32_t *__restrict__ n_rows, float eps) {
    constexpr int32_t H = G * N * 8;
    const int lg = threadIdx.x % G;
    const int32_t t = blockIdx.x * (kThreads / G) + threadIdx.x / G;
    float g[N][8], be[N][8], bb[N][8];
    /* gamma/beta are weights (no kernel writes them): loaded before the PDL wait */
    kern::load_ln_params<G, N>(gamma, beta, lg, g, be);
    kern::pdl_begin();
#pragma unroll
    for (int k = 0; k < N; k++)
        if (b)
            kern::load16<D, 8>(b + (lg + G * k) * 8, bb[k]);
    const bool live = t < n_max && (!n_rows || t < *n_rows);
    const int64_t o = (int64_t)t * H;
    float v[N][8] = {}; /* a row past n_rows stays zero (every lane joins the shuffles) */
    if (live) {
        float a[N][8], r[N][8];
#pragma unroll
        for (int k = 0; k < N; k++) {
            const int64_t i = o + (lg + G * k) * 8;
            kern::load16<D, 8>(x + i, a[k]);
            load_res<RK, 8>(residual, i, r[k]);
        }
#pragma unroll
        for (int k = 0; k < N; k++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                v[k][j] = b ? a[k][j] + bb[k][j] + r[k][j] : a[k][j] + r[k][j];
    }
    kern::layernorm_regs_store<G, N>(v, g, be, eps, live, lg, o, out_f32, out_f16, out_bf16);
}

/* Register-resident, S rows a thread (S = 2 or 4; the large buckets, kern_add_layernorm_cuda_rows:
 * hidden 768 / 1024 with a 16-bit residual): a block covers S steps of kThreads / G rows; each
 * thread copies its lane's 16-byte vectors of x and the residual for all S of its rows into
 * shared memory (cp.async, one group per row, all issued before the first wait), then normalises
 * the rows as they land. S times the one-row kernel's bytes in flight at its registers (the
 * copies land in shared memory), in a fraction of its waves, and a block's gamma / beta / b loads
 * serve S times the rows. Shared memory [S][chunk][thread] 16-byte vectors (consecutive threads,
 * consecutive vectors): chunks 0 .. N-1 hold x, N .. 2N-1 the residual. Each thread reads back
 * only what it copied (no barrier), and an in-place output's element was copied before it is
 * written. */
template <int N> constexpr size_t rows_smem_bytes(int s) {
    return (size_t)s * 2 * N * kThreads * 16;
}
/* waits until at most n of this thread's cp.async groups are pending (n < 4, unrolled callers) */
__device__ __forceinline__ void cp_async_wait_n(int n) {
    if (n == 0)
        kern::cp_async_wait<0>();
    else if (n == 1)
        kern::cp_async_wait<1>();
    else if (n == 2)
        kern::cp_async_wait<2>();
    else
        kern::cp_async_wait<3>();
}

template <kern_dtype_t D, int G, int N, int RK, int S>
__global__ void __launch_bounds__(kThreads)
    k_add_ln_rows(float *out_f32, uint16_t *out_f16, uint16_t *out_bf16, const uint16_t *x,
                  const uint16_t *__restrict__ b, const void *residual,
                  const float *__restrict__ gamma, const float *__restrict__ beta, int32_t n_max,
                  const int32_t *__restrict__ n_rows, float eps) {
    static_assert(S >= 2 && S <= 4 && RK != KERN_RESIDUAL_F32, "rows a thread, 16-bit residual");
    constexpr int32_t H = G * N * 8, R = kThreads / G;
    constexpr int CH = 2 * N;          /* 16-byte chunks a thread copies per row */
    extern __shared__ uint4 sm_rows[]; /* [S][CH][kThreads] */
    const int lg = threadIdx.x % G;
    const int32_t t0 = (int32_t)blockIdx.x * (R * S) + (int32_t)threadIdx.x / G;
    auto chunk = [&](int s, int c) {
        return sm_rows + ((size_t)s * CH + c) * kThreads + threadIdx.x;
    };
    float g[N][8], be[N][8], bb[N][8];
    kern::load_ln_params<G, N>(gamma, beta, lg, g, be); /* weights: before the PDL wait */
    kern::pdl_begin();
    const int32_t rows = n_rows ? min(*n_rows, n_max) : n_max;
#pragma unroll
    for (int s = 0; s < S; s++) {
        const int32_t t = t0 + s * R;
        if (t < rows)
#pragma unroll
            for (int k = 0; k < N; k++) {
                const int64_t i = (int64_t)t * H + (lg + G * k) * 8;
                kern::cp_async16(kern::smem_u32(chunk(s, k)), x + i, 16);
                kern::cp_async16(kern::smem_u32(chunk(s, N + k)),
                                 static_cast<const uint16_t *>(residual) + i, 16);
            }
        kern::cp_async_commit(); /* empty past the rows: the wait counts stay aligned */
    }
#pragma unroll
    for (int k = 0; k < N; k++)
        if (b)
            kern::load16<D, 8>(b + (lg + G * k) * 8, bb[k]);
#pragma unroll
    for (int s = 0; s < S; s++) {
        const int32_t t = t0 + s * R;
        const bool live = t < rows;
        cp_async_wait_n(S - 1 - s); /* row s has landed (this thread's copies) */
        float v[N][8] = {};
        if (live)
#pragma unroll
            for (int k = 0; k < N; k++) {
                float a[8], r[8];
                kern::load16<D, 8>(reinterpret_cast<const uint16_t *>(chunk(s, k)), a);
                load_res<RK, 8>(chunk(s, N + k), 0, r);
#pragma unroll
                for (int j = 0; j < 8; j++)
                    v[k][j] = b ? a[j] + bb[k][j] + r[j] : a[j] + r[j];
            }
        kern::layernorm_regs_store<G, N>(v, g, be, eps, live, lg, (int64_t)t * H, out_f32, out_f16,
                                         out_bf16);
    }
}

/* Generic: one warp per row, the row staged in shared memory (kWarps * H floats). */
template <kern_dtype_t D, int VEC, int RK>
__global__ void __launch_bounds__(kThreads)
    k_add_ln(float *out_f32, uint16_t *out_f16, uint16_t *out_bf16, const uint16_t *x,
             const uint16_t *__restrict__ b, const void *residual, const float *__restrict__ gamma,
             const float *__restrict__ beta, int32_t n_max, const int32_t *__restrict__ n_rows,
             int32_t H, float eps) {
    extern __shared__ float sm[];
    kern::pdl_begin();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int32_t t = blockIdx.x * kWarps + warp;
    if (t >= n_max || (n_rows && t >= *n_rows))
        return; /* warp-uniform */
    float *row = sm + warp * H;
    const int64_t o = (int64_t)t * H;
    float sum = 0.f;
    for (int i = lane * VEC; i < H; i += 32 * VEC) {
        float a[VEC], r[VEC], bb[VEC];
        kern::load16<D, VEC>(x + o + i, a);
        load_res<RK, VEC>(residual, o + i, r);
        if (b)
            kern::load16<D, VEC>(b + i, bb);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float v = b ? a[j] + bb[j] + r[j] : a[j] + r[j];
            row[i + j] = v;
            sum += v;
        }
    }
    kern::layernorm_row_store<VEC>(row, sum, H, eps, gamma, beta, o, out_f32, out_f16, out_bf16);
}

struct Outs {
    float *f32;
    uint16_t *f16, *bf16;
};

template <kern_dtype_t D, int G, int N, int RK, int S>
static cudaError_t s_launch_rows(Outs out, const uint16_t *x, const uint16_t *b,
                                 const void *residual, const float *gamma, const float *beta,
                                 int32_t n_max, const int32_t *n_rows, float eps,
                                 cudaStream_t stream) {
    constexpr int rows = kThreads / G * S;
    constexpr size_t smem = rows_smem_bytes<N>(S);
    const dim3 grid((unsigned)((n_max + rows - 1) / rows)), block(kThreads);
    static std::atomic<uint64_t> s_ready{0}; /* kern::setup_once's devices */
    const cudaError_t e = kern::setup_once(k_add_ln_rows<D, G, N, RK, S>, smem, s_ready);
    if (e != cudaSuccess)
        return e;
    return kern::launch(k_add_ln_rows<D, G, N, RK, S>, grid, block, smem, stream, out.f32, out.f16,
                        out.bf16, x, b, residual, gamma, beta, n_max, n_rows, eps);
}

template <kern_dtype_t D, int G, int N, int RK>
static cudaError_t s_launch_reg(Outs out, const uint16_t *x, const uint16_t *b,
                                const void *residual, const float *gamma, const float *beta,
                                int32_t n_max, const int32_t *n_rows, float eps,
                                cudaStream_t stream) {
    if constexpr (RK != KERN_RESIDUAL_F32) { /* _rows' cases */
        const int s = kern_add_layernorm_cuda_rows(G * N * 8, n_max, (kern_residual_type_t)RK);
        if (s == 4)
            return s_launch_rows<D, G, N, RK, 4>(out, x, b, residual, gamma, beta, n_max, n_rows,
                                                 eps, stream);
        if (s == 2)
            return s_launch_rows<D, G, N, RK, 2>(out, x, b, residual, gamma, beta, n_max, n_rows,
                                                 eps, stream);
    }
    constexpr int rows = kThreads / G;
    const dim3 grid((unsigned)((n_max + rows - 1) / rows)), block(kThreads);
    return kern::launch(k_add_ln_reg<D, G, N, RK>, grid, block, 0, stream, out.f32, out.f16,
                        out.bf16, x, b, residual, gamma, beta, n_max, n_rows, eps);
}

/* Picks the configuration (see the file header) and launches, for x / b of type D and residual
 * type RK. */
template <kern_dtype_t D, int RK>
static int s_add_ln(Outs out, const uint16_t *x, const uint16_t *b, const void *residual,
                    const float *gamma, const float *beta, int32_t n_max, const int32_t *n_rows,
                    int32_t hidden, float eps, cudaStream_t stream, com_error_t *err) {
    const bool aligned = kern::aligned16(x) && kern::aligned16(b) && kern::aligned16(residual) &&
                         kern::aligned16(gamma) && kern::aligned16(beta) &&
                         kern::aligned16(out.f32) && kern::aligned16(out.f16) &&
                         kern::aligned16(out.bf16);
    const int cfg = aligned ? kern_add_layernorm_cuda_config(hidden) : 0;
    if (cfg == 2) {
        if (hidden == 384)
            KERN_CUDA_TRY((s_launch_reg<D, 16, 3, RK>(out, x, b, residual, gamma, beta, n_max,
                                                      n_rows, eps, stream)),
                          err);
        else if (hidden == 768)
            KERN_CUDA_TRY((s_launch_reg<D, 32, 3, RK>(out, x, b, residual, gamma, beta, n_max,
                                                      n_rows, eps, stream)),
                          err);
        else
            KERN_CUDA_TRY((s_launch_reg<D, 32, 4, RK>(out, x, b, residual, gamma, beta, n_max,
                                                      n_rows, eps, stream)),
                          err);
        return 0;
    }
    const dim3 grid((unsigned)((n_max + kWarps - 1) / kWarps)), block(kThreads);
    const size_t smem = (size_t)kWarps * hidden * sizeof(float);
    if (smem > 48 * 1024) {
        KERN_CUDA_TRY(
            (cudaFuncSetAttribute(k_add_ln<D, 1, RK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)smem)),
            err);
        KERN_CUDA_TRY(
            (cudaFuncSetAttribute(k_add_ln<D, 8, RK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)smem)),
            err);
    }
    if (cfg == 1)
        KERN_CUDA_TRY(
            (kern::launch(k_add_ln<D, 8, RK>, grid, block, smem, stream, out.f32, out.f16, out.bf16,
                          x, b, residual, gamma, beta, n_max, n_rows, hidden, eps)),
            err);
    else
        KERN_CUDA_TRY(
            (kern::launch(k_add_ln<D, 1, RK>, grid, block, smem, stream, out.f32, out.f16, out.bf16,
                          x, b, residual, gamma, beta, n_max, n_rows, hidden, eps)),
            err);
    return 0;
}

/* s_add_ln for the run-time residual type (known: checked by the caller) */
template <kern_dtype_t D>
static int s_add_ln_rt(Outs out, const uint16_t *x, const uint16_t *b, const void *residual,
                       kern_residual_type_t residual_type, const float *gamma, const float *beta,
                       int32_t n_max, const int32_t *n_rows, int32_t hidden, float eps,
                       cudaStream_t stream, com_error_t *err) {
    switch (residual_type) {
    case KERN_RESIDUAL_F32:
        return s_add_ln<D, KERN_RESIDUAL_F32>(out, x, b, residual, gamma, beta, n_max, n_rows,
                                              hidden, eps, stream, err);
    case KERN_RESIDUAL_BF16:
        return s_add_ln<D, KERN_RESIDUAL_BF16>(out, x, b, residual, gamma, beta, n_max, n_rows,
                                               hidden, eps, stream, err);
    default:
        return s_add_ln<D, KERN_RESIDUAL_F16>(out, x, b, residual, gamma, beta, n_max, n_rows,
                                              hidden, eps, stream, err);
    }
}

} // namespace

extern "C" int kern_add_layernorm_cuda_config(int32_t hidden) {
    if (hidden == 384 || hidden == 768 || hidden == 1024)
        return 2;
    return hidden % 8 == 0 ? 1 : 0;
}

extern "C" int kern_add_layernorm_cuda_rows(int32_t hidden, int32_t n_max,
                                            kern_residual_type_t residual_type) {
    /* Measured (docs/results/2026-12-04-h200-session30, s30d): BERT-base's ragged pass -1.2%,
     * 4096 / 8192 tokens -1%; an fp32 residual (3x the shared memory) was 34-60% slower. Steps
     * of 128 / G = 4 rows: 2 rows a thread from ~1.5 waves of the one-row kernel (4 blocks an SM,
     * 132 SMs), 4 from ~3. MiniLM (hidden 384, 8-row steps): 4 rows a thread made its ragged
     * pass 2% slower, 2 rows from 768 steps 0.9% faster (session 31, next.sh), so it stops at 2. */
    if (kern_add_layernorm_cuda_config(hidden) != 2 || residual_type == KERN_RESIDUAL_F32)
        return 1;
    if (hidden == 384)
        return n_max / 8 >= 768 ? 2 : 1;
    const int32_t steps = n_max / 4;
    return steps >= 1536 ? 4 : steps >= 768 ? 2 : 1;
}

extern "C" int kern_add_layernorm_cuda(float *out_f32, uint16_t *out_f16, uint16_t *out_bf16,
                                       const uint16_t *x, const uint16_t *b, kern_dtype_t dtype,
                                       const void *residual, kern_residual_type_t residual_type,
                                       const float *gamma, const float *beta, int32_t n_max,
                                       const int32_t *n_rows, int32_t hidden, float eps,
                                       cudaStream_t stream, com_error_t *err) {
    if (n_max < 1 || hidden < 1 || hidden > 16384 || !x || !residual || !gamma || !beta ||
        (!out_f32 && !out_f16 && !out_bf16))
        return com_error_set(err, COM_EINVAL, "add_layernorm_cuda: bad arguments (n %d, hidden %d)",
                             (int)n_max, (int)hidden);
    if (residual_type != KERN_RESIDUAL_F32 && residual_type != KERN_RESIDUAL_BF16 &&
        residual_type != KERN_RESIDUAL_F16)
        return com_error_set(err, COM_EINVAL, "add_layernorm_cuda: residual type %d",
                             (int)residual_type);
    if (dtype != KERN_DTYPE_BF16 && dtype != KERN_DTYPE_F16)
        return com_error_set(err, COM_EINVAL, "add_layernorm_cuda: dtype %d", (int)dtype);
    const Outs out = {out_f32, out_f16, out_bf16};
    return dtype == KERN_DTYPE_F16
               ? s_add_ln_rt<KERN_DTYPE_F16>(out, x, b, residual, residual_type, gamma, beta, n_max,
                                             n_rows, hidden, eps, stream, err)
               : s_add_ln_rt<KERN_DTYPE_BF16>(out, x, b, residual, residual_type, gamma, beta,
                                              n_max, n_rows, hidden, eps, stream, err);
}
