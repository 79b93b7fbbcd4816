/* common/protocol.h — ember's wire protocol: msgpack messages between clients, brokers and
 * workers, specified in docs/protocol.md (keys, types, units, defaults, error codes, limits).
 *
 * Every message is one msgpack map with the protocol version "v", the message type "t" and an
 * id "id" (u64; the client's request id, or the sender's sequence number for messages that
 * belong to no request). Unknown keys are ignored; a missing required key, a wrong type, a
 * duplicated known key or a value out of range is an error.
 *
 * Decoding (com_proto_decode) treats the bytes as hostile: the message size is checked first,
 * and every byte is read with the bounded reader (common/msgpack_read.h). A message whose
 * header comes first (as com_proto_encode writes it) is decoded in one walk that also checks
 * it is exactly one well-formed map nested at most max_depth deep; anything else, and every
 * failure, is decoded again strictly (the whole buffer's structure, then the header, then the
 * fields), which decides the error. Every count is checked against the limits
 * (com_proto_limits_t) before anything is allocated from it. Strings and bins are views into the
 * caller's buffer (zero-copy), so the buffer must outlive the decoded message; arrays of numbers
 * (token ids, counts) are copied into arrays the message owns, freed by com_proto_msg_free(). Text
 * inputs are NOT checked for valid UTF-8 here: the tokenizer repairs invalid sequences
 * (docs/architecture.md).
 *
 * Encoding (com_proto_encode and the typed com_proto_encode_<type> wrappers) takes the same
 * structs, filled by the caller with its own pointers, checks their consistency (COM_EINVAL)
 * and writes a malloc'd buffer with msgpack-c's packer. Optional fields at their default are
 * omitted, so decode(encode(m)) equals m field for field (com_proto_msg_equal).
 *
 * Threading: pure functions over caller-owned data; a message belongs to one thread at a time. */
#ifndef EMBER_COMMON_PROTOCOL_H
#define EMBER_COMMON_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The one major version this code speaks. Compatible additions (optional keys, message types,
 * error codes) do not change it; a message with any other "v" is UNSUPPORTED_VERSION. */
#define COM_PROTO_VERSION 1

/* Message types; the wire name ("t") of each is in the comment. Numbers are not sent. */
typedef enum com_proto_type {
    COM_PROTO_NONE = 0,
    /* client -> broker */
    COM_PROTO_EMBED,    /* "embed" */
    COM_PROTO_SCORE,    /* "score" */
    COM_PROTO_TOKENIZE, /* "tokenize" */
    COM_PROTO_INFO,     /* "info" (also the health check) */
    /* broker -> client */
    COM_PROTO_EMBED_REPLY,    /* "embed_reply" */
    COM_PROTO_SCORE_REPLY,    /* "score_reply" */
    COM_PROTO_TOKENIZE_REPLY, /* "tokenize_reply" */
    COM_PROTO_INFO_REPLY,     /* "info_reply" */
    COM_PROTO_ERROR,          /* "error" */
    /* worker <-> broker */
    COM_PROTO_READY,      /* "ready": worker -> broker */
    COM_PROTO_CHUNK,      /* "chunk": broker -> worker */
    COM_PROTO_RESULT,     /* "result": worker -> broker */
    COM_PROTO_HEARTBEAT,  /* "hb": both ways */
    COM_PROTO_DRAIN,      /* "drain": both ways */
    COM_PROTO_DISCONNECT, /* "disconnect": both ways */
    COM_PROTO_TYPE_COUNT
} com_proto_type_t;

/* Protocol error codes, sent as "code" in error replies and failed results. The numbers are
 * stable: never renumber, only append. A receiver treats an unknown code like INTERNAL. */
