#!/bin/bash
# Session 35, run 4: the benches of record on F (gpu-check step 5, 500 repetitions: both models,
# ember against transformers eager and with a static CUDA graph, in the same run).
# Pack: the one of s35c.sh. Device: ... && bash docs/results/2026-12-04-h200-session35/s35d.sh
. bench/gpu/variant_steps.sh
variant_setup s35d
ln -sfn ../lib "$C/binF/lib"
MODELS=/tmp/m OUT=$R/rec timeout 560 ops/gpu-check.sh --prebuilt "$C/binF" --engine-only \
    --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check 5 rc $? at $SECONDS s"
tail -24 "$R/rec/summary.txt" 2>/dev/null || tail -20 "$R/rec.log"
variant_finish s35d
