#!/bin/bash
# Session 36, run 4: the fused FFN with one-add descriptors (ncu, run 3: descriptor rebuilding
# was most of the consumers' issue slots) and the producer's chunk counted, not divided. Kernel
# bench at 16384 / 16896 / 20480 / 27392 tokens (1 s windows); engine A/B on MiniLM of ffn=off,
# ffn=on with stream-K (binF's default) and ffn=on with a CTA per tile (binT: the same code with
# the default configuration swapped), one tuning shared, 3 rounds; then the engine's bench mode
# (one batch and 4 copies in flight) for each.
# Pack: tar cf - -C .gpucarry lib binF binT | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s36d.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s36d.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session36/s36d.sh
. bench/gpu/variant_steps.sh
variant_setup s36d
BENCH_SUSTAIN_S=1 timeout 200 "$C/binF/bench_kernels_cuda" ffn "$R/ffn.json" 16384,16896,20480,27392 > "$R/ffn.txt" 2>&1
echo "== bench ffn rc $? at $SECONDS s"
grep -vE "unfused: ffn1" "$R/ffn.txt" | tail -24
EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 200 "$C/binF/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off b1_128,ragged 20 spin=5000 > "$R/tune.txt" 2>&1
for v in off S T; do cp /tmp/tc_minilm "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=600 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m ragged 3 \
    off="$C/binF,ffn=off" S="$C/binF,ffn=on" T="$C/binT,ffn=on" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
for v in off S T; do
    b=binF o=ffn=off
    [ $v = T ] && b=binT
    [ $v != off ] && o=ffn=on
    EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_$v timeout 200 "$C/$b/bench_engine_cuda" bench \
        /tmp/m/minilm minilm "$R/bench_$v.json" 200 spin=5000 "$o" > "$R/bench_$v.txt" 2>&1
    echo "== bench $v rc $? at $SECONDS s"
    grep -E "100 texts|per 1000" "$R/bench_$v.txt" | head -6
done
variant_finish s36d
