/* common/model_info.c — see model_info.h. Reads config.json and the sentence-transformers files
 * of a model directory into a com_model_info_t, range-checking every number.
 *
 * config.json: model_type must be "bert" when present; architectures[0], when present, must be
 * one of the BERT heads in s_bert_archs; at least one of the two must be there. vocab_size,
 * hidden_size, num_hidden_layers, num_attention_heads and intermediate_size are required (they
 * size the weights); the rest default as in transformers' BertConfig (hidden_act "gelu",
 * max_position_embeddings 512, type_vocab_size 2, pad_token_id 0, layer_norm_eps 1e-12,
 * position_embedding_type "absolute", the only one supported).
 *
 * Sentence-transformers: modules.json may list only Transformer (at path "", the directory
 * itself), exactly one Pooling and optionally Normalize after it; any other module (Dense,
 * LayerNorm, custom code) is COM_EUNSUPPORTED because we would compute a different embedding.
 * The Pooling folder's config.json must set exactly one pooling_mode_* flag (cls, mean or
 * lasttoken are supported) and word_embedding_dimension == hidden_size. Module paths must be
 * relative without "..". Without modules.json we do what sentence-transformers does when it wraps
 * a plain Hugging Face model: mean pooling, no normalisation. sentence_bert_config.json, when
 * present, gives max_seq_length in [1, max_position_embeddings]; otherwise it is
 * max_position_embeddings. Every file read is capped at S_MAX_CONFIG bytes.
 *
 * Errors name the file and the field. Thread-safety: pure functions, no shared state. */
#include "common/model_info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/json.h"

#define S_MAX_CONFIG  ((size_t)1 << 20) /* bytes per JSON file */
#define S_MAX_MODULES 64                /* entries in modules.json */
#define S_PATH_MAX    4096

static const char *const s_bert_archs[] = {
    "BertModel",
    "BertForMaskedLM",
    "BertForPreTraining",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "BertForMultipleChoice",
    "BertForNextSentencePrediction",
    "BertLMHeadModel",
};

const char *com_pooling_name(com_pooling_t p) {
    switch (p) {
    case COM_POOL_CLS:
        return "cls";
    case COM_POOL_MEAN:
        return "mean";
    case COM_POOL_LAST:
        return "last";
    }
    return "?";
}

/* Copies a JSON string into out[cap] for messages: printable ASCII, others as '?', truncated
 * with "..." when long. */
static void s_printable(char *out, size_t cap, const json_t *s) {
    const char *v = json_string_value(s);
    size_t n = json_string_length(s), o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 4 >= cap) {
            memcpy(out + o, "...", 4);
            return;
        }
        unsigned char c = (unsigned char)v[i];
        out[o++] = (c >= 0x20 && c < 0x7f && c != '"') ? (char)c : '?';
    }
    out[o] = '\0';
}

/* True if the JSON string s equals lit exactly (NUL-safe). */
static bool s_str_eq(const json_t *s, const char *lit) {
    size_t n = strlen(lit);
    return json_is_string(s) && json_string_length(s) == n &&
           memcmp(json_string_value(s), lit, n) == 0;
}

static int s_get_i32(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                     int32_t *out, com_error_t *err) {
    int64_t v = *out;
    int rc = com_json_get_int(obj, key, required, lo, hi, &v, err);
    if (rc == 0)
        *out = (int32_t)v;
    return rc;
}

