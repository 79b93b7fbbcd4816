/* tests/test_tokenizer_exact.c — the tokenizer must reproduce Hugging Face `tokenizers` exactly:
 * reads the corpus tests/reference/make_tokenizer_corpus.py wrote (fixture tokenizer_corpus)
 * into $EMBER_TEST_DATA_DIR/tokenizer_corpus.bin and encodes every case (singles, pairs,
 * truncation at several max_length, with and without special tokens) with
 * models/all-MiniLM-L6-v2/tokenizer.json; prints the exact-match counts and the first
 * mismatches (text escaped, expected and got ids). Any mismatch fails. Single-threaded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/tokenizer.h"
#include "tests/test_util.h"

typedef struct s_reader {
    const unsigned char *p, *end;
    int bad;
} s_reader_t;

static uint32_t s_u32(s_reader_t *r) {
    if (r->end - r->p < 4) {
        r->bad = 1;
        return 0;
    }
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                 (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}

static const unsigned char *s_bytes(s_reader_t *r, size_t n) {
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    return p;
}

static void s_print_escaped(const unsigned char *s, size_t n) {
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 300; i++) {
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\')
            fputc((int)c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    if (n > 300)
        fprintf(stderr, "...(%zu bytes)", n);
    fputc('"', stderr);
}

static void s_print_ids(const char *what, const int32_t *ids, const int32_t *types, int32_t n) {
    fprintf(stderr, "  %s (%d):", what, n);
    for (int32_t i = 0; i < n && i < 64; i++)
        fprintf(stderr, " %d/%d", ids[i], types[i]);
    fprintf(stderr, n > 64 ? " ...\n" : "\n");
}

int main(void) {
    test_require_model();
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", test_model_dir());
    com_error_t err;
    com_tokenizer_t *tok = NULL;
    int rc = com_tokenizer_load(path, &tok, &err);
    CHECK_MSG(rc == 0, "load %s: %s", path, err.msg);
    if (rc)
        return test_finish();
    snprintf(path, sizeof path, "%s/tokenizer_corpus.bin", test_data_dir());
    char *data = NULL;
    size_t len = 0;
    rc = com_file_read(path, (size_t)1 << 30, &data, &len, &err);
    CHECK_MSG(rc == 0, "corpus %s: %s (the tokenizer_corpus fixture writes it)", path, err.msg);
    if (rc) {
        com_tokenizer_destroy(&tok);
        return test_finish();
    }
    s_reader_t r = {(const unsigned char *)data, (const unsigned char *)data + len, 0};
    const unsigned char *magic = s_bytes(&r, 8);
    CHECK(magic && memcmp(magic, "EMTKCORP", 8) == 0);
    uint32_t version = s_u32(&r), n_cases = s_u32(&r);
    CHECK(version == 1 && n_cases > 10000);
    int n_single = 0, ok_single = 0, n_pair = 0, ok_pair = 0, shown = 0;
    com_encoding_t enc;
    com_encoding_init(&enc);
    for (uint32_t c = 0; c < n_cases && !r.bad; c++) {
        const unsigned char *hdr = s_bytes(&r, 4);
        uint32_t max_len = s_u32(&r);
        uint32_t la = s_u32(&r);
        const unsigned char *a = s_bytes(&r, la);
        uint32_t lb = s_u32(&r);
        const unsigned char *b = s_bytes(&r, lb);
        uint32_t n = s_u32(&r);
        const unsigned char *ids_raw = s_bytes(&r, (size_t)n * 4);
        const unsigned char *types_raw = s_bytes(&r, (size_t)n * 4);
        if (r.bad)
            break;
        bool is_pair = hdr[0] != 0;
        com_encode_opts_t opts = com_encode_opts_default();
        opts.add_special_tokens = hdr[1] != 0;
        opts.truncate = true;
        opts.max_length = (int32_t)max_len;
        int32_t *want = malloc(sizeof *want * (n ? n : 1));
        int32_t *want_t = malloc(sizeof *want_t * (n ? n : 1));
        memcpy(want, ids_raw, (size_t)n * 4); /* little-endian host (x86-64, arm64) */
        memcpy(want_t, types_raw, (size_t)n * 4);
        if (is_pair)
            rc = com_tokenizer_encode_pair(tok, (const char *)a, la, (const char *)b, lb, &opts,
                                           &enc, &err);
        else
            rc = com_tokenizer_encode(tok, (const char *)a, la, &opts, &enc, &err);
        bool same = rc == 0 && enc.len == (int32_t)n && memcmp(enc.ids, want, (size_t)n * 4) == 0 &&
                    memcmp(enc.type_ids, want_t, (size_t)n * 4) == 0;
        if (is_pair) {
            n_pair++;
            ok_pair += same;
        } else {
            n_single++;
            ok_single += same;
        }
        if (!same && shown++ < 8) {
            fprintf(stderr, "MISMATCH case %u (%s, max_length %u, special %d, rc %d %s)\n  a: ", c,
                    is_pair ? "pair" : "single", max_len, hdr[1], rc, rc ? err.msg : "");
            s_print_escaped(a, la);
            if (is_pair) {
                fprintf(stderr, "\n  b: ");
                s_print_escaped(b, lb);
            }
            fputc('\n', stderr);
            s_print_ids("expected", want, want_t, (int32_t)n);
            s_print_ids("got", enc.ids, enc.type_ids, rc ? 0 : enc.len);
        }
        free(want);
        free(want_t);
    }
    CHECK_MSG(!r.bad, "corpus file truncated");
    printf("tokenizer exact: %d/%d single, %d/%d pairs\n", ok_single, n_single, ok_pair, n_pair);
    CHECK(ok_single == n_single && n_single >= 10000);
    CHECK(ok_pair == n_pair && n_pair >= 2000);
    com_encoding_free(&enc);
    free(data);
    com_tokenizer_destroy(&tok);
    return test_finish();
}
