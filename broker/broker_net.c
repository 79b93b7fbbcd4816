/* broker/broker_net.c — sending on the broker's ROUTER sockets: [identity][payload], never
 * blocking (ZMQ_DONTWAIT; with ZMQ_ROUTER_MANDATORY an unroutable peer is EHOSTUNREACH, a full
 * peer queue EAGAIN), failures counted. Main thread only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "broker/broker.h"
#include "common/log.h"

static void s_free_buf(void *data, void *hint) {
    (void)hint;
    free(data);
}

int brk_net_send(brk_t *b, void *sock, const uint8_t *ident, size_t ident_len,
                 com_proto_buf_t *buf) {
    int rc = 0;
    if (zmq_send(sock, ident, ident_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        rc = -errno;
        goto fail;
    }
    /* The first frame went out, so the peer is routable and the pipe has room for the message
     * (ZeroMQ checks the HWM per message, on the first frame). Zero-copy the payload. */
    zmq_msg_t m;
    if (zmq_msg_init_data(&m, buf->data, buf->len, s_free_buf, NULL) != 0) {
        rc = -errno;
        goto fail;
    }
    buf->data = NULL;
    buf->len = 0;
    if (zmq_msg_send(&m, sock, ZMQ_DONTWAIT) < 0) {
        rc = -errno;
        zmq_msg_close(&m);
        goto fail;
    }
    return 0;
fail:
    com_proto_buf_free(buf);
    b->c.send_failures++;
    COM_DEBUG("send to a peer failed: %s", zmq_strerror(-rc));
    return rc;
}

void brk_net_reply_error(brk_t *b, const uint8_t *ident, size_t ident_len, uint64_t id,
                         com_proto_code_t code, const char *fmt, ...) {
    char msg[COM_ERROR_MSG_MAX]; /* formatted here once, for the reply and the debug log */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        msg[0] = '\0';
    b->c.requests_failed++;
    b->c.failed_by_code[(unsigned)code < BRK_CODE_SLOTS ? (unsigned)code : 0]++;
    if (code == COM_PROTO_OVERLOADED)
        b->c.overloads++;
    if (code == COM_PROTO_DEADLINE_EXCEEDED || code == COM_PROTO_NO_WORKERS)
        b->c.deadline_misses++;
    com_proto_buf_t buf = {0};
    com_error_t err = {0};
    if (com_proto_reply_error(id, code, &buf, &err, "%s", msg) != 0) {
        COM_ERROR("cannot encode an error reply: %s", err.msg);
        return;
    }
    COM_DEBUG("reply error id=%llu %s: %s", (unsigned long long)id, com_proto_code_name(code), msg);
    brk_net_send(b, b->frontend, ident, ident_len, &buf);
}