static int s_parse_family(const json_t *root, com_model_info_t *info, com_error_t *err) {
    json_t *mt = json_object_get(root, "model_type");
    json_t *archs = json_object_get(root, "architectures");
    char p[64];
    if (mt && !json_is_null(mt)) {
        if (!json_is_string(mt))
            return com_error_set(err, COM_EFORMAT, "field \"model_type\" must be a string");
        if (!s_str_eq(mt, "bert")) {
            s_printable(p, sizeof p, mt);
            return com_error_set(err, COM_EUNSUPPORTED,
                                 "field \"model_type\" = \"%s\" is not supported (only \"bert\")",
                                 p);
        }
        snprintf(info->model_type, sizeof info->model_type, "bert");
    }
    if (archs && !json_is_null(archs)) {
        if (!json_is_array(archs) || json_array_size(archs) == 0 ||
            !json_is_string(json_array_get(archs, 0)))
            return com_error_set(err, COM_EFORMAT,
                                 "field \"architectures\" must be a non-empty array of strings");
        json_t *a = json_array_get(archs, 0);
        bool known = false;
        for (size_t i = 0; i < sizeof s_bert_archs / sizeof s_bert_archs[0]; i++)
            known = known || s_str_eq(a, s_bert_archs[i]);
        if (!known) {
            s_printable(p, sizeof p, a);
            return com_error_set(err, COM_EUNSUPPORTED,
                                 "field \"architectures\"[0] = \"%s\" is not a supported BERT "
                                 "architecture",
                                 p);
        }
        snprintf(info->architecture, sizeof info->architecture, "%s", json_string_value(a));
    }
    if (!info->model_type[0] && !info->architecture[0])
        return com_error_set(err, COM_EUNSUPPORTED,
                             "neither \"model_type\" nor \"architectures\" names the model");
    if (!info->model_type[0])
        snprintf(info->model_type, sizeof info->model_type, "bert");
    info->family = COM_FAMILY_BERT;
    return 0;
}

static int s_parse_config(const json_t *root, com_model_info_t *info, com_error_t *err) {
    int rc;
    if (!json_is_object(root))
        return com_error_set(err, COM_EFORMAT, "top level is not a JSON object");
    memset(info, 0, sizeof *info);
    if ((rc = s_parse_family(root, info, err)) != 0)
        return rc;

    /* Shapes: required. */
    if ((rc = s_get_i32(root, "vocab_size", true, 1, COM_MODEL_MAX_VOCAB, &info->vocab_size,
                        err)) != 0 ||
        (rc = s_get_i32(root, "hidden_size", true, 1, COM_MODEL_MAX_HIDDEN, &info->hidden_size,
                        err)) != 0 ||
        (rc = s_get_i32(root, "num_hidden_layers", true, 1, COM_MODEL_MAX_LAYERS, &info->num_layers,
                        err)) != 0 ||
        (rc = s_get_i32(root, "num_attention_heads", true, 1, COM_MODEL_MAX_HIDDEN,
                        &info->num_heads, err)) != 0 ||
        (rc = s_get_i32(root, "intermediate_size", true, 1, COM_MODEL_MAX_INTERMEDIATE,
                        &info->intermediate_size, err)) != 0)
        return rc;
    if (info->hidden_size % info->num_heads != 0)
        return com_error_set(err, COM_EFORMAT,
                             "field \"hidden_size\" = %d is not divisible by "
                             "\"num_attention_heads\" = %d",
                             info->hidden_size, info->num_heads);
    info->head_dim = info->hidden_size / info->num_heads;

    /* Optional, BertConfig defaults. */
    info->max_position_embeddings = 512;
    info->type_vocab_size = 2;
    info->pad_token_id = 0;
    if ((rc = s_get_i32(root, "max_position_embeddings", false, 1, COM_MODEL_MAX_POSITIONS,
                        &info->max_position_embeddings, err)) != 0 ||
        (rc = s_get_i32(root, "type_vocab_size", false, 1, COM_MODEL_MAX_VOCAB,
                        &info->type_vocab_size, err)) != 0 ||
        (rc = s_get_i32(root, "pad_token_id", false, 0, info->vocab_size - 1, &info->pad_token_id,
                        err)) != 0)
        return rc;
    double eps = 1e-12;
    if ((rc = com_json_get_double(root, "layer_norm_eps", false, &eps, err)) != 0)
        return rc;
    if (!(eps > 0 && eps < 1) || !((float)eps > 0))
        return com_error_set(err, COM_EFORMAT,
                             "field \"layer_norm_eps\" = %g must be in (0, 1) and representable "
                             "as a positive float",
                             eps);
    info->layer_norm_eps = (float)eps;

    json_t *act = json_object_get(root, "hidden_act");
    info->hidden_act = COM_ACT_GELU_ERF;
    if (act && !json_is_null(act)) {
        if (!json_is_string(act))
            return com_error_set(err, COM_EFORMAT, "field \"hidden_act\" must be a string");
        if (s_str_eq(act, "gelu")) {
            info->hidden_act = COM_ACT_GELU_ERF;
        } else if (s_str_eq(act, "gelu_new") || s_str_eq(act, "gelu_pytorch_tanh")) {
            info->hidden_act = COM_ACT_GELU_TANH;
        } else if (s_str_eq(act, "relu")) {
            info->hidden_act = COM_ACT_RELU;
        } else {
            char p[64];
            s_printable(p, sizeof p, act);
            return com_error_set(err, COM_EUNSUPPORTED,
                                 "field \"hidden_act\" = \"%s\" is not supported (gelu, gelu_new, "
                                 "gelu_pytorch_tanh, relu)",
                                 p);
        }
    }
    json_t *pet = json_object_get(root, "position_embedding_type");
    if (pet && !json_is_null(pet)) {
        if (!json_is_string(pet))
            return com_error_set(err, COM_EFORMAT,
                                 "field \"position_embedding_type\" must be a string");
        if (!s_str_eq(pet, "absolute")) {
            char p[64];
            s_printable(p, sizeof p, pet);
            return com_error_set(err, COM_EUNSUPPORTED,
                                 "field \"position_embedding_type\" = \"%s\" is not supported "
                                 "(only \"absolute\")",
                                 p);
        }
    }

    /* Sentence-transformers defaults (what it does with a plain Hugging Face model). */
    info->sentence_transformers = false;
    info->pooling = COM_POOL_MEAN;
    info->normalize = false;
    info->max_seq_length = info->max_position_embeddings;
    info->embedding_dim = info->hidden_size;
    return 0;
}

