#!/bin/bash
# Session 30, last run: F = main + the rows-a-thread LayerNorm for hidden 768 / 1024 with a
# 16-bit residual (branch ln-rows as merged: MiniLM's LayerNorm is H's, BERT-base's L's in
# s30d). add_layernorm kernel tests of F; whole-engine correctness of F against the CPU engine
# and transformers (gpu-check step 4, both models); the benches of record (step 5).
# Pack: tar cf - -C .gpucarry lib binF | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s30e.tar.xz
# Device: carry [".gpupack/s30e.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s30e.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session30/s30e.sh
. bench/gpu/variant_steps.sh
variant_setup s30e
kernel_tests F 90 add_layernorm
grep -E "^add_layernorm" "$R/kernels_F.log"
MODELS=/tmp/m OUT=$R/gc ops/gpu-check.sh --prebuilt "$C/binF" --engine-only --reps 500 --steps 4,5 > "$R/gc.log" 2>&1
echo "== gpu-check rc $?"
sed -n '/#### 6. summary/,$p' "$R/gc.log"
variant_finish s30e
