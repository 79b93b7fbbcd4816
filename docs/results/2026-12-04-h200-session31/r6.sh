#!/bin/bash
# Session 31, run 6: where main's MiniLM pass spends its time now (the tile table from 8192
# tokens): bench/gpu/profile_engine.sh (Nsight Compute, one eager pass, kernels serialised) on
# binTG (main 696c9b6's bench_engine_cuda), MiniLM only (the models folder holds minilm/ alone).
# Pack: tar cf - -C .gpucarry lib binTG/bench_engine_cuda | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r6.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r6.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/r6.sh
. bench/gpu/variant_steps.sh
variant_setup r6
mkdir -p /tmp/m1 && ln -sfn /tmp/m/minilm /tmp/m1/minilm
bash bench/gpu/profile_engine.sh "$C/binTG/bench_engine_cuda" /tmp/m1 "$R/profile" > "$R/profile.log" 2>&1
echo "== profile rc $?"
grep -A24 "minilm ragged: kernels" "$R/profile/profile.txt"
rm -f "$R"/profile/*.csv
variant_finish r6
