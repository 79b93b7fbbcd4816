/* tests/test_broker.c — ember-broker as a black box: the real binary (argv[1]) on loopback
 * ports, a client DEALER and fake workers (test_broker_util.h), the real model directory for
 * the tokenizer. One scenario per argv[2], each with its own broker:
 *   basic    info, tokenize, NO_WORKERS at the deadline, hostile client frames and messages,
 *            an oversized frame, request checks, chunking of 2000 texts across two workers in
 *            input order, f16 + dims, hostile worker messages, unknown and mismatched workers
 *   loss     credits respected, a worker lost (silent) -> its chunks re-dispatched (attempt 1),
 *            its late results dropped and it is told it is unknown; SIGTERM drain finishes the
 *            request in flight, refuses new ones, disconnects the workers, exits 0
 *   late     a late chunk re-dispatched, the late duplicate dropped, DEADLINE_EXCEEDED with a
 *            worker, OVERLOADED past --max-queued-tokens
 * Every scenario ends with SIGTERM and checks exit 0 (under ASan, a leak fails it too). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/half.h"
#include "common/prng.h"
#include "common/registry.h"
#include "common/tokenizer.h"
#include "tests/test_broker_util.h"
#include "tests/test_redis.h"
#include "tests/test_util.h"

#define MODEL "all-MiniLM-L6-v2"
#define DIM   384

static const char *g_bin;
static void *g_ctx;
static com_tokenizer_t *g_tok;

static uint64_t g_id = 1000;

/* Services the workers until cond holds or ms pass. */
#define PUMP_UNTIL(ws, n, ms, cond)                                                                \
    do {                                                                                           \
        int64_t end_ = com_clock_mono_us() + (int64_t)(ms)*1000;                                   \
        while (!(cond) && com_clock_mono_us() < end_)                                              \
            tb_pump((ws), (n), 5);                                                                 \
    } while (0)

static com_proto_str_t s_str(const char *s) {
    return (com_proto_str_t){s, (uint32_t)strlen(s)};
}

/* Sends an embed of token ids: n inputs, input i = len ids starting at 1000 + i. */
static uint64_t s_send_ids(void *client, uint32_t n, uint32_t len, uint32_t dl) {
    int32_t *ids = malloc((size_t)n * len * sizeof *ids);
    int32_t *offs = malloc(((size_t)n + 1) * sizeof *offs);
    offs[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < len; k++)
            ids[i * len + k] = (int32_t)(1000 + i + k);
        offs[i + 1] = (int32_t)((i + 1) * len);
    }
    com_proto_msg_t m;
    uint64_t id = ++g_id;
    com_proto_msg_init(&m, COM_PROTO_EMBED, id);
    m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, n, NULL, ids, offs};
    m.u.embed.deadline_ms = dl;
    CHECK(tb_send(client, &m) == 0);
    free(ids);
    free(offs);
    return id;
}

/* Checks an embed_reply to s_send_ids(n, len) (dims 0, f32). */
static void s_check_ids_reply(const tb_reply_t *r, uint64_t id, uint32_t n, uint32_t len) {
    CHECK_MSG(r->got && r->m.type == COM_PROTO_EMBED_REPLY, "type %d code %u", (int)r->m.type,
              tb_code(r));
    if (!r->got || r->m.type != COM_PROTO_EMBED_REPLY)
        return;
    const com_proto_embed_reply_t *e = &r->m.u.embed_reply;
    CHECK(r->m.id == id);
    CHECK(e->emb.n == n && e->emb.dim == DIM && e->emb.dtype == COM_PROTO_F32);
    float *got = malloc((size_t)n * DIM * sizeof *got);
    com_proto_tensor_unpack(&e->emb, got);
    int bad = 0;
    int32_t *ids = malloc(len * sizeof *ids);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < len; k++)
            ids[k] = (int32_t)(1000 + i + k);
        float want[DIM];
        tb_row(ids, (int32_t)len, 0, DIM, want);
        want[4] = got[(size_t)i * DIM + 4]; /* worker index: any */
        if (memcmp(want, got + (size_t)i * DIM, sizeof want) != 0 || e->ntok[i] != len)
            bad++;
    }
    CHECK_MSG(bad == 0, "%d rows wrong", bad);
    CHECK(e->usage.tokens == (uint64_t)n * len);
    free(ids);
    free(got);
}

static uint32_t s_request_code(void *client, tb_worker_t **ws, int nw, const com_proto_msg_t *m) {
    tb_reply_t r;
    CHECK(tb_send(client, m) == 0);
    bool got = tb_wait(client, ws, nw, 5000, &r);
    CHECK_MSG(got, "no reply to a %s", com_proto_type_name(m->type));
    uint32_t code = tb_code(&r);
    if (got)
        CHECK(r.m.id == m->id);
    tb_reply_free(&r);
    return code;
}