typedef enum com_proto_code {
    COM_PROTO_OK = 0,
    COM_PROTO_BAD_REQUEST = 1,         /* malformed msgpack, wrong type, missing/duplicate key,
                                          bad value, unknown message type */
    COM_PROTO_TOO_LARGE = 2,           /* a limit: message bytes, inputs, tokens, string bytes,
                                          dims, nesting */
    COM_PROTO_UNSUPPORTED_VERSION = 3, /* "v" is not a major version the receiver speaks */
    COM_PROTO_OVERLOADED = 4,          /* queues full; retry later, possibly elsewhere */
    COM_PROTO_DEADLINE_EXCEEDED = 5,   /* the request's deadline passed before completion */
    COM_PROTO_NO_WORKERS = 6,          /* no ready worker can serve the request */
    COM_PROTO_MODEL_MISMATCH = 7,      /* the requested model is not the one served */
    COM_PROTO_INTERNAL = 8,            /* a bug or an unexpected failure on the server */
    COM_PROTO_INPUT_TOO_LONG = 9,      /* an input exceeds the model's sequence length and
                                          truncation was off */
    COM_PROTO_UNSUPPORTED = 10,        /* well-formed but not supported: a dtype, a task, dims
                                          larger than the model's */
    COM_PROTO_UNAVAILABLE = 11,        /* the broker or worker is draining or shutting down */
} com_proto_code_t;

/* Tensor element types; wire names "f32" and "f16". Little-endian IEEE 754. */
typedef enum com_proto_dtype {
    COM_PROTO_F32 = 0,
    COM_PROTO_F16 = 1,
} com_proto_dtype_t;

/* What a worker's model does; wire names "embed" and "score" (cross-encoder). */
typedef enum com_proto_task {
    COM_PROTO_TASK_EMBED = 0,
    COM_PROTO_TASK_SCORE = 1,
} com_proto_task_t;

/* Decoder limits. Every violation is COM_PROTO_TOO_LARGE (COM_ETOOLONG) with a message naming
 * the field and the limit. A value at the limit is accepted, limit + 1 is not. */
typedef struct com_proto_limits {
    size_t max_msg_bytes;          /* whole message, bytes; default 64 MiB */
    uint32_t max_inputs;           /* inputs / pairs / sequences / tensor rows per message;
                                      default 65536 */
    uint32_t max_tokens_per_input; /* token ids in one input; default 32768 */
    uint32_t max_total_tokens;     /* token ids in one message; default 8 Mi (8388608); at most
                                      INT32_MAX (offsets are int32) */
    uint32_t max_text_bytes;       /* bytes of one text input; default 1 MiB */
    uint32_t max_str_bytes;        /* bytes of any other string (model, ids, messages);
                                      default 4096 */
    uint32_t max_dim;              /* tensor row width and "dims"; default 65536 */
    uint32_t max_depth;            /* container nesting, top-level map = 1; default 8, must be
                                      in [3, COM_MPR_DEPTH_CAP] */
} com_proto_limits_t;

/* Fills lim with the defaults above. */
void com_proto_limits_default(com_proto_limits_t *lim);

/* A byte string. Decoded: points into the decoded buffer, NOT NUL-terminated, UTF-8 not
 * checked. Encoding: the caller's bytes. An optional string that is absent has ptr == NULL. */
typedef struct com_proto_str {
    const char *ptr;
    uint32_t len; /* bytes */
} com_proto_str_t;

typedef enum com_proto_in_kind {
    COM_PROTO_IN_TEXT = 1, /* msgpack strings */
    COM_PROTO_IN_IDS = 2,  /* msgpack arrays of token ids */
} com_proto_in_kind_t;

/* A list of n inputs, all of one kind. */
typedef struct com_proto_inputs {
    com_proto_in_kind_t kind;
    uint32_t n;             /* number of inputs */
    com_proto_str_t *texts; /* TEXT: [n]; decoded: array owned by the message, each view into
                               the buffer */
    int32_t *ids;           /* IDS: [offs[n]] token ids, each >= 0, packed back to back;
                               decoded: owned by the message */
    int32_t *offs;          /* IDS: [n + 1] prefix sums, offs[0] = 0; input i is
                               ids[offs[i] .. offs[i+1]); decoded: owned */
} com_proto_inputs_t;

