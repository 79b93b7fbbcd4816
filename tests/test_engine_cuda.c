/* tests/test_engine_cuda.c — the CUDA engine (worker/engine.h, device "cuda:0") against the CPU
 * engine (fp32 reference) on the same model (EMBER_TEST_MODEL_DIR: the real all-MiniLM-L6-v2
 * here, the seeded random-weight models on the GPU host — ops/gpu-check.sh points it there):
 * seeded ragged batches of 1 to 200 sequences of 1 to 512 tokens, every embedding at cosine
 * >= 0.9999 (bf16 engine vs fp32); Matryoshka and raw outputs in the same buckets (per-batch
 * numbers come from device memory, so one graph serves them all); the lazy graph policy gives
 * the same bits eager, at capture and at replay (checked first, on a fresh engine);
 * capture-all-at-start and never-capture modes; batches over max_batch_tokens split internally;
 * many batches in flight completing in order with the eventfd firing; bad batches rejected while
 * the engine keeps working; results that outlive the engine; the GEMM tuning cache across
 * starts (same bits from cached choices; stale entries re-timed); the fused FFN (ffn=on: every
 * eligible bucket, f16 and bf16, against the CPU; refused where it cannot run); CLS and
 * last-token pooling on the same weights against the CPU engine; the bucket rule.
 * Without a CUDA device only the bucket rule and the device options' syntax run, then "SKIPPED:
 * no CUDA device", exit 77 (or a failure, if one of those failed). One submitting thread. */
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "common/clock.h"
#include "common/file.h"
#include "common/prng.h"
#include "common/safetensors.h"
#include "kernels/blas_core.h"
#include "kernels/ffn.h"
#include "tests/test_util.h"
#include "worker/engine.h"
#include "worker/engine_cuda.h"
#include "worker/model_bert_cuda.h"

#define S_COS_MIN 0.9999

static com_prng_t g_rng;

typedef struct batch {
    wrk_batch_t b;
    int32_t *ids, *types, *cu;
} batch_t;

/* n sequences of lengths in [1, max_len] (a third of them short), random ids and types. */
static void s_make(batch_t *x, const com_model_info_t *in, int32_t n, int32_t max_len) {
    x->cu = malloc(((size_t)n + 1) * sizeof *x->cu);
    x->cu[0] = 0;
    for (int32_t s = 0; s < n; s++) {
        int32_t len = com_prng_below(&g_rng, 3) == 0 ? 1 + (int32_t)com_prng_below(&g_rng, 8)
                                                     : 1 + (int32_t)com_prng_below(&g_rng, max_len);
        x->cu[s + 1] = x->cu[s] + len;
    }
    const int32_t T = x->cu[n];
    x->ids = malloc((size_t)T * sizeof *x->ids);
    x->types = malloc((size_t)T * sizeof *x->types);
    for (int32_t t = 0; t < T; t++) {
        x->ids[t] = (int32_t)com_prng_below(&g_rng, (uint64_t)in->vocab_size);
        x->types[t] = (int32_t)com_prng_below(&g_rng, (uint64_t)in->type_vocab_size);
    }
    wrk_batch_t b = {n, T, x->ids, x->types, x->cu, 0, -1};
    x->b = b;
}

static void s_free(batch_t *x) {
    free(x->ids), free(x->types), free(x->cu);
}

static const float *s_run(wrk_engine_t *e, const wrk_batch_t *b, wrk_result_t **r) {
    com_error_t err = {0};
    int rc = wrk_engine_submit(e, b, r, &err);
    CHECK_MSG(rc == 0, "submit: %s", err.msg);
    if (rc != 0)
        return NULL;
    rc = wrk_result_wait(*r, &err);
    CHECK_MSG(rc == 0, "wait: %s", err.msg);
    int32_t n = 0, d = 0;
    const float *emb = wrk_result_embeddings(*r, &n, &d);
    CHECK(rc != 0 || (emb && n == b->n_seqs));
    return rc == 0 ? emb : NULL;
}

/* worst cosine of the CUDA engine's embeddings against the CPU engine's for batch b */
static double s_compare(wrk_engine_t *gpu, wrk_engine_t *cpu, const wrk_batch_t *b,
                        const char *what) {
    wrk_result_t *rg = NULL, *rc = NULL;
    const float *g = s_run(gpu, b, &rg), *c = s_run(cpu, b, &rc);
    double worst = 1.0;
    if (g && c) {
        int32_t n = 0, d = 0;
        wrk_result_embeddings(rg, &n, &d);
        for (int32_t s = 0; s < n; s++) {
            double cs = test_cosine_f32(g + (size_t)s * d, c + (size_t)s * d, (size_t)d);
            if (!(cs >= worst))
                worst = cs;
        }
    }
    CHECK_MSG(worst >= S_COS_MIN, "%s: worst cosine %.6f < %.4f", what, worst, S_COS_MIN);
    wrk_result_destroy(&rg);
    wrk_result_destroy(&rc);
    return worst;
}

/* fold=auto's default reach (no GPU needed): the measured crossovers, MiniLM's 512 tokens at
 * hidden 384 and BERT-base's 256 at hidden 768 (docs/benchmarks.md, twenty-seventh round) */
static void test_fold_default(void) {
    CHECK(wrk_bert_cuda_fold_max_default(384) == 512);
    CHECK(wrk_bert_cuda_fold_max_default(768) == 256);
    CHECK(wrk_bert_cuda_fold_max_default(1024) == 192);
    CHECK(wrk_bert_cuda_fold_max_default(0) == 0);
}

static void test_buckets(void) {
    CHECK(wrk_cuda_bucket_tokens(1) == 64 && wrk_cuda_bucket_tokens(64) == 64);
    CHECK(wrk_cuda_bucket_tokens(65) == 128 && wrk_cuda_bucket_tokens(1024) == 1024);
    CHECK(wrk_cuda_bucket_tokens(1025) == 1280 && wrk_cuda_bucket_tokens(16384) == 16384);
    CHECK(wrk_cuda_bucket_tokens(16385) == 16640);
    for (int32_t n = 1; n <= 20000; n++) {
        int32_t T = wrk_cuda_bucket_tokens(n);
        if (T < n || T - n >= (n <= 1024 ? 64 : 256)) {
            CHECK_MSG(0, "bucket(%d) = %d", (int)n, (int)T);
            break;
        }
    }
}

/* Sequences per test batch: n for an all-MiniLM-L6-v2-sized model, fewer for larger ones so
 * the CPU engine's share (the reference side of every comparison) stays about the same. */
static int32_t s_seqs(const com_model_info_t *in, int32_t n) {
    const int64_t scale = (int64_t)in->hidden_size * in->num_layers / (384 * 6);
    return scale > 1 && n / scale >= 1 ? (int32_t)(n / scale) : n;
}

/* The binary16 range guard: a copy of the test model (the other files linked) with one FFN
 * sublayer end's LayerNorm gamma 4096 everywhere, so an output may reach sqrt(H - 1) 4096 (80k
 * at H = 384), past binary16's 65504: the defaults (auto) fall back to bf16 activations and an
 * fp32 residual stream, and asking for an f16 residual or f16 activations is refused with
 * COM_EUNSUPPORTED naming the bound. */
