#!/bin/bash
# session 18 run 8 (the last of the session's device time): branch pdl-early (binP: attention and
# pooling read the batch's layout before the PDL wait) against main 344e0b6 (bin0: fold_max 256
# the default), 1 x 128 and 256 tokens, both shapes, 2 rounds; then binP's kernel tests
# (attention, pool) and engine tests (the new fold_max default too).
# carry [".gpupack/s18.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s18.tar.xz -C .gpucarry
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=.gpucarry/bin0 B=.gpucarry/binP
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in minilm bert-base; do
  for r in 0 1; do
    for v in A P; do
      bin=$B; [ $v = A ] && bin=$A
      EMBER_TUNE_CACHE=/tmp/tc_${m}_$v timeout 60 $bin/bench_engine_cuda profile /tmp/m/$m cuda:0 \
        b1_128,256 300 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab_P.txt
      grep -E "profile .*(b1_128|256):" /tmp/p.txt >> $OUT/ab_P.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*submit median/submit/' $OUT/ab_P.txt
( time timeout 60 $B/kernels_cuda attention pool ) > $OUT/kernels_P.txt 2>&1
echo "rc $?" >> $OUT/kernels_P.txt; grep -E "CHECK failed|passed|rc |real" $OUT/kernels_P.txt | tail -5
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 170 $B/engine_cuda ) \
  > $OUT/engine_tests.log 2>&1; echo "rc $?" >> $OUT/engine_tests.log
grep -E "CHECK failed|passed|rc |real" $OUT/engine_tests.log | tail -6
