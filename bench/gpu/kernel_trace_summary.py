#!/usr/bin/env python3
"""bench/gpu/kernel_trace_summary.py - what each kernel of a CUDA graph adds to the pass, from the
CSV that bench/gpu/kernel_trace.c writes (CUPTI: every kernel's GPU start and end, and with
EMBER_TRACE_API=1 every runtime call's host start and end, in one time base).

Usage: kernel_trace_summary.py TRACE.csv [LAST] [OUT.json] [--all]
  Takes the last LAST graph launches (default 200) whose kernels match the last launch's (same
  names in the same order: one bucket's graph, whichever slot and lane). Per kernel position,
  medians over those launches of: its duration (start to end; with programmatic dependent launch a
  kernel starts before its predecessor ends and waits), its start less the previous kernel's end
  (negative: started early), and its end less the previous kernel's end, which is what it adds to
  the pass. Then the pass's span (first start to last end) and, with the runtime calls traced, the
  cudaGraphLaunch call's duration and how long after the call's start the first kernel starts.
  --all (no JSON): the last LAST launches of every graph (a ragged batch's chunks run graphs of several
  buckets), what each kernel adds summed by kernel name over them, the GPU's idle time between
  launches (no kernel running), and the window's wall time; for one lane (lanes=1), where the
  adds of consecutive launches tile the window.
"""
import collections
import csv
import json
import shutil
import statistics
import subprocess
import sys


def demangle(names):
    """c++filt's names where it is installed, else the mangled ones."""
    if not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    lines = out.stdout.splitlines()
    return dict(zip(names, lines)) if len(lines) == len(names) else {n: n for n in names}


def short(name):
    """the function name and its template arguments, without the parameter list"""
    for prefix in ("void ", "(anonymous namespace)::", "<unnamed>::"):
        name = name.replace(prefix, "")
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0:
            name = name[:i]
            break
    return name[:72]


def by_kernel_name(runs, last):
    """--all: each kernel's adds (its end less the previous kernel's end in its launch) summed by
    name over the last LAST launches of any graph, and the idle time between those launches"""
    runs = runs[-last:]
    names = demangle(sorted({k[2] for r in runs for k in r}))
    total = collections.Counter()
    for r in runs:
        for i, (s, e, n) in enumerate(r):
            total[short(names[n])] += e - (r[i - 1][1] if i else s)
    ends = sorted((r[0][0], max(k[1] for k in r)) for r in runs)
    idle, reach = 0, ends[0][1]
    for s, e in ends[1:]:
        idle += max(0, s - reach)
        reach = max(reach, e)
    wall = reach - ends[0][0]
    busy = sum(total.values())
    print(f"{len(runs)} launches ({len({len(r) for r in runs})} distinct graph lengths); window "
          f"{wall / 1e6:.3f} ms, kernels' adds {busy / 1e6:.3f} ms, idle between launches "
          f"{idle / 1e6:.3f} ms ({100 * idle / wall:.1f}%)")
    print(f"{'ms':>9} {'share':>6}  kernel")
    for name, ns in total.most_common():
        print(f"{ns / 1e6:9.3f} {100 * ns / wall:5.1f}%  {name}")


def main():
    args = [a for a in sys.argv[1:] if a != "--all"]
    if not args:
        sys.exit(__doc__)
    last = int(args[1]) if len(args) > 1 else 200
    kernels = collections.defaultdict(list)  # correlation -> [(start, end, name)]
    launches = {}  # correlation -> (start, end) of its cudaGraphLaunch call
    with open(args[0], newline="") as f:
        for r in csv.DictReader(f):
            c = int(r["correlation"])
            if r["what"] == "kernel" and r["graph"] != "0":
                kernels[c].append((int(r["start_ns"]), int(r["end_ns"]), r["name"]))
            elif r["what"] == "api" and r["name"].startswith("cudaGraphLaunch"):
                launches[c] = (int(r["start_ns"]), int(r["end_ns"]))
    if not kernels:
        sys.exit("no graph kernels in the trace")
    corr = sorted(kernels, key=lambda c: min(kernels[c])[0])  # launches in start order
    runs = [sorted(kernels[c]) for c in corr]
    if "--all" in sys.argv[1:]:
        by_kernel_name(runs, last)
        return
    sig = [k[2] for k in runs[-1]]
    picked = [(c, r) for c, r in zip(corr, runs) if [k[2] for k in r] == sig][-last:]
    names = demangle(sorted(set(sig)))
    rows = []
    for i, name in enumerate(sig):
        dur = [r[i][1] - r[i][0] for _, r in picked]
        early = [r[i][0] - (r[i - 1][1] if i else r[i][0]) for _, r in picked]
        adds = [r[i][1] - (r[i - 1][1] if i else r[i][0]) for _, r in picked]
        rows.append({"kernel": short(names[name]), "duration_us": statistics.median(dur) / 1e3,
                     "start_after_prev_end_us": statistics.median(early) / 1e3,
                     "adds_us": statistics.median(adds) / 1e3})
    span = statistics.median(r[-1][1] - r[0][0] for _, r in picked) / 1e3
    print(f"{len(picked)} launches of a {len(sig)}-kernel graph (medians, us)")
    print(f"{'#':>3} {'adds':>7} {'duration':>9} {'start-prev end':>15}  kernel")
    for i, row in enumerate(rows):
        print(f"{i:3d} {row['adds_us']:7.2f} {row['duration_us']:9.2f} "
              f"{row['start_after_prev_end_us']:15.2f}  {row['kernel']}")
    print(f"span (first start -> last end) {span:.2f} us; sum of the adds "
          f"{sum(r['adds_us'] for r in rows):.2f} us")
    result = {"launches": len(picked), "kernels": rows, "span_us": span}
    calls = [(launches[c], r) for c, r in picked if c in launches]
    if calls:
        result["launch_call_us"] = statistics.median(e - s for (s, e), _ in calls) / 1e3
        result["call_start_to_first_kernel_us"] = statistics.median(
            r[0][0] - s for (s, _), r in calls) / 1e3
        result["call_end_to_first_kernel_us"] = statistics.median(
            r[0][0] - e for (_, e), r in calls) / 1e3
        print(f"cudaGraphLaunch call {result['launch_call_us']:.2f} us; first kernel starts "
              f"{result['call_start_to_first_kernel_us']:.2f} us after the call's start "
              f"({result['call_end_to_first_kernel_us']:.2f} after its end)")
    if len(args) > 2:
        with open(args[2], "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
