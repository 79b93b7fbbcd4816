/* tests/test_engine_cpu.c — the CPU engine (worker/engine.h, device "cpu") against
 * sentence-transformers, whose outputs tests/reference/make_embedding_fixture.py stored in
 * tests/fixtures/minilm_st_reference.bin (format in that script): ST's token ids go through the
 * engine in ragged batches of 1, 7, 64 and all texts (also with a small max_batch_tokens that
 * forces internal splitting, and one thread), and every embedding must reach cosine >= 0.99999
 * and max |diff| <= 1e-4 (raw, unnormalised vectors: 1e-4 relative to their max |value| when that
 * is above 1). Then: Matryoshka (out_dim 128, re-normalised), raw pooled outputs, bad batches
 * (COM_EINVAL, nothing queued, the engine keeps working), many batches in flight completing in
 * order, destroying the engine and results with work in flight, the same weights under CLS and
 * last-token pooling (whose last layer computes only the pooled rows), and our tokenizer
 * reproducing ST's ids. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "kernels/blas_core.h"
#include "tests/test_util.h"
#include "common/tokenizer.h"
#include "worker/engine.h"

typedef struct rec {
    uint32_t kind, dim;
    const char *text;
    uint32_t n_text;
    int32_t *ids;
    int32_t n_ids;
    float *emb;
} rec_t;

static rec_t *g_recs;
static int32_t g_n;
static unsigned char *g_buf;

static uint32_t s_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int s_load_fixture(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    g_buf = malloc((size_t)len);
    if (fread(g_buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        return -1;
    }
    fclose(f);
    if (len < 24 || memcmp(g_buf, "EMBFIX01", 8) != 0)
        return -1;
    g_n = (int32_t)s_u32(g_buf + 8);
    g_recs = calloc((size_t)g_n, sizeof *g_recs);
    size_t o = 24;
    for (int32_t i = 0; i < g_n; i++) {
        rec_t *r = &g_recs[i];
        if (o + 16 > (size_t)len)
            return -1;
        r->kind = s_u32(g_buf + o);
        r->dim = s_u32(g_buf + o + 4);
        r->n_text = s_u32(g_buf + o + 8);
        r->n_ids = (int32_t)s_u32(g_buf + o + 12);
        o += 16;
        if (o + r->n_text + 4 * ((size_t)r->n_ids + r->dim) > (size_t)len)
            return -1;
        r->text = (const char *)g_buf + o;
        o += r->n_text;
        r->ids = malloc((size_t)r->n_ids * sizeof *r->ids);
        for (int32_t j = 0; j < r->n_ids; j++)
            r->ids[j] = (int32_t)s_u32(g_buf + o + 4 * (size_t)j);
        o += 4 * (size_t)r->n_ids;
        r->emb = malloc(r->dim * sizeof *r->emb);
        for (uint32_t j = 0; j < r->dim; j++) {
            uint32_t b = s_u32(g_buf + o + 4 * (size_t)j);
            memcpy(&r->emb[j], &b, 4);
        }
        o += 4 * (size_t)r->dim;
    }
    return o == (size_t)len ? 0 : -1;
}

/* Worst values over a run. */
typedef struct worst {
    double cos, abs;
    int32_t n;
} worst_t;

/* Submits the records idx[0..n) of the fixture as one packed batch. */
static wrk_result_t *s_submit(wrk_engine_t *e, const int32_t *idx, int32_t n, int32_t out_dim,
                              int32_t normalize) {
    int32_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += g_recs[idx[i]].n_ids;
    int32_t *ids = malloc((size_t)total * sizeof *ids), *cu = malloc(((size_t)n + 1) * 4);
    cu[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        memcpy(ids + cu[i], g_recs[idx[i]].ids, (size_t)g_recs[idx[i]].n_ids * 4);
        cu[i + 1] = cu[i] + g_recs[idx[i]].n_ids;
    }
    wrk_batch_t b = {n, total, ids, NULL, cu, out_dim, normalize};
    wrk_result_t *r = NULL;
    com_error_t err = {0};
    int rc = wrk_engine_submit(e, &b, &r, &err);
    CHECK_MSG(rc == 0 && r, "submit: %s", err.msg);
    free(ids); /* the engine copied them */
    free(cu);
    return r;
}

