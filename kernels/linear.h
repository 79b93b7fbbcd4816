/* kernels/linear.h — a dense layer over packed tokens: y = x W^T (+ b), W in PyTorch Linear
 * layout [out, in]. Reference/CPU version (OpenBLAS cblas_sgemm, which uses the threads
 * openblas_set_num_threads gave it); the CUDA version is kern_linear_cuda (cuBLASLt or our own
 * tensor-core GEMMs, gemm_mma.cu / gemm_wgmma.cu, with fused bias / bias + GELU epilogues, and
 * bias + residual + LayerNorm: fused on Hopper, else the GEMM then kern_add_layernorm_cuda), its
 * 16-bit operands bf16 or IEEE binary16, as the plan's dtype says. */
#ifndef EMBER_KERNELS_LINEAR_H
#define EMBER_KERNELS_LINEAR_H

#include "kernels/kern_abi.h"

#ifdef EMBER_HAVE_CUDA
struct cublasLtContext; /* cublasLtHandle_t */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* y must not overlap x or w. b may be NULL (no bias: the bias is then usually fused into the
 * next element-wise op). n, in, out >= 1. */
void kern_linear_ref(float *y,       /* [n, out], host, fp32 */
                     const float *x, /* [n, in], host, fp32 */
                     const float *w, /* [out, in], host, fp32 */
                     const float *b, /* [out], host, fp32, or NULL */
                     int32_t n, int32_t in, int32_t out);

/* What a plan adds to the product before the one rounding to its 16-bit dtype (fp32 math). */
typedef enum kern_linear_epilogue {
    KERN_LINEAR_NONE = 0,      /* y = x W^T */
    KERN_LINEAR_BIAS = 1,      /* y = x W^T + b */
    KERN_LINEAR_BIAS_GELU = 2, /* y = gelu_erf(x W^T + b), BERT's exact (erf) GELU */
    /* the post-LN sublayer end: y = LayerNorm(x W^T + b + residual) * gamma + beta, with the
     * operands of kern_linear_ln_t (CUDA only; kern_add_layernorm_ref is its reference) */
    KERN_LINEAR_BIAS_ADD_LN = 3,
    /* The folded LayerNorm (kernels/row_stats.h; CUDA, our configurations that fold only,
     * operands in kern_linear_ln_t): a post-LN sublayer end that does not normalise,
     * y = x W^T + b + residual, and y's row statistics (out_stats); */
    KERN_LINEAR_BIAS_ADD_STATS = 4,
    /* a GEMM whose input x is such a sublayer end's output and whose W (and b) were scaled by
     * that LayerNorm's gamma (and shifted by W beta): y = rstd (x W^T - mean c) + b, the row's
     * mean and rstd from in_stats, which is LN(x) W^T + b; then erf-GELU for _GELU */
    KERN_LINEAR_LN_BIAS = 5,
    KERN_LINEAR_LN_BIAS_GELU = 6,
} kern_linear_epilogue_t;

/* The extra operands of KERN_LINEAR_BIAS_ADD_LN (device pointers). The residual stream is fp32
 * (residual), bf16 (residual_bf16, usually the same buffer as y in a bf16 plan) or IEEE binary16
 * (residual_f16, likewise in an f16 plan); exactly one of the three is set, whatever the plan's
 * dtype. The LayerNorm's statistics and output are computed in fp32 and written in the plan's
 * dtype to y (always), as fp32 to out_f32 and as binary16 to out_f16 (each when not NULL; either
 * may be the residual's own buffer: updated in place). In an f16 plan y is binary16 already, so
 * out_f16 must be NULL or y. Rows t >= *n_rows (when n_rows is not NULL) are not written. */
