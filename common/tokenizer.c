/* common/tokenizer.c — loading a tokenizer.json and the encode pipeline (see tokenizer.h and
 * tok_internal.h): UTF-8 repair, the added-tokens pass, normalizer, pre-tokenizer and model
 * stages (tok_*.c), the post-processor template and truncation, all matching Hugging Face
 * `tokenizers` 0.23 (added_vocabulary.rs, processors/template.rs, utils/truncation.rs).
 *
 * Added tokens: ids are assigned as AddedVocabulary::add_tokens does (an id already known to the
 * model wins, else the next id after the vocabulary); tokens with normalized=false are matched
 * in the raw text before normalization, the others in each normalized piece, both
 * leftmost-longest and non-overlapping like the Aho-Corasick automaton HF builds, then
 * single_word / lstrip / rstrip are applied as in AddedVocabulary::find_matches.
 * The "truncation" and "padding" sections of tokenizer.json are ignored: callers pass
 * com_encode_opts_t.
 *
 * Invariants: a loaded tokenizer is immutable; every id it can emit is in [0, n_ids).
 * Thread-safety: load/destroy on one thread; encode from any number of threads at once, each
 * with its own com_encoding_t (all working memory lives in enc->scratch). */
#include "common/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/json.h"
#include "common/tok_internal.h"
#include "common/unicode_tables.h"
#include "common/utf8.h"

#define S_MAX_JSON_BYTES ((size_t)64 << 20)
#define S_MAX_TEXT_BYTES ((size_t)1 << 28)

/* ---------------------------------------------------------------- buffers */

int tok_buf_reserve(tok_buf_t *b, size_t need) {
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return COM_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int tok_ids_push(tok_ids_t *v, int32_t id) {
    if (v->len == v->cap) {
        if (v->cap >= INT32_MAX / 2)
            return COM_ENOMEM;
        int32_t cap = v->cap ? v->cap * 2 : 256;
        int32_t *p = realloc(v->p, (size_t)cap * sizeof *p);
        if (!p)
            return COM_ENOMEM;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->len++] = id;
    return 0;
}

static void s_scratch_free(tok_scratch_t *s) {
    if (!s)
        return;
    free(s->text.p);
    free(s->norm.p);
    free(s->norm2.p);
    free(s->words);
    free(s->marks);
    free(s->a.p);
    free(s->b.p);
    free(s);
}

/* ---------------------------------------------------------------- encoding */

void com_encoding_init(com_encoding_t *enc) {
    memset(enc, 0, sizeof *enc);
}

void com_encoding_free(com_encoding_t *enc) {
    if (!enc)
        return;
    free(enc->ids);
    free(enc->type_ids);
    s_scratch_free(enc->scratch);
    memset(enc, 0, sizeof *enc);
}

static int s_encoding_reserve(com_encoding_t *enc, int32_t n) {
    if (n <= enc->cap && enc->ids && enc->type_ids)
        return 0;
    int32_t cap = enc->cap > 0 ? enc->cap : 64;
    while (cap < n)
        cap = cap > INT32_MAX / 2 ? n : cap * 2;
    int32_t *ids = realloc(enc->ids, (size_t)cap * sizeof *ids);
    if (!ids)
        return COM_ENOMEM;
    enc->ids = ids;
    int32_t *types = realloc(enc->type_ids, (size_t)cap * sizeof *types);
    if (!types)
        return COM_ENOMEM;
    enc->type_ids = types;
    enc->cap = cap;
    return 0;
}

com_encode_opts_t com_encode_opts_default(void) {
    com_encode_opts_t o = {.max_length = 0, .truncate = true, .add_special_tokens = true};
    return o;
}

/* ---------------------------------------------------------------- added tokens */

typedef struct s_order_key {
    unsigned char first; /* first byte of the match */
    uint32_t len;        /* match length */
    int32_t idx;         /* index in tok->added (trie order) */
} s_order_key_t;

static int s_cmp_order(const void *pa, const void *pb) {
    const s_order_key_t *x = pa, *y = pb;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;             /* longest first */
    return x->idx < y->idx ? -1 : (x->idx > y->idx); /* then trie order: earlier pattern wins */
}

static int s_build_matcher(tok_matcher_t *m, const tok_added_t *added, int32_t n, bool normalized,
                           com_error_t *err) {
    memset(m, 0, sizeof *m);
    m->order = malloc(sizeof *m->order * (size_t)(n ? n : 1));
    s_order_key_t *keys = malloc(sizeof *keys * (size_t)(n ? n : 1));
    if (!m->order || !keys) {
        free(keys);
        return com_error_set(err, COM_ENOMEM, "added tokens: out of memory");
    }
    for (int32_t i = 0; i < n; i++)
        if (added[i].normalized == normalized && added[i].match_len > 0)
            keys[m->n++] = (s_order_key_t){(unsigned char)added[i].match[0], added[i].match_len, i};
    qsort(keys, (size_t)m->n, sizeof *keys, s_cmp_order);
    for (int32_t k = 0; k < m->n; k++)
        m->order[k] = keys[k].idx;
    free(keys);
    /* first[b] = first position whose token starts with a byte >= b */
    int32_t k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < m->n && (unsigned char)added[m->order[k]].match[0] < b)
            k++;
        m->first[b] = k;
    }
    return 0;
}

