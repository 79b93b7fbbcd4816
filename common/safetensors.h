/* common/safetensors.h — reads a .safetensors file: an 8-byte little-endian header length, a
 * JSON header naming each tensor's dtype, shape and [begin, end) byte range, then the data.
 *
 * The file is mmapped read-only; the whole header is validated before any tensor is exposed:
 * header length inside the file and under a cap, valid JSON object, known dtypes, shapes with
 * non-negative dims whose product times the dtype size equals end - begin (no overflow), ranges
 * inside the data section, no two tensors overlapping. A bad file is COM_EFORMAT with a message
 * naming the tensor; nothing is read out of bounds. A dtype string other than the ten below
 * (e.g. U32, F8_E4M3) makes the whole open fail with COM_EUNSUPPORTED naming the tensor.
 * Thread-safety: immutable after open. */
#ifndef EMBER_COMMON_SAFETENSORS_H
#define EMBER_COMMON_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum com_dtype {
    COM_DTYPE_F32 = 0,
    COM_DTYPE_F16,
    COM_DTYPE_BF16,
    COM_DTYPE_F64,
    COM_DTYPE_I64,
    COM_DTYPE_I32,
    COM_DTYPE_I16,
    COM_DTYPE_I8,
    COM_DTYPE_U8,
    COM_DTYPE_BOOL,
} com_dtype_t;

#define COM_TENSOR_MAX_DIMS 8

typedef struct com_tensor {
    const char *name; /* NUL-terminated, owned by the file object */
    com_dtype_t dtype;
    int32_t ndim; /* 0..COM_TENSOR_MAX_DIMS */
    int64_t shape[COM_TENSOR_MAX_DIMS];
    const void *data; /* into the mapping, read-only, may be unaligned */
    size_t nbytes;
} com_tensor_t;

typedef struct com_safetensors com_safetensors_t;

/* Opens and validates path. On success *out owns the mapping; on error *out is NULL. */
int com_safetensors_open(const char *path, com_safetensors_t **out, com_error_t *err);
/* Same over a caller-owned buffer that must outlive the object (tests, fuzzing). */
int com_safetensors_open_buffer(const void *buf, size_t len, com_safetensors_t **out,
                                com_error_t *err);
void com_safetensors_destroy(com_safetensors_t **self_p);

/* Tensors are indexed in name order (strcmp); "__metadata__" is not a tensor. */
size_t com_safetensors_count(const com_safetensors_t *st);
const com_tensor_t *com_safetensors_at(const com_safetensors_t *st, size_t i);
/* The tensor called name, or NULL. */
const com_tensor_t *com_safetensors_find(const com_safetensors_t *st, const char *name);

/* Finds name and checks its shape is exactly dims[0..ndim) (and the dtype is a float type).
 * Returns it, or NULL with COM_EFORMAT naming the tensor, the expected and the actual shape. */
const com_tensor_t *com_safetensors_expect(const com_safetensors_t *st, const char *name,
                                           int32_t ndim, const int64_t *dims, com_error_t *err);

/* Converts a float tensor (f32, f16, bf16) into dst[n] fp32; n must equal its element count.
 * Returns 0, COM_EUNSUPPORTED for other dtypes, COM_EINVAL for a size mismatch. */
int com_tensor_to_f32(const com_tensor_t *t, float *dst, size_t n, com_error_t *err);
/* Number of elements (product of the shape; 1 for a scalar). */
size_t com_tensor_numel(const com_tensor_t *t);
const char *com_dtype_name(com_dtype_t dt);
size_t com_dtype_size(com_dtype_t dt);

#endif
