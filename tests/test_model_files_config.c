/* tests/test_model_files_config.c — common/model_info.c against the real model directory and
 * model directories this test writes into a fresh folder under EMBER_TEST_DATA_DIR.
 *
 * Covers: the real model (mean pooling, normalize, max_seq_length 256, 6 layers, 12 heads,
 * hidden 384); BertConfig defaults; missing directory / config.json (COM_EIO naming the path);
 * malformed JSON, wrong field types, out-of-range numbers (COM_EFORMAT naming the field);
 * unknown model types, activations and position embeddings (COM_EUNSUPPORTED naming the value);
 * sentence-transformers variants: CLS and last-token pooling, no modules.json (mean, no
 * normalisation), custom pooling folder, unsupported modules and pooling modes, path escapes,
 * dimension mismatch, bad max_seq_length; oversize files. Single-threaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/model_info.h"
#include "tests/test_util.h"

static char s_tmp[4096]; /* the scratch folder of this run */
static int s_dir_no;

/* The real config.json's fields, so variants differ from a working model in one place. */
#define S_BASE_FIELDS                                                                              \
    "\"architectures\": [\"BertModel\"], \"hidden_act\": \"gelu\", \"hidden_size\": 384, "         \
    "\"intermediate_size\": 1536, \"layer_norm_eps\": 1e-12, \"max_position_embeddings\": 512, "   \
    "\"model_type\": \"bert\", \"num_attention_heads\": 12, \"num_hidden_layers\": 6, "            \
    "\"pad_token_id\": 0, \"position_embedding_type\": \"absolute\", \"type_vocab_size\": 2, "     \
    "\"vocab_size\": 30522"
#define S_BASE_CONFIG "{" S_BASE_FIELDS "}"

static const char *const s_modules_mean =
    "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
    "\"sentence_transformers.models.Transformer\"},"
    " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
    "\"sentence_transformers.models.Pooling\"},"
    " {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": "
    "\"sentence_transformers.models.Normalize\"}]";

static const char *const s_pool_mean =
    "{\"word_embedding_dimension\": 384, \"pooling_mode_cls_token\": false, "
    "\"pooling_mode_mean_tokens\": true, \"pooling_mode_max_tokens\": false, "
    "\"pooling_mode_mean_sqrt_len_tokens\": false}";

/* Writes text to dir/rel (creating one level of subfolder if rel has a '/'). */
static void s_put(const char *dir, const char *rel, const char *text) {
    char path[4400];
    const char *slash = strchr(rel, '/');
    if (slash) {
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(slash - rel), rel);
        mkdir(path, 0755);
    }
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot create %s", path);
    if (!f)
        return;
    CHECK(fwrite(text, 1, strlen(text), f) == strlen(text));
    fclose(f);
}

/* A new empty model directory named after the case; path in out[4200]. */
static void s_new_dir(const char *name, char *out) {
    snprintf(out, 4200, "%s/%02d_%s", s_tmp, s_dir_no++, name);
    CHECK_MSG(mkdir(out, 0755) == 0, "cannot create %s", out);
}

/* A directory holding config.json = config, and (when modules is not NULL) modules.json and
 * 1_Pooling/config.json = pool. */
static void s_make(const char *name, const char *config, const char *modules, const char *pool,
                   char *out) {
    s_new_dir(name, out);
    if (config)
        s_put(out, "config.json", config);
    if (modules)
        s_put(out, "modules.json", modules);
    if (pool)
        s_put(out, "1_Pooling/config.json", pool);
}

/* Loads dir; checks the code, that a message is there, and that it holds each needle. */
static void s_expect_load(const char *name, const char *dir, int want, const char *needle1,
                          const char *needle2) {
    com_model_info_t mi;
    com_error_t err = {0};
    int rc = com_model_info_load(dir, &mi, &err);
    printf("  %-26s %-13s %s\n", name, com_error_name(rc), err.msg);
    CHECK_MSG(rc == want, "%s: got %s want %s", name, com_error_name(rc), com_error_name(want));
    CHECK_MSG(rc == 0 || (err.code == rc && err.msg[0]), "%s: no message", name);
    if (want == 0)
        return;
    if (needle1)
        CHECK_MSG(strstr(err.msg, needle1) != NULL, "%s: message lacks \"%s\"", name, needle1);
    if (needle2)
        CHECK_MSG(strstr(err.msg, needle2) != NULL, "%s: message lacks \"%s\"", name, needle2);
}

