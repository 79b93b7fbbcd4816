/* tests/test_client.c — libember (client/ember.h) against fake brokers: ROUTER sockets on
 * tcp://127.0.0.1:* served by threads of this process, which decode each request with the real
 * protocol decoder and answer by a scripted behaviour (deterministic embeddings, silence,
 * out-of-order replies, OVERLOADED / UNAVAILABLE / INPUT_TOO_LONG errors, garbage frames).
 * Discovery runs against a private redis-server (tests/test_redis.h).
 *
 * The deterministic embedding of a text (or id sequence) is row[j] = (h % 64) + j / 4 where h is
 * an FNV-1a hash of its bytes, so every value is exact in float16 and a reply can be checked
 * against the request it belongs to; element 1 is h-dependent + 1/3, which float16 rounds, so
 * the f16 test sees the wire's rounding. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "client/ember.h"
#include "common/clock.h"
#include "common/half.h"
#include "common/protocol.h"
#include "common/registry.h"
#include "tests/test_redis.h"
#include "tests/test_util.h"

#define S_DIM 8

typedef enum s_mode {
    M_ECHO = 0,    /* answer every request at once */
    M_SILENT,      /* read requests, never answer */
    M_REVERSE,     /* hold `batch` requests, answer them in reverse order */
    M_OVERLOAD,    /* OVERLOADED to the first `errors` requests, then echo */
    M_UNAVAILABLE, /* UNAVAILABLE to everything */
    M_TOO_LONG,    /* INPUT_TOO_LONG to everything */
    M_GARBAGE,     /* garbage frames and a stale reply before each real reply */
} s_mode_t;

typedef struct s_fake {
    pthread_t thread;
    void *ctx;
    char endpoint[64];
    s_mode_t mode;
    int batch;
    int errors;
    atomic_int stop;
    atomic_int received; /* requests decoded */
    atomic_int answered;
    atomic_int bad; /* frames that did not decode */
} s_fake_t;

