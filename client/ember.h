/* ember.h — libember, the C client of an ember embedding pool.
 *
 * A client talks to one or more ember brokers over ZeroMQ (one DEALER socket per broker, one
 * ZeroMQ context per client). Brokers are given as endpoints ("tcp://host:port") or discovered
 * in the pool's Redis registry (the frontends of the live brokers, re-read on failover and every
 * few seconds). Requests are embeddings of texts or token-id sequences, tokenization, and the
 * pool's info (health, model, width).
 *
 * Life cycle:
 *     ember_options_t o;  ember_options_init(&o);
 *     const char *brokers[] = {"tcp://10.0.0.1:5555", "tcp://10.0.0.2:5555"};
 *     o.brokers = brokers;  o.n_brokers = 2;          (or: o.redis_url = "redis://host:6379")
 *     ember_client_t *c;  char why[256];
 *     if (ember_client_new(&o, &c, why, sizeof why) != EMBER_OK) { ... why ... }
 *     ember_result_t *r;
 *     if (ember_embed(c, texts, lens, n, NULL, &r) == EMBER_OK) {
 *         const float *v = ember_result_embeddings(r);     [n x dim], row-major, float32
 *         ...; ember_result_destroy(&r);
 *     } else fprintf(stderr, "%s\n", ember_client_last_error(c));
 *     ember_client_destroy(&c);
 *
 * Synchronous calls (ember_embed, ember_embed_tokens, ember_tokenize, ember_info) block until
 * the request completes or its deadline passes. Asynchronous calls (ember_submit_*) return a
 * request id at once; many requests may be in flight from one thread over one socket per broker,
 * and ember_poll / ember_wait / ember_wait_any collect them. Replies are matched to requests by
 * id; replies to unknown, abandoned or finished requests are ignored (and counted). All network
 * progress (sending, receiving, retrying) happens inside the library's calls: an application
 * that submits must keep calling poll/wait for its requests to advance.
 *
 * Reliability: every request has an overall deadline (timeout_ms). An attempt that gets no reply
 * within attempt_timeout_ms, a broker that cannot be reached or drops its connection, and the
 * replies UNAVAILABLE, OVERLOADED and NO_WORKERS make the request retry, on another broker when
 * there is one, after an exponential backoff with jitter, while the deadline and max_attempts
 * allow. Embedding is idempotent, so a retry is safe; the first reply for a request wins.
 * Other error replies (bad request, input too long, ...) are final.
 *
 * Errors: every function that can fail returns EMBER_OK (0) or a negative ember_status; nothing
 * in the library exits, aborts or prints. The message of the last failure of a client call is
 * in ember_client_last_error(). Results hold their data as float32 whatever the wire dtype.
 *
 * Thread-safety: a client (and the results and request ids it hands out) is used by one thread
 * at a time: ZeroMQ sockets are not thread-safe. Different clients may be used from different
 * threads at the same time; each owns its ZeroMQ context. Results are independent objects once
 * handed out: a result may be read from any thread and outlives its client. The free functions
 * (ember_version, ember_status_name, ember_*_init) are thread-safe.
 *
 * Build: pkg-config --cflags --libs ember. C and C++. */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0

/* Status codes. 0 is success; every error is negative. The numbers are stable. */
typedef enum ember_status {
    EMBER_OK = 0,
    EMBER_EINVAL = -1,           /* invalid argument (NULL pointer, n == 0, bad option, unknown
                                    request id) */
    EMBER_ENOMEM = -2,           /* out of memory */
    EMBER_ETIMEOUT = -3,         /* the request's deadline passed with no reply from any broker */
    EMBER_EUNAVAILABLE = -4,     /* no broker could be reached, or every broker answered that it
                                    is draining / unavailable */
    EMBER_EOVERLOADED = -5,      /* the pool is overloaded (still so after the retries) */
    EMBER_EBAD_REQUEST = -6,     /* the broker refused the request as malformed */
    EMBER_ETOO_LARGE = -7,       /* a limit: inputs per request, bytes of a text, message size */
    EMBER_EINPUT_TOO_LONG = -8,  /* an input is over the model's maximum length and truncation
                                    was off */
    EMBER_EDEADLINE = -9,        /* the broker gave up: the deadline passed inside the pool */
    EMBER_ENO_WORKERS = -10,     /* the broker has no worker to serve the request */
    EMBER_EMODEL_MISMATCH = -11, /* the pool serves another model than the one asked for */
    EMBER_EUNSUPPORTED = -12,    /* well-formed but not supported (dimensions over the model's
                                    width, dtype) */
    EMBER_EINTERNAL = -13,       /* an internal failure, in the library or on the server */
    EMBER_EPROTOCOL = -14,       /* the broker speaks another protocol version, or sent a reply
                                    that does not fit the request */
    EMBER_EAGAIN = -15,          /* ember_poll / ember_wait*: not finished yet (not a failure;
                                    the request stays in flight) */
    EMBER_ENOT_FOUND = -16,      /* ember_wait_any: no request is in flight */
} ember_status_t;

