/* worker/tune_cache.h — the GEMM choices a CUDA engine's start-up timing made, kept in a small
 * text file so that the next start on the same GPU and software skips the timing (about 5-6 s
 * for a 76-bucket engine on the H200, docs/engine.md). The engine owns the meaning of keys and
 * values; this module only stores them.
 *
 * File format (UTF-8 text, one entry per line, fields separated by one TAB):
 *   # comment lines and blank lines are ignored
 *   FINGERPRINT <TAB> KEY <TAB> RANK <TAB> DESCRIPTION
 * FINGERPRINT names the device and library versions the entry was timed with; only entries of
 * the fingerprint given to wrk_tune_cache_open are visible, the others are kept when saving (one
 * file can serve several GPU models). RANK is a decimal int32; DESCRIPTION a short label the
 * engine checks against what the rank means now, so a stale entry is detected rather than
 * trusted. The file is not trusted: a malformed line (missing field, bad number, over
 * WRK_TUNE_CACHE_MAX_LINE bytes) is skipped and counted, a file over WRK_TUNE_CACHE_MAX_BYTES is
 * ignored as a whole. Saving re-reads the file, merges (this cache's entries win), writes a
 * temporary file beside it and renames it over the old one, so a reader never sees a half-written
 * file and concurrent savers lose at most each other's new entries.
 *
 * Thread-safety: a cache is used by one thread at a time. */
#ifndef EMBER_WORKER_TUNE_CACHE_H
#define EMBER_WORKER_TUNE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define WRK_TUNE_CACHE_MAX_LINE  1024
#define WRK_TUNE_CACHE_MAX_BYTES ((size_t)4 << 20)

typedef struct wrk_tune_cache wrk_tune_cache_t;

/* Opens the cache at path (at most 4000 bytes) for fingerprint (no TAB, CR or newline, 1-255
 * bytes). A missing file is an empty cache; an unreadable or oversized one too, with the reason
 * in wrk_tune_cache_warning. Returns 0 with *out, or COM_EINVAL (bad path or fingerprint) /
 * COM_ENOMEM. */
int wrk_tune_cache_open(const char *path, const char *fingerprint, wrk_tune_cache_t **out,
                        com_error_t *err);
void wrk_tune_cache_destroy(wrk_tune_cache_t **self_p);

/* The entry for key under this cache's fingerprint: true with *rank and *desc (owned by the
 * cache, valid until the next put or destroy), false when there is none. */
bool wrk_tune_cache_get(const wrk_tune_cache_t *c, const char *key, int32_t *rank,
                        const char **desc);
/* Adds or replaces the entry for key. key and desc: no TAB, CR or newline, 1-127 bytes.
 * Returns 0, COM_EINVAL or COM_ENOMEM. */
int wrk_tune_cache_put(wrk_tune_cache_t *c, const char *key, int32_t rank, const char *desc,
                       com_error_t *err);
/* Writes the cache back if a put changed it (creating the parent directory, mode 0755, if
 * missing). Returns 0 or COM_EIO (err names the path). */
int wrk_tune_cache_save(wrk_tune_cache_t *c, com_error_t *err);

/* Lines of the file that were skipped as malformed when it was read. */
int32_t wrk_tune_cache_skipped(const wrk_tune_cache_t *c);
/* Why the file was ignored when opened (unreadable, too large), or "". */
const char *wrk_tune_cache_warning(const wrk_tune_cache_t *c);

#endif
