/* common/msgpack_read.h — a bounded, zero-copy msgpack reader for untrusted bytes.
 *
 * A cursor (com_mpr_t) walks a caller-owned buffer. Every read checks the remaining length
 * first; strings, bins and ext payloads are returned as pointers into the buffer (nothing is
 * copied or allocated, ever); a declared array or map count is rejected when it cannot fit in
 * the bytes that remain (each element needs at least one byte), so a caller that allocates
 * `count` elements after com_mpr_next() allocates at most what the buffer could describe.
 * Nesting is bounded by a caller-given depth (the top-level container is depth 1), so skipping
 * recurses at most that deep. The reserved byte 0xc1 is an error. This replaces msgpack-c's
 * unpacker on untrusted input: msgpack-c 4.0 tries to allocate ~96 GB for `dd ff ff ff ff`.
 *
 * Integers are normalised by value: any integer encoding holding a value >= 0 reads as
 * COM_MPR_UINT (v.u), a negative one as COM_MPR_INT (v.i).
 * Errors: COM_EFORMAT (truncated, reserved byte, trailing bytes), COM_ETOOLONG (too deep);
 * messages give the byte offset. Thread-safety: a cursor belongs to one thread; the buffer is
 * only read. */
#ifndef EMBER_COMMON_MSGPACK_READ_H
#define EMBER_COMMON_MSGPACK_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Hard upper bound on nesting any caller may ask for (bounds recursion). */
#define COM_MPR_DEPTH_CAP 64

typedef enum com_mpr_kind {
    COM_MPR_NIL = 0,
    COM_MPR_BOOL,
    COM_MPR_UINT,  /* any integer encoding with a value >= 0: v.u */
    COM_MPR_INT,   /* any integer encoding with a value < 0: v.i */
    COM_MPR_F32,   /* v.f (widened) */
    COM_MPR_F64,   /* v.f */
    COM_MPR_STR,   /* ptr[len] payload, not NUL-terminated, UTF-8 not checked */
    COM_MPR_BIN,   /* ptr[len] payload */
    COM_MPR_ARRAY, /* len elements follow the header */
    COM_MPR_MAP,   /* len key/value pairs follow the header */
    COM_MPR_EXT,   /* ext_type, ptr[len] payload */
} com_mpr_kind_t;

typedef struct com_mpr_obj {
    com_mpr_kind_t kind;
    union {
        bool b;     /* BOOL */
        uint64_t u; /* UINT */
        int64_t i;  /* INT (always < 0) */
        double f;   /* F32, F64 */
    } v;
    uint32_t len;       /* STR/BIN/EXT: payload bytes; ARRAY: elements; MAP: pairs; else 0 */
    const uint8_t *ptr; /* STR/BIN/EXT: payload inside the buffer; else NULL */
    int8_t ext_type;    /* EXT only */
} com_mpr_obj_t;

typedef struct com_mpr {
    const uint8_t *buf; /* start, for offsets in messages */
    const uint8_t *p;   /* next byte to read; buf <= p <= end */
    const uint8_t *end;
} com_mpr_t;

/* Points r at buf[len] (caller-owned, must outlive r and every pointer read through it). */
void com_mpr_init(com_mpr_t *r, const void *buf, size_t len);

static inline size_t com_mpr_remaining(const com_mpr_t *r) {
    return (size_t)(r->end - r->p);
}
static inline size_t com_mpr_offset(const com_mpr_t *r) {
    return (size_t)(r->p - r->buf);
}

/* Reads one object header into *o. For STR/BIN/EXT also steps over the payload (checked
 * against the remaining bytes); for ARRAY/MAP the cursor stops at the first element, and the
 * count is checked to fit in the remaining bytes. Returns 0, or COM_EFORMAT with the cursor
 * unchanged. */
int com_mpr_next(com_mpr_t *r, com_mpr_obj_t *o, com_error_t *err);

/* Steps over one whole object (containers included). depth_left is how many container levels
 * may still be opened (0: only a scalar is allowed); it is clamped to COM_MPR_DEPTH_CAP.
 * Returns 0, COM_EFORMAT or COM_ETOOLONG; the cursor is unspecified on error. */
int com_mpr_skip(com_mpr_t *r, uint32_t depth_left, com_error_t *err);

/* Checks that buf[len] is exactly one well-formed object nested at most max_depth containers
 * deep, with no trailing bytes. Returns 0, COM_EFORMAT or COM_ETOOLONG. */
int com_mpr_check(const void *buf, size_t len, uint32_t max_depth, com_error_t *err);

/* "nil", "bool", "uint", ... for messages. */
const char *com_mpr_kind_name(com_mpr_kind_t k);

#endif
