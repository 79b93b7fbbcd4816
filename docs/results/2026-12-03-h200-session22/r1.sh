#!/bin/bash
# Session 22, run 1 (~5 min): graph_launch3 (device graph launch against the host's launch),
# main's engine test (fuse=auto at head dim 32, gpu_time sampling), and the A/B of timing every
# chunk (gpu_time=1, as before) against one in 8 (the new default), both models.
# Dev box: binM = main (91f451a or later) engine_cuda bench_engine_cuda kernels_cuda +
#   graph_launch3 (nvcc -O2 -std=c++17 -arch=sm_90a -rdc=true graph_launch3.cu -lcudadevrt);
#   tar cf - -C .gpucarry lib binM r1.sh | xz -T2 > .gpupack/s22.tar.xz
# Device: carry [".gpupack/s22.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s22.tar.xz -C .gpucarry && bash .gpucarry/r1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r1
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
timeout 60 $C/binM/graph_launch3 1000 2>&1 | tee $R/graph_launch3.txt
( time EMBER_TUNE_CACHE=/tmp/tcm EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $C/binM/engine_cuda ) \
  > $R/engine_M.log 2>&1; echo "rc $?" >> $R/engine_M.log
grep -E "CHECK failed|passed|rc |GPU time|host share" $R/engine_M.log | tail -6
AB_ITERS=400 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,64,256 3 T=$C/binM,gpu_time=1 M=$C/binM \
  | sed -E 's/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//; s/; host.*//'
tar cf $OUT/r1.tar -C $OUT r1 && rm -rf $R
