/* broker/broker_tokpool.c — the tokenizer thread pool (see broker_tokpool.h).
 *
 * Threads: brk_tokpool_new/submit/recv/destroy run on the main thread; s_thread_main runs on
 * each pool thread, with its own PULL (jobs in) and PUSH (jobs out) sockets and its own
 * com_encoding_t. A job pointer crosses threads only through the inproc sockets, which give
 * the happens-before ordering (ZeroMQ pipes are lock-free queues with release/acquire).
 * Stopping: the main thread sets `stop` and each thread notices within one poll period
 * (S_POLL_MS); jobs left in the pipes are simply dropped (their requests own them). */
#include "broker/broker_tokpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "common/log.h"

#define S_POLL_MS 50

typedef struct s_thread {
    struct brk_tokpool *pool;
    pthread_t th;
    bool started;
    int32_t index;
} s_thread_t;

struct brk_tokpool {
    void *zctx;
    const com_tokenizer_t *tok;
    void *push; /* main: jobs out to threads (bound) */
    void *pull; /* main: finished jobs in (bound) */
    char in_ep[64], out_ep[64];
    s_thread_t *threads;
    int32_t n_threads;
    atomic_int stop;
};

/* Grows *buf (elements of size sz) to hold at least need elements. */
static int s_grow(void **buf, size_t *cap, size_t need, size_t sz) {
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*buf, nc * sz);
    if (!p)
        return COM_ENOMEM;
    *buf = p;
    *cap = nc;
    return 0;
}

/* Tokenizes job's inputs with enc; fills the outputs. Pool thread. */
static void s_run_job(const com_tokenizer_t *tok, brk_tok_job_t *job, com_encoding_t *enc) {
    com_error_t err = {0};
    size_t cap = 0;
    job->lens = calloc(job->n ? job->n : 1, sizeof *job->lens);
    if (job->pairs)
        job->seg = calloc(job->n ? job->n : 1, sizeof *job->seg);
    if (!job->lens || (job->pairs && !job->seg)) {
        job->rc = COM_ENOMEM;
        snprintf(job->errmsg, sizeof job->errmsg, "tokenizer: out of memory");
        return;
    }
    for (uint32_t i = 0; i < job->n; i++) {
        int rc;
        if (job->pairs) {
            const com_proto_str_t *a = &job->texts[2 * i], *b = &job->texts[2 * i + 1];
            rc = com_tokenizer_encode_pair(tok, a->ptr ? a->ptr : "", a->len, b->ptr ? b->ptr : "",
                                           b->len, &job->opts, enc, &err);
        } else {
            const com_proto_str_t *t = &job->texts[i];
            rc = com_tokenizer_encode(tok, t->ptr ? t->ptr : "", t->len, &job->opts, enc, &err);
        }
        if (rc != 0) {
            job->rc = rc;
            job->bad_index = job->first + i;
            snprintf(job->errmsg, sizeof job->errmsg, "%.200s", err.msg);
            return;
        }
        if (s_grow((void **)&job->ids, &cap, job->n_tokens + (size_t)enc->len, sizeof(int32_t))) {
            job->rc = COM_ENOMEM;
            snprintf(job->errmsg, sizeof job->errmsg, "tokenizer: out of memory");
            return;
        }
        memcpy(job->ids + job->n_tokens, enc->ids, (size_t)enc->len * sizeof(int32_t));
        job->n_tokens += (uint64_t)enc->len;
        job->lens[i] = (uint32_t)enc->len;
        if (job->pairs) {
            uint32_t s = 0;
            while (s < (uint32_t)enc->len && enc->type_ids[s] == 0)
                s++;
            job->seg[i] = s;
        }
    }
    job->rc = 0;
}

void brk_tok_job_run(const com_tokenizer_t *tok, brk_tok_job_t *job, com_encoding_t *enc) {
    s_run_job(tok, job, enc);
}

