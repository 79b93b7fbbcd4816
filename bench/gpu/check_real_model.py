#!/usr/bin/env python3
"""bench/gpu/check_real_model.py — the engine with the real all-MiniLM-L6-v2 weights against
sentence-transformers: the fp32 embeddings that tests/reference/make_embedding_fixture.py stored
in tests/fixtures/minilm_st_reference.bin (ST on the original fp32 weights, its own tokenizer's
ids). The fixture's ids go through `bench_engine_cuda dump MODEL DEVICE` (raw mean pooling) in
ragged batches of 1, 7 and 64 texts and all texts at once; per text the cosine against ST's
"full" embedding (normalised; cosine does not see the scale) and against its raw mean-pooled one
(kind 2), which must reach COS_MIN. MODEL may be the bf16 copy of bench/gpu/pack_bf16_model.py:
the CUDA engine rounds fp32 weights to the same bf16 values, so its output is that of the
original, and the comparison includes the weights' bf16 rounding.
Usage: check_real_model.py --bin BENCH_ENGINE_CUDA --model DIR --fixture BIN --out DIR
       [--devices cuda:0 ...]   (numpy only; exit status 0 only if every check passes)"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np

COS_MIN = 0.9999


def read_fixture(path):
    buf = open(path, "rb").read()
    assert buf[:8] == b"EMBFIX01", "not an EMBFIX01 fixture"
    n = struct.unpack_from("<I", buf, 8)[0]
    o, recs = 24, []
    for _ in range(n):
        kind, dim, n_text, n_ids = struct.unpack_from("<IIII", buf, o)
        o += 16 + n_text
        ids = np.frombuffer(buf, dtype="<i4", count=n_ids, offset=o).copy()
        o += 4 * n_ids
        emb = np.frombuffer(buf, dtype="<f4", count=dim, offset=o).copy()
        o += 4 * dim
        recs.append((kind, ids, emb))
    assert o == len(buf), "trailing bytes in the fixture"
    return recs


def write_in(path, batches):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(batches)))
        for seqs in batches:
            cu = np.concatenate([[0], np.cumsum([len(s) for s in seqs])]).astype(np.int32)
            f.write(struct.pack("<ii", len(seqs), int(cu[-1])))
            f.write(cu.tobytes())
            f.write(np.concatenate(seqs).astype(np.int32).tobytes())


def read_out(path):
    with open(path, "rb") as f:
        n, d = struct.unpack("<ii", f.read(8))
        return np.frombuffer(f.read(), dtype=np.float32).reshape(n, d)


def cosines(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", nargs="+", default=["cuda:0"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    recs = read_fixture(a.fixture)
    for kind in (0, 2):  # the references this check uses
        assert any(r[0] == kind for r in recs), "fixture without kind %d records" % kind
    rows, report, ok_all = [], {}, True
    for kind, label in ((0, "full (normalised)"), (2, "raw mean pooled")):
        sel = [r for r in recs if r[0] == kind]
        ids = [r[1] for r in sel]
        ref = np.stack([r[2] for r in sel])
        for bs in (1, 7, 64, len(ids)):
            batches = [ids[i:i + bs] for i in range(0, len(ids), bs)]
            fin = os.path.join(a.out, "real_in.bin")
            write_in(fin, batches)
            for dev in a.devices:
                fout = os.path.join(a.out, "real_out.bin")
                subprocess.run([a.bin, "dump", a.model, dev, fin, fout], check=True)
                got = read_out(fout)
                cs = cosines(got, ref)
                worst = float(np.min(cs))
                ok = worst >= COS_MIN and not np.isnan(cs).any()
                ok_all &= ok
                what = f"{dev}, {label}, batches of {bs}"
                rows.append((what, len(cs), worst, float(np.mean(cs)), int((cs < COS_MIN).sum()), ok))
                report[what] = {"n": len(cs), "worst_cosine": worst, "mean_cosine": float(np.mean(cs)),
                                "below": int((cs < COS_MIN).sum()), "pass": bool(ok)}
    print(f"\n== real all-MiniLM-L6-v2 against sentence-transformers fp32 (cosine >= {COS_MIN}) ==")
    print(f"{'comparison':<52} {'n':>5} {'worst cosine':>13} {'mean':>10} {'below':>6}  result")
    for r in rows:
        print(f"{r[0]:<52} {r[1]:>5} {r[2]:>13.7f} {r[3]:>10.7f} {r[4]:>6}  {'PASS' if r[5] else 'FAIL'}")
    report["pass"] = bool(ok_all)
    with open(os.path.join(a.out, "check_real_model.json"), "w") as f:
        json.dump(report, f, indent=1)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
