/* common/zmq_poll_spin.h — zmq_poll that first busy-polls for a bounded time before it blocks.
 *
 * Why: a pool round trip crosses about ten thread wake-ups (docs/architecture.md), each 15-130
 * us; an application thread that polls for a short while after its last event answers the next
 * message without being woken. The cost is a busy core during that window, so it is opt-in
 * (spin_us 0 = plain zmq_poll) and bounded: after spin_us without an event the call blocks as
 * usual. Each spin round yields the core, so a thread it shares a core with (ZeroMQ's I/O
 * thread, when the operator pins a process to one core) runs at once instead of waiting for the
 * spinner's time slice to end. Returns what zmq_poll returns. Header-only; callers link libzmq. */
#ifndef EMBER_COMMON_ZMQ_POLL_SPIN_H
#define EMBER_COMMON_ZMQ_POLL_SPIN_H

#include <sched.h>
#include <stdint.h>
#include <zmq.h>

#include "common/clock.h"

static inline int com_zmq_poll_spin(zmq_pollitem_t *items, int n, long timeout_ms,
                                    int64_t spin_us) {
    if (spin_us > 0 && timeout_ms != 0) {
        int64_t start = com_clock_mono_us();
        if (timeout_ms > 0 && spin_us > (int64_t)timeout_ms * 1000)
            spin_us = (int64_t)timeout_ms * 1000;
        for (;;) {
            int rc = zmq_poll(items, n, 0);
            if (rc != 0)
                return rc;
            sched_yield();
            int64_t spent = com_clock_mono_us() - start;
            if (spent >= spin_us) {
                if (timeout_ms > 0) {
                    timeout_ms -= (long)(spent / 1000);
                    if (timeout_ms <= 0)
                        return 0;
                }
                break;
            }
        }
    }
    return zmq_poll(items, n, timeout_ms);
}

#endif