/* Leftmost-longest match at or after pos: returns the added index (or -1), *ms its start. */
static int32_t s_find_match(const tok_matcher_t *m, const tok_added_t *added, const char *s,
                            size_t len, size_t pos, size_t *ms) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = pos; i < len; i++) {
        int32_t lo = m->first[u[i]], hi = m->first[u[i] + 1];
        for (int32_t k = lo; k < hi; k++) {
            const tok_added_t *t = &added[m->order[k]];
            if (t->match_len <= len - i && memcmp(s + i, t->match, t->match_len) == 0) {
                *ms = i;
                return m->order[k];
            }
        }
    }
    return -1;
}

/* The character ending just before s[pos] (valid UTF-8, pos > 0). */
static uint32_t s_char_before(const char *s, size_t pos) {
    size_t i = pos - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    int n;
    return com_utf8_decode_valid((const unsigned char *)s + i, &n);
}

static bool s_is_word(uint32_t cp) {
    return (com_uni_flags(cp) & COM_UNI_WORD) != 0;
}

static bool s_is_space(uint32_t cp) {
    return (com_uni_flags(cp) & COM_UNI_WS) != 0;
}

typedef int (*s_piece_fn)(const com_tokenizer_t *tok, const char *s, size_t len, tok_scratch_t *sc,
                          tok_ids_t *out);

/* Splits s[0..len) around the matcher's added tokens as AddedVocabulary::find_matches: pieces
 * between matches go to fn, matches become their id. */
static int s_split_added(const com_tokenizer_t *tok, const tok_matcher_t *m, const char *s,
                         size_t len, tok_scratch_t *sc, tok_ids_t *out, s_piece_fn fn) {
    size_t pos = 0, start_offset = 0;
    int rc;
    while (pos < len) {
        size_t ms;
        int32_t k = s_find_match(m, tok->added, s, len, pos, &ms);
        if (k < 0)
            break;
        const tok_added_t *t = &tok->added[k];
        size_t me = ms + t->match_len;
        size_t start = ms, stop = me;
        pos = me;
        if (t->single_word) {
            bool start_space = start == 0 || !s_is_word(s_char_before(s, start));
            int n;
            bool stop_space =
                stop == len ||
                !s_is_word(com_utf8_decode_valid((const unsigned char *)s + stop, &n));
            if (!start_space || !stop_space)
                continue;
        }
        if (t->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t p = ns - 1;
                while (p > 0 && ((unsigned char)s[p] & 0xC0) == 0x80)
                    p--;
                int n;
                if (!s_is_space(com_utf8_decode_valid((const unsigned char *)s + p, &n)))
                    break;
                ns = p;
            }
            start = ns > start_offset ? ns : start_offset;
        }
        if (t->rstrip) {
            while (stop < len) {
                int n;
                if (!s_is_space(com_utf8_decode_valid((const unsigned char *)s + stop, &n)))
                    break;
                stop += (size_t)n;
            }
        }
        if (start_offset < start && (rc = fn(tok, s + start_offset, start - start_offset, sc, out)))
            return rc;
        if ((rc = tok_ids_push(out, t->id)))
            return rc;
        start_offset = stop;
    }
    if (start_offset < len)
        return fn(tok, s + start_offset, len - start_offset, sc, out);
    return 0;
}

