#!/bin/bash
# prepared in session 17, not yet run (session 18's second device call; ~2 min): the real
# all-MiniLM-L6-v2 (binary16 copy: bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2
# .gpucarry/real16 f16) against sentence-transformers through main's engine with the folded
# LayerNorm at the small buckets (fold=auto, the default), every bucket (fold=on) and none
# (fold=off): the first real-weight check of the folded pass on the GPU.
# carry [".gpupack/real.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/real.tar.xz -C .gpucarry
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 EMBER_TUNE_CACHE=/tmp/tc_real.txt
PYTHONUNBUFFERED=1 timeout 200 python3 bench/gpu/check_real_model.py \
  --bin .gpucarry/bin0/bench_engine_cuda --model .gpucarry/real16 \
  --fixture tests/fixtures/minilm_st_reference.bin --out /tmp/real \
  --devices cuda:0 cuda:0,fold=on cuda:0,fold=off > $OUT/check_real_model.txt 2>&1
echo "rc $?" >> $OUT/check_real_model.txt
tail -20 $OUT/check_real_model.txt