static void test_residual_range(const char *dir, const char *scratch) {
    char path[1024], model[640];
    snprintf(model, sizeof model, "%s/wide", scratch);
    static const char *const weights[] = {"model.safetensors"};
    CHECK(test_link_model(dir, model, weights, 1) == 0);
    com_error_t err = {0};
    char *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(com_file_read(path, (size_t)1 << 31, &buf, &len, &err) == 0);
    com_safetensors_t *st = NULL;
    CHECK(buf && com_safetensors_open_buffer(buf, len, &st, &err) == 0);
    const com_tensor_t *g = NULL;
    for (size_t i = 0; st && i < com_safetensors_count(st); i++) {
        const com_tensor_t *t = com_safetensors_at(st, i);
        if (!g && strstr(t->name, "output.LayerNorm.weight") && !strstr(t->name, "attention"))
            g = t; /* an FFN sublayer end */
    }
    CHECK(g && g->dtype == COM_DTYPE_F32);
    if (g && g->dtype == COM_DTYPE_F32) {
        const size_t at = (size_t)((const char *)g->data - buf); /* the tensor lies inside buf */
        const float v = 4096.0f;
        for (size_t k = 0; k < g->nbytes / 4; k++)
            memcpy(buf + at + 4 * k, &v, 4);
    }
    com_safetensors_destroy(&st);
    snprintf(path, sizeof path, "%s/model.safetensors", model);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, len, f) == len);
    if (f)
        fclose(f);
    free(buf);
    wrk_engine_t *e = NULL;
    wrk_engine_opts_t o = {"cuda:0,graphs=off", 0, 1024};
    int rc = wrk_engine_new(model, &o, &e, &err);
    CHECK_MSG(rc == 0, "wide model, auto residual: %s", err.msg);
    wrk_cuda_stats_t sts;
    if (rc == 0) {
        CHECK(wrk_engine_cuda_stats(e, &sts, &err) == 0);
        CHECK_MSG(sts.residual == 0 && sts.dtype == 0,
                  "wide model: residual type %d, dtype %d, want 0 (fp32), 0 (bf16)",
                  (int)sts.residual, (int)sts.dtype);
        wrk_engine_destroy(&e);
    }
    o.device = "cuda:0,graphs=off,residual=f16";
    rc = wrk_engine_new(model, &o, &e, &err);
    CHECK_MSG(rc == COM_EUNSUPPORTED && e == NULL && strstr(err.msg, "65504"),
              "wide model, residual=f16: rc %d (%s)", rc, err.msg);
    printf("residual range: auto keeps fp32, f16 refused (%s)\n", err.msg);
    o.device = "cuda:0,graphs=off,dtype=f16";
    rc = wrk_engine_new(model, &o, &e, &err);
    CHECK_MSG(rc == COM_EUNSUPPORTED && e == NULL && strstr(err.msg, "65504"),
              "wide model, dtype=f16: rc %d (%s)", rc, err.msg);
    printf("dtype range: auto keeps bf16, f16 refused (%s)\n", err.msg);
}

/* The same weights under CLS pooling + Normalize and under last-token pooling (raw): the CUDA
 * engine against the CPU engine (both compute only the pooled rows in the last layer: the CPU
 * always, the CUDA engine at its unfolded buckets, device option prune=auto) on ragged batches
 * across the folded, plain and fused-FFN buckets, lazily (eager, captured, replayed) and with
 * graphs=all and fold=off; with prune=off too. The pruned pass must have run for the larger batches
 * (the default f16 stream on these models) and never with prune=off. */
static void test_row_pooling(const char *dir, const char *scratch, const com_model_info_t *in) {
    char model[640];
    snprintf(model, sizeof model, "%s/pooling", scratch);
    static const char *const own[] = {"modules.json", "1_Pooling"};
    CHECK(test_link_model(dir, model, own, 2) == 0);
    static const struct {
        const char *flag;
        bool normalize;
    } cases[] = {{"pooling_mode_cls_token", true}, {"pooling_mode_lasttoken", false}};
    const int32_t max_len = in->max_position_embeddings < 512 ? in->max_position_embeddings : 512;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        CHECK(test_write_pooling(model, in->hidden_size, cases[c].flag, cases[c].normalize) == 0);
        wrk_engine_t *cpu = NULL;
        com_error_t err = {0};
        wrk_engine_opts_t oc = {"cpu", 0, 0};
        int rc = wrk_engine_new(model, &oc, &cpu, &err);
        CHECK_MSG(rc == 0, "%s: cpu engine: %s", cases[c].flag, err.msg);
        /* fold=off: pruned small buckets too (fold=auto folds the MiniLM shape's up to 512
         * tokens), through the fused QKV + attention kernel at 128 tokens and below */
        static const char *const devices[] = {"cuda:0", "cuda:0,graphs=all", "cuda:0,fold=off",
                                              "cuda:0,prune=off"};
        for (size_t d = 0; d < sizeof devices / sizeof *devices && rc == 0; d++) {
            wrk_engine_t *gpu = NULL;
            wrk_engine_opts_t og = {devices[d], 0, 0};
            rc = wrk_engine_new(model, &og, &gpu, &err);
            CHECK_MSG(rc == 0, "%s, %s: %s", cases[c].flag, devices[d], err.msg);
            if (rc != 0)
                break;
            CHECK(wrk_engine_model(gpu)->pooling == (c == 0 ? COM_POOL_CLS : COM_POOL_LAST));
            wrk_cuda_stats_t s0, s1;
            CHECK(wrk_engine_cuda_stats(gpu, &s0, &err) == 0);
            double worst = 1.0;
            static const int32_t sizes[] = {1, 17, 17, 17, 200};
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
                batch_t x;
                s_make(&x, in, s_seqs(in, sizes[i]), i == 0 ? 128 : max_len);
                const double w = s_compare(gpu, cpu, &x.b, cases[c].flag);
                printf("  %s, %s, %d seqs, %d tokens: worst cosine %.6f\n", cases[c].flag,
                       devices[d], (int)x.b.n_seqs, (int)x.b.n_tokens, w);
                worst = w < worst ? w : worst;
                s_free(&x);
            }
            CHECK(wrk_engine_cuda_stats(gpu, &s1, &err) == 0);
            const bool off = strstr(devices[d], "prune=off") != NULL;
            printf("%s, %s: cuda vs cpu worst cosine %.6f; pruned from %d tokens, %lld of %lld "
                   "chunks pruned\n",
                   cases[c].flag, devices[d], worst, (int)s1.tail_min,
                   (long long)(s1.pruned_chunks - s0.pruned_chunks),
                   (long long)(s1.chunks - s0.chunks));
            CHECK_MSG(off ? s1.tail_min == 0 && s1.pruned_chunks == 0
                          : s1.tail_min > 0 && s1.pruned_chunks - s0.pruned_chunks >= 4,
                      "%s: tail_min %d, %lld chunks pruned", devices[d], (int)s1.tail_min,
                      (long long)(s1.pruned_chunks - s0.pruned_chunks));
            wrk_engine_destroy(&gpu);
        }
        wrk_engine_destroy(&cpu);
    }
}

