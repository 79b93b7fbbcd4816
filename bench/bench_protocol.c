/* bench/bench_protocol.c — single-thread decode time of "chunk" messages (broker -> worker),
 * the protocol's largest hot message: token-id arrays packed by the production encoder
 * (com_proto_encode_chunk) and decoded with com_proto_decode, as a worker does per chunk.
 *
 * Shapes: 256 sequences x 96 tokens (the reference chunk, ~98 KB: ids drawn from the seeded
 * project PRNG below 131072, so about half need a uint32 and half a uint16 on the wire) and
 * 32 x 768 (same token count, long sequences); "strict" is the 256 x 96 chunk with its header
 * moved behind the body, which the decoder reads on its strict path (the cost of a message
 * from another encoder, and the extra cost of any failed decode). Each row decodes the same
 * buffer in a loop for >= 0.2 s per rep and reports the median microseconds per decode and the
 * wire MB/s; the first decode is checked field by field against the source
 * (com_proto_msg_equal).
 *
 * Usage: bench_protocol [--reps 7] [--json OUT]. One thread; nothing else to set up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/msgpack_read.h"
#include "common/prng.h"
#include "common/protocol.h"
#include "bench/bench_util.h"

#define S_VOCAB 131072u

typedef struct s_row {
    const char *name;
    uint32_t seqs;   /* sequences in the chunk */
    uint32_t tokens; /* tokens per sequence */
    bool strict;     /* header moved behind the body: the strict path (what errors cost) */
    size_t bytes;    /* encoded message */
    double us;       /* median microseconds per decode */
} s_row_t;

/* Encodes a chunk of seqs x tokens random ids into *buf; 0 or -1 (message on stderr). */
static int s_make_chunk(uint32_t seqs, uint32_t tokens, com_proto_buf_t *buf) {
    size_t total = (size_t)seqs * tokens;
    int32_t *ids = malloc(sizeof *ids * total);        /* [seqs * tokens], host */
    int32_t *offs = malloc(sizeof *offs * (seqs + 1)); /* [seqs + 1], host */
    if (!ids || !offs) {
        free(ids);
        free(offs);
        fprintf(stderr, "bench_protocol: out of memory\n");
        return -1;
    }
    com_prng_t rng;
    com_prng_seed(&rng, 0x5eed0000u + seqs);
    for (size_t i = 0; i < total; i++)
        ids[i] = (int32_t)com_prng_below(&rng, S_VOCAB);
    for (uint32_t i = 0; i <= seqs; i++)
        offs[i] = (int32_t)(i * tokens);
    com_proto_chunk_t c = {.chunk_id = 3, .normalize = -1, .deadline_ms = 250};
    c.in.kind = COM_PROTO_IN_IDS;
    c.in.n = seqs;
    c.in.ids = ids;
    c.in.offs = offs;
    com_error_t err;
    int rc = com_proto_encode_chunk(42, &c, buf, &err);
    if (rc != 0)
        fprintf(stderr, "bench_protocol: encode: %s\n", err.msg);
    if (rc == 0) { /* the decode must give back what was encoded */
        com_proto_msg_t want, got;
        com_proto_msg_init(&want, COM_PROTO_CHUNK, 42);
        want.u.chunk = c;
        rc = com_proto_decode(buf->data, buf->len, NULL, &got, &err);
        if (rc != 0)
            fprintf(stderr, "bench_protocol: decode: %s\n", err.msg);
        else if (!com_proto_msg_equal(&want, &got)) {
            fprintf(stderr, "bench_protocol: decoded chunk differs from the source\n");
            rc = -1;
        }
        com_proto_msg_free(&got);
    }
    free(ids);
    free(offs);
    return rc == 0 ? 0 : -1;
}

/* Moves the first three pairs ("v", "t", "id", after the 5-byte map32 head the encoder
 * writes) behind the others, so that the decoder takes its strict path. */