/* Short stable name of a status ("EMBER_ETIMEOUT"); "EMBER_E?" for an unknown value. Static
 * string; thread-safe. */
EMBER_API const char *ember_status_name(int status);

/* The library's version, "MAJOR.MINOR.PATCH". Static string; thread-safe. */
EMBER_API const char *ember_version(void);

/* Wire dtype of embeddings. The caller always gets float32; f16 halves the bytes on the wire. */
typedef enum ember_dtype {
    EMBER_DTYPE_F32 = 0,
    EMBER_DTYPE_F16 = 1,
} ember_dtype_t;

/* Client options. Initialise with ember_options_init (which sets struct_size and every default)
 * and change what you need: fields added in later versions go at the end, and a library reads
 * only the first struct_size bytes, so a program built against an older header keeps working. */
typedef struct ember_options {
    uint32_t struct_size;       /* sizeof(ember_options_t); set by ember_options_init */
    const char *const *brokers; /* [n_brokers] broker frontend endpoints ("tcp://host:port");
                                   copied by ember_client_new */
    size_t n_brokers;
    const char *redis_url;        /* or: discover brokers in this registry ("redis://host:port");
                                     used when n_brokers == 0; copied */
    const char *model;            /* the model the client expects (sent with every request, a
                                     pool serving another answers EMBER_EMODEL_MISMATCH); NULL =
                                     any */
    int32_t timeout_ms;           /* default overall deadline of a request (default 30000) */
    int32_t attempt_timeout_ms;   /* no reply within this: retry on another broker (default
                                     10000; never beyond the overall deadline) */
    int32_t max_attempts;         /* attempts per request, first included (default 5) */
    int32_t backoff_initial_ms;   /* first retry delay (default 50); doubled per retry */
    int32_t backoff_max_ms;       /* retry delay cap (default 2000); jitter: the delay is drawn
                                     uniformly from [d/2, d] */
    int32_t discovery_refresh_ms; /* Redis mode: re-read the broker list this often while the
                                     client is used (default 5000), and on failover (at most
                                     once per 500 ms) */
    int32_t redis_timeout_ms;     /* Redis connect/command timeout (default 250) */
    int32_t spin_us;              /* while waiting for replies, busy-poll this long before
                                     sleeping: lower latency at the cost of a busy core
                                     (default 0 = never) */
} ember_options_t;

/* Fills *o with the defaults and struct_size = sizeof *o. */
EMBER_API void ember_options_init(ember_options_t *o);

/* Per-request options; NULL means all defaults. Initialise with ember_request_opts_init. */
typedef struct ember_request_opts {
    uint32_t struct_size; /* sizeof(ember_request_opts_t); set by ember_request_opts_init */
    int32_t normalize;    /* embed: 1 L2-normalise, 0 raw pooled vector, -1 the model's default
                             (default -1) */
    uint32_t dimensions;  /* embed: keep the first N dimensions (Matryoshka); 0 = full width */
    ember_dtype_t dtype;  /* embed: wire dtype, f32 (default) or f16; results are float32 */
    int32_t truncate;     /* 1 (default): cut inputs over the model's maximum length; 0: such
                             an input fails the request with EMBER_EINPUT_TOO_LONG */
    int32_t timeout_ms;   /* overall deadline of this request; 0 = the client's timeout_ms */
} ember_request_opts_t;

/* Fills *o with the defaults and struct_size = sizeof *o. */
EMBER_API void ember_request_opts_init(ember_request_opts_t *o);

typedef struct ember_client ember_client_t; /* opaque */
typedef struct ember_result ember_result_t; /* opaque */

/* Creates a client. Brokers come from opts->brokers (at least one) or, when n_brokers is 0,
 * from the Redis registry at opts->redis_url (the frontends of brokers in state "ready"). No
 * broker is contacted here: sockets connect in the background and requests wait for them (up
 * to their deadline). In Redis mode the registry is read once now: an unreachable Redis is
 * EMBER_EUNAVAILABLE; a registry with no live broker is not an error (requests wait for one).
 * Returns EMBER_OK with *out a new client (destroy with ember_client_destroy), or EMBER_EINVAL
 * (no broker and no Redis URL, a bad option, a bad URL or endpoint), EMBER_EUNAVAILABLE,
 * EMBER_ENOMEM, EMBER_EINTERNAL (ZeroMQ failed), with *out = NULL and, if errbuf is not NULL, a
 * NUL-terminated message in errbuf[errbuf_len]. opts NULL is EMBER_EINVAL. */