/* A packed tensor [n, dim], row-major, little-endian, dtype elements. */
typedef struct com_proto_tensor {
    com_proto_dtype_t dtype;
    uint32_t n;       /* rows (one per input), >= 1 */
    uint32_t dim;     /* row width, >= 1 */
    const void *data; /* [n, dim] dtype LE; decoded: into the buffer, may be unaligned */
    size_t nbytes;    /* == n * dim * com_proto_dtype_size(dtype) */
} com_proto_tensor_t;

typedef struct com_proto_usage {
    uint64_t tokens; /* "tok": tokens processed for the request (after truncation) */
} com_proto_usage_t;

/* Where the time went, microseconds; 0 when a stage did not apply. */
typedef struct com_proto_timings {
    uint64_t tokenize_us; /* "tok": tokenization on the broker */
    uint64_t queue_us;    /* "queue": waiting for a worker / a batch */
    uint64_t compute_us;  /* "comp": model compute */
    uint64_t total_us;    /* "total": receipt to reply on the broker */
} com_proto_timings_t;

/* "embed": client -> broker. */
typedef struct com_proto_embed {
    com_proto_inputs_t in;   /* "in", required, n >= 1; TEXT or IDS (non-empty arrays) */
    com_proto_str_t model;   /* "model", optional: the model the client expects */
    int32_t normalize;       /* "norm" bool, optional: 1 / 0; -1 (absent) = model default */
    uint32_t dims;           /* "dims", optional: Matryoshka width; 0 (absent) = full */
    com_proto_dtype_t dtype; /* "dt", optional, default f32 */
    bool truncate;           /* "trunc", optional, default true */
    uint32_t deadline_ms;    /* "dl", optional: ms from receipt by the broker; 0 = none */
} com_proto_embed_t;

/* "score": client -> broker; relevance of text pairs (cross-encoders). */
typedef struct com_proto_score {
    uint32_t n;              /* pairs, >= 1 */
    com_proto_str_t *pairs;  /* "in": [n][2] = a0, b0, a1, b1, ...; decoded: owned array of
                                views into the buffer */
    com_proto_str_t model;   /* "model", optional */
    com_proto_dtype_t dtype; /* "dt", optional, default f32 */
    bool truncate;           /* "trunc", optional, default true */
    uint32_t deadline_ms;    /* "dl", optional, 0 = none */
} com_proto_score_t;

/* "tokenize": client -> broker. */
typedef struct com_proto_tokenize {
    com_proto_inputs_t in; /* "in", required, TEXT only, n >= 1 */
    com_proto_str_t model; /* "model", optional */
    bool truncate;         /* "trunc", optional, default true */
    uint32_t deadline_ms;  /* "dl", optional, 0 = none */
} com_proto_tokenize_t;

/* "info": client -> broker; model, dimensions and health. */
typedef struct com_proto_info {
    com_proto_str_t model; /* "model", optional */
} com_proto_info_t;

/* "embed_reply": broker -> client. */
typedef struct com_proto_embed_reply {
    com_proto_str_t model;      /* "model", optional: the model that served */
    com_proto_tensor_t emb;     /* "dt" (optional, default f32), "n", "dim", "emb" (bin) */
    uint32_t *ntok;             /* "ntok": [emb.n] tokens per input; decoded: owned */
    com_proto_usage_t usage;    /* "use", required */
    com_proto_timings_t timing; /* "tm", required */
} com_proto_embed_reply_t;

/* "score_reply": broker -> client. */
typedef struct com_proto_score_reply {
    com_proto_str_t model;      /* "model", optional */
    com_proto_tensor_t scores;  /* "dt", "n", "sc" (bin); dim is always 1 (not sent) */
    uint32_t *ntok;             /* "ntok": [scores.n] tokens per pair; decoded: owned */
    com_proto_usage_t usage;    /* "use", required */
    com_proto_timings_t timing; /* "tm", required */
} com_proto_score_reply_t;

