#!/usr/bin/env python3
"""Hostile traffic against a real broker (redis-server, ember-broker, 2 ember-worker on free
loopback ports), sent with pyzmq + hand-built msgpack (an implementation independent of
common/protocol.c):

- frontend: not msgpack, not a map, wrong types, missing / duplicate keys, unknown types and
  versions, huge declared lengths (array32/map32/str32/bin32/ext32), deep nesting (at the depth
  limit: accepted; one past: refused; 100,000 deep: refused), every truncation of a valid
  request, trailing bytes, extra / empty frames, invalid UTF-8 (repaired: the answer equals the
  in-process engine's), oversized requests (65,537 inputs, a text over 1 MiB, a frame over
  64 MiB), worker messages sent to the frontend, clients that vanish before their reply, a
  flood of garbage from many sockets and many short-lived connections.
  Each gets an error reply with the documented code (and the request's id when it could be
  read), or for framing garbage a dropped frame; never a crash or a hang.
- backend: garbage, heartbeats from unknown workers (answered disconnect), a worker with the
  wrong model (refused), and a lying worker that answers chunks with wrong shapes, errors and
  duplicates: its chunks are re-dispatched to an honest worker and the request completes.
- throughout: a normal client keeps succeeding (checked during and after every barrage), and
  the broker process is alive at the end and exits 0 on SIGTERM with its counters.

Prints "N passed, N failed"; exits non-zero on any failure.
Usage: test_pool_hostile.py --broker-bin B --worker-bin W --ember E --model DIR [--only NAME]
"""
import argparse
import os
import random
import struct
import sys
import threading
import time

import msgpack
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import poolutil as pu  # noqa: E402
from poolutil import check, compare, describe  # noqa: E402

P = msgpack.packb
NOTES = pu.NOTES


def mstr(raw):
    """A msgpack str holding raw bytes as they are (invalid UTF-8 allowed)."""
    n = len(raw)
    if n < 32:
        return bytes([0xA0 | n]) + raw
    if n < 256:
        return b"\xd9" + bytes([n]) + raw
    if n < 65536:
        return b"\xda" + struct.pack(">H", n) + raw
    return b"\xdb" + struct.pack(">I", n) + raw


def mmap(pairs):
    """A msgpack map from (key bytes, value bytes) pairs, already encoded, kept in order
    (duplicates allowed)."""
    n = len(pairs)
    head = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)
    return head + b"".join(k + v for k, v in pairs)


def kv(key, value):
    return (P(key), value if isinstance(value, bytes) else P(value))


def req(rid, extra=(), t="embed", v=1, inputs=("hello",)):
    pairs = [kv("v", v), kv("t", t), kv("id", rid)]
    if inputs is not None:
        pairs.append(kv("in", list(inputs)))
    pairs += list(extra)
    return mmap(pairs)


class Normal:
    """A well-behaved client embedding a few texts in a loop while the barrage runs."""

    def __init__(self, endpoint, texts, ref):
        self.endpoint, self.texts, self.ref = endpoint, texts, ref
        self.ok = self.bad = 0
        self.worst = 0.0
        self.errors = []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        i = 0
        with pu.Client(self.endpoint) as c:
            while not self.stop_ev.is_set():
                k = i % len(self.texts)
                t0 = time.monotonic()
                rep, emb = c.embed(self.texts[k:k + 3], timeout=pu.scaled(10))
                dt = time.monotonic() - t0
                self.worst = max(self.worst, dt)
                if emb is not None and emb.shape[0] == len(self.texts[k:k + 3]) and \
                        pu.row_cosines(emb, self.ref[k:k + 3]).min() >= 0.99999:
                    self.ok += 1
                else:
                    self.bad += 1
                    self.errors.append(describe(rep))
                i += 1
                time.sleep(0.02)

    def stop(self):
        self.stop_ev.set()
        self.t.join(pu.scaled(30))


def probe(b, what):
    """The broker answers info at once (it is alive and not wedged)."""
    with pu.Client(b.frontend) as c:
        t0 = time.monotonic()
        rep = c.info(timeout=pu.scaled(3))
        return check(rep is not None and rep.get("t") == "info_reply",
                     "broker answers info after %s (%.0f ms)" % (what, (time.monotonic() - t0) * 1000))