static void s_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint32_t s_hash(const void *p, size_t n) {
    const unsigned char *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

/* The fake's embedding of one input, into row[dim]. */
static void s_row(uint32_t h, float *row, uint32_t dim) {
    for (uint32_t j = 0; j < dim; j++)
        row[j] = (float)(h % 64) + (float)j / 4.0f;
    if (dim > 1)
        row[1] = (float)(h % 7) + 1.0f / 3.0f;
}

static void s_send(void *sock, zmq_msg_t *ident, const com_proto_buf_t *b) {
    zmq_msg_t id;
    zmq_msg_init(&id);
    zmq_msg_copy(&id, ident);
    zmq_msg_send(&id, sock, ZMQ_SNDMORE);
    zmq_send(sock, b->data, b->len, 0);
}

/* Whether, with truncation off, a text input holds "TOOLONG" (the fake's over-long input). */
static bool s_has_too_long(const com_proto_inputs_t *in, bool truncate) {
    if (truncate || in->kind != COM_PROTO_IN_TEXT)
        return false;
    for (uint32_t i = 0; i < in->n; i++)
        for (uint32_t j = 0; j + 7 <= in->texts[i].len; j++)
            if (memcmp(in->texts[i].ptr + j, "TOOLONG", 7) == 0)
                return true;
    return false;
}

/* Builds the reply to a decoded request m into *out. */
static void s_answer(s_fake_t *f, const com_proto_msg_t *m, com_proto_buf_t *out) {
    com_error_t err = {0};
    int n_done = atomic_load(&f->answered);
    if (f->mode == M_UNAVAILABLE) {
        com_proto_reply_error(m->id, COM_PROTO_UNAVAILABLE, out, &err, "fake broker draining");
        return;
    }
    if (f->mode == M_OVERLOAD && n_done < f->errors) {
        com_proto_reply_error(m->id, COM_PROTO_OVERLOADED, out, &err, "fake queue full");
        return;
    }
    if (f->mode == M_TOO_LONG) {
        com_proto_reply_error(m->id, COM_PROTO_INPUT_TOO_LONG, out, &err,
                              "input 0: 600 tokens exceed 512");
        return;
    }
    if (m->type == COM_PROTO_INFO) {
        com_proto_info_reply_t r = {.ok = true,
                                    .workers = 3,
                                    .model = {"fake-model", 10},
                                    .family = {"bert", 4},
                                    .version = {"9.9.9", 5},
                                    .dim = S_DIM,
                                    .max_seq = 512,
                                    .load_tokens = 77};
        com_proto_encode_info_reply(m->id, &r, out, &err);
        return;
    }
    if (m->type == COM_PROTO_TOKENIZE) {
        const com_proto_inputs_t *in = &m->u.tokenize.in;
        if (s_has_too_long(in, m->u.tokenize.truncate)) {
            com_proto_reply_error(m->id, COM_PROTO_INPUT_TOO_LONG, out, &err,
                                  "an input exceeds the model's 512 tokens");
            return;
        }
        size_t total = 0;
        for (uint32_t i = 0; i < in->n; i++)
            total += in->texts[i].len;
        int32_t *ids = malloc((total + 1) * sizeof(int32_t));
        int32_t *offs = malloc((in->n + 1) * sizeof(int32_t));
        size_t k = 0;
        offs[0] = 0;
        for (uint32_t i = 0; i < in->n; i++) {
            for (uint32_t j = 0; j < in->texts[i].len; j++)
                ids[k++] = 100 + (unsigned char)in->texts[i].ptr[j];
            offs[i + 1] = (int32_t)k;
        }
        com_proto_tokenize_reply_t r = {
            .ids = {.kind = COM_PROTO_IN_IDS, .n = in->n, .ids = ids, .offs = offs}, .usage = {k}};
        com_proto_encode_tokenize_reply(m->id, &r, out, &err);
        free(ids);
        free(offs);
        return;
    }
    if (m->type != COM_PROTO_EMBED) {
        com_proto_reply_error(m->id, COM_PROTO_BAD_REQUEST, out, &err, "unexpected");
        return;
    }
    const com_proto_embed_t *e = &m->u.embed;
    if (s_has_too_long(&e->in, e->truncate)) {
        com_proto_reply_error(m->id, COM_PROTO_INPUT_TOO_LONG, out, &err,
                              "an input exceeds the model's 512 tokens");
        return;
    }
    uint32_t dim = e->dims ? e->dims : S_DIM;
    float *rows = malloc((size_t)e->in.n * dim * sizeof(float));
    uint32_t *ntok = malloc(e->in.n * sizeof(uint32_t));
    uint64_t tok = 0;
    for (uint32_t i = 0; i < e->in.n; i++) {
        uint32_t h;
        if (e->in.kind == COM_PROTO_IN_TEXT) {
            h = s_hash(e->in.texts[i].ptr, e->in.texts[i].len);
            ntok[i] = e->in.texts[i].len + 2;
        } else {
            size_t len = (size_t)(e->in.offs[i + 1] - e->in.offs[i]);
            h = s_hash(e->in.ids + e->in.offs[i], len * sizeof(int32_t));
            ntok[i] = (uint32_t)len;
        }
        tok += ntok[i];
        s_row(h, rows + (size_t)i * dim, dim);
    }
    size_t bytes = (size_t)e->in.n * dim * com_proto_dtype_size(e->dtype);
    void *bin = malloc(bytes);
    com_proto_tensor_pack(rows, (size_t)e->in.n * dim, e->dtype, bin);
    com_proto_embed_reply_t r = {
        .model = {"fake-model", 10},
        .emb = {.dtype = e->dtype, .n = e->in.n, .dim = dim, .data = bin, .nbytes = bytes},
        .ntok = ntok,
        .usage = {tok},
        .timing = {.tokenize_us = 1, .queue_us = 2, .compute_us = 3, .total_us = 7}};
    com_proto_encode_embed_reply(m->id, &r, out, &err);
    free(bin);
    free(rows);
    free(ntok);
}

typedef struct s_held {
    zmq_msg_t ident;
    com_proto_buf_t reply;
} s_held_t;

static void *s_fake_main(void *arg) {
    s_fake_t *f = arg;
    void *sock = zmq_socket(f->ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_bind(sock, "tcp://127.0.0.1:*");
    size_t len = sizeof f->endpoint;
    zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, f->endpoint, &len);
    atomic_store(&f->answered, 0);
    s_held_t *held = calloc((size_t)(f->batch > 0 ? f->batch : 1), sizeof *held);
    int n_held = 0;
    atomic_store(&f->stop, 0); /* the endpoint is published once stop reads 0 from here on */
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 20) <= 0)
            continue;
        zmq_msg_t ident, body;
        zmq_msg_init(&ident);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&ident, sock, 0) < 0 || !zmq_msg_more(&ident) ||
            zmq_msg_recv(&body, sock, 0) < 0) {
            zmq_msg_close(&ident);
            zmq_msg_close(&body);
            continue;
        }
        com_proto_msg_t m;
        com_error_t err = {0};
        if (com_proto_decode(zmq_msg_data(&body), zmq_msg_size(&body), NULL, &m, &err) != 0) {
            atomic_fetch_add(&f->bad, 1);
            zmq_msg_close(&ident);
            zmq_msg_close(&body);
            continue;
        }
        atomic_fetch_add(&f->received, 1);
        if (f->mode != M_SILENT) {
            com_proto_buf_t reply = {0};
            s_answer(f, &m, &reply);
            if (f->mode == M_GARBAGE) {
                static const unsigned char junk[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0xc1};
                com_proto_buf_t g = {(uint8_t *)junk, sizeof junk};
                s_send(sock, &ident, &g);
                com_proto_buf_t nonmap = {(uint8_t *)"\x93\x01\x02\x03", 4};
                s_send(sock, &ident, &nonmap);
                /* a two-frame message */
                zmq_msg_t id2;
                zmq_msg_init(&id2);
                zmq_msg_copy(&id2, &ident);
                zmq_msg_send(&id2, sock, ZMQ_SNDMORE);
                zmq_send(sock, "a", 1, ZMQ_SNDMORE);
                zmq_send(sock, reply.data, reply.len, 0);
                /* a well-formed reply to an id the client never used */
                com_proto_buf_t stale = {0};
                com_proto_reply_error(0x7777777700ull, COM_PROTO_INTERNAL, &stale, &err, "x");
                s_send(sock, &ident, &stale);
                com_proto_buf_free(&stale);
            }
            if (f->mode == M_REVERSE) {
                zmq_msg_init(&held[n_held].ident);
                zmq_msg_copy(&held[n_held].ident, &ident);
                held[n_held++].reply = reply;
                if (n_held == f->batch) {
                    while (n_held > 0) {
                        n_held--;
                        s_send(sock, &held[n_held].ident, &held[n_held].reply);
                        zmq_msg_close(&held[n_held].ident);
                        com_proto_buf_free(&held[n_held].reply);
                        atomic_fetch_add(&f->answered, 1);
                    }
                }
            } else {
                s_send(sock, &ident, &reply);
                com_proto_buf_free(&reply);
                atomic_fetch_add(&f->answered, 1);
            }
        }
        com_proto_msg_free(&m);
        zmq_msg_close(&ident);
        zmq_msg_close(&body);
    }
    for (int i = 0; i < n_held; i++) {
        zmq_msg_close(&held[i].ident);
        com_proto_buf_free(&held[i].reply);
    }
    free(held);
    zmq_close(sock);
    return NULL;
}

/* Starts a fake broker in mode; returns once its endpoint is known. */
static s_fake_t *s_fake_start(s_mode_t mode, int batch, int errors) {
    s_fake_t *f = calloc(1, sizeof *f);
    f->ctx = zmq_ctx_new();
    f->mode = mode;
    f->batch = batch;
    f->errors = errors;
    atomic_store(&f->stop, 1);
    pthread_create(&f->thread, NULL, s_fake_main, f);
    while (atomic_load(&f->stop))
        s_sleep_ms(1);
    return f;
}

