#!/bin/bash
# session 10 run 4: L2 prefetch (prefetch.global.L2 lines) inside the attention kernels A/B (prefetch=off|on, same binary, same tuning cache),
# the ceiling (every layer on layer 0's weights: L2-resident), clocks during BERT ragged, tests
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/bin3
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in bert-base minilm; do
  export EMBER_TUNE_CACHE=/tmp/tc-$m.txt
  timeout 90 $B/bench_engine_cuda profile /tmp/m/$m cuda:0,prefetch=off b1_128 200 spin=5000 > /tmp/warm-$m.log 2>&1
  for i in 1 2 3; do
    for v in off on; do
      echo "== $m prefetch=$v $i" >> $OUT/prefetch_ab.txt
      timeout 60 $B/bench_engine_cuda profile /tmp/m/$m cuda:0,prefetch=$v b1_128,16,512,ragged 400 spin=5000 2>&1 | grep 'wall median' | sed 's/profile .tmp.m.//' | cut -c1-200 >> $OUT/prefetch_ab.txt
    done
  done
done
( timeout 150 $B/kernels_cuda > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log )
grep -E "CHECK failed|passed|prefetch|pool|rc " /tmp/k.log | head -20 > $OUT/tests.txt
