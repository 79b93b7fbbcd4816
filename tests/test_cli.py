#!/usr/bin/env python3
"""Tests the `ember` command-line tool as a real process against the real model.

Checks the output contract (JSON lines, f32, Matryoshka, normalisation), agreement with
independent references (token ids from Hugging Face `tokenizers`; embeddings from the
sentence-transformers fixture, tests/reference/make_embedding_fixture.py), and that bad input
and broken model files give the documented exit code and a message, with nothing on stdout.
Prints "N passed, N failed"; exits non-zero on any failure.
"""
import argparse
import json
import math
import shutil
import os
import struct
import subprocess
import sys
import socket
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
from embedding_fixture import read_fixture  # noqa: E402  (the fixture's one reader)

PASSED = 0
FAILED = 0


def check(cond, what):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print("FAIL:", what, file=sys.stderr)


def run(args, stdin=b"", timeout=300):
    p = subprocess.run([EMBER] + args, input=stdin, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb)


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def test_embed_contract(model):
    texts = ["What is the capital of France?", "", "机器学习 🏔️ café", "a " * 600]
    rc, out, err = run(["embed", "--model", model], "\n".join(texts).encode() + b"\n")
    check(rc == 0, "embed exits 0 (stderr: %s)" % err)
    # the engine warns when OpenBLAS runs older kernels than the CPU has: the CLI re-executes
    # itself to prevent that (kernels/blas_core.h)
    check("OpenBLAS chose" not in err, "embed runs OpenBLAS's best kernels for this CPU: %s" % err)
    rows = [json.loads(line) for line in out.decode().splitlines()]
    check(len(rows) == len(texts), "one JSON line per input line")
    check([r["index"] for r in rows] == list(range(len(texts))), "indices in input order")
    check(all(len(r["embedding"]) == 384 for r in rows), "384 dimensions")
    check(all(abs(norm(r["embedding"]) - 1) < 1e-4 for r in rows), "L2-normalised by default")
    check(rows[1]["tokens"] == 2, "empty line is [CLS] [SEP]")
    check(rows[3]["tokens"] == 256, "long text truncated to max_seq_length 256")
    # tokens agree with `ember tokenize`
    rc2, out2, _ = run(["tokenize", "--model", model], "\n".join(texts).encode() + b"\n")
    ids = [json.loads(line) for line in out2.decode().splitlines()]
    check(rc2 == 0 and [len(x) for x in ids] == [r["tokens"] for r in rows],
          "tokens counts match tokenize")

    # f32 output: same numbers, raw little-endian
    rc, raw, _ = run(["embed", "--model", model, "--format", "f32"],
                     "\n".join(texts).encode() + b"\n")
    check(rc == 0 and len(raw) == len(texts) * 384 * 4, "f32 size is n*dim*4")
    if len(raw) == len(texts) * 384 * 4:
        vals = struct.unpack("<%df" % (len(texts) * 384), raw)
        flat = [x for r in rows for x in r["embedding"]]
        check(max(abs(a - b) for a, b in zip(vals, flat)) < 1e-6, "f32 equals JSON values")

    # Matryoshka: first 128 dims re-normalised
    rc, out, _ = run(["embed", "--model", model, "--dimensions", "128"], texts[0].encode())
    r = json.loads(out)
    full = rows[0]["embedding"][:128]
    n = norm(full)
    check(rc == 0 and len(r["embedding"]) == 128, "--dimensions 128 gives 128 values")
    check(max(abs(a - b / n) for a, b in zip(r["embedding"], full)) < 1e-5,
          "--dimensions re-normalises the truncated prefix")

    # --no-normalize: raw mean-pooled vector, same direction
    rc, out, _ = run(["embed", "--model", model, "--no-normalize"], texts[0].encode())
    r = json.loads(out)
    check(rc == 0 and abs(norm(r["embedding"]) - 1) > 1e-3, "--no-normalize is not unit length")
    check(cosine(r["embedding"], rows[0]["embedding"]) > 0.99999, "same direction")

    # --output FILE written whole
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.jsonl")
        rc, out, _ = run(["embed", "--model", model, "--output", path], b"hello\nworld\n")
        check(rc == 0 and out == b"", "--output leaves stdout empty")
        with open(path) as f:
            check(len(f.read().splitlines()) == 2, "--output file has both lines")
        check(os.listdir(d) == ["out.jsonl"], "no temporary file left behind")


