/* bench/gpu/kernel_trace.c — a CUPTI tracer injected into any CUDA program (no change to it):
 * every kernel's GPU start and end, graph nodes included, and optionally every CUDA runtime call's
 * host start and end, in one time base, written as CSV at exit. It shows what Nsight Compute cannot
 * (it serialises kernels) and what nsys would (not on the GPU host): how the kernels of a CUDA
 * graph overlap through programmatic dependent launch, how long each adds to the pass, and how
 * long after cudaGraphLaunch the first kernel starts. bench/gpu/kernel_trace_summary.py reads the
 * CSV.
 *
 * Usage (libember_kernel_trace.so is built beside the benches when CUPTI is found):
 *   CUDA_INJECTION64_PATH=/path/libember_kernel_trace.so EMBER_TRACE_OUT=trace.csv \
 *   [EMBER_TRACE_API=1] bench_engine_cuda profile MODEL cuda:0 b1_128 300 spin=5000
 * Tracing every graph node slows the host's graph launches (BERT-base 1 x 128: ~100 us a launch,
 * session 19), so read the GPU side only; EMBER_TRACE_API=1 adds the runtime calls, slower still.
 * CSV columns: what (kernel | api), start_ns, end_ns, correlation (a graph's kernels carry their
 * cudaGraphLaunch's), graph, node, stream, name (mangled kernel or runtime function name). */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_BUFFER_BYTES (8u << 20)

/* the entry point the CUDA driver looks up (exported: the build hides symbols by default) */
__attribute__((visibility("default"))) int InitializeInjection(void);

static FILE *g_out;

static void s_check(CUptiResult r, const char *what) {
    if (r != CUPTI_SUCCESS) {
        const char *msg = NULL;
        cuptiGetResultString(r, &msg);
        fprintf(stderr, "kernel_trace: %s: %s\n", what, msg ? msg : "?");
    }
}

static void CUPTIAPI s_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, S_BUFFER_BYTES);
    *size = *buffer ? S_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI s_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                        size_t size, size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (g_out && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            fprintf(g_out, "kernel,%llu,%llu,%u,%u,%llu,%u,%s\n", (unsigned long long)k->start,
                    (unsigned long long)k->end, k->correlationId, k->graphId,
                    (unsigned long long)k->graphNodeId, k->streamId, k->name ? k->name : "?");
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
            const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
            const char *name = NULL;
            if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS)
                name = "?";
            fprintf(g_out, "api,%llu,%llu,%u,0,0,0,%s\n", (unsigned long long)a->start,
                    (unsigned long long)a->end, a->correlationId, name);
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, stream, &dropped) == CUPTI_SUCCESS && dropped)
        fprintf(stderr, "kernel_trace: %zu records dropped\n", dropped);
    free(buffer);
}

static void s_finish(void) {
    s_check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
    if (g_out)
        fclose(g_out);
    g_out = NULL;
}

/* Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. */
int InitializeInjection(void) {
    const char *path = getenv("EMBER_TRACE_OUT");
    g_out = fopen(path && *path ? path : "kernel_trace.csv", "w");
    if (!g_out) {
        perror("kernel_trace: EMBER_TRACE_OUT");
        return 0;
    }
    fprintf(g_out, "what,start_ns,end_ns,correlation,graph,node,stream,name\n");
    s_check(cuptiActivityRegisterCallbacks(s_buffer_requested, s_buffer_completed), "callbacks");
    s_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "kernels");
    const char *api = getenv("EMBER_TRACE_API");
    if (api && strcmp(api, "1") == 0)
        s_check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "runtime calls");
    atexit(s_finish);
    return 1;
}