/* Of the first n batches submitted, those timed with gpu_time=every: 0, every, 2 every, ... */
static int64_t s_timed(int64_t n, int64_t every) {
    return (n + every - 1) / every;
}

/* The GEMM plans of an engine whose buckets step by 64 tokens: 4 per bucket, and the folded QKV
 * (layers >= 1) of each folded bucket (fold auto, the default: up to 128 tokens), less both QKV
 * plans of each bucket whose QKV + attention run fused (fuse auto: up to 128 tokens). The fused
 * FFN's buckets lose their two FFN plans (test_ffn subtracts them; ffn auto starts at 0.9 of a
 * wave of its tiles, 15206 tokens on the H200, past the engines counted here). */
static int32_t s_plans(const wrk_cuda_stats_t *st) {
    const int32_t fused = st->fuse_max / 64,
                  fused_folded = (st->fuse_max < st->fold_max ? st->fuse_max : st->fold_max) / 64;
    return 4 * st->n_buckets + st->fold_max / 64 - fused - fused_folded;
}

/* The GEMM tuning cache (worker/tune_cache.h) through real engines: the first start times
 * every plan and writes the file, the second takes every plan from it and computes the same
 * bits; an entry whose description no longer matches, and junk lines, cost only a re-timing;
 * tune_cache=off times everything. */
static void test_tune_cache(const char *dir, wrk_engine_t *cpu, const char *cache) {
    char path[700];
    snprintf(path, sizeof path, "%s/tune.txt", cache);
    setenv("EMBER_TUNE_CACHE", path, 1);
    const com_model_info_t *in = wrk_engine_model(cpu);
    batch_t x;
    s_make(&x, in, 9, 100); /* <= 1024 tokens: one chunk */
    wrk_result_t *r[2] = {NULL, NULL};
    const float *out[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        com_error_t err = {0};
        wrk_engine_t *g = NULL;
        wrk_engine_opts_t o = {"cuda:0", 0, 1024}; /* 16 buckets of 64-token steps */
        const double t0 = com_clock_mono_us();
        CHECK_MSG(wrk_engine_new(dir, &o, &g, &err) == 0, "engine: %s", err.msg);
        if (!g)
            continue;
        const double ms = (com_clock_mono_us() - t0) / 1e3;
        wrk_cuda_stats_t st;
        CHECK(wrk_engine_cuda_stats(g, &st, &err) == 0);
        printf("tuning cache, start %d: %.0f ms, %d plans timed, %d from the cache\n", i + 1, ms,
               (int)st.plans_timed, (int)st.plans_cached);
        const int32_t plans = s_plans(&st);
        CHECK_MSG(i == 0 ? st.plans_timed == plans && st.plans_cached == 0
                         : st.plans_timed == 0 && st.plans_cached == plans,
                  "start %d: %d timed, %d cached", i + 1, (int)st.plans_timed,
                  (int)st.plans_cached);
        out[i] = s_run(g, &x.b, &r[i]);
        s_compare(g, cpu, &x.b, "cached plans");
        wrk_engine_destroy(&g);
    }
    if (out[0] && out[1])
        CHECK_MSG(memcmp(out[0], out[1], (size_t)x.b.n_seqs * in->embedding_dim * 4) == 0,
                  "the cached choices compute other bits than the timed ones");
    wrk_result_destroy(&r[0]), wrk_result_destroy(&r[1]);

    /* one entry's description made stale, a junk line added: that plan alone is re-timed */
    char *text = NULL;
    size_t len = 0;
    com_error_t err = {0};
    CHECK(com_file_read(path, 1 << 20, &text, &len, &err) == 0);
    const char *first = text ? strchr(text, '\n') : NULL; /* past the comment line */
    const char *eol = first ? strchr(first + 1, '\n') : NULL;
    const char *tab = NULL; /* the last TAB of the first entry: before its description */
    for (const char *p = first ? first + 1 : NULL; p && eol && p < eol; p++)
        tab = *p == '\t' ? p : tab;
    FILE *f = fopen(path, "w");
    CHECK(tab != NULL && f != NULL);
    if (tab && f)
        fprintf(f, "junk without tabs\n%.*s\tno such algorithm%s", (int)(tab - first - 1),
                first + 1, eol);
    if (f)
        fclose(f);
    free(text);
    for (int off = 0; off < 2; off++) {
        wrk_engine_t *g = NULL;
        wrk_engine_opts_t o = {off ? "cuda:0,tune_cache=off" : "cuda:0", 0, 1024};
        CHECK_MSG(wrk_engine_new(dir, &o, &g, &err) == 0, "engine: %s", err.msg);
        if (!g)
            continue;
        wrk_cuda_stats_t st;
        CHECK(wrk_engine_cuda_stats(g, &st, &err) == 0);
        const int32_t plans = s_plans(&st);
        CHECK_MSG(off ? st.plans_timed == plans && st.plans_cached == 0
                      : st.plans_timed == 1 && st.plans_cached == plans - 1,
                  "%s: %d timed, %d cached", o.device, (int)st.plans_timed, (int)st.plans_cached);
        s_compare(g, cpu, &x.b, o.device);
        wrk_engine_destroy(&g);
    }
    s_free(&x);
}

/* Lanes: chunks submitted back to back spread over the lanes (a lane with work queued is passed
 * by for a less loaded one) and run side by side on the GPU, each in activations of its own. Every
 * result, in flight together (batches over max_batch_tokens split into chunks that land on
 * different lanes among them), must have the same bits as the one-lane engine's for the same batch
 * (both take their GEMM plans from the same tuning cache). Then a large batch on an idle engine:
 * cut into chunks of max_batch_tokens / lanes, so both lanes run it, right against the CPU. */
