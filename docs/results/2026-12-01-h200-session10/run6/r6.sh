#!/bin/bash
# session 10 run 6: final validation of d791a36 (pool fix): engine tests, vs transformers, the
# real MiniLM vs sentence-transformers, bench_engine_cuda bench (spin), MiniLM ragged clocks
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
B=$PWD/.gpucarry/bin4
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 150 $B/engine_cuda > /tmp/e.log 2>&1; echo "rc $?" >> /tmp/e.log )
grep -E "CHECK failed|passed|rc |worst" /tmp/e.log | head -20 > $OUT/tests.txt
export EMBER_TUNE_CACHE=/tmp/tc-check.txt
timeout 240 python3 bench/gpu/check_engine.py --bin $B/bench_engine_cuda --models /tmp/m --out /tmp/ce > $OUT/check.log 2>&1; echo "rc $?" >> $OUT/check.log
cp /tmp/ce/check_engine.json $OUT/ 2>/dev/null
EMBER_TUNE_CACHE=/tmp/tc-real.txt timeout 200 python3 bench/gpu/check_real_model.py --bin $B/bench_engine_cuda --model $PWD/.gpucarry/real --fixture tests/fixtures/minilm_st_reference.bin --out /tmp/crm --devices cuda:0 cuda:0,graphs=all > $OUT/check_real_model.txt 2>&1
echo "rc $?" >> $OUT/check_real_model.txt
for m in minilm bert-base; do
  EMBER_TUNE_CACHE=/tmp/tc-$m.txt timeout 150 $B/bench_engine_cuda bench /tmp/m/$m $m $OUT/bench_$m.json 500 spin=5000 > /tmp/b-$m.txt 2>&1
  cat /tmp/b-$m.txt >> $OUT/bench.txt
done
export EMBER_TUNE_CACHE=/tmp/tc-minilm.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > /tmp/clocks.csv 2>&1 &
NP=$!
sleep 0.5
timeout 60 $B/bench_engine_cuda profile /tmp/m/minilm cuda:0 ragged 1500 spin=5000 >> $OUT/bench.txt 2>&1
kill $NP
cat /tmp/clocks.csv >> $OUT/bench.txt