static void s_fake_stop(s_fake_t **fp) {
    s_fake_t *f = *fp;
    if (!f)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    zmq_ctx_term(f->ctx);
    free(f);
    *fp = NULL;
}

/* Fault injection for out of memory: libember copies each broker endpoint with strdup, and
 * this definition (exported, so it interposes on libc's for the shared library too) fails like
 * malloc would for the endpoint S_OOM_EP while s_oom_armed is set. s_oom_hits counts the
 * failures, so a test can tell that the hook really ran. */
#define S_OOM_EP "tcp://127.0.0.1:7"
static atomic_int s_oom_armed, s_oom_hits;

__attribute__((visibility("default"))) char *strdup(const char *src) {
    if (atomic_load(&s_oom_armed) && strcmp(src, S_OOM_EP) == 0) {
        atomic_fetch_add(&s_oom_hits, 1);
        errno = ENOMEM;
        return NULL;
    }
    size_t n = strlen(src) + 1;
    char *dst = malloc(n);
    if (dst)
        memcpy(dst, src, n);
    return dst;
}

/* An endpoint nothing listens on. */
static void s_dead_endpoint(char *out, size_t cap) {
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    zmq_bind(s, "tcp://127.0.0.1:*");
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, out, &cap);
    zmq_close(s);
    zmq_ctx_term(ctx);
}

static ember_client_t *s_client(const char **eps, size_t n, int timeout_ms, int attempt_ms) {
    ember_options_t o;
    ember_options_init(&o);
    o.brokers = eps;
    o.n_brokers = n;
    o.timeout_ms = timeout_ms;
    o.attempt_timeout_ms = attempt_ms;
    ember_client_t *c = NULL;
    char why[256];
    int rc = ember_client_new(&o, &c, why, sizeof why);
    CHECK_MSG(rc == EMBER_OK && c, "ember_client_new: %d %s", rc, why);
    return c;
}

/* Checks row i of r against the fake's embedding of text. */
static int s_row_ok(const ember_result_t *r, size_t i, const char *text, int f16) {
    float ref[S_DIM];
    s_row(s_hash(text, strlen(text)), ref, S_DIM);
    const float *got = ember_result_embedding(r, i);
    if (!got || ember_result_dim(r) != S_DIM)
        return 0;
    for (int j = 0; j < S_DIM; j++) {
        float want = f16 ? com_half_to_f32(com_half_from_f32(ref[j])) : ref[j];
        if (got[j] != want)
            return 0;
    }
    return 1;
}

static void s_test_args(void) {
    ember_options_t o;
    ember_options_init(&o);
    ember_client_t *c = (ember_client_t *)1;
    char why[128];
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_EINVAL && c == NULL);
    CHECK(strstr(why, "no broker") != NULL);
    CHECK(ember_client_new(NULL, &c, why, sizeof why) == EMBER_EINVAL);
    o.timeout_ms = -5;
    const char *ep[] = {"tcp://127.0.0.1:1"};
    o.brokers = ep;
    o.n_brokers = 1;
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_EINVAL);
    CHECK(strstr(why, "timeout_ms") != NULL);
    ember_options_init(&o);
    const char *bad[] = {"nonsense://x"};
    o.brokers = bad;
    o.n_brokers = 1;
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_EINVAL && c == NULL);
    /* The status comes from the failure, never from the message: an endpoint that cannot be
     * connected to is EINVAL even when its text says "out of memory"... */
    const char *oom_text[] = {"out of memory"};
    o.brokers = oom_text;
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_EINVAL && c == NULL);
    CHECK(strstr(why, "cannot connect") != NULL);
    /* ...and a real allocation failure (after a broker that was added) is ENOMEM */
    const char *oom[] = {"tcp://127.0.0.1:1", S_OOM_EP};
    o.brokers = oom;
    o.n_brokers = 2;
    atomic_store(&s_oom_armed, 1);
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_ENOMEM && c == NULL);
    atomic_store(&s_oom_armed, 0);
    CHECK(atomic_load(&s_oom_hits) == 1);
    CHECK(strstr(why, "out of memory") != NULL);
    /* Redis that is not there */
    ember_options_init(&o);
    char dead[64];
    s_dead_endpoint(dead, sizeof dead);
    char url[96];
    snprintf(url, sizeof url, "redis://127.0.0.1:%s", strrchr(dead, ':') + 1);
    o.redis_url = url;
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_EUNAVAILABLE && c == NULL);

    c = s_client(ep, 1, 1000, 1000);
    ember_result_t *r = (ember_result_t *)1;
    const char *t[] = {"a"};
    size_t l[] = {1};
    CHECK(ember_embed(c, t, l, 0, NULL, &r) == EMBER_EINVAL && r == NULL);
    CHECK(strstr(ember_client_last_error(c), "n == 0") != NULL);
    ember_request_opts_t ro;
    ember_request_opts_init(&ro);
    ro.normalize = 7;
    CHECK(ember_embed(c, t, l, 1, &ro, &r) == EMBER_EINVAL);
    ember_request_opts_t zero = {0};
    CHECK(ember_embed(c, t, l, 1, &zero, &r) == EMBER_EINVAL);
    int32_t neg[] = {5, -1};
    const int32_t *ids[] = {neg};
    size_t il[] = {2};
    CHECK(ember_embed_tokens(c, ids, il, 1, NULL, &r) == EMBER_EINVAL);
    CHECK(ember_wait(c, 12345, 0, &r) == EMBER_EINVAL);
    ember_req_t any;
    CHECK(ember_wait_any(c, 0, &any, &r) == EMBER_ENOT_FOUND);
    CHECK(ember_abandon(c, 999) == EMBER_EINVAL);
    CHECK(strcmp(ember_status_name(EMBER_ETIMEOUT), "EMBER_ETIMEOUT") == 0);
    CHECK(strcmp(ember_version(), "0.1.0") == 0);
    ember_client_destroy(&c);
    CHECK(c == NULL);
    ember_client_destroy(&c);
    ember_client_destroy(NULL);
    ember_result_destroy(NULL);
}