static void s_compare(wrk_result_t *r, const int32_t *idx, int32_t n, worst_t *w) {
    com_error_t err = {0};
    int rc = wrk_result_wait(r, &err);
    CHECK_MSG(rc == 0, "wait: %s", err.msg);
    int32_t ns = 0, dim = 0;
    const float *emb = wrk_result_embeddings(r, &ns, &dim);
    CHECK(emb != NULL && ns == n);
    if (!emb || ns != n)
        return;
    for (int32_t i = 0; i < n; i++) {
        const rec_t *rec = &g_recs[idx[i]];
        CHECK((uint32_t)dim == rec->dim);
        if ((uint32_t)dim != rec->dim)
            return;
        const float *got = emb + (size_t)i * dim;
        double cos = test_cosine_f32(got, rec->emb, rec->dim), mx = 0, scale = 1;
        for (uint32_t j = 0; j < rec->dim; j++) {
            double d = fabs((double)got[j] - rec->emb[j]);
            mx = d > mx ? d : mx;
            scale = fabs(rec->emb[j]) > scale ? fabs(rec->emb[j]) : scale;
        }
        const double tol = 1e-4 * scale;
        CHECK_MSG(cos >= 0.99999 && mx <= tol,
                  "record %d (kind %u, %d tokens): cosine %.7f, max |diff| %.3g (tol %.3g)",
                  (int)idx[i], rec->kind, (int)rec->n_ids, cos, mx, tol);
        if (cos < w->cos)
            w->cos = cos;
        if (mx / scale > w->abs)
            w->abs = mx / scale;
        w->n++;
    }
}

/* Runs all records of `kind` in batches of `bs` (all submitted before the first wait: many in
 * flight, completing in order). */
static void s_run_kind(wrk_engine_t *e, uint32_t kind, int32_t bs, int32_t out_dim,
                       int32_t normalize, worst_t *w) {
    int32_t *idx = malloc((size_t)g_n * sizeof *idx), n = 0;
    for (int32_t i = 0; i < g_n; i++)
        if (g_recs[i].kind == kind)
            idx[n++] = i;
    if (bs <= 0)
        bs = n;
    int32_t nb = (n + bs - 1) / bs;
    wrk_result_t **rs = calloc((size_t)nb, sizeof *rs);
    for (int32_t b = 0; b < nb; b++) {
        int32_t cnt = n - b * bs < bs ? n - b * bs : bs;
        rs[b] = s_submit(e, idx + b * bs, cnt, out_dim, normalize);
    }
    /* completion is in submission order: once the last is done, all earlier ones are too. The
     * wait spins (long: the result usually lands while spinning; 1 us: it then blocks) */
    for (int32_t b = nb - 1; b >= 0; b--) {
        if (rs[b] && b == nb - 1)
            CHECK(wrk_result_wait_spin(rs[b], kind % 2 ? 100000 : 1, NULL) == 0);
        if (rs[b])
            CHECK(wrk_result_poll(rs[b]) == 1);
    }
    for (int32_t b = 0; b < nb; b++) {
        int32_t cnt = n - b * bs < bs ? n - b * bs : bs;
        if (rs[b])
            s_compare(rs[b], idx + b * bs, cnt, w);
        wrk_result_destroy(&rs[b]);
        CHECK(rs[b] == NULL);
    }
    free(rs);
    free(idx);
}

