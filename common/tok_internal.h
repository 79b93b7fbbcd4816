/* common/tok_internal.h — the tokenizer's private types, shared by tokenizer.c (load, added
 * tokens, post-processing, truncation, encode) and the stage files: tok_normalizer.c,
 * tok_pretokenizer.c, tok_vocab.c (the token -> id hash table), tok_wordpiece.c.
 *
 * Pipeline (mirrors Hugging Face `tokenizers`): repair UTF-8 -> split out non-normalized added
 * tokens in the raw text -> normalize each remaining piece -> split out normalized added tokens
 * -> pre-tokenize into words -> model (WordPiece) -> post-processor template -> truncation.
 * Each stage is a tagged union: a new kind (BPE, Unigram, Metaspace, ByteLevel, NFKC...) adds an
 * enum value, its parse and its apply function; the loader refuses unknown kinds with
 * COM_EUNSUPPORTED naming the component.
 *
 * Invariants: a loaded com_tokenizer_t is never written again (encode is const and keeps all
 * working memory in tok_scratch_t, one per com_encoding_t). Every id held anywhere is in
 * [0, tok->n_ids). Text inside the pipeline is always valid UTF-8. */
#ifndef EMBER_COMMON_TOK_INTERNAL_H
#define EMBER_COMMON_TOK_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/tokenizer.h"

/* Limits on what a tokenizer.json may hold (untrusted input). */
#define TOK_MAX_VOCAB       (1 << 22) /* entries in the model vocabulary */
#define TOK_MAX_TOKEN_BYTES 1024      /* bytes in one vocabulary / added token */
#define TOK_MAX_ADDED       16384     /* added tokens */
#define TOK_MAX_TEMPLATE    64        /* pieces in a post-processor template */
#define TOK_MAX_SPECIAL_IDS 16        /* ids one template special token expands to */
#define TOK_MAX_NORMALIZERS 16        /* entries in a Sequence normalizer */
#define TOK_MAX_WORD_CHARS  1000000   /* max_input_chars_per_word */

/* ---- growable buffers (scratch) ---- */
typedef struct tok_buf {
    char *p;
    size_t len, cap;
} tok_buf_t;

typedef struct tok_span {
    uint32_t off, len; /* byte range in the buffer the span refers to */
} tok_span_t;

typedef struct tok_ids {
    int32_t *p;
    int32_t len, cap;
} tok_ids_t;

/* Per-encoding working memory (hangs off com_encoding_t.scratch). */
typedef struct tok_scratch {
    tok_buf_t text;  /* repaired input */
    tok_buf_t norm;  /* normalized piece */
    tok_buf_t norm2; /* second buffer for Sequence normalizers */
    tok_span_t *words;
    size_t words_cap;
    uint32_t *marks; /* pending combining marks during NFD reordering */
    size_t marks_cap;
    tok_ids_t a, b; /* model output of the first and second sequence */
} tok_scratch_t;

int tok_buf_reserve(tok_buf_t *b, size_t need);
int tok_ids_push(tok_ids_t *v, int32_t id);

/* ---- vocabulary: open-addressing hash table token bytes -> id ---- */
typedef struct tok_vocab {
    uint64_t *slots; /* [mask+1] hash32 << 32 | (entry index + 1); 0 = empty */
    uint32_t mask;
    int32_t n_entries;
    char *pool;        /* all token bytes, each NUL-terminated */
    uint32_t *tok_off; /* [n_entries] offset in pool */
    uint32_t *tok_len; /* [n_entries] byte length */
    int32_t *tok_id;   /* [n_entries] id */
    int32_t max_id;    /* largest id, -1 when empty */
    uint32_t max_len;  /* longest token in bytes */
} tok_vocab_t;

/* Incremental 64-bit FNV-1a over bytes; tok_hash_final folds it to the 32-bit table hash. */
#define TOK_HASH_INIT 0xcbf29ce484222325ULL
static inline uint64_t tok_hash_step(uint64_t h, unsigned char c) {
    return (h ^ c) * 0x100000001b3ULL;
}
static inline uint32_t tok_hash_final(uint64_t h) {
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return (uint32_t)h;
}
static inline uint64_t tok_hash_bytes(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        h = tok_hash_step(h, (unsigned char)s[i]);
    return h;
}

/* Builds from parallel arrays (tokens need not be NUL-terminated). Duplicate token strings are
 * COM_EFORMAT. Returns 0 or COM_ENOMEM / COM_EFORMAT. */
int tok_vocab_build(tok_vocab_t *v, int32_t n, const char *const *toks, const uint32_t *lens,
                    const int32_t *ids, com_error_t *err);
void tok_vocab_free(tok_vocab_t *v);
/* Id of s[0..n) given its finished hash (tok_hash_final), or -1. */
int32_t tok_vocab_find_h(const tok_vocab_t *v, uint32_t h, const char *s, size_t n);
int32_t tok_vocab_find(const tok_vocab_t *v, const char *s, size_t n);
/* Same for the concatenation a[0..na) b[0..nb) (WordPiece's prefix + piece), h its hash. */
int32_t tok_vocab_find2_h(const tok_vocab_t *v, uint32_t h, const char *a, size_t na, const char *b,
                          size_t nb);

/* ---- normalizers ---- */
typedef enum tok_norm_kind {
    TOK_NORM_NONE = 0,
    TOK_NORM_CHARWISE, /* BertNormalizer, Lowercase, NFD: one configurable char-wise pass */
    TOK_NORM_SEQUENCE,
} tok_norm_kind_t;

