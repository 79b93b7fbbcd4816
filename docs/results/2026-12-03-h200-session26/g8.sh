#!/bin/bash
# Prepared in session 26 for session 27 (NOT RUN), ~6 min: P = branch gemm-pp3 (two new GEMM
# configurations, "wgmma 64x128 s5 pingpong3" and "wgmma 64x192 s4 pingpong3": ping-pong with three
# consumer groups in rotation, so that a group's epilogue (the exact GELU: ~60% of the SM's issue
# slots for a K = 384 tile's tensor time) runs beside two others' main loops) against N = main
# bbc91ce. GEMM tests on P (every configuration x epilogue x dtype); gemms N / P at 4096, 16384
# (binary16; the pingpong3 rows next to the 2-group ones); engine A/B N / P, 3 rounds (each tunes
# its own cache in round 0: P's candidates differ).
# Dev box: binN as next.sh; binP = kernels_cuda bench_kernels_cuda bench_engine_cuda (gemm-pp3),
#   stripped; tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 \
#     lib/libgfortran.so.5 lib/libquadmath.so.0 binN binP g8.sh | xz -T6 > .gpupack/s27b.tar.xz
# Device: carry [".gpupack/s27b.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s27b.tar.xz -C .gpucarry && bash .gpucarry/g8.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/g8
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 150 $C/binP/kernels_cuda linear linear_ln linear_fold linear_pdl ) > $R/kernels_P.log 2>&1
rc=$?; echo "rc $rc" >> $R/kernels_P.log
echo "== kernels P rc $rc"; grep -E "CHECK failed|passed|real" $R/kernels_P.log | tail -3
[ $rc = 0 ] || { tar cf $OUT/g8.tar -C $OUT g8; exit 1; }
for v in N P; do
  timeout 120 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "ffn1\+gelu|qkv |out |ffn2 " | cut -c1-110
  grep -E "ffn1\+gelu.*(pingpong|pingpong3) f16" $R/g_$v.txt | cut -c1-90
done
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,1024,ragged 3 N=$C/binN P=$C/binP > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/*.json
tar cf $OUT/g8.tar -C $OUT g8 && rm -rf $R
