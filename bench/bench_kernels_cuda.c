/* bench/bench_kernels_cuda.c — times each production CUDA kernel (linked from
 * ember_kernels_cuda, never a copy) at the shapes the engine runs: all-MiniLM-L6-v2 (hidden 384,
 * 12 heads x 32, intermediate 1536) and BERT-base (768, 12 x 64, 3072), buckets of 128, 4096
 * (8 sequences of 512) and 16384 tokens (ragged sequences of 32..512). CUDA events around REPS
 * launches of one kernel, median of 15 such samples, on seeded random data; prints a table (us per
 * launch, and GB/s or TFLOP/s) and writes JSON. Usage: bench_kernels_cuda OUT.json [REPS]. One
 * stream, one thread. The attention kernels run in bf16 and in binary16 ("attention mma f16",
 * "attention wgmma f16"), the other kernels in bf16; at MiniLM's 1 x 128 and 1 x 64 tokens also
 * the fused QKV projection + attention ("qkv+attention fused", qkv_attention.cu; plain and with
 * the folded LayerNorm, "fold") beside the pair it replaces ("qkv+attention pair": the tuned QKV
 * plan, then kern_attention_cuda; one row = one pair).
 * bench_kernels_cuda gemms OUT.json: every GEMM
 * candidate (cuBLASLt's first choice and each of our configurations that can run the shape) at the
 * engine's four GEMMs of both shapes and 128 to 16,384 tokens, plus the output and FFN-down GEMMs
 * with the bias + residual + LayerNorm epilogue the engine runs ("out+ln", "ffn2+ln", fp32
 * residual: cuBLASLt and our unfused configurations as GEMM + LayerNorm kernel, our fused ones as
 * one kernel), and the folded LayerNorm's epilogues (ours only, kernels/row_stats.h: "qkv+fold",
 * "ffn1+fold" normalise x by its row statistics, "out+stats", "ffn2+stats" add a folded residual
 * and write the statistics), each timed as a CUDA graph of back-to-back launches (what the engine's
 * graphs run, programmatic edges included), so the host's launch rate does not decide. Optional
 * after OUT.json: the token counts to run (e.g. 128,4096; default all), "pdl=off" (ordinary
 * launches, for A/B), and filters for a profiler run of a few kernels: model=minilm|bert-base,
 * gemm=qkv|out|ffn1+gelu|ffn2|out+ln|ffn2+ln|qkv+fold|ffn1+fold|out+stats|ffn2+stats|ffn1+bias
 * (the last: the FFN-up shape with the bias only, to price the GELU epilogue),
 * match=SUBSTRING (of the candidate's description, e.g. "128x128 s4 pingpong"), "dtype=f16"
 * (the same candidates with binary16 operands; default bf16) and "residual=16" (the "+ln"
 * GEMMs' residual in the operands' 16-bit type with y updated in place on it, as the engine's
 * 16-bit residual streams run; default fp32).
 * bench_kernels_cuda ffn OUT.json [T,...] [pdl=off]: the fused FFN sublayer (kernels/ffn.h,
 * kern_ffn_cuda; Hopper) beside the unfused pair the engine runs today (FFN-up with
 * KERN_LINEAR_BIAS_GELU, then FFN-down with KERN_LINEAR_BIAS_ADD_LN on the binary16 residual x, in
 * place, as worker/model_bert_cuda.c runs MiniLM in f16; both plans tuned) at MiniLM's shape
 * (hidden 384, inter 1536), binary16, 1024, 4096, 16384, 16896 (one wave of 128-row tiles on
 * 132 SMs), 20480 and 27392 tokens (or the listed ones),
 * and the fused op: us per call
 * (CUDA graphs, as gemms), fused / unfused, and sustained at the power cap (2 s per row unless
 * BENCH_SUSTAIN_S says otherwise; 0: not) with mJ per call where NVML measures it. JSON:
 * {"mode": "ffn", "hidden", "inter", "dtype", "pdl", "sustain_s", "fused_supported", "ffn":
 * [{"tokens", "unfused": {"us", "sustained_us", "sustained_sm_mhz", "power_capped", "mj", "ffn1",
 * "ffn2" (the plans' descriptions)}, "fused": {"us", "sustained_us", "sustained_sm_mhz",
 * "power_capped", "mj"}, "ratio_us", "ratio_sustained_us", "ratio_mj" (fused / unfused)}]},
 * null where not run or not measured. Without the fused op (kern_ffn_supported false) the unfused
 * pair alone (fused and the ratios null).
 * BENCH_SUSTAIN_S=SECONDS in the environment: each row at 16384 tokens (first form), each
 * candidate (gemms) or each variant (ffn) then also runs back to back for that long, at the power
 * cap as the engine's long passes run, and prints its time and energy per launch and the SM clock
 * (NVML). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef EMBER_HAVE_CUDA
#include "bench/bench_energy.h"
#include "bench/bench_util.h"
#include "common/half.h"
#include "common/prng.h"
#include "kernels/add_layernorm.h"
#include "kernels/attention.h"
#include "kernels/bias_gelu.h"
#include "kernels/copy.h"
#include "kernels/embed_layernorm.h"
#include "kernels/ffn.h"
#include "kernels/kern_cuda.h"
#include "kernels/linear.h"
#include "kernels/pool.h"
#include "kernels/qkv_attention.h"
#include "kernels/row_stats.h"
#include "worker/model_bert_cuda.h"

/* A kernel run back to back for BENCH_SUSTAIN_S seconds: us and mJ per launch (us 0: not run;
 * mj < 0: no energy reading), the SM clock's median, the share of the time the power cap held
 * it down. */
typedef struct sustained {
    double us, mj, mhz, capped;
} sustained_t;

typedef struct row {
    char name[64];
    double us, rate; /* rate: GB/s or TFLOP/s */
    const char *unit;
    sustained_t sus;
} row_t;

/* BENCH_SUSTAIN_S=SECONDS (environment): every row at kSustainT tokens also runs back to back
 * for that long, as the engine's passes run at the power cap, with its energy per launch
 * (bench_energy.h): at the cap a kernel's cost is its joules, which the short samples above,
 * taken at full clock, do not show. */
enum { kSustainT = 16384 };
static double g_sustain_s;
static int32_t g_row_tokens; /* the token count of the rows being timed (0: none) */
static bench_energy_t g_energy;

/* A sustained run: batches of launches back to back until BENCH_SUSTAIN_S has passed, one batch
 * queued behind the running one so the GPU never waits, inside an energy window:
 *   s_sustain_t s = s_sustain_begin(); do { LAUNCH A BATCH } while (s_sustain_next(&s, ...));
 *   sustained_t r = s_sustain_end(&s, st); */
typedef struct s_sustain {
    double t0;
    int64_t runs; /* launches so far */
    int batches;
} s_sustain_t;

static s_sustain_t s_sustain_begin(void) {
    bench_energy_start(&g_energy);
    return (s_sustain_t){bench_now_s(), 0, 0};
}

/* after a batch of runs launches on st: records its end, waits for the batch before it (e0 / e1
 * alternate); false once the time is up */
static bool s_sustain_next(s_sustain_t *s, int runs, cudaStream_t st, cudaEvent_t e0,
                           cudaEvent_t e1) {
    s->runs += runs;
    KERN_CUDA_FATAL(cudaEventRecord(s->batches % 2 ? e1 : e0, st));
    if (s->batches > 0)
        KERN_CUDA_FATAL(cudaEventSynchronize(s->batches % 2 ? e0 : e1));
    s->batches++;
    return bench_now_s() - s->t0 < g_sustain_s;
}

