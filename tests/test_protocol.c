/* tests/test_protocol.c — common/protocol.c: every message type round-trips with randomised
 * contents (seeded PRNG), forward compatibility (extra keys of every msgpack type, before and
 * after the known ones), every required key missing, every key with a value of another type,
 * every known key duplicated, every limit at the limit (accepted) and at limit + 1 (TOO_LARGE,
 * message naming the limit), truncation at every prefix length, hostile inputs (huge declared
 * lengths, 1000-deep nesting, ext types, reserved bytes, non-map top level, bad versions),
 * encoder consistency checks, tensor packing, the committed fuzz seeds, and the decoder's fast
 * path against its strict path (header first vs last under byte mutations, nesting budgets,
 * error precedence, growing ids arrays, unusual id encodings).
 *
 * Every decode runs over an exact-size heap copy of the bytes, so an over-read is caught by
 * ASan (build-proto-asan, -DEMBER_SANITIZE=ON).
 * `protocol_messages --write-seeds DIR` writes one encoded message per type into DIR (that is
 * how tests/fuzz/seeds/fuzz_protocol/ was made). Single-threaded. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msgpack_read.h"
#include "common/prng.h"
#include "common/protocol.h"
#include "tests/test_util.h"

/* ---------------------------------------------------------------- scratch memory */

#define ARENA_MAX 64
typedef struct arena {
    void *blocks[ARENA_MAX];
    int n;
} arena_t;

static void *s_a(arena_t *a, size_t n) {
    if (a->n >= ARENA_MAX) {
        fprintf(stderr, "arena full\n");
        exit(1);
    }
    void *p = calloc(1, n ? n : 1);
    if (!p)
        exit(1);
    a->blocks[a->n++] = p;
    return p;
}

static void s_a_free(arena_t *a) {
    for (int i = 0; i < a->n; i++)
        free(a->blocks[i]);
    a->n = 0;
}

/* Decodes an exact-size heap copy of buf (so that ASan sees any over-read). */
static int s_decode(const void *buf, size_t len, const com_proto_limits_t *lim, com_proto_msg_t *m,
                    com_error_t *err, void **copy) {
    *copy = malloc(len ? len : 1);
    if (len)
        memcpy(*copy, buf, len);
    return com_proto_decode(len ? *copy : NULL, len, lim, m, err);
}

/* ---------------------------------------------------------------- random messages */

static uint64_t s_rand_u64(com_prng_t *p) {
    int bits = (int)com_prng_below(p, 65);
    return bits == 0 ? 0 : com_prng_next(p) >> (64 - bits);
}

static uint32_t s_rand_u32(com_prng_t *p) {
    return (uint32_t)(s_rand_u64(p) >> 32 ? s_rand_u64(p) & 0xffffffffu : s_rand_u64(p));
}

static com_proto_str_t s_rand_str(com_prng_t *p, arena_t *a, uint32_t max_len) {
    uint32_t len = (uint32_t)com_prng_below(p, max_len + 1);
    char *s = s_a(a, len);
    for (uint32_t i = 0; i < len; i++)
        s[i] = (char)com_prng_next(p); /* any bytes: UTF-8 is not checked */
    com_proto_str_t r = {s, len};
    return r;
}

static com_proto_str_t s_opt_str(com_prng_t *p, arena_t *a) {
    if (com_prng_below(p, 3) == 0) {
        com_proto_str_t none = {NULL, 0};
        return none;
    }
    return s_rand_str(p, a, 40);
}

static void s_rand_texts(com_prng_t *p, arena_t *a, com_proto_inputs_t *in) {
    in->kind = COM_PROTO_IN_TEXT;
    in->n = 1 + (uint32_t)com_prng_below(p, 8);
    in->texts = s_a(a, in->n * sizeof *in->texts);
    for (uint32_t i = 0; i < in->n; i++)
        in->texts[i] = s_rand_str(p, a, com_prng_below(p, 4) == 0 ? 300 : 30);
}

static void s_rand_ids(com_prng_t *p, arena_t *a, bool allow_empty, com_proto_inputs_t *in) {
    in->kind = COM_PROTO_IN_IDS;
    in->n = 1 + (uint32_t)com_prng_below(p, 8);
    in->offs = s_a(a, (in->n + 1) * sizeof *in->offs);
    int32_t total = 0;
    for (uint32_t i = 0; i < in->n; i++) {
        in->offs[i] = total;
        total += (int32_t)com_prng_below(p, 20) + (allow_empty ? 0 : 1);
    }
    in->offs[in->n] = total;
    in->ids = s_a(a, (size_t)total * sizeof *in->ids);
    for (int32_t j = 0; j < total; j++)
        in->ids[j] = (int32_t)(s_rand_u64(p) & 0x7fffffff);
}

static void s_rand_tensor(com_prng_t *p, arena_t *a, com_proto_tensor_t *t, uint32_t dim) {
    t->dtype = com_prng_below(p, 2) ? COM_PROTO_F16 : COM_PROTO_F32;
    t->n = 1 + (uint32_t)com_prng_below(p, 6);
    t->dim = dim ? dim : 1 + (uint32_t)com_prng_below(p, 24);
    t->nbytes = (size_t)t->n * t->dim * com_proto_dtype_size(t->dtype);
    uint8_t *d = s_a(a, t->nbytes);
    for (size_t i = 0; i < t->nbytes; i++)
        d[i] = (uint8_t)com_prng_next(p);
    t->data = d;
}

static uint32_t *s_rand_counts(com_prng_t *p, arena_t *a, uint32_t n) {
    uint32_t *c = s_a(a, n * sizeof *c);
    for (uint32_t i = 0; i < n; i++)
        c[i] = s_rand_u32(p);
    return c;
}

static void s_rand_usage(com_prng_t *p, com_proto_usage_t *u, com_proto_timings_t *t) {
    u->tokens = s_rand_u64(p);
    t->tokenize_us = s_rand_u64(p);
    t->queue_us = s_rand_u64(p);
    t->compute_us = s_rand_u64(p);
    t->total_us = s_rand_u64(p);
}

static int32_t s_rand_norm(com_prng_t *p) {
    return (int32_t)com_prng_below(p, 3) - 1;
}

