/* common/prng.h — the project's seeded PRNG (splitmix64 seeding xoshiro256**), for tests and
 * benches: same seed, same numbers, on every machine. Not for cryptography. Header-only. */
#ifndef EMBER_COMMON_PRNG_H
#define EMBER_COMMON_PRNG_H

#include <stdint.h>

typedef struct com_prng {
    uint64_t s[4];
} com_prng_t;

static inline uint64_t com_prng_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void com_prng_seed(com_prng_t *p, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        p->s[i] = com_prng_splitmix64(&seed);
}

static inline uint64_t com_prng_next(com_prng_t *p) {
    uint64_t *s = p->s;
    uint64_t r = s[1] * 5;
    r = ((r << 7) | (r >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return r;
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t com_prng_below(com_prng_t *p, uint64_t n) {
    return com_prng_next(p) % n;
}

/* Uniform float in [lo, hi). */
static inline float com_prng_uniform(com_prng_t *p, float lo, float hi) {
    return lo + (hi - lo) * (float)((com_prng_next(p) >> 40) * (1.0 / 16777216.0));
}

#endif
