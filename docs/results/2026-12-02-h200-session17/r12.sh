#!/bin/bash
# session 17 run 5: the fused feed-forward kernel rewritten after run 4's profile (binM2: 16 warps,
# P pushed to its owners by st.async counted on an mbarrier, no GPU-wide fence): its tests, the
# gemms bench at 128 / 256 / 1024 tokens (binary16), then main (bin0) against mlp=on, tuned,
# 1 x 128 / 16 / 256 tokens, both shapes (r4.sh of session 16).
d=docs/results/2026-12-02-h200-session16
cp $d/r3.sh $d/r4.sh .gpucarry/
BIN=$PWD/.gpucarry/binM2 TESTS=mlp_fused ENGINE= TOKENS=128,256,1024 TAG=_mlp BENCH=" mlp " \
  bash .gpucarry/r3.sh
BIN=$PWD/.gpucarry/binM2 DEV=cuda:0,mlp=on CASES=b1_128,16,256 TAG=_mlp ROUNDS="${ROUNDS:-0 1 2}" \
  bash .gpucarry/r4.sh