static void s_expect_einval(wrk_engine_t *e, const wrk_batch_t *b, const char *what) {
    wrk_result_t *r = (wrk_result_t *)(uintptr_t)1;
    com_error_t err = {0};
    int rc = wrk_engine_submit(e, b, &r, &err);
    CHECK_MSG(rc == COM_EINVAL && r == NULL && err.code == COM_EINVAL && err.msg[0],
              "%s: rc %d (%s)", what, rc, err.msg);
    printf("  bad batch (%s): %s\n", what, err.msg);
}

static void test_validation(wrk_engine_t *e) {
    const com_model_info_t *mi = wrk_engine_model(e);
    int32_t ids[600], cu[4] = {0, 3, 5, 8};
    for (int i = 0; i < 600; i++)
        ids[i] = 1000 + i;
    ids[0] = 101;
    wrk_batch_t good = {3, 8, ids, NULL, cu, 0, -1};
    wrk_batch_t b = good;
    b.n_tokens = 7;
    s_expect_einval(e, &b, "n_tokens mismatch");
    int32_t cu0[4] = {0, 3, 3, 8};
    b = good;
    b.cu_seqlens = cu0;
    s_expect_einval(e, &b, "zero-length sequence");
    int32_t cud[4] = {0, 5, 3, 8};
    b = good;
    b.cu_seqlens = cud;
    s_expect_einval(e, &b, "decreasing cu_seqlens");
    int32_t cu1[4] = {1, 3, 5, 8};
    b = good;
    b.cu_seqlens = cu1;
    s_expect_einval(e, &b, "cu_seqlens[0] != 0");
    ids[4] = mi->vocab_size;
    b = good;
    s_expect_einval(e, &b, "id == vocab_size");
    ids[4] = -1;
    s_expect_einval(e, &b, "negative id");
    ids[4] = 2000;
    int32_t types[8] = {0, 0, 0, 0, 2, 0, 0, 0};
    b = good;
    b.type_ids = types;
    s_expect_einval(e, &b, "type id out of range");
    int32_t cul[2] = {0, mi->max_position_embeddings + 1};
    wrk_batch_t lb = {1, mi->max_position_embeddings + 1, ids, NULL, cul, 0, -1};
    s_expect_einval(e, &lb, "sequence over max_position_embeddings");
    b = good;
    b.n_seqs = 0;
    s_expect_einval(e, &b, "zero sequences");
    b = good;
    b.out_dim = mi->embedding_dim + 1;
    s_expect_einval(e, &b, "out_dim too large");
    b = good;
    b.normalize = 2;
    s_expect_einval(e, &b, "normalize 2");
    b = good;
    b.token_ids = NULL;
    s_expect_einval(e, &b, "NULL ids");
    s_expect_einval(e, NULL, "NULL batch");

    /* the engine still works, and type ids 0/1 are accepted */
    types[4] = 1;
    b = good;
    b.type_ids = types;
    wrk_result_t *r = NULL;
    com_error_t err = {0};
    CHECK(wrk_engine_submit(e, &b, &r, &err) == 0);
    CHECK(wrk_result_wait(r, &err) == 0);
    int32_t ns = 0, dim = 0;
    const float *emb = wrk_result_embeddings(r, &ns, &dim);
    CHECK(emb && ns == 3 && dim == mi->embedding_dim);
    if (emb) {
        double nrm = 0;
        for (int32_t j = 0; j < dim; j++)
            nrm += (double)emb[j] * emb[j];
        CHECK(fabs(sqrt(nrm) - 1.0) < 1e-5); /* normalize -1: the model says Normalize */
    }
    wrk_result_destroy(&r);
    /* type ids change the result */
    b.type_ids = NULL;
    wrk_result_t *r2 = NULL;
    CHECK(wrk_engine_submit(e, &b, &r2, &err) == 0);
    b.type_ids = types;
    CHECK(wrk_engine_submit(e, &b, &r, &err) == 0);
    const float *e1 = NULL, *e2 = NULL;
    if (wrk_result_wait(r, NULL) == 0 && wrk_result_wait(r2, NULL) == 0) {
        e1 = wrk_result_embeddings(r, NULL, NULL);
        e2 = wrk_result_embeddings(r2, NULL, NULL);
    }
    CHECK(e1 && e2);
    if (e1 && e2) {
        int32_t D = mi->embedding_dim;
        CHECK(memcmp(e1, e2, (size_t)D * 4) == 0);         /* seq 0: same types */
        CHECK(memcmp(e1 + D, e2 + D, (size_t)D * 4) != 0); /* seq 1: token 4 has type 1 */
    }
    wrk_result_destroy(&r);
    wrk_result_destroy(&r2);
}

