/* client/cli_status.c — `ember status --redis URL`: the brokers and workers registered in Redis,
 * one per line, for operators and scripts:
 *   broker <id> host=<h> frontend=<ep> backend=<ep> workers=<n> requests=<n> failed=<n>
 *          chunks=<n> redispatched=<n> state=<s> last_seen_ms_ago=<n> healthy=yes|no
 *   worker <id> host=<h> device=<d> model=<m> load_tokens=<n> batches=<n> chunks=<n>
 *          tokens=<n> epoch=<n> state=<s> last_seen_ms_ago=<n> healthy=yes|no
 * (each on one line). A record is healthy when its state is "ready" and it was seen within the
 * staleness bound (--stale-ms, default 3000: three heartbeats). Main thread only. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cli.h"
#include "common/clock.h"
#include "common/registry.h"

static void s_usage(FILE *f) {
    fputs("usage: ember status --redis URL [--stale-ms N]\n"
          "\n"
          "Lists the brokers and workers registered in Redis, one per line.\n",
          f);
}

int cli_status_main(int argc, char **argv) {
    static const struct option longopts[] = {{"redis", required_argument, 0, 'r'},
                                             {"stale-ms", required_argument, 0, 's'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *url = NULL;
    long stale_ms = 3000;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "r:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            url = optarg;
            break;
        case 's':
            if (cli_parse_int(optarg, 1, 86400000, &stale_ms) != 0) {
                fprintf(stderr, "ember status: --stale-ms needs a positive integer\n");
                return CLI_EXIT_USAGE;
            }
            break;
        case 'h':
            s_usage(stdout);
            return CLI_EXIT_OK;
        default:
            fprintf(stderr, "ember status: unknown or incomplete option '%s'\n", argv[optind - 1]);
            s_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (!url || optind < argc) {
        fprintf(stderr, "ember status: --redis URL is required\n");
        return CLI_EXIT_USAGE;
    }
    com_error_t err = {0};
    com_registry_t *reg = NULL;
    if (com_registry_new(url, NULL, &reg, &err) != 0) {
        cli_report("status", &err);
        return CLI_EXIT_USAGE;
    }
    com_broker_record_t *brokers = NULL;
    com_worker_record_t *workers = NULL;
    size_t nb = 0, nw = 0;
    int rc = CLI_EXIT_OK;
    if (com_registry_list_brokers(reg, &brokers, &nb, &err) != 0 ||
        com_registry_list_workers(reg, &workers, &nw, &err) != 0) {
        cli_report("status", &err);
        rc = CLI_EXIT_UNAVAILABLE;
        goto done;
    }
    int64_t now = com_clock_wall_ms();
    for (size_t i = 0; i < nb; i++) {
        const com_broker_record_t *b = &brokers[i];
        int64_t ago = now - b->last_seen_ms;
        printf("broker %s host=%s frontend=%s backend=%s workers=%lld requests=%lld failed=%lld "
               "chunks=%lld redispatched=%lld state=%s last_seen_ms_ago=%lld healthy=%s\n",
               b->id, b->host, b->frontend, b->backend, (long long)b->workers,
               (long long)b->requests_done, (long long)b->requests_failed,
               (long long)b->chunks_sent, (long long)b->chunks_redispatched, b->state,
               (long long)ago, strcmp(b->state, "ready") == 0 && ago <= stale_ms ? "yes" : "no");
    }
    for (size_t i = 0; i < nw; i++) {
        const com_worker_record_t *w = &workers[i];
        int64_t ago = now - w->last_seen_ms;
        printf("worker %s host=%s device=%s model=%s load_tokens=%lld batches=%lld chunks=%lld "
               "tokens=%lld epoch=%lld state=%s last_seen_ms_ago=%lld healthy=%s\n",
               w->id, w->host, w->device, w->model, (long long)w->load_tokens,
               (long long)w->batches_done, (long long)w->chunks_done, (long long)w->tokens_done,
               (long long)w->epoch, w->state, (long long)ago,
               strcmp(w->state, "ready") == 0 && ago <= stale_ms ? "yes" : "no");
    }
    if (fflush(stdout) != 0)
        rc = CLI_EXIT_OUTPUT;
done:
    free(brokers);
    free(workers);
    com_registry_destroy(&reg);
    return rc;
}
