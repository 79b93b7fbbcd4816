/* common/registry_agent.h — keeps one record (a worker's or a broker's) registered in Redis from
 * a background thread, so Redis latency or an outage never stalls the caller's event loop.
 *
 * The owner hands in fresh snapshots (load, counters, state) whenever it likes; the agent's
 * thread writes the latest one every interval_ms with a TTL of three intervals. When Redis is
 * unreachable the writes fail quietly (logged once per outage) and the next successful write
 * re-registers with epoch + 1, so registrations reappear by themselves when Redis returns.
 * Stopping with deregister removes the record; stopping without it writes the last snapshot
 * once more with a TTL of COM_REGISTRY_KEEP_MS, so that a process that leaves because it failed
 * (a worker's state "unhealthy") stays visible to `ember status` and alerting for minutes, not
 * for the three heartbeats a live record needs. Thread-safety: update/stop from one owner
 * thread; the agent's own thread only reads snapshots under its mutex. */
#ifndef EMBER_COMMON_REGISTRY_AGENT_H
#define EMBER_COMMON_REGISTRY_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/registry.h"

typedef struct com_registry_agent com_registry_agent_t;

/* How long the last record of a process stopped without deregistering stays in Redis (5 min). */
#define COM_REGISTRY_KEEP_MS 300000

/* Starts an agent for a worker record (the first snapshot) writing to url every interval_ms.
 * The first write happens at once. Returns 0, or COM_EINVAL (bad URL) / COM_ENOMEM. */
int com_registry_agent_start_worker(const char *url, const com_worker_record_t *rec,
                                    int32_t interval_ms, com_registry_agent_t **out,
                                    com_error_t *err);
int com_registry_agent_start_broker(const char *url, const com_broker_record_t *rec,
                                    int32_t interval_ms, com_registry_agent_t **out,
                                    com_error_t *err);

/* Replaces the snapshot (copied). Use the update matching how the agent was started. */
void com_registry_agent_update_worker(com_registry_agent_t *a, const com_worker_record_t *rec);
void com_registry_agent_update_broker(com_registry_agent_t *a, const com_broker_record_t *rec);

/* Writes the current snapshot now (e.g. after a state change) without waiting for the timer. */
void com_registry_agent_kick(com_registry_agent_t *a);

/* 1 if the last write reached Redis. */
int com_registry_agent_healthy(com_registry_agent_t *a);

/* Stops the thread. With deregister, removes the record; without, writes the latest snapshot
 * once more with a TTL of COM_REGISTRY_KEEP_MS (so a final state such as "unhealthy" is seen).
 * One attempt, bounded by the registry's timeout. Accepts NULL; nulls *self_p. */
void com_registry_agent_stop(com_registry_agent_t **self_p, bool deregister);

#endif