def expect(c, payload, what, codes=None, rid=None, allow_drop=False, wait=1.5):
    """Sends payload (bytes, or a list of frames) and checks the answer: an error reply with a
    code in codes (any when None) and, when rid is given, that id; or no reply when allow_drop.
    Never a success reply. Each case uses a socket of its own, so a late reply cannot be
    mistaken for the next case's."""
    got = []
    with pu.Client(c.endpoint) as s:
        s.send_raw(payload)
        rep = s.recv_any(pu.scaled(0.4 if allow_drop else wait))
        if rep is not None:
            got.append(rep)
            more = s.recv_any(0.1)  # a second reply to one message would be a bug too
            if more is not None:
                got.append(more)
    if not got:
        return check(allow_drop, "%s: %s" % (what, "dropped (allowed)" if allow_drop else
                                             "no reply within %.1fs (want an error reply)" % wait))
    if len(got) > 1:
        return check(False, "%s: %d replies to one message" % (what, len(got)))
    rep = got[0]
    if rep.get("t") != "error":
        return check(False, "%s: not refused: %s" % (what, describe(rep)))
    okc = codes is None or rep.get("code") in codes
    # rid: the id the reply must carry, or a tuple of acceptable ones. When the structural walk
    # fails the decoder has not read the id yet (docs/protocol.md, Limits), so 0 is allowed there;
    # we note it, since the client then cannot match the error to its request.
    if isinstance(rid, tuple):
        oki = rep.get("id") in rid
        if rep.get("id") != rid[0]:
            NOTES.append("%s: error carries id %s, not the request's id %s" % (what, rep.get("id"), rid[0]))
    else:
        oki = rid is None or rep.get("id") == rid
    return check(okc and oki and isinstance(rep.get("msg"), str),
                 "%s: error code %s (want %s) id %s (want %s) msg %r"
                 % (what, rep.get("code"), codes, rep.get("id"), rid, rep.get("msg")))