/* A config variant: the base config with extra fields appended (later duplicates are rejected
 * by the parser, so variants replace fields by building the text from scratch). */
static void s_expect_config(const char *name, const char *config, int want, const char *needle) {
    char dir[4200];
    s_make(name, config, NULL, NULL, dir);
    s_expect_load(name, dir, want, needle, "config.json");
}

static void s_test_real(void) {
    printf("real model %s:\n", test_model_dir());
    test_require_model();
    com_model_info_t mi;
    com_error_t err = {0};
    CHECK_MSG(com_model_info_load(test_model_dir(), &mi, &err) == 0, "%s", err.msg);
    printf("  %s/%s: %d layers, %d heads, hidden %d, pooling %s, normalize %d, max_seq %d\n",
           mi.model_type, mi.architecture, mi.num_layers, mi.num_heads, mi.hidden_size,
           com_pooling_name(mi.pooling), mi.normalize, mi.max_seq_length);
    CHECK(strcmp(mi.model_type, "bert") == 0 && strcmp(mi.architecture, "BertModel") == 0);
    CHECK(mi.family == COM_FAMILY_BERT);
    CHECK(mi.pooling == COM_POOL_MEAN && mi.normalize && mi.sentence_transformers);
    CHECK(mi.max_seq_length == 256);
    CHECK(mi.num_layers == 6 && mi.num_heads == 12 && mi.hidden_size == 384 && mi.head_dim == 32);
    CHECK(mi.vocab_size == 30522 && mi.intermediate_size == 1536);
    CHECK(mi.max_position_embeddings == 512 && mi.type_vocab_size == 2 && mi.pad_token_id == 0);
    CHECK(mi.layer_norm_eps == 1e-12f && mi.hidden_act == COM_ACT_GELU_ERF);
    CHECK(mi.embedding_dim == 384);
    /* A trailing slash on the directory is fine. */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/", test_model_dir());
    CHECK(com_model_info_load(dir, &mi, &err) == 0 && mi.max_seq_length == 256);
}

