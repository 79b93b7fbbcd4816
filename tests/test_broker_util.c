/* tests/test_broker_util.c — see test_broker_util.h. */
#include "tests/test_broker_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "tests/test_util.h"

static void s_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int s_field(const char *line, const char *key, char *out, size_t cap) {
    const char *p = strstr(line, key);
    if (!p)
        return -1;
    p += strlen(key);
    size_t n = strcspn(p, " \n");
    if (n >= cap)
        return -1;
    memcpy(out, p, n);
    out[n] = 0;
    return 0;
}

int tb_broker_start(tb_broker_t *bp, const char *bin, const char *name, const char *const *args) {
    memset(bp, 0, sizeof *bp);
    snprintf(bp->err_path, sizeof bp->err_path, "%s/broker-%s-%d.err", test_data_dir(), name,
             (int)getpid());
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--frontend";
    argv[n++] = "tcp://127.0.0.1:*";
    argv[n++] = "--backend";
    argv[n++] = "tcp://127.0.0.1:*";
    argv[n++] = "--model";
    argv[n++] = test_model_dir();
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(p[1], 1);
        int fd = open(bp->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        close(p[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    bp->pid = pid;
    bp->out_fd = p[0];
    char line[2048];
    size_t got = 0;
    int64_t end = com_clock_mono_us() + 20 * 1000000LL;
    while (com_clock_mono_us() < end && got < sizeof line - 1) {
        struct pollfd pfd = {p[0], POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t r = read(p[0], line + got, sizeof line - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        line[got] = 0;
        if (strchr(line, '\n'))
            break;
    }
    line[got] = 0;
    if (s_field(line, "frontend=", bp->front, sizeof bp->front) != 0 ||
        s_field(line, "backend=", bp->back, sizeof bp->back) != 0) {
        fprintf(stderr, "broker did not start: '%s'\n", line);
        tb_broker_dump(bp);
        tb_broker_stop(bp, SIGKILL, 1000);
        return -1;
    }
    return 0;
}

int tb_broker_stop(tb_broker_t *bp, int sig, int wait_ms) {
    if (bp->pid <= 0)
        return -1;
    kill(bp->pid, sig);
    int status = 0;
    int64_t end = com_clock_mono_us() + (int64_t)wait_ms * 1000;
    int rc = -1;
    for (;;) {
        pid_t r = waitpid(bp->pid, &status, WNOHANG);
        if (r == bp->pid) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (com_clock_mono_us() > end) {
            kill(bp->pid, SIGKILL);
            waitpid(bp->pid, &status, 0);
            rc = -1;
            break;
        }
        s_sleep_ms(10);
    }
    bp->pid = 0;
    if (bp->out_fd >= 0)
        close(bp->out_fd);
    bp->out_fd = -1;
    return rc;
}

long long tb_broker_counter(const tb_broker_t *bp, const char *name) {
    FILE *f = fopen(bp->err_path, "r");
    if (!f)
        return -1;
    char line[8192], last[8192] = "";
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '{')
            snprintf(last, sizeof last, "%s", line);
    }
    fclose(f);
    json_error_t je;
    json_t *j = json_loads(last, 0, &je);
    if (!j)
        return -1;
    json_t *v = json_object_get(j, name);
    long long out = json_is_integer(v) ? (long long)json_integer_value(v) : -1;
    json_decref(j);
    return out;
}

void tb_broker_dump(const tb_broker_t *bp) {
    FILE *f = fopen(bp->err_path, "r");
    if (!f)
        return;
    char line[4096];
    fprintf(stderr, "---- broker stderr (%s) ----\n", bp->err_path);
    while (fgets(line, sizeof line, f))
        fputs(line, stderr);
    fprintf(stderr, "----\n");
    fclose(f);
}

void *tb_client(void *ctx, const char *ep) {
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_connect(s, ep);
    return s;
}

int tb_send(void *sock, const com_proto_msg_t *m) {
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    if (com_proto_encode(m, &buf, &err) != 0) {
        fprintf(stderr, "encode: %s\n", err.msg);
        return -1;
    }
    int rc = zmq_send(sock, buf.data, buf.len, 0) == (int)buf.len ? 0 : -1;
    com_proto_buf_free(&buf);
    return rc;
}

void tb_row(const int32_t *ids, int32_t len, int index, uint32_t dim, float *row) {
    memset(row, 0, dim * sizeof *row);
    double sum = 0;
    for (int32_t i = 0; i < len; i++)
        sum += ids[i];
    float v[5] = {(float)sum, (float)len, (float)ids[0], (float)ids[len - 1], (float)index};
    for (uint32_t k = 0; k < dim && k < 5; k++)
        row[k] = v[k];
}

int tb_worker_start(tb_worker_t *w, void *ctx, const char *ep, const char *wid, int index,
                    const char *model, uint32_t dim, uint32_t credits, tb_mode_t mode) {
    return tb_worker_start_task(w, ctx, ep, wid, index, model, dim, credits, mode,
                                COM_PROTO_TASK_EMBED);
}

int tb_worker_start_task(tb_worker_t *w, void *ctx, const char *ep, const char *wid, int index,
                         const char *model, uint32_t dim, uint32_t credits, tb_mode_t mode,
                         com_proto_task_t task) {
    memset(w, 0, sizeof *w);
    w->task = task;
    snprintf(w->wid, sizeof w->wid, "%s", wid);
    w->index = index;
    w->mode = mode;
    w->dim = dim;
    w->heartbeat = true;
    w->sock = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(w->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(w->sock, ZMQ_ROUTING_ID, wid, strlen(wid));
    if (zmq_connect(w->sock, ep) != 0)
        return -1;
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_READY, 1);
    m.u.ready.worker_id = (com_proto_str_t){w->wid, (uint32_t)strlen(w->wid)};
    m.u.ready.model = (com_proto_str_t){model, (uint32_t)strlen(model)};
    m.u.ready.family = (com_proto_str_t){"bert", 4};
    m.u.ready.device = (com_proto_str_t){"cpu", 3};
    m.u.ready.max_batch_tokens = 16384;
    m.u.ready.dim = dim;
    m.u.ready.max_seq = 512;
    m.u.ready.credits = credits;
    m.u.ready.task = task;
    return tb_send(w->sock, &m);
}

void tb_worker_stop(tb_worker_t *w) {
    for (int i = 0; i < w->n_held; i++)
        com_proto_buf_free(&w->held[i]);
    w->n_held = 0;
    if (w->sock)
        zmq_close(w->sock);
    w->sock = NULL;
}

/* Computes the result of a chunk. */
static int s_result(tb_worker_t *w, const com_proto_msg_t *m, com_proto_buf_t *out) {
    const com_proto_chunk_t *c = &m->u.chunk;
    uint32_t dim = c->dims ? c->dims : w->dim;
    size_t count = (size_t)c->in.n * dim;
    float *rows = malloc(count * sizeof *rows);
    uint8_t *packed = malloc(count * 4);
    if (!rows || !packed) {
        free(rows);
        free(packed);
        return -1;
    }
    for (uint32_t i = 0; i < c->in.n; i++)
        tb_row(c->in.ids + c->in.offs[i], c->in.offs[i + 1] - c->in.offs[i], w->index, dim,
               rows + (size_t)i * dim);
    com_proto_tensor_pack(rows, count, c->dtype, packed);
    com_proto_result_t r = {0};
    r.chunk_id = c->chunk_id;
    r.attempt = c->attempt;
    if (w->mode == TB_FAIL) {
        r.failed = true;
        r.err_code = COM_PROTO_INTERNAL;
        r.err_msg = (com_proto_str_t){"fake failure", 12};
        com_error_t e2 = {0};
        int rc2 = com_proto_encode_result(m->id, &r, out, &e2);
        free(rows);
        free(packed);
        return rc2;
    }
    r.emb = (com_proto_tensor_t){c->dtype, c->in.n, dim, packed,
                                 count * com_proto_dtype_size(c->dtype)};
    r.timing.compute_us = 100;
    com_error_t err = {0};
    int rc = com_proto_encode_result(m->id, &r, out, &err);
    free(rows);
    free(packed);
    return rc;
}

static void s_send_hb(tb_worker_t *w) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_HEARTBEAT, 2);
    tb_send(w->sock, &m);
}

void tb_worker_service(tb_worker_t *w) {
    if (!w || !w->sock)
        return;
    int64_t now = com_clock_mono_us();
    if (w->heartbeat && now >= w->next_hb_us) {
        s_send_hb(w);
        w->next_hb_us = now + 50000;
    }
    for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, w->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            return;
        }
        com_proto_msg_t m;
        com_error_t err = {0};
        if (com_proto_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), NULL, &m, &err) != 0) {
            fprintf(stderr, "fake worker %s: bad message from the broker: %s\n", w->wid, err.msg);
            test_checks_failed++;
            zmq_msg_close(&msg);
            continue;
        }
        switch (m.type) {
        case COM_PROTO_CHUNK: {
            w->chunks_got++;
            w->seg_chunks += m.u.chunk.seg != NULL;
            if (m.u.chunk.attempt < 8)
                w->att_seen[m.u.chunk.attempt]++;
            com_proto_buf_t buf = {0};
            if (s_result(w, &m, &buf) == 0) {
                if (w->mode != TB_HOLD || w->n_held >= TB_MAX_HELD) {
                    zmq_send(w->sock, buf.data, buf.len, 0);
                    com_proto_buf_free(&buf);
                } else {
                    w->held[w->n_held++] = buf;
                }
            }
            break;
        }
        case COM_PROTO_DISCONNECT:
            w->disconnects++;
            snprintf(w->last_why, sizeof w->last_why, "%.*s", (int)m.u.disconnect.reason.len,
                     m.u.disconnect.reason.ptr ? m.u.disconnect.reason.ptr : "");
            break;
        case COM_PROTO_DRAIN:
            w->drains++;
            break;
        case COM_PROTO_HEARTBEAT:
            w->hbs++;
            break;
        default:
            break;
        }
        com_proto_msg_free(&m);
        zmq_msg_close(&msg);
    }
}