typedef struct kern_linear_ln {
    const float *residual;         /* [n, out] fp32, or NULL */
    const uint16_t *residual_bf16; /* [n, out] bf16, or NULL */
    const uint16_t *residual_f16;  /* [n, out] binary16, or NULL */
    const float *gamma, *beta;     /* [out] fp32, weights (read before the PDL wait) */
    float eps;
    float *out_f32;        /* [n, out] fp32, or NULL; may be residual */
    uint16_t *out_f16;     /* [n, out] binary16, or NULL; may be residual_f16 */
    const int32_t *n_rows; /* [1] device, or NULL: all n rows */
    /* [n, out] of the plan's dtype that no other operand overlaps: the GEMM's output when the
     * plan's algorithm runs the LayerNorm as a kernel of its own (cuBLASLt, gemm_mma: the GEMM's
     * sum is then rounded to 16 bits before the add, as the unfused layer does) */
    uint16_t *scratch;
    /* The folded epilogues (4-6; rows t >= *n_rows, when n_rows is set, read as mean 0 and
     * rstd 0, their statistics are not written and their y is unspecified; eps is the
     * LayerNorm's):
     * BIAS_ADD_STATS: the residual is either residual_bf16 / residual_f16 (of the plan's dtype:
     * a stream that was normalised) or residual_x, a folded stream in the plan's dtype,
     * normalised on the fly with residual_stats, gamma and beta (the LayerNorm it skipped);
     * out_stats [n, out / 64, 2] receives y's statistics (from the fp32 sums). out % 64 == 0.
     * LN_BIAS(_GELU): in_stats [n, in / 64, 2] are x's statistics, c [out] fp32 the rows' sums
     * of W as the plan reads it (16-bit). in % 64 == 0. */
    const uint16_t *residual_x;
    const float *residual_stats;
    float *out_stats;
    const float *in_stats;
    const float *c;
} kern_linear_ln_t;

#ifdef EMBER_HAVE_CUDA
/* CUDA (linear.cu): y = epi(x W^T + b), 16-bit in/out (x, w, b, y and ln->scratch all of the
 * plan's dtype: bf16, or IEEE binary16 for models whose activations stay in its range), fp32
 * accumulation (cuBLASLt: CUBLAS_COMPUTE_32F either way), through one of two engines: a cuBLASLt
 * algorithm (the bias added by its BIAS epilogue in fp32; for BIAS_GELU a separate
 * kern_bias_gelu_cuda pass follows, as cuBLASLt's GELU is the tanh form), or one of our own
 * tensor-core GEMM configurations (gemm_mma.cu, gemm_wgmma.cu: the whole epilogue fused, rounded
 * once; needs in % 8 == 0, out % 8 == 0 and 16-byte aligned x, w, y). BIAS_ADD_LN runs either
 * fused, by one of gemm_wgmma's LayerNorm configurations (Hopper; they run no other epilogue;
 * aligned LayerNorm operands too), or unfused, by any other candidate: its BIAS GEMM into
 * ln->scratch (rounded to the dtype), then kern_add_layernorm_cuda into y (and out_f32,
 * out_f16). A plan fixes the shape, the epilogue, the dtype and the algorithm. kern_linear_cuda
 * then makes no query, allocates nothing, is deterministic and is safe inside CUDA graph capture
 * (the caller passes a preallocated workspace of at least the plan's workspace_bytes). A plan
 * belongs to one thread at a time: kern_linear_cuda sets the bias pointer on its cuBLASLt
 * descriptor (a host-side attribute; a captured graph keeps the value it saw). */
typedef struct kern_linear_plan kern_linear_plan_t;

/* Plan ranks: rank >= 0 is cuBLASLt's heuristic choice number rank (0 = its first choice);
 * KERN_LINEAR_OWN(c) (negative) is our configuration c, 0 <= c < kern_linear_own_count(), the
 * same tiles in either dtype. The same numbers come back from kern_linear_plan_tune's *chosen. */
#define KERN_LINEAR_OWN(c) (-1 - (int32_t)(c))
int32_t kern_linear_own_count(void);
/* Revision of our GEMM kernels' code, part of the engine's tuning-cache fingerprint: bump it when
 * a change makes an existing configuration faster or slower (same names, other timings), so
 * that cached choices are timed again (3: every configuration also built for binary16, the
 * kernels now templates of the dtype, 2026-12-01). */
#define KERN_LINEAR_OWN_REVISION 3

/* dtype: the 16-bit type of x, w, b, y and ln->scratch (cuBLASLt layouts and bias of
 * CUDA_R_16BF or CUDA_R_16F; our configurations' instantiation of that type). Returns 0 with
 * *out_plan, COM_EUNSUPPORTED when the heuristic offers fewer than rank + 1 algorithms or our
 * configuration cannot run the shape and epilogue (the LayerNorm-fusing ones run only
 * BIAS_ADD_LN), COM_EINVAL (also an unknown dtype), COM_ENOMEM or COM_EINTERNAL (cuBLASLt or
 * CUDA failed; err says where). The plan owns its descriptors; *out_plan is NULL on error. */
int kern_linear_plan_new(struct cublasLtContext *lt, int32_t n, int32_t in, int32_t out,
                         kern_linear_epilogue_t epi, size_t workspace_bytes, int32_t rank,
                         kern_dtype_t dtype, kern_linear_plan_t **out_plan, com_error_t *err);
