/* worker/worker_main.c — ember-worker: serves one model on one device to every broker it knows
 * (docs/worker.md, docs/pool.md). Parses the flags, loads the engine, connects the broker links
 * (worker_link.c), runs the FCFS scheduler (worker_sched.c), registers in Redis, and drains on
 * SIGTERM/SIGINT.
 *
 * The event loop: one zmq_poll over every broker DEALER, the engine's event fd (a batch
 * completed) and the signal pipe, with the timeout set by the next heartbeat. Each wake-up reads
 * what arrived, lets the scheduler finish completed batches and submit new ones at once (no
 * sleeps, no busy waiting), then runs the timers (heartbeats, ready re-sends, registry snapshot,
 * discovery). Drain: drain to every broker, refuse new chunks (UNAVAILABLE), answer every chunk
 * held, disconnect, deregister, exit 0; a second signal exits at once (128 + signal).
 *
 * Discovery (--redis without --broker): each new list from the discovery thread (published
 * only after a successful Redis read) opens links to listed brokers and closes the discovered
 * links whose broker is no longer listed (disconnect first; worker_link.h, "Closing"). Links
 * given with --broker are never closed. Chunks still held from a closed link are computed and
 * their results dropped; the scheduler's per-link count keeps the closed slot from being reused
 * until none is left (s_link_busy), so no result ever goes out through a reused index.
 *
 * Invariants: every chunk received is answered exactly once (see worker_sched.h; a result for a
 * closed link is dropped and counted); Redis is only touched by the registry agent's and the
 * discovery thread, never by this loop.
 * Thread: main (the event loop). Signal handlers only write to a pipe or _exit. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>

#include "common/zmq_poll_spin.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/registry_agent.h"
#include "kernels/blas_core.h"
#include "worker/engine.h"
#include "worker/worker_link.h"
#include "worker/worker_sched.h"

/* Exit codes (docs/worker.md). S_EXIT_ENGINE: the device failed for good (a sticky CUDA error);
 * the worker reported itself unhealthy and exits for its supervisor to restart it. */
enum {
    S_EXIT_OK = 0,
    S_EXIT_FAIL = 1,
    S_EXIT_USAGE = 2,
    S_EXIT_ENGINE = 3,
    S_EXIT_UNSUPPORTED = 4
};

#define S_MAX_BROKERS       64
#define S_RECV_BATCH        64 /* messages read from one link per wake-up (fairness) */
#define S_OVERCREDIT_FACTOR 2  /* chunks held per broker beyond credits x this: OVERLOADED */
#define S_LINGER_MAX_MS                                                                            \
    2000 /* unsent results/disconnects may linger at exit at most this                             \
            long (a heartbeat interval, 100..2000 ms) */

typedef struct s_args {
    const char *brokers[S_MAX_BROKERS];
    int n_brokers;
    const char *model_dir;
    const char *device;
    const char *redis;
    const char *model_name;
    const char *id;
    int32_t max_batch_tokens;
    int32_t credits;
    int32_t max_inflight; /* batches in the engine at once */
    int32_t threads;
    int32_t heartbeat_ms;
    int32_t spin_us; /* busy-poll this long before blocking (0 = never) */
    int32_t discovery_ms;
} s_args_t;

typedef struct s_worker {
    s_args_t a;
    char id[COM_REG_ID_MAX];
    char model[COM_REG_FIELD_MAX];
    const char *family;
    wrk_engine_t *engine;
    void *zctx;
    wrk_links_t *links;
    wrk_sched_t *sched;
    com_registry_agent_t *agent;
    wrk_discovery_t *disc;
    uint64_t disc_gen;
    wrk_broker_ep_t *disc_eps; /* [n_disc_eps]: the last list taken from discovery */
    size_t n_disc_eps;
    bool disc_retry; /* disc_eps not fully applied yet (new, or capped by S_MAX_BROKERS) */
    com_worker_record_t rec;
    bool draining;
    bool unhealthy;       /* the engine failed for good; exiting */
    uint64_t over_credit; /* chunks refused OVERLOADED: a broker over its credits */
    uint64_t refused_draining;
    uint64_t signals;
} s_worker_t;

