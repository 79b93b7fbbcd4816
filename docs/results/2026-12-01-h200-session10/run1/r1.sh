#!/bin/bash
# session 10 run 1: pool fix A/B (old = b158090 pool), marginal in-graph cost of each kernel
# (EMBER_DEBUG_SKIP diagnostic build), GEMM candidates at 128 tokens, kernel tests
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/bin3
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in minilm bert-base; do
  export EMBER_TUNE_CACHE=/tmp/tc-$m.txt
  timeout 90 $B/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128 200 spin=5000 > /tmp/warm-$m.log 2>&1
  for i in 1 2 3; do
    for v in old new; do
      bin=$B/bench_engine_cuda; [ $v = old ] && bin=$B/bench_engine_cuda.old
      echo "== $m $v $i" >> $OUT/pool_ab.txt
      timeout 60 $bin profile /tmp/m/$m cuda:0 b1_128,16,ragged 400 spin=5000 2>&1 | grep 'wall median' | sed 's/profile .tmp.m.//' | cut -c1-230 >> $OUT/pool_ab.txt
    done
  done
done
for m in minilm bert-base; do
  export EMBER_TUNE_CACHE=/tmp/tc-$m.txt
  for s in 0 1 2 4 8 16 32 64 128 254; do
    echo "== $m skip $s" >> $OUT/skip.txt
    EMBER_DEBUG_SKIP=$s timeout 60 $B/bench_skip profile /tmp/m/$m cuda:0 b1_128,ragged 300 spin=5000 2>&1 | grep 'wall median' | sed 's/profile .tmp.m.//' | cut -c1-230 >> $OUT/skip.txt
  done
  for s in 0 1 2 4 8 16 32 64 128 254; do
    echo "== $m skip $s b1 round 2" >> $OUT/skip.txt
    EMBER_DEBUG_SKIP=$s timeout 60 $B/bench_skip profile /tmp/m/$m cuda:0 b1_128 1500 spin=5000 2>&1 | grep 'wall median' | sed 's/profile .tmp.m.//' | cut -c1-230 >> $OUT/skip.txt
  done
done
unset EMBER_TUNE_CACHE
timeout 120 $B/bench_kernels_cuda gemms $OUT/gemms128.json 128 > $OUT/gemms128.txt 2>&1
timeout 150 $B/kernels_cuda > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log
grep -E "CHECK failed|passed|pool|rc " /tmp/k.log | head -20 > $OUT/tests.txt
