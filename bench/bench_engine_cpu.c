/* bench/bench_engine_cpu.c — end-to-end throughput of the CPU engine (worker/engine.h, "cpu") on
 * a text corpus: tokenize with our tokenizer (common/tokenizer.h, truncation to the model's
 * max_seq_length), pack texts into batches by a token budget in input order, submit each batch as
 * soon as it is formed (tokenizing the next batch overlaps the compute thread), wait for all.
 * Each (budget, threads) setting runs one warm-up and --reps timed repetitions; the table gives
 * medians: texts/s, tokens/s, ms per batch, and the tokenize share. Timing assertions do not
 * belong here: compare with bench/engine_peer.py (bench/run_engine_bench.sh runs both).
 *
 * Usage: bench_engine_cpu --texts FILE [--model DIR] [--budgets 4096,8192] [--threads 0,1]
 *                         [--reps 3] [--json PATH]
 * (texts: one per line, e.g. from bench/make_bench_texts.py). */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/tokenizer.h"
#include "kernels/blas_core.h"
#include "worker/engine.h"
#include "bench/bench_util.h"

typedef struct s_run {
    int32_t budget, threads, n_batches;
    double texts_s, tokens_s, ms_batch, tokenize_s, total_s;
} s_run_t;

static int s_parse_list(const char *s, int32_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        out[n++] = (int32_t)strtol(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
        if (end == s && *s)
            break;
    }
    return n;
}

/* Reads lines into a malloc'd array of strings. */
static char **s_read_lines(const char *path, int32_t *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char **lines = NULL;
    int32_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        if (len == 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            lines = realloc(lines, (size_t)cap * sizeof *lines);
        }
        lines[n++] = strdup(line);
    }
    free(line);
    fclose(f);
    *n_out = n;
    return lines;
}

typedef struct s_ctx {
    const com_tokenizer_t *tok;
    char **texts;
    int32_t n_texts;
    int32_t max_len;
    int32_t *ids, *cu; /* [n_texts * max_len], [n_texts + 1] scratch */
    wrk_result_t **results;
} s_ctx_t;

/* One end-to-end pass; returns 0 and fills *r (seconds, batches, tokens). */
static int s_pass(s_ctx_t *c, wrk_engine_t *e, int32_t budget, double *seconds, double *tokenize_s,
                  int32_t *n_batches, int64_t *n_tokens) {
    com_encoding_t enc;
    com_encoding_init(&enc);
    com_encode_opts_t o = com_encode_opts_default();
    o.max_length = c->max_len;
    o.truncate = true;
    com_error_t err = {0};
    int32_t nb = 0, bs = 0, bt = 0;
    int64_t total = 0;
    double tok_time = 0;
    const double t0 = bench_now_s();
    int rc = 0;
    for (int32_t i = 0; i <= c->n_texts && rc == 0; i++) {
        int32_t len = 0;
        if (i < c->n_texts) {
            double a = bench_now_s();
            rc = com_tokenizer_encode(c->tok, c->texts[i], strlen(c->texts[i]), &o, &enc, &err);
            tok_time += bench_now_s() - a;
            if (rc != 0)
                break;
            len = enc.len;
        }
        /* flush the open batch when this text does not fit, or at the end */
        if (bs > 0 && (i == c->n_texts || bt + len > budget)) {
            wrk_batch_t b = {bs, bt, c->ids, NULL, c->cu, 0, -1};
            rc = wrk_engine_submit(e, &b, &c->results[nb], &err);
            if (rc != 0)
                break;
            nb++;
            bs = bt = 0;
        }
        if (i < c->n_texts) {
            c->cu[0] = 0;
            memcpy(c->ids + bt, enc.ids, (size_t)len * sizeof *c->ids);
            bt += len;
            c->cu[++bs] = bt;
            total += len;
        }
    }
    for (int32_t b = 0; b < nb; b++) {
        int w = wrk_result_wait(c->results[b], &err);
        if (w != 0 && rc == 0)
            rc = w;
        wrk_result_destroy(&c->results[b]);
    }
    *seconds = bench_now_s() - t0;
    *tokenize_s = tok_time;
    *n_batches = nb;
    *n_tokens = total;
    com_encoding_free(&enc);
    if (rc != 0)
        fprintf(stderr, "bench: %s\n", err.msg);
    return rc;
}

