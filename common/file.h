/* common/file.h — reading files safely: whole small files into memory with a size cap, large
 * files (weights) by read-only mmap. Errors name the path. Thread-safe (no shared state). */
#ifndef EMBER_COMMON_FILE_H
#define EMBER_COMMON_FILE_H

#include <stddef.h>

#include "common/error.h"

/* Reads the whole of path into a new NUL-terminated buffer (*data, caller frees with free()),
 * its length without the NUL in *len. Refuses files over max_bytes (COM_ETOOLONG), returns
 * COM_EIO when missing or unreadable. On error *data is NULL. */
int com_file_read(const char *path, size_t max_bytes, char **data, size_t *len, com_error_t *err);

/* A read-only mapping of a whole file. */
typedef struct com_file_map {
    const unsigned char *data; /* [size] bytes, read-only, NULL for an empty file */
    size_t size;
} com_file_map_t;

/* Maps path read-only. Returns 0, or COM_EIO (missing, unreadable, not a regular file). */
int com_file_map_open(const char *path, com_file_map_t *map, com_error_t *err);
/* Unmaps; accepts a zeroed or already-closed map. */
void com_file_map_close(com_file_map_t *map);

/* Joins dir and name with one '/' into out (size cap). Returns 0, or COM_ETOOLONG. */
int com_path_join(char *out, size_t cap, const char *dir, const char *name, com_error_t *err);

/* 1 if path exists (any type), else 0. */
int com_path_exists(const char *path);

#endif
