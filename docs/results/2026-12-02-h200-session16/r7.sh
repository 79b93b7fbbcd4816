#!/bin/bash
# session 16 run 7: + the folding configurations with two consumer groups give the producer
# group's registers to the consumers (setmaxnreg 40 / 232, as the wide plain tiles do): the
# folding GEMM tests, the gemms bench at 16384 (binary16), one tuned A/B round (r4.sh)
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/binF
( time timeout 100 $B/kernels_cuda linear_fold ) > $OUT/kernels.txt 2>&1
echo "rc $?" >> $OUT/kernels.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels.txt | tail -5
timeout 100 $B/bench_kernels_cuda gemms $OUT/gemms.json 16384 dtype=f16 > $OUT/gemms.txt 2>&1
grep -E "best of ours" $OUT/gemms.txt
ROUNDS="0" bash $(dirname $0)/r4.sh
