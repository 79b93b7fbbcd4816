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
import subprocess
import sys

import numpy as np

from dump_io import COS_MIN, cosines, finish, read_out, verdict, write_in

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "reference"))
from embedding_fixture import read_fixture  # noqa: E402  (the fixture's one reader)


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
        assert any(r["kind"] == kind for r in recs), "fixture without kind %d records" % kind
    report, ok_all = {}, True
    for kind, label in ((0, "full (normalised)"), (2, "raw mean pooled")):
        sel = [r for r in recs if r["kind"] == kind]
        ids = [np.array(r["ids"], dtype=np.int32) for r in sel]
        ref = np.array([r["embedding"] for r in sel], dtype=np.float32)
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
