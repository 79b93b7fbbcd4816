/* common/clock.h — time in one place: a monotonic clock for every timer and deadline inside a
 * process, and wall-clock milliseconds only for what other hosts read (Redis last-seen). */
#ifndef EMBER_COMMON_CLOCK_H
#define EMBER_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic microseconds (CLOCK_MONOTONIC): timers, deadlines, latencies. */
static inline int64_t com_clock_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Wall-clock milliseconds since the Unix epoch: only for values shared across hosts. */
static inline int64_t com_clock_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
