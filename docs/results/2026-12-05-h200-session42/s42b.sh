#!/bin/bash
# Session 42, call 2 (main's build as binP from .gpupack/s41m.tar.xz; .gpupack/s42t.tar.xz holds
# bench/gpu/kernel_trace.c built here against the CUPTI 13.0 of the torch wheel, with its
# libcupti.so.13):
#  1. the board's GEMM ceiling in joules: cuBLAS through torch at square shapes and at the
#     engine's (bench/gpu/gemm_ceiling.py, prepared in session 37, never run). Is 0.87 TFLOP per
#     joule, the best of the engine's GEMMs at the cap, the board's best, or do large GEMMs do
#     much better? (docs/benchmarks.md forty-first round: what BERT-base's 3.0 M tok/s needs)
#  2. the CUPTI trace of both models' 1 x 128 graphs: what each node adds now (last: session 24)
#  3. MiniLM 1 x 128 in three rounds (the target's margin; lanes=1 beside it)
#  4. where kernels_cuda linear's time goes (session 41's H100: linear + linear_ln 130 s wall,
#     3 min 24 s user, 5 min 8 s system on 16 cores): OpenBLAS's default threads against one
#     (idle OpenBLAS threads spin on sched_yield, which counts as system time)
#  5. the idle board's power
# Device: mkdir -p .gpucarry && tar xJf .gpupack/s41m.tar.xz -C .gpucarry lib binP &&
#         tar xJf .gpupack/s42t.tar.xz -C .gpucarry && bash docs/results/2026-12-05-h200-session42/s42b.sh
. bench/gpu/variant_steps.sh
variant_setup s42b
B=$C/binP
timeout 150 python3 bench/gpu/gemm_ceiling.py "$R/gemm_ceiling.json" > "$R/gemm_ceiling.txt" 2>&1
echo "== gemm_ceiling rc $? at $SECONDS s"
cat "$R/gemm_ceiling.txt"
cp "$R/gemm_ceiling.json" "$R/gemm_ceiling.keep"
for m in minilm bert-base; do
    # tuned untraced first: the traced run then reads its choices from the cache
    EMBER_TUNE_CACHE=/tmp/tc_$m timeout 60 "$B/bench_engine_cuda" profile /tmp/m/$m cuda:0 b1_128 50 \
        spin=5000 > "$R/tune_$m.log" 2>&1
    EMBER_TUNE_CACHE=/tmp/tc_$m CUDA_INJECTION64_PATH=$C/trace/libember_kernel_trace.so \
        EMBER_TRACE_OUT=$R/t_$m.csv timeout 60 "$B/bench_engine_cuda" profile /tmp/m/$m cuda:0 \
        b1_128 300 spin=5000 > "$R/t_$m.log" 2>&1
    echo "== trace $m rc $? at $SECONDS s"
    python3 bench/gpu/kernel_trace_summary.py "$R/t_$m.csv" 200 > "$R/t_${m}_b1.txt" 2>&1
    tail -40 "$R/t_${m}_b1.txt" | cut -c1-120
    gzip -f "$R/t_$m.csv"
done
AB_MODELS=minilm AB_ITERS=2000 bench/gpu/engine_ab.sh "$R/b1.txt" /tmp/m b1_128 3 P="$B" \
    L1="$B,lanes=1" | tail -6
for threads in default 1; do
    set -- /usr/bin/time -v timeout $(((530 - SECONDS) / 2)) "$B/kernels_cuda" linear
    [ "$threads" = 1 ] && set -- env OPENBLAS_NUM_THREADS=1 "$@"
    "$@" > "$R/linear_$threads.log" 2>&1
    echo "== kernels_cuda linear, OpenBLAS threads $threads, rc $? at $SECONDS s"
    grep -E "passed|plans checked|Elapsed|User time|System time|context switches" "$R/linear_$threads.log"
done
nvidia-smi --query-gpu=power.draw,clocks.sm,temperature.gpu --format=csv -lms 200 > "$R/idle.csv" &
sleep 3
kill $!
echo "== idle board:"
sort -u "$R/idle.csv" | head -5
variant_finish s42b
