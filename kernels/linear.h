/* kernels/linear.h — a dense layer over packed tokens: y = x W^T (+ b), W in PyTorch Linear
 * layout [out, in]. Reference/CPU version (OpenBLAS cblas_sgemm, which uses the threads
 * openblas_set_num_threads gave it); the CUDA version is kern_linear_cuda (cuBLASLt or our own
 * tensor-core GEMM, gemm_mma.cu, with fused bias / bias + GELU epilogues). */
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

/* What a plan adds to the product before the one rounding to bf16 (fp32 math). */
typedef enum kern_linear_epilogue {
    KERN_LINEAR_NONE = 0,      /* y = x W^T */
    KERN_LINEAR_BIAS = 1,      /* y = x W^T + b */
    KERN_LINEAR_BIAS_GELU = 2, /* y = gelu_erf(x W^T + b), BERT's exact (erf) GELU */
} kern_linear_epilogue_t;

#ifdef EMBER_HAVE_CUDA
/* CUDA (linear.cu): y = epi(x W^T + b), bf16 in/out, fp32 accumulation, through one of two
 * engines: a cuBLASLt algorithm (the bias added by its BIAS epilogue in fp32; for BIAS_GELU a
 * separate kern_bias_gelu_cuda pass follows, as cuBLASLt's GELU is the tanh form), or one of our
 * own tensor-core GEMM configurations (gemm_mma.cu: the whole epilogue fused, rounded once; needs
 * in % 8 == 0, out % 8 == 0 and 16-byte aligned x, w, y). A plan fixes the shape, the epilogue
 * and the algorithm. kern_linear_cuda then makes no query, allocates nothing, is deterministic
 * and is safe inside CUDA graph capture (the caller passes a preallocated workspace of at least
 * the plan's workspace_bytes). A plan belongs to one thread at a time: kern_linear_cuda sets the
 * bias pointer on its cuBLASLt descriptor (a host-side attribute; a captured graph keeps the
 * value it saw). */
typedef struct kern_linear_plan kern_linear_plan_t;

/* Plan ranks: rank >= 0 is cuBLASLt's heuristic choice number rank (0 = its first choice);
 * KERN_LINEAR_OWN(c) (negative) is our configuration c, 0 <= c < kern_linear_own_count(). The
 * same numbers come back from kern_linear_plan_tune's *chosen. */
#define KERN_LINEAR_OWN(c) (-1 - (int32_t)(c))
int32_t kern_linear_own_count(void);

/* Returns 0 with *out_plan, COM_EUNSUPPORTED when the heuristic offers fewer than rank + 1
 * algorithms or our configuration cannot run the shape, COM_EINVAL, COM_ENOMEM or COM_EINTERNAL
 * (cuBLASLt or CUDA failed; err says where). The plan owns its descriptors; *out_plan is NULL on
 * error. */
int kern_linear_plan_new(struct cublasLtContext *lt, int32_t n, int32_t in, int32_t out,
                         kern_linear_epilogue_t epi, size_t workspace_bytes, int32_t rank,
                         kern_linear_plan_t **out_plan, com_error_t *err);
void kern_linear_plan_destroy(kern_linear_plan_t **self_p);
/* Times every candidate, each as the complete op the plan would run (cuBLASLt BIAS_GELU = GEMM +
 * GELU kernel): the heuristic's algorithms (up to 8; those whose workspace fits
 * workspace_bytes), then each of our configurations valid for the shape and pointers, on the
 * given buffers, and keeps the fastest; a candidate must beat the best so far (starting from the
 * heuristic's first choice) by 3% to replace it. Synchronises stream; not for graph capture.
 * Overwrites y. *chosen (optional): the winner's rank (see KERN_LINEAR_OWN). Returns 0,
 * COM_EINVAL or COM_EINTERNAL (the plan is unchanged on error). */
int kern_linear_plan_tune(struct cublasLtContext *lt, kern_linear_plan_t *p, uint16_t *y,
                          const uint16_t *x, const uint16_t *w, const uint16_t *b, void *workspace,
                          size_t workspace_bytes, struct CUstream_st *stream, int32_t *chosen,
                          com_error_t *err);
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
 * "mma 32x64 w4 splitk2"); owned by the plan, valid until it is destroyed or tuned again. */
const char *kern_linear_plan_describe(const kern_linear_plan_t *p);
/* Runs y[n, out] = epi(x[n, in] w[out, in]^T + b[out]) for the plan's n. w and b must be data
 * that no kernel writes (weights): our configurations read them before their PDL wait, while
 * the previous kernel on the stream may still run. Returns 0, COM_EINVAL (bad arguments; for
 * our configurations also pointers not 16-byte aligned) or COM_EINTERNAL. Enqueued on stream. */
int kern_linear_cuda(struct cublasLtContext *lt, const kern_linear_plan_t *p,
                     uint16_t *y,       /* [n, out], device bf16 */
                     const uint16_t *x, /* [n, in], device bf16 */
                     const uint16_t *w, /* [out, in], device bf16 */
                     const uint16_t *b, /* [out], device bf16; used iff the epilogue has a bias */
                     void *workspace, size_t workspace_bytes, struct CUstream_st *stream,
                     com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