static void s_test_sync(void) {
    s_fake_t *f = s_fake_start(M_ECHO, 0, 0);
    const char *ep[] = {f->endpoint};
    ember_client_t *c = s_client(ep, 1, 5000, 5000);
    const char *texts[] = {"hello world", "ember", ""};
    size_t lens[] = {11, 5, 0};
    ember_result_t *r = NULL;
    int rc = ember_embed(c, texts, lens, 3, NULL, &r);
    CHECK_MSG(rc == EMBER_OK, "embed: %s %s", ember_status_name(rc), ember_client_last_error(c));
    if (r) {
        CHECK(ember_result_count(r) == 3 && ember_result_dim(r) == S_DIM);
        for (size_t i = 0; i < 3; i++) {
            CHECK(s_row_ok(r, i, texts[i], 0));
            CHECK(ember_result_tokens(r, i) == lens[i] + 2);
        }
        CHECK(ember_result_usage_tokens(r) == 11 + 5 + 0 + 6);
        CHECK(strcmp(ember_result_model(r), "fake-model") == 0);
        ember_timings_t tm;
        ember_result_timings(r, &tm);
        CHECK(tm.tokenize_us == 1 && tm.queue_us == 2 && tm.compute_us == 3 && tm.server_us == 7 &&
              tm.attempts == 1 && tm.client_us > 0);
        CHECK(ember_result_embedding(r, 3) == NULL && ember_result_tokens(r, 3) == 0);
        ember_result_destroy(&r);
        CHECK(r == NULL);
    }
    /* dimensions are passed through */
    ember_request_opts_t o;
    ember_request_opts_init(&o);
    o.dimensions = 4;
    CHECK(ember_embed(c, texts, lens, 1, &o, &r) == EMBER_OK && r && ember_result_dim(r) == 4);
    ember_result_destroy(&r);

    /* f16 on the wire: the floats are the f16 roundings of the fake's values */
    o.dimensions = 0;
    o.dtype = EMBER_DTYPE_F16;
    rc = ember_embed(c, texts, lens, 3, &o, &r);
    CHECK_MSG(rc == EMBER_OK, "f16: %s", ember_client_last_error(c));
    if (r) {
        for (size_t i = 0; i < 3; i++)
            CHECK(s_row_ok(r, i, texts[i], 1));
        float ref[S_DIM];
        s_row(s_hash(texts[0], lens[0]), ref, S_DIM);
        CHECK(ember_result_embedding(r, 0)[1] != ref[1]); /* 1/3 is not exact in f16 */
        CHECK(ember_result_embedding(r, 0)[0] == ref[0]);
        ember_result_destroy(&r);
    }

    /* token ids */
    int32_t a[] = {101, 7592, 102}, b[] = {101, 102};
    const int32_t *ids[] = {a, b};
    size_t il[] = {3, 2};
    rc = ember_embed_tokens(c, ids, il, 2, NULL, &r);
    CHECK_MSG(rc == EMBER_OK, "ids: %s", ember_client_last_error(c));
    if (r) {
        float ref[S_DIM];
        s_row(s_hash(b, sizeof b), ref, S_DIM);
        CHECK(memcmp(ember_result_embedding(r, 1), ref, sizeof ref) == 0);
        CHECK(ember_result_tokens(r, 0) == 3 && ember_result_tokens(r, 1) == 2);
        ember_result_destroy(&r);
    }

    /* tokenize */
    rc = ember_tokenize(c, texts, lens, 3, NULL, &r);
    CHECK_MSG(rc == EMBER_OK, "tokenize: %s", ember_client_last_error(c));
    if (r) {
        size_t n = 99;
        const int32_t *t = ember_result_token_ids(r, 1, &n);
        CHECK(n == 5 && t && t[0] == 100 + 'e' && t[4] == 100 + 'r');
        t = ember_result_token_ids(r, 2, &n);
        CHECK(n == 0 && t != NULL);
        CHECK(ember_result_token_ids(r, 3, &n) == NULL && n == 0);
        CHECK(ember_result_embeddings(r) == NULL && ember_result_dim(r) == 0);
        ember_result_destroy(&r);
    }

    /* info */
    ember_info_t info;
    rc = ember_info(c, 0, &info);
    CHECK_MSG(rc == EMBER_OK, "info: %s", ember_client_last_error(c));
    CHECK(info.healthy == 1 && info.workers == 3 && info.dim == S_DIM && info.max_seq == 512 &&
          info.load_tokens == 77 && strcmp(info.model, "fake-model") == 0 &&
          strcmp(info.family, "bert") == 0 && strcmp(info.endpoint, f->endpoint) == 0);
    ember_stats_t st;
    ember_client_stats(c, &st);
    CHECK(st.requests == 6 && st.sends == 6 && st.replies == 6 && st.retries == 0 &&
          st.brokers == 1);
    ember_client_destroy(&c);
    s_fake_stop(&f);
}

/* 100 requests in flight, answered in reverse order; each result matches its request. */
/* spin_us: replies still arrive whether they come inside the busy-poll window or after it, and
 * out-of-range values are refused. */
