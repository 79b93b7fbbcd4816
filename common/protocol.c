/* common/protocol.c — the encoders and decoders of every message; see protocol.h and
 * docs/protocol.md (names, init/free, equality and tensor packing are in protocol_util.c).
 *
 * Layout: the decoder's building blocks (error reporting, map iteration with duplicate and
 * required-key tracking, typed value readers, inputs, tensors); the writer (msgpack-c packer
 * with a sticky error, top-level map count patched at the end); then each message's encoder and
 * decoder side by side; then the decode and encode dispatchers.
 *
 * Decoder invariants: com_proto_decode has two paths over the same field readers. The fast
 * path (the header "v", "t", "id" as the first three keys, as the encoder writes them) reads the
 * message in one walk: the header, then each body field, skipping unknown values within the
 * nesting budget com_mpr_check would give them, rejecting a header key seen again, and
 * requiring no bytes after the map; it reports nothing (err NULL). Any failure there, or a
 * header elsewhere, frees what it allocated and runs the strict path: com_mpr_check over the
 * whole buffer, the whole header, then the body; it alone reports, so every error has the code
 * and message it always had. Every count is compared with its limit before the allocation it
 * sizes, and a count can never exceed the bytes left (com_mpr_next guarantees it); token ids are
 * checked and copied in the same walk (s_ids). Everything the decoder allocates is recorded in
 * msg->owned_ and freed on any failure.
 * Pure functions; no global state. */
#include "common/protocol.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msgpack_read.h"

static const char *s_task_name(com_proto_task_t t) {
    return t == COM_PROTO_TASK_EMBED ? "embed" : t == COM_PROTO_TASK_SCORE ? "score" : "?";
}

static bool s_streq(com_proto_str_t s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && (n == 0 || memcmp(s.ptr, lit, n) == 0);
}

/* ---------------------------------------------------------------- decoder building blocks */

typedef struct s_dec {
    com_mpr_t r;
    const com_proto_limits_t *lim;
    com_proto_msg_t *m;
    com_error_t *err; /* NULL on the fast path (its failures are never reported) */
    bool fast;        /* the fast path: no structural check ran, the header was read already */
} s_dec_t;

/* Records perr on the message and a formatted message in err; returns code. */
static int s_fail(s_dec_t *d, com_proto_code_t perr, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int s_fail(s_dec_t *d, com_proto_code_t perr, int code, const char *fmt, ...) {
    d->m->perr = perr;
    if (d->err) {
        va_list ap;
        va_start(ap, fmt);
        d->err->code = code;
        vsnprintf(d->err->msg, sizeof d->err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

#define S_BAD(d, ...)   s_fail((d), COM_PROTO_BAD_REQUEST, COM_EFORMAT, __VA_ARGS__)
#define S_BIG(d, ...)   s_fail((d), COM_PROTO_TOO_LARGE, COM_ETOOLONG, __VA_ARGS__)
#define S_UNSUP(d, ...) s_fail((d), COM_PROTO_UNSUPPORTED, COM_EUNSUPPORTED, __VA_ARGS__)

/* Reads the next object; a reader failure (impossible after com_mpr_check, but checked) is a
 * BAD_REQUEST naming the field. */
static int s_next(s_dec_t *d, const char *field, com_mpr_obj_t *o) {
    int rc = com_mpr_next(&d->r, o, d->err);
    if (rc != 0) {
        d->m->perr = rc == COM_ETOOLONG ? COM_PROTO_TOO_LARGE : COM_PROTO_BAD_REQUEST;
        return com_error_prefix(d->err, rc, "%s", field);
    }
    return 0;
}

/* Steps over one object that may open depth_left more containers (the same budget
 * com_mpr_check gives an object at that place, so the fast path enforces max_depth exactly). */
static int s_skip(s_dec_t *d, const char *field, uint32_t depth_left) {
    int rc = com_mpr_skip(&d->r, depth_left, d->err);
    if (rc != 0) {
        d->m->perr = rc == COM_ETOOLONG ? COM_PROTO_TOO_LARGE : COM_PROTO_BAD_REQUEST;
        return com_error_prefix(d->err, rc, "%s", field);
    }
    return 0;
}

static int s_type(s_dec_t *d, const char *field, const com_mpr_obj_t *o, const char *want) {
    return S_BAD(d, "\"%s\": expected %s, got %s", field, want, com_mpr_kind_name(o->kind));
}

/* calloc(n, size) recorded in the message; n and size were validated by the caller. */
static void *s_alloc(s_dec_t *d, size_t n, size_t size, const char *field) {
    if (d->m->n_owned_ >= COM_PROTO_MAX_OWNED) {
        s_fail(d, COM_PROTO_INTERNAL, COM_EINTERNAL, "\"%s\": too many arrays in one message",
               field);
        return NULL;
    }
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        s_fail(d, COM_PROTO_INTERNAL, COM_ENOMEM, "\"%s\": out of memory for %zu x %zu bytes",
               field, n, size);
        return NULL;
    }
    d->m->owned_[d->m->n_owned_++] = p;
    return p;
}

/* Iterates the pairs of a map whose known keys are keys[nk] (nk <= 32). */
typedef struct s_map {
    const char *const *keys;
    int nk;
    uint32_t left;    /* pairs not yet read */
    uint32_t seen;    /* bit per known key met (duplicate check) */
    uint32_t present; /* bit per known key met with a non-nil value */
    const char *where;
    uint32_t level; /* containers around the pairs: 1 for the message, 2 for "use", "tm"... */
} s_map_t;

static s_map_t s_map(const char *const *keys, int nk, uint32_t pairs, const char *where) {
    s_map_t mp = {keys, nk, pairs, 0, 0, where, 1};
    return mp;
}

/* A map nested in the message ("use", "tm", "err"). */
static s_map_t s_submap(const char *const *keys, int nk, uint32_t pairs, const char *where) {
    s_map_t mp = s_map(keys, nk, pairs, where);
    mp.level = 2;
    return mp;
}

/* 0, 1, 2 for the header keys "v", "t", "id"; -1 for anything else. */
static int s_header_key(const com_mpr_obj_t *k) {
    if (k->kind != COM_MPR_STR || k->len == 0 || k->len > 2)
        return -1;
    if (k->len == 1)
        return k->ptr[0] == 'v' ? 0 : k->ptr[0] == 't' ? 1 : -1;
    return k->ptr[0] == 'i' && k->ptr[1] == 'd' ? 2 : -1;
}

/* Advances to the next known key with a non-nil value: returns 1 with *idx set and the cursor
 * on the value, 0 at the end of the map, or a negative code. Unknown keys (any type) are
 * skipped with their values; nil values count as absent; a known key seen twice is an error. */
static int s_map_next(s_dec_t *d, s_map_t *mp, int *idx) {
    /* An object among the pairs may open max_depth - level more containers (>= 1: max_depth
     * >= 3 and maps nest at most 2 deep). */
    uint32_t depth_left = d->lim->max_depth - mp->level;
    while (mp->left > 0) {
        mp->left--;
        com_mpr_t at = d->r;
        com_mpr_obj_t k;
        int rc = s_next(d, mp->where, &k);
        if (rc != 0)
            return rc;
        int found = -1;
        if (k.kind == COM_MPR_STR) {
            for (int i = 0; i < mp->nk; i++) {
                size_t kl = strlen(mp->keys[i]);
                if (k.len == kl && memcmp(k.ptr, mp->keys[i], kl) == 0) {
                    found = i;
                    break;
                }
            }
            /* The fast path consumed the header keys before the body: another one is a
             * duplicate (the strict path names it). */
            if (found < 0 && d->fast && mp->level == 1 && s_header_key(&k) >= 0)
                return S_BAD(d, "duplicate key \"%.*s\" in %s", (int)k.len, (const char *)k.ptr,
                             mp->where);
        } else if (k.kind == COM_MPR_ARRAY || k.kind == COM_MPR_MAP) {
            /* A container key: step over all of it before the value. */
            d->r = at;
            if ((rc = s_skip(d, mp->where, depth_left)) != 0)
                return rc;
        }
        if (found < 0) {
            if ((rc = s_skip(d, mp->where, depth_left)) != 0)
                return rc;
            continue;
        }
        if (mp->seen & (1u << found))
            return S_BAD(d, "duplicate key \"%s\" in %s", mp->keys[found], mp->where);
        mp->seen |= 1u << found;
        if (d->r.p < d->r.end && *d->r.p == 0xc0) { /* nil: absent */
            d->r.p++;
            continue;
        }
        mp->present |= 1u << found;
        *idx = found;
        return 1;
    }
    return 0;
}

static int s_map_require(s_dec_t *d, const s_map_t *mp, uint32_t required) {
    uint32_t missing = required & ~mp->present;
    for (int i = 0; i < mp->nk; i++)
        if (missing & (1u << i))
            return S_BAD(d, "missing required key \"%s\" in %s", mp->keys[i], mp->where);
    return 0;
}

static int s_u64(s_dec_t *d, const char *field, uint64_t max, uint64_t *out) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_UINT)
        return s_type(d, field, &o, "an unsigned integer");
    if (o.v.u > max)
        return S_BAD(d, "\"%s\": %llu is out of range (max %llu)", field, (unsigned long long)o.v.u,
                     (unsigned long long)max);
    *out = o.v.u;
    return 0;
}

static int s_u32(s_dec_t *d, const char *field, uint32_t *out) {
    uint64_t v = 0;
    int rc = s_u64(d, field, UINT32_MAX, &v);
    *out = (uint32_t)v;
    return rc;
}

/* A u32 that must also be <= limit (TOO_LARGE otherwise), limit_name for the message. */
static int s_u32_lim(s_dec_t *d, const char *field, uint32_t limit, const char *limit_name,
                     uint32_t *out) {
    int rc = s_u32(d, field, out);
    if (rc == 0 && *out > limit)
        return S_BIG(d, "\"%s\": %u exceeds the limit %s = %u", field, *out, limit_name, limit);
    return rc;
}

static int s_bool(s_dec_t *d, const char *field, bool *out) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_BOOL)
        return s_type(d, field, &o, "a bool");
    *out = o.v.b;
    return 0;
}

