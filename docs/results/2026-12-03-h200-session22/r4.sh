#!/bin/bash
# Session 22, run 4 (~5 min), prepared, not run: every kernel test and the engine test on main
# after the session's last commits (gpu_time per batch; review: the fused kernel without
# cu_seqlens, fuse_max, kern::row_stats_regs shared by row_stats_one and qkv_attention), and one
# profile of MiniLM 1 x 128 and ragged (GPU time whole).
# Dev box: binN = main's kernels_cuda engine_cuda bench_engine_cuda (build-next/bin0 at main);
#   tar cf - -C .gpucarry lib binN/kernels_cuda binN/engine_cuda binN/bench_engine_cuda r4.sh | xz -T2 > .gpupack/s22d.tar.xz
# Device: carry [".gpupack/s22d.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s22d.tar.xz -C .gpucarry && bash .gpucarry/r4.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r4
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 240 $C/binN/kernels_cuda ) > $R/kernels_N.log 2>&1; echo "rc $?" >> $R/kernels_N.log
grep -E "CHECK failed|passed|rc " $R/kernels_N.log | tail -4
( time EMBER_TUNE_CACHE=/tmp/tcn EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binN/engine_cuda ) \
  > $R/engine_N.log 2>&1; echo "rc $?" >> $R/engine_N.log
grep -E "CHECK failed|passed|rc |GPU time|host share" $R/engine_N.log | tail -8
EMBER_TUNE_CACHE=/tmp/tcn timeout 60 $C/binN/bench_engine_cuda profile /tmp/m/minilm cuda:0 b1_128,ragged 200 spin=5000 2>&1 | grep "^profile" | tee $R/profile.txt
tar cf $OUT/r4.tar -C $OUT r4 && rm -rf $R
