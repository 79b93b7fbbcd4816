#!/bin/bash
# session 14 run 1: weight-stationary wgmma configurations (K <= 384): kernel tests, GEMM
# timings (MiniLM shapes, binary16), engine A/B against db72287 (bin0) on the ragged batch and
# 1 x 128; validation of db72287 / 3b6d346 (engine_cuda lane checks, start-up lines)
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/bin1
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
( time timeout 170 $B/kernels_cuda linear linear_ln ) > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log
grep -E "CHECK failed|passed|rc |real|own config|tuned" /tmp/k.log | head -60 > $OUT/kernels.txt
timeout 120 $B/bench_kernels_cuda gemms $OUT/gemms.json 1024,4096,16384 model=minilm dtype=f16 > $OUT/gemms.txt 2>&1
echo "rc $?" >> $OUT/gemms.txt
for m in minilm bert-base; do  # cold caches first (tuning), then alternate
  for r in 0 1 2 3; do
    for v in A B; do
      bin=${!v}
      EMBER_LOG=info EMBER_TUNE_CACHE=/tmp/tc_$v timeout 60 $bin/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128,ragged 300 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab.txt
      grep -E "start-up|profile" /tmp/p.txt >> $OUT/ab.txt
    done
  done
done
cp /tmp/tc_A $OUT/tc_A.txt; cp /tmp/tc_B $OUT/tc_B.txt
( EMBER_TUNE_CACHE=/tmp/tc_B EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 170 $B/engine_cuda > /tmp/e.log 2>&1; echo "rc $?" >> /tmp/e.log )
grep -E "CHECK failed|passed|rc |lane" /tmp/e.log | head -40 > $OUT/engine_tests.txt