static int s_norm(s_dec_t *d, const char *field, int32_t *out) {
    bool b = false;
    int rc = s_bool(d, field, &b);
    *out = b ? 1 : 0;
    return rc;
}

static int s_str(s_dec_t *d, const char *field, uint32_t limit, const char *limit_name,
                 com_proto_str_t *out) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_STR)
        return s_type(d, field, &o, "a string");
    if (o.len > limit)
        return S_BIG(d, "\"%s\": %u bytes exceed the limit %s = %u", field, o.len, limit_name,
                     limit);
    out->ptr = (const char *)o.ptr;
    out->len = o.len;
    return 0;
}

static int s_name(s_dec_t *d, const char *field, com_proto_str_t *out) {
    return s_str(d, field, d->lim->max_str_bytes, "max_str_bytes", out);
}

static int s_dtype(s_dec_t *d, const char *field, com_proto_dtype_t *out) {
    com_proto_str_t s = {0};
    int rc = s_name(d, field, &s);
    if (rc != 0)
        return rc;
    if (s_streq(s, "f32"))
        *out = COM_PROTO_F32;
    else if (s_streq(s, "f16"))
        *out = COM_PROTO_F16;
    else
        return S_UNSUP(d, "\"%s\": unsupported dtype \"%.*s\" (f32, f16)", field,
                       (int)(s.len > 32 ? 32 : s.len), s.ptr);
    return 0;
}

static int s_task(s_dec_t *d, const char *field, com_proto_task_t *out) {
    com_proto_str_t s = {0};
    int rc = s_name(d, field, &s);
    if (rc != 0)
        return rc;
    if (s_streq(s, "embed"))
        *out = COM_PROTO_TASK_EMBED;
    else if (s_streq(s, "score"))
        *out = COM_PROTO_TASK_SCORE;
    else
        return S_UNSUP(d, "\"%s\": unsupported task \"%.*s\" (embed, score)", field,
                       (int)(s.len > 32 ? 32 : s.len), s.ptr);
    return 0;
}

/* Reads token id [i][j] of field into *out. The encodings the encoder writes for a
 * non-negative int32 (positive fixint, uint8, uint16, uint32 below 2^31) are read inline;
 * every other encoding and every error go through the bounded reader, with the messages below. */
static inline int s_id(s_dec_t *d, const char *field, uint32_t i, uint32_t j, int32_t *out) {
    const uint8_t *p = d->r.p;
    size_t left = (size_t)(d->r.end - p);
    if (left >= 1 && p[0] <= 0x7f) {
        *out = p[0];
        d->r.p = p + 1;
        return 0;
    }
    if (left >= 3 && p[0] == 0xcd) {
        *out = (int32_t)((uint32_t)p[1] << 8 | p[2]);
        d->r.p = p + 3;
        return 0;
    }
    if (left >= 5 && p[0] == 0xce && p[1] <= 0x7f) {
        *out = (int32_t)((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4]);
        d->r.p = p + 5;
        return 0;
    }
    if (left >= 2 && p[0] == 0xcc) {
        *out = p[1];
        d->r.p = p + 2;
        return 0;
    }
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind == COM_MPR_INT)
        return S_BAD(d, "\"%s\"[%u][%u]: token id %lld is negative", field, i, j, (long long)o.v.i);
    if (o.kind != COM_MPR_UINT)
        return S_BAD(d, "\"%s\"[%u][%u]: expected a token id (integer), got %s", field, i, j,
                     com_mpr_kind_name(o.kind));
    if (o.v.u > INT32_MAX)
        return S_BAD(d, "\"%s\"[%u][%u]: token id %llu exceeds 2147483647", field, i, j,
                     (unsigned long long)o.v.u);
    *out = (int32_t)o.v.u;
    return 0;
}

/* Reads an array of n (<= max_inputs, checked by the caller) token-id arrays in one walk:
 * each inner array's length is checked against max_tokens_per_input and the running total
 * against max_total_tokens before the ids array grows to hold it, then its ids are checked and
 * copied. The ids array grows to the checked total with headroom (first to that length x n,
 * exact for equal-length sequences, then doubling), never past max_total_tokens nor past the
 * ids the bytes left could hold (one byte at least each). An allocation failure is reported
 * only if the ids turn out valid, so a malformed input keeps its code. allow_empty: whether an
 * inner array may be empty. */
static int s_ids(s_dec_t *d, const char *field, uint32_t n, bool allow_empty,
                 com_proto_inputs_t *in) {
    const com_proto_limits_t *lim = d->lim;
    int alloc_rc = 0; /* first allocation failure, already recorded by s_fail */
    int32_t *offs = s_alloc(d, (size_t)n + 1, sizeof *offs, field); /* [n + 1], owned */
    if (!offs)
        alloc_rc = d->err ? d->err->code : COM_ENOMEM;
    int32_t *ids = NULL; /* [cap] token ids, owned by the message at owned_[ids_slot] */
    uint32_t ids_slot = 0;
    size_t cap = 0, total = 0;
    com_mpr_obj_t o;
    int rc;
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = s_next(d, field, &o)) != 0)
            return rc;
        if (o.kind != COM_MPR_ARRAY)
            return S_BAD(d, "\"%s\"[%u]: expected an array of token ids like \"%s\"[0], got %s",
                         field, i, field, com_mpr_kind_name(o.kind));
        if (o.len == 0 && !allow_empty)
            return S_BAD(d, "\"%s\"[%u]: empty token-id array", field, i);
        if (o.len > lim->max_tokens_per_input)
            return S_BIG(d, "\"%s\"[%u]: %u token ids exceed the limit max_tokens_per_input = %u",
                         field, i, o.len, lim->max_tokens_per_input);
        uint32_t len = o.len;
        size_t need = total + len;
        if (need > lim->max_total_tokens)
            return S_BIG(d,
                         "\"%s\": more than %u token ids in the message (limit "
                         "max_total_tokens), at input %u",
                         field, lim->max_total_tokens, i);
        if (need > cap && alloc_rc == 0) {
            uint64_t want = ids ? 2 * (uint64_t)cap : (uint64_t)len * n;
            uint64_t fit = total + com_mpr_remaining(&d->r); /* >= need: len fits the bytes */
            want = want > lim->max_total_tokens ? lim->max_total_tokens : want;
            want = want > fit ? fit : want;
            want = want < need ? need : want;
            int32_t *grown;
            if (!ids) {
                if ((grown = s_alloc(d, (size_t)want, sizeof *ids, field)) != NULL)
                    ids_slot = d->m->n_owned_ - 1;
            } else if (!(grown = realloc(ids, (size_t)want * sizeof *ids))) {
                s_fail(d, COM_PROTO_INTERNAL, COM_ENOMEM,
                       "\"%s\": out of memory for %llu token ids", field, (unsigned long long)want);
            }
            if (grown) {
                d->m->owned_[ids_slot] = ids = grown;
                cap = (size_t)want;
            } else {
                alloc_rc = d->err ? d->err->code : COM_ENOMEM;
            }
        }
        if (offs)
            offs[i] = (int32_t)total;
        int32_t sink = 0, *dst = alloc_rc == 0 ? ids + total : NULL;
        for (uint32_t j = 0; j < len; j++)
            if ((rc = s_id(d, field, i, j, dst ? dst + j : &sink)) != 0)
                return rc;
        total = need;
    }
    if (alloc_rc != 0) /* the ids are valid: the allocation failure stands (err still has it) */
        return alloc_rc;
    if (!ids && !(ids = s_alloc(d, 0, sizeof *ids, field))) /* all inputs empty */
        return d->err ? d->err->code : COM_ENOMEM;
    offs[n] = (int32_t)total;
    in->kind = COM_PROTO_IN_IDS;
    in->n = n;
    in->offs = offs;
    in->ids = ids;
    return 0;
}

#define S_KIND_TEXT 1u
#define S_KIND_IDS  2u

