#!/bin/bash
# session 17 run 8: the folded LayerNorm per bucket (fold-ln + fold=auto, the new default: the
# buckets of up to 128 tokens folded, the others plain; binF2) against main (bin0), tuned (round 0
# tunes into cold caches), 1 x 128 / 256 / 1024 tokens and ragged, both shapes; fold=on at 256
# (is 128 the right edge?); the fused feed-forward kernel's tests after its cp.async commit fix
# (binM4); then the engine tests of binF2 (every mode against the CPU engine, the default now
# folding the small buckets).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( timeout 60 .gpucarry/binM4/kernels_cuda mlp_fused ) > $OUT/kernels_mlp.txt 2>&1; echo "rc $?" >> $OUT/kernels_mlp.txt
tail -2 $OUT/kernels_mlp.txt
for m in minilm bert-base; do
  for r in 0 1; do
    for v in A F; do
      bin=.gpucarry/binF2; [ $v = A ] && bin=.gpucarry/bin0
      EMBER_LOG=debug EMBER_TUNE_CACHE=/tmp/tc_${m}_$v timeout 100 $bin/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128,256,1024,ragged 300 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab.txt
      grep -E "profile .*(b1_128|256|1024|ragged):|LayerNorm folded" /tmp/p.txt | sed -E 's/.*(LayerNorm folded[^,;]*).*/\1/' >> $OUT/ab.txt
    done
  done
  EMBER_TUNE_CACHE=/tmp/tc_${m}_O timeout 100 .gpucarry/binF2/bench_engine_cuda profile /tmp/m/$m cuda:0,fold=on 256 300 spin=5000 > /tmp/p.txt 2>&1
  echo "== $m fold=on" >> $OUT/ab.txt; grep -E "profile .*256:" /tmp/p.txt >> $OUT/ab.txt
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' $OUT/ab.txt
( time EMBER_TUNE_CACHE=/tmp/tce EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 175 .gpucarry/binF2/engine_cuda ) > /tmp/e.log 2>&1
echo "rc $?" >> /tmp/e.log; cp /tmp/e.log $OUT/engine_full.log
grep -E "CHECK failed|passed|rc |fold|real" /tmp/e.log | tail -12
