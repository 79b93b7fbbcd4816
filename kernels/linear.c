/* kernels/linear.c — y = x W^T + b through cblas_sgemm (row-major, W transposed in place: no
 * copy of the PyTorch [out, in] weight). With a bias, y's rows are first filled with b and the
 * GEMM accumulates into them (beta = 1), so the bias costs one write pass instead of a separate
 * read-modify-write pass. Threading: OpenBLAS's own pool (openblas_set_num_threads); callable
 * from any one thread at a time per output buffer. Shapes in linear.h. */
#include "kernels/linear.h"

#include <cblas.h>
#include <string.h>

void kern_linear_ref(float *y, const float *x, const float *w, const float *b, int32_t n,
                     int32_t in, int32_t out) {
    float beta = 0.0f;
    if (b) {
        for (int32_t t = 0; t < n; t++)
            memcpy(y + (int64_t)t * out, b, (size_t)out * sizeof(float));
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, beta, y,
                out);
}
