"""bench/gpu/dump_io.py — the files of `bench_engine_cuda dump` (bench/bench_engine_cuda.c), the
per-embedding cosine and the verdict on a set of them, shared by check_engine.py and
check_real_model.py (numpy only).

IN.bin:  int32 n_batches; per batch int32 n_seqs, n_tokens, cu[n_seqs + 1], ids[n_tokens]
OUT.bin: int32 n_rows, dim; then n_rows x dim fp32"""
import json
import struct

import numpy as np


def write_in(path, batches):
    """batches: lists of int32 id arrays, one per sequence"""
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
    """row-wise cosine in float64"""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))


COS_MIN = 0.9999  # the bar: per embedding, bf16 engine against an fp32 reference


def verdict(cs):
    """one comparison's cosines -> n, worst and mean cosine, how many below COS_MIN, pass"""
    n = len(cs)
    worst = float(np.min(cs)) if n else float("nan")
    return {"n": int(n), "worst_cosine": worst,
            "mean_cosine": float(np.mean(cs)) if n else float("nan"),
            "below": int((cs < COS_MIN).sum()),
            "pass": bool(n > 0 and worst >= COS_MIN and not np.isnan(cs).any())}


def finish(report, ok_all, path):
    """writes report (+ "pass") as JSON to path; the exit status: 0 only if every check passed"""
    report["pass"] = bool(ok_all)
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    return 0 if ok_all else 1
