#!/bin/bash
# session 16 run 6: Nsight Compute (full + source counters) of the folded QKV (epilogue 5) at
# MiniLM 16384 tokens against its plain twin (128x128 s5, binary16): where the folded tile's
# extra ~18 us go (run3 / run4: not the staging of its operands)
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
B=$PWD/.gpucarry/binF
for g in qkv qkv+fold; do
  n=${g/+/_}
  timeout 100 ncu --clock-control none --set full --import-source yes -k regex:k_gemm --launch-count 1 -o /tmp/g_$n $B/bench_kernels_cuda gemms /tmp/g.json 16384 model=minilm gemm=$g dtype=f16 "match=128x128 s5" > /tmp/ncu_$n.log 2>&1
  ncu -i /tmp/g_$n.ncu-rep --page details > $OUT/gemm_${n}_details.txt 2>&1
  ncu -i /tmp/g_$n.ncu-rep --page source --csv --print-source sass > /tmp/g_${n}_sass.csv 2>&1
  tail -3 /tmp/ncu_$n.log
done
tar cf - -C /tmp g_qkv_sass.csv g_qkv_fold_sass.csv ncu_qkv.log ncu_qkv_fold.log | xz -6 > $OUT/gemm_sass.tar.xz
grep -E "Duration|Issue Slots Busy|Registers Per|Warp Cycles Per Issued|Local" $OUT/gemm_*_details.txt
