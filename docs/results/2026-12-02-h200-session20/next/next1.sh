#!/bin/bash
# Prepared in session 20 for session 21 (~7 min), not run: branch fuse-attn (pool with 3 CTAs per
# SM + the fused QKV + attention kernel in the engine, fuse=auto) against main.
# Dev box: bash docs/results/2026-12-02-h200-session20/next/prepare.sh (makes .gpupack/s21.tar.xz)
# Device: carry [".gpupack/s21.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s21.tar.xz -C .gpucarry && bash .gpucarry/next1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r1
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 100 $C/binF/kernels_cuda pool qkv_attention ) > $R/kernels_F.txt 2>&1; echo "rc $?" >> $R/kernels_F.txt
echo "kernels F pool qkv_attention: $(grep -E "CHECK failed|passed|rc " $R/kernels_F.txt | tail -3 | tr '\n' ' ')"
timeout 150 $C/binF/bench_kernels_cuda $R/bk_F.json 20 2>&1 | grep -iE "pool|qkv" > $R/bench_F.txt; cat $R/bench_F.txt
( time EMBER_TUNE_CACHE=/tmp/tcf EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binF/engine_cuda ) \
  > $R/engine_F.log 2>&1; echo "rc $?" >> $R/engine_F.log
grep -E "CHECK failed|passed|rc " $R/engine_F.log | tail -3
AB_ITERS=300 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,64,256 3 A=$C/bin0 O=$C/binF,fuse=off F=$C/binF \
  | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//; s/; host.*//'
tar cf $OUT/r1.tar -C $OUT r1 && rm -rf $R
