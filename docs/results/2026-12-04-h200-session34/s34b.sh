#!/bin/bash
# Session 34, run 3: every GEMM candidate's energy at the power cap (binary16, 16384 tokens):
# bench_kernels_cuda gemms with BENCH_SUSTAIN_S (each candidate's graph replayed back to back for
# 0.3 s: us and mJ per run at the cap, beside the burst time the tuner ranks by).
# E34 = main 685ffed + the energy readout (bench/bench_energy.h).
# Pack: tar cf - -C .gpucarry lib binE34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34b.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s34b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session34/s34b.sh
. bench/gpu/variant_steps.sh
variant_setup s34b
B=$C/binE34
for g in ffn1+gelu ffn1+bias qkv ffn2 out; do
    BENCH_SUSTAIN_S=0.3 timeout 200 "$B/bench_kernels_cuda" gemms "$R/g_$g.json" 20 16384 \
        dtype=f16 gemm=$g > "$R/g_$g.txt" 2>&1
    echo "== $g rc $? at $SECONDS s"
done
for g in ffn2+ln out+ln; do
    BENCH_SUSTAIN_S=0.3 timeout 200 "$B/bench_kernels_cuda" gemms "$R/g_$g.json" 20 16384 \
        dtype=f16 residual=16 gemm=$g > "$R/g_$g.txt" 2>&1
    echo "== $g rc $? at $SECONDS s"
done
python3 - "$R"/g_*.txt <<'PY' | tee "$R/energy_rank.txt"
import re, sys
ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\S+)\s+(.*?)\s+([0-9.]+)\s+([0-9.]+)\s+sustained\s+([0-9.]+) us\s+"
                 r"([-0-9.]+) mJ\s+(\d+) MHz")
for path in sys.argv[1:]:
    rows = [m.groups() for m in map(ROW.match, open(path)) if m]
    for model in dict.fromkeys(r[0] for r in rows):
        rs = [r for r in rows if r[0] == model and " mma " not in f" {r[3]} "]
        burst = sorted(rs, key=lambda r: float(r[4]))
        print(f"## {model} {rs[0][2] if rs else path}: by energy at the cap (burst rank in [])")
        for r in sorted(rs, key=lambda r: float(r[7]))[:8]:
            print(f"  {r[3]:<46} burst {float(r[4]):8.2f} us [{burst.index(r) + 1:2d}]  "
                  f"cap {float(r[6]):8.2f} us {float(r[7]):8.3f} mJ {r[8]} MHz")
PY
for f in "$R"/g_*.json; do cp "$f" "$f.txt"; done
variant_finish s34b
