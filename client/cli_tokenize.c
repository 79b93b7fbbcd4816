/* client/cli_tokenize.c — `ember tokenize`: prints the token ids of each input line as one JSON
 * array per line, special tokens included, truncated to the model's limit as `embed` does
 * (so the ids are exactly what `embed` feeds the model). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "common/model_info.h"

static void s_usage(FILE *f) {
    fputs("usage: ember tokenize (--model DIR | --broker ENDPOINT ... | --redis URL)\n"
          "                      [--input FILE] [--output FILE] [--no-truncate] [--max-length N]\n"
          "                      [--timeout-ms N]\n"
          "\n"
          "Writes one JSON array of token ids per input line (special tokens included), in\n"
          "process with --model, or by the pool's broker with --broker / --redis.\n",
          f);
}

int cli_tokenize_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},      {"input", required_argument, 0, 'i'},
        {"output", required_argument, 0, 'o'},     {"no-truncate", no_argument, 0, 'T'},
        {"max-length", required_argument, 0, 'L'}, {"help", no_argument, 0, 'h'},
        {"broker", required_argument, 0, 'B'},     {"redis", required_argument, 0, 'R'},
        {"timeout-ms", required_argument, 0, 'X'}, {0, 0, 0, 0}};
    cli_pool_opts_t pool = {0};
    const char *model_dir = NULL, *input = NULL, *output = NULL;
    int truncate = 1;
    long max_length = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "m:i:o:hT", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            model_dir = optarg;
            break;
        case 'i':
            input = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'T':
            truncate = 0;
            break;
        case 'L':
            if (cli_parse_int(optarg, 1, 1 << 20, &max_length) != 0) {
                fprintf(stderr, "ember tokenize: --max-length needs a positive integer\n");
                return CLI_EXIT_USAGE;
            }
            break;
        case 'B':
            if (cli_pool_add_broker(&pool, optarg, "tokenize") != 0)
                return CLI_EXIT_USAGE;
            break;
        case 'R':
            pool.redis_url = optarg;
            break;
        case 'X':
            if (cli_parse_int(optarg, 1, 86400000, &pool.timeout_ms) != 0) {
                fprintf(stderr, "ember tokenize: --timeout-ms needs an integer in [1, 86400000]\n");
                return CLI_EXIT_USAGE;
            }
            break;
        case 'h':
            s_usage(stdout);
            return CLI_EXIT_OK;
        default:
            fprintf(stderr, "ember tokenize: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            s_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ember tokenize: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    int use_pool = pool.n_brokers > 0 || pool.redis_url;
    if (use_pool && (model_dir || max_length || (pool.n_brokers > 0 && pool.redis_url))) {
        fprintf(stderr, "ember tokenize: give one of --model, --broker or --redis (--max-length "
                        "is in-process only)\n");
        return CLI_EXIT_USAGE;
    }
    if (use_pool)
        return cli_tokenize_pool(&pool, input, output, truncate);
    if (!model_dir) {
        fprintf(stderr, "ember tokenize: --model DIR (or --broker / --redis) is required\n");
        return CLI_EXIT_USAGE;
    }

    com_error_t err = {0};
    com_model_info_t info;
    if (com_model_info_load(model_dir, &info, &err) != 0) {
        cli_report("model", &err);
        return cli_exit_for_model_error(err.code);
    }
    com_tokenizer_t *tok = NULL;
    int rc = cli_tokenizer_open(model_dir, &tok);
    if (rc != 0)
        return rc;
    cli_texts_t texts = {0};
    cli_tokens_t tokens = {0};
    cli_sink_t sink = {0};
    if (cli_texts_read(input, &texts, &err) != 0) {
        cli_report("input", &err);
        rc = CLI_EXIT_INPUT;
        goto done;
    }
    com_encode_opts_t eopts = com_encode_opts_default();
    eopts.max_length = (int32_t)(max_length ? max_length : info.max_seq_length);
    eopts.truncate = truncate != 0;
    if ((rc = cli_tokens_build(tok, &texts, &eopts, &tokens)) != 0 ||
        (rc = cli_sink_open(&sink, output)) != 0)
        goto done;
    for (size_t i = 0; i < tokens.n; i++) {
        fputc('[', sink.f);
        for (size_t k = tokens.starts[i]; k < tokens.starts[i + 1]; k++)
            fprintf(sink.f, k > tokens.starts[i] ? ", %d" : "%d", tokens.ids[k]);
        fputs("]\n", sink.f);
    }
    rc = cli_sink_close(&sink, 0);
done:
    cli_tokens_free(&tokens);
    cli_texts_free(&texts);
    com_tokenizer_destroy(&tok);
    return rc;
}
