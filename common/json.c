/* common/json.c — see json.h. */
#include "common/json.h"

#include <string.h>

#include "common/file.h"

json_t *com_json_parse(const char *text, size_t len, const char *what, com_error_t *err) {
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root)
        com_error_set(err, COM_EFORMAT, "%s: invalid JSON at line %d column %d: %s", what, je.line,
                      je.column, je.text);
    return root;
}

json_t *com_json_load_file(const char *path, size_t max_bytes, com_error_t *err) {
    char *text;
    size_t len;
    if (com_file_read(path, max_bytes, &text, &len, err) != 0)
        return NULL;
    json_t *root = com_json_parse(text, len, path, err);
    free(text);
    return root;
}

static json_t *s_lookup(const json_t *obj, const char *key, bool required, int *rc,
                        com_error_t *err) {
    *rc = 0;
    if (!json_is_object(obj)) {
        *rc = com_error_set(err, COM_EFORMAT, "expected an object holding \"%s\"", key);
        return NULL;
    }
    json_t *v = json_object_get(obj, key);
    if ((!v || json_is_null(v)) && required)
        *rc = com_error_set(err, COM_EFORMAT, "missing required field \"%s\"", key);
    return json_is_null(v) ? NULL : v;
}

int com_json_get_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                     int64_t *out, com_error_t *err) {
    int rc;
    json_t *v = s_lookup(obj, key, required, &rc, err);
    if (!v)
        return rc;
    if (!json_is_integer(v))
        return com_error_set(err, COM_EFORMAT, "field \"%s\" must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return com_error_set(err, COM_EFORMAT, "field \"%s\" = %lld is outside [%lld, %lld]", key,
                             (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

int com_json_get_double(const json_t *obj, const char *key, bool required, double *out,
                        com_error_t *err) {
    int rc;
    json_t *v = s_lookup(obj, key, required, &rc, err);
    if (!v)
        return rc;
    if (!json_is_number(v))
        return com_error_set(err, COM_EFORMAT, "field \"%s\" must be a number", key);
    *out = json_number_value(v);
    return 0;
}

int com_json_get_bool(const json_t *obj, const char *key, bool required, bool *out,
                      com_error_t *err) {
    int rc;
    json_t *v = s_lookup(obj, key, required, &rc, err);
    if (!v)
        return rc;
    if (!json_is_boolean(v))
        return com_error_set(err, COM_EFORMAT, "field \"%s\" must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

int com_json_get_string(const json_t *obj, const char *key, bool required, char *out, size_t cap,
                        com_error_t *err) {
    int rc;
    json_t *v = s_lookup(obj, key, required, &rc, err);
    if (!v)
        return rc;
    if (!json_is_string(v))
        return com_error_set(err, COM_EFORMAT, "field \"%s\" must be a string", key);
    size_t n = json_string_length(v);
    if (n + 1 > cap || memchr(json_string_value(v), '\0', n))
        return com_error_set(err, COM_EFORMAT, "field \"%s\" is too long or holds NUL", key);
    memcpy(out, json_string_value(v), n + 1);
    return 0;
}