/* the us and mJ per launch at the cap (mj -1 without an energy reading) */
static sustained_t s_sustain_end(const s_sustain_t *s, cudaStream_t st) {
    KERN_CUDA_FATAL(cudaStreamSynchronize(st));
    const bench_energy_window_t w = bench_energy_stop(&g_energy);
    return (sustained_t){1e6 * (bench_now_s() - s->t0) / (double)s->runs,
                         w.mj >= 0 ? w.mj / (double)s->runs : -1, w.mhz_median, w.capped};
}

static int s_cmp(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* n random values in [lo, hi) of the 16-bit type dtype on the device */
static void *s_rand_dev16_in(size_t n, com_prng_t *rng, kern_dtype_t dtype, float lo, float hi) {
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        const float v = com_prng_uniform(rng, lo, hi);
        h[i] = dtype == KERN_DTYPE_F16 ? com_half_from_f32(v) : kern_bf16_from_f32(v);
    }
    void *d = NULL;
    KERN_CUDA_FATAL(cudaMalloc(&d, n * 2 + 16));
    KERN_CUDA_FATAL(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* n random values in [-1, 1] of the 16-bit type dtype on the device */
static void *s_rand_dev16(size_t n, com_prng_t *rng, kern_dtype_t dtype) {
    return s_rand_dev16_in(n, rng, dtype, -1, 1);
}

static void *s_rand_dev(size_t n_bf16, com_prng_t *rng) {
    return s_rand_dev16(n_bf16, rng, KERN_DTYPE_BF16);
}

#define S_TIME(label, work, unit_, launch)                                                         \
    do {                                                                                           \
        float ms[15];                                                                              \
        for (int w = 0; w < 3; w++) {                                                              \
            launch;                                                                                \
        }                                                                                          \
        for (int sm = 0; sm < 15; sm++) {                                                          \
            KERN_CUDA_FATAL(cudaEventRecord(e0, st));                                              \
            for (int r = 0; r < reps; r++) {                                                       \
                launch;                                                                            \
            }                                                                                      \
            KERN_CUDA_FATAL(cudaEventRecord(e1, st));                                              \
            KERN_CUDA_FATAL(cudaEventSynchronize(e1));                                             \
            KERN_CUDA_FATAL(cudaEventElapsedTime(&ms[sm], e0, e1));                                \
        }                                                                                          \
        qsort(ms, 15, sizeof *ms, s_cmp);                                                          \
        row_t *rw = &rows[n_rows++];                                                               \
        snprintf(rw->name, sizeof rw->name, "%s", label);                                          \
        rw->us = 1e3 * ms[7] / reps;                                                               \
        rw->rate = (work) / (rw->us * 1e-6) / 1e9;                                                 \
        rw->unit = unit_;                                                                          \
        rw->sus = (sustained_t){0, -1, 0, 0};                                                      \
        if (g_sustain_s > 0 && g_row_tokens == kSustainT) {                                        \
            s_sustain_t s_ = s_sustain_begin();                                                    \
            do {                                                                                   \
                for (int r = 0; r < reps; r++) {                                                   \
                    launch;                                                                        \
                }                                                                                  \
            } while (s_sustain_next(&s_, reps, st, e0, e1));                                       \
            rw->sus = s_sustain_end(&s_, st);                                                      \
        }                                                                                          \
    } while (0)

#define S_OK(call)                                                                                 \
    do {                                                                                           \
        com_error_t e_ = {0};                                                                      \
        if ((call) != 0) {                                                                         \
            fprintf(stderr, "FATAL: %s: %s\n", #call, e_.msg);                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Median us per run of launch(ctx, st) (the kernels of one run, enqueued on st): a graph of kRuns
 * back-to-back runs, replayed. With BENCH_SUSTAIN_S, and when that median is at most
 * sustain_below_us, the graph then replays back to back for that long: *sus gets the us and mJ per
 * run at the power cap (sus->us 0: not run). */
static double s_time_graph(void (*launch)(void *ctx, cudaStream_t st), void *ctx, cudaStream_t st,
                           cudaEvent_t e0, cudaEvent_t e1, double sustain_below_us,
                           sustained_t *sus) {
    enum { kRuns = 20, kSamples = 9 };
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    KERN_CUDA_FATAL(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int r = 0; r < kRuns; r++)
        launch(ctx, st);
    KERN_CUDA_FATAL(cudaStreamEndCapture(st, &g));
    KERN_CUDA_FATAL(cudaGraphInstantiate(&ge, g, 0));
    KERN_CUDA_FATAL(cudaGraphLaunch(ge, st));
    float ms[kSamples];
    for (int i = 0; i < kSamples; i++) {
        KERN_CUDA_FATAL(cudaEventRecord(e0, st));
        KERN_CUDA_FATAL(cudaGraphLaunch(ge, st));
        KERN_CUDA_FATAL(cudaEventRecord(e1, st));
        KERN_CUDA_FATAL(cudaEventSynchronize(e1));
        KERN_CUDA_FATAL(cudaEventElapsedTime(&ms[i], e0, e1));
    }
    qsort(ms, kSamples, sizeof *ms, s_cmp);
    *sus = (sustained_t){0, -1, 0, 0}; /* not run */
    if (g_sustain_s > 0 && 1e3 * ms[kSamples / 2] / kRuns <= sustain_below_us) {
        s_sustain_t s = s_sustain_begin();
        do
            KERN_CUDA_FATAL(cudaGraphLaunch(ge, st));
        while (s_sustain_next(&s, kRuns, st, e0, e1));
        *sus = s_sustain_end(&s, st);
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    return 1e3 * ms[kSamples / 2] / kRuns;
}

/* one kern_linear_cuda call, as s_time_graph's launch */
typedef struct s_plan_run {
    cublasLtHandle_t lt;
    const kern_linear_plan_t *p;
    uint16_t *y;
    const uint16_t *x, *w, *b;
    const kern_linear_ln_t *ln;
    void *ws;
    size_t ws_bytes;
} s_plan_run_t;

static void s_plan_launch(void *ctx, cudaStream_t st) {
    const s_plan_run_t *c = ctx;
    S_OK(kern_linear_cuda(c->lt, c->p, c->y, c->x, c->w, c->b, c->ln, c->ws, c->ws_bytes, st, &e_));
}

/* Median us per run of plan p (s_time_graph). ln: the LayerNorm operands of an epilogue-3 plan,
 * else NULL. */
static double s_time_plan_graph(cublasLtHandle_t lt, const kern_linear_plan_t *p, uint16_t *y,
                                const uint16_t *x, const uint16_t *w, const uint16_t *b,
                                const kern_linear_ln_t *ln, void *ws, size_t ws_bytes,
                                cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1,
                                double sustain_below_us, sustained_t *sus) {
    s_plan_run_t c = {lt, p, y, x, w, b, ln, ws, ws_bytes};
    return s_time_graph(s_plan_launch, &c, st, e0, e1, sustain_below_us, sus);
}

/* Whether v is one of the comma-separated numbers in list. */
static bool s_in_list(const char *list, int32_t v) {
    for (const char *p = list; *p;) {
        char *end = NULL;
        const long x = strtol(p, &end, 10);
        if (end == p)
            return false;
        if (x == v)
            return true;
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

/* Which GEMMs the gemms mode times: NULL = all; else a comma-separated token list (only_T), a
 * model name, a GEMM name and a substring of the candidate's description (for a profiler run
 * of a few kernels); and in which 16-bit type (the operands and every plan). */
typedef struct gemm_filter {
    const char *only_T, *model, *gemm, *match;
    kern_dtype_t dtype;
    bool residual16; /* the LayerNorm's residual in the plan's 16-bit type, y in place on it */
} gemm_filter_t;

static int s_gemm_candidates(const char *json, const gemm_filter_t *f, cudaStream_t st,
                             cudaEvent_t e0, cudaEvent_t e1, cublasLtHandle_t lt, void *ws,
                             size_t ws_bytes, com_prng_t *rng) {
    static const int32_t shapes[2][2] = {{384, 1536}, {768, 3072}}; /* H, I */
    static const char *names[2] = {"minilm", "bert-base"};
    static const int32_t Ts[] = {128, 256, 1024, 4096, 16384};
    /* the last four: the folded LayerNorm's epilogues (ours only; kernels/row_stats.h) */
    enum { kGemms = 11 };
    static const char *gn[kGemms] = {"qkv",       "out",        "ffn1+gelu", "ffn2",
                                     "out+ln",    "ffn2+ln",    "qkv+fold",  "ffn1+fold",
                                     "out+stats", "ffn2+stats", "ffn1+bias"};
    FILE *j = fopen(json, "w");
    if (j)
        fprintf(j, "{\"gemms\": [\n");
    int n_json = 0;
    printf("%-10s %6s %-10s %-34s %10s %9s\n", "model", "T", "gemm", "candidate", "us", "TFLOP/s");
    for (int m = 0; m < 2; m++) {
        if (f->model && strcmp(f->model, names[m]) != 0)
            continue;
        const int32_t H = shapes[m][0], I = shapes[m][1];
        const int32_t gemm[kGemms][3] = {
            {H, 3 * H, KERN_LINEAR_BIAS},
            {H, H, KERN_LINEAR_BIAS},
            {H, I, KERN_LINEAR_BIAS_GELU},
            {I, H, KERN_LINEAR_BIAS},
            {H, H, KERN_LINEAR_BIAS_ADD_LN},
            {I, H, KERN_LINEAR_BIAS_ADD_LN},
            {H, 3 * H, KERN_LINEAR_LN_BIAS},
            {H, I, KERN_LINEAR_LN_BIAS_GELU},
            {H, H, KERN_LINEAR_BIAS_ADD_STATS},
            {I, H, KERN_LINEAR_BIAS_ADD_STATS},
            {H, I, KERN_LINEAR_BIAS}}; /* the last: what the FFN-up's GELU epilogue costs */
        const int32_t T_max = Ts[sizeof Ts / sizeof *Ts - 1];
        const kern_dtype_t dt = f->dtype;
        uint16_t *x = s_rand_dev16((size_t)T_max * I, rng, dt);
        uint16_t *y = s_rand_dev16((size_t)T_max * I, rng, dt);
        uint16_t *w = s_rand_dev16((size_t)I * H, rng, dt), *b = s_rand_dev16((size_t)I, rng, dt);
        /* the LayerNorm's operands: an fp32 residual updated in place (or with residual=16 the
         * 16-bit y, in place), gamma 1, beta 0 (from zeroed h32 and gb + H), the GEMM's 16-bit
         * scratch */
        uint16_t *scratch = s_rand_dev16((size_t)T_max * H, rng, dt);
        float *h32 = NULL, *gb = NULL;
        KERN_CUDA_FATAL(cudaMalloc((void **)&h32, (size_t)T_max * H * 4));
        KERN_CUDA_FATAL(cudaMemset(h32, 0, (size_t)T_max * H * 4));
        KERN_CUDA_FATAL(cudaMalloc((void **)&gb, (size_t)2 * H * 4));
        float *ones = malloc((size_t)H * 4);
        for (int32_t i = 0; i < H; i++)
            ones[i] = 1.0f;
        KERN_CUDA_FATAL(cudaMemcpy(gb, ones, (size_t)H * 4, cudaMemcpyHostToDevice));
        KERN_CUDA_FATAL(cudaMemset(gb + H, 0, (size_t)H * 4));
        free(ones);
        const kern_linear_ln_t ln32 = {.residual = h32,
                                       .gamma = gb,
                                       .beta = gb + H,
                                       .eps = 1e-12f,
                                       .out_f32 = h32,
                                       .scratch = scratch},
                               ln16 = {.residual_f16 = dt == KERN_DTYPE_F16 ? y : NULL,
                                       .residual_bf16 = dt == KERN_DTYPE_F16 ? NULL : y,
                                       .gamma = gb,
                                       .beta = gb + H,
                                       .eps = 1e-12f,
                                       .scratch = scratch};
        const kern_linear_ln_t ln = f->residual16 ? ln16 : ln32;
        /* folded: statistics of every 64-column block (sum 0, squared deviations 64: mean 0,
         * variance 1) for x and the folded residual, c of up to I columns, the residual x */
        const size_t n_part = (size_t)T_max * (I / KERN_STATS_COLS) * 2;
        float *part_host = malloc(n_part * 4), *c_host = malloc((size_t)I * 4);
        for (size_t i = 0; i < n_part; i++)
            part_host[i] = i % 2 ? (float)KERN_STATS_COLS : 0.f;
        for (int32_t i = 0; i < I; i++)
            c_host[i] = 0.01f * (float)(i % 7);
        float *in_part = NULL, *res_part = NULL, *out_part = NULL, *c = NULL;
        KERN_CUDA_FATAL(cudaMalloc((void **)&in_part, n_part * 4));
        KERN_CUDA_FATAL(cudaMalloc((void **)&res_part, n_part * 4));
        KERN_CUDA_FATAL(cudaMalloc((void **)&out_part, n_part * 4));
        KERN_CUDA_FATAL(cudaMalloc((void **)&c, (size_t)I * 4));
        KERN_CUDA_FATAL(cudaMemcpy(in_part, part_host, n_part * 4, cudaMemcpyHostToDevice));
        KERN_CUDA_FATAL(cudaMemcpy(res_part, part_host, n_part * 4, cudaMemcpyHostToDevice));
        KERN_CUDA_FATAL(cudaMemcpy(c, c_host, (size_t)I * 4, cudaMemcpyHostToDevice));
        free(part_host), free(c_host);
        const kern_linear_ln_t ln_fold = {.gamma = gb,
                                          .beta = gb + H,
                                          .eps = 1e-12f,
                                          .residual_x = scratch,
                                          .residual_stats = res_part,
                                          .out_stats = out_part,
                                          .in_stats = in_part,
                                          .c = c};
        for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
            for (int k = 0; k < kGemms; k++) {
                const int32_t T = Ts[ti], in = gemm[k][0], out = gemm[k][1];
                if ((f->only_T && !s_in_list(f->only_T, T)) || (f->gemm && strcmp(f->gemm, gn[k])))
                    continue;
                const double flop = 2.0 * T * in * out;
                double best[2] = {1e30, 1e30};
                char best_name[2][64] = {"", ""};
                for (int32_t i = -1; i < kern_linear_own_count(); i++) {
                    if (i < 0 && gemm[k][2] >= KERN_LINEAR_BIAS_ADD_STATS)
                        continue; /* rank 0 of a folded plan would be one of ours */
                    const int32_t rank = i < 0 ? 0 : KERN_LINEAR_OWN(i);
                    kern_linear_plan_t *p = NULL;
                    com_error_t err = {0};
                    if (kern_linear_plan_new(lt, T, in, out, (kern_linear_epilogue_t)gemm[k][2],
                                             ws_bytes, rank, dt, &p, &err) != 0)
                        continue; /* our configuration cannot run this shape */
                    if (f->match && !strstr(kern_linear_plan_describe(p), f->match)) {
                        kern_linear_plan_destroy(&p);
                        continue;
                    }
                    const int epi = gemm[k][2];
                    sustained_t sus;
                    const double us = s_time_plan_graph(
                        lt, p, y, x, w, b,
                        epi == KERN_LINEAR_BIAS_ADD_LN      ? &ln
                        : epi >= KERN_LINEAR_BIAS_ADD_STATS ? &ln_fold
                                                            : NULL,
                        ws, ws_bytes, st, e0, e1, 1.3 * fmin(best[0], best[1]), &sus);
                    const char *d = kern_linear_plan_describe(p);
                    printf("%-10s %6d %-10s %-34s %10.2f %9.1f", names[m], (int)T, gn[k], d, us,
                           flop / (us * 1e-6) / 1e12);
                    if (sus.us > 0) /* at the power cap: us, mJ, MHz */
                        printf("  sustained %8.2f us %8.3f mJ %5.0f MHz", sus.us, sus.mj, sus.mhz);
                    printf("\n");
                    if (j)
                        fprintf(j,
                                "%s {\"model\": \"%s\", \"tokens\": %d, \"gemm\": \"%s\", "
                                "\"candidate\": \"%s\", \"us\": %.3f, \"sustained_us\": %.3f, "
                                "\"sustained_mj\": %.4f}",
                                n_json++ ? ",\n" : "", names[m], (int)T, gn[k], d, us, sus.us,
                                sus.us > 0 ? sus.mj : -1.0);
                    const int own = i < 0 ? 0 : 1;
                    if (us < best[own]) {
                        best[own] = us;
                        snprintf(best_name[own], sizeof best_name[own], "%s", d);
                    }
                    kern_linear_plan_destroy(&p);
                }
                if (best[0] < 1e30) /* cuBLASLt has no folded epilogue */
                    printf("%-10s %6d %-10s best of ours %s: %.2f us, %.2fx cuBLASLt's first "
                           "choice\n",
                           names[m], (int)T, gn[k], best_name[1], best[1], best[0] / best[1]);
                else
                    printf("%-10s %6d %-10s best of ours %s: %.2f us\n", names[m], (int)T, gn[k],
                           best_name[1], best[1]);
            }
        cudaFree(x), cudaFree(y), cudaFree(w), cudaFree(b);
        cudaFree(scratch), cudaFree(h32), cudaFree(gb);
        cudaFree(in_part), cudaFree(res_part), cudaFree(out_part), cudaFree(c);
    }
    if (j) {
        fprintf(j, "\n]}\n");
        fclose(j);
    }
    return 0;
}

/* ---- ffn mode: the fused FFN sublayer (kernels/ffn.h) beside the GEMM pair it replaces ---- */
/* the unfused FFN as the engine runs it for MiniLM in binary16 (worker/model_bert_cuda.c): h =
 * GELU(x W1^T + b1) (BIAS_GELU), then x = LN(h W2^T + b2 + x) in place (BIAS_ADD_LN, the binary16
 * residual x, the GEMM's scratch tmp where the plan runs the LayerNorm as a kernel of its own) */
typedef struct s_ffn_pair {
    cublasLtHandle_t lt;
    const kern_linear_plan_t *up, *down;
    uint16_t *x, *h;
    const uint16_t *w1, *b1, *w2, *b2;
    const kern_linear_ln_t *ln;
    void *ws;
    size_t ws_bytes;
} s_ffn_pair_t;

static void s_ffn_pair_launch(void *ctx, cudaStream_t st) {
    const s_ffn_pair_t *c = ctx;
    S_OK(kern_linear_cuda(c->lt, c->up, c->h, c->x, c->w1, c->b1, NULL, c->ws, c->ws_bytes, st,
                          &e_));
    S_OK(kern_linear_cuda(c->lt, c->down, c->x, c->h, c->w2, c->b2, c->ln, c->ws, c->ws_bytes, st,
                          &e_));
}

static void s_ffn_fused_launch(void *ctx, cudaStream_t st) {
    S_OK(kern_ffn_cuda((const kern_ffn_args_t *)ctx, st, &e_));
}

/* "name": r, or null when r < 0 (not measured) */
static void s_json_ratio(FILE *j, const char *name, double r) {
    if (r >= 0)
        fprintf(j, "\"%s\": %.4f", name, r);
    else
        fprintf(j, "\"%s\": null", name);
}

/* a sustained run's numbers as JSON members (null where not run or not measured) */
static void s_json_sustained(FILE *j, const sustained_t *s) {
    if (s->us > 0)
        fprintf(j, "\"sustained_us\": %.3f, \"sustained_sm_mhz\": %.0f, \"power_capped\": %.3f, ",
                s->us, s->mhz, s->capped);
    else
        fprintf(j, "\"sustained_us\": null, \"sustained_sm_mhz\": null, \"power_capped\": null, ");
    if (s->us > 0 && s->mj >= 0)
        fprintf(j, "\"mj\": %.4f", s->mj);
    else
        fprintf(j, "\"mj\": null");
}

/* bench_kernels_cuda ffn OUT.json [T,...] [pdl=off]: per token count (default 1024, 4096, 16384,
 * 16896, 20480 and 27392), MiniLM's FFN (hidden 384, inter 1536) in binary16, y = x in place,
 * every row live (n_rows on the device = T, as the forward pass passes it): (a) kern_ffn_cuda;
 * (b) the unfused pair (s_ffn_pair_t), both plans tuned by kern_linear_plan_tune
 * on these buffers as the engine's start-up does (n_rows NULL then, as there). Each timed as a CUDA
 * graph of 20 back-to-back runs (s_time_graph), then sustained at the power cap for BENCH_SUSTAIN_S
 * seconds (default 2 in this mode; 0: not) with the energy per run where NVML measures it. x starts
 * from the same random values for both (the energy depends on the bits toggled), at a trained
 * layer's scales: x of rms 1 (a LayerNorm's output), W1 and W2 of std 0.05, biases in +-0.1, gamma
 * 1, beta 0. */
static int s_ffn_bench(const char *json, const char *only_T, cudaStream_t st, cudaEvent_t e0,
                       cudaEvent_t e1, cublasLtHandle_t lt, void *ws, size_t ws_bytes,
                       com_prng_t *rng) {
    enum { H = 384, I = 1536 };
    /* 16896 tokens are one full wave of 128-row tiles on 132 SMs; 27392 is MiniLM's ragged
     * bench batch's bucket (1.6 waves unsplit) */
    static const int32_t Ts[] = {1024, 4096, 16384, 16896, 20480, 27392};
    const int32_t T_max = Ts[sizeof Ts / sizeof *Ts - 1];
    const kern_dtype_t dt = KERN_DTYPE_F16;
    com_error_t err = {0};
    const bool fused = kern_ffn_supported(dt, H, I);
    if (!fused)
        printf("ffn: kern_ffn_supported(f16, %d, %d) is false on this device (the fused FFN needs "
               "compute capability 9.0): the unfused pair alone\n",
               H, I);
    else if (kern_ffn_prepare(dt, &err) != 0) {
        fprintf(stderr, "FATAL: kern_ffn_prepare: %s\n", err.msg);
        return 1;
    }
    const float xr = 1.7320508f, wr = 0.05f * 1.7320508f; /* uniform of rms 1, std 0.05 */
    uint16_t *x0 = s_rand_dev16_in((size_t)T_max * H, rng, dt, -xr, xr);
    uint16_t *w1 = s_rand_dev16_in((size_t)I * H, rng, dt, -wr, wr);
    uint16_t *w2 = s_rand_dev16_in((size_t)H * I, rng, dt, -wr, wr);
    uint16_t *b1 = s_rand_dev16_in(I, rng, dt, -0.1f, 0.1f);
    uint16_t *b2 = s_rand_dev16_in(H, rng, dt, -0.1f, 0.1f);
    uint16_t *x = NULL, *h = NULL, *tmp = NULL;
    float *gb = NULL;
    int32_t *d_n = NULL;
    KERN_CUDA_FATAL(cudaMalloc((void **)&x, (size_t)T_max * H * 2));
    KERN_CUDA_FATAL(cudaMalloc((void **)&h, (size_t)T_max * I * 2));
    KERN_CUDA_FATAL(cudaMalloc((void **)&tmp, (size_t)T_max * H * 2));
    KERN_CUDA_FATAL(cudaMalloc((void **)&gb, (size_t)2 * H * 4));
    KERN_CUDA_FATAL(cudaMalloc((void **)&d_n, 16));
    float ones[H];
    for (int32_t i = 0; i < H; i++)
        ones[i] = 1.0f;
    KERN_CUDA_FATAL(cudaMemcpy(gb, ones, sizeof ones, cudaMemcpyHostToDevice));
    KERN_CUDA_FATAL(cudaMemset(gb + H, 0, (size_t)H * 4));
    FILE *j = fopen(json, "w");
    if (j)
        fprintf(j,
                "{\"mode\": \"ffn\", \"hidden\": %d, \"inter\": %d, \"dtype\": \"f16\", \"pdl\": "
                "%s, \"sustain_s\": %.3f, \"fused_supported\": %s, \"ffn\": [\n",
                H, I, kern_pdl_enabled() ? "true" : "false", g_sustain_s, fused ? "true" : "false");
    printf("ffn: hidden %d, inter %d, binary16, y = x in place; CUDA graphs of 20 runs, median of "
           "9%s\n",
           H, I, g_sustain_s > 0 ? "; sustained for BENCH_SUSTAIN_S at the power cap" : "");
    printf("%6s %-10s %10s %8s %s\n", "T", "variant", "us/call", "TFLOP/s",
           g_sustain_s > 0 ? " sustained: us/call   mJ/call  SM MHz  power-capped" : "");
    int n_json = 0;
    for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++) {
        const int32_t T = Ts[ti];
        if (only_T && !s_in_list(only_T, T))
            continue;
        const double flop = 4.0 * T * H * I; /* the two GEMMs */
        KERN_CUDA_FATAL(cudaMemcpy(d_n, &T, 4, cudaMemcpyHostToDevice));
        KERN_CUDA_FATAL(cudaMemcpy(x, x0, (size_t)T * H * 2, cudaMemcpyDeviceToDevice));
        kern_linear_ln_t ln = {.residual_f16 = x,
                               .gamma = gb,
                               .beta = gb + H,
                               .eps = 1e-12f,
                               .n_rows = NULL,
                               .scratch = tmp};
        kern_linear_plan_t *up = NULL, *down = NULL;
        S_OK(kern_linear_plan_new(lt, T, H, I, KERN_LINEAR_BIAS_GELU, ws_bytes, 0, dt, &up, &e_));
        S_OK(kern_linear_plan_tune(lt, up, h, x, w1, b1, NULL, ws, ws_bytes, st, NULL, &e_));
        S_OK(kern_linear_plan_new(lt, T, I, H, KERN_LINEAR_BIAS_ADD_LN, ws_bytes, 0, dt, &down,
                                  &e_));
        S_OK(kern_linear_plan_tune(lt, down, x, h, w2, b2, &ln, ws, ws_bytes, st, NULL, &e_));
        printf("%6d unfused: ffn1+gelu %s | ffn2+ln %s\n", (int)T, kern_linear_plan_describe(up),
               kern_linear_plan_describe(down));
        ln.n_rows = d_n;
        /* (b) the unfused pair, x fresh */
        KERN_CUDA_FATAL(cudaMemcpy(x, x0, (size_t)T * H * 2, cudaMemcpyDeviceToDevice));
        s_ffn_pair_t pair = {lt, up, down, x, h, w1, b1, w2, b2, &ln, ws, ws_bytes};
        /* [0] the unfused pair, [1] the fused op (us -1: not run) */
        sustained_t sus[2] = {{0, -1, 0, 0}, {0, -1, 0, 0}};
        double us[2] = {-1, -1};
        us[0] = s_time_graph(s_ffn_pair_launch, &pair, st, e0, e1, INFINITY, &sus[0]);
        if (fused) { /* (a) the fused op, x fresh again */
            KERN_CUDA_FATAL(cudaMemcpy(x, x0, (size_t)T * H * 2, cudaMemcpyDeviceToDevice));
            kern_ffn_args_t a = {.dtype = dt,
                                 .y = x,
                                 .x = x,
                                 .w1 = w1,
                                 .b1 = b1,
                                 .w2 = w2,
                                 .b2 = b2,
                                 .gamma = gb,
                                 .beta = gb + H,
                                 .eps = 1e-12f,
                                 .out_f32 = NULL,
                                 .n_rows = d_n,
                                 .n = T,
                                 .hidden = H,
                                 .inter = I};
            us[1] = s_time_graph(s_ffn_fused_launch, &a, st, e0, e1, INFINITY, &sus[1]);
        }
        for (int v = 0; v < 2 && us[v] > 0; v++) {
            printf("%6d %-10s %10.2f %8.1f", (int)T, v ? "fused" : "unfused", us[v],
                   flop / (us[v] * 1e-6) / 1e12);
            if (sus[v].us > 0)
                printf("  %18.2f %9.4f %7.0f %12.0f%%", sus[v].us, sus[v].mj, sus[v].mhz,
                       100 * sus[v].capped);
            printf("\n");
        }
        /* fused / unfused: time (graphs), sustained time, energy (-1: not measured) */
        const bool both_sus = sus[1].us > 0 && sus[0].us > 0;
        const double r_us = us[1] > 0 ? us[1] / us[0] : -1,
                     r_sus = both_sus ? sus[1].us / sus[0].us : -1,
                     r_mj =
                         both_sus && sus[1].mj >= 0 && sus[0].mj >= 0 ? sus[1].mj / sus[0].mj : -1;
        if (r_us >= 0) {
            printf("%6d fused / unfused: %.3f in time", (int)T, r_us);
            if (r_sus >= 0)
                printf(", %.3f sustained", r_sus);
            if (r_mj >= 0)
                printf(", %.3f in energy", r_mj);
            printf("\n");
        }
        if (j) {
            fprintf(j, "%s {\"tokens\": %d, \"unfused\": {\"us\": %.3f, ", n_json++ ? ",\n" : "",
                    (int)T, us[0]);
            s_json_sustained(j, &sus[0]);
            fprintf(j, ", \"ffn1\": \"%s\", \"ffn2\": \"%s\"}, \"fused\": ",
                    kern_linear_plan_describe(up), kern_linear_plan_describe(down));
            if (us[1] > 0) {
                fprintf(j, "{\"us\": %.3f, ", us[1]);
                s_json_sustained(j, &sus[1]);
                fprintf(j, "}, ");
            } else {
                fprintf(j, "null, ");
            }
            s_json_ratio(j, "ratio_us", r_us);
            fprintf(j, ", ");
            s_json_ratio(j, "ratio_sustained_us", r_sus);
            fprintf(j, ", ");
            s_json_ratio(j, "ratio_mj", r_mj);
            fprintf(j, "}");
        }
        kern_linear_plan_destroy(&up);
        kern_linear_plan_destroy(&down);
    }
    if (j) {
        fprintf(j, "\n]}\n");
        fclose(j);
    }
    cudaFree(x0), cudaFree(w1), cudaFree(w2), cudaFree(b1), cudaFree(b2), cudaFree(x), cudaFree(h);
    cudaFree(tmp), cudaFree(gb), cudaFree(d_n);
    return 0;
}

int main(int argc, char **argv) {
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev < 1) {
        printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    const bool gemms = argc > 2 && strcmp(argv[1], "gemms") == 0;
    const bool ffn = argc > 2 && strcmp(argv[1], "ffn") == 0;
    const char *sustain = getenv("BENCH_SUSTAIN_S");
    g_sustain_s = sustain ? atof(sustain) : ffn ? 2.0 : 0.0; /* ffn: energy by default */
    if (g_sustain_s > 0) {
        char pci[32], why[256] = "no PCI bus id for device 0";
        if (cudaDeviceGetPCIBusId(pci, sizeof pci, 0) != cudaSuccess ||
            !bench_energy_open(&g_energy, pci, why, sizeof why))
            fprintf(stderr, "BENCH_SUSTAIN_S: energy not measured: %s\n", why);
    }
    const char *json = argc > 1 ? argv[1] : "bench-kernels-cuda.json";
    const int reps = argc > 2 ? atoi(argv[2]) : 50;
    com_prng_t rng;
    com_prng_seed(&rng, 3);
    cudaStream_t st;
    cudaEvent_t e0, e1;
    KERN_CUDA_FATAL(cudaStreamCreate(&st));
    KERN_CUDA_FATAL(cudaEventCreate(&e0));
    KERN_CUDA_FATAL(cudaEventCreate(&e1));
    cublasLtHandle_t lt;
    KERN_CUBLAS_FATAL(cublasLtCreate(&lt));
    const size_t ws_bytes = (size_t)32 << 20;
    void *ws = NULL;
    KERN_CUDA_FATAL(cudaMalloc(&ws, ws_bytes));
    if (gemms) {
        setvbuf(stdout, NULL, _IOLBF, 0); /* a hung candidate shows as the last line */
        gemm_filter_t f = {.dtype = KERN_DTYPE_BF16};
        for (int a = 3; a < argc; a++) {
            if (strcmp(argv[a], "pdl=off") == 0)
                kern_pdl_set(false);
            else if (strcmp(argv[a], "dtype=f16") == 0)
                f.dtype = KERN_DTYPE_F16;
            else if (strcmp(argv[a], "dtype=bf16") == 0)
                f.dtype = KERN_DTYPE_BF16;
            else if (strcmp(argv[a], "residual=16") == 0)
                f.residual16 = true;
            else if (strncmp(argv[a], "model=", 6) == 0)
                f.model = argv[a] + 6;
            else if (strncmp(argv[a], "gemm=", 5) == 0)
                f.gemm = argv[a] + 5;
            else if (strncmp(argv[a], "match=", 6) == 0)
                f.match = argv[a] + 6;
            else
                f.only_T = argv[a];
        }
        return s_gemm_candidates(argv[2], &f, st, e0, e1, lt, ws, ws_bytes, &rng);
    }
    if (ffn) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        const char *only_T = NULL;
        for (int a = 3; a < argc; a++) {
            if (strcmp(argv[a], "pdl=off") == 0)
                kern_pdl_set(false);
            else
                only_T = argv[a];
        }
        return s_ffn_bench(argv[2], only_T, st, e0, e1, lt, ws, ws_bytes, &rng);
    }
    row_t rows[200];
    int n_rows = 0;
    static const int32_t shapes[2][4] = {{384, 12, 32, 1536}, {768, 12, 64, 3072}};
    static const char *names[2] = {"minilm", "bert-base"};
    /* 1 x 128 tokens, 8 x 512, and 16384 tokens in ragged sequences of 32..512 (the engine's
     * first chunk of its ragged bench) */
    static const int32_t Ts[3] = {128, 4096, 16384};
    for (int m = 0; m < 2; m++)
        for (int ti = 0; ti < 3; ti++) {
            const int32_t H = shapes[m][0], nh = shapes[m][1], hd = shapes[m][2], I = shapes[m][3];
            const int32_t T = Ts[ti];
            g_row_tokens = T;
            int32_t *cu = malloc(((size_t)T + 1) * 4), *ts = malloc((size_t)T * 4);
            int32_t *ids = malloc((size_t)T * 4);
            int32_t n_seqs = 0;
            double sum_sq = 0; /* sum of squared lengths: the attention's work */
            for (cu[0] = 0; cu[n_seqs] < T; n_seqs++) {
                int32_t len = T <= 512    ? T
                              : T == 4096 ? 512
                                          : 32 + (int32_t)com_prng_below(&rng, 481);
                if (len > T - cu[n_seqs])
                    len = T - cu[n_seqs];
                cu[n_seqs + 1] = cu[n_seqs] + len;
                sum_sq += (double)len * len;
                for (int32_t t = cu[n_seqs]; t < cu[n_seqs + 1]; t++)
                    ts[t] = n_seqs;
            }
            for (int32_t t = 0; t < T; t++)
                ids[t] = (int32_t)com_prng_below(&rng, 30000);
            int32_t *d_cu, *d_ts, *d_ids, *d_n, *d_ns, *d_dim, *d_norm;
            const int32_t one = 1;
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_cu, ((size_t)n_seqs + 1) * 4));
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_ts, (size_t)T * 4));
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_ids, (size_t)T * 4));
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_n, 16));
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_ns, 16));
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_dim, 16));
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_norm, 16));
            KERN_CUDA_FATAL(cudaMemcpy(d_cu, cu, ((size_t)n_seqs + 1) * 4, cudaMemcpyHostToDevice));
            /* the attention's tile table, as the engine builds it per batch */
            const int32_t n_tt = kern_attention_tiles_cap(T);
            const size_t tt_bytes = (size_t)n_tt * KERN_ATTENTION_TILE_WORDS * 4;
            int32_t *tt = malloc(tt_bytes), *d_tt = NULL;
            S_OK(kern_attention_tiles_build(tt, T, cu, n_seqs) > 0 ? 0 : -1);
            KERN_CUDA_FATAL(cudaMalloc((void **)&d_tt, tt_bytes));
            KERN_CUDA_FATAL(cudaMemcpy(d_tt, tt, tt_bytes, cudaMemcpyHostToDevice));
            free(tt);
            KERN_CUDA_FATAL(cudaMemcpy(d_ts, ts, (size_t)T * 4, cudaMemcpyHostToDevice));
            KERN_CUDA_FATAL(cudaMemcpy(d_ids, ids, (size_t)T * 4, cudaMemcpyHostToDevice));
            KERN_CUDA_FATAL(cudaMemcpy(d_n, &T, 4, cudaMemcpyHostToDevice));
            KERN_CUDA_FATAL(cudaMemcpy(d_ns, &n_seqs, 4, cudaMemcpyHostToDevice));
            KERN_CUDA_FATAL(cudaMemcpy(d_dim, &H, 4, cudaMemcpyHostToDevice));
            KERN_CUDA_FATAL(cudaMemcpy(d_norm, &one, 4, cudaMemcpyHostToDevice));
            uint16_t *word = s_rand_dev((size_t)30522 * H, &rng),
                     *pos = s_rand_dev(512 * (size_t)H, &rng);
            uint16_t *type = s_rand_dev(2 * (size_t)H, &rng);
            uint16_t *wqkv = s_rand_dev(3 * (size_t)H * H, &rng),
                     *b = s_rand_dev(4 * (size_t)I, &rng);
            uint16_t *w1 = s_rand_dev((size_t)I * H, &rng), *w2 = s_rand_dev((size_t)I * H, &rng);
            uint16_t *x = s_rand_dev((size_t)T * (3 * H > I ? 3 * H : I), &rng);
            uint16_t *y = s_rand_dev((size_t)T * (3 * H > I ? 3 * H : I), &rng);
            uint16_t *hb = s_rand_dev((size_t)T * H, &rng);
            float *h32 = NULL, *g = NULL, *out = NULL;
            KERN_CUDA_FATAL(cudaMalloc((void **)&h32, (size_t)T * H * 4));
            KERN_CUDA_FATAL(cudaMemset(h32, 0, (size_t)T * H * 4));
            KERN_CUDA_FATAL(cudaMalloc((void **)&g, (size_t)H * 4));
            KERN_CUDA_FATAL(cudaMemset(g, 0, (size_t)H * 4));
            KERN_CUDA_FATAL(cudaMalloc((void **)&out, (size_t)T * H * 4));
            char label[64];
            const double tb = (double)T * H;