static void test_destroy_in_flight(const char *model_dir) {
    wrk_engine_t *e = NULL;
    com_error_t err = {0};
    wrk_engine_opts_t o = {"cpu", 0, 2048};
    CHECK_MSG(wrk_engine_new(model_dir, &o, &e, &err) == 0, "%s", err.msg);
    if (!e)
        return;
    int32_t idx[64];
    for (int i = 0; i < 64; i++)
        idx[i] = i;
    enum { N = 6 };
    wrk_result_t *rs[N];
    for (int i = 0; i < N; i++)
        rs[i] = s_submit(e, idx + i * 8, 8, 0, -1);
    /* destroy one result while it is (very likely) still queued: waits, then frees */
    wrk_result_destroy(&rs[N - 1]);
    CHECK(rs[N - 1] == NULL);
    wrk_result_t *late = s_submit(e, idx, 3, 0, -1);
    wrk_engine_destroy(&e); /* drains the rest */
    CHECK(e == NULL);
    worst_t w = {1.0, 0.0, 0};
    for (int i = 0; i < N - 1; i++) {
        CHECK(rs[i] && wrk_result_poll(rs[i]) == 1);
        if (rs[i])
            s_compare(rs[i], idx + i * 8, 8, &w);
        wrk_result_destroy(&rs[i]);
    }
    CHECK(late && wrk_result_poll(late) == 1);
    if (late)
        s_compare(late, idx, 3, &w);
    wrk_result_destroy(&late);
    CHECK(w.n == (N - 1) * 8 + 3);
    wrk_engine_destroy(&e); /* NULL is fine */
    wrk_result_destroy(NULL);
}

/* The model's weights under CLS pooling + Normalize (fixture kind 3, as the bge models pool) and
 * last-token pooling, raw (kind 4): the engine's last layer then computes only the pooled rows
 * past its QKV (worker/model_bert.c). A model directory of links to the real files with its own
 * modules.json and 1_Pooling/config.json; batches of 1, 7 and all, and one thread with a small
 * workspace that splits the batch. */
