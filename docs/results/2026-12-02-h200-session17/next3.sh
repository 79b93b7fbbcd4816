#!/bin/bash
# prepared in session 17, not yet run (~3 min): branch relaxed-barrier (binR: the split-K
# epilogue's last cluster barrier without its GPU-wide fence): the GEMM tests (every split-K
# configuration, plain and folded, against the references), then main (bin0) against binR,
# tuned, 1 x 128 / 256 tokens (the split-K buckets) and ragged, both shapes, 3 rounds.
# carry [".gpupack/gc.tar.xz"]; tar xJf .gpupack/gc.tar.xz -C .gpucarry (bin0, binR, lib).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=.gpucarry/bin0 B=.gpucarry/binR
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 200 $B/kernels_cuda linear linear_fold linear_pdl ) > $OUT/kernels_R.txt 2>&1
echo "rc $?" >> $OUT/kernels_R.txt; grep -E "CHECK failed|passed|rc " $OUT/kernels_R.txt | tail -4
for m in minilm bert-base; do
  for r in 0 1 2; do
    for v in A R; do
      bin=$B; [ $v = A ] && bin=$A
      EMBER_TUNE_CACHE=/tmp/tc_${m}_$v timeout 100 $bin/bench_engine_cuda profile /tmp/m/$m cuda:0 \
        b1_128,256,ragged 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab_R.txt
      grep -E "profile .*(b1_128|256|ragged):" /tmp/p.txt >> $OUT/ab_R.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*//' $OUT/ab_R.txt