#define L(fmt) (snprintf(label, sizeof label, "%s T=%d " fmt, names[m], (int)T), label)
            S_TIME(
                L("embed_layernorm"), tb * (3 * 2 + 4 + 2) / 1.0, "GB/s",
                S_OK(kern_embed_layernorm_cuda(KERN_DTYPE_BF16, h32, hb, d_ids, NULL, d_ts, d_cu,
                                               d_n, T, word, pos, type, g, g, H, 1e-12f, st, &e_)));
            /* in, out, epilogue; the plan tuned (all cuBLASLt candidates and ours) as the
             * engine's start-up does; "ffn1+gelu" is FFN-up with the GELU as one op, "+ln" the
             * bias + residual + LayerNorm epilogue (fp32 residual h32 in place, scratch hb) */
            enum { kGemms = 7 };
            const int32_t gemm[kGemms][3] = {
                {H, 3 * H, KERN_LINEAR_BIAS},   {H, H, KERN_LINEAR_BIAS},
                {H, I, KERN_LINEAR_NONE},       {H, I, KERN_LINEAR_BIAS_GELU},
                {I, H, KERN_LINEAR_BIAS},       {H, H, KERN_LINEAR_BIAS_ADD_LN},
                {I, H, KERN_LINEAR_BIAS_ADD_LN}};
            static const char *gn[kGemms] = {"linear qkv",       "linear out",  "linear ffn1",
                                             "linear ffn1+gelu", "linear ffn2", "linear out+ln",
                                             "linear ffn2+ln"};
            const kern_linear_ln_t ln = {.residual = h32,
                                         .gamma = g,
                                         .beta = g,
                                         .eps = 1e-12f,
                                         .out_f32 = h32,
                                         .scratch = hb};
            for (int k = 0; k < kGemms; k++) {
                kern_linear_plan_t *p = NULL;
                const uint16_t *wk = gemm[k][0] == I ? w2 : w1;
                const kern_linear_ln_t *lk = gemm[k][2] == KERN_LINEAR_BIAS_ADD_LN ? &ln : NULL;
                S_OK(kern_linear_plan_new(lt, T, gemm[k][0], gemm[k][1],
                                          (kern_linear_epilogue_t)gemm[k][2], ws_bytes, 0,
                                          KERN_DTYPE_BF16, &p, &e_));
                S_OK(kern_linear_plan_tune(lt, p, y, x, wk, b, lk, ws, ws_bytes, st, NULL, &e_));
                printf("%s T=%d %s: %s\n", names[m], (int)T, gn[k], kern_linear_plan_describe(p));
                S_TIME(L("linear"), 2.0 * T * gemm[k][0] * gemm[k][1] / 1e3, "TFLOP/s",
                       S_OK(kern_linear_cuda(lt, p, y, x, wk, b, lk, ws, ws_bytes, st, &e_)));
                snprintf(rows[n_rows - 1].name, sizeof rows[0].name, "%s T=%d %s", names[m], (int)T,
                         gn[k]);
                kern_linear_plan_destroy(&p);
            }
            const kern_attention_params_t ap = {nh, nh, hd, 0.125f, false};
            const double att_flops = 4.0 * sum_sq * H;
            /* each kernel in bf16 and in binary16 (x's bf16 values in [-1, 1] read as binary16
             * are finite, below 2 in magnitude: as good as any for timing) */
            /* the wgmma kernel with packed tiles in order, and with the tile table */
            static const kern_attention_kernel_t att_k[6] = {
                KERN_ATTENTION_MMA, KERN_ATTENTION_WGMMA, KERN_ATTENTION_WGMMA,
                KERN_ATTENTION_MMA, KERN_ATTENTION_WGMMA, KERN_ATTENTION_WGMMA};
            static const kern_dtype_t att_t[6] = {KERN_DTYPE_BF16, KERN_DTYPE_BF16, KERN_DTYPE_BF16,
                                                  KERN_DTYPE_F16,  KERN_DTYPE_F16,  KERN_DTYPE_F16};
            static const char *att_n[6] = {"attention mma",         "attention wgmma",
                                           "attention wgmma tiles", "attention mma f16",
                                           "attention wgmma f16",   "attention wgmma tiles f16"};
            for (int a = 0; a < 6; a++) {
                const int32_t *tiles = a % 3 == 2 ? d_tt : NULL;
                S_TIME(L("attention"), att_flops / 1e3, "TFLOP/s",
                       S_OK(kern_attention_cuda_kernel(att_k[a], &ap, att_t[a], hb, H, x, 3 * H,
                                                       x + H, 3 * H, x + 2 * H, 3 * H, d_cu, d_ts,
                                                       d_n, tiles, T, st, &e_)));
                snprintf(rows[n_rows - 1].name, sizeof rows[0].name, "%s T=%d %s", names[m], (int)T,
                         att_n[a]);
            }
            if (m == 0 && ti == 0) {
                /* the fused QKV projection + attention of short buckets (qkv_attention.cu) beside
                 * the pair it replaces (the tuned QKV plan, then kern_attention_cuda), plain and
                 * with the folded LayerNorm (in_stats: blocks of mean 0, variance 1), 1 x 128 and
                 * 1 x 64 tokens */
                const int32_t cu64[2] = {0, 64};
                const size_t n_part = (size_t)T * (H / KERN_STATS_COLS) * 2;
                float *part_h = malloc(n_part * 4), *c_h = malloc((size_t)3 * H * 4);
                for (size_t i = 0; i < n_part; i++)
                    part_h[i] = i % 2 ? (float)KERN_STATS_COLS : 0.f;
                for (int32_t i = 0; i < 3 * H; i++)
                    c_h[i] = 0.01f * (float)(i % 7);
                int32_t *d_cu64 = NULL;
                float *d_part = NULL, *d_c = NULL;
                KERN_CUDA_FATAL(cudaMalloc((void **)&d_cu64, sizeof cu64));
                KERN_CUDA_FATAL(cudaMalloc((void **)&d_part, n_part * 4));
                KERN_CUDA_FATAL(cudaMalloc((void **)&d_c, (size_t)3 * H * 4));
                KERN_CUDA_FATAL(cudaMemcpy(d_cu64, cu64, sizeof cu64, cudaMemcpyHostToDevice));
                KERN_CUDA_FATAL(cudaMemcpy(d_part, part_h, n_part * 4, cudaMemcpyHostToDevice));
                KERN_CUDA_FATAL(cudaMemcpy(d_c, c_h, (size_t)3 * H * 4, cudaMemcpyHostToDevice));
                free(part_h), free(c_h);
                const kern_linear_ln_t lnf = {.eps = 1e-12f, .in_stats = d_part, .c = d_c};
                for (int q = 0; q < 2; q++)
                    for (int fold = 0; fold < 2; fold++) {
                        const int32_t Tq = q ? 64 : 128, *cuq = q ? d_cu64 : d_cu;
                        const int32_t *nq = q ? d_cu64 + 1 : d_n; /* 64 tokens, or T = 128 */
                        const double flop = 2.0 * Tq * H * 3 * H + 4.0 * Tq * Tq * H;
                        const kern_linear_ln_t *lq = fold ? &lnf : NULL;
                        kern_linear_plan_t *p = NULL;
                        S_OK(kern_linear_plan_new(lt, Tq, H, 3 * H,
                                                  fold ? KERN_LINEAR_LN_BIAS : KERN_LINEAR_BIAS,
                                                  ws_bytes, 0, KERN_DTYPE_BF16, &p, &e_));
                        S_OK(kern_linear_plan_tune(lt, p, y, x, wqkv, b, lq, ws, ws_bytes, st, NULL,
                                                   &e_));
                        snprintf(label, sizeof label, "%s T=%d qkv+attention pair%s", names[m],
                                 (int)Tq, fold ? " fold" : "");
                        printf("%s: QKV %s\n", label, kern_linear_plan_describe(p));
                        S_TIME(
                            label, flop / 1e3, "TFLOP/s",
                            S_OK(kern_linear_cuda(lt, p, y, x, wqkv, b, lq, ws, ws_bytes, st, &e_));
                            S_OK(kern_attention_cuda(&ap, KERN_DTYPE_BF16, hb, H, y, 3 * H, y + H,
                                                     3 * H, y + 2 * H, 3 * H, cuq, d_ts, nq, NULL,
                                                     Tq, st, &e_)));
                        kern_linear_plan_destroy(&p);
                        const kern_qkv_attention_args_t qa = {.dtype = KERN_DTYPE_BF16,
                                                              .out = hb,
                                                              .ldo = H,
                                                              .x = x,
                                                              .w = wqkv,
                                                              .b = b,
                                                              .in_stats = fold ? d_part : NULL,
                                                              .c = fold ? d_c : NULL,
                                                              .eps = 1e-12f,
                                                              .tok_seq = d_ts,
                                                              .n_tokens = nq,
                                                              .max_tokens = Tq,
                                                              .hidden = H,
                                                              .n_heads = nh,
                                                              .head_dim = hd,
                                                              .scale = ap.scale};
                        snprintf(label, sizeof label, "%s T=%d qkv+attention fused%s", names[m],
                                 (int)Tq, fold ? " fold" : "");
                        S_TIME(label, flop / 1e3, "TFLOP/s",
                               S_OK(kern_qkv_attention_cuda(&qa, st, &e_)));
                    }
                cudaFree(d_cu64), cudaFree(d_part), cudaFree(d_c);
            }
            S_TIME(L("bias_gelu"), (double)T * I * 4, "GB/s",
                   S_OK(kern_bias_gelu_cuda(y, b, T, d_n, I, KERN_DTYPE_BF16, st, &e_)));
            /* the engine's three residual streams: fp32 (+ the bf16 copy), f16 (+ the bf16
             * copy), bf16 alone; bytes per element read and written */
            S_TIME(
                L("add_layernorm"), tb * (2 + 4 + 4 + 2), "GB/s",
                S_OK(kern_add_layernorm_cuda(h32, NULL, hb, x, NULL, KERN_DTYPE_BF16, h32,
                                             KERN_RESIDUAL_F32, g, g, T, d_n, H, 1e-12f, st, &e_)));
            S_TIME(
                L("add_layernorm f16"), tb * (2 + 2 + 2 + 2), "GB/s",
                S_OK(kern_add_layernorm_cuda(NULL, y, hb, x, NULL, KERN_DTYPE_BF16, y,
                                             KERN_RESIDUAL_F16, g, g, T, d_n, H, 1e-12f, st, &e_)));
            S_TIME(L("add_layernorm bf16"), tb * (2 + 2 + 2), "GB/s",
                   S_OK(kern_add_layernorm_cuda(NULL, NULL, hb, x, NULL, KERN_DTYPE_BF16, hb,
                                                KERN_RESIDUAL_BF16, g, g, T, d_n, H, 1e-12f, st,
                                                &e_)));
            S_TIME(L("pool mean+L2"), tb * 4, "GB/s",
                   S_OK(kern_pool_cuda(out, h32, d_cu, d_ns, d_dim, d_norm, NULL, T, H,
                                       KERN_POOL_MEAN, st, &e_)));
            /* over a folded stream: x (hb) and its partials (h32's first T * H / 32 floats; the
             * values do not change the time), 2 + 8 / 64 bytes per element */
            S_TIME(
                L("pool folded mean+L2"), tb * (2 + 8 / 64.0), "GB/s",
                S_OK(kern_pool_folded_cuda(out, hb, KERN_DTYPE_BF16, h32, g, g, 1e-12f, d_cu, d_ns,
                                           d_dim, d_norm, NULL, T, H, KERN_POOL_MEAN, st, &e_)));
            if (m == 0) { /* the engine's batch input area (model-independent) */
                const size_t in_bytes = wrk_bert_cuda_input_words(T) * sizeof(int32_t);
                void *in_host = NULL, *in_mapped = NULL;
                KERN_CUDA_FATAL(cudaHostAlloc(&in_host, in_bytes, cudaHostAllocMapped));
                KERN_CUDA_FATAL(cudaHostGetDevicePointer(&in_mapped, in_host, 0));
                memset(in_host, 0, in_bytes);
                snprintf(label, sizeof label, "T=%d copy input (mapped host)", (int)T);
                S_TIME(label, (double)in_bytes, "GB/s",
                       S_OK(kern_copy_cuda(y, in_mapped, in_bytes, st, &e_)));
                cudaFreeHost(in_host);
            }