typedef struct tok_norm_pass {
    bool clean_text;    /* drop NUL, U+FFFD and Cc/Cf/Co; whitespace -> ' ' */
    bool cjk_spacing;   /* ' ' around CJK ideographs */
    bool nfd;           /* canonical decomposition + reordering */
    bool drop_mn;       /* drop nonspacing marks (after NFD) */
    bool lowercase;     /* char::to_lowercase */
    int16_t ascii[128]; /* output byte for an ASCII input byte, -1 = drop */
} tok_norm_pass_t;

typedef struct tok_normalizer {
    tok_norm_kind_t kind;
    int n_pass;
    tok_norm_pass_t pass[TOK_MAX_NORMALIZERS];
} tok_normalizer_t;

/* Parses the "normalizer" value (NULL or JSON null: none). */
int tok_normalizer_parse(tok_normalizer_t *n, const json_t *j, com_error_t *err);
/* Normalizes in[0..len) (valid UTF-8) into s->norm (replacing it); may use s->norm2. Returns 0
 * or COM_ENOMEM. After it, s->norm holds the result. */
int tok_normalize(const tok_normalizer_t *n, const char *in, size_t len, tok_scratch_t *s);

/* ---- pre-tokenizers ---- */
typedef enum tok_pretok_kind {
    TOK_PRETOK_NONE = 0,   /* the whole piece is one word */
    TOK_PRETOK_BERT,       /* split on whitespace (removed), isolate each punctuation char */
    TOK_PRETOK_WHITESPACE, /* WhitespaceSplit: split on whitespace only */
} tok_pretok_kind_t;

typedef struct tok_pretok {
    tok_pretok_kind_t kind;
    uint8_t ascii[128]; /* per ASCII byte: 0 word, 1 whitespace (split, dropped), 2 isolated */
} tok_pretok_t;

int tok_pretok_parse(tok_pretok_t *p, const json_t *j, com_error_t *err);
/* Splits s[0..len) into words appended to *words (spans relative to s), growing the array.
 * Returns the number of words or COM_ENOMEM. */
int64_t tok_pretok_split(const tok_pretok_t *p, const char *s, size_t len, tok_scratch_t *sc);

/* ---- models ---- */
typedef enum tok_model_kind {
    TOK_MODEL_WORDPIECE = 1,
} tok_model_kind_t;

typedef struct tok_wordpiece {
    tok_vocab_t vocab;
    int32_t unk_id;
    char prefix[64]; /* continuing_subword_prefix */
    uint32_t prefix_len;
    uint64_t prefix_hash; /* hash state after the prefix */
    int32_t max_chars;    /* max_input_chars_per_word */
} tok_wordpiece_t;

typedef struct tok_model {
    tok_model_kind_t kind;
    tok_wordpiece_t wp;
} tok_model_t;

int tok_model_parse(tok_model_t *m, const json_t *j, com_error_t *err);
void tok_model_free(tok_model_t *m);
/* Number of entries in the model's vocabulary (HF Model::get_vocab_size). */
int32_t tok_model_vocab_size(const tok_model_t *m);
int32_t tok_model_token_to_id(const tok_model_t *m, const char *s, size_t n);
/* Tokenizes one word s[0..len) (valid UTF-8, len > 0), appending ids. 0 or COM_ENOMEM. */
int tok_model_tokenize(const tok_model_t *m, const char *s, size_t len, tok_ids_t *out);

/* ---- added tokens ---- */
typedef struct tok_added {
    char *content; /* NUL-terminated; for normalized tokens the normalized form is `match` */
    char *match;   /* bytes matched in the text (content, or its normalized form) */
    uint32_t match_len;
    int32_t id;
    bool special, single_word, lstrip, rstrip, normalized;
} tok_added_t;

/* A matcher over a set of added tokens: leftmost-longest, non-overlapping. */
typedef struct tok_matcher {
    int32_t n;
    int32_t *order;     /* [n] indexes into tok->added, by first byte then longest first */
    int32_t first[257]; /* order[first[b]..first[b+1]) start with byte b */
} tok_matcher_t;

/* ---- post-processor ---- */
typedef struct tok_piece {
    bool is_seq;     /* $A / $B, else a special token */
    int seq;         /* 0 = A, 1 = B */
    int32_t type_id; /* type id of the piece */
    int32_t n_ids;   /* special token: its ids */
    int32_t ids[TOK_MAX_SPECIAL_IDS];
} tok_piece_t;

typedef struct tok_template {
    int n;
    tok_piece_t p[TOK_MAX_TEMPLATE];
    int32_t n_special; /* ids added by the special pieces */
} tok_template_t;

typedef enum tok_post_kind {
    TOK_POST_NONE = 0,
    TOK_POST_TEMPLATE, /* TemplateProcessing and BertProcessing (as a template) */
} tok_post_kind_t;

struct com_tokenizer {
    tok_normalizer_t norm;
    tok_pretok_t pretok;
    tok_model_t model;
    tok_post_kind_t post_kind;
    tok_template_t single, pair;
    tok_added_t *added; /* [n_added] in trie order: special tokens first, then the others */
    int32_t n_added;
    tok_matcher_t raw_matcher;  /* non-normalized added tokens, on the raw text */
    tok_matcher_t norm_matcher; /* normalized added tokens, on normalized pieces */
    int32_t n_ids;              /* one past the largest id (model or added) */
    char **id_tokens;           /* [n_ids] token string of each id (NULL if none), owned */
};

#endif
