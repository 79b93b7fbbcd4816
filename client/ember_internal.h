/* client/ember_internal.h — what the libember sources share and the API does not show: the
 * result object's layout. Not installed. Everything declared here has hidden visibility (the
 * build's default); only the EMBER_API functions of ember.h are exported. */
#ifndef EMBER_CLIENT_EMBER_INTERNAL_H
#define EMBER_CLIENT_EMBER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "client/ember.h"

typedef enum s_kind {
    EMB_KIND_EMBED = 1,
    EMB_KIND_TOKENIZE = 2,
    EMB_KIND_INFO = 3,
} emb_kind_t;

#define EMB_MODEL_MAX 256

/* A finished request's data. Owned by whoever holds the pointer (the client until collected,
 * then the caller); immutable once handed out, so any thread may read it. */
struct ember_result {
    emb_kind_t kind;
    size_t n;              /* rows / inputs */
    size_t dim;            /* embed: row width; 0 otherwise */
    float *emb;            /* embed: [n, dim] host float32, owned */
    uint32_t *ntok;        /* embed: [n] tokens per input, owned; tokenize: [n] id counts */
    int32_t *ids;          /* tokenize: [id_offs[n]] ids back to back, owned */
    size_t *id_offs;       /* tokenize: [n + 1] prefix offsets into ids, owned */
    uint64_t usage_tokens; /* "use.tok" */
    ember_timings_t tm;    /* broker stages, client time, attempts */
    ember_info_t info;     /* info: the broker's answer */
    char model[EMB_MODEL_MAX];
};

/* Allocates a zeroed result of kind. NULL when out of memory. */
ember_result_t *emb_result_new(emb_kind_t kind);

/* Copies at most cap-1 bytes of src[len] into dst and NUL-terminates (cap >= 1). */
void emb_copy_str(char *dst, size_t cap, const char *src, size_t len);

#endif
