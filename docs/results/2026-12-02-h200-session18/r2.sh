#!/bin/bash
# session 18 run 6: (1) graph_launch (the host's part of a batch-1 pass: cudaGraphLaunch of a
# chain of N PDL kernels, plain against armed behind cuStreamWaitValue32); (2) branch own-smem
# (binS: split-K's publishing cluster barrier releases shared::cta only, MEMBAR.ALL.CTA instead
# of MEMBAR.ALL.GPU; gemm_mma's exit barrier relaxed): the GEMM tests, then main (bin0) against
# binS, tuned, 1 x 128 / 256 / ragged, both shapes, 3 rounds.
# carry [".gpupack/s18.tar.xz"]; mkdir -p .gpucarry && tar xJf .gpupack/s18.tar.xz -C .gpucarry
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=.gpucarry/bin0 B=.gpucarry/binS
timeout 60 .gpucarry/graph_launch 2000 > $OUT/graph_launch.txt 2>&1; cat $OUT/graph_launch.txt
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
( time timeout 200 $B/kernels_cuda linear_pdl linear_fold ) > $OUT/kernels_S.txt 2>&1
echo "rc $?" >> $OUT/kernels_S.txt; grep -E "CHECK failed|passed|rc |real" $OUT/kernels_S.txt | tail -5
for m in minilm bert-base; do
  for r in 0 1 2; do
    for v in A S; do
      bin=$B; [ $v = A ] && bin=$A
      EMBER_TUNE_CACHE=/tmp/tc_${m}_$v timeout 100 $bin/bench_engine_cuda profile /tmp/m/$m cuda:0 \
        b1_128,256,ragged 400 spin=5000 > /tmp/p.txt 2>&1
      echo "== $m $v round $r" >> $OUT/ab_S.txt
      grep -E "profile .*(b1_128|256|ragged):" /tmp/p.txt >> $OUT/ab_S.txt
    done
  done
done
sed -E 's/: [0-9]+ seqs, [0-9]+ tokens: wall median/ wall/; s/\(.*submit median/submit/' $OUT/ab_S.txt
