/* tests/test_worker.c — the real ember-worker binary against a fake broker: a ROUTER socket in
 * this process, bound on tcp://127.0.0.1:*, speaking the protocol (docs/pool.md), with the real
 * model on the CPU. Usage: test_worker SCENARIO PATH_TO_EMBER_WORKER, scenarios:
 *   basic  ready fields; results equal the engine run in-process on the same ids (f32, and f16
 *          with dims + norm); many chunks of different sizes in flight (split across batches,
 *          mixed options), each answered exactly once; credits in ready and heartbeats
 *   faults ready re-sent until answered; bad chunks (ids out of vocab, too long, dims too wide,
 *          undecodable but addressable) -> failed results and the next good chunk works;
 *          garbage frames ignored; heartbeat interval; deadline drop; over-credit refusal;
 *          broker silence -> ready again; "disconnect: unknown worker" -> ready again
 *   drain  SIGTERM with chunks in flight: drain, every result, then disconnect, exit 0, the
 *          counters line on stderr; a chunk sent while draining gets UNAVAILABLE
 *   cuda   --device cuda:99 (no such GPU anywhere) fails at start with a clear message and
 *          exit code 4; a malformed device is a usage error (2)
 *   redis  registration (state, counters moving), Redis stopped mid-run does not stop results,
 *          re-registration, deregistration at exit, broker discovery from Redis; a broker
 *          that leaves Redis gets disconnect and its link is closed (no heartbeats after, chunks
 *          it held answered nowhere), and a broker that comes back is connected again
 * Each scenario starts its own worker process with a 100 ms heartbeat. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/error.h"
#include "kernels/blas_core.h"
#include "common/protocol.h"
#include "common/registry.h"
#include "common/tokenizer.h"
#include "tests/test_redis.h"
#include "tests/test_util.h"
#include "worker/engine.h"

#define HB_MS 100

static const char *g_worker_bin;
static wrk_engine_t *g_ref; /* in-process reference engine */
static com_tokenizer_t *g_tok;
static int32_t g_dim, g_msl, g_vocab;

static void s_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int64_t s_ms(void) {
    return com_clock_mono_us() / 1000;
}

/* ------------------------------------------------------------------ worker process */

typedef struct proc {
    pid_t pid;
    char log[512];
    int status; /* after s_proc_wait */
} proc_t;

/* Starts ember-worker with args (NULL-terminated); stdout/stderr go to a log file. */
static int s_proc_start(proc_t *p, const char *name, const char *const *args) {
    memset(p, 0, sizeof *p);
    snprintf(p->log, sizeof p->log, "%s/worker_%s_%ld.log", test_data_dir(), name, (long)getpid());
    const char *argv[48];
    int n = 0;
    argv[n++] = g_worker_bin;
    for (int i = 0; args[i] && n < 46; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(g_worker_bin, (char *const *)argv);
        fprintf(stderr, "cannot exec %s\n", g_worker_bin);
        _exit(127);
    }
    p->pid = pid;
    return 0;
}

/* Waits up to timeout_ms for the process to exit. 1 exited (status in p->status), 0 not. */
static int s_proc_wait(proc_t *p, int timeout_ms) {
    int64_t end = s_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            p->status = st;
            p->pid = 0;
            return 1;
        }
        if (s_ms() >= end)
            return 0;
        s_sleep_ms(10);
    }
}

static void s_proc_kill(proc_t *p) {
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        s_proc_wait(p, 5000);
    }
}