/* Fills m with a random valid message of type t; storage comes from a. */
static void s_rand_msg(com_prng_t *p, arena_t *a, com_proto_type_t t, com_proto_msg_t *m) {
    com_proto_msg_init(m, t, s_rand_u64(p));
    switch (t) {
    case COM_PROTO_EMBED: {
        com_proto_embed_t *b = &m->u.embed;
        if (com_prng_below(p, 2))
            s_rand_texts(p, a, &b->in);
        else
            s_rand_ids(p, a, false, &b->in);
        b->model = s_opt_str(p, a);
        b->normalize = s_rand_norm(p);
        b->dims = (uint32_t)com_prng_below(p, 3) * (uint32_t)com_prng_below(p, 4096);
        b->dtype = com_prng_below(p, 2) ? COM_PROTO_F16 : COM_PROTO_F32;
        b->truncate = com_prng_below(p, 2);
        b->deadline_ms = com_prng_below(p, 2) ? s_rand_u32(p) : 0;
        break;
    }
    case COM_PROTO_SCORE: {
        com_proto_score_t *b = &m->u.score;
        b->n = 1 + (uint32_t)com_prng_below(p, 6);
        b->pairs = s_a(a, 2 * b->n * sizeof *b->pairs);
        for (uint32_t i = 0; i < 2 * b->n; i++)
            b->pairs[i] = s_rand_str(p, a, 50);
        b->model = s_opt_str(p, a);
        b->dtype = com_prng_below(p, 2) ? COM_PROTO_F16 : COM_PROTO_F32;
        b->truncate = com_prng_below(p, 2);
        b->deadline_ms = s_rand_u32(p);
        break;
    }
    case COM_PROTO_TOKENIZE: {
        com_proto_tokenize_t *b = &m->u.tokenize;
        s_rand_texts(p, a, &b->in);
        b->model = s_opt_str(p, a);
        b->truncate = com_prng_below(p, 2);
        b->deadline_ms = s_rand_u32(p);
        break;
    }
    case COM_PROTO_INFO:
        m->u.info.model = s_opt_str(p, a);
        break;
    case COM_PROTO_EMBED_REPLY: {
        com_proto_embed_reply_t *b = &m->u.embed_reply;
        b->model = s_opt_str(p, a);
        s_rand_tensor(p, a, &b->emb, 0);
        b->ntok = s_rand_counts(p, a, b->emb.n);
        s_rand_usage(p, &b->usage, &b->timing);
        break;
    }
    case COM_PROTO_SCORE_REPLY: {
        com_proto_score_reply_t *b = &m->u.score_reply;
        b->model = s_opt_str(p, a);
        s_rand_tensor(p, a, &b->scores, 1);
        b->ntok = s_rand_counts(p, a, b->scores.n);
        s_rand_usage(p, &b->usage, &b->timing);
        break;
    }
    case COM_PROTO_TOKENIZE_REPLY: {
        com_proto_tokenize_reply_t *b = &m->u.tokenize_reply;
        b->model = s_opt_str(p, a);
        s_rand_ids(p, a, true, &b->ids);
        s_rand_usage(p, &b->usage, &b->timing);
        break;
    }
    case COM_PROTO_INFO_REPLY: {
        com_proto_info_reply_t *b = &m->u.info_reply;
        b->ok = com_prng_below(p, 2);
        b->workers = s_rand_u32(p);
        b->model = s_opt_str(p, a);
        b->family = s_opt_str(p, a);
        b->version = s_opt_str(p, a);
        b->dim = s_rand_u32(p);
        b->max_seq = s_rand_u32(p);
        b->load_tokens = s_rand_u64(p);
        s_rand_usage(p, &b->usage, &b->timing);
        break;
    }
    case COM_PROTO_ERROR: {
        com_proto_error_msg_t *b = &m->u.error;
        b->code = (uint32_t)com_prng_below(p, 14);
        b->msg = s_rand_str(p, a, 80);
        s_rand_usage(p, &b->usage, &b->timing);
        break;
    }
    case COM_PROTO_READY: {
        com_proto_ready_t *b = &m->u.ready;
        b->worker_id = s_rand_str(p, a, 20);
        b->model = s_rand_str(p, a, 40);
        b->family = s_rand_str(p, a, 8);
        b->device = s_rand_str(p, a, 8);
        b->max_batch_tokens = 1 + (uint32_t)com_prng_below(p, 65536);
        b->dim = 1 + (uint32_t)com_prng_below(p, 4096);
        b->max_seq = 1 + s_rand_u32(p) % 100000;
        b->credits = s_rand_u32(p);
        b->task = com_prng_below(p, 2) ? COM_PROTO_TASK_SCORE : COM_PROTO_TASK_EMBED;
        break;
    }
    case COM_PROTO_CHUNK: {
        com_proto_chunk_t *b = &m->u.chunk;
        b->chunk_id = s_rand_u32(p);
        b->attempt = (uint32_t)com_prng_below(p, 5);
        s_rand_ids(p, a, false, &b->in);
        if (com_prng_below(p, 2)) {
            b->seg = s_a(a, b->in.n * sizeof *b->seg);
            for (uint32_t i = 0; i < b->in.n; i++)
                b->seg[i] =
                    (uint32_t)com_prng_below(p, (uint64_t)(b->in.offs[i + 1] - b->in.offs[i]) + 1);
        }
        b->normalize = s_rand_norm(p);
        b->dims = (uint32_t)com_prng_below(p, 2048);
        b->dtype = com_prng_below(p, 2) ? COM_PROTO_F16 : COM_PROTO_F32;
        b->deadline_ms = s_rand_u32(p);
        break;
    }
    case COM_PROTO_RESULT: {
        com_proto_result_t *b = &m->u.result;
        b->chunk_id = s_rand_u32(p);
        b->attempt = s_rand_u32(p);
        b->failed = com_prng_below(p, 3) == 0;
        if (b->failed) {
            b->err_code = (uint32_t)com_prng_below(p, 12);
            b->err_msg = s_rand_str(p, a, 60);
        } else {
            s_rand_tensor(p, a, &b->emb, 0);
        }
        b->timing.queue_us = s_rand_u64(p);
        b->timing.compute_us = s_rand_u64(p);
        break;
    }
    case COM_PROTO_HEARTBEAT:
        m->u.hb.load_tokens = s_rand_u64(p);
        m->u.hb.load_seqs = s_rand_u64(p);
        m->u.hb.batches_done = s_rand_u64(p);
        m->u.hb.credits = s_rand_u32(p);
        break;
    case COM_PROTO_DRAIN:
        m->u.drain.reason = s_opt_str(p, a);
        break;
    case COM_PROTO_DISCONNECT:
        m->u.disconnect.reason = s_opt_str(p, a);
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------- message surgery
 * Encoded messages start with a map32 header (5 bytes); these helpers rebuild the top-level
 * map from byte spans of its pairs, dropping, replacing or adding pairs. */

typedef struct span {
    size_t key_at, val_at, end; /* byte offsets: key, value, end of value */
    char key[32];               /* the key when it is a short string, else "" */
} span_t;

/* Lists the top-level pairs of an encoded message (must be valid). Returns the count. */
static uint32_t s_spans(const uint8_t *buf, size_t len, span_t *out, uint32_t cap) {
    com_mpr_t r;
    com_mpr_init(&r, buf, len);
    com_mpr_obj_t o;
    if (com_mpr_next(&r, &o, NULL) != 0 || o.kind != COM_MPR_MAP)
        return 0;
    uint32_t n = o.len < cap ? o.len : cap;
    for (uint32_t i = 0; i < n; i++) {
        out[i].key_at = com_mpr_offset(&r);
        com_mpr_t kr = r;
        com_mpr_obj_t k;
        com_mpr_next(&kr, &k, NULL);
        out[i].key[0] = '\0';
        if (k.kind == COM_MPR_STR && k.len < sizeof out[i].key) {
            memcpy(out[i].key, k.ptr, k.len);
            out[i].key[k.len] = '\0';
        }
        com_mpr_skip(&r, 64, NULL);
        out[i].val_at = com_mpr_offset(&r);
        com_mpr_skip(&r, 64, NULL);
        out[i].end = com_mpr_offset(&r);
    }
    return n;
}

typedef struct edit {
    const char *drop;     /* key to drop (NULL: none) */
    const char *replace;  /* key whose value is replaced by val (NULL: none) */
    const uint8_t *extra; /* raw bytes of extra pairs... */
    size_t extra_len;
    uint32_t extra_pairs;
    bool extra_first;   /* ...before the known pairs (else after) */
    const uint8_t *val; /* replacement value bytes */
    size_t val_len;
} edit_t;

/* Returns a malloc'd rebuilt message in *out_len bytes. */
static uint8_t *s_edit(const uint8_t *buf, size_t len, const edit_t *e, size_t *out_len) {
    span_t sp[64];
    uint32_t n = s_spans(buf, len, sp, 64);
    uint8_t *o = malloc(len + e->extra_len + e->val_len + 16);
    size_t at = 5;
    uint32_t pairs = 0;
    if (e->extra_first && e->extra_len) {
        memcpy(o + at, e->extra, e->extra_len);
        at += e->extra_len;
        pairs += e->extra_pairs;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (e->drop && strcmp(sp[i].key, e->drop) == 0)
            continue;
        if (e->replace && strcmp(sp[i].key, e->replace) == 0) {
            memcpy(o + at, buf + sp[i].key_at, sp[i].val_at - sp[i].key_at);
            at += sp[i].val_at - sp[i].key_at;
            memcpy(o + at, e->val, e->val_len);
            at += e->val_len;
        } else {
            memcpy(o + at, buf + sp[i].key_at, sp[i].end - sp[i].key_at);
            at += sp[i].end - sp[i].key_at;
        }
        pairs++;
    }
    if (!e->extra_first && e->extra_len) {
        memcpy(o + at, e->extra, e->extra_len);
        at += e->extra_len;
        pairs += e->extra_pairs;
    }
    o[0] = 0xdf;
    o[1] = (uint8_t)(pairs >> 24);
    o[2] = (uint8_t)(pairs >> 16);
    o[3] = (uint8_t)(pairs >> 8);
    o[4] = (uint8_t)pairs;
    *out_len = at;
    return o;
}

/* A msgpack-c packer into an sbuffer, for hand-made bytes. */
typedef struct pk {
    msgpack_sbuffer sb;
    msgpack_packer p;
} pk_t;

static void s_pk_init(pk_t *k) {
    msgpack_sbuffer_init(&k->sb);
    msgpack_packer_init(&k->p, &k->sb, msgpack_sbuffer_write);
}

static void s_pk_str(pk_t *k, const char *s) {
    msgpack_pack_str_with_body(&k->p, s, strlen(s));
}

/* Expects decode(buf) to fail with rc and perr; prints the message. Returns the message. */
static void s_expect_fail(const char *what, const void *buf, size_t len,
                          const com_proto_limits_t *lim, int rc_want, com_proto_code_t perr,
                          const char *msg_has) {
    com_proto_msg_t m;
    com_error_t err = {0};
    void *copy;
    int rc = s_decode(buf, len, lim, &m, &err, &copy);
    CHECK_MSG(rc == rc_want && m.perr == perr, "%s: rc %s perr %s (%s), want %s %s", what,
              com_error_name(rc), com_proto_code_name(m.perr), err.msg, com_error_name(rc_want),
              com_proto_code_name(perr));
    if (msg_has)
        CHECK_MSG(strstr(err.msg, msg_has) != NULL, "%s: message \"%s\" lacks \"%s\"", what,
                  err.msg, msg_has);
    CHECK(m.n_owned_ == 0);
    com_proto_msg_free(&m);
    free(copy);
}

static void s_expect_ok(const char *what, const void *buf, size_t len,
                        const com_proto_limits_t *lim, const com_proto_msg_t *want) {
    com_proto_msg_t m;
    com_error_t err = {0};
    void *copy;
    int rc = s_decode(buf, len, lim, &m, &err, &copy);
    CHECK_MSG(rc == 0 && m.perr == COM_PROTO_OK, "%s: rc %s: %s", what, com_error_name(rc),
              err.msg);
    if (rc == 0 && want)
        CHECK_MSG(com_proto_msg_equal(&m, want), "%s: decoded message differs", what);
    com_proto_msg_free(&m);
    free(copy);
}

/* ---------------------------------------------------------------- round trips */

static void test_roundtrip(void) {
    com_prng_t p;
    com_prng_seed(&p, 20240611);
    for (int t = 1; t < COM_PROTO_TYPE_COUNT; t++) {
        int ok = 0;
        for (int it = 0; it < 300; it++) {
            arena_t a = {0};
            com_proto_msg_t m;
            s_rand_msg(&p, &a, (com_proto_type_t)t, &m);
            com_proto_buf_t b1 = {0}, b2 = {0};
            com_error_t err = {0};
            int rc = com_proto_encode(&m, &b1, &err);
            CHECK_MSG(rc == 0, "encode %s: %s", com_proto_type_name(m.type), err.msg);
            com_proto_msg_t d;
            void *copy = NULL;
            rc = rc == 0 ? s_decode(b1.data, b1.len, NULL, &d, &err, &copy) : rc;
            CHECK_MSG(rc == 0, "decode %s: %s", com_proto_type_name(m.type), err.msg);
            if (rc == 0) {
                CHECK_MSG(com_proto_msg_equal(&m, &d), "%s: round trip differs (iteration %d)",
                          com_proto_type_name(m.type), it);
                /* Encoding is deterministic: re-encoding the decoded message gives the same
                 * bytes. */
                CHECK(com_proto_encode(&d, &b2, &err) == 0);
                CHECK(b2.len == b1.len && memcmp(b1.data, b2.data, b1.len) == 0);
                ok += com_proto_msg_equal(&m, &d);
                com_proto_msg_free(&d);
            }
            free(copy);
            com_proto_buf_free(&b1);
            com_proto_buf_free(&b2);
            s_a_free(&a);
        }
        CHECK_MSG(ok == 300, "%s: %d/300 round trips", com_proto_type_name((com_proto_type_t)t),
                  ok);
    }
}

/* The typed wrappers and the generic encoder agree. */
static void test_typed_encoders(void) {
    com_prng_t p;
    com_prng_seed(&p, 7);
    arena_t a = {0};
    com_proto_buf_t x = {0}, y = {0};
    com_proto_msg_t m;
    s_rand_msg(&p, &a, COM_PROTO_EMBED, &m);
    CHECK(com_proto_encode(&m, &x, NULL) == 0);
    CHECK(com_proto_encode_embed(m.id, &m.u.embed, &y, NULL) == 0);
    CHECK(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
    com_proto_buf_free(&x);
    com_proto_buf_free(&y);
    s_rand_msg(&p, &a, COM_PROTO_CHUNK, &m);
    CHECK(com_proto_encode(&m, &x, NULL) == 0);
    CHECK(com_proto_encode_chunk(m.id, &m.u.chunk, &y, NULL) == 0);
    CHECK(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
    com_proto_buf_free(&x);
    com_proto_buf_free(&y);
    s_rand_msg(&p, &a, COM_PROTO_HEARTBEAT, &m);
    CHECK(com_proto_encode(&m, &x, NULL) == 0);
    CHECK(com_proto_encode_heartbeat(m.id, &m.u.hb, &y, NULL) == 0);
    CHECK(x.len == y.len && memcmp(x.data, y.data, x.len) == 0);
    com_proto_buf_free(&x);
    com_proto_buf_free(&y);

    /* reply_error: a decodable error carrying the id, the code and the text. */
    CHECK(com_proto_reply_error(77, COM_PROTO_NO_WORKERS, &x, NULL, "no %s", "workers") == 0);
    com_proto_msg_t d;
    CHECK(com_proto_decode(x.data, x.len, NULL, &d, NULL) == 0);
    CHECK(d.type == COM_PROTO_ERROR && d.id == 77 && d.u.error.code == COM_PROTO_NO_WORKERS);
    CHECK(d.u.error.msg.len == 10 && memcmp(d.u.error.msg.ptr, "no workers", 10) == 0);
    com_proto_msg_free(&d);
    com_proto_buf_free(&x);
    s_a_free(&a);
}

/* A fixed embed request, decoded field by field (the documented defaults included). */
static void test_known_values(void) {
    pk_t k;
    s_pk_init(&k);
    msgpack_pack_map(&k.p, 4);
    s_pk_str(&k, "v");
    msgpack_pack_uint8(&k.p, 1);
    s_pk_str(&k, "t");
    s_pk_str(&k, "embed");
    s_pk_str(&k, "id");
    msgpack_pack_uint64(&k.p, 0xfedcba9876543210ULL);
    s_pk_str(&k, "in");
    msgpack_pack_array(&k.p, 2);
    s_pk_str(&k, "hello");
    s_pk_str(&k, "");
    com_proto_msg_t m;
    com_error_t err = {0};
    void *copy;
    int rc = s_decode(k.sb.data, k.sb.size, NULL, &m, &err, &copy);
    CHECK_MSG(rc == 0, "%s", err.msg);
    CHECK(m.type == COM_PROTO_EMBED && m.version == 1 && m.id == 0xfedcba9876543210ULL);
    CHECK(m.u.embed.in.kind == COM_PROTO_IN_TEXT && m.u.embed.in.n == 2);
    CHECK(rc != 0 ||
          (m.u.embed.in.texts[0].len == 5 && memcmp(m.u.embed.in.texts[0].ptr, "hello", 5) == 0 &&
           m.u.embed.in.texts[1].len == 0));
    CHECK(m.u.embed.normalize == -1 && m.u.embed.truncate && m.u.embed.dims == 0 &&
          m.u.embed.dtype == COM_PROTO_F32 && m.u.embed.deadline_ms == 0 &&
          m.u.embed.model.ptr == NULL);
    /* Strings are views into the decoded buffer (zero-copy). */
    CHECK(rc != 0 || ((const char *)m.u.embed.in.texts[0].ptr >= (const char *)copy &&
                      (const char *)m.u.embed.in.texts[0].ptr < (const char *)copy + k.sb.size));
    com_proto_msg_free(&m);
    free(copy);
    msgpack_sbuffer_destroy(&k.sb);

    /* Token-id input in every integer encoding (fixint, u8, u16, u32, i8/i64 >= 0). */
    s_pk_init(&k);
    msgpack_pack_map(&k.p, 6);
    s_pk_str(&k, "v");
    msgpack_pack_fix_int64(&k.p, 1);
    s_pk_str(&k, "t");
    s_pk_str(&k, "chunk");
    s_pk_str(&k, "id");
    msgpack_pack_fix_uint32(&k.p, 5);
    s_pk_str(&k, "cid");
    msgpack_pack_uint8(&k.p, 3);
    s_pk_str(&k, "att");
    msgpack_pack_uint8(&k.p, 0);
    s_pk_str(&k, "in");
    msgpack_pack_array(&k.p, 2);
    msgpack_pack_array(&k.p, 3);
    msgpack_pack_fix_uint8(&k.p, 101);
    msgpack_pack_fix_uint16(&k.p, 7592);
    msgpack_pack_fix_uint32(&k.p, 2147483647u);
    msgpack_pack_array(&k.p, 2);
    msgpack_pack_fix_int8(&k.p, 0);
    msgpack_pack_fix_int64(&k.p, 102);
    rc = s_decode(k.sb.data, k.sb.size, NULL, &m, &err, &copy);
    CHECK_MSG(rc == 0, "%s", err.msg);
    if (rc == 0) {
        const com_proto_inputs_t *in = &m.u.chunk.in;
        CHECK(m.u.chunk.chunk_id == 3 && m.u.chunk.attempt == 0 && m.id == 5);
        CHECK(in->kind == COM_PROTO_IN_IDS && in->n == 2 && in->offs[0] == 0 && in->offs[1] == 3 &&
              in->offs[2] == 5);
        CHECK(in->ids[0] == 101 && in->ids[1] == 7592 && in->ids[2] == 2147483647 &&
              in->ids[3] == 0 && in->ids[4] == 102);
        CHECK(m.u.chunk.seg == NULL && m.u.chunk.normalize == -1);
    }
    com_proto_msg_free(&m);
    free(copy);
    msgpack_sbuffer_destroy(&k.sb);
}

/* ---------------------------------------------------------------- forward compatibility */

/* Packs one unknown pair of every msgpack type into k; returns the number of pairs. */
static uint32_t s_pack_extras(pk_t *k) {
    uint32_t n = 0;
    static const uint8_t ext_payload[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    s_pk_str(k, "x_nil");
    msgpack_pack_nil(&k->p);
    n++;
    s_pk_str(k, "x_bool");
    msgpack_pack_true(&k->p);
    n++;
    s_pk_str(k, "x_uint");
    msgpack_pack_uint64(&k->p, UINT64_MAX);
    n++;
    s_pk_str(k, "x_int");
    msgpack_pack_int64(&k->p, INT64_MIN);
    n++;
    s_pk_str(k, "x_f32");
    msgpack_pack_float(&k->p, 1.5f);
    n++;
    s_pk_str(k, "x_f64");
    msgpack_pack_double(&k->p, -2.25);
    n++;
    s_pk_str(k, "x_str");
    s_pk_str(k, "a string value that is longer than thirty-one bytes");
    n++;
    s_pk_str(k, "x_bin");
    msgpack_pack_bin_with_body(&k->p, ext_payload, 16);
    n++;
    s_pk_str(k, "x_array");
    msgpack_pack_array(&k->p, 3);
    msgpack_pack_uint8(&k->p, 1);
    s_pk_str(k, "two");
    msgpack_pack_array(&k->p, 0);
    n++;
    s_pk_str(k, "x_map");
    msgpack_pack_map(&k->p, 2);
    s_pk_str(k, "in"); /* a known key name nested in an unknown map: ignored */
    msgpack_pack_nil(&k->p);
    msgpack_pack_uint8(&k->p, 9); /* a non-string key inside */
    msgpack_pack_map(&k->p, 0);
    n++;
    for (size_t l = 1; l <= 16; l *= 2) { /* fixext 1, 2, 4, 8, 16 */
        char key[16];
        snprintf(key, sizeof key, "x_fixext%zu", l);
        s_pk_str(k, key);
        msgpack_pack_ext_with_body(&k->p, ext_payload, l, 5);
        n++;
    }
    s_pk_str(k, "x_ext8");
    msgpack_pack_ext_with_body(&k->p, ext_payload, 3, -1); /* timestamp type, any payload */
    n++;
    /* Non-string keys: an integer, an array, a map, a nil. */
    msgpack_pack_uint16(&k->p, 1000);
    s_pk_str(k, "int key");
    n++;
    msgpack_pack_array(&k->p, 2);
    s_pk_str(k, "in");
    s_pk_str(k, "v");
    msgpack_pack_uint8(&k->p, 99);
    n++;
    msgpack_pack_map(&k->p, 1);
    s_pk_str(k, "id");
    msgpack_pack_uint8(&k->p, 1);
    msgpack_pack_true(&k->p);
    n++;
    msgpack_pack_nil(&k->p);
    msgpack_pack_nil(&k->p);
    n++;
    /* Unknown keys may repeat: they are not checked for duplicates. */
    s_pk_str(k, "x_bool");
    msgpack_pack_false(&k->p);
    n++;
    return n;
}

static void test_forward_compat(void) {
    com_prng_t p;
    com_prng_seed(&p, 99);
    pk_t k;
    s_pk_init(&k);
    uint32_t n_extra = s_pack_extras(&k);
    for (int t = 1; t < COM_PROTO_TYPE_COUNT; t++) {
        for (int it = 0; it < 20; it++) {
            arena_t a = {0};
            com_proto_msg_t m;
            s_rand_msg(&p, &a, (com_proto_type_t)t, &m);
            com_proto_buf_t b = {0};
            CHECK(com_proto_encode(&m, &b, NULL) == 0);
            for (int first = 0; first < 2; first++) {
                edit_t e = {.extra = (const uint8_t *)k.sb.data,
                            .extra_len = k.sb.size,
                            .extra_pairs = n_extra,
                            .extra_first = first};
                size_t len;
                uint8_t *x = s_edit(b.data, b.len, &e, &len);
                char what[64];
                snprintf(what, sizeof what, "%s + unknown keys", com_proto_type_name(m.type));
                s_expect_ok(what, x, len, NULL, &m);
                free(x);
            }
            com_proto_buf_free(&b);
            s_a_free(&a);
        }
    }
    msgpack_sbuffer_destroy(&k.sb);
}

/* ---------------------------------------------------------------- missing, types, duplicates */

/* One replacement value per msgpack kind. */
typedef struct repl {
    com_mpr_kind_t kind;
    uint8_t bytes[12];
    size_t len;
} repl_t;

static const repl_t s_repls[] = {
    {COM_MPR_BOOL, {0xc3}, 1},
    {COM_MPR_UINT, {0x05}, 1},
    {COM_MPR_INT, {0xff}, 1},
    {COM_MPR_F32, {0xca, 0x3f, 0x80, 0, 0}, 5},
    {COM_MPR_F64, {0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, 9},
    {COM_MPR_STR, {0xa2, 'x', 'y'}, 3},
    {COM_MPR_BIN, {0xc4, 0x01, 0x00}, 3},
    {COM_MPR_ARRAY, {0x91, 0x01}, 2},
    {COM_MPR_MAP, {0x81, 0xa1, 'k', 0x01}, 4},
    {COM_MPR_EXT, {0xd4, 0x01, 0x00}, 3},
};

static bool s_is_required(com_proto_type_t t, const char *key) {
    static const struct {
        com_proto_type_t t;
        const char *keys;
    } req[] = {
        {COM_PROTO_EMBED, " in "},
        {COM_PROTO_SCORE, " in "},
        {COM_PROTO_TOKENIZE, " in "},
        {COM_PROTO_EMBED_REPLY, " n dim emb ntok use tm "},
        {COM_PROTO_SCORE_REPLY, " n sc ntok use tm "},
        {COM_PROTO_TOKENIZE_REPLY, " ids use tm "},
        {COM_PROTO_INFO_REPLY, " ok nwk "},
        {COM_PROTO_ERROR, " code msg "},
        {COM_PROTO_READY, " wid model fam dev mbt dim msl cred "},
        {COM_PROTO_CHUNK, " cid att in "},
        {COM_PROTO_RESULT, " cid att "},
    };
    char pat[40];
    snprintf(pat, sizeof pat, " %s ", key);
    if (!strcmp(key, "v") || !strcmp(key, "t") || !strcmp(key, "id"))
        return true;
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (req[i].t == t)
            return strstr(req[i].keys, pat) != NULL;
    return false;
}

static void test_missing_types_duplicates(void) {
    com_prng_t p;
    com_prng_seed(&p, 4242);
    int n_missing = 0, n_types = 0, n_dups = 0;
    for (int t = 1; t < COM_PROTO_TYPE_COUNT; t++) {
        for (int it = 0; it < 6; it++) {
            arena_t a = {0};
            com_proto_msg_t m;
            s_rand_msg(&p, &a, (com_proto_type_t)t, &m);
            if (t == COM_PROTO_RESULT)
                m.u.result.failed = it % 2; /* both shapes */
            if (m.type == COM_PROTO_RESULT && !m.u.result.failed && !m.u.result.emb.data)
                s_rand_tensor(&p, &a, &m.u.result.emb, 0);
            if (m.type == COM_PROTO_RESULT && m.u.result.failed && !m.u.result.err_msg.ptr)
                m.u.result.err_msg = s_rand_str(&p, &a, 5);
            com_proto_buf_t b = {0};
            CHECK(com_proto_encode(&m, &b, NULL) == 0);
            span_t sp[64];
            uint32_t n = s_spans(b.data, b.len, sp, 64);
            for (uint32_t i = 0; i < n; i++) {
                const char *key = sp[i].key;
                char what[96];
                bool required =
                    s_is_required(m.type, key) ||
                    (m.type == COM_PROTO_RESULT && (!strcmp(key, "n") || !strcmp(key, "dim") ||
                                                    !strcmp(key, "emb") || !strcmp(key, "err")));
                size_t len;
                uint8_t *x;
                /* Missing: dropping a required key fails naming it; an optional one decodes. */
                edit_t e = {.drop = key};
                x = s_edit(b.data, b.len, &e, &len);
                snprintf(what, sizeof what, "%s without \"%s\"", com_proto_type_name(m.type), key);
                if (required) {
                    char quoted[40];
                    snprintf(quoted, sizeof quoted, "\"%s\"", key);
                    /* Dropping "v", "t" or the result's "err" changes what is expected. */
                    if (!strcmp(key, "err"))
                        s_expect_fail(what, x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                                      "\"n\"");
                    else
                        s_expect_fail(what, x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                                      quoted);
                    n_missing++;
                } else if (!strcmp(key, "dt") &&
                           (m.type == COM_PROTO_EMBED_REPLY || m.type == COM_PROTO_SCORE_REPLY ||
                            m.type == COM_PROTO_RESULT)) {
                    /* Without "dt" an f16 tensor reads as f32: its bin is half the size. */
                    s_expect_fail(what, x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                                  "bytes, expected");
                } else {
                    s_expect_ok(what, x, len, NULL, NULL);
                }
                free(x);

                /* Wrong type: every value of another msgpack kind is rejected. */
                com_mpr_t r;
                com_mpr_obj_t orig;
                com_mpr_init(&r, b.data + sp[i].val_at, sp[i].end - sp[i].val_at);
                com_mpr_next(&r, &orig, NULL);
                for (size_t j = 0; j < sizeof s_repls / sizeof s_repls[0]; j++) {
                    if (s_repls[j].kind == orig.kind)
                        continue;
                    if (!strcmp(key, "v") && s_repls[j].kind == COM_MPR_UINT)
                        continue; /* v = 5: unsupported version, tested elsewhere */
                    edit_t r2 = {
                        .replace = key, .val = s_repls[j].bytes, .val_len = s_repls[j].len};
                    x = s_edit(b.data, b.len, &r2, &len);
                    snprintf(what, sizeof what, "%s with \"%s\" as %s", com_proto_type_name(m.type),
                             key, com_mpr_kind_name(s_repls[j].kind));
                    com_proto_msg_t d;
                    com_error_t err = {0};
                    void *copy;
                    int rc = s_decode(x, len, NULL, &d, &err, &copy);
                    /* Replacing the type with another string may name an unknown type; a
                     * replaced "v" is UNSUPPORTED_VERSION only for integers (skipped). */
                    CHECK_MSG(rc == COM_EFORMAT && d.perr == COM_PROTO_BAD_REQUEST,
                              "%s: rc %s perr %s (%s)", what, com_error_name(rc),
                              com_proto_code_name(d.perr), err.msg);
                    if (strcmp(key, "id") != 0)
                        CHECK_MSG(d.has_id && d.id == m.id, "%s: id lost", what);
                    com_proto_msg_free(&d);
                    free(copy);
                    free(x);
                    n_types++;
                }

                /* Duplicate: the same pair twice. */
                edit_t dup = {.extra = b.data + sp[i].key_at,
                              .extra_len = sp[i].end - sp[i].key_at,
                              .extra_pairs = 1};
                x = s_edit(b.data, b.len, &dup, &len);
                snprintf(what, sizeof what, "%s with \"%s\" twice", com_proto_type_name(m.type),
                         key);
                s_expect_fail(what, x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                              "duplicate key");
                free(x);
                n_dups++;
            }
            com_proto_buf_free(&b);
            s_a_free(&a);
        }
    }
    printf("missing %d, wrong types %d, duplicates %d cases\n", n_missing, n_types, n_dups);
    CHECK(n_missing > 100 && n_types > 1000 && n_dups > 200);
}

/* ---------------------------------------------------------------- limits */

/* Encodes m and expects it to decode under lim (ok) or fail with TOO_LARGE naming limit_name. */
static void s_limit_case(const char *what, const com_proto_msg_t *m, const com_proto_limits_t *lim,
                         bool ok, const char *limit_name) {
    com_proto_buf_t b = {0};
    com_error_t err = {0};
    int rc = com_proto_encode(m, &b, &err);
    CHECK_MSG(rc == 0, "%s: encode: %s", what, err.msg);
    if (ok)
        s_expect_ok(what, b.data, b.len, lim, m);
    else
        s_expect_fail(what, b.data, b.len, lim, COM_ETOOLONG, COM_PROTO_TOO_LARGE, limit_name);
    com_proto_buf_free(&b);
}

static void test_limits(void) {
    com_proto_limits_t def, lim;
    com_proto_limits_default(&def);
    CHECK(def.max_msg_bytes == 64u << 20 && def.max_inputs == 65536 &&
          def.max_tokens_per_input == 32768 && def.max_total_tokens == 8u << 20 &&
          def.max_text_bytes == 1u << 20 && def.max_str_bytes == 4096 && def.max_dim == 65536 &&
          def.max_depth == 8);
    arena_t a = {0};
    const uint32_t L = 10;
    char *text = s_a(&a, 4096);
    memset(text, 'a', 4096);
    int32_t *ids = s_a(&a, 4096 * sizeof *ids);
    for (int i = 0; i < 4096; i++)
        ids[i] = i;
    int32_t *offs = s_a(&a, 64 * sizeof *offs);
    com_proto_str_t *texts = s_a(&a, 64 * sizeof *texts);
    for (int i = 0; i < 64; i++)
        texts[i] = (com_proto_str_t){text, 3};

    for (int over = 0; over < 2; over++) {
        bool ok = !over;
        com_proto_msg_t m;
        /* max_inputs: texts, ids, pairs, tensor rows, ntok, chunk */
        lim = def;
        lim.max_inputs = L;
        com_proto_msg_init(&m, COM_PROTO_EMBED, 1);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, L + over, texts, NULL, NULL};
        s_limit_case("max_inputs (texts)", &m, &lim, ok, "max_inputs");
        for (uint32_t i = 0; i <= L + 1; i++)
            offs[i] = (int32_t)(2 * i);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, L + over, NULL, ids, offs};
        s_limit_case("max_inputs (ids)", &m, &lim, ok, "max_inputs");
        com_proto_msg_init(&m, COM_PROTO_SCORE, 1);
        m.u.score.n = L + over;
        m.u.score.pairs = texts;
        s_limit_case("max_inputs (pairs)", &m, &lim, ok, "max_inputs");
        com_proto_msg_init(&m, COM_PROTO_TOKENIZE, 1);
        m.u.tokenize.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, L + over, texts, NULL, NULL};
        s_limit_case("max_inputs (tokenize)", &m, &lim, ok, "max_inputs");
        com_proto_msg_init(&m, COM_PROTO_CHUNK, 1);
        m.u.chunk.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, L + over, NULL, ids, offs};
        s_limit_case("max_inputs (chunk)", &m, &lim, ok, "max_inputs");
        com_proto_msg_init(&m, COM_PROTO_TOKENIZE_REPLY, 1);
        m.u.tokenize_reply.ids = (com_proto_inputs_t){COM_PROTO_IN_IDS, L + over, NULL, ids, offs};
        s_limit_case("max_inputs (tokenize_reply)", &m, &lim, ok, "max_inputs");
        com_proto_msg_init(&m, COM_PROTO_EMBED_REPLY, 1);
        m.u.embed_reply.emb =
            (com_proto_tensor_t){COM_PROTO_F32, L + over, 2, ids, (size_t)(L + over) * 8};
        m.u.embed_reply.ntok = (uint32_t *)ids;
        s_limit_case("max_inputs (tensor rows)", &m, &lim, ok, "max_inputs");
        com_proto_msg_init(&m, COM_PROTO_SCORE_REPLY, 1);
        m.u.score_reply.scores =
            (com_proto_tensor_t){COM_PROTO_F16, L + over, 1, ids, (size_t)(L + over) * 2};
        m.u.score_reply.ntok = (uint32_t *)ids;
        s_limit_case("max_inputs (scores)", &m, &lim, ok, "max_inputs");

        /* max_tokens_per_input, max_total_tokens */
        lim = def;
        lim.max_tokens_per_input = L;
        offs[0] = 0;
        offs[1] = (int32_t)(L + over);
        com_proto_msg_init(&m, COM_PROTO_EMBED, 1);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 1, NULL, ids, offs};
        s_limit_case("max_tokens_per_input", &m, &lim, ok, "max_tokens_per_input");
        com_proto_msg_init(&m, COM_PROTO_TOKENIZE_REPLY, 1);
        m.u.tokenize_reply.ids = (com_proto_inputs_t){COM_PROTO_IN_IDS, 1, NULL, ids, offs};
        s_limit_case("max_tokens_per_input (reply)", &m, &lim, ok, "max_tokens_per_input");
        lim = def;
        lim.max_total_tokens = 3 * L;
        offs[0] = 0;
        offs[1] = (int32_t)L;
        offs[2] = (int32_t)(2 * L);
        offs[3] = (int32_t)(3 * L + over);
        com_proto_msg_init(&m, COM_PROTO_CHUNK, 1);
        m.u.chunk.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 3, NULL, ids, offs};
        s_limit_case("max_total_tokens", &m, &lim, ok, "max_total_tokens");

        /* max_text_bytes: embed text, tokenize text, score pair */
        lim = def;
        lim.max_text_bytes = 100;
        com_proto_str_t big = {text, 100 + (uint32_t)over};
        com_proto_msg_init(&m, COM_PROTO_EMBED, 1);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, &big, NULL, NULL};
        s_limit_case("max_text_bytes", &m, &lim, ok, "max_text_bytes");
        com_proto_msg_init(&m, COM_PROTO_TOKENIZE, 1);
        m.u.tokenize.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, &big, NULL, NULL};
        s_limit_case("max_text_bytes (tokenize)", &m, &lim, ok, "max_text_bytes");
        com_proto_str_t pair[2] = {{text, 1}, big};
        com_proto_msg_init(&m, COM_PROTO_SCORE, 1);
        m.u.score.n = 1;
        m.u.score.pairs = pair;
        s_limit_case("max_text_bytes (pair)", &m, &lim, ok, "max_text_bytes");

        /* max_str_bytes: model, error message, worker id, reason */
        lim = def;
        lim.max_str_bytes = 50;
        com_proto_str_t s = {text, 50 + (uint32_t)over};
        com_proto_msg_init(&m, COM_PROTO_INFO, 1);
        m.u.info.model = s;
        s_limit_case("max_str_bytes (model)", &m, &lim, ok, "max_str_bytes");
        com_proto_msg_init(&m, COM_PROTO_ERROR, 1);
        m.u.error.msg = s;
        s_limit_case("max_str_bytes (msg)", &m, &lim, ok, "max_str_bytes");
        com_proto_msg_init(&m, COM_PROTO_READY, 1);
        m.u.ready = (com_proto_ready_t){s, {text, 1}, {text, 1}, {text, 1},           1,
                                        1, 1,         1,         COM_PROTO_TASK_EMBED};
        s_limit_case("max_str_bytes (wid)", &m, &lim, ok, "max_str_bytes");
        com_proto_msg_init(&m, COM_PROTO_DRAIN, 1);
        m.u.drain.reason = s;
        s_limit_case("max_str_bytes (why)", &m, &lim, ok, "max_str_bytes");

        /* max_dim: dims option, tensor width, ready dim */
        lim = def;
        lim.max_dim = 16;
        com_proto_msg_init(&m, COM_PROTO_EMBED, 1);
        m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, texts, NULL, NULL};
        m.u.embed.dims = 16 + (uint32_t)over;
        s_limit_case("max_dim (dims)", &m, &lim, ok, "max_dim");
        com_proto_msg_init(&m, COM_PROTO_RESULT, 1);
        m.u.result.emb = (com_proto_tensor_t){COM_PROTO_F32, 2, 16 + (uint32_t)over, ids,
                                              (size_t)2 * (16 + (uint32_t)over) * 4};
        s_limit_case("max_dim (tensor)", &m, &lim, ok, "max_dim");
        com_proto_msg_init(&m, COM_PROTO_READY, 1);
        m.u.ready =
            (com_proto_ready_t){{text, 1},           {text, 1}, {text, 1}, {text, 1},           1,
                                16 + (uint32_t)over, 1,         1,         COM_PROTO_TASK_EMBED};
        s_limit_case("max_dim (ready)", &m, &lim, ok, "max_dim");
    }

    /* max_msg_bytes: a message of exactly the limit passes; one byte over fails. */
    com_proto_msg_t m;
    com_proto_msg_init(&m, COM_PROTO_TOKENIZE, 1);
    m.u.tokenize.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 5, texts, NULL, NULL};
    com_proto_buf_t b = {0};
    CHECK(com_proto_encode(&m, &b, NULL) == 0);
    lim = def;
    lim.max_msg_bytes = b.len;
    s_expect_ok("max_msg_bytes at limit", b.data, b.len, &lim, &m);
    lim.max_msg_bytes = b.len - 1;
    s_expect_fail("max_msg_bytes + 1", b.data, b.len, &lim, COM_ETOOLONG, COM_PROTO_TOO_LARGE,
                  "max_msg_bytes");

    /* max_depth: an unknown value nested so that the deepest container is at the limit. */
    for (uint32_t depth = 3; depth <= 12; depth++) {
        lim = def;
        lim.max_depth = depth;
        for (int over = 0; over < 2; over++) {
            pk_t k;
            s_pk_init(&k);
            s_pk_str(&k, "deep");
            for (uint32_t i = 0; i < depth - 1 + (uint32_t)over; i++)
                msgpack_pack_array(&k.p, 1);
            msgpack_pack_nil(&k.p);
            edit_t e = {
                .extra = (const uint8_t *)k.sb.data, .extra_len = k.sb.size, .extra_pairs = 1};
            size_t len;
            uint8_t *x = s_edit(b.data, b.len, &e, &len);
            if (over)
                s_expect_fail("max_depth + 1", x, len, &lim, COM_ETOOLONG, COM_PROTO_TOO_LARGE,
                              "max_depth");
            else
                s_expect_ok("max_depth", x, len, &lim, &m);
            free(x);
            msgpack_sbuffer_destroy(&k.sb);
        }
    }
    /* Limits out of range are the caller's bug: EINVAL. */
    lim = def;
    lim.max_depth = 2;
    s_expect_fail("max_depth 2", b.data, b.len, &lim, COM_EINVAL, COM_PROTO_INTERNAL, NULL);
    lim.max_depth = 65;
    s_expect_fail("max_depth 65", b.data, b.len, &lim, COM_EINVAL, COM_PROTO_INTERNAL, NULL);
    com_proto_buf_free(&b);
    s_a_free(&a);
}

