#!/usr/bin/env python3
"""Pool fault tests with real processes (redis-server, ember-broker, ember-worker on free
loopback ports, heartbeats every 100 ms so a lost peer shows within ~300 ms):

- kill9:     a worker killed with SIGKILL mid-request: the request still completes correctly
             within its deadline (its chunks are re-dispatched).
- sigstop:   a worker stopped with SIGSTOP is detected by heartbeat (long before the chunk
             timeout) and its chunks re-dispatched; after SIGCONT it rejoins and serves again.
- drain:     SIGTERM to a worker mid-request: it drains (finishes what it holds), exits 0,
             deregisters; the request completes correctly, nothing lost.
- redis:     Redis stopped while serving: requests keep succeeding; Redis restarted on the same
             port: the registrations reappear (new epoch) without restarting anything.
- broker_restart: the broker killed mid-request and restarted on the same endpoints: a client
             with retries gets its answer (this file's own client, and `ember embed --broker`);
             the workers rejoin the new broker by themselves.
- failover:  two brokers, workers connected to both; one killed: a client given both brokers
             (`ember embed --broker A --broker B`, and a request in flight) fails over.

Prints "N passed, N failed"; exits non-zero on any failure.
Usage: test_pool_faults.py --broker-bin B --worker-bin W --ember E --model DIR [--only NAME]
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poolutil as pu  # noqa: E402
from poolutil import check, compare, describe  # noqa: E402

CHUNK_TOKENS = 128
# the chunk timeout is long on purpose: a worker's loss is then told from a late chunk (the
# broker's chunks_late counter) however slow the machine
CHUNK_TIMEOUT_MS = 30000
BROKER_ARGS = ["--chunk-tokens", CHUNK_TOKENS, "--chunk-timeout-ms", CHUNK_TIMEOUT_MS]


def broker_rec(pool, b=None):
    _, recs, _ = pool.ember.status(pool.redis_url)
    brs = [r for r in recs if r["kind"] == "broker" and (b is None or r.get("frontend") == b.frontend)]
    return brs[0] if brs else {}


def exit_counters(proc):
    """The JSON counters line a process prints on stderr at exit (the last {...} line)."""
    for line in reversed(proc.log_text().splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


class Async:
    """One request in a thread, so the test can hurt the pool while it runs."""

    def __init__(self, endpoint, texts, dl_ms, timeout_s, **opts):
        self.rep = self.emb = None
        self.elapsed = None
        self.exc = None

        def run():
            t0 = time.monotonic()
            try:
                with pu.Client(endpoint) as c:
                    self.rep, self.emb = c.embed(texts, timeout=timeout_s, dl=dl_ms, **opts)
            except Exception as e:  # noqa: BLE001
                self.exc = e
            self.elapsed = time.monotonic() - t0
        self.t = threading.Thread(target=run)
        self.t.start()

    def join(self, timeout):
        self.t.join(timeout)
        return not self.t.is_alive()


LOST_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) W \S+ worker \S*-(\d+)-\S* lost \(([^)]*)\); "
                       r"(\d+) chunks in flight", re.M)


def worker_losses(broker, pid):
    """The broker's "worker <host>-<pid>-<rnd> lost (<why>); N chunks in flight to re-dispatch"
    lines for the worker with this pid, as (UTC second of the day, why, N, line)."""
    out = []
    for m in LOST_LINE.finditer(broker.log_text()):
        if int(m.group(5)) == pid:
            h, mi, s, ms = (int(m.group(k)) for k in range(1, 5))
            out.append((h * 3600 + mi * 60 + s + ms / 1000.0, m.group(6), int(m.group(7)), m.group(0)))
    return out


def seconds_after(tod, t_wall):
    """Seconds from wall time t_wall (time.time()) to UTC second of the day tod, across midnight."""
    return (tod - t_wall % 86400 + 43200) % 86400 - 43200


def worker_loaded(pool, w):
    """True once worker w's record shows it busy (load or chunks), i.e. the request is mid-way."""
    _, recs, _ = pool.ember.status(pool.redis_url)
    for r in recs:
        if r["kind"] == "worker" and r.get("pid") in (w.pid, str(w.pid)):
            return r.get("load_tokens", 0) > 0 or r.get("chunks", 0) > 0
    # pid is not in the status line: fall back to any worker being busy
    return any(r["kind"] == "worker" and r.get("load_tokens", 0) > 0 for r in recs)