/* Reads the log into a malloc'd string. */
static char *s_read_log(const proc_t *p) {
    FILE *f = fopen(p->log, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    if (buf)
        buf[got] = '\0';
    return buf;
}

static void s_dump_log(const proc_t *p) {
    char *s = s_read_log(p);
    fprintf(stderr, "---- %s ----\n%s\n---- end ----\n", p->log, s ? s : "(none)");
    free(s);
}

/* ------------------------------------------------------------------ fake broker */

typedef struct rmsg {
    uint8_t *buf;
    size_t len;
    com_proto_msg_t m;
    int rc; /* decode result */
    char ident[128];
} rmsg_t;

static void s_rmsg_free(rmsg_t *r) {
    com_proto_msg_free(&r->m);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

typedef struct broker {
    void *ctx, *sock;
    char ep[128];
    char wid[128]; /* the worker's routing id, once known */
    bool auto_hb;  /* answer by sending hb every HB_MS while receiving */
    int64_t last_hb_ms;
    uint64_t seq;
    int n_hb, n_ready, n_other; /* messages seen by s_br_recv */
    uint64_t last_hb_done;
    uint32_t last_hb_cred;
} broker_t;

static int s_br_open(broker_t *b) {
    memset(b, 0, sizeof *b);
    b->ctx = zmq_ctx_new();
    b->sock = zmq_socket(b->ctx, ZMQ_ROUTER);
    int one = 1, zero = 0;
    zmq_setsockopt(b->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(b->sock, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(b->sock, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(b->sock, "tcp://127.0.0.1:*") != 0)
        return -1;
    size_t len = sizeof b->ep;
    zmq_getsockopt(b->sock, ZMQ_LAST_ENDPOINT, b->ep, &len);
    b->auto_hb = true;
    return 0;
}

static void s_br_close(broker_t *b) {
    if (b->sock)
        zmq_close(b->sock);
    if (b->ctx)
        zmq_ctx_term(b->ctx);
    memset(b, 0, sizeof *b);
}

/* Sends raw frames to the worker: ident + parts. */
static int s_br_send_raw(broker_t *b, const void *const *parts, const size_t *lens, int n) {
    if (zmq_send(b->sock, b->wid, strlen(b->wid), ZMQ_SNDMORE) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (zmq_send(b->sock, parts[i], lens[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
            return -1;
    return 0;
}

static int s_br_send_buf(broker_t *b, const com_proto_buf_t *buf) {
    const void *p[1] = {buf->data};
    size_t l[1] = {buf->len};
    return s_br_send_raw(b, p, l, 1);
}

static int s_br_send_msg(broker_t *b, const com_proto_msg_t *m) {
    com_proto_buf_t buf;
    com_error_t err;
    if (com_proto_encode(m, &buf, &err) != 0) {
        fprintf(stderr, "encode: %s\n", err.msg);
        return -1;
    }
    int rc = s_br_send_buf(b, &buf);
    com_proto_buf_free(&buf);
    return rc;
}

static void s_br_send_hb(broker_t *b) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_HEARTBEAT, ++b->seq);
    m.u.hb.credits = 0;
    s_br_send_msg(b, &m);
    b->last_hb_ms = s_ms();
}

static void s_br_send_notice(broker_t *b, com_proto_type_t t, const char *why) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, t, ++b->seq);
    com_proto_notice_t *nt = t == COM_PROTO_DRAIN ? &m.u.drain : &m.u.disconnect;
    nt->reason.ptr = why;
    nt->reason.len = (uint32_t)strlen(why);
    s_br_send_msg(b, &m);
}

/* Receives one message within timeout_ms (sending heartbeats meanwhile when auto_hb). Returns 1
 * with *out (free with s_rmsg_free), 0 on timeout. Heartbeats are counted and returned too. */
static int s_br_recv(broker_t *b, int timeout_ms, rmsg_t *out) {
    memset(out, 0, sizeof *out);
    int64_t end = s_ms() + timeout_ms;
    for (;;) {
        int64_t now = s_ms();
        if (b->auto_hb && b->wid[0] && now - b->last_hb_ms >= HB_MS)
            s_br_send_hb(b);
        if (now >= end)
            return 0;
        int64_t wait = end - now;
        if (b->auto_hb && b->wid[0] && wait > HB_MS / 2)
            wait = HB_MS / 2;
        zmq_pollitem_t it = {.socket = b->sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, (long)wait) <= 0)
            continue;
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&id, b->sock, 0) < 0) {
            zmq_msg_close(&id);
            zmq_msg_close(&body);
            continue;
        }
        int more = zmq_msg_more(&id);
        size_t idl = zmq_msg_size(&id);
        if (idl >= sizeof out->ident)
            idl = sizeof out->ident - 1;
        memcpy(out->ident, zmq_msg_data(&id), idl);
        out->ident[idl] = '\0';
        zmq_msg_close(&id);
        if (!more) {
            zmq_msg_close(&body);
            fprintf(stderr, "broker: message without a body\n");
            continue;
        }
        zmq_msg_recv(&body, b->sock, 0);
        CHECK_MSG(!zmq_msg_more(&body), "worker sent a multipart message");
        while (zmq_msg_more(&body)) {
            zmq_msg_close(&body);
            zmq_msg_init(&body);
            zmq_msg_recv(&body, b->sock, 0);
        }
        out->len = zmq_msg_size(&body);
        out->buf = malloc(out->len ? out->len : 1);
        memcpy(out->buf, zmq_msg_data(&body), out->len);
        zmq_msg_close(&body);
        com_error_t err = {0};
        out->rc = com_proto_decode(out->buf, out->len, NULL, &out->m, &err);
        CHECK_MSG(out->rc == 0, "worker sent an undecodable message: %s", err.msg);
        if (out->rc == 0 && out->m.type == COM_PROTO_HEARTBEAT) {
            b->n_hb++;
            b->last_hb_done = out->m.u.hb.batches_done;
            b->last_hb_cred = out->m.u.hb.credits;
        } else if (out->rc == 0 && out->m.type == COM_PROTO_READY) {
            b->n_ready++;
        } else {
            b->n_other++;
        }
        return 1;
    }
}

/* Waits for a message of type t (others dropped). 1 found, 0 timeout. */
static int s_br_wait(broker_t *b, com_proto_type_t t, int timeout_ms, rmsg_t *out) {
    int64_t end = s_ms() + timeout_ms;
    for (;;) {
        int64_t left = end - s_ms();
        if (left <= 0)
            return 0;
        if (!s_br_recv(b, (int)left, out))
            return 0;
        if (out->rc == 0 && out->m.type == t)
            return 1;
        s_rmsg_free(out);
    }
}

/* Waits for the worker's ready, records its id, answers with a heartbeat. */
static int s_br_handshake(broker_t *b, rmsg_t *ready_out, int timeout_ms) {
    rmsg_t r;
    if (!s_br_wait(b, COM_PROTO_READY, timeout_ms, &r))
        return -1;
    snprintf(b->wid, sizeof b->wid, "%s", r.ident);
    s_br_send_hb(b);
    if (ready_out)
        *ready_out = r;
    else
        s_rmsg_free(&r);
    return 0;
}

/* ------------------------------------------------------------------ chunks and references */

typedef struct seqs {
    int32_t n;
    int32_t *ids;  /* [offs[n]] */
    int32_t *offs; /* [n + 1] */
} seqs_t;

static void s_seqs_free(seqs_t *s) {
    free(s->ids);
    free(s->offs);
    memset(s, 0, sizeof *s);
}

static const char *const g_words[] = {
    "ember",  "serves",  "embeddings", "from",    "a",      "pool",   "of",      "workers",
    "behind", "brokers", "the",        "quick",   "brown",  "fox",    "jumps",   "over",
    "lazy",   "dog",     "zeromq",     "carries", "chunks", "tokens", "batches", "first",
    "come",   "served",  "latency",    "follows", "number"};

/* n texts, text i with words_base + (i * 7 % spread) words, tokenized (truncated to msl). */
static seqs_t s_make_seqs(int32_t n, int32_t words_base, int32_t spread, uint32_t seed) {
    seqs_t s = {.n = n};
    s.offs = calloc((size_t)n + 1, sizeof *s.offs);
    size_t cap = 1024, used = 0;
    s.ids = malloc(cap * sizeof *s.ids);
    com_encoding_t enc;
    com_encoding_init(&enc);
    com_encode_opts_t eo = com_encode_opts_default();
    eo.max_length = g_msl;
    eo.truncate = true;
    const int nw = (int)(sizeof g_words / sizeof g_words[0]);
    for (int32_t i = 0; i < n; i++) {
        char text[8192];
        size_t tl = 0;
        int32_t words =
            words_base + (spread > 0 ? (int32_t)((i * 7u + seed) % (uint32_t)spread) : 0);
        for (int32_t w = 0; w < words && tl + 32 < sizeof text; w++) {
            const char *word =
                g_words[(seed + (uint32_t)i * 13u + (uint32_t)w * 5u) % (uint32_t)nw];
            tl += (size_t)snprintf(text + tl, sizeof text - tl, "%s%s", w ? " " : "", word);
        }
        com_error_t err = {0};
        if (com_tokenizer_encode(g_tok, text, tl, &eo, &enc, &err) != 0) {
            fprintf(stderr, "tokenize: %s\n", err.msg);
            abort();
        }
        if (used + (size_t)enc.len > cap) {
            while (used + (size_t)enc.len > cap)
                cap *= 2;
            s.ids = realloc(s.ids, cap * sizeof *s.ids);
        }
        memcpy(s.ids + used, enc.ids, (size_t)enc.len * sizeof *s.ids);
        used += (size_t)enc.len;
        s.offs[i + 1] = (int32_t)used;
    }
    com_encoding_free(&enc);
    return s;
}

/* Sequences of exactly len synthetic ids each ([CLS] ... [SEP]). */
static seqs_t s_make_long(int32_t n, int32_t len) {
    seqs_t s = {.n = n};
    s.offs = calloc((size_t)n + 1, sizeof *s.offs);
    s.ids = malloc((size_t)n * (size_t)len * sizeof *s.ids);
    for (int32_t i = 0; i < n; i++) {
        for (int32_t t = 0; t < len; t++) {
            int32_t v = 1000 + (int32_t)(((uint32_t)i * 131u + (uint32_t)t * 17u) % 20000u);
            s.ids[i * len + t] = t == 0 ? 101 : t == len - 1 ? 102 : v;
        }
        s.offs[i + 1] = (i + 1) * len;
    }
    return s;
}

typedef struct copts {
    int32_t norm; /* -1 default */
    uint32_t dims;
    com_proto_dtype_t dt;
    uint32_t dl;
} copts_t;

static const copts_t COPTS_DEFAULT = {.norm = -1, .dims = 0, .dt = COM_PROTO_F32, .dl = 0};

static int s_send_chunk(broker_t *b, uint64_t id, uint32_t cid, const seqs_t *s, copts_t o) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_CHUNK, id);
    m.u.chunk.chunk_id = cid;
    m.u.chunk.attempt = 0;
    m.u.chunk.in.kind = COM_PROTO_IN_IDS;
    m.u.chunk.in.n = (uint32_t)s->n;
    m.u.chunk.in.ids = s->ids;
    m.u.chunk.in.offs = s->offs;
    m.u.chunk.normalize = o.norm;
    m.u.chunk.dims = o.dims;
    m.u.chunk.dtype = o.dt;
    m.u.chunk.deadline_ms = o.dl;
    return s_br_send_msg(b, &m);
}

