#!/usr/bin/env python3
"""Pool tests with a GPU worker, as real processes (redis-server, ember-broker, ember-worker):

- gpu_fault: a GPU worker whose engine hits a sticky CUDA error mid-request (device option
             fault=N: its Nth chunk's pass is queued behind a kernel that traps) reports itself
             unhealthy in Redis, tells the broker it is leaving and exits 3; its chunks go to the
             CPU worker beside it and the request completes with the right embeddings; the pool
             goes on serving with the CPU worker.

Without a GPU (no working nvidia-smi) prints "SKIPPED: no CUDA device" and exits 77.
Prints "N passed, N failed"; exits non-zero on any failure.
Usage: test_pool_gpu.py --broker-bin B --worker-bin W --ember E --model DIR [--only NAME]
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poolutil as pu  # noqa: E402
from poolutil import check, compare, describe  # noqa: E402
from test_pool_faults import BROKER_ARGS, Async  # noqa: E402

FAULT_AT = 4  # the GPU worker's engine chunk that traps (a few complete first)
S_EXIT_ENGINE = 3  # worker/worker_main.c: the device failed for good


def have_gpu():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and b"GPU" in out.stdout


def test_gpu_fault(a):
    with pu.Pool(pu.bins_of(a), a.model, name="gpufault", heartbeat_ms=300) as pool:
        pool.start_redis()
        b = pool.start_broker(args=BROKER_ARGS)
        pool.start_worker(name="cpu-worker")
        gpu = pool.start_worker(name="gpu-worker", device="cuda:0,fault=%d,tune=off" % FAULT_AT)
        pool.wait_workers(b, 2, timeout=pu.scaled(120))
        texts = pu.make_texts(3000, seed=21, min_words=2, max_words=6)
        ref, _ = pool.ember.reference(texts)
        gpu.expect_exit = True
        req = Async(b.frontend, texts, 60000, pu.scaled(90))
        rc = gpu.wait(60)
        check(rc == S_EXIT_ENGINE, "the GPU worker exits %d after the trap (rc %s)"
              % (S_EXIT_ENGINE, rc))
        log = gpu.log_text()
        check("cudaError" in log and "reporting unhealthy" in log,
              "its log names the CUDA error and the unhealthy report:\n%s" % pu.tail(gpu.log_path, 8))
        req.join(pu.scaled(120))
        check(req.rep is not None and req.rep.get("t") == "embed_reply",
              "the request completes across the GPU worker's failure (%.1fs): %s"
              % (req.elapsed or -1, describe(req.rep)))
        if req.emb is not None:
            compare(req.emb, ref, "embeddings across the GPU worker's failure = in-process")
        # checked after the request, long past the record's 3-heartbeat TTL: the last record
        # of a failed worker is kept for minutes (common/registry_agent.h)
        recs = pool.wait_status(lambda rs: any(r["kind"] == "worker" and r.get("state") == "unhealthy"
                                               and str(r.get("device", "")).startswith("cuda")
                                               and r.get("healthy") == "no" for r in rs),
                                5, what="GPU worker unhealthy")
        check(recs, "Redis keeps the failed GPU worker's record as state=unhealthy, healthy=no")
        with pu.Client(b.frontend) as c:
            rep = pu.wait_until(lambda: (lambda r: r if r and r.get("nwk") == 1 else None)(c.info()), 5)
            check(rep, "the broker counts 1 worker after the failure (%s)" % describe(c.info()))
            rep, emb = c.embed(texts[:200], timeout=pu.scaled(60))
            compare(emb, ref[:200], "the CPU worker goes on serving")


def main():
    a = pu.common_args(argparse.ArgumentParser()).parse_args()
    if not have_gpu():
        print("SKIPPED: no CUDA device (nvidia-smi -L found none)")
        return 77
    return pu.run_tests([test_gpu_fault], a)


if __name__ == "__main__":
    t0 = time.monotonic()
    rc = main()
    pu.log("done in %.1fs" % (time.monotonic() - t0))
    sys.exit(rc)