static void test_lanes(const char *dir, const com_model_info_t *in, wrk_engine_t *cpu) {
    enum { N = 14, kLanes = 3 };
    com_error_t err = {0};
    wrk_engine_t *one = NULL, *many = NULL;
    wrk_engine_opts_t o1 = {"cuda:0,lanes=1", 0, 1024}, o3 = {"cuda:0,lanes=3", 0, 1024};
    int rc = wrk_engine_new(dir, &o1, &one, &err);
    CHECK_MSG(rc == 0, "lanes=1: %s", err.msg);
    rc = rc ? rc : wrk_engine_new(dir, &o3, &many, &err);
    CHECK_MSG(rc == 0, "lanes=3: %s", err.msg);
    if (rc != 0) {
        wrk_engine_destroy(&one);
        return;
    }
    wrk_cuda_stats_t st1, st3;
    CHECK(wrk_engine_cuda_stats(one, &st1, &err) == 0 &&
          wrk_engine_cuda_stats(many, &st3, &err) == 0);
    CHECK_MSG(st1.n_lanes == 1 && st1.n_slots == 3 && st3.n_lanes == kLanes &&
                  st3.n_slots == 2 * kLanes && st3.device_bytes > st1.device_bytes,
              "lanes: %d / %d lanes, %d / %d slots, %zu / %zu bytes", (int)st1.n_lanes,
              (int)st3.n_lanes, (int)st1.n_slots, (int)st3.n_slots, st1.device_bytes,
              st3.device_bytes);
    const int32_t max_len = in->max_position_embeddings < 512 ? in->max_position_embeddings : 512;
    batch_t xs[N];
    wrk_result_t *r1[N] = {NULL}, *r3[N] = {NULL};
    for (int i = 0; i < N; i++) /* every fourth over 1024 tokens: two or more chunks */
        s_make(&xs[i], in, i % 4 == 3 ? 12 : 1 + (int32_t)com_prng_below(&g_rng, 6),
               i % 4 == 3 ? max_len : 160);
    for (int i = 0; i < N; i++)
        CHECK(wrk_engine_submit(many, &xs[i].b, &r3[i], &err) == 0);
    int32_t differ = 0, lanes_used = 0;
    CHECK(wrk_engine_cuda_stats(many, &st3, &err) == 0);
    for (int32_t l = 0; l < kLanes; l++) /* submitted back to back: the busy lanes are passed by */
        lanes_used += st3.lane_chunks[l] > 0;
    CHECK_MSG(lanes_used >= 2, "lanes=3, %d batches in flight: %d lanes used", N, (int)lanes_used);
    for (int i = 0; i < N; i++) {
        const float *a = s_run(one, &xs[i].b, &r1[i]);
        const bool ok = r3[i] && wrk_result_wait(r3[i], &err) == 0;
        CHECK_MSG(ok, "lanes=3 batch %d: %s", i, err.msg);
        int32_t n = 0, d = 0;
        const float *b = ok ? wrk_result_embeddings(r3[i], &n, &d) : NULL;
        if (a && b && n == xs[i].b.n_seqs)
            differ += memcmp(a, b, (size_t)n * (size_t)d * sizeof *a) != 0;
        else
            differ++;
        wrk_result_destroy(&r1[i]);
        wrk_result_destroy(&r3[i]);
        s_free(&xs[i]);
    }
    CHECK_MSG(differ == 0, "lanes=3: %d of %d batches differ from lanes=1", (int)differ, N);
    printf("lanes: %d batches in flight on 3 lanes, bit-identical to one lane: %s\n", N,
           differ == 0 ? "yes" : "NO");
    wrk_engine_destroy(&many);
    wrk_engine_destroy(&one);

    wrk_engine_opts_t o2 = {"cuda:0,lanes=2,tune=off", 0, 16384};
    rc = wrk_engine_new(dir, &o2, &many, &err);
    CHECK_MSG(rc == 0, "lanes=2, max 16384: %s", err.msg);
    if (rc != 0)
        return;
    /* sequences of equal length, 9,600 tokens or a little more: chunks of <= 8192 tokens on an
     * idle engine (max 16384, 2 lanes), so two */
    const int32_t len = max_len < 400 ? max_len : 400, n = (9600 + len - 1) / len;
    batch_t x;
    s_make(&x, in, n, 1);
    x.b.n_tokens = n * len;
    for (int32_t q = 0; q <= n; q++)
        x.cu[q] = q * len;
    free(x.ids), free(x.types);
    x.ids = malloc((size_t)x.b.n_tokens * sizeof *x.ids);
    x.types = calloc((size_t)x.b.n_tokens, sizeof *x.types);
    for (int32_t t = 0; t < x.b.n_tokens; t++)
        x.ids[t] = (int32_t)com_prng_below(&g_rng, (uint64_t)in->vocab_size);
    x.b.token_ids = x.ids, x.b.type_ids = x.types;
    wrk_cuda_stats_t s0, s1;
    CHECK(wrk_engine_cuda_stats(many, &s0, &err) == 0);
    const double w = s_compare(many, cpu, &x.b, "lanes=2, one batch in two parts");
    CHECK(wrk_engine_cuda_stats(many, &s1, &err) == 0);
    printf("lanes=2: %d seqs, %d tokens on an idle engine: %lld chunks, worst cosine vs cpu %.7f\n",
           (int)x.b.n_seqs, (int)x.b.n_tokens, (long long)(s1.chunks - s0.chunks), w);
    CHECK_MSG(s1.chunks - s0.chunks == 2 && s1.lane_chunks[0] - s0.lane_chunks[0] == 1 &&
                  s1.lane_chunks[1] - s0.lane_chunks[1] == 1,
              "%d tokens on an idle 2-lane engine ran in %lld chunks, lanes %lld / %lld, want 2 "
              "chunks, one per lane",
              (int)x.b.n_tokens, (long long)(s1.chunks - s0.chunks),
              (long long)(s1.lane_chunks[0] - s0.lane_chunks[0]),
              (long long)(s1.lane_chunks[1] - s0.lane_chunks[1]));
    s_free(&x);
    wrk_engine_destroy(&many);
}

/* The fused FFN (ffn=on, kernels/ffn.h) against the CPU engine, with the cosine bound of every
 * other mode: f16 activations (the stream hb itself) with the fold off (every bucket fused) and
 * with fold=auto (the buckets past its reach, up to 4096 tokens), bf16 with residual=bf16 (every
 * bucket, graphs captured at start; and from ffn_min=2048 on). Ragged batches of 1 to 200
 * sequences reach the small and the large buckets. Which buckets run it shows in the plan
 * counts: each fused bucket has no FFN-up / FFN-down plans (tuning is on, so every plan is timed
 * or cached). Where kern_ffn_supported rules the shape or GPU out, ffn=on must be refused
 * instead. Then the combinations that rule it out everywhere whatever the GPU: an fp32 residual
 * stream, an f16 copy beside bf16 activations (r16), every bucket folded: refused, not ignored. */
