/* client/ember_result.c — libember's small pure parts: status names, the version, option
 * defaults, and the result accessors (ember.h). Results are immutable once handed out, so
 * everything here is safe from any thread on distinct or read-only objects. */
#include <stdlib.h>
#include <string.h>

#include "client/ember.h"
#include "client/ember_internal.h"

#define S_STR2(x) #x
#define S_STR(x)  S_STR2(x)

EMBER_API const char *ember_version(void) {
    return S_STR(EMBER_VERSION_MAJOR) "." S_STR(EMBER_VERSION_MINOR) "." S_STR(EMBER_VERSION_PATCH);
}

EMBER_API const char *ember_status_name(int status) {
    switch (status) {
    case EMBER_OK:
        return "EMBER_OK";
    case EMBER_EINVAL:
        return "EMBER_EINVAL";
    case EMBER_ENOMEM:
        return "EMBER_ENOMEM";
    case EMBER_ETIMEOUT:
        return "EMBER_ETIMEOUT";
    case EMBER_EUNAVAILABLE:
        return "EMBER_EUNAVAILABLE";
    case EMBER_EOVERLOADED:
        return "EMBER_EOVERLOADED";
    case EMBER_EBAD_REQUEST:
        return "EMBER_EBAD_REQUEST";
    case EMBER_ETOO_LARGE:
        return "EMBER_ETOO_LARGE";
    case EMBER_EINPUT_TOO_LONG:
        return "EMBER_EINPUT_TOO_LONG";
    case EMBER_EDEADLINE:
        return "EMBER_EDEADLINE";
    case EMBER_ENO_WORKERS:
        return "EMBER_ENO_WORKERS";
    case EMBER_EMODEL_MISMATCH:
        return "EMBER_EMODEL_MISMATCH";
    case EMBER_EUNSUPPORTED:
        return "EMBER_EUNSUPPORTED";
    case EMBER_EINTERNAL:
        return "EMBER_EINTERNAL";
    case EMBER_EPROTOCOL:
        return "EMBER_EPROTOCOL";
    case EMBER_EAGAIN:
        return "EMBER_EAGAIN";
    case EMBER_ENOT_FOUND:
        return "EMBER_ENOT_FOUND";
    default:
        return "EMBER_E?";
    }
}

EMBER_API void ember_options_init(ember_options_t *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = (uint32_t)sizeof *o;
    o->timeout_ms = 30000;
    o->attempt_timeout_ms = 10000;
    o->max_attempts = 5;
    o->backoff_initial_ms = 50;
    o->backoff_max_ms = 2000;
    o->discovery_refresh_ms = 5000;
    o->redis_timeout_ms = 250;
    o->spin_us = 0;
}

EMBER_API void ember_request_opts_init(ember_request_opts_t *o) {
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = (uint32_t)sizeof *o;
    o->normalize = -1;
    o->dimensions = 0;
    o->dtype = EMBER_DTYPE_F32;
    o->truncate = 1;
    o->timeout_ms = 0;
}

ember_result_t *emb_result_new(emb_kind_t kind) {
    ember_result_t *r = calloc(1, sizeof *r);
    if (r)
        r->kind = kind;
    return r;
}

void emb_copy_str(char *dst, size_t cap, const char *src, size_t len) {
    if (len >= cap)
        len = cap - 1;
    if (len)
        memcpy(dst, src, len);
    dst[len] = '\0';
}

EMBER_API size_t ember_result_count(const ember_result_t *r) {
    return r ? r->n : 0;
}

EMBER_API size_t ember_result_dim(const ember_result_t *r) {
    return r ? r->dim : 0;
}

EMBER_API const float *ember_result_embeddings(const ember_result_t *r) {
    return r ? r->emb : NULL;
}

EMBER_API const float *ember_result_embedding(const ember_result_t *r, size_t i) {
    if (!r || !r->emb || i >= r->n)
        return NULL;
    return r->emb + i * r->dim;
}

EMBER_API uint32_t ember_result_tokens(const ember_result_t *r, size_t i) {
    if (!r || !r->ntok || i >= r->n)
        return 0;
    return r->ntok[i];
}

EMBER_API const int32_t *ember_result_token_ids(const ember_result_t *r, size_t i, size_t *len) {
    if (len)
        *len = 0;
    if (!r || r->kind != EMB_KIND_TOKENIZE || !r->id_offs || i >= r->n)
        return NULL;
    if (len)
        *len = r->id_offs[i + 1] - r->id_offs[i];
    /* a non-NULL pointer even for an empty row, so callers can tell "empty" from "no row" */
    static const int32_t s_none[1] = {0};
    return r->ids ? r->ids + r->id_offs[i] : s_none;
}

EMBER_API uint64_t ember_result_usage_tokens(const ember_result_t *r) {
    return r ? r->usage_tokens : 0;
}

EMBER_API const char *ember_result_model(const ember_result_t *r) {
    return r ? r->model : "";
}

EMBER_API void ember_result_timings(const ember_result_t *r, ember_timings_t *t) {
    if (!t)
        return;
    if (!r) {
        memset(t, 0, sizeof *t);
        return;
    }
    *t = r->tm;
}

EMBER_API void ember_result_destroy(ember_result_t **r_p) {
    if (!r_p || !*r_p)
        return;
    ember_result_t *r = *r_p;
    free(r->emb);
    free(r->ntok);
    free(r->ids);
    free(r->id_offs);
    free(r);
    *r_p = NULL;
}
