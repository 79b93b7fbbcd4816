#!/usr/bin/env python3
"""ops/pool.sh as an operator uses it: up (redis-server, broker, workers; waits for health),
pool.env, embedding through the pool (this file's own client and `ember embed --broker`),
status, add-worker, a second up refused, down (workers drain first, then broker, then Redis)
leaving no process behind, and the failure paths (bad model, a broker that cannot start, a port
in use): a clear message, exit 1, nothing left running.

Prints "N passed, N failed"; exits non-zero on any failure.
Usage: test_pool_launcher.py --broker-bin B --worker-bin W --ember E --model DIR --pool-sh PATH
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poolutil as pu  # noqa: E402
from poolutil import check, compare  # noqa: E402

A = None


def env():
    e = dict(os.environ)
    e.update(EMBER_BROKER_BIN=A.broker_bin, EMBER_WORKER_BIN=A.worker_bin, EMBER_BIN=A.ember,
             OPENBLAS_NUM_THREADS="1")
    return e


def pool_sh(*args, timeout=180):
    p = subprocess.run(["bash", A.pool_sh] + [str(x) for x in args], capture_output=True,
                       timeout=pu.scaled(timeout), env=env())
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    pu.log("pool.sh %s -> %d\n%s%s" % (" ".join(str(x) for x in args), p.returncode, out, err))
    return p.returncode, out, err


def read_pids(d):
    out = {}
    pdir = os.path.join(d, "pids")
    if os.path.isdir(pdir):
        for f in os.listdir(pdir):
            with open(os.path.join(pdir, f)) as fh:
                parts = fh.read().split()
            if parts:
                out[f[:-4]] = int(parts[0])
    return out


def live(pid):
    """Running and not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def procs_mentioning(*needles):
    """Live pids whose command line holds any of needles."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if any(n in cmd for n in needles) and live(int(p)) and "test_pool_launcher" not in cmd:
            found.append((int(p), cmd.strip()))
    return found


def read_env(path):
    """The variables pool.env sets when sourced, as an operator's shell sees them."""
    p = subprocess.run(["bash", "-c", 'set -a && . "$1" && env -0', "read_env", path], capture_output=True)
    vals = {}
    for item in p.stdout.split(b"\0"):
        k, _, v = item.decode().partition("=")
        if k.startswith("EMBER_"):
            vals[k] = v
    return vals


