/* tests/test_registry.c — the Redis registry (common/registry.h) against a real redis-server:
 * register, list, expire (many at once), remove, keep a failed process's last record, report
 * commands Redis fails inside a transaction, and survive Redis going away and coming back. */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/registry.h"
#include "common/registry_agent.h"
#include "tests/test_redis.h"
#include "tests/test_util.h"

static void s_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static com_worker_record_t s_worker(const char *id, int64_t load) {
    com_worker_record_t w = {0};
    snprintf(w.id, sizeof w.id, "%s", id);
    snprintf(w.host, sizeof w.host, "host-a");
    snprintf(w.device, sizeof w.device, "cpu");
    snprintf(w.model, sizeof w.model, "all-MiniLM-L6-v2");
    snprintf(w.family, sizeof w.family, "bert");
    snprintf(w.brokers, sizeof w.brokers, "tcp://127.0.0.1:5556,tcp://127.0.0.1:5566");
    snprintf(w.state, sizeof w.state, "ready");
    w.pid = 1234;
    w.started_ms = 1700000000000;
    w.epoch = 3;
    w.max_batch_tokens = 8192;
    w.load_tokens = load;
    w.batches_done = 42;
    return w;
}

static void s_test_urls(void) {
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    const char *bad[] = {"",
                         "redis://",
                         "redis://:6379",
                         "redis://h:0",
                         "redis://h:99999",
                         "redis://h:12x",
                         "redis://h:1/x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(com_registry_new(bad[i], NULL, &reg, &err) == COM_EINVAL && reg == NULL,
                  "url '%s' should be refused", bad[i]);
    }
    CHECK(com_registry_new("localhost", NULL, &reg, &err) == 0);
    com_registry_destroy(&reg);
    CHECK(reg == NULL);
    CHECK(com_registry_new("redis://127.0.0.1:6380/2", NULL, &reg, &err) == 0);
    com_registry_destroy(&reg);
    com_registry_destroy(NULL);
}

static void s_test_roundtrip(const char *url) {
    com_registry_opts_t o = {.key_prefix = "embertest"};
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    CHECK(com_registry_new(url, &o, &reg, &err) == 0);
    com_worker_record_t a = s_worker("w-a", 100), b = s_worker("w-b", 7);
    CHECK_MSG(com_registry_put_worker(reg, &a, 5000, &err) == 0, "%s", err.msg);
    s_sleep_ms(5);
    CHECK(com_registry_put_worker(reg, &b, 5000, &err) == 0);
    CHECK(a.last_seen_ms > 0 && b.last_seen_ms >= a.last_seen_ms);
    com_worker_record_t *list = NULL;
    size_t n = 0;
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(strcmp(list[0].id, "w-b") == 0); /* newest first */
        CHECK(memcmp(&list[1], &a, sizeof a) == 0);
        CHECK(memcmp(&list[0], &b, sizeof b) == 0);
    }
    free(list);

    com_broker_record_t br = {0};
    snprintf(br.id, sizeof br.id, "b-1");
    snprintf(br.frontend, sizeof br.frontend, "tcp://127.0.0.1:5555");
    snprintf(br.backend, sizeof br.backend, "tcp://127.0.0.1:5556");
    snprintf(br.state, sizeof br.state, "ready");
    br.workers = 2;
    CHECK(com_registry_put_broker(reg, &br, 5000, &err) == 0);
    com_broker_record_t *bl = NULL;
    CHECK(com_registry_list_brokers(reg, &bl, &n, &err) == 0 && n == 1);
    CHECK(n == 1 && memcmp(&bl[0], &br, sizeof br) == 0);
    free(bl);

    /* remove */
    CHECK(com_registry_remove_worker(reg, "w-a", &err) == 0);
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0 && n == 1);
    free(list);

    /* expiry: the hash's TTL lapses, the listing skips and prunes the member */
    com_worker_record_t c = s_worker("w-short", 1);
    CHECK(com_registry_put_worker(reg, &c, 150, &err) == 0);
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0 && n == 2);
    free(list);
    s_sleep_ms(400);
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0 && n == 1);
    CHECK(n == 1 && strcmp(list[0].id, "w-b") == 0);
    free(list);
    com_registry_destroy(&reg);
}

