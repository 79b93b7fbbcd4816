/* common/utf8.h — UTF-8 validation, decoding and repair.
 *
 * Repair follows the Unicode "maximal subpart" practice exactly as Python's
 * bytes.decode("utf-8", "replace") does: every maximal prefix of a would-be valid sequence that
 * cannot be completed (a lone continuation byte, a truncated sequence, an overlong lead E0 80,
 * a surrogate ED A0.., a lead past U+10FFFF F4 90.., bytes C0 C1 F5..FF) becomes one U+FFFD.
 * Valid input comes out byte-identical.
 * Thread-safety: pure functions. */
#ifndef EMBER_COMMON_UTF8_H
#define EMBER_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the longest valid UTF-8 prefix of s[0..len) (== len when all of it is valid). */
size_t com_utf8_valid_prefix(const char *s, size_t len);

/* Upper bound of com_utf8_repair's output for len input bytes. */
static inline size_t com_utf8_repair_bound(size_t len) {
    return len * 3;
}

/* Writes the repaired text of s[0..len) to out (room for com_utf8_repair_bound(len) bytes);
 * returns the number of bytes written. */
size_t com_utf8_repair(const char *s, size_t len, char *out);

/* Decodes one code point from VALID UTF-8 at s (s[0] must start a sequence that fits). Sets
 * *n to its byte length. */
static inline uint32_t com_utf8_decode_valid(const unsigned char *s, int *n) {
    uint32_t c = s[0];
    if (c < 0x80) {
        *n = 1;
        return c;
    }
    if (c < 0xE0) {
        *n = 2;
        return ((c & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (c < 0xF0) {
        *n = 3;
        return ((c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *n = 4;
    return ((c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
           (s[3] & 0x3F);
}

/* Encodes cp (<= 0x10FFFF) into out (4 bytes of room); returns the byte length. */
static inline int com_utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Number of code points in valid UTF-8 s[0..len). */
size_t com_utf8_count(const char *s, size_t len);

#endif