def frontend_cases(ids):
    """(name, payload, codes, rid, allow_drop) for single-socket cases. ids: valid token ids."""
    B, L = pu.BAD_REQUEST, pu.TOO_LARGE
    cases = []
    n = [5000]

    def rid():
        n[0] += 1
        return n[0]

    # --- not a msgpack map
    for name, payload in [("empty frame", b""), ("never-used byte 0xc1", b"\xc1"),
                          ("array", P([1, 2, 3])), ("int", P(5)), ("str", P("embed")),
                          ("nil", b"\xc0"), ("truncated map header", b"\xde\x00"),
                          ("map32 declaring 2^32-1 pairs", b"\xdf\xff\xff\xff\xff"),
                          ("array32 declaring 2^32-1 items (msgpack-c's 96 GB)", b"\xdd\xff\xff\xff\xff"),
                          ("str32 declaring 4 GiB", b"\xdb\xff\xff\xff\xff"),
                          ("two maps back to back", req(1) + req(2))]:
        cases.append((name, payload, (B, L), None, True))
    rng = random.Random(1234)
    for k in range(25):
        cases.append(("random bytes #%d" % k, bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))),
                      (B, L), None, True))
    # --- envelope
    r = rid()
    cases.append(("missing v", mmap([kv("t", "embed"), kv("id", r), kv("in", ["x"])]), (B,), r, False))
    r = rid()
    cases.append(("v = 2", req(r, v=2), (pu.UNSUPPORTED_VERSION,), r, False))
    r = rid()
    cases.append(("v as a string", mmap([kv("v", "1"), kv("t", "embed"), kv("id", r), kv("in", ["x"])]),
                  (B, pu.UNSUPPORTED_VERSION), None, False))
    r = rid()
    cases.append(("unknown type", req(r, t="frobnicate"), (B,), r, False))
    r = rid()
    cases.append(("t as bin", mmap([kv("v", 1), kv("t", P(b"embed")), kv("id", r), kv("in", ["x"])]), (B,), None, False))
    cases.append(("missing id", mmap([kv("v", 1), kv("t", "embed"), kv("in", ["x"])]), (B,), None, False))
    cases.append(("negative id", req(-1), (B,), None, False))
    cases.append(("float id", req(1.5), (B,), None, False))
    # --- embed fields
    for name, extra_in, codes in [
            ("missing in", None, (B,)), ("empty in", [], (B,)), ("in as a string", "hello", (B,)),
            ("in mixing str and ids", ["a", [101, 102]], (B,)), ("in of nested str", [["a"]], (B,)),
            ("empty id array", [[]], (B,)), ("negative token id", [[101, -1, 102]], (B,)),
            ("token id over int32", [[101, 2 ** 31, 102]], (B,)),
            ("token id outside the vocabulary", [[101, 999999, 102]], None),
            ("in of nil", [None], (B,)), ("in of floats", [[1.0, 2.0]], (B,))]:
        r = rid()
        pairs = [kv("v", 1), kv("t", "embed"), kv("id", r)]
        if extra_in is not None:
            pairs.append(kv("in", extra_in))
        cases.append((name, mmap(pairs), codes, r, False))
    for name, extra, codes in [
            ("norm as int", [kv("norm", 1)], (B,)), ("dims over the width", [kv("dims", 999)], (pu.UNSUPPORTED,)),
            ("dims negative", [kv("dims", -1)], (B,)), ("dims over u32", [kv("dims", 2 ** 33)], (B,)),
            ("dt bf16", [kv("dt", "bf16")], (pu.UNSUPPORTED,)), ("dt as int", [kv("dt", 5)], (B,)),
            ("model mismatch", [kv("model", "some-other-model")], (pu.MODEL_MISMATCH,)),
            ("dl as a string", [kv("dl", "soon")], (B,)), ("trunc as str", [kv("trunc", "no")], (B,)),
            ("duplicate in", [kv("in", ["again"])], (B,))]:
        r = rid()
        cases.append((name, req(r, extra), codes, r, False))
    cases.append(("duplicate id", req(rid(), [kv("id", 77)]), (B,), None, False))
    r = rid()
    cases.append(("input too long with trunc false", req(r, [kv("trunc", False)], inputs=["word " * 600]),
                  (pu.INPUT_TOO_LONG,), r, False))
    # --- huge declared lengths inside a map whose id is readable
    for name, val in [("array32 of 2^32-1 inputs", b"\xdd\xff\xff\xff\xff"),
                      ("str32 text of 4 GiB", b"\x91\xdb\xff\xff\xff\xff" + b"a" * 8),
                      ("bin32 of 4 GiB", b"\xc6\xff\xff\xff\xff"),
                      ("ext32 of 4 GiB", b"\xc9\xff\xff\xff\xff\x01"),
                      ("map32 of 2^32-1 pairs", b"\xdf\xff\xff\xff\xff")]:
        r = rid()
        cases.append(("huge declared length: " + name,
                      mmap([kv("v", 1), kv("t", "embed"), kv("id", r), (P("in"), val)]), (B, L),
                      (r, 0), False))
        r = rid()
        cases.append(("huge declared length in an unknown key: " + name,
                      mmap([kv("v", 1), kv("t", "embed"), kv("id", r), kv("in", ["x"]), (P("zz"), val)]),
                      (B, L), (r, 0), False))
    # --- nesting: the top-level map is depth 1; max_depth 8
    r = rid()
    cases.append(("nesting 9 deep in an unknown key", req(r, [(P("x"), b"\x91" * 8 + b"\xc0")]), (L,), (r, 0), False))
    r = rid()
    cases.append(("nesting 100,000 deep", req(r, [(P("x"), b"\x91" * 100000 + b"\xc0")]), (L,), (r, 0), False))
    r = rid()
    cases.append(("nesting 100,000 maps deep", req(r, [(P("x"), b"\x81\xa1k" * 100000 + b"\xc0")]), (L,), (r, 0), False))
    # --- trailing bytes after the map
    r = rid()
    cases.append(("trailing nil after the map", req(r) + b"\xc0", (B,), None, False))
    # --- worker messages sent to the frontend
    for t, extra in [("ready", [kv("wid", "x"), kv("model", "m"), kv("fam", "bert"), kv("dev", "cpu"),
                                kv("mbt", 512), kv("dim", 384), kv("msl", 512), kv("cred", 4)]),
                     ("result", [kv("cid", 0), kv("att", 0), kv("err", {"code": 8, "msg": "x"})]),
                     ("hb", []), ("drain", []), ("disconnect", []),
                     ("chunk", [kv("cid", 0), kv("att", 0), kv("in", [[101, 102]])]),
                     ("embed_reply", [kv("n", 1), kv("dim", 1), kv("emb", P(b"\0" * 4)), kv("ntok", [2]),
                                      kv("use", {"tok": 2}), kv("tm", {})])]:
        r = rid()
        cases.append(("a %r message at the frontend" % t, req(r, extra, t=t, inputs=None), (B,), None, True))
    return cases


