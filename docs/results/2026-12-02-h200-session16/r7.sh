#!/bin/bash
# session 16 run 7: + the folding configurations with two consumer groups give the producer
# group's registers to the consumers (setmaxnreg 40 / 232, as the wide plain tiles do): the
# folding GEMM tests, the gemms bench at 16384 (binary16), one tuned A/B round (r4.sh)
TESTS=linear_fold ENGINE= TOKENS=16384 bash $(dirname $0)/r3.sh
ROUNDS="0" bash $(dirname $0)/r4.sh
