#!/bin/bash
# prepared in session 16, not yet run: fold-ln with one kernel per folded epilogue (73c96ee) in
# full: the GEMM and pooling tests with every coverage check, the engine tests (fold=on modes
# against the CPU engine), every folding tile against its plain twin at 128 / 1024 tokens (run7
# has 16384), and the folding tiles at 16384 in the plain kernels' interleaved tile order (binI,
# fold_interleave.patch) against F's contiguous ranges (~6 min). The second call is r4.sh's tuned
# engine A/B, main against fold=on: ROUNDS="0 1 2" bash .gpucarry/r4.sh (~4 min).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/binF
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 120 $B/kernels_cuda linear_fold linear_ln linear_pdl pool ) > $OUT/kernels.txt 2>&1
echo "rc $?" >> $OUT/kernels.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels.txt | tail -5
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $B/engine_cuda ) > /tmp/e.log 2>&1
echo "rc $?" >> /tmp/e.log
grep -E "CHECK failed|passed|rc |fold|real" /tmp/e.log | head -40 > $OUT/engine_tests.txt; tail -4 $OUT/engine_tests.txt
timeout 120 $B/bench_kernels_cuda gemms $OUT/gemms.json 128,1024 dtype=f16 > $OUT/gemms.txt 2>&1
grep -E "best of ours" $OUT/gemms.txt
timeout 90 $PWD/.gpucarry/binI/bench_kernels_cuda gemms $OUT/gemms_interleave.json 16384 dtype=f16 > $OUT/gemms_interleave.txt 2>&1
grep -E "best of ours" $OUT/gemms_interleave.txt | grep -E "fold|stats"
