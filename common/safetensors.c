/* common/safetensors.c — see safetensors.h. Reads and validates a .safetensors file.
 *
 * Layout: u64 LE header length N, N bytes of JSON, then the data section. Validation happens in
 * s_parse_header() before the object is returned:
 *   - 2 <= N <= min(size - 8, 100 MiB); the header holds no raw NUL and is a JSON object;
 *   - "__metadata__" (optional) is an object of strings and is skipped;
 *   - every other entry is {"dtype": F64|F32|F16|BF16|I64|I32|I16|I8|U8|BOOL, "shape": at most 8
 *     integers >= 0, "data_offsets": [begin, end]} with begin <= end <= data size and
 *     end - begin == numel * dtype size (the product checked for overflow in shape order);
 *   - names are non-empty, hold no NUL and are unique (jansson rejects duplicate keys);
 *   - no two non-empty ranges overlap. Gaps between ranges are allowed (the reference writer
 *     leaves none, but they cannot cause an out-of-bounds read).
 * A dtype string outside the list (U16, F8_E4M3, typos) is COM_EUNSUPPORTED at open, naming the
 * tensor: its byte size could not be checked otherwise. Every other violation is COM_EFORMAT
 * naming the tensor and field.
 *
 * Invariants after open: tensors[] is sorted by name (strcmp) for binary search; every
 * tensors[i].data + nbytes lies inside the buffer; names live in one block owned by the object.
 * Thread-safety: the object is immutable after open; concurrent readers are fine. */
#include "common/safetensors.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/half.h"
#include "common/json.h"

#define S_MAX_HEADER ((uint64_t)100 << 20) /* bytes of JSON we accept */

/* JSON integers (long long) that are >= 0 fit in size_t. */
_Static_assert(SIZE_MAX >= LLONG_MAX, "64-bit size_t expected");

struct com_safetensors {
    com_file_map_t map;       /* zeroed for open_buffer */
    const unsigned char *buf; /* [len] bytes: the whole file, read-only */
    size_t len;
    size_t n;              /* number of tensors */
    com_tensor_t *tensors; /* [n], sorted by name */
    char *names;           /* all names, NUL-separated, owned */
};

static const struct {
    const char *name;
    com_dtype_t dt;
    size_t size;
} s_dtypes[] = {
    {"F32", COM_DTYPE_F32, 4},   {"F16", COM_DTYPE_F16, 2}, {"BF16", COM_DTYPE_BF16, 2},
    {"F64", COM_DTYPE_F64, 8},   {"I64", COM_DTYPE_I64, 8}, {"I32", COM_DTYPE_I32, 4},
    {"I16", COM_DTYPE_I16, 2},   {"I8", COM_DTYPE_I8, 1},   {"U8", COM_DTYPE_U8, 1},
    {"BOOL", COM_DTYPE_BOOL, 1},
};
#define S_N_DTYPES (sizeof s_dtypes / sizeof s_dtypes[0])

const char *com_dtype_name(com_dtype_t dt) {
    for (size_t i = 0; i < S_N_DTYPES; i++)
        if (s_dtypes[i].dt == dt)
            return s_dtypes[i].name;
    return "?";
}

size_t com_dtype_size(com_dtype_t dt) {
    for (size_t i = 0; i < S_N_DTYPES; i++)
        if (s_dtypes[i].dt == dt)
            return s_dtypes[i].size;
    return 0;
}

size_t com_tensor_numel(const com_tensor_t *t) {
    size_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++)
        n *= (size_t)t->shape[i]; /* cannot overflow: checked at open */
    return n;
}

/* Sort keys. */
static int s_cmp_name(const void *a, const void *b) {
    return strcmp(((const com_tensor_t *)a)->name, ((const com_tensor_t *)b)->name);
}

typedef struct s_range {
    size_t begin, end;
    size_t idx; /* into the pre-sort entry list, for messages */
} s_range_t;

static int s_cmp_range(const void *a, const void *b) {
    const s_range_t *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* Prints a name that may be long or hold odd bytes into out[cap >= 8] for messages. */
static void s_printable(char *out, size_t cap, const char *name, size_t len) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (o + 8 > cap) {
            memcpy(out + o, "...", 4);
            return;
        }
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

static int s_check_metadata(const json_t *meta, com_error_t *err) {
    if (!json_is_object(meta))
        return com_error_set(err, COM_EFORMAT, "\"__metadata__\" must be an object of strings");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)meta, k, v) {
        if (!json_is_string(v)) {
            char pk[80];
            s_printable(pk, sizeof pk, k, strlen(k));
            return com_error_set(err, COM_EFORMAT, "\"__metadata__\" value \"%s\" is not a string",
                                 pk);
        }
    }
    return 0;
}