static void s_test_config_fields(void) {
    printf("config.json variants:\n");
    char dir[4200];
    /* Missing directory, missing config.json. */
    snprintf(dir, sizeof dir, "%s/no-such-model", s_tmp);
    s_expect_load("missing_dir", dir, COM_EIO, "no-such-model", NULL);
    s_new_dir("no_config", dir);
    s_expect_load("no_config", dir, COM_EIO, "config.json", NULL);
    com_model_info_t mi;
    CHECK(com_model_info_load(dir, &mi, NULL) == COM_EIO); /* codes right without a message */
    /* config.json that is a directory. */
    s_new_dir("config_is_dir", dir);
    char sub[4400];
    snprintf(sub, sizeof sub, "%s/config.json", dir);
    mkdir(sub, 0755);
    s_expect_load("config_is_dir", dir, COM_EIO, "config.json", NULL);

    s_expect_config("malformed_json", "{\"model_type\": \"bert\", ", COM_EFORMAT, "invalid JSON");
    s_expect_config("empty_file", "", COM_EFORMAT, NULL);
    s_expect_config("top_level_array", "[1]", COM_EFORMAT, "object");
    s_expect_config("duplicate_key", "{\"vocab_size\": 1, \"vocab_size\": 2}", COM_EFORMAT,
                    "duplicate");
    s_expect_config("hidden_size_string",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": \"384\", "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "hidden_size");
    s_expect_config("layers_float",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6.5, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "num_hidden_layers");
    s_expect_config("act_number",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"hidden_act\": 5}",
                    COM_EFORMAT, "hidden_act");
    s_expect_config("extra_fields_ok", "{" S_BASE_FIELDS ", \"use_cache\": true, \"x\": [1]}", 0,
                    NULL);
    s_expect_config("model_type_number",
                    "{\"model_type\": 3, \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "model_type");
    s_expect_config("zero_heads",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 0, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "num_attention_heads");
    s_expect_config("not_divisible",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 7, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "divisible");
    s_expect_config("missing_vocab",
                    "{\"model_type\": \"bert\", \"hidden_size\": 384, \"num_hidden_layers\": 6, "
                    "\"num_attention_heads\": 12, \"intermediate_size\": 1536}",
                    COM_EFORMAT, "vocab_size");
    s_expect_config("vocab_2^31",
                    "{\"model_type\": \"bert\", \"vocab_size\": 2147483648, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "vocab_size");
    s_expect_config("layers_257",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 257, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "num_hidden_layers");
    s_expect_config("hidden_negative",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": -384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536}",
                    COM_EFORMAT, "hidden_size");
    s_expect_config("gpt2", "{\"model_type\": \"gpt2\", \"vocab_size\": 50257, \"n_embd\": 768}",
                    COM_EUNSUPPORTED, "gpt2");
    s_expect_config("roberta_arch",
                    "{\"architectures\": [\"RobertaModel\"], \"vocab_size\": 50265, "
                    "\"hidden_size\": 768, \"num_hidden_layers\": 12, "
                    "\"num_attention_heads\": 12, \"intermediate_size\": 3072}",
                    COM_EUNSUPPORTED, "RobertaModel");
    s_expect_config("no_type_no_arch",
                    "{\"vocab_size\": 30522, \"hidden_size\": 384, \"num_hidden_layers\": 6, "
                    "\"num_attention_heads\": 12, \"intermediate_size\": 1536}",
                    COM_EUNSUPPORTED, "model_type");
    s_expect_config("archs_empty", "{\"model_type\": \"bert\", \"architectures\": []}", COM_EFORMAT,
                    "architectures");
    s_expect_config("act_swish",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"hidden_act\": \"swish\"}",
                    COM_EUNSUPPORTED, "swish");
    s_expect_config("pos_relative",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"position_embedding_type\": \"relative_key\"}",
                    COM_EUNSUPPORTED, "relative_key");
    s_expect_config("eps_zero",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"layer_norm_eps\": 0}",
                    COM_EFORMAT, "layer_norm_eps");
    s_expect_config("eps_underflow",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"layer_norm_eps\": 1e-60}",
                    COM_EFORMAT, "layer_norm_eps");
    s_expect_config("eps_string",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"layer_norm_eps\": \"1e-12\"}",
                    COM_EFORMAT, "layer_norm_eps");
    s_expect_config("pad_out_of_vocab",
                    "{\"model_type\": \"bert\", \"vocab_size\": 100, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"pad_token_id\": 100}",
                    COM_EFORMAT, "pad_token_id");
    s_expect_config("positions_huge",
                    "{\"model_type\": \"bert\", \"vocab_size\": 30522, \"hidden_size\": 384, "
                    "\"num_hidden_layers\": 6, \"num_attention_heads\": 12, "
                    "\"intermediate_size\": 1536, \"max_position_embeddings\": 131073}",
                    COM_EFORMAT, "max_position_embeddings");

    /* Over the 1 MiB cap. */
    {
        size_t n = (1u << 20) + 16;
        char *big = malloc(n + 1);
        memset(big, ' ', n);
        memcpy(big, "{}", 2);
        big[n] = '\0';
        s_make("oversize", big, NULL, NULL, dir);
        s_expect_load("oversize", dir, COM_ETOOLONG, "config.json", NULL);
        free(big);
    }
}

static void s_test_parse(void) {
    printf("com_model_config_parse:\n");
    com_model_info_t mi;
    com_error_t err = {0};
    /* Required fields only: BertConfig defaults for the rest. */
    const char *minimal = "{\"model_type\": \"bert\", \"vocab_size\": 1000, \"hidden_size\": 64, "
                          "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                          "\"intermediate_size\": 256, \"pad_token_id\": null}";
    CHECK_MSG(com_model_config_parse(minimal, strlen(minimal), &mi, &err) == 0, "%s", err.msg);
    CHECK(mi.max_position_embeddings == 512 && mi.type_vocab_size == 2 && mi.pad_token_id == 0);
    CHECK(mi.layer_norm_eps == 1e-12f && mi.hidden_act == COM_ACT_GELU_ERF && mi.head_dim == 16);
    CHECK(mi.pooling == COM_POOL_MEAN && !mi.normalize && !mi.sentence_transformers);
    CHECK(mi.max_seq_length == 512 && mi.embedding_dim == 64);
    CHECK(mi.architecture[0] == '\0' && strcmp(mi.model_type, "bert") == 0);

    /* Architecture alone is enough. */
    const char *arch = "{\"architectures\": [\"BertForMaskedLM\"], \"vocab_size\": 1000, "
                       "\"hidden_size\": 64, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 4, \"intermediate_size\": 256}";
    CHECK_MSG(com_model_config_parse(arch, strlen(arch), &mi, &err) == 0, "%s", err.msg);
    CHECK(strcmp(mi.architecture, "BertForMaskedLM") == 0 && strcmp(mi.model_type, "bert") == 0);

    static const struct {
        const char *act;
        int rc;
        com_activation_t want;
    } acts[] = {
        {"gelu", 0, COM_ACT_GELU_ERF},
        {"gelu_new", 0, COM_ACT_GELU_TANH},
        {"gelu_pytorch_tanh", 0, COM_ACT_GELU_TANH},
        {"relu", 0, COM_ACT_RELU},
        {"swish", COM_EUNSUPPORTED, 0},
        {"gelu_fast", COM_EUNSUPPORTED, 0},
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"model_type\": \"bert\", \"vocab_size\": 1000, \"hidden_size\": 64, "
                 "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                 "\"intermediate_size\": 256, \"hidden_act\": \"%s\"}",
                 acts[i].act);
        com_error_clear(&err);
        int rc = com_model_config_parse(text, strlen(text), &mi, &err);
        CHECK_MSG(rc == acts[i].rc, "hidden_act %s: %s", acts[i].act, com_error_name(rc));
        if (rc == 0)
            CHECK(mi.hidden_act == acts[i].want);
        else
            CHECK(strstr(err.msg, acts[i].act) && strstr(err.msg, "hidden_act"));
        if (rc)
            printf("  hidden_act %-18s %s\n", acts[i].act, err.msg);
    }
    /* NUL inside the text is not JSON; NUL inside a string value is not "bert". */
    const char nul_text[] = "{\"model_type\": \"bert\"}\0garbage";
    CHECK(com_model_config_parse(nul_text, sizeof nul_text - 1, &mi, &err) == COM_EFORMAT);
    const char *nul_val = "{\"model_type\": \"be\\u0000rt\"}";
    CHECK(com_model_config_parse(nul_val, strlen(nul_val), &mi, &err) == COM_EUNSUPPORTED);
    printf("  NUL in model_type: %s\n", err.msg);
    CHECK(com_model_config_parse(NULL, 0, &mi, &err) == COM_EFORMAT);
    CHECK(strcmp(com_pooling_name(COM_POOL_CLS), "cls") == 0);
    CHECK(strcmp(com_pooling_name(COM_POOL_LAST), "last") == 0);
}

static void s_test_sentence_transformers(void) {
    printf("sentence-transformers variants:\n");
    char dir[4200];
    com_model_info_t mi;
    com_error_t err = {0};

    /* No modules.json: mean pooling, no normalisation, max_seq_length = positions. */
    s_make("no_modules", S_BASE_CONFIG, NULL, NULL, dir);
    CHECK_MSG(com_model_info_load(dir, &mi, &err) == 0, "%s", err.msg);
    CHECK(!mi.sentence_transformers && mi.pooling == COM_POOL_MEAN && !mi.normalize);
    CHECK(mi.max_seq_length == 512);
    /* ... but sentence_bert_config.json still sets the length. */
    s_put(dir, "sentence_bert_config.json", "{\"max_seq_length\": 128, \"do_lower_case\": true}");
    CHECK_MSG(com_model_info_load(dir, &mi, &err) == 0, "%s", err.msg);
    CHECK(mi.max_seq_length == 128);

    /* CLS pooling, no Normalize module. */
    s_make("cls", S_BASE_CONFIG,
           "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
           "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", "
           "\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
           "{\"word_embedding_dimension\": 384, \"pooling_mode_cls_token\": true, "
           "\"pooling_mode_mean_tokens\": false, \"pooling_mode_max_tokens\": false, "
           "\"pooling_mode_mean_sqrt_len_tokens\": false}",
           dir);
    CHECK_MSG(com_model_info_load(dir, &mi, &err) == 0, "%s", err.msg);
    CHECK(mi.sentence_transformers && mi.pooling == COM_POOL_CLS && !mi.normalize);
    CHECK(mi.max_seq_length == 512);

    /* Last-token pooling in a folder of another name, with Normalize. */
    s_make("last", S_BASE_CONFIG,
           "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
           "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", "
           "\"path\": \"pool/x\", \"type\": \"sentence_transformers.models.Pooling\"}, "
           "{\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": "
           "\"sentence_transformers.models.Normalize\"}]",
           NULL, dir);
    s_put(dir, "pool/config.json", "{}"); /* creates pool/ */
    {
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/pool", dir);
        s_put(sub, "x/config.json",
              "{\"word_embedding_dimension\": 384, \"pooling_mode_lasttoken\": true}");
    }
    CHECK_MSG(com_model_info_load(dir, &mi, &err) == 0, "%s", err.msg);
    CHECK(mi.pooling == COM_POOL_LAST && mi.normalize);

    /* Mean + Normalize with a sentence_bert_config.json, like the real model. */
    s_make("mean_norm", S_BASE_CONFIG, s_modules_mean, s_pool_mean, dir);
    s_put(dir, "sentence_bert_config.json", "{\"max_seq_length\": 256}");
    CHECK_MSG(com_model_info_load(dir, &mi, &err) == 0, "%s", err.msg);
    CHECK(mi.pooling == COM_POOL_MEAN && mi.normalize && mi.max_seq_length == 256);

    s_make("two_modes", S_BASE_CONFIG, s_modules_mean,
           "{\"word_embedding_dimension\": 384, \"pooling_mode_cls_token\": true, "
           "\"pooling_mode_mean_tokens\": true}",
           dir);
    s_expect_load("two_modes", dir, COM_EUNSUPPORTED, "1_Pooling/config.json", "pooling_mode");
    s_make("max_mode", S_BASE_CONFIG, s_modules_mean,
           "{\"word_embedding_dimension\": 384, \"pooling_mode_max_tokens\": true}", dir);
    s_expect_load("max_mode", dir, COM_EUNSUPPORTED, "1_Pooling/config.json",
                  "pooling_mode_max_tokens");
    s_make("sqrt_mode", S_BASE_CONFIG, s_modules_mean,
           "{\"word_embedding_dimension\": 384, \"pooling_mode_mean_sqrt_len_tokens\": true}", dir);
    s_expect_load("sqrt_mode", dir, COM_EUNSUPPORTED, "1_Pooling/config.json",
                  "pooling_mode_mean_sqrt_len_tokens");
    s_make("no_mode", S_BASE_CONFIG, s_modules_mean, "{\"word_embedding_dimension\": 384}", dir);
    s_expect_load("no_mode", dir, COM_EFORMAT, "1_Pooling/config.json", "pooling_mode");
    s_make("mode_not_bool", S_BASE_CONFIG, s_modules_mean,
           "{\"word_embedding_dimension\": 384, \"pooling_mode_mean_tokens\": 1}", dir);
    s_expect_load("mode_not_bool", dir, COM_EFORMAT, "1_Pooling/config.json",
                  "pooling_mode_mean_tokens");
    s_make("dim_mismatch", S_BASE_CONFIG, s_modules_mean,
           "{\"word_embedding_dimension\": 768, \"pooling_mode_mean_tokens\": true}", dir);
    s_expect_load("dim_mismatch", dir, COM_EFORMAT, "1_Pooling/config.json",
                  "word_embedding_dimension");
    CHECK(com_model_info_load(dir, &mi, NULL) == COM_EFORMAT);
    s_make("dim_missing", S_BASE_CONFIG, s_modules_mean, "{\"pooling_mode_mean_tokens\": true}",
           dir);
    s_expect_load("dim_missing", dir, COM_EFORMAT, "1_Pooling/config.json",
                  "word_embedding_dimension");
    s_make("pool_dir_missing", S_BASE_CONFIG, s_modules_mean, NULL, dir);
    s_expect_load("pool_dir_missing", dir, COM_EIO, "1_Pooling/config.json", NULL);
    CHECK(com_model_info_load(dir, &mi, NULL) == COM_EIO);
    s_make("pool_bad_json", S_BASE_CONFIG, s_modules_mean, "{\"pooling", dir);
    s_expect_load("pool_bad_json", dir, COM_EFORMAT, "1_Pooling/config.json", NULL);

    s_make("modules_not_array", S_BASE_CONFIG, "{\"a\": 1}", s_pool_mean, dir);
    s_expect_load("modules_not_array", dir, COM_EFORMAT, "modules.json", NULL);
    s_make("modules_bad_json", S_BASE_CONFIG, "[{", s_pool_mean, dir);
    s_expect_load("modules_bad_json", dir, COM_EFORMAT, "modules.json", NULL);
    s_make("module_no_type", S_BASE_CONFIG, "[{\"path\": \"1_Pooling\"}]", s_pool_mean, dir);
    s_expect_load("module_no_type", dir, COM_EFORMAT, "modules.json", "type");
    s_make("dense_module", S_BASE_CONFIG,
           "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
           " {\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},"
           " {\"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}]",
           s_pool_mean, dir);
    s_expect_load("dense_module", dir, COM_EUNSUPPORTED, "modules.json",
                  "sentence_transformers.models.Dense");
    s_make("no_pooling_module", S_BASE_CONFIG,
           "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"}]", NULL, dir);
    s_expect_load("no_pooling_module", dir, COM_EUNSUPPORTED, "modules.json", "Pooling");
    s_make("pooling_escape", S_BASE_CONFIG,
           "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
           " {\"path\": \"../1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
           s_pool_mean, dir);
    s_expect_load("pooling_escape", dir, COM_EFORMAT, "modules.json", "path");
    s_make("pooling_absolute", S_BASE_CONFIG,
           "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
           " {\"path\": \"/etc\", \"type\": \"sentence_transformers.models.Pooling\"}]",
           s_pool_mean, dir);
    s_expect_load("pooling_absolute", dir, COM_EFORMAT, "modules.json", "path");
    s_make("transformer_subdir", S_BASE_CONFIG,
           "[{\"path\": \"0_BERT\", \"type\": \"sentence_transformers.models.Transformer\"},"
           " {\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
           s_pool_mean, dir);
    s_expect_load("transformer_subdir", dir, COM_EUNSUPPORTED, "modules.json", "Transformer");
    s_make("normalize_first", S_BASE_CONFIG,
           "[{\"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
           " {\"path\": \"2\", \"type\": \"sentence_transformers.models.Normalize\"},"
           " {\"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]",
           s_pool_mean, dir);
    s_expect_load("normalize_first", dir, COM_EUNSUPPORTED, "modules.json", "Normalize");

    s_make("max_seq_too_big", S_BASE_CONFIG, s_modules_mean, s_pool_mean, dir);
    s_put(dir, "sentence_bert_config.json", "{\"max_seq_length\": 513}");
    s_expect_load("max_seq_too_big", dir, COM_EFORMAT, "sentence_bert_config.json",
                  "max_seq_length");
    s_make("max_seq_zero", S_BASE_CONFIG, s_modules_mean, s_pool_mean, dir);
    s_put(dir, "sentence_bert_config.json", "{\"max_seq_length\": 0}");
    s_expect_load("max_seq_zero", dir, COM_EFORMAT, "sentence_bert_config.json", "max_seq_length");
    s_make("max_seq_bad_json", S_BASE_CONFIG, s_modules_mean, s_pool_mean, dir);
    s_put(dir, "sentence_bert_config.json", "max_seq_length=1");
    s_expect_load("max_seq_bad_json", dir, COM_EFORMAT, "sentence_bert_config.json", NULL);
    /* A model-config error still wins over the sentence-transformers files. */
    s_make("gpt2_with_modules", "{\"model_type\": \"gpt2\"}", s_modules_mean, s_pool_mean, dir);
    s_expect_load("gpt2_with_modules", dir, COM_EUNSUPPORTED, "gpt2", "config.json");
    CHECK(com_model_info_load(dir, &mi, NULL) == COM_EUNSUPPORTED);
    CHECK(com_model_info_load(NULL, &mi, NULL) == COM_EINVAL);
}

int main(void) {
    test_require_model(); /* before the scratch folder, so a missing model leaves nothing */
    if (test_scratch_dir("model_files_config", s_tmp, sizeof s_tmp) != 0) {
        fprintf(stderr, "cannot create a scratch folder under %s\n", test_data_dir());
        return 1;
    }
    s_test_real();
    s_test_parse();
    s_test_config_fields();
    s_test_sentence_transformers();
    test_rm_tree(s_tmp);
    return test_finish();
}
