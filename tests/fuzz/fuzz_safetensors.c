/* tests/fuzz/fuzz_safetensors.c — libFuzzer target for common/safetensors.c: opens the input with
 * com_safetensors_open_buffer and, when it opens, walks every tensor: looks it up by name, checks
 * its bytes lie inside the input and match its shape and dtype, reads every byte (ASan catches an
 * out-of-bounds range), converts small float tensors with com_tensor_to_f32 into a bounded
 * buffer, and re-checks the shape through com_safetensors_expect. A broken invariant aborts, which
 * libFuzzer reports as a crash. Seeds: tests/fuzz/seeds/fuzz_safetensors/ (written by
 * tests/reference/make_safetensors_seeds.py). Single-threaded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"

#define S_MAX_CONVERT 4096 /* elements converted per tensor */

static float s_buf[S_MAX_CONVERT]; /* [S_MAX_CONVERT], host, fp32 */

static void s_require(int cond) {
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    com_safetensors_t *st = NULL;
    com_error_t err = {0};
    int rc = com_safetensors_open_buffer(data, size, &st, &err);
    if (rc != 0) {
        s_require(st == NULL && err.code == rc && err.msg[0] != '\0');
        s_require(rc == COM_EFORMAT || rc == COM_EUNSUPPORTED || rc == COM_ENOMEM);
        return 0;
    }
    size_t n = com_safetensors_count(st);
    s_require(com_safetensors_at(st, n) == NULL);
    volatile unsigned sink = 0;
    for (size_t i = 0; i < n; i++) {
        const com_tensor_t *t = com_safetensors_at(st, i);
        s_require(t != NULL && t->name != NULL && t->name[0] != '\0');
        s_require(com_safetensors_find(st, t->name) == t);
        s_require(i == 0 || strcmp(com_safetensors_at(st, i - 1)->name, t->name) < 0);
        s_require(t->ndim >= 0 && t->ndim <= COM_TENSOR_MAX_DIMS);
        size_t numel = com_tensor_numel(t);
        s_require(t->nbytes == numel * com_dtype_size(t->dtype));
        const uint8_t *p = t->data;
        s_require(p >= data + 8 && p + t->nbytes <= data + size);
        for (size_t b = 0; b < t->nbytes; b++)
            sink += p[b];
        int is_float =
            t->dtype == COM_DTYPE_F32 || t->dtype == COM_DTYPE_F16 || t->dtype == COM_DTYPE_BF16;
        if (numel <= S_MAX_CONVERT) {
            rc = com_tensor_to_f32(t, s_buf, numel, &err);
            s_require(is_float ? rc == 0 : rc == COM_EUNSUPPORTED);
        }
        if (numel >= 1)
            s_require(com_tensor_to_f32(t, s_buf, numel - 1, &err) == COM_EINVAL);
        const com_tensor_t *e = com_safetensors_expect(st, t->name, t->ndim, t->shape, &err);
        s_require(is_float ? e == t : (e == NULL && err.code == COM_EFORMAT));
    }
    (void)sink;
    com_safetensors_destroy(&st);
    s_require(st == NULL);
    return 0;
}