/* The reference: the same ids through the in-process engine. Returns [n, dim] floats. */
static float *s_reference(const seqs_t *s, copts_t o, int32_t *dim_out) {
    wrk_batch_t bt = {.n_seqs = s->n,
                      .n_tokens = s->offs[s->n],
                      .token_ids = s->ids,
                      .cu_seqlens = s->offs,
                      .out_dim = (int32_t)o.dims,
                      .normalize = o.norm};
    wrk_result_t *r = NULL;
    com_error_t err = {0};
    if (wrk_engine_submit(g_ref, &bt, &r, &err) != 0 || wrk_result_wait(r, &err) != 0) {
        fprintf(stderr, "reference: %s\n", err.msg);
        wrk_result_destroy(&r);
        return NULL;
    }
    int32_t n = 0, dim = 0;
    const float *e = wrk_result_embeddings(r, &n, &dim);
    float *out = malloc((size_t)n * (size_t)dim * sizeof *out);
    memcpy(out, e, (size_t)n * (size_t)dim * sizeof *out);
    *dim_out = dim;
    wrk_result_destroy(&r);
    return out;
}

/* Checks a successful result against the reference for s with options o. */
static void s_check_result(const com_proto_result_t *res, const seqs_t *s, copts_t o,
                           const char *what) {
    CHECK_MSG(!res->failed, "%s: failed: %s %.*s", what, com_proto_code_name(res->err_code),
              (int)res->err_msg.len, res->err_msg.ptr ? res->err_msg.ptr : "");
    if (res->failed)
        return;
    int32_t rdim = 0;
    float *ref = s_reference(s, o, &rdim);
    CHECK(ref != NULL);
    if (!ref)
        return;
    CHECK_MSG(res->emb.n == (uint32_t)s->n && res->emb.dim == (uint32_t)rdim,
              "%s: got [%u, %u], want [%d, %d]", what, res->emb.n, res->emb.dim, (int)s->n,
              (int)rdim);
    CHECK_MSG(res->emb.dtype == o.dt, "%s: dtype %d, want %d", what, (int)res->emb.dtype,
              (int)o.dt);
    if (res->emb.n == (uint32_t)s->n && res->emb.dim == (uint32_t)rdim) {
        float *got = malloc((size_t)s->n * (size_t)rdim * sizeof *got);
        com_proto_tensor_unpack(&res->emb, got);
        double worst = 1.0;
        for (int32_t i = 0; i < s->n; i++) {
            double c = test_cosine_f32(got + (size_t)i * (size_t)rdim,
                                       ref + (size_t)i * (size_t)rdim, (size_t)rdim);
            if (c < worst)
                worst = c;
        }
        CHECK_MSG(worst >= 0.99999, "%s: worst row cosine %.7f", what, worst);
        if (o.dt == COM_PROTO_F32) {
            test_cmp_t cmp =
                test_compare_f32(what, got, ref, (size_t)s->n * (size_t)rdim, 1e-4, 1e-3);
            CHECK_MSG(cmp.n_bad == 0, "%s: %zu elements off", what, cmp.n_bad);
        }
        free(got);
    }
    free(ref);
}

/* ------------------------------------------------------------------ scenario: basic */

static void s_worker_args(const char **args, int *n, const char *ep, const char *extra[]) {
    int k = 0;
    args[k++] = "--broker";
    args[k++] = ep;
    args[k++] = "--model";
    args[k++] = test_model_dir();
    args[k++] = "--device";
    args[k++] = "cpu";
    args[k++] = "--heartbeat-ms";
    args[k++] = "100";
    args[k++] = "--threads";
    args[k++] = "2";
    for (int i = 0; extra && extra[i]; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    *n = k;
}

static int s_start(proc_t *p, broker_t *b, const char *name, const char *extra[]) {
    const char *args[40];
    int n;
    s_worker_args(args, &n, b->ep, extra);
    if (s_proc_start(p, name, args) != 0)
        return -1;
    return 0;
}

/* Ends a worker with SIGTERM, expecting exit 0; dumps the log when it does not. */
static void s_stop(proc_t *p) {
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGTERM);
    int exited = s_proc_wait(p, 30000);
    CHECK_MSG(exited && WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0,
              "worker did not drain and exit 0 (exited %d, status 0x%x)", exited, p->status);
    if (!exited) {
        s_proc_kill(p);
        s_dump_log(p);
    } else if (!WIFEXITED(p->status) || WEXITSTATUS(p->status) != 0) {
        s_dump_log(p);
    }
}

typedef struct pending {
    uint64_t id;
    uint32_t cid;
    seqs_t s;
    copts_t o;
    int answers;
    bool want_ok;
} pending_t;

