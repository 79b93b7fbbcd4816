/* bench/bench_pool.c — the pool's round-trip overhead seen by the C client (libember): p50/p99
 * of a 1-text (or 1 token-id sequence) embed request through client, broker, worker and back,
 * raw and minus the engine's compute time reported in the reply (tm.comp), plus the broker-only
 * info round trip. Sequential requests on one client, after a warm-up. Prints a table and writes
 * JSON (--json PATH). The pool must be running (bench/run_pool_bench.sh starts one).
 *
 * Usage: bench_pool --broker tcp://127.0.0.1:5555 [--n N] [--text T] [--spin-us N] [--json PATH]
 *   --spin-us: the client busy-polls this long before sleeping (ember_options_t.spin_us)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/ember.h"
#include "bench/bench_util.h"

typedef struct s_row {
    const char *name;
    double rtt50, rtt99, comp50, net50, net99, srv50, cli50;
} s_row_t;

/* kind: 0 embed text, 1 embed ids, 2 info. */
static int s_run(ember_client_t *c, int kind, const char *text, const int32_t *ids, size_t nids,
                 size_t n, s_row_t *row) {
    double *rtt = calloc(n, sizeof *rtt), *net = calloc(n, sizeof *net);
    double *comp = calloc(n, sizeof *comp), *srv = calloc(n, sizeof *srv);
    double *cli = calloc(n, sizeof *cli);
    if (!rtt || !net || !comp || !srv || !cli) {
        fprintf(stderr, "bench_pool: out of memory\n");
        exit(1);
    }
    size_t len = strlen(text);
    const char *texts[1] = {text};
    const int32_t *idv[1] = {ids};
    int rc = 0;
    for (size_t i = 0; i < n + 300 && rc == 0; i++) { /* 300 warm-up requests first */
        ember_result_t *r = NULL;
        ember_info_t info;
        double t0 = 1e6 * bench_now_s();
        if (kind == 0)
            rc = ember_embed(c, texts, &len, 1, NULL, &r);
        else if (kind == 1)
            rc = ember_embed_tokens(c, idv, &nids, 1, NULL, &r);
        else
            rc = ember_info(c, 0, &info);
        double t1 = 1e6 * bench_now_s();
        if (rc != 0) {
            fprintf(stderr, "bench_pool: request failed (%d): %s\n", rc,
                    ember_client_last_error(c));
            break;
        }
        ember_timings_t tm = {0};
        if (r) {
            ember_result_timings(r, &tm);
            ember_result_destroy(&r);
        }
        if (i < 300)
            continue;
        size_t k = i - 300;
        rtt[k] = t1 - t0;
        comp[k] = (double)tm.compute_us;
        net[k] = rtt[k] - comp[k];
        srv[k] = (double)tm.server_us - (double)tm.compute_us;
        cli[k] = rtt[k] - (double)tm.server_us;
    }
    if (rc == 0) {
        row->rtt50 = bench_percentile(rtt, n, 50);
        row->rtt99 = bench_percentile(rtt, n, 99);
        row->comp50 = bench_percentile(comp, n, 50);
        row->net50 = bench_percentile(net, n, 50);
        row->net99 = bench_percentile(net, n, 99);
        row->srv50 = bench_percentile(srv, n, 50);
        row->cli50 = bench_percentile(cli, n, 50);
    }
    free(rtt);
    free(net);
    free(comp);
    free(srv);
    free(cli);
    return rc;
}

int main(int argc, char **argv) {
    const char *broker = NULL, *json = NULL;
    const char *text = "the quick brown fox jumps over";
    size_t n = 5000;
    long spin_us = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--broker") == 0)
            broker = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--json") == 0)
            json = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--text") == 0)
            text = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--n") == 0)
            n = (size_t)strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "--spin-us") == 0)
            spin_us = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_pool --broker EP [--n N] [--text T] [--spin-us N] "
                            "[--json PATH]\n");
            return 2;
        }
    }
    if (!broker || n < 10) {
        fprintf(stderr, "bench_pool: --broker EP is required (and --n >= 10)\n");
        return 2;
    }
    ember_options_t o;
    ember_options_init(&o);
    const char *brokers[1] = {broker};
    o.brokers = brokers;
    o.n_brokers = 1;
    o.spin_us = (int32_t)spin_us;
    ember_client_t *c = NULL;
    char why[256] = "";
    if (ember_client_new(&o, &c, why, sizeof why) != 0) {
        fprintf(stderr, "bench_pool: client: %s\n", why);
        return 1;
    }
    /* the token ids of the text, from the pool itself */
    size_t len = strlen(text), nids = 0;
    const char *texts[1] = {text};
    ember_result_t *tr = NULL;
    if (ember_tokenize(c, texts, &len, 1, NULL, &tr) != 0) {
        fprintf(stderr, "bench_pool: tokenize: %s\n", ember_client_last_error(c));
        return 1;
    }
    const int32_t *tids = ember_result_token_ids(tr, 0, &nids);
    int32_t ids[512];
    if (nids == 0 || nids > 512) {
        fprintf(stderr, "bench_pool: tokenize gave %zu ids\n", nids);
        return 1;
    }
    memcpy(ids, tids, nids * sizeof *ids);
    ember_result_destroy(&tr);

    s_row_t rows[3] = {{.name = "embed text"}, {.name = "embed ids"}, {.name = "info (broker)"}};
    for (int k = 0; k < 3; k++)
        if (s_run(c, k, text, ids, nids, n, &rows[k]) != 0)
            return 1;
    ember_client_destroy(&c);

    printf("pool round trip, C client (libember), %zu sequential requests each, text \"%s\" "
           "(%zu tokens)\n",
           n, text, nids);
    printf("%-16s %9s %9s %9s %10s %10s %10s %10s\n", "request", "rtt p50", "rtt p99", "comp p50",
           "-comp p50", "-comp p99", "srv-comp50", "client50");
    for (int k = 0; k < 3; k++)
        printf("%-16s %9.1f %9.1f %9.1f %10.1f %10.1f %10.1f %10.1f\n", rows[k].name, rows[k].rtt50,
               rows[k].rtt99, rows[k].comp50, rows[k].net50, rows[k].net99, rows[k].srv50,
               rows[k].cli50);
    printf("(us; -comp = round trip minus tm.comp; srv-comp = broker's tm.total - tm.comp, worker "
           "and links included; client = round trip - tm.total)\n");
    printf("target: (round trip - compute) p50 <= 100 us: %.1f us -> %s\n", rows[0].net50,
           rows[0].net50 <= 100.0 ? "met" : "NOT met");
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"client\": \"libember (C)\", \"requests\": %zu, \"tokens\": %zu, \"rows\": [",
                n, nids);
        for (int k = 0; k < 3; k++)
            fprintf(f,
                    "%s{\"name\": \"%s\", \"rtt_p50_us\": %.1f, \"rtt_p99_us\": %.1f, "
                    "\"compute_p50_us\": %.1f, \"rtt_minus_compute_p50_us\": %.1f, "
                    "\"rtt_minus_compute_p99_us\": %.1f, \"server_minus_compute_p50_us\": %.1f, "
                    "\"client_side_p50_us\": %.1f}",
                    k ? ", " : "", rows[k].name, rows[k].rtt50, rows[k].rtt99, rows[k].comp50,
                    rows[k].net50, rows[k].net99, rows[k].srv50, rows[k].cli50);
        fprintf(f, "], \"target_p50_us\": 100}\n");
        fclose(f);
    }
    return 0;
}