static void test_row_pooling(const char *model_dir) {
    char scratch[4096], dir[4200];
    static const char *const own[] = {"modules.json", "1_Pooling"};
    bool ok = test_scratch_dir("ember-rowpool", scratch, sizeof scratch) == 0;
    snprintf(dir, sizeof dir, "%s/model", scratch);
    ok = ok && test_link_model(model_dir, dir, own, 2) == 0;
    CHECK_MSG(ok, "model directory %s", dir);
    static const struct {
        uint32_t kind;
        const char *flag;
        bool normalize;
    } cases[] = {{3, "pooling_mode_cls_token", true}, {4, "pooling_mode_lasttoken", false}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases && ok; c++) {
        CHECK(test_write_pooling(dir, 384, cases[c].flag, cases[c].normalize) == 0);
        static const wrk_engine_opts_t small = {"cpu", 1, 600};
        for (int o = 0; o < 2; o++) {
            wrk_engine_t *e = NULL;
            com_error_t err = {0};
            const int rc = wrk_engine_new(dir, o ? &small : NULL, &e, &err);
            CHECK_MSG(rc == 0, "engine (%s): %s", cases[c].flag, err.msg);
            if (rc != 0)
                continue;
            CHECK(wrk_engine_model(e)->pooling ==
                  (cases[c].kind == 3 ? COM_POOL_CLS : COM_POOL_LAST));
            static const int32_t sizes[] = {1, 7, 0};
            for (size_t i = o ? 2 : 0; i < sizeof sizes / sizeof *sizes; i++) {
                worst_t w = {1.0, 0.0, 0};
                s_run_kind(e, cases[c].kind, sizes[i], 0, -1, &w);
                printf("%s, %s, batches of %s: %d embeddings, worst 1-cosine %.2e, max |diff| / "
                       "max(1,|ref|) %.3g\n",
                       cases[c].kind == 3 ? "CLS pooling + Normalize" : "last-token pooling, raw",
                       o ? "1 thread, max_batch_tokens 600" : "default",
                       sizes[i] == 1   ? "1"
                       : sizes[i] == 7 ? "7"
                                       : "all",
                       (int)w.n, 1.0 - w.cos, w.abs);
                CHECK(w.n == 40);
            }
            wrk_engine_destroy(&e);
        }
    }
    test_rm_tree(scratch);
}

static void test_tokenizer_ids(const char *model_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", model_dir);
    com_tokenizer_t *tok = NULL;
    com_error_t err = {0};
    int rc = com_tokenizer_load(path, &tok, &err);
    CHECK_MSG(rc == 0, "tokenizer: %s", err.msg);
    if (rc != 0)
        return;
    com_encoding_t enc;
    com_encoding_init(&enc);
    com_encode_opts_t o = com_encode_opts_default();
    o.max_length = 256;
    o.truncate = true;
    o.add_special_tokens = true;
    int32_t n_texts = 0, n_same = 0;
    for (int32_t i = 0; i < g_n; i++) {
        const rec_t *r = &g_recs[i];
        if (r->kind != 0)
            continue;
        n_texts++;
        rc = com_tokenizer_encode(tok, r->text, r->n_text, &o, &enc, &err);
        bool same = rc == 0 && enc.len == r->n_ids &&
                    memcmp(enc.ids, r->ids, (size_t)r->n_ids * sizeof *r->ids) == 0;
        if (same)
            n_same++;
        else if (n_texts - n_same <= 5)
            fprintf(stderr, "  tokenizer differs from ST on text %d (%d vs %d ids): %.80s\n",
                    (int)i, (int)enc.len, (int)r->n_ids, r->text);
    }
    printf("tokenizer: %d of %d texts give ST's ids\n", (int)n_same, (int)n_texts);
    CHECK(n_texts > 0 && n_same == n_texts);
    com_encoding_free(&enc);
    com_tokenizer_destroy(&tok);
}

