#!/bin/bash
# Prepared in session 25 for the next session (NOT RUN: the session's device time was spent),
# branch gelu-staged 92939c3 (the GELU of epilogues 2 and 6 applied by the consumer group to its
# staged 16-bit tile, after the staging stores free the accumulators: SASS shows the chains
# interleaved, where on the accumulators ptxas ran them one or two at a time) against main (D),
# and H = branch gelu-staged-plain (the same for epilogue 2 only; the folded epilogue 6 keeps its
# GELU in registers: its ping-pong tiles spill a little more with G). GEMM tests on G; every GEMM
# at 4096 / 16384 tokens (binary16), D, G, H; Nsight Compute of G's 128x128 ping-pong FFN-up at
# 16384 (as g5.sh did for D); engine A/B/C, both models, 3 rounds. ~8 min. Then g7.sh.
# Dev box: binD as g2.sh; binG = kernels_cuda bench_kernels_cuda bench_engine_cuda from
#   build-next/bin0 at gelu-staged 92939c3; binH = bench_kernels_cuda bench_engine_cuda at
#   gelu-staged-plain;
#   tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#     lib/libquadmath.so.0 binD/bench_kernels_cuda binD/bench_engine_cuda binG binH g6.sh g7.sh \
#     | xz -T2 > .gpupack/s26g.tar.xz
# Device: carry [".gpupack/s26g.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s26g.tar.xz -C .gpucarry && bash .gpucarry/g6.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/g6
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 150 $C/binG/kernels_cuda linear linear_ln linear_fold linear_pdl bias_gelu ) > $R/kernels_G.log 2>&1
echo "rc $?" >> $R/kernels_G.log
echo "== kernels G"; grep -E "CHECK failed|passed|rc |real" $R/kernels_G.log | tail -5
for v in D G H; do
  timeout 100 $C/bin$v/bench_kernels_cuda gemms $R/g_$v.json 20 4096,16384 dtype=f16 > $R/g_$v.txt 2>&1
  echo "== gemms $v rc $?"; grep "best of" $R/g_$v.txt | grep -E "ffn1\+gelu|ffn1\+bias" | cut -c1-110
  grep -E "ffn1\+gelu.*wgmma (128x128 s4 pingpong|256x128|128x192 s4) " $R/g_$v.txt | cut -c1-90
done
timeout 100 ncu --clock-control none --set full --import-source yes -k regex:k_gemm --launch-count 1 -o /tmp/g_gelu $C/binG/bench_kernels_cuda gemms /tmp/g.json 16384 model=minilm gemm=ffn1+gelu dtype=f16 "match=128x128 s4 pingpong" > /tmp/ncu_gelu.log 2>&1
ncu -i /tmp/g_gelu.ncu-rep --page details > $R/gemm_ffn1_gelu_details_G.txt 2>&1
ncu -i /tmp/g_gelu.ncu-rep --page source --csv --print-source sass > /tmp/g_gelu_sass.csv 2>&1
python3 bench/gpu/ncu_source_summary.py /tmp/g_gelu_sass.csv 30 > $R/gemm_ffn1_gelu_sass_G.txt 2>&1
grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued|Executed Instructions  " $R/gemm_ffn1_gelu_details_G.txt
AB_ITERS=200 bash bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,256,1024,ragged 3 D=$C/binD G=$C/binG H=$C/binH > $R/ab_summary.txt 2>&1
grep -E "==|wall" $R/ab_summary.txt | sed -E 's/profile \/tmp\/m\///; s/ p99.*GPU median/ GPU/; s/, submit.*//'
rm -f $R/g_*.json
tar cf $OUT/g6.tar -C $OUT g6 && rm -rf $R
