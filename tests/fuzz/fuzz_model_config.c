/* tests/fuzz/fuzz_model_config.c — libFuzzer target for com_model_config_parse
 * (common/model_info.c): parses the input as a config.json and, when it parses, checks every
 * documented range (the caps in model_info.h, head_dim * num_heads == hidden_size, pad_token_id
 * inside the vocabulary, layer_norm_eps positive and finite, the sentence-transformers defaults).
 * A broken invariant aborts, which libFuzzer reports as a crash. Seeds:
 * tests/fuzz/seeds/fuzz_model_config/. Single-threaded. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/model_info.h"

static void s_require(int cond) {
    if (!cond)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    com_model_info_t mi;
    com_error_t err = {0};
    int rc = com_model_config_parse((const char *)data, size, &mi, &err);
    if (rc != 0) {
        s_require(err.code == rc && err.msg[0] != '\0');
        s_require(rc == COM_EFORMAT || rc == COM_EUNSUPPORTED || rc == COM_ENOMEM);
        return 0;
    }
    s_require(mi.family == COM_FAMILY_BERT && strcmp(mi.model_type, "bert") == 0);
    s_require(memchr(mi.architecture, '\0', sizeof mi.architecture) != NULL);
    s_require(mi.vocab_size >= 1 && mi.vocab_size <= COM_MODEL_MAX_VOCAB);
    s_require(mi.hidden_size >= 1 && mi.hidden_size <= COM_MODEL_MAX_HIDDEN);
    s_require(mi.num_layers >= 1 && mi.num_layers <= COM_MODEL_MAX_LAYERS);
    s_require(mi.num_heads >= 1 && mi.head_dim * mi.num_heads == mi.hidden_size);
    s_require(mi.intermediate_size >= 1 && mi.intermediate_size <= COM_MODEL_MAX_INTERMEDIATE);
    s_require(mi.max_position_embeddings >= 1 &&
              mi.max_position_embeddings <= COM_MODEL_MAX_POSITIONS);
    s_require(mi.type_vocab_size >= 1 && mi.type_vocab_size <= COM_MODEL_MAX_VOCAB);
    s_require(mi.pad_token_id >= 0 && mi.pad_token_id < mi.vocab_size);
    s_require(mi.layer_norm_eps > 0 && isfinite(mi.layer_norm_eps));
    s_require(mi.hidden_act == COM_ACT_GELU_ERF || mi.hidden_act == COM_ACT_GELU_TANH ||
              mi.hidden_act == COM_ACT_RELU);
    s_require(!mi.sentence_transformers && mi.pooling == COM_POOL_MEAN && !mi.normalize);
    s_require(mi.max_seq_length == mi.max_position_embeddings);
    s_require(mi.embedding_dim == mi.hidden_size);
    return 0;
}
