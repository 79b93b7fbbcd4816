/* common/tok_wordpiece.c — the WordPiece model: parse its tokenizer.json "model" object and
 * tokenize one pre-tokenized word by greedy longest-match-first, exactly as Hugging Face
 * `tokenizers` models/wordpiece: a word of more than max_input_chars_per_word characters is the
 * unknown token; otherwise from each position the longest vocabulary entry (with the
 * continuing-subword prefix after the first piece) is taken, and if some position has no match
 * the whole word becomes the unknown token.
 * Speed: one pass hashes every prefix of the remaining word incrementally, then the candidate
 * ends are probed longest first; ends beyond the longest vocabulary entry are never tried.
 * Thread-safety: the model is read-only after parse; tokenize writes only to its output. */
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/tok_internal.h"
#include "common/utf8.h"

static int s_parse_vocab(tok_vocab_t *vocab, const json_t *jv, com_error_t *err) {
    size_t n = json_object_size(jv);
    if (n > TOK_MAX_VOCAB)
        return com_error_set(err, COM_EFORMAT, "model.vocab has %zu entries (limit %d)", n,
                             TOK_MAX_VOCAB);
    const char **toks = malloc(sizeof *toks * (n ? n : 1));
    uint32_t *lens = malloc(sizeof *lens * (n ? n : 1));
    int32_t *ids = malloc(sizeof *ids * (n ? n : 1));
    int rc = 0;
    if (!toks || !lens || !ids) {
        rc = com_error_set(err, COM_ENOMEM, "model.vocab: out of memory");
        goto out;
    }
    size_t i = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)jv, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= TOK_MAX_VOCAB) {
            rc = com_error_set(err, COM_EFORMAT,
                               "model.vocab[\"%.64s\"]: id must be an integer in [0, %d)", key,
                               TOK_MAX_VOCAB);
            goto out;
        }
        size_t kl = strlen(key);
        if (kl == 0 || kl > TOK_MAX_TOKEN_BYTES) {
            rc = com_error_set(err, COM_EFORMAT, "model.vocab: token of %zu bytes (1..%d)", kl,
                               TOK_MAX_TOKEN_BYTES);
            goto out;
        }
        toks[i] = key;
        lens[i] = (uint32_t)kl;
        ids[i] = (int32_t)json_integer_value(val);
        i++;
    }
    rc = tok_vocab_build(vocab, (int32_t)i, toks, lens, ids, err);
    if (rc)
        com_error_prefix(err, rc, "model.vocab");
out:
    free(toks);
    free(lens);
    free(ids);
    return rc;
}

static int s_wordpiece_parse(tok_wordpiece_t *wp, const json_t *j, com_error_t *err) {
    memset(wp, 0, sizeof *wp);
    json_t *jv = json_object_get(j, "vocab");
    if (!json_is_object(jv))
        return com_error_set(err, COM_EFORMAT, "model.vocab must be an object");
    char unk[TOK_MAX_TOKEN_BYTES + 1] = "[UNK]";
    int rc = com_json_get_string(j, "unk_token", false, unk, sizeof unk, err);
    if (rc != 0)
        return com_error_prefix(err, rc, "model");
    memcpy(wp->prefix, "##", 3);
    rc = com_json_get_string(j, "continuing_subword_prefix", false, wp->prefix, sizeof wp->prefix,
                             err);
    if (rc != 0)
        return com_error_prefix(err, rc, "model");
    wp->prefix_len = (uint32_t)strlen(wp->prefix);
    wp->prefix_hash = tok_hash_bytes(TOK_HASH_INIT, wp->prefix, wp->prefix_len);
    int64_t mc = 100;
    rc = com_json_get_int(j, "max_input_chars_per_word", false, 0, TOK_MAX_WORD_CHARS, &mc, err);
    if (rc != 0)
        return com_error_prefix(err, rc, "model");
    wp->max_chars = (int32_t)mc;
    rc = s_parse_vocab(&wp->vocab, jv, err);
    if (rc)
        return rc;
    wp->unk_id = tok_vocab_find(&wp->vocab, unk, strlen(unk));
    if (wp->unk_id < 0) {
        tok_vocab_free(&wp->vocab);
        return com_error_set(err, COM_EFORMAT, "model.unk_token \"%.64s\" is not in the vocab",
                             unk);
    }
    return 0;
}

int tok_model_parse(tok_model_t *m, const json_t *j, com_error_t *err) {
    memset(m, 0, sizeof *m);
    if (!json_is_object(j))
        return com_error_set(err, COM_EFORMAT, "\"model\" must be an object");
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type)
        return com_error_set(err, COM_EFORMAT, "model.type is missing");
    if (strcmp(type, "WordPiece") == 0) {
        m->kind = TOK_MODEL_WORDPIECE;
        return s_wordpiece_parse(&m->wp, j, err);
    }
    return com_error_set(err, COM_EUNSUPPORTED, "model type \"%.64s\" is not supported", type);
}

void tok_model_free(tok_model_t *m) {
    if (m->kind == TOK_MODEL_WORDPIECE)
        tok_vocab_free(&m->wp.vocab);
    memset(m, 0, sizeof *m);
}

int32_t tok_model_vocab_size(const tok_model_t *m) {
    return m->wp.vocab.n_entries;
}

int32_t tok_model_token_to_id(const tok_model_t *m, const char *s, size_t n) {
    return tok_vocab_find(&m->wp.vocab, s, n);
}

static int s_wordpiece_tokenize(const tok_wordpiece_t *wp, const char *s, size_t len,
                                tok_ids_t *out) {
    /* bytes >= characters, so only long words need counting */
    if (len > (size_t)wp->max_chars && com_utf8_count(s, len) > (size_t)wp->max_chars)
        return tok_ids_push(out, wp->unk_id);
    const tok_vocab_t *v = &wp->vocab;
    int32_t n0 = out->len;
    size_t start = 0;
    uint64_t hs[TOK_MAX_TOKEN_BYTES + 1]; /* hash state after k bytes of the piece */
    while (start < len) {
        uint64_t h = start ? wp->prefix_hash : TOK_HASH_INIT;
        size_t base = start ? wp->prefix_len : 0;
        size_t lim = len;
        if (v->max_len <= base)
            lim = start;
        else if (lim - start > v->max_len - base)
            lim = start + (v->max_len - base);
        for (size_t k = start; k < lim; k++) {
            h = tok_hash_step(h, (unsigned char)s[k]);
            hs[k - start + 1] = h;
        }
        int32_t id = -1;
        size_t end = lim;
        for (; end > start; end--) {
            if (end < len && ((unsigned char)s[end] & 0xC0) == 0x80)
                continue; /* not a character boundary */
            id = tok_vocab_find2_h(v, tok_hash_final(hs[end - start]), wp->prefix, base, s + start,
                                   end - start);
            if (id >= 0)
                break;
        }
        if (id < 0) {
            out->len = n0;
            return tok_ids_push(out, wp->unk_id);
        }
        if (tok_ids_push(out, id))
            return COM_ENOMEM;
        start = end;
    }
    return 0;
}

int tok_model_tokenize(const tok_model_t *m, const char *s, size_t len, tok_ids_t *out) {
    return s_wordpiece_tokenize(&m->wp, s, len, out);
}