def test_kill9(a):
    with pu.Pool(pu.bins_of(a), a.model, name="kill9") as pool:
        b = pool.up(3, broker_args=BROKER_ARGS)
        texts = pu.make_texts(3600, seed=11, min_words=2, max_words=6)
        ref, ids = pool.ember.reference(texts)
        dl = 60000
        req = Async(b.frontend, texts, dl, pu.scaled(90))
        pu.wait_until(lambda: pool.redis_url and any(worker_loaded(pool, w) for w in pool.workers), 10)
        time.sleep(0.3)
        victim = pool.workers[1]
        check(not req.join(0), "the request is still running when the worker is killed")
        victim.send_signal(signal.SIGKILL)
        victim.expect_exit = True
        pu.log("SIGKILL %s (pid %d)" % (victim.name, victim.pid))
        req.join(pu.scaled(120))
        check(req.rep is not None and req.rep.get("t") == "embed_reply",
              "request completes after a worker's SIGKILL (%.1fs, deadline %d ms): %s"
              % (req.elapsed or -1, dl, describe(req.rep)))
        check(req.elapsed is not None and req.elapsed * 1000 < dl,
              "... within its deadline (%.1fs)" % (req.elapsed or -1))
        if req.emb is not None:
            compare(req.emb, ref, "embeddings after SIGKILL = in-process, in order")
            check(list(req.rep.get("ntok", [])) == [len(x) for x in ids], "ntok after SIGKILL")
        br = pool.wait_status(lambda rs: any(r["kind"] == "broker" and r.get("redispatched", 0) > 0
                                             for r in rs), 5)
        check(br, "broker counts re-dispatched chunks (%s)" % broker_rec(pool))
        with pu.Client(b.frontend) as c:
            rep = pu.wait_until(lambda: (lambda r: r if r and r.get("nwk") == 2 else None)(c.info()), 5)
            check(rep, "broker forgets the killed worker: nwk 2 (%s)" % describe(c.info()))
            rep, emb = c.embed(texts[:100], timeout=pu.scaled(60))
            compare(emb, ref[:100], "serving goes on with 2 workers")


def test_sigstop(a):
    with pu.Pool(pu.bins_of(a), a.model, name="sigstop") as pool:
        b = pool.up(2, broker_args=BROKER_ARGS)
        texts = pu.make_texts(3000, seed=12, min_words=2, max_words=6)
        ref, _ = pool.ember.reference(texts)
        dl = 60000
        req = Async(b.frontend, texts, dl, pu.scaled(90))
        pu.wait_until(lambda: any(worker_loaded(pool, w) for w in pool.workers), 10)
        time.sleep(0.3)
        victim = pool.workers[0]
        check(not req.join(0), "the request is still running when the worker is stopped")
        t_stop = time.time()
        victim.send_signal(signal.SIGSTOP)
        pu.log("SIGSTOP %s (pid %d)" % (victim.name, victim.pid))
        req.join(pu.scaled(120))
        check(req.rep is not None and req.rep.get("t") == "embed_reply",
              "request completes with a worker stopped (%.1fs, %.1fs after the stop): %s"
              % (req.elapsed or -1, time.time() - t_stop, describe(req.rep)))
        # Whether the heartbeat found the stopped worker is read from the broker's log, not from
        # when the request completed: that also counts the survivor's compute, which a stalled CI
        # machine once stretched past the chunk timeout. The broker checks heartbeats before
        # chunk ages, so even a stall longer than the chunk timeout logs the heartbeat as the why.
        lost = [x for x in worker_losses(pool.brokers[0], victim.pid) if seconds_after(x[0], t_stop) > -0.01]
        check(lost and lost[0][1] == "missed 3 heartbeats" and lost[0][2] > 0,
              "the heartbeat found the stopped worker (%.2fs after the stop) and took its chunks: %s"
              % (seconds_after(lost[0][0], t_stop) if lost else -1, [x[3] for x in lost]))
        if req.emb is not None:
            compare(req.emb, ref, "embeddings with a stopped worker = in-process")
        br = broker_rec(pool)
        check(br.get("redispatched", 0) > 0, "broker re-dispatched the stopped worker's chunks: %s" % br)
        with pu.Client(b.frontend) as c:
            rep = c.info()
            check(rep and rep.get("nwk") == 1, "stopped worker not counted as ready: %s" % describe(rep))
        # its registry record expires (its registry thread is stopped too)
        gone = pool.wait_status(lambda rs: sum(1 for r in rs if r["kind"] == "worker"
                                               and r.get("healthy") == "yes") == 1, 5,
                                what="stopped worker unhealthy")
        check(gone, "status shows one healthy worker while the other is stopped")
        _, before, _ = pool.ember.status(pool.redis_url)
        victim.send_signal(signal.SIGCONT)
        pu.log("SIGCONT %s" % victim.name)
        back = pu.wait_until(lambda: (lambda r: r if r and r.get("nwk") == 2 else None)(
            pu.Client(b.frontend).info()), 10)
        check(back, "after SIGCONT the worker rejoins: nwk 2")
        recs = pool.wait_status(lambda rs: sum(1 for r in rs if r["kind"] == "worker"
                                               and r.get("healthy") == "yes") == 2, 10,
                                what="rejoined worker healthy")
        check(recs, "after SIGCONT status shows 2 healthy workers")
        # and it takes work again
        base = {r["id"]: r.get("chunks", 0) for r in (recs or before) if r["kind"] == "worker"}
        with pu.Client(b.frontend) as c:
            for k in range(3):
                rep, emb = c.embed(texts[:600], timeout=pu.scaled(60))
                compare(emb, ref[:600], "request %d after the worker rejoined" % k)
        recs = pool.wait_status(lambda rs: all(
            r.get("chunks", 0) > base.get(r["id"], 0) for r in rs if r["kind"] == "worker"), 5,
            what="both workers busy")
        check(recs, "both workers (the rejoined one too) took chunks after SIGCONT")
        check(victim.alive(), "the stopped-and-continued worker is still running")
        broker = pool.brokers[0]
        broker.stop()
        cnt = exit_counters(broker) or {}
        check(cnt.get("chunks_late") == 0 and cnt.get("chunks_redispatched", 0) > 0,
              "no chunk waited for the %d ms chunk timeout; the loss re-dispatched them (broker "
              "exit counters: late %s, re-dispatched %s)"
              % (CHUNK_TIMEOUT_MS, cnt.get("chunks_late"), cnt.get("chunks_redispatched")))