/* ---------------------------------------------------------------- encode */

static int s_words(const com_tokenizer_t *tok, const char *s, size_t len, tok_scratch_t *sc,
                   tok_ids_t *out) {
    int64_t nw = tok_pretok_split(&tok->pretok, s, len, sc);
    if (nw < 0)
        return (int)nw;
    for (int64_t w = 0; w < nw; w++) {
        int rc = tok_model_tokenize(&tok->model, s + sc->words[w].off, sc->words[w].len, out);
        if (rc)
            return rc;
    }
    return 0;
}

static int s_piece(const com_tokenizer_t *tok, const char *s, size_t len, tok_scratch_t *sc,
                   tok_ids_t *out) {
    int rc = tok_normalize(&tok->norm, s, len, sc);
    if (rc)
        return rc;
    if (tok->norm_matcher.n == 0)
        return s_words(tok, sc->norm.p, sc->norm.len, sc, out);
    /* pieces of the normalized text go straight to the pre-tokenizer; sc->norm stays put
     * because s_words does not normalize */
    return s_split_added(tok, &tok->norm_matcher, sc->norm.p, sc->norm.len, sc, out, s_words);
}

static int s_encode_seq(const com_tokenizer_t *tok, const char *text, size_t len, tok_scratch_t *sc,
                        tok_ids_t *out) {
    out->len = 0;
    if (len == 0)
        return 0;
    size_t ok = com_utf8_valid_prefix(text, len);
    if (ok < len) {
        if (tok_buf_reserve(&sc->text, com_utf8_repair_bound(len)))
            return COM_ENOMEM;
        len = com_utf8_repair(text, len, sc->text.p);
        sc->text.len = len;
        text = sc->text.p;
    }
    if (tok->raw_matcher.n == 0)
        return s_piece(tok, text, len, sc, out);
    return s_split_added(tok, &tok->raw_matcher, text, len, sc, out, s_piece);
}

/* utils/truncation.rs, LongestFirst, direction right, stride 0; max = budget for content. */
static void s_truncate(int32_t *la, int32_t *lb, bool pair, int32_t max) {
    if (max == 0) {
        *la = 0;
        *lb = 0;
        return;
    }
    if (!pair) {
        if (*la > max)
            *la = max;
        return;
    }
    if (*la + *lb <= max)
        return;
    int32_t n1 = *la, n2 = *lb;
    bool swap = false;
    if (n1 > n2) {
        swap = true;
        int32_t t = n1;
        n1 = n2;
        n2 = t;
    }
    if (n1 > max)
        n2 = n1;
    else
        n2 = n1 > max - n1 ? n1 : max - n1;
    if (n1 + n2 > max) {
        n1 = max / 2;
        n2 = n1 + max % 2;
    }
    if (swap) {
        int32_t t = n1;
        n1 = n2;
        n2 = t;
    }
    if (*la > n1)
        *la = n1;
    if (*lb > n2)
        *lb = n2;
}

