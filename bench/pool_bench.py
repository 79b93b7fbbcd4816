#!/usr/bin/env python3
"""bench/pool_bench.py — the pool's own costs on loopback, with real processes (ember-broker,
ember-worker --device cpu) started here on free ports (tests/pool/poolutil.py):

1. overhead: p50/p99 round trip of a 1-text, 8-token embed request (client -> broker ->
   worker -> broker -> client), raw and minus the engine's compute time reported in the reply
   (tm.comp); the same for token-id input (no tokenizer), and the broker-only paths (info,
   tokenize). Target: (round trip - compute) p50 <= 100 us.
2. tokenizer: broker tokenization throughput (tokenize requests of many texts, pipelined) with
   --tokenizer-threads 1, 2, 4: texts/s and tokens/s.
3. rps: requests per second one broker sustains with 1, 2, 4 workers, tiny requests (1 text,
   8 tokens), concurrency sweep; with the broker's CPU time per request (from /proc), which
   says where one broker saturates independently of how fast the CPU workers are.

The client is Python (pyzmq + msgpack, one thread, pipelined), NOT libember: Python adds tens
of microseconds per message on each side of the round trip, so section 1 also measures a
pyzmq echo server (the floor this client can see: two Python hops and two loopback TCP hops)
and reports "broker+worker overhead" = round trip - compute - that floor, and the broker's own
view (tm.total - tm.comp: receipt to reply, worker time included). bench/run_pool_bench.sh
also runs the C client (bench_pool, libember) for section 1 when it is built.

Prints tables; --json PATH writes everything. Usage:
  bench/pool_bench.py --build DIR [--model DIR] [--json PATH] [--quick] [--sections 1,2,3]
"""
import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time

import msgpack
import numpy as np
import zmq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "pool"))
import poolutil as pu  # noqa: E402

EIGHT_TOKENS = "the quick brown fox jumps over"  # [CLS] + 6 + [SEP] with the MiniLM vocabulary


def pct(xs, q):
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q)) if len(xs) else float("nan")


def stats_us(xs):
    return {"p50": pct(xs, 50), "p90": pct(xs, 90), "p99": pct(xs, 99),
            "mean": float(np.mean(xs)) if len(xs) else float("nan"), "n": len(xs)}


