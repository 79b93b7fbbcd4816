#!/bin/bash
# Session 23, run 1 (~7 min): attention (mma.sync kernel) with the lazy rescale (O and l rescaled
# only when a row's block max passes its reference by > 8, base 2) and one mask test per column
# when the warp's rows share a key range: kernel test, bench rows against main, engine A/B.
# Dev box: binN = main (f4b59fb) kernels_cuda engine_cuda bench_engine_cuda bench_kernels_cuda;
#   binA = the same targets with the attention change (build-next/bin0 + patch);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binN/bench_engine_cuda binN/bench_kernels_cuda binA r1.sh | xz -T2 > .gpupack/s23a.tar.xz
# Device: carry [".gpupack/s23a.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s23a.tar.xz -C .gpucarry && bash .gpucarry/r1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r1
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 120 $C/binA/kernels_cuda attention ) > $R/kernels_A.log 2>&1; echo "rc $?" >> $R/kernels_A.log
grep -E "CHECK failed|passed|rc " $R/kernels_A.log | tail -4
for r in 0 1; do for v in N A; do
  timeout 120 $C/bin$v/bench_kernels_cuda $R/bk_${v}_$r.json 50 > $R/bk_${v}_$r.txt 2>&1
  echo "== $v round $r"; grep -E "attention (mma|wgmma)" $R/bk_${v}_$r.txt | grep -v "T=128 " | head -12
done; done
( time EMBER_TUNE_CACHE=/tmp/tca EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $C/binA/engine_cuda ) \
  > $R/engine_A.log 2>&1; echo "rc $?" >> $R/engine_A.log
grep -E "CHECK failed|passed|rc " $R/engine_A.log | tail -3
AB_ITERS=300 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 N=$C/binN A=$C/binA > $R/ab_summary.txt 2>&1
tail -40 $R/ab_summary.txt
tar cf $OUT/r1.tar -C $OUT r1 && rm -rf $R
