/* client/cli_embed.c — `ember embed`: texts (one per line) to embeddings, in process or through
 * a pool (--broker / --redis, with libember); also the body of `ember tokenize` in pool mode.
 *
 * In process, order of work: load the model (config, weights, tokenizer) so model errors come
 * first; read and tokenize all input so input errors are reported before anything is written;
 * then run batches formed by a token budget through the engine, two in flight (the engine
 * computes batch N while this thread writes batch N-1), writing results in input order.
 *
 * Pool mode: create the client (a bad endpoint or an unreachable Redis fails first), read all
 * input, then send requests of at most --request-texts (CLI_POOL_REQ_TEXTS) texts and
 * CLI_POOL_REQ_BYTES bytes, --in-flight (CLI_POOL_IN_FLIGHT) at a time (asynchronous API, one
 * thread), writing each request's results as soon as every request before it is written, so
 * the output is in input order. Any failed request stops the run before its results are written
 * (and a file output is discarded).
 *
 * Output either way: JSON lines {"index": i, "embedding": [...], "tokens": n} or raw
 * little-endian float32 (--format f32). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "common/model_info.h"
#include "common/protocol.h"
#include "kernels/blas_core.h"
#include "worker/engine.h"

#define S_IN_FLIGHT 2

typedef struct s_opts {
    const char *model_dir;
    const char *input;
    const char *output;
    int f32;
    long dimensions; /* 0 = full */
    int normalize;   /* -1 model default, 0 off */
    int truncate;
    long max_length; /* 0 = model's max_seq_length */
    long batch_tokens;
    long threads;
    int inproc_only; /* --max-length, --batch-tokens or --threads was given */
    cli_pool_opts_t pool;
} s_opts_t;

static void s_usage(FILE *f) {
    fputs("usage: ember embed --model DIR [--input FILE] [--output FILE] [--format jsonl|f32]\n"
          "                   [--dimensions N] [--no-normalize] [--no-truncate]\n"
          "                   [--max-length N] [--batch-tokens N] [--threads N]\n"
          "       ember embed (--broker ENDPOINT [--broker ENDPOINT ...] | --redis URL)\n"
          "                   [--input FILE] [--output FILE] [--format jsonl|f32]\n"
          "                   [--dimensions N] [--no-normalize] [--no-truncate]\n"
          "                   [--timeout-ms N] [--in-flight N] [--request-texts N]\n"
          "\n"
          "Reads one text per line (stdin by default) and writes one JSON object per line,\n"
          "{\"index\": i, \"embedding\": [...], \"tokens\": n}, or raw little-endian float32\n"
          "with --format f32. Texts over the model's limit are truncated (as\n"
          "sentence-transformers does) unless --no-truncate is given, which refuses them.\n"
          "  --dimensions N    keep the first N dimensions (Matryoshka), re-normalised\n"
          "  --no-normalize    raw pooled vectors instead of the model's L2 normalisation\n"
          "  --max-length N    token limit per text (default: the model's max_seq_length)\n"
          "  --batch-tokens N  tokens per engine batch (default 8192)\n"
          "  --threads N       compute threads (default: all cores)\n"
          "  --broker ENDPOINT embed through the pool's broker(s) at ENDPOINT (repeatable,\n"
          "                    fails over between them), e.g. tcp://127.0.0.1:5555\n"
          "  --redis URL       embed through the brokers registered in Redis at URL\n"
          "  --timeout-ms N    pool mode: deadline of each request (default 30000)\n"
          "  --in-flight N     pool mode: requests in flight at once (default 4, at most 64)\n"
          "  --request-texts N pool mode: texts per request (default and most 256; at most\n"
          "                    256 KiB of text either way); fewer of both keep fewer tokens\n"
          "                    queued ahead of other clients' queries on a shared pool\n",
          f);
}

