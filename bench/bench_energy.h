/* bench/bench_energy.h — the GPU's energy and clocks over a timed window, from NVML: joules per
 * run and the SM clock a run saw. Why: an H200 running a long pass sits at its power cap (the
 * SM clock falls from 1980 to ~1700 MHz within ~100 ms), so a sustained pass's throughput is
 * the cap over its energy, and an A/B at the cap is decided by joules per run, not by what a
 * short burst at full clock reads.
 *
 * NVML comes with the driver, not the toolkit, so it is opened at run time (dlopen): the benches
 * build and run without it and then print no energy. A thread samples the SM clock, the
 * clock-event reasons and the board's energy counter (millijoules) every 2 ms while a window is
 * open. The counter moves in steps, so the difference of its values at the window's ends is off
 * by up to a step (a 0.44 s window read 812 W on a 700 W board, session 34): the energy is the
 * slope between the counter's first and last steps inside the window times the window's length,
 * and windows under 0.2 s or with fewer than two steps report none.
 * Header-only; one meter per process, open until it exits. */
#ifndef EMBER_BENCH_BENCH_ENERGY_H
#define EMBER_BENCH_BENCH_ENERGY_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench_util.h"

/* What one window measured; mj < 0 when it was not measured (no NVML, or too short). */
typedef struct bench_energy_window {
    double mj, seconds;         /* board energy over the window, its length */
    double mhz_median, mhz_min; /* SM clock over the samples */
    double capped;              /* share of the samples with a power-cap reason set */
} bench_energy_window_t;

enum { BENCH_ENERGY_SAMPLES = 1 << 14 };

typedef struct bench_energy {
    void *lib, *dev; /* libnvidia-ml, nvmlDevice_t */
    int (*energy_mj)(void *dev, unsigned long long *mj);
    int (*clock_mhz)(void *dev, int type, unsigned *mhz);
    int (*reasons)(void *dev, unsigned long long *mask);
    pthread_t sampler;
    atomic_int running; /* the sampler runs while set */
    double t0;
    /* the counter's value at the window's start, and its first and last steps (value, time) */
    unsigned long long mj0, mj_first, mj_last;
    double t_first, t_last;
    int n, steps;
    uint16_t mhz[BENCH_ENERGY_SAMPLES];
    uint8_t cap[BENCH_ENERGY_SAMPLES];
} bench_energy_t;

/* Opens NVML for the device at PCI bus id pci ("0000:xx:yy.z", as cudaDeviceGetPCIBusId gives).
 * false (and why, in why[cap]) when there is no NVML or no such device: then measure nothing. */
static inline bool bench_energy_open(bench_energy_t *e, const char *pci, char *why, size_t cap) {
    e->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!e->lib) {
        snprintf(why, cap, "no NVML (libnvidia-ml.so.1: %s)", dlerror());
        return false;
    }
    int (*init)(void) = (int (*)(void))dlsym(e->lib, "nvmlInit_v2");
    int (*by_pci)(const char *, void **) =
        (int (*)(const char *, void **))dlsym(e->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    e->energy_mj =
        (int (*)(void *, unsigned long long *))dlsym(e->lib, "nvmlDeviceGetTotalEnergyConsumption");
    e->clock_mhz = (int (*)(void *, int, unsigned *))dlsym(e->lib, "nvmlDeviceGetClockInfo");
    /* the reasons' call was renamed in CUDA 12.2's NVML; older drivers have the old name only */
    e->reasons = (int (*)(void *, unsigned long long *))dlsym(
        e->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!e->reasons)
        e->reasons = (int (*)(void *, unsigned long long *))dlsym(
            e->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    unsigned long long mj = 0;
    if (!init || !by_pci || !e->energy_mj || !e->clock_mhz || !e->reasons || init() != 0 ||
        by_pci(pci, &e->dev) != 0 || e->energy_mj(e->dev, &mj) != 0) {
        snprintf(why, cap, "NVML has no energy counter for device %s", pci);
        dlclose(e->lib);
        e->lib = NULL;
        return false;
    }
    return true;
}

static inline void *bench_energy_sample_(void *arg) {
    bench_energy_t *e = arg;
    /* NVML_CLOCK_SM = 1; the reasons' power-cap bits: software (0x4), hardware power brake
     * (0x80) */
    unsigned long long prev = e->mj0;
    while (atomic_load(&e->running)) { /* the counter for the whole window, clocks up to the cap */
        unsigned mhz = 0;
        unsigned long long mask = 0, mj = 0;
        if (e->energy_mj(e->dev, &mj) == 0 && mj != prev) { /* a step of the counter */
            const double t = bench_now_s();
            if (e->steps++ == 0)
                e->mj_first = mj, e->t_first = t;
            e->mj_last = mj, e->t_last = t, prev = mj;
        }
        if (e->n < BENCH_ENERGY_SAMPLES && e->clock_mhz(e->dev, 1, &mhz) == 0 &&
            e->reasons(e->dev, &mask) == 0) {
            e->mhz[e->n] = (uint16_t)mhz;
            e->cap[e->n++] = (mask & 0x84ull) != 0;
        }
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    return NULL;
}

/* opens a window (no-op without NVML) */
static inline void bench_energy_start(bench_energy_t *e) {
    if (!e->lib)
        return;
    e->n = e->steps = 0;
    atomic_store(&e->running, 1);
    e->t0 = bench_now_s();
    e->energy_mj(e->dev, &e->mj0);
    if (pthread_create(&e->sampler, NULL, bench_energy_sample_, e) != 0)
        atomic_store(&e->running, 0);
}

/* closes the window: its energy and clocks (mj < 0: not measured) */
static inline bench_energy_window_t bench_energy_stop(bench_energy_t *e) {
    bench_energy_window_t w = {-1, 0, 0, 0, 0};
    if (!e->lib || !atomic_load(&e->running))
        return w;
    w.seconds = bench_now_s() - e->t0;
    atomic_store(&e->running, 0);
    pthread_join(e->sampler, NULL);
    if (w.seconds < 0.2 || e->n == 0 || e->steps < 2 || e->t_last <= e->t_first)
        return w;
    w.mj = (double)(e->mj_last - e->mj_first) / (e->t_last - e->t_first) * w.seconds;
    double *v = malloc((size_t)e->n * sizeof *v);
    if (!v) /* the energy stands; the clocks stay 0 */
        return w;
    int capped = 0;
    for (int i = 0; i < e->n; i++)
        v[i] = e->mhz[i], capped += e->cap[i];
    w.mhz_min = bench_percentile(v, (size_t)e->n, 0);
    w.mhz_median = bench_percentile(v, (size_t)e->n, 50);
    w.capped = (double)capped / e->n;
    free(v);
    return w;
}

#endif
