#!/bin/bash
# session 19, device call 4 (~5 min): what each kernel of the 1 x 128 graph adds to the pass, from
# a CUPTI trace (bench/gpu/kernel_trace.c injected into bench_engine_cuda; GPU start and end of
# every graph node, and in a second run the runtime calls), for MiniLM and BERT-base; MiniLM's
# ragged chunks the same way; then BERT-base's ragged pass per kernel under ncu if time is left.
# bin0 = main 369f2a6 + the tracer (build-cuda). Device: carry [".gpupack/s19d.tar.xz"];
#   mkdir -p .gpucarry && tar xJf .gpupack/s19d.tar.xz -C .gpucarry && bash .gpucarry/r4.sh
export LD_LIBRARY_PATH=$PWD/.gpucarry/lib:/usr/local/cuda/lib64
C=.gpucarry T=$PWD/.gpucarry/libember_kernel_trace.so
[ -d /tmp/m/minilm ] || python3 bench/gpu/make_random_models.py /tmp/m > /dev/null 2>&1
trace() { # name model case iters [api]
    EMBER_TUNE_CACHE=/tmp/tc_$2 CUDA_INJECTION64_PATH=$T EMBER_TRACE_OUT=$OUT/t_$1.csv EMBER_TRACE_API=${5:-0} \
        timeout 90 $C/bin0/bench_engine_cuda profile /tmp/m/$2 cuda:0 $3 $4 spin=5000 | tail -1
    python3 bench/gpu/kernel_trace_summary.py $OUT/t_$1.csv 200 $OUT/t_$1.json > $OUT/t_$1.txt 2>&1
    cat $OUT/t_$1.txt; gzip -f $OUT/t_$1.csv
}
for m in minilm bert-base; do # fill the tuning caches untraced
    EMBER_TUNE_CACHE=/tmp/tc_$m $C/bin0/bench_engine_cuda profile /tmp/m/$m cuda:0 b1_128,ragged 20 spin=5000 | cut -c1-150
done
trace minilm_b1 minilm b1_128 300
trace minilm_b1_api minilm b1_128 300 1
trace bert_b1 bert-base b1_128 300
trace minilm_ragged minilm ragged 30
m=bert-base
EMBER_TUNE_CACHE=/tmp/tc_$m timeout 120 ncu --csv --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
    $C/bin0/bench_engine_cuda profile /tmp/m/$m cuda:0,graphs=off ragged 1 > $OUT/ncu_${m}_ragged.csv 2> $OUT/ncu_${m}_ragged.err
python3 bench/gpu/ncu_summary.py $OUT/ncu_${m}_ragged.csv 2 $OUT/ncu_${m}_ragged.json | tail -9
