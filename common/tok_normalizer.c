/* common/tok_normalizer.c — normalizers: BertNormalizer, Lowercase, NFD and Sequences of them,
 * all as one configurable character-wise pass (tok_norm_pass_t) run over valid UTF-8:
 *   clean_text   drop U+0000, U+FFFD and Cc/Cf/Co (but \t \n \r); White_Space -> ' '
 *   cjk_spacing  ' ' before and after each CJK ideograph
 *   nfd          canonical decomposition, then canonical reordering of combining-mark runs
 *   drop_mn      drop nonspacing marks (Mn), after the decomposition
 *   lowercase    full lowercase mapping, character by character (as Rust's char::to_lowercase)
 * in that order, which is the order of Hugging Face's BertNormalizer (each of its steps is
 * char-wise except NFD's reordering, which only moves marks within a run of non-starters).
 * ASCII takes a 128-entry byte map; the character tables come from common/unicode_tables.h.
 * Other normalizer types are COM_EUNSUPPORTED, naming the type.
 * Thread-safety: parse once; apply writes only to the caller's scratch. */
#include <stdlib.h>
#include <string.h>

#include "common/tok_internal.h"
#include "common/unicode_tables.h"
#include "common/utf8.h"

static int s_get_bool(const json_t *j, const char *key, bool dflt, bool *out, com_error_t *err) {
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return com_error_set(err, COM_EFORMAT, "normalizer.%s must be true, false or null", key);
    *out = json_is_true(v);
    return 0;
}

static void s_build_ascii(tok_norm_pass_t *p) {
    for (int b = 0; b < 128; b++) {
        int out = b;
        com_uni_rec_t r = com_uni_rec((uint32_t)b);
        if (p->clean_text) {
            bool keep_ws = b == '\t' || b == '\n' || b == '\r';
            if (b == 0 || ((r.flags & COM_UNI_CTRL) && !keep_ws))
                out = -1;
            else if (keep_ws || (r.flags & COM_UNI_WS))
                out = ' ';
        }
        if (out >= 'A' && out <= 'Z' && p->lowercase)
            out += 32;
        p->ascii[b] = (int16_t)out;
    }
}

static int s_parse_one(tok_normalizer_t *n, const json_t *j, com_error_t *err) {
    if (!json_is_object(j))
        return com_error_set(err, COM_EFORMAT, "normalizer must be an object");
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type)
        return com_error_set(err, COM_EFORMAT, "normalizer.type is missing");
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(j, "normalizers");
        if (!json_is_array(list))
            return com_error_set(err, COM_EFORMAT, "Sequence.normalizers must be an array");
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            int rc = s_parse_one(n, e, err);
            if (rc)
                return rc;
        }
        return 0;
    }
    tok_norm_pass_t p;
    memset(&p, 0, sizeof p);
    if (strcmp(type, "BertNormalizer") == 0) {
        int rc = s_get_bool(j, "clean_text", true, &p.clean_text, err);
        rc = rc ? rc : s_get_bool(j, "handle_chinese_chars", true, &p.cjk_spacing, err);
        rc = rc ? rc : s_get_bool(j, "lowercase", true, &p.lowercase, err);
        bool strip = false;
        /* strip_accents: null (or absent) follows lowercase */
        rc = rc ? rc : s_get_bool(j, "strip_accents", p.lowercase, &strip, err);
        if (rc)
            return rc;
        p.nfd = p.drop_mn = strip;
    } else if (strcmp(type, "Lowercase") == 0) {
        p.lowercase = true;
    } else if (strcmp(type, "NFD") == 0) {
        p.nfd = true;
    } else {
        return com_error_set(err, COM_EUNSUPPORTED, "normalizer type \"%.64s\" is not supported",
                             type);
    }
    if (n->n_pass >= TOK_MAX_NORMALIZERS)
        return com_error_set(err, COM_EFORMAT, "more than %d normalizers", TOK_MAX_NORMALIZERS);
    s_build_ascii(&p);
    n->pass[n->n_pass++] = p;
    n->kind = TOK_NORM_CHARWISE;
    return 0;
}

int tok_normalizer_parse(tok_normalizer_t *n, const json_t *j, com_error_t *err) {
    memset(n, 0, sizeof *n);
    if (!j || json_is_null(j))
        return 0;
    return s_parse_one(n, j, err);
}

/* ---- the char-wise pass ---- */

typedef struct s_pass_state {
    const tok_norm_pass_t *p;
    tok_buf_t *out;
    tok_scratch_t *s;
    size_t n_marks;
} s_pass_state_t;

