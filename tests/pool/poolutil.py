"""Shared pieces of the pool tests (tests/pool/test_pool_*.py) and the pool bench.

- Pool: starts redis-server, ember-broker and ember-worker as real processes on free loopback
  ports, each with its log in a temporary directory; stops them (SIGCONT first for stopped ones,
  then SIGTERM, then SIGKILL past a bound) and ALWAYS cleans up: use it as a context manager;
  an atexit hook and SIGTERM/SIGINT handlers also kill whatever is left. On failure the logs'
  tails are printed (Pool.dump_logs).
- Client: an independent implementation of the client side of docs/protocol.md with pyzmq +
  msgpack (not libember), so the tests cross-check the C code rather than reuse it.
- reference_embed: the in-process engine (`ember embed --model`) on the same texts.
- status: `ember status --redis URL` parsed into dicts.
- Checks: check() counts; summary() prints "N passed, N failed" and gives the exit code.

Timing: the tests run on small CI machines (2 cores), sometimes under sanitizers; every wait is
bounded and the bounds are generous, scaled by EMBER_POOL_TIME_SCALE (default 1, or 3 when the
binaries are sanitized).
"""
import atexit
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import msgpack
import numpy as np
import zmq

PASSED = 0
FAILED = 0
FAILURES = []
NOTES = []  # observations that are allowed by the contract but worth reporting
_LOCK = threading.Lock()
TIME_SCALE = float(os.environ.get("EMBER_POOL_TIME_SCALE", "0") or 0)

# error codes (docs/protocol.md)
BAD_REQUEST, TOO_LARGE, UNSUPPORTED_VERSION, OVERLOADED, DEADLINE_EXCEEDED, NO_WORKERS, \
    MODEL_MISMATCH, INTERNAL, INPUT_TOO_LONG, UNSUPPORTED, UNAVAILABLE = range(1, 12)


def log(*a):
    print("[%s]" % time.strftime("%H:%M:%S"), *a, flush=True)


def check(cond, what):
    global PASSED, FAILED
    with _LOCK:
        if cond:
            PASSED += 1
            print("ok:", what, flush=True)
        else:
            FAILED += 1
            FAILURES.append(what)
            print("FAIL:", what, file=sys.stderr, flush=True)
    return bool(cond)


def summary():
    if NOTES:
        print("notes (allowed by the contract, worth knowing):")
        for n in NOTES:
            print("  -", n)
    if FAILURES:
        print("failures:", file=sys.stderr)
        for f in FAILURES:
            print("  -", f, file=sys.stderr)
    print("%d passed, %d failed" % (PASSED, FAILED), flush=True)
    return 0 if FAILED == 0 and PASSED > 0 else 1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_endpoint():
    return "tcp://127.0.0.1:%d" % free_port()


def is_sanitized(binary):
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, timeout=10).stdout
        if b"libasan" in out or b"libubsan" in out:
            return True
        out = subprocess.run(["nm", "-D", binary], capture_output=True, timeout=10).stdout
        return b"__asan_init" in out
    except (OSError, subprocess.SubprocessError):
        return False


def scaled(seconds):
    return seconds * (TIME_SCALE or 1.0)


class ProcessDied(RuntimeError):
    """A pool process exited while the test waited for it (not swallowed by wait_until)."""


def wait_until(pred, timeout, interval=0.05, what=None):
    """Polls pred() until truthy (returns its value) or timeout (scaled) passes (returns the last
    value, falsy)."""
    end = time.monotonic() + scaled(timeout)
    v = None
    while True:
        try:
            v = pred()
        except ProcessDied:
            raise
        except Exception as e:  # a transient failure while polling counts as "not yet"
            v = None
            if what:
                log("wait (%s): %s" % (what, e))
        if v:
            return v
        if time.monotonic() >= end:
            return v
        time.sleep(interval)


def tail(path, n=40):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "(no log: %s)" % e
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-n:])


# ---------------------------------------------------------------------------------------------
# texts


WORDS = ("apple river stone cloud engine garden music paper window silver market yellow "
         "bridge forest ocean planet rocket winter summer coffee letter mirror shadow thunder "
         "valley castle doctor number pencil simple quiet rapid bright gentle ancient modern "
         "north south east west city village train station kitchen table chair lamp").split()


