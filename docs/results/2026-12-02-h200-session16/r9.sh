#!/bin/bash
# prepared in session 16, not yet run: fold-ln with one kernel per folded epilogue (73c96ee) in
# full: the GEMM and pooling tests with every coverage check, the engine tests (fold=on modes
# against the CPU engine), every folding tile against its plain twin at 128 / 1024 tokens (run7
# has 16384), and the folding tiles at 16384 in the plain kernels' interleaved tile order (binI,
# fold_interleave.patch) against F's contiguous ranges (~6 min). The second call is r4.sh's tuned
# engine A/B, main against fold=on: ROUNDS="0 1 2" bash .gpucarry/r4.sh (~4 min).
d=$(dirname $0)
TOKENS=128,1024 bash $d/r3.sh
BIN=$PWD/.gpucarry/binI TESTS= ENGINE= TOKENS=16384 TAG=_interleave BENCH="best of ours.*(fold|stats)" \
  bash $d/r3.sh