void tb_worker_release(tb_worker_t *w) {
    for (int i = 0; i < w->n_held; i++) {
        zmq_send(w->sock, w->held[i].data, w->held[i].len, 0);
        com_proto_buf_free(&w->held[i]);
    }
    w->n_held = 0;
}

void tb_pump(tb_worker_t **ws, int n, int ms) {
    int64_t end = com_clock_mono_us() + (int64_t)ms * 1000;
    do {
        for (int i = 0; i < n; i++)
            tb_worker_service(ws[i]);
        s_sleep_ms(2);
    } while (com_clock_mono_us() < end);
}

bool tb_wait(void *sock, tb_worker_t **ws, int n, int timeout_ms, tb_reply_t *out) {
    memset(out, 0, sizeof *out);
    zmq_msg_init(&out->raw);
    int64_t t0 = com_clock_mono_us();
    int64_t end = t0 + (int64_t)timeout_ms * 1000;
    while (com_clock_mono_us() < end) {
        for (int i = 0; i < n; i++)
            tb_worker_service(ws[i]);
        zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 2) > 0 && zmq_msg_recv(&out->raw, sock, ZMQ_DONTWAIT) >= 0) {
            com_error_t err = {0};
            out->after_us = com_clock_mono_us() - t0;
            if (com_proto_decode(zmq_msg_data(&out->raw), zmq_msg_size(&out->raw), NULL, &out->m,
                                 &err) != 0) {
                fprintf(stderr, "bad reply from the broker: %s\n", err.msg);
                return false;
            }
            out->got = true;
            return true;
        }
    }
    return false;
}

void tb_reply_free(tb_reply_t *r) {
    if (r->got)
        com_proto_msg_free(&r->m);
    zmq_msg_close(&r->raw);
    r->got = false;
}

uint32_t tb_code(const tb_reply_t *r) {
    if (!r->got || r->m.type != COM_PROTO_ERROR)
        return 0;
    return r->m.u.error.code;
}
