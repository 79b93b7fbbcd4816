/* kernels/attention_tiles.c — the query-tile table of the CUDA attention (contract in
 * attention.h): which packed rows each CTA takes, built on the host per batch.
 *
 * Tiles: a sequence of at least 64 tokens gets tiles of its own (64-row tiles from its first
 * token, the last one partial), so such a tile walks only its sequence's keys and masks only in
 * the last key block; a run of consecutive shorter sequences is packed densely into 64-row tiles
 * (several sequences per tile: fewer CTAs than one tile per short sequence). When that makes more
 * tiles than the table holds (many sequences of 64-127 tokens), the whole batch is packed
 * densely, ceil(n / 64) tiles, which always fit.
 * Order: the longest key walk first (a counting sort on the number of 64-key blocks, capped at
 * 255), so the short tiles fill the last wave (longest-processing-time-first: the ragged bench's
 * last wave left 13% of the SMs' cycles idle in launch order). The tiles are generated twice
 * (count, then place) so nothing is allocated. */
#include "kernels/attention.h"

#include <string.h>

enum { S_KEY_MAX = 255 };

typedef struct {
    const int32_t *cu;
    int32_t n_seqs, seq; /* seq: the sequence of the next tile's first row (monotone) */
    int32_t *cnt;        /* pass 1: tiles per key; pass 2: the next slot per key */
    int32_t *tiles;      /* pass 2: KERN_ATTENTION_TILE_WORDS per tile */
    int32_t n;           /* tiles generated */
} s_gen_t;

/* rows [q0, q0 + rows): counted (pass 1) or placed (pass 2) by its number of key blocks */
static void s_emit(s_gen_t *g, int32_t q0, int32_t rows) {
    while (g->cu[g->seq + 1] <= q0)
        g->seq++;
    int32_t sl = g->seq;
    while (g->cu[sl + 1] < q0 + rows)
        sl++;
    const int32_t kbeg = g->cu[g->seq], kend = g->cu[sl + 1];
    const int32_t blocks = (kend - kbeg + 63) / 64;
    const int32_t key = blocks < S_KEY_MAX ? blocks : S_KEY_MAX;
    if (g->tiles) {
        int32_t *e = g->tiles + (size_t)KERN_ATTENTION_TILE_WORDS * g->cnt[key]++;
        e[0] = q0 | (rows - 1) << 24, e[1] = kbeg, e[2] = kend, e[3] = sl == g->seq;
    } else {
        g->cnt[key]++;
    }
    g->n++;
}

/* rows [a, b) in 64-row tiles from a */
static void s_emit_range(s_gen_t *g, int32_t a, int32_t b) {
    for (int32_t q = a; q < b; q += 64)
        s_emit(g, q, b - q < 64 ? b - q : 64);
}

static void s_generate(s_gen_t *g, bool packed) {
    g->seq = 0, g->n = 0;
    const int32_t *cu = g->cu;
    if (packed) {
        s_emit_range(g, 0, cu[g->n_seqs]);
        return;
    }
    int32_t run = -1; /* first row of the current run of short sequences */
    for (int32_t s = 0; s < g->n_seqs; s++) {
        if (cu[s + 1] - cu[s] < 64) {
            if (run < 0)
                run = cu[s];
            continue;
        }
        if (run >= 0)
            s_emit_range(g, run, cu[s]), run = -1;
        s_emit_range(g, cu[s], cu[s + 1]);
    }
    if (run >= 0)
        s_emit_range(g, run, cu[g->n_seqs]);
}

int32_t kern_attention_tiles_cap(int32_t max_tokens) {
    if (max_tokens < 1 || max_tokens > KERN_ATTENTION_TILES_MAX_TOKENS)
        return 0;
    return (max_tokens + 63) / 64 + (max_tokens + 255) / 256;
}

int32_t kern_attention_tiles_build(int32_t *tiles, int32_t max_tokens, const int32_t *cu_seqlens,
                                   int32_t n_seqs) {
    const int32_t cap = kern_attention_tiles_cap(max_tokens);
    if (cap == 0 || !tiles || !cu_seqlens || n_seqs < 0 || cu_seqlens[0] != 0 ||
        cu_seqlens[n_seqs] > max_tokens)
        return -1;
    int32_t cnt[S_KEY_MAX + 1];
    memset(cnt, 0, sizeof cnt);
    s_gen_t g = {.cu = cu_seqlens, .n_seqs = n_seqs, .cnt = cnt};
    s_generate(&g, false);
    const bool packed = g.n > cap;
    if (packed) {
        memset(cnt, 0, sizeof cnt);
        s_generate(&g, true);
    }
    /* slots: the most key blocks first */
    for (int32_t k = S_KEY_MAX, next = 0; k >= 0; k--) {
        const int32_t c = cnt[k];
        cnt[k] = next, next += c;
    }
    g.tiles = tiles;
    s_generate(&g, packed);
    for (int32_t i = g.n; i < cap; i++)
        for (int w = 0; w < KERN_ATTENTION_TILE_WORDS; w++)
            tiles[(size_t)KERN_ATTENTION_TILE_WORDS * i + w] = -1;
    return g.n;
}
