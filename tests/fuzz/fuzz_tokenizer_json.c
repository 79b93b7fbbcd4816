/* tests/fuzz/fuzz_tokenizer_json.c — libFuzzer target for the loader: the input is a
 * tokenizer.json text for com_tokenizer_from_json; whatever loads is then used once (encode a
 * fixed text and a pair) so a bad-but-accepted file cannot hide a broken invariant.
 * Single-threaded (libFuzzer). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    com_tokenizer_t *tok = NULL;
    com_error_t err;
    int rc = com_tokenizer_from_json((const char *)data, size, &tok, &err);
    if (rc != 0) {
        if (tok != NULL || err.code != rc || err.msg[0] == 0)
            abort();
        return 0;
    }
    static const char text[] = "Hello, W\xc3\xb6rld! [CLS] <mask> tok \xe4\xb8\xad \xff unaffable";
    com_encoding_t e;
    com_encoding_init(&e);
    com_encode_opts_t o = com_encode_opts_default();
    int32_t n = com_tokenizer_vocab_size(tok);
    for (int pass = 0; pass < 2; pass++) {
        o.max_length = pass ? 7 : 0;
        rc = pass ? com_tokenizer_encode_pair(tok, text, sizeof text - 1, text, 12, &o, &e, &err)
                  : com_tokenizer_encode(tok, text, sizeof text - 1, &o, &e, &err);
        if (rc == 0)
            for (int32_t i = 0; i < e.len; i++)
                if (e.ids[i] < 0 || e.ids[i] >= n || !com_tokenizer_id_to_token(tok, e.ids[i]))
                    abort();
    }
    (void)com_tokenizer_token_to_id(tok, "[UNK]");
    (void)com_tokenizer_num_special_tokens(tok, true);
    com_encoding_free(&e);
    com_tokenizer_destroy(&tok);
    return 0;
}
