#!/bin/bash
# Session 20 run 1 (~7 min): the pooling kernel as a cluster of 8 CTAs per sequence (binP, branch
# pool-cluster) against main (bin0): kernel tests, bench rows, engine_cuda, A/B, trace.
# Device: carry [".gpupack/s20p.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s20p.tar.xz -C .gpucarry && bash .gpucarry/r1.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry R=$OUT/r
mkdir -p $R
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
( time timeout 120 $C/binP/kernels_cuda pool ) > $R/kernels_P.txt 2>&1; echo "rc $?" >> $R/kernels_P.txt
echo "kernels P pool: $(grep -E "CHECK failed|passed|rc " $R/kernels_P.txt | tail -3 | tr '\n' ' ')"
for b in 0 P; do
    timeout 120 $C/bin$b/bench_kernels_cuda $R/bk_$b.json 20 2>&1 | grep -iE "pool" > $R/bench_pool_$b.txt
done
paste $R/bench_pool_0.txt $R/bench_pool_P.txt | cut -c1-170
( time EMBER_TUNE_CACHE=/tmp/tcp EMBER_TEST_MODEL_DIR=/tmp/m/minilm timeout 220 $C/binP/engine_cuda ) \
  > $R/engine_P.log 2>&1; echo "rc $?" >> $R/engine_P.log
grep -E "CHECK failed|passed|rc " $R/engine_P.log | tail -3
AB_ITERS=300 bench/gpu/engine_ab.sh $R/ab.txt /tmp/m b1_128,256,1024 3 A=$C/bin0 P=$C/binP \
  | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//; s/; host.*//'
AB_ITERS=60 bench/gpu/engine_ab.sh $R/ab_ragged.txt /tmp/m ragged 2 A=$C/bin0 P=$C/binP \
  | sed -E 's/ms p99 [0-9.]+ ms,//; s/submit median/sub/; s/\/tmp\/m\///; s/ cuda:0//; s/; host.*//'
for m in minilm bert-base; do
    EMBER_TUNE_CACHE=/tmp/engine_ab_tc_${m}_P CUDA_INJECTION64_PATH=$PWD/$C/libember_kernel_trace.so \
        EMBER_TRACE_OUT=$R/t_P_$m.csv timeout 90 $C/binP/bench_engine_cuda profile /tmp/m/$m cuda:0 \
        b1_128 300 spin=5000 > /dev/null 2>&1
    python3 bench/gpu/kernel_trace_summary.py $R/t_P_$m.csv 200 $R/t_P_$m.json > $R/t_P_$m.txt 2>&1
    head -4 $R/t_P_$m.txt; tail -3 $R/t_P_$m.txt
    gzip -f $R/t_P_$m.csv
done
tar cf $OUT/r.tar -C $OUT r && rm -rf $R