def test_hostile_frontend(a):
    with pu.Pool(pu.bins_of(a), a.model, name="hostile") as pool:
        b = pool.up(2, broker_args=["--chunk-tokens", 256])
        texts = pu.make_texts(60, seed=21)
        ref, ids = pool.ember.reference(texts)
        normal = Normal(b.frontend, texts, ref)
        time.sleep(0.5)
        c = pu.Client(b.frontend)
        try:
            for name, payload, codes, rid, allow_drop in frontend_cases(ids):
                expect(c, payload, name, codes, rid, allow_drop)
                if not b.alive():
                    check(False, "broker died on: %s" % name)
                    break
            probe(b, "the single-message cases")

            # every truncation of a valid request: an error (or a drop), never a reply, no hang
            full = req(9001, [kv("norm", True), kv("dims", 128), kv("dl", 5000)], inputs=["hello world", "ember"])
            bad = 0
            for cut in range(0, len(full)):
                c.send_raw(full[:cut])
                rep = c.recv_any(pu.scaled(1.0))
                if rep is not None and rep.get("t") != "error":
                    bad += 1
            while c.recv_any(0.2) is not None:
                pass
            check(bad == 0 and b.alive(), "every truncation (%d) of a valid request is refused or "
                  "dropped, never served (%d served)" % (len(full), bad))

            # multipart: extra frames and empty frames are dropped (or refused), never served
            for name, frames in [("two frames", [req(9101), req(9102)]),
                                 ("empty frame first", [b"", req(9103)]),
                                 ("empty frame last", [req(9104), b""]),
                                 ("three frames", [req(9105), b"x", b"y"])]:
                expect(c, frames, "multipart: " + name, None, None, allow_drop=True)

            # invalid UTF-8 is repaired, the answer equals the in-process engine's
            raw = [b"caf\xc3 \xff\xfe ok", b"\xed\xa0\x80x lone surrogate", b"trunc \xe6\x9c",
                   b"\xc0\xaf overlong", b"ok text"]
            ref_raw, _ = pool.ember.reference(raw)
            payload = mmap([kv("v", 1), kv("t", "embed"), kv("id", 9201),
                            (P("in"), bytes([0x90 | len(raw)]) + b"".join(mstr(x) for x in raw))])
            c.send_raw(payload)
            rep = c.wait(9201, pu.scaled(30))
            emb = pu.decode_embeddings(rep)
            if check(emb is not None, "invalid UTF-8 texts are embedded: %s" % describe(rep)):
                compare(emb, ref_raw, "invalid UTF-8 through the pool = in-process repair")
            payload = mmap([kv("v", 1), kv("t", "tokenize"), kv("id", 9202),
                            (P("in"), bytes([0x90 | len(raw)]) + b"".join(mstr(x) for x in raw))])
            c.send_raw(payload)
            rep = c.wait(9202, pu.scaled(30))
            check(rep is not None and rep.get("t") == "tokenize_reply", "tokenize of invalid UTF-8: %s" % describe(rep))

            # depth exactly at the limit is accepted (unknown key skipped), one more refused
            c.send_raw(req(9301, [(P("x"), b"\x91" * 7 + b"\xc0")]))  # map(1) + 7 arrays = depth 8
            rep = c.wait(9301, pu.scaled(30))
            check(rep is not None and rep.get("t") == "embed_reply",
                  "nesting exactly at max_depth 8 in an unknown key is accepted: %s" % describe(rep))
            c.send_raw(req(9302, [(P("zz"), P({"a": [1, {"b": b"bin"}], 5: None, None: 1.5}))]))
            rep = c.wait(9302, pu.scaled(30))
            check(rep is not None and rep.get("t") == "embed_reply",
                  "unknown keys of any type are ignored: %s" % describe(rep))
            c.send_raw(req(2 ** 64 - 1))
            rep = c.wait(2 ** 64 - 1, pu.scaled(30))
            check(rep is not None and rep.get("t") == "embed_reply", "id 2^64-1 is echoed: %s" % describe(rep))

            # oversized requests
            expect(c, req(9401, inputs=["a"] * 65537), "65,537 inputs", (pu.TOO_LARGE,), 9401, wait=10)
            # at the limit: accepted by the decoder (tokenize, since 65,536 embeddings of 384 f32
            # would not fit in one 64 MiB reply: the broker refuses that as TOO_LARGE)
            c.send_raw(req(9402, t="tokenize", inputs=["a"] * 65536))
            rep = c.wait(9402, pu.scaled(60))
            check(rep is not None and rep.get("t") == "tokenize_reply" and len(rep["ids"]) == 65536,
                  "65,536 inputs (at the limit) are accepted: %s" % describe(rep))
            expect(c, req(9406, inputs=["a"] * 65536), "65,536 embeddings of 384 f32 (> 64 MiB reply)",
                   (pu.TOO_LARGE,), 9406, wait=30)
            expect(c, req(9403, inputs=["a" * (1 << 20 | 1)]), "a text of 1 MiB + 1 byte",
                   (pu.TOO_LARGE,), 9403, wait=10)
            expect(c, req(9404, [kv("model", "m" * 5000)]), "a model name of 5000 bytes",
                   (pu.TOO_LARGE, pu.BAD_REQUEST), 9404, wait=5)
            # a frame over ZMQ_MAXMSGSIZE (64 MiB): libzmq drops it and the connection
            big = pu.Client(b.frontend)
            big.send_raw(req(9405, [(P("pad"), b"\xc6" + struct.pack(">I", 65 << 20) + b"\0" * (65 << 20))]))
            rep = big.recv_any(pu.scaled(5))
            check(rep is None or rep.get("t") == "error", "a 65 MiB frame is dropped or refused: %s"
                  % describe(rep))
            big.close()
            probe(b, "the oversized requests")

            # clients that vanish before their reply
            for k in range(20):
                gone = pu.Client(b.frontend)
                gone.send({"v": 1, "t": "embed", "in": texts[:20]})
                gone.close()
            time.sleep(1.0)
            probe(b, "20 clients vanished before their replies")

            # a flood of garbage from many sockets, concurrently with the normal client
            rng = random.Random(99)
            socks = [pu.Client(b.frontend) for _ in range(16)]
            garbage = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))) for _ in range(200)]
            garbage += [req(rng.randrange(1, 1 << 40), v=rng.choice([0, 2, 3])) for _ in range(100)]
            garbage += [req(rng.randrange(1, 1 << 40), [kv("dims", 5000)]) for _ in range(100)]
            t0 = time.monotonic()
            sent = 0
            for rnd in range(10):
                for s in socks:
                    for g in rng.sample(garbage, 40):
                        s.send_raw(g)
                        sent += 1
            flood_s = time.monotonic() - t0
            replies = 0
            for s in socks:
                while s.recv_any(0.3 if replies == 0 else 0.05) is not None:
                    replies += 1
            pu.log("flood: %d messages in %.2fs, %d error replies back" % (sent, flood_s, replies))
            for s in socks:
                s.close()
            check(b.alive(), "broker alive after a flood of %d garbage messages" % sent)
            probe(b, "the flood")

            # many short-lived connections, each asking info once
            okn = 0
            for k in range(200):
                with pu.Client(b.frontend) as s:
                    rep = s.info(timeout=pu.scaled(3))
                    okn += rep is not None and rep.get("t") == "info_reply"
            check(okn == 200, "200 short-lived connections each get info (%d)" % okn)
        finally:
            c.close()
            normal.stop()
        check(normal.bad == 0 and normal.ok > 10,
              "the normal client kept succeeding during the barrage: %d ok, %d failed %s, "
              "slowest %.2fs" % (normal.ok, normal.bad, normal.errors[:3], normal.worst))
        check(normal.worst < pu.scaled(5), "the normal client was never stalled (slowest %.2fs)" % normal.worst)
        check(b.alive(), "broker process alive at the end")
        rc, esc = b.stop(20)
        check(rc == 0 and not esc, "broker exits 0 on SIGTERM after the barrage (rc %s)" % rc)
        import json
        counters = None
        for line in reversed(b.log_text().splitlines()):
            if line.strip().startswith("{"):
                try:
                    counters = json.loads(line.strip())
                    break
                except ValueError:
                    pass
        pu.log("broker exit counters: %s" % counters)
        check(counters and counters.get("bad_client_msgs", 0) > 0,
              "broker counted the bad messages (bad_client_msgs=%s bad_frames=%s)"
              % ((counters or {}).get("bad_client_msgs"), (counters or {}).get("bad_frames")))


