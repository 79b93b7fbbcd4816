#!/bin/bash
# session 15 run 3: the folded epilogues with staged operands (fold-ln + this session's
# gemm_wgmma.cu change): kernel tests, engine tests, A/B against main, per-kernel times (ncu).
# bin0 = main's bench_engine_cuda; $BIN (default bin5) = the branch's kernels_cuda, engine_cuda,
# bench_engine_cuda; $ROUNDS (default "0 1 2") the A/B rounds (r6.sh sets both)
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/${BIN:-bin5}
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 150 $B/kernels_cuda linear_fold pool ) > $OUT/kernels.txt 2>&1; echo "rc $?" >> $OUT/kernels.txt
( EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 200 $B/engine_cuda > /tmp/e.log 2>&1; echo "rc $?" >> /tmp/e.log )
grep -E "CHECK failed|passed|rc |fold" /tmp/e.log | head -40 > $OUT/engine_tests.txt
for m in minilm bert-base; do  # round 0 tunes (cold caches), then alternate
  for r in ${ROUNDS:-0 1 2}; do
    for v in A F; do
      bin=$B; dev=cuda:0; [ $v = A ] && bin=$A; [ $v = F ] && dev=cuda:0,fold=on
      EMBER_LOG=debug EMBER_TUNE_CACHE=/tmp/tc_${m}_$v timeout 90 $bin/bench_engine_cuda profile /tmp/m/$m $dev b1_128,ragged,1024 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab.txt
      grep -E "bucket (128|256):|profile .*(b1_128|ragged|1024):" /tmp/p.txt >> $OUT/ab.txt
    done
  done
  EMBER_TUNE_CACHE=/tmp/tc_${m}_F timeout 100 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
    --print-summary per-kernel $B/bench_engine_cuda profile /tmp/m/$m cuda:0,fold=on 1024 2 > $OUT/ncu_${m}_F.txt 2>&1
done
grep -E "profile .*(b1_128|ragged|1024):|==" $OUT/ab.txt | sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' | tail -40
