#!/bin/bash
# Session 43, call 2 (call 1 ran session 42's s42c.sh on an H100). On one board: the cuBLAS
# ceiling in joules at the cap (bench/gpu/gemm_ceiling.py: torch at 8192^3, 4096^3 and the
# engine's shapes) beside the engine's own GEMM candidates at 16384 tokens sustained at the cap
# (bench_kernels_cuda gemms with BENCH_SUSTAIN_S, as session 34's r6), so the engine's best
# TFLOP per joule is read against the board's best on the same card, not across boards.
# Pack .gpupack/s42m.tar.xz (lib, binP = main 353675d's binaries; main's GEMMs are unchanged since).
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s42m.tar.xz -C .gpucarry &&
#         bash docs/results/2026-12-05-h200-session43/s43a.sh
. bench/gpu/variant_steps.sh
variant_setup s43a
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > "$R/board.csv"
cat "$R/board.csv"
timeout 100 python3 bench/gpu/gemm_ceiling.py "$R/gemm_ceiling.json" > "$R/gemm_ceiling.txt" 2>&1
echo "== gemm_ceiling rc $? at $SECONDS s"
cat "$R/gemm_ceiling.txt"
cp "$R/gemm_ceiling.json" "$R/gemm_ceiling.keep"
for spec in bert-base:bf16:ffn2 bert-base:f16:ffn2 bert-base:f16:qkv bert-base:f16:ffn1+bias \
    bert-base:f16:out minilm:f16:ffn1+bias minilm:f16:qkv; do
    IFS=: read -r m dt g <<< "$spec"
    BENCH_SUSTAIN_S=1.0 timeout 90 "$C/binP/bench_kernels_cuda" gemms "$R/g.json" 20 16384 \
        model=$m dtype=$dt gemm=$g > "$R/g_${m}_${dt}_$g.txt" 2>&1
    echo "== $m $dt $g rc $? at $SECONDS s"
    grep sustained "$R/g_${m}_${dt}_$g.txt" | cut -c1-160 | head -14
done
idle_board
variant_finish s43a