/* "tokenize_reply": broker -> client. */
typedef struct com_proto_tokenize_reply {
    com_proto_str_t model;      /* "model", optional */
    com_proto_inputs_t ids;     /* "ids", required: IDS, one (possibly empty) array per input */
    com_proto_usage_t usage;    /* "use", required */
    com_proto_timings_t timing; /* "tm", required */
} com_proto_tokenize_reply_t;

/* "info_reply": broker -> client. */
typedef struct com_proto_info_reply {
    bool ok;                    /* "ok", required: at least one worker is ready */
    uint32_t workers;           /* "nwk", required: ready workers */
    com_proto_str_t model;      /* "model", optional (absent while no worker is known) */
    com_proto_str_t family;     /* "fam", optional */
    com_proto_str_t version;    /* "ver", optional: server software version */
    uint32_t dim;               /* "dim", optional: embedding width, 0 = unknown */
    uint32_t max_seq;           /* "msl", optional: max tokens per input, 0 = unknown */
    uint64_t load_tokens;       /* "load", optional: tokens queued or in flight */
    com_proto_usage_t usage;    /* "use", optional (zero) */
    com_proto_timings_t timing; /* "tm", optional (zero) */
} com_proto_info_reply_t;

/* "error": broker -> client, the reply to a request that failed. */
typedef struct com_proto_error_msg {
    uint32_t code;              /* "code", required: a com_proto_code_t (unknown = INTERNAL) */
    com_proto_str_t msg;        /* "msg", required: human-readable, may be empty */
    com_proto_usage_t usage;    /* "use", optional (zero) */
    com_proto_timings_t timing; /* "tm", optional (zero) */
} com_proto_error_msg_t;

/* "ready": worker -> broker, on connect and whenever its capabilities change. */
typedef struct com_proto_ready {
    com_proto_str_t worker_id; /* "wid", required */
    com_proto_str_t model;     /* "model", required */
    com_proto_str_t family;    /* "fam", required: "bert", "xlmr", "qwen3", ... */
    com_proto_str_t device;    /* "dev", required: "cpu", "cuda:0", ... */
    uint32_t max_batch_tokens; /* "mbt", required: largest packed batch, tokens */
    uint32_t dim;              /* "dim", required: embedding width (1 for a scorer) */
    uint32_t max_seq;          /* "msl", required: max tokens per sequence */
    uint32_t credits;          /* "cred", required: chunks it accepts in flight at once */
    com_proto_task_t task;     /* "task", optional, default embed */
} com_proto_ready_t;

/* "chunk": broker -> worker; some sequences of one request, already tokenized. "id" is the
 * request id. */
typedef struct com_proto_chunk {
    uint32_t chunk_id;       /* "cid", required: index of the chunk within the request */
    uint32_t attempt;        /* "att", required: 0 for the first dispatch, +1 per re-dispatch */
    com_proto_inputs_t in;   /* "in", required: IDS, n >= 1, every array non-empty */
    uint32_t *seg;           /* "seg", optional: [in.n] length of each sequence's first
                                segment (token type 0; the rest is type 1), each <= that
                                sequence's length; NULL = all type 0; decoded: owned */
    int32_t normalize;       /* "norm", optional: 1 / 0 / -1 (absent) = model default */
    uint32_t dims;           /* "dims", optional: 0 = full */
    com_proto_dtype_t dtype; /* "dt", optional, default f32: dtype of the result */
    uint32_t deadline_ms;    /* "dl", optional: ms left when sent; 0 = none */
} com_proto_chunk_t;

/* "result": worker -> broker; "id" is the request id. Either a tensor or an error. */
typedef struct com_proto_result {
    uint32_t chunk_id;          /* "cid", required */
    uint32_t attempt;           /* "att", required: echoed from the chunk */
    bool failed;                /* "err" present */
    com_proto_tensor_t emb;     /* !failed: "dt", "n", "dim", "emb" */
    uint32_t err_code;          /* failed: "err" map "code" */
    com_proto_str_t err_msg;    /* failed: "err" map "msg" */
    com_proto_timings_t timing; /* "tm", optional: queue and compute on the worker */
} com_proto_result_t;

