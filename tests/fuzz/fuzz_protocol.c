/* tests/fuzz/fuzz_protocol.c — libFuzzer target for the wire protocol decoder
 * (common/protocol.c over common/msgpack_read.c). Each input is decoded with the default
 * limits. A failure must leave nothing allocated and a protocol error code to answer with; a
 * success must re-encode, decode again to an equal message, and re-encode to the same bytes
 * (encoding is deterministic). The bounded reader is also run over the raw input at several
 * depths. Any broken invariant aborts, which libFuzzer reports as a crash.
 * Seeds: tests/fuzz/seeds/fuzz_protocol/ (one message of each type, written by
 * `protocol_messages --write-seeds DIR`). Single-threaded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/msgpack_read.h"
#include "common/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void s_fail(const char *what, const com_error_t *err) {
    fprintf(stderr, "fuzz_protocol: %s: %s\n", what, err ? err->msg : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (uint32_t depth = 0; depth < 10; depth += 3)
        (void)com_mpr_check(data, size, depth, NULL);

    com_proto_msg_t m;
    com_error_t err = {0};
    int rc = com_proto_decode(data, size, NULL, &m, &err);
    if (rc != 0) {
        if (m.perr == COM_PROTO_OK || m.n_owned_ != 0 || err.code != rc || err.msg[0] == '\0')
            s_fail("failed decode left a bad state", &err);
        com_proto_msg_free(&m);
        return 0;
    }
    if (m.perr != COM_PROTO_OK || !m.has_id || m.version != COM_PROTO_VERSION)
        s_fail("successful decode with a bad header", &err);

    com_proto_buf_t b1 = {0}, b2 = {0};
    if (com_proto_encode(&m, &b1, &err) != 0)
        s_fail("a decoded message does not encode", &err);
    com_proto_msg_t m2;
    if (com_proto_decode(b1.data, b1.len, NULL, &m2, &err) != 0)
        s_fail("a re-encoded message does not decode", &err);
    if (!com_proto_msg_equal(&m, &m2))
        s_fail("the round trip changed the message", NULL);
    if (com_proto_encode(&m2, &b2, &err) != 0)
        s_fail("the second encode failed", &err);
    if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0)
        s_fail("encoding is not deterministic", NULL);
    com_proto_msg_free(&m2);
    com_proto_msg_free(&m);
    com_proto_buf_free(&b1);
    com_proto_buf_free(&b2);
    return 0;
}
