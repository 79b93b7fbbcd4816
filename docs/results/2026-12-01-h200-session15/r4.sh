#!/bin/bash
# session 15 run 2: why fold=on is slower (run 1: MiniLM 1024 0.39 vs 0.25 ms, BERT-base 1.38 vs
# 0.72): per-kernel GPU times under ncu, fold off (A = main) and on (F = fold-ln); and a backtrace
# of kernels_cuda linear_fold's segfault. Layout of prepare_next.sh (session 14).
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
A=$PWD/.gpucarry/bin0; B=$PWD/.gpucarry/bin1
python3 bench/gpu/make_random_models.py /tmp/m > /tmp/models.log 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
echo "ncu: $NCU" > $OUT/info.txt
timeout 100 cuda-gdb -batch -ex run -ex bt --args $B/kernels_cuda linear_fold > $OUT/gdb.txt 2>&1
for m in minilm bert-base; do
  for v in A F; do
    bin=$B; dev=cuda:0; [ $v = A ] && bin=$A; [ $v = F ] && dev=cuda:0,fold=on
    export EMBER_TUNE_CACHE=/tmp/tc_${m}_$v
    EMBER_LOG=debug timeout 90 $bin/bench_engine_cuda profile /tmp/m/$m $dev b1_128,1024 50 > /tmp/t.txt 2>&1
    grep -E "bucket (128|1024):|profile" /tmp/t.txt >> $OUT/info.txt
    timeout 150 $NCU --clock-control none --cache-control none --metrics gpu__time_duration.sum \
      --print-summary per-kernel $bin/bench_engine_cuda profile /tmp/m/$m $dev 1024 2 > $OUT/ncu_${m}_$v.txt 2>&1
    echo "ncu $m $v rc $?" >> $OUT/info.txt
  done
done
