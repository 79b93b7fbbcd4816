#!/usr/bin/env python3
"""bench/gpu/check_engine.py — correctness of the whole CUDA engine against the CPU engine and
against Hugging Face transformers on the same weights (the models of make_random_models.py).

Seeded ragged batches of 1 to 256 sequences of 1 to 512 tokens go through
`bench_engine_cuda dump MODEL cuda:0` (and, for a subset that keeps the CPU time short,
`... dump MODEL cpu`), raw pooled (normalize 0); transformers computes the same in fp32 on
the GPU (TF32 off, padded batch + attention mask, masked mean). Where make_random_models.py wrote
a model's CLS twin (MODEL-cls: the same weights, CLS pooling, whose last layer the engine may
prune to the pooled rows), the twin is checked too, against the same hidden states' first rows.
Per embedding: cosine >= 0.9999 (bf16 engine vs fp32 references). Prints a PASS/FAIL table with the worst cosines and writes
OUT/check_engine.json. Exit status 0 only if every check passes.
Usage: check_engine.py --bin build/bench/bench_engine_cuda --models MODELS --out OUT
       [--devices cuda:0 cuda:0,residual=bf16 ...]   (each device string checked in turn)"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
from transformers import BertModel

from dump_io import COS_MIN, cosines, finish, read_out, verdict, write_in

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


def hf_reference(model_dir, batches):
    """the last hidden states' masked mean and first row per sequence (fp32)"""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = BertModel.from_pretrained(model_dir, torch_dtype=torch.float32).cuda().eval()
    means, firsts = [], []
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
            means.append(((h * m).sum(1) / m.sum(1)).float().cpu().numpy())
            firsts.append(h[:, 0].float().cpu().numpy())
    del model
    torch.cuda.empty_cache()
    return {"mean": np.concatenate(means), "cls": np.concatenate(firsts)}


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
    for base in ["minilm", "bert-base"]:
        rng = np.random.default_rng(20261130)
        batches = make_batches(rng, 30522)
        n_tok = sum(len(s) for b in batches for s in b)
        fin, fcpu = os.path.join(a.out, f"{base}_in.bin"), os.path.join(a.out, f"{base}_in_cpu.bin")
        write_in(fin, batches)
        write_in(fcpu, batches[:a.cpu_batches])
        refs = hf_reference(os.path.join(a.models, base), batches)
        for name, pooling in [(base, "mean"), (base + "-cls", "cls")]:
            mdir = os.path.join(a.models, name)
            if not os.path.isdir(mdir):
                continue
            ok_all &= check_model(a, name, mdir, fin, fcpu, refs[pooling], n_tok, rows, report)
    print(f"\n== whole-engine correctness (cosine >= {COS_MIN} per embedding) ==")
    print(f"{'model':<14} {'comparison':<44} {'n':>6} {'worst cosine':>13} {'below':>6}  result")
    for name, what, v in rows:
        print(f"{name:<14} {what:<44} {v['n']:>6} {v['worst_cosine']:>13.7f} {v['below']:>6}  "
              f"{'PASS' if v['pass'] else 'FAIL'}")
    return finish(report, ok_all, os.path.join(a.out, "check_engine.json"))


def check_model(a, name, mdir, fin, fcpu, ref, n_tok, rows, report):
    """one model directory's dumps (the CPU engine, each device) against ref; True if all pass"""
    cout = os.path.join(a.out, f"{name}_cpu.bin")
    subprocess.run([a.bin, "dump", mdir, "cpu", fcpu, cout], check=True)
    c = read_out(cout)
    checks, g, ok_all = {}, None, True
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
        v = verdict(cs)
        ok_all &= v["pass"]
        rows.append((name, what, v))
        report[name]["checks"][what] = v
    return ok_all


if __name__ == "__main__":
    sys.exit(main())