/* ---------------------------------------------------------------- truncation */

static void test_truncation(void) {
    com_prng_t p;
    com_prng_seed(&p, 31337);
    long cases = 0;
    for (int t = 1; t < COM_PROTO_TYPE_COUNT; t++) {
        for (int it = 0; it < 3; it++) {
            arena_t a = {0};
            com_proto_msg_t m;
            s_rand_msg(&p, &a, (com_proto_type_t)t, &m);
            com_proto_buf_t b = {0};
            CHECK(com_proto_encode(&m, &b, NULL) == 0);
            for (size_t len = 0; len < b.len; len++) {
                com_proto_msg_t d;
                com_error_t err = {0};
                void *copy;
                int rc = s_decode(b.data, len, NULL, &d, &err, &copy);
                if (rc == 0 || d.perr != COM_PROTO_BAD_REQUEST || d.n_owned_ != 0)
                    CHECK_MSG(0, "%s truncated to %zu of %zu bytes: rc %d perr %d",
                              com_proto_type_name(m.type), len, b.len, rc, (int)d.perr);
                com_proto_msg_free(&d);
                free(copy);
                /* the same without an error record: still a failure (err is optional) */
                rc = s_decode(b.data, len, NULL, &d, NULL, &copy);
                if (rc == 0)
                    CHECK_MSG(0, "%s truncated to %zu bytes decodes with err NULL",
                              com_proto_type_name(m.type), len);
                com_proto_msg_free(&d);
                free(copy);
                cases++;
            }
            s_expect_ok("untruncated", b.data, b.len, NULL, &m);
            com_proto_buf_free(&b);
            s_a_free(&a);
        }
    }
    CHECK(cases > 1000);
    printf("truncation: %ld prefixes\n", cases);
}

