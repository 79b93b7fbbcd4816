#!/usr/bin/env python3
"""bench/gpu/check_engine.py — correctness of the whole CUDA engine against the CPU engine and
against Hugging Face transformers on the same weights (the models of make_random_models.py).

Seeded ragged batches of 1 to 256 sequences of 1 to 512 tokens go through
`bench_engine_cuda dump MODEL cuda:0` (and, for a subset that keeps the CPU time short,
`... dump MODEL cpu`), raw mean-pooled (normalize 0); transformers computes the same in fp32 on
the GPU (TF32 off, padded batch + attention mask, masked mean). Per embedding: cosine >= 0.9999
(bf16 engine vs fp32 references). Prints a PASS/FAIL table with the worst cosines and writes
OUT/check_engine.json. Exit status 0 only if every check passes.
Usage: check_engine.py --bin build/bench/bench_engine_cuda --models MODELS --out OUT
       [--devices cuda:0 cuda:0,residual=bf16 ...]   (each device string checked in turn)"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
from transformers import BertModel

COS_MIN = 0.9999
SIZES = [1, 1, 2, 5, 16, 64, 128, 256]


def make_batches(rng, vocab):
    batches = []
    for n in SIZES:
        short = rng.random(n) < 0.3
        lens = np.where(short, rng.integers(1, 17, n), rng.integers(1, 513, n)).astype(np.int32)
        if n == 1 and len(batches) == 1:
            lens[:] = 1  # a single one-token sequence
        ids = [rng.integers(1000, vocab, int(l)).astype(np.int32) for l in lens]
        batches.append(ids)
    return batches


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


def hf_reference(model_dir, batches):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = BertModel.from_pretrained(model_dir, torch_dtype=torch.float32).cuda().eval()
    outs = []
    with torch.no_grad():
        for seqs in batches:
            L = max(len(s) for s in seqs)
            ids = torch.zeros(len(seqs), L, dtype=torch.long)
            mask = torch.zeros(len(seqs), L, dtype=torch.long)
            for i, s in enumerate(seqs):
                ids[i, :len(s)] = torch.from_numpy(s.astype(np.int64))
                mask[i, :len(s)] = 1
            ids, mask = ids.cuda(), mask.cuda()
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).float()
            outs.append(((h * m).sum(1) / m.sum(1)).float().cpu().numpy())
    del model
    torch.cuda.empty_cache()
    return np.concatenate(outs)


def cosines(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu-batches", type=int, default=6, help="batches also run on the CPU engine")
    ap.add_argument("--devices", nargs="+", default=["cuda:0"],
                    help="CUDA device strings to check (engine options too: cuda:0,residual=bf16)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows, report, ok_all = [], {}, True
    for name in ["minilm", "bert-base"]:
        mdir = os.path.join(a.models, name)
        rng = np.random.default_rng(20261130)
        batches = make_batches(rng, 30522)
        n_tok = sum(len(s) for b in batches for s in b)
        fin, fcpu = os.path.join(a.out, f"{name}_in.bin"), os.path.join(a.out, f"{name}_in_cpu.bin")
        write_in(fin, batches)
        write_in(fcpu, batches[:a.cpu_batches])
        cout = os.path.join(a.out, f"{name}_cpu.bin")
        subprocess.run([a.bin, "dump", mdir, "cpu", fcpu, cout], check=True)
        c = read_out(cout)
        ref = hf_reference(mdir, batches)
        checks, g = {}, None
        for dev in a.devices:
            label = "cuda" if dev == "cuda:0" else dev  # the default keeps the summary's keys
            gout = os.path.join(a.out, f"{name}_cuda.bin")
            subprocess.run([a.bin, "dump", mdir, dev, fin, gout], check=True)
            g = read_out(gout)
            checks[f"{label} vs transformers fp32"] = cosines(g, ref)
            checks[f"{label} vs cpu engine"] = cosines(g[:len(c)], c)
        checks["cpu engine vs transformers fp32"] = cosines(c, ref[:len(c)])
        report[name] = {"tokens": n_tok, "sequences": int(len(g)), "checks": {}}
        for what, cs in checks.items():
            worst = float(np.min(cs)) if len(cs) else float("nan")
            ok = len(cs) > 0 and worst >= COS_MIN and not np.isnan(cs).any()
            ok_all &= ok
            rows.append((name, what, len(cs), worst, int((cs < COS_MIN).sum()), ok))
            report[name]["checks"][what] = {"n": int(len(cs)), "worst_cosine": worst,
                                            "below": int((cs < COS_MIN).sum()), "pass": bool(ok)}
    print(f"\n== whole-engine correctness (cosine >= {COS_MIN} per embedding) ==")
    print(f"{'model':<10} {'comparison':<44} {'n':>6} {'worst cosine':>13} {'below':>6}  result")
    for r in rows:
        print(f"{r[0]:<10} {r[1]:<44} {r[2]:>6} {r[3]:>13.7f} {r[4]:>6}  {'PASS' if r[5] else 'FAIL'}")
    report["pass"] = bool(ok_all)
    with open(os.path.join(a.out, "check_engine.json"), "w") as f:
        json.dump(report, f, indent=1)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