static int s_encode(const com_tokenizer_t *tok, const char *a, size_t alen, const char *b,
                    size_t blen, bool pair, const com_encode_opts_t *opts, com_encoding_t *enc,
                    com_error_t *err) {
    if (!enc)
        return com_error_set(err, COM_EINVAL, "encode: enc is NULL");
    enc->len = 0;
    enc->n_untruncated = 0;
    if (!tok || (!a && alen) || (pair && !b && blen))
        return com_error_set(err, COM_EINVAL, "encode: NULL tokenizer or text");
    com_encode_opts_t dflt = com_encode_opts_default();
    if (!opts)
        opts = &dflt;
    if (opts->max_length < 0)
        return com_error_set(err, COM_EINVAL, "encode: max_length %d < 0", opts->max_length);
    if (alen > S_MAX_TEXT_BYTES || blen > S_MAX_TEXT_BYTES)
        return com_error_set(err, COM_EINVAL, "encode: text over %zu bytes", S_MAX_TEXT_BYTES);
    const tok_template_t *tm = pair ? &tok->pair : &tok->single;
    bool has_post = tok->post_kind != TOK_POST_NONE;
    int32_t n_special = opts->add_special_tokens && has_post ? tm->n_special : 0;
    if (opts->max_length > 0 && opts->max_length < n_special)
        return com_error_set(err, COM_EINVAL,
                             "encode: max_length %d cannot hold the %d special tokens",
                             opts->max_length, n_special);
    tok_scratch_t *sc = enc->scratch;
    if (!sc) {
        sc = calloc(1, sizeof *sc);
        if (!sc)
            return com_error_set(err, COM_ENOMEM, "encode: out of memory");
        enc->scratch = sc;
    }
    int rc = s_encode_seq(tok, a, alen, sc, &sc->a);
    sc->b.len = 0;
    if (rc == 0 && pair)
        rc = s_encode_seq(tok, b, blen, sc, &sc->b);
    if (rc)
        return com_error_set(err, rc, "encode: out of memory");
    int32_t la = sc->a.len, lb = sc->b.len;
    if ((int64_t)la + lb + n_special > INT32_MAX / 2)
        return com_error_set(err, COM_EINVAL, "encode: too many tokens");
    int32_t total = la + lb + n_special;
    if (opts->max_length > 0 && total > opts->max_length) {
        if (!opts->truncate)
            return com_error_set(err, COM_ETOOLONG, "encode: %d tokens > max_length %d", total,
                                 opts->max_length);
        s_truncate(&la, &lb, pair, opts->max_length - n_special);
    }
    if (s_encoding_reserve(enc, la + lb + n_special + 1))
        return com_error_set(err, COM_ENOMEM, "encode: out of memory");
    int32_t n = 0;
    if (!has_post) {
        for (int32_t i = 0; i < la; i++, n++) {
            enc->ids[n] = sc->a.p[i];
            enc->type_ids[n] = 0;
        }
        for (int32_t i = 0; i < lb; i++, n++) {
            enc->ids[n] = sc->b.p[i];
            enc->type_ids[n] = 1;
        }
    } else {
        for (int k = 0; k < tm->n; k++) {
            const tok_piece_t *p = &tm->p[k];
            if (p->is_seq) {
                const int32_t *src = p->seq == 0 ? sc->a.p : sc->b.p;
                int32_t cnt = p->seq == 0 ? la : lb;
                for (int32_t i = 0; i < cnt; i++, n++) {
                    enc->ids[n] = src[i];
                    enc->type_ids[n] = p->type_id;
                }
            } else if (opts->add_special_tokens) {
                for (int32_t i = 0; i < p->n_ids; i++, n++) {
                    enc->ids[n] = p->ids[i];
                    enc->type_ids[n] = p->type_id;
                }
            }
        }
    }
    enc->len = n;
    enc->n_untruncated = total;
    return 0;
}

int com_tokenizer_encode(const com_tokenizer_t *tok, const char *text, size_t len,
                         const com_encode_opts_t *opts, com_encoding_t *enc, com_error_t *err) {
    return s_encode(tok, text, len, NULL, 0, false, opts, enc, err);
}

int com_tokenizer_encode_pair(const com_tokenizer_t *tok, const char *a, size_t alen, const char *b,
                              size_t blen, const com_encode_opts_t *opts, com_encoding_t *enc,
                              com_error_t *err) {
    return s_encode(tok, a, alen, b, blen, true, opts, enc, err);
}

/* ---------------------------------------------------------------- loading */