/* ---------------------------------------------------------------- hostile inputs */

static void test_hostile(void) {
    /* The message that makes msgpack-c 4.0 allocate ~96 GB. */
    static const uint8_t dd[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    s_expect_fail("dd ff ff ff ff", dd, sizeof dd, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "declares 4294967295");
    static const uint8_t df[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
    s_expect_fail("map32 huge", df, sizeof df, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, NULL);
    static const uint8_t bin[] = {0xc6, 0xff, 0xff, 0xff, 0xff, 0x00};
    s_expect_fail("bin32 huge", bin, sizeof bin, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, NULL);
    static const uint8_t str[] = {0xdb, 0x7f, 0xff, 0xff, 0xff};
    s_expect_fail("str32 huge", str, sizeof str, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, NULL);
    static const uint8_t ext[] = {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01};
    s_expect_fail("ext32 huge", ext, sizeof ext, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, NULL);
    static const uint8_t reserved[] = {0x81, 0xa1, 'v', 0xc1};
    s_expect_fail("reserved 0xc1", reserved, sizeof reserved, NULL, COM_EFORMAT,
                  COM_PROTO_BAD_REQUEST, "reserved");
    s_expect_fail("empty", "", 0, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "empty");

    /* Huge declared lengths as values inside an otherwise valid embed request. */
    com_proto_msg_t m;
    com_proto_str_t hi = {"hi", 2};
    com_proto_msg_init(&m, COM_PROTO_EMBED, 42);
    m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_TEXT, 1, &hi, NULL, NULL};
    com_proto_buf_t b = {0};
    CHECK(com_proto_encode(&m, &b, NULL) == 0);
    static const uint8_t huge_vals[][8] = {
        {7, 0xa1, 'z', 0xdd, 0xff, 0xff, 0xff, 0xff},
        {7, 0xa1, 'z', 0xdf, 0xff, 0xff, 0xff, 0xff},
        {7, 0xa1, 'z', 0xc6, 0xff, 0xff, 0xff, 0xff},
        {7, 0xa1, 'z', 0xdb, 0xff, 0xff, 0xff, 0xff},
        {5, 0xa1, 'z', 0xdc, 0xff, 0xff},
        {6, 0xa1, 'z', 0xc8, 0xff, 0xff, 0x01},
        {4, 0xa1, 'z', 0xd9, 0xff},
        {4, 0xa1, 'z', 0xc4, 0x80},
    };
    for (size_t i = 0; i < sizeof huge_vals / sizeof huge_vals[0]; i++) {
        edit_t e = {.extra = huge_vals[i] + 1, .extra_len = huge_vals[i][0], .extra_pairs = 1};
        size_t len;
        uint8_t *x = s_edit(b.data, b.len, &e, &len);
        s_expect_fail("huge declared length inside", x, len, NULL, COM_EFORMAT,
                      COM_PROTO_BAD_REQUEST, "declares");
        free(x);
    }
    /* The known field "in" with a declared count far above the bytes. */
    static const uint8_t in_huge[] = {0xdd, 0x00, 0x10, 0x00, 0x00, 0xa0};
    edit_t e = {.replace = "in", .val = in_huge, .val_len = sizeof in_huge};
    size_t len;
    uint8_t *x = s_edit(b.data, b.len, &e, &len);
    s_expect_fail("in: 1M declared, 1 present", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  NULL);
    free(x);

    /* 1000 levels of nesting: alone, and as an unknown value of a valid message. */
    uint8_t deep[1001];
    memset(deep, 0x91, 1000);
    deep[1000] = 0xc0;
    s_expect_fail("1000 nested arrays", deep, sizeof deep, NULL, COM_ETOOLONG, COM_PROTO_TOO_LARGE,
                  "max_depth");
    uint8_t deepmap[3001];
    for (int i = 0; i < 1000; i++) {
        deepmap[3 * i] = 0x81;
        deepmap[3 * i + 1] = 0xa1;
        deepmap[3 * i + 2] = 'k';
    }
    deepmap[3000] = 0xc0;
    s_expect_fail("1000 nested maps", deepmap, sizeof deepmap, NULL, COM_ETOOLONG,
                  COM_PROTO_TOO_LARGE, "max_depth");
    uint8_t deepval[1003];
    deepval[0] = 0xa1;
    deepval[1] = 'z';
    memset(deepval + 2, 0x91, 1000);
    deepval[1002] = 0xc0;
    edit_t de = {.extra = deepval, .extra_len = sizeof deepval, .extra_pairs = 1};
    x = s_edit(b.data, b.len, &de, &len);
    s_expect_fail("1000 nested inside", x, len, NULL, COM_ETOOLONG, COM_PROTO_TOO_LARGE,
                  "max_depth");
    {
        com_proto_msg_t d;
        void *copy;
        com_proto_limits_t lim;
        com_proto_limits_default(&lim);
        s_decode(x, len, &lim, &d, NULL, &copy); /* err may be NULL */
        CHECK(d.perr == COM_PROTO_TOO_LARGE);
        free(copy);
    }
    free(x);

    /* Non-map top level. */
    static const uint8_t arr[] = {0x93, 0x01, 0xa1, 't', 0x01};
    s_expect_fail("array top level", arr, sizeof arr, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "must be a map");
    static const uint8_t num[] = {0x05};
    s_expect_fail("int top level", num, 1, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "must be a map");
    static const uint8_t nil[] = {0xc0};
    s_expect_fail("nil top level", nil, 1, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "must be a map");
    static const uint8_t fixext[] = {0xd4, 0x01, 0x02};
    s_expect_fail("ext top level", fixext, sizeof fixext, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "must be a map");
    /* Trailing bytes after a valid message: one map per frame. */
    uint8_t *tr = malloc(b.len + 1);
    memcpy(tr, b.data, b.len);
    tr[b.len] = 0xc0;
    s_expect_fail("trailing byte", tr, b.len + 1, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "trailing");
    free(tr);

    /* Ext in a known field is a type error. */
    static const uint8_t ext_in[] = {0xd6, 0x01, 0, 0, 0, 0};
    edit_t ee = {.replace = "in", .val = ext_in, .val_len = sizeof ext_in};
    x = s_edit(b.data, b.len, &ee, &len);
    s_expect_fail("ext as in", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "ext");
    free(x);

    /* Versions: another major version is UNSUPPORTED_VERSION and keeps the id. */
    for (uint64_t v = 0; v < 4; v++) {
        if (v == 1)
            continue;
        uint8_t vb[1] = {(uint8_t)v};
        edit_t ve = {.replace = "v", .val = vb, .val_len = 1};
        x = s_edit(b.data, b.len, &ve, &len);
        com_proto_msg_t d;
        com_error_t err = {0};
        void *copy;
        int rc = s_decode(x, len, NULL, &d, &err, &copy);
        CHECK_MSG(rc == COM_EUNSUPPORTED && d.perr == COM_PROTO_UNSUPPORTED_VERSION && d.has_id &&
                      d.id == 42 && d.version == v,
                  "v=%llu: rc %d perr %d: %s", (unsigned long long)v, rc, (int)d.perr, err.msg);
        free(copy);
        free(x);
    }
    /* A v2 message with an unknown type and no "in" is still UNSUPPORTED_VERSION. */
    {
        pk_t k;
        s_pk_init(&k);
        msgpack_pack_map(&k.p, 3);
        s_pk_str(&k, "t");
        s_pk_str(&k, "embed2");
        s_pk_str(&k, "id");
        msgpack_pack_uint8(&k.p, 9);
        s_pk_str(&k, "v");
        msgpack_pack_uint8(&k.p, 2);
        s_expect_fail("v2 with a new type", k.sb.data, k.sb.size, NULL, COM_EUNSUPPORTED,
                      COM_PROTO_UNSUPPORTED_VERSION, "version 2");
        msgpack_sbuffer_destroy(&k.sb);
    }
    /* Unknown type, negative id, no id. */
    static const uint8_t unk[] = {0x83, 0xa1, 'v', 0x01, 0xa1, 't', 0xa3,
                                  'f',  'o',  'o', 0xa2, 'i',  'd', 0x07};
    s_expect_fail("unknown type", unk, sizeof unk, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "unknown message type \"foo\"");
    static const uint8_t negid[] = {0x83, 0xa1, 'v',  0x01, 0xa1, 't', 0xa2,
                                    'h',  'b',  0xa2, 'i',  'd',  0xff};
    s_expect_fail("negative id", negid, sizeof negid, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "\"id\"");
    static const uint8_t noid[] = {0x82, 0xa1, 'v', 0x01, 0xa1, 't', 0xa2, 'h', 'b'};
    s_expect_fail("no id", noid, sizeof noid, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "\"id\"");
    static const uint8_t hb[] = {0x83, 0xa1, 'v',  0x01, 0xa1, 't', 0xa2,
                                 'h',  'b',  0xa2, 'i',  'd',  0x07};
    s_expect_ok("minimal hb", hb, sizeof hb, NULL, NULL);
    com_proto_buf_free(&b);
}

/* Value-level checks: token ids, dtypes, tensor sizes, counts that must agree. */
static void test_values(void) {
    com_proto_msg_t m;
    com_proto_buf_t b = {0};
    int32_t ids[4] = {1, 2, 3, 4};
    int32_t offs[3] = {0, 2, 4};
    com_proto_msg_init(&m, COM_PROTO_CHUNK, 3);
    m.u.chunk.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 2, NULL, ids, offs};
    CHECK(com_proto_encode(&m, &b, NULL) == 0);
    struct {
        const char *what;
        const char *key;
        uint8_t val[16];
        size_t len;
        int rc;
        com_proto_code_t perr;
        const char *has;
    } cases[] = {
        {"negative token id",
         "in",
         {0x91, 0x92, 0x01, 0xff},
         4,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "negative"},
        {"token id > int32",
         "in",
         {0x91, 0x91, 0xce, 0x80, 0, 0, 0},
         7,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "2147483648"},
        {"float token id",
         "in",
         {0x91, 0x91, 0xca, 0x3f, 0x80, 0, 0},
         7,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "float32"},
        {"empty token array", "in", {0x91, 0x90}, 2, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "empty"},
        {"no inputs", "in", {0x90}, 1, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "no inputs"},
        {"text in a chunk",
         "in",
         {0x91, 0xa1, 'a'},
         3,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "token ids"},
        {"mixed kinds",
         "in",
         {0x92, 0x91, 0x01, 0xa1, 'a'},
         5,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "\"in\"[1]"},
        {"dtype bf16",
         "dt",
         {0xa4, 'b', 'f', '1', '6'},
         5,
         COM_EUNSUPPORTED,
         COM_PROTO_UNSUPPORTED,
         "bf16"},
        {"norm as int", "norm", {0x01}, 1, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "bool"},
        {"cid > u32",
         "cid",
         {0xcf, 0, 0, 0, 1, 0, 0, 0, 0},
         9,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "out of range"},
        {"seg count", "seg", {0x91, 0x01}, 2, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "seg"},
        {"seg too long",
         "seg",
         {0x92, 0x01, 0x03},
         3,
         COM_EFORMAT,
         COM_PROTO_BAD_REQUEST,
         "longer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* Replace the key when it is in the message, else add it. */
        uint8_t extra[48];
        size_t kl = strlen(cases[i].key);
        extra[0] = (uint8_t)(0xa0 | kl);
        memcpy(extra + 1, cases[i].key, kl);
        memcpy(extra + 1 + kl, cases[i].val, cases[i].len);
        edit_t e = {.drop = cases[i].key,
                    .extra = extra,
                    .extra_len = 1 + kl + cases[i].len,
                    .extra_pairs = 1};
        size_t len;
        uint8_t *x = s_edit(b.data, b.len, &e, &len);
        s_expect_fail(cases[i].what, x, len, NULL, cases[i].rc, cases[i].perr, cases[i].has);
        free(x);
    }
    com_proto_buf_free(&b);

    /* Tensors: bin size must equal n * dim * dtype size; ntok must match n. */
    uint8_t data[64] = {0};
    uint32_t ntok[4] = {1, 2, 3, 4};
    com_proto_msg_init(&m, COM_PROTO_EMBED_REPLY, 3);
    m.u.embed_reply.emb = (com_proto_tensor_t){COM_PROTO_F16, 2, 4, data, 16};
    m.u.embed_reply.ntok = ntok;
    CHECK(com_proto_encode(&m, &b, NULL) == 0);
    static const uint8_t bin15[] = {0xc4, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    edit_t e1 = {.replace = "emb", .val = bin15, .val_len = sizeof bin15};
    size_t len;
    uint8_t *x = s_edit(b.data, b.len, &e1, &len);
    s_expect_fail("bin size", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "expected 2 x 4");
    free(x);
    static const uint8_t f32[] = {0xa3, 'f', '3', '2'};
    edit_t e2 = {.replace = "dt", .val = f32, .val_len = sizeof f32};
    x = s_edit(b.data, b.len, &e2, &len);
    s_expect_fail("dtype vs bin", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "x 4 =");
    free(x);
    static const uint8_t ntok3[] = {0x93, 1, 2, 3};
    edit_t e3 = {.replace = "ntok", .val = ntok3, .val_len = sizeof ntok3};
    x = s_edit(b.data, b.len, &e3, &len);
    s_expect_fail("ntok count", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "ntok");
    free(x);
    static const uint8_t zero[] = {0x00};
    edit_t e4 = {.replace = "n", .val = zero, .val_len = 1};
    x = s_edit(b.data, b.len, &e4, &len);
    s_expect_fail("n = 0", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "empty tensor");
    free(x);
    com_proto_buf_free(&b);

    /* A result with both a tensor and an error. */
    com_proto_msg_init(&m, COM_PROTO_RESULT, 3);
    m.u.result.emb = (com_proto_tensor_t){COM_PROTO_F32, 1, 4, data, 16};
    CHECK(com_proto_encode(&m, &b, NULL) == 0);
    static const uint8_t err_pair[] = {0xa3, 'e', 'r',  'r',  0x82, 0xa4, 'c', 'o',
                                       'd',  'e', 0x08, 0xa3, 'm',  's',  'g', 0xa0};
    edit_t e5 = {.extra = err_pair, .extra_len = sizeof err_pair, .extra_pairs = 1};
    x = s_edit(b.data, b.len, &e5, &len);
    s_expect_fail("result with both", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "both");
    free(x);
    com_proto_buf_free(&b);
    /* The error map needs both keys. */
    static const uint8_t err_nomsg[] = {0x81, 0xa4, 'c', 'o', 'd', 'e', 0x08};
    com_proto_msg_init(&m, COM_PROTO_RESULT, 3);
    m.u.result.failed = true;
    m.u.result.err_msg = (com_proto_str_t){"x", 1};
    CHECK(com_proto_encode(&m, &b, NULL) == 0);
    edit_t e6 = {.replace = "err", .val = err_nomsg, .val_len = sizeof err_nomsg};
    x = s_edit(b.data, b.len, &e6, &len);
    s_expect_fail("err without msg", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, "\"msg\"");
    free(x);
    com_proto_buf_free(&b);
}

/* The encoder refuses inconsistent messages with EINVAL and leaves no buffer. */
static void test_encoder_checks(void) {
    com_proto_msg_t m;
    com_proto_buf_t b = {(uint8_t *)1, 1};
    com_error_t err = {0};
    uint8_t data[16] = {0};
    int32_t ids[3] = {1, -2, 3};
    int32_t offs[3] = {0, 1, 3};
    com_proto_msg_init(&m, COM_PROTO_EMBED, 1);
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL && b.data == NULL && b.len == 0);
    m.u.embed.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 2, NULL, ids, offs};
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL && strstr(err.msg, "negative"));
    offs[1] = 0;
    ids[1] = 2;
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL); /* empty sequence in a request */
    offs[1] = 1;
    m.u.embed.normalize = 2;
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL);
    m.u.embed.normalize = 1;
    m.u.embed.dtype = (com_proto_dtype_t)7;
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL);
    m.u.embed.dtype = COM_PROTO_F16;
    CHECK(com_proto_encode(&m, &b, &err) == 0);
    com_proto_buf_free(&b);
    com_proto_msg_init(&m, COM_PROTO_TOKENIZE, 1);
    m.u.tokenize.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 2, NULL, ids, offs};
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL); /* ids not allowed */
    com_proto_msg_init(&m, COM_PROTO_EMBED_REPLY, 1);
    uint32_t ntok[2] = {1, 1};
    m.u.embed_reply.emb = (com_proto_tensor_t){COM_PROTO_F32, 2, 2, data, 15};
    m.u.embed_reply.ntok = ntok;
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL && strstr(err.msg, "inconsistent"));
    m.u.embed_reply.emb.nbytes = 16;
    CHECK(com_proto_encode(&m, &b, &err) == 0);
    com_proto_buf_free(&b);
    com_proto_msg_init(&m, COM_PROTO_CHUNK, 1);
    uint32_t seg[2] = {2, 0};
    m.u.chunk.in = (com_proto_inputs_t){COM_PROTO_IN_IDS, 2, NULL, ids, offs};
    m.u.chunk.seg = seg;
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL && strstr(err.msg, "seg"));
    com_proto_msg_init(&m, COM_PROTO_INFO, 1);
    m.u.info.model = (com_proto_str_t){NULL, 3};
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL);
    com_proto_msg_init(&m, COM_PROTO_READY, 1);
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL); /* mbt, dim, msl 0 */
    com_proto_msg_init(&m, COM_PROTO_NONE, 1);
    CHECK(com_proto_encode(&m, &b, &err) == COM_EINVAL);
    CHECK(b.data == NULL);
}

