"""bench/gpu/gemm_ceiling.py — what a GEMM's joules can be on this board: cuBLAS (through torch)
at a large square shape and at the engine's GEMM shapes (MiniLM, BERT-base; 16384 tokens), bf16
and fp16, each as a CUDA graph of 20 products replayed back to back for 1.5 s at the power cap,
with the energy read as bench/gpu/nvml_energy.py reads it. The ratio of a shape's mJ per GFLOP
to the square one's says how far the models' shapes are from the board's best (docs/benchmarks.md,
forty-second round, H200: square 4096^3 bf16 1.064 mJ per GFLOP, BERT-base's shapes 1.11-1.34,
MiniLM's 1.29-1.62; the engine's own GEMMs within 0-3% of these).

    python3 bench/gpu/gemm_ceiling.py OUT.json      (GPU machine; prints a table)
"""
import json
import sys

import torch

from nvml_energy import EnergyMeter

SHAPES = [  # name, n (rows), in (K), out (N)
    ("square 8192", 8192, 8192, 8192),
    ("square 4096", 4096, 4096, 4096),
    ("minilm qkv", 16384, 384, 1152),
    ("minilm out", 16384, 384, 384),
    ("minilm ffn1", 16384, 384, 1536),
    ("minilm ffn2", 16384, 1536, 384),
    ("bert-base qkv", 16384, 768, 2304),
    ("bert-base out", 16384, 768, 768),
    ("bert-base ffn1", 16384, 768, 3072),
    ("bert-base ffn2", 16384, 3072, 768),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "gemm_ceiling.json"
    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(0)  # NVML's device: the one torch runs on
    pci = getattr(props, "pci_bus_id", None)
    meter = EnergyMeter(f"{props.pci_domain_id:08x}:{pci:02x}:{props.pci_device_id:02x}.0"
                        if pci is not None else None)
    rows = []
    print(f"{'shape':<16} {'dtype':<5} {'TFLOP/s':>8} {'W':>6} {'MHz':>6} {'mJ/GFLOP':>9}")
    for name, n, k, m in SHAPES:
        for dt in (torch.bfloat16, torch.float16):
            g = torch.Generator(device=dev).manual_seed(1)
            x = torch.randn(n, k, device=dev, dtype=dt, generator=g)
            w = torch.randn(m, k, device=dev, dtype=dt, generator=g) / k ** 0.5
            y = torch.empty(n, m, device=dev, dtype=dt)
            for _ in range(3):
                torch.matmul(x, w.t(), out=y)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(20):
                    torch.matmul(x, w.t(), out=y)
            graph.replay()
            torch.cuda.synchronize()

            def run():
                graph.replay()
                torch.cuda.synchronize()

            r = meter.measure(run, min_s=1.5) if meter.ok else None
            gflop = 2.0 * n * k * m * 20 / 1e9
            row = {"shape": name, "n": n, "in": k, "out": m, "dtype": str(dt).split(".")[-1]}
            if r:
                s_per_run = r["seconds"] / r["runs"]
                row.update(tflops=gflop / s_per_run / 1e3, watts=r["watts"],
                           sm_mhz=r["sm_mhz_median"], mj_per_gflop=r["mj_per_run"] / gflop)
                print(f"{name:<16} {row['dtype']:<5} {row['tflops']:8.1f} {row['watts']:6.0f} "
                      f"{row['sm_mhz']:6.0f} {row['mj_per_gflop']:9.3f}")
            else:
                print(f"{name:<16} {row['dtype']:<5} (no NVML energy)")
            rows.append(row)
            del graph, x, w, y
    with open(out, "w") as f:
        json.dump({"gemm_ceiling": rows}, f, indent=1)


if __name__ == "__main__":
    main()
