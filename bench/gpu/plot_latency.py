#!/usr/bin/env python3
"""bench/gpu/plot_latency.py — plots latency against token count from the GPU check's JSON
(bench_engine_<model>.json from bench_engine_cuda, peer_<model>.json from transformers_peer.py):
ember vs transformers eager and with a static CUDA graph, one panel per model shape.
Usage: plot_latency.py RESULTS_DIR OUT.png   (needs matplotlib)"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    res, out = sys.argv[1], sys.argv[2]
    models = [m for m in ("minilm", "bert-base")
              if os.path.exists(os.path.join(res, "bench_engine_%s.json" % m))]
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.2), squeeze=False)
    for ax, m in zip(axes[0], models):
        em = json.load(open(os.path.join(res, "bench_engine_%s.json" % m)))["latency_vs_tokens"]
        peer = json.load(open(os.path.join(res, "peer_%s.json" % m)))
        toks = [r["tokens"] for r in em]
        ax.plot(toks, [r["median_ms"] for r in em], "o-", label="ember (CUDA graphs)")
        for mode, style in (("eager", "s--"), ("graph", "^--")):
            ys = [peer["tokens_%d" % t][mode]["median_ms"] for t in toks]
            ax.plot(toks, ys, style, label="transformers %s" % mode)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("tokens in the batch (sequences of <= 512)")
        ax.set_ylabel("median latency, ms (host ids to host embeddings)")
        ax.set_title("%s shape, one H200 (ember: its default 16-bit type; transformers: bf16)" % m,
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main()
