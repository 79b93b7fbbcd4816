#!/bin/bash
# Session 28, ~3.5 min: F = branch fold-by-size 3d5932b (fold=auto folds the buckets of up to
# 196608 / hidden tokens: MiniLM 512, BERT-base 256). engine_cuda (every test, against the CPU
# engine; its fold check expects 512 for the MiniLM-shape test model), then the MiniLM buckets
# around the change, F against N = main da9d903 (binN of .gpupack/s28.tar.xz is not carried:
# N is F with fold_max=256, the old default).
# Pack: tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#   lib/libquadmath.so.0 binF | xz -T1 --lzma2=preset=6,dict=192MiB > .gpupack/f28.tar.xz
# Device: carry [".gpupack/f28.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/f28.tar.xz -C .gpucarry && bash docs/results/2026-12-03-h200-session28/foldsize.sh
. bench/gpu/variant_steps.sh
variant_setup foldsize
( time EMBER_TUNE_CACHE=/tmp/tcv EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binF/engine_cuda ) > $R/engine_cuda.log 2>&1
echo "== engine_cuda rc $?"; grep -E "CHECK failed|passed|real" $R/engine_cuda.log | tail -4
AB_MODELS=minilm AB_ITERS=200 timeout 100 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m 384,512,576 2 \
  F=$C/binF N=$C/binF,fold_max=256 > $R/ab_summary.txt 2>&1
ab_summary $R/ab_summary.txt
variant_finish foldsize