def cpu_seconds(pid):
    """utime + stime of a process, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tck


class Raw:
    """Minimal fast client: one DEALER, packb/unpackb, no dict copies."""

    def __init__(self, endpoint):
        self.ctx = zmq.Context.instance()
        self.s = self.ctx.socket(zmq.DEALER)
        self.s.setsockopt(zmq.LINGER, 0)
        self.s.connect(endpoint)
        self.id = 0

    def rtt(self, msg):
        self.id += 1
        msg["id"] = self.id
        data = msgpack.packb(msg)
        t0 = time.perf_counter_ns()
        self.s.send(data)
        rep = self.s.recv()
        t1 = time.perf_counter_ns()
        r = msgpack.unpackb(rep, raw=False)
        if r.get("id") != self.id:
            raise RuntimeError("reply id %s, want %d" % (r.get("id"), self.id))
        return (t1 - t0) / 1000.0, r

    def close(self):
        self.s.close(0)


def echo_server(endpoint, ready):
    ctx = zmq.Context()
    s = ctx.socket(zmq.ROUTER)
    s.bind(endpoint)
    ready.set()
    while True:
        frames = s.recv_multipart()
        if frames[-1] == b"stop":
            break
        s.send_multipart(frames)
    s.close(0)
    ctx.term()


def measure_echo(n):
    ep = pu.free_endpoint()
    ready = mp.Event()
    p = mp.Process(target=echo_server, args=(ep, ready), daemon=True)
    p.start()
    ready.wait(10)
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(ep)
    msg = msgpack.packb({"v": 1, "t": "embed", "id": 1, "in": [EIGHT_TOKENS]})
    for _ in range(200):
        s.send(msg)
        s.recv()
    xs = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        s.send(msg)
        rep = s.recv()
        msgpack.unpackb(rep, raw=False)
        xs.append((time.perf_counter_ns() - t0) / 1000.0)
    s.send(b"stop")
    s.close(0)
    p.join(5)
    return xs


def fake_worker(backend, model, stop):
    """A worker with no engine: answers every chunk at once with zeros (compute 0), so a round
    trip through it is the broker's and the transport's cost alone (plus this Python loop)."""
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.ROUTING_ID, b"bench-fake-worker")
    s.setsockopt(zmq.LINGER, 0)
    s.connect(backend)
    seq = [0]

    def send(m):
        seq[0] += 1
        m["v"], m["id"] = 1, m.get("id", seq[0])
        s.send(msgpack.packb(m))
    ready = {"t": "ready", "wid": "bench-fake-worker", "model": model, "fam": "bert", "dev": "cpu",
             "mbt": 8192, "dim": 384, "msl": 256, "cred": 4}
    send(dict(ready))
    last_hb = time.monotonic()
    while not stop.is_set():
        if s.poll(100):
            m = msgpack.unpackb(s.recv(), raw=False)
            t = m.get("t")
            if t == "chunk":
                n = len(m["in"])
                s.send(msgpack.packb({"v": 1, "t": "result", "id": m["id"], "cid": m["cid"],
                                      "att": m["att"], "n": n, "dim": 384,
                                      "emb": b"\0" * (1536 * n), "tm": {"queue": 0, "comp": 0}}))
            elif t == "disconnect":
                send(dict(ready))
        if time.monotonic() - last_hb > 0.5:
            send({"t": "hb", "cred": 4})
            last_hb = time.monotonic()
    s.close(0)
    ctx.term()


# ---------------------------------------------------------------------------------------------


def section_overhead(a, bins, out):
    n = 600 if a.quick else 3000
    print("\n== 1. pool overhead: 1 text, 8 tokens, sequential (%d requests each)" % n)
    with pu.Pool(bins, a.model, name="bench1", heartbeat_ms=1000) as pool:
        b = pool.up(1, redis=False, worker_args=["--threads", "1"])
        c = Raw(b.frontend)
        _, tr = c.rtt({"v": 1, "t": "tokenize", "in": [EIGHT_TOKENS]})
        ids = tr["ids"][0]
        print("text %r -> %d tokens" % (EIGHT_TOKENS, len(ids)))
        rows = {}
        for name, msg in [("embed text", {"v": 1, "t": "embed", "in": [EIGHT_TOKENS]}),
                          ("embed ids", {"v": 1, "t": "embed", "in": [ids]}),
                          ("tokenize (broker only)", {"v": 1, "t": "tokenize", "in": [EIGHT_TOKENS]}),
                          ("info (broker only)", {"v": 1, "t": "info"})]:
            for _ in range(300):
                c.rtt(dict(msg))
            rtt, comp, total, tok, queue = [], [], [], [], []
            for _ in range(n):
                us, r = c.rtt(dict(msg))
                if r.get("t") == "error":
                    raise RuntimeError("%s: %s" % (name, r))
                tm = r.get("tm", {})
                rtt.append(us)
                comp.append(tm.get("comp", 0))
                total.append(tm.get("total", 0))
                tok.append(tm.get("tok", 0))
                queue.append(tm.get("queue", 0))
            rtt, comp, total = np.array(rtt), np.array(comp), np.array(total)
            rows[name] = {"rtt_us": stats_us(rtt), "compute_us": stats_us(comp),
                          "rtt_minus_compute_us": stats_us(rtt - comp),
                          "broker_total_minus_compute_us": stats_us(total - comp),
                          "broker_total_us": stats_us(total),
                          "tokenize_us": stats_us(tok), "queue_us": stats_us(queue),
                          "client_side_us": stats_us(rtt - total)}
        c.close()
        # the same through a broker whose only worker is an engine-less Python fake
        pool.workers[0].stop(10)
        b2 = pool.start_broker(redis=False)
        stop = mp.Event()
        fw = mp.Process(target=fake_worker, args=(b2.backend, pool.model_name, stop), daemon=True)
        fw.start()
        pool.wait_workers(b2, 1)
        c = Raw(b2.frontend)
        for name, msg in [("embed text, fake worker", {"v": 1, "t": "embed", "in": [EIGHT_TOKENS]}),
                          ("embed ids, fake worker", {"v": 1, "t": "embed", "in": [ids]})]:
            for _ in range(300):
                c.rtt(dict(msg))
            rtt, total, tok = [], [], []
            for _ in range(n):
                us, r = c.rtt(dict(msg))
                rtt.append(us)
                total.append(r["tm"].get("total", 0))
                tok.append(r["tm"].get("tok", 0))
            rtt, total = np.array(rtt), np.array(total)
            rows[name] = {"rtt_us": stats_us(rtt), "compute_us": stats_us(np.zeros(n)),
                          "rtt_minus_compute_us": stats_us(rtt),
                          "broker_total_minus_compute_us": stats_us(total),
                          "broker_total_us": stats_us(total), "tokenize_us": stats_us(tok),
                          "client_side_us": stats_us(rtt - total)}
        c.close()
        stop.set()
        fw.join(5)
    echo = np.array(measure_echo(n))
    floor = stats_us(echo)
    print("\n%-24s %9s %9s %9s %9s %11s %11s %11s" % (
        "request", "rtt p50", "rtt p99", "comp p50", "-comp p50", "-comp p99", "brk-comp50",
        "-comp-floor"))
    for name, r in rows.items():
        print("%-24s %9.1f %9.1f %9.1f %9.1f %11.1f %11.1f %11.1f" % (
            name, r["rtt_us"]["p50"], r["rtt_us"]["p99"], r["compute_us"]["p50"],
            r["rtt_minus_compute_us"]["p50"], r["rtt_minus_compute_us"]["p99"],
            r["broker_total_minus_compute_us"]["p50"],
            r["rtt_minus_compute_us"]["p50"] - floor["p50"]))
        r["rtt_minus_compute_minus_floor_p50_us"] = r["rtt_minus_compute_us"]["p50"] - floor["p50"]
    print("%-24s %9.1f %9.1f   (pyzmq echo server: the Python client's own floor)" % (
        "python echo floor", floor["p50"], floor["p99"]))
    print("(microseconds; -comp = round trip minus tm.comp; brk-comp = broker's tm.total - tm.comp;"
          " -comp-floor = also minus the echo floor)")
    e = rows["embed text"]
    print("target: (round trip - compute) p50 <= 100 us: measured %.1f us with the Python client "
          "(%.1f us after its echo floor)" % (e["rtt_minus_compute_us"]["p50"],
                                              e["rtt_minus_compute_minus_floor_p50_us"]))
    out["overhead"] = {"requests_per_case": n, "text": EIGHT_TOKENS, "tokens": len(ids),
                       "cases": rows, "python_echo_floor_us": floor, "client": "python pyzmq"}


def corpus(n):
    import random
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import make_bench_texts as mbt
    rng = random.Random(777)
    texts = []
    for i in range(n):  # the engine bench's mix: short queries and passages
        if i % 2 == 0:
            texts.append(" ".join(rng.choice(mbt.WORDS) for _ in range(rng.randint(8, 20))) + "?")
        else:
            w = [rng.choice(mbt.WORDS) if rng.random() > 0.03 else rng.choice(mbt.EXTRA)
                 for _ in range(rng.randint(60, 250))]
            texts.append(" ".join(w) + ".")
    return texts


def pipelined(endpoint, make_msg, depth, seconds, on_reply=None):
    """Keeps depth requests in flight on one DEALER for `seconds`; returns (done, elapsed,
    latencies_us, replies' sum of use.tok)."""
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    sent_at = {}
    nid = 0
    lat = []
    toks = 0
    errors = 0
    t_start = time.perf_counter()
    t_end = t_start + seconds

    def send():
        nonlocal nid
        nid += 1
        m = make_msg()
        m["id"] = nid
        sent_at[nid] = time.perf_counter_ns()
        s.send(msgpack.packb(m))
    for _ in range(depth):
        send()
    done = 0
    while sent_at:
        if s.poll(10000) == 0:
            raise RuntimeError("no reply in 10 s (%d in flight)" % len(sent_at))
        r = msgpack.unpackb(s.recv(), raw=False)
        t0 = sent_at.pop(r["id"])
        lat.append((time.perf_counter_ns() - t0) / 1000.0)
        if r.get("t") == "error":
            errors += 1
        else:
            done += 1
            toks += r.get("use", {}).get("tok", 0)
        if time.perf_counter() < t_end:
            send()
    elapsed = time.perf_counter() - t_start
    s.close(0)
    return done, elapsed, lat, toks, errors


def section_tokenizer(a, bins, out):
    texts = corpus(2048)
    per_req = 256
    secs = 2.0 if a.quick else 5.0
    print("\n== 2. broker tokenization throughput (tokenize requests of %d texts, %d in flight, %.0fs)"
          % (per_req, 8, secs))
    print("corpus: %d texts (half 8-20-word queries, half 60-250-word passages), %.0f bytes avg"
          % (len(texts), np.mean([len(t.encode()) for t in texts])))
    rows = []
    for threads in (1, 2, 4):
        with pu.Pool(bins, a.model, name="bench2", heartbeat_ms=1000) as pool:
            b = pool.start_broker(redis=False, args=["--tokenizer-threads", threads])
            pu.wait_until(lambda: Raw(b.frontend).rtt({"v": 1, "t": "info"}), 10)
            k = [0]

            def msg():
                k[0] = (k[0] + per_req) % len(texts)
                return {"v": 1, "t": "tokenize", "in": texts[k[0]:k[0] + per_req] or texts[:per_req]}
            pipelined(b.frontend, msg, 8, 0.5)  # warm-up
            c0 = cpu_seconds(b.pid)
            done, el, lat, toks, errs = pipelined(b.frontend, msg, 8, secs)
            cpu = cpu_seconds(b.pid) - c0
            row = {"threads": threads, "requests": done, "errors": errs, "seconds": el,
                   "texts_per_s": done * per_req / el, "tokens_per_s": toks / el,
                   "broker_cpu_cores": cpu / el, "latency_ms": stats_us(np.array(lat) / 1000)}
            rows.append(row)
            print("threads %d: %8.0f texts/s %10.0f tokens/s  broker CPU %.2f cores  p50 %.1f ms"
                  % (threads, row["texts_per_s"], row["tokens_per_s"], row["broker_cpu_cores"],
                     row["latency_ms"]["p50"]))
    print("(this machine has %d cores, shared by the broker's threads and this Python client)"
          % os.cpu_count())
    out["tokenizer"] = {"texts_per_request": per_req, "in_flight": 8, "rows": rows}


def section_rps(a, bins, out):
    secs = 1.5 if a.quick else 3.0
    depths = (1, 4, 16, 64)
    print("\n== 3. requests/s through one broker: 1 text of 8 tokens per request, %.0fs per point"
          % secs)
    print("%-8s %6s %9s %9s %9s %12s %14s" % ("workers", "depth", "req/s", "p50 ms", "p99 ms",
                                              "broker cores", "broker us/req"))
    rows = []
    for nw in (1, 2, 4):
        with pu.Pool(bins, a.model, name="bench3", heartbeat_ms=1000) as pool:
            b = pool.up(nw, redis=False, worker_args=["--threads", "1"])
            for depth in depths:
                pipelined(b.frontend, lambda: {"v": 1, "t": "embed", "in": [EIGHT_TOKENS]}, depth, 0.3)
                c0 = cpu_seconds(b.pid)
                w0 = sum(cpu_seconds(w.pid) for w in pool.workers)
                done, el, lat, _, errs = pipelined(
                    b.frontend, lambda: {"v": 1, "t": "embed", "in": [EIGHT_TOKENS]}, depth, secs)
                bc = cpu_seconds(b.pid) - c0
                wc = sum(cpu_seconds(w.pid) for w in pool.workers) - w0
                row = {"workers": nw, "depth": depth, "requests": done, "errors": errs,
                       "rps": done / el, "latency_ms": stats_us(np.array(lat) / 1000),
                       "broker_cpu_cores": bc / el, "workers_cpu_cores": wc / el,
                       "broker_cpu_us_per_request": bc / max(done, 1) * 1e6}
                rows.append(row)
                print("%-8d %6d %9.0f %9.2f %9.2f %12.2f %14.1f" % (
                    nw, depth, row["rps"], row["latency_ms"]["p50"], row["latency_ms"]["p99"],
                    row["broker_cpu_cores"], row["broker_cpu_us_per_request"]))
    # the broker alone (no worker in the path): how many small requests one broker process
    # answers, and its CPU per request, with this client pipelining 64 at a time
    alone = []
    with pu.Pool(bins, a.model, name="bench3b", heartbeat_ms=1000) as pool:
        b = pool.start_broker(redis=False)
        pu.wait_until(lambda: Raw(b.frontend).rtt({"v": 1, "t": "info"}), 10)
        for name, mk in [("info", lambda: {"v": 1, "t": "info"}),
                         ("tokenize 1 text", lambda: {"v": 1, "t": "tokenize", "in": [EIGHT_TOKENS]})]:
            pipelined(b.frontend, mk, 64, 0.3)
            c0 = cpu_seconds(b.pid)
            done, el, lat, _, errs = pipelined(b.frontend, mk, 64, secs)
            bc = cpu_seconds(b.pid) - c0
            row = {"request": name, "depth": 64, "rps": done / el, "errors": errs,
                   "latency_ms": stats_us(np.array(lat) / 1000), "broker_cpu_cores": bc / el,
                   "broker_cpu_us_per_request": bc / max(done, 1) * 1e6}
            alone.append(row)
            print("broker alone, %-16s depth 64: %7.0f req/s, broker %.2f cores, %.1f us CPU/request"
                  % (name, row["rps"], row["broker_cpu_cores"], row["broker_cpu_us_per_request"]))
    out_alone = alone
    best = max(rows, key=lambda r: r["rps"])
    per_req = float(np.median([r["broker_cpu_us_per_request"] for r in rows if r["depth"] >= 16]))
    est = 1e6 / per_req if per_req > 0 else float("nan")
    print("best: %.0f req/s (%d workers, depth %d); broker CPU %.1f us/request at depth >= 16 -> "
          "one broker core saturates near %.0f req/s of this size" % (
              best["rps"], best["workers"], best["depth"], per_req, est))
    print("(%d cores here: the CPU workers, the broker and this client share them; the workers'"
          " compute is the limit long before the broker's)" % os.cpu_count())
    out["rps"] = {"rows": rows, "broker_alone": out_alone, "best": best,
                  "broker_cpu_us_per_request": per_req,
                  "broker_saturation_estimate_rps": est}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--broker-bin")
    ap.add_argument("--worker-bin")
    ap.add_argument("--ember")
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "all-MiniLM-L6-v2"))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sections", default="1,2,3")
    a = ap.parse_args()
    bins = {"broker": a.broker_bin or os.path.join(a.build, "broker", "ember-broker"),
            "worker": a.worker_bin or os.path.join(a.build, "worker", "ember-worker"),
            "ember": a.ember or os.path.join(a.build, "client", "ember")}
    for k, v in bins.items():
        if not os.access(v, os.X_OK):
            print("pool_bench: %s missing (%s)" % (k, v), file=sys.stderr)
            return 1
    if pu.is_sanitized(bins["broker"]):
        print("pool_bench: WARNING: the broker is built with sanitizers; numbers are not meaningful")
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                    if l.startswith("model name")), "?"),
                       "python": platform.python_version(), "pyzmq": zmq.__version__,
                       "libzmq": zmq.zmq_version()},
           "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "quick": a.quick}
    secs = a.sections.split(",")
    if "1" in secs:
        section_overhead(a, bins, out)
    if "2" in secs:
        section_tokenizer(a, bins, out)
    if "3" in secs:
        section_rps(a, bins, out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
        print("\nwrote", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