def test_drain(a):
    # Heartbeats every 300 ms here (a peer lost after ~900 ms of silence): this test is about the
    # drain, and at 100 ms a loaded machine (CI under ASan on two cores) once stalled the victim
    # long enough to be declared lost, with chunks, before the SIGTERM.
    with pu.Pool(pu.bins_of(a), a.model, name="drain", heartbeat_ms=300) as pool:
        b = pool.up(2, broker_args=BROKER_ARGS)
        # enough work that the request outlives the SIGTERM: 1000 texts once finished in 1.06 s
        # on a fast CI machine, before the signal
        texts = pu.make_texts(2500, seed=13, min_words=2, max_words=6)
        ref, _ = pool.ember.reference(texts)
        red0 = broker_rec(pool).get("redispatched", 0)
        req = Async(b.frontend, texts, 60000, pu.scaled(90))
        victim = pool.workers[0]
        pu.wait_until(lambda: worker_loaded(pool, victim), 10)
        time.sleep(0.1)
        check(not req.join(0), "the request is still running when the worker gets SIGTERM")
        victim.send_signal(signal.SIGTERM)
        victim.expect_exit = True
        t0 = time.monotonic()
        pu.log("SIGTERM %s" % victim.name)
        rc = victim.wait(30)
        check(rc == 0, "drained worker exits 0 (rc %s after %.1fs)" % (rc, time.monotonic() - t0))
        req.join(pu.scaled(120))
        check(req.rep is not None and req.rep.get("t") == "embed_reply",
              "request completes across the drain: %s" % describe(req.rep))
        if req.emb is not None:
            compare(req.emb, ref, "embeddings across a drain = in-process")
        cnt = exit_counters(victim)
        pu.log("drained worker's exit counters: %s" % cnt)
        check(cnt is None or any(v for k, v in cnt.items() if "chunk" in k and isinstance(v, int)),
              "the drained worker had done chunks (exit counters: %s)" % cnt)
        br = broker_rec(pool)
        red = br.get("redispatched", 0) - red0
        pu.log("re-dispatches during the drain: %d" % red)
        # The broker logs "worker <host>-<pid>-<rnd> lost (<why>); N chunks in flight to
        # re-dispatch" when a worker leaves: for a drained worker N must be 0. (The counter alone
        # could also count a spurious heartbeat loss of the other worker on a loaded CI machine.)
        left = worker_losses(pool.brokers[0], victim.pid)
        if left:
            check(all(x[2] == 0 for x in left),
                  "a drain loses nothing: the broker had no chunk of the drained worker to re-dispatch "
                  "(%s)" % [x[3] for x in left])
        else:
            check(red == 0, "a drain loses nothing: no chunk re-dispatched (%d)" % red)
        recs = pool.wait_status(lambda rs: sum(1 for r in rs if r["kind"] == "worker") == 1, 5,
                                what="drained worker deregistered")
        check(recs, "the drained worker deregistered from Redis")
        with pu.Client(b.frontend) as c:
            rep = c.info()
            check(rep and rep.get("nwk") == 1, "broker counts 1 worker after the drain: %s" % describe(rep))


