#!/usr/bin/env python3
"""bench/gpu/ncu_summary.py - per-kernel GPU time of the engine's last forward passes, from the CSV
that `ncu --csv --metrics gpu__time_duration.sum[,dram__bytes_read.sum,dram__bytes_write.sum,
lts__t_bytes.sum]` prints for `bench_engine_cuda profile ...`.

Usage: ncu_summary.py NCU.csv FORWARDS [OUT.json]
  FORWARDS: how many forward passes (chunks) the last run made; each ends with the pooling
  kernel, so the last FORWARDS pool kernels delimit the run. Prints the kernels of the first
  layer in launch order, then the time per kind (gemm / attention / layernorm / gelu / pool /
  embed / other) summed over the run, with the DRAM and L2 traffic per second of kernel time
  when the CSV has those metrics, and writes both as JSON.
"""
import csv
import io
import json
import signal
import sys

UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
TRAFFIC = {"dram": ("dram__bytes_read.sum", "dram__bytes_write.sum"), "l2": ("lts__t_bytes.sum",)}


def kind(name):
    n = name.lower()
    if "pool" in n:
        return "pool"
    if "attention" in n:
        return "attention"
    if "embed" in n:
        return "embed"
    if "layernorm" in n or "add_ln" in n:
        return "layernorm"
    if "gelu" in n:
        return "gelu"
    if "gemm" in n or "xmma" in n or "cutlass" in n or "sm90" in n or "splitk" in n.replace("_", ""):
        return "gemm"
    return "other"


def main():
    path, forwards = sys.argv[1], int(sys.argv[2])
    lines = [l for l in open(path, errors="replace") if l.startswith('"')]  # CSV rows only
    rows = list(csv.DictReader(io.StringIO("".join(lines))))
    ks, traffic = [], {}  # traffic: kernel ID -> {"dram": bytes, "l2": bytes}
    for r in rows:
        name, value = r.get("Metric Name"), float(r["Metric Value"].replace(",", "") or 0)
        for where, metrics in TRAFFIC.items():
            if name in metrics:
                t = traffic.setdefault(r["ID"], {})
                t[where] = t.get(where, 0.0) + value * BYTES.get(r["Metric Unit"], 1.0)
        if name != "gpu__time_duration.sum":
            continue
        us = value * UNITS.get(r["Metric Unit"], 1.0)
        ks.append((r["Kernel Name"], us, r.get("Grid Size", ""), r.get("Block Size", ""), r["ID"]))
    pools = [i for i, k in enumerate(ks) if kind(k[0]) == "pool"]
    if len(pools) < forwards + 1:
        sys.exit(f"{path}: {len(pools)} pool kernels, need {forwards + 1}")
    run = ks[pools[-forwards - 1] + 1 : pools[-1] + 1]
    first_fw = ks[pools[-forwards - 1] + 1 : pools[-forwards] + 1]
    per, moved = {}, {}
    for name, us, _, _, kid in run:
        per[kind(name)] = per.get(kind(name), 0.0) + us
        for where, b in traffic.get(kid, {}).items():
            m = moved.setdefault(kind(name), {})
            m[where] = m.get(where, 0.0) + b
    total = sum(per.values())
    # the JSON first: the tables below may go to a pipe that closes early (`| head`)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            json.dump({"forwards": forwards,
                       "kernels": [{"name": n, "us": u, "grid": g, "block": b,
                                    "bytes": traffic.get(kid, {})} for n, u, g, b, kid in run],
                       "by_kind_us": per, "by_kind_bytes": moved, "total_us": total}, f, indent=1)
    print(f"{len(run)} kernels in the last run ({forwards} forward passes); the first pass's "
          f"embedding + first layer:")
    # the first layer: from the embedding kernel to the second layernorm after it
    n_ln = 0
    for name, us, grid, block, _ in first_fw:
        short = name.split("(")[0][:70]
        print(f"  {us:9.2f} us  {kind(name):<10} {short}  grid {grid} block {block}")
        if kind(name) == "layernorm":
            n_ln += 1
            if n_ln == 2:
                break
    has = {w: any(w in m for m in moved.values()) for w in TRAFFIC}
    head = "".join(f" {w.upper() + ' TB/s':>10}" for w in TRAFFIC if has[w])
    print(f"{'kind':<12} {'us':>10} {'share':>7}{head}")
    for k, v in sorted(per.items(), key=lambda x: -x[1]):
        rates = "".join(f" {moved.get(k, {}).get(w, 0.0) / (v * 1e-6) / 1e12:10.2f}"
                        for w in TRAFFIC if has[w])
        print(f"{k:<12} {v:10.1f} {100 * v / total:6.1f}%{rates}")
    print(f"{'total':<12} {total:10.1f}   ({len(run)} kernels, {total / len(run):.2f} us each)")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the tables quietly
    main()