/* ------------------------------------------------------------------ signals */

static volatile sig_atomic_t s_sig_count;
static int s_sig_pipe[2] = {-1, -1};

static void s_on_signal(int sig) {
    if (s_sig_count++ > 0) {
        static const char msg[] = "ember-worker: second signal, exiting now\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        _exit(128 + sig);
    }
    const char b = (char)sig;
    ssize_t w = write(s_sig_pipe[1], &b, 1);
    (void)w;
}

static int s_signals_install(void) {
    if (pipe(s_sig_pipe) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(s_sig_pipe[i], F_SETFL, fcntl(s_sig_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(s_sig_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* ------------------------------------------------------------------ arguments */

static void s_usage(FILE *f) {
    fprintf(f, "usage: ember-worker --broker ENDPOINT [--broker ENDPOINT ...] --model DIR\n"
               "                    --device cpu|cuda[:N] [--redis URL] [--model-name NAME]\n"
               "                    [--max-batch-tokens N] [--credits N] [--max-inflight N]\n"
               "                    [--threads N]\n"
               "                    [--heartbeat-ms N] [--discovery-ms N] [--spin-us N] [--id ID]\n"
               "                    [--log-level debug|info|warn|error]\n"
               "  --broker          broker backend endpoint (repeatable); without it, --redis is\n"
               "                    required and brokers are discovered from Redis\n"
               "  --model           model directory (config.json, model.safetensors, ...)\n"
               "  --device          cpu, cuda or cuda:N (GPU N; options after commas:\n"
               "                    graphs=lazy|all|off (CUDA graph mode, default lazy),\n"
               "                    tune=off (skip timing the GEMM algorithms at start),\n"
               "                    pdl=off, residual=auto|f32|f16|bf16; docs/engine.md)\n"
               "  --redis           register in Redis (and discover brokers without --broker)\n"
               "  --model-name      name announced to brokers (default: the directory's name)\n"
               "  --max-batch-tokens  token budget per batch (default 16384 on cuda, 8192 on\n"
               "                    cpu)\n"
               "  --credits         chunks accepted in flight per broker (default 32 on cuda, 4\n"
               "                    on cpu)\n"
               "  --max-inflight    batches in the engine at once, 1..8 (default 2)\n"
               "  --threads         engine compute threads (default 0 = all cores)\n"
               "  --heartbeat-ms    heartbeat interval (default 1000)\n"
               "  --spin-us         busy-poll this long after each event before sleeping (lower\n"
               "                    latency for a busy core; default 0)\n"
               "  --discovery-ms    Redis broker list re-read interval (default 2000)\n"
               "  --id              worker id (default <host>-<pid>-<random>)\n"
               "exit codes: 0 drained, 1 failure, 2 usage, 4 unsupported device/model\n");
}

static int s_parse_int(const char *name, const char *v, long lo, long hi, int32_t *out) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || !end || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "ember-worker: %s: \"%s\" is not an integer in [%ld, %ld]\n", name, v, lo,
                hi);
        return -1;
    }
    *out = (int32_t)x;
    return 0;
}

static int s_parse_level(const char *v) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

/* Returns 0, -1 (--help printed), or an exit code. */
static int s_parse_args(int argc, char **argv, s_args_t *a) {
    memset(a, 0, sizeof *a);
    a->max_batch_tokens = 0; /* 0: by device, below */
    a->credits = 0;
    a->max_inflight = 2;
    a->threads = 0;
    a->heartbeat_ms = 1000;
    a->discovery_ms = 2000;
    enum {
        O_BROKER = 256,
        O_MODEL,
        O_DEVICE,
        O_REDIS,
        O_NAME,
        O_MBT,
        O_CRED,
        O_INFLIGHT,
        O_THREADS,
        O_HB,
        O_SPIN,
        O_DISC,
        O_ID,
        O_LOG,
        O_HELP
    };
    static const struct option opts[] = {
        {"broker", required_argument, NULL, O_BROKER},
        {"model", required_argument, NULL, O_MODEL},
        {"device", required_argument, NULL, O_DEVICE},
        {"redis", required_argument, NULL, O_REDIS},
        {"model-name", required_argument, NULL, O_NAME},
        {"max-batch-tokens", required_argument, NULL, O_MBT},
        {"credits", required_argument, NULL, O_CRED},
        {"max-inflight", required_argument, NULL, O_INFLIGHT},
        {"threads", required_argument, NULL, O_THREADS},
        {"heartbeat-ms", required_argument, NULL, O_HB},
        {"spin-us", required_argument, NULL, O_SPIN},
        {"discovery-ms", required_argument, NULL, O_DISC},
        {"id", required_argument, NULL, O_ID},
        {"log-level", required_argument, NULL, O_LOG},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case O_BROKER:
            if (a->n_brokers == S_MAX_BROKERS) {
                fprintf(stderr, "ember-worker: at most %d --broker\n", S_MAX_BROKERS);
                return S_EXIT_USAGE;
            }
            a->brokers[a->n_brokers++] = optarg;
            break;
        case O_MODEL:
            a->model_dir = optarg;
            break;
        case O_DEVICE:
            a->device = optarg;
            break;
        case O_REDIS:
            a->redis = optarg;
            break;
        case O_NAME:
            a->model_name = optarg;
            break;
        case O_MBT:
            rc = s_parse_int("--max-batch-tokens", optarg, 1, 1 << 24, &a->max_batch_tokens);
            break;
        case O_CRED:
            rc = s_parse_int("--credits", optarg, 1, 65536, &a->credits);
            break;
        case O_INFLIGHT:
            rc = s_parse_int("--max-inflight", optarg, 1, 8, &a->max_inflight);
            break;
        case O_THREADS:
            rc = s_parse_int("--threads", optarg, 0, 1024, &a->threads);
            break;
        case O_HB:
            rc = s_parse_int("--heartbeat-ms", optarg, 10, 600000, &a->heartbeat_ms);
            break;
        case O_SPIN:
            rc = s_parse_int("--spin-us", optarg, 0, 100000, &a->spin_us);
            break;
        case O_DISC:
            rc = s_parse_int("--discovery-ms", optarg, 10, 3600000, &a->discovery_ms);
            break;
        case O_ID:
            a->id = optarg;
            break;
        case O_LOG: {
            int lvl = s_parse_level(optarg);
            if (lvl < 0) {
                fprintf(stderr, "ember-worker: --log-level: \"%s\" (debug|info|warn|error)\n",
                        optarg);
                return S_EXIT_USAGE;
            }
            com_log_set_level(lvl);
            break;
        }
        case O_HELP:
            s_usage(stdout);
            return -1;
        default:
            fprintf(stderr, "ember-worker: unknown or incomplete option \"%s\"\n",
                    argv[optind - 1]);
            s_usage(stderr);
            return S_EXIT_USAGE;
        }
        if (rc != 0)
            return S_EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "ember-worker: unexpected argument \"%s\"\n", argv[optind]);
        return S_EXIT_USAGE;
    }
    if (!a->model_dir || !a->device) {
        fprintf(stderr, "ember-worker: --model and --device are required\n");
        s_usage(stderr);
        return S_EXIT_USAGE;
    }
    /* Defaults by device, measured through the pool (docs/worker.md): a GPU worker needs about
     * four batches' worth of tokens queued to stay busy between the brokers' round trips. */
    const bool gpu = strncmp(a->device, "cuda", 4) == 0;
    if (a->max_batch_tokens == 0)
        a->max_batch_tokens = gpu ? 16384 : 8192;
    if (a->credits == 0)
        a->credits = gpu ? 32 : 4;
    if (a->n_brokers == 0 && !a->redis) {
        fprintf(stderr, "ember-worker: give --broker ENDPOINT or --redis URL (discovery)\n");
        return S_EXIT_USAGE;
    }
    if (a->id && (!*a->id || strlen(a->id) >= COM_REG_ID_MAX)) {
        fprintf(stderr, "ember-worker: --id must have 1..%d bytes\n", COM_REG_ID_MAX - 1);
        return S_EXIT_USAGE;
    }
    return 0;
}