static void s_info(void *client, tb_worker_t **ws, int nw, uint32_t want_workers) {
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_INFO, ++g_id);
    CHECK(tb_send(client, &m) == 0);
    tb_reply_t r;
    CHECK(tb_wait(client, ws, nw, 5000, &r));
    CHECK_MSG(r.got && r.m.type == COM_PROTO_INFO_REPLY, "info: got type %d", (int)r.m.type);
    if (r.got && r.m.type == COM_PROTO_INFO_REPLY) {
        const com_proto_info_reply_t *i = &r.m.u.info_reply;
        CHECK(r.m.id == g_id);
        CHECK_MSG(i->workers == want_workers, "nwk %u want %u", i->workers, want_workers);
        CHECK(i->ok == (want_workers > 0));
        CHECK(i->dim == DIM && i->max_seq == 256);
        CHECK(i->model.len == strlen(MODEL) && !memcmp(i->model.ptr, MODEL, i->model.len));
    }
    tb_reply_free(&r);
}

/* Sends raw bytes as frames and expects an error reply (BAD_REQUEST or TOO_LARGE). */
static void s_hostile(void *client, const char *what, const void *const *frames, const size_t *lens,
                      int nframes) {
    for (int i = 0; i < nframes; i++)
        zmq_send(client, frames[i], lens[i], i + 1 < nframes ? ZMQ_SNDMORE : 0);
    tb_reply_t r;
    bool got = tb_wait(client, NULL, 0, 5000, &r);
    uint32_t code = tb_code(&r);
    CHECK_MSG(got && (code == COM_PROTO_BAD_REQUEST || code == COM_PROTO_TOO_LARGE),
              "%s: got %d code %u", what, got, code);
    tb_reply_free(&r);
}