/* A pool-mode option's integer in [1, hi] into *out; -1 after saying so on stderr. */
static int s_pool_int(const char *opt, const char *v, long hi, long *out) {
    if (cli_parse_int(v, 1, hi, out) == 0)
        return 0;
    fprintf(stderr, "ember embed: %s needs an integer in [1, %ld]\n", opt, hi);
    return -1;
}

static int s_parse(int argc, char **argv, s_opts_t *o) {
    static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                             {"input", required_argument, 0, 'i'},
                                             {"output", required_argument, 0, 'o'},
                                             {"format", required_argument, 0, 'f'},
                                             {"dimensions", required_argument, 0, 'd'},
                                             {"no-normalize", no_argument, 0, 'N'},
                                             {"no-truncate", no_argument, 0, 'T'},
                                             {"max-length", required_argument, 0, 'L'},
                                             {"batch-tokens", required_argument, 0, 'b'},
                                             {"threads", required_argument, 0, 't'},
                                             {"broker", required_argument, 0, 'B'},
                                             {"redis", required_argument, 0, 'R'},
                                             {"timeout-ms", required_argument, 0, 'X'},
                                             {"in-flight", required_argument, 0, 'F'},
                                             {"request-texts", required_argument, 0, 'Q'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    *o = (s_opts_t){.normalize = -1, .truncate = 1, .batch_tokens = 8192};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "m:i:o:f:d:hNT", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            o->model_dir = optarg;
            break;
        case 'i':
            o->input = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "jsonl") == 0)
                o->f32 = 0;
            else if (strcmp(optarg, "f32") == 0)
                o->f32 = 1;
            else {
                fprintf(stderr, "ember embed: --format must be jsonl or f32, not '%s'\n", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'd':
            if (cli_parse_int(optarg, 1, 1 << 20, &o->dimensions) != 0) {
                fprintf(stderr, "ember embed: --dimensions needs a positive integer\n");
                return CLI_EXIT_USAGE;
            }
            break;
        case 'N':
            o->normalize = 0;
            break;
        case 'T':
            o->truncate = 0;
            break;
        case 'L':
            if (cli_parse_int(optarg, 1, 1 << 20, &o->max_length) != 0) {
                fprintf(stderr, "ember embed: --max-length needs a positive integer\n");
                return CLI_EXIT_USAGE;
            }
            o->inproc_only = 1;
            break;
        case 'b':
            if (cli_parse_int(optarg, 1, 1 << 24, &o->batch_tokens) != 0) {
                fprintf(stderr, "ember embed: --batch-tokens needs a positive integer\n");
                return CLI_EXIT_USAGE;
            }
            o->inproc_only = 1;
            break;
        case 't':
            if (cli_parse_int(optarg, 0, 1024, &o->threads) != 0) {
                fprintf(stderr, "ember embed: --threads needs an integer in [0, 1024]\n");
                return CLI_EXIT_USAGE;
            }
            o->inproc_only = 1;
            break;
        case 'B':
            if (cli_pool_add_broker(&o->pool, optarg, "embed") != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'R':
            o->pool.redis_url = optarg;
            break;
        case 'X':
            if (s_pool_int("--timeout-ms", optarg, 86400000, &o->pool.timeout_ms) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'F':
            if (s_pool_int("--in-flight", optarg, CLI_POOL_MAX_IN_FLIGHT, &o->pool.in_flight) != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'Q':
            if (s_pool_int("--request-texts", optarg, CLI_POOL_REQ_TEXTS, &o->pool.request_texts) !=
                0)
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            s_usage(stdout);
            return -1;
        default:
            fprintf(stderr, "ember embed: unknown or incomplete option '%s'\n", argv[optind - 1]);
            s_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ember embed: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    int pool = o->pool.n_brokers > 0 || o->pool.redis_url;
    if (o->pool.n_brokers > 0 && o->pool.redis_url) {
        fprintf(stderr, "ember embed: give --broker or --redis, not both\n");
        return CLI_EXIT_USAGE;
    }
    if (pool && o->model_dir) {
        fprintf(stderr, "ember embed: --model runs in process; it does not go with --broker or "
                        "--redis\n");
        return CLI_EXIT_USAGE;
    }
    if (pool && o->inproc_only) {
        fprintf(stderr, "ember embed: --max-length, --batch-tokens and --threads are in-process "
                        "options (the pool's broker decides)\n");
        return CLI_EXIT_USAGE;
    }
    if (!pool && (o->pool.timeout_ms || o->pool.in_flight || o->pool.request_texts)) {
        fprintf(stderr, "ember embed: --timeout-ms, --in-flight and --request-texts need --broker "
                        "or --redis\n");
        return CLI_EXIT_USAGE;
    }
    if (!pool && !o->model_dir) {
        fprintf(stderr, "ember embed: --model DIR (or --broker / --redis) is required\n");
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Appends one JSON line for an embedding. Returns 0 or -1 for a non-finite value. */
static int s_write_json(FILE *f, size_t index, const float *v, int32_t dim, size_t tokens) {
    char num[32];
    fprintf(f, "{\"index\": %zu, \"embedding\": [", index);
    for (int32_t j = 0; j < dim; j++) {
        if (!isfinite(v[j]))
            return -1;
        int n = snprintf(num, sizeof num, j ? ", %.9g" : "%.9g", (double)v[j]);
        fwrite(num, 1, (size_t)n, f);
    }
    fprintf(f, "], \"tokens\": %zu}\n", tokens);
    return 0;
}

typedef struct s_flight {
    wrk_result_t *result;
    size_t first; /* index of the batch's first text */
    size_t count;
} s_flight_t;

/* Waits for the oldest batch and writes it. Returns 0 or an exit code. */
static int s_drain_one(s_flight_t *fl, const cli_tokens_t *tokens, const s_opts_t *o,
                       cli_sink_t *sink) {
    com_error_t err = {0};
    if (wrk_result_wait(fl->result, &err) != 0) {
        cli_report("engine", &err);
        return CLI_EXIT_INTERNAL;
    }
    int32_t n, dim;
    const float *emb = wrk_result_embeddings(fl->result, &n, &dim);
    if ((size_t)n != fl->count) {
        fprintf(stderr, "ember: engine returned %d embeddings for %zu texts\n", n, fl->count);
        return CLI_EXIT_INTERNAL;
    }
    for (size_t k = 0; k < fl->count; k++) {
        const float *v = emb + k * (size_t)dim;
        size_t i = fl->first + k;
        if (o->f32) {
            for (int32_t j = 0; j < dim; j++)
                if (!isfinite(v[j])) {
                    fprintf(stderr, "ember: non-finite embedding for text %zu\n", i);
                    return CLI_EXIT_INTERNAL;
                }
            fwrite(v, sizeof(float), (size_t)dim, sink->f);
        } else if (s_write_json(sink->f, i, v, dim, tokens->starts[i + 1] - tokens->starts[i])) {
            fprintf(stderr, "ember: non-finite embedding for text %zu\n", i);
            return CLI_EXIT_INTERNAL;
        }
    }
    if (ferror(sink->f)) {
        fprintf(stderr, "ember: cannot write output\n");
        return CLI_EXIT_OUTPUT;
    }
    wrk_result_destroy(&fl->result);
    return 0;
}

/* Runs all texts through the engine, S_IN_FLIGHT batches at a time. Returns 0 or an exit code. */
static int s_run(wrk_engine_t *eng, const cli_tokens_t *tokens, const s_opts_t *o,
                 cli_sink_t *sink) {
    s_flight_t ring[S_IN_FLIGHT] = {0};
    size_t head = 0, live = 0, next = 0;
    int32_t *cu = malloc(((size_t)o->batch_tokens + 2) * sizeof(int32_t));
    int rc = 0;
    if (!cu) {
        fprintf(stderr, "ember: out of memory\n");
        return CLI_EXIT_INTERNAL;
    }
    while (next < tokens->n || live > 0) {
        while (live < S_IN_FLIGHT && next < tokens->n) {
            size_t first = next, base = tokens->starts[first];
            cu[0] = 0;
            int32_t count = 0;
            while (next < tokens->n) {
                size_t end = tokens->starts[next + 1] - base;
                /* cu holds batch_tokens + 2 entries: bound the count too, since a tokenizer
                 * without special tokens gives empty texts 0 tokens */
                if (count > 0 && (end > (size_t)o->batch_tokens || count >= o->batch_tokens))
                    break;
                cu[++count] = (int32_t)end;
                next++;
            }
            wrk_batch_t b = {.n_seqs = count,
                             .n_tokens = cu[count],
                             .token_ids = tokens->ids + base,
                             .type_ids = NULL,
                             .cu_seqlens = cu,
                             .out_dim = (int32_t)o->dimensions,
                             .normalize = o->normalize};
            s_flight_t *fl = &ring[(head + live) % S_IN_FLIGHT];
            com_error_t err = {0};
            if (wrk_engine_submit(eng, &b, &fl->result, &err) != 0) {
                cli_report("engine", &err);
                rc = CLI_EXIT_INTERNAL;
                goto done;
            }
            fl->first = first;
            fl->count = (size_t)count;
            live++;
        }
        rc = s_drain_one(&ring[head], tokens, o, sink);
        if (rc != 0)
            goto done;
        head = (head + 1) % S_IN_FLIGHT;
        live--;
    }
done:
    for (size_t k = 0; k < S_IN_FLIGHT; k++)
        wrk_result_destroy(&ring[k].result);
    free(cu);
    return rc;
}

/* In-process mode: the model runs here. Returns an exit code. */
static int s_inproc_main(const s_opts_t *opts) {
    s_opts_t o = *opts;
    int rc = 0;
    com_error_t err = {0};
    com_tokenizer_t *tok = NULL;
    wrk_engine_t *eng = NULL;
    cli_texts_t texts = {0};
    cli_tokens_t tokens = {0};
    cli_sink_t sink = {0};

    wrk_engine_opts_t eo = {.device = "cpu",
                            .threads = (int32_t)o.threads,
                            .max_batch_tokens = (int32_t)o.batch_tokens};
    com_model_info_t probe; /* read first: flags are checked against it before loading */
    if (com_model_info_load(o.model_dir, &probe, &err) != 0) {
        cli_report("model", &err);
        return cli_exit_for_model_error(err.code);
    }
    long max_length = o.max_length ? o.max_length : probe.max_seq_length;
    if (max_length > probe.max_position_embeddings) {
        fprintf(stderr, "ember embed: --max-length %ld is over the model's %d positions\n",
                max_length, probe.max_position_embeddings);
        return CLI_EXIT_USAGE;
    }
    if (o.dimensions > probe.embedding_dim) {
        fprintf(stderr, "ember embed: --dimensions %ld is over the model's %d dimensions\n",
                o.dimensions, probe.embedding_dim);
        return CLI_EXIT_USAGE;
    }
    if (o.batch_tokens < max_length) /* a batch must hold the longest text whole */
        eo.max_batch_tokens = (int32_t)(o.batch_tokens = max_length);

    if ((rc = cli_tokenizer_open(o.model_dir, &tok)) != 0)
        goto done;
    if (wrk_engine_new(o.model_dir, &eo, &eng, &err) != 0) {
        cli_report("model", &err);
        rc = cli_exit_for_model_error(err.code);
        goto done;
    }
    if (cli_texts_read(o.input, &texts, &err) != 0) {
        cli_report("input", &err);
        rc = err.code == COM_ENOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT;
        goto done;
    }
    com_encode_opts_t eopts = com_encode_opts_default();
    eopts.max_length = (int32_t)max_length;
    eopts.truncate = o.truncate != 0;
    if ((rc = cli_tokens_build(tok, &texts, &eopts, &tokens)) != 0 ||
        (rc = cli_sink_open(&sink, o.output)) != 0)
        goto done;
    rc = cli_sink_close(&sink, s_run(eng, &tokens, &o, &sink));
done:
    cli_tokens_free(&tokens);
    cli_texts_free(&texts);
    wrk_engine_destroy(&eng);
    com_tokenizer_destroy(&tok);
    return rc;
}

/* ---- pool mode ---------------------------------------------------------------------------- */

typedef struct s_pool_req {
    ember_req_t id;
    size_t first; /* index of the request's first text */
    size_t count;
} s_pool_req_t;

enum { S_POOL_EMBED, S_POOL_TOKENIZE };

/* Submits the texts from `first` on, as many as one request takes (max_texts texts,
 * CLI_POOL_REQ_BYTES bytes, at least one). Returns the libember status. */
static int s_pool_submit(ember_client_t *cl, const cli_texts_t *t, size_t first, size_t max_texts,
                         int kind, const ember_request_opts_t *ro, s_pool_req_t *out) {
    size_t count = 0, bytes = 0;
    while (first + count < t->n && count < max_texts) {
        size_t len = t->lengths[first + count];
        if (count > 0 && bytes + len > CLI_POOL_REQ_BYTES)
            break;
        bytes += len;
        count++;
    }
    const char **ptrs = malloc(count * sizeof *ptrs);
    if (!ptrs)
        return EMBER_ENOMEM;
    for (size_t i = 0; i < count; i++)
        ptrs[i] = t->buf + t->offsets[first + i];
    out->first = first;
    out->count = count;
    int rc = kind == S_POOL_EMBED
                 ? ember_submit_embed(cl, ptrs, t->lengths + first, count, ro, &out->id)
                 : ember_submit_tokenize(cl, ptrs, t->lengths + first, count, ro, &out->id);
    free(ptrs);
    return rc;
}

/* Writes one finished request. Returns 0 or an exit code. */
static int s_pool_write(const ember_result_t *r, const s_pool_req_t *q, int kind, int f32,
                        cli_sink_t *sink) {
    if (ember_result_count(r) != q->count) {
        fprintf(stderr, "ember: broker returned %zu rows for %zu texts\n", ember_result_count(r),
                q->count);
        return CLI_EXIT_INTERNAL;
    }
    for (size_t k = 0; k < q->count; k++) {
        size_t i = q->first + k;
        if (kind == S_POOL_TOKENIZE) {
            size_t len = 0;
            const int32_t *ids = ember_result_token_ids(r, k, &len);
            fputc('[', sink->f);
            for (size_t j = 0; j < len; j++)
                fprintf(sink->f, j ? ", %d" : "%d", ids[j]);
            fputs("]\n", sink->f);
            continue;
        }
        const float *v = ember_result_embedding(r, k);
        int32_t dim = (int32_t)ember_result_dim(r);
        if (f32) {
            for (int32_t j = 0; j < dim; j++)
                if (!isfinite(v[j])) {
                    fprintf(stderr, "ember: non-finite embedding for text %zu\n", i);
                    return CLI_EXIT_INTERNAL;
                }
            fwrite(v, sizeof(float), (size_t)dim, sink->f);
        } else if (s_write_json(sink->f, i, v, dim, ember_result_tokens(r, k))) {
            fprintf(stderr, "ember: non-finite embedding for text %zu\n", i);
            return CLI_EXIT_INTERNAL;
        }
    }
    if (ferror(sink->f)) {
        fprintf(stderr, "ember: cannot write output\n");
        return CLI_EXIT_OUTPUT;
    }
    return 0;
}

/* Reports a failed request and returns its exit code. */
static int s_pool_fail(ember_client_t *cl, int status, const cli_texts_t *t, const s_pool_req_t *q,
                       int truncate) {
    if (status == EMBER_EINPUT_TOO_LONG && !truncate) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ember_client_last_error(cl));
        return cli_pool_report_too_long(cl, t, q->first, q->count, msg);
    }
    fprintf(stderr, "ember: pool: %s: %s\n", ember_status_name(status),
            ember_client_last_error(cl));
    return cli_exit_for_status(status);
}

/* Runs every text through the pool, p's requests in flight at a time, writing results in input
 * order. Returns 0 or an exit code (reported). */
static int s_pool_run(ember_client_t *cl, const cli_pool_opts_t *p, const cli_texts_t *t, int kind,
                      const ember_request_opts_t *ro, int f32, cli_sink_t *sink) {
    const size_t depth = p->in_flight > 0 ? (size_t)p->in_flight : CLI_POOL_IN_FLIGHT;
    const size_t per_req = p->request_texts > 0 ? (size_t)p->request_texts : CLI_POOL_REQ_TEXTS;
    s_pool_req_t ring[CLI_POOL_MAX_IN_FLIGHT];
    size_t head = 0, live = 0, next = 0;
    while (next < t->n || live > 0) {
        while (live < depth && next < t->n) {
            s_pool_req_t *q = &ring[(head + live) % depth];
            int rc = s_pool_submit(cl, t, next, per_req, kind, ro, q);
            if (rc != EMBER_OK)
                return s_pool_fail(cl, rc, t, q, ro->truncate);
            next += q->count;
            live++;
        }
        s_pool_req_t *q = &ring[head];
        ember_result_t *r = NULL;
        int rc = ember_wait(cl, q->id, -1, &r);
        if (rc != EMBER_OK)
            return s_pool_fail(cl, rc, t, q, ro->truncate);
        rc = s_pool_write(r, q, kind, f32, sink);
        ember_result_destroy(&r);
        if (rc != 0)
            return rc;
        head = (head + 1) % depth;
        live--;
    }
    return 0;
}

/* The shared body of pool-mode embed and tokenize: connect, read, check, run, commit. */
static int s_pool_main(const cli_pool_opts_t *p, const char *input, const char *output, int kind,
                       const ember_request_opts_t *ro, int f32) {
    ember_client_t *cl = NULL;
    int rc = cli_pool_connect(p, &cl);
    if (rc != 0)
        return rc;
    com_error_t err = {0};
    cli_texts_t texts = {0};
    cli_sink_t sink = {0};
    if (cli_texts_read(input, &texts, &err) != 0) {
        cli_report("input", &err);
        rc = err.code == COM_ENOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT;
        goto done;
    }
    com_proto_limits_t lim;
    com_proto_limits_default(&lim);
    for (size_t i = 0; i < texts.n; i++)
        if (texts.lengths[i] > lim.max_text_bytes) {
            fprintf(stderr,
                    "ember: input line %zu: %zu bytes exceed the pool's limit of %u "
                    "bytes per text\n",
                    i + 1, texts.lengths[i], lim.max_text_bytes);
            rc = CLI_EXIT_INPUT;
            goto done;
        }
    if ((rc = cli_sink_open(&sink, output)) != 0)
        goto done;
    rc = cli_sink_close(&sink, s_pool_run(cl, p, &texts, kind, ro, f32, &sink));
done:
    cli_texts_free(&texts);
    ember_client_destroy(&cl);
    return rc;
}

int cli_tokenize_pool(const cli_pool_opts_t *p, const char *input, const char *output,
                      int truncate) {
    ember_request_opts_t ro;
    ember_request_opts_init(&ro);
    ro.truncate = truncate ? 1 : 0;
    return s_pool_main(p, input, output, S_POOL_TOKENIZE, &ro, 0);
}

int cli_embed_main(int argc, char **argv) {
    s_opts_t o;
    int rc = s_parse(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (o.pool.n_brokers > 0 || o.pool.redis_url) {
        ember_request_opts_t ro;
        ember_request_opts_init(&ro);
        ro.normalize = o.normalize;
        ro.dimensions = (uint32_t)o.dimensions;
        ro.truncate = o.truncate ? 1 : 0;
        return s_pool_main(&o.pool, o.input, o.output, S_POOL_EMBED, &ro, o.f32);
    }
    kern_blas_reexec_for_core(); /* in process: the CPU engine's GEMMs */
    return s_inproc_main(&o);
}
