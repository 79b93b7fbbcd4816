#!/bin/bash
# session 10 run 3: L2 prefetch inside the attention kernels A/B (prefetch=off|on, same binary, same tuning cache),
# the ceiling (every layer on layer 0's weights: L2-resident), clocks during BERT ragged, tests
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/bin3
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in bert-base minilm; do
  export EMBER_TUNE_CACHE=/tmp/tc-$m.txt
  timeout 90 $B/bench_engine_cuda profile /tmp/m/$m cuda:0,prefetch=off b1_128 200 spin=5000 > /tmp/warm-$m.log 2>&1
  for i in 1 2 3 4; do
    for v in off on; do
      echo "== $m prefetch=$v $i" >> $OUT/prefetch_ab.txt
      timeout 60 $B/bench_engine_cuda profile /tmp/m/$m cuda:0,prefetch=$v b1_128,16,512,2048,ragged 400 spin=5000 2>&1 | grep 'wall median' | sed 's/profile .tmp.m.//' | cut -c1-200 >> $OUT/prefetch_ab.txt
    done
  done
done
export EMBER_TUNE_CACHE=/tmp/tc-bert-base.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $OUT/clocks.csv 2>&1 &
NP=$!
sleep 0.5
timeout 60 $B/bench_engine_cuda profile /tmp/m/bert-base cuda:0 ragged 300 spin=5000 > $OUT/clocks_run.txt 2>&1
kill $NP
( timeout 150 $B/kernels_cuda > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log )
grep -E "CHECK failed|passed|prefetch|pool|rc " /tmp/k.log | head -20 > $OUT/tests.txt
( EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 150 $B/engine_cuda > /tmp/e.log 2>&1; echo "rc $?" >> /tmp/e.log )
grep -E "CHECK failed|passed|rc |worst" /tmp/e.log | head -20 >> $OUT/tests.txt
