#!/bin/bash
# Session 32, run 3: the checks and benches of record of branch attn-sum 44e7948 (the wgmma
# attention's tensor-core row sums and lazy check on the packed P; binR = run 1's binS
# engine_cuda + bench_engine_cuda, the same code): gpu-check steps 3-4 (engine_cuda against the
# CPU engine; check_engine.py against transformers fp32; the real all-MiniLM-L6-v2 as a binary16
# copy against sentence-transformers, eager and graphs=all), then step 5 with 500 repetitions.
# Pack: tar cf - -C .gpucarry lib real16 binR | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/r3.tar.xz
#   (.gpucarry/real16: python3 bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2 .gpucarry/real16 f16 --planes)
# The pack and the tree pass the tool's 64 MiB only with the earlier sessions' docs/results folders
# moved aside for the call.
# Device: mkdir -p .gpucarry && tar xJf .gpupack/r3.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session32/r3.sh
. bench/gpu/variant_steps.sh
variant_setup r3
ln -sfn ../lib "$C/binR/lib"
ln -sfn ../real16 "$C/binR/real-minilm"
MODELS=/tmp/m OUT=$R/gc ops/gpu-check.sh --prebuilt "$C/binR" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check 3,4 rc $?"
grep -iE "worst|cosine|passed|PASS|FAIL" "$R/gc.log" | tail -16
MODELS=/tmp/m OUT=$R/rec ops/gpu-check.sh --prebuilt "$C/binR" --engine-only --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check 5 rc $?"
tail -30 "$R/rec/summary.txt" 2>/dev/null || tail -30 "$R/rec.log"
rm -rf "$R"/gc/real "$R"/gc/check
variant_finish r3
