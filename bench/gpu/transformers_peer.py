#!/usr/bin/env python3
"""bench/gpu/transformers_peer.py — the peer for bench_engine_cuda: Hugging Face transformers
BertModel in bf16 on the same GPU and the same workloads, end to end (token ids in host memory to
mean-pooled embeddings in host memory), eager and with a static CUDA graph (torch.cuda.CUDAGraph
over fixed-shape padded inputs; ids copied into the static buffer each run).

Workloads (same seeds and shapes as bench_engine_cuda.c): batch 1 x 128 tokens; 100 texts of
32..512 tokens (padded to 512 with an attention mask; tokens/s counts the real tokens);
latency vs token count 128..8192 (sequences of <= 512). Medians and p99 of REPS. The ragged
batch's energy with the graph, run back to back for >= 1.5 s (bench/gpu/nvml_energy.py, the
reading bench_engine_cuda's JSON has for ours; null without NVML).
Usage: transformers_peer.py MODEL_DIR NAME OUT.json [REPS]"""
import json
import sys
import time

import numpy as np
import torch
from transformers import BertModel

from nvml_energy import EnergyMeter


def pooled(model, ids, mask):
    h = model(input_ids=ids, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1)


def timeit(fn, reps):
    """median and p99 ms of reps calls after 3"""
    for _ in range(3):
        fn()
    v = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        v.append((time.perf_counter() - t0) * 1e3)
    v.sort()
    return v[len(v) // 2], v[int((len(v) - 1) * 0.99)]


def case(model, lens, reps, graph):
    """median and p99 ms of the batch lens, eager or with a CUDA graph, and the run itself"""
    n, L = len(lens), max(lens)
    rng = np.random.default_rng(1)
    host_ids = torch.zeros(n, L, dtype=torch.long).pin_memory()
    host_mask = torch.zeros(n, L, dtype=torch.long).pin_memory()
    for i, l in enumerate(lens):
        host_ids[i, :l] = torch.from_numpy(rng.integers(1000, 30522, l))
        host_mask[i, :l] = 1
    ids = torch.zeros(n, L, dtype=torch.long, device="cuda")
    mask = torch.zeros(n, L, dtype=torch.long, device="cuda")
    with torch.no_grad():
        if not graph:
            def run():
                ids.copy_(host_ids, non_blocking=True)
                mask.copy_(host_mask, non_blocking=True)
                return pooled(model, ids, mask).float().cpu()
            return (*timeit(run, reps), run)
        ids.copy_(host_ids)
        mask.copy_(host_mask)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                pooled(model, ids, mask)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = pooled(model, ids, mask)

        def run_g():
            ids.copy_(host_ids, non_blocking=True)
            mask.copy_(host_mask, non_blocking=True)
            g.replay()
            return out.float().cpu()
        return (*timeit(run_g, reps), run_g)


def main():
    mdir, name, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    model = BertModel.from_pretrained(mdir, torch_dtype=torch.bfloat16).cuda().eval()
    rng = np.random.default_rng(42)
    rag = [int(x) for x in rng.integers(32, 513, 100)]
    res = {"system": "transformers", "model": name, "torch": torch.__version__,
           "attn_implementation": getattr(model.config, "_attn_implementation", "?")}
    props = torch.cuda.get_device_properties(0)
    pci = getattr(props, "pci_bus_id", None)
    meter = EnergyMeter(f"{props.pci_domain_id:08x}:{pci:02x}:{props.pci_device_id:02x}.0"
                        if pci is not None else None)
    print(f"\n== transformers bf16 peer: {name} ==")
    print(f"{'case':<40} {'eager ms':>10} {'graph ms':>10} {'eager tok/s':>12} {'graph tok/s':>12}")
    for key, lens in [("batch1_128", [128]), ("ragged100", rag)] + \
            [(f"tokens_{t}", [t] if t <= 512 else [512] * (t // 512))
             for t in [128, 256, 512, 1024, 2048, 4096, 8192]]:
        r = reps if sum(lens) <= 1024 else max(10, reps // 5)
        e = case(model, lens, r, False)
        g = case(model, lens, r, True)
        tok = sum(lens)
        res[key] = {"tokens": tok, "eager": {"median_ms": e[0], "p99_ms": e[1]},
                    "graph": {"median_ms": g[0], "p99_ms": g[1]}}
        print(f"{key:<40} {e[0]:>10.3f} {g[0]:>10.3f} {tok / e[0] * 1e3:>12.0f} {tok / g[0] * 1e3:>12.0f}")
        if key == "ragged100":
            en = meter.measure(g[2])
            if en:
                en["mj_per_1000_tokens"] = en["mj_per_run"] / tok * 1e3
                print(f"energy, ragged100 with the graph: {en['mj_per_1000_tokens']:.1f} mJ per "
                      f"1000 tokens ({en['watts']:.0f} W, SM clock median {en['sm_mhz_median']:.0f} MHz)")
            res["energy"] = {"ragged100_graph": en}
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
