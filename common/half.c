/* common/half.c — see half.h. Bit manipulation only; no global state. */
#include "common/half.h"

#include <string.h>

uint16_t com_half_from_f32(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;

    if (exp == 0xff) { /* inf or NaN */
        if (man == 0)
            return sign | 0x7c00u;
        uint16_t payload = (uint16_t)(man >> 13);
        return sign | 0x7c00u | (payload ? payload : 0x200u);
    }
    int32_t e = (int32_t)exp - 127 + 15; /* biased half exponent */
    if (e >= 0x1f)
        return sign | 0x7c00u; /* |f| >= 2^16: overflow */
    if (e <= 0) {
        /* Subnormal half (or zero): value = m * 2^(e-1-10) with the implicit bit made
         * explicit; shift right by 14 - e with round-to-nearest-even. */
        if (e < -10)
            return sign; /* below 2^-25: rounds to 0 (2^-25 itself is e == -10) */
        uint32_t m = man | 0x800000u;
        uint32_t shift = (uint32_t)(14 - e); /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return sign | (uint16_t)q; /* q may carry into the exponent field: correct */
    }
    uint32_t q = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
        q++; /* may carry into the exponent, up to 0x7c00 = inf: correct */
    return sign | (uint16_t)q;
}

float com_half_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        x = sign | ((exp - 15 + 127) << 23) | (man << 13);
    } else if (man == 0) {
        x = sign;
    } else {
        /* Subnormal: normalise. value = man * 2^-24. */
        uint32_t e = 127 - 15 + 1;
        while (!(man & 0x400u)) {
            man <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

void com_half_from_f32_n(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = com_half_from_f32(src[i]);
}

void com_half_to_f32_n(const uint16_t *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = com_half_to_f32(src[i]);
}