static void s_scenario_basic(void) {
    broker_t b;
    CHECK(s_br_open(&b) == 0);
    proc_t p;
    const char *extra[] = {"--id", "test-worker-basic", "--credits", "4", "--max-batch-tokens",
                           "512",  "--model-name",      "minilm",    NULL};
    CHECK(s_start(&p, &b, "basic", extra) == 0);
    rmsg_t r;
    if (s_br_handshake(&b, &r, 60000) != 0) {
        CHECK_MSG(0, "no ready from the worker");
        s_proc_kill(&p);
        s_dump_log(&p);
        s_br_close(&b);
        return;
    }
    const com_proto_ready_t *rd = &r.m.u.ready;
    CHECK(strcmp(r.ident, "test-worker-basic") == 0);
    CHECK(rd->worker_id.len == strlen("test-worker-basic") &&
          memcmp(rd->worker_id.ptr, "test-worker-basic", rd->worker_id.len) == 0);
    CHECK(rd->model.len == 6 && memcmp(rd->model.ptr, "minilm", 6) == 0);
    CHECK(rd->family.len == 4 && memcmp(rd->family.ptr, "bert", 4) == 0);
    CHECK(rd->device.len == 3 && memcmp(rd->device.ptr, "cpu", 3) == 0);
    CHECK(rd->max_batch_tokens == 512);
    CHECK(rd->dim == (uint32_t)g_dim);
    CHECK(rd->max_seq == (uint32_t)g_msl);
    CHECK(rd->credits == 4);
    CHECK(rd->task == COM_PROTO_TASK_EMBED);
    s_rmsg_free(&r);

    /* one chunk, f32, default options */
    seqs_t s1 = s_make_seqs(5, 3, 20, 1);
    CHECK(s_send_chunk(&b, 1001, 0, &s1, COPTS_DEFAULT) == 0);
    if (s_br_wait(&b, COM_PROTO_RESULT, 30000, &r)) {
        CHECK(r.m.id == 1001 && r.m.u.result.chunk_id == 0 && r.m.u.result.attempt == 0);
        s_check_result(&r.m.u.result, &s1, COPTS_DEFAULT, "f32 chunk");
        s_rmsg_free(&r);
    } else {
        CHECK_MSG(0, "no result for the f32 chunk");
    }
    /* f16, Matryoshka 128, normalised */
    copts_t o16 = {.norm = 1, .dims = 128, .dt = COM_PROTO_F16};
    CHECK(s_send_chunk(&b, 1002, 3, &s1, o16) == 0);
    if (s_br_wait(&b, COM_PROTO_RESULT, 30000, &r)) {
        CHECK(r.m.id == 1002 && r.m.u.result.chunk_id == 3);
        s_check_result(&r.m.u.result, &s1, o16, "f16 dims 128 chunk");
        s_rmsg_free(&r);
    } else {
        CHECK_MSG(0, "no result for the f16 chunk");
    }
    /* raw (norm false) f32 */
    copts_t oraw = {.norm = 0, .dims = 0, .dt = COM_PROTO_F32};
    CHECK(s_send_chunk(&b, 1003, 1, &s1, oraw) == 0);
    if (s_br_wait(&b, COM_PROTO_RESULT, 30000, &r)) {
        s_check_result(&r.m.u.result, &s1, oraw, "raw chunk");
        s_rmsg_free(&r);
    } else {
        CHECK_MSG(0, "no result for the raw chunk");
    }
    s_seqs_free(&s1);

    /* many chunks in flight, up to the credits (4), different sizes and options; sizes over the
     * 512-token budget are split across batches */
    enum { N_CHUNKS = 24, CREDITS = 4 };
    pending_t pend[N_CHUNKS];
    for (int i = 0; i < N_CHUNKS; i++) {
        pend[i].id = 2000 + (uint64_t)(i / 3);
        pend[i].cid = (uint32_t)(i % 3);
        pend[i].s = (i % 5 == 4) ? s_make_long(3, g_msl)
                                 : s_make_seqs(1 + (i * 5) % 11, 2, 60, (uint32_t)i);
        copts_t o = COPTS_DEFAULT;
        if (i % 4 == 1)
            o.norm = 0;
        if (i % 6 == 2)
            o.dims = 64;
        if (i % 3 == 0)
            o.dt = COM_PROTO_F16;
        pend[i].o = o;
        pend[i].answers = 0;
    }
    int sent = 0, answered = 0, outstanding = 0, extra_answers = 0;
    int64_t end = s_ms() + 120000;
    while (answered < N_CHUNKS && s_ms() < end) {
        while (outstanding < CREDITS && sent < N_CHUNKS) {
            CHECK(s_send_chunk(&b, pend[sent].id, pend[sent].cid, &pend[sent].s, pend[sent].o) ==
                  0);
            sent++;
            outstanding++;
        }
        if (!s_br_wait(&b, COM_PROTO_RESULT, (int)(end - s_ms()), &r))
            break;
        int found = -1;
        for (int i = 0; i < sent; i++)
            if (pend[i].id == r.m.id && pend[i].cid == r.m.u.result.chunk_id)
                found = i;
        CHECK_MSG(found >= 0, "result for an unknown chunk %llu/%u", (unsigned long long)r.m.id,
                  r.m.u.result.chunk_id);
        if (found >= 0) {
            if (pend[found].answers++ == 0) {
                answered++;
                outstanding--;
                char what[64];
                snprintf(what, sizeof what, "in-flight chunk %d", found);
                s_check_result(&r.m.u.result, &pend[found].s, pend[found].o, what);
            } else {
                extra_answers++;
            }
        }
        s_rmsg_free(&r);
    }
    CHECK_MSG(answered == N_CHUNKS, "%d of %d chunks answered", answered, N_CHUNKS);
    /* nothing more may come: each chunk exactly once */
    int64_t quiet_end = s_ms() + 500;
    while (s_ms() < quiet_end) {
        if (s_br_recv(&b, (int)(quiet_end - s_ms()), &r)) {
            if (r.rc == 0 && r.m.type == COM_PROTO_RESULT)
                extra_answers++;
            s_rmsg_free(&r);
        }
    }
    CHECK_MSG(extra_answers == 0, "%d duplicate results", extra_answers);
    for (int i = 0; i < N_CHUNKS; i++)
        s_seqs_free(&pend[i].s);
    /* heartbeats carry the credits and progress */
    CHECK_MSG(b.n_hb > 0, "no heartbeats");
    CHECK_MSG(b.last_hb_cred == 4, "hb credits %u", b.last_hb_cred);
    CHECK_MSG(b.last_hb_done >= 10, "hb batches done %llu", (unsigned long long)b.last_hb_done);
    s_stop(&p);
    char *log = s_read_log(&p);
    CHECK_MSG(log && strstr(log, "\"chunks_done\":27"), "counters line missing or wrong");
    free(log);
    s_br_close(&b);
}

/* ------------------------------------------------------------------ scenario: faults */

static int s_expect_failed(broker_t *b, uint64_t id, uint32_t cid, uint32_t code,
                           const char *what) {
    rmsg_t r;
    if (!s_br_wait(b, COM_PROTO_RESULT, 30000, &r)) {
        CHECK_MSG(0, "%s: no result", what);
        return -1;
    }
    CHECK_MSG(r.m.id == id && r.m.u.result.chunk_id == cid, "%s: result for %llu/%u", what,
              (unsigned long long)r.m.id, r.m.u.result.chunk_id);
    CHECK_MSG(r.m.u.result.failed && r.m.u.result.err_code == code, "%s: failed %d code %s", what,
              (int)r.m.u.result.failed, com_proto_code_name(r.m.u.result.err_code));
    s_rmsg_free(&r);
    return 0;
}

static void s_expect_ok(broker_t *b, uint64_t id, uint32_t cid, const seqs_t *s, copts_t o,
                        const char *what) {
    rmsg_t r;
    if (!s_br_wait(b, COM_PROTO_RESULT, 30000, &r)) {
        CHECK_MSG(0, "%s: no result", what);
        return;
    }
    CHECK_MSG(r.m.id == id && r.m.u.result.chunk_id == cid, "%s: result for %llu/%u", what,
              (unsigned long long)r.m.id, r.m.u.result.chunk_id);
    s_check_result(&r.m.u.result, s, o, what);
    s_rmsg_free(&r);
}