static void s_header_last(com_proto_buf_t *buf) {
    com_mpr_t r;
    com_mpr_init(&r, buf->data + 5, buf->len - 5);
    for (int i = 0; i < 6; i++)
        com_mpr_skip(&r, 1, NULL);
    size_t hdr = com_mpr_offset(&r);
    uint8_t *tmp = malloc(hdr);
    if (!tmp)
        return;
    memcpy(tmp, buf->data + 5, hdr);
    memmove(buf->data + 5, buf->data + 5 + hdr, buf->len - 5 - hdr);
    memcpy(buf->data + buf->len - hdr, tmp, hdr);
    free(tmp);
}

static int s_run(s_row_t *row, int reps) {
    com_proto_buf_t buf = {0};
    if (s_make_chunk(row->seqs, row->tokens, &buf) != 0)
        return -1;
    if (row->strict)
        s_header_last(&buf);
    row->bytes = buf.len;
    double *secs = malloc(sizeof *secs * (size_t)reps);
    if (!secs) {
        com_proto_buf_free(&buf);
        return -1;
    }
    int iters = 1, rc = 0;
    com_proto_msg_t m;
    for (int r = 0; r < reps && rc == 0; r++) {
        double t0, dt;
        for (;;) {
            t0 = bench_now_s();
            for (int i = 0; i < iters && rc == 0; i++) {
                rc = com_proto_decode(buf.data, buf.len, NULL, &m, NULL);
                com_proto_msg_free(&m);
            }
            dt = bench_now_s() - t0;
            if (dt >= 0.2 || iters >= (1 << 24) || rc != 0)
                break;
            iters *= 2; /* calibrates on the first rep only */
        }
        secs[r] = dt / iters;
    }
    qsort(secs, (size_t)reps, sizeof *secs, bench_cmp_double);
    row->us = secs[reps / 2] * 1e6;
    free(secs);
    com_proto_buf_free(&buf);
    if (rc != 0)
        fprintf(stderr, "bench_protocol: %s: decode failed (%d)\n", row->name, rc);
    return rc == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *json = NULL;
    int reps = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--reps N] [--json OUT]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_protocol: reps in 1..1000\n");
        return 2;
    }
    s_row_t rows[] = {
        {.name = "chunk 256x96", .seqs = 256, .tokens = 96},
        {.name = "chunk 32x768", .seqs = 32, .tokens = 768},
        {.name = "256x96 strict", .seqs = 256, .tokens = 96, .strict = true},
    };
    const int n_rows = (int)(sizeof rows / sizeof rows[0]);
    printf("%-17s %10s %10s %12s %10s %12s\n", "decode (1 thread)", "seqs", "tokens", "bytes", "us",
           "MB/s");
    for (int i = 0; i < n_rows; i++) {
        if (s_run(&rows[i], reps) != 0)
            return 1;
        printf("%-17s %10u %10u %12zu %10.1f %12.1f\n", rows[i].name, rows[i].seqs,
               rows[i].seqs * rows[i].tokens, rows[i].bytes, rows[i].us,
               (double)rows[i].bytes / rows[i].us);
    }
    printf("median of %d reps; ids uniform below %u (seeded)\n", reps, S_VOCAB);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "bench_protocol: cannot write %s\n", json);
            return 1;
        }
        fprintf(f, "{\n  \"impl\": \"ember\",\n  \"threads\": 1,\n  \"reps\": %d,\n  \"rows\": [\n",
                reps);
        for (int i = 0; i < n_rows; i++)
            fprintf(f,
                    "    {\"name\": \"%s\", \"seqs\": %u, \"tokens\": %u, \"bytes\": %zu, "
                    "\"us_per_decode\": %.2f, \"mb_per_s\": %.1f}%s\n",
                    rows[i].name, rows[i].seqs, rows[i].seqs * rows[i].tokens, rows[i].bytes,
                    rows[i].us, (double)rows[i].bytes / rows[i].us, i + 1 < n_rows ? "," : "");
        fprintf(f, "  ]\n}\n");
        fclose(f);
    }
    return 0;
}
