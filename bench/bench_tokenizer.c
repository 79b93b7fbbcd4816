/* bench/bench_tokenizer.c — single-thread tokenizer throughput: encodes every text of a corpus
 * (tests/reference/tokenizer_bench_corpus.py format) with the production tokenizer, --reps
 * times (each rep runs enough passes to last >= 0.3 s), and prints the median texts/s,
 * tokens/s and MB/s; --json writes them. bench/run_tokenizer_bench.sh runs it next to the HF
 * peer (bench/tokenizer_peer.py) on the same corpus and prints the ratio.
 *
 * Usage: bench_tokenizer --corpus FILE [--tokenizer tokenizer.json] [--reps 5] [--json OUT]
 * One thread; one com_encoding_t reused across calls (the intended use). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/file.h"
#include "common/tokenizer.h"
#include "bench/bench_util.h"

int main(int argc, char **argv) {
    const char *corpus = NULL, *json = NULL;
    const char *tok_path = EMBER_SOURCE_DIR "/models/all-MiniLM-L6-v2/tokenizer.json";
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--corpus") && i + 1 < argc)
            corpus = argv[++i];
        else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
            tok_path = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: %s --corpus FILE [--tokenizer F] [--reps N] [--json OUT]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!corpus || reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_tokenizer: --corpus is required (tests/reference/"
                        "tokenizer_bench_corpus.py writes one); reps in 1..1000\n");
        return 2;
    }
    com_error_t err;
    com_tokenizer_t *tok = NULL;
    if (com_tokenizer_load(tok_path, &tok, &err)) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    char *data;
    size_t len;
    if (com_file_read(corpus, (size_t)1 << 30, &data, &len, &err)) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        return 1;
    }
    if (len < 12 || memcmp(data, "EMTKBNCH", 8) != 0) {
        fprintf(stderr, "bench_tokenizer: %s is not a bench corpus\n", corpus);
        return 1;
    }
    uint32_t n;
    memcpy(&n, data + 8, 4);
    const char **texts = malloc(sizeof *texts * (n ? n : 1));
    uint32_t *lens = malloc(sizeof *lens * (n ? n : 1));
    size_t off = 12, n_bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (off + 4 > len) {
            fprintf(stderr, "bench_tokenizer: corpus truncated\n");
            return 1;
        }
        memcpy(&lens[i], data + off, 4);
        off += 4;
        if (lens[i] > len - off) {
            fprintf(stderr, "bench_tokenizer: corpus truncated\n");
            return 1;
        }
        texts[i] = data + off;
        off += lens[i];
        n_bytes += lens[i];
    }
    com_encoding_t enc;
    com_encoding_init(&enc);
    int64_t n_tokens = 0;
    for (uint32_t i = 0; i < n; i++) { /* warm-up and token count */
        if (com_tokenizer_encode(tok, texts[i], lens[i], NULL, &enc, &err)) {
            fprintf(stderr, "bench_tokenizer: encode: %s\n", err.msg);
            return 1;
        }
        n_tokens += enc.len;
    }
    double *secs = malloc(sizeof *secs * (size_t)reps);
    int passes = 1;
    for (int r = 0; r < reps; r++) {
        double t0, dt;
        for (;;) {
            t0 = bench_now_s();
            for (int p = 0; p < passes; p++)
                for (uint32_t i = 0; i < n; i++)
                    com_tokenizer_encode(tok, texts[i], lens[i], NULL, &enc, &err);
            dt = bench_now_s() - t0;
            if (dt >= 0.3 || passes >= (1 << 20))
                break;
            passes *= 2; /* calibrate on the first rep only */
        }
        secs[r] = dt / passes;
    }
    qsort(secs, (size_t)reps, sizeof *secs, bench_cmp_double);
    double med = secs[reps / 2];
    double tps = n / med, toks = (double)n_tokens / med, mbs = (double)n_bytes / med / 1e6;
    printf("%-22s %12s %14s %10s\n", "ember (1 thread)", "texts/s", "tokens/s", "MB/s");
    printf("%-22s %12.0f %14.0f %10.2f\n", "encode", tps, toks, mbs);
    printf("corpus: %u texts, %zu bytes, %lld tokens; median of %d reps x %d passes\n", n, n_bytes,
           (long long)n_tokens, reps, passes);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "bench_tokenizer: cannot write %s\n", json);
            return 1;
        }
        fprintf(
            f,
            "{\n  \"impl\": \"ember\",\n  \"threads\": 1,\n  \"texts\": %u,\n  \"bytes\": %zu,\n"
            "  \"tokens\": %lld,\n  \"reps\": %d,\n  \"seconds\": %.6f,\n"
            "  \"texts_per_s\": %.1f,\n  \"tokens_per_s\": %.1f,\n  \"mb_per_s\": %.3f\n}\n",
            n, n_bytes, (long long)n_tokens, reps, med, tps, toks, mbs);
        fclose(f);
    }
    free(secs);
    free(texts);
    free(lens);
    free(data);
    com_encoding_free(&enc);
    com_tokenizer_destroy(&tok);
    return 0;
}
