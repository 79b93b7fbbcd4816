#!/bin/bash
# Session 36, run 6: the fused FFN as landed (a CTA per 128-row tile; the engine fuses from one
# wave, 128 x the SMs = 16896 tokens): its kernel tests, gpu-check steps 3-4 (engine_cuda with
# its ffn=on modes; the engine against the CPU engine and transformers on the random-weight
# models; the real MiniLM against sentence-transformers), the benches of record (step 5, 500
# repetitions, transformers in the same run), then an engine A/B of ffn=off against the default
# on MiniLM (2 rounds, one tuning).
# Pack: tar cf - -C .gpucarry lib binF real16 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s36f.tar.xz
#   (the real model's planes are 39 MB: the tree went without docs/results/2026-11-30* .. 12-03*)
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s36f.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session36/s36f.sh
. bench/gpu/variant_steps.sh
variant_setup s36f
ln -sfn ../lib "$C/binF/lib"
ln -sfn ../real16 "$C/binF/real-minilm"
kernel_tests F 120 ffn
grep -E "ffn .*(worst|skipped)|CHECK failed" "$R/kernels_F.log" | head -8
MODELS=/tmp/m OUT=$R/gc timeout 330 ops/gpu-check.sh --prebuilt "$C/binF" --engine-only --steps 3,4 > "$R/gc.log" 2>&1
echo "== gpu-check 3,4 rc $? at $SECONDS s"
grep -E "worst|OVERALL|passed|FFN fused" "$R/gc/summary.txt" "$R/gc.log" | tail -16
rm -rf "$R"/gc/real "$R"/gc/check
MODELS=/tmp/m OUT=$R/rec timeout 150 ops/gpu-check.sh --prebuilt "$C/binF" --engine-only \
    --reps 500 --steps 5 > "$R/rec.log" 2>&1
echo "== gpu-check 5 rc $? at $SECONDS s"
tail -24 "$R/rec/summary.txt" 2>/dev/null || tail -20 "$R/rec.log"
EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 60 "$C/binF/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off ragged 20 spin=5000 > "$R/tune.txt" 2>&1
for v in off on; do cp /tmp/tc_minilm "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=600 timeout 90 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m ragged 2 \
    off="$C/binF,ffn=off" on="$C/binF" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
variant_finish s36f
