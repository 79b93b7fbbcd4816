#!/bin/bash
# session 10 run 5: L2 prefetch on a side branch (128 CTAs of prefetch.global.L2 lines) A/B
# (prefetch=off|on, same binary, same tuning cache); the auto decision; kernel tests
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/bin3
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in bert-base minilm; do
  export EMBER_TUNE_CACHE=/tmp/tc-$m.txt
  EMBER_LOG=info timeout 90 $B/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128 200 spin=5000 2>&1 | grep -E "engine cuda|wall median" | cut -c1-300 >> $OUT/auto.txt
  for i in 1 2 3; do
    for v in off on; do
      echo "== $m prefetch=$v $i" >> $OUT/prefetch_ab.txt
      timeout 60 $B/bench_engine_cuda profile /tmp/m/$m cuda:0,prefetch=$v b1_128,16,512,2048,ragged 400 spin=5000 2>&1 | grep 'wall median' | sed 's/profile .tmp.m.//' | cut -c1-200 >> $OUT/prefetch_ab.txt
    done
  done
done
( timeout 150 $B/kernels_cuda > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log )
grep -E "CHECK failed|passed|prefetch|pool|rc " /tmp/k.log | head -20 > $OUT/tests.txt
