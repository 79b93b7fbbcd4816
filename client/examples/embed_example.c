/* client/examples/embed_example.c — embeds the lines of stdin through an ember broker with
 * libember and prints, per line, its index, tokens, width and first values.
 *
 *   embed_example tcp://127.0.0.1:5555 < texts.txt
 *   embed_example --version
 *
 * Build against the installed library (see Makefile here):
 *   cc -std=c11 embed_example.c $(pkg-config --cflags --libs ember) -o embed_example
 * Lines are sent in requests of up to 64 texts, all in flight at once (asynchronous API), and
 * printed in input order. Exit status: 0 ok, 1 a request failed, 2 usage. */
#include <ember.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("libember %s\n", ember_version());
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr,
                "usage: %s BROKER_ENDPOINT < lines   (e.g. tcp://127.0.0.1:5555)\n"
                "       %s --version\n",
                argv[0], argv[0]);
        return 2;
    }
    /* read all lines */
    size_t n = 0, cap = 0;
    char **lines = NULL;
    size_t *lens = NULL;
    char buf[65536];
    while (fgets(buf, sizeof buf, stdin)) {
        size_t len = strlen(buf);
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nl = realloc(lines, cap * sizeof *lines);
            size_t *nn = realloc(lens, cap * sizeof *lens);
            if (!nl || !nn) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            lines = nl;
            lens = nn;
        }
        lines[n] = malloc(len + 1);
        if (!lines[n]) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        memcpy(lines[n], buf, len + 1);
        lens[n++] = len;
    }

    ember_options_t o;
    ember_options_init(&o);
    const char *brokers[] = {argv[1]};
    o.brokers = brokers;
    o.n_brokers = 1;
    o.timeout_ms = 30000;
    ember_client_t *client = NULL;
    char why[256];
    if (ember_client_new(&o, &client, why, sizeof why) != EMBER_OK) {
        fprintf(stderr, "ember_client_new: %s\n", why);
        return 1;
    }

    size_t n_req = (n + BATCH - 1) / BATCH;
    ember_req_t *reqs = calloc(n_req ? n_req : 1, sizeof *reqs);
    int status = 0;
    for (size_t k = 0; k < n_req && reqs; k++) {
        size_t first = k * BATCH, count = n - first < BATCH ? n - first : BATCH;
        int rc = ember_submit_embed(client, (const char *const *)lines + first, lens + first, count,
                                    NULL, &reqs[k]);
        if (rc != EMBER_OK) {
            fprintf(stderr, "submit: %s: %s\n", ember_status_name(rc),
                    ember_client_last_error(client));
            status = 1;
            break;
        }
    }
    for (size_t k = 0; k < n_req && status == 0; k++) {
        ember_result_t *r = NULL;
        int rc = ember_wait(client, reqs[k], -1, &r);
        if (rc != EMBER_OK) {
            fprintf(stderr, "request %zu: %s: %s\n", k, ember_status_name(rc),
                    ember_client_last_error(client));
            status = 1;
            break;
        }
        for (size_t i = 0; i < ember_result_count(r); i++) {
            const float *v = ember_result_embedding(r, i);
            size_t dim = ember_result_dim(r);
            printf("%zu\ttokens=%u\tdim=%zu\t[", k * BATCH + i, ember_result_tokens(r, i), dim);
            for (size_t j = 0; j < dim && j < 4; j++)
                printf(j ? ", %.6f" : "%.6f", (double)v[j]);
            printf("%s]\n", dim > 4 ? ", ..." : "");
        }
        ember_result_destroy(&r);
    }
    ember_client_destroy(&client); /* abandons whatever is still in flight */
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(lens);
    free(reqs);
    return status;
}