static void test_ffn(const char *dir, const com_model_info_t *in, wrk_engine_t *cpu) {
    static const struct {
        const char *device;
        int32_t max_tokens, n_seqs, dtype, ffn_min;
    } modes[] = {{"cuda:0,ffn=on,fold=off", 1024, 40, 1, 1},
                 {"cuda:0,ffn=on", 4096, 200, 1, 1},
                 {"cuda:0,ffn=on,fold=off,graphs=off,lanes=1", 4096, 200, 1, 1},
                 {"cuda:0,ffn=on,dtype=bf16,residual=bf16,graphs=all", 1024, 40, 0, 1},
                 {"cuda:0,ffn=on,ffn_min=2048,dtype=bf16,residual=bf16", 4096, 200, 0, 2048}};
    const int32_t max_len = in->max_position_embeddings < 512 ? in->max_position_embeddings : 512;
    com_error_t err = {0};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        const bool runs = kern_ffn_supported((kern_dtype_t)modes[m].dtype, in->hidden_size,
                                             in->intermediate_size);
        wrk_engine_opts_t o = {modes[m].device, 0, modes[m].max_tokens};
        wrk_engine_t *gpu = NULL;
        const int rc = wrk_engine_new(dir, &o, &gpu, &err);
        if (!runs) {
            CHECK_MSG(rc == COM_EUNSUPPORTED && gpu == NULL && strstr(err.msg, "ffn=on"),
                      "%s where the fused FFN does not run: rc %d (%s)", modes[m].device, rc,
                      err.msg);
            printf("%s: refused here (%s)\n", modes[m].device, err.msg);
            wrk_engine_destroy(&gpu);
            continue;
        }
        CHECK_MSG(rc == 0, "cuda engine \"%s\" (max %d): %s", modes[m].device,
                  (int)modes[m].max_tokens, err.msg);
        if (rc != 0)
            continue;
        wrk_cuda_stats_t st;
        CHECK(wrk_engine_cuda_stats(gpu, &st, &err) == 0);
        /* the fused buckets: unfolded (the fold takes a prefix, up to st.fold_max) and >=
         * ffn_min; 2 plans fewer each */
        int32_t n_ffn = 0, first = 0;
        for (int32_t T = 64; T <= st.max_bucket; T = wrk_cuda_bucket_tokens(T + 1))
            if (T > st.fold_max && T >= modes[m].ffn_min) {
                n_ffn++;
                first = first ? first : T;
            }
        CHECK_MSG(st.ffn_min == first, "%s: stats ffn_min %d, first fused bucket %d",
                  modes[m].device, (int)st.ffn_min, (int)first);
        const int32_t plans = s_plans(&st) - 2 * n_ffn;
        CHECK_MSG(st.dtype == modes[m].dtype && n_ffn > 0 &&
                      st.plans_timed + st.plans_cached == plans,
                  "%s: dtype %d (want %d), %d fused-FFN buckets, %d + %d plans (want %d)",
                  modes[m].device, (int)st.dtype, (int)modes[m].dtype, (int)n_ffn,
                  (int)st.plans_timed, (int)st.plans_cached, (int)plans);
        double w_mode = 1.0;
        static const int32_t seqs[] = {1, 9, 0};
        for (size_t rep = 0; rep < sizeof seqs / sizeof *seqs; rep++) {
            batch_t x;
            s_make(&x, in, s_seqs(in, seqs[rep] ? seqs[rep] : modes[m].n_seqs), max_len);
            const double w = s_compare(gpu, cpu, &x.b, modes[m].device);
            w_mode = w < w_mode ? w : w_mode;
            s_free(&x);
        }
        printf("%s, max_batch_tokens %d: FFN fused at %d of %d buckets (folded up to %d), worst "
               "cosine vs cpu %.7f\n",
               modes[m].device, (int)modes[m].max_tokens, (int)n_ffn, (int)st.n_buckets,
               (int)st.fold_max, w_mode);
        wrk_engine_destroy(&gpu);
    }
    static const char *const refused[] = {"cuda:0,ffn=on,residual=f32,tune=off",
                                          "cuda:0,ffn=on,dtype=bf16,tune=off",
                                          "cuda:0,ffn=on,fold=on,tune=off"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        wrk_engine_opts_t o = {refused[i], 0, 1024};
        wrk_engine_t *gpu = NULL;
        const int rc = wrk_engine_new(dir, &o, &gpu, &err);
        CHECK_MSG(rc == COM_EUNSUPPORTED && gpu == NULL && strstr(err.msg, "ffn=on"),
                  "%s: rc %d (%s), want COM_EUNSUPPORTED", refused[i], rc, err.msg);
        printf("%s: refused (%s)\n", refused[i], err.msg);
        wrk_engine_destroy(&gpu);
    }
    /* ... while auto, the default, just runs the GEMM pair there */
    wrk_engine_opts_t o = {"cuda:0,residual=f32,tune=off", 0, 4096};
    wrk_engine_t *gpu = NULL;
    const int rc = wrk_engine_new(dir, &o, &gpu, &err);
    CHECK_MSG(rc == 0, "%s, ffn auto: %s", o.device, err.msg);
    wrk_engine_destroy(&gpu);
}

/* The device options' syntax, checked before any device is touched (so also without a GPU):
 * malformed words and numbers out of range are COM_EINVAL; well-formed ones are not (with no
 * GPU they fail later, for want of a device). */
static void test_device_options(const char *dir) {
    static const char *const bad[] = {"cuda:0,graphs=sometimes",
                                      "cuda:0,tune=maybe",
                                      "cuda:0,graphs=all,",
                                      "cuda:0,graphs=allx",
                                      "cuda:0,pdl=",
                                      "cuda:0,residual=fp16",
                                      "cuda:0,lanes=0",
                                      "cuda:0,lanes=5",
                                      "cuda:0,lanes=",
                                      "cuda:0,lanes=2x",
                                      "cuda:0,dtype=fp16",
                                      "cuda:0,fold=yes",
                                      "cuda:0,fold_max=0",
                                      "cuda:0,fold_max=-64",
                                      "cuda:0,fold_max=12x",
                                      "cuda:0,fold_max=99999999",
                                      "cuda:0,fold_max=",
                                      "cuda:0,fold_max=1048577",
                                      "cuda:0,fuse=yes",
                                      "cuda:0,fuse=",
                                      "cuda:0,ffn=yes",
                                      "cuda:0,ffn=",
                                      "cuda:0,ffn=onx",
                                      "cuda:0,ffn_min=0",
                                      "cuda:0,ffn_min=",
                                      "cuda:0,ffn_min=-1",
                                      "cuda:0,ffn_min=1048577",
                                      "cuda:0,prune=on",
                                      "cuda:0,prune=",
                                      "cuda:0,gpu_time=",
                                      "cuda:0,gpu_time=-1",
                                      "cuda:0,gpu_time=1048577",
                                      "cuda:0,fault=0",
                                      "cuda:0,fault="};
    com_error_t err = {0};
    wrk_engine_t *e = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        wrk_engine_opts_t o = {bad[i], 0, 0};
        const int rc = wrk_engine_new(dir, &o, &e, &err);
        CHECK_MSG(rc == COM_EINVAL && e == NULL && strstr(err.msg, "device option"),
                  "device \"%s\" is rejected as an option: rc %d (%s)", bad[i], rc, err.msg);
    }
    wrk_engine_opts_t good = {
        "cuda:0,lanes=4,fold_max=1048576,tune=off,graphs=off,fuse=auto,gpu_time=0,ffn=auto,"
        "ffn_min=1048576,prune=off,prune=auto",
        0, 1024};
    const int rc = wrk_engine_new(dir, &good, &e, &err);
    CHECK_MSG(rc != COM_EINVAL, "\"%s\" is well-formed: rc %d (%s)", good.device, rc, err.msg);
    wrk_engine_destroy(&e);
}

/* A sticky CUDA error while batches run (device option fault=3: the third chunk's pass is queued
 * behind a kernel that traps), found by the path `how` names: "flags" (the completion thread,
 * waiting on the pass's completion flags, asks the stream), "event" (every batch timed: the end
 * event's synchronisation), "graphs" (every graph captured at start; the failing pass is a graph
 * launch). Batches 1 and 2 complete; batch 3 and batch 4, queued behind it, fail with the CUDA
 * error's message within seconds; the engine reports itself unhealthy; a later submit is refused
 * at once. The process's CUDA context is dead afterwards: ctest runs each as a process of its
 * own (`engine_cuda fault HOW`). */
