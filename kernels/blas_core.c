/* kernels/blas_core.c — see blas_core.h. */
#define _GNU_SOURCE
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

void kern_blas_reexec_for_core(char *const *argv) {
    const char *better = kern_blas_better_core();
    if (!better)
        return;
    const char *was = openblas_get_corename();
    if (setenv("OPENBLAS_CORETYPE", better, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    fprintf(stderr,
            "warning: OpenBLAS chose its %s kernels on a CPU that runs its %s ones; "
            "cannot re-execute with OPENBLAS_CORETYPE=%s (%s): the CPU engine runs slower\n",
            was, better, better, strerror(errno));
    unsetenv("OPENBLAS_CORETYPE");
}
