/* kernels/ffn.h — a BERT FFN sublayer in one op, from its input to its LayerNorm:
 *
 *   h = GELU_erf(x W1^T + b1)            [n, inter], rounded to the 16-bit type
 *   y = LayerNorm(h W2^T + b2 + x) * gamma + beta
 *
 * with the residual the FFN's own input x (the stream that is also the next GEMM's input: a
 * 16-bit residual stream). The CUDA version (ffn.cu, Hopper only) keeps h on chip: the
 * intermediate is never written to memory, and the LayerNorm needs no kernel of its own.
 * Reference/CPU version kern_ffn_ref. */
#ifndef EMBER_KERNELS_FFN_H
#define EMBER_KERNELS_FFN_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fp32 math throughout; h rounded to round_h's type (0 none, 1 + KERN_DTYPE_BF16 or
 * 1 + KERN_DTYPE_F16) before the second product, as the CUDA version stores it. y may be x. */
void kern_ffn_ref(float *y,                              /* [n, hidden], host, fp32 */
                  const float *x,                        /* [n, hidden] */
                  const float *w1, const float *b1,      /* [inter, hidden], [inter] */
                  const float *w2, const float *b2,      /* [hidden, inter], [hidden] */
                  const float *gamma, const float *beta, /* [hidden] */
                  float eps, int32_t n, int32_t hidden, int32_t inter, int round_h);

#ifdef EMBER_HAVE_CUDA
/* The operands of kern_ffn_cuda (device pointers; x, w1, b1, w2, b2 and y of type dtype). */
typedef struct kern_ffn_args {
    kern_dtype_t dtype;
    uint16_t *y;               /* [n, hidden]: the LayerNorm output; may be x (in place) */
    const uint16_t *x;         /* [n, hidden]: the FFN's input and the residual */
    const uint16_t *w1, *b1;   /* [inter, hidden], [inter] (weights: read before the PDL wait) */
    const uint16_t *w2, *b2;   /* [hidden, inter], [hidden] */
    const float *gamma, *beta; /* [hidden] fp32 */
    float eps;                 /* >= 0 */
    float *out_f32;            /* [n, hidden] fp32 copy of y, or NULL */
    const int32_t *n_rows;     /* [1] device: rows t >= *n_rows are neither read nor written;
                                  NULL: all n */
    int32_t n, hidden, inter;
} kern_ffn_args_t;

/* true iff kern_ffn_cuda runs this shape on the current device: compute capability 9.0,
 * hidden == 384 (the accumulators of a 64-row block's whole output row live in registers),
 * inter % 64 == 0, dtype bf16 or binary16. */
bool kern_ffn_supported(kern_dtype_t dtype, int32_t hidden, int32_t inter);
/* Host-side set-up (shared-memory limit, the driver's tensor-map encoder), which the first
 * kern_ffn_cuda on a device otherwise does itself: call it before a graph capture whose launch
 * may be the first. 0, COM_EINVAL, COM_EUNSUPPORTED or COM_EINTERNAL. */
int kern_ffn_prepare(kern_dtype_t dtype, com_error_t *err);
/* The rows one wave of the kernel's CTAs covers on the current device (128-row tiles, one CTA an
 * SM: 128 x the SM count; 0 when there is no device). Against the unfused pair on the H200
 * (docs/benchmarks.md, thirty-fifth round): ~10% fewer joules at about one wave, even at 1.6
 * waves, and slower below ~0.8 of a wave (several times below a quarter), where the GPU is part
 * idle; the engine fuses from 0.9 of a wave (worker/model_bert_cuda.h). */
int32_t kern_ffn_wave_rows(void);
/* y (and out_f32) = the op above for rows t < *n_rows; later rows untouched. y, x, w1, w2 and
 * out_f32 16-byte aligned (TMA, vector stores), b1 4-byte aligned. Deterministic; no allocation;
 * capture-safe once set up (tensor maps are encoded on the host). Returns 0, COM_EINVAL
 * (unsupported shape, bad or unaligned operands) or COM_EINTERNAL. Enqueued on stream. */
int kern_ffn_cuda(const kern_ffn_args_t *a, struct CUstream_st *stream, com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