#undef L
            cudaFree(d_cu), cudaFree(d_tt), cudaFree(d_ts), cudaFree(d_ids), cudaFree(d_n),
                cudaFree(d_ns);
            cudaFree(d_dim), cudaFree(d_norm), cudaFree(word), cudaFree(pos), cudaFree(type);
            cudaFree(wqkv), cudaFree(b), cudaFree(w1), cudaFree(w2), cudaFree(x), cudaFree(y);
            cudaFree(hb), cudaFree(h32), cudaFree(g), cudaFree(out);
            free(cu), free(ts), free(ids);
        }
    printf("\n== CUDA kernels (median of 15 x %d launches) ==\n%-40s %10s %12s%s\n", reps, "kernel",
           "us/launch", "rate",
           g_sustain_s > 0 ? "      sustained: us/launch   mJ/launch  SM MHz  power-capped" : "");
    FILE *j = fopen(json, "w");
    if (j)
        fprintf(j, "{\"reps\": %d, \"kernels\": [\n", reps);
    for (int i = 0; i < n_rows; i++) {
        const row_t *r = &rows[i];
        printf("%-40s %10.2f %8.2f %-7s", r->name, r->us, r->rate, r->unit);
        if (r->sus.us > 0)
            printf("  %20.2f %11.4f %7.0f %12.0f%%", r->sus.us, r->sus.mj, r->sus.mhz,
                   100 * r->sus.capped);
        printf("\n");
        if (j) {
            fprintf(j, "%s {\"name\": \"%s\", \"us\": %.3f, \"rate\": %.3f, \"unit\": \"%s\"",
                    i ? ",\n" : "", r->name, r->us, r->rate, r->unit);
            if (r->sus.us > 0)
                fprintf(j,
                        ", \"sustained\": {\"us\": %.3f, \"mj\": %.5f, \"sm_mhz_median\": %.0f, "
                        "\"power_capped\": %.3f}",
                        r->sus.us, r->sus.mj, r->sus.mhz, r->sus.capped);
            fprintf(j, "}");
        }
    }
    if (j) {
        fprintf(j, "\n]}\n");
        fclose(j);
    }
    cudaFree(ws);
    cublasLtDestroy(lt);
    return 0;
}
#else
int main(void) {
    printf("SKIPPED: built without CUDA (EMBER_CUDA=OFF)\n");
    return 77;
}
#endif
