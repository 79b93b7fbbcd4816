/* tests/test_protocol_reader.c — common/msgpack_read.c against msgpack-c's writer: random
 * object trees are packed with msgpack_packer using every format (fixint, u8..u64 and i8..i64
 * even for small values, float32/64, fixstr/str8/16/32, bin8/16/32, fixext1..16, ext8/16/32,
 * fix/16/32 arrays and maps, nil, bools), while the generator records the expected sequence of
 * objects; the reader must produce exactly that sequence, com_mpr_check must accept the buffer
 * at its depth and refuse it one level shallower, and every proper prefix of the smaller
 * buffers must be refused. Also: com_mpr_next leaves the cursor unchanged on error.
 * Single-threaded. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msgpack_read.h"
#include "common/prng.h"
#include "tests/test_util.h"

typedef struct ev {
    com_mpr_kind_t kind;
    uint64_t u;
    int64_t i;
    double f;
    uint32_t len;
    uint32_t payload_at; /* offset into s_pool */
    int8_t ext_type;
} ev_t;

static ev_t *s_ev;
static size_t s_nev, s_cap;
static uint8_t s_pool[1 << 17]; /* random payload bytes, shared by all strings/bins/exts */

static void s_push(ev_t e) {
    if (s_nev == s_cap) {
        s_cap = s_cap ? 2 * s_cap : 1024;
        s_ev = realloc(s_ev, s_cap * sizeof *s_ev);
        if (!s_ev)
            exit(1);
    }
    s_ev[s_nev++] = e;
}

static uint32_t s_len(com_prng_t *p) {
    uint64_t r = com_prng_below(p, 1000);
    if (r < 700)
        return (uint32_t)com_prng_below(p, 32);
    if (r < 950)
        return 32 + (uint32_t)com_prng_below(p, 300);
    if (r < 998)
        return 256 + (uint32_t)com_prng_below(p, 3000);
    return 65536 + (uint32_t)com_prng_below(p, 1000); /* the 32-bit length forms */
}

/* Packs one random object (containers up to depth_left deep); returns the depth used. */
static uint32_t s_gen(com_prng_t *p, msgpack_packer *pk, uint32_t depth_left) {
    ev_t e = {0};
    uint64_t what = com_prng_below(p, depth_left ? 12 : 9);
    switch (what) {
    case 0:
        e.kind = COM_MPR_NIL;
        msgpack_pack_nil(pk);
        break;
    case 1:
        e.kind = COM_MPR_BOOL;
        e.u = com_prng_below(p, 2);
        if (e.u)
            msgpack_pack_true(pk);
        else
            msgpack_pack_false(pk);
        break;
    case 2: { /* non-negative integer in a random encoding wide enough */
        int bits = (int)com_prng_below(p, 65);
        uint64_t v = bits ? com_prng_next(p) >> (64 - bits) : 0;
        e.kind = COM_MPR_UINT;
        e.u = v;
        int form = (int)com_prng_below(p, 6);
        if (form == 1 && v <= UINT8_MAX)
            msgpack_pack_fix_uint8(pk, (uint8_t)v);
        else if (form == 2 && v <= UINT16_MAX)
            msgpack_pack_fix_uint16(pk, (uint16_t)v);
        else if (form == 3 && v <= UINT32_MAX)
            msgpack_pack_fix_uint32(pk, (uint32_t)v);
        else if (form == 4 && v <= INT8_MAX)
            msgpack_pack_fix_int8(pk, (int8_t)v);
        else if (form == 5 && v <= INT64_MAX)
            msgpack_pack_fix_int64(pk, (int64_t)v);
        else if (form == 0)
            msgpack_pack_uint64(pk, v);
        else
            msgpack_pack_fix_uint64(pk, v);
        break;
    }
    case 3: { /* negative integer */
        int bits = 1 + (int)com_prng_below(p, 63);
        int64_t v = -1 - (int64_t)(com_prng_next(p) >> (64 - bits));
        e.kind = COM_MPR_INT;
        e.i = v;
        int form = (int)com_prng_below(p, 5);
        if (form == 1 && v >= INT8_MIN)
            msgpack_pack_fix_int8(pk, (int8_t)v);
        else if (form == 2 && v >= INT16_MIN)
            msgpack_pack_fix_int16(pk, (int16_t)v);
        else if (form == 3 && v >= INT32_MIN)
            msgpack_pack_fix_int32(pk, (int32_t)v);
        else if (form == 4)
            msgpack_pack_fix_int64(pk, v);
        else
            msgpack_pack_int64(pk, v);
        break;
    }
    case 4: {
        float f = com_prng_uniform(p, -1e6f, 1e6f);
        e.kind = COM_MPR_F32;
        e.f = f;
        msgpack_pack_float(pk, f);
        break;
    }
    case 5: {
        double f = (double)com_prng_next(p) / 3.0;
        e.kind = COM_MPR_F64;
        e.f = f;
        msgpack_pack_double(pk, f);
        break;
    }
    case 6:
    case 7: {
        e.kind = what == 6 ? COM_MPR_STR : COM_MPR_BIN;
        e.len = s_len(p);
        e.payload_at = (uint32_t)com_prng_below(p, sizeof s_pool - e.len);
        if (what == 6)
            msgpack_pack_str_with_body(pk, s_pool + e.payload_at, e.len);
        else
            msgpack_pack_bin_with_body(pk, s_pool + e.payload_at, e.len);
        break;
    }
    case 8: {
        e.kind = COM_MPR_EXT;
        e.len = com_prng_below(p, 2) ? (1u << com_prng_below(p, 5)) : s_len(p);
        e.ext_type = (int8_t)com_prng_next(p);
        e.payload_at = (uint32_t)com_prng_below(p, sizeof s_pool - e.len);
        msgpack_pack_ext_with_body(pk, s_pool + e.payload_at, e.len, e.ext_type);
        break;
    }
    default: { /* containers */
        bool map = what == 11;
        uint32_t n = com_prng_below(p, 4) == 0 ? 16 + (uint32_t)com_prng_below(p, 8)
                                               : (uint32_t)com_prng_below(p, 6);
        e.kind = map ? COM_MPR_MAP : COM_MPR_ARRAY;
        e.len = n;
        s_push(e);
        if (map)
            msgpack_pack_map(pk, n);
        else
            msgpack_pack_array(pk, n);
        uint32_t deepest = 0;
        for (uint32_t i = 0; i < (map ? 2 * n : n); i++) {
            uint32_t d = s_gen(p, pk, depth_left - 1);
            if (d > deepest)
                deepest = d;
        }
        return 1 + deepest;
    }
    }
    s_push(e);
    return 0;
}