/* ---------------------------------------------------------------- tensors and names */

static void test_tensor_pack(void) {
    float src[5] = {1.0f, -2.5f, 0.1f, 65504.0f, 1e-8f};
    uint8_t f32[20], f16[10];
    com_proto_tensor_pack(src, 5, COM_PROTO_F32, f32);
    com_proto_tensor_pack(src, 5, COM_PROTO_F16, f16);
    CHECK(f32[0] == 0x00 && f32[1] == 0x00 && f32[2] == 0x80 && f32[3] == 0x3f); /* LE 1.0f */
    CHECK(f16[0] == 0x00 && f16[1] == 0x3c);                                     /* LE 0x3c00 */
    CHECK(f16[2] == 0x00 && f16[3] == 0xc1);                                     /* -2.5 */
    CHECK(f16[4] == 0x66 && f16[5] == 0x2e);                                     /* 0.1 */
    CHECK(f16[6] == 0xff && f16[7] == 0x7b);                                     /* 65504 */
    CHECK(f16[8] == 0x00 && f16[9] == 0x00); /* 1e-8 flushes to +0 */
    float back[5];
    com_proto_tensor_t t = {COM_PROTO_F32, 1, 5, f32, 20};
    com_proto_tensor_unpack(&t, back);
    CHECK(memcmp(back, src, sizeof src) == 0);
    t = (com_proto_tensor_t){COM_PROTO_F16, 5, 1, f16, 10};
    com_proto_tensor_unpack(&t, back);
    CHECK(back[0] == 1.0f && back[1] == -2.5f && back[3] == 65504.0f && back[4] == 0.0f);
    CHECK(back[2] > 0.0999f && back[2] < 0.1001f);
    /* Unaligned source. */
    uint8_t un[21];
    memcpy(un + 1, f32, 20);
    t = (com_proto_tensor_t){COM_PROTO_F32, 5, 1, un + 1, 20};
    com_proto_tensor_unpack(&t, back);
    CHECK(memcmp(back, src, sizeof src) == 0);

    CHECK(!strcmp(com_proto_code_name(COM_PROTO_BAD_REQUEST), "BAD_REQUEST"));
    CHECK(!strcmp(com_proto_code_name(COM_PROTO_UNAVAILABLE), "UNAVAILABLE"));
    CHECK(!strcmp(com_proto_code_name(99), "?"));
    CHECK(COM_PROTO_BAD_REQUEST == 1 && COM_PROTO_TOO_LARGE == 2 &&
          COM_PROTO_UNSUPPORTED_VERSION == 3 && COM_PROTO_OVERLOADED == 4 &&
          COM_PROTO_DEADLINE_EXCEEDED == 5 && COM_PROTO_NO_WORKERS == 6 &&
          COM_PROTO_MODEL_MISMATCH == 7 && COM_PROTO_INTERNAL == 8 &&
          COM_PROTO_INPUT_TOO_LONG == 9 && COM_PROTO_UNSUPPORTED == 10 &&
          COM_PROTO_UNAVAILABLE == 11);
    CHECK(!strcmp(com_proto_type_name(COM_PROTO_HEARTBEAT), "hb"));
    CHECK(!strcmp(com_proto_dtype_name(COM_PROTO_F16), "f16"));
}