static int s_get_flag(const json_t *j, const char *key, bool dflt, bool *out, com_error_t *err) {
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return com_error_set(err, COM_EFORMAT, "field \"%s\" must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int32_t s_added_find(const com_tokenizer_t *tok, const char *content) {
    for (int32_t i = 0; i < tok->n_added; i++)
        if (strcmp(tok->added[i].content, content) == 0)
            return i;
    return -1;
}

/* added_tokens: AddedVocabulary::add_tokens semantics (see the file comment). */
static int s_parse_added(com_tokenizer_t *tok, const json_t *list, com_error_t *err) {
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list))
        return com_error_set(err, COM_EFORMAT, "added_tokens must be an array");
    size_t n = json_array_size(list);
    if (n > TOK_MAX_ADDED)
        return com_error_set(err, COM_EFORMAT, "%zu added tokens (limit %d)", n, TOK_MAX_ADDED);
    tok->added = calloc(n ? n : 1, sizeof *tok->added);
    if (!tok->added)
        return com_error_set(err, COM_ENOMEM, "added_tokens: out of memory");
    int32_t vocab_size = tok_model_vocab_size(&tok->model);
    int32_t max_added = -1;
    /* two passes keep HF's order: special tokens first, then the others */
    for (int pass = 0; pass < 2; pass++) {
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            if (!json_is_object(e))
                return com_error_set(err, COM_EFORMAT, "added_tokens[%zu] must be an object", i);
            const char *content = json_string_value(json_object_get(e, "content"));
            if (!content)
                return com_error_set(err, COM_EFORMAT, "added_tokens[%zu].content is missing", i);
            size_t clen = json_string_length(json_object_get(e, "content"));
            if (clen > TOK_MAX_TOKEN_BYTES || strlen(content) != clen)
                return com_error_set(err, COM_EFORMAT,
                                     "added_tokens[%zu].content: %zu bytes or embedded NUL", i,
                                     clen);
            int64_t jid = 0;
            int frc = com_json_get_int(e, "id", true, 0, INT32_MAX, &jid, err);
            if (frc != 0)
                return com_error_prefix(err, frc, "added_tokens[%zu]", i);
            bool special = false, single_word = false, lstrip = false, rstrip = false,
                 normalized = false;
            if ((frc = s_get_flag(e, "special", false, &special, err)) != 0 ||
                (frc = s_get_flag(e, "single_word", false, &single_word, err)) != 0 ||
                (frc = s_get_flag(e, "lstrip", false, &lstrip, err)) != 0 ||
                (frc = s_get_flag(e, "rstrip", false, &rstrip, err)) != 0 ||
                (frc = s_get_flag(e, "normalized", !special, &normalized, err)) != 0)
                return com_error_prefix(err, frc, "added_tokens[%zu]", i);
            if (special != (pass == 0) || clen == 0)
                continue;
            int32_t k = s_added_find(tok, content);
            tok_added_t *t;
            if (k >= 0) {
                t = &tok->added[k]; /* same content again: the later flags win */
            } else {
                t = &tok->added[tok->n_added];
                t->content = strdup(content);
                if (!t->content)
                    return com_error_set(err, COM_ENOMEM, "added_tokens: out of memory");
                tok->n_added++;
                int32_t id = tok_model_token_to_id(&tok->model, content, clen);
                if (id < 0) {
                    if (max_added < 0)
                        id = vocab_size;
                    else if (max_added >= vocab_size || vocab_size == 0)
                        id = max_added + 1;
                    else
                        id = vocab_size;
                }
                if (id >= TOK_MAX_VOCAB * 2)
                    return com_error_set(err, COM_EFORMAT, "added token id %d too large", id);
                t->id = id;
                if (id > max_added)
                    max_added = id;
            }
            t->special = special;
            t->single_word = single_word;
            t->lstrip = lstrip;
            t->rstrip = rstrip;
            t->normalized = normalized;
        }
    }
    return 0;
}