static void s_scenario_faults(void) {
    broker_t b;
    CHECK(s_br_open(&b) == 0);
    proc_t p;
    const char *extra[] = {"--credits", "4", "--max-batch-tokens", "512", "--max-inflight",
                           "3",         NULL};
    CHECK(s_start(&p, &b, "faults", extra) == 0);
    rmsg_t r;
    /* ready is re-sent until the broker answers */
    b.auto_hb = false;
    if (!s_br_wait(&b, COM_PROTO_READY, 60000, &r)) {
        CHECK_MSG(0, "no ready");
        s_proc_kill(&p);
        s_dump_log(&p);
        s_br_close(&b);
        return;
    }
    snprintf(b.wid, sizeof b.wid, "%s", r.ident);
    CHECK_MSG(strncmp(b.wid, "", 1) != 0 && strchr(b.wid, '-') != NULL, "worker id \"%s\"", b.wid);
    s_rmsg_free(&r);
    int64_t t0 = s_ms();
    CHECK_MSG(s_br_wait(&b, COM_PROTO_READY, 2000, &r), "ready not re-sent while unanswered");
    if (r.buf) {
        int64_t dt = s_ms() - t0;
        CHECK_MSG(dt >= 50 && dt <= 1000, "ready re-sent after %lld ms", (long long)dt);
        s_rmsg_free(&r);
    }
    b.auto_hb = true;
    s_br_send_hb(&b);

    seqs_t good = s_make_seqs(3, 4, 10, 7);
    /* ids out of the vocabulary */
    seqs_t bad = s_make_seqs(2, 4, 3, 3);
    bad.ids[1] = g_vocab + 5;
    CHECK(s_send_chunk(&b, 3001, 0, &bad, COPTS_DEFAULT) == 0);
    CHECK(s_send_chunk(&b, 3001, 1, &good, COPTS_DEFAULT) == 0);
    s_expect_failed(&b, 3001, 0, COM_PROTO_BAD_REQUEST, "id out of vocab");
    s_expect_ok(&b, 3001, 1, &good, COPTS_DEFAULT, "good chunk after a bad one");
    s_seqs_free(&bad);
    /* a sequence over the model's length */
    bad = s_make_long(1, g_msl + 1);
    CHECK(s_send_chunk(&b, 3002, 0, &bad, COPTS_DEFAULT) == 0);
    s_expect_failed(&b, 3002, 0, COM_PROTO_BAD_REQUEST, "sequence too long");
    s_seqs_free(&bad);
    /* dims wider than the model */
    copts_t wide = COPTS_DEFAULT;
    wide.dims = (uint32_t)g_dim + 1;
    CHECK(s_send_chunk(&b, 3003, 0, &good, wide) == 0);
    s_expect_failed(&b, 3003, 0, COM_PROTO_UNSUPPORTED, "dims too wide");

    /* garbage: random bytes, an empty frame, a multipart message, msgpack that is not a map,
     * and a chunk with a wrong type ("in": a string) that is still addressable */
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    const void *p1[1] = {junk};
    size_t l1[1] = {sizeof junk};
    CHECK(s_br_send_raw(&b, p1, l1, 1) == 0);
    const void *p0[1] = {""};
    size_t l0[1] = {0};
    CHECK(s_br_send_raw(&b, p0, l0, 1) == 0);
    const void *p2[2] = {junk, junk};
    size_t l2[2] = {8, 8};
    CHECK(s_br_send_raw(&b, p2, l2, 2) == 0);
    const uint8_t dd[5] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    const void *p3[1] = {dd};
    size_t l3[1] = {sizeof dd};
    CHECK(s_br_send_raw(&b, p3, l3, 1) == 0);
    /* {"v":1,"t":"chunk","id":3004,"cid":2,"att":1,"in":"x"} */
    const uint8_t badchunk[] = {0x86, 0xa1, 'v', 0x01, 0xa1, 't',  0xa5, 'c',  'h', 'u',  'n',
                                'k',  0xa2, 'i', 'd',  0xcd, 0x0b, 0xbc, 0xa3, 'c', 'i',  'd',
                                0x02, 0xa3, 'a', 't',  't',  0x01, 0xa2, 'i',  'n', 0xa1, 'x'};
    const void *p4[1] = {badchunk};
    size_t l4[1] = {sizeof badchunk};
    CHECK(s_br_send_raw(&b, p4, l4, 1) == 0);
    s_expect_failed(&b, 3004, 2, COM_PROTO_BAD_REQUEST, "undecodable but addressable chunk");
    CHECK(s_send_chunk(&b, 3005, 0, &good, COPTS_DEFAULT) == 0);
    s_expect_ok(&b, 3005, 0, &good, COPTS_DEFAULT, "good chunk after garbage");

    /* heartbeats at about the interval: count over one second */
    int hb0 = b.n_hb, ready_before = b.n_ready;
    int64_t w_end = s_ms() + 1000;
    while (s_ms() < w_end) {
        if (s_br_recv(&b, (int)(w_end - s_ms()), &r))
            s_rmsg_free(&r);
    }
    int hbs = b.n_hb - hb0;
    CHECK_MSG(hbs >= 6 && hbs <= 14, "%d heartbeats in 1 s at 100 ms", hbs);
    CHECK_MSG(b.n_ready == ready_before, "ready sent while the link was live");

    /* deadline: a chunk with 1 ms left waits behind a large chunk and is dropped at the head */
    seqs_t big = s_make_long(8, g_msl);
    copts_t dl = COPTS_DEFAULT;
    dl.dl = 1;
    CHECK(s_send_chunk(&b, 3006, 0, &big, COPTS_DEFAULT) == 0);
    CHECK(s_send_chunk(&b, 3007, 0, &good, dl) == 0);
    s_expect_failed(&b, 3007, 0, COM_PROTO_DEADLINE_EXCEEDED, "deadline");
    s_expect_ok(&b, 3006, 0, &big, COPTS_DEFAULT, "big chunk ahead of the deadline one");

    /* over credits: 4 credits, at most 2 x 4 held per broker; 10 sent at once */
    seqs_t med = s_make_long(2, g_msl);
    for (uint32_t i = 0; i < 10; i++)
        CHECK(s_send_chunk(&b, 3100, i, &med, COPTS_DEFAULT) == 0);
    int got[10] = {0}, n_ok = 0, n_over = 0, n_res = 0;
    int64_t oc_end = s_ms() + 120000;
    while (n_res < 10 && s_ms() < oc_end) {
        if (!s_br_wait(&b, COM_PROTO_RESULT, (int)(oc_end - s_ms()), &r))
            break;
        uint32_t cid = r.m.u.result.chunk_id;
        CHECK(r.m.id == 3100 && cid < 10);
        if (r.m.id == 3100 && cid < 10) {
            got[cid]++;
            n_res++;
            if (!r.m.u.result.failed)
                n_ok++;
            else if (r.m.u.result.err_code == COM_PROTO_OVERLOADED)
                n_over++;
        }
        s_rmsg_free(&r);
    }
    for (int i = 0; i < 10; i++)
        CHECK_MSG(got[i] == 1, "over-credit chunk %d answered %d times", i, got[i]);
    CHECK_MSG(n_ok + n_over == 10 && n_over >= 1 && n_over <= 2, "ok %d, overloaded %d", n_ok,
              n_over);
    s_seqs_free(&med);
    s_seqs_free(&big);

    /* broker silence: after three silent intervals the worker sends ready again */
    b.auto_hb = false;
    int64_t silent_from = b.last_hb_ms;
    int ready0 = b.n_ready;
    if (s_br_wait(&b, COM_PROTO_READY, 3000, &r)) {
        int64_t dt = s_ms() - silent_from;
        CHECK_MSG(dt >= 250 && dt <= 1500, "ready after %lld ms of silence", (long long)dt);
        s_rmsg_free(&r);
    } else {
        CHECK_MSG(0, "no ready after broker silence");
    }
    CHECK(b.n_ready == ready0 + 1);
    /* still no answer: ready keeps coming about every interval */
    CHECK_MSG(s_br_wait(&b, COM_PROTO_READY, 1000, &r), "ready not repeated");
    s_rmsg_free(&r);
    b.auto_hb = true;
    s_br_send_hb(&b);
    CHECK(s_send_chunk(&b, 3200, 0, &good, COPTS_DEFAULT) == 0);
    s_expect_ok(&b, 3200, 0, &good, COPTS_DEFAULT, "chunk after the broker came back");

    /* "disconnect: unknown worker" -> ready at once */
    s_br_send_notice(&b, COM_PROTO_DISCONNECT, "unknown worker");
    int64_t t1 = s_ms();
    if (s_br_wait(&b, COM_PROTO_READY, 2000, &r)) {
        int64_t dt = s_ms() - t1;
        CHECK_MSG(dt < 90, "ready %lld ms after disconnect (want at once)", (long long)dt);
        s_rmsg_free(&r);
    } else {
        CHECK_MSG(0, "no ready after disconnect: unknown worker");
    }
    s_br_send_hb(&b);
    CHECK(s_send_chunk(&b, 3201, 0, &good, COPTS_DEFAULT) == 0);
    s_expect_ok(&b, 3201, 0, &good, COPTS_DEFAULT, "chunk after re-registration");
    s_seqs_free(&good);

    s_stop(&p);
    char *log = s_read_log(&p);
    CHECK_MSG(log && strstr(log, "\"deadline_drops\":1,"), "deadline_drops counter");
    CHECK_MSG(log && strstr(log, "\"bad_frames\":2,"), "bad_frames counter");
    CHECK_MSG(log && strstr(log, "\"bad_msgs\":3,"), "bad_msgs counter");
    /* at least the silence above (the test's own reference runs may add more) */
    CHECK_MSG(log && strstr(log, "\"brokers_lost\":") &&
                  atoi(strstr(log, "\"brokers_lost\":") + 15) >= 1,
              "brokers_lost counter");
    free(log);
    s_br_close(&b);
}

