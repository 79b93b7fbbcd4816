#!/bin/bash
# Session 34, run 6: run 3's energy per GEMM candidate again with the slope readout (run 5) and
# 1 s windows (run 3's 0.3 s end-to-end differences were off by up to a counter step), only for
# candidates within 30% of the best burst time so far; binary16 against bf16 on the same data
# (ffn1+bias, qkv); the kernels at 16384 tokens sustained 1 s each.
# Pack: tar cf - -C .gpucarry lib binE34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34e.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s34e.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session34/s34e.sh
. bench/gpu/variant_steps.sh
variant_setup s34e
B=$C/binE34
for spec in f16:ffn1+gelu f16:ffn1+bias f16:qkv f16:ffn2 bf16:ffn1+bias bf16:qkv; do
    dt=${spec%%:*} g=${spec#*:}
    BENCH_SUSTAIN_S=1.0 timeout 200 "$B/bench_kernels_cuda" gemms "$R/g_${dt}_$g.json" 20 16384 \
        dtype=$dt gemm=$g > "$R/g_${dt}_$g.txt" 2>&1
    echo "== $dt $g rc $? at $SECONDS s"
done
python3 - "$R"/g_*.txt <<'PY' | tee "$R/energy_rank.txt"
import re, sys
ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\S+)\s+(.*?)\s+([0-9.]+)\s+([0-9.]+)\s+sustained\s+([0-9.]+) us\s+"
                 r"([-0-9.]+) mJ\s+(\d+) MHz")
for path in sys.argv[1:]:
    rows = [m.groups() for m in map(ROW.match, open(path)) if m]
    for model in dict.fromkeys(r[0] for r in rows):
        rs = [r for r in rows if r[0] == model]
        burst = sorted(rs, key=lambda r: float(r[4]))
        print(f"## {model} {rs[0][2]} ({path.split('/')[-1]}): by energy at the cap (burst rank in [])")
        for r in sorted(rs, key=lambda r: float(r[7])):
            print(f"  {r[3]:<46} burst {float(r[4]):8.2f} us [{burst.index(r) + 1:2d}]  "
                  f"cap {float(r[6]):8.2f} us {float(r[7]):8.3f} mJ {r[8]} MHz")
PY
BENCH_SUSTAIN_S=1.0 timeout 300 "$B/bench_kernels_cuda" "$R/k.json" 50 > "$R/k.txt" 2>&1
echo "== kernels sustained rc $? at $SECONDS s"
grep -E "sustained|T=16384" "$R/k.txt" | grep -vE ": (cublasLt|wgmma|mma)"
for f in "$R"/*.json; do cp "$f" "$f.txt"; done
variant_finish s34e
