#!/usr/bin/env python3
"""Pool basics with real processes: redis-server, 1 ember-broker, 3 ember-worker (cpu), real
sockets on free loopback ports.

- info: healthy, 3 workers, the model's name and width.
- a 2,000-text request is split across at least 2 workers (their chunks= counters in
  `ember status`) and its embeddings equal the in-process engine's (`ember embed --model`,
  cosine >= 0.99999), in input order, with the same token counts.
- 16 concurrent clients with mixed request sizes each get their own correct answers.
- pipelined requests on one socket are matched by id; token-id inputs, f16 and Matryoshka dims
  agree with the in-process engine; tokenize agrees with `ember tokenize`.
- `ember embed --broker` (pool mode of the CLI) prints what the in-process mode prints.

Prints "N passed, N failed"; exits non-zero on any failure.
Usage: test_pool_basic.py --broker-bin B --worker-bin W --ember E --model DIR [--only NAME]
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poolutil as pu  # noqa: E402
from poolutil import check, compare, describe  # noqa: E402

CHUNK_TOKENS = 256  # small, so 2,000 short texts (~20k tokens) make ~80 chunks


def worker_chunks(recs):
    return {r["id"]: r.get("chunks", 0) for r in recs if r["kind"] == "worker"}


def test_pool(a):
    with pu.Pool(pu.bins_of(a), a.model, name="basic") as pool:
        # broker and workers busy-poll here (--spin-us); the other pool tests run without it
        b = pool.up(3, broker_args=["--chunk-tokens", CHUNK_TOKENS, "--spin-us", "200"],
                    worker_args=["--spin-us", "200"])
        recs = pool.wait_status(
            lambda rs: sum(1 for r in rs if r["kind"] == "worker" and r.get("healthy") == "yes") >= 3
            and any(r["kind"] == "broker" and r.get("healthy") == "yes" for r in rs), 20)
        check(recs, "ember status shows the broker and 3 healthy workers")
        if recs:
            br = [r for r in recs if r["kind"] == "broker"]
            check(len(br) == 1 and br[0].get("frontend") == b.frontend,
                  "broker record names its frontend %s: %s" % (b.frontend, br))
            check(all(r.get("model") == pool.model_name for r in recs if r["kind"] == "worker"),
                  "worker records name the model %s" % pool.model_name)

        with pu.Client(b.frontend) as c:
            rep = c.info()
            check(rep and rep.get("t") == "info_reply" and rep.get("ok") is True
                  and rep.get("nwk") == 3, "info: ok, 3 workers: %s" % describe(rep))
            check(rep and rep.get("model") == pool.model_name and rep.get("dim") in (None, 0, 384),
                  "info: model %s, dim 384: %s" % (pool.model_name, describe(rep)))

        sub_split(a, pool, b)
        sub_concurrent(a, pool, b)
        sub_pipelined_and_options(a, pool, b)
        sub_tokenize(a, pool, b)
        sub_cli_pool_mode(a, pool, b)
        sub_ipc(a, pool)
        check(all(p.alive() for p in pool.brokers + pool.workers),
              "every process still running at the end")
        # a CPU worker re-executes itself where OpenBLAS would run older kernels than the CPU
        # has (kernels/blas_core.h); the engine warns where it still does
        slow = [p.name for p in pool.workers if "OpenBLAS chose" in p.log_text()]
        check(not slow, "the CPU workers run OpenBLAS's best kernels for this CPU (not: %s)" % slow)


def sub_split(a, pool, b):
    pu.log("-- 2,000 texts split across workers")
    texts = pu.make_texts(2000, seed=1, min_words=2, max_words=6)
    ref, ref_ids = pool.ember.reference(texts)
    _, before, _ = pool.ember.status(pool.redis_url)
    base = worker_chunks(before)
    t0 = time.monotonic()
    with pu.Client(b.frontend) as c:
        rep, emb = c.embed(texts, timeout=pu.scaled(180), dl=170000)
    dt = time.monotonic() - t0
    check(rep is not None and rep.get("t") == "embed_reply",
          "2,000-text request answered (%.1fs): %s" % (dt, describe(rep)))
    if emb is None:
        return
    compare(emb, ref, "2,000 texts through the pool vs in-process, in input order")
    check(list(rep.get("ntok", [])) == [len(x) for x in ref_ids], "ntok = in-process token counts")
    check(rep.get("use", {}).get("tok") == sum(len(x) for x in ref_ids),
          "use.tok = total tokens (%s vs %d)" % (rep.get("use"), sum(len(x) for x in ref_ids)))
    tm = rep.get("tm", {})
    check(isinstance(tm, dict) and tm.get("total", 0) > 0 and tm.get("comp", 0) > 0,
          "timings present: %s" % tm)
    # order: a permutation would still pass row-wise checks on identical texts, but ours are
    # distinct; make sure the rows are not all alike
    check(float(pu.row_cosines(emb[:-1], emb[1:]).min()) < 0.999, "rows are distinct texts")

    total_tokens = sum(len(x) for x in ref_ids)
    min_chunks = -(-total_tokens // CHUNK_TOKENS)

    def spread(recs):
        now = worker_chunks(recs)
        delta = {k: now.get(k, 0) - base.get(k, 0) for k in now}
        return sum(delta.values()) >= min_chunks and sum(1 for v in delta.values() if v > 0) >= 2
    recs = pool.wait_status(spread, 10, what="chunks spread")
    now = worker_chunks(recs or pool.ember.status(pool.redis_url)[1])
    delta = {k: now.get(k, 0) - base.get(k, 0) for k in now}
    pu.log("chunks per worker for the request: %s (>= %d chunks of <= %d tokens expected)"
           % (delta, min_chunks, CHUNK_TOKENS))
    check(recs, "the request's chunks ran on >= 2 workers and number >= %d "
          "(total tokens %d / --chunk-tokens %d): %s" % (min_chunks, total_tokens, CHUNK_TOKENS, delta))
    brs = [r for r in (recs or []) if r["kind"] == "broker"]
    check(brs and brs[0].get("chunks", 0) >= min_chunks and brs[0].get("requests", 0) >= 1,
          "broker record counts the request and >= %d chunks: %s" % (min_chunks, brs))


CLIENT_SIZES = [1, 2, 5, 17, 64, 150, 300, 1, 3, 40, 8, 100, 250, 1, 20, 480]


def sub_concurrent(a, pool, b):
    pu.log("-- 16 concurrent clients, mixed sizes, 2 requests each")
    sets = {}
    for k, n in enumerate(CLIENT_SIZES):
        sets[(k, 0)] = pu.make_texts(n, seed=100 + k, prefix="c%d-" % k)
        sets[(k, 1)] = pu.make_texts(CLIENT_SIZES[-1 - k], seed=200 + k, prefix="d%d-" % k)
    order = sorted(sets)
    alltexts = [t for key in order for t in sets[key]]
    ref_all, ids_all = pool.ember.reference(alltexts)
    refs, pos = {}, 0
    for key in order:
        n = len(sets[key])
        refs[key] = (ref_all[pos:pos + n], ids_all[pos:pos + n])
        pos += n
    results = {}
    barrier = threading.Barrier(len(CLIENT_SIZES))

    def client(k):
        try:
            with pu.Client(b.frontend) as c:
                barrier.wait(30)
                for r in (0, 1):
                    t0 = time.monotonic()
                    rep, emb = c.embed(sets[(k, r)], timeout=pu.scaled(180), dl=170000)
                    results[(k, r)] = (rep, emb, time.monotonic() - t0)
        except Exception as e:  # noqa: BLE001
            results[(k, "exc")] = e
    threads = [threading.Thread(target=client, args=(k,)) for k in range(len(CLIENT_SIZES))]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(pu.scaled(400))
    pu.log("16 clients done in %.1fs" % (time.monotonic() - t0))
    excs = {k: v for k, v in results.items() if k[1] == "exc"}
    check(not excs, "no client raised: %s" % excs)
    ok = 0
    for key in order:
        rep, emb, dt = results.get(key, (None, None, 0))
        if rep is None or emb is None:
            check(False, "client %d request %d (%d texts): %s" % (key[0], key[1], len(sets[key]), describe(rep)))
            continue
        ref, ids = refs[key]
        cos = pu.row_cosines(emb, ref) if emb.shape == ref.shape else np.zeros(1)
        good = emb.shape == ref.shape and float(cos.min()) >= 0.99999 \
            and list(rep.get("ntok", [])) == [len(x) for x in ids]
        if not good:
            check(False, "client %d request %d (%d texts): shape %s, worst cosine %.6f"
                  % (key[0], key[1], len(sets[key]), emb.shape, float(cos.min())))
        ok += good
    check(ok == len(order), "all %d concurrent requests got their own correct answers (%d ok)"
          % (len(order), ok))


def sub_pipelined_and_options(a, pool, b):
    pu.log("-- pipelined requests on one socket; token ids, f16, dims")
    sizes = [7, 1, 33, 2, 90, 4, 15, 60, 1, 25]
    sets = [pu.make_texts(n, seed=300 + i, prefix="p%d-" % i) for i, n in enumerate(sizes)]
    alltexts = [t for s in sets for t in s]
    ref_all, ids_all = pool.ember.reference(alltexts)
    with pu.Client(b.frontend) as c:
        rids = [c.send({"v": 1, "t": "embed", "in": s}) for s in sets]
        reps = {rid: c.wait(rid, pu.scaled(120)) for rid in rids}
        pos, ok = 0, 0
        for rid, s in zip(rids, sets):
            emb = pu.decode_embeddings(reps[rid])
            want = ref_all[pos:pos + len(s)]
            pos += len(s)
            if emb is not None and emb.shape == want.shape and pu.row_cosines(emb, want).min() >= 0.99999:
                ok += 1
            else:
                check(False, "pipelined request %d: %s" % (rid, describe(reps[rid])))
        check(ok == len(sets), "10 pipelined requests on one socket each answered correctly by id")

        # token-id inputs skip the tokenizer: same vectors as the texts
        ids = ids_all[:20]
        rep, emb = c.embed(ids, timeout=pu.scaled(60))
        if check(emb is not None, "token-id inputs answered: %s" % describe(rep)):
            compare(emb, ref_all[:20], "token-id inputs = texts' embeddings")
        rep, emb = c.embed(alltexts[:50], timeout=pu.scaled(60), dt="f16")
        if check(emb is not None and rep.get("dt") == "f16", "f16 reply: %s" % describe(rep)):
            compare(emb, ref_all[:50], "f16 embeddings", min_cos=0.9999)
        rep, emb = c.embed(alltexts[:50], timeout=pu.scaled(60), dims=128)
        if check(emb is not None and emb.shape == (50, 128), "dims 128: %s" % describe(rep)):
            want = ref_all[:50, :128]
            want = want / np.linalg.norm(want, axis=1, keepdims=True)
            check(float(np.abs(emb - want).max()) < 1e-5, "dims 128 = re-normalised prefix")
        rep, emb = c.embed(alltexts[:5], timeout=pu.scaled(60), norm=False, model=pool.model_name)
        if check(emb is not None, "norm false with the right model name: %s" % describe(rep)):
            n = np.linalg.norm(emb, axis=1)
            check(float(np.abs(n - 1).max()) > 1e-3 and pu.row_cosines(emb, ref_all[:5]).min() > 0.99999,
                  "norm false: raw pooled vectors, same direction")


def sub_tokenize(a, pool, b):
    pu.log("-- tokenize")
    texts = ["Hello, World!", "Ünïcödé façade — naïve", "東京は日本の首都です", "word " * 400,
             "", "tab\there  spaces", "👩‍👩‍👧 family"]
    _, ids = pool.ember.reference(texts)
    with pu.Client(b.frontend) as c:
        rep = c.request({"v": 1, "t": "tokenize", "in": texts}, pu.scaled(30))
        check(rep and rep.get("t") == "tokenize_reply" and rep.get("ids") == ids,
              "tokenize through the broker = ember tokenize: %s" % describe(rep))
        rep = c.request({"v": 1, "t": "tokenize", "in": ["word " * 400], "trunc": False}, pu.scaled(30))
        # docs/protocol.md: tokenize's trunc is "as for embed": over-long with trunc false is
        # INPUT_TOO_LONG
        check(rep and rep.get("t") == "error" and rep.get("code") == pu.INPUT_TOO_LONG,
              "tokenize trunc=false of a 402-token text: INPUT_TOO_LONG: %s" % describe(rep))


def sub_cli_pool_mode(a, pool, b):
    pu.log("-- ember embed --broker")
    texts = pu.make_texts(300, seed=7) + ["", "机器学习 🏔️ café", "a " * 600]
    data = "\n".join(texts).encode() + b"\n"
    rc, out, err = pool.ember.run(["embed", "--model", a.model], data)
    want = [json.loads(line) for line in out.decode().splitlines()]
    rc, out, err = pool.ember.run(["embed", "--broker", b.frontend], data, timeout=300)
    if not check(rc == 0, "ember embed --broker exits 0 (rc %d, stderr %s)" % (rc, err.strip()[-400:])):
        return
    got = [json.loads(line) for line in out.decode().splitlines()]
    check(len(got) == len(want) and [r["index"] for r in got] == list(range(len(want))),
          "pool mode prints one JSON line per input, in order")
    check([r["tokens"] for r in got] == [r["tokens"] for r in want], "pool mode token counts")
    if len(got) == len(want):
        compare(np.array([r["embedding"] for r in got]), np.array([r["embedding"] for r in want]),
                "ember embed --broker = ember embed --model")
    # a shallow client (docs/cli.md: --in-flight, --request-texts): the same lines, in order
    rc, out, err = pool.ember.run(["embed", "--broker", b.frontend, "--in-flight", "1",
                                   "--request-texts", "7"], data, timeout=300)
    if check(rc == 0, "--in-flight 1 --request-texts 7 exits 0 (rc %d, %s)" % (rc, err.strip()[-400:])):
        shallow = [json.loads(line) for line in out.decode().splitlines()]
        check([r["index"] for r in shallow] == list(range(len(want))) and
              [r["tokens"] for r in shallow] == [r["tokens"] for r in want],
              "--in-flight 1 --request-texts 7: one line per input, in order, same token counts")
        if len(shallow) == len(want):
            compare(np.array([r["embedding"] for r in shallow]),
                    np.array([r["embedding"] for r in want]), "--in-flight 1 --request-texts 7")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in.txt")
        with open(path, "wb") as f:
            f.write(data)
        rc, raw, err = pool.ember.run(["embed", "--broker", b.frontend, "--input", path,
                                       "--format", "f32", "--dimensions", "128"], timeout=300)
        ref, _ = pool.ember.reference(texts)
        if check(rc == 0 and len(raw) == len(texts) * 128 * 4,
                 "pool mode --format f32 --dimensions 128: %d bytes (%s)" % (len(raw), err.strip()[-300:])):
            emb = np.frombuffer(raw, dtype="<f4").reshape(len(texts), 128)
            w = ref[:, :128] / np.linalg.norm(ref[:, :128], axis=1, keepdims=True)
            check(float(np.abs(emb - w).max()) < 1e-5, "pool mode f32 dims 128 values")


def sub_ipc(a, pool):
    pu.log("-- a broker bound to tcp and ipc endpoints at once; worker and client over ipc")
    with tempfile.TemporaryDirectory() as d:
        fe_tcp, be_tcp = pu.free_endpoint(), pu.free_endpoint()
        fe_ipc, be_ipc = "ipc://%s/fe.sock" % d, "ipc://%s/be.sock" % d
        b2 = pool.start_broker(fe_tcp + "," + fe_ipc, be_tcp + "," + be_ipc, redis=False,
                               name="broker-ipc")
        pool.start_worker(brokers=[be_ipc], redis=False, name="worker-ipc")
        b2.frontend = fe_tcp  # the readiness check goes through the tcp endpoint
        pool.wait_workers(b2, 1, pu.scaled(60))
        texts = pu.make_texts(40, seed=11)
        ref, _ = pool.ember.reference(texts)
        with pu.Client(fe_ipc) as c:
            rep, emb = c.embed(texts, timeout=pu.scaled(60))
        check(rep is not None and rep.get("t") == "embed_reply",
              "embed over ipc:// answered: %s" % describe(rep))
        if emb is not None:
            compare(emb, ref, "40 texts over ipc:// (client and worker) vs in-process")
        with pu.Client(fe_tcp) as c:
            rep = c.info()
        check(rep and rep.get("nwk") == 1, "the same broker over tcp sees the ipc worker: %s"
              % describe(rep))


def main():
    a = pu.common_args(argparse.ArgumentParser()).parse_args()
    return pu.run_tests([test_pool], a)


if __name__ == "__main__":
    sys.exit(main())