/* Reads "in"-style inputs: a non-empty array of strings or of token-id arrays. */
static int s_inputs(s_dec_t *d, const char *field, unsigned kinds, bool allow_empty_ids,
                    com_proto_inputs_t *in) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_ARRAY)
        return s_type(d, field, &o, "an array of inputs");
    uint32_t n = o.len;
    if (n == 0)
        return S_BAD(d, "\"%s\": no inputs", field);
    if (n > d->lim->max_inputs)
        return S_BIG(d, "\"%s\": %u inputs exceed the limit max_inputs = %u", field, n,
                     d->lim->max_inputs);
    com_mpr_t peek = d->r;
    com_mpr_obj_t first;
    if (com_mpr_next(&peek, &first, NULL) != 0)
        return S_BAD(d, "\"%s\"[0]: malformed", field);
    if (first.kind == COM_MPR_ARRAY && (kinds & S_KIND_IDS))
        return s_ids(d, field, n, allow_empty_ids, in);
    if (first.kind != COM_MPR_STR || !(kinds & S_KIND_TEXT))
        return S_BAD(d, "\"%s\"[0]: expected %s, got %s", field,
                     kinds == S_KIND_TEXT  ? "a string"
                     : kinds == S_KIND_IDS ? "an array of token ids"
                                           : "a string or an array of token ids",
                     com_mpr_kind_name(first.kind));
    in->kind = COM_PROTO_IN_TEXT;
    in->n = n;
    in->texts = s_alloc(d, n, sizeof *in->texts, field);
    if (!in->texts)
        return d->err ? d->err->code : COM_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = s_next(d, field, &o)) != 0)
            return rc;
        if (o.kind != COM_MPR_STR)
            return S_BAD(d, "\"%s\"[%u]: expected a string like \"%s\"[0], got %s", field, i, field,
                         com_mpr_kind_name(o.kind));
        if (o.len > d->lim->max_text_bytes)
            return S_BIG(d, "\"%s\"[%u]: %u bytes exceed the limit max_text_bytes = %u", field, i,
                         o.len, d->lim->max_text_bytes);
        in->texts[i].ptr = (const char *)o.ptr;
        in->texts[i].len = o.len;
    }
    return 0;
}

/* An array of u32 (counts), at most max_inputs long. */
static int s_u32_array(s_dec_t *d, const char *field, uint32_t **out, uint32_t *n_out) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_ARRAY)
        return s_type(d, field, &o, "an array of unsigned integers");
    if (o.len > d->lim->max_inputs)
        return S_BIG(d, "\"%s\": %u entries exceed the limit max_inputs = %u", field, o.len,
                     d->lim->max_inputs);
    uint32_t n = o.len;
    uint32_t *a = s_alloc(d, n, sizeof *a, field);
    if (!a)
        return d->err ? d->err->code : COM_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = s_next(d, field, &o)) != 0)
            return rc;
        if (o.kind != COM_MPR_UINT || o.v.u > UINT32_MAX)
            return S_BAD(d, "\"%s\"[%u]: expected an unsigned 32-bit integer, got %s", field, i,
                         com_mpr_kind_name(o.kind));
        a[i] = (uint32_t)o.v.u;
    }
    *out = a;
    *n_out = n;
    return 0;
}

static int s_bin(s_dec_t *d, const char *field, com_proto_tensor_t *t) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_BIN)
        return s_type(d, field, &o, "a bin");
    t->data = o.ptr;
    t->nbytes = o.len;
    return 0;
}

/* Checks a tensor whose "n", "dim", "dt" and bin were read. */
static int s_tensor_check(s_dec_t *d, const char *field, const com_proto_tensor_t *t) {
    if (t->n == 0 || t->dim == 0)
        return S_BAD(d, "\"%s\": empty tensor [%u, %u]", field, t->n, t->dim);
    if (t->n > d->lim->max_inputs)
        return S_BIG(d, "\"%s\": %u rows exceed the limit max_inputs = %u", field, t->n,
                     d->lim->max_inputs);
    if (t->dim > d->lim->max_dim)
        return S_BIG(d, "\"%s\": dim %u exceeds the limit max_dim = %u", field, t->dim,
                     d->lim->max_dim);
    uint64_t want = (uint64_t)t->n * t->dim; /* < 2^64: both are 32-bit */
    want = want > UINT64_MAX / 4 ? UINT64_MAX : want * com_proto_dtype_size(t->dtype);
    if (want != t->nbytes)
        return S_BAD(d, "\"%s\": %zu bytes, expected %u x %u x %zu = %llu", field, t->nbytes, t->n,
                     t->dim, com_proto_dtype_size(t->dtype), (unsigned long long)want);
    return 0;
}

static int s_open_map(s_dec_t *d, const char *field, uint32_t *pairs) {
    com_mpr_obj_t o;
    int rc = s_next(d, field, &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_MAP)
        return s_type(d, field, &o, "a map");
    *pairs = o.len;
    return 0;
}

static int s_usage(s_dec_t *d, com_proto_usage_t *u) {
    static const char *const keys[] = {"tok"};
    uint32_t pairs = 0;
    int rc = s_open_map(d, "use", &pairs);
    if (rc != 0)
        return rc;
    s_map_t mp = s_submap(keys, 1, pairs, "\"use\"");
    int k;
    while ((rc = s_map_next(d, &mp, &k)) > 0)
        if ((rc = s_u64(d, "use.tok", UINT64_MAX, &u->tokens)) != 0)
            return rc;
    return rc < 0 ? rc : s_map_require(d, &mp, 1u);
}

static int s_timings(s_dec_t *d, com_proto_timings_t *t) {
    static const char *const keys[] = {"tok", "queue", "comp", "total"};
    static const char *const names[] = {"tm.tok", "tm.queue", "tm.comp", "tm.total"};
    uint64_t *dst[] = {&t->tokenize_us, &t->queue_us, &t->compute_us, &t->total_us};
    uint32_t pairs = 0;
    int rc = s_open_map(d, "tm", &pairs);
    if (rc != 0)
        return rc;
    s_map_t mp = s_submap(keys, 4, pairs, "\"tm\"");
    int k;
    while ((rc = s_map_next(d, &mp, &k)) > 0)
        if ((rc = s_u64(d, names[k], UINT64_MAX, dst[k])) != 0)
            return rc;
    return rc < 0 ? rc : 0;
}

/* ---------------------------------------------------------------- writer */

typedef struct s_w {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    int rc;         /* sticky: first failure */
    size_t map_at;  /* offset of the top-level map32 header */
    uint32_t pairs; /* pairs written into the top-level map */
    com_error_t *err;
} s_w_t;

