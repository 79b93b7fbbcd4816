#!/bin/bash
# Session 37, run 1: main as left by session 36 (83f6331: the fused FFN's epilogue walks as one
# for_pairs; ffn=auto from 0.9 of a wave, 15206 tokens). Its kernel test and bench (not run on
# the GPU before), engine_cuda (the ffn_min stats check is new), then an engine A/B of ffn=off
# against the default on MiniLM (ragged, 12288, 16384; 3 rounds, one tuning) and the bench mode
# (one batch, 4 pipelined, 4 copies in flight) for both.
# Pack: tar cf - -C .gpucarry lib binA | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s37a.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s37a.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session37/s37a.sh
. bench/gpu/variant_steps.sh
variant_setup s37a
kernel_tests A 150 ffn
grep -E "ffn .*(worst|skipped)|CHECK failed" "$R/kernels_A.log" | head -8
BENCH_SUSTAIN_S=1 timeout 100 "$C/binA/bench_kernels_cuda" ffn "$R/ffn.json" 16384,16896 > "$R/ffn.txt" 2>&1
echo "== bench ffn rc $? at $SECONDS s"
grep -vE "unfused: ffn1" "$R/ffn.txt" | tail -12
EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp \
    timeout 200 "$C/binA/engine_cuda" > "$R/engine_cuda.log" 2>&1
echo "== engine_cuda rc $? at $SECONDS s"
grep -E "passed|ffn|CHECK failed" "$R/engine_cuda.log" | tail -8
EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 100 "$C/binA/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off ragged,12288,16384 20 spin=5000 > "$R/tune.txt" 2>&1
for v in off auto; do cp /tmp/tc_minilm "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=400 timeout 150 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m \
    ragged,12288,16384 3 off="$C/binA,ffn=off" auto="$C/binA" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
for v in off auto; do
    o=ffn=$v
    EMBER_TUNE_CACHE=/tmp/engine_ab_tc_minilm_$v timeout 100 "$C/binA/bench_engine_cuda" bench \
        /tmp/m/minilm minilm "$R/bench_$v.json" 200 spin=5000 "$o" > "$R/bench_$v.txt" 2>&1
    echo "== bench $v rc $? at $SECONDS s"
    grep -E "100 texts|per 1000" "$R/bench_$v.txt" | head -6
done
variant_finish s37a
