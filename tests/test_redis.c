/* tests/test_redis.c — see test_redis.h. */
#include "tests/test_redis.h"
#include "tests/test_util.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int s_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int s_ping(int port) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static int s_spawn(test_redis_t *r) {
    char port[16], log[300];
    snprintf(port, sizeof port, "%d", r->port);
    snprintf(log, sizeof log, "%s/redis.log", r->dir);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", r->dir, "--loglevel", "warning", "--logfile", log,
               (char *)NULL);
        fprintf(stderr, "test_redis: cannot run redis-server (install it: ops/install-deps.sh)\n");
        _exit(127);
    }
    r->pid = pid;
    for (int i = 0; i < 100; i++) {
        if (s_ping(r->port))
            return 0;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            r->pid = 0;
            return -1;
        }
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    test_redis_stop(r);
    return -1;
}

int test_redis_start(test_redis_t *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/ember-redis-XXXXXX");
    if (!mkdtemp(r->dir))
        return -1;
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = s_free_port();
        snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
        if (r->port > 0 && s_spawn(r) == 0)
            return 0;
    }
    fprintf(stderr, "test_redis: could not start redis-server\n");
    return -1;
}

void test_redis_stop(test_redis_t *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGTERM);
        waitpid(r->pid, NULL, 0);
    }
    r->pid = 0;
}

int test_redis_restart(test_redis_t *r) {
    return r->pid > 0 ? 0 : s_spawn(r);
}

void test_redis_destroy(test_redis_t *r) {
    test_redis_stop(r);
    if (r->dir[0])
        test_rm_tree(r->dir);
    r->dir[0] = '\0';
}