static int test_fault(const char *how) {
    const char *dev = strcmp(how, "flags") == 0    ? "cuda:0,fault=3,graphs=off,gpu_time=0,tune=off"
                      : strcmp(how, "event") == 0  ? "cuda:0,fault=3,graphs=off,gpu_time=1,tune=off"
                      : strcmp(how, "graphs") == 0 ? "cuda:0,fault=3,graphs=all,gpu_time=0,tune=off"
                                                   : NULL;
    const char *want = strcmp(how, "event") == 0 ? "cudaEventSynchronize" : "cudaStreamQuery";
    if (!dev) {
        fprintf(stderr, "engine_cuda fault: want flags, event or graphs, not \"%s\"\n", how);
        return 2;
    }
    com_prng_seed(&g_rng, 11);
    com_error_t err = {0};
    wrk_engine_t *gpu = NULL;
    wrk_engine_opts_t o = {dev, 0, 1024};
    int rc = wrk_engine_new(test_model_dir(), &o, &gpu, &err);
    CHECK_MSG(rc == 0, "%s: %s", dev, err.msg);
    if (rc != 0)
        return test_finish();
    const com_model_info_t *in = wrk_engine_model(gpu);
    batch_t x[4];
    wrk_result_t *r[4] = {NULL};
    for (int i = 0; i < 4; i++)
        s_make(&x[i], in, 3, 40); /* one chunk each */
    for (int i = 0; i < 2; i++) {
        s_run(gpu, &x[i].b, &r[i]);
        CHECK_MSG(wrk_engine_health(gpu, &err) == 0, "batch %d: healthy (%s)", i + 1, err.msg);
    }
    const int64_t t0 = com_clock_mono_us();
    for (int i = 2; i < 4; i++) { /* 3 traps, 4 is queued behind it */
        rc = wrk_engine_submit(gpu, &x[i].b, &r[i], &err);
        CHECK_MSG(rc == 0, "batch %d is accepted (the trap is asynchronous): %s", i + 1, err.msg);
    }
    for (int i = 2; i < 4; i++) {
        if (!r[i])
            continue;
        com_error_t werr = {0};
        rc = wrk_result_wait(r[i], &werr);
        CHECK_MSG(rc == COM_EINTERNAL && strstr(werr.msg, want) && strstr(werr.msg, "cudaError"),
                  "batch %d fails with the CUDA error found by %s: rc %d (%s)", i + 1, want, rc,
                  werr.msg);
        int32_t n = -1;
        CHECK(wrk_result_embeddings(r[i], &n, NULL) == NULL && n == 0);
    }
    const double waited_s = (double)(com_clock_mono_us() - t0) / 1e6;
    CHECK_MSG(waited_s < 10.0, "the failure was found after %.1f s", waited_s);
    rc = wrk_engine_health(gpu, &err);
    CHECK_MSG(rc != 0 && strstr(err.msg, "cudaError"), "unhealthy after the fault: rc %d (%s)", rc,
              err.msg);
    wrk_result_t *late = NULL;
    rc = wrk_engine_submit(gpu, &x[0].b, &late, &err);
    CHECK_MSG(rc == COM_EINTERNAL && late == NULL && strstr(err.msg, "unusable"),
              "a later submit is refused at once: rc %d (%s)", rc, err.msg);
    printf("fault (%s): batches 3-4 failed after %.3f s: %s\n", how, waited_s, err.msg);
    for (int i = 0; i < 4; i++) {
        wrk_result_destroy(&r[i]);
        s_free(&x[i]);
    }
    wrk_engine_destroy(&gpu);
    return test_finish();
}