class FakeWorker:
    """A worker written here: speaks the backend protocol with a behaviour chosen by the test."""

    def __init__(self, backend, wid, model, mode, cred=2):
        self.ctx = zmq.Context.instance()
        self.s = self.ctx.socket(zmq.DEALER)
        self.s.setsockopt(zmq.LINGER, 0)
        self.s.setsockopt(zmq.ROUTING_ID, wid.encode())
        self.s.connect(backend)
        self.wid, self.model, self.mode, self.cred = wid, model, mode, cred
        self.seq = 0
        self.chunks = 0
        self.got = []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run)

    def send(self, t, **kw):
        self.seq += 1
        m = {"v": 1, "t": t, "id": self.seq}
        m.update(kw)
        self.s.send(P(m))

    def ready(self):
        self.send("ready", wid=self.wid, model=self.model, fam="bert", dev="cpu", mbt=4096,
                  dim=384, msl=256, cred=self.cred)

    def start(self):
        self.ready()
        self.t.start()
        return self

    def run(self):
        last_hb = 0
        while not self.stop_ev.is_set():
            now = time.monotonic()
            if now - last_hb > 0.1 and self.mode != "silent":
                self.send("hb", cred=self.cred)
                last_hb = now
            if self.s.poll(20) == 0:
                continue
            m = msgpack.unpackb(self.s.recv(), raw=False, strict_map_key=False)
            self.got.append(m.get("t"))
            if m.get("t") == "disconnect":
                self.ready()
            if m.get("t") != "chunk":
                continue
            self.chunks += 1
            n = len(m["in"])
            rid, cid, att = m["id"], m["cid"], m["att"]
            k = self.chunks % 5
            if self.mode == "liar":
                if k == 0:    # too many rows
                    self.send("result", id=rid, cid=cid, att=att, n=n + 1, dim=384,
                              emb=b"\0" * (4 * 384 * (n + 1)), tm={})
                elif k == 1:  # wrong width
                    self.send("result", id=rid, cid=cid, att=att, n=n, dim=3, emb=b"\0" * (12 * n), tm={})
                elif k == 2:  # an error
                    self.send("result", id=rid, cid=cid, att=att, err={"code": 8, "msg": "fake failure"})
                elif k == 3:  # emb length not n*dim*4 (fails to decode)
                    self.send("result", id=rid, cid=cid, att=att, n=n, dim=384, emb=b"\0" * 7, tm={})
                else:         # garbage, then a result for another request
                    self.s.send(b"\xc1\xc1")
                    self.send("result", id=rid + 12345, cid=cid, att=att, n=n, dim=384,
                              emb=b"\0" * (4 * 384 * n), tm={})
            elif self.mode == "fail":  # every chunk fails at once
                self.send("result", id=rid, cid=cid, att=att, err={"code": 8, "msg": "fake failure"})
            # mode "blackhole": keeps the chunk, answers nothing (heartbeats go on)

    def stop(self):
        self.stop_ev.set()
        self.t.join(5)
        self.s.close(0)


