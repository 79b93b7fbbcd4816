#!/bin/bash
# Session 31, run 3: the benches of record of main 696c9b6 (engine code of 7e5091b: the tile
# table from 8192 tokens and add_layernorm's 2 rows a thread at hidden 384; binTG is that build)
# against transformers in the same run: gpu-check step 5, 500 repetitions.
# Pack: tar cf - -C .gpucarry lib binTG | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r3.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r3.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session31/r3.sh
. bench/gpu/variant_steps.sh
variant_setup r3
MODELS=/tmp/m OUT=$R/rec ops/gpu-check.sh --prebuilt "$C/binTG" --engine-only --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check rc $?"
tail -30 "$R/rec/summary.txt" 2>/dev/null || tail -30 "$R/rec.log"
variant_finish r3