/* ---------------------------------------------------------------- fuzz seeds */

/* One fixed, small example of each message type (seeded PRNG). */
static void s_sample(com_proto_type_t t, arena_t *a, com_proto_msg_t *m) {
    com_prng_t p;
    com_prng_seed(&p, 1000 + (uint64_t)t);
    s_rand_msg(&p, a, t, m);
}

static int s_write_seeds(const char *dir) {
    for (int t = 1; t < COM_PROTO_TYPE_COUNT; t++) {
        arena_t a = {0};
        com_proto_msg_t m;
        s_sample((com_proto_type_t)t, &a, &m);
        com_proto_buf_t b = {0};
        com_error_t err = {0};
        if (com_proto_encode(&m, &b, &err) != 0) {
            fprintf(stderr, "encode: %s\n", err.msg);
            return 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%02d_%s.msgpack", dir, t,
                 com_proto_type_name((com_proto_type_t)t));
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(b.data, 1, b.len, f) != b.len) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        fclose(f);
        printf("wrote %s (%zu bytes)\n", path, b.len);
        com_proto_buf_free(&b);
        s_a_free(&a);
    }
    return 0;
}

/* The committed seeds are what --write-seeds makes today, and each decodes. */
static void test_seeds(void) {
    for (int t = 1; t < COM_PROTO_TYPE_COUNT; t++) {
        char path[4096];
        const char *src = test_source_dir();
#ifdef EMBER_SOURCE_DIR
        if (!getenv("EMBER_SOURCE_DIR")) /* run by hand, not by ctest */
            src = EMBER_SOURCE_DIR;
#endif
        snprintf(path, sizeof path, "%s/tests/fuzz/seeds/fuzz_protocol/%02d_%s.msgpack", src, t,
                 com_proto_type_name((com_proto_type_t)t));
        FILE *f = fopen(path, "rb");
        CHECK_MSG(f != NULL, "missing seed %s", path);
        if (!f)
            continue;
        uint8_t buf[65536];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        arena_t a = {0};
        com_proto_msg_t m;
        s_sample((com_proto_type_t)t, &a, &m);
        com_proto_msg_t d;
        void *copy;
        com_error_t err = {0};
        int rc = s_decode(buf, n, NULL, &d, &err, &copy);
        CHECK_MSG(rc == 0 && com_proto_msg_equal(&d, &m),
                  "seed %s no longer matches (%s); regenerate with `protocol_messages "
                  "--write-seeds tests/fuzz/seeds/fuzz_protocol`",
                  path, err.msg);
        com_proto_msg_free(&d);
        free(copy);
        s_a_free(&a);
    }
}

