#!/bin/bash
# Session 26, ~6 min: the wgmma attention's tile loader. A = branch attn-loader a46c3fd (load_tile
# with a constant trip count: 763 SASS instructions a two-block iteration where main's has 1228);
# B = branch attn-loader-hd32 (A, and the wgmma kernel at head dim 32 too, >= 512 tokens);
# M = main a25445a. Attention kernel tests on A; bench_kernels_cuda (attention rows) M / A, two
# rounds; engine A/B M / A / B, 3 rounds, all three variants on one tuning (the GEMMs are the
# same code: M's choices copied into each label's cache, so the tuner's noise is out of the A/B).
# Dev box: build-next/bin0 at each ref; binM = bench_engine_cuda bench_kernels_cuda (main),
#   binA = kernels_cuda bench_kernels_cuda bench_engine_cuda (attn-loader), binB =
#   bench_engine_cuda (attn-loader-hd32);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binM binA binB a1.sh | xz -T2 > .gpupack/s26a.tar.xz
# Device: carry [".gpupack/s26a.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s26a.tar.xz -C .gpucarry && bash .gpucarry/a1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/a1
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 120 $C/binA/kernels_cuda attention ) > $R/kernels_A.log 2>&1
echo "rc $?" >> $R/kernels_A.log
echo "== kernels A"; grep -E "CHECK failed|passed|rc |real" $R/kernels_A.log | tail -4
for r in 0 1; do
  for v in M A; do
    timeout 120 $C/bin$v/bench_kernels_cuda $R/k_${v}_$r.json 50 > $R/k_${v}_$r.txt 2>&1
    echo "== bench $v round $r rc $?"; grep -E "T=(4096|16384) attention" $R/k_${v}_$r.txt
  done
done
for m in minilm bert-base; do
  EMBER_TUNE_CACHE=/tmp/tc_$m timeout 200 $C/binM/bench_engine_cuda profile /tmp/m/$m cuda:0 \
    b1_128,256,1024,ragged 20 spin=5000 > $R/tune_$m.txt 2>&1
  for L in M A B; do cp /tmp/tc_$m /tmp/engine_ab_tc_${m}_$L; done
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,256,1024,ragged 3 M=$C/binM A=$C/binA B=$C/binB > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/*.json
tar cf $OUT/a1.tar -C $OUT a1 && rm -rf $R
