#!/bin/bash
# session 16 run 8 (the last device minutes): + one kernel per folded epilogue (fold-ln 73c96ee):
# the folding GEMM tests, then the gemms bench at 16384 tokens (binary16), MiniLM and BERT-base
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/binF
( time timeout 60 $B/kernels_cuda linear_fold ) > $OUT/kernels.txt 2>&1
echo "rc $?" >> $OUT/kernels.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels.txt | tail -5
timeout 90 $B/bench_kernels_cuda gemms $OUT/gemms.json 16384 dtype=f16 > $OUT/gemms.txt 2>&1
grep -E "best of ours" $OUT/gemms.txt
