/* kernels/convert.h — fp32 conversion on the device: pooled embeddings to the wire dtype the
 * client asked for, float32 (a copy) or float16 (IEEE binary16, round to nearest even, overflow
 * to inf, as common/half.h's com_half_from_f32, which is the reference), and model weights to
 * the engine's 16-bit type at load (float16, or bfloat16 rounded to nearest even as
 * kern_cuda.h's kern_bf16_from_f32). CUDA only: the CPU side uses those references directly. */
#ifndef EMBER_KERNELS_CONVERT_H
#define EMBER_KERNELS_CONVERT_H

#include "kernels/kern_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kern_out_dtype {
    KERN_OUT_F32 = 0,
    KERN_OUT_F16,
    KERN_OUT_BF16,
} kern_out_dtype_t;

#ifdef EMBER_HAVE_CUDA
/* out[i] = convert(in[i]) for i < n. out holds n elements of dtype (4 or 2 bytes each) and must
 * not overlap in. Returns 0, COM_EINVAL or COM_EINTERNAL. Enqueued on stream. */
int kern_convert_cuda(void *out,       /* [n] device, dtype */
                      const float *in, /* [n] device fp32 */
                      int64_t n, kern_out_dtype_t dtype, struct CUstream_st *stream,
                      com_error_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