/* The bytes each added token matches: its content, normalized when normalized=true. */
static int s_prepare_added(com_tokenizer_t *tok, com_error_t *err) {
    tok_scratch_t *sc = calloc(1, sizeof *sc);
    if (!sc)
        return com_error_set(err, COM_ENOMEM, "added_tokens: out of memory");
    int rc = 0;
    for (int32_t i = 0; i < tok->n_added && rc == 0; i++) {
        tok_added_t *t = &tok->added[i];
        const char *src = t->content;
        size_t n = strlen(src);
        if (t->normalized) {
            if (tok_normalize(&tok->norm, src, n, sc)) {
                rc = com_error_set(err, COM_ENOMEM, "added_tokens: out of memory");
                break;
            }
            src = sc->norm.p;
            n = sc->norm.len;
        }
        t->match = malloc(n + 1);
        if (!t->match) {
            rc = com_error_set(err, COM_ENOMEM, "added_tokens: out of memory");
            break;
        }
        memcpy(t->match, src, n);
        t->match[n] = 0;
        t->match_len = (uint32_t)n;
    }
    s_scratch_free(sc);
    if (rc)
        return rc;
    rc = s_build_matcher(&tok->raw_matcher, tok->added, tok->n_added, false, err);
    return rc ? rc : s_build_matcher(&tok->norm_matcher, tok->added, tok->n_added, true, err);
}

static int s_check_id(const com_tokenizer_t *tok, json_int_t id, const char *what,
                      com_error_t *err) {
    if (id < 0 || id >= tok->n_ids || !tok->id_tokens[id])
        return com_error_set(err, COM_EFORMAT, "%s: id %lld is not in the vocabulary", what,
                             (long long)id);
    return 0;
}

static int s_parse_template(com_tokenizer_t *tok, tok_template_t *tm, const json_t *list,
                            const json_t *specials, bool pair, com_error_t *err) {
    const char *name = pair ? "pair" : "single";
    if (!json_is_array(list))
        return com_error_set(err, COM_EFORMAT, "post_processor.%s must be an array", name);
    if (json_array_size(list) > TOK_MAX_TEMPLATE)
        return com_error_set(err, COM_EFORMAT, "post_processor.%s: more than %d pieces", name,
                             TOK_MAX_TEMPLATE);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        tok_piece_t *p = &tm->p[tm->n];
        memset(p, 0, sizeof *p);
        json_t *sp = json_object_get(e, "SpecialToken");
        json_t *sq = json_object_get(e, "Sequence");
        json_t *body = sp ? sp : sq;
        if (!json_is_object(e) || !json_is_object(body) || (sp && sq))
            return com_error_set(err, COM_EFORMAT,
                                 "post_processor.%s[%zu]: expected SpecialToken or Sequence", name,
                                 i);
        int64_t type_id = 0;
        int frc = com_json_get_int(body, "type_id", false, 0, INT32_MAX, &type_id, err);
        if (frc != 0)
            return com_error_prefix(err, frc, "post_processor.%s[%zu]", name, i);
        p->type_id = (int32_t)type_id;
        const char *id = json_string_value(json_object_get(body, "id"));
        if (!id)
            return com_error_set(err, COM_EFORMAT, "post_processor.%s[%zu].id must be a string",
                                 name, i);
        if (sq) {
            p->is_seq = true;
            if (strcmp(id, "A") == 0)
                p->seq = 0;
            else if (strcmp(id, "B") == 0 && pair)
                p->seq = 1;
            else
                return com_error_set(err, COM_EFORMAT,
                                     "post_processor.%s[%zu]: sequence \"%.16s\" not allowed", name,
                                     i, id);
        } else {
            json_t *st = json_object_get(specials, id);
            json_t *ids = json_object_get(st, "ids");
            json_t *toks = json_object_get(st, "tokens");
            if (!json_is_array(ids) || !json_is_array(toks) ||
                json_array_size(ids) != json_array_size(toks) ||
                json_array_size(ids) > TOK_MAX_SPECIAL_IDS)
                return com_error_set(err, COM_EFORMAT,
                                     "post_processor: special token \"%.64s\" is missing or has "
                                     "bad ids/tokens",
                                     id);
            size_t k;
            json_t *v;
            json_array_foreach(ids, k, v) {
                if (!json_is_integer(v))
                    return com_error_set(err, COM_EFORMAT,
                                         "post_processor: special token \"%.64s\": ids must be "
                                         "integers",
                                         id);
                if (s_check_id(tok, json_integer_value(v), "post_processor special token", err))
                    return COM_EFORMAT;
                p->ids[p->n_ids++] = (int32_t)json_integer_value(v);
            }
            tm->n_special += p->n_ids;
        }
        tm->n++;
    }
    return 0;
}