static void s_scenario_basic(void) {
    tb_broker_t bp;
    test_redis_t redis;
    bool have_redis = test_redis_start(&redis) == 0;
    const char *args[] = {"--heartbeat-ms",
                          "100",
                          "--chunk-tokens",
                          "256",
                          "--id",
                          "tb-basic",
                          have_redis ? "--redis" : NULL,
                          redis.url,
                          NULL};
    if (!have_redis)
        fprintf(stderr, "no redis-server: the registry record is not checked\n");
    if (tb_broker_start(&bp, g_bin, "basic", args) != 0) {
        CHECK(0);
        return;
    }
    void *client = tb_client(g_ctx, bp.front);

    /* info with no worker */
    s_info(client, NULL, 0, 0);

    /* tokenize: the broker's ids equal the tokenizer's */
    {
        const char *texts[] = {"hello world", "Ember serves embeddings, quickly!"};
        com_proto_str_t in[2] = {s_str(texts[0]), s_str(texts[1])};
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_TOKENIZE, ++g_id);
        m.u.tokenize.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 2, in, NULL, NULL};
        CHECK(tb_send(client, &m) == 0);
        tb_reply_t r;
        CHECK(tb_wait(client, NULL, 0, 5000, &r));
        CHECK(r.got && r.m.type == COM_PROTO_TOKENIZE_REPLY && r.m.id == g_id);
        if (r.got && r.m.type == COM_PROTO_TOKENIZE_REPLY) {
            const com_proto_inputs_t *ids = &r.m.u.tokenize_reply.ids;
            com_encoding_t enc;
            com_encoding_init(&enc);
            com_encode_opts_t o = com_encode_opts_default();
            o.max_length = 256;
            uint64_t total = 0;
            CHECK(ids->n == 2);
            for (uint32_t i = 0; i < 2 && ids->n == 2; i++) {
                CHECK(com_tokenizer_encode(g_tok, texts[i], strlen(texts[i]), &o, &enc, NULL) == 0);
                int32_t len = ids->offs[i + 1] - ids->offs[i];
                CHECK(len == enc.len &&
                      !memcmp(ids->ids + ids->offs[i], enc.ids, (size_t)len * sizeof(int32_t)));
                total += (uint64_t)len;
            }
            CHECK(r.m.u.tokenize_reply.usage.tokens == total);
            com_encoding_free(&enc);
        }
        tb_reply_free(&r);
    }
    /* tokenize: a long text is truncated to 256 with trunc, INPUT_TOO_LONG without */
    {
        size_t n = 20000;
        char *longtext = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            longtext[i] = i % 5 == 4 ? ' ' : 'a' + (char)(i % 5);
        longtext[n] = 0;
        com_proto_str_t in[1] = {s_str(longtext)};
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_TOKENIZE, ++g_id);
        m.u.tokenize.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, in, NULL, NULL};
        CHECK(tb_send(client, &m) == 0);
        tb_reply_t r;
        CHECK(tb_wait(client, NULL, 0, 5000, &r));
        CHECK(r.got && r.m.type == COM_PROTO_TOKENIZE_REPLY &&
              r.m.u.tokenize_reply.ids.offs[1] == 256);
        tb_reply_free(&r);
        m.id = ++g_id;
        m.u.tokenize.truncate = false;
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_INPUT_TOO_LONG);
        com_proto_msg_init(&m, COM_PROTO_EMBED, ++g_id);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, in, NULL, NULL};
        m.u.embed.truncate = false;
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_INPUT_TOO_LONG);
        free(longtext);
    }

    /* no worker: NO_WORKERS at the deadline */
    {
        int64_t t0 = com_clock_mono_us();
        uint64_t id = s_send_ids(client, 1, 5, 300);
        tb_reply_t r;
        CHECK(tb_wait(client, NULL, 0, 5000, &r));
        int64_t ms = (com_clock_mono_us() - t0) / 1000;
        CHECK_MSG(tb_code(&r) == COM_PROTO_NO_WORKERS && r.m.id == id, "code %u", tb_code(&r));
        CHECK_MSG(ms >= 280 && ms < 2000, "NO_WORKERS after %lld ms", (long long)ms);
        tb_reply_free(&r);
    }

    /* hostile client frames */
    {
        const uint8_t dd[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
        const char garbage[] = "this is not msgpack at all";
        const void *f1[] = {dd};
        size_t l1[] = {sizeof dd};
        s_hostile(client, "dd ff ff ff ff", f1, l1, 1);
        const void *f2[] = {garbage};
        size_t l2[] = {sizeof garbage};
        s_hostile(client, "garbage", f2, l2, 1);
        const void *f3[] = {"", NULL};
        size_t l3[] = {0};
        s_hostile(client, "empty frame", f3, l3, 1);
        /* a valid message split over three frames */
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_INFO, 77);
        com_proto_buf_t buf = {0};
        CHECK(com_proto_encode(&m, &buf, NULL) == 0);
        const void *f4[] = {buf.data, buf.data, buf.data};
        size_t l4[] = {buf.len, buf.len, buf.len};
        s_hostile(client, "3 frames", f4, l4, 3);
        com_proto_buf_free(&buf);
        /* truncated valid messages */
        com_proto_str_t in[1] = {s_str("hello there")};
        com_proto_msg_init(&m, COM_PROTO_EMBED, 78);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, in, NULL, NULL};
        CHECK(com_proto_encode(&m, &buf, NULL) == 0);
        for (size_t cut = 1; cut < buf.len; cut += 7) {
            const void *f5[] = {buf.data};
            size_t l5[] = {buf.len - cut};
            s_hostile(client, "truncated", f5, l5, 1);
        }
        com_proto_buf_free(&buf);
        /* a worker's message on the frontend */
        com_proto_msg_init(&m, COM_PROTO_HEARTBEAT, 79);
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_BAD_REQUEST);
        /* another protocol version */
        com_proto_msg_init(&m, COM_PROTO_INFO, 80);
        m.version = 2;
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_UNSUPPORTED_VERSION);
    }
    /* an oversized frame (> ZMQ_MAXMSGSIZE): libzmq drops that connection; no reply */
    {
        void *big = tb_client(g_ctx, bp.front);
        size_t n = (64u << 20) + 64;
        char *data = calloc(1, n);
        zmq_send(big, data, n, 0);
        free(data);
        tb_reply_t r;
        CHECK(!tb_wait(big, NULL, 0, 1000, &r));
        tb_reply_free(&r);
        zmq_close(big);
    }
    s_info(client, NULL, 0, 0); /* still serving */

    /* request checks */
    {
        com_proto_msg_t m;
        int32_t ids[300];
        int32_t offs[2] = {0, 3};
        for (int i = 0; i < 300; i++)
            ids[i] = 101 + i;
        com_proto_msg_init(&m, COM_PROTO_EMBED, ++g_id);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 1, NULL, ids, offs};
        ids[1] = 30522; /* vocab size: out of range */
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_BAD_REQUEST);
        ids[1] = 102;
        offs[1] = 300; /* > max_seq_length 256, never truncated */
        m.id = ++g_id;
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_INPUT_TOO_LONG);
        offs[1] = 3;
        m.id = ++g_id;
        m.u.embed.dims = 1000;
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_UNSUPPORTED);
        m.id = ++g_id;
        m.u.embed.dims = 0;
        m.u.embed.model = s_str("some-other-model");
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_MODEL_MISMATCH);
        com_proto_str_t pair[2] = {s_str("q"), s_str("d")};
        com_proto_msg_init(&m, COM_PROTO_SCORE, ++g_id);
        m.u.score.n = 1;
        m.u.score.pairs = pair;
        CHECK(s_request_code(client, NULL, 0, &m) == COM_PROTO_UNSUPPORTED);
    }

    /* two workers: 2000 texts in chunks, results in input order */
    tb_worker_t w1, w2;
    CHECK(tb_worker_start(&w1, g_ctx, bp.back, "fake-w1", 1, MODEL, DIM, 2, TB_AUTO) == 0);
    CHECK(tb_worker_start(&w2, g_ctx, bp.back, "fake-w2", 2, MODEL, DIM, 2, TB_AUTO) == 0);
    tb_worker_t *ws[] = {&w1, &w2};
    PUMP_UNTIL(ws, 2, 5000, w1.hbs > 0 && w2.hbs > 0);
    s_info(client, ws, 2, 2);
    {
        enum { N = 2000 };
        char(*texts)[64] = malloc(N * sizeof *texts);
        com_proto_str_t *in = malloc(N * sizeof *in);
        for (int i = 0; i < N; i++) {
            snprintf(texts[i], sizeof texts[i], "text number %d about ember and %s", i,
                     i % 3 ? "chunks" : "reassembly in order");
            in[i] = s_str(texts[i]);
        }
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_EMBED, ++g_id);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, N, in, NULL, NULL};
        CHECK(tb_send(client, &m) == 0);
        tb_reply_t r;
        CHECK(tb_wait(client, ws, 2, 20000, &r));
        CHECK_MSG(r.got && r.m.type == COM_PROTO_EMBED_REPLY, "code %u", tb_code(&r));
        if (r.got && r.m.type == COM_PROTO_EMBED_REPLY) {
            const com_proto_embed_reply_t *e = &r.m.u.embed_reply;
            CHECK(e->emb.n == N && e->emb.dim == DIM);
            float *got = malloc((size_t)N * DIM * sizeof *got);
            com_proto_tensor_unpack(&e->emb, got);
            com_encoding_t enc;
            com_encoding_init(&enc);
            com_encode_opts_t o = com_encode_opts_default();
            o.max_length = 256;
            int bad = 0, by[3] = {0, 0, 0};
            uint64_t total = 0;
            for (int i = 0; i < N; i++) {
                com_tokenizer_encode(g_tok, texts[i], strlen(texts[i]), &o, &enc, NULL);
                float want[DIM];
                const float *row = got + (size_t)i * DIM;
                int wi = (int)row[4];
                tb_row(enc.ids, enc.len, wi, DIM, want);
                if (memcmp(want, row, sizeof want) != 0 || e->ntok[i] != (uint32_t)enc.len ||
                    wi < 1 || wi > 2)
                    bad++;
                else
                    by[wi]++;
                total += (uint64_t)enc.len;
            }
            com_encoding_free(&enc);
            CHECK_MSG(bad == 0, "%d of %d rows wrong", bad, N);
            CHECK(e->usage.tokens == total);
            CHECK_MSG(by[1] > 0 && by[2] > 0, "rows by worker: %d %d", by[1], by[2]);
            CHECK(e->timing.total_us > 0 && e->timing.tokenize_us > 0);
            free(got);
        }
        CHECK_MSG(w1.chunks_got + w2.chunks_got >= 2, "chunks %d + %d", w1.chunks_got,
                  w2.chunks_got);
        tb_reply_free(&r);
        free(texts);
        free(in);
    }
    /* f16 with dims: the broker passes dt and dims to the workers */
    {
        int32_t ids[] = {101, 7592, 2088, 102, 101, 102};
        int32_t offs[] = {0, 4, 6};
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_EMBED, ++g_id);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 2, NULL, ids, offs};
        m.u.embed.dtype = COM_PROTO_F16;
        m.u.embed.dims = 8;
        CHECK(tb_send(client, &m) == 0);
        tb_reply_t r;
        CHECK(tb_wait(client, ws, 2, 5000, &r));
        CHECK(r.got && r.m.type == COM_PROTO_EMBED_REPLY);
        if (r.got && r.m.type == COM_PROTO_EMBED_REPLY) {
            const com_proto_tensor_t *t = &r.m.u.embed_reply.emb;
            CHECK(t->dtype == COM_PROTO_F16 && t->n == 2 && t->dim == 8 && t->nbytes == 32);
            float got[16];
            com_proto_tensor_unpack(t, got);
            CHECK(got[0] == com_half_to_f32(com_half_from_f32(101 + 7592 + 2088 + 102)));
            CHECK(got[1] == 4 && got[8] == 203 && got[9] == 2 && got[10] == 101);
        }
        tb_reply_free(&r);
    }
    /* hostile worker traffic: garbage, extra frames, a client message on the backend */
    {
        zmq_send(w1.sock, "garbage", 7, 0);
        zmq_send(w1.sock, "a", 1, ZMQ_SNDMORE);
        zmq_send(w1.sock, "b", 1, 0);
        zmq_send(w1.sock, "", 0, 0);
        com_proto_msg_t m;
        com_proto_str_t in[1] = {s_str("hi")};
        com_proto_msg_init(&m, COM_PROTO_EMBED, 5);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, in, NULL, NULL};
        tb_send(w1.sock, &m);
        /* a result nobody asked for */
        com_proto_msg_init(&m, COM_PROTO_RESULT, 123456789);
        m.u.result.failed = true;
        m.u.result.err_code = COM_PROTO_INTERNAL;
        m.u.result.err_msg = s_str("x");
        tb_send(w1.sock, &m);
        tb_pump(ws, 2, 100);
        uint64_t id = s_send_ids(client, 3, 7, 0);
        tb_reply_t r;
        CHECK(tb_wait(client, ws, 2, 5000, &r));
        s_check_ids_reply(&r, id, 3, 7);
        tb_reply_free(&r);
        CHECK(w1.disconnects == 0);
    }
    /* random frames on both sockets (mutated valid messages and noise): every client frame is
     * answered with an error or a reply, nothing crashes, service goes on */
    {
        com_prng_t rng;
        com_prng_seed(&rng, 12345);
        int32_t ids[] = {101, 7592, 102};
        int32_t offs[] = {0, 3};
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_EMBED, 4242);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 1, NULL, ids, offs};
        com_proto_buf_t good = {0};
        CHECK(com_proto_encode(&m, &good, NULL) == 0);
        uint8_t frame[256];
        int sent = 0, answered = 0;
        for (int i = 0; i < 300; i++) {
            size_t len;
            if (i % 2) {
                len = good.len;
                memcpy(frame, good.data, len);
                for (int k = 0; k < 3; k++)
                    frame[com_prng_below(&rng, len)] = (uint8_t)com_prng_next(&rng);
                if (com_prng_below(&rng, 3) == 0)
                    len = 1 + com_prng_below(&rng, len);
            } else {
                len = 1 + com_prng_below(&rng, sizeof frame);
                for (size_t k = 0; k < len; k++)
                    frame[k] = (uint8_t)com_prng_next(&rng);
            }
            zmq_send(i % 3 ? client : w2.sock, frame, len, 0);
            sent += i % 3 != 0;
        }
        com_proto_buf_free(&good);
        for (;;) {
            tb_reply_t r;
            bool got = tb_wait(client, ws, 2, 1000, &r);
            tb_reply_free(&r);
            if (!got)
                break;
            answered++;
        }
        CHECK_MSG(answered == sent, "%d of %d random client frames answered", answered, sent);
        uint64_t id = s_send_ids(client, 4, 9, 0);
        tb_reply_t r;
        CHECK(tb_wait(client, ws, 2, 5000, &r));
        s_check_ids_reply(&r, id, 4, 9);
        tb_reply_free(&r);
    }
    /* an unknown worker gets disconnect; a mismatched model gets disconnect with the reason */
    {
        void *stranger = zmq_socket(g_ctx, ZMQ_DEALER);
        int zero = 0;
        zmq_setsockopt(stranger, ZMQ_LINGER, &zero, sizeof zero);
        zmq_connect(stranger, bp.back);
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_HEARTBEAT, 1);
        tb_send(stranger, &m);
        tb_reply_t r;
        CHECK(tb_wait(stranger, ws, 2, 3000, &r));
        CHECK(r.got && r.m.type == COM_PROTO_DISCONNECT && r.m.u.disconnect.reason.len > 0 &&
              !memcmp(r.m.u.disconnect.reason.ptr, "unknown worker", 14));
        tb_reply_free(&r);
        zmq_close(stranger);
        tb_worker_t wm;
        CHECK(tb_worker_start(&wm, g_ctx, bp.back, "fake-wrong", 3, "another-model", DIM, 2,
                              TB_AUTO) == 0);
        wm.heartbeat = false; /* its heartbeats would be answered "unknown worker" */
        tb_worker_t *all[] = {&w1, &w2, &wm};
        PUMP_UNTIL(all, 3, 5000, wm.disconnects > 0);
        tb_pump(all, 3, 100);
        CHECK(wm.disconnects == 1 && strstr(wm.last_why, "model mismatch"));
        tb_worker_stop(&wm);
        s_info(client, ws, 2, 2);
    }

    /* score: a cross-encoder worker (task score, dim 1) makes score requests possible; pairs
     * are tokenized together and sent with their first-segment lengths */
    {
        tb_worker_t sc;
        CHECK(tb_worker_start_task(&sc, g_ctx, bp.back, "fake-scorer", 4, MODEL, 1, 2, TB_AUTO,
                                   COM_PROTO_TASK_SCORE) == 0);
        tb_worker_t *all[] = {&w1, &w2, &sc};
        PUMP_UNTIL(all, 3, 5000, sc.hbs > 0);
        const char *q[3][2] = {{"what is ember?", "a C embedding server"},
                               {"q", "d"},
                               {"where", "nowhere at all, really"}};
        com_proto_str_t pairs[6];
        for (int i = 0; i < 3; i++) {
            pairs[2 * i] = s_str(q[i][0]);
            pairs[2 * i + 1] = s_str(q[i][1]);
        }
        com_proto_msg_t m;
        com_proto_msg_init(&m, COM_PROTO_SCORE, ++g_id);
        m.u.score.n = 3;
        m.u.score.pairs = pairs;
        CHECK(tb_send(client, &m) == 0);
        tb_reply_t r;
        CHECK(tb_wait(client, all, 3, 5000, &r));
        CHECK_MSG(r.got && r.m.type == COM_PROTO_SCORE_REPLY, "score: code %u", tb_code(&r));
        if (r.got && r.m.type == COM_PROTO_SCORE_REPLY) {
            float got[3];
            CHECK(r.m.u.score_reply.scores.n == 3);
            com_proto_tensor_unpack(&r.m.u.score_reply.scores, got);
            com_encoding_t enc;
            com_encoding_init(&enc);
            com_encode_opts_t o = com_encode_opts_default();
            o.max_length = 256;
            for (int i = 0; i < 3; i++) {
                com_tokenizer_encode_pair(g_tok, q[i][0], strlen(q[i][0]), q[i][1], strlen(q[i][1]),
                                          &o, &enc, NULL);
                float want;
                tb_row(enc.ids, enc.len, 4, 1, &want);
                CHECK(got[i] == want && r.m.u.score_reply.ntok[i] == (uint32_t)enc.len);
            }
            com_encoding_free(&enc);
        }
        tb_reply_free(&r);
        CHECK(sc.chunks_got >= 1 && sc.seg_chunks == sc.chunks_got);
        CHECK(w1.seg_chunks == 0 && w2.seg_chunks == 0);
        com_proto_msg_init(&m, COM_PROTO_DISCONNECT, 3);
        tb_send(sc.sock, &m);
        tb_pump(all, 3, 100);
        tb_worker_stop(&sc);
    }

    /* the registry record (written by the agent thread every heartbeat) */
    com_registry_t *reg = NULL;
    if (have_redis && com_registry_new(redis.url, NULL, &reg, NULL) == 0) {
        tb_worker_t *ws2[] = {&w1, &w2};
        tb_pump(ws2, 2, 300);
        com_broker_record_t *recs = NULL;
        size_t n = 0;
        CHECK(com_registry_list_brokers(reg, &recs, &n, NULL) == 0);
        CHECK_MSG(n == 1 && !strcmp(recs[0].id, "tb-basic"), "%zu brokers", n);
        if (n == 1) {
            CHECK(!strcmp(recs[0].model, MODEL) && !strcmp(recs[0].state, "ready"));
            CHECK(!strcmp(recs[0].frontend, bp.front) && !strcmp(recs[0].backend, bp.back));
            CHECK(recs[0].workers == 2 && recs[0].requests_done >= 5 &&
                  recs[0].requests_failed >= 5 && recs[0].chunks_sent >= 2 &&
                  recs[0].pid == (int64_t)bp.pid);
        }
        free(recs);
    }
    int rc = tb_broker_stop(&bp, SIGTERM, 10000);
    CHECK_MSG(rc == 0, "broker exit %d", rc);
    if (reg) {
        com_broker_record_t *recs = NULL;
        size_t n = 1;
        CHECK(com_registry_list_brokers(reg, &recs, &n, NULL) == 0 && n == 0); /* deregistered */
        free(recs);
        com_registry_destroy(&reg);
    }
    if (have_redis)
        test_redis_destroy(&redis);
    CHECK(tb_broker_counter(&bp, "bad_frames") >= 3);
    CHECK(tb_broker_counter(&bp, "bad_client_msgs") >= 5);
    CHECK(tb_broker_counter(&bp, "bad_worker_msgs") >= 2);
    CHECK(tb_broker_counter(&bp, "unknown_worker_msgs") >= 1);
    CHECK(tb_broker_counter(&bp, "model_mismatches") == 1);
    CHECK(tb_broker_counter(&bp, "deadline_misses") == 1);
    CHECK(tb_broker_counter(&bp, "tokens_tokenized") > 2000);
    if (test_checks_failed)
        tb_broker_dump(&bp);
    tb_worker_stop(&w1);
    tb_worker_stop(&w2);
    zmq_close(client);
}

