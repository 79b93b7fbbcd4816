/* common/clock.h — time in one place: a monotonic clock for every timer and deadline inside a
 * process, and wall-clock milliseconds only for what other hosts read (Redis last-seen).
 *
 * Timed condvar waits follow the same rule: a condvar that is waited on with a deadline is made
 * with com_clock_cond_init (it times on CLOCK_MONOTONIC) and the deadline comes from
 * com_clock_deadline_ms, so a wall-clock step (NTP, by hand) never stretches or cuts a wait.
 * pthread_cond_timedwait on a default condvar measures CLOCK_REALTIME: never pair the two. */
#ifndef EMBER_COMMON_CLOCK_H
#define EMBER_COMMON_CLOCK_H

#include <pthread.h>
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

/* Initialises *cv so that pthread_cond_timedwait reads its deadline on CLOCK_MONOTONIC. Returns
 * 0, or the pthread error code (ENOMEM, EINVAL), *cv then not initialised. The caller destroys
 * it with pthread_cond_destroy. */
int com_clock_cond_init(pthread_cond_t *cv);

/* ts plus ms milliseconds (ms may be negative), normalised: tv_nsec in [0, 1e9) even when
 * ts.tv_nsec was not. */
struct timespec com_clock_ts_add_ms(struct timespec ts, int64_t ms);

/* The absolute CLOCK_MONOTONIC time ms milliseconds from now (ms < 0 counts as 0), normalised;
 * the deadline for pthread_cond_timedwait on a condvar from com_clock_cond_init. */
struct timespec com_clock_deadline_ms(int64_t ms);

#endif
