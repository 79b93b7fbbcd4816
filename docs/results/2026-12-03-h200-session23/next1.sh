#!/bin/bash
# Prepared in session 23 for the next session (~8 min): branch gemm-bias-prefetch (b9739c8), our
# GEMM's bias + GELU epilogue with each 8-column group's bias loaded while the group before is
# computed (SASS: the loads were at the head of each group's block, 8 GELU chains waiting on
# each). GEMM tests, every candidate at 4096 and 16384 tokens (binary16) against main, engine A/B.
# Dev box (session 23, done): binA = main's code (a940d36); binB = gemm-bias-prefetch
#   (build-next/bin0 at b9739c8: kernels_cuda bench_kernels_cuda engine_cuda bench_engine_cuda);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binA/bench_kernels_cuda binA/bench_engine_cuda binB next1.sh | xz -T2 > .gpupack/s24a.tar.xz
# Device: carry [".gpupack/s24a.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s24a.tar.xz -C .gpucarry && bash .gpucarry/next1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/next1
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 150 $C/binB/kernels_cuda linear linear_ln linear_fold linear_pdl ) > $R/kernels_B.log 2>&1; echo "rc $?" >> $R/kernels_B.log
grep -E "CHECK failed|passed|rc " $R/kernels_B.log | tail -4
for r in 0 1; do for v in A B; do
  timeout 90 $C/bin$v/bench_kernels_cuda gemms $R/g_${v}_$r.json 20 4096,16384 dtype=f16 > $R/g_${v}_$r.txt 2>&1
  echo "== $v round $r rc $?"; grep "best of" $R/g_${v}_$r.txt | grep -E "qkv |out |ffn1\+gelu|ffn2 "
done; done
AB_ITERS=300 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 A=$C/binA B=$C/binB > $R/ab_summary.txt 2>&1
tail -36 $R/ab_summary.txt
rm -f $R/g_*.json
tar cf $OUT/next1.tar -C $OUT next1 && rm -rf $R