def kill_leftovers(pids):
    for pid in pids:
        if live(pid):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def test_up_down(tmp):
    d = os.path.join(tmp, "pool1")
    # the model through a path with a space and a quote: pool.env must source back to it (and
    # add-worker reads it from there)
    model = os.path.join(tmp, "model dir's")
    os.symlink(os.path.abspath(A.model), model)
    fe, be, rp = pu.free_endpoint(), pu.free_endpoint(), pu.free_port()
    ember = pu.Ember(A.ember, A.model)
    started = {}
    try:
        rc, out, err = pool_sh("up", "--workers", 2, "--dir", d, "--frontend", fe, "--backend", be,
                               "--redis-port", rp, "--heartbeat-ms", 200, "--threads", 1,
                               "--model", model, "--wait-s", 60)
        started = read_pids(d)
        if not check(rc == 0, "pool.sh up --workers 2 exits 0 (%d: %s)" % (rc, err.strip()[-500:])):
            return
        check("EMBER_FRONTEND=%s" % fe in out, "up prints the frontend endpoint")
        check(set(started) == {"redis", "broker", "worker-1", "worker-2"},
              "pid files for redis, broker and 2 workers: %s" % sorted(started))
        penv = read_env(os.path.join(d, "pool.env"))
        check(penv.get("EMBER_FRONTEND") == fe and penv.get("EMBER_REDIS") == "redis://127.0.0.1:%d" % rp,
              "pool.env has EMBER_FRONTEND and EMBER_REDIS: %s" % penv)
        check(penv.get("EMBER_MODEL") == model and penv.get("EMBER_POOL_DIR") == d,
              "pool.env sources back to the model path with a space and a quote: %s" % penv)
        rc2, recs, _ = ember.status(penv.get("EMBER_REDIS", ""))
        check(rc2 == 0 and sum(1 for r in recs if r["kind"] == "worker" and r["healthy"] == "yes") == 2
              and sum(1 for r in recs if r["kind"] == "broker" and r["healthy"] == "yes") == 1,
              "after up, ember status shows the broker and 2 healthy workers")

        texts = pu.make_texts(120, seed=31)
        ref, _ = ember.reference(texts)
        with pu.Client(fe) as c:
            rep, emb = c.embed(texts, timeout=pu.scaled(60))
            compare(emb, ref, "embedding through the launched pool")
        rc3, raw, err3 = ember.run(["embed", "--broker", fe, "--format", "f32"],
                                   "\n".join(texts).encode() + b"\n", timeout=120)
        if check(rc3 == 0 and len(raw) == len(texts) * 384 * 4,
                 "ember embed --broker $EMBER_FRONTEND works (%d %s)" % (rc3, err3.strip()[-300:])):
            compare(np.frombuffer(raw, dtype="<f4").reshape(len(texts), 384), ref,
                    "ember embed --broker through the launched pool")

        rc, out, err = pool_sh("status", "--dir", d)
        check(rc == 0 and out.count("running") >= 4 and "worker " in out and "broker " in out,
              "pool.sh status: 4 processes running and the registry listing")

        rc, out, err = pool_sh("up", "--workers", 1, "--dir", d, "--frontend", pu.free_endpoint(),
                               "--backend", pu.free_endpoint(), "--redis-port", pu.free_port(),
                               "--model", A.model)
        check(rc != 0 and "already up" in err, "a second up in the same dir is refused (%d)" % rc)
        check(all(live(p) for p in started.values()), "... and leaves the running pool alone")

        rc, out, err = pool_sh("add-worker", "--dir", d)
        check(rc == 0, "pool.sh add-worker exits 0")
        recs = pu.wait_until(lambda: (lambda r: r if sum(1 for x in r[1] if x["kind"] == "worker"
                                                         and x["healthy"] == "yes") == 3 else None)(
            ember.status(penv["EMBER_REDIS"])), 30)
        check(recs, "the added worker registers: 3 healthy workers")
        started = read_pids(d)
        check(len(started) == 5, "5 pid files after add-worker: %s" % sorted(started))
        with pu.Client(fe) as c:
            rep = pu.wait_until(lambda: (lambda r: r if r and r.get("nwk") == 3 else None)(c.info()), 10)
            check(rep, "the broker has the 3 workers")

        t0 = time.monotonic()
        rc, out, err = pool_sh("down", "--dir", d, "--timeout", 30)
        dt = time.monotonic() - t0
        check(rc == 0 and "stopped cleanly" in out, "pool.sh down exits 0, stopped cleanly (%.1fs)" % dt)
        order = [out.find("worker-1 "), out.find("broker "), out.find("redis ")]
        check(-1 not in order and order == sorted(order),
              "down stops the workers, then the broker, then Redis")
        left = [n for n, p in started.items() if live(p)]
        check(not left, "no process left after down: %s" % left)
        check(not os.path.exists(os.path.join(d, "pool.env")), "pool.env removed by down")
        stray = procs_mentioning(fe, be, "127.0.0.1:%d" % rp, d)
        check(not stray, "no process mentions the pool's endpoints or dir: %s" % stray)
        rc, out, err = pool_sh("down", "--dir", d)
        check(rc == 0, "down again is harmless")
        # the logs are there and the workers drained (exit status 0 shows in the down report)
        logs = os.listdir(os.path.join(d, "logs"))
        check({"broker.log", "redis.log", "worker-1.log"} <= set(logs), "logs kept in RUNDIR/logs: %s" % logs)
    finally:
        kill_leftovers(started.values())


