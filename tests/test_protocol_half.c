/* tests/test_protocol_half.c — common/half.c (float16 for output tensors): all 65536 half values
 * survive half -> f32 -> half bit-exactly (NaN payloads included); known values; and rounding
 * of f32 -> half at every boundary between adjacent halves: the exact midpoint goes to the even
 * neighbour, one f32 ulp either side goes to the nearer one. Where the compiler has _Float16
 * (clang and gcc on x86-64), a sweep of f32 bit patterns is also compared with its conversion,
 * an independent round-to-nearest-even implementation. Single-threaded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/half.h"
#include "tests/test_util.h"

static float s_bits_f(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint32_t s_f_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static void test_exhaustive_roundtrip(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = com_half_to_f32((uint16_t)h);
        uint16_t back = com_half_from_f32(f);
        if (back != h && bad++ < 5)
            fprintf(stderr, "half 0x%04x -> %g -> 0x%04x\n", h, (double)f, back);
        /* NaN in, NaN out; inf in, inf out; finite values exact vs ldexp. */
        uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double want = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, (int)e - 25);
        if (h & 0x8000)
            want = -want;
        if (e == 0x1f)
            CHECK(m ? isnan(f) : isinf(f));
        else if (f != want && bad++ < 5)
            fprintf(stderr, "half 0x%04x -> %.10g want %.10g\n", h, (double)f, want);
    }
    CHECK_MSG(bad == 0, "%d of 65536 halves do not round-trip", bad);
}

static void test_known(void) {
    struct {
        float f;
        uint16_t h;
    } k[] = {
        {0.0f, 0x0000},           {-0.0f, 0x8000},
        {1.0f, 0x3c00},           {-2.0f, 0xc000},
        {0.5f, 0x3800},           {65504.0f, 0x7bff},
        {65519.99f, 0x7bff},      {65520.0f, 0x7c00},
        {1e10f, 0x7c00},          {-1e10f, 0xfc00},
        {0.1f, 0x2e66},           {1.0f / 3.0f, 0x3555},
        {0x1p-14f, 0x0400},       {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000},       {0x1.000002p-25f, 0x0001},
        {0x3p-25f, 0x0002},       {0x1.ffcp-15f, 0x0400},
        {0x1.ff8p-15f, 0x03ff},   {-0x1p-24f, 0x8001},
        {1e-30f, 0x0000},         {1.0009765625f, 0x3c01},
        {1.00048828125f, 0x3c00}, {1.00146484375f, 0x3c02},
        {2048.0f, 0x6800},        {2049.0f, 0x6800},
        {2051.0f, 0x6802},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        uint16_t h = com_half_from_f32(k[i].f);
        CHECK_MSG(h == k[i].h, "%a -> 0x%04x, want 0x%04x", (double)k[i].f, h, k[i].h);
    }
    CHECK(isinf(com_half_to_f32(0x7c00)) && com_half_to_f32(0x7c00) > 0);
    CHECK(com_half_to_f32(0x0001) == 0x1p-24f);
    CHECK(com_half_to_f32(0x3555) == 0x1.554p-2f);
    /* NaN: sign kept, payload's top bits kept, never turns into inf. */
    CHECK(com_half_from_f32(s_bits_f(0x7fc00000u)) == 0x7e00);
    CHECK(com_half_from_f32(s_bits_f(0xffc00000u)) == 0xfe00);
    CHECK(com_half_from_f32(s_bits_f(0x7f800001u)) == 0x7e00); /* payload below half's bits */
    CHECK(com_half_from_f32(s_bits_f(0x7f802000u)) == 0x7c01);
    CHECK(com_half_from_f32(INFINITY) == 0x7c00 && com_half_from_f32(-INFINITY) == 0xfc00);
    /* Bulk helpers. */
    float src[3] = {1.0f, -0.0f, 65504.0f}, back[3];
    uint16_t h[3];
    com_half_from_f32_n(src, h, 3);
    com_half_to_f32_n(h, back, 3);
    CHECK(h[0] == 0x3c00 && h[1] == 0x8000 && h[2] == 0x7bff);
    CHECK(memcmp(src, back, sizeof src) == 0);
}

/* For every pair of adjacent finite halves (both signs): midpoint ties to even, and the f32
 * just below / above the midpoint rounds down / up. */
static void test_boundaries(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        for (int s = 0; s < 2; s++) {
            uint16_t lo = (uint16_t)(h | (s ? 0x8000 : 0)), hi = (uint16_t)(lo + 1);
            float a = com_half_to_f32(lo),
                  b = h + 1 == 0x7c00 ? (s ? -65536.0f : 65536.0f) : com_half_to_f32(hi);
            float mid = (float)(((double)a + (double)b) / 2); /* exact in f32 */
            uint16_t even = (lo & 1) ? hi : lo;
            uint16_t below = com_half_from_f32(nextafterf(mid, 0.0f)); /* toward lo */
            uint16_t above = com_half_from_f32(nextafterf(mid, s ? -INFINITY : INFINITY));
            uint16_t at = com_half_from_f32(mid);
            if ((at != even || below != lo || above != hi) && bad++ < 5)
                fprintf(stderr,
                        "boundary 0x%04x/0x%04x: mid %a -> 0x%04x (want 0x%04x), "
                        "below 0x%04x, above 0x%04x\n",
                        lo, hi, (double)mid, at, even, below, above);
        }
    }
    CHECK_MSG(bad == 0, "%d rounding boundaries wrong", bad);
}

static void test_against_compiler(void) {
#if defined(__FLT16_MANT_DIG__)
    long n = 0, bad = 0;
    for (uint64_t x = 0; x <= 0xffffffffu; x += 9973) { /* ~430k patterns over all exponents */
        float f = s_bits_f((uint32_t)x);
        _Float16 c = (_Float16)f;
        uint16_t want;
        memcpy(&want, &c, sizeof want);
        uint16_t got = com_half_from_f32(f);
        n++;
        if (isnan(f)) {
            if (!((got & 0x7c00) == 0x7c00 && (got & 0x3ff) && (got & 0x8000) == (want & 0x8000)))
                bad++;
        } else if (got != want && bad++ < 5) {
            fprintf(stderr, "f32 0x%08x: got 0x%04x, _Float16 0x%04x\n", (uint32_t)x, got, want);
        }
    }
    CHECK_MSG(bad == 0, "%ld of %ld f32 patterns differ from _Float16", bad, n);
    printf("compared %ld f32 patterns with _Float16\n", n);
    (void)s_f_bits;
#else
    (void)s_f_bits;
    printf("no _Float16 in this compiler: skipped the independent comparison\n");
#endif
}

int main(void) {
    test_exhaustive_roundtrip();
    test_known();
    test_boundaries();
    test_against_compiler();
    return test_finish();
}
