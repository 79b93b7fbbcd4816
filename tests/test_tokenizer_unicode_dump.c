/* tests/test_tokenizer_unicode_dump.c — prints, for every code point (surrogates excepted), what
 * the tokenizer's character stages make of it: BertNormalizer clean_text only, strip_accents
 * only, NFD, lowercase only (each as UTF-8 hex, "-" when empty), and the number of words
 * BertPreTokenizer and WhitespaceSplit split "a<c>b" into. tests/reference/
 * tokenizer_unicode_check.py (ctest tokenizer_unicode) compares every line with Hugging Face
 * `tokenizers`, so the generated Unicode tables are checked code point by code point.
 * Single-threaded; writes to stdout. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tok_internal.h"
#include "common/utf8.h"

static int s_norm(tok_normalizer_t *n, const char *js) {
    json_error_t e;
    json_t *j = json_loads(js, 0, &e);
    int rc = j ? tok_normalizer_parse(n, j, NULL) : -1;
    json_decref(j);
    return rc;
}

static int s_pretok(tok_pretok_t *p, const char *js) {
    json_error_t e;
    json_t *j = json_loads(js, 0, &e);
    int rc = j ? tok_pretok_parse(p, j, NULL) : -1;
    json_decref(j);
    return rc;
}

int main(void) {
    static tok_normalizer_t n[4];
    tok_pretok_t bert, ws;
    if (s_norm(&n[0], "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":"
                      "false,\"strip_accents\":false,\"lowercase\":false}") ||
        s_norm(&n[1], "{\"type\":\"BertNormalizer\",\"clean_text\":false,\"handle_chinese_chars\":"
                      "false,\"strip_accents\":true,\"lowercase\":false}") ||
        s_norm(&n[2], "{\"type\":\"NFD\"}") ||
        s_norm(&n[3], "{\"type\":\"BertNormalizer\",\"clean_text\":false,\"handle_chinese_chars\":"
                      "false,\"strip_accents\":false,\"lowercase\":true}") ||
        s_pretok(&bert, "{\"type\":\"BertPreTokenizer\"}") ||
        s_pretok(&ws, "{\"type\":\"WhitespaceSplit\"}")) {
        fprintf(stderr, "unicode dump: stage setup failed\n");
        return 1;
    }
    tok_scratch_t sc;
    memset(&sc, 0, sizeof sc);
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        char in[8];
        int k = com_utf8_encode(cp, in + 1);
        printf("%X", cp);
        for (int i = 0; i < 4; i++) {
            if (tok_normalize(&n[i], in + 1, (size_t)k, &sc))
                return 1;
            putchar(' ');
            for (size_t b = 0; b < sc.norm.len; b++)
                printf("%02x", (unsigned char)sc.norm.p[b]);
            if (!sc.norm.len)
                putchar('-');
        }
        in[0] = 'a';
        in[k + 1] = 'b';
        long long w1 = (long long)tok_pretok_split(&bert, in, (size_t)k + 2, &sc);
        long long w2 = (long long)tok_pretok_split(&ws, in, (size_t)k + 2, &sc);
        printf(" %lld %lld\n", w1, w2);
    }
    free(sc.norm.p);
    free(sc.norm2.p);
    free(sc.words);
    free(sc.marks);
    return 0;
}