static void s_test_spin(void) {
    s_fake_t *f = s_fake_start(M_ECHO, 0, 0);
    const char *ep[] = {f->endpoint};
    ember_options_t o;
    ember_options_init(&o);
    o.brokers = ep;
    o.n_brokers = 1;
    ember_client_t *c = NULL;
    char why[256];
    o.spin_us = -1;
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_EINVAL && c == NULL);
    for (int k = 0; k < 2; k++) {
        o.spin_us = k == 0 ? 50 : 100000; /* a window shorter and longer than the round trip */
        CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_OK && c);
        const char *texts[] = {"spin"};
        size_t lens[] = {4};
        for (int i = 0; c && i < 20; i++) {
            ember_result_t *r = NULL;
            CHECK(ember_embed(c, texts, lens, 1, NULL, &r) == EMBER_OK && r &&
                  s_row_ok(r, 0, texts[0], 0));
            ember_result_destroy(&r);
        }
        ember_client_destroy(&c);
    }
    s_fake_stop(&f);
}

static void s_test_async(void) {
    enum { N = 100 };
    s_fake_t *f = s_fake_start(M_REVERSE, N, 0);
    const char *ep[] = {f->endpoint};
    ember_client_t *c = s_client(ep, 1, 20000, 20000);
    char texts[N][32];
    ember_req_t ids[N];
    for (int i = 0; i < N; i++) {
        snprintf(texts[i], sizeof texts[i], "request number %d", i);
        const char *t[] = {texts[i], "second input"};
        size_t l[] = {strlen(texts[i]), 12};
        CHECK(ember_submit_embed(c, t, l, 2, NULL, &ids[i]) == EMBER_OK && ids[i] != 0);
    }
    CHECK(ember_in_flight(c) == N);
    /* the first five by id, the rest by wait_any, in completion (= reverse) order */
    int ok = 0, matched = 0, order_ok = 1, last = N;
    for (int i = 0; i < 5; i++) {
        ember_result_t *r = NULL;
        int rc = ember_wait(c, ids[i], 10000, &r);
        ok += rc == EMBER_OK;
        matched += r && s_row_ok(r, 0, texts[i], 0) && s_row_ok(r, 1, "second input", 0);
        ember_result_destroy(&r);
    }
    for (int k = 5; k < N; k++) {
        ember_req_t id = 0;
        ember_result_t *r = NULL;
        int rc = ember_wait_any(c, 10000, &id, &r);
        int i = -1;
        for (int j = 0; j < N; j++)
            if (ids[j] == id)
                i = j;
        ok += rc == EMBER_OK;
        if (i >= 0) {
            matched += r && s_row_ok(r, 0, texts[i], 0);
            order_ok &= i < last; /* replies came newest first */
            last = i;
        }
        ember_result_destroy(&r);
    }
    CHECK_MSG(ok == N && matched == N, "ok %d matched %d", ok, matched);
    CHECK(order_ok);
    CHECK(ember_in_flight(c) == 0);
    ember_req_t id;
    ember_result_t *r;
    CHECK(ember_wait_any(c, 0, &id, &r) == EMBER_ENOT_FOUND);
    CHECK(ember_poll(c, ids[0], &r) == EMBER_EINVAL); /* collected already */
    ember_client_destroy(&c);
    s_fake_stop(&f);
}

/* A silent broker: the request fails with ETIMEOUT in bounded time; poll says EAGAIN before. */
static void s_test_timeout(void) {
    s_fake_t *f = s_fake_start(M_SILENT, 0, 0);
    const char *ep[] = {f->endpoint};
    ember_client_t *c = s_client(ep, 1, 600, 250);
    const char *t[] = {"x"};
    size_t l[] = {1};
    ember_req_t id;
    CHECK(ember_submit_embed(c, t, l, 1, NULL, &id) == EMBER_OK);
    ember_result_t *r = NULL;
    CHECK(ember_poll(c, id, &r) == EMBER_EAGAIN && r == NULL);
    CHECK(ember_wait(c, id, 50, &r) == EMBER_EAGAIN);
    int64_t t0 = com_clock_mono_us();
    int rc = ember_wait(c, id, -1, &r);
    double ms = (double)(com_clock_mono_us() - t0) / 1000.0;
    CHECK_MSG(rc == EMBER_ETIMEOUT, "got %s: %s", ember_status_name(rc),
              ember_client_last_error(c));
    CHECK_MSG(ms < 2000, "took %.0f ms", ms);
    CHECK(strstr(ember_client_last_error(c), "no reply") != NULL);
    ember_stats_t st;
    ember_client_stats(c, &st);
    CHECK(st.timeouts >= 1 && st.sends >= 2); /* it retried on the same (only) broker */
    CHECK(atomic_load(&f->received) >= 2);

    /* abandon: the request is gone, and a destroy with requests in flight does not hang */
    CHECK(ember_submit_embed(c, t, l, 1, NULL, &id) == EMBER_OK);
    CHECK(ember_abandon(c, id) == EMBER_OK && ember_in_flight(c) == 0);
    CHECK(ember_poll(c, id, &r) == EMBER_EINVAL);
    CHECK(ember_submit_embed(c, t, l, 1, NULL, &id) == EMBER_OK);
    ember_client_destroy(&c);
    s_fake_stop(&f);
}