static int s_w_invalid(s_w_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_w_invalid(s_w_t *w, const char *fmt, ...) {
    if (w->rc == 0) {
        w->rc = COM_EINVAL;
        if (w->err) {
            va_list ap;
            va_start(ap, fmt);
            w->err->code = COM_EINVAL;
            vsnprintf(w->err->msg, sizeof w->err->msg, fmt, ap);
            va_end(ap);
        }
    }
    return w->rc;
}

static void s_w_chk(s_w_t *w, int prc) {
    if (prc != 0 && w->rc == 0)
        w->rc = com_error_set(w->err, COM_ENOMEM, "out of memory while encoding");
}

static void s_w_uint(s_w_t *w, uint64_t v) {
    if (w->rc == 0)
        s_w_chk(w, msgpack_pack_uint64(&w->pk, v));
}

static void s_w_bool(s_w_t *w, bool v) {
    if (w->rc == 0)
        s_w_chk(w, v ? msgpack_pack_true(&w->pk) : msgpack_pack_false(&w->pk));
}

static void s_w_raw_str(s_w_t *w, const char *p, size_t len) {
    if (w->rc == 0)
        s_w_chk(w, msgpack_pack_str_with_body(&w->pk, p, len));
}

static void s_w_lit(s_w_t *w, const char *s) {
    s_w_raw_str(w, s, strlen(s));
}

static void s_w_str(s_w_t *w, const char *field, com_proto_str_t s) {
    if (!s.ptr && s.len)
        s_w_invalid(w, "\"%s\": NULL string with length %u", field, s.len);
    s_w_raw_str(w, s.ptr ? s.ptr : "", s.len);
}

static void s_w_array(s_w_t *w, uint32_t n) {
    if (w->rc == 0)
        s_w_chk(w, msgpack_pack_array(&w->pk, n));
}

static void s_w_map(s_w_t *w, uint32_t n) {
    if (w->rc == 0)
        s_w_chk(w, msgpack_pack_map(&w->pk, n));
}

/* A key of the top-level map (counted for the header patched at the end). */
static void s_w_key(s_w_t *w, const char *k) {
    w->pairs++;
    s_w_lit(w, k);
}

static void s_w_kstr(s_w_t *w, const char *k, com_proto_str_t s) {
    s_w_key(w, k);
    s_w_str(w, k, s);
}

static void s_w_kopt_str(s_w_t *w, const char *k, com_proto_str_t s) {
    if (s.ptr)
        s_w_kstr(w, k, s);
    else if (s.len)
        s_w_invalid(w, "\"%s\": NULL string with length %u", k, s.len);
}

static void s_w_kuint(s_w_t *w, const char *k, uint64_t v) {
    s_w_key(w, k);
    s_w_uint(w, v);
}

static void s_w_kopt_uint(s_w_t *w, const char *k, uint64_t v) {
    if (v)
        s_w_kuint(w, k, v);
}

static void s_w_kopt_norm(s_w_t *w, const char *k, int32_t norm) {
    if (norm < -1 || norm > 1) {
        s_w_invalid(w, "\"%s\": normalize must be -1, 0 or 1, got %d", k, norm);
        return;
    }
    if (norm >= 0) {
        s_w_key(w, k);
        s_w_bool(w, norm == 1);
    }
}

static void s_w_kopt_trunc(s_w_t *w, bool truncate) {
    if (!truncate) {
        s_w_key(w, "trunc");
        s_w_bool(w, false);
    }
}

static void s_w_kopt_dtype(s_w_t *w, com_proto_dtype_t dt) {
    if (com_proto_dtype_size(dt) == 0) {
        s_w_invalid(w, "\"dt\": unknown dtype %d", (int)dt);
        return;
    }
    if (dt != COM_PROTO_F32) {
        s_w_key(w, "dt");
        s_w_lit(w, com_proto_dtype_name(dt));
    }
}

static void s_w_ids(s_w_t *w, const char *k, const com_proto_inputs_t *in, bool allow_empty) {
    if (in->kind != COM_PROTO_IN_IDS || !in->offs || (!in->ids && in->offs[in->n] != 0)) {
        s_w_invalid(w, "\"%s\": expected token-id inputs with ids and offs", k);
        return;
    }
    if (in->offs[0] != 0) {
        s_w_invalid(w, "\"%s\": offs[0] must be 0", k);
        return;
    }
    s_w_array(w, in->n);
    for (uint32_t i = 0; i < in->n && w->rc == 0; i++) {
        int32_t a = in->offs[i], b = in->offs[i + 1];
        if (b < a || (b == a && !allow_empty)) {
            s_w_invalid(w, "\"%s\"[%u]: offsets %d..%d", k, i, a, b);
            return;
        }
        s_w_array(w, (uint32_t)(b - a));
        for (int32_t j = a; j < b; j++) {
            if (in->ids[j] < 0) {
                s_w_invalid(w, "\"%s\"[%u]: negative token id %d", k, i, in->ids[j]);
                return;
            }
            s_w_uint(w, (uint64_t)in->ids[j]);
        }
    }
}

static void s_w_inputs(s_w_t *w, const char *k, const com_proto_inputs_t *in, unsigned kinds) {
    if (in->n == 0) {
        s_w_invalid(w, "\"%s\": no inputs", k);
        return;
    }
    s_w_key(w, k);
    if (in->kind == COM_PROTO_IN_IDS && (kinds & S_KIND_IDS)) {
        s_w_ids(w, k, in, false);
        return;
    }
    if (in->kind != COM_PROTO_IN_TEXT || !(kinds & S_KIND_TEXT) || !in->texts) {
        s_w_invalid(w, "\"%s\": input kind %d not allowed here", k, (int)in->kind);
        return;
    }
    s_w_array(w, in->n);
    for (uint32_t i = 0; i < in->n; i++)
        s_w_str(w, k, in->texts[i]);
}

static void s_w_u32_array(s_w_t *w, const char *k, const uint32_t *a, uint32_t n) {
    if (!a && n) {
        s_w_invalid(w, "\"%s\": NULL array of %u", k, n);
        return;
    }
    s_w_key(w, k);
    s_w_array(w, n);
    for (uint32_t i = 0; i < n; i++)
        s_w_uint(w, a[i]);
}

/* Writes "dt" (when not f32), "n", "dim" (unless no_dim) and the bin under bin_key. */
static void s_w_tensor(s_w_t *w, const char *bin_key, const com_proto_tensor_t *t, bool no_dim) {
    size_t es = com_proto_dtype_size(t->dtype);
    uint64_t want = (uint64_t)t->n * t->dim; /* < 2^64: both are 32-bit */
    want = want > UINT64_MAX / 4 ? UINT64_MAX : want * es;
    if (es == 0 || t->n == 0 || t->dim == 0 || want != t->nbytes || !t->data ||
        t->nbytes > UINT32_MAX) {
        s_w_invalid(w, "\"%s\": inconsistent tensor [%u, %u] %s with %zu bytes", bin_key, t->n,
                    t->dim, com_proto_dtype_name(t->dtype), t->nbytes);
        return;
    }
    s_w_kopt_dtype(w, t->dtype);
    s_w_kuint(w, "n", t->n);
    if (!no_dim)
        s_w_kuint(w, "dim", t->dim);
    s_w_key(w, bin_key);
    if (w->rc == 0)
        s_w_chk(w, msgpack_pack_bin_with_body(&w->pk, t->data, t->nbytes));
}

static void s_w_usage(s_w_t *w, const com_proto_usage_t *u) {
    s_w_key(w, "use");
    s_w_map(w, 1);
    s_w_lit(w, "tok");
    s_w_uint(w, u->tokens);
}

static void s_w_timings(s_w_t *w, const com_proto_timings_t *t) {
    s_w_key(w, "tm");
    s_w_map(w, 4);
    s_w_lit(w, "tok");
    s_w_uint(w, t->tokenize_us);
    s_w_lit(w, "queue");
    s_w_uint(w, t->queue_us);
    s_w_lit(w, "comp");
    s_w_uint(w, t->compute_us);
    s_w_lit(w, "total");
    s_w_uint(w, t->total_us);
}

/* ---------------------------------------------------------------- messages
 * Each message: s_enc_<type> writes the body keys; s_dec_<type> reads them. */

#define S_BITS(n)  ((n) >= 32 ? 0xffffffffu : ((1u << (n)) - 1u))
#define S_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* -- embed */
static const char *const s_embed_keys[] = {"in", "model", "norm", "dims", "dt", "trunc", "dl"};

static void s_enc_embed(s_w_t *w, const com_proto_embed_t *b) {
    s_w_inputs(w, "in", &b->in, S_KIND_TEXT | S_KIND_IDS);
    s_w_kopt_str(w, "model", b->model);
    s_w_kopt_norm(w, "norm", b->normalize);
    s_w_kopt_uint(w, "dims", b->dims);
    s_w_kopt_dtype(w, b->dtype);
    s_w_kopt_trunc(w, b->truncate);
    s_w_kopt_uint(w, "dl", b->deadline_ms);
}

static int s_dec_embed(s_dec_t *d, uint32_t pairs, com_proto_embed_t *b) {
    s_map_t mp = s_map(s_embed_keys, S_COUNT(s_embed_keys), pairs, "embed");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_inputs(d, "in", S_KIND_TEXT | S_KIND_IDS, false, &b->in);
            break;
        case 1:
            rc = s_name(d, "model", &b->model);
            break;
        case 2:
            rc = s_norm(d, "norm", &b->normalize);
            break;
        case 3:
            rc = s_u32_lim(d, "dims", d->lim->max_dim, "max_dim", &b->dims);
            break;
        case 4:
            rc = s_dtype(d, "dt", &b->dtype);
            break;
        case 5:
            rc = s_bool(d, "trunc", &b->truncate);
            break;
        default:
            rc = s_u32(d, "dl", &b->deadline_ms);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, 1u << 0);
}

/* -- score */
static const char *const s_score_keys[] = {"in", "model", "dt", "trunc", "dl"};

static void s_enc_score(s_w_t *w, const com_proto_score_t *b) {
    if (b->n == 0 || !b->pairs) {
        s_w_invalid(w, "\"in\": no pairs");
        return;
    }
    s_w_key(w, "in");
    s_w_array(w, b->n);
    for (uint32_t i = 0; i < b->n; i++) {
        s_w_array(w, 2);
        s_w_str(w, "in", b->pairs[2 * i]);
        s_w_str(w, "in", b->pairs[2 * i + 1]);
    }
    s_w_kopt_str(w, "model", b->model);
    s_w_kopt_dtype(w, b->dtype);
    s_w_kopt_trunc(w, b->truncate);
    s_w_kopt_uint(w, "dl", b->deadline_ms);
}

static int s_dec_pairs(s_dec_t *d, com_proto_score_t *b) {
    com_mpr_obj_t o;
    int rc = s_next(d, "in", &o);
    if (rc != 0)
        return rc;
    if (o.kind != COM_MPR_ARRAY)
        return s_type(d, "in", &o, "an array of [text, text] pairs");
    uint32_t n = o.len;
    if (n == 0)
        return S_BAD(d, "\"in\": no pairs");
    if (n > d->lim->max_inputs)
        return S_BIG(d, "\"in\": %u pairs exceed the limit max_inputs = %u", n, d->lim->max_inputs);
    b->pairs = s_alloc(d, (size_t)n * 2, sizeof *b->pairs, "in");
    if (!b->pairs)
        return d->err ? d->err->code : COM_ENOMEM;
    b->n = n;
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = s_next(d, "in", &o)) != 0)
            return rc;
        if (o.kind != COM_MPR_ARRAY || o.len != 2)
            return S_BAD(d, "\"in\"[%u]: expected a [text, text] pair, got %s of %u", i,
                         com_mpr_kind_name(o.kind), o.len);
        for (int j = 0; j < 2; j++) {
            if ((rc = s_next(d, "in", &o)) != 0)
                return rc;
            if (o.kind != COM_MPR_STR)
                return S_BAD(d, "\"in\"[%u][%d]: expected a string, got %s", i, j,
                             com_mpr_kind_name(o.kind));
            if (o.len > d->lim->max_text_bytes)
                return S_BIG(d, "\"in\"[%u][%d]: %u bytes exceed the limit max_text_bytes = %u", i,
                             j, o.len, d->lim->max_text_bytes);
            b->pairs[2 * i + (uint32_t)j].ptr = (const char *)o.ptr;
            b->pairs[2 * i + (uint32_t)j].len = o.len;
        }
    }
    return 0;
}

