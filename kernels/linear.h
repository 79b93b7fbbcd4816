/* kernels/linear.h — a dense layer over packed tokens: y = x W^T (+ b), W in PyTorch Linear
 * layout [out, in]. Reference/CPU version (OpenBLAS cblas_sgemm, which uses the threads
 * openblas_set_num_threads gave it); the CUDA version will be kern_linear_cuda (cuBLASLt). */
#ifndef EMBER_KERNELS_LINEAR_H
#define EMBER_KERNELS_LINEAR_H

#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif
