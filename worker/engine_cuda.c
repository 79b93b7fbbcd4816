/* worker/engine_cuda.c — the "cuda" / "cuda:N" backend of worker/engine.h (wrk_backend_cuda,
 * picked by worker/engine.c, which also validates batches): BERT in bf16 on one GPU
 * (worker/model_bert_cuda.c), one whole-model CUDA graph per token bucket, results as LazyTensor
 * handles.
 *
 * Flow of a batch (submitting thread, returns before the GPU runs it):
 *   split at sequence boundaries into chunks of <= max_batch_tokens tokens; per chunk:
 *   take the next staging slot (mapped pinned input+output buffers, used round robin; blocks
 *   only when all are in flight) -> pack ids / sequence index / type ids / cu_seqlens /
 *   counts into its input buffer -> forward pass for the chunk's bucket (wrk_cuda_bucket_tokens)
 *   given the slot's two buffers: its first kernel pulls the input across PCIe into the model's
 *   device input area, its pooling kernel writes the [n_seqs, out_dim] fp32 result straight
 *   into the slot's output buffer (no copy-engine transfers: they cost ~15 us of a batch-1
 *   chunk, docs/benchmarks.md), and after each row a completion flag (the chunk's epoch, packed
 *   with its input) -> hand the slot to the completion thread. The chunks of one batch in gpu_time
 *   (default 8) are timed instead: a pair of events around each pass.
 *   Lanes (device option lanes=N, default 2): the model keeps N sets of
 *   activations, each with a non-blocking stream of its own; a chunk runs in the lane of the
 *   last one while that lane has nothing queued (warm caches for one batch at a time), else in
 *   the least loaded lane (s_pick_lane), so under load consecutive chunks' passes overlap on
 *   the GPU (one pass's kernel tails fill with the other's work: +3-5% for MiniLM,
 *   docs/engine.md). A lane's passes run in its stream's order, so its single device input
 *   area is safe: a chunk's copy kernel queues behind the lane's previous pass.
 * Device options (after the device, comma-separated): tune=on|off (default on: time the GEMM
 *   candidates per bucket at start, worker/model_bert_cuda.c; off for profilers, which would
 *   otherwise trace thousands of timing launches), pdl=on|off (programmatic dependent launch of
 *   our kernels, kern_pdl_set; default on), residual=auto|f32|f16|bf16 (the residual stream's
 *   type, worker/model_bert_cuda.h; default auto: f16 when the model's LayerNorm weights keep
 *   it in range, else f32), tune_cache=on|off (default on: keep the timed choices in a file,
 *   s_tune_cache_path, so the next start on the same GPU and libraries skips the timing),
 *   lanes=1..4 (above), dtype=auto|bf16|f16 (the weights' and activations' 16-bit type,
 *   worker/model_bert_cuda.h; default auto: binary16 when the model's weights bound every
 *   value within its range, else bf16), fold=auto|on|off and fold_max=N (the folded
 *   LayerNorm, worker/model_bert_cuda.h; default auto: at the buckets of up to N = 196608 /
 *   hidden tokens, where it was measured faster; on: at every bucket), fuse=auto|on|off (QKV
 *   + attention as one kernel at the buckets it supports, worker/model_bert_cuda.h; default
 *   auto: at head dim 32 only, where it was measured faster), ffn=auto|on|off and ffn_min=N
 *   (the FFN sublayer as one kernel, its intermediate kept on chip, at the unfolded buckets of
 *   >= N tokens where the model, GPU and residual stream allow it, worker/model_bert_cuda.h;
 *   default auto: N = 0.9 of a wave of the kernel's tiles (128 x the SMs); on: N = 1, refused where
 *   it cannot run at all), prune=auto|off (with CLS or last-token pooling, the last layer past
 *   its attention on the pooled rows alone, worker/model_bert_cuda.h; default auto: a chunk of a
 *   bucket with a tail and at most that many sequences runs a second graph of the bucket, the
 *   pruned pass), gpu_time=N (time every Nth
 *   batch's passes on the GPU with a pair of events, 0: none; default
 *   WRK_CUDA_GPU_TIME_DEFAULT, engine_cuda.h), fault=N
 *   (for tests of the failure path: the Nth chunk's pass is queued behind a kernel that traps,
 *   kern_fault_trap_cuda, a sticky error) and graphs=...:
 *
 * Forward pass per bucket (device option "graphs=lazy|all|off", default lazy): 0 lazy: a bucket's
 *   first chunk runs eagerly, every later one launches its slot's graph of the bucket, captured
 *   (cudaStreamBeginCapture in thread-local mode, instantiate) the first time that slot carries
 *   it; 1: every bucket and slot captured at start (each bucket after one eager warm-up on a
 *   1-token batch); 2: always eager. A graph bakes the addresses of its staging slot's buffers,
 *   hence one per bucket and slot; every kernel reads the batch from device memory, so one graph
 *   serves any mix of sequences.
 *
 * Completion thread: takes slots in order, waits for the chunk's flags (spinning on mapped
 *   memory, asking the lane's stream for a failure every ~100 us) or, for a timed chunk, its
 *   end event (cudaEventSynchronize), copies the slot's output into the result's heap buffer
 *   (results own their memory and may outlive the engine), marks the result complete on its
 *   last chunk, frees the slot, writes the eventfd. wrk_result_poll reads the done flag this
 *   thread sets (set after the chunk completed and the copy landed).
 *
 * Errors: any CUDA / cuBLASLt failure (enqueue, capture or completion) makes the engine broken
 *   (sticky, with the first message): in-flight results fail with that message, every later
 *   submit returns COM_EINTERNAL naming it; the worker then marks itself unhealthy and exits.
 *
 * Invariants: slot states FREE -> QUEUED (submitter) -> FREE (completion), guarded by e->mu;
 *   only the submitting thread enqueues CUDA work and touches graphs / counters; only the
 *   completion thread touches a queued slot's output and its result. No allocation on the hot
 *   path except the result itself (heap, like the CPU backend). */
#include "worker/engine_cuda.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "kernels/add_layernorm.h"
#include "kernels/kern_cuda.h"
#include "worker/engine_backend.h"
#include "worker/model_bert_cuda.h"

#define S_DEFAULT_MAX_TOKENS 32768
#define S_DEFAULT_LANES      2
#define S_MAX_LANES          4
#define S_MAX_SLOTS          (2 * S_MAX_LANES)
/* device option fault=N: the trap kernel waits this long first, so the pass is queued behind it
 * and the failure is found by the completion thread, not by the enqueue */
#define S_FAULT_DELAY_US 2000

enum { S_FREE = 0, S_QUEUED };
_Static_assert(sizeof((wrk_cuda_stats_t *)0)->lane_chunks == S_MAX_LANES * sizeof(int64_t),
               "a lane_chunks counter per lane");

typedef struct s_slot {
    int32_t *in_host, *in_dev; /* [input words of the largest bucket], mapped pinned (host and
                                  device addresses) */
    float *out_host, *out_dev; /* [max_bucket * hidden], mapped pinned */
    /* [max_bucket] completion flags after out (same allocation): the pooling writes the chunk's
     * epoch into done[s] once row s is in out (wrk_bert_cuda_forward) */
    volatile uint32_t *done_host;
    uint32_t *done_dev;
    uint32_t epoch;             /* the chunk's (never 0: 0 marks no chunk) */
    cudaEvent_t ev0;            /* recorded before the forward pass of a timed chunk */
    cudaEvent_t ev;             /* ... and after it */
    double t_start;             /* s_now_ms at the chunk's start in submit */
    double t_ready, t_launched; /* ... before its CUDA calls and after them */
    int state;                  /* S_FREE / S_QUEUED, under e->mu */
    int32_t lane;               /* the lane its chunk runs in (s_pick_lane), -1 before */
    bool timed;                 /* ev0 recorded: the chunk's GPU time is measured */
    /* the job, written by the submitter before QUEUED */
    wrk_result_t *r;
    int32_t seq0, n_seqs, dim;
    bool last, failed;
    com_error_t err; /* when failed */
} s_slot_t;

typedef struct s_cuda {
    com_model_info_t info;
    int32_t device, max_tokens, graph_mode;
    int32_t time_every;          /* device option gpu_time: time every Nth batch (0: none) */
    int32_t fault_at;            /* device option fault: the chunk that traps (0: none) */
    int32_t n_buckets, *buckets; /* ascending */
    wrk_bert_cuda_t *model;
    int32_t n_lanes, n_slots;
    cudaStream_t streams[S_MAX_LANES]; /* one per lane: a lane's passes run in order */
    int32_t last_lane;                 /* the lane of the last chunk enqueued */
    bool *ran;               /* [n_buckets][2] has run a chunk, plain / pruned (lazy: capture
                                from the second on) */
    cudaGraphExec_t *graphs; /* [n_buckets][2][n_slots][n_lanes] (s_graph) */
    s_slot_t slots[S_MAX_SLOTS];
    int32_t next_submit, next_done;
    pthread_mutex_t mu;
    pthread_mutex_t capture_mu; /* held by the submitter while a stream captures */
    pthread_cond_t cv;
    bool stop;
    pthread_t thread;
    bool thread_started;
    atomic_int broken;
    char broken_msg[COM_ERROR_MSG_MAX];
    int event_fd;
    wrk_cuda_stats_t stats;
} s_cuda_t;

int32_t wrk_cuda_bucket_tokens(int32_t n) {
    if (n <= 1024)
        return n <= 64 ? 64 : (n + 63) / 64 * 64;
    return (int32_t)(((int64_t)n + 255) / 256 * 256);
}

static double s_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Records the first fatal error; later calls keep the first message. */
static void s_set_broken(s_cuda_t *e, const char *msg) {
    pthread_mutex_lock(&e->mu);
    if (!atomic_load(&e->broken)) {
        snprintf(e->broken_msg, sizeof e->broken_msg, "%s", msg);
        atomic_store(&e->broken, 1);
        COM_ERROR("engine cuda:%d: unusable after a CUDA error: %s", (int)e->device, msg);
    }
    pthread_mutex_unlock(&e->mu);
}

static int s_broken_error(s_cuda_t *e, com_error_t *err) {
    pthread_mutex_lock(&e->mu);
    int rc = com_error_set(err, COM_EINTERNAL, "engine cuda:%d is unusable after a CUDA error: %s",
                           (int)e->device, e->broken_msg);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static int32_t s_bucket_index(const s_cuda_t *e, int32_t T) {
    int32_t lo = 0, hi = e->n_buckets - 1;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (e->buckets[mid] < T)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The graph of bucket bi's pass, plain or with the pruned last layer, with slot si's buffers in
 * lane's activations. */
static cudaGraphExec_t *s_graph(s_cuda_t *e, int32_t bi, bool pruned, int32_t si, int32_t lane) {
    const size_t pass = 2 * (size_t)bi + pruned;
    return &e->graphs[(pass * (size_t)e->n_slots + (size_t)si) * (size_t)e->n_lanes + (size_t)lane];
}

/* The lane for the next chunk: the last one used while it has nothing queued (its activations
 * are then likely still in L2: alternating lanes for one batch at a time cost BERT-base 6% at
 * 1024 tokens), else the one with the fewest chunks queued, looking after the last one first.
 * A lane's load is its queued slots (from s_queue until the completion thread frees them), at
 * most S_MAX_SLOTS to count. */
static int32_t s_pick_lane(s_cuda_t *e) {
    int32_t load[S_MAX_LANES] = {0};
    pthread_mutex_lock(&e->mu);
    for (int32_t i = 0; i < e->n_slots; i++)
        if (e->slots[i].state == S_QUEUED && e->slots[i].lane >= 0)
            load[e->slots[i].lane]++;
    int32_t best = e->last_lane;
    for (int32_t k = 1; k < e->n_lanes && load[best] > 0; k++) {
        const int32_t l = (e->last_lane + k) % e->n_lanes;
        if (load[l] < load[best])
            best = l;
    }
    e->last_lane = best;
    e->stats.lane_chunks[best]++;
    pthread_mutex_unlock(&e->mu);
    return best;
}

/* Enqueues the forward pass of bucket bi (pruned: with the pruned last layer) on slot si's
 * buffers in lane's activations and stream, kernel by kernel (run eagerly or inside a capture). */
static int s_pass(s_cuda_t *e, int32_t bi, bool pruned, int32_t si, int32_t lane,
                  com_error_t *err) {
    return wrk_bert_cuda_forward(e->model, lane, bi, pruned, e->slots[si].in_dev,
                                 e->slots[si].out_dev, e->slots[si].done_dev, e->streams[lane],
                                 err);
}

static int s_forward_eager(s_cuda_t *e, int32_t bi, bool pruned, int32_t si, int32_t lane,
                           com_error_t *err) {
    e->stats.eager_runs++;
    return s_pass(e, bi, pruned, si, lane, err);
}

static int s_capture(s_cuda_t *e, int32_t bi, bool pruned, int32_t si, int32_t lane,
                     com_error_t *err) {
    const double t0 = s_now_ms();
    cudaStream_t st = e->streams[lane];
    pthread_mutex_lock(&e->capture_mu); /* no stream query while a stream captures */
    cudaError_t ce = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    if (ce != cudaSuccess)
        pthread_mutex_unlock(&e->capture_mu);
    KERN_CUDA_TRY(ce, err);
    int rc = s_pass(e, bi, pruned, si, lane, err);
    cudaGraph_t graph = NULL;
    ce = cudaStreamEndCapture(st, &graph);
    pthread_mutex_unlock(&e->capture_mu);
    if (rc != 0) {
        if (graph)
            cudaGraphDestroy(graph);
        return rc;
    }
    KERN_CUDA_TRY(ce, err);
    ce = cudaGraphInstantiate(s_graph(e, bi, pruned, si, lane), graph, 0);
    cudaGraphDestroy(graph);
    KERN_CUDA_TRY(ce, err);
    e->stats.n_graphs++;
    e->stats.capture_ms += s_now_ms() - t0;
    return 0;
}

/* The forward pass of bucket bi (pruned or not) for the chunk in slot si, in lane, by the graph
 * policy. */
static int s_forward(s_cuda_t *e, int32_t bi, bool pruned, int32_t si, int32_t lane,
                     com_error_t *err) {
    cudaGraphExec_t *g = s_graph(e, bi, pruned, si, lane);
    bool *ran = &e->ran[2 * bi + pruned];
    int rc = 0;
    if (e->graph_mode == 2 || (e->graph_mode == 0 && !*ran)) {
        rc = s_forward_eager(e, bi, pruned, si, lane, err);
    } else {
        if (!*g && (rc = s_capture(e, bi, pruned, si, lane, err)) != 0)
            return rc;
        KERN_CUDA_TRY(cudaGraphLaunch(*g, e->streams[lane]), err);
        e->stats.graph_launches++;
    }
    *ran = true;
    return rc;
}

/* Enqueues one chunk (sequences [s0, s1) of b) through slot sl; timed: between a pair of events
 * (else it completes by its flags alone). */
static int s_enqueue(s_cuda_t *e, s_slot_t *sl, const wrk_batch_t *b, int32_t s0, int32_t s1,
                     int32_t dim, bool normalize, bool timed, com_error_t *err) {
    sl->t_start = s_now_ms();
    const int32_t n_tokens = b->cu_seqlens[s1] - b->cu_seqlens[s0];
    const int32_t T = wrk_cuda_bucket_tokens(n_tokens), bi = s_bucket_index(e, T);
    const int32_t tail = wrk_bert_cuda_tail_rows(e->model, bi);
    const bool pruned = tail > 0 && s1 - s0 <= tail; /* the pass's promise: <= tail sequences */
    e->stats.pruned_chunks += pruned;
    const int64_t k = e->stats.chunks++;
    sl->epoch = (uint32_t)(k % UINT32_MAX) + 1;
    wrk_bert_cuda_pack(sl->in_host, T, b->token_ids, b->type_ids, b->cu_seqlens + s0, s1 - s0, dim,
                       normalize, sl->epoch);
    const int32_t si = (int32_t)(sl - e->slots), lane = sl->lane = s_pick_lane(e);
    if (e->fault_at > 0 && k + 1 == e->fault_at) { /* a test of the failure path */
        COM_WARN("engine cuda:%d: chunk %lld traps (device option fault)", (int)e->device,
                 (long long)(k + 1));
        int rc = kern_fault_trap_cuda(S_FAULT_DELAY_US, e->streams[lane], err);
        if (rc != 0)
            return rc;
    }
    sl->t_ready = s_now_ms();
    sl->timed = timed;
    if (timed)
        KERN_CUDA_TRY(cudaEventRecord(sl->ev0, e->streams[lane]), err);
    int rc = s_forward(e, bi, pruned, si, lane, err);
    if (rc != 0)
        return rc;
    if (timed)
        KERN_CUDA_TRY(cudaEventRecord(sl->ev, e->streams[lane]), err);
    sl->t_launched = s_now_ms();
    return 0;
}

/* Waits for an untimed chunk's completion flags (every sequence's done word = its epoch): seen
 * ~4 us sooner than an event recorded after the pass (docs/engine.md). Every ~100 us of waiting
 * the lane's stream is asked for a failure (a sticky error stops the flags), unless a capture is
 * under way; a stream found idle with a flag still missing is a failure too. */
static cudaError_t s_wait_flags(s_cuda_t *e, const s_slot_t *sl, const char **what) {
    double next_check = 0;
    int32_t s = 0;      /* the flags before s hold the epoch (they change no more for this chunk) */
    bool ended = false; /* the lane's stream was found idle: every flag the pass writes is there */
    for (unsigned spins = 0;; spins++) {
        while (s < sl->n_seqs && sl->done_host[s] == sl->epoch)
            s++;
        if (s == sl->n_seqs) {
            atomic_thread_fence(memory_order_acquire); /* the rows after their flags */
            return cudaSuccess;
        }
        if (ended) {
            *what = "the pass ended without its completion flags";
            return cudaErrorUnknown;
        }
        if (spins % 256 != 0)
            continue;
        const double now = s_now_ms();
        if (next_check == 0) {
            next_check = now + 0.1;
        } else if (now >= next_check) {
            /* a stream that is capturing refuses queries (and the query would break the
             * capture): skip this check while the submitter captures */
            if (pthread_mutex_trylock(&e->capture_mu) != 0)
                continue;
            const cudaError_t ce = cudaStreamQuery(e->streams[sl->lane]);
            pthread_mutex_unlock(&e->capture_mu);
            if (ce != cudaSuccess && ce != cudaErrorNotReady) {
                *what = "cudaStreamQuery(batch)";
                return ce;
            }
            if (ce == cudaSuccess) { /* the pass ended: one more look at the flags decides */
                atomic_thread_fence(memory_order_seq_cst);
                ended = true;
                continue;
            }
            next_check = now + 0.1;
        }
    }
}

static void *s_completion_main(void *arg) {
    s_cuda_t *e = arg;
    char msg[COM_ERROR_MSG_MAX];
    if (cudaSetDevice(e->device) != cudaSuccess)
        s_set_broken(e, "completion thread: cudaSetDevice failed");
    for (;;) {
        pthread_mutex_lock(&e->mu);
        s_slot_t *sl = &e->slots[e->next_done];
        while (sl->state != S_QUEUED && !e->stop)
            pthread_cond_wait(&e->cv, &e->mu);
        if (sl->state != S_QUEUED) { /* stop, and nothing queued (slots complete in order) */
            pthread_mutex_unlock(&e->mu);
            break;
        }
        pthread_mutex_unlock(&e->mu);
        wrk_result_t *r = sl->r;
        bool failed = sl->failed;
        float gpu_ms = -1.f; /* the chunk's GPU time, when it ran and its events say so */
        double t_seen = 0, t_copied = 0;
        if (failed) {
            if (r->err.code == 0)
                r->err = sl->err;
        } else {
            /* timed chunks by their end event, so the GPU time is counted before the result
             * completes; the others by their flags */
            const char *what = "cudaEventSynchronize(batch)";
            cudaError_t ce = sl->timed ? cudaEventSynchronize(sl->ev) : s_wait_flags(e, sl, &what);
            t_seen = s_now_ms();
            if (ce != cudaSuccess) {
                snprintf(msg, sizeof msg, "%s: %s: %s", what, cudaGetErrorName(ce),
                         cudaGetErrorString(ce));
                s_set_broken(e, msg);
                failed = true;
            } else if (atomic_load(&e->broken) && r->err.code == 0) {
                failed = true; /* results queued behind a failure are not trusted */
            }
            if (failed && r->err.code == 0) {
                pthread_mutex_lock(&e->mu);
                com_error_set(&r->err, COM_EINTERNAL,
                              "engine cuda:%d failed while the batch ran: %s", (int)e->device,
                              e->broken_msg);
                pthread_mutex_unlock(&e->mu);
            }
            if (!failed && sl->timed &&
                cudaEventElapsedTime(&gpu_ms, sl->ev0, sl->ev) != cudaSuccess)
                gpu_ms = -1.f;
            if (!failed) {
                memcpy(r->emb + (size_t)sl->seq0 * (size_t)sl->dim, sl->out_host,
                       (size_t)sl->n_seqs * (size_t)sl->dim * sizeof(float));
                t_copied = s_now_ms();
            }
        }
        const bool last = sl->last;
        pthread_mutex_lock(&e->mu);
        if (gpu_ms >= 0.f) { /* counted under the lock the slot is freed under anyway */
            e->stats.gpu_ms_last = gpu_ms;
            e->stats.gpu_ms_total += gpu_ms;
            e->stats.gpu_chunks++;
            e->stats.host_enqueue_ms_total += sl->t_launched - sl->t_start;
            e->stats.host_launch_ms_total += sl->t_launched - sl->t_ready;
            e->stats.host_wait_ms_total += t_seen - sl->t_launched;
            e->stats.host_deliver_ms_total += t_copied - t_seen;
        }
        sl->state = S_FREE;
        sl->r = NULL;
        e->next_done = (e->next_done + 1) % e->n_slots;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        if (last) {
            wrk_result_complete(r);
            const uint64_t one = 1;
            if (write(e->event_fd, &one, sizeof one) < 0) {
                /* EAGAIN: the counter is saturated, a wake-up is already pending */
            }
        }
    }
    return NULL;
}

static void s_result_release(wrk_result_t *r) {
    wrk_result_fini(r);
    free(r);
}

static s_slot_t *s_acquire(s_cuda_t *e) {
    pthread_mutex_lock(&e->mu);
    s_slot_t *sl = &e->slots[e->next_submit];
    while (sl->state != S_FREE)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return sl;
}

static void s_queue(s_cuda_t *e, s_slot_t *sl) {
    pthread_mutex_lock(&e->mu);
    sl->state = S_QUEUED;
    e->next_submit = (e->next_submit + 1) % e->n_slots;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static int s_submit(void *impl, const wrk_batch_t *b, int32_t dim, bool normalize,
                    wrk_result_t **out, com_error_t *err) {
    s_cuda_t *e = impl;
    *out = NULL;
    if (atomic_load(&e->broken))
        return s_broken_error(e, err);
    cudaError_t ce = cudaSetDevice(e->device);
    if (ce != cudaSuccess) {
        s_set_broken(e, cudaGetErrorString(ce));
        return s_broken_error(e, err);
    }
    wrk_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return com_error_set(err, COM_ENOMEM, "submit: out of memory");
    if (wrk_result_init(r, b->n_seqs, dim, s_result_release, err) != 0) {
        free(r);
        return COM_ENOMEM;
    }
    /* the events around a pass add ~4-5 us to its wall time (two records, and completion seen by
     * the end event rather than the flags: docs/engine.md), so only the chunks of every
     * time_every-th batch are timed */
    const int64_t batch = e->stats.batches++;
    const bool timed = e->time_every > 0 && batch % e->time_every == 0;
    /* Chunks of at most max_tokens. On an idle engine, of at most max_tokens / lanes, so that a
     * large batch keeps every lane busy (MiniLM, 27k tokens on 2 lanes: chunks of <= 16384,
     * 12.4 M tokens/s against 12.0 in one chunk; equal halves ran in lock-step, their kernel
     * tails together, and gained less: 12.05). Under load the lanes already overlap consecutive
     * chunks, and larger chunks run faster (12.9 against 12.6 M with 4 batches in flight). */
    int32_t limit = e->max_tokens;
    if (e->n_lanes > 1 && b->n_tokens > e->max_tokens / e->n_lanes) {
        pthread_mutex_lock(&e->mu);
        const bool idle = e->slots[e->next_done].state == S_FREE; /* nothing queued */
        pthread_mutex_unlock(&e->mu);
        if (idle && e->max_tokens / e->n_lanes >= e->info.max_position_embeddings)
            limit = e->max_tokens / e->n_lanes;
    }
    int32_t s0 = 0;
    while (s0 < b->n_seqs) {
        const int32_t base = b->cu_seqlens[s0];
        int32_t s1 = s0;
        while (s1 < b->n_seqs && b->cu_seqlens[s1 + 1] - base <= limit)
            s1++; /* every sequence fits (validated: <= max_position_embeddings), so s1 > s0 */
        s_slot_t *sl = s_acquire(e);
        sl->r = r;
        sl->seq0 = s0;
        sl->n_seqs = s1 - s0;
        sl->dim = dim;
        sl->lane = -1;
        sl->timed = false;
        sl->failed = false;
        com_error_clear(&sl->err);
        int rc = atomic_load(&e->broken)
                     ? s_broken_error(e, &sl->err)
                     : s_enqueue(e, sl, b, s0, s1, dim, normalize, timed, &sl->err);
        if (rc != 0) {
            s_set_broken(e, sl->err.msg);
            sl->failed = true;
            sl->last = true;
            s_queue(e, sl);
            break;
        }
        sl->last = s1 == b->n_seqs;
        s_queue(e, sl);
        s0 = s1;
    }
    *out = r;
    return 0;
}

static void s_destroy(void *impl) {
    s_cuda_t *e = impl;
    if (!e)
        return;
    if (e->thread_started) {
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    cudaSetDevice(e->device);
    for (int32_t l = 0; l < S_MAX_LANES; l++)
        if (e->streams[l])
            cudaStreamSynchronize(e->streams[l]);
    if (e->graphs)
        for (int32_t i = 0; i < 2 * e->n_buckets * e->n_slots * e->n_lanes; i++)
            if (e->graphs[i])
                cudaGraphExecDestroy(e->graphs[i]);
    free(e->graphs);
    free(e->ran);
    wrk_bert_cuda_destroy(&e->model);
    for (int i = 0; i < S_MAX_SLOTS; i++) {
        if (e->slots[i].in_host)
            cudaFreeHost(e->slots[i].in_host);
        if (e->slots[i].out_host)
            cudaFreeHost(e->slots[i].out_host);
        if (e->slots[i].ev)
            cudaEventDestroy(e->slots[i].ev);
        if (e->slots[i].ev0)
            cudaEventDestroy(e->slots[i].ev0);
    }
    for (int32_t l = 0; l < S_MAX_LANES; l++)
        if (e->streams[l])
            cudaStreamDestroy(e->streams[l]);
    free(e->buckets);
    if (e->event_fd >= 0)
        close(e->event_fd);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->capture_mu);
    free(e);
}

/* Warm-up + capture of every bucket, slot and lane on a 1-token dummy batch (graphs=all), the
 * pruned pass too where the bucket has one. */
static int s_capture_all(s_cuda_t *e, com_error_t *err) {
    const int32_t ids[1] = {0}, cu[2] = {0, 1};
    for (int32_t px = 0; px < 2 * e->n_buckets; px++) {
        const int32_t bi = px / 2;
        const bool pruned = px % 2;
        if (pruned && wrk_bert_cuda_tail_rows(e->model, bi) == 0)
            continue;
        /* the layout depends on the bucket: pack the dummy for this one (the previous bucket's
         * warm-up has finished reading the slot: synchronised below) */
        wrk_bert_cuda_pack(e->slots[0].in_host, e->buckets[bi], ids, NULL, cu, 1,
                           e->info.embedding_dim, false, 0);
        int rc = s_forward_eager(e, bi, pruned, 0, 0, err);
        for (int32_t si = 0; si < e->n_slots && rc == 0; si++)
            for (int32_t lane = 0; lane < e->n_lanes && rc == 0; lane++)
                rc = s_capture(e, bi, pruned, si, lane, err);
        cudaError_t ce;
        if (rc == 0 && (ce = cudaStreamSynchronize(e->streams[0])) != cudaSuccess)
            rc = kern_check_fail(err, "cudaStreamSynchronize(warm-up)", cudaGetErrorName(ce),
                                 cudaGetErrorString(ce), __func__, __FILE__, __LINE__);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Where the GEMM tuning cache lives: $EMBER_TUNE_CACHE (a file), else
 * $XDG_CACHE_HOME/ember/gemm-tune.txt, else $HOME/.cache/ember/gemm-tune.txt. false when none
 * of them is set (or the path is too long): no cache then. */
static bool s_tune_cache_path(char *out, size_t cap) {
    const char *v = getenv("EMBER_TUNE_CACHE");
    int n;
    if (v && *v)
        n = snprintf(out, cap, "%s", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        n = snprintf(out, cap, "%s/ember/gemm-tune.txt", v);
    else if ((v = getenv("HOME")) && *v)
        n = snprintf(out, cap, "%s/.cache/ember/gemm-tune.txt", v);
    else
        return false;
    return n > 0 && (size_t)n < cap;
}

/* The decimal number of a device option, digits [v, v + n) only: true with *x when it lies in
 * [lo, hi]. */
static bool s_option_number(const char *v, size_t n, int32_t lo, int32_t hi, int32_t *x) {
    int64_t val = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9' || val > hi)
            return false;
        val = 10 * val + (v[i] - '0');
    }
    if (val < lo || val > hi)
        return false;
    *x = (int32_t)val;
    return true;
}

static int s_create(const char *model_dir, const wrk_engine_opts_t *opts, int32_t device,
                    void **out, const com_model_info_t **info_out, int32_t *max_tokens_out,
                    com_error_t *err) {
    *out = NULL;
    int rc;
    int32_t max_tokens = opts ? opts->max_batch_tokens : 0;
    int32_t graph_mode = 0, tune = 1, pdl = 1, residual = WRK_BERT_RESIDUAL_AUTO, tune_cache = 1;
    int32_t lanes = S_DEFAULT_LANES, dtype = WRK_BERT_DTYPE_AUTO, fold = WRK_BERT_FOLD_AUTO;
    int32_t fold_max = 0, fuse = WRK_BERT_FUSE_AUTO, time_every = WRK_CUDA_GPU_TIME_DEFAULT;
    int32_t fault_at = 0, ffn = WRK_BERT_FFN_AUTO, ffn_min = 0, prune = WRK_BERT_PRUNE_AUTO;
    /* options after the device, comma-separated: each one of these words, or (max > 0) the
     * word followed by a decimal number in [value, max] */
    const struct {
        const char *word;
        int32_t *var, value, max;
    } words[] = {{"graphs=lazy", &graph_mode, 0, 0},
                 {"graphs=all", &graph_mode, 1, 0},
                 {"graphs=off", &graph_mode, 2, 0},
                 {"tune=on", &tune, 1, 0},
                 {"tune=off", &tune, 0, 0},
                 {"pdl=on", &pdl, 1, 0},
                 {"pdl=off", &pdl, 0, 0},
                 {"residual=auto", &residual, WRK_BERT_RESIDUAL_AUTO, 0},
                 {"residual=f32", &residual, KERN_RESIDUAL_F32, 0},
                 {"residual=f16", &residual, KERN_RESIDUAL_F16, 0},
                 {"residual=bf16", &residual, KERN_RESIDUAL_BF16, 0},
                 {"tune_cache=on", &tune_cache, 1, 0},
                 {"tune_cache=off", &tune_cache, 0, 0},
                 {"lanes=", &lanes, 1, S_MAX_LANES},
                 {"dtype=auto", &dtype, WRK_BERT_DTYPE_AUTO, 0},
                 {"dtype=bf16", &dtype, KERN_DTYPE_BF16, 0},
                 {"dtype=f16", &dtype, KERN_DTYPE_F16, 0},
                 {"fold=on", &fold, WRK_BERT_FOLD_ON, 0},
                 {"fold=off", &fold, WRK_BERT_FOLD_OFF, 0},
                 {"fold=auto", &fold, WRK_BERT_FOLD_AUTO, 0},
                 {"fold_max=", &fold_max, 1, 1 << 20},
                 {"fuse=auto", &fuse, WRK_BERT_FUSE_AUTO, 0},
                 {"fuse=off", &fuse, WRK_BERT_FUSE_OFF, 0},
                 {"fuse=on", &fuse, WRK_BERT_FUSE_ON, 0},
                 {"ffn=auto", &ffn, WRK_BERT_FFN_AUTO, 0},
                 {"ffn=off", &ffn, WRK_BERT_FFN_OFF, 0},
                 {"ffn=on", &ffn, WRK_BERT_FFN_ON, 0},
                 {"ffn_min=", &ffn_min, 1, 1 << 20},
                 {"prune=auto", &prune, WRK_BERT_PRUNE_AUTO, 0},
                 {"prune=off", &prune, WRK_BERT_PRUNE_OFF, 0},
                 {"gpu_time=", &time_every, 0, 1 << 20},
                 {"fault=", &fault_at, 1, 1 << 30}};
    for (const char *o = opts && opts->device ? strchr(opts->device, ',') : NULL; o;
         o = strchr(o + 1, ',')) {
        const char *v = o + 1;
        const size_t n = strcspn(v, ",");
        size_t w = 0;
        int32_t x = 0;
        for (; w < sizeof words / sizeof *words; w++) {
            const size_t k = strlen(words[w].word);
            if (words[w].max == 0
                    ? n == k && strncmp(v, words[w].word, n) == 0
                    : n > k && strncmp(v, words[w].word, k) == 0 &&
                          s_option_number(v + k, n - k, words[w].value, words[w].max, &x))
                break;
        }
        if (w == sizeof words / sizeof *words)
            return com_error_set(
                err, COM_EINVAL,
                "engine cuda: device option \"%.*s\" (want graphs=lazy|all|off, "
                "tune=on|off, pdl=on|off, residual=auto|f32|f16|bf16, "
                "tune_cache=on|off, lanes=1..%d, dtype=auto|bf16|f16, "
                "fold=auto|on|off, fold_max=1..1048576, fuse=auto|on|off, ffn=auto|on|off, "
                "ffn_min=1..1048576, prune=auto|off, gpu_time=0..1048576, fault=1..1073741824)",
                (int)n, v, S_MAX_LANES);
        *words[w].var = words[w].max == 0 ? words[w].value : x;
    }
    char cache_path[4096];
    const bool cached = tune_cache && s_tune_cache_path(cache_path, sizeof cache_path);
    const wrk_bert_cuda_opts_t mopts = {.tune = tune != 0,
                                        .residual = residual,
                                        .tune_cache = cached ? cache_path : NULL,
                                        .lanes = lanes,
                                        .dtype = dtype,
                                        .fold = fold,
                                        .fold_max = fold_max,
                                        .fuse = fuse,
                                        .ffn = ffn,
                                        .ffn_min = ffn_min,
                                        .prune = prune};
    kern_pdl_set(pdl != 0); /* process-wide: one engine per worker process */
    if (max_tokens < 0 || max_tokens > (1 << 20))
        return com_error_set(err, COM_EINVAL, "engine cuda: max_batch_tokens %d", (int)max_tokens);
    if (max_tokens == 0)
        max_tokens = S_DEFAULT_MAX_TOKENS;
    int n_dev = 0;
    cudaError_t ce = cudaGetDeviceCount(&n_dev);
    if (ce != cudaSuccess || n_dev < 1)
        return com_error_set(err, COM_EUNSUPPORTED, "engine: no CUDA device (%s)",
                             ce != cudaSuccess ? cudaGetErrorString(ce) : "count 0");
    if (device >= n_dev)
        return com_error_set(err, COM_EUNSUPPORTED, "engine: cuda:%d requested, %d device(s)",
                             (int)device, n_dev);
    s_cuda_t *e = calloc(1, sizeof *e);
    if (!e)
        return com_error_set(err, COM_ENOMEM, "engine: out of memory");
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->capture_mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    atomic_init(&e->broken, 0);
    e->device = device;
    e->max_tokens = max_tokens;
    e->graph_mode = graph_mode;
    e->time_every = time_every;
    e->fault_at = fault_at;
    /* 2 staging slots per lane (one running, one queued behind it), 3 with one lane (one
     * running, one queued, one being packed); a chunk's lane is picked when it is enqueued
     * (s_pick_lane) */
    e->n_lanes = lanes;
    e->n_slots = lanes == 1 ? 3 : 2 * lanes;
    e->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->event_fd < 0) {
        rc = com_error_set(err, COM_EINTERNAL, "engine: eventfd failed");
        goto err;
    }
#define S_CUDA(stmt)                                                                               \
    do {                                                                                           \
        cudaError_t ce_ = (stmt);                                                                  \
        if (ce_ != cudaSuccess) {                                                                  \
            rc = kern_check_fail(err, #stmt, cudaGetErrorName(ce_), cudaGetErrorString(ce_),       \
                                 __func__, __FILE__, __LINE__);                                    \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)
    S_CUDA(cudaSetDevice(device));
    if ((rc = com_model_info_load(model_dir, &e->info, err)) != 0)
        goto err;
    const int32_t max_bucket = wrk_cuda_bucket_tokens(max_tokens);
    e->n_buckets = 0;
    for (int32_t T = 64; T <= max_bucket; T = wrk_cuda_bucket_tokens(T + 1))
        e->n_buckets++;
    e->buckets = malloc((size_t)e->n_buckets * sizeof *e->buckets);
    e->graphs = calloc(2 * (size_t)e->n_buckets * e->n_slots * e->n_lanes, sizeof *e->graphs);
    e->ran = calloc(2 * (size_t)e->n_buckets, sizeof *e->ran);
    if (!e->buckets || !e->graphs || !e->ran) {
        rc = com_error_set(err, COM_ENOMEM, "engine: out of memory");
        goto err;
    }
    for (int32_t i = 0, T = 64; T <= max_bucket; T = wrk_cuda_bucket_tokens(T + 1))
        e->buckets[i++] = T;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", model_dir);
    double t0 = s_now_ms();
    if ((rc = wrk_bert_cuda_new(&e->info, path, e->buckets, e->n_buckets, &mopts, &e->model,
                                err)) != 0)
        goto err;
    const double model_ms = s_now_ms() - t0;
    t0 = s_now_ms();
    for (int32_t l = 0; l < lanes; l++)
        S_CUDA(cudaStreamCreateWithFlags(&e->streams[l], cudaStreamNonBlocking));
    const size_t in_bytes = wrk_bert_cuda_input_words(max_bucket) * sizeof(int32_t);
    const size_t out_floats = (size_t)max_bucket * (size_t)e->info.hidden_size;
    const size_t out_bytes = out_floats * sizeof(float) + (size_t)max_bucket * sizeof(uint32_t);
    for (int i = 0; i < e->n_slots; i++) {
        s_slot_t *sl = &e->slots[i];
        S_CUDA(cudaHostAlloc((void **)&sl->in_host, in_bytes, cudaHostAllocMapped));
        S_CUDA(cudaHostAlloc((void **)&sl->out_host, out_bytes, cudaHostAllocMapped));
        S_CUDA(cudaHostGetDevicePointer((void **)&sl->in_dev, sl->in_host, 0));
        S_CUDA(cudaHostGetDevicePointer((void **)&sl->out_dev, sl->out_host, 0));
        sl->done_host = (volatile uint32_t *)(sl->out_host + out_floats);
        sl->done_dev = (uint32_t *)(sl->out_dev + out_floats);
        memset((void *)sl->done_host, 0, (size_t)max_bucket * sizeof(uint32_t)); /* no epoch */
        S_CUDA(cudaEventCreate(&e->slots[i].ev));
        S_CUDA(cudaEventCreate(&e->slots[i].ev0));
    }
    e->stats.device = device;
    e->stats.n_buckets = e->n_buckets;
    e->stats.n_slots = e->n_slots;
    e->stats.n_lanes = e->n_lanes;
    e->stats.max_bucket = max_bucket;
    e->stats.device_bytes = wrk_bert_cuda_device_bytes(e->model);
    e->stats.residual = wrk_bert_cuda_residual(e->model);
    e->stats.dtype = wrk_bert_cuda_dtype(e->model);
    e->stats.fold_max = wrk_bert_cuda_fold_max(e->model);
    e->stats.fuse_max = wrk_bert_cuda_fuse_max(e->model);
    e->stats.ffn_min = wrk_bert_cuda_ffn_min(e->model);
    for (int32_t bi = e->n_buckets - 1; bi >= 0; bi--)
        if (wrk_bert_cuda_tail_rows(e->model, bi) > 0)
            e->stats.tail_min = e->buckets[bi];
    wrk_bert_cuda_plan_counts(e->model, &e->stats.plans_timed, &e->stats.plans_cached);
    e->stats.pinned_bytes = (size_t)e->n_slots * (in_bytes + out_bytes);
    const double slots_ms = s_now_ms() - t0;
    t0 = s_now_ms();
    if (graph_mode == 1 && (rc = s_capture_all(e, err)) != 0)
        goto err;
    const double capture_ms = s_now_ms() - t0;
    if (pthread_create(&e->thread, NULL, s_completion_main, e) != 0) {
        rc = com_error_set(err, COM_EINTERNAL, "engine: cannot start the completion thread");
        goto err;
    }
    e->thread_started = true;
#undef S_CUDA
    {
        struct cudaDeviceProp prop;
        const char *name = cudaGetDeviceProperties(&prop, device) == cudaSuccess ? prop.name : "?";
        static const char *const res_name[] = {"f32", "bf16", "f16"};
        char folded[256] = "";
        if (e->stats.fold_max > 0)
            snprintf(folded, sizeof folded, ", LayerNorm folded up to %d tokens",
                     (int)e->stats.fold_max);
        if (e->stats.fuse_max > 0)
            snprintf(folded + strlen(folded), sizeof folded - strlen(folded),
                     ", QKV + attention fused up to %d tokens", (int)e->stats.fuse_max);
        if (e->stats.ffn_min > 0)
            snprintf(folded + strlen(folded), sizeof folded - strlen(folded),
                     ", FFN fused from %d tokens", (int)e->stats.ffn_min);
        if (e->stats.tail_min > 0)
            snprintf(folded + strlen(folded), sizeof folded - strlen(folded),
                     ", last layer pruned to the pooled rows from %d tokens",
                     (int)e->stats.tail_min);
        COM_INFO("engine cuda:%d (%s): %s (%s, %d layers, hidden %d), %s, %s residual, %d "
                 "buckets up to %d tokens, %d lanes, graphs %s%s, %.1f MiB device memory; "
                 "start-up: model %.0f ms, staging slots %.0f ms, capture %.0f ms",
                 (int)device, name, model_dir, e->info.architecture, (int)e->info.num_layers,
                 (int)e->info.hidden_size, e->stats.dtype == KERN_DTYPE_F16 ? "binary16" : "bf16",
                 res_name[e->stats.residual], (int)e->n_buckets, (int)max_bucket, (int)e->n_lanes,
                 graph_mode == 0   ? "lazy"
                 : graph_mode == 1 ? "captured at start"
                                   : "off",
                 folded, (double)e->stats.device_bytes / (1 << 20), model_ms, slots_ms, capture_ms);
    }
    *out = e;
    *info_out = &e->info;
    *max_tokens_out = max_tokens;
    return 0;
err:
    s_destroy(e);
    return rc ? rc : COM_EINTERNAL;
}

static int s_event_fd(const void *impl) {
    return ((const s_cuda_t *)impl)->event_fd;
}

int wrk_engine_cuda_stats(const wrk_engine_t *e, wrk_cuda_stats_t *st, com_error_t *err) {
    const wrk_backend_t *be = NULL;
    s_cuda_t *c = (s_cuda_t *)wrk_engine_impl(e, &be);
    if (be != &wrk_backend_cuda)
        return com_error_set(err, COM_EINVAL, "engine: not a cuda engine");
    pthread_mutex_lock(&c->mu); /* the GPU-time fields are the completion thread's */
    *st = c->stats;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int s_health(const void *impl, com_error_t *err) {
    s_cuda_t *e = (s_cuda_t *)impl;
    return atomic_load(&e->broken) ? s_broken_error(e, err) : 0;
}

const wrk_backend_t wrk_backend_cuda = {.name = "cuda",
                                        .create = s_create,
                                        .destroy = s_destroy,
                                        .event_fd = s_event_fd,
                                        .health = s_health,
                                        .submit = s_submit};