/* One command on a fresh connection to the test server: the reply (freeReplyObject it), or NULL
 * when the server cannot be reached. */
static redisReply *s_raw(const test_redis_t *srv, const char *fmt, ...) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", srv->port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* The integer reply to a raw command, or -1. */
static long long s_raw_int(const test_redis_t *srv, const char *cmd, const char *key) {
    redisReply *r = s_raw(srv, "%s %s", cmd, key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return v;
}

/* Sends a raw command and checks that Redis did not answer with an error. */
#define RAW_OK(srv, ...)                                                                           \
    do {                                                                                           \
        redisReply *r_ = s_raw(srv, __VA_ARGS__);                                                  \
        CHECK_MSG(r_ && r_->type != REDIS_REPLY_ERROR, "raw command: %s",                          \
                  r_ && r_->type == REDIS_REPLY_ERROR ? r_->str : "no reply");                     \
        if (r_)                                                                                    \
            freeReplyObject(r_);                                                                   \
    } while (0)

/* Many workers expiring at once (a host going down): one listing prunes every stale member,
 * through one pipeline, and keeps the live one. */
static void s_test_many_stale(const test_redis_t *srv) {
    enum { N_STALE = 50 };
    com_registry_opts_t o = {.key_prefix = "stale"};
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    CHECK(com_registry_new(srv->url, &o, &reg, &err) == 0);
    com_worker_record_t live = s_worker("w-live", 1);
    CHECK_MSG(com_registry_put_worker(reg, &live, 10000, &err) == 0, "%s", err.msg);
    int put = 0;
    for (int i = 0; i < N_STALE; i++) {
        char id[32];
        snprintf(id, sizeof id, "w-stale-%02d", i);
        com_worker_record_t w = s_worker(id, i);
        put += com_registry_put_worker(reg, &w, 100, &err) == 0;
    }
    CHECK_MSG(put == N_STALE, "%d of %d puts: %s", put, N_STALE, err.msg);
    CHECK(s_raw_int(srv, "ZCARD", "stale:workers") == N_STALE + 1);
    s_sleep_ms(400);
    com_worker_record_t *list = NULL;
    size_t n = 0;
    CHECK_MSG(com_registry_list_workers(reg, &list, &n, &err) == 0, "%s", err.msg);
    CHECK(n == 1 && strcmp(list[0].id, "w-live") == 0);
    free(list);
    long long left = s_raw_int(srv, "ZCARD", "stale:workers");
    CHECK_MSG(left == 1, "%lld set members left after pruning %d stale ones", left, N_STALE);
    redisReply *r = s_raw(srv, "ZSCORE stale:workers w-live");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    if (r)
        freeReplyObject(r);
    /* the connection is still in step: a second listing finds the same, nothing to prune */
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0 && n == 1);
    free(list);
    CHECK(com_registry_connected(reg));
    com_registry_destroy(&reg);
}

/* Commands Redis fails inside MULTI/EXEC (WRONGTYPE at EXEC, OOM while queueing) are errors
 * whose message names the command and Redis's reason; the connection stays usable after. */
