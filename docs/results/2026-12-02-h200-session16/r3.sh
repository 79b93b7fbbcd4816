#!/bin/bash
# session 16 run 3: fold-ln + the folded epilogues' operands staged by the producer group's
# warps 1-3 during the main loop (binF): the branch's GEMM and pooling tests with every coverage
# check, the engine tests (fold=on modes), then every folding tile against its plain twin
# (bench_kernels_cuda gemms, binary16, 128 / 1024 / 16384 tokens; run2 has the same before).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/binF
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 200 $B/kernels_cuda linear_fold linear_ln linear_pdl pool ) > $OUT/kernels.txt 2>&1
echo "rc $?" >> $OUT/kernels.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels.txt | tail -5
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $B/engine_cuda ) > /tmp/e.log 2>&1
echo "rc $?" >> /tmp/e.log
grep -E "CHECK failed|passed|rc |fold|real" /tmp/e.log | head -40 > $OUT/engine_tests.txt; tail -4 $OUT/engine_tests.txt
timeout 170 $B/bench_kernels_cuda gemms $OUT/gemms.json 128,1024,16384 dtype=f16 > $OUT/gemms.txt 2>&1
grep -E "best of ours" $OUT/gemms.txt