/* ------------------------------------------------------------------ scenario: drain */

static void s_scenario_drain(void) {
    broker_t b;
    CHECK(s_br_open(&b) == 0);
    proc_t p;
    const char *extra[] = {"--credits", "4", "--max-batch-tokens", "1024", NULL};
    CHECK(s_start(&p, &b, "drain", extra) == 0);
    if (s_br_handshake(&b, NULL, 60000) != 0) {
        CHECK_MSG(0, "no ready");
        s_proc_kill(&p);
        s_dump_log(&p);
        s_br_close(&b);
        return;
    }
    seqs_t s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = s_make_long(4, g_msl);
        CHECK(s_send_chunk(&b, 4000, (uint32_t)i, &s[i], COPTS_DEFAULT) == 0);
    }
    s_sleep_ms(20); /* let the chunks arrive before the signal */
    kill(p.pid, SIGTERM);
    bool saw_drain = false, saw_disc = false, result_after_disc = false, late_sent = false;
    bool late_answered = false;
    int results = 0, readies_after_drain = 0;
    int64_t end = s_ms() + 120000;
    rmsg_t r;
    while (!saw_disc && s_ms() < end) {
        if (!s_br_recv(&b, (int)(end - s_ms()), &r))
            break;
        if (r.rc == 0) {
            switch (r.m.type) {
            case COM_PROTO_DRAIN:
                /* repeated after every ready the worker re-sends while draining */
                if (saw_drain)
                    break;
                saw_drain = true;
                if (results < 3) {
                    /* a chunk sent while draining is refused */
                    CHECK(s_send_chunk(&b, 4001, 0, &s[0], COPTS_DEFAULT) == 0);
                    late_sent = true;
                }
                break;
            case COM_PROTO_RESULT:
                if (saw_disc)
                    result_after_disc = true;
                if (r.m.id == 4001) {
                    CHECK(r.m.u.result.failed && r.m.u.result.err_code == COM_PROTO_UNAVAILABLE);
                    late_answered = true;
                } else {
                    CHECK_MSG(saw_drain, "result before drain");
                    uint32_t cid = r.m.u.result.chunk_id;
                    CHECK(r.m.id == 4000 && cid < 4);
                    if (cid < 4)
                        s_check_result(&r.m.u.result, &s[cid], COPTS_DEFAULT, "drained chunk");
                    results++;
                }
                break;
            case COM_PROTO_DISCONNECT:
                saw_disc = true;
                break;
            case COM_PROTO_READY:
                /* a ready re-sent while draining must not re-enlist the worker */
                if (saw_drain) {
                    readies_after_drain++;
                    CHECK_MSG(r.m.u.ready.credits == 0, "ready after drain offers %u credits",
                              r.m.u.ready.credits);
                }
                break;
            default:
                break;
            }
        }
        s_rmsg_free(&r);
    }
    printf("drain: %d ready message(s) re-sent while draining\n", readies_after_drain);
    CHECK(saw_drain);
    CHECK_MSG(results == 4, "%d of 4 results during drain", results);
    CHECK(saw_disc);
    CHECK(!result_after_disc);
    CHECK_MSG(late_sent && late_answered, "late chunk sent %d answered %d", late_sent,
              late_answered);
    int exited = s_proc_wait(&p, 30000);
    CHECK_MSG(exited && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0,
              "exit after drain: exited %d status 0x%x", exited, p.status);
    if (!exited)
        s_proc_kill(&p);
    char *log = s_read_log(&p);
    CHECK_MSG(log && strstr(log, "\"chunks_done\":4,") && strstr(log, "\"refused_draining\":1,"),
              "counters line");
    if (!log || !strstr(log, "\"chunks_done\":4,"))
        s_dump_log(&p);
    free(log);
    for (int i = 0; i < 4; i++)
        s_seqs_free(&s[i]);

    /* a second signal exits at once: SIGTERM twice while a long chunk is being computed */
    CHECK(s_start(&p, &b, "drain2", extra) == 0);
    b.wid[0] = '\0';
    if (s_br_handshake(&b, NULL, 60000) == 0) {
        seqs_t big = s_make_long(64, g_msl);
        CHECK(s_send_chunk(&b, 4100, 0, &big, COPTS_DEFAULT) == 0);
        s_sleep_ms(50);
        kill(p.pid, SIGTERM);
        s_sleep_ms(50);
        kill(p.pid, SIGTERM);
        int64_t t0 = s_ms();
        exited = s_proc_wait(&p, 5000);
        CHECK_MSG(exited && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 128 + SIGTERM,
                  "second signal: exited %d status 0x%x after %lld ms", exited, p.status,
                  (long long)(s_ms() - t0));
        s_seqs_free(&big);
    } else {
        CHECK_MSG(0, "no ready (second worker)");
    }
    s_proc_kill(&p);
    s_br_close(&b);
}

/* ------------------------------------------------------------------ scenario: cuda */

