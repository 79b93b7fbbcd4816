/* broker/broker_main.c — ember-broker: arguments, start-up (model, tokenizer, sockets, pool,
 * registry), signals, the event loop, drain and the exit report. docs/broker.md is the
 * operator's page; docs/pool.md the conventions implemented here.
 *
 * Threads: this file is the main thread. It polls the frontend ROUTER (clients), the backend
 * ROUTER (workers), the tokenizer pool's PULL socket and a self-pipe written by the signal
 * handler; it never blocks elsewhere (tokenization runs on the pool's threads, except for small
 * requests tokenized inline in microseconds; Redis on the registry agent's thread). Timers
 * (heartbeats, worker loss, chunk lateness, deadlines) use the monotonic clock and run when
 * due (every S_TICK_MS while requests are open, and at each heartbeat), not per message; the
 * poll sleeps until the next one.
 *
 * Shutdown: the first SIGTERM/SIGINT starts the drain (new requests get UNAVAILABLE, workers
 * get drain, open requests finish or reach their deadlines); the second fails what is left
 * with UNAVAILABLE. Then workers get disconnect, the registry record is removed, the counters
 * go to stderr as one JSON line and the process exits 0. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/broker.h"
#include "common/zmq_poll_spin.h"
#include "common/clock.h"
#include "common/log.h"

#define S_TICK_MS 10
#define S_BATCH   256 /* messages taken from one socket per loop turn (fairness) */

static int s_sigpipe[2] = {-1, -1};

static void s_on_signal(int sig) {
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    if (write(s_sigpipe[1], &c, 1) < 0) {
        /* pipe full: a signal is already pending */
    }
    errno = saved;
}

void brk_config_defaults(brk_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->tokenizer_threads = 2;
    cfg->chunk_tokens = 2048;
    cfg->max_queued_tokens = 1048576;
    cfg->chunk_timeout_ms = 10000;
    cfg->max_attempts = 3;
    cfg->default_deadline_ms = 30000;
    cfg->max_deadline_ms = 60000;
    cfg->heartbeat_ms = 1000;
    cfg->max_requests = 4096;
}

static void s_usage(FILE *f) {
    fputs("usage: ember-broker --frontend ENDPOINT[,ENDPOINT...] --backend ENDPOINT[,...]\n"
          "         --model DIR\n"
          "         [--redis URL] [--tokenizer-threads N] [--model-name NAME]\n"
          "         [--chunk-tokens N] [--max-queued-tokens N] [--chunk-timeout-ms N]\n"
          "         [--max-attempts N] [--default-deadline-ms N] [--max-deadline-ms N]\n"
          "         [--heartbeat-ms N] [--max-requests N] [--spin-us N] [--id ID]\n"
          "         [--log-level debug|info|warn|error]\n"
          "See docs/broker.md.\n",
          f);
}

