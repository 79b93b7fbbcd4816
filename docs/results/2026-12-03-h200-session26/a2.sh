#!/bin/bash
# Ran in session 26 with L = branch attn-lazy 910d4ff (the mma.sync kernel's lazy rescale and
# warp-shared column mask in the wgmma attention) against N = main bbc91ce: kernels_cuda attention
# on L hung (timeout 120 s then; the run had no stop on failure, so bench L hung too and the
# device time ran out; a2_first/). Cause: the warp-shared test's second __shfl_sync sat inside an
# && chain. Fixed on the branch (ee077a8); next.sh (session 27) runs it again beside attn-tma,
# with the kernel tests first and a failing variant dropped. This file: the fixed-up script
# (60 s kernel timeout, stop on failure) as it would run L alone.
# Dev box: binN = bench_kernels_cuda bench_engine_cuda (main), binL = kernels_cuda
#   bench_kernels_cuda bench_engine_cuda engine_cuda (attn-lazy ee077a8);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binN binL a2.sh | xz -T4 > .gpupack/s27a.tar.xz
# Device: carry [".gpupack/s27a.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s27a.tar.xz -C .gpucarry && bash .gpucarry/a2.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/a2
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 60 $C/binL/kernels_cuda attention ) > $R/kernels_L.log 2>&1
rc=$?; echo "rc $rc" >> $R/kernels_L.log
echo "== kernels L"; grep -E "CHECK failed|passed|rc |real" $R/kernels_L.log | tail -4
[ $rc = 0 ] || { tar cf $OUT/a2.tar -C $OUT a2; exit 1; }
for v in N L; do
  timeout 120 $C/bin$v/bench_kernels_cuda $R/k_$v.json 50 > $R/k_$v.txt 2>&1
  echo "== bench $v rc $?"; grep -E "T=(4096|16384) attention wgmma" $R/k_$v.txt
done
for m in minilm bert-base; do
  EMBER_TUNE_CACHE=/tmp/tc_$m timeout 200 $C/binN/bench_engine_cuda profile /tmp/m/$m cuda:0 \
    b1_128,1024,ragged 20 spin=5000 > $R/tune_$m.txt 2>&1
  for L in N L; do cp /tmp/tc_$m /tmp/engine_ab_tc_${m}_$L; done
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 N=$C/binN L=$C/binL > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/*.json
tar cf $OUT/a2.tar -C $OUT a2 && rm -rf $R