static void s_scenario_cuda(void) {
    proc_t p;
    const char *args[] = {"--broker", "tcp://127.0.0.1:1", "--model", test_model_dir(),
                          "--device", "cuda:99",           NULL};
    CHECK(s_proc_start(&p, "cuda", args) == 0);
    int exited = s_proc_wait(&p, 30000);
    CHECK_MSG(exited && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 4, "exit status 0x%x",
              p.status);
    char *log = s_read_log(&p);
    CHECK_MSG(log && (strstr(log, "cuda:99") || strstr(log, "no CUDA device")), "message: %s",
              log ? log : "(none)");
    free(log);
    if (!exited)
        s_proc_kill(&p);
    /* a malformed device is a usage error */
    const char *args2[] = {
        "--broker", "tcp://127.0.0.1:1", "--model", test_model_dir(), "--device", "gpu", NULL};
    CHECK(s_proc_start(&p, "cuda2", args2) == 0);
    exited = s_proc_wait(&p, 30000);
    CHECK(exited && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 2);
    if (!exited)
        s_proc_kill(&p);
    /* and batches in flight outside 1..8 */
    const char *args4[] = {"--broker",
                           "tcp://127.0.0.1:1",
                           "--model",
                           test_model_dir(),
                           "--device",
                           "cpu",
                           "--max-inflight",
                           "9",
                           NULL};
    CHECK(s_proc_start(&p, "inflight", args4) == 0);
    exited = s_proc_wait(&p, 30000);
    CHECK_MSG(exited && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 2,
              "--max-inflight 9: status 0x%x", p.status);
    if (!exited)
        s_proc_kill(&p);
    /* so is a malformed CUDA device or engine option (the engine parses both) */
    const char *args3[] = {
        "--broker", "tcp://127.0.0.1:1", "--model", test_model_dir(), "--device", "cuda:x", NULL};
    CHECK(s_proc_start(&p, "cuda3", args3) == 0);
    exited = s_proc_wait(&p, 30000);
    CHECK_MSG(exited && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 2, "cuda:x: status 0x%x",
              p.status);
    if (!exited)
        s_proc_kill(&p);
}

/* ------------------------------------------------------------------ scenario: redis */

/* Finds worker id in the registry; 1 found (copied into *out), 0 not, -1 Redis error. */
static int s_find_worker(com_registry_t *reg, const char *id, com_worker_record_t *out) {
    com_worker_record_t *recs = NULL;
    size_t n = 0;
    com_error_t err = {0};
    if (com_registry_list_workers(reg, &recs, &n, &err) != 0)
        return -1;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(recs[i].id, id) == 0) {
            *out = recs[i];
            found = 1;
        }
    }
    free(recs);
    return found;
}

/* Polls until pred(record) holds (or timeout), serving the broker meanwhile. */
static int s_wait_record(broker_t *b, com_registry_t *reg, const char *id, int64_t min_chunks,
                         int timeout_ms, com_worker_record_t *out) {
    int64_t end = s_ms() + timeout_ms;
    while (s_ms() < end) {
        if (s_find_worker(reg, id, out) == 1 && out->chunks_done >= min_chunks)
            return 1;
        rmsg_t r;
        if (s_br_recv(b, 100, &r))
            s_rmsg_free(&r);
    }
    return 0;
}

/* Discovery part two: the broker's record leaves Redis while the worker holds chunks from it.
 * The worker must send disconnect, close the link (no heartbeats or readies after), drop the
 * record's endpoint; when the record returns it connects again (a new ready), and the results of
 * the chunks held by the closed link never arrive on the new one. */
static void s_scenario_discovery_leave(broker_t *b2, proc_t *p, com_registry_t *reg,
                                       com_broker_record_t *br, const seqs_t *s) {
    com_error_t err = {0};
    /* as many long chunks as the worker takes (2 x credits), so that some are still held when
     * the link closes and when the broker comes back */
    seqs_t lng = s_make_long(8, g_msl);
    for (uint32_t i = 0; i < 8; i++)
        CHECK(s_send_chunk(b2, 6001, i, &lng, COPTS_DEFAULT) == 0);
    CHECK(com_registry_remove_broker(reg, br->id, &err) == 0);
    rmsg_t r;
    int old_results = 0;
    if (!s_br_wait(b2, COM_PROTO_DISCONNECT, 5000, &r)) {
        CHECK_MSG(0, "no disconnect after the broker left Redis");
        s_dump_log(p);
    } else {
        s_rmsg_free(&r);
    }
    /* then silence: six heartbeat intervals without a heartbeat or a ready */
    int n_hb = b2->n_hb, n_ready = b2->n_ready, n_other = b2->n_other;
    int64_t end = s_ms() + 6 * HB_MS;
    while (s_ms() < end) {
        if (s_br_recv(b2, (int)(end - s_ms()), &r)) {
            if (r.rc == 0 && r.m.type == COM_PROTO_RESULT && r.m.id == 6001)
                old_results++;
            s_rmsg_free(&r);
        }
    }
    CHECK_MSG(b2->n_hb == n_hb && b2->n_ready == n_ready && b2->n_other == n_other,
              "closed link still talks: %d heartbeats, %d readies, %d others", b2->n_hb - n_hb,
              b2->n_ready - n_ready, b2->n_other - n_other);
    com_worker_record_t rec;
    int64_t wend = s_ms() + 3000;
    int listed = 1;
    while (s_ms() < wend && listed) {
        listed = s_find_worker(reg, "test-worker-disc", &rec) == 1 && strstr(rec.brokers, b2->ep);
        if (listed)
            s_sleep_ms(50);
    }
    CHECK_MSG(!listed, "the worker's record still lists %s", b2->ep);
    /* the record returns: the worker connects again */
    CHECK(com_registry_put_broker(reg, br, 600000, &err) == 0);
    int got_ready = 0;
    end = s_ms() + 5000;
    while (!got_ready && s_ms() < end) {
        if (!s_br_recv(b2, (int)(end - s_ms()), &r))
            break;
        if (r.rc == 0 && r.m.type == COM_PROTO_READY)
            got_ready = 1;
        else if (r.rc == 0 && r.m.type == COM_PROTO_RESULT && r.m.id == 6001)
            old_results++;
        s_rmsg_free(&r);
    }
    CHECK_MSG(got_ready, "no ready after the broker came back to Redis");
    if (got_ready) {
        s_br_send_hb(b2);
        CHECK(s_send_chunk(b2, 6002, 0, s, COPTS_DEFAULT) == 0);
        /* the new chunk's result, and none of the old ones (they finish meanwhile) */
        int got_new = 0;
        end = s_ms() + 30000;
        while (s_ms() < end && !got_new) {
            if (!s_br_recv(b2, (int)(end - s_ms()), &r))
                break;
            if (r.rc == 0 && r.m.type == COM_PROTO_RESULT && r.m.id == 6001) {
                old_results++;
            } else if (r.rc == 0 && r.m.type == COM_PROTO_RESULT && r.m.id == 6002) {
                got_new = 1;
                s_check_result(&r.m.u.result, s, COPTS_DEFAULT, "chunk after re-discovery");
            }
            s_rmsg_free(&r);
        }
        CHECK_MSG(got_new, "no result on the re-discovered link");
        /* until the old chunks are done too (chunks 6000, 8 x 6001, 6002), and a little more */
        int64_t done_at = 0;
        end = s_ms() + 60000;
        while (s_ms() < end && (!done_at || s_ms() < done_at + 3 * HB_MS)) {
            if (!done_at && s_find_worker(reg, "test-worker-disc", &rec) == 1 &&
                rec.chunks_done >= 10)
                done_at = s_ms();
            if (s_br_recv(b2, HB_MS, &r)) {
                if (r.rc == 0 && r.m.type == COM_PROTO_RESULT && r.m.id == 6001)
                    old_results++;
                s_rmsg_free(&r);
            }
        }
        CHECK_MSG(done_at, "the old chunks never finished");
    }
    CHECK_MSG(old_results == 0,
              "%d results of chunks held by the closed link arrived after it closed", old_results);
    CHECK(s_find_worker(reg, "test-worker-disc", &rec) == 1 && strstr(rec.brokers, b2->ep));
    s_seqs_free(&lng);
}