static int s_parse_i64(const char *name, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "ember-broker: --%s: expected an integer in [%lld, %lld], got '%s'\n", name,
                (long long)lo, (long long)hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Returns 0, 1 (help printed) or -1 (usage error printed). */
static int s_parse_args(int argc, char **argv, brk_config_t *cfg, int *log_level) {
    enum {
        O_FRONT = 256,
        O_BACK,
        O_MODEL,
        O_REDIS,
        O_TT,
        O_NAME,
        O_CT,
        O_MQT,
        O_CTO,
        O_MA,
        O_DDL,
        O_MDL,
        O_HB,
        O_MR,
        O_SPIN,
        O_ID,
        O_LOG,
        O_HELP
    };
    static const struct option opts[] = {
        {"frontend", required_argument, 0, O_FRONT},
        {"backend", required_argument, 0, O_BACK},
        {"model", required_argument, 0, O_MODEL},
        {"redis", required_argument, 0, O_REDIS},
        {"tokenizer-threads", required_argument, 0, O_TT},
        {"model-name", required_argument, 0, O_NAME},
        {"chunk-tokens", required_argument, 0, O_CT},
        {"max-queued-tokens", required_argument, 0, O_MQT},
        {"chunk-timeout-ms", required_argument, 0, O_CTO},
        {"max-attempts", required_argument, 0, O_MA},
        {"default-deadline-ms", required_argument, 0, O_DDL},
        {"max-deadline-ms", required_argument, 0, O_MDL},
        {"heartbeat-ms", required_argument, 0, O_HB},
        {"max-requests", required_argument, 0, O_MR},
        {"spin-us", required_argument, 0, O_SPIN},
        {"id", required_argument, 0, O_ID},
        {"log-level", required_argument, 0, O_LOG},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    int c;
    int64_t v = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        const char *name = NULL;
        for (const struct option *o = opts; o->name; o++)
            if (o->val == c)
                name = o->name;
        switch (c) {
        case O_FRONT:
            cfg->frontend = optarg;
            break;
        case O_BACK:
            cfg->backend = optarg;
            break;
        case O_MODEL:
            cfg->model_dir = optarg;
            break;
        case O_REDIS:
            cfg->redis_url = optarg;
            break;
        case O_NAME:
            cfg->model_name = optarg;
            break;
        case O_ID:
            if (strlen(optarg) == 0 || strlen(optarg) >= COM_REG_ID_MAX) {
                fprintf(stderr, "ember-broker: --id: 1..%d characters\n", COM_REG_ID_MAX - 1);
                return -1;
            }
            cfg->id = optarg;
            break;
        case O_TT:
            if (s_parse_i64(name, optarg, 1, 256, &v))
                return -1;
            cfg->tokenizer_threads = (int32_t)v;
            break;
        case O_CT:
            if (s_parse_i64(name, optarg, 1, 1 << 22, &v))
                return -1;
            cfg->chunk_tokens = (int32_t)v;
            break;
        case O_MQT:
            if (s_parse_i64(name, optarg, 1, (int64_t)1 << 40, &v))
                return -1;
            cfg->max_queued_tokens = v;
            break;
        case O_CTO:
            if (s_parse_i64(name, optarg, 1, 3600000, &v))
                return -1;
            cfg->chunk_timeout_ms = (int32_t)v;
            break;
        case O_MA:
            if (s_parse_i64(name, optarg, 1, 100, &v))
                return -1;
            cfg->max_attempts = (int32_t)v;
            break;
        case O_DDL:
            if (s_parse_i64(name, optarg, 1, 86400000, &v))
                return -1;
            cfg->default_deadline_ms = (int32_t)v;
            break;
        case O_MDL:
            if (s_parse_i64(name, optarg, 1, 86400000, &v))
                return -1;
            cfg->max_deadline_ms = (int32_t)v;
            break;
        case O_HB:
            if (s_parse_i64(name, optarg, 10, 600000, &v))
                return -1;
            cfg->heartbeat_ms = (int32_t)v;
            break;
        case O_MR:
            if (s_parse_i64(name, optarg, 1, 1 << 20, &v))
                return -1;
            cfg->max_requests = (int32_t)v;
            break;
        case O_SPIN:
            if (s_parse_i64(name, optarg, 0, 100000, &v))
                return -1;
            cfg->spin_us = (int32_t)v;
            break;
        case O_LOG:
            if (!strcmp(optarg, "debug"))
                *log_level = COM_LOG_DEBUG;
            else if (!strcmp(optarg, "info"))
                *log_level = COM_LOG_INFO;
            else if (!strcmp(optarg, "warn"))
                *log_level = COM_LOG_WARN;
            else if (!strcmp(optarg, "error"))
                *log_level = COM_LOG_ERROR;
            else {
                fprintf(stderr, "ember-broker: --log-level: debug, info, warn or error\n");
                return -1;
            }
            break;
        case 'h':
        case O_HELP:
            s_usage(stdout);
            return 1;
        default:
            s_usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ember-broker: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!cfg->frontend || !cfg->backend || !cfg->model_dir) {
        fprintf(stderr, "ember-broker: --frontend, --backend and --model are required\n");
        s_usage(stderr);
        return -1;
    }
    if (cfg->default_deadline_ms > cfg->max_deadline_ms)
        cfg->default_deadline_ms = cfg->max_deadline_ms;
    return 0;
}

/* "tcp://0.0.0.0:5555" -> "tcp://<host>:5555" so that the registry shows a reachable address. */
static void s_advertise(const char *bound, const char *host, char *out, size_t cap) {
    const char *any = strstr(bound, "0.0.0.0");
    if (!strncmp(bound, "tcp://", 6) && any) {
        snprintf(out, cap, "%.*s%s%s", (int)(any - bound), bound, host, any + 7);
        return;
    }
    snprintf(out, cap, "%s", bound);
}

static void s_record(const brk_t *b, com_broker_record_t *rec) {
    memset(rec, 0, sizeof *rec);
    snprintf(rec->id, sizeof rec->id, "%s", b->id);
    snprintf(rec->host, sizeof rec->host, "%s", b->host);
    s_advertise(b->frontend_ep, b->host, rec->frontend, sizeof rec->frontend);
    s_advertise(b->backend_ep, b->host, rec->backend, sizeof rec->backend);
    snprintf(rec->model, sizeof rec->model, "%s", b->model_name);
    rec->pid = (int64_t)getpid();
    rec->started_ms = b->started_ms;
    rec->workers = (int64_t)brk_workers_ready(b, -1);
    rec->requests_done = (int64_t)b->c.requests_ok;
    rec->requests_failed = (int64_t)b->c.requests_failed;
    rec->chunks_sent = (int64_t)b->c.chunks_sent;
    rec->chunks_redispatched = (int64_t)b->c.chunks_redispatched;
    snprintf(rec->state, sizeof rec->state, "%s", b->draining ? "draining" : "ready");
}

void brk_counters_json(const brk_t *b, void *file) {
    FILE *f = file;
    const brk_counters_t *c = &b->c;
    fprintf(f,
            "{\"broker\":\"%s\",\"requests_in\":%llu,\"requests_embed\":%llu,"
            "\"requests_score\":%llu,\"requests_tokenize\":%llu,\"requests_info\":%llu,"
            "\"requests_ok\":%llu,\"requests_failed\":%llu,\"failed_by_code\":{",
            b->id, (unsigned long long)c->requests_in, (unsigned long long)c->requests_embed,
            (unsigned long long)c->requests_score, (unsigned long long)c->requests_tokenize,
            (unsigned long long)c->requests_info, (unsigned long long)c->requests_ok,
            (unsigned long long)c->requests_failed);
    bool first = true;
    for (unsigned i = 0; i < BRK_CODE_SLOTS; i++) {
        if (!c->failed_by_code[i])
            continue;
        fprintf(f, "%s\"%s\":%llu", first ? "" : ",", com_proto_code_name(i),
                (unsigned long long)c->failed_by_code[i]);
        first = false;
    }
    fprintf(f,
            "},\"chunks_sent\":%llu,\"chunks_done\":%llu,\"chunks_redispatched\":%llu,"
            "\"chunks_late\":%llu,\"chunk_errors\":%llu,\"duplicates_dropped\":%llu,"
            "\"bad_frames\":%llu,\"bad_client_msgs\":%llu,\"bad_worker_msgs\":%llu,"
            "\"unknown_worker_msgs\":%llu,\"model_mismatches\":%llu,\"overloads\":%llu,"
            "\"deadline_misses\":%llu,\"tokens_tokenized\":%llu,\"tokens_served\":%llu,"
            "\"send_failures\":%llu,\"workers_joined\":%llu,\"workers_lost\":%llu}",
            (unsigned long long)c->chunks_sent, (unsigned long long)c->chunks_done,
            (unsigned long long)c->chunks_redispatched, (unsigned long long)c->chunks_late,
            (unsigned long long)c->chunk_errors, (unsigned long long)c->duplicates_dropped,
            (unsigned long long)c->bad_frames, (unsigned long long)c->bad_client_msgs,
            (unsigned long long)c->bad_worker_msgs, (unsigned long long)c->unknown_worker_msgs,
            (unsigned long long)c->model_mismatches, (unsigned long long)c->overloads,
            (unsigned long long)c->deadline_misses, (unsigned long long)c->tokens_tokenized,
            (unsigned long long)c->tokens_served, (unsigned long long)c->send_failures,
            (unsigned long long)c->workers_joined, (unsigned long long)c->workers_lost);
}

/* Receives one [identity][payload] message. 1: got it (payload initialised, the caller closes
 * it); 0: nothing to read; -1: bad frame structure (counted; *ident valid, so a frontend can
 * answer). */
static int s_recv(brk_t *b, void *sock, uint8_t *ident, size_t *ident_len, zmq_msg_t *payload) {
    zmq_msg_t id;
    zmq_msg_init(&id);
    if (zmq_msg_recv(&id, sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&id);
        return 0;
    }
    size_t n = zmq_msg_size(&id);
    *ident_len = n > BRK_IDENT_MAX ? BRK_IDENT_MAX : n;
    memcpy(ident, zmq_msg_data(&id), *ident_len);
    bool more = zmq_msg_more(&id);
    zmq_msg_close(&id);
    if (!more) {
        b->c.bad_frames++;
        return -1;
    }
    zmq_msg_init(payload);
    if (zmq_msg_recv(payload, sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(payload);
        b->c.bad_frames++;
        return -1;
    }
    bool extra = zmq_msg_more(payload);
    while (zmq_msg_more(payload)) {
        zmq_msg_close(payload);
        zmq_msg_init(payload);
        if (zmq_msg_recv(payload, sock, ZMQ_DONTWAIT) < 0)
            break;
    }
    if (extra || zmq_msg_size(payload) == 0) {
        zmq_msg_close(payload);
        b->c.bad_frames++;
        return -1;
    }
    return 1;
}

static void s_drain_frontend(brk_t *b) {
    uint8_t ident[BRK_IDENT_MAX];
    size_t len = 0;
    for (int i = 0; i < S_BATCH; i++) {
        zmq_msg_t payload;
        int rc = s_recv(b, b->frontend, ident, &len, &payload);
        if (rc == 0)
            return;
        if (rc < 0) {
            brk_net_reply_error(b, ident, len, 0, COM_PROTO_BAD_REQUEST,
                                "expected exactly one non-empty frame holding one msgpack map");
            continue;
        }
        brk_request_on_frame(b, ident, len, &payload);
    }
}

static void s_drain_backend(brk_t *b) {
    uint8_t ident[BRK_IDENT_MAX];
    size_t len = 0;
    for (int i = 0; i < S_BATCH; i++) {
        zmq_msg_t payload;
        int rc = s_recv(b, b->backend, ident, &len, &payload);
        if (rc == 0)
            return;
        if (rc < 0)
            continue; /* counted; workers get no error replies */
        brk_dispatch_on_frame(b, ident, len, &payload);
        zmq_msg_close(&payload);
    }
}

static int s_router(brk_t *b, void **sock, const char *ep, bool backend, char *bound,
                    size_t bound_cap, com_error_t *err) {
    *sock = zmq_socket(b->zctx, ZMQ_ROUTER);
    if (!*sock)
        return com_error_set(err, COM_EINTERNAL, "zmq_socket: %s", zmq_strerror(errno));
    int one = 1, zero = 0;
    int64_t maxmsg = (int64_t)b->limits.max_msg_bytes;
    zmq_setsockopt(*sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(*sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* mandatory routing is what makes a send to a vanished worker fail at once (EHOSTUNREACH)
     * instead of after three heartbeats: start-up fails without it */
    if (zmq_setsockopt(*sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0 ||
        (backend && zmq_setsockopt(*sock, ZMQ_ROUTER_HANDOVER, &one, sizeof one) != 0))
        return com_error_set(err, COM_EINTERNAL, "zmq_setsockopt(ROUTER options): %s",
                             zmq_strerror(errno));
    /* ep may list several endpoints, comma-separated (e.g. tcp for remote peers and ipc for
     * processes on this host, which skips the TCP stack); the first is advertised */
    char one_ep[512];
    if (!*ep)
        return com_error_set(err, COM_EINVAL, "empty endpoint");
    for (const char *p = ep, *end; *p; p = *end ? end + 1 : end) {
        end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (end - p < 1 || (size_t)(end - p) >= sizeof one_ep)
            return com_error_set(err, COM_EINVAL, "bad endpoint list \"%s\"", ep);
        memcpy(one_ep, p, (size_t)(end - p));
        one_ep[end - p] = '\0';
        if (zmq_bind(*sock, one_ep) != 0)
            return com_error_set(err, COM_EIO, "cannot bind %s: %s", one_ep, zmq_strerror(errno));
        if (p == ep) {
            size_t n = bound_cap;
            if (zmq_getsockopt(*sock, ZMQ_LAST_ENDPOINT, bound, &n) != 0)
                snprintf(bound, bound_cap, "%.*s", (int)(bound_cap - 1), one_ep);
        }
    }
    return 0;
}

static void s_default_id(brk_t *b) {
    unsigned r = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&r, sizeof r, 1, f) != 1)
        r = (unsigned)com_clock_mono_us() ^ (unsigned)getpid();
    if (f)
        fclose(f);
    snprintf(b->id, sizeof b->id, "%.32s-%d-%06x", b->host, (int)getpid(), r & 0xffffffu);
}

static void s_model_name(brk_t *b) {
    if (b->cfg.model_name) {
        snprintf(b->model_name, sizeof b->model_name, "%s", b->cfg.model_name);
        return;
    }
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", b->cfg.model_dir);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = 0;
    const char *base = strrchr(tmp, '/');
    snprintf(b->model_name, sizeof b->model_name, "%.127s", base ? base + 1 : tmp);
}

static int s_start(brk_t *b, com_error_t *err) {
    char path[4096];
    int rc;
    com_encoding_init(&b->enc);
    com_proto_limits_default(&b->limits);
    b->started_ms = com_clock_wall_ms();
    if (gethostname(b->host, sizeof b->host - 1) != 0)
        snprintf(b->host, sizeof b->host, "localhost");
    s_model_name(b);
    if (b->cfg.id)
        snprintf(b->id, sizeof b->id, "%s", b->cfg.id);
    else
        s_default_id(b);
    if ((rc = com_model_info_load(b->cfg.model_dir, &b->info, err)) != 0)
        return rc;
    snprintf(path, sizeof path, "%s/tokenizer.json", b->cfg.model_dir);
    if ((rc = com_tokenizer_load(path, &b->tok, err)) != 0)
        return com_error_prefix(err, rc, "%s", path);
    if (b->cfg.chunk_tokens > (int32_t)b->limits.max_total_tokens)
        b->cfg.chunk_tokens = (int32_t)b->limits.max_total_tokens;
    b->workers = calloc(BRK_MAX_WORKERS, sizeof *b->workers);
    if (!b->workers)
        return com_error_set(err, COM_ENOMEM, "out of memory");
    if ((rc = brk_requests_init(b, err)) != 0)
        return rc;
    b->zctx = zmq_ctx_new();
    if (!b->zctx)
        return com_error_set(err, COM_EINTERNAL, "zmq_ctx_new: %s", zmq_strerror(errno));
    if ((rc = s_router(b, &b->frontend, b->cfg.frontend, false, b->frontend_ep,
                       sizeof b->frontend_ep, err)) != 0)
        return rc;
    if ((rc = s_router(b, &b->backend, b->cfg.backend, true, b->backend_ep, sizeof b->backend_ep,
                       err)) != 0)
        return rc;
    if ((rc = brk_tokpool_new(b->zctx, b->tok, b->cfg.tokenizer_threads, &b->pool, err)) != 0)
        return rc;
    if (b->cfg.redis_url) {
        com_broker_record_t rec;
        s_record(b, &rec);
        if ((rc = com_registry_agent_start_broker(b->cfg.redis_url, &rec, b->cfg.heartbeat_ms,
                                                  &b->agent, err)) != 0)
            return rc;
    }
    return 0;
}

static void s_stop(brk_t *b) {
    if (b->backend) {
        brk_workers_notify(b, COM_PROTO_DISCONNECT, "broker shutting down");
        int linger = 200; /* let the disconnects out */
        zmq_setsockopt(b->backend, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(b->backend);
        b->backend = NULL;
    }
    if (b->frontend) {
        zmq_close(b->frontend);
        b->frontend = NULL;
    }
    brk_tokpool_destroy(&b->pool); /* joins: no thread reads a job after this */
    brk_requests_free(b);
    com_registry_agent_stop(&b->agent, true);
    free(b->workers);
    b->workers = NULL;
    free(b->scratch_offs);
    b->scratch_offs = NULL;
    com_encoding_free(&b->enc);
    com_tokenizer_destroy(&b->tok);
    if (b->zctx) {
        zmq_ctx_term(b->zctx);
        b->zctx = NULL;
    }
}

static void s_begin_drain(brk_t *b) {
    if (b->draining)
        return;
    b->draining = true;
    COM_INFO("draining: %u requests open", b->active_requests);
    brk_workers_notify(b, COM_PROTO_DRAIN, "broker draining");
    if (b->agent) {
        com_broker_record_t rec;
        s_record(b, &rec);
        com_registry_agent_update_broker(b->agent, &rec);
        com_registry_agent_kick(b->agent);
    }
}

static int s_loop(brk_t *b) {
    int64_t next_hb = com_clock_mono_us();
    int64_t next_tick = next_hb;
    int signals = 0;
    for (;;) {
        int64_t now = com_clock_mono_us();
        /* Sleep until the next timer: heartbeats always, the 10 ms tick (deadlines, lateness,
         * retrying full queues) only while requests are open. */
        int64_t wake = next_hb;
        if (b->active_requests > 0 && next_tick < wake)
            wake = next_tick;
        long timeout = wake > now ? (long)((wake - now + 999) / 1000) : 0;
        zmq_pollitem_t items[4] = {
            {b->frontend, 0, ZMQ_POLLIN, 0},
            {b->backend, 0, ZMQ_POLLIN, 0},
            {brk_tokpool_socket(b->pool), 0, ZMQ_POLLIN, 0},
            {NULL, s_sigpipe[0], ZMQ_POLLIN, 0},
        };
        if (com_zmq_poll_spin(items, 4, timeout, b->cfg.spin_us) < 0 && errno != EINTR) {
            COM_ERROR("zmq_poll: %s", zmq_strerror(errno));
            return 1;
        }
        if (items[3].revents & ZMQ_POLLIN) {
            unsigned char c[16];
            ssize_t n = read(s_sigpipe[0], c, sizeof c);
            for (ssize_t i = 0; i < n; i++) {
                if (++signals == 1) {
                    COM_INFO("signal %d: draining (again to stop now)", (int)c[i]);
                    s_begin_drain(b);
                } else if (signals == 2) {
                    COM_INFO("signal %d: stopping now", (int)c[i]);
                    brk_requests_abort_all(b, "the broker is shutting down");
                }
            }
        }
        if (items[0].revents & ZMQ_POLLIN)
            s_drain_frontend(b);
        if (items[1].revents & ZMQ_POLLIN)
            s_drain_backend(b);
        if (items[2].revents & ZMQ_POLLIN) {
            brk_tok_job_t *job = NULL;
            while (brk_tokpool_recv(b->pool, &job) == 0)
                brk_request_on_job(b, job);
        }
        now = com_clock_mono_us();
        bool hb = now >= next_hb;
        if (hb)
            next_hb = now + (int64_t)b->cfg.heartbeat_ms * 1000;
        /* Timers run when due, not on every message: walking the request table and the
         * workers per message cost tens of microseconds on the latency path. */
        if (hb || now >= next_tick) {
            next_tick = now + S_TICK_MS * 1000;
            brk_requests_tick(b, now);
            brk_dispatch_tick(b, now, hb);
        }
        if (hb && b->agent) {
            com_broker_record_t rec;
            s_record(b, &rec);
            com_registry_agent_update_broker(b->agent, &rec);
        }
        if (b->draining && b->active_requests == 0)
            return 0;
    }
}

int main(int argc, char **argv) {
    static brk_t broker; /* large; zeroed */
    brk_t *b = &broker;
    int log_level = -1;
    brk_config_defaults(&b->cfg);
    com_log_init_from_env();
    int prc = s_parse_args(argc, argv, &b->cfg, &log_level);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    if (log_level >= 0)
        com_log_set_level(log_level);
    if (pipe(s_sigpipe) != 0) {
        perror("ember-broker: pipe");
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(s_sigpipe[i], F_SETFL, fcntl(s_sigpipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(s_sigpipe[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    com_error_t err = {0};
    int rc = s_start(b, &err);
    if (rc != 0) {
        fprintf(stderr, "ember-broker: %s\n", err.msg);
        s_stop(b);
        return 1;
    }
    COM_INFO("broker %s serving %s (dim %d, max_seq %d) frontend %s backend %s", b->id,
             b->model_name, b->info.embedding_dim, b->info.max_seq_length, b->frontend_ep,
             b->backend_ep);
    printf("ember-broker ready id=%s frontend=%s backend=%s model=%s\n", b->id, b->frontend_ep,
           b->backend_ep, b->model_name);
    fflush(stdout);
    int lrc = s_loop(b);
    s_stop(b);
    brk_counters_json(b, stderr);
    fputc('\n', stderr);
    close(s_sigpipe[0]);
    close(s_sigpipe[1]);
    return lrc;
}