void kern_linear_plan_destroy(kern_linear_plan_t **self_p);
/* Times every candidate, each as the complete op the plan would run (cuBLASLt BIAS_GELU = GEMM +
 * GELU kernel; unfused BIAS_ADD_LN = GEMM + LayerNorm kernel): the heuristic's algorithms (up to
 * 8; those whose workspace fits workspace_bytes), then each of our configurations valid for the
 * shape, epilogue and pointers, on the given buffers, and keeps the fastest; a candidate must
 * beat the best so far (starting from the heuristic's first choice) by 3% to replace it. ln: as
 * for kern_linear_cuda (required iff the epilogue is BIAS_ADD_LN, else ignored). Synchronises
 * stream; not for graph capture. Overwrites y (and for BIAS_ADD_LN ln->scratch and
 * ln->out_f32; an in-place residual is normalised again on every run). *chosen (optional): the
 * winner's rank (see KERN_LINEAR_OWN). Returns 0, COM_EINVAL or COM_EINTERNAL (the plan is
 * unchanged on error). */
int kern_linear_plan_tune(struct cublasLtContext *lt, kern_linear_plan_t *p, uint16_t *y,
                          const uint16_t *x, const uint16_t *w, const uint16_t *b,
                          const kern_linear_ln_t *ln, void *workspace, size_t workspace_bytes,
                          struct CUstream_st *stream, int32_t *chosen, com_error_t *err);
/* The plan's current choice (see KERN_LINEAR_OWN). */
int32_t kern_linear_plan_rank(const kern_linear_plan_t *p);
/* After kern_linear_plan_tune: the fastest rank of the engine that lost (ours when cuBLASLt won,
 * and the reverse), or the chosen rank when the other engine had no candidate. Timed alone, a
 * GEMM can rank differently than inside a whole forward pass (programmatic launch overlaps ours
 * with their neighbours, not cuBLASLt's), so a caller may time this one in context. */
int32_t kern_linear_plan_alternative(const kern_linear_plan_t *p);
/* Makes candidate rank the plan's algorithm without timing (a choice kern_linear_plan_tune made
 * earlier for the same shape, kept by the caller: worker/tune_cache.h). Only ranks the tuner
 * could pick are accepted: a heuristic candidate (rank < the number it offered) or one of our
 * configurations valid and timed at this shape. The caller should compare
 * kern_linear_plan_describe afterwards with what it kept: the same rank can name another
 * algorithm after a library upgrade. Returns 0 or COM_EUNSUPPORTED / COM_EINVAL (the plan is
 * unchanged then). */
int kern_linear_plan_choose(kern_linear_plan_t *p, int32_t rank, com_error_t *err);
/* A short name of the plan's algorithm for logs ("cublasLt #0 algo 6 tile 18 splitK 1",
 * "mma 32x64 w4 splitk2"; " +gelu" / " +ln" appended when the GELU / the LayerNorm runs as a
 * kernel of its own, then " f16" for an f16 plan, so that names kept by a tuning cache differ
 * by type); owned by the plan, valid until it is destroyed or tuned again. */
const char *kern_linear_plan_describe(const kern_linear_plan_t *p);
/* Runs y[n, out] = epi(x[n, in] w[out, in]^T + b[out]) for the plan's n. w and b (and ln's
 * gamma, beta) must be data that no kernel writes (weights): our configurations read them before
 * their PDL wait, while the previous kernel on the stream may still run. ln: the LayerNorm
 * operands, required iff the plan's epilogue is KERN_LINEAR_BIAS_ADD_LN (exactly one of
 * residual / residual_bf16 / residual_f16, and gamma, beta and scratch set, eps >= 0; scratch
 * none of y, x or the other operands; out_f16 NULL or y in an f16 plan), ignored (may be NULL)
 * otherwise; y then gets the LayerNorm output of rows
 * t < *ln->n_rows (all n when n_rows is NULL), the others untouched. Returns 0, COM_EINVAL
 * (bad arguments, ln missing or inconsistent; for our configurations also pointers not 16-byte
 * aligned) or COM_EINTERNAL. Enqueued on stream. */
int kern_linear_cuda(struct cublasLtContext *lt, const kern_linear_plan_t *p,
                     uint16_t *y,       /* [n, out], device, the plan's dtype */
                     const uint16_t *x, /* [n, in], device, the plan's dtype */
                     const uint16_t *w, /* [out, in], device, the plan's dtype */
                     const uint16_t *b, /* [out], device, the plan's dtype; iff there is a bias */
                     const kern_linear_ln_t *ln, /* BIAS_ADD_LN's operands, else ignored */
                     void *workspace, size_t workspace_bytes, struct CUstream_st *stream,
                     com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
