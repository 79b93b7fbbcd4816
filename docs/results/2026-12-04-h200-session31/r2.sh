#!/bin/bash
# Session 31, run 2: the attention's host-built tile table (session 28's warpskip + session 29's
# tile table, tiles_on_main.patch of session 30) used only from buckets of 8192 tokens (branch
# tiles-gated: next.sh measured the table -1.2% on BERT-base's ragged pass, +1-2.4% at 1024 /
# 4096 tokens), against main (binS2 = main 32db32c's engine code).
#   kernels_cuda attention on TG; engine A/B S2 / TG, both models, 1024 / 4096 / 8192 / ragged,
#   3 rounds; gpu-check steps 3-4 (engine_cuda against the CPU engine, check_engine.py against
#   transformers) on TG.
# Pack: tar cf - -C .gpucarry lib binS2 binTG | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r2.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r2.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/r2.sh
. bench/gpu/variant_steps.sh
variant_setup r2
kernel_tests TG 150 attention || { variant_finish r2; exit 1; }
AB_ITERS=200 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m 1024,4096,8192,ragged 3 S2="$C/binS2" \
    TG="$C/binTG" > "$R/ab_summary.txt" 2>&1
ab_summary "$R/ab_summary.txt"
MODELS=/tmp/m OUT=$R/gc ops/gpu-check.sh --prebuilt "$C/binTG" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check rc $?"
grep -iE "worst|cosine|passed|PASS|FAIL" "$R/gc.log" | tail -12
variant_finish r2
