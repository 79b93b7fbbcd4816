/* common/tok_vocab.c — the token -> id table every model uses: open addressing with linear
 * probing over 64-bit slots (32-bit hash << 32 | entry + 1), at most half full, so a lookup is
 * usually one cache line plus one memcmp in the token pool. Hashes are incremental FNV-1a (see
 * tok_internal.h) so WordPiece can hash all prefixes of a word in one pass.
 * Invariants: entries are unique strings; slots hold entry + 1 (0 = empty).
 * Thread-safety: built once at load, read-only afterwards. */
#include <stdlib.h>
#include <string.h>

#include "common/tok_internal.h"

int tok_vocab_build(tok_vocab_t *v, int32_t n, const char *const *toks, const uint32_t *lens,
                    const int32_t *ids, com_error_t *err) {
    memset(v, 0, sizeof *v);
    v->max_id = -1;
    size_t pool_len = 0;
    for (int32_t i = 0; i < n; i++)
        pool_len += (size_t)lens[i] + 1;
    uint32_t cap = 16;
    while (cap < (uint32_t)n * 2u + 16u)
        cap <<= 1;
    v->slots = calloc(cap, sizeof *v->slots);
    v->pool = malloc(pool_len ? pool_len : 1);
    v->tok_off = malloc(sizeof *v->tok_off * (size_t)(n ? n : 1));
    v->tok_len = malloc(sizeof *v->tok_len * (size_t)(n ? n : 1));
    v->tok_id = malloc(sizeof *v->tok_id * (size_t)(n ? n : 1));
    if (!v->slots || !v->pool || !v->tok_off || !v->tok_len || !v->tok_id) {
        tok_vocab_free(v);
        return com_error_set(err, COM_ENOMEM, "vocabulary of %d entries: out of memory", n);
    }
    v->mask = cap - 1;
    size_t off = 0;
    for (int32_t i = 0; i < n; i++) {
        uint32_t h = tok_hash_final(tok_hash_bytes(TOK_HASH_INIT, toks[i], lens[i]));
        if (tok_vocab_find_h(v, h, toks[i], lens[i]) >= 0) {
            tok_vocab_free(v);
            return com_error_set(err, COM_EFORMAT, "duplicate vocabulary token \"%.*s\"",
                                 (int)(lens[i] > 64 ? 64 : lens[i]), toks[i]);
        }
        memcpy(v->pool + off, toks[i], lens[i]);
        v->pool[off + lens[i]] = 0;
        v->tok_off[i] = (uint32_t)off;
        v->tok_len[i] = lens[i];
        v->tok_id[i] = ids[i];
        off += (size_t)lens[i] + 1;
        uint32_t s = h & v->mask;
        while (v->slots[s])
            s = (s + 1) & v->mask;
        v->slots[s] = (uint64_t)h << 32 | (uint32_t)(i + 1);
        v->n_entries = i + 1;
        if (ids[i] > v->max_id)
            v->max_id = ids[i];
        if (lens[i] > v->max_len)
            v->max_len = lens[i];
    }
    return 0;
}

void tok_vocab_free(tok_vocab_t *v) {
    free(v->slots);
    free(v->pool);
    free(v->tok_off);
    free(v->tok_len);
    free(v->tok_id);
    memset(v, 0, sizeof *v);
    v->max_id = -1;
}

int32_t tok_vocab_find_h(const tok_vocab_t *v, uint32_t h, const char *s, size_t n) {
    if (!v->slots)
        return -1;
    uint32_t i = h & v->mask;
    for (;;) {
        uint64_t slot = v->slots[i];
        if (!slot)
            return -1;
        if ((uint32_t)(slot >> 32) == h) {
            uint32_t e = (uint32_t)slot - 1;
            if (v->tok_len[e] == n && memcmp(v->pool + v->tok_off[e], s, n) == 0)
                return v->tok_id[e];
        }
        i = (i + 1) & v->mask;
    }
}

int32_t tok_vocab_find(const tok_vocab_t *v, const char *s, size_t n) {
    return tok_vocab_find_h(v, tok_hash_final(tok_hash_bytes(TOK_HASH_INIT, s, n)), s, n);
}

int32_t tok_vocab_find2_h(const tok_vocab_t *v, uint32_t h, const char *a, size_t na, const char *b,
                          size_t nb) {
    if (!v->slots)
        return -1;
    uint32_t i = h & v->mask;
    for (;;) {
        uint64_t slot = v->slots[i];
        if (!slot)
            return -1;
        if ((uint32_t)(slot >> 32) == h) {
            uint32_t e = (uint32_t)slot - 1;
            const char *t = v->pool + v->tok_off[e];
            if (v->tok_len[e] == na + nb && memcmp(t, a, na) == 0 && memcmp(t + na, b, nb) == 0)
                return v->tok_id[e];
        }
        i = (i + 1) & v->mask;
    }
}