static void s_test_exec_errors(const test_redis_t *srv) {
    com_registry_opts_t o = {.key_prefix = "wrong"};
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    CHECK(com_registry_new(srv->url, &o, &reg, &err) == 0);

    /* the record's hash key holds a string: HSET fails inside EXEC */
    RAW_OK(srv, "SET wrong:worker:w-x not-a-hash");
    com_worker_record_t x = s_worker("w-x", 1);
    int rc = com_registry_put_worker(reg, &x, 5000, &err);
    CHECK_MSG(rc == COM_EIO, "put over a string key returned %d", rc);
    CHECK_MSG(strstr(err.msg, "HSET wrong:worker:w-x") && strstr(err.msg, "WRONGTYPE"),
              "message '%s'", err.msg);
    printf("hash key of the wrong type: '%s'\n", err.msg);
    CHECK(com_registry_connected(reg));
    com_worker_record_t ok = s_worker("w-ok", 2);
    CHECK_MSG(com_registry_put_worker(reg, &ok, 5000, &err) == 0, "%s", err.msg);
    /* ZADD did add w-x (Redis does not roll back); its "hash" is no hash, so listing prunes it */
    com_worker_record_t *list = NULL;
    size_t n = 0;
    CHECK_MSG(com_registry_list_workers(reg, &list, &n, &err) == 0, "%s", err.msg);
    CHECK(n == 1 && strcmp(list[0].id, "w-ok") == 0);
    free(list);
    RAW_OK(srv, "DEL wrong:worker:w-x");

    /* the sorted set's key holds a string: ZADD fails inside EXEC, and listing fails too */
    RAW_OK(srv, "DEL wrong:workers");
    RAW_OK(srv, "SET wrong:workers not-a-zset");
    rc = com_registry_put_worker(reg, &ok, 5000, &err);
    CHECK_MSG(rc == COM_EIO, "put over a string set returned %d", rc);
    CHECK_MSG(strstr(err.msg, "ZADD wrong:workers") && strstr(err.msg, "WRONGTYPE"), "message '%s'",
              err.msg);
    printf("set key of the wrong type: '%s'\n", err.msg);
    rc = com_registry_list_workers(reg, &list, &n, &err);
    CHECK_MSG(rc == COM_EIO && list == NULL && strstr(err.msg, "WRONGTYPE"), "list: %d '%s'", rc,
              err.msg);
    rc = com_registry_remove_worker(reg, "w-ok", &err);
    CHECK_MSG(rc == COM_EIO && strstr(err.msg, "ZREM wrong:workers") &&
                  strstr(err.msg, "WRONGTYPE"),
              "remove: %d '%s'", rc, err.msg);
    RAW_OK(srv, "DEL wrong:workers");

    /* out of memory: Redis refuses the commands while queueing and discards the transaction */
    RAW_OK(srv, "CONFIG SET maxmemory 1");
    rc = com_registry_put_worker(reg, &ok, 5000, &err);
    RAW_OK(srv, "CONFIG SET maxmemory 0");
    CHECK_MSG(rc == COM_EIO, "put while Redis is out of memory returned %d", rc);
    CHECK_MSG(strstr(err.msg, "HSET wrong:worker:w-ok") && strstr(err.msg, "OOM"), "message '%s'",
              err.msg);
    printf("Redis out of memory: '%s'\n", err.msg);

    /* and the connection is in step after all that */
    CHECK_MSG(com_registry_put_worker(reg, &ok, 5000, &err) == 0, "%s", err.msg);
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0 && n == 1);
    free(list);
    CHECK(com_registry_connected(reg));
    com_registry_destroy(&reg);
}

static void s_test_outage(test_redis_t *srv) {
    com_registry_opts_t o = {.key_prefix = "outage", .timeout_ms = 200, .reconnect_ms = 300};
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    CHECK(com_registry_new(srv->url, &o, &reg, &err) == 0);
    com_worker_record_t w = s_worker("w-o", 5);
    CHECK(com_registry_put_worker(reg, &w, 5000, &err) == 0);
    CHECK(com_registry_connected(reg));

    test_redis_stop(srv);
    int64_t t0 = com_clock_mono_us();
    int fails = 0;
    for (int i = 0; i < 5; i++) /* heartbeats while Redis is gone: fail fast, no crash */
        fails += com_registry_put_worker(reg, &w, 5000, &err) == COM_EIO;
    int64_t spent_ms = (com_clock_mono_us() - t0) / 1000;
    CHECK_MSG(fails == 5, "puts while down: %d of 5 failed", fails);
    CHECK_MSG(spent_ms < 2000, "5 puts while down took %lld ms", (long long)spent_ms);
    printf("while Redis is down: '%s'\n", err.msg);
    CHECK(!com_registry_connected(reg));

    /* Redis comes back empty (no persistence): the next heartbeats re-register. */
    CHECK(test_redis_restart(srv) == 0);
    int ok = 0;
    for (int i = 0; i < 20 && !ok; i++) {
        ok = com_registry_put_worker(reg, &w, 5000, &err) == 0;
        if (!ok)
            s_sleep_ms(100);
    }
    CHECK_MSG(ok, "re-registration after Redis returned: %s", err.msg);
    com_worker_record_t *list = NULL;
    size_t n = 0;
    CHECK(com_registry_list_workers(reg, &list, &n, &err) == 0 && n == 1);
    free(list);
    com_registry_destroy(&reg);
}

