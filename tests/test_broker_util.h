/* tests/test_broker_util.h — what the broker tests share: start/stop the real ember-broker
 * binary (its endpoints read from its "ready" line on stdout, its stderr kept in a file for the
 * exit counters), a client DEALER, and fake workers (raw DEALERs speaking the protocol) whose
 * results are deterministic functions of the token ids, so reassembly order is checkable:
 * row = [sum of ids, n ids, first id, last id, worker index, 0, ...].
 * Single-threaded: the test thread services the fake workers while it waits for replies. */
#ifndef EMBER_TESTS_TEST_BROKER_UTIL_H
#define EMBER_TESTS_TEST_BROKER_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <zmq.h>

#include "common/protocol.h"

typedef struct tb_broker {
    pid_t pid;
    int out_fd; /* its stdout */
    char front[256], back[256];
    char err_path[512]; /* its stderr */
} tb_broker_t;

/* Starts bin with the model dir and args (NULL-terminated), binding tcp://127.0.0.1:*.
 * Returns 0 when its ready line arrived within 20 s. */
int tb_broker_start(tb_broker_t *bp, const char *bin, const char *name, const char *const *args);
/* Sends sig and waits up to wait_ms; returns the exit status (>= 0), 128 + signal when it died
 * of one, or -1 when it had to be killed. */
int tb_broker_stop(tb_broker_t *bp, int sig, int wait_ms);
/* A counter from the JSON line the broker printed at exit, or -1. */
long long tb_broker_counter(const tb_broker_t *bp, const char *name);
/* Prints the broker's stderr (on failure). */
void tb_broker_dump(const tb_broker_t *bp);

/* AUTO answers at once, HOLD keeps the answers for tb_worker_release, FAIL answers every chunk
 * with a failed result (INTERNAL). */
typedef enum { TB_AUTO = 0, TB_HOLD = 1, TB_FAIL = 2 } tb_mode_t;

#define TB_MAX_HELD 64

typedef struct tb_worker {
    void *sock;
    char wid[64];
    int index; /* written into every row */
    tb_mode_t mode;
    bool heartbeat; /* send hb every 50 ms */
    int64_t next_hb_us;
    uint32_t dim;
    com_proto_task_t task; /* set before tb_worker_start's ready: use tb_worker_start_task */
    int chunks_got;
    int seg_chunks;  /* chunks that carried "seg" */
    int att_seen[8]; /* chunks received per attempt */
    int n_held;
    com_proto_buf_t held[TB_MAX_HELD]; /* encoded results not sent yet (HOLD) */
    int disconnects, drains, hbs;
    char last_why[256];
} tb_worker_t;

void *tb_client(void *ctx, const char *ep);
/* Connects, sends ready (model, dim, credits). */
int tb_worker_start(tb_worker_t *w, void *ctx, const char *ep, const char *wid, int index,
                    const char *model, uint32_t dim, uint32_t credits, tb_mode_t mode);
/* Same with a task ("score": dim 1, a cross-encoder). */
int tb_worker_start_task(tb_worker_t *w, void *ctx, const char *ep, const char *wid, int index,
                         const char *model, uint32_t dim, uint32_t credits, tb_mode_t mode,
                         com_proto_task_t task);
void tb_worker_stop(tb_worker_t *w);
/* Receives everything pending; answers chunks (AUTO) or keeps the answers (HOLD). */
void tb_worker_service(tb_worker_t *w);
/* Sends the held results. */
void tb_worker_release(tb_worker_t *w);
/* Services the workers (array of n, may hold NULLs) for ms. */
void tb_pump(tb_worker_t **ws, int n, int ms);

/* Encodes m and sends it as one frame. 0 or -1. */
int tb_send(void *sock, const com_proto_msg_t *m);

typedef struct tb_reply {
    zmq_msg_t raw;
    com_proto_msg_t m; /* decoded (views into raw) */
    bool got;
    int64_t after_us; /* time waited */
} tb_reply_t;

/* Waits up to timeout_ms for one message on sock, servicing the workers meanwhile. */
bool tb_wait(void *sock, tb_worker_t **ws, int n, int timeout_ms, tb_reply_t *out);
void tb_reply_free(tb_reply_t *r);
/* The error code of a reply, 0 when it is not an error (or none came). */
uint32_t tb_code(const tb_reply_t *r);

/* The row a fake worker computes for ids[len] (dim floats). */
void tb_row(const int32_t *ids, int32_t len, int index, uint32_t dim, float *row);

#endif