int main(int argc, char **argv) {
    kern_blas_reexec_for_core();
    const char *texts_path = NULL, *json_path = NULL;
    const char *model_dir = EMBER_SOURCE_DIR "/models/all-MiniLM-L6-v2";
    int32_t budgets[8] = {4096, 8192}, n_budgets = 2, threads[8] = {0}, n_threads = 1, reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--texts") && i + 1 < argc)
            texts_path = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model_dir = argv[++i];
        else if (!strcmp(argv[i], "--budgets") && i + 1 < argc)
            n_budgets = s_parse_list(argv[++i], budgets, 8);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            n_threads = s_parse_list(argv[++i], threads, 8);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json_path = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s --texts FILE [--model DIR] [--budgets 4096,8192] [--threads 0,1] "
                    "[--reps 3] [--json PATH]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!texts_path || reps < 1 || n_budgets < 1 || n_threads < 1) {
        fprintf(stderr, "bench: --texts FILE is required (bench/make_bench_texts.py makes one)\n");
        return 2;
    }
    s_ctx_t c = {0};
    c.texts = s_read_lines(texts_path, &c.n_texts);
    if (!c.texts || c.n_texts == 0) {
        fprintf(stderr, "bench: cannot read texts from %s\n", texts_path);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", model_dir);
    com_tokenizer_t *tok = NULL;
    com_error_t err = {0};
    if (com_tokenizer_load(path, &tok, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    c.tok = tok;
    int32_t max_budget = 0;
    for (int i = 0; i < n_budgets; i++)
        max_budget = budgets[i] > max_budget ? budgets[i] : max_budget;
    s_run_t runs[64];
    int n_runs = 0;
    int64_t n_tokens = 0;
    printf("OpenBLAS kernels: %s\n", openblas_get_corename());
    printf("%-8s %-8s %10s %12s %12s %10s %12s\n", "budget", "threads", "texts/s", "tokens/s",
           "ms/batch", "batches", "tokenize %");
    for (int ti = 0; ti < n_threads; ti++) {
        wrk_engine_t *e = NULL;
        wrk_engine_opts_t eo = {"cpu", threads[ti], max_budget};
        if (wrk_engine_new(model_dir, &eo, &e, &err) != 0) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        c.max_len = wrk_engine_model(e)->max_seq_length;
        if (!c.ids) {
            c.ids = malloc((size_t)c.n_texts * (size_t)c.max_len * sizeof *c.ids);
            c.cu = malloc(((size_t)c.n_texts + 1) * sizeof *c.cu);
            c.results = calloc((size_t)c.n_texts, sizeof *c.results);
        }
        for (int bi = 0; bi < n_budgets; bi++) {
            double secs[64], toks[64];
            int32_t nb = 0;
            for (int r = 0; r <= reps && r < 64; r++) {
                double s, ts;
                if (s_pass(&c, e, budgets[bi], &s, &ts, &nb, &n_tokens) != 0)
                    return 1;
                if (r > 0) { /* r == 0 is the warm-up */
                    secs[r - 1] = s;
                    toks[r - 1] = ts;
                }
            }
            qsort(secs, (size_t)reps, sizeof *secs, bench_cmp_double);
            qsort(toks, (size_t)reps, sizeof *toks, bench_cmp_double);
            double med = secs[reps / 2], tmed = toks[reps / 2];
            s_run_t *ru = &runs[n_runs++];
            *ru =
                (s_run_t){budgets[bi],    threads[ti], nb, c.n_texts / med, (double)n_tokens / med,
                          1e3 * med / nb, tmed,        med};
            printf("%-8d %-8d %10.1f %12.0f %12.1f %10d %11.1f%%\n", ru->budget, ru->threads,
                   ru->texts_s, ru->tokens_s, ru->ms_batch, nb, 100.0 * tmed / med);
            fflush(stdout);
        }
        wrk_engine_destroy(&e);
    }
    s_run_t *best = &runs[0];
    for (int i = 1; i < n_runs; i++)
        if (runs[i].texts_s > best->texts_s)
            best = &runs[i];
    printf("ember best: budget %d, threads %d: %.1f texts/s, %.0f tokens/s (%d texts, %lld "
           "tokens)\n",
           best->budget, best->threads, best->texts_s, best->tokens_s, (int)c.n_texts,
           (long long)n_tokens);
    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!f) {
            fprintf(stderr, "bench: cannot write %s\n", json_path);
            return 1;
        }
        fprintf(f,
                "{\"bench\": \"engine_cpu\", \"n_texts\": %d, \"n_tokens\": %lld, \"reps\": %d,\n"
                " \"blas_core\": \"%s\", \"runs\": [",
                (int)c.n_texts, (long long)n_tokens, (int)reps, openblas_get_corename());
        for (int i = 0; i < n_runs; i++)
            fprintf(f,
                    "%s\n  {\"budget\": %d, \"threads\": %d, \"batches\": %d, \"texts_per_s\": "
                    "%.2f, \"tokens_per_s\": %.1f, \"ms_per_batch\": %.2f, \"tokenize_s\": %.4f, "
                    "\"seconds_median\": %.4f}",
                    i ? "," : "", runs[i].budget, runs[i].threads, runs[i].n_batches,
                    runs[i].texts_s, runs[i].tokens_s, runs[i].ms_batch, runs[i].tokenize_s,
                    runs[i].total_s);
        fprintf(f,
                "],\n \"best\": {\"budget\": %d, \"threads\": %d, \"texts_per_s\": %.2f, "
                "\"tokens_per_s\": %.1f}}\n",
                best->budget, best->threads, best->texts_s, best->tokens_s);
        fclose(f);
    }
    for (int32_t i = 0; i < c.n_texts; i++)
        free(c.texts[i]);
    free(c.texts);
    free(c.ids);
    free(c.cu);
    free(c.results);
    com_tokenizer_destroy(&tok);
    return 0;
}
