/* client/cli_main.c — `ember`: the command-line entry point. Dispatches to subcommands
 * (embed, tokenize; pool commands come with the broker). Single-threaded front; the engine owns
 * its own compute threads. */
#include <stdio.h>
#include <string.h>

#include "client/cli.h"
#include "common/log.h"

static void s_usage(FILE *f) {
    fputs("usage: ember <command> [options]\n"
          "\n"
          "commands:\n"
          "  embed     embed texts (one per line), in process (--model) or by a pool (--broker)\n"
          "  tokenize  print the token ids of texts (one per line), in process or by a pool\n"
          "  status    list the brokers and workers registered in Redis\n"
          "\n"
          "Run `ember <command> --help` for a command's options; docs/cli.md has the details\n"
          "and the exit codes.\n",
          f);
}

int main(int argc, char **argv) {
    com_log_init_from_env();
    if (argc < 2) {
        s_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "embed") == 0)
        return cli_embed_main(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize") == 0)
        return cli_tokenize_main(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0)
        return cli_status_main(argc - 1, argv + 1);
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        s_usage(stdout);
        return CLI_EXIT_OK;
    }
    fprintf(stderr, "ember: unknown command '%s'\n", cmd);
    s_usage(stderr);
    return CLI_EXIT_USAGE;
}
