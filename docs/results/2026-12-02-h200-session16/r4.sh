#!/bin/bash
# session 16 run 4: A/B main (bin0) against fold-ln + staged fold operands with fold=on (binF),
# tuned (round 0 tunes into cold caches, then alternate), b1_128 / 1024 / ragged, both shapes.
# The later runs call it with other values (defaults: run 4's): ROUNDS, BIN and DEV the variant's
# binaries and device string, CASES the profile cases, TAG appended to the output files' names.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=${BIN:-$PWD/.gpucarry/binF}
DEV=${DEV:-cuda:0,fold=on} CASES=${CASES:-b1_128,ragged,1024} TAG=${TAG:-}
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
for m in minilm bert-base; do
  for r in ${ROUNDS:-0 1 2}; do
    for v in A F; do
      bin=$B; dev=$DEV; [ $v = A ] && bin=$A && dev=cuda:0
      EMBER_LOG=debug EMBER_TUNE_CACHE=/tmp/tc${TAG}_${m}_$v timeout 90 $bin/bench_engine_cuda profile /tmp/m/$m $dev $CASES 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab$TAG.txt
      grep -E "profile .*(${CASES//,/|}):" /tmp/p.txt >> $OUT/ab$TAG.txt
      [ $r = 0 ] && grep -E "tuned|chose|plan" /tmp/p.txt | head -60 > $OUT/tune${TAG}_${m}_$v.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' $OUT/ab$TAG.txt