/* ------------------------------------------------------------------ identity */

static void s_make_id(s_worker_t *w) {
    if (w->a.id) {
        snprintf(w->id, sizeof w->id, "%s", w->a.id);
        return;
    }
    char host[COM_REG_FIELD_MAX] = "host";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)com_clock_mono_us() ^ (uint32_t)getpid() * 2654435761u;
    char tail[40];
    snprintf(tail, sizeof tail, "-%ld-%08x", (long)getpid(), rnd);
    size_t room = sizeof w->id - 1 - strlen(tail), hl = strlen(host);
    if (hl > room)
        hl = room;
    memcpy(w->id, host, hl);
    memcpy(w->id + hl, tail, strlen(tail) + 1);
}

static void s_make_model_name(s_worker_t *w) {
    if (w->a.model_name) {
        snprintf(w->model, sizeof w->model, "%s", w->a.model_name);
        return;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", w->a.model_dir);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    const char *slash = strrchr(dir, '/');
    snprintf(w->model, sizeof w->model, "%.*s", (int)sizeof w->model - 1,
             slash && slash[1] ? slash + 1 : dir);
}

static const char *s_family_name(com_family_t f) {
    switch (f) {
    case COM_FAMILY_BERT:
        return "bert";
    }
    return "unknown";
}

/* ------------------------------------------------------------------ callbacks */

/* Unsent messages may linger this long on a closed socket: a heartbeat interval, 100..2000 ms. */
static int s_linger_ms(const s_args_t *a) {
    int linger = a->heartbeat_ms < 100 ? 100 : a->heartbeat_ms;
    return linger > S_LINGER_MAX_MS ? S_LINGER_MAX_MS : linger;
}

/* wrk_links busy callback: a closed link's slot stays reserved while chunks from it are held. */
static bool s_link_busy(void *arg, int32_t link) {
    const s_worker_t *w = arg;
    return w->sched && wrk_sched_held_link(w->sched, link) > 0;
}

static void s_send_result(void *arg, int32_t link, const uint8_t *data, size_t len) {
    s_worker_t *w = arg;
    wrk_links_send(w->links, link, data, len);
}

static void s_on_chunk(void *arg, const wrk_link_chunk_t *ch) {
    s_worker_t *w = arg;
    if (!ch->chunk) {
        wrk_sched_reject(w->sched, ch->link, ch->id, ch->cid, ch->att, ch->code,
                         ch->why ? ch->why : "bad chunk");
        return;
    }
    if (w->draining) {
        w->refused_draining++;
        wrk_sched_reject(w->sched, ch->link, ch->id, ch->cid, ch->att, COM_PROTO_UNAVAILABLE,
                         "worker is draining");
        return;
    }
    if (wrk_sched_held_link(w->sched, ch->link) >= w->a.credits * S_OVERCREDIT_FACTOR) {
        w->over_credit++;
        wrk_sched_reject(w->sched, ch->link, ch->id, ch->cid, ch->att, COM_PROTO_OVERLOADED,
                         "worker: broker is over its credits");
        return;
    }
    com_error_t err = {0};
    if (wrk_sched_add(w->sched, ch->link, ch->id, ch->chunk, com_clock_mono_us(), &err) != 0)
        COM_DEBUG("chunk %llu/%u refused: %s", (unsigned long long)ch->id, ch->cid, err.msg);
}

/* ------------------------------------------------------------------ registry, counters */

static void s_record_update(s_worker_t *w) {
    wrk_sched_stats_t st;
    wrk_sched_stats(w->sched, &st);
    w->rec.load_tokens = st.load_tokens;
    w->rec.batches_done = (int64_t)st.batches_done;
    w->rec.chunks_done = (int64_t)st.chunks_done;
    w->rec.tokens_done = (int64_t)st.tokens_done;
    snprintf(w->rec.state, sizeof w->rec.state, "%s",
             w->unhealthy ? "unhealthy" : (w->draining ? "draining" : "ready"));
    wrk_links_endpoints(w->links, w->rec.brokers, sizeof w->rec.brokers);
    if (w->agent)
        com_registry_agent_update_worker(w->agent, &w->rec);
}

static void s_print_counters(const s_worker_t *w, const wrk_links_stats_t *lp, int n_links,
                             int64_t started_us) {
    wrk_sched_stats_t s = {0};
    const wrk_links_stats_t l = *lp;
    if (w->sched)
        wrk_sched_stats(w->sched, &s);
    fprintf(stderr,
            "{\"ember\":\"worker\",\"id\":\"%s\",\"uptime_ms\":%lld,"
            "\"chunks_in\":%llu,\"chunks_done\":%llu,\"chunks_failed\":%llu,"
            "\"chunks_bad\":%llu,\"chunks_rejected\":%llu,\"refused_draining\":%llu,"
            "\"over_credit\":%llu,\"deadline_drops\":%llu,\"engine_failed\":%llu,"
            "\"seqs_in\":%llu,\"seqs_done\":%llu,\"tokens_in\":%llu,\"tokens_done\":%llu,"
            "\"batches_submitted\":%llu,\"batches_done\":%llu,\"batches_failed\":%llu,"
            "\"msgs_in\":%llu,\"msgs_out\":%llu,\"bad_frames\":%llu,\"bad_msgs\":%llu,"
            "\"unexpected_msgs\":%llu,\"hb_in\":%llu,\"hb_out\":%llu,\"ready_out\":%llu,"
            "\"disconnects_in\":%llu,\"drains_in\":%llu,\"brokers_lost\":%llu,"
            "\"send_dropped\":%llu,\"links_closed\":%llu,\"orphan_dropped\":%llu,"
            "\"encode_failed\":%llu,\"brokers\":%d}\n",
            w->id, (long long)((com_clock_mono_us() - started_us) / 1000),
            (unsigned long long)s.chunks_in, (unsigned long long)s.chunks_done,
            (unsigned long long)s.chunks_failed, (unsigned long long)s.chunks_bad,
            (unsigned long long)s.chunks_rejected, (unsigned long long)w->refused_draining,
            (unsigned long long)w->over_credit, (unsigned long long)s.deadline_drops,
            (unsigned long long)s.engine_failed, (unsigned long long)s.seqs_in,
            (unsigned long long)s.seqs_done, (unsigned long long)s.tokens_in,
            (unsigned long long)s.tokens_done, (unsigned long long)s.batches_submitted,
            (unsigned long long)s.batches_done, (unsigned long long)s.batches_failed,
            (unsigned long long)l.msgs_in, (unsigned long long)l.msgs_out,
            (unsigned long long)l.bad_frames, (unsigned long long)l.bad_msgs,
            (unsigned long long)l.unexpected, (unsigned long long)l.hb_in,
            (unsigned long long)l.hb_out, (unsigned long long)l.ready_out,
            (unsigned long long)l.disconnects_in, (unsigned long long)l.drains_in,
            (unsigned long long)l.brokers_lost, (unsigned long long)l.send_dropped,
            (unsigned long long)l.links_closed, (unsigned long long)l.orphan_dropped,
            (unsigned long long)s.send_encode_failed, n_links);
}

/* ------------------------------------------------------------------ event loop */

/* Applies discovery. A new list (a successful Redis read: a failed one publishes nothing, so a
 * Redis error never closes a link) first closes the discovered links to brokers it no longer
 * lists, then opens links to listed brokers that are not draining. A list cut short by
 * S_MAX_BROKERS is applied again on later ticks, as links close. */
static void s_discover(s_worker_t *w, int64_t now_us) {
    if (!w->disc)
        return;
    wrk_broker_ep_t *eps = NULL;
    size_t n = 0;
    const bool fresh = wrk_discovery_take(w->disc, &w->disc_gen, &eps, &n);
    if (fresh) {
        wrk_discovery_list_free(w->disc_eps, w->n_disc_eps);
        w->disc_eps = eps;
        w->n_disc_eps = n;
        wrk_links_prune(w->links, eps, n, "broker left Redis", s_linger_ms(&w->a));
        w->disc_retry = true;
    }
    if (!w->disc_retry)
        return;
    w->disc_retry = false;
    for (size_t i = 0; i < w->n_disc_eps; i++) {
        const wrk_broker_ep_t *e = &w->disc_eps[i];
        if (e->draining || wrk_links_find(w->links, e->endpoint) >= 0)
            continue;
        com_error_t err = {0};
        if (wrk_links_open_count(w->links) >= S_MAX_BROKERS) {
            COM_LOG(fresh ? COM_LOG_WARN : COM_LOG_DEBUG, "discovery: already %d brokers, %s waits",
                    S_MAX_BROKERS, e->endpoint);
            w->disc_retry = true;
        } else if (wrk_links_add(w->links, e->endpoint, true, now_us, &err) < 0) {
            COM_WARN("discovery: %s", err.msg);
        }
    }
}

static void s_begin_drain(s_worker_t *w, const char *why) {
    if (w->draining)
        return;
    w->draining = true;
    COM_INFO("%s: draining (%d chunks held)", why, (int)wrk_sched_held(w->sched));
    wrk_links_drain_all(w->links, why);
    s_record_update(w);
    if (w->agent)
        com_registry_agent_kick(w->agent);
}

/* Runs until drained. Returns 0, or an exit code. */
static int s_loop(s_worker_t *w) {
    zmq_pollitem_t items[S_MAX_BROKERS + 2];
    const int64_t hb_us = (int64_t)w->a.heartbeat_ms * 1000;
    int64_t next_tick = 0, next_record = 0;
    for (;;) {
        int64_t now = com_clock_mono_us();
        if (now >= next_tick) {
            if (!w->draining) /* a draining worker joins no new broker */
                s_discover(w, now);
            wrk_sched_stats_t st;
            wrk_sched_stats(w->sched, &st);
            wrk_links_load_t load = {.tokens = (uint64_t)st.load_tokens,
                                     .seqs = (uint64_t)st.load_seqs,
                                     .batches_done = st.batches_done,
                                     .credits = w->draining ? 0 : (uint32_t)w->a.credits};
            next_tick = wrk_links_tick(w->links, now, &load);
            if (now >= next_record) {
                s_record_update(w);
                next_record = now + hb_us;
            }
            if (next_record < next_tick)
                next_tick = next_record;
        }
        if (w->draining && wrk_sched_held(w->sched) == 0) {
            COM_INFO("drained: disconnecting from %d broker(s)",
                     (int)wrk_links_open_count(w->links));
            wrk_links_disconnect_all(w->links, "drained");
            return 0;
        }
        /* open links only (closed slots have no socket); item k polls link link_of[k] */
        const int32_t n_slots = wrk_links_count(w->links);
        int32_t link_of[S_MAX_BROKERS];
        int n = 0;
        for (int32_t i = 0; i < n_slots && n < S_MAX_BROKERS; i++) {
            void *sock = wrk_links_socket(w->links, i);
            if (!sock)
                continue;
            link_of[n] = i;
            items[n++] = (zmq_pollitem_t){.socket = sock, .events = ZMQ_POLLIN};
        }
        const int n_polled = n;
        const int engine_item = n;
        items[n++] = (zmq_pollitem_t){.fd = wrk_engine_event_fd(w->engine), .events = ZMQ_POLLIN};
        const int sig_item = n;
        items[n++] = (zmq_pollitem_t){.fd = s_sig_pipe[0], .events = ZMQ_POLLIN};
        int64_t wait_us = next_tick - now;
        long timeout_ms = wait_us <= 0 ? 0 : (long)((wait_us + 999) / 1000);
        int rc = com_zmq_poll_spin(items, n, timeout_ms, w->a.spin_us);
        if (rc < 0 && errno != EINTR) {
            COM_ERROR("zmq_poll: %s", zmq_strerror(errno));
            return S_EXIT_FAIL;
        }
        now = com_clock_mono_us();
        if (rc > 0 && (items[sig_item].revents & ZMQ_POLLIN)) {
            char b[16];
            ssize_t got = read(s_sig_pipe[0], b, sizeof b);
            if (got > 0) {
                w->signals++;
                s_begin_drain(w, b[0] == SIGINT ? "SIGINT" : "SIGTERM");
            }
        }
        if (rc > 0) {
            for (int k = 0; k < n_polled; k++)
                if (items[k].revents & ZMQ_POLLIN)
                    wrk_links_recv(w->links, link_of[k], now, S_RECV_BATCH, s_on_chunk, w);
        }
        const bool engine_ready = rc > 0 && (items[engine_item].revents & ZMQ_POLLIN);
        wrk_sched_pump(w->sched, engine_ready, com_clock_mono_us());
        com_error_t herr = {0};
        /* every round, not only on engine events: a submit can break the engine without one
         * (one atomic load while healthy) */
        if (wrk_engine_health(w->engine, &herr) != 0) {
            /* Brokers re-dispatch what this worker held as soon as it disconnects. */
            COM_ERROR("%s; reporting unhealthy and exiting", herr.msg);
            w->unhealthy = true;
            s_record_update(w);
            wrk_links_disconnect_all(w->links, "engine failed");
            return S_EXIT_ENGINE;
        }
    }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    com_log_init_from_env();
    const int64_t started_us = com_clock_mono_us();
    s_worker_t w;
    memset(&w, 0, sizeof w);
    int code = s_parse_args(argc, argv, &w.a);
    if (code != 0)
        return code < 0 ? S_EXIT_OK : code;
    if (strncmp(w.a.device, "cpu", 3) == 0)
        kern_blas_reexec_for_core();
    if (s_signals_install() != 0) {
        fprintf(stderr, "ember-worker: cannot install signal handlers\n");
        return S_EXIT_FAIL;
    }
    s_make_id(&w);
    s_make_model_name(&w);

    com_error_t err = {0};
    wrk_engine_opts_t eo = {
        .device = w.a.device, .threads = w.a.threads, .max_batch_tokens = w.a.max_batch_tokens};
    int rc = wrk_engine_new(w.a.model_dir, &eo, &w.engine, &err);
    if (rc != 0) {
        fprintf(stderr, "ember-worker: cannot load %s: %s\n", w.a.model_dir, err.msg);
        /* COM_EINVAL: the engine rejected what the flags gave it (the --device string and its
         * options, which only the engine parses; --threads; --max-batch-tokens): usage */
        return rc == COM_EUNSUPPORTED ? S_EXIT_UNSUPPORTED
               : rc == COM_EINVAL     ? S_EXIT_USAGE
                                      : S_EXIT_FAIL;
    }
    const com_model_info_t *info = wrk_engine_model(w.engine);
    w.family = s_family_name(info->family);

    code = S_EXIT_FAIL;
    wrk_sched_opts_t so = {.max_batch_tokens = w.a.max_batch_tokens,
                           .max_inflight = w.a.max_inflight};
    if ((rc = wrk_sched_new(w.engine, &so, s_send_result, &w, &w.sched, &err)) != 0) {
        fprintf(stderr, "ember-worker: %s\n", err.msg);
        code = rc == COM_EINVAL ? S_EXIT_USAGE : S_EXIT_FAIL;
        goto out;
    }
    w.zctx = zmq_ctx_new();
    if (!w.zctx) {
        fprintf(stderr, "ember-worker: zmq_ctx_new: %s\n", zmq_strerror(errno));
        goto out;
    }
    int32_t msl = info->max_seq_length < info->max_position_embeddings
                      ? info->max_seq_length
                      : info->max_position_embeddings;
    wrk_links_opts_t lo = {.worker_id = w.id,
                           .model = w.model,
                           .family = w.family,
                           .device = w.a.device,
                           .max_batch_tokens = (uint32_t)w.a.max_batch_tokens,
                           .dim = (uint32_t)info->embedding_dim,
                           .max_seq = (uint32_t)msl,
                           .credits = (uint32_t)w.a.credits,
                           .heartbeat_ms = w.a.heartbeat_ms,
                           .busy = s_link_busy,
                           .busy_arg = &w};
    if (wrk_links_new(w.zctx, &lo, &w.links, &err) != 0) {
        fprintf(stderr, "ember-worker: %s\n", err.msg);
        goto out;
    }
    const int64_t now = com_clock_mono_us();
    for (int i = 0; i < w.a.n_brokers; i++) {
        if (wrk_links_add(w.links, w.a.brokers[i], false, now, &err) < 0) {
            fprintf(stderr, "ember-worker: %s\n", err.msg);
            code = S_EXIT_USAGE;
            goto out;
        }
    }
    if (w.a.redis) {
        if (w.a.n_brokers == 0 &&
            wrk_discovery_start(w.a.redis, w.a.discovery_ms, &w.disc, &err) != 0) {
            fprintf(stderr, "ember-worker: --redis: %s\n", err.msg);
            code = S_EXIT_USAGE;
            goto out;
        }
        com_worker_record_t *r = &w.rec;
        snprintf(r->id, sizeof r->id, "%s", w.id);
        if (gethostname(r->host, sizeof r->host) != 0)
            snprintf(r->host, sizeof r->host, "unknown");
        r->host[sizeof r->host - 1] = '\0';
        snprintf(r->device, sizeof r->device, "%s", w.a.device);
        snprintf(r->model, sizeof r->model, "%s", w.model);
        snprintf(r->family, sizeof r->family, "%s", w.family);
        r->pid = (int64_t)getpid();
        r->started_ms = com_clock_wall_ms();
        r->max_batch_tokens = w.a.max_batch_tokens;
        snprintf(r->state, sizeof r->state, "ready");
        wrk_links_endpoints(w.links, r->brokers, sizeof r->brokers);
        if (com_registry_agent_start_worker(w.a.redis, r, w.a.heartbeat_ms, &w.agent, &err) != 0) {
            fprintf(stderr, "ember-worker: --redis: %s\n", err.msg);
            code = S_EXIT_USAGE;
            goto out;
        }
    }
    COM_INFO("worker %s: model %s (%s, dim %d, max_seq %d) on %s, budget %d tokens, %d credits, "
             "heartbeat %d ms",
             w.id, w.model, w.family, (int)info->embedding_dim, (int)msl, w.a.device,
             (int)w.a.max_batch_tokens, (int)w.a.credits, (int)w.a.heartbeat_ms);
    code = s_loop(&w);
out:;
    wrk_links_stats_t lst = {0};
    int n_links = 0;
    if (w.links) {
        wrk_links_stats(w.links, &lst);
        n_links = (int)wrk_links_open_count(w.links);
    }
    /* Disconnects and results still queued get a bounded linger to reach the brokers. */
    wrk_links_destroy(&w.links, code == 0 || code == S_EXIT_ENGINE ? s_linger_ms(&w.a) : 0);
    if (w.zctx)
        zmq_ctx_term(w.zctx);
    com_registry_agent_stop(&w.agent, code != S_EXIT_ENGINE); /* keep "unhealthy" visible */
    wrk_discovery_stop(&w.disc);
    wrk_discovery_list_free(w.disc_eps, w.n_disc_eps);
    s_print_counters(&w, &lst, n_links, started_us);
    wrk_sched_destroy(&w.sched);
    wrk_engine_destroy(&w.engine);
    return code;
}
