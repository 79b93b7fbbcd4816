/* common/model_info.h — what a Hugging Face model directory says about its model: config.json
 * (architecture and shapes) and the sentence-transformers files (modules.json,
 * 1_Pooling/config.json or the pooling folder modules.json names, the Normalize module,
 * sentence_bert_config.json's max_seq_length).
 *
 * Every number is range-checked so later code can size buffers from it; an unknown architecture
 * is COM_EUNSUPPORTED, a missing config.json COM_EIO, a malformed one COM_EFORMAT, always with a
 * message naming the file and field. Pure data, no handles: copy freely. */
#ifndef EMBER_COMMON_MODEL_INFO_H
#define EMBER_COMMON_MODEL_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum com_family {
    COM_FAMILY_BERT = 0, /* BertModel / BertForMaskedLM ...: the encoder families we run now */
} com_family_t;

typedef enum com_pooling {
    COM_POOL_CLS = 0,
    COM_POOL_MEAN,
    COM_POOL_LAST, /* last token (Qwen3 embedders, later) */
} com_pooling_t;

typedef enum com_activation {
    COM_ACT_GELU_ERF = 0, /* "gelu": exact erf GELU, as BERT uses */
    COM_ACT_GELU_TANH,    /* "gelu_new" / "gelu_pytorch_tanh" */
    COM_ACT_RELU,
} com_activation_t;

/* Upper bounds that every loaded config must satisfy (sizes buffers safely). */
#define COM_MODEL_MAX_HIDDEN       16384
#define COM_MODEL_MAX_LAYERS       256
#define COM_MODEL_MAX_VOCAB        1048576
#define COM_MODEL_MAX_POSITIONS    131072
#define COM_MODEL_MAX_INTERMEDIATE 65536 /* feed-forward width (4 x the hidden cap) */

typedef struct com_model_info {
    /* config.json */
    char model_type[32];   /* "bert" */
    char architecture[64]; /* architectures[0] if present, e.g. "BertModel" */
    com_family_t family;
    int32_t vocab_size;
    int32_t hidden_size;
    int32_t num_layers;
    int32_t num_heads;
    int32_t head_dim; /* hidden_size / num_heads (must divide) */
    int32_t intermediate_size;
    int32_t max_position_embeddings;
    int32_t type_vocab_size;
    int32_t pad_token_id;
    float layer_norm_eps;
    com_activation_t hidden_act;
    /* sentence-transformers. Without modules.json we do what sentence-transformers does when
     * it wraps a plain Hugging Face model: MEAN pooling, normalize false; max_seq_length comes
     * from sentence_bert_config.json when present, else max_position_embeddings. */
    bool sentence_transformers; /* modules.json present */
    com_pooling_t pooling;
    bool normalize;         /* a sentence_transformers.models.Normalize module is listed */
    int32_t max_seq_length; /* tokens per sequence, special tokens included */
    int32_t embedding_dim;  /* output width (== hidden_size for these models) */
} com_model_info_t;

/* Loads everything above from dir. Returns 0 or a negative code; *info is unspecified on error. */
int com_model_info_load(const char *dir, com_model_info_t *info, com_error_t *err);

/* Parses a config.json text alone into info (sentence-transformers fields get defaults). For
 * tests and fuzzing; com_model_info_load uses it. */
int com_model_config_parse(const char *json_text, size_t len, com_model_info_t *info,
                           com_error_t *err);

const char *com_pooling_name(com_pooling_t p);

#endif
