/* kernels/kern_abi.h — what every op header needs for its C ABI: fixed-width types, the error
 * record, and (with CUDA) the stream type as an opaque struct, so that C code can include the
 * op headers without the CUDA headers. */
#ifndef EMBER_KERNELS_KERN_ABI_H
#define EMBER_KERNELS_KERN_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#ifdef EMBER_HAVE_CUDA
struct CUstream_st; /* cudaStream_t */
#endif

/* The 16-bit floating type of a CUDA kernel's weights and activations (the uint16_t operands):
 * bfloat16 (8 exponent bits, 8 significand bits: fp32's range) or IEEE binary16 (5 and 11: 8x
 * finer rounding, finite only below 65504), for models whose activations provably stay inside
 * that range. Accumulation and statistics are fp32 either way. */
typedef enum kern_dtype {
    KERN_DTYPE_BF16 = 0,
    KERN_DTYPE_F16 = 1,
} kern_dtype_t;

#endif
