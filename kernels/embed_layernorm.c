/* kernels/embed_layernorm.c — word + position + token-type embedding gather fused with
 * LayerNorm (see embed_layernorm.h for shapes).
 *
 * Algorithm: binary-search the sequence holding t_begin in cu_seqlens, then walk the tokens in
 * order; per token sum the three embedding rows into out (one pass), then LayerNorm the row in
 * place (two-pass mean/variance, fp32, 16 partial sums). Rows are independent, so any split of
 * [0, n_tokens) into ranges across threads gives identical bits. No allocation; any thread.
 * Tested in tests/test_kernels.c; timed as part of bench/bench_engine_cpu.c. */
#include "kernels/embed_layernorm.h"

#include <assert.h>

#include "kernels/kern_math.h"

KERN_CLONES void kern_embed_layernorm_ref(float *out, const int32_t *token_ids,
                                          const int32_t *type_ids, const int32_t *cu_seqlens,
                                          int32_t n_seqs, int32_t t_begin, int32_t t_end,
                                          const float *word, const float *pos, const float *type,
                                          const float *gamma, const float *beta, int32_t hidden,
                                          float eps) {
    if (t_begin >= t_end)
        return;
    /* last s with cu_seqlens[s] <= t_begin */
    int32_t lo = 0, hi = n_seqs - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (cu_seqlens[mid] <= t_begin)
            lo = mid;
        else
            hi = mid - 1;
    }
    int32_t s = lo;
    for (int32_t t = t_begin; t < t_end; t++) {
        while (t >= cu_seqlens[s + 1])
            s++;
        assert(s < n_seqs);
        const float *restrict w = word + (int64_t)token_ids[t] * hidden;
        const float *restrict p = pos + (int64_t)(t - cu_seqlens[s]) * hidden;
        const float *restrict ty = type + (int64_t)(type_ids ? type_ids[t] : 0) * hidden;
        float *restrict o = out + (int64_t)t * hidden;
        for (int32_t i = 0; i < hidden; i++)
            o[i] = w[i] + p[i] + ty[i];
        kern_layernorm_row(o, gamma, beta, hidden, eps);
    }
}