EMBER_API int ember_client_new(const ember_options_t *opts, ember_client_t **out, char *errbuf,
                               size_t errbuf_len);

/* Destroys the client: abandons requests in flight, closes its sockets (no linger), frees its
 * ZeroMQ context, sets *client_p to NULL. Results already handed out stay valid. Accepts NULL
 * and *client_p == NULL. */
EMBER_API void ember_client_destroy(ember_client_t **client_p);

/* The message of the client's last failed call (or request), NUL-terminated, owned by the
 * client, valid until its next call; "" when the last call succeeded. */
EMBER_API const char *ember_client_last_error(const ember_client_t *client);

/* --- synchronous calls: block until the request is done or its deadline passes ---------- */

/* Embeds n texts: texts[i] holds lens[i] bytes of UTF-8 (not NUL-terminated; invalid UTF-8 is
 * repaired by the pool's tokenizer). The inputs are copied; the caller keeps ownership.
 * Returns EMBER_OK with *out a new result of n rows (destroy with ember_result_destroy), or an
 * error with *out = NULL and the message in ember_client_last_error. */
EMBER_API int ember_embed(ember_client_t *client, const char *const *texts, const size_t *lens,
                          size_t n, const ember_request_opts_t *opts, ember_result_t **out);

/* Embeds n token-id sequences: ids[i] holds lens[i] >= 1 ids (>= 0), used as they are (special
 * tokens are the caller's business). Same returns as ember_embed. */
EMBER_API int ember_embed_tokens(ember_client_t *client, const int32_t *const *ids,
                                 const size_t *lens, size_t n, const ember_request_opts_t *opts,
                                 ember_result_t **out);

/* The pool's token ids of n texts (special tokens included; truncated per opts->truncate). The
 * result has ember_result_count() == n and the ids through ember_result_token_ids. Same returns
 * as ember_embed. */
EMBER_API int ember_tokenize(ember_client_t *client, const char *const *texts, const size_t *lens,
                             size_t n, const ember_request_opts_t *opts, ember_result_t **out);

/* What a broker serves, and its health. Strings are NUL-terminated, truncated to fit. */
typedef struct ember_info {
    int32_t healthy;      /* 1: at least one worker is ready */
    uint32_t workers;     /* ready workers */
    uint32_t dim;         /* embedding width, 0 = unknown */
    uint32_t max_seq;     /* maximum tokens per input, 0 = unknown */
    uint64_t load_tokens; /* tokens queued or in flight on the broker */
    char model[256];      /* "" when unknown */
    char family[32];
    char version[64];   /* server software version */
    char endpoint[256]; /* the broker that answered */
} ember_info_t;

/* Asks one broker (with the usual retries and failover) for its info. timeout_ms 0 = the
 * client's timeout_ms. Returns EMBER_OK with *info filled, or an error (*info zeroed). */
EMBER_API int ember_info(ember_client_t *client, int32_t timeout_ms, ember_info_t *info);

/* --- asynchronous calls ------------------------------------------------------------------ */

/* Request ids: never 0; unique within a client. */
typedef uint64_t ember_req_t;

/* Like ember_embed / ember_embed_tokens / ember_tokenize, but return at once with *req the id
 * of the request, in flight (the first send is tried before returning). The inputs are copied.
 * Returns EMBER_OK, or EMBER_EINVAL / EMBER_ETOO_LARGE / EMBER_ENOMEM with *req = 0 and nothing
 * in flight. Collect the outcome with ember_poll, ember_wait or ember_wait_any; every submitted
 * request is collected exactly once, or abandoned with ember_abandon. */
EMBER_API int ember_submit_embed(ember_client_t *client, const char *const *texts,
                                 const size_t *lens, size_t n, const ember_request_opts_t *opts,
                                 ember_req_t *req);
EMBER_API int ember_submit_embed_tokens(ember_client_t *client, const int32_t *const *ids,
                                        const size_t *lens, size_t n,
                                        const ember_request_opts_t *opts, ember_req_t *req);
EMBER_API int ember_submit_tokenize(ember_client_t *client, const char *const *texts,
                                    const size_t *lens, size_t n, const ember_request_opts_t *opts,
                                    ember_req_t *req);

