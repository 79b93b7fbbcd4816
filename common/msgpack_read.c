/* common/msgpack_read.c — see msgpack_read.h. Every multi-byte read goes through s_need(),
 * which compares against the bytes that remain before touching them; big-endian fields are
 * assembled byte by byte (no alignment or host-order assumptions). Pure; no global state. */
#include "common/msgpack_read.h"

#include <string.h>

void com_mpr_init(com_mpr_t *r, const void *buf, size_t len) {
    r->buf = (const uint8_t *)buf;
    r->p = r->buf;
    r->end = r->buf + (buf ? len : 0);
}

const char *com_mpr_kind_name(com_mpr_kind_t k) {
    switch (k) {
    case COM_MPR_NIL:
        return "nil";
    case COM_MPR_BOOL:
        return "bool";
    case COM_MPR_UINT:
        return "unsigned integer";
    case COM_MPR_INT:
        return "negative integer";
    case COM_MPR_F32:
        return "float32";
    case COM_MPR_F64:
        return "float64";
    case COM_MPR_STR:
        return "string";
    case COM_MPR_BIN:
        return "bin";
    case COM_MPR_ARRAY:
        return "array";
    case COM_MPR_MAP:
        return "map";
    case COM_MPR_EXT:
        return "ext";
    }
    return "?";
}