int com_model_config_parse(const char *json_text, size_t len, com_model_info_t *info,
                           com_error_t *err) {
    if (!json_text && len > 0)
        return com_error_set(err, COM_EINVAL, "config.json: NULL text");
    json_t *root = com_json_parse(json_text ? json_text : "", len, "config.json", err);
    if (!root)
        return COM_EFORMAT;
    int rc = s_parse_config(root, info, err);
    json_decref(root);
    if (rc != 0)
        com_error_prefix(err, rc, "config.json");
    return rc;
}

/* A module path from modules.json: relative, no "..", no empty segment, no NUL. */
static bool s_safe_rel_path(const json_t *s) {
    const char *v = json_string_value(s);
    size_t n = json_string_length(s);
    if (n == 0 || n > 255 || memchr(v, '\0', n) || v[0] == '/')
        return false;
    size_t seg = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || v[i] == '/') {
            if (i == seg)
                return false; /* empty segment */
            if (i - seg == 2 && v[seg] == '.' && v[seg + 1] == '.')
                return false;
            seg = i + 1;
        }
    }
    return true;
}

static int s_load_pooling(const char *dir, const char *rel, com_model_info_t *info,
                          com_error_t *err) {
    char sub[S_PATH_MAX], path[S_PATH_MAX];
    int rc;
    if ((rc = com_path_join(sub, sizeof sub, dir, rel, err)) != 0 ||
        (rc = com_path_join(path, sizeof path, sub, "config.json", err)) != 0)
        return rc;
    json_t *root = com_json_load_file(path, S_MAX_CONFIG, err);
    if (!root)
        return err->code;
    static const struct {
        const char *key;
        int pool; /* com_pooling_t, or -1 when unsupported */
    } modes[] = {
        {"pooling_mode_cls_token", COM_POOL_CLS},  {"pooling_mode_mean_tokens", COM_POOL_MEAN},
        {"pooling_mode_lasttoken", COM_POOL_LAST}, {"pooling_mode_max_tokens", -1},
        {"pooling_mode_mean_sqrt_len_tokens", -1}, {"pooling_mode_weightedmean_tokens", -1},
    };
    int n_set = 0, pool = -1;
    const char *which = NULL;
    if (!json_is_object(root)) {
        rc = com_error_set(err, COM_EFORMAT, "top level is not a JSON object");
        goto done;
    }
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        bool on = false;
        if ((rc = com_json_get_bool(root, modes[i].key, false, &on, err)) != 0)
            goto done;
        if (on) {
            n_set++;
            pool = modes[i].pool;
            which = modes[i].key;
        }
    }
    if (n_set == 0) {
        rc = com_error_set(err, COM_EFORMAT, "no pooling_mode_* field is true");
        goto done;
    }
    if (n_set > 1) {
        rc = com_error_set(err, COM_EUNSUPPORTED,
                           "%d pooling_mode_* fields are true; only one mode is supported", n_set);
        goto done;
    }
    if (pool < 0) {
        rc = com_error_set(err, COM_EUNSUPPORTED, "field \"%s\": this pooling is not supported",
                           which);
        goto done;
    }
    int64_t dim = 0;
    if ((rc = com_json_get_int(root, "word_embedding_dimension", true, 1, COM_MODEL_MAX_HIDDEN,
                               &dim, err)) != 0)
        goto done;
    if (dim != info->hidden_size) {
        rc = com_error_set(err, COM_EFORMAT,
                           "field \"word_embedding_dimension\" = %lld differs from config.json "
                           "hidden_size = %d",
                           (long long)dim, info->hidden_size);
        goto done;
    }
    info->pooling = (com_pooling_t)pool;