static void s_scenario_loss(void) {
    tb_broker_t bp;
    const char *args[] = {"--heartbeat-ms", "100", "--chunk-tokens", "256", "--chunk-timeout-ms",
                          "20000",          NULL};
    if (tb_broker_start(&bp, g_bin, "loss", args) != 0) {
        CHECK(0);
        return;
    }
    void *client = tb_client(g_ctx, bp.front);
    tb_worker_t h, w;
    CHECK(tb_worker_start(&h, g_ctx, bp.back, "fake-hold", 1, MODEL, DIM, 2, TB_HOLD) == 0);
    tb_worker_t *ws[] = {&h, &w};
    PUMP_UNTIL(ws, 1, 5000, h.hbs > 0);

    /* 5 inputs of 200 ids = 5 chunks; the holding worker gets exactly its 2 credits */
    uint64_t id = s_send_ids(client, 5, 200, 10000);
    PUMP_UNTIL(ws, 1, 5000, h.chunks_got >= 2);
    tb_pump(ws, 1, 300);
    CHECK_MSG(h.chunks_got == 2, "holding worker got %d chunks for 2 credits", h.chunks_got);

    /* a second worker takes the other 3 */
    CHECK(tb_worker_start(&w, g_ctx, bp.back, "fake-auto", 2, MODEL, DIM, 4, TB_AUTO) == 0);
    PUMP_UNTIL(ws, 2, 5000, w.chunks_got >= 3);
    tb_pump(ws, 2, 100);
    CHECK_MSG(w.chunks_got == 3 && w.att_seen[0] == 3, "second worker got %d", w.chunks_got);
    CHECK(h.chunks_got == 2);

    /* the holding worker goes silent: lost after 3 heartbeats, its chunks go to w as att 1 */
    h.heartbeat = false;
    tb_reply_t r;
    tb_worker_t *only_w[] = {&w};
    CHECK(tb_wait(client, only_w, 1, 5000, &r));
    s_check_ids_reply(&r, id, 5, 200);
    tb_reply_free(&r);
    CHECK_MSG(w.att_seen[1] == 2, "re-dispatched chunks seen: %d", w.att_seen[1]);

    /* its results arrive late: dropped, and it is told it is unknown */
    tb_worker_release(&h);
    h.heartbeat = true;
    PUMP_UNTIL(ws, 2, 5000, h.disconnects > 0);
    CHECK(h.disconnects >= 1 && strstr(h.last_why, "unknown worker"));
    tb_worker_stop(&h);

    /* SIGTERM drain: the request in flight finishes, new ones get UNAVAILABLE */
    w.mode = TB_HOLD;
    id = s_send_ids(client, 1, 10, 10000);
    PUMP_UNTIL(only_w, 1, 5000, w.n_held == 1);
    CHECK(w.n_held == 1);
    kill(bp.pid, SIGTERM);
    PUMP_UNTIL(only_w, 1, 5000, w.drains > 0);
    CHECK(w.drains == 1);
    void *client2 = tb_client(g_ctx, bp.front);
    s_send_ids(client2, 1, 10, 0);
    CHECK(tb_wait(client2, only_w, 1, 3000, &r));
    CHECK_MSG(tb_code(&r) == COM_PROTO_UNAVAILABLE, "while draining: code %u", tb_code(&r));
    tb_reply_free(&r);
    tb_worker_release(&w);
    CHECK(tb_wait(client, only_w, 1, 3000, &r));
    s_check_ids_reply(&r, id, 1, 10);
    tb_reply_free(&r);
    PUMP_UNTIL(only_w, 1, 5000, w.disconnects > 0);
    CHECK(w.disconnects == 1);
    int rc = tb_broker_stop(&bp, 0, 10000);
    CHECK_MSG(rc == 0, "broker exit %d", rc);
    CHECK(tb_broker_counter(&bp, "workers_lost") == 1);
    CHECK(tb_broker_counter(&bp, "chunks_redispatched") == 2);
    CHECK(tb_broker_counter(&bp, "duplicates_dropped") >= 2);
    CHECK(tb_broker_counter(&bp, "requests_ok") == 2);
    if (test_checks_failed)
        tb_broker_dump(&bp);
    tb_worker_stop(&w);
    zmq_close(client);
    zmq_close(client2);
}

