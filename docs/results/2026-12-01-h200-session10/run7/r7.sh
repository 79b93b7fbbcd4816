#!/bin/bash
# session 10 run 7: the tuner pools into big (m->out gone): engine tests, vs transformers,
# device memory, 1 x 128 / ragged unchanged
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/bin5
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 150 $B/engine_cuda > /tmp/e.log 2>&1; echo "rc $?" >> /tmp/e.log )
grep -E "CHECK failed|passed|rc |worst|MiB" /tmp/e.log | head -20 > $OUT/tests.txt
export EMBER_TUNE_CACHE=/tmp/tc-check.txt
timeout 240 python3 bench/gpu/check_engine.py --bin $B/bench_engine_cuda --models /tmp/m --out /tmp/ce > $OUT/check.log 2>&1; echo "rc $?" >> $OUT/check.log
for m in minilm bert-base; do
  EMBER_LOG=info EMBER_TUNE_CACHE=/tmp/tc-$m.txt timeout 90 $B/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128,ragged 400 spin=5000 2>&1 | grep -E "MiB|wall median" | cut -c1-300 >> $OUT/profile.txt
done