/* Makes progress without blocking and reports on req: EMBER_EAGAIN while it is in flight;
 * otherwise the request is finished and released: its outcome is returned (EMBER_OK with *out
 * a new result, or the request's error with *out = NULL and the message in
 * ember_client_last_error). EMBER_EINVAL for an unknown or already collected id. */
EMBER_API int ember_poll(ember_client_t *client, ember_req_t req, ember_result_t **out);

/* Like ember_poll, but waits up to timeout_ms for req to finish (-1: until its deadline, which
 * always comes). EMBER_EAGAIN when timeout_ms passed first (the request stays in flight). */
EMBER_API int ember_wait(ember_client_t *client, ember_req_t req, int32_t timeout_ms,
                         ember_result_t **out);

/* Waits up to timeout_ms (-1: until one finishes, 0: poll) for any request in flight to finish
 * and collects it (requests finish in completion order): *req names it, the return value and
 * *out are its outcome as for ember_poll. EMBER_EAGAIN (*req = 0) when none finished in time;
 * EMBER_ENOT_FOUND (*req = 0) when no request is in flight. */
EMBER_API int ember_wait_any(ember_client_t *client, int32_t timeout_ms, ember_req_t *req,
                             ember_result_t **out);

/* Gives req up: it is released now, and a late reply to it is ignored. Returns EMBER_OK or
 * EMBER_EINVAL (unknown id). */
EMBER_API int ember_abandon(ember_client_t *client, ember_req_t req);

/* Requests submitted and not yet collected or abandoned. */
EMBER_API size_t ember_in_flight(const ember_client_t *client);

/* Counters since the client was created (for monitoring and tests). */
typedef struct ember_stats {
    uint64_t requests;      /* submitted */
    uint64_t sends;         /* attempts sent to a broker */
    uint64_t retries;       /* attempts after the first */
    uint64_t failovers;     /* retries that went to another broker than the previous attempt */
    uint64_t replies;       /* replies matched to a live request */
    uint64_t stale_replies; /* replies to unknown, abandoned or finished requests (ignored) */
    uint64_t bad_replies;   /* frames that did not decode as a reply (ignored) */
    uint64_t timeouts;      /* attempts that got no reply in time */
    uint64_t disconnects;   /* broker connections lost */
    uint64_t discoveries;   /* successful reads of the Redis registry */
    uint64_t brokers;       /* brokers known now */
} ember_stats_t;

/* Fills *stats. client and stats must not be NULL. */
EMBER_API void ember_client_stats(const ember_client_t *client, ember_stats_t *stats);

/* --- results ----------------------------------------------------------------------------- */

/* Timings of a request, microseconds; 0 when the broker did not report a stage. */
typedef struct ember_timings {
    uint64_t tokenize_us; /* tokenization on the broker */
    uint64_t queue_us;    /* waiting for a worker / a batch */
    uint64_t compute_us;  /* model compute (the slowest chunk) */
    uint64_t server_us;   /* broker receipt to reply */
    uint64_t client_us;   /* submit to reply on this client, retries included */
    uint32_t attempts;    /* attempts the request took (1 = no retry) */
} ember_timings_t;

/* Rows: the number of inputs. */
EMBER_API size_t ember_result_count(const ember_result_t *r);
/* Row width of the embeddings (0 for a tokenize result). */
EMBER_API size_t ember_result_dim(const ember_result_t *r);
/* The embeddings, [count x dim] float32, row-major, owned by the result (NULL for a tokenize
 * result). */
EMBER_API const float *ember_result_embeddings(const ember_result_t *r);
/* Row i of the embeddings, or NULL when i >= count or there are none. */
EMBER_API const float *ember_result_embedding(const ember_result_t *r, size_t i);
/* Tokens the model saw for input i (after truncation, special tokens included); 0 when i >=
 * count. */
EMBER_API uint32_t ember_result_tokens(const ember_result_t *r, size_t i);
/* Tokenize results: the ids of input i (*len of them), owned by the result; NULL with *len = 0
 * when i >= count or r is not a tokenize result. */
EMBER_API const int32_t *ember_result_token_ids(const ember_result_t *r, size_t i, size_t *len);
/* Tokens processed for the whole request (usage). */
EMBER_API uint64_t ember_result_usage_tokens(const ember_result_t *r);
/* The model that served, NUL-terminated, owned by the result; "" when the broker did not say. */
EMBER_API const char *ember_result_model(const ember_result_t *r);
/* Fills *t. */
EMBER_API void ember_result_timings(const ember_result_t *r, ember_timings_t *t);
/* Frees the result and sets *r_p to NULL. Accepts NULL and *r_p == NULL. */
EMBER_API void ember_result_destroy(ember_result_t **r_p);

#ifdef __cplusplus
}
#endif

#endif