def test_hostile_backend(a):
    with pu.Pool(pu.bins_of(a), a.model, name="hostile-be") as pool:
        b = pool.up(1, broker_args=["--chunk-tokens", 128, "--chunk-timeout-ms", 3000,
                                    "--max-attempts", 10])
        texts = pu.make_texts(400, seed=22, min_words=2, max_words=6)
        ref, _ = pool.ember.reference(texts)

        # garbage and messages from unknown workers
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.ROUTING_ID, b"intruder-1")
        s.connect(b.backend)
        rng = random.Random(7)
        for _ in range(200):
            s.send(bytes(rng.randrange(256) for _ in range(rng.randint(0, 80))))
        s.send_multipart([P({"v": 1, "t": "hb", "id": 1}), b"extra"])
        s.send(P({"v": 1, "t": "hb", "id": 2}))
        got = []
        end = time.monotonic() + pu.scaled(3)
        while time.monotonic() < end:
            if s.poll(100):
                got.append(msgpack.unpackb(s.recv(), raw=False, strict_map_key=False))
                if any(g.get("t") == "disconnect" for g in got):
                    break
        check(any(g.get("t") == "disconnect" for g in got),
              "a heartbeat from an unknown worker is answered disconnect: %s" % got[:3])
        s.send(P({"v": 1, "t": "result", "id": 424242, "cid": 0, "att": 0, "n": 1, "dim": 384,
                  "emb": b"\0" * 1536}))
        s.close(0)
        probe(b, "garbage on the backend")

        # a worker with another model is refused
        wrong = FakeWorker(b.backend, "wrong-model-1", "not-the-model", "liar").start()
        time.sleep(0.5)
        wrong.stop()
        check("disconnect" in wrong.got, "a worker with the wrong model gets disconnect (%s)" % wrong.got[:5])
        with pu.Client(b.frontend) as c:
            rep = c.info()
            check(rep and rep.get("nwk") == 1, "the wrong-model worker is not counted: %s" % describe(rep))

        # a lying worker next to an honest one: the request still completes correctly
        liar = FakeWorker(b.backend, "liar-1", pool.model_name, "liar", cred=4).start()
        pool.wait_workers(b, 2)
        with pu.Client(b.frontend) as c:
            rep, emb = c.embed(texts, timeout=pu.scaled(60), dl=50000)
        liar.stop()
        check(liar.chunks > 0, "the lying worker was given chunks (%d)" % liar.chunks)
        if check(emb is not None, "request completes despite a lying worker: %s" % describe(rep)):
            compare(emb, ref, "answers despite a lying worker = in-process")
        probe(b, "a lying worker")

        # a black hole: takes chunks, heartbeats, never answers: chunk timeout re-dispatches
        hole = FakeWorker(b.backend, "hole-1", pool.model_name, "blackhole", cred=4).start()
        pool.wait_workers(b, 2)
        t0 = time.monotonic()
        with pu.Client(b.frontend) as c:
            rep, emb = c.embed(texts, timeout=pu.scaled(60), dl=50000)
        dt = time.monotonic() - t0
        hole.stop()
        check(hole.chunks > 0, "the black-hole worker was given chunks (%d)" % hole.chunks)
        if check(emb is not None, "request completes despite a black-hole worker (%.1fs): %s"
                 % (dt, describe(rep))):
            compare(emb, ref, "answers despite a black hole = in-process")
        # a worker that goes silent (no heartbeats) holding chunks: lost after 3 heartbeats
        mute = FakeWorker(b.backend, "mute-1", pool.model_name, "silent", cred=4).start()
        time.sleep(0.05)
        with pu.Client(b.frontend) as c:
            t0 = time.monotonic()
            rep, emb = c.embed(texts[:200], timeout=pu.scaled(60), dl=50000)
            dt = time.monotonic() - t0
        mute.stop()
        if check(emb is not None, "request completes despite a silent worker (%.1fs)" % dt):
            compare(emb, ref[:200], "answers despite a silent worker")
        check(b.alive() and all(w.alive() for w in pool.workers), "broker and worker alive at the end")


