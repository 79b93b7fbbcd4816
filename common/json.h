/* common/json.h — thin helpers over jansson (a well-kept, strict JSON parser: RFC 8259, UTF-8
 * checked, depth-limited) for reading configuration files with typed, bounded field access.
 * Every getter names the field in its error message. Thread-safe for distinct documents. */
#ifndef EMBER_COMMON_JSON_H
#define EMBER_COMMON_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Parses len bytes (need not be NUL-terminated). Returns a new reference (json_decref it) or
 * NULL with COM_EFORMAT in err; `what` names the document in messages. */
json_t *com_json_parse(const char *text, size_t len, const char *what, com_error_t *err);

/* Reads and parses a file of at most max_bytes. NULL with COM_EIO/COM_EFORMAT/COM_ETOOLONG. */
json_t *com_json_load_file(const char *path, size_t max_bytes, com_error_t *err);

/* Typed getters on an object. `required`: a missing key is COM_EFORMAT; otherwise a missing key
 * (or null) leaves *out unchanged and returns 0. A present key of the wrong type or out of
 * [lo, hi] is always COM_EFORMAT. */
int com_json_get_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                     int64_t *out, com_error_t *err);
int com_json_get_double(const json_t *obj, const char *key, bool required, double *out,
                        com_error_t *err);
int com_json_get_bool(const json_t *obj, const char *key, bool required, bool *out,
                      com_error_t *err);
/* Copies a string value into out[cap]; a value that does not fit is COM_EFORMAT. */
int com_json_get_string(const json_t *obj, const char *key, bool required, char *out, size_t cap,
                        com_error_t *err);

#endif
