/* bench/bench_util.h — what every bench times and ranks with: a monotonic clock in seconds and
 * sorting doubles for medians and percentiles. Header-only: the client benches link libember
 * alone. */
#ifndef EMBER_BENCH_BENCH_UTIL_H
#define EMBER_BENCH_BENCH_UTIL_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort comparator for doubles, ascending */
static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-th percentile (0..100, nearest rank) of v[0..n), n >= 1; sorts v in place. */
static inline double bench_percentile(double *v, size_t n, double q) {
    qsort(v, n, sizeof *v, bench_cmp_double);
    size_t i = (size_t)(q / 100.0 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

#endif