/* A message whose structure breaks after its "id" still yields the id, so the broker can
 * address its error reply; an id after the damage is not guessed. */
/* ---------------------------------------------------------------- fast and strict paths
 * The decoder reads a message whose header comes first (as the encoder writes it) in one walk,
 * and sends any other message, and every failure, through the strict path (structure, whole
 * header, body). These check that the two agree: the same message with its header first and
 * last under byte mutations; skipped values at max_depth exactly and one deeper; which error
 * wins when there are several; ids arrays that grow; id encodings the encoder never writes. */

/* The message buf with its first three pairs (the header) moved after the others. */
static uint8_t *s_header_last(const uint8_t *buf, size_t len, size_t *out_len) {
    span_t sp[64];
    uint32_t n = s_spans(buf, len, sp, 64);
    uint8_t *o = malloc(len);
    size_t hdr = sp[2].end - sp[0].key_at;
    memcpy(o, buf, 5);
    memcpy(o + 5, buf + sp[2].end, len - sp[2].end);
    memcpy(o + 5 + (len - sp[2].end), buf + sp[0].key_at, hdr);
    CHECK(n >= 3 && !strcmp(sp[0].key, "v") && !strcmp(sp[1].key, "t") && !strcmp(sp[2].key, "id"));
    *out_len = len;
    return o;
}

/* Mutates each body byte of buf (header first) and of the same message with its header last
 * to a few values, and expects the same outcome from both. */
static void s_expect_agree(const char *what, const uint8_t *buf, size_t len) {
    span_t sp[64];
    s_spans(buf, len, sp, 64);
    size_t body = sp[2].end, blen = len - body;
    size_t len2;
    uint8_t *last = s_header_last(buf, len, &len2);
    static const uint8_t vals[] = {0x00, 0x05, 0x7f, 0x80, 0x91, 0xa1, 0xc0, 0xc1, 0xc3,
                                   0xcc, 0xce, 0xcf, 0xd0, 0xd3, 0xdc, 0xdd, 0xff};
    uint8_t *a = malloc(len), *b = malloc(len);
    int cases = 0, oks = 0;
    for (size_t j = 0; j < blen; j++) {
        for (size_t v = 0; v <= sizeof vals; v++) {
            memcpy(a, buf, len);
            memcpy(b, last, len);
            uint8_t x = v < sizeof vals ? vals[v] : (uint8_t)(buf[body + j] ^ 1);
            a[body + j] = x;
            b[5 + j] = x;
            com_proto_msg_t ma, mb;
            com_error_t ea = {0}, eb = {0};
            void *ca, *cb;
            int ra = s_decode(a, len, NULL, &ma, &ea, &ca);
            int rb = s_decode(b, len, NULL, &mb, &eb, &cb);
            cases++;
            oks += ra == 0;
            CHECK_MSG(ra == rb && ma.perr == mb.perr,
                      "%s: byte %zu = 0x%02x: header first %s %s (%s), header last %s %s (%s)",
                      what, j, x, com_error_name(ra), com_proto_code_name(ma.perr), ea.msg,
                      com_error_name(rb), com_proto_code_name(mb.perr), eb.msg);
            if (ra == 0 && rb == 0)
                CHECK_MSG(com_proto_msg_equal(&ma, &mb), "%s: byte %zu = 0x%02x: differ", what, j,
                          x);
            if (ra != 0) /* the header came first and intact: the reply can be addressed */
                CHECK(ma.n_owned_ == 0 && ma.has_id);
            com_proto_msg_free(&ma);
            com_proto_msg_free(&mb);
            free(ca);
            free(cb);
        }
    }
    CHECK_MSG(oks > 0 && oks < cases, "%s: %d of %d mutations decoded", what, oks, cases);
    free(a);
    free(b);
    free(last);
}

/* n nested single-element arrays around nil: opens n containers. */
static size_t s_nest(uint8_t *out, int n) {
    memset(out, 0x91, (size_t)n);
    out[n] = 0xc0;
    return (size_t)n + 1;
}

/* Encodes a chunk of n sequences of lens[i] ids (widths cycling 1, 2, 3 and 5 bytes). */
static void s_chunk_of(arena_t *a, const uint32_t *lens, uint32_t n, com_proto_msg_t *m,
                       com_proto_buf_t *b) {
    static const int32_t widths[] = {5, 200, 40000, 1 << 30};
    com_proto_msg_init(m, COM_PROTO_CHUNK, 77);
    com_proto_chunk_t *c = &m->u.chunk;
    c->chunk_id = 2;
    c->attempt = 1;
    c->in.kind = COM_PROTO_IN_IDS;
    c->in.n = n;
    c->in.offs = s_a(a, (n + 1) * sizeof *c->in.offs);
    c->seg = s_a(a, n * sizeof *c->seg);
    int32_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        c->in.offs[i] = total;
        c->seg[i] = lens[i] / 2;
        total += (int32_t)lens[i];
    }
    c->in.offs[n] = total;
    c->in.ids = s_a(a, (size_t)total * sizeof *c->in.ids);
    for (int32_t j = 0; j < total; j++)
        c->in.ids[j] = widths[j % 4] + j;
    c->dims = 64;
    c->dtype = COM_PROTO_F16;
    c->deadline_ms = 900;
    CHECK(com_proto_encode(m, b, NULL) == 0);
}

