/* bench/bench_pool_load.c — closed-loop load on a running pool through libember, to find where one
 * broker saturates: THREADS client threads (one ember_client_t each, as the thread-safety rules
 * ask), each keeping INFLIGHT asynchronous requests in flight for SECONDS; every request carries
 * TEXTS copies of TEXT (embed or tokenize), or with --texts-file the next TEXTS lines of that
 * file (one text per line; each thread starts at its own offset and cycles through the file),
 * as in building an index from a corpus. Prints requests/s, texts/s, tokens/s (from the replies'
 * usage), latency p50/p99 and errors; --json PATH writes the same.
 *
 * Usage: bench_pool_load --broker EP [--op embed|tokenize] [--threads N] [--inflight K]
 *                        [--seconds S] [--texts M] [--text T | --texts-file F] [--json PATH]
 * Defaults: embed, 2 threads, 16 in flight each, 3 s, 1 text of "the quick brown fox jumps over".
 * A 0.5 s warm-up precedes the measured window; requests finishing in the window count. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/ember.h"
#include "bench/bench_util.h"

typedef struct s_cfg {
    const char *broker, *op, *text, *json, *texts_file;
    int threads, inflight, texts;
    double seconds;
    char **lines; /* --texts-file: its lines (without the newline) */
    size_t *line_len, n_lines;
} s_cfg_t;

typedef struct s_thread {
    const s_cfg_t *cfg;
    size_t next_line; /* --texts-file: the first line of the next request */
    pthread_t tid;
    uint64_t ok, errors, texts, tokens;
    double *lat; /* latencies (us) of requests finished in the window */
    size_t n_lat, cap_lat;
    char first_error[320];
} s_thread_t;

/* Submit times of the requests in flight, by request id: open addressing with linear probing
 * and backward-shift deletion (ids are never 0, so 0 marks a free cell). */
typedef struct s_sent {
    uint64_t *id;
    double *t;
    size_t mask;
} s_sent_t;

static int s_sent_init(s_sent_t *m, int inflight) {
    size_t cap = 16;
    while (cap < 4 * (size_t)inflight)
        cap *= 2;
    m->id = calloc(cap, sizeof *m->id);
    m->t = calloc(cap, sizeof *m->t);
    m->mask = cap - 1;
    return m->id && m->t ? 0 : -1;
}

static size_t s_sent_home(const s_sent_t *m, uint64_t id) {
    return (size_t)(id * 0x9e3779b97f4a7c15ull >> 32) & m->mask;
}

static void s_sent_put(s_sent_t *m, uint64_t id, double t) {
    size_t i = s_sent_home(m, id);
    while (m->id[i])
        i = (i + 1) & m->mask;
    m->id[i] = id, m->t[i] = t;
}

/* Removes id and returns its time (0 when absent). */
static double s_sent_take(s_sent_t *m, uint64_t id) {
    size_t i = s_sent_home(m, id);
    while (m->id[i] && m->id[i] != id)
        i = (i + 1) & m->mask;
    if (!m->id[i])
        return 0;
    const double t = m->t[i];
    m->id[i] = 0;
    /* shift back the entries of the run that follows, so lookups never stop at this hole */
    for (size_t j = (i + 1) & m->mask; m->id[j]; j = (j + 1) & m->mask) {
        const size_t h = s_sent_home(m, m->id[j]);
        if (((j - h) & m->mask) >= ((j - i) & m->mask)) {
            m->id[i] = m->id[j], m->t[i] = m->t[j];
            m->id[j] = 0;
            i = j;
        }
    }
    return t;
}

static int s_submit(s_thread_t *t, ember_client_t *c, const char **texts, size_t *lens,
                    ember_req_t *req) {
    const s_cfg_t *cfg = t->cfg;
    for (int i = 0; cfg->n_lines && i < cfg->texts; i++) {
        texts[i] = cfg->lines[t->next_line], lens[i] = cfg->line_len[t->next_line];
        t->next_line = (t->next_line + 1) % cfg->n_lines;
    }
    if (strcmp(cfg->op, "tokenize") == 0)
        return ember_submit_tokenize(c, texts, lens, (size_t)cfg->texts, NULL, req);
    return ember_submit_embed(c, texts, lens, (size_t)cfg->texts, NULL, req);
}

