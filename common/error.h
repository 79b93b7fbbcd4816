/* common/error.h — status codes and the error record every library function fills in.
 *
 * Convention: functions return 0 on success or a negative COM_E* code, and write a readable
 * message into a caller-owned com_error_t (which may be NULL when the caller does not care).
 * Nothing in the libraries exits or aborts on bad input; assert() is for programming errors.
 * Thread-safety: a com_error_t belongs to one thread at a time; the functions here are pure. */
#ifndef EMBER_COMMON_ERROR_H
#define EMBER_COMMON_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    COM_OK = 0,
    COM_EINVAL = -1,       /* bad argument or bad input from a caller */
    COM_EIO = -2,          /* a file is missing or cannot be read */
    COM_EFORMAT = -3,      /* a file or message is malformed, truncated or corrupt */
    COM_EUNSUPPORTED = -4, /* well-formed but not supported (unknown architecture, dtype) */
    COM_ENOMEM = -5,       /* allocation failed */
    COM_ETOOLONG = -6,     /* input over a limit (tokens, bytes) and truncation not allowed */
    COM_EINTERNAL = -7,    /* a bug or an unexpected state; the message says where */
    COM_EBUSY = -8,        /* queue full or shutting down; try again later */
};

#define COM_ERROR_MSG_MAX 512

typedef struct com_error {
    int code;                    /* 0 or a COM_E* code */
    char msg[COM_ERROR_MSG_MAX]; /* NUL-terminated, empty when code == 0 */
} com_error_t;

/* Records code and a printf-style message into err (if err is not NULL) and returns code, so
 * callers can write `return com_error_set(err, COM_EIO, "cannot open %s", path);`. */
int com_error_set(com_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "context: " to the message already in err (if any) and returns code, the failure
 * being passed up (so `return com_error_prefix(err, rc, "field %s", f);` fails even when err is
 * NULL). Used to add the file or field name as an error travels up. */
int com_error_prefix(com_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to code 0 and an empty message. Accepts NULL. */
void com_error_clear(com_error_t *err);

/* Short stable name of a code ("EINVAL", "EFORMAT", ...); "E?" for unknown codes. */
const char *com_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif
