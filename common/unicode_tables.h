/* common/unicode_tables.h — character properties for the tokenizer, looked up in the generated
 * tables of common/unicode_tables.c (written by common/gen_unicode_tables.py from the Unicode
 * Character Database at the versions Hugging Face `tokenizers` effectively uses; see
 * docs/tokenizer.md):
 *   COM_UNI_CTRL    general category Cc, Cf or Co (Unicode 8.0)     BertNormalizer is_control
 *   COM_UNI_PUNCT   category P* (8.0) or ASCII punctuation          BertPreTokenizer punctuation
 *   COM_UNI_MN      category Mn (8.0)                               strip_accents drops these
 *   COM_UNI_WS      White_Space                                     char::is_whitespace
 *   COM_UNI_CJK     BertNormalizer's CJK ideograph blocks            handle_chinese_chars
 *   COM_UNI_DECOMP  has a canonical decomposition (9.0, Hangul too)  NFD
 *   COM_UNI_LOWER   lowercase differs from the character (17.0)      char::to_lowercase
 *   COM_UNI_WORD    regex \w approximation (17.0 categories)         single_word added tokens
 * plus the canonical combining class (9.0).
 * Invariants: every code point 0..0x10FFFF has a record; code points above read as record 0.
 * Thread-safety: immutable data, pure functions. */
#ifndef EMBER_COMMON_UNICODE_TABLES_H
#define EMBER_COMMON_UNICODE_TABLES_H

#include <stdint.h>

enum {
    COM_UNI_CTRL = 1 << 0,
    COM_UNI_PUNCT = 1 << 1,
    COM_UNI_MN = 1 << 2,
    COM_UNI_WS = 1 << 3,
    COM_UNI_CJK = 1 << 4,
    COM_UNI_DECOMP = 1 << 5,
    COM_UNI_LOWER = 1 << 6,
    COM_UNI_WORD = 1 << 7,
};

typedef struct com_uni_rec {
    uint8_t flags; /* COM_UNI_* bits */
    uint8_t ccc;   /* canonical combining class */
} com_uni_rec_t;

extern const com_uni_rec_t com_uni_recs[];
extern const uint16_t com_uni_stage1[];     /* [0x1100] block of each 256 code points */
extern const uint8_t com_uni_stage2[][256]; /* [blocks][256] record index */
extern const int32_t com_uni_decomp_count;
extern const uint32_t com_uni_decomp_cp[];   /* [count] sorted code points */
extern const uint32_t com_uni_decomp_ref[];  /* [count] pool offset << 8 | length */
extern const uint32_t com_uni_decomp_pool[]; /* full (recursive) canonical decompositions */
extern const int32_t com_uni_lower_count;
extern const uint32_t com_uni_lower_cp[];
extern const uint32_t com_uni_lower_ref[];
extern const uint32_t com_uni_lower_pool[];

static inline com_uni_rec_t com_uni_rec(uint32_t cp) {
    if (cp > 0x10FFFF)
        return com_uni_recs[0];
    return com_uni_recs[com_uni_stage2[com_uni_stage1[cp >> 8]][cp & 0xFF]];
}

static inline uint8_t com_uni_flags(uint32_t cp) {
    return com_uni_rec(cp).flags;
}

/* Full canonical decomposition (NFD, Unicode 9.0) of cp into out[0..return), at most 4 code
 * points; returns 1 with out[0] = cp when cp does not decompose. Hangul is algorithmic. */
int com_uni_decompose(uint32_t cp, uint32_t out[4]);

/* Lowercase of cp (Unicode 17.0 full mapping, e.g. U+0130 -> "i\u0307") into out[0..return),
 * at most 3 code points; returns 1 with out[0] = cp when cp has no lowercase mapping. */
int com_uni_lower(uint32_t cp, uint32_t out[3]);

#endif