done:
    json_decref(root);
    if (rc != 0)
        com_error_prefix(err, rc, "%s", path);
    return rc;
}

static int s_load_modules(const char *dir, const char *path, com_model_info_t *info,
                          com_error_t *err) {
    json_t *root = com_json_load_file(path, S_MAX_CONFIG, err);
    if (!root)
        return err->code;
    int rc = 0;
    char pooling_path[256] = "";
    int pooling_at = -1, normalize_at = -1;
    if (!json_is_array(root) || json_array_size(root) == 0 ||
        json_array_size(root) > S_MAX_MODULES) {
        rc = com_error_set(err, COM_EFORMAT, "top level must be an array of 1 to %d modules",
                           S_MAX_MODULES);
        goto done;
    }
    size_t i;
    json_t *m;
    json_array_foreach(root, i, m) {
        if (!json_is_object(m)) {
            rc = com_error_set(err, COM_EFORMAT, "module [%zu] is not an object", i);
            goto done;
        }
        json_t *type = json_object_get(m, "type");
        json_t *mpath = json_object_get(m, "path");
        if (!json_is_string(type)) {
            rc = com_error_set(err, COM_EFORMAT,
                               "module [%zu]: field \"type\" missing or not a "
                               "string",
                               i);
            goto done;
        }
        if (mpath && !json_is_string(mpath)) {
            rc =
                com_error_set(err, COM_EFORMAT, "module [%zu]: field \"path\" must be a string", i);
            goto done;
        }
        if (s_str_eq(type, "sentence_transformers.models.Transformer")) {
            if (i != 0 || (mpath && json_string_length(mpath) != 0)) {
                rc = com_error_set(err, COM_EUNSUPPORTED,
                                   "module [%zu]: the Transformer must be module 0 at path \"\" "
                                   "(weights in the model directory itself)",
                                   i);
                goto done;
            }
        } else if (s_str_eq(type, "sentence_transformers.models.Pooling")) {
            if (pooling_at >= 0) {
                rc = com_error_set(err, COM_EUNSUPPORTED, "module [%zu]: a second Pooling module",
                                   i);
                goto done;
            }
            if (!mpath || !s_safe_rel_path(mpath)) {
                rc = com_error_set(err, COM_EFORMAT,
                                   "module [%zu]: Pooling \"path\" must be a relative folder "
                                   "without \"..\"",
                                   i);
                goto done;
            }
            memcpy(pooling_path, json_string_value(mpath), json_string_length(mpath) + 1);
            pooling_at = (int)i;
        } else if (s_str_eq(type, "sentence_transformers.models.Normalize")) {
            normalize_at = (int)i;
        } else {
            char p[96];
            s_printable(p, sizeof p, type);
            rc = com_error_set(err, COM_EUNSUPPORTED, "module [%zu]: type \"%s\" is not supported",
                               i, p);
            goto done;
        }
    }
    if (pooling_at < 0) {
        rc = com_error_set(err, COM_EUNSUPPORTED, "no sentence_transformers.models.Pooling module");
        goto done;
    }
    if (normalize_at >= 0 && normalize_at < pooling_at) {
        rc = com_error_set(err, COM_EUNSUPPORTED, "Normalize (module [%d]) comes before Pooling",
                           normalize_at);
        goto done;
    }
    json_decref(root);
    root = NULL;
    info->sentence_transformers = true;
    info->normalize = normalize_at >= 0;
    return s_load_pooling(dir, pooling_path, info, err);
done:
    json_decref(root);
    if (rc != 0)
        com_error_prefix(err, rc, "%s", path);
    return rc;
}