static int s_dec_score(s_dec_t *d, uint32_t pairs, com_proto_score_t *b) {
    s_map_t mp = s_map(s_score_keys, S_COUNT(s_score_keys), pairs, "score");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_dec_pairs(d, b);
            break;
        case 1:
            rc = s_name(d, "model", &b->model);
            break;
        case 2:
            rc = s_dtype(d, "dt", &b->dtype);
            break;
        case 3:
            rc = s_bool(d, "trunc", &b->truncate);
            break;
        default:
            rc = s_u32(d, "dl", &b->deadline_ms);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, 1u << 0);
}

/* -- tokenize */
static const char *const s_tokenize_keys[] = {"in", "model", "trunc", "dl"};

static void s_enc_tokenize(s_w_t *w, const com_proto_tokenize_t *b) {
    s_w_inputs(w, "in", &b->in, S_KIND_TEXT);
    s_w_kopt_str(w, "model", b->model);
    s_w_kopt_trunc(w, b->truncate);
    s_w_kopt_uint(w, "dl", b->deadline_ms);
}

static int s_dec_tokenize(s_dec_t *d, uint32_t pairs, com_proto_tokenize_t *b) {
    s_map_t mp = s_map(s_tokenize_keys, S_COUNT(s_tokenize_keys), pairs, "tokenize");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_inputs(d, "in", S_KIND_TEXT, false, &b->in);
            break;
        case 1:
            rc = s_name(d, "model", &b->model);
            break;
        case 2:
            rc = s_bool(d, "trunc", &b->truncate);
            break;
        default:
            rc = s_u32(d, "dl", &b->deadline_ms);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, 1u << 0);
}

/* -- info */
static const char *const s_info_keys[] = {"model"};

static void s_enc_info(s_w_t *w, const com_proto_info_t *b) {
    s_w_kopt_str(w, "model", b->model);
}

static int s_dec_info(s_dec_t *d, uint32_t pairs, com_proto_info_t *b) {
    s_map_t mp = s_map(s_info_keys, S_COUNT(s_info_keys), pairs, "info");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0)
        if ((rc = s_name(d, "model", &b->model)) != 0)
            return rc;
    return rc < 0 ? rc : 0;
}

/* -- embed_reply */
static const char *const s_embed_reply_keys[] = {"model", "dt",   "n",   "dim",
                                                 "emb",   "ntok", "use", "tm"};

static void s_enc_embed_reply(s_w_t *w, const com_proto_embed_reply_t *b) {
    s_w_kopt_str(w, "model", b->model);
    s_w_tensor(w, "emb", &b->emb, false);
    s_w_u32_array(w, "ntok", b->ntok, b->emb.n);
    s_w_usage(w, &b->usage);
    s_w_timings(w, &b->timing);
}

static int s_dec_embed_reply(s_dec_t *d, uint32_t pairs, com_proto_embed_reply_t *b) {
    s_map_t mp = s_map(s_embed_reply_keys, S_COUNT(s_embed_reply_keys), pairs, "embed_reply");
    uint32_t n_ntok = 0;
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_name(d, "model", &b->model);
            break;
        case 1:
            rc = s_dtype(d, "dt", &b->emb.dtype);
            break;
        case 2:
            rc = s_u32(d, "n", &b->emb.n);
            break;
        case 3:
            rc = s_u32(d, "dim", &b->emb.dim);
            break;
        case 4:
            rc = s_bin(d, "emb", &b->emb);
            break;
        case 5:
            rc = s_u32_array(d, "ntok", &b->ntok, &n_ntok);
            break;
        case 6:
            rc = s_usage(d, &b->usage);
            break;
        default:
            rc = s_timings(d, &b->timing);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (rc < 0 || (rc = s_map_require(d, &mp, S_BITS(8) & ~3u)) != 0)
        return rc;
    if ((rc = s_tensor_check(d, "emb", &b->emb)) != 0)
        return rc;
    if (n_ntok != b->emb.n)
        return S_BAD(d, "\"ntok\": %u entries for %u rows", n_ntok, b->emb.n);
    return 0;
}

/* -- score_reply */
static const char *const s_score_reply_keys[] = {"model", "dt", "n", "sc", "ntok", "use", "tm"};

static void s_enc_score_reply(s_w_t *w, const com_proto_score_reply_t *b) {
    s_w_kopt_str(w, "model", b->model);
    if (b->scores.dim != 1)
        s_w_invalid(w, "\"sc\": scores must have dim 1, got %u", b->scores.dim);
    s_w_tensor(w, "sc", &b->scores, true);
    s_w_u32_array(w, "ntok", b->ntok, b->scores.n);
    s_w_usage(w, &b->usage);
    s_w_timings(w, &b->timing);
}

static int s_dec_score_reply(s_dec_t *d, uint32_t pairs, com_proto_score_reply_t *b) {
    s_map_t mp = s_map(s_score_reply_keys, S_COUNT(s_score_reply_keys), pairs, "score_reply");
    uint32_t n_ntok = 0;
    int k, rc;
    b->scores.dim = 1;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_name(d, "model", &b->model);
            break;
        case 1:
            rc = s_dtype(d, "dt", &b->scores.dtype);
            break;
        case 2:
            rc = s_u32(d, "n", &b->scores.n);
            break;
        case 3:
            rc = s_bin(d, "sc", &b->scores);
            break;
        case 4:
            rc = s_u32_array(d, "ntok", &b->ntok, &n_ntok);
            break;
        case 5:
            rc = s_usage(d, &b->usage);
            break;
        default:
            rc = s_timings(d, &b->timing);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (rc < 0 || (rc = s_map_require(d, &mp, S_BITS(7) & ~3u)) != 0)
        return rc;
    if ((rc = s_tensor_check(d, "sc", &b->scores)) != 0)
        return rc;
    if (n_ntok != b->scores.n)
        return S_BAD(d, "\"ntok\": %u entries for %u scores", n_ntok, b->scores.n);
    return 0;
}

/* -- tokenize_reply */
static const char *const s_tokenize_reply_keys[] = {"model", "ids", "use", "tm"};

static void s_enc_tokenize_reply(s_w_t *w, const com_proto_tokenize_reply_t *b) {
    s_w_kopt_str(w, "model", b->model);
    if (b->ids.n == 0) {
        s_w_invalid(w, "\"ids\": no inputs");
        return;
    }
    s_w_key(w, "ids");
    s_w_ids(w, "ids", &b->ids, true);
    s_w_usage(w, &b->usage);
    s_w_timings(w, &b->timing);
}

static int s_dec_tokenize_reply(s_dec_t *d, uint32_t pairs, com_proto_tokenize_reply_t *b) {
    s_map_t mp =
        s_map(s_tokenize_reply_keys, S_COUNT(s_tokenize_reply_keys), pairs, "tokenize_reply");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_name(d, "model", &b->model);
            break;
        case 1:
            rc = s_inputs(d, "ids", S_KIND_IDS, true, &b->ids);
            break;
        case 2:
            rc = s_usage(d, &b->usage);
            break;
        default:
            rc = s_timings(d, &b->timing);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, S_BITS(4) & ~1u);
}

/* -- info_reply */
static const char *const s_info_reply_keys[] = {"ok",  "nwk", "model", "fam", "ver",
                                                "dim", "msl", "load",  "use", "tm"};

static void s_enc_info_reply(s_w_t *w, const com_proto_info_reply_t *b) {
    s_w_key(w, "ok");
    s_w_bool(w, b->ok);
    s_w_kuint(w, "nwk", b->workers);
    s_w_kopt_str(w, "model", b->model);
    s_w_kopt_str(w, "fam", b->family);
    s_w_kopt_str(w, "ver", b->version);
    s_w_kopt_uint(w, "dim", b->dim);
    s_w_kopt_uint(w, "msl", b->max_seq);
    s_w_kopt_uint(w, "load", b->load_tokens);
    s_w_usage(w, &b->usage);
    s_w_timings(w, &b->timing);
}

static int s_dec_info_reply(s_dec_t *d, uint32_t pairs, com_proto_info_reply_t *b) {
    s_map_t mp = s_map(s_info_reply_keys, S_COUNT(s_info_reply_keys), pairs, "info_reply");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_bool(d, "ok", &b->ok);
            break;
        case 1:
            rc = s_u32(d, "nwk", &b->workers);
            break;
        case 2:
            rc = s_name(d, "model", &b->model);
            break;
        case 3:
            rc = s_name(d, "fam", &b->family);
            break;
        case 4:
            rc = s_name(d, "ver", &b->version);
            break;
        case 5:
            rc = s_u32(d, "dim", &b->dim);
            break;
        case 6:
            rc = s_u32(d, "msl", &b->max_seq);
            break;
        case 7:
            rc = s_u64(d, "load", UINT64_MAX, &b->load_tokens);
            break;
        case 8:
            rc = s_usage(d, &b->usage);
            break;
        default:
            rc = s_timings(d, &b->timing);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, 3u);
}

/* -- error */
static const char *const s_error_keys[] = {"code", "msg", "use", "tm"};