int main(int argc, char **argv) {
    kern_blas_reexec_for_core();      /* the CPU engine's GEMMs, the reference here */
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress survives a timeout */
    const bool fault = argc == 3 && strcmp(argv[1], "fault") == 0;
    if (argc > 1 && !fault) {
        fprintf(stderr, "usage: engine_cuda [fault flags|event|graphs]\n");
        return 2;
    }
    if (!fault) {
        test_buckets();
        test_fold_default();
        test_device_options(test_model_dir());
    }
    int n_dev = 0;
    cudaError_t ce = cudaGetDeviceCount(&n_dev);
    if (ce != cudaSuccess || n_dev < 1) {
        /* the checks above need no GPU: a failure among them is not hidden by the skip */
        if (test_checks_failed > 0)
            return test_finish();
        printf("SKIPPED: no CUDA device (%s)\n",
               ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return TEST_SKIP_CODE;
    }
    test_require_model();
    if (fault)
        return test_fault(argv[2]);
    /* every engine here keeps its GEMM choices in a scratch file, not the user's cache */
    char scratch[512], main_cache[640];
    CHECK(test_scratch_dir("engine_cuda", scratch, sizeof scratch) == 0);
    snprintf(main_cache, sizeof main_cache, "%s/main.txt", scratch);
    setenv("EMBER_TUNE_CACHE", main_cache, 1);
    com_prng_seed(&g_rng, 7);
    const char *dir = test_model_dir();
    com_error_t err = {0};
    wrk_engine_t *cpu = NULL, *gpu = NULL;
    wrk_engine_opts_t oc = {"cpu", 0, 0}, og = {"cuda:0,gpu_time=3", 0, 4096};
    int rc = wrk_engine_new(dir, &oc, &cpu, &err);
    CHECK_MSG(rc == 0, "cpu engine: %s", err.msg);
    rc = rc ? rc : wrk_engine_new(dir, &og, &gpu, &err);
    CHECK_MSG(rc == 0, "cuda engine: %s", err.msg);
    if (rc != 0)
        return test_finish();
    /* the CPU engine's copy: it lives to the end, while gpu is replaced below */
    const com_model_info_t *in = wrk_engine_model(cpu);
    const int32_t max_len = in->max_position_embeddings < 512 ? in->max_position_embeddings : 512;

    /* lazy graphs: a fresh bucket runs eager, then captured for each further staging slot it
     * meets, then replayed: the same bits every time */
    {
        batch_t x;
        s_make(&x, in, 1, 8); /* then one sequence of 300 tokens: bucket 320, not met yet */
        x.b.n_tokens = x.cu[1] = max_len < 300 ? max_len : 300;
        free(x.ids), free(x.types);
        x.ids = calloc((size_t)x.b.n_tokens, sizeof *x.ids);
        x.types = calloc((size_t)x.b.n_tokens, sizeof *x.types);
        for (int32_t t = 0; t < x.b.n_tokens; t++)
            x.ids[t] = (int32_t)com_prng_below(&g_rng, (uint64_t)in->vocab_size);
        x.b.token_ids = x.ids, x.b.type_ids = x.types;
        wrk_cuda_stats_t s0, s1;
        CHECK(wrk_engine_cuda_stats(gpu, &s0, &err) == 0);
        /* run 0 is eager; runs 1..n_slots capture a graph for the slot each lands on (the
         * eager run's slot included), the last one replays one of those graphs */
        enum { kRuns = 8 };
        const int32_t n_runs = s0.n_slots + 2;
        CHECK(n_runs <= kRuns);
        wrk_result_t *r[kRuns] = {NULL};
        const float *e3[kRuns];
        for (int i = 0; i < n_runs; i++)
            e3[i] = s_run(gpu, &x.b, &r[i]);
        CHECK(wrk_engine_cuda_stats(gpu, &s1, &err) == 0);
        for (int i = 0; i < n_runs; i++) {
            CHECK(e3[i] != NULL);
            const size_t bytes = (size_t)in->embedding_dim * sizeof(float);
            if (i > 0 && e3[0] && e3[i])
                CHECK_MSG(memcmp(e3[0], e3[i], bytes) == 0, "run %d (%s) differs from the eager", i,
                          i <= s0.n_slots ? "captured" : "replayed");
        }
        printf("lazy graphs: eager %lld -> %lld, launches %lld -> %lld, graphs %d -> %d\n",
               (long long)s0.eager_runs, (long long)s1.eager_runs, (long long)s0.graph_launches,
               (long long)s1.graph_launches, (int)s0.n_graphs, (int)s1.n_graphs);
        CHECK(s1.eager_runs == s0.eager_runs + 1 &&
              s1.graph_launches == s0.graph_launches + n_runs - 1);
        CHECK(s1.n_graphs == s0.n_graphs + s0.n_slots);
        /* one batch at a time stays in one lane (its activations warm) */
        int32_t lanes_used = 0;
        for (int32_t l = 0; l < s1.n_lanes; l++)
            lanes_used += s1.lane_chunks[l] != s0.lane_chunks[l];
        CHECK_MSG(lanes_used == 1, "%d runs one at a time used %d lanes", n_runs, (int)lanes_used);
        /* the chunk of every third batch submitted (gpu_time=3: batches 0, 3, 6, ...; here one
         * chunk each) has its GPU time counted before its result completes; any 3 consecutive
         * batches hold one */
        const int64_t timed = s_timed(s1.batches, 3) - s_timed(s0.batches, 3);
        CHECK(s1.batches - s0.batches == n_runs && s1.chunks - s0.chunks == n_runs);
        CHECK_MSG(s1.gpu_chunks == s0.gpu_chunks + timed && timed >= 1 &&
                      s1.gpu_ms_total > s0.gpu_ms_total && s1.gpu_ms_last > 0,
                  "GPU time: %lld -> %lld chunks timed (want +%lld of batches %lld -> %lld), "
                  "%.4f -> %.4f ms",
                  (long long)s0.gpu_chunks, (long long)s1.gpu_chunks, (long long)timed,
                  (long long)s0.batches, (long long)s1.batches, s0.gpu_ms_total, s1.gpu_ms_total);
        /* and the host's share of the same chunks, each part of it counted, the CUDA calls
         * inside the enqueue */
        const double enq = s1.host_enqueue_ms_total - s0.host_enqueue_ms_total,
                     launch = s1.host_launch_ms_total - s0.host_launch_ms_total,
                     wait = s1.host_wait_ms_total - s0.host_wait_ms_total,
                     dlv = s1.host_deliver_ms_total - s0.host_deliver_ms_total;
        printf("host share of %d chunks: enqueue %.4f, wait %.4f (GPU %.4f), deliver %.4f ms\n",
               (int)n_runs, enq, wait, s1.gpu_ms_total - s0.gpu_ms_total, dlv);
        CHECK_MSG(enq > 0 && launch > 0 && launch <= enq && wait > 0 && dlv > 0,
                  "host share: enqueue %.4f (CUDA calls %.4f), wait %.4f, deliver %.4f", enq,
                  launch, wait, dlv);
        for (int i = 0; i < n_runs; i++)
            wrk_result_destroy(&r[i]);
        s_free(&x);
    }

    /* ragged batches against the CPU engine */
    static const int32_t sizes[] = {1, 1, 3, 17, 64, 200};
    double worst = 1.0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int rep = 0; rep < 2; rep++) {
            batch_t x;
            s_make(&x, in, s_seqs(in, sizes[i]), i == 0 ? 1 : max_len);
            char what[64];
            snprintf(what, sizeof what, "%d seqs, %d tokens", (int)x.b.n_seqs, (int)x.b.n_tokens);
            double w = s_compare(gpu, cpu, &x.b, what);
            printf("  %-24s worst cosine %.6f\n", what, w);
            worst = w < worst ? w : worst;
            /* same batch, Matryoshka + normalised and raw: same bucket, other device numbers */
            x.b.out_dim = in->embedding_dim > 64 ? 64 : in->embedding_dim;
            x.b.normalize = 1;
            w = s_compare(gpu, cpu, &x.b, "matryoshka");
            worst = w < worst ? w : worst;
            x.b.out_dim = 0;
            x.b.normalize = 0;
            w = s_compare(gpu, cpu, &x.b, "raw");
            worst = w < worst ? w : worst;
            s_free(&x);
        }
    printf("cuda vs cpu: worst cosine %.6f (min %.4f)\n", worst, S_COS_MIN);

    /* many batches in flight, completing in order; the eventfd fires */
    {
        enum { N = 12 };
        batch_t xs[N];
        wrk_result_t *rs[N];
        for (int i = 0; i < N; i++) {
            s_make(&xs[i], in, 1 + (int32_t)com_prng_below(&g_rng, 30), 128);
            CHECK(wrk_engine_submit(gpu, &xs[i].b, &rs[i], &err) == 0);
        }
        struct pollfd pfd = {wrk_engine_event_fd(gpu), POLLIN, 0};
        CHECK(poll(&pfd, 1, 10000) == 1);
        int done_before_last = 0;
        CHECK(wrk_result_wait(rs[N - 1], &err) == 0);
        for (int i = 0; i < N; i++)
            done_before_last += wrk_result_poll(rs[i]);
        CHECK_MSG(done_before_last == N, "in-order completion: %d of %d done", done_before_last, N);
        for (int i = 0; i < N; i++) {
            double w = s_compare(gpu, cpu, &xs[i].b, "in flight");
            (void)w;
            wrk_result_destroy(&rs[i]);
            s_free(&xs[i]);
        }
    }

    /* validation: rejected, engine keeps working */
    {
        const int32_t ids[2] = {0, in->vocab_size}, cu[2] = {0, 2};
        wrk_batch_t bad = {1, 2, ids, NULL, cu, 0, -1};
        wrk_result_t *r = NULL;
        CHECK(wrk_engine_submit(gpu, &bad, &r, &err) == COM_EINVAL && r == NULL);
        batch_t x;
        s_make(&x, in, 4, 50);
        s_compare(gpu, cpu, &x.b, "after a rejected batch");
        s_free(&x);
    }

    /* results outlive the engine; destroy drains batches in flight */
    {
        batch_t x;
        s_make(&x, in, 8, 64);
        wrk_result_t *r = NULL;
        CHECK(wrk_engine_submit(gpu, &x.b, &r, &err) == 0);
        wrk_engine_destroy(&gpu);
        CHECK(gpu == NULL && wrk_result_poll(r) == 1);
        int32_t n = 0, d = 0;
        CHECK(wrk_result_wait(r, &err) == 0 && wrk_result_embeddings(r, &n, &d) && n == 8);
        wrk_result_destroy(&r);
        s_free(&x);
    }

    test_tune_cache(dir, cpu, scratch);
    test_residual_range(dir, scratch);
    test_row_pooling(dir, scratch, in);
    setenv("EMBER_TUNE_CACHE", main_cache, 1);

    /* capture every bucket at start; never capture; internal splitting over max_batch_tokens;
     * the other device options (options combine); the residual stream and the 16-bit type each
     * one runs (residual 0 fp32, 1 bf16, 2 f16; dtype 0 bf16, 1 binary16: the defaults, auto,
     * pick binary16 for the test model, whose weights bound every activation far inside its
     * range, and the residual stream is then the binary16 activations themselves) */
    static const struct {
        const char *device;
        int32_t graph_mode, max_tokens, n_seqs, residual, dtype;
    } modes[] = {{"cuda:0,fold=on,graphs=all", 1, 1024, 9, 2, 1},
                 {"cuda:0,fold=on", 0, 4096, 200, 2, 1},
                 {"cuda:0,fold=on,graphs=off,lanes=1,tune=off", 2, 4096, 40, 2, 1},
                 {"cuda:0,graphs=all,fuse=on", 1, 1024, 9, 2, 1},
                 {"cuda:0,fold=off,tune=off,graphs=off", 2, 4096, 9, 2, 1},
                 {"cuda:0,graphs=lazy,fold_max=128", 0, 600, 40, 2, 1},
                 {"cuda:0,pdl=off,graphs=all,fuse=off", 1, 1024, 9, 2, 1},
                 {"cuda:0,dtype=bf16,residual=bf16", 0, 4096, 200, 1, 0},
                 {"cuda:0,residual=f32,pdl=on,tune=on", 0, 4096, 9, 0, 1},
                 {"cuda:0,residual=f16,graphs=all,dtype=bf16", 1, 1024, 200, 2, 0},
                 {"cuda:0,dtype=bf16,residual=f32,graphs=off,fuse=off", 2, 4096, 9, 0, 0},
                 {"cuda:0,residual=auto,graphs=off,dtype=f16", 2, 4096, 200, 2, 1},
                 {"cuda:0,dtype=bf16,graphs=off", 2, 4096, 200, 2, 0}};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        wrk_engine_opts_t o = {modes[m].device, 0, modes[m].max_tokens};
        const double t0 = com_clock_mono_us();
        rc = wrk_engine_new(dir, &o, &gpu, &err);
        const double start_ms = (com_clock_mono_us() - t0) / 1e3;
        CHECK_MSG(rc == 0, "cuda engine \"%s\" (max %d): %s", modes[m].device,
                  (int)modes[m].max_tokens, err.msg);
        if (rc != 0)
            continue;
        wrk_cuda_stats_t st;
        CHECK(wrk_engine_cuda_stats(gpu, &st, &err) == 0);
        /* the fold: every bucket with fold=on; else (auto) those of up to fold_max tokens
         * (by default wrk_bert_cuda_fold_max_default: 512 at the test model's hidden 384)
         * where fold=on would be taken with the residual stream left to it */
        const char *fm = strstr(modes[m].device, "fold_max=");
        const int32_t want_fold =
            strstr(modes[m].device, "fold=on") ? st.max_bucket
            : !strstr(modes[m].device, "fold=off") && modes[m].dtype == 1 &&
                    !strstr(modes[m].device, "residual=f32")
                ? (fm ? atoi(fm + 9) : wrk_bert_cuda_fold_max_default(in->hidden_size))
                : 0;
        /* QKV + attention fused at the buckets of up to 128 tokens unless fuse=off (Hopper; the
         * test's MiniLM has head dim 32, where fuse=auto fuses as fuse=on does) */
        const int32_t want_fuse = strstr(modes[m].device, "fuse=off") ? 0 : 128;
        CHECK_MSG(st.residual == modes[m].residual && st.dtype == modes[m].dtype &&
                      st.fold_max == want_fold && st.fuse_max == want_fuse,
                  "%s: residual type %d, dtype %d, folded to %d, fused to %d, want %d, %d, %d, %d",
                  modes[m].device, (int)st.residual, (int)st.dtype, (int)st.fold_max,
                  (int)st.fuse_max, (int)modes[m].residual, (int)modes[m].dtype, (int)want_fold,
                  (int)want_fuse);
        if (modes[m].graph_mode == 1)
            CHECK_MSG(st.n_graphs == st.n_buckets * st.n_slots * st.n_lanes && st.n_buckets == 16,
                      "capture at start: %d graphs for %d buckets x %d slots x %d lanes",
                      (int)st.n_graphs, (int)st.n_buckets, (int)st.n_slots, (int)st.n_lanes);
        printf("%s, max_batch_tokens %d: start %.0f ms, %d buckets, %d graphs, capture %.1f ms, "
               "%.1f MiB device\n",
               modes[m].device, (int)modes[m].max_tokens, start_ms, (int)st.n_buckets,
               (int)st.n_graphs, st.capture_ms, (double)st.device_bytes / (1 << 20));
        double w_mode = 1.0;
        for (int rep = 0; rep < 3; rep++) {
            batch_t x;
            s_make(&x, in, s_seqs(in, modes[m].n_seqs), max_len);
            const double w = s_compare(gpu, cpu, &x.b, modes[m].device);
            w_mode = w < w_mode ? w : w_mode;
            s_free(&x);
        }
        printf("  worst cosine vs cpu %.7f\n", w_mode);
        if (modes[m].graph_mode == 2) {
            CHECK(wrk_engine_cuda_stats(gpu, &st, &err) == 0);
            CHECK(st.n_graphs == 0 && st.graph_launches == 0);
        }
        wrk_engine_destroy(&gpu);
    }
    test_ffn(dir, in, cpu);
    test_lanes(dir, in, cpu);
    wrk_engine_opts_t bad = {"cuda:99", 0, 0};
    CHECK(wrk_engine_new(dir, &bad, &gpu, &err) == COM_EUNSUPPORTED && gpu == NULL);
    /* a combination the options' syntax allows but the model refuses */
    wrk_engine_opts_t bad_mix = {"cuda:0,dtype=f16,residual=bf16", 0, 0};
    CHECK(wrk_engine_new(dir, &bad_mix, &gpu, &err) == COM_EINVAL && gpu == NULL);
    /* the folded LayerNorm needs binary16 activations: with bf16 it is refused, not ignored */
    wrk_engine_opts_t bf_fold = {"cuda:0,fold=on,dtype=bf16,tune=off", 0, 1024};
    rc = wrk_engine_new(dir, &bf_fold, &gpu, &err);
    CHECK_MSG(rc == COM_EUNSUPPORTED && gpu == NULL && strstr(err.msg, "fold=on"),
              "fold=on with dtype=bf16: rc %d (%s)", rc, err.msg);
    /* ... while auto, the default, just runs the plain pass */
    wrk_engine_opts_t bf_auto = {"cuda:0,dtype=bf16,tune=off", 0, 1024};
    rc = wrk_engine_new(dir, &bf_auto, &gpu, &err);
    CHECK_MSG(rc == 0, "dtype=bf16, fold auto: %s", err.msg);
    if (rc == 0) {
        wrk_cuda_stats_t st;
        CHECK(wrk_engine_cuda_stats(gpu, &st, &err) == 0 && st.fold_max == 0);
        wrk_engine_destroy(&gpu);
    }
    wrk_engine_destroy(&cpu);
    test_rm_tree(scratch);
    return test_finish();
}
