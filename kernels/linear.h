/* kernels/linear.h — a dense layer over packed tokens: y = x W^T (+ b), W in PyTorch Linear
 * layout [out, in]. Reference/CPU version (OpenBLAS cblas_sgemm, which uses the threads
 * openblas_set_num_threads gave it); the CUDA version will be kern_linear_cuda (cuBLASLt). */
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

#ifdef EMBER_HAVE_CUDA
/* CUDA (linear.cu): y = x W^T (+ b) through cuBLASLt, bf16 in/out, fp32 accumulation (and bias
 * added in fp32 by the BIAS epilogue before the one rounding to bf16). A plan fixes the shape and
 * the algorithm, chosen once by cuBLASLt's heuristic when the plan is made (rank 0 = its first
 * choice; tests try several ranks); kern_linear_cuda then makes no query, allocates nothing and
 * is safe inside CUDA graph capture (the caller passes a preallocated workspace of at least the
 * plan's workspace_bytes). A plan belongs to one thread at a time: kern_linear_cuda sets the
 * bias pointer on its descriptor (a host-side attribute; a captured graph keeps the value it saw).
 */
typedef struct kern_linear_plan kern_linear_plan_t;

/* Returns 0 with *out, COM_EUNSUPPORTED when the heuristic offers fewer than rank + 1
 * algorithms, COM_EINVAL, COM_ENOMEM or COM_EINTERNAL (cuBLASLt failed; err says where). */
int kern_linear_plan_new(struct cublasLtContext *lt, int32_t n, int32_t in, int32_t out, bool bias,
                         size_t workspace_bytes, int32_t rank, kern_linear_plan_t **out_plan,
                         com_error_t *err);
void kern_linear_plan_destroy(kern_linear_plan_t **self_p);
/* Times every candidate the heuristic offered (up to 8; those whose workspace fits
 * workspace_bytes) on the given buffers and keeps the fastest; a candidate must beat the
 * heuristic's order by 3% to replace it. Synchronises stream; not for graph capture. *chosen
 * (optional): the candidate's rank. Returns 0, COM_EINVAL or COM_EINTERNAL. */
int kern_linear_plan_tune(struct cublasLtContext *lt, kern_linear_plan_t *p, uint16_t *y,
                          const uint16_t *x, const uint16_t *w, const uint16_t *b, void *workspace,
                          size_t workspace_bytes, struct CUstream_st *stream, int32_t *chosen,
                          com_error_t *err);
/* Runs y[n, out] = x[n, in] w[out, in]^T (+ b[out]) for the plan's n. Returns 0 or
 * COM_EINTERNAL. Enqueued on stream. */
int kern_linear_cuda(struct cublasLtContext *lt, const kern_linear_plan_t *p,
                     uint16_t *y,       /* [n, out], device bf16 */
                     const uint16_t *x, /* [n, in], device bf16 */
                     const uint16_t *w, /* [out, in], device bf16 */
                     const uint16_t *b, /* [out], device bf16; used iff the plan has a bias */
                     void *workspace, size_t workspace_bytes, struct CUstream_st *stream,
                     com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