static void *s_main(void *arg) {
    s_thread_t *t = arg;
    const s_cfg_t *cfg = t->cfg;
    ember_options_t o;
    ember_options_init(&o);
    o.brokers = &cfg->broker;
    o.n_brokers = 1;
    o.timeout_ms = 10000;
    ember_client_t *c = NULL;
    char err[256];
    if (ember_client_new(&o, &c, err, sizeof err) != EMBER_OK) {
        snprintf(t->first_error, sizeof t->first_error, "client: %s", err);
        t->errors++;
        return NULL;
    }
    const char **texts = malloc((size_t)cfg->texts * sizeof *texts);
    size_t *lens = malloc((size_t)cfg->texts * sizeof *lens);
    s_sent_t sent = {NULL, NULL, 0};
    if (!texts || !lens || s_sent_init(&sent, cfg->inflight) != 0) {
        snprintf(t->first_error, sizeof t->first_error, "out of memory");
        t->errors++;
        free(texts), free(lens), free(sent.id), free(sent.t);
        ember_client_destroy(&c);
        return NULL;
    }
    for (int i = 0; i < cfg->texts; i++) /* --texts-file: refilled per request */
        texts[i] = cfg->text, lens[i] = strlen(cfg->text);
    const double start = bench_now_s(), w0 = start + 0.5, w1 = w0 + cfg->seconds;
    for (int i = 0; i < cfg->inflight; i++) {
        ember_req_t r = 0;
        if (s_submit(t, c, texts, lens, &r) == EMBER_OK)
            s_sent_put(&sent, r, bench_now_s());
    }
    for (;;) {
        ember_req_t r = 0;
        ember_result_t *res = NULL;
        const int rc = ember_wait_any(c, 1000, &r, &res);
        if (rc == EMBER_EAGAIN)
            continue;
        if (rc == EMBER_ENOT_FOUND)
            break;
        const double now = bench_now_s(), t_sent = s_sent_take(&sent, r);
        if (now >= w0 && now < w1) {
            if (rc == EMBER_OK) {
                t->ok++;
                t->texts += (uint64_t)cfg->texts;
                t->tokens += ember_result_usage_tokens(res);
                if (t->n_lat == t->cap_lat) {
                    t->cap_lat = t->cap_lat ? 2 * t->cap_lat : 4096;
                    t->lat = realloc(t->lat, t->cap_lat * sizeof *t->lat);
                }
                if (t->lat)
                    t->lat[t->n_lat++] = (now - t_sent) * 1e6;
            } else {
                if (!t->errors)
                    snprintf(t->first_error, sizeof t->first_error, "%s",
                             ember_client_last_error(c));
                t->errors++;
            }
        }
        ember_result_destroy(&res);
        if (now < w1) {
            ember_req_t n = 0;
            if (s_submit(t, c, texts, lens, &n) == EMBER_OK)
                s_sent_put(&sent, n, bench_now_s());
        }
    }
    free(texts), free(lens), free(sent.id), free(sent.t);
    ember_client_destroy(&c);
    return NULL;
}

/* Reads cfg->texts_file into cfg->lines (empty lines skipped). 0, or -1 with a message. */
static int s_read_lines(s_cfg_t *cfg) {
    FILE *f = fopen(cfg->texts_file, "r");
    if (!f) {
        fprintf(stderr, "bench_pool_load: cannot open %s\n", cfg->texts_file);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, lines_cap = 0;
    ssize_t n;
    int rc = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n == 0)
            continue;
        if (cfg->n_lines == lines_cap) {
            lines_cap = lines_cap ? 2 * lines_cap : 1024;
            char **l = realloc(cfg->lines, lines_cap * sizeof *l);
            size_t *ll = realloc(cfg->line_len, lines_cap * sizeof *ll);
            if (l)
                cfg->lines = l;
            if (ll)
                cfg->line_len = ll;
            if (!l || !ll) {
                rc = -1;
                break;
            }
        }
        if (!(cfg->lines[cfg->n_lines] = strdup(line))) {
            rc = -1;
            break;
        }
        cfg->line_len[cfg->n_lines++] = (size_t)n;
    }
    free(line);
    fclose(f);
    if (rc != 0)
        fprintf(stderr, "bench_pool_load: out of memory reading %s\n", cfg->texts_file);
    else if (cfg->n_lines == 0) {
        fprintf(stderr, "bench_pool_load: %s has no texts\n", cfg->texts_file);
        rc = -1;
    }
    return rc;
}

