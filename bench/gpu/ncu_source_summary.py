#!/usr/bin/env python3
"""bench/gpu/ncu_source_summary.py - where one kernel's warps wait, from Nsight Compute's source
page: `ncu -i REPORT.ncu-rep --page source --csv --print-source sass > SASS.csv` of a report taken
with `--set full --import-source yes` (build with -lineinfo to also map it to CUDA lines).

Usage: ncu_source_summary.py SASS.csv [TOP]
Prints the warp-stall samples by reason, by opcode (with how often each opcode executed), and the
TOP (default 20) instructions with the most samples and their main stall reasons.
"""
import collections
import csv
import re
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rows = list(csv.reader(open(path, errors="replace")))
    # row 0 names the kernel, row 1 holds the column names
    hdr = {h: i for i, h in enumerate(rows[1])}
    reasons = [h for h in rows[1] if h.startswith("stall_") and "Not Issued" not in h]
    by_reason, by_op, executed = collections.Counter(), collections.Counter(), collections.Counter()
    per_insn, total = [], 0

    def num(r, col):
        return int(float(r[hdr[col]].replace(",", "") or 0))

    for r in rows[2:]:
        if len(r) < len(hdr):
            continue
        src = r[hdr["Source"]].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split(" ")[0]  # drop the predicate
        n = num(r, "Warp Stall Sampling (All Samples)")
        total += n
        by_op[op] += n
        executed[op] += num(r, "Instructions Executed")
        stalls = {h[len("stall_"):]: num(r, h) for h in reasons}
        for k, v in stalls.items():
            by_reason[k] += v
        main_stalls = [(k, v) for k, v in stalls.items() if v > 0.15 * n]
        per_insn.append((n, src, main_stalls))
    print(f"{rows[0][1] if len(rows[0]) > 1 else path}: {total} samples")
    print("-- stall reasons")
    for k, v in by_reason.most_common(12):
        print(f"  {k:<20} {v:8d} {100 * v / max(total, 1):5.1f}%")
    print("-- by opcode: samples, share, executed")
    for k, v in by_op.most_common(25):
        print(f"  {k:<28} {v:8d} {100 * v / max(total, 1):5.1f}%  {executed[k]}")
    print(f"-- the {top} instructions with the most samples")
    for n, src, st in sorted(per_insn, key=lambda x: -x[0])[:top]:
        print(f"  {n:7d}  {src[:60]:<60} {st}")


if __name__ == "__main__":
    main()
