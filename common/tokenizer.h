/* common/tokenizer.h — a C implementation of the Hugging Face tokenizer.json pipeline:
 * normalizer -> pre-tokenizer -> model -> post-processor, with truncation.
 *
 * Supported now (the BERT family): BertNormalizer, BertPreTokenizer, WordPiece, and the
 * TemplateProcessing / BertProcessing post-processors for single texts and pairs (type ids for
 * cross-encoders). Byte-level BPE and Unigram slot in as further model kinds. Output ids are
 * identical to Hugging Face `tokenizers` for the same tokenizer.json and text.
 *
 * Input text is UTF-8; invalid sequences are repaired, each maximal invalid subpart becoming
 * U+FFFD exactly as Python's bytes.decode("utf-8", "replace") does (so results match what a
 * Python caller of `tokenizers` sees after decoding), never refused.
 *
 * Thread-safety: a loaded tokenizer is immutable; encode may run on many threads at once, each
 * with its own com_encoding_t. */
#ifndef EMBER_COMMON_TOKENIZER_H
#define EMBER_COMMON_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct com_tokenizer com_tokenizer_t;

/* Loads path (a tokenizer.json of at most 64 MiB). Unsupported components are
 * COM_EUNSUPPORTED naming the component; malformed JSON or fields COM_EFORMAT. */
int com_tokenizer_load(const char *path, com_tokenizer_t **out, com_error_t *err);
/* Same from text in memory (tests, fuzzing). */
int com_tokenizer_from_json(const char *json, size_t len, com_tokenizer_t **out, com_error_t *err);
void com_tokenizer_destroy(com_tokenizer_t **self_p);

/* One encoded input. Grows as needed; reuse it across calls to avoid allocation. */
typedef struct com_encoding {
    int32_t *ids;      /* [len] token ids */
    int32_t *type_ids; /* [len] token type (segment) ids: 0 for the first text, 1 for the second */
    int32_t len;
    int32_t cap;
    int32_t n_untruncated; /* tokens (special ones included) before truncation */
    /* Added: the tokenizer's private working memory for this encoding (owned, freed by
     * com_encoding_free, NULL until the first encode). Keeps a reused encoding allocation-free
     * and lets many threads share one tokenizer. */
    void *scratch;
} com_encoding_t;

void com_encoding_init(com_encoding_t *enc);
void com_encoding_free(com_encoding_t *enc);

typedef struct com_encode_opts {
    int32_t max_length;      /* total tokens incl. special tokens; 0 = no limit */
    bool truncate;           /* over max_length: true cuts (longest-first for pairs, from the
                                right), false fails with COM_ETOOLONG */
    bool add_special_tokens; /* apply the post-processor template ([CLS] ... [SEP]) */
} com_encode_opts_t;

/* Defaults: no limit, truncate, special tokens on. */
com_encode_opts_t com_encode_opts_default(void);

/* Encodes text[0..len) into enc (replacing its contents). Returns 0, or COM_ETOOLONG (only when
 * opts->truncate is false), COM_EINVAL (max_length too small to hold the special tokens),
 * COM_ENOMEM. On error enc->len is 0. */
int com_tokenizer_encode(const com_tokenizer_t *tok, const char *text, size_t len,
                         const com_encode_opts_t *opts, com_encoding_t *enc, com_error_t *err);
/* Encodes a pair (query, document) with the pair template and type ids. Same returns. */
int com_tokenizer_encode_pair(const com_tokenizer_t *tok, const char *a, size_t alen, const char *b,
                              size_t blen, const com_encode_opts_t *opts, com_encoding_t *enc,
                              com_error_t *err);

int32_t com_tokenizer_vocab_size(const com_tokenizer_t *tok);
/* Id of a token string, or -1. */
int32_t com_tokenizer_token_to_id(const com_tokenizer_t *tok, const char *token);
/* Token string of an id (owned by tok), or NULL when out of range. */
const char *com_tokenizer_id_to_token(const com_tokenizer_t *tok, int32_t id);
/* Special tokens added around a single text / a pair by the post-processor. */
int32_t com_tokenizer_num_special_tokens(const com_tokenizer_t *tok, bool pair);

#endif
