#!/usr/bin/env python3
"""bench/gpu/ab_table.py — the table an engine A/B is read by: for each model and case, every
label's wall-time range over its rounds and median of the round medians, and that median against
the first label's (the baseline). Where the lines carry the energy (bench_engine_cuda on a
machine with NVML), the same for the millijoules a run and the median SM clock: at the power cap
throughput follows energy, so those tables say why a wall time moved.

Reads bench/gpu/engine_ab.sh's raw output (OUT: "== MODEL LABEL round R" headers, then
bench_engine_cuda's "profile ... CASE: ... wall median X ms" lines); several files pool their
rounds (one A/B split over device calls). Labels keep their first-seen order.

Usage: bench/gpu/ab_table.py AB.txt [AB.txt ...]   (prints a markdown table)
"""
import re
import statistics
import sys

HEADER = re.compile(r"^== (\S+) (\S+) round (\d+)$")
LINE = re.compile(r"^profile \S+ \S+ (\S+): .* wall median ([0-9.]+) ms")
METRICS = (("wall ms", LINE),
           ("mJ a run", re.compile(r"^profile \S+ \S+ (\S+): .*; energy ([0-9.]+) mJ a run")),
           ("SM clock MHz", re.compile(r"^profile \S+ \S+ (\S+): .*SM clock median ([0-9.]+) MHz")))


def read(paths):
    """{metric: {(model, case): {label: [value per round]}}} and the labels in order"""
    found, labels = {}, []
    for path in paths:
        model = label = None
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.rstrip("\n")
                head = HEADER.match(line)
                if head:
                    model, label = head.group(1), head.group(2)
                    if label not in labels:
                        labels.append(label)
                    continue
                for metric, pattern in METRICS:
                    row = pattern.match(line)
                    if row and model is not None:
                        case, value = row.group(1), float(row.group(2))
                        by_case = found.setdefault(metric, {})
                        by_case.setdefault((model, case), {}).setdefault(label, []).append(value)
    return found, labels


def table(walls, labels, metric="wall ms"):
    out = [f"| model | case ({metric}) | " + " | ".join(labels) + " |",
           "|---|---|" + "---|" * len(labels)]
    for (model, case), by_label in walls.items():
        base = by_label.get(labels[0])
        base_med = statistics.median(base) if base else None
        cells = []
        for label in labels:
            w = by_label.get(label)
            if not w:
                cells.append("-")
                continue
            med = statistics.median(w)
            cell = f"{min(w):.4g}-{max(w):.4g} ({med:.4g})" if len(w) > 1 else f"{med:.4g}"
            if base_med and label != labels[0]:
                cell += f" {100.0 * (med / base_med - 1.0):+.1f}%"
            cells.append(cell)
        out.append(f"| {model} | {case} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    found, labels = read(argv[1:])
    if not found:
        sys.stderr.write("ab_table: no A/B rows in " + " ".join(argv[1:]) + "\n")
        return 1
    print("\n\n".join(table(found[m], labels, m) for m, _ in METRICS if m in found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