/* Failover: a dead endpoint first, then a silent broker; requests succeed via the live one. */
static void s_test_failover(void) {
    s_fake_t *live = s_fake_start(M_ECHO, 0, 0);
    char dead[64];
    s_dead_endpoint(dead, sizeof dead);
    const char *ep[] = {dead, live->endpoint};
    ember_client_t *c = s_client(ep, 2, 3000, 300);
    const char *t[] = {"fail me over"};
    size_t l[] = {12};
    ember_result_t *r = NULL;
    int64_t t0 = com_clock_mono_us();
    int rc = ember_embed(c, t, l, 1, NULL, &r);
    CHECK_MSG(rc == EMBER_OK && r && s_row_ok(r, 0, t[0], 0), "dead+live: %s",
              ember_client_last_error(c));
    CHECK((com_clock_mono_us() - t0) < 1000000);
    ember_result_destroy(&r);
    ember_client_destroy(&c);

    s_fake_t *silent = s_fake_start(M_SILENT, 0, 0);
    const char *ep2[] = {silent->endpoint, live->endpoint};
    c = s_client(ep2, 2, 5000, 300);
    s_sleep_ms(300); /* both connected, so round-robin sends some requests to the silent one */
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        rc = ember_embed(c, t, l, 1, NULL, &r);
        ok += rc == EMBER_OK && r && s_row_ok(r, 0, t[0], 0);
        ember_result_destroy(&r);
    }
    CHECK_MSG(ok == 4, "silent+live: %d ok, %s", ok, ember_client_last_error(c));
    ember_stats_t st;
    ember_client_stats(c, &st);
    CHECK_MSG(atomic_load(&silent->received) >= 1 && st.timeouts >= 1 && st.failovers >= 1,
              "silent got %d, timeouts %llu failovers %llu", atomic_load(&silent->received),
              (unsigned long long)st.timeouts, (unsigned long long)st.failovers);
    ember_client_destroy(&c);

    /* only dead endpoints: EUNAVAILABLE at the deadline */
    const char *ep3[] = {dead};
    c = s_client(ep3, 1, 400, 200);
    t0 = com_clock_mono_us();
    rc = ember_embed(c, t, l, 1, NULL, &r);
    CHECK_MSG(rc == EMBER_EUNAVAILABLE, "dead: %s %s", ember_status_name(rc),
              ember_client_last_error(c));
    CHECK((com_clock_mono_us() - t0) < 1500000);
    ember_client_destroy(&c);

    /* a broker that dies with a request in flight: failover without waiting for the attempt
     * timeout (the connection loss is seen) */
    s_fake_t *doomed = s_fake_start(M_SILENT, 0, 0);
    const char *ep4[] = {doomed->endpoint, live->endpoint};
    c = s_client(ep4, 2, 8000, 6000);
    s_sleep_ms(300);
    ember_req_t ids[2];
    CHECK(ember_submit_embed(c, t, l, 1, NULL, &ids[0]) == EMBER_OK);
    CHECK(ember_submit_embed(c, t, l, 1, NULL, &ids[1]) == EMBER_OK);
    s_sleep_ms(100);
    s_fake_stop(&doomed);
    t0 = com_clock_mono_us();
    ok = 0;
    for (int i = 0; i < 2; i++) {
        rc = ember_wait(c, ids[i], -1, &r);
        ok += rc == EMBER_OK;
        ember_result_destroy(&r);
    }
    double ms = (double)(com_clock_mono_us() - t0) / 1000.0;
    ember_client_stats(c, &st);
    CHECK_MSG(ok == 2 && ms < 3000 && st.disconnects >= 1,
              "disconnect failover: ok %d in %.0f ms, disconnects %llu", ok, ms,
              (unsigned long long)st.disconnects);
    ember_client_destroy(&c);
    s_fake_stop(&silent);
    s_fake_stop(&live);
}

/* OVERLOADED twice, then success: retried with backoff. Too few attempts: EOVERLOADED. */
static void s_test_overload(void) {
    s_fake_t *f = s_fake_start(M_OVERLOAD, 0, 2);
    const char *ep[] = {f->endpoint};
    ember_client_t *c = s_client(ep, 1, 5000, 5000);
    const char *t[] = {"busy"};
    size_t l[] = {4};
    ember_result_t *r = NULL;
    int64_t t0 = com_clock_mono_us();
    int rc = ember_embed(c, t, l, 1, NULL, &r);
    double ms = (double)(com_clock_mono_us() - t0) / 1000.0;
    CHECK_MSG(rc == EMBER_OK && r && s_row_ok(r, 0, t[0], 0), "%s", ember_client_last_error(c));
    ember_timings_t tm;
    ember_result_timings(r, &tm);
    CHECK(tm.attempts == 3);
    /* backoff 50 ms then 100 ms, each drawn from [d/2, d]: at least 75 ms in all */
    CHECK_MSG(ms >= 75 && ms < 2000, "took %.1f ms", ms);
    ember_stats_t st;
    ember_client_stats(c, &st);
    CHECK(st.retries == 2 && st.sends == 3);
    ember_result_destroy(&r);
    ember_client_destroy(&c);
    s_fake_stop(&f);

    f = s_fake_start(M_OVERLOAD, 0, 1000);
    const char *ep2[] = {f->endpoint};
    ember_options_t o;
    ember_options_init(&o);
    o.brokers = ep2;
    o.n_brokers = 1;
    o.max_attempts = 2;
    CHECK(ember_client_new(&o, &c, NULL, 0) == EMBER_OK);
    rc = ember_embed(c, t, l, 1, NULL, &r);
    CHECK_MSG(rc == EMBER_EOVERLOADED, "%s", ember_status_name(rc));
    CHECK(strstr(ember_client_last_error(c), "OVERLOADED") != NULL);
    CHECK(atomic_load(&f->received) == 2);
    ember_client_destroy(&c);
    s_fake_stop(&f);
}

/* UNAVAILABLE surfaces as a code and message; INPUT_TOO_LONG is final (one attempt). */
static void s_test_errors(void) {
    s_fake_t *f = s_fake_start(M_UNAVAILABLE, 0, 0);
    const char *ep[] = {f->endpoint};
    ember_client_t *c = s_client(ep, 1, 2000, 1000);
    const char *t[] = {"x"};
    size_t l[] = {1};
    ember_result_t *r = NULL;
    int rc = ember_embed(c, t, l, 1, NULL, &r);
    CHECK_MSG(rc == EMBER_EUNAVAILABLE && r == NULL, "%s", ember_status_name(rc));
    const char *msg = ember_client_last_error(c);
    CHECK_MSG(strstr(msg, "UNAVAILABLE") && strstr(msg, "fake broker draining"), "%s", msg);
    CHECK(atomic_load(&f->received) >= 2); /* retried */
    ember_client_destroy(&c);
    s_fake_stop(&f);

    f = s_fake_start(M_TOO_LONG, 0, 0);
    const char *ep2[] = {f->endpoint};
    c = s_client(ep2, 1, 2000, 1000);
    ember_request_opts_t o;
    ember_request_opts_init(&o);
    o.truncate = 0;
    rc = ember_embed(c, t, l, 1, &o, &r);
    CHECK(rc == EMBER_EINPUT_TOO_LONG);
    CHECK(strstr(ember_client_last_error(c), "input 0") != NULL);
    CHECK(atomic_load(&f->received) == 1);
    ember_client_destroy(&c);
    s_fake_stop(&f);
}

