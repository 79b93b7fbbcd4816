/* tests/test_redis.h — a private redis-server for one test: started on a free loopback port in
 * a temporary directory, no persistence, stopped (and restartable on the same port, to test a
 * Redis that goes away and comes back). Needs redis-server on PATH (ops/install-deps.sh). */
#ifndef EMBER_TESTS_TEST_REDIS_H
#define EMBER_TESTS_TEST_REDIS_H

#include <sys/types.h>

typedef struct test_redis {
    pid_t pid; /* 0 while stopped */
    int port;
    char dir[256]; /* working directory, removed by test_redis_destroy */
    char url[64];  /* "redis://127.0.0.1:<port>" */
} test_redis_t;

/* Starts a server on a free port and waits until it answers PING (5 s at most). 0 or -1. */
int test_redis_start(test_redis_t *r);
/* Stops the server (SIGTERM, then waits); keeps port and dir for a restart. */
void test_redis_stop(test_redis_t *r);
/* Starts it again on the same port. 0 or -1. */
int test_redis_restart(test_redis_t *r);
/* Stops and removes the directory. */
void test_redis_destroy(test_redis_t *r);

#endif
