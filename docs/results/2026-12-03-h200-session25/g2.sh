#!/bin/bash
# Session 25, ~8 min: our GEMM's exact-GELU epilogue three ways. D = main (ed96e49's kernels:
# the consumers' GELU after the bias prefetch), B = branch gelu-interleave (853b015: bias, GELU and
# staging stores per 8-column group), C = branch gelu-offload (the producer group's warps 1-3
# apply the GELU to the staged tile and store it; the consumers go on to their next main loop).
# GEMM tests on B and C; every GEMM at 4096 / 16384 tokens (binary16), D, B, C; engine A/B/C, both
# models, 3 rounds.
# Dev box: binD, binB as session 24's g1.sh; binC = kernels_cuda bench_kernels_cuda
#   bench_engine_cuda from build-next/bin0 at gelu-offload;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binD/bench_kernels_cuda binD/bench_engine_cuda binB binC g2.sh \
#     | xz -T2 > .gpupack/s25g.tar.xz
# Device: carry [".gpupack/s25g.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s25g.tar.xz -C .gpucarry && bash .gpucarry/g2.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/g2
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
for v in C B; do
  ( time timeout 150 $C/bin$v/kernels_cuda linear linear_ln linear_fold linear_pdl ) > $R/kernels_$v.log 2>&1
  echo "rc $?" >> $R/kernels_$v.log
  echo "== kernels $v"; grep -E "CHECK failed|passed|rc |real" $R/kernels_$v.log | tail -5
done
for v in D B C; do
  timeout 100 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "qkv |out |ffn1\+gelu|ffn2 |ffn1\+bias" | cut -c1-110
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 D=$C/binD B=$C/binB C=$C/binC > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/g_*.json
tar cf $OUT/g2.tar -C $OUT g2 && rm -rf $R
