"""Summarises `ncu --print-summary per-kernel --metrics gpu__time_duration.sum` output: per kernel
and grid, the total time (us), invocations and mean time (us), largest total first.
Usage: python3 ncu_summary.py FILE..."""
import re
import sys

HEADER = re.compile(r"  (\S.*) \((\d+), (\d+), (\d+)\)x\((\d+), 1, 1\), Device \d+, CC [\d.]+, "
                    r"Invocations (\d+)")
METRIC = re.compile(r"\s+gpu__time_duration\.sum\s+(\S+)\s+\S+\s+\S+\s+(\S+)")
ARGS = re.compile(r"\((unsigned short|const __grid_constant__|T1 \*|uint4|CUtensorMap|float \*).*")

for path in sys.argv[1:]:
    rows, kernel = [], None
    for line in open(path):
        m = HEADER.match(line)
        if m:
            name = ARGS.sub("", m.group(1)).replace("void <unnamed>::", "").replace("<unnamed>::", "")
            kernel = (name[:100], "%sx%sx%s/%s" % m.group(2, 3, 4, 5), int(m.group(6)))
            continue
        m = METRIC.match(line)
        if m and kernel:
            mean = float(m.group(2)) * (1000.0 if m.group(1) == "ms" else 1.0)
            rows.append((kernel[2] * mean, kernel[2], mean, kernel[1], kernel[0]))
            kernel = None
    print("== %s: total %.0f us" % (path, sum(r[0] for r in rows)))
    for r in sorted(rows, reverse=True)[:30]:
        print("%9.1f %4d %8.2f %-18s %s" % r)