static void s_enc_error(s_w_t *w, const com_proto_error_msg_t *b) {
    s_w_kuint(w, "code", b->code);
    s_w_kstr(w, "msg", b->msg);
    s_w_usage(w, &b->usage);
    s_w_timings(w, &b->timing);
}

static int s_dec_error(s_dec_t *d, uint32_t pairs, com_proto_error_msg_t *b) {
    s_map_t mp = s_map(s_error_keys, S_COUNT(s_error_keys), pairs, "error");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_u32(d, "code", &b->code);
            break;
        case 1:
            rc = s_name(d, "msg", &b->msg);
            break;
        case 2:
            rc = s_usage(d, &b->usage);
            break;
        default:
            rc = s_timings(d, &b->timing);
            break;
        }
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, 3u);
}

/* -- ready */
static const char *const s_ready_keys[] = {"wid", "model", "fam",  "dev", "mbt",
                                           "dim", "msl",   "cred", "task"};

static void s_enc_ready(s_w_t *w, const com_proto_ready_t *b) {
    if (b->max_batch_tokens == 0 || b->dim == 0 || b->max_seq == 0)
        s_w_invalid(w, "ready: mbt, dim and msl must be >= 1");
    s_w_kstr(w, "wid", b->worker_id);
    s_w_kstr(w, "model", b->model);
    s_w_kstr(w, "fam", b->family);
    s_w_kstr(w, "dev", b->device);
    s_w_kuint(w, "mbt", b->max_batch_tokens);
    s_w_kuint(w, "dim", b->dim);
    s_w_kuint(w, "msl", b->max_seq);
    s_w_kuint(w, "cred", b->credits);
    if (b->task != COM_PROTO_TASK_EMBED) {
        if (b->task != COM_PROTO_TASK_SCORE)
            s_w_invalid(w, "\"task\": unknown task %d", (int)b->task);
        s_w_key(w, "task");
        s_w_lit(w, s_task_name(b->task));
    }
}

static int s_dec_ready(s_dec_t *d, uint32_t pairs, com_proto_ready_t *b) {
    s_map_t mp = s_map(s_ready_keys, S_COUNT(s_ready_keys), pairs, "ready");
    com_proto_str_t *strs[] = {&b->worker_id, &b->model, &b->family, &b->device};
    uint32_t *nums[] = {&b->max_batch_tokens, &b->dim, &b->max_seq, &b->credits};
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        if (k < 4)
            rc = s_name(d, s_ready_keys[k], strs[k]);
        else if (k == 5)
            rc = s_u32_lim(d, "dim", d->lim->max_dim, "max_dim", &b->dim);
        else if (k < 8)
            rc = s_u32(d, s_ready_keys[k], nums[k - 4]);
        else
            rc = s_task(d, "task", &b->task);
        if (rc != 0)
            return rc;
    }
    if (rc < 0 || (rc = s_map_require(d, &mp, S_BITS(8))) != 0)
        return rc;
    if (b->max_batch_tokens == 0 || b->dim == 0 || b->max_seq == 0)
        return S_BAD(d, "ready: \"mbt\", \"dim\" and \"msl\" must be >= 1");
    return 0;
}

/* -- chunk */
static const char *const s_chunk_keys[] = {"cid", "att", "in", "seg", "norm", "dims", "dt", "dl"};

static void s_enc_chunk(s_w_t *w, const com_proto_chunk_t *b) {
    s_w_kuint(w, "cid", b->chunk_id);
    s_w_kuint(w, "att", b->attempt);
    s_w_inputs(w, "in", &b->in, S_KIND_IDS);
    if (b->seg && w->rc == 0) {
        for (uint32_t i = 0; i < b->in.n; i++)
            if (b->seg[i] > (uint32_t)(b->in.offs[i + 1] - b->in.offs[i]))
                s_w_invalid(w, "\"seg\"[%u]: %u is longer than the sequence", i, b->seg[i]);
        s_w_u32_array(w, "seg", b->seg, b->in.n);
    }
    s_w_kopt_norm(w, "norm", b->normalize);
    s_w_kopt_uint(w, "dims", b->dims);
    s_w_kopt_dtype(w, b->dtype);
    s_w_kopt_uint(w, "dl", b->deadline_ms);
}

static int s_dec_chunk(s_dec_t *d, uint32_t pairs, com_proto_chunk_t *b) {
    s_map_t mp = s_map(s_chunk_keys, S_COUNT(s_chunk_keys), pairs, "chunk");
    uint32_t n_seg = 0;
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_u32(d, "cid", &b->chunk_id);
            break;
        case 1:
            rc = s_u32(d, "att", &b->attempt);
            break;
        case 2:
            rc = s_inputs(d, "in", S_KIND_IDS, false, &b->in);
            break;
        case 3:
            rc = s_u32_array(d, "seg", &b->seg, &n_seg);
            break;
        case 4:
            rc = s_norm(d, "norm", &b->normalize);
            break;
        case 5:
            rc = s_u32_lim(d, "dims", d->lim->max_dim, "max_dim", &b->dims);
            break;
        case 6:
            rc = s_dtype(d, "dt", &b->dtype);
            break;
        default:
            rc = s_u32(d, "dl", &b->deadline_ms);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (rc < 0 || (rc = s_map_require(d, &mp, 7u)) != 0)
        return rc;
    if (b->seg) {
        if (n_seg != b->in.n)
            return S_BAD(d, "\"seg\": %u entries for %u sequences", n_seg, b->in.n);
        for (uint32_t i = 0; i < n_seg; i++)
            if (b->seg[i] > (uint32_t)(b->in.offs[i + 1] - b->in.offs[i]))
                return S_BAD(d, "\"seg\"[%u]: %u is longer than the sequence (%d tokens)", i,
                             b->seg[i], b->in.offs[i + 1] - b->in.offs[i]);
    }
    return 0;
}

/* -- result */
static const char *const s_result_keys[] = {"cid", "att", "dt", "n", "dim", "emb", "err", "tm"};
static const char *const s_err_keys[] = {"code", "msg"};

static void s_enc_result(s_w_t *w, const com_proto_result_t *b) {
    s_w_kuint(w, "cid", b->chunk_id);
    s_w_kuint(w, "att", b->attempt);
    if (b->failed) {
        s_w_key(w, "err");
        s_w_map(w, 2);
        s_w_lit(w, "code");
        s_w_uint(w, b->err_code);
        s_w_lit(w, "msg");
        s_w_str(w, "err.msg", b->err_msg);
    } else {
        s_w_tensor(w, "emb", &b->emb, false);
    }
    s_w_timings(w, &b->timing);
}

static int s_dec_result_err(s_dec_t *d, com_proto_result_t *b) {
    uint32_t pairs = 0;
    int rc = s_open_map(d, "err", &pairs);
    if (rc != 0)
        return rc;
    s_map_t mp = s_submap(s_err_keys, 2, pairs, "\"err\"");
    int k;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        rc = k == 0 ? s_u32(d, "err.code", &b->err_code) : s_name(d, "err.msg", &b->err_msg);
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : s_map_require(d, &mp, 3u);
}

static int s_dec_result(s_dec_t *d, uint32_t pairs, com_proto_result_t *b) {
    s_map_t mp = s_map(s_result_keys, S_COUNT(s_result_keys), pairs, "result");
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        switch (k) {
        case 0:
            rc = s_u32(d, "cid", &b->chunk_id);
            break;
        case 1:
            rc = s_u32(d, "att", &b->attempt);
            break;
        case 2:
            rc = s_dtype(d, "dt", &b->emb.dtype);
            break;
        case 3:
            rc = s_u32(d, "n", &b->emb.n);
            break;
        case 4:
            rc = s_u32(d, "dim", &b->emb.dim);
            break;
        case 5:
            rc = s_bin(d, "emb", &b->emb);
            break;
        case 6:
            rc = s_dec_result_err(d, b);
            break;
        default:
            rc = s_timings(d, &b->timing);
            break;
        }
        if (rc != 0)
            return rc;
    }
    if (rc < 0 || (rc = s_map_require(d, &mp, 3u)) != 0)
        return rc;
    const uint32_t tensor_keys = (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5);
    if (mp.present & (1u << 6)) {
        if (mp.present & tensor_keys)
            return S_BAD(d, "result: both \"err\" and a tensor");
        b->failed = true;
        return 0;
    }
    if ((rc = s_map_require(d, &mp, tensor_keys & ~(1u << 2))) != 0)
        return rc;
    return s_tensor_check(d, "emb", &b->emb);
}

/* -- hb */
static const char *const s_hb_keys[] = {"ltok", "lseq", "done", "cred"};

static void s_enc_heartbeat(s_w_t *w, const com_proto_heartbeat_t *b) {
    s_w_kopt_uint(w, "ltok", b->load_tokens);
    s_w_kopt_uint(w, "lseq", b->load_seqs);
    s_w_kopt_uint(w, "done", b->batches_done);
    s_w_kopt_uint(w, "cred", b->credits);
}

static int s_dec_heartbeat(s_dec_t *d, uint32_t pairs, com_proto_heartbeat_t *b) {
    s_map_t mp = s_map(s_hb_keys, S_COUNT(s_hb_keys), pairs, "hb");
    uint64_t *dst[] = {&b->load_tokens, &b->load_seqs, &b->batches_done};
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        rc = k < 3 ? s_u64(d, s_hb_keys[k], UINT64_MAX, dst[k]) : s_u32(d, "cred", &b->credits);
        if (rc != 0)
            return rc;
    }
    return rc < 0 ? rc : 0;
}

