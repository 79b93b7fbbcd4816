#!/bin/bash
# Session 23, run 5 (~2 min): the real all-MiniLM-L6-v2 (binary16 copy, bench/gpu/pack_bf16_model.py)
# through the engine of main (the lazy-rescale attention) against sentence-transformers' outputs
# (tests/fixtures/minilm_st_reference.bin), default device, every graph at start, and bf16.
# Dev box: ops/fetch-model.sh; python3 bench/gpu/pack_bf16_model.py models/all-MiniLM-L6-v2 \
#   .gpucarry/real-minilm f16 && xz -T2 .gpucarry/real-minilm/model.safetensors;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binA/bench_engine_cuda real-minilm r5.sh | xz -T2 > .gpupack/s23e.tar.xz
# Device: carry [".gpupack/s23e.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s23e.tar.xz -C .gpucarry && bash .gpucarry/r5.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r5 M=/tmp/real-minilm
mkdir -p $R $M && cp -r $C/real-minilm/. $M/ && rm -f $M/model.safetensors.xz &&
  xz -dc $C/real-minilm/model.safetensors.xz > $M/model.safetensors
timeout 240 python3 bench/gpu/check_real_model.py --bin $C/binA/bench_engine_cuda --model $M \
  --fixture tests/fixtures/minilm_st_reference.bin --out $R/real \
  --devices cuda:0 cuda:0,graphs=all cuda:0,dtype=bf16 > $R/check_real_model.log 2>&1
echo "rc $?"; sed -n '/== real/,$p' $R/check_real_model.log | tail -12; rm -f $R/real/*.bin
tar cf $OUT/r5.tar -C $OUT r5 && rm -rf $R