def test_invalid_utf8(model):
    rc, out, err = run(["embed", "--model", model], b"caf\xc3 \xff\xfe ok\n\xed\xa0\x80x\n")
    check(rc == 0, "invalid UTF-8 is repaired, not refused (%s)" % err)
    check(len(out.decode().splitlines()) == 2, "two embeddings for two lines")


def test_tokenize_matches_hf(model):
    try:
        from tokenizers import Tokenizer
    except ImportError:
        check(False, "Hugging Face tokenizers is required (pip install -r ops/requirements-test.txt)")
        return
    tok = Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)
    texts = ["Hello, World!", "Ünïcödé façade — naïve", "東京は日本の首都です", "word " * 400,
             "[CLS] literal special [SEP] tokens [MASK]", "tab\there  spaces", "👩‍👩‍👧 family"]
    rc, out, _ = run(["tokenize", "--model", model], "\n".join(texts).encode() + b"\n")
    got = [json.loads(line) for line in out.decode().splitlines()]
    want = [tok.encode(t).ids for t in texts]
    check(rc == 0 and got == want, "ember tokenize equals HF tokenizers (truncation 256)")


def test_against_sentence_transformers(model, fixture):
    if not os.path.exists(fixture):
        check(False, "fixture %s missing" % fixture)
        return
    full = [r for r in read_fixture(fixture) if r["kind"] == 0][:64]
    texts = [r["text"] for r in full if "\n" not in r["text"] and "\r" not in r["text"]]
    refs = [r["embedding"] for r in full if "\n" not in r["text"] and "\r" not in r["text"]]
    rc, out, err = run(["embed", "--model", model], "\n".join(texts).encode() + b"\n")
    rows = [json.loads(line) for line in out.decode().splitlines()]
    check(rc == 0 and len(rows) == len(texts), "embedded the fixture texts (%s)" % err)
    worst = min((cosine(r["embedding"], ref) for r, ref in zip(rows, refs)), default=0)
    print("cli vs sentence-transformers: %d texts, worst cosine %.7f" % (len(rows), worst))
    check(worst >= 0.99999, "CLI embeddings match sentence-transformers (cosine >= 0.99999)")


