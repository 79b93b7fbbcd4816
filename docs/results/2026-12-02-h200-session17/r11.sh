#!/bin/bash
# session 17 run 4: why fold=on loses at 1024 tokens and on ragged batches in the engine while
# its GEMMs alone are as fast or faster (run2): per-kernel times (ncu, kernels serialised) of
# main (bin0) and fold=on (binF) at 1024 and 4096 tokens, tuned caches filled first without ncu;
# and why the fused feed-forward kernel (binM) takes 11.8 us at 128 tokens: ncu --set full.
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
timeout 150 ncu -k regex:mlp_fused --launch-count 1 --set full --import-source yes -o $OUT/mlp \
  .gpucarry/binM/bench_kernels_cuda gemms /tmp/g.json 128 dtype=f16 model=minilm gemm=mlp > $OUT/mlp_ncu.log 2>&1
ncu --import $OUT/mlp.ncu-rep --page details > $OUT/mlp_details.txt 2>&1
ncu --import $OUT/mlp.ncu-rep --page source --csv --print-source sass > $OUT/mlp_sass.csv 2>&1
grep -E "Duration|Registers|Cluster|Warp Cycles|Achieved|Theoretical Occ|Block Limit" $OUT/mlp_details.txt | head -30
for m in minilm bert-base; do
  for v in A F; do
    bin=.gpucarry/binF; dev=cuda:0,fold=on; [ $v = A ] && bin=.gpucarry/bin0 && dev=cuda:0
    export EMBER_TUNE_CACHE=/tmp/tc_${m}_$v
    timeout 90 $bin/bench_engine_cuda profile /tmp/m/$m $dev 1024,4096 50 > /tmp/p.txt 2>&1
    grep -E "profile .*(1024|4096):" /tmp/p.txt | tee -a $OUT/profile.txt
    timeout 100 ncu --metrics gpu__time_duration.sum --print-summary per-kernel \
      $bin/bench_engine_cuda profile /tmp/m/$m $dev 1024 2 > $OUT/ncu_${m}_${v}_1024.txt 2>&1
    timeout 100 ncu --metrics gpu__time_duration.sum --print-summary per-kernel \
      $bin/bench_engine_cuda profile /tmp/m/$m $dev 4096 2 > $OUT/ncu_${m}_${v}_4096.txt 2>&1
  done
done
python3 docs/results/2026-12-01-h200-session15/ncu_summary.py $OUT/ncu_*.txt > $OUT/ncu_summary.txt 2>&1
head -c 9000 $OUT/ncu_summary.txt