def make_texts(n, seed, min_words=3, max_words=8, prefix=""):
    """n distinct short texts (a few tokens each), deterministic per seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(min_words, max_words)
        out.append("%s%d %s" % (prefix, i, " ".join(rng.choice(WORDS) for _ in range(k))))
    return out


# ---------------------------------------------------------------------------------------------
# the client side of the protocol (pyzmq + msgpack)


class ProtocolError(Exception):
    pass


class Client:
    """A DEALER to one broker frontend. request() sends one message and waits for the reply
    with the same id (replies to other ids, e.g. late ones, are kept for later)."""

    _ids = 1000
    _ids_lock = threading.Lock()

    def __init__(self, endpoint, ctx=None):
        self.ctx = ctx or zmq.Context.instance()
        self.endpoint = endpoint
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.pending = {}

    @classmethod
    def next_id(cls):
        with cls._ids_lock:
            cls._ids += 1
            return cls._ids

    def close(self):
        self.sock.close(0)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, msg):
        if "id" not in msg:
            msg = dict(msg, id=self.next_id())
        self.sock.send(msgpack.packb(msg, use_bin_type=True))
        return msg["id"]

    def send_raw(self, frames):
        if isinstance(frames, (bytes, bytearray)):
            self.sock.send(frames)
        else:
            self.sock.send_multipart(frames)

    def recv_any(self, timeout):
        """The next reply (decoded map), or None after timeout seconds."""
        if self.sock.poll(int(timeout * 1000)) == 0:
            return None
        frames = self.sock.recv_multipart()
        if len(frames) != 1:
            raise ProtocolError("reply has %d frames" % len(frames))
        rep = msgpack.unpackb(frames[0], raw=False, strict_map_key=False)
        if not isinstance(rep, dict):
            raise ProtocolError("reply is not a map: %r" % (rep,))
        return rep

    def wait(self, rid, timeout):
        if rid in self.pending:
            return self.pending.pop(rid)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            rep = self.recv_any(left)
            if rep is None:
                return None
            if rep.get("id") == rid:
                return rep
            self.pending[rep.get("id")] = rep

    def request(self, msg, timeout=30.0):
        rid = self.send(msg)
        return self.wait(rid, timeout)

    def info(self, timeout=5.0):
        return self.request({"v": 1, "t": "info"}, timeout)

    def embed(self, texts, timeout=60.0, **opts):
        """Returns (reply, embeddings as float32 [n, dim] or None)."""
        msg = {"v": 1, "t": "embed", "in": list(texts)}
        msg.update(opts)
        rep = self.request(msg, timeout)
        return rep, decode_embeddings(rep)


def decode_embeddings(rep):
    if not rep or rep.get("t") != "embed_reply":
        return None
    n, dim, dt = rep["n"], rep["dim"], rep.get("dt", "f32")
    if dt == "f32":
        a = np.frombuffer(rep["emb"], dtype="<f4")
    elif dt == "f16":
        a = np.frombuffer(rep["emb"], dtype="<f2").astype(np.float32)
    else:
        raise ProtocolError("unknown dt %r" % dt)
    if a.size != n * dim:
        raise ProtocolError("emb has %d values, want n*dim = %d" % (a.size, n * dim))
    return a.reshape(n, dim)


def describe(rep):
    """Short text for a reply, for failure messages."""
    if rep is None:
        return "no reply"
    if rep.get("t") == "error":
        return "error code=%s msg=%r" % (rep.get("code"), rep.get("msg"))
    r = {k: v for k, v in rep.items() if k not in ("emb", "ids", "ntok")}
    return repr(r)[:300]


def row_cosines(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-30)


def compare(got, want, what, min_cos=0.99999):
    """check(): got equals want row by row (cosine >= min_cos), same shape, same order."""
    if got is None:
        return check(False, "%s: no embeddings" % what)
    if got.shape != want.shape:
        return check(False, "%s: shape %s, want %s" % (what, got.shape, want.shape))
    cos = row_cosines(got, want)
    worst = float(cos.min()) if cos.size else 1.0
    bad = int((cos < min_cos).sum())
    return check(bad == 0, "%s: %d rows, worst cosine %.7f (%d below %.5f)"
                 % (what, len(cos), worst, bad, min_cos))


# ---------------------------------------------------------------------------------------------
# the `ember` tool


class Ember:
    def __init__(self, binary, model):
        self.bin = binary
        self.model = model
        self._ref_cache = {}

    def run(self, args, stdin=b"", timeout=300, env=None):
        p = subprocess.run([self.bin] + args, input=stdin, capture_output=True,
                           timeout=scaled(timeout), env=env)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")

    def reference(self, texts):
        """The in-process engine's embeddings ([n, 384] float32) and token counts for texts
        (str or bytes; no line breaks), from `ember embed --model DIR` (jsonl)."""
        key = tuple(texts)
        if key in self._ref_cache:
            return self._ref_cache[key]
        data = b"".join((t if isinstance(t, bytes) else t.encode()) + b"\n" for t in texts)
        rc, out, err = self.run(["embed", "--model", self.model, "--format", "f32"], data,
                                timeout=600)
        if rc != 0:
            raise RuntimeError("ember embed --model (in-process) failed: %d %s" % (rc, err))
        emb = np.frombuffer(out, dtype="<f4")
        if emb.size % len(texts) != 0:
            raise RuntimeError("in-process output has %d floats for %d texts" % (emb.size, len(texts)))
        emb = emb.reshape(len(texts), -1)
        rc, out, err = self.run(["tokenize", "--model", self.model], data, timeout=600)
        if rc != 0:
            raise RuntimeError("ember tokenize failed: %d %s" % (rc, err))
        import json
        ids = [json.loads(line) for line in out.decode().splitlines()]
        self._ref_cache[key] = (emb, ids)
        return emb, ids

    def status(self, redis_url, stale_ms=None):
        """Parsed `ember status`: (rc, [dict(kind=, id=, **fields)], stderr)."""
        args = ["status", "--redis", redis_url]
        if stale_ms:
            args += ["--stale-ms", str(stale_ms)]
        rc, out, err = self.run(args, timeout=30)
        recs = []
        for line in out.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) < 2 or parts[0] not in ("broker", "worker"):
                continue
            rec = {"kind": parts[0], "id": parts[1]}
            for p in parts[2:]:
                if "=" in p:
                    k, v = p.split("=", 1)
                    rec[k] = int(v) if v.lstrip("-").isdigit() else v
            recs.append(rec)
        return rc, recs, err


# ---------------------------------------------------------------------------------------------
# processes


_LIVE_POOLS = []


def _kill_everything(*_):
    for pool in list(_LIVE_POOLS):
        pool.kill_all()


def _on_signal(signum, _frame):
    _kill_everything()
    sys.exit(128 + signum)


atexit.register(_kill_everything)
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    try:
        signal.signal(_sig, _on_signal)
    except (ValueError, OSError):
        pass


class Proc:
    def __init__(self, name, args, log_path, env=None):
        self.name = name
        self.args = args
        self.log_path = log_path
        self.logf = open(log_path, "ab")
        self.logf.write(("== %s: %s\n" % (time.strftime("%H:%M:%S"), " ".join(args))).encode())
        self.logf.flush()
        self.popen = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env,
                                      start_new_session=True)
        self.pid = self.popen.pid
        self.stopped = False  # SIGSTOPped by the test

    def alive(self):
        return self.popen.poll() is None

    def returncode(self):
        return self.popen.poll()

    def send_signal(self, sig):
        if self.alive():
            os.kill(self.pid, sig)
            if sig == signal.SIGSTOP:
                self.stopped = True
            elif sig == signal.SIGCONT:
                self.stopped = False

    def wait(self, timeout):
        try:
            return self.popen.wait(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=10.0, sig=signal.SIGTERM):
        """SIGCONT if stopped, then sig; SIGKILL past timeout. Returns (rc, escalated)."""
        self.expect_exit = True
        if not self.alive():
            return self.popen.returncode, False
        if self.stopped:
            self.send_signal(signal.SIGCONT)
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass
        rc = self.wait(timeout)
        if rc is not None:
            return rc, False
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return self.popen.wait(), True

    def kill(self):
        if self.alive():
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait()

    def log_text(self):
        self.logf.flush()
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self):
        try:
            self.logf.close()
        except OSError:
            pass


class Broker(Proc):
    pass


class Pool:
    """Processes of one test, with their logs in one temporary directory.

    bins: dict(broker=, worker=, ember=); model: model directory."""

    def __init__(self, bins, model, name="pool", heartbeat_ms=100, keep_logs=None):
        self.bins = bins
        self.model = os.path.abspath(model)
        self.model_name = os.path.basename(self.model.rstrip("/"))
        self.dir = tempfile.mkdtemp(prefix="ember-%s-" % name)
        self.heartbeat_ms = heartbeat_ms
        self.worker_threads = 1  # 2-core CI, several workers: one compute thread each
        self.procs = []
        self.redis = None
        self.redis_port = None
        self.redis_url = None
        self.brokers = []
        self.workers = []
        self.failed = False
        self.keep_logs = keep_logs if keep_logs is not None else bool(os.environ.get("EMBER_KEEP_LOGS"))
        self.ember = Ember(bins["ember"], model)
        self._n = {}
        global TIME_SCALE
        if not TIME_SCALE:
            TIME_SCALE = 3.0 if any(is_sanitized(b) for b in (bins.get("broker"), bins.get("worker"))
                                    if b) else 1.0
        _LIVE_POOLS.append(self)

    # -- context manager: always clean up
    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        if etype is not None:
            self.failed = True
            log("exception in test: %s: %s" % (etype.__name__, evalue))
        self.close()
        return False

    def _name(self, kind):
        self._n[kind] = self._n.get(kind, 0) + 1
        return "%s%d" % (kind, self._n[kind])

    def env(self):
        env = dict(os.environ)
        # 2-core CI: keep each process to one BLAS thread so several workers do not thrash
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        return env

    def spawn(self, name, args, cls=Proc):
        p = cls(name, [str(a) for a in args], os.path.join(self.dir, name + ".log"), env=self.env())
        self.procs.append(p)
        log("started %s pid %d: %s" % (name, p.pid, " ".join(str(a) for a in args)))
        return p

    # -- redis
    def start_redis(self, port=None):
        self.redis_port = port or self.redis_port or free_port()
        self.redis_url = "redis://127.0.0.1:%d" % self.redis_port
        rdir = os.path.join(self.dir, "redis")
        os.makedirs(rdir, exist_ok=True)
        self.redis = self.spawn("redis", ["redis-server", "--port", self.redis_port,
                                          "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                          "no", "--dir", rdir])
        ok = wait_until(lambda: self.redis_ping(), 10)
        if not ok:
            raise RuntimeError("redis-server did not answer on port %d" % self.redis_port)
        return self.redis_url

    def redis_ping(self):
        p = subprocess.run(["redis-cli", "-p", str(self.redis_port), "ping"], capture_output=True,
                           timeout=5)
        return p.stdout.strip() == b"PONG"

    def redis_cli(self, *args):
        p = subprocess.run(["redis-cli", "-p", str(self.redis_port)] + [str(a) for a in args],
                           capture_output=True, timeout=10)
        return p.stdout.decode("utf-8", "replace")

    def stop_redis(self):
        if self.redis:
            self.redis.stop(10)
            self.redis = None

    # -- broker
    def start_broker(self, frontend=None, backend=None, redis=True, args=(), name=None):
        frontend = frontend or free_endpoint()
        backend = backend or free_endpoint()
        cmd = [self.bins["broker"], "--model", self.model, "--frontend", frontend,
               "--backend", backend, "--heartbeat-ms", self.heartbeat_ms]
        if redis and self.redis_url:
            cmd += ["--redis", self.redis_url]
        cmd += list(args)
        b = self.spawn(name or self._name("broker"), cmd, cls=Broker)
        b.frontend, b.backend, b.extra = frontend, backend, list(args)
        self.brokers.append(b)
        return b

    def restart_broker(self, b, args=None):
        """Starts a new broker process on b's endpoints (b must have exited)."""
        nb = self.start_broker(b.frontend, b.backend, args=b.extra if args is None else args,
                               name=b.name + "r")
        self.brokers.remove(b)
        return nb

    # -- worker
    def start_worker(self, brokers=None, redis=True, args=(), name=None, device="cpu"):
        brokers = self.brokers if brokers is None else brokers
        cmd = [self.bins["worker"], "--model", self.model, "--device", device,
               "--heartbeat-ms", self.heartbeat_ms]
        if "--threads" not in [str(x) for x in args]:
            cmd += ["--threads", self.worker_threads]
        for b in brokers:
            cmd += ["--broker", b.backend if isinstance(b, Broker) else b]
        if redis and self.redis_url:
            cmd += ["--redis", self.redis_url]
        cmd += list(args)
        w = self.spawn(name or self._name("worker"), cmd)
        self.workers.append(w)
        return w

    # -- readiness
    def wait_workers(self, broker, n, timeout=60):
        """Until broker's info_reply says nwk >= n (exactly n when exact). Returns the reply."""
        with Client(broker.frontend) as c:
            last = [None]

            def ready():
                self.assert_alive()
                rep = c.info(timeout=2)
                last[0] = rep
                return rep if rep and rep.get("t") == "info_reply" and rep.get("nwk", 0) >= n else None
            rep = wait_until(ready, timeout)
            if not rep:
                raise RuntimeError("broker %s: %d ready workers not reached in %ss (last info: %s)"
                                   % (broker.name, n, timeout, describe(last[0])))
            return rep

    def wait_status(self, pred, timeout=20, what="registry"):
        """Until pred(records) is truthy for `ember status`. Returns the records or None."""
        last = [None]

        def poll():
            rc, recs, _ = self.ember.status(self.redis_url)
            last[0] = recs
            return recs if rc == 0 and pred(recs) else None
        recs = wait_until(poll, timeout, interval=0.1)
        if not recs:
            log("%s: condition not met; last status: %s" % (what, last[0]))
        return recs

    def assert_alive(self, procs=None):
        for p in procs or self.brokers + self.workers:
            if not p.alive() and not getattr(p, "expect_exit", False):
                raise ProcessDied("%s exited with %s; log tail:\n%s"
                                   % (p.name, p.returncode(), tail(p.log_path, 30)))

    def up(self, n_workers=1, broker_args=(), worker_args=(), redis=True, timeout=60):
        """Redis (optional), one broker, n workers; waits until the broker has them all."""
        if redis:
            self.start_redis()
        b = self.start_broker(args=broker_args)
        for _ in range(n_workers):
            self.start_worker(args=worker_args)
        self.wait_workers(b, n_workers, timeout)
        return b

    # -- teardown
    def dump_logs(self, n=40):
        for p in self.procs:
            print("---- %s (pid %d, %s) log tail: %s" % (
                p.name, p.pid, "alive" if p.alive() else "exit %s" % p.returncode(), p.log_path),
                file=sys.stderr)
            print(tail(p.log_path, n), file=sys.stderr, flush=True)

    def sanitizer_reports(self):
        """Names of processes whose logs hold a sanitizer report or a crash."""
        bad = []
        for p in self.procs:
            text = p.log_text()
            if ("ERROR: AddressSanitizer" in text or "runtime error:" in text
                    or "ERROR: LeakSanitizer" in text):
                bad.append(p.name)
            rc = p.returncode()
            if rc is not None and rc < 0 and rc not in (-signal.SIGKILL, -signal.SIGTERM) \
                    and not getattr(p, "expect_exit", False):
                bad.append("%s (signal %d)" % (p.name, -rc))
        return bad

    def kill_all(self):
        for p in self.procs:
            try:
                if p.alive():
                    if p.stopped:
                        os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGKILL)
                    p.popen.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self in _LIVE_POOLS:
            _LIVE_POOLS.remove(self)

    def close(self):
        """Workers (SIGTERM: drain), then brokers, then Redis; SIGKILL past 10 s each."""
        for group in (self.workers, self.brokers, [self.redis] if self.redis else []):
            for p in group:
                if p.alive():
                    _, esc = p.stop(10)
                    if esc:
                        log("%s needed SIGKILL at teardown" % p.name)
        self.kill_all()
        crashes = self.sanitizer_reports()
        if crashes:
            check(False, "no crash or sanitizer report in the logs (found in: %s)" % ", ".join(crashes))
        if self.failed or FAILED or crashes:
            self.dump_logs()
        for p in self.procs:
            p.close()
        if self.keep_logs or self.failed or FAILED:
            log("logs kept in %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def common_args(ap):
    ap.add_argument("--broker-bin", required=True)
    ap.add_argument("--worker-bin", required=True)
    ap.add_argument("--ember", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--only", default="", help="comma-separated test names to run")
    return ap


def bins_of(a):
    return {"broker": a.broker_bin, "worker": a.worker_bin, "ember": a.ember}


def run_tests(tests, a):
    """Runs the selected test functions (each takes the parsed args and builds its own Pool);
    an exception in one is a failure, the rest still run."""
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        print("FATAL: model not found at %s; run ops/fetch-model.sh" % a.model, file=sys.stderr)
        return 1
    only = [x for x in a.only.split(",") if x]
    for fn in tests:
        name = fn.__name__
        if only and not any(o in name for o in only):
            continue
        log("==== %s" % name)
        t0 = time.monotonic()
        try:
            fn(a)
        except Exception as e:  # noqa: BLE001 — reported as a failure, next test runs
            import traceback
            traceback.print_exc()
            check(False, "%s raised %s: %s" % (name, type(e).__name__, e))
        log("==== %s done in %.1fs" % (name, time.monotonic() - t0))
    return summary()


def unpack_f32(b):
    return struct.unpack("<%df" % (len(b) // 4), b)
