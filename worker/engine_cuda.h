/* worker/engine_cuda.h — extras of the "cuda" engine backend (worker/engine_cuda.c) for tests,
 * benches and the worker's status: the bucket rule and counters. The engine itself is used
 * through worker/engine.h with opts.device = "cuda:N". */
#ifndef EMBER_WORKER_ENGINE_CUDA_H
#define EMBER_WORKER_ENGINE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/engine.h"

/* The bucket rule, in one place: a batch of n_tokens (>= 1) tokens runs padded to
 *   n <= 1024: the next multiple of 64      (64, 128, ..., 1024: 16 buckets)
 *   n >  1024: the next multiple of 256     (1280, 1536, ...)
 * Fine steps where batches are latency-bound (padding costs launch-bound time there), coarse
 * ones where they are compute-bound (padding costs <= 256 / n). The engine's buckets are every
 * value of this rule up to wrk_cuda_bucket_tokens(max_batch_tokens): 76 for 16384, 140 for 32768.
 */
int32_t wrk_cuda_bucket_tokens(int32_t n_tokens);

/* Batches whose chunks are timed on the GPU by default: one in 8 (the events around a pass add
 * ~4 us to its wall time; docs/engine.md). */
#define WRK_CUDA_GPU_TIME_DEFAULT 8

typedef struct wrk_cuda_stats {
    int32_t device;         /* CUDA device index */
    int32_t n_buckets;      /* buckets planned */
    int32_t max_bucket;     /* largest bucket (tokens) */
    int32_t n_slots;        /* staging slots (chunks in flight) */
    int32_t n_lanes;        /* activation sets: chunks whose passes may run side by side */
    int64_t batches;        /* batches submitted (wrk_engine_submit calls that got this far) */
    int64_t chunks;         /* chunks enqueued */
    int64_t lane_chunks[4]; /* ... per lane ([0, n_lanes) used) */
    int32_t n_graphs;       /* CUDA graphs captured (<= two per bucket, slot, lane: plain and
                               with the pruned last layer) */
    double capture_ms;      /* total time spent capturing + instantiating them */
    int64_t eager_runs;     /* forward passes launched kernel by kernel */
    int64_t graph_launches; /* forward passes launched as a graph */
    int64_t pruned_chunks;  /* chunks run with the pruned last layer (wrk_bert_cuda_forward) */
    int32_t tail_min;       /* the smallest bucket with a pruned last layer (0: none) */
    size_t device_bytes;    /* weights + lanes x (activations + cuBLASLt workspace) */
    int32_t residual;       /* the residual stream's kern_residual_type_t (0 f32, 1 bf16, 2 f16) */
    int32_t dtype;          /* weights' and activations' kern_dtype_t (0 bf16, 1 binary16) */
    int32_t fold_max;       /* the largest bucket running the folded LayerNorm (0: none) */
    int32_t fuse_max;       /* the largest bucket running QKV + attention fused (0: none) */
    int32_t ffn_min;        /* the smallest bucket running the FFN fused (0: none) */
    size_t pinned_bytes;    /* host staging (input + output slots) */
    /* GEMM plans (buckets x 4) whose algorithm was timed at start / taken from the tuning cache */
    int32_t plans_timed, plans_cached;
    /* GPU time of the timed chunks' forward passes, input copy kernel to pooling: those of every
     * gpu_time-th batch submitted (device option, default WRK_CUDA_GPU_TIME_DEFAULT), the first
     * one included (CUDA events; written by the completion thread; with several lanes chunks
     * may overlap, so the sum can exceed the wall time) */
    int64_t gpu_chunks;
    double gpu_ms_last, gpu_ms_total;
    /* the host's share of the same (timed) chunks (CLOCK_MONOTONIC, summed; completion thread):
     * enqueue = from the chunk's start in submit to its pass launched (packing, lane, events,
     * launch calls), of which launch = the CUDA calls (events, graph launch or kernels); wait =
     * from the launch call's return to the end event seen complete (the pass on the GPU plus the
     * launch's and the completion's latencies: wait - GPU time is the latency); deliver = from that
     * to the result's rows copied out of the staging slot */
    double host_enqueue_ms_total, host_launch_ms_total, host_wait_ms_total, host_deliver_ms_total;
} wrk_cuda_stats_t;

/* Fills *st for a cuda engine. Call from the submitting thread (the counters are its own; the
 * GPU-time fields are read under the engine's lock).
 * Returns 0, or COM_EINVAL when e is not a cuda engine. */
int wrk_engine_cuda_stats(const wrk_engine_t *e, wrk_cuda_stats_t *st, com_error_t *err);

#endif