static int s_bert_pair(com_tokenizer_t *tok, const json_t *pp, const char *key, int32_t *id,
                       com_error_t *err) {
    json_t *v = json_object_get(pp, key);
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(json_array_get(v, 0)) ||
        !json_is_integer(json_array_get(v, 1)))
        return com_error_set(err, COM_EFORMAT, "BertProcessing.%s must be [token, id]", key);
    json_int_t x = json_integer_value(json_array_get(v, 1));
    if (s_check_id(tok, x, "BertProcessing", err))
        return COM_EFORMAT;
    *id = (int32_t)x;
    return 0;
}

static void s_add_piece(tok_template_t *tm, bool is_seq, int seq, int32_t id, int32_t type_id) {
    tok_piece_t *p = &tm->p[tm->n++];
    memset(p, 0, sizeof *p);
    p->is_seq = is_seq;
    p->seq = seq;
    p->type_id = type_id;
    if (!is_seq) {
        p->ids[0] = id;
        p->n_ids = 1;
        tm->n_special++;
    }
}

static int s_parse_post(com_tokenizer_t *tok, const json_t *pp, com_error_t *err) {
    if (!pp || json_is_null(pp))
        return 0;
    if (!json_is_object(pp))
        return com_error_set(err, COM_EFORMAT, "post_processor must be an object");
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type)
        return com_error_set(err, COM_EFORMAT, "post_processor.type is missing");
    if (strcmp(type, "TemplateProcessing") == 0) {
        json_t *specials = json_object_get(pp, "special_tokens");
        if (!json_is_object(specials))
            return com_error_set(err, COM_EFORMAT,
                                 "post_processor.special_tokens must be an object");
        int rc = s_parse_template(tok, &tok->single, json_object_get(pp, "single"), specials, false,
                                  err);
        rc = rc ? rc
                : s_parse_template(tok, &tok->pair, json_object_get(pp, "pair"), specials, true,
                                   err);
        if (rc)
            return rc;
    } else if (strcmp(type, "BertProcessing") == 0) {
        int32_t cls, sep;
        if (s_bert_pair(tok, pp, "cls", &cls, err) || s_bert_pair(tok, pp, "sep", &sep, err))
            return COM_EFORMAT;
        s_add_piece(&tok->single, false, 0, cls, 0);
        s_add_piece(&tok->single, true, 0, 0, 0);
        s_add_piece(&tok->single, false, 0, sep, 0);
        s_add_piece(&tok->pair, false, 0, cls, 0);
        s_add_piece(&tok->pair, true, 0, 0, 0);
        s_add_piece(&tok->pair, false, 0, sep, 0);
        s_add_piece(&tok->pair, true, 1, 0, 1);
        s_add_piece(&tok->pair, false, 0, sep, 1);
    } else {
        return com_error_set(err, COM_EUNSUPPORTED,
                             "post_processor type \"%.64s\" is not supported", type);
    }
    tok->post_kind = TOK_POST_TEMPLATE;
    return 0;
}

static int s_build_id_table(com_tokenizer_t *tok, com_error_t *err) {
    const tok_vocab_t *v = &tok->model.wp.vocab;
    int32_t max = v->max_id;
    for (int32_t i = 0; i < tok->n_added; i++)
        if (tok->added[i].id > max)
            max = tok->added[i].id;
    tok->n_ids = max + 1;
    tok->id_tokens = calloc((size_t)(tok->n_ids ? tok->n_ids : 1), sizeof *tok->id_tokens);
    if (!tok->id_tokens)
        return com_error_set(err, COM_ENOMEM, "id table: out of memory");
    for (int32_t e = v->n_entries - 1; e >= 0; e--) /* first entry wins for shared ids */
        tok->id_tokens[v->tok_id[e]] = v->pool + v->tok_off[e];
    for (int32_t i = 0; i < tok->n_added; i++) /* added tokens take precedence (HF) */
        tok->id_tokens[tok->added[i].id] = tok->added[i].content;
    return 0;
}