def test_redis(a):
    with pu.Pool(pu.bins_of(a), a.model, name="redis") as pool:
        b = pool.up(2, broker_args=BROKER_ARGS)
        recs = pool.wait_status(lambda rs: len(rs) == 3, 10)
        check(recs, "broker and 2 workers registered")
        epochs = {r["id"]: r.get("epoch", 0) for r in (recs or []) if r["kind"] == "worker"}
        texts = pu.make_texts(200, seed=14)
        ref, _ = pool.ember.reference(texts)
        port = pool.redis_port
        pool.stop_redis()
        pu.log("redis stopped")
        rc, _, err = pool.ember.status(pool.redis_url)
        check(rc == 7, "ember status exits 7 with Redis down (%d %s)" % (rc, err.strip()))
        ok = 0
        t_end = time.monotonic() + 4
        n = 0
        with pu.Client(b.frontend) as c:
            while time.monotonic() < t_end:
                rep, emb = c.embed(texts, timeout=pu.scaled(30))
                n += 1
                if emb is not None and pu.row_cosines(emb, ref).min() >= 0.99999:
                    ok += 1
                else:
                    pu.log("request with Redis down: %s" % describe(rep))
        check(n > 0 and ok == n, "requests keep succeeding with Redis down (%d of %d)" % (ok, n))
        check(all(p.alive() for p in pool.brokers + pool.workers), "nothing died with Redis down")
        pool.start_redis(port)
        pu.log("redis restarted on port %d (empty)" % port)
        recs = pool.wait_status(lambda rs: sum(1 for r in rs if r["kind"] == "worker"
                                               and r.get("healthy") == "yes") == 2
                                and any(r["kind"] == "broker" and r.get("healthy") == "yes" for r in rs),
                                15, what="re-registration")
        check(recs, "registrations reappear after Redis returns, nothing restarted")
        if recs:
            new = {r["id"]: r.get("epoch", 0) for r in recs if r["kind"] == "worker"}
            check(set(new) == set(epochs), "same worker ids re-registered: %s vs %s" % (new, epochs))
            check(all(new[k] > epochs.get(k, 0) for k in new),
                  "worker epochs bumped by the re-registration: %s -> %s" % (epochs, new))
        with pu.Client(b.frontend) as c:
            rep, emb = c.embed(texts, timeout=pu.scaled(30))
            compare(emb, ref, "serving after Redis returned")


def test_broker_restart(a):
    with pu.Pool(pu.bins_of(a), a.model, name="brestart") as pool:
        b = pool.up(2, broker_args=BROKER_ARGS)
        texts = pu.make_texts(800, seed=15, min_words=2, max_words=6)
        ref, ids = pool.ember.reference(texts)

        # (1) this file's own client: one attempt dies with the broker; retry with a new id
        result = {}

        def retrying_client():
            with pu.Client(b.frontend) as c:
                for attempt in range(6):
                    rep, emb = c.embed(texts, timeout=pu.scaled(10), dl=int(pu.scaled(10) * 1000))
                    if emb is not None:
                        result["emb"], result["attempts"] = emb, attempt + 1
                        return
                    result.setdefault("errors", []).append(describe(rep))
                    time.sleep(0.2)
        t = threading.Thread(target=retrying_client)
        t.start()
        pu.wait_until(lambda: any(worker_loaded(pool, w) for w in pool.workers), 10)
        time.sleep(0.2)
        b.send_signal(signal.SIGKILL)
        b.expect_exit = True
        b.wait(10)
        pu.log("broker killed mid-request")
        time.sleep(0.5)
        b2 = pool.restart_broker(b)
        t.join(pu.scaled(120))
        check("emb" in result, "client with retries gets its answer across a broker restart "
              "(attempts %s, errors %s)" % (result.get("attempts"), result.get("errors")))
        if "emb" in result:
            compare(result["emb"], ref, "answer after the broker restart")
            check(result["attempts"] >= 2, "... on a retry (attempt %d)" % result["attempts"])
        try:
            rep = pool.wait_workers(b2, 2, timeout=10)
            check(rep, "both workers rejoined the restarted broker by themselves")
        except RuntimeError as e:
            check(False, str(e))

        # (2) `ember embed --broker` (libember's retries): kill the broker while the CLI runs,
        # restart it; the CLI must still print every embedding
        data = "\n".join(texts).encode() + b"\n"
        out = {}

        def cli():
            out["r"] = pool.ember.run(["embed", "--broker", b2.frontend], data, timeout=120)
        t = threading.Thread(target=cli)
        t.start()
        pu.wait_until(lambda: any(worker_loaded(pool, w) for w in pool.workers), 10)
        time.sleep(0.2)
        b2.send_signal(signal.SIGKILL)
        b2.expect_exit = True
        b2.wait(10)
        time.sleep(0.5)
        b3 = pool.restart_broker(b2)
        t.join(pu.scaled(150))
        rc, stdout, err = out.get("r", (None, b"", "no result"))
        check(rc == 0, "ember embed --broker succeeds across a broker restart (rc %s, %s)"
              % (rc, err.strip()[-300:]))
        if rc == 0:
            rows = [json.loads(line) for line in stdout.decode().splitlines()]
            if check(len(rows) == len(texts), "CLI printed all %d rows" % len(texts)):
                compare(np.array([r["embedding"] for r in rows], dtype=np.float32), ref,
                        "CLI answer across the broker restart")
        check(b3.alive(), "restarted broker alive")


