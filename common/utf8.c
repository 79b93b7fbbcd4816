/* common/utf8.c — see utf8.h. The validator checks 8 ASCII bytes at a time and falls back to a
 * byte-exact state machine (the well-formed byte sequences of Unicode Table 3-7).
 * Thread-safety: pure functions. */
#include "common/utf8.h"

#include <string.h>

/* Length of the valid sequence starting at s[i] (1..4), or 0 when invalid; *bad set to the
 * length of the maximal invalid subpart (>= 1) when invalid. */
static int s_seq(const unsigned char *s, size_t i, size_t len, int *bad) {
    unsigned c = s[i];
    size_t left = len - i;
    if (c < 0x80)
        return 1;
    unsigned lo = 0x80, hi = 0xBF;
    int need;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    /* second byte has the restricted range, the rest 80..BF */
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= left) {
            *bad = k;
            return 0;
        }
        unsigned b = s[i + (size_t)k];
        unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *bad = k;
            return 0;
        }
    }
    return need + 1;
}

size_t com_utf8_valid_prefix(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        if (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int bad;
        int n = s_seq(s, i, len, &bad);
        if (n == 0)
            return i;
        i += (size_t)n;
    }
    return len;
}

size_t com_utf8_repair(const char *str, size_t len, char *out) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, o = 0;
    while (i < len) {
        size_t ok = com_utf8_valid_prefix(str + i, len - i);
        memcpy(out + o, s + i, ok);
        o += ok;
        i += ok;
        if (i >= len)
            break;
        int bad = 1;
        (void)s_seq(s, i, len, &bad);
        out[o++] = (char)0xEF;
        out[o++] = (char)0xBF;
        out[o++] = (char)0xBD;
        i += (size_t)bad;
    }
    return o;
}

size_t com_utf8_count(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += (s[i] & 0xC0) != 0x80;
    return n;
}