static void *s_thread_main(void *arg) {
    s_thread_t *t = arg;
    struct brk_tokpool *pool = t->pool;
    void *in = zmq_socket(pool->zctx, ZMQ_PULL);
    void *out = zmq_socket(pool->zctx, ZMQ_PUSH);
    int zero = 0;
    com_encoding_t enc;
    com_encoding_init(&enc);
    if (!in || !out)
        goto done;
    zmq_setsockopt(in, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(out, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(in, ZMQ_RCVHWM, &zero, sizeof zero);
    zmq_setsockopt(out, ZMQ_SNDHWM, &zero, sizeof zero);
    if (zmq_connect(in, pool->in_ep) != 0 || zmq_connect(out, pool->out_ep) != 0) {
        COM_ERROR("tokpool: thread %d cannot connect: %s", t->index, zmq_strerror(errno));
        goto done;
    }
    /* Hello (a NULL job): brk_tokpool_new waits for one per thread, so that every thread's
     * pipe exists before the first submit (a PUSH with no peer refuses to send). */
    {
        brk_tok_job_t *hello = NULL;
        zmq_send(out, &hello, sizeof hello, 0);
    }
    while (!atomic_load(&pool->stop)) {
        zmq_pollitem_t it = {in, 0, ZMQ_POLLIN, 0};
        int n = zmq_poll(&it, 1, S_POLL_MS);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break; /* context terminated */
        }
        if (n == 0)
            continue;
        brk_tok_job_t *job = NULL;
        int got = zmq_recv(in, &job, sizeof job, ZMQ_DONTWAIT);
        if (got != (int)sizeof job || !job)
            continue;
        s_run_job(pool->tok, job, &enc);
        /* HWM 0: never blocks for lack of room; fails only when the context is closing. */
        while (zmq_send(out, &job, sizeof job, 0) < 0 && errno == EINTR) {
        }
    }
done:
    com_encoding_free(&enc);
    if (in)
        zmq_close(in);
    if (out)
        zmq_close(out);
    return NULL;
}

int brk_tokpool_new(void *zctx, const com_tokenizer_t *tok, int32_t n_threads, brk_tokpool_t **out,
                    com_error_t *err) {
    *out = NULL;
    if (!zctx || !tok || n_threads < 1 || n_threads > 256)
        return com_error_set(err, COM_EINVAL, "tokpool: bad arguments (threads %d)", n_threads);
    brk_tokpool_t *p = calloc(1, sizeof *p);
    if (!p)
        return com_error_set(err, COM_ENOMEM, "tokpool: out of memory");
    int zero = 0, rc = COM_EINTERNAL;
    p->zctx = zctx;
    p->tok = tok;
    atomic_init(&p->stop, 0);
    snprintf(p->in_ep, sizeof p->in_ep, "inproc://brk-tok-in-%p", (void *)p);
    snprintf(p->out_ep, sizeof p->out_ep, "inproc://brk-tok-out-%p", (void *)p);
    p->push = zmq_socket(zctx, ZMQ_PUSH);
    p->pull = zmq_socket(zctx, ZMQ_PULL);
    if (!p->push || !p->pull) {
        com_error_set(err, COM_EINTERNAL, "tokpool: zmq_socket: %s", zmq_strerror(errno));
        goto err;
    }
    zmq_setsockopt(p->push, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(p->pull, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(p->push, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(p->pull, ZMQ_RCVHWM, &zero, sizeof zero);
    if (zmq_bind(p->push, p->in_ep) != 0 || zmq_bind(p->pull, p->out_ep) != 0) {
        com_error_set(err, COM_EINTERNAL, "tokpool: bind: %s", zmq_strerror(errno));
        goto err;
    }
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        rc = com_error_set(err, COM_ENOMEM, "tokpool: out of memory");
        goto err;
    }
    p->n_threads = n_threads;
    for (int32_t i = 0; i < n_threads; i++) {
        p->threads[i].pool = p;
        p->threads[i].index = i;
        if (pthread_create(&p->threads[i].th, NULL, s_thread_main, &p->threads[i]) != 0) {
            com_error_set(err, COM_EINTERNAL, "tokpool: cannot start thread %d", i);
            goto err;
        }
        p->threads[i].started = true;
    }
    for (int32_t got = 0; got < n_threads;) {
        zmq_pollitem_t it = {p->pull, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, 10000) <= 0) {
            com_error_set(err, COM_EINTERNAL, "tokpool: threads did not start (%d of %d)", got,
                          n_threads);
            goto err;
        }
        brk_tok_job_t *hello = NULL;
        if (zmq_recv(p->pull, &hello, sizeof hello, ZMQ_DONTWAIT) == (int)sizeof hello && !hello)
            got++;
    }
    *out = p;
    return 0;
err:
    brk_tokpool_destroy(&p);
    return rc == COM_ENOMEM ? rc : COM_EINTERNAL;
}

void brk_tokpool_destroy(brk_tokpool_t **self_p) {
    if (!self_p || !*self_p)
        return;
    brk_tokpool_t *p = *self_p;
    atomic_store(&p->stop, 1);
    for (int32_t i = 0; i < p->n_threads; i++) {
        if (p->threads[i].started)
            pthread_join(p->threads[i].th, NULL);
    }
    free(p->threads);
    if (p->push)
        zmq_close(p->push);
    if (p->pull)
        zmq_close(p->pull);
    free(p);
    *self_p = NULL;
}

int32_t brk_tokpool_threads(const brk_tokpool_t *pool) {
    return pool->n_threads;
}

void *brk_tokpool_socket(brk_tokpool_t *pool) {
    return pool->pull;
}

int brk_tokpool_submit(brk_tokpool_t *pool, brk_tok_job_t *job, com_error_t *err) {
    for (;;) {
        if (zmq_send(pool->push, &job, sizeof job, ZMQ_DONTWAIT) == (int)sizeof job)
            return 0;
        if (errno != EINTR)
            break;
    }
    return com_error_set(err, COM_EINTERNAL, "tokpool: submit: %s", zmq_strerror(errno));
}

int brk_tokpool_recv(brk_tokpool_t *pool, brk_tok_job_t **job) {
    *job = NULL;
    brk_tok_job_t *j = NULL;
    int n = zmq_recv(pool->pull, &j, sizeof j, ZMQ_DONTWAIT);
    if (n != (int)sizeof j || !j)
        return COM_EBUSY;
    *job = j;
    return 0;
}

void brk_tok_job_destroy(brk_tok_job_t **job_p) {
    if (!job_p || !*job_p)
        return;
    brk_tok_job_t *j = *job_p;
    free(j->ids);
    free(j->lens);
    free(j->seg);
    free(j);
    *job_p = NULL;
}
