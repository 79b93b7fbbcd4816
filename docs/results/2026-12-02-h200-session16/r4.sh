#!/bin/bash
# session 16 run 4: A/B main (bin0) against fold-ln + staged fold operands with fold=on (binF),
# tuned (round 0 tunes into cold caches, then alternate), b1_128 / 1024 / ragged, both shapes.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/binF
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in minilm bert-base; do
  for r in ${ROUNDS:-0 1 2}; do
    for v in A F; do
      bin=$B; dev=cuda:0; [ $v = A ] && bin=$A; [ $v = F ] && dev=cuda:0,fold=on
      EMBER_LOG=debug EMBER_TUNE_CACHE=/tmp/tc_${m}_$v timeout 90 $bin/bench_engine_cuda profile /tmp/m/$m $dev b1_128,ragged,1024 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab.txt
      grep -E "profile .*(b1_128|ragged|1024):" /tmp/p.txt >> $OUT/ab.txt
      [ $r = 0 ] && grep -E "tuned|chose|plan" /tmp/p.txt | head -60 > $OUT/tune_${m}_$v.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' $OUT/ab.txt