def test_failover(a):
    with pu.Pool(pu.bins_of(a), a.model, name="failover") as pool:
        pool.start_redis()
        b1 = pool.start_broker(args=BROKER_ARGS)
        b2 = pool.start_broker(args=BROKER_ARGS)
        for _ in range(2):
            pool.start_worker(brokers=[b1, b2])
        for b in (b1, b2):
            pool.wait_workers(b, 2)
        check(True, "two brokers, each with the 2 workers connected to both")
        texts = pu.make_texts(600, seed=16, min_words=2, max_words=6)
        ref, _ = pool.ember.reference(texts)
        data = "\n".join(texts).encode() + b"\n"
        brokers = ["--broker", b1.frontend, "--broker", b2.frontend]

        rc, stdout, err = pool.ember.run(["embed"] + brokers, data, timeout=120)
        check(rc == 0, "ember embed with two brokers, both up (rc %d %s)" % (rc, err.strip()[-300:]))

        # a request in flight when its broker dies
        out = {}

        def cli():
            out["r"] = pool.ember.run(["embed"] + brokers, data, timeout=120)
        t = threading.Thread(target=cli)
        t.start()
        pu.wait_until(lambda: any(worker_loaded(pool, w) for w in pool.workers), 10)
        time.sleep(0.2)
        # kill whichever broker is busy (the client picked one); b1 if neither says so
        busy = b1
        for b in (b1, b2):
            with pu.Client(b.frontend) as c:
                rep = c.info(timeout=1)
                if rep and rep.get("load", 0) > 0:
                    busy = b
                    break
        other = b2 if busy is b1 else b1
        busy.send_signal(signal.SIGKILL)
        busy.expect_exit = True
        pu.log("killed %s (the busy broker) mid-request" % busy.name)
        t.join(pu.scaled(150))
        rc, stdout, err = out.get("r", (None, b"", "no result"))
        check(rc == 0, "a request in flight fails over to the other broker (rc %s %s)"
              % (rc, err.strip()[-300:]))
        if rc == 0:
            rows = [json.loads(line) for line in stdout.decode().splitlines()]
            if check(len(rows) == len(texts), "all rows after failover"):
                compare(np.array([r["embedding"] for r in rows], dtype=np.float32), ref,
                        "answer after failover")
        # a new client run with one broker dead from the start
        rc, stdout, err = pool.ember.run(["embed"] + brokers, data, timeout=120)
        check(rc == 0, "a new request with one of its two brokers dead succeeds (rc %d %s)"
              % (rc, err.strip()[-300:]))
        with pu.Client(other.frontend) as c:
            rep, emb = c.embed(texts[:50], timeout=pu.scaled(30))
            compare(emb, ref[:50], "the surviving broker serves")
            rep = c.info()
            check(rep and rep.get("nwk") == 2, "the surviving broker still has both workers: %s"
                  % describe(rep))
        check(all(w.alive() for w in pool.workers), "workers survive the loss of one broker")


def main():
    a = pu.common_args(argparse.ArgumentParser()).parse_args()
    return pu.run_tests([test_kill9, test_sigstop, test_drain, test_redis, test_broker_restart,
                         test_failover], a)


if __name__ == "__main__":
    sys.exit(main())