/* -- drain, disconnect */
static const char *const s_notice_keys[] = {"why"};

static void s_enc_notice(s_w_t *w, const com_proto_notice_t *b) {
    s_w_kopt_str(w, "why", b->reason);
}

static int s_dec_notice(s_dec_t *d, uint32_t pairs, com_proto_notice_t *b, const char *where) {
    s_map_t mp = s_map(s_notice_keys, 1, pairs, where);
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0)
        if ((rc = s_name(d, "why", &b->reason)) != 0)
            return rc;
    return rc < 0 ? rc : 0;
}

/* ---------------------------------------------------------------- decode dispatch */

static int s_limits_check(const com_proto_limits_t *lim, com_proto_msg_t *m, com_error_t *err) {
    if (lim->max_depth < 3 || lim->max_depth > COM_MPR_DEPTH_CAP ||
        lim->max_total_tokens > INT32_MAX || lim->max_msg_bytes == 0) {
        m->perr = COM_PROTO_INTERNAL;
        return com_error_set(err, COM_EINVAL,
                             "protocol limits out of range (max_depth %u in [3, %d], "
                             "max_total_tokens %u <= INT32_MAX, max_msg_bytes > 0)",
                             lim->max_depth, COM_MPR_DEPTH_CAP, lim->max_total_tokens);
    }
    return 0;
}

/* Reads "v", "t" and "id" from the top-level map (cursor just after its header). */
static int s_header(s_dec_t *d, uint32_t pairs) {
    static const char *const keys[] = {"v", "t", "id"};
    s_map_t mp = s_map(keys, 3, pairs, "the message");
    com_mpr_obj_t vals[3];
    memset(vals, 0, sizeof vals);
    int k, rc;
    while ((rc = s_map_next(d, &mp, &k)) > 0) {
        com_mpr_t at = d->r;
        if ((rc = s_next(d, keys[k], &vals[k])) != 0)
            return rc;
        if (vals[k].kind == COM_MPR_ARRAY || vals[k].kind == COM_MPR_MAP) {
            d->r = at; /* step over the whole container; the type error comes below */
            if ((rc = s_skip(d, keys[k], d->lim->max_depth - 1)) != 0)
                return rc;
        }
    }
    if (rc < 0)
        return rc;
    com_proto_msg_t *m = d->m;
    if (vals[2].kind == COM_MPR_UINT) { /* the id first, so that any error can be answered */
        m->id = vals[2].v.u;
        m->has_id = true;
    }
    /* The version next: a message of another major version may differ in anything else. */
    if ((mp.present & 1u) && vals[0].kind != COM_MPR_UINT)
        return s_type(d, "v", &vals[0], "an unsigned integer");
    if (mp.present & 1u) {
        m->version = vals[0].v.u > UINT32_MAX ? UINT32_MAX : (uint32_t)vals[0].v.u;
        if (vals[0].v.u != COM_PROTO_VERSION)
            return s_fail(d, COM_PROTO_UNSUPPORTED_VERSION, COM_EUNSUPPORTED,
                          "protocol version %llu is not supported (this side speaks %d)",
                          (unsigned long long)vals[0].v.u, COM_PROTO_VERSION);
    }
    if ((rc = s_map_require(d, &mp, 7u)) != 0)
        return rc;
    if (vals[2].kind != COM_MPR_UINT)
        return s_type(d, "id", &vals[2], "an unsigned integer");
    if (vals[1].kind != COM_MPR_STR)
        return s_type(d, "t", &vals[1], "a string");
    com_proto_str_t t = {(const char *)vals[1].ptr, vals[1].len};
    for (int i = 1; i < COM_PROTO_TYPE_COUNT; i++)
        if (s_streq(t, com_proto_type_name((com_proto_type_t)i))) {
            m->type = (com_proto_type_t)i;
            return 0;
        }
    return S_BAD(d, "unknown message type \"%.*s\"", (int)(t.len > 32 ? 32 : t.len), t.ptr);
}

/* The fast path's header: the encoder writes "v", "t" and "id" as the first three keys. Reads
 * them when they are exactly that, in any order, with valid values (this version, a known type,
 * an unsigned id), and returns true with the cursor after them; false otherwise, reporting
 * nothing (the strict path then decides). */
static bool s_header_fast(s_dec_t *d, uint32_t pairs) {
    if (pairs < 3)
        return false;
    com_proto_msg_t *m = d->m;
    unsigned seen = 0;
    for (int i = 0; i < 3; i++) {
        com_mpr_obj_t k, v;
        if (com_mpr_next(&d->r, &k, NULL) != 0 || com_mpr_next(&d->r, &v, NULL) != 0)
            return false;
        int which = s_header_key(&k);
        if (which < 0 || (seen & (1u << which)))
            return false;
        seen |= 1u << which;
        if (which == 1) {
            if (v.kind != COM_MPR_STR)
                return false;
            com_proto_str_t t = {(const char *)v.ptr, v.len};
            for (int ty = 1; ty < COM_PROTO_TYPE_COUNT && !m->type; ty++)
                if (s_streq(t, com_proto_type_name((com_proto_type_t)ty)))
                    m->type = (com_proto_type_t)ty;
            if (!m->type)
                return false;
        } else if (v.kind != COM_MPR_UINT) {
            return false;
        } else if (which == 0) {
            if (v.v.u != COM_PROTO_VERSION)
                return false;
            m->version = COM_PROTO_VERSION;
        } else {
            m->id = v.v.u;
            m->has_id = true;
        }
    }
    return true;
}

/* After the structural check failed: reads the top-level map's pairs in order, as far as they
 * are well formed, and takes "id" if it comes before the damage, so the error reply can still
 * be addressed. Reads nothing past the buffer (the bounded reader checks every length). */
static void s_salvage_id(const void *buf, size_t len, com_proto_msg_t *m) {
    com_mpr_t r;
    com_mpr_obj_t top, key, val;
    com_mpr_init(&r, buf, len);
    if (com_mpr_next(&r, &top, NULL) != 0 || top.kind != COM_MPR_MAP)
        return;
    for (uint32_t i = 0; i < top.len; i++) {
        if (com_mpr_next(&r, &key, NULL) != 0)
            return;
        if (key.kind == COM_MPR_STR && key.len == 2 && memcmp(key.ptr, "id", 2) == 0) {
            if (com_mpr_next(&r, &val, NULL) == 0 && val.kind == COM_MPR_UINT) {
                m->id = val.v.u;
                m->has_id = true;
            }
            return;
        }
        if (key.kind == COM_MPR_ARRAY || key.kind == COM_MPR_MAP)
            return; /* container keys are not worth walking into */
        if (com_mpr_skip(&r, COM_MPR_DEPTH_CAP, NULL) != 0)
            return;
    }
}

/* Decodes the body of a message of type d->m->type: the top-level map's pairs (those left
 * after the header on the fast path; all of them, header included, on the strict path). */
static int s_dec_body(s_dec_t *d, uint32_t n) {
    com_proto_msg_t *m = d->m;
    switch (m->type) {
    case COM_PROTO_EMBED:
        m->u.embed.normalize = -1;
        m->u.embed.truncate = true;
        return s_dec_embed(d, n, &m->u.embed);
    case COM_PROTO_SCORE:
        m->u.score.truncate = true;
        return s_dec_score(d, n, &m->u.score);
    case COM_PROTO_TOKENIZE:
        m->u.tokenize.truncate = true;
        return s_dec_tokenize(d, n, &m->u.tokenize);
    case COM_PROTO_INFO:
        return s_dec_info(d, n, &m->u.info);
    case COM_PROTO_EMBED_REPLY:
        return s_dec_embed_reply(d, n, &m->u.embed_reply);
    case COM_PROTO_SCORE_REPLY:
        return s_dec_score_reply(d, n, &m->u.score_reply);
    case COM_PROTO_TOKENIZE_REPLY:
        return s_dec_tokenize_reply(d, n, &m->u.tokenize_reply);
    case COM_PROTO_INFO_REPLY:
        return s_dec_info_reply(d, n, &m->u.info_reply);
    case COM_PROTO_ERROR:
        return s_dec_error(d, n, &m->u.error);
    case COM_PROTO_READY:
        return s_dec_ready(d, n, &m->u.ready);
    case COM_PROTO_CHUNK:
        m->u.chunk.normalize = -1;
        return s_dec_chunk(d, n, &m->u.chunk);
    case COM_PROTO_RESULT:
        return s_dec_result(d, n, &m->u.result);
    case COM_PROTO_HEARTBEAT:
        return s_dec_heartbeat(d, n, &m->u.hb);
    case COM_PROTO_DRAIN:
        return s_dec_notice(d, n, &m->u.drain, "drain");
    case COM_PROTO_DISCONNECT:
        return s_dec_notice(d, n, &m->u.disconnect, "disconnect");
    default:
        return s_fail(d, COM_PROTO_INTERNAL, COM_EINTERNAL, "no decoder for type %d", (int)m->type);
    }
}

