/* common/unicode_lookup.c — the lookups of unicode_tables.h that need more than one table
 * read: decomposition (binary search in the generated pool, Hangul by formula) and lowercase.
 * Thread-safety: pure functions over immutable tables. */
#include "common/unicode_tables.h"

static int s_find(const uint32_t *keys, int32_t n, uint32_t cp) {
    int32_t lo = 0, hi = n - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] == cp)
            return mid;
        if (keys[mid] < cp)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int com_uni_decompose(uint32_t cp, uint32_t out[4]) {
    if (cp >= 0xAC00 && cp <= 0xD7A3) {
        uint32_t s = cp - 0xAC00;
        out[0] = 0x1100 + s / (21 * 28);
        out[1] = 0x1161 + (s % (21 * 28)) / 28;
        if (s % 28 == 0)
            return 2;
        out[2] = 0x11A7 + s % 28;
        return 3;
    }
    int k = s_find(com_uni_decomp_cp, com_uni_decomp_count, cp);
    if (k < 0) {
        out[0] = cp;
        return 1;
    }
    uint32_t ref = com_uni_decomp_ref[k];
    int n = (int)(ref & 0xFF);
    if (n > 4)
        n = 4; /* the generator keeps every decomposition within 4 */
    for (int i = 0; i < n; i++)
        out[i] = com_uni_decomp_pool[(ref >> 8) + (uint32_t)i];
    return n;
}

int com_uni_lower(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    int k = s_find(com_uni_lower_cp, com_uni_lower_count, cp);
    if (k < 0) {
        out[0] = cp;
        return 1;
    }
    uint32_t ref = com_uni_lower_ref[k];
    int n = (int)(ref & 0xFF);
    if (n > 3)
        n = 3;
    for (int i = 0; i < n; i++)
        out[i] = com_uni_lower_pool[(ref >> 8) + (uint32_t)i];
    return n;
}