/* Garbage frames, a multi-frame message and a reply to an unknown id are ignored and counted. */
static void s_test_garbage(void) {
    s_fake_t *f = s_fake_start(M_GARBAGE, 0, 0);
    const char *ep[] = {f->endpoint};
    ember_client_t *c = s_client(ep, 1, 3000, 3000);
    const char *t[] = {"noise"};
    size_t l[] = {5};
    ember_result_t *r = NULL;
    int ok = 0;
    for (int i = 0; i < 3; i++) {
        ok += ember_embed(c, t, l, 1, NULL, &r) == EMBER_OK && s_row_ok(r, 0, t[0], 0);
        ember_result_destroy(&r);
    }
    CHECK(ok == 3);
    s_sleep_ms(50);
    ember_req_t id;
    CHECK(ember_submit_embed(c, t, l, 1, NULL, &id) == EMBER_OK);
    CHECK(ember_wait(c, id, 3000, &r) == EMBER_OK);
    ember_result_destroy(&r);
    ember_stats_t st;
    ember_client_stats(c, &st);
    CHECK_MSG(st.bad_replies >= 9 && st.stale_replies >= 3, "bad %llu stale %llu",
              (unsigned long long)st.bad_replies, (unsigned long long)st.stale_replies);
    ember_client_destroy(&c);
    s_fake_stop(&f);
}

/* Brokers from Redis: the frontend of a registered broker; a dead listing is replaced on the
 * next refresh. */
static void s_test_redis(void) {
    test_redis_t rs;
    if (test_redis_start(&rs) != 0) {
        CHECK_MSG(0, "cannot start redis-server");
        return;
    }
    s_fake_t *f = s_fake_start(M_ECHO, 0, 0);
    com_registry_t *reg = NULL;
    com_error_t err = {0};
    CHECK(com_registry_new(rs.url, NULL, &reg, &err) == 0);
    char dead[64];
    s_dead_endpoint(dead, sizeof dead);
    com_broker_record_t b = {0};
    snprintf(b.id, sizeof b.id, "b-dead");
    snprintf(b.frontend, sizeof b.frontend, "%s", dead);
    snprintf(b.backend, sizeof b.backend, "tcp://127.0.0.1:1");
    snprintf(b.state, sizeof b.state, "ready");
    CHECK_MSG(com_registry_put_broker(reg, &b, 60000, &err) == 0, "%s", err.msg);

    ember_options_t o;
    ember_options_init(&o);
    o.redis_url = rs.url;
    o.discovery_refresh_ms = 200;
    o.timeout_ms = 5000;
    ember_client_t *c = NULL;
    char why[256];
    CHECK_MSG(ember_client_new(&o, &c, why, sizeof why) == EMBER_OK, "%s", why);
    ember_stats_t st;
    ember_client_stats(c, &st);
    CHECK(st.discoveries == 1 && st.brokers == 1);

    /* the live broker registers, the dead one leaves */
    snprintf(b.id, sizeof b.id, "b-live");
    snprintf(b.frontend, sizeof b.frontend, "%s", f->endpoint);
    CHECK(com_registry_put_broker(reg, &b, 60000, &err) == 0);
    CHECK(com_registry_remove_broker(reg, "b-dead", &err) == 0);
    const char *t[] = {"discovered"};
    size_t l[] = {10};
    ember_result_t *r = NULL;
    int rc = ember_embed(c, t, l, 1, NULL, &r);
    CHECK_MSG(rc == EMBER_OK && r && s_row_ok(r, 0, t[0], 0), "redis: %s",
              ember_client_last_error(c));
    ember_result_destroy(&r);
    ember_client_stats(c, &st);
    CHECK(st.discoveries >= 2 && st.brokers == 1);
    ember_client_destroy(&c);

    /* Redis goes away: the known brokers keep serving */
    CHECK(ember_client_new(&o, &c, why, sizeof why) == EMBER_OK);
    test_redis_stop(&rs);
    s_sleep_ms(300);
    rc = ember_embed(c, t, l, 1, NULL, &r);
    CHECK_MSG(rc == EMBER_OK, "redis down: %s", ember_client_last_error(c));
    ember_result_destroy(&r);
    ember_client_destroy(&c);

    com_registry_destroy(&reg);
    s_fake_stop(&f);
    test_redis_destroy(&rs);
}

/* Runs `sh -c cmd`; returns its exit status (-1 if it did not exit normally). */
static int s_run(const char *cmd) {
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *s_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    b[*len] = '\0';
    fclose(f);
    return b;
}

/* `ember embed --broker` (the CLI's pool mode) against fake brokers: input order kept over
 * several requests answered out of order, the exit codes of docs/cli.md. */