static void s_scenario_redis(void) {
    test_redis_t rs;
    if (test_redis_start(&rs) != 0) {
        CHECK_MSG(0, "cannot start redis-server");
        return;
    }
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    CHECK(com_registry_new(rs.url, NULL, &reg, &err) == 0);
    broker_t b;
    CHECK(s_br_open(&b) == 0);
    proc_t p;
    const char *extra[] = {"--redis", rs.url, "--id", "test-worker-redis", NULL};
    CHECK(s_start(&p, &b, "redis", extra) == 0);
    if (s_br_handshake(&b, NULL, 60000) != 0) {
        CHECK_MSG(0, "no ready");
        s_proc_kill(&p);
        s_dump_log(&p);
        goto out;
    }
    com_worker_record_t rec;
    CHECK_MSG(s_wait_record(&b, reg, "test-worker-redis", 0, 5000, &rec), "not registered");
    CHECK(strcmp(rec.state, "ready") == 0);
    CHECK(strcmp(rec.model, "all-MiniLM-L6-v2") == 0);
    CHECK(strcmp(rec.family, "bert") == 0);
    CHECK(strcmp(rec.device, "cpu") == 0);
    CHECK(rec.pid == (int64_t)p.pid);
    CHECK(rec.max_batch_tokens == 8192);
    CHECK_MSG(strstr(rec.brokers, b.ep) != NULL, "brokers \"%s\"", rec.brokers);
    CHECK(rec.chunks_done == 0);
    int64_t epoch0 = rec.epoch;

    seqs_t s = s_make_seqs(4, 3, 9, 5);
    for (uint32_t i = 0; i < 3; i++)
        CHECK(s_send_chunk(&b, 5000, i, &s, COPTS_DEFAULT) == 0);
    for (uint32_t i = 0; i < 3; i++) {
        rmsg_t r;
        CHECK(s_br_wait(&b, COM_PROTO_RESULT, 30000, &r));
        CHECK(r.buf && !r.m.u.result.failed);
        s_rmsg_free(&r);
    }
    CHECK_MSG(s_wait_record(&b, reg, "test-worker-redis", 3, 5000, &rec), "counters not moving");
    CHECK(rec.batches_done >= 1 && rec.tokens_done == 3 * (int64_t)s.offs[s.n]);

    /* Redis goes away: results keep coming, on time */
    test_redis_stop(&rs);
    for (int round = 0; round < 3; round++) {
        int64_t t0 = s_ms();
        CHECK(s_send_chunk(&b, 5001, (uint32_t)round, &s, COPTS_DEFAULT) == 0);
        rmsg_t r;
        CHECK_MSG(s_br_wait(&b, COM_PROTO_RESULT, 30000, &r), "no result with Redis down");
        CHECK(r.buf && !r.m.u.result.failed && r.m.id == 5001);
        s_rmsg_free(&r);
        CHECK_MSG(s_ms() - t0 < 5000, "result took %lld ms with Redis down",
                  (long long)(s_ms() - t0));
        s_sleep_ms(300);
    }
    /* and comes back: the record reappears with the new counters and a new epoch */
    CHECK(test_redis_restart(&rs) == 0);
    CHECK_MSG(s_wait_record(&b, reg, "test-worker-redis", 6, 10000, &rec), "not re-registered");
    CHECK_MSG(rec.epoch > epoch0, "epoch %lld after %lld", (long long)rec.epoch, (long long)epoch0);
    s_stop(&p);
    CHECK_MSG(s_find_worker(reg, "test-worker-redis", &rec) == 0, "still registered after exit");

    /* discovery: a worker with --redis and no --broker finds the broker in Redis */
    broker_t b2;
    CHECK(s_br_open(&b2) == 0);
    com_broker_record_t br = {0};
    snprintf(br.id, sizeof br.id, "fake-broker");
    snprintf(br.host, sizeof br.host, "127.0.0.1");
    snprintf(br.backend, sizeof br.backend, "%s", b2.ep);
    snprintf(br.frontend, sizeof br.frontend, "tcp://127.0.0.1:1");
    snprintf(br.state, sizeof br.state, "ready");
    CHECK(com_registry_put_broker(reg, &br, 60000, &err) == 0);
    const char *args[] = {"--redis",
                          rs.url,
                          "--model",
                          test_model_dir(),
                          "--device",
                          "cpu",
                          "--heartbeat-ms",
                          "100",
                          "--discovery-ms",
                          "200",
                          "--threads",
                          "2",
                          "--id",
                          "test-worker-disc",
                          NULL};
    CHECK(s_proc_start(&p, "discovery", args) == 0);
    rmsg_t r;
    if (s_br_handshake(&b2, &r, 60000) == 0) {
        CHECK(r.m.u.ready.credits == 4);
        s_rmsg_free(&r);
        CHECK(s_send_chunk(&b2, 6000, 0, &s, COPTS_DEFAULT) == 0);
        s_expect_ok(&b2, 6000, 0, &s, COPTS_DEFAULT, "chunk from a discovered broker");
        s_scenario_discovery_leave(&b2, &p, reg, &br, &s);
    } else {
        CHECK_MSG(0, "discovered broker got no ready");
        s_dump_log(&p);
    }
    s_stop(&p);
    char *log = s_read_log(&p);
    CHECK_MSG(log && strstr(log, "\"links_closed\":1,") != NULL,
              "links_closed not 1 in the counters");
    if (!log || !strstr(log, "\"links_closed\":1,"))
        s_dump_log(&p);
    free(log);
    s_br_close(&b2);
    s_seqs_free(&s);
out:
    s_br_close(&b);
    com_registry_destroy(&reg);
    test_redis_destroy(&rs);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s basic|faults|drain|cuda|redis PATH_TO_EMBER_WORKER\n", argv[0]);
        return 2;
    }
    kern_blas_reexec_for_core(); /* the in-process reference engine's GEMMs */
    g_worker_bin = argv[2];
    test_require_model();
    signal(SIGPIPE, SIG_IGN);
    const char *sc = argv[1];
    if (strcmp(sc, "cuda") == 0) {
        s_scenario_cuda();
        return test_finish();
    }
    com_error_t err = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", test_model_dir());
    if (com_tokenizer_load(path, &g_tok, &err) != 0) {
        fprintf(stderr, "tokenizer: %s\n", err.msg);
        return 1;
    }
    wrk_engine_opts_t eo = {.device = "cpu", .threads = 1};
    if (wrk_engine_new(test_model_dir(), &eo, &g_ref, &err) != 0) {
        fprintf(stderr, "engine: %s\n", err.msg);
        return 1;
    }
    const com_model_info_t *info = wrk_engine_model(g_ref);
    g_dim = info->embedding_dim;
    g_msl = info->max_seq_length < info->max_position_embeddings ? info->max_seq_length
                                                                 : info->max_position_embeddings;
    g_vocab = info->vocab_size;
    if (strcmp(sc, "basic") == 0)
        s_scenario_basic();
    else if (strcmp(sc, "faults") == 0)
        s_scenario_faults();
    else if (strcmp(sc, "drain") == 0)
        s_scenario_drain();
    else if (strcmp(sc, "redis") == 0)
        s_scenario_redis();
    else {
        fprintf(stderr, "unknown scenario %s\n", sc);
        return 2;
    }
    wrk_engine_destroy(&g_ref);
    com_tokenizer_destroy(&g_tok);
    return test_finish();
}
