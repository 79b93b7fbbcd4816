/* common/half.h — IEEE 754 binary16 (float16) conversions for output tensors and model files.
 *
 * com_half_from_f32 rounds to nearest, ties to even, in integer arithmetic (no dependence on the
 * FPU rounding mode or on _Float16 support): values above the largest finite half (65504) that
 * round up overflow to +-inf, values below half the smallest subnormal (2^-25) flush to +-0
 * (exactly 2^-25 ties to even, i.e. to 0), subnormals are produced exactly. NaN stays NaN with
 * its sign and the top 10 payload bits; a payload that would become 0 is made quiet (0x200) so
 * it never turns into inf. com_half_to_f32 is exact for every input, so
 * com_half_from_f32(com_half_to_f32(h)) == h for all 65536 h (NaNs included).
 * Pure functions; thread-safe. */
#ifndef EMBER_COMMON_HALF_H
#define EMBER_COMMON_HALF_H

#include <stddef.h>
#include <stdint.h>

uint16_t com_half_from_f32(float f);
float com_half_to_f32(uint16_t h);

/* dst[i] = com_half_from_f32(src[i]) for i < n (host-order uint16). */
void com_half_from_f32_n(const float *src, uint16_t *dst, size_t n);
/* dst[i] = com_half_to_f32(src[i]) for i < n. */
void com_half_to_f32_n(const uint16_t *src, float *dst, size_t n);

#endif
