#!/bin/bash
# Session 25, ~5 min: the exact GELU shared (branch gelu-offload 5a..: the consumers apply it to
# the first BN/64 - kGeluOff 64-column blocks in registers, the producer group's warps 1-3 to the
# last kGeluOff staged blocks) against main (D). GEMM tests on C; every GEMM at 4096 / 16384
# tokens (binary16), D then C; engine A/B, both models, 3 rounds.
# Dev box: binD as g2.sh; binC = kernels_cuda bench_kernels_cuda bench_engine_cuda from
#   build-next/bin0 at gelu-offload;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binD/bench_kernels_cuda binD/bench_engine_cuda binC g3.sh \
#     | xz -T2 > .gpupack/s25h.tar.xz
# Device: carry [".gpupack/s25h.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s25h.tar.xz -C .gpucarry && bash .gpucarry/g3.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/g3
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 150 $C/binC/kernels_cuda linear linear_ln linear_fold linear_pdl ) > $R/kernels_C.log 2>&1
echo "rc $?" >> $R/kernels_C.log
echo "== kernels C"; grep -E "CHECK failed|passed|rc |real" $R/kernels_C.log | tail -5
for v in D C; do
  timeout 100 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "ffn1\+gelu|ffn1\+bias" | cut -c1-110
  grep -E "ffn1\+gelu.*wgmma (128x128 s4 pingpong|256x128|128x192 s4) " $R/g_$v.txt | cut -c1-90
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 D=$C/binD C=$C/binC > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/g_*.json
tar cf $OUT/g3.tar -C $OUT g3 && rm -rf $R
