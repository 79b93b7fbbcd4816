#!/bin/bash
# Session 23, run 4 (~6 min): our GEMM's ping-pong hands the turn to the other consumer group as
# soon as its tile's last wgmmas are issued (was: after they retired). GEMM tests, every ping-pong
# candidate at 16384 tokens (binary16) against main, engine A/B.
# Dev box: binA = main (a940d36's code); binP = main + the change (build-next/bin0 + patch);
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binA/bench_kernels_cuda binA/bench_engine_cuda binP r4.sh | xz -T2 > .gpupack/s23d.tar.xz
# Device: carry [".gpupack/s23d.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s23d.tar.xz -C .gpucarry && bash .gpucarry/r4.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r4
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 150 $C/binP/kernels_cuda linear linear_ln linear_fold linear_pdl ) > $R/kernels_P.log 2>&1; echo "rc $?" >> $R/kernels_P.log
grep -E "CHECK failed|passed|rc " $R/kernels_P.log | tail -4
for r in 0 1; do for v in A P; do
  timeout 60 $C/bin$v/bench_kernels_cuda gemms $R/g_${v}_$r.json 20 16384 dtype=f16 match=pingpong > $R/g_${v}_$r.txt 2>&1
  echo "== $v round $r rc $?"; grep -E "pingpong" $R/g_${v}_$r.txt | grep -v "best of" | grep -E "qkv |ffn1\+gelu|out |ffn2 " | awk '{print $1, $2, $3, $4, $5, $6, $7, $(NF-1)}'
done; done
AB_ITERS=300 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 2 A=$C/binA P=$C/binP > $R/ab_summary.txt 2>&1
tail -24 $R/ab_summary.txt
tar cf $OUT/r4.tar -C $OUT r4 && rm -rf $R
