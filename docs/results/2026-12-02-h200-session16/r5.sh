#!/bin/bash
# session 16 run 5: + folding configurations walk a contiguous range of tiles, so a row block's
# statistics are staged once per CTA, and each group's first columns are staged before the PDL
# wait (binF): the GEMM tests, the gemms bench at 128 / 16384 (binary16), then r4.sh's A/B
# (main against fold=on, tuned) with two rounds
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/binF
( time timeout 120 $B/kernels_cuda linear_fold linear_ln linear_pdl pool ) > $OUT/kernels.txt 2>&1
echo "rc $?" >> $OUT/kernels.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels.txt | tail -5
timeout 120 $B/bench_kernels_cuda gemms $OUT/gemms.json 128,16384 dtype=f16 > $OUT/gemms.txt 2>&1
grep -E "best of ours" $OUT/gemms.txt
ROUNDS="0 1" bash $(dirname $0)/r4.sh
