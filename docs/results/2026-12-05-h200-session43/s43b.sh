#!/bin/bash
# Session 43, call 3: where the ragged passes' time goes at the power cap, in the engine itself.
# The CUPTI tracer (pack s42m: trace/) on bench_engine_cuda profile's ragged case (the 100 texts,
# two chunks a run), MiniLM and BERT-base, one lane (consecutive launches tile the GPU's time, so
# kernel_trace_summary.py --all can attribute it: each kernel's adds summed by name, and the idle
# time between launches) and the default two lanes (energy and wall per run beside it). Each
# model's GEMM choices tuned once untraced, the cache shared by the traced runs.
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s42m.tar.xz -C .gpucarry &&
#         bash docs/results/2026-12-05-h200-session43/s43b.sh
. bench/gpu/variant_steps.sh
variant_setup s43b
B=$C/binP
for m in minilm bert-base; do
    reps=1200 && [ $m = bert-base ] && reps=300
    EMBER_TUNE_CACHE=/tmp/tc_$m timeout 120 "$B/bench_engine_cuda" profile /tmp/m/$m cuda:0 ragged 20 \
        spin=5000 > "$R/warm_$m.log" 2>&1
    echo "== $m tuned rc $? at $SECONDS s"
    for lanes in 1 2; do
        EMBER_TUNE_CACHE=/tmp/tc_$m CUDA_INJECTION64_PATH=$C/trace/libember_kernel_trace.so \
            EMBER_TRACE_OUT=$R/r_${m}_l$lanes.csv timeout 90 "$B/bench_engine_cuda" profile \
            /tmp/m/$m cuda:0,lanes=$lanes ragged $reps spin=5000 > "$R/r_${m}_l$lanes.log" 2>&1
        echo "== $m lanes=$lanes rc $? at $SECONDS s"
        grep -E "^profile" "$R/r_${m}_l$lanes.log" | cut -c1-400
        python3 bench/gpu/kernel_trace_summary.py "$R/r_${m}_l$lanes.csv" 400 --all \
            > "$R/r_${m}_l$lanes.txt" 2>&1
        head -30 "$R/r_${m}_l$lanes.txt" | cut -c1-120
        gzip -f "$R/r_${m}_l$lanes.csv"
    done
done
variant_finish s43b