/* Validates one entry and fills t (except name). data_size: bytes after the header. */
static int s_parse_entry(const char *pname, const json_t *e, const unsigned char *data,
                         size_t data_size, com_tensor_t *t, s_range_t *r, com_error_t *err) {
    if (!json_is_object(e))
        return com_error_set(err, COM_EFORMAT, "tensor \"%s\": entry is not an object", pname);
    /* dtype */
    json_t *jd = json_object_get(e, "dtype");
    if (!json_is_string(jd))
        return com_error_set(err, COM_EFORMAT, "tensor \"%s\": \"dtype\" missing or not a string",
                             pname);
    const char *ds = json_string_value(jd);
    size_t dsl = json_string_length(jd);
    size_t dsize = 0;
    for (size_t i = 0; i < S_N_DTYPES; i++) {
        if (strlen(s_dtypes[i].name) == dsl && memcmp(s_dtypes[i].name, ds, dsl) == 0) {
            t->dtype = s_dtypes[i].dt;
            dsize = s_dtypes[i].size;
        }
    }
    if (dsize == 0) {
        char pd[40];
        s_printable(pd, sizeof pd, ds, dsl);
        return com_error_set(err, COM_EUNSUPPORTED, "tensor \"%s\": unsupported dtype \"%s\"",
                             pname, pd);
    }
    /* shape */
    json_t *js = json_object_get(e, "shape");
    if (!json_is_array(js))
        return com_error_set(err, COM_EFORMAT, "tensor \"%s\": \"shape\" missing or not an array",
                             pname);
    size_t nd = json_array_size(js);
    if (nd > COM_TENSOR_MAX_DIMS)
        return com_error_set(err, COM_EFORMAT, "tensor \"%s\": %zu dims, at most %d supported",
                             pname, nd, COM_TENSOR_MAX_DIMS);
    t->ndim = (int32_t)nd;
    size_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *jv = json_array_get(js, i);
        if (!json_is_integer(jv) || json_integer_value(jv) < 0)
            return com_error_set(err, COM_EFORMAT,
                                 "tensor \"%s\": shape[%zu] is not a non-negative integer", pname,
                                 i);
        json_int_t d = json_integer_value(jv);
        if (d != 0 && numel > SIZE_MAX / (size_t)d / dsize)
            return com_error_set(err, COM_EFORMAT,
                                 "tensor \"%s\": shape product overflows at "
                                 "dim %zu",
                                 pname, i);
        numel *= (size_t)d;
        t->shape[i] = (int64_t)d;
    }
    size_t nbytes = numel * dsize; /* no overflow: checked per dim above */
    /* data_offsets */
    json_t *jo = json_object_get(e, "data_offsets");
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
        !json_is_integer(json_array_get(jo, 1)))
        return com_error_set(err, COM_EFORMAT,
                             "tensor \"%s\": \"data_offsets\" must be [begin, end] integers",
                             pname);
    json_int_t b = json_integer_value(json_array_get(jo, 0));
    json_int_t en = json_integer_value(json_array_get(jo, 1));
    if (b < 0 || en < 0 || b > en)
        return com_error_set(err, COM_EFORMAT,
                             "tensor \"%s\": data_offsets [%lld, %lld] not 0 <= begin <= end",
                             pname, (long long)b, (long long)en);
    if ((unsigned long long)en > data_size)
        return com_error_set(err, COM_EFORMAT,
                             "tensor \"%s\": data_offsets end %lld past the data section (%zu "
                             "bytes)",
                             pname, (long long)en, data_size);
    if ((size_t)(en - b) != nbytes)
        return com_error_set(err, COM_EFORMAT,
                             "tensor \"%s\": %lld bytes in data_offsets, shape and %s need %zu",
                             pname, (long long)(en - b), com_dtype_name(t->dtype), nbytes);
    t->data = data + b;
    t->nbytes = nbytes;
    r->begin = (size_t)b;
    r->end = (size_t)en;
    return 0;
}

