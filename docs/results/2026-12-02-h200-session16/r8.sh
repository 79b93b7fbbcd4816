#!/bin/bash
# session 16 run 8 (the last device minutes): + one kernel per folded epilogue (fold-ln 73c96ee):
# the folding GEMM tests, then the gemms bench at 16384 tokens (binary16), MiniLM and BERT-base
TESTS=linear_fold ENGINE= TOKENS=16384 bash $(dirname $0)/r3.sh
