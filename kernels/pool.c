/* kernels/pool.c — CLS / mean / last-token pooling, Matryoshka truncation, L2 normalisation
 * (shapes and semantics in pool.h).
 *
 * Algorithm: per sequence, accumulate the kept out_dim columns over its tokens in fp32 directly
 * in the output row (vectorises across columns), scale by 1/len; then the L2 norm in double and
 * a divide by max(norm, 1e-12) as torch.nn.functional.normalize. Only the first out_dim columns
 * are ever read. Cheap (one read of the last hidden state): single-threaded. No allocation. */
#include "kernels/pool.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void kern_pool_ref(float *out, const float *h, const int32_t *cu_seqlens, int32_t n_seqs,
                   int32_t hidden, kern_pool_mode_t mode, int32_t out_dim, bool normalize) {
    assert(out_dim >= 1 && out_dim <= hidden);
    for (int32_t s = 0; s < n_seqs; s++) {
        const int32_t t0 = cu_seqlens[s], t1 = cu_seqlens[s + 1];
        float *restrict o = out + (int64_t)s * out_dim;
        if (mode == KERN_POOL_CLS || mode == KERN_POOL_LAST) {
            const int32_t t = kern_pool_row(cu_seqlens, s, mode);
            memcpy(o, h + (int64_t)t * hidden, (size_t)out_dim * sizeof(float));
        } else {
            for (int32_t d = 0; d < out_dim; d++)
                o[d] = 0.0f;
            for (int32_t t = t0; t < t1; t++) {
                const float *restrict r = h + (int64_t)t * hidden;
                for (int32_t d = 0; d < out_dim; d++)
                    o[d] += r[d];
            }
            const float inv = 1.0f / (float)(t1 - t0);
            for (int32_t d = 0; d < out_dim; d++)
                o[d] *= inv;
        }
        if (normalize) {
            double ss = 0;
            for (int32_t d = 0; d < out_dim; d++)
                ss += (double)o[d] * o[d];
            double nrm = sqrt(ss);
            const float inv = (float)(1.0 / (nrm > 1e-12 ? nrm : 1e-12));
            for (int32_t d = 0; d < out_dim; d++)
                o[d] *= inv;
        }
    }
}

void kern_pool_rows_ref(uint16_t *dst_a, const uint16_t *src_a, uint16_t *dst_b,
                        const uint16_t *src_b, const int32_t *cu_seqlens, int32_t n_seqs,
                        int32_t max_rows, int32_t hidden, kern_pool_mode_t mode) {
    assert(mode == KERN_POOL_CLS || mode == KERN_POOL_LAST);
    assert(n_seqs >= 0 && n_seqs <= max_rows);
    const size_t row = (size_t)hidden * sizeof *dst_a;
    for (int32_t s = 0; s < max_rows; s++) {
        uint16_t *a = dst_a + (size_t)s * hidden, *b = dst_b + (size_t)s * hidden;
        if (s >= n_seqs) {
            memset(a, 0, row), memset(b, 0, row);
            continue;
        }
        const int32_t t = kern_pool_row(cu_seqlens, s, mode);
        memcpy(a, src_a + (size_t)t * hidden, row);
        memcpy(b, src_b + (size_t)t * hidden, row);
    }
}