int main(int argc, char **argv) {
    s_cfg_t cfg = {.op = "embed",
                   .text = "the quick brown fox jumps over",
                   .threads = 2,
                   .inflight = 16,
                   .texts = 1,
                   .seconds = 3.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_pool_load: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--broker"))
            cfg.broker = v;
        else if (!strcmp(a, "--op"))
            cfg.op = v;
        else if (!strcmp(a, "--text"))
            cfg.text = v;
        else if (!strcmp(a, "--texts-file"))
            cfg.texts_file = v;
        else if (!strcmp(a, "--json"))
            cfg.json = v;
        else if (!strcmp(a, "--threads"))
            cfg.threads = atoi(v);
        else if (!strcmp(a, "--inflight"))
            cfg.inflight = atoi(v);
        else if (!strcmp(a, "--texts"))
            cfg.texts = atoi(v);
        else if (!strcmp(a, "--seconds"))
            cfg.seconds = atof(v);
        else {
            fprintf(stderr, "usage: bench_pool_load --broker EP [--op embed|tokenize] "
                            "[--threads N] [--inflight K] [--seconds S] [--texts M] "
                            "[--text T | --texts-file F] [--json PATH]\n");
            return 2;
        }
        i++;
    }
    if (!cfg.broker || cfg.threads < 1 || cfg.threads > 256 || cfg.inflight < 1 ||
        cfg.inflight > 4096 || cfg.texts < 1 || cfg.seconds <= 0 ||
        (strcmp(cfg.op, "embed") && strcmp(cfg.op, "tokenize"))) {
        fprintf(stderr, "bench_pool_load: --broker is required; threads 1-256, inflight 1-4096, "
                        "texts >= 1, seconds > 0, op embed|tokenize\n");
        return 2;
    }
    if (cfg.texts_file && s_read_lines(&cfg) != 0)
        return 2;
    s_thread_t *th = calloc((size_t)cfg.threads, sizeof *th);
    if (!th)
        return 1;
    for (int i = 0; i < cfg.threads; i++) {
        th[i].cfg = &cfg;
        th[i].next_line = cfg.n_lines ? (size_t)i * cfg.n_lines / (size_t)cfg.threads : 0;
        if (pthread_create(&th[i].tid, NULL, s_main, &th[i]) != 0) {
            fprintf(stderr, "bench_pool_load: cannot start thread %d\n", i);
            return 1;
        }
    }
    uint64_t ok = 0, errors = 0, texts = 0, tokens = 0;
    size_t n_lat = 0;
    for (int i = 0; i < cfg.threads; i++) {
        pthread_join(th[i].tid, NULL);
        ok += th[i].ok, errors += th[i].errors, texts += th[i].texts, tokens += th[i].tokens;
        n_lat += th[i].n_lat;
    }
    double *lat = malloc((n_lat ? n_lat : 1) * sizeof *lat);
    size_t k = 0;
    for (int i = 0; i < cfg.threads; i++) {
        if (lat && th[i].lat)
            memcpy(lat + k, th[i].lat, th[i].n_lat * sizeof *lat);
        k += th[i].n_lat;
        if (th[i].errors && th[i].first_error[0])
            fprintf(stderr, "thread %d: %llu errors, first: %s\n", i,
                    (unsigned long long)th[i].errors, th[i].first_error);
        free(th[i].lat);
    }
    double p50 = 0, p99 = 0;
    if (lat && n_lat) {
        qsort(lat, n_lat, sizeof *lat, bench_cmp_double);
        p50 = lat[n_lat / 2];
        p99 = lat[(size_t)ceil((double)(n_lat - 1) * 0.99)]; /* nearest rank at or above */
    }
    const double rps = (double)ok / cfg.seconds;
    printf("%-9s threads %3d x inflight %4d, %4d text(s)/req: %9.0f req/s %10.0f texts/s %11.0f "
           "tokens/s  p50 %8.0f us  p99 %8.0f us  errors %llu\n",
           cfg.op, cfg.threads, cfg.inflight, cfg.texts, rps, (double)texts / cfg.seconds,
           (double)tokens / cfg.seconds, p50, p99, (unsigned long long)errors);
    if (cfg.json) {
        FILE *j = fopen(cfg.json, "w");
        if (j) {
            fprintf(j,
                    "{\"op\": \"%s\", \"threads\": %d, \"inflight\": %d, \"texts_per_request\": "
                    "%d, \"seconds\": %.2f, \"requests_per_s\": %.1f, \"texts_per_s\": %.1f, "
                    "\"tokens_per_s\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"errors\": "
                    "%llu}\n",
                    cfg.op, cfg.threads, cfg.inflight, cfg.texts, cfg.seconds, rps,
                    (double)texts / cfg.seconds, (double)tokens / cfg.seconds, p50, p99,
                    (unsigned long long)errors);
            fclose(j);
        }
    }
    free(lat);
    free(th);
    for (size_t i = 0; i < cfg.n_lines; i++)
        free(cfg.lines[i]);
    free(cfg.lines), free(cfg.line_len);
    return errors ? 1 : 0;
}
