#!/bin/bash
# prepared in session 14 for the next GPU session (not run): the folded LayerNorm (branch fold-ln).
# bin0 = main's bench_engine_cuda; bin1 = the branch's kernels_cuda, engine_cuda,
# bench_engine_cuda, bench_kernels_cuda. Order: correctness first (a kernel bug shows there).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/bin1
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 200 $B/kernels_cuda linear_fold pool ) > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log
grep -E "CHECK failed|passed|rc |real|folded|fold " /tmp/k.log | head -80 > $OUT/kernels.txt
( EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $B/engine_cuda > /tmp/e.log 2>&1; echo "rc $?" >> /tmp/e.log )
grep -E "CHECK failed|passed|rc |fold|worst" /tmp/e.log | head -60 > $OUT/engine_tests.txt
for m in minilm bert-base; do  # round 0 tunes (cold caches), then alternate
  for r in 0 1 2 3; do
    for v in A F; do
      bin=$B; dev=cuda:0; [ $v = A ] && bin=$A; [ $v = F ] && dev=cuda:0,fold=on
      EMBER_LOG=info EMBER_TUNE_CACHE=/tmp/tc_$v timeout 90 $bin/bench_engine_cuda profile /tmp/m/$m $dev b1_128,ragged,1024 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab.txt
      grep -E "start-up|profile|folded|bucket 128" /tmp/p.txt >> $OUT/ab.txt
    done
  done
done