/* "hb": both ways; "id" is the sender's sequence number. All fields optional, default 0. */
typedef struct com_proto_heartbeat {
    uint64_t load_tokens;  /* "ltok": tokens queued or in flight on the sender */
    uint64_t load_seqs;    /* "lseq": sequences queued or in flight */
    uint64_t batches_done; /* "done": batches completed since start (progress) */
    uint32_t credits;      /* "cred": chunks the sender accepts in flight at once (window,
                              absolute, not a delta) */
} com_proto_heartbeat_t;

/* "drain" and "disconnect": both ways. */
typedef struct com_proto_notice {
    com_proto_str_t reason; /* "why", optional */
} com_proto_notice_t;

#define COM_PROTO_MAX_OWNED 4

/* A message: header, type-specific body, and the arrays a decoded message owns. */
typedef struct com_proto_msg {
    com_proto_type_t type; /* "t" */
    uint32_t version;      /* "v"; set by the decoder even when unsupported */
    uint64_t id;           /* "id" */
    bool has_id;           /* decode: "id" was read (also when decoding failed later, so the
                              error reply can carry it) */
    com_proto_code_t perr; /* decode: the code to answer with on failure; COM_PROTO_OK on
                              success */
    union {
        com_proto_embed_t embed;
        com_proto_score_t score;
        com_proto_tokenize_t tokenize;
        com_proto_info_t info;
        com_proto_embed_reply_t embed_reply;
        com_proto_score_reply_t score_reply;
        com_proto_tokenize_reply_t tokenize_reply;
        com_proto_info_reply_t info_reply;
        com_proto_error_msg_t error;
        com_proto_ready_t ready;
        com_proto_chunk_t chunk;
        com_proto_result_t result;
        com_proto_heartbeat_t hb;
        com_proto_notice_t drain;
        com_proto_notice_t disconnect;
    } u;
    void *owned_[COM_PROTO_MAX_OWNED]; /* private: allocations freed by com_proto_msg_free */
    uint32_t n_owned_;
} com_proto_msg_t;

/* An encoded message: data[len] malloc'd, owned by the holder; free with com_proto_buf_free. */
typedef struct com_proto_buf {
    uint8_t *data;
    size_t len;
} com_proto_buf_t;

/* Zeroes m, sets type and id, the version, and every optional field to its default (normalize
 * -1, truncate true, f32). The way to start a message for encoding. */
void com_proto_msg_init(com_proto_msg_t *m, com_proto_type_t type, uint64_t id);

/* Decodes buf[len] (untrusted) under lim (NULL = defaults) into *out (overwritten; call
 * com_proto_msg_free when done). Returns 0 with out->perr == COM_PROTO_OK, or:
 *   COM_EFORMAT      perr BAD_REQUEST: malformed, wrong type, missing/duplicate key, bad value
 *   COM_ETOOLONG     perr TOO_LARGE: a limit (message names field and limit)
 *   COM_EUNSUPPORTED perr UNSUPPORTED_VERSION ("v") or UNSUPPORTED (dtype, task)
 *   COM_ENOMEM       perr INTERNAL
 *   COM_EINVAL       perr INTERNAL: lim out of range
 * On error nothing is left allocated, out->type/version/id/has_id hold what the header gave
 * (so a reply can be addressed), and err says what and where. Views in *out point into buf. */
int com_proto_decode(const void *buf, size_t len, const com_proto_limits_t *lim,
                     com_proto_msg_t *out, com_error_t *err);

/* Frees what a decoded message owns and zeroes it. Harmless on a caller-filled message (owns
 * nothing) and on NULL. */
void com_proto_msg_free(com_proto_msg_t *m);

/* Encodes m into *out (overwritten). Returns 0 with out->data malloc'd, or COM_EINVAL (the
 * message is inconsistent: bin size != n*dim*dtype, missing required string, kind mismatch...)
 * or COM_ENOMEM, with *out = {NULL, 0}. m is not changed. */
