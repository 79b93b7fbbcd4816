#!/bin/bash
# session 18 run 7, binS (= main d3e98df: relaxed-barrier and own-smem merged): (1) engine_cuda;
# (2) the largest folded bucket again (fold_max 128, the default, against 256 and 512) now that
# the split-K barriers are cheaper, 256 / 512 / 1024 / ragged, both shapes, 2 rounds; (3) where a
# 1 x 128 pass's time goes: per-kernel times of one eager pass under Nsight Compute.
# carry [".gpupack/s18.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s18.tar.xz -C .gpucarry
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
B=.gpucarry/binS
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $B/engine_cuda ) \
  > $OUT/engine_tests.log 2>&1; echo "rc $?" >> $OUT/engine_tests.log
grep -E "CHECK failed|passed|rc |real" $OUT/engine_tests.log | tail -6
for m in minilm bert-base; do
  for r in 0 1; do
    for f in 128 256 512; do
      EMBER_TUNE_CACHE=/tmp/tc_${m}_$f timeout 100 $B/bench_engine_cuda profile /tmp/m/$m \
        cuda:0,fold_max=$f 256,512,1024,ragged 300 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m fold_max=$f round $r" >> $OUT/fold_max.txt
      grep -E "profile .*(256|512|1024|ragged):" /tmp/p.txt >> $OUT/fold_max.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*submit median/submit/' $OUT/fold_max.txt
for m in minilm bert-base; do
  EMBER_TUNE_CACHE=/tmp/tc_${m}_128 timeout 120 ncu --csv --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum $B/bench_engine_cuda profile /tmp/m/$m \
    cuda:0,graphs=off b1_128 1 > $OUT/ncu_${m}_b1_128.csv 2> $OUT/ncu_${m}_b1_128.err
  python3 bench/gpu/ncu_summary.py $OUT/ncu_${m}_b1_128.csv 1 $OUT/ncu_${m}_b1_128.json
done