def test_failures(tmp):
    # a model directory that does not exist: refused before anything starts
    d = os.path.join(tmp, "bad1")
    rc, out, err = pool_sh("up", "--dir", d, "--model", os.path.join(tmp, "nope"),
                           "--frontend", pu.free_endpoint(), "--backend", pu.free_endpoint(),
                           "--redis-port", pu.free_port())
    check(rc == 1 and "model directory" in err and not read_pids(d),
          "up with a missing model: exit 1, clear message, nothing started")

    # a broker that cannot start (a bad flag): log tails printed, everything stopped, exit 1
    d = os.path.join(tmp, "bad2")
    fe, be, rp = pu.free_endpoint(), pu.free_endpoint(), pu.free_port()
    rc, out, err = pool_sh("up", "--dir", d, "--model", A.model, "--frontend", fe, "--backend", be,
                           "--redis-port", rp, "--broker-arg", "--no-such-flag", "--wait-s", 20)
    check(rc == 1 and "broker" in err and "----" in err,
          "up with a failing broker: exit 1, names it, prints the logs' tails")
    time.sleep(0.5)
    stray = procs_mentioning(fe, be, "127.0.0.1:%d" % rp)
    check(not stray and not read_pids(d), "a failed up leaves nothing running: %s" % stray)
    kill_leftovers([p for p, _ in stray])

    # a port in use
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    busy = s.getsockname()[1]
    d = os.path.join(tmp, "bad3")
    rc, out, err = pool_sh("up", "--dir", d, "--model", A.model,
                           "--frontend", "tcp://127.0.0.1:%d" % busy, "--backend", pu.free_endpoint(),
                           "--redis-port", pu.free_port())
    s.close()
    check(rc == 1 and "in use" in err and not read_pids(d), "up with the frontend port in use: exit 1, clear")

    rc, out, err = pool_sh("down", "--dir", os.path.join(tmp, "never"))
    check(rc == 0 and "no pool" in out, "down with no pool: exit 0, says so")
    rc, out, err = pool_sh("frobnicate")
    check(rc == 2, "unknown command: exit 2")
    rc, out, err = pool_sh("up", "--workers", "zero")
    check(rc != 0, "bad --workers refused")


def main():
    global A
    ap = pu.common_args(argparse.ArgumentParser())
    ap.add_argument("--pool-sh", required=True)
    A = ap.parse_args()
    if not os.path.exists(os.path.join(A.model, "model.safetensors")):
        print("FATAL: model not found at %s" % A.model, file=sys.stderr)
        return 1
    pu.TIME_SCALE = pu.TIME_SCALE or (3.0 if pu.is_sanitized(A.broker_bin) else 1.0)
    tmp = tempfile.mkdtemp(prefix="ember-launcher-")
    ok = False
    try:
        for fn in (test_up_down, test_failures):
            pu.log("==== %s" % fn.__name__)
            try:
                fn(tmp)
            except Exception as e:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                check(False, "%s raised %s: %s" % (fn.__name__, type(e).__name__, e))
        ok = pu.FAILED == 0
    finally:
        if not ok:
            for root, _, files in os.walk(tmp):
                for f in files:
                    if f.endswith(".log"):
                        print("---- %s" % os.path.join(root, f), file=sys.stderr)
                        print(pu.tail(os.path.join(root, f), 30), file=sys.stderr)
        # whatever the outcome, stop anything a pool.sh up left behind
        for root, dirs, _ in os.walk(tmp):
            if "pids" in dirs:
                subprocess.run(["bash", A.pool_sh, "down", "--dir", root, "--timeout", "5"],
                               capture_output=True, env=env(), timeout=120)
        shutil.rmtree(tmp, ignore_errors=True)
    return pu.summary()


if __name__ == "__main__":
    sys.exit(main())