def broken_model(model, tmp, name, mutate):
    """A copy of the model directory (weights linked, not copied) with one file changed."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for entry in os.listdir(model):
        src = os.path.join(model, entry)
        os.symlink(os.path.abspath(src), os.path.join(d, entry))
    mutate(d)
    return d


def replace_file(d, name, data):
    os.unlink(os.path.join(d, name))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def test_errors(model):
    with open(os.path.join(model, "model.safetensors"), "rb") as f:
        head = f.read(1 << 20)
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("missing model dir", [os.path.join(tmp, "nope")], 3),
            ("truncated safetensors",
             [broken_model(model, tmp, "trunc", lambda d: replace_file(d, "model.safetensors", head))], 3),
            ("corrupt safetensors header",
             [broken_model(model, tmp, "corrupt", lambda d: replace_file(
                 d, "model.safetensors", struct.pack("<Q", 40) + b'{"a": {"dtype": "F32", "shape"' + b"\0" * 64))], 3),
            ("header length past the end",
             [broken_model(model, tmp, "hugehdr", lambda d: replace_file(
                 d, "model.safetensors", struct.pack("<Q", 1 << 40) + b"{}"))], 3),
            ("malformed config",
             [broken_model(model, tmp, "badcfg", lambda d: replace_file(d, "config.json", b'{"model_type": "bert", '))], 3),
            ("missing tokenizer",
             [broken_model(model, tmp, "notok", lambda d: os.unlink(os.path.join(d, "tokenizer.json")))], 3),
            ("unknown architecture",
             [broken_model(model, tmp, "gpt2", lambda d: replace_file(
                 d, "config.json", json.dumps(dict(config, model_type="gpt2", architectures=["GPT2Model"])).encode()))], 4),
        ]
        for what, model_arg, want in cases:
            rc, out, err = run(["embed", "--model", model_arg[0]], b"hello\n")
            check(rc == want, "%s: exit %d, want %d (%s)" % (what, rc, want, err.strip()))
            check(out == b"", "%s: nothing on stdout" % what)
            check(err.startswith("ember: ") and len(err.strip().splitlines()) == 1,
                  "%s: one clear line on stderr: %r" % (what, err))
        # over-long text with --no-truncate: refused, nothing written, line number named
        rc, out, err = run(["embed", "--model", model, "--no-truncate"],
                           b"short\n" + b"word " * 300 + b"\n")
        check(rc == 5 and out == b"" and "line 2" in err, "over-long text under --no-truncate: %d %s" % (rc, err))
        outfile = os.path.join(tmp, "never.jsonl")
        rc, _, _ = run(["embed", "--model", model, "--no-truncate", "--output", outfile],
                       b"word " * 300 + b"\n")
        check(rc == 5 and not os.path.exists(outfile), "no output file on input error")
        rc, out, err = run(["embed", "--model", model, "--bogus"])
        check(rc == 2 and out == b"", "unknown flag: exit 2")
        rc, out, err = run(["embed", "--model", model, "--dimensions", "999"], b"x\n")
        check(rc == 2 and out == b"", "--dimensions over the width: exit 2")
        rc, out, err = run(["embed", "--model", model, "--input", os.path.join(tmp, "absent.txt")])
        check(rc == 5 and out == b"", "missing input file: exit 5")
        # pool-mode depth options: out of range, or without a pool, are usage errors
        for args, what in ((["--broker", "tcp://127.0.0.1:1", "--in-flight", "0"], "--in-flight 0"),
                           (["--broker", "tcp://127.0.0.1:1", "--in-flight", "65"], "--in-flight 65"),
                           (["--broker", "tcp://127.0.0.1:1", "--request-texts", "257"],
                            "--request-texts 257"),
                           (["--model", model, "--in-flight", "2"], "--in-flight in process")):
            rc, out, err = run(["embed"] + args, b"x\n")
            check(rc == 2 and out == b"" and err.startswith("ember embed: ") and
                  len(err.strip().splitlines()) == 1, "%s: exit 2, one line (%d %r)" % (what, rc, err))
        rc, out, err = run(["frobnicate"])
        check(rc == 2, "unknown command: exit 2")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_status():
    """ember status against a real redis-server holding one worker and one broker record."""
    if not shutil.which("redis-server"):
        check(False, "redis-server is required (ops/install-deps.sh)")
        return
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no", "--dir", d,
                                "--logfile", os.path.join(d, "log")])
        try:
            cli = ["redis-cli", "-p", str(port)]
            for _ in range(100):
                if subprocess.run(cli + ["ping"], capture_output=True).stdout.strip() == b"PONG":
                    break
                time.sleep(0.05)
            now = str(int(time.time() * 1000))
            subprocess.run(cli + ["HSET", "ember:worker:w1", "id", "w1", "host", "h1", "device",
                                  "cpu", "model", "all-MiniLM-L6-v2", "state", "ready",
                                  "last_seen_ms", now, "load_tokens", "12"], check=True,
                           capture_output=True)
            subprocess.run(cli + ["ZADD", "ember:workers", now, "w1"], check=True, capture_output=True)
            subprocess.run(cli + ["HSET", "ember:broker:b1", "id", "b1", "frontend", "tcp://x:1",
                                  "state", "ready", "last_seen_ms", now], check=True, capture_output=True)
            subprocess.run(cli + ["ZADD", "ember:brokers", now, "b1", "1", "gone"], check=True,
                           capture_output=True)
            rc, out, err = run(["status", "--redis", "redis://127.0.0.1:%d" % port])
            lines = out.decode().splitlines()
            check(rc == 0 and len(lines) == 2, "status lists one broker and one worker: %r %s" % (lines, err))
            check(any(l.startswith("worker w1 ") and "device=cpu" in l and "load_tokens=12" in l
                      and l.endswith("healthy=yes") for l in lines), "worker line: %r" % lines)
            check(any(l.startswith("broker b1 ") and "frontend=tcp://x:1" in l for l in lines),
                  "broker line (stale member 'gone' skipped): %r" % lines)
        finally:
            srv.terminate()
            srv.wait()
    rc, out, err = run(["status", "--redis", "redis://127.0.0.1:%d" % port])
    check(rc == 7 and out == b"" and err.startswith("ember: "), "Redis down: exit 7 (%d, %s)" % (rc, err))


def main():
    global EMBER
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--fixture", required=True)
    a = ap.parse_args()
    EMBER = a.ember
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        print("FATAL: model not found at %s; run ops/fetch-model.sh" % a.model, file=sys.stderr)
        return 1
    test_embed_contract(a.model)
    test_invalid_utf8(a.model)
    test_tokenize_matches_hf(a.model)
    test_against_sentence_transformers(a.model, a.fixture)
    test_errors(a.model)
    test_status()
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 0 if FAILED == 0 and PASSED > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
