/* common/clock.c — see clock.h: monotonic condvars and their deadlines. No state; any thread. */
#include "common/clock.h"

#define S_NS_PER_S  1000000000L
#define S_NS_PER_MS 1000000L

int com_clock_cond_init(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

struct timespec com_clock_ts_add_ms(struct timespec ts, int64_t ms) {
    int64_t sec = (int64_t)ts.tv_sec + ms / 1000;
    int64_t nsec = (int64_t)ts.tv_nsec + (ms % 1000) * S_NS_PER_MS;
    sec += nsec / S_NS_PER_S;
    nsec %= S_NS_PER_S;
    if (nsec < 0) {
        nsec += S_NS_PER_S;
        sec--;
    }
    ts.tv_sec = (time_t)sec;
    ts.tv_nsec = (long)nsec;
    return ts;
}

struct timespec com_clock_deadline_ms(int64_t ms) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return com_clock_ts_add_ms(now, ms < 0 ? 0 : ms);
}