static inline void s_emit_final(s_pass_state_t *st, uint32_t cp) {
    const tok_norm_pass_t *p = st->p;
    tok_buf_t *out = st->out;
    if (cp < 0x80) {
        out->p[out->len++] = (char)(p->lowercase && cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
        return;
    }
    uint8_t f = com_uni_flags(cp);
    if (p->drop_mn && (f & COM_UNI_MN))
        return;
    if (p->lowercase && (f & COM_UNI_LOWER)) {
        uint32_t lo[3];
        int k = com_uni_lower(cp, lo);
        for (int i = 0; i < k; i++)
            out->len += (size_t)com_utf8_encode(lo[i], out->p + out->len);
        return;
    }
    out->len += (size_t)com_utf8_encode(cp, out->p + out->len);
}

/* Stable sort of the pending marks by combining class, then emit them. */
static int s_flush(s_pass_state_t *st) {
    size_t n = st->n_marks;
    if (!n)
        return 0;
    uint32_t *m = st->s->marks; /* [2n]: cp, ccc pairs interleaved */
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            uint32_t cp = m[2 * i], cc = m[2 * i + 1];
            size_t j = i;
            while (j > 0 && m[2 * (j - 1) + 1] > cc) {
                m[2 * j] = m[2 * (j - 1)];
                m[2 * j + 1] = m[2 * (j - 1) + 1];
                j--;
            }
            m[2 * j] = cp;
            m[2 * j + 1] = cc;
        }
        for (size_t i = 0; i < n; i++)
            s_emit_final(st, m[2 * i]);
    } else {
        /* long runs (stacked marks): counting passes by class keep it linear and stable */
        uint8_t seen[256] = {0};
        for (size_t i = 0; i < n; i++)
            seen[m[2 * i + 1]] = 1;
        for (int c = 1; c < 256; c++) {
            if (!seen[c])
                continue;
            for (size_t i = 0; i < n; i++)
                if (m[2 * i + 1] == (uint32_t)c)
                    s_emit_final(st, m[2 * i]);
        }
    }
    st->n_marks = 0;
    return 0;
}

static int s_put(s_pass_state_t *st, uint32_t cp) {
    if (!st->p->nfd) {
        s_emit_final(st, cp);
        return 0;
    }
    uint8_t ccc = cp < 0x80 ? 0 : com_uni_rec(cp).ccc;
    if (ccc == 0) {
        s_flush(st);
        s_emit_final(st, cp);
        return 0;
    }
    tok_scratch_t *s = st->s;
    if (2 * (st->n_marks + 1) > s->marks_cap) {
        size_t cap = s->marks_cap ? s->marks_cap * 2 : 64;
        uint32_t *m = realloc(s->marks, cap * sizeof *m);
        if (!m)
            return COM_ENOMEM;
        s->marks = m;
        s->marks_cap = cap;
    }
    s->marks[2 * st->n_marks] = cp;
    s->marks[2 * st->n_marks + 1] = ccc;
    st->n_marks++;
    return 0;
}

static int s_put_decomposed(s_pass_state_t *st, uint32_t cp, uint8_t flags) {
    if (st->p->nfd && (flags & COM_UNI_DECOMP)) {
        uint32_t d[4];
        int k = com_uni_decompose(cp, d);
        for (int i = 0; i < k; i++)
            if (s_put(st, d[i]))
                return COM_ENOMEM;
        return 0;
    }
    return s_put(st, cp);
}

/* Room for what one non-ASCII character can become: ' ' + 4 code points of 3 lowercase code
 * points of 4 bytes + ' ', plus pending marks flushed at the same time (counted separately). */
#define S_CHAR_ROOM 64

static int s_pass(const tok_norm_pass_t *p, const char *in, size_t len, tok_buf_t *out,
                  tok_scratch_t *s) {
    out->len = 0;
    s_pass_state_t st = {p, out, s, 0};
    const unsigned char *u = (const unsigned char *)in;
    if (tok_buf_reserve(out, len + S_CHAR_ROOM))
        return COM_ENOMEM;
    size_t i = 0;
    while (i < len) {
        unsigned c = u[i];
        if (c < 0x80) {
            if (st.n_marks)
                s_flush(&st);
            int16_t m = p->ascii[c];
            if (m >= 0)
                out->p[out->len++] = (char)m;
            i++;
            continue;
        }
        int n;
        uint32_t cp = com_utf8_decode_valid(u + i, &n);
        i += (size_t)n;
        /* the rest of the input needs at most len - i bytes more, plus this character and the
         * pending marks (each of which may grow to 12 bytes when lowercased) */
        if (tok_buf_reserve(out, out->len + (len - i) + S_CHAR_ROOM + 12 * st.n_marks))
            return COM_ENOMEM;
        uint8_t f = com_uni_flags(cp);
        if (p->clean_text) {
            if (cp == 0xFFFD || (f & COM_UNI_CTRL))
                continue;
            if (f & COM_UNI_WS) {
                if (s_put(&st, ' '))
                    return COM_ENOMEM;
                continue;
            }
        }
        if (p->cjk_spacing && (f & COM_UNI_CJK)) {
            if (s_put(&st, ' ') || s_put_decomposed(&st, cp, f) || s_put(&st, ' '))
                return COM_ENOMEM;
            continue;
        }
        if (s_put_decomposed(&st, cp, f))
            return COM_ENOMEM;
    }
    if (tok_buf_reserve(out, out->len + 12 * st.n_marks + 1))
        return COM_ENOMEM;
    s_flush(&st);
    return 0;
}

int tok_normalize(const tok_normalizer_t *n, const char *in, size_t len, tok_scratch_t *s) {
    if (n->kind == TOK_NORM_NONE || n->n_pass == 0) {
        if (tok_buf_reserve(&s->norm, len + 1))
            return COM_ENOMEM;
        memcpy(s->norm.p, in, len);
        s->norm.len = len;
        return 0;
    }
    int rc = s_pass(&n->pass[0], in, len, &s->norm, s);
    for (int k = 1; k < n->n_pass && rc == 0; k++) {
        rc = s_pass(&n->pass[k], s->norm.p, s->norm.len, &s->norm2, s);
        tok_buf_t t = s->norm;
        s->norm = s->norm2;
        s->norm2 = t;
    }
    return rc;
}
