#!/bin/bash
# session 14 run 2: (A) db72287, (B) + attention rescale skipped when no row's max moved,
# (D) db72287 with EMBER_DEBUG_NOLN=1 (diagnostic: sublayer ends as plain bias GEMMs, no
# LayerNorm: what the LayerNorms cost on the critical path); attention kernel tests for B
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/bin3; D=$PWD/.gpucarry/bin2  # prepare_next.sh's layout
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 120 $B/kernels_cuda attention ) > /tmp/k.log 2>&1; echo "rc $?" >> /tmp/k.log
grep -E "CHECK failed|passed|rc |real" /tmp/k.log | head -30 > $OUT/kernels.txt
for m in minilm bert-base; do
  for r in 0 1 2 3; do
    for v in A B D; do
      bin=${!v}; extra=""
      [ $v = D ] && export EMBER_DEBUG_NOLN=1 || unset EMBER_DEBUG_NOLN
      EMBER_TUNE_CACHE=/tmp/tc_$v timeout 60 $bin/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128,ragged,1024 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab.txt
      grep -E "profile .*(b1_128|ragged|1024):" /tmp/p.txt >> $OUT/ab.txt
    done
  done
done
unset EMBER_DEBUG_NOLN
