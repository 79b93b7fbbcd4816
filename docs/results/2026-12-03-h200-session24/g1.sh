#!/bin/bash
# Prepared in session 24 for the next session (NOT RUN: the device's time ran out), ~6 min:
# branch gelu-interleave (our GEMM's epilogue: bias, GELU and each
# 8-column group's staging stores in one pass) against main. GEMM tests on B; every GEMM at
# 4096 / 16384 tokens (binary16), A then B; engine A/B, both models, 3 rounds. The gemms case
# ffn1+bias shows how much of the GELU's cost (13 us at MiniLM's 16384 tokens) is left.
# Dev box: binA = binD of d1.sh (main's code); binB = kernels_cuda bench_kernels_cuda
#   bench_engine_cuda from build-next/bin0 at gelu-interleave;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binD/bench_kernels_cuda binD/bench_engine_cuda binB g1.sh | xz -T2 > .gpupack/s24g.tar.xz
# Device: carry [".gpupack/s24g.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s24g.tar.xz -C .gpucarry && bash .gpucarry/g1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/g1
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 120 $C/binB/kernels_cuda linear linear_ln linear_fold linear_pdl ) > $R/kernels_B.log 2>&1; echo "rc $?" >> $R/kernels_B.log
grep -E "CHECK failed|passed|rc " $R/kernels_B.log | tail -4
for v in D B; do
  timeout 100 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "qkv |out |ffn1\+gelu|ffn2 |ffn1\+bias" | cut -c1-110
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 A=$C/binD B=$C/binB > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/g_*.json
tar cf $OUT/g1.tar -C $OUT g1 && rm -rf $R