static bool s_same(const ev_t *e, const com_mpr_obj_t *o) {
    if (e->kind != o->kind)
        return false;
    switch (e->kind) {
    case COM_MPR_BOOL:
        return o->v.b == (e->u != 0);
    case COM_MPR_UINT:
        return o->v.u == e->u;
    case COM_MPR_INT:
        return o->v.i == e->i;
    case COM_MPR_F32:
    case COM_MPR_F64:
        return o->v.f == e->f;
    case COM_MPR_STR:
    case COM_MPR_BIN:
    case COM_MPR_EXT:
        return o->len == e->len && (e->kind != COM_MPR_EXT || o->ext_type == e->ext_type) &&
               (e->len == 0 || memcmp(o->ptr, s_pool + e->payload_at, e->len) == 0);
    case COM_MPR_ARRAY:
    case COM_MPR_MAP:
        return o->len == e->len;
    default:
        return true;
    }
}

static void test_random_trees(void) {
    com_prng_t p;
    com_prng_seed(&p, 555);
    for (size_t i = 0; i < sizeof s_pool; i++)
        s_pool[i] = (uint8_t)com_prng_next(&p);
    int prefix_checks = 0;
    for (int it = 0; it < 400; it++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        s_nev = 0;
        /* A top-level array so that several objects and depth 1+ are covered. */
        ev_t top = {.kind = COM_MPR_ARRAY, .len = 1 + (uint32_t)com_prng_below(&p, 6)};
        s_push(top);
        msgpack_pack_array(&pk, top.len);
        uint32_t deepest = 0;
        for (uint32_t i = 0; i < top.len; i++) {
            uint32_t d = s_gen(&p, &pk, 6);
            if (d > deepest)
                deepest = d;
        }
        uint32_t depth = 1 + deepest;
        uint8_t *buf = malloc(sb.size);
        memcpy(buf, sb.data, sb.size);
        com_mpr_t r;
        com_mpr_init(&r, buf, sb.size);
        size_t i = 0;
        int bad = 0;
        for (; i < s_nev && com_mpr_remaining(&r) > 0; i++) {
            com_mpr_obj_t o;
            com_error_t err = {0};
            if (com_mpr_next(&r, &o, &err) != 0 || !s_same(&s_ev[i], &o)) {
                bad = 1;
                fprintf(stderr, "tree %d object %zu: want %s, got %s (%s)\n", it, i,
                        com_mpr_kind_name(s_ev[i].kind), com_mpr_kind_name(o.kind), err.msg);
                break;
            }
        }
        CHECK(!bad && i == s_nev && com_mpr_remaining(&r) == 0);
        com_error_t err = {0};
        CHECK_MSG(com_mpr_check(buf, sb.size, depth, &err) == 0, "tree %d: %s", it, err.msg);
        CHECK(com_mpr_check(buf, sb.size, depth - 1, &err) == COM_ETOOLONG);
        com_mpr_init(&r, buf, sb.size);
        CHECK(com_mpr_skip(&r, depth, NULL) == 0 && com_mpr_remaining(&r) == 0);
        if (sb.size < 3000) {
            for (size_t len = 0; len < sb.size; len++) {
                uint8_t *pre = malloc(len ? len : 1);
                memcpy(pre, buf, len);
                int rc = com_mpr_check(pre, len, 64, NULL);
                if (rc != COM_EFORMAT)
                    CHECK_MSG(0, "tree %d prefix %zu of %zu: rc %d", it, len, sb.size, rc);
                free(pre);
                prefix_checks++;
            }
        }
        free(buf);
        msgpack_sbuffer_destroy(&sb);
    }
    printf("%d prefixes refused\n", prefix_checks);
    CHECK(prefix_checks > 10000);
}