/* Lists workers through a fresh connection; returns how many, and the first one in *first. */
static size_t s_count_workers(const char *url, com_worker_record_t *first) {
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    com_worker_record_t *list = NULL;
    size_t n = 0;
    if (com_registry_new(url, NULL, &reg, &err) == 0 &&
        com_registry_list_workers(reg, &list, &n, &err) == 0 && n > 0 && first)
        *first = list[0];
    free(list);
    com_registry_destroy(&reg);
    return n;
}

static void s_test_agent(test_redis_t *srv) {
    com_worker_record_t w = s_worker("w-agent", 0), got = {0};
    com_registry_agent_t *a = NULL;
    com_error_t err = {0};
    CHECK(com_registry_agent_start_worker(srv->url, &w, 100, &a, &err) == 0);
    s_sleep_ms(300);
    CHECK(s_count_workers(srv->url, &got) == 1 && strcmp(got.id, "w-agent") == 0);
    int64_t epoch0 = got.epoch;
    w.load_tokens = 777;
    com_registry_agent_update_worker(a, &w);
    com_registry_agent_kick(a);
    s_sleep_ms(150);
    CHECK(s_count_workers(srv->url, &got) == 1 && got.load_tokens == 777);

    test_redis_stop(srv); /* the owner goes on; the agent keeps trying */
    s_sleep_ms(350);
    CHECK(!com_registry_agent_healthy(a));
    CHECK(test_redis_restart(srv) == 0);
    int back = 0;
    for (int i = 0; i < 30 && !back; i++) {
        s_sleep_ms(100);
        back = s_count_workers(srv->url, &got) == 1;
    }
    CHECK_MSG(back, "the agent re-registered after Redis came back");
    CHECK_MSG(got.epoch > epoch0, "epoch %lld after, %lld before", (long long)got.epoch,
              (long long)epoch0);
    CHECK(com_registry_agent_healthy(a));
    com_registry_agent_stop(&a, true);
    CHECK(a == NULL);
    CHECK(s_count_workers(srv->url, NULL) == 0);
}

/* A worker that stops because it failed (no deregister) leaves its last record, state and all,
 * for COM_REGISTRY_KEEP_MS, not for the three heartbeats of a live one. */
static void s_test_agent_keep(const test_redis_t *srv) {
    com_worker_record_t w = s_worker("w-failed", 0), got = {0};
    com_registry_agent_t *a = NULL;
    com_error_t err = {0};
    CHECK(com_registry_agent_start_worker(srv->url, &w, 100, &a, &err) == 0);
    s_sleep_ms(150);
    long long live_ttl = s_raw_int(srv, "PTTL", "ember:worker:w-failed");
    CHECK_MSG(live_ttl > 0 && live_ttl <= 300, "live record's TTL %lld ms", live_ttl);
    snprintf(w.state, sizeof w.state, "unhealthy");
    com_registry_agent_update_worker(a, &w);
    com_registry_agent_stop(&a, false);
    s_sleep_ms(400); /* past a live record's TTL */
    long long kept_ttl = s_raw_int(srv, "PTTL", "ember:worker:w-failed");
    CHECK_MSG(kept_ttl > COM_REGISTRY_KEEP_MS - 10000 && kept_ttl <= COM_REGISTRY_KEEP_MS,
              "kept record's TTL %lld ms", kept_ttl);
    CHECK(s_count_workers(srv->url, &got) == 1 && strcmp(got.id, "w-failed") == 0 &&
          strcmp(got.state, "unhealthy") == 0);
    RAW_OK(srv, "DEL ember:worker:w-failed");
    CHECK(s_count_workers(srv->url, NULL) == 0);
}

int main(void) {
    s_test_urls();
    test_redis_t srv;
    if (test_redis_start(&srv) != 0) {
        fprintf(stderr, "FATAL: redis-server could not be started\n");
        return 1;
    }
    s_test_roundtrip(srv.url);
    s_test_many_stale(&srv);
    s_test_exec_errors(&srv);
    s_test_outage(&srv);
    s_test_agent(&srv);
    s_test_agent_keep(&srv);
    test_redis_destroy(&srv);
    return test_finish();
}
