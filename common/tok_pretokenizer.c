/* common/tok_pretokenizer.c — pre-tokenizers: split a normalized piece into words.
 *   BertPreTokenizer  split on White_Space (dropped), and isolate every punctuation character
 *                     (ASCII punctuation or Unicode category P*, as tokenizers' is_bert_punc)
 *   WhitespaceSplit   split on White_Space only
 *   (none)            the whole piece is one word
 * Empty words never come out. ASCII bytes go through a 128-entry class table.
 * Other pre-tokenizer types are COM_EUNSUPPORTED, naming the type.
 * Thread-safety: parse once; split writes only to the caller's scratch. */
#include <stdlib.h>
#include <string.h>

#include "common/tok_internal.h"
#include "common/unicode_tables.h"
#include "common/utf8.h"

enum { S_WORD = 0, S_SPACE = 1, S_ISOLATE = 2 };

int tok_pretok_parse(tok_pretok_t *p, const json_t *j, com_error_t *err) {
    memset(p, 0, sizeof *p);
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_object(j))
        return com_error_set(err, COM_EFORMAT, "pre_tokenizer must be an object");
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type)
        return com_error_set(err, COM_EFORMAT, "pre_tokenizer.type is missing");
    if (strcmp(type, "BertPreTokenizer") == 0)
        p->kind = TOK_PRETOK_BERT;
    else if (strcmp(type, "WhitespaceSplit") == 0)
        p->kind = TOK_PRETOK_WHITESPACE;
    else
        return com_error_set(err, COM_EUNSUPPORTED, "pre_tokenizer type \"%.64s\" is not supported",
                             type);
    for (int b = 0; b < 128; b++) {
        uint8_t f = com_uni_flags((uint32_t)b);
        p->ascii[b] = (f & COM_UNI_WS)                                      ? S_SPACE
                      : (p->kind == TOK_PRETOK_BERT && (f & COM_UNI_PUNCT)) ? S_ISOLATE
                                                                            : S_WORD;
    }
    return 0;
}

static int s_grow(tok_scratch_t *sc, size_t need) {
    if (need <= sc->words_cap)
        return 0;
    size_t cap = sc->words_cap ? sc->words_cap : 256;
    while (cap < need)
        cap *= 2;
    tok_span_t *w = realloc(sc->words, cap * sizeof *w);
    if (!w)
        return COM_ENOMEM;
    sc->words = w;
    sc->words_cap = cap;
    return 0;
}

int64_t tok_pretok_split(const tok_pretok_t *p, const char *s, size_t len, tok_scratch_t *sc) {
    if (len == 0)
        return 0;
    if (p->kind == TOK_PRETOK_NONE) {
        if (s_grow(sc, 1))
            return COM_ENOMEM;
        sc->words[0] = (tok_span_t){0, (uint32_t)len};
        return 1;
    }
    /* at most one word per byte plus one */
    if (s_grow(sc, len / 2 + 2))
        return COM_ENOMEM;
    const unsigned char *u = (const unsigned char *)s;
    int64_t nw = 0;
    size_t start = 0, i = 0;
    bool in_word = false;
    while (i < len) {
        int cls, n = 1;
        unsigned c = u[i];
        if (c < 0x80) {
            cls = p->ascii[c];
        } else {
            uint32_t cp = com_utf8_decode_valid(u + i, &n);
            uint8_t f = com_uni_flags(cp);
            cls = (f & COM_UNI_WS)                                      ? S_SPACE
                  : (p->kind == TOK_PRETOK_BERT && (f & COM_UNI_PUNCT)) ? S_ISOLATE
                                                                        : S_WORD;
        }
        if (cls == S_WORD) {
            if (!in_word) {
                start = i;
                in_word = true;
            }
            i += (size_t)n;
            continue;
        }
        if ((size_t)nw + 2 > sc->words_cap && s_grow(sc, (size_t)nw + 2))
            return COM_ENOMEM;
        if (in_word) {
            sc->words[nw++] = (tok_span_t){(uint32_t)start, (uint32_t)(i - start)};
            in_word = false;
        }
        if (cls == S_ISOLATE)
            sc->words[nw++] = (tok_span_t){(uint32_t)i, (uint32_t)n};
        i += (size_t)n;
    }
    if (in_word) {
        if ((size_t)nw + 1 > sc->words_cap && s_grow(sc, (size_t)nw + 1))
            return COM_ENOMEM;
        sc->words[nw++] = (tok_span_t){(uint32_t)start, (uint32_t)(len - start)};
    }
    return nw;
}