static int s_load_st_config(const char *path, com_model_info_t *info, com_error_t *err) {
    json_t *root = com_json_load_file(path, S_MAX_CONFIG, err);
    if (!root)
        return err->code;
    int rc = 0;
    if (!json_is_object(root))
        rc = com_error_set(err, COM_EFORMAT, "top level is not a JSON object");
    else
        rc = s_get_i32(root, "max_seq_length", false, 1, info->max_position_embeddings,
                       &info->max_seq_length, err);
    json_decref(root);
    if (rc != 0)
        com_error_prefix(err, rc, "%s", path);
    return rc;
}

int com_model_info_load(const char *dir, com_model_info_t *info, com_error_t *err) {
    com_error_t local; /* the loaders read codes back from err */
    if (!err)
        err = &local;
    if (!dir || !info)
        return com_error_set(err, COM_EINVAL, "com_model_info_load: NULL argument");
    char path[S_PATH_MAX];
    int rc;
    if (!com_path_exists(dir))
        return com_error_set(err, COM_EIO, "%s: model directory does not exist", dir);
    if ((rc = com_path_join(path, sizeof path, dir, "config.json", err)) != 0)
        return rc;
    char *text = NULL;
    size_t len = 0;
    if ((rc = com_file_read(path, S_MAX_CONFIG, &text, &len, err)) != 0)
        return rc; /* the message names the path */
    json_t *root = com_json_parse(text, len, path, err);
    free(text);
    if (!root)
        return COM_EFORMAT;
    rc = s_parse_config(root, info, err);
    json_decref(root);
    if (rc != 0) {
        com_error_prefix(err, rc, "%s", path);
        return rc;
    }

    if ((rc = com_path_join(path, sizeof path, dir, "modules.json", err)) != 0)
        return rc;
    if (com_path_exists(path) && (rc = s_load_modules(dir, path, info, err)) != 0)
        return rc;
    if ((rc = com_path_join(path, sizeof path, dir, "sentence_bert_config.json", err)) != 0)
        return rc;
    if (com_path_exists(path) && (rc = s_load_st_config(path, info, err)) != 0)
        return rc;
    return 0;
}
