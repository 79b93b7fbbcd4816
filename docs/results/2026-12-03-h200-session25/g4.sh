#!/bin/bash
# Session 25, ~5 min: kern::gelu_erf with one MUFU op (branch gelu-1mufu: Phi(-|z|) =
# 2^(r(|z|) - z^2 log2(e)/2), r a degree-9 polynomial) against main's two (rcp + ex2), P vs D.
# Kernel tests of every GELU user on P; every GEMM at 4096 / 16384 tokens (binary16) and the
# kernel bench rows (bias_gelu), D then P; engine A/B, both models, 3 rounds.
# Dev box: binD as g2.sh (+ bench_kernels_cuda); binP = kernels_cuda bench_kernels_cuda
#   bench_engine_cuda from build-next/bin0 at gelu-1mufu;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binD/bench_kernels_cuda binD/bench_engine_cuda binP g4.sh \
#     | xz -T2 > .gpupack/s25p.tar.xz
# Device: carry [".gpupack/s25p.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s25p.tar.xz -C .gpucarry && bash .gpucarry/g4.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/g4
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 200 $C/binP/kernels_cuda bias_gelu linear linear_fold qkv_attention ) > $R/kernels_P.log 2>&1
echo "rc $?" >> $R/kernels_P.log
echo "== kernels P"; grep -E "CHECK failed|passed|rc |real" $R/kernels_P.log | tail -5
for v in D P; do
  timeout 100 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "ffn1\+gelu|ffn1\+bias" | cut -c1-110
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 D=$C/binD P=$C/binP > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/g_*.json
tar cf $OUT/g4.tar -C $OUT g4 && rm -rf $R
