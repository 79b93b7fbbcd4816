#!/bin/bash
# session 16 run 3: fold-ln + the folded epilogues' operands staged by the producer group's
# warps 1-3 during the main loop (binF): the branch's GEMM and pooling tests with every coverage
# check, the engine tests (fold=on modes), then every folding tile against its plain twin
# (bench_kernels_cuda gemms, binary16, 128 / 1024 / 16384 tokens; run2 has the same before).
# The later runs call it with other values (defaults: run 3's): BIN the binaries' folder, TESTS
# kernels_cuda's tests (empty: none), ENGINE the word the engine tests' log is searched for
# (empty: no engine tests), TOKENS the bench's token counts, BENCH what its output is searched
# for, TAG appended to the output files' names.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=${BIN:-$PWD/.gpucarry/binF} TAG=${TAG:-}
TESTS=${TESTS-linear_fold linear_ln linear_pdl pool} ENGINE=${ENGINE-fold}
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
if [ -n "$TESTS" ]; then
  ( time timeout 200 $B/kernels_cuda $TESTS ) > $OUT/kernels$TAG.txt 2>&1
  echo "rc $?" >> $OUT/kernels$TAG.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels$TAG.txt | tail -5
fi
if [ -n "$ENGINE" ]; then
  ( time EMBER_TUNE_CACHE=/tmp/tce$TAG EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 240 $B/engine_cuda ) > /tmp/e.log 2>&1
  echo "rc $?" >> /tmp/e.log
  grep -E "CHECK failed|passed|rc |$ENGINE|real" /tmp/e.log | head -40 > $OUT/engine_tests$TAG.txt; tail -4 $OUT/engine_tests$TAG.txt
fi
timeout 170 $B/bench_kernels_cuda gemms $OUT/gemms$TAG.json ${TOKENS:-128,1024,16384} dtype=f16 > $OUT/gemms$TAG.txt 2>&1
grep -E "${BENCH:-best of ours}" $OUT/gemms$TAG.txt