int com_tokenizer_from_json(const char *json, size_t len, com_tokenizer_t **out, com_error_t *err) {
    if (!out)
        return com_error_set(err, COM_EINVAL, "tokenizer: out is NULL");
    *out = NULL;
    if (!json && len)
        return com_error_set(err, COM_EINVAL, "tokenizer: json is NULL");
    if (len > S_MAX_JSON_BYTES)
        return com_error_set(err, COM_ETOOLONG, "tokenizer.json over %zu bytes", S_MAX_JSON_BYTES);
    json_t *root = com_json_parse(json ? json : "", len, "tokenizer.json", err);
    if (!root)
        return COM_EFORMAT;
    com_tokenizer_t *tok = calloc(1, sizeof *tok);
    int rc;
    if (!tok) {
        rc = com_error_set(err, COM_ENOMEM, "tokenizer: out of memory");
        goto err;
    }
    if (!json_is_object(root)) {
        rc = com_error_set(err, COM_EFORMAT, "tokenizer.json must hold an object");
        goto err;
    }
    if ((rc = tok_model_parse(&tok->model, json_object_get(root, "model"), err)))
        goto err;
    if ((rc = tok_normalizer_parse(&tok->norm, json_object_get(root, "normalizer"), err)))
        goto err;
    if ((rc = tok_pretok_parse(&tok->pretok, json_object_get(root, "pre_tokenizer"), err)))
        goto err;
    if ((rc = s_parse_added(tok, json_object_get(root, "added_tokens"), err)))
        goto err;
    if ((rc = s_prepare_added(tok, err)))
        goto err;
    if ((rc = s_build_id_table(tok, err)))
        goto err;
    if ((rc = s_parse_post(tok, json_object_get(root, "post_processor"), err)))
        goto err;
    json_decref(root);
    *out = tok;
    return 0;
err:
    json_decref(root);
    com_tokenizer_destroy(&tok);
    return rc;
}

int com_tokenizer_load(const char *path, com_tokenizer_t **out, com_error_t *err) {
    if (!out || !path)
        return com_error_set(err, COM_EINVAL, "tokenizer: NULL path or out");
    *out = NULL;
    char *text;
    size_t len;
    int rc = com_file_read(path, S_MAX_JSON_BYTES, &text, &len, err);
    if (rc)
        return rc;
    rc = com_tokenizer_from_json(text, len, out, err);
    free(text);
    if (rc)
        com_error_prefix(err, rc, "%s", path);
    return rc;
}

void com_tokenizer_destroy(com_tokenizer_t **self_p) {
    if (!self_p || !*self_p)
        return;
    com_tokenizer_t *tok = *self_p;
    tok_model_free(&tok->model);
    for (int32_t i = 0; i < tok->n_added; i++) {
        free(tok->added[i].content);
        free(tok->added[i].match);
    }
    free(tok->added);
    free(tok->raw_matcher.order);
    free(tok->norm_matcher.order);
    free(tok->id_tokens);
    free(tok);
    *self_p = NULL;
}

/* ---------------------------------------------------------------- queries */

int32_t com_tokenizer_vocab_size(const com_tokenizer_t *tok) {
    return tok ? tok->n_ids : 0;
}

int32_t com_tokenizer_token_to_id(const com_tokenizer_t *tok, const char *token) {
    if (!tok || !token)
        return -1;
    int32_t k = s_added_find(tok, token);
    if (k >= 0)
        return tok->added[k].id;
    return tok_model_token_to_id(&tok->model, token, strlen(token));
}

const char *com_tokenizer_id_to_token(const com_tokenizer_t *tok, int32_t id) {
    if (!tok || id < 0 || id >= tok->n_ids)
        return NULL;
    return tok->id_tokens[id];
}

int32_t com_tokenizer_num_special_tokens(const com_tokenizer_t *tok, bool pair) {
    if (!tok || tok->post_kind == TOK_POST_NONE)
        return 0;
    return pair ? tok->pair.n_special : tok->single.n_special;
}