static void test_fast_path(void) {
    arena_t a = {0};
    com_proto_msg_t m, r;
    com_proto_buf_t b = {0}, rb = {0};
    const uint32_t lens[] = {1, 6, 13, 2};
    s_chunk_of(&a, lens, 4, &m, &b);
    com_proto_msg_init(&r, COM_PROTO_RESULT, 78);
    r.u.result.failed = true;
    r.u.result.err_code = COM_PROTO_INTERNAL;
    r.u.result.err_msg = (com_proto_str_t){"boom", 4};
    r.u.result.timing = (com_proto_timings_t){1, 2, 3, 4};
    CHECK(com_proto_encode(&r, &rb, NULL) == 0);

    /* The header first, last, or behind an unknown key: the same message. */
    size_t len;
    uint8_t *x = s_header_last(b.data, b.len, &len);
    s_expect_ok("chunk, header last", x, len, NULL, &m);
    free(x);
    static const uint8_t zz[] = {0xa2, 'z', 'z', 0x01};
    edit_t e = {.extra = zz, .extra_len = sizeof zz, .extra_pairs = 1, .extra_first = true};
    x = s_edit(b.data, b.len, &e, &len);
    s_expect_ok("chunk, unknown key first", x, len, NULL, &m);
    free(x);
    s_expect_agree("chunk", b.data, b.len);
    s_expect_agree("failed result", rb.data, rb.len);

    /* Bytes after the map. */
    uint8_t *t = malloc(b.len + 1);
    memcpy(t, b.data, b.len);
    t[b.len] = 0x00;
    s_expect_fail("chunk + 1 trailing byte", t, b.len + 1, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "trailing");
    free(t);

    /* A header key again after the body. */
    static const uint8_t id_again[] = {0xa2, 'i', 'd', 0x05};
    e = (edit_t){.extra = id_again, .extra_len = sizeof id_again, .extra_pairs = 1};
    x = s_edit(b.data, b.len, &e, &len);
    s_expect_fail("chunk, \"id\" twice", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "duplicate key \"id\"");
    free(x);
    static const uint8_t v_again[] = {0xa1, 'v', 0x02};
    e = (edit_t){.extra = v_again, .extra_len = sizeof v_again, .extra_pairs = 1};
    x = s_edit(b.data, b.len, &e, &len);
    s_expect_fail("chunk, \"v\" twice", x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST,
                  "duplicate key \"v\"");
    free(x);

    /* Skipped values: an unknown value of the message may open max_depth - 1 containers, a
     * container key as many, a value inside "tm" max_depth - 2. */
    com_proto_limits_t lim;
    com_proto_limits_default(&lim);
    for (uint32_t depth = 3; depth <= 9; depth += 3) {
        lim.max_depth = depth;
        for (int extra = 0; extra <= 1; extra++) {
            uint8_t buf[80];
            int n = (int)depth - 1 + extra;
            buf[0] = 0xa2, buf[1] = 'z', buf[2] = 'z';
            size_t vlen = 3 + s_nest(buf + 3, n);
            e = (edit_t){.extra = buf, .extra_len = vlen, .extra_pairs = 1};
            x = s_edit(b.data, b.len, &e, &len);
            if (extra)
                s_expect_fail("unknown value one too deep", x, len, &lim, COM_ETOOLONG,
                              COM_PROTO_TOO_LARGE, "max_depth");
            else
                s_expect_ok("unknown value at max_depth", x, len, &lim, &m);
            free(x);
            vlen = s_nest(buf, n);
            buf[vlen++] = 0xc0;
            e = (edit_t){.extra = buf, .extra_len = vlen, .extra_pairs = 1};
            x = s_edit(b.data, b.len, &e, &len);
            if (extra)
                s_expect_fail("container key one too deep", x, len, &lim, COM_ETOOLONG,
                              COM_PROTO_TOO_LARGE, "max_depth");
            else
                s_expect_ok("container key at max_depth", x, len, &lim, &m);
            free(x);
            static const uint8_t tm_head[] = {0x82, 0xa3, 't', 'o', 'k', 0x01, 0xa1, 'x'};
            memcpy(buf, tm_head, sizeof tm_head);
            vlen = sizeof tm_head + s_nest(buf + sizeof tm_head, (int)depth - 2 + extra);
            e = (edit_t){.replace = "tm", .val = buf, .val_len = vlen};
            x = s_edit(rb.data, rb.len, &e, &len);
            if (extra) {
                s_expect_fail("value in \"tm\" one too deep", x, len, &lim, COM_ETOOLONG,
                              COM_PROTO_TOO_LARGE, "max_depth");
            } else {
                com_proto_msg_t want = r;
                want.u.result.timing = (com_proto_timings_t){1, 0, 0, 0};
                s_expect_ok("value in \"tm\" at max_depth", x, len, &lim, &want);
            }
            free(x);
        }
    }

    /* Several errors: the strict order decides (structure, then header, then fields). */
    uint8_t both[48];
    static const uint8_t cid_str[] = {0xa1, 'x'};
    both[0] = 0xa2, both[1] = 'z', both[2] = 'z';
    size_t blen = 3 + s_nest(both + 3, 20);
    uint8_t *y =
        s_edit(b.data, b.len, &(edit_t){.replace = "cid", .val = cid_str, .val_len = 2}, &len);
    x = s_edit(y, len, &(edit_t){.extra = both, .extra_len = blen, .extra_pairs = 1}, &len);
    s_expect_fail("bad \"cid\", then too deep", x, len, NULL, COM_ETOOLONG, COM_PROTO_TOO_LARGE,
                  "max_depth");
    free(x);
    free(y);
    com_proto_limits_default(&lim);
    lim.max_total_tokens = 10;
    e = (edit_t){.extra = id_again, .extra_len = sizeof id_again, .extra_pairs = 1};
    x = s_edit(b.data, b.len, &e, &len);
    s_expect_fail("too many tokens, then \"id\" twice", x, len, &lim, COM_EFORMAT,
                  COM_PROTO_BAD_REQUEST, "duplicate key \"id\"");
    free(x);

    /* Ids arrays that grow past the first guess (length of the first x inputs). */
    com_proto_buf_free(&b);
    const uint32_t grow[] = {1, 4000, 7, 9000, 2, 1};
    s_chunk_of(&a, grow, 6, &m, &b);
    s_expect_ok("chunk, irregular lengths", b.data, b.len, NULL, &m);
    com_proto_msg_t tr;
    com_proto_buf_t tb = {0};
    com_proto_msg_init(&tr, COM_PROTO_TOKENIZE_REPLY, 9);
    int32_t offs[] = {0, 0, 0, 3000, 3000, 3001}, offs0[] = {0, 0, 0};
    tr.u.tokenize_reply.ids =
        (com_proto_inputs_t){COM_PROTO_IN_IDS, 5, NULL, m.u.chunk.in.ids, offs};
    CHECK(com_proto_encode(&tr, &tb, NULL) == 0);
    s_expect_ok("tokenize_reply, empty then long", tb.data, tb.len, NULL, &tr);
    com_proto_buf_free(&tb);
    tr.u.tokenize_reply.ids = (com_proto_inputs_t){COM_PROTO_IN_IDS, 2, NULL, NULL, offs0};
    CHECK(com_proto_encode(&tr, &tb, NULL) == 0);
    s_expect_ok("tokenize_reply, all empty", tb.data, tb.len, NULL, &tr);
    com_proto_buf_free(&tb);

    /* Id encodings the encoder never writes: wider than needed, signed, too large, negative. */
    com_proto_buf_free(&b);
    const uint32_t one[] = {7};
    s_chunk_of(&a, one, 1, &m, &b);
    static const uint8_t wide[] = {
        0x91, 0x97, 0xcf, 0, 0, 0, 0, 0, 0, 0, 5, 0xd0, 0x05, 0xd1, 0x00, 0x06, 0xd2, 0,   0,
        0,    7,    0xd3, 0, 0, 0, 0, 0, 0, 0, 8, 0xce, 0x7f, 0xff, 0xff, 0xff, 0xcc, 0x80};
    int32_t wide_ids[] = {5, 5, 6, 7, 8, INT32_MAX, 128};
    com_proto_msg_t want = m;
    want.u.chunk.in.ids = wide_ids;
    x = s_edit(b.data, b.len, &(edit_t){.replace = "in", .val = wide, .val_len = sizeof wide},
               &len);
    s_expect_ok("ids in every integer encoding", x, len, NULL, &want);
    free(x);
    static const struct {
        uint8_t v[8];
        size_t n;
        const char *msg;
    } bad[] = {
        {{0x91, 0x91, 0xd0, 0xff}, 4, "\"in\"[0][0]: token id -1 is negative"},
        {{0x91, 0x91, 0xff}, 3, "\"in\"[0][0]: token id -1 is negative"},
        {{0x91, 0x91, 0xce, 0x80, 0, 0, 0}, 7, "token id 2147483648 exceeds 2147483647"},
        {{0x91, 0x91, 0xc3}, 3, "\"in\"[0][0]: expected a token id (integer), got bool"},
        {{0x91, 0x91, 0xcd, 0x01}, 4, "malformed message"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        x = s_edit(b.data, b.len, &(edit_t){.replace = "in", .val = bad[i].v, .val_len = bad[i].n},
                   &len);
        /* "seg" (7 entries) no longer matches: it comes after "in", so "in" fails first. */
        s_expect_fail(bad[i].msg, x, len, NULL, COM_EFORMAT, COM_PROTO_BAD_REQUEST, bad[i].msg);
        free(x);
    }
    com_proto_buf_free(&b);
    com_proto_buf_free(&rb);
    s_a_free(&a);
}

static void test_salvaged_id(void) {
    /* {"v":1, "id":7, "x": map32 declaring 2^32-1 pairs} */
    const uint8_t before[] = {0x83, 0xa1, 'v',  0x01, 0xa2, 'i',  'd', 0x07,
                              0xa1, 'x',  0xdf, 0xff, 0xff, 0xff, 0xff};
    /* {"x": map32 declaring 2^32-1 pairs, "id": 7} */
    const uint8_t after[] = {0x82, 0xa1, 'x', 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa2, 'i', 'd', 0x07};
    com_proto_msg_t m;
    com_error_t err = {0};
    CHECK(com_proto_decode(before, sizeof before, NULL, &m, &err) != 0);
    CHECK(m.has_id && m.id == 7 && m.perr == COM_PROTO_BAD_REQUEST);
    CHECK(com_proto_decode(after, sizeof after, NULL, &m, &err) != 0);
    CHECK(!m.has_id);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
        return s_write_seeds(argv[2]);
    test_roundtrip();
    test_typed_encoders();
    test_known_values();
    test_forward_compat();
    test_missing_types_duplicates();
    test_limits();
    test_truncation();
    test_hostile();
    test_salvaged_id();
    test_fast_path();
    test_values();
    test_encoder_checks();
    test_tensor_pack();
    test_seeds();
    return test_finish();
}
