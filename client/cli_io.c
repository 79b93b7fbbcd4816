/* client/cli_io.c — input reading, atomic output, exit-code mapping and number parsing for the
 * `ember` tool (see cli.h). Main thread only. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/cli.h"
#include "common/file.h"
#include "common/tokenizer.h"

int cli_exit_for_model_error(int code) {
    switch (code) {
    case COM_EUNSUPPORTED:
        return CLI_EXIT_UNSUPPORTED;
    case COM_EIO:
    case COM_EFORMAT:
    case COM_ETOOLONG:
    case COM_EINVAL:
        return CLI_EXIT_MODEL;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

void cli_report(const char *context, const com_error_t *err) {
    fprintf(stderr, "ember: %s: %s\n", context, err && err->msg[0] ? err->msg : "failed");
}

int cli_texts_read(const char *path, cli_texts_t *texts, com_error_t *err) {
    memset(texts, 0, sizeof *texts);
    FILE *f = stdin;
    if (path && strcmp(path, "-") != 0) {
        f = fopen(path, "rb");
        if (!f)
            return com_error_set(err, COM_EIO, "%s: %s", path, strerror(errno));
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        goto nomem;
    for (;;) {
        if (len == cap) {
            if (cap > SIZE_MAX / 2)
                goto nomem;
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                goto nomem;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                if (f != stdin)
                    fclose(f);
                return com_error_set(err, COM_EIO, "%s: read error: %s",
                                     f == stdin ? "stdin" : path, strerror(e));
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    f = NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += buf[i] == '\n';
    if (len > 0 && buf[len - 1] != '\n')
        n++;
    texts->buf = buf;
    texts->offsets = malloc((n ? n : 1) * sizeof(size_t));
    texts->lengths = malloc((n ? n : 1) * sizeof(size_t));
    if (!texts->offsets || !texts->lengths) {
        cli_texts_free(texts);
        return com_error_set(err, COM_ENOMEM, "out of memory reading input");
    }
    size_t start = 0, k = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len && start == len)
            break;
        if (i == len || buf[i] == '\n') {
            size_t end = i;
            if (end > start && buf[end - 1] == '\r')
                end--;
            texts->offsets[k] = start;
            texts->lengths[k] = end - start;
            k++;
            start = i + 1;
        }
    }
    texts->n = k;
    return 0;
nomem:
    free(buf);
    if (f && f != stdin)
        fclose(f);
    return com_error_set(err, COM_ENOMEM, "out of memory reading input");
}

void cli_texts_free(cli_texts_t *texts) {
    free(texts->buf);
    free(texts->offsets);
    free(texts->lengths);
    memset(texts, 0, sizeof *texts);
}

int cli_sink_open(cli_sink_t *sink, const char *path) {
    memset(sink, 0, sizeof *sink);
    if (!path || strcmp(path, "-") == 0) {
        sink->f = stdout;
        return 0;
    }
    size_t n = strlen(path) + 32;
    sink->path = strdup(path);
    sink->tmp_path = malloc(n);
    if (!sink->path || !sink->tmp_path) {
        free(sink->path);
        free(sink->tmp_path);
        memset(sink, 0, sizeof *sink);
        fprintf(stderr, "ember: output: out of memory\n");
        return CLI_EXIT_INTERNAL;
    }
    snprintf(sink->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
    sink->f = fopen(sink->tmp_path, "wb");
    if (!sink->f) {
        fprintf(stderr, "ember: output: %s: %s\n", path, strerror(errno));
        free(sink->path);
        free(sink->tmp_path);
        memset(sink, 0, sizeof *sink);
        return CLI_EXIT_OUTPUT;
    }
    return 0;
}

int cli_sink_close(cli_sink_t *sink, int rc) {
    if (!sink->f)
        return rc;
    if (!sink->path) { /* stdout: nothing to undo, but a failed flush is an output error */
        if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
            fprintf(stderr, "ember: output: stdout: %s\n", strerror(errno));
            rc = CLI_EXIT_OUTPUT;
        }
        sink->f = NULL;
        return rc;
    }
    int bad = ferror(sink->f) != 0;
    bad |= fclose(sink->f) != 0;
    if (rc == 0 && (bad || rename(sink->tmp_path, sink->path) != 0)) {
        fprintf(stderr, "ember: output: %s: %s\n", sink->path, strerror(errno));
        rc = CLI_EXIT_OUTPUT;
    }
    if (rc != 0)
        remove(sink->tmp_path);
    free(sink->path);
    free(sink->tmp_path);
    memset(sink, 0, sizeof *sink);
    return rc;
}

