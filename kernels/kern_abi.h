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

#endif
