/* worker/thread_pool.h — a tiny fork-join thread pool owned by one engine (no globals): n parts,
 * the calling thread runs part 0 and n-1 helper threads the rest; wrk_tpool_run returns when every
 * part is done. Used by the CPU engine to split the GEMMs (single-threaded OpenBLAS calls on
 * row ranges), attention and the element-wise ops across cores. Helpers sleep on a condition
 * variable between jobs.
 * Thread-safety: one thread calls wrk_tpool_run at a time (the engine's compute thread). */
#ifndef EMBER_WORKER_THREAD_POOL_H
#define EMBER_WORKER_THREAD_POOL_H

#include <stdint.h>

#include "common/error.h"

typedef struct wrk_tpool wrk_tpool_t;

/* fn(arg, part, n_parts) is called once for each part in [0, n_parts). */
typedef void (*wrk_tpool_fn)(void *arg, int32_t part, int32_t n_parts);

/* Starts n_parts - 1 helper threads (n_parts >= 1; 1 = everything on the caller). Returns 0
 * with *out, or COM_EINVAL / COM_ENOMEM / COM_EINTERNAL (thread creation) with *out NULL. */
int wrk_tpool_new(int32_t n_parts, wrk_tpool_t **out, com_error_t *err);
/* Stops and joins the helpers. Accepts NULL; nulls *self_p. */
void wrk_tpool_destroy(wrk_tpool_t **self_p);
int32_t wrk_tpool_size(const wrk_tpool_t *pool);
/* Runs fn over min(n_parts, pool size) parts (n_parts <= 0: the pool size) and waits. */
void wrk_tpool_run(wrk_tpool_t *pool, wrk_tpool_fn fn, void *arg, int32_t n_parts);

#endif
