#!/bin/bash
# Session 36, run 2: the fused FFN with stream-K (config 0) beside a CTA per tile (config 1):
# kernel tests (now with 16973 and 27392 rows, where tiles are split), the kernel bench at six
# token counts, the engine A/B ffn=off / ffn=on on MiniLM (one tuning shared), then the engine
# tests (engine_cuda, with its ffn=on modes) on the random-weight MiniLM.
# Pack: tar cf - -C .gpucarry lib binF | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s36b.tar.xz
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s36b.tar.xz -C .gpucarry && bash docs/results/2026-12-04-h200-session36/s36b.sh
. bench/gpu/variant_steps.sh
variant_setup s36b
kernel_tests F 300 ffn
grep -E "ffn .*(worst|skipped)|CHECK failed" "$R/kernels_F.log" | head -20
timeout 240 "$C/binF/bench_kernels_cuda" ffn "$R/ffn.json" > "$R/ffn.txt" 2>&1
echo "== bench ffn rc $? at $SECONDS s"
grep -vE "unfused: ffn1" "$R/ffn.txt" | tail -40
EMBER_TUNE_CACHE=/tmp/tc_minilm timeout 200 "$C/binF/bench_engine_cuda" profile /tmp/m/minilm \
    cuda:0,ffn=off b1_128,ragged 20 spin=5000 > "$R/tune.txt" 2>&1
for v in off on; do cp /tmp/tc_minilm "/tmp/engine_ab_tc_minilm_$v"; done
AB_MODELS=minilm AB_ITERS=600 bash bench/gpu/engine_ab.sh "$R/ab.txt" /tmp/m b1_128,ragged 3 \
    off="$C/binF,ffn=off" on="$C/binF,ffn=on" > /dev/null 2>&1
echo "== ab at $SECONDS s"
ab_table "$R/ab.txt" | tee "$R/ab_table.md"
EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp \
    timeout 400 "$C/binF/engine_cuda" > "$R/engine_cuda.log" 2>&1
echo "== engine_cuda rc $? at $SECONDS s"
grep -E "ffn|passed|CHECK failed|SKIPPED" "$R/engine_cuda.log" | tail -20
variant_finish s36b