def test_failing_worker(a):
    """A worker that fails every chunk at once, next to an honest one, with the broker's default
    --max-attempts (3): since it answers fastest it always has the fewest outstanding tokens; the
    re-dispatches must still reach the honest worker and requests must not fail."""
    with pu.Pool(pu.bins_of(a), a.model, name="failing") as pool:
        b = pool.up(1, broker_args=["--chunk-tokens", 128])
        texts = pu.make_texts(400, seed=23, min_words=2, max_words=6)
        ref, _ = pool.ember.reference(texts)
        bad = FakeWorker(b.backend, "failing-1", pool.model_name, "fail", cred=4).start()
        pool.wait_workers(b, 2)
        ok = 0
        errs = []
        with pu.Client(b.frontend) as c:
            for k in range(3):
                rep, emb = c.embed(texts, timeout=pu.scaled(60), dl=50000)
                if emb is not None and pu.row_cosines(emb, ref).min() >= 0.99999:
                    ok += 1
                else:
                    errs.append(describe(rep))
        bad.stop()
        check(bad.chunks > 0, "the failing worker was given chunks (%d)" % bad.chunks)
        check(ok == 3, "requests succeed next to a worker that fails every chunk, default "
              "--max-attempts 3 (%d of 3 ok; %s)" % (ok, errs[:2]))
        check(b.alive(), "broker alive")


def main():
    a = pu.common_args(argparse.ArgumentParser()).parse_args()
    return pu.run_tests([test_hostile_frontend, test_hostile_backend, test_failing_worker], a)


if __name__ == "__main__":
    sys.exit(main())
