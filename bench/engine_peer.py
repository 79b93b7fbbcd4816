#!/usr/bin/env python3
"""bench/engine_peer.py — the peer for bench/bench_engine_cpu.c: sentence-transformers on PyTorch
CPU (fp32, torch threads = --threads, default 2), the same texts file (one per line), end to end
(model.encode tokenizes too). For each batch size, --reps timed runs after one warm-up; reports
the median texts/s and tokens/s (tokens as ST counts them: truncated to max_seq_length, special
tokens included, padding excluded) and the best batch size. Prints a table; --json PATH writes it.

Usage: python3 bench/engine_peer.py --texts FILE [--model DIR] [--batch-sizes 32,64,128]
                                    [--threads 2] [--reps 3] [--json PATH]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", required=True)
    ap.add_argument("--model", default=os.path.join(root, "models", "all-MiniLM-L6-v2"))
    ap.add_argument("--batch-sizes", default="32,64,128")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with open(a.texts, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f if line.strip()]
    model = SentenceTransformer(a.model, device="cpu")
    model.eval()
    n_tokens = sum(min(len(ids), model.max_seq_length)
                   for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"])
    rows = []
    for bs in [int(x) for x in a.batch_sizes.split(",")]:
        with torch.inference_mode():
            model.encode(texts[: bs * 2], batch_size=bs)  # warm-up
            times = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                model.encode(texts, batch_size=bs)
                times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        rows.append({"batch_size": bs, "seconds_median": med, "seconds_all": times,
                     "texts_per_s": len(texts) / med, "tokens_per_s": n_tokens / med})
        print(f"ST bs={bs:4d}: {len(texts) / med:8.1f} texts/s {n_tokens / med:9.0f} tokens/s "
              f"({med * 1e3:.0f} ms, median of {a.reps})", file=sys.stderr)
    best = max(rows, key=lambda r: r["texts_per_s"])
    out = {"peer": "sentence-transformers", "torch": torch.__version__,
           "sentence_transformers": __import__("sentence_transformers").__version__,
           "threads": a.threads, "n_texts": len(texts), "n_tokens": n_tokens, "runs": rows,
           "best": best}
    print(f"ST best: batch_size {best['batch_size']}, {best['texts_per_s']:.1f} texts/s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
