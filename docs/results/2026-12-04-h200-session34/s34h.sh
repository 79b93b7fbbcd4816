#!/bin/bash
# Session 34, run 9 (review): the wgmma attention's output check moved into one predicate,
# kern_attention_wgmma_out_ok, checked at kern_attention_wgmma_cuda's entry and by the auto
# choice; bench_kernels_cuda's sustained results as their own struct. Kernel tests (attention),
# the engine's test, one GEMM's candidates sustained.
# Pack: tar cf - -C .gpucarry lib binR34 | xz -T2 --lzma2=preset=6,dict=192MiB > .gpupack/s34h.tar.xz
. bench/gpu/variant_steps.sh
variant_setup s34h
kernel_tests R34 60 attention
BENCH_SUSTAIN_S=0.5 timeout 40 "$C/binR34/bench_kernels_cuda" gemms "$R/g.json" 20 16384 dtype=f16 \
    gemm=out model=minilm > "$R/g.txt" 2>&1
echo "== gemms rc $? at $SECONDS s"; grep -E "sustained|best" "$R/g.txt" | cut -c1-130
(time EMBER_TEST_MODEL_DIR=/tmp/m/minilm EMBER_SOURCE_DIR=$PWD EMBER_TEST_DATA_DIR=/tmp timeout 110 "$C/binR34/engine_cuda") > "$R/engine_cuda.log" 2>&1
echo "== engine_cuda rc $? at $SECONDS s"; grep -E "passed|failed" "$R/engine_cuda.log" | tail -2
variant_finish s34h
