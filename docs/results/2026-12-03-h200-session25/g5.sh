#!/bin/bash
# Session 25, ~3 min: where the FFN-up's GELU epilogue goes. Nsight Compute (full + source
# counters) of main's 128x128 ping-pong tile at MiniLM's 16384 tokens (binary16), FFN-up with the
# GELU against the same GEMM with the bias only; and main's GEMM tests with the new 8200 x 72 x
# 1152 shape (binT = kernels_cuda of main f46a870).
# Dev box: tar cf - -C .gpucarry lib/libopenblas.so.0 lib/libjansson.so.4 lib/libgfortran.so.5 \
#   lib/libquadmath.so.0 binD/bench_kernels_cuda binT g5.sh | xz -T2 > .gpupack/s25n.tar.xz
# Device: carry [".gpupack/s25n.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s25n.tar.xz -C .gpucarry && bash .gpucarry/g5.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=$PWD/.gpucarry R=$OUT/g5
mkdir -p $R
( time timeout 100 $C/binT/kernels_cuda linear ) > $R/kernels_T.log 2>&1; echo "rc $?" >> $R/kernels_T.log
echo "== kernels T"; grep -E "CHECK failed|passed|rc " $R/kernels_T.log | tail -4
for g in ffn1+gelu ffn1+bias; do
  n=${g/+/_}
  timeout 100 ncu --clock-control none --set full --import-source yes -k regex:k_gemm --launch-count 1 -o /tmp/g_$n $C/binD/bench_kernels_cuda gemms /tmp/g.json 16384 model=minilm gemm=$g dtype=f16 "match=128x128 s4 pingpong" > /tmp/ncu_$n.log 2>&1
  ncu -i /tmp/g_$n.ncu-rep --page details > $R/gemm_${n}_details.txt 2>&1
  ncu -i /tmp/g_$n.ncu-rep --page source --csv --print-source sass > /tmp/g_${n}_sass.csv 2>&1
  echo "== ncu $g"; tail -2 /tmp/ncu_$n.log
done
tar cf - -C /tmp g_ffn1_gelu_sass.csv g_ffn1_bias_sass.csv | xz -6 > $R/gemm_sass.tar.xz
grep -E "^  [a-zA-Z]|Duration|Issue Slots Busy|Registers Per|Warp Cycles Per Issued|No Eligible|Issued Warp" $R/gemm_*_details.txt | grep -E "Duration|Issue Slots|Registers Per|Warp Cycles Per Issued|No Eligible|Issued Warp" | head -30
tar cf $OUT/g5.tar -C $OUT g5 && rm -rf $R
