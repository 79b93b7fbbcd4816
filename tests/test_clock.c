/* tests/test_clock.c — common/clock.c: com_clock_ts_add_ms normalises tv_nsec (carries, borrows,
 * out-of-range input); com_clock_deadline_ms is a normalised CLOCK_MONOTONIC time at least ms
 * ahead; a pthread_cond_timedwait on a com_clock_cond_init condvar with a 50 ms deadline returns
 * ETIMEDOUT after >= 50 ms and well under 1 s of CLOCK_MONOTONIC time, and a signal ends such a
 * wait early. The main thread plus one signalling thread. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "common/clock.h"
#include "tests/test_util.h"

static int64_t s_ns(struct timespec ts) {
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t s_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return s_ns(ts);
}

static int s_normal(struct timespec ts) {
    return ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L;
}

static void test_add_ms(void) {
    struct {
        time_t sec;
        long nsec;
        int64_t ms;
        time_t want_sec;
        long want_nsec;
    } k[] = {
        {10, 0, 0, 10, 0},
        {10, 0, 1, 10, 1000000},
        {10, 999999999, 1, 11, 999999},      /* carry from nanoseconds */
        {10, 999000000, 1, 11, 0},           /* exactly one second */
        {10, 500000000, 999, 11, 499000000}, /* carry with ms % 1000 != 0 */
        {10, 500000000, 2500, 13, 0},        /* whole seconds plus a carry */
        {10, 0, 86400123, 86410, 123000000}, /* a day */
        {10, 0, -1, 9, 999000000},           /* borrow */
        {10, 100, -1500, 8, 500000100},      /* borrow across seconds */
        {10, 1999999999, 0, 11, 999999999},  /* out-of-range input normalised */
        {10, 2500000000, 500, 13, 0},        /* out-of-range input plus a carry */
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        struct timespec ts = {.tv_sec = k[i].sec, .tv_nsec = k[i].nsec};
        struct timespec got = com_clock_ts_add_ms(ts, k[i].ms);
        CHECK_MSG(got.tv_sec == k[i].want_sec && got.tv_nsec == k[i].want_nsec,
                  "case %zu: {%lld, %ld} + %lld ms = {%lld, %ld}, want {%lld, %ld}", i,
                  (long long)k[i].sec, k[i].nsec, (long long)k[i].ms, (long long)got.tv_sec,
                  got.tv_nsec, (long long)k[i].want_sec, k[i].want_nsec);
        CHECK(s_normal(got));
    }
    /* Every sub-second offset from a base just short of a second boundary. */
    int bad = 0;
    for (int64_t ms = 0; ms < 2000; ms++) {
        struct timespec ts = {.tv_sec = 5, .tv_nsec = 999999999};
        struct timespec got = com_clock_ts_add_ms(ts, ms);
        if ((!s_normal(got) || s_ns(got) != s_ns(ts) + ms * 1000000) && bad++ < 5)
            fprintf(stderr, "+%lld ms: {%lld, %ld}\n", (long long)ms, (long long)got.tv_sec,
                    got.tv_nsec);
    }
    CHECK_MSG(bad == 0, "%d of 2000 offsets wrong", bad);
}

static void test_deadline(void) {
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t ms = i % 1500;
        int64_t before = s_mono_ns();
        struct timespec d = com_clock_deadline_ms(ms);
        int64_t after = s_mono_ns();
        if ((!s_normal(d) || s_ns(d) < before + ms * 1000000 || s_ns(d) > after + ms * 1000000) &&
            bad++ < 5)
            fprintf(stderr, "deadline +%lld ms: {%lld, %ld} not in [%lld, %lld] ns\n",
                    (long long)ms, (long long)d.tv_sec, d.tv_nsec, (long long)before,
                    (long long)after);
    }
    CHECK_MSG(bad == 0, "%d of 1000 deadlines wrong", bad);
    /* A negative span is now, not the past. */
    int64_t before = s_mono_ns();
    struct timespec d = com_clock_deadline_ms(-5000);
    CHECK(s_normal(d) && s_ns(d) >= before && s_ns(d) <= s_mono_ns());
}

static void test_timed_wait(void) {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_init(&mu, NULL);
    CHECK(com_clock_cond_init(&cv) == 0);
    pthread_mutex_lock(&mu);
    int64_t t0 = s_mono_ns();
    struct timespec d = com_clock_deadline_ms(50);
    int rc;
    do /* a spurious wakeup is allowed: wait again for the same deadline */
        rc = pthread_cond_timedwait(&cv, &mu, &d);
    while (rc == 0);
    int64_t waited = s_mono_ns() - t0;
    pthread_mutex_unlock(&mu);
    CHECK_MSG(rc == ETIMEDOUT, "timedwait returned %d", rc);
    /* Were cv timing on CLOCK_REALTIME, this monotonic deadline (time since boot) would lie
     * decades in the past and the wait would end at once. */
    CHECK_MSG(waited >= 50000000, "woke after %lld ns, before the 50 ms deadline",
              (long long)waited);
    CHECK_MSG(waited < 1000000000, "woke after %lld ns for a 50 ms deadline", (long long)waited);
    pthread_cond_destroy(&cv);
    pthread_mutex_destroy(&mu);
}

typedef struct s_sig {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int flag;
} s_sig_t;

static void *s_signaller(void *arg) {
    s_sig_t *s = arg;
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 20000000};
    nanosleep(&nap, NULL);
    pthread_mutex_lock(&s->mu);
    s->flag = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void test_signal_ends_wait(void) {
    s_sig_t s = {.flag = 0};
    pthread_mutex_init(&s.mu, NULL);
    CHECK(com_clock_cond_init(&s.cv) == 0);
    pthread_mutex_lock(&s.mu);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, s_signaller, &s) == 0);
    int64_t t0 = s_mono_ns();
    struct timespec d = com_clock_deadline_ms(10000);
    int rc = 0;
    while (!s.flag && rc == 0)
        rc = pthread_cond_timedwait(&s.cv, &s.mu, &d);
    int64_t waited = s_mono_ns() - t0;
    pthread_mutex_unlock(&s.mu);
    pthread_join(th, NULL);
    CHECK_MSG(rc == 0 && s.flag == 1, "rc %d flag %d", rc, s.flag);
    CHECK_MSG(waited < 5000000000LL, "a signalled wait took %lld ns", (long long)waited);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
}

int main(void) {
    test_add_ms();
    test_deadline();
    test_timed_wait();
    test_signal_ends_wait();
    return test_finish();
}
