/* tests/test_tokenizer_unit.c — hand-checked tokenizer cases (ids as Hugging Face `tokenizers`
 * 0.23.3 gives them for the same tokenizer.json), a small custom tokenizer.json exercising
 * added-token flags (lstrip/rstrip/single_word/normalized), BertProcessing and WordPiece limits,
 * malformed or unsupported tokenizer.json inputs (COM_EFORMAT / COM_EUNSUPPORTED, no crash),
 * truncation errors, UTF-8 repair, and a two-thread encode smoke test. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tokenizer.h"
#include "common/utf8.h"
#include "tests/test_util.h"

static com_tokenizer_t *g_tok; /* all-MiniLM-L6-v2 */

static bool s_ids_eq(const com_encoding_t *e, const int32_t *want, int32_t n) {
    if (e->len != n)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (e->ids[i] != want[i])
            return false;
    return true;
}

static void s_dump(const char *what, const com_encoding_t *e) {
    fprintf(stderr, "  %s got (%d):", what, e->len);
    for (int32_t i = 0; i < e->len; i++)
        fprintf(stderr, " %d", e->ids[i]);
    fputc('\n', stderr);
}

#define CHECK_ENC(tok, text, ...)                                                                  \
    do {                                                                                           \
        const int32_t want_[] = {__VA_ARGS__};                                                     \
        com_encoding_t e_;                                                                         \
        com_encoding_init(&e_);                                                                    \
        com_error_t err_;                                                                          \
        int rc_ = com_tokenizer_encode(tok, text, sizeof(text) - 1, NULL, &e_, &err_);             \
        bool ok_ = rc_ == 0 && s_ids_eq(&e_, want_, (int32_t)(sizeof want_ / sizeof want_[0]));    \
        CHECK_MSG(ok_, "encode %s", #text);                                                        \
        if (!ok_)                                                                                  \
            s_dump(#text, &e_);                                                                    \
        com_encoding_free(&e_);                                                                    \
    } while (0)

static void test_minilm_basics(void) {
    CHECK(com_tokenizer_vocab_size(g_tok) == 30522);
    CHECK(com_tokenizer_token_to_id(g_tok, "[CLS]") == 101);
    CHECK(com_tokenizer_token_to_id(g_tok, "hello") == 7592);
    CHECK(com_tokenizer_token_to_id(g_tok, "no-such-token") == -1);
    CHECK(strcmp(com_tokenizer_id_to_token(g_tok, 102), "[SEP]") == 0);
    CHECK(strcmp(com_tokenizer_id_to_token(g_tok, 2088), "world") == 0);
    CHECK(com_tokenizer_id_to_token(g_tok, -1) == NULL);
    CHECK(com_tokenizer_id_to_token(g_tok, 30522) == NULL);
    CHECK(com_tokenizer_num_special_tokens(g_tok, false) == 2);
    CHECK(com_tokenizer_num_special_tokens(g_tok, true) == 3);

    CHECK_ENC(g_tok, "Hello, world!", 101, 7592, 1010, 2088, 999, 102);
    CHECK_ENC(g_tok, "", 101, 102);
    CHECK_ENC(g_tok, "[CLS] x [SEP]", 101, 101, 1060, 102, 102); /* raw special tokens */
    CHECK_ENC(g_tok, "x[MASK]y", 101, 1060, 103, 1061, 102);
    CHECK_ENC(g_tok, "[mask]", 101, 1031, 7308, 1033, 102); /* case-sensitive, not normalized */
    CHECK_ENC(g_tok, "H\xc3\xa9llo W\xc3\xb6rld", 101, 7592, 2088, 102); /* accents stripped */
    CHECK_ENC(g_tok, "He\xcc\x81llo", 101, 7592, 102);                   /* decomposed accent */
    CHECK_ENC(g_tok, "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97", 101, 1746, 1861, 100, 102); /* CJK */
    CHECK_ENC(g_tok, "unaffable", 101, 14477, 20961, 3468, 102);
    CHECK_ENC(g_tok, "\xc4\xb0stanbul", 101, 9960, 102); /* U+0130: NFD then strip, then lower */
    CHECK_ENC(g_tok, "\xff", 101, 102);                  /* U+FFFD is dropped by clean_text */
    CHECK_ENC(g_tok,
              "a\xe2\x80\x8b\x01"
              "b",
              101, 11113, 102); /* ZWSP and U+0001 removed: "ab" */
    CHECK_ENC(g_tok,
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaa",
              101, 100, 102); /* 101 chars > max_input_chars_per_word */

    /* pair with type ids */
    com_encoding_t e;
    com_encoding_init(&e);
    com_error_t err;
    const char *qa = "What is it?", *qb = "It is a test.";
    int rc = com_tokenizer_encode_pair(g_tok, qa, strlen(qa), qb, strlen(qb), NULL, &e, &err);
    const int32_t want[] = {101, 2054, 2003, 2009, 1029, 102, 2009, 2003, 1037, 3231, 1012, 102};
    const int32_t want_t[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
    CHECK(rc == 0 && s_ids_eq(&e, want, 12));
    CHECK(rc == 0 && e.len == 12 && memcmp(e.type_ids, want_t, sizeof want_t) == 0);
    CHECK(e.n_untruncated == 12);
    com_encoding_free(&e);
    CHECK(e.ids == NULL && e.scratch == NULL);
}

static void test_truncation(void) {
    com_encoding_t e;
    com_encoding_init(&e);
    com_error_t err;
    com_encode_opts_t o = com_encode_opts_default();
    const char *t = "the quick brown fox jumps over the lazy dog";
    o.max_length = 8;
    int rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    const int32_t w8[] = {101, 1996, 4248, 2829, 4419, 14523, 2058, 102};
    CHECK(rc == 0 && s_ids_eq(&e, w8, 8));
    CHECK(e.n_untruncated == 11);

    o.truncate = false;
    rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    CHECK(rc == COM_ETOOLONG && e.len == 0 && err.code == COM_ETOOLONG);
    o.max_length = 11; /* fits exactly */
    rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    CHECK(rc == 0 && e.len == 11);

    o.truncate = true;
    o.max_length = 1; /* cannot hold [CLS] [SEP] */
    rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    CHECK(rc == COM_EINVAL && e.len == 0);
    o.max_length = -3;
    rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    CHECK(rc == COM_EINVAL);
    o.max_length = 2;
    rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    const int32_t w2[] = {101, 102};
    CHECK(rc == 0 && s_ids_eq(&e, w2, 2));

    /* pairs: LongestFirst */
    const char *a = "one two three four five six seven", *b = "a b";
    o.max_length = 8;
    rc = com_tokenizer_encode_pair(g_tok, a, strlen(a), b, strlen(b), &o, &e, &err);
    const int32_t wp[] = {101, 2028, 2048, 2093, 102, 1037, 1038, 102};
    const int32_t wpt[] = {0, 0, 0, 0, 0, 1, 1, 1};
    CHECK(rc == 0 && s_ids_eq(&e, wp, 8) && memcmp(e.type_ids, wpt, sizeof wpt) == 0);
    o.max_length = 3;
    rc = com_tokenizer_encode_pair(g_tok, "one two", 7, "three", 5, &o, &e, &err);
    const int32_t w3[] = {101, 102, 102};
    CHECK(rc == 0 && s_ids_eq(&e, w3, 3) && e.type_ids[2] == 1);
    o.max_length = 2;
    rc = com_tokenizer_encode_pair(g_tok, "one two", 7, "three", 5, &o, &e, &err);
    CHECK(rc == COM_EINVAL);

    /* without special tokens the budget is all content */
    o.max_length = 2;
    o.add_special_tokens = false;
    rc = com_tokenizer_encode(g_tok, t, strlen(t), &o, &e, &err);
    const int32_t wn[] = {1996, 4248};
    CHECK(rc == 0 && s_ids_eq(&e, wn, 2));

    /* bad arguments */
    CHECK(com_tokenizer_encode(g_tok, NULL, 3, NULL, &e, &err) == COM_EINVAL);
    CHECK(com_tokenizer_encode(NULL, "x", 1, NULL, &e, &err) == COM_EINVAL);
    CHECK(com_tokenizer_encode(g_tok, NULL, 0, NULL, &e, &err) == 0 && e.len == 2);
    com_encoding_free(&e);
}

static void test_utf8_repair(void) {
    struct {
        const char *in;
        size_t n;
        const char *out;
    } cases[] = {
        {"a\x80"
         "b",
         3,
         "a\xef\xbf\xbd"
         "b"},
        {"\xe2\x82", 2, "\xef\xbf\xbd"},                             /* truncated: one U+FFFD */
        {"\xe0\x80\xaf", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* overlong: three */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate: three */
        {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf0\x9f\x98"
         "x",
         4,
         "\xef\xbf\xbd"
         "x"},
        {"\xc3\xa9", 2, "\xc3\xa9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        size_t n = com_utf8_repair(cases[i].in, cases[i].n, buf);
        CHECK_MSG(n == strlen(cases[i].out) && memcmp(buf, cases[i].out, n) == 0, "repair #%zu", i);
    }
    CHECK(com_utf8_valid_prefix("abc\xff", 4) == 3);
}

/* A small tokenizer.json: strip_accents false + lowercase, added tokens with flags,
 * BertProcessing, max_input_chars_per_word 5. Ids checked against HF 0.23.3. */
static const char *s_custom_json =
    "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":["
    "{\"id\":12,\"content\":\"<mask>\",\"single_word\":false,\"lstrip\":true,\"rstrip\":true,"
    "\"normalized\":false,\"special\":true},"
    "{\"id\":13,\"content\":\"Tok\",\"single_word\":true,\"lstrip\":false,\"rstrip\":false,"
    "\"normalized\":true,\"special\":false},"
    "{\"id\":14,\"content\":\"[X]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
    "\"normalized\":false,\"special\":false}],"
    "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":"
    "true,\"strip_accents\":false,\"lowercase\":true},"
    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
    "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",2],\"cls\":[\"[CLS]\",1]},"
    "\"decoder\":null,\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
    "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":5,\"vocab\":{"
    "\"[UNK]\":0,\"[CLS]\":1,\"[SEP]\":2,\"hello\":3,\"world\":4,\"##s\":5,\"h\xc3\xa9llo\":6,"
    "\"<m>\":7,\",\":8,\"w\":9,\"##orld\":10,\"a\":11}}}";

static void test_custom(void) {
    com_tokenizer_t *tok = NULL;
    com_error_t err;
    int rc = com_tokenizer_from_json(s_custom_json, strlen(s_custom_json), &tok, &err);
    CHECK_MSG(rc == 0, "custom: %s", err.msg);
    if (rc)
        return;
    CHECK(com_tokenizer_vocab_size(tok) == 15);
    CHECK(com_tokenizer_token_to_id(tok, "Tok") == 13);
    CHECK(com_tokenizer_token_to_id(tok, "<mask>") == 12);
    CHECK_ENC(tok, "H\xc3\xa9llo world", 1, 6, 4, 2); /* accents kept */
    CHECK_ENC(tok, "hello  <mask>  world", 1, 3, 12, 4, 2);
    CHECK_ENC(tok, "hello <mask>", 1, 3, 12, 2);
    CHECK_ENC(tok, "a tok b", 1, 11, 13, 0, 2); /* normalized token matches lowercased text */
    CHECK_ENC(tok, "atok b", 1, 0, 0, 2);       /* single_word: inside a word, no match */
    CHECK_ENC(tok, "TOK", 1, 13, 2);
    CHECK_ENC(tok, "a[X]b", 1, 11, 14, 0, 2);
    CHECK_ENC(tok, "worlds", 1, 0, 2);     /* 6 chars > 5 */
    CHECK_ENC(tok, "helloworld", 1, 0, 2); /* too long */
    CHECK_ENC(tok, "w,orld", 1, 9, 8, 0, 2);
    com_encoding_t e;
    com_encoding_init(&e);
    rc = com_tokenizer_encode_pair(tok, "hello", 5, "world", 5, NULL, &e, &err);
    const int32_t w[] = {1, 3, 2, 4, 2}, wt[] = {0, 0, 0, 1, 1};
    CHECK(rc == 0 && s_ids_eq(&e, w, 5) && memcmp(e.type_ids, wt, sizeof wt) == 0);
    com_encode_opts_t o = com_encode_opts_default();
    o.add_special_tokens = false;
    rc = com_tokenizer_encode_pair(tok, "hello", 5, "world", 5, &o, &e, &err);
    CHECK(rc == 0 && e.len == 2 && e.ids[0] == 3 && e.ids[1] == 4 && e.type_ids[0] == 0 &&
          e.type_ids[1] == 1);
    com_encoding_free(&e);
    com_tokenizer_destroy(&tok);
    CHECK(tok == NULL);
    com_tokenizer_destroy(&tok); /* NULL is fine */
    com_tokenizer_destroy(NULL);
}

/* Replaces the first occurrence of `from` in the custom JSON and expects code (message must
 * contain `needle` when given). */
static void s_bad(const char *from, const char *to, int code, const char *needle) {
    const char *at = strstr(s_custom_json, from);
    CHECK_MSG(at != NULL, "pattern %s", from);
    if (!at)
        return;
    size_t n = strlen(s_custom_json) + strlen(to) + 1;
    char *j = malloc(n);
    size_t pre = (size_t)(at - s_custom_json);
    memcpy(j, s_custom_json, pre);
    strcpy(j + pre, to);
    strcat(j, at + strlen(from));
    com_tokenizer_t *tok = NULL;
    com_error_t err;
    com_error_clear(&err);
    int rc = com_tokenizer_from_json(j, strlen(j), &tok, &err);
    CHECK_MSG(rc == code && tok == NULL, "%s -> %s: rc %d (%s), want %d", from, to, rc, err.msg,
              code);
    if (needle)
        CHECK_MSG(strstr(err.msg, needle) != NULL, "message \"%s\" lacks \"%s\"", err.msg, needle);
    com_tokenizer_destroy(&tok);
    free(j);
}

static void test_malformed(void) {
    const char *texts[] = {"",
                           "{",
                           "[]",
                           "null",
                           "{}",
                           "{\"model\":null}",
                           "{\"model\":{}}",
                           "{\"model\":{\"type\":\"WordPiece\"}}",
                           "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        com_tokenizer_t *tok = NULL;
        com_error_t err;
        int rc = com_tokenizer_from_json(texts[i], strlen(texts[i]), &tok, &err);
        CHECK_MSG(rc == COM_EFORMAT && tok == NULL, "text #%zu: rc %d", i, rc);
    }
    s_bad("\"type\":\"WordPiece\"", "\"type\":\"BPE\"", COM_EUNSUPPORTED, "BPE");
    s_bad("\"type\":\"WordPiece\"", "\"type\":\"Unigram\"", COM_EUNSUPPORTED, "Unigram");
    s_bad("\"type\":\"BertNormalizer\"", "\"type\":\"NFKC\"", COM_EUNSUPPORTED, "NFKC");
    s_bad("\"type\":\"BertPreTokenizer\"", "\"type\":\"Metaspace\"", COM_EUNSUPPORTED, "Metaspace");
    s_bad("\"type\":\"BertProcessing\"", "\"type\":\"RobertaProcessing\"", COM_EUNSUPPORTED,
          "RobertaProcessing");
    s_bad("\"hello\":3", "\"hello\":-3", COM_EFORMAT, "hello");
    s_bad("\"hello\":3", "\"hello\":\"3\"", COM_EFORMAT, NULL);
    s_bad("\"hello\":3", "\"hello\":99999999999", COM_EFORMAT, NULL);
    s_bad("\"[UNK]\":0,", "", COM_EFORMAT, "unk_token");
    s_bad("\"sep\":[\"[SEP]\",2]", "\"sep\":[\"[SEP]\",77]", COM_EFORMAT, "77");
    s_bad("\"sep\":[\"[SEP]\",2]", "\"sep\":2", COM_EFORMAT, NULL);
    s_bad("\"added_tokens\":[", "\"added_tokens\":{\"a\":[", COM_EFORMAT, NULL);
    s_bad("\"content\":\"Tok\",", "", COM_EFORMAT, "content");
    s_bad("\"strip_accents\":false", "\"strip_accents\":\"yes\"", COM_EFORMAT, "strip_accents");
    s_bad("\"max_input_chars_per_word\":5", "\"max_input_chars_per_word\":-5", COM_EFORMAT, NULL);
    s_bad("\"vocab\":{", "\"vocab\":[{", COM_EFORMAT, NULL);
    s_bad("{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
          "\"strip_accents\":false,\"lowercase\":true}",
          "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"},{\"type\":\"NFC\"}]}",
          COM_EUNSUPPORTED, "NFC");

    /* TemplateProcessing with a special token that is not declared / out of range */
    const char *tp = "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",2],"
                     "\"cls\":[\"[CLS]\",1]}";
    s_bad(tp,
          "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{"
          "\"id\":\"[Z]\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{}}",
          COM_EFORMAT, "[Z]");
    s_bad(tp,
          "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{"
          "\"id\":\"[Z]\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{\"[Z]\":{\"id\":"
          "\"[Z]\",\"ids\":[4000],\"tokens\":[\"[Z]\"]}}}",
          COM_EFORMAT, "4000");
    s_bad(tp,
          "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{"
          "\"id\":\"B\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":{}}",
          COM_EFORMAT, NULL);

    com_tokenizer_t *tok = NULL;
    com_error_t err;
    CHECK(com_tokenizer_load("/nonexistent/tokenizer.json", &tok, &err) == COM_EIO && !tok);
    CHECK(com_tokenizer_from_json("{}", 2, NULL, &err) == COM_EINVAL);
}

typedef struct s_thread_arg {
    const char **texts;
    int n_texts;
    int32_t *sums; /* [n_texts] checksum of each encoding */
    int rounds;
    int failures;
} s_thread_arg_t;

static int32_t s_checksum(const com_encoding_t *e) {
    uint32_t h = 2166136261u;
    for (int32_t i = 0; i < e->len; i++)
        h = (h ^ (uint32_t)e->ids[i]) * 16777619u;
    return (int32_t)(h & 0x7fffffff);
}

static void *s_thread(void *p) {
    s_thread_arg_t *a = p;
    com_encoding_t e;
    com_encoding_init(&e);
    com_error_t err;
    for (int r = 0; r < a->rounds; r++)
        for (int i = 0; i < a->n_texts; i++) {
            if (com_tokenizer_encode(g_tok, a->texts[i], strlen(a->texts[i]), NULL, &e, &err) ||
                s_checksum(&e) != a->sums[i])
                a->failures++;
        }
    com_encoding_free(&e);
    return NULL;
}

static void test_threads(void) {
    const char *texts[] = {
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog, again and again and again.",
        "\xe4\xb8\xad\xe6\x96\x87 and \xc3\xa9\xc3\xa8 \xf0\x9f\x98\x80 [SEP] [MASK] \xff\xfe",
        "Antidisestablishmentarianism is a long word; so is pneumonoultramicroscopic.",
        "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xce\xb3\xce\xb5\xce\xb9\xce\xac",
    };
    int n = (int)(sizeof texts / sizeof texts[0]);
    int32_t sums[5];
    com_encoding_t e;
    com_encoding_init(&e);
    com_error_t err;
    for (int i = 0; i < n; i++) {
        CHECK(com_tokenizer_encode(g_tok, texts[i], strlen(texts[i]), NULL, &e, &err) == 0);
        sums[i] = s_checksum(&e);
    }
    com_encoding_free(&e);
    s_thread_arg_t args[2] = {{texts, n, sums, 400, 0}, {texts, n, sums, 400, 0}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, s_thread, &args[t]) == 0);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    CHECK(args[0].failures == 0 && args[1].failures == 0);
}

int main(void) {
    test_require_model();
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", test_model_dir());
    com_error_t err;
    int rc = com_tokenizer_load(path, &g_tok, &err);
    CHECK_MSG(rc == 0, "load %s: %s", path, err.msg);
    if (rc)
        return test_finish();
    test_minilm_basics();
    test_truncation();
    test_utf8_repair();
    test_custom();
    test_malformed();
    test_threads();
    com_tokenizer_destroy(&g_tok);
    return test_finish();
}
