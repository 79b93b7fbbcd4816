#!/bin/bash
# Session 22, run 3 (~4 min): the engine test after the capture-mutex fix (binN = main's
# engine_cuda, bench_engine_cuda), and the flags against events once more at 1 x 128 and 1024.
# Dev box: tar cf - -C .gpucarry lib binM/bench_engine_cuda binN/engine_cuda binN/bench_engine_cuda r3.sh | xz -T2 > .gpupack/s22c.tar.xz
# Device: carry [".gpupack/s22c.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s22c.tar.xz -C .gpucarry && bash .gpucarry/r3.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r3
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time EMBER_TUNE_CACHE=/tmp/tcn EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $C/binN/engine_cuda ) \
  > $R/engine_N.log 2>&1; echo "rc $?" >> $R/engine_N.log
grep -E "CHECK failed|passed|rc |GPU time|host share" $R/engine_N.log | tail -8
AB_ITERS=400 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024 2 M=$C/binM N=$C/binN \
  | sed -E 's/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//; s/; host.*//'
tar cf $OUT/r3.tar -C $OUT r3 && rm -rf $R
