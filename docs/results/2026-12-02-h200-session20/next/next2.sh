#!/bin/bash
# Prepared in session 20 for session 21 (~2 min), not run: the fused FFN kernel (branch ffn-fused,
# never run on a GPU): its test, memcheck, and the helper's timing harness (fused at cluster
# sizes 16 and 8 against the tuned pair of folded GEMMs, a graph of 12 PDL launches).
# Device: carry [".gpupack/s21b.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s21b.tar.xz -C .gpucarry && bash .gpucarry/next2.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry
( time timeout 120 $C/binX/ffn_fused_cuda ) 2>&1 | tail -8 | tee $OUT/ffn_test.txt
timeout 200 compute-sanitizer --tool memcheck $C/binX/ffn_fused_cuda 2>&1 | tail -4 | tee $OUT/ffn_memcheck.txt
timeout 60 $C/binX/ffn_time 128 2>&1 | tee $OUT/ffn_time_128.txt
timeout 60 $C/binX/ffn_time 64 2>&1 | tee $OUT/ffn_time_64.txt
