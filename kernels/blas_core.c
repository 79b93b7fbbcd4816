/* kernels/blas_core.c — see blas_core.h. */
#include "kernels/blas_core.h"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* OpenBLAS core names (openblas_get_corename) at AVX2 or later: the choices left alone. */
static const char *const s_modern_cores[] = {"haswell",  "zen",        "excavator",
                                             "skylakex", "cooperlake", "sapphirerapids"};

static int s_is_modern(const char *core) {
    for (size_t i = 0; i < sizeof s_modern_cores / sizeof *s_modern_cores; i++)
        if (strcasecmp(core, s_modern_cores[i]) == 0)
            return 1;
    return 0;
}

const char *kern_blas_better_core(void) {
    if (getenv("OPENBLAS_CORETYPE"))
        return NULL;
    const char *core = openblas_get_corename();
    if (!core || s_is_modern(core))
        return NULL;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}

/* The process's arguments as the kernel keeps them (/proc/self/cmdline: NUL-terminated strings),
 * as a NULL-terminated array into one buffer (free argv[0], then argv), or NULL. Read in a loop:
 * /proc files report size 0, so common/file.h's com_file_read does not apply. */
static char **s_own_argv(void) {
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger)
            free(buf);
        buf = bigger;
    }
    fclose(f);
    if (!buf || len == 0 || buf[len - 1] != '\0') {
        free(buf);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += buf[i] == '\0';
    char **argv = malloc((n + 1) * sizeof *argv);
    if (!argv) {
        free(buf);
        return NULL;
    }
    for (size_t i = 0, k = 0; k < n; i += strlen(buf + i) + 1)
        argv[k++] = buf + i;
    argv[n] = NULL;
    return argv;
}

void kern_blas_reexec_for_core(void) {
    const char *better = kern_blas_better_core();
    if (!better)
        return;
    const char *was = openblas_get_corename();
    char **argv = s_own_argv();
    if (argv && setenv("OPENBLAS_CORETYPE", better, 1) == 0) {
        execv("/proc/self/exe", argv);
        unsetenv("OPENBLAS_CORETYPE");
    }
    fprintf(stderr,
            "warning: OpenBLAS chose its %s kernels on a CPU that runs its %s ones; "
            "cannot re-execute with OPENBLAS_CORETYPE=%s (%s): the CPU engine runs slower\n",
            was, better, better, strerror(errno));
    if (argv)
        free(argv[0]);
    free(argv);
}
