/* client/cli_io.c — input reading, atomic output, exit-code mapping and number parsing for the
 * `ember` tool (see cli.h). Main thread only. */
#include <errno.h>
#include <limits.h>
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

int cli_sink_open(cli_sink_t *sink, const char *path, com_error_t *err) {
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
        return com_error_set(err, COM_ENOMEM, "out of memory");
    }
    snprintf(sink->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
    sink->f = fopen(sink->tmp_path, "wb");
    if (!sink->f) {
        int e = errno;
        free(sink->path);
        free(sink->tmp_path);
        sink->path = sink->tmp_path = NULL;
        return com_error_set(err, COM_EIO, "%s: %s", path, strerror(e));
    }
    return 0;
}

int cli_sink_commit(cli_sink_t *sink, com_error_t *err) {
    if (!sink->path) {
        if (fflush(stdout) != 0 || ferror(stdout))
            return com_error_set(err, COM_EIO, "stdout: %s", strerror(errno));
        return 0;
    }
    int bad = ferror(sink->f) != 0;
    bad |= fclose(sink->f) != 0;
    sink->f = NULL;
    if (bad || rename(sink->tmp_path, sink->path) != 0) {
        int e = errno;
        remove(sink->tmp_path);
        com_error_set(err, COM_EIO, "%s: %s", sink->path, strerror(e));
        free(sink->path);
        free(sink->tmp_path);
        sink->path = sink->tmp_path = NULL;
        return COM_EIO;
    }
    free(sink->path);
    free(sink->tmp_path);
    sink->path = sink->tmp_path = NULL;
    return 0;
}

void cli_sink_abort(cli_sink_t *sink) {
    if (!sink->path) {
        if (sink->f)
            fflush(sink->f);
        return;
    }
    if (sink->f)
        fclose(sink->f);
    remove(sink->tmp_path);
    free(sink->path);
    free(sink->tmp_path);
    memset(sink, 0, sizeof *sink);
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
                     const com_encode_opts_t *opts, cli_tokens_t *tokens, size_t *bad_index,
                     com_error_t *err) {
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
            *bad_index = i;
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
    if (rc != 0)
        cli_tokens_free(tokens);
    return rc;
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
