/* tests/test_broker_tokpool.c — the broker's tokenizer pool (broker/broker_tokpool.h) with the
 * real tokenizer: many jobs over several threads come back complete and identical to direct
 * encoding; pairs give first-segment lengths; an over-long input without truncation fails
 * with COM_ETOOLONG naming the input; destroying the pool with jobs still out is clean. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "broker/broker_tokpool.h"
#include "common/clock.h"
#include "tests/test_util.h"

#define NJOBS 40
#define PER   25

static brk_tok_job_t *s_wait(brk_tokpool_t *pool) {
    int64_t end = com_clock_mono_us() + 10 * 1000000LL;
    while (com_clock_mono_us() < end) {
        zmq_pollitem_t it = {brk_tokpool_socket(pool), 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 100);
        brk_tok_job_t *job = NULL;
        if (brk_tokpool_recv(pool, &job) == 0)
            return job;
    }
    return NULL;
}

int main(void) {
    test_require_model();
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", test_model_dir());
    com_tokenizer_t *tok = NULL;
    com_error_t err = {0};
    if (com_tokenizer_load(path, &tok, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    void *ctx = zmq_ctx_new();
    brk_tokpool_t *pool = NULL;
    CHECK(brk_tokpool_new(ctx, tok, 0, &pool, &err) == COM_EINVAL && pool == NULL);
    CHECK(brk_tokpool_new(ctx, tok, 3, &pool, &err) == 0 && pool);
    CHECK(brk_tokpool_threads(pool) == 3);

    /* many jobs */
    static char texts[NJOBS * PER][96];
    com_proto_str_t *in = malloc(sizeof(com_proto_str_t) * NJOBS * PER);
    for (int i = 0; i < NJOBS * PER; i++) {
        snprintf(texts[i], sizeof texts[i], "Sentence %d: the quick brown fox %s", i,
                 i % 2 ? "jumps over the lazy dog" : "naïve café — ünïcödé");
        in[i] = (com_proto_str_t){texts[i], (uint32_t)strlen(texts[i])};
    }
    brk_tok_job_t *jobs[NJOBS];
    for (int j = 0; j < NJOBS; j++) {
        jobs[j] = calloc(1, sizeof **jobs);
        jobs[j]->rid = (uint64_t)j;
        jobs[j]->first = (uint32_t)(j * PER);
        jobs[j]->n = PER;
        jobs[j]->texts = in + j * PER;
        jobs[j]->opts = com_encode_opts_default();
        jobs[j]->opts.max_length = 256;
        CHECK(brk_tokpool_submit(pool, jobs[j], &err) == 0);
    }
    int back = 0, bad = 0;
    com_encoding_t enc;
    com_encoding_init(&enc);
    com_encode_opts_t o = com_encode_opts_default();
    o.max_length = 256;
    for (int k = 0; k < NJOBS; k++) {
        brk_tok_job_t *job = s_wait(pool);
        if (!job)
            break;
        back++;
        CHECK(job == jobs[job->rid] && job->rc == 0);
        uint64_t at = 0;
        for (uint32_t i = 0; i < job->n; i++) {
            const char *t = texts[job->first + i];
            com_tokenizer_encode(tok, t, strlen(t), &o, &enc, NULL);
            if (job->lens[i] != (uint32_t)enc.len ||
                memcmp(job->ids + at, enc.ids, (size_t)enc.len * sizeof(int32_t)) != 0)
                bad++;
            at += job->lens[i];
        }
        CHECK(at == job->n_tokens);
    }
    CHECK_MSG(back == NJOBS, "%d of %d jobs back", back, NJOBS);
    CHECK_MSG(bad == 0, "%d inputs differ", bad);
    for (int j = 0; j < NJOBS; j++)
        brk_tok_job_destroy(&jobs[j]);
    CHECK(jobs[0] == NULL);

    /* pairs: first-segment lengths */
    {
        com_proto_str_t pair[4] = {
            {"what is ember?", 14}, {"a C embedding server", 20}, {"q", 1}, {"d", 1}};
        brk_tok_job_t *job = calloc(1, sizeof *job);
        job->n = 2;
        job->texts = pair;
        job->pairs = true;
        job->opts = o;
        CHECK(brk_tokpool_submit(pool, job, &err) == 0);
        brk_tok_job_t *got = s_wait(pool);
        CHECK(got == job && job->rc == 0 && job->seg);
        if (got == job && job->rc == 0) {
            com_tokenizer_encode_pair(tok, pair[0].ptr, pair[0].len, pair[1].ptr, pair[1].len, &o,
                                      &enc, NULL);
            uint32_t s = 0;
            while (s < (uint32_t)enc.len && enc.type_ids[s] == 0)
                s++;
            CHECK(job->lens[0] == (uint32_t)enc.len && job->seg[0] == s && s > 2 &&
                  s < job->lens[0]);
            CHECK(job->seg[1] == 3 && job->lens[1] == 5); /* [CLS] q [SEP] d [SEP] */
        }
        brk_tok_job_destroy(&job);
    }
    /* too long without truncation */
    {
        static char longtext[40000];
        for (size_t i = 0; i < sizeof longtext - 1; i++)
            longtext[i] = i % 4 == 3 ? ' ' : 'x';
        com_proto_str_t two[2] = {{"short", 5}, {longtext, (uint32_t)strlen(longtext)}};
        brk_tok_job_t *job = calloc(1, sizeof *job);
        job->first = 10;
        job->n = 2;
        job->texts = two;
        job->opts = o;
        job->opts.truncate = false;
        CHECK(brk_tokpool_submit(pool, job, &err) == 0);
        CHECK(s_wait(pool) == job && job->rc == COM_ETOOLONG && job->bad_index == 11 &&
              job->errmsg[0]);
        brk_tok_job_destroy(&job);
    }
    /* destroy with jobs still out: the threads stop, the jobs stay ours */
    brk_tok_job_t *left[8];
    for (int j = 0; j < 8; j++) {
        left[j] = calloc(1, sizeof **left);
        left[j]->n = PER;
        left[j]->texts = in;
        left[j]->opts = o;
        brk_tokpool_submit(pool, left[j], &err);
    }
    brk_tokpool_destroy(&pool);
    CHECK(pool == NULL);
    brk_tokpool_destroy(&pool);
    for (int j = 0; j < 8; j++)
        brk_tok_job_destroy(&left[j]);
    com_encoding_free(&enc);
    free(in);
    zmq_ctx_term(ctx);
    com_tokenizer_destroy(&tok);
    return test_finish();
}