static void s_scenario_late(void) {
    tb_broker_t bp;
    const char *args[] = {"--heartbeat-ms",
                          "100",
                          "--chunk-tokens",
                          "256",
                          "--chunk-timeout-ms",
                          "500",
                          "--max-queued-tokens",
                          "300",
                          "--tokenizer-threads",
                          "1",
                          NULL};
    if (tb_broker_start(&bp, g_bin, "late", args) != 0) {
        CHECK(0);
        return;
    }
    void *client = tb_client(g_ctx, bp.front);
    tb_worker_t s, w;
    memset(&w, 0, sizeof w);
    CHECK(tb_worker_start(&s, g_ctx, bp.back, "fake-slow", 1, MODEL, DIM, 1, TB_HOLD) == 0);
    tb_worker_t *ws[] = {&s, &w};
    PUMP_UNTIL(ws, 1, 5000, s.hbs > 0);

    /* late: the slow worker keeps its chunk past 500 ms; it is queued again (att 1), and the
     * new worker gets it */
    uint64_t id = s_send_ids(client, 1, 200, 10000);
    PUMP_UNTIL(ws, 1, 5000, s.chunks_got > 0);
    tb_pump(ws, 1, 700); /* past --chunk-timeout-ms: queued again, no credit anywhere */
    CHECK(s.chunks_got == 1);
    CHECK(tb_worker_start(&w, g_ctx, bp.back, "fake-fast", 2, MODEL, DIM, 1, TB_AUTO) == 0);
    tb_reply_t r;
    CHECK(tb_wait(client, ws, 2, 5000, &r));
    s_check_ids_reply(&r, id, 1, 200);
    tb_reply_free(&r);
    CHECK(w.att_seen[1] == 1);
    /* the slow worker's answer now is a duplicate: dropped, the worker stays known */
    tb_worker_release(&s);
    tb_pump(ws, 2, 200);
    CHECK(s.disconnects == 0);
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_DISCONNECT, 9);
    tb_send(s.sock, &m);
    tb_pump(ws, 2, 200);

    /* deadline with a worker connected: DEADLINE_EXCEEDED */
    w.mode = TB_HOLD;
    int64_t t0 = com_clock_mono_us();
    id = s_send_ids(client, 1, 20, 300);
    tb_worker_t *only_w[] = {&w};
    CHECK(tb_wait(client, only_w, 1, 5000, &r));
    int64_t ms = (com_clock_mono_us() - t0) / 1000;
    CHECK_MSG(tb_code(&r) == COM_PROTO_DEADLINE_EXCEEDED && r.m.id == id, "code %u", tb_code(&r));
    CHECK_MSG(ms >= 280 && ms < 2000, "DEADLINE_EXCEEDED after %lld ms", (long long)ms);
    tb_reply_free(&r);

    /* overload: w's only credit is still taken; 200 tokens queue, 200 more exceed 300 */
    void *c2 = tb_client(g_ctx, bp.front);
    uint64_t id2 = s_send_ids(c2, 1, 200, 10000);
    s_info(c2, only_w, 1, 1); /* answered in order: the request before is queued now */
    t0 = com_clock_mono_us();
    s_send_ids(client, 1, 200, 10000);
    CHECK(tb_wait(client, only_w, 1, 3000, &r));
    CHECK_MSG(tb_code(&r) == COM_PROTO_OVERLOADED, "code %u", tb_code(&r));
    CHECK((com_clock_mono_us() - t0) < 1000000);
    tb_reply_free(&r);
    /* the worker answers: the expired request's result is dropped, the queued one runs */
    w.mode = TB_AUTO;
    tb_worker_release(&w);
    CHECK(tb_wait(c2, only_w, 1, 5000, &r));
    s_check_ids_reply(&r, id2, 1, 200);
    tb_reply_free(&r);

    /* a worker that fails every chunk: re-dispatched until --max-attempts (3), then
     * UNAVAILABLE */
    w.mode = TB_FAIL;
    int before = w.chunks_got;
    id = s_send_ids(client, 1, 30, 10000);
    CHECK(tb_wait(client, only_w, 1, 5000, &r));
    CHECK_MSG(tb_code(&r) == COM_PROTO_UNAVAILABLE && r.m.id == id, "code %u", tb_code(&r));
    tb_reply_free(&r);
    CHECK_MSG(w.chunks_got - before == 3, "%d attempts", w.chunks_got - before);

    int rc = tb_broker_stop(&bp, SIGTERM, 10000);
    CHECK_MSG(rc == 0, "broker exit %d", rc);
    CHECK(tb_broker_counter(&bp, "chunk_errors") == 3);
    CHECK(tb_broker_counter(&bp, "chunks_late") >= 1);
    CHECK(tb_broker_counter(&bp, "duplicates_dropped") >= 2);
    CHECK(tb_broker_counter(&bp, "overloads") == 1);
    CHECK(tb_broker_counter(&bp, "deadline_misses") == 1);
    if (test_checks_failed)
        tb_broker_dump(&bp);
    tb_worker_stop(&s);
    tb_worker_stop(&w);
    zmq_close(client);
    zmq_close(c2);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_broker PATH-TO-ember-broker basic|loss|late\n");
        return 2;
    }
    test_require_model();
    g_bin = argv[1];
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", test_model_dir());
    com_error_t err = {0};
    if (com_tokenizer_load(path, &g_tok, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    g_ctx = zmq_ctx_new();
    if (!strcmp(argv[2], "basic"))
        s_scenario_basic();
    else if (!strcmp(argv[2], "loss"))
        s_scenario_loss();
    else if (!strcmp(argv[2], "late"))
        s_scenario_late();
    else
        fprintf(stderr, "unknown scenario %s\n", argv[2]);
    zmq_ctx_term(g_ctx);
    com_tokenizer_destroy(&g_tok);
    return test_finish();
}