int main(void) {
    kern_blas_reexec_for_core();
    /* from here OpenBLAS runs the newest kernels this CPU can (kernels/blas_core.h) */
    CHECK_MSG(kern_blas_better_core() == NULL,
              "OpenBLAS still runs its %s kernels, not its %s ones", openblas_get_corename(),
              kern_blas_better_core());
    test_require_model();
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/minilm_st_reference.bin", test_source_dir());
    if (s_load_fixture(path) != 0) {
        fprintf(stderr, "FATAL: cannot read fixture %s\n", path);
        return 1;
    }
    const char *model_dir = test_model_dir();
    wrk_engine_t *e = NULL;
    com_error_t err = {0};
    int rc = wrk_engine_new(model_dir, NULL, &e, &err);
    CHECK_MSG(rc == 0, "engine: %s", err.msg);
    if (rc != 0)
        return test_finish();
    static const int32_t sizes[] = {1, 7, 64, 0};
    worst_t all = {1.0, 0.0, 0};
    for (size_t i = 0; i < 4; i++) {
        worst_t w = {1.0, 0.0, 0};
        s_run_kind(e, 0, sizes[i], 0, -1, &w);
        printf("full 384-d, batches of %-4s: %d embeddings, worst 1-cosine %.2e, max |diff| %.3g\n",
               sizes[i] ? (sizes[i] == 1   ? "1"
                           : sizes[i] == 7 ? "7"
                                           : "64")
                        : "all",
               (int)w.n, 1.0 - w.cos, w.abs);
        all.cos = w.cos < all.cos ? w.cos : all.cos;
        all.abs = w.abs > all.abs ? w.abs : all.abs;
        all.n += w.n;
    }
    worst_t wm = {1.0, 0.0, 0}, wr = {1.0, 0.0, 0};
    s_run_kind(e, 1, 7, 128, 1, &wm);
    printf("matryoshka 128-d (normalize 1): %d, worst 1-cosine %.2e, max |diff| %.3g\n", (int)wm.n,
           1.0 - wm.cos, wm.abs);
    s_run_kind(e, 2, 64, 0, 0, &wr);
    printf("raw pooled (normalize 0): %d, worst 1-cosine %.2e, max |diff| / max(1,|ref|) %.3g\n",
           (int)wr.n, 1.0 - wr.cos, wr.abs);
    CHECK(wm.n == 20 && wr.n == 20);
    test_validation(e);
    {
        /* the event fd became readable after the completions above */
        int fd = wrk_engine_event_fd(e);
        uint64_t cnt = 0;
        CHECK(fd >= 0 && read(fd, &cnt, sizeof cnt) == (ssize_t)sizeof cnt && cnt > 0);
        CHECK(read(fd, &cnt, sizeof cnt) < 0); /* cleared, non-blocking */
    }
    wrk_engine_destroy(&e);

    /* one thread, small workspace: a batch of all texts is split internally */
    wrk_engine_opts_t o = {"cpu", 1, 600};
    rc = wrk_engine_new(model_dir, &o, &e, &err);
    CHECK_MSG(rc == 0, "engine (1 thread, 600 tokens): %s", err.msg);
    if (rc == 0) {
        worst_t w = {1.0, 0.0, 0};
        s_run_kind(e, 0, 0, 0, -1, &w);
        printf("1 thread, max_batch_tokens 600, one batch of all: worst 1-cosine %.2e, max |diff| "
               "%.3g\n",
               1.0 - w.cos, w.abs);
        all.cos = w.cos < all.cos ? w.cos : all.cos;
        all.abs = w.abs > all.abs ? w.abs : all.abs;
        wrk_engine_destroy(&e);
    }
    printf("OVERALL worst 1-cosine %.2e, max |diff| %.3g over %d full embeddings\n", 1.0 - all.cos,
           all.abs, (int)all.n);

    wrk_engine_opts_t bad = {.device = "cuda:99"}; /* no such GPU, with or without CUDA */
    CHECK(wrk_engine_new(model_dir, &bad, &e, &err) == COM_EUNSUPPORTED && e == NULL);
    /* malformed device strings are invalid arguments (the worker's usage error), whatever the
     * build */
    static const char *const malformed[] = {"gpu", "cuda:", "cuda:x", "cuda:1x", "cudax", "CPU"};
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
        wrk_engine_opts_t m = {.device = malformed[i]};
        CHECK_MSG(wrk_engine_new(model_dir, &m, &e, &err) == COM_EINVAL && e == NULL,
                  "device \"%s\" is COM_EINVAL", malformed[i]);
    }
    CHECK(wrk_engine_new("/nonexistent/model", NULL, &e, &err) != 0 && e == NULL);

    test_destroy_in_flight(model_dir);
    test_row_pooling(model_dir);
    test_tokenizer_ids(model_dir);
    for (int32_t i = 0; i < g_n; i++) {
        free(g_recs[i].ids);
        free(g_recs[i].emb);
    }
    free(g_recs);
    free(g_buf);
    return test_finish();
}