static void s_test_cli(void) {
    char ember[512], dir[512], in[600], out[600], errf[600], cmd[4096];
    snprintf(ember, sizeof ember, "%s/client/ember", test_binary_dir());
    struct stat stt;
    if (stat(ember, &stt) != 0) {
        CHECK_MSG(0, "%s not built", ember);
        return;
    }
    snprintf(dir, sizeof dir, "%s/client_cli_%ld", test_data_dir(), (long)getpid());
    mkdir(dir, 0755);
    snprintf(in, sizeof in, "%s/in.txt", dir);
    snprintf(out, sizeof out, "%s/out.bin", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    enum { N = 600 };
    char lines[N][32];
    FILE *f = fopen(in, "wb");
    for (int i = 0; i < N; i++) {
        if (i % 97 == 5)
            lines[i][0] = '\0'; /* empty lines are texts too */
        else
            snprintf(lines[i], sizeof lines[i], "line %d", i);
        fprintf(f, "%s\n", lines[i]);
    }
    fclose(f);

    /* 600 texts = 3 requests (256 + 256 + 88), answered newest first */
    s_fake_t *fk = s_fake_start(M_REVERSE, 3, 0);
    remove(out);
    snprintf(cmd, sizeof cmd, "'%s' embed --broker '%s' --input '%s' --output '%s' --format f32",
             ember, fk->endpoint, in, out);
    int rc = s_run(cmd);
    CHECK_MSG(rc == 0, "f32 run exit %d", rc);
    size_t len = 0;
    char *got = s_slurp(out, &len);
    CHECK_MSG(got && len == (size_t)N * S_DIM * sizeof(float), "output %zu bytes", len);
    if (got && len == (size_t)N * S_DIM * sizeof(float)) {
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float ref[S_DIM];
            s_row(s_hash(lines[i], strlen(lines[i])), ref, S_DIM);
            bad += memcmp(got + (size_t)i * sizeof ref, ref, sizeof ref) != 0;
        }
        CHECK_MSG(bad == 0, "%d rows out of place", bad);
    }
    free(got);
    CHECK(atomic_load(&fk->received) == 3);
    s_fake_stop(&fk);

    /* JSON lines, --dimensions passed through */
    fk = s_fake_start(M_ECHO, 0, 0);
    snprintf(cmd, sizeof cmd,
             "'%s' embed --broker '%s' --input '%s' --output '%s' --dimensions 4 --timeout-ms 5000",
             ember, fk->endpoint, in, out);
    CHECK(s_run(cmd) == 0);
    got = s_slurp(out, &len);
    if (got) {
        size_t nl = 0;
        for (size_t i = 0; i < len; i++)
            nl += got[i] == '\n';
        CHECK(nl == N);
        CHECK(strstr(got, "{\"index\": 0, \"embedding\": [") == got);
        CHECK(strstr(got, "{\"index\": 599, ") != NULL);
        CHECK(strstr(got, "\"tokens\": 8}\n") != NULL); /* "line 1" + 2 */
        char first[128];
        float ref[S_DIM];
        s_row(s_hash(lines[0], strlen(lines[0])), ref, S_DIM);
        snprintf(first, sizeof first, "[%.9g, %.9g, %.9g, %.9g]", (double)ref[0], (double)ref[1],
                 (double)ref[2], (double)ref[3]);
        CHECK_MSG(strstr(got, first) != NULL, "first row %s", first);
    }
    free(got);

    /* --no-truncate and an over-long line 300: exit 5 naming the line, no output file */
    char in2[600];
    snprintf(in2, sizeof in2, "%s/in_long.txt", dir);
    f = fopen(in2, "wb");
    for (int i = 1; i <= N; i++)
        fprintf(f, i == 300 ? "TOOLONG %d\n" : "fine %d\n", i);
    fclose(f);
    remove(out);
    snprintf(cmd, sizeof cmd,
             "'%s' embed --broker '%s' --input '%s' --output '%s' "
             "--no-truncate 2> '%s'",
             ember, fk->endpoint, in2, out, errf);
    rc = s_run(cmd);
    got = s_slurp(errf, &len);
    CHECK_MSG(rc == 5 && got && strstr(got, "input line 300:"), "too long: exit %d, %s", rc,
              got ? got : "");
    free(got);
    CHECK(stat(out, &stt) != 0);
    /* truncation on (the default): the same input is fine */
    snprintf(cmd, sizeof cmd, "'%s' embed --broker '%s' --input '%s' --output '%s'", ember,
             fk->endpoint, in2, out);
    CHECK(s_run(cmd) == 0);
    s_fake_stop(&fk);

    /* a dead broker: exit 7 (unavailable) within the timeout */
    char dead[64];
    s_dead_endpoint(dead, sizeof dead);
    snprintf(cmd, sizeof cmd,
             "'%s' embed --broker '%s' --input '%s' --timeout-ms 400 "
             "> /dev/null 2> '%s'",
             ember, dead, in, errf);
    int64_t t0 = com_clock_mono_us();
    rc = s_run(cmd);
    got = s_slurp(errf, &len);
    CHECK_MSG(rc == 7, "dead broker: exit %d, %s", rc, got ? got : "");
    CHECK((com_clock_mono_us() - t0) < 5000000);
    free(got);
    /* Redis that is not there: 7; usage errors: 2 */
    snprintf(cmd, sizeof cmd, "'%s' embed --redis 'redis://127.0.0.1:%s' --input '%s' 2>/dev/null",
             ember, strrchr(dead, ':') + 1, in);
    CHECK(s_run(cmd) == 7);
    snprintf(cmd, sizeof cmd, "'%s' embed --broker '%s' --model /nonexistent 2>/dev/null", ember,
             dead);
    CHECK(s_run(cmd) == 2);
    snprintf(cmd, sizeof cmd, "'%s' embed --broker '%s' --threads 2 2>/dev/null", ember, dead);
    CHECK(s_run(cmd) == 2);
    snprintf(cmd, sizeof cmd, "'%s' embed --broker 'bogus' --input '%s' 2>/dev/null", ember, in);
    CHECK(s_run(cmd) == 2);
    snprintf(cmd, sizeof cmd, "'%s' embed --timeout-ms 5 --model x 2>/dev/null", ember);
    CHECK(s_run(cmd) == 2);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    s_run(cmd);
}

int main(void) {
    s_test_args();
    s_test_sync();
    s_test_spin();
    s_test_async();
    s_test_timeout();
    s_test_failover();
    s_test_overload();
    s_test_errors();
    s_test_garbage();
    s_test_redis();
    s_test_cli();
    return test_finish();
}
