#!/bin/bash
# Session 22, run 2 (~6 min): completion by the pooling's flags (binN = main b2289a7 with
# kern_pool_done_t) against events (binM = 91f451a): kernels_cuda pool (+ memcheck), the engine
# test, and the A/B at 1 x 128, 64, 256, 1024 and ragged, both models.
# Dev box: binN = main's engine_cuda bench_engine_cuda kernels_cuda bench_kernels_cuda;
#   tar cf - -C .gpucarry lib binM binN r2.sh | xz -T2 > .gpupack/s22b.tar.xz
# Device: carry [".gpupack/s22b.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s22b.tar.xz -C .gpucarry && bash .gpucarry/r2.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r2
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
timeout 100 $C/binN/kernels_cuda pool > $R/kernels_pool.txt 2>&1; echo "rc $?" >> $R/kernels_pool.txt
grep -E "CHECK failed|flag|passed|rc " $R/kernels_pool.txt | tail -4
timeout 200 compute-sanitizer --tool memcheck $C/binN/kernels_cuda pool 2>&1 | tail -3 | tee $R/memcheck_pool.txt
( time EMBER_TUNE_CACHE=/tmp/tcn EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $C/binN/engine_cuda ) \
  > $R/engine_N.log 2>&1; echo "rc $?" >> $R/engine_N.log
grep -E "CHECK failed|passed|rc |GPU time|host share" $R/engine_N.log | tail -6
AB_ITERS=400 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,64,256,1024,ragged 3 M=$C/binM N=$C/binN \
  | sed -E 's/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//; s/; host.*//'
tar cf $OUT/r2.tar -C $OUT r2 && rm -rf $R