static uint64_t s_be(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

static int s_truncated(const com_mpr_t *r, size_t at, size_t need, com_error_t *err) {
    return com_error_set(err, COM_EFORMAT,
                         "msgpack truncated at byte %zu: need %zu more bytes, %zu left", at, need,
                         (size_t)(r->end - (r->buf + at)));
}

/* Fills o for a payload-carrying kind (STR/BIN/EXT) whose payload starts at q (after the
 * header of hdr bytes at p). */
static int s_payload(const com_mpr_t *r, const uint8_t *q, uint64_t len, com_mpr_obj_t *o,
                     com_error_t *err) {
    if (len > (uint64_t)(r->end - q))
        return com_error_set(err, COM_EFORMAT,
                             "msgpack %s at byte %zu declares %llu bytes, only %zu left",
                             com_mpr_kind_name(o->kind), com_mpr_offset(r), (unsigned long long)len,
                             (size_t)(r->end - q));
    o->len = (uint32_t)len; /* every length field is at most 32 bits */
    o->ptr = q;
    return 0;
}

static int s_count(const com_mpr_t *r, const uint8_t *q, uint64_t count, com_mpr_obj_t *o,
                   com_error_t *err) {
    uint64_t min_bytes = o->kind == COM_MPR_MAP ? 2 * count : count;
    if (min_bytes > (uint64_t)(r->end - q))
        return com_error_set(
            err, COM_EFORMAT, "msgpack %s at byte %zu declares %llu %s, only %zu bytes left",
            com_mpr_kind_name(o->kind), com_mpr_offset(r), (unsigned long long)count,
            o->kind == COM_MPR_MAP ? "pairs" : "elements", (size_t)(r->end - q));
    o->len = (uint32_t)count;
    return 0;
}

int com_mpr_next(com_mpr_t *r, com_mpr_obj_t *o, com_error_t *err) {
    memset(o, 0, sizeof *o);
    const uint8_t *p = r->p;
    size_t left = (size_t)(r->end - p);
    if (left < 1)
        return s_truncated(r, com_mpr_offset(r), 1, err);
    uint8_t b = p[0];
    size_t hdr = 1; /* header bytes including b */
    size_t w = 0;   /* width of the big-endian field after b */
    int rc = 0;

    if (b <= 0x7f) {
        o->kind = COM_MPR_UINT;
        o->v.u = b;
    } else if (b >= 0xe0) {
        o->kind = COM_MPR_INT;
        o->v.i = (int8_t)b;
    } else if (b >= 0x80 && b <= 0x8f) {
        o->kind = COM_MPR_MAP;
        rc = s_count(r, p + 1, b & 0x0f, o, err);
    } else if (b >= 0x90 && b <= 0x9f) {
        o->kind = COM_MPR_ARRAY;
        rc = s_count(r, p + 1, b & 0x0f, o, err);
    } else if (b >= 0xa0 && b <= 0xbf) {
        o->kind = COM_MPR_STR;
        rc = s_payload(r, p + 1, b & 0x1f, o, err);
        hdr += o->len;
    } else {
        switch (b) {
        case 0xc0:
            o->kind = COM_MPR_NIL;
            break;
        case 0xc2:
        case 0xc3:
            o->kind = COM_MPR_BOOL;
            o->v.b = b == 0xc3;
            break;
        case 0xc4:
        case 0xc5:
        case 0xc6:
        case 0xd9:
        case 0xda:
        case 0xdb:
            o->kind = b <= 0xc6 ? COM_MPR_BIN : COM_MPR_STR;
            w = b <= 0xc6 ? (size_t)1 << (b - 0xc4) : (size_t)1 << (b - 0xd9);
            if (left < 1 + w)
                return s_truncated(r, com_mpr_offset(r), 1 + w, err);
            rc = s_payload(r, p + 1 + w, s_be(p + 1, w), o, err);
            hdr += w + o->len;
            break;
        case 0xc7:
        case 0xc8:
        case 0xc9:
            o->kind = COM_MPR_EXT;
            w = (size_t)1 << (b - 0xc7);
            if (left < 2 + w)
                return s_truncated(r, com_mpr_offset(r), 2 + w, err);
            o->ext_type = (int8_t)p[1 + w];
            rc = s_payload(r, p + 2 + w, s_be(p + 1, w), o, err);
            hdr += w + 1 + o->len;
            break;
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8:
            o->kind = COM_MPR_EXT;
            if (left < 2)
                return s_truncated(r, com_mpr_offset(r), 2, err);
            o->ext_type = (int8_t)p[1];
            rc = s_payload(r, p + 2, (uint64_t)1 << (b - 0xd4), o, err);
            hdr += 1 + o->len;
            break;
        case 0xca:
        case 0xcb:
            o->kind = b == 0xca ? COM_MPR_F32 : COM_MPR_F64;
            w = b == 0xca ? 4 : 8;
            if (left < 1 + w)
                return s_truncated(r, com_mpr_offset(r), 1 + w, err);
            if (w == 4) {
                uint32_t bits = (uint32_t)s_be(p + 1, 4);
                float f;
                memcpy(&f, &bits, sizeof f);
                o->v.f = f;
            } else {
                uint64_t bits = s_be(p + 1, 8);
                memcpy(&o->v.f, &bits, sizeof o->v.f);
            }
            hdr += w;
            break;
        case 0xcc:
        case 0xcd:
        case 0xce:
        case 0xcf:
            o->kind = COM_MPR_UINT;
            w = (size_t)1 << (b - 0xcc);
            if (left < 1 + w)
                return s_truncated(r, com_mpr_offset(r), 1 + w, err);
            o->v.u = s_be(p + 1, w);
            hdr += w;
            break;
        case 0xd0:
        case 0xd1:
        case 0xd2:
        case 0xd3: {
            w = (size_t)1 << (b - 0xd0);
            if (left < 1 + w)
                return s_truncated(r, com_mpr_offset(r), 1 + w, err);
            uint64_t raw = s_be(p + 1, w);
            int64_t v;
            if (w == 1)
                v = (int8_t)(uint8_t)raw;
            else if (w == 2)
                v = (int16_t)(uint16_t)raw;
            else if (w == 4)
                v = (int32_t)(uint32_t)raw;
            else
                memcpy(&v, &raw, sizeof v);
            if (v >= 0) {
                o->kind = COM_MPR_UINT;
                o->v.u = (uint64_t)v;
            } else {
                o->kind = COM_MPR_INT;
                o->v.i = v;
            }
            hdr += w;
            break;
        }
        case 0xdc:
        case 0xdd:
        case 0xde:
        case 0xdf:
            o->kind = (b == 0xdc || b == 0xdd) ? COM_MPR_ARRAY : COM_MPR_MAP;
            w = (b == 0xdc || b == 0xde) ? 2 : 4;
            if (left < 1 + w)
                return s_truncated(r, com_mpr_offset(r), 1 + w, err);
            rc = s_count(r, p + 1 + w, s_be(p + 1, w), o, err);
            hdr += w;
            break;
        default: /* 0xc1 */
            return com_error_set(err, COM_EFORMAT, "msgpack reserved byte 0x%02x at byte %zu", b,
                                 com_mpr_offset(r));
        }
    }
    if (rc != 0) {
        memset(o, 0, sizeof *o);
        return rc;
    }
    r->p = p + hdr;
    return 0;
}

int com_mpr_skip(com_mpr_t *r, uint32_t depth_left, com_error_t *err) {
    if (depth_left > COM_MPR_DEPTH_CAP)
        depth_left = COM_MPR_DEPTH_CAP;
    size_t at = com_mpr_offset(r);
    com_mpr_obj_t o;
    int rc = com_mpr_next(r, &o, err);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_ARRAY && o.kind != COM_MPR_MAP)
        return 0;
    if (depth_left == 0)
        return com_error_set(err, COM_ETOOLONG, "msgpack nesting too deep at byte %zu", at);
    uint64_t items = o.kind == COM_MPR_MAP ? 2 * (uint64_t)o.len : o.len;
    for (uint64_t i = 0; i < items; i++) {
        rc = com_mpr_skip(r, depth_left - 1, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int com_mpr_check(const void *buf, size_t len, uint32_t max_depth, com_error_t *err) {
    com_mpr_t r;
    com_mpr_init(&r, buf, len);
    int rc = com_mpr_skip(&r, max_depth, err);
    if (rc != 0)
        return rc;
    if (com_mpr_remaining(&r) != 0)
        return com_error_set(err, COM_EFORMAT, "%zu trailing bytes after the msgpack object",
                             com_mpr_remaining(&r));
    return 0;
}
