#!/usr/bin/env python3
"""bench/gpu/ab_table.py — the table an engine A/B is read by: for each model and case, every
label's wall-time range over its rounds and median of the round medians, and that median against
the first label's (the baseline).

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


def read(paths):
    """{(model, case): {label: [wall ms per round]}} and the labels in order"""
    walls, labels = {}, []
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
                row = LINE.match(line)
                if row and model is not None:
                    case, wall = row.group(1), float(row.group(2))
                    walls.setdefault((model, case), {}).setdefault(label, []).append(wall)
    return walls, labels


def table(walls, labels):
    out = ["| model | case | " + " | ".join(labels) + " |",
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
    walls, labels = read(argv[1:])
    if not walls:
        sys.stderr.write("ab_table: no A/B rows in " + " ".join(argv[1:]) + "\n")
        return 1
    print(table(walls, labels))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
