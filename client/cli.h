/* client/cli.h — shared pieces of the `ember` command-line tool: exit codes, the input reader
 * (one text per line), the output sink, and the subcommand entry points.
 *
 * Exit codes are a documented contract (docs/cli.md); scripts rely on them. Errors go to stderr
 * as one line "ember: <what>: <why>"; stdout carries only complete results. All of this runs on
 * the main thread. */
#ifndef EMBER_CLIENT_CLI_H
#define EMBER_CLIENT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "client/ember.h"
#include "common/error.h"
#include "common/tokenizer.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_INTERNAL = 1,    /* unexpected failure (a bug, out of memory) */
    CLI_EXIT_USAGE = 2,       /* unknown command or flag, bad flag value */
    CLI_EXIT_MODEL = 3,       /* model directory or file missing, truncated, corrupt, malformed */
    CLI_EXIT_UNSUPPORTED = 4, /* well-formed model of an architecture ember does not run */
    CLI_EXIT_INPUT = 5,       /* input unreadable, or a text over the limit under --no-truncate */
    CLI_EXIT_OUTPUT = 6,      /* output cannot be written */
    CLI_EXIT_UNAVAILABLE = 7, /* a service (Redis, a broker) cannot be reached */
};

/* Maps an error from loading a model (com_model_info_load, wrk_engine_new, tokenizer load) to
 * the exit code above. */
int cli_exit_for_model_error(int code);

/* Prints "ember: <context>: <err->msg>" to stderr. */
void cli_report(const char *context, const com_error_t *err);

/* All input texts, read in one piece before any work starts so that input errors are reported
 * before anything is written. Texts are the lines of the input with the line break ("\n" or
 * "\r\n") removed; a final line without a break counts; bytes are kept as they are (invalid
 * UTF-8 is repaired by the tokenizer, not here). */
typedef struct cli_texts {
    char *buf;       /* whole input, owned */
    size_t *offsets; /* [n] start of each text in buf */
    size_t *lengths; /* [n] byte length of each text */
    size_t n;
} cli_texts_t;

/* Reads path (or stdin when path is NULL or "-"). Returns 0 or COM_EIO/COM_ENOMEM. */
int cli_texts_read(const char *path, cli_texts_t *texts, com_error_t *err);
void cli_texts_free(cli_texts_t *texts);

/* Output to stdout, or to a file written atomically (FILE.tmp.PID renamed on success, removed
 * on failure) so a failed run never leaves a partial file behind. */
typedef struct cli_sink {
    FILE *f;
    char *path;     /* final path, NULL for stdout */
    char *tmp_path; /* temporary path while writing */
} cli_sink_t;

/* Opens the sink (stdout when path is NULL or "-"). Returns 0, or CLI_EXIT_OUTPUT /
 * CLI_EXIT_INTERNAL after reporting. */
int cli_sink_open(cli_sink_t *sink, const char *path);
/* Ends a run: with rc 0, flushes and (for a file) renames into place, returning 0 or
 * CLI_EXIT_OUTPUT after reporting; with any other rc, discards a file sink (removes the
 * temporary file) and returns rc. Accepts a sink that was never opened. */
int cli_sink_close(cli_sink_t *sink, int rc);

/* Parses a decimal integer in [lo, hi] from s. Returns 0 or -1. */
int cli_parse_int(const char *s, long lo, long hi, long *out);

/* The token ids of all texts, back to back: text i is ids[starts[i] .. starts[i+1]). */
typedef struct cli_tokens {
    int32_t *ids;   /* [starts[n]] token ids, special tokens included */
    size_t *starts; /* [n + 1] prefix offsets */
    size_t n;
} cli_tokens_t;

/* Tokenizes every text with opts. Returns 0, or after reporting CLI_EXIT_INPUT (a text over
 * the limit with truncation off: the message names its line) or CLI_EXIT_INTERNAL. */
int cli_tokens_build(const com_tokenizer_t *tok, const cli_texts_t *texts,
                     const com_encode_opts_t *opts, cli_tokens_t *tokens);
void cli_tokens_free(cli_tokens_t *tokens);

/* Loads dir/tokenizer.json; on failure reports to stderr and returns the exit code (else 0). */
int cli_tokenizer_open(const char *model_dir, com_tokenizer_t **tok);

/* Pool mode (--broker ENDPOINT ... | --redis URL): where the brokers are and how long a request
 * may take. */
#define CLI_MAX_BROKERS 16
typedef struct cli_pool_opts {
    const char *brokers[CLI_MAX_BROKERS]; /* frontend endpoints, from --broker */
    size_t n_brokers;
    const char *redis_url; /* --redis: discover the brokers there */
    long timeout_ms;       /* --timeout-ms: per request, 0 = libember's default (30 s) */
    long in_flight;        /* --in-flight: requests in flight, 0 = CLI_POOL_IN_FLIGHT */
    long request_texts;    /* --request-texts: texts per request, 0 = CLI_POOL_REQ_TEXTS */
} cli_pool_opts_t;

/* Texts per request and text bytes per request (about 64k tokens), and requests in flight: the
 * defaults, and the largest values --request-texts / --in-flight take. A bulk run on a pool that
 * also serves queries may want fewer tokens queued at once (docs/worker.md). */
#define CLI_POOL_REQ_TEXTS     256
#define CLI_POOL_REQ_BYTES     (256 * 1024)
#define CLI_POOL_IN_FLIGHT     4
#define CLI_POOL_MAX_IN_FLIGHT 64

/* Adds a --broker endpoint. Returns 0, or CLI_EXIT_USAGE (reported) when there are too many. */
int cli_pool_add_broker(cli_pool_opts_t *p, const char *endpoint, const char *cmd);

/* Creates the libember client for p. Returns 0 with *out, or an exit code after reporting:
 * CLI_EXIT_USAGE (bad endpoint or URL), CLI_EXIT_UNAVAILABLE (Redis unreachable),
 * CLI_EXIT_INTERNAL. */
int cli_pool_connect(const cli_pool_opts_t *p, ember_client_t **out);

/* Maps a libember status to the exit code above: unreachable / timed out / overloaded / no
 * workers -> CLI_EXIT_UNAVAILABLE; input too long or too large -> CLI_EXIT_INPUT; unsupported
 * option (dimensions over the model's width) -> CLI_EXIT_USAGE; model mismatch ->
 * CLI_EXIT_MODEL; anything else -> CLI_EXIT_INTERNAL. */
int cli_exit_for_status(int status);

/* Under --no-truncate a request of texts[first .. first+count) failed with INPUT_TOO_LONG:
 * finds the first over-long text with the pool's tokenizer (tokenize without truncation, and
 * the model's limit from info) and reports "ember: input line N: ...". Returns CLI_EXIT_INPUT
 * (or the exit code of a failure while looking). */
int cli_pool_report_too_long(ember_client_t *client, const cli_texts_t *texts, size_t first,
                             size_t count, const char *broker_msg);

int cli_embed_main(int argc, char **argv);
/* `ember tokenize` in pool mode: the texts of input (NULL = stdin) tokenized by the pool,
 * written as in-process `ember tokenize` writes them. Returns an exit code. */
int cli_tokenize_pool(const cli_pool_opts_t *p, const char *input, const char *output,
                      int truncate);
int cli_tokenize_main(int argc, char **argv);
int cli_status_main(int argc, char **argv);

#endif