static void test_edges(void) {
    /* Errors leave the cursor where it was. */
    static const uint8_t b[] = {0xc1, 0xdd, 0x00, 0x00, 0x00, 0x02, 0xc0};
    com_mpr_t r;
    com_mpr_obj_t o;
    com_error_t err = {0};
    com_mpr_init(&r, b, sizeof b);
    CHECK(com_mpr_next(&r, &o, &err) == COM_EFORMAT && com_mpr_offset(&r) == 0);
    CHECK(strstr(err.msg, "reserved") != NULL);
    r.p++;
    CHECK(com_mpr_next(&r, &o, &err) == COM_EFORMAT && com_mpr_offset(&r) == 1);
    CHECK(strstr(err.msg, "declares 2") != NULL);
    /* An array of 2 nils fits in exactly 2 bytes. */
    static const uint8_t ok[] = {0xdd, 0x00, 0x00, 0x00, 0x02, 0xc0, 0xc0};
    CHECK(com_mpr_check(ok, sizeof ok, 1, NULL) == 0);
    CHECK(com_mpr_check(ok, sizeof ok, 0, NULL) == COM_ETOOLONG);
    /* A map of n pairs needs 2n bytes. */
    static const uint8_t map[] = {0x82, 0xc0, 0xc0, 0xc0};
    CHECK(com_mpr_check(map, sizeof map, 4, NULL) == COM_EFORMAT);
    /* Scalars need no depth; NULL buffer is empty. */
    static const uint8_t one[] = {0x01};
    CHECK(com_mpr_check(one, 1, 0, NULL) == 0);
    CHECK(com_mpr_check(NULL, 0, 4, NULL) == COM_EFORMAT);
    /* Depth is capped at COM_MPR_DEPTH_CAP whatever the caller asks. */
    uint8_t deep[COM_MPR_DEPTH_CAP + 2];
    memset(deep, 0x91, COM_MPR_DEPTH_CAP + 1);
    deep[COM_MPR_DEPTH_CAP + 1] = 0xc0;
    CHECK(com_mpr_check(deep, sizeof deep, 1000, NULL) == COM_ETOOLONG);
    CHECK(com_mpr_check(deep + 1, sizeof deep - 1, 1000, NULL) == 0);
    /* Integer normalisation: int64 holding 5 reads as UINT 5; 0xff as INT -1. */
    static const uint8_t i64[] = {0xd3, 0, 0, 0, 0, 0, 0, 0, 5};
    com_mpr_init(&r, i64, sizeof i64);
    CHECK(com_mpr_next(&r, &o, NULL) == 0 && o.kind == COM_MPR_UINT && o.v.u == 5);
    static const uint8_t m1[] = {0xff};
    com_mpr_init(&r, m1, 1);
    CHECK(com_mpr_next(&r, &o, NULL) == 0 && o.kind == COM_MPR_INT && o.v.i == -1);
    /* Every header byte with nothing after it: a clean error or a one-byte scalar. */
    for (int c = 0; c < 256; c++) {
        uint8_t one_byte = (uint8_t)c;
        com_mpr_init(&r, &one_byte, 1);
        int rc = com_mpr_next(&r, &o, NULL);
        bool scalar = c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3 || c == 0x80 ||
                      c == 0x90 || c == 0xa0;
        CHECK_MSG(scalar ? rc == 0 : rc == COM_EFORMAT, "byte 0x%02x alone: rc %d", c, rc);
    }
}

int main(void) {
    test_edges();
    test_random_trees();
    free(s_ev);
    return test_finish();
}
