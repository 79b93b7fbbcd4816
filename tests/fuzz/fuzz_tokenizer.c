/* tests/fuzz/fuzz_tokenizer.c — libFuzzer target for the encode path: loads
 * models/all-MiniLM-L6-v2/tokenizer.json once (EMBER_SOURCE_DIR), then takes the first bytes of
 * the input as settings (max_length, truncate, add_special_tokens, where to split a pair) and
 * encodes the rest as one text and as a pair. Checks the invariants every result must keep:
 * ids in range, type ids 0/1, length within max_length, special tokens at the ends.
 * Single-threaded (libFuzzer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tokenizer.h"

static com_tokenizer_t *g_tok;

static void s_check(const com_encoding_t *e, const com_encode_opts_t *o, int rc) {
    if (rc != 0) {
        if (e->len != 0)
            abort();
        return;
    }
    if (o->max_length > 0 && e->len > o->max_length)
        abort();
    int32_t n = com_tokenizer_vocab_size(g_tok);
    for (int32_t i = 0; i < e->len; i++)
        if (e->ids[i] < 0 || e->ids[i] >= n || e->type_ids[i] < 0 || e->type_ids[i] > 1)
            abort();
    if (o->add_special_tokens && (e->len < 2 || e->ids[0] != 101 || e->ids[e->len - 1] != 102))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_tok) {
        com_error_t err;
        if (com_tokenizer_load(EMBER_SOURCE_DIR "/models/all-MiniLM-L6-v2/tokenizer.json", &g_tok,
                               &err)) {
            fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
            abort();
        }
    }
    if (size < 4)
        return 0;
    com_encode_opts_t o = com_encode_opts_default();
    o.max_length = data[0] < 128 ? data[0] : 0; /* 0: no limit */
    o.truncate = (data[1] & 1) != 0;
    o.add_special_tokens = (data[1] & 2) != 0;
    size_t split = (size_t)data[2] | (size_t)data[3] << 8;
    const char *text = (const char *)data + 4;
    size_t len = size - 4;
    if (split > len)
        split = len;
    com_encoding_t e;
    com_encoding_init(&e);
    com_error_t err;
    int rc = com_tokenizer_encode(g_tok, text, len, &o, &e, &err);
    s_check(&e, &o, rc);
    if (rc == 0 && o.max_length == 0 && e.n_untruncated != e.len)
        abort();
    rc = com_tokenizer_encode_pair(g_tok, text, split, text + split, len - split, &o, &e, &err);
    s_check(&e, &o, rc);
    com_encoding_free(&e);
    return 0;
}