int com_proto_encode(const com_proto_msg_t *m, com_proto_buf_t *out, com_error_t *err);

/* Typed wrappers: encode a message of that type with header id. Same returns as above. */
int com_proto_encode_embed(uint64_t id, const com_proto_embed_t *b, com_proto_buf_t *out,
                           com_error_t *err);
int com_proto_encode_score(uint64_t id, const com_proto_score_t *b, com_proto_buf_t *out,
                           com_error_t *err);
int com_proto_encode_tokenize(uint64_t id, const com_proto_tokenize_t *b, com_proto_buf_t *out,
                              com_error_t *err);
int com_proto_encode_info(uint64_t id, const com_proto_info_t *b, com_proto_buf_t *out,
                          com_error_t *err);
int com_proto_encode_embed_reply(uint64_t id, const com_proto_embed_reply_t *b,
                                 com_proto_buf_t *out, com_error_t *err);
int com_proto_encode_score_reply(uint64_t id, const com_proto_score_reply_t *b,
                                 com_proto_buf_t *out, com_error_t *err);
int com_proto_encode_tokenize_reply(uint64_t id, const com_proto_tokenize_reply_t *b,
                                    com_proto_buf_t *out, com_error_t *err);
int com_proto_encode_info_reply(uint64_t id, const com_proto_info_reply_t *b, com_proto_buf_t *out,
                                com_error_t *err);
int com_proto_encode_error(uint64_t id, const com_proto_error_msg_t *b, com_proto_buf_t *out,
                           com_error_t *err);
int com_proto_encode_ready(uint64_t id, const com_proto_ready_t *b, com_proto_buf_t *out,
                           com_error_t *err);
int com_proto_encode_chunk(uint64_t id, const com_proto_chunk_t *b, com_proto_buf_t *out,
                           com_error_t *err);
int com_proto_encode_result(uint64_t id, const com_proto_result_t *b, com_proto_buf_t *out,
                            com_error_t *err);
int com_proto_encode_heartbeat(uint64_t id, const com_proto_heartbeat_t *b, com_proto_buf_t *out,
                               com_error_t *err);
int com_proto_encode_drain(uint64_t id, const com_proto_notice_t *b, com_proto_buf_t *out,
                           com_error_t *err);
int com_proto_encode_disconnect(uint64_t id, const com_proto_notice_t *b, com_proto_buf_t *out,
                                com_error_t *err);

/* Encodes an "error" reply with code and a printf-style message (truncated to 511 bytes).
 * The broker's answer to a failed decode: com_proto_reply_error(m.id, m.perr, out, err, "%s",
 * derr.msg). Same returns as com_proto_encode. */
int com_proto_reply_error(uint64_t id, com_proto_code_t code, com_proto_buf_t *out,
                          com_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Frees out->data and zeroes *out. Accepts NULL. */
void com_proto_buf_free(com_proto_buf_t *b);

/* Field-by-field equality of two messages (strings and bins by content). For tests and the
 * fuzzer's round trip. */
bool com_proto_msg_equal(const com_proto_msg_t *a, const com_proto_msg_t *b);

/* Bytes per element: 4 for f32, 2 for f16, 0 for an unknown value. */
size_t com_proto_dtype_size(com_proto_dtype_t dt);

/* Writes src[n*dim] host floats as little-endian dtype into dst (n*dim*dtype size bytes, any
 * alignment); f16 rounds to nearest even (common/half.h). */
void com_proto_tensor_pack(const float *src, size_t count, com_proto_dtype_t dt, void *dst);
/* Reads t's elements into dst[t->n * t->dim] host floats. */
void com_proto_tensor_unpack(const com_proto_tensor_t *t, float *dst);

/* Wire or display names: "embed", ...; "BAD_REQUEST", ...; "f32"/"f16". "?" when unknown. */
const char *com_proto_type_name(com_proto_type_t t);
const char *com_proto_code_name(uint32_t code);
const char *com_proto_dtype_name(com_proto_dtype_t dt);

#endif