int com_proto_decode(const void *buf, size_t len, const com_proto_limits_t *lim,
                     com_proto_msg_t *out, com_error_t *err) {
    com_proto_limits_t defaults;
    if (!lim) {
        com_proto_limits_default(&defaults);
        lim = &defaults;
    }
    memset(out, 0, sizeof *out);
    s_dec_t d = {.lim = lim, .m = out, .err = err};
    int rc = s_limits_check(lim, out, err);
    if (rc != 0)
        return rc;
    if (len > lim->max_msg_bytes)
        return S_BIG(&d, "message of %zu bytes exceeds the limit max_msg_bytes = %zu", len,
                     lim->max_msg_bytes);
    if (len == 0 || !buf)
        return S_BAD(&d, "empty message");
    /* Fast path, one walk: the header in front (as the encoder writes it), then the body read
     * field by field with the same checks as below, every skipped value within max_depth, and
     * no bytes after the map; so it succeeds only where the strict path succeeds, with the same
     * result. Any failure, or a header elsewhere, goes to the strict path, which reports. */
    com_mpr_obj_t top;
    d.err = NULL;
    d.fast = true;
    com_mpr_init(&d.r, buf, len);
    if (com_mpr_next(&d.r, &top, NULL) == 0 && top.kind == COM_MPR_MAP &&
        s_header_fast(&d, top.len) && s_dec_body(&d, top.len - 3) == 0 &&
        com_mpr_remaining(&d.r) == 0) {
        out->perr = COM_PROTO_OK;
        return 0;
    }
    com_proto_msg_free(out); /* frees what the fast path allocated; zeroes */
    d.err = err;
    d.fast = false;
    /* Strict path: structure first, then the whole header, then the body. */
    rc = com_mpr_check(buf, len, lim->max_depth, err);
    if (rc != 0)
        s_salvage_id(buf, len, out);
    if (rc == COM_ETOOLONG)
        return S_BIG(&d, "nesting deeper than the limit max_depth = %u", lim->max_depth);
    if (rc != 0) {
        out->perr = COM_PROTO_BAD_REQUEST;
        return com_error_prefix(err, rc, "malformed message");
    }
    com_mpr_init(&d.r, buf, len);
    if ((rc = s_next(&d, "message", &top)) != 0)
        return rc;
    if (top.kind != COM_MPR_MAP)
        return S_BAD(&d, "a message must be a map, got %s", com_mpr_kind_name(top.kind));
    com_mpr_t body = d.r;
    if ((rc = s_header(&d, top.len)) != 0)
        goto fail;
    d.r = body;
    if ((rc = s_dec_body(&d, top.len)) == 0) {
        out->perr = COM_PROTO_OK;
        return 0;
    }
fail:;
    /* Keep the header so that the failure can be answered; drop the body and its arrays. */
    com_proto_msg_t keep = {.type = out->type,
                            .version = out->version,
                            .id = out->id,
                            .has_id = out->has_id,
                            .perr = out->perr ? out->perr : COM_PROTO_BAD_REQUEST};
    com_proto_msg_free(out);
    *out = keep;
    return rc;
}

/* ---------------------------------------------------------------- encode dispatch */

int com_proto_encode(const com_proto_msg_t *m, com_proto_buf_t *out, com_error_t *err) {
    out->data = NULL;
    out->len = 0;
    if (m->type <= COM_PROTO_NONE || m->type >= COM_PROTO_TYPE_COUNT)
        return com_error_set(err, COM_EINVAL, "cannot encode message type %d", (int)m->type);
    s_w_t w = {.err = err};
    msgpack_sbuffer_init(&w.sb);
    msgpack_packer_init(&w.pk, &w.sb, msgpack_sbuffer_write);
    /* The top-level map is a map32 whose count is patched at the end. */
    static const char map32[5] = {(char)0xdf, 0, 0, 0, 0};
    s_w_chk(&w, msgpack_sbuffer_write(&w.sb, map32, sizeof map32));
    s_w_kuint(&w, "v", m->version ? m->version : COM_PROTO_VERSION);
    s_w_key(&w, "t");
    s_w_lit(&w, com_proto_type_name(m->type));
    s_w_kuint(&w, "id", m->id);
    switch (m->type) {
    case COM_PROTO_EMBED:
        s_enc_embed(&w, &m->u.embed);
        break;
    case COM_PROTO_SCORE:
        s_enc_score(&w, &m->u.score);
        break;
    case COM_PROTO_TOKENIZE:
        s_enc_tokenize(&w, &m->u.tokenize);
        break;
    case COM_PROTO_INFO:
        s_enc_info(&w, &m->u.info);
        break;
    case COM_PROTO_EMBED_REPLY:
        s_enc_embed_reply(&w, &m->u.embed_reply);
        break;
    case COM_PROTO_SCORE_REPLY:
        s_enc_score_reply(&w, &m->u.score_reply);
        break;
    case COM_PROTO_TOKENIZE_REPLY:
        s_enc_tokenize_reply(&w, &m->u.tokenize_reply);
        break;
    case COM_PROTO_INFO_REPLY:
        s_enc_info_reply(&w, &m->u.info_reply);
        break;
    case COM_PROTO_ERROR:
        s_enc_error(&w, &m->u.error);
        break;
    case COM_PROTO_READY:
        s_enc_ready(&w, &m->u.ready);
        break;
    case COM_PROTO_CHUNK:
        s_enc_chunk(&w, &m->u.chunk);
        break;
    case COM_PROTO_RESULT:
        s_enc_result(&w, &m->u.result);
        break;
    case COM_PROTO_HEARTBEAT:
        s_enc_heartbeat(&w, &m->u.hb);
        break;
    case COM_PROTO_DRAIN:
        s_enc_notice(&w, &m->u.drain);
        break;
    default:
        s_enc_notice(&w, &m->u.disconnect);
        break;
    }
    if (w.rc != 0) {
        msgpack_sbuffer_destroy(&w.sb);
        return w.rc;
    }
    uint8_t *p = (uint8_t *)w.sb.data;
    p[1] = (uint8_t)(w.pairs >> 24);
    p[2] = (uint8_t)(w.pairs >> 16);
    p[3] = (uint8_t)(w.pairs >> 8);
    p[4] = (uint8_t)w.pairs;
    out->len = w.sb.size;
    out->data = (uint8_t *)msgpack_sbuffer_release(&w.sb);
    return 0;
}

#define S_TYPED_ENCODER(fn, TYPE, member, body_t)                                                  \
    int fn(uint64_t id, const body_t *b, com_proto_buf_t *out, com_error_t *err) {                 \
        com_proto_msg_t m;                                                                         \
        com_proto_msg_init(&m, TYPE, id);                                                          \
        m.u.member = *b;                                                                           \
        return com_proto_encode(&m, out, err);                                                     \
    }

S_TYPED_ENCODER(com_proto_encode_embed, COM_PROTO_EMBED, embed, com_proto_embed_t)
S_TYPED_ENCODER(com_proto_encode_score, COM_PROTO_SCORE, score, com_proto_score_t)
S_TYPED_ENCODER(com_proto_encode_tokenize, COM_PROTO_TOKENIZE, tokenize, com_proto_tokenize_t)
S_TYPED_ENCODER(com_proto_encode_info, COM_PROTO_INFO, info, com_proto_info_t)
S_TYPED_ENCODER(com_proto_encode_embed_reply, COM_PROTO_EMBED_REPLY, embed_reply,
                com_proto_embed_reply_t)
S_TYPED_ENCODER(com_proto_encode_score_reply, COM_PROTO_SCORE_REPLY, score_reply,
                com_proto_score_reply_t)
S_TYPED_ENCODER(com_proto_encode_tokenize_reply, COM_PROTO_TOKENIZE_REPLY, tokenize_reply,
                com_proto_tokenize_reply_t)
S_TYPED_ENCODER(com_proto_encode_info_reply, COM_PROTO_INFO_REPLY, info_reply,
                com_proto_info_reply_t)
S_TYPED_ENCODER(com_proto_encode_error, COM_PROTO_ERROR, error, com_proto_error_msg_t)
S_TYPED_ENCODER(com_proto_encode_ready, COM_PROTO_READY, ready, com_proto_ready_t)
S_TYPED_ENCODER(com_proto_encode_chunk, COM_PROTO_CHUNK, chunk, com_proto_chunk_t)
S_TYPED_ENCODER(com_proto_encode_result, COM_PROTO_RESULT, result, com_proto_result_t)
S_TYPED_ENCODER(com_proto_encode_heartbeat, COM_PROTO_HEARTBEAT, hb, com_proto_heartbeat_t)
S_TYPED_ENCODER(com_proto_encode_drain, COM_PROTO_DRAIN, drain, com_proto_notice_t)
S_TYPED_ENCODER(com_proto_encode_disconnect, COM_PROTO_DISCONNECT, disconnect, com_proto_notice_t)

int com_proto_reply_error(uint64_t id, com_proto_code_t code, com_proto_buf_t *out,
                          com_error_t *err, const char *fmt, ...) {
    char text[COM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        text[0] = '\0';
    com_proto_error_msg_t e = {.code = (uint32_t)code};
    e.msg.ptr = text;
    e.msg.len = (uint32_t)strlen(text);
    return com_proto_encode_error(id, &e, out, err);
}
