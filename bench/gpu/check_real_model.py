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
import os
import struct
import subprocess
import sys

import numpy as np

from dump_io import COS_MIN, cosines, finish, read_out, verdict, write_in

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
    report, ok_all = {}, True
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
                v = verdict(cosines(got, ref))
                ok_all &= v["pass"]
                report[f"{dev}, {label}, batches of {bs}"] = v
    print(f"\n== real all-MiniLM-L6-v2 against sentence-transformers fp32 (cosine >= {COS_MIN}) ==")
    print(f"{'comparison':<52} {'n':>5} {'worst cosine':>13} {'mean':>10} {'below':>6}  result")
    for what, v in report.items():
        print(f"{what:<52} {v['n']:>5} {v['worst_cosine']:>13.7f} {v['mean_cosine']:>10.7f} "
              f"{v['below']:>6}  {'PASS' if v['pass'] else 'FAIL'}")
    return finish(report, ok_all, os.path.join(a.out, "check_real_model.json"))


if __name__ == "__main__":
    sys.exit(main())
