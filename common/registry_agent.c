/* common/registry_agent.c — see registry_agent.h. One thread per agent; the snapshot and flags
 * are guarded by mu; the registry connection belongs to the agent's thread alone. */
#include "common/registry_agent.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"

struct com_registry_agent {
    com_registry_t *reg; /* used by the agent thread only (and by stop after the join) */
    int is_worker;
    com_worker_record_t worker; /* snapshot, under mu */
    com_broker_record_t broker; /* snapshot, under mu */
    int32_t interval_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int kick;
    int healthy;
    int64_t epoch; /* agent thread only: bumped by each re-registration after an outage */
};

static int s_write(com_registry_agent_t *a, int32_t ttl) {
    com_error_t err = {0};
    com_worker_record_t w;
    com_broker_record_t b;
    pthread_mutex_lock(&a->mu);
    w = a->worker;
    b = a->broker;
    pthread_mutex_unlock(&a->mu);
    int rc;
    /* After an outage the record is written again under a new epoch, so readers can tell a
     * re-registration from a record that never went away. */
    int64_t epoch = a->epoch + (a->healthy ? 0 : 1);
    if (a->is_worker) {
        w.epoch = epoch;
        rc = com_registry_put_worker(a->reg, &w, ttl, &err);
    } else {
        rc = com_registry_put_broker(a->reg, &b, ttl, &err);
    }
    pthread_mutex_lock(&a->mu);
    int was = a->healthy;
    a->healthy = rc == 0;
    pthread_mutex_unlock(&a->mu);
    if (rc != 0 && was)
        COM_WARN("registry: %s (serving goes on; will re-register when Redis is back)", err.msg);
    if (rc == 0 && !was) {
        a->epoch = epoch;
        COM_INFO("registry: registered %s again (epoch %lld)", a->is_worker ? w.id : b.id,
                 (long long)epoch);
    }
    return rc;
}

static void *s_main(void *arg) {
    com_registry_agent_t *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        pthread_mutex_unlock(&a->mu);
        s_write(a, a->interval_ms * 3);
        pthread_mutex_lock(&a->mu);
        if (a->stop)
            break;
        if (!a->kick) {
            struct timespec ts = com_clock_deadline_ms(a->interval_ms); /* cv is monotonic */
            while (!a->stop && !a->kick &&
                   pthread_cond_timedwait(&a->cv, &a->mu, &ts) != ETIMEDOUT) {
            }
        }
        a->kick = 0;
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static int s_start(const char *url, int is_worker, const com_worker_record_t *w,
                   const com_broker_record_t *b, int32_t interval_ms, com_registry_agent_t **out,
                   com_error_t *err) {
    *out = NULL;
    com_registry_agent_t *a = calloc(1, sizeof *a);
    if (!a)
        return com_error_set(err, COM_ENOMEM, "out of memory");
    if (interval_ms <= 0) /* the default first: the Redis timeouts derive from it */
        interval_ms = 1000;
    com_registry_opts_t ro = {.timeout_ms = interval_ms < 500 ? interval_ms / 2 + 1 : 250,
                              .reconnect_ms = interval_ms};
    int rc = com_registry_new(url, &ro, &a->reg, err);
    if (rc != 0)
        goto err;
    a->is_worker = is_worker;
    if (w)
        a->worker = *w;
    if (b)
        a->broker = *b;
    a->interval_ms = interval_ms;
    a->healthy = 1; /* so the first failure is logged */
    a->epoch = w ? w->epoch : 0;
    pthread_mutex_init(&a->mu, NULL);
    if (com_clock_cond_init(&a->cv) != 0) {
        pthread_mutex_destroy(&a->mu);
        rc = com_error_set(err, COM_ENOMEM, "cannot make the registry condvar");
        goto err;
    }
    if (pthread_create(&a->thread, NULL, s_main, a) != 0) {
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        rc = com_error_set(err, COM_ENOMEM, "cannot start the registry thread");
        goto err;
    }
    *out = a;
    return 0;
err:
    com_registry_destroy(&a->reg);
    free(a);
    return rc;
}

int com_registry_agent_start_worker(const char *url, const com_worker_record_t *rec,
                                    int32_t interval_ms, com_registry_agent_t **out,
                                    com_error_t *err) {
    return s_start(url, 1, rec, NULL, interval_ms, out, err);
}

int com_registry_agent_start_broker(const char *url, const com_broker_record_t *rec,
                                    int32_t interval_ms, com_registry_agent_t **out,
                                    com_error_t *err) {
    return s_start(url, 0, NULL, rec, interval_ms, out, err);
}

void com_registry_agent_update_worker(com_registry_agent_t *a, const com_worker_record_t *rec) {
    pthread_mutex_lock(&a->mu);
    a->worker = *rec;
    pthread_mutex_unlock(&a->mu);
}

void com_registry_agent_update_broker(com_registry_agent_t *a, const com_broker_record_t *rec) {
    pthread_mutex_lock(&a->mu);
    a->broker = *rec;
    pthread_mutex_unlock(&a->mu);
}

void com_registry_agent_kick(com_registry_agent_t *a) {
    pthread_mutex_lock(&a->mu);
    a->kick = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

int com_registry_agent_healthy(com_registry_agent_t *a) {
    pthread_mutex_lock(&a->mu);
    int h = a->healthy;
    pthread_mutex_unlock(&a->mu);
    return h;
}

void com_registry_agent_stop(com_registry_agent_t **self_p, bool deregister) {
    if (!self_p || !*self_p)
        return;
    com_registry_agent_t *a = *self_p;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    if (!deregister) {
        int32_t keep =
            a->interval_ms * 3 > COM_REGISTRY_KEEP_MS ? a->interval_ms * 3 : COM_REGISTRY_KEEP_MS;
        s_write(a, keep);
    } else {
        com_error_t err = {0};
        const char *id = a->is_worker ? a->worker.id : a->broker.id;
        int rc = a->is_worker ? com_registry_remove_worker(a->reg, id, &err)
                              : com_registry_remove_broker(a->reg, id, &err);
        if (rc != 0)
            COM_WARN("registry: could not deregister %s: %s", id, err.msg);
    }
    com_registry_destroy(&a->reg);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
    *self_p = NULL;
}