/* Validates buf[0..len) and fills st->n, st->tensors, st->names. On error frees what it made. */
static int s_parse_header(com_safetensors_t *st, com_error_t *err) {
    const unsigned char *buf = st->buf;
    size_t len = st->len;
    if (len < 8)
        return com_error_set(err, COM_EFORMAT, "%zu bytes, too short for the 8-byte header length",
                             len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | buf[i];
    if (hl < 2 || hl > (uint64_t)(len - 8) || hl > S_MAX_HEADER)
        return com_error_set(err, COM_EFORMAT,
                             "header length %llu invalid (file has %zu bytes after it, cap %llu)",
                             (unsigned long long)hl, len - 8, (unsigned long long)S_MAX_HEADER);
    const unsigned char *data = buf + 8 + hl;
    size_t data_size = len - 8 - (size_t)hl;

    /* JSON text never holds a raw NUL (jansson tolerates some); the writer pads with spaces. */
    const unsigned char *nul = memchr(buf + 8, '\0', (size_t)hl);
    if (nul)
        return com_error_set(err, COM_EFORMAT, "header holds a NUL byte at offset %zu",
                             (size_t)(nul - buf));
    json_t *root = com_json_parse((const char *)buf + 8, (size_t)hl, "safetensors header", err);
    if (!root)
        return COM_EFORMAT;
    int rc = 0;
    s_range_t *ranges = NULL;
    if (!json_is_object(root)) {
        rc = com_error_set(err, COM_EFORMAT, "header is not a JSON object");
        goto err;
    }

    /* Count entries and name bytes; check the metadata. */
    size_t n = 0, name_bytes = 0;
    const char *key;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach(root, key, klen, val) {
        if (klen == 12 && memcmp(key, "__metadata__", 12) == 0) {
            if ((rc = s_check_metadata(val, err)) != 0)
                goto err;
            continue;
        }
        n++;
        name_bytes += klen + 1;
    }
    st->n = n;
    /* Sizes bounded by the (capped) header length. */
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    st->names = malloc(name_bytes ? name_bytes : 1);
    ranges = calloc(n ? n : 1, sizeof *ranges);
    if (!st->tensors || !st->names || !ranges) {
        rc = com_error_set(err, COM_ENOMEM, "cannot allocate the index of %zu tensors", n);
        goto err;
    }

    size_t i = 0, off = 0;
    json_object_keylen_foreach(root, key, klen, val) {
        if (klen == 12 && memcmp(key, "__metadata__", 12) == 0)
            continue;
        char pname[160];
        s_printable(pname, sizeof pname, key, klen);
        if (klen == 0 || memchr(key, '\0', klen)) {
            rc =
                com_error_set(err, COM_EFORMAT, "tensor \"%s\": name is empty or holds NUL", pname);
            goto err;
        }
        com_tensor_t *t = &st->tensors[i];
        if ((rc = s_parse_entry(pname, val, data, data_size, t, &ranges[i], err)) != 0)
            goto err;
        memcpy(st->names + off, key, klen + 1);
        t->name = st->names + off;
        ranges[i].idx = i;
        off += klen + 1;
        i++;
    }

    /* Overlap: sort ranges by begin; each non-empty range must start at or after the end of
     * every earlier non-empty one. */
    qsort(ranges, n, sizeof *ranges, s_cmp_range);
    size_t prev_end = 0;
    const char *prev_name = NULL;
    for (size_t k = 0; k < n; k++) {
        if (ranges[k].begin == ranges[k].end)
            continue;
        if (prev_name && ranges[k].begin < prev_end) {
            const char *cur = st->tensors[ranges[k].idx].name;
            char pa[160], pb[160];
            s_printable(pa, sizeof pa, cur, strlen(cur));
            s_printable(pb, sizeof pb, prev_name, strlen(prev_name));
            rc = com_error_set(err, COM_EFORMAT,
                               "tensor \"%s\" [%zu, %zu) overlaps tensor \"%s\" ending at %zu", pa,
                               ranges[k].begin, ranges[k].end, pb, prev_end);
            goto err;
        }
        prev_end = ranges[k].end;
        prev_name = st->tensors[ranges[k].idx].name;
    }
    qsort(st->tensors, n, sizeof *st->tensors, s_cmp_name);
    free(ranges);
    json_decref(root);
    return 0;
err:
    free(ranges);
    free(st->tensors);
    free(st->names);
    st->tensors = NULL;
    st->names = NULL;
    st->n = 0;
    json_decref(root);
    return rc;
}

int com_safetensors_open_buffer(const void *buf, size_t len, com_safetensors_t **out,
                                com_error_t *err) {
    *out = NULL;
    if (!buf && len > 0)
        return com_error_set(err, COM_EINVAL, "safetensors: NULL buffer of %zu bytes", len);
    com_safetensors_t *st = calloc(1, sizeof *st);
    if (!st)
        return com_error_set(err, COM_ENOMEM, "safetensors: out of memory");
    st->buf = buf;
    st->len = len;
    int rc = s_parse_header(st, err);
    if (rc != 0)
        goto err;
    *out = st;
    return 0;
err:
    free(st);
    return rc;
}

int com_safetensors_open(const char *path, com_safetensors_t **out, com_error_t *err) {
    *out = NULL;
    com_safetensors_t *st = calloc(1, sizeof *st);
    if (!st)
        return com_error_set(err, COM_ENOMEM, "%s: out of memory", path);
    int rc = com_file_map_open(path, &st->map, err);
    if (rc != 0)
        goto err;
    st->buf = st->map.data;
    st->len = st->map.size;
    if ((rc = s_parse_header(st, err)) != 0) {
        com_error_prefix(err, rc, "%s", path);
        goto err;
    }
    *out = st;
    return 0;
err:
    com_file_map_close(&st->map);
    free(st);
    return rc;
}

void com_safetensors_destroy(com_safetensors_t **self_p) {
    if (!self_p || !*self_p)
        return;
    com_safetensors_t *st = *self_p;
    free(st->tensors);
    free(st->names);
    com_file_map_close(&st->map);
    free(st);
    *self_p = NULL;
}

size_t com_safetensors_count(const com_safetensors_t *st) {
    return st ? st->n : 0;
}

const com_tensor_t *com_safetensors_at(const com_safetensors_t *st, size_t i) {
    return (st && i < st->n) ? &st->tensors[i] : NULL;
}

const com_tensor_t *com_safetensors_find(const com_safetensors_t *st, const char *name) {
    if (!st || !name || st->n == 0)
        return NULL;
    com_tensor_t key = {.name = name};
    return bsearch(&key, st->tensors, st->n, sizeof *st->tensors, s_cmp_name);
}

static void s_format_shape(char *out, size_t cap, int32_t ndim, const int64_t *dims) {
    size_t o = 0;
    int w = snprintf(out, cap, "[");
    o = w > 0 ? (size_t)w : 0;
    for (int32_t i = 0; i < ndim && o < cap; i++) {
        w = snprintf(out + o, cap - o, "%s%lld", i ? ", " : "", (long long)dims[i]);
        o += w > 0 ? (size_t)w : 0;
    }
    if (o < cap)
        snprintf(out + o, cap - o, "]");
}

const com_tensor_t *com_safetensors_expect(const com_safetensors_t *st, const char *name,
                                           int32_t ndim, const int64_t *dims, com_error_t *err) {
    const com_tensor_t *t = com_safetensors_find(st, name);
    if (!t) {
        com_error_set(err, COM_EFORMAT, "tensor \"%s\" missing", name);
        return NULL;
    }
    char want[160], got[160];
    s_format_shape(want, sizeof want, ndim, dims);
    s_format_shape(got, sizeof got, t->ndim, t->shape);
    if (t->dtype != COM_DTYPE_F32 && t->dtype != COM_DTYPE_F16 && t->dtype != COM_DTYPE_BF16) {
        com_error_set(err, COM_EFORMAT, "tensor \"%s\": dtype %s, expected F32, F16 or BF16", name,
                      com_dtype_name(t->dtype));
        return NULL;
    }
    bool same = t->ndim == ndim;
    for (int32_t i = 0; same && i < ndim; i++)
        same = t->shape[i] == dims[i];
    if (!same) {
        com_error_set(err, COM_EFORMAT, "tensor \"%s\": shape %s, expected %s", name, got, want);
        return NULL;
    }
    return t;
}

int com_tensor_to_f32(const com_tensor_t *t, float *dst, size_t n, com_error_t *err) {
    if (!t)
        return com_error_set(err, COM_EINVAL, "com_tensor_to_f32: NULL tensor");
    size_t numel = com_tensor_numel(t);
    if (n != numel)
        return com_error_set(err, COM_EINVAL, "tensor \"%s\": %zu elements, destination holds %zu",
                             t->name, numel, n);
    if (n > 0 && !dst)
        return com_error_set(err, COM_EINVAL, "tensor \"%s\": NULL destination", t->name);
    const unsigned char *p = t->data; /* may be unaligned */
    switch (t->dtype) {
    case COM_DTYPE_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n > 0)
            memcpy(dst, p, n * sizeof(float));
#else
        for (size_t i = 0; i < n; i++) {
            uint32_t b = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                         (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            memcpy(&dst[i], &b, sizeof b);
        }
#endif
        return 0;
    case COM_DTYPE_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = com_half_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    case COM_DTYPE_BF16:
        for (size_t i = 0; i < n; i++) {
            uint32_t b = ((uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &b, sizeof b);
        }
        return 0;
    default:
        return com_error_set(err, COM_EUNSUPPORTED, "tensor \"%s\": cannot convert %s to F32",
                             t->name, com_dtype_name(t->dtype));
    }
}
