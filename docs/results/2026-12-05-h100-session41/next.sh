#!/bin/bash
# For the next device session, on an H200 (the benches of record are the H200's): main with the
# pruned last layer (label P: branch row-pool's build, whose code is main's since 6099454)
# through gpu-check steps 3-4 (engine_cuda; the engine against the CPU engine and transformers
# on the random-weight models and their CLS twins; the real all-MiniLM-L6-v2 against
# sentence-transformers) and the benches of record (step 5, 500 repetitions, transformers in the
# same run; now also the CLS twins, whose last layer the engine prunes).
# Pack: tar cf - -C .gpucarry lib binP real16 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s41m.tar.xz
#   (binP: tests/kernels_cuda, tests/engine_cuda, bench/bench_kernels_cuda, bench/bench_engine_cuda
#   of main's build, stripped; lib and real16 as session 40's README says)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s41m.tar.xz -C .gpucarry && bash docs/results/2026-12-05-h100-session41/next.sh
. bench/gpu/variant_steps.sh
L=${1:-P}
variant_setup "next_$L"
ln -sfn ../lib "$C/bin$L/lib"
ln -sfn ../real16 "$C/bin$L/real-minilm"
MODELS=/tmp/m OUT=$R/gc timeout 300 ops/gpu-check.sh --prebuilt "$C/bin$L" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check 3,4 rc $? at $SECONDS s"
grep -E "worst|OVERALL|passed|FFN fused" "$R/gc/summary.txt" "$R/gc.log" | tail -20
rm -rf "$R"/gc/real "$R"/gc/check
MODELS=/tmp/m OUT=$R/rec timeout $((570 - SECONDS)) ops/gpu-check.sh --prebuilt "$C/bin$L" --engine-only \
    --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check 5 rc $? at $SECONDS s"
tail -48 "$R/rec/summary.txt" 2>/dev/null || tail -20 "$R/rec.log"
variant_finish "next_$L"