int cli_parse_int(const char *s, long lo, long hi, long *out) {
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_tokens_build(const com_tokenizer_t *tok, const cli_texts_t *texts,
                     const com_encode_opts_t *opts, cli_tokens_t *tokens) {
    com_error_t err_buf = {0}, *err = &err_buf;
    size_t bad = 0;
    memset(tokens, 0, sizeof *tokens);
    size_t cap = texts->n * 16 + 64, used = 0;
    tokens->ids = malloc(cap * sizeof(int32_t));
    tokens->starts = malloc((texts->n + 1) * sizeof(size_t));
    com_encoding_t enc;
    com_encoding_init(&enc);
    int rc = 0;
    if (!tokens->ids || !tokens->starts) {
        rc = com_error_set(err, COM_ENOMEM, "out of memory tokenizing input");
        goto done;
    }
    for (size_t i = 0; i < texts->n; i++) {
        rc = com_tokenizer_encode(tok, texts->buf + texts->offsets[i], texts->lengths[i], opts,
                                  &enc, err);
        if (rc != 0) {
            bad = i;
            goto done;
        }
        if (used + (size_t)enc.len > cap) {
            size_t ncap = (used + (size_t)enc.len) * 2;
            int32_t *nids = realloc(tokens->ids, ncap * sizeof(int32_t));
            if (!nids) {
                rc = com_error_set(err, COM_ENOMEM, "out of memory tokenizing input");
                goto done;
            }
            tokens->ids = nids;
            cap = ncap;
        }
        tokens->starts[i] = used;
        memcpy(tokens->ids + used, enc.ids, (size_t)enc.len * sizeof(int32_t));
        used += (size_t)enc.len;
    }
    tokens->starts[texts->n] = used;
    tokens->n = texts->n;
done:
    com_encoding_free(&enc);
    if (rc == 0)
        return 0;
    cli_tokens_free(tokens);
    if (rc == COM_ETOOLONG) {
        fprintf(stderr, "ember: input line %zu: %s (--no-truncate)\n", bad + 1, err->msg);
        return CLI_EXIT_INPUT;
    }
    cli_report("tokenize", err);
    return CLI_EXIT_INTERNAL;
}

void cli_tokens_free(cli_tokens_t *tokens) {
    free(tokens->ids);
    free(tokens->starts);
    memset(tokens, 0, sizeof *tokens);
}

int cli_tokenizer_open(const char *model_dir, com_tokenizer_t **tok) {
    com_error_t err = {0};
    char path[4096];
    if (com_path_join(path, sizeof path, model_dir, "tokenizer.json", &err) != 0 ||
        com_tokenizer_load(path, tok, &err) != 0) {
        cli_report("tokenizer", &err);
        return cli_exit_for_model_error(err.code);
    }
    return 0;
}

/* ---- pool mode ---------------------------------------------------------------------------- */

int cli_pool_add_broker(cli_pool_opts_t *p, const char *endpoint, const char *cmd) {
    if (p->n_brokers == CLI_MAX_BROKERS) {
        fprintf(stderr, "ember %s: at most %d --broker endpoints\n", cmd, CLI_MAX_BROKERS);
        return CLI_EXIT_USAGE;
    }
    p->brokers[p->n_brokers++] = endpoint;
    return 0;
}

int cli_pool_connect(const cli_pool_opts_t *p, ember_client_t **out) {
    ember_options_t o;
    ember_options_init(&o);
    o.brokers = p->brokers;
    o.n_brokers = p->n_brokers;
    o.redis_url = p->redis_url;
    if (p->timeout_ms > 0) {
        o.timeout_ms = (int32_t)p->timeout_ms;
        /* one silent broker must not eat the whole budget: fail over after a third of it */
        o.attempt_timeout_ms = o.timeout_ms / 3 > 0 ? o.timeout_ms / 3 : 1;
    }
    char why[512];
    int rc = ember_client_new(&o, out, why, sizeof why);
    if (rc == EMBER_OK)
        return 0;
    fprintf(stderr, "ember: %s: %s\n", p->redis_url && !p->n_brokers ? "redis" : "broker", why);
    if (rc == EMBER_EINVAL)
        return CLI_EXIT_USAGE;
    return rc == EMBER_EUNAVAILABLE ? CLI_EXIT_UNAVAILABLE : CLI_EXIT_INTERNAL;
}

int cli_exit_for_status(int status) {
    switch (status) {
    case EMBER_OK:
        return CLI_EXIT_OK;
    case EMBER_ETIMEOUT:
    case EMBER_EUNAVAILABLE:
    case EMBER_EOVERLOADED:
    case EMBER_EDEADLINE:
    case EMBER_ENO_WORKERS:
        return CLI_EXIT_UNAVAILABLE;
    case EMBER_EINPUT_TOO_LONG:
    case EMBER_ETOO_LARGE:
        return CLI_EXIT_INPUT;
    case EMBER_EUNSUPPORTED:
        return CLI_EXIT_USAGE;
    case EMBER_EMODEL_MISMATCH:
        return CLI_EXIT_MODEL;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

/* Tokenizes texts[first .. first+count) without truncation. Returns the libember status; on
 * EMBER_OK *out is the result. */
static int s_tokenize_range(ember_client_t *client, const cli_texts_t *texts, size_t first,
                            size_t count, ember_result_t **out) {
    const char **ptrs = malloc(count * sizeof *ptrs);
    if (!ptrs)
        return EMBER_ENOMEM;
    for (size_t i = 0; i < count; i++)
        ptrs[i] = texts->buf + texts->offsets[first + i];
    ember_request_opts_t o;
    ember_request_opts_init(&o);
    o.truncate = 0;
    int rc = ember_tokenize(client, ptrs, texts->lengths + first, count, &o, out);
    free(ptrs);
    return rc;
}

/* The pool tokenized [lo, lo+n) without truncation into r: reports the first text over the
 * model's limit (from info) and returns CLI_EXIT_INPUT, or returns 0 when none is found. */
static int s_first_over_limit(ember_client_t *client, const ember_result_t *r, size_t lo,
                              size_t n) {
    ember_info_t info;
    if (ember_info(client, 0, &info) != EMBER_OK || info.max_seq == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = ember_result_tokens(r, i);
        if (t > info.max_seq) {
            fprintf(stderr,
                    "ember: input line %zu: %u tokens exceed the model's limit of %u "
                    "(--no-truncate)\n",
                    lo + i + 1, t, info.max_seq);
            return CLI_EXIT_INPUT;
        }
    }
    return 0;
}

int cli_pool_report_too_long(ember_client_t *client, const cli_texts_t *texts, size_t first,
                             size_t count, const char *broker_msg) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", broker_msg);
    /* Either the pool tokenizes without truncation (then the limit comes from info), or it
     * refuses the over-long text there too (then bisect down to the first refused one). */
    size_t lo = first, n = count;
    bool known_bad = false; /* [lo, lo+n) is known to hold an over-long text */
    while (n > 0) {
        if (!known_bad) {
            ember_result_t *r = NULL;
            int rc = s_tokenize_range(client, texts, lo, n, &r);
            if (rc == EMBER_OK) {
                int ex = s_first_over_limit(client, r, lo, n);
                ember_result_destroy(&r);
                if (ex)
                    return ex;
                break;
            }
            if (rc != EMBER_EINPUT_TOO_LONG)
                break;
            snprintf(msg, sizeof msg, "%s", ember_client_last_error(client));
        }
        if (n == 1) {
            fprintf(stderr, "ember: input line %zu: %s (--no-truncate)\n", lo + 1, msg);
            return CLI_EXIT_INPUT;
        }
        ember_result_t *h = NULL;
        size_t half = n / 2;
        int rc = s_tokenize_range(client, texts, lo, half, &h);
        ember_result_destroy(&h);
        if (rc == EMBER_EINPUT_TOO_LONG) {
            snprintf(msg, sizeof msg, "%s", ember_client_last_error(client));
            n = half;
        } else if (rc == EMBER_OK) {
            lo += half;
            n -= half;
        } else {
            break;
        }
        known_bad = true;
    }
    fprintf(stderr, "ember: input lines %zu-%zu: %s (--no-truncate)\n", first + 1, first + count,
            msg);
    return CLI_EXIT_INPUT;
}
