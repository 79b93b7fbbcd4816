/* common/error.c — see error.h. Pure functions; no global state. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int com_error_set(com_error_t *err, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int com_error_prefix(com_error_t *err, int code, const char *fmt, ...) {
    if (!err)
        return code;
    char head[COM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int hn = vsnprintf(head, sizeof head - 2, fmt, ap);
    va_end(ap);
    if (hn < 0)
        return code;
    size_t h = strlen(head);
    memcpy(head + h, ": ", 3);
    h += 2;
    /* Shift the old message right by h bytes, truncating its tail to fit. */
    size_t old = strnlen(err->msg, sizeof err->msg - 1);
    size_t keep = old + h < sizeof err->msg ? old : sizeof err->msg - 1 - h;
    memmove(err->msg + h, err->msg, keep);
    memcpy(err->msg, head, h);
    err->msg[h + keep] = '\0';
    return code;
}

void com_error_clear(com_error_t *err) {
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

const char *com_error_name(int code) {
    switch (code) {
    case COM_OK:
        return "OK";
    case COM_EINVAL:
        return "EINVAL";
    case COM_EIO:
        return "EIO";
    case COM_EFORMAT:
        return "EFORMAT";
    case COM_EUNSUPPORTED:
        return "EUNSUPPORTED";
    case COM_ENOMEM:
        return "ENOMEM";
    case COM_ETOOLONG:
        return "ETOOLONG";
    case COM_EINTERNAL:
        return "EINTERNAL";
    case COM_EBUSY:
        return "EBUSY";
    default:
        return "E?";
    }
}
